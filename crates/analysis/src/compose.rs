//! Composition on one pcpu: each domain's interface `(Π_k, Θ_k)` becomes a periodic task
//! of the root, scheduled RM on the whole processor (`sbf(t) = t`).
//!
//! Source: Shin & Lee, TECS 2008, compositional analysis (a component's interface is
//! transformed into a periodic task of its parent); spec, "Composition". The root test is
//! the exact RTA of Audsley et al. 1993 (equivalently Lemma 1 with `sbf(t) = t`).
//!
//! The pieces are public for [`crate::system`], which composes the same interfaces under
//! other roots: [`domain_interface`] (one domain's interface as [`InterfaceChoice`] says),
//! [`rate_monotonic_ranks`] (servers ranked by interface period) and
//! [`rate_monotonic_root`] (the interfaces as RM periodic tasks).

use serde::Serialize;

use crate::error::InterfaceError;
use crate::interface::{GuestScheduler, InterfaceAnalyzer, PeriodRange, Verdict};
use crate::prm::{Interface, SbfMode};
use crate::ratio::ExactSum;
use crate::rta::{fp_response_time, FpTask};
use crate::workload::{Task, Workload, MAX_TIME};

/// How a domain's interface is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum InterfaceChoice {
    /// Bandwidth-optimal (Algorithm 1) within a period range.
    Optimal(PeriodRange),
    /// A fixed period, budget `MinExec(Π)` (spec, "Fixed-period interfaces").
    FixedPeriod(u64),
    /// A given interface, only checked.
    Given(Interface),
}

impl Default for InterfaceChoice {
    fn default() -> Self {
        InterfaceChoice::Optimal(PeriodRange::default())
    }
}

/// One domain (a VM, a component): its workload and scheduler.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainSpec {
    /// Name for reports.
    pub name: String,
    /// Its tasks.
    pub workload: Workload,
    /// Its guest scheduler.
    pub guest: GuestScheduler,
    /// How its interface is chosen.
    pub interface: InterfaceChoice,
}

/// Why a domain is not schedulable.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DomainFailure {
    /// The workload fails even on a dedicated processor; `task_index` is the caller's
    /// (declaration) index of the failing task.
    Unschedulable {
        /// Declaration index.
        task_index: usize,
        /// The task.
        task: Task,
    },
    /// A given interface is too small: this task fails Lemma 1 / the dbf test on it.
    InterfaceTooSmall {
        /// Declaration index.
        task_index: usize,
        /// The task.
        task: Task,
    },
    /// The exact test of a given interface needed more than [`crate::MAX_TEST_STEPS`] for
    /// this task (analyse in a coarser time unit).
    Undecided {
        /// Declaration index.
        task_index: usize,
        /// The task.
        task: Task,
    },
    /// Any other interface error (invalid given interface, period range, analysis limit).
    Invalid {
        /// What went wrong.
        error: InterfaceError,
    },
}

/// Per-domain result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DomainAnalysis {
    /// Domain name.
    pub name: String,
    /// Guest scheduler.
    pub guest: GuestScheduler,
    /// `Π` in the caller's unit, if an interface exists.
    pub period: Option<u64>,
    /// `Θ` in the caller's unit, if an interface exists.
    pub budget: Option<u64>,
    /// `Θ/Π` (display).
    pub bandwidth: f64,
    /// `Θ/Π` exactly, `"num/den"`.
    pub bandwidth_exact: Option<String>,
    /// `bw(W)` (display).
    pub utilization: f64,
    /// `bw(W)` exactly, `"num/den"`.
    pub utilization_exact: String,
    /// `bw(Γ) − bw(W)` (display); 0 without an interface.
    pub overhead: f64,
    /// The workload is schedulable on the interface.
    pub schedulable: bool,
    /// Why not, when not.
    pub failure: Option<DomainFailure>,
    /// True unless the interface search could not prove optimality (EDF corner cases).
    pub proven_optimal: bool,
    /// Root RM rank of the interface task (0 = highest), when it has one.
    pub root_priority: Option<usize>,
    /// Worst-case response time of the interface task at the root (`≤ Π` iff the root can
    /// deliver `Θ` every period).
    pub root_response_time: Option<u64>,
}

/// Result of [`analyze_system`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SystemAnalysis {
    /// sbf mode used.
    pub sbf_mode: SbfMode,
    /// `U_RM = Σ Θ_k/Π_k` over domains with an interface (display).
    pub u_rm: f64,
    /// `U_RM` exactly.
    pub u_rm_exact: String,
    /// `U_W = Σ bw(W_k)` over all domains (display).
    pub u_w: f64,
    /// `U_W` exactly.
    pub u_w_exact: String,
    /// `U_RM − U_W` (display; computed exactly, then rounded).
    pub u_rm_minus_u_w: f64,
    /// The root is RM-schedulable on its interfaces (exact RTA, `sbf(t) = t`).
    pub root_schedulable: bool,
    /// Every domain schedulable on its interface and the root schedulable.
    pub schedulable: bool,
    /// Per domain, in the order given.
    pub domains: Vec<DomainAnalysis>,
}

