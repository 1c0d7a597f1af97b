//! Turning a server scenario (domains with budget, period, priority) into a runnable
//! system under any policy, and running it.
//!
//! # Deriving each policy's parameters from a server scenario
//! The published experiments describe every domain by a server (budget B, period P,
//! priority) and then run the same domains under other schedulers. The derivation
//! (issue 2, "Scenario files"):
//! - the fixed-priority servers (deferrable, periodic, polling, sporadic, wcps, crps) and
//!   RTDS: B, P and the priority as given, extratime off;
//! - credit: weight ∝ B/P, as `round(10000·B/P)` (at least 1), cap 0 (no cap); by default
//!   at Xen 4.0's defaults (10 ms tick, 30 ms slice, 30 ms accounting). Where a procedure
//!   runs Credit it runs it twice ([`run_policies`]): `credit` at those defaults and
//!   `credit-1ms` at the papers' "1 ms" setting (1 ms tick, 1 ms slice);
//! - sedf: slice = B, period = P, extratime off;
//! - arinc653 needs a schedule table that a server scenario does not have: refused.
//!
//! A domain may **boot late** ([`ServerDomain::offset`]): its VCPU's first period and its
//! guest's first releases start at that instant, as when domains are started one after
//! another.

use std::fmt;

use rtvmm_core::guest::{Arrival, GuestScheduler, TaskSpec};
use rtvmm_core::machine::{MachineConfig, OverheadCharge, Overheads, ReplenishMode};
use rtvmm_core::model::VcpuParams;
use rtvmm_core::policy::{CreditConfig, PolicyConfig, PolicyKind, RtdsMode};
use rtvmm_core::Nanos;
use rtvmm_gen::GenDomain;
use rtvmm_sim::results::RunResults;
use rtvmm_sim::{DomainSpec, Simulation, SystemSpec};

use crate::error::ExperimentError;

/// Credit weights are `round(CREDIT_WEIGHT_SCALE · B / P)`.
pub const CREDIT_WEIGHT_SCALE: u64 = 10_000;

/// One domain of a server scenario: its server and its tasks.
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

/// The label of Credit at Xen 4.0's defaults (10 ms tick, 30 ms slice, 30 ms accounting).
pub const CREDIT_XEN40: &str = "credit";
/// The label of Credit at the papers' "1 ms" setting (1 ms tick, 1 ms slice).
pub const CREDIT_1MS: &str = "credit-1ms";

/// A policy as an experiment runs it: its configuration and the label its rows and
/// curves carry (`credit` and `credit-1ms` are two configurations of one policy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunPolicy {
    pub label: &'static str,
    pub config: PolicyConfig,
}

impl RunPolicy {
    /// The policy's kind.
    pub fn kind(&self) -> PolicyKind {
        self.config.kind()
    }

    /// What the label stands for, for reports (`credit-1ms: 1 ms tick, 1 ms slice, …`).
    pub fn describe(&self) -> String {
        match &self.config {
            PolicyConfig::Credit(c) => format!(
                "{}: Credit with a {} tick, {} slice, accounting every {}",
                self.label,
                c.tick,
                c.slice(),
                c.accounting_period()
            ),
            _ => self.label.to_string(),
        }
    }
}

impl fmt::Display for RunPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label)
    }
}

/// The runs of `kinds`, in order: each policy once at [`policy_config`], except Credit,
/// which runs twice — [`CREDIT_XEN40`] at Xen 4.0's defaults, then [`CREDIT_1MS`] at the
/// papers' 1 ms setting (`experiments.md`: "where a procedure runs Credit, run it twice").
pub fn run_policies(kinds: &[PolicyKind]) -> Result<Vec<RunPolicy>, ExperimentError> {
    let mut runs = Vec::new();
    for &kind in kinds {
        runs.push(RunPolicy {
            label: kind.name(),
            config: policy_config(kind)?,
        });
        if kind == PolicyKind::Credit {
            runs.push(RunPolicy {
                label: CREDIT_1MS,
                config: PolicyConfig::Credit(CreditConfig::one_ms()),
            });
        }
    }
    Ok(runs)
}

/// The labels of `runs`, comma-separated, for the report.
pub fn run_labels(runs: &[RunPolicy]) -> String {
    runs.iter().map(|r| r.label).collect::<Vec<_>>().join(", ")
}

/// The policy-wide configuration of `kind` for a server scenario.
pub fn policy_config(kind: PolicyKind) -> Result<PolicyConfig, ExperimentError> {
    Ok(match kind {
        PolicyKind::Deferrable => PolicyConfig::Deferrable,
        PolicyKind::Periodic => PolicyConfig::Periodic,
        PolicyKind::Polling => PolicyConfig::Polling,
        PolicyKind::Sporadic => PolicyConfig::Sporadic,
        PolicyKind::Wcps => PolicyConfig::Wcps,
        PolicyKind::Crps => PolicyConfig::Crps,
        PolicyKind::Credit => PolicyConfig::Credit(CreditConfig::default()),
        PolicyKind::Sedf => PolicyConfig::Sedf,
        PolicyKind::Rtds => PolicyConfig::Rtds(RtdsMode::default()),
        PolicyKind::Arinc653 => {
            return Err(ExperimentError::UnsupportedPolicy {
                policy: kind.name().to_string(),
                reason: "ARINC 653 needs a schedule table, which a server scenario does not \
                         define"
                    .to_string(),
            })
        }
    })
}

