//! The periodic resource model `Γ = (Π, Θ)` and its supply bounds.
//!
//! Source: I. Shin and I. Lee, "Compositional real-time scheduling framework with periodic
//! model", ACM TECS 7(3), 2008 (first as "Periodic resource model for compositional
//! real-time guarantees", RTSS 2003): the periodic resource model, its supply bound function
//! sbf and its linear lower bound lsbf. The upper linear bound usbf is the one
//! used by Lee et al., RTAS 2012, "Realizing Compositional Scheduling through Virtualization",
//! for Theorem 1 (the period bound of Algorithm 1).

use serde::Serialize;

use crate::ratio::Ratio;
use crate::workload::Workload;

/// A periodic resource `Γ = (Π, Θ)`: at least `budget` units of supply in every `period`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Interface {
    /// `Π`, the resource period.
    pub period: u64,
    /// `Θ`, the budget supplied every period, `0 ≤ Θ ≤ Π`.
    pub budget: u64,
}

impl Interface {
    /// `(Π, Θ)`.
    pub fn new(period: u64, budget: u64) -> Interface {
        Interface { period, budget }
    }

    /// `bw(Γ) = Θ/Π`, exactly.
    pub fn bandwidth(&self) -> Ratio {
        Ratio::new(self.budget, self.period)
    }

    /// `sbf_Γ(t)` in the given form. See [`sbf_general`] and [`sbf_harmonic`].
    pub fn sbf(&self, form: SupplyForm, t: u64) -> u64 {
        sbf(form, self.period, self.budget, t)
    }
}

/// Which closed form of the supply bound function to evaluate.
///
/// * `General` — Shin & Lee's sbf, valid for any phasing between tasks and resource.
/// * `Harmonic` — the tighter form for a pair `(W, Γ)` in which every task period is a
///   multiple of Π and tasks are released at the resource's period boundaries (zero
///   offsets, synchronous start, as in ARINC-653 partitions). Evaluating it elsewhere is
///   **unsound**; [`SbfMode`] decides where it applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum SupplyForm {
    /// Blackout `2(Π − Θ)`; valid for any alignment.
    General,
    /// Blackout `Π − Θ`, periods aligned with task releases; only sound where Π divides
    /// every task period and releases are synchronous with the resource.
    Harmonic,
}

/// Which sbf the analysis may use (the spec's `--sbf auto|general`).
///
/// * `Auto` (default): the harmonic form exactly where it is sound — for a period Π that
///   divides every task period (so every task period is a multiple of Π), assuming
///   synchronous release at the interface's period boundaries — and the general form for
///   every other Π.
/// * `General`: never the harmonic form (what CARTS computes).
///
/// Spec check (tested): for W = {(25,3),(50,5),(100,4)}, `General` gives the optimum
/// (7, 2); the harmonic form at Π = 25 gives (25, 7); evaluating it at Π = 11 (which divides
/// no period) would claim (11, 3), which is unsound, and `Auto` does not do it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub enum SbfMode {
    /// Harmonic form where sound, general elsewhere.
    #[default]
    Auto,
    /// General form everywhere.
    General,
}

impl SbfMode {
    /// The form this mode uses for period `period` and workload `w`.
    pub fn form_for(self, period: u64, w: &Workload) -> SupplyForm {
        match self {
            SbfMode::General => SupplyForm::General,
            SbfMode::Auto => {
                if harmonic_is_sound(period, w) {
                    SupplyForm::Harmonic
                } else {
                    SupplyForm::General
                }
            }
        }
    }
}

/// The harmonic form is sound for `(W, Γ)` iff Π divides every task period (spec, "Which
/// sbf applies"; synchronous release is the model's standing assumption for this form).
pub fn harmonic_is_sound(period: u64, w: &Workload) -> bool {
    w.period_gcd().checked_rem(period) == Some(0)
}

/// `sbf(t)` in the given form.
pub fn sbf(form: SupplyForm, period: u64, budget: u64, t: u64) -> u64 {
    match form {
        SupplyForm::General => sbf_general(period, budget, t),
        SupplyForm::Harmonic => sbf_harmonic(period, budget, t),
    }
}