/// Analyses a one-pcpu system (spec, "Composition"): per domain the interface (chosen as
/// `spec.interface` says, with the sbf of `mode`), its bandwidth, utilisation and overhead
/// `bw(Γ) − bw(W)`; at the root `U_RM`, `U_W`, their difference and the verdict. The root
/// schedules the interface tasks `(Π_k, Θ_k)` RM (ties by domain order).
///
/// ```
/// use rtvmm_analysis::{analyze_system, DomainSpec, GuestScheduler, InterfaceChoice, SbfMode, Workload};
/// let domains = vec![
///     DomainSpec { name: "a".into(), workload: Workload::from_pairs(&[(25, 3), (50, 5), (100, 4)]).unwrap(),
///                  guest: GuestScheduler::Rm, interface: InterfaceChoice::default() },
///     DomainSpec { name: "b".into(), workload: Workload::from_pairs(&[(7, 2), (8, 1), (10, 1)]).unwrap(),
///                  guest: GuestScheduler::Rm, interface: InterfaceChoice::default() },
/// ];
/// let report = analyze_system(&domains, SbfMode::General);
/// assert!(report.schedulable);
/// assert_eq!((report.domains[0].period, report.domains[0].budget), (Some(7), Some(2)));
/// ```
pub fn analyze_system(domains: &[DomainSpec], mode: SbfMode) -> SystemAnalysis {
    let mut results: Vec<DomainAnalysis> =
        domains.iter().map(|d| analyse_domain(d, mode)).collect();

    // Root: interface tasks, RM by period, ties by domain order.
    let interfaces: Vec<Option<Interface>> = results
        .iter()
        .map(|r| Some(Interface::new(r.period?, r.budget?)))
        .collect();
    let mut root_schedulable = true;
    for (result, root) in results.iter_mut().zip(rate_monotonic_root(&interfaces)) {
        if let Some(root) = root {
            result.root_priority = Some(root.rank);
            result.root_response_time = root.response_time;
            root_schedulable &= root.response_time.is_some();
        }
    }

    let mut u_rm = ExactSum::zero();
    for result in &results {
        if let (Some(period), Some(budget)) = (result.period, result.budget) {
            u_rm.add(Interface::new(period, budget).bandwidth());
        }
    }
    let mut u_w = ExactSum::zero();
    for domain in domains {
        for task in domain.workload.tasks() {
            u_w.add(task.utilization());
        }
    }
    let schedulable = root_schedulable && results.iter().all(|d| d.schedulable);
    SystemAnalysis {
        sbf_mode: mode,
        u_rm: u_rm.to_f64(),
        u_rm_exact: u_rm.to_fraction_string(),
        u_w: u_w.to_f64(),
        u_w_exact: u_w.to_fraction_string(),
        u_rm_minus_u_w: u_rm.minus_f64(&u_w),
        root_schedulable,
        schedulable,
        domains: results,
    }
}

/// Rate-monotonic ranks by interface period: for each entry with a period, its rank among
/// them (0 = the shortest period), ties by position; `None` where there is no period. The
/// one place servers are ranked by interface period (the root of [`analyze_system`], the
/// server priorities of [`crate::system`], the experiments' servers).
///
/// ```
/// use rtvmm_analysis::rate_monotonic_ranks;
/// assert_eq!(rate_monotonic_ranks(&[Some(30), None, Some(10), Some(30)]),
///            vec![Some(1), None, Some(0), Some(2)]);
/// ```
pub fn rate_monotonic_ranks<K: Ord>(periods: &[Option<K>]) -> Vec<Option<usize>> {
    let mut order: Vec<usize> = (0..periods.len())
        .filter(|&k| periods[k].is_some())
        .collect();
    order.sort_by_key(|&k| &periods[k]); // stable: ties keep their positions
    let mut ranks = vec![None; periods.len()];
    for (rank, &k) in order.iter().enumerate() {
        ranks[k] = Some(rank);
    }
    ranks
}

/// One interface as a task of a rate-monotonic root.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RootTask {
    /// Its RM rank ([`rate_monotonic_ranks`]; 0 = highest priority).
    pub rank: usize,
    /// Its worst-case response time at the root, if within its period `Π` (the root then
    /// delivers `Θ` in every period).
    pub response_time: Option<u64>,
}

