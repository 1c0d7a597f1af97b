//! The csa-periods / csa-etf task sets (Lee, Xi, Chen, Phan, Gill, Lee, Lu, Sokolsky,
//! "Realizing Compositional Scheduling through Virtualization", RTAS 2012, §6).
//!
//! # Procedure ([`csa_taskset`])
//! Until the generated utilisation reaches U_W, add a task:
//! 1. draw its utilisation `u` uniformly in [0.2 %, 5 %)
//!    ([`CSA_TASK_UTILISATION_RANGE`]);
//! 2. draw its period `p` uniformly among the whole milliseconds of the range
//!    (the standard ranges are [`CSA_PERIOD_RANGES_MS`]);
//! 3. set its WCET to `round(u · p)` whole milliseconds, halves up, and at least 1 ms.
//!    The unit is 1 ms because interfaces are computed in 1 ms quanta.
//!
//! The running total is of the *generated* utilisations `wcet/p`, not the drawn `u`, so
//! the set really reaches U_W; the last task may overshoot it (by less than one task,
//! about 5 %). Rounding moves a task's utilisation by at most `0.5 ms / p` from `u`
//! (the 1 ms floor only raises a `u · p < 0.5 ms` task to `1/p`), so each generated
//! utilisation lies in `[0.2 % − 0.5/p, 5 % + 0.5/p]`.
//!
//! The tasks are then spread over the domains: each task's domain is drawn uniformly,
//! and the whole assignment is drawn again until no domain is empty — that is the uniform
//! distribution over the assignments that leave no domain empty. (With ≥ 14 tasks, the
//! fewest U_W = 0.7 can give, fewer than a quarter of the draws are redrawn.) Within a
//! domain, tasks keep their generation order and are named `d<k>_t<i>`. Interfaces are
//! the analysis crate's job.
//!
//! # Seeding
//! The stream is `SimRng::derived(seed, label)` with `label` from U_W and the period
//! range ([`csa_stream_label`]), so the same (seed, U_W, range) gives the same set for
//! every policy.

use crate::periods::PeriodDistribution;
use crate::sampling::shuffle;
use crate::{permille, round_steps, GenDomain, GenError, GenSystem, GenTask};
use rtvmm_core::rng::SimRng;
use rtvmm_core::Nanos;
use serde::Serialize;

/// Task utilisations are uniform in this range.
pub const CSA_TASK_UTILISATION_RANGE: (f64, f64) = (0.002, 0.05);
/// The three period ranges of csa-periods, in ms.
pub const CSA_PERIOD_RANGES_MS: [(u64, u64); 3] = [(550, 650), (350, 850), (100, 1100)];
/// The task utilisations U_W of the csa experiments, in permille.
pub const CSA_UTILISATIONS_PERMILLE: [u32; 4] = [700, 800, 900, 1000];
/// The number of domains of the csa experiments.
pub const CSA_DOMAINS: usize = 5;
/// How many times the domain assignment is redrawn before giving up.
const MAX_ASSIGNMENT_DRAWS: u32 = 100_000;

/// Parameters of one csa task set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CsaParams {
    /// U_W in permille (1…1000).
    pub utilisation_permille: u32,
    /// Shortest period, a whole number of ms ≥ 1 ms.
    pub period_min: Nanos,
    /// Longest period, a whole number of ms.
    pub period_max: Nanos,
    /// Number of domains (≥ 1), five in the experiments.
    pub domains: usize,
}

impl CsaParams {
    /// U_W in permille, periods in `[min_ms, max_ms]`, five domains.
    pub fn new(utilisation_permille: u32, (min_ms, max_ms): (u64, u64)) -> CsaParams {
        CsaParams {
            utilisation_permille,
            period_min: Nanos::from_ms(min_ms),
            period_max: Nanos::from_ms(max_ms),
            domains: CSA_DOMAINS,
        }
    }

    fn validate(&self) -> Result<PeriodDistribution, GenError> {
        if !(1..=1000).contains(&self.utilisation_permille) {
            return Err(GenError::InvalidParameter {
                parameter: "utilisation_permille",
                problem: format!("{}‰ is outside 1‰…1000‰", self.utilisation_permille),
            });
        }
        if self.domains == 0 {
            return Err(GenError::InvalidParameter {
                parameter: "domains",
                problem: "at least one domain is needed".into(),
            });
        }
        let periods = PeriodDistribution::Uniform {
            min: self.period_min,
            max: self.period_max,
            granularity: Nanos::from_ms(1),
        };
        periods.validate().map_err(|error| match error {
            GenError::InvalidParameter { parameter, problem } => GenError::InvalidParameter {
                parameter: if parameter == "max" {
                    "period_max"
                } else {
                    "period_min"
                },
                problem,
            },
            other => other,
        })?;
        Ok(periods)
    }
}

