//! `rtvmm ctl` as a user runs it, against a control socket served by the host crate's
//! stand-in executor (a real `Machine` on a virtual clock): what each command prints and
//! changes, its exit codes, and another user refused; then against a live `rtvmm host run
//! --ctl` (the real executor).

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output};

use rtvmm_core::model::VcpuId;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_host::ctl::{Server, StandIn};
use rtvmm_scenario::Scenario;

use crate::common::{assert_exit, assert_readable, skip_real_time, stderr, stdout, REAL_TIME};

const SCENARIO: &str = r#"
    name = "two"
    duration = "10s"
    [[domain]]
    name = "d1"
    vcpu = { budget = "2ms", period = "10ms" }
    [[domain]]
    name = "d2"
    vcpu = { budget = "4ms", period = "20ms" }
"#;

/// A socket in a fresh directory others may traverse, served by a stand-in executor.
fn serve() -> (tempfile::TempDir, Server, StandIn) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (server, requests) = Server::start(dir.path().join("two.sock")).unwrap();
    let scenario = Scenario::from_toml(SCENARIO, "two.toml").unwrap();
    let executor = StandIn::from_scenario(&scenario, requests).unwrap();
    (dir, server, executor)
}

fn ctl_with(binary: &Path, socket: &Path, args: &[&str], uid: Option<u32>) -> Output {
    let mut command = Command::new(binary);
    command.arg("ctl").arg("--socket").arg(socket).args(args);
    if let Some(uid) = uid {
        command.uid(uid).gid(uid);
    }
    let output = command.output().expect("run rtvmm ctl");
    // What a user sees, for the README's draft (`cargo test -- --nocapture`).
    println!(
        "$ rtvmm ctl {}\n{}{}",
        args.join(" "),
        stdout(&output),
        stderr(&output)
    );
    output
}

fn ctl(socket: &Path, args: &[&str]) -> Output {
    ctl_with(Path::new(env!("CARGO_BIN_EXE_rtvmm")), socket, args, None)
}

fn ms(x: u64) -> Nanos {
    Nanos::from_ms(x)
}

