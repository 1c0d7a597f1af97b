//! A whole one-pcpu system under a VMM's root: each domain's interface, the root's
//! test of the servers, and a typed verdict per domain and per task — one entry point,
//! [`analyze`].
//!
//! # Design note
//! **Input.** A [`System`]: the [`RootModel`] (how the VMM schedules the domains' servers)
//! and the [`Domain`]s, each with its guest's tasks ([`Guest`]), how its interface is
//! chosen ([`InterfaceChoice`]), the sbf mode that applies to it, an optional root
//! priority and, for a Sporadic Server, its cap on pending replenishments. Time is in
//! the caller's unit, as everywhere in this crate.
//!
//! **Step 1, each domain alone.** Its tasks are validated ([`Workload`]); its interface is
//! found or checked by [`domain_interface`] (Algorithm 1, `(Π, MinExec(Π))`, or a given
//! one checked by Lemma 1 or the dbf test). Lemma 1 orders the tasks rate- (or deadline-)
//! monotonically, so for a fixed-priority guest whose priority order is not that one it
//! proves nothing: no interface can be computed, and a given one is only taken to the
//! root, for the response-time analysis to judge. A domain without tasks
//! ([`Guest::Idle`]) needs no interface; a given one (its VCPU) still competes at the root.
//!
//! **Step 2, server priorities.** The domains with an interface are the root's servers.
//! Their priorities are the given ones when every server has one, and otherwise
//! rate-monotonic by interface period, ties by domain order, numbered from 1
//! ([`rate_monotonic_ranks`]).
//!
//! **Step 3, the root** ([`RootModel`]):
//! * [`RootModel::FixedPriority`] — fixed-priority servers (Davis & Burns 2005, in the form
//!   of Mei 2017, §5.2.1; [`crate::hierarchical`]): a server is served iff
//!   `r_S(Θ) ≤ Π` (5.1), counting a Deferrable server's back-to-back interference; its
//!   tasks' response-time bounds follow from (5.4) when the model asks for them.
//! * [`RootModel::NoRootCheck`] — the same servers and the same task recurrence (5.4), the
//!   higher-priority servers interfering, but (5.1) not checked: every task gets its bound
//!   ([`RootCheck::Skipped`]). Not sound — it is how the 2011 RT-Xen evaluation applied
//!   the analysis, kept for comparison.
//! * [`RootModel::Edf`] — EDF over servers (RTDS, SEDF): every server gets its budget in
//!   every period iff `Σ Θ/Π ≤ 1` (Liu & Layland's EDF bound, on the servers as
//!   implicit-deadline periodic tasks).
//! * [`RootModel::RateMonotonic`] — the interfaces as rate-monotonic periodic tasks, by
//!   exact response-time analysis ([`rate_monotonic_root`]), for VMMs that do not enforce a
//!   budget per period (Credit, ARINC 653): the verdict holds for servers that deliver
//!   these interfaces, not for such a VMM itself.
//!
//! **Step 4, task by task.** Two sufficient tests, either of which guarantees a task once
//! the root serves its server: Lemma 1 for the task alone on the interface
//! (`∃t ≤ d_i: sbf(t) ≥ rbf_i(t)`, [`InterfaceAnalyzer::lemma1_holds`]) — where the server
//! delivers the periodic resource model's supply
//! ([`ServerKind::supplies_periodic_resource`]; every server of the other roots is taken
//! to) — and the task's response-time bound within its deadline. Neither dominates:
//! Lemma 1 takes the whole interface into account, the bounds count every server period the
//! task's load spans. An EDF guest has only the dbf test, all or nothing, and only where
//! the model holds. A domain is schedulable iff all its tasks are guaranteed; its verdict
//! names the first task (by local priority) that is not.
//!
//! Every verdict is an enum ([`DomainVerdict`], [`TaskVerdict`]); turning them into words
//! is the caller's.

use serde::Serialize;

