//! Guests: tasks, jobs and the guest OS schedulers (`rm`, `dm`, `fp`, `edf`).
//!
//! # Design note
//! - A **task** releases **jobs** (periodic every `period` from `offset`; sporadic with a
//!   minimum inter-arrival of `period` plus a seeded extra gap; aperiodic at listed times or
//!   as a seeded Poisson stream). Each job needs an execution time drawn uniformly from
//!   `[min_exec, wcet]` (`min_exec` = ⌈etf·wcet⌉, computed once by the configuration).
//! - **Soft real-time**: a job past its deadline keeps running until it finishes. Jobs of
//!   one task run in release order; a job released while its predecessor is unfinished
//!   waits behind it (a FIFO per task).
//! - **Guest scheduling** is preemptive: among tasks with a pending job, the head job of the
//!   best task runs. `rm`: shorter period first; `dm`: shorter relative deadline first; `fp`:
//!   smaller explicit priority first; `edf`: earliest absolute deadline of the head job
//!   first. **Ties are first-in, first-out by release**, as Linux's `SCHED_FIFO` serves the
//!   threads of one priority: of two head jobs with equal priority (equal deadlines under
//!   `edf`), the one released first runs first, and a job released later never preempts
//!   it; jobs released at the same instant go in declaration order.
//! - **Time origin**: a guest starts when its domain joins the machine (`start`: time 0, or
//!   the instant a domain is added at run time). A task's releases count from there: the
//!   first at `start + offset` (listed aperiodic times are relative to `start` too).
//! - A guest only sees time while its VCPU runs: the driver calls [`Guest::run`] with the
//!   time the VCPU ran, and a job frozen by the VMM resumes where it stopped.
//!
//! - **Triggered** tasks ([`Arrival::Triggered`]) have no release of their own: the driver
//!   releases one of their jobs when a job of the named task finishes, plus a delay
//!   ([`Guest::release_from`]). Every job carries the release of the job that started its
//!   trigger chain ([`Job::origin`]; its own release for a task released from outside), so
//!   end-to-end latencies are matched job by job even with several instances in flight.
//!
//! # Several VCPUs
//! A guest of k > 1 VCPUs ([`Guest::with_vcpus`]) is told which of its VCPUs the VMM runs
//! now ([`Guest::set_running`]) and runs jobs on those only ([`Guest::run_on`]):
//! - **Global** ([`GuestSmp::Global`]): one ready queue. With r of its VCPUs running, the r
//!   best head jobs run. A job that runs on a VCPU still running keeps it; the other chosen
//!   jobs, best first, take the running VCPUs left (lowest index first). So when the VMM
//!   takes a VCPU away, its job moves to a running VCPU that is idle or runs a job outside
//!   the r best (that job goes back to the queue). One job per task can run (jobs of a task
//!   run in order), so a job never runs on two VCPUs at once.
//! - **Partitioned** ([`GuestSmp::Partitioned`]): each task runs on its VCPU
//!   ([`TaskSpec::vcpu`]); each running VCPU runs the best head job of its own tasks.
//!
//! **Which VCPUs have work** ([`Guest::vcpu_has_work`], what the driver reports to the VMM
//! with wake and block): a VCPU with nothing to run blocks, as a Linux VCPU halts in its idle
//! loop. Partitioned: VCPU j has work while one of its tasks has a pending job. Global: the
//! guest keeps `min(n, k)` VCPUs awake, n = the tasks with a pending job (the jobs that could
//! run at once) — an idle VCPU of a guest with more ready jobs than running VCPUs stays
//! awake to pull one, as Linux's RT push/pull does. Which ones: when fewer are needed, the
//! awake VCPUs that run no job block — first those the VMM does not run now, then the
//! others, highest index first within each (a VCPU running a job is never the one put to
//! sleep, and a descheduled one goes before one that could run a job now); when more are
//! needed, the sleeping ones wake, lowest index first.
//! A guest of one VCPU is the single-VCPU path above, unchanged: [`Guest::pick`],
//! [`Guest::run`] and [`Guest::has_work`].

use std::collections::{BTreeSet, VecDeque};

use crate::rng::SimRng;
use crate::time::Nanos;

/// How a guest with several VCPUs schedules its tasks over them (`docs/platform.md`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum GuestSmp {
    /// One ready queue: the k best jobs run on the k VCPUs the VMM runs now; a job whose
    /// VCPU is taken away moves to another running VCPU that is idle or runs a worse job.
    #[default]
    Global,
    /// Each task is pinned to one VCPU (`TaskSpec`'s VCPU index).
    Partitioned,
}

impl GuestSmp {
    pub fn name(self) -> &'static str {
        match self {
            GuestSmp::Global => "global",
            GuestSmp::Partitioned => "partitioned",
        }
    }

    pub fn from_name(name: &str) -> Option<GuestSmp> {
        match name {
            "global" => Some(GuestSmp::Global),
            "partitioned" => Some(GuestSmp::Partitioned),
            _ => None,
        }
    }
}

/// The guest OS scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GuestScheduler {
    Rm,
    Dm,
    Fp,
    Edf,
}

