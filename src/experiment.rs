//! `rtvmm experiment NAME|list|all`: the flags, their options, the progress bar and the
//! signals. The experiments themselves are `rtvmm_experiments`' (which draws nothing and
//! installs no handler: it takes a cancel flag and a progress callback).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rtvmm_experiments::driver::{Driver, RealTime};
use rtvmm_experiments::experiments::{self, REGISTRY};
use rtvmm_experiments::options::{parse_duration, parse_overheads, parse_policies, DEFAULT_SEED};
use rtvmm_experiments::shard::Runs;
use rtvmm_experiments::{files, plot, Cancel, ExperimentError, Options, Progress, SweepEvent};

use crate::{experiment_failure, print, runtime, signals, Failure};

/// `rtvmm experiment NAME|list|all`.
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct ExperimentArgs {
    /// The experiment to run, `list` to describe them all, `all` to run every
    /// implemented one (each into OUT/NAME), or `merge` to merge shards (`merge OUT
    /// DIR…`).
    pub name: String,
    /// `merge` only: the output directory, then every shard's directory.
    #[arg(value_name = "OUT DIR")]
    pub paths: Vec<PathBuf>,
    /// Output directory [default: results/NAME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Scaled-down durations and sweeps that finish in seconds.
    #[arg(long)]
    pub quick: bool,
    /// Run seed (task sets and job draws derive from it).
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Task-set draws, for the experiments that generate task sets (each one's default:
    /// `experiment list`; 1 with --quick): the whole procedure once per draw, draw k
    /// seeded from --seed and k, and the report over the draws (mean, min–max, 95 %
    /// interval; each finding as "holds in k of N draws"). --seeds 1 is the single draw
    /// of --seed.
    #[arg(long, value_name = "N")]
    pub seeds: Option<usize>,
    /// Simulated length of each run, with a unit (e.g. 30s, 500ms).
    #[arg(long)]
    pub duration: Option<String>,
    /// Comma-separated policies to run instead of the experiment's own list.
    #[arg(long)]
    pub policies: Option<String>,
    /// Scheduler overhead costs: a preset (none, xen, host) or DO_SCHEDULE,SWITCH with
    /// units (e.g. 150ns,1.5us).
    #[arg(long)]
    pub overhead: Option<String>,
    /// rtxen-*: start every domain's VCPU and tasks at time 0 (the synchronous worst case)
    /// instead of at boot offsets drawn from the seed.
    #[arg(long)]
    pub in_phase: bool,
    /// csa-arinc: run this workload file (repeatable) instead of the generated suite — the
    /// route for the published avionics tables.
    #[arg(long = "workload", value_name = "FILE")]
    pub workloads: Vec<PathBuf>,
    /// Worker threads (0 = one per core).
    #[arg(long, short = 'j', default_value_t = 0)]
    pub jobs: usize,
    /// Run only shard I of N (1 ≤ I ≤ N): a fixed, balanced N-th of the experiment's
    /// runs; the shard's results and manifest go to --out, and `rtvmm experiment merge
    /// OUT DIR…` turns the N shards into what the unsharded run writes.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,
    /// Do not draw the progress bar.
    #[arg(long)]
    pub no_progress: bool,
    /// rtxen-overhead, rtxen-isolation: run in real time on this machine (the host
    /// executor; Linux, root) instead of simulating. One run at a time, each taking its
    /// duration of real time: rtxen-overhead 7 runs × 10 s (about 75 s; --quick 7 × 1 s,
    /// about 10 s), rtxen-isolation 14 runs × 2 min (about 28 min; --quick 14 × 2 s, about
    /// 35 s). Ctrl-C stops the run in progress and writes the finished ones, marked partial
    #[arg(long)]
    pub host: bool,
    /// With --host: the managed cpu (default: the last one)
    #[arg(long, requires = "host")]
    pub cpu: Option<usize>,
    /// With --host: how domains are stopped — freeze (cgroup v2, the default), band
    /// (SCHED_FIFO priority band) or signal (SIGSTOP/SIGCONT)
    #[arg(long, requires = "host", value_name = "BACKEND")]
    pub enforce: Option<String>,
    /// With --host: run without the real-time privileges that are missing; every result
    /// is labelled not real-time
    #[arg(long, requires = "host")]
    pub best_effort: bool,
}

impl ExperimentArgs {
    /// The options for experiment `name` (its output directory: `--out`, `--out/NAME`
    /// under `all`, or `results/NAME`).
    pub fn options(&self, name: &str) -> Result<Options, ExperimentError> {
        let out = match (&self.out, self.name.as_str()) {
            (Some(dir), "all") => dir.join(name),
            (Some(dir), _) => dir.clone(),
            (None, _) => PathBuf::from("results").join(name),
        };
        let mut options = Options::new(out);
        options.quick = self.quick;
        options.seed = self.seed;
        options.seeds = self.seeds;
        // `all --seeds N`: N draws of each experiment that draws task sets; the others run
        // once, as always.
        if self.name == "all" && self.seeds.is_some_and(|n| n > 1) {
            let draws = experiments::find(name).ok().and_then(|e| e.draws);
            if draws.is_none() {
                options.seeds = None;
            }
        }
        options.in_phase = self.in_phase;
        options.jobs = self.jobs;
        options.workloads = self.workloads.clone();
        if let Some(d) = &self.duration {
            options.duration = Some(parse_duration(d)?);
        }
        if let Some(p) = &self.policies {
            options.policies = Some(parse_policies(p)?);
        }
        if let Some(o) = &self.overhead {
            options.overheads = Some(parse_overheads(o)?);
        }
        if let Some(shard) = &self.shard {
            options.runs = Runs::Shard(shard.parse()?);
        }
        if self.host {
            options.driver = Driver::Host(self.real_time()?);
        }
        Ok(options)
    }

    /// Whether a flag that changes results was given (`merge` takes them from the
    /// shards).
    fn changes_results(&self) -> bool {
        self.quick
            || self.seed != DEFAULT_SEED
            || self.seeds.is_some()
            || self.duration.is_some()
            || self.policies.is_some()
            || self.overhead.is_some()
            || self.in_phase
            || !self.workloads.is_empty()
            || self.host
    }

    /// The host executor as the experiments' real-time driver.
    #[cfg(target_os = "linux")]
    fn real_time(&self) -> Result<Arc<dyn RealTime>, ExperimentError> {
        let backend = match &self.enforce {
            None => rtvmm_host::enforce::Backend::Freeze,
            Some(name) => crate::host::parse_backend(name)
                .map_err(|problem| ExperimentError::option("--enforce", problem))?,
        };
        let host = crate::host::ExperimentHost::new(self.cpu, backend, self.best_effort)
            .map_err(|e| ExperimentError::option("--host", e))?;
        Ok(Arc::new(host))
    }

    #[cfg(not(target_os = "linux"))]
    fn real_time(&self) -> Result<Arc<dyn RealTime>, ExperimentError> {
        Err(ExperimentError::option(
            "--host",
            "the host executor runs on Linux only; this build has none",
        ))
    }
}

/// A progress bar on standard error (only when it is a terminal), one sweep at a time.
fn progress_bar() -> Progress {
    let bar: Mutex<Option<ProgressBar>> = Mutex::new(None);
    Progress(Arc::new(move |event| {
        let mut bar = bar.lock().unwrap_or_else(|e| e.into_inner());
        match event {
            SweepEvent::Started { label, total } => {
                let b =
                    ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr());
                b.set_style(
                    ProgressStyle::with_template(
                        "{msg:>16} [{bar:32}] {pos}/{len} runs · {elapsed_precise} elapsed · \
                         ETA {eta}",
                    )
                    .expect("valid template")
                    .progress_chars("=> "),
                );
                b.set_message(label.to_string());
                b.enable_steady_tick(Duration::from_millis(250));
                *bar = Some(b);
            }
            SweepEvent::RunDone { done, .. } => {
                if let Some(b) = bar.as_ref() {
                    b.set_position(done as u64);
                }
            }
            SweepEvent::Ended { .. } => {
                if let Some(b) = bar.take() {
                    b.finish_and_clear();
                }
            }
        }
    }))
}

