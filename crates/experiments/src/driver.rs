//! Where an experiment's runs happen: in the simulator, or in real time on this machine
//! (`--host`, for the experiments whose [`Experiment::host`](crate::experiments::Experiment)
//! says so).
//!
//! # Design note
//! This crate does not depend on the host executor (`rtvmm-host`). The caller hands in a
//! [`RealTime`] trait object instead; the `rtvmm` binary implements it over
//! `rtvmm_host::executor::run`. Why a trait object and not an optional dependency:
//! - the executor is Linux-only and needs privileges; this crate builds, and its tests
//!   run, everywhere, with no `cfg` and no feature to keep in step;
//! - the executor re-executes a helper program (its guests and watchdog), which only the
//!   binary can be: a library cannot say which program dispatches the helper argument;
//! - flags (`--cpu`, `--enforce`, `--best-effort`) stay the binary's, as every other flag;
//! - the tests here drive the `--host` code of an experiment with a stand-in that needs
//!   no privilege (the real executor is tested by the binary's and the host crate's
//!   tests).
//!
//! A real-time run owns the machine: the runs of a sweep run one after another
//! ([`crate::sweep`]), and cancelling stops the run in progress, which is then dropped
//! (a run cut short is not the procedure's run).

use std::fmt;
use std::sync::Arc;

use rtvmm_core::Nanos;
use rtvmm_system::results::RunResults;
use rtvmm_system::SystemSpec;

use crate::cancel::Cancel;
use crate::error::ExperimentError;
use crate::system::simulate;

/// Why a real-time run could not start or failed, as the executor said it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RealTimeError {
    pub message: String,
    /// The user's to fix (a missing privilege, an unavailable backend, a bad cpu): nothing
    /// ran.
    pub refused: bool,
}

/// Runs systems in real time on this machine (implemented by the `rtvmm` binary over the
/// host executor; see the module note).
pub trait RealTime: Send + Sync {
    /// Everything that can refuse a run before anything runs: the cpu, the privileges,
    /// the enforcement backend.
    fn check(&self) -> Result<(), RealTimeError>;

    /// Runs `system` for `duration` of real time. `Ok(None)` when `stop` was set before
    /// the end: the run is cut short and dropped.
    fn run(
        &self,
        system: &SystemSpec,
        scenario: &str,
        seed: u64,
        duration: Nanos,
        stop: &Cancel,
    ) -> Result<Option<RunResults>, RealTimeError>;

    /// The machine and the executor's settings, one line for reports (for example
    /// `real time on Linux: cpu 1 of 2, enforce freeze`).
    fn describe(&self) -> String;

    /// The command-line flags that reproduce these settings (`--host --cpu 1 ...`).
    fn flags(&self) -> String;
}

/// Where the runs happen.
#[derive(Clone, Default)]
pub enum Driver {
    /// The simulator (every experiment).
    #[default]
    Simulate,
    /// Real time on this machine.
    Host(Arc<dyn RealTime>),
}

impl fmt::Debug for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Driver::Simulate => f.write_str("Simulate"),
            Driver::Host(host) => write!(f, "Host({})", host.describe()),
        }
    }
}

/// Two host drivers are equal when they are one driver.
impl PartialEq for Driver {
    fn eq(&self, other: &Driver) -> bool {
        match (self, other) {
            (Driver::Simulate, Driver::Simulate) => true,
            (Driver::Host(a), Driver::Host(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Driver {}

impl Driver {
    pub fn is_host(&self) -> bool {
        matches!(self, Driver::Host(_))
    }

    /// Runs `system` for `duration`: simulated, or in real time (stopped by `cancel`,
    /// the options' flag, which gives [`ExperimentError::Stopped`]).
    pub fn run(
        &self,
        system: &SystemSpec,
        scenario: &str,
        seed: u64,
        duration: Nanos,
        cancel: &Cancel,
    ) -> Result<RunResults, ExperimentError> {
        match self {
            Driver::Simulate => simulate(system, scenario, seed, duration),
            Driver::Host(host) => match host.run(system, scenario, seed, duration, cancel) {
                Ok(Some(results)) => Ok(results),
                Ok(None) => Err(ExperimentError::Stopped {
                    run: scenario.to_string(),
                }),
                Err(e) => Err(ExperimentError::Host {
                    run: Some(scenario.to_string()),
                    message: e.message,
                    refused: e.refused,
                }),
            },
        }
    }
}

/// How a real-time run's figures may be read: `real time`, or `NOT real time (…)` with
/// the privileges the run lacked (`--best-effort`).
pub fn real_time_label(results: &RunResults) -> String {
    match &results.host {
        Some(h) if h.real_time => "real time".to_string(),
        Some(h) => format!(
            "NOT real time (--best-effort: {})",
            h.not_real_time_because.join("; ")
        ),
        None => "simulated".to_string(),
    }
}
