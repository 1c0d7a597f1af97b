//! The executor: the scheduling core driven by the real clock, its decisions enforced.
//!
//! # Design note
//! One scheduler thread per managed pcpu (one here): `SCHED_FIFO` 99, pinned to the
//! managed cpu, memory locked. Time 0 of the run is an absolute `CLOCK_MONOTONIC` instant
//! (`start`); the core is always told `now = clock − start`, so budgets are charged with
//! measured time, not the nominal quantum. One iteration of the loop, at `now`:
//! 1. **Switch probe**: if the domain switched to last time has answered, the switch
//!    latency is its own timestamp of running − the decision instant.
//! 2. **Guests** (the paravirtual block/wake protocol, [`crate::shm`]): a domain with a
//!    busy or due task is woken (`Machine::wake`), one without is blocked
//!    (`Machine::block`) and its earliest next release becomes a wake-up timer the
//!    executor owns — so a frozen domain is woken at the right time.
//! 3. **Changes**: the scenario's timed events that are due, then live-control requests
//!    ([`control`]), applied through the same code.
//! 4. **Decide**: `handle_timeout(now)` while `poll_timeout() <= now`; the calls that ran
//!    `do_schedule` are timed.
//! 5. **Enforce** `activity(pcpu 0)`: switching means stopping the previous domain and
//!    resuming the next ([`crate::enforce`]); IDLE, and modelled overhead, keep every
//!    domain stopped and run the IDLE spinner ([`crate::idle`]).
//! 6. **Jobs**: every guest's job records are taken into its [`JobBook`].
//! 7. **Wait** on an absolute timer (`timerfd`, `TFD_TIMER_ABSTIME`) for the earliest of
//!    `poll_timeout`, the blocked domains' wake-ups, the next event and the end — or for a
//!    guest's notification (eventfd); a timer wake-up's lateness is measured.
//!
//! No scheduling logic lives here: which VCPU runs, for how long, and when budgets
//! change is the core's; the executor reports, asks and enforces.
//!
//! At the end every domain is stopped at the end instant, the guests report their pending
//! jobs (phase `Finalize`), and the results are built by the same code as the simulator's
//! ([`RunResults::from_domains`]) with the executor's own measurements in `host`.
//!
//! # Safety of the machine
//! Everything the run changes is announced to the [`Watchdog`] before it is changed, and
//! undone by a guard when the run ends (normally, with an error, or by a panic); if the
//! executor dies, the watchdog undoes it (see [`crate::watchdog`]).

pub mod control;

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use rtvmm_core::machine::{Activity, Machine};
use rtvmm_core::model::{DomainId, DomainSpec, PcpuId, VcpuId};
use rtvmm_core::Nanos;
use rtvmm_sim::driver::{GuestEvent, TraceEvent};
use rtvmm_sim::results::{
    Dist, DomainJobs, HostExternal, HostResults, RunResults, TaskJobs, SOURCE_HOST,
};
use rtvmm_sim::trace::{DomainNames, TaskNames, TraceNames};
use rtvmm_sim::{Change, SystemSpec};

use crate::cgroup::RunCgroups;
use crate::domain::{check_runnable, JobBook, ProcessDomain};
use crate::enforce::{enforcer, Backend, Enforcer, Member, IDLE_PRIORITY_BAND, SCHEDULER_PRIORITY};
use crate::external::{AttachContext, ExternalDomain, Hold};
use crate::idle::IdleSpinner;
use crate::shm::Shared;
use crate::sys::{self, MissingPrivilege, RtThrottle};
use crate::watchdog::{start_time, Undo, Watchdog};
use crate::{HelperCommand, HostError};
use rtvmm_scenario::External;
use std::collections::BTreeMap;

use control::{ControlMessage, ControlReply, ControlRequest, DomainView};

/// The longest the loop sleeps while nothing is due (so that a stop or a control request
/// waits at most this long).
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
    /// Set to stop the run early (a signal handler's flag); what was measured is kept.
    pub stop: Arc<AtomicBool>,
    /// Live control requests (see [`control`]).
    pub control: Option<Receiver<ControlMessage>>,
    /// The external domains by name ([`Scenario::external`](rtvmm_scenario::Scenario)):
    /// each is a domain of the system (or one an event adds) attached, not started.
    pub external: BTreeMap<String, External>,
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
            stop: Arc::new(AtomicBool::new(false)),
            control: None,
            external: BTreeMap::new(),
        }
    }
}

