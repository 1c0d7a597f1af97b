//! The executor: the scheduling core driven by the real clock, its decisions enforced.
//!
//! # Design note
//! One scheduler thread drives every seat: `SCHED_FIFO` 99, memory locked; with one
//! pcpu it is pinned to that pcpu's cpu (beside its guests: the cheapest switches
//! measured), with several to the cores to spare beyond them (see "Several pcpus"
//! below). Time 0 of the run is an absolute `CLOCK_MONOTONIC` instant
//! (`start`); the core is always told `now = clock − start`, so budgets are charged with
//! measured time, not the nominal quantum. One iteration of the loop, at `now`:
//! 0. **Watchdog**: if the watchdog's pidfd rang (it exited), the run stops with
//!    [`HostError::WatchdogDied`] and everything is undone by the executor itself (the
//!    drop of `Run`; the record removed last, the watchdog being gone) — or, with
//!    `carry_on_without_watchdog`, a warning and the run goes on.
//! 1. **Switch probe**: if the domain switched to last time has answered, the switch
//!    latency is its own timestamp of running − the decision instant.
//! 2. **Guests** (the paravirtual block/wake protocol, [`crate::shm`]): per VCPU, one with
//!    a busy or due task is woken (`Machine::wake`), one without is blocked
//!    (`Machine::block`) and its tasks' earliest next release becomes a wake-up timer the
//!    executor owns — so a frozen VCPU is woken at the right time. A domain has one guest
//!    process per VCPU ([`crate::domain`]: a partitioned guest's VCPU runs its own tasks),
//!    so this is the core's rule for a partitioned guest: VCPU j has work while one of its
//!    tasks has a pending job. A global guest of several VCPUs is the core's guest itself
//!    ([`crate::global`]): its finished jobs and due releases are taken in, and its
//!    `vcpu_has_work` says which VCPUs wake and block.
//! 3. **Changes**: the scenario's timed events that are due, then the live-control
//!    requests queued ([`control`]: `ctl::apply`), all through the one change path both
//!    drivers use (`rtvmm_system::change::apply_change`, over `ctl::Domains`, whose
//!    domain `i` is the executor's); the executor acts only on the outcome (a domain that
//!    joined is started or attached, one that left is ended; removed domains' guests are
//!    reaped).
//! 4. **Decide**: `handle_timeout(now)` while `poll_timeout() <= now`; the calls that ran
//!    `do_schedule` are timed.
//! 5. **Enforce** each pcpu's `activity`, by the [`plan`]: every seat that switches
//!    first leaves what it ran (stops the VCPU's guest process, [`crate::enforce`], or
//!    parks its IDLE spinner, [`crate::idle`]), then the guests of VCPUs that run on a
//!    seat other than the one whose cpu they are pinned to are moved there (an affinity
//!    change of every thread), then every such seat enters its new VCPU (resumes its
//!    guest) or spins; IDLE, and modelled overhead, run the spinner. Then each global
//!    guest of several VCPUs grants its jobs to the VCPUs the seats now run (another
//!    iteration at once if that changed which of its VCPUs have work).
//! 6. **Jobs**: every guest's job records are taken into its [`JobBook`].
//! 7. **Wait** on an absolute timer (`timerfd`, `TFD_TIMER_ABSTIME`) for the earliest of
//!    `poll_timeout`, the blocked domains' wake-ups, the global guests' releases, the next
//!    event and the end — or for a guest's notification or a control command (eventfds);
//!    a timer wake-up's lateness is measured.
//!
//! No scheduling logic lives here: which VCPU runs, for how long, and when budgets
//! change is the core's, as is which job a global guest runs on which VCPU; the executor
//! reports, asks and enforces.
//!
//! At the end every domain is stopped at the end instant, the guests report their pending
//! jobs (phase `Finalize`), and the results are built by the same code as the simulator's
//! ([`RunResults::from_domains`]) with the executor's own measurements in `host`.
//!
//! # The pieces
//! - The **resource guard** (`guard.rs`): before anything changes, the run takes its cpu
//!   (one run per cpu), undoes what abandoned runs left ([`crate::runs`]) and starts its
//!   watchdog ([`crate::watchdog::Watchdog`]). Everything the run changes is announced to
//!   the watchdog and written to the run's record before it is changed, and undone by the
//!   guard when the run ends (normally, with an error, or by a panic); if the executor
//!   dies, the watchdog undoes it; if both die, the next run or `rtvmm host cleanup` does.
//! - A **seat** per managed pcpu (`seat.rs`): it knows its `PcpuId` and its host cpu,
//!   runs its IDLE spinner, enforces what the core's `activity(pcpu)` says (the VCPU's
//!   guest process resumed, the previous one stopped), probes each switch and keeps its
//!   timing samples. The loop names no pcpu: it asks each seat.
//! - The run's **domains** (`domains.rs`): a slot per domain that joined (its index is
//!   the change path's), a guest process per VCPU or an external domain.
//! - **Preflight** (`preflight.rs`): everything refused before anything changes, by name.
//! - The **plan** (`plan.rs`): what the seats do after a decision, in which order —
//!   pure, tested against the simulator without real time.
//! - The **loop** (this file): the steps above, and the results.
//!
//! # Several pcpus
//! A system of N pcpus runs on N managed cpus (`--cpus`, one per pcpu in pcpu order),
//! only where the machine has at least one core to spare beyond them; else it is refused
//! before anything changes, naming the cores (`preflight`). One seat per pcpu, each with
//! its spinner on its cpu; **one scheduler thread, on the spare cores**, drives them all:
//! it sleeps until the earliest next event of any pcpu (the core's one `poll_timeout`),
//! calls `handle_timeout`, and enforces every seat's `activity` from there (cgroup
//! freezes, priority changes and signals all act on another core's threads).
//!
//! Why one thread and not one per seat: the core is one `Machine` that decides for all
//! its pcpus at once — a global policy's decision (a tickle, a replenishment) changes
//! several pcpus in one call, and its run queue is shared. Threads per seat would each
//! need the machine, under a lock that every decision of every pcpu takes (Xen's global
//! run-queue lock, which RTDS pays for) and that a seat's thread would hold while another
//! seat's switch waits; the plan's order (no guest resumed on two seats) would then span
//! threads. One thread keeps the core sans-I/O and every decision enforced whole, at the
//! price measured on one pcpu: a scheduler on another core than the guests it switches
//! had millisecond tails where it had microseconds beside them (`docs/host.md`). Its own
//! core is also what keeps the seats' cores for the guests and the spinners only.
//!
//! Global policies (RTDS, the global fixed-priority servers, Credit) move a VCPU between
//! pcpus; its guest process follows (re-pinned while stopped, before it resumes), and
//! each such move is one the core counts as a migration. Partitioned ones (SEDF,
//! ARINC 653) never move a guest once it ran. An external domain runs on one pcpu only
//! (its threads are not moved; refused by name on several).
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
mod domains;
mod guard;
pub mod plan;
mod preflight;
mod seat;

