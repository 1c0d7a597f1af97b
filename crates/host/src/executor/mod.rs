//! The executor: the scheduling core driven by the real clock, its decisions enforced.
//!
//! # Design note
//! One scheduler thread per managed pcpu (one here): `SCHED_FIFO` 99, pinned to the
//! managed cpu, memory locked. Time 0 of the run is an absolute `CLOCK_MONOTONIC` instant
//! (`start`); the core is always told `now = clock − start`, so budgets are charged with
//! measured time, not the nominal quantum. One iteration of the loop, at `now`:
//! 1. **Switch probe**: if the domain switched to last time has answered, the switch
//!    latency is its own timestamp of running − the decision instant.
//! 2. **Guests** (the paravirtual block/wake protocol, [`crate::shm`]): per VCPU, one with
//!    a busy or due task is woken (`Machine::wake`), one without is blocked
//!    (`Machine::block`) and its tasks' earliest next release becomes a wake-up timer the
//!    executor owns — so a frozen VCPU is woken at the right time. A domain has one guest
//!    process per VCPU ([`crate::domain`]: a partitioned guest's VCPU runs its own tasks),
//!    so this is the core's rule for a partitioned guest: VCPU j has work while one of its
//!    tasks has a pending job.
//! 3. **Changes**: the scenario's timed events that are due, then the live-control
//!    requests queued ([`control`]: `ctl::apply`), all through the one change path both
//!    drivers use (`rtvmm_system::change::apply_change`, over `ctl::Domains`, whose
//!    domain `i` is the executor's); the executor acts only on the outcome (a domain that
//!    joined is started or attached, one that left is ended; removed domains' guests are
//!    reaped).
//! 4. **Decide**: `handle_timeout(now)` while `poll_timeout() <= now`; the calls that ran
//!    `do_schedule` are timed.
//! 5. **Enforce** the pcpu's `activity`: switching means stopping the previous VCPU's
//!    guest process and resuming the next's ([`crate::enforce`]); IDLE, and modelled
//!    overhead, keep every domain stopped and run the IDLE spinner ([`crate::idle`]).
//! 6. **Jobs**: every guest's job records are taken into its [`JobBook`].
//! 7. **Wait** on an absolute timer (`timerfd`, `TFD_TIMER_ABSTIME`) for the earliest of
//!    `poll_timeout`, the blocked domains' wake-ups, the next event and the end — or for a
//!    guest's notification or a control command (eventfds); a timer wake-up's lateness is
//!    measured.
//!
//! No scheduling logic lives here: which VCPU runs, for how long, and when budgets
//! change is the core's; the executor reports, asks and enforces.
//!
//! At the end every domain is stopped at the end instant, the guests report their pending
//! jobs (phase `Finalize`), and the results are built by the same code as the simulator's
//! ([`RunResults::from_domains`]) with the executor's own measurements in `host`.
//!
//! # Safety of the machine
//! Before anything changes, the run takes its cpu (one run per cpu), undoes what abandoned
//! runs left ([`crate::runs`]) and starts its [`Watchdog`]. Everything the run changes is
//! announced to the watchdog and written to the run's record before it is changed, and
//! undone by a guard when the run ends (normally, with an error, or by a panic); if the
//! executor dies, the watchdog undoes it (see [`crate::watchdog`]); if both die, the next
//! run or `rtvmm host cleanup` does.
//!
//! # Cost per wake-up
//! The loop's own work is kept off the syscall path where nothing changes: the timer is
//! not re-armed for the instant it is armed for, the guests' eventfd is read only when it
//! rang, nothing is allocated in the loop (the samples' room is reserved before the run;
//! error messages are built only on error). A switch costs what its enforcement costs
//! (two `cgroup.freeze` writes, or the band's `sched_setattr` calls, or two signals).
//! `do_schedule` is timed between two clock reads; the cost of one read, measured before
//! the run, is reported beside it.

pub mod control;

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use rtvmm_core::machine::{Activity, Machine};
use rtvmm_core::model::{DomainSpec, PcpuId, VcpuId};
use rtvmm_core::Nanos;
use rtvmm_system::records::{GuestEvent, TraceEvent};
use rtvmm_system::results::{
    domain_job_rows, Dist, DomainJobs, HostExternal, HostResults, JobRow, RunResults, TaskJobs,
    SOURCE_HOST,
};
use rtvmm_system::trace::{DomainNames, TraceNames};
use rtvmm_system::{Change, SystemSpec};

use crate::cgroup::RunCgroups;
use crate::ctl::{self, Applied, Command, Domains, Effect, ErrorCode, Reply, SchedShow};
use crate::domain::{check_runnable, JobBook, ProcessDomain};
use crate::enforce::{enforcer, Backend, Enforcer, Member, IDLE_PRIORITY_BAND, SCHEDULER_PRIORITY};
use crate::external::{AttachContext, ExternalDomain, Hold};
use crate::idle::IdleSpinner;
use crate::runs::{self, CpuLock, CpuLockError, LiftedThrottle, StateDir};
use crate::shm::{Shared, TaskState};
use crate::sys::{self, MissingPrivilege};
use crate::undo::{start_time, Undo};
use crate::watchdog::Watchdog;
use crate::{HelperCommand, HostError};
use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::policy::PolicySettings;
use rtvmm_scenario::External;
use rtvmm_system::change::{self, ChangeError};
use std::collections::BTreeMap;

pub use control::LiveControl;

/// The longest the loop sleeps while nothing is due (so that a stop waits at most this
/// long; a control command wakes the loop at once).
pub const MAX_SLEEP: Nanos = Nanos(20_000_000);
/// Time between set-up and the run's time 0, for every guest thread to be waiting.
const LEAD: u64 = 20_000_000;

/// How to run (the binary fills it from its flags).
pub struct HostOptions {
    /// The program that runs the helpers (guests, watchdog).
    pub helper: HelperCommand,
    /// How long to run.
    pub duration: Nanos,
    /// The managed cpu (default: the last one).
    pub cpu: Option<usize>,
    pub backend: Backend,
    /// Run without the privileges a real-time run needs, labelling the results.
    pub best_effort: bool,
    /// Record the scheduling events and job releases and finishes for a trace.
    pub record_trace: bool,
    /// Keep every job for per-job rows ([`HostRun::jobs`], `rtvmm host run --jobs`).
    pub record_jobs: bool,
    /// Set to stop the run early (a signal handler's flag); what was measured is kept.
    pub stop: Arc<AtomicBool>,
    /// The live-control socket, served while the run lasts and removed at its end (see
    /// [`control`]).
    pub control: Option<LiveControl>,
    /// The external domains by name ([`Scenario::external`](rtvmm_scenario::Scenario)):
    /// each is a domain of the system (or one an event adds) attached, not started.
    pub external: BTreeMap<String, External>,
    /// Fault injection for the safety tests: the scheduler thread panics once the run
    /// reaches this instant. Not a user setting (no flag sets it).
    #[doc(hidden)]
    pub test_panic_at: Option<Nanos>,
}

impl HostOptions {
    /// The defaults: the last cpu, `freeze`, real-time required, no trace, no control.
    pub fn new(helper: HelperCommand, duration: Nanos) -> HostOptions {
        HostOptions {
            helper,
            duration,
            cpu: None,
            backend: Backend::Freeze,
            best_effort: false,
            record_trace: false,
            record_jobs: false,
            stop: Arc::new(AtomicBool::new(false)),
            control: None,
            external: BTreeMap::new(),
            test_panic_at: None,
        }
    }
}

