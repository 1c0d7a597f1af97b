//! Issue 24: on many pcpus too, what `rtvmm analyze` (and `rtvmm check --admit`) guarantees,
//! the simulator shows. The one-pcpu counterpart is `tests/agreement.rs`.
//!
//! - **The property** (`guaranteed_domains_never_miss_on_many_pcpus`): random systems of
//!   2–8 pcpus written as scenario text (`tests/support`): one pool under global RTDS, one
//!   pool with every VCPU pinned (partitioned RTDS or a fixed-priority server policy), or
//!   two pools; domains of 1–4 VCPUs with global-EDF guests (`guest = "edf"`, `smp =
//!   "global"`), partitioned guests (`smp = "partitioned"`, rm/dm/fp/edf) and, rarely, a
//!   global fixed-priority guest; constrained deadlines, sporadic tasks, random execution
//!   times. Each is run with the synchronous phasing and two random ones: `analyze` →
//!   `emit_scenario` → the simulator, and `check --admit` on the file's own VCPUs → the
//!   simulator. Every domain the report guarantees misses no deadline, and no task
//!   responds later than a bound the report gives it.
//! - **Counting.** Until the multicore front-end lands, every such report names the input
//!   as not covered and the property holds vacuously; the test prints how many domains
//!   were guaranteed and simulated, and `RTVMM_MULTICORE_REQUIRE_GUARANTEES=1` makes it
//!   fail when none was.
//! - **The check bites**: the same pipeline on one pcpu, which today's analysis covers,
//!   guarantees and simulates domains (`the_pipeline_checks_guaranteed_domains_on_one_pcpu`),
//!   and a guaranteed domain whose budget is cut below its interface fails the check
//!   (`a_guaranteed_domain_that_misses_fails_the_check`).
//!
//! Cases: `RTVMM_MULTICORE_CASES` (default 24: a few seconds in a debug build while
//! nothing is guaranteed); the draws are deterministic, from `RTVMM_MULTICORE_SEED`
//! (default 24). The long run:
//! `RTVMM_MULTICORE_CASES=2000 RTVMM_MULTICORE_REQUIRE_GUARANTEES=1 cargo test --release
//! -p rtvmm-analyze --test multicore_soundness -- --nocapture`.

mod support;

use std::cell::Cell;

use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed, TestError, TestRunner};
use rtvmm_analyze::{admit, analyze, emit_scenario, Input, Options};
use rtvmm_core::Nanos;
use rtvmm_scenario::Scenario;
use rtvmm_sim::Simulation;
use support::{
    check_guarantees, guarantees, misses, scale_budgets, scenario_text, Layout, Shape, SystemDraw,
    TAPE_LEN,
};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What the runs saw, for the summary and the `REQUIRE` check.
#[derive(Default)]
struct Tally {
    phasings: Cell<u64>,
    /// Reports (both paths) with nothing `not_covered`.
    covered: Cell<u64>,
    /// Domains guaranteed and checked in simulation (both paths, every phasing).
    guaranteed: Cell<u64>,
    /// Reports that guaranteed something but emitted no scenario (a domain without an
    /// interface): not simulated.
    unemitted: Cell<u64>,
}

impl Tally {
    fn add(cell: &Cell<u64>, n: u64) {
        cell.set(cell.get() + n);
    }
}

