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
//! `rtvmm_sim::compare` runs it under several policies and prints one line per policy.

use rtvmm_core::machine::MachineConfig;
use rtvmm_core::policy::{CreditConfig, PolicyConfig, RtdsMode};
use rtvmm_core::Nanos;
use rtvmm_gen::rtxen::{rtxen_system, share_table, SharePattern};
use rtvmm_gen::GenError;
use rtvmm_gen::ServerDomain;
use rtvmm_system::SystemSpec;

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
