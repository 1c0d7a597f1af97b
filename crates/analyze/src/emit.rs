//! `--emit scenario`: the analysed input as a runnable scenario whose VCPUs are the
//! interfaces.

use std::path::Path;

use rtvmm_analysis::CartsSystem;
use rtvmm_core::guest::{GuestScheduler, TaskSpec};
use rtvmm_core::model::{VcpuParams, DEFAULT_WEIGHT};
use rtvmm_core::xl::{VcpuSel, XlCommand};
use rtvmm_core::Nanos;
use rtvmm_gen::{ServerDomain, ServerSystem};
use rtvmm_system::{Change, TimedChange};

use super::report::{DomainReport, Report};
use super::{AnalyzeError, Input};
use crate::names::ns;
use rtvmm_scenario::{weight_from_share, Scenario, DEFAULT_SEED};

/// `--emit scenario`: the input with every domain's VCPU set to its interface (budget
/// Θ·unit, period Π·unit, the report's RM priority) under the policy the analysis assumed,
/// validated, as normalised TOML.
pub fn emit_scenario(input: &Input, report: &Report) -> Result<String, AnalyzeError> {
    let vcpus = if report.pools.is_empty() {
        "each domain's VCPU is its interface (budget Θ, period Π, priority rate-monotonic by \
         period)"
    } else {
        "each domain's VCPUs are its interface (period Π, the largest budget Θ, smaller \
         budgets set by `xl sched-rtds -v` at time 0, pcpus as analysed)"
    };
    let header = format!(
        "# Emitted by `rtvmm analyze {}`: {vcpus}.\n# Verdict of the analysis: {}; \
         U_RM = {:.4}, U_W = {:.4}.\n",
        report.input,
        if report.schedulable {
            "schedulable"
        } else {
            "NOT schedulable"
        },
        report.u_rm,
        report.u_w
    );
    let scenario = match input {
        Input::Scenario(scenario) => with_interfaces(scenario, report)?,
        Input::Carts { file, system } => carts_scenario(file, system, report)?,
    };
    Ok(header + &scenario.to_toml())
}

fn no_interface(d: &DomainReport) -> AnalyzeError {
    AnalyzeError::Emit(format!(
        "domain '{}' has no interface ({}); nothing written",
        d.name,
        d.reason
            .as_deref()
            .unwrap_or("it has no tasks and no VCPU parameters")
    ))
}

fn with_interfaces(scenario: &Scenario, report: &Report) -> Result<Scenario, AnalyzeError> {
    if !report.pools.is_empty() {
        return multicore(scenario, report);
    }
    let mut out = scenario.clone();
    for (domain, d) in out.system.domains.iter_mut().zip(&report.domains) {
        let (Some(budget), Some(period), Some(priority)) = (d.budget_ns, d.period_ns, d.priority)
        else {
            return Err(no_interface(d));
        };
        // A weight derived from the old share follows the new one; a written one stays.
        let derived = derived_weight(&domain.vcpu);
        domain.vcpu.budget = ns(budget);
        domain.vcpu.period = ns(period);
        domain.vcpu.priority = priority;
        if domain.vcpu.weight == derived {
            domain.vcpu.weight = weight_from_share(domain.vcpu.budget, domain.vcpu.period);
        }
    }
    // The policy the analysis assumed (`--policy` may differ from the file's).
    if report.policy != out.policy() {
        out.system.pools[0].policy = out
            .policy_config(report.policy)
            .map_err(|e| AnalyzeError::Emit(e.to_string()))?;
    }
    out.validate()
        .map_err(|e| AnalyzeError::Emit(format!("the emitted scenario does not validate: {e}")))?;
    Ok(out)
}

