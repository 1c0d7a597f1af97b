//! # `rtvmm analyze` and `rtvmm check --admit`
//!
//! A scenario (or a CARTS XML file) through the compositional analysis of
//! [`rtvmm_analysis`], and the results back out as a readable table, JSON, a runnable
//! scenario whose VCPUs are the interfaces, or `xl sched-rtds` commands for a Xen host.
//! This module converts, decides which analysis applies where, and reports; the analyses
//! themselves live in `rtvmm-analysis`.
//!
//! ```
//! use rtvmm_scenario::analyze::{analyze, Input, Options};
//! use rtvmm_scenario::Scenario;
//!
//! // VCPU parameters are optional for the analysis.
//! let text = r#"
//!     duration = "1s"
//!     [scheduler]
//!     policy = "periodic"
//!     [[domain]]
//!     name = "control"
//!     [[domain.task]]
//!     name = "t1"
//!     period = "7ms"
//!     wcet = "2ms"
//!     [[domain.task]]
//!     name = "t2"
//!     period = "8ms"
//!     wcet = "1ms"
//!     [[domain.task]]
//!     name = "t3"
//!     period = "10ms"
//!     wcet = "1ms"
//! "#;
//! let scenario = Scenario::from_toml_for_analysis(text, "control.toml")?;
//! let report = analyze(&Input::Scenario(scenario), &Options::default())?;
//! assert!(report.schedulable);
//! // The RTAS 2012 workload in 1 ms quanta: (Π, Θ) = (3, 2). Lemma 1 with the general
//! // sbf (blackout 2): sbf(7) = 2·2 + max(0, 7 − 2 − 6) = 4 ≥ rbf_3(7) = 2 + 1 + 1.
//! let control = &report.domains[0];
//! assert_eq!((control.period_ns, control.budget_ns), (Some(3_000_000), Some(2_000_000)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Design note
//! - **Unit.** The analysis counts time in whole units: the scenario's quantum, or
//!   `--quantum`; for CARTS input, whose numbers have no unit, `--quantum` says how long
//!   one unit is (default 1 ms). A task time that is not a whole number of units is
//!   rounded the safe way — wcet up, period and deadline down (more demand, more often,
//!   due sooner) — and every rounding is listed in the notes. A deadline beyond the period
//!   is cut to the period (the analyses need `d ≤ p`; an earlier deadline is safe). With
//!   `--given`, the unit is the gcd of the quantum and every VCPU budget and period, so
//!   the VCPUs are checked exactly.
//! - **Tasks.** Periodic tasks, and sporadic tasks at their minimum inter-arrival time.
//!   Aperiodic tasks have no minimum inter-arrival time: nothing can be guaranteed for
//!   them or for the tasks they can delay, so their domain fails, naming them. An
//!   overrunning task (wcet > period) fails its domain too.
//! - **Guests.** Lemma 1 is the rate-monotonic test: `rm` guests, and `dm`/`fp` guests
//!   whose priority order is rate-monotonic (the workload is built in the guest's own
//!   priority order, so ties after rounding keep the simulator's order); `edf` guests get
//!   the dbf test. `--guest rm|edf` analyses every domain as that scheduler instead. A
//!   CARTS component that says `DM`, or `RM` with a deadline below its period (CARTS orders
//!   such tasks by deadline, and a note says so), is analysed deadline-monotonic: Lemma 1
//!   with the tasks in deadline order.
//! - **sbf per domain.** `--sbf auto` uses the harmonic supply bound only where it is
//!   sound — Π dividing every task period *and* releases at the interface's period
//!   boundaries. A domain qualifies only if every task is periodic with offset 0 and a
//!   period that is a whole number of units, and its VCPU offset is 0 (for CARTS: no child
//!   components). Any other domain is analysed with the general sbf. Each domain is
//!   analysed on its own with its own mode, and the root test is done here.
//! - **Interfaces.** Computed (Algorithm 1 within `--period-range`, or `(Π, MinExec(Π))`
//!   for `--fixed-period NAME=Π`), or given: with `--given` (and `check --admit`) a
//!   domain's own VCPU budget and period are the interface to check. A domain without
//!   tasks needs no interface; if it has a VCPU, that VCPU still competes at the root.
//! - **Server priorities** at the root: rate-monotonic by interface period, ties by domain
//!   order, numbered from 1 — what `--emit scenario` writes; with `--given` the VCPUs' own
//!   priorities.
//! - **Supply and root, by policy.** Deferrable, Periodic, Sporadic, WCPS and CRPS servers
//!   deliver Θ in every period Π to a backlogged domain once the root can deliver it
//!   (`r_S(Θ) ≤ Π` in the hierarchical analysis, which counts a Deferrable server's
//!   back-to-back interference; WCPS and CRPS are checked as Periodic servers), so the
//!   periodic resource model and Lemma 1 hold. A **Polling** server loses its budget when
//!   it finds its domain idle, so a domain that becomes busy just after a poll can wait
//!   up to `2Π − Θ`, more than the model's `2(Π − Θ)`: under Polling, Lemma 1 is not used
//!   and the verdict rests on the hierarchical response-time bounds. The same holds for a
//!   Sporadic Server that can merge replenishments (below).
//!   RTDS and SEDF (EDF over servers) deliver every budget in every period iff
//!   `Σ Θ/Π ≤ 1`. Credit and ARINC 653 do not enforce a budget per period: the verdict
//!   then assumes a server that does (the root is checked as RM), and the notes say so.
//! - **Response times** (`--rta`): Davis & Burns's hierarchical analysis
//!   ([`hierarchical_response_times`]) under the Deferrable, Periodic, Polling or Sporadic
//!   server, with each domain's local fixed priorities as its guest orders them; "not
//!   applicable" under other policies and for EDF guests. A task is **bound to its
//!   server's release** (no capacity gap; Davis & Burns) when it is periodic, its period
//!   and offset are whole multiples of the server period, the VCPU's offset is 0, and the
//!   server is Periodic, Deferrable or Polling (the table marks it `*`).
//! - **Verdict, task by task**: the root delivers the server's budget, and either Lemma 1
//!   holds for the task on the interface (where the model holds; `∃t ≤ d_i: sbf(t) ≥
//!   rbf_i(t)` concerns task i alone) or its response-time bound is within its deadline —
//!   both are sufficient, so either guarantees the task. An EDF guest needs the dbf test
//!   on the interface. A domain is schedulable iff all its tasks are guaranteed, and the
//!   refusal names the first one (by local priority) that is not; the system is
//!   schedulable iff every domain is.
//! - **The Sporadic Server** is analysed like a Periodic Server, as published (budget
//!   paid back one period after the server became active, which is what the core does),
//!   when it can never merge replenishments: its `max_replenishments` is at least its
//!   budget in ns (each pending replenishment is at least 1 ns). Otherwise (the default
//!   limit is 8) a merge at the limit can bring budget back up to a period late
//!   (`tests/soundness.rs`, `sporadic_server_merge_limit_can_delay_budget_past_the_bound`),
//!   so the domain is analysed as [`ServerKind::SporadicMerging`] — a capacity gap of a
//!   whole period — and Lemma 1 is not used for it; the notes name such domains.

use std::fmt::{self, Write as _};
use std::path::Path;
use std::str::FromStr;

use rtvmm_analysis::{
    analyze_system, fp_response_time, harmonic_is_sound, hierarchical_response_times, parse_carts,
    CartsError, CartsSystem, DomainAnalysis, DomainFailure, DomainSpec as AnalysisDomain, ExactSum,
    FpTask, GuestScheduler as AnalysisGuest, Interface, InterfaceAnalyzer, InterfaceChoice,
    PeriodRange, Ratio, ResponseBound, SbfMode, Server, ServerKind, SupplyForm, Task, Workload,
    WorkloadError,
};
use rtvmm_core::guest::{Arrival, GuestScheduler};
use rtvmm_core::machine::ReplenishMode;
use rtvmm_core::model::{VcpuParams, DEFAULT_MAX_REPLENISHMENTS, DEFAULT_WEIGHT};
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use serde::Serialize;
use thiserror::Error;

use crate::{weight_from_share, Scenario, ScenarioError};

/// CARTS numbers have no unit; without `--quantum` one unit is this long.
pub const CARTS_DEFAULT_UNIT: Nanos = Nanos::from_ms(1);

/// VCPUs per domain. One today (the core's guests have one VCPU each); `--emit xl` writes
/// the `-v all` form for domains with more.
const VCPUS_PER_DOMAIN: usize = 1;

/// What can go wrong before there is a report to show.
#[derive(Debug, Error)]
pub enum AnalyzeError {
    /// The input file cannot be read. (`error`, not `source`: the message says it once.)
    #[error("cannot read {file}: {error}")]
    Io { file: String, error: std::io::Error },
    /// The scenario is invalid.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The CARTS file is invalid. (`error` is not a `source`: the message already holds it,
    /// and a reporter that prints the chain would say it twice.)
    #[error("{file}: {error}")]
    Carts { file: String, error: CartsError },
    /// An option does not fit the input (unknown domain, empty range, ...).
    #[error("{0}")]
    BadOption(String),
    /// A CARTS component or task name longer than [`crate::MAX_NAME_CHARS`].
    #[error("{file}: line {line}: {what} name: {length} characters: a name has at most {max}", max = crate::MAX_NAME_CHARS)]
    NameTooLong {
        file: String,
        line: u32,
        what: &'static str,
        length: usize,
    },
    /// `--emit` cannot produce its output.
    #[error("cannot emit: {0}")]
    Emit(String),
}

/// A length on the command line: a bare whole number counts analysis units, a time with a
/// unit (`10ms`) is converted to them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Length {
    Units(u64),
    Time(Nanos),
}

impl FromStr for Length {
    type Err = String;

    fn from_str(text: &str) -> Result<Length, String> {
        let trimmed = text.trim();
        if !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit()) {
            let units: u64 = trimmed
                .parse()
                .map_err(|_| format!("'{text}' is too large"))?;
            if units == 0 {
                return Err("must be greater than 0".to_string());
            }
            return Ok(Length::Units(units));
        }
        let time: Nanos = trimmed.parse().map_err(|e| format!("'{text}': {e}"))?;
        if time.is_zero() {
            return Err("must be greater than 0".to_string());
        }
        Ok(Length::Time(time))
    }
}

impl fmt::Display for Length {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Length::Units(n) => write!(f, "{n}"),
            Length::Time(t) => write!(f, "{t}"),
        }
    }
}

impl Length {
    fn floor_units(self, unit: u64) -> u64 {
        match self {
            Length::Units(n) => n,
            Length::Time(t) => t.as_ns() / unit,
        }
    }

    fn ceil_units(self, unit: u64) -> u64 {
        match self {
            Length::Units(n) => n,
            Length::Time(t) => t.as_ns().div_ceil(unit),
        }
    }

