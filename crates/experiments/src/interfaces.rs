//! Domain interfaces from the analysis crate, as servers the simulator can run.
//!
//! - [`optimal_interfaces`]: each domain's bandwidth-optimal integer interface (the 2012
//!   paper's Algorithm 1, `docs/analysis.md`) with the quantum as the unit — every task time
//!   must then be a whole number of quanta (the csa generator makes whole milliseconds).
//! - [`fixed_period_interfaces`]: `(Π, MinExec(Π))` for domains whose period is fixed
//!   (ARINC-653 partitions). The analysis runs in the finest unit the task times need (the
//!   gcd of every time), exactly; the budget is then rounded **up** to a whole quantum,
//!   which keeps the domain schedulable (the supply bound grows with the budget) and
//!   shows as extra interface overhead.
//!
//! Servers get rate-monotonic priorities by interface period, ties by domain order
//! ([`rm_priorities`], the analysis crate's [`rate_monotonic_ranks`]).

use crate::figures::decimal;
use rtvmm_analysis::{
    fixed_period_interface, optimal_interface, rate_monotonic_ranks, GuestScheduler, SbfMode,
    SearchOptions, Task, Workload,
};
use rtvmm_core::Nanos;
use rtvmm_gen::{GenDomain, GenSystem, ServerDomain};

use crate::error::ExperimentError;

/// A domain's interface, as a server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainInterface {
    pub name: String,
    pub period: Nanos,
    pub budget: Nanos,
}

impl DomainInterface {
    /// budget ÷ period.
    pub fn bandwidth(&self) -> f64 {
        self.budget.as_ns() as f64 / self.period.as_ns() as f64
    }
}

/// The domain's tasks as an analysis workload in units of `unit` (every time must be a
/// whole number of units).
pub fn workload(domain: &GenDomain, unit: Nanos) -> Result<Workload, ExperimentError> {
    let units = |t: Nanos, what: &str| -> Result<u64, ExperimentError> {
        if t.as_ns().checked_rem(unit.as_ns()) != Some(0) {
            return Err(ExperimentError::Analysis(format!(
                "domain {}: {what} {t} is not a whole number of {unit}",
                domain.name
            )));
        }
        Ok(t.as_ns() / unit.as_ns())
    };
    let tasks = domain
        .tasks
        .iter()
        .map(|t| {
            Ok(Task::with_deadline(
                units(t.period, "period")?,
                units(t.wcet, "wcet")?,
                units(t.deadline, "deadline")?,
            ))
        })
        .collect::<Result<Vec<Task>, ExperimentError>>()?;
    Workload::new(tasks)
        .map_err(|e| ExperimentError::Analysis(format!("domain {}: {e}", domain.name)))
}

/// Each domain's bandwidth-optimal integer interface, in whole quanta.
pub fn optimal_interfaces(
    system: &GenSystem,
    quantum: Nanos,
    mode: SbfMode,
) -> Result<Vec<DomainInterface>, ExperimentError> {
    let options = SearchOptions {
        mode,
        guest: GuestScheduler::Rm,
        ..SearchOptions::default()
    };
    system
        .domains
        .iter()
        .map(|domain| {
            let w = workload(domain, quantum)?;
            let found = optimal_interface(&w, &options)
                .map_err(|e| ExperimentError::Analysis(format!("domain {}: {e}", domain.name)))?;
            Ok(DomainInterface {
                name: domain.name.clone(),
                period: Nanos(found.interface.period * quantum.as_ns()),
                budget: Nanos(found.interface.budget * quantum.as_ns()),
            })
        })
        .collect()
}

/// `(Π, MinExec(Π))` for every domain with a fixed period, the budget rounded up to a whole
/// quantum (see the module note).
pub fn fixed_period_interfaces(
    system: &GenSystem,
    quantum: Nanos,
    mode: SbfMode,
) -> Result<Vec<DomainInterface>, ExperimentError> {
    system
        .domains
        .iter()
        .map(|domain| {
            let period = domain.fixed_period.ok_or_else(|| {
                ExperimentError::Analysis(format!("domain {} has no fixed period", domain.name))
            })?;
            if period.as_ns().checked_rem(quantum.as_ns()) != Some(0) {
                return Err(ExperimentError::Analysis(format!(
                    "domain {}: period {period} is not a whole number of quanta ({quantum})",
                    domain.name
                )));
            }
            let unit = domain
                .tasks
                .iter()
                .flat_map(|t| [t.period, t.wcet, t.deadline])
                .fold(period, Nanos::gcd);
            let w = workload(domain, unit)?;
            let found =
                fixed_period_interface(&w, period.as_ns() / unit.as_ns(), mode, GuestScheduler::Rm)
                    .map_err(|e| {
                        ExperimentError::Analysis(format!("domain {}: {e}", domain.name))
                    })?;
            let budget_ns = found.budget * unit.as_ns();
            let budget = Nanos(budget_ns.div_ceil(quantum.as_ns()) * quantum.as_ns()).min(period);
            Ok(DomainInterface {
                name: domain.name.clone(),
                period,
                budget,
            })
        })
        .collect()
}

