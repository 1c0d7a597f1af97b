//! Period distributions: uniform, log-uniform and harmonic.
//!
//! * [`PeriodDistribution::Uniform`] — a whole number of `granularity` steps, uniform
//!   between `min` and `max` (the csa procedure: uniform integer ms in a range).
//! * [`PeriodDistribution::LogUniform`] — Emberson, Stafford & Davis, "Techniques for the
//!   synthesis of multiprocessor tasksets", WATERS 2010, §4: draw `r` uniform in
//!   `[ln min, ln(max + g))` and take `T = ⌊e^r / g⌋ · g`. Each order of magnitude gets
//!   the same share of periods, and the `+ g` gives the top step its full width.
//! * [`PeriodDistribution::Harmonic`] — `base · 2^k` with `k` uniform in
//!   `0 ..= max_exponent`; any two such periods divide one another.
//! * [`PeriodDistribution::HarmonicSet`] — uniform over a given set whose members divide
//!   one another (checked), for example ARINC-653 partition periods {25, 50, 100, 200} ms.
//!
//! Every draw is one call to the caller's [`SimRng`] (uniform integer or float), so a
//! distribution consumes one draw per period.

use crate::GenError;
use rtvmm_core::rng::SimRng;
use rtvmm_core::Nanos;
use serde::Serialize;
use std::fmt;

/// How to draw a task period. Validate with [`PeriodDistribution::validate`]; every
/// sampling method validates first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum PeriodDistribution {
    /// Uniform over the multiples of `granularity` in `[min, max]` (both multiples of it).
    Uniform {
        min: Nanos,
        max: Nanos,
        granularity: Nanos,
    },
    /// Log-uniform over `[min, max]` in steps of `granularity` (Emberson et al. 2010);
    /// `min > 0`, both multiples of `granularity`.
    LogUniform {
        min: Nanos,
        max: Nanos,
        granularity: Nanos,
    },
    /// `base · 2^k`, `k` uniform in `0 ..= max_exponent`.
    Harmonic { base: Nanos, max_exponent: u32 },
    /// Uniform over a non-empty set of positive periods that pairwise divide.
    HarmonicSet(Vec<Nanos>),
}

impl PeriodDistribution {
    /// Uniform whole milliseconds in `[min_ms, max_ms]` (the csa ranges).
    pub fn uniform_ms(min_ms: u64, max_ms: u64) -> PeriodDistribution {
        PeriodDistribution::Uniform {
            min: Nanos::from_ms(min_ms),
            max: Nanos::from_ms(max_ms),
            granularity: Nanos::from_ms(1),
        }
    }