/// A finished (or stopped) run.
pub struct HostRun {
    pub results: RunResults,
    /// The recorded events and their names, when asked.
    pub trace: Option<(Vec<(Nanos, TraceEvent)>, TraceNames)>,
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

/// Checks everything that can be refused before the run, in the order a user fixes
/// them: the cpu, the system (policy, guests, tasks), the privileges, the backend.
fn preflight(system: &SystemSpec, options: &HostOptions) -> Result<(usize, Allowed), HostError> {
    let count = sys::cpu_count();
    let cpu = options.cpu.unwrap_or(count - 1);
    if cpu >= count {
        return Err(HostError::NoSuchCpu { cpu, count });
    }
    Machine::new(system.machine, system.policy.clone())
        .map_err(|e| HostError::Machine(e.to_string()))?;
    let added = system.changes.iter().filter_map(|c| match &c.change {
        Change::AddDomain(d) => Some(d),
        _ => None,
    });
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
        crate::external::validate(source, mount.as_deref()).map_err(bad)?;
    }
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
    Ok((cpu, allowed))
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
    /// When its blocked VCPU is due to wake (its earliest next release).
    wake_at: Option<u64>,
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
    fn vcpu(&self) -> VcpuId {
        match self {
            Domain::Process(p) => p.vcpu,
            Domain::External(e) => e.vcpu,
        }
    }
    fn book(&self) -> &JobBook {
        match self {
            Domain::Process(p) => &p.book,
            Domain::External(e) => &e.book,
        }
    }
    /// Its shared page (a guest's; an external domain has none).
    fn shared(&self) -> Option<&Shared> {
        match self {
            Domain::Process(p) => Some(&p.shared),
            Domain::External(_) => None,
        }
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

/// Who the pcpu is enforced to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Target {
    Idle,
    Domain(usize),
}

/// The run's state, owned by the scheduler thread. Fields are dropped in declaration
/// order: the spinner, the guests, the cgroups, the throttle, then the watchdog.
struct Run {
    spinner: Option<IdleSpinner>,
    slots: Vec<Slot>,
    cgroups: Option<RunCgroups>,
    throttle: Option<RtThrottle>,
    watchdog: Watchdog,
    machine: Machine,
    enforcer: Box<dyn Enforcer>,
    notify: EventFd,
    timer: TimerFd,
    domain_of_vcpu: Vec<usize>,
    start: u64,
    cpu: usize,
    seed: u64,
    allowed: Allowed,
    helper: HelperCommand,
    external: BTreeMap<String, External>,
    keep_jobs: bool,
    current: Option<Target>,
    probed: Option<Target>,
    changes: Vec<rtvmm_sim::TimedChange>,
    next_change: usize,
    measures: Measures,
    /// The scheduler thread's CPU time and the cpu's steal time when the loop began.
    cpu_at_start: u64,
    steal_at_start: Option<u64>,
}

#[derive(Default)]
struct Measures {
    do_schedule: Vec<u64>,
    switches: Vec<u64>,
    lateness: Vec<u64>,
}

fn execute(
    system: &SystemSpec,
    scenario: &str,
    seed: u64,
    options: HostOptions,
    cpu: usize,
    allowed: Allowed,
) -> Result<HostRun, HostError> {
    let mut run = Run::set_up(system, seed, &options, cpu, allowed)?;
    let reached = run.run_loop(&options)?;
    run.finish(scenario, seed, &options, reached)
}

impl Run {
    fn set_up(
        system: &SystemSpec,
        seed: u64,
        options: &HostOptions,
        cpu: usize,
        allowed: Allowed,
    ) -> Result<Run, HostError> {
        let mut watchdog =
            Watchdog::spawn(&options.helper, cpu).map_err(HostError::io("the watchdog"))?;
        let throttle = if allowed.throttle {
            let old = RtThrottle::current().map_err(HostError::io(sys::RT_RUNTIME_PATH))?;
            watchdog
                .announce(&Undo::RtRuntime(old.clone()))
                .map_err(HostError::io("the watchdog"))?;
            Some(RtThrottle::lift(old).map_err(HostError::io(sys::RT_RUNTIME_PATH))?)
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
        let mut machine = Machine::new(system.machine, system.policy.clone())
            .map_err(|e| HostError::Machine(e.to_string()))?;
        machine.set_recording(options.record_trace);
        let mut run = Run {
            spinner: None,
            slots: Vec::new(),
            cgroups,
            throttle,
            watchdog,
            machine,
            enforcer: enforcer(options.backend),
            notify,
            timer,
            domain_of_vcpu: Vec::new(),
            start: 0,
            cpu,
            seed,
            allowed,
            helper: options.helper.clone(),
            external: options.external.clone(),
            keep_jobs: options.record_trace,
            current: None,
            probed: None,
            changes: system.changes.clone(),
            next_change: 0,
            measures: Measures::default(),
            cpu_at_start: 0,
            steal_at_start: None,
        };
        for spec in &system.domains {
            let external = run.external.get(&spec.name).cloned();
            run.add_domain(spec.clone(), Nanos::ZERO, external)?;
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
            if let Some(shared) = slot.domain.shared() {
                shared.go(run.start);
            }
        }
        Ok(run)
    }

    /// Starts a process domain joining at `join` (relative), stopped — or attaches an
    /// external one (`external`), parked.
    fn add_domain(
        &mut self,
        spec: DomainSpec,
        join: Nanos,
        external: Option<External>,
    ) -> Result<(), HostError> {
        let index = self.slots.len();
        let name = spec.name.clone();
        let vcpu = self
            .machine
            .add_vcpu(join, DomainId(index as u32), spec.vcpu.clone())
            .map_err(|e| HostError::Domain {
                domain: name.clone(),
                reason: e.to_string(),
            })?;
        if self.domain_of_vcpu.len() <= vcpu.index() {
            self.domain_of_vcpu.resize(vcpu.index() + 1, usize::MAX);
        }
        if let Some(source) = external {
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
            let mut domain =
                ExternalDomain::attach(spec, vcpu, source, &mut context, self.keep_jobs)?;
            let hold = if domain.has_work {
                Hold::Stopped
            } else {
                Hold::Parked
            };
            domain
                .set_hold(hold, self.enforcer.as_mut())
                .map_err(HostError::io(format!("domain '{name}': stopping it")))?;
            self.domain_of_vcpu[vcpu.index()] = index;
            self.slots.push(Slot {
                domain: Domain::External(domain),
                removed_at: None,
                wake_at: None,
            });
            return Ok(());
        }
        let mut domain = ProcessDomain::spawn(
            &self.helper,
            spec,
            vcpu,
            index as u32,
            join,
            self.seed,
            self.cpu,
            self.allowed.fifo,
            &self.notify,
            self.keep_jobs,
        )?;
        let pid = domain.pid();
        if let Some(t) = start_time(pid) {
            self.watchdog
                .announce(&Undo::Guest { pid, start_time: t })
                .map_err(HostError::io("the watchdog"))?;
        }
        if let Some(cgroups) = &self.cgroups {
            let dir = cgroups
                .add(&format!("d{index}"), pid)
                .map_err(HostError::io(format!("domain '{name}': its cgroup")))?;
            domain.member.cgroup =
                Some(Member::open_cgroup(&dir).map_err(HostError::io("cgroup.freeze"))?);
        }
        self.enforcer
            .stop(&domain.member)
            .map_err(HostError::io(format!("domain '{name}': stopping it")))?;
        self.domain_of_vcpu[vcpu.index()] = index;
        if self.start != 0 {
            domain.shared.go(self.start);
        }
        self.slots.push(Slot {
            domain: Domain::Process(domain),
            removed_at: None,
            wake_at: None,
        });
        Ok(())
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
            self.read_probe();
            self.observe_guests(now)?;
            self.apply_due_changes(now)?;
            if let Some(rx) = &options.control {
                while let Ok((request, reply)) = rx.try_recv() {
                    let answer = self.control(now, request);
                    let _ = reply.send(answer);
                }
            }
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
            Target::Domain(d) => self.slots[d].domain.shared(),
        }
    }

