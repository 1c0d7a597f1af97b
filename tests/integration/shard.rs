//! `rtvmm experiment NAME --shard I/N` and `rtvmm experiment merge OUT DIR…` as a user
//! runs them: a bad shard number refused, a shard stopped by a signal marked partial and
//! refused by merge (named), and merged shards that equal the unsharded run. (The
//! library's tests cover every shard count and every refusal.)

use std::path::Path;

use crate::common::*;

fn path(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn a_shard_number_outside_1_to_n_is_refused() {
    for (shard, problem) in [
        ("0/4", "numbered from 1 to N (here 1 to 4)"),
        ("5/4", "numbered from 1 to N (here 1 to 4)"),
        ("1/0", "N must be at least 1"),
        ("two", "not I/N"),
    ] {
        let o = rtvmm(&["experiment", "rtxen-overhead", "--quick", "--shard", shard]);
        assert_exit(&o, 2);
        assert!(
            stderr(&o).contains(&format!("--shard: '{shard}'")) && stderr(&o).contains(problem),
            "{shard}: {}",
            stderr(&o)
        );
        assert_readable(&stderr(&o));
    }
}

#[test]
fn an_interrupted_shard_is_partial_and_merge_names_it() {
    let dir = tempfile::tempdir().unwrap();
    let (one, two, out) = (
        dir.path().join("one"),
        dir.path().join("two"),
        dir.path().join("out"),
    );
    // Shard 1/2 of rtxen-overhead's 7 runs holds 4; SIGTERM after the first.
    let o = rtvmm_env(
        &[
            "experiment",
            "rtxen-overhead",
            "--quick",
            "-j",
            "1",
            "--shard",
            "1/2",
            "--out",
            path(&one),
        ],
        &[("RTVMM_TEST_RAISE", "SIGTERM:1")],
    );
    assert_exit(&o, 143);
    let manifest = std::fs::read_to_string(one.join("rtvmm-shard.json")).unwrap();
    assert!(
        manifest.contains("\"status\": \"partial: interrupted after 1 of 4 runs\""),
        "{manifest}"
    );
    let o = rtvmm(&[
        "experiment",
        "rtxen-overhead",
        "--quick",
        "--shard",
        "2/2",
        "--out",
        path(&two),
    ]);
    assert_exit(&o, 0);
    let o = rtvmm(&["experiment", "merge", path(&out), path(&one), path(&two)]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains(&format!("{}: shard 1/2 is partial", one.display())),
        "{}",
        stderr(&o)
    );
    assert!(!out.join("report.md").exists());
}

#[test]
fn merged_shards_on_the_command_line_are_the_unsharded_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let o = rtvmm(&["experiment", "latency", "--quick", "--out", path(&out)]);
    assert_exit(&o, 0);
    let reference = dir.path().join("reference");
    std::fs::rename(&out, &reference).unwrap();
    let mut shards = Vec::new();
    for i in 1..=2 {
        let shard = dir.path().join(format!("shard-{i}"));
        let o = rtvmm(&[
            "experiment",
            "latency",
            "--quick",
            "--shard",
            &format!("{i}/2"),
            "--out",
            path(&shard),
        ]);
        assert_exit(&o, 0);
        assert!(
            stdout(&o).contains(&format!("shard {i}/2")),
            "{}",
            stdout(&o)
        );
        shards.push(shard);
    }
    let o = rtvmm(&[
        "experiment",
        "merge",
        path(&out),
        path(&shards[1]),
        path(&shards[0]),
    ]);
    assert_exit(&o, 0);
    for entry in std::fs::read_dir(&reference).unwrap() {
        let name = entry.unwrap().file_name();
        let (want, got) = (
            std::fs::read(reference.join(&name)).unwrap(),
            std::fs::read(out.join(&name)).unwrap(),
        );
        if name == "report.md" {
            // The wall time is the one line that differs between any two runs.
            let lines = |b: &[u8]| -> Vec<String> {
                String::from_utf8_lossy(b)
                    .lines()
                    .filter(|l| !l.starts_with("- wall time: "))
                    .map(String::from)
                    .collect()
            };
            assert_eq!(lines(&want), lines(&got));
        } else {
            assert!(want == got, "{} differs", name.to_string_lossy());
        }
    }
}

#[test]
fn merge_without_shards_shows_its_usage() {
    let o = rtvmm(&["experiment", "merge", "out"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("rtvmm experiment merge OUT DIR"),
        "{}",
        stderr(&o)
    );
    // The options that change results are the shards'.
    let o = rtvmm(&["experiment", "merge", "out", "a", "--seed", "3"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("only -j and --no-progress"),
        "{}",
        stderr(&o)
    );
    // Only merge takes directories.
    let o = rtvmm(&["experiment", "list", "extra"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("unexpected argument 'extra'"),
        "{}",
        stderr(&o)
    );
}
