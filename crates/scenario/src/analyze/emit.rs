//! `--emit scenario`: the analysed input as a runnable scenario whose VCPUs are the
//! interfaces.

use std::fmt::Write as _;
use std::path::Path;

use rtvmm_analysis::CartsSystem;
use rtvmm_core::model::{VcpuParams, DEFAULT_WEIGHT};

use super::render::ns;
use super::report::{DomainReport, Report};
use super::{AnalyzeError, Input};
use crate::{weight_from_share, Scenario};

/// `--emit scenario`: the input with every domain's VCPU set to its interface (budget
/// Θ·unit, period Π·unit, the report's RM priority) under the policy the analysis assumed,
/// validated, as normalised TOML.
pub fn emit_scenario(input: &Input, report: &Report) -> Result<String, AnalyzeError> {
    let header = format!(
        "# Emitted by `rtvmm analyze {}`: each domain's VCPU is its interface (budget Θ, \
         period Π, priority rate-monotonic by period).\n# Verdict of the analysis: {}; \
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
        out.system.policy = out
            .policy_config(report.policy)
            .map_err(|e| AnalyzeError::Emit(e.to_string()))?;
    }
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
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    let time = |v: u64| quote(&ns(v).to_string());
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
    let mut text = String::new();
    let _ = writeln!(text, "name = {}", quote(&stem));
    let _ = writeln!(text, "duration = {}", time(duration));
    let _ = writeln!(text, "[machine]\nquantum = {}", time(report.unit_ns));
    let _ = writeln!(text, "replenishment = \"exact\"");
    let _ = writeln!(
        text,
        "[scheduler]\npolicy = {}",
        quote(report.policy.name())
    );
    for d in &report.domains {
        let (Some(budget), Some(period), Some(priority)) = (d.budget_ns, d.period_ns, d.priority)
        else {
            return Err(no_interface(d));
        };
        let _ = writeln!(text, "[[domain]]\nname = {}", quote(&d.name));
        let _ = writeln!(text, "guest = {}", quote(&d.guest));
        let _ = writeln!(
            text,
            "vcpu = {{ budget = {}, period = {}, priority = {priority} }}",
            time(budget),
            time(period)
        );
        let mut seen: Vec<String> = Vec::new();
        for t in &d.tasks {
            // CARTS names need not be unique; scenario task names must be.
            let mut name = t.name.clone();
            let mut n = 2;
            while seen.contains(&name) {
                name = format!("{}#{n}", t.name);
                n += 1;
            }
            seen.push(name.clone());
            let _ = writeln!(
                text,
                "[[domain.task]]\nname = {}\nperiod = {}\nwcet = {}\ndeadline = {}",
                quote(&name),
                time(t.period_ns),
                time(t.wcet_ns),
                time(t.deadline_ns)
            );
        }
    }
    Scenario::from_toml(&text, file)
        .map_err(|e| AnalyzeError::Emit(format!("the emitted scenario does not validate: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyze::tests::{domain, scenario};
    use crate::analyze::{analyze, Options};

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
}