#[test]
fn rtvmm_ctl_drives_a_running_executor() {
    let (dir, server, executor) = serve();
    let socket = server.path();

    let o = ctl(socket, &["sched-show"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(text.starts_with("policy deferrable, as of "), "{text}");
    assert!(
        text.contains("\nName  ID  Budget  Period  Prio  Weight  Cap  Extra"),
        "{text}"
    );
    assert!(
        text.contains("\nd1     0     2ms    10ms     1    2000    0     no"),
        "{text}"
    );

    let o = ctl(socket, &["sched-set", "-d", "d1", "-b", "3ms"]);
    assert_exit(&o, 0);
    assert!(stdout(&o).starts_with("d1: budget 2ms -> 3ms, weight 2000 -> 3000 (policy deferrable"));
    executor.with(|m, _| assert_eq!(m.params(VcpuId(0)).budget, ms(3)));

    // xl's microseconds.
    let o = ctl(
        socket,
        &["sched-rtds", "-d", "d2", "-p", "20000", "-b", "5000"],
    );
    assert_exit(&o, 0);
    executor.with(|m, _| {
        assert_eq!(m.params(VcpuId(1)).budget, ms(5));
        assert_eq!(m.params(VcpuId(1)).period, ms(20));
    });

    let o = ctl(socket, &["policy", "rtds"]);
    assert_exit(&o, 0);
    assert_eq!(
        stdout(&o),
        "policy deferrable -> rtds: every domain starts its first period under rtds now\n"
    );
    executor.with(|m, _| assert_eq!(m.policy_kind(), PolicyKind::Rtds));

    let file = dir.path().join("d3.toml");
    std::fs::write(
        &file,
        "name = \"d3\"\nvcpu = { budget = \"1ms\", period = \"5ms\", priority = 3 }\n\
         [[task]]\nname = \"t1\"\nperiod = \"10ms\"\nwcet = \"1ms\"\n",
    )
    .unwrap();
    let o = ctl(socket, &["domain", "add", file.to_str().unwrap()]);
    assert_exit(&o, 0);
    assert_eq!(
        stdout(&o),
        "d3: added as VCPU 2 (1 task, guest rm; budget 1ms, period 5ms, priority 3)\n"
    );
    let o = ctl(socket, &["--json", "sched-show", "-d", "d3"]);
    assert_exit(&o, 0);
    let reply: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(reply["v"], 1);
    assert_eq!(reply["status"], "show");
    assert_eq!(reply["policy"], "rtds");
    assert_eq!(reply["domains"][0]["name"], "d3");
    assert_eq!(reply["domains"][0]["budget_ns"], 1_000_000);

    let o = ctl(socket, &["domain", "remove", "d3"]);
    assert_exit(&o, 0);
    assert_eq!(stdout(&o), "d3: removed (VCPU 2)\n");
    let o = ctl(socket, &["sched-rtds"]);
    assert_exit(&o, 0);
    assert!(!stdout(&o).contains("d3"));
}

#[test]
fn refusals_exit_1_and_bad_input_exits_2_and_neither_changes_anything() {
    let (dir, server, executor) = serve();
    let socket = server.path();
    let before = executor.with(|m, _| {
        (
            m.params(VcpuId(0)).clone(),
            m.params(VcpuId(1)).clone(),
            m.policy_kind(),
        )
    });
    for (args, code, message) in [
        (
            vec!["sched-set", "-d", "d1", "-b", "12ms"],
            1,
            "rtvmm: error: request: domain 'd1': vcpu: budget: 12ms is above the period 10ms \
             (rejected by policy deferrable)",
        ),
        (
            vec!["domain", "remove", "d9"],
            1,
            "rtvmm: error: request: domain: no domain named 'd9' (running: d1, d2)",
        ),
        (
            vec!["sched-set", "-d", "d1", "-b", "3"],
            2,
            "rtvmm: error: request: domain 'd1': budget: 3 is a bare number: write times as a \
             string with a unit (ns, us, ms, s), for example \"10ms\"",
        ),
        (
            vec!["sched-set", "-d", "d1"],
            2,
            "rtvmm: error: sched-set: nothing to set: give any of --budget, --period, \
             --priority, --weight, --cap, --extratime, --max-replenishments",
        ),
        (
            vec!["sched-rtds", "-p", "10000"],
            2,
            "rtvmm: error: sched-rtds: -p, -b and -e set a domain's parameters: name it with -d",
        ),
    ] {
        let o = ctl(socket, &args);
        assert_exit(&o, code);
        assert_eq!(stderr(&o).trim_end(), message, "{args:?}");
        assert_readable(&stderr(&o));
    }
    let o = ctl(socket, &["policy", "fifo"]);
    assert_exit(&o, 2);
    assert!(stderr(&o).starts_with("rtvmm: error: request: policy: unknown policy 'fifo'"));

    let file = dir.path().join("d3.toml");
    std::fs::write(
        &file,
        "name = \"d3\"\nvcpu = { budget = \"1ms\", period = \"5ms\" }\n",
    )
    .unwrap();
    let o = ctl(socket, &["domain", "add", file.to_str().unwrap()]);
    assert_exit(&o, 2);
    assert_eq!(
        stderr(&o).trim_end(),
        format!(
            "rtvmm: error: {}: domain 'd3': vcpu.priority: missing: a domain added to a \
             running system needs a priority (smaller is higher), as the running domains are \
             not re-ranked",
            file.display()
        )
    );

    let after = executor.with(|m, _| {
        (
            m.params(VcpuId(0)).clone(),
            m.params(VcpuId(1)).clone(),
            m.policy_kind(),
        )
    });
    assert_eq!(after, before);

    let gone = dir.path().join("gone.sock");
    let o = ctl(&gone, &["sched-show"]);
    assert_exit(&o, 1);
    assert_eq!(
        stderr(&o).trim_end(),
        format!(
            "rtvmm: error: {}: no such socket: is `rtvmm host run` running?",
            gone.display()
        )
    );
}

/// `nobody`'s uid, from `/etc/passwd`.
fn nobody() -> Option<u32> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd
        .lines()
        .find(|l| l.starts_with("nobody:"))
        .and_then(|l| l.split(':').nth(2))
        .and_then(|uid| uid.parse().ok())
}

/// The real binary run as another user is refused: by the socket's permission bits
/// (0600), and — with the mode opened up by hand — by the server's credential check.
#[test]
fn rtvmm_ctl_as_another_user_is_refused() {
    let uid = Command::new("id").arg("-u").output().map(|o| stdout(&o));
    if !uid.is_ok_and(|uid| uid.trim() == "0") {
        println!("skipped: rtvmm_ctl_as_another_user_is_refused needs root (to run rtvmm as another user)");
        return;
    }
    let Some(nobody) = nobody() else {
        println!("skipped: rtvmm_ctl_as_another_user_is_refused needs a user named nobody");
        return;
    };
    let (dir, server, executor) = serve();
    let socket = server.path();
    let before = executor.with(|m, _| m.params(VcpuId(0)).clone());
    // A copy the other user can run wherever the build is.
    let binary = dir.path().join("rtvmm");
    std::fs::copy(env!("CARGO_BIN_EXE_rtvmm"), &binary).unwrap();
    std::fs::set_permissions(&binary, std::fs::Permissions::from_mode(0o755)).unwrap();
    let set = ["sched-set", "-d", "d1", "-b", "1ms"];

    let o = ctl_with(&binary, socket, &set, Some(nobody));
    assert_exit(&o, 1);
    assert_eq!(
        stderr(&o).trim_end(),
        format!(
            "rtvmm: error: {}: permission denied: the control socket is its owner's only \
             (mode 0600): run as the user that started the executor, or as root",
            socket.display()
        ),
        "refused by the permission bits"
    );

    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o666)).unwrap();
    let o = ctl_with(&binary, socket, &set, Some(nobody));
    assert_exit(&o, 1);
    assert_eq!(
        stderr(&o).trim_end(),
        format!(
            "rtvmm: error: not permitted: uid {nobody} is neither the socket's owner (uid 0) \
             nor root"
        ),
        "refused by the credential check"
    );
    executor.with(|m, _| assert_eq!(m.params(VcpuId(0)), &before));
}

