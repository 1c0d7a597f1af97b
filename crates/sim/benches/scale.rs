//! The scale cases of issue 23 (item 2), each a system far larger than the demo's, to keep
//! per-step and set-up costs near-linear in pcpus, VCPUs, tasks and domains.
//!
//! - `wide_64pcpus_128vcpus_1s/{crps,wcps,periodic}`: 64 pcpus in one pool, 64 domains of
//!   two VCPUs (2 ms every 10 ms, priorities 1–16), two RM tasks each (1 ms every 20 and
//!   30 ms); 1 simulated second per iteration (the periodic family's planning on many
//!   pcpus).
//! - `tasks_100k_1s`: one domain of one VCPU (9 ms every 10 ms, Deferrable Server) with
//!   100,000 RM tasks of 1 µs every 100–999 ms; 1 simulated second (a guest's pick after
//!   each finished job).
//! - `domains_100k_setup`: 100,000 one-VCPU domains of one priority on one pcpu under the
//!   Deferrable Server: building the simulation only (linking, name look-ups, the servers'
//!   insertion, each behind the last); `domains_10k_1s` and `domains_100k_1s`: 10,000 and
//!   100,000 domains with priorities cycling 1–100, built and run for 1 s (the servers'
//!   ordered index: a wake, a requeue and a pick in O(log n); see `docs/benchmarks.md`,
//!   "Scale"); `domains_100k_1s_credit`: the 100,000 under Credit (its run queue's
//!   per-class counts: a wake behind its class without a search); `domains_100k_1s_sedf`:
//!   the 100,000 under SEDF (its run, wait and extra-time queues ordered sets: a wake, a
//!   period's start and a deschedule in O(log n); `docs/benchmarks.md`, "SEDF at scale");
//!   `domains_100k_1s_sedf_ideal`: the 100,000 under `sedf-ideal` (its EDF, timer and
//!   round-robin orders: a pick, a boundary and a join in O(log n); same section);
//!   `domains_100k_1s_{polling,sporadic}`: the 100,000 under the Polling Server (its discards
//!   found in an ordered set, not by a scan per burn) and the Sporadic Server (its pending
//!   replenishments ordered by due time, not scanned per timer and per queued payback);
//!   `domains_100k_1s_rtds`: the 100,000 under RTDS, budgets 10 µs ("RTDS at scale").
//!
//! The systems are scenario text (`docs/benchmarks.md`, "Scale", writes the same files for
//! the CLI) parsed once outside the timing; each iteration builds the simulation from the
//! parsed system. Trace off, invariant checks off.
//!
//! ```text
//! cargo bench -p rtvmm-sim --bench scale
//! ```

use std::fmt::Write;
use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use rtvmm_core::Nanos;
use rtvmm_scenario::Scenario;
use rtvmm_sim::Simulation;
use rtvmm_system::SystemSpec;

/// 64 pcpus, 64 domains of two VCPUs under `policy`.
fn wide(policy: &str) -> String {
    let mut s = format!(
        "name = \"wide\"\nduration = \"1s\"\nseed = 1\n[machine]\npcpus = 64\n\
         [scheduler]\npolicy = \"{policy}\"\n"
    );
    for d in 0..64 {
        let _ = write!(
            s,
            "[[domain]]\nname = \"d{d}\"\nvcpus = 2\n\
             vcpu = {{ budget = \"2ms\", period = \"10ms\", priority = {} }}\n",
            d % 16 + 1
        );
        for t in 0..2 {
            let _ = write!(
                s,
                "[[domain.task]]\nname = \"t{t}\"\nperiod = \"{}ms\"\nwcet = \"1ms\"\n\
                 offset = \"{}us\"\n",
                20 + 10 * t,
                d * 37 % 1000
            );
        }
    }
    s
}

/// One domain of `n` tasks.
fn tasks(n: usize) -> String {
    let mut s = String::from(
        "name = \"tasks\"\nduration = \"1s\"\nseed = 1\n[scheduler]\npolicy = \"deferrable\"\n\
         [[domain]]\nname = \"d\"\nvcpu = { budget = \"9ms\", period = \"10ms\" }\n",
    );
    for t in 0..n {
        let _ = write!(
            s,
            "[[domain.task]]\nname = \"t{t}\"\nperiod = \"{}ms\"\nwcet = \"1us\"\n",
            100 + t % 900
        );
    }
    s
}

