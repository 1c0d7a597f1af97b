//! Sharded sweeps (issue 26, item 1): the N shards of a run, merged, are the unsharded
//! run byte for byte, whatever N, the order the shards are given in and the threads each
//! used; and `merge` refuses shards of different experiments or options, a shard missing,
//! a shard given twice and a partial shard, naming it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_experiments::shard::{Runs, Shard, SHARD_MANIFEST, SHARD_RUNS};
use rtvmm_experiments::{merge, run_experiment, Options};

/// The experiments with the cheapest `--quick` runs (seconds at most in a debug build),
/// of 7 to 24 runs: enough for 5 shards to each hold some.
const FAST: [&str; 3] = ["rtxen-overhead", "latency", "packet-latency"];

fn shard(name: &str, dir: &Path, index: usize, count: usize, tweak: impl Fn(&mut Options)) {
    let mut options = Options::quick(dir);
    options.runs = Runs::Shard(Shard { index, count });
    tweak(&mut options);
    let report = run_experiment(name, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!report.interrupted(), "{name} shard {index}/{count}");
}

/// Every file of `dir`, by name. The report's wall time differs between any two runs;
/// that one line is blanked.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let mut bytes = std::fs::read(&path).unwrap();
        if name == "report.md" {
            let text = String::from_utf8(bytes).unwrap();
            let lines: Vec<&str> = text
                .split_inclusive('\n')
                .map(|l| {
                    if l.starts_with("- wall time: ") {
                        "- wall time: (blanked)\n"
                    } else {
                        l
                    }
                })
                .collect();
            bytes = lines.concat().into_bytes();
        }
        files.insert(name, bytes);
    }
    files
}

/// Shards 1..=count of `name` into `root/shard-I`.
fn shards(name: &str, root: &Path, count: usize) -> Vec<PathBuf> {
    (1..=count)
        .map(|i| {
            let dir = root.join(format!("shard-{i}"));
            shard(name, &dir, i, count, |_| {});
            dir
        })
        .collect()
}

fn merge_error(out: &Path, dirs: &[PathBuf]) -> String {
    merge(out, dirs, &Options::new(out))
        .map(|_| ())
        .expect_err("merge must refuse")
        .to_string()
}