/// The two domains of `rtvmm host run` below: d1 (2 ms every 10 ms, priority 1) and
/// rest (10 ms every 10 ms, priority 2), both always busy.
const LIVE_SCENARIO: &str = r#"
    name = "live"
    duration = "3s"
    [[domain]]
    name = "d1"
    vcpu = { budget = "2ms", period = "10ms", priority = 1 }
    [[domain.task]]
    name = "busy"
    period = "10ms"
    wcet = "20ms"
    [[domain]]
    name = "rest"
    vcpu = { budget = "10ms", period = "10ms", priority = 2 }
    [[domain.task]]
    name = "busy"
    period = "10ms"
    wcet = "20ms"
"#;

/// `rtvmm ctl` against a live `rtvmm host run --ctl PATH` (the real executor; needs root,
/// cgroup v2 and SCHED_FIFO, else skipped with the reason): the socket's path is printed
/// at the start, `sched-show` shows the running domains with their guests' jobs,
/// `sched-set` changes a budget, and the socket is gone when the run ends.
/// A `rtvmm host run` of [`LIVE_SCENARIO`] serving `socket`, once the socket is there.
fn live_host_run(dir: &Path, socket: &Path) -> std::process::Child {
    let scenario = dir.join("live.toml");
    std::fs::write(&scenario, LIVE_SCENARIO).unwrap();
    let mut run = Command::new(env!("CARGO_BIN_EXE_rtvmm"))
        .arg("host")
        .arg("run")
        .arg(&scenario)
        .arg("--ctl")
        .arg(socket)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("rtvmm host run");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !socket.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    if !socket.exists() {
        let _ = run.kill();
        panic!("no socket: {:?}", run.wait_with_output().unwrap());
    }
    run
}

/// `kill -9` of a `rtvmm host run --ctl`: its watchdog removes the socket.
#[test]
fn the_socket_of_a_killed_host_run_is_removed() {
    if skip_real_time("socket of a killed run") {
        return;
    }
    let _one_at_a_time = REAL_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("killed.sock");
    let mut run = live_host_run(dir.path(), &socket);
    std::thread::sleep(std::time::Duration::from_millis(300));
    let record = Path::new(rtvmm_host::runs::STATE_DIR).join(format!("run-{}.state", run.id()));
    run.kill().unwrap();
    run.wait().unwrap();
    // The watchdog removes the socket first and the run's record last, once everything is
    // undone: the next real-time test starts from a clean machine.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while (socket.exists() || record.exists()) && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!socket.exists(), "the killed run's socket is still there");
    assert!(!record.exists(), "the killed run was not undone");
}

#[test]
fn rtvmm_ctl_drives_a_live_host_run() {
    if skip_real_time("rtvmm ctl against a live run") {
        return;
    }
    let _one_at_a_time = REAL_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("live.sock");
    let run = live_host_run(dir.path(), &socket);
    std::thread::sleep(std::time::Duration::from_millis(500));

    let o = ctl(&socket, &["sched-show"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(text.starts_with("policy deferrable, as of "), "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        [
            "Name",
            "ID",
            "Budget",
            "Period",
            "Prio",
            "Weight",
            "Cap",
            "Extra",
            "Work",
            "Remaining",
            "Run",
            "Jobs",
            "Misses"
        ],
        "{text}"
    );
    assert!(
        lines[2].starts_with("d1     0     2ms    10ms     1    2000    0     no  "),
        "{text}"
    );
    assert!(
        lines[3].starts_with("rest   1    10ms    10ms     2   10000    0     no  "),
        "{text}"
    );
    // The guests' jobs, counted live: each busy task finishes a 20 ms job now and then.
    let jobs = |line: &str| -> u64 { line.split_whitespace().nth(11).unwrap().parse().unwrap() };
    assert!(jobs(lines[3]) > 0, "{text}");

    let o = ctl(&socket, &["sched-set", "-d", "d1", "-b", "5ms"]);
    assert_exit(&o, 0);
    assert!(
        stdout(&o).starts_with("d1: budget 2ms -> 5ms, weight 2000 -> 5000 (policy deferrable"),
        "{}",
        stdout(&o)
    );
    let o = ctl(&socket, &["sched-rtds", "-d", "d1"]);
    assert_exit(&o, 0);
    assert!(
        stdout(&o)
            .lines()
            .nth(2)
            .is_some_and(|l| l.starts_with("d1     0     5ms    10ms     1    5000")),
        "{}",
        stdout(&o)
    );

    let output = run.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{err}");
    assert!(
        err.contains(&format!("rtvmm: live control on {}", socket.display())),
        "{err}"
    );
    assert!(
        String::from_utf8_lossy(&output.stdout).starts_with("live · policy deferrable"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    assert!(!socket.exists(), "the socket is removed at the end");
}
