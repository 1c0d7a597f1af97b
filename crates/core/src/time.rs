//! Time: one integer-nanosecond newtype, used for both instants and durations.
//!
//! The core never reads a clock; every instant it sees is handed to it by a driver.
//! Arithmetic that could overflow in a long run uses checked or saturating forms where the
//! caller cannot rule overflow out; configuration rejects values that would overflow.

use std::fmt;
use std::ops::{Add, AddAssign, Sub, SubAssign};
use std::str::FromStr;

/// A count of nanoseconds: an instant (since the start of a run) or a duration.
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(transparent)]
pub struct Nanos(pub u64);

impl Nanos {
    pub const ZERO: Nanos = Nanos(0);
    pub const MAX: Nanos = Nanos(u64::MAX);

    /// The greatest common divisor (`gcd(0, x) = x`): the longest step on which both lie.
    pub fn gcd(self, other: Nanos) -> Nanos {
        let (mut a, mut b) = (self.as_ns(), other.as_ns());
        while b != 0 {
            (a, b) = (b, a % b);
        }
        Nanos(a)
    }

    pub const fn from_ns(ns: u64) -> Nanos {
        Nanos(ns)
    }
    pub const fn from_us(us: u64) -> Nanos {
        Nanos(us * 1_000)
    }
    pub const fn from_ms(ms: u64) -> Nanos {
        Nanos(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s * 1_000_000_000)
    }
    pub const fn as_ns(self) -> u64 {
        self.0
    }
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }
    pub fn saturating_sub(self, other: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(other.0))
    }
    pub fn checked_add(self, other: Nanos) -> Option<Nanos> {
        self.0.checked_add(other.0).map(Nanos)
    }
    pub fn checked_mul(self, k: u64) -> Option<Nanos> {
        self.0.checked_mul(k).map(Nanos)
    }
    /// The first multiple of `step` at or after `self` (`step` > 0).
    pub fn ceil_to(self, step: Nanos) -> Nanos {
        debug_assert!(step.0 > 0);
        let r = self.0 % step.0;
        if r == 0 {
            self
        } else {
            Nanos(self.0 - r + step.0)
        }
    }
    /// The last multiple of `step` at or before `self` (`step` > 0).
    pub fn floor_to(self, step: Nanos) -> Nanos {
        Nanos(self.0 - self.0 % step.0)
    }
    /// Seconds as a float, for display and reports only — never for decisions.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

impl Add for Nanos {
    type Output = Nanos;
    fn add(self, o: Nanos) -> Nanos {
        Nanos(self.0 + o.0)
    }
}
impl AddAssign for Nanos {
    fn add_assign(&mut self, o: Nanos) {
        self.0 += o.0;
    }
}
impl Sub for Nanos {
    type Output = Nanos;
    fn sub(self, o: Nanos) -> Nanos {
        Nanos(self.0 - o.0)
    }
}
impl SubAssign for Nanos {
    fn sub_assign(&mut self, o: Nanos) {
        self.0 -= o.0;
    }
}

/// Formats with the largest unit that represents the value exactly: `10ms`, `1.5us`
/// becomes `1500ns`, `0ns`. Round-trips through [`Nanos::from_str`].
impl fmt::Display for Nanos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = self.0;
        if ns == 0 {
            return write!(f, "0ns");
        }
        for (unit, scale) in [("s", 1_000_000_000u64), ("ms", 1_000_000), ("us", 1_000)] {
            if ns.is_multiple_of(scale) {
                return write!(f, "{}{}", ns / scale, unit);
            }
        }
        write!(f, "{ns}ns")
    }
}

/// Why a time string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeParseError {
    #[error("empty time value")]
    Empty,
    #[error("'{0}' has no unit: write it with one of ns, us, ms, s (for example \"10ms\")")]
    MissingUnit(String),
    #[error("'{0}' has an unknown unit: use one of ns, us, ms, s")]
    UnknownUnit(String),
    #[error("'{0}' is not a number followed by a unit")]
    BadNumber(String),
    #[error("'{0}' is not a whole number of nanoseconds")]
    Fractional(String),
    #[error("'{0}' is too large for a 64-bit nanosecond count")]
    Overflow(String),
    #[error("'{0}' is negative; times are never negative")]
    Negative(String),
}

