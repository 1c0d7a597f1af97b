//! Benchmarks of the interface search (run with `cargo bench -p rtvmm-analysis`).
//!
//! * `optimal_interface/50_tasks_u{50,75}_{General,Auto}`: Algorithm 1 for one 50-task RM
//!   domain, periods drawn from 10–1000 quanta, utilisation ≈ 0.5 and ≈ 0.75, in both sbf
//!   modes (target ≤ 50 ms).
//! * `analyze_system/5_domains_50_tasks`: a whole five-domain system of 50 tasks in all (ten
//!   per domain, utilisation ≈ 0.13 each), interfaces plus root check (target ≤ 250 ms).
//!   (Five domains of fifty tasks each cannot fit one CPU with periods ≤ 1000 and integer
//!   WCETs ≥ 1: Σ 1/p alone exceeds 1.)
//!
//! * `pathological/*`: issue 13's inputs whose periods lie orders of magnitude apart (each
//!   used to take seconds to minutes, or gigabytes): an EDF domain at a 7 µs quantum, EDF
//!   with periods 40 ms and 10^9 s, a 1 ms task beside a one-day task (RM, at 10 µs and 1
//!   ms units), and a CARTS-style period range 1..10^12 around one task (target < 1 s each).
//!
//! * `multiprocessor/{mpr,dmpr}_20_tasks_periods_1_100`: the minimum-bandwidth MPR and
//!   DMPR interfaces (global EDF, Shin, Easwaran & Lee 2008; Xu et al. 2013) of one 20-task
//!   component, utilisation ≈ 2.5, over Π ∈ 1..=100: every period, every m′ from ⌈U⌉ and
//!   every budget until one passes.
//!
//! * `multiprocessor/system_4_pools_16_domains_{mpr,dmpr}`: what `rtvmm analyze` does on a
//!   multicore system (issue 24): 4 pools of 4 pcpus, 4 domains each, every domain a
//!   global-EDF component of 3–5 tasks (utilisation 0.2–1.1), its minimum-bandwidth MPR (or
//!   DMPR) interface over Π ∈ 1..=100, then per pool a root check of the resulting VCPUs —
//!   for MPR every VCPU as an implicit-deadline periodic task under Theorem 1 with the
//!   pool's 4 pcpus as a dedicated supply; for DMPR the hybrid root, the full VCPUs on
//!   dedicated pcpus and the partial ones under the same test on the pcpus left. (A
//!   stand-in whose cost is that of the front-end's root tests: a handful of VCPUs per
//!   pool; the interfaces are the bulk of the work.)
//!
//! Inputs come from a tiny fixed LCG so every run measures the same workloads.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rtvmm_analysis::{
    analyze_system, gedf_schedulable_dmpr, optimal_dmpr_interface, optimal_interface,
    optimal_mpr_interface, Dmpr, DomainSpec, GuestScheduler, Interface, InterfaceChoice,
    PeriodRange, SbfMode, SearchOptions, Task, Workload,
};

/// Knuth's MMIX LCG; only a bench input generator.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        self.next() as f64 / (1u64 << 31) as f64
    }
}

/// `n` tasks, periods uniform in 10..=1000, utilisations by UUniFast (Bini & Buttazzo 2005)
/// summing to about `utilization` (WCETs are rounded down, at least 1).
fn workload(seed: u64, n: usize, utilization: f64) -> Workload {
    let mut rng = Lcg(seed);
    let mut remaining = utilization;
    let mut shares = Vec::with_capacity(n);
    for i in 1..n {
        let next = remaining * rng.unit().powf(1.0 / (n - i) as f64);
        shares.push(remaining - next);
        remaining = next;
    }
    shares.push(remaining);
    let tasks = shares.into_iter().map(|share| {
        let period = 10 + rng.next() % 991;
        let wcet = ((share * period as f64) as u64).clamp(1, period);
        Task::new(period, wcet)
    });
    Workload::new(tasks).expect("valid bench workload")
}

fn bench_interface(c: &mut Criterion) {
    for (label, w) in [
        ("u50", workload(1, 50, 0.5)),
        ("u75", workload(2, 50, 0.75)),
    ] {
        for mode in [SbfMode::General, SbfMode::Auto] {
            let options = SearchOptions {
                mode,
                ..Default::default()
            };
            let found = optimal_interface(&w, &options).expect("schedulable");
            eprintln!(
            "50-task domain (U = {:.4}), {mode:?}: interface {:?}, {} periods evaluated up to {}",
            w.utilization_f64(),
            found.interface,
            found.periods_evaluated,
            found.search_limit
        );
            c.bench_function(
                &format!("optimal_interface/50_tasks_{label}_{mode:?}"),
                |b| b.iter(|| optimal_interface(black_box(&w), black_box(&options))),
            );
        }
    }
}

