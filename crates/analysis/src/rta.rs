//! Flat fixed-priority analysis on one dedicated processor: the exact response-time
//! recurrence and the two classic utilisation bounds.
//!
//! Sources:
//! * Response times — M. Joseph and P. Pandya, "Finding response times in a real-time
//!   system", The Computer Journal 29(5), 1986; N. Audsley, A. Burns, M. Richardson,
//!   K. Tindell, A. Wellings, "Applying new scheduling theory to static priority
//!   pre-emptive scheduling", Software Engineering Journal 8(5), 1993 (the response-time
//!   equation and its iterative solution):
//!   `R_i = C_i + Σ_{j ∈ hp(i)} ⌈R_i / T_j⌉ C_j`, solved by fixed-point iteration from
//!   `R_i = C_i`; exact for constrained deadlines (`D_i ≤ T_i`) with synchronous release.
//! * Liu & Layland bound — C. L. Liu and J. W. Layland, JACM 20(1), 1973, Theorem 5:
//!   RM-schedulable if `U ≤ n(2^{1/n} − 1)` (implicit deadlines).
//! * Hyperbolic bound — E. Bini, G. Buttazzo, G. Buttazzo, "Rate monotonic analysis: the
//!   hyperbolic bound", IEEE Trans. Computers 52(7), 2003, Theorem 1:
//!   RM-schedulable if `Π_i (U_i + 1) ≤ 2` (implicit deadlines).
//!
//! Priorities: **a smaller number is a higher priority**. Tasks of equal priority are
//! each counted as interfering with the other ([`crate::interferes`]): rtvmm's guests
//! serve them first-in, first-out, so either can run first.

use num_bigint::{BigInt, BigUint};
use serde::Serialize;

use crate::error::WorkloadError;
use crate::workload::{interferes, Task, Workload};

/// A task with an explicit fixed priority (smaller = more urgent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct FpTask {
    /// `T_i`.
    pub period: u64,
    /// `C_i`.
    pub wcet: u64,
    /// `D_i ≤ T_i`.
    pub deadline: u64,
    /// Smaller = higher priority; equal priorities interfere both ways.
    pub priority: u32,
}

impl FpTask {
    /// Implicit-deadline task.
    pub fn new(period: u64, wcet: u64, priority: u32) -> FpTask {
        FpTask {
            period,
            wcet,
            deadline: period,
            priority,
        }
    }

    /// The same task without its priority.
    pub fn task(&self) -> Task {
        Task::with_deadline(self.period, self.wcet, self.deadline)
    }
}

/// Outcome of a response-time analysis for one task.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ResponseBound {
    /// The worst-case response time is at most `response_time ≤ deadline`;
    /// `slack = deadline − response_time`.
    Bounded {
        /// WCRT bound.
        response_time: u64,
        /// `D − R`.
        slack: u64,
    },
    /// The recurrence passed the deadline: the task is unschedulable (by this analysis).
    /// `at_least` is the first iterate above the deadline, a lower bound on the solution.
    ExceedsDeadline {
        /// First iterate above the deadline.
        at_least: u64,
    },
    /// Hierarchical analysis only: the task's server cannot deliver its own budget within
    /// its period at the root, so no bound exists.
    ServerUnschedulable,
}

impl ResponseBound {
    /// The bound, if one exists within the deadline.
    pub fn response_time(&self) -> Option<u64> {
        match self {
            ResponseBound::Bounded { response_time, .. } => Some(*response_time),
            _ => None,
        }
    }

    /// True when bounded within the deadline.
    pub fn is_schedulable(&self) -> bool {
        matches!(self, ResponseBound::Bounded { .. })
    }
}

/// The tasks that interfere with `i`: every other task of higher or equal priority
/// ([`crate::interferes`]).
pub(crate) fn interferers(tasks: &[FpTask], i: usize) -> impl Iterator<Item = &FpTask> + '_ {
    interfering_indices(tasks, i).map(move |j| &tasks[j])
}

/// The indices of [`interferers`].
pub(crate) fn interfering_indices(tasks: &[FpTask], i: usize) -> impl Iterator<Item = usize> + '_ {
    let priority = tasks[i].priority;
    (0..tasks.len()).filter(move |&j| j != i && interferes(tasks[j].priority, priority))
}

/// The least fixed point `R ≤ limit` of `R = C_i + Σ_{j∈hp(i)} ⌈R/T_j⌉ C_j` (Audsley et al.
/// 1993), or `None` if the iteration passes `limit`. This is the response time of
/// the job released at the critical instant; for `R ≤ T_i` it is the WCRT.
pub fn fp_response_time(tasks: &[FpTask], i: usize, limit: u64) -> Option<u64> {
    let mut response = tasks[i].wcet;
    loop {
        if response > limit {
            return None;
        }
        let next = tasks[i].wcet
            + interferers(tasks, i)
                .map(|task| response.div_ceil(task.period) * task.wcet)
                .sum::<u64>();
        if next == response {
            return Some(response);
        }
        response = next;
    }
}