    fn exact_units(self, unit: u64) -> Option<u64> {
        match self {
            Length::Units(n) => Some(n),
            Length::Time(t) => (t.as_ns() % unit == 0).then(|| t.as_ns() / unit),
        }
    }
}

/// `--period-range MIN..MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeriodBounds {
    pub min: Length,
    pub max: Length,
}

impl FromStr for PeriodBounds {
    type Err = String;

    fn from_str(text: &str) -> Result<PeriodBounds, String> {
        let (min, max) = text
            .split_once("..")
            .ok_or_else(|| format!("'{text}': write MIN..MAX, for example 5..50 or 5ms..50ms"))?;
        let max = max.strip_prefix('=').unwrap_or(max);
        Ok(PeriodBounds {
            min: min.parse()?,
            max: max.parse()?,
        })
    }
}

/// `--fixed-period NAME=Π`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixedPeriod {
    pub domain: String,
    pub period: Length,
}

impl FromStr for FixedPeriod {
    type Err = String;

    fn from_str(text: &str) -> Result<FixedPeriod, String> {
        let (domain, period) = text
            .rsplit_once('=')
            .ok_or_else(|| format!("'{text}': write NAME=PERIOD, for example d1=10 or d1=10ms"))?;
        if domain.trim().is_empty() {
            return Err(format!("'{text}': the domain name is empty"));
        }
        Ok(FixedPeriod {
            domain: domain.trim().to_string(),
            period: period.parse()?,
        })
    }
}

/// `--sbf auto|general`.
pub fn parse_sbf(text: &str) -> Result<SbfMode, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "auto" => Ok(SbfMode::Auto),
        "general" => Ok(SbfMode::General),
        _ => Err(format!(
            "unknown sbf mode '{text}': expected auto or general"
        )),
    }
}

/// `--guest rm|edf`.
pub fn parse_guest(text: &str) -> Result<AnalysisGuest, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "rm" => Ok(AnalysisGuest::Rm),
        "edf" => Ok(AnalysisGuest::Edf),
        _ => Err(format!(
            "unknown guest scheduler '{text}': expected rm or edf"
        )),
    }
}

/// How to analyse (the command line's options).
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The analysis unit instead of the scenario's quantum (for CARTS: a unit's length).
    pub quantum: Option<Nanos>,
    pub sbf: SbfMode,
    /// Analyse every domain as this guest scheduler instead of its own.
    pub guest: Option<AnalysisGuest>,
    /// Restrict the interface search.
    pub period_range: Option<PeriodBounds>,
    /// Fixed interface periods for the named domains.
    pub fixed_periods: Vec<FixedPeriod>,
    /// The VMM policy instead of the scenario's (CARTS: Periodic Server).
    pub policy: Option<PolicyKind>,
    /// Check the domains' own VCPU budgets and periods instead of computing interfaces.
    pub given: bool,
}

/// What to analyse.
pub enum Input {
    Scenario(Scenario),
    Carts { file: String, system: CartsSystem },
}

impl Input {
    /// Reads a CARTS XML file (by the extension `.xml`) or a scenario, the latter without
    /// the policies' checks so that VCPU parameters are optional.
    pub fn load(path: &Path) -> Result<Input, AnalyzeError> {
        let file = path.display().to_string();
        if path
            .extension()
            .is_some_and(|x| x.eq_ignore_ascii_case("xml"))
        {
            let text = std::fs::read_to_string(path).map_err(|error| AnalyzeError::Io {
                file: file.clone(),
                error,
            })?;
            let system = parse_carts(&text).map_err(|error| AnalyzeError::Carts {
                file: file.clone(),
                error,
            })?;
            check_carts_names(&file, &system)?;
            Ok(Input::Carts { file, system })
        } else {
            Ok(Input::Scenario(Scenario::load_for_analysis(path)?))
        }
    }

    /// The file it came from.
    pub fn file(&self) -> &str {
        match self {
            Input::Scenario(s) => &s.file,
            Input::Carts { file, .. } => file,
        }
    }
}

/// Refuses CARTS names longer than [`crate::MAX_NAME_CHARS`], as a scenario does.
fn check_carts_names(file: &str, system: &CartsSystem) -> Result<(), AnalyzeError> {
    let too_long = |what, name: &str, line| {
        let length = name.chars().count();
        (length > crate::MAX_NAME_CHARS).then(|| AnalyzeError::NameTooLong {
            file: file.to_string(),
            line,
            what,
            length,
        })
    };
    let mut components: Vec<_> = system.components.iter().collect();
    while let Some(c) = components.pop() {
        if let Some(e) = too_long("component", &c.name, c.line) {
            return Err(e);
        }
        for t in &c.tasks {
            if let Some(e) = too_long("task", &t.name, t.line) {
                return Err(e);
            }
        }
        components.extend(c.children.iter());
    }
    Ok(())
}

/// One task in the report. Times in ns are the task's own (deadline cut to the period);
/// `period`, `wcet`, `deadline` are what the analysis used, in units.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TaskReport {
    pub name: String,
    /// periodic, sporadic, aperiodic, or component (a CARTS child's interface).
    pub kind: &'static str,
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
    /// bounded, exceeds deadline, server unschedulable, not applicable, not analysed.
    pub rta: &'static str,
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
    pub analysed_as: Option<&'static str>,
    /// Interface Π and Θ in units.
    pub period: Option<u64>,
    pub budget: Option<u64>,
    pub period_ns: Option<u64>,
    pub budget_ns: Option<u64>,
    /// optimal, fixed period, given, carts, vcpu (no tasks).
    pub interface_source: Option<&'static str>,
    /// False only when the search could not prove optimality (EDF corner cases).
    pub proven_optimal: bool,
    /// harmonic or general: the sbf the interface was checked with.
    pub sbf: Option<&'static str>,
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
    pub tasks: Vec<TaskReport>,
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
    pub policy: &'static str,
    /// How the root was checked.
    pub root_test: String,
    /// Under which server the response times were computed, if any.
    pub rta_server: Option<&'static str>,
    /// `Σ Θ/Π` over every server.
    pub u_rm: f64,
    pub u_rm_exact: String,
    /// `Σ e/p` over every analysed task.
    pub u_w: f64,
    pub u_w_exact: String,
    pub u_rm_minus_u_w: f64,
    pub root_schedulable: bool,
    pub schedulable: bool,
    pub domains: Vec<DomainReport>,
    pub notes: Vec<String>,
}

/// Why `check --admit` refuses a scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub domain: String,
    pub task: Option<String>,
    pub reason: String,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.task {
            Some(task) => write!(
                f,
                "not admitted: domain '{}', task '{}' cannot be guaranteed: {}",
                self.domain, task, self.reason
            ),
            None => write!(
                f,
                "not admitted: domain '{}' cannot be guaranteed: {}",
                self.domain, self.reason
            ),
        }
    }
}

/// Something that stops an analysis for a domain, and the task to blame.
#[derive(Clone, Debug)]
struct Blocker {
    reason: String,
    task: Option<String>,
}

/// A domain converted for the analysis.
struct Prepared {
    name: String,
    guest_label: String,
    analysis_guest: AnalysisGuest,
    tasks: Vec<TaskReport>,
    /// Task indices in the guest's priority order (the workload's declaration order).
    order: Vec<usize>,
    workload: Option<Workload>,
    /// Local fixed priorities exist (FP guest as analysed); false for EDF.
    fixed_priorities: bool,
    /// Stops everything (aperiodic task, overrun, a period shorter than the unit).
    hard: Option<Blocker>,
    /// Stops Lemma 1 only (a guest order it does not cover).
    lemma_blocker: Option<Blocker>,
    /// Releases fall on the interface's period boundaries (harmonic sbf may apply).
    aligned: bool,
    choice: InterfaceChoice,
    source: &'static str,
    /// The VCPU's budget, period and priority as written, if it has them.
    vcpu: Option<(Nanos, Nanos, u32)>,
    /// The VCPU's cap on pending Sporadic Server replenishments.
    max_replenishments: u32,
    /// Per task (declaration order): its release offset in units if its jobs could be bound
    /// to the server's release — periodic, period and offset whole units, VCPU offset 0.
    release_offsets: Vec<Option<u64>>,
}

/// The supply and root model of a policy (see the design note).
#[derive(Clone, Copy, PartialEq, Eq)]
enum RootModel {
    /// Fixed-priority servers of this kind at the root.
    Servers(ServerKind),
    /// EDF over servers: `Σ Θ/Π ≤ 1`.
    Edf,
    /// The policy enforces no budget per period; checked as RM periodic tasks.
    Unenforced,
}

fn root_model(policy: PolicyKind) -> RootModel {
    match policy {
        PolicyKind::Deferrable => RootModel::Servers(ServerKind::Deferrable),
        PolicyKind::Periodic | PolicyKind::Wcps | PolicyKind::Crps => {
            RootModel::Servers(ServerKind::Periodic)
        }
        PolicyKind::Polling => RootModel::Servers(ServerKind::Polling),
        PolicyKind::Sporadic => RootModel::Servers(ServerKind::Sporadic),
        PolicyKind::Rtds | PolicyKind::Sedf => RootModel::Edf,
        PolicyKind::Credit | PolicyKind::Arinc653 => RootModel::Unenforced,
    }
}

/// The server kind whose task response times the hierarchical analysis covers.
fn rta_server(policy: PolicyKind) -> Option<ServerKind> {
    match policy {
        PolicyKind::Deferrable => Some(ServerKind::Deferrable),
        PolicyKind::Periodic => Some(ServerKind::Periodic),
        PolicyKind::Polling => Some(ServerKind::Polling),
        PolicyKind::Sporadic => Some(ServerKind::Sporadic),
        _ => None,
    }
}

fn server_name(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::Deferrable => "Deferrable Server",
        ServerKind::Periodic => "Periodic Server",
        ServerKind::Polling => "Polling Server",
        ServerKind::Sporadic => "Sporadic Server",
        ServerKind::SporadicMerging => "Sporadic Server (merging replenishments)",
    }
}

/// The server kind of one domain under `policy`: a Sporadic Server whose
/// `max_replenishments` is below its budget in ns can merge replenishments.
fn domain_server_kind(kind: ServerKind, p: &Prepared, budget_units: u64, unit: u64) -> ServerKind {
    match kind {
        ServerKind::Sporadic => ServerKind::sporadic(
            u64::from(p.max_replenishments),
            budget_units.saturating_mul(unit),
        ),
        other => other,
    }
}

/// Why the periodic resource model (and so Lemma 1) does not describe this server's
/// supply, if it does not.
fn prm_fails(kind: Option<ServerKind>) -> Option<&'static str> {
    match kind {
        Some(ServerKind::Polling) => Some("an idle server loses its budget"),
        Some(ServerKind::SporadicMerging) => {
            Some("a replenishment merged at max_replenishments can come back up to a period late")
        }
        _ => None,
    }
}