    /// Checks the parameters: positive steps and bounds, `min ≤ max`, bounds on the grid,
    /// no overflow, a harmonic set that is harmonic.
    pub fn validate(&self) -> Result<(), GenError> {
        let invalid = |parameter: &'static str, problem: String| {
            Err(GenError::InvalidParameter { parameter, problem })
        };
        match self {
            PeriodDistribution::Uniform {
                min,
                max,
                granularity,
            }
            | PeriodDistribution::LogUniform {
                min,
                max,
                granularity,
            } => {
                if granularity.is_zero() {
                    return invalid("granularity", "must be positive".into());
                }
                if min.is_zero() {
                    return invalid("min", "a period must be positive".into());
                }
                if min > max {
                    return invalid("min", format!("{min} is above max {max}"));
                }
                for (parameter, value) in [("min", min), ("max", max)] {
                    if value.as_ns() % granularity.as_ns() != 0 {
                        return invalid(
                            parameter,
                            format!("{value} is not a multiple of the granularity {granularity}"),
                        );
                    }
                }
                if max.checked_add(*granularity).is_none() {
                    return invalid("max", format!("{max} is too large"));
                }
                Ok(())
            }
            PeriodDistribution::Harmonic { base, max_exponent } => {
                if base.is_zero() {
                    return invalid("base", "a period must be positive".into());
                }
                let overflow = 1u64
                    .checked_shl(*max_exponent)
                    .and_then(|factor| base.checked_mul(factor))
                    .is_none();
                if overflow {
                    return invalid(
                        "max_exponent",
                        format!("{base} · 2^{max_exponent} overflows a 64-bit nanosecond count"),
                    );
                }
                Ok(())
            }
            PeriodDistribution::HarmonicSet(set) => {
                if set.is_empty() {
                    return invalid("set", "needs at least one period".into());
                }
                if set.iter().any(|p| p.is_zero()) {
                    return invalid("set", "a period must be positive".into());
                }
                if !is_harmonic(set) {
                    return invalid(
                        "set",
                        format!("{} is not harmonic: some pair does not divide", list(set)),
                    );
                }
                Ok(())
            }
        }
    }

    /// One period.
    pub fn sample(&self, rng: &mut SimRng) -> Result<Nanos, GenError> {
        self.validate()?;
        Ok(self.sample_valid(rng))
    }

    /// `count` periods, drawn in order.
    pub fn sample_n(&self, rng: &mut SimRng, count: usize) -> Result<Vec<Nanos>, GenError> {
        self.validate()?;
        Ok((0..count).map(|_| self.sample_valid(rng)).collect())
    }

    fn sample_valid(&self, rng: &mut SimRng) -> Nanos {
        match self {
            PeriodDistribution::Uniform {
                min,
                max,
                granularity,
            } => {
                let g = granularity.as_ns();
                Nanos(rng.uniform_u64(min.as_ns() / g, max.as_ns() / g) * g)
            }
            PeriodDistribution::LogUniform {
                min,
                max,
                granularity,
            } => {
                let g = granularity.as_ns();
                let low = libm::log(min.as_ns() as f64);
                let high = libm::log((max.as_ns() + g) as f64);
                let r = rng.uniform_range_f64(low, high);
                let steps = libm::floor(libm::exp(r) / g as f64);
                // e^r can round a hair past either end; the clamp keeps the documented range.
                let steps = (steps as u64).clamp(min.as_ns() / g, max.as_ns() / g);
                Nanos(steps * g)
            }
            PeriodDistribution::Harmonic { base, max_exponent } => {
                let k = rng.uniform_u64(0, u64::from(*max_exponent));
                Nanos(base.as_ns() << k)
            }
            PeriodDistribution::HarmonicSet(set) => {
                let index = rng.uniform_u64(0, set.len() as u64 - 1) as usize;
                set[index]
            }
        }
    }
}

impl fmt::Display for PeriodDistribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PeriodDistribution::Uniform {
                min,
                max,
                granularity,
            } => write!(f, "uniform in [{min}, {max}] in steps of {granularity}"),
            PeriodDistribution::LogUniform {
                min,
                max,
                granularity,
            } => write!(
                f,
                "log-uniform in [{min}, {max}] in steps of {granularity} (Emberson et al. 2010)"
            ),
            PeriodDistribution::Harmonic { base, max_exponent } => {
                write!(f, "harmonic {base}·2^k, k uniform in 0..={max_exponent}")
            }
            PeriodDistribution::HarmonicSet(set) => {
                write!(f, "uniform over the harmonic set {}", list(set))
            }
        }
    }
}

fn list(set: &[Nanos]) -> String {
    let items: Vec<String> = set.iter().map(Nanos::to_string).collect();
    format!("{{{}}}", items.join(", "))
}

