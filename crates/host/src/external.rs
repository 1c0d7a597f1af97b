//! External domains: an existing cgroup or set of processes (a QEMU virtual machine, a
//! container) scheduled as one VCPU.
//!
//! # Design note
//! To the core an external domain is a VCPU with no tasks whose wake and block the
//! executor reports, from the threads' own state: **it has work when one of its threads
//! is runnable** (`R` in `/proc/PID/task/TID/stat`), none when all sleep (`S`, `D`, ...).
//! The executor samples that at every loop iteration, and at least once a quantum.
//!
//! A stopped thread cannot be seen to wake: a frozen thread shows `S` whatever it would
//! do, a `SIGSTOP`ped one `T`. So the domain is held in one of three ways ([`Hold`]):
//! - **running** (the core runs its VCPU): resumed, its threads at [`RUN_PRIORITY`];
//! - **stopped** (it has work but is not running): stopped by the run's backend (frozen,
//!   `SIGSTOP`, or — `band` — demoted); its state is not sampled but kept: it had work
//!   when stopped, and a thread that does not run cannot go to sleep, so it still has;
//! - **parked** (it has no work): not frozen or stopped — a frozen thread's wake-up would
//!   go unseen and the domain would starve — but demoted to [`PARKED_PRIORITY`], below
//!   the IDLE spinner ([`IDLE_PRIORITY_BAND`] whenever a run has an external domain) and
//!   every guest thread. A thread that wakes is runnable but cannot run; the next sample
//!   sees `R` and wakes the VCPU. (As with `band`, a parked thread may run briefly when
//!   the running domain has nothing runnable before the executor hears of it.)
//!
//! Its threads are therefore pinned to the managed cpu and put in `SCHED_RR` (not
//! `SCHED_FIFO`: rtvmm does not know which thread is a vCPU and which an I/O thread, and
//! at one `SCHED_FIFO` level a spinning vCPU thread would starve QEMU's main loop; `RR`
//! takes turns), with `SCHED_RESET_ON_FORK`, so that threads they start come up in
//! `SCHED_OTHER`. New threads and processes are found every [`RESCAN`]. Everything
//! changed is announced to the watchdog first and given back at the end, on removal, or
//! by the watchdog: each thread's policy, nice value, priority and cpus; an attached
//! cgroup thawed (never removed, never killed); `pids` moved back to their own cgroups
//! (under `freeze` they are moved into the run's cgroup of the domain, and whatever they
//! started there goes back too); `SIGCONT` to each process.
//!
//! CPU time comes from `/proc/PID/task/TID/schedstat` (nanoseconds on a cpu), taken at
//! attach time, at each rescan and at the end; a thread that exits between two rescans
//! loses what it ran since the last. When every process is gone the domain is idle for
//! the rest of the run and the results say when that happened.
//!
//! # Putting a QEMU virtual machine under rtvmm
//! A VM is a process with a few threads (one per vCPU, the main loop, I/O threads); put
//! them all in one cgroup v2 and attach it. Either start QEMU in a fresh cgroup:
//!
//! ```sh
//! # systemd (unified or hybrid layout): a scope of its own
//! systemd-run --scope --unit=vm1 qemu-system-x86_64 -nographic -m 64 -accel tcg
//! #   → attach = "/sys/fs/cgroup/unified/system.slice/vm1.scope" (hybrid; under a pure
//! #     v2 layout the mount is /sys/fs/cgroup)
//!
//! # or by hand: make a cgroup and move the running VM into it
//! mkdir /sys/fs/cgroup/unified/vm1
//! echo "$(pidof qemu-system-x86_64)" > /sys/fs/cgroup/unified/vm1/cgroup.procs
//! ```
//!
//! then give the domain its VCPU and the path (or `pids = [QEMU's pid]`, which under
//! `freeze` moves it into the run's cgroup for the run and back afterwards):
//!
//! ```toml
//! [[domain]]
//! name = "vm1"
//! vcpu = { budget = "3ms", period = "10ms" }
//! attach = "/sys/fs/cgroup/unified/vm1"
//! ```
//!
//! and run `rtvmm host run vm.toml` as root. rtvmm must not run inside the VM's cgroup
//! (it is refused: freezing it would freeze the executor). For the run the VM's threads
//! are pinned to the managed cpu and put in `SCHED_RR`; when it ends (or the executor is
//! killed) they get their policy, priority and cpus back, and the cgroup is thawed,
//! never removed.
//!
//! Two things to know on this kind of machine (`docs/host.md`): `/dev/kvm` is a
//! software backend here (guest kernel code is emulated about 5000× slower, a VM exit
//! costs ≈ 20 µs), so a stock Linux guest boots very slowly, with KVM or with TCG; and
//! with a 3 ms budget every 10 ms the guest gets 30 % of one core, so everything in it is
//! about three times slower again. A VM without a disk or kernel (`qemu-system-x86_64
//! -nographic -m 64 -accel tcg`) spins in its firmware: a fine always-busy VM to attach.
//! Its vCPU thread is runnable whenever the guest runs; a halted guest's vCPU thread
//! sleeps, and the domain is then idle and not charged.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rtvmm_core::model::{DomainSpec, VcpuId};
use rtvmm_core::Nanos;
use rtvmm_scenario::External;

