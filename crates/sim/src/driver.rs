//! The discrete-event driver: owns simulated time, the guests and the random stream, and
//! drives the core's [`Machine`] through its public API only — the same API the real-time
//! executor uses. It holds no scheduling logic.
//!
//! # One step
//! 1. A guest of several VCPUs is told which of its VCPUs run now and places its jobs on
//!    them ([`Guest::set_running`]).
//! 2. The next instant `t` is the earliest of: the machine's `poll_timeout`, the next job
//!    release (from outside or triggered), the next scheduled change, the moment a running
//!    job would finish, and the end of the run.
//! 3. Each VCPU running on a pcpu during `[now, t)` (pcpus in order) gets that time: the
//!    job its guest runs on it progresses (and may finish exactly at `t`; a VCPU its guest
//!    leaves without work blocks). A finished job releases, `delay` later, one job of each
//!    task it triggers ([`Arrival::Triggered`]), and ends a chain instance if its task ends
//!    a chain ([`ChainSpec`]).
//! 4. At `t`, in this order: job releases from outside (in order of domain, then task
//!    declaration), triggered releases (in order of the finishes that caused them), jobs
//!    whose wake delivery ends now (below) — a guest that gets work wakes its VCPU, the
//!    same wake as any other, so Credit's BOOST follows — scheduled changes, then the
//!    machine's timeouts.
//!
//! # Wake delivery
//! With a [`WakeDelivery`] in the machine's configuration (off by default), every release
//! — a timer's (periodic, sporadic), an outside event's (aperiodic, Poisson) and a
//! trigger's — reaches the guest a drawn latency after its instant: at the release the job
//! is made ([`Guest::arrive`]: its demand and the task's next release drawn from the run's
//! stream, as without delivery), and it joins the guest's queue when its delivery ends
//! ([`Guest::deliver`]). It keeps its release instant, so the latency is part of its
//! response time. The latencies come from a stream of their own
//! ([`WakeDelivery::stream`]). A task's jobs are delivered in order: a job whose delivery
//! would end before its predecessor's is delivered with it (one wake path per task, as one
//! thread waits on one timer). Off, a release is delivered at once, by the same code as
//! before the setting existed.
//!
//! Ties are broken by a fixed order (domain, then task index), never by a hash.
//!
//! # Memory
//! What a run keeps grows with the system and the run's length only where asked:
//! - per task, [`TaskStats`]: counts and distributions in bounded memory (see
//!   [`rtvmm_system::stats`]) — always;
//! - every finished job ([`DomainRun::finished`]) — unless turned off with
//!   [`Simulation::set_keep_jobs`] (`rtvmm sim` keeps them only for `--jobs`);
//! - the trace — only when recording, and then in memory unless streamed to a
//!   [`TraceSpool`] ([`Simulation::stream_trace`]), which keeps a bounded chunk;
//! - the jobs waiting in the guests' queues: at most [`MAX_PENDING_JOBS`] per task (a
//!   task whose backlog grows past that stops the run with [`SimError::Backlog`]).

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::ops::ControlFlow;

use rtvmm_core::guest::{Arrival, Guest, Job};
use rtvmm_core::machine::{Machine, MachineError};
use rtvmm_core::model::{PcpuId, VcpuId};
use rtvmm_core::policy::PolicySettings;
use rtvmm_core::rng::SimRng;
use rtvmm_core::wake::WakeDelivery;
use rtvmm_core::Nanos;

use rtvmm_system::change::{apply_change, Applied, ChangeError, DomainTable};
use rtvmm_system::records::{GuestEvent, JobRecord, TraceEvent};
use rtvmm_system::spec::{ChainSpec, Change, DomainSpec, LinkError, SystemSpec, TimedChange};
use rtvmm_system::stats::{ChainStats, TaskStats};
use rtvmm_system::trace::TraceSpool;

/// Where a recorded trace goes.
enum Recorder {
    /// Kept whole ([`Simulation::take_trace`]).
    Memory(Vec<(Nanos, TraceEvent)>),
    /// Streamed out of memory ([`Simulation::stream_trace`]).
    Spool(Box<TraceSpool>),
}

impl Recorder {
    #[inline]
    fn push(&mut self, at: Nanos, event: TraceEvent) {
        match self {
            Recorder::Memory(events) => events.push((at, event)),
            Recorder::Spool(spool) => spool.record(at, event),
        }
    }
}

/// The most jobs one task may have waiting (released, unfinished) before the run stops
/// with [`SimError::Backlog`]. A waiting job costs about 64 bytes, so one task's queue stays
/// under about 64 MB (128 MB with the queue's growth); a backlog this deep means the task
/// has been overloaded for a long time: a 1 ms task that never runs reaches it after 16
/// simulated minutes, one that gets 10 % less than it needs after about 3 hours (legitimate overload
/// experiments, minutes long, stay far below). Change it with
/// [`Simulation::set_max_pending_jobs`].
pub const MAX_PENDING_JOBS: usize = 1_000_000;

