//! Typed errors. Each names the task (by the caller's declaration index) or the field that
//! is wrong; turning them into messages and exit codes is the CLI's job.

use serde::Serialize;
use thiserror::Error;

// Defined with the workload it validates; named here with the crate's other errors.
use crate::workload::Task;
pub use crate::workload::WorkloadError;

/// Why no interface (or no interface in the requested form) exists for a workload.
#[derive(Clone, Debug, PartialEq, Eq, Error, Serialize)]
pub enum InterfaceError {
    /// Even `Θ = Π` (a dedicated processor) fails for this task: the workload is not
    /// schedulable by its guest scheduler at all, whatever the interface. For EDF `task` is
    /// the task with the earliest deadline at the first instant where demand exceeds supply.
    #[error("task {task_index} (p={}, e={}, d={}) cannot meet its deadline even on a dedicated processor", task.period, task.wcet, task.deadline)]
    Unschedulable {
        /// Declaration index of the failing task.
        task_index: usize,
        /// The failing task.
        task: Task,
    },
    /// The period range is empty or contains 0.
    #[error("invalid period range {min}..={max}")]
    InvalidPeriodRange {
        /// Lower end.
        min: u64,
        /// Upper end (`u64::MAX` when unbounded).
        max: u64,
    },
    /// An exact test, or the tests of one query, would exceed a documented work limit (see
    /// [`crate::MAX_TEST_STEPS`] and [`crate::MAX_SEARCH_STEPS`]).
    #[error(
        "{what} needs more than {limit} steps of exact analysis (too many tasks, or periods \
         too many time units apart); split the domain, analyse in a coarser time unit, or \
         give a narrower period range"
    )]
    AnalysisLimit {
        /// Which test.
        what: &'static str,
        /// The limit.
        limit: u64,
    },
    /// Algorithm 1 would examine too many periods (each is a few exact tests).
    #[error(
        "the interface search stopped after {limit} steps of exact analysis, at period \
         {searched} of the up to {bound} it must examine; analyse in a coarser time unit, or \
         give a narrower period range"
    )]
    SearchLimit {
        /// The limit ([`crate::MAX_SEARCH_STEPS`]).
        limit: u64,
        /// The largest period examined.
        searched: u64,
        /// The largest period that could still beat the best interface found.
        bound: u64,
    },
    /// A period or budget outside `1..=MAX_TIME`, or `budget > period`.
    #[error("invalid interface (period {period}, budget {budget})")]
    InvalidInterface {
        /// The period.
        period: u64,
        /// The budget.
        budget: u64,
    },
}
