//! Several pcpus and multi-VCPU guests, triggered tasks and chains.

use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::guest::{Arrival, GuestScheduler, TaskSpec};
use rtvmm_core::machine::{MachineConfig, PoolSpec};
use rtvmm_core::model::{GuestSmp, Placement, VcpuParams};
use rtvmm_core::policy::{PolicyConfig, RtdsMode};
use rtvmm_core::Nanos;
use rtvmm_sim::Simulation;
use rtvmm_system::records::GuestEvent;
use rtvmm_system::records::TraceEvent;
use rtvmm_system::results::RunResults;
use rtvmm_system::{ChainSpec, DomainSpec, SystemSpec};

use crate::util::{domain, jobs_at, machine, ms, periodic, system};

/// (start, end, domain, task, vcpu) of every stretch a job ran, from a trace.
fn runs(trace: &[(Nanos, TraceEvent)]) -> Vec<(u64, u64, u32, u32, u32)> {
    let mut out: Vec<(u64, u64, u32, u32, u32)> = Vec::new();
    for (at, e) in trace {
        if let TraceEvent::Guest(GuestEvent::Run {
            domain,
            task,
            end,
            vcpu,
            ..
        }) = e
        {
            let (start, end) = (at.as_ns() / 1_000_000, end.as_ns() / 1_000_000);
            // Stretches of several VCPUs interleave: extend this job's stretch on this VCPU.
            match out
                .iter_mut()
                .rev()
                .find(|r| (r.2, r.3, r.4) == (*domain, *task, *vcpu))
            {
                Some(last) if last.1 == start => last.1 = end,
                _ => out.push((start, end, *domain, *task, *vcpu)),
            }
        }
    }
    out.sort();
    out
}

fn rtds_machine(pcpus: u32) -> MachineConfig {
    MachineConfig { pcpus, ..machine() }
}

/// A domain of `vcpus` RTDS VCPUs (budget/period in ms, no extratime), VCPU i pinned to
/// pcpu `pins[i]`.
fn multi_domain(
    name: &str,
    budget_ms: u64,
    period_ms: u64,
    pins: &[u32],
    smp: GuestSmp,
    tasks: Vec<TaskSpec>,
) -> DomainSpec {
    let mut vcpu = VcpuParams::server(ms(budget_ms), ms(period_ms), 1);
    vcpu.extratime = Some(false);
    DomainSpec {
        name: name.into(),
        vcpu,
        guest: GuestScheduler::Rm,
        tasks,
        placement: Placement {
            pool: None,
            vcpus: pins.len() as u32,
            affinity: pins.iter().map(|&p| Some(vec![p])).collect(),
            smp,
        },
    }
}

fn rtds_system(pcpus: u32, domains: Vec<DomainSpec>) -> SystemSpec {
    SystemSpec {
        domains,
        ..SystemSpec::one_pool(rtds_machine(pcpus), PolicyConfig::Rtds(RtdsMode::Event))
    }
}

fn run_traced(system: &SystemSpec, end_ms: u64) -> (Simulation, Vec<(Nanos, TraceEvent)>) {
    let mut sim = Simulation::new(system, 1, true).expect("valid system");
    sim.run_until(ms(end_ms)).expect("runs");
    let trace = sim.take_trace();
    (sim, trace)
}

/// One job at 0 of `wcet_ms`, with a period (its rm priority) of `period_ms`.
fn one_job(name: &str, period_ms: u64, wcet_ms: u64) -> TaskSpec {
    let mut t = TaskSpec::periodic(name, ms(period_ms), ms(wcet_ms));
    t.arrival = Arrival::AperiodicTimes(vec![Nanos::ZERO]);
    t
}

fn run_results(system: &SystemSpec, seed: u64, end_ms: u64) -> RunResults {
    let mut sim = Simulation::new(system, seed, false).expect("valid system");
    sim.run_until(ms(end_ms)).expect("runs");
    sim.results("t", seed, ms(end_ms))
}

/// Every pcpu's time adds up to the run: busy + idle + overhead = duration.
fn assert_pcpus_add_up(r: &RunResults) {
    for (i, p) in r.pcpus.iter().enumerate() {
        assert_eq!(
            p.busy_ns + p.idle_ns + p.overhead_ns,
            r.duration_ns,
            "pcpu {i}: {p:?}"
        );
    }
}

