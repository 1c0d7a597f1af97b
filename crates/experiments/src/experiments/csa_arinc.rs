//! csa-arinc — avionics workloads (`docs/experiments.md`; Lee et al., RTAS 2012, on the
//! workloads of Easwaran, Lee, Sokolsky, Vestal, UPenn MS-CIS-09-04, 2009).
//!
//! # Workloads
//! The published task tables are not available, so by default the seven workloads are
//! **generated** ([`rtvmm_gen::arinc::arinc_suite`] for the run seed: W1…W7, 3–8
//! harmonic partitions with periods from {25, 50, 100, 200} ms, 2–4 tasks each with
//! periods that are multiples of the partition's, total utilisations spread over the
//! published 0.003…0.54). Every table, figure title and finding says "generated".
//!
//! Real tables can be run from workload files ([`rtvmm_gen::workload_file`] format) with
//! `--workload FILE` (repeatable; `Options::workloads`): each file is one workload named
//! after its file stem, labelled "file", and the paths are recorded in the report's
//! parameters.
//!
//! # Procedure
//! Per workload: each partition's fixed-period interface `(Π, MinExec(Π))`, computed
//! exactly and its budget rounded up to a whole 1 ms quantum (see [`super::csa_common`];
//! the rounding is part of the overhead a 1 ms-quantum VMM pays), U_RM, U_W and
//! U_RM − U_W; for reference also U_RM with budgets rounded to 1 µs (what a VMM that could
//! deliver microsecond budgets would need). Partitions run their interfaces as servers,
//! priorities rate-monotonic by partition period (ties by partition order). Then ten
//! one-minute runs under PTPS, WCPS and CRPS, every job taking its WCET:
//! - run 0 releases every task at time 0 (the synchronous critical instant);
//! - run k ≥ 1 draws each task's first release uniformly among the multiples of its
//!   partition period below its own period, from a stream derived from (seed, workload,
//!   k) — the same phasing for every policy. Releases stay on partition-period
//!   boundaries, where the harmonic supply bound the analysis uses is sound.
//!
//! Reported: per workload the interfaces, U_RM, U_W and their difference; per workload
//! and policy the responsiveness CDF of all partitions and of the lowest-priority one
//! (pooled over the runs; per-partition quantiles in the CSV) and the deadline miss ratio
//! per partition and in total (pooled: missed ÷ counted jobs over the runs). The report
//! checks that every partition the analysis guarantees (schedulable on its interface,
//! interface delivered by the root) has no miss under PTPS in any run.
//!
//! `--quick`: three runs of 5 s per workload and policy.

use crate::figures::decimal;
use std::path::PathBuf;

use rtvmm_core::policy::PolicyKind;
use rtvmm_core::rng::SimRng;
use rtvmm_core::Nanos;
use rtvmm_gen::arinc::{arinc_suite, arinc_suite_params};
use rtvmm_gen::workload_file::parse_workload;
use rtvmm_gen::GenSystem;
use rtvmm_system::results::RunResults;

use super::csa_common::{
    cdf_chart, cdf_series, csa_system, csa_system_in, domain_responsiveness, ms_text, paper_name,
    percent, quantile_rows, CsaSystem, InterfacePeriods, ANALYSIS_UNIT, CSA_POLICIES,
};
use super::Experiment;
use crate::error::ExperimentError;
use crate::plot::{BarChart, Chart, LegendAt};
use crate::report::Output;
use crate::system::{build_system, machine, simulate_with, ServerDomain};

/// Task-set draws of a full run (`--seeds`; see `docs/experiments.md`).
pub const DRAWS: usize = 10;

pub const EXPERIMENT: Experiment = Experiment {
    name: "csa-arinc",
    title: "avionics workloads (generated, ARINC-653 shaped)",
    description: "Seven harmonic avionics-shaped workloads — GENERATED, since the published \
        tables are not available (real tables can be read with --workload FILE): \
        fixed-period partition interfaces (budgets in whole 1 ms quanta), U_RM, U_W and their \
        difference; ten one-minute runs (synchronous, then random phasings on \
        partition boundaries) under PTPS, WCPS and CRPS with responsiveness CDFs and deadline \
        miss ratios per partition and in total.",
    run: Some(run),
    host: false,
    draws: Some(DRAWS),
};

/// Runs per workload and policy.
pub const RUNS: usize = 10;
/// Runs per workload and policy in `--quick`.
pub const QUICK_RUNS: usize = 3;
/// Base of the phasing streams' labels (ASCII "PHASE").
const PHASING_LABEL: u64 = 0x50_4841_5345_0000;

