//! A system to simulate, in the core's types: the machine, the policy, the domains with
//! their guests, and changes scheduled at given times. The scenario crate builds one from a
//! TOML file; tests and experiments build them in code.
//!
//! Times are `u64` nanoseconds and the simulator adds them without checks in release
//! builds. Scenario files bound every time at `rtvmm_scenario::MAX_TIME` (10¹⁷ ns), which
//! keeps every instant the simulator forms below 2⁶³ (the argument is in that crate's
//! docs, "Limits"); a system built in code must keep its times within the same bound.

use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::guest::Arrival;
use rtvmm_core::machine::{Machine, MachineConfig, MachineError, PoolSpec};
use rtvmm_core::model::VcpuParams;
use rtvmm_core::policy::{PolicyConfig, PolicySettings};
use rtvmm_core::xl::XlCommand;
use rtvmm_core::Nanos;

/// One domain: one VCPU and its guest (the core's, shared by every driver).
pub use rtvmm_core::model::DomainSpec;

/// A change to the running system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// New VCPU parameters for a domain (`xl sched-rtds -d D -p P -b B`).
    SetParams { domain: String, params: VcpuParams },
    /// Replace the policy ("hot swap").
    SwapPolicy(PolicyConfig),
    /// A new domain joins.
    AddDomain(DomainSpec),
    /// A domain leaves; its pending jobs are dropped from every count.
    RemoveDomain { domain: String },
    /// An `xl` command (cpupools, pinning, `sched-rtds`, `sched-credit`), applied with
    /// [`crate::xl::apply_xl`].
    Xl(XlCommand),
}

/// A change and when it happens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimedChange {
    pub at: Nanos,
    pub change: Change,
}

/// Everything a run needs but its seed and length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemSpec {
    pub machine: MachineConfig,
    /// The cpupools, at least one: the only place a policy is said. A domain that names no
    /// pool goes to the first. A scenario file without pools gets one, `Pool-0`, of every
    /// pcpu ([`SystemSpec::one_pool`]).
    pub pools: Vec<PoolSpec>,
    /// The settings of a policy a pool is created with at run time (`xl cpupool-create`).
    pub policy_settings: PolicySettings,
    pub domains: Vec<DomainSpec>,
    /// Sorted by time; ties keep their order.
    pub changes: Vec<TimedChange>,
    /// Chains of triggered tasks whose end-to-end latency the run measures.
    pub chains: Vec<ChainSpec>,
}

/// A chain (`docs/platform.md`, "Events between domains"): a sequence of tasks, each after the
/// first triggered by the one before ([`Arrival::Triggered`]). An instance starts with a
/// job of the first task and ends when the job of the last task it led to finishes; its
/// end-to-end latency is that finish − that release. The first task is released from
/// outside (periodic, sporadic, aperiodic or Poisson): an instance is then named by the
/// release of its first job, which every job it leads to carries (`Job::origin`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainSpec {
    pub name: String,
    /// (domain, task) names, first to last.
    pub tasks: Vec<(String, String)>,
    /// Latency bounds to report the share of instances within; empty: 1 ms.
    pub bounds: Vec<Nanos>,
}

impl ChainSpec {
    /// The bounds reported ([`Self::bounds`], or 1 ms when none is given).
    pub fn bounds(&self) -> Vec<Nanos> {
        if self.bounds.is_empty() {
            vec![Nanos::from_ms(1)]
        } else {
            self.bounds.clone()
        }
    }
}

/// What is wrong with a chain.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChainProblem {
    #[error("tasks: a chain needs at least one task")]
    Empty,
    #[error("tasks: no task '{task}' in a domain '{domain}'")]
    UnknownTask { domain: String, task: String },
    #[error(
        "tasks: the first task '{domain}'/'{task}' is triggered; a chain starts at a task \
         released from outside (periodic, sporadic, aperiodic)"
    )]
    FirstTriggered { domain: String, task: String },
    #[error(
        "tasks: '{domain}'/'{task}' is not triggered by the task before it in the chain, \
         '{after_domain}'/'{after_task}'"
    )]
    NotLinked {
        domain: String,
        task: String,
        after_domain: String,
        after_task: String,
    },
}

