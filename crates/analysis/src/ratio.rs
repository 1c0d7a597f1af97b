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
use num_integer::Integer;
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
///
/// **Long sums.** One pass per term over an lcm that keeps growing is still quadratic in
/// the terms (30,000 distinct periods: an lcm of 66,000 digits, 3 s of remainders). So the
/// lcm grows only up to [`CHUNK_BITS`]; then that partial sum is closed as a *chunk* and a
/// new one begins. Chunks are added to each other as fractions with the product of their
/// denominators, pairwise like a binary counter (two chunks of the same rank make one of
/// the next), so the big multiplications form a balanced tree: near-linear in the digits.
/// Every comparison stays exact (it cross-multiplies whatever common denominator the sum
/// has). A sum that closed a chunk is *long*: lowest terms then take a gcd per chunk (slow,
/// but exact: `gcd(N, a·b) = gcd(N, a) · gcd(N / gcd(N, a), b)`), and its display is a
/// 6-significant-digit decimal marked as rounded up ([`ExactSum::to_fraction_string`]).
/// A sum whose lcm stays below the bound is kept exactly as before.
#[derive(Clone, Debug)]
pub struct ExactSum {
    /// The open chunk: `Σ terms · denominator`.
    numerator: BigUint,
    /// The open chunk: the lcm of its terms' (reduced) denominators; 1 when empty.
    denominator: BigUint,
    /// The open chunk's terms' denominators (each divides `denominator`), for the reduction.
    term_denominators: Vec<u64>,
    /// Closed chunks, merged as a binary counter: ranks strictly decreasing from the bottom.
    closed: Vec<Chunk>,
    /// The lcm of every chunk ever closed, in order (their product is the closed chunks'
    /// common denominator), for the reduction of a long sum.
    closed_denominators: Vec<BigUint>,
}

/// The bound on the open chunk's lcm, in bits (about 1,200 decimal digits): an addition
/// costs at most a few passes over this many bits.
pub const CHUNK_BITS: u64 = 4096;

/// A fraction of closed chunks, `numerator / denominator` (the product of their lcms).
#[derive(Clone, Debug)]
struct Chunk {
    numerator: BigUint,
    denominator: BigUint,
    /// The chunk holds 2^rank closed chunks.
    rank: u32,
}

impl Chunk {
    /// `a + b` over the product of their denominators.
    fn plus(a: &Chunk, b_numerator: &BigUint, b_denominator: &BigUint, rank: u32) -> Chunk {
        Chunk {
            numerator: &a.numerator * b_denominator + b_numerator * &a.denominator,
            denominator: &a.denominator * b_denominator,
            rank,
        }
    }
}

/// Significant digits of a long sum's display.
const DISPLAY_DIGITS: u32 = 6;

/// A fraction in lowest terms is displayed exactly when it has at most this many characters.
const DISPLAY_EXACT_CHARS: usize = 64;