/// A finished (or stopped) run.
pub struct HostRun {
    pub results: RunResults,
    /// The recorded events and their names, when asked.
    pub trace: Option<(Vec<(Nanos, TraceEvent)>, TraceNames)>,
    /// Every job, by domain, task and job number, when asked (`record_jobs`): the rows of
    /// `rtvmm sim --jobs`, by the same rule.
    pub jobs: Option<Vec<JobRow>>,
    /// `Some(t)`: stopped at `t` before the end; the results cover `[0, t]`.
    pub stopped_at: Option<Nanos>,
}

/// What this machine allows a run, after the privilege check.
#[derive(Clone, Debug)]
struct Allowed {
    fifo: bool,
    throttle: bool,
    mlock: bool,
    cgroup: Option<std::path::PathBuf>,
    missing: Vec<MissingPrivilege>,
}

/// Checks what would refuse any run with `options` before it starts: the cpu, the
/// privileges (unless `best_effort`), the enforcement backend — for a caller that runs
/// many systems (an experiment) and wants to refuse before the first. [`run`] checks the
/// same again, with the system.
pub fn check(options: &HostOptions) -> Result<(), HostError> {
    managed_cpu(options)?;
    allowed(options).map(|_| ())
}

/// The managed cpu: `options.cpu`, or the last one.
fn managed_cpu(options: &HostOptions) -> Result<usize, HostError> {
    let count = sys::cpu_count();
    let cpu = options.cpu.unwrap_or(count - 1);
    if cpu >= count {
        return Err(HostError::NoSuchCpu { cpu, count });
    }
    Ok(cpu)
}

/// Checks everything that can be refused before the run, in the order a user fixes
/// them: the cpu, the system (policy, guests, tasks), the privileges, the backend.
fn preflight(system: &SystemSpec, options: &HostOptions) -> Result<(usize, Allowed), HostError> {
    one_pcpu(system)?;
    let cpu = managed_cpu(options)?;
    let added = system.changes.iter().filter_map(|c| match &c.change {
        Change::AddDomain(d) => Some(d),
        _ => None,
    });
    // An `xl` event that names a pcpu this executor does not drive is refused before the
    // run (what the machine refuses was refused when the scenario was read).
    let probe = system
        .machine()
        .map_err(|e| HostError::Machine(e.to_string()))?;
    for c in &system.changes {
        if let Change::Xl(command) = &c.change {
            if let Some(why) = ctl::xl_refusal(&probe, driven(system), command) {
                return Err(HostError::Unsupported(format!(
                    "event at {}: xl `{command}`: {why}",
                    c.at
                )));
            }
        }
    }
    let mut declared = Vec::new();
    for d in system.domains.iter().chain(added) {
        declared.push(d.name.as_str());
        if options.external.contains_key(&d.name) {
            continue;
        }
        check_runnable(d).map_err(|reason| HostError::Domain {
            domain: d.name.clone(),
            reason,
        })?;
    }
    let mount = sys::cgroup2_mount();
    for (name, source) in &options.external {
        let bad = |reason: String| HostError::Domain {
            domain: name.clone(),
            reason,
        };
        if !declared.contains(&name.as_str()) {
            return Err(bad("external, but not a domain of the system".into()));
        }
        let vcpus = system
            .domains
            .iter()
            .chain(system.changes.iter().filter_map(|c| match &c.change {
                Change::AddDomain(d) => Some(d),
                _ => None,
            }))
            .find(|d| &d.name == name)
            .map_or(1, |d| d.placement.vcpu_count());
        if vcpus > 1 {
            return Err(bad(format!(
                "external with vcpus = {vcpus}: an external domain is scheduled as one VCPU"
            )));
        }
        crate::external::validate(source, mount.as_deref()).map_err(bad)?;
    }
    if let Some(control) = &options.control {
        if control
            .path()
            .as_os_str()
            .as_encoded_bytes()
            .contains(&b'\n')
        {
            return Err(HostError::Unsupported(format!(
                "--ctl {:?}: a newline in the socket's path (the watchdog, which removes it if \
                 the executor dies, reads paths one a line)",
                control.path()
            )));
        }
    }
    Ok((cpu, allowed(options)?))
}

/// The machine's pcpus, all driven by the executor.
fn driven(system: &SystemSpec) -> CpuSet {
    CpuSet::first(system.machine.pcpus.min(CpuSet::MAX))
}

/// The executor drives one pcpu: a system of several pcpus, cpupools, domains in a pool
/// of their own, or chains is refused by name (the simulator runs them). Domains of
/// several VCPUs run on it (a partitioned guest: [`crate::domain::tasks_by_vcpu`]).
fn one_pcpu(system: &SystemSpec) -> Result<(), HostError> {
    let refuse = |what: String| {
        Err(HostError::Unsupported(format!(
            "{what}: the host executor drives one pcpu; simulate this system with `rtvmm sim`"
        )))
    };
    if system.machine.pcpus > 1 {
        return refuse(format!("[machine] pcpus = {}", system.machine.pcpus));
    }
    if !system.has_only_default_pool() {
        return refuse(format!("[[pool]] '{}'", system.pools[0].name));
    }
    if let Some(chain) = system.chains.first() {
        return refuse(format!(
            "[[chain]] '{}' (chains are measured in simulation)",
            chain.name
        ));
    }
    let added = system.changes.iter().filter_map(|c| match &c.change {
        Change::AddDomain(d) => Some(d),
        _ => None,
    });
    for d in system.domains.iter().chain(added) {
        let p = &d.placement;
        if let Some(pool) = &p.pool {
            return refuse(format!("domain '{}': pool = '{pool}'", d.name));
        }
    }
    Ok(())
}

/// The privileges: refused when one is missing (unless `best_effort`), then what the
/// backend needs (and external domains: `SCHED_RR`).
fn allowed(options: &HostOptions) -> Result<Allowed, HostError> {
    let needs_cgroup = options.backend == Backend::Freeze;
    let missing = sys::missing_privileges(&sys::Host, needs_cgroup);
    if !missing.is_empty() && !options.best_effort {
        return Err(HostError::Privileges(missing));
    }
    // With --best-effort: what can be had.
    let all = sys::missing_privileges(&sys::Host, true);
    let cgroup = sys::cgroup2_mount().filter(|m| {
        !all.iter().any(|p| {
            matches!(
                p,
                MissingPrivilege::Cgroup2NotFound | MissingPrivilege::Cgroup2NotWritable { .. }
            )
        }) && m.exists()
    });
    let allowed = Allowed {
        fifo: !missing.contains(&MissingPrivilege::RealTimeScheduling),
        throttle: !missing
            .iter()
            .any(|p| matches!(p, MissingPrivilege::RtThrottling { .. })),
        mlock: !missing.contains(&MissingPrivilege::MemoryLock),
        cgroup,
        missing,
    };
    if !allowed.fifo {
        if let Some(name) = options.external.keys().next() {
            return Err(HostError::Domain {
                domain: name.clone(),
                reason: "an external domain's threads are held by SCHED_RR priorities, \
                         which needs root or CAP_SYS_NICE (even with --best-effort)"
                    .into(),
            });
        }
    }
    match options.backend {
        Backend::Freeze if allowed.cgroup.is_none() => {
            return Err(HostError::BackendUnavailable {
                backend: "freeze",
                reason: "it needs a writable cgroup v2 file system (none found, or not \
                         writable); use --enforce band or signal"
                    .into(),
            })
        }
        Backend::Band if !allowed.fifo => {
            return Err(HostError::BackendUnavailable {
                backend: "band",
                reason: "it moves threads between SCHED_FIFO priorities, which needs root \
                         or CAP_SYS_NICE; use --enforce signal"
                    .into(),
            })
        }
        _ => {}
    }
    Ok(allowed)
}

