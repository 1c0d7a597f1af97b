//! Process domains: starting a domain's guest processes, and the bookkeeping of its jobs.
//!
//! # Design note
//! A domain has one guest process per VCPU ([`tasks_by_vcpu`]): all its tasks for a
//! domain of one VCPU; for a partitioned guest of several VCPUs, the tasks pinned to each
//! VCPU; for a global guest of several VCPUs, none: each VCPU's process is one worker that
//! runs the job the guest's scheduler grants it, its jobs moving between VCPUs as data
//! ([`crate::global`]). The process is the enforcement unit: the executor stops and
//! resumes VCPU `j` of a domain by stopping and resuming its guest process `j` (its
//! cgroup, its threads' band, or its signals), so a VCPU's threads run only while that
//! VCPU runs.
//!
//! [`ProcessDomain::spawn`] writes each process's tasks into a fresh [`Shared`] page (with
//! the guest-level `SCHED_FIFO` priorities of the whole domain: [`guest_ranks`]),
//! re-executes the helper program as the guest (the page and the executor's eventfd
//! handed over as fds 3 and 4, a parent-death SIGKILL, a process group of its own so that
//! a terminal's Ctrl-C reaches only the executor), and waits until every task thread is
//! ready.
//!
//! [`JobBook`] turns the job records the guest hands over into the per-task statistics
//! every driver reports ([`TaskStats`]) and, at the end, the jobs still pending: a record
//! whose finish (or first start) lies past the end of the run counts as not finished (not
//! started) — the run's end is the instant the executor stopped every domain, and what a
//! guest did after it is not part of the run.

use std::io;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rtvmm_core::guest::{Arrival, GuestScheduler, Job, TaskSpec};
use rtvmm_core::model::GuestSmp;
use rtvmm_core::model::{DomainSpec, VcpuId};
use rtvmm_core::Nanos;
use rtvmm_system::records::JobRecord;
use rtvmm_system::stats::TaskStats;

use crate::enforce::{guest_priority, Member, GUEST_LEVELS};
use crate::global::{is_global, GlobalGuest};
use crate::shm::{
    ArrivalKind, JobTimes, PageKind, Shared, TaskConfig, TaskState, DEFAULT_RING_LEN,
    GRANT_VALUE_MAX,
};
use crate::{HelperCommand, HostError};

/// The rank (0: most urgent) of each task under the guest scheduler: tasks of equal level
/// share a rank (and so a `SCHED_FIFO` priority, served first-in first-out, as the core's
/// guests break ties). `Err` names what the host cannot run.
pub fn guest_ranks(domain: &DomainSpec) -> Result<Vec<u32>, String> {
    let level = |t: &TaskSpec| -> Result<u64, String> {
        Ok(match domain.guest {
            GuestScheduler::Rm => t.period.as_ns(),
            GuestScheduler::Dm => t.deadline.as_ns(),
            GuestScheduler::Fp => t.priority as u64,
            GuestScheduler::Edf => {
                return Err(
                    "guest 'edf': the host runs guests under Linux's SCHED_FIFO, a \
                            fixed-priority scheduler; use rm, dm or fp"
                        .into(),
                )
            }
        })
    };
    let levels: Vec<u64> = domain.tasks.iter().map(level).collect::<Result<_, _>>()?;
    let mut distinct = levels.clone();
    distinct.sort_unstable();
    distinct.dedup();
    if distinct.len() > GUEST_LEVELS as usize {
        return Err(format!(
            "{} distinct task priorities: a guest on the host has at most {GUEST_LEVELS} \
             SCHED_FIFO levels",
            distinct.len()
        ));
    }
    Ok(levels
        .iter()
        .map(|l| distinct.binary_search(l).expect("present") as u32)
        .collect())
}