/// How often [`Simulation::run_until_with`] reports progress: every this many steps (a
/// few hundred times per second of wall-clock time in a release build).
pub const PROGRESS_STEPS: u64 = 1 << 16;

/// Per-domain state of a run.
pub struct DomainRun {
    pub spec: DomainSpec,
    /// Its first VCPU (`vcpus[0]`).
    pub vcpu: VcpuId,
    /// Every VCPU of the domain, by index in the domain.
    pub vcpus: Vec<VcpuId>,
    pub guest: Guest,
    /// Finished jobs per task, in finishing order — only while the simulation keeps its
    /// jobs ([`Simulation::set_keep_jobs`]; on by default); otherwise empty.
    pub finished: Vec<Vec<JobRecord>>,
    /// Counts and distributions of the finished jobs per task, always kept.
    pub stats: Vec<TaskStats>,
    /// Set when the domain was removed: its pending jobs are not counted.
    pub removed_at: Option<Nanos>,
}

/// Errors while setting up or changing a simulated system.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// The machine could not be built.
    #[error(transparent)]
    Machine(#[from] MachineError),
    /// A domain could not join, or a scheduled change was refused ([`apply_change`]).
    #[error(transparent)]
    Change(#[from] ChangeError),
    #[error(transparent)]
    Link(#[from] LinkError),
    /// A task's jobs arrive faster than they run, for so long that its queue reached the
    /// limit ([`MAX_PENDING_JOBS`] unless set otherwise).
    #[error(
        "domain '{domain}', task '{task}': {pending} jobs waiting at {at} (more than the \
         limit of {limit}): its jobs are released faster than they run (wcet {wcet} every \
         {period}), so its backlog grows without bound. Give the task less work (wcet) or a \
         longer period, give its domain's VCPU a larger share, or simulate a shorter time"
    )]
    Backlog {
        at: Nanos,
        domain: String,
        task: String,
        pending: usize,
        limit: usize,
        wcet: Nanos,
        period: Nanos,
    },
}

/// One chain during a run: its tasks resolved to (domain, task) indices and what it
/// measured.
pub struct ChainRun {
    pub spec: ChainSpec,
    /// The (domain, task) that ends an instance, while its domain is present.
    last: Option<(usize, usize)>,
    pub stats: ChainStats,
}

/// A task released `delay` after a job of another finished.
#[derive(Clone, Copy, Debug)]
struct Trigger {
    domain: usize,
    task: usize,
    delay: Nanos,
}

/// (release time, order of the trigger, domain, task, origin): a triggered release to come,
/// in order of time, then of the finishes that caused them.
type TriggeredRelease = (Nanos, u64, usize, usize, Nanos);

/// A job on its way to its guest: it joins the guest's queue `at` (module doc, "Wake
/// delivery"). Ordered by `at`, then by `order` (the order the jobs were released in).
#[derive(Debug)]
struct InFlight {
    at: Nanos,
    order: u64,
    domain: usize,
    job: Job,
}

impl PartialEq for InFlight {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.order) == (other.at, other.order)
    }
}

impl Eq for InFlight {}

impl PartialOrd for InFlight {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for InFlight {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.at, self.order).cmp(&(other.at, other.order))
    }
}

/// The simulator's domains as the change path sees them, with the index of each present
/// domain by name (present names are unique: the change path refuses a second one).
struct Table<'a> {
    domains: &'a mut Vec<DomainRun>,
    present: &'a HashMap<String, usize>,
}

impl DomainTable for Table<'_> {
    fn find(&self, name: &str) -> Option<(usize, &[VcpuId])> {
        let i = *self.present.get(name)?;
        Some((i, &self.domains[i].vcpus))
    }

    fn joined(&self) -> usize {
        self.domains.len()
    }

    fn spec_mut(&mut self, index: usize) -> &mut DomainSpec {
        &mut self.domains[index].spec
    }
}

