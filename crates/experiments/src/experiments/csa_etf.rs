//! csa-etf — how slack from over-estimated WCETs is used (`docs/experiments.md`; Lee et al.,
//! RTAS 2012).
//!
//! Procedure: for each U_W ∈ {0.7, 0.8, 0.9, 1.0}, one csa task set with periods uniform
//! in [550, 650] ms (the same generator and seed as csa-periods, so it is csa-periods'
//! set for that range) and each domain's optimal integer interface as its server
//! ([`super::csa_common`]). The three highest-priority domains (by interface priority)
//! run jobs whose execution time is drawn uniformly in `[⌈etf · WCET⌉, WCET]` for
//! etf ∈ {1.0, 0.5, 0.1}; the two lowest-priority domains keep etf = 1 (every job takes
//! its WCET). Interfaces stay those of the WCETs — the slack is what the policies may
//! reclaim. Each (U_W, etf) runs 5 simulated minutes under PTPS, WCPS and CRPS with the
//! same simulation seed, so every policy sees the same job execution times.
//!
//! Reported per (U_W, etf, policy): box plots of responsiveness for all tasks and for the
//! lowest-priority domain (median, quartiles, whiskers at the most extreme samples within
//! 1.5 × IQR of the quartiles, outliers beyond), and the deadline miss ratios. The box
//! numbers (`box_stats.csv`) are of the unclipped samples; the figures draw every value
//! above 3 at 3 (as the CDFs of csa-periods do) so that one starved job does not flatten
//! the boxes, and they draw outliers once per distinct value (to 0.001).
//!
//! `--quick`: U_W ∈ {0.8, 1.0}, 10 s per run.

use crate::figures::decimal;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_gen::csa::{csa_taskset, CsaParams, CSA_UTILISATIONS_PERMILLE};
use rtvmm_system::results::RunResults;

use super::csa_common::{
    apply_etf, csa_system, domain_responsiveness, fraction, miss_cells, ms_text, paper_name,
    percent, CsaSystem, InterfacePeriods, ANALYSIS_UNIT, CSA_POLICIES, RESPONSIVENESS_CLIP,
};
use super::Experiment;
use crate::error::ExperimentError;
use crate::plot::{BarChart, BoxChart, BoxStats, Chart, LegendAt};
use crate::report::Output;
use crate::system::{build_system, machine, simulate_with};

/// Task-set draws of a full run (`--seeds`; see `docs/experiments.md`).
pub const DRAWS: usize = 10;

pub const EXPERIMENT: Experiment = Experiment {
    name: "csa-etf",
    title: "how slack from over-estimated WCETs is used",
    description: "The csa generator with periods in [550, 650] ms, one task set per U_W ∈ \
        {0.7, 0.8, 0.9, 1.0}, each domain on its optimal integer interface; the three \
        highest-priority domains run jobs of uniform execution time in [etf × WCET, WCET] \
        for etf ∈ {1.0, 0.5, 0.1}, the two lowest keep etf = 1. Box plots (1.5 × IQR \
        whiskers) of responsiveness for all tasks and the lowest-priority domain, and \
        deadline miss ratios, per (U_W, etf, policy ∈ {PTPS, WCPS, CRPS}); 5 simulated \
        minutes per run.",
    run: Some(run),
    host: false,
    draws: Some(DRAWS),
};

/// The period range of csa-etf, in ms.
pub const ETF_PERIOD_RANGE_MS: (u64, u64) = (550, 650);
/// The execution-time factors, in permille.
pub const ETFS_PERMILLE: [u32; 3] = [1000, 500, 100];
/// How many of the highest-priority domains get the etf.
pub const ETF_DOMAINS: usize = 3;
/// U_W of `--quick`, in permille.
pub const QUICK_UTILISATIONS_PERMILLE: [u32; 2] = [800, 1000];

