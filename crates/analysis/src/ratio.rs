//! Exact rationals: [`Ratio`] for one fraction of integers (a bandwidth `Θ/Π`, one task's
//! utilisation `e/p`), [`ExactSum`] for sums of them (`bw(W) = Σ e_i/p_i`, `U_RM`), whose
//! denominators are least common multiples that overflow any fixed-width integer for
//! realistic task sets.
//!
//! Every schedulability decision in this crate compares these exactly (cross-multiplication
//! in `u128`, or arbitrary precision for sums); `f64` values exist only for display.

use std::cmp::Ordering;
use std::fmt;

use num_bigint::{BigInt, BigUint};
use num_rational::BigRational;
use num_traits::{ToPrimitive, Zero};
use serde::Serialize;

/// A non-negative fraction `num / den` of two `u64`, kept in lowest terms.
///
/// Ordering and equality are exact: `a/b < c/d ⇔ a·d < c·b`, computed in `u128` (both
/// products fit, so no rounding is ever involved).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Ratio {
    num: u64,
    den: u64,
}

impl Ratio {
    /// `num / den` in lowest terms.
    ///
    /// # Panics
    /// If `den == 0` (a programming error: every denominator here is a period).
    pub fn new(num: u64, den: u64) -> Ratio {
        assert!(den != 0, "Ratio with zero denominator");
        let g = gcd(num, den);
        Ratio {
            num: num / g,
            den: den / g,
        }
    }

    /// The integer `n` as a ratio `n/1`.
    pub fn from_integer(n: u64) -> Ratio {
        Ratio { num: n, den: 1 }
    }

    /// Numerator (lowest terms).
    pub fn numer(self) -> u64 {
        self.num
    }

    /// Denominator (lowest terms).
    pub fn denom(self) -> u64 {
        self.den
    }

    /// Nearest `f64`, for display only.
    pub fn to_f64(self) -> f64 {
        self.num as f64 / self.den as f64
    }

    /// `⌊self⌋`.
    pub fn floor(self) -> u64 {
        self.num / self.den
    }

    /// `⌈self⌉`.
    pub fn ceil(self) -> u64 {
        self.num.div_ceil(self.den)
    }

    /// The same value as an arbitrary-precision rational.
    pub fn to_big(self) -> BigRational {
        BigRational::new(BigInt::from(self.num), BigInt::from(self.den))
    }
}

impl PartialEq for Ratio {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ratio {}

impl PartialOrd for Ratio {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Ratio {
    fn cmp(&self, other: &Self) -> Ordering {
        let lhs = self.num as u128 * other.den as u128;
        let rhs = other.num as u128 * self.den as u128;
        lhs.cmp(&rhs)
    }
}

impl fmt::Display for Ratio {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.num, self.den)
    }
}

/// An exact, arbitrary-precision sum of [`Ratio`]s, such as a workload's utilisation
/// `bw(W) = Σ e_i/p_i` or the root's total interface bandwidth `U_RM = Σ Θ_k/Π_k`.
///
/// The denominator of such a sum is the lcm of the periods, which for fifty periods drawn
/// from 10–1000 has well over a hundred digits, so a fixed-width type cannot hold it.
///
/// Kept as `numerator / lcm` of the terms' denominators, **not** reduced as it grows:
/// adding a term costs one pass over the digits (a remainder, a multiplication and a
/// division by a `u64`), where a rational reduced after every addition pays a big gcd each
/// time — quadratic in the digits, which made 4,000 tasks with distinct periods take 40 s.
/// Lowest terms are computed only when asked for, in one pass per term, from
/// `gcd(N, lcm_i b_i) = lcm_i gcd(N, b_i)` (for every prime, `min(v(N), max_i v(b_i)) =
/// max_i min(v(N), v(b_i))`).
#[derive(Clone, Debug)]
pub struct ExactSum {
    /// `Σ terms · denominator`.
    numerator: BigUint,
    /// The lcm of the terms' (reduced) denominators; 1 for the empty sum.
    denominator: BigUint,
    /// Every term's denominator (each divides `denominator`), for the reduction.
    term_denominators: Vec<u64>,
}

