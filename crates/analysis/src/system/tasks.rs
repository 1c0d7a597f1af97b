//! Step 4: task by task — Lemma 1 where the server delivers the periodic resource model,
//! the response-time bound, and the verdicts.

use super::domain::{Prepared, Step1};
use super::root::ServerState;
use super::{
    Domain, DomainResult, DomainVerdict, Guest, Lemma1, Lemma1Gap, NotAnalysed, Response,
    ResponseGap, RootModel, TaskResult, TaskVerdict,
};
use crate::hierarchical::ServerKind;
use crate::interface::InterfaceAnalyzer;
use crate::rta::ResponseBound;

/// Step 4 for one domain.
pub(super) fn verdicts(
    model: RootModel,
    domain: &Domain,
    step: Step1,
    state: ServerState,
) -> DomainResult {
    let Step1 {
        prepared,
        interface,
        proven_optimal,
        analysed,
    } = step;
    let at_root = state.at_root;
    let supply_kind = at_root.and_then(|r| r.server);
    let prm_holds = supply_kind.is_none_or(ServerKind::supplies_periodic_resource);
    let served = at_root.and_then(|r| r.served).unwrap_or(true);
    let n = match &domain.guest {
        Guest::Idle => 0,
        Guest::FixedPriority { tasks, .. } => tasks.len(),
        Guest::Edf { tasks } => tasks.len(),
    };
    let not_analysed = |why: NotAnalysed| {
        let response = if model.has_response_times() {
            Response::NotAnalysed
        } else {
            Response::NotApplicable
        };
        vec![
            TaskResult {
                lemma1: Lemma1::NotTested,
                response,
                bound_to_release: false,
                verdict: TaskVerdict::NotAnalysed(why),
            };
            n
        ]
    };
    let result = |verdict, tasks, analysed_as, supply| DomainResult {
        interface,
        proven_optimal,
        analysed_as,
        supply,
        root: at_root,
        verdict,
        tasks,
    };
    let (workload, guest, order, fixed, covered) = match prepared {
        Prepared::Idle => return result(DomainVerdict::Schedulable, Vec::new(), None, None),
        Prepared::Invalid { task, error } => {
            return result(
                DomainVerdict::InvalidTasks { task, error },
                not_analysed(NotAnalysed::InvalidTasks),
                None,
                None,
            )
        }
        Prepared::Tasks {
            workload,
            guest,
            order,
            fixed,
            covered,
        } => (workload, guest, order, fixed, covered),
    };
    let analysed_as = analysed.is_some().then_some(guest);
    let supply = interface.map(|i| domain.sbf.form_for(i.period, &workload));
    let Some(interface) = interface else {
        let verdict = match analysed {
            Some(failure) => DomainVerdict::NoInterface(failure.expect("no interface: a failure")),
            None => DomainVerdict::PriorityOrderNotCovered,
        };
        return result(
            verdict,
            not_analysed(NotAnalysed::NoInterface),
            analysed_as,
            supply,
        );
    };

    // Per task, in priority order: Lemma 1 (where the interface analysis ran), the bound.
    let mut lemma1 = vec![Lemma1::NotTested; n];
    if let (Some(_), Some(form), true) = (&analysed, supply, fixed.is_some()) {
        // One task at a time, in bounded work; a test cut short counts as failing.
        let analyzer = InterfaceAnalyzer::new(&workload, guest);
        let ordered = analyzer.workload();
        for index in 0..ordered.len() {
            let holds = analyzer
                .lemma1_holds(index, interface, form)
                .unwrap_or(false);
            lemma1[ordered.declaration_index(index)] =
                if holds { Lemma1::Holds } else { Lemma1::Fails };
        }
    }
    let responses: Vec<(Response, bool)> = if !model.has_response_times() {
        vec![(Response::NotApplicable, false); n]
    } else {
        match (&state.bounds, &fixed) {
            (Some(bounds), _) => bounds
                .iter()
                .map(|&(b, bound)| (Response::Bound(b), bound))
                .collect(),
            // EDF guests have no local priorities.
            (None, None) => vec![(Response::NotApplicable, false); n],
            (None, Some(_)) => vec![(Response::NotAnalysed, false); n],
        }
    };

    let by_position = |per_priority: Vec<TaskResult>| {
        let mut tasks = per_priority.clone();
        for (k, &position) in order.iter().enumerate() {
            tasks[position] = per_priority[k];
        }
        tasks
    };
    let task = |k: usize, verdict| TaskResult {
        lemma1: lemma1[k],
        response: responses[k].0,
        bound_to_release: responses[k].1,
        verdict,
    };
    if !served {
        let tasks = (0..n)
            .map(|k| task(k, TaskVerdict::ServerUnschedulable))
            .collect();
        return result(
            DomainVerdict::ServerUnschedulable,
            by_position(tasks),
            analysed_as,
            supply,
        );
    }
    if fixed.is_none() {
        // EDF: the dbf test, all or nothing, and only where the model holds.
        let failure = analysed.flatten();
        let (verdict, each) = match (prm_holds, failure) {
            (true, None) => (DomainVerdict::Schedulable, TaskVerdict::ByDemandBound),
            (true, Some(failure)) => (
                DomainVerdict::DemandBoundFails(failure),
                TaskVerdict::DemandBoundFails,
            ),
            (false, _) => {
                let server = supply_kind.expect("only a server can break the model");
                (
                    DomainVerdict::EdfNotCovered { server },
                    TaskVerdict::NotAnalysed(NotAnalysed::EdfInServer(server)),
                )
            }
        };
        let tasks = (0..n).map(|k| task(k, each)).collect();
        return result(verdict, by_position(tasks), analysed_as, supply);
    }
    let tasks: Vec<TaskResult> = (0..n)
        .map(|k| {
            let bounded = matches!(
                responses[k].0,
                Response::Bound(ResponseBound::Bounded { .. })
            );
            let verdict = if prm_holds && lemma1[k] == Lemma1::Holds {
                TaskVerdict::ByLemma1
            } else if bounded {
                TaskVerdict::ByResponseTime
            } else {
                let lemma1 = if !covered {
                    Lemma1Gap::PriorityOrder
                } else if lemma1[k] == Lemma1::Fails {
                    Lemma1Gap::Fails
                } else if let (false, Some(server)) = (prm_holds, supply_kind) {
                    Lemma1Gap::SupplyNotPeriodicResource(server)
                } else {
                    Lemma1Gap::NotTested
                };
                let response = match responses[k].0 {
                    Response::Bound(ResponseBound::ExceedsDeadline { at_least }) => {
                        ResponseGap::ExceedsDeadline { at_least }
                    }
                    Response::NotApplicable => ResponseGap::NotApplicable,
                    _ => ResponseGap::NotAnalysed,
                };
                TaskVerdict::NotGuaranteed { lemma1, response }
            };
            task(k, verdict)
        })
        .collect();
    let verdict = match tasks.iter().position(|t| !t.verdict.is_guaranteed()) {
        Some(k) => DomainVerdict::TaskNotGuaranteed { task: order[k] },
        None => DomainVerdict::Schedulable,
    };
    result(verdict, by_position(tasks), analysed_as, supply)
}