/// A run in progress.
pub struct Simulation {
    machine: Machine,
    domains: Vec<DomainRun>,
    /// The index of each present domain (not removed) by name: lookups by name cost O(1),
    /// so that adding n domains costs O(n), not O(n²).
    present: HashMap<String, usize>,
    /// (domain index, VCPU index in the domain) of each VCPU id.
    domain_of_vcpu: Vec<(usize, u32)>,
    /// The domains of several VCPUs (present ones).
    multi: Vec<usize>,
    /// The VCPUs running on some pcpu during the current step: (VCPU, domain, index).
    running: Vec<(VcpuId, usize, u32)>,
    /// (release time, domain, task): the next release of every task.
    releases: BinaryHeap<Reverse<(Nanos, usize, usize)>>,
    /// What a finished job of `[domain][task]` triggers.
    triggers: Vec<Vec<Vec<Trigger>>>,
    /// Triggered releases to come.
    triggered: BinaryHeap<Reverse<TriggeredRelease>>,
    triggers_fired: u64,
    chains: Vec<ChainRun>,
    /// Whether some task is triggered or some chain measured (else a finish triggers
    /// nothing).
    linked: bool,
    /// The machine has one pcpu.
    one_pcpu: bool,
    /// `one_pcpu` and no domain of several VCPUs (`multi` is empty): [`Self::step`] takes
    /// the one-pcpu path. Kept with `multi`.
    lone: bool,
    changes: Vec<TimedChange>,
    /// For pools created at run time (`xl cpupool-create`).
    policy_settings: PolicySettings,
    next_change: usize,
    rng: SimRng,
    /// Whether releases reach their guest after a delivery latency (the machine's
    /// `wake_delivery` is not off). Fixed for the run: the step loop is compiled once
    /// for each answer (`DELIVERY` in [`Self::step_as`]), so that off, nothing of the
    /// delivery is looked at.
    delivery_on: bool,
    delivery: WakeDelivery,
    /// The delivery latencies' own stream ([`WakeDelivery::stream`]).
    delivery_rng: SimRng,
    /// Jobs whose delivery has not ended, by when it ends.
    in_flight: BinaryHeap<Reverse<InFlight>>,
    /// When the first of `in_flight` ends (`Nanos::MAX` when none): one comparison per
    /// step (with delivery on) instead of a look into the heap.
    next_delivery: Nanos,
    /// Jobs released so far with a delivery latency (the order of [`InFlight`]).
    sent: u64,
    /// When the last delivery of each task ends, by domain and task (with delivery on).
    last_delivery: Vec<Vec<Nanos>>,
    now: Nanos,
    trace: Option<Recorder>,
    check_invariants: bool,
    keep_jobs: bool,
    max_pending_jobs: usize,
    /// The machine's `poll_timeout()` as of the end of the last `settle`; it holds until
    /// the machine is told something (`machine_told`).
    machine_due: Nanos,
    machine_told: bool,
}

impl Simulation {
    /// Builds the system at time 0. `record` turns on trace recording.
    pub fn new(spec: &SystemSpec, seed: u64, record: bool) -> Result<Simulation, SimError> {
        spec.check_links()?;
        let mut machine = spec.machine()?;
        machine.set_recording(record);
        let mut sim = Simulation {
            machine,
            domains: Vec::new(),
            present: HashMap::new(),
            domain_of_vcpu: Vec::new(),
            multi: Vec::new(),
            running: Vec::new(),
            releases: BinaryHeap::new(),
            triggers: Vec::new(),
            triggered: BinaryHeap::new(),
            triggers_fired: 0,
            linked: false,
            one_pcpu: spec.machine.pcpus == 1,
            lone: spec.machine.pcpus == 1,
            chains: spec
                .chains
                .iter()
                .map(|c| ChainRun {
                    spec: c.clone(),
                    last: None,
                    stats: ChainStats::new(c.bounds()),
                })
                .collect(),
            changes: spec.changes.clone(),
            policy_settings: spec.policy_settings.clone(),
            next_change: 0,
            rng: SimRng::new(seed),
            delivery_on: !spec.machine.wake_delivery.is_off(),
            delivery: spec.machine.wake_delivery.clone(),
            delivery_rng: WakeDelivery::stream(seed),
            in_flight: BinaryHeap::new(),
            next_delivery: Nanos::MAX,
            sent: 0,
            last_delivery: Vec::new(),
            now: Nanos::ZERO,
            trace: record.then(|| Recorder::Memory(Vec::new())),
            check_invariants: cfg!(debug_assertions),
            keep_jobs: true,
            max_pending_jobs: MAX_PENDING_JOBS,
            machine_due: Nanos::ZERO,
            machine_told: true,
        };
        // Triggers and chains are resolved once, after every domain has joined.
        for d in &spec.domains {
            sim.apply_unlinked(&Change::AddDomain(d.clone()))?;
        }
        sim.link();
        // The first step, at time 0, releases the first jobs and then lets the machine
        // schedule: one do_schedule with everything known.
        Ok(sim)
    }

    /// Turns the after-every-step invariant check on or off (on in debug builds).
    pub fn set_check_invariants(&mut self, on: bool) {
        self.check_invariants = on;
    }

