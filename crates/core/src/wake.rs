//! Wake delivery: the time a timer or an event takes to reach a guest task.
//!
//! # Design note
//! - On a real machine a timer expiry or an event-channel notification reaches the task
//!   that waits for it only after the hardware interrupt, the hypervisor's upcall and the
//!   guest kernel's wake path (`docs/scenario.md`, "`wake_delivery`"). A driver models it
//!   as one **delivery latency** per job release: a [`WakeDelivery::fixed`] part plus a
//!   [`WakeDelivery::random`] part drawn per wake.
//! - The job keeps the **event's instant as its release** (and its deadline counts from
//!   there): only its arrival in the guest's ready queue waits. So the delivery shows up
//!   in every response time and latency measured from the release.
//! - The draws come from a stream of their own ([`WakeDelivery::stream`]), derived from
//!   the run's seed: turning delivery on leaves every other draw of the run as it was.
//! - [`WakeDelivery::OFF`] (the default) costs nothing: a driver asks
//!   [`WakeDelivery::is_off`] once and takes its old path.
//! - Floats are used only to draw a latency (as for Poisson gaps), never in a decision;
//!   a draw is rounded to whole nanoseconds.

use std::sync::Arc;

use crate::rng::SimRng;
use crate::time::Nanos;

/// The largest delivery latency a setting may state (fixed part, mean, or a quantile):
/// one second, far above any wake path, and small enough that an instant plus a delivery
/// stays within the simulator's clock (`crates/scenario/src/lib.rs`, "Limits").
pub const MAX_WAKE_DELIVERY: Nanos = Nanos::from_secs(1);

/// The label of the delivery stream ([`SimRng::derived`]): "wake" in ASCII.
const STREAM_LABEL: u64 = 0x7761_6b65;

/// The random part of a delivery latency.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum WakeRandom {
    /// No random part.
    #[default]
    None,
    /// Exponentially distributed with this mean (a draw is at most about 36.8 means: the
    /// uniform draw has 53 bits).
    Exponential { mean: Nanos },
    /// Uniform on `[0, max]` (whole nanoseconds).
    Uniform { max: Nanos },
    /// An empirical distribution given by `n ≥ 2` non-decreasing quantiles at the
    /// probabilities `0, 1/(n−1), …, 1` (101 of them: the percentiles p0…p100): a draw
    /// takes a uniform `u` in `[0, 1)` and interpolates linearly between the two
    /// quantiles around `u·(n−1)` (the inverse of a piecewise-linear distribution
    /// function).
    Empirical { quantiles: Arc<[Nanos]> },
}

impl WakeRandom {
    /// The distribution's name as a scenario file writes it (`dist = "…"`).
    pub fn name(&self) -> &'static str {
        match self {
            WakeRandom::None => "none",
            WakeRandom::Exponential { .. } => "exponential",
            WakeRandom::Uniform { .. } => "uniform",
            WakeRandom::Empirical { .. } => "empirical",
        }
    }

    /// The mean of a draw, in nanoseconds (exact for the piecewise-linear empirical form).
    pub fn mean_ns(&self) -> f64 {
        match self {
            WakeRandom::None => 0.0,
            WakeRandom::Exponential { mean } => mean.as_ns() as f64,
            WakeRandom::Uniform { max } => max.as_ns() as f64 / 2.0,
            WakeRandom::Empirical { quantiles } => {
                let segments = (quantiles.len() - 1) as f64;
                quantiles
                    .windows(2)
                    .map(|w| (w[0].as_ns() as f64 + w[1].as_ns() as f64) / 2.0)
                    .sum::<f64>()
                    / segments
            }
        }
    }

    fn draw(&self, rng: &mut SimRng) -> Nanos {
        match self {
            WakeRandom::None => Nanos::ZERO,
            WakeRandom::Exponential { mean } => {
                Nanos(rng.exponential_f64(mean.as_ns() as f64).round() as u64)
            }
            WakeRandom::Uniform { max } => Nanos(rng.uniform_u64(0, max.as_ns())),
            WakeRandom::Empirical { quantiles } => {
                let at = rng.uniform_f64() * (quantiles.len() - 1) as f64;
                let i = (at as usize).min(quantiles.len() - 2);
                let (lo, hi) = (quantiles[i].as_ns() as f64, quantiles[i + 1].as_ns() as f64);
                Nanos((lo + (hi - lo) * (at - i as f64)).round() as u64)
            }
        }
    }
}

