//! Avionics-shaped (ARINC-653) workloads — **generated**, not the published tables.
//!
//! csa-arinc runs seven harmonic avionics workloads (Easwaran, Lee, Sokolsky, Vestal,
//! "A Compositional Scheduling Framework for Digital Avionics Systems", UPenn
//! MS-CIS-09-04, 2009). Those tables are not available, so this module generates
//! workloads of the same shape, and [`crate::workload_file`] reads the real ones for
//! anyone who has them. Every description says "generated".
//!
//! # Procedure ([`arinc_workload`])
//! 1. Draw the number of partitions uniformly in `partitions_min ..= partitions_max`.
//! 2. For each partition `p1, p2, …` in order: draw its period uniformly from the
//!    harmonic set `partition_periods` (default {25, 50, 100, 200} ms) and its number of
//!    tasks uniformly in `tasks_min ..= tasks_max`.
//! 3. Split the target utilisation among the partitions with UUniFast, then each
//!    partition's share among its tasks with UUniFast ([`crate::sampling::uunifast`]).
//! 4. Task periods: the partition's first task gets the partition period itself (so the
//!    partition period is the shortest period inside it, as with real partitions); each
//!    other task draws uniformly from the members of the set that are multiples of the
//!    partition period. All periods therefore come from one harmonic set: every pair
//!    divides, and every task period is a multiple of its partition's period.
//! 5. WCET = `round(u · T)` in steps of `wcet_granularity` (default 1 µs), at least one
//!    step. Each task's utilisation is thus within `granularity / T` of its draw, and the
//!    total within the sum of those.
//!
//! Partitions get `fixed_period = Some(partition period)`.
//!
//! # The suite ([`arinc_suite`])
//! Seven workloads, W1…W7, with fixed partition counts and target utilisations spread over
//! the published range 0.003…0.54 ([`arinc_suite_params`]). Workload `i` is
//! `arinc_workload(params_i, "Wi", arinc_suite_seed(seed, i))`, its seed being the first
//! draw of `SimRng::derived(seed, ARINC_STREAM_LABEL + i)`: fixed for a run seed, and
//! unrelated between workloads.

use crate::periods::{is_harmonic, PeriodDistribution};
use crate::sampling::uunifast;
use crate::{round_steps, GenDomain, GenError, GenSystem, GenTask};
use rtvmm_core::rng::SimRng;
use rtvmm_core::Nanos;
use serde::Serialize;

/// The default partition periods, in ms.
pub const ARINC_PARTITION_PERIODS_MS: [u64; 4] = [25, 50, 100, 200];
/// The published range of total workload utilisation.
pub const ARINC_UTILISATION_RANGE: (f64, f64) = (0.003, 0.54);
/// Base of the suite's stream labels (ASCII "ARINC").
pub const ARINC_STREAM_LABEL: u64 = 0x41_5249_4E43_0000;

/// Parameters of a generated avionics workload.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ArincParams {
    pub partitions_min: usize,
    pub partitions_max: usize,
    pub tasks_min: usize,
    pub tasks_max: usize,
    /// A harmonic set of partition periods.
    pub partition_periods: Vec<Nanos>,
    /// Target total utilisation, in (0, 1]; the published range is
    /// [`ARINC_UTILISATION_RANGE`].
    pub total_utilisation: f64,
    /// The WCET grid; every partition period must be a multiple of it.
    pub wcet_granularity: Nanos,
}

impl Default for ArincParams {
    /// 3–8 partitions of 2–4 tasks, periods {25, 50, 100, 200} ms, utilisation 0.3,
    /// WCETs in whole µs.
    fn default() -> ArincParams {
        ArincParams {
            partitions_min: 3,
            partitions_max: 8,
            tasks_min: 2,
            tasks_max: 4,
            partition_periods: ARINC_PARTITION_PERIODS_MS
                .iter()
                .map(|&ms| Nanos::from_ms(ms))
                .collect(),
            total_utilisation: 0.3,
            wcet_granularity: Nanos::from_us(1),
        }
    }
}

