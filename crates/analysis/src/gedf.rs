//! Global EDF on a multiprocessor supply: the demand `DEM(A_k + D_k, m′)` with carry-in from
//! at most `m′ − 1` tasks, and the test that compares it with a supply bound function over
//! the bounded range of `A_k` that a linear lower bound of the supply gives.
//!
//! Source: I. Shin, A. Easwaran and I. Lee, "Hierarchical Scheduling Framework for Virtual
//! Clustering of Multiprocessors", ECRTS 2008 (Theorem 1, and the bound on `A_k` that
//! follows it), which builds on S. Baruah, "Techniques for multiprocessor global
//! schedulability analysis", RTSS 2007. The same test under the DMPR supply is the one of
//! M. Xu, L. T. X. Phan, I. Lee, O. Sokolsky, S. Xi, C. Lu, C. Gill, "Cache-Aware
//! Compositional Analysis of Real-Time Multicore Virtualization Platforms", RTSS 2013.
//! `docs/analysis.md`, "Many pcpus", says where it is used.
//!
//! # The test
//! A component of constrained-deadline sporadic tasks `τ_i = (T_i, C_i, D_i)` scheduled by
//! global EDF on at most `m′` processors at once, with a supply of at least `sbf(t)` in any
//! interval of length t, meets every deadline if for every task `τ_k` and every `A_k ≥ 0`
//! (with `t = A_k + D_k`):
//!
//! ```text
//! DEM(t, m′) = m′·C_k + Σ_i Î_i + Σ_{the m′−1 largest} (Ī_i − Î_i)  ≤  sbf(t)   (or "<", below)
//!
//! W_i(t)  = ⌊(t + T_i − D_i)/T_i⌋·C_i + CI_i(t)                 (work with carry-in)
//! CI_i(t) = min(C_i, max(0, t − ⌊(t + T_i − D_i)/T_i⌋·T_i))      (the carry-in job)
//! Ī_i = min(W_i(t), x),                  Î_i = min(W_i(t) − CI_i(t), x)     (i ≠ k; the cap x below)
//! Ī_k = min(W_k(t) − C_k, A_k),          Î_k = min(W_k(t) − CI_k(t) − C_k, A_k)
//! ```
//!
//! `W_i(t) − CI_i(t)` is `dbf_i(t)`. Time is discrete (supply and releases in whole units,
//! the crate's convention), so checking integer `A_k` is exact.
//!
//! # The cap, and where rtvmm parts from CARTS
//! The paper caps each task's interference at `t − C_k` and accepts `DEM ≤ sbf`; CARTS
//! (`MPR2`, `DMPR`) evaluates exactly that. It accepts a component that misses: three tasks
//! released together on two dedicated processors, `a = b = (T 10, C 1, D 2)` and
//! `k = (10, 2, 2)`, give `DEM(2) = 2·C_k = 4 = sbf(2)` for `k` (every cap is 0), yet
//! global EDF that serves `a` and `b` first finishes `k` at 3 (the test
//! `the_papers_cap_accepts_a_tie_that_misses` below; found by the multicore soundness
//! property). The proof's step that fails: a job of `k` that misses runs at most `C_k − 1`
//! of the `t` slots, so it is blocked in `Ω ≥ x = t − C_k + 1` slots, in each of which
//! every supplied processor runs another task, and no task runs in more than `Ω` of them.
//! For `y ≤ Ω`, `min(I_i, y) ≥ (y/Ω)·min(I_i, Ω)`, so `Σ min(I_i, Ω) ≥ m′Ω` gives
//! `Σ min(I_i, y) ≥ m′y` for every `y ≤ x` — with `≥`, not `>`. So a miss gives both
//!
//! ```text
//! DEM with the cap x = t − C_k + 1  ≥  m′C_k + m′(t − C_k + 1)  >  m′t
//! DEM with the paper's cap t − C_k  ≥  m′C_k + m′(t − C_k)      =  m′t
//! ```
//!
//! (shown here for a dedicated supply, `sbf(t) = m′t`; the paper's argument carries it to
//! `sbf`). A window passes if **either** `DEM_{x} ≤ sbf(t)` **or** `DEM_{paper} < sbf(t)`:
//! each excludes a miss there. The only windows rtvmm refuses and CARTS accepts are those
//! where the paper's demand equals the supply exactly and the larger cap lifts it above;
//! there an interface can cost more budget, or another processor, than CARTS prints
//! (`docs/analysis.md` gives the counts of a cross-check).
//!
//! # The range of `A_k` (proof)
//! `Ī_i ≤ W_i(t) ≤ dbf_i(t) + C_i`, `dbf_i(t) ≤ U_i·(t + T_i − D_i)` and `Ī_k ≤ W_k(t) − C_k`, so
//!
//! ```text
//! DEM(t, m′) ≤ m′·C_k + C_Σ + U_T·t + Ū,   C_Σ = the m′ − 1 largest C_i,
//!                                          U_T = Σ C_i/T_i,  Ū = Σ (T_i − D_i)·C_i/T_i.
//! ```
//!
//! If the supply has a linear lower bound `sbf(t) ≥ ρ·t − δ` ([`LinearSupply`]) with
//! `ρ > U_T`, a violation `DEM(t) > sbf(t)` needs `m′C_k + C_Σ + U_T·t + Ū > ρ·t − δ`, i.e.
//!
//! ```text
//! A_k < (C_Σ + m′·C_k − D_k·(ρ − U_T) + Ū + δ) / (ρ − U_T)
//! ```
//!
//! which is the paper's bound with the paper's `B` replaced by `δ`. Each supply model states
//! (and proves) its own `δ`: the crate never relies on a linear bound it has not shown to lie
//! below the sbf it tests with. With `ρ ≤ U_T` there is no bound; the test then answers
//! [`GedfVerdict::NoBound`] (the paper requires `U_T < ρ`; with `ρ < U_T` the component is
//! plainly overloaded).