/// General supply bound function of `Γ = (Π, Θ)` (Shin & Lee, RTSS 2003 / TECS 2008; the
/// spec's "general" form): the least supply in any interval of length `t`.
///
/// ```text
/// sbf(t) = y·Θ + max(0, t − 2(Π − Θ) − y·Π)   if t ≥ Π − Θ,  y = ⌊(t − (Π − Θ)) / Π⌋
///        = 0                                   otherwise
/// ```
///
/// A budget above the period is treated as the period.
///
/// # Panics
/// If `period == 0`.
pub fn sbf_general(period: u64, budget: u64, t: u64) -> u64 {
    assert!(period > 0, "sbf of a resource with period 0");
    let budget = budget.min(period);
    let slack = period - budget;
    if t < slack || budget == 0 {
        return 0;
    }
    let y = (t - slack) / period;
    let start_of_last = 2 * slack + y * period; // x + y·Π
    y * budget + t.saturating_sub(start_of_last)
}

/// Harmonic supply bound function (spec, "Periodic resource model"): the least supply in an
/// interval of length `t` that **starts at a resource period boundary** (x = Π − Θ,
/// y = ⌊t/Π⌋). Sound only where every task period is a multiple of Π and releases are
/// synchronous — see [`SupplyForm::Harmonic`]. A budget above the period is treated as the
/// period.
///
/// # Panics
/// If `period == 0`.
pub fn sbf_harmonic(period: u64, budget: u64, t: u64) -> u64 {
    assert!(period > 0, "sbf of a resource with period 0");
    let budget = budget.min(period);
    let slack = period - budget;
    if t < slack || budget == 0 {
        return 0;
    }
    let y = t / period;
    let start_of_last = slack + y * period;
    y * budget + t.saturating_sub(start_of_last)
}

/// The least `t` with `sbf(t) ≥ demand` in the given form (the supply's inverse, often called
/// the time bound function): `0` for no demand, `None` when the resource never supplies that
/// much (`Θ = 0`) or the answer exceeds `u64`.
///
/// In the worst-case pattern of [`sbf_general`] the supply starts after a blackout of
/// `x = 2(Π − Θ)` ([`sbf_harmonic`]: `x = Π − Θ`) and then comes in bursts of Θ, one per
/// period, so `demand` needs `k = ⌈demand/Θ⌉` bursts and `r = demand − (k − 1)Θ` units of the
/// last one:
///
/// ```text
/// sbf⁻¹(demand) = x + (k − 1)·Π + r
/// ```
///
/// (Both forms give `y = k − 1` full bursts before that instant when `r < Θ`, and `y = k`
/// when `r = Θ`; either way `sbf = demand` there, and one unit earlier it is `demand − 1`.)
///
/// ```
/// use rtvmm_analysis::{sbf_general, sbf_inverse, SupplyForm};
/// // Γ = (5, 3): blackout 4, then 3 units per 5 (see the sbf table in this module's tests).
/// assert_eq!(sbf_inverse(SupplyForm::General, 5, 3, 4), Some(10));
/// assert_eq!((sbf_general(5, 3, 9), sbf_general(5, 3, 10)), (3, 4));
/// ```
pub fn sbf_inverse(form: SupplyForm, period: u64, budget: u64, demand: u64) -> Option<u64> {
    if demand == 0 {
        return Some(0);
    }
    let budget = budget.min(period);
    if budget == 0 {
        return None;
    }
    let slack = (period - budget) as u128;
    let blackout = match form {
        SupplyForm::General => 2 * slack,
        SupplyForm::Harmonic => slack,
    };
    let bursts = demand.div_ceil(budget) as u128;
    let rest = demand as u128 - (bursts - 1) * budget as u128;
    u64::try_from(blackout + (bursts - 1) * period as u128 + rest).ok()
}

/// Upper linear supply bound `usbf(t) = max(0, (Θ/Π)·(t − (Π − Θ)))` (Lee et al., RTAS 2012,
/// used in the proof of Theorem 1): `sbf_general(t) ≤ usbf(t)` for all t, with equality at the
/// end of every supply burst. Exact rational.
///
/// # Panics
/// If `period == 0` or `Θ·t` overflows `u64` (never for `Θ, t < 2^32`).
pub fn usbf(period: u64, budget: u64, t: u64) -> Ratio {
    let budget = budget.min(period);
    let slack = period - budget;
    let numerator = budget
        .checked_mul(t.saturating_sub(slack))
        .expect("usbf overflow");
    Ratio::new(numerator, period)
}

