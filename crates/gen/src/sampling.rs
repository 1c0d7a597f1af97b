//! Utilisation samplers: vectors of `n` task utilisations with a given sum.
//!
//! * [`uunifast`] — uniform over the simplex `{u ≥ 0, Σu = U}`
//!   (Bini & Buttazzo, "Measuring the Performance of Schedulability Tests", Real-Time
//!   Systems 30(1–2), 2005).
//! * [`uunifast_discard`] — UUniFast, redrawing any vector with a component over a cap;
//!   uniform over `{0 ≤ u ≤ cap, Σu = U}` (Davis & Burns, "Improved priority assignment
//!   for global fixed priority pre-emptive scheduling in multiprocessor real-time
//!   systems", Real-Time Systems 47(1), 2011; first in their 2009 York report).
//! * [`rand_fixed_sum`] — the same target distribution with bounds `[a, b]` on every
//!   component, exactly and without rejection (Stafford, "RandFixedSum", 2006, as used by
//!   Emberson, Stafford & Davis, "Techniques for the synthesis of multiprocessor
//!   tasksets", WATERS 2010). Use it where UUniFast-Discard would reject almost every draw.
//!
//! All three draw from a caller's [`SimRng`], so a caller decides the stream (and the
//! seed) and draws happen in the documented order.

use crate::GenError;
use rtvmm_core::rng::SimRng;

fn check_count(n: usize) -> Result<(), GenError> {
    if n == 0 {
        return Err(GenError::InvalidParameter {
            parameter: "n",
            problem: "at least one utilisation must be drawn".into(),
        });
    }
    Ok(())
}

fn check_finite_non_negative(parameter: &'static str, value: f64) -> Result<(), GenError> {
    if !value.is_finite() || value < 0.0 {
        return Err(GenError::InvalidParameter {
            parameter,
            problem: format!("{value} is not a finite, non-negative number"),
        });
    }
    Ok(())
}

/// UUniFast (Bini & Buttazzo 2005): `n` utilisations, uniformly distributed over the
/// simplex `{u_i ≥ 0, Σ u_i = total}`.
///
/// Algorithm, exactly as published: `sum = total`; for `i = 1 … n−1`, draw `r` uniform
/// in `[0, 1)`, set `next = sum · r^(1/(n−i))`, emit `u_i = sum − next`, `sum = next`;
/// finally emit `u_n = sum`. `r^(1/(n−i))` is the largest of `n−i` uniform draws, which
/// is what makes the split uniform. One draw per component but the last, in order.
///
/// The components telescope, so they sum to `total` up to a few ulps, and each lies in
/// `[0, total]`. Components are *not* bounded by 1: see [`uunifast_discard`].
pub fn uunifast(rng: &mut SimRng, n: usize, total: f64) -> Result<Vec<f64>, GenError> {
    check_count(n)?;
    check_finite_non_negative("total", total)?;
    let mut utilisations = Vec::with_capacity(n);
    let mut remaining = total;
    for i in 1..n {
        let exponent = 1.0 / (n - i) as f64;
        let next = remaining * libm::pow(rng.uniform_f64(), exponent);
        utilisations.push(remaining - next);
        remaining = next;
    }
    utilisations.push(remaining);
    Ok(utilisations)
}

/// UUniFast-Discard (Davis & Burns 2009/2011): UUniFast, drawn again whenever any
/// component exceeds `cap` (Davis & Burns use `cap = 1`, a task no processor can run;
/// a smaller cap bounds the largest task). The accepted vectors are uniform over
/// `{0 ≤ u_i ≤ cap, Σ u_i = total}`.
///
/// Requires `0 < cap` and `total ≤ n · cap` (otherwise no vector qualifies). The chance
/// of acceptance falls steeply as `total` approaches `n · cap`, so the loop stops after
/// `max_attempts` vectors with [`GenError::DiscardLimitReached`] rather than spin;
/// [`rand_fixed_sum`] samples the same distribution without rejection.
pub fn uunifast_discard(
    rng: &mut SimRng,
    n: usize,
    total: f64,
    cap: f64,
    max_attempts: u64,
) -> Result<Vec<f64>, GenError> {
    check_count(n)?;
    check_finite_non_negative("total", total)?;
    if !cap.is_finite() || cap <= 0.0 {
        return Err(GenError::InvalidParameter {
            parameter: "cap",
            problem: format!("{cap} is not a finite, positive number"),
        });
    }
    if total > n as f64 * cap {
        return Err(GenError::InvalidParameter {
            parameter: "total",
            problem: format!("{total} exceeds n · cap = {n} · {cap}: no vector fits under the cap"),
        });
    }
    for _ in 0..max_attempts {
        let candidate = uunifast(rng, n, total)?;
        if candidate.iter().all(|&u| u <= cap) {
            return Ok(candidate);
        }
    }
    Err(GenError::DiscardLimitReached {
        attempts: max_attempts,
        n,
        total,
        cap,
    })
}

