//! The deterministic multiprocessor periodic resource (DMPR): `m` full VCPUs plus one partial
//! VCPU `(Π, Θ)`, the interface rtvmm's RTDS deployments are sized with. Its supply bound
//! function (overhead-free), the global-EDF test of a component under it, and the
//! minimum-bandwidth interface over a period range.
//!
//! Source: M. Xu, L. T. X. Phan, I. Lee, O. Sokolsky, S. Xi, C. Lu, C. Gill, "Cache-Aware
//! Compositional Analysis of Real-Time Multicore Virtualization Platforms", RTSS 2013;
//! extended in Real-Time Systems 51(6), 2015. Its cache-overhead terms are left out (the
//! overhead-free analysis). CARTS computes the same (its `DMPR` model). `docs/analysis.md`,
//! "Many pcpus: MPR and DMPR", places it in rtvmm.
//!
//! # The supply
//! The full VCPUs each supply `t` in any interval of length t (each runs on a dedicated
//! pcpu); the partial one is a periodic resource `(Π, Θ)` with Shin & Lee's general sbf.
//! So
//!
//! ```text
//! sbf(t) = m·t + sbf_(Π,Θ)(t)
//! ```
//!
//! at most `m + 1` processors at once (m when Θ = 0), which is the `m′` of the gEDF demand.
//! CARTS writes the same interface as `(Π, Θ_total, m′)` with `m′ = m + 1` VCPUs and
//! `Θ_total = mΠ + Θ`; [`Dmpr::carts_form`] gives that form.
//!
//! # Linear bound (proof)
//! Shin & Lee's `sbf_(Π,Θ)(t) ≥ lsbf(t) = (Θ/Π)(t − 2(Π − Θ))` (tested in [`crate::prm`]),
//! so `sbf(t) ≥ ρt − δ` with `ρ = m + Θ/Π` and `δ = 2Θ(Π − Θ)/Π` — the `B′` term of the
//! paper's bound on `A_k`, which here is proven, so the verdict is the test's over all
//! `A_k ≥ 0` (see [`crate::gedf`]).
//!
//! # The interface search
//! As for MPR ([`crate::mpr`]): for each period Π, the least `m′ = m + 1` from
//! `max(1, ⌈U⌉)` up to a maximum (default: the number of tasks) for which some partial
//! budget `Θ ∈ [1, Π]` passes, and the least such Θ, by trying every Θ in order (from the
//! least with `m + Θ/Π > U`). Θ = Π (the same supply as `m + 1` full VCPUs) is reported as
//! found, `m` full and a partial `(Π, Π)`, as CARTS does. Over the range, the least bandwidth `m + Θ/Π` wins; ties go to fewer VCPUs, then
//! the smaller Π.

use num_bigint::BigInt;
use num_rational::BigRational;
use serde::Serialize;

use crate::gedf::{gedf_test, GedfVerdict, GedfWorkload, LinearSupply};
use crate::mpr::{MprError, MAX_CONCURRENCY};
use crate::prm::{sbf_general, Interface};
use crate::ratio::Ratio;
use crate::workload::{Workload, MAX_TIME};

/// A DMPR interface: `full` dedicated VCPUs and one partial VCPU `(period, budget)`,
/// valid by construction (`1 ≤ Π ≤ MAX_TIME`, `0 ≤ Θ ≤ Π`, `m < MAX_CONCURRENCY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct Dmpr {
    full: u64,
    period: u64,
    budget: u64,
}

impl Dmpr {
    /// `m` full VCPUs and a partial `(Π, Θ)`, checked.
    pub fn new(full: u64, period: u64, budget: u64) -> Result<Dmpr, MprError> {
        if period == 0 || period > MAX_TIME {
            return Err(MprError::InvalidPeriod { period });
        }
        if full >= MAX_CONCURRENCY {
            return Err(MprError::TooManyProcessors {
                concurrency: full + 1,
            });
        }
        if budget > period {
            return Err(MprError::BudgetExceedsCapacity {
                budget,
                capacity: period,
            });
        }
        Ok(Dmpr {
            full,
            period,
            budget,
        })
    }

    /// m, the number of full VCPUs.
    pub fn full(&self) -> u64 {
        self.full
    }

    /// Π of the partial VCPU.
    pub fn period(&self) -> u64 {
        self.period
    }

    /// Θ of the partial VCPU.
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Processors used at once: `m + 1`, or m when Θ = 0.
    pub fn concurrency(&self) -> u64 {
        self.full + u64::from(self.budget > 0)
    }

