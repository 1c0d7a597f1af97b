//! What a run keeps about its jobs, in memory that does not grow with their number.
//!
//! A run may simulate millions of jobs; keeping each one (as `--jobs` asks) costs memory
//! in proportion. The results need less: per task, counts and the response-time and
//! latency distributions. [`TaskStats`] keeps those as the jobs finish, and
//! [`Samples`] keeps one distribution:
//!
//! - **exactly, always**: the count, the minimum, the maximum and the sum (in `u128`), so
//!   counts, minima, maxima and means are exact however long the run;
//! - **the values themselves exactly** while there are at most [`EXACT_SAMPLES`] of them
//!   (so a short run reports exact nearest-rank percentiles);
//! - past that, **in an HDR histogram** (the `hdrhistogram` crate, 3 significant digits),
//!   whose size depends on the range of the values, not on their number: about 150–200 KB
//!   for values up to a second, at most about 450 KB.
//!
//! # Precision of a percentile
//! [`percentiles`] takes the nearest-rank percentile (the ⌈p·n/100⌉-th smallest value) of
//! a union of distributions, each value standing for itself when its distribution holds
//! it exactly, or for the upper end of its histogram bucket otherwise. The histogram
//! resolves values below 2048 exactly and above that in buckets narrower than 1/1024 of
//! their lower end; so every stand-in `ρ(x)` satisfies `x ≤ ρ(x) < x·(1 + 1/1024)`, and,
//! since the k-th smallest of a pointwise larger multiset is larger, the percentile
//! reported is never below the exact one and above it by less than 1/1024 of it (under
//! 0.1 %) — capped at the exact maximum. A ratio (response time ÷ relative deadline)
//! divides both sides by the same deadline and keeps the bound.

use hdrhistogram::Histogram;

use rtvmm_core::guest::Job;
use rtvmm_core::Nanos;

/// Values kept exactly per distribution before moving to a histogram. 16,384 values
/// (128 KB) cost about as much as the histogram that replaces them.
pub const EXACT_SAMPLES: usize = 16_384;

/// Significant decimal digits of the histogram: 3 gives buckets narrower than 1/1024 of
/// their values.
const SIGNIFICANT_DIGITS: u8 = 3;

/// The largest value the histogram can track (`hdrhistogram`'s auto-resize limit). Times
/// in a run stay far below it; a larger value is recorded as this (percentiles are capped
/// at the exact maximum anyway).
const HISTOGRAM_MAX: u64 = (i64::MAX / 2) as u64;

/// One distribution of `u64` values (nanoseconds) in bounded memory. See the module docs.
#[derive(Clone, Debug, Default)]
pub struct Samples {
    count: u64,
    min: u64,
    max: u64,
    sum: u128,
    values: Values,
}

#[derive(Clone, Debug)]
enum Values {
    Exact(Vec<u64>),
    Histogram(Box<Histogram<u64>>),
}

impl Default for Values {
    fn default() -> Values {
        Values::Exact(Vec::new())
    }
}

impl Samples {
    pub fn new() -> Samples {
        Samples::default()
    }

