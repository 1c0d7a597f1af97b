//! Issue 13 §2: inputs whose periods are many orders of magnitude apart, which used to run
//! for a minute or allocate gigabytes, analysed here to the values derived by hand (or by
//! the naive reference of `util` on the full input). That these tests run at all in a
//! debug build is the memory regression test: each of them used to allocate one entry per
//! job of the short task up to the long one's deadline (up to 5·10^10 of them).
//! Timing is measured by the `interface` benchmark, never asserted.

use rtvmm_analysis::*;

use crate::util::naive_edf;

fn search(mode: SbfMode, guest: GuestScheduler, periods: PeriodRange) -> SearchOptions {
    SearchOptions {
        mode,
        guest,
        periods,
    }
}

/// An EDF domain at a 7 µs quantum with two tasks (22.4 ms, 20.2 ms) and (46.9 ms, 4.3 ms):
/// in units, W = {(3200, 2886), (6700, 615)}, U = 106521/107200 ≈ 0.993666. It took 43 s
/// (75 s in the issue's report), and was not proven optimal, because every candidate near
/// U sorted millions of dbf steps.
///
/// The optimum is (158, 157) — what the earlier implementation also found — and now proven:
/// * No Π ≤ 157 can have `Θ < Π`: `(Π − 1)/Π < U` for `Π < 1/(1 − U) ≈ 157.9`. So (158,
///   157), bandwidth 0.993671 > U, is the first interface below bandwidth 1.
/// * It passes: κ − U = 157/158 − 106521/107200 = 82/16,937,600, so (implicit deadlines)
///   only `t < 2κ(Π − Θ)/(κ − U) = 314·107200/82 ≈ 410,497.6` can fail, and the naive check
///   of every integer t up to there passes.
/// * Anything better needs `U < Θ/Π < 157/158`, i.e. `Π − Θ = g` with
///   `Π ∈ (157.88·g, 158·g)`, first at g = 9 (Π = 1421): the search rules those out.
#[test]
fn edf_domain_at_a_7us_quantum() {
    let w = Workload::from_pairs(&[(3200, 2886), (6700, 615)]).unwrap();
    for mode in [SbfMode::Auto, SbfMode::General] {
        let found = optimal_interface(
            &w,
            &search(mode, GuestScheduler::Edf, PeriodRange::default()),
        )
        .unwrap();
        assert_eq!(found.interface, Interface::new(158, 157), "{mode:?}");
        assert!(found.proven_optimal, "{mode:?}");
    }
    assert!(naive_edf(&w, 158, 157, SupplyForm::General, 410_498));
    assert!(edf_schedulable(
        &w,
        Interface::new(158, 157),
        SupplyForm::General
    ));
    // Bandwidth 156/157 < U: fails on the long-run rate alone.
    assert!(!edf_schedulable(
        &w,
        Interface::new(157, 156),
        SupplyForm::General
    ));
}

/// An EDF domain with periods 40 ms and 10^9 s at a 1 ms quantum: W = {(40, 4),
/// (10^12, 1000)}, U = 0.1 + 10^-9. It allocated 17 GB and aborted.
///
/// By hand, Auto (Π dividing 40 may use the harmonic sbf, under which τ2 needs
/// `Θ/Π·10^12 ≥ 10^11 + 1000`, i.e. `Θ/Π > 0.1`): Π = 8, Θ = 1 gives 1/8 and passes
/// (`dbf(t) = 4⌊t/40⌋ ≤ ⌊t/8⌋ = sbf(t)` below 10^12, and 1.25·10^11 ≥ 10^11 + 1000 there);
/// among the divisors of 40 nothing lies in (0.1, 0.125). A general interface below 1/8
/// needs `sbf(40) ≥ 4` with `sbf(40) ≤ κ(40 − (Π − Θ))`, so `Π − Θ < 8` and `7Θ < Π − Θ`:
/// no Θ ≥ 1. No smaller period reaches exactly 1/8. So (8, 1).
///
/// MinExec at Π = 10^12 (general): τ1 needs `sbf(40) ≥ 4`, and within the first burst
/// `sbf(t) = t − 2(Π − Θ)`, so `Π − Θ ≤ 18`; with 18 every t passes (`4⌊t/40⌋ ≤ t − 36`, and
/// at 10^12 the burst still runs: 10^11 + 1000 ≤ 10^12 − 36). So 10^12 − 18.
#[test]
fn edf_periods_40ms_and_a_billion_seconds() {
    let w = Workload::from_pairs(&[(40, 4), (1_000_000_000_000, 1000)]).unwrap();
    let found = optimal_interface(
        &w,
        &search(SbfMode::Auto, GuestScheduler::Edf, PeriodRange::default()),
    )
    .unwrap();
    assert_eq!(found.interface, Interface::new(8, 1));
    assert!(found.proven_optimal);
    assert_eq!(
        min_exec(1_000_000_000_000, &w, SbfMode::General, GuestScheduler::Edf),
        Ok(1_000_000_000_000 - 18)
    );
}

