//! External domains: a plain busy process attached by its pid gets its budget beside a
//! process domain, under every policy; an attached cgroup is thawed and kept, its process
//! alive, after a run and after `kill -9` of the executor; processes attached by pid go
//! back to their own cgroup; a sleeping process is an idle VCPU, never charged.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use rtvmm_core::policy::PolicyKind;
use rtvmm_host::enforce::Backend;
use rtvmm_host::executor::{self, LiveControl};
use rtvmm_host::sys;
use rtvmm_scenario::Scenario;

use crate::util::{
    eventually, expected_share, leftovers, ms, options, rtvmm_threads, skip, RUN_FILE_ARG,
};

/// The attached domain's share may differ from what the run can have given it (30 % less
/// its part of the scheduler's CPU and of the host's steal: [`expected_share`]) by at most
/// this (percentage points): each switch in costs it the switch latency.
const TOLERANCE: f64 = 3.0;

/// A scenario: `ext` (3 ms every 10 ms, highest priority) attached by `source`, beside a
/// process domain `busy` whose task always has work (the rest of the core).
fn scenario(policy: &str, source: &str) -> Scenario {
    let text = format!(
        r#"duration = "1s"
[scheduler]
policy = "{policy}"
major_frame = "10ms"
minor_frames = [{{ domain = "ext", runtime = "3ms" }}, {{ domain = "busy", runtime = "7ms" }}]
[[domain]]
name = "ext"
vcpu = {{ budget = "3ms", period = "10ms", priority = 1 }}
{source}
[[domain]]
name = "busy"
vcpu = {{ budget = "10ms", period = "10ms", priority = 2 }}
[[domain.task]]
name = "spin"
period = "10ms"
wcet = "20ms"
"#
    );
    Scenario::from_toml(&text, "external-test.toml").expect("a valid scenario")
}

/// A process that never sleeps (a shell loop), started in cgroup `cgroup` if given.
fn spinner(cgroup: Option<&Path>) -> Guard {
    let mut command = Command::new("sh");
    match cgroup {
        Some(dir) => command.arg("-c").arg(format!(
            "echo $$ > '{}/cgroup.procs' && exec sh -c 'while :; do :; done'",
            dir.display()
        )),
        None => command.args(["-c", "while :; do :; done"]),
    };
    let child = command.stdin(Stdio::null()).spawn().expect("sh starts");
    // Until it is in its cgroup (and running its loop).
    std::thread::sleep(Duration::from_millis(100));
    Guard(child, cgroup.map(Path::to_path_buf))
}

/// A test cgroup of this process (not named `rtvmm-*`: that is a run's).
fn test_cgroup(what: &str) -> PathBuf {
    let mount = sys::cgroup2_mount().expect("cgroup v2");
    let dir = mount.join(format!("ext-test-{what}-{}", std::process::id()));
    let _ = std::fs::create_dir(&dir);
    dir
}

/// A process of a test and its cgroup: killed and removed when dropped, even when an
/// assertion fails.
struct Guard(Child, Option<PathBuf>);

impl Guard {
    fn id(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
        if let Some(dir) = &self.1 {
            eventually(5, || std::fs::remove_dir(dir).is_ok() || !dir.exists());
        }
    }
}

fn clean_up(guard: Guard, _: Option<&Path>) {
    drop(guard);
}

fn cgroup_line(pid: u32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/cgroup"))
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with("0::"))
        .unwrap_or_default()
        .to_string()
}

/// The process is back as it was: running (not stopped), `SCHED_OTHER`, all its cpus.
fn assert_given_back(pid: u32, what: &str) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("still alive");
    let state = stat[stat.rfind(')').unwrap() + 1..]
        .trim_start()
        .chars()
        .next();
    assert_ne!(state, Some('T'), "{what}: still stopped");
    let (policy, _) = sys::policy_of(pid as i32).unwrap();
    assert_eq!(policy, libc::SCHED_OTHER, "{what}: its policy is back");
    let cpus = sys::affinity_of(pid as i32).unwrap();
    assert_eq!(cpus.len(), sys::cpu_count(), "{what}: all its cpus back");
}

fn run(scenario: &Scenario, backend: Backend) -> rtvmm_host::executor::HostRun {
    let mut options = options(scenario.duration);
    options.backend = backend;
    options.external = scenario.external.clone();
    executor::run(&scenario.system, &scenario.name, 1, options)
        .unwrap_or_else(|e| panic!("host run: {e}"))
}