/// Lower linear supply bound `lsbf(t) = max(0, (Θ/Π)·(t − 2(Π − Θ)))` (Shin & Lee, RTSS 2003
/// / TECS 2008): `lsbf(t) ≤ sbf_general(t)` for all t. Exact rational.
///
/// # Panics
/// If `period == 0` or `Θ·t` overflows `u64` (never for `Θ, t < 2^32`).
pub fn lsbf(period: u64, budget: u64, t: u64) -> Ratio {
    let budget = budget.min(period);
    let slack = period - budget;
    let numerator = budget
        .checked_mul(t.saturating_sub(2 * slack))
        .expect("lsbf overflow");
    Ratio::new(numerator, period)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Γ = (5, 3): blackout 2(5−3) = 4, then 3 units per 5. Values drawn by hand:
    /// supply pattern (worst case) `..SSS|__ ___|SSS..`: starting just after a burst that ran
    /// at the start of its period, the next burst runs at the end of the next period.
    /// t:   0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15
    /// sbf: 0 0 0 0 0 1 2 3 3 3 4  5  6  6  6  7
    /// (Same table as the `periodic_supply` test of the response-time-analysis crate, which
    /// cites Shin & Lee RTSS 2003.)
    #[test]
    fn general_sbf_textbook_values() {
        let expected = [0, 0, 0, 0, 0, 1, 2, 3, 3, 3, 4, 5, 6, 6, 6, 7];
        for (t, want) in expected.iter().enumerate() {
            assert_eq!(sbf_general(5, 3, t as u64), *want, "t = {t}");
        }
    }

    /// Γ = (5, 3) in the harmonic form: the budget arrives in the last 3 units of each
    /// period that starts at t = 0: `__SSS|__SSS|`.
    /// t:   0 1 2 3 4 5 6 7 8 9 10
    /// sbf: 0 0 0 1 2 3 3 3 4 5 6
    #[test]
    fn harmonic_sbf_textbook_values() {
        let expected = [0, 0, 0, 1, 2, 3, 3, 3, 4, 5, 6];
        for (t, want) in expected.iter().enumerate() {
            assert_eq!(sbf_harmonic(5, 3, t as u64), *want, "t = {t}");
        }
    }

    #[test]
    fn full_and_empty_budgets() {
        for t in 0..20 {
            assert_eq!(sbf_general(7, 7, t), t);
            assert_eq!(sbf_harmonic(7, 7, t), t);
            assert_eq!(sbf_general(7, 0, t), 0);
        }
    }

    /// The inverse against the definition: the least t with sbf(t) ≥ demand, by scanning.
    #[test]
    fn inverse_is_the_least_time_with_enough_supply() {
        for period in 1..10u64 {
            for budget in 0..=period {
                for form in [SupplyForm::General, SupplyForm::Harmonic] {
                    for demand in 0..25u64 {
                        let scanned = (0..400u64).find(|&t| sbf(form, period, budget, t) >= demand);
                        assert_eq!(
                            sbf_inverse(form, period, budget, demand),
                            scanned,
                            "{form:?} Π={period} Θ={budget} demand={demand}"
                        );
                    }
                }
            }
        }
        // Far beyond u64: a budget of 1 in a period of 2^40 needs 2^40 periods for 2^40 units.
        assert_eq!(sbf_inverse(SupplyForm::General, 1 << 40, 1, 1 << 40), None);
    }

    #[test]
    fn linear_bounds_sandwich_sbf() {
        for period in 1..12u64 {
            for budget in 0..=period {
                for t in 0..60u64 {
                    let s = Ratio::from_integer(sbf_general(period, budget, t));
                    assert!(
                        lsbf(period, budget, t) <= s,
                        "lsbf Π={period} Θ={budget} t={t}"
                    );
                    assert!(
                        s <= usbf(period, budget, t),
                        "usbf Π={period} Θ={budget} t={t}"
                    );
                }
            }
        }
    }
}
