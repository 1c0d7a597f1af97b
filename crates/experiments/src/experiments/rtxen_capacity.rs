//! rtxen-capacity — soft real-time capacity under three share patterns (`docs/experiments.md`).
//!
//! Procedure: for each share pattern (decreasing, even, increasing), each total load α
//! from 30 % to 100 % in steps of 5 %, and each policy (deferrable, periodic, polling,
//! sporadic, credit at Xen 4.0's defaults, credit-1ms, sedf), generate the rtxen task set
//! for (pattern, α, seed) — the same for every policy, with the same boot offsets
//! (`crate::rtxen`; `--in-phase` boots every domain at 0) — and run it for 5 simulated
//! minutes on one pcpu with a 1 ms quantum and no scheduler overhead. Report the deadline
//! miss ratio (DMR) against α per policy, and each policy's **soft real-time capacity**:
//! the largest α of the sweep with a DMR under 5 % (taken literally: a higher α with
//! DMR < 5 % counts even if a lower one missed more).
//!
//! `--quick`: α ∈ {30, 50, 70, 90, 100} %, 5 s per run.

use crate::figures::{self, decimal};
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_gen::rtxen::{rtxen_loads_permille, SharePattern};
use rtvmm_system::results::RunResults;

use super::Experiment;
use crate::error::ExperimentError;
use crate::plot::{BarChart, Chart, LegendAt, LineChart, RefLine, Series};
use crate::report::Output;
use crate::rtxen::{Phasing, ShareSystems, RTXEN_POLICIES};
use crate::system::{
    build_system_with, rtxen_machine, run_labels, run_policies, simulate, RunPolicy,
    RTXEN_REPLENISHMENT,
};

/// Task-set draws of a full run (`--seeds`; see `docs/experiments.md`).
pub const DRAWS: usize = 5;

pub const EXPERIMENT: Experiment = Experiment {
    name: "rtxen-capacity",
    title: "soft real-time capacity under three share patterns",
    description: "Five domains (priorities 1–5, budgets 2/4/6/8/10 ms, periods from the \
        decreasing / even / increasing share pattern), five rate-monotonic tasks each with \
        costs uniform in 5–10 ms and the domain's share of the total load α split randomly; \
        α from 30 % to 100 % in steps of 5 %, 5 simulated minutes per run, one pcpu, 1 ms \
        quantum. The same task set for every policy at a given (α, seed). Shows the deadline \
        miss ratio against α per policy (Credit at Xen 4.0's defaults and at 1 ms), and \
        each policy's soft real-time capacity: the largest α with a deadline miss ratio \
        under 5 %. Domains boot at staggered offsets (or --in-phase).",
    run: Some(run),
    host: false,
    draws: Some(DRAWS),
};

/// The DMR below which a load counts as within the soft real-time capacity.
pub const CAPACITY_THRESHOLD: f64 = 0.05;
/// The loads of `--quick`, in permille.
pub const QUICK_LOADS_PERMILLE: [u32; 5] = [300, 500, 700, 900, 1000];

/// One run of the sweep.
#[derive(Clone, Debug)]
struct Point<'a> {
    pattern: SharePattern,
    load_permille: u32,
    policy: &'a RunPolicy,
}

/// The largest load (permille) with DMR under the threshold, among the finished runs.
pub fn capacity(points: &[(u32, f64)]) -> Option<u32> {
    points
        .iter()
        .filter(|(_, dmr)| *dmr < CAPACITY_THRESHOLD)
        .map(|(load, _)| *load)
        .max()
}

fn percent(permille: u32) -> String {
    format!("{}%", f64::from(permille) / 10.0)
}

/// The deadline miss ratio against the load (permille) of a pattern under a policy.
type DmrOf<'a> = dyn Fn(SharePattern, &RunPolicy) -> Vec<(u32, f64)> + 'a;

