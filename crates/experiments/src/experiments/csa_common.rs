//! What the 2012 (CSA) experiments share: turning a generated system into servers whose
//! interfaces come from the compositional analysis, the three policies they compare, and
//! the responsiveness samples, quantiles and CDF figures they report.
//!
//! # From a generated system to servers ([`csa_system`])
//! - Interfaces come from [`crate::interfaces`] with the 1 ms quantum
//!   ([`ANALYSIS_UNIT`]): a VMM with a 1 ms quantum cannot deliver a fraction of one, so
//!   budgets and periods are whole milliseconds (`docs/analysis.md`). A domain's interface is
//!   its bandwidth-optimal integer interface (Algorithm 1, any period; task times must be
//!   whole ms, as the csa generator makes them) or, for a domain with a platform-fixed
//!   period (ARINC-653 partitions, whose WCETs are in µs), `(Π, MinExec(Π))` computed
//!   exactly and its budget rounded **up** to a whole ms — sound, since supply grows with
//!   the budget; the rounding shows as extra interface overhead. The sbf is `auto`: the
//!   harmonic form exactly where it is sound, which needs tasks released at the
//!   interface's period boundaries — true here, because servers start at time 0 and tasks
//!   are released at 0 (or, in csa-arinc, at offsets that are multiples of the partition
//!   period).
//! - The whole system is then analysed with those interfaces as given
//!   ([`rtvmm_analysis::analyze_system`], exact, in the finest unit that divides every
//!   task and interface time): each domain schedulable on its interface or not, U_RM,
//!   U_W (of the true WCETs), the root's rate-monotonic verdict and each interface's
//!   response time at the root.
//! - Each domain runs its interface `(Π, Θ)` as a server; priorities are rate-monotonic
//!   by interface period, ties by domain order ([`crate::interfaces::rm_priorities`], the
//!   root's order in the analysis too).
//!
//! # Responsiveness
//! Responsiveness is response time ÷ relative deadline, per job
//! ([`crate::system::responsiveness_samples`]): finished jobs exactly; a job still
//! unfinished at the end whose deadline has passed (a miss) at the lower bound
//! `(end − release) ÷ deadline` (≥ 1) — its true value is at least that; jobs in flight
//! (deadline after the end) are left out. CDF figures clip at [`RESPONSIVENESS_CLIP`] = 3
//! (values above are drawn at 3); the CSV quantiles are not clipped.

use crate::figures::decimal;
use rtvmm_analysis::{
    analyze_system, DomainSpec as AnalysisDomain, GuestScheduler as AnalysisGuest, Interface,
    InterfaceChoice, SbfMode, SystemAnalysis,
};
use rtvmm_core::guest::TaskSpec;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_gen::GenSystem;
use rtvmm_sim::Simulation;
use rtvmm_system::results::{DomainResult, RunResults};

use crate::error::ExperimentError;
use crate::interfaces::{fixed_period_interfaces, interface_servers, optimal_interfaces, workload};
use crate::plot::{cdf_points, quantile_sorted, LegendAt, LineChart, Series};
use crate::system::{responsiveness_samples, ServerDomain};

/// The policies of the 2012 experiments: PTPS (the Periodic Server), WCPS and CRPS.
pub const CSA_POLICIES: [PolicyKind; 3] =
    [PolicyKind::Periodic, PolicyKind::Wcps, PolicyKind::Crps];
/// The analysis unit and the machine's quantum.
pub const ANALYSIS_UNIT: Nanos = Nanos::from_ms(1);
/// CDF figures show responsiveness up to this value.
pub const RESPONSIVENESS_CLIP: f64 = 3.0;
/// Points kept per CDF curve in a figure.
const CDF_POINTS: usize = 600;

/// The name the 2012 paper gives a policy (PTPS for the Periodic Server).
pub fn paper_name(policy: PolicyKind) -> &'static str {
    match policy {
        PolicyKind::Periodic => "ptps",
        other => other.name(),
    }
}

/// How interface periods are chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InterfacePeriods {
    /// Bandwidth-optimal over all periods (Algorithm 1).
    Optimal,
    /// Each domain's `fixed_period` (an error if a domain has none).
    Fixed,
}

