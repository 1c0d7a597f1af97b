//! `rtvmm experiment NAME --host`: rtxen-overhead and rtxen-isolation in real time on this
//! machine, the refusal for the other experiments, and the refusal without privileges.
//!
//! The real-time tests need root, cgroup v2 and SCHED_FIFO (they print `skipped: <reason>`
//! otherwise) and take the machine: run them under `flock /tmp/rtvmm-rt.lock` where other
//! real-time runs may share it. Within this binary they run one at a time (`common::REAL_TIME`).

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

use rtvmm_host::sys;

use crate::common::{assert_exit, rtvmm, skip_real_time as skip, stderr, stdout, REAL_TIME};

/// Runs `rtvmm` holding `REAL_TIME`, then checks that the run left nothing behind: its
/// cgroup, a changed RT throttling setting, a real-time thread of its own.
fn real_time_run(args: &[&str]) -> Output {
    let _machine = REAL_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let throttle = std::fs::read_to_string(sys::RT_RUNTIME_PATH).unwrap_or_default();
    let child = Command::new(env!("CARGO_BIN_EXE_rtvmm"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run rtvmm");
    let pid = child.id();
    let output = child.wait_with_output().expect("rtvmm output");
    if let Some(mount) = sys::cgroup2_mount() {
        let cgroup = mount.join(format!("rtvmm-{pid}"));
        assert!(!cgroup.exists(), "left behind: {}", cgroup.display());
    }
    assert_eq!(
        std::fs::read_to_string(sys::RT_RUNTIME_PATH).unwrap_or_default(),
        throttle,
        "RT throttling not restored"
    );
    output
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file))
        .unwrap_or_else(|e| panic!("{}: {e}", dir.join(file).display()))
}

/// A CSV as a header and rows (no quoted fields in these files).
fn csv(text: &str) -> (Vec<String>, Vec<Vec<String>>) {
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header = lines.next().expect("header").split(',').map(String::from);
    let rows = lines
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    (header.collect(), rows)
}

fn cell<'a>(header: &[String], row: &'a [String], name: &str) -> &'a str {
    let i = header
        .iter()
        .position(|h| h == name)
        .unwrap_or_else(|| panic!("no column {name}"));
    &row[i]
}