/// `round(10000 · budget / period)`, at least 1, in integers.
pub fn credit_weight(budget: Nanos, period: Nanos) -> u32 {
    let (b, p) = (budget.as_ns() as u128, period.as_ns().max(1) as u128);
    let w = (CREDIT_WEIGHT_SCALE as u128 * b + p / 2) / p;
    w.clamp(1, u32::MAX as u128) as u32
}

/// The VCPU parameters of a server domain under `kind` (see the module note), first period
/// at the VCPU's insertion.
pub fn vcpu_params(kind: PolicyKind, budget: Nanos, period: Nanos, priority: u32) -> VcpuParams {
    let mut params = VcpuParams::server(budget, period, priority);
    params.extratime = false;
    if kind == PolicyKind::Credit {
        params.weight = credit_weight(budget, period);
        params.cap = 0;
    }
    params
}

/// One pcpu with the given quantum and overheads, exact replenishment.
pub fn machine(quantum: Nanos, overheads: Overheads) -> MachineConfig {
    MachineConfig {
        pcpus: 1,
        quantum,
        replenishment: ReplenishMode::Exact,
        overheads,
        overhead_charge: OverheadCharge::default(),
    }
}

/// The system of `domains` under `kind` (at [`policy_config`]) on `machine`.
pub fn build_system(
    domains: &[ServerDomain],
    kind: PolicyKind,
    machine: MachineConfig,
) -> Result<SystemSpec, ExperimentError> {
    build_system_with(domains, &policy_config(kind)?, machine)
}

/// The system of `domains` under the policy `config` on `machine`. A domain that boots at
/// an offset gets it as its VCPU's offset and as a delay of every task's first release.
pub fn build_system_with(
    domains: &[ServerDomain],
    config: &PolicyConfig,
    machine: MachineConfig,
) -> Result<SystemSpec, ExperimentError> {
    let kind = config.kind();
    Ok(SystemSpec {
        machine,
        policy: config.clone(),
        domains: domains
            .iter()
            .map(|d| {
                let mut vcpu = vcpu_params(kind, d.budget, d.period, d.priority);
                vcpu.offset = d.offset;
                DomainSpec {
                    name: d.name.clone(),
                    vcpu,
                    guest: d.guest,
                    tasks: d.tasks.iter().map(|t| delayed(t, d.offset)).collect(),
                }
            })
            .collect(),
        changes: Vec::new(),
    })
}

/// `task` with its first release `by` later (listed aperiodic times are all moved, since
/// the guest does not add the offset to them).
fn delayed(task: &TaskSpec, by: Nanos) -> TaskSpec {
    let mut task = task.clone();
    match &mut task.arrival {
        Arrival::AperiodicTimes(times) => {
            for t in times.iter_mut() {
                *t += by;
            }
        }
        Arrival::Periodic | Arrival::Sporadic { .. } | Arrival::Poisson { .. } => {
            task.offset += by;
        }
    }
    task
}

/// A generated domain's tasks as periodic task specs (deadline = period, etf = 1).
pub fn gen_tasks(domain: &GenDomain) -> Vec<TaskSpec> {
    domain
        .tasks
        .iter()
        .map(|t| {
            let mut spec = TaskSpec::periodic(&t.name, t.period, t.wcet);
            spec.deadline = t.deadline;
            spec
        })
        .collect()
}

/// Runs `system` for `duration` and collects its results. Invariant checks after every
/// step are off (the simulator's own tests run with them); results are the same either
/// way.
pub fn simulate(
    system: &SystemSpec,
    scenario: &str,
    seed: u64,
    duration: Nanos,
) -> Result<RunResults, ExperimentError> {
    simulate_with(system, scenario, seed, duration, |_| ()).map(|(r, ())| r)
}

/// Like [`simulate`], and also hands the finished simulation to `extract` (for per-job
/// samples: `sim.domains()[d].finished`, `sim.pending_jobs(d)`).
pub fn simulate_with<X>(
    system: &SystemSpec,
    scenario: &str,
    seed: u64,
    duration: Nanos,
    extract: impl FnOnce(&Simulation) -> X,
) -> Result<(RunResults, X), ExperimentError> {
    let sim_err = |error| ExperimentError::Sim {
        run: scenario.to_string(),
        error,
    };
    let mut sim = Simulation::new(system, seed, false).map_err(sim_err)?;
    sim.set_check_invariants(false);
    sim.run_until(duration).map_err(sim_err)?;
    let results = RunResults::collect(&sim, scenario, seed, duration);
    let extra = extract(&sim);
    Ok((results, extra))
}