fn guest_name(guest: AnalysisGuest) -> &'static str {
    match guest {
        AnalysisGuest::Rm => "rm",
        AnalysisGuest::Dm => "dm",
        AnalysisGuest::Edf => "edf",
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

fn ns(t: u64) -> Nanos {
    Nanos::from_ns(t)
}

/// Runs the analysis.
pub fn analyze(input: &Input, options: &Options) -> Result<Report, AnalyzeError> {
    let mut notes = Vec::new();
    let policy = options.policy.unwrap_or(match input {
        Input::Scenario(s) => s.policy(),
        Input::Carts { .. } => PolicyKind::Periodic,
    });
    if options.given && matches!(input, Input::Carts { .. }) {
        return Err(AnalyzeError::BadOption(
            "--given checks a scenario's VCPUs; in CARTS input give a component `period` and \
             `budget` instead"
                .to_string(),
        ));
    }
    let unit = choose_unit(input, options, &mut notes)?;
    let mut prepared = match input {
        Input::Scenario(scenario) => scenario
            .system
            .domains
            .iter()
            .map(|d| prepare_scenario_domain(d, unit, options, &mut notes))
            .collect::<Vec<_>>(),
        Input::Carts { file, system } => prepare_carts(file, system, unit, options, &mut notes)?,
    };
    apply_interface_options(&mut prepared, unit, options, &mut notes)?;
    if let Input::Scenario(scenario) = input {
        let added = scenario
            .system
            .changes
            .iter()
            .filter(|c| matches!(c.change, rtvmm_sim::Change::AddDomain(_)))
            .count();
        let machine = &scenario.system.machine;
        let overheads = machine.overheads.do_schedule + machine.overheads.context_switch;
        if machine.replenishment == ReplenishMode::Tick || !overheads.is_zero() {
            notes.push(format!(
                "the analysis assumes budgets replenished exactly on time and no scheduling \
                 overhead; this machine has {} replenishment and {} + {} overhead per \
                 decision (do_schedule + context_switch), which the guarantees do not cover",
                match machine.replenishment {
                    ReplenishMode::Exact => "exact",
                    ReplenishMode::Tick => "tick",
                },
                machine.overheads.do_schedule,
                machine.overheads.context_switch
            ));
        }
        if !scenario.system.changes.is_empty() {
            notes.push(format!(
                "the analysis covers the domains present at time 0 with their parameters \
                 then; the file's {} events ({} adding domains) are not analysed",
                scenario.system.changes.len(),
                added
            ));
        }
        if !options.given
            && scenario
                .system
                .domains
                .iter()
                .any(|d| !d.vcpu.period.is_zero() && !d.tasks.is_empty())
        {
            notes.push(
                "interfaces computed; the file's VCPU budgets and periods are not used (--given \
                 checks them instead)"
                    .to_string(),
            );
        }
    }
    Ok(run(input, prepared, unit, policy, options, notes))
}

/// The analysis unit in ns.
fn choose_unit(
    input: &Input,
    options: &Options,
    notes: &mut Vec<String>,
) -> Result<u64, AnalyzeError> {
    let base = match (options.quantum, input) {
        (Some(q), _) => q,
        (None, Input::Scenario(s)) => s.system.machine.quantum,
        (None, Input::Carts { .. }) => {
            notes.push(format!(
                "CARTS numbers are taken as units of {CARTS_DEFAULT_UNIT} (--quantum sets the \
                 unit)"
            ));
            CARTS_DEFAULT_UNIT
        }
    };
    if base.is_zero() {
        return Err(AnalyzeError::BadOption(
            "the analysis unit (the quantum) must be greater than 0".to_string(),
        ));
    }
    let mut unit = base.as_ns();
    if let (true, Input::Scenario(s)) = (options.given, input) {
        for d in &s.system.domains {
            if !d.vcpu.period.is_zero() {
                unit = gcd(gcd(unit, d.vcpu.budget.as_ns()), d.vcpu.period.as_ns());
            }
        }
        if unit != base.as_ns() {
            notes.push(format!(
                "analysis unit {} instead of {base}, so that every VCPU budget and period is a \
                 whole number of units",
                ns(unit)
            ));
        }
    }
    Ok(unit)
}

/// A scenario domain, in units.
fn prepare_scenario_domain(
    domain: &rtvmm_sim::DomainSpec,
    unit: u64,
    options: &Options,
    notes: &mut Vec<String>,
) -> Prepared {
    let mut tasks = Vec::with_capacity(domain.tasks.len());
    let mut hard: Option<Blocker> = None;
    let mut aligned = domain.vcpu.offset.is_zero();
    let mut release_offsets = Vec::with_capacity(domain.tasks.len());
    let mut rounded = Vec::new();
    for task in &domain.tasks {
        let kind = match task.arrival {
            Arrival::Periodic => "periodic",
            Arrival::Sporadic { .. } => "sporadic",
            Arrival::AperiodicTimes(_) | Arrival::Poisson { .. } => "aperiodic",
        };
        let deadline = task.deadline.min(task.period);
        let mut report = TaskReport {
            name: task.name.clone(),
            kind,
            period_ns: task.period.as_ns(),
            wcet_ns: task.wcet.as_ns(),
            deadline_ns: deadline.as_ns(),
            period: None,
            wcet: None,
            deadline: None,
            priority: None,
            lemma1: None,
            rta: "not analysed",
            wcrt: None,
            wcrt_ns: None,
            slack_ns: None,
            bound_to_release: false,
        };
        let blame = |reason: String| Blocker {
            reason,
            task: Some(task.name.clone()),
        };
        if task.deadline > task.period {
            notes.push(format!(
                "{}/{}: deadline {} is beyond the period; analysed with deadline = period {}",
                domain.name, task.name, task.deadline, task.period
            ));
        }
        let bindable = kind == "periodic"
            && domain.vcpu.offset.is_zero()
            && task.period.as_ns() % unit == 0
            && task.offset.as_ns() % unit == 0;
        release_offsets.push(bindable.then(|| task.offset.as_ns() / unit));
        if kind == "aperiodic" {
            hard.get_or_insert(blame(
                "an aperiodic task has no minimum inter-arrival time, so neither it nor the \
                 tasks it can delay can be guaranteed"
                    .to_string(),
            ));
            tasks.push(report);
            continue;
        }
        if kind != "periodic" || !task.offset.is_zero() {
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
            hard.get_or_insert(blame(format!(
                "its {} is shorter than the analysis unit {}; analyse with a smaller --quantum",
                if period == 0 { "period" } else { "deadline" },
                ns(unit)
            )));
        } else if wcet > period {
            hard.get_or_insert(blame(format!(
                "its wcet {} exceeds its period {}: an overrunning task cannot be guaranteed",
                task.wcet, task.period
            )));
        } else {
            report.period = Some(period);
            report.wcet = Some(wcet);
            report.deadline = Some(deadline_units);
        }
        tasks.push(report);
    }
    if !rounded.is_empty() {
        notes.push(format!(
            "{}: task times rounded to whole units of {} (wcet up, period and deadline down): {}",
            domain.name,
            ns(unit),
            rounded.join(", ")
        ));
    }

    // The guest's own priority order, as the simulator's guest scheduler applies it.
    let mut order: Vec<usize> = (0..domain.tasks.len()).collect();
    let own = &domain.tasks;
    let analysis_guest = options.guest.unwrap_or(match domain.guest {
        GuestScheduler::Edf => AnalysisGuest::Edf,
        _ => AnalysisGuest::Rm,
    });
    match (options.guest, domain.guest) {
        (Some(AnalysisGuest::Rm), _) | (None, GuestScheduler::Rm) => {
            order.sort_by_key(|&i| (own[i].period, i))
        }
        (Some(AnalysisGuest::Dm), _) | (None, GuestScheduler::Dm) => {
            order.sort_by_key(|&i| (own[i].deadline, i))
        }
        (None, GuestScheduler::Fp) => order.sort_by_key(|&i| (own[i].priority, i)),
        (Some(AnalysisGuest::Edf), _) | (None, GuestScheduler::Edf) => {}
    }
    if let Some(guest) = options.guest {
        let written = domain.guest.name();
        if written != guest_name(guest) {
            notes.push(format!(
                "{}: analysed as {} although its guest is {written} (--guest)",
                domain.name,
                guest_name(guest)
            ));
        }
    }
    let fixed_priorities = analysis_guest.is_fixed_priority();
    order.retain(|&i| tasks[i].period.is_some());
    if fixed_priorities {
        // The rm guest serves equal periods first-in, first-out: one priority level each.
        let mut level = 0;
        let mut previous = None;
        for &i in &order {
            if previous != Some(tasks[i].period) {
                level += 1;
                previous = Some(tasks[i].period);
            }
            tasks[i].priority = Some(level);
        }
    }
    // Lemma 1 orders by period: it covers a fixed-priority guest whose order is RM's.
    let rate_monotonic = order
        .windows(2)
        .all(|pair| tasks[pair[0]].period <= tasks[pair[1]].period);
    let lemma_blocker = (fixed_priorities && !rate_monotonic).then(|| Blocker {
        reason: format!(
            "the {} guest's priority order is not rate-monotonic, which Lemma 1 needs \
             (--guest rm analyses it as rate-monotonic)",
            domain.guest.name()
        ),
        task: None,
    });
    let (workload, hard) = build_workload(&tasks, &order, hard);
    Prepared {
        name: domain.name.clone(),
        guest_label: domain.guest.name().to_string(),
        analysis_guest,
        tasks,
        order,
        workload,
        fixed_priorities,
        hard,
        lemma_blocker,
        aligned,
        choice: InterfaceChoice::default(),
        source: "optimal",
        vcpu: (!domain.vcpu.period.is_zero()).then_some((
            domain.vcpu.budget,
            domain.vcpu.period,
            domain.vcpu.priority,
        )),
        max_replenishments: domain.vcpu.max_replenishments,
        release_offsets,
    }
}

/// The workload in the guest's priority order, unless something already blocks.
fn build_workload(
    tasks: &[TaskReport],
    order: &[usize],
    hard: Option<Blocker>,
) -> (Option<Workload>, Option<Blocker>) {
    if hard.is_some() || order.is_empty() {
        return (None, hard);
    }
    let list = order.iter().map(|&i| {
        let t = &tasks[i];
        Task::with_deadline(
            t.period.unwrap_or(0),
            t.wcet.unwrap_or(0),
            t.deadline.unwrap_or(0),
        )
    });
    match Workload::new(list) {
        Ok(w) => (Some(w), None),
        Err(e) => {
            let index = match e {
                WorkloadError::ZeroPeriod { task }
                | WorkloadError::ZeroWcet { task }
                | WorkloadError::WcetExceedsPeriod { task, .. }
                | WorkloadError::BadDeadline { task, .. }
                | WorkloadError::TooLarge { task, .. } => Some(task),
                WorkloadError::Empty => None,
            };
            let blocker = Blocker {
                reason: format!("the analysis refuses it: {e}"),
                task: index.map(|k| tasks[order[k]].name.clone()),
            };
            (None, Some(blocker))
        }
    }
}

/// CARTS components as domains; child components are tasks `(Π, Θ)` of their parent.
fn prepare_carts(
    file: &str,
    system: &CartsSystem,
    unit: u64,
    options: &Options,
    notes: &mut Vec<String>,
) -> Result<Vec<Prepared>, AnalyzeError> {
    let specs = system
        .to_domains(options.sbf)
        .map_err(|error| AnalyzeError::Carts {
            file: file.to_string(),
            error,
        })?;
    notes.push(
        "CARTS tasks are taken as periodic, released together at time 0 (the harmonic sbf's \
         assumption)"
            .to_string(),
    );
    let mut out = Vec::with_capacity(specs.len());
    for (component, spec) in system.components.iter().zip(specs) {
        let analysis_guest = options.guest.unwrap_or(component.scheduler);
        if analysis_guest == AnalysisGuest::Dm
            && component.scheduler_written.eq_ignore_ascii_case("rm")
        {
            notes.push(format!(
                "{}: scheduler RM with deadlines shorter than periods: its tasks are ordered \
                 by deadline (deadline monotonic), as CARTS orders them",
                component.name
            ));
        }
        let mut position = vec![0; spec.workload.len()];
        for k in 0..spec.workload.len() {
            position[spec.workload.declaration_index(k)] = k;
        }
        // to_domains lists the component's tasks, then one task per child.
        let mut tasks: Vec<TaskReport> = component
            .tasks
            .iter()
            .map(|t| (t.name.clone(), "periodic"))
            .chain(
                component
                    .children
                    .iter()
                    .map(|c| (format!("component {}", c.name), "component")),
            )
            .enumerate()
            .map(|(index, (name, kind))| {
                let task = spec.workload.tasks()[position[index]];
                TaskReport {
                    name,
                    kind,
                    period_ns: task.period.saturating_mul(unit),
                    wcet_ns: task.wcet.saturating_mul(unit),
                    deadline_ns: task.deadline.saturating_mul(unit),
                    period: Some(task.period),
                    wcet: Some(task.wcet),
                    deadline: Some(task.deadline),
                    priority: None,
                    lemma1: None,
                    rta: "not analysed",
                    wcrt: None,
                    wcrt_ns: None,
                    slack_ns: None,
                    bound_to_release: false,
                }
            })
            .collect();
        let mut order: Vec<usize> = (0..tasks.len()).collect();
        if analysis_guest == AnalysisGuest::Dm {
            // Deadline-monotonic, as `Workload::deadline_monotonic` orders them.
            order.sort_by_key(|&i| (tasks[i].deadline, tasks[i].period, i));
        } else {
            order.sort_by_key(|&i| (tasks[i].period, i));
        }
        let fixed_priorities = analysis_guest.is_fixed_priority();
        if fixed_priorities {
            // Equal periods (deadlines under dm) share a level: the guest serves them
            // first-in, first-out.
            let dm = analysis_guest == AnalysisGuest::Dm;
            let mut level = 0;
            let mut previous = None;
            for &i in &order {
                let key = if dm {
                    tasks[i].deadline
                } else {
                    tasks[i].period
                };
                if previous != Some(key) {
                    level += 1;
                    previous = Some(key);
                }
                tasks[i].priority = Some(level);
            }
        }
        if !component.children.is_empty() {
            notes.push(format!(
                "{}: child components are analysed first and enter as periodic tasks (Π, Θ); \
                 the general sbf is used for {}",
                component.name, component.name
            ));
        }
        let source = match spec.interface {
            InterfaceChoice::Given(_) => "carts (fixed)",
            InterfaceChoice::FixedPeriod(_) => "fixed period",
            InterfaceChoice::Optimal(_) => "optimal",
        };
        let (workload, hard) = build_workload(&tasks, &order, None);
        let tasks_len = tasks.len();
        out.push(Prepared {
            name: component.name.clone(),
            guest_label: guest_name(component.scheduler).to_string(),
            analysis_guest,
            tasks,
            order,
            workload,
            fixed_priorities,
            hard,
            lemma_blocker: None,
            aligned: component.children.is_empty(),
            choice: spec.interface,
            source,
            vcpu: None,
            max_replenishments: DEFAULT_MAX_REPLENISHMENTS,
            release_offsets: vec![component.children.is_empty().then_some(0); tasks_len],
        });
    }
    Ok(out)
}

/// `--period-range`, `--fixed-period` and `--given` turned into each domain's choice.
fn apply_interface_options(
    prepared: &mut [Prepared],
    unit: u64,
    options: &Options,
    notes: &mut Vec<String>,
) -> Result<(), AnalyzeError> {
    if let Some(bounds) = options.period_range {
        let min = bounds.min.ceil_units(unit).max(1);
        let max = bounds.max.floor_units(unit);
        if min > max {
            return Err(AnalyzeError::BadOption(format!(
                "--period-range {}..{}: no whole number of units of {} lies in it",
                bounds.min,
                bounds.max,
                ns(unit)
            )));
        }
        for p in prepared.iter_mut() {
            // A CARTS component's own min_period/max_period wins over the command line.
            if p.choice == InterfaceChoice::Optimal(PeriodRange::default()) {
                p.choice = InterfaceChoice::Optimal(PeriodRange::new(min, max));
            }
        }
    }
    if options.given {
        for p in prepared.iter_mut() {
            if let (Some((budget, period, _)), false) = (p.vcpu, p.tasks.is_empty()) {
                p.choice = InterfaceChoice::Given(Interface::new(
                    period.as_ns() / unit,
                    budget.as_ns() / unit,
                ));
                p.source = "given";
            }
        }
        if prepared
            .iter()
            .any(|p| p.vcpu.is_none() && !p.tasks.is_empty())
        {
            notes.push(
                "domains without VCPU parameters get computed interfaces; server priorities \
                 are then rate-monotonic by period for every domain"
                    .to_string(),
            );
        }
    }
    for fixed in &options.fixed_periods {
        let names: Vec<String> = prepared.iter().map(|p| p.name.clone()).collect();
        let p = prepared
            .iter_mut()
            .find(|p| p.name == fixed.domain)
            .ok_or_else(|| {
                AnalyzeError::BadOption(format!(
                    "--fixed-period: no domain named '{}' (domains: {})",
                    fixed.domain,
                    names.join(", ")
                ))
            })?;
        let period = fixed.period.exact_units(unit).ok_or_else(|| {
            AnalyzeError::BadOption(format!(
                "--fixed-period {}={}: not a whole number of units of {}",
                fixed.domain,
                fixed.period,
                ns(unit)
            ))
        })?;
        p.choice = InterfaceChoice::FixedPeriod(period);
        p.source = "fixed period";
    }
    Ok(())
}

/// Per-domain state between the steps of [`run`].
struct Outcome {
    analysis: Option<DomainAnalysis>,
    interface: Option<Interface>,
    mode: SbfMode,
}

fn run(
    input: &Input,
    mut prepared: Vec<Prepared>,
    unit: u64,
    policy: PolicyKind,
    options: &Options,
    mut notes: Vec<String>,
) -> Report {
    // 1. Each domain on its own, with its own sbf mode: interface and Lemma 1.
    let outcomes: Vec<Outcome> = prepared
        .iter()
        .map(|p| domain_interface(p, unit, options, &mut notes))
        .collect();

    // 2. Server priorities at the root.
    let servers: Vec<usize> = (0..prepared.len())
        .filter(|&k| outcomes[k].interface.is_some())
        .collect();
    let all_given = options.given && servers.iter().all(|&k| prepared[k].vcpu.is_some());
    let mut priority: Vec<Option<u32>> = vec![None; prepared.len()];
    if all_given {
        for &k in &servers {
            priority[k] = prepared[k].vcpu.map(|v| v.2);
        }
    } else {
        let mut by_period = servers.clone();
        by_period.sort_by_key(|&k| (outcomes[k].interface.map(|i| i.period), k));
        for (rank, &k) in by_period.iter().enumerate() {
            priority[k] = Some(rank as u32 + 1);
        }
    }

    // 3. The root, and the response times where the policy is a server the hierarchical
    //    analysis covers.
    let model = root_model(policy);
    let rta_kind = rta_server(policy);
    let mut root_ok: Vec<Option<bool>> = vec![None; prepared.len()];
    let mut domain_kind: Vec<Option<ServerKind>> = vec![None; prepared.len()];
    let mut list_bound: Vec<Vec<bool>> = vec![Vec::new(); prepared.len()];
    let mut root_response: Vec<Option<u64>> = vec![None; prepared.len()];
    let mut u_rm = ExactSum::zero();
    for &k in &servers {
        u_rm.add(outcomes[k].interface.expect("server").bandwidth());
    }
    let root_test = match model {
        RootModel::Servers(kind) => {
            let list: Vec<Server> = servers
                .iter()
                .map(|&k| {
                    let interface = outcomes[k].interface.expect("server");
                    let kind = domain_server_kind(kind, &prepared[k], interface.budget, unit);
                    domain_kind[k] = Some(kind);
                    let tasks = if rta_kind.is_some() {
                        local_tasks(&prepared[k])
                    } else {
                        Vec::new()
                    };
                    let bound = bound_to_release(&prepared[k], &tasks, kind, interface.period);
                    list_bound[k] = bound.clone();
                    Server {
                        name: prepared[k].name.clone(),
                        budget: interface.budget,
                        period: interface.period,
                        priority: priority[k].unwrap_or(u32::MAX),
                        kind,
                        tasks,
                        bound,
                    }
                })
                .collect();
            match hierarchical_response_times(&list) {
                Ok(results) => {
                    for (&k, result) in servers.iter().zip(results) {
                        root_ok[k] = Some(result.schedulable_at_root);
                        root_response[k] = result.budget_response_time;
                        if rta_kind.is_some() {
                            record_bounds(&mut prepared[k], &result.tasks, unit);
                            let p = &mut prepared[k];
                            for (&i, &bound) in p.order.iter().zip(&list_bound[k]) {
                                p.tasks[i].bound_to_release = bound;
                            }
                        }
                    }
                }
                Err(e) => {
                    // Only reachable with no servers (every domain failed before).
                    if !servers.is_empty() {
                        notes.push(format!("root analysis refused its input: {e}"));
                    }
                }
            }
            let deferrable = if kind == ServerKind::Deferrable {
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
        RootModel::Edf => {
            let fits = u_rm.cmp_ratio(Ratio::from_integer(1)) != std::cmp::Ordering::Greater;
            for &k in &servers {
                root_ok[k] = Some(fits);
            }
            format!("1 pcpu, {} (EDF over servers): Σ Θ/Π ≤ 1", policy.name())
        }
        RootModel::Unenforced => {
            let mut by_period = servers.clone();
            by_period.sort_by_key(|&k| (outcomes[k].interface.map(|i| i.period), k));
            let root_tasks: Vec<FpTask> = by_period
                .iter()
                .enumerate()
                .map(|(rank, &k)| {
                    let i = outcomes[k].interface.expect("server");
                    FpTask::new(i.period, i.budget, rank as u32)
                })
                .collect();
            for (rank, &k) in by_period.iter().enumerate() {
                let response = fp_response_time(&root_tasks, rank, root_tasks[rank].period);
                root_ok[k] = Some(response.is_some());
                root_response[k] = response;
            }
            notes.push(format!(
                "{} does not enforce a budget per period: the verdict holds for servers that \
                 deliver these interfaces, not for {} itself",
                policy.name(),
                policy.name()
            ));
            "1 pcpu, interfaces as rate-monotonic periodic tasks (exact RTA)".to_string()
        }
    };
    if rta_kind.is_none() {
        for p in &mut prepared {
            for t in &mut p.tasks {
                if t.period.is_some() {
                    t.rta = "not applicable";
                }
            }
        }
    }
    if policy == PolicyKind::Sporadic {
        let merging: Vec<&str> = prepared
            .iter()
            .zip(&domain_kind)
            .filter(|(_, kind)| **kind == Some(ServerKind::SporadicMerging))
            .map(|(p, _)| p.name.as_str())
            .collect();
        let mut note = "Sporadic Server: one that never merges replenishments is analysed like a \
                        Periodic Server (budget paid back one period after the server became \
                        active)"
            .to_string();
        if !merging.is_empty() {
            let _ = write!(
                note,
                "; {} can merge them (max_replenishments below the budget in ns), which can \
                 bring budget back up to a period late: analysed with a capacity gap of a whole \
                 period, and Lemma 1 is not used (a VCPU's max_replenishments at least its \
                 budget in ns rules merges out)",
                merging.join(", ")
            );
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

    // 4. Verdicts and the report.
    let mut u_w = ExactSum::zero();
    let mut domains = Vec::with_capacity(prepared.len());
    for (k, (p, outcome)) in prepared.into_iter().zip(outcomes).enumerate() {
        for t in &p.tasks {
            if let (Some(period), Some(wcet)) = (t.period, t.wcet) {
                u_w.add(Ratio::new(wcet, period));
            }
        }
        let root = AtRoot {
            priority: priority[k],
            kind: domain_kind[k],
            ok: root_ok[k],
            response: root_response[k],
        };
        domains.push(domain_report(p, outcome, unit, policy, root));
    }
    for d in &domains {
        let loose = d
            .tasks
            .iter()
            .any(|t| matches!(t.rta, "exceeds deadline" | "server unschedulable"));
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
    let root_schedulable = root_ok.iter().all(|ok| ok.unwrap_or(true));
    let schedulable = domains.iter().all(|d| d.schedulable);
    let (format, file) = match input {
        Input::Scenario(s) => ("scenario", s.file.clone()),
        Input::Carts { file, .. } => ("carts", file.clone()),
    };
    Report {
        input: file,
        format,
        unit_ns: unit,
        sbf_mode: match options.sbf {
            SbfMode::Auto => "auto",
            SbfMode::General => "general",
        },
        interfaces: if options.given { "given" } else { "computed" },
        policy: policy.name(),
        root_test,
        rta_server: rta_kind.map(server_name),
        u_rm: u_rm.to_f64(),
        u_rm_exact: u_rm.to_fraction_string(),
        u_w: u_w.to_f64(),
        u_w_exact: u_w.to_fraction_string(),
        u_rm_minus_u_w: u_rm.to_f64() - u_w.to_f64(),
        root_schedulable,
        schedulable,
        domains,
        notes,
    }
}

/// Step 1 for one domain.
fn domain_interface(
    p: &Prepared,
    unit: u64,
    options: &Options,
    notes: &mut Vec<String>,
) -> Outcome {
    let mode = if options.sbf == SbfMode::Auto && p.aligned {
        SbfMode::Auto
    } else {
        SbfMode::General
    };
    if p.tasks.is_empty() {
        // No demand: no interface needed, but a VCPU it has still competes at the root
        // (taken the safe way: budget up, period down).
        let interface = p.vcpu.map(|(budget, period, _)| {
            let period_units = (period.as_ns() / unit).max(1);
            let budget_units = budget.as_ns().div_ceil(unit).clamp(1, period_units);
            Interface::new(period_units, budget_units)
        });
        if interface.is_some() {
            notes.push(format!(
                "{}: no tasks; its VCPU still counts at the root",
                p.name
            ));
        }
        return Outcome {
            analysis: None,
            interface,
            mode,
        };
    }
    if p.hard.is_some() {
        return Outcome {
            analysis: None,
            interface: None,
            mode,
        };
    }
    let Some(workload) = &p.workload else {
        return Outcome {
            analysis: None,
            interface: None,
            mode,
        };
    };
    if p.lemma_blocker.is_some() {
        // Lemma 1 does not apply; a given interface can still be checked by response times.
        let interface = match p.choice {
            InterfaceChoice::Given(i) if i.budget >= 1 && i.budget <= i.period => Some(i),
            _ => None,
        };
        return Outcome {
            analysis: None,
            interface,
            mode,
        };
    }
    let spec = AnalysisDomain {
        name: p.name.clone(),
        workload: workload.clone(),
        guest: p.analysis_guest,
        interface: p.choice,
    };
    let analysis = analyze_system(&[spec], mode)
        .domains
        .into_iter()
        .next()
        .expect("one domain in, one out");
    let interface = match (analysis.period, analysis.budget) {
        (Some(period), Some(budget)) => Some(Interface::new(period, budget)),
        _ => None,
    };
    Outcome {
        analysis: Some(analysis),
        interface,
        mode,
    }
}

/// The domain's tasks with their local priorities, in the guest's priority order.
fn local_tasks(p: &Prepared) -> Vec<FpTask> {
    if !p.fixed_priorities || p.workload.is_none() {
        return Vec::new();
    }
    p.order
        .iter()
        .map(|&i| {
            let t = &p.tasks[i];
            FpTask {
                period: t.period.unwrap_or(1),
                wcet: t.wcet.unwrap_or(1),
                deadline: t.deadline.unwrap_or(1),
                priority: t.priority.unwrap_or(u32::MAX),
            }
        })
        .collect()
}

/// Per task of [`local_tasks`]: whether its jobs are released exactly at the server's
/// releases (Davis & Burns's bound tasks): its period and offset are multiples of the
/// server period `period`, and the server releases on a fixed grid.
fn bound_to_release(p: &Prepared, tasks: &[FpTask], kind: ServerKind, period: u64) -> Vec<bool> {
    if tasks.is_empty() || !kind.has_release_grid() {
        return Vec::new();
    }
    p.order
        .iter()
        .zip(tasks)
        .map(|(&i, task)| {
            p.release_offsets[i]
                .is_some_and(|offset| task.period % period == 0 && offset % period == 0)
        })
        .collect()
}

/// Writes the hierarchical bounds (in the order of [`local_tasks`]) into the task reports.
fn record_bounds(p: &mut Prepared, bounds: &[ResponseBound], unit: u64) {
    if bounds.is_empty() {
        for t in &mut p.tasks {
            if t.period.is_some() {
                t.rta = "not applicable";
            }
        }
        return;
    }
    for (&i, bound) in p.order.iter().zip(bounds) {
        let t = &mut p.tasks[i];
        match *bound {
            ResponseBound::Bounded { response_time, .. } => {
                let wcrt_ns = response_time.saturating_mul(unit);
                t.rta = "bounded";
                t.wcrt = Some(response_time);
                t.wcrt_ns = Some(wcrt_ns);
                t.slack_ns = Some(t.deadline_ns.saturating_sub(wcrt_ns));
            }
            ResponseBound::ExceedsDeadline { at_least } => {
                t.rta = "exceeds deadline";
                t.wcrt = Some(at_least);
                t.wcrt_ns = Some(at_least.saturating_mul(unit));
            }
            ResponseBound::ServerUnschedulable => t.rta = "server unschedulable",
        }
    }
}

/// A domain's server at the root, as step 3 found it.
struct AtRoot {
    priority: Option<u32>,
    /// The server kind the hierarchical analysis used for it.
    kind: Option<ServerKind>,
    /// `r_S(Θ) ≤ Π` (or the policy's root test).
    ok: Option<bool>,
    response: Option<u64>,
}

/// Step 4 for one domain: the verdict and its reason.
fn domain_report(
    mut p: Prepared,
    outcome: Outcome,
    unit: u64,
    policy: PolicyKind,
    root: AtRoot,
) -> DomainReport {
    let AtRoot {
        priority,
        kind,
        ok: root_ok,
        response: root_response,
    } = root;
    let interface = outcome.interface;
    if let (Some(i), Some(w), Some(_), true) = (
        interface,
        &p.workload,
        &outcome.analysis,
        p.analysis_guest.is_fixed_priority(),
    ) {
        let form = if outcome.mode == SbfMode::Auto && harmonic_is_sound(i.period, w) {
            SupplyForm::Harmonic
        } else {
            SupplyForm::General
        };
        // Lemma 1 for one task at a time: ∃t ≤ d_i with sbf(t) ≥ rbf_i(t), in bounded work;
        // a test cut short counts as not holding (the response-time bound may still hold).
        let analyzer = InterfaceAnalyzer::new(w, p.analysis_guest);
        let ordered = analyzer.workload();
        for index in 0..ordered.len() {
            let holds = analyzer.lemma1_holds(index, i, form).unwrap_or(false);
            p.tasks[p.order[ordered.declaration_index(index)]].lemma1 = Some(holds);
        }
    }
    // Both are sufficient tests, task by task: Lemma 1 where the periodic resource model
    // holds, and the hierarchical response-time bound.
    let prm_broken = prm_fails(kind);
    let prm_holds = prm_broken.is_none();
    let lemma_ok = outcome.analysis.as_ref().map(|a| a.schedulable);
    let root_fine = root_ok.unwrap_or(true);
    let guaranteed = |t: &TaskReport| (prm_holds && t.lemma1 == Some(true)) || t.rta == "bounded";
    let first_unguaranteed = p
        .order
        .iter()
        .map(|&i| &p.tasks[i])
        .find(|t| !guaranteed(t));

    let mut blame: Option<Blocker> = None;
    let schedulable = if p.tasks.is_empty() {
        true
    } else if let Some(hard) = &p.hard {
        blame = Some(hard.clone());
        false
    } else if interface.is_none() {
        blame = Some(match (&outcome.analysis, &p.lemma_blocker) {
            (Some(a), _) => failure_blocker(a.failure.as_ref(), &p, None),
            (None, Some(b)) => b.clone(),
            (None, None) => Blocker {
                reason: "no interface".to_string(),
                task: None,
            },
        });
        false
    } else if let (false, Some(i)) = (root_fine, interface) {
        blame = Some(Blocker {
            reason: format!(
                "the root cannot deliver its budget Θ = {} within every period Π = {} \
                 (none of its tasks can be guaranteed)",
                ns(i.budget.saturating_mul(unit)),
                ns(i.period.saturating_mul(unit))
            ),
            task: None,
        });
        false
    } else if !p.fixed_priorities {
        // EDF: the dbf test is all-or-nothing, and only where the model holds.
        if prm_holds && lemma_ok == Some(true) {
            true
        } else {
            blame = Some(if prm_holds {
                failure_blocker(
                    outcome.analysis.as_ref().and_then(|a| a.failure.as_ref()),
                    &p,
                    interface,
                )
            } else {
                Blocker {
                    reason: format!(
                        "no analysis covers an EDF guest in a {} (its supply is not the \
                         periodic resource model's: {})",
                        kind.map_or("server", server_name),
                        prm_broken.unwrap_or("")
                    ),
                    task: None,
                }
            });
            false
        }
    } else if let (Some(t), Some(i)) = (first_unguaranteed, interface) {
        let lemma = match (t.lemma1, &p.lemma_blocker, prm_holds) {
            (_, Some(b), _) => b.reason.clone(),
            (Some(false), None, _) => format!(
                "Lemma 1 fails for it on the interface (Π, Θ) = ({}, {}) units",
                i.period, i.budget
            ),
            (_, None, false) => format!(
                "under the {} the periodic resource model does not hold ({})",
                kind.map_or("server", server_name),
                prm_broken.unwrap_or("")
            ),
            _ => "Lemma 1 does not apply".to_string(),
        };
        let server = kind.map_or("server", server_name);
        let rta = match t.rta {
            "exceeds deadline" => format!(
                "its response-time bound under the {server} exceeds its deadline {} (R ≥ {})",
                ns(t.deadline_ns),
                ns(t.wcrt_ns.unwrap_or(0))
            ),
            "not applicable" => {
                format!("no response-time analysis applies under {}", policy.name())
            }
            other => format!("response-time analysis: {other}"),
        };
        blame = Some(Blocker {
            reason: format!("{lemma}, and {rta}"),
            task: Some(t.name.clone()),
        });
        false
    } else {
        true
    };

    let (bandwidth, bandwidth_exact) = match interface {
        Some(i) => (i.bandwidth().to_f64(), Some(i.bandwidth().to_string())),
        None => (0.0, None),
    };
    let utilization = {
        let mut sum = ExactSum::zero();
        for t in p.tasks.iter().filter(|t| t.period.is_some()) {
            sum.add(Ratio::new(t.wcet.unwrap_or(0), t.period.unwrap_or(1)));
        }
        sum
    };
    let sbf = match (&p.workload, interface) {
        (Some(w), Some(i)) if outcome.mode == SbfMode::Auto && harmonic_is_sound(i.period, w) => {
            Some("harmonic")
        }
        (Some(_), Some(_)) => Some("general"),
        _ => None,
    };
    DomainReport {
        name: p.name,
        guest: p.guest_label,
        analysed_as: outcome
            .analysis
            .as_ref()
            .map(|_| guest_name(p.analysis_guest)),
        period: interface.map(|i| i.period),
        budget: interface.map(|i| i.budget),
        period_ns: interface.map(|i| i.period.saturating_mul(unit)),
        budget_ns: interface.map(|i| i.budget.saturating_mul(unit)),
        interface_source: interface.map(|_| {
            if p.tasks.is_empty() {
                "vcpu (no tasks)"
            } else {
                p.source
            }
        }),
        proven_optimal: !matches!(&outcome.analysis, Some(a) if !a.proven_optimal),
        sbf,
        bandwidth,
        bandwidth_exact,
        utilization: utilization.to_f64(),
        utilization_exact: utilization.to_fraction_string(),
        overhead: if interface.is_some() {
            bandwidth - utilization.to_f64()
        } else {
            0.0
        },
        priority,
        root_schedulable: root_ok,
        root_response_time: root_response,
        schedulable,
        reason: blame.as_ref().map(|b| b.reason.clone()),
        failed_task: blame.and_then(|b| b.task),
        tasks: p.tasks,
    }
}

/// The analysis crate's failure, with the task named as the file names it.
fn failure_blocker(
    failure: Option<&DomainFailure>,
    p: &Prepared,
    interface: Option<Interface>,
) -> Blocker {
    // The workload was built in `p.order`, so its declaration index k is p.order[k].
    let name = |k: usize| p.order.get(k).map(|&i| p.tasks[i].name.clone());
    match failure {
        Some(DomainFailure::Unschedulable { task_index, .. }) => Blocker {
            reason: format!(
                "it misses its deadline under {} even on a dedicated pcpu",
                guest_name(p.analysis_guest)
            ),
            task: name(*task_index),
        },
        Some(DomainFailure::InterfaceTooSmall { task_index, .. }) => Blocker {
            reason: match interface {
                Some(i) => format!(
                    "the {} test fails on the interface (Π, Θ) = ({}, {}) units",
                    match p.analysis_guest {
                        AnalysisGuest::Rm | AnalysisGuest::Dm => "Lemma 1",
                        AnalysisGuest::Edf => "EDF (dbf ≤ sbf)",
                    },
                    i.period,
                    i.budget
                ),
                None => "the interface is too small".to_string(),
            },
            task: name(*task_index),
        },
        Some(DomainFailure::Invalid { error }) => Blocker {
            reason: error.to_string(),
            task: None,
        },
        Some(DomainFailure::Undecided { task_index, .. }) => Blocker {
            reason: format!(
                "the exact test of task {task_index} on the given interface needs more than {} \
                 steps; analyse in a coarser time unit",
                rtvmm_analysis::MAX_TEST_STEPS
            ),
            task: None,
        },
        None => Blocker {
            reason: "no interface".to_string(),
            task: None,
        },
    }
}

impl Report {
    /// The first domain that cannot be guaranteed, as `check --admit` reports it.
    pub fn refusal(&self) -> Option<Refusal> {
        self.domains
            .iter()
            .find(|d| !d.schedulable)
            .map(|d| Refusal {
                domain: d.name.clone(),
                task: d.failed_task.clone(),
                reason: d
                    .reason
                    .clone()
                    .unwrap_or_else(|| "not schedulable".to_string()),
            })
    }

    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the report serialises")
    }

    fn unit(&self) -> Nanos {
        ns(self.unit_ns)
    }

    /// The readable table; `with_rta` adds the response times.
    pub fn table(&self, with_rta: bool) -> String {
        let mut out = String::new();
        let tasks: usize = self.domains.iter().map(|d| d.tasks.len()).sum();
        let _ = writeln!(
            out,
            "{} ({}): {}, {}; unit {}; sbf {}; interfaces {}; policy {}",
            self.input,
            self.format,
            count(self.domains.len(), "domain"),
            count(tasks, "task"),
            self.unit(),
            self.sbf_mode,
            self.interfaces,
            self.policy
        );
        let mut rows = vec![[
            "domain",
            "guest",
            "Π",
            "Θ",
            "period",
            "budget",
            "bandwidth",
            "util",
            "overhead",
            "sbf",
            "prio",
            "schedulable",
        ]
        .map(String::from)
        .to_vec()];
        for d in &self.domains {
            let dash = || "-".to_string();
            let star = if d.proven_optimal { "" } else { "*" };
            rows.push(vec![
                d.name.clone(),
                d.guest.clone(),
                d.period.map_or_else(dash, |v| format!("{v}{star}")),
                d.budget.map_or_else(dash, |v| v.to_string()),
                d.period_ns.map_or_else(dash, |v| ns(v).to_string()),
                d.budget_ns.map_or_else(dash, |v| ns(v).to_string()),
                d.bandwidth_exact
                    .as_ref()
                    .map_or_else(dash, |_| format!("{:.4}", d.bandwidth)),
                format!("{:.4}", d.utilization),
                d.bandwidth_exact
                    .as_ref()
                    .map_or_else(dash, |_| format!("{:.4}", d.overhead)),
                d.sbf.map_or_else(dash, str::to_string),
                d.priority.map_or_else(dash, |v| v.to_string()),
                if d.schedulable { "yes" } else { "NO" }.to_string(),
            ]);
        }
        out.push_str(&render(&rows));
        if self.domains.iter().any(|d| !d.proven_optimal) {
            out.push_str(
                "* optimality not proven (an exact test reached its step limit, or the EDF \
                 period search its bound; the interface is still sound)\n",
            );
        }
        let _ = writeln!(out, "root: {}", self.root_test);
        let _ = writeln!(
            out,
            "U_RM = {:.4} ({})   U_W = {:.4} ({})   U_RM − U_W = {:.4}",
            self.u_rm, self.u_rm_exact, self.u_w, self.u_w_exact, self.u_rm_minus_u_w
        );
        let _ = writeln!(
            out,
            "verdict: {}",
            if self.schedulable {
                "schedulable"
            } else {
                "NOT schedulable"
            }
        );
        for d in self.domains.iter().filter(|d| !d.schedulable) {
            let reason = d.reason.as_deref().unwrap_or("not schedulable");
            match &d.failed_task {
                Some(task) => {
                    let _ = writeln!(out, "  {}: task '{task}': {reason}", d.name);
                }
                None => {
                    let _ = writeln!(out, "  {}: {reason}", d.name);
                }
            }
        }
        if with_rta {
            out.push('\n');
            out.push_str(&self.rta_table());
        }
        if !self.notes.is_empty() {
            out.push_str("notes:\n");
            for note in &self.notes {
                let _ = writeln!(out, "  - {note}");
            }
        }
        out
    }

    fn rta_table(&self) -> String {
        let mut out = String::new();
        let Some(server) = self.rta_server else {
            let _ = writeln!(
                out,
                "response times: not applicable under {} (the hierarchical analysis covers \
                 the deferrable, periodic, polling and sporadic servers; --policy picks one)",
                self.policy
            );
            return out;
        };
        let _ = writeln!(
            out,
            "response times under the {server} (Davis & Burns 2005), servers as above; a task is \
             guaranteed if Lemma 1 holds for it or its bound is within its deadline:"
        );
        let mut rows = vec![[
            "domain", "task", "period", "wcet", "deadline", "prio", "lemma 1", "wcrt", "slack",
        ]
        .map(String::from)
        .to_vec()];
        for d in &self.domains {
            for t in &d.tasks {
                let (wcrt, slack) = match t.rta {
                    "bounded" => (
                        ns(t.wcrt_ns.unwrap_or(0)).to_string(),
                        ns(t.slack_ns.unwrap_or(0)).to_string(),
                    ),
                    "exceeds deadline" => (
                        format!("≥ {}", ns(t.wcrt_ns.unwrap_or(0))),
                        "misses".to_string(),
                    ),
                    "not applicable" if d.analysed_as == Some("edf") || t.priority.is_none() => {
                        ("n/a (edf guest)".to_string(), "-".to_string())
                    }
                    other => (other.to_string(), "-".to_string()),
                };
                rows.push(vec![
                    d.name.clone(),
                    t.name.clone(),
                    ns(t.period_ns).to_string(),
                    ns(t.wcet_ns).to_string(),
                    ns(t.deadline_ns).to_string(),
                    t.priority
                        .map_or_else(|| "-".to_string(), |p| p.to_string()),
                    match t.lemma1 {
                        Some(true) => "holds",
                        Some(false) => "fails",
                        None => "-",
                    }
                    .to_string(),
                    if t.bound_to_release {
                        format!("{wcrt} *")
                    } else {
                        wcrt
                    },
                    slack,
                ]);
            }
        }
        out.push_str(&render(&rows));
        if self
            .domains
            .iter()
            .flat_map(|d| &d.tasks)
            .any(|t| t.bound_to_release)
        {
            let _ = writeln!(
                out,
                "* released exactly at its server's releases (period and offset multiples of \
                 Π): no capacity gap before its first server period (Davis & Burns's bound tasks)"
            );
        }
        out
    }

    /// `xl sched-rtds` commands, one per domain (`-v all` where a domain has several
    /// VCPUs). Budgets are rounded up and periods down to whole microseconds.
    pub fn xl_commands(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# Xen RTDS parameters from `rtvmm analyze {}` (period and budget in µs).",
            self.input
        );
        let _ = writeln!(
            out,
            "# RTDS schedules VCPUs by EDF: each gets its budget in every period while the \
             total bandwidth is at most 1 (here U_RM = {:.4}).",
            self.u_rm
        );
        if !self.schedulable {
            let _ = writeln!(
                out,
                "# WARNING: the analysis found this system NOT schedulable (see `rtvmm analyze`)."
            );
        }
        for d in self.domains.iter().filter(|d| d.sbf == Some("harmonic")) {
            let _ = writeln!(
                out,
                "# {}: this interface relies on the harmonic supply bound, sound only if the \
                 guest releases its tasks at the VCPU's period boundaries; otherwise use \
                 --sbf general.",
                d.name
            );
        }
        for d in &self.domains {
            match (d.period_ns, d.budget_ns) {
                (Some(period), Some(budget)) => {
                    let (period_us, budget_us) = (period / 1000, budget.div_ceil(1000));
                    if period % 1000 != 0 || budget % 1000 != 0 {
                        let _ = writeln!(
                            out,
                            "# {}: {} / {} rounded to whole µs (budget up, period down)",
                            d.name,
                            ns(budget),
                            ns(period)
                        );
                    }
                    let vcpus = if VCPUS_PER_DOMAIN > 1 { " -v all" } else { "" };
                    let _ = writeln!(
                        out,
                        "xl sched-rtds -d {}{vcpus} -p {period_us} -b {budget_us}",
                        shell_word(&d.name)
                    );
                }
                _ => {
                    let _ = writeln!(
                        out,
                        "# {}: no interface ({})",
                        d.name,
                        d.reason.as_deref().unwrap_or("no tasks")
                    );
                }
            }
        }
        out
    }
}

/// "1 task", "2 tasks".
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Left-aligned columns, two spaces apart.
fn render(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            // Padded by hand: `{:<w$}` panics for a width past u16::MAX.
            line.push_str(cell);
            let pad = widths[c] + 2 - cell.chars().count();
            line.push_str(&" ".repeat(pad));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A domain name as one shell word.
fn shell_word(name: &str) -> String {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.+:@/".contains(c))
    {
        name.to_string()
    } else {
        format!("'{}'", name.replace('\'', r"'\''"))
    }
}

/// `check --admit`: the scenario's own VCPUs are the interfaces where it has them, the
/// computed interfaces elsewhere; refused when any domain cannot be guaranteed.
pub fn admit(scenario: &Scenario) -> Result<Report, Box<(Refusal, Report)>> {
    let options = Options {
        given: true,
        ..Options::default()
    };
    let report = analyze(&Input::Scenario(scenario.clone()), &options)
        .expect("a validated scenario analyses");
    match report.refusal() {
        None => Ok(report),
        Some(refusal) => Err(Box::new((refusal, report))),
    }
}

/// `--emit scenario`: the input with every domain's VCPU set to its interface (budget
/// Θ·unit, period Π·unit, the report's RM priority) under the policy the analysis assumed,
/// validated, as normalised TOML.
pub fn emit_scenario(input: &Input, report: &Report) -> Result<String, AnalyzeError> {
    let header = format!(
        "# Emitted by `rtvmm analyze {}`: each domain's VCPU is its interface (budget Θ, \
         period Π, priority rate-monotonic by period).\n# Verdict of the analysis: {}; \
         U_RM = {:.4}, U_W = {:.4}.\n",
        report.input,
        if report.schedulable {
            "schedulable"
        } else {
            "NOT schedulable"
        },
        report.u_rm,
        report.u_w
    );
    let scenario = match input {
        Input::Scenario(scenario) => with_interfaces(scenario, report)?,
        Input::Carts { file, system } => carts_scenario(file, system, report)?,
    };
    Ok(header + &scenario.to_toml())
}

fn no_interface(d: &DomainReport) -> AnalyzeError {
    AnalyzeError::Emit(format!(
        "domain '{}' has no interface ({}); nothing written",
        d.name,
        d.reason
            .as_deref()
            .unwrap_or("it has no tasks and no VCPU parameters")
    ))
}

fn with_interfaces(scenario: &Scenario, report: &Report) -> Result<Scenario, AnalyzeError> {
    let mut out = scenario.clone();
    for (domain, d) in out.system.domains.iter_mut().zip(&report.domains) {
        let (Some(budget), Some(period), Some(priority)) = (d.budget_ns, d.period_ns, d.priority)
        else {
            return Err(no_interface(d));
        };
        // A weight derived from the old share follows the new one; a written one stays.
        let derived = derived_weight(&domain.vcpu);
        domain.vcpu.budget = ns(budget);
        domain.vcpu.period = ns(period);
        domain.vcpu.priority = priority;
        if domain.vcpu.weight == derived {
            domain.vcpu.weight = weight_from_share(domain.vcpu.budget, domain.vcpu.period);
        }
    }
    // The policy the analysis assumed (`--policy` may differ from the file's).
    if let Some(kind) = PolicyKind::from_name(report.policy) {
        if kind != out.policy() {
            out.system.policy = out
                .policy_config(kind)
                .map_err(|e| AnalyzeError::Emit(e.to_string()))?;
        }
    }
    out.validate()
        .map_err(|e| AnalyzeError::Emit(format!("the emitted scenario does not validate: {e}")))?;
    Ok(out)
}

/// The weight the scenario format derives for these parameters.
fn derived_weight(vcpu: &VcpuParams) -> u32 {
    if vcpu.period.is_zero() {
        DEFAULT_WEIGHT
    } else {
        weight_from_share(vcpu.budget, vcpu.period)
    }
}

/// A new scenario from CARTS components (one level: children cannot be flattened).
fn carts_scenario(
    file: &str,
    system: &CartsSystem,
    report: &Report,
) -> Result<Scenario, AnalyzeError> {
    if let Some(c) = system.components.iter().find(|c| !c.children.is_empty()) {
        return Err(AnalyzeError::Emit(format!(
            "component '{}' has child components, which a scenario cannot express (a guest \
             runs tasks, not components)",
            c.name
        )));
    }
    let quote = |s: &str| toml::Value::String(s.to_string()).to_string();
    let time = |v: u64| quote(&ns(v).to_string());
    let longest = report
        .domains
        .iter()
        .flat_map(|d| {
            d.tasks
                .iter()
                .map(|t| t.period_ns)
                .chain(d.period_ns)
                .collect::<Vec<_>>()
        })
        .max()
        .unwrap_or(0);
    let duration = longest.saturating_mul(20).max(1_000_000_000);
    let stem = Path::new(file)
        .file_stem()
        .map_or_else(|| "carts".to_string(), |s| s.to_string_lossy().into_owned());
    let mut text = String::new();
    let _ = writeln!(text, "name = {}", quote(&stem));
    let _ = writeln!(text, "duration = {}", time(duration));
    let _ = writeln!(text, "[machine]\nquantum = {}", time(report.unit_ns));
    let _ = writeln!(text, "replenishment = \"exact\"");
    let _ = writeln!(text, "[scheduler]\npolicy = {}", quote(report.policy));
    for d in &report.domains {
        let (Some(budget), Some(period), Some(priority)) = (d.budget_ns, d.period_ns, d.priority)
        else {
            return Err(no_interface(d));
        };
        let _ = writeln!(text, "[[domain]]\nname = {}", quote(&d.name));
        let _ = writeln!(text, "guest = {}", quote(&d.guest));
        let _ = writeln!(
            text,
            "vcpu = {{ budget = {}, period = {}, priority = {priority} }}",
            time(budget),
            time(period)
        );
        let mut seen: Vec<String> = Vec::new();
        for t in &d.tasks {
            // CARTS names need not be unique; scenario task names must be.
            let mut name = t.name.clone();
            let mut n = 2;
            while seen.contains(&name) {
                name = format!("{}#{n}", t.name);
                n += 1;
            }
            seen.push(name.clone());
            let _ = writeln!(
                text,
                "[[domain.task]]\nname = {}\nperiod = {}\nwcet = {}\ndeadline = {}",
                quote(&name),
                time(t.period_ns),
                time(t.wcet_ns),
                time(t.deadline_ns)
            );
        }
    }
    Scenario::from_toml(&text, file)
        .map_err(|e| AnalyzeError::Emit(format!("the emitted scenario does not validate: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(text: &str) -> Scenario {
        Scenario::from_toml_for_analysis(text, "test.toml").unwrap()
    }

    const HEAD: &str = "duration = \"1s\"\n[scheduler]\npolicy = \"periodic\"\n";

    fn domain(name: &str, vcpu: &str, tasks: &[(&str, &str, &str)]) -> String {
        let mut s = format!("[[domain]]\nname = \"{name}\"\n{vcpu}\n");
        for (t, p, e) in tasks {
            s.push_str(&format!(
                "[[domain.task]]\nname = \"{t}\"\nperiod = \"{p}\"\nwcet = \"{e}\"\n"
            ));
        }
        s
    }

    fn run_on(text: &str, options: &Options) -> Report {
        analyze(&Input::Scenario(scenario(text)), options).unwrap()
    }

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
            Some("general"),
            "7, 8, 10 have no common divisor > 1"
        );
        assert!(report.schedulable);
        assert_eq!(a.priority, Some(1));
    }

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
        assert_eq!(refusal.domain, "a");
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
        assert_eq!(auto.domains[0].sbf, Some("harmonic"));
        assert_eq!(auto.domains[0].failed_task.as_deref(), Some("slow"));
    }

    /// Two deferrable servers that pass as periodic tasks (RM: 2/5 + 6/10 = 1.0, R_2 =
    /// 6 + 2⌈R/5⌉: 8 → 10 ✓) but not with the Deferrable server's back-to-back jitter
    /// J = 3: r = 6 + 2⌈(r+3)/5⌉: 6 → 10 → 12 > 10.
    #[test]
    fn deferrable_root_counts_back_to_back_interference() {
        let mut text = String::from("duration = \"1s\"\n");
        text.push_str(&domain(
            "hi",
            "vcpu = { budget = \"2ms\", period = \"5ms\", priority = 1 }",
            &[("t", "5ms", "1ms")],
        ));
        text.push_str(&domain(
            "lo",
            "vcpu = { budget = \"6ms\", period = \"10ms\", priority = 2 }",
            &[("t", "20ms", "1ms")],
        ));
        let given = Options {
            given: true,
            ..Options::default()
        };
        let deferrable = run_on(&text, &given);
        assert_eq!(deferrable.policy, "deferrable");
        assert_eq!(deferrable.domains[1].root_schedulable, Some(false));
        assert!(!deferrable.schedulable);
        let periodic = run_on(
            &text,
            &Options {
                policy: Some(PolicyKind::Periodic),
                ..given
            },
        );
        assert_eq!(periodic.domains[1].root_response_time, Some(10));
        assert!(periodic.schedulable);
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
        assert_eq!(t.rta, "bounded");
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

    #[test]
    fn tick_replenishment_and_overheads_are_named_as_outside_the_guarantees() {
        let body = domain(
            "a",
            "vcpu = { budget = \"2ms\", period = \"5ms\" }",
            &[("t", "20ms", "3ms")],
        );
        let exact = run_on(&format!("{HEAD}{body}"), &Options::default());
        assert!(!exact
            .notes
            .iter()
            .any(|n| n.contains("replenished exactly")));
        let tick = run_on(
            &format!("{HEAD}[machine]\nreplenishment = \"tick\"\n{body}"),
            &Options::default(),
        );
        assert!(
            tick.notes
                .iter()
                .any(|n| n.contains("this machine has tick replenishment and 0ns + 0ns")),
            "{:?}",
            tick.notes
        );
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
        assert_eq!(aligned.domains[0].sbf, Some("harmonic"));
        let shifted = format!("{HEAD}{}offset = \"1ms\"\n", domain("d", "", &tasks));
        let shifted = run_on(&shifted, &Options::default());
        assert_eq!(
            (shifted.domains[0].period, shifted.domains[0].budget),
            (Some(7), Some(2))
        );
        assert_eq!(shifted.domains[0].sbf, Some("general"));
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

    #[test]
    fn options_parse() {
        assert_eq!("10".parse::<Length>(), Ok(Length::Units(10)));
        assert_eq!(
            "10ms".parse::<Length>(),
            Ok(Length::Time(Nanos::from_ms(10)))
        );
        assert!("0".parse::<Length>().is_err());
        let b: PeriodBounds = "5..50ms".parse().unwrap();
        assert_eq!(b.min, Length::Units(5));
        assert_eq!(b.max, Length::Time(Nanos::from_ms(50)));
        let f: FixedPeriod = "d=1=10".parse().unwrap();
        assert_eq!(f.domain, "d=1");
        assert!("x".parse::<FixedPeriod>().is_err());
    }

    #[test]
    fn fixed_period_and_unknown_domain() {
        let text = format!(
            "{HEAD}{}",
            domain(
                "d",
                "",
                &[
                    ("a", "25ms", "3ms"),
                    ("b", "50ms", "5ms"),
                    ("c", "100ms", "4ms")
                ]
            )
        );
        let fixed = Options {
            fixed_periods: vec!["d=10".parse().unwrap()],
            sbf: SbfMode::General,
            ..Options::default()
        };
        let report = run_on(&text, &fixed);
        // The analysis crate's example: (10, MinExec(10)) = (10, 3).
        assert_eq!(
            (report.domains[0].period, report.domains[0].budget),
            (Some(10), Some(3))
        );
        assert_eq!(report.domains[0].interface_source, Some("fixed period"));
        let unknown = Options {
            fixed_periods: vec!["nope=10".parse().unwrap()],
            ..Options::default()
        };
        let err = analyze(&Input::Scenario(scenario(&text)), &unknown).unwrap_err();
        assert!(err.to_string().contains("no domain named 'nope'"), "{err}");
    }

    #[test]
    fn emitted_scenario_validates_and_carries_the_interfaces() {
        let text = format!(
            "duration = \"1s\"\n{}{}",
            domain("a", "", &[("t1", "7ms", "2ms"), ("t2", "8ms", "1ms")]),
            domain("b", "", &[("t", "50ms", "5ms")])
        );
        let input = Input::Scenario(scenario(&text));
        let report = analyze(&input, &Options::default()).unwrap();
        let emitted = emit_scenario(&input, &report).unwrap();
        let back = Scenario::from_toml(&emitted, "emitted.toml").unwrap();
        for (domain, d) in back.system.domains.iter().zip(&report.domains) {
            assert_eq!(Some(domain.vcpu.budget.as_ns()), d.budget_ns);
            assert_eq!(Some(domain.vcpu.period.as_ns()), d.period_ns);
            assert_eq!(Some(domain.vcpu.priority), d.priority);
        }
    }

    #[test]
    fn xl_lines() {
        let text = format!(
            "{HEAD}{}",
            domain("web server", "", &[("t", "50ms", "5ms")])
        );
        let report = run_on(&text, &Options::default());
        let xl = report.xl_commands();
        let line = xl.lines().find(|l| l.starts_with("xl ")).unwrap();
        let (p, b) = (
            report.domains[0].period_ns.unwrap() / 1000,
            report.domains[0].budget_ns.unwrap() / 1000,
        );
        assert_eq!(line, format!("xl sched-rtds -d 'web server' -p {p} -b {b}"));
    }

    /// Issue 13 §2's inputs through the scenario path (the interfaces in units are derived
    /// by hand in `rtvmm-analysis`'s `tests/analysis/bounded_analysis.rs`; here the unit
    /// conversion): an EDF domain at a 7 µs quantum, EDF with periods 40 ms and 10^9 s,
    /// and a 1 ms task beside a one-day task at a 10 µs quantum. Each used to run for a
    /// minute or abort out of memory.
    #[test]
    fn pathological_period_ratios_analyse_to_their_interfaces() {
        let edf = |quantum: &str, tasks: &[(&str, &str)]| {
            let mut text = format!("{HEAD}[machine]\nquantum = \"{quantum}\"\n[[domain]]\nname = \"d\"\nguest = \"edf\"\n");
            for (k, (p, e)) in tasks.iter().enumerate() {
                text.push_str(&format!(
                    "[[domain.task]]\nname = \"t{k}\"\nperiod = \"{p}\"\nwcet = \"{e}\"\n"
                ));
            }
            text
        };
        // (158, 157) units of 7 µs.
        let report = run_on(
            &edf("7us", &[("22400us", "20200us"), ("46900us", "4300us")]),
            &Options::default(),
        );
        let d = &report.domains[0];
        assert_eq!((d.period, d.budget), (Some(158), Some(157)));
        assert_eq!(
            (d.period_ns, d.budget_ns),
            (Some(1_106_000), Some(1_099_000))
        );
        assert!(d.proven_optimal && report.schedulable);
        // (8, 1) units of 1 ms.
        let report = run_on(
            &edf("1ms", &[("40ms", "4ms"), ("100000000s", "1s")]),
            &Options::default(),
        );
        let d = &report.domains[0];
        assert_eq!(
            (d.period_ns, d.budget_ns),
            (Some(8_000_000), Some(1_000_000))
        );
        assert!(report.schedulable);
        // (100, 11) units of 10 µs; Lemma 1 recorded for both tasks without a test point per
        // job of the 1 ms task.
        let text = format!(
            "{HEAD}[machine]\nquantum = \"10us\"\n{}",
            domain(
                "daily",
                "",
                &[("tick", "1ms", "100us"), ("backup", "86400s", "1s")]
            )
        );
        let report = run_on(&text, &Options::default());
        let d = &report.domains[0];
        assert_eq!((d.period_ns, d.budget_ns), (Some(1_000_000), Some(110_000)));
        assert!(
            d.tasks.iter().all(|t| t.lemma1 == Some(true)),
            "{:?}",
            d.tasks
        );
        assert!(report.schedulable);
    }

    fn carts(xml: &str) -> Input {
        Input::Carts {
            file: "test.xml".to_string(),
            system: parse_carts(xml).unwrap(),
        }
    }

    /// Tasks a = (p 12, e 3, d 5), b = (p 10, e 2) on the given interface (4, 3): by hand
    /// (`rtvmm-analysis`, `carts_input.rs`) deadline-monotonic passes and rate-monotonic
    /// fails at a. A CARTS `DM` component is analysed (it used to be refused with "unsupported
    /// scheduler DM (expected RM, DM or EDF)", printed twice), and an `RM` one is read as CARTS
    /// reads it — by deadline — with a note saying so.
    #[test]
    fn carts_constrained_deadlines_are_deadline_monotonic() {
        let xml = |scheduler: &str| {
            format!(
                r#"<system><component name="c" scheduler="{scheduler}" period="4" budget="3">
                   <task name="a" p="12" d="5" e="3"/><task name="b" p="10" e="2"/>
                   </component></system>"#
            )
        };
        for scheduler in ["DM", "RM"] {
            let report = analyze(&carts(&xml(scheduler)), &Options::default()).unwrap();
            let d = &report.domains[0];
            assert!(d.schedulable, "{scheduler}: {:?}", d.reason);
            assert_eq!(d.guest, "dm");
            let priorities: Vec<Option<u32>> = d.tasks.iter().map(|t| t.priority).collect();
            assert_eq!(
                priorities,
                vec![Some(1), Some(2)],
                "a (d 5) before b (d 10)"
            );
            let noted = report
                .notes
                .iter()
                .any(|n| n.contains("ordered by deadline"));
            assert_eq!(noted, scheduler == "RM", "{:?}", report.notes);
        }
        // `--guest rm` analyses it rate-monotonic, and then a fails.
        let as_rm = Options {
            guest: Some(AnalysisGuest::Rm),
            ..Options::default()
        };
        let report = analyze(&carts(&xml("DM")), &as_rm).unwrap();
        assert!(!report.schedulable);
        assert_eq!(report.domains[0].failed_task.as_deref(), Some("a"));
    }

    /// A CARTS error is said once: the message holds it, and it is not also the source.
    #[test]
    fn carts_errors_are_not_repeated_as_their_source() {
        let error = AnalyzeError::Carts {
            file: "x.xml".to_string(),
            error: parse_carts("<nope/>").unwrap_err(),
        };
        assert!(std::error::Error::source(&error).is_none());
        assert_eq!(
            error.to_string().matches("root element").count(),
            1,
            "{error}"
        );
    }
}