fn bench_system(c: &mut Criterion) {
    let domains: Vec<DomainSpec> = (0..5)
        .map(|k| DomainSpec {
            name: format!("dom{k}"),
            workload: workload(100 + k, 10, 0.13),
            guest: GuestScheduler::Rm,
            interface: InterfaceChoice::default(),
        })
        .collect();
    let report = analyze_system(&domains, SbfMode::Auto);
    eprintln!(
        "5-domain system: U_W = {:.4}, U_RM = {:.4}, schedulable = {}",
        report.u_w, report.u_rm, report.schedulable
    );
    c.bench_function("analyze_system/5_domains_50_tasks", |b| {
        b.iter(|| analyze_system(black_box(&domains), SbfMode::Auto))
    });
}

/// One pathological case: label, tasks `(p, e)`, guest, sbf mode, period range.
type Case = (
    &'static str,
    Vec<(u64, u64)>,
    GuestScheduler,
    SbfMode,
    PeriodRange,
);

/// Issue 13 §2's inputs (the same as `tests/integration/bounded_analysis.rs`, which checks
/// their answers).
fn bench_pathological(c: &mut Criterion) {
    let day_10us = 8_640_000_000;
    let cases: [Case; 5] = [
        (
            "edf_7us_quantum",
            vec![(3200, 2886), (6700, 615)],
            GuestScheduler::Edf,
            SbfMode::Auto,
            PeriodRange::default(),
        ),
        (
            "edf_40ms_and_1e9s",
            vec![(40, 4), (1_000_000_000_000, 1000)],
            GuestScheduler::Edf,
            SbfMode::Auto,
            PeriodRange::default(),
        ),
        (
            "rm_1ms_beside_1day_at_10us",
            vec![(100, 10), (day_10us, 100_000)],
            GuestScheduler::Rm,
            SbfMode::Auto,
            PeriodRange::default(),
        ),
        (
            "rm_2ms_beside_1day_at_1ms",
            vec![(2, 1), (86_400_000, 1000)],
            GuestScheduler::Rm,
            SbfMode::Auto,
            PeriodRange::default(),
        ),
        (
            "carts_range_1_to_1e12",
            vec![(100_000_000_000, 1)],
            GuestScheduler::Rm,
            SbfMode::General,
            PeriodRange::new(1, 1_000_000_000_000),
        ),
    ];
    for (label, pairs, guest, mode, periods) in cases {
        let w = Workload::from_pairs(&pairs).expect("valid bench workload");
        let options = SearchOptions {
            mode,
            guest,
            periods,
        };
        let found = optimal_interface(&w, &options).expect("analysable");
        eprintln!(
            "{label}: interface {:?}, proven {}, {} periods evaluated up to {}, {} steps",
            found.interface,
            found.proven_optimal,
            found.periods_evaluated,
            found.search_limit,
            found.steps
        );
        c.bench_function(&format!("pathological/{label}"), |b| {
            b.iter(|| optimal_interface(black_box(&w), black_box(&options)))
        });
    }
}

fn bench_multiprocessor(c: &mut Criterion) {
    let w = workload(7, 20, 2.5);
    let started = std::time::Instant::now();
    let mpr = optimal_mpr_interface(&w, 1, 100, None).expect("an MPR interface");
    let mpr_time = started.elapsed();
    let started = std::time::Instant::now();
    let dmpr = optimal_dmpr_interface(&w, 1, 100, None).expect("a DMPR interface");
    eprintln!(
        "20-task gEDF component (U = {:.4}): MPR {:?} (limited {}) in {mpr_time:?}; DMPR {:?} \
         (limited {}) in {:?}",
        w.utilization_f64(),
        mpr.best,
        mpr.limited,
        dmpr.best,
        dmpr.limited,
        started.elapsed()
    );
    let mut group = c.benchmark_group("multiprocessor");
    group.sample_size(10);
    group.bench_function("mpr_20_tasks_periods_1_100", |b| {
        b.iter(|| optimal_mpr_interface(black_box(&w), 1, 100, None))
    });
    group.bench_function("dmpr_20_tasks_periods_1_100", |b| {
        b.iter(|| optimal_dmpr_interface(black_box(&w), 1, 100, None))
    });
    group.finish();
}

/// Pools of the multicore system, pcpus per pool, domains per pool.
const POOLS: usize = 4;
const POOL_PCPUS: u64 = 4;
const POOL_DOMAINS: usize = 4;

/// The 16 gEDF components, pool by pool: domain k has 3 + k mod 3 tasks and utilisation
/// 0.2, 0.45, 0.7 or 1.1 (by k mod 4) — 2.45 per pool of 4 pcpus, a quarter of the
/// domains above 1, so that their interfaces need two VCPUs.
fn multicore_components() -> Vec<Vec<Workload>> {
    (0..POOLS)
        .map(|pool| {
            (0..POOL_DOMAINS)
                .map(|d| {
                    let k = pool * POOL_DOMAINS + d;
                    workload(300 + k as u64, 3 + k % 3, [0.2, 0.45, 0.7, 1.1][k % 4])
                })
                .collect()
        })
        .collect()
}

