//! The report: what was analysed and what the analysis found, per domain and per task —
//! built at the end from the converted input and the analysis's typed result
//! ([`crate::build`]), the verdicts put into words ([`crate::words`]). Its fields are the
//! JSON output's (`--json`); the table and the `xl` lines are rendered from it.

use rtvmm_analysis::{GuestScheduler as AnalysisGuest, ServerKind, SupplyForm};
use rtvmm_core::policy::PolicyKind;
use serde::{Serialize, Serializer};

use crate::names::{guest_name, server_name, supply_name};
pub use crate::names::{InterfaceSource, TaskKind};

/// A task's response-time analysis, as reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum RtaStatus {
    #[serde(rename = "bounded")]
    Bounded,
    #[serde(rename = "exceeds deadline")]
    ExceedsDeadline,
    #[serde(rename = "server unschedulable")]
    ServerUnschedulable,
    #[serde(rename = "not applicable")]
    NotApplicable,
    #[serde(rename = "not analysed")]
    NotAnalysed,
}

/// One task in the report. Times in ns are the task's own (deadline cut to the period);
/// `period`, `wcet`, `deadline` are what the analysis used, in units.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskReport {
    pub name: String,
    pub kind: TaskKind,
    pub period_ns: u64,
    pub wcet_ns: u64,
    pub deadline_ns: u64,
    pub period: Option<u64>,
    pub wcet: Option<u64>,
    pub deadline: Option<u64>,
    /// Local fixed priority used by the response-time analysis (smaller = higher).
    pub priority: Option<u32>,
    /// Lemma 1 holds for this task on the interface (rate-monotonic guests).
    pub lemma1: Option<bool>,
    pub rta: RtaStatus,
    /// Worst-case response-time bound in units (or the first iterate past the deadline).
    pub wcrt: Option<u64>,
    pub wcrt_ns: Option<u64>,
    /// `deadline_ns − wcrt_ns` when bounded.
    pub slack_ns: Option<u64>,
    /// Released exactly at its server's releases, so the response-time analysis may use
    /// Davis & Burns's bound-task form (no capacity gap).
    pub bound_to_release: bool,
}

/// One domain in the report.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DomainReport {
    pub name: String,
    /// The guest scheduler as written.
    pub guest: String,
    /// The scheduler the interface analysis assumed (none when it could not run).
    #[serde(serialize_with = "guest_label")]
    pub analysed_as: Option<AnalysisGuest>,
    /// Interface Π and Θ in units.
    pub period: Option<u64>,
    pub budget: Option<u64>,
    pub period_ns: Option<u64>,
    pub budget_ns: Option<u64>,
    pub interface_source: Option<InterfaceSource>,
    /// False only when the search could not prove optimality (EDF corner cases).
    pub proven_optimal: bool,
    /// The sbf the interface was checked with.
    #[serde(serialize_with = "supply_label")]
    pub sbf: Option<SupplyForm>,
    pub bandwidth: f64,
    pub bandwidth_exact: Option<String>,
    pub utilization: f64,
    pub utilization_exact: String,
    /// `bw(Γ) − bw(W)`.
    pub overhead: f64,
    /// Server priority at the root (smaller = higher).
    pub priority: Option<u32>,
    /// The root delivers Θ within every Π to this server.
    pub root_schedulable: Option<bool>,
    /// `r_S(Θ)` in units, where the root is fixed priority.
    pub root_response_time: Option<u64>,
    pub schedulable: bool,
    /// Why not, when not.
    pub reason: Option<String>,
    /// The task that cannot be guaranteed, when one is to blame.
    pub failed_task: Option<String>,
    /// Every task of the domain is guaranteed: it is [`DomainReport::schedulable`] and
    /// nothing the analysis does not model touches it (the report's
    /// [`Report::not_covered`] is empty, and so are its pool's and its own).
    pub guaranteed: bool,
    /// Its cpupool (several pcpus; `None` on one pcpu).
    pub pool: Option<String>,
    /// The interface model: `prm` (one VCPU, or one per VCPU of a partitioned guest),
    /// `mpr ⟨Π, Θ, m′⟩` (a global EDF guest); `None` without an interface.
    pub model: Option<String>,
    /// Its VCPUs with the interface each must deliver, in VCPU order.
    pub vcpus: Vec<VcpuReport>,
    /// What about this domain the analysis does not model (several pcpus).
    pub not_covered: Option<String>,
    pub tasks: Vec<TaskReport>,
}