/// True when every pair of the (positive) periods divides one way or the other. Zero
/// periods make a set non-harmonic. The empty set is harmonic.
pub fn is_harmonic(periods: &[Nanos]) -> bool {
    let mut sorted: Vec<u64> = periods.iter().map(|p| p.as_ns()).collect();
    sorted.sort_unstable();
    sorted.dedup();
    // Divisibility is transitive, so a sorted chain in which each divides the next is
    // pairwise harmonic, and a pairwise harmonic set sorts into such a chain.
    sorted.first() != Some(&0) && sorted.windows(2).all(|w| w[1] % w[0] == 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ms(v: u64) -> Nanos {
        Nanos::from_ms(v)
    }

    #[test]
    fn is_harmonic_checks_every_pair() {
        assert!(is_harmonic(&[ms(25), ms(100), ms(50), ms(200), ms(50)]));
        assert!(!is_harmonic(&[ms(25), ms(50), ms(75)]));
        assert!(!is_harmonic(&[ms(0), ms(10)]));
        assert!(is_harmonic(&[]));
    }

    #[test]
    fn uniform_covers_the_whole_grid_and_nothing_else() {
        let dist = PeriodDistribution::uniform_ms(10, 13);
        let mut rng = SimRng::new(4);
        let draws = dist.sample_n(&mut rng, 400).unwrap();
        for p in [10, 11, 12, 13] {
            assert!(draws.contains(&ms(p)), "{p} ms never drawn");
        }
        assert!(draws.iter().all(|p| (ms(10)..=ms(13)).contains(p)));
    }

    /// Log-uniform over [1 ms, 1000 ms]: a third of the draws in each decade, which a
    /// uniform draw (0.1 % below 10 ms) would fail badly.
    #[test]
    fn log_uniform_gives_each_decade_its_share() {
        let dist = PeriodDistribution::LogUniform {
            min: ms(1),
            max: ms(1000),
            granularity: Nanos::from_us(1),
        };
        let mut rng = SimRng::new(6);
        let draws = dist.sample_n(&mut rng, 30_000).unwrap();
        let below_10 = draws.iter().filter(|p| **p < ms(10)).count() as f64 / 30_000.0;
        let below_100 = draws.iter().filter(|p| **p < ms(100)).count() as f64 / 30_000.0;
        assert!((below_10 - 1.0 / 3.0).abs() < 0.015, "{below_10}");
        assert!((below_100 - 2.0 / 3.0).abs() < 0.015, "{below_100}");
    }

    #[test]
    fn invalid_distributions_name_the_parameter() {
        let cases = [
            (
                PeriodDistribution::Uniform {
                    min: ms(10),
                    max: ms(5),
                    granularity: ms(1),
                },
                "min",
            ),
            (
                PeriodDistribution::LogUniform {
                    min: ms(10),
                    max: Nanos(20_500_000),
                    granularity: ms(1),
                },
                "max",
            ),
            (
                PeriodDistribution::LogUniform {
                    min: Nanos::ZERO,
                    max: ms(5),
                    granularity: ms(1),
                },
                "min",
            ),
            (
                PeriodDistribution::Harmonic {
                    base: ms(1),
                    max_exponent: 64,
                },
                "max_exponent",
            ),
            (PeriodDistribution::HarmonicSet(vec![ms(20), ms(30)]), "set"),
            (PeriodDistribution::HarmonicSet(vec![]), "set"),
        ];
        for (dist, expected) in cases {
            match dist.sample(&mut SimRng::new(1)) {
                Err(GenError::InvalidParameter { parameter, .. }) => {
                    assert_eq!(parameter, expected, "{dist:?}")
                }
                other => panic!("{dist:?} gave {other:?}"),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        #[test]
        fn log_uniform_stays_in_range_on_the_grid(
            seed in any::<u64>(), min_steps in 1u64..500, extra in 0u64..5_000, g_us in 1u64..1000
        ) {
            let g = Nanos::from_us(g_us);
            let min = Nanos(min_steps * g.as_ns());
            let max = Nanos((min_steps + extra) * g.as_ns());
            let dist = PeriodDistribution::LogUniform { min, max, granularity: g };
            let draws = dist.sample_n(&mut SimRng::new(seed), 50).unwrap();
            for p in draws {
                prop_assert!(p >= min && p <= max, "{} outside [{}, {}]", p, min, max);
                prop_assert_eq!(p.as_ns() % g.as_ns(), 0);
            }
        }

        #[test]
        fn harmonic_periods_pairwise_divide(
            seed in any::<u64>(), base_us in 1u64..100_000, max_exponent in 0u32..8
        ) {
            let dist = PeriodDistribution::Harmonic { base: Nanos::from_us(base_us), max_exponent };
            let draws = dist.sample_n(&mut SimRng::new(seed), 20).unwrap();
            for a in &draws {
                for b in &draws {
                    let (small, large) = if a <= b { (a, b) } else { (b, a) };
                    prop_assert_eq!(large.as_ns() % small.as_ns(), 0, "{} and {}", a, b);
                }
            }
        }

        #[test]
        fn harmonic_set_draws_only_members(seed in any::<u64>()) {
            let set = vec![ms(25), ms(50), ms(100), ms(200)];
            let dist = PeriodDistribution::HarmonicSet(set.clone());
            for p in dist.sample_n(&mut SimRng::new(seed), 20).unwrap() {
                prop_assert!(set.contains(&p));
            }
        }
    }
}
