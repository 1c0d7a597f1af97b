//! A scenario's domain as analysis input, in whole units (see the design note in
//! [`rtvmm_analysis`] for the unit, the rounding and the guests).

use rtvmm_analysis::{GuestScheduler as AnalysisGuest, InterfaceChoice};
use rtvmm_core::guest::{Arrival, GuestScheduler};
use rtvmm_core::Nanos;

use super::{assign_levels, Draft, Refused, TaskInput};
use crate::names::guest_name;
use crate::names::{InterfaceSource, TaskKind};
use crate::Options;

/// A scenario domain, in units.
pub(super) fn draft(
    domain: &rtvmm_system::DomainSpec,
    unit: u64,
    options: &Options,
    notes: &mut Vec<String>,
) -> Draft {
    let mut tasks = Vec::with_capacity(domain.tasks.len());
    // A VCPU offset delays the first budget past releases the analysis assumes are
    // served; an idle domain's VCPU still only competes at the root, whatever its phase.
    let mut refused: Option<Refused> = (!domain.vcpu.offset.is_zero() && !domain.tasks.is_empty())
        .then_some(Refused::VcpuOffset {
            offset: domain.vcpu.offset,
        });
    let mut aligned = domain.vcpu.offset.is_zero();
    let mut release_offsets = Vec::with_capacity(domain.tasks.len());
    let mut rounded = Vec::new();
    for (index, task) in domain.tasks.iter().enumerate() {
        let kind = match task.arrival {
            Arrival::Periodic => TaskKind::Periodic,
            Arrival::Sporadic { .. } => TaskKind::Sporadic,
            // A triggered task's arrivals follow another task's finishes: no minimum
            // inter-arrival time is known, as for an aperiodic task.
            Arrival::AperiodicTimes(_) | Arrival::Poisson { .. } | Arrival::Triggered { .. } => {
                TaskKind::Aperiodic
            }
        };
        let deadline = task.deadline.min(task.period);
        let mut input = TaskInput {
            name: task.name.clone(),
            kind,
            period_ns: task.period.as_ns(),
            wcet_ns: task.wcet.as_ns(),
            deadline_ns: deadline.as_ns(),
            units: None,
            priority: None,
        };
        if task.deadline > task.period {
            notes.push(format!(
                "{}/{}: deadline {} is beyond the period; analysed with deadline = period {}",
                domain.name, task.name, task.deadline, task.period
            ));
        }
        let bindable = kind == TaskKind::Periodic
            && domain.vcpu.offset.is_zero()
            && task.period.as_ns() % unit == 0
            && task.offset.as_ns() % unit == 0;
        release_offsets.push(bindable.then(|| task.offset.as_ns() / unit));
        if kind == TaskKind::Aperiodic {
            refused.get_or_insert(Refused::Aperiodic { task: index });
            tasks.push(input);
            continue;
        }
        if kind != TaskKind::Periodic || !task.offset.is_zero() {
            aligned = false;
        }
        let (period_ns, wcet_ns, deadline_ns) =
            (task.period.as_ns(), task.wcet.as_ns(), deadline.as_ns());
        let (period, wcet, deadline_units) =
            (period_ns / unit, wcet_ns.div_ceil(unit), deadline_ns / unit);
        if period_ns % unit != 0 {
            aligned = false;
        }
        if period_ns % unit != 0 || wcet_ns % unit != 0 || deadline_ns % unit != 0 {
            rounded.push(format!(
                "{} (p {} → {period}, e {} → {wcet}, d {} → {deadline_units})",
                task.name, task.period, task.wcet, deadline
            ));
        }
        if period == 0 || deadline_units == 0 {
            refused.get_or_insert(Refused::ShorterThanUnit {
                task: index,
                deadline: period != 0,
            });
        } else if wcet > period {
            refused.get_or_insert(Refused::Overrun {
                task: index,
                wcet: task.wcet,
                period: task.period,
            });
        } else {
            input.units = Some((period, wcet, deadline_units));
        }
        tasks.push(input);
    }
    if !rounded.is_empty() {
        notes.push(format!(
            "{}: task times rounded to whole units of {} (wcet up, period and deadline down): {}",
            domain.name,
            Nanos::from_ns(unit),
            rounded.join(", ")
        ));
    }

    // The guest's own priority order, as the simulator's guest scheduler applies it.
    let mut order: Vec<usize> = (0..domain.tasks.len()).collect();
    let own = &domain.tasks;
    let guest = options.guest.unwrap_or(match domain.guest {
        GuestScheduler::Edf => AnalysisGuest::Edf,
        _ => AnalysisGuest::Rm,
    });
    // The guest's priority key per task (smaller = more urgent; equal keys are served
    // first-in, first-out, so they share a level and interfere both ways).
    let key = |i: usize| -> u64 {
        match (options.guest, domain.guest) {
            (Some(AnalysisGuest::Rm), _) | (None, GuestScheduler::Rm) => own[i].period.as_ns(),
            (Some(AnalysisGuest::Dm), _) | (None, GuestScheduler::Dm) => own[i].deadline.as_ns(),
            (None, GuestScheduler::Fp) => u64::from(own[i].priority),
            (Some(AnalysisGuest::Edf), _) | (None, GuestScheduler::Edf) => 0,
        }
    };
    if guest.is_fixed_priority() {
        order.sort_by_key(|&i| (key(i), i));
    }
    if let Some(analysed) = options.guest {
        let written = domain.guest.name();
        if written != guest_name(analysed) {
            notes.push(format!(
                "{}: analysed as {} although its guest is {written} (--guest)",
                domain.name,
                guest_name(analysed)
            ));
        }
    }
    order.retain(|&i| tasks[i].units.is_some());
    if guest.is_fixed_priority() {
        // One priority level per key, as the guest serves them.
        let keys: Vec<u64> = (0..tasks.len()).map(key).collect();
        assign_levels(&mut tasks, &order, |i| keys[i]);
    }
    Draft {
        name: domain.name.clone(),
        guest_label: domain.guest.name().to_string(),
        guest,
        tasks,
        order,
        refused,
        aligned,
        choice: InterfaceChoice::default(),
        source: InterfaceSource::Optimal,
        vcpu: (!domain.vcpu.period.is_zero()).then_some((
            domain.vcpu.budget,
            domain.vcpu.period,
            domain.vcpu.priority,
        )),
        max_replenishments: domain.vcpu.max_replenishments,
        release_offsets,
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::{domain, run_on, HEAD};
    use crate::Options;
    use rtvmm_core::Nanos;

    /// A wcet of 2.5 ms with a 1 ms quantum is analysed as 3 units; a period of 10.5 ms
    /// as 10; the notes say so.
    #[test]
    fn rounding_is_safe_and_reported() {
        let text = format!("{HEAD}{}", domain("a", "", &[("t", "10.5ms", "2.5ms")]));
        let report = run_on(&text, &Options::default());
        let t = &report.domains[0].tasks[0];
        assert_eq!(
            (t.period, t.wcet, t.deadline),
            (Some(10), Some(3), Some(10))
        );
        assert!(
            report.notes.iter().any(|n| n.contains("rounded")),
            "{:?}",
            report.notes
        );
        // A finer unit needs no rounding.
        let fine = run_on(
            &text,
            &Options {
                quantum: Some(Nanos::from_us(500)),
                ..Options::default()
            },
        );
        let t = &fine.domains[0].tasks[0];
        assert_eq!((t.period, t.wcet), (Some(21), Some(5)));
    }

    #[test]
    fn overrun_and_aperiodic_tasks_fail_their_domain_by_name() {
        let mut text = format!("{HEAD}{}", domain("a", "", &[("long", "5ms", "6ms")]));
        text.push_str(
            "[[domain]]\nname = \"b\"\n[[domain.task]]\nname = \"irq\"\nkind = \"aperiodic\"\n\
             period = \"10ms\"\nwcet = \"1ms\"\nreleases = [\"1ms\"]\n",
        );
        let report = run_on(&text, &Options::default());
        assert!(!report.schedulable);
        assert_eq!(report.domains[0].failed_task.as_deref(), Some("long"));
        assert_eq!(report.domains[1].failed_task.as_deref(), Some("irq"));
        let refusal = report.refusal().unwrap();
        assert_eq!(refusal.domain.as_deref(), Some("a"));
    }

    #[test]
    fn harmonic_form_only_for_aligned_domains() {
        // W = {(25,3),(50,5),(100,4)}: auto finds (25, 7) with the harmonic sbf when the
        // releases are aligned; with an offset the domain falls back to general: (7, 2).
        let tasks = [
            ("a", "25ms", "3ms"),
            ("b", "50ms", "5ms"),
            ("c", "100ms", "4ms"),
        ];
        let aligned = run_on(
            &format!("{HEAD}{}", domain("d", "", &tasks)),
            &Options::default(),
        );
        assert_eq!(
            (aligned.domains[0].period, aligned.domains[0].budget),
            (Some(25), Some(7))
        );
        assert_eq!(
            aligned.domains[0].sbf,
            Some(rtvmm_analysis::SupplyForm::Harmonic)
        );
        let shifted = format!("{HEAD}{}offset = \"1ms\"\n", domain("d", "", &tasks));
        let shifted = run_on(&shifted, &Options::default());
        assert_eq!(
            (shifted.domains[0].period, shifted.domains[0].budget),
            (Some(7), Some(2))
        );
        assert_eq!(
            shifted.domains[0].sbf,
            Some(rtvmm_analysis::SupplyForm::General)
        );
    }
}