/// One VCPU: the `(Π, Θ)` it must deliver, where it may run, and whether its pool's root
/// test gives it `Θ` in every `Π`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VcpuReport {
    /// Its index in the domain (as `xl` numbers VCPUs).
    pub index: u32,
    /// Π and Θ in units.
    pub period: Option<u64>,
    pub budget: Option<u64>,
    pub period_ns: Option<u64>,
    pub budget_ns: Option<u64>,
    /// The pcpus it may run on (machine numbers).
    pub pcpus: Vec<u32>,
    /// The root gives it its budget in every period (`None`: not checked).
    pub served: Option<bool>,
}

/// One cpupool (several pcpus): its policy, its root test and verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PoolReport {
    pub name: String,
    pub policy: String,
    pub pcpus: Vec<u32>,
    /// The domains in it, in input order.
    pub domains: Vec<String>,
    /// How its root was checked.
    pub root_test: String,
    /// Every VCPU of the pool is served and every domain in it guaranteed; `None` when the
    /// pool is not covered.
    pub schedulable: Option<bool>,
    /// Why the analysis does not cover this pool.
    pub not_covered: Option<String>,
}

/// The whole analysis.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub input: String,
    /// scenario or carts.
    pub format: &'static str,
    pub unit_ns: u64,
    /// auto or general.
    pub sbf_mode: &'static str,
    /// computed or given.
    pub interfaces: &'static str,
    #[serde(serialize_with = "policy_label")]
    pub policy: PolicyKind,
    /// How the root was checked.
    pub root_test: String,
    /// Under which server the response times were computed, if any.
    #[serde(serialize_with = "server_label")]
    pub rta_server: Option<ServerKind>,
    /// `Σ Θ/Π` over every server.
    pub u_rm: f64,
    pub u_rm_exact: String,
    /// `Σ e/p` over every analysed task.
    pub u_w: f64,
    pub u_w_exact: String,
    pub u_rm_minus_u_w: f64,
    pub root_schedulable: bool,
    /// Every domain is guaranteed: schedulable, and the input holds nothing the analysis
    /// does not model (`not_covered` is empty).
    pub schedulable: bool,
    pub domains: Vec<DomainReport>,
    /// The cpupools, each with its own verdict (empty on one pcpu: the root above is the
    /// pool's).
    pub pools: Vec<PoolReport>,
    /// What the input holds that the analysis does not model for the whole input (events,
    /// tick replenishment, overhead, a policy not covered on one pcpu), one reason each:
    /// with any, nothing is guaranteed, whatever the domains' verdicts. On several pcpus
    /// what concerns one pool or domain is in its [`PoolReport::not_covered`] or
    /// [`DomainReport::not_covered`] instead.
    pub not_covered: Vec<String>,
    pub notes: Vec<String>,
    /// For stderr: an option that contradicts the input (a fixed period outside the
    /// domain's period range). The analysis still runs as asked.
    pub warnings: Vec<String>,
}

fn guest_label<S: Serializer>(guest: &Option<AnalysisGuest>, s: S) -> Result<S::Ok, S::Error> {
    guest.map(guest_name).serialize(s)
}

fn supply_label<S: Serializer>(form: &Option<SupplyForm>, s: S) -> Result<S::Ok, S::Error> {
    form.map(supply_name).serialize(s)
}

fn policy_label<S: Serializer>(policy: &PolicyKind, s: S) -> Result<S::Ok, S::Error> {
    policy.name().serialize(s)
}

fn server_label<S: Serializer>(server: &Option<ServerKind>, s: S) -> Result<S::Ok, S::Error> {
    server.map(server_name).serialize(s)
}

/// Why `check --admit` refuses a scenario: a domain (and task) that cannot be guaranteed,
/// or (`domain` `None`) something the analysis does not model.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub domain: Option<String>,
    pub task: Option<String>,
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.domain, &self.task) {
            (Some(domain), Some(task)) => write!(
                f,
                "not admitted: domain '{domain}', task '{task}' cannot be guaranteed: {}",
                self.reason
            ),
            (Some(domain), None) => write!(
                f,
                "not admitted: domain '{domain}' cannot be guaranteed: {}",
                self.reason
            ),
            (None, _) => write!(
                f,
                "not admitted: the analysis does not model this scenario: {}",
                self.reason
            ),
        }
    }
}

impl Report {
    /// What `check --admit` reports: the first thing the analysis does not model, else
    /// the first domain that cannot be guaranteed.
    pub fn refusal(&self) -> Option<Refusal> {
        if let Some(reason) = self.not_covered.first() {
            return Some(Refusal {
                domain: None,
                task: None,
                reason: reason.clone(),
            });
        }
        self.domains
            .iter()
            .find(|d| !d.schedulable)
            .map(|d| Refusal {
                domain: Some(d.name.clone()),
                task: d.failed_task.clone(),
                reason: d
                    .reason
                    .clone()
                    .unwrap_or_else(|| "not schedulable".to_string()),
            })
    }
}