/// A task's arrival as the guest page encodes it; `Err` for what the host cannot run.
fn arrival(task: &TaskSpec) -> Result<(ArrivalKind, u64), String> {
    match &task.arrival {
        Arrival::Periodic => Ok((ArrivalKind::Periodic, 0)),
        Arrival::Sporadic { max_extra_gap } => Ok((ArrivalKind::Sporadic, max_extra_gap.as_ns())),
        Arrival::Poisson { mean_gap } => Ok((ArrivalKind::Poisson, mean_gap.as_ns())),
        Arrival::AperiodicTimes(_) => Err(format!(
            "task '{}': aperiodic releases at listed times are not supported by the host \
             executor (periodic, sporadic and Poisson arrivals are)",
            task.name
        )),
        Arrival::Triggered { .. } => Err(format!(
            "task '{}': triggered releases are not supported by the host executor \
             (periodic, sporadic and Poisson arrivals are)",
            task.name
        )),
    }
}

/// Checks that the host can run a domain's guest (before anything starts). A global guest
/// of several VCPUs is scheduled by the core's guest scheduler ([`crate::global`]), not by
/// `SCHED_FIFO`: any guest scheduler, and releases at listed times, run there.
pub fn check_runnable(domain: &DomainSpec) -> Result<(), String> {
    if is_global(domain) {
        for t in &domain.tasks {
            if t.arrival.is_triggered() {
                return Err(format!(
                    "task '{}': triggered releases are not supported by the host executor \
                     (a global guest's tasks may be periodic, sporadic, Poisson or listed)",
                    t.name
                ));
            }
            if t.wcet.as_ns() >= GRANT_VALUE_MAX {
                return Err(format!(
                    "task '{}': wcet {}: a job of a global guest of several VCPUs may need \
                     less than {} on the host",
                    t.name,
                    t.wcet,
                    Nanos(GRANT_VALUE_MAX)
                ));
            }
        }
        return Ok(());
    }
    guest_ranks(domain)?;
    tasks_by_vcpu(domain)?;
    for t in &domain.tasks {
        arrival(t)?;
    }
    Ok(())
}

/// The jobs of one domain as its guest reported them.
#[derive(Default)]
pub struct JobBook {
    pub stats: Vec<TaskStats>,
    /// Jobs reported pending at the end (and those finished after it).
    pub pending: Vec<Vec<JobRecord>>,
    /// Every finished job, kept only for a trace: (task, record, finish).
    pub finished: Vec<(usize, JobTimes)>,
    keep: bool,
}

impl JobBook {
    pub fn new(tasks: usize, keep: bool) -> JobBook {
        JobBook {
            stats: vec![TaskStats::default(); tasks],
            pending: vec![Vec::new(); tasks],
            finished: Vec::new(),
            keep,
        }
    }

    /// Every job of the domain `spec` as the simulator's records (`(task, record)`): the
    /// finished ones kept (`keep`), then the pending ones unless `with_pending` is false (a
    /// removed domain's, left out of the counts).
    pub fn records(&self, spec: &DomainSpec, with_pending: bool) -> Vec<(usize, JobRecord)> {
        let mut out: Vec<(usize, JobRecord)> = self
            .finished
            .iter()
            .map(|&(t, times)| {
                let release = Nanos(times.release);
                (
                    t,
                    JobRecord {
                        seq: times.seq,
                        release,
                        deadline: release + spec.tasks[t].deadline,
                        first_start: times.first_start.map(Nanos),
                        finish: times.finish.map(Nanos),
                    },
                )
            })
            .collect();
        if with_pending {
            for (t, pending) in self.pending.iter().enumerate() {
                out.extend(pending.iter().map(|j| (t, j.clone())));
            }
        }
        out
    }