impl ArincParams {
    fn validate(&self) -> Result<(), GenError> {
        let invalid = |parameter: &'static str, problem: String| {
            Err(GenError::InvalidParameter { parameter, problem })
        };
        if self.partitions_min == 0 || self.partitions_min > self.partitions_max {
            return invalid(
                "partitions_min",
                format!(
                    "need 1 ≤ partitions_min ≤ partitions_max, got {} and {}",
                    self.partitions_min, self.partitions_max
                ),
            );
        }
        if self.tasks_min == 0 || self.tasks_min > self.tasks_max {
            return invalid(
                "tasks_min",
                format!(
                    "need 1 ≤ tasks_min ≤ tasks_max, got {} and {}",
                    self.tasks_min, self.tasks_max
                ),
            );
        }
        PeriodDistribution::HarmonicSet(self.partition_periods.clone())
            .validate()
            .map_err(|error| match error {
                GenError::InvalidParameter { problem, .. } => GenError::InvalidParameter {
                    parameter: "partition_periods",
                    problem,
                },
                other => other,
            })?;
        let total = self.total_utilisation;
        if !(total.is_finite() && total > 0.0 && total <= 1.0) {
            return invalid("total_utilisation", format!("{total} is not in (0, 1]"));
        }
        if self.wcet_granularity.is_zero() {
            return invalid("wcet_granularity", "must be positive".into());
        }
        if let Some(p) = self
            .partition_periods
            .iter()
            .find(|p| p.as_ns() % self.wcet_granularity.as_ns() != 0)
        {
            return invalid(
                "wcet_granularity",
                format!(
                    "partition period {p} is not a multiple of {}",
                    self.wcet_granularity
                ),
            );
        }
        Ok(())
    }
}

/// One generated avionics workload named `name`, drawn from `SimRng::new(seed)`; see the
/// module note. Partitions are `p1`…`pN`, tasks `p<k>_t<i>`.
pub fn arinc_workload(params: &ArincParams, name: &str, seed: u64) -> Result<GenSystem, GenError> {
    params.validate()?;
    let mut rng = SimRng::new(seed);
    let periods = &params.partition_periods;
    let pick = |rng: &mut SimRng, choices: &[Nanos]| {
        choices[rng.uniform_u64(0, choices.len() as u64 - 1) as usize]
    };

    let partition_count =
        rng.uniform_u64(params.partitions_min as u64, params.partitions_max as u64) as usize;
    let shapes: Vec<(Nanos, usize)> = (0..partition_count)
        .map(|_| {
            let period = pick(&mut rng, periods);
            let tasks = rng.uniform_u64(params.tasks_min as u64, params.tasks_max as u64);
            (period, tasks as usize)
        })
        .collect();
    let partition_shares = uunifast(&mut rng, partition_count, params.total_utilisation)?;

    let granularity = params.wcet_granularity;
    let mut domains = Vec::with_capacity(partition_count);
    for (index, (&(partition_period, task_count), &share)) in
        shapes.iter().zip(&partition_shares).enumerate()
    {
        let multiples: Vec<Nanos> = periods
            .iter()
            .copied()
            .filter(|p| p.as_ns() % partition_period.as_ns() == 0)
            .collect();
        let utilisations = uunifast(&mut rng, task_count, share)?;
        let partition_name = format!("p{}", index + 1);
        let tasks = utilisations
            .iter()
            .enumerate()
            .map(|(task_index, &utilisation)| {
                let period = if task_index == 0 {
                    partition_period
                } else {
                    pick(&mut rng, &multiples)
                };
                let steps = utilisation * period.as_ns() as f64 / granularity.as_ns() as f64;
                let wcet = round_steps(steps, granularity).max(granularity);
                GenTask::new(
                    format!("{partition_name}_t{}", task_index + 1),
                    period,
                    wcet,
                )
            })
            .collect();
        domains.push(GenDomain {
            name: partition_name,
            tasks,
            fixed_period: Some(partition_period),
        });
    }

    let mut system = GenSystem {
        domains,
        description: String::new(),
    };
    let period_list: Vec<String> = periods.iter().map(Nanos::to_string).collect();
    system.description = format!(
        "{name}: GENERATED avionics-shaped workload (not the Easwaran et al. 2009 tables): \
         {partition_count} partitions with periods from {{{}}}, {}–{} tasks each with \
         harmonic periods that are multiples of their partition's, target utilisation \
         {:.4} split by UUniFast, wcet in steps of {granularity}, seed {seed}; \
         {} tasks, generated utilisation {:.4}",
        period_list.join(", "),
        params.tasks_min,
        params.tasks_max,
        params.total_utilisation,
        system.task_count(),
        system.total_utilisation()
    );
    Ok(system)
}

