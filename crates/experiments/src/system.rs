//! Turning a server scenario (domains with budget, period, priority) into a runnable
//! system under any policy, and running it.
//!
//! # Deriving each policy's parameters from a server scenario
//! The published experiments describe every domain by a server (budget B, period P,
//! priority) and then run the same domains under other schedulers. The derivation
//! (issue 2, "Scenario files"):
//! - the fixed-priority servers (deferrable, periodic, polling, sporadic, wcps, crps) and
//!   RTDS: B, P and the priority as given, extratime off;
//! - credit: weight ∝ B/P, as `round(10000·B/P)` (at least 1), cap 0 (no cap), with the
//!   papers' 1 ms time slice and Xen's 30 ms accounting period ([`credit_config`]);
//! - sedf: slice = B, period = P, extratime off;
//! - arinc653 needs a schedule table that a server scenario does not have: refused.

use rtvmm_core::guest::{GuestScheduler, TaskSpec};
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
}

/// Credit as the papers ran it: the "1 ms" setting (1 ms tick, 1 ms time slice).
pub fn credit_config() -> CreditConfig {
    CreditConfig::one_ms()
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
        PolicyKind::Credit => PolicyConfig::Credit(credit_config()),
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

/// The VCPU parameters of a server domain under `kind` (see the module note).
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

/// The system of `domains` under `kind` on `machine`.
pub fn build_system(
    domains: &[ServerDomain],
    kind: PolicyKind,
    machine: MachineConfig,
) -> Result<SystemSpec, ExperimentError> {
    Ok(SystemSpec {
        machine,
        policy: policy_config(kind)?,
        domains: domains
            .iter()
            .map(|d| DomainSpec {
                name: d.name.clone(),
                vcpu: vcpu_params(kind, d.budget, d.period, d.priority),
                guest: d.guest,
                tasks: d.tasks.clone(),
            })
            .collect(),
        changes: Vec::new(),
    })
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
            PolicyConfig::Credit(credit_config())
        );
        assert!(policy_config(PolicyKind::Arinc653).is_err());
    }
}
