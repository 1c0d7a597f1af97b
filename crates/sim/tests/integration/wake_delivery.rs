//! Wake delivery (`[machine] wake_delivery`): a release reaches its guest a latency after
//! its instant; the job keeps the instant as its release, so the latency is part of its
//! response time. Hand-derived schedules, and the draws' determinism.

use rtvmm_core::guest::{Arrival, TaskSpec};
use rtvmm_core::machine::MachineConfig;
use rtvmm_core::policy::PolicyConfig;
use rtvmm_core::wake::{WakeDelivery, WakeRandom};
use rtvmm_core::Nanos;
use rtvmm_sim::Simulation;
use rtvmm_system::records::JobRecord;
use rtvmm_system::SystemSpec;

use crate::util::{assert_schedule, domain, jobs_at_us, machine, ms, periodic, run, us};

fn with_delivery(mut spec: SystemSpec, delivery: WakeDelivery) -> SystemSpec {
    spec.machine = MachineConfig {
        wake_delivery: delivery,
        ..spec.machine
    };
    spec
}

fn one_domain(tasks: Vec<TaskSpec>) -> SystemSpec {
    SystemSpec {
        domains: vec![domain("d1", 10, 10, 1, tasks)],
        ..SystemSpec::one_pool(machine(), PolicyConfig::Deferrable)
    }
}

/// (release, first start, finish) of every finished job of task `task` of domain 0.
fn jobs(sim: &Simulation, task: usize) -> Vec<(Nanos, Nanos, Nanos)> {
    sim.domains()[0].finished[task]
        .iter()
        .map(|j: &JobRecord| (j.release, j.first_start.unwrap(), j.finish.unwrap()))
        .collect()
}

/// One periodic task, 1 ms every 10 ms, alone on a VCPU that may always run. A fixed
/// 100 µs delivery moves each job's start and finish, and so its response time, by exactly
/// 100 µs; its release stays on the 10 ms grid.
///
/// ```text
/// off:  0 ▇▇▇▇▇▇▇▇▇▇ 1ms ........ 10ms ▇▇▇▇▇▇▇▇▇▇ 11ms ...
/// on:   0 . 0.1ms ▇▇▇▇▇▇▇▇▇▇ 1.1ms .. 10ms . 10.1ms ▇▇▇▇▇▇▇▇▇▇ 11.1ms ...
/// ```
#[test]
fn a_fixed_delivery_delays_start_and_response_by_exactly_itself() {
    let spec = one_domain(vec![periodic("t", 10, 1)]);
    let (_, off) = run(&spec, ms(30));
    assert_eq!(
        jobs(&off, 0),
        vec![
            (ms(0), ms(0), ms(1)),
            (ms(10), ms(10), ms(11)),
            (ms(20), ms(20), ms(21)),
        ]
    );
    let spec = with_delivery(spec, WakeDelivery::fixed(us(100)).unwrap());
    let (schedule, on) = run(&spec, ms(30));
    assert_eq!(
        jobs(&on, 0),
        vec![
            (ms(0), us(100), us(1_100)),
            (ms(10), us(10_100), us(11_100)),
            (ms(20), us(20_100), us(21_100)),
        ]
    );
    // Response times, from the results: 1.1 ms each, one more than without.
    let response = |sim: &Simulation| {
        let r = sim.results("t", 1, ms(30));
        r.domains[0].tasks[0].max_response_ns
    };
    assert_eq!(response(&off), 1_000_000);
    assert_eq!(response(&on), 1_100_000);
    assert_schedule(
        &schedule,
        "0-100us idle, 100us-1100us d1, 1100us-10100us idle, 10100us-11100us d1, \
         11100us-20100us idle, 20100us-21100us d1, 21100us-30 idle",
    );
}

/// A delivery changes which job runs first. In one rm guest: `x` (released at 0, 1 ms)
/// triggers `y` (higher priority, 500 µs) when it finishes; `z` (lowest priority, 500 µs)
/// is released at 1.05 ms.
///
/// ```text
/// off:  x 0–1ms; y released at 1ms, runs 1–1.5ms; z (released 1.05) waits, 1.5–2ms
/// 100µs: x 0.1–1.1ms; y released at 1.1ms, delivered at 1.2ms; z released at 1.05ms,
///        delivered at 1.15ms, runs first 1.15–1.2ms; y preempts it, 1.2–1.7ms;
///        z finishes 1.7–2.15ms
/// ```
#[test]
fn a_fixed_delivery_changes_which_job_runs_first() {
    let x = jobs_at_us("x", &[0], 1_000);
    let mut y = TaskSpec::periodic("y", ms(2), us(500));
    y.arrival = Arrival::Triggered {
        by_domain: "d1".to_string(),
        by_task: "x".to_string(),
        delay: Nanos::ZERO,
    };
    let z = jobs_at_us("z", &[1_050], 500);
    let spec = one_domain(vec![x, y, z]);
    let (_, off) = run(&spec, ms(5));
    assert_eq!(jobs(&off, 1), vec![(ms(1), ms(1), us(1_500))]);
    assert_eq!(jobs(&off, 2), vec![(us(1_050), us(1_500), ms(2))]);

    let spec = with_delivery(spec, WakeDelivery::fixed(us(100)).unwrap());
    let (schedule, on) = run(&spec, ms(5));
    assert_eq!(jobs(&on, 0), vec![(ms(0), us(100), us(1_100))]);
    assert_eq!(jobs(&on, 1), vec![(us(1_100), us(1_200), us(1_700))]);
    assert_eq!(jobs(&on, 2), vec![(us(1_050), us(1_150), us(2_150))]);
    assert_schedule(
        &schedule,
        "0-100us idle, 100us-1100us d1, 1100us-1150us idle, 1150us-2150us d1, 2150us-5 idle",
    );
}