/// A global guest of 2 VCPUs, pinned to pcpus 0 and 1 (RTDS, full budgets), with three
/// 4 ms jobs released at 0 (rm, equal periods: declaration order a, b, c):
/// ```text
/// V0/pcpu0: a a a a c c c c
/// V1/pcpu1: b b b b
///           0       4       8
/// ```
/// The 2 best (a, b) run on the 2 VCPUs, best on the lowest index; at 4 both finish, one
/// job is left: V1 (no job, highest index) blocks and c runs on V0.
#[test]
fn a_global_guest_runs_its_two_best_jobs_on_its_two_vcpus() {
    let g = multi_domain(
        "g",
        10,
        10,
        &[0, 1],
        GuestSmp::Global,
        vec![
            jobs_at("a", &[0], 4),
            jobs_at("b", &[0], 4),
            jobs_at("c", &[0], 4),
        ],
    );
    let system = rtds_system(2, vec![g]);
    let (_, trace) = run_traced(&system, 20);
    assert_eq!(
        runs(&trace),
        vec![(0, 4, 0, 0, 0), (0, 4, 0, 1, 1), (4, 8, 0, 2, 0)]
    );
    let r = run_results(&system, 1, 20);
    assert_pcpus_add_up(&r);
    assert_eq!(r.pcpus.len(), 2);
    assert_eq!(r.pcpus[0].busy_ns, ms(8).as_ns());
    assert_eq!(r.pcpus[1].busy_ns, ms(4).as_ns());
    let vcpus = &r.domains[0].vcpus;
    assert_eq!(vcpus.len(), 2, "one row per VCPU");
    assert_eq!(
        (vcpus[0].run_ns, vcpus[1].run_ns),
        (ms(8).as_ns(), ms(4).as_ns())
    );
    assert_eq!(vcpus[0].migrations, Some(0), "pinned: never migrates");
    assert!(r.to_json().contains("\"migrations\""));
    assert!(!r.to_json().contains("\"chains\""), "no chains, no field");
}

/// RTDS (quantum mode), VCPUs of 4 ms every 10 ms pinned to pcpus 0 and 1, no extratime.
/// a (rm period 10, 6 ms) at 0; b (period 20, 2 ms) at 3.
/// ```text
/// V0/pcpu0: a a a a                      (budget 4 gone at 4: descheduled until 10)
/// V1/pcpu1:       b a a b
///           0     3 4   6 7
/// ```
/// [0,3) one job: only V0 is awake. At 3 b wakes V1. At 4 V0 is descheduled with a
/// unfinished: a (the best job) moves to V1, which was running the worse b; b goes back to
/// the queue. a finishes at 6 (4 + the 2 ms left); b resumes on V1 and finishes at 7. V0,
/// descheduled and without a job, is the VCPU that blocks when one job is left.
#[test]
fn a_job_moves_to_a_running_vcpu_when_its_vcpu_is_descheduled() {
    let mut b = one_job("b", 20, 2);
    b.arrival = Arrival::AperiodicTimes(vec![ms(3)]);
    let g = multi_domain(
        "g",
        4,
        10,
        &[0, 1],
        GuestSmp::Global,
        vec![one_job("a", 10, 6), b],
    );
    let mut system = rtds_system(2, vec![g]);
    system.pools[0].policy = PolicyConfig::Rtds(RtdsMode::Quantum);
    let (sim, trace) = run_traced(&system, 20);
    assert_eq!(
        runs(&trace),
        vec![
            (0, 4, 0, 0, 0),
            (3, 4, 0, 1, 1),
            (4, 6, 0, 0, 1),
            (6, 7, 0, 1, 1)
        ]
    );
    let finish: Vec<Option<Nanos>> = sim.domains()[0]
        .finished
        .iter()
        .map(|jobs| jobs[0].finish)
        .collect();
    assert_eq!(finish, vec![Some(ms(6)), Some(ms(7))]);
    assert_pcpus_add_up(&run_results(&system, 1, 20));
}

/// A partitioned guest: a and c on V0, b on V1 (rm periods 10, 20, 30), all at 0.
/// ```text
/// V0/pcpu0: a a c c
/// V1/pcpu1: b b b
///           0   2   4
/// ```
/// Each VCPU runs only its own tasks: c waits for a on V0 although V1 idles from 3.
#[test]
fn a_partitioned_guest_runs_each_task_on_its_vcpu() {
    let mut a = one_job("a", 10, 2);
    let mut b = one_job("b", 20, 3);
    let mut c = one_job("c", 30, 2);
    (a.vcpu, b.vcpu, c.vcpu) = (0, 1, 0);
    let g = multi_domain("g", 10, 10, &[0, 1], GuestSmp::Partitioned, vec![a, b, c]);
    let system = rtds_system(2, vec![g]);
    let (_, trace) = run_traced(&system, 10);
    assert_eq!(
        runs(&trace),
        vec![(0, 2, 0, 0, 0), (0, 3, 0, 1, 1), (2, 4, 0, 2, 0)]
    );
    assert_pcpus_add_up(&run_results(&system, 1, 10));

    // A task pinned to a VCPU the domain lacks is refused, naming the task and the field.
    let mut bad = system.clone();
    bad.domains[0].tasks[1].vcpu = 2;
    let e = Simulation::new(&bad, 1, false).err().expect("refused");
    assert_eq!(
        e.to_string(),
        "domain 'g': task 'b': vcpu: 2 is not a VCPU of the domain (it has 2)"
    );
}