/// Why a system's triggers and chains do not hold together ([`SystemSpec::check_links`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LinkError {
    /// A triggered task names a task that no domain of the system has.
    #[error(transparent)]
    UnknownTrigger(Box<UnknownTrigger>),
    #[error("chain '{chain}': {problem}")]
    Chain {
        chain: String,
        problem: Box<ChainProblem>,
    },
}

/// A triggered task names a task that no domain of the system has
/// ([`LinkError::UnknownTrigger`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "domain '{domain}', task '{task}': triggered by '{by_domain}'/'{by_task}': no such \
     {what} in the system"
)]
pub struct UnknownTrigger {
    pub domain: String,
    pub task: String,
    pub by_domain: String,
    pub by_task: String,
    /// `domain` or `task`: what is missing.
    pub what: &'static str,
}

impl SystemSpec {
    /// A system of one pool, `Pool-0`, of every pcpu of `machine` under `policy`, with no
    /// domains, changes or chains yet.
    pub fn one_pool(machine: MachineConfig, policy: PolicyConfig) -> SystemSpec {
        SystemSpec {
            pools: vec![PoolSpec::new(
                PoolSpec::DEFAULT_NAME,
                CpuSet::first(machine.pcpus.min(CpuSet::MAX)),
                policy,
            )],
            machine,
            policy_settings: PolicySettings::default(),
            domains: Vec::new(),
            changes: Vec::new(),
            chains: Vec::new(),
        }
    }

    /// The policy of the first pool (where domains go unless they name another).
    pub fn policy(&self) -> &PolicyConfig {
        &self.pools[0].policy
    }

    /// Whether the pools are only the one a system of one policy has: `Pool-0` of every
    /// pcpu at the machine's quantum and overheads ([`Self::one_pool`]). A scenario file
    /// says such a system without `[[pool]]`s.
    pub fn has_only_default_pool(&self) -> bool {
        match self.pools.as_slice() {
            [p] => {
                p.name == PoolSpec::DEFAULT_NAME
                    && p.pcpus == CpuSet::first(self.machine.pcpus.min(CpuSet::MAX))
                    && p.quantum.is_none()
                    && p.overheads.is_none()
            }
            _ => false,
        }
    }

    /// The machine the system starts with, without VCPUs: its pools. The one place a
    /// system becomes a machine.
    pub fn machine(&self) -> Result<Machine, MachineError> {
        Machine::with_pools(self.machine.clone(), self.pools.clone())
    }

    /// Every domain the run may have: the first ones, then those added by changes.
    fn all_domains(&self) -> impl Iterator<Item = &DomainSpec> {
        self.domains
            .iter()
            .chain(self.changes.iter().filter_map(|c| match &c.change {
                Change::AddDomain(d) => Some(d),
                _ => None,
            }))
    }

    /// The task `task` of the (first) domain named `domain`.
    fn find_task(&self, domain: &str, task: &str) -> Option<&rtvmm_core::guest::TaskSpec> {
        self.all_domains()
            .find(|d| d.name == domain)
            .and_then(|d| d.tasks.iter().find(|t| t.name == task))
    }

