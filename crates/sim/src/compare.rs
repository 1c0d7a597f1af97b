//! Running one scenario under several policies, one line per policy: what `rtvmm demo`
//! prints.

use std::fmt::Write as _;

use rtvmm_core::policy::PolicyKind;
use rtvmm_scenario::{Scenario, ScenarioError};

use crate::run::{run, Record, Run, RunError};

/// Why a comparison stopped.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("simulating under {policy}: {error}")]
    Sim { policy: PolicyKind, error: RunError },
}

/// One policy's run of a comparison.
pub struct ComparisonRow {
    pub policy: PolicyKind,
    pub run: Run,
}

/// Runs `base` under each of `policies`, in order.
pub fn compare(
    base: &Scenario,
    policies: &[PolicyKind],
) -> Result<Vec<ComparisonRow>, CompareError> {
    let mut rows = Vec::with_capacity(policies.len());
    for &policy in policies {
        let scenario = base.with_policy(policy)?;
        let run = run(&scenario, Record::default())
            .map_err(|error| CompareError::Sim { policy, error })?;
        rows.push(ComparisonRow { policy, run });
    }
    Ok(rows)
}

/// One line per policy: jobs, missed, deadline miss ratio (total and per domain),
/// responsiveness, scheduler activity and wall-clock time.
pub fn comparison_table(base: &Scenario, rows: &[ComparisonRow]) -> String {
    let mut out = String::new();
    let tasks: usize = base.system.domains.iter().map(|d| d.tasks.len()).sum();
    let _ = writeln!(
        out,
        "{} · seed {} · {} simulated per policy · {} domains, {} tasks",
        base.name,
        base.seed,
        base.duration,
        base.system.domains.len(),
        tasks
    );
    let domain_names: Vec<&str> = base
        .system
        .domains
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    let mut header = format!(
        "{:<11} {:>7} {:>7} {:>7}",
        "policy", "jobs", "missed", "DMR"
    );
    for name in &domain_names {
        let _ = write!(header, " {:>7}", format!("{name} DMR"));
    }
    let _ = write!(
        header,
        " {:>9} {:>9} {:>11} {:>9} {:>9}",
        "resp mean", "resp p99", "do_schedule", "switches", "wall"
    );
    let _ = writeln!(out, "{header}");
    for row in rows {
        let r = &row.run.results;
        let _ = write!(
            out,
            "{:<11} {:>7} {:>7} {:>6.2}%",
            row.policy.name(),
            r.jobs,
            r.missed,
            r.deadline_miss_ratio * 100.0
        );
        for name in &domain_names {
            match r.domains.iter().find(|d| d.name == *name) {
                Some(d) => {
                    let _ = write!(out, " {:>6.2}%", d.deadline_miss_ratio * 100.0);
                }
                None => {
                    let _ = write!(out, " {:>7}", "-");
                }
            }
        }
        // Responsiveness over every finished job: the count-weighted mean of the domains'
        // means, and the largest of their 99th percentiles.
        let finished: u64 = r.domains.iter().map(|d| d.responsiveness.count).sum();
        let mean = if finished == 0 {
            0.0
        } else {
            r.domains
                .iter()
                .map(|d| d.responsiveness.mean * d.responsiveness.count as f64)
                .sum::<f64>()
                / finished as f64
        };
        let p99 = r
            .domains
            .iter()
            .map(|d| d.responsiveness.p99)
            .fold(0.0, f64::max);
        let (calls, switches) = r.pcpus.iter().fold((0, 0), |(c, s), p| {
            (c + p.do_schedule_calls, s + p.context_switches)
        });
        let _ = writeln!(
            out,
            " {:>9.3} {:>9.3} {:>11} {:>9} {:>7.1}ms",
            mean,
            p99,
            calls,
            switches,
            row.run.wall.as_secs_f64() * 1e3
        );
    }
    let _ = writeln!(
        out,
        "DMR: deadline miss ratio. resp: response time ÷ relative deadline of finished jobs\n\
         (mean over all jobs; p99: the worst domain's 99th percentile). wall: wall-clock time."
    );
    out
}