/// Runs `system` in real time for `options.duration` and returns what it measured, in
/// the simulator's format (`source = "host"`).
pub fn run(
    system: &SystemSpec,
    scenario: &str,
    seed: u64,
    options: HostOptions,
) -> Result<HostRun, HostError> {
    let (cpu, allowed) = preflight(system, &options)?;
    // Everything but the scheduler thread (and the guests and the spinner) stays off the
    // managed cpu; the caller's affinity comes back at the end.
    let before = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok();
    let _ = sys::set_affinity(0, &sys::cpus_except(cpu));
    if let Some(control) = &options.control {
        control.keep_off(cpu);
    }
    let system = system.clone();
    let scenario = scenario.to_string();
    let outcome = std::thread::Builder::new()
        .name("rtvmm-sched".into())
        .spawn(move || execute(&system, &scenario, seed, options, cpu, allowed))
        .map_err(HostError::io("starting the scheduler thread"))?
        .join();
    if let Some(set) = before {
        let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
    }
    outcome.unwrap_or(Err(HostError::Panicked))
}

/// One domain of the run.
struct Slot {
    domain: Domain,
    removed_at: Option<Nanos>,
    /// Removed and killed, not yet reaped.
    dying: bool,
    /// When each of its blocked VCPUs is due to wake (the earliest next release of the
    /// VCPU's tasks), in VCPU order.
    wake_at: Vec<Option<u64>>,
}

/// A domain of the run: a guest process rtvmm started, or an external one it attached.
enum Domain {
    Process(ProcessDomain),
    External(ExternalDomain),
}

impl Domain {
    fn spec(&self) -> &DomainSpec {
        match self {
            Domain::Process(p) => &p.spec,
            Domain::External(e) => &e.spec,
        }
    }
    fn spec_mut(&mut self) -> &mut DomainSpec {
        match self {
            Domain::Process(p) => &mut p.spec,
            Domain::External(e) => &mut e.spec,
        }
    }
    /// Its VCPUs, in VCPU order (an external domain has one).
    fn vcpus(&self) -> &[VcpuId] {
        match self {
            Domain::Process(p) => &p.vcpus,
            Domain::External(e) => std::slice::from_ref(&e.vcpu),
        }
    }
    fn book(&self) -> &JobBook {
        match self {
            Domain::Process(p) => &p.book,
            Domain::External(e) => &e.book,
        }
    }
    /// The shared page of VCPU `j`'s guest (an external domain has none).
    fn shared(&self, j: usize) -> Option<&Shared> {
        match self {
            Domain::Process(p) => Some(&p.guest(j).shared),
            Domain::External(_) => None,
        }
    }
    /// Every shared page of its guests.
    fn pages(&self) -> impl Iterator<Item = &Shared> {
        let guests = match self {
            Domain::Process(p) => p.guests.as_slice(),
            Domain::External(_) => &[],
        };
        guests.iter().map(|g| &g.shared)
    }
    fn drain(&mut self, end: Option<Nanos>) {
        if let Domain::Process(p) = self {
            p.drain(end);
        }
    }
    fn cpu_ns(&self) -> u64 {
        match self {
            Domain::Process(p) => p.cpu_ns(),
            Domain::External(e) => e.cpu_ns(),
        }
    }
    fn lost(&self) -> u64 {
        match self {
            Domain::Process(p) => p.lost(),
            Domain::External(_) => 0,
        }
    }
}

/// The run's domains; dropped, every external domain is given back (its threads off
/// their real-time priorities, thawed, continued), then every guest is killed before any
/// is waited for.
#[derive(Default)]
struct Slots(Vec<Slot>);

impl std::ops::Deref for Slots {
    type Target = Vec<Slot>;
    fn deref(&self) -> &Vec<Slot> {
        &self.0
    }
}

impl std::ops::DerefMut for Slots {
    fn deref_mut(&mut self) -> &mut Vec<Slot> {
        &mut self.0
    }
}

impl<'a> IntoIterator for &'a Slots {
    type Item = &'a Slot;
    type IntoIter = std::slice::Iter<'a, Slot>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a mut Slots {
    type Item = &'a mut Slot;
    type IntoIter = std::slice::IterMut<'a, Slot>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter_mut()
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        // Idempotent: after a normal end they were given back already.
        for slot in &mut self.0 {
            if let Domain::External(e) = &mut slot.domain {
                e.release(None);
            }
        }
        crate::domain::kill_all(self.0.iter_mut().filter_map(|s| match &mut s.domain {
            Domain::Process(p) => Some(p),
            Domain::External(_) => None,
        }));
    }
}

/// Who the pcpu is enforced to run: IDLE, or VCPU `vcpu` (its number in the domain) of
/// domain `domain` — for a process domain, that VCPU's guest process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Idle,
    Vcpu { domain: usize, vcpu: usize },
}

/// The run's state, owned by the scheduler thread. Fields are dropped in declaration
/// order: the guests, the control socket, the spinner, the cgroups, the throttle, the
/// watchdog, then the cpu's lock (which the watchdog holds too, until it is done). The
/// guests go first, all killed before any is waited for ([`Slots`]): when a panic unwinds
/// mid-run, a domain may still be running at its `SCHED_FIFO` priority, above the spinner
/// and the other guests, which could never run to exit while it spins.
struct Run {
    slots: Slots,
    control: Option<LiveControl>,
    spinner: Option<IdleSpinner>,
    cgroups: Option<RunCgroups>,
    throttle: Option<LiftedThrottle>,
    watchdog: Watchdog,
    _cpu_lock: Option<CpuLock>,
    machine: Machine,
    /// The present domains by name (and the names used), as live control sees them.
    names: Domains,
    enforcer: Box<dyn Enforcer>,
    notify: EventFd,
    timer: TimerFd,
    /// Each VCPU's domain and its number there (`None`: not a VCPU of this run's).
    domain_of_vcpu: Vec<Option<(usize, usize)>>,
    /// Configure a pool a timed `xl cpupool-create` makes (the simulator's).
    policy_settings: PolicySettings,
    start: u64,
    cpu: usize,
    seed: u64,
    allowed: Allowed,
    helper: HelperCommand,
    external: BTreeMap<String, External>,
    keep_jobs: bool,
    current: Option<Target>,
    probed: Option<Target>,
    changes: Vec<rtvmm_system::TimedChange>,
    next_change: usize,
    measures: Measures,
    /// The instant the timer is armed for, until it fires (not re-armed for the same one).
    armed: Option<u64>,
    /// The scheduler thread's CPU time and the cpu's steal time when the loop began.
    cpu_at_start: u64,
    steal_at_start: Option<u64>,
}

#[derive(Default)]
struct Measures {
    do_schedule: Vec<u64>,
    switches: Vec<u64>,
    lateness: Vec<u64>,
    clock_read: u64,
    wakeups: u64,
}

/// The most samples of each kind reserved before the run (8 MiB each).
const RESERVED_SAMPLES: u64 = 1 << 20;

impl Measures {
    /// Room for a run of `duration` at `quantum` (about one sample of each kind per
    /// quantum), reserved before the run: memory is locked, so a vector growing in the
    /// loop would fault its new pages in there.
    fn for_run(duration: Nanos, quantum: Nanos) -> Measures {
        let samples = (duration.as_ns() / quantum.as_ns().max(1) + 64).min(RESERVED_SAMPLES);
        let room = || Vec::with_capacity(samples as usize);
        Measures {
            do_schedule: room(),
            switches: room(),
            lateness: room(),
            ..Measures::default()
        }
    }
}

