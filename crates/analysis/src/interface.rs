//! Schedulability of a workload on a periodic resource, the minimum budget for a period,
//! and the bandwidth-optimal integer interface (Algorithm 1 of Lee et al., RTAS 2012).
//!
//! Sources:
//! * Lemma 1 (RM, exact for the model; "Lemma 1" in Lee et al. RTAS 2012, restating Shin &
//!   Lee's RM schedulability condition for the periodic resource model, RTSS 2003 / TECS
//!   2008): `(W, Γ, RM)` is schedulable iff `∀i ∃t ∈ (0, p_i]: sbf_Γ(t) ≥ rbf_i(t)`. Here
//!   with `d_i` in place of `p_i` when a deadline is constrained (the same argument), and
//!   with `rbf_i` summed over the tasks before i in the workload's priority order, which
//!   makes it the deadline-monotonic test for [`GuestScheduler::Dm`].
//! * EDF — Shin & Lee's EDF condition (RTSS 2003 / TECS 2008): schedulable iff
//!   `∀t > 0: dbf(t) ≤ sbf_Γ(t)`; the finite horizon and the QPA walk that decides it are in
//!   [`crate::check`].
//! * MinExec, critical time points `CrT_i`, `MaxResPeriod` (Theorem 1) and Algorithm 1 —
//!   J. Lee, S. Xi, S. Chen, L. T. X. Phan, C. Gill, I. Lee, C. Lu, O. Sokolsky, "Realizing
//!   Compositional Scheduling through Virtualization", RTAS 2012, Section IV (computing
//!   optimal integer interfaces). The formulas below are the spec's transcription of them.
//!
//! # Why Theorem 1's bound holds (and why `CrT_i` uses integer `s`)
//! Let `Γ' = (Π, Θ')` be feasible with `κ' = Θ'/Π < 1` and general sbf. As
//! `sbf ≤ usbf(t) = κ'(t − s')` with the integer `s' = Π − Θ' = Π(1 − κ')`, Lemma 1 gives
//! for every i a `t` with `κ'(t − s') ≥ rbf_i(t)`; the best such t is an argmin of
//! `rbf_i(t)/(t − s')`, i.e. a member of `CrT_i` (that is why s ranges over integers). So
//! `Π ≤ (κ't − rbf_i(t))/(κ'(1 − κ'))`, and the right side grows with κ' wherever it is
//! positive, so for any `κ ≥ κ'`: `Π ≤ max_{t∈CrT_i} (κt − rbf_i(t))/(κ(1−κ))` for every i.
//! Hence no interface at least as good as the current best has a larger period than
//! `MaxResPeriod(κ, W)`.
//!
//! # κ = 1
//! `MaxResPeriod` divides by `κ(1 − κ)`. When `MinExec(Π₀) = Π₀` at some `Π₀ ≥ max_i d_i`
//! (Algorithm 1 starts at `Π₀ = p_n`), **no** interface with `Θ < Π` passes Lemma 1 with the
//! general sbf: any such sbf satisfies `sbf(t) ≤ max(0, t − 2(Π − Θ)) ≤ max(0, t − 2)`, and
//! `max(0, t − 2)` is exactly `sbf` of `(Π₀, Π₀ − 1)` on `[0, Π₀]`, which already fails.
//! Every feasible general interface therefore has bandwidth 1, and the tie rule (smaller
//! period wins) makes `(Π_min, Π_min)` optimal (`(1, 1)` without a range). In `Auto` mode the
//! harmonic periods (divisors of the period gcd) are still searched, since the harmonic form
//! can do better (e.g. W = {(2,1)} → (2,1)). [`max_res_period`] itself returns `None` for
//! κ = 1.
//!
//! # Plateaus: skipping periods exactly
//! With the general sbf and a fixed Θ, supply falls as Π grows: the worst-case pattern is a
//! blackout of `2(Π − Θ)`, then Θ on and `Π − Θ` off in turn, and one more unit of Π adds two
//! units of blackout and one to every gap while every burst stays Θ long, so every later
//! unit of supply comes later: `sbf_(Π+1,Θ)(t) ≤ sbf_(Π,Θ)(t)` for all t. Both tests compare
//! demand with sbf, so a Θ that passes at Π passes at every smaller Π ≥ Θ, and MinExec is
//! non-decreasing in Π. Hence if `MinExec(Π) = Θ` and Θ still passes up to `Π'`, every period
//! in `(Π, Π']` has MinExec exactly Θ and a bandwidth above `Θ/Π'`: Algorithm 1 can jump
//! from Π to Π' (found by galloping and bisection) without changing its answer. This is
//! what keeps a domain with one long-period task (whose every period improves on the last)
//! from visiting millions of periods. Harmonic periods (`Auto`) are not on the plateau and
//! are never jumped over.
//!
//! # Ties
//! Between interfaces of equal bandwidth the **smaller period** wins (it also has the
//! smaller budget, and a shorter blackout).

use std::borrow::Cow;
use std::cell::{Cell, OnceCell};
use std::cmp::Ordering;

use num_bigint::BigUint;
use num_traits::{ToPrimitive, Zero};
use serde::Serialize;

use crate::check::{self, Outcome, Steps, Supply};
use crate::demand::rm_test_points;
use crate::error::InterfaceError;
use crate::prm::{sbf, Interface, SbfMode, SupplyForm};
use crate::ratio::{gcd, Ratio};
use crate::workload::{Workload, MAX_TIME};

/// The scheduler inside the component (the guest OS scheduler).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub enum GuestScheduler {
    /// Rate monotonic (fixed priority by period, ties by declaration order); Lemma 1.
    #[default]
    Rm,
    /// Deadline monotonic (fixed priority by relative deadline, ties by period, then
    /// declaration order); Lemma 1 with the tasks in that order. The same as `Rm` for
    /// implicit deadlines.
    Dm,
    /// Earliest deadline first; dbf ≤ sbf.
    Edf,
}

impl GuestScheduler {
    /// Rm and Dm: a fixed priority per task, and Lemma 1.
    pub fn is_fixed_priority(self) -> bool {
        matches!(self, GuestScheduler::Rm | GuestScheduler::Dm)
    }
}

/// Allowed interface periods `[min, max]` (like CARTS's `min_period`/`max_period`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PeriodRange {
    /// Smallest allowed period (≥ 1).
    pub min: u64,
    /// Largest allowed period; `None` = unbounded (the search bound then comes from the
    /// theory, see [`optimal_interface`]).
    pub max: Option<u64>,
}

impl Default for PeriodRange {
    fn default() -> Self {
        PeriodRange { min: 1, max: None }
    }
}

impl PeriodRange {
    /// `[min, max]`.
    pub fn new(min: u64, max: u64) -> PeriodRange {
        PeriodRange {
            min,
            max: Some(max),
        }
    }
}

/// Options of the interface search.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SearchOptions {
    /// Which sbf may be used.
    pub mode: SbfMode,
    /// The component's scheduler.
    pub guest: GuestScheduler,
    /// Allowed periods.
    pub periods: PeriodRange,
}