    /// Whether to keep every finished job in [`DomainRun::finished`] (on by default;
    /// memory grows with the number of jobs). The statistics in [`DomainRun::stats`], from
    /// which the results are computed, are kept either way. Set it before running: jobs
    /// finished while it is off are not kept.
    pub fn set_keep_jobs(&mut self, on: bool) {
        self.keep_jobs = on;
    }

    /// Whether every finished job is kept (see [`Self::set_keep_jobs`]).
    pub fn keeps_jobs(&self) -> bool {
        self.keep_jobs
    }

    /// The most jobs a task may have waiting before the run stops with
    /// [`SimError::Backlog`] (default [`MAX_PENDING_JOBS`]).
    pub fn set_max_pending_jobs(&mut self, limit: usize) {
        self.max_pending_jobs = limit;
    }

    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    pub fn domains(&self) -> &[DomainRun] {
        &self.domains
    }

    /// The chains and what they measured so far, in the order of [`SystemSpec::chains`].
    pub fn chains(&self) -> &[ChainRun] {
        &self.chains
    }

    pub fn now(&self) -> Nanos {
        self.now
    }

    /// The recorded trace so far (empty when recording is off or streamed).
    pub fn take_trace(&mut self) -> Vec<(Nanos, TraceEvent)> {
        self.collect_core_events();
        match &mut self.trace {
            Some(Recorder::Memory(events)) => std::mem::take(events),
            _ => Vec::new(),
        }
    }

    /// Records the trace into `spool` from now on (turning recording on), so that memory
    /// does not grow with the run's length; events recorded in memory so far go first.
    /// Call it before running; [`Self::take_trace_spool`] hands the spool back.
    pub fn stream_trace(&mut self, mut spool: TraceSpool) {
        if self.trace.is_none() {
            self.machine.set_recording(true);
        }
        if let Some(Recorder::Memory(events)) = self.trace.take() {
            for (at, event) in events {
                spool.record(at, event);
            }
        }
        self.trace = Some(Recorder::Spool(Box::new(spool)));
    }

    /// The spool of a streamed trace ([`Self::stream_trace`]), with every event recorded
    /// so far; recording stops.
    pub fn take_trace_spool(&mut self) -> Option<TraceSpool> {
        self.collect_core_events();
        match self.trace.take() {
            Some(Recorder::Spool(spool)) => {
                self.machine.set_recording(false);
                Some(*spool)
            }
            other => {
                self.trace = other;
                None
            }
        }
    }

    /// Starts the guest of a domain the change path added with `vcpus`.
    fn start_domain(&mut self, spec: DomainSpec, vcpus: Vec<VcpuId>) {
        let index = self.domains.len();
        let placement = &spec.placement;
        let count = placement.vcpu_count();
        // The guest starts now: its releases count from the instant the domain joins. Its
        // shape was checked by the change path before any VCPU was added.
        let guest = Guest::with_vcpus(
            spec.guest,
            spec.tasks.clone(),
            self.now,
            count,
            placement.smp,
        )
        .expect("the change path checked the guest's shape");
        for t in 0..spec.tasks.len() {
            if let Some(at) = guest.next_release(t) {
                self.releases.push(Reverse((at, index, t)));
            }
        }
        for (i, v) in vcpus.iter().enumerate() {
            if self.domain_of_vcpu.len() <= v.index() {
                self.domain_of_vcpu.resize(v.index() + 1, (usize::MAX, 0));
            }
            self.domain_of_vcpu[v.index()] = (index, i as u32);
        }
        if count > 1 {
            self.multi.push(index);
            self.lone = false;
        }
        if self.delivery_on {
            self.last_delivery.push(vec![Nanos::ZERO; spec.tasks.len()]);
        }
        self.domains.push(DomainRun {
            finished: vec![Vec::new(); spec.tasks.len()],
            stats: vec![TaskStats::default(); spec.tasks.len()],
            spec,
            vcpu: vcpus[0],
            vcpus,
            guest,
            removed_at: None,
        });
    }

