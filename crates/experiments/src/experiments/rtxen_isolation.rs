//! rtxen-isolation — one overloaded domain (`docs/experiments.md`).
//!
//! Procedure: the rtxen-overhead setting (even shares, α = 70 %, five tasks per domain,
//! staggered boot offsets or `--in-phase`), 2 simulated minutes, two cases:
//! - *normal*: the generated task set;
//! - *overloaded*: domain 3's highest-priority task (rate-monotonic: the shortest period;
//!   of equal shortest periods, which share one priority level, the first declared) is
//!   misconfigured: its utilisation is raised by **10 percentage points of the pcpu** —
//!   its cost grows by a tenth of its period, its period stays. (Periods are whole
//!   milliseconds, so a tenth is a whole number of 100 µs: exact, no rounding.) Its domain's
//!   utilisation grows by the same 10 points, from about 14 % to about 24 % against a 20 %
//!   share.
//!
//! Reports the deadline miss ratio of every domain under each policy (the four servers,
//! credit at Xen 4.0's defaults, credit-1ms, sedf) in both cases. Under the fixed-priority
//! servers a domain's schedule does not depend on lower-priority domains, so domains 1 and
//! 2 must be unaffected; the boot offsets are the same in both cases.
//!
//! With `--host` ([`Driver::Host`]) the same runs happen in real time on this machine,
//! one after another (the host executor): the report says which results came from real
//! time and the host's steal time during each run.
//!
//! `--quick`: 5 s per run (with `--host`: 2 s of real time per run, 14 runs, about 35 s
//! in all); full: 2 minutes per run (with `--host`, about 28 minutes).

use crate::figures::{decimal, percent};
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_gen::rtxen::SharePattern;
use rtvmm_system::results::RunResults;

use super::Experiment;
use crate::driver::{real_time_label, Driver};
use crate::error::ExperimentError;
use crate::host::HostInfo;
use crate::plot::{BarChart, Chart, LegendAt};
use crate::report::Output;
use crate::rtxen::{
    domain_share, domain_utilisation, record_offsets, rtxen_domains, Phasing, RTXEN_POLICIES,
};
use crate::system::{
    build_system_with, rtxen_machine, run_labels, run_policies, RunPolicy, ServerDomain,
    RTXEN_REPLENISHMENT,
};

/// Task-set draws of a full run (`--seeds`; see `docs/experiments.md`).
pub const DRAWS: usize = 20;

pub const EXPERIMENT: Experiment = Experiment {
    name: "rtxen-isolation",
    title: "one overloaded domain",
    description: "The rtxen-overhead setting (even shares, α = 70 %, five tasks per domain, \
        staggered boot offsets or --in-phase), 2 simulated minutes, in two cases: normal, \
        and overloaded, where domain 3's highest-priority task is misconfigured: its \
        utilisation is raised by 10 percentage points of the pcpu (its cost grows by a tenth \
        of its period). Shows the deadline miss ratio of every domain under each policy \
        (Credit at Xen 4.0's defaults and at 1 ms): whether one domain's overload spreads to \
        the others.",
    run: Some(run),
    host: true,
    draws: Some(DRAWS),
};

/// The overloaded domain (index into d1…d5).
pub const OVERLOADED_DOMAIN: usize = 2;
/// How much the misconfigured task's utilisation grows, in percentage points of the pcpu:
/// its cost grows by `period × OVERLOAD_PERCENT / 100`.
pub const OVERLOAD_PERCENT: u64 = 10;

/// The two cases.
pub const CASES: [&str; 2] = ["normal", "overloaded"];

/// Misconfigures `domains[OVERLOADED_DOMAIN]`'s highest-priority task (shortest period,
/// first declared): its cost grows by [`OVERLOAD_PERCENT`] % of its period (capped at the
/// period, which the rtxen task sets never reach: their task utilisations are at most
/// 50 % × 100 %). Returns the task's name and the domain's utilisation before and after.
pub fn overload(domains: &mut [ServerDomain]) -> (String, f64, f64) {
    let domain = &mut domains[OVERLOADED_DOMAIN];
    let before = domain_utilisation(domain);
    let top = (0..domain.tasks.len())
        .min_by_key(|&i| (domain.tasks[i].period, i))
        .expect("rtxen domains have tasks");
    let task = &mut domain.tasks[top];
    let extra = Nanos(task.period.as_ns() / 100 * OVERLOAD_PERCENT);
    task.wcet = (task.wcet + extra).min(task.period);
    task.min_exec = task.wcet;
    let name = task.name.clone();
    let after = domain_utilisation(domain);
    (name, before, after)
}

