//! A global guest of several VCPUs (`smp = "global"`) on the host: the executor's half
//! (`rtvmm_host::global::GlobalGuest`, the core's guest scheduler and the grants) and the
//! VCPU workers' half (`Burner`, here stand-ins burning simulated CPU time), driven over
//! the VCPU run intervals of the simulator's own run of the same system, in the order the
//! executor drives them at each instant (finishes and releases taken in, then the grants
//! handed out to the VCPUs running next). The jobs granted to each VCPU over each
//! interval, and every job's first start and finish, must be the simulator's — on a
//! hand-picked system of two pcpus and on random ones of one to three pcpus. No real time.
//!
//! A job that finishes mid-slice hands its VCPU the next job at the finish instant (no
//! real time).
//!
//! And on real threads: a global guest near its capacity on one pcpu misses as the
//! simulator does until the host's first stall (`docs/host.md`, "Near its capacity");
//! the real-time run of a global guest of two VCPUs on two pcpus, where a third core is
//! spare (skipped on two cores, with the reason).

use rtvmm_core::event::CoreEvent;
use rtvmm_core::model::PcpuId;
use rtvmm_core::rng::SimRng;
use rtvmm_core::Nanos;
use rtvmm_host::global::{Burn, Burner, GlobalGuest};
use rtvmm_host::shm::{JobTimes, PageKind, Shared};
use rtvmm_host::{executor, sys};
use rtvmm_scenario::Scenario;
use rtvmm_sim::Simulation;
use rtvmm_system::records::{GuestEvent, TraceEvent};
use rtvmm_system::results::JobRow;

use crate::util::{ms, options, skip};

/// Two pcpus, global EDF (RTDS): `g`, a global guest of two VCPUs (rm) with three tasks
/// that keep both VCPUs busy much of the time, beside two busy domains; VCPUs migrate and
/// jobs move between g's VCPUs.
pub const TWO_ON_TWO: &str = r#"name = "global-two"
duration = "600ms"
seed = 5

[machine]
pcpus = 2

[scheduler]
policy = "rtds"

[[domain]]
name = "g"
vcpus = 2
smp = "global"
vcpu = { budget = "6ms", period = "10ms" }
[[domain.task]]
name = "fast"
period = "10ms"
wcet = "4ms"
[[domain.task]]
name = "mid"
period = "15ms"
wcet = "6ms"
[[domain.task]]
name = "slow"
period = "30ms"
wcet = "9ms"
offset = "2ms"

[[domain]]
name = "a"
vcpu = { budget = "5ms", period = "10ms" }
[[domain.task]]
name = "t"
period = "10ms"
wcet = "20ms"

[[domain]]
name = "b"
vcpu = { budget = "4ms", period = "14ms" }
[[domain.task]]
name = "t"
period = "14ms"
wcet = "20ms"
"#;

/// One VCPU's slice of a job: (VCPU, from, to, task, job number).
type Slice = (u32, Nanos, Nanos, usize, u64);
/// One job: (task, job number, first start, finish).
type Done = (usize, u64, Option<u64>, Option<u64>);

/// What the host's global guest did over the simulator's VCPU run intervals, and what the
/// simulator did: the slices, then the finished jobs, each sorted.
struct Compared {
    host: (Vec<Slice>, Vec<Done>),
    simulated: (Vec<Slice>, Vec<Done>),
}

