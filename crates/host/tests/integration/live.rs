//! Live control of the real executor: a run with its control socket, driven by a client
//! thread while it runs.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rtvmm_core::event::CoreEvent;
use rtvmm_core::model::VcpuId;
use rtvmm_core::policy::{PolicyKind, PolicySettings};
use rtvmm_core::Nanos;
use rtvmm_host::ctl::{client, ErrorCode, Reply, SchedShow};
use rtvmm_host::executor::{self, HostRun, LiveControl};
use rtvmm_scenario::SchedulerSettings;
use rtvmm_sim::Simulation;
use rtvmm_system::records::TraceEvent;
use rtvmm_system::{Change, SystemSpec, TimedChange};
use serde_json::{json, Value};

use crate::util::{
    eventually, late, ms, options, replenishments, run_cgroup, skip, twenty_percent,
};

/// Runs `system` for `duration` with a control socket, `client` talking to it from
/// another thread (from about the run's start); returns the run and what the client
/// returned. The socket is gone when the run is.
fn live<T: Send + 'static>(
    system: &SystemSpec,
    duration: Nanos,
    trace: bool,
    client: impl FnOnce(&Path) -> T + Send + 'static,
) -> (HostRun, T) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.sock");
    let control = LiveControl::start(&path, SchedulerSettings::default()).unwrap();
    let mut options = options(duration);
    options.record_trace = trace;
    options.control = Some(control);
    let socket = path.clone();
    let client = std::thread::spawn(move || client(&socket));
    let run = executor::run(system, "live", 1, options).unwrap_or_else(|e| panic!("{e}"));
    assert!(!path.exists(), "the socket is removed at the end");
    let got = client.join().expect("the client");
    (run, got)
}

fn call(path: &Path, request: Value) -> Reply {
    client::call(path, &request, Duration::from_secs(10)).unwrap()
}

fn show(path: &Path) -> SchedShow {
    match call(path, json!({"v": 1, "cmd": "sched-show"})) {
        Reply::Show(show) => show,
        other => panic!("sched-show: {other:?}"),
    }
}

fn done(reply: Reply) -> String {
    match reply {
        Reply::Done { message } => message,
        other => panic!("expected done, got {other:?}"),
    }
}

/// One raw line, one reply.
fn raw(path: &Path, line: &str) -> Reply {
    let mut stream = UnixStream::connect(path).unwrap();
    stream.write_all(line.as_bytes()).unwrap();
    stream.write_all(b"\n").unwrap();
    let mut reply = String::new();
    BufReader::new(stream).read_line(&mut reply).unwrap();
    Reply::parse(&reply).unwrap_or_else(|e| panic!("{reply}: {e}"))
}

/// The VCPU's run time in each window `[k·period, (k+1)·period)` up to `end`, from the
/// trace's switches (the core's accounting, with measured time).
fn run_per_window(
    events: &[(Nanos, TraceEvent)],
    vcpu: VcpuId,
    period: Nanos,
    end: Nanos,
) -> Vec<u64> {
    let windows = (end.as_ns() / period.as_ns()) as usize;
    let mut per = vec![0u64; windows + 1];
    let mut add = |from: u64, to: u64| {
        let mut t = from;
        while t < to {
            let k = (t / period.as_ns()) as usize;
            let edge = ((k as u64 + 1) * period.as_ns()).min(to);
            if k < per.len() {
                per[k] += edge - t;
            }
            t = edge;
        }
    };
    let mut since = None;
    for (at, e) in events {
        if let TraceEvent::Core(CoreEvent::Switch { to, .. }) = e {
            if let Some(from) = since.take() {
                add(from, at.as_ns());
            }
            if *to == Some(vcpu) {
                since = Some(at.as_ns());
            }
        }
    }
    if let Some(from) = since {
        add(from, end.as_ns());
    }
    per.truncate(windows);
    per
}

fn mean(values: &[u64]) -> f64 {
    values.iter().sum::<u64>() as f64 / values.len().max(1) as f64
}

/// How late an event may be recorded after its due instant: the run's own worst wake-up
/// lateness (tens of microseconds, at times milliseconds on a virtual machine whose host
/// stalls it), plus 100 µs for the work between the wake-up and the event.
/// A window's run time is the budget give or take the lateness of the wake-ups that
/// start and end it (means over a hundred windows: a fraction of that).
const WINDOW_TOLERANCE_NS: f64 = 250_000.0;

