//! Running a scenario in the simulator: build the system, run it for the scenario's
//! duration, collect the results (and the trace, when asked). The wall-clock time is
//! measured around the simulation only, for the speed figures `rtvmm` reports; it never
//! enters the results.

use std::io;
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use crate::{SimError, Simulation};
use rtvmm_core::Nanos;
use rtvmm_system::records::TraceEvent;
use rtvmm_system::results::{JobRow, RunResults};
use rtvmm_system::trace::{write_trace, TraceFormat, TraceNames};

use rtvmm_scenario::{Scenario, ScenarioError};

/// Why a scenario could not be simulated.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// It has an external domain ([`Scenario::simulable`]).
    #[error(transparent)]
    External(ScenarioError),
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// A recorded trace and the names that go with its numbers.
pub struct RecordedTrace {
    pub events: Vec<(Nanos, TraceEvent)>,
    pub names: TraceNames,
}

impl RecordedTrace {
    /// Writes the trace as Chrome/Perfetto JSON or CSV.
    pub fn write(&self, w: &mut impl io::Write, format: TraceFormat) -> io::Result<()> {
        write_trace(w, format, &self.events, &self.names)
    }
}

/// What a run keeps besides its results (each costs memory proportional to the run).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Record {
    /// Every scheduling event, for `--trace`.
    pub trace: bool,
    /// Every job, for `--jobs`.
    pub jobs: bool,
}

/// What one run produced.
pub struct Run {
    pub results: RunResults,
    /// `Some` when the run was asked for every job.
    pub jobs: Option<Vec<JobRow>>,
    /// `Some` when the run recorded its trace.
    pub trace: Option<RecordedTrace>,
    /// Wall-clock time of the simulation (building the system and running it).
    pub wall: Duration,
    /// `Some(t)` when the run was stopped at `t`, before the scenario's end (see
    /// [`run_with`]); the results then cover `[0, t]`.
    pub stopped_at: Option<Nanos>,
}

impl Run {
    /// Simulated time ÷ wall-clock time.
    pub fn speed(&self) -> f64 {
        let wall = self.wall.as_secs_f64();
        if wall > 0.0 {
            Nanos(self.results.duration_ns).as_secs_f64() / wall
        } else {
            f64::INFINITY
        }
    }
}

/// Runs `scenario` under its policy, seed and duration, keeping what `record` asks for.
/// A scenario with an external domain is refused ([`Scenario::simulable`]).
pub fn run(scenario: &Scenario, record: Record) -> Result<Run, RunError> {
    run_with(scenario, record, |_| ControlFlow::Continue(()))
}

/// Runs `scenario` as [`run`] does, calling `progress` with the simulated time every
/// [`crate::driver::PROGRESS_STEPS`] steps; when it returns `ControlFlow::Break(())`
/// the run stops there and everything is collected as for a run that long (see
/// [`Simulation::run_until_with`]). `rtvmm sim` draws its progress bar and handles Ctrl-C
/// with it; use [`Scenario::system`]'s `estimate_work` to decide whether a run is long.
pub fn run_with(
    scenario: &Scenario,
    record: Record,
    progress: impl FnMut(Nanos) -> ControlFlow<()>,
) -> Result<Run, RunError> {
    scenario.simulable().map_err(RunError::External)?;
    let started = Instant::now();
    let mut sim = Simulation::new(&scenario.system, scenario.seed, record.trace)?;
    // Without `jobs`, memory does not grow with the number of jobs: the results come from
    // the simulation's bounded statistics either way.
    sim.set_keep_jobs(record.jobs);
    let end = sim.run_until_with(scenario.duration, progress)?;
    let wall = started.elapsed();
    let results = sim.results(&scenario.name, scenario.seed, end);
    let jobs = sim.job_rows(end);
    let trace = record.trace.then(|| RecordedTrace {
        events: sim.take_trace(),
        names: sim.trace_names(),
    });
    Ok(Run {
        results,
        jobs,
        trace,
        wall,
        stopped_at: (end < scenario.duration).then_some(end),
    })
}