/// Responsiveness (response time ÷ relative deadline) of every counted job of domain
/// `domain`: finished jobs exactly; unfinished jobs whose deadline is at or before `end`
/// (missed) at the lower bound `(end − release) ÷ deadline`, which is at least 1. Jobs
/// in flight are left out, as in every ratio.
pub fn responsiveness_samples(sim: &Simulation, domain: usize, end: Nanos) -> Vec<f64> {
    let run = &sim.domains()[domain];
    let mut samples = Vec::new();
    for (task, jobs) in run.finished.iter().enumerate() {
        let relative = run.spec.tasks[task].deadline.as_ns().max(1) as f64;
        for job in jobs {
            if let Some(finish) = job.finish {
                samples.push((finish - job.release).as_ns() as f64 / relative);
            }
        }
    }
    if run.removed_at.is_none() {
        for (task, job) in sim.pending_jobs(domain) {
            if job.deadline <= end {
                let relative = run.spec.tasks[task].deadline.as_ns().max(1) as f64;
                samples.push((end - job.release).as_ns() as f64 / relative);
            }
        }
    }
    samples
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credit_weight_is_proportional_to_share_rounded() {
        assert_eq!(credit_weight(Nanos::from_ms(2), Nanos::from_ms(10)), 2000);
        assert_eq!(credit_weight(Nanos::from_ms(2), Nanos::from_ms(3)), 6667);
        assert_eq!(credit_weight(Nanos(1), Nanos::from_secs(1)), 1);
    }

    #[test]
    fn derivation_per_policy() {
        let b = Nanos::from_ms(4);
        let p = Nanos::from_ms(20);
        let credit = vcpu_params(PolicyKind::Credit, b, p, 2);
        assert_eq!((credit.weight, credit.cap), (2000, 0));
        let sedf = vcpu_params(PolicyKind::Sedf, b, p, 2);
        assert_eq!((sedf.budget, sedf.period, sedf.extratime), (b, p, false));
        let ds = vcpu_params(PolicyKind::Deferrable, b, p, 2);
        assert_eq!(ds, VcpuParams::server(b, p, 2));
        assert_eq!(
            policy_config(PolicyKind::Credit).unwrap(),
            PolicyConfig::Credit(CreditConfig::default())
        );
        assert!(policy_config(PolicyKind::Arinc653).is_err());
    }

    #[test]
    fn credit_runs_twice_labelled_after_its_setting() {
        let runs = run_policies(&[PolicyKind::Deferrable, PolicyKind::Credit]).unwrap();
        let labels: Vec<&str> = runs.iter().map(|r| r.label).collect();
        assert_eq!(labels, ["deferrable", "credit", "credit-1ms"]);
        assert_eq!(
            runs[1].config,
            PolicyConfig::Credit(CreditConfig {
                tick: Nanos::from_ms(10),
                ticks_per_slice: 3,
                ticks_per_accounting: 3
            })
        );
        let PolicyConfig::Credit(one) = runs[2].config.clone() else {
            panic!("not credit")
        };
        assert_eq!(
            (one.tick, one.slice()),
            (Nanos::from_ms(1), Nanos::from_ms(1))
        );
        assert!(
            runs[2].describe().contains("1ms slice"),
            "{}",
            runs[2].describe()
        );
    }

    #[test]
    fn a_late_domain_delays_its_vcpu_and_every_first_release() {
        let mut periodic = TaskSpec::periodic("p", Nanos::from_ms(10), Nanos::from_ms(1));
        periodic.offset = Nanos::from_ms(2);
        let mut listed = TaskSpec::periodic("l", Nanos::from_ms(10), Nanos::from_ms(1));
        listed.arrival = Arrival::AperiodicTimes(vec![Nanos::ZERO, Nanos::from_ms(5)]);
        let domain = ServerDomain {
            name: "d".into(),
            budget: Nanos::from_ms(2),
            period: Nanos::from_ms(10),
            priority: 1,
            guest: GuestScheduler::Rm,
            tasks: vec![periodic, listed],
            offset: Nanos::from_us(3_500),
        };
        let system = build_system(
            &[domain],
            PolicyKind::Deferrable,
            machine(Nanos::from_ms(1), Overheads::default()),
        )
        .unwrap();
        let d = &system.domains[0];
        assert_eq!(d.vcpu.offset, Nanos::from_us(3_500));
        assert_eq!(d.tasks[0].offset, Nanos::from_us(5_500));
        assert_eq!(
            d.tasks[1].arrival,
            Arrival::AperiodicTimes(vec![Nanos::from_us(3_500), Nanos::from_us(8_500)])
        );
        assert_eq!(d.tasks[1].offset, Nanos::ZERO);
    }
}