/// The qualitative findings, as checks on this draw (see `Output::check`): Credit, at
/// either setting, keeps up with the best RT-Xen server, and no server misses at the
/// lowest load, in every pattern.
fn check_findings(out: &mut Output, policies: &[RunPolicy], loads: &[u32], dmr_of: &DmrOf) {
    let servers: Vec<&RunPolicy> = policies
        .iter()
        .filter(|p| SERVERS.contains(&p.label))
        .collect();
    let lowest = loads.iter().copied().min();
    for pattern in SharePattern::ALL {
        let best_server = servers
            .iter()
            .map(|p| capacity(&dmr_of(pattern, p)))
            .max()
            .flatten();
        for credit in policies.iter().filter(|p| p.kind() == PolicyKind::Credit) {
            if servers.is_empty() {
                break;
            }
            out.check(
                format!(
                    "{pattern} shares: {credit}'s capacity is at least the best RT-Xen server's"
                ),
                capacity(&dmr_of(pattern, credit)) >= best_server,
            );
        }
        if let (Some(lowest), false) = (lowest, servers.is_empty()) {
            let clean = servers.iter().all(|p| {
                dmr_of(pattern, p)
                    .iter()
                    .all(|&(load, dmr)| load != lowest || dmr == 0.0)
            });
            out.check(
                format!(
                    "{pattern} shares: no RT-Xen server misses a deadline at α = {}",
                    percent(lowest)
                ),
                clean,
            );
        }
    }
}

/// The RT-Xen servers' labels.
const SERVERS: [&str; 4] = ["deferrable", "periodic", "polling", "sporadic"];