impl GuestScheduler {
    pub fn name(self) -> &'static str {
        match self {
            GuestScheduler::Rm => "rm",
            GuestScheduler::Dm => "dm",
            GuestScheduler::Fp => "fp",
            GuestScheduler::Edf => "edf",
        }
    }
    pub fn from_name(name: &str) -> Option<GuestScheduler> {
        match name.trim().to_ascii_lowercase().as_str() {
            "rm" => Some(GuestScheduler::Rm),
            "dm" => Some(GuestScheduler::Dm),
            "fp" => Some(GuestScheduler::Fp),
            "edf" => Some(GuestScheduler::Edf),
            _ => None,
        }
    }
}

/// How a task's jobs arrive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// A job at `offset + k·period`.
    Periodic,
    /// Inter-arrival `period + uniform[0, max_extra_gap]`, first at `offset`.
    Sporadic { max_extra_gap: Nanos },
    /// Jobs at the listed instants (sorted).
    AperiodicTimes(Vec<Nanos>),
    /// A Poisson stream with exponentially distributed gaps of the given mean, from
    /// `offset`.
    Poisson { mean_gap: Nanos },
    /// A job each time a job of task `by_task` of domain `by_domain` (possibly this one)
    /// finishes, `delay` later (a virtual interrupt or event-channel latency). The guest
    /// never releases these itself: the driver does ([`Guest::release_from`]).
    Triggered {
        by_domain: String,
        by_task: String,
        delay: Nanos,
    },
}

impl Arrival {
    /// Whether jobs arrive from the completion of another task's job.
    pub fn is_triggered(&self) -> bool {
        matches!(self, Arrival::Triggered { .. })
    }
}

/// A task's fixed parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSpec {
    pub name: String,
    /// Period (or minimum inter-arrival time).
    pub period: Nanos,
    pub wcet: Nanos,
    /// The least execution time a job may draw (⌈etf·wcet⌉); equal to `wcet` when etf = 1.
    pub min_exec: Nanos,
    /// Relative deadline.
    pub deadline: Nanos,
    pub offset: Nanos,
    /// Explicit priority for the `fp` guest scheduler (smaller = higher).
    pub priority: u32,
    pub arrival: Arrival,
    /// The VCPU (index in its domain) the task runs on in a partitioned guest; 0 otherwise.
    pub vcpu: u32,
}

impl TaskSpec {
    /// A periodic task with deadline = period, etf = 1, offset 0.
    pub fn periodic(name: &str, period: Nanos, wcet: Nanos) -> TaskSpec {
        TaskSpec {
            name: name.to_string(),
            period,
            wcet,
            min_exec: wcet,
            deadline: period,
            offset: Nanos::ZERO,
            priority: 0,
            arrival: Arrival::Periodic,
            vcpu: 0,
        }
    }
}

/// One job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// Index of the task in its guest.
    pub task: u32,
    /// 0 for the task's first job, then 1, 2, ...
    pub seq: u64,
    pub release: Nanos,
    /// Absolute deadline.
    pub deadline: Nanos,
    /// Execution time this job needs.
    pub demand: Nanos,
    /// Execution time received so far.
    pub done: Nanos,
    pub first_start: Option<Nanos>,
    /// The release of the job that started this job's trigger chain: its own release for a
    /// task released from outside, the origin of the job that triggered it otherwise.
    pub origin: Nanos,
}

/// From how many tasks a guest keeps its ready heads in a set instead of scanning its
/// queues (`Guest::ready`): about where the set's upkeep starts to cost less than a scan.
pub const READY_SET_FROM: usize = 32;

/// The most VCPUs a domain may have (which of them run is a 64-bit mask).
pub const MAX_VCPUS: u32 = 64;

/// A guest's tasks do not fit its VCPUs.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GuestError {
    #[error("vcpus: {0} is more than the {MAX_VCPUS} a domain may have")]
    TooManyVcpus(u32),
    #[error("task '{task}': vcpu: {vcpu} is not a VCPU of the domain (it has {vcpus})")]
    TaskVcpuOutOfRange { task: String, vcpu: u32, vcpus: u32 },
    #[error(
        "task '{task}': vcpu: {vcpu} pins the task, but the guest schedules globally (only \
         a partitioned guest pins tasks to VCPUs)"
    )]
    TaskVcpuOnGlobal { task: String, vcpu: u32 },
}

/// Which VCPUs of a global guest have work (module doc, "Which VCPUs have work"), as
/// bit masks (bit j = VCPU j): `awake` as it was, `running` the VCPUs the VMM runs now,
/// `with_job` those running a job, `ready` the tasks with a pending job, `all` the
/// guest's VCPUs. `min(ready, k)` stay awake: when fewer are needed, first a VCPU without
/// a job that the VMM does not run goes to sleep, then one without a job, highest index
/// first; when more are needed, the sleeping ones wake, lowest index first. The host
/// executor asks the same of its guests.
pub fn global_awake(mut awake: u64, running: u64, with_job: u64, ready: u32, all: u64) -> u64 {
    awake &= all;
    let target = ready.min(all.count_ones());
    while awake.count_ones() > target {
        let idle = awake & !with_job;
        let from = [idle & !running, idle, awake]
            .into_iter()
            .find(|&c| c != 0)
            .expect("more awake than the target, which is at least 0");
        awake &= !(1u64 << (63 - from.leading_zeros()));
    }
    while awake.count_ones() < target {
        let asleep = all & !awake;
        awake |= 1u64 << asleep.trailing_zeros();
    }
    awake
}