/// Runs `name` unsharded, then in `count` shards (each on `jobs` threads), merges them
/// (given in `order`), and asserts every file is the unsharded run's bytes.
fn assert_merge_is_unsharded(
    name: &str,
    count: usize,
    jobs: usize,
    order: &[usize],
    tweak: impl Fn(&mut Options),
) -> Result<(), TestCaseError> {
    let root = tempfile::tempdir().unwrap();
    // The unsharded run, moved aside: the merge then writes to the same `--out`, so that
    // the report's command line is the same too.
    let out = root.path().join("out");
    let mut options = Options::quick(&out);
    options.jobs = 2;
    tweak(&mut options);
    run_experiment(name, &options).unwrap();
    let reference = root.path().join("reference");
    std::fs::rename(&out, &reference).unwrap();
    let dirs: Vec<PathBuf> = (1..=count)
        .map(|i| {
            let dir = root.path().join(format!("shard-{i}"));
            shard(name, &dir, i, count, |o| {
                o.jobs = jobs;
                tweak(o);
            });
            dir
        })
        .collect();
    let given: Vec<PathBuf> = order
        .iter()
        .filter(|&&i| i < count)
        .map(|&i| dirs[i].clone())
        .collect();
    let report = merge(&out, &given, &Options::new(&out)).unwrap();
    prop_assert!(!report.interrupted());
    let (want, got) = (files(&reference), files(&out));
    prop_assert_eq!(
        want.keys().collect::<Vec<_>>(),
        got.keys().collect::<Vec<_>>()
    );
    for (file, bytes) in &want {
        prop_assert!(
            &got[file] == bytes,
            "{} differs ({} in {} shards)",
            file,
            name,
            count
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// `seeds`: task-set draws (`--seeds`), for the experiment of `FAST` that draws task
    /// sets (rtxen-overhead); the runs of every draw are dealt to the shards.
    #[test]
    fn merged_shards_are_the_unsharded_run_byte_for_byte(
        which in 0..FAST.len(),
        count in 1usize..=5,
        jobs in prop::sample::select(vec![1usize, 2]),
        order in Just((0..5usize).collect::<Vec<_>>()).prop_shuffle(),
        seeds in 1usize..=3,
    ) {
        let draws = FAST[which] == "rtxen-overhead";
        assert_merge_is_unsharded(FAST[which], count, jobs, &order, |o| {
            if draws {
                o.seeds = Some(seeds);
            }
        })?;
    }
}

/// Several task-set draws in shards: each draw's runs, numbered after the draw before,
/// dealt to every shard; the merge writes the unsharded run's files over the draws.
#[test]
fn the_shards_of_several_draws_merge_to_the_unsharded_run() {
    assert_merge_is_unsharded("rtxen-capacity", 3, 2, &[1, 2, 0], |o| {
        o.seeds = Some(3);
        o.duration = Some(Nanos::from_ms(500));
        o.policies = Some(vec![PolicyKind::Deferrable, PolicyKind::Credit]);
    })
    .unwrap();
}

/// The runs are numbered across sweeps: eval-contention's (b) then (c), cut short.
#[test]
fn an_experiment_of_two_sweeps_merges_too() {
    assert_merge_is_unsharded("eval-contention", 3, 1, &[2, 0, 1], |o| {
        o.duration = Some(Nanos::from_ms(50));
        o.policies = Some(vec![PolicyKind::Deferrable, PolicyKind::Periodic]);
    })
    .unwrap();
}

#[test]
fn a_shard_writes_its_results_and_manifest_only() {
    let root = tempfile::tempdir().unwrap();
    let dirs = shards("rtxen-overhead", root.path(), 3);
    let mut keys = Vec::new();
    let mut sizes = Vec::new();
    for dir in &dirs {
        let names: Vec<String> = files(dir).into_keys().collect();
        assert_eq!(
            names,
            ["rtvmm-manifest.txt", SHARD_RUNS, SHARD_MANIFEST],
            "{}",
            dir.display()
        );
        let manifest: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join(SHARD_MANIFEST)).unwrap())
                .unwrap();
        assert_eq!(manifest["experiment"], "rtxen-overhead");
        assert_eq!(manifest["status"], "complete");
        assert_eq!(manifest["options"]["seed"], 1);
        assert_eq!(manifest["runs_in_experiment"], 7);
        sizes.push(manifest["runs"].as_array().unwrap().len());
        for key in manifest["runs"].as_array().unwrap() {
            keys.push(key.as_str().unwrap().split(' ').next().unwrap().to_string());
        }
    }
    // 7 runs in 3 shards: each once, 3 + 2 + 2.
    assert_eq!(sizes, [3, 2, 2]);
    keys.sort_by_key(|k| k.parse::<usize>().unwrap());
    assert_eq!(keys, ["0", "1", "2", "3", "4", "5", "6"]);
}

#[test]
fn merge_refuses_shards_of_different_experiments() {
    let root = tempfile::tempdir().unwrap();
    let a = root.path().join("a");
    let b = root.path().join("b");
    shard("rtxen-overhead", &a, 1, 2, |_| {});
    shard("latency", &b, 2, 2, |_| {});
    let e = merge_error(&root.path().join("out"), &[a, b.clone()]);
    assert!(
        e.contains("the experiment is latency") && e.contains(&b.display().to_string()),
        "{e}"
    );
}