use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::eventfd::{EfdFlags, EventFd};
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use rtvmm_core::machine::Machine;
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
use crate::domain::{JobBook, ProcessDomain};
use crate::enforce::{enforcer, Backend, Enforcer, Member, IDLE_PRIORITY_BAND, SCHEDULER_PRIORITY};
use crate::external::{AttachContext, ExternalDomain, Hold};
use crate::global::GlobalGuest;
use crate::idle::IdleSpinner;
use crate::shm::TaskState;
use crate::sys;
use crate::undo::{start_time, Undo};
use crate::{HelperCommand, HostError};
use rtvmm_core::policy::PolicySettings;
use rtvmm_scenario::External;
use rtvmm_system::change::{self, ChangeError};
use std::collections::BTreeMap;

pub use control::LiveControl;
pub use preflight::check;

use domains::{Domain, Slot, Slots, Target};
use guard::Guard;
use plan::{Runs, SeatView, Step};
use preflight::{driven, preflight, Allowed};
use seat::{hold, Measures, Seat};

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
    /// The managed cpus, one per pcpu (`--cpus`; empty: `cpu`). Several only where the
    /// machine has a core to spare beyond them.
    pub cpus: Vec<usize>,
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
    /// Run on, with a warning, if the watchdog dies (`--carry-on-without-watchdog`);
    /// by default the run stops and undoes everything ([`HostError::WatchdogDied`]).
    pub carry_on_without_watchdog: bool,
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
            cpus: Vec::new(),
            backend: Backend::Freeze,
            best_effort: false,
            record_trace: false,
            record_jobs: false,
            stop: Arc::new(AtomicBool::new(false)),
            control: None,
            external: BTreeMap::new(),
            carry_on_without_watchdog: false,
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