/// RandFixedSum (Stafford 2006; Emberson, Stafford & Davis 2010): `n` values, uniformly
/// distributed over `{x : lower ≤ x_i ≤ upper, Σ x_i = total}`, without rejection.
///
/// Algorithm (Stafford's): rescale to the unit cube, `s = (total − n·lower) / (upper −
/// lower)`, and let `k = ⌊s⌋` (clamped to `0 … n−1`). The slice `{x ∈ [0,1]^n, Σx = s}`
/// lies between the planes `Σx = k` and `Σx = k + 1` and is a union of simplices. A
/// table `w`, built dimension by dimension (row `i` from row `i − 1`, each entry the
/// average of its two parents weighted by the distances `s − k + j` and `k + i − j − s`
/// to the two planes), holds the scaled volumes of the pieces; from it follows the
/// probability `t[i][j]` of moving to the neighbouring piece when one coordinate is fixed
/// (`w` starts at `f64::MAX` so the volumes use the whole range of a double). Sampling
/// walks from dimension `n−1` down to 1: at step `i` draw `rt` and `rs` uniform, move to
/// the neighbouring piece if `rt < t[i][j]`, and place the point uniformly in the chosen
/// simplex through the coordinate `rs^(1/i)` (the largest of `i` uniforms), accumulating
/// the running sum and product that turn simplex coordinates into cube coordinates. The
/// last coordinate takes what is left of `s`. The walk orders the coordinates, so they
/// are then shuffled (Fisher–Yates) and rescaled to `[lower, upper]`.
///
/// Draw order: `rt`, `rs` for each of the `n − 1` steps, then `n − 1` shuffle draws.
///
/// The result sums to `total` up to rounding (about 1e-12 relative) and each component is
/// clamped into `[lower, upper]` against the last ulp. `total` may exceed the feasible
/// range `[n·lower, n·upper]` by 1e-9 relative (rounding in the caller); it is then taken
/// at the nearest end.
pub fn rand_fixed_sum(
    rng: &mut SimRng,
    n: usize,
    total: f64,
    lower: f64,
    upper: f64,
) -> Result<Vec<f64>, GenError> {
    check_count(n)?;
    for (parameter, value) in [("total", total), ("lower", lower), ("upper", upper)] {
        if !value.is_finite() {
            return Err(GenError::InvalidParameter {
                parameter,
                problem: format!("{value} is not a finite number"),
            });
        }
    }
    if lower > upper {
        return Err(GenError::InvalidParameter {
            parameter: "lower",
            problem: format!("lower bound {lower} is above upper bound {upper}"),
        });
    }
    let nf = n as f64;
    let slack = 1e-9 * (nf * upper.abs()).max(nf * lower.abs()).max(1.0);
    if total < nf * lower - slack || total > nf * upper + slack {
        return Err(GenError::InvalidParameter {
            parameter: "total",
            problem: format!(
                "{total} is outside [n·lower, n·upper] = [{}, {}]: no vector has that sum",
                nf * lower,
                nf * upper
            ),
        });
    }
    let width = upper - lower;
    if width == 0.0 {
        return Ok(vec![lower; n]);
    }
    let unit = stafford_unit_cube(rng, n, (total - nf * lower) / width);
    Ok(unit
        .into_iter()
        .map(|x| (lower + width * x).clamp(lower, upper))
        .collect())
}

