//! `rtvmm sweep DIR` and `rtvmm sweep merge OUT DIR…`: the flags, where the table goes,
//! the progress bar and the signals. The sweep itself is
//! `rtvmm_experiments::scenario_sweep`'s.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use anyhow::Context;
use clap::Args;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_experiments::files;
use rtvmm_experiments::scenario_sweep::{self, Mode, SweepFiles, SweepOptions, SweepReport};
use rtvmm_experiments::shard::Runs;
use rtvmm_experiments::{Cancel, ExperimentError, Options};

use crate::{experiment_failure, print, runtime, signals, Failure};

/// `rtvmm sweep DIR`.
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct SweepArgs {
    /// The directory: every *.toml file directly in it (not in its subdirectories), in
    /// name order; or `merge` to merge shards (`merge OUT DIR…`; a directory named
    /// merge is ./merge)
    pub dir: PathBuf,
    /// `merge` only: the table to write, then every shard's directory
    #[arg(value_name = "OUT DIR")]
    pub paths: Vec<PathBuf>,
    /// sim (simulate each file, the default) or analyze (the compositional analysis)
    #[arg(long, value_parser = parse_mode)]
    pub mode: Option<Mode>,
    /// Run every file under this policy instead of its own (name or alias)
    #[arg(long, value_parser = crate::parse_policy)]
    pub policy: Option<PolicyKind>,
    /// sim: simulated time instead of each file's (with a unit: 10s, 500ms)
    #[arg(long, value_parser = crate::parse_time)]
    pub duration: Option<Nanos>,
    /// sim: seed instead of each file's
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the table (CSV) here instead of to standard output; with --shard, the
    /// shard's directory
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Run only shard I of N (1 ≤ I ≤ N): a fixed, balanced N-th of the files; its results
    /// and manifest go to the --out directory, and `rtvmm sweep merge OUT DIR…` turns the
    /// N shards into the unsharded table
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Stop at the first file that cannot be read, checked or run (exit 2, or 1 for a
    /// failed run) instead of giving it an `error: …` row and going on
    #[arg(long)]
    pub fail_fast: bool,
    /// Worker threads (0 = one per core)
    #[arg(long, short = 'j', default_value_t = 0)]
    pub jobs: usize,
    /// Do not draw the progress bar
    #[arg(long)]
    pub no_progress: bool,
}

fn parse_mode(text: &str) -> Result<Mode, String> {
    Mode::parse(text).map_err(|e| e.to_string())
}

impl SweepArgs {
    fn options(&self) -> SweepOptions {
        SweepOptions {
            mode: self.mode.unwrap_or_default(),
            policy: self.policy,
            duration: self.duration,
            seed: self.seed,
        }
    }

    fn is_merge(&self) -> bool {
        self.dir == Path::new("merge")
    }
}

fn usage(problem: impl Into<String>) -> Failure {
    experiment_failure(ExperimentError::option("sweep", problem))
}

/// `rtvmm sweep DIR` or `rtvmm sweep merge OUT DIR…`. SIGINT and SIGTERM stop the sweep
/// as they stop an experiment: the files that finished are written, marked partial, and
/// the exit code is 128 + the signal's number.
pub fn run(args: &SweepArgs) -> Result<(), Failure> {
    if args.is_merge() {
        return merge(args);
    }
    if let Some(extra) = args.paths.first() {
        return Err(usage(format!(
            "unexpected argument '{}' (only `merge OUT DIR…` takes more than one directory)",
            extra.display()
        )));
    }
    let options = args.options();
    options.check().map_err(experiment_failure)?;
    let runs = match &args.shard {
        None => Runs::All,
        Some(text) => Runs::Shard(
            text.parse()
                .map_err(|e: rtvmm_experiments::shard::ShardError| experiment_failure(e.into()))?,
        ),
    };
    match (&runs, &args.out) {
        (Runs::Shard(_), None) => {
            return Err(usage(
                "--shard writes the shard's results and manifest: give --out DIR",
            ))
        }
        (Runs::All, Some(out)) => {
            files::check_outputs(&[], &[out]).map_err(|e| experiment_failure(e.into()))?
        }
        _ => {}
    }
    let swept = SweepFiles::scan(&args.dir).map_err(experiment_failure)?;
    if !swept.skipped.is_empty() {
        const SHOWN: usize = 5;
        let mut names = swept.skipped[..swept.skipped.len().min(SHOWN)].join(", ");
        if swept.skipped.len() > SHOWN {
            names.push_str(&format!(", … ({} more)", swept.skipped.len() - SHOWN));
        }
        let (n, entries) = match swept.skipped.len() {
            1 => (1, "entry that is not a *.toml file"),
            n => (n, "entries that are not *.toml files"),
        };
        eprintln!(
            "warning: {}: skipped {n} {entries}: {names}",
            args.dir.display()
        );
    }
    if swept.files.is_empty() {
        return Err(experiment_failure(ExperimentError::option(
            "sweep",
            format!("{}: no *.toml scenario file in it", args.dir.display()),
        )));
    }
    let cancel = Cancel::new();
    let which = signals::install(&cancel.flag(), |name| {
        eprintln!(
            "\nrtvmm: {name}: stopping the runs in progress (they are dropped), skipping the \
             rest, then writing what is done (marked partial); {name} again stops at once"
        )
    })
    .context("installing the SIGINT/SIGTERM handlers")
    .map_err(runtime)?;
    let mut base = Options::new(args.out.clone().unwrap_or_default());
    base.jobs = args.jobs;
    base.cancel = cancel;
    base.progress = crate::experiment::progress(args.no_progress);
    base.runs = runs;
    let report = scenario_sweep::run_sweep(&swept, &options, args.fail_fast, &base)
        .map_err(experiment_failure)?;
    let mut text = report.summary();
    match (&report.shard, &args.out) {
        (Some(_), Some(dir)) => {
            text.push_str(&format!(
                "\nshard: {}; merge every shard with `rtvmm sweep merge OUT DIR…`\n",
                dir.display()
            ));
            print(&text)?;
        }
        (None, Some(out)) => {
            write_table(&report, out)?;
            print(&format!("{text}\ntable: {}\n", out.display()))?;
        }
        (_, None) => {
            print(&String::from_utf8_lossy(
                &report.csv(Path::new("-")).map_err(experiment_failure)?,
            ))?;
            eprintln!("{text}");
        }
    }
    if report.interrupted() {
        let signal = match which.load(Ordering::SeqCst) {
            0 => signal_hook::consts::SIGINT,
            s => s as i32,
        };
        eprintln!("rtvmm: interrupted: the files that finished are written, marked partial");
        return Err(Failure::Interrupted { signal });
    }
    Ok(())
}

fn write_table(report: &SweepReport, out: &Path) -> Result<(), Failure> {
    let bytes = report.csv(out).map_err(experiment_failure)?;
    files::write_file(out, &bytes).map_err(runtime)
}

/// `rtvmm sweep merge OUT DIR…`.
fn merge(args: &SweepArgs) -> Result<(), Failure> {
    let changes_results = args.mode.is_some()
        || args.policy.is_some()
        || args.duration.is_some()
        || args.seed.is_some();
    if changes_results {
        return Err(usage(
            "merge takes the options that change results from the shards' manifests; only \
             OUT and the shards' directories apply",
        ));
    }
    let (out, dirs) = match args.paths.as_slice() {
        [out, dirs @ ..] if !dirs.is_empty() && args.shard.is_none() && args.out.is_none() => {
            (out, dirs.to_vec())
        }
        _ => {
            return Err(usage(
                "usage: rtvmm sweep merge OUT DIR… (the table to write, then the shards' \
                 directories)",
            ))
        }
    };
    files::check_outputs(&[], &[out]).map_err(|e| experiment_failure(e.into()))?;
    let report = scenario_sweep::merge_sweep(out, &dirs).map_err(experiment_failure)?;
    write_table(&report, out)?;
    print(&format!(
        "{}\nmerged {} shards; table: {}\n",
        report.summary(),
        dirs.len(),
        out.display()
    ))
}
