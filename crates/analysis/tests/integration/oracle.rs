//! Cross-checks against the `response-time-analysis` crate (B. Brandenburg, MPI-SWS; its
//! supply bound follows Shin & Lee RTSS 2003, its FP analysis is the Coq-verified
//! instantiation of Bozhko & Brandenburg's abstract RTA, ECRTS 2020).

use proptest::prelude::*;
use response_time_analysis::{
    arrival::Sporadic,
    demand::RBF,
    fixed_priority::fully_preemptive::dedicated_uniproc_rta,
    supply::{Periodic, SupplyBound},
    time::{Duration, Service},
    wcet::Scalar,
};
use rtvmm_analysis::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// The general sbf equals the oracle's periodic-resource supply bound.
    #[test]
    fn general_sbf_matches_oracle(period in 1u64..60, budget_seed in 0u64..60, t in 0u64..400) {
        let budget = budget_seed % (period + 1);
        let oracle = Periodic::new(Service::from(budget), Duration::from(period));
        let expected: u64 = oracle.provided_service(Duration::from(t)).into();
        prop_assert_eq!(sbf_general(period, budget, t), expected);
    }

    /// Flat FP response times equal the oracle's whenever the task meets its deadline, and
    /// both agree on which tasks miss. Distinct priorities (the oracle has no ties);
    /// deadlines ≤ periods.
    #[test]
    fn flat_fp_rta_matches_oracle(
        raw in prop::collection::vec((2u64..40, 1u64..12, 0u64..40), 1..6),
        priority_seed in any::<u64>(),
    ) {
        let n = raw.len();
        // A random permutation of priorities 0..n.
        let mut priorities: Vec<u32> = (0..n as u32).collect();
        let mut seed = priority_seed;
        for i in (1..n).rev() {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            priorities.swap(i, (seed >> 33) as usize % (i + 1));
        }
        let tasks: Vec<FpTask> = raw
            .iter()
            .zip(&priorities)
            .map(|(&(period, wcet, deadline_seed), &priority)| {
                let wcet = wcet.min(period);
                let deadline = wcet.max(deadline_seed % (period + 1)).max(1);
                FpTask { period, wcet, deadline, priority }
            })
            .collect();
        let ours = fp_response_times(&tasks).unwrap();

        let arrivals: Vec<Sporadic> =
            tasks.iter().map(|t| Sporadic::new_zero_jitter(Duration::from(t.period))).collect();
        let costs: Vec<Scalar> = tasks.iter().map(|t| Scalar::new(Service::from(t.wcet))).collect();
        let rbfs: Vec<RBF<&Sporadic, &Scalar>> =
            arrivals.iter().zip(&costs).map(|(a, c)| RBF::new(a, c)).collect();
        for i in 0..n {
            let interfering: Vec<RBF<&Sporadic, &Scalar>> = (0..n)
                .filter(|&j| tasks[j].priority < tasks[i].priority)
                .map(|j| RBF::new(&arrivals[j], &costs[j]))
                .collect();
            let oracle = dedicated_uniproc_rta(&rbfs[i], &interfering, Duration::from(20_000));
            let oracle: Option<u64> = oracle.ok().map(Into::into);
            match ours[i] {
                ResponseBound::Bounded { response_time, .. } => {
                    prop_assert_eq!(Some(response_time), oracle, "task {} of {:?}", i, tasks);
                }
                ResponseBound::ExceedsDeadline { .. } => {
                    prop_assert!(!matches!(oracle, Some(r) if r <= tasks[i].deadline),
                        "task {} of {:?}: oracle {:?}", i, tasks, oracle);
                }
                ResponseBound::ServerUnschedulable => prop_assert!(false),
            }
        }
    }
}

/// The oracle's own FP example (its `fp_fp_rta_basic` test: (C, T) = (1,4), (1,5), (3,9),
/// (3,18) → 1, 2, 7, 18) reproduced here.
#[test]
fn oracle_basic_example() {
    let tasks = [
        FpTask::new(4, 1, 0),
        FpTask::new(5, 1, 1),
        FpTask::new(9, 3, 2),
        FpTask::new(18, 3, 3),
    ];
    let got: Vec<Option<u64>> = fp_response_times(&tasks)
        .unwrap()
        .iter()
        .map(ResponseBound::response_time)
        .collect();
    assert_eq!(got, vec![Some(1), Some(2), Some(7), Some(18)]);
}
