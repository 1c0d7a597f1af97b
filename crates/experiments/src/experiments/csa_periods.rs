//! csa-periods — how interface overhead is used by PTPS, WCPS and CRPS (`docs/experiments.md`;
//! Lee et al., "Realizing Compositional Scheduling through Virtualization", RTAS 2012).
//!
//! Procedure: for each task utilisation U_W ∈ {0.7, 0.8, 0.9, 1.0} and each period range
//! ([550, 650], [350, 850], [100, 1100] ms), generate the csa task set for (U_W, range,
//! seed) ([`rtvmm_gen::csa`]: task utilisations uniform in [0.2 %, 5 %] until U_W, spread
//! over five non-empty domains), compute each domain's optimal integer interface in 1 ms
//! units ([`super::csa_common`]), and run the interfaces as servers with rate-monotonic
//! priorities for 5 simulated minutes under PTPS, WCPS and CRPS, every job taking its
//! WCET, one pcpu, 1 ms quantum. The same task set and interfaces for every policy.
//!
//! At U_W = 1.0 the interfaces' total bandwidth U_RM exceeds 1, so the root cannot be
//! schedulable: the runs still happen and the report says so — that is part of the result.
//!
//! Reported per (U_W, range, policy): the CDF of responsiveness over all tasks and over
//! the lowest-priority domain (figures clipped at 3; quantiles unclipped in
//! `responsiveness_quantiles.csv`); the deadline miss ratio (all, lowest-priority domain,
//! each domain); and per (U_W, range) the interfaces and the total interface overhead
//! U_RM − U_W. The report also checks the analysis: every domain it guarantees under PTPS
//! (schedulable on its interface, interface delivered by the root) must show no miss in
//! the PTPS run.
//!
//! `--quick`: U_W ∈ {0.8, 1.0}, ranges [550, 650] and [100, 1100] ms, 10 s per run.

use crate::figures::decimal;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_gen::csa::{csa_taskset, CsaParams, CSA_PERIOD_RANGES_MS, CSA_UTILISATIONS_PERMILLE};
use rtvmm_system::results::RunResults;

use super::csa_common::{
    cdf_chart, cdf_series, csa_system, domain_responsiveness, fraction, miss_cells, ms_text,
    paper_name, percent, quantile_rows, range_label, range_stem, sorted, CsaSystem,
    InterfacePeriods, ANALYSIS_UNIT, CSA_POLICIES,
};
use super::Experiment;
use crate::error::ExperimentError;
use crate::plot::{quantile_sorted, Chart, LineChart, Series};
use crate::report::Output;
use crate::system::{build_system, machine, simulate_with};

/// Task-set draws of a full run (`--seeds`; see `docs/experiments.md`).
pub const DRAWS: usize = 10;

pub const EXPERIMENT: Experiment = Experiment {
    name: "csa-periods",
    title: "how interface overhead is used by PTPS, WCPS, CRPS",
    description: "Task sets of utilisation U_W ∈ {0.7, 0.8, 0.9, 1.0} (task utilisations \
        uniform in [0.2 %, 5 %]) over five domains, periods uniform in [550, 650], \
        [350, 850] or [100, 1100] ms; each domain runs its optimal integer interface (1 ms \
        units) as a periodic server, priorities rate-monotonic by interface period, every \
        job taking its WCET, 5 simulated minutes per run. Reports responsiveness CDFs (all \
        tasks, lowest-priority domain), deadline miss ratios and the interface overhead \
        U_RM − U_W per policy (PTPS, WCPS, CRPS), and checks that every domain the analysis \
        guarantees shows no miss under PTPS.",
    run: Some(run),
    host: false,
    draws: Some(DRAWS),
};

/// U_W of `--quick`, in permille.
pub const QUICK_UTILISATIONS_PERMILLE: [u32; 2] = [800, 1000];
/// Period ranges of `--quick`, in ms.
pub const QUICK_PERIOD_RANGES_MS: [(u64, u64); 2] = [(550, 650), (100, 1100)];

/// One task set: (U_W ‰, period range).
#[derive(Clone, Copy, Debug)]
struct SetKey {
    u_w: u32,
    range: (u64, u64),
}

/// One run: a task set and a policy.
#[derive(Clone, Debug)]
struct Point {
    set: usize,
    policy: PolicyKind,
}