/// A system whose every random draw matters: execution times drawn in `[min_exec, wcet]`
/// and a Poisson stream, under an exponential delivery.
fn drawn_system(delivery: WakeDelivery) -> SystemSpec {
    let mut a = TaskSpec::periodic("a", ms(5), ms(1));
    a.min_exec = us(200);
    let mut b = TaskSpec::periodic("b", ms(50), ms(2));
    b.min_exec = us(500);
    b.arrival = Arrival::Poisson { mean_gap: ms(7) };
    with_delivery(
        SystemSpec {
            domains: vec![
                domain("d1", 4, 10, 1, vec![a]),
                domain("d2", 5, 10, 2, vec![b]),
            ],
            ..SystemSpec::one_pool(machine(), PolicyConfig::Deferrable)
        },
        delivery,
    )
}

fn results_json(spec: &SystemSpec, seed: u64) -> String {
    results_json_by(spec, seed, |sim, end| sim.run_until(end).unwrap())
}

/// [`results_json`], the run driven by `drive` up to its end.
fn results_json_by(
    spec: &SystemSpec,
    seed: u64,
    drive: impl FnOnce(&mut Simulation, Nanos),
) -> String {
    let mut sim = Simulation::new(spec, seed, false).unwrap();
    sim.set_check_invariants(true);
    drive(&mut sim, ms(2_000));
    let jobs = sim.job_rows(ms(2_000)).unwrap();
    format!(
        "{}\n{jobs:?}",
        serde_json::to_string(&sim.results("drawn", seed, ms(2_000))).unwrap()
    )
}

fn exponential() -> WakeDelivery {
    WakeDelivery::new(us(5), WakeRandom::Exponential { mean: us(30) }).unwrap()
}

#[test]
fn same_seed_same_bytes_other_seed_other_draws() {
    let spec = drawn_system(exponential());
    assert_eq!(results_json(&spec, 11), results_json(&spec, 11));
    assert_ne!(results_json(&spec, 11), results_json(&spec, 12));
}

/// The simulator chooses its step loop by whether delivery is on once per run in
/// `run_until` and once per step in `step`: both give the same run, on and off.
#[test]
fn stepping_runs_as_run_until_does_with_delivery_on_and_off() {
    for delivery in [WakeDelivery::OFF, exponential()] {
        let spec = drawn_system(delivery);
        let stepped = results_json_by(&spec, 3, |sim, end| {
            while sim.now() < end {
                sim.step(end).unwrap();
            }
            sim.run_until(end).unwrap();
        });
        assert_eq!(stepped, results_json(&spec, 3));
    }
}

/// The delivery draws from a stream of its own: turned on, every job keeps the release
/// and the deadline it had without it (Poisson gaps and execution times come from the
/// run's stream in the same order), and only the starts and finishes move.
#[test]
fn turning_delivery_on_moves_no_other_draw() {
    let releases = |delivery: WakeDelivery| {
        let mut sim = Simulation::new(&drawn_system(delivery), 5, false).unwrap();
        sim.run_until(ms(2_000)).unwrap();
        let mut out: Vec<(usize, u64, Nanos, Nanos)> = Vec::new();
        for (d, run) in sim.domains().iter().enumerate() {
            for (t, finished) in run.finished.iter().enumerate() {
                out.extend(finished.iter().map(|j| (d, j.seq, j.release, j.deadline)));
                let _ = t;
            }
            out.extend(
                sim.pending_jobs(d)
                    .map(|(_, j)| (d, j.seq, j.release, j.deadline)),
            );
        }
        out.sort();
        out
    };
    let off = releases(WakeDelivery::OFF);
    let on = releases(exponential());
    assert!(off.len() > 500, "{} jobs", off.len());
    assert_eq!(off, on);
}

/// Every delivery is at least its fixed part and lands the job in its guest no earlier
/// than its release; a task's jobs still start in release order.
#[test]
fn every_job_starts_after_its_fixed_delivery_and_in_order() {
    let mut sim = Simulation::new(&drawn_system(exponential()), 3, false).unwrap();
    sim.run_until(ms(2_000)).unwrap();
    let mut longer = 0;
    for run in sim.domains() {
        for finished in &run.finished {
            let mut last_start = Nanos::ZERO;
            for j in finished {
                let start = j.first_start.unwrap();
                assert!(start >= j.release + us(5), "{j:?}");
                assert!(start >= last_start, "{j:?}");
                last_start = start;
                if start > j.release + us(5) {
                    longer += 1;
                }
            }
        }
    }
    assert!(longer > 100, "the random part added nothing");
}
