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
use std::ops::ControlFlow;

use rtvmm_core::machine::{MachineConfig, OverheadCharge, Overheads, ReplenishMode};
use rtvmm_core::policy::{CreditConfig, PolicyConfig, PolicyKind, PolicySettings};
use rtvmm_core::Nanos;
use rtvmm_sim::Simulation;
use rtvmm_system::results::RunResults;
use rtvmm_system::SystemSpec;

use crate::error::ExperimentError;

/// One domain of a server scenario (the gen crate's: its server, guest and tasks, and
/// when it boots).
pub use rtvmm_gen::ServerDomain;

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
/// papers' 1 ms setting (`docs/experiments.md`: "where a procedure runs Credit, run it twice").
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

/// The policy-wide configuration of `kind` for a server scenario: the core's defaults
/// (Credit at Xen 4.0's), and no ARINC 653 table.
pub fn policy_config(kind: PolicyKind) -> Result<PolicyConfig, ExperimentError> {
    PolicySettings::default()
        .config(kind)
        .map_err(|e| ExperimentError::UnsupportedPolicy {
            policy: kind.name().to_string(),
            reason: format!("{e}, which a server scenario does not define"),
        })
}

/// One pcpu with the given quantum and overheads, exact replenishment.
pub fn machine(quantum: Nanos, overheads: Overheads) -> MachineConfig {
    MachineConfig {
        pcpus: 1,
        quantum,
        replenishment: ReplenishMode::Exact,
        overheads,
        overhead_charge: OverheadCharge::default(),
        wake_delivery: rtvmm_core::wake::WakeDelivery::OFF,
    }
}

/// One pcpu as the RT-Xen 2011 experiments (`rtxen-*`) ran it: replenishment at the tick
/// (`replenishment = "tick"`), because that implementation scanned its replenishment queue
/// once per quantum. Only the policies that tick at the quantum (the RT-Xen servers) see a
/// difference; Credit, SEDF and RTDS keep their own timing. Reports say so with
/// [`RTXEN_REPLENISHMENT`].
pub fn rtxen_machine(quantum: Nanos, overheads: Overheads) -> MachineConfig {
    MachineConfig {
        replenishment: ReplenishMode::Tick,
        ..machine(quantum, overheads)
    }
}

/// The report line of every `rtxen-*` experiment on [`rtxen_machine`].
pub const RTXEN_REPLENISHMENT: &str = "Replenishment at the tick (replenishment = \"tick\"), as \
    in the 2011 implementation, which scanned its replenishment queue once per quantum: a \
    server's budget comes back at the first tick at or after its period boundary. Credit and \
    SEDF keep their own timing.";

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
    Ok(SystemSpec {
        chains: Vec::new(),
        policy_settings: Default::default(),
        domains: domains.iter().map(ServerDomain::domain_spec).collect(),
        changes: Vec::new(),
        ..SystemSpec::one_pool(machine, config.clone())
    })
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
    // A signal stops the run in progress (the sweep drops it): see `crate::cancel`.
    let reached = sim
        .run_until_with(duration, |_| {
            if crate::cancel::is_current_cancelled() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        })
        .map_err(sim_err)?;
    if reached < duration {
        return Err(ExperimentError::Stopped {
            run: scenario.to_string(),
        });
    }
    let results = sim.results(scenario, seed, duration);
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
    use rtvmm_core::guest::{Arrival, GuestScheduler, TaskSpec};

    /// The rtxen-* machine differs from the others only in replenishing at the tick.
    #[test]
    fn rtxen_machine_replenishes_at_the_tick() {
        let (q, o) = (Nanos::from_ms(1), Overheads::default());
        assert_eq!(rtxen_machine(q, o).replenishment, ReplenishMode::Tick);
        assert_eq!(
            MachineConfig {
                replenishment: ReplenishMode::Exact,
                ..rtxen_machine(q, o)
            },
            machine(q, o)
        );
    }

    #[test]
    fn derivation_per_policy() {
        let b = Nanos::from_ms(4);
        let p = Nanos::from_ms(20);
        let domain = |offset| ServerDomain {
            name: "d".into(),
            budget: b,
            period: p,
            priority: 2,
            guest: GuestScheduler::Rm,
            tasks: Vec::new(),
            offset,
        };
        let v = domain(Nanos::ZERO).vcpu_params();
        assert_eq!((v.weight, v.cap), (2000, 0), "Credit: weight of the share");
        assert_eq!(
            (v.budget, v.period, v.extratime),
            (b, p, Some(false)),
            "servers, SEDF, RTDS: extratime off"
        );
        assert_eq!(v.priority, 2);
        assert_eq!(
            domain(Nanos::from_ms(3)).vcpu_params().offset,
            Nanos::from_ms(3)
        );
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
