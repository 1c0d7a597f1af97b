//! `rtvmm gen … --count K [--shard I/N]`, `rtvmm gen merge`, `rtvmm sweep DIR [--shard
//! I/N]` and `rtvmm sweep merge` as a user runs them: merged shards equal the unsharded
//! output byte for byte, refusals name what is wrong, a bad file is a row, a signal keeps
//! the finished rows. (The library's tests hand-check rows and cover every refusal.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::*;

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every file of `dir` by name, with its bytes.
fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().into_string().unwrap(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

/// `rtvmm gen rtxen --count 7 --duration 200ms --seed 3` and its extra flags.
fn gen(out: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "gen",
        "rtxen",
        "--count",
        "7",
        "--duration",
        "200ms",
        "--seed",
        "3",
        "--out",
        path(out),
    ];
    args.extend_from_slice(extra);
    rtvmm(&args)
}

#[test]
fn gen_shards_merged_are_the_unsharded_files() {
    let root = tempfile::tempdir().unwrap();
    let all = root.path().join("all");
    assert_exit(&gen(&all, &[]), 0);
    let unsharded = contents(&all);
    assert_eq!(unsharded.len(), 7);
    // System i is what `gen --seed 3+i` prints.
    let o = rtvmm(&["gen", "rtxen", "--duration", "200ms", "--seed", "8"]);
    assert_eq!(unsharded["rtxen-5.toml"], o.stdout);
    let mut shards: Vec<PathBuf> = Vec::new();
    let mut union = BTreeMap::new();
    for index in 1..=3 {
        let dir = root.path().join(format!("shard-{index}"));
        let o = gen(&dir, &["--shard", &format!("{index}/3")]);
        assert_exit(&o, 0);
        for (name, bytes) in contents(&dir) {
            if name != "rtvmm-shard.json" {
                assert!(union.insert(name, bytes).is_none(), "shards overlap");
            }
        }
        shards.push(dir);
    }
    assert_eq!(union, unsharded);
    let merged = root.path().join("merged");
    let mut args = vec!["gen", "merge", path(&merged)];
    args.extend(shards.iter().rev().map(|d| path(d)));
    let o = rtvmm(&args);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("wrote 7 systems"), "{}", stdout(&o));
    assert_eq!(contents(&merged), unsharded);
    // Missing, given twice, another run's shard: refused, naming it.
    let o = rtvmm(&[
        "gen",
        "merge",
        path(&root.path().join("m2")),
        path(&shards[0]),
        path(&shards[2]),
    ]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("shard 2/3 missing"), "{}", stderr(&o));
    let other = root.path().join("other");
    assert_exit(&gen(&other, &["--shard", "2/3", "--policy", "polling"]), 0);
    let o = rtvmm(&[
        "gen",
        "merge",
        path(&root.path().join("m3")),
        path(&shards[0]),
        path(&other),
        path(&shards[2]),
    ]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("--policy is polling") && stderr(&o).contains(path(&other)),
        "{}",
        stderr(&o)
    );
    // Files already there are refused, naming one, unless --force.
    let o = gen(&all, &[]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("rtxen-0.toml already exists; add --force"),
        "{}",
        stderr(&o)
    );
    assert_exit(&gen(&all, &["--force"]), 0);
    assert_eq!(contents(&all), unsharded);
    // A shard needs --count.
    let o = rtvmm(&[
        "gen",
        "rtxen",
        "--shard",
        "1/2",
        "--out",
        path(&root.path().join("x")),
    ]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("--count"), "{}", stderr(&o));
}

/// `rtvmm sweep DIR` with its extra flags.
fn sweep(dir: &Path, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["sweep", path(dir), "--no-progress"];
    args.extend_from_slice(extra);
    rtvmm(&args)
}

