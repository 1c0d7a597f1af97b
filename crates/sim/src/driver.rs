//! The discrete-event driver: owns simulated time, the guests and the random stream, and
//! drives the core's [`Machine`] through its public API only — the same API the real-time
//! executor uses. It holds no scheduling logic.
//!
//! # One step
//! 1. The next instant `t` is the earliest of: the machine's `poll_timeout`, the next job
//!    release, the next scheduled change, the moment the running job would finish, and the
//!    end of the run.
//! 2. The VCPU that ran during `[now, t)` gets that time: its guest's current job progresses
//!    (and may finish exactly at `t`; a guest left without work blocks its VCPU).
//! 3. At `t`, in this order: job releases (in order of task declaration; a guest that gets
//!    work wakes its VCPU), scheduled changes, then the machine's timeouts.
//!
//! Ties are broken by a fixed order (domain, then task index), never by a hash.
//!
//! # Memory
//! What a run keeps grows with the system and the run's length only where asked:
//! - per task, [`TaskStats`]: counts and distributions in bounded memory (see
//!   [`crate::stats`]) — always;
//! - every finished job ([`DomainRun::finished`]) — unless turned off with
//!   [`Simulation::set_keep_jobs`] (`rtvmm sim` keeps them only for `--jobs`);
//! - the trace — only when recording;
//! - the jobs waiting in the guests' queues: at most [`MAX_PENDING_JOBS`] per task (a
//!   task whose backlog grows past that stops the run with [`SimError::Backlog`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::ControlFlow;

use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::event::CoreEvent;
use rtvmm_core::guest::{Guest, Job};
use rtvmm_core::machine::{Machine, MachineError};
use rtvmm_core::model::{DomainId, PcpuId, VcpuId};
use rtvmm_core::policy::PolicySettings;
use rtvmm_core::rng::SimRng;
use rtvmm_core::Nanos;

use crate::stats::TaskStats;
use crate::system::{Change, DomainSpec, SystemSpec, TimedChange};

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

/// What happened to one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRecord {
    pub seq: u64,
    pub release: Nanos,
    pub deadline: Nanos,
    pub first_start: Option<Nanos>,
    pub finish: Option<Nanos>,
}

impl JobRecord {
    fn from_job(job: &Job, finish: Option<Nanos>) -> JobRecord {
        JobRecord {
            seq: job.seq,
            release: job.release,
            deadline: job.deadline,
            first_start: job.first_start,
            finish,
        }
    }
}

/// A guest-level event, for traces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GuestEvent {
    Release {
        domain: u32,
        task: u32,
        seq: u64,
    },
    /// The job received execution during `[at, end)`.
    Run {
        domain: u32,
        task: u32,
        seq: u64,
        end: Nanos,
    },
    Finish {
        domain: u32,
        task: u32,
        seq: u64,
        missed: bool,
    },
}

/// Anything recorded during a run, in time order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    Core(CoreEvent),
    Guest(GuestEvent),
}