/// The label of the random stream for these parameters: U_W ‰, the range's ends in ms
/// and the domain count, packed (then mixed by [`SimRng::derived`]).
pub fn csa_stream_label(params: &CsaParams) -> u64 {
    let min_ms = params.period_min.as_ns() / 1_000_000;
    let max_ms = params.period_max.as_ns() / 1_000_000;
    u64::from(params.utilisation_permille)
        ^ (min_ms << 12)
        ^ (max_ms << 32)
        ^ ((params.domains as u64) << 56)
}

/// One csa task set; see the module note for the procedure. Domains are `d1`…`dN`, none
/// empty, with no fixed period.
pub fn csa_taskset(params: &CsaParams, seed: u64) -> Result<GenSystem, GenError> {
    let periods = params.validate()?;
    let target = permille(params.utilisation_permille);
    let mut rng = SimRng::derived(seed, csa_stream_label(params));
    let (u_low, u_high) = CSA_TASK_UTILISATION_RANGE;
    let one_ms = Nanos::from_ms(1);

    let mut tasks: Vec<(Nanos, Nanos)> = Vec::new();
    let mut total = 0.0;
    while total < target {
        let drawn = rng.uniform_range_f64(u_low, u_high);
        let period = periods.sample(&mut rng)?;
        let period_ms = period.as_ns() / one_ms.as_ns();
        let wcet = round_steps(drawn * period_ms as f64, one_ms).max(one_ms);
        total += wcet.as_ns() as f64 / period.as_ns() as f64;
        tasks.push((period, wcet));
    }

    let assignment = spread_over_domains(&mut rng, tasks.len(), params.domains)?;
    let mut domains: Vec<GenDomain> = (1..=params.domains)
        .map(|k| GenDomain {
            name: format!("d{k}"),
            tasks: Vec::new(),
            fixed_period: None,
        })
        .collect();
    for ((period, wcet), domain_index) in tasks.into_iter().zip(assignment) {
        let domain = &mut domains[domain_index];
        let name = format!("{}_t{}", domain.name, domain.tasks.len() + 1);
        domain.tasks.push(GenTask::new(name, period, wcet));
    }

    let mut system = GenSystem {
        domains,
        description: String::new(),
    };
    system.description = format!(
        "csa task set (Lee et al., RTAS 2012): U_W ≥ {target:.3}, task utilisation uniform in \
         [0.2%, 5%], periods {periods}, wcet = round(u·p) ms (≥ 1 ms), spread uniformly over \
         {} non-empty domains, seed {seed}; {} tasks, generated utilisation {:.4}",
        params.domains,
        system.task_count(),
        system.total_utilisation()
    );
    Ok(system)
}