    /// Resolves the triggers and the chains' last tasks by name among the present domains
    /// (after a domain joins or leaves).
    fn link(&mut self) {
        let present = &self.present;
        let find = |domains: &[DomainRun], domain: &str, task: &str| {
            present.get(domain).and_then(|&d| {
                let t = domains[d].spec.tasks.iter().position(|t| t.name == task)?;
                Some((d, t))
            })
        };
        let triggered = |run: &DomainRun| {
            run.removed_at.is_none()
                && run
                    .spec
                    .tasks
                    .iter()
                    .any(|t| matches!(t.arrival, Arrival::Triggered { .. }))
        };
        if !self.domains.iter().any(triggered) {
            // Nothing to resolve: no table (a finish looks triggers up only when `linked`).
            self.triggers = Vec::new();
            self.linked = !self.chains.is_empty();
            for chain in &mut self.chains {
                chain.last = chain
                    .spec
                    .tasks
                    .last()
                    .and_then(|(d, t)| find(&self.domains, d, t));
            }
            return;
        }
        let mut triggers: Vec<Vec<Vec<Trigger>>> = self
            .domains
            .iter()
            .map(|d| vec![Vec::new(); d.spec.tasks.len()])
            .collect();
        for (d, run) in self.domains.iter().enumerate() {
            if run.removed_at.is_some() {
                continue;
            }
            for (t, task) in run.spec.tasks.iter().enumerate() {
                if let Arrival::Triggered {
                    by_domain,
                    by_task,
                    delay,
                } = &task.arrival
                {
                    if let Some((bd, bt)) = find(&self.domains, by_domain, by_task) {
                        triggers[bd][bt].push(Trigger {
                            domain: d,
                            task: t,
                            delay: *delay,
                        });
                    }
                }
            }
        }
        self.linked = !self.chains.is_empty() || triggers.iter().flatten().any(|t| !t.is_empty());
        self.triggers = triggers;
        for chain in &mut self.chains {
            chain.last = chain
                .spec
                .tasks
                .last()
                .and_then(|(d, t)| find(&self.domains, d, t));
        }
    }

    /// Applies `change` through the one change path, then acts on what it did.
    fn apply(&mut self, change: &Change) -> Result<(), SimError> {
        if self.apply_unlinked(change)? {
            self.link();
        }
        Ok(())
    }

    /// [`Self::apply`] without resolving the links again; returns whether a domain joined
    /// or left (the links must then be resolved).
    fn apply_unlinked(&mut self, change: &Change) -> Result<bool, SimError> {
        let now = self.now;
        self.machine_told = true;
        let mut table = Table {
            domains: &mut self.domains,
            present: &self.present,
        };
        match apply_change(
            &mut self.machine,
            &mut table,
            now,
            change,
            &self.policy_settings,
        )? {
            Applied::Added { spec, vcpus } => {
                self.present.insert(spec.name.clone(), self.domains.len());
                self.start_domain(spec, vcpus);
                Ok(true)
            }
            Applied::Removed { index, .. } => {
                self.domains[index].removed_at = Some(now);
                self.present.remove(&self.domains[index].spec.name);
                self.multi.retain(|&d| d != index);
                self.lone = self.one_pcpu && self.multi.is_empty();
                Ok(true)
            }
            Applied::Reconfigured { .. } => Ok(false),
        }
    }

    /// Lets the machine handle everything due at `self.now`.
    fn settle(&mut self) {
        if self.machine_told {
            // Something was reported at `now`: handle it without asking first (what is
            // not due is left alone, so the answer would only say "now" or nothing).
            self.machine_told = false;
            self.machine_due = self.now;
        }
        while self.machine_due <= self.now {
            self.machine.handle_timeout(self.now);
            self.machine_due = self.machine.poll_timeout();
        }
    }

    fn record(&mut self, at: Nanos, event: GuestEvent) {
        if let Some(trace) = &mut self.trace {
            trace.push(at, TraceEvent::Guest(event));
        }
    }

    fn collect_core_events(&mut self) {
        if let Some(trace) = &mut self.trace {
            for (t, e) in self.machine.drain_events() {
                trace.push(t, TraceEvent::Core(e));
            }
        }
    }

    /// Finds the VCPUs making progress on the pcpus (`self.running`), and tells each guest
    /// of several VCPUs which of its VCPUs run.
    #[inline(always)]
    fn find_running(&mut self) {
        self.running.clear();
        for p in 0..self.machine.config().pcpus {
            if let Some(v) = self.machine.running(PcpuId(p)) {
                let (d, j) = self.domain_of_vcpu[v.index()];
                self.running.push((v, d, j));
            }
        }
        for &d in &self.multi {
            let mask = self
                .running
                .iter()
                .filter(|r| r.1 == d)
                .fold(0u64, |m, r| m | 1 << r.2);
            self.domains[d].guest.set_running(mask);
        }
    }

    /// The instant of the next event other than a running job's finish, capped at `end`
    /// (`DELIVERY`: see [`Self::step_as`]).
    #[inline(always)]
    fn next_instant<const DELIVERY: bool>(&self, end: Nanos) -> Nanos {
        let mut t = self.machine_due.min(end);
        if let Some(Reverse((at, _, _))) = self.releases.peek() {
            t = t.min(*at);
        }
        if let Some(Reverse((at, ..))) = self.triggered.peek() {
            t = t.min(*at);
        }
        if DELIVERY {
            t = t.min(self.next_delivery);
        }
        if let Some(c) = self.changes.get(self.next_change) {
            t = t.min(c.at.max(self.now));
        }
        t
    }