/// One phasing of a drawn system through both paths.
fn check_phasing(
    system: &SystemDraw,
    phasing: Option<u64>,
    tally: &Tally,
) -> Result<(), TestCaseError> {
    Tally::add(&tally.phasings, 1);
    let text = scenario_text(system, phasing);
    let scenario = Scenario::from_toml(&text, "multicore.toml")
        .unwrap_or_else(|e| panic!("the generator wrote an invalid scenario: {e}\n{text}"));
    let fail = |e: String, scenario_text: &str| {
        TestCaseError::fail(format!(
            "{e}\n--- drawn system ---\n{text}\n--- simulated ---\n{scenario_text}"
        ))
    };

    // `check --admit`: the file's own VCPUs.
    let admitted = match admit(&scenario) {
        Ok(report) => report,
        Err(refused) => refused.1,
    };
    Tally::add(&tally.covered, u64::from(admitted.not_covered.is_empty()));
    let given = guarantees(&admitted);
    Tally::add(&tally.guaranteed, given.len() as u64);
    check_guarantees(&scenario, &given, "check --admit").map_err(|e| fail(e, &text))?;

    // `analyze --emit scenario`: the computed interfaces.
    let input = Input::Scenario(scenario);
    let report = analyze(&input, &Options::default()).expect("a valid scenario analyses");
    Tally::add(&tally.covered, u64::from(report.not_covered.is_empty()));
    let computed = guarantees(&report);
    if computed.is_empty() {
        return Ok(());
    }
    let emitted = match emit_scenario(&input, &report) {
        Ok(emitted) => emitted,
        Err(e) if report.schedulable => {
            return Err(fail(format!("a schedulable system does not emit: {e}"), ""))
        }
        Err(_) => {
            Tally::add(&tally.unemitted, 1);
            return Ok(());
        }
    };
    let scenario = Scenario::from_toml(&emitted, "emitted.toml").map_err(|e| {
        fail(
            format!("the emitted scenario does not validate: {e}"),
            &emitted,
        )
    })?;
    Tally::add(&tally.guaranteed, computed.len() as u64);
    check_guarantees(&scenario, &computed, "analyze --emit scenario").map_err(|e| fail(e, &emitted))
}

/// Runs `cases` systems of `shape` through both paths in three phasings each; panics with
/// the (shrunk) failing system, else returns the tally.
fn run_property(shape: &Shape, cases: u32, seed: u64) -> Tally {
    let config = Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        // A failing tape is kept beside this file (`multicore_soundness.proptest-regressions`,
        // as `agreement.rs` keeps its own) and tried first on every later run.
        source_file: Some(file!()),
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..Config::default()
    };
    let tally = Tally::default();
    let mut runner = TestRunner::new(config);
    let tapes = prop::collection::vec(any::<u32>(), TAPE_LEN);
    let result = runner.run(&tapes, |tape| {
        let system = SystemDraw::decode(shape, &tape);
        check_phasing(&system, None, &tally)?;
        for seed in system.phasings {
            check_phasing(&system, Some(seed), &tally)?;
        }
        Ok(())
    });
    match result {
        Ok(()) => tally,
        Err(TestError::Fail(reason, tape)) => {
            panic!(
                "{reason}\n(minimal tape decodes to {:#?})",
                SystemDraw::decode(shape, &tape)
            )
        }
        Err(TestError::Abort(reason)) => panic!("aborted: {reason}"),
    }
}

/// The property (module docs).
#[test]
fn guaranteed_domains_never_miss_on_many_pcpus() {
    let cases = env_u64("RTVMM_MULTICORE_CASES", 24) as u32;
    let tally = run_property(
        &Shape::multicore(),
        cases,
        env_u64("RTVMM_MULTICORE_SEED", 24),
    );
    eprintln!(
        "multicore soundness: {cases} systems, {} phasings; {} of {} reports covered; {} \
         guaranteed domains simulated without a miss; {} reports with guarantees not emitted",
        tally.phasings.get(),
        tally.covered.get(),
        2 * tally.phasings.get(),
        tally.guaranteed.get(),
        tally.unemitted.get()
    );
    if std::env::var("RTVMM_MULTICORE_REQUIRE_GUARANTEES").as_deref() == Ok("1") {
        assert!(
            tally.guaranteed.get() > 0,
            "RTVMM_MULTICORE_REQUIRE_GUARANTEES=1: no domain of {cases} multicore systems was \
             guaranteed, so nothing was checked"
        );
    }
}

/// The same pipeline where today's analysis covers the input — one pcpu under the
/// Periodic Server — guarantees domains and checks them in simulation: the property above
/// is not vacuous by construction.
#[test]
fn the_pipeline_checks_guaranteed_domains_on_one_pcpu() {
    let tally = run_property(&Shape::one_pcpu("periodic"), 12, 7);
    eprintln!(
        "one pcpu: {} phasings, {} guaranteed domains simulated without a miss",
        tally.phasings.get(),
        tally.guaranteed.get()
    );
    assert_eq!(tally.phasings.get(), 36);
    assert_eq!(
        tally.covered.get(),
        72,
        "one pcpu, Periodic Server: covered"
    );
    assert!(
        tally.guaranteed.get() >= 12,
        "only {} guaranteed domains",
        tally.guaranteed.get()
    );
}

