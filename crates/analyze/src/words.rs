//! The analysis's typed verdicts in words: the reason a domain is refused, the root test,
//! and the notes that follow from the result. The only place they become sentences.

use rtvmm_analysis::system::{
    DomainResult, DomainVerdict, Lemma1Gap, ResponseGap, RootModel, SystemResult, TaskVerdict,
};
use rtvmm_analysis::{DomainFailure, GuestScheduler as AnalysisGuest, Interface, ServerKind};
use rtvmm_core::policy::PolicyKind;

use crate::convert::{DomainInput, Refused};
use crate::names::{guest_name, ns, server_name};
use crate::report::{DomainReport, RtaStatus, TaskReport};

/// Why the periodic resource model does not describe a server's supply.
fn prm_gap(server: ServerKind) -> &'static str {
    match server {
        ServerKind::Polling => "an idle server loses its budget",
        ServerKind::SporadicMerging => {
            "a replenishment merged at max_replenishments can come back up to a period late"
        }
        ServerKind::Periodic | ServerKind::Deferrable | ServerKind::Sporadic => "",
    }
}

/// Why a domain could not be expressed as analysis input.
pub(crate) fn refused(why: &Refused, unit: u64) -> String {
    match why {
        Refused::Aperiodic { .. } => "an aperiodic task has no minimum inter-arrival time, so \
                                      neither it nor the tasks it can delay can be guaranteed"
            .to_string(),
        Refused::ShorterThanUnit { deadline, .. } => format!(
            "its {} is shorter than the analysis unit {}; analyse with a smaller --quantum",
            if *deadline { "deadline" } else { "period" },
            ns(unit)
        ),
        Refused::Overrun { wcet, period, .. } => format!(
            "its wcet {wcet} exceeds its period {period}: an overrunning task cannot be guaranteed"
        ),
        Refused::VcpuOffset { offset } => format!(
            "vcpu.offset = {offset}: its VCPU has no budget before its first period while its \
             tasks may be released from time 0, and the analysis does not model a VCPU offset"
        ),
    }
}

/// Lemma 1 does not cover the guest's priority order.
fn priority_order(input: &DomainInput) -> String {
    format!(
        "the {} guest's priority order is not rate-monotonic, which Lemma 1 needs (--guest rm \
         analyses it as rate-monotonic)",
        input.guest_label
    )
}

/// The analysis crate's interface failure, with the task named as the file names it
/// (`name(k)`: the task at position k of the analysis's workload).
fn failure(
    failure: &DomainFailure,
    guest: Option<AnalysisGuest>,
    interface: Option<Interface>,
    name: impl Fn(usize) -> Option<String>,
) -> (String, Option<String>) {
    let guest = guest.unwrap_or_default();
    match failure {
        DomainFailure::Unschedulable { task_index, .. } => (
            format!(
                "it misses its deadline under {} even on a dedicated pcpu",
                guest_name(guest)
            ),
            name(*task_index),
        ),
        DomainFailure::InterfaceTooSmall { task_index, .. } => (
            match interface {
                Some(i) => format!(
                    "the {} test fails on the interface (Π, Θ) = ({}, {}) units",
                    match guest {
                        AnalysisGuest::Rm | AnalysisGuest::Dm => "Lemma 1",
                        AnalysisGuest::Edf => "EDF (dbf ≤ sbf)",
                    },
                    i.period,
                    i.budget
                ),
                None => "the interface is too small".to_string(),
            },
            name(*task_index),
        ),
        DomainFailure::Undecided { task_index, .. } => (
            format!(
                "the exact test of task {task_index} on the given interface needs more than {} \
                 steps; analyse in a coarser time unit",
                rtvmm_analysis::MAX_TEST_STEPS
            ),
            None,
        ),
        DomainFailure::Invalid { error } => (error.to_string(), None),
    }
}

/// Why an analysed domain is not schedulable, and the task to blame; `None` when it is.
pub(crate) fn blame(
    result: &DomainResult,
    input: &DomainInput,
    order: &[usize],
    tasks: &[TaskReport],
    policy: PolicyKind,
    unit: u64,
) -> Option<(String, Option<String>)> {
    // The analysis's task k is the declared task order[k].
    let name = |k: usize| order.get(k).map(|&i| tasks[i].name.clone());
    let server = || {
        result
            .root
            .and_then(|r| r.server)
            .map_or("server", server_name)
    };
    Some(match &result.verdict {
        DomainVerdict::Schedulable => return None,
        DomainVerdict::InvalidTasks { task, error } => (
            format!("the analysis refuses it: {error}"),
            task.and_then(name),
        ),
        DomainVerdict::NoInterface(why) => failure(why, result.analysed_as, None, name),
        DomainVerdict::PriorityOrderNotCovered => (priority_order(input), None),
        DomainVerdict::ServerUnschedulable => {
            let i = result.interface.expect("a server has an interface");
            (
                format!(
                    "the root cannot deliver its budget Θ = {} within every period Π = {} \
                     (none of its tasks can be guaranteed)",
                    ns(i.budget.saturating_mul(unit)),
                    ns(i.period.saturating_mul(unit))
                ),
                None,
            )
        }
        DomainVerdict::DemandBoundFails(why) => {
            failure(why, result.analysed_as, result.interface, name)
        }
        DomainVerdict::EdfNotCovered { server } => (
            format!(
                "no analysis covers an EDF guest in a {} (its supply is not the periodic \
                 resource model's: {})",
                server_name(*server),
                prm_gap(*server)
            ),
            None,
        ),
        DomainVerdict::TaskNotGuaranteed { task } => {
            let t = &tasks[order[*task]];
            let TaskVerdict::NotGuaranteed { lemma1, response } = result.tasks[*task].verdict
            else {
                unreachable!("the task to blame is not guaranteed")
            };
            let i = result.interface.expect("an interface");
            let lemma = match lemma1 {
                Lemma1Gap::PriorityOrder => priority_order(input),
                Lemma1Gap::Fails => format!(
                    "Lemma 1 fails for it on the interface (Π, Θ) = ({}, {}) units",
                    i.period, i.budget
                ),
                Lemma1Gap::SupplyNotPeriodicResource(kind) => format!(
                    "under the {} the periodic resource model does not hold ({})",
                    server_name(kind),
                    prm_gap(kind)
                ),
                Lemma1Gap::NotTested => "Lemma 1 does not apply".to_string(),
            };
            let rta = match response {
                ResponseGap::ExceedsDeadline { at_least } => format!(
                    "its response-time bound under the {} exceeds its deadline {} (R ≥ {})",
                    server(),
                    ns(t.deadline_ns),
                    ns(at_least.saturating_mul(unit))
                ),
                ResponseGap::NotApplicable => {
                    format!("no response-time analysis applies under {}", policy.name())
                }
                ResponseGap::NotAnalysed => "response-time analysis: not analysed".to_string(),
            };
            (format!("{lemma}, and {rta}"), Some(t.name.clone()))
        }
    })
}