    /// Counts one record of `task` (relative deadline `deadline`) of a run that ends at
    /// `end` (`None`: still running, every record is before the end).
    pub fn record(&mut self, task: usize, deadline: Nanos, times: JobTimes, end: Option<Nanos>) {
        let end = end.map_or(u64::MAX, Nanos::as_ns);
        if times.release > end {
            return;
        }
        let first_start = times.first_start.filter(|&s| s <= end).map(Nanos);
        let release = Nanos(times.release);
        let job = Job {
            origin: release,
            task: task as u32,
            seq: times.seq,
            release,
            deadline: release + deadline,
            demand: Nanos::ZERO,
            done: Nanos::ZERO,
            first_start,
        };
        match times.finish.filter(|&f| f <= end) {
            Some(finish) => {
                self.stats[task].finished_job(&job, Nanos(finish));
                if self.keep {
                    self.finished.push((task, times));
                }
            }
            None => self.pending[task].push(JobRecord {
                seq: job.seq,
                release: job.release,
                deadline: job.deadline,
                first_start: job.first_start,
                finish: None,
            }),
        }
    }
}

/// The tasks each guest process of `spec` runs as threads: a domain of one VCPU has one
/// process of all its tasks (Linux, the guest scheduler, runs its best thread); a
/// partitioned guest of several VCPUs ([`GuestSmp::Partitioned`]: each task on its
/// [`TaskSpec::vcpu`]) has one guest process per VCPU, so that a VCPU's tasks run only
/// while that VCPU runs (the process is the enforcement unit); a global guest of several
/// has one process per VCPU too, holding no task: its worker runs the jobs granted
/// ([`crate::global`]). `Err` for what the host cannot run.
pub fn tasks_by_vcpu(spec: &DomainSpec) -> Result<Vec<Vec<usize>>, String> {
    let count = spec.placement.vcpu_count();
    if count == 1 {
        return Ok(vec![(0..spec.tasks.len()).collect()]);
    }
    if spec.placement.smp == GuestSmp::Global {
        return Ok(vec![Vec::new(); count as usize]);
    }
    let mut by_vcpu = vec![Vec::new(); count as usize];
    for (t, task) in spec.tasks.iter().enumerate() {
        // In range: the shape was checked when the domain joined (`Guest::check_shape`).
        by_vcpu[task.vcpu as usize].push(t);
    }
    Ok(by_vcpu)
}

/// One guest process: the tasks of one VCPU of a partitioned domain (all of them for a
/// domain of one VCPU; none for a VCPU of a global guest, whose worker is its page's task
/// 0), their shared page, and the threads and cgroup the enforcement acts on.
pub struct GuestProcess {
    /// The VCPU it runs.
    pub vcpu: VcpuId,
    /// The domain's task index of each of its task threads (its page's task `i` is the
    /// domain's task `tasks[i]`).
    pub tasks: Vec<usize>,
    pub shared: Shared,
    pub member: Member,
    child: Child,
}

impl GuestProcess {
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Whether the guest process has exited, and how.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + Duration::from_secs(10);
        let tasks = self.shared.tasks();
        while self.shared.ready() < tasks {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("its guest process exited during set-up ({status})"));
            }
            if Instant::now() > deadline {
                return Err("its guest process did not get ready within 10 s".into());
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        self.member.threads = (0..tasks)
            .map(|t| (self.shared.tid(t), self.shared.config(t).fifo_priority))
            .collect();
        Ok(())
    }
}

impl Drop for GuestProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A domain rtvmm started: its guest processes (one per VCPU: [`tasks_by_vcpu`]) and
/// what the executor keeps about them.
pub struct ProcessDomain {
    pub spec: DomainSpec,
    /// Its VCPUs, in VCPU order.
    pub vcpus: Vec<VcpuId>,
    /// Its guest processes, one per VCPU in VCPU order, or one of all its tasks (a domain
    /// of one VCPU) ([`tasks_by_vcpu`]).
    pub guests: Vec<GuestProcess>,
    pub book: JobBook,
    /// A global guest of several VCPUs: its scheduler, whose grants its VCPUs' workers run.
    pub global: Option<Box<GlobalGuest>>,
}