use crate::compose::{
    domain_interface, rate_monotonic_ranks, rate_monotonic_root, DomainFailure, InterfaceChoice,
};
use crate::error::WorkloadError;
use crate::hierarchical::{
    hierarchical_response_times_with, HierarchyError, RootCheck, Server, ServerKind,
};
use crate::interface::{GuestScheduler, InterfaceAnalyzer};
use crate::prm::{Interface, SbfMode, SupplyForm};
use crate::ratio::{ExactSum, Ratio};
use crate::rta::{FpTask, ResponseBound};
use crate::workload::{Task, Workload};

/// How the VMM schedules the domains' servers on the pcpu.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum RootModel {
    /// Fixed-priority servers of this kind (a Sporadic Server's merging is decided per
    /// domain from its [`Domain::replenishment_cap`]): each must deliver its budget within
    /// its period (Mei (5.1)); with `response_times`, each task's bound by (5.4).
    FixedPriority {
        /// The servers' policy.
        server: ServerKind,
        /// Compute the tasks' response-time bounds (the hierarchical analysis covers the
        /// server's supply to its tasks).
        response_times: bool,
    },
    /// The servers and task recurrence of [`RootModel::FixedPriority`] with the root check
    /// (5.1) skipped: a server the root cannot serve still gets task bounds. Not sound.
    NoRootCheck {
        /// The servers' policy.
        server: ServerKind,
    },
    /// EDF over servers: `Σ Θ/Π ≤ 1`.
    Edf,
    /// The interfaces as rate-monotonic periodic tasks (exact response-time analysis).
    RateMonotonic,
}

impl RootModel {
    /// The server kind of the hierarchical analysis, for the fixed-priority roots.
    pub fn server(self) -> Option<ServerKind> {
        match self {
            RootModel::FixedPriority { server, .. } | RootModel::NoRootCheck { server } => {
                Some(server)
            }
            RootModel::Edf | RootModel::RateMonotonic => None,
        }
    }

    /// Whether tasks get response-time bounds under this root.
    pub fn has_response_times(self) -> bool {
        match self {
            RootModel::FixedPriority { response_times, .. } => response_times,
            RootModel::NoRootCheck { .. } => true,
            RootModel::Edf | RootModel::RateMonotonic => false,
        }
    }
}

/// A whole system: its root and its domains.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct System {
    /// How the servers are scheduled.
    pub root: RootModel,
    /// The domains, in the order that breaks priority ties.
    pub domains: Vec<Domain>,
}

/// One domain (a VM, a component) of a [`System`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Domain {
    /// Name, for the servers of the hierarchical analysis.
    pub name: String,
    /// Its guest's tasks.
    pub guest: Guest,
    /// How its interface is chosen. An idle domain takes only a given one.
    pub interface: InterfaceChoice,
    /// The sbf its interface may use (`Auto` only where the harmonic form can be sound:
    /// releases on the interface's period boundaries).
    pub sbf: SbfMode,
    /// Its server's priority at the root (smaller = higher); used when every server has
    /// one.
    pub root_priority: Option<u32>,
    /// A Sporadic Server's cap on pending replenishments (`None`: it never merges).
    pub replenishment_cap: Option<ReplenishmentCap>,
}

/// A Sporadic Server's cap on pending replenishments, for [`ServerKind::sporadic`]: the
/// server can merge them (and wait a whole period) iff `max_pending` is below its budget
/// counted in the scheduler's time grain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ReplenishmentCap {
    /// The most replenishments pending at once.
    pub max_pending: u64,
    /// The scheduler's time grains in one analysis unit (the core's grain is 1 ns).
    pub grains_per_unit: u64,
}

/// A domain's guest scheduler and its tasks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Guest {
    /// No tasks: nothing to guarantee; a given interface (its VCPU) competes at the root.
    Idle,
    /// Fixed priorities.
    FixedPriority {
        /// The order Lemma 1 is applied in; the guest's own priority order must be this
        /// one for Lemma 1 to prove anything.
        order: PriorityOrder,
        /// The tasks, each with its local priority (smaller = higher; equal priorities
        /// interfere both ways). Their priority order is by priority, ties by position;
        /// results are in the order given.
        tasks: Vec<GuestTask>,
    },
    /// Earliest deadline first: the dbf test.
    Edf {
        /// The tasks; results are in the order given.
        tasks: Vec<Task>,
    },
}