/// A per-wake delivery latency: `fixed + random` (module doc). Build one with
/// [`WakeDelivery::new`], which checks it; [`WakeDelivery::OFF`] is none.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct WakeDelivery {
    /// Added to every delivery.
    pub fixed: Nanos,
    /// Drawn per delivery, from the delivery stream.
    pub random: WakeRandom,
    /// The shipped preset it was read from, if any (for reports and the normalised form).
    pub preset: Option<&'static str>,
}

/// What is wrong with a wake delivery setting; each names the field.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WakeDeliveryError {
    #[error("{field}: {value} is above the limit of {max} for a wake delivery", max = MAX_WAKE_DELIVERY)]
    TooLarge { field: &'static str, value: Nanos },
    #[error("random.mean: must be greater than 0 (leave `random` out for no random part)")]
    ZeroMean,
    #[error("random.quantiles: {0} given; at least 2 are needed (the least and the largest)")]
    TooFewQuantiles(usize),
    #[error(
        "random.quantiles: quantile {index} ({value}) is below the one before it ({before}); \
         quantiles go from the least to the largest"
    )]
    Decreasing {
        index: usize,
        value: Nanos,
        before: Nanos,
    },
}

impl WakeDelivery {
    /// No delivery latency: a release reaches the guest at its instant.
    pub const OFF: WakeDelivery = WakeDelivery {
        fixed: Nanos::ZERO,
        random: WakeRandom::None,
        preset: None,
    };

    /// A checked setting: every time at most [`MAX_WAKE_DELIVERY`], a mean above zero,
    /// at least two non-decreasing quantiles.
    pub fn new(fixed: Nanos, random: WakeRandom) -> Result<WakeDelivery, WakeDeliveryError> {
        let limit = |field, value: Nanos| {
            if value > MAX_WAKE_DELIVERY {
                Err(WakeDeliveryError::TooLarge { field, value })
            } else {
                Ok(())
            }
        };
        limit("fixed", fixed)?;
        match &random {
            WakeRandom::None => {}
            WakeRandom::Exponential { mean } => {
                if *mean == Nanos::ZERO {
                    return Err(WakeDeliveryError::ZeroMean);
                }
                limit("random.mean", *mean)?;
            }
            WakeRandom::Uniform { max } => limit("random.max", *max)?,
            WakeRandom::Empirical { quantiles } => {
                if quantiles.len() < 2 {
                    return Err(WakeDeliveryError::TooFewQuantiles(quantiles.len()));
                }
                for (index, w) in quantiles.windows(2).enumerate() {
                    if w[1] < w[0] {
                        return Err(WakeDeliveryError::Decreasing {
                            index: index + 1,
                            value: w[1],
                            before: w[0],
                        });
                    }
                }
                limit("random.quantiles", *quantiles.last().expect("two at least"))?;
            }
        }
        Ok(WakeDelivery {
            fixed,
            random,
            preset: None,
        })
    }

    /// A fixed latency only.
    pub fn fixed(fixed: Nanos) -> Result<WakeDelivery, WakeDeliveryError> {
        WakeDelivery::new(fixed, WakeRandom::None)
    }

    /// Whether every delivery is instant (the default): a driver then releases jobs at
    /// their instant, as without this setting.
    #[inline]
    pub fn is_off(&self) -> bool {
        self.fixed == Nanos::ZERO && self.random == WakeRandom::None
    }

    /// The stream the delivery latencies of a run with `seed` are drawn from: its own,
    /// so that no other draw of the run moves when delivery is turned on.
    pub fn stream(seed: u64) -> SimRng {
        SimRng::derived(seed, STREAM_LABEL)
    }

    /// One delivery latency, drawn from `rng` (the run's [`Self::stream`]).
    #[inline]
    pub fn draw(&self, rng: &mut SimRng) -> Nanos {
        self.fixed + self.random.draw(rng)
    }

