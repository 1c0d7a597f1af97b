//! Without the privileges, a run refuses to start and names what is missing.

use std::os::unix::process::CommandExt;
use std::process::Command;

use crate::util::{skip, RUN_ARG};

/// The stand-alone executor started as user `nobody` (65534) exits with 2 and names the
/// missing privileges; with `best-effort` (and the `signal` backend, the one a user may
/// use on their own processes) it runs and labels its results not real-time, in the
/// summary and in the JSON. The test binary is copied where `nobody` may execute it.
pub fn an_unprivileged_user_is_refused_with_the_privilege_named() {
    // Root is needed to become someone else; the same check as the other tests.
    if skip("privileges") {
        return;
    }
    let dir = std::env::temp_dir().join(format!("rtvmm-priv-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("executor");
    std::fs::copy(std::env::current_exe().unwrap(), &copy).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    let as_nobody = |args: &[&str]| {
        Command::new(&copy)
            .args(args)
            .uid(65534)
            .gid(65534)
            .output()
            .expect("runs as nobody")
    };
    let output = as_nobody(&[RUN_ARG, "deferrable", "freeze", "500"]);
    let best_effort = as_nobody(&[RUN_ARG, "deferrable", "signal", "300", "best-effort"]);
    let _ = std::fs::remove_dir_all(&dir);
    let stdout = String::from_utf8_lossy(&best_effort.stdout);
    assert!(
        best_effort.status.success(),
        "best effort: {}",
        String::from_utf8_lossy(&best_effort.stderr)
    );
    assert!(
        stdout.contains("NOT REAL-TIME (--best-effort): real-time scheduling: SCHED_FIFO"),
        "{stdout}"
    );
    assert!(stdout.contains("\"real_time\": false"), "{stdout}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        stderr.contains("SCHED_FIFO needs root or CAP_SYS_NICE"),
        "stderr: {stderr}"
    );
    assert!(stderr.contains("sched_rt_runtime_us"), "stderr: {stderr}");
    assert!(stderr.contains("--best-effort"), "stderr: {stderr}");
}