/// Response-time bounds of every task (Joseph & Pandya 1986; Audsley et al. 1993), stopping
/// each recurrence at its deadline. Requires `D_i ≤ T_i`.
///
/// ```
/// use rtvmm_analysis::{fp_response_times, FpTask, ResponseBound};
/// // RM example (T, C) = (4,1), (6,2), (12,3); R3 by hand: 3 → 6 → 7 → 9 → 10 → 10.
/// let tasks = [FpTask::new(4, 1, 0), FpTask::new(6, 2, 1), FpTask::new(12, 3, 2)];
/// let r = fp_response_times(&tasks).unwrap();
/// assert_eq!(r[2], ResponseBound::Bounded { response_time: 10, slack: 2 });
/// ```
pub fn fp_response_times(tasks: &[FpTask]) -> Result<Vec<ResponseBound>, WorkloadError> {
    validate(tasks)?;
    Ok((0..tasks.len())
        .map(|i| bound_within_deadline(tasks, i))
        .collect())
}

fn bound_within_deadline(tasks: &[FpTask], i: usize) -> ResponseBound {
    let deadline = tasks[i].deadline;
    let mut response = tasks[i].wcet;
    loop {
        if response > deadline {
            return ResponseBound::ExceedsDeadline { at_least: response };
        }
        let next = tasks[i].wcet
            + interferers(tasks, i)
                .map(|task| response.div_ceil(task.period) * task.wcet)
                .sum::<u64>();
        if next == response {
            return ResponseBound::Bounded {
                response_time: response,
                slack: deadline - response,
            };
        }
        response = next;
    }
}

pub(crate) fn validate(tasks: &[FpTask]) -> Result<(), WorkloadError> {
    if tasks.is_empty() {
        return Err(WorkloadError::Empty);
    }
    for (index, task) in tasks.iter().enumerate() {
        task.task().validate(index)?;
    }
    Ok(())
}

/// Response times of a workload under RM (its RM order is the priority order; equal
/// periods share a priority level and interfere both ways, as in Lemma 1's `rbf_i`).
/// Results are in RM order.
pub fn rm_response_times(w: &Workload) -> Vec<ResponseBound> {
    let tasks: Vec<FpTask> = w
        .tasks()
        .iter()
        .enumerate()
        .map(|(i, task)| FpTask {
            period: task.period,
            wcet: task.wcet,
            deadline: task.deadline,
            // One number per level: the end of the level, increasing from level to level.
            priority: u32::try_from(w.interfering(i).len()).unwrap_or(u32::MAX),
        })
        .collect();
    (0..tasks.len())
        .map(|i| bound_within_deadline(&tasks, i))
        .collect()
}

/// The Liu & Layland utilisation bound `n(2^{1/n} − 1)` as `f64`, for display (Liu & Layland
/// 1973, Theorem 5). [`liu_layland_test`] decides exactly.
pub fn liu_layland_bound(n: usize) -> f64 {
    let n = n as f64;
    n * (2f64.powf(1.0 / n) - 1.0)
}

/// Exact Liu & Layland test: `U ≤ n(2^{1/n} − 1)` ⇔ `(U/n + 1)^n ≤ 2` ⇔ with `U = a/b`,
/// `(a + n·b)^n ≤ 2·(n·b)^n` — integers only. Sufficient for RM with implicit deadlines.
pub fn liu_layland_test(w: &Workload) -> bool {
    // The inequality is the same for any common scaling of a and b.
    let utilization = w.utilization();
    let (a, b) = utilization.parts();
    let (a, b) = (BigInt::from(a.clone()), BigInt::from(b.clone()));
    let n = w.len();
    let nb = BigInt::from(n) * b;
    let lhs = num_traits::pow(a + &nb, n);
    let rhs = num_traits::pow(nb, n) * 2;
    lhs <= rhs
}