use crate::cgroup;
use crate::domain::JobBook;
use crate::enforce::{Backend, Enforcer, Member, BAND_SHIFT, IDLE_PRIORITY_BAND, RUN_BAND_BOTTOM};
use crate::sys::{self, Sched};
use crate::undo::{start_time, Undo};
use crate::HostError;

/// An external domain's threads' `SCHED_RR` priority while it runs: the IDLE spinner's
/// (which is parked then), above every demoted thread. Not higher: if the executor dies
/// while an external domain runs, its spinner thread must still get the cpu to die (at
/// the same level, `RR` takes turns), or the watchdog would wait for it forever while the
/// external threads keep the cpu.
pub const RUN_PRIORITY: u32 = IDLE_PRIORITY_BAND;
/// Its threads' priority while it is parked (or, under `band`, stopped).
pub const PARKED_PRIORITY: u32 = RUN_BAND_BOTTOM - BAND_SHIFT;
/// How often new threads and processes are looked for.
pub const RESCAN: Nanos = Nanos(50_000_000);

/// How the domain is held (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hold {
    Running,
    Stopped,
    Parked,
}

/// One of its threads.
struct Thread {
    tid: i32,
    start_time: u64,
    /// Its policy and cpus before the run.
    sched: Sched,
    cpus: Vec<usize>,
    stat: File,
    schedstat: File,
    cpu_at_attach: u64,
    cpu_last: u64,
}

/// An attached external domain.
pub struct ExternalDomain {
    pub spec: DomainSpec,
    pub vcpu: VcpuId,
    pub source: External,
    /// What the backend acts on: the processes (signal) and the cgroup (freeze); no
    /// threads (their priorities are this module's).
    pub member: Member,
    /// Always empty (no tasks, no jobs): there for the results' shape.
    pub book: JobBook,
    pub hold: Hold,
    /// Whether it had work at the last sample.
    pub has_work: bool,
    /// When every process was found gone (relative).
    pub gone_at: Option<Nanos>,
    threads: BTreeMap<i32, Thread>,
    /// The original cgroup of each process moved into the run's (pids under freeze).
    moved: Vec<(i32, PathBuf)>,
    /// The run's cgroup of the domain (pids under freeze).
    run_cgroup: Option<PathBuf>,
    /// Each process's cpus before the run (for threads found later).
    process_cpus: BTreeMap<i32, Vec<usize>>,
    exited_cpu_ns: u64,
    next_rescan: u64,
    cpu: usize,
    released: bool,
}

/// What attaching needs from the run.
pub struct AttachContext<'a> {
    pub cpu: usize,
    pub backend: Backend,
    /// The cgroup2 mount, if the run has one.
    pub mount: Option<&'a Path>,
    /// The run's parent cgroup (never attachable).
    pub run_cgroup: Option<&'a Path>,
    /// A fresh cgroup of the run for this domain (pids under freeze).
    pub domain_cgroup: &'a mut dyn FnMut() -> io::Result<PathBuf>,
    /// Tells the watchdog how to undo something, before it is done.
    pub announce: &'a mut dyn FnMut(&Undo) -> io::Result<()>,
}

