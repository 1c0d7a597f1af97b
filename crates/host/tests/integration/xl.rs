//! `xl` commands on the real executor: over the control socket and as a scenario's
//! `[[event]] xl = "..."`, both through `ctl::run_xl` (the simulator's rule).

use std::path::Path;
use std::time::Duration;

use rtvmm_core::event::CoreEvent;
use rtvmm_core::model::VcpuId;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::xl::XlCommand;
use rtvmm_core::Nanos;
use rtvmm_host::ctl::{client, ErrorCode, Reply, SchedShow};
use rtvmm_host::executor::{self, HostRun, LiveControl};
use rtvmm_scenario::SchedulerSettings;
use rtvmm_system::records::TraceEvent;
use rtvmm_system::{Change, TimedChange};
use serde_json::json;

use crate::util::{busy, late, ms, options, replenishments, skip, system};

fn call(path: &Path, line: &str) -> Reply {
    let request = json!({"v": 1, "cmd": "xl", "xl": line});
    client::call(path, &request, Duration::from_secs(10)).unwrap()
}

fn show(path: &Path) -> SchedShow {
    let request = json!({"v": 1, "cmd": "sched-show"});
    match client::call(path, &request, Duration::from_secs(10)).unwrap() {
        Reply::Show(show) => show,
        other => panic!("sched-show: {other:?}"),
    }
}

/// Each domain's (budget, period, weight, extratime), from `sched-show`.
fn params(show: &SchedShow) -> Vec<(String, u64, u64, u32, bool)> {
    show.domains
        .iter()
        .map(|d| {
            (
                d.name.clone(),
                d.budget_ns,
                d.period_ns,
                d.weight,
                d.extratime,
            )
        })
        .collect()
}