    /// VCPU `v` (VCPU `j` of domain `d`) ran during `[now, t)`: its job progresses. `LONE`:
    /// every guest has one VCPU (`j` is 0), so the guest's single-VCPU methods answer.
    #[inline(always)]
    fn run_vcpu<const LONE: bool>(&mut self, v: VcpuId, d: usize, j: u32, t: Nanos) {
        let start = self.now;
        let guest = &mut self.domains[d].guest;
        // Which job runs is only needed for the trace.
        let running = match self.trace {
            Some(_) => guest.job_on(j).map(|job| (job.task, job.seq)),
            None => None,
        };
        let (finished, has_work) = if LONE {
            (guest.run(start, t - start), guest.has_work())
        } else {
            (guest.run_on(j, start, t - start), guest.vcpu_has_work(j))
        };
        if let Some((task, seq)) = running {
            self.record(
                start,
                GuestEvent::Run {
                    domain: d as u32,
                    task,
                    seq,
                    end: t,
                    vcpu: j,
                },
            );
        }
        if let Some(job) = finished {
            self.finish(d, &job, t);
        }
        if !has_work {
            self.machine.block(t, v);
            self.machine_told = true;
        }
    }

    /// A job of domain `d` finished at `t`.
    fn finish(&mut self, d: usize, job: &Job, t: Nanos) {
        let missed = t > job.deadline;
        self.record(
            t,
            GuestEvent::Finish {
                domain: d as u32,
                task: job.task,
                seq: job.seq,
                missed,
            },
        );
        let task = job.task as usize;
        if self.linked {
            self.follow_links(d, task, job, t);
        }
        let run = &mut self.domains[d];
        run.stats[task].finished_job(job, t);
        if self.keep_jobs {
            run.finished[task].push(JobRecord::from_job(job, Some(t)));
        }
    }

    /// A job of task `task` of domain `d` finished at `t`: release what it triggers and end
    /// the chain instances it ends.
    fn follow_links(&mut self, d: usize, task: usize, job: &Job, t: Nanos) {
        if let Some(triggers) = self.triggers.get(d).map(|ts| &ts[task]) {
            for trigger in triggers {
                self.triggered.push(Reverse((
                    t + trigger.delay,
                    self.triggers_fired,
                    trigger.domain,
                    trigger.task,
                    job.origin,
                )));
                self.triggers_fired += 1;
            }
        }
        for chain in &mut self.chains {
            if chain.last == Some((d, task)) {
                chain.stats.record((t - job.origin).as_ns());
            }
        }
    }

    /// Releases a job of task `task` of domain `d` at `t` (`origin`: see
    /// [`Guest::release_from`]); a guest of one VCPU that gets work wakes it. With wake
    /// delivery on (`DELIVERY`: see [`Self::step_as`]), the job is sent on its way instead
    /// ([`Self::send`]).
    #[inline]
    fn release<const DELIVERY: bool>(
        &mut self,
        t: Nanos,
        d: usize,
        task: usize,
        origin: Option<Nanos>,
    ) -> Result<(), SimError> {
        if DELIVERY {
            self.send(t, d, task, origin);
            return Ok(());
        }
        let dom = &mut self.domains[d];
        let had_work = dom.guest.has_work();
        let seq = dom.guest.release_from(t, task, &mut self.rng, origin).seq;
        self.admitted(t, d, task, seq, had_work)
    }

    /// A job of task `task` of domain `d`, with number `seq`, joined its guest's queue at
    /// `t`: checks the task's backlog, records the release (where the job reaches the
    /// guest: with wake delivery, its delivery's end) and wakes the domain's VCPU if the
    /// guest (of one VCPU) had no work before.
    #[inline(always)]
    fn admitted(
        &mut self,
        t: Nanos,
        d: usize,
        task: usize,
        seq: u64,
        had_work: bool,
    ) -> Result<(), SimError> {
        let dom = &self.domains[d];
        let pending = dom.guest.queue(task).len();
        if pending > self.max_pending_jobs {
            let spec = &dom.spec.tasks[task];
            return Err(SimError::Backlog {
                at: t,
                domain: dom.spec.name.clone(),
                task: spec.name.clone(),
                pending,
                limit: self.max_pending_jobs,
                wcet: spec.wcet,
                period: spec.period,
            });
        }
        let vcpu = (dom.vcpus.len() == 1).then_some(dom.vcpu);
        self.record(
            t,
            GuestEvent::Release {
                domain: d as u32,
                task: task as u32,
                seq,
            },
        );
        if let (false, Some(vcpu)) = (had_work, vcpu) {
            self.machine.wake(t, vcpu);
            self.machine_told = true;
        }
        Ok(())
    }