    /// Adds one value.
    pub fn record(&mut self, value: u64) {
        if self.count == 0 {
            self.min = value;
            self.max = value;
        } else {
            self.min = self.min.min(value);
            self.max = self.max.max(value);
        }
        self.count += 1;
        self.sum += u128::from(value);
        match &mut self.values {
            Values::Exact(values) if values.len() < EXACT_SAMPLES => values.push(value),
            Values::Exact(values) => {
                let mut histogram =
                    Histogram::new(SIGNIFICANT_DIGITS).expect("3 significant digits are valid");
                for &v in values.iter() {
                    record_in(&mut histogram, v);
                }
                record_in(&mut histogram, value);
                self.values = Values::Histogram(Box::new(histogram));
            }
            Values::Histogram(histogram) => record_in(histogram, value),
        }
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The smallest value, exactly (None when empty).
    pub fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    /// The largest value, exactly (None when empty).
    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// The sum of the values, exactly.
    pub fn sum(&self) -> u128 {
        self.sum
    }

    /// Whether every value is held exactly (at most [`EXACT_SAMPLES`] of them).
    pub fn is_exact(&self) -> bool {
        matches!(self.values, Values::Exact(_))
    }

    /// Calls `f(value, count)` for every value held: each value once when exact, else the
    /// upper end of every non-empty histogram bucket with its count. Order unspecified.
    pub fn for_each(&self, mut f: impl FnMut(u64, u64)) {
        match &self.values {
            Values::Exact(values) => values.iter().for_each(|&v| f(v, 1)),
            Values::Histogram(histogram) => {
                for bucket in histogram.iter_recorded() {
                    f(bucket.value_iterated_to(), bucket.count_at_value());
                }
            }
        }
    }
}

fn record_in(histogram: &mut Histogram<u64>, value: u64) {
    histogram
        .record(value.min(HISTOGRAM_MAX))
        .expect("an auto-resizing histogram records any value up to its limit");
}

/// Nearest-rank percentiles: for each `p` in `ps` (percent, 1..=100), the ⌈p·n/100⌉-th
/// smallest of `values` (pairs of value and count; `n` is the total count, > 0), reordered
/// here. `cmp` must be a total order under which only identical values are equal
/// (`u64::cmp`, `f64::total_cmp`), so that which of several equal values lands where
/// changes nothing. When every count is 1 (a distribution held exactly) each percentile is
/// found by selection, in linear time; otherwise the values are sorted
/// ([`percentiles_of_sorted`]).
pub fn percentiles<T: Copy, const K: usize>(
    values: &mut [(T, u64)],
    ps: [u64; K],
    mut cmp: impl FnMut(&T, &T) -> std::cmp::Ordering,
) -> [T; K] {
    if !values.iter().all(|&(_, count)| count == 1) {
        values.sort_unstable_by(|a, b| cmp(&a.0, &b.0));
        return percentiles_of_sorted(values, ps);
    }
    let n = values.len() as u64;
    assert!(n > 0, "percentiles of nothing");
    let ranks = ps.map(|p| (p * n).div_ceil(100).clamp(1, n) as usize);
    let mut found = [values[0].0; K];
    // From the smallest rank up, each selection within what the previous ones left (n,
    // then about n/2, then n/10 values for p50, p90, p99). `values[start..]` holds the
    // n − start largest values (in some order): selecting the r-th smallest overall among
    // them (r > start) puts it at r − 1 with the larger ones after it.
    let mut order: [usize; K] = std::array::from_fn(|i| i);
    order.sort_unstable_by_key(|&i| ranks[i]);
    let mut start = 0;
    for i in order {
        let r = ranks[i];
        if r > start {
            values[start..].select_nth_unstable_by(r - 1 - start, |a, b| cmp(&a.0, &b.0));
            start = r;
        }
        found[i] = values[r - 1].0;
    }
    found
}

/// [`percentiles`] of `values` already sorted by value.
pub fn percentiles_of_sorted<T: Copy, const K: usize>(values: &[(T, u64)], ps: [u64; K]) -> [T; K] {
    let n: u64 = values.iter().map(|&(_, c)| c).sum();
    assert!(n > 0, "percentiles of nothing");
    ps.map(|p| {
        let rank = (p * n).div_ceil(100).clamp(1, n);
        let mut seen = 0;
        for &(value, count) in values.iter() {
            seen += count;
            if seen >= rank {
                return value;
            }
        }
        unreachable!("rank {rank} is at most the total count {n}")
    })
}

/// What a run keeps about the finished jobs of one task (the pending ones are in the
/// guest's queues).
#[derive(Clone, Debug, Default)]
pub struct TaskStats {
    /// Jobs finished.
    pub finished: u64,
    /// Jobs that finished after their deadline.
    pub finished_late: u64,
    /// Response time (finish − release) of each finished job.
    pub response: Samples,
    /// Release-to-start latency of each finished job.
    pub latency: Samples,
}

impl TaskStats {
    /// Counts `job`, which finished at `finish`.
    pub fn finished_job(&mut self, job: &Job, finish: Nanos) {
        self.finished += 1;
        if finish > job.deadline {
            self.finished_late += 1;
        }
        self.response.record((finish - job.release).as_ns());
        if let Some(start) = job.first_start {
            self.latency.record((start - job.release).as_ns());
        }
    }
}

/// What a run keeps about one chain (`SystemSpec::chains`): the end-to-end latency of each
/// finished instance (last task's finish − first task's release), in bounded memory.
#[derive(Clone, Debug)]
pub struct ChainStats {
    pub latency: Samples,
    /// Welford's running mean and sum of squared deviations, for the standard deviation
    /// (in the order the instances finish: deterministic).
    mean: f64,
    m2: f64,
    /// The bounds asked for and, for each, the instances within it (latency ≤ bound).
    bounds: Vec<(Nanos, u64)>,
}

impl ChainStats {
    pub fn new(bounds: Vec<Nanos>) -> ChainStats {
        ChainStats {
            latency: Samples::new(),
            mean: 0.0,
            m2: 0.0,
            bounds: bounds.into_iter().map(|b| (b, 0)).collect(),
        }
    }

