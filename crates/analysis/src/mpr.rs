//! The multiprocessor periodic resource (MPR) `⟨Π, Θ, m′⟩`: Θ units of supply every Π, on at
//! most m′ processors at once. Its supply bound function, the global-EDF test of a component
//! under it, the minimum-bandwidth interface over a period range, and the transformation of
//! an interface into m′ periodic VCPUs for the level above.
//!
//! Source: I. Shin, A. Easwaran and I. Lee, "Hierarchical Scheduling Framework for Virtual
//! Clustering of Multiprocessors", ECRTS 2008 (the MPR model, its sbf, Theorem 1 — here in
//! [`crate::gedf`] — and the MPR→task transformation), also in A. Easwaran, I. Shin and I. Lee,
//! "Optimal virtual cluster-based multiprocessor scheduling", Real-Time Systems 43(1), 2009.
//! CARTS computes the same (its `MPR2` model with the published sbf). `docs/analysis.md`,
//! "Many pcpus: MPR and DMPR", places it in rtvmm.
//!
//! # The supply bound (as published)
//! With `α = ⌊Θ/m′⌋`, `β = Θ − m′α` (so Θ = m′α + β, `0 ≤ β < m′`):
//!
//! ```text
//! t′ = t − (Π − ⌈Θ/m′⌉),   x = t′ − Π⌊t′/Π⌋,   y = Π − α
//! sbf(t) = 0                                                     if t′ < 0
//!        = ⌊t′/Π⌋Θ + max(0, m′x − (m′Π − Θ))                     if x ∈ [1, y]
//!        = ⌊t′/Π⌋Θ + max(0, m′x − (m′Π − Θ)) − (m′ − β)          otherwise
//! ```
//!
//! clamped below at 0 (the last line is negative for the first instants; no supply is
//! negative). The worst case it bounds: one period supplies as early as it can (m′
//! processors for α units, β of them one unit longer), the interval starts when that supply
//! ends, and every later period supplies as late as it can.
//!
//! The formula is a lower bound of the true worst case of integer (slot-aligned) supply —
//! checked exhaustively for Π ≤ 8, m′ ≤ 4, every Θ and t in this module's tests against a
//! brute-force minimum over all placements — but not a tight one, and it is **neither
//! monotone in Θ nor in m′** (e.g. `⟨1, 2, 3⟩` supplies 1 by t = 1, `⟨1, 3, 3⟩` supplies 0:
//! with β = 0 the last line subtracts m′ at every period boundary). So the budget search
//! below tries every Θ in order and never bisects. For `m′ = 1` it is Shin & Lee's PRM sbf
//! minus one unit at the instants where `x = 0` or `x > Π − Θ` (the published formula's
//! integer form), so a one-processor MPR interface is at least the PRM one.
//!
//! # A linear bound that holds (proof)
//! The gEDF test needs `sbf(t) ≥ ρ·t − δ` with `ρ = Θ/Π` to bound `A_k` (see
//! [`crate::gedf`]). The paper's `B` term, `δ = ρ(2 + 2(Π − Θ/m′))`, does **not** lie below
//! the published sbf when Θ < m′ (e.g. `⟨2, 1, 4⟩` at t = 7: 3/4 > 0, tested), so rtvmm
//! uses one it proves: write `t′ = qΠ + x`, `x₀ = Π − Θ/m′`. For `x ≤ x₀`,
//! `max(0, m′x − (m′Π − Θ)) ≥ 0 ≥ ρ(x − x₀)`; for `x ≥ x₀` it is `m′(x − x₀) ≥ ρ(x − x₀)` as
//! `ρ ≤ m′`. Hence `sbf(t) ≥ qΘ + ρx − ρx₀ − (m′ − β) = ρt′ − ρx₀ − (m′ − β)`, i.e.
//!
//! ```text
//! δ = ρ·(2Π − ⌈Θ/m′⌉ − Θ/m′) + (m′ − β)
//! ```
//!
//! (for `t′ < 0`, `ρt − δ < 0`). Every `A_k` up to the resulting bound is checked, so the
//! verdict is that of the test over all `A_k ≥ 0`; wherever the paper's bound is valid the
//! verdict is the same as checking up to it (what CARTS does).
//!
//! # The interface search
//! For each period Π of the range: the least m′ from `max(1, ⌈U⌉)` up to a maximum (by
//! default the number of tasks) for which some Θ in `((m′ − 1)Π, m′Π]` passes, and the least
//! such Θ, found by trying every Θ in order from `max((m′ − 1)Π, ⌊UΠ⌋) + 1` (the test needs
//! `Θ/Π > U`). Θ ≤ (m′ − 1)Π is left to `m′ − 1`, as in CARTS, so m′ = ⌈Θ/Π⌉. Over the
//! range, the interface of least bandwidth Θ/Π wins; ties go to the smaller m′, then the
//! smaller Π.
//!
//! # Against CARTS
//! CARTS's `MPR2` model (by default: the published sbf, its fast test) checks `A_k` up to
//! the paper's bound and gives up on a budget whose bound reaches 100,000 units, searches
//! m′ by bisection up to ten times the number of tasks, and answers ⟨Π, Π, 1⟩ without a
//! test when U is exactly 1. rtvmm decides the condition over all `A_k` (above), tries m′ in
//! order, and finds no interface at U = m′ (the theorem needs `U < Θ/Π`). On CARTS's own
//! examples and on generated components (a test pins the examples) the interfaces are the
//! same, as `docs/analysis.md` reports.
//!
//! # From an interface to VCPUs
//! The paper's transformation (Shin, Easwaran & Lee 2008; "Theorem 2" in CARTS's notes, of
//! Easwaran et al. 2009): ⟨Π, Θ, m′⟩ becomes m′ periodic tasks of period Π — with integer Θ,
//! `β` of budget `α + 1` and `m′ − β` of budget α. Scheduled so that each meets its
//! deadlines, they supply at least `sbf` of the MPR: in every period Θ units, never more
//! than m′ at once.

