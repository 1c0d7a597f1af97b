//! Property tests (proptest). Sizes are small so that the suite stays fast in debug builds.

use proptest::prelude::*;
use rtvmm_analysis::*;

use crate::util::{
    by_deadline, by_period, lcm, naive_edf, naive_lemma1, naive_min_exec, naive_rbf,
};

/// Random implicit-deadline workloads with `U ≤ 1` (most of them schedulable on a dedicated
/// processor; a few are not, which exercises the error path).
fn workload(max_tasks: usize, max_period: u64) -> impl Strategy<Value = Workload> {
    prop::collection::vec((2..=max_period, 1u64..=100), 1..=max_tasks).prop_filter_map(
        "utilisation above 1",
        |raw| {
            let tasks: Vec<Task> = raw
                .iter()
                .map(|&(period, share)| Task::new(period, (period * share / 250).max(1)))
                .collect();
            let w = Workload::new(tasks).ok()?;
            (w.utilization().cmp_ratio(Ratio::new(1, 1)) != std::cmp::Ordering::Greater)
                .then_some(w)
        },
    )
}

/// Workloads with periods from a harmonic-friendly set, so that `Auto` has harmonic periods
/// other than 1 to use, and EDF hyperperiods stay small.
fn friendly_workload(max_tasks: usize) -> impl Strategy<Value = Workload> {
    let periods = prop::sample::select(vec![2u64, 3, 4, 6, 8, 12, 16, 24]);
    prop::collection::vec((periods, 1u64..=100), 1..=max_tasks).prop_filter_map(
        "utilisation above 1",
        |raw| {
            let tasks: Vec<Task> = raw
                .iter()
                .map(|&(period, share)| Task::new(period, (period * share / 300).max(1)))
                .collect();
            let w = Workload::new(tasks).ok()?;
            (w.utilization().cmp_ratio(Ratio::new(1, 1)) != std::cmp::Ordering::Greater)
                .then_some(w)
        },
    )
}