/// The seven suite workloads' names and parameters: W1…W7 with 3, 4, 5, 6, 7, 8, 6
/// partitions and target utilisations 0.003, 0.05, 0.12, 0.22, 0.33, 0.45, 0.54 — both
/// ends of the published range and steps between; other parameters default.
pub fn arinc_suite_params() -> Vec<(String, ArincParams)> {
    const SHAPES: [(usize, f64); 7] = [
        (3, 0.003),
        (4, 0.05),
        (5, 0.12),
        (6, 0.22),
        (7, 0.33),
        (8, 0.45),
        (6, 0.54),
    ];
    SHAPES
        .iter()
        .enumerate()
        .map(|(index, &(partitions, total_utilisation))| {
            (
                format!("W{}", index + 1),
                ArincParams {
                    partitions_min: partitions,
                    partitions_max: partitions,
                    total_utilisation,
                    ..ArincParams::default()
                },
            )
        })
        .collect()
}

/// The seed of suite workload `index` (1…7) for a run seed.
pub fn arinc_suite_seed(seed: u64, index: usize) -> u64 {
    SimRng::derived(seed, ARINC_STREAM_LABEL + index as u64).next_u64()
}

/// The seven generated workloads W1…W7 of csa-arinc for a run seed.
pub fn arinc_suite(seed: u64) -> Vec<GenSystem> {
    arinc_suite_params()
        .iter()
        .enumerate()
        .map(|(index, (name, params))| {
            arinc_workload(params, name, arinc_suite_seed(seed, index + 1))
                .expect("the suite's parameters are constants that validate")
        })
        .collect()
}