/// One workload to run.
#[derive(Clone, Debug)]
pub struct NamedWorkload {
    pub name: String,
    /// "generated" or "file".
    pub source: &'static str,
    pub system: GenSystem,
}

/// The generated suite W1…W7 for `seed`.
pub fn generated_workloads(seed: u64) -> Vec<NamedWorkload> {
    arinc_suite_params()
        .into_iter()
        .zip(arinc_suite(seed))
        .map(|((name, _), system)| NamedWorkload {
            name,
            source: "generated",
            system,
        })
        .collect()
}

/// Workloads read from files, each named after its file stem.
pub fn file_workloads(paths: &[PathBuf]) -> Result<Vec<NamedWorkload>, ExperimentError> {
    paths
        .iter()
        .map(|path| {
            let text =
                rtvmm_system::input::read_text(path).map_err(|e| ExperimentError::read(path, e))?;
            let system = parse_workload(&text).map_err(|e| {
                ExperimentError::option("--workload", format!("{}: {e}", path.display()))
            })?;
            let name = path.file_stem().map_or_else(
                || path.display().to_string(),
                |s| s.to_string_lossy().into(),
            );
            Ok(NamedWorkload {
                name,
                source: "file",
                system,
            })
        })
        .collect()
}

/// `servers` with run `k`'s phasing: run 0 synchronous, others random multiples of the
/// partition period below each task's period (see the module note).
fn phased(servers: &[ServerDomain], seed: u64, workload: usize, k: usize) -> Vec<ServerDomain> {
    let mut servers = servers.to_vec();
    if k == 0 {
        return servers;
    }
    let mut rng = SimRng::derived(seed, PHASING_LABEL + (workload as u64) * 1_000 + k as u64);
    for server in &mut servers {
        let partition = server.period.as_ns();
        for task in &mut server.tasks {
            let slots = (task.period.as_ns() / partition).max(1);
            task.offset = Nanos(partition * rng.uniform_u64(0, slots - 1));
        }
    }
    servers
}