impl ExactSum {
    /// The empty sum, 0.
    pub fn zero() -> ExactSum {
        ExactSum {
            numerator: BigUint::zero(),
            denominator: BigUint::from(1u32),
            term_denominators: Vec::new(),
            closed: Vec::new(),
            closed_denominators: Vec::new(),
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
    /// `b / gcd(L mod b, b)`, and the numerator gains `a · (L/b)`. Closes the chunk when its
    /// lcm passed [`CHUNK_BITS`].
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
        if self.denominator.bits() > CHUNK_BITS {
            self.close_chunk();
        }
    }

    /// Moves the open chunk to `closed`, merging chunks of equal rank.
    fn close_chunk(&mut self) {
        let numerator = std::mem::take(&mut self.numerator);
        let denominator = std::mem::replace(&mut self.denominator, BigUint::from(1u32));
        self.term_denominators.clear();
        self.closed_denominators.push(denominator.clone());
        let mut chunk = Chunk {
            numerator,
            denominator,
            rank: 0,
        };
        while let Some(top) = self.closed.last() {
            if top.rank != chunk.rank {
                break;
            }
            let top = self.closed.pop().expect("a last chunk");
            chunk = Chunk::plus(&top, &chunk.numerator, &chunk.denominator, chunk.rank + 1);
        }
        self.closed.push(chunk);
    }

    /// Whether the sum is long: its lcm passed [`CHUNK_BITS`] (see the type's note).
    pub fn is_long(&self) -> bool {
        !self.closed.is_empty()
    }

    /// The whole sum over one common denominator (the open chunk's alone, or the product
    /// of every chunk's lcm for a long sum).
    fn whole(&self) -> (BigUint, BigUint) {
        let Some((last, rest)) = self.closed.split_last() else {
            return (self.numerator.clone(), self.denominator.clone());
        };
        // Smallest first, so that each multiplication is as balanced as the counter allows.
        let mut total = Chunk::plus(last, &self.numerator, &self.denominator, 0);
        for chunk in rest.iter().rev() {
            total = Chunk::plus(chunk, &total.numerator, &total.denominator, 0);
        }
        (total.numerator, total.denominator)
    }

    /// `self − other` as an `f64`, for display (computed exactly, then rounded).
    pub fn minus_f64(&self, other: &ExactSum) -> f64 {
        let (a, b) = self.parts();
        let (c, d) = other.parts();
        let lhs = BigInt::from(&a * &d);
        let rhs = BigInt::from(&c * &b);
        let den = BigInt::from(b * d);
        big_to_f64(&BigRational::new_raw(lhs - rhs, den))
    }

    /// Exact comparison with a single fraction (one multiplication by a `u64` each side).
    pub fn cmp_ratio(&self, other: Ratio) -> Ordering {
        if !self.is_long() {
            return (&self.numerator * other.den).cmp(&(&self.denominator * other.num));
        }
        let (n, d) = self.parts();
        (n * other.den).cmp(&(d * other.num))
    }

    /// The value, when it fits a `Ratio` (numerator and denominator in lowest terms ≤ `u64::MAX`).
    pub fn to_ratio(&self) -> Option<Ratio> {
        let (num, den) = self.lowest_terms();
        Some(Ratio::new(num.to_u64()?, den.to_u64()?))
    }

    /// Numerator and denominator with a common denominator — the lcm of the terms'
    /// denominators, or for a long sum the product of its chunks' lcms — not necessarily in
    /// lowest terms (see [`ExactSum::lowest_terms`]).
    pub fn parts(&self) -> (BigUint, BigUint) {
        self.whole()
    }

    /// Numerator and denominator in lowest terms.
    pub fn lowest_terms(&self) -> (BigUint, BigUint) {
        if self.is_long() {
            return self.long_lowest_terms();
        }
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

    /// Lowest terms of a long sum: `N / D` with `D` the product of the chunks' lcms `f_j`,
    /// and `gcd(N, Π f_j)` a product of one gcd per chunk, each taken from what is left of
    /// `N` after the previous ones divided it out.
    fn long_lowest_terms(&self) -> (BigUint, BigUint) {
        let (numerator, denominator) = self.parts();
        if numerator.is_zero() {
            return (BigUint::zero(), BigUint::from(1u32));
        }
        let mut rest = numerator.clone();
        let mut common = BigUint::from(1u32);
        for factor in self
            .closed_denominators
            .iter()
            .chain(std::iter::once(&self.denominator))
        {
            let part = (&rest % factor).gcd(factor);
            if part != BigUint::from(1u32) {
                rest /= &part;
                common *= part;
            }
        }
        (numerator / &common, denominator / &common)
    }

    /// The value as an arbitrary-precision rational (in lowest terms).
    pub fn to_big(&self) -> BigRational {
        let (num, den) = self.lowest_terms();
        BigRational::new_raw(BigInt::from(num), BigInt::from(den))
    }

    /// Nearest `f64` (correctly rounded within a few ulps), for display only.
    pub fn to_f64(&self) -> f64 {
        let (num, den) = self.parts();
        big_to_f64(&BigRational::new_raw(BigInt::from(num), BigInt::from(den)))
    }

    /// For reports: `num/den` in lowest terms when that has at most 64 characters; else
    /// (and for every long sum, see the type's note) the value with 6 significant digits,
    /// `≈…` and rounded up, so that a bound shown is never below the true value; or exact
    /// when that decimal is exact (`0.5`).
    pub fn to_fraction_string(&self) -> String {
        if !self.is_long() {
            let (num, den) = self.lowest_terms();
            let exact = format!("{num}/{den}");
            if exact.len() <= DISPLAY_EXACT_CHARS {
                return exact;
            }
        }
        let (num, den) = self.parts();
        decimal_rounded_up(&num, &den, DISPLAY_DIGITS)
    }
}

/// `num/den` (den > 0) with `digits` significant digits, rounded up: `0`, an exact decimal
/// (`0.25`), or `≈` and the decimal just above the value (`≈0.333334`).
fn decimal_rounded_up(num: &BigUint, den: &BigUint, digits: u32) -> String {
    if num.is_zero() {
        return "0".to_string();
    }
    let ten = BigUint::from(10u32);
    let low = ten.pow(digits - 1);
    let high = ten.pow(digits);
    // value = q / 10^scale with low ≤ q < high; start from the bit lengths' estimate.
    let estimate = (num.bits() as f64 - den.bits() as f64) * std::f64::consts::LOG10_2;
    let mut scale = i64::from(digits) - 1 - estimate.floor() as i64;
    let (mut q, mut r);
    loop {
        (q, r) = if scale >= 0 {
            (num * ten.pow(scale as u32)).div_rem(den)
        } else {
            num.div_rem(&(den * ten.pow((-scale) as u32)))
        };
        if q < low {
            scale += 1;
        } else if q >= high {
            scale -= 1;
        } else {
            break;
        }
    }
    let exact = r.is_zero();
    if !exact {
        q += 1u32;
        if q == high {
            q = low;
            scale -= 1;
        }
    }
    let mut text = q.to_string();
    if scale > 0 {
        let scale = scale as usize;
        if text.len() <= scale {
            text = format!("{}{text}", "0".repeat(scale + 1 - text.len()));
        }
        text.insert(text.len() - scale, '.');
        let trimmed = text.trim_end_matches('0').trim_end_matches('.');
        text = trimmed.to_string();
    } else {
        text.push_str(&"0".repeat((-scale) as usize));
    }
    if exact {
        text
    } else {
        format!("≈{text}")
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
        if !self.is_long() && !other.is_long() {
            return (&self.numerator * &other.denominator)
                .cmp(&(&other.numerator * &self.denominator));
        }
        let (a, b) = self.parts();
        let (c, d) = other.parts();
        (a * d).cmp(&(c * b))
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

    /// Sums that close chunks (an lcm past [`CHUNK_BITS`]) compare, reduce and convert as
    /// a reduced rational does: 250 terms over 61-bit denominators, some repeated, so that
    /// chunks of several ranks merge and a chunk's factors recur in others.
    #[test]
    fn long_sums_are_exact() {
        let mut seed = 11u64;
        let mut sum = ExactSum::zero();
        let mut reference = BigRational::zero();
        for i in 0..250u64 {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let den = (1u64 << 60) + (seed >> 40) % 5000 + 6 * (i % 3);
            let num = den / 2 - (seed >> 20) % 1000;
            sum.add(Ratio::new(num, den));
            reference += Ratio::new(num, den).to_big();
        }
        assert!(sum.is_long());
        assert!(sum.closed_denominators.len() >= 2, "several chunks");
        let (num, den) = sum.lowest_terms();
        assert_eq!(
            (BigInt::from(num), BigInt::from(den)),
            (reference.numer().clone(), reference.denom().clone())
        );
        assert_eq!(sum.to_big(), reference);
        assert_eq!(sum.to_f64(), big_to_f64(&reference));
        // Just below and just above the value, and the value itself.
        let approx = sum.to_f64();
        let below = Ratio::new((approx * 1e9) as u64 - 1, 1_000_000_000);
        let above = Ratio::new((approx * 1e9) as u64 + 2, 1_000_000_000);
        assert_eq!(sum.cmp_ratio(below), Ordering::Greater);
        assert_eq!(sum.cmp_ratio(above), Ordering::Less);
        let short = ExactSum::of([below]);
        assert_eq!(sum.cmp(&short), Ordering::Greater);
        assert_eq!(short.cmp(&sum), Ordering::Less);
        assert_eq!(sum.cmp(&sum.clone()), Ordering::Equal);
        assert_eq!(
            sum.minus_f64(&short),
            big_to_f64(&(reference - below.to_big()))
        );
    }

    /// Issue 23: 30,000 distinct periods. The sum stays near-linear (the lcm grew by one
    /// pass per term over all its digits: 3 s in a release build) and prints as a short
    /// decimal rounded up, not a fraction of 133 KB.
    #[test]
    fn thirty_thousand_distinct_periods_print_short() {
        let sum = ExactSum::of((0..30_000u64).map(|t| Ratio::new(1, 1_000_000 + t)));
        assert!(sum.is_long());
        let text = sum.to_fraction_string();
        assert_eq!(text, "≈0.0295589");
        let shown = Ratio::new(295_589, 10_000_000);
        assert_eq!(sum.cmp_ratio(shown), Ordering::Less);
        assert_eq!(
            sum.cmp_ratio(Ratio::new(295_588, 10_000_000)),
            Ordering::Greater
        );
    }

    #[test]
    fn short_decimals_round_up_and_say_so() {
        let show = |n: u64, d: u64| decimal_rounded_up(&BigUint::from(n), &BigUint::from(d), 6);
        assert_eq!(show(1, 3), "≈0.333334");
        assert_eq!(show(2, 3), "≈0.666667");
        assert_eq!(show(1, 4), "0.25");
        assert_eq!(show(3, 1), "3");
        assert_eq!(show(0, 7), "0");
        assert_eq!(show(123_456_789, 1), "≈123457000");
        assert_eq!(show(19_999_999, 10_000_000), "≈2");
        assert_eq!(show(1, 70_000_000), "≈0.0000000142858");
        // A fraction longer than 64 characters prints as a decimal; a shorter one as is.
        let long = ExactSum::of((2..=120u64).map(|p| Ratio::new(1, p)));
        assert!(!long.is_long());
        assert!(long.to_fraction_string().starts_with('≈'), "{long}");
        assert_eq!(
            ExactSum::of([Ratio::new(1, 6), Ratio::new(1, 3)]).to_string(),
            "1/2"
        );
    }
}
