//! Whatever happens to the executor, nothing stays behind: no frozen or demoted domain
//! (their guests are gone), RT throttling as it was, no rtvmm cgroup, no guest, no
//! spinner.

use std::process::{Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rtvmm_core::policy::PolicyKind;
use rtvmm_host::enforce::Backend;
use rtvmm_host::executor;

use crate::util::{
    eventually, exists, leftovers, ms, options, rt_runtime_at_start, rtvmm_threads, run_cgroup,
    skip, twenty_percent, RUN_ARG,
};

/// Starts a stand-alone executor, waits until it runs (throttling lifted, its cgroup
/// populated, its threads there), lets it run a while, kills it with `signal`, and checks
/// that the watchdog undid everything within 10 s.
fn kill_and_check(backend: Backend, signal: Signal, round: usize) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([RUN_ARG, "deferrable", backend.name(), "60000"])
        .stdout(Stdio::null())
        .spawn()
        .expect("the stand-alone executor starts");
    let cgroup = run_cgroup(child.id());
    let running = eventually(10, || {
        std::fs::read_to_string(rtvmm_host::sys::RT_RUNTIME_PATH).is_ok_and(|v| v.trim() == "-1")
            && exists(&cgroup)
            && rtvmm_threads().iter().any(|t| t.contains("rtvmm-idle"))
    });
    if !running {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "round {round} ({}): the executor did not start",
            backend.name()
        );
    }
    std::thread::sleep(Duration::from_millis(300));
    kill(Pid::from_raw(child.id() as i32), signal).unwrap();
    let status = child.wait().unwrap();
    assert!(!status.success(), "killed: {status}");
    let clean = eventually(10, || leftovers().is_empty() && !exists(&cgroup));
    assert!(
        clean,
        "round {round} ({}, {signal}): left behind {:?}",
        backend.name(),
        leftovers()
    );
    assert_eq!(
        std::fs::read_to_string(rtvmm_host::sys::RT_RUNTIME_PATH)
            .unwrap()
            .trim(),
        rt_runtime_at_start()
    );
}

/// Six rounds: `kill -9` under each backend twice, then SIGTERM (which the stand-alone
/// executor does not handle: it dies of it) once more under freeze.
pub fn kill_9_of_the_executor_leaves_nothing_behind() {
    if skip("safety") {
        return;
    }
    let mut round = 0;
    for backend in [Backend::Freeze, Backend::Band, Backend::Signal] {
        for _ in 0..2 {
            round += 1;
            kill_and_check(backend, Signal::SIGKILL, round);
        }
    }
    kill_and_check(Backend::Freeze, Signal::SIGTERM, round + 1);
}

/// A run whose stop flag is set part-way ends there with the results of that part
/// (what Ctrl-C does), and leaves nothing behind.
pub fn a_stopped_run_keeps_its_results_and_cleans_up() {
    if skip("stopped run") {
        return;
    }
    let options = {
        let mut o = options(ms(30_000));
        o.backend = Backend::Band;
        o
    };
    let stop = std::sync::Arc::clone(&options.stop);
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        stop.store(true, Ordering::Relaxed);
    });
    let run = executor::run(&twenty_percent(PolicyKind::Deferrable), "stop", 1, options)
        .expect("the run");
    stopper.join().unwrap();
    let at = run.stopped_at.expect("stopped early");
    assert!(at >= ms(600) && at <= ms(2_000), "stopped at {at}");
    assert_eq!(run.results.duration_ns, at.as_ns());
    assert!(run.results.domains[0].jobs > 0, "jobs were counted");
    assert!(leftovers().is_empty(), "{:?}", leftovers());
}