/// Result of [`optimal_interface`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct OptimalInterface {
    /// The bandwidth-optimal integer interface (ties → smaller period).
    pub interface: Interface,
    /// True when the search provably covered every period that could beat the answer.
    /// False only (a) for EDF when no interface of bandwidth < 1 exists among the periods
    /// searched without an explicit `max` (see [`EDF_FALLBACK_FACTOR`]), or (b) when some
    /// candidate budget's exact test needed more than [`MAX_TEST_STEPS`] and was
    /// conservatively rejected (the interface found is still sound).
    pub proven_optimal: bool,
    /// The largest period the search examined.
    pub search_limit: u64,
    /// How many periods had `MinExec` evaluated (for benchmarking and curiosity).
    pub periods_evaluated: u64,
    /// Steps of exact analysis spent (see [`MAX_SEARCH_STEPS`]).
    pub steps: u64,
}

/// EDF with κ = 1 at `Π₀ = p_n` and no explicit `max` period: periods up to
/// `EDF_FALLBACK_FACTOR · p_n` are searched for an interface of bandwidth < 1 (our
/// EDF analogue of Theorem 1, [`max_res_period_edf`], needs κ < 1 to bound the search).
pub const EDF_FALLBACK_FACTOR: u64 = 4;

/// The most steps (task terms evaluated) one exact test of one `(Π, Θ)` may take — Lemma 1's
/// fixed point or EDF's QPA walk ([`crate::check`]). Past it the candidate is rejected
/// (conservatively) and the result is marked not proven optimal. Typical tests take tens to
/// thousands; this is reached only when the interface's bandwidth is within a hair of the
/// workload's utilisation over a very long horizon.
pub const MAX_TEST_STEPS: u64 = 1 << 22;

/// The most steps one query ([`optimal_interface`], [`min_exec`], a given interface's check)
/// may take in all, counting one per period visited and every test's steps. Past it the
/// query stops with [`InterfaceError::AnalysisLimit`]: about a second of work, reached only
/// when the periods span many orders of magnitude of the time unit and no small period
/// serves the workload (or a period range asks for an exhaustive search of billions of
/// periods).
pub const MAX_SEARCH_STEPS: u64 = 1 << 27;

/// Lemma 1 test points `(t, rbf_i(t))` are kept in memory for a task with at most this many
/// (scanned, they are the fastest test for small workloads); tasks with more use the fixed
/// point of [`crate::check`], which allocates nothing.
const MAX_POINTS_PER_TASK: u64 = 1 << 12;

/// At most this many test points in memory over all tasks.
const MAX_POINTS: u64 = 1 << 18;

/// `CrT_i` is computed exactly while `Σ_i d_i · |test points of i|` (the cost of the sweeps
/// over `s`) stays within this; otherwise `MaxResPeriod` uses a looser, still valid, term for task
/// i (see [`InterfaceAnalyzer::max_res_period`]).
const MAX_CRITICAL_WORK: u64 = 1 << 24;

/// `MaxResPeriod` for EDF minimises over at most this many dbf steps (any subset gives a
/// valid bound; the smallest t matter most).
const MAX_PROBE_POINTS: u64 = 1 << 16;

/// The EDF test looks at this many of the first dbf steps before its QPA walk.
const EARLY_STEPS: usize = 8;

/// No EDF horizon beyond this is walked (`dbf` and `sbf` stay far inside `u64`).
const MAX_HORIZON: u64 = 1 << 60;

/// Per task, `(t, rbf_i(t))` pairs (test points or critical points), where kept.
type PointsPerTask = Vec<Option<Vec<(u64, u64)>>>;

/// Why a capped MinExec found nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MinExecFailure {
    /// Every Θ ≤ cap fails (Θ = Π may still pass).
    AboveCap,
    /// Even Θ = Π fails for this task (priority index).
    Unschedulable(usize),
    /// The test at Θ = Π could not be decided within [`MAX_TEST_STEPS`].
    TooLong,
}

/// The verdict of a workload's test on one interface.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// Lemma 1 (fixed priority) or dbf ≤ sbf (EDF) holds.
    Schedulable,
    /// It does not; the task (priority index in the analyzer's workload) that fails —
    /// for EDF the task with a deadline at the first instant where demand exceeds supply,
    /// or the last task when the long-run rate alone fails.
    Fails {
        /// Priority index (RM or DM order) of the failing task.
        task: usize,
    },
    /// The exact test needed more than [`MAX_TEST_STEPS`] (or the query's
    /// [`MAX_SEARCH_STEPS`]): not shown either way. `task` is the first task not shown.
    Undecided {
        /// Priority index of the task whose test was cut short.
        task: usize,
    },
}

/// Precomputed per-workload data for repeated interface queries (test points, critical
/// time points, EDF constants), and the step count of the current query. The free
/// functions of this module construct one per call; construct it yourself to amortise.
///
/// Nothing here is allocated in proportion to a ratio of periods: test points are kept
/// only for tasks with few of them (see [`crate::check`] for the tests that need none).
#[derive(Debug)]
pub struct InterfaceAnalyzer<'w> {
    workload: Cow<'w, Workload>,
    guest: GuestScheduler,
    period_gcd: u64,
    /// Fixed priority: Lemma 1 test points `(t, rbf_i(t))` per task, ascending, for tasks
    /// with few of them.
    rm_points: PointsPerTask,
    /// Fixed priority: `CrT_i` with `rbf_i` at each point, where computed exactly.
    critical: OnceCell<PointsPerTask>,
    edf: Option<EdfData>,
    /// Task to check first (the last one that failed): most candidate budgets fail on the
    /// same task, and checking it first turns the others' scans into early exits.
    hint: Cell<usize>,
    /// Set when a test was undecided (see [`MAX_TEST_STEPS`]).
    inexact: Cell<bool>,
    /// Steps spent by the current query (see [`MAX_SEARCH_STEPS`]).
    spent: Cell<u64>,
}

#[derive(Debug)]
struct EdfData {
    /// `U = utilization / common`.
    utilization: BigUint,
    /// `carry / common = Σ (p_i − d_i)·e_i/p_i`: `dbf(t) ≤ U·t + carry` for all t ≥ 0.
    carry: BigUint,
    /// The lcm of the periods: one denominator for both, so that no test reduces a big
    /// fraction (a gcd of numbers with thousands of digits) — only multiplies by `u64`s.
    common: BigUint,
    /// `(t, dbf(t))` at the first dbf steps up to `p_n + d_max` (at most
    /// [`MAX_PROBE_POINTS`]), for the EDF period bound.
    probe_points: Vec<(u64, u64)>,
}

