//! Long runs of `rtvmm sim`: a run estimated to take more than a few seconds says so on
//! standard error before it starts (with the estimate), and Ctrl-C stops it at the
//! instant reached, prints and writes the results of what was simulated, and exits 130.
//! A short run says nothing of the kind.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use crate::common::*;
use serde_json::Value;

#[test]
fn a_long_run_says_so_up_front_and_ctrl_c_keeps_what_was_simulated() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = write(dir.path(), "fine.toml", ONE_HOUR_AT_ONE_NANOSECOND);
    let json = dir.path().join("out.json");
    let mut run = Reaped(Some(
        Command::new(env!("CARGO_BIN_EXE_rtvmm"))
            .args(["sim", &scenario, "--json", json.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run rtvmm"),
    ));
    let child = run.0.as_mut().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut announcement = String::new();
    stderr.read_line(&mut announcement).unwrap();
    assert!(
        announcement.starts_with("rtvmm: a long run: about 3.6 trillion simulation steps"),
        "{announcement}"
    );
    assert!(
        announcement.contains("3.6 trillion scheduler ticks and timers")
            && announcement.contains("days"),
        "{announcement}"
    );
    assert!(
        announcement.contains("Ctrl-C (or SIGTERM) stops it"),
        "{announcement}"
    );
    // The announcement comes after the handler is installed: Ctrl-C now stops the run.
    let interrupt = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(interrupt.success());
    let out = run.0.take().unwrap().wait_with_output().unwrap();
    let text = stdout(&out);
    assert_eq!(out.status.code(), Some(130), "{text}");
    assert!(text.contains("interrupted by SIGINT at "), "{text}");
    assert!(text.contains(" of 3600s: these results"), "{text}");
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let reached = results["duration_ns"].as_u64().unwrap();
    assert!(reached > 0 && reached < 3_600_000_000_000, "{reached}");
    let pcpu = &results["pcpus"][0];
    let accounted: u64 = ["busy_ns", "idle_ns", "overhead_ns"]
        .iter()
        .map(|k| pcpu[k].as_u64().unwrap())
        .sum();
    assert_eq!(
        accounted, reached,
        "the results cover exactly what was simulated"
    );
}

#[test]
fn a_short_run_announces_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let short = ONE_HOUR_AT_ONE_NANOSECOND
        .replace("3600s", "1s")
        .replace("\"1ns\"", "\"1ms\"");
    let scenario = write(dir.path(), "short.toml", &short);
    let o = rtvmm(&["sim", &scenario]);
    assert_exit(&o, 0);
    assert_eq!(stderr(&o), "");
    assert!(!stdout(&o).contains("interrupted"));
}
