//! What [`super::analyze`] returns: per domain its interface, its server at the root and a
//! typed verdict; per task the two sufficient tests and a typed verdict.

use serde::Serialize;

use crate::compose::DomainFailure;
use crate::error::WorkloadError;
use crate::hierarchical::{HierarchyError, ServerKind};
use crate::interface::GuestScheduler;
use crate::prm::{Interface, SupplyForm};
use crate::ratio::ExactSum;
use crate::rta::ResponseBound;

/// The result of [`analyze`](super::analyze).
#[derive(Clone, Debug, PartialEq)]
pub struct SystemResult {
    /// Per domain, in the order given.
    pub domains: Vec<DomainResult>,
    /// `U_RM = Σ Θ/Π` over the servers.
    pub u_rm: ExactSum,
    /// The hierarchical analysis refused the servers (a given interface beyond
    /// [`crate::MAX_TIME`]): none was checked at the root.
    pub root_error: Option<HierarchyError>,
}

impl SystemResult {
    /// Every domain schedulable.
    pub fn schedulable(&self) -> bool {
        self.domains.iter().all(|d| d.verdict.is_schedulable())
    }
}

/// One domain's result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DomainResult {
    /// Its interface (found or given), if it has one: then it is a server at the root.
    pub interface: Option<Interface>,
    /// False only when the interface search could not prove optimality.
    pub proven_optimal: bool,
    /// The scheduler the interface analysis assumed; `None` when it did not run (no tasks,
    /// invalid tasks, a priority order Lemma 1 does not cover).
    pub analysed_as: Option<GuestScheduler>,
    /// The sbf form of its interface (`None` without tasks or interface).
    pub supply: Option<SupplyForm>,
    /// Its server at the root (when it has an interface).
    pub root: Option<AtRoot>,
    /// The verdict.
    pub verdict: DomainVerdict,
    /// Per task, in the order given.
    pub tasks: Vec<TaskResult>,
}

/// A server at the root.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct AtRoot {
    /// Its priority (smaller = higher).
    pub priority: u32,
    /// Its kind in the hierarchical analysis (fixed-priority roots).
    pub server: Option<ServerKind>,
    /// The root delivers its budget in every period; `None`: not checked
    /// ([`RootModel::NoRootCheck`](super::RootModel::NoRootCheck), or [`SystemResult::root_error`]).
    pub served: Option<bool>,
    /// `r_S(Θ)` (fixed-priority roots) or its response time as a periodic task
    /// (rate-monotonic root), when within `Π`.
    pub response_time: Option<u64>,
}

/// Why a domain is or is not schedulable. Task indices are positions in the domain's
/// task list as given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum DomainVerdict {
    /// Every task is guaranteed (or it has none).
    Schedulable,
    /// A task is not valid for the analysis.
    InvalidTasks {
        /// The task, when one is to blame.
        task: Option<usize>,
        /// What is wrong (its index is the task's position in priority order).
        error: WorkloadError,
    },
    /// No interface: the interface analysis failed.
    NoInterface(DomainFailure),
    /// No interface: Lemma 1 does not cover the guest's priority order, and none was given.
    PriorityOrderNotCovered,
    /// The root cannot deliver its budget within every period: none of its tasks can be
    /// guaranteed.
    ServerUnschedulable,
    /// An EDF guest fails the dbf test on its interface.
    DemandBoundFails(DomainFailure),
    /// An EDF guest in a server whose supply is not the periodic resource model's: no
    /// analysis covers it.
    EdfNotCovered {
        /// The server.
        server: ServerKind,
    },
    /// This task, the first by local priority, is not guaranteed (its [`TaskVerdict`] says
    /// why).
    TaskNotGuaranteed {
        /// Position of the task.
        task: usize,
    },
}

impl DomainVerdict {
    /// True for [`DomainVerdict::Schedulable`].
    pub fn is_schedulable(&self) -> bool {
        matches!(self, DomainVerdict::Schedulable)
    }
}

/// One task's result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TaskResult {
    /// Lemma 1 for this task alone on its domain's interface.
    pub lemma1: Lemma1,
    /// Its response-time analysis.
    pub response: Response,
    /// Bound to its server's releases in the response-time analysis.
    pub bound_to_release: bool,
    /// The verdict.
    pub verdict: TaskVerdict,
}

/// Lemma 1 for one task on its domain's interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Lemma1 {
    /// Some `t ≤ d_i` has `sbf(t) ≥ rbf_i(t)`.
    Holds,
    /// None has (or the exact test ran past its step limit: the safe side).
    Fails,
    /// Not tested (EDF guest, no interface, a priority order it does not cover).
    NotTested,
}

/// One task's response-time analysis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Response {
    /// The hierarchical analysis's bound.
    Bound(ResponseBound),
    /// No response-time analysis applies (the root model has none, or an EDF guest).
    NotApplicable,
    /// Not analysed (its domain has no interface, or the root refused the servers).
    NotAnalysed,
}

/// Why a task is or is not guaranteed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TaskVerdict {
    /// Guaranteed by Lemma 1 on its interface, whose supply its server delivers.
    ByLemma1,
    /// Guaranteed by its response-time bound (Lemma 1 does not guarantee it).
    ByResponseTime,
    /// Guaranteed by its EDF domain's dbf test on the interface.
    ByDemandBound,
    /// Neither sufficient test guarantees it.
    NotGuaranteed {
        /// Why not Lemma 1.
        lemma1: Lemma1Gap,
        /// Why not the response-time bound.
        response: ResponseGap,
    },
    /// Its EDF domain fails the dbf test.
    DemandBoundFails,
    /// Its server cannot deliver its budget within its period at the root.
    ServerUnschedulable,
    /// Not analysed.
    NotAnalysed(NotAnalysed),
}

impl TaskVerdict {
    /// Guaranteed by one of the tests.
    pub fn is_guaranteed(self) -> bool {
        matches!(
            self,
            TaskVerdict::ByLemma1 | TaskVerdict::ByResponseTime | TaskVerdict::ByDemandBound
        )
    }
}

/// Why Lemma 1 does not guarantee a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Lemma1Gap {
    /// It does not cover the guest's priority order.
    PriorityOrder,
    /// It fails on the interface.
    Fails,
    /// It holds, but the server's supply is not the periodic resource model's.
    SupplyNotPeriodicResource(ServerKind),
    /// It was not tested.
    NotTested,
}

/// Why the response-time analysis does not guarantee a task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ResponseGap {
    /// The bound passes the deadline (the recurrence reached `at_least`).
    ExceedsDeadline {
        /// First value found past the deadline.
        at_least: u64,
    },
    /// No response-time analysis applies under the root model.
    NotApplicable,
    /// It was not analysed.
    NotAnalysed,
}

/// Why a task was not analysed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum NotAnalysed {
    /// Its domain's tasks are not valid for the analysis.
    InvalidTasks,
    /// Its domain has no interface (the domain's verdict says why).
    NoInterface,
    /// An EDF guest in a server whose supply is not the periodic resource model's.
    EdfInServer(ServerKind),
}