/// Checks what can be checked of a source before anything starts: the cgroup exists, is
/// cgroup v2, is not the hierarchy's root, the run's, or one holding this executor; the
/// processes exist, are processes (not threads of another) and not kernel threads or this
/// executor.
pub fn validate(source: &External, mount: Option<&Path>) -> Result<(), String> {
    match source {
        External::Cgroup(path) => {
            if !path.is_dir() {
                return Err(format!(
                    "attach: {}: no such directory (give an existing cgroup v2 directory)",
                    path.display()
                ));
            }
            if !cgroup::is_cgroup2(path) {
                return Err(format!(
                    "attach: {}: not a cgroup v2 directory (cgroup v2 is mounted at {})",
                    path.display(),
                    mount.map_or("no place found".into(), |m| m.display().to_string())
                ));
            }
            let canonical = path.canonicalize().map_err(|e| format!("attach: {e}"))?;
            if let Some(mount) = mount {
                let root = mount.canonicalize().unwrap_or(mount.to_path_buf());
                if canonical == root {
                    return Err(format!(
                        "attach: {}: the root of the cgroup hierarchy (it holds the whole \
                         machine); give the VM's or container's own cgroup",
                        path.display()
                    ));
                }
                let in_a_run = canonical.strip_prefix(&root).ok().and_then(|rel| {
                    rel.components()
                        .next()
                        .map(|c| c.as_os_str().to_string_lossy().starts_with("rtvmm-"))
                });
                if in_a_run == Some(true) {
                    return Err(format!(
                        "attach: {}: a cgroup of an rtvmm run, not an external domain's",
                        path.display()
                    ));
                }
                let me = std::process::id() as i32;
                if let Ok(mine) = cgroup::cgroup_of(me, mount) {
                    let mine = mine.canonicalize().unwrap_or(mine);
                    if mine.starts_with(&canonical) {
                        return Err(format!(
                            "attach: {}: this rtvmm runs inside it (freezing it would freeze \
                             the executor); start rtvmm outside the VM's cgroup",
                            path.display()
                        ));
                    }
                }
            }
            Ok(())
        }
        External::Pids(pids) => {
            for &pid in pids {
                let status = fs::read_to_string(format!("/proc/{pid}/status"))
                    .map_err(|_| format!("pids: process {pid}: no such process"))?;
                let field = |name: &str| {
                    status
                        .lines()
                        .find_map(|l| l.strip_prefix(name))
                        .map(|v| v.trim().to_string())
                };
                if let Some(tgid) = field("Tgid:") {
                    if tgid != pid.to_string() {
                        return Err(format!(
                            "pids: {pid} is a thread of process {tgid}: give the process"
                        ));
                    }
                }
                if field("Kthread:").as_deref() == Some("1") || kernel_thread(pid) {
                    return Err(format!("pids: {pid} is a kernel thread"));
                }
                if pid == std::process::id() as i32 {
                    return Err(format!("pids: {pid} is this rtvmm itself"));
                }
            }
            Ok(())
        }
    }
}

/// `PF_KTHREAD` in the flags of `/proc/PID/stat`.
fn kernel_thread(pid: i32) -> bool {
    const PF_KTHREAD: u64 = 0x0020_0000;
    fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let after = s[s.rfind(')')? + 1..].to_string();
            after.split_whitespace().nth(6)?.parse::<u64>().ok()
        })
        .is_some_and(|flags| flags & PF_KTHREAD != 0)
}

/// The state letter of a `/proc/.../stat` text (after the command name).
fn state_of(stat: &str) -> Option<char> {
    stat[stat.rfind(')')? + 1..].trim_start().chars().next()
}

/// Reads a small `/proc` file from the start into `buf`.
fn pread(file: &File, buf: &mut [u8]) -> Option<usize> {
    file.read_at(buf, 0).ok().filter(|&n| n > 0)
}