/// Runs `scenario` in the simulator until `end`, and the host's global guest of domain `d`
/// (executor's half and stand-in workers) over the intervals in which the simulation ran
/// each of its VCPUs.
fn compare(scenario: &Scenario, d: usize, end: Nanos) -> Compared {
    let mut sim = Simulation::new(&scenario.system, scenario.seed, true).expect("a system");
    let spec = sim.domains()[d].spec.clone();
    let vcpus = sim.domains()[d].vcpus.clone();
    let pcpus = scenario.system.machine.pcpus;
    let pages: Vec<Shared> = vcpus
        .iter()
        .map(|_| {
            let page = Shared::create(1, 1, 0, 0).expect("a page");
            page.set_kind(PageKind::GlobalVcpu);
            page
        })
        .collect();
    let page = |j: usize| &pages[j];
    let mut guest = GlobalGuest::new(&spec, scenario.seed, d as u32, Nanos::ZERO).expect("a guest");
    guest.grant_nothing(page);
    // Each VCPU's worker and its thread's CPU clock.
    let mut workers = vec![(Burner::default(), 0u64); vcpus.len()];
    let mut finished: Vec<(usize, JobTimes)> = Vec::new();
    let mut slices = Vec::new();
    let mut before = 0u64;
    let mut at = Nanos::ZERO;
    while at < end {
        let running = (0..pcpus)
            .filter_map(|p| sim.machine().running(PcpuId(p)))
            .filter_map(|v| vcpus.iter().position(|&w| w == v))
            .fold(0u64, |mask, j| mask | 1 << j);
        // The executor at `at`: before the machine decides, finishes and releases (the
        // VCPUs that ran until now); once the seats run the decision, the grants.
        let mut record = |t, times| finished.push((t, times));
        if !guest.taken_in() && guest.due(page, at, before) {
            guest.take_in(page, at, &mut record);
        }
        if !guest.taken_in() && guest.due(page, at, running) {
            guest.take_in(page, at, &mut record);
        }
        if guest.taken_in() {
            guest.hand_out(page, running, &mut record);
        }
        before = running;
        let on = |j: &usize| running & (1 << j) != 0;
        for j in (0..vcpus.len()).filter(on) {
            let (burner, cpu) = &mut workers[j];
            burner.step(&pages[j], *cpu, || at.as_ns());
        }
        let next = sim.step(end).expect("the simulation runs");
        for j in (0..vcpus.len()).filter(on) {
            if let (Some((task, seq)), true) = (guest.granted_job(j), next > at) {
                slices.push((j as u32, at, next, task, seq));
            }
            let (burner, cpu) = &mut workers[j];
            *cpu += (next - at).as_ns();
            burner.step(&pages[j], *cpu, || next.as_ns());
        }
        at = next;
    }
    // The host counts a job finished at `end` at its next instant: take it in.
    guest.take_in(page, end, &mut |t, times| finished.push((t, times)));

    let mut simulated_slices: Vec<Slice> = sim
        .take_trace()
        .into_iter()
        .filter_map(|(start, e)| match e {
            TraceEvent::Guest(GuestEvent::Run {
                domain,
                task,
                seq,
                end,
                vcpu,
            }) if domain as usize == d => Some((vcpu, start, end, task as usize, seq)),
            _ => None,
        })
        .collect();
    let mut simulated_done: Vec<Done> = sim.domains()[d]
        .finished
        .iter()
        .enumerate()
        .flat_map(|(t, jobs)| {
            jobs.iter().map(move |j| {
                (
                    t,
                    j.seq,
                    j.first_start.map(Nanos::as_ns),
                    j.finish.map(Nanos::as_ns),
                )
            })
        })
        .collect();
    let mut host_done: Vec<Done> = finished
        .iter()
        .map(|&(t, j)| (t, j.seq, j.first_start, j.finish))
        .collect();
    for list in [&mut slices, &mut simulated_slices] {
        list.sort();
    }
    for list in [&mut host_done, &mut simulated_done] {
        list.sort();
    }
    Compared {
        host: (slices, host_done),
        simulated: (simulated_slices, simulated_done),
    }
}

fn assert_same(what: &str, compared: &Compared) {
    let (host, sim) = (&compared.host, &compared.simulated);
    if let Some(i) = (0..host.0.len().max(sim.0.len())).find(|&i| host.0.get(i) != sim.0.get(i)) {
        panic!(
            "{what}: the slices differ from the {i}th: host {:?}, simulated {:?}",
            &host.0[i.min(host.0.len())..(i + 4).min(host.0.len())],
            &sim.0[i.min(sim.0.len())..(i + 4).min(sim.0.len())]
        );
    }
    assert_eq!(host.1, sim.1, "{what}: the finished jobs");
}