/// Several pcpus: every domain gets its VCPUs — as many as its interface has, each with its
/// affinity as written — the common period and the largest budget as its `vcpu`, and an
/// `xl sched-rtds -d D -v i` at time 0 for each VCPU whose budget is smaller (the core cuts
/// the budget at once, and the multicore analysis reads it back: `--given` checks the same
/// VCPUs). Earlier `xl sched-rtds` events at time 0 are dropped: the interfaces replace them.
fn multicore(scenario: &Scenario, report: &Report) -> Result<Scenario, AnalyzeError> {
    let mut out = scenario.clone();
    let mut events = Vec::new();
    for (domain, d) in out.system.domains.iter_mut().zip(&report.domains) {
        if d.vcpus.is_empty() || d.vcpus.iter().any(|v| v.budget_ns.is_none()) {
            return Err(no_interface(d));
        }
        let (Some(budget), Some(period)) = (d.budget_ns, d.period_ns) else {
            return Err(no_interface(d));
        };
        let derived = derived_weight(&domain.vcpu);
        domain.vcpu.budget = ns(budget);
        domain.vcpu.period = ns(period);
        if let Some(priority) = d.priority {
            domain.vcpu.priority = priority;
        }
        if domain.vcpu.weight == derived {
            domain.vcpu.weight = weight_from_share(domain.vcpu.budget, domain.vcpu.period);
        }
        let count = d.vcpus.len() as u32;
        if count != domain.placement.vcpu_count() {
            domain.placement.vcpus = count;
        }
        // Each VCPU's pcpus as analysed (DMPR's full VCPUs get pcpus of their own, which
        // moves the others off them): written where narrower than the pool.
        let pool = report
            .pools
            .iter()
            .find(|p| Some(&p.name) == d.pool.as_ref());
        domain.placement.affinity = d
            .vcpus
            .iter()
            .map(|v| {
                let whole = pool.is_some_and(|p| p.pcpus == v.pcpus);
                (!whole && !v.pcpus.is_empty()).then(|| v.pcpus.clone())
            })
            .collect();
        if domain.placement.affinity.iter().all(Option::is_none) {
            domain.placement.affinity.clear();
        }
        for v in &d.vcpus {
            let own = v.budget_ns.unwrap_or(budget);
            if v.period_ns != Some(period) {
                return Err(AnalyzeError::Emit(format!(
                    "domain '{}': VCPU {} has period {}, not the domain's {}; a scenario gives \
                     every VCPU of a domain one period",
                    d.name,
                    v.index,
                    ns(v.period_ns.unwrap_or(0)),
                    ns(period)
                )));
            }
            if own == budget {
                continue;
            }
            if own % 1000 != 0 || period % 1000 != 0 {
                return Err(AnalyzeError::Emit(format!(
                    "domain '{}': VCPU {}'s budget {} is not a whole number of µs, which \
                     `xl sched-rtds` needs",
                    d.name,
                    v.index,
                    ns(own)
                )));
            }
            events.push(TimedChange {
                at: Nanos::ZERO,
                change: Change::Xl(XlCommand::SchedRtds {
                    domain: d.name.clone(),
                    vcpu: VcpuSel::One(v.index),
                    period_us: period / 1000,
                    budget_us: own / 1000,
                    extratime: None,
                }),
            });
        }
    }
    out.system.changes.retain(|c| {
        !(c.at.is_zero() && matches!(c.change, Change::Xl(XlCommand::SchedRtds { .. })))
    });
    events.append(&mut out.system.changes);
    out.system.changes = events;
    out.validate()
        .map_err(|e| AnalyzeError::Emit(format!("the emitted scenario does not validate: {e}")))?;
    Ok(out)
}

/// The weight the scenario format derives for these parameters.
fn derived_weight(vcpu: &VcpuParams) -> u32 {
    if vcpu.period.is_zero() {
        DEFAULT_WEIGHT
    } else {
        weight_from_share(vcpu.budget, vcpu.period)
    }
}