/// Under every server policy the attached busy process gets 30 % (±3) of the core; under
/// Credit, SEDF, RTDS and ARINC 653 the run works and gives it time; everything is given
/// back after each run.
pub fn a_busy_process_attached_by_pid_gets_its_budget_under_every_policy() {
    if skip("external share") {
        return;
    }
    let child = spinner(None);
    let pid = child.id();
    let before = cgroup_line(pid);
    let servers = [
        PolicyKind::Deferrable,
        PolicyKind::Periodic,
        PolicyKind::Polling,
        PolicyKind::Sporadic,
        PolicyKind::Wcps,
        PolicyKind::Crps,
    ];
    let others = [
        PolicyKind::Credit,
        PolicyKind::Sedf,
        PolicyKind::Rtds,
        PolicyKind::Arinc653,
    ];
    for policy in servers.into_iter().chain(others) {
        let s = scenario(policy.name(), &format!("pids = [{pid}]"));
        let results = run(&s, Backend::Freeze).results;
        let host = results.host.as_ref().expect("a host section");
        let got = 100.0 * host.external[0].cpu_ns as f64 / results.duration_ns as f64;
        let expected = expected_share(30.0, host, results.duration_ns);
        eprintln!(
            "{policy:?}: the attached process had {got:.2}% of the core (expected {expected:.2}%)"
        );
        if servers.contains(&policy) {
            assert!(
                (got - expected).abs() <= TOLERANCE,
                "{policy:?}: the attached process had {got:.2}%, expected {expected:.2}%"
            );
        } else {
            assert!(got > 5.0, "{policy:?}: the attached process had {got:.2}%");
        }
        assert_eq!(host.domain_cpu_ns[0], host.external[0].cpu_ns);
        assert_eq!(cgroup_line(pid), before, "{policy:?}: back in its cgroup");
        assert_given_back(pid, policy.name());
    }
    for backend in [Backend::Band, Backend::Signal] {
        let s = scenario("deferrable", &format!("pids = [{pid}]"));
        let results = run(&s, backend).results;
        let host = results.host.as_ref().unwrap();
        let got = 100.0 * host.external[0].cpu_ns as f64 / results.duration_ns as f64;
        let expected = expected_share(30.0, host, results.duration_ns);
        eprintln!(
            "{}: the attached process had {got:.2}% (expected {expected:.2}%)",
            backend.name()
        );
        assert!(
            (got - expected).abs() <= TOLERANCE,
            "{}: {got:.2}%, expected {expected:.2}%",
            backend.name()
        );
        assert_given_back(pid, backend.name());
    }
    clean_up(child, None);
}

/// A sleeping process (`sleep 100`) is an idle VCPU: never run, never charged.
pub fn a_sleeping_process_is_an_idle_vcpu() {
    if skip("external sleeper") {
        return;
    }
    let child = Guard(
        Command::new("sleep")
            .arg("100")
            .spawn()
            .expect("sleep starts"),
        None,
    );
    let s = scenario("deferrable", &format!("pids = [{}]", child.id()));
    for backend in [Backend::Freeze, Backend::Band] {
        let results = run(&s, backend).results;
        let ext = &results.domains[0];
        assert_eq!(ext.name, "ext");
        assert_eq!(
            ext.vcpus[0].run_ns,
            0,
            "{}: its VCPU never ran",
            backend.name()
        );
        assert_eq!(ext.vcpus[0].budget_consumed_ns, 0, "never charged");
        assert!(results.host.as_ref().unwrap().external[0].cpu_ns < 1_000_000);
    }
    clean_up(child, None);
}