/// The hand-picked system: two pcpus under global EDF, the guest's three tasks on its two
/// VCPUs. Every slice of every job on every VCPU, and every job's first start and finish,
/// are the simulator's; and the run is one that tests something: jobs ran on both VCPUs,
/// some job moved from one VCPU to the other, and more than 60 jobs finished.
pub fn a_global_guest_on_two_pcpus_runs_each_job_where_the_simulator_does() {
    let scenario =
        Scenario::from_toml(TWO_ON_TWO, "global-two.toml").unwrap_or_else(|e| panic!("{e}"));
    let compared = compare(&scenario, 0, ms(600));
    assert_same("global-two", &compared);
    let (slices, done) = &compared.host;
    let on = |v: u32| slices.iter().any(|s| s.0 == v);
    assert!(on(0) && on(1), "jobs ran on both VCPUs");
    let moved = slices.iter().any(|a| {
        slices
            .iter()
            .any(|b| (a.3, a.4) == (b.3, b.4) && a.0 != b.0)
    });
    assert!(moved, "no job moved between the VCPUs");
    assert!(done.len() > 60, "{} jobs finished", done.len());
    eprintln!(
        "global-two: {} slices, {} jobs finished, as simulated",
        slices.len(),
        done.len()
    );
}

/// A random system: 1–3 pcpus under RTDS or the Deferrable Server, a global guest of 2–3 VCPUs (`rm` or
/// `edf`) with 2–5 periodic tasks, beside 1–2 busy domains.
fn random_system(case: u64, rng: &mut SimRng) -> (String, usize) {
    let pcpus = 1 + rng.uniform_u64(0, 2);
    let policy = ["rtds", "deferrable"][rng.uniform_u64(0, 1) as usize];
    let vcpus = 2 + rng.uniform_u64(0, 1);
    let guest = ["rm", "edf"][rng.uniform_u64(0, 1) as usize];
    let period = rng.uniform_u64(8, 20);
    let budget = rng.uniform_u64(2, period - 1);
    let mut text = format!(
        "name = \"random-{case}\"\nduration = \"300ms\"\nseed = {case}\n\n[machine]\npcpus = \
         {pcpus}\n\n[scheduler]\npolicy = \"{policy}\"\n\n[[domain]]\nname = \"g\"\nvcpus = \
         {vcpus}\nsmp = \"global\"\nguest = \"{guest}\"\nvcpu = {{ budget = \"{budget}ms\", \
         period = \"{period}ms\", priority = 1 }}\n"
    );
    for t in 0..rng.uniform_u64(2, 5) {
        let period = rng.uniform_u64(5, 40);
        let wcet = rng.uniform_u64(1, period / 2);
        let offset = rng.uniform_u64(0, 5);
        text += &format!(
            "[[domain.task]]\nname = \"t{t}\"\nperiod = \"{period}ms\"\nwcet = \"{wcet}ms\"\n\
             offset = \"{offset}ms\"\n"
        );
    }
    for o in 0..rng.uniform_u64(1, 2) {
        let period = rng.uniform_u64(8, 20);
        let budget = rng.uniform_u64(1, period / 2);
        text += &format!(
            "\n[[domain]]\nname = \"o{o}\"\nvcpu = {{ budget = \"{budget}ms\", period = \
             \"{period}ms\", priority = {} }}\n[[domain.task]]\nname = \"t\"\nperiod = \
             \"{period}ms\"\nwcet = \"40ms\"\n",
            o + 2
        );
    }
    (text, pcpus as usize)
}

/// The property: on 40 random systems (one to three pcpus, RTDS or the Deferrable Server,
/// 2–3 VCPUs, `rm` or `edf`), the same tasks over the same VCPU run intervals get the same
/// job on each VCPU at every instant, and the same first starts and finishes, as in the
/// simulator.
pub fn on_random_systems_a_global_guest_runs_each_job_where_the_simulator_does() {
    let mut rng = SimRng::new(20261128);
    let mut slices = 0;
    let mut by_pcpus = [0; 4];
    for case in 0..40 {
        let (text, pcpus) = random_system(case, &mut rng);
        by_pcpus[pcpus] += 1;
        let scenario = Scenario::from_toml(&text, "random.toml")
            .unwrap_or_else(|e| panic!("case {case}: {e}\n{text}"));
        let compared = compare(&scenario, 0, ms(300));
        assert_same(&format!("case {case}:\n{text}\n"), &compared);
        slices += compared.host.0.len();
    }
    assert!(slices > 1000, "only {slices} slices in 40 systems");
    assert!(by_pcpus[1..].iter().all(|&n| n > 5), "{by_pcpus:?}");
    eprintln!(
        "40 random systems of 1, 2, 3 pcpus ({:?}): {slices} slices, as simulated",
        &by_pcpus[1..]
    );
}