fn read_cpu(file: &File) -> Option<u64> {
    let mut buf = [0u8; 128];
    let n = pread(file, &mut buf)?;
    std::str::from_utf8(&buf[..n])
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

fn tasks_of(pid: i32) -> Vec<i32> {
    fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.flatten()
                .filter_map(|e| e.file_name().to_str()?.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Every process of a cgroup's subtree.
fn procs_of_tree(root: &Path) -> Vec<i32> {
    let mut out = cgroup::procs(root);
    if let Ok(entries) = fs::read_dir(root) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(procs_of_tree(&e.path()));
            }
        }
    }
    out
}

impl ExternalDomain {
    /// Attaches `source` as domain `spec` (VCPU `vcpu`), parked; the caller validated it.
    pub fn attach(
        spec: DomainSpec,
        vcpu: VcpuId,
        source: External,
        context: &mut AttachContext<'_>,
        keep_jobs: bool,
    ) -> Result<ExternalDomain, HostError> {
        let name = spec.name.clone();
        let bad = |reason: String| HostError::Domain {
            domain: name.clone(),
            reason,
        };
        let mut domain = ExternalDomain {
            spec,
            vcpu,
            member: Member {
                pids: Vec::new(),
                threads: Vec::new(),
                cgroup: None,
            },
            book: JobBook::new(0, keep_jobs),
            hold: Hold::Parked,
            has_work: false,
            gone_at: None,
            threads: BTreeMap::new(),
            moved: Vec::new(),
            run_cgroup: None,
            process_cpus: BTreeMap::new(),
            exited_cpu_ns: 0,
            next_rescan: 0,
            cpu: context.cpu,
            released: false,
            source: source.clone(),
        };
        let announce_err = |e: io::Error| bad(format!("the watchdog: {e}"));
        match (&source, context.backend) {
            (External::Cgroup(path), Backend::Freeze) => {
                (context.announce)(&Undo::ExternalCgroup(path.clone())).map_err(announce_err)?;
                domain.member.cgroup =
                    Some(Member::open_cgroup(path).map_err(|e| bad(format!("attach: {e}")))?);
            }
            (External::Pids(pids), Backend::Freeze) => {
                let mount = context
                    .mount
                    .ok_or_else(|| bad("freeze: no cgroup v2 for the run".into()))?;
                let dir = (context.domain_cgroup)().map_err(|e| bad(format!("its cgroup: {e}")))?;
                domain.run_cgroup = Some(dir.clone());
                for &pid in pids {
                    let home = cgroup::cgroup_of(pid, mount)
                        .map_err(|e| bad(format!("pids: process {pid}: {e}")))?;
                    if domain.moved.is_empty() {
                        (context.announce)(&Undo::Evacuate {
                            from: dir.clone(),
                            to: home.clone(),
                        })
                        .map_err(announce_err)?;
                    }
                    let Some(t) = start_time(pid) else {
                        return Err(bad(format!("pids: process {pid}: no such process")));
                    };
                    (context.announce)(&Undo::ExternalMove {
                        pid,
                        start_time: t,
                        to: home.clone(),
                    })
                    .map_err(announce_err)?;
                    cgroup::move_process(pid, &dir)
                        .map_err(|e| bad(format!("pids: moving process {pid}: {e}")))?;
                    domain.moved.push((pid, home));
                }
                domain.member.cgroup =
                    Some(Member::open_cgroup(&dir).map_err(|e| bad(e.to_string()))?);
            }
            _ => {}
        }
        domain.rescan(0, context.announce).map_err(&bad)?;
        if domain.threads.is_empty() {
            domain.gone_at = Some(Nanos::ZERO);
        }
        domain.has_work = domain.sample();
        Ok(domain)
    }

    /// The processes it holds now.
    fn processes(&self) -> Vec<i32> {
        match &self.source {
            External::Cgroup(path) => procs_of_tree(path),
            External::Pids(pids) => {
                let mut all: Vec<i32> = pids
                    .iter()
                    .copied()
                    .filter(|p| Path::new(&format!("/proc/{p}")).exists())
                    .collect();
                // What they started inside the run's cgroup is theirs too.
                if let Some(dir) = &self.run_cgroup {
                    all.extend(cgroup::procs(dir));
                }
                all.sort_unstable();
                all.dedup();
                all
            }
        }
    }

