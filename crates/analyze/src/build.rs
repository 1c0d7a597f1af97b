//! Building the [`Report`] at the end, from the converted input and the analysis's typed
//! result; the verdicts are put into words by [`crate::words`].

use rtvmm_analysis::system::{DomainResult, Lemma1, Response, RootModel, SystemResult, TaskResult};
use rtvmm_analysis::{ExactSum, Ratio, ResponseBound, SbfMode, ServerKind};
use rtvmm_core::policy::PolicyKind;

use crate::convert::{Converted, DomainInput, Refused, Role, TaskInput};
use crate::names::InterfaceSource;
use crate::report::{DomainReport, Report, RtaStatus, TaskReport, VcpuReport};
use crate::words;

/// The report of `result`, the analysis of `converted.system`.
pub(crate) fn build(converted: Converted, result: &SystemResult) -> Report {
    let Converted {
        file,
        format,
        unit,
        policy,
        sbf,
        given,
        system,
        domains: inputs,
        mut notes,
        not_covered,
        warnings,
    } = converted;
    let model = system.root;
    // Each domain's server kind at the root, for the notes.
    let servers: Vec<Option<ServerKind>> = inputs
        .iter()
        .map(|input| match input.role {
            Role::Analysed { index, .. } => result.domains[index].root.and_then(|r| r.server),
            Role::Refused(_) => None,
        })
        .collect();
    let mut domains: Vec<DomainReport> = inputs
        .iter()
        .map(|input| match &input.role {
            Role::Analysed { index, order } => {
                analysed(input, order, &result.domains[*index], policy, unit)
            }
            Role::Refused(why) => refused(input, why, model, unit),
        })
        .collect();
    notes.extend(words::analysis_notes(
        &domains, result, &servers, model, policy,
    ));

    for d in &mut domains {
        d.guaranteed = d.schedulable && not_covered.is_empty();
    }
    let u_w = utilization(domains.iter().flat_map(|d| &d.tasks));
    let u_rm = &result.u_rm;
    Report {
        input: file,
        format,
        unit_ns: unit,
        sbf_mode: match sbf {
            SbfMode::Auto => "auto",
            SbfMode::General => "general",
        },
        interfaces: if given { "given" } else { "computed" },
        policy,
        root_test: words::root_test(model, policy),
        rta_server: model.server().filter(|_| model.has_response_times()),
        u_rm: u_rm.to_f64(),
        u_rm_exact: u_rm.to_fraction_string(),
        u_w: u_w.to_f64(),
        u_w_exact: u_w.to_fraction_string(),
        u_rm_minus_u_w: u_rm.to_f64() - u_w.to_f64(),
        root_schedulable: domains.iter().all(|d| d.root_schedulable.unwrap_or(true)),
        schedulable: not_covered.is_empty() && domains.iter().all(|d| d.schedulable),
        domains,
        pools: Vec::new(),
        not_covered,
        notes,
        warnings,
    }
}

/// A task as declared, before any analysis result.
fn task_report(t: &TaskInput, rta: RtaStatus) -> TaskReport {
    TaskReport {
        name: t.name.clone(),
        kind: t.kind,
        period_ns: t.period_ns,
        wcet_ns: t.wcet_ns,
        deadline_ns: t.deadline_ns,
        period: t.units.map(|u| u.0),
        wcet: t.units.map(|u| u.1),
        deadline: t.units.map(|u| u.2),
        priority: t.priority,
        lemma1: None,
        rta,
        wcrt: None,
        wcrt_ns: None,
        slack_ns: None,
        bound_to_release: false,
    }
}

/// `Σ e/p` over the tasks the analysis could express in units.
fn utilization<'t>(tasks: impl IntoIterator<Item = &'t TaskReport>) -> ExactSum {
    let mut sum = ExactSum::zero();
    for t in tasks {
        if let (Some(period), Some(wcet)) = (t.period, t.wcet) {
            sum.add(Ratio::new(wcet, period));
        }
    }
    sum
}

/// A domain the analysis could not take.
fn refused(input: &DomainInput, why: &Refused, model: RootModel, unit: u64) -> DomainReport {
    let tasks: Vec<TaskReport> = input
        .tasks
        .iter()
        .map(|t| {
            let rta = if model.has_response_times() || t.units.is_none() {
                RtaStatus::NotAnalysed
            } else {
                RtaStatus::NotApplicable
            };
            task_report(t, rta)
        })
        .collect();
    let utilization = utilization(&tasks);
    DomainReport {
        name: input.name.clone(),
        guest: input.guest_label.clone(),
        analysed_as: None,
        period: None,
        budget: None,
        period_ns: None,
        budget_ns: None,
        interface_source: None,
        proven_optimal: true,
        sbf: None,
        bandwidth: 0.0,
        bandwidth_exact: None,
        utilization: utilization.to_f64(),
        utilization_exact: utilization.to_fraction_string(),
        overhead: 0.0,
        priority: None,
        root_schedulable: None,
        root_response_time: None,
        schedulable: false,
        reason: Some(words::refused(why, unit)),
        failed_task: why.task().map(|task| input.tasks[task].name.clone()),
        guaranteed: false,
        pool: None,
        model: None,
        vcpus: Vec::new(),
        not_covered: None,
        tasks,
    }
}