/// Rate-monotonic priorities (1 = highest) by interface period, ties by domain order.
pub fn rm_priorities(interfaces: &[DomainInterface]) -> Vec<u32> {
    let periods: Vec<Option<Nanos>> = interfaces.iter().map(|i| Some(i.period)).collect();
    rate_monotonic_ranks(&periods)
        .into_iter()
        .map(|rank| rank.map_or(0, |rank| rank as u32 + 1))
        .collect()
}

/// The domains of `system` served by their `interfaces` (one per domain, in order), as
/// server domains under `rm` guests booting at 0, priorities by [`rm_priorities`].
pub fn interface_servers(system: &GenSystem, interfaces: &[DomainInterface]) -> Vec<ServerDomain> {
    let priorities = rm_priorities(interfaces);
    system
        .domains
        .iter()
        .zip(interfaces)
        .zip(priorities)
        .map(|((domain, interface), priority)| ServerDomain {
            name: domain.name.clone(),
            budget: interface.budget,
            period: interface.period,
            priority,
            guest: rtvmm_core::guest::GuestScheduler::Rm,
            tasks: domain.task_specs(),
            offset: Nanos::ZERO,
        })
        .collect()
}

/// One sentence per system: every interface with its bandwidth beside its domain's
/// utilisation, then `U_RM`, `U_W` and their difference (for reports and file headers).
pub fn interface_note(system: &GenSystem, interfaces: &[DomainInterface]) -> String {
    let parts: Vec<String> = interfaces
        .iter()
        .zip(&system.domains)
        .map(|(i, d)| {
            format!(
                "{} ({}, {}) bandwidth {} for utilisation {}",
                i.name,
                i.period,
                i.budget,
                decimal(i.bandwidth(), 4),
                decimal(d.utilisation(), 4)
            )
        })
        .collect();
    let u_rm: f64 = interfaces.iter().map(DomainInterface::bandwidth).sum();
    format!(
        "Interfaces (period, budget): {}; U_RM = {u_rm}, U_W = {}, U_RM − U_W = {}.",
        parts.join("; "),
        decimal(system.total_utilisation(), 4),
        decimal(u_rm - system.total_utilisation(), 4),
        u_rm = decimal(u_rm, 4)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvmm_gen::GenTask;

    fn ms(x: u64) -> Nanos {
        Nanos::from_ms(x)
    }

    #[test]
    fn optimal_interface_of_the_spec_example_in_quanta() {
        // docs/analysis.md: W = {(25,3), (50,5), (100,4)} → (7, 2) with the general sbf.
        let system = GenSystem {
            domains: vec![GenDomain {
                name: "d1".into(),
                tasks: vec![
                    GenTask::new("a", ms(25), ms(3)),
                    GenTask::new("b", ms(50), ms(5)),
                    GenTask::new("c", ms(100), ms(4)),
                ],
                fixed_period: None,
            }],
            description: String::new(),
        };
        let found = optimal_interfaces(&system, ms(1), SbfMode::General).unwrap();
        assert_eq!((found[0].period, found[0].budget), (ms(7), ms(2)));
        // Sub-quantum times are refused, not rounded.
        let mut odd = system.clone();
        odd.domains[0].tasks[0].wcet = Nanos::from_us(2500);
        assert!(optimal_interfaces(&odd, ms(1), SbfMode::General).is_err());
    }

    #[test]
    fn fixed_period_budgets_round_up_to_the_quantum() {
        // One task of 1.5 ms every 25 ms in a 25 ms partition (harmonic, auto sbf): the
        // exact budget is 1.5 ms, which becomes 2 ms.
        let system = GenSystem {
            domains: vec![GenDomain {
                name: "p1".into(),
                tasks: vec![GenTask::new("t", ms(25), Nanos::from_us(1500))],
                fixed_period: Some(ms(25)),
            }],
            description: String::new(),
        };
        let found = fixed_period_interfaces(&system, ms(1), SbfMode::Auto).unwrap();
        assert_eq!((found[0].period, found[0].budget), (ms(25), ms(2)));
    }

    #[test]
    fn priorities_are_rate_monotonic_by_interface_period() {
        let i = |p| DomainInterface {
            name: String::new(),
            period: ms(p),
            budget: ms(1),
        };
        assert_eq!(
            rm_priorities(&[i(30), i(10), i(30), i(20)]),
            vec![3, 1, 4, 2]
        );
    }
}