    /// `m + Θ/Π`, exactly (as `(mΠ + Θ)/Π`).
    pub fn bandwidth(&self) -> Ratio {
        Ratio::new(self.full * self.period + self.budget, self.period)
    }

    /// CARTS's form `(Π, Θ_total, m′)`: `(Π, mΠ + Θ, m + 1)`.
    pub fn carts_form(&self) -> (u64, u64, u64) {
        (
            self.period,
            self.full * self.period + self.budget,
            self.full + 1,
        )
    }

    /// `sbf(t) = m·t + sbf_(Π,Θ)(t)`.
    pub fn sbf(&self, t: u64) -> u64 {
        self.full * t + sbf_general(self.period, self.budget, t)
    }

    /// `ρ = m + Θ/Π`, `δ = 2Θ(Π − Θ)/Π` (module docs).
    pub fn linear_supply(&self) -> LinearSupply {
        let period = BigInt::from(self.period);
        let rate = BigRational::new(
            BigInt::from(self.full) * &period + BigInt::from(self.budget),
            period.clone(),
        );
        let deficit = BigRational::new(
            BigInt::from(2u8) * BigInt::from(self.budget) * BigInt::from(self.period - self.budget),
            period,
        );
        LinearSupply { rate, deficit }
    }

    /// The VCPUs: m full `(Π, Π)`, then the partial `(Π, Θ)` when Θ > 0. (At the root the
    /// full ones go to dedicated pcpus, the partial ones to global EDF on the rest.)
    pub fn to_vcpus(&self) -> Vec<Interface> {
        let mut vcpus = vec![Interface::new(self.period, self.period); self.full as usize];
        if self.budget > 0 {
            vcpus.push(Interface::new(self.period, self.budget));
        }
        vcpus
    }
}

/// The gEDF test (Theorem 1 of Shin, Easwaran & Lee, ECRTS 2008, as used by Xu et al.,
/// RTSS 2013) of `w` under `dmpr`.
pub fn gedf_schedulable_dmpr(w: &Workload, dmpr: &Dmpr) -> GedfVerdict {
    test_prepared(&GedfWorkload::new(w), dmpr)
}

fn test_prepared(w: &GedfWorkload, dmpr: &Dmpr) -> GedfVerdict {
    gedf_test(
        w,
        dmpr.concurrency(),
        |t| dmpr.sbf(t),
        &dmpr.linear_supply(),
    )
}

/// The result of a DMPR interface search over a period range.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DmprSearch {
    /// The interface of least bandwidth (ties: fewer VCPUs, then smaller Π).
    pub best: Dmpr,
    /// Per period, ascending: the interface found, or `None`.
    pub per_period: Vec<(u64, Option<Dmpr>)>,
    /// Whether some candidate hit [`crate::gedf::GEDF_MAX_POINTS`].
    pub limited: bool,
}

fn search_period(
    prepared: &GedfWorkload,
    u_ceil: u64,
    utilization: &BigRational,
    period: u64,
    max_vcpus: u64,
) -> (Option<Dmpr>, bool) {
    let mut limited = false;
    for vcpus in u_ceil.max(1)..=max_vcpus {
        let full = vcpus - 1;
        // Least Θ with m + Θ/Π > U: ⌊(U − m)Π⌋ + 1, at least 1.
        let excess =
            (utilization - BigRational::from_integer(BigInt::from(full))) * BigInt::from(period);
        let first = if excess < BigRational::from_integer(BigInt::from(0u8)) {
            1
        } else {
            use num_traits::ToPrimitive;
            excess.floor().to_integer().to_u64().unwrap_or(u64::MAX) + 1
        };
        for budget in first.max(1)..=period {
            let dmpr = Dmpr {
                full,
                period,
                budget,
            };
            match test_prepared(prepared, &dmpr) {
                GedfVerdict::Schedulable => return (Some(dmpr), limited),
                GedfVerdict::Limit => limited = true,
                _ => {}
            }
        }
    }
    (None, limited)
}