/// A new scenario from CARTS components (one level: children cannot be flattened).
fn carts_scenario(
    file: &str,
    system: &CartsSystem,
    report: &Report,
) -> Result<Scenario, AnalyzeError> {
    if let Some(c) = system.components.iter().find(|c| !c.children.is_empty()) {
        return Err(AnalyzeError::Emit(format!(
            "component '{}' has child components, which a scenario cannot express (a guest \
             runs tasks, not components)",
            c.name
        )));
    }
    let longest = report
        .domains
        .iter()
        .flat_map(|d| {
            d.tasks
                .iter()
                .map(|t| t.period_ns)
                .chain(d.period_ns)
                .collect::<Vec<_>>()
        })
        .max()
        .unwrap_or(0);
    let duration = longest.saturating_mul(20).max(1_000_000_000);
    let stem = Path::new(file)
        .file_stem()
        .map_or_else(|| "carts".to_string(), |s| s.to_string_lossy().into_owned());
    let mut domains = Vec::new();
    for d in &report.domains {
        let (Some(budget), Some(period), Some(priority)) = (d.budget_ns, d.period_ns, d.priority)
        else {
            return Err(no_interface(d));
        };
        let guest = GuestScheduler::from_name(&d.guest).ok_or_else(|| {
            AnalyzeError::Emit(format!(
                "domain '{}': guest '{}' has no scenario form",
                d.name, d.guest
            ))
        })?;
        let mut seen: Vec<String> = Vec::new();
        let mut tasks = Vec::new();
        for t in &d.tasks {
            // CARTS names need not be unique; scenario task names must be.
            let mut name = t.name.clone();
            let mut n = 2;
            while seen.contains(&name) {
                name = format!("{}#{n}", t.name);
                n += 1;
            }
            seen.push(name.clone());
            let mut task = TaskSpec::periodic(&name, ns(t.period_ns), ns(t.wcet_ns));
            task.deadline = ns(t.deadline_ns);
            tasks.push(task);
        }
        domains.push(ServerDomain {
            name: d.name.clone(),
            budget: ns(budget),
            period: ns(period),
            priority,
            guest,
            tasks,
            offset: Nanos::ZERO,
        });
    }
    let system = ServerSystem {
        name: stem,
        description: String::new(),
        domains,
    };
    Scenario::from_servers(
        file,
        &system,
        ns(duration),
        DEFAULT_SEED,
        ns(report.unit_ns),
        report.policy,
    )
    .map_err(|e| AnalyzeError::Emit(format!("the emitted scenario does not validate: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{carts, domain, scenario};
    use crate::{analyze, Options};

    #[test]
    fn emitted_scenario_validates_and_carries_the_interfaces() {
        let text = format!(
            "duration = \"1s\"\n{}{}",
            domain("a", "", &[("t1", "7ms", "2ms"), ("t2", "8ms", "1ms")]),
            domain("b", "", &[("t", "50ms", "5ms")])
        );
        let input = Input::Scenario(scenario(&text));
        let report = analyze(&input, &Options::default()).unwrap();
        let emitted = emit_scenario(&input, &report).unwrap();
        let back = Scenario::from_toml(&emitted, "emitted.toml").unwrap();
        for (domain, d) in back.system.domains.iter().zip(&report.domains) {
            assert_eq!(Some(domain.vcpu.budget.as_ns()), d.budget_ns);
            assert_eq!(Some(domain.vcpu.period.as_ns()), d.period_ns);
            assert_eq!(Some(domain.vcpu.priority), d.priority);
        }
    }

    /// A CARTS component with two tasks of one name (CARTS allows it) becomes a domain
    /// whose tasks are `t` and `t#2`, each with its period, wcet and deadline in the unit
    /// (1 ms), under the interface the analysis chose; the file reads back and runs.
    #[test]
    fn carts_input_emits_a_scenario_with_unique_task_names() {
        let input = carts(
            r#"<system os_scheduler="RM">
  <component name="c" scheduler="RM">
    <task name="t" p="10" e="1"/>
    <task name="t" p="20" d="15" e="2"/>
  </component>
</system>"#,
        );
        let report = analyze(&input, &Options::default()).unwrap();
        let emitted = emit_scenario(&input, &report).unwrap();
        let back = Scenario::from_toml(&emitted, "emitted.toml").unwrap();
        assert_eq!(back.name, "test");
        assert_eq!(back.system.machine.quantum, Nanos::from_ms(1));
        let d = &back.system.domains[0];
        assert_eq!(d.name, "c");
        assert_eq!(Some(d.vcpu.budget.as_ns()), report.domains[0].budget_ns);
        assert_eq!(Some(d.vcpu.period.as_ns()), report.domains[0].period_ns);
        let tasks: Vec<(&str, u64, u64, u64)> = d
            .tasks
            .iter()
            .map(|t| {
                (
                    t.name.as_str(),
                    t.period.as_ns() / 1_000_000,
                    t.wcet.as_ns() / 1_000_000,
                    t.deadline.as_ns() / 1_000_000,
                )
            })
            .collect();
        assert_eq!(tasks, vec![("t", 10, 1, 10), ("t#2", 20, 2, 15)]);
        // 20 × the longest period, at least 1 s.
        assert_eq!(back.duration, Nanos::from_ms(1000));
    }
}