impl ProcessDomain {
    /// Starts the guests of `spec` (domain number `index`, joining at `join`, relative)
    /// on `cpu`, one per VCPU of `vcpus`, and waits until their threads are ready.
    /// `fifo`: whether its threads run `SCHED_FIFO` (false only in a best-effort run
    /// without the privilege).
    #[allow(clippy::too_many_arguments)]
    pub fn spawn(
        helper: &HelperCommand,
        spec: DomainSpec,
        vcpus: Vec<VcpuId>,
        index: u32,
        join: Nanos,
        seed: u64,
        cpu: usize,
        fifo: bool,
        notify: &impl AsFd,
        keep_jobs: bool,
    ) -> Result<ProcessDomain, HostError> {
        let name = spec.name.clone();
        let bad = |reason: String| HostError::Domain {
            domain: name.clone(),
            reason,
        };
        let global = match is_global(&spec) {
            true => Some(Box::new(
                GlobalGuest::new(&spec, seed, index, join).map_err(bad)?,
            )),
            false => None,
        };
        let ranks = match global {
            Some(_) => Vec::new(),
            None => guest_ranks(&spec).map_err(bad)?,
        };
        let by_vcpu = tasks_by_vcpu(&spec).map_err(bad)?;
        let mut guests = Vec::with_capacity(by_vcpu.len());
        for (j, tasks) in by_vcpu.into_iter().enumerate() {
            // The page's domain number labels its tasks' random streams: VCPU 0's is the
            // domain's, so a domain of one VCPU draws as it always did.
            let label = index | ((j as u32) << 16);
            let shared = match &global {
                Some(global) => {
                    // One worker, the page's task 0, at the guest's top priority.
                    let page = Shared::create(1, 1, seed, label).map_err(|e| bad(e.to_string()))?;
                    page.set_kind(PageKind::GlobalVcpu);
                    page.write_config(
                        0,
                        &TaskConfig {
                            arrival: ArrivalKind::Periodic,
                            period: 0,
                            wcet: 0,
                            min_exec: 0,
                            deadline: 0,
                            offset: 0,
                            priority: 0,
                            arrival_param: 0,
                            fifo_priority: if fifo {
                                guest_priority(0).expect("the top level")
                            } else {
                                0
                            },
                        },
                    );
                    global.grant_nothing(|_| &page);
                    page
                }
                None => Shared::create(tasks.len(), DEFAULT_RING_LEN, seed, label)
                    .map_err(|e| bad(e.to_string()))?,
            };
            shared.set_join(join.as_ns());
            for (local, &t) in tasks.iter().enumerate() {
                let task = &spec.tasks[t];
                let (kind, param) = arrival(task).map_err(bad)?;
                shared.write_config(
                    local,
                    &TaskConfig {
                        arrival: kind,
                        period: task.period.as_ns(),
                        wcet: task.wcet.as_ns(),
                        min_exec: task.min_exec.as_ns(),
                        deadline: task.deadline.as_ns(),
                        offset: task.offset.as_ns(),
                        priority: task.priority,
                        arrival_param: param,
                        fifo_priority: if fifo {
                            guest_priority(ranks[t]).expect("ranks are checked")
                        } else {
                            0
                        },
                    },
                );
                shared.set_state(local, TaskState::NextRelease((join + task.offset).as_ns()));
            }
            let child =
                spawn_guest(helper, &shared, notify, cpu).map_err(|e| bad(e.to_string()))?;
            guests.push(GuestProcess {
                vcpu: vcpus[j],
                tasks,
                member: Member {
                    pids: vec![child.id() as i32],
                    threads: Vec::new(),
                    cgroup: None,
                },
                shared,
                child,
            });
        }
        for guest in &mut guests {
            guest.wait_ready().map_err(bad)?;
        }
        Ok(ProcessDomain {
            book: JobBook::new(spec.tasks.len(), keep_jobs),
            spec,
            vcpus,
            guests,
            global,
        })
    }