/// The check fails where it should. `control` has two tasks of (10 ms, 2 ms); the analysis
/// guarantees it on its interface. With every budget cut to
/// a tenth, the guarantee still claimed, its tasks miss and the check names the domain.
#[test]
fn a_guaranteed_domain_that_misses_fails_the_check() {
    let text = r#"
        duration = "200ms"
        [scheduler]
        policy = "periodic"
        [[domain]]
        name = "control"
        vcpu = { budget = "1ms", period = "5ms" }
        [[domain.task]]
        name = "a"
        period = "10ms"
        wcet = "2ms"
        [[domain.task]]
        name = "b"
        period = "10ms"
        wcet = "2ms"
    "#;
    let input = Input::Scenario(Scenario::from_toml(text, "control.toml").unwrap());
    let report = analyze(&input, &Options::default()).unwrap();
    assert!(report.schedulable, "{report:#?}");
    let guaranteed = guarantees(&report);
    assert_eq!(guaranteed.len(), 1);
    let emitted = Scenario::from_toml(&emit_scenario(&input, &report).unwrap(), "e.toml").unwrap();
    assert_eq!(
        check_guarantees(&emitted, &guaranteed, "as emitted"),
        Ok(())
    );
    let starved = scale_budgets(&emitted, 0.1);
    assert!(misses(&starved)[0].1 > 0);
    let refusal = check_guarantees(&starved, &guaranteed, "starved").unwrap_err();
    assert!(
        refusal.contains("starved: domain 'control' is guaranteed but missed"),
        "{refusal}"
    );
}

/// The generator draws what the property is about, and every drawn file is a valid
/// scenario that runs: over 200 seeds, every layout, 2 and 8 pcpus, domains of 4 VCPUs,
/// global-EDF, partitioned and (rarely) global fixed-priority guests, pinned and global
/// pools, RTDS and server pools.
#[test]
fn the_generator_draws_every_kind_of_multicore_system() {
    let shape = Shape::multicore();
    let mut layouts = Vec::new();
    let (mut two, mut eight, mut four_vcpus, mut gedf, mut partitioned) =
        (false, false, false, false, false);
    let (mut pinned, mut global, mut rtds, mut server) = (false, false, false, false);
    let mut global_fp = false;
    for seed in 0..200 {
        let system = SystemDraw::decode(&shape, &support::tape_from_seed(seed));
        let text = scenario_text(&system, Some(seed));
        let scenario = Scenario::from_toml(&text, "drawn.toml")
            .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
        if seed % 10 == 0 {
            // And it runs (the `check --admit` path simulates the file itself).
            let mut sim = Simulation::new(&scenario.system, scenario.seed, false)
                .unwrap_or_else(|e| panic!("seed {seed}: {e}\n{text}"));
            sim.run_until(Nanos::from_ms(50)).expect("runs");
        }
        if !layouts.contains(&system.layout) {
            layouts.push(system.layout);
        }
        two |= system.pcpus == 2;
        eight |= system.pcpus == 8;
        for d in &system.domains {
            four_vcpus |= d.vcpus == 4;
            gedf |= d.vcpus > 1 && d.guest == "edf" && !d.partitioned;
            partitioned |= d.vcpus > 1 && d.partitioned;
            global_fp |= d.vcpus > 1 && d.guest != "edf" && !d.partitioned;
        }
        for p in &system.pools {
            pinned |= p.pinned;
            global |= !p.pinned;
            rtds |= p.policy == "rtds";
            server |= p.policy != "rtds";
        }
    }
    layouts.sort_by_key(|l| format!("{l:?}"));
    assert_eq!(
        layouts,
        [Layout::Global, Layout::Partitioned, Layout::Pooled]
    );
    assert!(two && eight && four_vcpus && gedf && partitioned && global_fp);
    assert!(pinned && global && rtds && server);
    // A tape of zeros is the simplest system.
    let simplest = SystemDraw::decode(&shape, &[]);
    assert_eq!((simplest.pcpus, simplest.domains.len()), (2, 1));
    assert_eq!(simplest.domains[0].tasks.len(), 1);
}