/// The state of a guest of several VCPUs (see "Several VCPUs" in the module doc).
#[derive(Clone, Debug)]
struct Smp {
    mode: GuestSmp,
    vcpus: u32,
    /// The task whose head job each VCPU runs now (running VCPUs only).
    slot: Vec<Option<usize>>,
    /// The VCPUs the VMM runs now, as last told (bit j = VCPU j).
    running: u64,
    /// The VCPUs that have work (bit j = VCPU j).
    awake: u64,
    /// Scratch: the tasks with a pending job, best first.
    heads: Vec<usize>,
}

/// Where a task's next release comes from.
#[derive(Clone, Debug)]
struct ArrivalState {
    next: Option<Nanos>,
    /// Index into the aperiodic list.
    listed: usize,
    released: u64,
}

/// A guest OS with its tasks, on one VCPU or several.
#[derive(Clone, Debug)]
pub struct Guest {
    scheduler: GuestScheduler,
    tasks: Vec<TaskSpec>,
    /// Static priority level of each task (smaller = higher): the period (rm), the relative
    /// deadline (dm) or the explicit priority (fp); unused under edf.
    level: Vec<u64>,
    /// When the guest started: releases count from here.
    start: Nanos,
    queues: Vec<VecDeque<Job>>,
    arrivals: Vec<ArrivalState>,
    pending: usize,
    /// What [`Self::pick`] returns, kept up to date instead of scanning every queue on each
    /// call. Only two things change the queue heads: `release` (the new job may become the
    /// best head) and `run` finishing a job (the head leaves: the first of `ready`).
    picked: Option<usize>,
    /// Guests of more than [`READY_SET_FROM`] tasks: the head key ([`Self::head_key`]) of
    /// every task with a pending job, in the guest scheduler's order, so that a finished
    /// job's successor finds its place in O(log tasks) instead of a scan of every queue.
    /// Smaller guests scan: cheaper than keeping the set at their size.
    ready: Option<BTreeSet<(u64, Nanos, usize)>>,
    /// `None` for a guest of one VCPU (the fast path).
    smp: Option<Box<Smp>>,
}

impl Guest {
    /// A guest running `tasks` under `scheduler`, started at `start` (when its domain
    /// joins). The first release of every task is `start` plus its offset (or plus its first
    /// listed time).
    pub fn new(scheduler: GuestScheduler, tasks: Vec<TaskSpec>, start: Nanos) -> Guest {
        let level = tasks
            .iter()
            .map(|t| match scheduler {
                GuestScheduler::Rm => t.period.as_ns(),
                GuestScheduler::Dm => t.deadline.as_ns(),
                GuestScheduler::Fp => t.priority as u64,
                GuestScheduler::Edf => 0,
            })
            .collect();
        let arrivals = tasks
            .iter()
            .map(|t| ArrivalState {
                next: match &t.arrival {
                    Arrival::AperiodicTimes(times) => times.first().map(|&at| start + at),
                    Arrival::Triggered { .. } => None,
                    _ => Some(start + t.offset),
                },
                listed: 0,
                released: 0,
            })
            .collect();
        let ready = (tasks.len() > READY_SET_FROM).then(BTreeSet::new);
        Guest {
            scheduler,
            queues: vec![VecDeque::new(); tasks.len()],
            tasks,
            level,
            start,
            arrivals,
            pending: 0,
            picked: None,
            ready,
            smp: None,
        }
    }

