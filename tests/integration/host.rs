//! `rtvmm host run` stopped by a signal: SIGINT (Ctrl-C) and SIGTERM stop the run, print
//! the results of what ran and exit 130 and 143; when the command returns, nothing is
//! left behind (no rtvmm cgroup, RT throttling restored, no rtvmm thread, no run record).
//! Every backend, twice each. A watchdog killed alone stops the run (exit 1, nothing
//! left), or is a warning with `--carry-on-without-watchdog`. Needs root, cgroup v2 and
//! SCHED_FIFO: otherwise it prints `skipped: ...` with the reason. `rtvmm host cleanup`
//! with nothing to do says so.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use rtvmm_host::enforce::Backend;
use rtvmm_host::sys;

use crate::common::*;

fn rt_runtime() -> String {
    std::fs::read_to_string(sys::RT_RUNTIME_PATH)
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// What `rtvmm host run` of pid `pid` may have left: its cgroup, a run record, a thread
/// named `rtvmm-*` in any other process (its guests, spinner, watchdog), throttling
/// changed.
fn leftovers(pid: u32, rt_before: &str) -> Vec<String> {
    let mut found = Vec::new();
    if let Some(cg) = sys::cgroup2_mount().map(|m| m.join(format!("rtvmm-{pid}"))) {
        if cg.exists() {
            found.push(format!("cgroup {}", cg.display()));
        }
    }
    let record = Path::new(rtvmm_host::runs::STATE_DIR).join(format!("run-{pid}.state"));
    if record.exists() {
        found.push(format!("record {}", record.display()));
    }
    if rt_runtime() != rt_before {
        found.push(format!("sched_rt_runtime_us is {}", rt_runtime()));
    }
    // This test process is not the run's: its other tests' threads (the control server's
    // `rtvmm-ctl` of a stand-in) are not leftovers. Nor are the threads of another program
    // that happens to be called rtvmm-something (another checkout's binary on a shared
    // machine): a run's executor, guests and watchdog are all this test's `rtvmm` binary.
    let me = std::process::id().to_string();
    let ours = std::fs::canonicalize(env!("CARGO_BIN_EXE_rtvmm")).ok();
    for p in std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter(|p| p.file_name() != me.as_str())
        .filter(|p| std::fs::read_link(p.path().join("exe")).ok() == ours)
    {
        for t in std::fs::read_dir(p.path().join("task"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if comm.starts_with("rtvmm-") {
                found.push(format!("thread {} {}", t.path().display(), comm.trim()));
            }
        }
    }
    found
}

#[test]
fn sigint_and_sigterm_stop_host_run_with_its_results_and_leave_nothing_behind() {
    if skip_real_time("host run stopped by a signal") {
        return;
    }
    let _one_at_a_time = REAL_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let rt_before = rt_runtime();
    for backend in Backend::ALL {
        for (signal, name, code) in [("-INT", "SIGINT", 130), ("-TERM", "SIGTERM", 143)] {
            for round in 1..=2 {
                let what = format!("{} {name} round {round}", backend.name());
                let dir = tempfile::tempdir().unwrap();
                let json = dir.path().join("run.json");
                let jobs = dir.path().join("jobs.csv");
                let child = Command::new(env!("CARGO_BIN_EXE_rtvmm"))
                    .args(["host", "run", &example("even-share.toml")])
                    .args(["--duration", "60s", "--enforce", backend.name()])
                    .arg("--json")
                    .arg(&json)
                    .arg("--jobs")
                    .arg(&jobs)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .expect("rtvmm host run");
                let pid = child.id();
                let cgroup = sys::cgroup2_mount().map(|m| m.join(format!("rtvmm-{pid}")));
                let deadline = Instant::now() + Duration::from_secs(10);
                while !(rt_runtime() == "-1" && cgroup.as_deref().is_some_and(Path::exists))
                    && Instant::now() < deadline
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                std::thread::sleep(Duration::from_millis(500));
                let sent = Command::new("kill")
                    .args([signal, &pid.to_string()])
                    .status()
                    .unwrap();
                assert!(sent.success(), "{what}: kill {signal}");
                let out = child.wait_with_output().unwrap();
                let text = stdout(&out);
                assert_eq!(
                    out.status.code(),
                    Some(code),
                    "{what}: {text}{}",
                    stderr(&out)
                );
                assert!(
                    text.contains("stopped at ") && text.contains("of 60s: these results"),
                    "{what}: {text}"
                );
                assert!(text.contains("do_schedule (ns)"), "{what}: {text}");
                // Its files say they are partial, as an interrupted simulation's do.
                let results = std::fs::read_to_string(&json).unwrap();
                assert!(results.contains("\"partial\": true"), "{what}: {results}");
                let rows = std::fs::read_to_string(&jobs).unwrap();
                assert!(
                    rows.starts_with(&format!("# partial: interrupted by {name} at ")),
                    "{what}: {}",
                    rows.lines().next().unwrap_or("")
                );
                assert!(
                    stderr(&out).contains(&format!("rtvmm: {name}: stopping the run")),
                    "{what}: {}",
                    stderr(&out)
                );
                let left = leftovers(pid, &rt_before);
                assert!(left.is_empty(), "{what}: left behind {left:?}");
            }
        }
    }
    let out = rtvmm(&["host", "cleanup"]);
    assert_exit(&out, 0);
    assert!(
        stdout(&out).contains("nothing to recover: no abandoned run"),
        "{}",
        stdout(&out)
    );
}

/// The watchdog of `rtvmm host run` of pid `pid`: its child whose arguments name the
/// watchdog.
fn watchdog_of(pid: u32) -> Option<i32> {
    for p in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(child) = p.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let stat = std::fs::read_to_string(p.path().join("stat")).unwrap_or_default();
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        let ppid: Option<u32> = after.split_whitespace().nth(1).and_then(|v| v.parse().ok());
        let cmdline = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
        if ppid == Some(pid) && cmdline.split(|&b| b == 0).any(|a| a == b"watchdog") {
            return Some(child);
        }
    }
    None
}

/// `rtvmm host run` whose watchdog is killed alone: it stops, undoes everything itself
/// and exits 1 naming the watchdog and how it died; with `--carry-on-without-watchdog`
/// it warns, runs to its end (exit 0) and cleans up as usual.
#[test]
fn a_killed_watchdog_stops_host_run_unless_told_to_carry_on() {
    if skip_real_time("host run whose watchdog is killed") {
        return;
    }
    let _one_at_a_time = REAL_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let rt_before = rt_runtime();
    for carry_on in [false, true] {
        let child = Command::new(env!("CARGO_BIN_EXE_rtvmm"))
            .args(["host", "run", &example("even-share.toml")])
            .args(["--duration", if carry_on { "2s" } else { "60s" }])
            .args(carry_on.then_some("--carry-on-without-watchdog"))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("rtvmm host run");
        let pid = child.id();
        let cgroup = sys::cgroup2_mount().map(|m| m.join(format!("rtvmm-{pid}")));
        let deadline = Instant::now() + Duration::from_secs(10);
        while !(rt_runtime() == "-1" && cgroup.as_deref().is_some_and(Path::exists))
            && Instant::now() < deadline
        {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(300));
        let watchdog = watchdog_of(pid).expect("the run's watchdog");
        let sent = Command::new("kill")
            .args(["-KILL", &watchdog.to_string()])
            .status()
            .unwrap();
        assert!(sent.success(), "kill -KILL {watchdog}");
        let out = child.wait_with_output().unwrap();
        let said = stderr(&out);
        let died = format!("the watchdog (pid {watchdog}) died (killed by SIGKILL) at ");
        if carry_on {
            assert_eq!(out.status.code(), Some(0), "{said}");
            assert!(
                said.contains(&format!("rtvmm: warning: {died}")),
                "carry on: {said}"
            );
            assert!(stdout(&out).contains("do_schedule (ns)"), "the results");
        } else {
            assert_eq!(out.status.code(), Some(1), "{said}");
            assert!(
                said.contains(&format!("rtvmm: error: {died}"))
                    && said.contains("the run was stopped"),
                "{said}"
            );
        }
        let left = leftovers(pid, &rt_before);
        assert!(left.is_empty(), "carry on {carry_on}: left behind {left:?}");
    }
}

/// `rtvmm bench wake` refuses bad options before anything runs (exit 2, naming the
/// option), on any machine.
#[test]
fn bench_wake_refuses_bad_options() {
    for (args, says) in [
        (&["--loops", "0"][..], "--loops: must be at least 1"),
        (&["--interval", "5"][..], "no unit"),
        (&["--interval", "0ms"][..], "must be greater than 0"),
        (&["--quantiles", "1"][..], "--quantiles 1: at least 2"),
        (
            &["--loops", "1000000", "--interval", "1ms"][..],
            "more than the 600s",
        ),
        (
            &["--cpu", "4096"][..],
            "--cpu 4096: this machine has cpus 0 to",
        ),
    ] {
        let mut all = vec!["bench", "wake"];
        all.extend_from_slice(args);
        let o = rtvmm(&all);
        assert_exit(&o, 2);
        assert!(stderr(&o).contains(says), "{args:?}: {}", stderr(&o));
    }
}

/// A short real-time `rtvmm bench wake` (200 wakes of 500 µs) prints its figures and
/// writes a preset that a scenario's `wake_delivery` reads; it leaves no real-time thread
/// (the process has ended). Only where privileged.
#[test]
fn bench_wake_measures_and_writes_a_preset_that_reads_back() {
    if skip_real_time("bench wake, real time") {
        return;
    }
    let _one_at_a_time = REAL_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let preset = dir.path().join("here.toml");
    let o = rtvmm(&[
        "bench",
        "wake",
        "--loops",
        "200",
        "--interval",
        "500us",
        "--quantiles",
        "11",
        "--write-preset",
        preset.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("SCHED_FIFO 99"), "{out}");
    assert!(out.contains("C:200 Min:"), "{out}");
    let text = std::fs::read_to_string(&preset).unwrap();
    let delivery = rtvmm_scenario::parse_wake_delivery(&text).unwrap();
    match delivery.random {
        rtvmm_core::wake::WakeRandom::Empirical { quantiles } => assert_eq!(quantiles.len(), 11),
        other => panic!("{other:?}"),
    }
}