    /// The mean latency, in nanoseconds.
    pub fn mean_ns(&self) -> f64 {
        self.fixed.as_ns() as f64 + self.random.mean_ns()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Nanos {
        Nanos::from_us(n)
    }

    fn sample_mean(delivery: &WakeDelivery, seed: u64, draws: u64) -> f64 {
        let mut rng = WakeDelivery::stream(seed);
        (0..draws)
            .map(|_| delivery.draw(&mut rng).as_ns() as f64)
            .sum::<f64>()
            / draws as f64
    }

    #[test]
    fn off_draws_nothing() {
        assert!(WakeDelivery::OFF.is_off());
        assert_eq!(WakeDelivery::default(), WakeDelivery::OFF);
        let mut rng = WakeDelivery::stream(1);
        assert_eq!(WakeDelivery::OFF.draw(&mut rng), Nanos::ZERO);
        assert!(!WakeDelivery::fixed(us(1)).unwrap().is_off());
    }

    /// The exponential part's sample mean over 100,000 seeded draws lies within 2 % of
    /// its stated mean (the standard error is 0.3 %), and the fixed part adds exactly.
    #[test]
    fn exponential_sample_mean_is_near_its_mean() {
        let d = WakeDelivery::new(us(5), WakeRandom::Exponential { mean: us(3) }).unwrap();
        let mean = sample_mean(&d, 42, 100_000);
        assert!(
            (mean - 8_000.0).abs() < 0.02 * 3_000.0,
            "sample mean {mean}"
        );
        assert_eq!(d.mean_ns(), 8_000.0);
    }

    #[test]
    fn uniform_and_empirical_sample_means_are_near_their_means() {
        let u = WakeDelivery::new(Nanos::ZERO, WakeRandom::Uniform { max: us(10) }).unwrap();
        let mean = sample_mean(&u, 7, 100_000);
        assert!((mean - 5_000.0).abs() < 100.0, "uniform sample mean {mean}");
        // Half the mass on [1, 2] µs, half on [2, 10] µs: mean (1.5 + 6) / 2 = 3.75 µs.
        let quantiles: Arc<[Nanos]> = vec![us(1), us(2), us(10)].into();
        let e = WakeDelivery::new(Nanos::ZERO, WakeRandom::Empirical { quantiles }).unwrap();
        assert_eq!(e.mean_ns(), 3_750.0);
        let mean = sample_mean(&e, 7, 100_000);
        assert!(
            (mean - 3_750.0).abs() < 75.0,
            "empirical sample mean {mean}"
        );
    }

    /// Every empirical draw lies between the least and the largest quantile; a flat
    /// stretch gives exactly its value.
    #[test]
    fn empirical_draws_stay_within_the_quantiles() {
        let quantiles: Arc<[Nanos]> = vec![us(4), us(4), us(4), us(9)].into();
        let e = WakeDelivery::new(us(1), WakeRandom::Empirical { quantiles }).unwrap();
        let mut rng = WakeDelivery::stream(3);
        let draws: Vec<Nanos> = (0..10_000).map(|_| e.draw(&mut rng)).collect();
        assert!(draws.iter().all(|&d| (us(5)..=us(10)).contains(&d)));
        // Two thirds of the mass sits at exactly 4 µs (+1 fixed).
        let flat = draws.iter().filter(|&&d| d == us(5)).count();
        assert!(
            (6_300..7_000).contains(&flat),
            "{flat} draws at the flat quantile"
        );
    }

    #[test]
    fn same_seed_same_draws_other_seed_other_draws() {
        let d = WakeDelivery::new(us(5), WakeRandom::Exponential { mean: us(3) }).unwrap();
        let draws = |seed| {
            let mut rng = WakeDelivery::stream(seed);
            (0..16).map(|_| d.draw(&mut rng)).collect::<Vec<_>>()
        };
        assert_eq!(draws(9), draws(9));
        assert_ne!(draws(9), draws(10));
        // The stream is not the run's main stream of the same seed.
        assert_ne!(
            WakeDelivery::stream(9).next_u64(),
            SimRng::new(9).next_u64()
        );
    }

    #[test]
    fn bad_settings_name_their_field() {
        let err = |fixed, random| WakeDelivery::new(fixed, random).unwrap_err().to_string();
        assert_eq!(
            err(Nanos::from_secs(2), WakeRandom::None),
            "fixed: 2s is above the limit of 1s for a wake delivery"
        );
        assert!(
            err(Nanos::ZERO, WakeRandom::Exponential { mean: Nanos::ZERO })
                .starts_with("random.mean: must be greater than 0")
        );
        assert!(err(
            Nanos::ZERO,
            WakeRandom::Empirical {
                quantiles: vec![us(1)].into()
            }
        )
        .starts_with("random.quantiles: 1 given"));
        assert_eq!(
            err(
                Nanos::ZERO,
                WakeRandom::Empirical {
                    quantiles: vec![us(1), us(3), us(2)].into()
                }
            ),
            "random.quantiles: quantile 2 (2us) is below the one before it (3us); quantiles \
             go from the least to the largest"
        );
    }
}
