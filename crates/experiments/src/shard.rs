//! Sharded sweeps: `--shard I/N` runs one of N disjoint slices of an experiment's runs,
//! and `rtvmm experiment merge` turns the N shards into what the unsharded run writes.
//!
//! # Design note
//! An experiment is "its runs, then its finish" (tables, CSVs, figures, `report.md`),
//! and the finish reads nothing but the runs' results. Every run goes through
//! [`crate::report::Output::sweep`], which numbers the runs of the whole experiment in
//! order (the first sweep's runs, then the next sweep's), so a run's number is a fact of
//! the experiment and its options, never of threads or timing. [`Runs`] says what that
//! one place does with a run:
//!
//! - [`Runs::All`]: run it (the unsharded run);
//! - [`Runs::Shard`]: run it if it is the shard's ([`Shard::runs_of_sweep`]), keep its
//!   result, and skip the others; the shard writes its results and its manifest
//!   ([`SHARD_MANIFEST`], [`SHARD_RUNS`]) instead of the finish;
//! - [`Runs::Replay`]: take its result from the shards (`merge`) instead of running it.
//!
//! Which runs are a shard's: each sweep's runs are put in a shuffled order, the same
//! everywhere (a fixed seed), and dealt round robin from there, continuing the count of
//! the sweeps before. Every shard gets its share of every sweep, within one run; plain
//! round robin on the sweep's order would not balance the cost: a sweep whose innermost
//! loop is three policies, cut in three shards, would give each shard one policy (measured
//! on `csa-arinc --quick`: the slowest shard took 2.3 times the fastest).
//!
//! So a merge is the unsharded run with every result read back instead of computed: the
//! same finish, on the same values, writes the same bytes. Results are stored as JSON;
//! `serde_json` writes the shortest decimal that reads back to the same `f64`, and reads
//! it back exactly (its `float_roundtrip` feature).
//!
//! Merge refuses ([`ShardError`]): a directory with no shard; a partial shard (stopped by
//! a signal); shards of different experiments, options, rtvmm versions or shard counts;
//! a shard given twice; a shard missing; a stored run whose name is not the run the
//! experiment asks for at that number (its inputs changed).
//!
//! `rtvmm gen --count` ([`crate::systems`]) and `rtvmm sweep` ([`crate::scenario_sweep`])
//! shard the same way: the same slice ([`Shard::runs_of_sweep`]), their own manifests, and
//! the same checks on merge ([`ShardHead`], [`check_set`]).
//!
//! Known gap: real-time runs (`--host`) do not shard yet.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// The shard's manifest, in its output directory.
pub const SHARD_MANIFEST: &str = "rtvmm-shard.json";
/// The shard's results, one JSON line per run, in run order.
pub const SHARD_RUNS: &str = "rtvmm-shard-runs.jsonl";

/// Shard `index` of `count`, 1-based: `1/4` … `4/4`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    /// The runs of a sweep this shard holds, as indices into the sweep, in order. The
    /// sweep's `len` runs, numbered from `first` in the experiment, are put in a fixed
    /// shuffled order and dealt round robin from there (see the module note).
    pub fn runs_of_sweep(&self, first: usize, len: usize) -> Vec<usize> {
        let mut order: Vec<usize> = (0..len).collect();
        // Fisher–Yates driven by SplitMix64 from a fixed seed: the same order on every
        // machine, for every thread count.
        let mut state = SHUFFLE_SEED ^ len as u64;
        for i in (1..len).rev() {
            let j = (splitmix64(&mut state) % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
        let mut mine: Vec<usize> = order
            .iter()
            .enumerate()
            .filter(|(position, _)| (first + position) % self.count == self.index - 1)
            .map(|(_, &run)| run)
            .collect();
        mine.sort_unstable();
        mine
    }
}

/// Any fixed value: changing it changes which shard holds which run (shards written
/// before and after would not merge: the run names would not match).
const SHUFFLE_SEED: u64 = 0x7274_766d_6d5f_7368;

/// SplitMix64 (Steele, Lea and Flood, 2014): a small, well-mixed sequence from a seed.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = ShardError;

    /// `I/N` with `1 ≤ I ≤ N`.
    fn from_str(text: &str) -> Result<Shard, ShardError> {
        let bad = |problem: String| ShardError::BadShard { problem };
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| bad(format!("'{text}' is not I/N (for example 2/4)")))?;
        let number = |s: &str| s.trim().parse::<usize>().ok();
        let (Some(index), Some(count)) = (number(i), number(n)) else {
            return Err(bad(format!("'{text}' is not I/N (for example 2/4)")));
        };
        if count == 0 {
            return Err(bad(format!("'{text}': N must be at least 1")));
        }
        if index == 0 || index > count {
            return Err(bad(format!(
                "'{text}': shards are numbered from 1 to N (here 1 to {count})"
            )));
        }
        Ok(Shard { index, count })
    }
}