fn options(mode: SbfMode, guest: GuestScheduler) -> SearchOptions {
    SearchOptions {
        mode,
        guest,
        periods: PeriodRange::default(),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Algorithm 1 returns exactly the brute-force optimum (smallest bandwidth, ties → smaller
    /// period) over every period up to 20·p_n, in both sbf modes (RM guests).
    #[test]
    fn algorithm_1_equals_brute_force(w in workload(4, 24)) {
        for mode in [SbfMode::General, SbfMode::Auto] {
            let opts = options(mode, GuestScheduler::Rm);
            let fast = optimal_interface(&w, &opts);
            let slow = optimal_interface_brute_force(&w, &opts, 20 * w.max_period());
            match (fast, slow) {
                (Ok(found), Ok(reference)) => {
                    prop_assert!(found.proven_optimal);
                    prop_assert_eq!(found.interface, reference, "mode {:?}", mode);
                }
                (Err(a), Err(b)) => prop_assert_eq!(a, b),
                (a, b) => prop_assert!(false, "mode {:?}: {:?} vs {:?}", mode, a, b),
            }
        }
    }

    /// The same with a period range, as CARTS users give it.
    #[test]
    fn algorithm_1_with_range_equals_brute_force(w in workload(3, 20), low in 1u64..15, width in 0u64..30) {
        for mode in [SbfMode::General, SbfMode::Auto] {
            let opts = SearchOptions {
                mode,
                guest: GuestScheduler::Rm,
                periods: PeriodRange::new(low, low + width),
            };
            let fast = optimal_interface(&w, &opts).map(|found| found.interface);
            let slow = optimal_interface_brute_force(&w, &opts, u64::MAX);
            prop_assert_eq!(fast, slow, "mode {:?}", mode);
        }
    }

    /// MinExec is the smallest Θ passing a naive Lemma 1 (every integer t, no test-point
    /// reduction), in both forms.
    #[test]
    fn min_exec_is_the_smallest_passing_budget(w in workload(4, 20), period in 1u64..30) {
        let analyzer = InterfaceAnalyzer::new(&w, GuestScheduler::Rm);
        for form in [SupplyForm::General, SupplyForm::Harmonic] {
            let expected = naive_min_exec(period, |budget| naive_lemma1(&w, by_period, period, budget, form));
            let got = analyzer.min_exec_with_form(period, form).ok();
            prop_assert_eq!(got, expected, "form {:?}", form);
        }
    }

    /// `Auto` never needs more bandwidth than `General`: per period, and for the optimum.
    #[test]
    fn auto_never_worse_than_general(w in friendly_workload(4), period in 1u64..30) {
        let analyzer = InterfaceAnalyzer::new(&w, GuestScheduler::Rm);
        if let (Ok(auto), Ok(general)) = (analyzer.min_exec(period, SbfMode::Auto), analyzer.min_exec(period, SbfMode::General)) {
            prop_assert!(auto <= general);
        }
        let auto = optimal_interface(&w, &options(SbfMode::Auto, GuestScheduler::Rm));
        let general = optimal_interface(&w, &options(SbfMode::General, GuestScheduler::Rm));
        if let (Ok(auto), Ok(general)) = (auto, general) {
            prop_assert!(auto.interface.bandwidth() <= general.interface.bandwidth());
        }
    }

    /// sbf is non-decreasing in t and in Θ, in both forms, and harmonic ≥ general.
    #[test]
    fn sbf_is_monotone(period in 1u64..40, budget_seed in 0u64..40, t in 0u64..300) {
        let budget = budget_seed % (period + 1);
        for form in [SupplyForm::General, SupplyForm::Harmonic] {
            let here = sbf(form, period, budget, t);
            prop_assert!(sbf(form, period, budget, t + 1) >= here);
            if budget < period {
                prop_assert!(sbf(form, period, budget + 1, t) >= here);
            }
            prop_assert!(here <= t);
        }
        prop_assert!(sbf_harmonic(period, budget, t) >= sbf_general(period, budget, t));
    }

    /// `CrT_i` equals its definition evaluated over every integer t (all minimisers).
    #[test]
    fn critical_time_points_match_definition(w in workload(4, 30)) {
        for i in 0..w.len() {
            let deadline = w.tasks()[i].deadline;
            let mut expected: Vec<u64> = Vec::new();
            for s in 0..deadline {
                let mut best: Vec<u64> = Vec::new();
                let mut best_value: Option<(u64, u64)> = None; // (rbf, t − s)
                for t in s + 1..=deadline {
                    let value = (naive_rbf(&w, by_period, i, t), t - s);
                    match best_value {
                        None => { best_value = Some(value); best = vec![t]; }
                        Some((r, d)) => {
                            let lhs = value.0 as u128 * d as u128;
                            let rhs = r as u128 * value.1 as u128;
                            if lhs < rhs { best_value = Some(value); best = vec![t]; }
                            else if lhs == rhs { best.push(t); }
                        }
                    }
                }
                expected.extend(best);
            }
            expected.sort_unstable();
            expected.dedup();
            prop_assert_eq!(critical_time_points(&w, i), expected, "task {}", i);
        }
    }

    /// On a dedicated processor (Θ = Π, sbf(t) = t) Lemma 1 is the exact RM test, so it must
    /// agree task by task with the response-time recurrence (including constrained deadlines).
    #[test]
    fn lemma_1_on_a_full_budget_equals_rta(
        raw in prop::collection::vec((2u64..=40, 1u64..=100, 0u64..=100), 1..=6),
        period in 1u64..20,
    ) {
        let tasks: Vec<Task> = raw.iter().map(|&(p, share, d)| {
            let wcet = (p * share / 200).max(1);
            Task::with_deadline(p, wcet, (p * d / 100).clamp(wcet.min(p), p).max(1))
        }).collect();
        let w = Workload::new(tasks).unwrap();
        let first_rta_failure = rm_response_times(&w).iter().position(|r| !r.is_schedulable());
        let lemma = rm_schedulable(&w, Interface::new(period, period), SupplyForm::General).err();
        prop_assert_eq!(lemma, first_rta_failure);
    }

    /// Theorem 1: every interface at least as good as a feasible κ has period ≤ MaxResPeriod(κ).
    #[test]
    fn max_res_period_bounds_every_better_interface(w in workload(3, 16)) {
        let analyzer = InterfaceAnalyzer::new(&w, GuestScheduler::Rm);
        let Ok(budget) = analyzer.min_exec(w.max_period(), SbfMode::General) else { return Ok(()) };
        let kappa = Ratio::new(budget, w.max_period());
        let Some(bound) = analyzer.max_res_period(kappa) else { return Ok(()) };
        for period in 1..=8 * w.max_period() {
            let theta = analyzer.min_exec(period, SbfMode::General).unwrap();
            if Ratio::new(theta, period) <= kappa {
                prop_assert!(period <= bound, "({}, {}) beats κ = {} but bound is {}", period, theta, kappa, bound);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// EDF: MinExec is the smallest Θ passing a naive dbf ≤ sbf check over a long horizon
    /// (2·lcm(H, Π) + 2Π + d_max, beyond the exact bound derived in the crate).
    #[test]
    fn edf_min_exec_matches_naive(w in friendly_workload(3), period in 1u64..13) {
        let analyzer = InterfaceAnalyzer::new(&w, GuestScheduler::Edf);
        let hyper = w.hyperperiod().unwrap();
        let horizon = 2 * lcm(hyper, period) + 2 * period + w.max_deadline();
        for form in [SupplyForm::General, SupplyForm::Harmonic] {
            let expected = naive_min_exec(period, |budget| naive_edf(&w, period, budget, form, horizon));
            let got = analyzer.min_exec_with_form(period, form).ok();
            prop_assert_eq!(got, expected, "form {:?}", form);
        }
    }

    /// EDF Algorithm 1 (with the EDF period bound) equals brute force over Π ≤ 8·p_n whenever
    /// it claims a proven optimum; otherwise it is still the best within its search limit.
    #[test]
    fn edf_optimal_interface_equals_brute_force(w in friendly_workload(3)) {
        for mode in [SbfMode::General, SbfMode::Auto] {
            let opts = options(mode, GuestScheduler::Edf);
            let found = optimal_interface(&w, &opts).unwrap();
            let limit = if found.proven_optimal { 8 * w.max_period() } else { found.search_limit };
            let reference = optimal_interface_brute_force(&w, &opts, limit).unwrap();
            prop_assert_eq!(found.interface, reference, "mode {:?}", mode);
        }
    }

    /// EDF never needs a larger budget than RM at the same period: a workload passing Lemma 1
    /// is RM-schedulable under every supply the resource may give, hence EDF-schedulable
    /// (EDF is optimal on one processor whatever the supply pattern), and the dbf test is
    /// exact for the model (Shin & Lee TECS 2008, Thm 5.1).
    #[test]
    fn edf_needs_no_more_than_rm(w in friendly_workload(3), period in 1u64..13) {
        let rm = min_exec(period, &w, SbfMode::General, GuestScheduler::Rm);
        let edf = min_exec(period, &w, SbfMode::General, GuestScheduler::Edf);
        if let (Ok(rm), Ok(edf)) = (rm, edf) {
            prop_assert!(edf <= rm, "EDF {} > RM {}", edf, rm);
        }
    }
}

/// Constrained-deadline workloads (`d ≤ p`), each task's deadline at least its wcet.
fn constrained_workload(max_tasks: usize, max_period: u64) -> impl Strategy<Value = Workload> {
    prop::collection::vec((2..=max_period, 1u64..=100, 1u64..=100), 1..=max_tasks).prop_filter_map(
        "utilisation above 1",
        |raw| {
            let tasks: Vec<Task> = raw
                .iter()
                .map(|&(period, share, cut)| {
                    let wcet = (period * share / 250).max(1);
                    Task::with_deadline(period, wcet, (period * cut / 100).clamp(wcet, period))
                })
                .collect();
            let w = Workload::new(tasks).ok()?;
            (w.utilization().cmp_ratio(Ratio::new(1, 1)) != std::cmp::Ordering::Greater)
                .then_some(w)
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// DM on a dedicated processor (Θ = Π) is the exact deadline-monotonic test, so it must
    /// agree with the response-time recurrence run with deadline-monotonic priorities
    /// (equal deadlines one priority, interfering both ways).
    #[test]
    fn dm_lemma_1_on_a_full_budget_equals_rta(w in constrained_workload(6, 40), period in 1u64..20) {
        let dm = w.deadline_monotonic();
        let tasks: Vec<FpTask> = dm.tasks().iter().map(|t| FpTask {
            period: t.period, wcet: t.wcet, deadline: t.deadline, priority: t.deadline as u32,
        }).collect();
        let first_rta_failure = fp_response_times(&tasks).unwrap().iter().position(|r| !r.is_schedulable());
        let analyzer = InterfaceAnalyzer::new(&w, GuestScheduler::Dm);
        let lemma = analyzer.first_failure(Interface::new(period, period), SupplyForm::General);
        prop_assert_eq!(lemma, first_rta_failure);
    }

    /// DM Algorithm 1 equals a naive brute force (every period up to 20·p_n, every budget,
    /// Lemma 1 at every integer t with the tasks in deadline-monotonic order).
    #[test]
    fn dm_algorithm_1_equals_naive_brute_force(w in constrained_workload(3, 12)) {
        let dm = w.deadline_monotonic();
        let mut best: Option<Interface> = None;
        for period in 1..=20 * w.max_period() {
            let Some(budget) = naive_min_exec(period, |budget| naive_lemma1(&dm, by_deadline, period, budget, SupplyForm::General)) else { continue };
            let candidate = Interface::new(period, budget);
            if best.is_none_or(|b| candidate.bandwidth() < b.bandwidth()) {
                best = Some(candidate);
            }
        }
        let found = optimal_interface(&w, &SearchOptions { mode: SbfMode::General, guest: GuestScheduler::Dm, periods: PeriodRange::default() });
        prop_assert_eq!(found.ok().map(|f| f.interface), best);
    }

    /// What the plateau jump of Algorithm 1 rests on: with the general sbf, supply never
    /// grows with Π at a fixed Θ, so MinExec never falls as Π grows (RM, DM and EDF).
    #[test]
    fn general_min_exec_is_non_decreasing_in_the_period(w in friendly_workload(3), budget in 0u64..12, t in 0u64..200, period in 1u64..24) {
        let budget = budget.min(period);
        prop_assert!(sbf_general(period + 1, budget, t) <= sbf_general(period, budget, t));
        for guest in [GuestScheduler::Rm, GuestScheduler::Dm, GuestScheduler::Edf] {
            let analyzer = InterfaceAnalyzer::new(&w, guest);
            let here = analyzer.min_exec(period, SbfMode::General);
            let next = analyzer.min_exec(period + 1, SbfMode::General);
            if let (Ok(here), Ok(next)) = (here, next) {
                prop_assert!(here <= next, "{:?}: MinExec({}) = {} > MinExec({}) = {}", guest, period, here, period + 1, next);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// EDF with the utilisation within a few percent of 1 — where the horizon is long and
    /// QPA walks far (issue 13's slow case) — against the naive check over every t up to
    /// `2·lcm(H, Π) + 2Π + d_max`.
    #[test]
    fn edf_min_exec_near_full_utilisation_matches_naive(
        p1 in 5u64..20, p2 in 5u64..20, share in 85u64..=100, period in 1u64..12,
    ) {
        // e1/p1 + e2/p2 ≈ share %, split about evenly.
        let e1 = (p1 * share / 200).max(1);
        let e2 = ((p2 * share / 100).saturating_sub(p2 * e1 / p1)).clamp(1, p2);
        let Ok(w) = Workload::from_pairs(&[(p1, e1), (p2, e2)]) else { return Ok(()) };
        if w.utilization().cmp_ratio(Ratio::new(1, 1)) == std::cmp::Ordering::Greater {
            return Ok(());
        }
        let analyzer = InterfaceAnalyzer::new(&w, GuestScheduler::Edf);
        let hyper = w.hyperperiod().unwrap();
        let horizon = 2 * lcm(hyper, period) + 2 * period + w.max_deadline();
        for form in [SupplyForm::General, SupplyForm::Harmonic] {
            let expected = naive_min_exec(period, |budget| naive_edf(&w, period, budget, form, horizon));
            let got = analyzer.min_exec_with_form(period, form).ok();
            prop_assert_eq!(got, expected, "form {:?}", form);
        }
    }
}
