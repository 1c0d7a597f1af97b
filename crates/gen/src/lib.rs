//! rtvmm-gen: deterministic task-set generators.
//!
//! Every generator here is a pure function of its parameters and a seed: the same seed
//! gives the same task set on every machine (all draws come from
//! [`rtvmm_core::rng::SimRng`], and `pow`/`ln`/`exp` come from the pure-Rust `libm`
//! crate rather than the platform's maths library, whose last bit may differ). Nothing
//! here reads a file or a clock; [`workload_file`] parses a workload from a `&str`.
//!
//! | module | what it generates | source |
//! |---|---|---|
//! | [`sampling`] | utilisation vectors: UUniFast, UUniFast-Discard, RandFixedSum | Bini & Buttazzo 2005; Davis & Burns 2009; Stafford 2006 / Emberson, Stafford & Davis 2010 |
//! | [`periods`] | periods: uniform, log-uniform, harmonic | Emberson, Stafford & Davis 2010 |
//! | [`rtxen`] | the rtxen-capacity task sets and the share-pattern table | Xi et al., EMSOFT 2011 |
//! | [`csa`] | the csa-periods / csa-etf task sets | Lee et al., RTAS 2012 |
//! | [`arinc`] | avionics-shaped (ARINC-653 partition) workloads, *generated* | shape of Easwaran et al. 2009 |
//! | [`uunifast`] | a general-purpose task set over domains with bandwidth-matched servers | — |
//! | [`workload_file`] | reads (and writes) a partitioned workload as TOML | — |
//! | [`benchmark`] | the systems the benchmarks time (fixed, no seed) | — |
//!
//! Generators return a [`GenSystem`]: domains (or partitions) of periodic tasks with
//! deadline = period, and a `description` that records the procedure and its parameters
//! for reports; those that also give each domain a server return a [`ServerSystem`] of
//! [`ServerDomain`]s, which run under any policy. Writing a scenario file is the scenario
//! crate's job.
//!
//! Floating point appears only while drawing utilisations; every time that leaves this
//! crate is an integer [`Nanos`].
//!
//! # Example
//!
//! ```
//! use rtvmm_core::rng::SimRng;
//! use rtvmm_core::Nanos;
//! use rtvmm_gen::rtxen::{rtxen_taskset, share_pattern_table, SharePattern};
//! use rtvmm_gen::sampling::uunifast;
//!
//! // The rtxen-capacity task set for the "even" pattern at α = 70 %, run seed 42.
//! let system = rtxen_taskset(SharePattern::Even, 700, 42)?;
//! assert_eq!(system.domains.len(), 5);
//! assert!(system.domains.iter().all(|d| d.tasks.len() == 5));
//! // The same seed gives the same task set.
//! assert_eq!(system, rtxen_taskset(SharePattern::Even, 700, 42)?);
//!
//! // The domains' servers come from the share-pattern table.
//! let table = share_pattern_table(SharePattern::Even);
//! assert_eq!(table[0].budget, Nanos::from_ms(2));
//! assert_eq!(table[0].period, Nanos::from_ms(10));
//!
//! // A raw utilisation vector: four tasks summing to 0.8.
//! let mut rng = SimRng::new(1);
//! let u = uunifast(&mut rng, 4, 0.8)?;
//! assert!((u.iter().sum::<f64>() - 0.8).abs() < 1e-9);
//! # Ok::<(), rtvmm_gen::GenError>(())
//! ```

// Floors, lowest first: a module uses only the modules above it (checked by
// `tests/integration/layers.rs`); the modules of one floor do not use each other.
pub mod benchmark;
pub mod periods;
pub mod sampling;

pub mod arinc;
pub mod csa;
pub mod rtxen;
pub mod uunifast;

pub mod workload_file;

use rtvmm_core::guest::{Arrival, GuestScheduler, TaskSpec};
use rtvmm_core::model::{credit_weight_from_share, DomainSpec, VcpuParams};
use rtvmm_core::Nanos;
use serde::Serialize;

/// One generated periodic task. Times are integer nanoseconds; `deadline` = `period`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GenTask {
    pub name: String,
    pub period: Nanos,
    pub wcet: Nanos,
    pub deadline: Nanos,
}

impl GenTask {
    /// A task with an implicit deadline (deadline = period).
    pub fn new(name: impl Into<String>, period: Nanos, wcet: Nanos) -> GenTask {
        GenTask {
            name: name.into(),
            period,
            wcet,
            deadline: period,
        }
    }

    /// wcet ÷ period, for reports and checks (0 for a zero period).
    pub fn utilisation(&self) -> f64 {
        if self.period.is_zero() {
            0.0
        } else {
            self.wcet.as_ns() as f64 / self.period.as_ns() as f64
        }
    }
}

/// One generated domain (a VM, or an ARINC-653 partition).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GenDomain {
    pub name: String,
    pub tasks: Vec<GenTask>,
    /// A period fixed by the platform (ARINC-653 partitions); `None` when the interface
    /// period is free to be chosen by the analysis or given by a share table.
    pub fixed_period: Option<Nanos>,
}

impl GenDomain {
    /// The sum of the tasks' utilisations.
    pub fn utilisation(&self) -> f64 {
        self.tasks.iter().map(GenTask::utilisation).sum()
    }

    /// The tasks as the core's periodic tasks (their deadlines kept, etf 1, offset 0).
    pub fn task_specs(&self) -> Vec<TaskSpec> {
        self.tasks
            .iter()
            .map(|t| TaskSpec {
                deadline: t.deadline,
                ..TaskSpec::periodic(&t.name, t.period, t.wcet)
            })
            .collect()
    }
}