/// The minimum-bandwidth DMPR interface of `w` (global EDF) over periods `min..=max`, with
/// at most `max_vcpus` VCPUs in all (`None`: the number of tasks). See the module docs.
pub fn optimal_dmpr_interface(
    w: &Workload,
    min: u64,
    max: u64,
    max_vcpus: Option<u64>,
) -> Result<DmprSearch, MprError> {
    if min == 0 || min > max || max > MAX_TIME {
        return Err(MprError::InvalidPeriodRange { min, max });
    }
    let prepared = GedfWorkload::new(w);
    if let Some(k) = prepared.tasks().iter().position(|t| t.wcet > t.deadline) {
        return Err(MprError::TaskInfeasible {
            task_index: w.declaration_index(k),
        });
    }
    let utilization = prepared.utilization().clone();
    let u_ceil = {
        use num_traits::ToPrimitive;
        utilization.ceil().to_integer().to_u64().unwrap_or(u64::MAX)
    };
    let max_vcpus = max_vcpus.unwrap_or(w.len() as u64);
    if max_vcpus > MAX_CONCURRENCY {
        return Err(MprError::TooManyProcessors {
            concurrency: max_vcpus,
        });
    }
    let mut per_period = Vec::with_capacity((max - min + 1) as usize);
    let mut best: Option<Dmpr> = None;
    let mut limited = false;
    for period in min..=max {
        let (found, hit) = search_period(&prepared, u_ceil, &utilization, period, max_vcpus);
        limited |= hit;
        if let Some(candidate) = found {
            let key = |d: &Dmpr| (d.bandwidth(), d.concurrency(), d.period);
            if best.is_none_or(|b| key(&candidate) < key(&b)) {
                best = Some(candidate);
            }
        }
        per_period.push((period, found));
    }
    match best {
        Some(best) => Ok(DmprSearch {
            best,
            per_period,
            limited,
        }),
        None => Err(MprError::NoInterface {
            max_concurrency: max_vcpus,
            min,
            max,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Task;

    /// One full VCPU and a partial (5, 3): sbf(t) = t + sbf_(5,3)(t), the PRM table of
    /// `prm.rs` (0 0 0 0 0 1 2 3 3 3 4 …) plus t. Worst case of the partial VCPU (the full
    /// one runs throughout):
    /// ```text
    ///   full    ################
    ///   partial SSS__|_____SSS|__SSS   (early burst, then late ones: blackout 4)
    /// ```
    #[test]
    fn sbf_by_hand() {
        let d = Dmpr::new(1, 5, 3).unwrap();
        let partial = [0, 0, 0, 0, 0, 1, 2, 3, 3, 3, 4, 5, 6, 6, 6, 7];
        for (t, p) in partial.iter().enumerate() {
            assert_eq!(d.sbf(t as u64), t as u64 + p, "t = {t}");
        }
        assert_eq!(d.concurrency(), 2);
        assert_eq!(d.bandwidth(), Ratio::new(8, 5));
        assert_eq!(d.carts_form(), (5, 8, 2));
        assert_eq!(
            d.to_vcpus(),
            vec![Interface::new(5, 5), Interface::new(5, 3)]
        );
        assert_eq!(Dmpr::new(2, 5, 0).unwrap().concurrency(), 2);
        assert_eq!(
            Dmpr::new(1, 5, 6),
            Err(MprError::BudgetExceedsCapacity {
                budget: 6,
                capacity: 5
            })
        );
    }

    /// The linear bound lies below the sbf.
    #[test]
    fn linear_bound_holds() {
        for full in 0..3u64 {
            for period in 1..10u64 {
                for budget in 0..=period {
                    let d = Dmpr::new(full, period, budget).unwrap();
                    let line = d.linear_supply();
                    for t in 0..60u64 {
                        let lower = &line.rate * BigInt::from(t) - &line.deficit;
                        assert!(lower <= BigRational::from_integer(BigInt::from(d.sbf(t))));
                    }
                }
            }
        }
    }

    /// Three tasks (T 10, C 5, D 10), U = 3/2, by hand. Under one full VCPU and a partial
    /// (2, 2) — two dedicated processors, sbf(t) = 2t — at A_k = 0, t = 10: DEM(10, 2) = 20 ≤
    /// 20 (the MPR test of `mpr.rs` fails here only for the published MPR sbf's missing slot).
    /// ρ = 2, δ = 0, C_Σ = 5: A_max = ⌊(5 + 10 − 10·(1/2) + 0 + 0)/(1/2)⌋ = 20.
    /// Under (2, 1): sbf(10) = 10 + sbf_(2,1)(10) = 10 + 4 = 14 < 20: fails.
    #[test]
    fn gedf_by_hand() {
        let w = Workload::new([Task::new(10, 5); 3]).unwrap();
        let two = Dmpr::new(1, 2, 2).unwrap();
        assert_eq!(two.sbf(10), 20);
        assert_eq!(
            GedfWorkload::new(&w).max_a_k(0, 2, &two.linear_supply()),
            Some(20)
        );
        assert_eq!(gedf_schedulable_dmpr(&w, &two), GedfVerdict::Schedulable);
        // U = ρ exactly: two (10, 5) on one dedicated processor meet every deadline and the
        // demand never exceeds t, but the test has no bound on A_k (ρ − U_T = 0).
        let pair = Workload::new([Task::new(10, 5); 2]).unwrap();
        let one = Dmpr::new(1, 5, 0).unwrap();
        assert_eq!(gedf_schedulable_dmpr(&pair, &one), GedfVerdict::NoBound);
        let less = Dmpr::new(1, 2, 1).unwrap();
        assert_eq!(less.sbf(10), 14);
        assert!(!gedf_schedulable_dmpr(&w, &less).is_schedulable());
    }

    /// One task (T 4, C 2, D 4), U = 1/2, periods 1..=6: one VCPU (m = 0), Θ from
    /// ⌊Π/2⌋ + 1. At Π = 3, Θ = 2: sbf_(3,2) has blackout 2 and sbf(4) = 1·2 + max(0, 4 − 2
    /// − 3) = 2 ≥ DEM(4, 1) = 2 + min(2 − 2, 0) = 2, and ρ = 2/3, δ = 2·2·1/3 = 4/3 give
    /// A_max = ⌊(2 − 4·(1/6) + 4/3)/(1/6)⌋ = 16, all passing. Bandwidths by period:
    /// 1, 1, 2/3, 3/4, 4/5, 5/6, so (3, 2) — the PRM EDF interface at Π = 3 as well.
    #[test]
    fn search_by_hand_one_task() {
        let w = Workload::new([Task::new(4, 2)]).unwrap();
        let search = optimal_dmpr_interface(&w, 1, 6, None).unwrap();
        let budgets: Vec<u64> = search
            .per_period
            .iter()
            .map(|(_, d)| d.unwrap().budget())
            .collect();
        assert_eq!(budgets, vec![1, 2, 2, 3, 4, 5]);
        assert_eq!(search.best, Dmpr::new(0, 3, 2).unwrap());
    }

    /// Three tasks (T 10, C 5, D 10): at every period one full VCPU and a partial (Π, Π) —
    /// two dedicated processors (a partial Θ < Π fails, e.g. (2, 1) in `gedf_by_hand`);
    /// the tie rule picks Π = 1. (MPR needs ⟨3, 8, 3⟩ for the same component.)
    #[test]
    fn search_three_heavy_tasks() {
        let w = Workload::new([Task::new(10, 5); 3]).unwrap();
        let search = optimal_dmpr_interface(&w, 1, 10, Some(4)).unwrap();
        for (period, found) in &search.per_period {
            assert_eq!(*found, Some(Dmpr::new(1, *period, *period).unwrap()));
            for budget in 1..*period {
                let d = Dmpr::new(1, *period, budget).unwrap();
                assert!(!gedf_schedulable_dmpr(&w, &d).is_schedulable());
            }
        }
        assert_eq!(search.best, Dmpr::new(1, 1, 1).unwrap());
    }

    /// The interfaces CARTS prints for the gEDF components of the examples it ships (its
    /// `MPR2` model with the published sbf and its default test, and its `DMPR` model), at
    /// the component's fixed period, matched exactly — including the MPR→VCPU split CARTS
    /// prints for ⟨50, 97, 2⟩, (50, 49) and (50, 48). CARTS writes DMPR as `(Π, Θ_total, m′)`.
    /// Where a task's interference reaches the cap, rtvmm's cap `t − C_k + 1` (the module
    /// docs of `gedf`: the paper's `t − C_k` accepts a tie that misses) costs a unit of
    /// budget over CARTS; those lines say what CARTS prints.
    #[test]
    fn carts_reference_outputs() {
        use crate::mpr::{mpr_interface_for_period, Mpr};
        let c0 = Workload::from_pairs(&[(200, 80), (200, 100), (200, 100)]).unwrap();
        let c1 = Workload::from_pairs(&[(200, 10), (200, 100)]).unwrap();
        let mixed = Workload::from_pairs(&[(100, 50), (200, 50), (200, 50), (200, 51)]).unwrap();
        let heavy = Workload::from_pairs(&[(200, 100); 3]).unwrap();
        let mpr = |w: &Workload, period| {
            let max = 10 * w.len() as u64; // CARTS tries m′ up to ten times the task count
            mpr_interface_for_period(w, period, max).unwrap().0.unwrap()
        };
        let dmpr = |w: &Workload, period| {
            let max = Some(10 * w.len() as u64);
            optimal_dmpr_interface(w, period, period, max)
                .unwrap()
                .best
                .carts_form()
        };
        assert_eq!(mpr(&c0, 50), Mpr::new(50, 97, 2).unwrap());
        assert_eq!(
            mpr(&c0, 50).to_vcpus(),
            vec![Interface::new(50, 49), Interface::new(50, 48)]
        );
        assert_eq!(mpr(&c1, 50), Mpr::new(50, 33, 1).unwrap());
        assert_eq!(mpr(&mixed, 80), Mpr::new(80, 145, 2).unwrap()); // CARTS ⟨80, 144, 2⟩
        assert_eq!(mpr(&mixed, 40), Mpr::new(40, 69, 2).unwrap()); // CARTS ⟨40, 68, 2⟩
        assert_eq!(dmpr(&c0, 50), (50, 96, 2));
        assert_eq!(dmpr(&c1, 50), (50, 32, 1));
        assert_eq!(dmpr(&mixed, 80), (80, 136, 2)); // CARTS (80, 135, 2)
        assert_eq!(dmpr(&mixed, 40), (40, 66, 2)); // CARTS (40, 65, 2)
        assert_eq!(dmpr(&heavy, 50), (50, 100, 2));
    }

    /// Concurrency, sbf, linear bound and verdict of one supply under test.
    type SupplyCase<'a> = (u64, &'a dyn Fn(u64) -> u64, LinearSupply, GedfVerdict);

    /// The bound on `A_k` loses nothing: on random small components and interfaces (MPR and
    /// DMPR), whenever the test says schedulable, no violation exists even ten times past the
    /// bound (plus 200); whenever it reports a violation, the violation is real.
    #[test]
    fn bounded_range_agrees_with_a_longer_scan() {
        use crate::mpr::{gedf_schedulable, Mpr};
        let mut seed = 0x5eed_u64;
        let mut next = |n: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % n
        };
        let mut scratch = Vec::new();
        let mut checked = [0u32; 2];
        for _ in 0..1000 {
            let tasks: Vec<Task> = (0..1 + next(4))
                .map(|_| {
                    let period = 2 + next(12);
                    let deadline = 1 + next(period);
                    Task::with_deadline(period, 1 + next(deadline), deadline)
                })
                .collect();
            let w = Workload::new(tasks).unwrap();
            let g = GedfWorkload::new(&w);
            let period = 1 + next(8);
            let m = 1 + next(3);
            let mpr = Mpr::new(period, next(m * period + 1), m).unwrap();
            let dmpr = Dmpr::new(next(3), period, next(period + 1)).unwrap();
            let cases: [SupplyCase; 2] = [
                (
                    m,
                    &|t| mpr.sbf(t),
                    mpr.linear_supply(),
                    gedf_schedulable(&w, &mpr),
                ),
                (
                    dmpr.concurrency(),
                    &|t| dmpr.sbf(t),
                    dmpr.linear_supply(),
                    gedf_schedulable_dmpr(&w, &dmpr),
                ),
            ];
            for (which, (concurrency, sbf, line, verdict)) in cases.into_iter().enumerate() {
                if concurrency == 0 {
                    continue;
                }
                match verdict {
                    GedfVerdict::Schedulable => {
                        checked[which] += 1;
                        for k in 0..w.len() {
                            let far = 10 * g.max_a_k(k, concurrency, &line).unwrap() + 200;
                            for a_k in 0..=far {
                                let t = a_k + w.tasks()[k].deadline;
                                let supply = sbf(t);
                                assert!(
                                    g.demand(k, a_k, concurrency, &mut scratch) <= supply
                                        || g.paper_demand(k, a_k, concurrency, &mut scratch)
                                            < supply,
                                    "{w:?} {which} k={k} A={a_k}"
                                );
                            }
                        }
                    }
                    GedfVerdict::Violation {
                        window,
                        demand,
                        supply,
                        ..
                    } => {
                        assert_eq!(sbf(window), supply);
                        assert!(demand > supply);
                    }
                    _ => {}
                }
            }
        }
        assert!(checked.iter().all(|&n| n > 20), "{checked:?}");
    }
}
