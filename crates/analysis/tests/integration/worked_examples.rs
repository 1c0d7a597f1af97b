//! The papers' and the spec's worked examples. Every expected value cites where it comes
//! from; "by hand" means the derivation is in the comment.

use rtvmm_analysis::*;

/// W = {(7,2), (8,1), (10,1)} from Lee et al., RTAS 2012 (Sec. IV example, quoted by the
/// spec): for i = 2 (1-based; RM index 1, the task (8,1)) and Π = 5, X_{2,5} = 7.
///
/// By hand: rbf_2(t) = 2⌈t/7⌉ + ⌈t/8⌉ is 3 on (0,7] and 5 at t = 8. MinExec(5) = 4 (see
/// `min_exec_of_the_worked_example`), so s = Π − Θ = 1 and we compare 3/(7−1) = 1/2 with
/// 5/(8−1) = 5/7: the minimiser is t = 7.
#[test]
fn critical_time_point_x_2_5_is_7() {
    let w = Workload::from_pairs(&[(7, 2), (8, 1), (10, 1)]).unwrap();
    let theta = min_exec(5, &w, SbfMode::General, GuestScheduler::Rm).unwrap();
    assert_eq!(
        critical_time_point(&w, 1, Interface::new(5, theta)),
        vec![7]
    );
    // 3/(7−s) ≤ 5/(8−s) ⇔ s ≤ 5.5: t = 7 for every s ≤ 5, so X_{2,5} = 7 whatever Θ ≥ 0 is
    // used at Π = 5 — the example does not hinge on our reading of which Θ defines s.
    for budget in 0..=5 {
        assert_eq!(
            critical_time_point(&w, 1, Interface::new(5, budget)),
            vec![7]
        );
    }
    // For s = 6, 7 the minimiser is 8 (3/1 > 5/2; only t = 8 lies in (7, 8]). So CrT_2 = {7, 8}.
    assert_eq!(critical_time_points_at(&w, 1, 6), vec![8]);
    assert_eq!(critical_time_points(&w, 1), vec![7, 8]);
}

/// By hand, general sbf with Π = 5:
/// Θ = 4 (blackout 2): sbf(7) = 4 + max(0, 7 − 2 − 5) = 4 ≥ rbf_1(7) = 2, rbf_2(7) = 3,
/// rbf_3(7) = 4, so all three tasks pass at t = 7.
/// Θ = 3 (blackout 4): task 3 has rbf_3 = 4 at t = 7, 6 at 8, 7 on (8, 10]; sbf(7) = 3,
/// sbf(8) = 3, sbf(10) = 3 + (10 − 4 − 5) = 4: fails. So MinExec(5) = 4.
#[test]
fn min_exec_of_the_worked_example() {
    let w = Workload::from_pairs(&[(7, 2), (8, 1), (10, 1)]).unwrap();
    assert_eq!(min_exec(5, &w, SbfMode::General, GuestScheduler::Rm), Ok(4));
    assert!(!InterfaceAnalyzer::new(&w, GuestScheduler::Rm)
        .is_schedulable(Interface::new(5, 3), SupplyForm::General));
}