/// The real-time run of [`TWO_ON_TWO`] on cpus 0 and 1, where a third core is spare: the
/// global guest's threads get about what its two VCPUs were accounted, each VCPU its
/// worker's, its jobs finish (about as many as simulated), and its VCPUs migrate. Skipped
/// (with the reason) on fewer than three cores, where the run is refused naming them.
pub fn a_global_guest_of_two_vcpus_runs_on_two_pcpus() {
    let count = sys::cpu_count();
    if count < 3 {
        eprintln!(
            "skipped: global_guest: this machine has {count} cores (0-{}): a run of 2 pcpus \
             needs a third to spare beyond them",
            count - 1
        );
        return;
    }
    if skip("global_guest") {
        return;
    }
    let scenario =
        Scenario::from_toml(TWO_ON_TWO, "global-two.toml").unwrap_or_else(|e| panic!("{e}"));
    let end = ms(3_000);
    let mut sim = Simulation::new(&scenario.system, scenario.seed, false).expect("a system");
    sim.run_until(end).expect("the simulation");
    let simulated: u64 = sim.domains()[0].stats.iter().map(|s| s.finished).sum();
    let mut options = options(end);
    options.cpus = vec![0, 1];
    let run = executor::run(&scenario.system, "global-two", scenario.seed, options)
        .unwrap_or_else(|e| panic!("a global guest on two pcpus: {e}"));
    let host = run.results.host.as_ref().expect("a host section");
    let g = &run.results.domains[0];
    let finished: u64 = g.tasks.iter().map(|t| t.finished).sum();
    eprintln!("global guest on 2 pcpus: {finished} jobs finished (simulated {simulated})");
    assert!(
        finished.abs_diff(simulated) * 20 <= simulated,
        "{finished} jobs finished on the host, {simulated} in the simulation"
    );
    let accounted: u64 = g.vcpus.iter().map(|v| v.run_ns).sum();
    let had = host.domain_cpu_ns[0];
    eprintln!(
        "global guest: its workers had {:.1} ms, its VCPUs were accounted {:.1} ms",
        had as f64 / 1e6,
        accounted as f64 / 1e6
    );
    assert!(
        had.abs_diff(accounted) * 10 <= accounted,
        "its workers had {had} ns, its VCPUs were accounted {accounted} ns"
    );
    let migrations: u64 = g.vcpus.iter().filter_map(|v| v.migrations).sum();
    assert!(migrations > 0, "the global guest's VCPUs never migrated");
}