    /// Whether a guest of `vcpus` VCPUs scheduling `smp` can run `tasks`: at most
    /// [`MAX_VCPUS`] VCPUs, a partitioned guest's tasks on VCPUs it has, a global guest's
    /// tasks unpinned. [`Self::with_vcpus`] builds exactly the guests this accepts, so a
    /// driver can refuse a domain before it touches the machine.
    pub fn check_shape(tasks: &[TaskSpec], vcpus: u32, smp: GuestSmp) -> Result<(), GuestError> {
        let vcpus = vcpus.max(1);
        if vcpus > MAX_VCPUS {
            return Err(GuestError::TooManyVcpus(vcpus));
        }
        for t in tasks {
            match smp {
                GuestSmp::Partitioned if t.vcpu >= vcpus => {
                    return Err(GuestError::TaskVcpuOutOfRange {
                        task: t.name.clone(),
                        vcpu: t.vcpu,
                        vcpus,
                    })
                }
                GuestSmp::Global if t.vcpu != 0 => {
                    return Err(GuestError::TaskVcpuOnGlobal {
                        task: t.name.clone(),
                        vcpu: t.vcpu,
                    })
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A guest of `vcpus` VCPUs (1 is [`Self::new`]) scheduling its tasks over them as
    /// `smp` says. Fails when a task names a VCPU the domain lacks, or pins a task in a
    /// global guest.
    pub fn with_vcpus(
        scheduler: GuestScheduler,
        tasks: Vec<TaskSpec>,
        start: Nanos,
        vcpus: u32,
        smp: GuestSmp,
    ) -> Result<Guest, GuestError> {
        let vcpus = vcpus.max(1);
        Self::check_shape(&tasks, vcpus, smp)?;
        let mut guest = Guest::new(scheduler, tasks, start);
        if vcpus > 1 {
            guest.smp = Some(Box::new(Smp {
                mode: smp,
                vcpus,
                slot: vec![None; vcpus as usize],
                running: 0,
                awake: 0,
                heads: Vec::new(),
            }));
        }
        Ok(guest)
    }

    /// The number of VCPUs.
    pub fn vcpus(&self) -> u32 {
        self.smp.as_ref().map_or(1, |s| s.vcpus)
    }

    pub fn scheduler(&self) -> GuestScheduler {
        self.scheduler
    }

    pub fn tasks(&self) -> &[TaskSpec] {
        &self.tasks
    }

    /// Whether any job is pending.
    #[inline]
    pub fn has_work(&self) -> bool {
        self.pending > 0
    }

    /// Number of pending (released, unfinished) jobs.
    pub fn pending_jobs(&self) -> usize {
        self.pending
    }

    /// The pending jobs of a task, oldest first.
    pub fn queue(&self, task: usize) -> &VecDeque<Job> {
        &self.queues[task]
    }

    /// When `task` next releases a job, if ever.
    pub fn next_release(&self, task: usize) -> Option<Nanos> {
        self.arrivals[task].next
    }

    /// Releases the job of `task` due now: draws its demand and its successor's release
    /// time from `rng`. Returns the released job.
    pub fn release(&mut self, now: Nanos, task: usize, rng: &mut SimRng) -> &Job {
        self.release_from(now, task, rng, None)
    }

    /// Releases a job of `task` now, as [`Self::release`] does; `origin` is the origin of
    /// the job whose completion triggered it ([`Job::origin`]; `None`: released from
    /// outside, its own release).
    #[inline]
    pub fn release_from(
        &mut self,
        now: Nanos,
        task: usize,
        rng: &mut SimRng,
        origin: Option<Nanos>,
    ) -> &Job {
        let job = self.arrive(now, task, rng, origin);
        self.deliver(job)
    }

    /// The first half of [`Self::release_from`]: the job of `task` released at `now` —
    /// its demand drawn, the task's next release set — but not yet in the ready queue.
    /// A driver that models a wake delivery latency hands it to [`Self::deliver`] later;
    /// the job keeps `now` as its release and its deadline counts from there.
    // Always inlined: `release_from` is the simulator's hot path, where a call boundary
    // costs a copy of the job (callgrind, `docs/benchmarks.md`, "Wake delivery off").
    #[inline(always)]
    pub fn arrive(
        &mut self,
        now: Nanos,
        task: usize,
        rng: &mut SimRng,
        origin: Option<Nanos>,
    ) -> Job {
        let spec = &self.tasks[task];
        let demand = if spec.min_exec == spec.wcet {
            spec.wcet
        } else {
            Nanos(rng.uniform_u64(spec.min_exec.as_ns(), spec.wcet.as_ns()))
        };
        let a = &mut self.arrivals[task];
        let job = Job {
            task: task as u32,
            seq: a.released,
            release: now,
            deadline: now + spec.deadline,
            demand,
            done: Nanos::ZERO,
            first_start: None,
            origin: origin.unwrap_or(now),
        };
        a.released += 1;
        a.next = match &spec.arrival {
            Arrival::Periodic => {
                Some(self.start + spec.offset + Nanos(spec.period.as_ns() * a.released))
            }
            Arrival::Sporadic { max_extra_gap } => {
                Some(now + spec.period + Nanos(rng.uniform_u64(0, max_extra_gap.as_ns())))
            }
            Arrival::AperiodicTimes(times) => {
                a.listed += 1;
                times.get(a.listed).map(|&at| self.start + at)
            }
            Arrival::Poisson { mean_gap } => {
                let gap = rng.exponential_f64(mean_gap.as_ns() as f64).round() as u64;
                Some(now + Nanos(gap.max(1)))
            }
            Arrival::Triggered { .. } => None,
        };
        job
    }

    /// The second half of [`Self::release_from`]: `job` (from [`Self::arrive`]) joins its
    /// task's queue, behind the task's earlier jobs. Jobs of one task must be delivered in
    /// the order they arrived.
    #[inline(always)]
    pub fn deliver(&mut self, job: Job) -> &Job {
        let task = job.task as usize;
        debug_assert!(
            self.queues[task]
                .back()
                .is_none_or(|last| last.seq < job.seq),
            "jobs of a task delivered out of order"
        );
        self.pending += 1;
        let becomes_head = self.queues[task].is_empty();
        self.queues[task].push_back(job);
        if becomes_head {
            let key = self.head_key(task);
            if let Some(ready) = &mut self.ready {
                ready.insert(key);
            }
            self.picked = match self.picked {
                Some(best) if !self.head_before(task, best) => Some(best),
                _ => Some(task),
            };
        }
        debug_assert_eq!(self.picked, self.scan_pick(), "stale pick after release");
        if becomes_head && self.smp.is_some() {
            self.refresh_awake();
        }
        self.queues[task].back().expect("just pushed")
    }

    /// The order of head jobs — priority (or absolute deadline under edf), then release
    /// (first-in, first-out), then declaration — for a task that has a pending job.
    #[inline]
    fn head_key(&self, task: usize) -> (u64, Nanos, usize) {
        let head = self.queues[task].front().expect("has a job");
        let level = match self.scheduler {
            GuestScheduler::Edf => head.deadline.as_ns(),
            _ => self.level[task],
        };
        (level, head.release, task)
    }

    /// Whether the head job of task `a` runs before the head job of task `b` (both have
    /// one): the guest scheduler's order, the one [`Self::scan_pick`] minimises.
    fn head_before(&self, a: usize, b: usize) -> bool {
        self.head_key(a) < self.head_key(b)
    }

    /// The pick computed from scratch: the best head job over every task's queue.
    fn scan_pick(&self) -> Option<usize> {
        if self.pending == 0 {
            return None;
        }
        (0..self.queues.len())
            .filter(|&t| !self.queues[t].is_empty())
            .min_by_key(|&t| self.head_key(t))
    }

    /// The task whose head job runs if the VCPU runs now.
    #[inline]
    pub fn pick(&self) -> Option<usize> {
        self.picked
    }

    /// The job that runs if the VCPU runs now.
    #[inline]
    pub fn current_job(&self) -> Option<&Job> {
        self.pick().and_then(|t| self.queues[t].front())
    }

    /// How long the VCPU must run for the current job to finish.
    #[inline]
    pub fn time_to_completion(&self) -> Option<Nanos> {
        self.current_job().map(|j| j.demand - j.done)
    }

    /// The VCPU ran from `start` for `ran` (no longer than [`Self::time_to_completion`]): the
    /// current job progresses. Returns the job if it finished (at `start + ran`).
    pub fn run(&mut self, start: Nanos, ran: Nanos) -> Option<Job> {
        let task = self.pick()?;
        let q = &mut self.queues[task];
        let job = q.front_mut().expect("picked task has a job");
        if job.first_start.is_none() {
            job.first_start = Some(start);
        }
        debug_assert!(job.done + ran <= job.demand, "ran past the job's demand");
        job.done += ran;
        if job.done >= job.demand {
            Some(self.pop_head(task))
        } else {
            None
        }
    }

    /// The head job of `task` finished: it leaves, its successor (if any) takes its place
    /// in `ready`, and the pick follows.
    fn pop_head(&mut self, task: usize) -> Job {
        let Some(mut ready) = self.ready.take() else {
            self.pending -= 1;
            let finished = self.queues[task].pop_front().expect("a head job");
            self.picked = self.scan_pick();
            return finished;
        };
        ready.remove(&self.head_key(task));
        self.pending -= 1;
        let finished = self.queues[task].pop_front().expect("a head job");
        if !self.queues[task].is_empty() {
            ready.insert(self.head_key(task));
        }
        self.picked = ready.first().map(|&(.., t)| t);
        self.ready = Some(ready);
        debug_assert_eq!(self.picked, self.scan_pick(), "stale pick after a finish");
        finished
    }

    /// Every pending job, for the end-of-run count.
    pub fn pending(&self) -> impl Iterator<Item = &Job> {
        self.queues.iter().flat_map(|q| q.iter())
    }

    /// Several VCPUs: the VMM runs the VCPUs of `running` (bit j = VCPU j) from now until
    /// the next call; decides which job each of them runs (module doc, "Several VCPUs").
    /// Call it whenever the running VCPUs, a release or a finish may have changed that
    /// choice (a driver calls it before each step). A guest of one VCPU ignores it.
    pub fn set_running(&mut self, running: u64) {
        let Some(mut smp) = self.smp.take() else {
            return;
        };
        smp.running = running;
        let vcpus = smp.vcpus as usize;
        match smp.mode {
            GuestSmp::Global => {
                let mut heads = std::mem::take(&mut smp.heads);
                heads.clear();
                let chosen = running.count_ones() as usize;
                match &self.ready {
                    Some(ready) => heads.extend(ready.iter().take(chosen).map(|&(.., t)| t)),
                    None => {
                        heads
                            .extend((0..self.queues.len()).filter(|&t| !self.queues[t].is_empty()));
                        heads.sort_unstable_by_key(|&t| self.head_key(t));
                        heads.truncate(chosen);
                    }
                }
                // A chosen job keeps its VCPU while that VCPU runs; every other job leaves.
                for j in 0..vcpus {
                    if let Some(t) = smp.slot[j] {
                        if running & (1 << j) == 0 || !heads.contains(&t) {
                            smp.slot[j] = None;
                        }
                    }
                }
                // The chosen jobs without a VCPU, best first, take the free running ones.
                for &t in &heads {
                    if smp.slot.contains(&Some(t)) {
                        continue;
                    }
                    let free = (0..vcpus)
                        .find(|&j| running & (1 << j) != 0 && smp.slot[j].is_none())
                        .expect("as many chosen jobs as running VCPUs at most");
                    smp.slot[free] = Some(t);
                }
                smp.heads = heads;
                debug_assert!(
                    (0..vcpus).all(|j| smp.slot[j].is_none()
                        || !smp.slot[j + 1..].contains(&smp.slot[j])),
                    "a job on two VCPUs"
                );
            }
            GuestSmp::Partitioned => {
                for j in 0..vcpus {
                    smp.slot[j] = if running & (1 << j) != 0 {
                        (0..self.queues.len())
                            .filter(|&t| {
                                self.tasks[t].vcpu as usize == j && !self.queues[t].is_empty()
                            })
                            .min_by_key(|&t| self.head_key(t))
                    } else {
                        None
                    };
                }
            }
        }
        self.smp = Some(smp);
        self.refresh_awake();
    }

    /// Recomputes which VCPUs have work (module doc, "Which VCPUs have work").
    fn refresh_awake(&mut self) {
        let Some(mut smp) = self.smp.take() else {
            return;
        };
        let all = if smp.vcpus == MAX_VCPUS {
            u64::MAX
        } else {
            (1u64 << smp.vcpus) - 1
        };
        match smp.mode {
            GuestSmp::Partitioned => {
                let mut awake = 0;
                for (t, q) in self.queues.iter().enumerate() {
                    if !q.is_empty() {
                        awake |= 1 << self.tasks[t].vcpu;
                    }
                }
                smp.awake = awake;
            }
            GuestSmp::Global => {
                let ready = match &self.ready {
                    Some(ready) => ready.len(),
                    None => self.queues.iter().filter(|q| !q.is_empty()).count(),
                } as u32;
                let mut with_job = 0u64;
                for (j, s) in smp.slot.iter().enumerate() {
                    if s.is_some() {
                        with_job |= 1 << j;
                    }
                }
                smp.awake = global_awake(smp.awake, smp.running, with_job, ready, all);
            }
        }
        self.smp = Some(smp);
    }

    /// Whether VCPU `vcpu` has work: what the driver reports to the VMM (module doc). For a
    /// guest of one VCPU, [`Self::has_work`].
    #[inline]
    pub fn vcpu_has_work(&self, vcpu: u32) -> bool {
        match &self.smp {
            None => self.has_work(),
            Some(smp) => smp.awake & (1 << vcpu) != 0,
        }
    }

    /// The task whose head job VCPU `vcpu` runs if it runs now (as of the last
    /// [`Self::set_running`]; for one VCPU, [`Self::pick`]).
    #[inline]
    pub fn pick_on(&self, vcpu: u32) -> Option<usize> {
        match &self.smp {
            None => self.pick(),
            Some(smp) => smp.slot[vcpu as usize],
        }
    }

    /// The job VCPU `vcpu` runs if it runs now.
    #[inline]
    pub fn job_on(&self, vcpu: u32) -> Option<&Job> {
        self.pick_on(vcpu).and_then(|t| self.queues[t].front())
    }

    /// How long VCPU `vcpu` must run for its job to finish.
    #[inline]
    pub fn time_to_completion_on(&self, vcpu: u32) -> Option<Nanos> {
        self.job_on(vcpu).map(|j| j.demand - j.done)
    }

    /// VCPU `vcpu` ran from `start` for `ran` (no longer than
    /// [`Self::time_to_completion_on`]): its job progresses. Returns the job if it finished
    /// (at `start + ran`). For one VCPU, [`Self::run`].
    #[inline]
    pub fn run_on(&mut self, vcpu: u32, start: Nanos, ran: Nanos) -> Option<Job> {
        let Some(smp) = self.smp.as_deref_mut() else {
            return self.run(start, ran);
        };
        let task = smp.slot[vcpu as usize]?;
        let q = &mut self.queues[task];
        let job = q.front_mut().expect("a VCPU's task has a job");
        if job.first_start.is_none() {
            job.first_start = Some(start);
        }
        debug_assert!(job.done + ran <= job.demand, "ran past the job's demand");
        job.done += ran;
        if job.done < job.demand {
            return None;
        }
        smp.slot[vcpu as usize] = None;
        let finished = self.pop_head(task);
        self.refresh_awake();
        Some(finished)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Nanos {
        Nanos::from_ms(x)
    }

    #[test]
    fn rm_prefers_shorter_period_and_jobs_queue_fifo() {
        let mut rng = SimRng::new(1);
        let mut g = Guest::new(
            GuestScheduler::Rm,
            vec![
                TaskSpec::periodic("slow", ms(20), ms(5)),
                TaskSpec::periodic("fast", ms(10), ms(2)),
            ],
            Nanos::ZERO,
        );
        g.release(ms(0), 0, &mut rng);
        assert_eq!(g.pick(), Some(0));
        g.release(ms(0), 1, &mut rng);
        assert_eq!(g.pick(), Some(1), "shorter period wins under rm");
        assert_eq!(g.run(ms(0), ms(2)).map(|j| j.task), Some(1));
        assert_eq!(g.pick(), Some(0));
        assert_eq!(g.next_release(1), Some(ms(10)));
        // Two jobs of one task: the second waits behind the first.
        g.release(ms(20), 0, &mut rng);
        assert_eq!(g.queue(0).len(), 2);
        assert_eq!(g.time_to_completion(), Some(ms(5)));
    }

    #[test]
    fn edf_prefers_earliest_absolute_deadline() {
        let mut rng = SimRng::new(1);
        let mut g = Guest::new(
            GuestScheduler::Edf,
            vec![
                TaskSpec::periodic("a", ms(10), ms(1)),
                TaskSpec::periodic("b", ms(30), ms(1)),
            ],
            Nanos::ZERO,
        );
        g.release(ms(0), 1, &mut rng); // deadline 30
        g.release(ms(25), 0, &mut rng); // deadline 35
        assert_eq!(
            g.pick(),
            Some(1),
            "edf: deadline 30 beats 35 despite the longer period"
        );
        let mut rm = Guest::new(GuestScheduler::Rm, g.tasks().to_vec(), Nanos::ZERO);
        rm.release(ms(0), 1, &mut rng);
        rm.release(ms(25), 0, &mut rng);
        assert_eq!(rm.pick(), Some(0));
    }

    #[test]
    fn demand_is_drawn_within_etf_bounds() {
        let mut rng = SimRng::new(3);
        let mut t = TaskSpec::periodic("t", ms(10), ms(4));
        t.min_exec = ms(1);
        let mut g = Guest::new(GuestScheduler::Rm, vec![t], Nanos::ZERO);
        let mut distinct = std::collections::BTreeSet::new();
        for k in 0..50 {
            let d = g.release(ms(10 * k), 0, &mut rng).demand;
            assert!(d >= ms(1) && d <= ms(4));
            distinct.insert(d);
        }
        assert!(distinct.len() > 10);
    }

    /// Equal priorities (rm, equal periods) are served by release, not by declaration: b's
    /// job released at 1 runs before a's released at 3, and a's later job does not preempt
    /// it; jobs released together go in declaration order.
    #[test]
    fn equal_priorities_are_first_in_first_out_by_release() {
        let mut rng = SimRng::new(1);
        let mut g = Guest::new(
            GuestScheduler::Rm,
            vec![
                TaskSpec::periodic("a", ms(10), ms(2)),
                TaskSpec::periodic("b", ms(10), ms(2)),
            ],
            Nanos::ZERO,
        );
        g.release(ms(1), 1, &mut rng);
        g.release(ms(3), 0, &mut rng);
        assert_eq!(g.pick(), Some(1), "released first, runs first");
        assert_eq!(g.run(ms(1), ms(2)).map(|j| j.task), Some(1));
        assert_eq!(g.pick(), Some(0));
        g.release(ms(10), 0, &mut rng);
        g.release(ms(10), 1, &mut rng);
        assert_eq!(g.run(ms(3), ms(2)).map(|j| j.task), Some(0));
        assert_eq!(
            g.pick(),
            Some(0),
            "a's job of 10 and b's of 10: declaration order"
        );
        let mut h = Guest::new(GuestScheduler::Rm, g.tasks().to_vec(), Nanos::ZERO);
        h.release(ms(0), 1, &mut rng);
        h.release(ms(0), 0, &mut rng);
        assert_eq!(h.pick(), Some(0), "same instant: declaration order");
    }

    /// A guest that starts at 1.2 s releases its 10 ms task at 1.2 s, 1.21 s, …: releases
    /// count from the start, not from time 0.
    #[test]
    fn releases_count_from_the_guest_start() {
        let mut rng = SimRng::new(1);
        let mut t = TaskSpec::periodic("t", ms(10), ms(1));
        t.offset = ms(3);
        let mut listed = TaskSpec::periodic("l", ms(10), ms(1));
        listed.arrival = Arrival::AperiodicTimes(vec![ms(5), ms(7)]);
        let mut g = Guest::new(GuestScheduler::Rm, vec![t, listed], ms(1200));
        assert_eq!(g.next_release(0), Some(ms(1203)));
        assert_eq!(g.next_release(1), Some(ms(1205)));
        g.release(ms(1203), 0, &mut rng);
        assert_eq!(g.next_release(0), Some(ms(1213)));
        g.release(ms(1205), 1, &mut rng);
        assert_eq!(g.next_release(1), Some(ms(1207)));
    }

    fn job_at_zero(name: &str, period: u64, wcet: u64) -> TaskSpec {
        let mut t = TaskSpec::periodic(name, ms(period), ms(wcet));
        t.arrival = Arrival::AperiodicTimes(vec![Nanos::ZERO]);
        t
    }

    /// Global, 2 VCPUs, rm: a (period 10), b (20), c (30), 4 ms each, all at 0.
    /// Both VCPUs run: a on V0, b on V1 (best first, lowest index first). After 2 ms V0 is
    /// descheduled: a (best) moves to V1, b goes back to the queue. a finishes on V1 at 4;
    /// with both running again, b takes V0 and c V1.
    #[test]
    fn global_guest_runs_the_best_jobs_on_the_running_vcpus() {
        let mut rng = SimRng::new(1);
        let tasks = vec![
            job_at_zero("a", 10, 4),
            job_at_zero("b", 20, 4),
            job_at_zero("c", 30, 4),
        ];
        let mut g =
            Guest::with_vcpus(GuestScheduler::Rm, tasks, Nanos::ZERO, 2, GuestSmp::Global).unwrap();
        assert_eq!(g.vcpus(), 2);
        for t in 0..3 {
            g.release(ms(0), t, &mut rng);
        }
        assert!(
            g.vcpu_has_work(0) && g.vcpu_has_work(1),
            "3 ready jobs, 2 VCPUs"
        );
        g.set_running(0b11);
        assert_eq!((g.pick_on(0), g.pick_on(1)), (Some(0), Some(1)));
        assert_eq!(g.run_on(0, ms(0), ms(2)), None);
        assert_eq!(g.run_on(1, ms(0), ms(2)), None);
        g.set_running(0b10);
        assert_eq!(
            (g.pick_on(0), g.pick_on(1)),
            (None, Some(0)),
            "a moves to V1"
        );
        assert_eq!(g.time_to_completion_on(1), Some(ms(2)));
        let a = g.run_on(1, ms(2), ms(2)).expect("a finishes");
        assert_eq!((a.task, a.first_start), (0, Some(ms(0))));
        g.set_running(0b11);
        assert_eq!((g.pick_on(0), g.pick_on(1)), (Some(1), Some(2)));
        assert_eq!(
            g.time_to_completion_on(0),
            Some(ms(2)),
            "b resumes where it stopped"
        );
    }

    /// Global, 2 VCPUs: one ready task keeps one VCPU awake (V0, the lowest); a second wakes
    /// V1. When the job on V0 finishes and V1 still runs one, V0 (now without a job) is the
    /// one that sleeps, not V1.
    #[test]
    fn a_global_guest_keeps_as_many_vcpus_awake_as_it_has_ready_tasks() {
        let mut rng = SimRng::new(1);
        let tasks = vec![job_at_zero("a", 10, 1), job_at_zero("b", 20, 5)];
        let mut g =
            Guest::with_vcpus(GuestScheduler::Rm, tasks, Nanos::ZERO, 2, GuestSmp::Global).unwrap();
        assert!(!g.vcpu_has_work(0) && !g.vcpu_has_work(1));
        g.release(ms(0), 1, &mut rng);
        assert!(g.vcpu_has_work(0) && !g.vcpu_has_work(1));
        g.set_running(0b01);
        assert_eq!(g.pick_on(0), Some(1));
        g.release(ms(1), 0, &mut rng);
        assert!(g.vcpu_has_work(1), "a second ready task wakes V1");
        g.set_running(0b11);
        // a beats b, but b keeps V0 (both are among the 2 best): a takes V1.
        assert_eq!((g.pick_on(0), g.pick_on(1)), (Some(1), Some(0)));
        g.run_on(1, ms(1), ms(1)).expect("a finishes");
        g.set_running(0b11);
        assert!(
            g.vcpu_has_work(0) && !g.vcpu_has_work(1),
            "V1 has no job: it sleeps"
        );
        g.run_on(0, ms(2), ms(5)).expect("b finishes");
        assert!(!g.vcpu_has_work(0) && !g.vcpu_has_work(1));
    }

    /// Partitioned: a and c on V0, b on V1; each VCPU has work while one of its tasks has.
    #[test]
    fn partitioned_guest_runs_each_task_on_its_own_vcpu() {
        let mut rng = SimRng::new(1);
        let mut tasks = vec![
            job_at_zero("a", 10, 1),
            job_at_zero("b", 20, 1),
            job_at_zero("c", 30, 1),
        ];
        tasks[1].vcpu = 1;
        let mut g = Guest::with_vcpus(
            GuestScheduler::Rm,
            tasks.clone(),
            Nanos::ZERO,
            2,
            GuestSmp::Partitioned,
        )
        .unwrap();
        g.release(ms(0), 2, &mut rng);
        assert!(g.vcpu_has_work(0) && !g.vcpu_has_work(1), "c is V0's");
        g.set_running(0b11);
        assert_eq!((g.pick_on(0), g.pick_on(1)), (Some(2), None));
        g.release(ms(0), 0, &mut rng);
        g.release(ms(0), 1, &mut rng);
        g.set_running(0b11);
        assert_eq!((g.pick_on(0), g.pick_on(1)), (Some(0), Some(1)));
        g.set_running(0b10);
        assert_eq!(
            (g.pick_on(0), g.pick_on(1)),
            (None, Some(1)),
            "a never moves"
        );

        tasks[1].vcpu = 2;
        assert_eq!(
            Guest::with_vcpus(
                GuestScheduler::Rm,
                tasks.clone(),
                Nanos::ZERO,
                2,
                GuestSmp::Partitioned
            )
            .err(),
            Some(GuestError::TaskVcpuOutOfRange {
                task: "b".into(),
                vcpu: 2,
                vcpus: 2
            })
        );
        assert!(matches!(
            Guest::with_vcpus(GuestScheduler::Rm, tasks, Nanos::ZERO, 2, GuestSmp::Global),
            Err(GuestError::TaskVcpuOnGlobal { .. })
        ));
    }

    /// A triggered task never releases on its own; a job it releases carries the origin it
    /// is given, a job released from outside its own release.
    #[test]
    fn triggered_jobs_carry_their_chain_origin() {
        let mut rng = SimRng::new(1);
        let mut t = TaskSpec::periodic("app", ms(10), ms(1));
        t.arrival = Arrival::Triggered {
            by_domain: "d".into(),
            by_task: "rx".into(),
            delay: ms(1),
        };
        let mut g = Guest::new(
            GuestScheduler::Rm,
            vec![TaskSpec::periodic("rx", ms(10), ms(1)), t],
            Nanos::ZERO,
        );
        assert_eq!(g.next_release(1), None);
        assert_eq!(g.release(ms(0), 0, &mut rng).origin, ms(0));
        let job = g.release_from(ms(3), 1, &mut rng, Some(ms(0)));
        assert_eq!((job.release, job.origin), (ms(3), ms(0)));
        assert_eq!(g.next_release(1), None);
    }
}