/// RTDS with `d20` (2 ms every 10 ms) and `other` (4 ms every 10 ms), both always busy and
/// without extratime:
/// at most 9 ms of 10 ms is asked for in every phase below, so EDF gives each VCPU its
/// whole budget in every period `[k·10ms, (k+1)·10ms)` (both have the same deadline),
/// and RTDS replenishes at its deadlines, the multiples of 10 ms from joining at 0.
///
/// About 0.7 s in, over the socket: two commands one pcpu cannot honour (`vcpu-pin` to
/// pcpu 1, `cpupool-cpu-add` of pcpu 1), refused, `sched-show` unchanged; then `xl
/// sched-rtds -d d20 -p 10000 -b 5000`. At 1505 ms the scenario's own event `xl =
/// "sched-rtds -d d20 -p 10000 -b 3000"`. By RTDS's `adjust` (a larger budget from the
/// next replenishment; a smaller one cuts what remains at once and is given from the next
/// replenishment), d20's replenishments are:
/// - 2 ms at every one before the socket's change (`lo`, the `sched-show` before it);
/// - 5 ms from the first multiple of 10 ms after it (between `lo` and `hi`, the
///   `sched-show` after it) up to 1500 ms;
/// - 3 ms from 1510 ms on (the first after the event at 1505 ms; a stall of the host
///   longer than 5 ms around it moves that by the stall).
///
/// and it runs 2, 5 and 3 ms per period in the three phases.
pub fn xl_sched_rtds_over_the_socket_and_as_an_event_change_the_budget() {
    if skip("xl over the socket") {
        return;
    }
    let duration = ms(2200);
    let mut domains = vec![
        busy("d20", ms(2), ms(10), 1),
        busy("other", ms(4), ms(10), 2),
    ];
    for d in &mut domains {
        d.vcpu.extratime = Some(false);
    }
    let mut system = system(PolicyKind::Rtds, domains);
    system.changes.push(TimedChange {
        at: ms(1505),
        change: Change::Xl(XlCommand::parse("sched-rtds -d d20 -p 10000 -b 3000").unwrap()),
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("xl.sock");
    let control = LiveControl::start(&path, SchedulerSettings::default()).unwrap();
    let mut options = options(duration);
    options.record_trace = true;
    options.control = Some(control);
    let socket = path.clone();
    let client = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(700));
        let before = params(&show(&socket));
        let mut refusals = Vec::new();
        for line in ["vcpu-pin d20 0 1", "cpupool-cpu-add Pool-0 1"] {
            match call(&socket, line) {
                Reply::Error {
                    code: ErrorCode::Refused,
                    message,
                } => refusals.push(message),
                other => panic!("{line}: expected a refusal, got {other:?}"),
            }
        }
        let lo = show(&socket);
        let message = match call(&socket, "sched-rtds -d d20 -p 10000 -b 5000") {
            Reply::Done { message } => message,
            other => panic!("sched-rtds: {other:?}"),
        };
        let hi = show(&socket);
        (before, refusals, lo, message, hi)
    });
    let run: HostRun = executor::run(&system, "xl", 1, options).unwrap_or_else(|e| panic!("{e}"));
    let (before, refusals, lo, message, hi) = client.join().expect("the client");
    for r in &refusals {
        eprintln!("refused: {r}");
    }
    eprintln!("done: {message}");
    assert_eq!(
        refusals,
        [
            "request: `vcpu-pin d20 0 1`: CPUS: the host executor drives one pcpu (pcpu 0, on \
             its managed cpu): a VCPU pinned to pcpus 1 would never run here (pin to 0 or \
             all); nothing changed",
            "request: `cpupool-cpu-add Pool-0 1`: CPU: the host executor drives one pcpu \
             (pcpu 0, on its managed cpu): pcpu 1 is not one it runs; nothing changed",
        ]
    );
    assert_eq!(params(&lo), before, "the refused commands changed nothing");
    assert_eq!(
        message,
        "d20: budget 2ms -> 5ms (from the next replenishment; a remaining budget above the \
         new budget is cut at once)"
    );
    assert_eq!(hi.domains[0].budget_ns, ms(5).as_ns());
    assert_eq!(hi.domains[1].budget_ns, ms(4).as_ns(), "other untouched");
    let (lo, hi) = (lo.as_of_ns, hi.as_of_ns);

    let period = ms(10).as_ns();
    let late = late(&run);
    let (events, _) = run.trace.as_ref().expect("a trace");
    let replenishments = replenishments(&run);
    for &(at, _) in &replenishments {
        assert!(
            at % period < late,
            "a replenishment at {at} ns: not at k·10ms"
        );
    }
    let first = |budget: Nanos| {
        let i = replenishments
            .iter()
            .position(|&(_, b)| b == budget)
            .unwrap_or_else(|| panic!("no replenishment of {budget}"));
        (i, replenishments[i].0 / period * period)
    };
    let (five, five_at) = first(ms(5));
    let (three, three_at) = first(ms(3));
    eprintln!(
        "socket's change between {lo} and {hi} ns; first 5 ms at {five_at}, first 3 ms at \
         {three_at} (worst wake-up lateness + 100 us: {late} ns)"
    );
    assert!(replenishments[..five].iter().all(|&(_, b)| b == ms(2)));
    assert!(
        (lo.div_ceil(period) * period..=hi.div_ceil(period) * period).contains(&five_at),
        "first 5 ms replenishment at {five_at} ns, not the boundary after the change"
    );
    assert!(replenishments[five..three].iter().all(|&(_, b)| b == ms(5)));
    // The event is applied at the loop's first wake-up at or after 1505 ms, at most `late`
    // after it, and before that wake-up's overdue decisions: with wake-ups less than 5 ms
    // late, the first 3 ms replenishment is at 1510 ms exactly; a longer stall of the
    // virtual machine's host widens that by the stall, either way.
    let (earliest, latest) = (
        (ms(1505).as_ns().saturating_sub(late)) / period * period,
        (ms(1505).as_ns() + late).div_ceil(period) * period,
    );
    assert!(
        (earliest..=latest).contains(&three_at),
        "the event at 1505 ms: first 3 ms replenishment at {three_at} ns, expected 1510 ms \
         (the run's latest wake-up being {late} ns late: {earliest}..={latest} ns)"
    );
    if late < ms(5).as_ns() {
        assert_eq!(
            three_at,
            ms(1510).as_ns(),
            "the event at 1505 ms: from 1510 ms"
        );
    }
    assert!(replenishments[three..].iter().all(|&(_, b)| b == ms(3)));

    // Run time per period, from the trace's switches, in each phase (the periods of the
    // changes left out).
    let mut per = vec![0u64; (duration.as_ns() / period) as usize + 1];
    let mut since = None;
    let mut add = |from: u64, to: u64| {
        let mut t = from;
        while t < to {
            let k = (t / period) as usize;
            let edge = ((k as u64 + 1) * period).min(to);
            per[k] += edge - t;
            t = edge;
        }
    };
    for (at, e) in events {
        if let TraceEvent::Core(CoreEvent::Switch { to, .. }) = e {
            if let Some(from) = since.take() {
                add(from, at.as_ns());
            }
            if *to == Some(VcpuId(0)) {
                since = Some(at.as_ns());
            }
        }
    }
    // The median period: a stall of the virtual machine's host stretches a period or two
    // (a mean over a phase moves with them); the budget holds in the others.
    let median = |range: std::ops::Range<u64>| {
        let (a, b) = (
            (range.start / period) as usize,
            (range.end / period) as usize,
        );
        let mut window = per[a..b].to_vec();
        window.sort_unstable();
        window[window.len() / 2] as f64 / 1e6
    };
    let phases = [
        (median(period..lo / period * period), 2.0),
        (median(five_at..ms(1500).as_ns()), 5.0),
        (median(three_at..duration.as_ns() / period * period), 3.0),
    ];
    eprintln!(
        "d20 ran {:.3}, {:.3}, {:.3} ms in the median period (2, 5, 3 expected)",
        phases[0].0, phases[1].0, phases[2].0
    );
    for (got, expected) in phases {
        assert!(
            (got - expected).abs() < 0.25,
            "{got} ms per period, {expected} expected"
        );
    }
}