/// A generated system with its interfaces: the analysis and the servers to run.
#[derive(Clone, Debug)]
pub struct CsaSystem {
    /// The analysis of the interfaces as given, in units of [`CsaSystem::unit`]:
    /// per-domain verdicts, U_RM, U_W, the root's verdict.
    pub analysis: SystemAnalysis,
    /// The analysis' time unit (the gcd of every task and interface time).
    pub unit: Nanos,
    /// The servers, in the generated system's domain order.
    pub domains: Vec<ServerDomain>,
    /// U_W of the true WCETs (what the simulation runs).
    pub task_utilisation: f64,
}

impl CsaSystem {
    /// Domain indices from the highest priority to the lowest.
    pub fn priority_order(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.domains.len()).collect();
        order.sort_by_key(|&d| (self.domains[d].priority, d));
        order
    }

    /// The index of the lowest-priority domain.
    pub fn lowest_priority_domain(&self) -> usize {
        *self.priority_order().last().expect("at least one domain")
    }

    /// Whether the analysis guarantees domain `d` under PTPS: its workload is schedulable
    /// on its interface and the root delivers the interface (its interface task meets its
    /// deadline in the root's rate-monotonic response-time analysis) — whatever the
    /// lower-priority domains do.
    pub fn domain_guaranteed(&self, d: usize) -> bool {
        let a = &self.analysis.domains[d];
        a.schedulable && a.root_response_time.is_some_and(|r| Some(r) <= a.period)
    }

    /// Domain `d`'s worst-case response time at the root, if it meets its period there.
    pub fn root_response(&self, d: usize) -> Option<Nanos> {
        self.analysis.domains[d]
            .root_response_time
            .map(|r| Nanos(r * self.unit.as_ns()))
    }
}

/// The interfaces and servers of `system`, budgets in whole [`ANALYSIS_UNIT`]s; see the
/// module note.
pub fn csa_system(
    system: &GenSystem,
    periods: InterfacePeriods,
) -> Result<CsaSystem, ExperimentError> {
    csa_system_in(system, periods, ANALYSIS_UNIT)
}

/// Like [`csa_system`] with budgets (and, for optimal interfaces, every time) in whole
/// `quantum`s — for reporting what a finer-grained VMM would need.
pub fn csa_system_in(
    system: &GenSystem,
    periods: InterfacePeriods,
    quantum: Nanos,
) -> Result<CsaSystem, ExperimentError> {
    let interfaces = match periods {
        InterfacePeriods::Optimal => optimal_interfaces(system, quantum, SbfMode::Auto)?,
        InterfacePeriods::Fixed => fixed_period_interfaces(system, quantum, SbfMode::Auto)?,
    };
    let unit = system
        .domains
        .iter()
        .flat_map(|d| d.tasks.iter().flat_map(|t| [t.period, t.wcet, t.deadline]))
        .chain(interfaces.iter().flat_map(|i| [i.period, i.budget]))
        .fold(Nanos::ZERO, |g, t| g.gcd(t))
        .as_ns()
        .max(1);
    let mut specs = Vec::with_capacity(system.domains.len());
    for (domain, interface) in system.domains.iter().zip(&interfaces) {
        specs.push(AnalysisDomain {
            name: domain.name.clone(),
            workload: workload(domain, Nanos(unit))?,
            guest: AnalysisGuest::Rm,
            interface: InterfaceChoice::Given(Interface::new(
                interface.period.as_ns() / unit,
                interface.budget.as_ns() / unit,
            )),
        });
    }
    let analysis = analyze_system(&specs, SbfMode::Auto);
    let domains = interface_servers(system, &interfaces);
    Ok(CsaSystem {
        analysis,
        unit: Nanos(unit),
        domains,
        task_utilisation: system.total_utilisation(),
    })
}