use num_bigint::BigInt;
use num_rational::BigRational;
use serde::Serialize;
use thiserror::Error;

use crate::gedf::{gedf_test, GedfVerdict, GedfWorkload, LinearSupply};
use crate::prm::Interface;
use crate::ratio::Ratio;
use crate::workload::{Workload, MAX_TIME};

/// An invalid MPR (or DMPR) interface, or search request.
#[derive(Clone, Debug, PartialEq, Eq, Error, Serialize)]
pub enum MprError {
    /// `Π = 0` or `Π > MAX_TIME`.
    #[error("invalid period {period} (must be in 1..=2^40)")]
    InvalidPeriod {
        /// The period.
        period: u64,
    },
    /// `m′ = 0`.
    #[error("concurrency m' must be at least 1")]
    ZeroConcurrency,
    /// More processors than [`MAX_CONCURRENCY`].
    #[error("{concurrency} processors exceed the supported maximum {MAX_CONCURRENCY}")]
    TooManyProcessors {
        /// The number asked for.
        concurrency: u64,
    },
    /// `Θ > m′Π`.
    #[error("budget {budget} exceeds the capacity m'·Π = {capacity}")]
    BudgetExceedsCapacity {
        /// Θ.
        budget: u64,
        /// m′Π.
        capacity: u64,
    },
    /// The period range is empty or contains 0.
    #[error("invalid period range {min}..={max}")]
    InvalidPeriodRange {
        /// Lower end.
        min: u64,
        /// Upper end.
        max: u64,
    },
    /// A task has `C > D`: no supply schedules it.
    #[error("task {task_index} cannot meet its deadline even on a dedicated processor")]
    TaskInfeasible {
        /// Declaration index.
        task_index: usize,
    },
    /// No interface with at most `max_concurrency` processors passes the test for any period
    /// of the range.
    #[error(
        "no interface with at most {max_concurrency} processors passes for periods {min}..={max}"
    )]
    NoInterface {
        /// The largest m′ tried.
        max_concurrency: u64,
        /// Lower end of the range.
        min: u64,
        /// Upper end of the range.
        max: u64,
    },
}

/// The most processors (m′, or a DMPR's VCPUs) an interface may have: far more than any
/// host, and small enough that `m′·Π` and `m′·C_k` stay exact in 64 bits.
pub const MAX_CONCURRENCY: u64 = 1 << 16;

/// A multiprocessor periodic resource `⟨Π, Θ, m′⟩`, valid by construction
/// (`1 ≤ Π ≤ MAX_TIME`, `1 ≤ m′ ≤ MAX_CONCURRENCY`, `0 ≤ Θ ≤ m′Π`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Mpr {
    period: u64,
    budget: u64,
    concurrency: u64,
}

impl Mpr {
    /// `⟨Π, Θ, m′⟩`, checked.
    pub fn new(period: u64, budget: u64, concurrency: u64) -> Result<Mpr, MprError> {
        if period == 0 || period > MAX_TIME {
            return Err(MprError::InvalidPeriod { period });
        }
        if concurrency == 0 {
            return Err(MprError::ZeroConcurrency);
        }
        if concurrency > MAX_CONCURRENCY {
            return Err(MprError::TooManyProcessors { concurrency });
        }
        let capacity = concurrency * period;
        if budget > capacity {
            return Err(MprError::BudgetExceedsCapacity { budget, capacity });
        }
        Ok(Mpr {
            period,
            budget,
            concurrency,
        })
    }

