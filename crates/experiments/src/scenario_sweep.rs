//! `rtvmm sweep DIR`: every scenario file of a directory simulated (or analysed) with the
//! same overrides, into one results table; sharded with `--shard I/N` and merged with
//! `rtvmm sweep merge OUT DIR…` as an experiment is.
//!
//! # Design note
//! - **Which files.** The `*.toml` files directly in `DIR` (not below it), in byte order of
//!   their names: the runs of the sweep, numbered from 0. Anything else there — other
//!   files, subdirectories, names that are not UTF-8 — is skipped and listed
//!   ([`SweepFiles::skipped`]; the command line warns), so a directory holding a README
//!   or a `gen` shard's manifest sweeps as it is.
//! - **One table, tidy.** One row per file and domain, in file order then the scenario's
//!   domain order; the first columns (`file`, `status`) say which file and whether it
//!   ran. A file that cannot be read, checked or run is one row with `status` `error:
//!   <reason>` and the other cells empty; the sweep goes on (`fail_fast` stops at the
//!   first such file instead). Every cell is a pure function of the file and the options
//!   (no wall time, no path of `DIR`: messages name the file by its name), so the same
//!   directory gives the same bytes on any machine, for any thread count.
//! - **Runs.** The files run in parallel through [`crate::sweep::sweep`], which returns
//!   results by run index and reads the cancel flag: a signal skips the files not
//!   started, stops the simulations in progress (dropped), and the table holds the
//!   files that finished under a first line `# partial: interrupted after N of M files`.
//! - **Shards.** A shard runs [`Shard::runs_of_sweep`]'s slice of the files and stores each
//!   file's outcome (its rows, as text) in [`SHARD_RUNS`] with a manifest ([`SHARD_MANIFEST`]:
//!   the options, the rtvmm version, a digest of every file's name and bytes, the shard,
//!   its status). `merge` checks the shards as every merge does ([`shard::check_set`]) and
//!   writes the stored rows in file order: the unsharded run's bytes, since the rows are
//!   the same text.

use std::path::{Path, PathBuf};

use rtvmm_analyze as analyze;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_scenario::Scenario;
use serde::{Deserialize, Serialize};

use crate::cancel::is_current_cancelled;
use crate::files;
use crate::options::Options;
use crate::report::csv_bytes;
use crate::shard::{self, run_key, Runs, Shard, ShardHead, StoredRun, SHARD_MANIFEST, SHARD_RUNS};
use crate::sweep::{sweep, RunCounter};
use crate::ExperimentError;

/// What each file goes through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Simulated for its duration (`rtvmm sim`).
    #[default]
    Sim,
    /// The compositional analysis (`rtvmm analyze`).
    Analyze,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Sim => "sim",
            Mode::Analyze => "analyze",
        }
    }

    /// `sim` or `analyze`.
    pub fn parse(text: &str) -> Result<Mode, ExperimentError> {
        match text {
            "sim" => Ok(Mode::Sim),
            "analyze" => Ok(Mode::Analyze),
            _ => Err(ExperimentError::option(
                "--mode",
                format!("'{text}': expected sim or analyze"),
            )),
        }
    }

    /// The table's header.
    pub fn header(self) -> Vec<String> {
        let columns: &[&str] = match self {
            Mode::Sim => &[
                "file",
                "status",
                "policy",
                "seed",
                "duration_ns",
                "domain",
                "jobs",
                "missed",
                "in_flight",
                "deadline_miss_ratio",
                "max_response_ns",
            ],
            Mode::Analyze => &[
                "file",
                "status",
                "policy",
                "system_schedulable",
                "domain",
                "period_ns",
                "budget_ns",
                "bandwidth",
                "utilization",
                "schedulable",
            ],
        };
        columns.iter().map(|c| c.to_string()).collect()
    }
}

/// Every option that changes a sweep's results.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepOptions {
    pub mode: Mode,
    /// Instead of each file's policy.
    pub policy: Option<PolicyKind>,
    /// `sim` only: instead of each file's duration.
    pub duration: Option<Nanos>,
    /// `sim` only: instead of each file's seed.
    pub seed: Option<u64>,
}