fn run(out: &mut Output) -> Result<(), ExperimentError> {
    let options = out.options;
    // Real time is real: `--quick --host` runs 2 s each (14 runs, about 35 s in all).
    let host = match &options.driver {
        Driver::Host(host) => Some(host.as_ref()),
        Driver::Simulate => None,
    };
    let quick = if host.is_some() { 2 } else { 5 };
    let duration = options.duration_or(Nanos::from_secs(120), Nanos::from_secs(quick));
    let policies = run_policies(&options.policies_or(&RTXEN_POLICIES))?;
    let overheads = options.overheads.unwrap_or_default();
    let seed = options.seed;
    let phasing = Phasing::of(options);
    let mut normal = rtxen_domains(SharePattern::Even, 700, seed)?;
    phasing.boot(&mut normal, 700);
    let mut overloaded = normal.clone();
    let (task, before, after) = overload(&mut overloaded);
    out.param("share pattern", "even");
    out.param("total load α", "70%");
    out.param("policies", run_labels(&policies));
    for p in policies.iter().filter(|p| p.kind() == PolicyKind::Credit) {
        out.param(&format!("policy {}", p.label), p.describe());
    }
    let machine_line = host.map(|h| format!("{} · {}", HostInfo::probe().describe(), h.describe()));
    match &machine_line {
        None => out.param("simulated time per run", duration),
        Some(_) => out.param("real time per run", duration),
    }
    out.param("pcpus · quantum", "1 · 1ms");
    if let Some(line) = &machine_line {
        out.param("driver", format!("host executor ({line})"));
    }
    let top = overloaded[OVERLOADED_DOMAIN]
        .tasks
        .iter()
        .find(|t| t.name == task)
        .expect("the overloaded task");
    out.param(
        "overloaded case",
        format!(
            "d3 (share {}%): task {task} (period {}) costs {} more, +{OVERLOAD_PERCENT} \
             percentage points of the pcpu; d3 utilisation {}% → {}%",
            percent(domain_share(&overloaded[OVERLOADED_DOMAIN]), 0),
            top.period,
            Nanos(top.period.as_ns() / 100 * OVERLOAD_PERCENT),
            percent(before, 2),
            percent(after, 2)
        ),
    );
    record_offsets(out, phasing, &[("even-700".to_string(), normal.clone())])?;
    let runs: Vec<(usize, &RunPolicy)> = (0..CASES.len())
        .flat_map(|c| policies.iter().map(move |p| (c, p)))
        .collect();
    let name = |&(c, p): &(usize, &RunPolicy)| format!("rtxen-isolation-{}-{p}", CASES[c]);
    let label = if host.is_some() {
        "rtxen-isolation --host"
    } else {
        "rtxen-isolation"
    };
    let outcome = out.sweep(label, &runs, name, |run| {
        let domains = if run.0 == 0 { &normal } else { &overloaded };
        let system = build_system_with(
            domains,
            &run.1.config,
            rtxen_machine(Nanos::from_ms(1), overheads),
        )?;
        options
            .driver
            .run(&system, &name(run), seed, duration, &options.cancel)
    })?;
    // With --host: how each run may be read, and what the machine did meanwhile.
    let mut all_real_time = true;
    let mut conditions = Vec::new();
    for (run, result) in runs.iter().zip(&outcome.results) {
        let Some(r) = result else { continue };
        if host.is_none() {
            break;
        }
        let Some(h) = &r.host else {
            return Err(ExperimentError::Host {
                run: Some(name(run)),
                message: "the run came back without the executor's measurements".into(),
                refused: false,
            });
        };
        all_real_time &= h.real_time;
        conditions.push(vec![
            CASES[run.0].to_string(),
            run.1.to_string(),
            real_time_label(r),
            decimal(h.steal_ns as f64 / 1e6, 3),
            decimal(h.tick_lateness_ns.p50 as f64 / 1e3, 2),
            decimal(h.tick_lateness_ns.p99 as f64 / 1e3, 2),
            format!("{}%", percent(h.cpu_lost_share, 3)),
            h.jobs_lost.to_string(),
        ]);
    }
    let timing = if all_real_time {
        "real time on Linux"
    } else {
        "NOT real time (--best-effort: a real-time privilege was missing)"
    };

    let mut rows = Vec::new();
    for (&(c, policy), result) in runs.iter().zip(&outcome.results) {
        let Some(r) = result else { continue };
        for (i, d) in r.domains.iter().enumerate() {
            let mut row = vec![
                CASES[c].to_string(),
                policy.to_string(),
                d.name.clone(),
                d.jobs.to_string(),
                d.missed.to_string(),
                d.in_flight.to_string(),
                decimal(d.deadline_miss_ratio, 6),
            ];
            if let Some(h) = &r.host {
                row.extend([
                    r.source.clone(),
                    h.real_time.to_string(),
                    h.domain_cpu_ns.get(i).copied().unwrap_or(0).to_string(),
                    h.steal_ns.to_string(),
                ]);
            }
            rows.push(row);
        }
    }
    let mut columns = vec![
        "case",
        "policy",
        "domain",
        "jobs",
        "missed",
        "in_flight",
        "deadline_miss_ratio",
    ];
    let (csv, suffix) = match host {
        None => ("isolation.csv", ""),
        Some(_) => {
            columns.extend(["source", "real_time", "domain_cpu_ns", "run_steal_ns"]);
            ("isolation_host.csv", "_host")
        }
    };
    out.csv(
        csv,
        match host {
            None => "deadline miss ratio per case, policy and domain",
            Some(_) => {
                "deadline miss ratio per case, policy and domain, in real time (with the CPU \
                 time each domain's threads had and the host steal during the run)"
            }
        },
        &columns,
        &rows,
    )?;
    if let Some(line) = &machine_line {
        out.text(format!(
            "Every result below comes from real runs of the host executor, {timing}, on \
             {line}: each domain a guest process whose tasks are SCHED_FIFO threads, the \
             policy deciding in real time. The table of runs says which were real-time and \
             how much the host stole from the managed cpu during each."
        ));
        out.table(
            "host_runs",
            &format!("Each run's conditions — {timing}"),
            &[
                "case",
                "policy",
                "timing",
                "host steal (ms)",
                "tick lateness median (µs)",
                "p99 (µs)",
                "CPU lost to the scheduler thread",
                "job records lost",
            ],
            conditions,
        )?;
    }
    let domain_names: Vec<String> = normal.iter().map(|d| d.name.clone()).collect();
    for (c, case) in CASES.iter().enumerate() {
        let mut table = Vec::new();
        let mut series = Vec::new();
        for (&(rc, policy), result) in runs.iter().zip(&outcome.results) {
            let Some(r) = result else { continue };
            if rc != c {
                continue;
            }
            let mut row = vec![policy.to_string()];
            row.extend(
                r.domains
                    .iter()
                    .map(|d| format!("{}%", percent(d.deadline_miss_ratio, 2))),
            );
            table.push(row);
            series.push((
                policy.to_string(),
                r.domains
                    .iter()
                    .map(|d| d.deadline_miss_ratio * 100.0)
                    .collect(),
            ));
        }
        let mut header = vec!["policy"];
        header.extend(domain_names.iter().map(String::as_str));
        let (title, chart_title) = match &machine_line {
            None => (
                format!("Deadline miss ratio per domain, {case} case"),
                format!("rtxen-isolation: deadline miss ratio per domain ({case})"),
            ),
            Some(line) => (
                format!("Deadline miss ratio per domain, {case} case — {timing} ({line})"),
                format!("rtxen-isolation --host: deadline miss ratio per domain ({case})"),
            ),
        };
        out.table(&format!("isolation{suffix}_{case}"), &title, &header, table)?;
        let chart = BarChart {
            title: chart_title,
            x_label: "domain (d1 = highest priority)".to_string(),
            y_label: "deadline miss ratio (%)".to_string(),
            categories: domain_names.clone(),
            series,
            legend: LegendAt::UpperLeft,
        };
        let how = match host {
            None => "simulated".to_string(),
            Some(_) => format!("of real time ({timing})"),
        };
        out.figure(
            &format!("isolation{suffix}_{case}"),
            &Chart::Bar(chart),
            &format!(
                "Deadline miss ratio of each domain under each policy, {case} case; \
                 {duration} {how}, seed {seed}, {}.",
                phasing.short()
            ),
        )?;
    }
    // The qualitative findings, as checks on this draw (see `Output::check`): the
    // overload stays in d3 under every policy, and costs it under a server.
    for policy in &policies {
        let result = |case: usize| {
            runs.iter()
                .zip(&outcome.results)
                .find(|((c, p), _)| *c == case && p.label == policy.label)
                .and_then(|(_, r)| r.as_ref())
        };
        let (Some(normal), Some(overloaded)) = (result(0), result(1)) else {
            continue;
        };
        let untouched = overloaded
            .domains
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != OVERLOADED_DOMAIN && i + 1 < overloaded.domains.len())
            .all(|(_, d)| d.missed == 0);
        out.check(
            format!("overloaded, {policy}: d1, d2 and d4 miss no deadline"),
            untouched,
        );
        let d3 = |r: &RunResults| r.domains[OVERLOADED_DOMAIN].deadline_miss_ratio;
        out.check(
            format!("overloaded, {policy}: d3 misses more deadlines than in the normal case"),
            d3(overloaded) > d3(normal),
        );
    }
    // Main result: where the overloaded case's misses went.
    for (&(c, policy), result) in runs.iter().zip(&outcome.results) {
        let Some(r) = result else { continue };
        if c != 1 {
            continue;
        }
        let parts: Vec<String> = r
            .domains
            .iter()
            .map(|d| format!("{} {}%", d.name, percent(d.deadline_miss_ratio, 2)))
            .collect();
        match &r.host {
            None => out.finding(format!("overloaded, {policy}: {}", parts.join(", "))),
            Some(h) => out.finding(format!(
                "overloaded, {policy} ({}, steal {} ms): {}",
                if h.real_time {
                    "real time"
                } else {
                    "NOT real time"
                },
                decimal(h.steal_ns as f64 / 1e6, 3),
                parts.join(", ")
            )),
        }
    }
    out.against_published(
        &[
            "The 2011 isolation experiment: the overhead experiment's setting for 2 minutes, \
             normal and with domain 3's highest-priority task misconfigured to 10 percentage \
             points more utilisation of the pcpu (its cost grows by a tenth of its period, its \
             period stays); the deadline miss ratio of every domain under the four servers, \
             Credit and SEDF."
                .to_string(),
        ],
        &[
            match host {
                None => format!("No scheduler overhead. {RTXEN_REPLENISHMENT}"),
                Some(_) => "Real time on this machine: the policies run in a SCHED_FIFO thread \
                    of a Linux process, not inside Xen, and domains are guest processes \
                    stopped and resumed by the enforcement backend; the scheduler's own cost, \
                    its timer lateness and the host's steal time are the machine's (see the \
                    table of runs)."
                    .to_string(),
            },
            "Credit runs twice: at Xen 4.0's defaults (credit) and at the 1 ms setting \
             (credit-1ms)."
                .to_string(),
            crate::rtxen::CREDIT_OUTCOMES.to_string(),
            format!(
                "Domains boot at {}, the same in both cases, so every difference between the \
                 cases comes from the overload.",
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
    fn overload_raises_the_top_task_by_ten_points_of_the_pcpu() {
        for seed in 1..20 {
            let mut domains = rtxen_domains(SharePattern::Even, 700, seed).unwrap();
            let untouched = domains.clone();
            let (name, before, after) = overload(&mut domains);
            let d3 = &untouched[OVERLOADED_DOMAIN];
            // The highest-priority task: no other has a shorter period.
            let old = d3.tasks.iter().find(|t| t.name == name).unwrap();
            assert!(d3.tasks.iter().all(|t| t.period >= old.period));
            let new = domains[OVERLOADED_DOMAIN]
                .tasks
                .iter()
                .find(|t| t.name == name)
                .unwrap();
            // Its period stays; its cost grows by exactly a tenth of it.
            assert_eq!(new.period, old.period);
            assert_eq!((new.wcet - old.wcet).as_ns() * 10, old.period.as_ns());
            assert_eq!(new.min_exec, new.wcet);
            // The domain's utilisation grows by the same 10 points (up to float rounding),
            // beyond its 20 % share.
            assert!((after - before - 0.10).abs() < 1e-9, "{before} → {after}");
            assert!(after > domain_share(d3), "{after}");
            // Only that task changes.
            for (i, (a, b)) in domains.iter().zip(&untouched).enumerate() {
                if i != OVERLOADED_DOMAIN {
                    assert_eq!(a, b);
                }
            }
            let changed = domains[OVERLOADED_DOMAIN]
                .tasks
                .iter()
                .zip(&d3.tasks)
                .filter(|(a, b)| a != b)
                .count();
            assert_eq!(changed, 1);
        }
    }
}