/// The root of spec "Composition": each interface `(Π, Θ)` a periodic task, scheduled RM
/// (ties by position) on a dedicated pcpu, by the exact response-time analysis (Audsley et
/// al. 1993). One entry per interface given, `None` where there is none.
///
/// ```
/// use rtvmm_analysis::{rate_monotonic_root, Interface};
/// // (10, 3) below (5, 2): R = 3 + 2⌈R/5⌉: 3 → 5 → 5 ≤ 10.
/// let root = rate_monotonic_root(&[Some(Interface::new(10, 3)), None, Some(Interface::new(5, 2))]);
/// assert_eq!(root[0].map(|t| (t.rank, t.response_time)), Some((1, Some(5))));
/// assert_eq!(root[1], None);
/// ```
pub fn rate_monotonic_root(interfaces: &[Option<Interface>]) -> Vec<Option<RootTask>> {
    let ranks = rate_monotonic_ranks(
        &interfaces
            .iter()
            .map(|i| i.map(|i| i.period))
            .collect::<Vec<_>>(),
    );
    let mut tasks: Vec<Option<FpTask>> = vec![None; ranks.iter().flatten().count()];
    for (interface, rank) in interfaces.iter().zip(&ranks) {
        if let (Some(interface), Some(rank)) = (interface, rank) {
            tasks[*rank] = Some(FpTask::new(
                interface.period,
                interface.budget.max(1),
                *rank as u32,
            ));
        }
    }
    let tasks: Vec<FpTask> = tasks.into_iter().flatten().collect();
    ranks
        .iter()
        .map(|rank| {
            rank.map(|rank| RootTask {
                rank,
                response_time: fp_response_time(&tasks, rank, tasks[rank].period),
            })
        })
        .collect()
}

/// One domain's interface, as [`analyze_system`] chooses it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct InterfaceOutcome {
    /// The interface found, or the one given — kept when it is too small for the workload
    /// (it still competes at the root).
    pub interface: Option<Interface>,
    /// False only when the search could not prove optimality (EDF corner cases, a test cut
    /// short by its step limit).
    pub proven_optimal: bool,
    /// Why the workload is not schedulable on it, or why there is none.
    pub failure: Option<DomainFailure>,
}

/// One domain's interface as `choice` says, with the sbf of `mode`, for the workload and
/// guest scheduler of `analyzer` (build it once and use it for per-task tests too; see
/// [`InterfaceAnalyzer::lemma1_holds`]). This is the per-domain half of [`analyze_system`].
pub fn domain_interface(
    analyzer: &InterfaceAnalyzer<'_>,
    choice: InterfaceChoice,
    mode: SbfMode,
) -> InterfaceOutcome {
    let mut proven_optimal = true;
    let outcome: Result<Interface, DomainFailure> = match choice {
        InterfaceChoice::Optimal(range) => analyzer
            .optimal(mode, range)
            .map(|found| {
                proven_optimal = found.proven_optimal;
                found.interface
            })
            .map_err(failure_from),
        InterfaceChoice::FixedPeriod(period) => analyzer
            .min_exec(period, mode)
            .map(|budget| Interface::new(period, budget))
            .map_err(failure_from),
        InterfaceChoice::Given(interface) => check_given(analyzer, interface, mode),
    };
    let (interface, failure) = match outcome {
        Ok(interface) => (Some(interface), None),
        Err(DomainFailure::InterfaceTooSmall { task_index, task }) => match choice {
            InterfaceChoice::Given(given) => (
                Some(given),
                Some(DomainFailure::InterfaceTooSmall { task_index, task }),
            ),
            _ => (
                None,
                Some(DomainFailure::InterfaceTooSmall { task_index, task }),
            ),
        },
        Err(other) => (None, Some(other)),
    };
    InterfaceOutcome {
        interface,
        proven_optimal,
        failure,
    }
}

fn analyse_domain(spec: &DomainSpec, mode: SbfMode) -> DomainAnalysis {
    let analyzer = InterfaceAnalyzer::new(&spec.workload, spec.guest);
    let utilization = spec.workload.utilization();
    let InterfaceOutcome {
        interface,
        proven_optimal,
        failure,
    } = domain_interface(&analyzer, spec.interface, mode);
    let (bandwidth, bandwidth_exact, overhead) = match interface {
        Some(found) => {
            let bandwidth = found.bandwidth();
            let overhead = ExactSum::of([bandwidth]).minus_f64(&utilization);
            (bandwidth.to_f64(), Some(bandwidth.to_string()), overhead)
        }
        None => (0.0, None, 0.0),
    };
    DomainAnalysis {
        name: spec.name.clone(),
        guest: spec.guest,
        period: interface.map(|i| i.period),
        budget: interface.map(|i| i.budget),
        bandwidth,
        bandwidth_exact,
        utilization: utilization.to_f64(),
        utilization_exact: utilization.to_fraction_string(),
        overhead,
        schedulable: failure.is_none(),
        failure,
        proven_optimal,
        root_priority: None,
        root_response_time: None,
    }
}

