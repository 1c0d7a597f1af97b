//! Partial marks (issue 23, item 4): a `sim` stopped by SIGINT or SIGTERM marks every file
//! it writes — `"partial": true` in the JSON, a first `# partial: …` line in the jobs and
//! trace CSVs, `otherData.partial` in the Chrome trace — and a complete run carries none;
//! an experiment's first signal stops the runs in progress within moments (a run of
//! 100000000s included) and writes what finished, marked partial; a second signal stops at
//! once.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;
use serde_json::Value;

fn kill(child: &Child, signal: &str) {
    let sent = Command::new("kill")
        .args([signal, &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {signal}");
}

fn spawn(args: &[&str]) -> Reaped {
    Reaped(Some(
        Command::new(env!("CARGO_BIN_EXE_rtvmm"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run rtvmm"),
    ))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn an_interrupted_sim_marks_its_json_jobs_and_trace_as_partial() {
    for (signal, name, code, trace) in [
        ("-INT", "SIGINT", 130, "trace.csv"),
        ("-TERM", "SIGTERM", 143, "trace.json"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let scenario = dir.path().join("fine.toml");
        std::fs::write(&scenario, ONE_HOUR_AT_ONE_NANOSECOND).unwrap();
        let (json, jobs, trace) = (
            dir.path().join("out.json"),
            dir.path().join("jobs.csv"),
            dir.path().join(trace),
        );
        let mut run = spawn(&[
            "sim",
            scenario.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
            "--jobs",
            jobs.to_str().unwrap(),
            "--trace",
            trace.to_str().unwrap(),
        ]);
        let child = run.0.as_mut().unwrap();
        // The long-run announcement comes once the handlers are installed.
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut announcement = String::new();
        stderr.read_line(&mut announcement).unwrap();
        assert!(announcement.contains("a long run"), "{announcement}");
        kill(child, signal);
        let out = run.0.take().unwrap().wait_with_output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{}", stdout(&out));
        let mark = format!("interrupted by {name} at ");

        let results: Value = serde_json::from_str(&read(&json)).unwrap();
        assert_eq!(results["partial"], Value::Bool(true), "{results}");
        assert_eq!(results["planned_duration_ns"], 3_600_000_000_000u64);
        let reached = results["duration_ns"].as_u64().unwrap();
        assert!(reached < 3_600_000_000_000, "{reached}");

        let jobs = read(&jobs);
        let first = jobs.lines().next().unwrap();
        assert!(
            first.starts_with(&format!("# partial: {mark}")) && first.ends_with(" of 3600s"),
            "{first}"
        );
        assert!(jobs.lines().nth(1).unwrap().starts_with("domain,task,job,"));

        let trace_text = read(&trace);
        if trace.extension().unwrap() == "csv" {
            let first = trace_text.lines().next().unwrap();
            assert!(first.starts_with(&format!("# partial: {mark}")), "{first}");
            assert_eq!(
                trace_text.lines().nth(1),
                Some("time_ns,kind,pcpu,vcpu,domain,task,job,detail")
            );
        } else {
            let chrome: Value = serde_json::from_str(&trace_text).unwrap();
            let why = chrome["otherData"]["partial"].as_str().unwrap();
            assert!(why.starts_with(&mark), "{why}");
            assert!(chrome["traceEvents"].as_array().unwrap().len() > 1);
        }
    }
}

#[test]
fn a_complete_sim_carries_no_partial_mark() {
    let dir = tempfile::tempdir().unwrap();
    let outs = ["r.json", "j.csv", "t.csv", "t.json"].map(|n| dir.path().join(n));
    let o = rtvmm(&[
        "sim",
        &example("even-share.toml"),
        "--duration",
        "200ms",
        "--json",
        outs[0].to_str().unwrap(),
        "--jobs",
        outs[1].to_str().unwrap(),
        "--trace",
        outs[2].to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let o = rtvmm(&[
        "sim",
        &example("even-share.toml"),
        "--duration",
        "200ms",
        "--trace",
        outs[3].to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    for out in &outs {
        let text = read(out);
        assert!(!text.contains("partial"), "{}", out.display());
        assert!(!text.contains("planned_duration_ns"), "{}", out.display());
    }
}

/// `rtxen-capacity --quick` with runs of 100000000s (years of simulated time each), on
/// `jobs` threads, into `out`.
fn endless_capacity(out: &std::path::Path, jobs: &str) -> Reaped {
    spawn(&[
        "experiment",
        "rtxen-capacity",
        "--quick",
        "--no-progress",
        "-j",
        jobs,
        "--duration",
        "100000000s",
        "--out",
        out.to_str().unwrap(),
    ])
}

/// An experiment of runs of 100000000s (years of simulated time each): the first SIGINT
/// stops the runs in progress, and the experiment writes its files, marked partial.
#[test]
fn an_experiments_first_signal_stops_even_endless_runs() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cap");
    let mut run = endless_capacity(&out, "2");
    // Let the first runs start.
    std::thread::sleep(Duration::from_millis(1500));
    let child = run.0.as_mut().unwrap();
    kill(child, "-INT");
    let signalled = Instant::now();
    let out_put = run.0.take().unwrap().wait_with_output().unwrap();
    let took = signalled.elapsed();
    assert_eq!(
        out_put.status.code(),
        Some(130),
        "stdout:\n{}\nstderr:\n{}",
        stdout(&out_put),
        stderr(&out_put)
    );
    // Within a second in a release build; a debug build on a loaded machine gets more.
    assert!(took < Duration::from_secs(15), "stopped after {took:?}");
    assert!(
        stderr(&out_put).contains("stopping the runs in progress"),
        "{}",
        stderr(&out_put)
    );
    let report = read(&out.join("report.md"));
    assert!(
        report.contains("Partial: interrupted after 0 of "),
        "{report}"
    );
    let manifest = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "csv"))
        .expect("a CSV written");
    assert!(read(&manifest).starts_with("# partial: interrupted after 0 of "));
}

#[test]
fn an_experiments_second_signal_stops_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("cap");
    let mut run = endless_capacity(&out, "1");
    std::thread::sleep(Duration::from_millis(1500));
    let child = run.0.as_mut().unwrap();
    kill(child, "-TERM");
    // Apart, so that the two are not merged into one pending signal.
    std::thread::sleep(Duration::from_millis(50));
    kill(child, "-TERM");
    let signalled = Instant::now();
    let status = run.0.take().unwrap().wait_with_output().unwrap().status;
    assert!(signalled.elapsed() < Duration::from_secs(15));
    assert_eq!(status.code(), Some(143));
}