/// Stafford's algorithm on the unit cube: uniform over `{x ∈ [0,1]^n, Σx = s}`.
fn stafford_unit_cube(rng: &mut SimRng, n: usize, s: f64) -> Vec<f64> {
    // Indices below are Stafford's 1-based ones shifted to 0-based; the comments give the
    // 1-based names.
    let k = (s.floor().max(0.0) as usize).min(n - 1);
    let s = s.clamp(k as f64, (k + 1) as f64);
    let kf = k as f64;
    // s1(j) = s − (k − j + 1), s2(j) = (k + n − j + 1) − s, j = 1 … n.
    let s1: Vec<f64> = (0..n).map(|j| s - kf + j as f64).collect();
    let s2: Vec<f64> = (0..n).map(|j| (k + n - j) as f64 - s).collect();

    // w is n × (n+1); w(1,2) = realmax so that the volumes use the whole double range.
    let mut w = vec![vec![0.0f64; n + 1]; n];
    w[0][1] = f64::MAX;
    // t is (n−1) × n: t(i, j) is the probability of the transition at step i.
    let mut t = vec![vec![0.0f64; n]; n.saturating_sub(1)];
    let tiny = f64::from_bits(1); // 2^-1074, the smallest positive double
    for i in 2..=n {
        let inv_i = 1.0 / i as f64;
        for c in 1..=i {
            // tmp1 = w(i−1, c+1)·s1(c)/i; tmp2 = w(i−1, c)·s2(n−i+c)/i.
            let tmp1 = w[i - 2][c] * s1[c - 1] * inv_i;
            let s2_here = s2[n - i + c - 1];
            let tmp2 = w[i - 2][c - 1] * s2_here * inv_i;
            let sum = tmp1 + tmp2;
            w[i - 1][c] = sum;
            let tmp3 = sum + tiny;
            // Where both pieces are empty, t is 0 on the left and 1 on the right.
            t[i - 2][c - 1] = if s2_here > s1[c - 1] {
                tmp2 / tmp3
            } else {
                1.0 - tmp1 / tmp3
            };
        }
    }

    let mut x = vec![0.0f64; n];
    let mut s = s;
    let mut j = k + 1; // 1-based column into t
    let mut running_sum = 0.0;
    let mut product = 1.0;
    for i in (1..n).rev() {
        let rt = rng.uniform_f64();
        let rs = rng.uniform_f64();
        // Row i of t covers columns 1 … i+1; the walk stays inside (j ≥ 1 while a
        // transition is possible, j ≤ i+1 by construction), the clamp is a guard only.
        debug_assert!(
            (1..=i + 1).contains(&j),
            "RandFixedSum walked off its table"
        );
        let column = j.clamp(1, i + 1) - 1;
        let step = rt < t[i - 1][column];
        let sx = libm::pow(rs, 1.0 / i as f64);
        running_sum += (1.0 - sx) * product * s / (i + 1) as f64;
        product *= sx;
        let e = if step { 1.0 } else { 0.0 };
        x[n - i - 1] = running_sum + product * e;
        if step {
            s -= 1.0;
            j = j.saturating_sub(1);
        }
    }
    x[n - 1] = running_sum + product * s;

    shuffle(rng, &mut x);
    x
}