use std::cmp::Ordering;

use num_bigint::BigInt;
use num_rational::BigRational;
use num_traits::{Signed, ToPrimitive, Zero};
use serde::Serialize;

use crate::ratio::gcd;
use crate::workload::{Task, Workload};

/// The most values of `A_k` one test examines over all tasks (about 20 ms of work for 20
/// tasks). Past it the test answers [`GedfVerdict::Limit`] (the safe side: the caller must
/// not claim schedulability). The range grows as `1/(ρ − U_T)`, so only supplies whose rate
/// is within a hair of the utilisation reach it. (CARTS's fast mode likewise gives up on a
/// candidate whose bound reaches 100,000 time units.)
pub const GEDF_MAX_POINTS: u64 = 1 << 20;

/// A linear lower bound `sbf(t) ≥ rate·t − deficit` for all `t ≥ 0` of some supply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinearSupply {
    /// `ρ`, the long-run rate (the bandwidth `Θ/Π`).
    pub rate: BigRational,
    /// `δ ≥ 0`.
    pub deficit: BigRational,
}

/// Rounds of `A_k` checked before the bound on `A_k` is computed (see [`gedf_test`]).
const PRESCAN_ROUNDS: u64 = 64;

/// The answer of [`gedf_test`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum GedfVerdict {
    /// `DEM(A_k + D_k, m′) ≤ sbf(A_k + D_k)` for every task and every `A_k ≥ 0`.
    Schedulable,
    /// The first violation found: task `task_index` (declaration index) at window
    /// `A_k + D_k = window`, where the demand exceeds the supply.
    Violation {
        /// Declaration index of `τ_k`.
        task_index: usize,
        /// `A_k + D_k`.
        window: u64,
        /// `DEM(window, m′)`.
        demand: u64,
        /// `sbf(window)`.
        supply: u64,
    },
    /// A task has `C_k > D_k`: it misses on any supply.
    TaskInfeasible {
        /// Declaration index.
        task_index: usize,
    },
    /// `ρ ≤ U_T` (and the first rounds of `A_k` found no violation): the supply's rate does not exceed the utilisation, so no finite range of
    /// `A_k` decides the test (the paper's condition `U_T < Θ/Π`). Not schedulable as far
    /// as this test can tell.
    NoBound,
    /// More than [`GEDF_MAX_POINTS`] values of `A_k` would have to be checked (after the
    /// first rounds found no violation).
    Limit,
}

impl GedfVerdict {
    /// Whether the test proves the component schedulable.
    pub fn is_schedulable(&self) -> bool {
        matches!(self, GedfVerdict::Schedulable)
    }
}

/// A workload prepared for repeated gEDF tests (the sums of the `A_k` bound, computed once).
#[derive(Clone, Debug)]
pub struct GedfWorkload {
    tasks: Vec<Task>,
    declared_at: Vec<usize>,
    /// `U_T = Σ C_i/T_i`.
    utilization: BigRational,
    /// `U_T = N/L` and `Ū = N̄/L` over the common denominator `L = lcm T_i`, as integers
    /// `(N, N̄, L)`: the bound on `A_k` is then integer arithmetic without any gcd.
    over_lcm: (BigInt, BigInt, BigInt),
    /// WCETs, largest first (for `C_Σ`).
    wcets_descending: Vec<u64>,
}