/// A generated system described by servers, ready to become a scenario: its name, its
/// domains, and how it was made (procedure, parameters, seed), for the file's header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerSystem {
    pub name: String,
    pub description: String,
    pub domains: Vec<ServerDomain>,
}

/// One domain of a system described by servers, as the published experiments describe
/// every domain: a server (budget, period, priority), a guest with its tasks, and when it
/// boots. The same domain runs under any policy ([`ServerDomain::vcpu_params`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerDomain {
    pub name: String,
    pub budget: Nanos,
    pub period: Nanos,
    /// 1 = highest.
    pub priority: u32,
    pub guest: GuestScheduler,
    pub tasks: Vec<TaskSpec>,
    /// When the domain boots: its VCPU's first period begins here (no budget before), and
    /// its guest's tasks count their releases from here. Zero: at time 0.
    pub offset: Nanos,
}

impl ServerDomain {
    /// The domain as a driver runs it: [`Self::vcpu_params`] and its guest with
    /// [`Self::booted_tasks`].
    pub fn domain_spec(&self) -> DomainSpec {
        DomainSpec {
            name: self.name.clone(),
            vcpu: self.vcpu_params(),
            guest: self.guest,
            tasks: self.booted_tasks(),
            placement: Default::default(),
        }
    }

    /// Its VCPU under any policy: the servers and RTDS read budget, period and priority,
    /// SEDF the budget as its slice (extratime off), Credit a weight proportional to the
    /// share ([`credit_weight_from_share`]) with no cap; it boots at `offset`.
    pub fn vcpu_params(&self) -> VcpuParams {
        let mut params = VcpuParams::server(self.budget, self.period, self.priority);
        params.weight = credit_weight_from_share(self.budget, self.period);
        params.cap = 0;
        params.extratime = Some(false);
        params.offset = self.offset;
        params
    }

    /// Its tasks as the guest starts them: each first release `offset` later (listed
    /// aperiodic times are all moved, since the guest does not add the offset to them).
    pub fn booted_tasks(&self) -> Vec<TaskSpec> {
        self.tasks
            .iter()
            .map(|task| {
                let mut task = task.clone();
                match &mut task.arrival {
                    Arrival::AperiodicTimes(times) => {
                        for t in times.iter_mut() {
                            *t += self.offset;
                        }
                    }
                    Arrival::Periodic | Arrival::Sporadic { .. } | Arrival::Poisson { .. } => {
                        task.offset += self.offset;
                    }
                    // Released by another task's jobs, which are moved already.
                    Arrival::Triggered { .. } => {}
                }
                task
            })
            .collect()
    }
}

/// A generated system: its domains, in priority order where the procedure defines one,
/// and a one-paragraph description of how it was made (procedure, parameters, seed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GenSystem {
    pub domains: Vec<GenDomain>,
    pub description: String,
}

impl GenSystem {
    /// The sum of every task's utilisation (U_W).
    pub fn total_utilisation(&self) -> f64 {
        self.domains.iter().map(GenDomain::utilisation).sum()
    }

    /// The number of tasks over all domains.
    pub fn task_count(&self) -> usize {
        self.domains.iter().map(|d| d.tasks.len()).sum()
    }

    /// Every task, with the name of its domain, in domain then task order.
    pub fn tasks(&self) -> impl Iterator<Item = (&str, &GenTask)> {
        self.domains
            .iter()
            .flat_map(|d| d.tasks.iter().map(move |t| (d.name.as_str(), t)))
    }
}

/// Why a generator refused its parameters or could not finish.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GenError {
    /// A parameter is out of its domain; `parameter` is its name as in the API.
    #[error("invalid parameter `{parameter}`: {problem}")]
    InvalidParameter {
        parameter: &'static str,
        problem: String,
    },
    /// UUniFast-Discard drew `attempts` vectors and every one had a component over the cap.
    #[error(
        "UUniFast-Discard gave up after {attempts} attempts: {n} utilisations summing to \
         {total} with each at most {cap} are too rarely drawn; use RandFixedSum instead"
    )]
    DiscardLimitReached {
        attempts: u64,
        n: usize,
        total: f64,
        cap: f64,
    },
    /// A procedure needs at least one task per domain and drew fewer tasks than domains.
    #[error("{tasks} tasks cannot fill {domains} domains (each domain needs a task)")]
    TooFewTasks { tasks: usize, domains: usize },
    /// The workload file format needs a fixed period for every partition.
    #[error("domain `{domain}` has no fixed period; a workload file needs one per partition")]
    MissingFixedPeriod { domain: String },
}

/// Rounds `value` (in units of `step`) to the nearest whole number of steps, halves away
/// from zero, and returns that many steps as [`Nanos`]. Non-finite or negative values
/// give zero; values past `u64` saturate.
pub(crate) fn round_steps(value_in_steps: f64, step: Nanos) -> Nanos {
    let steps = if value_in_steps.is_finite() && value_in_steps > 0.0 {
        // `as` saturates at u64::MAX for huge values.
        value_in_steps.round() as u64
    } else {
        0
    };
    Nanos(steps.saturating_mul(step.as_ns()))
}

/// A fraction in permille as a float (700 → 0.7).
pub(crate) fn permille(value: u32) -> f64 {
    f64::from(value) / 1000.0
}