    /// Π.
    pub fn period(&self) -> u64 {
        self.period
    }

    /// Θ.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// m′.
    pub fn concurrency(&self) -> u64 {
        self.concurrency
    }

    /// `Θ/Π`, exactly.
    pub fn bandwidth(&self) -> Ratio {
        Ratio::new(self.budget, self.period)
    }

    /// `(α, β)`: `α = ⌊Θ/m′⌋`, `β = Θ − m′α`.
    pub fn alpha_beta(&self) -> (u64, u64) {
        let alpha = self.budget / self.concurrency;
        (alpha, self.budget - self.concurrency * alpha)
    }

    /// The published `sbf(t)` (module docs).
    pub fn sbf(&self, t: u64) -> u64 {
        if self.budget == 0 {
            return 0;
        }
        let (period, budget, m) = (
            self.period as i128,
            self.budget as i128,
            self.concurrency as i128,
        );
        let (alpha, beta) = self.alpha_beta();
        let (alpha, beta) = (alpha as i128, beta as i128);
        let ceil = (budget + m - 1) / m;
        let t_prime = t as i128 - (period - ceil);
        if t_prime < 0 {
            return 0;
        }
        let x = t_prime % period;
        let y = period - alpha;
        let mut supply = (t_prime / period) * budget + (m * x - (m * period - budget)).max(0);
        if !(1 <= x && x <= y) {
            supply -= m - beta;
        }
        supply.max(0) as u64
    }

    /// The proven linear bound `sbf(t) ≥ ρt − δ` (module docs, "A linear bound that holds").
    pub fn linear_supply(&self) -> LinearSupply {
        let (period, budget, m) = (
            BigInt::from(self.period),
            BigInt::from(self.budget),
            BigInt::from(self.concurrency),
        );
        let (_, beta) = self.alpha_beta();
        let rate = BigRational::new(budget.clone(), period.clone());
        let ceil = BigInt::from(self.budget.div_ceil(self.concurrency));
        let per_processor = BigRational::new(budget, m);
        let deficit = &rate
            * (BigRational::from_integer(BigInt::from(2u8) * period - ceil) - per_processor)
            + BigRational::from_integer(BigInt::from(self.concurrency - beta));
        LinearSupply { rate, deficit }
    }

    /// The MPR→VCPU transformation (module docs): `β` VCPUs `(Π, α + 1)`, then `m′ − β`
    /// VCPUs `(Π, α)`; budgets sum to Θ. A VCPU of budget 0 (when `α = 0`) is kept, so there
    /// are always m′.
    pub fn to_vcpus(&self) -> Vec<Interface> {
        let (alpha, beta) = self.alpha_beta();
        (0..self.concurrency)
            .map(|j| Interface::new(self.period, if j < beta { alpha + 1 } else { alpha }))
            .collect()
    }
}

/// Theorem 1 of Shin, Easwaran & Lee (ECRTS 2008): global EDF of `w` under `mpr`.
pub fn gedf_schedulable(w: &Workload, mpr: &Mpr) -> GedfVerdict {
    gedf_schedulable_prepared(&GedfWorkload::new(w), mpr)
}

fn gedf_schedulable_prepared(w: &GedfWorkload, mpr: &Mpr) -> GedfVerdict {
    gedf_test(w, mpr.concurrency, |t| mpr.sbf(t), &mpr.linear_supply())
}

/// The result of an MPR interface search over a period range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MprSearch {
    /// The interface of least bandwidth (ties: smaller m′, then smaller Π).
    pub best: Mpr,
    /// Per period of the range, ascending: the least m′ and its least Θ, or `None` when no
    /// m′ up to the maximum passes.
    pub per_period: Vec<(u64, Option<Mpr>)>,
    /// Whether some candidate was rejected because its test hit
    /// [`crate::gedf::GEDF_MAX_POINTS`] (then `best` is sound but may not be the optimum).
    pub limited: bool,
}

/// The least m′ in `max(1, ⌈U⌉)..=max_concurrency` with a Θ that passes at `period`, and
/// the least such Θ (module docs, "The interface search"). `Ok(None)` when there is none.
/// The `bool` says whether a candidate hit the test's work limit.
pub fn mpr_interface_for_period(
    w: &Workload,
    period: u64,
    max_concurrency: u64,
) -> Result<(Option<Mpr>, bool), MprError> {
    let prepared = GedfWorkload::new(w);
    check_tasks(&prepared, w)?;
    Mpr::new(period, 0, max_concurrency.max(1))?;
    Ok(search_period(&prepared, w, period, max_concurrency))
}