/// Parses `"10ms"`, `"400us"`, `"2.5ms"`, `"1s"`, `"150ns"` (also `µs`). Decimal fractions
/// are exact (no floating point); a bare number is an error, never a guess.
impl FromStr for Nanos {
    type Err = TimeParseError;
    fn from_str(text: &str) -> Result<Nanos, TimeParseError> {
        let s = text.trim();
        if s.is_empty() {
            return Err(TimeParseError::Empty);
        }
        if s.starts_with('-') {
            return Err(TimeParseError::Negative(text.to_string()));
        }
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
            .ok_or_else(|| TimeParseError::MissingUnit(text.to_string()))?;
        let (number, unit) = s.split_at(split);
        let scale: u64 = match unit.trim() {
            "ns" => 1,
            "us" | "µs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            _ => return Err(TimeParseError::UnknownUnit(text.to_string())),
        };
        let number = number.replace('_', "");
        let (int_part, frac_part) = match number.split_once('.') {
            Some((i, f)) => (i, f),
            None => (number.as_str(), ""),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(TimeParseError::BadNumber(text.to_string()));
        }
        let overflow = || TimeParseError::Overflow(text.to_string());
        let int: u64 = if int_part.is_empty() {
            0
        } else {
            int_part.parse().map_err(|_| {
                if int_part.chars().all(|c| c.is_ascii_digit()) {
                    overflow()
                } else {
                    TimeParseError::BadNumber(text.to_string())
                }
            })?
        };
        let mut total = int.checked_mul(scale).ok_or_else(overflow)?;
        if !frac_part.is_empty() {
            if !frac_part.chars().all(|c| c.is_ascii_digit()) {
                return Err(TimeParseError::BadNumber(text.to_string()));
            }
            // Exact decimal: frac * scale / 10^digits must be a whole number.
            let digits = frac_part.trim_end_matches('0');
            if !digits.is_empty() {
                let pow = 10u128
                    .checked_pow(digits.len() as u32)
                    .ok_or_else(overflow)?;
                let frac: u128 = digits.parse().map_err(|_| overflow())?;
                let scaled = frac * scale as u128;
                if !scaled.is_multiple_of(pow) {
                    return Err(TimeParseError::Fractional(text.to_string()));
                }
                let add = u64::try_from(scaled / pow).map_err(|_| overflow())?;
                total = total.checked_add(add).ok_or_else(overflow)?;
            }
        }
        Ok(Nanos(total))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn gcd_is_the_longest_common_step() {
        let ms = Nanos::from_ms;
        assert_eq!(ms(10).gcd(ms(25)), ms(5));
        assert_eq!(ms(30).gcd(ms(20)).gcd(ms(50)), ms(10));
        assert_eq!(Nanos::ZERO.gcd(ms(7)), ms(7));
        assert_eq!(ms(7).gcd(Nanos::ZERO), ms(7));
        assert_eq!(Nanos(9).gcd(Nanos(4)), Nanos(1));
    }

    use super::*;

    #[test]
    fn parses_units_exactly() {
        assert_eq!("10ms".parse(), Ok(Nanos::from_ms(10)));
        assert_eq!("400us".parse(), Ok(Nanos::from_us(400)));
        assert_eq!("2.5ms".parse(), Ok(Nanos(2_500_000)));
        assert_eq!("1s".parse(), Ok(Nanos::from_secs(1)));
        assert_eq!("150ns".parse(), Ok(Nanos(150)));
        assert_eq!("1.5us".parse(), Ok(Nanos(1500)));
        assert_eq!("0.000000001s".parse(), Ok(Nanos(1)));
        assert_eq!("30 ms".parse(), Ok(Nanos::from_ms(30)));
    }

    #[test]
    fn rejects_bare_numbers_and_junk() {
        assert!(matches!(
            "10".parse::<Nanos>(),
            Err(TimeParseError::MissingUnit(_))
        ));
        assert!(matches!(
            "10m".parse::<Nanos>(),
            Err(TimeParseError::UnknownUnit(_))
        ));
        assert!(matches!(
            "1.5ns".parse::<Nanos>(),
            Err(TimeParseError::Fractional(_))
        ));
        assert!(matches!(
            "-1ms".parse::<Nanos>(),
            Err(TimeParseError::Negative(_))
        ));
        assert!(matches!(
            "ms".parse::<Nanos>(),
            Err(TimeParseError::BadNumber(_))
        ));
        assert!(matches!(
            "1.2.3ms".parse::<Nanos>(),
            Err(TimeParseError::BadNumber(_))
        ));
        assert!(matches!(
            "99999999999999999999s".parse::<Nanos>(),
            Err(TimeParseError::Overflow(_))
        ));
        assert!(matches!(
            "20000000000s".parse::<Nanos>(),
            Err(TimeParseError::Overflow(_))
        ));
    }

    #[test]
    fn display_round_trips() {
        for ns in [
            0u64,
            1,
            999,
            1000,
            1500,
            2_500_000,
            10_000_000,
            3_000_000_000,
            123_456_789,
        ] {
            let s = Nanos(ns).to_string();
            assert_eq!(s.parse::<Nanos>(), Ok(Nanos(ns)), "{s}");
        }
        assert_eq!(Nanos::from_ms(10).to_string(), "10ms");
        assert_eq!(Nanos(2_500_000).to_string(), "2500us");
    }

    #[test]
    fn rounding_to_steps() {
        let q = Nanos::from_ms(1);
        assert_eq!(Nanos(1).ceil_to(q), q);
        assert_eq!(q.ceil_to(q), q);
        assert_eq!(Nanos(1_999_999).floor_to(q), q);
    }
}
