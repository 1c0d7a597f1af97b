//! CARTS components as analysis input: each top-level component is a domain, its child
//! components enter as periodic tasks `(Π, Θ)` of their parent (the analysis crate's
//! [`CartsSystem::to_domains`]).

use rtvmm_analysis::{CartsSystem, GuestScheduler as AnalysisGuest, InterfaceChoice};
use rtvmm_core::model::DEFAULT_MAX_REPLENISHMENTS;

use super::{assign_levels, Draft, TaskInput};
use crate::names::guest_name;
use crate::names::{InterfaceSource, TaskKind};
use crate::{AnalyzeError, Options};

/// CARTS components as domains; child components are tasks `(Π, Θ)` of their parent.
pub(super) fn drafts(
    file: &str,
    system: &CartsSystem,
    unit: u64,
    options: &Options,
    notes: &mut Vec<String>,
) -> Result<Vec<Draft>, AnalyzeError> {
    let specs = system
        .to_domains(options.sbf)
        .map_err(|error| AnalyzeError::Carts {
            file: file.to_string(),
            error,
        })?;
    notes.push(
        "CARTS tasks are taken as periodic, released together at time 0 (the harmonic sbf's \
         assumption)"
            .to_string(),
    );
    let mut out = Vec::with_capacity(specs.len());
    for (component, spec) in system.components.iter().zip(specs) {
        let guest = options.guest.unwrap_or(component.scheduler);
        if guest == AnalysisGuest::Dm && component.scheduler_written.eq_ignore_ascii_case("rm") {
            notes.push(format!(
                "{}: scheduler RM with deadlines shorter than periods: its tasks are ordered \
                 by deadline (deadline monotonic), as CARTS orders them",
                component.name
            ));
        }
        let mut position = vec![0; spec.workload.len()];
        for k in 0..spec.workload.len() {
            position[spec.workload.declaration_index(k)] = k;
        }
        // to_domains lists the component's tasks, then one task per child.
        let mut tasks: Vec<TaskInput> = component
            .tasks
            .iter()
            .map(|t| (t.name.clone(), TaskKind::Periodic))
            .chain(
                component
                    .children
                    .iter()
                    .map(|c| (format!("component {}", c.name), TaskKind::Component)),
            )
            .enumerate()
            .map(|(index, (name, kind))| {
                let task = spec.workload.tasks()[position[index]];
                TaskInput {
                    name,
                    kind,
                    period_ns: task.period.saturating_mul(unit),
                    wcet_ns: task.wcet.saturating_mul(unit),
                    deadline_ns: task.deadline.saturating_mul(unit),
                    units: Some((task.period, task.wcet, task.deadline)),
                    priority: None,
                }
            })
            .collect();
        let units = |t: &TaskInput| t.units.unwrap_or((0, 0, 0));
        let mut order: Vec<usize> = (0..tasks.len()).collect();
        if guest == AnalysisGuest::Dm {
            // Deadline-monotonic, as `Workload::deadline_monotonic` orders them.
            order.sort_by_key(|&i| (units(&tasks[i]).2, units(&tasks[i]).0, i));
        } else {
            order.sort_by_key(|&i| (units(&tasks[i]).0, i));
        }
        if guest.is_fixed_priority() {
            // Equal periods (deadlines under dm) share a level: the guest serves them
            // first-in, first-out.
            let dm = guest == AnalysisGuest::Dm;
            let keys: Vec<u64> = tasks
                .iter()
                .map(|t| {
                    let (period, _, deadline) = units(t);
                    if dm {
                        deadline
                    } else {
                        period
                    }
                })
                .collect();
            assign_levels(&mut tasks, &order, |i| keys[i]);
        }
        if !component.children.is_empty() {
            notes.push(format!(
                "{}: child components are analysed first and enter as periodic tasks (Π, Θ); \
                 the general sbf is used for {}",
                component.name, component.name
            ));
        }
        let source = match spec.interface {
            InterfaceChoice::Given(_) => InterfaceSource::CartsFixed,
            InterfaceChoice::FixedPeriod(_) => InterfaceSource::FixedPeriod,
            InterfaceChoice::Optimal(_) => InterfaceSource::Optimal,
        };
        let leaf = component.children.is_empty();
        out.push(Draft {
            name: component.name.clone(),
            guest_label: guest_name(component.scheduler).to_string(),
            guest,
            release_offsets: vec![leaf.then_some(0); tasks.len()],
            tasks,
            order,
            refused: None,
            aligned: leaf,
            choice: spec.interface,
            source,
            vcpu: None,
            max_replenishments: DEFAULT_MAX_REPLENISHMENTS,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use crate::tests::carts;
    use crate::{analyze, Options};
    use rtvmm_analysis::GuestScheduler as AnalysisGuest;

    /// Tasks a = (p 12, e 3, d 5), b = (p 10, e 2) on the given interface (4, 3): by hand
    /// (`rtvmm-analysis`, `carts_input.rs`) deadline-monotonic passes and rate-monotonic
    /// fails at a. A CARTS `DM` component is analysed (it used to be refused with "unsupported
    /// scheduler DM (expected RM, DM or EDF)", printed twice), and an `RM` one is read as CARTS
    /// reads it — by deadline — with a note saying so.
    #[test]
    fn carts_constrained_deadlines_are_deadline_monotonic() {
        let xml = |scheduler: &str| {
            format!(
                r#"<system><component name="c" scheduler="{scheduler}" period="4" budget="3">
                   <task name="a" p="12" d="5" e="3"/><task name="b" p="10" e="2"/>
                   </component></system>"#
            )
        };
        for scheduler in ["DM", "RM"] {
            let report = analyze(&carts(&xml(scheduler)), &Options::default()).unwrap();
            let d = &report.domains[0];
            assert!(d.schedulable, "{scheduler}: {:?}", d.reason);
            assert_eq!(d.guest, "dm");
            let priorities: Vec<Option<u32>> = d.tasks.iter().map(|t| t.priority).collect();
            assert_eq!(
                priorities,
                vec![Some(1), Some(2)],
                "a (d 5) before b (d 10)"
            );
            let noted = report
                .notes
                .iter()
                .any(|n| n.contains("ordered by deadline"));
            assert_eq!(noted, scheduler == "RM", "{:?}", report.notes);
        }
        // `--guest rm` analyses it rate-monotonic, and then a fails.
        let as_rm = Options {
            guest: Some(AnalysisGuest::Rm),
            ..Options::default()
        };
        let report = analyze(&carts(&xml("DM")), &as_rm).unwrap();
        assert!(!report.schedulable);
        assert_eq!(report.domains[0].failed_task.as_deref(), Some("a"));
    }
}