    /// 2. Wake and block the domains' VCPUs from their guests' state.
    fn observe_guests(&mut self, now: Nanos) -> Result<(), HostError> {
        for slot in &mut self.slots {
            if slot.removed_at.is_some() {
                continue;
            }
            let vcpu = slot.domain.vcpu();
            let work = match &mut slot.domain {
                Domain::Process(p) => p.shared.work_at(now.as_ns()),
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
                    slot.wake_at = None;
                    if !self.machine.has_work(vcpu) {
                        self.machine.wake(now, vcpu);
                    }
                }
                Err(next) => {
                    slot.wake_at = next;
                    if self.machine.has_work(vcpu) {
                        self.machine.block(now, vcpu);
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
            self.apply(now, change, true)?;
        }
        Ok(())
    }

    fn slot_named(&self, name: &str) -> Option<usize> {
        self.slots
            .iter()
            .position(|s| s.domain.spec().name == name && s.removed_at.is_none())
    }

    /// Applies one change (a scenario event, `from_file`, or a control request).
    fn apply(&mut self, now: Nanos, change: Change, from_file: bool) -> Result<(), HostError> {
        let unknown = |domain: &str| HostError::Domain {
            domain: domain.to_string(),
            reason: "no such domain".into(),
        };
        let machine_error =
            |domain: &str, e: rtvmm_core::machine::MachineError| HostError::Domain {
                domain: domain.to_string(),
                reason: e.to_string(),
            };
        match change {
            Change::SetParams { domain, params } => {
                let d = self.slot_named(&domain).ok_or_else(|| unknown(&domain))?;
                let vcpu = self.slots[d].domain.vcpu();
                self.machine
                    .adjust(now, vcpu, params.clone())
                    .map_err(|e| machine_error(&domain, e))?;
                self.slots[d].domain.spec_mut().vcpu = params;
            }
            Change::SwapPolicy(policy) => self
                .machine
                .swap_policy(now, policy)
                .map_err(|e| HostError::Machine(e.to_string()))?,
            Change::AddDomain(spec) => {
                if self.slot_named(&spec.name).is_some() {
                    return Err(HostError::Domain {
                        domain: spec.name,
                        reason: "a domain of this name runs already".into(),
                    });
                }
                let external = from_file
                    .then(|| self.external.get(&spec.name).cloned())
                    .flatten();
                if external.is_none() {
                    check_runnable(&spec).map_err(|reason| HostError::Domain {
                        domain: spec.name.clone(),
                        reason,
                    })?;
                }
                self.add_domain(spec, now, external)?;
            }
            Change::RemoveDomain { domain } => {
                let d = self.slot_named(&domain).ok_or_else(|| unknown(&domain))?;
                let vcpu = self.slots[d].domain.vcpu();
                self.machine
                    .remove_vcpu(now, vcpu)
                    .map_err(|e| machine_error(&domain, e))?;
                if self.current == Some(Target::Domain(d)) {
                    if let Domain::Process(p) = &self.slots[d].domain {
                        let _ = self.enforcer.stop(&p.member);
                    }
                    self.current = None;
                }
                if let Domain::External(e) = &mut self.slots[d].domain {
                    e.release(Some(self.enforcer.as_mut()));
                }
                if self.probed == Some(Target::Domain(d)) {
                    self.probed = None;
                }
                let slot = &mut self.slots[d];
                slot.domain.drain(Some(now));
                slot.removed_at = Some(now);
                slot.wake_at = None;
            }
        }
        Ok(())
    }

    /// A live-control request: applied like an event, refused (changing nothing) when
    /// the machine refuses it.
    fn control(&mut self, now: Nanos, request: ControlRequest) -> ControlReply {
        match request.change() {
            None => ControlReply::Shown {
                policy: self.machine.policy_kind().name().to_string(),
                now,
                domains: self
                    .slots
                    .iter()
                    .filter(|s| s.removed_at.is_none())
                    .map(|s| DomainView {
                        name: s.domain.spec().name.clone(),
                        params: self.machine.params(s.domain.vcpu()).clone(),
                        has_work: self.machine.has_work(s.domain.vcpu()),
                        running: self.machine.running(PcpuId(0)) == Some(s.domain.vcpu()),
                    })
                    .collect(),
            },
            Some(change) => match self.apply(now, change, false) {
                Ok(()) => ControlReply::Done,
                Err(e) => ControlReply::Refused(e.to_string()),
            },
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
            Activity::Running(v) => Target::Domain(self.domain_of(v)),
            Activity::Idle | Activity::Overhead { .. } => Target::Idle,
        };
        if self.current != Some(target) {
            match self.current {
                Some(Target::Domain(d)) => self.hold_domain(d)?,
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
                Target::Domain(d) => {
                    let enforcer = self.enforcer.as_mut();
                    let slot = &mut self.slots[d];
                    let name = slot.domain.spec().name.clone();
                    match &mut slot.domain {
                        Domain::Process(p) => enforcer.resume(&p.member),
                        Domain::External(e) => e.set_hold(Hold::Running, enforcer),
                    }
                    .map_err(HostError::io(format!("domain '{name}': resuming it")))?
                }
                Target::Idle => self.spinner.as_ref().expect("started").spin(),
            }
            self.current = Some(target);
            self.probed = probed;
        }
        for d in 0..self.slots.len() {
            let external = matches!(self.slots[d].domain, Domain::External(_));
            if external
                && self.current != Some(Target::Domain(d))
                && self.slots[d].removed_at.is_none()
            {
                self.hold_domain(d)?;
            }
        }
        Ok(())
    }

    /// Stops domain `d` (not running): a process domain by the backend; an external one
    /// stopped while it has work, parked while it has none.
    fn hold_domain(&mut self, d: usize) -> Result<(), HostError> {
        let has_work = self.machine.has_work(self.slots[d].domain.vcpu());
        let enforcer = self.enforcer.as_mut();
        let slot = &mut self.slots[d];
        let name = slot.domain.spec().name.clone();
        match &mut slot.domain {
            Domain::Process(p) => enforcer.stop(&p.member),
            Domain::External(e) => {
                let hold = if has_work {
                    Hold::Stopped
                } else {
                    Hold::Parked
                };
                e.set_hold(hold, enforcer)
            }
        }
        .map_err(HostError::io(format!("domain '{name}': stopping it")))
    }

    fn domain_of(&self, vcpu: VcpuId) -> usize {
        self.domain_of_vcpu[vcpu.index()]
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
        for slot in &self.slots {
            if let Some(at) = slot.wake_at {
                next = next.min(Nanos(at));
            }
        }
        if let Some(c) = self.changes.get(self.next_change) {
            next = next.min(c.at);
        }
        if next <= now {
            return;
        }
        let at = self.start + next.as_ns();
        let spec = TimeSpec::new(
            (at / 1_000_000_000) as libc::time_t,
            (at % 1_000_000_000) as libc::c_long,
        );
        if self
            .timer
            .set(
                Expiration::OneShot(spec),
                TimerSetTimeFlags::TFD_TIMER_ABSTIME,
            )
            .is_err()
        {
            sys::sleep_until(at);
            return;
        }
        let mut fds = [
            PollFd::new(self.timer.as_fd(), PollFlags::POLLIN),
            PollFd::new(self.notify.as_fd(), PollFlags::POLLIN),
        ];
        let _ = poll(&mut fds, PollTimeout::NONE);
        let woke = sys::mono_ns();
        let timer_fired = fds[0]
            .revents()
            .is_some_and(|r| r.contains(PollFlags::POLLIN));
        if timer_fired {
            self.measures.lateness.push(woke.saturating_sub(at));
            let _ = self.timer.wait();
        }
        let _ = self.notify.read();
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
        self.machine.advance(reached.max(self.machine.now()));
        if let Some(Target::Domain(d)) = self.current {
            if let Domain::Process(p) = &self.slots[d].domain {
                let _ = self.enforcer.stop(&p.member);
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
                p.shared.finalize(reached.as_ns());
                let _ = self.enforcer.resume(&p.member);
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
                    vcpu: s.domain.vcpu(),
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
        // Undo everything (in the fields' order), then let the watchdog check and go.
        let Run {
            spinner,
            slots,
            cgroups,
            throttle,
            watchdog,
            ..
        } = self;
        drop(spinner);
        drop(slots);
        drop(cgroups);
        drop(throttle);
        watchdog.finish();
        Ok(HostRun {
            results,
            trace,
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
                .map(|s| DomainNames {
                    name: s.domain.spec().name.clone(),
                    tasks: s
                        .domain
                        .spec()
                        .tasks
                        .iter()
                        .map(|t| TaskNames {
                            name: t.name.clone(),
                            deadline: Some(t.deadline),
                        })
                        .collect(),
                    removed_at: s.removed_at,
                })
                .collect(),
            vcpu_domain: self
                .domain_of_vcpu
                .iter()
                .map(|&d| (d != usize::MAX).then_some(d))
                .collect(),
            pcpus: 1,
            end: Some(reached),
        };
        (events, names)
    }
}