fn check_given(
    analyzer: &InterfaceAnalyzer<'_>,
    interface: Interface,
    mode: SbfMode,
) -> Result<Interface, DomainFailure> {
    if interface.period == 0
        || interface.period > MAX_TIME
        || interface.budget == 0
        || interface.budget > interface.period
    {
        return Err(failure_from(InterfaceError::InvalidInterface {
            period: interface.period,
            budget: interface.budget,
        }));
    }
    let form = analyzer.form(mode, interface.period);
    let workload = analyzer.workload();
    match analyzer.verdict(interface, form) {
        Verdict::Schedulable => Ok(interface),
        Verdict::Fails { task } => Err(DomainFailure::InterfaceTooSmall {
            task_index: workload.declaration_index(task),
            task: workload.tasks()[task],
        }),
        Verdict::Undecided { task } => Err(DomainFailure::Undecided {
            task_index: workload.declaration_index(task),
            task: workload.tasks()[task],
        }),
    }
}

fn failure_from(error: InterfaceError) -> DomainFailure {
    match error {
        InterfaceError::Unschedulable { task_index, task } => {
            DomainFailure::Unschedulable { task_index, task }
        }
        error => DomainFailure::Invalid { error },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn domain(name: &str, pairs: &[(u64, u64)], interface: InterfaceChoice) -> DomainSpec {
        DomainSpec {
            name: name.into(),
            workload: Workload::from_pairs(pairs).unwrap(),
            guest: GuestScheduler::Rm,
            interface,
        }
    }

    /// Two domains with given interfaces (5, 2) and (10, 3): U_RM = 2/5 + 3/10 = 7/10.
    /// Root RTA: R_1 = 2; R_2 = 3 + ⌈R/5⌉2: 3 → 5 → 5 ≤ 10. Schedulable.
    #[test]
    fn root_by_hand() {
        let domains = vec![
            domain(
                "a",
                &[(10, 1)],
                InterfaceChoice::Given(Interface::new(5, 2)),
            ),
            domain(
                "b",
                &[(20, 1)],
                InterfaceChoice::Given(Interface::new(10, 3)),
            ),
        ];
        let report = analyze_system(&domains, SbfMode::General);
        assert_eq!(report.u_rm_exact, "7/10");
        // U_W = 1/10 + 1/20 = 3/20
        assert_eq!(report.u_w_exact, "3/20");
        assert!((report.u_rm_minus_u_w - 0.55).abs() < 1e-12);
        assert_eq!(report.domains[1].root_response_time, Some(5));
        assert!(report.root_schedulable && report.schedulable);
        assert!((report.domains[0].overhead - 0.3).abs() < 1e-12);
    }

    #[test]
    fn overloaded_root_is_reported() {
        let domains = vec![
            domain(
                "a",
                &[(10, 1)],
                InterfaceChoice::Given(Interface::new(4, 3)),
            ),
            domain(
                "b",
                &[(20, 1)],
                InterfaceChoice::Given(Interface::new(8, 3)),
            ),
        ];
        let report = analyze_system(&domains, SbfMode::General);
        // R_b = 3 + ⌈R/4⌉3: 3 → 6 → 9 > 8.
        assert_eq!(report.domains[1].root_response_time, None);
        assert!(!report.root_schedulable);
        assert!(!report.schedulable);
        assert!(report.domains.iter().all(|d| d.schedulable));
    }

    #[test]
    fn failing_domain_names_its_task() {
        // Declared order: (10,1), (4,3), (5,2): U = 0.1 + 0.75 + 0.4 > 1.
        let domains = vec![domain(
            "x",
            &[(10, 1), (4, 3), (5, 2)],
            InterfaceChoice::default(),
        )];
        let report = analyze_system(&domains, SbfMode::Auto);
        assert!(!report.schedulable);
        match &report.domains[0].failure {
            // RM order: (4,3), (5,2), (10,1): rbf of (5,2) at 4 is 3 + 2 = 5 > 4 and at 5 it
            // is 6 + 2 = 8 > 5, so the task declared second-to-last, index 2, fails first.
            Some(DomainFailure::Unschedulable { task_index, task }) => {
                assert_eq!(*task_index, 2);
                assert_eq!(*task, Task::new(5, 2));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn given_interface_too_small_names_the_task() {
        let domains = vec![domain(
            "y",
            &[(10, 2), (20, 5)],
            InterfaceChoice::Given(Interface::new(10, 3)),
        )];
        let report = analyze_system(&domains, SbfMode::General);
        assert_eq!(report.domains[0].period, Some(10));
        assert!(matches!(
            report.domains[0].failure,
            Some(DomainFailure::InterfaceTooSmall { task_index: 0, .. })
        ));
    }
}