/// One VCPU of a global guest of two runs alone (the other descheduled), `a` (1 ms) and
/// `b` (2 ms) released at 0. `a` finishes mid-slice, at 1 ms; its worker rings; the
/// executor takes the finish in and hands out at that instant, with the same VCPU
/// running: `b` is granted there at once, from 0 ms done, and finishes at 3 ms with its
/// first start at 1 ms — the VCPU is never left without a job, and no time is lost:
/// ```text
///        0      1      2      3
/// V0     a......b.............|
/// V1     (descheduled)
/// ```
pub fn a_job_finishing_mid_slice_hands_its_vcpu_the_next_job_at_once() {
    let text = r#"name = "mid-slice"
duration = "20ms"
[[domain]]
name = "g"
vcpus = 2
smp = "global"
guest = "edf"
vcpu = { budget = "9ms", period = "10ms" }
[[domain.task]]
name = "a"
period = "10ms"
wcet = "1ms"
[[domain.task]]
name = "b"
period = "20ms"
wcet = "2ms"
"#;
    let scenario = Scenario::from_toml(text, "mid-slice.toml").unwrap_or_else(|e| panic!("{e}"));
    let sim = Simulation::new(&scenario.system, scenario.seed, false).expect("a system");
    let spec = sim.domains()[0].spec.clone();
    let pages: Vec<Shared> = (0..2)
        .map(|_| {
            let page = Shared::create(1, 1, 0, 0).expect("a page");
            page.set_kind(PageKind::GlobalVcpu);
            page
        })
        .collect();
    let page = |j: usize| &pages[j];
    let mut guest = GlobalGuest::new(&spec, 1, 0, Nanos::ZERO).expect("a guest");
    guest.grant_nothing(page);
    let mut finished: Vec<(usize, JobTimes)> = Vec::new();
    guest.sync(page, Nanos::ZERO, 0b01, &mut |t, j| finished.push((t, j)));
    assert_eq!(
        guest.granted_job(0),
        Some((0, 0)),
        "a (earliest deadline) on V0"
    );
    let mut burner = Burner::default();
    let us = |x: u64| Nanos(x * 1_000);
    // The worker's thread burns in steps of 100 µs; a reaches its 1 ms at 1 ms.
    let mut cpu = 0;
    let mut at = Nanos::ZERO;
    let step =
        |burner: &mut Burner, cpu: u64, at: Nanos| burner.step(&pages[0], cpu, || at.as_ns());
    assert_eq!(step(&mut burner, cpu, at), Burn::Running);
    while at < ms(1) {
        (cpu, at) = (cpu + us(100).as_ns(), at + us(100));
        let burn = step(&mut burner, cpu, at);
        assert_eq!(burn == Burn::Finished, at == ms(1), "at {at}: {burn:?}");
    }
    // The ring: due at once, the same VCPUs running.
    assert!(guest.due(page, at, 0b01), "a's finish is due at 1 ms");
    guest.take_in(page, at, &mut |t, j| finished.push((t, j)));
    assert!(
        guest.has_work(0),
        "V0 keeps its work between a's finish and b's grant"
    );
    guest.hand_out(page, 0b01, &mut |t, j| finished.push((t, j)));
    assert_eq!(
        guest.granted_job(0),
        Some((1, 0)),
        "b granted on V0 at the finish"
    );
    assert_eq!(
        pages[0].granted().1,
        Some(ms(2).as_ns()),
        "b's demand in the page"
    );
    assert_eq!(pages[0].done().1, 0, "b from nothing done");
    while at < ms(3) {
        let burn = step(&mut burner, cpu, at);
        assert_ne!(burn, Burn::Idle, "at {at}: V0 runs b");
        (cpu, at) = (cpu + us(100).as_ns(), at + us(100));
    }
    assert_eq!(
        step(&mut burner, cpu, at),
        Burn::Finished,
        "b reaches 2 ms at 3 ms"
    );
    assert!(guest.due(page, at, 0b01));
    guest.sync(page, at, 0b01, &mut |t, j| finished.push((t, j)));
    let done: Vec<(usize, Option<u64>, Option<u64>)> = finished
        .iter()
        .map(|&(t, j)| (t, j.first_start, j.finish))
        .collect();
    assert_eq!(
        done,
        [
            (0, Some(0), Some(ms(1).as_ns())),
            (1, Some(ms(1).as_ns()), Some(ms(3).as_ns()))
        ]
    );
}

/// A global guest of two VCPUs near its capacity (65 % of the core in tasks, 70 % in
/// budget) beside a busy domain, RTDS, one pcpu: `edf` misses 12.3 % of its jobs
/// simulated (`docs/host.md`, "Near its capacity").
pub const NEAR_CAPACITY: &str = r#"name = "near-capacity"
duration = "2s"
seed = 1

[scheduler]
policy = "rtds"

[[domain]]
name = "g"
vcpus = 2
smp = "global"
guest = "edf"
vcpu = { budget = "3500us", period = "10ms", extratime = false }
[[domain.task]]
name = "a"
period = "10ms"
wcet = "3ms"
[[domain.task]]
name = "b"
period = "20ms"
wcet = "5ms"
[[domain.task]]
name = "c"
period = "40ms"
wcet = "4ms"

[[domain]]
name = "busy"
vcpu = { budget = "3ms", period = "10ms", extratime = false }
[[domain.task]]
name = "busy"
period = "10ms"
wcet = "20ms"
"#;

/// Host and simulation may differ by this (percentage points) in the share of `g`'s jobs
/// missed before the first stall: the host's own costs shift jobs by tens of
/// microseconds, which cost the host 0–4 of 168–291 jobs (0–2.1 points) in six runs of the
/// release build and 1.2–3.1 points in six of this (unoptimised) test binary. A job
/// left without its next grant until the next decision, or a stall counted in, costs
/// tens of points.
const MISS_TOLERANCE: f64 = 6.0;
/// A comparison needs at least this many jobs due before the first stall.
const JOBS_BEFORE_A_STALL: usize = 100;