impl GedfWorkload {
    /// Prepares `w` (any order; results name tasks by declaration index).
    pub fn new(w: &Workload) -> GedfWorkload {
        let tasks = w.tasks().to_vec();
        let declared_at = (0..tasks.len()).map(|i| w.declaration_index(i)).collect();
        let mut lcm = BigInt::from(1u8);
        for task in &tasks {
            let remainder = (&lcm % BigInt::from(task.period))
                .to_u64()
                .expect("below p");
            lcm *= BigInt::from(task.period / gcd(remainder, task.period));
        }
        let (mut load, mut slack_load) = (BigInt::zero(), BigInt::zero());
        for task in &tasks {
            let share = &lcm / BigInt::from(task.period) * BigInt::from(task.wcet);
            slack_load += &share * BigInt::from(task.period - task.deadline);
            load += share;
        }
        let utilization = BigRational::new(load.clone(), lcm.clone());
        let mut wcets_descending: Vec<u64> = tasks.iter().map(|t| t.wcet).collect();
        wcets_descending.sort_unstable_by(|a, b| b.cmp(a));
        GedfWorkload {
            tasks,
            declared_at,
            utilization,
            over_lcm: (load, slack_load, lcm),
            wcets_descending,
        }
    }

    /// `U_T`, exactly.
    pub fn utilization(&self) -> &BigRational {
        &self.utilization
    }

    /// The tasks (in the workload's priority order; gEDF does not use it).
    pub fn tasks(&self) -> &[Task] {
        &self.tasks
    }

    /// `DEM(A_k + D_k, m′)` for the task at position `k` (see the module docs). `scratch` is
    /// reused between calls to avoid allocating.
    ///
    /// # Panics
    /// If `C_k > D_k` (such a task has no meaningful demand; [`gedf_test`] rejects it first).
    pub fn demand(&self, k: usize, a_k: u64, concurrency: u64, scratch: &mut Vec<u64>) -> u64 {
        self.demand_capped(k, a_k, concurrency, scratch, 1)
    }

    /// `DEM(A_k + D_k, m′)` with the paper's cap `t − C_k` (module docs, "The cap"): the
    /// test accepts a window whose paper demand is strictly below the supply.
    pub fn paper_demand(
        &self,
        k: usize,
        a_k: u64,
        concurrency: u64,
        scratch: &mut Vec<u64>,
    ) -> u64 {
        self.demand_capped(k, a_k, concurrency, scratch, 0)
    }

    /// The demand with every other task's interference capped at `t − C_k + extra`.
    fn demand_capped(
        &self,
        k: usize,
        a_k: u64,
        concurrency: u64,
        scratch: &mut Vec<u64>,
        extra: u64,
    ) -> u64 {
        let task_k = self.tasks[k];
        assert!(task_k.wcet <= task_k.deadline, "C_k > D_k");
        let t = a_k + task_k.deadline;
        let cap = t - task_k.wcet + extra;
        let mut total: u64 = concurrency * task_k.wcet;
        scratch.clear();
        for (i, task) in self.tasks.iter().enumerate() {
            let jobs = (t + task.period - task.deadline) / task.period;
            let carry_in = task.wcet.min(t.saturating_sub(jobs * task.period));
            let dbf = jobs * task.wcet;
            let (with_carry, without_carry) = if i == k {
                (
                    (dbf + carry_in - task.wcet).min(a_k),
                    (dbf - task.wcet).min(a_k),
                )
            } else {
                ((dbf + carry_in).min(cap), dbf.min(cap))
            };
            total += without_carry;
            if with_carry > without_carry {
                scratch.push(with_carry - without_carry);
            }
        }
        // The m′ − 1 largest carry-in gains (only the positive ones are kept: most tasks
        // have none at a given window, and then no selection is needed).
        let carried = concurrency.saturating_sub(1) as usize;
        if carried > 0 && carried < scratch.len() {
            scratch.select_nth_unstable_by(carried - 1, |a, b| b.cmp(a));
            scratch.truncate(carried);
        }
        if carried > 0 {
            total += scratch.iter().sum::<u64>();
        }
        total
    }

    /// The largest `A_k` that can violate the test for task `k` under a supply with linear
    /// lower bound `bound` (module docs), or `None` when `ρ ≤ U_T`. `0` when no `A_k` can.
    pub fn max_a_k(&self, k: usize, concurrency: u64, bound: &LinearSupply) -> Option<u64> {
        Some(self.a_k_ranges(concurrency, bound)?[k])
    }

