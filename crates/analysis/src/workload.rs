//! The workload model: periodic tasks `T_i = (p_i, e_i, d_i)` in rate-monotonic order.
//!
//! Source: Liu & Layland, JACM 1973 (the periodic task model and RM priorities); Shin &
//! Lee, "Compositional real-time scheduling framework with periodic model", ACM TECS 7(3),
//! 2008, Section 2 (the workload notation used throughout this crate).

use serde::Serialize;
use thiserror::Error;

use crate::ratio::{gcd, lcm, ExactSum, Ratio};

/// Largest time value accepted anywhere (2^40 units). Keeps every intermediate product of
/// the analyses (`t·Θ`, `⌈t/p⌉·e` summed over tasks, cross-multiplied ratios) inside
/// `u128`/`i128` with room to spare. With a 1 µs unit this is about 12.7 days.
pub const MAX_TIME: u64 = 1 << 40;

/// An invalid task or workload. `task` is the caller's (declaration) index.
#[derive(Clone, Debug, PartialEq, Eq, Error, Serialize)]
pub enum WorkloadError {
    /// A workload needs at least one task.
    #[error("the workload has no tasks")]
    Empty,
    /// `p = 0`.
    #[error("task {task}: period must be positive")]
    ZeroPeriod {
        /// Declaration index.
        task: usize,
    },
    /// `e = 0`.
    #[error("task {task}: wcet must be positive")]
    ZeroWcet {
        /// Declaration index.
        task: usize,
    },
    /// `e > p`.
    #[error("task {task}: wcet {wcet} exceeds period {period}")]
    WcetExceedsPeriod {
        /// Declaration index.
        task: usize,
        /// The offending wcet.
        wcet: u64,
        /// The period.
        period: u64,
    },
    /// `d = 0` or `d > p`.
    #[error("task {task}: deadline {deadline} must be in 1..={period} (its period)")]
    BadDeadline {
        /// Declaration index.
        task: usize,
        /// The offending deadline.
        deadline: u64,
        /// The period.
        period: u64,
    },
    /// A time value above [`crate::MAX_TIME`].
    #[error("task {task}: value {value} exceeds the supported maximum 2^40")]
    TooLarge {
        /// Declaration index.
        task: usize,
        /// The offending value.
        value: u64,
    },
}

/// A periodic task: released every `period` time units, needing at most `wcet` units of
/// processor time per job, each job due `deadline` units after its release.
///
/// Source: Liu & Layland 1973 (implicit deadlines); constrained deadlines `d ≤ p` as in
/// Audsley et al., "Applying new scheduling theory to static priority pre-emptive
/// scheduling", Software Engineering Journal 8(5), 1993.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Task {
    /// `p_i`, the (minimum) release separation.
    pub period: u64,
    /// `e_i`, the worst-case execution time.
    pub wcet: u64,
    /// `d_i`, the relative deadline, `0 < d_i ≤ p_i`.
    pub deadline: u64,
}

impl Task {
    /// A task with an implicit deadline (`d = p`), as in the spec's `(p, e)` notation.
    pub fn new(period: u64, wcet: u64) -> Task {
        Task {
            period,
            wcet,
            deadline: period,
        }
    }

    /// A task with a constrained deadline `d ≤ p`.
    pub fn with_deadline(period: u64, wcet: u64, deadline: u64) -> Task {
        Task {
            period,
            wcet,
            deadline,
        }
    }

    /// `e_i / p_i`, exactly.
    pub fn utilization(&self) -> Ratio {
        Ratio::new(self.wcet, self.period)
    }

    /// Checks `0 < e ≤ p`, `0 < d ≤ p`, `p ≤ MAX_TIME`. `e > d` is allowed (such a task is
    /// simply unschedulable, which the analyses report).
    pub fn validate(&self, index: usize) -> Result<(), WorkloadError> {
        if self.period == 0 {
            return Err(WorkloadError::ZeroPeriod { task: index });
        }
        if self.period > MAX_TIME {
            return Err(WorkloadError::TooLarge {
                task: index,
                value: self.period,
            });
        }
        if self.wcet == 0 {
            return Err(WorkloadError::ZeroWcet { task: index });
        }
        if self.wcet > self.period {
            return Err(WorkloadError::WcetExceedsPeriod {
                task: index,
                wcet: self.wcet,
                period: self.period,
            });
        }
        if self.deadline == 0 || self.deadline > self.period {
            return Err(WorkloadError::BadDeadline {
                task: index,
                deadline: self.deadline,
                period: self.period,
            });
        }
        Ok(())
    }
}