/// Spec, "Which sbf applies": for W = {(25,3),(50,5),(100,4)} the general form gives the
/// optimum (7, 2); the harmonic form restricted to Π dividing every period gives (25, 7);
/// the harmonic form at Π = 11 would claim (11, 3).
#[test]
fn spec_sbf_check() {
    let w = Workload::from_pairs(&[(25, 3), (50, 5), (100, 4)]).unwrap();
    let general = SearchOptions {
        mode: SbfMode::General,
        ..Default::default()
    };
    assert_eq!(
        optimal_interface(&w, &general).unwrap().interface,
        Interface::new(7, 2)
    );
    // Auto = harmonic exactly at the divisors of 25 (1, 5, 25), general elsewhere: 7/25 = 0.28
    // beats 2/7 ≈ 0.2857.
    assert_eq!(
        optimal_interface(&w, &SearchOptions::default())
            .unwrap()
            .interface,
        Interface::new(25, 7)
    );
    // Restricted to the harmonic periods only (range [25, 25]) it is (25, 7) as well.
    let only_25 = SearchOptions {
        periods: PeriodRange::new(25, 25),
        ..Default::default()
    };
    assert_eq!(
        optimal_interface(&w, &only_25).unwrap().interface,
        Interface::new(25, 7)
    );
    let analyzer = InterfaceAnalyzer::new(&w, GuestScheduler::Rm);
    // Forcing the harmonic form at Π = 11 claims Θ = 3 …
    assert_eq!(analyzer.min_exec_with_form(11, SupplyForm::Harmonic), Ok(3));
    // … Auto does not do that at 11 (11 divides no period), and the general form needs more.
    assert_eq!(analyzer.form(SbfMode::Auto, 11), SupplyForm::General);
    let honest = analyzer.min_exec(11, SbfMode::Auto).unwrap();
    assert_eq!(honest, analyzer.min_exec(11, SbfMode::General).unwrap());
    assert!(honest > 3);
    assert!(!analyzer.is_schedulable(Interface::new(11, 3), SupplyForm::General));
}

/// (11, 3) really is unsound for this W: a legal supply of (11, 3) under which RM misses.
///
/// Resource periods [−3, 8), [8, 19), [19, 30), …: the first gives its 3 units at its start
/// ([−3, 0)), every later one at its end ([16, 19), [27, 30), [38, 41), [49, 52), …). Tasks
/// released at 0. By hand: τ1 (25,3) runs [16,19); its second job (released 25) runs
/// [27,30); τ2 (50,5) gets [38,41) and [49,50): 4 < 5 units by its deadline 50 — a miss.
#[test]
fn harmonic_form_at_11_is_unsound_by_counterexample() {
    let tasks = [(25u64, 3u64), (50, 5), (100, 4)];
    let supplied = |t: u64| t >= 16 && (t - 16) % 11 < 3;
    let mut remaining = [0u64; 3];
    let mut release = [0u64; 3];
    let mut first_miss: Option<(usize, u64)> = None;
    for now in 0..100u64 {
        for (k, &(period, wcet)) in tasks.iter().enumerate() {
            if now % period == 0 {
                if remaining[k] > 0 && first_miss.is_none() {
                    first_miss = Some((k, now));
                }
                remaining[k] = wcet;
                release[k] = now;
            }
        }
        if supplied(now) {
            if let Some(k) = (0..3).find(|&k| remaining[k] > 0) {
                remaining[k] -= 1;
            }
        }
    }
    assert_eq!(first_miss, Some((1, 50)), "τ2 misses its deadline at 50");
}

/// κ = 1 (spec: "κ = 1 needs its own case"). W = {(2,1), (3,1)}: at Π = 3 any Θ < 3 has a
/// blackout ≥ 2, so sbf(2) = 0 < rbf_1(2) = 1 — MinExec(3) = 3, κ = 1. By the argument in
/// the `interface` module docs no interface with Θ < Π exists, all feasible interfaces have
/// bandwidth 1, and the tie rule picks the smallest period: (1, 1). With periods restricted
/// to [3, 10] it is (3, 3).
#[test]
fn kappa_one_gives_the_smallest_full_interface() {
    let w = Workload::from_pairs(&[(2, 1), (3, 1)]).unwrap();
    assert_eq!(max_res_period(Ratio::new(1, 1), &w), None);
    assert_eq!(min_exec(3, &w, SbfMode::General, GuestScheduler::Rm), Ok(3));
    for mode in [SbfMode::General, SbfMode::Auto] {
        let options = SearchOptions {
            mode,
            ..Default::default()
        };
        let found = optimal_interface(&w, &options).unwrap();
        assert_eq!(found.interface, Interface::new(1, 1));
        assert!(found.proven_optimal);
        let ranged = SearchOptions {
            mode,
            periods: PeriodRange::new(3, 10),
            ..Default::default()
        };
        assert_eq!(
            optimal_interface(&w, &ranged).unwrap().interface,
            Interface::new(3, 3)
        );
    }
    // Brute force agrees (every Π ≤ 50 needs Θ = Π).
    assert_eq!(
        optimal_interface_brute_force(
            &w,
            &SearchOptions {
                mode: SbfMode::General,
                ..Default::default()
            },
            50
        ),
        Ok(Interface::new(1, 1))
    );
}