    /// [`GedfWorkload::max_a_k`] for every task. With `ρ = a/b`, `δ = c/d`, `U_T = N/L`,
    /// `Ū = N̄/L` and `X_k = C_Σ + m′C_k`, the bound of the module docs is
    /// `⌊(X_k + Ū + δ)/(ρ − U_T)⌋ − D_k` (D_k is an integer), i.e.
    /// `⌊(X_k·L·d + N̄·d + c·L)·b / ((a·L − N·b)·d)⌋ − D_k`, all in integers.
    fn a_k_ranges(&self, concurrency: u64, bound: &LinearSupply) -> Option<Vec<u64>> {
        let (load, slack_load, lcm) = &self.over_lcm;
        let (a, b) = (bound.rate.numer(), bound.rate.denom());
        let (c, d) = (bound.deficit.numer(), bound.deficit.denom());
        let gap = a * lcm - load * b;
        if !gap.is_positive() {
            return None;
        }
        let denominator = gap * d;
        let lcm_d = lcm * d;
        let constant = slack_load * d + c * lcm;
        let carried = (concurrency.saturating_sub(1) as usize).min(self.wcets_descending.len());
        let c_sigma: u64 = self.wcets_descending[..carried].iter().sum();
        let ranges = self
            .tasks
            .iter()
            .map(|task| {
                let x = BigInt::from(c_sigma) + BigInt::from(concurrency) * BigInt::from(task.wcet);
                let quotient = ((x * &lcm_d + &constant) * b) / &denominator;
                let a_max = quotient - BigInt::from(task.deadline);
                if a_max.is_negative() {
                    0
                } else {
                    a_max.to_u64().unwrap_or(u64::MAX)
                }
            })
            .collect();
        Some(ranges)
    }
}