/// The first period boundary of `g`'s VCPUs (every 10 ms) whose replenishment came more
/// than 1 ms late, or not at all: a stall of the host, which began up to a period before.
fn first_stall(events: &[(Nanos, TraceEvent)], end: Nanos) -> Nanos {
    let period = ms(10).as_ns();
    let mut boundary = period;
    for (at, event) in events {
        if let TraceEvent::Core(CoreEvent::Replenish { .. }) = event {
            if at.as_ns() < boundary {
                continue;
            }
            if at.as_ns() - boundary > ms(1).as_ns() {
                break;
            }
            boundary += period;
        }
    }
    Nanos(boundary).min(end)
}

/// Of `rows`' jobs of domain `g` due by `by`: how many, and how many missed (finished
/// after the deadline, or not at all).
fn misses_by(rows: &[JobRow], by: Nanos) -> (usize, usize) {
    let due: Vec<&JobRow> = rows
        .iter()
        .filter(|r| r.domain == "g" && r.deadline <= by)
        .collect();
    let missed = due
        .iter()
        .filter(|r| r.finish.is_none_or(|f| f > r.deadline))
        .count();
    (due.len(), missed)
}

/// [`NEAR_CAPACITY`] on real threads, one pcpu: over the jobs due before the host's first
/// stall (a period boundary served more than 1 ms late, less a period), `g` misses the
/// simulator's share ± [`MISS_TOLERANCE`]. A stall costs this guest far more (its slack
/// is 0.5 ms a period; `docs/host.md`), so the jobs after it are not compared; a run whose
/// first stall leaves fewer than [`JOBS_BEFORE_A_STALL`] jobs is tried again, three runs
/// at most, then the test says so and passes.
pub fn near_its_capacity_a_global_guest_misses_as_simulated_until_a_stall() {
    if skip("global_guest") {
        return;
    }
    let scenario =
        Scenario::from_toml(NEAR_CAPACITY, "near-capacity.toml").unwrap_or_else(|e| panic!("{e}"));
    let end = ms(2_000);
    let mut sim = Simulation::new(&scenario.system, scenario.seed, false).expect("a system");
    sim.run_until(end).expect("the simulation");
    let simulated = sim.job_rows(end).expect("the jobs kept");
    let (all, all_missed) = misses_by(&simulated, end);
    assert!(
        (10.0..15.0).contains(&(100.0 * all_missed as f64 / all as f64)),
        "near capacity: {all_missed} of {all} jobs missed in the simulation"
    );
    for attempt in 1..=3 {
        let mut options = options(end);
        options.record_trace = true;
        options.record_jobs = true;
        let run = executor::run(&scenario.system, "near-capacity", scenario.seed, options)
            .unwrap_or_else(|e| panic!("host run: {e}"));
        let (events, _) = run.trace.as_ref().expect("a trace");
        let stall = first_stall(events, end);
        let by = if stall < end { stall - ms(10) } else { end };
        let rows = run.jobs.as_ref().expect("the jobs");
        let (host_due, host_missed) = misses_by(rows, by);
        let (sim_due, sim_missed) = misses_by(&simulated, by);
        let share = |missed: usize, due: usize| 100.0 * missed as f64 / due.max(1) as f64;
        let (host, simulation) = (share(host_missed, host_due), share(sim_missed, sim_due));
        eprintln!(
            "run {attempt}: first stall by {:.0} ms; jobs due by {:.0} ms: host {host_missed} \
             of {host_due} missed ({host:.1}%), simulation {sim_missed} of {sim_due} \
             ({simulation:.1}%)",
            stall.as_ns() as f64 / 1e6,
            by.as_ns() as f64 / 1e6
        );
        if host_due < JOBS_BEFORE_A_STALL {
            continue;
        }
        assert_eq!(host_due, sim_due, "the same jobs due by {by}");
        assert!(
            (host - simulation).abs() <= MISS_TOLERANCE,
            "jobs due by {by}: host missed {host:.1}%, simulation {simulation:.1}%"
        );
        return;
    }
    eprintln!(
        "near capacity: every run stalled before {JOBS_BEFORE_A_STALL} jobs were due: \
         nothing compared"
    );
}