/// A domain the analysis took: its result, task by task.
fn analysed(
    input: &DomainInput,
    order: &[usize],
    result: &DomainResult,
    policy: PolicyKind,
    unit: u64,
) -> DomainReport {
    let mut tasks: Vec<TaskReport> = input
        .tasks
        .iter()
        .map(|t| task_report(t, RtaStatus::NotAnalysed))
        .collect();
    for (&i, outcome) in order.iter().zip(&result.tasks) {
        record(&mut tasks[i], outcome, unit);
    }
    let blame = words::blame(result, input, order, &tasks, policy, unit);
    let interface = result.interface;
    let (bandwidth, bandwidth_exact) = match interface {
        Some(i) => (i.bandwidth().to_f64(), Some(i.bandwidth().to_string())),
        None => (0.0, None),
    };
    let utilization = utilization(&tasks);
    DomainReport {
        name: input.name.clone(),
        guest: input.guest_label.clone(),
        analysed_as: result.analysed_as,
        period: interface.map(|i| i.period),
        budget: interface.map(|i| i.budget),
        period_ns: interface.map(|i| i.period.saturating_mul(unit)),
        budget_ns: interface.map(|i| i.budget.saturating_mul(unit)),
        interface_source: interface.map(|_| {
            if input.tasks.is_empty() {
                InterfaceSource::Vcpu
            } else {
                input.source
            }
        }),
        proven_optimal: result.proven_optimal,
        sbf: result.supply,
        bandwidth,
        bandwidth_exact,
        utilization: utilization.to_f64(),
        utilization_exact: utilization.to_fraction_string(),
        overhead: if interface.is_some() {
            bandwidth - utilization.to_f64()
        } else {
            0.0
        },
        priority: result.root.map(|r| r.priority),
        root_schedulable: result.root.and_then(|r| r.served),
        root_response_time: result.root.and_then(|r| r.response_time),
        schedulable: result.verdict.is_schedulable(),
        reason: blame.as_ref().map(|b| b.0.clone()),
        failed_task: blame.and_then(|b| b.1),
        guaranteed: false,
        pool: None,
        model: interface.map(|_| "prm".to_string()),
        vcpus: interface
            .map(|i| VcpuReport {
                index: 0,
                period: Some(i.period),
                budget: Some(i.budget),
                period_ns: Some(i.period.saturating_mul(unit)),
                budget_ns: Some(i.budget.saturating_mul(unit)),
                pcpus: vec![0],
                served: result.root.and_then(|r| r.served),
            })
            .into_iter()
            .collect(),
        not_covered: None,
        tasks,
    }
}