/// Per-domain state of a run.
pub struct DomainRun {
    pub spec: DomainSpec,
    pub vcpu: VcpuId,
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
    // `error`, not `source`: the message includes it, and a reporter walking the chain
    // would print it twice.
    #[error("domain '{domain}': {error}")]
    Machine { domain: String, error: MachineError },
    #[error(transparent)]
    Machine0(#[from] MachineError),
    #[error("change at {at}: no domain named '{domain}'")]
    UnknownDomain { at: Nanos, domain: String },
    #[error("change at {at}: a domain named '{domain}' exists already")]
    DuplicateDomain { at: Nanos, domain: String },
    #[error(transparent)]
    Xl(#[from] crate::xl::XlApplyError),
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

/// A run in progress.
pub struct Simulation {
    machine: Machine,
    domains: Vec<DomainRun>,
    /// Domain index of each VCPU id.
    domain_of_vcpu: Vec<usize>,
    /// (release time, domain, task): the next release of every task.
    releases: BinaryHeap<Reverse<(Nanos, usize, usize)>>,
    changes: Vec<TimedChange>,
    /// For pools created at run time (`xl cpupool-create`).
    policy_settings: PolicySettings,
    next_change: usize,
    rng: SimRng,
    now: Nanos,
    trace: Option<Vec<(Nanos, TraceEvent)>>,
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
        let mut machine = if spec.pools.is_empty() {
            Machine::new(spec.machine, spec.policy.clone())?
        } else {
            Machine::with_pools(spec.machine, spec.pools.clone())?
        };
        machine.set_recording(record);
        let mut sim = Simulation {
            machine,
            domains: Vec::new(),
            domain_of_vcpu: Vec::new(),
            releases: BinaryHeap::new(),
            changes: spec.changes.clone(),
            policy_settings: spec.policy_settings.clone(),
            next_change: 0,
            rng: SimRng::new(seed),
            now: Nanos::ZERO,
            trace: record.then(Vec::new),
            check_invariants: cfg!(debug_assertions),
            keep_jobs: true,
            max_pending_jobs: MAX_PENDING_JOBS,
            machine_due: Nanos::ZERO,
            machine_told: true,
        };
        for d in &spec.domains {
            sim.add_domain(d.clone())?;
        }
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

    pub fn now(&self) -> Nanos {
        self.now
    }

    /// The recorded trace so far (empty when recording is off).
    pub fn take_trace(&mut self) -> Vec<(Nanos, TraceEvent)> {
        self.collect_core_events();
        self.trace.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn add_domain(&mut self, spec: DomainSpec) -> Result<(), SimError> {
        let index = self.domains.len();
        let placed = |machine: &Machine| -> Result<(usize, Option<CpuSet>), MachineError> {
            let pool = match &spec.placement.pool {
                Some(name) => machine.pool_index(name)?,
                None => 0,
            };
            let affinity = match spec.placement.affinity_of(0) {
                Some(cpus) => Some(CpuSet::from_indices(cpus.iter().copied()).ok_or(
                    MachineError::UnknownPcpu {
                        pcpu: cpus.iter().copied().max().unwrap_or(0),
                        pcpus: machine.config().pcpus,
                    },
                )?),
                None => None,
            };
            Ok((pool, affinity))
        };
        let vcpu = placed(&self.machine)
            .and_then(|(pool, affinity)| {
                self.machine.add_vcpu_in(
                    self.now,
                    DomainId(index as u32),
                    spec.vcpu.clone(),
                    pool,
                    affinity,
                )
            })
            .map_err(|error| SimError::Machine {
                domain: spec.name.clone(),
                error,
            })?;
        // The guest starts now: its releases count from the instant the domain joins.
        let guest = Guest::new(spec.guest, spec.tasks.clone(), self.now);
        for t in 0..spec.tasks.len() {
            if let Some(at) = guest.next_release(t) {
                self.releases.push(Reverse((at, index, t)));
            }
        }
        if self.domain_of_vcpu.len() <= vcpu.index() {
            self.domain_of_vcpu.resize(vcpu.index() + 1, usize::MAX);
        }
        self.domain_of_vcpu[vcpu.index()] = index;
        self.domains.push(DomainRun {
            finished: vec![Vec::new(); spec.tasks.len()],
            stats: vec![TaskStats::default(); spec.tasks.len()],
            spec,
            vcpu,
            guest,
            removed_at: None,
        });
        Ok(())
    }

    fn domain_index(&self, at: Nanos, name: &str) -> Result<usize, SimError> {
        self.domains
            .iter()
            .position(|d| d.spec.name == name && d.removed_at.is_none())
            .ok_or_else(|| SimError::UnknownDomain {
                at,
                domain: name.to_string(),
            })
    }

    fn apply(&mut self, change: Change) -> Result<(), SimError> {
        let now = self.now;
        self.machine_told = true;
        match change {
            Change::SetParams { domain, params } => {
                let i = self.domain_index(now, &domain)?;
                let vcpu = self.domains[i].vcpu;
                self.machine
                    .adjust(now, vcpu, params.clone())
                    .map_err(|error| SimError::Machine { domain, error })?;
                self.domains[i].spec.vcpu = params;
            }
            Change::SwapPolicy(policy) => self.machine.swap_policy(now, policy)?,
            Change::AddDomain(spec) => {
                if self.domain_index(now, &spec.name).is_ok() {
                    return Err(SimError::DuplicateDomain {
                        at: now,
                        domain: spec.name,
                    });
                }
                self.add_domain(spec)?;
            }
            Change::RemoveDomain { domain } => {
                let i = self.domain_index(now, &domain)?;
                self.machine.remove_vcpu(now, self.domains[i].vcpu)?;
                self.domains[i].removed_at = Some(now);
            }
            Change::Xl(cmd) => {
                let domains = &self.domains;
                let vcpus_of = |name: &str| {
                    let i = domains
                        .iter()
                        .position(|d| d.spec.name == name && d.removed_at.is_none())?;
                    Some((DomainId(i as u32), vec![domains[i].vcpu]))
                };
                let settings = &self.policy_settings;
                crate::xl::apply_xl(&mut self.machine, now, &cmd, &vcpus_of, settings)?;
                if let Some(i) = cmd.domain().and_then(|d| self.domain_index(now, d).ok()) {
                    self.domains[i].spec.vcpu = self.machine.params(self.domains[i].vcpu).clone();
                }
            }
        }
        Ok(())
    }

    /// Lets the machine handle everything due at `self.now`.
    fn settle(&mut self) {
        if self.machine_told {
            self.machine_due = self.machine.poll_timeout();
            self.machine_told = false;
        }
        while self.machine_due <= self.now {
            self.machine.handle_timeout(self.now);
            self.machine_due = self.machine.poll_timeout();
        }
    }

    fn record(&mut self, at: Nanos, event: GuestEvent) {
        if let Some(trace) = &mut self.trace {
            trace.push((at, TraceEvent::Guest(event)));
        }
    }

    fn collect_core_events(&mut self) {
        if let Some(trace) = &mut self.trace {
            trace.extend(
                self.machine
                    .drain_events()
                    .into_iter()
                    .map(|(t, e)| (t, TraceEvent::Core(e))),
            );
        }
    }

    /// The VCPU making progress on the pcpu, and its domain's index.
    fn running(&self) -> Option<(VcpuId, usize)> {
        self.machine
            .running(PcpuId(0))
            .map(|v| (v, self.domain_of_vcpu[v.index()]))
    }

    /// The instant of the next event, capped at `end`; `running` is the domain whose VCPU
    /// runs, if any (its current job may finish first).
    fn next_instant(&self, end: Nanos, running: Option<usize>) -> Nanos {
        let mut t = self.machine_due.min(end);
        if let Some(Reverse((at, _, _))) = self.releases.peek() {
            t = t.min(*at);
        }
        if let Some(c) = self.changes.get(self.next_change) {
            t = t.min(c.at.max(self.now));
        }
        if let Some(left) = running.and_then(|d| self.domains[d].guest.time_to_completion()) {
            t = t.min(self.now + left);
        }
        t
    }

    /// Advances to the next event (at most `end`). Returns the new time.
    pub fn step(&mut self, end: Nanos) -> Result<Nanos, SimError> {
        // The machine's state is constant until `t`: what runs now runs all along.
        let running = self.running();
        let t = self.next_instant(end, running.map(|(_, d)| d));
        // 2. The running VCPU's guest gets [now, t).
        if t > self.now {
            if let Some((v, d)) = running {
                let start = self.now;
                let guest = &mut self.domains[d].guest;
                // Which job runs is only needed for the trace.
                let running = match self.trace {
                    Some(_) => guest.current_job().map(|j| (j.task, j.seq)),
                    None => None,
                };
                let finished = guest.run(start, t - start);
                let has_work = guest.has_work();
                if let Some((task, seq)) = running {
                    self.record(
                        start,
                        GuestEvent::Run {
                            domain: d as u32,
                            task,
                            seq,
                            end: t,
                        },
                    );
                }
                if let Some(job) = finished {
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
                    let run = &mut self.domains[d];
                    run.stats[job.task as usize].finished_job(&job, t);
                    if self.keep_jobs {
                        run.finished[job.task as usize].push(JobRecord::from_job(&job, Some(t)));
                    }
                }
                if !has_work {
                    self.machine.block(t, v);
                    self.machine_told = true;
                }
            }
        }
        self.now = t;
        // 3a. Releases due now.
        while let Some(&Reverse((at, d, task))) = self.releases.peek() {
            if at > t {
                break;
            }
            let dom = &mut self.domains[d];
            if dom.removed_at.is_some() {
                self.releases.pop();
                continue;
            }
            let had_work = dom.guest.has_work();
            let seq = dom.guest.release(t, task, &mut self.rng).seq;
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
            let next = dom.guest.next_release(task);
            let vcpu = dom.vcpu;
            // The task's entry becomes its next release in place (one sift instead of a pop
            // and a push). Keys are unique (one entry per task), so the order is the same.
            match next {
                Some(next) => {
                    *self.releases.peek_mut().expect("peeked above") = Reverse((next, d, task))
                }
                None => {
                    self.releases.pop();
                }
            }
            self.record(
                t,
                GuestEvent::Release {
                    domain: d as u32,
                    task: task as u32,
                    seq,
                },
            );
            if !had_work {
                self.machine.wake(t, vcpu);
                self.machine_told = true;
            }
        }
        // 3b. Scheduled changes due now.
        while let Some(c) = self.changes.get(self.next_change) {
            if c.at > t {
                break;
            }
            let change = c.change.clone();
            self.next_change += 1;
            self.apply(change)?;
        }
        // 3c. The machine.
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
        let mut steps: u64 = 0;
        while self.now < end {
            self.step(end)?;
            steps += 1;
            if steps.is_multiple_of(PROGRESS_STEPS) && progress(self.now).is_break() {
                break;
            }
        }
        // `step` never goes past `end`: `now` is `end` or where the run stopped.
        let reached = self.now;
        self.machine.advance(reached);
        // Accounting may have ended an overhead and started its decision.
        self.machine_told = true;
        self.collect_core_events();
        Ok(reached)
    }

    /// Every job still pending (released, unfinished) per domain and task.
    pub fn pending_jobs(&self, domain: usize) -> impl Iterator<Item = (usize, JobRecord)> + '_ {
        self.domains[domain]
            .guest
            .pending()
            .map(|j| (j.task as usize, JobRecord::from_job(j, None)))
    }
}
