//! The built-in scenario of `rtvmm demo`: the RT-Xen 2011 "even" share pattern at 70 %
//! load.
//!
//! - Five domains d1…d5 with fixed-priority servers (budget/period) 2/10, 4/20, 6/30,
//!   8/40, 10/50 ms, priorities 1…5; each share is 20 %. Each runs five periodic tasks
//!   under an `rm` guest, drawn by the rtxen-capacity procedure for a total load of 70 %
//!   from the run's seed. The system is `rtvmm_gen::rtxen::rtxen_system`, as the rtxen
//!   experiments and the simulator's benchmark build it.
//! - Credit uses the papers' "1 ms" setting (a 1 ms tick and a 1 ms time slice; Xen 4.0's
//!   defaults are 10 ms and 30 ms), and weights proportional to the shares.
//! - ARINC 653 gets the table of `rtvmm_gen::rtxen::share_table`: the major frame is the
//!   greatest common divisor of the periods (10 ms) and each domain gets one minor frame
//!   of `budget × major / period` (2 ms each) — the same 20 % share, spread as evenly as a
//!   static table allows.
//!
//! [`compare`] runs the scenario under several policies and [`comparison_table`] prints
//! one line per policy.

use std::fmt::Write as _;

use rtvmm_core::machine::MachineConfig;
use rtvmm_core::policy::{CreditConfig, PolicyConfig, PolicyKind, RtdsMode};
use rtvmm_core::Nanos;
use rtvmm_gen::rtxen::{rtxen_system, share_table, SharePattern};
use rtvmm_gen::GenError;
use rtvmm_gen::ServerDomain;
use rtvmm_system::SystemSpec;

use crate::run::{run, Record, Run, RunError};
use crate::{ArincTableSpec, NamedMinorFrame, Scenario, ScenarioError, SchedulerSettings};

/// Total task load of the demo, in permille.
pub const DEMO_LOAD_PERMILLE: u32 = 700;
/// Simulated time per policy unless told otherwise.
pub const DEMO_DURATION: Nanos = Nanos::from_secs(10);
/// The seed unless told otherwise.
pub const DEMO_SEED: u64 = 42;

/// Why the demo scenario could not be built.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("generating the demo task sets")]
    Gen(#[from] GenError),
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("simulating under {policy}: {error}")]
    Sim { policy: PolicyKind, error: RunError },
}

/// The demo scenario for `seed`, running for `duration` under the Deferrable Server (use
/// [`Scenario::with_policy`] for the others).
pub fn demo(seed: u64, duration: Nanos) -> Result<Scenario, DemoError> {
    let pattern = SharePattern::Even;
    let servers = rtxen_system(pattern, DEMO_LOAD_PERMILLE, seed)?.domains;
    let table = share_table(&servers);
    let minor_frames = servers
        .iter()
        .zip(&table.minor_frames)
        .map(|(s, frame)| NamedMinorFrame {
            domain: s.name.clone(),
            runtime: frame.runtime,
        })
        .collect();
    let domains = servers.iter().map(ServerDomain::domain_spec).collect();
    let scheduler = SchedulerSettings {
        credit: CreditConfig::one_ms(),
        rtds: RtdsMode::default(),
        arinc653: Some(ArincTableSpec {
            major_frame: table.major_frame,
            minor_frames,
        }),
    };
    let scenario = Scenario {
        file: "<demo>".to_string(),
        name: format!("demo-{}-{}", pattern.name(), DEMO_LOAD_PERMILLE / 10),
        duration,
        seed,
        system: SystemSpec {
            policy_settings: scheduler.for_new_pools(),
            domains,
            ..SystemSpec::one_pool(MachineConfig::default(), PolicyConfig::Deferrable)
        },
        scheduler,
        external: Default::default(),
    };
    scenario.validate()?;
    Ok(scenario)
}

/// One policy's run of a comparison.
pub struct ComparisonRow {
    pub policy: PolicyKind,
    pub run: Run,
}

/// Runs `base` under each of `policies`, in order.
pub fn compare(base: &Scenario, policies: &[PolicyKind]) -> Result<Vec<ComparisonRow>, DemoError> {
    let mut rows = Vec::with_capacity(policies.len());
    for &policy in policies {
        let scenario = base.with_policy(policy)?;
        let run =
            run(&scenario, Record::default()).map_err(|error| DemoError::Sim { policy, error })?;
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