fn triggered(name: &str, by: (&str, &str), delay: Nanos, wcet: Nanos) -> TaskSpec {
    let mut t = TaskSpec::periodic(name, ms(10), wcet);
    t.arrival = Arrival::Triggered {
        by_domain: by.0.into(),
        by_task: by.1.into(),
        delay,
    };
    t
}

fn chain(name: &str, tasks: &[(&str, &str)], bounds: Vec<Nanos>) -> ChainSpec {
    ChainSpec {
        name: name.into(),
        tasks: tasks
            .iter()
            .map(|(d, t)| (d.to_string(), t.to_string()))
            .collect(),
        bounds,
    }
}

/// A chain rx (d1) → app (d2) → tx (d1) on one pcpu, Deferrable Servers d1 (4 ms every
/// 10, priority 1) and d2 (4/10, priority 2); rx every 10 ms needs 1, app 2, tx 1; each
/// trigger has a 1 ms delay. In every 10 ms:
/// ```text
/// pcpu: d1 -- d2 d2 -- d1 -- ...
///       rx    app      tx
///       0  1  2     4  5  6
/// ```
/// rx finishes at 1 → app released at 2, runs [2,4) → tx released at 5, runs [5,6): each
/// instance takes 6 ms from rx's release to tx's finish. In 100 ms, the 10 instances
/// started at 0, 10, …, 90 all finish (the last at 96).
#[test]
fn a_chain_of_three_tasks_across_two_domains_measures_its_latency() {
    let d1 = domain(
        "d1",
        4,
        10,
        1,
        vec![
            periodic("rx", 10, 1),
            triggered("tx", ("d2", "app"), ms(1), ms(1)),
        ],
    );
    let d2 = domain(
        "d2",
        4,
        10,
        2,
        vec![triggered("app", ("d1", "rx"), ms(1), ms(2))],
    );
    let mut system = system(PolicyConfig::Deferrable, vec![d1, d2]);
    system.chains = vec![chain(
        "rtt",
        &[("d1", "rx"), ("d2", "app"), ("d1", "tx")],
        vec![ms(1), ms(6)],
    )];
    let r = run_results(&system, 1, 100);
    assert_eq!(r.chains.len(), 1);
    let c = &r.chains[0];
    assert_eq!(c.name, "rtt");
    assert_eq!(c.instances, 10);
    let six = ms(6).as_ns();
    assert_eq!((c.latency_ns.min, c.latency_ns.max), (six, six));
    assert_eq!(c.latency_ns.mean, six as f64);
    assert_eq!(c.latency_std_dev_ns, 0.0);
    assert_eq!(
        c.within
            .iter()
            .map(|w| (w.bound_ns, w.instances, w.share))
            .collect::<Vec<_>>(),
        vec![(ms(1).as_ns(), 0, 0.0), (six, 10, 1.0)]
    );
    // The triggered tasks' jobs: app released at 2, 12, …; tx at 5, 15, ….
    let app = &r.domains[1].tasks[0];
    assert_eq!((app.released, app.finished), (10, 10));
    assert_eq!(app.response_ns.max, ms(2).as_ns());
    assert!(r.to_json().contains("\"chains\""));
    assert!(r.summary().contains("rtt"), "{}", r.summary());
    assert_pcpus_add_up(&r);
}