fn run(out: &mut Output) -> Result<(), ExperimentError> {
    let options = out.options;
    let duration = options.duration_or(Nanos::from_secs(300), Nanos::from_secs(5));
    let loads: Vec<u32> = if options.quick {
        QUICK_LOADS_PERMILLE.to_vec()
    } else {
        rtxen_loads_permille()
    };
    let policies = run_policies(&options.policies_or(&RTXEN_POLICIES))?;
    let overheads = options.overheads.unwrap_or_default();
    let seed = options.seed;
    let phasing = Phasing::of(options);
    out.param("share patterns", "decreasing, even, increasing");
    out.param(
        "loads α",
        loads
            .iter()
            .map(|&l| percent(l))
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.param("policies", run_labels(&policies));
    out.param("simulated time per run", duration);
    out.param("pcpus · quantum", "1 · 1ms");
    out.param("guest scheduler", "rm, deadline = period, soft real-time");
    out.param(
        "credit weights",
        "weight = round(10000·budget/period), cap 0",
    );
    for p in policies.iter().filter(|p| p.kind() == PolicyKind::Credit) {
        out.param(&format!("policy {}", p.label), p.describe());
    }
    out.param("sedf", "slice = budget, extratime off");
    out.param(
        "task-set seed",
        format!("derived from (seed {seed}, α): the same task set for every policy"),
    );

    // The systems, booted: the same for every policy.
    let systems = ShareSystems::boot(&loads, seed, phasing)?;
    systems.record_offsets(out, phasing)?;
    let mut points = Vec::new();
    for pattern in SharePattern::ALL {
        for &load_permille in &loads {
            for policy in &policies {
                points.push(Point {
                    pattern,
                    load_permille,
                    policy,
                });
            }
        }
    }
    let scenario = |p: &Point| format!("rtxen-{}-{}-{}", p.pattern, p.load_permille, p.policy);
    let outcome = out.sweep("rtxen-capacity", &points, scenario, |p| {
        let domains = systems.get(p.pattern, p.load_permille);
        let system = build_system_with(
            domains,
            &p.policy.config,
            rtxen_machine(Nanos::from_ms(1), overheads),
        )?;
        simulate(&system, &scenario(p), seed, duration)
    })?;

    // Raw numbers, one row per finished run, in sweep order.
    let mut header = vec![
        "pattern",
        "load_permille",
        "policy",
        "seed",
        "duration_ns",
        "jobs",
        "missed",
        "in_flight",
        "deadline_miss_ratio",
    ];
    let domain_columns: Vec<String> = (1..=5).map(|d| format!("dmr_d{d}")).collect();
    header.extend(domain_columns.iter().map(String::as_str));
    header.extend(["do_schedule_calls", "context_switches"]);
    let mut rows = Vec::new();
    let finished: Vec<(&Point, &RunResults)> = points
        .iter()
        .zip(&outcome.results)
        .filter_map(|(p, r)| r.as_ref().map(|r| (p, r)))
        .collect();
    for (p, r) in &finished {
        let mut row = vec![
            p.pattern.to_string(),
            p.load_permille.to_string(),
            p.policy.to_string(),
            seed.to_string(),
            r.duration_ns.to_string(),
            r.jobs.to_string(),
            r.missed.to_string(),
            r.in_flight.to_string(),
            decimal(r.deadline_miss_ratio, 6),
        ];
        row.extend(r.domains.iter().map(|d| decimal(d.deadline_miss_ratio, 6)));
        let pcpu = &r.pcpus[0];
        row.push(pcpu.do_schedule_calls.to_string());
        row.push(pcpu.context_switches.to_string());
        rows.push(row);
    }
    out.csv(
        "capacity_runs.csv",
        "one row per run: deadline miss ratio overall and per domain, scheduler activity",
        &header,
        &rows,
    )?;

    // Capacity per (pattern, policy).
    let dmr_of = |pattern: SharePattern, policy: &RunPolicy| -> Vec<(u32, f64)> {
        finished
            .iter()
            .filter(|(p, _)| p.pattern == pattern && p.policy.label == policy.label)
            .map(|(p, r)| (p.load_permille, r.deadline_miss_ratio))
            .collect()
    };
    let mut capacity_rows = Vec::new();
    let mut table_rows = Vec::new();
    let mut capacity_series: Vec<(String, Vec<f64>)> = SharePattern::ALL
        .iter()
        .map(|p| (p.to_string(), Vec::new()))
        .collect();
    for policy in &policies {
        let mut table_row = vec![policy.to_string()];
        for (i, pattern) in SharePattern::ALL.into_iter().enumerate() {
            let cap = capacity(&dmr_of(pattern, policy));
            let shown = cap.map_or_else(|| "none".to_string(), percent);
            capacity_rows.push(vec![
                pattern.to_string(),
                policy.to_string(),
                cap.map_or_else(String::new, |c| c.to_string()),
            ]);
            table_row.push(shown);
            capacity_series[i]
                .1
                .push(cap.map_or(0.0, |c| f64::from(c) / 10.0));
        }
        table_rows.push(table_row);
    }
    out.csv(
        "capacity.csv",
        "soft real-time capacity (largest α in ‰ with DMR < 5 %; empty = none)",
        &["pattern", "policy", "capacity_permille"],
        &capacity_rows,
    )?;
    out.table(
        "capacity",
        "Soft real-time capacity: the largest α with a deadline miss ratio under 5 %",
        &["policy", "decreasing", "even", "increasing"],
        table_rows.clone(),
    )?;
    for pattern in SharePattern::ALL {
        let column = 1 + SharePattern::ALL
            .iter()
            .position(|p| *p == pattern)
            .unwrap();
        let parts: Vec<String> = table_rows
            .iter()
            .map(|row| format!("{} {}", row[0], row[column]))
            .collect();
        out.finding(format!(
            "capacity (largest α with DMR < 5 %), {pattern}: {}",
            parts.join(", ")
        ));
    }

    check_findings(out, &policies, &loads, &dmr_of);

    // DMR against α: a table and a figure per pattern.
    for pattern in SharePattern::ALL {
        let mut header = vec!["α".to_string()];
        header.extend(policies.iter().map(|p| p.to_string()));
        let header: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut rows = Vec::new();
        for &load in &loads {
            let mut row = vec![percent(load)];
            for policy in &policies {
                let cell = finished
                    .iter()
                    .find(|(p, _)| {
                        p.pattern == pattern
                            && p.policy.label == policy.label
                            && p.load_permille == load
                    })
                    .map_or_else(
                        || "—".to_string(),
                        |(_, r)| format!("{}%", figures::percent(r.deadline_miss_ratio, 2)),
                    );
                row.push(cell);
            }
            rows.push(row);
        }
        out.table(
            &format!("dmr_{pattern}"),
            &format!("Deadline miss ratio against α, {pattern} shares"),
            &header,
            rows,
        )?;
        let series = policies
            .iter()
            .map(|policy| Series {
                name: policy.to_string(),
                points: dmr_of(pattern, policy)
                    .into_iter()
                    .map(|(load, dmr)| (f64::from(load) / 10.0, dmr * 100.0))
                    .collect(),
            })
            .collect();
        let mut chart = LineChart::new(
            &format!("rtxen-capacity: deadline miss ratio vs load ({pattern} shares)"),
            "total load α (%)",
            "deadline miss ratio (%)",
            series,
        );
        chart.x_range = Some((27.0, 103.0));
        chart.reference = Some(RefLine {
            y: CAPACITY_THRESHOLD * 100.0,
            label: "5 % (capacity threshold)".to_string(),
        });
        out.figure(
            &format!("dmr_{pattern}"),
            &Chart::Line(chart),
            &format!(
                "Deadline miss ratio of all jobs against the total load α, {pattern} share \
                 pattern, one curve per policy; {duration} simulated per point, seed {seed}, \
                 {}; credit = Xen 4.0's 10 ms tick / 30 ms slice, credit-1ms = 1 ms tick \
                 and slice.",
                phasing.short()
            ),
        )?;
    }
    let chart = BarChart {
        title: "rtxen-capacity: soft real-time capacity per policy".to_string(),
        x_label: "policy".to_string(),
        y_label: "capacity: largest α with DMR < 5 % (%)".to_string(),
        categories: policies.iter().map(|p| p.to_string()).collect(),
        series: capacity_series,
        legend: LegendAt::UpperRight,
    };
    out.figure(
        "capacity",
        &Chart::Bar(chart),
        "Largest total load α of the sweep with a deadline miss ratio under 5 %, per policy \
         and share pattern (0 = none).",
    )?;
    let draws = out.draw_count();
    out.against_published(
        &[
            "The 2011 soft real-time capacity experiment: the three share patterns, α from \
             30 % to 100 % in steps of 5 %, five tasks per domain with costs uniform in 5–10 ms, \
             the domain's load split randomly, periods rounded to whole ms, the same task sets \
             for every policy, 5 minutes per run, capacity = the largest α with a deadline miss \
             ratio under 5 %."
                .to_string(),
        ],
        &[
            match draws {
                1 => "One task set per (pattern, α) for the run seed, not several: a capacity is one \
                      sample, and another seed moves it (run with --seed)."
                    .to_string(),
                n => format!(
                    "{n} task-set draws (--seeds), each one task set per (pattern, α): \
                     capacities are given over the draws and findings counted in them."
                ),
            },
            "The random split is UUniFast (uniform over all splits); periods are rounded to \
             whole ms and capped at one hour (the generator's notes)."
                .to_string(),
            "No scheduler overhead; the guest is an ideal rm scheduler.".to_string(),
            RTXEN_REPLENISHMENT.to_string(),
            "Credit runs twice: at Xen 4.0's defaults (credit: 10 ms tick, 30 ms slice) and at \
             the papers' 1 ms setting (credit-1ms); weights ∝ share, no cap. SEDF: slice = \
             budget, extratime off."
                .to_string(),
            crate::rtxen::CREDIT_OUTCOMES.to_string(),
            format!(
                "Domains boot at {} (--in-phase gives the synchronous case).",
                phasing.short()
            ),
        ],
    );

    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_is_the_largest_load_under_five_percent() {
        assert_eq!(capacity(&[(300, 0.0), (500, 0.01), (700, 0.2)]), Some(500));
        // Taken literally: a later dip below 5 % counts.
        assert_eq!(capacity(&[(300, 0.0), (500, 0.06), (700, 0.04)]), Some(700));
        assert_eq!(capacity(&[(300, 0.05)]), None);
        assert_eq!(capacity(&[]), None);
    }
}