/// κ = 1 under the general form but not under Auto: W = {(2,1)}. General: Θ = 1 at Π = 2 has
/// blackout 2, sbf(2) = 0 < 1, so κ = 1 → (1, 1). Auto: Π = 2 divides the period; harmonic
/// sbf(2) = 1·1 + max(0, 2 − 1 − 2) = 1 ≥ 1 → (2, 1), bandwidth 1/2.
#[test]
fn kappa_one_in_general_but_not_in_auto() {
    let w = Workload::from_pairs(&[(2, 1)]).unwrap();
    let general = SearchOptions {
        mode: SbfMode::General,
        ..Default::default()
    };
    assert_eq!(
        optimal_interface(&w, &general).unwrap().interface,
        Interface::new(1, 1)
    );
    assert_eq!(
        optimal_interface(&w, &SearchOptions::default())
            .unwrap()
            .interface,
        Interface::new(2, 1)
    );
}

/// Fixed-period interface (spec, "Fixed-period interfaces"). W = {(25,3),(50,5),(100,4)},
/// Π = 10, general sbf, by hand:
/// Θ = 3 (blackout 14): τ1: sbf(25) = 3 + (25 − 14 − 10) = 4 ≥ 3; τ2: sbf(50) = 4·3 +
/// max(0, 50 − 14 − 40) = 12 ≥ rbf_2(50) = 11; τ3: sbf(100) = 9·3 + max(0, 100 − 14 − 90) = 27
/// ≥ rbf_3(100) = 26. Θ = 2 (blackout 16): τ3 fails everywhere, e.g. sbf(100) = 9·2 = 18 < 26,
/// sbf(75) = 6·2 = 12 < rbf_3(75) = 23. So (10, 3): bandwidth 0.3 vs the optimum 2/7.
#[test]
fn fixed_period_interface_by_hand() {
    let w = Workload::from_pairs(&[(25, 3), (50, 5), (100, 4)]).unwrap();
    let interface = fixed_period_interface(&w, 10, SbfMode::General, GuestScheduler::Rm).unwrap();
    assert_eq!(interface, Interface::new(10, 3));
    // Overhead = 3/10 − 13/50 = 2/50 = 0.04.
    let report = analyze_system(
        &[DomainSpec {
            name: "p".into(),
            workload: w,
            guest: GuestScheduler::Rm,
            interface: InterfaceChoice::FixedPeriod(10),
        }],
        SbfMode::General,
    );
    assert!((report.domains[0].overhead - 0.04).abs() < 1e-12);
}

/// MaxResPeriod at κ = 2/7 for W = {(25,3),(50,5),(100,4)} must admit the optimum's period 7
/// (Theorem 1) — and bounds the search well below p_n. By hand for τ1 (25, 3): the only test
/// point is 25 (rbf = 3) so CrT_1 = {25}: (2/7·25 − 3)/(2/7 · 5/7) = (29/7)/(10/49) = 20.3.
#[test]
fn max_res_period_admits_the_optimum() {
    let w = Workload::from_pairs(&[(25, 3), (50, 5), (100, 4)]).unwrap();
    assert_eq!(critical_time_points(&w, 0), vec![25]);
    let bound = max_res_period(Ratio::new(2, 7), &w).unwrap();
    assert!((7..=20).contains(&bound), "bound {bound}");
}

/// usbf/lsbf of (5, 3) by hand: usbf(10) = 3/5 · (10 − 2) = 24/5; lsbf(10) = 3/5 · (10 − 4) =
/// 18/5; sbf(10) = 4 lies between.
#[test]
fn linear_bounds_by_hand() {
    assert_eq!(usbf(5, 3, 10), Ratio::new(24, 5));
    assert_eq!(lsbf(5, 3, 10), Ratio::new(18, 5));
    assert_eq!(lsbf(5, 3, 3), Ratio::new(0, 1));
    assert_eq!(sbf_general(5, 3, 10), 4);
}