impl<'w> InterfaceAnalyzer<'w> {
    /// Precomputes test points for `w` under `guest` (for `Dm`, the workload is taken in
    /// deadline-monotonic order; see [`Workload::deadline_monotonic`]).
    pub fn new(workload: &'w Workload, guest: GuestScheduler) -> InterfaceAnalyzer<'w> {
        let workload = match guest {
            GuestScheduler::Dm => Cow::Owned(workload.deadline_monotonic()),
            GuestScheduler::Rm | GuestScheduler::Edf => Cow::Borrowed(workload),
        };
        let rm_points = if guest.is_fixed_priority() {
            test_points_within_limits(&workload)
        } else {
            Vec::new()
        };
        let edf = (guest == GuestScheduler::Edf).then(|| EdfData::new(&workload));
        InterfaceAnalyzer {
            period_gcd: workload.period_gcd(),
            workload,
            guest,
            rm_points,
            critical: OnceCell::new(),
            edf,
            hint: Cell::new(0),
            inexact: Cell::new(false),
            spent: Cell::new(0),
        }
    }

    /// The workload analysed, in the priority order the indices of this analyzer refer to
    /// (deadline-monotonic for `Dm`, as given otherwise).
    pub fn workload(&self) -> &Workload {
        &self.workload
    }

    /// The sbf form `mode` uses at `period` (harmonic only where Π divides every period).
    pub fn form(&self, mode: SbfMode, period: u64) -> SupplyForm {
        match mode {
            SbfMode::Auto if self.period_gcd.checked_rem(period) == Some(0) => SupplyForm::Harmonic,
            _ => SupplyForm::General,
        }
    }

    /// Is the workload schedulable on `(Π, Θ)` with the sbf `form`? (Lemma 1 for fixed
    /// priorities, the dbf test for EDF; an undecided test counts as "no".)
    pub fn is_schedulable(&self, interface: Interface, form: SupplyForm) -> bool {
        self.verdict(interface, form) == Verdict::Schedulable
    }

    /// `None` if schedulable on `interface`, else the priority index of a failing (or
    /// undecided) task.
    pub fn first_failure(&self, interface: Interface, form: SupplyForm) -> Option<usize> {
        match self.verdict(interface, form) {
            Verdict::Schedulable => None,
            Verdict::Fails { task } | Verdict::Undecided { task } => Some(task),
        }
    }

    /// The workload's test on `interface` with the sbf `form`, in at most
    /// [`MAX_SEARCH_STEPS`] steps.
    pub fn verdict(&self, interface: Interface, form: SupplyForm) -> Verdict {
        self.spent.set(0);
        let Interface { period, budget } = interface;
        if self.guest.is_fixed_priority() {
            for i in 0..self.workload.len() {
                match self.fp_task_passes(i, period, budget, form) {
                    Outcome::Pass => {}
                    Outcome::Fail(()) => return Verdict::Fails { task: i },
                    Outcome::Undecided => return Verdict::Undecided { task: i },
                }
            }
            Verdict::Schedulable
        } else {
            match self.edf_check(period, budget, form, true) {
                Outcome::Pass => Verdict::Schedulable,
                Outcome::Fail(task) => Verdict::Fails { task },
                Outcome::Undecided => Verdict::Undecided {
                    task: self.workload.len() - 1,
                },
            }
        }
    }

    /// Lemma 1 for the task at priority index `i` alone on `interface` (fixed-priority
    /// guests): `Some(true)` if some `t ≤ d_i` has `sbf(t) ≥ rbf_i(t)`, `Some(false)` if none
    /// has, `None` if that could not be decided within [`MAX_TEST_STEPS`].
    pub fn lemma1_holds(&self, i: usize, interface: Interface, form: SupplyForm) -> Option<bool> {
        self.spent.set(0);
        match self.fp_task_passes(i, interface.period, interface.budget, form) {
            Outcome::Pass => Some(true),
            Outcome::Fail(()) => Some(false),
            Outcome::Undecided => None,
        }
    }

    /// True once the current query has spent its [`MAX_SEARCH_STEPS`].
    fn exhausted(&self) -> bool {
        self.spent.get() > MAX_SEARCH_STEPS
    }

    /// Runs `test` with a fresh [`MAX_TEST_STEPS`] allowance (less if the query's budget is
    /// nearly spent) and charges what it used to the query.
    fn metered<T: PartialEq>(&self, test: impl FnOnce(&mut Steps) -> Outcome<T>) -> Outcome<T> {
        let left = MAX_SEARCH_STEPS.saturating_sub(self.spent.get());
        if left == 0 {
            return self.undecided();
        }
        let mut steps = Steps::new(MAX_TEST_STEPS.min(left));
        let outcome = test(&mut steps);
        self.spent
            .set(self.spent.get().saturating_add(steps.used.max(1)));
        if outcome == Outcome::Undecided {
            self.inexact.set(true);
        }
        outcome
    }

    /// A test cut short: the result is no longer proven optimal.
    fn undecided<T>(&self) -> Outcome<T> {
        self.inexact.set(true);
        Outcome::Undecided
    }

    /// Lemma 1 for one task: `∃ t ∈ (0, d_i]: sbf(t) ≥ rbf_i(t)`. Over the stored test points
    /// (scanned from the largest t down: supply accumulates, so late points pass most often)
    /// when the task has them, by the fixed point of [`crate::check`] otherwise.
    fn fp_task_passes(&self, i: usize, period: u64, budget: u64, form: SupplyForm) -> Outcome<()> {
        match &self.rm_points[i] {
            Some(points) => self.metered(|steps| {
                let mut scanned = 0;
                let passes = points.iter().rev().any(|&(t, demand)| {
                    scanned += 1;
                    sbf(form, period, budget, t) >= demand
                });
                steps.used = scanned;
                if passes {
                    Outcome::Pass
                } else {
                    Outcome::Fail(())
                }
            }),
            None => {
                let supply = Supply::Periodic {
                    form,
                    period,
                    budget,
                };
                self.metered(|steps| {
                    check::lemma1(
                        self.workload.interfering(i),
                        self.workload.tasks()[i].deadline,
                        supply,
                        steps,
                    )
                })
            }
        }
    }

    /// MinExec(Π) restricted to `Θ ≤ cap`: the smallest Θ in `[1, cap]` that passes.
    fn min_exec_capped(
        &self,
        period: u64,
        form: SupplyForm,
        cap: u64,
    ) -> Result<u64, MinExecFailure> {
        debug_assert!(cap >= 1 && cap <= period);
        if self.guest.is_fixed_priority() {
            self.fp_min_exec_capped(period, form, cap)
        } else {
            self.edf_min_exec_capped(period, form, cap)
        }
    }

    /// Fixed-priority MinExec. Lemma 1 is a conjunction over tasks of conditions each
    /// monotone in Θ, so MinExec = max_i (smallest Θ passing task i). Visit tasks once,
    /// raising Θ by bisection only when the current Θ fails a task. An undecided test counts
    /// as a failure (the safe side).
    fn fp_min_exec_capped(
        &self,
        period: u64,
        form: SupplyForm,
        cap: u64,
    ) -> Result<u64, MinExecFailure> {
        let n = self.workload.len();
        let first = self.hint.get().min(n - 1);
        let order = std::iter::once(first).chain((0..n).filter(|&i| i != first));
        let mut theta = 1;
        for i in order {
            if self.fp_task_passes(i, period, theta, form) == Outcome::Pass {
                continue;
            }
            match self.fp_task_passes(i, period, cap, form) {
                Outcome::Pass => {}
                Outcome::Fail(()) => {
                    self.hint.set(i);
                    return Err(if cap == period {
                        MinExecFailure::Unschedulable(i)
                    } else {
                        MinExecFailure::AboveCap
                    });
                }
                Outcome::Undecided => {
                    return Err(if cap == period {
                        MinExecFailure::TooLong
                    } else {
                        MinExecFailure::AboveCap
                    });
                }
            }
            let (mut low, mut high) = (theta + 1, cap); // high passes, theta fails
            while low < high {
                let mid = low + (high - low) / 2;
                if self.fp_task_passes(i, period, mid, form) == Outcome::Pass {
                    high = mid;
                } else {
                    low = mid + 1;
                }
            }
            theta = high;
        }
        Ok(theta)
    }

    /// EDF MinExec by bisection (the dbf test is monotone in Θ because sbf is).
    fn edf_min_exec_capped(
        &self,
        period: u64,
        form: SupplyForm,
        cap: u64,
    ) -> Result<u64, MinExecFailure> {
        match self.edf_check(period, cap, form, cap == period) {
            Outcome::Pass => {}
            Outcome::Fail(i) if cap == period => return Err(MinExecFailure::Unschedulable(i)),
            Outcome::Undecided if cap == period => return Err(MinExecFailure::TooLong),
            _ => return Err(MinExecFailure::AboveCap),
        }
        let (mut low, mut high) = (1, cap);
        while low < high {
            let mid = low + (high - low) / 2;
            if self.edf_check(period, mid, form, false) == Outcome::Pass {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        Ok(high)
    }

    /// The exact EDF test `∀t > 0: dbf(t) ≤ sbf(t)` (Shin & Lee's EDF condition): the
    /// horizon of [`crate::check`] (utilisation bound for κ > U, an immediate verdict or the
    /// busy period on the resource's grid for κ = U), then QPA down from it. `Fail` gives
    /// the priority index of a task due at the violation found (the first violation when
    /// `name_first`), or the last task when the long-run rate alone fails.
    fn edf_check(
        &self,
        period: u64,
        budget: u64,
        form: SupplyForm,
        name_first: bool,
    ) -> Outcome<usize> {
        let data = self.edf.as_ref().expect("EDF data");
        let tasks = self.workload.tasks();
        let last = tasks.len() - 1;
        if budget == 0 {
            return Outcome::Fail(0);
        }
        let supply = Supply::Periodic {
            form,
            period,
            budget,
        };
        // κ = Θ/Π against U = N/L: Θ·L against N·Π.
        let supply_rate = &data.common * budget;
        let demand_rate = &data.utilization * period;
        // Inclusive horizon.
        let horizon: u64 = match supply_rate.cmp(&demand_rate) {
            Ordering::Less => return Outcome::Fail(last),
            Ordering::Greater => {
                // (carry + 2κ(Π − Θ)) / (κ − U), times L·Π above and below:
                // (M·Π + 2Θ(Π − Θ)·L) / (Θ·L − N·Π).
                let above = &data.carry * period
                    + &data.common * (2 * budget as u128 * (period - budget) as u128);
                let below = &supply_rate - &demand_rate;
                match ceil_div(&above, &below).to_u64() {
                    Some(b) if b <= MAX_HORIZON => b.saturating_sub(1),
                    _ => return self.undecided(),
                }
            }
            // κ = U < 1 with the general sbf fails at every multiple of the hyperperiod.
            Ordering::Equal if budget < period && form == SupplyForm::General => {
                return Outcome::Fail(last)
            }
            Ordering::Equal => {
                // The busy period's "witness" is its length.
                let found = self.metered(|steps| {
                    check::busy_period_on_grid(tasks, period, budget, MAX_HORIZON, steps)
                        .map_or(Outcome::Undecided, Outcome::Fail)
                });
                match found {
                    Outcome::Fail(length) => length,
                    _ => return Outcome::Undecided,
                }
            }
        };
        let found = self.metered(|steps| {
            // The first few deadlines first (cheap, and where most failing candidates fail),
            // then QPA over the whole horizon.
            match check::early_violation(tasks, supply, horizon, EARLY_STEPS, steps) {
                Some(t) => Outcome::Fail(t),
                None => check::qpa(tasks, supply, horizon, steps),
            }
        });
        match found {
            Outcome::Pass => Outcome::Pass,
            Outcome::Undecided => Outcome::Undecided,
            Outcome::Fail(mut t) => {
                if name_first {
                    let mut steps = Steps::new(MAX_TEST_STEPS);
                    t = check::earliest_violation(tasks, supply, t, &mut steps);
                }
                Outcome::Fail(check::task_due_at(tasks, t))
            }
        }
    }

    /// EDF: is `dbf(t) > max(0, t − 2)` for some t? Every general sbf with `Θ < Π` lies
    /// below `max(0, t − 2(Π − Θ)) ≤ max(0, t − 2)`, so `Some(true)` proves that no interface
    /// with `Θ < Π` (general form) is EDF-feasible. Checked by QPA against `max(0, t − 2)` up
    /// to `(Σ(p_i − d_i)U_i + 2)/(1 − U)`, beyond which `U·t + Σ(p_i − d_i)U_i ≤ t − 2`.
    /// `None` if undecided within [`MAX_TEST_STEPS`].
    fn edf_exceeds_blackout_two(&self) -> Option<bool> {
        let data = self.edf.as_ref()?;
        let horizon = match data.utilization.cmp(&data.common) {
            // U ≥ 1: dbf(k·H) = k·H·U > k·H − 2.
            Ordering::Equal | Ordering::Greater => return Some(true),
            // (carry + 2)/(1 − U) = (M + 2L)/(L − N).
            Ordering::Less => ceil_div(
                &(&data.carry + &data.common * 2u32),
                &(&data.common - &data.utilization),
            )
            .to_u64()
            .filter(|&b| b <= MAX_HORIZON)?,
        };
        let tasks = self.workload.tasks();
        match self.metered(|steps| check::qpa(tasks, Supply::Delayed(2), horizon, steps)) {
            Outcome::Pass => Some(false),
            Outcome::Fail(_) => Some(true),
            Outcome::Undecided => None,
        }
    }

    /// MinExec(Π, W): the smallest integer Θ ∈ [1, Π] with which the workload passes the
    /// test of its guest scheduler on `(Π, Θ)` with the sbf of `mode` (Lee et al. RTAS 2012,
    /// Sec. IV; spec "MinExec"). `Err(Unschedulable)` names the task that fails even with
    /// Θ = Π (a dedicated processor); `Err(AnalysisLimit)` when the tests needed more than
    /// [`MAX_SEARCH_STEPS`] in all.
    pub fn min_exec(&self, period: u64, mode: SbfMode) -> Result<u64, InterfaceError> {
        self.min_exec_with_form(period, self.form(mode, period))
    }

    /// MinExec with an explicitly chosen sbf form. `SupplyForm::Harmonic` at a period that
    /// does not divide every task period is **unsound**; this exists to demonstrate that
    /// (spec check: W = {(25,3),(50,5),(100,4)} at Π = 11 would claim Θ = 3).
    pub fn min_exec_with_form(&self, period: u64, form: SupplyForm) -> Result<u64, InterfaceError> {
        if period == 0 || period > MAX_TIME {
            return Err(InterfaceError::InvalidInterface { period, budget: 0 });
        }
        self.spent.set(0);
        let found = self
            .min_exec_capped(period, form, period)
            .map_err(|failure| self.to_error(failure))?;
        if self.exhausted() {
            return Err(self.limit_error("the minimum budget for one period"));
        }
        Ok(found)
    }

    /// Error for a MinExec run whose cap was Π (so `AboveCap` cannot occur).
    fn to_error(&self, failure: MinExecFailure) -> InterfaceError {
        match failure {
            MinExecFailure::Unschedulable(i) => InterfaceError::Unschedulable {
                task_index: self.workload.declaration_index(i),
                task: self.workload.tasks()[i],
            },
            MinExecFailure::AboveCap => unreachable!("MinExec capped at Π reports Unschedulable"),
            MinExecFailure::TooLong if self.exhausted() => {
                self.limit_error("the test on a dedicated processor")
            }
            MinExecFailure::TooLong => InterfaceError::AnalysisLimit {
                what: "the test on a dedicated processor",
                limit: MAX_TEST_STEPS,
            },
        }
    }

    fn limit_error(&self, what: &'static str) -> InterfaceError {
        InterfaceError::AnalysisLimit {
            what,
            limit: MAX_SEARCH_STEPS,
        }
    }

    /// `CrT_i` with `rbf_i` at each point (fixed priority only), computed once, for the tasks
    /// where that is cheap (see [`MAX_CRITICAL_WORK`]).
    fn critical(&self) -> &PointsPerTask {
        self.critical.get_or_init(|| {
            let mut spent = 0u64;
            self.rm_points
                .iter()
                .zip(self.workload.tasks())
                .map(|(points, task)| {
                    let points = points.as_ref()?;
                    let work = task.deadline.saturating_mul(points.len() as u64);
                    if spent.saturating_add(work) > MAX_CRITICAL_WORK {
                        return None;
                    }
                    spent += work;
                    Some(
                        critical_points_from(points, task.deadline)
                            .into_iter()
                            .map(|index| points[index])
                            .collect(),
                    )
                })
                .collect()
        })
    }

    /// `CrT_i` for the task at priority index `i` (fixed-priority guests only; empty for
    /// EDF). Exact; allocates one entry per Lemma 1 test point of the task.
    pub fn critical_time_points(&self, i: usize) -> Vec<u64> {
        if !self.guest.is_fixed_priority() {
            return Vec::new();
        }
        match &self.critical()[i] {
            Some(points) => points.iter().map(|&(t, _)| t).collect(),
            None => critical_time_points(&self.workload, i),
        }
    }

    /// `MaxResPeriod(κ, W)`; `None` unless `0 < κ < 1`. See [`max_res_period`].
    ///
    /// For fixed priorities, task i's term is `max_{t∈CrT_i} (κt − rbf_i(t))` where `CrT_i`
    /// is cheap to compute; elsewhere it is replaced by `κ·d_i − Σ_{k≤i} e_k`, which is at
    /// least as large (`rbf_i(t) ≥ Σ_{k≤i} e_k` for every `t > 0`, and `t ≤ d_i`), so each
    /// term, and their minimum, still bounds the period (Theorem 1's proof bounds Π by every
    /// task's term). Exact whenever every `CrT_i` is.
    pub fn max_res_period(&self, kappa: Ratio) -> Option<u64> {
        let (a, b) = (kappa.numer(), kappa.denom());
        if a == 0 || a >= b {
            return None;
        }
        // Numerators of (κt − demand)·b: |a·t| ≤ 2^104, demand·b ≤ 2^124 at worst.
        let scaled = |t: u64, demand: u64| a as i128 * t as i128 - demand as i128 * b as i128;
        if self.guest.is_fixed_priority() {
            let tasks = self.workload.tasks();
            let mut total = 0u64;
            let per_task = self.critical().iter().enumerate().map(|(i, points)| {
                total = total.saturating_add(tasks[i].wcet);
                match points {
                    Some(points) => points
                        .iter()
                        .map(|&(t, demand)| scaled(t, demand))
                        .max()
                        .unwrap_or(i128::MIN),
                    None => scaled(tasks[i].deadline, total),
                }
            });
            Some(period_bound(a, b, per_task.min().unwrap_or(i128::MIN)))
        } else {
            let data = self.edf.as_ref().expect("EDF data");
            let worst = data
                .probe_points
                .iter()
                .map(|&(t, demand)| scaled(t, demand))
                .min()
                .unwrap_or(i128::MAX);
            Some(period_bound(a, b, worst))
        }
    }

    /// The largest period `Π' ∈ [period, ceiling]` at which budget Θ still passes with the
    /// general sbf, given that it passes at `period`: by galloping then bisection, which is
    /// exact because passing is monotone in Π for a fixed Θ (module docs). A test cut short
    /// counts as failing (the loop then simply continues from there).
    fn last_period_passing(&self, period: u64, budget: u64, ceiling: u64) -> u64 {
        let passes = |candidate: u64| {
            let interface = Interface::new(candidate, budget);
            if self.guest.is_fixed_priority() {
                (0..self.workload.len()).all(|i| {
                    self.fp_task_passes(i, candidate, budget, SupplyForm::General) == Outcome::Pass
                })
            } else {
                self.edf_check(interface.period, budget, SupplyForm::General, false)
                    == Outcome::Pass
            }
        };
        let (mut good, mut stride) = (period, 1u64);
        let mut bad = loop {
            let Some(candidate) = good.checked_add(stride).filter(|&c| c <= ceiling) else {
                break ceiling.saturating_add(1);
            };
            if self.exhausted() || !passes(candidate) {
                break candidate;
            }
            good = candidate;
            stride = stride.saturating_mul(2);
        };
        // good passes, bad fails (or lies beyond the ceiling).
        while bad - good > 1 && !self.exhausted() {
            let mid = good + (bad - good) / 2;
            if passes(mid) {
                good = mid;
            } else {
                bad = mid;
            }
        }
        good
    }

    /// Algorithm 1 (Lee et al., RTAS 2012), extended with a period range, `Auto` harmonic
    /// periods and EDF. See [`optimal_interface`].
    pub fn optimal(
        &self,
        mode: SbfMode,
        range: PeriodRange,
    ) -> Result<OptimalInterface, InterfaceError> {
        let low = range.min;
        let high = range.max.unwrap_or(MAX_TIME).min(MAX_TIME);
        if low == 0 || low > high {
            return Err(InterfaceError::InvalidPeriodRange {
                min: low,
                max: range.max.unwrap_or(u64::MAX),
            });
        }
        self.inexact.set(false);
        self.spent.set(0);
        let p_n = self.workload.max_period();
        // Step 1: Θ' = MinExec(p_n); κ = Θ'/p_n (p_n clamped into the range).
        let start = p_n.clamp(low, high);
        let start_budget = self
            .min_exec_capped(start, self.form(mode, start), start)
            .map_err(|failure| self.to_error(failure))?;
        let mut best = Interface::new(start, start_budget);
        let mut evaluated = 1u64;
        let mut proven = true;
        let bound = |best: Interface| -> Option<u64> { self.max_res_period(best.bandwidth()) };
        let mut limit = if start_budget < start {
            bound(best).unwrap_or(high).min(high)
        } else {
            match self.guest {
                // κ = 1: see the module docs. With start ≥ every deadline, no general
                // interface beats bandwidth 1, and (low, low) is the tie-break winner.
                GuestScheduler::Rm | GuestScheduler::Dm
                    if start >= self.workload.max_deadline() =>
                {
                    best = Interface::new(low, low);
                    low
                }
                GuestScheduler::Rm | GuestScheduler::Dm => high,
                // Same argument for EDF: every general sbf with Θ < Π is ≤ max(0, t − 2), so
                // if dbf exceeds that somewhere, only bandwidth 1 is feasible.
                GuestScheduler::Edf if self.edf_exceeds_blackout_two() == Some(true) => {
                    best = Interface::new(low, low);
                    low
                }
                GuestScheduler::Edf => match range.max {
                    Some(_) => high,
                    None => {
                        let fallback = p_n.saturating_mul(EDF_FALLBACK_FACTOR).min(high);
                        proven = fallback >= high;
                        fallback
                    }
                },
            }
        };
        // Divisors of the period gcd: where Auto uses the harmonic form, for which Theorem 1
        // (built on the general form's usbf) gives no bound. They are all ≤ p_1.
        let harmonic_periods: Vec<u64> = match mode {
            SbfMode::Auto => divisors(self.period_gcd)
                .into_iter()
                .filter(|&d| d >= low && d <= high)
                .collect(),
            SbfMode::General => Vec::new(),
        };
        let mut last_visited = start;
        // Step 2: Π = low, low+1, … while Π ≤ Πmax (plus the harmonic periods above Πmax).
        let mut period = low;
        loop {
            if period > limit {
                match harmonic_periods.iter().find(|&&d| d >= period) {
                    Some(&d) => period = d,
                    None => break,
                }
            }
            // One step per period visited, so a long range is bounded like a long test.
            self.spent.set(self.spent.get().saturating_add(1));
            if self.exhausted() {
                return Err(InterfaceError::SearchLimit {
                    limit: MAX_SEARCH_STEPS,
                    searched: period,
                    bound: limit,
                });
            }
            last_visited = last_visited.max(period);
            // The start period was evaluated in step 1 and cannot beat itself or anything
            // that already beat it.
            if period != start {
                if let Some(cap) = budget_cap(period, best) {
                    evaluated += 1;
                    let form = self.form(mode, period);
                    if let Ok(budget) = self.min_exec_capped(period, form, cap) {
                        if form == SupplyForm::General {
                            // MinExec is Θ on the whole plateau up to the last period where Θ
                            // still passes (module docs): skip to it, stopping short of the
                            // next period that uses the harmonic form.
                            let next_harmonic = harmonic_periods
                                .iter()
                                .find(|&&d| d > period)
                                .map_or(u64::MAX, |&d| d - 1);
                            let ceiling = limit.min(high).min(next_harmonic);
                            period = self.last_period_passing(period, budget, ceiling);
                            last_visited = last_visited.max(period);
                        }
                        best = Interface::new(period, budget);
                        if budget < period {
                            if let Some(new_limit) = bound(best) {
                                if !proven || new_limit < limit {
                                    // Once some bandwidth < 1 is found the EDF bound applies
                                    // too, and the fallback search becomes a proven one.
                                    limit = new_limit.min(high);
                                    proven = true;
                                }
                            }
                        }
                    }
                }
            }
            period += 1;
        }
        Ok(OptimalInterface {
            interface: best,
            proven_optimal: proven && !self.inexact.get(),
            search_limit: last_visited,
            periods_evaluated: evaluated,
            steps: self.spent.get(),
        })
    }
}

impl EdfData {
    fn new(workload: &Workload) -> EdfData {
        let tasks = workload.tasks();
        // One pass per task over the digits of the lcm (see `ExactSum` for why not a
        // reduced rational).
        let mut common = BigUint::from(1u32);
        let (mut utilization, mut carry) = (BigUint::zero(), BigUint::zero());
        for task in tasks {
            let remainder = (&common % task.period).to_u64().expect("below the period");
            let factor = task.period / gcd(remainder, task.period);
            if factor > 1 {
                common *= factor;
                utilization *= factor;
                carry *= factor;
            }
            let scale = &common / task.period;
            utilization += &scale * task.wcet;
            carry += &scale * ((task.period - task.deadline) as u128 * task.wcet as u128);
        }
        // The dbf steps up to p_n + d_max, or the first MAX_PROBE_POINTS of them.
        let steps_up_to = |t: u64| -> u64 {
            tasks
                .iter()
                .filter(|task| task.deadline <= t)
                .map(|task| (t - task.deadline) / task.period + 1)
                .fold(0u64, u64::saturating_add)
        };
        let mut horizon = workload.max_period() + workload.max_deadline();
        if steps_up_to(horizon) > MAX_PROBE_POINTS {
            // The largest horizon with at most MAX_PROBE_POINTS steps (steps_up_to grows with
            // t and is 0 below the first deadline).
            let (mut low, mut high) = (0u64, horizon);
            while low < high {
                let mid = low + (high - low).div_ceil(2);
                if steps_up_to(mid) <= MAX_PROBE_POINTS {
                    low = mid;
                } else {
                    high = mid - 1;
                }
            }
            horizon = low;
        }
        let mut steps: Vec<(u64, u64)> = Vec::new();
        for task in tasks {
            let mut t = task.deadline;
            while t <= horizon {
                steps.push((t, task.wcet));
                t += task.period;
            }
        }
        steps.sort_unstable();
        let mut probe_points: Vec<(u64, u64)> = Vec::with_capacity(steps.len());
        let mut demand = 0u64;
        for (t, wcet) in steps {
            demand = demand.saturating_add(wcet);
            match probe_points.last_mut() {
                Some(last) if last.0 == t => last.1 = demand,
                _ => probe_points.push((t, demand)),
            }
        }
        EdfData {
            utilization,
            carry,
            common,
            probe_points,
        }
    }
}

/// Lemma 1 test points per task, for the tasks with at most [`MAX_POINTS_PER_TASK`] of them
/// while the total stays within [`MAX_POINTS`]; `None` for the others. Counting stops early,
/// so this costs at most a few steps per task beyond the points it keeps.
fn test_points_within_limits(workload: &Workload) -> PointsPerTask {
    let tasks = workload.tasks();
    let mut kept = 0u64;
    (0..tasks.len())
        .map(|i| {
            // Beyond this many tasks the count alone would cost more than it saves.
            if i as u64 >= MAX_POINTS_PER_TASK {
                return None;
            }
            let deadline = tasks[i].deadline;
            let mut count = 1u64; // d_i itself
            for task in workload.interfering(i) {
                count = count.saturating_add(deadline / task.period);
                if count > MAX_POINTS_PER_TASK {
                    return None;
                }
            }
            if kept + count > MAX_POINTS {
                return None;
            }
            kept += count;
            Some(rm_test_points(workload, i))
        })
        .collect()
}

/// `⌈a / b⌉` for `b > 0`.
fn ceil_div(a: &BigUint, b: &BigUint) -> BigUint {
    (a + b - 1u32) / b
}

/// `⌊b·m / (a(b − a))⌋` clamped at 0, where `m = a·t − rbf·b` is the numerator of
/// `(κt − rbf)/(κ(1−κ))` scaled by `b` (κ = a/b).
fn period_bound(a: u64, b: u64, m: i128) -> u64 {
    if m <= 0 {
        return 0;
    }
    // m ≤ a·t ≤ 2^80 here, so b·m ≤ 2^120 fits u128.
    let numerator = b as u128 * m as u128;
    let denominator = a as u128 * (b - a) as u128;
    u64::try_from(numerator / denominator).unwrap_or(u64::MAX)
}

/// The largest Θ such that `(period, Θ)` beats `best`: strictly smaller bandwidth, or equal
/// bandwidth and a smaller period. `None` if no Θ ≥ 1 does.
fn budget_cap(period: u64, best: Interface) -> Option<u64> {
    // Θ/period < B/P  ⇔  Θ·P < B·period.
    let scaled = best.budget as u128 * period as u128;
    let denominator = best.period as u128;
    let cap = if period < best.period {
        scaled / denominator // equality allowed
    } else {
        (scaled.saturating_sub(1)) / denominator
    };
    let cap = cap.min(period as u128) as u64;
    (cap >= 1).then_some(cap)
}

/// All divisors of `n` (ascending); empty for 0.
fn divisors(n: u64) -> Vec<u64> {
    if n == 0 {
        return Vec::new();
    }
    let mut small = Vec::new();
    let mut large = Vec::new();
    let mut d = 1;
    while d * d <= n {
        if n.checked_rem(d) == Some(0) {
            small.push(d);
            if d * d != n {
                large.push(n / d);
            }
        }
        d += 1;
    }
    small.extend(large.into_iter().rev());
    small
}

/// Indices into `points` (Lemma 1 test points `(t, rbf_i(t))`, ascending) of `CrT_i`:
/// for each integer `s ∈ [0, d_i)`, every minimiser over `t ∈ (s, d_i]` of `rbf_i(t)/(t − s)`.
///
/// Only test points can minimise: between two of them rbf_i is constant and `t − s` grows.
/// The smallest minimiser is non-decreasing in s (if `t₂ > t₁` is at least as good as `t₁`
/// at s, it stays so for larger s, because `rbf_i(t₂) ≥ rbf_i(t₁)`), so each scan starts
/// at the previous smallest minimiser.
fn critical_points_from(points: &[(u64, u64)], deadline: u64) -> Vec<usize> {
    let mut chosen: Vec<usize> = Vec::new();
    let mut start = 0usize;
    for s in 0..deadline {
        while start < points.len() && points[start].0 <= s {
            start += 1;
        }
        let mut best: Vec<usize> = Vec::new();
        for index in start..points.len() {
            match best.first() {
                None => best.push(index),
                Some(&current) => match compare_density(points[index], points[current], s) {
                    Ordering::Less => {
                        best.clear();
                        best.push(index);
                    }
                    Ordering::Equal => best.push(index),
                    Ordering::Greater => {}
                },
            }
        }
        if let Some(&first) = best.first() {
            start = first;
        }
        chosen.extend(best);
    }
    chosen.sort_unstable();
    chosen.dedup();
    chosen
}

/// Compares `r₁/(t₁ − s)` with `r₂/(t₂ − s)` exactly (both `t > s`).
fn compare_density((t1, r1): (u64, u64), (t2, r2): (u64, u64), s: u64) -> Ordering {
    (r1 as u128 * (t2 - s) as u128).cmp(&(r2 as u128 * (t1 - s) as u128))
}

/// MinExec(Π, W) (Lee et al., RTAS 2012, Sec. IV; spec "MinExec"): the smallest integer
/// `Θ ∈ [1, Π]` with which W passes its guest scheduler's test on `(Π, Θ)` — Lemma 1 for RM
/// (Shin & Lee's RM condition), dbf ≤ sbf for EDF (Shin & Lee's EDF condition) — using the sbf that `mode`
/// allows at Π. `Err(InterfaceError::Unschedulable)` names the task that fails even at
/// `Θ = Π`, i.e. on a dedicated processor.
///
/// ```
/// use rtvmm_analysis::{min_exec, GuestScheduler, SbfMode, Workload};
/// let w = Workload::from_pairs(&[(7, 2), (8, 1), (10, 1)]).unwrap();
/// assert_eq!(min_exec(5, &w, SbfMode::General, GuestScheduler::Rm), Ok(4));
/// ```
pub fn min_exec(
    period: u64,
    w: &Workload,
    mode: SbfMode,
    guest: GuestScheduler,
) -> Result<u64, InterfaceError> {
    InterfaceAnalyzer::new(w, guest).min_exec(period, mode)
}

/// Lemma 1 (RM): is `w` schedulable on `interface` with the sbf `form`? Evaluated at the
/// test points of [`rm_test_points`]. `Err(i)` gives the RM index of
/// the first task for which no t works.
pub fn rm_schedulable(w: &Workload, interface: Interface, form: SupplyForm) -> Result<(), usize> {
    match InterfaceAnalyzer::new(w, GuestScheduler::Rm).first_failure(interface, form) {
        None => Ok(()),
        Some(i) => Err(i),
    }
}

/// The EDF condition `∀t > 0: dbf(t) ≤ sbf(t)` (Shin & Lee), decided exactly by QPA on the
/// horizon of [`crate::check`]. `false` also when that takes more than [`MAX_TEST_STEPS`]
/// steps (conservative).
pub fn edf_schedulable(w: &Workload, interface: Interface, form: SupplyForm) -> bool {
    InterfaceAnalyzer::new(w, GuestScheduler::Edf).is_schedulable(interface, form)
}

/// Critical time points `CrT_i` of the task at RM position `i` (0-based) — Lee et al.,
/// RTAS 2012, Sec. IV (used by Theorem 1): `{ argmin_{t ∈ (s, d_i]} rbf_i(t)/(t − s) : s =
/// 0, 1, …, d_i − 1 }` over integer t, keeping every minimiser on ties. Ascending.
pub fn critical_time_points(w: &Workload, i: usize) -> Vec<u64> {
    let points = rm_test_points(w, i);
    critical_points_from(&points, w.tasks()[i].deadline)
        .into_iter()
        .map(|index| points[index].0)
        .collect()
}

/// The minimisers over integer `t ∈ (s, d_i]` of `rbf_i(t)/(t − s)` for one `s` (all of
/// them, ascending). `CrT_i` is the union of these over `s = 0 … d_i − 1`.
pub fn critical_time_points_at(w: &Workload, i: usize, s: u64) -> Vec<u64> {
    let points: Vec<(u64, u64)> = rm_test_points(w, i)
        .into_iter()
        .filter(|&(t, _)| t > s)
        .collect();
    let mut best: Vec<(u64, u64)> = Vec::new();
    for point in points {
        match best.first() {
            None => best.push(point),
            Some(&current) => match compare_density(point, current, s) {
                Ordering::Less => best = vec![point],
                Ordering::Equal => best.push(point),
                Ordering::Greater => {}
            },
        }
    }
    best.into_iter().map(|(t, _)| t).collect()
}

/// The critical time point `X_{i,Π}` of task i for the interface `(Π, Θ)` (Lee et al.,
/// RTAS 2012, Sec. IV): the point of `CrT_i` that the proof of Theorem 1 uses for this
/// interface, namely the minimiser of `rbf_i(t)/(t − s)` with `s = Π − Θ`, the x-intercept
/// of the interface's usbf (`usbf(t) = (Θ/Π)(t − s)`). All minimisers on ties, ascending.
///
/// Worked example (paper, spec): W = {(7,2),(8,1),(10,1)}, i = 2 (1-based, the task (8,1)),
/// Π = 5: MinExec(5) = 4, s = 1, and `X_{2,5} = 7` (`3/6 < 5/7`). For this task the answer is
/// 7 for every s ≤ 5, i.e. for every Θ ≥ 0 at Π = 5, so the example does not depend on which
/// Θ the interface has.
pub fn critical_time_point(w: &Workload, i: usize, interface: Interface) -> Vec<u64> {
    critical_time_points_at(w, i, interface.period - interface.budget)
}

/// `MaxResPeriod(κ, W) = min_i max_{t ∈ CrT_i} (κ·t − rbf_i(t)) / (κ·(1 − κ))`, floored to
/// an integer period and clamped at 0 (Lee et al., RTAS 2012, Theorem 1): no RM-feasible
/// interface with the general sbf and bandwidth ≤ κ has a larger period. Exact (κ = a/b,
/// integer arithmetic). `None` when `κ = 0` or `κ ≥ 1`, where the formula divides by zero;
/// for κ = 1 see the module docs (Algorithm 1 then returns the bandwidth-1 interface with
/// the smallest allowed period, unless `Auto` finds a harmonic interface below 1).
pub fn max_res_period(kappa: Ratio, w: &Workload) -> Option<u64> {
    InterfaceAnalyzer::new(w, GuestScheduler::Rm).max_res_period(kappa)
}

/// The EDF analogue of Theorem 1 (derived here, not in the paper):
/// `min_{t} (κ·t − dbf(t)) / (κ(1 − κ))` over the dbf steps `t ≤ p_n + d_max`.
///
/// Why it is safe: if `(Π, Θ')` with `κ' = Θ'/Π < 1` is EDF-feasible with the general sbf,
/// then for **every** t, `dbf(t) ≤ sbf(t) ≤ usbf(t) = κ'(t − Π(1 − κ'))`, so
/// `Π ≤ (κ't − dbf(t))/(κ'(1 − κ'))` for every t; as for Theorem 1 the right side grows with
/// κ' where it is positive, so any κ ≥ κ' bounds Π too, and a minimum over any subset of
/// t's is still a bound. `None` unless `0 < κ < 1`.
pub fn max_res_period_edf(kappa: Ratio, w: &Workload) -> Option<u64> {
    InterfaceAnalyzer::new(w, GuestScheduler::Edf).max_res_period(kappa)
}

/// The bandwidth-optimal integer interface (Algorithm 1 of Lee et al., RTAS 2012, Sec. IV):
///
/// 1. `Θ' = MinExec(p_n)`, `κ = Θ'/p_n`, `best = (p_n, Θ')`, `Πmax = MaxResPeriod(κ, W)`;
/// 2. for `Π = 1, 2, …` while `Π ≤ Πmax`: `Θ = MinExec(Π)`; if `Θ/Π < κ` then `κ = Θ/Π`,
///    `best = (Π, Θ)`, `Πmax = min(Πmax, MaxResPeriod(κ, W))`;
/// 3. return best.
///
/// Extensions, each keeping the result exact:
/// * **Ties**: equal bandwidth → smaller period wins.
/// * **Period range** `[min, max]`: step 1 uses p_n clamped into the range, step 2 starts at
///   `min` and stops at `min(Πmax, max)`.
/// * **`SbfMode::Auto`**: periods dividing every task period use the harmonic sbf, for which
///   Theorem 1 gives no bound; they are all ≤ p_1 and are searched exhaustively in addition.
/// * **κ = 1** (`MinExec(p_n) = p_n`): see the module docs.
/// * **EDF guests**: `Πmax` comes from [`max_res_period_edf`] (safe, proof there). If κ = 1:
///   when `dbf(t) > t − 2` somewhere, no general interface with `Θ < Π` can work (as for
///   RM) and `(min, min)` is optimal; otherwise, with no `max` given, periods up to
///   `EDF_FALLBACK_FACTOR · p_n` are tried, and if none has bandwidth < 1 the answer has
///   `proven_optimal = false`.
/// * Speed: only budgets that would beat the current best are tried (`MinExec` capped at
///   the largest such Θ), which is what makes most periods a single failed Lemma 1 scan.
///
/// `Err(Unschedulable)` when the workload fails even on a dedicated processor.
///
/// ```
/// use rtvmm_analysis::{optimal_interface, Interface, SearchOptions, SbfMode, Workload};
/// let w = Workload::from_pairs(&[(25, 3), (50, 5), (100, 4)]).unwrap();
/// let general = SearchOptions { mode: SbfMode::General, ..Default::default() };
/// assert_eq!(optimal_interface(&w, &general).unwrap().interface, Interface::new(7, 2));
/// ```
pub fn optimal_interface(
    w: &Workload,
    options: &SearchOptions,
) -> Result<OptimalInterface, InterfaceError> {
    InterfaceAnalyzer::new(w, options.guest).optimal(options.mode, options.periods)
}

/// The interface for a fixed period (spec, "Fixed-period interfaces", e.g. ARINC-653
/// partitions): `(Π, MinExec(Π, W))`. The rounding up of Θ shows as extra overhead.
pub fn fixed_period_interface(
    w: &Workload,
    period: u64,
    mode: SbfMode,
    guest: GuestScheduler,
) -> Result<Interface, InterfaceError> {
    min_exec(period, w, mode, guest).map(|budget| Interface::new(period, budget))
}

/// Slow reference for [`optimal_interface`]: MinExec at every period in
/// `[range.min, min(range.max, up_to)]`, keeping the smallest bandwidth (ties → smaller
/// period). For tests and cross-checks.
pub fn optimal_interface_brute_force(
    w: &Workload,
    options: &SearchOptions,
    up_to: u64,
) -> Result<Interface, InterfaceError> {
    let analyzer = InterfaceAnalyzer::new(w, options.guest);
    let high = options.periods.max.unwrap_or(u64::MAX).min(up_to);
    let mut best: Option<Interface> = None;
    for period in options.periods.min.max(1)..=high {
        let budget = analyzer.min_exec(period, options.mode)?;
        let candidate = Interface::new(period, budget);
        let better = match best {
            None => true,
            Some(current) => candidate.bandwidth() < current.bandwidth(),
        };
        if better {
            best = Some(candidate);
        }
    }
    best.ok_or(InterfaceError::InvalidPeriodRange {
        min: options.periods.min,
        max: high,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn divisors_are_complete() {
        assert_eq!(divisors(12), vec![1, 2, 3, 4, 6, 12]);
        assert_eq!(divisors(25), vec![1, 5, 25]);
        assert_eq!(divisors(1), vec![1]);
    }

    #[test]
    fn budget_cap_respects_tie_rule() {
        let best = Interface::new(10, 4); // 0.4
        assert_eq!(budget_cap(5, best), Some(2)); // 2/5 = 0.4, smaller period: allowed
        assert_eq!(budget_cap(15, best), Some(5)); // 6/15 = 0.4 not allowed, 5/15 < 0.4
        assert_eq!(budget_cap(2, Interface::new(10, 1)), None); // would need Θ < 0.2
    }
}