/// How the root was checked.
pub(crate) fn root_test(model: RootModel, policy: PolicyKind) -> String {
    match model {
        RootModel::FixedPriority { server, .. } | RootModel::NoRootCheck { server } => {
            let deferrable = if server == ServerKind::Deferrable {
                ", counting a Deferrable server's back-to-back interference"
            } else {
                ""
            };
            let as_periodic = if matches!(policy, PolicyKind::Wcps | PolicyKind::Crps) {
                " (checked as Periodic Servers)"
            } else {
                ""
            };
            format!(
                "1 pcpu, {} by fixed priority{as_periodic}: r_S(Θ) ≤ Π for every server \
                 (Davis & Burns 2005{deferrable})",
                policy.name()
            )
        }
        RootModel::Edf => format!(
            "1 pcpu, {} (EDF over budget-keeping servers): Θ_k + Σ_{{i≠k}} W_i(Π_k) ≤ Π_k for \
             every server (Bertogna, Cirinei & Lipari 2005, m = 1)",
            policy.name()
        ),
        RootModel::RateMonotonic => {
            "1 pcpu, interfaces as rate-monotonic periodic tasks (exact RTA)".to_string()
        }
    }
}

/// The notes that follow from the result, in order: domains that only compete at the
/// root, what the root model leaves out, the server policy's caveats, and domains
/// guaranteed by the interface test whose bounds say otherwise. `servers`: each domain's
/// server kind at the root.
pub(crate) fn analysis_notes(
    domains: &[DomainReport],
    result: &SystemResult,
    servers: &[Option<ServerKind>],
    model: RootModel,
    policy: PolicyKind,
) -> Vec<String> {
    let mut notes = Vec::new();
    for d in domains
        .iter()
        .filter(|d| d.tasks.is_empty() && d.period.is_some())
    {
        notes.push(format!(
            "{}: no tasks; its VCPU still counts at the root",
            d.name
        ));
    }
    if let Some(e) = &result.root_error {
        notes.push(format!("root analysis refused its input: {e}"));
    }
    if model == RootModel::RateMonotonic {
        notes.push(format!(
            "{} does not enforce a budget per period: the verdict holds for servers that deliver \
             these interfaces, not for {} itself",
            policy.name(),
            policy.name()
        ));
    }
    if policy == PolicyKind::Sporadic {
        let merging: Vec<&str> = domains
            .iter()
            .zip(servers)
            .filter(|(_, kind)| **kind == Some(ServerKind::SporadicMerging))
            .map(|(d, _)| d.name.as_str())
            .collect();
        let mut note = "Sporadic Server: one that never merges replenishments is analysed like a \
                        Periodic Server (budget paid back one period after the server became \
                        active)"
            .to_string();
        if !merging.is_empty() {
            note.push_str(&format!(
                "; {} can merge them (max_replenishments below the budget in ns), which can \
                 bring budget back up to a period late: analysed with a capacity gap of a whole \
                 period, and Lemma 1 is not used (a VCPU's max_replenishments at least its \
                 budget in ns rules merges out)",
                merging.join(", ")
            ));
        }
        notes.push(note);
    }
    if policy == PolicyKind::Polling {
        notes.push(
            "Polling Server: an idle server loses its budget, so the periodic resource model \
             does not hold; each domain's verdict is its tasks' response-time bounds"
                .to_string(),
        );
    }
    for d in domains {
        let loose = d.tasks.iter().any(|t| {
            matches!(
                t.rta,
                RtaStatus::ExceedsDeadline | RtaStatus::ServerUnschedulable
            )
        });
        if d.schedulable && loose {
            notes.push(format!(
                "{}: the interface test guarantees every task; some response-time bounds \
                 exceed their deadlines (both tests are sufficient, and neither dominates: \
                 Lemma 1 takes the whole interface into account, the bounds count every \
                 server period the task's load spans)",
                d.name
            ));
        }
    }
    notes
}