#[test]
fn sweep_shards_merged_are_the_unsharded_table() {
    let root = tempfile::tempdir().unwrap();
    let systems = root.path().join("systems");
    assert_exit(&gen(&systems, &[]), 0);
    std::fs::write(systems.join("zz-broken.toml"), "[[domain]]\nname = 3\n").unwrap();
    let table = root.path().join("all.csv");
    let o = sweep(&systems, &["-j", "1", "--out", path(&table)]);
    assert_exit(&o, 0);
    assert!(
        stdout(&o).starts_with("sweep (sim): 8 files, 7 ok, 1 failed;"),
        "{}",
        stdout(&o)
    );
    let unsharded = std::fs::read_to_string(&table).unwrap();
    // 5 domains for each of the 7 systems, one row for the broken file, the header.
    assert_eq!(unsharded.lines().count(), 1 + 7 * 5 + 1, "{unsharded}");
    let last = unsharded.lines().last().unwrap();
    assert!(
        last.starts_with("zz-broken.toml,\"error: zz-broken.toml"),
        "{last}"
    );
    // The same bytes on standard output, with other threads.
    let o = sweep(&systems, &["-j", "2"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), unsharded);
    let mut shards = Vec::new();
    for index in 1..=3 {
        let dir = root.path().join(format!("shard-{index}"));
        let o = sweep(
            &systems,
            &["--shard", &format!("{index}/3"), "--out", path(&dir)],
        );
        assert_exit(&o, 0);
        shards.push(dir);
    }
    let merged = root.path().join("merged.csv");
    let mut args = vec!["sweep", "merge", path(&merged)];
    args.extend(shards.iter().map(|d| path(d)));
    let o = rtvmm(&args);
    assert_exit(&o, 0);
    assert_eq!(std::fs::read_to_string(&merged).unwrap(), unsharded);
    // A shard of other options is refused, naming the option and both directories.
    let other = root.path().join("other");
    assert_exit(
        &sweep(
            &systems,
            &["--shard", "2/3", "--seed", "5", "--out", path(&other)],
        ),
        0,
    );
    let o = rtvmm(&[
        "sweep",
        "merge",
        path(&root.path().join("m.csv")),
        path(&shards[0]),
        path(&other),
        path(&shards[2]),
    ]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("--seed is 5") && stderr(&o).contains(path(&shards[0])),
        "{}",
        stderr(&o)
    );
    assert!(!root.path().join("m.csv").exists());
    // A gen shard is not a sweep shard.
    let g = root.path().join("gen-shard");
    assert_exit(&gen(&g, &["--shard", "1/2"]), 0);
    let o = rtvmm(&["sweep", "merge", path(&root.path().join("m.csv")), path(&g)]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("a shard of `rtvmm gen`"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn fail_fast_stops_at_the_bad_file() {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.toml"), "[[domain]]\nname = 3\n").unwrap();
    let o = sweep(root.path(), &["--fail-fast"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains(&format!("{}: ", root.path().join("a.toml").display())),
        "{}",
        stderr(&o)
    );
    assert_eq!(stdout(&o), "");
    // Nothing to sweep, and --shard without a directory for it.
    let empty = root.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let o = sweep(&empty, &[]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("no *.toml scenario file"),
        "{}",
        stderr(&o)
    );
    let o = sweep(root.path(), &["--shard", "1/2"]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("give --out DIR"), "{}", stderr(&o));
}

#[test]
fn a_signal_keeps_the_finished_rows_marked_partial() {
    let root = tempfile::tempdir().unwrap();
    let systems = root.path().join("systems");
    assert_exit(&gen(&systems, &[]), 0);
    let table = root.path().join("t.csv");
    let o = rtvmm_env(
        &[
            "sweep",
            path(&systems),
            "-j",
            "1",
            "--no-progress",
            "--out",
            path(&table),
        ],
        &[("RTVMM_TEST_RAISE", "SIGINT:2")],
    );
    assert_exit(&o, 130);
    let text = std::fs::read_to_string(&table).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "# partial: interrupted after 2 of 7 files");
    assert!(lines[1].starts_with("file,status,"), "{text}");
    // The first two files, five domains each.
    assert_eq!(lines.len(), 2 + 2 * 5, "{text}");
    assert!(lines[2].starts_with("rtxen-0.toml,ok,") && lines[11].starts_with("rtxen-1.toml,ok,"));
}