/// Who interferes with whom under fixed priorities, in one place: a task whose priority key
/// is `other` (a period under RM, a relative deadline under DM, an explicit priority; smaller
/// = more urgent) can delay a task whose key is `own` iff `other ≤ own` — higher **or
/// equal** priority. rtvmm's guests serve equal priorities first-in, first-out by release
/// (`crates/core/src/guest.rs`), so a job of equal priority released just before can run
/// first, whatever the declaration order; the published fixed-priority analyses treat ties
/// the same way (`hp(i)` taken as "higher or equal"). Every fixed-priority test of this
/// crate — Lemma 1's `rbf_i` ([`Workload::interfering`]), the response-time recurrences
/// ([`crate::rta`], [`crate::hierarchical`]), servers at a fixed-priority root — asks this.
pub fn interferes<K: Ord>(other: K, own: K) -> bool {
    other <= own
}

/// A validated, non-empty set of periodic tasks, kept in **priority order**: rate-monotonic
/// from [`Workload::new`] (sorted by period, ties broken by declaration order — a stable
/// sort — so `tasks()[0]` has the highest RM priority), deadline-monotonic from
/// [`Workload::deadline_monotonic`]. [`Workload::declaration_index`] maps a position back to
/// the caller's order so that errors and reports can name the task the caller wrote.
///
/// Tasks with equal keys (equal periods under RM, equal deadlines under DM) share a
/// priority level and interfere both ways ([`interferes`]): the order among them is only
/// the order results are listed in, and [`Workload::interfering`] gives each the whole
/// level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Workload {
    tasks: Vec<Task>,
    declared_at: Vec<usize>,
    /// Per position, the last position of its priority level.
    level_end: Vec<usize>,
}

/// Per position of `tasks` (sorted by `key`), the last position whose task interferes with
/// it ([`interferes`]): the end of its priority level.
fn level_ends<K: Ord>(tasks: &[Task], key: impl Fn(&Task) -> K) -> Vec<usize> {
    tasks
        .iter()
        .map(|own| tasks.partition_point(|other| interferes(key(other), key(own))) - 1)
        .collect()
}

impl Workload {
    /// Validates and sorts the tasks (RM order, stable).
    pub fn new(tasks: impl IntoIterator<Item = Task>) -> Result<Workload, WorkloadError> {
        let declared: Vec<Task> = tasks.into_iter().collect();
        if declared.is_empty() {
            return Err(WorkloadError::Empty);
        }
        for (index, task) in declared.iter().enumerate() {
            task.validate(index)?;
        }
        let mut order: Vec<usize> = (0..declared.len()).collect();
        order.sort_by_key(|&index| declared[index].period); // stable: ties keep declaration order
        let tasks: Vec<Task> = order.iter().map(|&index| declared[index]).collect();
        Ok(Workload {
            level_end: level_ends(&tasks, |task| task.period),
            tasks,
            declared_at: order,
        })
    }

    /// The same tasks in **deadline-monotonic order**: by relative deadline, ties by period,
    /// then by declaration order. For implicit deadlines this is the RM order. Equal
    /// deadlines share a priority level (a DM guest serves them first-in, first-out).
    pub fn deadline_monotonic(&self) -> Workload {
        let mut order: Vec<usize> = (0..self.tasks.len()).collect();
        order.sort_by_key(|&k| {
            let task = &self.tasks[k];
            (task.deadline, task.period, self.declared_at[k])
        });
        let tasks: Vec<Task> = order.iter().map(|&k| self.tasks[k]).collect();
        Workload {
            level_end: level_ends(&tasks, |task| task.deadline),
            tasks,
            declared_at: order.iter().map(|&k| self.declared_at[k]).collect(),
        }
    }

    /// The tasks whose demand counts against the task at priority position `i`: itself and
    /// every task of higher or equal priority ([`interferes`]) — a prefix of
    /// [`Workload::tasks`], through the end of `i`'s priority level. `rbf_i` sums over these.
    pub fn interfering(&self, i: usize) -> &[Task] {
        &self.tasks[..=self.level_end[i]]
    }

    /// Convenience for implicit-deadline tasks given as `(period, wcet)` pairs.
    pub fn from_pairs(pairs: &[(u64, u64)]) -> Result<Workload, WorkloadError> {
        Workload::new(pairs.iter().map(|&(p, e)| Task::new(p, e)))
    }

    /// The tasks in priority order (index 0 = highest priority).
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// Number of tasks.
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Always false: a `Workload` has at least one task.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// The caller's (declaration) index of the task at priority position `rm_index`.
    pub fn declaration_index(&self, rm_index: usize) -> usize {
        self.declared_at[rm_index]
    }

    /// `p_n`, the largest period.
    pub fn max_period(&self) -> u64 {
        self.tasks.iter().map(|task| task.period).max().unwrap_or(0)
    }

    /// The largest relative deadline.
    pub fn max_deadline(&self) -> u64 {
        self.tasks
            .iter()
            .map(|task| task.deadline)
            .max()
            .unwrap_or(0)
    }