    /// With wake delivery on: the job of task `task` of domain `d` released at `t` is made
    /// now (from the run's stream, as without delivery) and joins its guest when its
    /// delivery ends — a drawn latency later, and not before the task's previous job.
    #[inline(never)]
    fn send(&mut self, t: Nanos, d: usize, task: usize, origin: Option<Nanos>) {
        let job = self.domains[d].guest.arrive(t, task, &mut self.rng, origin);
        let latency = self.delivery.draw(&mut self.delivery_rng);
        let last = &mut self.last_delivery[d][task];
        let at = (t + latency).max(*last);
        *last = at;
        self.in_flight.push(Reverse(InFlight {
            at,
            order: self.sent,
            domain: d,
            job,
        }));
        self.sent += 1;
        self.next_delivery = self.next_delivery.min(at);
    }

    /// Hands every job whose delivery ends at or before `t` to its guest, in order of
    /// delivery (then of release).
    #[inline(never)]
    fn deliver_due(&mut self, t: Nanos) -> Result<(), SimError> {
        while let Some(Reverse(next)) = self.in_flight.peek() {
            if next.at > t {
                self.next_delivery = next.at;
                return Ok(());
            }
            let Reverse(InFlight { domain: d, job, .. }) =
                self.in_flight.pop().expect("peeked above");
            let dom = &mut self.domains[d];
            if dom.removed_at.is_some() {
                continue;
            }
            let (task, seq) = (job.task as usize, job.seq);
            let had_work = dom.guest.has_work();
            dom.guest.deliver(job);
            self.admitted(t, d, task, seq, had_work)?;
        }
        self.next_delivery = Nanos::MAX;
        Ok(())
    }

    /// Tells the machine, for each VCPU of each guest of several VCPUs, whether it has work
    /// now (a wake or a block where that changed).
    fn sync_multi(&mut self, t: Nanos) {
        for &d in &self.multi {
            let run = &self.domains[d];
            for (j, &v) in run.vcpus.iter().enumerate() {
                let wants = run.guest.vcpu_has_work(j as u32);
                if wants != self.machine.has_work(v) {
                    if wants {
                        self.machine.wake(t, v);
                    } else {
                        self.machine.block(t, v);
                    }
                    self.machine_told = true;
                }
            }
        }
    }

    /// Advances to the next event (at most `end`). Returns the new time.
    pub fn step(&mut self, end: Nanos) -> Result<Nanos, SimError> {
        if self.delivery_on {
            self.step_in::<true>(end)
        } else {
            self.step_in::<false>(end)
        }
    }

    /// [`Self::step`] with wake delivery on or off (`DELIVERY`), chosen by the caller:
    /// once per run in [`Self::run_until_with`].
    fn step_in<const DELIVERY: bool>(&mut self, end: Nanos) -> Result<Nanos, SimError> {
        if self.lone {
            self.step_as::<true, DELIVERY>(end)
        } else {
            self.step_as::<false, DELIVERY>(end)
        }
    }