/// An attached cgroup: after a run it still exists, is thawed, its process alive and
/// given back; the same after `kill -9` of a stand-alone executor (the watchdog). A
/// process attached by pid under `freeze` goes back to its own cgroup, both ways.
pub fn an_attached_cgroup_and_moved_pids_are_given_back_even_after_kill_9() {
    if skip("external safety") {
        return;
    }
    let vm = test_cgroup("vm");
    let home = test_cgroup("home");
    let in_vm = spinner(Some(&vm));
    let in_home = spinner(Some(&home));
    let home_line = cgroup_line(in_home.id());
    assert!(home_line.ends_with(home.file_name().unwrap().to_str().unwrap()));
    let check = |what: &str| {
        assert!(vm.exists(), "{what}: the attached cgroup is kept");
        let frozen = std::fs::read_to_string(vm.join("cgroup.freeze")).unwrap();
        assert_eq!(frozen.trim(), "0", "{what}: thawed");
        assert_eq!(
            std::fs::read_to_string(vm.join("cgroup.procs"))
                .unwrap()
                .trim(),
            in_vm.id().to_string(),
            "{what}: its process is alive and in it"
        );
        assert_given_back(in_vm.id(), what);
        assert_eq!(
            cgroup_line(in_home.id()),
            home_line,
            "{what}: moved back home"
        );
        assert_given_back(in_home.id(), what);
    };
    // Two external domains: the cgroup and the pid.
    let text = |policy: &str| {
        let mut s = scenario(policy, &format!("attach = \"{}\"", vm.display())).to_toml();
        s.push_str(&format!(
            "\n[[domain]]\nname = \"ext2\"\nvcpu = {{ budget = \"2ms\", period = \"10ms\", priority = 3 }}\npids = [{}]\n",
            in_home.id()
        ));
        s
    };
    let s = Scenario::from_toml(&text("deferrable"), "two-external.toml").unwrap();
    for backend in [Backend::Freeze, Backend::Signal] {
        let results = run(&s, backend).results;
        let host = results.host.as_ref().unwrap();
        assert_eq!(host.external.len(), 2);
        // `ext2` (priority 3) never runs beside the always-busy `busy` (priority 2): it is
        // held stopped the whole run (frozen in the run's cgroup under freeze).
        assert!(host.external[0].cpu_ns > 0, "{}: ext ran", backend.name());
        assert!(
            host.external.iter().all(|e| e.gone_at_ns.is_none()),
            "{}: nothing exited",
            backend.name()
        );
        check(backend.name());
    }
    // kill -9 of an executor that holds both (frozen or moved at that moment).
    let file = std::env::temp_dir().join(format!("rtvmm-ext-test-{}.toml", std::process::id()));
    std::fs::write(&file, text("deferrable")).unwrap();
    for round in 0..3 {
        let mut executor = Command::new(std::env::current_exe().unwrap())
            .args([RUN_FILE_ARG, file.to_str().unwrap(), "freeze", "60000"])
            .stdout(Stdio::null())
            .spawn()
            .expect("the stand-alone executor starts");
        let running = eventually(10, || {
            rtvmm_threads().iter().any(|t| t.contains("rtvmm-idle"))
                && cgroup_line(in_home.id()) != home_line
        });
        std::thread::sleep(Duration::from_millis(300 + 37 * round));
        kill(Pid::from_raw(executor.id() as i32), Signal::SIGKILL).unwrap();
        let _ = executor.wait();
        assert!(running, "round {round}: the executor did not start");
        assert!(
            eventually(10, || leftovers().is_empty()
                && cgroup_line(in_home.id()) == home_line),
            "round {round}: left behind {:?}",
            leftovers()
        );
        check(&format!("after kill -9, round {round}"));
    }
    let _ = std::fs::remove_file(&file);
    clean_up(in_vm, Some(&vm));
    clean_up(in_home, Some(&home));
}

/// Refused before anything starts, the domain and the problem named: a missing cgroup, a
/// process that does not exist, the cgroup this executor runs in.
pub fn bad_sources_are_refused_by_name() {
    if skip("external refusals") {
        return;
    }
    for (source, says) in [
        (
            "attach = \"/sys/fs/cgroup/unified/no-such-vm\"",
            "no such directory",
        ),
        ("attach = \"/tmp\"", "not a cgroup v2 directory"),
        ("pids = [2147483646]", "no such process"),
        ("pids = [2]", "kernel thread"),
    ] {
        let s = scenario("deferrable", source);
        let mut options = options(ms(200));
        options.external = s.external.clone();
        let e = executor::run(&s.system, "refused", 1, options)
            .err()
            .unwrap_or_else(|| panic!("{source}: should be refused"));
        let message = e.to_string();
        assert!(e.is_bad_input(), "{message}");
        assert!(message.starts_with("domain 'ext': "), "{message}");
        assert!(message.contains(says), "{source}: {message}");
    }
    if let Some(mount) = sys::cgroup2_mount() {
        let s = scenario("deferrable", &format!("attach = \"{}\"", mount.display()));
        let mut options = options(ms(200));
        options.external = s.external.clone();
        let e = executor::run(&s.system, "refused", 1, options)
            .err()
            .unwrap();
        assert!(
            e.to_string().contains("root of the cgroup hierarchy"),
            "{e}"
        );
    }
    assert!(leftovers().is_empty(), "{:?}", leftovers());
}