    /// gcd of all periods: the periods Π for which the harmonic supply bound can be sound
    /// are exactly its divisors (see [`crate::SbfMode`]).
    pub fn period_gcd(&self) -> u64 {
        self.tasks.iter().fold(0, |g, task| gcd(g, task.period))
    }

    /// The hyperperiod (lcm of periods), `None` if it overflows `u64`.
    pub fn hyperperiod(&self) -> Option<u64> {
        self.tasks
            .iter()
            .try_fold(1u64, |l, task| lcm(l, task.period))
    }

    /// W is harmonic iff every pair of periods divides one another (spec, "Workloads").
    /// Sorted by period it suffices that each period divides the next.
    pub fn is_harmonic(&self) -> bool {
        let mut periods: Vec<u64> = self.tasks.iter().map(|task| task.period).collect();
        periods.sort_unstable();
        periods.windows(2).all(|pair| pair[1] % pair[0] == 0)
    }

    /// True when every deadline equals its period.
    pub fn has_implicit_deadlines(&self) -> bool {
        self.tasks.iter().all(|task| task.deadline == task.period)
    }

    /// `bw(W) = Σ e_i / p_i`, exactly.
    pub fn utilization(&self) -> ExactSum {
        ExactSum::of(self.tasks.iter().map(Task::utilization))
    }

    /// `bw(W)` as `f64`, for display.
    pub fn utilization_f64(&self) -> f64 {
        self.utilization().to_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rm_order_is_stable_by_period() {
        let w = Workload::new([
            Task::new(10, 1),
            Task::new(5, 1),
            Task::new(10, 2),
            Task::new(5, 2),
        ])
        .unwrap();
        let periods_wcets: Vec<(u64, u64)> = w.tasks().iter().map(|t| (t.period, t.wcet)).collect();
        assert_eq!(periods_wcets, vec![(5, 1), (5, 2), (10, 1), (10, 2)]);
        assert_eq!(
            (0..4).map(|i| w.declaration_index(i)).collect::<Vec<_>>(),
            vec![1, 3, 0, 2]
        );
    }

    /// DM order by hand: declared (10, 1, d 3), (5, 1, d 5), (8, 2, d 3): deadlines 3, 5, 3
    /// → (10,1,3) and (8,2,3) tie at 3, the shorter period (8) first → [2, 0, 1].
    #[test]
    fn deadline_monotonic_order() {
        let w = Workload::new([
            Task::with_deadline(10, 1, 3),
            Task::new(5, 1),
            Task::with_deadline(8, 2, 3),
        ])
        .unwrap();
        let dm = w.deadline_monotonic();
        let declared: Vec<usize> = (0..3).map(|k| dm.declaration_index(k)).collect();
        assert_eq!(declared, vec![2, 0, 1]);
        assert_eq!(dm.tasks()[0], Task::with_deadline(8, 2, 3));
        assert_eq!(dm.max_period(), 10);
        // Implicit deadlines: DM is RM.
        let rm = Workload::from_pairs(&[(10, 1), (5, 1), (10, 2), (5, 2)]).unwrap();
        assert_eq!(rm.deadline_monotonic(), rm);
    }

    #[test]
    fn harmonic_detection() {
        assert!(Workload::from_pairs(&[(25, 3), (50, 5), (100, 4)])
            .unwrap()
            .is_harmonic());
        assert!(!Workload::from_pairs(&[(7, 2), (8, 1), (10, 1)])
            .unwrap()
            .is_harmonic());
        assert!(Workload::from_pairs(&[(4, 1), (4, 1)])
            .unwrap()
            .is_harmonic());
    }

    #[test]
    fn validation_names_the_task() {
        assert_eq!(Workload::new([]), Err(WorkloadError::Empty));
        assert_eq!(
            Workload::from_pairs(&[(5, 1), (3, 4)]),
            Err(WorkloadError::WcetExceedsPeriod {
                task: 1,
                wcet: 4,
                period: 3
            })
        );
        assert_eq!(
            Workload::new([Task::with_deadline(5, 1, 6)]),
            Err(WorkloadError::BadDeadline {
                task: 0,
                deadline: 6,
                period: 5
            })
        );
    }

    #[test]
    fn utilization_is_exact() {
        let w = Workload::from_pairs(&[(25, 3), (50, 5), (100, 4)]).unwrap();
        // 3/25 + 5/50 + 4/100 = 12/100 + 10/100 + 4/100 = 26/100 = 13/50
        assert_eq!(w.utilization().to_ratio(), Some(Ratio::new(13, 50)));
        assert_eq!(w.period_gcd(), 25);
        assert_eq!(w.hyperperiod(), Some(100));
    }
}