#[derive(Clone, Debug)]
struct Point {
    set: usize,
    etf: u32,
    policy: PolicyKind,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct RunOutcome {
    results: RunResults,
    samples: Vec<Vec<f64>>,
}

/// "1.0", "0.5", "0.1".
fn etf_label(etf: u32) -> String {
    decimal(f64::from(etf) / 1000.0, 1)
}

/// `stats` with every value above the clip drawn at the clip, outliers once per distinct
/// value (to 0.001).
fn for_display(stats: &BoxStats) -> BoxStats {
    let clip = |v: f64| v.min(RESPONSIVENESS_CLIP);
    let mut outliers: Vec<f64> = stats
        .outliers
        .iter()
        .map(|&v| (clip(v) * 1000.0).round() / 1000.0)
        .collect();
    outliers.dedup();
    BoxStats {
        count: stats.count,
        q1: clip(stats.q1),
        median: clip(stats.median),
        q3: clip(stats.q3),
        whisker_low: clip(stats.whisker_low),
        whisker_high: clip(stats.whisker_high),
        outliers,
    }
}

fn run(out: &mut Output) -> Result<(), ExperimentError> {
    let options = out.options;
    let duration = options.duration_or(Nanos::from_secs(300), Nanos::from_secs(10));
    let utilisations: Vec<u32> = if options.quick {
        QUICK_UTILISATIONS_PERMILLE.to_vec()
    } else {
        CSA_UTILISATIONS_PERMILLE.to_vec()
    };
    let policies = options.policies_or(&CSA_POLICIES);
    let overheads = options.overheads.unwrap_or_default();
    let seed = options.seed;
    out.param(
        "task utilisation U_W",
        utilisations
            .iter()
            .map(|&u| fraction(u))
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.param("periods (uniform, whole ms)", "[550, 650] ms");
    out.param(
        "etf (three highest-priority domains)",
        "1.0, 0.5, 0.1 — execution uniform in [⌈etf·WCET⌉, WCET]; the two lowest-priority \
         domains keep etf = 1",
    );
    out.param(
        "policies",
        policies
            .iter()
            .map(|&p| format!("{} ({})", paper_name(p), p.name()))
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.param("simulated time per run", duration);
    out.param("pcpus · quantum", "1 · 1ms");
    out.param(
        "interfaces",
        "optimal integer interface per domain for the WCETs (Algorithm 1, 1 ms units, sbf \
         auto); priorities rate-monotonic by interface period",
    );
    out.param(
        "seeds",
        format!(
            "task sets from (seed {seed}, U_W) — the csa-periods sets for [550, 650] ms; job \
             execution times from the simulation seed {seed}, the same for every policy"
        ),
    );
    out.param(
        "box plots",
        "median, quartiles (type 7), whiskers at the most extreme samples within 1.5 × IQR, \
         outliers beyond; figures draw values above 3 at 3",
    );

    let mut systems: Vec<CsaSystem> = Vec::with_capacity(utilisations.len());
    for &u_w in &utilisations {
        let generated = csa_taskset(&CsaParams::new(u_w, ETF_PERIOD_RANGE_MS), seed)?;
        systems.push(csa_system(&generated, InterfacePeriods::Optimal)?);
    }

    // The interfaces, and which domains get the etf.
    let mut rows = Vec::new();
    for (&u_w, system) in utilisations.iter().zip(&systems) {
        let top = &system.priority_order()[..ETF_DOMAINS.min(system.domains.len())];
        for (d, a) in system.analysis.domains.iter().enumerate() {
            rows.push(vec![
                u_w.to_string(),
                a.name.clone(),
                system.domains[d].tasks.len().to_string(),
                decimal(a.utilization, 6),
                ms_text(system.domains[d].period),
                ms_text(system.domains[d].budget),
                system.domains[d].priority.to_string(),
                top.contains(&d).to_string(),
            ]);
        }
    }
    out.csv(
        "interfaces.csv",
        "per task set and domain: interface (ms), priority (1 = highest), and whether the \
         domain's jobs draw their execution with the etf",
        &[
            "u_w_permille",
            "domain",
            "tasks",
            "utilisation",
            "interface_period_ms",
            "interface_budget_ms",
            "priority",
            "etf_applies",
        ],
        &rows,
    )?;

    let mut points = Vec::new();
    for set in 0..utilisations.len() {
        for &etf in &ETFS_PERMILLE {
            for &policy in &policies {
                points.push(Point { set, etf, policy });
            }
        }
    }
    let scenario = |p: &Point| format!("csa-etf-{}-{}-{}", utilisations[p.set], p.etf, p.policy);
    let outcome = out.sweep("csa-etf", &points, scenario, |p| {
        let system = &systems[p.set];
        let mut domains = system.domains.clone();
        for &d in system.priority_order().iter().take(ETF_DOMAINS) {
            apply_etf(&mut domains[d].tasks, p.etf);
        }
        let spec = build_system(&domains, p.policy, machine(ANALYSIS_UNIT, overheads))?;
        let (results, samples) = simulate_with(&spec, &scenario(p), seed, duration, |sim| {
            domain_responsiveness(sim, duration)
        })?;
        Ok(RunOutcome { results, samples })
    })?;
    let finished: Vec<(&Point, &RunOutcome)> = points
        .iter()
        .zip(&outcome.results)
        .filter_map(|(p, r)| r.as_ref().map(|r| (p, r)))
        .collect();

    // Raw runs.
    let mut header = vec![
        "u_w_permille",
        "etf_permille",
        "policy",
        "seed",
        "duration_ns",
        "u_rm",
        "jobs",
        "missed",
        "in_flight",
        "deadline_miss_ratio",
        "lowest_domain",
        "lowest_jobs",
        "lowest_finished",
        "lowest_missed",
        "lowest_deadline_miss_ratio",
    ];
    let domain_columns: Vec<String> = (1..=5).map(|d| format!("dmr_d{d}")).collect();
    header.extend(domain_columns.iter().map(String::as_str));
    let mut rows = Vec::new();
    for (p, r) in &finished {
        let system = &systems[p.set];
        let low = &r.results.domains[system.lowest_priority_domain()];
        let res = &r.results;
        let mut row = vec![
            utilisations[p.set].to_string(),
            p.etf.to_string(),
            paper_name(p.policy).to_string(),
            seed.to_string(),
            res.duration_ns.to_string(),
            decimal(system.analysis.u_rm, 6),
        ];
        row.extend(miss_cells(res, low));
        rows.push(row);
    }
    out.csv(
        "runs.csv",
        "one row per run: deadline miss ratio overall, of the lowest-priority domain and of \
         each domain",
        &header,
        &rows,
    )?;

    // Box statistics (unclipped) per run and scope.
    let scopes = ["all", "lowest"];
    let samples_of = |p: &Point, r: &RunOutcome, scope: &str| -> Vec<f64> {
        if scope == "all" {
            r.samples.concat()
        } else {
            r.samples[systems[p.set].lowest_priority_domain()].clone()
        }
    };
    let mut rows = Vec::new();
    for (p, r) in &finished {
        for scope in scopes {
            let Some(b) = BoxStats::of(&samples_of(p, r, scope)) else {
                continue;
            };
            let max = b
                .outliers
                .last()
                .copied()
                .unwrap_or(b.whisker_high)
                .max(b.whisker_high);
            rows.push(vec![
                utilisations[p.set].to_string(),
                p.etf.to_string(),
                paper_name(p.policy).to_string(),
                scope.to_string(),
                b.count.to_string(),
                decimal(b.whisker_low, 6),
                decimal(b.q1, 6),
                decimal(b.median, 6),
                decimal(b.q3, 6),
                decimal(b.whisker_high, 6),
                b.outliers.len().to_string(),
                decimal(max, 6),
            ]);
        }
    }
    out.csv(
        "box_stats.csv",
        "responsiveness box statistics per run (unclipped): whiskers at the most extreme \
         samples within 1.5 × IQR of the quartiles",
        &[
            "u_w_permille",
            "etf_permille",
            "policy",
            "scope",
            "samples",
            "whisker_low",
            "q1",
            "median",
            "q3",
            "whisker_high",
            "outliers",
            "max",
        ],
        &rows,
    )?;

    // Box plots per U_W and scope: categories etf, one box per policy.
    for (set, &u_w) in utilisations.iter().enumerate() {
        let lowest_name = &systems[set].domains[systems[set].lowest_priority_domain()].name;
        for scope in scopes {
            let series: Vec<(String, Vec<Option<BoxStats>>)> = policies
                .iter()
                .map(|&policy| {
                    let boxes = ETFS_PERMILLE
                        .iter()
                        .map(|&etf| {
                            finished
                                .iter()
                                .find(|(p, _)| p.set == set && p.etf == etf && p.policy == policy)
                                .and_then(|(p, r)| BoxStats::of(&samples_of(p, r, scope)))
                                .map(|b| for_display(&b))
                        })
                        .collect();
                    (paper_name(policy).to_string(), boxes)
                })
                .collect();
            let what = if scope == "all" {
                "all tasks".to_string()
            } else {
                format!("lowest-priority {lowest_name}")
            };
            let chart = BoxChart {
                title: format!("csa-etf: responsiveness, {what}, U_W {}", fraction(u_w)),
                x_label: "execution-time factor of the three highest-priority domains".to_string(),
                y_label: "responsiveness = response ÷ deadline (clipped at 3)".to_string(),
                categories: ETFS_PERMILLE
                    .iter()
                    .map(|&e| format!("etf {}", etf_label(e)))
                    .collect(),
                series,
                legend: LegendAt::UpperRight,
            };
            out.figure(
                &format!("box_{u_w}_{scope}"),
                &Chart::Box(chart),
                &format!(
                    "Responsiveness of {what} at U_W = {}, per etf and policy: box = \
                     quartiles, black line = median, whiskers = most extreme samples within \
                     1.5 × IQR, dots = outliers; values above 3 drawn at 3 (unclipped \
                     numbers in box_stats.csv); {duration} simulated, seed {seed}.",
                    fraction(u_w)
                ),
            )?;
        }
    }

    // Deadline miss ratios: a table, a bar chart per scope, findings.
    let find = |set: usize, etf: u32, policy: PolicyKind| {
        finished
            .iter()
            .find(|(p, _)| p.set == set && p.etf == etf && p.policy == policy)
            .map(|(_, r)| r)
    };
    let mut header = vec!["U_W".to_string(), "etf".to_string()];
    header.extend(
        policies
            .iter()
            .map(|&p| format!("{} all / lowest", paper_name(p))),
    );
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Vec::new();
    let mut categories = Vec::new();
    let mut bars_all: Vec<(String, Vec<f64>)> = policies
        .iter()
        .map(|&p| (paper_name(p).to_string(), Vec::new()))
        .collect();
    let mut bars_lowest = bars_all.clone();
    for (set, &u_w) in utilisations.iter().enumerate() {
        let lowest = systems[set].lowest_priority_domain();
        for &etf in &ETFS_PERMILLE {
            let mut row = vec![fraction(u_w), etf_label(etf)];
            categories.push(format!("{} · {}", fraction(u_w), etf_label(etf)));
            for (k, &policy) in policies.iter().enumerate() {
                let r = find(set, etf, policy);
                let (all, low) = r.map_or((f64::NAN, f64::NAN), |r| {
                    (
                        r.results.deadline_miss_ratio,
                        r.results.domains[lowest].deadline_miss_ratio,
                    )
                });
                row.push(if r.is_some() {
                    format!("{} / {}", percent(all), percent(low))
                } else {
                    "—".to_string()
                });
                bars_all[k]
                    .1
                    .push(if all.is_nan() { 0.0 } else { all * 100.0 });
                bars_lowest[k]
                    .1
                    .push(if low.is_nan() { 0.0 } else { low * 100.0 });
            }
            table.push(row);
        }
    }
    out.table(
        "dmr",
        "Deadline miss ratio per (U_W, etf): all jobs / the lowest-priority domain's jobs",
        &header,
        table,
    )?;
    for (scope, bars) in [("all", bars_all), ("lowest", bars_lowest)] {
        let what = if scope == "all" {
            "all jobs"
        } else {
            "lowest-priority domain"
        };
        let chart = BarChart {
            title: format!("csa-etf: deadline miss ratio, {what}"),
            x_label: "U_W · etf of the three highest-priority domains".to_string(),
            y_label: "deadline miss ratio (%)".to_string(),
            categories: categories.clone(),
            series: bars,
            legend: LegendAt::UpperLeft,
        };
        out.figure(
            &format!("dmr_{scope}"),
            &Chart::Bar(chart),
            &format!("Deadline miss ratio of the {what} per (U_W, etf), one bar per policy."),
        )?;
    }
    for (set, &u_w) in utilisations.iter().enumerate() {
        let lowest = systems[set].lowest_priority_domain();
        let mut parts = Vec::new();
        for &etf in &ETFS_PERMILLE {
            let cells: Vec<String> = policies
                .iter()
                .filter_map(|&policy| {
                    let r = find(set, etf, policy)?;
                    Some(format!(
                        "{} {}/{}",
                        paper_name(policy),
                        percent(r.results.deadline_miss_ratio),
                        percent(r.results.domains[lowest].deadline_miss_ratio)
                    ))
                })
                .collect();
            parts.push(format!("etf {}: {}", etf_label(etf), cells.join(", ")));
        }
        out.finding(format!(
            "U_W {} (U_RM {}), DMR all/lowest-priority domain — {}",
            fraction(u_w),
            decimal(systems[set].analysis.u_rm, 3),
            parts.join("; ")
        ));
    }
    // The findings as checks on this draw (see `Output::check`), at the highest U_W:
    // PTPS idles the slack away whatever the etf; WCPS and CRPS miss less as the etf
    // falls, CRPS never more than WCPS.
    if let Some(set) = utilisations.len().checked_sub(1) {
        let u_w = fraction(utilisations[set]);
        let dmr = |etf: u32, policy: PolicyKind| {
            find(set, etf, policy).map(|r| r.results.deadline_miss_ratio)
        };
        let by_etf = |policy: PolicyKind| -> Option<Vec<f64>> {
            ETFS_PERMILLE.iter().map(|&etf| dmr(etf, policy)).collect()
        };
        let lowest = systems[set].lowest_priority_domain();
        let ptps_lowest: Option<Vec<f64>> = ETFS_PERMILLE
            .iter()
            .map(|&etf| {
                find(set, etf, PolicyKind::Periodic)
                    .map(|r| r.results.domains[lowest].deadline_miss_ratio)
            })
            .collect();
        if let Some(ptps) = ptps_lowest {
            // Within 0.1 percentage point: the jobs in flight at the end differ.
            out.check(
                format!(
                    "U_W {u_w}: under ptps the lowest-priority domain misses as much whatever \
                     the etf (within 0.1 percentage point)"
                ),
                ptps.iter().all(|&d| (d - ptps[0]).abs() <= 0.001),
            );
        }
        for policy in [PolicyKind::Wcps, PolicyKind::Crps] {
            if let Some(d) = by_etf(policy) {
                out.check(
                    format!(
                        "U_W {u_w}: {} misses no more as the etf falls (1.0, 0.5, 0.1)",
                        paper_name(policy)
                    ),
                    d.windows(2).all(|w| w[1] <= w[0]),
                );
            }
        }
        if let (Some(wcps), Some(crps)) = (by_etf(PolicyKind::Wcps), by_etf(PolicyKind::Crps)) {
            out.check(
                format!("U_W {u_w}: crps misses no more than wcps at every etf"),
                crps.iter().zip(&wcps).all(|(c, w)| c <= w),
            );
        }
    }
    let draws = out.draw_count();
    out.against_published(
        &[
            "The 2012 execution-time-factor experiment: csa-periods' task set with periods in \
             [550, 650] ms per U_W, the three highest-priority domains' jobs taking etf × WCET \
             (etf 1.0, 0.5, 0.1) while interfaces stay those of the WCETs; box plots of \
             responsiveness and miss ratios under PTPS, WCPS and CRPS."
                .to_string(),
        ],
        &[
            "A job's execution is drawn uniformly in [⌈etf·WCET⌉, WCET] from the simulation \
             seed (the same draws for every policy); the paper's distribution is not given."
                .to_string(),
            match draws {
                1 => {
                    "One task set per U_W; no scheduler overhead; tasks released at 0.".to_string()
                }
                n => format!(
                    "{n} task-set draws (--seeds), each one task set per U_W; no scheduler \
                     overhead; tasks released at 0."
                ),
            },
        ],
    );

    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_boxes_clip_at_three_and_keep_distinct_outliers() {
        let mut samples = vec![0.5; 20];
        samples.extend([9.0, 12.0, 0.5001]);
        let b = BoxStats::of(&samples).unwrap();
        let shown = for_display(&b);
        assert_eq!(shown.median, 0.5);
        assert!(shown.outliers.iter().all(|&v| v <= RESPONSIVENESS_CLIP));
        assert_eq!(shown.outliers, vec![0.5, 3.0]);
        assert_eq!(etf_label(100), "0.1");
        assert_eq!(etf_label(1000), "1.0");
    }
}