impl ExactSum {
    /// The empty sum, 0.
    pub fn zero() -> ExactSum {
        ExactSum {
            numerator: BigUint::zero(),
            denominator: BigUint::from(1u32),
            term_denominators: Vec::new(),
        }
    }

    /// Sum of the given fractions.
    pub fn of(terms: impl IntoIterator<Item = Ratio>) -> ExactSum {
        let mut sum = ExactSum::zero();
        for term in terms {
            sum.add(term);
        }
        sum
    }

    /// Adds one fraction `a/b`: the denominator grows to `lcm(L, b)` by the factor
    /// `b / gcd(L mod b, b)`, and the numerator gains `a · (L/b)`.
    pub fn add(&mut self, term: Ratio) {
        if term.num == 0 {
            return;
        }
        let b = term.den;
        let remainder = (&self.denominator % b)
            .to_u64()
            .expect("a remainder below b");
        let factor = b / gcd(remainder, b);
        if factor > 1 {
            self.denominator *= factor;
            self.numerator *= factor;
        }
        self.numerator += (&self.denominator / b) * term.num;
        self.term_denominators.push(b);
    }

    /// `self − other` as an `f64`, for display (computed exactly, then rounded).
    pub fn minus_f64(&self, other: &ExactSum) -> f64 {
        let lhs = BigInt::from(&self.numerator * &other.denominator);
        let rhs = BigInt::from(&other.numerator * &self.denominator);
        let den = BigInt::from(&self.denominator * &other.denominator);
        big_to_f64(&BigRational::new_raw(lhs - rhs, den))
    }

    /// Exact comparison with a single fraction (one multiplication by a `u64` each side).
    pub fn cmp_ratio(&self, other: Ratio) -> Ordering {
        (&self.numerator * other.den).cmp(&(&self.denominator * other.num))
    }

    /// The value, when it fits a `Ratio` (numerator and denominator in lowest terms ≤ `u64::MAX`).
    pub fn to_ratio(&self) -> Option<Ratio> {
        let (num, den) = self.lowest_terms();
        Some(Ratio::new(num.to_u64()?, den.to_u64()?))
    }

    /// Numerator and denominator with a common denominator, the lcm of the terms'
    /// denominators — not necessarily in lowest terms (see [`ExactSum::lowest_terms`]).
    pub fn parts(&self) -> (&BigUint, &BigUint) {
        (&self.numerator, &self.denominator)
    }

    /// Numerator and denominator in lowest terms.
    pub fn lowest_terms(&self) -> (BigUint, BigUint) {
        if self.numerator.is_zero() {
            return (BigUint::zero(), BigUint::from(1u32));
        }
        // g = gcd(N, L) = lcm over the terms of gcd(N mod b, b).
        let mut common = BigUint::from(1u32);
        for &b in &self.term_denominators {
            let part = gcd((&self.numerator % b).to_u64().expect("below b"), b);
            let already = (&common % part).to_u64().expect("below part");
            common *= part / gcd(already, part);
        }
        (&self.numerator / &common, &self.denominator / &common)
    }

    /// The value as an arbitrary-precision rational (in lowest terms).
    pub fn to_big(&self) -> BigRational {
        let (num, den) = self.lowest_terms();
        BigRational::new_raw(BigInt::from(num), BigInt::from(den))
    }

    /// Nearest `f64` (correctly rounded within a few ulps), for display only.
    pub fn to_f64(&self) -> f64 {
        big_to_f64(&BigRational::new_raw(
            BigInt::from(self.numerator.clone()),
            BigInt::from(self.denominator.clone()),
        ))
    }

    /// `num/den` as decimal strings, lowest terms (for reports that want the exact value).
    pub fn to_fraction_string(&self) -> String {
        let (num, den) = self.lowest_terms();
        format!("{num}/{den}")
    }
}

impl PartialEq for ExactSum {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for ExactSum {}

impl PartialOrd for ExactSum {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ExactSum {
    fn cmp(&self, other: &Self) -> Ordering {
        (&self.numerator * &other.denominator).cmp(&(&other.numerator * &self.denominator))
    }
}

impl fmt::Display for ExactSum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_fraction_string())
    }
}