    /// Finds new processes and threads (announcing and taking each thread), counts the
    /// CPU time of the known ones, and forgets the gone ones. `now`: relative.
    fn rescan(
        &mut self,
        now: u64,
        announce: &mut dyn FnMut(&Undo) -> io::Result<()>,
    ) -> Result<(), String> {
        self.next_rescan = now + RESCAN.as_ns();
        let processes = self.processes();
        let mut seen = Vec::new();
        for &pid in &processes {
            for tid in tasks_of(pid) {
                seen.push(tid);
                if self.threads.contains_key(&tid) {
                    continue;
                }
                self.take_thread(pid, tid, announce)?;
            }
        }
        let gone: Vec<i32> = self
            .threads
            .keys()
            .copied()
            .filter(|t| !seen.contains(t))
            .collect();
        for tid in gone {
            self.forget(tid);
        }
        for t in self.threads.values_mut() {
            if let Some(cpu) = read_cpu(&t.schedstat) {
                t.cpu_last = cpu;
            }
        }
        self.member.pids = processes;
        Ok(())
    }

    /// Takes one thread: announced, pinned, `SCHED_RR` at the hold's priority.
    fn take_thread(
        &mut self,
        pid: i32,
        tid: i32,
        announce: &mut dyn FnMut(&Undo) -> io::Result<()>,
    ) -> Result<(), String> {
        let dir = format!("/proc/{pid}/task/{tid}");
        let (Ok(stat), Ok(schedstat), Some(t)) = (
            File::open(format!("{dir}/stat")),
            File::open(format!("{dir}/schedstat")),
            start_time(tid),
        ) else {
            return Ok(()); // gone meanwhile
        };
        let Ok(sched) = sys::sched_of(tid) else {
            return Ok(());
        };
        let Ok(cpus) = sys::affinity_of(tid) else {
            return Ok(());
        };
        // A thread started during the run inherited the pinning: it gets its process's
        // cpus back. (`SCHED_RESET_ON_FORK` already gave it SCHED_OTHER.)
        let cpus = if sched.policy != libc::SCHED_RR as u32 && cpus != vec![self.cpu] {
            self.process_cpus.entry(pid).or_insert(cpus).clone()
        } else {
            self.process_cpus.get(&pid).cloned().unwrap_or(cpus)
        };
        announce(&Undo::ExternalThread {
            tid,
            start_time: t,
            sched,
            cpus: cpus.clone(),
        })
        .map_err(|e| format!("the watchdog: {e}"))?;
        let priority = if self.hold == Hold::Running {
            RUN_PRIORITY
        } else {
            PARKED_PRIORITY
        };
        if let Err(e) = sys::pin_to(tid, self.cpu).and_then(|()| set_rr(tid, priority)) {
            if start_time(tid) == Some(t) {
                return Err(format!("thread {tid} of process {pid}: {e}"));
            }
            return Ok(());
        }
        let cpu = read_cpu(&schedstat).unwrap_or(0);
        self.threads.insert(
            tid,
            Thread {
                tid,
                start_time: t,
                sched,
                cpus,
                stat,
                schedstat,
                cpu_at_attach: cpu,
                cpu_last: cpu,
            },
        );
        Ok(())
    }

    fn forget(&mut self, tid: i32) {
        if let Some(t) = self.threads.remove(&tid) {
            self.exited_cpu_ns += t.cpu_last - t.cpu_at_attach;
        }
    }

    /// Whether one of its threads is runnable now (threads found gone are forgotten).
    fn sample(&mut self) -> bool {
        let mut buf = [0u8; 512];
        let mut any = false;
        let mut gone = Vec::new();
        for t in self.threads.values() {
            match pread(&t.stat, &mut buf)
                .and_then(|n| state_of(std::str::from_utf8(&buf[..n]).ok()?))
            {
                Some('R') => any = true,
                Some(_) => {}
                None => gone.push(t.tid),
            }
        }
        for tid in gone {
            self.forget(tid);
        }
        any
    }