/// Runs `system` in real time for `options.duration` and returns what it measured, in
/// the simulator's format (`source = "host"`).
pub fn run(
    system: &SystemSpec,
    scenario: &str,
    seed: u64,
    options: HostOptions,
) -> Result<HostRun, HostError> {
    let (cpus, allowed) = preflight(system, &options)?;
    // Everything but the scheduler thread (and the guests and the spinners) stays off the
    // managed cpus; the caller's affinity comes back at the end.
    let before = nix::sched::sched_getaffinity(nix::unistd::Pid::from_raw(0)).ok();
    let _ = sys::set_affinity(0, &sys::cpus_except_all(&cpus));
    if let Some(control) = &options.control {
        control.keep_off(&cpus);
    }
    let system = system.clone();
    let scenario = scenario.to_string();
    let outcome = std::thread::Builder::new()
        .name("rtvmm-sched".into())
        .spawn(move || execute(&system, &scenario, seed, options, &cpus, allowed))
        .map_err(HostError::io("starting the scheduler thread"))?
        .join();
    if let Some(set) = before {
        let _ = nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set);
    }
    outcome.unwrap_or(Err(HostError::Panicked))
}

/// The run's state, owned by the scheduler thread: the domains, the seats (one per
/// managed pcpu), the resource guard, and what the loop needs. Fields are dropped in
/// declaration order: the guests, the control socket, the seats' spinners, then the guard
/// (cgroups, throttle, watchdog, the cpu's lock). The guests go first, all killed before
/// any is waited for ([`Slots`]): when a panic unwinds mid-run, a domain may still be
/// running at its `SCHED_FIFO` priority, above the spinner and the other guests, which
/// could never run to exit while it spins.
struct Run {
    slots: Slots,
    control: Option<LiveControl>,
    seats: Vec<Seat>,
    guard: Guard,
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
    seed: u64,
    allowed: Allowed,
    helper: HelperCommand,
    external: BTreeMap<String, External>,
    keep_jobs: bool,
    changes: Vec<rtvmm_system::TimedChange>,
    next_change: usize,
    /// The instant the timer is armed for, until it fires (not re-armed for the same one).
    armed: Option<u64>,
    /// The scheduler thread's CPU time when the loop began.
    cpu_at_start: u64,
    /// The timer's wake-up lateness, one sample per timer wake-up (room reserved before
    /// the run), and every wake-up of the loop.
    lateness: Vec<u64>,
    wakeups: u64,
    /// The host cpu each VCPU's guest is pinned to, by VCPU index (`None`: not yet placed
    /// by a run, or not a VCPU of this run's).
    pinned: Vec<Option<usize>>,
    /// The seats as the plan sees them, and the plan's steps (room kept between
    /// iterations: the loop allocates nothing).
    views: Vec<SeatView>,
    steps: Vec<Step>,
    /// Each seat's `do_schedule` count before a decision (several seats; room kept).
    calls_before: Vec<u64>,
    /// The watchdog's exit descriptor rang (checked at the top of the next iteration).
    watchdog_rang: bool,
    /// The watchdog died and the run carries on without it (warned once).
    without_watchdog: bool,
}

fn execute(
    system: &SystemSpec,
    scenario: &str,
    seed: u64,
    mut options: HostOptions,
    cpus: &[usize],
    allowed: Allowed,
) -> Result<HostRun, HostError> {
    let control = options.control.take();
    let mut run = Run::set_up(system, seed, &options, control, cpus, allowed)?;
    let reached = run.run_loop(&options)?;
    run.finish(scenario, seed, &options, reached)
}