/// A time in ms with up to three decimals ("25", "0.3").
pub fn ms_text(t: Nanos) -> String {
    let text = decimal(t.as_ns() as f64 / 1e6, 3);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Sets every task's least execution time to `⌈etf · wcet⌉` (etf in permille, exact in
/// integers), so jobs draw their execution uniformly in `[⌈etf · wcet⌉, wcet]`.
pub fn apply_etf(tasks: &mut [TaskSpec], etf_permille: u32) {
    for task in tasks {
        let min = (task.wcet.as_ns() as u128 * u128::from(etf_permille)).div_ceil(1000);
        task.min_exec = Nanos((min as u64).clamp(1, task.wcet.as_ns()));
    }
}

/// `permille` as a decimal fraction ("0.7", "1", "0.05").
pub fn fraction(permille: u32) -> String {
    let text = decimal(f64::from(permille) / 1000.0, 3);
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

/// A period range as "[550, 650] ms".
pub fn range_label((min, max): (u64, u64)) -> String {
    format!("[{min}, {max}] ms")
}

/// A period range as a file-name stem part, "550-650".
pub fn range_stem((min, max): (u64, u64)) -> String {
    format!("{min}-{max}")
}

/// Responsiveness samples of every domain of a finished simulation, at its end.
pub fn domain_responsiveness(sim: &Simulation, end: Nanos) -> Vec<Vec<f64>> {
    (0..sim.domains().len())
        .map(|d| responsiveness_samples(sim, d, end))
        .collect()
}

/// The quantile levels written to the quantile CSVs: 0, 0.01, …, 1.
pub fn quantile_levels() -> Vec<f64> {
    (0..=100).map(|k| f64::from(k) / 100.0).collect()
}

/// The samples sorted (NaN-free input).
pub fn sorted(samples: &[f64]) -> Vec<f64> {
    let mut s = samples.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    s
}

/// Rows `prefix ++ [samples, quantile, value]` for every level of [`quantile_levels`];
/// none for an empty sample.
pub fn quantile_rows(prefix: &[String], samples: &[f64]) -> Vec<Vec<String>> {
    if samples.is_empty() {
        return Vec::new();
    }
    let s = sorted(samples);
    quantile_levels()
        .into_iter()
        .map(|q| {
            let mut row = prefix.to_vec();
            row.push(s.len().to_string());
            row.push(decimal(q, 2));
            row.push(decimal(quantile_sorted(&s, q), 6));
            row
        })
        .collect()
}

/// The fraction of `samples` above 1 (late jobs, including missed unfinished ones).
pub fn late_fraction(samples: &[f64]) -> f64 {
    if samples.is_empty() {
        0.0
    } else {
        samples.iter().filter(|&&r| r > 1.0).count() as f64 / samples.len() as f64
    }
}

/// One CDF curve of responsiveness, clipped at [`RESPONSIVENESS_CLIP`].
pub fn cdf_series(name: impl Into<String>, samples: &[f64]) -> Series {
    Series {
        name: name.into(),
        points: cdf_points(samples, RESPONSIVENESS_CLIP, CDF_POINTS),
    }
}

/// A responsiveness CDF chart: x from 0 to the clip, y from 0 to 1, no markers.
pub fn cdf_chart(title: &str, series: Vec<Series>) -> LineChart {
    let mut chart = LineChart::new(
        title,
        "responsiveness = response time ÷ deadline (clipped at 3)",
        "fraction of jobs (CDF)",
        series,
    );
    chart.markers = false;
    chart.x_range = Some((0.0, RESPONSIVENESS_CLIP));
    chart.y_range = Some((0.0, 1.02));
    chart.legend = LegendAt::LowerRight;
    chart
}

/// The miss columns every csa runs CSV shares: the run's jobs, missed, in flight and
/// miss ratio; the lowest-priority domain's name, jobs, finished, missed and miss ratio;
/// then each domain's miss ratio in declaration order.
pub fn miss_cells(res: &RunResults, low: &DomainResult) -> Vec<String> {
    let mut cells = vec![
        res.jobs.to_string(),
        res.missed.to_string(),
        res.in_flight.to_string(),
        decimal(res.deadline_miss_ratio, 6),
        low.name.clone(),
        low.jobs.to_string(),
        low.finished.to_string(),
        low.missed.to_string(),
        decimal(low.deadline_miss_ratio, 6),
    ];
    cells.extend(
        res.domains
            .iter()
            .map(|d| decimal(d.deadline_miss_ratio, 6)),
    );
    cells
}

/// A percentage with two decimals, "1.25%".
pub fn percent(ratio: f64) -> String {
    format!("{}%", crate::figures::percent(ratio, 2))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvmm_gen::{GenDomain, GenTask};

    /// A domain's tasks as (period µs, wcet µs), and its fixed period in µs.
    type DomainUs = (Vec<(u64, u64)>, Option<u64>);

    fn gen(domains: Vec<DomainUs>) -> GenSystem {
        GenSystem {
            domains: domains
                .into_iter()
                .enumerate()
                .map(|(k, (tasks, fixed))| GenDomain {
                    name: format!("d{}", k + 1),
                    tasks: tasks
                        .into_iter()
                        .enumerate()
                        .map(|(i, (p, e))| {
                            GenTask::new(format!("t{i}"), Nanos::from_us(p), Nanos::from_us(e))
                        })
                        .collect(),
                    fixed_period: fixed.map(Nanos::from_us),
                })
                .collect(),
            description: String::new(),
        }
    }

    #[test]
    fn optimal_interfaces_become_rm_ordered_servers() {
        // docs/analysis.md's example {(25,3),(50,5),(100,4)} ms gets (25, 7) with the harmonic
        // sbf (auto, sound here); a lone (10, 1) ms task gets (10, 1). RM: (10, 1) first.
        let system = gen(vec![
            (
                vec![(25_000, 3_000), (50_000, 5_000), (100_000, 4_000)],
                None,
            ),
            (vec![(10_000, 1_000)], None),
        ]);
        let csa = csa_system(&system, InterfacePeriods::Optimal).unwrap();
        let d = &csa.domains;
        assert_eq!(
            (d[0].period, d[0].budget),
            (Nanos::from_ms(25), Nanos::from_ms(7))
        );
        assert_eq!(
            (d[1].period, d[1].budget),
            (Nanos::from_ms(10), Nanos::from_ms(1))
        );
        assert_eq!((d[0].priority, d[1].priority), (2, 1));
        assert_eq!(csa.priority_order(), vec![1, 0]);
        assert_eq!(csa.lowest_priority_domain(), 0);
        assert_eq!(csa.unit, Nanos::from_ms(1));
        // U_RM = 7/25 + 1/10 = 0.38; the root (10, 1), (25, 7): responses 1 and 8 ms.
        assert!((csa.analysis.u_rm - 0.38).abs() < 1e-12);
        assert!(csa.analysis.schedulable);
        assert_eq!(csa.root_response(0), Some(Nanos::from_ms(8)));
        assert!(csa.domain_guaranteed(0) && csa.domain_guaranteed(1));
    }

    #[test]
    fn fixed_periods_round_budgets_up_to_the_quantum() {
        // 0.3 ms every 25 ms needs a whole 1 ms budget in a 25 ms partition, checked in µs.
        let system = gen(vec![(vec![(25_000, 300)], Some(25_000))]);
        let csa = csa_system(&system, InterfacePeriods::Fixed).unwrap();
        assert_eq!(csa.domains[0].budget, Nanos::from_ms(1));
        assert_eq!(csa.domains[0].period, Nanos::from_ms(25));
        assert_eq!(csa.unit, Nanos::from_us(100));
        assert!(csa.domain_guaranteed(0));
        // With a 100 µs quantum the budget is 0.3 ms.
        let fine = csa_system_in(&system, InterfacePeriods::Fixed, Nanos::from_us(100)).unwrap();
        assert_eq!(fine.domains[0].budget, Nanos::from_us(300));
        // Without a fixed period the fixed choice is refused.
        let free = gen(vec![(vec![(25_000, 300)], None)]);
        assert!(csa_system(&free, InterfacePeriods::Fixed).is_err());
        assert_eq!(ms_text(Nanos::from_us(300)), "0.3");
        assert_eq!(ms_text(Nanos::from_ms(25)), "25");
    }

    #[test]
    fn etf_sets_the_least_execution_exactly() {
        let mut tasks = vec![TaskSpec::periodic(
            "t",
            Nanos::from_ms(10),
            Nanos::from_ms(7),
        )];
        apply_etf(&mut tasks, 100);
        assert_eq!(tasks[0].min_exec, Nanos::from_us(700));
        apply_etf(&mut tasks, 1000);
        assert_eq!(tasks[0].min_exec, Nanos::from_ms(7));
        let mut odd = vec![TaskSpec::periodic("t", Nanos::from_ms(10), Nanos(3))];
        apply_etf(&mut odd, 500);
        assert_eq!(odd[0].min_exec, Nanos(2)); // ⌈1.5⌉
    }

    #[test]
    fn quantile_rows_and_labels() {
        let rows = quantile_rows(&["x".to_string()], &[3.0, 1.0, 2.0]);
        assert_eq!(rows.len(), 101);
        assert_eq!(rows[0], ["x", "3", "0.00", "1.000000"]);
        assert_eq!(rows[50][3], "2.000000");
        assert_eq!(rows[100][3], "3.000000");
        assert!(quantile_rows(&[], &[]).is_empty());
        assert_eq!(fraction(700), "0.7");
        assert_eq!(fraction(1000), "1");
        assert_eq!(fraction(50), "0.05");
        assert_eq!(late_fraction(&[0.5, 1.0, 1.5, 3.0]), 0.5);
        assert_eq!(paper_name(PolicyKind::Periodic), "ptps");
    }
}