    /// Checks that every trigger names a task of the system and every chain is a sequence
    /// of tasks linked by triggers.
    pub fn check_links(&self) -> Result<(), LinkError> {
        for d in self.all_domains() {
            for t in &d.tasks {
                if let Arrival::Triggered {
                    by_domain, by_task, ..
                } = &t.arrival
                {
                    let what = if !self.all_domains().any(|o| &o.name == by_domain) {
                        "domain"
                    } else if self.find_task(by_domain, by_task).is_none() {
                        "task"
                    } else {
                        continue;
                    };
                    return Err(LinkError::UnknownTrigger(Box::new(UnknownTrigger {
                        domain: d.name.clone(),
                        task: t.name.clone(),
                        by_domain: by_domain.clone(),
                        by_task: by_task.clone(),
                        what,
                    })));
                }
            }
        }
        for chain in &self.chains {
            let fail = |problem| LinkError::Chain {
                chain: chain.name.clone(),
                problem: Box::new(problem),
            };
            if chain.tasks.is_empty() {
                return Err(fail(ChainProblem::Empty));
            }
            for (k, (domain, task)) in chain.tasks.iter().enumerate() {
                let spec = self.find_task(domain, task).ok_or_else(|| {
                    fail(ChainProblem::UnknownTask {
                        domain: domain.clone(),
                        task: task.clone(),
                    })
                })?;
                match (k, &spec.arrival) {
                    (0, Arrival::Triggered { .. }) => {
                        return Err(fail(ChainProblem::FirstTriggered {
                            domain: domain.clone(),
                            task: task.clone(),
                        }))
                    }
                    (0, _) => {}
                    (
                        _,
                        Arrival::Triggered {
                            by_domain, by_task, ..
                        },
                    ) if (by_domain, by_task) == (&chain.tasks[k - 1].0, &chain.tasks[k - 1].1) => {
                    }
                    _ => {
                        return Err(fail(ChainProblem::NotLinked {
                            domain: domain.clone(),
                            task: task.clone(),
                            after_domain: chain.tasks[k - 1].0.clone(),
                            after_task: chain.tasks[k - 1].1.clone(),
                        }))
                    }
                }
            }
        }
        Ok(())
    }
}

/// How much work a run is, counted before running it: what [`SystemSpec::estimate_work`]
/// returns. Each count is an upper-leaning estimate of events in `[0, duration]`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WorkEstimate {
    /// Quantum ticks: for each pool whose policies (the pool's and every swap's) include
    /// one that ticks every quantum (the RT-Xen servers, RTDS in quantum mode),
    /// `duration ÷ quantum` on each of its pcpus (the pool's quantum, else the machine's).
    pub ticks: u64,
    /// Job releases, over every task of every domain (added domains from when they join).
    pub jobs: u64,
    /// VCPU period boundaries (replenishments, deadlines) over every VCPU with a period.
    pub periods: u64,
    /// The policies' own timers, over every policy the run starts with or swaps to, in
    /// every pool (those `xl cpupool-create` makes included), on each of its pcpus:
    /// Credit's ticks (its tick is its own, not the quantum) and the ends of ARINC 653's
    /// minor frames.
    pub policy_timers: u64,
    /// Whether `do_schedule` or a context switch costs time: each decision then takes a
    /// second step (the end of its overhead).
    pub overheads: bool,
    /// What one step costs, in steps of a small system ([`run_step_weight`]): the largest of
    /// its pools' weights, each from the pool's policies (the one it starts with and every
    /// swap's), its VCPUs and its pcpus, plus a share for the memory a very large system
    /// touches. 1 for the demo's sizes.
    pub step_weight: u64,
    /// Building the simulation (every VCPU, task and guest), in steps of a small system:
    /// [`SETUP_PER_ITEM`] for each VCPU and each task.
    pub setup: u64,
}

/// Steps of a small system to build one VCPU or one task (measured 2026-11-28: 100,000
/// one-task domains built in about 0.25 s, 2.5 µs each, about 40 steps at
/// `docs/benchmarks.md`'s 15 million steps a second).
pub const SETUP_PER_ITEM: u64 = 40;