fn check_tasks(prepared: &GedfWorkload, w: &Workload) -> Result<(), MprError> {
    match prepared.tasks().iter().position(|t| t.wcet > t.deadline) {
        Some(k) => Err(MprError::TaskInfeasible {
            task_index: w.declaration_index(k),
        }),
        None => Ok(()),
    }
}

/// `⌈U⌉` and `⌊UΠ⌋` of the workload, exactly.
fn utilization_bounds(w: &Workload, period: u64) -> (u64, u64) {
    let u = w.utilization().to_big();
    let ceil = u.ceil().to_integer();
    let scaled = (u * BigInt::from(period)).floor().to_integer();
    use num_traits::ToPrimitive;
    (
        ceil.to_u64().unwrap_or(u64::MAX),
        scaled.to_u64().unwrap_or(u64::MAX),
    )
}

fn search_period(
    prepared: &GedfWorkload,
    w: &Workload,
    period: u64,
    max_concurrency: u64,
) -> (Option<Mpr>, bool) {
    let (u_ceil, u_floor_scaled) = utilization_bounds(w, period);
    let mut limited = false;
    for m in u_ceil.max(1)..=max_concurrency {
        let first = ((m - 1) * period).max(u_floor_scaled) + 1;
        for budget in first..=m * period {
            let mpr = Mpr {
                period,
                budget,
                concurrency: m,
            };
            match gedf_schedulable_prepared(prepared, &mpr) {
                GedfVerdict::Schedulable => return (Some(mpr), limited),
                GedfVerdict::Limit => limited = true,
                _ => {}
            }
        }
    }
    (None, limited)
}

/// The minimum-bandwidth MPR interface of `w` (global EDF) over periods `min..=max`, with
/// m′ at most `max_concurrency` (`None`: the number of tasks). See the module docs for the
/// search and its tie rule.
///
/// ```
/// use rtvmm_analysis::{optimal_mpr_interface, Interface, Mpr, Workload};
///
/// // One of CARTS's examples: three tasks of period 200, U = 1.4, at a fixed period of 50.
/// let w = Workload::from_pairs(&[(200, 80), (200, 100), (200, 100)])?;
/// let search = optimal_mpr_interface(&w, 50, 50, None)?;
/// assert_eq!(search.best, Mpr::new(50, 97, 2)?); // what CARTS prints
/// // Two VCPUs for the level above: α = 48, β = 1.
/// assert_eq!(search.best.to_vcpus(), vec![Interface::new(50, 49), Interface::new(50, 48)]);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn optimal_mpr_interface(
    w: &Workload,
    min: u64,
    max: u64,
    max_concurrency: Option<u64>,
) -> Result<MprSearch, MprError> {
    if min == 0 || min > max || max > MAX_TIME {
        return Err(MprError::InvalidPeriodRange { min, max });
    }
    let prepared = GedfWorkload::new(w);
    check_tasks(&prepared, w)?;
    let max_concurrency = max_concurrency.unwrap_or(w.len() as u64);
    if max_concurrency > MAX_CONCURRENCY {
        return Err(MprError::TooManyProcessors {
            concurrency: max_concurrency,
        });
    }
    let mut per_period = Vec::with_capacity((max - min + 1) as usize);
    let mut best: Option<Mpr> = None;
    let mut limited = false;
    for period in min..=max {
        let (found, hit_limit) = search_period(&prepared, w, period, max_concurrency);
        limited |= hit_limit;
        if let Some(candidate) = found {
            if best.is_none_or(|b| better(&candidate, &b)) {
                best = Some(candidate);
            }
        }
        per_period.push((period, found));
    }
    match best {
        Some(best) => Ok(MprSearch {
            best,
            per_period,
            limited,
        }),
        None => Err(MprError::NoInterface {
            max_concurrency,
            min,
            max,
        }),
    }
}