/// Two instances in flight at once, matched by their origin: rx jobs at 0 and 1 (1 ms each,
/// d1 at full budget); each finish releases app 5 ms later (at 6 and 7); app needs 3 and
/// its jobs run in order on d2: [6,9) and [9,12). Latencies: 9 − 0 = 9 and 12 − 1 = 11:
/// mean 10, population standard deviation 1.
#[test]
fn chain_instances_in_flight_together_are_matched_by_their_origin() {
    let mut rx = jobs_at("rx", &[0, 1], 1);
    rx.period = ms(100);
    let d1 = domain("d1", 10, 10, 1, vec![rx]);
    let d2 = domain(
        "d2",
        10,
        10,
        2,
        vec![triggered("app", ("d1", "rx"), ms(5), ms(3))],
    );
    let mut system = system(PolicyConfig::Deferrable, vec![d1, d2]);
    system.chains = vec![chain("c", &[("d1", "rx"), ("d2", "app")], vec![])];
    let r = run_results(&system, 1, 50);
    let c = &r.chains[0];
    assert_eq!(c.instances, 2);
    assert_eq!(
        (c.latency_ns.min, c.latency_ns.max),
        (ms(9).as_ns(), ms(11).as_ns())
    );
    assert_eq!(c.latency_ns.mean, ms(10).as_ns() as f64);
    assert_eq!(c.latency_std_dev_ns, ms(1).as_ns() as f64);
    assert_eq!(c.within[0].bound_ns, ms(1).as_ns(), "default bound: 1 ms");
}

#[test]
fn chains_and_triggers_that_do_not_link_are_refused() {
    let d1 = domain("d1", 4, 10, 1, vec![periodic("rx", 10, 1)]);
    let d2 = domain(
        "d2",
        4,
        10,
        2,
        vec![triggered("app", ("d1", "rx"), ms(1), ms(1))],
    );
    let mut s = system(PolicyConfig::Deferrable, vec![d1, d2]);
    s.chains = vec![chain("c", &[("d2", "app"), ("d1", "rx")], vec![])];
    let e = Simulation::new(&s, 1, false).err().expect("refused");
    assert!(
        e.to_string()
            .starts_with("chain 'c': tasks: the first task 'd2'/'app' is triggered"),
        "{e}"
    );
    s.chains = vec![chain("c", &[("d1", "rx"), ("d1", "rx")], vec![])];
    let e = Simulation::new(&s, 1, false).err().expect("refused");
    assert_eq!(
        e.to_string(),
        "chain 'c': tasks: 'd1'/'rx' is not triggered by the task before it in the chain, \
         'd1'/'rx'"
    );
    s.chains.clear();
    s.domains[1].tasks[0] = triggered("app", ("d1", "nope"), ms(1), ms(1));
    let e = Simulation::new(&s, 1, false).err().expect("refused");
    assert_eq!(
        e.to_string(),
        "domain 'd2', task 'app': triggered by 'd1'/'nope': no such task in the system"
    );
}

/// Poisson packets into a chain across two domains on two pcpus, each in its own cpupool
/// (Deferrable Servers): the same seed gives the same bytes; another seed other arrivals.
#[test]
fn chains_with_poisson_sources_are_deterministic() {
    let mut rx = TaskSpec::periodic("rx", ms(5), Nanos::from_us(300));
    rx.arrival = Arrival::Poisson { mean_gap: ms(3) };
    let tx = triggered("tx", ("d2", "app"), Nanos::from_us(50), Nanos::from_us(200));
    let d1 = domain("d1", 5, 10, 1, vec![rx, tx]);
    let mut app = triggered("app", ("d1", "rx"), Nanos::from_us(50), Nanos::from_us(800));
    app.min_exec = Nanos::from_us(400);
    let mut d2 = domain("d2", 5, 10, 1, vec![app]);
    d2.placement.pool = Some("io".into());
    let mut system = system(PolicyConfig::Deferrable, vec![d1, d2]);
    system.machine.pcpus = 2;
    system.pools = vec![
        PoolSpec::new("Pool-0", CpuSet::one(0), PolicyConfig::Deferrable),
        PoolSpec::new("io", CpuSet::one(1), PolicyConfig::Deferrable),
    ];
    system.chains = vec![chain(
        "rtt",
        &[("d1", "rx"), ("d2", "app"), ("d1", "tx")],
        vec![ms(1), ms(2)],
    )];
    let a = run_results(&system, 7, 2_000);
    let b = run_results(&system, 7, 2_000);
    let other = run_results(&system, 8, 2_000);
    assert_eq!(a.to_json(), b.to_json());
    assert_ne!(a.to_json(), other.to_json());
    assert!(a.chains[0].instances > 500, "{:?}", a.chains[0]);
    assert_pcpus_add_up(&a);
    // d2 alone on pcpu 1: its busy time is app's work, d1's is rx's and tx's.
    assert!(a.pcpus[1].busy_ns > 0 && a.pcpus[0].busy_ns > 0);
    // Each instance needs at least 300 + 50 + 400 + 50 + 200 µs.
    assert!(a.chains[0].latency_ns.min >= Nanos::from_us(1_000).as_ns());
    assert!(a.summary().contains("rtt"));
}