    /// A global guest of several VCPUs at `now`, the VCPUs of `running` running (bit j =
    /// VCPU j): if a re-choice is due ([`GlobalGuest::due`]), its finished jobs (into the
    /// book) and due releases taken in. Returns whether they are taken in, not yet
    /// handed out.
    pub fn take_in_global(&mut self, now: Nanos, running: u64) -> bool {
        let Some(global) = &mut self.global else {
            return false;
        };
        let guests = &self.guests;
        let page = |j: usize| &guests[j].shared;
        if !global.taken_in() && global.due(page, now, running) {
            let (book, spec) = (&mut self.book, &self.spec);
            global.take_in(page, now, &mut |t, times| {
                book.record(t, spec.tasks[t].deadline, times, None)
            });
        }
        global.taken_in()
    }

    /// A global guest of several VCPUs with something taken in, or due to be (see
    /// [`Self::take_in_global`]): the VCPUs of `running` get their jobs. Returns whether
    /// it handed out.
    pub fn hand_out_global(&mut self, now: Nanos, running: u64) -> bool {
        if !self.take_in_global(now, running) {
            return false;
        }
        let guests = &self.guests;
        let (book, spec) = (&mut self.book, &self.spec);
        let global = self.global.as_mut().expect("taken in: a global guest");
        global.hand_out(|j: usize| &guests[j].shared, running, &mut |t, times| {
            book.record(t, spec.tasks[t].deadline, times, None)
        });
        true
    }

    /// A global guest of several VCPUs, its VCPUs stopped at `at` (the end of the run, or
    /// its removal): every grant taken back, what its jobs had credited, and, `pending`,
    /// its unfinished jobs reported as the other guests report theirs.
    pub fn close_global(&mut self, at: Nanos, pending: bool) {
        let Some(global) = &mut self.global else {
            return;
        };
        let guests = &self.guests;
        let (book, spec) = (&mut self.book, &self.spec);
        global.close(
            |j: usize| &guests[j].shared,
            at,
            &mut |t, times| book.record(t, spec.tasks[t].deadline, times, Some(at)),
            pending,
        );
    }

    /// The guest process that runs while VCPU `j` (its number in the domain) runs: its
    /// own (partitioned), or the domain's one.
    pub fn guest(&self, j: usize) -> &GuestProcess {
        &self.guests[j.min(self.guests.len() - 1)]
    }

    /// Takes the job records handed over since the last call.
    pub fn drain(&mut self, end: Option<Nanos>) {
        for guest in &self.guests {
            for (local, &t) in guest.tasks.iter().enumerate() {
                let deadline = self.spec.tasks[t].deadline;
                let book = &mut self.book;
                guest
                    .shared
                    .drain(local, |times| book.record(t, deadline, times, end));
            }
        }
    }

    /// The CPU time its task threads had, as they last reported it.
    pub fn cpu_ns(&self) -> u64 {
        self.pages().map(|(s, local)| s.cpu(local)).sum()
    }

    /// Records lost to full rings.
    pub fn lost(&self) -> u64 {
        self.pages().map(|(s, local)| s.lost(local)).sum()
    }

    /// Whether every task reported its pending jobs.
    pub fn finalized(&self) -> bool {
        self.pages().all(|(s, local)| s.finalized(local))
    }

    /// Every thread's page and its index there (a task's, or a global guest's worker).
    fn pages(&self) -> impl Iterator<Item = (&Shared, usize)> {
        self.guests
            .iter()
            .flat_map(|g| (0..g.shared.tasks()).map(move |local| (&g.shared, local)))
    }

    /// Kills the guests (a removed domain's): their threads are first moved to
    /// `off_cpus` (away from the managed cpu, where a stopped or demoted thread could wait
    /// long for the cpu it needs to exit), then each process gets SIGKILL (which ends a
    /// frozen or stopped process too). Reap them with [`ProcessDomain::exited`].
    pub fn kill(&mut self, off_cpus: &[usize]) {
        for guest in &mut self.guests {
            for &(tid, _) in &guest.member.threads {
                let _ = crate::sys::set_affinity(tid, off_cpus);
            }
            let _ = crate::sys::set_affinity(guest.pid(), off_cpus);
            let _ = guest.child.kill();
        }
    }