    /// Counts one finished instance of end-to-end latency `latency` ns.
    pub fn record(&mut self, latency: u64) {
        self.latency.record(latency);
        let n = self.latency.count() as f64;
        let delta = latency as f64 - self.mean;
        self.mean += delta / n;
        self.m2 += delta * (latency as f64 - self.mean);
        for (bound, within) in &mut self.bounds {
            if latency <= bound.as_ns() {
                *within += 1;
            }
        }
    }

    /// The population standard deviation of the latencies (0 for fewer than two).
    pub fn std_dev(&self) -> f64 {
        let n = self.latency.count();
        if n < 2 {
            0.0
        } else {
            (self.m2 / n as f64).sqrt()
        }
    }

    /// Each bound and the number of instances within it (latency ≤ bound), exactly.
    pub fn within(&self) -> &[(Nanos, u64)] {
        &self.bounds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exact_nearest_rank(values: &[u64], p: u64) -> u64 {
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        let n = sorted.len() as u64;
        sorted[((p * n).div_ceil(100).clamp(1, n) - 1) as usize]
    }

    fn pcts(samples: &[&Samples]) -> [u64; 4] {
        let mut pairs = Vec::new();
        for s in samples {
            s.for_each(|v, c| pairs.push((v, c)));
        }
        percentiles(&mut pairs, [1, 50, 90, 99], |a, b| a.cmp(b))
    }

    #[test]
    fn small_counts_are_exact() {
        // 1..=10 in a scrambled order: p50 is the 5th smallest, p90 the 9th, p99 the 10th.
        let mut s = Samples::new();
        for v in [7, 3, 10, 1, 9, 2, 8, 4, 6, 5] {
            s.record(v * 1_000_003);
        }
        assert!(s.is_exact());
        assert_eq!(pcts(&[&s]), [1_000_003, 5_000_015, 9_000_027, 10_000_030]);
        assert_eq!((s.min(), s.max()), (Some(1_000_003), Some(10_000_030)));
        assert_eq!(s.sum(), 55 * 1_000_003);
    }

    #[test]
    fn past_the_exact_limit_memory_stops_growing_and_percentiles_stay_within_a_1024th() {
        let mut s = Samples::new();
        let mut all = Vec::new();
        // A spread of values from 1 µs to ~1 s, deterministic.
        let mut x: u64 = 12345;
        for _ in 0..(EXACT_SAMPLES * 4) {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = 1_000 + (x >> 34) % 1_000_000_000;
            s.record(v);
            all.push(v);
        }
        assert!(!s.is_exact());
        assert_eq!(s.count(), all.len() as u64);
        assert_eq!(s.sum(), all.iter().map(|&v| v as u128).sum::<u128>());
        assert_eq!(s.max(), all.iter().copied().max());
        let got = pcts(&[&s]);
        for (i, p) in [1, 50, 90, 99].into_iter().enumerate() {
            let exact = exact_nearest_rank(&all, p);
            assert!(got[i] >= exact, "p{p}: {} below exact {exact}", got[i]);
            assert!(
                (got[i] - exact) * 1024 < exact,
                "p{p}: {} vs exact {exact}",
                got[i]
            );
        }
        // Distinct buckets are bounded by the histogram's size, not by the count.
        let mut buckets = 0;
        s.for_each(|_, _| buckets += 1);
        assert!(buckets < 30 * 1024, "{buckets} buckets");
    }

    #[test]
    fn a_union_of_an_exact_and_a_histogram_part_keeps_the_bound() {
        let mut big = Samples::new();
        let mut small = Samples::new();
        let mut all = Vec::new();
        for k in 0..(EXACT_SAMPLES as u64 + 10) {
            let v = 3_000 + k * 1_000;
            big.record(v);
            all.push(v);
        }
        for k in 0..100u64 {
            let v = 50_000_000 + k;
            small.record(v);
            all.push(v);
        }
        assert!(!big.is_exact() && small.is_exact());
        let got = pcts(&[&big, &small]);
        for (i, p) in [1, 50, 90, 99].into_iter().enumerate() {
            let exact = exact_nearest_rank(&all, p);
            assert!(got[i] >= exact && (got[i] - exact) * 1024 < exact, "p{p}");
        }
        // p99 of 16,494 values is the 16,330th: one of the histogram's values.
        assert!(got[3] < 50_000_000);
    }

    /// Unit counts take the selection path: it must find what a sort finds, with repeated
    /// values, ranks asked out of order, equal ranks, and n = 1.
    #[test]
    fn selection_finds_the_nearest_ranks_a_sort_finds() {
        // By hand, n = 10 (values 1..=10, scrambled): p1 → 1st, p50 → 5th,
        // p90 → 9th, p99 → 10th smallest.
        let mut ten: Vec<(u64, u64)> = [4, 9, 1, 7, 10, 2, 8, 3, 6, 5].map(|v| (v, 1)).to_vec();
        assert_eq!(
            percentiles(&mut ten, [99, 1, 90, 50], |a, b| a.cmp(b)),
            [10, 1, 9, 5]
        );
        let mut one = vec![(42u64, 1)];
        assert_eq!(
            percentiles(&mut one, [1, 50, 99, 100], |a, b| a.cmp(b)),
            [42; 4]
        );
        let mut x: u64 = 7;
        for n in [2usize, 3, 17, 100, 101, 1000] {
            let mut values: Vec<(u64, u64)> = (0..n)
                .map(|_| {
                    x = x
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    // Few distinct values: many repeats.
                    ((x >> 40) % 13, 1)
                })
                .collect();
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let ps = [90, 50, 99, 50, 1, 100];
            assert_eq!(
                percentiles(&mut values, ps, |a, b| a.cmp(b)),
                percentiles_of_sorted(&sorted, ps),
                "n = {n}"
            );
        }
    }

    #[test]
    fn values_below_2048_stay_exact_in_the_histogram() {
        let mut s = Samples::new();
        for k in 0..(EXACT_SAMPLES as u64 * 2) {
            s.record(k % 2000);
        }
        assert!(!s.is_exact());
        let mut seen = Vec::new();
        s.for_each(|v, c| seen.push((v, c)));
        seen.sort_unstable();
        assert_eq!(seen.len(), 2000);
        assert!(seen.iter().enumerate().all(|(i, &(v, _))| v == i as u64));
    }
}