/// How far (percentage points of the run) the domain's threads' own CPU time may fall
/// from its budgets: each of its 100 switches in per second costs it the switch latency
/// (15–100 µs here), and the host steals time at random (more when it is loaded).
const CPU_TOLERANCE: f64 = 4.0;

/// `d20` (Deferrable Server, 2 ms every 10 ms, priority 1) is always busy beside an
/// always-busy `rest` (priority 2). About 1 s in, `sched-set -d d20 -b 5ms`. The core's
/// rule (`Policy::adjust`): a larger budget is not granted early — it comes with the
/// VCPU's next replenishment, at the next multiple of its period (servers replenish at
/// `k·period` from their joining at 0). So, with `lo`/`hi` the instants of `sched-show`
/// just before and just after the change (the change lies between):
/// - every replenishment before `lo` gives 2 ms, at a multiple of 10 ms;
/// - the first that gives 5 ms is at the first multiple of 10 ms after the change (after
///   `lo`, at most the first after `hi`) — never mid-period — and none gives 2 ms after
///   it;
/// - d20 runs 2 ms per period before (20 %), at most 2 ms in the period of the change,
///   and 5 ms per period from the new budget's first period on (50 %);
/// - its threads' own CPU time over the run matches: 20 % before, 50 % after.
pub fn a_live_sched_set_takes_effect_at_the_next_replenishment() {
    if skip("live sched-set") {
        return;
    }
    let duration = ms(2500);
    let (run, (lo, hi, message)) = live(
        &twenty_percent(PolicyKind::Deferrable),
        duration,
        true,
        |socket| {
            std::thread::sleep(Duration::from_millis(1000));
            let lo = show(socket).as_of_ns;
            let message = done(call(
                socket,
                json!({"v": 1, "cmd": "sched-set", "domain": "d20", "budget": "5ms"}),
            ));
            let hi = show(socket).as_of_ns;
            (lo, hi, message)
        },
    );
    eprintln!("sched-set between {lo} and {hi} ns: {message}");
    assert!(message.starts_with("d20: budget 2ms -> 5ms"), "{message}");
    let period = ms(10).as_ns();
    let late = late(&run);
    let (events, _) = run.trace.as_ref().expect("a trace");
    let replenishments = replenishments(&run);
    for &(at, budget) in replenishments.iter().filter(|(at, _)| *at < lo) {
        assert_eq!(budget, ms(2), "before the change, at {at} ns");
        assert!(
            at % period < late,
            "a replenishment at {at} ns: not at k·10ms (the run's latest wake-up: {late} ns)"
        );
    }
    let first_new = replenishments
        .iter()
        .position(|&(_, b)| b == ms(5))
        .expect("a replenishment with the new budget");
    let (at, _) = replenishments[first_new];
    let boundary = at / period * period;
    let earliest = lo.div_ceil(period) * period;
    let latest = hi.div_ceil(period) * period;
    eprintln!("the new budget's first replenishment at {at} ns (period boundary {boundary})");
    assert!(at % period < late, "at {at} ns: mid-period");
    assert!(
        (earliest..=latest).contains(&boundary),
        "first 5 ms replenishment at {at} ns: expected at the boundary after the change \
         ({earliest}..={latest})"
    );
    assert!(
        replenishments[first_new..].iter().all(|&(_, b)| b == ms(5)),
        "a 2 ms replenishment after the first 5 ms one"
    );

    let per = run_per_window(events, VcpuId(0), ms(10), duration);
    let change_window = (lo / period) as usize;
    let new_window = (boundary / period) as usize;
    let before = mean(&per[1..change_window]);
    let after = mean(&per[new_window..]);
    eprintln!(
        "d20 ran {:.3} ms per period before, {:.3} ms in the change's period, {:.3} ms after",
        before / 1e6,
        per[change_window] as f64 / 1e6,
        after / 1e6
    );
    assert!(
        (before - 2e6).abs() < WINDOW_TOLERANCE_NS,
        "before: {before} ns"
    );
    assert!(
        (after - 5e6).abs() < WINDOW_TOLERANCE_NS,
        "after: {after} ns"
    );
    if lo / period == hi / period {
        assert!(
            per[change_window] as f64 <= 2e6 + late as f64,
            "the change's period got {} ns: the new budget came early",
            per[change_window]
        );
    }

    let host = run.results.host.as_ref().expect("a host section");
    let expected = 0.2 * boundary as f64 + 0.5 * (duration.as_ns() - boundary) as f64;
    let got = host.domain_cpu_ns[0] as f64;
    let points = 100.0 * (got - expected) / duration.as_ns() as f64;
    eprintln!(
        "d20's threads had {:.1} ms of CPU, {:.1} ms expected (20 % then 50 %): {points:+.2} points",
        got / 1e6,
        expected / 1e6
    );
    assert!(points.abs() <= CPU_TOLERANCE, "{points:+.2} points off");
}