/// Live control beside an external domain: `sched-show` lists it (no job figures: it has
/// no tasks rtvmm knows of) beside the guest's (counted); `add-domain` of an external
/// domain is refused, naming the field; `remove-domain` gives it back at once (running,
/// its policy and cpus restored, back in its cgroup) while the run goes on.
pub fn live_control_shows_an_external_domain_refuses_adding_one_and_removes_it() {
    if skip("external live control") {
        return;
    }
    use rtvmm_host::ctl::{client, ErrorCode, Reply};
    use serde_json::json;
    use std::io::{BufRead, BufReader, Write};
    use std::os::unix::net::UnixStream;

    let child = spinner(None);
    let pid = child.id();
    let before = cgroup_line(pid);
    let s = scenario("deferrable", &format!("pids = [{pid}]"));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.sock");
    let control = LiveControl::start(&path, s.scheduler.clone()).unwrap();
    let mut options = options(ms(1500));
    options.external = s.external.clone();
    options.control = Some(control);
    let socket = path.clone();
    let talk = std::thread::spawn(move || {
        let call = |request: serde_json::Value| {
            client::call(&socket, &request, Duration::from_secs(10)).unwrap()
        };
        std::thread::sleep(Duration::from_millis(400));
        let Reply::Show(show) = call(json!({"v": 1, "cmd": "sched-show"})) else {
            panic!("sched-show refused")
        };
        let add = json!({"v": 1, "cmd": "add-domain", "domain": {
            "name": "vm2",
            "vcpu": {"budget": "1ms", "period": "10ms", "priority": 3},
            "pids": [pid],
        }});
        // The client library refuses it before sending; the executor's end too.
        let client_side = client::call(&socket, &add, Duration::from_secs(10))
            .err()
            .map(|e| e.to_string());
        let refused = {
            let mut stream = UnixStream::connect(&socket).unwrap();
            stream.write_all(format!("{add}\n").as_bytes()).unwrap();
            let mut line = String::new();
            BufReader::new(stream).read_line(&mut line).unwrap();
            Reply::parse(&line).unwrap_or_else(|e| panic!("{line}: {e}"))
        };
        let removed = call(json!({"v": 1, "cmd": "remove-domain", "domain": "ext"}));
        // Given back while the run goes on.
        std::thread::sleep(Duration::from_millis(300));
        let policy = sys::policy_of(pid as i32).map(|(p, _)| p);
        let cpus = sys::affinity_of(pid as i32).map(|c| c.len());
        let cgroup = cgroup_line(pid);
        let Reply::Show(after) = call(json!({"v": 1, "cmd": "sched-show"})) else {
            panic!("sched-show refused")
        };
        (
            show,
            client_side,
            refused,
            removed,
            policy,
            cpus,
            cgroup,
            after,
        )
    });
    let run = executor::run(&s.system, &s.name, 1, options).unwrap_or_else(|e| panic!("{e}"));
    let (show, client_side, refused, removed, policy, cpus, cgroup, after) =
        talk.join().expect("the client");
    let names: Vec<&str> = show.domains.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["ext", "busy"]);
    assert_eq!((show.domains[0].jobs, show.domains[0].misses), (None, None));
    assert!(show.domains[1].jobs.is_some_and(|j| j > 0), "{show:?}");
    let client_side = client_side.expect("the client refuses an external add-domain");
    assert!(
        client_side.contains("pids") && client_side.contains("cannot be added to a running system"),
        "{client_side}"
    );
    let Reply::Error { code, message } = refused else {
        panic!("an external add-domain was accepted: {refused:?}")
    };
    assert_eq!(code, ErrorCode::BadRequest, "{message}");
    assert!(
        message.contains("pids") && message.contains("cannot be added to a running system"),
        "{message}"
    );
    assert!(matches!(removed, Reply::Done { .. }), "{removed:?}");
    assert_eq!(
        policy.ok(),
        Some(libc::SCHED_OTHER),
        "given back on removal"
    );
    assert_eq!(
        cpus.ok(),
        Some(sys::cpu_count()),
        "all its cpus back on removal"
    );
    assert_eq!(cgroup, before, "back in its cgroup on removal");
    let names: Vec<&str> = after.domains.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["busy"]);
    let host = run.results.host.as_ref().unwrap();
    assert_eq!(
        host.external.len(),
        1,
        "a removed external domain stays in the results"
    );
    assert!(host.external[0].cpu_ns > 0);
    assert!(!path.exists(), "the socket is removed at the end");
    assert_given_back(pid, "after the run");
    clean_up(child, None);
}