/// Fisher–Yates shuffle with unbiased integer draws.
pub(crate) fn shuffle<T>(rng: &mut SimRng, items: &mut [T]) {
    for i in (1..items.len()).rev() {
        let j = rng.uniform_u64(0, i as u64) as usize;
        items.swap(i, j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sum(v: &[f64]) -> f64 {
        v.iter().sum()
    }

    #[test]
    fn uunifast_is_deterministic_per_seed() {
        let a = uunifast(&mut SimRng::new(3), 6, 0.9).unwrap();
        let b = uunifast(&mut SimRng::new(3), 6, 0.9).unwrap();
        let c = uunifast(&mut SimRng::new(4), 6, 0.9).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn uunifast_single_task_takes_everything() {
        assert_eq!(uunifast(&mut SimRng::new(1), 1, 0.42).unwrap(), vec![0.42]);
    }

    #[test]
    fn uunifast_rejects_bad_parameters() {
        let mut rng = SimRng::new(1);
        assert!(matches!(
            uunifast(&mut rng, 0, 0.5),
            Err(GenError::InvalidParameter { parameter: "n", .. })
        ));
        for bad in [-0.1, f64::NAN, f64::INFINITY] {
            assert!(matches!(
                uunifast(&mut rng, 3, bad),
                Err(GenError::InvalidParameter {
                    parameter: "total",
                    ..
                })
            ));
        }
    }

    /// The marginal of one UUniFast component over n = 3, U = 1 is Beta(1, 2):
    /// P(u_1 < 1/2) = 1 − (1/2)² = 3/4. A generator that split evenly or uniformly per
    /// component would miss this.
    #[test]
    fn uunifast_marginal_matches_the_uniform_simplex() {
        let mut rng = SimRng::new(11);
        let draws = 20_000;
        let below = (0..draws)
            .filter(|_| uunifast(&mut rng, 3, 1.0).unwrap()[0] < 0.5)
            .count();
        let p = below as f64 / draws as f64;
        assert!((p - 0.75).abs() < 0.015, "P(u1 < 1/2) = {p}, expected 0.75");
    }

    #[test]
    fn uunifast_discard_respects_the_cap_and_gives_up_when_told() {
        let mut rng = SimRng::new(5);
        for _ in 0..200 {
            let u = uunifast_discard(&mut rng, 4, 2.0, 0.7, 100_000).unwrap();
            assert!(u.iter().all(|&x| (0.0..=0.7).contains(&x)), "{u:?}");
            assert!((sum(&u) - 2.0).abs() < 1e-9);
        }
        // Σ = n · cap exactly is feasible only on a null set: the loop must stop.
        assert!(matches!(
            uunifast_discard(&mut rng, 4, 2.8, 0.7, 1_000),
            Err(GenError::DiscardLimitReached {
                attempts: 1_000,
                ..
            })
        ));
        assert!(matches!(
            uunifast_discard(&mut rng, 4, 3.0, 0.7, 10),
            Err(GenError::InvalidParameter {
                parameter: "total",
                ..
            })
        ));
    }

    #[test]
    fn rand_fixed_sum_handles_degenerate_cases() {
        let mut rng = SimRng::new(2);
        assert_eq!(
            rand_fixed_sum(&mut rng, 3, 0.6, 0.2, 0.2).unwrap(),
            vec![0.2; 3]
        );
        assert_eq!(
            rand_fixed_sum(&mut rng, 1, 0.3, 0.1, 0.5).unwrap(),
            vec![0.3]
        );
        // Sums at the ends of the feasible range pin every component.
        let low = rand_fixed_sum(&mut rng, 4, 0.4, 0.1, 0.5).unwrap();
        assert!(low.iter().all(|&x| (x - 0.1).abs() < 1e-12), "{low:?}");
        let high = rand_fixed_sum(&mut rng, 4, 2.0, 0.1, 0.5).unwrap();
        assert!(high.iter().all(|&x| (x - 0.5).abs() < 1e-12), "{high:?}");
        assert!(rand_fixed_sum(&mut rng, 4, 2.1, 0.1, 0.5).is_err());
        assert!(rand_fixed_sum(&mut rng, 4, 1.0, 0.5, 0.1).is_err());
    }

    /// n = 2: the slice is a segment, so x_1 is uniform on
    /// [max(a, s − b), min(b, s − a)] = [0.3, 0.5] for s = 0.8 in [0, 0.5]².
    #[test]
    fn rand_fixed_sum_two_components_are_uniform_on_the_segment() {
        let mut rng = SimRng::new(8);
        let draws = 20_000;
        let mut below_mid = 0;
        for _ in 0..draws {
            let x = rand_fixed_sum(&mut rng, 2, 0.8, 0.0, 0.5).unwrap();
            assert!((0.3 - 1e-12..=0.5).contains(&x[0]), "{x:?}");
            if x[0] < 0.4 {
                below_mid += 1;
            }
        }
        let p = below_mid as f64 / draws as f64;
        assert!((p - 0.5).abs() < 0.015, "P(x1 < 0.4) = {p}");
    }

    /// n = 3 in [0,1]³ with Σ = 1.2: the density of x_1 is proportional to the
    /// Irwin–Hall density f_2(1.2 − x_1) (f_2(y) = y on [0,1], 2 − y on [1,2]), so
    /// P(x_1 < 0.2) = ∫_1^1.2 (2 − y) dy ÷ (∫_0.2^1 y dy + ∫_1^1.2 (2 − y) dy)
    ///             = 0.18 ÷ 0.66 = 0.2727…
    /// A sampler that were uniform per component (0.2) or UUniFast clipped would not pass.
    #[test]
    fn rand_fixed_sum_matches_the_irwin_hall_marginal() {
        let mut rng = SimRng::new(9);
        let draws = 30_000;
        let below = (0..draws)
            .filter(|_| rand_fixed_sum(&mut rng, 3, 1.2, 0.0, 1.0).unwrap()[0] < 0.2)
            .count();
        let p = below as f64 / draws as f64;
        assert!((p - 0.18 / 0.66).abs() < 0.015, "P(x1 < 0.2) = {p}");
    }

    /// Against an independent exact sampler: UUniFast of the excess over `lower`,
    /// rejected unless every component is under `upper − lower`, is uniform over the same
    /// bounded slice. The two must agree on a marginal probability.
    #[test]
    fn rand_fixed_sum_agrees_with_rejection_sampling() {
        let (n, total, lower, upper) = (4, 1.2, 0.1, 0.5);
        let draws = 20_000;
        let mut rng = SimRng::new(21);
        let exact = (0..draws)
            .filter(|_| rand_fixed_sum(&mut rng, n, total, lower, upper).unwrap()[0] < 0.2)
            .count() as f64
            / draws as f64;
        let mut rng = SimRng::new(22);
        let mut kept = 0;
        let mut below = 0;
        while kept < draws {
            let excess = uunifast(&mut rng, n, total - n as f64 * lower).unwrap();
            if excess.iter().all(|&e| e <= upper - lower) {
                kept += 1;
                if excess[0] + lower < 0.2 {
                    below += 1;
                }
            }
        }
        let rejection = below as f64 / draws as f64;
        assert!(
            (exact - rejection).abs() < 0.02,
            "RandFixedSum {exact} vs rejection {rejection}"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn uunifast_sums_exactly_and_stays_in_range(
            seed in any::<u64>(), n in 1usize..40, total in 0.0f64..8.0
        ) {
            let u = uunifast(&mut SimRng::new(seed), n, total).unwrap();
            prop_assert_eq!(u.len(), n);
            prop_assert!((sum(&u) - total).abs() <= 1e-9);
            prop_assert!(u.iter().all(|&x| (0.0..=total).contains(&x)), "{:?}", u);
        }

        #[test]
        fn uunifast_discard_never_exceeds_its_cap(
            seed in any::<u64>(), n in 2usize..10, fill in 0.0f64..0.6, cap in 0.05f64..1.0
        ) {
            let total = fill * n as f64 * cap;
            let u = uunifast_discard(&mut SimRng::new(seed), n, total, cap, 1_000_000).unwrap();
            prop_assert_eq!(u.len(), n);
            prop_assert!((sum(&u) - total).abs() <= 1e-9);
            prop_assert!(u.iter().all(|&x| (0.0..=cap).contains(&x)), "{:?}", u);
        }

        #[test]
        fn rand_fixed_sum_respects_bounds_and_sum(
            seed in any::<u64>(), n in 1usize..30, lower in 0.0f64..0.3,
            width in 0.0f64..0.7, fill in 0.0f64..=1.0
        ) {
            let upper = lower + width;
            let total = n as f64 * (lower + fill * width);
            let x = rand_fixed_sum(&mut SimRng::new(seed), n, total, lower, upper).unwrap();
            prop_assert_eq!(x.len(), n);
            prop_assert!(x.iter().all(|&v| (lower..=upper).contains(&v)), "{:?}", x);
            prop_assert!((sum(&x) - total).abs() <= 1e-9 * total.max(1.0), "{} vs {}", sum(&x), total);
        }

        #[test]
        fn samplers_are_deterministic(seed in any::<u64>(), n in 1usize..12) {
            let total = 0.3 * n as f64;
            prop_assert_eq!(
                rand_fixed_sum(&mut SimRng::new(seed), n, total, 0.1, 0.9).unwrap(),
                rand_fixed_sum(&mut SimRng::new(seed), n, total, 0.1, 0.9).unwrap()
            );
            prop_assert_eq!(
                uunifast(&mut SimRng::new(seed), n, total).unwrap(),
                uunifast(&mut SimRng::new(seed), n, total).unwrap()
            );
        }
    }
}
