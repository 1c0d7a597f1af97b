//! The one random stream of a run.
//!
//! ChaCha8 (`rand_chacha::ChaCha8Rng`) is a named algorithm whose output for a seed is
//! fixed by its specification, so a seed means the same draws on every machine and every
//! version. The distributions are written here, on top of raw `u64`s, so that no library
//! change to a sampling method can change our results.

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// A seeded, portable random stream.
#[derive(Clone, Debug)]
pub struct SimRng {
    inner: ChaCha8Rng,
}

impl SimRng {
    pub fn new(seed: u64) -> SimRng {
        SimRng {
            inner: ChaCha8Rng::seed_from_u64(seed),
        }
    }

    /// A stream derived from a seed and a label (for example α, or a run index): the same
    /// pair gives the same stream; different labels give unrelated streams.
    pub fn derived(seed: u64, label: u64) -> SimRng {
        // SplitMix64 finaliser mixes the label so that nearby labels diverge at once.
        let mut z = seed ^ label.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        SimRng::new(z ^ (z >> 31))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.inner.next_u64()
    }

    /// Uniform integer in `[lo, hi]` (inclusive), without modulo bias (Lemire's method
    /// with rejection).
    pub fn uniform_u64(&mut self, lo: u64, hi: u64) -> u64 {
        assert!(lo <= hi, "uniform_u64: empty range {lo}..={hi}");
        let span = hi - lo;
        if span == u64::MAX {
            return self.next_u64();
        }
        let range = span + 1;
        let threshold = range.wrapping_neg() % range;
        loop {
            let m = (self.next_u64() as u128) * (range as u128);
            if (m as u64) >= threshold {
                return lo + (m >> 64) as u64;
            }
        }
    }

    /// Uniform float in `[0, 1)` with 53 random bits. For generators and workload draws,
    /// never for scheduling decisions.
    pub fn uniform_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform float in `[lo, hi)`.
    pub fn uniform_range_f64(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform_f64()
    }

    /// Exponentially distributed float with the given mean (inverse transform).
    pub fn exponential_f64(&mut self, mean: f64) -> f64 {
        // 1 - u is in (0, 1], so ln never sees 0.
        -mean * (1.0 - self.uniform_f64()).ln()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_labels_diverge() {
        let a: Vec<u64> = (0..8)
            .map({
                let mut r = SimRng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..8)
            .map({
                let mut r = SimRng::new(7);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(
            SimRng::derived(7, 1).next_u64(),
            SimRng::derived(7, 2).next_u64()
        );
    }

    #[test]
    fn uniform_stays_in_range_and_hits_both_ends() {
        let mut r = SimRng::new(1);
        let mut seen = [false; 4];
        for _ in 0..1000 {
            let x = r.uniform_u64(5, 8);
            assert!((5..=8).contains(&x));
            seen[(x - 5) as usize] = true;
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(r.uniform_u64(3, 3), 3);
        let f = r.uniform_f64();
        assert!((0.0..1.0).contains(&f));
    }
}