impl Run {
    fn set_up(
        system: &SystemSpec,
        seed: u64,
        options: &HostOptions,
        control: Option<LiveControl>,
        cpus: &[usize],
        allowed: Allowed,
    ) -> Result<Run, HostError> {
        let guard = Guard::take(cpus, &allowed, options, control.as_ref())?;
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
        // One seat per pcpu of the machine, on the managed cpus in order.
        let seats = (0..system.machine.pcpus)
            .zip(cpus)
            .map(|(p, &cpu)| {
                let measures = Measures::for_run(options.duration, system.machine.quantum);
                Seat::new(PcpuId(p), cpu, measures)
            })
            .collect();
        let mut run = Run {
            slots: Slots::default(),
            control,
            seats,
            guard,
            machine,
            names: Domains::new(settings).driving(driven(system)),
            enforcer: enforcer(options.backend),
            notify,
            timer,
            domain_of_vcpu: Vec::new(),
            policy_settings: system.policy_settings.clone(),
            start: 0,
            seed,
            allowed,
            helper: options.helper.clone(),
            external: options.external.clone(),
            keep_jobs: options.record_trace || options.record_jobs,
            changes: system.changes.clone(),
            next_change: 0,
            armed: None,
            cpu_at_start: 0,
            lateness: Measures::room(options.duration, system.machine.quantum),
            wakeups: 0,
            pinned: Vec::new(),
            views: Vec::with_capacity(cpus.len()),
            steps: Vec::with_capacity(4 * cpus.len()),
            calls_before: Vec::with_capacity(cpus.len()),
            watchdog_rang: false,
            without_watchdog: false,
        };
        for spec in &system.domains {
            run.change(Nanos::ZERO, &Change::AddDomain(spec.clone()))?;
        }
        // The scheduler thread becomes real-time, then time 0 is set and everyone starts.
        // One seat: on its cpu, beside its guests (the cheapest switches measured). Several:
        // on the cores to spare, off every seat (see the design note).
        let cpu = run.guest_cpu();
        match run.seats.len() {
            1 => sys::pin_to(0, cpu).map_err(HostError::io(format!("pinning to cpu {cpu}")))?,
            _ => {
                let seats: Vec<usize> = run.seats.iter().map(|s| s.cpu).collect();
                let spare = sys::cpus_except_all(&seats);
                sys::set_affinity(0, &spare).map_err(HostError::io(format!(
                    "pinning to the spare cpus {spare:?}"
                )))?
            }
        }
        if run.allowed.fifo {
            sys::set_fifo(0, SCHEDULER_PRIORITY)
                .map_err(HostError::io("SCHED_FIFO 99 for the scheduler thread"))?;
        }
        if run.allowed.mlock {
            sys::lock_memory().map_err(HostError::io("mlockall"))?;
        }
        let clock_read = sys::clock_read_cost(10_000);
        run.start = sys::mono_ns() + LEAD;
        // Above every parked external thread, too (see `crate::external`).
        let idle_priority = run.allowed.fifo.then(|| match run.external.is_empty() {
            true => options.backend.idle_priority(),
            false => IDLE_PRIORITY_BAND,
        });
        for seat in &mut run.seats {
            seat.measures.clock_read = clock_read;
            seat.spinner = Some(
                IdleSpinner::start(seat.cpu, idle_priority, run.start)
                    .map_err(|e| HostError::io("the IDLE spinner")(std::io::Error::other(e)))?,
            );
        }
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
        let cpu = self.guest_cpu();
        let cgroups = self.guard.cgroups.as_ref();
        let mut domain_cgroup = || match cgroups {
            Some(c) => c.add_empty(&format!("d{index}")),
            None => Err(std::io::Error::other("no cgroup v2 for the run")),
        };
        let watchdog = &mut self.guard.watchdog;
        let mut announce = |u: &Undo| watchdog.announce(u);
        let mut context = AttachContext {
            cpu,
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

    /// Records that `vcpus` (in VCPU order) are domain `index`'s, their guests started on
    /// the first seat's cpu: placed there for good with one seat, to be placed by their
    /// first run with several.
    fn map_vcpus(&mut self, index: usize, vcpus: &[VcpuId]) {
        let placed = (self.seats.len() == 1).then(|| self.guest_cpu());
        for (j, v) in vcpus.iter().enumerate() {
            if self.domain_of_vcpu.len() <= v.index() {
                self.domain_of_vcpu.resize(v.index() + 1, None);
                self.pinned.resize(v.index() + 1, None);
            }
            self.domain_of_vcpu[v.index()] = Some((index, j));
            self.pinned[v.index()] = placed;
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
            self.guest_cpu(),
            self.allowed.fifo,
            &self.notify,
            self.keep_jobs,
        )?;
        let units = domain.guests.len();
        for (j, guest) in domain.guests.iter_mut().enumerate() {
            let pid = guest.pid();
            if let Some(t) = start_time(pid) {
                self.guard
                    .watchdog
                    .announce(&Undo::Guest { pid, start_time: t })
                    .map_err(HostError::io("the watchdog"))?;
            }
            if let Some(cgroups) = &self.guard.cgroups {
                // A domain of one guest process keeps the name it always had.
                let unit = match units {
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
            if let Some(global) = &mut domain.global {
                **global = GlobalGuest::new(&domain.spec, self.seed, index as u32, ready).map_err(
                    |reason| HostError::Domain {
                        domain: name.clone(),
                        reason,
                    },
                )?;
                global.grant_nothing(|j| &domain.guests[j].shared);
            }
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
        for seat in &mut self.seats {
            if let Some(vcpu) = seat.forget(d) {
                if let Domain::Process(p) = &self.slots[d].domain {
                    let _ = self.enforcer.stop(&p.guest(vcpu).member);
                }
            }
        }
        let off_seats = self.off_seats();
        let slot = &mut self.slots[d];
        if let Domain::Process(p) = &mut slot.domain {
            p.close_global(now, false);
        }
        slot.domain.drain(Some(now));
        slot.removed_at = Some(now);
        slot.wake_at.iter_mut().for_each(|w| *w = None);
        match &mut slot.domain {
            Domain::Process(p) => {
                p.kill(&off_seats);
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

    /// The host cpu guests start on (stopped): the first seat's. With one seat the
    /// scheduler thread runs there too; with several, each guest is moved to the seat
    /// that runs its VCPU ([`plan`]).
    fn guest_cpu(&self) -> usize {
        self.seats[0].cpu
    }

    /// Every host cpu but the seats'.
    fn off_seats(&self) -> Vec<usize> {
        let seats: Vec<usize> = self.seats.iter().map(|s| s.cpu).collect();
        (0..sys::cpu_count())
            .filter(|c| !seats.contains(c))
            .collect()
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
        for seat in &mut self.seats {
            seat.steal_at_start = sys::steal_ns(seat.cpu);
        }
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
            self.check_watchdog(now, options)?;
            self.read_probes();
            self.observe_guests(now)?;
            self.apply_due_changes(now)?;
            self.serve_control(now);
            self.reap();
            self.decide(now);
            self.enforce(now)?;
            let again = self.grant(now);
            for slot in &mut self.slots {
                slot.domain.drain(None);
            }
            if !again {
                self.wait(now, end);
            }
        }
    }

    /// 0. Whether the watchdog still lives: its pidfd rang (or, on a kernel without
    ///    pidfds, it is asked each iteration). A dead watchdog stops the run — the error
    ///    unwinds `Run`, whose drop undoes everything and, the watchdog being gone,
    ///    removes the record — unless `carry_on_without_watchdog`, which warns once.
    fn check_watchdog(&mut self, now: Nanos, options: &HostOptions) -> Result<(), HostError> {
        let watchdog = &mut self.guard.watchdog;
        if self.without_watchdog || !(self.watchdog_rang || watchdog.exit_fd().is_none()) {
            return Ok(());
        }
        self.watchdog_rang = false;
        let Some(how) = watchdog.death().map(str::to_string) else {
            return Ok(());
        };
        let pid = watchdog.pid();
        if options.carry_on_without_watchdog {
            eprintln!(
                "rtvmm: warning: the watchdog (pid {pid}) died ({how}) at {:.1} ms into the \
                 run; carrying on without it (--carry-on-without-watchdog): if the executor \
                 dies now, `rtvmm host cleanup` must undo what it changed",
                now.as_ns() as f64 / 1e6
            );
            self.without_watchdog = true;
            return Ok(());
        }
        Err(HostError::WatchdogDied { pid, how, at: now })
    }

    /// 1. The answers to the last switch probes, if any.
    fn read_probes(&mut self) {
        for seat in &mut self.seats {
            seat.read_probe(&self.slots);
        }
    }

    /// 2. Wake and block the domains' VCPUs from their guests' state, by the core's
    ///    rules ("Several VCPUs" in `rtvmm_core::guest`): a VCPU of a partitioned guest
    ///    (or of one VCPU) has work while one of its tasks has a pending job; a global
    ///    guest of several VCPUs is the core's guest itself ([`crate::global`]: its due
    ///    releases and finished jobs taken in first), whose `vcpu_has_work` says; an
    ///    external domain has work while its threads are not all sleeping. A VCPU without
    ///    work waits for its tasks' earliest next release, a timer the executor owns.
    fn observe_guests(&mut self, now: Nanos) -> Result<(), HostError> {
        for (d, slot) in self.slots.iter_mut().enumerate() {
            if slot.removed_at.is_some() {
                continue;
            }
            let vcpus = slot.domain.vcpus().len();
            if let Domain::Process(p) = &mut slot.domain {
                if p.global.is_some() {
                    // Finishes and releases taken in if due (the jobs are handed out once
                    // the seats run what the machine decides: `grant`); its VCPUs' work is
                    // the core's rule for a global guest.
                    p.take_in_global(now, running_of(&self.seats, d));
                    let global = p.global.as_ref().expect("a global guest");
                    let next = global.next_release().map(Nanos::as_ns);
                    for j in 0..vcpus {
                        let work = global.has_work(j);
                        let vcpu = p.vcpus[j];
                        // Every sleeping VCPU waits for the guest's next release.
                        slot.wake_at[j] = if work { None } else { next };
                        if work != self.machine.has_work(vcpu) {
                            if work {
                                self.machine.wake(now, vcpu);
                            } else {
                                self.machine.block(now, vcpu);
                            }
                        }
                    }
                    continue;
                }
            }
            for j in 0..vcpus {
                let vcpu = slot.domain.vcpus()[j];
                let work = match &mut slot.domain {
                    Domain::Process(p) => p.guest(j).shared.work_at(now.as_ns()),
                    Domain::External(e) => {
                        let watchdog = &mut self.guard.watchdog;
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
                preflight::runnable_on(spec, self.seats.len()).map_err(|reason| {
                    HostError::Domain {
                        domain: spec.name.clone(),
                        reason,
                    }
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
            if let Err(reason) = preflight::runnable_on(spec, self.seats.len()) {
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

    /// 4. The core's decisions due at `now`; `do_schedule` timed (per seat: the calls
    ///    that ran it on the seat's pcpu).
    fn decide(&mut self, now: Nanos) {
        while self.machine.poll_timeout() <= now {
            match self.seats.as_mut_slice() {
                [seat] => seat.timed(&mut self.machine, |m| m.handle_timeout(now)),
                seats => {
                    // Several: the call's time goes to the first seat whose pcpu ran
                    // `do_schedule` in it (one sample per call, as with one seat).
                    let calls = |m: &Machine, s: &Seat| m.pcpu_stats(s.pcpu).do_schedule_calls;
                    let counted = &mut self.calls_before;
                    counted.clear();
                    counted.extend(seats.iter().map(|s| calls(&self.machine, s)));
                    let before = sys::mono_ns();
                    self.machine.handle_timeout(now);
                    let took = sys::mono_ns() - before;
                    let ran = seats
                        .iter_mut()
                        .zip(counted.iter())
                        .find(|(s, &c)| calls(&self.machine, s) != c);
                    if let Some((seat, _)) = ran {
                        seat.measures.do_schedule.push(took);
                    }
                }
            }
        }
    }

    /// Step 5: makes each seat's pcpu run what the core decided; holds every external
    /// domain that does not run as its work says (stopped with work, parked without).
    ///
    /// The plan ([`plan::plan`]) says, over all seats: who leaves, which guests move to
    /// another seat's cpu, who enters; each seat carries its steps out.
    fn enforce(&mut self, now: Nanos) -> Result<(), HostError> {
        self.views.clear();
        for seat in &self.seats {
            let runs = seat.current.map(|t| match t {
                Target::Idle => Runs::Idle,
                Target::Vcpu { domain, vcpu } => {
                    Runs::Vcpu(self.slots[domain].domain.vcpus()[vcpu])
                }
            });
            self.views.push(SeatView {
                pcpu: seat.pcpu,
                cpu: seat.cpu,
                runs,
            });
        }
        let (machine, pinned) = (&self.machine, &self.pinned);
        plan::plan(
            &self.views,
            |p| plan::target(machine, p),
            |v| pinned.get(v.index()).copied().flatten(),
            &mut self.steps,
        );
        for i in 0..self.steps.len() {
            match self.steps[i] {
                Step::Stop { seat, .. } | Step::Park { seat } => self.seats[seat].leave(
                    &self.machine,
                    &mut self.slots,
                    self.enforcer.as_mut(),
                )?,
                Step::Move { vcpu, to, .. } => self.move_guest(vcpu, to)?,
                Step::Resume { seat, vcpu } => {
                    let (domain, vcpu) =
                        self.domain_of_vcpu[vcpu.index()].expect("a VCPU of the run");
                    let target = Target::Vcpu { domain, vcpu };
                    self.seats[seat].enter(now, target, &mut self.slots, self.enforcer.as_mut())?
                }
                Step::Spin { seat } => self.seats[seat].enter(
                    now,
                    Target::Idle,
                    &mut self.slots,
                    self.enforcer.as_mut(),
                )?,
            }
        }
        for d in 0..self.slots.len() {
            let external = matches!(self.slots[d].domain, Domain::External(_));
            let running = Some(Target::Vcpu { domain: d, vcpu: 0 });
            if external
                && self.seats.iter().all(|s| s.current != running)
                && self.slots[d].removed_at.is_none()
            {
                hold(&self.machine, &mut self.slots, self.enforcer.as_mut(), d, 0)?;
            }
        }
        Ok(())
    }

    /// 5b. Each global guest of several VCPUs that took something in (step 2), or
    ///     whose running VCPUs the enforcement changed, hands its jobs out to the VCPUs
    ///     the seats now run ([`crate::global`]). Returns whether that changed which of its
    ///     VCPUs have work: the machine is then told at once (another iteration, no
    ///     sleep), as the simulator settles at the same instant.
    fn grant(&mut self, now: Nanos) -> bool {
        let mut again = false;
        for (d, slot) in self.slots.iter_mut().enumerate() {
            let Domain::Process(p) = &mut slot.domain else {
                continue;
            };
            if slot.removed_at.is_some() || !p.hand_out_global(now, running_of(&self.seats, d)) {
                continue;
            }
            let global = p.global.as_ref().expect("synced: a global guest");
            again |= p
                .vcpus
                .iter()
                .enumerate()
                .any(|(j, &v)| global.has_work(j) != self.machine.has_work(v));
        }
        again
    }

    /// Re-pins the guest of `vcpu` (stopped) to host cpu `to`, the seat that runs it next:
    /// every thread of its guest process (an affinity change).
    fn move_guest(&mut self, vcpu: VcpuId, to: usize) -> Result<(), HostError> {
        let (d, j) = self.domain_of_vcpu[vcpu.index()].expect("a VCPU of the run");
        if let Domain::Process(p) = &self.slots[d].domain {
            // Errors are built only on error (no allocation in the loop otherwise).
            sys::pin_process(p.guest(j).pid(), to).map_err(|e| {
                HostError::io(format!(
                    "domain '{}': moving VCPU {j}'s guest to cpu {to}",
                    p.spec.name
                ))(e)
            })?;
        }
        // An external domain never moves: it runs on one pcpu only (`preflight`).
        self.pinned[vcpu.index()] = Some(to);
        Ok(())
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
        // A global guest releases at its instants, whichever of its VCPUs run.
        for slot in self.slots.iter().filter(|s| s.removed_at.is_none()) {
            if let Domain::Process(p) = &slot.domain {
                if let Some(at) = p.global.as_ref().and_then(|g| g.next_release()) {
                    next = next.min(at);
                }
            }
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
        // The watchdog's pidfd likewise, once it is known dead or without pidfds.
        let watchdog = match self.guard.watchdog.exit_fd() {
            Some(fd) if !self.without_watchdog => fd,
            _ => self.notify.as_fd(),
        };
        let mut fds = [
            PollFd::new(self.timer.as_fd(), PollFlags::POLLIN),
            PollFd::new(self.notify.as_fd(), PollFlags::POLLIN),
            PollFd::new(command, PollFlags::POLLIN),
            PollFd::new(watchdog, PollFlags::POLLIN),
        ];
        let _ = poll(&mut fds, PollTimeout::NONE);
        let woke = sys::mono_ns();
        self.wakeups += 1;
        let ready = |fd: &PollFd| fd.revents().is_some_and(|r| r.contains(PollFlags::POLLIN));
        let (timer_fired, rung) = (ready(&fds[0]), ready(&fds[1]));
        self.watchdog_rang = ready(&fds[3]);
        if timer_fired {
            self.lateness.push(woke.saturating_sub(at));
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
        for seat in &self.seats {
            if let Some(Target::Vcpu { domain, vcpu }) = seat.current {
                if let Domain::Process(p) = &self.slots[domain].domain {
                    let _ = self.enforcer.stop(&p.guest(vcpu).member);
                }
            }
        }
        // A global guest's jobs are the executor's to report: credited, due ones released.
        for slot in self.slots.iter_mut().filter(|s| s.removed_at.is_none()) {
            if let Domain::Process(p) = &mut slot.domain {
                p.close_global(reached, true);
            }
        }
        // External domains are given back at the end instant (their CPU time counted
        // then).
        for slot in &mut self.slots {
            if let Domain::External(e) = &mut slot.domain {
                e.release(Some(self.enforcer.as_mut()));
            }
        }
        for seat in &mut self.seats {
            seat.spinner.as_ref().expect("started").park();
            seat.current = None;
        }
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
            slots,
            control,
            seats,
            guard,
            ..
        } = self;
        drop(slots);
        drop(control);
        drop(seats);
        guard.finish();
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
        let duration = reached.as_ns().max(1);
        // Every seat's samples together (one seat: its own).
        let mut do_schedule = Vec::new();
        let mut switches = Vec::new();
        let mut steal = 0;
        for seat in &mut self.seats {
            do_schedule.append(&mut seat.measures.do_schedule);
            switches.append(&mut seat.measures.switches);
            if let (Some(a), Some(b)) = (seat.steal_at_start, sys::steal_ns(seat.cpu)) {
                steal += b.saturating_sub(a);
            }
        }
        let clock_read = self.seats.iter().map(|s| s.measures.clock_read).max();
        HostResults {
            real_time: self.allowed.missing.is_empty(),
            not_real_time_because: self
                .allowed
                .missing
                .iter()
                .map(ToString::to_string)
                .collect(),
            cpu: self.guest_cpu() as u32,
            enforce: options.backend.name().to_string(),
            do_schedule_total_ns: total(&do_schedule),
            do_schedule_ns: Dist::of(&mut do_schedule),
            switch_total_ns: total(&switches),
            switch_ns: Dist::of(&mut switches),
            tick_lateness_ns: Dist::of(&mut self.lateness),
            clock_read_ns: clock_read.unwrap_or(0),
            wakeups: self.wakeups,
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
            pcpus: self.seats.len() as u32,
            end: Some(reached),
        };
        (events, names)
    }
}

/// The VCPUs of domain `d` the seats run (bit j = its VCPU j).
fn running_of(seats: &[Seat], d: usize) -> u64 {
    seats
        .iter()
        .filter_map(|s| match s.current {
            Some(Target::Vcpu { domain, vcpu }) if domain == d => Some(1u64 << vcpu),
            _ => None,
        })
        .fold(0, |mask, bit| mask | bit)
}