/// A hot swap from the Deferrable Server to RTDS on a live run: the reply names both
/// policies, `sched-show` shows the new one, and the results name the policy the run
/// ended under — as the simulator's do for the same swap as a scenario event (it names
/// the final policy). The 20 % domain keeps its 20 % under both.
pub fn a_live_policy_swap_names_both_policies() {
    if skip("live policy swap") {
        return;
    }
    let duration = ms(2000);
    let system = twenty_percent(PolicyKind::Deferrable);
    let (run, (message, after)) = live(&system, duration, false, |socket| {
        std::thread::sleep(Duration::from_millis(800));
        let message = done(call(
            socket,
            json!({"v": 1, "cmd": "swap-policy", "policy": "rtds"}),
        ));
        (message, show(socket))
    });
    assert_eq!(
        message,
        "policy deferrable -> rtds: every domain starts its first period under rtds now"
    );
    assert_eq!(after.policy, "rtds");

    let mut swapped = system.clone();
    swapped.changes.push(TimedChange {
        at: ms(800),
        change: Change::SwapPolicy(
            PolicySettings::default()
                .config(PolicyKind::Rtds)
                .expect("rtds"),
        ),
    });
    let mut sim = Simulation::new(&swapped, 1, false).unwrap();
    sim.run_until(duration).unwrap();
    let simulated = sim.results("live", 1, duration);
    assert_eq!(run.results.policy, simulated.policy);
    assert_eq!(run.results.policy, "rtds");

    let host = run.results.host.as_ref().expect("a host section");
    let share = 100.0 * host.domain_cpu_ns[0] as f64 / duration.as_ns() as f64;
    eprintln!("d20 had {share:.2}% across the swap");
    assert!((share - 20.0).abs() <= 2.5, "d20 had {share:.2}%");
}

/// The pid of the guest process whose task 0 thread is `rtvmm-d{index}t0`.
fn guest_pid(index: usize) -> Option<i32> {
    let name = format!("rtvmm-d{index}t0");
    for p in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = p.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            if comm.trim() == name {
                return Some(pid);
            }
        }
    }
    None
}

/// `domain add` starts a guest process (its task thread appears, its jobs are counted
/// live and in the results); `domain remove` ends it: the process is reaped (gone from
/// `/proc`, no zombie), its cgroup removed, while the run goes on.
pub fn a_live_domain_add_starts_a_guest_and_remove_reaps_it() {
    if skip("live domain add/remove") {
        return;
    }
    let duration = ms(2500);
    let cgroup = run_cgroup(std::process::id());
    let (run, (pid, live_jobs, gone, cgroup_gone)) = live(
        &twenty_percent(PolicyKind::Deferrable),
        duration,
        false,
        move |socket| {
            std::thread::sleep(Duration::from_millis(500));
            assert_eq!(guest_pid(2), None);
            let added = done(call(
                socket,
                json!({"v": 1, "cmd": "add-domain", "domain": {
                    "name": "d3",
                    "vcpu": {"budget": "1ms", "period": "5ms", "priority": 0},
                    "task": [{"name": "t1", "period": "10ms", "wcet": "1ms"}],
                }}),
            ));
            assert_eq!(
                added,
                "d3: added as VCPU 2 (1 task, guest rm; budget 1ms, period 5ms, priority 0)"
            );
            let pid = guest_pid(2).expect("d3's guest runs once add-domain is done");
            std::thread::sleep(Duration::from_millis(1000));
            let shown = show(socket);
            let d3 = shown.domains.iter().find(|d| d.name == "d3").expect("d3");
            let live_jobs = d3.jobs.expect("jobs of a process domain");
            let removed = done(call(
                socket,
                json!({"v": 1, "cmd": "remove-domain", "domain": "d3"}),
            ));
            assert_eq!(removed, "d3: removed (VCPU 2)");
            let proc = PathBuf::from(format!("/proc/{pid}"));
            let gone = eventually(2, || !proc.exists());
            let dir = cgroup.map(|c| c.join("d2"));
            let cgroup_gone = eventually(2, || dir.as_ref().is_none_or(|d| !d.exists()));
            (pid, live_jobs, gone, cgroup_gone)
        },
    );
    eprintln!("d3's guest was pid {pid}; {live_jobs} jobs done after 1 s");
    assert!(
        gone,
        "the removed domain's guest (pid {pid}) was not reaped"
    );
    assert!(cgroup_gone, "the removed domain's cgroup is still there");
    // One job every 10 ms for about 1 s.
    assert!((80..=110).contains(&live_jobs), "{live_jobs} jobs in 1 s");
    let d3 = run
        .results
        .domains
        .iter()
        .find(|d| d.name == "d3")
        .expect("d3 in the results");
    eprintln!("results: d3 {} jobs, {} missed", d3.jobs, d3.missed);
    assert!(d3.jobs >= live_jobs, "{} jobs in the results", d3.jobs);
    assert!(d3.jobs <= live_jobs + 10, "{} jobs in the results", d3.jobs);
    assert_eq!(guest_pid(2), None);
}