#[test]
fn rtxen_overhead_on_the_host_writes_the_measured_table_per_policy() {
    if skip("rtxen-overhead --host") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    let o = real_time_run(&[
        "experiment",
        "rtxen-overhead",
        "--host",
        "--quick",
        "--no-progress",
        "--out",
        &out,
    ]);
    assert_exit(&o, 0);
    let (header, rows) = csv(&read(dir.path(), "overhead_host.csv"));
    let policies: Vec<&str> = rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        policies,
        [
            "deferrable",
            "periodic",
            "polling",
            "sporadic",
            "credit",
            "credit-1ms",
            "sedf"
        ]
    );
    for row in &rows {
        assert_eq!(cell(&header, row, "source"), "host", "{row:?}");
        assert_eq!(cell(&header, row, "real_time"), "true", "{row:?}");
        let calls: u64 = cell(&header, row, "do_schedule_calls").parse().unwrap();
        let timed: u64 = cell(&header, row, "do_schedule_timed").parse().unwrap();
        assert!(calls > 0 && timed > 0, "{row:?}");
        // Every call timed has a time; the median lies between the extremes.
        let p50: u64 = cell(&header, row, "do_schedule_p50_ns").parse().unwrap();
        let max: u64 = cell(&header, row, "do_schedule_max_ns").parse().unwrap();
        assert!(p50 > 0 && p50 <= max, "{row:?}");
        // The scheduler thread slept on its timer: wake-ups were measured.
        let wakeups: u64 = cell(&header, row, "tick_wakeups").parse().unwrap();
        assert!(wakeups > 0, "{row:?}");
        assert_eq!(cell(&header, row, "jobs_lost"), "0", "{row:?}");
    }
    let report = read(dir.path(), "report.md");
    for expected in [
        "real time on Linux",
        "--quick --host",
        "Scheduler overhead per policy — host executor",
        "host steal (ms)",
        "tick lateness",
    ] {
        assert!(report.contains(expected), "{expected} missing:\n{report}");
    }
    assert!(
        stdout(&o).contains("deferrable (host): do_schedule"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn rtxen_isolation_on_the_host_writes_its_csv() {
    if skip("rtxen-isolation --host") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().display().to_string();
    // One policy keeps the test short: 2 cases × 2 s.
    let o = real_time_run(&[
        "experiment",
        "rtxen-isolation",
        "--host",
        "--quick",
        "--policies",
        "deferrable",
        "--no-progress",
        "--out",
        &out,
    ]);
    assert_exit(&o, 0);
    let (header, rows) = csv(&read(dir.path(), "isolation_host.csv"));
    assert_eq!(rows.len(), 10, "2 cases × 5 domains");
    for row in &rows {
        assert_eq!(cell(&header, row, "source"), "host");
        assert_eq!(cell(&header, row, "real_time"), "true");
        let jobs: u64 = cell(&header, row, "jobs").parse().unwrap();
        assert!(jobs > 0, "{row:?}");
    }
    // d3's misconfigured task needs about 24 % of the cpu against its server's 20 %: its
    // backlog grows, and it misses.
    let d3 = rows
        .iter()
        .find(|r| r[0] == "overloaded" && r[2] == "d3")
        .expect("overloaded d3");
    let missed: u64 = cell(&header, d3, "missed").parse().unwrap();
    assert!(missed > 0, "{d3:?}");
    let report = read(dir.path(), "report.md");
    assert!(
        report.contains("Each run's conditions — real time on Linux"),
        "{report}"
    );
}

#[test]
fn host_on_another_experiment_is_refused_naming_the_two_that_run_there() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out").display().to_string();
    let o = rtvmm(&[
        "experiment",
        "rtxen-capacity",
        "--host",
        "--quick",
        "--out",
        &out,
    ]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains(
            "--host: only rtxen-overhead and rtxen-isolation run on the host; rtxen-capacity"
        ),
        "{}",
        stderr(&o)
    );
    assert!(!dir.path().join("out").exists(), "nothing written");
    let o = rtvmm(&["experiment", "all", "--host", "--quick", "--out", &out]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("--host: only rtxen-overhead and rtxen-isolation run on the host"),
        "{}",
        stderr(&o)
    );
    // The executor's flags mean nothing without --host.
    let o = rtvmm(&["experiment", "rtxen-overhead", "--cpu", "0", "--out", &out]);
    assert_exit(&o, 2);
    let o = rtvmm(&[
        "experiment",
        "rtxen-overhead",
        "--host",
        "--enforce",
        "gently",
        "--out",
        &out,
    ]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("--enforce: unknown enforcement backend 'gently'"),
        "{}",
        stderr(&o)
    );
}

/// As user `nobody`, `--host` is refused with the executor's missing-privilege message
/// before anything runs; with `--best-effort` (and the `signal` backend, which a user may
/// use on their own processes) it runs and labels every result not real-time.
#[test]
fn without_privileges_host_is_refused_unless_best_effort_which_labels_everything() {
    // Root is needed to become someone else.
    if skip("--host without privileges") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    use std::os::unix::fs::PermissionsExt;
    let open = |p: &Path| std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o777));
    open(dir.path()).unwrap();
    let copy = dir.path().join("rtvmm");
    std::fs::copy(env!("CARGO_BIN_EXE_rtvmm"), &copy).unwrap();
    open(&copy).unwrap();
    let out = dir.path().join("out");
    let as_nobody = |args: &[&str]| {
        let _machine = REAL_TIME.lock().unwrap_or_else(|e| e.into_inner());
        Command::new(&copy)
            .args(args)
            .current_dir(dir.path())
            .uid(65534)
            .gid(65534)
            .output()
            .expect("runs as nobody")
    };
    let out_arg = out.display().to_string();
    let refused = as_nobody(&[
        "experiment",
        "rtxen-overhead",
        "--host",
        "--quick",
        "--out",
        &out_arg,
    ]);
    assert_exit(&refused, 2);
    let message = stderr(&refused);
    assert!(
        message.contains("missing privileges for a real-time run"),
        "{message}"
    );
    assert!(
        message.contains("SCHED_FIFO needs root or CAP_SYS_NICE"),
        "{message}"
    );
    assert!(message.contains("--best-effort"), "{message}");
    assert!(!out.exists(), "nothing written when refused");
    let best_effort = as_nobody(&[
        "experiment",
        "rtxen-overhead",
        "--host",
        "--best-effort",
        "--enforce",
        "signal",
        "--policies",
        "deferrable",
        "--duration",
        "300ms",
        "--no-progress",
        "--out",
        &out_arg,
    ]);
    assert_exit(&best_effort, 0);
    let (header, rows) = csv(&read(&out, "overhead_host.csv"));
    assert_eq!(rows.len(), 1);
    assert_eq!(cell(&header, &rows[0], "real_time"), "false");
    let report = read(&out, "report.md");
    assert!(report.contains("NOT real time (--best-effort"), "{report}");
    assert!(
        !report.contains("— host executor, real time on Linux"),
        "{report}"
    );
}
