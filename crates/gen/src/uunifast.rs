//! A general-purpose task set (`rtvmm gen uunifast`): N tasks of total utilisation U over
//! D domains, each domain with a bandwidth-matched server.
//!
//! Procedure, in this draw order from `SimRng::derived(seed, "UUNIFAST")`:
//! 1. `tasks` utilisations summing to U with the chosen [`Sampler`];
//! 2. `tasks` periods from the period distribution;
//! 3. WCET = `round(u · p)` in whole microseconds, at least 1 µs and at most p.
//!
//! Task `i` goes to domain `i mod domains` (round robin: every domain gets tasks when
//! `tasks ≥ domains`). Each domain gets a **bandwidth-matched** server: period
//! `server_period`, budget = its utilisation × period rounded *up* to the quantum (at
//! least one quantum, at most the period), priorities in domain order. That is a starting
//! point, not a guarantee: for interfaces that guarantee schedulability use the analysis
//! (`rtvmm analyze`). With `etf`, each job takes between `⌈etf · wcet⌉` (in ns) and its
//! wcet.

use rtvmm_core::guest::{GuestScheduler, TaskSpec};
use rtvmm_core::rng::SimRng;
use rtvmm_core::Nanos;

use crate::periods::PeriodDistribution;
use crate::sampling::{rand_fixed_sum, uunifast, uunifast_discard};
use crate::{GenError, ServerDomain, ServerSystem};

/// Which utilisation sampler to use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sampler {
    /// UUniFast (Bini & Buttazzo 2005); a task may get a utilisation above 1.
    Uunifast,
    /// UUniFast-Discard with every utilisation ≤ 1 (Davis & Burns).
    Discard,
    /// RandFixedSum over [0, 1] (Stafford; Emberson, Stafford & Davis 2010).
    RandFixedSum,
}

impl Sampler {
    pub fn from_name(name: &str) -> Option<Sampler> {
        match name.trim().to_ascii_lowercase().as_str() {
            "uunifast" => Some(Sampler::Uunifast),
            "discard" | "uunifast-discard" => Some(Sampler::Discard),
            "randfixedsum" | "rand-fixed-sum" => Some(Sampler::RandFixedSum),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Sampler::Uunifast => "uunifast",
            Sampler::Discard => "uunifast-discard",
            Sampler::RandFixedSum => "randfixedsum",
        }
    }
}

/// The parameters (module note).
#[derive(Clone, Debug, PartialEq)]
pub struct UunifastParams {
    pub tasks: usize,
    /// Total utilisation U.
    pub utilisation: f64,
    pub domains: usize,
    pub periods: PeriodDistribution,
    pub sampler: Sampler,
    /// Every domain's server period.
    pub server_period: Nanos,
    /// Server budgets are whole multiples of it.
    pub quantum: Nanos,
    /// Execution-time factor in (0, 1]; `None` = 1 (every job takes its wcet).
    pub etf: Option<f64>,
    pub seed: u64,
}

/// The most tasks (and so domains) one generated system may have: ten times the largest
/// scenarios rtvmm is measured with (100,000 tasks), and a file of about 100 MB.
pub const MAX_TASKS: usize = 1_000_000;

/// Label of the random stream (ASCII "UUNIFAST").
const UUNIFAST_STREAM_LABEL: u64 = 0x5555_4E49_4641_5354;
/// UUniFast-Discard gives up after this many vectors.
const DISCARD_ATTEMPTS: u64 = 100_000;

