//! rtxen-isolation — one overloaded domain (`experiments.md`).
//!
//! Procedure: the rtxen-overhead setting (even shares, α = 70 %, five tasks per domain),
//! 2 simulated minutes, two cases:
//! - *normal*: the generated task set;
//! - *overloaded*: domain 3's highest-priority task (rate-monotonic: the shortest period,
//!   ties by declaration order) is misconfigured: its WCET grows until domain 3's total
//!   utilisation is its share **plus 10 percentage points** (share 20 % → 30 %; the spec's
//!   "10 % more utilisation than its domain's share allows", read as percentage points of
//!   the CPU). The WCET is rounded up to a whole microsecond and capped at the period.
//!
//! Reports the deadline miss ratio of every domain under each policy (the four servers,
//! credit, sedf) in both cases. Under the fixed-priority servers a domain's schedule
//! does not depend on lower-priority domains, so domains 1 and 2 must be unaffected.
//!
//! `--quick`: 5 s per run.

use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_gen::rtxen::SharePattern;

use super::Experiment;
use crate::error::ExperimentError;
use crate::plot::{BarChart, Chart, LegendAt};
use crate::report::Output;
use crate::rtxen::{domain_share, domain_utilisation, rtxen_domains, RTXEN_POLICIES};
use crate::system::{build_system, machine, simulate, ServerDomain};

pub const EXPERIMENT: Experiment = Experiment {
    name: "rtxen-isolation",
    title: "one overloaded domain",
    description: "The rtxen-overhead setting (even shares, α = 70 %, five tasks per domain), \
        2 simulated minutes, in two cases: normal, and overloaded, where domain 3's \
        highest-priority task needs so much more time that domain 3's utilisation is its \
        share plus 10 percentage points. Shows the deadline miss ratio of every domain under \
        each policy: whether one domain's overload spreads to the others.",
    run: Some(run),
};

/// The overloaded domain (index into d1…d5).
pub const OVERLOADED_DOMAIN: usize = 2;
/// How far above its share the overloaded domain's utilisation is set.
pub const OVERLOAD: f64 = 0.10;

/// The two cases.
pub const CASES: [&str; 2] = ["normal", "overloaded"];

/// Makes `domains[OVERLOADED_DOMAIN]` need its share + [`OVERLOAD`] by growing the WCET
/// of its highest-priority (shortest-period, first declared) task. Returns the task's
/// name and the domain's utilisation before and after.
pub fn overload(domains: &mut [ServerDomain]) -> (String, f64, f64) {
    let domain = &mut domains[OVERLOADED_DOMAIN];
    let before = domain_utilisation(domain);
    let target = domain_share(domain) + OVERLOAD;
    let top = (0..domain.tasks.len())
        .min_by_key(|&i| (domain.tasks[i].period, i))
        .expect("rtxen domains have tasks");
    let task = &mut domain.tasks[top];
    let extra_ns = ((target - before) * task.period.as_ns() as f64).max(0.0);
    let extra = Nanos::from_us((extra_ns / 1000.0).ceil() as u64);
    task.wcet = (task.wcet + extra).min(task.period);
    task.min_exec = task.wcet;
    let name = task.name.clone();
    let after = domain_utilisation(domain);
    (name, before, after)
}

fn run(out: &mut Output) -> Result<(), ExperimentError> {
    let options = out.options;
    let duration = options.duration_or(Nanos::from_secs(120), Nanos::from_secs(5));
    let policies = options.policies_or(&RTXEN_POLICIES);
    let overheads = options.overheads.unwrap_or_default();
    let seed = options.seed;
    let normal = rtxen_domains(SharePattern::Even, 700, seed)?;
    let mut overloaded = normal.clone();
    let (task, before, after) = overload(&mut overloaded);
    out.param("share pattern", "even");
    out.param("total load α", "70%");
    out.param(
        "policies",
        policies
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.param("simulated time per run", duration);
    out.param("pcpus · quantum", "1 · 1ms");
    out.param(
        "overloaded case",
        format!(
            "d3 (share {:.0}%): task {task}'s WCET raised, d3 utilisation {:.2}% → {:.2}%",
            domain_share(&overloaded[OVERLOADED_DOMAIN]) * 100.0,
            before * 100.0,
            after * 100.0
        ),
    );
    let runs: Vec<(usize, PolicyKind)> = (0..CASES.len())
        .flat_map(|c| policies.iter().map(move |&p| (c, p)))
        .collect();
    let name = |&(c, p): &(usize, PolicyKind)| format!("rtxen-isolation-{}-{p}", CASES[c]);
    let outcome = out.sweep("rtxen-isolation", &runs, name, |run| {
        let domains = if run.0 == 0 { &normal } else { &overloaded };
        let system = build_system(domains, run.1, machine(Nanos::from_ms(1), overheads))?;
        simulate(&system, &name(run), seed, duration)
    })?;

    let mut rows = Vec::new();
    for (&(c, policy), result) in runs.iter().zip(&outcome.results) {
        let Some(r) = result else { continue };
        for d in &r.domains {
            rows.push(vec![
                CASES[c].to_string(),
                policy.to_string(),
                d.name.clone(),
                d.jobs.to_string(),
                d.missed.to_string(),
                d.in_flight.to_string(),
                format!("{:.6}", d.deadline_miss_ratio),
            ]);
        }
    }
    out.csv(
        "isolation.csv",
        "deadline miss ratio per case, policy and domain",
        &[
            "case",
            "policy",
            "domain",
            "jobs",
            "missed",
            "in_flight",
            "deadline_miss_ratio",
        ],
        &rows,
    )?;
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
                    .map(|d| format!("{:.2}%", d.deadline_miss_ratio * 100.0)),
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
        out.table(
            &format!("isolation_{case}"),
            &format!("Deadline miss ratio per domain, {case} case"),
            &header,
            table,
        )?;
        let chart = BarChart {
            title: format!("rtxen-isolation: deadline miss ratio per domain ({case})"),
            x_label: "domain (d1 = highest priority)".to_string(),
            y_label: "deadline miss ratio (%)".to_string(),
            categories: domain_names.clone(),
            series,
            legend: LegendAt::UpperLeft,
        };
        out.figure(
            &format!("isolation_{case}"),
            &Chart::Bar(chart),
            &format!(
                "Deadline miss ratio of each domain under each policy, {case} case; \
                 {duration} simulated, seed {seed}."
            ),
        )?;
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
            .map(|d| format!("{} {:.2}%", d.name, d.deadline_miss_ratio * 100.0))
            .collect();
        out.finding(format!("overloaded, {policy}: {}", parts.join(", ")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overload_reaches_share_plus_ten_points() {
        let mut domains = rtxen_domains(SharePattern::Even, 700, 1).unwrap();
        let untouched = domains.clone();
        let (_, before, after) = overload(&mut domains);
        let share = domain_share(&domains[OVERLOADED_DOMAIN]);
        assert!(before < share);
        assert!(after >= share + OVERLOAD - 1e-9, "{after}");
        // Whole microseconds: at most 1 µs per period above the target.
        assert!(after < share + OVERLOAD + 0.001, "{after}");
        // Only d3 changes.
        for i in [0, 1, 3, 4] {
            assert_eq!(domains[i], untouched[i]);
        }
    }
}