    /// Samples its state unless it is stopped (then the last state stands: it had work,
    /// and a thread that does not run cannot go to sleep); rescans when due. Returns
    /// whether it has work.
    pub fn observe(
        &mut self,
        now: Nanos,
        announce: &mut dyn FnMut(&Undo) -> io::Result<()>,
    ) -> Result<bool, String> {
        if self.released {
            return Ok(false);
        }
        if now.as_ns() >= self.next_rescan && self.hold != Hold::Stopped {
            self.rescan(now.as_ns(), announce)?;
        }
        if self.hold != Hold::Stopped {
            self.has_work = self.sample();
        }
        if self.threads.is_empty() && self.member.pids.is_empty() && self.gone_at.is_none() {
            self.gone_at = Some(now);
        }
        Ok(self.has_work)
    }

    /// Puts it in `hold`: the backend stops or resumes it, its threads' priorities follow.
    pub fn set_hold(&mut self, hold: Hold, enforcer: &mut dyn Enforcer) -> io::Result<()> {
        if self.hold == hold || self.released {
            return Ok(());
        }
        let backend_stopped = |h: Hold| h == Hold::Stopped && enforcer_stops(enforcer);
        let (was, will) = (backend_stopped(self.hold), backend_stopped(hold));
        let priority = if hold == Hold::Running {
            RUN_PRIORITY
        } else {
            PARKED_PRIORITY
        };
        if was && !will {
            enforcer.resume(&self.member)?;
        }
        // Demote before stopping and promote after resuming: never two domains above.
        for t in self.threads.values() {
            let _ = set_rr(t.tid, priority);
        }
        if will && !was {
            enforcer.stop(&self.member)?;
        }
        self.hold = hold;
        Ok(())
    }

    /// Counts CPU time from now on (the run's time 0): what it ran while the run was
    /// being set up is not part of the run.
    pub fn start_counting(&mut self) {
        self.exited_cpu_ns = 0;
        for t in self.threads.values_mut() {
            if let Some(cpu) = read_cpu(&t.schedstat) {
                t.cpu_at_attach = cpu;
                t.cpu_last = cpu;
            }
        }
    }

    /// The CPU time its threads had since the run began.
    pub fn cpu_ns(&self) -> u64 {
        self.exited_cpu_ns
            + self
                .threads
                .values()
                .map(|t| t.cpu_last - t.cpu_at_attach)
                .sum::<u64>()
    }

    /// Gives everything back (idempotent): thawed and continued, moved back, the threads'
    /// policies and cpus restored. Counts the CPU time last.
    pub fn release(&mut self, enforcer: Option<&mut dyn Enforcer>) {
        if self.released {
            return;
        }
        self.released = true;
        for t in self.threads.values_mut() {
            if let Some(cpu) = read_cpu(&t.schedstat) {
                t.cpu_last = cpu;
            }
        }
        if let Some(enforcer) = enforcer {
            let _ = enforcer.resume(&self.member);
        }
        if let Some((_, file)) = &self.member.cgroup {
            let _ = file.write_at(b"0", 0);
        }
        for &pid in &self.member.pids {
            let _ = kill(Pid::from_raw(pid), Signal::SIGCONT);
        }
        for (pid, home) in &self.moved {
            let _ = cgroup::move_process(*pid, home);
        }
        if let (Some(dir), Some((_, home))) = (&self.run_cgroup, self.moved.first()) {
            cgroup::evacuate(dir, home);
        }
        self.restore_threads();
    }

    /// Each thread's policy and cpus as they were (for a thread started during the run:
    /// `SCHED_OTHER` and its process's cpus).
    fn restore_threads(&self) {
        for t in self.threads.values() {
            if start_time(t.tid) == Some(t.start_time) {
                let _ = sys::set_sched(t.tid, &t.sched, false);
                let _ = sys::set_affinity(t.tid, &t.cpus);
            }
        }
    }
}

fn enforcer_stops(enforcer: &dyn Enforcer) -> bool {
    enforcer.backend() != Backend::Band
}

fn set_rr(tid: i32, priority: u32) -> io::Result<()> {
    sys::set_sched(
        tid,
        &Sched {
            policy: libc::SCHED_RR as u32,
            nice: 0,
            priority,
        },
        true,
    )
}

impl Drop for ExternalDomain {
    fn drop(&mut self) {
        self.release(None);
    }
}