    /// Whether every guest process has exited (the first one's status).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        let mut first = None;
        for guest in &mut self.guests {
            let status = guest.exited()?;
            first.get_or_insert(status);
        }
        first
    }

    /// Sends SIGKILL to the guests without waiting (see [`kill_all`]).
    pub fn sigkill(&mut self) {
        for guest in &mut self.guests {
            let _ = guest.child.kill();
        }
    }
}

/// Kills every guest first, then waits for each: a guest killed while another spins
/// above it on the managed cpu (a panic unwinding mid-run: a domain still running at its
/// `SCHED_FIFO` priority) could never run to exit if it were waited for alone.
pub fn kill_all<'a>(domains: impl IntoIterator<Item = &'a mut ProcessDomain>) {
    let mut all: Vec<&mut ProcessDomain> = domains.into_iter().collect();
    for d in &mut all {
        d.sigkill();
    }
    for d in all {
        for guest in &mut d.guests {
            let _ = guest.child.wait();
        }
    }
}

fn spawn_guest(
    helper: &HelperCommand,
    shared: &Shared,
    notify: &impl AsFd,
    cpu: usize,
) -> io::Result<Child> {
    let shm = shared.fd().as_raw_fd();
    let event = notify.as_fd().as_raw_fd();
    let mut command = Command::new(&helper.program);
    command
        .args(&helper.args)
        .arg("guest")
        .arg(cpu.to_string())
        .arg(std::process::id().to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .process_group(0);
    // SAFETY: between fork and exec only async-signal-safe calls (fcntl, dup2, prctl) on
    // descriptors this process owns and keeps open across the spawn.
    unsafe {
        command.pre_exec(move || {
            // Copies above the targets first, so that 3 and 4 never clobber a source.
            let a = libc::fcntl(shm, libc::F_DUPFD_CLOEXEC, 10);
            let b = libc::fcntl(event, libc::F_DUPFD_CLOEXEC, 10);
            if a < 0 || b < 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::dup2(a, crate::shm::GUEST_SHM_FD) < 0
                || libc::dup2(b, crate::shm::GUEST_NOTIFY_FD) < 0
            {
                return Err(io::Error::last_os_error());
            }
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.spawn().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("starting the guest ({}): {e}", helper.program.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvmm_core::model::VcpuParams;

    fn ms(x: u64) -> Nanos {
        Nanos::from_ms(x)
    }

    fn domain(guest: GuestScheduler, tasks: Vec<TaskSpec>) -> DomainSpec {
        DomainSpec {
            name: "d".into(),
            vcpu: VcpuParams::server(ms(2), ms(10), 1),
            guest,
            tasks,
            placement: Default::default(),
        }
    }

    #[test]
    fn rate_monotonic_ranks_share_a_level_between_equal_periods() {
        let d = domain(
            GuestScheduler::Rm,
            vec![
                TaskSpec::periodic("slow", ms(50), ms(1)),
                TaskSpec::periodic("fast", ms(10), ms(1)),
                TaskSpec::periodic("fast2", ms(10), ms(1)),
            ],
        );
        assert_eq!(guest_ranks(&d), Ok(vec![1, 0, 0]));
        assert_eq!(guest_priority(0), Some(crate::enforce::RUN_BAND_TOP));
    }

    #[test]
    fn what_the_host_cannot_run_is_named() {
        let edf = domain(
            GuestScheduler::Edf,
            vec![TaskSpec::periodic("t", ms(10), ms(1))],
        );
        assert!(check_runnable(&edf).unwrap_err().contains("edf"));
        let mut listed = TaskSpec::periodic("l", ms(10), ms(1));
        listed.arrival = Arrival::AperiodicTimes(vec![ms(1)]);
        let d = domain(GuestScheduler::Rm, vec![listed]);
        assert!(check_runnable(&d).unwrap_err().contains("task 'l'"));
        let many = domain(
            GuestScheduler::Rm,
            (1..=GUEST_LEVELS as u64 + 1)
                .map(|p| TaskSpec::periodic(&format!("t{p}"), ms(p), Nanos(1)))
                .collect(),
        );
        assert!(check_runnable(&many).unwrap_err().contains("distinct"));
    }

    /// A global guest of several VCPUs is scheduled by the core's guest, not `SCHED_FIFO`:
    /// `edf` and listed releases run; a triggered task and a job longer than a grant can
    /// carry are refused by name.
    #[test]
    fn a_global_guest_runs_any_guest_scheduler_and_names_what_it_cannot_run() {
        let mut listed = TaskSpec::periodic("l", ms(10), ms(1));
        listed.arrival = Arrival::AperiodicTimes(vec![ms(1)]);
        let mut edf = domain(
            GuestScheduler::Edf,
            vec![TaskSpec::periodic("t", ms(10), ms(1)), listed],
        );
        assert!(check_runnable(&edf).is_err(), "one VCPU: SCHED_FIFO");
        edf.placement.vcpus = 2;
        assert_eq!(check_runnable(&edf), Ok(()));
        assert_eq!(tasks_by_vcpu(&edf), Ok(vec![vec![], vec![]]));
        edf.tasks[0].arrival = Arrival::Triggered {
            by_domain: "d".into(),
            by_task: "l".into(),
            delay: Nanos::ZERO,
        };
        let why = check_runnable(&edf).unwrap_err();
        assert!(why.starts_with("task 't': triggered releases"), "{why}");
        edf.tasks[0] = TaskSpec::periodic("long", ms(10), Nanos(GRANT_VALUE_MAX));
        let why = check_runnable(&edf).unwrap_err();
        assert!(why.starts_with("task 'long': wcet"), "{why}");
        edf.tasks[0].wcet = Nanos(GRANT_VALUE_MAX - 1);
        assert_eq!(check_runnable(&edf), Ok(()));
    }

    /// The bookkeeping: finished jobs go into the statistics (late ones counted), a job
    /// finished or started after the end counts as pending and not started, and a release
    /// after the end is not part of the run.
    #[test]
    fn records_past_the_end_count_as_pending_and_unstarted() {
        let mut book = JobBook::new(1, true);
        let d = ms(10);
        let rec = |seq, release, start: Option<u64>, finish: Option<u64>| JobTimes {
            seq,
            release: ms(release).as_ns(),
            first_start: start.map(|s| ms(s).as_ns()),
            finish: finish.map(|f| ms(f).as_ns()),
        };
        book.record(0, d, rec(0, 0, Some(1), Some(3)), None);
        book.record(0, d, rec(1, 10, Some(12), Some(25)), None); // late: deadline 20
        let end = Some(ms(35));
        book.record(0, d, rec(2, 20, Some(30), Some(36)), end); // finished after the end
        book.record(0, d, rec(3, 30, Some(36), None), end); // started after the end
        book.record(0, d, rec(4, 40, None, None), end); // released after the end
        let stats = &book.stats[0];
        assert_eq!((stats.finished, stats.finished_late), (2, 1));
        assert_eq!(stats.response.max(), Some(ms(15).as_ns()));
        assert_eq!(stats.latency.min(), Some(ms(1).as_ns()));
        let pending: Vec<(u64, Option<Nanos>, Nanos)> = book.pending[0]
            .iter()
            .map(|j| (j.seq, j.first_start, j.deadline))
            .collect();
        assert_eq!(pending, vec![(2, Some(ms(30)), ms(30)), (3, None, ms(40))]);
        assert_eq!(book.finished.len(), 2);
    }
}