/// True when every task period in the system is harmonic with every other and a
/// multiple of its domain's fixed period (domains without one pass the second check).
/// A check for workloads read from files, whose analysis is exact only in that case.
pub fn is_harmonic_workload(system: &GenSystem) -> bool {
    let periods: Vec<Nanos> = system.tasks().map(|(_, t)| t.period).collect();
    is_harmonic(&periods)
        && system.domains.iter().all(|d| match d.fixed_period {
            Some(p) if !p.is_zero() => d.tasks.iter().all(|t| t.period.as_ns() % p.as_ns() == 0),
            Some(_) => false,
            None => true,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suite_is_deterministic_and_seed_dependent() {
        assert_eq!(arinc_suite(1), arinc_suite(1));
        assert_ne!(arinc_suite(1), arinc_suite(2));
        assert_eq!(arinc_suite(1).len(), 7);
    }

    #[test]
    fn suite_workloads_have_the_avionics_shape() {
        for seed in 0..10 {
            let suite = arinc_suite(seed);
            for ((name, params), system) in arinc_suite_params().iter().zip(&suite) {
                let context = format!("seed {seed} {name}");
                assert!(system.description.starts_with(name.as_str()));
                assert!(system.description.contains("GENERATED"));
                assert!((3..=8).contains(&system.domains.len()), "{context}");
                assert_eq!(system.domains.len(), params.partitions_min, "{context}");

                let mut all_periods = Vec::new();
                let mut rounding_bound = 0.0;
                for domain in &system.domains {
                    let partition_period = domain.fixed_period.expect("partitions are fixed");
                    assert!(
                        ARINC_PARTITION_PERIODS_MS
                            .iter()
                            .any(|&ms| Nanos::from_ms(ms) == partition_period),
                        "{context}: {partition_period}"
                    );
                    assert!((2..=4).contains(&domain.tasks.len()), "{context}");
                    assert_eq!(domain.tasks[0].period, partition_period);
                    for task in &domain.tasks {
                        assert_eq!(
                            task.period.as_ns() % partition_period.as_ns(),
                            0,
                            "{context}: {} period {} in partition of {partition_period}",
                            task.name,
                            task.period
                        );
                        assert!(task.wcet >= Nanos::from_us(1) && task.wcet <= task.period);
                        assert_eq!(task.deadline, task.period);
                        all_periods.push(task.period);
                        rounding_bound += 1e3 / task.period.as_ns() as f64;
                    }
                }
                // Pairwise, not through `is_harmonic`, so a bug there cannot hide one here.
                for a in &all_periods {
                    for b in &all_periods {
                        let (small, large) = if a <= b { (a, b) } else { (b, a) };
                        assert_eq!(large.as_ns() % small.as_ns(), 0, "{context}: {a} {b}");
                    }
                }
                assert!(is_harmonic_workload(system));

                // Utilisation: the target up to WCET rounding (≤ one 1 µs step per task),
                // and so inside the published range up to the same rounding.
                let total = system.total_utilisation();
                assert!(
                    (total - params.total_utilisation).abs() <= rounding_bound,
                    "{context}: {total} vs target {}",
                    params.total_utilisation
                );
                let (low, high) = ARINC_UTILISATION_RANGE;
                assert!(total >= low - rounding_bound && total <= high + rounding_bound);
            }
        }
    }

    #[test]
    fn suite_spans_the_published_range() {
        let targets: Vec<f64> = arinc_suite_params()
            .iter()
            .map(|(_, p)| p.total_utilisation)
            .collect();
        assert_eq!(targets.first(), Some(&ARINC_UTILISATION_RANGE.0));
        assert_eq!(targets.last(), Some(&ARINC_UTILISATION_RANGE.1));
    }

    #[test]
    fn default_parameters_draw_three_to_eight_partitions() {
        let mut seen = [false; 9];
        for seed in 0..200 {
            let system = arinc_workload(&ArincParams::default(), "w", seed).unwrap();
            seen[system.domains.len()] = true;
        }
        assert_eq!(
            seen,
            [false, false, false, true, true, true, true, true, true]
        );
    }

    #[test]
    fn rejects_bad_parameters_by_name() {
        let base = ArincParams::default();
        let cases = [
            (
                ArincParams {
                    partitions_min: 0,
                    ..base.clone()
                },
                "partitions_min",
            ),
            (
                ArincParams {
                    tasks_min: 5,
                    ..base.clone()
                },
                "tasks_min",
            ),
            (
                ArincParams {
                    partition_periods: vec![Nanos::from_ms(25), Nanos::from_ms(60)],
                    ..base.clone()
                },
                "partition_periods",
            ),
            (
                ArincParams {
                    total_utilisation: 1.5,
                    ..base.clone()
                },
                "total_utilisation",
            ),
            (
                ArincParams {
                    wcet_granularity: Nanos::from_ms(3),
                    ..base.clone()
                },
                "wcet_granularity",
            ),
        ];
        for (params, expected) in cases {
            match arinc_workload(&params, "w", 1) {
                Err(GenError::InvalidParameter { parameter, .. }) => {
                    assert_eq!(parameter, expected, "{params:?}")
                }
                other => panic!("{params:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn harmonic_workload_check_catches_a_stray_period() {
        let mut system = arinc_suite(3).remove(2);
        assert!(is_harmonic_workload(&system));
        system.domains[0].tasks[0].period = Nanos::from_ms(30);
        assert!(!is_harmonic_workload(&system));
    }
}