#[derive(Clone, Debug)]
struct Point {
    workload: usize,
    run: usize,
    policy: PolicyKind,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct RunOutcome {
    results: RunResults,
    samples: Vec<Vec<f64>>,
}

/// A workload with its analyses.
struct Analysed {
    workload: NamedWorkload,
    system: CsaSystem,
    /// U_RM with budgets rounded to 1 µs, when that analysis succeeds.
    u_rm_fine: Option<f64>,
}

fn run(out: &mut Output) -> Result<(), ExperimentError> {
    let options = out.options;
    let duration = options.duration_or(Nanos::from_secs(60), Nanos::from_secs(5));
    let runs = if options.quick { QUICK_RUNS } else { RUNS };
    let policies = options.policies_or(&CSA_POLICIES);
    let overheads = options.overheads.unwrap_or_default();
    let seed = options.seed;

    let from_files = &options.workloads;
    let workloads = if from_files.is_empty() {
        out.param(
            "workloads",
            "GENERATED (rtvmm_gen::arinc suite W1…W7 for the seed): not the published \
             Easwaran et al. 2009 tables",
        );
        generated_workloads(seed)
    } else {
        out.param(
            "workloads",
            format!(
                "read from files (--workload {})",
                from_files
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(" --workload ")
            ),
        );
        file_workloads(from_files)?
    };
    out.param("runs per workload and policy", runs);
    out.param("simulated time per run", duration);
    out.param(
        "phasing",
        "run 0 synchronous; run k ≥ 1: each task's first release a random multiple of its \
         partition period below its period, the same for every policy",
    );
    out.param(
        "policies",
        policies
            .iter()
            .map(|&p| format!("{} ({})", paper_name(p), p.name()))
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.param("pcpus · quantum", "1 · 1ms");
    out.param(
        "interfaces",
        "fixed period = partition period, budget MinExec(Π) computed exactly and rounded up \
         to a whole 1 ms quantum; sbf auto (harmonic where sound); priorities \
         rate-monotonic by partition period",
    );

    let mut analysed = Vec::with_capacity(workloads.len());
    for workload in workloads {
        let system = csa_system(&workload.system, InterfacePeriods::Fixed)?;
        let u_rm_fine = csa_system_in(&workload.system, InterfacePeriods::Fixed, Nanos::from_us(1))
            .ok()
            .map(|s| s.analysis.u_rm);
        analysed.push(Analysed {
            workload,
            system,
            u_rm_fine,
        });
    }
    let label = |a: &Analysed| format!("{} ({})", a.workload.name, a.workload.source);
    write_interfaces(out, &analysed)?;

    let mut points = Vec::new();
    for workload in 0..analysed.len() {
        for run in 0..runs {
            for &policy in &policies {
                points.push(Point {
                    workload,
                    run,
                    policy,
                });
            }
        }
    }
    let scenario = |p: &Point| {
        format!(
            "csa-arinc-{}-run{}-{}",
            analysed[p.workload].workload.name, p.run, p.policy
        )
    };
    let outcome = out.sweep("csa-arinc", &points, scenario, |p| {
        let servers = phased(
            &analysed[p.workload].system.domains,
            seed,
            p.workload,
            p.run,
        );
        let spec = build_system(&servers, p.policy, machine(ANALYSIS_UNIT, overheads))?;
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

    // Raw runs and per-partition rows.
    let mut rows = Vec::new();
    let mut domain_rows = Vec::new();
    for (p, r) in &finished {
        let a = &analysed[p.workload];
        let res = &r.results;
        rows.push(vec![
            a.workload.name.clone(),
            a.workload.source.to_string(),
            p.run.to_string(),
            if p.run == 0 { "synchronous" } else { "random" }.to_string(),
            paper_name(p.policy).to_string(),
            seed.to_string(),
            res.duration_ns.to_string(),
            res.jobs.to_string(),
            res.missed.to_string(),
            res.in_flight.to_string(),
            decimal(res.deadline_miss_ratio, 6),
        ]);
        for (d, dr) in res.domains.iter().enumerate() {
            domain_rows.push(vec![
                a.workload.name.clone(),
                p.run.to_string(),
                paper_name(p.policy).to_string(),
                dr.name.clone(),
                a.system.domains[d].priority.to_string(),
                dr.jobs.to_string(),
                dr.finished.to_string(),
                dr.missed.to_string(),
                decimal(dr.deadline_miss_ratio, 6),
            ]);
        }
    }
    out.csv(
        "runs.csv",
        "one row per run: jobs counted, missed, deadline miss ratio",
        &[
            "workload",
            "source",
            "run",
            "phasing",
            "policy",
            "seed",
            "duration_ns",
            "jobs",
            "missed",
            "in_flight",
            "deadline_miss_ratio",
        ],
        &rows,
    )?;
    out.csv(
        "partition_runs.csv",
        "one row per run and partition: jobs counted, finished, missed, deadline miss ratio",
        &[
            "workload",
            "run",
            "policy",
            "partition",
            "priority",
            "jobs",
            "finished",
            "missed",
            "deadline_miss_ratio",
        ],
        &domain_rows,
    )?;

    // Pooled over the runs: (jobs, missed) per (workload, policy, partition).
    let pooled =
        |workload: usize, policy: PolicyKind, domain: Option<usize>| -> Option<(u64, u64)> {
            let mut any = false;
            let (mut jobs, mut missed) = (0, 0);
            for (_, r) in finished
                .iter()
                .filter(|(p, _)| p.workload == workload && p.policy == policy)
            {
                any = true;
                match domain {
                    Some(d) => {
                        jobs += r.results.domains[d].jobs;
                        missed += r.results.domains[d].missed;
                    }
                    None => {
                        jobs += r.results.jobs;
                        missed += r.results.missed;
                    }
                }
            }
            any.then_some((jobs, missed))
        };
    let ratio = |(jobs, missed): (u64, u64)| {
        if jobs == 0 {
            0.0
        } else {
            missed as f64 / jobs as f64
        }
    };
    let samples = |workload: usize, policy: PolicyKind, domain: Option<usize>| -> Vec<f64> {
        finished
            .iter()
            .filter(|(p, _)| p.workload == workload && p.policy == policy)
            .flat_map(|(_, r)| match domain {
                Some(d) => r.samples[d].clone(),
                None => r.samples.concat(),
            })
            .collect()
    };

    // Quantiles per (workload, policy, scope), pooled over the runs.
    let mut rows = Vec::new();
    for (w, a) in analysed.iter().enumerate() {
        for &policy in &policies {
            let prefix = |scope: &str| {
                vec![
                    a.workload.name.clone(),
                    paper_name(policy).to_string(),
                    scope.to_string(),
                ]
            };
            rows.extend(quantile_rows(&prefix("all"), &samples(w, policy, None)));
            for (d, server) in a.system.domains.iter().enumerate() {
                rows.extend(quantile_rows(
                    &prefix(&server.name),
                    &samples(w, policy, Some(d)),
                ));
            }
        }
    }
    out.csv(
        "responsiveness_quantiles.csv",
        "responsiveness quantiles (0, 0.01, …, 1; unclipped), pooled over the runs, for all \
         partitions and for each partition",
        &[
            "workload",
            "policy",
            "scope",
            "samples",
            "quantile",
            "responsiveness",
        ],
        &rows,
    )?;

    // DMR tables: total per workload, and per partition.
    let mut header = vec!["workload".to_string()];
    header.extend(policies.iter().map(|&p| paper_name(p).to_string()));
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Vec::new();
    let mut bars: Vec<(String, Vec<f64>)> = policies
        .iter()
        .map(|&p| (paper_name(p).to_string(), Vec::new()))
        .collect();
    for (w, a) in analysed.iter().enumerate() {
        let mut row = vec![label(a)];
        for (k, &policy) in policies.iter().enumerate() {
            let cell = pooled(w, policy, None);
            row.push(cell.map_or_else(
                || "—".to_string(),
                |c| format!("{} ({} of {})", percent(ratio(c)), c.1, c.0),
            ));
            bars[k].1.push(cell.map_or(0.0, |c| ratio(c) * 100.0));
        }
        table.push(row);
    }
    out.table(
        "dmr",
        "Deadline miss ratio per workload, all partitions, pooled over the runs (missed of \
         counted jobs)",
        &header_refs,
        table,
    )?;
    let mut header = vec![
        "workload".to_string(),
        "partition".to_string(),
        "priority".to_string(),
        "interface (Π, Θ) ms".to_string(),
        "U".to_string(),
    ];
    header.extend(policies.iter().map(|&p| paper_name(p).to_string()));
    let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut table = Vec::new();
    for (w, a) in analysed.iter().enumerate() {
        for d in a.system.priority_order() {
            let server = &a.system.domains[d];
            let mut row = vec![
                label(a),
                server.name.clone(),
                server.priority.to_string(),
                format!("({}, {})", ms_text(server.period), ms_text(server.budget)),
                decimal(a.workload.system.domains[d].utilisation(), 4),
            ];
            for &policy in &policies {
                row.push(
                    pooled(w, policy, Some(d))
                        .map_or_else(|| "—".to_string(), |c| percent(ratio(c))),
                );
            }
            table.push(row);
        }
    }
    out.table(
        "dmr_partitions",
        "Deadline miss ratio per partition, pooled over the runs",
        &header_refs,
        table,
    )?;
    let source_label = if analysed.iter().all(|a| a.workload.source == "generated") {
        "generated workloads"
    } else {
        "workloads"
    };
    out.figure(
        "dmr",
        &Chart::Bar(BarChart {
            title: format!("csa-arinc: deadline miss ratio per workload ({source_label})"),
            x_label: "workload".to_string(),
            y_label: "deadline miss ratio, all partitions (%)".to_string(),
            categories: analysed.iter().map(|a| a.workload.name.clone()).collect(),
            series: bars,
            legend: LegendAt::UpperLeft,
        }),
        "Deadline miss ratio of all jobs per workload, pooled over the runs, one bar per \
         policy.",
    )?;

    // CDFs per workload: all partitions and the lowest-priority one.
    for (w, a) in analysed.iter().enumerate() {
        let lowest = a.system.lowest_priority_domain();
        for (scope, domain) in [("all", None), ("lowest", Some(lowest))] {
            let series = policies
                .iter()
                .filter(|&&policy| pooled(w, policy, None).is_some())
                .map(|&policy| cdf_series(paper_name(policy), &samples(w, policy, domain)))
                .collect::<Vec<_>>();
            if series.is_empty() {
                continue;
            }
            let what = match domain {
                None => "all partitions".to_string(),
                Some(d) => format!("lowest-priority {}", a.system.domains[d].name),
            };
            out.figure(
                &format!("cdf_{}_{scope}", a.workload.name),
                &Chart::Line(cdf_chart(
                    &format!(
                        "csa-arinc CDF: {} ({}), {what}",
                        a.workload.name, a.workload.source
                    ),
                    series,
                )),
                &format!(
                    "Responsiveness CDF of {what} of workload {} ({}), pooled over {runs} runs \
                     of {duration}, one curve per policy; values above 3 drawn at 3.",
                    a.workload.name, a.workload.source
                ),
            )?;
        }
    }

    // Findings.
    for (w, a) in analysed.iter().enumerate() {
        let s = &a.system;
        let dmrs: Vec<String> = policies
            .iter()
            .filter_map(|&policy| {
                let c = pooled(w, policy, None)?;
                Some(format!("{} {}", paper_name(policy), percent(ratio(c))))
            })
            .collect();
        out.finding(format!(
            "{} ({}): {} partitions, U_W {}, U_RM {}, U_RM − U_W {}{}; {}; DMR {}",
            a.workload.name,
            a.workload.source,
            s.domains.len(),
            decimal(s.task_utilisation, 4),
            decimal(s.analysis.u_rm, 4),
            decimal(s.analysis.u_rm - s.task_utilisation, 4),
            a.u_rm_fine
                .map_or_else(String::new, |u| format!(" (U_RM with 1 µs budgets {u:.4})")),
            if s.analysis.schedulable {
                "schedulable"
            } else {
                "not schedulable"
            },
            dmrs.join(", ")
        ));
    }
    let mut guaranteed = 0usize;
    let mut violations = Vec::new();
    for (p, r) in finished
        .iter()
        .filter(|(p, _)| p.policy == PolicyKind::Periodic)
    {
        let a = &analysed[p.workload];
        for d in 0..a.system.domains.len() {
            if a.system.domain_guaranteed(d) {
                guaranteed += 1;
                if r.results.domains[d].missed > 0 {
                    violations.push(format!(
                        "{} run {} {}: {} misses",
                        a.workload.name,
                        p.run,
                        a.system.domains[d].name,
                        r.results.domains[d].missed
                    ));
                }
            }
        }
    }
    let check = if violations.is_empty() {
        format!(
            "check: every partition the analysis guarantees ran without a deadline miss under \
             ptps ({guaranteed} partition-runs)"
        )
    } else {
        format!(
            "check FAILED: partitions the analysis guarantees missed under ptps: {}",
            violations.join("; ")
        )
    };
    out.text(format!("**Analysis against run.** {check}."));
    out.finding(check);
    // The findings as checks on this draw (see `Output::check`).
    out.check(
        "every partition the analysis guarantees ran without a deadline miss under ptps",
        violations.is_empty(),
    );
    out.check(
        "every workload is schedulable on its fixed-period interfaces",
        analysed.iter().all(|a| a.system.analysis.schedulable),
    );
    out.check(
        "no policy misses a deadline in any run",
        finished.iter().all(|(_, r)| r.results.missed == 0),
    );
    out.against_published(
        &[
            "The 2012 avionics experiment's procedure: per workload, fixed-period interfaces, \
             U_RM, U_W and their difference, then ten one-minute runs under PTPS, WCPS and \
             CRPS with responsiveness CDFs and miss ratios per partition and in total."
                .to_string(),
        ],
        &[
            if options.workloads.is_empty() {
                "The published task tables (Easwaran et al. 2009) are not available: these \
                 workloads are GENERATED with the same shape (harmonic partition periods, a \
                 few tasks each, utilisations in the published range). Run the real tables \
                 with --workload FILE."
                    .to_string()
            } else {
                "The workloads are read from the files given with --workload.".to_string()
            },
            "Budgets are rounded up to whole 1 ms quanta (U_RM with 1 µs budgets is reported \
             for reference); no scheduler overhead."
                .to_string(),
            "Run 0 releases every task at 0; runs 1–9 draw each task's first release among \
             its partition-period boundaries."
                .to_string(),
        ],
    );

    Ok(())
}

/// Workload and interface tables, CSVs and the U_RM / U_W figure.
fn write_interfaces(out: &mut Output, analysed: &[Analysed]) -> Result<(), ExperimentError> {
    let mut rows = Vec::new();
    let mut table = Vec::new();
    for a in analysed {
        let s = &a.system;
        let diff = s.analysis.u_rm - s.task_utilisation;
        rows.push(vec![
            a.workload.name.clone(),
            a.workload.source.to_string(),
            s.domains.len().to_string(),
            a.workload.system.task_count().to_string(),
            decimal(s.task_utilisation, 6),
            decimal(s.analysis.u_rm, 6),
            decimal(diff, 6),
            a.u_rm_fine.map_or_else(String::new, |u| decimal(u, 6)),
            s.analysis.root_schedulable.to_string(),
            s.analysis.schedulable.to_string(),
            a.workload.system.description.clone(),
        ]);
        table.push(vec![
            format!("{} ({})", a.workload.name, a.workload.source),
            s.domains.len().to_string(),
            a.workload.system.task_count().to_string(),
            decimal(s.task_utilisation, 4),
            decimal(s.analysis.u_rm, 4),
            decimal(diff, 4),
            a.u_rm_fine
                .map_or_else(|| "—".to_string(), |u| decimal(u, 4)),
            if s.analysis.schedulable {
                "schedulable".to_string()
            } else {
                "not schedulable".to_string()
            },
        ]);
    }
    out.csv(
        "workloads.csv",
        "per workload: U_W, U_RM of the interfaces (1 ms budgets), U_RM − U_W, U_RM with \
         budgets rounded to 1 µs instead, the analysis' verdict, the workload's description",
        &[
            "workload",
            "source",
            "partitions",
            "tasks",
            "u_w",
            "u_rm",
            "u_rm_minus_u_w",
            "u_rm_1us",
            "root_schedulable",
            "schedulable",
            "description",
        ],
        &rows,
    )?;
    out.table(
        "workloads",
        "Workloads: U_W, fixed-period interfaces' U_RM (1 ms budgets) and their difference",
        &[
            "workload",
            "partitions",
            "tasks",
            "U_W",
            "U_RM",
            "U_RM − U_W",
            "U_RM (1 µs budgets)",
            "analysis",
        ],
        table,
    )?;

    let mut rows = Vec::new();
    for a in analysed {
        for (d, res) in a.system.analysis.domains.iter().enumerate() {
            let server = &a.system.domains[d];
            rows.push(vec![
                a.workload.name.clone(),
                server.name.clone(),
                server.tasks.len().to_string(),
                decimal(a.workload.system.domains[d].utilisation(), 6),
                ms_text(server.period),
                ms_text(server.budget),
                decimal(res.bandwidth, 6),
                server.priority.to_string(),
                res.schedulable.to_string(),
                a.system.root_response(d).map_or_else(String::new, ms_text),
            ]);
        }
    }
    out.csv(
        "interfaces.csv",
        "per partition: true utilisation, fixed-period interface (ms), bandwidth, priority \
         (1 = highest), root response time (ms; empty = misses at the root)",
        &[
            "workload",
            "partition",
            "tasks",
            "utilisation",
            "interface_period_ms",
            "interface_budget_ms",
            "bandwidth",
            "priority",
            "schedulable_on_interface",
            "root_response_ms",
        ],
        &rows,
    )?;

    let generated = analysed.iter().all(|a| a.workload.source == "generated");
    let chart = BarChart {
        title: format!(
            "csa-arinc: U_W and U_RM per workload{}",
            if generated { " (generated)" } else { "" }
        ),
        x_label: "workload".to_string(),
        y_label: "utilisation / bandwidth (fraction of the pcpu)".to_string(),
        categories: analysed.iter().map(|a| a.workload.name.clone()).collect(),
        series: vec![
            (
                "U_W (tasks)".to_string(),
                analysed.iter().map(|a| a.system.task_utilisation).collect(),
            ),
            (
                "U_RM (1 ms budgets)".to_string(),
                analysed.iter().map(|a| a.system.analysis.u_rm).collect(),
            ),
            (
                "U_RM (1 µs budgets)".to_string(),
                analysed
                    .iter()
                    .map(|a| a.u_rm_fine.unwrap_or(0.0))
                    .collect(),
            ),
        ],
        legend: LegendAt::UpperLeft,
    };
    out.figure(
        "utilisation",
        &Chart::Bar(chart),
        "Task utilisation U_W and the total bandwidth U_RM of the fixed-period partition \
         interfaces, per workload: budgets in whole 1 ms quanta and, for reference, rounded \
         to 1 µs only.",
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phasing_keeps_releases_on_partition_boundaries() {
        let suite = generated_workloads(4);
        let system = csa_system(&suite[6].system, InterfacePeriods::Fixed).unwrap();
        assert_eq!(phased(&system.domains, 4, 6, 0), system.domains);
        let a = phased(&system.domains, 4, 6, 1);
        assert_eq!(a, phased(&system.domains, 4, 6, 1));
        assert_ne!(a, phased(&system.domains, 4, 6, 2));
        for server in &a {
            for task in &server.tasks {
                assert_eq!(task.offset.as_ns() % server.period.as_ns(), 0);
                assert!(task.offset < task.period);
            }
        }
    }
}