/// What a run gives: its results and the responsiveness samples of every domain.
#[derive(serde::Serialize, serde::Deserialize)]
struct RunOutcome {
    results: RunResults,
    samples: Vec<Vec<f64>>,
}

fn run(out: &mut Output) -> Result<(), ExperimentError> {
    let options = out.options;
    let duration = options.duration_or(Nanos::from_secs(300), Nanos::from_secs(10));
    let (utilisations, ranges): (Vec<u32>, Vec<(u64, u64)>) = if options.quick {
        (
            QUICK_UTILISATIONS_PERMILLE.to_vec(),
            QUICK_PERIOD_RANGES_MS.to_vec(),
        )
    } else {
        (
            CSA_UTILISATIONS_PERMILLE.to_vec(),
            CSA_PERIOD_RANGES_MS.to_vec(),
        )
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
    out.param(
        "period ranges (uniform, whole ms)",
        ranges
            .iter()
            .map(|&r| range_label(r))
            .collect::<Vec<_>>()
            .join(", "),
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
        "task sets",
        "csa generator (rtvmm_gen::csa): task utilisation uniform in [0.2 %, 5 %] until U_W, \
         wcet = round(u·p) ms, spread over 5 non-empty domains; etf = 1 (every job takes its \
         WCET); deadline = period; guest rm",
    );
    out.param(
        "interfaces",
        "optimal integer interface per domain (Algorithm 1, 1 ms units, sbf auto), run as a \
         server with budget Θ and period Π; priorities rate-monotonic by Π, ties by domain",
    );
    out.param(
        "task-set seed",
        format!("derived from (seed {seed}, U_W, range): the same set for every policy"),
    );
    out.param(
        "responsiveness",
        "response ÷ deadline per job; an unfinished job past its deadline at its lower bound \
         (end − release) ÷ deadline; jobs in flight left out; figures clip at 3",
    );

    // Task sets and interfaces, one per (U_W, range).
    let mut keys = Vec::new();
    for &range in &ranges {
        for &u_w in &utilisations {
            keys.push(SetKey { u_w, range });
        }
    }
    let mut systems: Vec<CsaSystem> = Vec::with_capacity(keys.len());
    for key in &keys {
        let generated = csa_taskset(&CsaParams::new(key.u_w, key.range), seed)?;
        systems.push(csa_system(&generated, InterfacePeriods::Optimal)?);
    }
    write_interfaces(out, &keys, &systems)?;

    let mut points = Vec::new();
    for set in 0..keys.len() {
        for &policy in &policies {
            points.push(Point { set, policy });
        }
    }
    let scenario = |p: &Point| {
        let key = keys[p.set];
        format!(
            "csa-periods-{}-{}-{}",
            key.u_w,
            range_stem(key.range),
            p.policy
        )
    };
    let outcome = out.sweep("csa-periods", &points, scenario, |p| {
        let system = build_system(
            &systems[p.set].domains,
            p.policy,
            machine(ANALYSIS_UNIT, overheads),
        )?;
        let (results, samples) = simulate_with(&system, &scenario(p), seed, duration, |sim| {
            domain_responsiveness(sim, duration)
        })?;
        Ok(RunOutcome { results, samples })
    })?;
    let finished: Vec<(&Point, &RunOutcome)> = points
        .iter()
        .zip(&outcome.results)
        .filter_map(|(p, r)| r.as_ref().map(|r| (p, r)))
        .collect();

    write_runs(out, &keys, &systems, &finished, seed)?;
    write_responsiveness(out, &keys, &systems, &finished, &policies, duration, seed)?;
    write_dmr(
        out,
        &keys,
        &systems,
        &finished,
        &policies,
        &utilisations,
        &ranges,
    )?;
    check_analysis(out, &keys, &systems, &finished);
    let draws = out.draw_count();
    out.against_published(
        &[
            "The 2012 period-range experiment: csa task sets of U_W 0.7–1.0 over five \
             domains, periods in [550, 650], [350, 850] and [100, 1100] ms, each domain's \
             optimal integer interface run as a periodic server (rate-monotonic by interface \
             period) under PTPS, WCPS and CRPS, every job at its WCET, 5 minutes per run; \
             responsiveness CDFs, miss ratios and U_RM − U_W."
                .to_string(),
        ],
        &[
            match draws {
                1 => "One task set per (U_W, range) for the run seed.".to_string(),
                n => format!(
                    "{n} task-set draws (--seeds), each one task set per (U_W, range): figures \
                     are given over the draws and findings counted in them."
                ),
            },
            "Interfaces in whole 1 ms quanta from rtvmm-analysis; no scheduler overhead; the \
             guest is an ideal rm scheduler."
                .to_string(),
            "Tasks are released at time 0 with their domain (no boot offsets: the \
             procedure's interfaces are analysed for any phasing)."
                .to_string(),
        ],
    );

    Ok(())
}

/// The interface tables, CSVs, overhead figure and findings.
fn write_interfaces(
    out: &mut Output,
    keys: &[SetKey],
    systems: &[CsaSystem],
) -> Result<(), ExperimentError> {
    let mut rows = Vec::new();
    for (key, system) in keys.iter().zip(systems) {
        for (d, a) in system.analysis.domains.iter().enumerate() {
            rows.push(vec![
                key.u_w.to_string(),
                key.range.0.to_string(),
                key.range.1.to_string(),
                a.name.clone(),
                system.domains[d].tasks.len().to_string(),
                decimal(a.utilization, 6),
                ms_text(system.domains[d].period),
                ms_text(system.domains[d].budget),
                decimal(a.bandwidth, 6),
                decimal(a.overhead, 6),
                system.domains[d].priority.to_string(),
                a.schedulable.to_string(),
                system.root_response(d).map_or_else(String::new, ms_text),
            ]);
        }
    }
    out.csv(
        "interfaces.csv",
        "every domain's optimal interface (ms), its bandwidth, utilisation, overhead, \
         priority (1 = highest) and root response time (ms; empty = misses at the root)",
        &[
            "u_w_permille",
            "period_min_ms",
            "period_max_ms",
            "domain",
            "tasks",
            "utilisation",
            "interface_period_ms",
            "interface_budget_ms",
            "bandwidth",
            "overhead",
            "priority",
            "schedulable_on_interface",
            "root_response_ms",
        ],
        &rows,
    )?;

    let mut rows = Vec::new();
    let mut table = Vec::new();
    for (key, system) in keys.iter().zip(systems) {
        let a = &system.analysis;
        let tasks: usize = system.domains.iter().map(|d| d.tasks.len()).sum();
        rows.push(vec![
            key.u_w.to_string(),
            key.range.0.to_string(),
            key.range.1.to_string(),
            tasks.to_string(),
            decimal(a.u_w, 6),
            decimal(a.u_rm, 6),
            decimal(a.u_rm_minus_u_w, 6),
            a.root_schedulable.to_string(),
            a.schedulable.to_string(),
        ]);
        let interfaces: Vec<String> = system
            .priority_order()
            .into_iter()
            .map(|d| {
                let s = &system.domains[d];
                format!("{} ({}, {})", s.name, ms_text(s.period), ms_text(s.budget))
            })
            .collect();
        table.push(vec![
            fraction(key.u_w),
            range_label(key.range),
            tasks.to_string(),
            decimal(a.u_w, 4),
            decimal(a.u_rm, 4),
            decimal(a.u_rm_minus_u_w, 4),
            if a.schedulable {
                "schedulable".to_string()
            } else if !a.root_schedulable {
                "root not schedulable".to_string()
            } else {
                "a domain not schedulable".to_string()
            },
            interfaces.join(", "),
        ]);
    }
    out.csv(
        "systems.csv",
        "per task set: U_W, U_RM, the interface overhead U_RM − U_W and the analysis' verdict",
        &[
            "u_w_permille",
            "period_min_ms",
            "period_max_ms",
            "tasks",
            "u_w",
            "u_rm",
            "u_rm_minus_u_w",
            "root_schedulable",
            "schedulable",
        ],
        &rows,
    )?;
    out.table(
        "interfaces",
        "Interfaces per task set: U_W (generated), U_RM, overhead U_RM − U_W, verdict; \
         interfaces (Π, Θ) in ms from the highest priority down",
        &[
            "U_W (target)",
            "periods",
            "tasks",
            "U_W",
            "U_RM",
            "U_RM − U_W",
            "analysis",
            "interfaces (Π, Θ) ms",
        ],
        table,
    )?;

    // Overhead against U_W, one curve per range.
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    for key in keys {
        if !ranges.contains(&key.range) {
            ranges.push(key.range);
        }
    }
    let series = ranges
        .iter()
        .map(|&range| Series {
            name: format!("periods {}", range_label(range)),
            points: keys
                .iter()
                .zip(systems)
                .filter(|(k, _)| k.range == range)
                .map(|(k, s)| (f64::from(k.u_w) / 10.0, s.analysis.u_rm_minus_u_w))
                .collect(),
        })
        .collect();
    let mut chart = LineChart::new(
        "csa-periods: total interface overhead U_RM − U_W",
        "task utilisation U_W (%)",
        "interface overhead U_RM − U_W (fraction of the pcpu)",
        series,
    );
    chart.y_range = Some((
        0.0,
        systems
            .iter()
            .map(|s| s.analysis.u_rm_minus_u_w)
            .fold(0.0, f64::max)
            * 1.25
            + 0.01,
    ));
    out.figure(
        "overhead",
        &Chart::Line(chart),
        "Total bandwidth of the five optimal integer interfaces minus the task utilisation, \
         per generated task set (one per U_W and period range).",
    )?;
    for &range in &ranges {
        let parts: Vec<String> = keys
            .iter()
            .zip(systems)
            .filter(|(k, _)| k.range == range)
            .map(|(k, s)| {
                let a = &s.analysis;
                let verdict = if a.u_rm > 1.0 {
                    " (U_RM > 1: not schedulable)"
                } else if !a.root_schedulable {
                    " (root RM test fails: not schedulable)"
                } else if !a.schedulable {
                    " (a domain fails: not schedulable)"
                } else {
                    " (schedulable)"
                };
                format!(
                    "U_W {} → U_RM {}, overhead {}{verdict}",
                    fraction(k.u_w),
                    decimal(a.u_rm, 3),
                    decimal(a.u_rm_minus_u_w, 3)
                )
            })
            .collect();
        out.finding(format!(
            "interfaces, periods {}: {}",
            range_label(range),
            parts.join("; ")
        ));
    }
    Ok(())
}

/// `runs.csv`: one row per run.
fn write_runs(
    out: &mut Output,
    keys: &[SetKey],
    systems: &[CsaSystem],
    finished: &[(&Point, &RunOutcome)],
    seed: u64,
) -> Result<(), ExperimentError> {
    let mut header = vec![
        "u_w_permille",
        "period_min_ms",
        "period_max_ms",
        "policy",
        "seed",
        "duration_ns",
        "u_rm",
        "analysis_schedulable",
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
    header.extend([
        "responsiveness_p50",
        "responsiveness_p99",
        "responsiveness_max",
    ]);
    let mut rows = Vec::new();
    for (p, r) in finished {
        let key = keys[p.set];
        let system = &systems[p.set];
        let lowest = system.lowest_priority_domain();
        let res = &r.results;
        let low = &res.domains[lowest];
        let all = sorted(&r.samples.concat());
        let q = |level: f64| {
            if all.is_empty() {
                String::new()
            } else {
                decimal(quantile_sorted(&all, level), 6)
            }
        };
        let mut row = vec![
            key.u_w.to_string(),
            key.range.0.to_string(),
            key.range.1.to_string(),
            paper_name(p.policy).to_string(),
            seed.to_string(),
            res.duration_ns.to_string(),
            decimal(system.analysis.u_rm, 6),
            system.analysis.schedulable.to_string(),
        ];
        row.extend(miss_cells(res, low));
        row.extend([q(0.5), q(0.99), q(1.0)]);
        rows.push(row);
    }
    out.csv(
        "runs.csv",
        "one row per run: deadline miss ratio overall, of the lowest-priority domain and of \
         each domain; responsiveness percentiles over all jobs",
        &header,
        &rows,
    )?;
    Ok(())
}

/// Responsiveness quantiles (CSV) and CDF figures.
fn write_responsiveness(
    out: &mut Output,
    keys: &[SetKey],
    systems: &[CsaSystem],
    finished: &[(&Point, &RunOutcome)],
    policies: &[PolicyKind],
    duration: Nanos,
    seed: u64,
) -> Result<(), ExperimentError> {
    let mut rows = Vec::new();
    for (p, r) in finished {
        let key = keys[p.set];
        let lowest = systems[p.set].lowest_priority_domain();
        let prefix = |scope: &str, domain: &str| {
            vec![
                key.u_w.to_string(),
                key.range.0.to_string(),
                key.range.1.to_string(),
                paper_name(p.policy).to_string(),
                scope.to_string(),
                domain.to_string(),
            ]
        };
        rows.extend(quantile_rows(&prefix("all", ""), &r.samples.concat()));
        rows.extend(quantile_rows(
            &prefix("lowest", &r.results.domains[lowest].name),
            &r.samples[lowest],
        ));
    }
    out.csv(
        "responsiveness_quantiles.csv",
        "responsiveness quantiles (0, 0.01, …, 1; not clipped) per run, over all jobs and \
         over the lowest-priority domain's jobs",
        &[
            "u_w_permille",
            "period_min_ms",
            "period_max_ms",
            "policy",
            "scope",
            "domain",
            "samples",
            "quantile",
            "responsiveness",
        ],
        &rows,
    )?;

    for (set, key) in keys.iter().enumerate() {
        let lowest = systems[set].lowest_priority_domain();
        let lowest_name = &systems[set].domains[lowest].name;
        for scope in ["all", "lowest"] {
            let series: Vec<Series> = policies
                .iter()
                .filter_map(|&policy| {
                    let (_, r) = finished
                        .iter()
                        .find(|(p, _)| p.set == set && p.policy == policy)?;
                    let samples = if scope == "all" {
                        r.samples.concat()
                    } else {
                        r.samples[lowest].clone()
                    };
                    Some(cdf_series(paper_name(policy), &samples))
                })
                .collect();
            if series.is_empty() {
                continue;
            }
            let what = if scope == "all" {
                "all tasks".to_string()
            } else {
                format!("lowest-priority domain {lowest_name}")
            };
            let chart = cdf_chart(
                &format!(
                    "csa-periods CDF: {}, U_W {}, periods {}–{} ms",
                    if scope == "all" {
                        "all tasks".to_string()
                    } else {
                        format!("lowest-priority {lowest_name}")
                    },
                    fraction(key.u_w),
                    key.range.0,
                    key.range.1
                ),
                series,
            );
            out.figure(
                &format!("cdf_{}_{}_{scope}", range_stem(key.range), key.u_w),
                &Chart::Line(chart),
                &format!(
                    "Empirical CDF of job responsiveness (response time ÷ deadline; ≤ 1 = \
                     met) of {what}, one curve per policy; {duration} simulated, seed {seed}. \
                     Values above 3 are drawn at 3; a curve that stays below 1 at x = 3 has \
                     that share of jobs beyond 3."
                ),
            )?;
        }
    }
    Ok(())
}

/// DMR tables, figures and findings.
fn write_dmr(
    out: &mut Output,
    keys: &[SetKey],
    systems: &[CsaSystem],
    finished: &[(&Point, &RunOutcome)],
    policies: &[PolicyKind],
    utilisations: &[u32],
    ranges: &[(u64, u64)],
) -> Result<(), ExperimentError> {
    let find = |set: usize, policy: PolicyKind| {
        finished
            .iter()
            .find(|(p, _)| p.set == set && p.policy == policy)
            .map(|(_, r)| r)
    };
    let mut header = vec!["U_W".to_string(), "periods".to_string()];
    header.extend(
        policies
            .iter()
            .map(|&p| format!("{} all / lowest", paper_name(p))),
    );
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Vec::new();
    for (set, key) in keys.iter().enumerate() {
        let lowest = systems[set].lowest_priority_domain();
        let mut row = vec![fraction(key.u_w), range_label(key.range)];
        for &policy in policies {
            row.push(find(set, policy).map_or_else(
                || "—".to_string(),
                |r| {
                    format!(
                        "{} / {}",
                        percent(r.results.deadline_miss_ratio),
                        percent(r.results.domains[lowest].deadline_miss_ratio)
                    )
                },
            ));
        }
        table.push(row);
    }
    out.table(
        "dmr",
        "Deadline miss ratio: all jobs / the lowest-priority domain's jobs",
        &header,
        table,
    )?;

    for &range in ranges {
        let mut series = Vec::new();
        for scope in ["all", "lowest"] {
            for &policy in policies {
                let points: Vec<(f64, f64)> = utilisations
                    .iter()
                    .filter_map(|&u| {
                        let set = keys.iter().position(|k| k.range == range && k.u_w == u)?;
                        let r = find(set, policy)?;
                        let dmr = if scope == "all" {
                            r.results.deadline_miss_ratio
                        } else {
                            let lowest = systems[set].lowest_priority_domain();
                            r.results.domains[lowest].deadline_miss_ratio
                        };
                        Some((f64::from(u) / 10.0, dmr * 100.0))
                    })
                    .collect();
                let label = if scope == "all" {
                    "all tasks"
                } else {
                    "lowest-priority domain"
                };
                series.push(Series {
                    name: format!("{} — {label}", paper_name(policy)),
                    points,
                });
            }
        }
        let mut chart = LineChart::new(
            &format!(
                "csa-periods: deadline miss ratio vs U_W, periods {}",
                range_label(range)
            ),
            "task utilisation U_W (%)",
            "deadline miss ratio (%)",
            series,
        );
        chart.x_range = Some((
            f64::from(*utilisations.first().unwrap_or(&700)) / 10.0 - 3.0,
            f64::from(*utilisations.last().unwrap_or(&1000)) / 10.0 + 3.0,
        ));
        out.figure(
            &format!("dmr_{}", range_stem(range)),
            &Chart::Line(chart),
            &format!(
                "Deadline miss ratio of all jobs and of the lowest-priority domain's jobs \
                 against U_W, periods {}, one curve per policy and scope.",
                range_label(range)
            ),
        )?;
        let mut parts = Vec::new();
        for &policy in policies {
            let cells: Vec<String> = utilisations
                .iter()
                .filter_map(|&u| {
                    let set = keys.iter().position(|k| k.range == range && k.u_w == u)?;
                    let r = find(set, policy)?;
                    let lowest = systems[set].lowest_priority_domain();
                    Some(format!(
                        "{} {}/{}",
                        fraction(u),
                        percent(r.results.deadline_miss_ratio),
                        percent(r.results.domains[lowest].deadline_miss_ratio)
                    ))
                })
                .collect();
            parts.push(format!("{}: {}", paper_name(policy), cells.join(", ")));
        }
        out.finding(format!(
            "DMR all/lowest-priority domain by U_W, periods {}: {}",
            range_label(range),
            parts.join("; ")
        ));
        // The finding as a check on this draw (see `Output::check`): at the highest
        // U_W, the policies that use the idle budget miss less.
        let top = utilisations.iter().copied().max();
        let set = top.and_then(|u| keys.iter().position(|k| k.range == range && k.u_w == u));
        let dmr = |policy: PolicyKind| {
            set.and_then(|set| find(set, policy))
                .map(|r| r.results.deadline_miss_ratio)
        };
        let order = [PolicyKind::Periodic, PolicyKind::Wcps, PolicyKind::Crps];
        if let [Some(ptps), Some(wcps), Some(crps)] = order.map(dmr) {
            out.check(
                format!(
                    "periods {}, U_W {}: deadline miss ratio crps ≤ wcps ≤ ptps",
                    range_label(range),
                    fraction(top.unwrap_or_default())
                ),
                crps <= wcps && wcps <= ptps,
            );
        }
    }
    Ok(())
}

/// The analysis check under PTPS, as a text section and a finding.
fn check_analysis(
    out: &mut Output,
    keys: &[SetKey],
    systems: &[CsaSystem],
    finished: &[(&Point, &RunOutcome)],
) {
    let mut guaranteed = 0usize;
    let mut violations = Vec::new();
    for (p, r) in finished
        .iter()
        .filter(|(p, _)| p.policy == PolicyKind::Periodic)
    {
        let system = &systems[p.set];
        for d in 0..system.domains.len() {
            if system.domain_guaranteed(d) {
                guaranteed += 1;
                let missed = r.results.domains[d].missed;
                if missed > 0 {
                    let key = keys[p.set];
                    violations.push(format!(
                        "U_W {} periods {} {}: {missed} misses",
                        fraction(key.u_w),
                        range_label(key.range),
                        system.domains[d].name
                    ));
                }
            }
        }
    }
    let text = if violations.is_empty() {
        format!(
            "check: every domain the analysis guarantees under PTPS ({guaranteed} \
             domain-runs: schedulable on its interface, interface delivered at the root) ran \
             without a deadline miss under ptps"
        )
    } else {
        format!(
            "check FAILED: domains the analysis guarantees missed under ptps: {}",
            violations.join("; ")
        )
    };
    out.text(format!("**Analysis against run.** {text}."));
    out.finding(text);
    out.check(
        "every domain the analysis guarantees ran without a deadline miss under ptps",
        violations.is_empty(),
    );
}