/// Least bandwidth, then smaller m′, then smaller Π.
fn better(a: &Mpr, b: &Mpr) -> bool {
    (a.bandwidth(), a.concurrency, a.period) < (b.bandwidth(), b.concurrency, b.period)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prm::sbf_general;
    use crate::workload::Task;

    /// The least supply of ⟨Π, Θ, m′⟩ in any window of `t` whole slots, over every
    /// slot-aligned placement: each period independently puts as much of its Θ as it can
    /// (m′ per slot) outside the window.
    fn brute_force_sbf(period: u64, budget: u64, m: u64, t: u64) -> u64 {
        (0..period)
            .map(|start| {
                let end = start + t;
                let mut total = 0;
                let mut k = 0;
                while k * period < end {
                    let lo = start.max(k * period);
                    let hi = end.min((k + 1) * period);
                    if hi > lo {
                        let outside = m * (period - (hi - lo));
                        total += budget.saturating_sub(outside);
                    }
                    k += 1;
                }
                total
            })
            .min()
            .unwrap()
    }

    /// ⟨5, 7, 2⟩: α = 3, β = 1, ⌈Θ/m′⌉ = 4, so t′ = t − 1 and y = 2. By the formula:
    /// t=1: t′=0, x=0 ∉ [1,2]: 0 + max(0, 0−3) − 1 → 0;  t=2: x=1: max(0, 2−3) = 0;
    /// t=3: x=2: 4−3 = 1;  t=4: x=3 ∉: 6−3−1 = 2;  t=5: x=4 ∉: 8−3−1 = 4;
    /// t=6: t′=5, q=1, x=0 ∉: 7 + 0 − 1 = 6;  t=7: 7;  t=8: 7+1 = 8;  t=9: 7+3−1 = 9;
    /// t=10: 7+5−1 = 11;  t=11: 14−1 = 13;  t=12: 14.
    ///
    /// The worst case it bounds (two processors, `#` supply, `.` none, window from `|`):
    /// ```text
    ///   period k (early)   | period k+1 (late)  | period k+2 (late)
    ///   P0 ####.           |  .####             |  .####
    ///   P1 ###..           |  ..###             |  ..###
    ///   slot 0 1 2 3 4     |  5 6 7 8 9         | 10 ...
    /// ```
    /// The window opens at slot 4 (after the early supply), so 2 slots pass with nothing:
    /// sbf(2) = 0, then 1 (slot 6), 2 more (slot 7) … exactly the brute force below.
    #[test]
    fn sbf_by_hand() {
        let mpr = Mpr::new(5, 7, 2).unwrap();
        assert_eq!(mpr.alpha_beta(), (3, 1));
        let expected = [0, 0, 0, 1, 2, 4, 6, 7, 8, 9, 11, 13, 14];
        for (t, want) in expected.iter().enumerate() {
            assert_eq!(mpr.sbf(t as u64), *want, "t = {t}");
            assert_eq!(brute_force_sbf(5, 7, 2, t as u64), *want, "brute t = {t}");
        }
    }

    /// ⟨4, 8, 2⟩ (full capacity): α = 4, β = 0, y = 0, so the last line applies everywhere:
    /// sbf(t) = 2t − 2 for t ≥ 1 (the published form is one slot pessimistic for a dedicated
    /// pair of processors, which supply 2t).
    #[test]
    fn sbf_of_full_capacity() {
        let mpr = Mpr::new(4, 8, 2).unwrap();
        assert_eq!(mpr.sbf(0), 0);
        for t in 1..20 {
            assert_eq!(mpr.sbf(t), 2 * t - 2, "t = {t}");
        }
    }

    /// m′ = 1 is the PRM sbf minus one where x = 0 or x > Π − Θ.
    #[test]
    fn one_processor_against_prm() {
        for period in 1..10u64 {
            for budget in 1..=period {
                let mpr = Mpr::new(period, budget, 1).unwrap();
                for t in 0..60u64 {
                    let prm = sbf_general(period, budget, t);
                    let got = mpr.sbf(t);
                    assert!(got == prm || got + 1 == prm, "Π={period} Θ={budget} t={t}");
                }
            }
        }
    }

    /// The published sbf never exceeds the true worst case of slot-aligned supply, and the
    /// proven linear bound never exceeds the sbf; the paper's own linear bound does, for Θ < m′.
    #[test]
    fn sbf_is_sound_and_the_linear_bound_holds() {
        for period in 1..=8u64 {
            for m in 1..=4u64 {
                for budget in 0..=m * period {
                    let mpr = Mpr::new(period, budget, m).unwrap();
                    let line = mpr.linear_supply();
                    for t in 0..6 * period {
                        let s = mpr.sbf(t);
                        assert!(s <= brute_force_sbf(period, budget, m, t), "{mpr:?} t={t}");
                        let lower = &line.rate * BigInt::from(t) - &line.deficit;
                        assert!(
                            lower <= BigRational::from_integer(BigInt::from(s)),
                            "{mpr:?} t={t}"
                        );
                    }
                }
            }
        }
        // ⟨2, 1, 4⟩ at t = 7: the paper's ρ(t − 2 − 2(Π − Θ/m′)) = (1/2)(7 − 2 − 3.5) = 3/4 > 0.
        assert_eq!(Mpr::new(2, 1, 4).unwrap().sbf(7), 0);
    }

    #[test]
    fn invalid_parameters_are_typed_errors() {
        assert_eq!(
            Mpr::new(0, 0, 1),
            Err(MprError::InvalidPeriod { period: 0 })
        );
        assert_eq!(Mpr::new(5, 1, 0), Err(MprError::ZeroConcurrency));
        assert_eq!(
            Mpr::new(5, 11, 2),
            Err(MprError::BudgetExceedsCapacity {
                budget: 11,
                capacity: 10
            })
        );
        assert!(Mpr::new(5, 10, 2).is_ok());
        assert_eq!(
            Mpr::new(5, 1, MAX_CONCURRENCY + 1),
            Err(MprError::TooManyProcessors {
                concurrency: MAX_CONCURRENCY + 1
            })
        );
    }

    /// ⟨10, 23, 3⟩: α = 7, β = 2 → (10, 8), (10, 8), (10, 7); ⟨10, 30, 3⟩ → three (10, 10);
    /// ⟨10, 2, 3⟩: α = 0, β = 2 → (10, 1), (10, 1), (10, 0).
    #[test]
    fn vcpus_by_hand() {
        let vcpus = |p, b, m| Mpr::new(p, b, m).unwrap().to_vcpus();
        let i = Interface::new;
        assert_eq!(vcpus(10, 23, 3), vec![i(10, 8), i(10, 8), i(10, 7)]);
        assert_eq!(vcpus(10, 30, 3), vec![i(10, 10); 3]);
        assert_eq!(vcpus(10, 2, 3), vec![i(10, 1), i(10, 1), i(10, 0)]);
        for (p, m) in [(7u64, 1u64), (7, 4), (13, 3)] {
            for b in 0..=p * m {
                let v = vcpus(p, b, m);
                assert_eq!(v.len() as u64, m);
                assert_eq!(v.iter().map(|x| x.budget).sum::<u64>(), b);
                assert!(v.iter().all(|x| x.budget <= p));
            }
        }
    }

    /// A component that passes and one that fails, by hand. Three tasks (T 10, C 5, D 10),
    /// U = 3/2, under ⟨Π = 2, Θ = 4, m′ = 2⟩ (two dedicated processors; α = 2, β = 0, y = 0,
    /// so sbf(t) = 2t − 2 for t ≥ 1; ρ = 2).
    ///
    /// Linear bound: δ = 2·(4 − 2 − 2) + (2 − 0) = 2. For every k (all tasks alike):
    /// C_Σ = 5, A_max = ⌊(5 + 2·5 − 10·(2 − 3/2) + 0 + 2) / (1/2)⌋ = ⌊12/(1/2)⌋ = 24.
    ///
    /// At A_k = 0 (t = 10, cap t − C_k = 5): each other task has one job, dbf 5, no carry-in
    /// (CI = min(5, 10 − 10) = 0), so Î = Ī = 5; for k itself Î = Ī = min(5 − 5, 0) = 0.
    /// DEM = 2·5 + 5 + 5 = 20 > sbf(10) = 18: **fails** at the first window. (gEDF does
    /// schedule these tasks on two processors — two jobs run in [0, 5), the third in
    /// [5, 10) — and even with the dedicated pair's true supply 2t the test would pass,
    /// 20 ≤ 20: the failure is the published sbf's one missing slot.)
    ///
    /// With Θ = 5, m′ = 3 (⟨2, 5, 3⟩: α = 1, β = 2, ⌈Θ/m′⌉ = 2, t′ = t, y = 1): at t = 10,
    /// q = 5, x = 0 ∉ [1, 1]: sbf = 25 + 0 − 1 = 24 < DEM(10, 3) = 3·5 + 5 + 5 = 25: fails too.
    #[test]
    fn gedf_by_hand() {
        let w = Workload::new([Task::new(10, 5); 3]).unwrap();
        let mut scratch = Vec::new();
        let g = GedfWorkload::new(&w);
        assert_eq!(g.demand(0, 0, 2, &mut scratch), 20);
        let pair = Mpr::new(2, 4, 2).unwrap();
        assert_eq!(pair.sbf(10), 18);
        assert_eq!(g.max_a_k(0, 2, &pair.linear_supply()), Some(24));
        assert_eq!(
            gedf_schedulable(&w, &pair),
            GedfVerdict::Violation {
                task_index: 0,
                window: 10,
                demand: 20,
                supply: 18
            }
        );
        let three = Mpr::new(2, 5, 3).unwrap();
        assert_eq!(three.sbf(10), 24);
        assert_eq!(g.demand(0, 0, 3, &mut scratch), 25);
        assert!(!gedf_schedulable(&w, &three).is_schedulable());
    }

    /// Passing by hand: two tasks (T 10, C 2, D 10), U = 2/5, under ⟨5, 5, 1⟩ (one
    /// dedicated processor in the published form: α = 5, β = 0, y = 0, sbf(t) = t − 1 for
    /// t ≥ 1; ρ = 1, δ = 1·(10 − 5 − 5) + 1 = 1). A_max = ⌊(0 + 2 − 10·(3/5) + 1)/(3/5)⌋ < 0
    /// → only A_k = 0: DEM(10, 1) = 2 + 2 + min(2 − 2, 0) = 4 ≤ sbf(10) = 9. Passes.
    /// Utilisation above m′ fails: five such tasks plus (T 10, C 6) have U = 1.6 > 1.
    #[test]
    fn gedf_passes_by_hand_and_overload_fails() {
        let w = Workload::new([Task::new(10, 2); 2]).unwrap();
        let one = Mpr::new(5, 5, 1).unwrap();
        assert_eq!(one.sbf(10), 9);
        assert_eq!(
            GedfWorkload::new(&w).max_a_k(0, 1, &one.linear_supply()),
            Some(0)
        );
        assert_eq!(gedf_schedulable(&w, &one), GedfVerdict::Schedulable);
        let heavy = Workload::new([
            Task::new(10, 2),
            Task::new(10, 2),
            Task::new(10, 2),
            Task::new(10, 2),
            Task::new(10, 2),
            Task::new(10, 6),
        ])
        .unwrap();
        // (ρ = 1 < U: the first window already shows it, DEM(10, 1) = 2 + 4·2 + 6 = 16 > 9.)
        assert_eq!(
            gedf_schedulable(&heavy, &one),
            GedfVerdict::Violation {
                task_index: 0,
                window: 10,
                demand: 16,
                supply: 9
            }
        );
    }

    /// C > D is a typed error in the search and a verdict in the test.
    #[test]
    fn infeasible_task() {
        let w = Workload::new([Task::with_deadline(10, 5, 4)]).unwrap();
        assert_eq!(
            optimal_mpr_interface(&w, 1, 5, None),
            Err(MprError::TaskInfeasible { task_index: 0 })
        );
        assert_eq!(
            gedf_schedulable(&w, &Mpr::new(1, 1, 1).unwrap()),
            GedfVerdict::TaskInfeasible { task_index: 0 }
        );
    }

    /// One task (T 4, C 2, D 4), U = 1/2, m′ = 1, periods 1..=6. At Π = 3 the search starts
    /// at Θ = ⌊3/2⌋ + 1 = 2: ⟨3, 2, 1⟩ (α = 2, β = 0, ⌈Θ⌉ = 2, t′ = t − 1, y = 1) has, at
    /// t = 4, t′ = 3, q = 1, x = 0 ∉ [1, 1]: sbf = 2 + max(0, 0 − 1) − 1 = 1 < DEM(4, 1) =
    /// 2 + min(2 − 2, 0) = 2, so it fails; Θ = 3 is the published "dedicated" form
    /// sbf(t) = t − 1 (ρ = 1, δ = 1, A_max = ⌊(2 − 4·(1/2) + 1)/(1/2)⌋ = 2): DEM is 2 at
    /// t = 4, 5, 6 against 3, 4, 5 — passes. Likewise at every Π the least budget is Π
    /// (bandwidth 1), and the tie rule picks the smallest period.
    #[test]
    fn search_by_hand_one_task() {
        let w = Workload::new([Task::new(4, 2)]).unwrap();
        assert_eq!(
            gedf_schedulable(&w, &Mpr::new(3, 2, 1).unwrap()),
            GedfVerdict::Violation {
                task_index: 0,
                window: 4,
                demand: 2,
                supply: 1
            }
        );
        let search = optimal_mpr_interface(&w, 1, 6, None).unwrap();
        for (period, found) in &search.per_period {
            assert_eq!(*found, Some(Mpr::new(*period, *period, 1).unwrap()));
        }
        assert_eq!(search.best, Mpr::new(1, 1, 1).unwrap());
        assert!(!search.limited);
    }

    /// Three tasks (T 10, C 5, D 10), U = 3/2, at Π = 1: m′ starts at ⌈3/2⌉ = 2, whose range
    /// (1, 2] holds only Θ = 2, i.e. sbf(t) = 2t − 2, which fails at t = 10 (20 > 18, see
    /// `gedf_by_hand`); m′ = 3 starts at Θ = max(2, ⌊3/2⌋) + 1 = 3, sbf(t) = 3t − 3, and
    /// passes. Over periods 1..=10 the search picks ⟨3, 8, 3⟩ (bandwidth 8/3): the price of
    /// the published sbf's slot lost per processor.
    #[test]
    fn search_three_heavy_tasks() {
        let w = Workload::new([Task::new(10, 5); 3]).unwrap();
        let search = optimal_mpr_interface(&w, 1, 10, Some(4)).unwrap();
        assert_eq!(search.per_period[0].1, Some(Mpr::new(1, 3, 3).unwrap()));
        assert_eq!(search.best, Mpr::new(3, 8, 3).unwrap());
        assert_search_is_exact(&w, &search, 4);
    }

    /// What the search claims, checked candidate by candidate with the test itself: the
    /// interface found passes, no smaller Θ of its m′'s range passes, no smaller m′ has a
    /// passing Θ, and the best has the least bandwidth.
    fn assert_search_is_exact(w: &Workload, search: &MprSearch, max_m: u64) {
        let u = w.utilization();
        for (period, found) in &search.per_period {
            let passes =
                |b, m| gedf_schedulable(w, &Mpr::new(*period, b, m).unwrap()).is_schedulable();
            let candidates = |m: u64| ((m - 1) * period + 1)..=(m * period);
            let first_m = u.to_ratio().map_or(1, |r| r.ceil().max(1));
            let stop = found.map_or(max_m, |f| f.concurrency());
            for m in first_m..stop {
                assert!(candidates(m).all(|b| !passes(b, m)), "Π={period} m′={m}");
            }
            if let Some(f) = found {
                assert!(passes(f.budget(), f.concurrency()));
                let m = f.concurrency();
                assert!(candidates(m)
                    .filter(|&b| b < f.budget())
                    .all(|b| !passes(b, m)));
                assert!(search.best.bandwidth() <= f.bandwidth());
            } else {
                assert!(candidates(max_m).all(|b| !passes(b, max_m)));
            }
        }
    }

    #[test]
    fn search_is_exact_on_small_components() {
        for pairs in [
            vec![(10u64, 2u64), (20, 3)],
            vec![(7, 2), (8, 1), (10, 1)],
            vec![(10, 3), (10, 3), (20, 6), (20, 6)],
            vec![(6, 4), (9, 5), (12, 5)],
        ] {
            let w = Workload::from_pairs(&pairs).unwrap();
            // One VCPU more than tasks: the published sbf of ⟨1, 3, 3⟩ is 15 at t = 6,
            // not 18, and with the cap of `gedf`'s module docs (6, 4), (9, 5), (12, 5)
            // needs a fourth.
            let max_m = w.len() as u64 + 1;
            let search = optimal_mpr_interface(&w, 1, 12, Some(max_m)).unwrap();
            assert_search_is_exact(&w, &search, max_m);
        }
    }

    /// m′ = 1 against the one-pcpu EDF analysis (PRM, general sbf) at the same period: the
    /// published MPR sbf is the PRM one less a unit at some instants, while DEM(t, 1) ≤
    /// dbf(t); on these inputs the MPR budget is never below the PRM one, and once above
    /// ({(7,2),(8,1),(10,1)} at Π = 5: 4 against 3).
    #[test]
    fn one_processor_against_the_prm_interface() {
        // up: a test comparing with the one-pcpu interface search, which sits above mpr
        use crate::interface::{fixed_period_interface, GuestScheduler};
        use crate::prm::SbfMode;
        for pairs in [
            vec![(10u64, 2u64), (20, 3)],
            vec![(25, 3), (50, 5), (100, 4)],
            vec![(7, 2), (8, 1), (10, 1)],
        ] {
            let w = Workload::from_pairs(&pairs).unwrap();
            for period in 1..=10 {
                let mpr = mpr_interface_for_period(&w, period, 1).unwrap().0;
                let prm = fixed_period_interface(&w, period, SbfMode::General, GuestScheduler::Edf);
                if let (Some(mpr), Ok(prm)) = (mpr, prm) {
                    assert!(mpr.budget() >= prm.budget, "{pairs:?} Π={period}");
                }
            }
        }
        let w = Workload::from_pairs(&[(7, 2), (8, 1), (10, 1)]).unwrap();
        assert_eq!(
            mpr_interface_for_period(&w, 5, 1)
                .unwrap()
                .0
                .map(|m| m.budget()),
            Some(4)
        );
    }
}