/// A uniformly drawn assignment of `tasks` tasks to `domains` domains, conditioned on no
/// domain being empty (rejection: redraw the whole assignment).
fn spread_over_domains(
    rng: &mut SimRng,
    tasks: usize,
    domains: usize,
) -> Result<Vec<usize>, GenError> {
    if tasks < domains {
        return Err(GenError::TooFewTasks { tasks, domains });
    }
    for _ in 0..MAX_ASSIGNMENT_DRAWS {
        let assignment: Vec<usize> = (0..tasks)
            .map(|_| rng.uniform_u64(0, domains as u64 - 1) as usize)
            .collect();
        let mut used = vec![false; domains];
        for &d in &assignment {
            used[d] = true;
        }
        if used.iter().all(|&u| u) {
            return Ok(assignment);
        }
    }
    // Only reachable when tasks barely exceed domains and every draw was unlucky (for
    // 5 tasks over 5 domains, 3.8 % of draws succeed): fall back to a random
    // permutation of one task per domain followed by uniform draws.
    let mut assignment: Vec<usize> = (0..domains).collect();
    assignment.extend((domains..tasks).map(|_| rng.uniform_u64(0, domains as u64 - 1) as usize));
    shuffle(rng, &mut assignment);
    Ok(assignment)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_per_seed_and_parameters() {
        let params = CsaParams::new(800, (550, 650));
        let a = csa_taskset(&params, 3).unwrap();
        assert_eq!(a, csa_taskset(&params, 3).unwrap());
        assert_ne!(a, csa_taskset(&params, 4).unwrap());
        assert_ne!(a, csa_taskset(&CsaParams::new(800, (350, 850)), 3).unwrap());
    }

    /// Pins the exact output for one seed (see the rtxen test of the same name).
    #[test]
    fn seeded_output_is_stable_across_versions() {
        let system = csa_taskset(&CsaParams::new(700, (550, 650)), 42).unwrap();
        assert_eq!(system.task_count(), 29);
        let first = &system.domains[0].tasks[0];
        assert_eq!(
            (first.name.as_str(), first.period, first.wcet),
            ("d1_t1", Nanos::from_ms(581), Nanos::from_ms(25))
        );
    }

    #[test]
    fn every_standard_set_meets_the_procedure() {
        for seed in 0..10 {
            for &u_w in &CSA_UTILISATIONS_PERMILLE {
                for &(min_ms, max_ms) in &CSA_PERIOD_RANGES_MS {
                    let params = CsaParams::new(u_w, (min_ms, max_ms));
                    let system = csa_taskset(&params, seed).unwrap();
                    let context = format!("seed {seed} U_W {u_w}‰ [{min_ms}, {max_ms}]");

                    assert_eq!(system.domains.len(), 5, "{context}");
                    for (k, domain) in system.domains.iter().enumerate() {
                        assert_eq!(domain.name, format!("d{}", k + 1));
                        assert!(!domain.tasks.is_empty(), "{context}: {} empty", domain.name);
                        assert_eq!(domain.fixed_period, None);
                    }

                    let total = system.total_utilisation();
                    let target = permille(u_w);
                    assert!(total >= target - 1e-9, "{context}: total {total}");
                    // Overshoot is less than one task (≤ 5 % + rounding at 100 ms).
                    assert!(total < target + 0.05 + 0.005, "{context}: total {total}");

                    for (_, task) in system.tasks() {
                        let period_ms = task.period.as_ns() as f64 / 1e6;
                        assert!(
                            (Nanos::from_ms(min_ms)..=Nanos::from_ms(max_ms))
                                .contains(&task.period),
                            "{context}: {task:?}"
                        );
                        assert_eq!(task.period.as_ns() % 1_000_000, 0);
                        assert_eq!(task.wcet.as_ns() % 1_000_000, 0);
                        assert!(task.wcet >= Nanos::from_ms(1));
                        assert_eq!(task.deadline, task.period);
                        let rounding = 0.5 / period_ms;
                        let u = task.utilisation();
                        assert!(
                            u >= 0.002 - rounding && u <= 0.05 + rounding,
                            "{context}: {} has utilisation {u}",
                            task.name
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn rejects_bad_parameters_by_name() {
        let cases = [
            (CsaParams::new(0, (550, 650)), "utilisation_permille"),
            (CsaParams::new(1001, (550, 650)), "utilisation_permille"),
            (CsaParams::new(700, (650, 550)), "period_min"),
            (CsaParams::new(700, (0, 550)), "period_min"),
            (
                CsaParams {
                    period_max: Nanos(650_500_000),
                    ..CsaParams::new(700, (550, 650))
                },
                "period_max",
            ),
            (
                CsaParams {
                    domains: 0,
                    ..CsaParams::new(700, (550, 650))
                },
                "domains",
            ),
        ];
        for (params, expected) in cases {
            match csa_taskset(&params, 1) {
                Err(GenError::InvalidParameter { parameter, .. }) => {
                    assert_eq!(parameter, expected, "{params:?}")
                }
                other => panic!("{params:?} gave {other:?}"),
            }
        }
    }

    #[test]
    fn too_small_a_load_for_five_domains_is_an_error() {
        // 1‰ is reached by the first task: one task cannot fill five domains.
        assert!(matches!(
            csa_taskset(&CsaParams::new(1, (550, 650)), 1),
            Err(GenError::TooFewTasks { domains: 5, .. })
        ));
    }

    #[test]
    fn spreading_fills_every_domain_even_when_tight() {
        let mut rng = SimRng::new(5);
        for _ in 0..200 {
            let assignment = spread_over_domains(&mut rng, 5, 5).unwrap();
            let mut sorted = assignment.clone();
            sorted.sort_unstable();
            assert_eq!(sorted, [0, 1, 2, 3, 4]);
        }
    }
}