/// One run's stored result.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StoredRun {
    /// Its number in the experiment (0-based).
    pub run: usize,
    /// Its name, as in error messages (checked on merge).
    pub name: String,
    pub result: serde_json::Value,
}

/// The results a merge replays, by run number.
#[derive(Debug, Default)]
pub struct Replay {
    runs: BTreeMap<usize, StoredRun>,
}

impl Replay {
    /// How many runs it holds.
    pub fn len(&self) -> usize {
        self.runs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// The name of the stored run `run`, if a shard holds it.
    pub fn name_of(&self, run: usize) -> Option<String> {
        self.runs.get(&run).map(|r| r.name.clone())
    }

    /// The stored result of run `run`, which the experiment names `name`.
    pub fn result<R: serde::de::DeserializeOwned>(
        &self,
        run: usize,
        name: &str,
    ) -> Result<R, ShardError> {
        let stored = self.runs.get(&run).ok_or(ShardError::RunMissing {
            run,
            name: name.to_string(),
        })?;
        if stored.name != name {
            return Err(ShardError::RunChanged {
                run,
                stored: stored.name.clone(),
                expected: name.to_string(),
            });
        }
        R::deserialize(&stored.result).map_err(|e| ShardError::RunUnreadable {
            run,
            name: name.to_string(),
            message: e.to_string(),
        })
    }
}

/// What happens to each run of an experiment (see the module note).
#[derive(Clone, Debug, Default)]
pub enum Runs {
    #[default]
    All,
    Shard(Shard),
    Replay(Arc<Replay>),
}

/// Equal when they would do the same: two replays only when they are one.
impl PartialEq for Runs {
    fn eq(&self, other: &Runs) -> bool {
        match (self, other) {
            (Runs::All, Runs::All) => true,
            (Runs::Shard(a), Runs::Shard(b)) => a == b,
            (Runs::Replay(a), Runs::Replay(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for Runs {}

/// Every option that changes an experiment's results, as the command line spells it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResultOptions {
    pub quick: bool,
    pub seed: u64,
    /// `--seeds N` when given (absent from manifests of runs without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seeds: Option<usize>,
    pub duration: Option<String>,
    pub policies: Option<String>,
    pub overhead: Option<String>,
    pub in_phase: bool,
    pub workloads: Vec<PathBuf>,
}

impl ResultOptions {
    /// Each field's name and value, to name the one two shards disagree on.
    fn fields(&self) -> Vec<(&'static str, String)> {
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "(default)".to_string());
        vec![
            ("--quick", self.quick.to_string()),
            ("--seed", self.seed.to_string()),
            (
                "--seeds",
                self.seeds
                    .map_or_else(|| "(default)".to_string(), |n| n.to_string()),
            ),
            ("--duration", opt(&self.duration)),
            ("--policies", opt(&self.policies)),
            ("--overhead", opt(&self.overhead)),
            ("--in-phase", self.in_phase.to_string()),
            (
                "--workload",
                self.workloads
                    .iter()
                    .map(|w| w.display().to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            ),
        ]
    }
}

/// A shard's manifest ([`SHARD_MANIFEST`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShardManifest {
    pub experiment: String,
    pub rtvmm_version: String,
    pub shard: Shard,
    pub options: ResultOptions,
    /// `complete`, or `partial: interrupted after N of M runs`.
    pub status: String,
    /// The runs of the whole experiment (all shards).
    pub runs_in_experiment: usize,
    /// The run keys this shard holds: `NUMBER NAME`.
    pub runs: Vec<String>,
}

impl ShardManifest {
    pub fn is_complete(&self) -> bool {
        self.status == "complete"
    }
}

/// A run's key in the manifest: its number and its name.
pub fn run_key(run: &StoredRun) -> String {
    format!("{} {}", run.run, run.name)
}

/// Why shards cannot be merged (or a shard written).
#[derive(Debug, thiserror::Error)]
pub enum ShardError {
    #[error("--shard: {problem}")]
    BadShard { problem: String },
    #[error("{dir}: not a shard (no {SHARD_MANIFEST}; a command run with --shard I/N writes one)")]
    NotAShard { dir: PathBuf },
    #[error("{path}: {message}")]
    Unreadable { path: PathBuf, message: String },
    #[error("{dir}: shard {shard} is {status}; run it again to completion before merging")]
    Partial {
        dir: PathBuf,
        shard: Shard,
        status: String,
    },
    #[error(
        "{dir}: {field} is {value}, but {first_dir} has {first_value}: shards of different runs cannot be merged"
    )]
    Mismatch {
        field: String,
        first_dir: PathBuf,
        first_value: String,
        dir: PathBuf,
        value: String,
    },
    #[error("shard {shard} is given twice: {first} and {second}")]
    Duplicate {
        shard: Shard,
        first: PathBuf,
        second: PathBuf,
    },
    #[error("shard {} missing (have: {})", missing.iter().map(|i| format!("{i}/{count}")).collect::<Vec<_>>().join(", "), have.join(", "))]
    Missing {
        missing: Vec<usize>,
        count: usize,
        have: Vec<String>,
    },
    #[error("no shard directory given")]
    NoShards,
    #[error("{dir}: the merge's output is a shard's directory; merge into another")]
    OutIsShard { dir: PathBuf },
    #[error("run {run} ('{name}') is in no shard")]
    RunMissing { run: usize, name: String },
    #[error("run {run} is '{expected}' now but the shard holds '{stored}': the experiment's inputs changed")]
    RunChanged {
        run: usize,
        stored: String,
        expected: String,
    },
    #[error("run {run} ('{name}'): stored result unreadable: {message}")]
    RunUnreadable {
        run: usize,
        name: String,
        message: String,
    },
    #[error("the shards hold {stored} runs but the experiment has {expected}")]
    RunCount { stored: usize, expected: usize },
}

/// A shard read back from its directory.
#[derive(Debug)]
pub struct LoadedShard {
    pub dir: PathBuf,
    pub manifest: ShardManifest,
    pub runs: Vec<StoredRun>,
}

/// Reads the shard in `dir`: its manifest and its results, which must agree.
pub fn read_shard(dir: &Path) -> Result<LoadedShard, ShardError> {
    let manifest: ShardManifest = read_manifest(dir)?;
    check_complete(dir, manifest.shard, &manifest.status)?;
    let runs = read_runs(dir, &manifest.runs)?;
    Ok(LoadedShard {
        dir: dir.to_path_buf(),
        manifest,
        runs,
    })
}

/// The manifest ([`SHARD_MANIFEST`]) of the shard in `dir`, of whatever command wrote it
/// (an experiment's [`ShardManifest`], or a sweep's or `gen`'s own).
pub fn read_manifest<M: serde::de::DeserializeOwned>(dir: &Path) -> Result<M, ShardError> {
    let manifest_path = dir.join(SHARD_MANIFEST);
    if !manifest_path.is_file() {
        return Err(ShardError::NotAShard {
            dir: dir.to_path_buf(),
        });
    }
    let unreadable = |message: String| ShardError::Unreadable {
        path: manifest_path.clone(),
        message,
    };
    let text = std::fs::read_to_string(&manifest_path).map_err(|e| unreadable(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| unreadable(e.to_string()))
}

/// Refuses a shard whose `status` is not `complete` (one stopped by a signal).
pub fn check_complete(dir: &Path, shard: Shard, status: &str) -> Result<(), ShardError> {
    if status == "complete" {
        return Ok(());
    }
    Err(ShardError::Partial {
        dir: dir.to_path_buf(),
        shard,
        status: status.to_string(),
    })
}

/// The stored results ([`SHARD_RUNS`]) of the shard in `dir`, which must be the runs
/// its manifest lists (`keys`, as [`run_key`] writes them).
pub fn read_runs(dir: &Path, keys: &[String]) -> Result<Vec<StoredRun>, ShardError> {
    let runs_path = dir.join(SHARD_RUNS);
    let unreadable = |message: String| ShardError::Unreadable {
        path: runs_path.clone(),
        message,
    };
    let text = std::fs::read_to_string(&runs_path).map_err(|e| unreadable(e.to_string()))?;
    let mut runs = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let run: StoredRun =
            serde_json::from_str(line).map_err(|e| unreadable(format!("line {}: {e}", n + 1)))?;
        runs.push(run);
    }
    if runs.iter().map(run_key).ne(keys.iter().cloned()) {
        return Err(unreadable(format!(
            "its runs are not the ones {SHARD_MANIFEST} lists"
        )));
    }
    Ok(runs)
}

/// A shard manifest's text ([`SHARD_MANIFEST`]): pretty JSON and a final newline.
pub fn manifest_text<M: Serialize>(manifest: &M) -> Result<String, serde_json::Error> {
    let mut json = serde_json::to_string_pretty(manifest)?;
    json.push('\n');
    Ok(json)
}

/// The stored results as [`SHARD_RUNS`] holds them: one JSON line per run.
pub fn runs_jsonl(runs: &[StoredRun]) -> Result<String, serde_json::Error> {
    let mut lines = String::new();
    for run in runs {
        lines.push_str(&serde_json::to_string(run)?);
        lines.push('\n');
    }
    Ok(lines)
}

/// What every merge checks of a shard, whatever command wrote it: its directory, which
/// shard it is, and the facts that must be the same in every shard of one run, each
/// named as a refusal names it (`the experiment`, `the rtvmm version`, `--seed`, …).
#[derive(Clone, Debug)]
pub struct ShardHead {
    pub dir: PathBuf,
    pub shard: Shard,
    facts: Vec<(String, String)>,
}

impl ShardHead {
    /// `what` names the run (`("the experiment", "rtxen-overhead")`); `options` are the
    /// options that change its results, as the command line spells them. The facts are
    /// checked in this order: what, the rtvmm version, the shard count, the options.
    pub fn new(
        dir: &Path,
        shard: Shard,
        what: (&str, &str),
        rtvmm_version: &str,
        options: Vec<(String, String)>,
    ) -> ShardHead {
        let mut facts = vec![
            (what.0.to_string(), what.1.to_string()),
            ("the rtvmm version".to_string(), rtvmm_version.to_string()),
            ("the shard count".to_string(), shard.count.to_string()),
        ];
        facts.extend(options);
        ShardHead {
            dir: dir.to_path_buf(),
            shard,
            facts,
        }
    }
}

/// Checks that `heads` are the N shards of one run, each once: the same facts as the
/// first, no shard twice, none missing. The one check behind `experiment merge`, `sweep
/// merge` and `gen merge`.
pub fn check_set(heads: &[ShardHead]) -> Result<(), ShardError> {
    let first = heads.first().ok_or(ShardError::NoShards)?;
    let count = first.shard.count;
    for head in &heads[1..] {
        for ((field, a), (_, b)) in first.facts.iter().zip(&head.facts) {
            if a != b {
                return Err(ShardError::Mismatch {
                    field: field.clone(),
                    first_dir: first.dir.clone(),
                    first_value: a.clone(),
                    dir: head.dir.clone(),
                    value: b.clone(),
                });
            }
        }
    }
    let mut by_index: BTreeMap<usize, &ShardHead> = BTreeMap::new();
    for head in heads {
        if let Some(other) = by_index.insert(head.shard.index, head) {
            return Err(ShardError::Duplicate {
                shard: head.shard,
                first: other.dir.clone(),
                second: head.dir.clone(),
            });
        }
    }
    let missing: Vec<usize> = (1..=count).filter(|i| !by_index.contains_key(i)).collect();
    if !missing.is_empty() {
        return Err(ShardError::Missing {
            missing,
            count,
            have: by_index
                .values()
                .map(|s| format!("{} in {}", s.shard, s.dir.display()))
                .collect(),
        });
    }
    Ok(())
}

/// Refuses a merge whose output `out` is one of the shards' directories.
pub fn refuse_out_among(out: &Path, shard_dirs: &[PathBuf]) -> Result<(), ShardError> {
    let out_dir = std::fs::canonicalize(out).ok();
    let is_out = |dir: &&PathBuf| out_dir.is_some() && std::fs::canonicalize(dir).ok() == out_dir;
    match shard_dirs.iter().find(is_out) {
        Some(dir) => Err(ShardError::OutIsShard { dir: dir.clone() }),
        None => Ok(()),
    }
}

/// Gathers the runs of checked shards ([`check_set`]) for a replay.
pub fn replay_of(shards: impl IntoIterator<Item = Vec<StoredRun>>) -> Replay {
    let mut replay = Replay::default();
    for runs in shards {
        for run in runs {
            replay.runs.insert(run.run, run);
        }
    }
    replay
}

/// Checks that `shards` are the N shards of one run, each once, and gathers their
/// results. Returns the experiment, its options and the replay.
pub fn combine(shards: Vec<LoadedShard>) -> Result<(String, ResultOptions, Replay), ShardError> {
    let heads: Vec<ShardHead> = shards
        .iter()
        .map(|s| {
            let m = &s.manifest;
            let options = m.options.fields().into_iter();
            ShardHead::new(
                &s.dir,
                m.shard,
                ("the experiment", &m.experiment),
                &m.rtvmm_version,
                options.map(|(f, v)| (f.to_string(), v)).collect(),
            )
        })
        .collect();
    check_set(&heads)?;
    let experiment = shards[0].manifest.experiment.clone();
    let options = shards[0].manifest.options.clone();
    Ok((
        experiment,
        options,
        replay_of(shards.into_iter().map(|s| s.runs)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_numbered_from_one_to_n() {
        assert_eq!(
            "2/4".parse::<Shard>().unwrap(),
            Shard { index: 2, count: 4 }
        );
        assert_eq!(
            "1/1".parse::<Shard>().unwrap(),
            Shard { index: 1, count: 1 }
        );
        for bad in ["0/4", "5/4", "1/0", "2", "a/b", "-1/4"] {
            let e = bad.parse::<Shard>().unwrap_err().to_string();
            assert!(e.starts_with("--shard: "), "{bad}: {e}");
        }
        assert!("5/4"
            .parse::<Shard>()
            .unwrap_err()
            .to_string()
            .contains("from 1 to N (here 1 to 4)"));
    }

    #[test]
    fn the_shards_of_n_part_the_runs_evenly() {
        for count in 1..=5 {
            for (first, len) in [(0, 0), (0, 1), (0, 7), (7, 23), (3, 36)] {
                let mut all = Vec::new();
                let mut sizes = Vec::new();
                for index in 1..=count {
                    let mine = Shard { index, count }.runs_of_sweep(first, len);
                    sizes.push(mine.len());
                    all.extend(mine);
                }
                all.sort_unstable();
                assert_eq!(
                    all,
                    (0..len).collect::<Vec<_>>(),
                    "{first}+{len} in {count}"
                );
                let (min, max) = (sizes.iter().min(), sizes.iter().max());
                assert!(max.unwrap() - min.unwrap() <= 1, "{sizes:?}");
            }
        }
    }

    proptest::proptest! {
        /// For any shard count and any sweep, the N shards' runs are disjoint and cover
        /// the sweep, and no shard holds more than one run more than another.
        #[test]
        fn the_shards_of_any_count_are_disjoint_and_cover_the_runs(
            count in 1usize..=40,
            first in 0usize..1000,
            len in 0usize..300,
        ) {
            let mut seen = vec![0u32; len];
            let mut sizes = Vec::new();
            for index in 1..=count {
                let mine = Shard { index, count }.runs_of_sweep(first, len);
                proptest::prop_assert!(mine.windows(2).all(|w| w[0] < w[1]), "{mine:?}");
                sizes.push(mine.len());
                for run in mine {
                    seen[run] += 1;
                }
            }
            proptest::prop_assert!(seen.iter().all(|&n| n == 1), "{seen:?}");
            let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            proptest::prop_assert!(max - min <= 1, "{sizes:?}");
        }
    }

    /// A sweep whose cost repeats with the shard count (three policies per point, three
    /// shards) is not dealt one policy per shard, as plain round robin would.
    #[test]
    fn a_cost_pattern_of_period_n_is_spread_over_the_shards() {
        for index in 1..=3 {
            let mine = Shard { index, count: 3 }.runs_of_sweep(0, 36);
            let per_policy = |p: usize| mine.iter().filter(|&&r| r % 3 == p).count();
            for policy in 0..3 {
                assert!(
                    (2..=6).contains(&per_policy(policy)),
                    "shard {index}: {mine:?}"
                );
            }
        }
    }
}