/// The task set and its servers (module note).
pub fn uunifast_system(p: &UunifastParams) -> Result<ServerSystem, GenError> {
    let invalid = |parameter: &'static str, problem: String| GenError::InvalidParameter {
        parameter,
        problem,
    };
    if p.tasks == 0 {
        return Err(invalid("tasks", "at least one task".into()));
    }
    if p.tasks > MAX_TASKS {
        return Err(invalid(
            "tasks",
            format!(
                "{} is above the most a system is generated with, {MAX_TASKS}",
                p.tasks
            ),
        ));
    }
    if p.domains == 0 || p.domains > p.tasks {
        return Err(invalid(
            "domains",
            format!("must be between 1 and the number of tasks ({})", p.tasks),
        ));
    }
    if !(p.utilisation > 0.0 && p.utilisation.is_finite()) {
        return Err(invalid(
            "utilisation",
            format!("{} is not positive", p.utilisation),
        ));
    }
    if p.quantum.is_zero() || p.server_period < p.quantum {
        return Err(invalid(
            "server_period",
            format!(
                "{} is shorter than the quantum {}",
                p.server_period, p.quantum
            ),
        ));
    }
    if let Some(etf) = p.etf {
        if !(etf > 0.0 && etf <= 1.0) {
            return Err(invalid("etf", format!("{etf} is outside (0, 1]")));
        }
    }
    let mut rng = SimRng::derived(p.seed, UUNIFAST_STREAM_LABEL);
    let utilisations = match p.sampler {
        Sampler::Uunifast => uunifast(&mut rng, p.tasks, p.utilisation)?,
        Sampler::Discard => {
            uunifast_discard(&mut rng, p.tasks, p.utilisation, 1.0, DISCARD_ATTEMPTS)?
        }
        Sampler::RandFixedSum => rand_fixed_sum(&mut rng, p.tasks, p.utilisation, 0.0, 1.0)?,
    };
    let periods = p.periods.sample_n(&mut rng, p.tasks)?;
    let mut domains: Vec<ServerDomain> = (0..p.domains)
        .map(|k| ServerDomain {
            name: format!("d{}", k + 1),
            budget: Nanos::ZERO,
            period: p.server_period,
            priority: k as u32 + 1,
            guest: GuestScheduler::Rm,
            tasks: Vec::new(),
            offset: Nanos::ZERO,
        })
        .collect();
    let mut load = vec![0.0f64; p.domains];
    for (i, (&u, &period)) in utilisations.iter().zip(&periods).enumerate() {
        let us = (u * period.as_ns() as f64 / 1000.0).round().max(1.0) as u64;
        let wcet = Nanos::from_us(us).min(period);
        let k = i % p.domains;
        load[k] += wcet.as_ns() as f64 / period.as_ns() as f64;
        let index = domains[k].tasks.len() + 1;
        let mut task = TaskSpec::periodic(&format!("{}_t{index}", domains[k].name), period, wcet);
        if let Some(etf) = p.etf {
            let least = (etf * wcet.as_ns() as f64).ceil() as u64;
            task.min_exec = Nanos(least.clamp(1, wcet.as_ns()));
        }
        domains[k].tasks.push(task);
    }
    let quanta_per_period = p.server_period.as_ns() / p.quantum.as_ns();
    for (k, d) in domains.iter_mut().enumerate() {
        let quanta = (load[k] * quanta_per_period as f64).ceil() as u64;
        d.budget = Nanos(quanta.clamp(1, quanta_per_period) * p.quantum.as_ns());
    }
    let total: f64 = load.iter().sum();
    Ok(ServerSystem {
        name: format!("{}-{}-tasks", p.sampler.name(), p.tasks),
        description: format!(
            "{} task utilisations summing to {} drawn with {}, periods {}, WCET = round(u·p) \
             µs; tasks spread round robin over {} domains with bandwidth-matched servers of \
             period {} (budget = domain utilisation × period rounded up to the {} quantum; \
             not a schedulability guarantee); generated utilisation {total:.4}; seed {}",
            p.tasks,
            p.utilisation,
            p.sampler.name(),
            p.periods,
            p.domains,
            p.server_period,
            p.quantum,
            p.seed
        ),
        domains,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> UunifastParams {
        UunifastParams {
            tasks: 12,
            utilisation: 0.6,
            domains: 3,
            periods: PeriodDistribution::uniform_ms(10, 100),
            sampler: Sampler::Discard,
            server_period: Nanos::from_ms(10),
            quantum: Nanos::from_ms(1),
            etf: None,
            seed: 3,
        }
    }

    #[test]
    fn servers_cover_each_domain_bandwidth() {
        let s = uunifast_system(&params()).unwrap();
        assert_eq!(s.domains.len(), 3);
        for d in &s.domains {
            assert_eq!(d.tasks.len(), 4);
            let u: f64 = d
                .tasks
                .iter()
                .map(|t| t.wcet.as_ns() as f64 / t.period.as_ns() as f64)
                .sum();
            let share = d.budget.as_ns() as f64 / d.period.as_ns() as f64;
            assert!(share + 1e-12 >= u.min(1.0), "{share} < {u}");
            assert_eq!(d.budget.as_ns() % 1_000_000, 0);
        }
        assert_eq!(s, uunifast_system(&params()).unwrap(), "deterministic");
        assert!(uunifast_system(&UunifastParams {
            domains: 13,
            ..params()
        })
        .is_err());
    }

    #[test]
    fn etf_sets_the_least_execution_time() {
        let s = uunifast_system(&UunifastParams {
            etf: Some(0.5),
            ..params()
        })
        .unwrap();
        for t in s.domains.iter().flat_map(|d| &d.tasks) {
            assert_eq!(t.min_exec.as_ns(), t.wcet.as_ns().div_ceil(2), "{}", t.name);
        }
        assert!(uunifast_system(&UunifastParams {
            etf: Some(1.5),
            ..params()
        })
        .is_err());
    }

    /// `gen uunifast --tasks 4294967296` aborted trying to allocate them (issue 23).
    #[test]
    fn more_tasks_than_the_most_are_refused_before_anything_is_allocated() {
        let error = uunifast_system(&UunifastParams {
            tasks: usize::MAX,
            domains: 1,
            ..params()
        })
        .unwrap_err();
        assert!(
            matches!(
                error,
                GenError::InvalidParameter {
                    parameter: "tasks",
                    ..
                }
            ),
            "{error}"
        );
        assert!(error.to_string().contains("above the most"), "{error}");
        assert!(uunifast_system(&UunifastParams {
            tasks: MAX_TASKS + 1,
            ..params()
        })
        .is_err());
    }
}