/// EDF guest, by hand: W = {(4,1), (8,2)} (U = 1/2), Π = 2, general sbf.
/// Θ = 1: blackout 2, rate 1/2 = U, so the exact horizon is lcm(8, 2) + 2 = 10. dbf steps:
/// dbf(4) = 1, dbf(8) = 2 + 2 = 4; sbf(4) = 1 + max(0, 4 − 2 − 2) = 1 ≥ 1, sbf(8) = 3 < 4 ✗.
/// Θ = 2: sbf(t) = t ≥ dbf(t) ✓. So MinExec_EDF(2) = 2.
/// With Π = 4, Θ = 3 (blackout 2): sbf(4) = max(0, 4 − 2) = 2 ≥ 1, sbf(8) = 3 + max(0, 8 −
/// 2 − 4) = 5 ≥ 4, and κ = 3/4 > U so the horizon is ((4−4)/4·1 + (8−8)/8·2 + 2·(3/4)·1) /
/// (3/4 − 1/2) = 6: steps ≤ 5 are just t = 4 ✓. Θ = 2 (blackout 4): sbf(4) = 0 < 1 ✗.
#[test]
fn edf_min_exec_by_hand() {
    let w = Workload::from_pairs(&[(4, 1), (8, 2)]).unwrap();
    assert_eq!(
        min_exec(2, &w, SbfMode::General, GuestScheduler::Edf),
        Ok(2)
    );
    assert_eq!(
        min_exec(4, &w, SbfMode::General, GuestScheduler::Edf),
        Ok(3)
    );
}

/// A workload that no interface can serve (U > 1) names its failing task in the caller's
/// order. RM order of [(3,2), (2,1)] is [(2,1), (3,2)]; rbf_2(2) = 1 + 2 = 3 > 2 and
/// rbf_2(3) = 2 + 2 = 4 > 3, so the task declared first, (3,2), fails.
#[test]
fn unschedulable_workload_names_the_task() {
    let w = Workload::from_pairs(&[(3, 2), (2, 1)]).unwrap();
    let error = optimal_interface(&w, &SearchOptions::default()).unwrap_err();
    assert_eq!(
        error,
        InterfaceError::Unschedulable {
            task_index: 0,
            task: Task::new(3, 2)
        }
    );
}

/// κ = 1 for an EDF guest. W = {(2,1), (3,1)}: dbf(2) = 1 > max(0, 2 − 2) = 0, and every
/// general sbf with Θ < Π is at most max(0, t − 2), so only bandwidth 1 works and the tie
/// rule gives (1, 1) — proven, without the EDF fallback search.
#[test]
fn kappa_one_for_edf() {
    let w = Workload::from_pairs(&[(2, 1), (3, 1)]).unwrap();
    let options = SearchOptions {
        mode: SbfMode::General,
        guest: GuestScheduler::Edf,
        ..Default::default()
    };
    let found = optimal_interface(&w, &options).unwrap();
    assert_eq!(found.interface, Interface::new(1, 1));
    assert!(found.proven_optimal);
    assert_eq!(max_res_period_edf(Ratio::new(1, 1), &w), None);
}

/// The plain tests, on the values derived above: for W = {(7,2),(8,1),(10,1)}, (5, 3) fails
/// task 3 (RM index 2) and (5, 4) passes (see `min_exec_of_the_worked_example`); for the EDF
/// example, (4, 3) passes and (4, 2) fails (see `edf_min_exec_by_hand`).
#[test]
fn plain_schedulability_tests() {
    let w = Workload::from_pairs(&[(7, 2), (8, 1), (10, 1)]).unwrap();
    assert_eq!(
        rm_schedulable(&w, Interface::new(5, 3), SupplyForm::General),
        Err(2)
    );
    assert_eq!(
        rm_schedulable(&w, Interface::new(5, 4), SupplyForm::General),
        Ok(())
    );
    let e = Workload::from_pairs(&[(4, 1), (8, 2)]).unwrap();
    assert!(edf_schedulable(
        &e,
        Interface::new(4, 3),
        SupplyForm::General
    ));
    assert!(!edf_schedulable(
        &e,
        Interface::new(4, 2),
        SupplyForm::General
    ));
}
