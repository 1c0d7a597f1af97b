//! Demand of a workload: the request bound function under RM and the demand bound function
//! under EDF.
//!
//! Sources: rbf — Lehoczky, Sha & Ding, "The rate monotonic scheduling algorithm: exact
//! characterization and average case behavior", RTSS 1989 (the cumulative demand
//! `W_i(t)`), in the form used by Shin & Lee, TECS 2008 (`rbf_{W,i}`). dbf —
//! Baruah, Rosier & Howell, "Algorithms and complexity concerning the preemptive scheduling
//! of periodic, real-time tasks on one processor", Real-Time Systems 2(4), 1990, in the form
//! of Shin & Lee, TECS 2008 (`dbf_W`).

use crate::workload::Workload;

/// `rbf_i(t) = Σ_{k ∈ hep(i)} ⌈t / p_k⌉ · e_k` for the task at RM position `i` (0-based),
/// i.e. the most work that task i and every task of higher **or equal** priority
/// ([`Workload::interfering`]) can release in `[0, t)` under synchronous release (Shin & Lee
/// TECS 2008, with ties interfering: a guest serves equal priorities first-in, first-out).
pub fn rbf(w: &Workload, i: usize, t: u64) -> u64 {
    w.interfering(i)
        .iter()
        .map(|task| t.div_ceil(task.period) * task.wcet)
        .sum()
}

/// `dbf(t) = Σ_i max(0, ⌊(t − d_i)/p_i⌋ + 1) · e_i`: the most work with both release and
/// deadline inside an interval of length t (Baruah et al. 1990; Shin & Lee TECS 2008).
pub fn dbf(w: &Workload, t: u64) -> u64 {
    w.tasks()
        .iter()
        .filter(|task| t >= task.deadline)
        .map(|task| ((t - task.deadline) / task.period + 1) * task.wcet)
        .sum()
}

/// The points at which Lemma 1 must be checked for the task at RM position `i`: every
/// multiple of `p_k` (k interfering with i) that is at most `d_i`, plus `d_i` itself, ascending, with
/// `rbf_i` at each. Between two consecutive points rbf_i is constant while sbf is
/// non-decreasing, so these points decide Lemma 1 exactly (Shin & Lee TECS 2008;
/// spec, "Lemma 1").
///
/// One entry per job of every higher-priority task up to `d_i`: a reference for small
/// workloads. The analyses keep these only for tasks with few of them and otherwise decide
/// Lemma 1 without any list (see [`crate::check`]).
pub fn rm_test_points(w: &Workload, i: usize) -> Vec<(u64, u64)> {
    let deadline = w.tasks()[i].deadline;
    let mut points: Vec<u64> = Vec::new();
    for task in w.interfering(i) {
        let mut t = task.period;
        while t <= deadline {
            points.push(t);
            t += task.period;
        }
    }
    points.push(deadline);
    points.sort_unstable();
    points.dedup();
    points.into_iter().map(|t| (t, rbf(w, i, t))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Task;

    /// W = {(7,2), (8,1), (10,1)} (the RTAS 2012 example). By hand:
    /// rbf_1(t) = 2⌈t/7⌉ + ⌈t/8⌉: t ∈ (0,7] → 3; t = 8 → 4 + 1 = 5.
    /// rbf_2(t) adds ⌈t/10⌉: t ∈ (0,7] → 4; t = 8 → 6; t ∈ (8,10] → 4 + 2 + 1 = 7.
    #[test]
    fn rbf_by_hand() {
        let w = Workload::from_pairs(&[(7, 2), (8, 1), (10, 1)]).unwrap();
        assert_eq!(rbf(&w, 0, 7), 2);
        assert_eq!(rbf(&w, 0, 8), 4);
        assert_eq!(rbf(&w, 1, 1), 3);
        assert_eq!(rbf(&w, 1, 7), 3);
        assert_eq!(rbf(&w, 1, 8), 5);
        assert_eq!(rbf(&w, 2, 7), 4);
        assert_eq!(rbf(&w, 2, 8), 6);
        assert_eq!(rbf(&w, 2, 9), 7);
        assert_eq!(rbf(&w, 2, 10), 7);
        assert_eq!(rm_test_points(&w, 2), vec![(7, 4), (8, 6), (10, 7)]);
        assert_eq!(rm_test_points(&w, 1), vec![(7, 3), (8, 5)]);
    }

    /// Equal periods (equal deadlines under DM) are one priority level: each task's rbf
    /// counts the other. W = {a = (10, 1, d 3), b = (10, 4)}: rbf_a(3) = 1 + 4 = 5, where
    /// the declaration order alone would give 1. Under DM, c = (12, 2, d 3) shares a's
    /// deadline (and level) but not its period.
    #[test]
    fn equal_priorities_share_a_level() {
        let w = Workload::new([Task::with_deadline(10, 1, 3), Task::new(10, 4)]).unwrap();
        assert_eq!(rbf(&w, 0, 3), 5);
        assert_eq!(rbf(&w, 1, 3), 5);
        assert_eq!(rm_test_points(&w, 0), vec![(3, 5)]);
        let w = Workload::new([
            Task::with_deadline(10, 1, 3),
            Task::with_deadline(12, 2, 3),
            Task::new(20, 1),
        ])
        .unwrap();
        assert_eq!(w.interfering(0).len(), 1, "RM: periods 10 < 12");
        let dm = w.deadline_monotonic();
        assert_eq!(dm.interfering(0).len(), 2, "DM: deadlines 3 = 3");
        assert_eq!(dm.interfering(1).len(), 2);
        assert_eq!(dm.interfering(2).len(), 3);
    }

    /// dbf of {(5,1,d=3), (10,2)} by hand: steps at 3, 8, 10, 13, 18, 20 …
    /// dbf(2)=0, dbf(3)=1, dbf(8)=2, dbf(10)=4, dbf(13)=5, dbf(20)=4+4=8.
    #[test]
    fn dbf_by_hand() {
        let w = Workload::new([Task::with_deadline(5, 1, 3), Task::new(10, 2)]).unwrap();
        let got: Vec<u64> = [2, 3, 7, 8, 10, 13, 20]
            .iter()
            .map(|&t| dbf(&w, t))
            .collect();
        assert_eq!(got, vec![0, 1, 1, 2, 4, 5, 8]);
    }
}