/// Exact hyperbolic bound: `Π (U_i + 1) ≤ 2` ⇔ `Π (e_i + p_i) ≤ 2 Π p_i` (Bini, Buttazzo &
/// Buttazzo 2003, Theorem 1). Sufficient for RM with implicit deadlines; dominates Liu &
/// Layland.
pub fn hyperbolic_test(w: &Workload) -> bool {
    let mut lhs = BigUint::from(1u32);
    let mut rhs = BigUint::from(2u32);
    for task in w.tasks() {
        lhs *= task.wcet + task.period;
        rhs *= task.period;
    }
    lhs <= rhs
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Burns & Wellings, "Real-Time Systems and Programming Languages", response-time
    /// analysis example, task set (T, C): a = (7, 3), b = (12, 3), c = (20, 5), priorities
    /// a > b > c. Expected values re-derived by hand:
    /// R_a = 3.
    /// R_b: 3 → 3 + ⌈3/7⌉3 = 6 → 3 + ⌈6/7⌉3 = 6. R_b = 6.
    /// R_c: 5 → 5+3+3 = 11 → 5 + ⌈11/7⌉3 + ⌈11/12⌉3 = 5+6+3 = 14
    ///      → 5 + ⌈14/7⌉3 + ⌈14/12⌉3 = 5+6+6 = 17 → 5 + 9 + 6 = 20 → 5 + 9 + 6 = 20. R_c = 20.
    #[test]
    fn burns_wellings_example() {
        let tasks = [
            FpTask::new(7, 3, 1),
            FpTask::new(12, 3, 2),
            FpTask::new(20, 5, 3),
        ];
        let got: Vec<Option<u64>> = fp_response_times(&tasks)
            .unwrap()
            .iter()
            .map(ResponseBound::response_time)
            .collect();
        assert_eq!(got, vec![Some(3), Some(6), Some(20)]);
    }

    /// RM example with (T, C) = (4,1), (6,2), (12,3), all values derived by hand — U = 1/4 + 1/3 + 1/4 = 5/6 > 3(2^{1/3} − 1) ≈ 0.780, so the
    /// LL bound fails, yet RTA shows it schedulable. By hand for τ3:
    /// 3 → 3 + 1 + 2 = 6 → 3 + ⌈6/4⌉1 + ⌈6/6⌉2 = 7 → 3 + 2 + ⌈7/6⌉2 = 9 → 3 + 3 + 4 = 10
    /// → 3 + ⌈10/4⌉1 + ⌈10/6⌉2 = 3 + 3 + 4 = 10. R3 = 10 ≤ 12.
    #[test]
    fn rm_example_rejected_by_bounds_accepted_by_rta() {
        let tasks = [
            FpTask::new(4, 1, 0),
            FpTask::new(6, 2, 1),
            FpTask::new(12, 3, 2),
        ];
        let got = fp_response_times(&tasks).unwrap();
        assert_eq!(
            got[0],
            ResponseBound::Bounded {
                response_time: 1,
                slack: 3
            }
        );
        assert_eq!(
            got[1],
            ResponseBound::Bounded {
                response_time: 3,
                slack: 3
            }
        );
        assert_eq!(
            got[2],
            ResponseBound::Bounded {
                response_time: 10,
                slack: 2
            }
        );
        let w = Workload::from_pairs(&[(4, 1), (6, 2), (12, 3)]).unwrap();
        assert!(!liu_layland_test(&w));
        // Hyperbolic: (5/4)(4/3)(5/4) = 100/48 > 2 — also fails.
        assert!(!hyperbolic_test(&w));
    }

    /// Bound values by hand: n = 1 → 1, n = 2 → 2(√2 − 1) ≈ 0.8284.
    /// U = 0.8284 (20711/25000 ≈ 0.82844) is just above 2(√2−1) = 0.828427…, 0.8284 below.
    #[test]
    fn liu_layland_exact_at_the_boundary() {
        assert!((liu_layland_bound(2) - 0.828_427_124_746_19).abs() < 1e-12);
        let below = Workload::from_pairs(&[(10000, 4142), (10000, 4142)]).unwrap(); // 0.8284
        let above = Workload::from_pairs(&[(100000, 41422), (100000, 41422)]).unwrap(); // 0.82844
        assert!(liu_layland_test(&below));
        assert!(!liu_layland_test(&above));
        assert!(liu_layland_test(&Workload::from_pairs(&[(5, 5)]).unwrap()));
    }

    /// Hyperbolic dominates LL: (U1+1)(U2+1) = 2 exactly at U1 = 1/2, U2 = 1/3 (3/2 · 4/3),
    /// total U = 5/6 ≈ 0.833 > 0.8284 (LL fails, hyperbolic passes).
    #[test]
    fn hyperbolic_accepts_what_liu_layland_rejects() {
        let w = Workload::from_pairs(&[(2, 1), (3, 1)]).unwrap();
        assert!(hyperbolic_test(&w));
        assert!(!liu_layland_test(&w));
    }

    /// RM with equal periods: one level, so (10, 1, d 3) waits for (10, 4) declared after it:
    /// R = 1 + 4 = 5 > 3.
    #[test]
    fn rm_equal_periods_interfere_both_ways() {
        let w = Workload::new([Task::with_deadline(10, 1, 3), Task::new(10, 4)]).unwrap();
        let got = rm_response_times(&w);
        assert_eq!(got[0], ResponseBound::ExceedsDeadline { at_least: 5 });
        assert_eq!(got[1].response_time(), Some(5));
    }

    #[test]
    fn equal_priorities_interfere_both_ways() {
        let tasks = [FpTask::new(10, 3, 1), FpTask::new(10, 3, 1)];
        let got = fp_response_times(&tasks).unwrap();
        assert_eq!(got[0].response_time(), Some(6));
        assert_eq!(got[1].response_time(), Some(6));
    }
}