#[test]
fn merge_refuses_shards_of_different_options() {
    let root = tempfile::tempdir().unwrap();
    let a = root.path().join("a");
    let b = root.path().join("b");
    shard("rtxen-overhead", &a, 1, 2, |_| {});
    shard("rtxen-overhead", &b, 2, 2, |o| o.seed = 2);
    let e = merge_error(&root.path().join("out"), &[a.clone(), b]);
    assert!(e.contains("--seed is 2") && e.contains("has 1"), "{e}");
    // Another number of task-set draws.
    let c = root.path().join("c");
    shard("rtxen-overhead", &c, 2, 2, |o| o.seeds = Some(2));
    let e = merge_error(&root.path().join("out"), &[a, c]);
    assert!(
        e.contains("--seeds is 2") && e.contains("has (default)"),
        "{e}"
    );
}

#[test]
fn merge_names_the_missing_shard() {
    let root = tempfile::tempdir().unwrap();
    let mut dirs = shards("rtxen-overhead", root.path(), 3);
    dirs.remove(1);
    let e = merge_error(&root.path().join("out"), &dirs);
    assert!(e.contains("shard 2/3 missing"), "{e}");
    assert!(!root.path().join("out").join("report.md").exists());
}

#[test]
fn merge_names_a_shard_given_twice() {
    let root = tempfile::tempdir().unwrap();
    let mut dirs = shards("rtxen-overhead", root.path(), 2);
    let copy = root.path().join("copy-of-1");
    shard("rtxen-overhead", &copy, 1, 2, |_| {});
    dirs.push(copy.clone());
    let e = merge_error(&root.path().join("out"), &dirs);
    assert!(
        e.contains("shard 1/2 is given twice")
            && e.contains(&dirs[0].display().to_string())
            && e.contains(&copy.display().to_string()),
        "{e}"
    );
}

#[test]
fn an_interrupted_shard_is_partial_and_merge_refuses_it() {
    let root = tempfile::tempdir().unwrap();
    let mut dirs = shards("rtxen-overhead", root.path(), 2);
    // Shard 1/2 holds 4 runs: stop it after 2.
    let options = {
        let mut o = Options::quick(&dirs[0]);
        o.runs = Runs::Shard(Shard { index: 1, count: 2 });
        o.stop_after_runs = Some(2);
        o
    };
    let report = run_experiment("rtxen-overhead", &options).unwrap();
    assert!(report.interrupted());
    let manifest = std::fs::read_to_string(dirs[0].join(SHARD_MANIFEST)).unwrap();
    assert!(
        manifest.contains("\"status\": \"partial: interrupted after 2 of 4 runs\""),
        "{manifest}"
    );
    dirs.reverse();
    let e = merge_error(&root.path().join("out"), &dirs);
    assert!(
        e.contains(&dirs[1].display().to_string()) && e.contains("shard 1/2 is partial"),
        "{e}"
    );
}

#[test]
fn merge_refuses_a_directory_that_holds_no_shard() {
    let root = tempfile::tempdir().unwrap();
    let e = merge_error(&root.path().join("out"), &[root.path().to_path_buf()]);
    assert!(e.contains("not a shard"), "{e}");
}

#[test]
fn merge_refuses_a_run_that_is_not_the_one_the_experiment_asks_for() {
    let root = tempfile::tempdir().unwrap();
    let dirs = shards("rtxen-overhead", root.path(), 2);
    // As if the shard had been run with other inputs: run 1 renamed, in both files.
    for file in [SHARD_MANIFEST, SHARD_RUNS] {
        let path = dirs[1].join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("rtxen-overhead-periodic"), "{file}");
        std::fs::write(&path, text.replace("rtxen-overhead-periodic", "renamed")).unwrap();
    }
    let e = merge_error(&root.path().join("out"), &dirs);
    assert!(
        e.contains("run 1 is 'rtxen-overhead-periodic' now but the shard holds 'renamed'"),
        "{e}"
    );
}

#[test]
fn merge_refuses_to_write_into_a_shard() {
    let root = tempfile::tempdir().unwrap();
    let dirs = shards("rtxen-overhead", root.path(), 2);
    let e = merge_error(&dirs[1], &dirs);
    assert!(
        e.contains("the merge's output is a shard's directory"),
        "{e}"
    );
    assert!(dirs[1].join(SHARD_MANIFEST).exists());
}