/// Global EDF of `vcpus` (as implicit-deadline periodic tasks) on `pcpus` dedicated pcpus:
/// Theorem 1 under the supply `m·t` (a DMPR of `m` full VCPUs and nothing else).
fn root_fits(vcpus: &[Interface], pcpus: u64) -> bool {
    let tasks: Vec<(u64, u64)> = vcpus
        .iter()
        .filter(|v| v.budget > 0)
        .map(|v| (v.period, v.budget))
        .collect();
    if tasks.is_empty() {
        return true;
    }
    if pcpus == 0 {
        return false;
    }
    let w = Workload::from_pairs(&tasks).expect("VCPUs are valid tasks");
    let dedicated = Dmpr::new(pcpus, 1, 0).expect("a dedicated supply");
    gedf_schedulable_dmpr(&w, &dedicated).is_schedulable()
}

/// Every MPR interface, then each pool's root: `(Σ Θ/Π, pools whose root fits)`.
fn multicore_mpr(components: &[Vec<Workload>]) -> (f64, usize) {
    let mut bandwidth = 0.0;
    let mut fits = 0;
    for pool in components {
        let mut vcpus = Vec::new();
        for w in pool {
            let best = optimal_mpr_interface(w, 1, 100, None)
                .expect("an MPR interface")
                .best;
            bandwidth += best.budget() as f64 / best.period() as f64;
            vcpus.extend(best.to_vcpus());
        }
        fits += usize::from(root_fits(&vcpus, POOL_PCPUS));
    }
    (bandwidth, fits)
}

/// Every DMPR interface, then each pool's hybrid root: `(Σ m + Θ/Π, pools whose root fits)`.
fn multicore_dmpr(components: &[Vec<Workload>]) -> (f64, usize) {
    let mut bandwidth = 0.0;
    let mut fits = 0;
    for pool in components {
        let (mut full, mut partial) = (0, Vec::new());
        for w in pool {
            let best = optimal_dmpr_interface(w, 1, 100, None)
                .expect("a DMPR interface")
                .best;
            bandwidth += best.full() as f64 + best.budget() as f64 / best.period() as f64;
            full += best.full();
            if best.budget() > 0 {
                partial.push(Interface::new(best.period(), best.budget()));
            }
        }
        fits += usize::from(full <= POOL_PCPUS && root_fits(&partial, POOL_PCPUS - full));
    }
    (bandwidth, fits)
}

fn bench_multicore_system(c: &mut Criterion) {
    let components = multicore_components();
    let u: f64 = components
        .iter()
        .flatten()
        .map(Workload::utilization_f64)
        .sum();
    // The components as `p e` pairs (rate-monotonic order) with their interfaces — MPR as
    // (Π, Θ, m′), DMPR in CARTS's form — for running the same input through CARTS.
    for (p, pool) in components.iter().enumerate() {
        for (d, w) in pool.iter().enumerate() {
            let tasks: Vec<String> = w
                .tasks()
                .iter()
                .map(|t| format!("{} {}", t.period, t.wcet))
                .collect();
            let started = std::time::Instant::now();
            let mpr = optimal_mpr_interface(w, 1, 100, None).expect("an MPR interface");
            let mpr_time = started.elapsed();
            let started = std::time::Instant::now();
            let dmpr = optimal_dmpr_interface(w, 1, 100, None).expect("a DMPR interface");
            eprintln!(
                "component pool{p}/d{d}: {} | MPR {:?} | DMPR {:?} | U {:.3}, {mpr_time:?} and \
                 {:?}",
                tasks.join("; "),
                (mpr.best.period(), mpr.best.budget(), mpr.best.concurrency()),
                dmpr.best.carts_form(),
                w.utilization_f64(),
                started.elapsed()
            );
        }
    }
    for (label, run) in [
        ("mpr", multicore_mpr as fn(&[Vec<Workload>]) -> (f64, usize)),
        ("dmpr", multicore_dmpr),
    ] {
        let started = std::time::Instant::now();
        let (bandwidth, fits) = run(&components);
        eprintln!(
            "4 pools × 4 domains (gEDF, U = {u:.3} in all), {label}: Σ bandwidth {bandwidth:.3},              {fits} of {POOLS} pool roots fit, in {:?}",
            started.elapsed()
        );
    }
    let mut group = c.benchmark_group("multiprocessor");
    group.sample_size(10);
    group.bench_function("system_4_pools_16_domains_mpr", |b| {
        b.iter(|| multicore_mpr(black_box(&components)))
    });
    group.bench_function("system_4_pools_16_domains_dmpr", |b| {
        b.iter(|| multicore_dmpr(black_box(&components)))
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench_interface, bench_system, bench_pathological, bench_multiprocessor,
        bench_multicore_system
}
criterion_main!(benches);