/// Theorem 1 of Shin, Easwaran & Lee (ECRTS 2008): global EDF of `w` on at most `concurrency`
/// processors at once, under a supply whose sbf is `sbf` and which is bounded below by
/// `bound`. Checks every integer `A_k` from 0 up to [`GedfWorkload::max_a_k`] for every task.
///
/// Sound whatever the arguments, provided `bound` really lies below `sbf` (each caller in
/// this crate proves its bound) and `sbf` is a valid supply bound of the resource.
pub fn gedf_test(
    w: &GedfWorkload,
    concurrency: u64,
    sbf: impl Fn(u64) -> u64,
    bound: &LinearSupply,
) -> GedfVerdict {
    if let Some(k) = w.tasks.iter().position(|t| t.wcet > t.deadline) {
        return GedfVerdict::TaskInfeasible {
            task_index: w.declared_at[k],
        };
    }
    // A_k in rounds (A = 0 for every task, then 1, …): violations come early in the
    // window, so a failing candidate is usually rejected within a few rounds. The first
    // rounds run before the bound on A_k is computed (exact rationals over the lcm of the
    // periods, the costly part of a test): a violation at any A_k ≥ 0 fails the condition,
    // so checking a point the bound would have spared changes no verdict.
    let mut scratch = Vec::with_capacity(w.tasks.len());
    let mut check = |k: usize, a_k: u64| -> Option<GedfVerdict> {
        let window = a_k + w.tasks[k].deadline;
        let demand = w.demand(k, a_k, concurrency, &mut scratch);
        let supply = sbf(window);
        // Either condition of the module docs ("The cap") excludes a miss in this window.
        let violated = demand.cmp(&supply) == Ordering::Greater
            && w.paper_demand(k, a_k, concurrency, &mut scratch) >= supply;
        violated.then(|| GedfVerdict::Violation {
            task_index: w.declared_at[k],
            window,
            demand,
            supply,
        })
    };
    for a_k in 0..PRESCAN_ROUNDS {
        for k in 0..w.tasks.len() {
            if let Some(violation) = check(k, a_k) {
                return violation;
            }
        }
    }
    let Some(ranges) = w.a_k_ranges(concurrency, bound) else {
        return GedfVerdict::NoBound;
    };
    let points = ranges.iter().fold(0u64, |sum, &a_max| {
        sum.saturating_add(a_max.saturating_sub(PRESCAN_ROUNDS - 1))
    });
    if points > GEDF_MAX_POINTS {
        return GedfVerdict::Limit;
    }
    let longest = ranges.iter().copied().max().unwrap_or(0);
    for a_k in PRESCAN_ROUNDS..=longest {
        for (k, &a_max) in ranges.iter().enumerate() {
            if a_k <= a_max {
                if let Some(violation) = check(k, a_k) {
                    return violation;
                }
            }
        }
    }
    GedfVerdict::Schedulable
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two tasks τ_0 = (T 4, C 2, D 4), τ_1 = (T 6, C 3, D 6), m′ = 2, t = A_k + D_k.
    /// For k = 0, A_0 = 0, t = 4 (cap t − C_0 + 1 = 3):
    ///   τ_0 (i = k): jobs ⌊(4+0)/4⌋ = 1, dbf 2, CI = min(2, max(0, 4 − 4)) = 0 →
    ///     Ī = min(2 + 0 − 2, 0) = 0, Î = min(0, 0) = 0.
    ///   τ_1: jobs ⌊(4+0)/6⌋ = 0, dbf 0, CI = min(3, 4) = 3 → Ī = min(3, 3) = 3, Î = 0.
    ///   DEM = 2·2 + 0 + 0 + (top 1 of {0, 3}) = 7 (the paper's cap 2 gives 6).
    /// For k = 1, A_1 = 2, t = 8 (cap 6):
    ///   τ_0: jobs 2, dbf 4, CI = min(2, 8 − 8) = 0 → Ī = Î = 4.
    ///   τ_1 (k): jobs 1, dbf 3, CI = min(3, 8 − 6) = 2 → Ī = min(3+2−3, 2) = 2, Î = min(0, 2) = 0.
    ///   DEM = 2·3 + 4 + 0 + 2 = 12.
    #[test]
    fn demand_by_hand() {
        let w = Workload::new([Task::new(4, 2), Task::new(6, 3)]).unwrap();
        let g = GedfWorkload::new(&w);
        let mut scratch = Vec::new();
        assert_eq!(g.demand(0, 0, 2, &mut scratch), 7);
        assert_eq!(g.demand(1, 2, 2, &mut scratch), 12);
        // m′ = 1: no carry-in; k = 1, A_1 = 2: 3 + 4 + 0 = 7.
        assert_eq!(g.demand(1, 2, 1, &mut scratch), 7);
    }

    /// The paper's cap accepts this component; ours refuses it. `a = b = (10, 1, 2)`,
    /// `k = (10, 2, 2)` on two dedicated processors (sbf(t) = 2t). Global EDF, ties
    /// served first-in, first-out:
    ///
    /// ```text
    /// cpu 0 | a |  k  |        k finishes at 3 > D_k = 2
    /// cpu 1 | b |     |
    ///       0   1   2   3
    /// ```
    ///
    /// For k at A_k = 0 (t = 2): a and b have one job each (dbf 1, no carry-in).
    /// Paper: cap t − C_k = 0 → DEM = 2·2 + 0 + 0 = 4 = sbf(2), accepted.
    /// Here: cap 1 → DEM = 4 + 1 + 1 = 6 > 4, refused.
    #[test]
    fn the_papers_cap_accepts_a_tie_that_misses() {
        let w = Workload::new([
            Task::with_deadline(10, 1, 2),
            Task::with_deadline(10, 1, 2),
            Task::with_deadline(10, 2, 2),
        ])
        .unwrap();
        let g = GedfWorkload::new(&w);
        let mut scratch = Vec::new();
        assert_eq!(g.demand(2, 0, 2, &mut scratch), 6);
        // The two unit tasks alone on two processors are fine: for a, cap 2, b's 1 → 2 + 1 = 3 ≤ 4.
        let pair =
            Workload::new([Task::with_deadline(10, 1, 2), Task::with_deadline(10, 1, 2)]).unwrap();
        assert_eq!(GedfWorkload::new(&pair).demand(0, 0, 2, &mut scratch), 3);
    }

    /// The `A_k` bound by hand for the same workload (U_T = 2/4 + 3/6 = 1, Ū = 0):
    /// under `ρ = 1, δ = 4` there is none (ρ ≤ U_T); under `ρ = 2, δ = 4`, for k = 0:
    /// (C_Σ = 3) + 2·2 − 4·(2 − 1) + 0 + 4 = 7, divided by ρ − U_T = 1 → A_max = 7.
    #[test]
    fn a_k_bound_by_hand() {
        let w = Workload::new([Task::new(4, 2), Task::new(6, 3)]).unwrap();
        let g = GedfWorkload::new(&w);
        let tight = LinearSupply {
            rate: BigRational::from_integer(1.into()),
            deficit: BigRational::from_integer(4.into()),
        };
        assert_eq!(g.max_a_k(0, 2, &tight), None);
        let two = LinearSupply {
            rate: BigRational::from_integer(2.into()),
            deficit: BigRational::from_integer(4.into()),
        };
        assert_eq!(g.max_a_k(0, 2, &two), Some(7));
    }
}
