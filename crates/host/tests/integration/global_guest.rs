//! A global guest of several VCPUs (`smp = "global"`) on the host: the executor's half
//! (`rtvmm_host::global::GlobalGuest`, the core's guest scheduler and the grants) and the
//! VCPU workers' half (`Burner`, here stand-ins burning simulated CPU time), driven over
//! the VCPU run intervals of the simulator's own run of the same system, in the order the
//! executor drives them at each instant (finishes and releases taken in, then the grants
//! handed out to the VCPUs running next). The jobs granted to each VCPU over each
//! interval, and every job's first start and finish, must be the simulator's — on a
//! hand-picked system of two pcpus and on random ones of one to three pcpus. No real time.
//!
//! And the real-time run of a global guest of two VCPUs on two pcpus, where a third core
//! is spare (skipped on two cores, with the reason).

use rtvmm_core::model::PcpuId;
use rtvmm_core::rng::SimRng;
use rtvmm_core::Nanos;
use rtvmm_host::global::{Burner, GlobalGuest};
use rtvmm_host::shm::{JobTimes, PageKind, Shared};
use rtvmm_host::{executor, sys};
use rtvmm_scenario::Scenario;
use rtvmm_sim::Simulation;
use rtvmm_system::records::{GuestEvent, TraceEvent};

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
