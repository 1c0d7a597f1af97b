//! # rtvmm-experiments: the published evaluations as re-runnable procedures
//!
//! `rtvmm experiment NAME` re-runs one of the experiments of `docs/experiments.md` in the
//! simulator and writes to `--out DIR`: the raw numbers as CSV, one SVG and one PNG per
//! figure, the tables as Markdown, and a `report.md` listing the parameters, seed, wall
//! time, host, every table and every figure. `--quick` shrinks durations and sweeps so an
//! experiment runs in seconds.
//!
//! - [`experiments`]: the registry, one file per experiment.
//! - [`sweep`]: independent runs in parallel (rayon), progress reported to the caller's
//!   callback, a cancel flag that keeps what is done; results by run index, so the same
//!   seed gives the same CSV bytes.
//! - [`figures`]: the one rounding rule for every figure printed (half away from zero
//!   on the decimal value).
//! - [`files`]: output paths checked before anything runs, files written atomically.
//! - [`report`]: the [`report::Output`] an experiment writes through, and `report.md`.
//! - [`plot`]: line, bar and box charts as SVG + PNG.
//! - [`system`]: a server scenario under any policy (credit weights, SEDF slices), and
//!   running it.
//! - [`compare`]: `rtvmm compare A.json B.json`.
//! - [`driver`]: where runs happen — the simulator, or real time on this machine through
//!   a [`driver::RealTime`] the caller provides (`--host`).
//! - [`interfaces`]: domain interfaces from the analysis crate, as servers.
//! - [`generate`]: the generated scenarios of `rtvmm gen` (rtxen, csa, arinc, uunifast),
//!   which the Python package makes too.
//! - [`draws`]: `--seeds N`, several task-set draws: each draw's seed, the spread of a
//!   figure over the draws (mean, min–max, Student's t 95 % interval), and how often a
//!   finding holds.
//! - [`shard`]: `--shard I/N` runs one slice of an experiment's runs and keeps their
//!   results; [`merge`] runs the experiment's finish on the shards' results, which writes
//!   what the unsharded run writes.
//!
//! The library parses no flags, draws nothing and installs no signal handler: the `rtvmm`
//! binary owns flags (clap), the progress bar and SIGINT/SIGTERM, and passes
//! [`Options`] with a [`Cancel`] flag and a [`Progress`] callback.
//!
//! ```no_run
//! use rtvmm_experiments::{run_experiment, Options};
//!
//! let report = run_experiment("rtxen-overhead", &Options::quick("out/rtxen-overhead"))?;
//! println!("{}", report.summary());
//! # Ok::<(), rtvmm_experiments::ExperimentError>(())
//! ```

// Floors, lowest first: a module uses only the modules above it (checked by
// `tests/integration/layers.rs`); the modules of one floor do not use each other.
mod cancel;
pub mod figures;
pub mod files;
pub mod host;
pub mod shard;

pub mod draws;

pub mod error;

pub mod interfaces;
pub mod plot;
pub mod system;

pub mod driver;

pub mod options;

pub mod sweep;

pub mod report;

pub mod compare;
pub mod rtxen;

pub mod generate;

pub mod experiments;

pub mod scenario_sweep;
pub mod systems;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use driver::Driver;
pub use error::ExperimentError;
pub use options::{Cancel, Options, Progress, SweepEvent};
pub use report::{Output, Report};

/// Runs the experiment `name` with `options`: its runs, then its files and `report.md`
/// (see [`Output`]: written at the end, atomically, marked partial when interrupted).
/// An interrupted sweep ([`Options::cancel`]) still writes everything for the runs that
/// finished (see [`Report::interrupted`]).
pub fn run_experiment(name: &str, options: &Options) -> Result<Report, ExperimentError> {
    let experiment = experiments::find(name)?;
    let run = experiment
        .run
        .ok_or_else(|| ExperimentError::NotImplemented(experiment.name.to_string()))?;
    if let Driver::Host(host) = &options.driver {
        if !experiment.host {
            return Err(experiments::host_refused(experiment.name));
        }
        if !matches!(options.runs, shard::Runs::All) {
            return Err(ExperimentError::option(
                "--shard",
                "real-time runs (--host) do not shard yet",
            ));
        }
        if options.overheads.is_some() {
            return Err(ExperimentError::option(
                "--overhead",
                "models scheduler costs in the simulator; with --host the costs are \
                 measured, not modelled (drop one of the two)",
            ));
        }
        host.check().map_err(|e| ExperimentError::Host {
            run: None,
            message: e.message,
            refused: e.refused,
        })?;
    }
    let started = Instant::now();
    let description = match &options.driver {
        Driver::Simulate => experiment.description.to_string(),
        Driver::Host(_) => format!(
            "{}\n\n**This run: in real time on this machine (`--host`, the host executor)** — \
             every duration is real time, and the runs happened one after another.",
            experiment.description
        ),
    };
    // Workload files (`--workload`) are read, not drawn: one run of them.
    let full_draws = experiment.draws.filter(|_| options.workloads.is_empty());
    let draws = options.draws(experiment.name, full_draws)?;
    if draws == 1 {
        // One draw, with the run seed: the run as it always was.
        let mut output = Output::new(experiment.name, experiment.title, &description, options)?;
        output.name_draws(draws, options.default_draws(full_draws));
        run(&mut output)?;
        return output.finish(started.elapsed(), Some(host::HostInfo::probe()));
    }
    // Several draws: the whole procedure once per draw seed, then the draws as one.
    let per_draw: Vec<Options> = draws::draw_seeds(options.seed, draws)
        .into_iter()
        .map(|seed| Options {
            seed,
            ..options.clone()
        })
        .collect();
    let mut output = Output::new(experiment.name, experiment.title, &description, options)?;
    output.name_draws(draws, options.default_draws(full_draws));
    let base_parameters = output.parameter_count();
    for (k, draw_options) in per_draw.iter().enumerate() {
        output.begin_draw(k, draw_options);
        run(&mut output)?;
        output.end_draw(base_parameters);
    }
    output.options = options;
    output.combine_draws()?;
    output.finish(started.elapsed(), Some(host::HostInfo::probe()))
}

/// `rtvmm experiment merge OUT DIR…`: the shards in `shard_dirs` (each written by
/// `--shard I/N`, all N of them, each once) into `out`, as the unsharded run writes it:
/// the experiment's finish on the shards' results (see [`shard`]). `base` gives the
/// options that do not change results (jobs, cancel, progress); the others come from
/// the shards' manifests.
pub fn merge(
    out: &Path,
    shard_dirs: &[PathBuf],
    base: &Options,
) -> Result<Report, ExperimentError> {
    // Writing there would remove the shard's files (see `report::Output`).
    shard::refuse_out_among(out, shard_dirs)?;
    let shards = shard_dirs
        .iter()
        .map(|dir| shard::read_shard(dir))
        .collect::<Result<Vec<_>, _>>()?;
    let (experiment, result_options, replay) = shard::combine(shards)?;
    let mut options = base.clone().with_result_options(&result_options)?;
    options.out = out.to_path_buf();
    options.runs = shard::Runs::Replay(Arc::new(replay));
    run_experiment(&experiment, &options)
}