/// A big rational to `f64` for display. Scales so that the integer division keeps 64
/// significant bits, which is more than `f64` can show.
pub(crate) fn big_to_f64(value: &BigRational) -> f64 {
    if value.is_zero() {
        return 0.0;
    }
    let negative = value.numer().sign() == num_bigint::Sign::Minus;
    let num: BigUint = value.numer().magnitude().clone();
    let den: BigUint = value.denom().magnitude().clone();
    // value = num/den; choose shift so that (num << shift) / den has ~64 bits.
    let shift: i64 = 64 - (num.bits() as i64 - den.bits() as i64);
    let quotient = if shift >= 0 {
        (num << shift as u64) / den
    } else {
        num / (den << (-shift) as u64)
    };
    let mantissa = quotient.to_f64().unwrap_or(f64::INFINITY);
    let magnitude = mantissa * 2f64.powi(-(shift as i32));
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

/// Greatest common divisor (`gcd(0, n) = n`).
pub(crate) fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        let r = a % b;
        a = b;
        b = r;
    }
    a
}

/// Least common multiple, `None` on overflow of `u64`.
pub(crate) fn lcm(a: u64, b: u64) -> Option<u64> {
    if a == 0 || b == 0 {
        return Some(0);
    }
    (a / gcd(a, b)).checked_mul(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordering_is_exact_cross_multiplication() {
        assert!(Ratio::new(1, 3) < Ratio::new(334, 1000));
        assert!(Ratio::new(1, 3) > Ratio::new(333, 1000));
        assert_eq!(Ratio::new(2, 6), Ratio::new(1, 3));
        // Values an f64 cannot separate: 1/(2^53) vs 1/(2^53+1).
        let a = Ratio::new(1, 1 << 53);
        let b = Ratio::new(1, (1 << 53) + 1);
        assert!(a > b);
    }

    #[test]
    fn exact_sum_of_many_periods_does_not_overflow() {
        // Periods 2..=200: the lcm has ~90 digits.
        let sum = ExactSum::of((2..=200u64).map(|p| Ratio::new(1, p)));
        assert!(sum.to_ratio().is_none());
        // Harmonic number H_200 - 1 ≈ 4.878
        assert!((sum.to_f64() - 4.878_030_948_121_446).abs() < 1e-9);
        assert_eq!(sum.cmp_ratio(Ratio::new(4878, 1000)), Ordering::Greater);
        assert_eq!(sum.cmp_ratio(Ratio::new(4879, 1000)), Ordering::Less);
    }

    /// Lowest terms against BigRational's own reduction, on sums whose denominators share
    /// factors in every way (and the sum 1/6 + 1/3 = 1/2 by hand).
    #[test]
    fn lowest_terms_match_a_reduced_rational() {
        assert_eq!(
            ExactSum::of([Ratio::new(1, 6), Ratio::new(1, 3)]).to_fraction_string(),
            "1/2"
        );
        let mut seed = 7u64;
        for _ in 0..300 {
            let mut sum = ExactSum::zero();
            let mut reference = BigRational::zero();
            for _ in 0..(seed % 7) {
                seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let den = 1 + (seed >> 33) % 60;
                let num = (seed >> 17) % (den + 1);
                sum.add(Ratio::new(num, den));
                reference += Ratio::new(num, den).to_big();
            }
            let (num, den) = sum.lowest_terms();
            assert_eq!(
                (BigInt::from(num), BigInt::from(den)),
                (reference.numer().clone(), reference.denom().clone())
            );
            assert_eq!(sum.to_f64(), big_to_f64(&reference));
        }
    }

    #[test]
    fn big_to_f64_small_values() {
        assert_eq!(ExactSum::of([Ratio::new(1, 4)]).to_f64(), 0.25);
        assert_eq!(ExactSum::of([Ratio::new(3, 1)]).to_f64(), 3.0);
        assert_eq!(ExactSum::zero().to_f64(), 0.0);
    }
}
