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
//! **Step 1, each domain alone.** Its tasks are validated ([`Workload`](crate::Workload)); its interface is
//! found or checked by [`domain_interface`](crate::domain_interface) (Algorithm 1, `(Π, MinExec(Π))`, or a given
//! one checked by Lemma 1 or the dbf test). Lemma 1 orders the tasks rate- (or deadline-)
//! monotonically, equal periods (deadlines) one level, so for a fixed-priority guest whose
//! priority order is not that one it proves nothing: no interface can be computed, and a
//! given one is only taken to the root, for the response-time analysis to judge. The order
//! is Lemma 1's iff no priority puts a longer period (deadline) before a shorter one and
//! tasks of equal priority have equal periods (deadlines): equal priorities interfere both
//! ways ([`crate::interferes`]), so a tie between different periods would make the task of
//! the shorter one wait behind the other, which `rbf` in period order does not count. A domain without tasks
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
//!   ([`RootCheck::Skipped`](crate::RootCheck::Skipped)). Not sound — it is how the 2011 RT-Xen evaluation applied
//!   the analysis, kept for comparison.
//! * [`RootModel::Edf`] — EDF over servers that keep unused budget to the end of the
//!   period (RTDS, SEDF) on one pcpu: the test of Bertogna, Cirinei and Lipari with m = 1
//!   ([`crate::bcl`]), `Θ_k + Σ_{i≠k} W_i(Π_k) ≤ Π_k`, which holds whenever each server
//!   wakes. `Σ Θ/Π ≤ 1` is not enough for such servers: issue 23's property test found an
//!   RTDS server (4, 1) missing behind a server (14, 4) that woke 4.3 ms before their
//!   common deadline (`crates/analyze/tests/agreement.rs`,
//!   `edf_over_budget_keeping_servers_needs_more_than_their_bandwidth`); this test refuses it.
//! * [`RootModel::RateMonotonic`] — the interfaces as rate-monotonic periodic tasks, by
//!   exact response-time analysis ([`rate_monotonic_root`](crate::rate_monotonic_root)), for VMMs that do not enforce a
//!   budget per period (Credit, ARINC 653): the verdict holds for servers that deliver
//!   these interfaces, not for such a VMM itself.
//!
//! **Step 4, task by task.** Two sufficient tests, either of which guarantees a task once
//! the root serves its server: Lemma 1 for the task alone on the interface
//! (`∃t ≤ d_i: sbf(t) ≥ rbf_i(t)`, [`InterfaceAnalyzer::lemma1_holds`](crate::InterfaceAnalyzer::lemma1_holds)) — where the server
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

mod domain;
mod result;
mod root;
mod tasks;
#[cfg(test)]
mod tests;

use serde::Serialize;

pub use result::{
    AtRoot, DomainResult, DomainVerdict, Lemma1, Lemma1Gap, NotAnalysed, Response, ResponseGap,
    SystemResult, TaskResult, TaskVerdict,
};

use crate::compose::{rate_monotonic_ranks, InterfaceChoice};
use crate::hierarchical::ServerKind;
use crate::interface::GuestScheduler;
use crate::prm::{Interface, SbfMode};
use crate::ratio::ExactSum;
use crate::rta::FpTask;
use crate::workload::Task;

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
    /// EDF over servers that keep unused budget (RTDS, SEDF) on one pcpu: the test of
    /// Bertogna, Cirinei and Lipari with m = 1 ([`crate::bcl`]).
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
    pub(crate) fn guest(self) -> GuestScheduler {
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
    let steps: Vec<domain::Step1> = system.domains.iter().map(domain::step1).collect();
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
    let root = root::root(system, &steps, &priorities);

    // Step 4: task by task.
    let domains = steps
        .into_iter()
        .zip(&system.domains)
        .zip(root.servers)
        .map(|((step, domain), at_root)| tasks::verdicts(system.root, domain, step, at_root))
        .collect();
    SystemResult {
        domains,
        u_rm,
        root_error: root.error,
    }
}