    /// [`Self::step`]; `LONE`: one pcpu and every present domain has one VCPU, so at most
    /// one VCPU runs and no guest needs telling which of its VCPUs run (the code the
    /// single-pcpu path had before several pcpus, chosen once per step). `DELIVERY`: the
    /// machine's wake delivery is on (`delivery_on`, fixed for the run); off, releases go
    /// straight to their guests and the in-flight jobs are never looked at — the code the
    /// simulator had before wake delivery.
    #[inline(always)]
    fn step_as<const LONE: bool, const DELIVERY: bool>(
        &mut self,
        end: Nanos,
    ) -> Result<Nanos, SimError> {
        // The machine's state is constant until `t`: what runs now runs all along.
        if LONE {
            // The VCPU of pcpu 0, without the list.
            let running = self
                .machine
                .running(PcpuId(0))
                .map(|v| (v, self.domain_of_vcpu[v.index()].0));
            let mut t = self.next_instant::<DELIVERY>(end);
            if let Some((_, d)) = running {
                if let Some(left) = self.domains[d].guest.time_to_completion() {
                    t = t.min(self.now + left);
                }
            }
            if let (true, Some((v, d))) = (t > self.now, running) {
                self.run_vcpu::<true>(v, d, 0, t);
            }
            self.now = t;
        } else {
            self.find_running();
            let running = std::mem::take(&mut self.running);
            let mut t = self.next_instant::<DELIVERY>(end);
            for &(_, d, j) in &running {
                if let Some(left) = self.domains[d].guest.time_to_completion_on(j) {
                    t = t.min(self.now + left);
                }
            }
            // 3. The running VCPUs' guests get [now, t).
            if t > self.now {
                for &(v, d, j) in &running {
                    self.run_vcpu::<false>(v, d, j, t);
                }
            }
            self.running = running;
            self.now = t;
        }
        let t = self.now;
        // 4a. Releases from outside due now.
        while let Some(&Reverse((at, d, task))) = self.releases.peek() {
            if at > t {
                break;
            }
            if self.domains[d].removed_at.is_some() {
                self.releases.pop();
                continue;
            }
            self.release::<DELIVERY>(t, d, task, None)?;
            // The task's entry becomes its next release in place (one sift instead of a pop
            // and a push). Keys are unique (one entry per task), so the order is the same.
            match self.domains[d].guest.next_release(task) {
                Some(next) => {
                    *self.releases.peek_mut().expect("peeked above") = Reverse((next, d, task))
                }
                None => {
                    self.releases.pop();
                }
            }
        }
        // 4b. Triggered releases due now.
        while let Some(&Reverse((at, _, d, task, origin))) = self.triggered.peek() {
            if at > t {
                break;
            }
            self.triggered.pop();
            if self.domains[d].removed_at.is_none() {
                self.release::<DELIVERY>(t, d, task, Some(origin))?;
            }
        }
        // 4b'. Jobs whose wake delivery ends now.
        if DELIVERY && self.next_delivery <= t {
            self.deliver_due(t)?;
        }
        if !LONE && !self.multi.is_empty() {
            self.sync_multi(t);
        }
        // 4c. Scheduled changes due now.
        while let Some(c) = self.changes.get(self.next_change) {
            if c.at > t {
                break;
            }
            let change = c.change.clone();
            self.next_change += 1;
            self.apply(&change)?;
        }
        // 4d. The machine.
        self.settle();
        self.collect_core_events();
        if self.check_invariants {
            if let Err(e) = self.machine.check_invariants() {
                panic!("invariant broken at {t}: {e}");
            }
        }
        Ok(t)
    }

    /// Runs until `end` (inclusive of everything due at `end`), then accounts time to it.
    pub fn run_until(&mut self, end: Nanos) -> Result<(), SimError> {
        self.run_until_with(end, |_| ControlFlow::Continue(()))
            .map(|_| ())
    }

    /// Runs until `end` as [`Self::run_until`] does, calling `progress(now)` every
    /// [`PROGRESS_STEPS`] steps (a driver draws a progress bar from it, or asks to stop).
    /// When `progress` returns `ControlFlow::Break(())`, the run stops at `now` instead:
    /// everything due at `now` has been handled and time is accounted to `now`, so the
    /// results collected with `now` as the end are those of a run that long. Returns where
    /// the run ended: `end`, or the instant it stopped at.
    pub fn run_until_with(
        &mut self,
        end: Nanos,
        mut progress: impl FnMut(Nanos) -> ControlFlow<()>,
    ) -> Result<Nanos, SimError> {
        if self.delivery_on {
            self.steps_until::<true>(end, &mut progress)?;
        } else {
            self.steps_until::<false>(end, &mut progress)?;
        }
        // `step` never goes past `end`: `now` is `end` or where the run stopped.
        let reached = self.now;
        self.machine.advance(reached);
        // Accounting may have ended an overhead and started its decision.
        self.machine_told = true;
        self.collect_core_events();
        Ok(reached)
    }

    /// The steps of [`Self::run_until_with`], with wake delivery on or off (`DELIVERY`,
    /// chosen once for the run).
    fn steps_until<const DELIVERY: bool>(
        &mut self,
        end: Nanos,
        progress: &mut impl FnMut(Nanos) -> ControlFlow<()>,
    ) -> Result<(), SimError> {
        let mut steps: u64 = 0;
        while self.now < end {
            self.step_in::<DELIVERY>(end)?;
            steps += 1;
            if steps.is_multiple_of(PROGRESS_STEPS) && progress(self.now).is_break() {
                break;
            }
        }
        Ok(())
    }

    /// Every job still pending (released, unfinished) per domain and task: those in the
    /// guest's queues, then those whose wake delivery has not ended (by task, then job).
    pub fn pending_jobs(&self, domain: usize) -> impl Iterator<Item = (usize, JobRecord)> + '_ {
        let mut in_flight: Vec<&Job> = self
            .in_flight
            .iter()
            .filter(|f| f.0.domain == domain)
            .map(|f| &f.0.job)
            .collect();
        in_flight.sort_by_key(|j| (j.task, j.seq));
        self.domains[domain]
            .guest
            .pending()
            .chain(in_flight)
            .map(|j| (j.task as usize, JobRecord::from_job(j, None)))
    }
}