/// One task's result into its report.
fn record(t: &mut TaskReport, outcome: &TaskResult, unit: u64) {
    t.lemma1 = match outcome.lemma1 {
        Lemma1::Holds => Some(true),
        Lemma1::Fails => Some(false),
        Lemma1::NotTested => None,
    };
    t.bound_to_release = outcome.bound_to_release;
    t.rta = match outcome.response {
        Response::Bound(ResponseBound::Bounded { response_time, .. }) => {
            let wcrt_ns = response_time.saturating_mul(unit);
            t.wcrt = Some(response_time);
            t.wcrt_ns = Some(wcrt_ns);
            t.slack_ns = Some(t.deadline_ns.saturating_sub(wcrt_ns));
            RtaStatus::Bounded
        }
        Response::Bound(ResponseBound::ExceedsDeadline { at_least }) => {
            t.wcrt = Some(at_least);
            t.wcrt_ns = Some(at_least.saturating_mul(unit));
            RtaStatus::ExceedsDeadline
        }
        Response::Bound(ResponseBound::ServerUnschedulable) => RtaStatus::ServerUnschedulable,
        Response::NotApplicable => RtaStatus::NotApplicable,
        Response::NotAnalysed => RtaStatus::NotAnalysed,
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::{domain, run_on, HEAD};
    use crate::Options;
    use rtvmm_analysis::{
        analyze_system, DomainSpec as AnalysisDomain, Interface, InterfaceChoice, SbfMode, Workload,
    };
    use rtvmm_analysis::{GuestScheduler as AnalysisGuest, SupplyForm};

    /// The RTAS 2012 workload {(7,2),(8,1),(10,1)} in ms with a 1 ms quantum: the report
    /// carries the analysis crate's optimal interface (general sbf: 7, 8, 10 share no
    /// divisor > 1) in units and in ns. The interface values themselves are the analysis
    /// crate's to test.
    #[test]
    fn interfaces_are_in_units_and_ns() {
        let text = format!(
            "{HEAD}{}",
            domain(
                "a",
                "",
                &[
                    ("t1", "7ms", "2ms"),
                    ("t2", "8ms", "1ms"),
                    ("t3", "10ms", "1ms")
                ]
            )
        );
        let report = run_on(&text, &Options::default());
        let w = Workload::from_pairs(&[(7, 2), (8, 1), (10, 1)]).unwrap();
        let expected = rtvmm_analysis::optimal_interface(
            &w,
            &rtvmm_analysis::SearchOptions {
                mode: SbfMode::General,
                ..Default::default()
            },
        )
        .unwrap()
        .interface;
        let a = &report.domains[0];
        assert_eq!(a.period, Some(expected.period));
        assert_eq!(a.budget, Some(expected.budget));
        assert_eq!(a.period_ns, Some(expected.period * 1_000_000));
        assert_eq!(
            a.sbf,
            Some(SupplyForm::General),
            "7, 8, 10 have no common divisor > 1"
        );
        assert!(report.schedulable);
        assert_eq!(a.priority, Some(1));
    }

    /// Given VCPU (10 ms, 3 ms) for fast = (10, 2), slow = (20, 5), Periodic Server alone.
    /// General sbf: blackout 2·7 = 14 > 10, so sbf(10) = 0 < 2: Lemma 1 fails for `fast`;
    /// but its response-time bound is G + r(2) = 7 + 2 = 9 ≤ 10, so `fast` is guaranteed.
    /// `slow`: rbf(20) = 2·2 + 5 = 9 > sbf(20) = 3 + max(0, 20 − 14 − 10) = 3, and
    /// L = 5 + 2 = 7, k = 3, x = 1: R = 7 + 2·10 + 1 = 28 > 20. `slow` is to blame.
    /// Harmonic sbf (auto; Π = 10 divides both periods, releases aligned): blackout 7,
    /// sbf(10) = 3 ≥ 2 passes `fast`; `slow`: rbf(10) = 7 > 3, rbf(20) = 9 > sbf(20) = 6.
    #[test]
    fn given_interface_too_small_names_the_task() {
        let text = format!(
            "{HEAD}{}",
            domain(
                "a",
                "vcpu = { budget = \"3ms\", period = \"10ms\" }",
                &[("fast", "10ms", "2ms"), ("slow", "20ms", "5ms")]
            )
        );
        let given = Options {
            given: true,
            ..Options::default()
        };
        let report = run_on(
            &text,
            &Options {
                sbf: SbfMode::General,
                ..given.clone()
            },
        );
        let a = &report.domains[0];
        assert_eq!((a.period, a.budget), (Some(10), Some(3)));
        assert!(!a.schedulable);
        // Both tasks are released at the server's releases (offset 0, periods multiples of
        // 10), so the bound-task form applies: fast gets r_S(2) = 2 at once; slow needs
        // L = 5 + 2·2 = 9 → 3 server periods, R = 2·10 + 3 = 23 ≥ 21 > 20 (the first iterate
        // past the deadline is 21: L = 5 + 2 = 7, k = 3, x = 1).
        let (fast, slow) = (&a.tasks[0], &a.tasks[1]);
        assert_eq!((fast.lemma1, fast.wcrt), (Some(false), Some(2)));
        assert!(fast.bound_to_release && slow.bound_to_release);
        assert_eq!((slow.lemma1, slow.wcrt), (Some(false), Some(21)));
        assert_eq!(a.failed_task.as_deref(), Some("slow"));
        assert_eq!(report.interfaces, "given");
        let auto = run_on(&text, &given);
        assert_eq!(auto.domains[0].sbf, Some(SupplyForm::Harmonic));
        assert_eq!(auto.domains[0].failed_task.as_deref(), Some("slow"));
    }

    #[test]
    fn rta_bounds_are_recorded_per_task() {
        // One Periodic server (5, 2) holding a task (20, 3): R = (5−2) + 5 + 1 = 9 (the
        // analysis crate's own example).
        let text = format!(
            "{HEAD}{}",
            domain(
                "a",
                "vcpu = { budget = \"2ms\", period = \"5ms\" }",
                &[("t", "20ms", "3ms")]
            )
        );
        let report = run_on(
            &text,
            &Options {
                given: true,
                ..Options::default()
            },
        );
        // Released at the server's releases (offset 0, 20 a multiple of 5): no capacity gap,
        // R = 5 + r_S(1) = 6 (2 units in [0, 2), 1 more at 5).
        let t = &report.domains[0].tasks[0];
        assert_eq!(t.rta, RtaStatus::Bounded);
        assert!(t.bound_to_release);
        assert_eq!(t.wcrt_ns, Some(6_000_000));
        assert_eq!(t.slack_ns, Some(14_000_000));
        // Offset 1 ms: no longer on the server's grid, so the general form.
        let shifted = run_on(
            &text.replace("wcet = \"3ms\"\n", "wcet = \"3ms\"\noffset = \"1ms\"\n"),
            &Options {
                given: true,
                ..Options::default()
            },
        );
        let t = &shifted.domains[0].tasks[0];
        assert!(!t.bound_to_release);
        assert_eq!(t.wcrt_ns, Some(9_000_000));
        assert_eq!(t.slack_ns, Some(11_000_000));
    }

    /// Under the Sporadic Server the VCPU's `max_replenishments` decides the model. Server
    /// (2 ms, 5 ms) holding a task (20, 3) released off the grid (offset 1 ms): never
    /// merging (limit ≥ 2 000 000 ns) it is a Periodic Server, R = 3 + 5 + 1 = 9; with the
    /// default limit 8 it can merge, the gap is the whole period, R = 5 + 5 + 1 = 11.
    #[test]
    fn sporadic_limit_decides_whether_replenishments_can_merge() {
        let text = |limit: &str| {
            format!(
                "duration = \"1s\"\n[scheduler]\npolicy = \"sporadic\"\n\
                 [[domain]]\nname = \"a\"\n\
                 vcpu = {{ budget = \"2ms\", period = \"5ms\"{limit} }}\n\
                 [[domain.task]]\nname = \"t\"\nperiod = \"20ms\"\nwcet = \"3ms\"\n\
                 offset = \"1ms\"\n"
            )
        };
        let given = Options {
            given: true,
            ..Options::default()
        };
        let merging = run_on(&text(""), &given);
        assert_eq!(merging.domains[0].tasks[0].wcrt_ns, Some(11_000_000));
        assert!(
            merging.notes.iter().any(|n| n.contains("a can merge them")),
            "{:?}",
            merging.notes
        );
        let plain = run_on(&text(", max_replenishments = 2000000"), &given);
        assert_eq!(plain.domains[0].tasks[0].wcrt_ns, Some(9_000_000));
        assert!(!plain.notes.iter().any(|n| n.contains("can merge them")));
        let just_below = run_on(&text(", max_replenishments = 1999999"), &given);
        assert_eq!(just_below.domains[0].tasks[0].wcrt_ns, Some(11_000_000));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Lemma 1 per task (computed here) holds for every task exactly when the analysis
        /// crate accepts the workload on the same given interface.
        #[test]
        fn per_task_lemma1_agrees_with_the_analysis_crate(
            tasks in proptest::collection::vec((2u64..=40, 1u64..=6), 1..=5),
            period in 1u64..=20,
            budget_pick in 1u64..=20,
            general in proptest::bool::ANY,
        ) {
            let budget = 1 + (budget_pick - 1) % period;
            let list: Vec<(String, String, String)> = tasks
                .iter()
                .enumerate()
                .map(|(i, &(p, e))| (format!("t{i}"), format!("{p}ms"), format!("{}ms", e.min(p))))
                .collect();
            let refs: Vec<(&str, &str, &str)> =
                list.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str())).collect();
            let vcpu = format!("vcpu = {{ budget = \"{budget}ms\", period = \"{period}ms\" }}");
            let text = format!("{HEAD}{}", domain("d", &vcpu, &refs));
            let mode = if general { SbfMode::General } else { SbfMode::Auto };
            let report = run_on(&text, &Options {
                given: true,
                sbf: mode,
                ..Options::default()
            });
            let all = report.domains[0].tasks.iter().all(|t| t.lemma1 == Some(true));
            let w = Workload::from_pairs(
                &tasks.iter().map(|&(p, e)| (p, e.min(p))).collect::<Vec<_>>(),
            ).unwrap();
            let accepted = analyze_system(&[AnalysisDomain {
                name: "d".into(),
                workload: w,
                guest: AnalysisGuest::Rm,
                interface: InterfaceChoice::Given(Interface::new(period, budget)),
            }], mode).domains[0].schedulable;
            proptest::prop_assert_eq!(all, accepted);
        }
    }
}