/// What one step of a pool costs, in steps of a small system, under `policy`, with `vcpus`
/// VCPUs in the pool and `pcpus` pcpus. Fitted to CPU times measured on 2026-11-28
/// (`docs/benchmarks.md`, "What a step costs"), leaning high; `log` is `log2(vcpus / 16)`
/// (0 up to 31 VCPUs):
///
/// - the fixed-priority servers on one pcpu search an array kept in priority order (an
///   ordered index past 64 VCPUs): a search from the top usually stops early, so the cost
///   grows with the logarithm of the VCPUs, `1 + 3 log` (measured 5–6, 6–11, 12–16 and
///   18–45 at 100, 1,000, 10,000 and 100,000 VCPUs);
/// - SEDF, `sedf-ideal` and RTDS on one pcpu keep ordered queues: `1 + 2 log / 3`
///   (measured 1–2.5 at 1,000, 6–9 at 10,000, 3–9 at 100,000); Credit's run queue,
///   `1 + log / 3` (2.2, 2.8, 2.5: its steps touch more memory as the VCPUs grow); ARINC
///   653's table, 1;
/// - on several pcpus, each tick and decision asks which pcpus must decide again, a pass
///   over the pool's VCPUs and pcpus: `1 + (vcpus + pcpus) / 4` for the servers (28–80
///   measured at 64 pcpus and 256 VCPUs), `/ 32` for Credit (7), `/ 64` for RTDS (2.5).
///
/// [`run_step_weight`] adds what the memory of a very large system costs.
pub fn pool_step_weight(policy: &PolicyConfig, vcpus: u64, pcpus: u64) -> u64 {
    let server = matches!(
        policy,
        PolicyConfig::Deferrable
            | PolicyConfig::Periodic
            | PolicyConfig::Polling
            | PolicyConfig::Sporadic
            | PolicyConfig::Wcps
            | PolicyConfig::Crps
    );
    let log = u64::from((vcpus / 16).max(1).ilog2());
    let pass = vcpus.saturating_add(pcpus);
    match policy {
        _ if pcpus <= 1 && server => 1 + 3 * log,
        PolicyConfig::Sedf | PolicyConfig::SedfIdeal | PolicyConfig::Rtds(_) if pcpus <= 1 => {
            1 + 2 * log / 3
        }
        PolicyConfig::Credit(_) if pcpus <= 1 => 1 + log / 3,
        _ if pcpus <= 1 => 1,
        _ if server => 1 + pass / 4,
        PolicyConfig::Credit(_) => 1 + pass / 32,
        _ => 1 + pass / 64,
    }
}

/// What one step of a run costs, in steps of a small system: the largest
/// [`pool_step_weight`] over `pools` (policy, VCPUs, pcpus), plus one for each 32,000 VCPUs
/// of the whole run (a step of a very large system misses the caches more often).
pub fn run_step_weight<'a>(
    pools: impl IntoIterator<Item = (&'a PolicyConfig, u64, u64)>,
    vcpus: u64,
) -> u64 {
    let widest = pools
        .into_iter()
        .map(|(policy, v, p)| pool_step_weight(policy, v, p))
        .max()
        .unwrap_or(1);
    widest.saturating_add(vcpus / 32_000)
}

impl WorkEstimate {
    /// Simulation steps, about: each tick and each VCPU period one (two with overheads),
    /// each job two (its release and its finish). A step is the unit of the simulator's
    /// work: in a release build it costs roughly 50–150 ns.
    pub fn steps(&self) -> u64 {
        let per_decision = if self.overheads { 2 } else { 1 };
        self.ticks
            .saturating_add(self.periods)
            .saturating_add(self.policy_timers)
            .saturating_mul(per_decision)
            .saturating_add(self.jobs.saturating_mul(2))
    }

    /// The run's cost in steps of a small system: [`Self::steps`] × [`Self::step_weight`]
    /// + [`Self::setup`] (what a driver divides by its speed to tell how long a run takes).
    pub fn cost(&self) -> u64 {
        self.steps()
            .saturating_mul(self.step_weight.max(1))
            .saturating_add(self.setup)
    }
}

/// `a + b`, saturating (for estimates only).
fn plus(a: Nanos, b: Nanos) -> Nanos {
    Nanos(a.as_ns().saturating_add(b.as_ns()))
}

/// How many times something recurring every `every` from `first` happens in
/// `[first, end]` (0 if `first > end`), saturating.
fn occurrences(first: Nanos, every: Nanos, end: Nanos) -> u64 {
    if first > end {
        return 0;
    }
    if every.is_zero() {
        return 1;
    }
    (end - first).as_ns() / every.as_ns() + 1
}