/// The fixed-priority order Lemma 1 assumes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PriorityOrder {
    /// By period ([`GuestScheduler::Rm`]).
    RateMonotonic,
    /// By relative deadline ([`GuestScheduler::Dm`]).
    DeadlineMonotonic,
}

impl PriorityOrder {
    fn guest(self) -> GuestScheduler {
        match self {
            PriorityOrder::RateMonotonic => GuestScheduler::Rm,
            PriorityOrder::DeadlineMonotonic => GuestScheduler::Dm,
        }
    }
}

/// A task of a fixed-priority guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct GuestTask {
    /// Period, WCET, deadline (`≤` period) and local priority.
    pub task: FpTask,
    /// `Some(o)`: strictly periodic, released at `o + k·period`; such a task is bound to its
    /// server's releases ((H4) of [`crate::hierarchical`]) when `o` and its period are
    /// multiples of the interface period and the server releases on a fixed grid. `None`:
    /// released at any time.
    pub offset: Option<u64>,
}

/// The result of [`analyze`].
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
    /// ([`RootModel::NoRootCheck`], or [`SystemResult::root_error`]).
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

/// A domain's tasks as the analysis takes them.
enum Prepared {
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
            let covered = ordered.windows(2).all(|pair| key(&pair[0]) <= key(&pair[1]));
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
struct Step1 {
    prepared: Prepared,
    interface: Option<Interface>,
    proven_optimal: bool,
    /// The interface analysis ran; its failure, if any.
    analysed: Option<Option<DomainFailure>>,
}

fn step1(domain: &Domain) -> Step1 {
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
            workload, guest, ..
        } => {
            let analyzer = InterfaceAnalyzer::new(workload, *guest);
            let outcome = domain_interface(&analyzer, domain.interface, domain.sbf);
            (
                outcome.interface,
                outcome.proven_optimal,
                Some(outcome.failure),
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

/// Analyses a whole system: every domain's interface, the root under `system.root`, and a
/// verdict per domain and per task (module docs).
///
/// ```
/// use rtvmm_analysis::system::{
///     analyze, Domain, DomainVerdict, Guest, GuestTask, PriorityOrder, RootModel, System,
///     TaskVerdict,
/// };
/// use rtvmm_analysis::{FpTask, Interface, InterfaceChoice, SbfMode, ServerKind};
///
/// // One Periodic Server (Π, Θ) = (5, 2) holding one task (20, 3) released at any time.
/// let system = System {
///     root: RootModel::FixedPriority { server: ServerKind::Periodic, response_times: true },
///     domains: vec![Domain {
///         name: "d".into(),
///         guest: Guest::FixedPriority {
///             order: PriorityOrder::RateMonotonic,
///             tasks: vec![GuestTask { task: FpTask::new(20, 3, 1), offset: None }],
///         },
///         interface: InterfaceChoice::Given(Interface::new(5, 2)),
///         sbf: SbfMode::General,
///         root_priority: None,
///         replenishment_cap: None,
///     }],
/// };
/// let result = analyze(&system);
/// // Lemma 1: sbf(t) ≥ 3 first at t = 2·3 + 5 + 1 = 12 ≤ 20.
/// assert_eq!(result.domains[0].tasks[0].verdict, TaskVerdict::ByLemma1);
/// assert_eq!(result.domains[0].verdict, DomainVerdict::Schedulable);
/// ```
pub fn analyze(system: &System) -> SystemResult {
    let steps: Vec<Step1> = system.domains.iter().map(step1).collect();
    let interfaces: Vec<Option<Interface>> = steps.iter().map(|s| s.interface).collect();

    // Step 2: server priorities.
    let given: Option<Vec<Option<u32>>> = system
        .domains
        .iter()
        .zip(&interfaces)
        .map(|(d, i)| match i {
            Some(_) => d.root_priority.map(Some),
            None => Some(None),
        })
        .collect();
    let priorities: Vec<Option<u32>> = given.unwrap_or_else(|| {
        rate_monotonic_ranks(
            &interfaces
                .iter()
                .map(|i| i.map(|i| i.period))
                .collect::<Vec<_>>(),
        )
        .into_iter()
        .map(|rank| rank.map(|rank| rank as u32 + 1))
        .collect()
    });
    let mut u_rm = ExactSum::zero();
    for interface in interfaces.iter().flatten() {
        u_rm.add(interface.bandwidth());
    }

    // Step 3: the root.
    let root = root(system, &steps, &priorities, &u_rm);

    // Step 4: task by task.
    let domains = steps
        .into_iter()
        .zip(&system.domains)
        .zip(root.servers)
        .map(|((step, domain), at_root)| verdicts(system.root, domain, step, at_root))
        .collect();
    SystemResult {
        domains,
        u_rm,
        root_error: root.error,
    }
}

/// A server's state after step 3.
#[derive(Default)]
struct ServerState {
    at_root: Option<AtRoot>,
    /// Per task in priority order: the hierarchical bound and whether it is bound to the
    /// server's releases.
    bounds: Option<Vec<(ResponseBound, bool)>>,
}

struct Root {
    servers: Vec<ServerState>,
    error: Option<HierarchyError>,
}

fn root(system: &System, steps: &[Step1], priorities: &[Option<u32>], u_rm: &ExactSum) -> Root {
    let mut servers: Vec<ServerState> = steps
        .iter()
        .zip(priorities)
        .map(|(step, priority)| ServerState {
            at_root: step.interface.map(|_| AtRoot {
                priority: priority.unwrap_or(u32::MAX),
                server: None,
                served: None,
                response_time: None,
            }),
            bounds: None,
        })
        .collect();
    let mut error = None;
    match system.root {
        RootModel::FixedPriority { server, .. } | RootModel::NoRootCheck { server } => {
            let check = match system.root {
                RootModel::NoRootCheck { .. } => RootCheck::Skipped,
                _ => RootCheck::Checked,
            };
            let with_tasks = system.root.has_response_times();
            let members: Vec<usize> = (0..steps.len())
                .filter(|&k| steps[k].interface.is_some())
                .collect();
            let list: Vec<Server> = members
                .iter()
                .map(|&k| {
                    let interface = steps[k].interface.expect("a server");
                    let domain = &system.domains[k];
                    let kind = match (server, domain.replenishment_cap) {
                        (ServerKind::Sporadic, Some(cap)) => ServerKind::sporadic(
                            cap.max_pending,
                            interface.budget.saturating_mul(cap.grains_per_unit),
                        ),
                        (kind, _) => kind,
                    };
                    if let Some(at_root) = &mut servers[k].at_root {
                        at_root.server = Some(kind);
                    }
                    let tasks: Vec<GuestTask> = match &steps[k].prepared {
                        Prepared::Tasks {
                            fixed: Some(fixed), ..
                        } if with_tasks => fixed.clone(),
                        _ => Vec::new(),
                    };
                    let bound = if tasks.is_empty() || !kind.has_release_grid() {
                        Vec::new()
                    } else {
                        tasks
                            .iter()
                            .map(|t| {
                                t.offset.is_some_and(|offset| {
                                    t.task.period % interface.period == 0
                                        && offset % interface.period == 0
                                })
                            })
                            .collect()
                    };
                    Server {
                        name: domain.name.clone(),
                        budget: interface.budget,
                        period: interface.period,
                        priority: priorities[k].unwrap_or(u32::MAX),
                        kind,
                        tasks: tasks.iter().map(|t| t.task).collect(),
                        bound,
                    }
                })
                .collect();
            match hierarchical_response_times_with(&list, check) {
                Ok(results) => {
                    for ((&k, result), server) in members.iter().zip(results).zip(&list) {
                        let state = &mut servers[k];
                        if let Some(at_root) = &mut state.at_root {
                            at_root.served =
                                (check == RootCheck::Checked).then_some(result.schedulable_at_root);
                            at_root.response_time = result.budget_response_time;
                        }
                        if with_tasks && !result.tasks.is_empty() {
                            let bound = |i: usize| server.bound.get(i).copied().unwrap_or(false);
                            state.bounds = Some(
                                result
                                    .tasks
                                    .iter()
                                    .enumerate()
                                    .map(|(i, b)| (*b, bound(i)))
                                    .collect(),
                            );
                        }
                    }
                }
                // Reachable only with a given interface beyond MAX_TIME.
                Err(e) => error = (!list.is_empty()).then_some(e),
            }
        }
        RootModel::Edf => {
            let fits = u_rm.cmp_ratio(Ratio::from_integer(1)) != std::cmp::Ordering::Greater;
            for at_root in servers.iter_mut().filter_map(|s| s.at_root.as_mut()) {
                at_root.served = Some(fits);
            }
        }
        RootModel::RateMonotonic => {
            let interfaces: Vec<Option<Interface>> = steps.iter().map(|s| s.interface).collect();
            for (state, task) in servers.iter_mut().zip(rate_monotonic_root(&interfaces)) {
                if let (Some(at_root), Some(task)) = (&mut state.at_root, task) {
                    at_root.served = Some(task.response_time.is_some());
                    at_root.response_time = task.response_time;
                }
            }
        }
    }
    Root { servers, error }
}

/// Step 4 for one domain.
fn verdicts(model: RootModel, domain: &Domain, step: Step1, state: ServerState) -> DomainResult {
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
            (Some(bounds), _) => bounds.iter().map(|&(b, bound)| (Response::Bound(b), bound)).collect(),
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
            let bounded = matches!(responses[k].0, Response::Bound(ResponseBound::Bounded { .. }));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::WorkloadError;

    fn fp_task(period: u64, wcet: u64, priority: u32, offset: Option<u64>) -> GuestTask {
        GuestTask {
            task: FpTask::new(period, wcet, priority),
            offset,
        }
    }

    fn domain(name: &str, guest: Guest, interface: InterfaceChoice) -> Domain {
        Domain {
            name: name.into(),
            guest,
            interface,
            sbf: SbfMode::General,
            root_priority: None,
            replenishment_cap: None,
        }
    }

    fn rm(tasks: Vec<GuestTask>) -> Guest {
        Guest::FixedPriority {
            order: PriorityOrder::RateMonotonic,
            tasks,
        }
    }

    fn given(period: u64, budget: u64) -> InterfaceChoice {
        InterfaceChoice::Given(Interface::new(period, budget))
    }

    fn periodic(response_times: bool) -> RootModel {
        RootModel::FixedPriority {
            server: ServerKind::Periodic,
            response_times,
        }
    }

    fn bound(result: &TaskResult) -> Option<u64> {
        match result.response {
            Response::Bound(bound) => bound.response_time(),
            _ => None,
        }
    }

    /// One Periodic Server (Π, Θ) = (10, 3) alone, general sbf (blackout 2·7 = 14), with
    /// fast = (10, 2) and slow = (20, 5), both released at the server's releases.
    /// Lemma 1: sbf(t) = 0 for t ≤ 14, so fast fails; slow needs rbf ≥ 7 but sbf(20) = 3.
    /// Root: r(3) = 3 ≤ 10. fast, bound: R = r(2) = 2 → guaranteed by its bound.
    /// slow, bound: L = 5 + 2⌈R/10⌉: R = 5 → L = 7, k = 3, x = 1 → R = 2·10 + 1 = 21 > 20
    /// (unbound: 7 + 20 + 1 = 28; the smaller wins): not guaranteed, and to blame.
    #[test]
    fn fixed_priority_root_by_hand() {
        let system = System {
            root: periodic(true),
            domains: vec![domain(
                "a",
                rm(vec![
                    fp_task(10, 2, 1, Some(0)),
                    fp_task(20, 5, 2, Some(0)),
                ]),
                given(10, 3),
            )],
        };
        let result = analyze(&system);
        let a = &result.domains[0];
        assert_eq!(
            a.root,
            Some(AtRoot {
                priority: 1,
                server: Some(ServerKind::Periodic),
                served: Some(true),
                response_time: Some(3),
            })
        );
        assert_eq!(a.analysed_as, Some(GuestScheduler::Rm));
        assert_eq!(a.supply, Some(SupplyForm::General));
        let (fast, slow) = (&a.tasks[0], &a.tasks[1]);
        assert_eq!(fast.lemma1, Lemma1::Fails);
        assert_eq!((bound(fast), fast.bound_to_release), (Some(2), true));
        assert_eq!(fast.verdict, TaskVerdict::ByResponseTime);
        assert_eq!(
            slow.verdict,
            TaskVerdict::NotGuaranteed {
                lemma1: Lemma1Gap::Fails,
                response: ResponseGap::ExceedsDeadline { at_least: 21 },
            }
        );
        assert_eq!(a.verdict, DomainVerdict::TaskNotGuaranteed { task: 1 });
        assert!(!result.schedulable());
    }

    /// Two Periodic servers of period 4 sharing 125 % of the pcpu: S1 (Θ 2, priority 1) with
    /// (40, 2) and S2 (Θ 3, priority 2) with (40, 3), released at any time.
    /// S1: r(2) = 2 ≤ 4; task: gap 2 + r(2) = 4. Lemma 1 on (4, 2), blackout 4: sbf(6) = 2.
    /// S2: r(3) = 3 + 2⌈r/4⌉: 3 → 5 → 7 > 4, not served at the root: under the
    /// fixed-priority root its task has no bound and the domain fails; without the root
    /// check its task gets (5.4)'s bound, gap 1 + r(3) = 1 + 7 = 8, and Lemma 1 on (4, 3)
    /// (blackout 2, sbf(5) = 3) guarantees it.
    #[test]
    fn a_server_the_root_cannot_serve_gets_bounds_only_without_the_root_check() {
        let system = |root| System {
            root,
            domains: vec![
                Domain {
                    root_priority: Some(1),
                    ..domain("S1", rm(vec![fp_task(40, 2, 1, None)]), given(4, 2))
                },
                Domain {
                    root_priority: Some(2),
                    ..domain("S2", rm(vec![fp_task(40, 3, 1, None)]), given(4, 3))
                },
            ],
        };
        let full = analyze(&system(periodic(true)));
        let (s1, s2) = (&full.domains[0], &full.domains[1]);
        assert_eq!(bound(&s1.tasks[0]), Some(4));
        assert_eq!(s1.tasks[0].verdict, TaskVerdict::ByLemma1);
        assert_eq!(s2.root.and_then(|r| r.served), Some(false));
        assert_eq!(
            s2.tasks[0].response,
            Response::Bound(ResponseBound::ServerUnschedulable)
        );
        assert_eq!(s2.tasks[0].verdict, TaskVerdict::ServerUnschedulable);
        assert_eq!(s2.verdict, DomainVerdict::ServerUnschedulable);
        assert!(!full.schedulable());

        let unchecked = analyze(&system(RootModel::NoRootCheck {
            server: ServerKind::Periodic,
        }));
        let (s1, s2) = (&unchecked.domains[0], &unchecked.domains[1]);
        assert_eq!(bound(&s1.tasks[0]), Some(4));
        assert_eq!(s2.root.and_then(|r| r.served), None);
        assert_eq!(bound(&s2.tasks[0]), Some(8));
        assert_eq!(s2.tasks[0].lemma1, Lemma1::Holds);
        assert_eq!(s2.tasks[0].verdict, TaskVerdict::ByLemma1);
        assert!(unchecked.schedulable());
    }

    /// EDF over servers: (4, 2) and (4, 3) need 5/4 of the pcpu, so neither is served;
    /// (4, 2) and (8, 3) need 7/8, so both are, and the task (40, 3) passes Lemma 1 on
    /// (8, 3) (blackout 10, sbf(13) = 3). No response times under EDF.
    #[test]
    fn edf_root_by_hand() {
        let system = |second: u64| System {
            root: RootModel::Edf,
            domains: vec![
                domain("a", rm(vec![fp_task(40, 2, 1, None)]), given(4, 2)),
                domain("b", rm(vec![fp_task(40, 3, 1, None)]), given(second, 3)),
            ],
        };
        let over = analyze(&system(4));
        assert_eq!(over.u_rm.to_fraction_string(), "5/4");
        for d in &over.domains {
            assert_eq!(d.root.and_then(|r| r.served), Some(false));
            assert_eq!(d.verdict, DomainVerdict::ServerUnschedulable);
            assert_eq!(d.tasks[0].response, Response::NotApplicable);
        }
        let fits = analyze(&system(8));
        assert_eq!(fits.u_rm.to_fraction_string(), "7/8");
        assert!(fits.schedulable());
        assert_eq!(fits.domains[1].tasks[0].verdict, TaskVerdict::ByLemma1);
        assert_eq!(fits.domains[1].root.and_then(|r| r.server), None);
    }

    /// Interfaces as RM periodic tasks: (4, 3) first (shorter period), then (8, 3):
    /// R = 3 + 3⌈R/4⌉: 3 → 6 → 9 → 12 > 8: not served. Priorities by period, from 1.
    #[test]
    fn rate_monotonic_root_by_hand() {
        let system = System {
            root: RootModel::RateMonotonic,
            domains: vec![
                domain("b", rm(vec![fp_task(40, 1, 1, None)]), given(8, 3)),
                domain("a", rm(vec![fp_task(40, 1, 1, None)]), given(4, 3)),
            ],
        };
        let result = analyze(&system);
        let roots: Vec<AtRoot> = result.domains.iter().filter_map(|d| d.root).collect();
        assert_eq!(
            roots,
            vec![
                AtRoot {
                    priority: 2,
                    server: None,
                    served: Some(false),
                    response_time: None,
                },
                AtRoot {
                    priority: 1,
                    server: None,
                    served: Some(true),
                    response_time: Some(3),
                },
            ]
        );
        assert_eq!(result.domains[0].verdict, DomainVerdict::ServerUnschedulable);
        assert_eq!(result.domains[1].verdict, DomainVerdict::Schedulable);
    }

    /// slow = (40, 2) above fast = (10, 1): not the rate-monotonic order, so Lemma 1 says
    /// nothing. Computed interface: none. Given (10, 3), alone: slow R = 7 + r(2) = 9;
    /// fast L = 1 + 2⌈R/40⌉: R = 1 → L = 3 → 7 + 3 = 10 → L = 3 → 10 ≤ 10: both bounded.
    #[test]
    fn a_priority_order_lemma1_does_not_cover() {
        let guest = rm(vec![fp_task(40, 2, 1, None), fp_task(10, 1, 2, None)]);
        let system = |interface| System {
            root: periodic(true),
            domains: vec![domain("d", guest.clone(), interface)],
        };
        let computed = analyze(&system(InterfaceChoice::default()));
        let d = &computed.domains[0];
        assert_eq!(d.verdict, DomainVerdict::PriorityOrderNotCovered);
        assert_eq!((d.interface, d.root, d.analysed_as), (None, None, None));
        assert_eq!(
            d.tasks[0].verdict,
            TaskVerdict::NotAnalysed(NotAnalysed::NoInterface)
        );
        assert_eq!(d.tasks[0].response, Response::NotAnalysed);
        let given = analyze(&system(given(10, 3)));
        let d = &given.domains[0];
        assert_eq!(d.verdict, DomainVerdict::Schedulable);
        assert_eq!(d.analysed_as, None);
        let bounds: Vec<Option<u64>> = d.tasks.iter().map(bound).collect();
        assert_eq!(bounds, vec![Some(9), Some(10)]);
        assert!(d
            .tasks
            .iter()
            .all(|t| t.lemma1 == Lemma1::NotTested && t.verdict == TaskVerdict::ByResponseTime));
    }

    /// Domains that are not analysed, and one that only competes: an idle domain with a
    /// VCPU (10, 1) is a server; one without is not; a task with wcet above its period
    /// invalidates its domain; an EDF guest in a Polling Server has no analysis. Root:
    /// idle (10, 1) before edf (10, 2) (tie by position): r(2) = 2 + ⌈r/10⌉ = 3 ≤ 10.
    #[test]
    fn domains_that_are_not_analysed() {
        let system = System {
            root: RootModel::FixedPriority {
                server: ServerKind::Polling,
                response_times: true,
            },
            domains: vec![
                domain("idle", Guest::Idle, given(10, 1)),
                domain("empty", Guest::Idle, InterfaceChoice::default()),
                domain("bad", rm(vec![fp_task(4, 5, 1, None)]), given(10, 2)),
                domain(
                    "edf",
                    Guest::Edf {
                        tasks: vec![Task::new(40, 4)],
                    },
                    given(10, 2),
                ),
            ],
        };
        let result = analyze(&system);
        let [idle, empty, bad, edf] = &result.domains[..] else {
            panic!("four domains");
        };
        assert_eq!(idle.verdict, DomainVerdict::Schedulable);
        assert_eq!(idle.root.map(|r| r.priority), Some(1));
        assert_eq!((empty.verdict.clone(), empty.root), (DomainVerdict::Schedulable, None));
        assert_eq!(
            bad.verdict,
            DomainVerdict::InvalidTasks {
                task: Some(0),
                error: WorkloadError::WcetExceedsPeriod {
                    task: 0,
                    wcet: 5,
                    period: 4
                },
            }
        );
        assert_eq!(bad.root, None);
        assert_eq!(
            edf.verdict,
            DomainVerdict::EdfNotCovered {
                server: ServerKind::Polling
            }
        );
        assert_eq!(
            edf.root.map(|r| (r.priority, r.served, r.response_time)),
            Some((2, Some(true), Some(3)))
        );
        assert_eq!(edf.tasks[0].response, Response::NotApplicable);
        assert_eq!(result.u_rm.to_fraction_string(), "3/10");
    }

    /// A Sporadic Server (5, 2) with a task (20, 3) released at any time. A cap of 8
    /// pending replenishments is below the budget in ns (2·10⁶), so it can merge: gap 5,
    /// R = 5 + 5 + r(1) = 11, and Lemma 1 (which holds: sbf(12) = 3) is not used. A cap of
    /// 2·10⁶ never merges: Lemma 1 guarantees the task.
    #[test]
    fn a_sporadic_server_that_can_merge_is_not_a_periodic_resource() {
        let system = |max_pending| System {
            root: RootModel::FixedPriority {
                server: ServerKind::Sporadic,
                response_times: true,
            },
            domains: vec![Domain {
                replenishment_cap: Some(ReplenishmentCap {
                    max_pending,
                    grains_per_unit: 1_000_000,
                }),
                ..domain("s", rm(vec![fp_task(20, 3, 1, None)]), given(5, 2))
            }],
        };
        let merging = analyze(&system(8));
        let d = &merging.domains[0];
        assert_eq!(
            d.root.and_then(|r| r.server),
            Some(ServerKind::SporadicMerging)
        );
        assert_eq!(d.tasks[0].lemma1, Lemma1::Holds);
        assert_eq!(bound(&d.tasks[0]), Some(11));
        assert_eq!(d.tasks[0].verdict, TaskVerdict::ByResponseTime);
        let plain = analyze(&system(2_000_000));
        assert_eq!(
            plain.domains[0].root.and_then(|r| r.server),
            Some(ServerKind::Sporadic)
        );
        assert_eq!(plain.domains[0].tasks[0].verdict, TaskVerdict::ByLemma1);
    }
}
