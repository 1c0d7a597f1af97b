//! Domains of several VCPUs on the host: the enforcement units (one guest process per
//! VCPU of a partitioned guest) hold the right threads, and a 2-VCPU domain beside another
//! under RTDS on one pcpu gets, per VCPU, the simulator's shares before and after an
//! `xl sched-rtds -d D -v 1` event.

use std::collections::BTreeMap;

use rtvmm_core::event::CoreEvent;
use rtvmm_core::model::{PcpuId, VcpuId};
use rtvmm_core::Nanos;
use rtvmm_host::domain::ProcessDomain;
use rtvmm_host::enforce::Backend;
use rtvmm_host::executor;
use rtvmm_host::HelperCommand;
use rtvmm_scenario::Scenario;
use rtvmm_sim::Simulation;
use rtvmm_system::records::TraceEvent;

use crate::util::{expected_share, ms, options, skip};

/// `pair`: a partitioned guest of two VCPUs (2 ms every 10 ms each, no extratime), one
/// always-busy task on each; `other`: one VCPU, 3 ms every 10 ms, always busy. At 1 s,
/// `xl` gives pair's VCPU 1 4 ms every 10 ms. RTDS, one pcpu, 2 s.
const PAIR: &str = r#"name = "pair"
duration = "2s"
seed = 1

[scheduler]
policy = "rtds"

[[domain]]
name = "pair"
vcpus = 2
smp = "partitioned"
vcpu = { budget = "2ms", period = "10ms", extratime = false }
[[domain.task]]
name = "a"
period = "10ms"
wcet = "20ms"
vcpu = 0
[[domain.task]]
name = "b"
period = "10ms"
wcet = "20ms"
vcpu = 1

[[domain]]
name = "other"
vcpu = { budget = "3ms", period = "10ms", extratime = false }
[[domain.task]]
name = "busy"
period = "10ms"
wcet = "20ms"

[[event]]
at = "1s"
xl = "sched-rtds -d pair -v 1 -p 10000 -b 4000"
"#;

/// Per VCPU, percent of `[from, to)` it ran on pcpu 0, from a trace's switches (the
/// core's own account: measured time on the host, simulated time in the simulator).
fn shares(events: &[(Nanos, TraceEvent)], from: Nanos, to: Nanos) -> BTreeMap<VcpuId, f64> {
    let mut ran: BTreeMap<VcpuId, u64> = BTreeMap::new();
    let mut current: Option<(VcpuId, Nanos)> = None;
    let mut close = |current: &mut Option<(VcpuId, Nanos)>, at: Nanos| {
        if let Some((v, since)) = current.take() {
            let (a, b) = (since.max(from), at.min(to));
            if b > a {
                *ran.entry(v).or_default() += (b - a).as_ns();
            }
        }
    };
    for (at, event) in events {
        let TraceEvent::Core(event) = event else {
            continue;
        };
        match event {
            CoreEvent::Switch { pcpu, to: next, .. } if *pcpu == PcpuId(0) => {
                close(&mut current, *at);
                current = next.map(|v| (v, *at));
            }
            CoreEvent::Resume { pcpu, vcpu } if *pcpu == PcpuId(0) => {
                close(&mut current, *at);
                current = vcpu.map(|v| (v, *at));
            }
            CoreEvent::Overhead { pcpu, .. } if *pcpu == PcpuId(0) => close(&mut current, *at),
            _ => {}
        }
    }
    close(&mut current, to);
    let span = (to - from).as_ns() as f64;
    ran.into_iter()
        .map(|(v, ns)| (v, 100.0 * ns as f64 / span))
        .collect()
}

/// Each VCPU's accounted share may differ from the simulation's by this (percentage
/// points), plus one stall of the scheduler thread (as in the share test).
const ACCOUNTED_TOLERANCE: f64 = 1.0;
/// A domain's threads' own CPU time may differ from what the run can have given it
/// ([`expected_share`] of the simulation's share) by this per VCPU (percentage points).
const TOLERANCE: f64 = 2.5;

pub fn a_two_vcpu_domain_gets_the_simulators_per_vcpu_shares_before_and_after_an_xl_event() {
    if skip("multi_vcpu") {
        return;
    }
    shares_match(PAIR, true);
    // The same as a global guest (a VCPU process per VCPU, running the jobs the core's
    // guest scheduler grants it; both VCPUs awake while both tasks have work): each task's
    // jobs are where the simulator's global rule puts them.
    let global = PAIR
        .replace("smp = \"partitioned\"", "smp = \"global\"")
        .replace("vcpu = 0\n", "")
        .replace("vcpu = 1\n", "");
    shares_match(&global, true);
}