/// `n` domains of one VCPU and one task each, their priorities cycling through `levels`.
fn domains(n: usize, levels: usize) -> String {
    let mut s = String::from(
        "name = \"doms\"\nduration = \"1s\"\nseed = 1\n[scheduler]\npolicy = \"deferrable\"\n",
    );
    for d in 0..n {
        let _ = write!(
            s,
            "[[domain]]\nname = \"d{d}\"\n\
             vcpu = {{ budget = \"1us\", period = \"1s\", priority = {} }}\n\
             [[domain.task]]\nname = \"t\"\nperiod = \"1s\"\nwcet = \"100ns\"\n",
            d % levels + 1
        );
    }
    s
}

fn system(text: &str) -> SystemSpec {
    Scenario::from_toml(text, "bench")
        .expect("a valid generated scenario")
        .system
}

/// Builds the simulation and runs it to `end`; returns the steps' end (so the work cannot
/// be optimised away).
fn run(spec: &SystemSpec, end: Nanos) -> Nanos {
    let mut sim = Simulation::new(spec, 1, false).expect("valid system");
    sim.set_check_invariants(false);
    sim.run_until(end).expect("run");
    sim.now()
}

fn wide_64pcpus(c: &mut Criterion) {
    let mut group = c.benchmark_group("wide_64pcpus_128vcpus_1s");
    group.sample_size(10);
    for policy in ["crps", "wcps", "periodic"] {
        let spec = system(&wide(policy));
        group.bench_function(policy, |b| {
            b.iter(|| run(black_box(&spec), Nanos::from_secs(1)))
        });
    }
    group.finish();
}

fn many_tasks(c: &mut Criterion) {
    let spec = system(&tasks(100_000));
    let mut group = c.benchmark_group("scale");
    group.sample_size(10);
    group.bench_function("tasks_100k_1s", |b| {
        b.iter(|| run(black_box(&spec), Nanos::from_secs(1)))
    });
    group.finish();
}

fn many_domains(c: &mut Criterion) {
    let big = system(&domains(100_000, 1));
    let ten = system(&domains(10_000, 100));
    let hundred = system(&domains(100_000, 100));
    let mut group = c.benchmark_group("scale");
    group.sample_size(10);
    group.bench_function("domains_100k_setup", |b| {
        b.iter(|| {
            Simulation::new(black_box(&big), 1, false)
                .expect("valid system")
                .now()
        })
    });
    group.bench_function("domains_10k_1s", |b| {
        b.iter(|| run(black_box(&ten), Nanos::from_secs(1)))
    });
    group.bench_function("domains_100k_1s", |b| {
        b.iter(|| run(black_box(&hundred), Nanos::from_secs(1)))
    });
    // The same 100,000 domains under Credit: every VCPU wakes at 0 and is queued behind the
    // others (a search per wake before the run queue kept its per-class counts).
    let credit = system(&domains(100_000, 100).replace("\"deferrable\"", "\"credit\""));
    group.bench_function("domains_100k_1s_credit", |b| {
        b.iter(|| run(black_box(&credit), Nanos::from_secs(1)))
    });
    // And under SEDF: every VCPU wakes at 0 and goes on the run queue after the others
    // (a scan of that queue per wake before the queues were ordered sets).
    let sedf = system(&domains(100_000, 100).replace("\"deferrable\"", "\"sedf\""));
    group.bench_function("domains_100k_1s_sedf", |b| {
        b.iter(|| run(black_box(&sedf), Nanos::from_secs(1)))
    });
    // And under sedf-ideal: each pick scanned every VCPU, each join every deadline.
    let ideal = system(&domains(100_000, 100).replace("\"deferrable\"", "\"sedf-ideal\""));
    group.bench_function("domains_100k_1s_sedf_ideal", |b| {
        b.iter(|| run(black_box(&ideal), Nanos::from_secs(1)))
    });
    // Under Polling and Sporadic (a scan per burn, and per timer and payback, before).
    for policy in ["polling", "sporadic"] {
        let spec =
            system(&domains(100_000, 100).replace("\"deferrable\"", &format!("\"{policy}\"")));
        group.bench_function(format!("domains_100k_1s_{policy}"), |b| {
            b.iter(|| run(black_box(&spec), Nanos::from_secs(1)))
        });
    }
    // And under RTDS (budgets of 10 µs, its least): every VCPU wakes at 0 (a look at every
    // VCPU per pick and per block before its waiting queue and timers were indexed).
    let rtds = domains(100_000, 100)
        .replace("\"deferrable\"", "\"rtds\"")
        .replace("\"1us\"", "\"10us\"");
    let rtds = system(&rtds);
    group.bench_function("domains_100k_1s_rtds", |b| {
        b.iter(|| run(black_box(&rtds), Nanos::from_secs(1)))
    });
    group.finish();
}

criterion_group!(benches, wide_64pcpus, many_tasks, many_domains);
criterion_main!(benches);