impl SystemSpec {
    /// Counts the work of running this system for `duration` (see [`WorkEstimate`]), in
    /// time linear in the number of tasks. A driver uses it to warn about long runs before
    /// starting them.
    pub fn estimate_work(&self, duration: Nanos) -> WorkEstimate {
        let domain = |d: &DomainSpec, join: Nanos| -> (u64, u64) {
            if join > duration {
                return (0, 0);
            }
            let end = duration;
            let mut jobs: u64 = 0;
            for task in &d.tasks {
                let first = plus(join, task.offset);
                let count = match &task.arrival {
                    Arrival::Periodic | Arrival::Sporadic { .. } => {
                        occurrences(first, task.period, end)
                    }
                    Arrival::AperiodicTimes(times) => {
                        times.iter().filter(|&&t| t <= end).count() as u64
                    }
                    Arrival::Poisson { mean_gap } => occurrences(first, *mean_gap, end),
                    // At most one job per job of the task that triggers it; the period, when
                    // given, stands for that task's.
                    Arrival::Triggered { .. } if task.period.is_zero() => 0,
                    Arrival::Triggered { .. } => occurrences(first, task.period, end),
                };
                jobs = jobs.saturating_add(count);
            }
            let periods = if d.vcpu.period.is_zero() {
                0
            } else {
                occurrences(plus(join, d.vcpu.offset), d.vcpu.period, end)
                    .saturating_mul(u64::from(d.placement.vcpu_count()))
            };
            (jobs, periods)
        };
        let mut estimate = WorkEstimate {
            overheads: self.machine.overheads != Default::default(),
            step_weight: 1,
            ..WorkEstimate::default()
        };
        // Every pool the run may have, with its quantum and pcpus: the declared ones (or the
        // one `Pool-0` of every pcpu), then those `xl cpupool-create` makes, with as many
        // pcpus as `xl cpupool-cpu-add` commands name it (each from the start: upper-leaning).
        let machine_pcpus = u64::from(self.machine.pcpus.max(1));
        let mut pools: Vec<(PolicyConfig, Nanos, u64)> = self
            .pools
            .iter()
            .map(|p| {
                let quantum = p.quantum_on(&self.machine);
                (p.policy.clone(), quantum, u64::from(p.pcpus.len()))
            })
            .collect();
        let mut names: Vec<&str> = self.pools.iter().map(|p| p.name.as_str()).collect();
        for change in &self.changes {
            if let Change::Xl(XlCommand::CpupoolCreate { name, sched }) = &change.change {
                let adds = self
                    .changes
                    .iter()
                    .filter(|c| {
                        matches!(&c.change, Change::Xl(XlCommand::CpupoolCpuAdd { pool, .. })
                            if pool == name)
                    })
                    .count() as u64;
                if let Ok(policy) = self.policy_settings.config(*sched) {
                    pools.push((policy, self.machine.quantum, adds.min(machine_pcpus)));
                    names.push(name);
                }
            }
        }
        // Counted for the whole run under each policy used: an upper-leaning estimate. A
        // swap may reach every pool.
        let swaps: Vec<&PolicyConfig> = self
            .changes
            .iter()
            .filter_map(|c| match &c.change {
                Change::SwapPolicy(p) => Some(p),
                _ => None,
            })
            .collect();
        for (policy, quantum, pcpus) in &pools {
            let policies: Vec<&PolicyConfig> = std::iter::once(policy)
                .chain(swaps.iter().copied())
                .collect();
            // Each pcpu of the pool ticks as the core arms it ([`PoolSpec::tick_of`]): the
            // quantum tick if a policy used has it, and each policy's own tick (Credit's).
            let ticks =
                |every: Nanos| (duration.as_ns() / every.as_ns().max(1)).saturating_mul(*pcpus);
            let quantum_tick = policies
                .iter()
                .any(|p| matches!(PoolSpec::tick_of(p, *quantum), Some((_, true))));
            if quantum_tick {
                estimate.ticks = estimate.ticks.saturating_add(ticks(*quantum));
            }
            for policy in policies {
                let own_tick = match PoolSpec::tick_of(policy, *quantum) {
                    Some((every, false)) => ticks(every),
                    _ => 0,
                };
                // ARINC 653's minor frames end on timers of its own, one table per pcpu.
                let frames = match policy {
                    PolicyConfig::Arinc653(table) => (duration.as_ns()
                        / table.major_frame.as_ns().max(1))
                    .saturating_add(1)
                    .saturating_mul(table.minor_frames.len() as u64)
                    .saturating_mul(*pcpus),
                    _ => 0,
                };
                estimate.policy_timers = estimate
                    .policy_timers
                    .saturating_add(own_tick)
                    .saturating_add(frames);
            }
        }
        let added = self.changes.iter().filter_map(|c| match &c.change {
            Change::AddDomain(d) => Some((d, c.at)),
            _ => None,
        });
        // VCPUs per pool (a domain without a pool is in the first; one that a pool created
        // later takes by `xl cpupool-migrate` is counted where it starts).
        let mut in_pool = vec![0u64; pools.len()];
        let (mut vcpus, mut tasks) = (0u64, 0u64);
        for (d, join) in self.domains.iter().map(|d| (d, Nanos::ZERO)).chain(added) {
            let (jobs, periods) = domain(d, join);
            estimate.jobs = estimate.jobs.saturating_add(jobs);
            estimate.periods = estimate.periods.saturating_add(periods);
            let count = u64::from(d.placement.vcpu_count());
            vcpus = vcpus.saturating_add(count);
            tasks = tasks.saturating_add(d.tasks.len() as u64);
            let pool = match &d.placement.pool {
                Some(name) => names.iter().position(|n| n == name),
                None => Some(0),
            };
            if let Some(k) = pool.filter(|&k| k < in_pool.len()) {
                in_pool[k] = in_pool[k].saturating_add(count);
            }
        }
        estimate.step_weight = run_step_weight(
            pools
                .iter()
                .zip(&in_pool)
                .flat_map(|((policy, _, pcpus), &v)| {
                    std::iter::once(policy)
                        .chain(swaps.iter().copied())
                        .map(move |p| (p, v, *pcpus))
                }),
            vcpus,
        );
        estimate.setup = vcpus.saturating_add(tasks).saturating_mul(SETUP_PER_ITEM);
        estimate
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvmm_core::policy::{CreditConfig, RtdsMode};

    /// The weights by hand: a server pool of one pcpu searches from the top (log2 of its
    /// VCPUs in sixteens, three small steps each), SEDF and RTDS two thirds of that; on
    /// several pcpus a pass over VCPUs and pcpus, cheapest for RTDS; the memory share is one
    /// per 32,000 VCPUs of the run.
    #[test]
    fn a_step_weighs_by_policy_vcpus_and_pcpus() {
        let d = PolicyConfig::Deferrable;
        assert_eq!(pool_step_weight(&d, 1, 1), 1);
        assert_eq!(pool_step_weight(&d, 31, 1), 1, "31 / 16 = 1: log 0");
        assert_eq!(pool_step_weight(&d, 32, 1), 4);
        assert_eq!(
            pool_step_weight(&d, 100_000, 1),
            1 + 3 * 12,
            "6,250: log 12"
        );
        assert_eq!(pool_step_weight(&PolicyConfig::Sedf, 100_000, 1), 1 + 8);
        assert_eq!(
            pool_step_weight(&PolicyConfig::SedfIdeal, 32, 1),
            1,
            "2/3 rounds down"
        );
        let credit = PolicyConfig::Credit(CreditConfig::default());
        assert_eq!(pool_step_weight(&credit, 100_000, 1), 1 + 4);
        assert_eq!(pool_step_weight(&PolicyConfig::Crps, 256, 64), 1 + 320 / 4);
        assert_eq!(pool_step_weight(&credit, 256, 64), 1 + 320 / 32);
        let rtds = PolicyConfig::Rtds(RtdsMode::default());
        assert_eq!(pool_step_weight(&rtds, 256, 64), 1 + 320 / 64);
        // The widest pool decides; the run's VCPUs add their memory share.
        let pools = [(&d, 100, 1), (&rtds, 256, 64)];
        assert_eq!(run_step_weight(pools, 356), 7);
        assert_eq!(run_step_weight(pools, 64_356), 9);
        assert_eq!(run_step_weight([], 0), 1);
    }
}