/// A 1 ms task beside a one-day task (RM). It cost 1–4 GB (one Lemma 1 test point per
/// millisecond of the day), and 25 s at a 10 µs unit.
///
/// At a 10 µs unit, W = {(100, 10), (8.64·10^9, 10^5)}, by hand:
/// * Auto: at Π = 100 (which divides both periods) the harmonic sbf gives τ1 `Θ ≥ 10` and τ2,
///   at t = 8.64·10^9, `8.64·10^7·Θ ≥ 8.64·10^8 + 10^5`, so Θ = 11 (0.11). Other divisors of
///   100 give 0.1 (fails τ2, which needs more than 0.1) or at least 0.12. A general interface
///   below 0.11 needs `sbf(100) ≥ 10`, `sbf(100) ≤ κ(100 − (Π − Θ))`, so `Π − Θ ≤ 9` and
///   `0.89Θ ≤ 0.99`: Θ = 1, Π ≤ 10, bandwidth ≥ 0.1, which fails τ2. So (100, 11).
/// * MinExec at Π = p_n (general): τ1 needs `sbf(100) = 100 − 2(Π − Θ) ≥ 10` (first burst),
///   so Π − Θ ≤ 45; τ2 then passes at its deadline. So p_n − 45.
///
/// At a 1 ms unit, W = {(2, 1), (8.64·10^7, 1000)}: any Θ < Π has a blackout ≥ 2 (general)
/// so sbf(2) = 0 < 1; the harmonic Π = 2 (the only divisor of 2 besides 1) with Θ = 1 gives
/// τ2 `sbf(t) = ⌊t/2⌋ < ⌈t/2⌉ + 1000`. So only bandwidth 1: (1, 1).
#[test]
fn rm_1ms_task_beside_a_one_day_task() {
    let day_10us = 8_640_000_000;
    let w = Workload::from_pairs(&[(100, 10), (day_10us, 100_000)]).unwrap();
    let found = optimal_interface(&w, &SearchOptions::default()).unwrap();
    assert_eq!(found.interface, Interface::new(100, 11));
    assert!(found.proven_optimal);
    assert_eq!(
        min_exec(day_10us, &w, SbfMode::General, GuestScheduler::Rm),
        Ok(day_10us - 45)
    );
    // Lemma 1 task by task, without a test point per job: on (100, 10) τ2 needs 0.1·t + 10^5
    // by its deadline and gets 0.1·t.
    let analyzer = InterfaceAnalyzer::new(&w, GuestScheduler::Rm);
    let on = Interface::new(100, 10);
    assert_eq!(
        analyzer.lemma1_holds(0, on, SupplyForm::Harmonic),
        Some(true)
    );
    assert_eq!(
        analyzer.lemma1_holds(1, on, SupplyForm::Harmonic),
        Some(false)
    );

    let w = Workload::from_pairs(&[(2, 1), (86_400_000, 1000)]).unwrap();
    let found = optimal_interface(&w, &SearchOptions::default()).unwrap();
    assert_eq!(found.interface, Interface::new(1, 1));
}

/// A CARTS-style period range of 1..10^12 around one task (10^11, 1), which the search must
/// span: with the general sbf the only condition is `sbf(10^11) ≥ 1`, i.e. a blackout
/// `2(Π − Θ) < 10^11`, and `Θ/((10^11 − 1)/2 + Θ)` grows with Θ, so Θ = 1 and
/// Π = 5·10^10 (every period up to there improves on the last: the search jumps along that
/// plateau instead of visiting 5·10^10 periods). Auto: the harmonic Π = 10^11 with Θ = 1
/// (bandwidth exactly U) is better.
#[test]
fn carts_period_range_up_to_10_to_the_12() {
    let w = Workload::from_pairs(&[(100_000_000_000, 1)]).unwrap();
    let range = PeriodRange::new(1, 1_000_000_000_000);
    let general =
        optimal_interface(&w, &search(SbfMode::General, GuestScheduler::Rm, range)).unwrap();
    assert_eq!(general.interface, Interface::new(50_000_000_000, 1));
    assert!(general.proven_optimal);
    let auto = optimal_interface(&w, &search(SbfMode::Auto, GuestScheduler::Rm, range)).unwrap();
    assert_eq!(auto.interface, Interface::new(100_000_000_000, 1));
    // The same from a CARTS file, with the general sbf (what CARTS computes).
    let xml = r#"<system><component name="lonely" min_period="1" max_period="1000000000000">
        <task p="100000000000" e="1"/></component></system>"#;
    let domains = parse_carts(xml)
        .unwrap()
        .to_domains(SbfMode::General)
        .unwrap();
    let report = analyze_system(&domains, SbfMode::General);
    assert_eq!(report.domains[0].period, Some(50_000_000_000));
}

/// Where exact analysis would take too long it stops with a typed error, not a hang: 20,000
/// tasks make every Lemma 1 test quadratic (each task's fixed point sums over all the tasks
/// before it), past [`MAX_SEARCH_STEPS`].
#[test]
fn too_much_work_is_a_typed_error() {
    let w = Workload::new((0..20_000).map(|_| Task::new(1_000_000, 1))).unwrap();
    let error = optimal_interface(&w, &SearchOptions::default()).unwrap_err();
    assert!(
        matches!(
            error,
            InterfaceError::AnalysisLimit { .. } | InterfaceError::SearchLimit { .. }
        ),
        "{error:?}"
    );
    assert!(error.to_string().contains("coarser time unit"), "{error}");
}