/// Runs `text` in simulation and on the host and compares the shares; `per_task`: each
/// task's finished jobs too (within 3 of the simulation's: the host's switches cost the
/// guest about 4 % of its time, a job of 20 ms in 25; a wrong placement costs 5).
fn shares_match(text: &str, per_task: bool) {
    let scenario = Scenario::from_toml(text, "pair.toml").unwrap_or_else(|e| panic!("{e}"));
    let (half, end) = (ms(1000), ms(2000));
    let mut sim = Simulation::new(&scenario.system, scenario.seed, true).expect("a system");
    sim.run_until(end).expect("the simulation");
    let simulated = sim.take_trace();

    let mut options = options(end);
    options.backend = Backend::Freeze;
    options.record_trace = true;
    let run = executor::run(&scenario.system, "pair", scenario.seed, options)
        .unwrap_or_else(|e| panic!("host run: {e}"));
    let host = run.results.host.as_ref().expect("a host section");
    assert!(host.real_time, "a real-time run");
    let (events, _) = run.trace.as_ref().expect("a trace");
    let stall = 100.0 * host.tick_lateness_ns.max as f64 / half.as_ns() as f64;

    for (name, from, to) in [("before", Nanos::ZERO, half), ("after", half, end)] {
        let want = shares(&simulated, from, to);
        let got = shares(events, from, to);
        eprintln!("{name} the event: simulated {want:.2?}, host {got:.2?}");
        for (v, &share) in &want {
            let had = got.get(v).copied().unwrap_or(0.0);
            assert!(
                (had - share).abs() <= ACCOUNTED_TOLERANCE + stall,
                "{name} the event: VCPU {} was accounted {had:.2}% on the host, {share:.2}% \
                 in the simulation (worst wake-up {:.2} ms late)",
                v.0,
                host.tick_lateness_ns.max as f64 / 1e6
            );
        }
    }
    // The budgets say it, and the simulation agrees: pair's VCPUs 20 % and 20 %, then 20 %
    // and 40 %; other 30 % throughout.
    let before = shares(&simulated, Nanos::ZERO, half);
    let after = shares(&simulated, half, end);
    let v = |i| VcpuId(i);
    for (share, want) in [
        (before[&v(0)], 20.0),
        (before[&v(1)], 20.0),
        (before[&v(2)], 30.0),
        (after[&v(0)], 20.0),
        (after[&v(1)], 40.0),
        (after[&v(2)], 30.0),
    ] {
        assert!(
            (share - want).abs() < 0.2,
            "simulated {share:.2}%, budget {want}%"
        );
    }
    // Partitioned, each VCPU's task had that VCPU's time, not the domain's: task a (VCPU
    // 0) 20 % of 2 s = 400 ms, 20 jobs of 20 ms; task b (VCPU 1) 200 + 400 = 600 ms, 30
    // jobs — as in the simulation. Were both threads run while either VCPU runs, they
    // would share 1000 ms evenly (25 jobs each). Global, the jobs go where the
    // simulator's rule puts them, and finish as often.
    let pair = &run.results.domains[0];
    let simulated_jobs: Vec<u64> = sim.domains()[0].stats.iter().map(|s| s.finished).collect();
    for (t, task) in pair.tasks.iter().enumerate().filter(|_| per_task) {
        eprintln!(
            "task {}: {} jobs finished on the host, {} in the simulation",
            task.name, task.finished, simulated_jobs[t]
        );
        assert!(
            task.finished.abs_diff(simulated_jobs[t]) <= 3,
            "task {}: {} jobs finished on the host, {} in the simulation",
            task.name,
            task.finished,
            simulated_jobs[t]
        );
    }
    // The domains' threads really had it: pair 20 + (20 + 40) / 2 = 50 % of the run, other
    // 30 %, less the scheduler's and the host's part.
    let run_ns = end.as_ns();
    for (d, sim_share, vcpus) in [(0, 50.0, 2.0), (1, 30.0, 1.0)] {
        let had = 100.0 * host.domain_cpu_ns[d] as f64 / run_ns as f64;
        let expected = expected_share(sim_share, host, run_ns);
        eprintln!("domain {d}: its threads had {had:.2}% (expected {expected:.2}%)");
        assert!(
            (had - expected).abs() <= TOLERANCE * vcpus,
            "domain {d}: its threads had {had:.2}% of the core, expected {expected:.2}%"
        );
    }
}

