//! Step 1: each domain alone — its tasks validated, its interface found or checked.

use super::{Domain, Guest, GuestTask, PriorityOrder};
use crate::compose::{domain_interface, DomainFailure, InterfaceChoice};
use crate::error::WorkloadError;
use crate::interface::{GuestScheduler, InterfaceAnalyzer};
use crate::prm::Interface;
use crate::workload::Workload;

/// A domain's tasks as the analysis takes them.
pub(super) enum Prepared {
    Idle,
    Invalid {
        task: Option<usize>,
        error: WorkloadError,
    },
    Tasks {
        /// The workload in the guest's priority order (fixed priorities) or as given (EDF),
        /// its declaration indices being positions in `order`.
        workload: Workload,
        guest: GuestScheduler,
        /// Positions of the given tasks in the guest's priority order.
        order: Vec<usize>,
        /// Fixed priorities: the tasks in that order, with offsets.
        fixed: Option<Vec<GuestTask>>,
        /// Lemma 1 covers the guest's priority order.
        covered: bool,
    },
}

fn prepare(guest: &Guest) -> Prepared {
    let (list, guest, fixed, covered, order) = match guest {
        Guest::Idle => return Prepared::Idle,
        Guest::Edf { tasks } => (
            tasks.clone(),
            GuestScheduler::Edf,
            None,
            true,
            (0..tasks.len()).collect::<Vec<_>>(),
        ),
        Guest::FixedPriority { order, tasks } => {
            let mut by_priority: Vec<usize> = (0..tasks.len()).collect();
            by_priority.sort_by_key(|&k| tasks[k].task.priority); // stable: ties by position
            let ordered: Vec<GuestTask> = by_priority.iter().map(|&k| tasks[k]).collect();
            let key = |t: &GuestTask| match order {
                PriorityOrder::RateMonotonic => t.task.period,
                PriorityOrder::DeadlineMonotonic => t.task.deadline,
            };
            // Lemma 1 orders by the key, equal keys sharing a level: it covers the guest's
            // priorities iff they never put a larger key first and every level of equal
            // priorities has one key (a tie between different keys would let the task
            // with the smaller key wait behind the other, which Lemma 1 does not count).
            // Equal keys of different priorities are counted both ways: safe.
            let covered = ordered.windows(2).all(|pair| {
                let (a, b) = (&pair[0], &pair[1]);
                if a.task.priority == b.task.priority {
                    key(a) == key(b)
                } else {
                    key(a) <= key(b)
                }
            });
            (
                ordered.iter().map(|t| t.task.task()).collect(),
                order.guest(),
                Some(ordered),
                covered,
                by_priority,
            )
        }
    };
    match Workload::new(list) {
        Ok(workload) => Prepared::Tasks {
            workload,
            guest,
            order,
            fixed,
            covered,
        },
        Err(error) => Prepared::Invalid {
            task: invalid_task(&error).map(|k| order[k]),
            error,
        },
    }
}

fn invalid_task(error: &WorkloadError) -> Option<usize> {
    match *error {
        WorkloadError::ZeroPeriod { task }
        | WorkloadError::ZeroWcet { task }
        | WorkloadError::WcetExceedsPeriod { task, .. }
        | WorkloadError::BadDeadline { task, .. }
        | WorkloadError::TooLarge { task, .. } => Some(task),
        WorkloadError::Empty => None,
    }
}

/// Step 1's outcome for one domain.
pub(super) struct Step1 {
    pub(super) prepared: Prepared,
    pub(super) interface: Option<Interface>,
    pub(super) proven_optimal: bool,
    /// The interface analysis ran; its failure, if any.
    pub(super) analysed: Option<Option<DomainFailure>>,
}

pub(super) fn step1(domain: &Domain) -> Step1 {
    let prepared = prepare(&domain.guest);
    let (interface, proven_optimal, analysed) = match &prepared {
        Prepared::Idle => match domain.interface {
            InterfaceChoice::Given(given) => (Some(given), true, None),
            _ => (None, true, None),
        },
        Prepared::Invalid { .. } => (None, true, None),
        Prepared::Tasks { covered: false, .. } => match domain.interface {
            InterfaceChoice::Given(i) if i.budget >= 1 && i.budget <= i.period => {
                (Some(i), true, None)
            }
            _ => (None, true, None),
        },
        Prepared::Tasks {
            workload,
            guest,
            order,
            ..
        } => {
            let analyzer = InterfaceAnalyzer::new(workload, *guest);
            let outcome = domain_interface(&analyzer, domain.interface, domain.sbf);
            (
                outcome.interface,
                outcome.proven_optimal,
                Some(outcome.failure.map(|failure| as_given(failure, order))),
            )
        }
    };
    Step1 {
        prepared,
        interface,
        proven_optimal,
        analysed,
    }
}

/// The failure with its task named by its position as given (the workload's declaration
/// index is its position in the guest's priority order).
fn as_given(failure: DomainFailure, order: &[usize]) -> DomainFailure {
    match failure {
        DomainFailure::Unschedulable { task_index, task } => DomainFailure::Unschedulable {
            task_index: order[task_index],
            task,
        },
        DomainFailure::InterfaceTooSmall { task_index, task } => DomainFailure::InterfaceTooSmall {
            task_index: order[task_index],
            task,
        },
        DomainFailure::Undecided { task_index, task } => DomainFailure::Undecided {
            task_index: order[task_index],
            task,
        },
        DomainFailure::Invalid { error } => DomainFailure::Invalid { error },
    }
}