impl SweepOptions {
    /// Refuses what does not apply to the mode, naming the flag.
    pub fn check(&self) -> Result<(), ExperimentError> {
        if self.mode == Mode::Analyze {
            for (flag, given) in [
                ("--duration", self.duration.is_some()),
                ("--seed", self.seed.is_some()),
            ] {
                if given {
                    return Err(ExperimentError::option(
                        flag,
                        "applies to --mode sim only (the analysis runs nothing)",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Each option's flag and value, as a shard's manifest stores them.
    fn fields(&self) -> Vec<(String, String)> {
        let or_file = |v: Option<String>| v.unwrap_or_else(|| "(the file's)".to_string());
        vec![
            ("--mode".into(), self.mode.name().into()),
            (
                "--policy".into(),
                or_file(self.policy.map(|p| p.name().to_string())),
            ),
            (
                "--duration".into(),
                or_file(self.duration.map(|d| d.to_string())),
            ),
            ("--seed".into(), or_file(self.seed.map(|s| s.to_string()))),
        ]
    }
}

/// The files of a sweep's directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepFiles {
    pub dir: PathBuf,
    /// The `*.toml` file names, sorted: the sweep's runs.
    pub files: Vec<String>,
    /// Everything else in the directory (a subdirectory's name ends in `/`), sorted.
    pub skipped: Vec<String>,
    /// FNV-1a (64 bits) over every file's name and bytes: two shards with the same
    /// digest swept the same files.
    pub digest: u64,
}

impl SweepFiles {
    /// Reads `dir`: which files the sweep takes, and their digest.
    pub fn scan(dir: &Path) -> Result<SweepFiles, ExperimentError> {
        let entries = std::fs::read_dir(dir).map_err(|e| ExperimentError::read(dir, e))?;
        let mut files = Vec::new();
        let mut skipped = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| ExperimentError::read(dir, e))?;
            let path = entry.path();
            let name = entry.file_name();
            let Some(name) = name.to_str().map(str::to_string) else {
                skipped.push(name.to_string_lossy().into_owned());
                continue;
            };
            // Through a symbolic link: a link to a scenario file is one.
            let is_file = std::fs::metadata(&path).is_ok_and(|m| m.is_file());
            if is_file && name.ends_with(".toml") {
                files.push(name);
            } else if path.is_dir() {
                skipped.push(format!("{name}/"));
            } else {
                skipped.push(name);
            }
        }
        files.sort();
        skipped.sort();
        let mut digest = Fnv::default();
        for name in &files {
            // Within the input size limit. A file that cannot be read is digested by its
            // error, and its run says why in its row.
            let bytes = rtvmm_system::input::read_bytes(&dir.join(name))
                .unwrap_or_else(|e| format!("unreadable: {e}").into_bytes());
            digest.write(name.as_bytes());
            digest.write(&[0]);
            digest.write(&bytes);
            digest.write(&[0]);
        }
        Ok(SweepFiles {
            dir: dir.to_path_buf(),
            files,
            skipped,
            digest: digest.0,
        })
    }

    /// What a refusal to merge names: how many files and their digest.
    fn identity(&self) -> String {
        format!("{} files, digest {:016x}", self.files.len(), self.digest)
    }
}

/// FNV-1a, 64 bits: a fixed, portable digest (not a defence against anyone; it tells two
/// directories apart).
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// What became of one file: its rows, and what the summary counts.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FileOutcome {
    pub rows: Vec<Vec<String>>,
    /// The reason, when it could not be read, checked or run.
    pub error: Option<String>,
    /// `sim`: its jobs and missed deadlines, over all domains.
    pub jobs: u64,
    pub missed: u64,
    /// `analyze`: the system verdict.
    pub schedulable: Option<bool>,
}

/// Why one file failed: the reason, and whether the file is at fault (it cannot be read
/// or is not a valid scenario) rather than the run.
struct Failure {
    message: String,
    bad_input: bool,
}

/// Runs one file.
fn evaluate(path: &Path, name: &str, options: &SweepOptions) -> Result<FileOutcome, Failure> {
    // Messages name the file by its name alone: the table is the same wherever DIR is.
    let shown = path.display().to_string();
    // One line: a row is one line of the table.
    let fail = |bad_input: bool, e: &dyn std::fmt::Display| Failure {
        message: e.to_string().replace(&shown, name).replace('\n', " "),
        bad_input,
    };
    match options.mode {
        Mode::Sim => {
            let scenario = Scenario::load(path)
                .and_then(|s| s.with_overrides(options.policy, options.duration, options.seed))
                .map_err(|e| fail(true, &e))?;
            scenario.simulable().map_err(|e| fail(true, &e))?;
            let run = rtvmm_sim::run::run_with(&scenario, Default::default(), |_| {
                if is_current_cancelled() {
                    std::ops::ControlFlow::Break(())
                } else {
                    std::ops::ControlFlow::Continue(())
                }
            })
            .map_err(|e| fail(false, &e))?;
            if run.stopped_at.is_some() {
                return Err(Failure {
                    message: STOPPED.to_string(),
                    bad_input: false,
                });
            }
            Ok(sim_outcome(name, &run.results))
        }
        Mode::Analyze => {
            let input = analyze::Input::load(path).map_err(|e| fail(true, &e))?;
            let analysis = analyze::Options {
                policy: options.policy,
                ..analyze::Options::default()
            };
            let report = analyze::analyze(&input, &analysis).map_err(|e| fail(true, &e))?;
            Ok(analyze_outcome(name, &report))
        }
    }
}

/// The reason of a run stopped by the cancel flag (dropped, never written).
const STOPPED: &str = "stopped";

fn sim_outcome(name: &str, results: &rtvmm_system::results::RunResults) -> FileOutcome {
    let cells = results.domains.iter().map(|d| {
        vec![
            results.policy.clone(),
            results.seed.to_string(),
            results.duration_ns.to_string(),
            d.name.clone(),
            d.jobs.to_string(),
            d.missed.to_string(),
            d.in_flight.to_string(),
            d.deadline_miss_ratio.to_string(),
            d.response_ns.max.to_string(),
        ]
    });
    FileOutcome {
        rows: ok_rows(Mode::Sim, name, cells),
        error: None,
        jobs: results.jobs,
        missed: results.missed,
        schedulable: None,
    }
}

fn analyze_outcome(name: &str, report: &analyze::Report) -> FileOutcome {
    let opt = |v: Option<u64>| v.map(|x| x.to_string()).unwrap_or_default();
    let cells = report.domains.iter().map(|d| {
        vec![
            report.policy.name().to_string(),
            report.schedulable.to_string(),
            d.name.clone(),
            opt(d.period_ns),
            opt(d.budget_ns),
            d.bandwidth.to_string(),
            d.utilization.to_string(),
            d.schedulable.to_string(),
        ]
    });
    FileOutcome {
        rows: ok_rows(Mode::Analyze, name, cells),
        error: None,
        jobs: 0,
        missed: 0,
        schedulable: Some(report.schedulable),
    }
}

/// The rows of a file that ran, one per domain: `file`, `ok`, then the domain's `cells`;
/// a scenario of no domain is still one row.
fn ok_rows(mode: Mode, name: &str, cells: impl Iterator<Item = Vec<String>>) -> Vec<Vec<String>> {
    let mut rows: Vec<Vec<String>> = cells
        .map(|cells| [vec![name.to_string(), "ok".to_string()], cells].concat())
        .collect();
    if rows.is_empty() {
        rows.push(status_row(mode, name, "ok"));
    }
    rows
}

/// A row with only the file and its status, the other cells empty.
fn status_row(mode: Mode, name: &str, status: &str) -> Vec<String> {
    let mut row = vec![String::new(); mode.header().len()];
    row[0] = name.to_string();
    row[1] = status.to_string();
    row
}

/// A finished sweep, or a merge: the table and what the summary says.
#[derive(Debug)]
pub struct SweepReport {
    pub mode: Mode,
    /// Files in the sweep (a shard: its own).
    pub total: usize,
    /// Their outcomes, in file order; `None` for a file skipped by an interruption.
    pub outcomes: Vec<Option<FileOutcome>>,
    /// Set for a shard: which, and the files of the whole sweep.
    pub shard: Option<(Shard, usize)>,
}

impl SweepReport {
    pub fn done(&self) -> usize {
        self.outcomes.iter().flatten().count()
    }

    pub fn interrupted(&self) -> bool {
        self.done() < self.total
    }

    /// `partial: interrupted after N of M files`, when it is.
    pub fn partial_note(&self) -> Option<String> {
        self.interrupted().then(|| {
            format!(
                "partial: interrupted after {} of {} files",
                self.done(),
                self.total
            )
        })
    }

    /// The results table: the CSV's bytes.
    pub fn csv(&self, path: &Path) -> Result<Vec<u8>, ExperimentError> {
        let rows: Vec<Vec<String>> = self
            .outcomes
            .iter()
            .flatten()
            .flat_map(|o| o.rows.iter().cloned())
            .collect();
        csv_bytes(
            path,
            self.partial_note().as_deref(),
            &self.mode.header(),
            &rows,
        )
    }

    /// One line: files, failures, and the misses (`sim`) or verdicts (`analyze`).
    pub fn summary(&self) -> String {
        let done: Vec<&FileOutcome> = self.outcomes.iter().flatten().collect();
        let failed = done.iter().filter(|o| o.error.is_some()).count();
        let what = match self.shard {
            Some((shard, all)) => format!(
                "shard {shard} of a sweep of {all} files: {} files",
                self.total
            ),
            None => format!("{} files", self.total),
        };
        let mut text = format!(
            "sweep ({}): {what}, {} ok, {failed} failed",
            self.mode.name(),
            done.len() - failed
        );
        match self.mode {
            Mode::Sim => {
                let jobs: u64 = done.iter().map(|o| o.jobs).sum();
                let missed: u64 = done.iter().map(|o| o.missed).sum();
                text.push_str(&format!("; {missed} of {jobs} jobs missed their deadline"));
            }
            Mode::Analyze => {
                let yes = done.iter().filter(|o| o.schedulable == Some(true)).count();
                text.push_str(&format!("; {yes} schedulable"));
            }
        }
        if failed > 0 {
            text.push_str(" (the status column says why)");
        }
        if let Some(note) = self.partial_note() {
            text.push_str(&format!("; {note}"));
        }
        text
    }
}

/// A sweep shard's manifest ([`SHARD_MANIFEST`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepShardManifest {
    /// `rtvmm sweep`, to tell it from an experiment's or `gen`'s.
    pub command: String,
    /// The directory as given (not checked: the digest is).
    pub dir: PathBuf,
    pub rtvmm_version: String,
    pub shard: Shard,
    pub mode: Mode,
    /// The options as flag and value, `--mode` first.
    pub options: Vec<(String, String)>,
    /// How many files, and their digest ([`SweepFiles::digest`]).
    pub files: String,
    pub files_in_sweep: usize,
    /// `complete`, or `partial: interrupted after N of M files`.
    pub status: String,
    /// The runs this shard holds: `NUMBER NAME`.
    pub runs: Vec<String>,
}

const COMMAND: &str = "rtvmm sweep";

/// Runs the sweep of `swept` with `options`; `base` gives the threads, the cancel flag,
/// the progress callback and `runs` (all, or a shard). A file that fails becomes an
/// error row, unless `fail_fast`: then the first failure (in file order) stops the sweep
/// and is returned.
pub fn run_sweep(
    swept: &SweepFiles,
    options: &SweepOptions,
    fail_fast: bool,
    base: &Options,
) -> Result<SweepReport, ExperimentError> {
    options.check()?;
    let shard = match &base.runs {
        Runs::All => None,
        Runs::Shard(shard) => Some(*shard),
        Runs::Replay(_) => {
            return Err(ExperimentError::option(
                "sweep",
                "a replay is `merge`'s, not a run's",
            ))
        }
    };
    if shard.is_some() {
        // The shard's directory, before the first run: not after the last.
        files::prepare_dir(&base.out)?;
    }
    let indices: Vec<usize> = match shard {
        None => (0..swept.files.len()).collect(),
        Some(shard) => shard.runs_of_sweep(0, swept.files.len()),
    };
    let outcome = sweep(
        "sweep",
        &indices,
        base,
        &RunCounter::new(),
        |&i| swept.files[i].clone(),
        |&i| {
            let name = &swept.files[i];
            match evaluate(&swept.dir.join(name), name, options) {
                Ok(outcome) => Ok(outcome),
                Err(f) if f.message == STOPPED => {
                    Err(ExperimentError::Stopped { run: name.clone() })
                }
                Err(f) if fail_fast => {
                    base.cancel.cancel();
                    Err(ExperimentError::SweepFile {
                        file: swept.dir.join(name),
                        message: f.message,
                        bad_input: f.bad_input,
                    })
                }
                Err(f) => {
                    let status = format!("error: {}", f.message);
                    Ok(FileOutcome {
                        rows: vec![status_row(options.mode, name, &status)],
                        error: Some(f.message),
                        jobs: 0,
                        missed: 0,
                        schedulable: None,
                    })
                }
            }
        },
    )?;
    let outcomes = outcome.results;
    if let Some(shard) = shard {
        write_shard(swept, options, shard, &indices, &outcomes, &base.out)?;
    }
    Ok(SweepReport {
        mode: options.mode,
        total: indices.len(),
        outcomes,
        shard: shard.map(|s| (s, swept.files.len())),
    })
}

/// A shard's results and manifest into `dir` (created if missing), the manifest last.
fn write_shard(
    swept: &SweepFiles,
    options: &SweepOptions,
    shard: Shard,
    indices: &[usize],
    outcomes: &[Option<FileOutcome>],
    dir: &Path,
) -> Result<(), ExperimentError> {
    let mut stored = Vec::new();
    for (&i, outcome) in indices.iter().zip(outcomes) {
        if let Some(outcome) = outcome {
            let result = serde_json::to_value(outcome).map_err(|e| {
                ExperimentError::Analysis(format!("{}: not storable: {e}", swept.files[i]))
            })?;
            stored.push(StoredRun {
                run: i,
                name: swept.files[i].clone(),
                result,
            });
        }
    }
    let done = stored.len();
    let manifest = SweepShardManifest {
        command: COMMAND.to_string(),
        dir: swept.dir.clone(),
        rtvmm_version: env!("CARGO_PKG_VERSION").to_string(),
        shard,
        mode: options.mode,
        options: options.fields(),
        files: swept.identity(),
        files_in_sweep: swept.files.len(),
        status: if done < indices.len() {
            format!(
                "partial: interrupted after {done} of {} files",
                indices.len()
            )
        } else {
            "complete".to_string()
        },
        runs: stored.iter().map(run_key).collect(),
    };
    let lines = shard::runs_jsonl(&stored)
        .map_err(|e| ExperimentError::Analysis(format!("a result not storable: {e}")))?;
    let json = shard::manifest_text(&manifest)
        .map_err(|e| ExperimentError::Analysis(format!("shard manifest: {e}")))?;
    files::prepare_dir(dir)?;
    let manifest_path = dir.join(SHARD_MANIFEST);
    files::remove_if_present(&manifest_path)?;
    // The results before the manifest that vouches for them.
    files::write_file(&dir.join(SHARD_RUNS), lines.as_bytes())?;
    files::write_file(&manifest_path, json.as_bytes())?;
    Ok(())
}

/// `rtvmm sweep merge OUT DIR…`: the shards, checked to be every shard of one sweep
/// once, as the report of the unsharded sweep (its table is the same bytes).
pub fn merge_sweep(out: &Path, shard_dirs: &[PathBuf]) -> Result<SweepReport, ExperimentError> {
    shard::refuse_out_among(out, shard_dirs)?;
    let mut manifests = Vec::new();
    for dir in shard_dirs {
        // Another command's shard is named as such, not as a JSON field missing.
        let value: serde_json::Value = shard::read_manifest(dir)?;
        let unreadable = |message: String| shard::ShardError::Unreadable {
            path: dir.join(SHARD_MANIFEST),
            message,
        };
        if value["command"] != COMMAND {
            let what = match (&value["experiment"], &value["generator"]) {
                (serde_json::Value::String(e), _) => format!("`rtvmm experiment {e}`"),
                (_, serde_json::Value::String(_)) => "`rtvmm gen`".to_string(),
                _ => "another command".to_string(),
            };
            return Err(unreadable(format!(
                "a shard of {what}, not of `{COMMAND}` (merge it with its own command)"
            ))
            .into());
        }
        let manifest: SweepShardManifest =
            serde_json::from_value(value).map_err(|e| unreadable(e.to_string()))?;
        shard::check_complete(dir, manifest.shard, &manifest.status)?;
        manifests.push(manifest);
    }
    let heads: Vec<ShardHead> = manifests
        .iter()
        .zip(shard_dirs)
        .map(|(m, dir)| {
            ShardHead::new(
                dir,
                m.shard,
                ("the scenario files", &m.files),
                &m.rtvmm_version,
                m.options.clone(),
            )
        })
        .collect();
    shard::check_set(&heads)?;
    let mut runs = Vec::new();
    for (manifest, dir) in manifests.iter().zip(shard_dirs) {
        runs.push(shard::read_runs(dir, &manifest.runs)?);
    }
    let total = manifests[0].files_in_sweep;
    let mode = manifests[0].mode;
    let replay = shard::replay_of(runs);
    if replay.len() != total {
        return Err(shard::ShardError::RunCount {
            stored: replay.len(),
            expected: total,
        }
        .into());
    }
    let mut outcomes = Vec::with_capacity(total);
    for run in 0..total {
        let name = replay.name_of(run).unwrap_or_default();
        outcomes.push(Some(replay.result::<FileOutcome>(run, &name)?));
    }
    Ok(SweepReport {
        mode,
        total,
        outcomes,
        shard: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One pcpu, one domain with the whole cpu (budget = period = 10 ms), one task of
    /// period 10 ms and cost `wcet`, run for 100 ms.
    fn one_task(name: &str, budget: &str, wcet: &str) -> String {
        format!(
            "name = \"{name}\"\nduration = \"100ms\"\nseed = 1\n[machine]\nquantum = \"1ms\"\n\
             [scheduler]\npolicy = \"deferrable\"\n[[domain]]\nname = \"d1\"\n\
             vcpu = {{ budget = \"{budget}\", period = \"10ms\", priority = 1 }}\n\
             [[domain.task]]\nname = \"t\"\nperiod = \"10ms\"\nwcet = \"{wcet}\"\n"
        )
    }

    /// `late.toml`, `fine.toml`, a file that is not TOML, and two entries the sweep skips.
    fn directory() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write("late.toml", &one_task("late", "10ms", "15ms"));
        write("fine.toml", &one_task("fine", "5ms", "2ms"));
        write("broken.toml", "not = [toml\n");
        write("notes.txt", "not a scenario\n");
        std::fs::create_dir(dir.path().join("more")).unwrap();
        dir
    }

    fn run(dir: &Path, options: &SweepOptions, runs: Runs, out: &Path) -> SweepReport {
        let mut base = Options::new(out);
        base.jobs = 2;
        base.runs = runs;
        let swept = SweepFiles::scan(dir).unwrap();
        run_sweep(&swept, options, false, &base).unwrap()
    }

    fn table(report: &SweepReport) -> String {
        String::from_utf8(report.csv(Path::new("t.csv")).unwrap()).unwrap()
    }

    #[test]
    fn the_directory_is_its_toml_files_in_name_order() {
        let dir = directory();
        let swept = SweepFiles::scan(dir.path()).unwrap();
        assert_eq!(swept.files, ["broken.toml", "fine.toml", "late.toml"]);
        assert_eq!(swept.skipped, ["more/", "notes.txt"]);
    }

    /// late.toml, drawn: jobs released at 0, 10, …, 90 ms each need 15 ms of a cpu that
    /// gives 10 ms per 10 ms, one after another; job k finishes at 15(k+1) ms, after its
    /// deadline 10(k+1) ms, so all ten counted jobs miss (k ≥ 6 are unfinished at 100 ms,
    /// past their deadline); the job released at 100 ms is in flight. The longest
    /// finished response is job 5's, 90 − 50 = 40 ms. fine.toml: a 2 ms job every 10 ms
    /// within a 5 ms budget: none misses, each takes 2 ms. broken.toml: one error row.
    #[test]
    fn a_small_directory_gives_the_hand_checked_rows() {
        let dir = directory();
        let report = run(dir.path(), &SweepOptions::default(), Runs::All, dir.path());
        let text = table(&report);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "file,status,policy,seed,duration_ns,domain,jobs,missed,in_flight,\
             deadline_miss_ratio,max_response_ns"
        );
        assert!(
            lines[1].starts_with("broken.toml,\"error: broken.toml:1:")
                && lines[1].ends_with(",,,,,,,,,"),
            "{}",
            lines[1]
        );
        assert_eq!(
            lines[2],
            "fine.toml,ok,deferrable,1,100000000,d1,10,0,1,0,2000000"
        );
        assert_eq!(
            lines[3],
            "late.toml,ok,deferrable,1,100000000,d1,10,10,1,1,40000000"
        );
        assert_eq!(lines.len(), 4);
        assert_eq!(
            report.summary(),
            "sweep (sim): 3 files, 2 ok, 1 failed; 10 of 20 jobs missed their deadline (the \
             status column says why)"
        );
    }

    #[test]
    fn the_overrides_apply_to_every_file() {
        let dir = directory();
        let options = SweepOptions {
            policy: Some(PolicyKind::Polling),
            duration: Some(Nanos::from_ms(50)),
            seed: Some(9),
            ..SweepOptions::default()
        };
        let text = table(&run(dir.path(), &options, Runs::All, dir.path()));
        assert!(
            text.contains("\nfine.toml,ok,polling,9,50000000,d1,5,0,"),
            "{text}"
        );
    }

    #[test]
    fn fail_fast_stops_at_the_bad_file_and_names_it() {
        let dir = directory();
        let swept = SweepFiles::scan(dir.path()).unwrap();
        let e = run_sweep(
            &swept,
            &SweepOptions::default(),
            true,
            &Options::new(dir.path()),
        )
        .unwrap_err();
        assert!(e.is_bad_input(), "{e}");
        let text = e.to_string();
        assert!(
            text.contains(&dir.path().join("broken.toml").display().to_string()),
            "{text}"
        );
    }

    #[test]
    fn analyze_refuses_the_simulation_flags() {
        let options = SweepOptions {
            mode: Mode::Analyze,
            seed: Some(1),
            ..SweepOptions::default()
        };
        let e = options.check().unwrap_err().to_string();
        assert!(e.starts_with("--seed: applies to --mode sim only"), "{e}");
    }

    #[test]
    fn an_analysis_row_says_the_interface_and_the_verdict() {
        let dir = directory();
        let options = SweepOptions {
            mode: Mode::Analyze,
            ..SweepOptions::default()
        };
        let text = table(&run(dir.path(), &options, Runs::All, dir.path()));
        // fine.toml: U = 2/10; an interface within the cpu, schedulable.
        let fine = text.lines().find(|l| l.starts_with("fine.toml,")).unwrap();
        assert!(
            fine.starts_with("fine.toml,ok,deferrable,true,d1,"),
            "{fine}"
        );
        assert!(fine.ends_with(",0.2,true"), "{fine}");
        // late.toml: U = 1.5, so no interface and no verdict of yes.
        let late = text.lines().find(|l| l.starts_with("late.toml,")).unwrap();
        assert!(late.contains(",false"), "{late}");
    }

    /// Every shard count, shards merged in any order: the unsharded table's bytes.
    #[test]
    fn merged_shards_are_the_unsharded_table() {
        let dir = directory();
        let unsharded = table(&run(
            dir.path(),
            &SweepOptions::default(),
            Runs::All,
            dir.path(),
        ));
        let root = tempfile::tempdir().unwrap();
        for count in 1..=4 {
            let mut dirs: Vec<PathBuf> = (1..=count)
                .map(|index| {
                    let out = root.path().join(format!("{count}-{index}"));
                    let runs = Runs::Shard(Shard { index, count });
                    run(dir.path(), &SweepOptions::default(), runs, &out);
                    out
                })
                .collect();
            dirs.reverse();
            let merged = merge_sweep(&root.path().join("out.csv"), &dirs).unwrap();
            assert_eq!(table(&merged), unsharded, "{count} shards");
        }
    }

    fn merge_error(dirs: &[PathBuf]) -> String {
        merge_sweep(Path::new("unused.csv"), dirs)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn merge_refuses_shards_of_different_options_files_or_counts() {
        let dir = directory();
        let root = tempfile::tempdir().unwrap();
        let shard = |name: &str, options: &SweepOptions, index, count| {
            let out = root.path().join(name);
            run(
                dir.path(),
                options,
                Runs::Shard(Shard { index, count }),
                &out,
            );
            out
        };
        let plain = SweepOptions::default();
        let a = shard("a", &plain, 1, 2);
        let longer = SweepOptions {
            duration: Some(Nanos::from_ms(200)),
            ..plain.clone()
        };
        let b = shard("b", &longer, 2, 2);
        let e = merge_error(&[a.clone(), b.clone()]);
        assert!(
            e.contains("--duration is 200ms") && e.contains("has (the file's)"),
            "{e}"
        );
        let c = shard("c", &plain, 2, 3);
        let e = merge_error(&[a.clone(), c]);
        assert!(e.contains("the shard count is 3"), "{e}");
        // The same options over a directory whose file changed.
        std::fs::write(dir.path().join("fine.toml"), one_task("fine", "6ms", "2ms")).unwrap();
        let d = shard("d", &plain, 2, 2);
        let e = merge_error(&[a.clone(), d.clone()]);
        assert!(e.contains("the scenario files is 3 files, digest"), "{e}");
        // Missing and given twice.
        let e = merge_error(std::slice::from_ref(&a));
        assert!(e.contains("shard 2/2 missing"), "{e}");
        let e = merge_error(&[a.clone(), a.clone()]);
        assert!(e.contains("shard 1/2 is given twice"), "{e}");
    }

    #[test]
    fn an_interrupted_sweep_is_partial_and_its_shard_is_refused() {
        let dir = directory();
        let root = tempfile::tempdir().unwrap();
        let mut base = Options::new(root.path().join("one"));
        base.jobs = 1;
        base.stop_after_runs = Some(1);
        base.runs = Runs::Shard(Shard { index: 1, count: 1 });
        let swept = SweepFiles::scan(dir.path()).unwrap();
        let report = run_sweep(&swept, &SweepOptions::default(), false, &base).unwrap();
        assert!(report.interrupted());
        let text = table(&report);
        assert!(
            text.starts_with("# partial: interrupted after 1 of 3 files\nfile,status,"),
            "{text}"
        );
        let e = merge_error(&[root.path().join("one")]);
        assert!(
            e.contains("shard 1/1 is partial: interrupted after 1 of 3 files"),
            "{e}"
        );
    }
}