fn execute(
    system: &SystemSpec,
    scenario: &str,
    seed: u64,
    mut options: HostOptions,
    cpu: usize,
    allowed: Allowed,
) -> Result<HostRun, HostError> {
    let control = options.control.take();
    let mut run = Run::set_up(system, seed, &options, control, cpu, allowed)?;
    let reached = run.run_loop(&options)?;
    run.finish(scenario, seed, &options, reached)
}

impl Run {
    fn set_up(
        system: &SystemSpec,
        seed: u64,
        options: &HostOptions,
        control: Option<LiveControl>,
        cpu: usize,
        allowed: Allowed,
    ) -> Result<Run, HostError> {
        // One run per cpu; then what abandoned runs left is undone; then this run is
        // recorded (see `crate::runs`). Without a usable state directory (best effort, not
        // root) there is neither lock nor record.
        let state = StateDir::system();
        let patience = std::time::Duration::from_secs(5);
        let (cpu_lock, state) = match runs::lock_cpu_after_the_dead(&state, cpu, patience) {
            Ok(lock) => (Some(lock), Some(state)),
            Err(CpuLockError::Busy { holder }) => return Err(HostError::CpuBusy { cpu, holder }),
            Err(CpuLockError::Io(_)) if !allowed.missing.is_empty() => (None, None),
            Err(CpuLockError::Io(e)) => return Err(HostError::io("the cpu's lock")(e)),
        };
        if let Some(state) = &state {
            let mount = sys::cgroup2_mount();
            let recovered = runs::recover(state, mount.as_deref())
                .map_err(HostError::io("recovering abandoned runs"))?;
            for line in recovered {
                eprintln!("rtvmm: {line}");
            }
        }
        let mut watchdog = Watchdog::spawn(
            &options.helper,
            cpu,
            state.as_ref(),
            cpu_lock.as_ref().map(CpuLock::raw_fd),
        )
        .map_err(HostError::io("the watchdog"))?;
        if let Some(control) = &control {
            let (dev, ino) = control.file_id();
            watchdog
                .announce(&Undo::Socket {
                    path: control.path().to_path_buf(),
                    dev,
                    ino,
                })
                .map_err(HostError::io("the watchdog"))?;
        }
        let throttle = if allowed.throttle {
            let record = state
                .as_ref()
                .map(|s| s.record_path(std::process::id() as i32));
            let lifted = LiftedThrottle::lift(state.as_ref(), record.as_deref(), |old| {
                watchdog.announce(&Undo::RtRuntime(old.to_string()))
            });
            Some(lifted.map_err(HostError::io(sys::RT_RUNTIME_PATH))?)
        } else {
            None
        };
        let cgroups = match &allowed.cgroup {
            Some(mount) => {
                let path = RunCgroups::path_for(mount, std::process::id());
                watchdog
                    .announce(&Undo::RunCgroup(path.clone()))
                    .map_err(HostError::io("the watchdog"))?;
                Some(RunCgroups::create(path).map_err(HostError::io("the run's cgroup"))?)
            }
            None => None,
        };
        let notify =
            EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)
                .map_err(|e| HostError::io("eventfd")(e.into()))?;
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_CLOEXEC | TimerFlags::TFD_NONBLOCK,
        )
        .map_err(|e| HostError::io("timerfd")(e.into()))?;
        let mut machine = system
            .machine()
            .map_err(|e| HostError::Machine(e.to_string()))?;
        machine.set_recording(options.record_trace);
        let settings = control
            .as_ref()
            .map(|c| c.settings.clone())
            .unwrap_or_default();
        let mut run = Run {
            slots: Slots::default(),
            control,
            spinner: None,
            cgroups,
            throttle,
            watchdog,
            _cpu_lock: cpu_lock,
            machine,
            names: Domains::new(settings).driving(driven(system)),
            enforcer: enforcer(options.backend),
            notify,
            timer,
            domain_of_vcpu: Vec::new(),
            policy_settings: system.policy_settings.clone(),
            start: 0,
            cpu,
            seed,
            allowed,
            helper: options.helper.clone(),
            external: options.external.clone(),
            keep_jobs: options.record_trace || options.record_jobs,
            current: None,
            probed: None,
            changes: system.changes.clone(),
            next_change: 0,
            measures: Measures::for_run(options.duration, system.machine.quantum),
            armed: None,
            cpu_at_start: 0,
            steal_at_start: None,
        };
        for spec in &system.domains {
            run.change(Nanos::ZERO, &Change::AddDomain(spec.clone()))?;
        }
        // The scheduler thread becomes real-time, then time 0 is set and everyone starts.
        sys::pin_to(0, cpu).map_err(HostError::io(format!("pinning to cpu {cpu}")))?;
        if run.allowed.fifo {
            sys::set_fifo(0, SCHEDULER_PRIORITY)
                .map_err(HostError::io("SCHED_FIFO 99 for the scheduler thread"))?;
        }
        if run.allowed.mlock {
            sys::lock_memory().map_err(HostError::io("mlockall"))?;
        }
        run.measures.clock_read = sys::clock_read_cost(10_000);
        run.start = sys::mono_ns() + LEAD;
        // Above every parked external thread, too (see `crate::external`).
        let idle_priority = run.allowed.fifo.then(|| match run.external.is_empty() {
            true => options.backend.idle_priority(),
            false => IDLE_PRIORITY_BAND,
        });
        run.spinner = Some(
            IdleSpinner::start(cpu, idle_priority, run.start)
                .map_err(|e| HostError::io("the IDLE spinner")(std::io::Error::other(e)))?,
        );
        for slot in &run.slots {
            for shared in slot.domain.pages() {
                shared.go(run.start);
            }
        }
        Ok(run)
    }

    /// Starts a domain that joined at `join` (relative) with these VCPUs: its guest,
    /// stopped — or, `external`, the external domain attached (stopped or parked). On an
    /// error the domain is taken back from the machine and the table.
    fn start_domain(
        &mut self,
        spec: DomainSpec,
        vcpus: Vec<VcpuId>,
        join: Nanos,
    ) -> Result<(), HostError> {
        debug_assert_eq!(self.slots.len(), self.names.joined() - 1);
        let started = match self.external.get(&spec.name).cloned() {
            // One VCPU: `check_external` refused more before the run.
            Some(source) => self.attach_external(spec, vcpus[0], source),
            None => self.start_guest(spec, vcpus, join),
        };
        if started.is_err() {
            self.names.unjoin(&mut self.machine, join);
        }
        started
    }

    /// Attaches an external domain whose VCPU the machine has: stopped while it has
    /// work, parked while it has none (see [`crate::external`]).
    fn attach_external(
        &mut self,
        spec: DomainSpec,
        vcpu: VcpuId,
        source: External,
    ) -> Result<(), HostError> {
        let index = self.slots.len();
        let name = spec.name.clone();
        let cgroups = self.cgroups.as_ref();
        let mut domain_cgroup = || match cgroups {
            Some(c) => c.add_empty(&format!("d{index}")),
            None => Err(std::io::Error::other("no cgroup v2 for the run")),
        };
        let watchdog = &mut self.watchdog;
        let mut announce = |u: &Undo| watchdog.announce(u);
        let mut context = AttachContext {
            cpu: self.cpu,
            backend: self.enforcer.backend(),
            mount: self.allowed.cgroup.as_deref(),
            run_cgroup: cgroups.map(RunCgroups::path),
            domain_cgroup: &mut domain_cgroup,
            announce: &mut announce,
        };
        let mut domain = ExternalDomain::attach(spec, vcpu, source, &mut context, self.keep_jobs)?;
        let hold = if domain.has_work {
            Hold::Stopped
        } else {
            Hold::Parked
        };
        domain
            .set_hold(hold, self.enforcer.as_mut())
            .map_err(HostError::io(format!("domain '{name}': stopping it")))?;
        self.map_vcpus(index, &[vcpu]);
        self.slots.push(Slot {
            domain: Domain::External(domain),
            removed_at: None,
            dying: false,
            wake_at: vec![None],
        });
        Ok(())
    }

    /// Records that `vcpus` (in VCPU order) are domain `index`'s.
    fn map_vcpus(&mut self, index: usize, vcpus: &[VcpuId]) {
        for (j, v) in vcpus.iter().enumerate() {
            if self.domain_of_vcpu.len() <= v.index() {
                self.domain_of_vcpu.resize(v.index() + 1, None);
            }
            self.domain_of_vcpu[v.index()] = Some((index, j));
        }
    }

    /// Starts the guests of a domain whose VCPUs the machine has (one guest process per
    /// VCPU, each its own cgroup under `freeze`), joining at `join` (relative), stopped.
    fn start_guest(
        &mut self,
        spec: DomainSpec,
        vcpus: Vec<VcpuId>,
        join: Nanos,
    ) -> Result<(), HostError> {
        let index = self.slots.len();
        let name = spec.name.clone();
        let count = vcpus.len();
        let mut domain = ProcessDomain::spawn(
            &self.helper,
            spec,
            vcpus,
            index as u32,
            join,
            self.seed,
            self.cpu,
            self.allowed.fifo,
            &self.notify,
            self.keep_jobs,
        )?;
        for (j, guest) in domain.guests.iter_mut().enumerate() {
            let pid = guest.pid();
            if let Some(t) = start_time(pid) {
                self.watchdog
                    .announce(&Undo::Guest { pid, start_time: t })
                    .map_err(HostError::io("the watchdog"))?;
            }
            if let Some(cgroups) = &self.cgroups {
                // A domain of one VCPU keeps the name it always had.
                let unit = match count {
                    1 => format!("d{index}"),
                    _ => format!("d{index}v{j}"),
                };
                let dir = cgroups
                    .add(&unit, pid)
                    .map_err(HostError::io(format!("domain '{name}': its cgroup")))?;
                guest.member.cgroup =
                    Some(Member::open_cgroup(&dir).map_err(HostError::io("cgroup.freeze"))?);
            }
            self.enforcer
                .stop(&guest.member)
                .map_err(HostError::io(format!("domain '{name}': stopping it")))?;
        }
        let vcpus = domain.vcpus.clone();
        self.map_vcpus(index, &vcpus);
        if self.start != 0 {
            // Added while running: its releases begin now that its guests are ready (the
            // start-up, a few milliseconds, would otherwise come due at once as a burst
            // of late jobs).
            let ready = Nanos(self.rel()).max(join);
            for guest in &domain.guests {
                guest.shared.set_join(ready.as_ns());
                for (local, &t) in guest.tasks.iter().enumerate() {
                    let first = ready + domain.spec.tasks[t].offset;
                    guest
                        .shared
                        .set_state(local, TaskState::NextRelease(first.as_ns()));
                }
                guest.shared.go(self.start);
            }
        }
        self.slots.push(Slot {
            domain: Domain::Process(domain),
            removed_at: None,
            dying: false,
            wake_at: vec![None; count],
        });
        Ok(())
    }

    /// Ends a domain the machine no longer has. A guest: its jobs so far taken, its
    /// threads moved off the managed cpu (so that they die at once whatever their
    /// priority), killed; reaped later by [`Run::reap`]. An external domain: given back
    /// (thawed and continued, its threads' policies and cpus restored), never killed.
    fn end_domain(&mut self, d: usize, now: Nanos) {
        let of_d =
            |t: Option<Target>| matches!(t, Some(Target::Vcpu { domain, .. }) if domain == d);
        if let Some(Target::Vcpu { vcpu, .. }) = self.current.filter(|_| of_d(self.current)) {
            if let Domain::Process(p) = &self.slots[d].domain {
                let _ = self.enforcer.stop(&p.guest(vcpu).member);
            }
            self.current = None;
        }
        if of_d(self.probed) {
            self.probed = None;
        }
        let slot = &mut self.slots[d];
        slot.domain.drain(Some(now));
        slot.removed_at = Some(now);
        slot.wake_at.iter_mut().for_each(|w| *w = None);
        match &mut slot.domain {
            Domain::Process(p) => {
                p.kill(&sys::cpus_except(self.cpu));
                slot.dying = true;
            }
            Domain::External(e) => e.release(Some(self.enforcer.as_mut())),
        }
    }

    /// Reaps the removed domains' guests that have died, and removes their cgroups.
    fn reap(&mut self) {
        for slot in &mut self.slots {
            let Domain::Process(p) = &mut slot.domain else {
                continue;
            };
            if slot.dying && p.exited().is_some() {
                slot.dying = false;
                for guest in &mut p.guests {
                    if let Some((dir, _)) = guest.member.cgroup.take() {
                        let _ = std::fs::remove_dir(dir);
                    }
                }
            }
        }
    }

    fn rel(&self) -> u64 {
        sys::mono_ns().saturating_sub(self.start)
    }

    /// The scheduling loop; returns the instant the run ended (its duration, or where it
    /// was stopped).
    fn run_loop(&mut self, options: &HostOptions) -> Result<Nanos, HostError> {
        let end = options.duration;
        sys::sleep_until(self.start);
        self.cpu_at_start = sys::thread_cpu_ns();
        self.steal_at_start = sys::steal_ns(self.cpu);
        for slot in &mut self.slots {
            if let Domain::External(e) = &mut slot.domain {
                e.start_counting();
            }
        }
        loop {
            let now = Nanos(self.rel());
            if now >= end {
                return Ok(end);
            }
            if options.stop.load(Ordering::Relaxed) {
                return Ok(now);
            }
            if options.test_panic_at.is_some_and(|at| now >= at) {
                panic!("test_panic_at: a fault injected by a test");
            }
            self.read_probe();
            self.observe_guests(now)?;
            self.apply_due_changes(now)?;
            self.serve_control(now);
            self.reap();
            self.decide(now);
            self.enforce(now)?;
            for slot in &mut self.slots {
                slot.domain.drain(None);
            }
            self.wait(now, end);
        }
    }

    /// 1. The answer to the last switch probe, if any.
    fn read_probe(&mut self) {
        let Some(target) = self.probed else { return };
        let Some(page) = self.page(target) else {
            self.probed = None;
            return;
        };
        if let Some((at, ran)) = page.probe_answer() {
            page.clear_answer();
            if ran >= at {
                self.measures.switches.push(ran - at);
            }
            self.probed = None;
        }
    }

    /// The page that answers switch probes (an external domain has none).
    fn page(&self, target: Target) -> Option<&Shared> {
        match target {
            Target::Idle => Some(self.spinner.as_ref().expect("started").page()),
            Target::Vcpu { domain, vcpu } => self.slots[domain].domain.shared(vcpu),
        }
    }

    /// 2. Wake and block the domains' VCPUs from their guests' state: a VCPU has work
    /// while one of its tasks has a pending job (the core's rule for a partitioned guest,
    /// and for a guest of one VCPU); an external domain while its threads are not all
    /// sleeping.
    fn observe_guests(&mut self, now: Nanos) -> Result<(), HostError> {
        for slot in &mut self.slots {
            if slot.removed_at.is_some() {
                continue;
            }
            let vcpus = slot.domain.vcpus().len();
            for j in 0..vcpus {
                let vcpu = slot.domain.vcpus()[j];
                let work = match &mut slot.domain {
                    Domain::Process(p) => p.guest(j).shared.work_at(now.as_ns()),
                    Domain::External(e) => {
                        let watchdog = &mut self.watchdog;
                        let has_work =
                            e.observe(now, &mut |u| watchdog.announce(u))
                                .map_err(|reason| HostError::Domain {
                                    domain: e.spec.name.clone(),
                                    reason,
                                })?;
                        if has_work {
                            Ok(())
                        } else {
                            Err(None)
                        }
                    }
                };
                match work {
                    Ok(()) => {
                        slot.wake_at[j] = None;
                        if !self.machine.has_work(vcpu) {
                            self.machine.wake(now, vcpu);
                        }
                    }
                    Err(next) => {
                        slot.wake_at[j] = next;
                        if self.machine.has_work(vcpu) {
                            self.machine.block(now, vcpu);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// 3. The scenario's events due at `now`.
    fn apply_due_changes(&mut self, now: Nanos) -> Result<(), HostError> {
        while let Some(c) = self.changes.get(self.next_change) {
            if c.at > now {
                break;
            }
            let change = c.change.clone();
            self.next_change += 1;
            self.change(now, &change)?;
        }
        Ok(())
    }

    /// Applies a change of the scenario (its first domains, its timed events) through the
    /// one change path, as the simulator does, after the checks that are about what this
    /// host can enforce (a guest it can run; an `xl` command naming only pcpus it drives);
    /// then acts on the outcome (a domain the file declares external is attached, not
    /// started).
    fn change(&mut self, now: Nanos, change: &Change) -> Result<(), HostError> {
        match change {
            Change::AddDomain(spec) if !self.external.contains_key(&spec.name) => {
                check_runnable(spec).map_err(|reason| HostError::Domain {
                    domain: spec.name.clone(),
                    reason,
                })?
            }
            Change::Xl(command) => {
                if let Some(why) = ctl::xl_refusal(&self.machine, self.names.driven(), command) {
                    return Err(HostError::Unsupported(format!(
                        "an xl event at {now}: `{command}`: {why}"
                    )));
                }
            }
            _ => {}
        }
        let applied = self
            .names
            .apply_change(&mut self.machine, now, change, &self.policy_settings)
            .map_err(|error| match error {
                ChangeError::Machine { domain, error } => HostError::Domain {
                    domain,
                    reason: error.to_string(),
                },
                ChangeError::Guest { domain, error } => HostError::Domain {
                    domain,
                    reason: error.to_string(),
                },
                other => HostError::Unsupported(format!("an event at {now}: {other}")),
            })?;
        match applied {
            change::Applied::Added { spec, vcpus } => self.start_domain(spec, vcpus, now)?,
            change::Applied::Removed { index, .. } => self.end_domain(index, now),
            change::Applied::Reconfigured { index } => self.books_follow(index),
        }
        Ok(())
    }

    /// After a change: domain `index`'s spec in the executor's books follows the
    /// table's (its first VCPU's parameters, what results report).
    fn books_follow(&mut self, index: Option<usize>) {
        if let Some(d) = index {
            self.slots[d].domain.spec_mut().vcpu = self.names.spec(d).vcpu.clone();
        }
    }

    /// 3. The live-control commands queued, each applied and answered in turn.
    fn serve_control(&mut self, now: Nanos) {
        loop {
            let Some(request) = self
                .control
                .as_ref()
                .and_then(|c| c.requests.try_recv().ok())
            else {
                return;
            };
            // Given up by the server (the client was told nothing changed): skipped.
            let Some((command, reply)) = request.take() else {
                continue;
            };
            let answer = self.command(now, command);
            let _ = reply.try_send(answer);
        }
    }

    /// One live-control command: the machine change ([`ctl::apply`]), then what it asks of
    /// the executor (see [`control`]); the reply. A domain added live is always a process
    /// domain: an external one is refused when the request is read
    /// ([`rtvmm_scenario::live`]).
    fn command(&mut self, now: Nanos, command: Command) -> Reply {
        if let Command::AddDomain(spec) = &command {
            if let Err(reason) = check_runnable(spec) {
                return Reply::error(
                    ErrorCode::Refused,
                    format!("{}: domain '{}': {reason}", control::ORIGIN, spec.name),
                );
            }
        }
        let Applied { mut reply, effect } =
            ctl::apply(&mut self.machine, &mut self.names, now, command);
        match effect {
            Effect::Added { vcpus, domain, .. } => {
                let name = domain.name.clone();
                let join = self.machine.now();
                if let Err(e) = self.start_domain(domain, vcpus, join) {
                    reply = Reply::error(
                        ErrorCode::Refused,
                        format!(
                            "{}: domain '{name}': {e}; nothing was added",
                            control::ORIGIN
                        ),
                    );
                }
            }
            Effect::Removed { index, .. } => {
                let now = self.machine.now();
                self.end_domain(index, now);
            }
            Effect::Adjusted { index } => self.books_follow(Some(index)),
            Effect::Swapped { .. } | Effect::None => {}
        }
        if let Reply::Show(show) = &mut reply {
            self.fill(show);
        }
        reply
    }

    /// `sched-show`'s figures only the executor knows: each guest's finished jobs and
    /// how many missed their deadline (none for an external domain: it has no tasks
    /// rtvmm knows of).
    fn fill(&self, show: &mut SchedShow) {
        for status in &mut show.domains {
            let Some(&Some((d, _))) = self.domain_of_vcpu.get(status.vcpu as usize) else {
                continue;
            };
            let Some(Slot {
                domain: Domain::Process(p),
                ..
            }) = self.slots.get(d)
            else {
                continue;
            };
            let stats = &p.book.stats;
            status.jobs = Some(stats.iter().map(|s| s.finished).sum());
            status.misses = Some(stats.iter().map(|s| s.finished_late).sum());
        }
    }

    /// 4. The core's decisions due at `now`; `do_schedule` timed.
    fn decide(&mut self, now: Nanos) {
        while self.machine.poll_timeout() <= now {
            let calls = self.machine.pcpu_stats(PcpuId(0)).do_schedule_calls;
            let before = sys::mono_ns();
            self.machine.handle_timeout(now);
            let after = sys::mono_ns();
            if self.machine.pcpu_stats(PcpuId(0)).do_schedule_calls != calls {
                self.measures.do_schedule.push(after - before);
            }
        }
    }

    /// Step 5: makes the pcpu run what the core decided; holds every external domain that
    /// does not run as its work says (stopped with work, parked without).
    fn enforce(&mut self, now: Nanos) -> Result<(), HostError> {
        let target = match self.machine.activity(PcpuId(0)) {
            Activity::Running(v) => {
                let (domain, vcpu) = self.domain_of(v);
                Target::Vcpu { domain, vcpu }
            }
            Activity::Idle | Activity::Overhead { .. } => Target::Idle,
        };
        if self.current != Some(target) {
            match self.current {
                Some(Target::Vcpu { domain, vcpu }) => self.hold(domain, vcpu)?,
                Some(Target::Idle) => self.spinner.as_ref().expect("started").park(),
                None => {}
            }
            if let Some(old) = self.probed.take() {
                if let Some(page) = self.page(old) {
                    page.clear_answer();
                }
            }
            let probed = match self.page(target) {
                Some(page) => {
                    page.probe(now.as_ns());
                    Some(target)
                }
                None => None,
            };
            match target {
                Target::Vcpu { domain, vcpu } => {
                    let enforcer = self.enforcer.as_mut();
                    let slot = &mut self.slots[domain];
                    let resumed = match &mut slot.domain {
                        Domain::Process(p) => enforcer.resume(&p.guest(vcpu).member),
                        Domain::External(e) => e.set_hold(Hold::Running, enforcer),
                    };
                    resumed.map_err(|e| {
                        HostError::io(format!("domain '{}': resuming it", slot.domain.spec().name))(
                            e,
                        )
                    })?
                }
                Target::Idle => self.spinner.as_ref().expect("started").spin(),
            }
            self.current = Some(target);
            self.probed = probed;
        }
        for d in 0..self.slots.len() {
            let external = matches!(self.slots[d].domain, Domain::External(_));
            if external
                && self.current != Some(Target::Vcpu { domain: d, vcpu: 0 })
                && self.slots[d].removed_at.is_none()
            {
                self.hold(d, 0)?;
            }
        }
        Ok(())
    }

    /// Stops VCPU `j` of domain `d` (not running): a process domain's guest of that VCPU
    /// by the backend; an external domain (one VCPU) stopped while it has work, parked
    /// while it has none.
    fn hold(&mut self, d: usize, j: usize) -> Result<(), HostError> {
        let has_work = self.machine.has_work(self.slots[d].domain.vcpus()[j]);
        let enforcer = self.enforcer.as_mut();
        let slot = &mut self.slots[d];
        let stopped = match &mut slot.domain {
            Domain::Process(p) => enforcer.stop(&p.guest(j).member),
            Domain::External(e) => {
                let hold = if has_work {
                    Hold::Stopped
                } else {
                    Hold::Parked
                };
                e.set_hold(hold, enforcer)
            }
        };
        stopped.map_err(|e| {
            HostError::io(format!("domain '{}': stopping it", slot.domain.spec().name))(e)
        })
    }

    /// The domain of a VCPU of the run, and the VCPU's number there.
    fn domain_of(&self, vcpu: VcpuId) -> (usize, usize) {
        self.domain_of_vcpu[vcpu.index()].expect("a VCPU of the run")
    }

    /// 7. Sleeps until the next instant something is due, or a guest rings.
    fn wait(&mut self, now: Nanos, end: Nanos) {
        let mut next = self.machine.poll_timeout().min(end).min(now + MAX_SLEEP);
        // External domains are sampled at least once a quantum.
        if self
            .slots
            .iter()
            .any(|s| s.removed_at.is_none() && matches!(s.domain, Domain::External(_)))
        {
            next = next.min(now + self.machine.config().quantum);
        }
        for at in self.slots.iter().flat_map(|s| s.wake_at.iter().flatten()) {
            next = next.min(Nanos(*at));
        }
        if let Some(c) = self.changes.get(self.next_change) {
            next = next.min(c.at);
        }
        if next <= now {
            return;
        }
        let at = self.start + next.as_ns();
        // Armed already for this instant (woken by a guest before it): no syscall.
        if self.armed != Some(at) {
            let spec = TimeSpec::new(
                (at / 1_000_000_000) as libc::time_t,
                (at % 1_000_000_000) as libc::c_long,
            );
            let set = self.timer.set(
                Expiration::OneShot(spec),
                TimerSetTimeFlags::TFD_TIMER_ABSTIME,
            );
            if set.is_err() {
                self.armed = None;
                sys::sleep_until(at);
                return;
            }
            self.armed = Some(at);
        }
        // Without live control the guests' eventfd stands in the third place (polled
        // twice: harmless), so that the array needs no allocation.
        let command = self
            .control
            .as_ref()
            .map_or(self.notify.as_fd(), LiveControl::wake_fd);
        let mut fds = [
            PollFd::new(self.timer.as_fd(), PollFlags::POLLIN),
            PollFd::new(self.notify.as_fd(), PollFlags::POLLIN),
            PollFd::new(command, PollFlags::POLLIN),
        ];
        let _ = poll(&mut fds, PollTimeout::NONE);
        let woke = sys::mono_ns();
        self.measures.wakeups += 1;
        let ready = |fd: &PollFd| fd.revents().is_some_and(|r| r.contains(PollFlags::POLLIN));
        let (timer_fired, rung) = (ready(&fds[0]), ready(&fds[1]));
        if timer_fired {
            self.measures.lateness.push(woke.saturating_sub(at));
            let _ = self.timer.wait();
            self.armed = None;
        }
        // Only read what is there: a read that would block costs a syscall for nothing.
        if rung {
            let _ = self.notify.read();
        }
        if let Some(control) = &self.control {
            control.clear_wake();
        }
    }

    /// Ends the run at `reached`: everyone stopped, pending jobs reported, results built,
    /// everything undone.
    fn finish(
        mut self,
        scenario: &str,
        seed: u64,
        options: &HostOptions,
        reached: Nanos,
    ) -> Result<HostRun, HostError> {
        let cpu_used = sys::thread_cpu_ns() - self.cpu_at_start;
        // No command after the end: the socket goes now (a client is told the executor
        // has stopped).
        self.control = None;
        self.machine.advance(reached.max(self.machine.now()));
        if let Some(Target::Vcpu { domain, vcpu }) = self.current {
            if let Domain::Process(p) = &self.slots[domain].domain {
                let _ = self.enforcer.stop(&p.guest(vcpu).member);
            }
        }
        // External domains are given back at the end instant (their CPU time counted
        // then).
        for slot in &mut self.slots {
            if let Domain::External(e) = &mut slot.domain {
                e.release(Some(self.enforcer.as_mut()));
            }
        }
        self.spinner.as_ref().expect("started").park();
        self.current = None;
        // The scheduler thread steps down: the guests need the cpu to report.
        if self.allowed.fifo {
            let _ = sys::set_other(0);
        }
        let live = |s: &&mut Slot| s.removed_at.is_none();
        for slot in self.slots.iter_mut().filter(live) {
            if let Domain::Process(p) = &slot.domain {
                for guest in &p.guests {
                    guest.shared.finalize(reached.as_ns());
                    let _ = self.enforcer.resume(&guest.member);
                }
            }
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let mut all = true;
            for slot in self.slots.iter_mut().filter(live) {
                if let Domain::Process(p) = &mut slot.domain {
                    p.drain(Some(reached));
                    if !p.finalized() && p.exited().is_none() {
                        all = false;
                    }
                }
            }
            if all || std::time::Instant::now() > deadline {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        for slot in self.slots.iter_mut().filter(live) {
            let Domain::Process(p) = &mut slot.domain else {
                continue;
            };
            p.drain(Some(reached));
            if !p.finalized() {
                return Err(HostError::Domain {
                    domain: p.spec.name.clone(),
                    reason: "its guest did not report its pending jobs at the end (it \
                             died or hung)"
                        .into(),
                });
            }
        }
        let host = self.host_results(options, reached, cpu_used);
        let mut results = {
            let domains: Vec<DomainJobs> = self
                .slots
                .iter()
                .map(|s| DomainJobs {
                    name: &s.domain.spec().name,
                    vcpus: s.domain.vcpus(),
                    tasks: s
                        .domain
                        .spec()
                        .tasks
                        .iter()
                        .zip(&s.domain.book().stats)
                        .zip(&s.domain.book().pending)
                        .map(|((spec, stats), pending)| TaskJobs {
                            name: &spec.name,
                            relative_deadline: spec.deadline,
                            stats,
                            pending: if s.removed_at.is_some() {
                                Vec::new()
                            } else {
                                pending.clone()
                            },
                        })
                        .collect(),
                })
                .collect();
            RunResults::from_domains(
                &self.machine,
                &domains,
                scenario,
                seed,
                reached,
                SOURCE_HOST,
            )
        };
        results.host = Some(host);
        let trace = options.record_trace.then(|| self.trace(reached));
        let jobs = options.record_jobs.then(|| {
            self.slots
                .iter()
                .flat_map(|s| {
                    let spec = s.domain.spec();
                    let records = s.domain.book().records(spec, s.removed_at.is_none());
                    domain_job_rows(spec, records, reached)
                })
                .collect()
        });
        // Undo everything (in the fields' order), then let the watchdog check and go.
        let Run {
            spinner,
            slots,
            cgroups,
            throttle,
            watchdog,
            ..
        } = self;
        drop(slots);
        drop(spinner);
        drop(cgroups);
        drop(throttle);
        watchdog.finish();
        Ok(HostRun {
            results,
            trace,
            jobs,
            stopped_at: (reached < options.duration).then_some(reached),
        })
    }
}

impl Run {
    /// The executor's own measurements.
    fn host_results(
        &mut self,
        options: &HostOptions,
        reached: Nanos,
        cpu_used: u64,
    ) -> HostResults {
        let total = |v: &[u64]| v.iter().sum::<u64>();
        let m = &mut self.measures;
        let duration = reached.as_ns().max(1);
        let steal = match (self.steal_at_start, sys::steal_ns(self.cpu)) {
            (Some(a), Some(b)) => b.saturating_sub(a),
            _ => 0,
        };
        HostResults {
            real_time: self.allowed.missing.is_empty(),
            not_real_time_because: self
                .allowed
                .missing
                .iter()
                .map(ToString::to_string)
                .collect(),
            cpu: self.cpu as u32,
            enforce: options.backend.name().to_string(),
            do_schedule_total_ns: total(&m.do_schedule),
            do_schedule_ns: Dist::of(&mut m.do_schedule),
            switch_total_ns: total(&m.switches),
            switch_ns: Dist::of(&mut m.switches),
            tick_lateness_ns: Dist::of(&mut m.lateness),
            clock_read_ns: m.clock_read,
            wakeups: m.wakeups,
            scheduler_cpu_ns: cpu_used,
            cpu_lost_share: cpu_used as f64 / duration as f64,
            steal_ns: steal,
            jobs_lost: self.slots.iter().map(|s| s.domain.lost()).sum(),
            domain_cpu_ns: self.slots.iter().map(|s| s.domain.cpu_ns()).collect(),
            external: self
                .slots
                .iter()
                .filter_map(|s| match &s.domain {
                    Domain::External(e) => Some(HostExternal {
                        domain: e.spec.name.clone(),
                        source: e.source.to_string(),
                        cpu_ns: e.cpu_ns(),
                        gone_at_ns: e.gone_at.map(Nanos::as_ns),
                    }),
                    Domain::Process(_) => None,
                })
                .collect(),
        }
    }

    /// The recorded trace: the core's events and the guests' releases and finishes.
    fn trace(&mut self, reached: Nanos) -> (Vec<(Nanos, TraceEvent)>, TraceNames) {
        let mut events: Vec<(Nanos, TraceEvent)> = self
            .machine
            .drain_events()
            .into_iter()
            .map(|(t, e)| (t, TraceEvent::Core(e)))
            .collect();
        for (d, slot) in self.slots.iter().enumerate() {
            let book: &JobBook = slot.domain.book();
            for (task, times) in &book.finished {
                let release = GuestEvent::Release {
                    domain: d as u32,
                    task: *task as u32,
                    seq: times.seq,
                };
                events.push((Nanos(times.release), TraceEvent::Guest(release)));
                if let Some(finish) = times.finish {
                    let deadline = times.release + slot.domain.spec().tasks[*task].deadline.as_ns();
                    let done = GuestEvent::Finish {
                        domain: d as u32,
                        task: *task as u32,
                        seq: times.seq,
                        missed: finish > deadline,
                    };
                    events.push((Nanos(finish), TraceEvent::Guest(done)));
                }
            }
            for (task, pending) in book.pending.iter().enumerate() {
                for job in pending {
                    let release = GuestEvent::Release {
                        domain: d as u32,
                        task: task as u32,
                        seq: job.seq,
                    };
                    events.push((job.release, TraceEvent::Guest(release)));
                }
            }
        }
        events.sort_by_key(|e| e.0);
        let names = TraceNames {
            domains: self
                .slots
                .iter()
                .map(|s| DomainNames::of(s.domain.spec(), s.removed_at))
                .collect(),
            vcpu_domain: self
                .domain_of_vcpu
                .iter()
                .map(|d| d.map(|(domain, _)| domain))
                .collect(),
            pcpus: 1,
            end: Some(reached),
        };
        (events, names)
    }
}

#[cfg(test)]
mod tests {
    use rtvmm_core::guest::{GuestScheduler, TaskSpec};
    use rtvmm_core::machine::{MachineConfig, PoolSpec};
    use rtvmm_core::model::{DomainSpec, VcpuParams};
    use rtvmm_core::policy::PolicyConfig;
    use rtvmm_core::Nanos;

    use super::*;

    fn system() -> SystemSpec {
        let ms = Nanos::from_ms;
        SystemSpec {
            domains: vec![DomainSpec {
                name: "d".into(),
                vcpu: VcpuParams::server(ms(2), ms(10), 1),
                guest: GuestScheduler::Rm,
                tasks: vec![TaskSpec::periodic("t", ms(10), ms(1))],
                placement: Default::default(),
            }],
            ..SystemSpec::one_pool(MachineConfig::default(), PolicyConfig::Deferrable)
        }
    }

    /// What the one-pcpu executor cannot run is refused by name, before anything starts;
    /// a partitioned guest of several VCPUs runs, a global one is refused by name.
    #[test]
    fn several_pcpus_pools_and_global_multi_vcpu_guests_are_refused_by_name() {
        assert!(one_pcpu(&system()).is_ok());
        let refused = |s: &SystemSpec| match one_pcpu(s) {
            Err(HostError::Unsupported(why)) => why,
            other => panic!("not refused: {other:?}"),
        };
        let mut two = system();
        two.machine.pcpus = 2;
        assert!(refused(&two).starts_with("[machine] pcpus = 2: the host executor drives one pcpu"));
        let mut pooled = system();
        pooled.pools = vec![PoolSpec::new(
            "rt",
            rtvmm_core::cpuset::CpuSet::one(0),
            PolicyConfig::Deferrable,
        )];
        assert!(refused(&pooled).starts_with("[[pool]] 'rt'"));
        let mut multi = system();
        multi.domains[0].placement.vcpus = 2;
        assert!(one_pcpu(&multi).is_ok());
        let why = check_runnable(&multi.domains[0]).unwrap_err();
        assert!(why.starts_with("vcpus = 2 with smp = \"global\""), "{why}");
        multi.domains[0].placement.smp = rtvmm_core::model::GuestSmp::Partitioned;
        assert_eq!(check_runnable(&multi.domains[0]), Ok(()));
    }
}