/// For the tests of the signal path: `RTVMM_TEST_RAISE=SIGTERM:N` (or `SIGINT:N`) makes
/// the process send itself that signal once N runs have finished.
fn test_raise() -> Option<(i32, usize)> {
    let spec = std::env::var("RTVMM_TEST_RAISE").ok()?;
    let (name, after) = spec.split_once(':')?;
    let signal = match name {
        "SIGINT" => signal_hook::consts::SIGINT,
        "SIGTERM" => signal_hook::consts::SIGTERM,
        _ => return None,
    };
    Some((signal, after.parse().ok()?))
}

/// The progress callback of a run: the bar (unless `--no-progress` or stderr is not a
/// terminal) and the test hook, either, both or neither. `rtvmm sweep`'s too.
pub(crate) fn progress(no_progress: bool) -> Option<Progress> {
    let bar = (!no_progress && std::io::stderr().is_terminal()).then(progress_bar);
    let raise = test_raise();
    if bar.is_none() && raise.is_none() {
        return None;
    }
    Some(Progress(Arc::new(move |event| {
        if let Some(bar) = &bar {
            (bar.0)(event);
        }
        if let (Some((signal, after)), SweepEvent::RunDone { finished, .. }) = (raise, event) {
            if finished == after {
                let _ = signal_hook::low_level::raise(signal);
            }
        }
    })))
}