/// No real time: a partitioned guest of two VCPUs (tasks a and c on VCPU 0, b on VCPU 1)
/// is two guest processes, each holding exactly its VCPU's task threads — the threads the
/// enforcement stops and resumes with that VCPU.
pub fn the_enforcement_units_of_a_multi_vcpu_domain_hold_their_vcpus_threads() {
    global_guest_is_one_unit_per_vcpu();
    let text = r#"name = "units"
duration = "1s"
[[domain]]
name = "pair"
vcpus = 2
smp = "partitioned"
vcpu = { budget = "2ms", period = "10ms", priority = 1 }
[[domain.task]]
name = "a"
period = "10ms"
wcet = "1ms"
vcpu = 0
[[domain.task]]
name = "b"
period = "20ms"
wcet = "1ms"
vcpu = 1
[[domain.task]]
name = "c"
period = "40ms"
wcet = "1ms"
vcpu = 0
"#;
    let scenario = Scenario::from_toml(text, "units.toml").unwrap_or_else(|e| panic!("{e}"));
    let spec = scenario.system.domains[0].clone();
    let notify = nix::sys::eventfd::EventFd::new().expect("an eventfd");
    let helper = HelperCommand::this_program().expect("this test binary");
    // Not SCHED_FIFO, never started: the threads only wait for the run's time 0.
    let cpu = rtvmm_host::sys::cpu_count() - 1;
    let vcpus = vec![VcpuId(0), VcpuId(1)];
    let domain = ProcessDomain::spawn(
        &helper,
        spec,
        vcpus.clone(),
        0,
        Nanos::ZERO,
        1,
        cpu,
        false,
        &notify,
        false,
    )
    .unwrap_or_else(|e| panic!("spawn: {e}"));
    assert_eq!(domain.guests.len(), 2);
    let mut all_tids = Vec::new();
    for (j, (guest, tasks)) in domain.guests.iter().zip([vec![0, 2], vec![1]]).enumerate() {
        assert_eq!(guest.vcpu, vcpus[j]);
        assert_eq!(guest.tasks, tasks, "VCPU {j}'s tasks");
        assert_eq!(guest.member.pids, vec![guest.pid()]);
        assert_eq!(guest.member.threads.len(), tasks.len());
        for (local, &(tid, _)) in guest.member.threads.iter().enumerate() {
            // A thread of this VCPU's own process, running this VCPU's task.
            let path = format!("/proc/{}/task/{tid}", guest.pid());
            assert!(
                std::path::Path::new(&path).exists(),
                "VCPU {j}: thread {tid} is not in its guest process {}",
                guest.pid()
            );
            let period = domain.spec.tasks[tasks[local]].period;
            assert_eq!(Nanos(guest.shared.config(local).period), period);
            all_tids.push(tid);
        }
    }
    all_tids.sort_unstable();
    all_tids.dedup();
    assert_eq!(all_tids.len(), 3, "each task thread in one unit only");
    drop(domain);
}

/// A global guest of two VCPUs is two VCPU processes, each one worker thread and no task
/// thread (the jobs are granted, `rtvmm_host::global`), each its VCPU's enforcement unit.
fn global_guest_is_one_unit_per_vcpu() {
    let text = r#"name = "units"
duration = "1s"
[[domain]]
name = "pair"
vcpus = 2
vcpu = { budget = "2ms", period = "10ms", priority = 1 }
[[domain.task]]
name = "a"
period = "10ms"
wcet = "1ms"
[[domain.task]]
name = "b"
period = "20ms"
wcet = "1ms"
"#;
    let scenario = Scenario::from_toml(text, "units.toml").unwrap_or_else(|e| panic!("{e}"));
    let spec = scenario.system.domains[0].clone();
    assert_eq!(
        rtvmm_host::domain::tasks_by_vcpu(&spec),
        Ok(vec![vec![], vec![]])
    );
    let notify = nix::sys::eventfd::EventFd::new().expect("an eventfd");
    let helper = HelperCommand::this_program().expect("this test binary");
    let cpu = rtvmm_host::sys::cpu_count() - 1;
    let domain = ProcessDomain::spawn(
        &helper,
        spec,
        vec![VcpuId(0), VcpuId(1)],
        0,
        Nanos::ZERO,
        1,
        cpu,
        false,
        &notify,
        false,
    )
    .unwrap_or_else(|e| panic!("spawn: {e}"));
    assert_eq!(domain.guests.len(), 2);
    assert_ne!(
        domain.guest(0).pid(),
        domain.guest(1).pid(),
        "a process per VCPU"
    );
    for j in 0..2 {
        let guest = domain.guest(j);
        assert_eq!(guest.vcpu, VcpuId(j as u32));
        assert!(guest.tasks.is_empty(), "VCPU {j} holds no task");
        assert_eq!(guest.member.threads.len(), 1, "VCPU {j}: one worker");
        let (tid, _) = guest.member.threads[0];
        let path = format!("/proc/{}/task/{tid}", guest.pid());
        assert!(std::path::Path::new(&path).exists(), "VCPU {j}: {path}");
        assert_eq!(guest.shared.kind(), rtvmm_host::shm::PageKind::GlobalVcpu);
    }
    let global = domain.global.as_ref().expect("the guest's scheduler");
    assert_eq!(global.vcpus(), 2);
    assert!(
        !global.has_work(0) && !global.has_work(1),
        "nothing released before the run"
    );
}
