//! Running a scenario in the simulator: build the system, run it for the scenario's
//! duration, collect the results (and the trace, when asked). The wall-clock time is
//! measured around the simulation only, for the speed figures `rtvmm` reports; it never
//! enters the results.

use std::io;
use std::ops::ControlFlow;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::{SimError, Simulation};
use rtvmm_core::Nanos;
use rtvmm_system::records::TraceEvent;
use rtvmm_system::results::{JobRow, RunResults};
use rtvmm_system::trace::{write_trace_marked, TraceFormat, TraceNames, TraceSpool};

use rtvmm_scenario::{Scenario, ScenarioError};

/// Why a scenario could not be simulated.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// It has an external domain ([`Scenario::simulable`]).
    #[error(transparent)]
    External(ScenarioError),
    #[error(transparent)]
    Sim(#[from] SimError),
    /// The streamed trace could not be kept (its temporary file).
    #[error("recording the trace: {0}")]
    Trace(io::Error),
}

/// A recorded trace and the names that go with its numbers.
pub struct RecordedTrace {
    pub events: TraceEvents,
    pub names: TraceNames,
}

/// A trace's events: in memory ([`run_with`]), or streamed out of it ([`run_streamed`]).
pub enum TraceEvents {
    Memory(Vec<(Nanos, TraceEvent)>),
    Spool(TraceSpool),
}

impl RecordedTrace {
    /// Writes the trace as Chrome/Perfetto JSON or CSV.
    pub fn write(&self, w: &mut impl io::Write, format: TraceFormat) -> io::Result<()> {
        self.write_marked(w, format, None)
    }

    /// Writes the trace, marked partial with `partial` (why and where the run stopped)
    /// when given ([`rtvmm_system::trace`]).
    pub fn write_marked(
        &self,
        w: &mut impl io::Write,
        format: TraceFormat,
        partial: Option<&str>,
    ) -> io::Result<()> {
        match &self.events {
            TraceEvents::Memory(events) => {
                write_trace_marked(w, format, events, &self.names, partial)
            }
            TraceEvents::Spool(spool) => spool.write(w, format, &self.names, partial),
        }
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
    run_recording(scenario, record, None, progress)
}

/// Runs `scenario` as [`run_with`] does, but a trace (when `record` asks for one) streams
/// into a [`TraceSpool`] whose temporary file goes in `spool_dir`, so that memory does not
/// grow with the run's length; it writes the same bytes. `rtvmm sim --trace` runs this
/// way, with the trace's own directory.
pub fn run_streamed(
    scenario: &Scenario,
    record: Record,
    spool_dir: &Path,
    progress: impl FnMut(Nanos) -> ControlFlow<()>,
) -> Result<Run, RunError> {
    run_recording(scenario, record, Some(spool_dir), progress)
}

fn run_recording(
    scenario: &Scenario,
    record: Record,
    spool_dir: Option<&Path>,
    progress: impl FnMut(Nanos) -> ControlFlow<()>,
) -> Result<Run, RunError> {
    scenario.simulable().map_err(RunError::External)?;
    let started = Instant::now();
    let mut sim = Simulation::new(&scenario.system, scenario.seed, record.trace)?;
    if let (true, Some(dir)) = (record.trace, spool_dir) {
        sim.stream_trace(TraceSpool::new(dir));
    }
    // Without `jobs`, memory does not grow with the number of jobs: the results come from
    // the simulation's bounded statistics either way.
    sim.set_keep_jobs(record.jobs);
    let end = sim.run_until_with(scenario.duration, progress)?;
    let wall = started.elapsed();
    let results = sim.results(&scenario.name, scenario.seed, end);
    let jobs = sim.job_rows(end);
    let trace = match (record.trace, sim.take_trace_spool()) {
        (false, _) => None,
        (true, Some(mut spool)) => {
            spool.finish().map_err(RunError::Trace)?;
            Some(RecordedTrace {
                events: TraceEvents::Spool(spool),
                names: sim.trace_names(),
            })
        }
        (true, None) => Some(RecordedTrace {
            events: TraceEvents::Memory(sim.take_trace()),
            names: sim.trace_names(),
        }),
    };
    Ok(Run {
        results,
        jobs,
        trace,
        wall,
        stopped_at: (end < scenario.duration).then_some(end),
    })
}