/// `rtvmm experiment NAME|list|all`. SIGINT and SIGTERM set the cancel flag: runs in
/// progress stop within moments and are dropped, the rest are skipped, what finished is
/// written and marked partial,
/// and the exit code is 128 + the signal's number (a second signal stops at once). Every
/// output directory is created and proven writable, and the font found, before the first
/// run.
pub fn run(args: &ExperimentArgs) -> Result<(), Failure> {
    if args.name != "merge" && !args.paths.is_empty() {
        return Err(experiment_failure(ExperimentError::option(
            "experiment",
            format!(
                "unexpected argument '{}' (only `merge OUT DIR…` takes directories)",
                args.paths[0].display()
            ),
        )));
    }
    if args.name == "list" {
        return print(&experiments::list());
    }
    if args.name == "merge" && args.changes_results() {
        return Err(experiment_failure(ExperimentError::option(
            "merge",
            "takes the options that change results from the shards' manifests; only -j and \
             --no-progress apply",
        )));
    }
    if args.name == "merge" && (args.paths.len() < 2 || args.shard.is_some() || args.out.is_some())
    {
        return Err(experiment_failure(ExperimentError::option(
            "merge",
            "usage: rtvmm experiment merge OUT DIR… (the shards' directories; the options \
             come from their manifests)",
        )));
    }
    if args.host && args.name == "all" {
        return Err(experiment_failure(ExperimentError::option(
            "--host",
            format!(
                "only {} run on the host; `all` runs the others too (run those by name)",
                experiments::host_experiments().join(" and ")
            ),
        )));
    }
    let cancel = Cancel::new();
    let stop: Arc<AtomicBool> = cancel.flag();
    let host = args.host;
    let which = signals::install(&stop, move |name| {
        let now = if host {
            "stopping the real-time run in progress (it is dropped)"
        } else {
            "stopping the runs in progress (they are dropped)"
        };
        eprintln!(
            "\nrtvmm: {name}: {now}, skipping the rest, then writing what is done (marked \
             partial); {name} again stops at once"
        )
    })
    .context("installing the SIGINT/SIGTERM handlers")
    .map_err(runtime)?;
    let progress = progress(args.no_progress);
    let options = |name: &str| -> Result<Options, ExperimentError> {
        let mut o = args.options(name)?;
        o.cancel = cancel.clone();
        o.progress = progress.clone();
        Ok(o)
    };
    let mut text = String::new();
    let mut interrupted = false;
    if args.name == "all" {
        let all: Vec<_> = REGISTRY.iter().filter(|e| e.run.is_some()).collect();
        plot::ensure_font().map_err(experiment_failure)?;
        for e in &all {
            files::prepare_dir(&options(e.name).map_err(experiment_failure)?.out)
                .map_err(|e| experiment_failure(e.into()))?;
        }
        for e in all {
            if cancel.is_cancelled() {
                interrupted = true;
                break;
            }
            let report = rtvmm_experiments::run_experiment(
                e.name,
                &options(e.name).map_err(experiment_failure)?,
            )
            .map_err(experiment_failure)?;
            interrupted |= report.interrupted();
            text.push_str(&report.summary());
            text.push('\n');
        }
    } else if args.name == "merge" {
        let mut base = Options::new(&args.paths[0]);
        base.jobs = args.jobs;
        base.cancel = cancel.clone();
        base.progress = progress.clone();
        let report = rtvmm_experiments::merge(&args.paths[0], &args.paths[1..], &base)
            .map_err(experiment_failure)?;
        interrupted = report.interrupted();
        text = report.summary();
    } else {
        let name = args.name.as_str();
        let report =
            rtvmm_experiments::run_experiment(name, &options(name).map_err(experiment_failure)?)
                .map_err(experiment_failure)?;
        interrupted = report.interrupted();
        text = report.summary();
    }
    print(&text)?;
    if interrupted {
        let signal = match which.load(Ordering::SeqCst) {
            0 => signal_hook::consts::SIGINT,
            s => s as i32,
        };
        eprintln!("rtvmm: interrupted: the runs that finished are written, marked partial");
        return Err(Failure::Interrupted { signal });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use rtvmm_core::policy::PolicyKind;
    use rtvmm_core::Nanos;

    #[derive(Parser, Debug)]
    struct TestCli {
        #[command(flatten)]
        args: ExperimentArgs,
    }

    #[test]
    fn experiment_args_parse_into_options() {
        let cli = TestCli::try_parse_from([
            "rtvmm",
            "rtxen-capacity",
            "--quick",
            "--seed",
            "9",
            "--duration",
            "2s",
            "--policies",
            "ds,credit",
            "--overhead",
            "host",
            "--in-phase",
            "-j",
            "1",
        ])
        .unwrap();
        let o = cli.args.options("rtxen-capacity").unwrap();
        assert!(o.quick);
        assert_eq!(o.seed, 9);
        assert_eq!(o.duration, Some(Nanos::from_secs(2)));
        assert_eq!(
            o.policies,
            Some(vec![PolicyKind::Deferrable, PolicyKind::Credit])
        );
        assert_eq!(o.out, PathBuf::from("results/rtxen-capacity"));
        assert_eq!(o.jobs, 1);
        assert!(o.in_phase);
        let all = TestCli::try_parse_from(["rtvmm", "all", "--out", "o"]).unwrap();
        assert_eq!(
            all.args.options("csa-etf").unwrap().out,
            PathBuf::from("o/csa-etf")
        );
        let zero = TestCli::try_parse_from(["rtvmm", "x", "--duration", "0s"]).unwrap();
        assert!(zero.args.options("x").is_err());
        // `all --seeds 3`: three draws of an experiment that draws task sets, one run of
        // the others.
        let all = TestCli::try_parse_from(["rtvmm", "all", "--seeds", "3"]).unwrap();
        assert_eq!(all.args.options("rtxen-capacity").unwrap().seeds, Some(3));
        assert_eq!(all.args.options("rtxen-quantum").unwrap().seeds, None);
        let one = TestCli::try_parse_from(["rtvmm", "rtxen-quantum", "--seeds", "3"]).unwrap();
        assert_eq!(one.args.options("rtxen-quantum").unwrap().seeds, Some(3));
    }
}