/// Malformed requests (not JSON, an unknown command or key, a negative budget) and
/// requests the running system refuses (a budget above the period, no such domain, a
/// name in use, a guest the host cannot run) each get an error, and nothing changes:
/// the parameters and the policy are as before, no domain was added, and the 20 % domain
/// keeps its 20 %.
pub fn malformed_and_refused_requests_to_a_live_run_change_nothing() {
    if skip("live refusals") {
        return;
    }
    let duration = ms(1500);
    let (run, (before, after, replies)) = live(
        &twenty_percent(PolicyKind::Deferrable),
        duration,
        false,
        |socket| {
            std::thread::sleep(Duration::from_millis(300));
            let before = show(socket);
            let domain = |name: &str, guest: &str| {
                json!({"v": 1, "cmd": "add-domain", "domain": {
                    "name": name, "guest": guest,
                    "vcpu": {"budget": "1ms", "period": "5ms", "priority": 0},
                    "task": [{"name": "t", "period": "10ms", "wcet": "1ms"}],
                }})
                .to_string()
            };
            let lines = [
                "this is not json".to_string(),
                r#"{"v":1,"cmd":"reboot"}"#.to_string(),
                r#"{"v":1,"cmd":"sched-set","domain":"d20","budget":"3ms","colour":"red"}"#
                    .to_string(),
                r#"{"v":1,"cmd":"sched-set","domain":"d20","budget":"-3ms"}"#.to_string(),
                r#"{"v":1,"cmd":"sched-set","domain":"d20","budget":"20ms"}"#.to_string(),
                r#"{"v":1,"cmd":"sched-set","domain":"nope","budget":"1ms"}"#.to_string(),
                r#"{"v":1,"cmd":"remove-domain","domain":"nope"}"#.to_string(),
                domain("rest", "rm"),
                domain("d3", "edf"),
            ];
            let replies: Vec<(String, Reply)> =
                lines.iter().map(|l| (l.clone(), raw(socket, l))).collect();
            (before, show(socket), replies)
        },
    );
    for (line, reply) in &replies {
        eprintln!("{line}\n  -> {}", reply.to_line().trim_end());
        let Reply::Error { code, .. } = reply else {
            panic!("{line}: not refused: {reply:?}");
        };
        assert!(
            matches!(code, ErrorCode::BadRequest | ErrorCode::Refused),
            "{line}: {code:?}"
        );
    }
    let Reply::Error { message, .. } = &replies.last().unwrap().1 else {
        unreachable!()
    };
    assert!(
        message.contains("domain 'd3'") && message.contains("edf"),
        "{message}"
    );
    let params = |s: &SchedShow| {
        s.domains
            .iter()
            .map(|d| (d.name.clone(), d.budget_ns, d.period_ns, d.priority))
            .collect::<Vec<_>>()
    };
    assert_eq!(params(&before), params(&after));
    assert_eq!(after.policy, "deferrable");
    let names: Vec<&str> = run
        .results
        .domains
        .iter()
        .map(|d| d.name.as_str())
        .collect();
    assert_eq!(names, ["d20", "rest"]);
    let host = run.results.host.as_ref().expect("a host section");
    let share = 100.0 * host.domain_cpu_ns[0] as f64 / duration.as_ns() as f64;
    assert!((share - 20.0).abs() <= 2.5, "d20 had {share:.2}%");
}
