//! The generators of `rtvmm gen` (rtxen, csa, arinc, uunifast) as scenario text: the task
//! set and its servers from `rtvmm_gen` (csa and arinc domains served by their interfaces,
//! from [`interfaces`](crate::interfaces)); the file written by the scenario crate
//! ([`Scenario::from_servers`], [`Scenario::to_toml`]) under a header that says how it was
//! made and the command that makes it again. The command line and the Python package
//! call [`generate`]; options keep their flag names (`--load`) in messages.

use std::fmt::Write as _;

use rtvmm_analysis::SbfMode;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_gen::arinc::arinc_suite;
use rtvmm_gen::csa::{csa_taskset, CsaParams};
use rtvmm_gen::periods::PeriodDistribution;
use rtvmm_gen::rtxen::{rtxen_system, SharePattern};
use rtvmm_gen::uunifast::{uunifast_system, Sampler, UunifastParams, MAX_TASKS};
use rtvmm_gen::ServerSystem;
use rtvmm_scenario::Scenario;

use crate::interfaces::{
    fixed_period_interfaces, interface_note, interface_servers, optimal_interfaces,
};
use crate::options::DEFAULT_SEED;
use crate::ExperimentError;

/// The defaults of each generator's options (`rtvmm gen --help` shows them).
pub mod defaults {
    /// The scenario's run length.
    pub const DURATION: &str = "10s";
    pub const RTXEN_PATTERN: &str = "even";
    pub const RTXEN_LOAD: f64 = 0.7;
    pub const CSA_UTILISATION: f64 = 0.8;
    pub const CSA_PERIODS: &str = "550..650";
    pub const ARINC_INDEX: usize = 1;
    pub const UUNIFAST_TASKS: usize = 10;
    pub const UUNIFAST_UTILISATION: f64 = 0.7;
    pub const UUNIFAST_DOMAINS: usize = 1;
    pub const UUNIFAST_PERIODS: &str = "10..100";
    pub const UUNIFAST_SAMPLER: &str = "discard";
    pub const UUNIFAST_SERVER_PERIOD: &str = "10ms";
}

/// The generator names, as `rtvmm gen NAME` takes them.
pub const GENERATORS: [&str; 4] = ["rtxen", "csa", "arinc", "uunifast"];

/// Options every generator shares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GenCommon {
    /// Generator seed.
    pub seed: u64,
    /// The scenario's run length, with a unit (`10s`).
    pub duration: String,
    /// The scenario's policy (a name or an alias); `None`: deferrable for rtxen and
    /// uunifast, periodic for csa and arinc.
    pub policy: Option<String>,
}

impl Default for GenCommon {
    fn default() -> GenCommon {
        GenCommon {
            seed: DEFAULT_SEED,
            duration: defaults::DURATION.to_string(),
            policy: None,
        }
    }
}

/// A generator and its own options (times and ranges as the command line writes them).
#[derive(Clone, Debug, PartialEq)]
pub enum Generator {
    /// The rtxen-capacity task set (Xi et al. 2011) with its share-pattern servers:
    /// `pattern` decreasing, even or increasing; total load α in (0, 1].
    Rtxen { pattern: String, load: f64 },
    /// A csa task set (Lee et al. 2012) with optimal integer interfaces: utilisation U_W in
    /// (0, 1]; periods `MIN..MAX` in ms.
    Csa { utilisation: f64, periods: String },
    /// Generated avionics workload `index` (1…7) of the csa-arinc suite, fixed-period
    /// interfaces.
    Arinc { index: usize },
    /// General purpose: `tasks` tasks of total utilisation `utilisation` over `domains`
    /// domains; periods `MIN..MAX` in ms, log-uniform or uniform; sampler uunifast,
    /// discard or randfixedsum; jobs take [etf·wcet, wcet]; every domain's server period.
    Uunifast {
        tasks: usize,
        utilisation: f64,
        domains: usize,
        periods: String,
        log_uniform: bool,
        sampler: String,
        etf: Option<f64>,
        server_period: String,
    },
}

impl Generator {
    /// Its name, as `rtvmm gen NAME` takes it (one of [`GENERATORS`]).
    pub fn name(&self) -> &'static str {
        match self {
            Generator::Rtxen { .. } => "rtxen",
            Generator::Csa { .. } => "csa",
            Generator::Arinc { .. } => "arinc",
            Generator::Uunifast { .. } => "uunifast",
        }
    }

    /// The generator `name` (one of [`GENERATORS`]) with its default options.
    pub fn with_defaults(name: &str) -> Option<Generator> {
        Some(match name {
            "rtxen" => Generator::Rtxen {
                pattern: defaults::RTXEN_PATTERN.to_string(),
                load: defaults::RTXEN_LOAD,
            },
            "csa" => Generator::Csa {
                utilisation: defaults::CSA_UTILISATION,
                periods: defaults::CSA_PERIODS.to_string(),
            },
            "arinc" => Generator::Arinc {
                index: defaults::ARINC_INDEX,
            },
            "uunifast" => Generator::Uunifast {
                tasks: defaults::UUNIFAST_TASKS,
                utilisation: defaults::UUNIFAST_UTILISATION,
                domains: defaults::UUNIFAST_DOMAINS,
                periods: defaults::UUNIFAST_PERIODS.to_string(),
                log_uniform: false,
                sampler: defaults::UUNIFAST_SAMPLER.to_string(),
                etf: None,
                server_period: defaults::UUNIFAST_SERVER_PERIOD.to_string(),
            },
            _ => return None,
        })
    }
}

/// Parses `550..650` (ms) or `550ms..650ms` into (min, max).
pub fn parse_period_range(text: &str) -> Result<(Nanos, Nanos), ExperimentError> {
    let bad = |problem: String| ExperimentError::option("--periods", problem);
    let (a, b) = text
        .split_once("..")
        .ok_or_else(|| bad(format!("'{text}' is not MIN..MAX (for example 550..650)")))?;
    let one = |s: &str| -> Result<Nanos, ExperimentError> {
        let s = s.trim().trim_start_matches('=');
        match s.parse::<u64>() {
            Ok(ms) => Ok(Nanos::from_ms(ms)),
            Err(_) => s.parse::<Nanos>().map_err(|e| bad(e.to_string())),
        }
    };
    let (min, max) = (one(a)?, one(b)?);
    if min.is_zero() || min > max {
        return Err(bad(format!("'{text}': need 0 < MIN ≤ MAX")));
    }
    Ok((min, max))
}

fn parse_fraction(option: &str, value: f64) -> Result<u32, ExperimentError> {
    if !(value > 0.0 && value <= 1.0) {
        return Err(ExperimentError::option(
            option,
            format!("{value} is outside (0, 1]"),
        ));
    }
    Ok((value * 1000.0).round().max(1.0) as u32)
}

fn common_parts(
    common: &GenCommon,
    default_policy: PolicyKind,
) -> Result<(Nanos, PolicyKind), ExperimentError> {
    let duration: Nanos = common
        .duration
        .parse()
        .map_err(|e| ExperimentError::option("--duration", format!("{e}")))?;
    if duration.is_zero() {
        return Err(ExperimentError::option(
            "--duration",
            "must be greater than 0 (a scenario runs for a positive time)",
        ));
    }
    let policy = match &common.policy {
        None => default_policy,
        Some(name) => PolicyKind::from_name(name).ok_or_else(|| {
            ExperimentError::option("--policy", format!("unknown policy '{name}'"))
        })?,
    };
    Ok((duration, policy))
}

/// `text` as `#` comment lines of at most about 88 columns.
fn comment_lines(out: &mut String, text: &str) {
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.len() + word.len() + 1 > 88 {
            let _ = writeln!(out, "# {line}");
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        let _ = writeln!(out, "# {line}");
    }
}

/// The scenario file of a generated system: a header (the command that remakes it and how
/// it was made), then the scenario as the scenario crate writes it.
fn scenario_file(
    system: &ServerSystem,
    command: &str,
    common: &GenCommon,
    default_policy: PolicyKind,
) -> Result<String, ExperimentError> {
    let (duration, policy) = common_parts(common, default_policy)?;
    let scenario = Scenario::from_servers(
        &format!("<generated {}>", system.name),
        system,
        duration,
        common.seed,
        QUANTUM,
        policy,
    )
    .map_err(|e| ExperimentError::option("gen", e.to_string()))?;
    let mut text = format!("# generated by `{command}`\n");
    comment_lines(&mut text, &system.description);
    text.push_str(&scenario.to_toml());
    Ok(text)
}

/// Generated scenarios run on a 1 ms quantum (csa and arinc interfaces are whole ms).
const QUANTUM: Nanos = Nanos::from_ms(1);

/// The scenario file of `generator`: a header (the command that remakes it and how it was
/// made), then the scenario as the scenario crate writes it.
pub fn generate(generator: &Generator, common: &GenCommon) -> Result<String, ExperimentError> {
    let seed = common.seed;
    let text = match generator {
        Generator::Rtxen { pattern, load } => {
            let pattern: SharePattern = pattern.parse()?;
            let permille = parse_fraction("--load", *load)?;
            let system = rtxen_system(pattern, permille, seed)?;
            let command = format!(
                "rtvmm gen rtxen --pattern {pattern} --load {} --seed {seed}",
                f64::from(permille) / 1000.0
            );
            scenario_file(&system, &command, common, PolicyKind::Deferrable)?
        }
        Generator::Csa {
            utilisation,
            periods,
        } => {
            let permille = parse_fraction("--utilisation", *utilisation)?;
            let (min, max) = parse_period_range(periods)?;
            let whole_ms = |t: Nanos| t.as_ns().checked_rem(1_000_000) == Some(0);
            if !whole_ms(min) || !whole_ms(max) {
                return Err(ExperimentError::option(
                    "--periods",
                    "csa periods are whole milliseconds",
                ));
            }
            let (min_ms, max_ms) = (min.as_ns() / 1_000_000, max.as_ns() / 1_000_000);
            let tasks = csa_taskset(&CsaParams::new(permille, (min_ms, max_ms)), seed)?;
            let interfaces = optimal_interfaces(&tasks, QUANTUM, SbfMode::Auto)?;
            let system = ServerSystem {
                name: format!("csa-{permille}-{min}-{max}"),
                description: format!(
                    "{} Each domain runs its optimal integer interface (Algorithm 1 of Lee et \
                     al. 2012, 1 ms quantum) as a server, priorities rate-monotonic by \
                     interface period. {}",
                    tasks.description,
                    interface_note(&tasks, &interfaces)
                ),
                domains: interface_servers(&tasks, &interfaces),
            };
            let command = format!(
                "rtvmm gen csa --utilisation {} --periods {min_ms}..{max_ms} --seed {seed}",
                f64::from(permille) / 1000.0
            );
            scenario_file(&system, &command, common, PolicyKind::Periodic)?
        }
        Generator::Arinc { index } => {
            let suite = arinc_suite(seed);
            let tasks = suite.get(index.wrapping_sub(1)).ok_or_else(|| {
                ExperimentError::option("--index", format!("{index} is not in 1..={}", suite.len()))
            })?;
            let interfaces = fixed_period_interfaces(tasks, QUANTUM, SbfMode::Auto)?;
            let system = ServerSystem {
                name: format!("arinc-generated-w{index}"),
                description: format!(
                    "GENERATED avionics-shaped workload (not the original Easwaran et al. \
                     2009 tables): {} Fixed-period interfaces: partition period, MinExec \
                     rounded up to the 1 ms quantum; priorities rate-monotonic by period. {}",
                    tasks.description,
                    interface_note(tasks, &interfaces)
                ),
                domains: interface_servers(tasks, &interfaces),
            };
            let command = format!("rtvmm gen arinc --index {index} --seed {seed}");
            scenario_file(&system, &command, common, PolicyKind::Periodic)?
        }
        Generator::Uunifast {
            tasks,
            utilisation,
            domains,
            periods,
            log_uniform,
            sampler,
            etf,
            server_period,
        } => {
            // Counts are refused before anything is allocated for them.
            for (flag, count) in [("--tasks", *tasks), ("--domains", *domains)] {
                if count > MAX_TASKS {
                    return Err(ExperimentError::option(
                        flag,
                        format!("{count} is above the most `gen uunifast` builds, {MAX_TASKS}"),
                    ));
                }
            }
            let (min, max) = parse_period_range(periods)?;
            let granularity = Nanos::from_ms(1);
            let distribution = if *log_uniform {
                PeriodDistribution::LogUniform {
                    min,
                    max,
                    granularity,
                }
            } else {
                PeriodDistribution::Uniform {
                    min,
                    max,
                    granularity,
                }
            };
            let sampler_kind = Sampler::from_name(sampler).ok_or_else(|| {
                ExperimentError::option(
                    "--sampler",
                    format!("'{sampler}' is not uunifast, discard or randfixedsum"),
                )
            })?;
            let server_period: Nanos = server_period
                .parse()
                .map_err(|e| ExperimentError::option("--server-period", format!("{e}")))?;
            let system = uunifast_system(&UunifastParams {
                tasks: *tasks,
                utilisation: *utilisation,
                domains: *domains,
                periods: distribution,
                sampler: sampler_kind,
                server_period,
                quantum: QUANTUM,
                etf: *etf,
                seed,
            })?;
            // The command that makes the same file.
            let mut command = format!(
                "rtvmm gen uunifast --tasks {tasks} --utilisation {utilisation} --domains \
                 {domains} --sampler {} --periods {min}..{max}",
                sampler_kind.name()
            );
            if *log_uniform {
                command.push_str(" --log-uniform");
            }
            if let Some(etf) = etf {
                let _ = write!(command, " --etf {etf}");
            }
            let _ = write!(command, " --server-period {server_period} --seed {seed}");
            scenario_file(&system, &command, common, PolicyKind::Deferrable)?
        }
    };
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Generates with `common` as given and parses the file.
    fn generated_with(generator: Generator, common: GenCommon) -> (String, Scenario) {
        let text = generate(&generator, &common).unwrap();
        let parsed =
            Scenario::from_toml(&text, "gen.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        (text, parsed)
    }

    fn seeded(seed: u64) -> GenCommon {
        GenCommon {
            seed,
            ..GenCommon::default()
        }
    }

    #[test]
    fn out_of_range_options_are_refused_with_their_flag() {
        let load = Generator::Rtxen {
            pattern: "even".into(),
            load: 1.5,
        };
        let error = generate(&load, &GenCommon::default()).unwrap_err();
        assert_eq!(error.to_string(), "--load: 1.5 is outside (0, 1]");
        let eighth = Generator::Arinc { index: 8 };
        assert!(generate(&eighth, &GenCommon::default()).is_err());
        assert!(Generator::with_defaults("nope").is_none());
    }

    #[test]
    fn generated_rtxen_scenario_is_what_the_experiments_run() {
        use crate::rtxen::rtxen_domains;
        use crate::system::{build_system, machine};
        let generator = Generator::Rtxen {
            pattern: "increasing".into(),
            load: 0.65,
        };
        let (text, parsed) = generated_with(generator.clone(), seeded(4));
        assert!(text.starts_with(
            "# generated by `rtvmm gen rtxen --pattern increasing --load 0.65 --seed 4`\n"
        ));
        let domains = rtxen_domains(SharePattern::Increasing, 650, 4).unwrap();
        for kind in [PolicyKind::Deferrable, PolicyKind::Credit] {
            let ours = build_system(&domains, kind, machine(QUANTUM, Default::default())).unwrap();
            let theirs = parsed.with_policy(kind).unwrap();
            assert_eq!(theirs.system.domains, ours.domains, "{kind}");
        }
        // The header's command makes the same file.
        assert_eq!(generated_with(generator, seeded(4)).0, text);
    }

    #[test]
    fn generated_csa_scenario_is_guaranteed_and_runs_without_a_miss() {
        use crate::interfaces::workload;
        use crate::system::simulate;
        use rtvmm_analysis::{
            analyze_system, DomainSpec, GuestScheduler, Interface, InterfaceChoice,
        };
        let generator = Generator::Csa {
            utilisation: 0.5,
            periods: "100..300".into(),
        };
        let common = GenCommon {
            seed: 3,
            duration: "6s".into(),
            policy: None,
        };
        let (_, parsed) = generated_with(generator, common);
        // The analysis, given exactly these interfaces (in ms), accepts the whole system ...
        let tasks = csa_taskset(&CsaParams::new(500, (100, 300)), 3).unwrap();
        let ms = |t: Nanos| t.as_ns() / 1_000_000;
        let specs: Vec<DomainSpec> = tasks
            .domains
            .iter()
            .zip(&parsed.system.domains)
            .map(|(d, s)| DomainSpec {
                name: d.name.clone(),
                workload: workload(d, QUANTUM).unwrap(),
                guest: GuestScheduler::Rm,
                interface: InterfaceChoice::Given(Interface::new(
                    ms(s.vcpu.period),
                    ms(s.vcpu.budget),
                )),
            })
            .collect();
        let analysis = analyze_system(&specs, SbfMode::Auto);
        assert!(analysis.schedulable, "{analysis:#?}");
        // ... so under the Periodic Server nothing may miss.
        assert_eq!(parsed.policy(), PolicyKind::Periodic);
        let results = simulate(&parsed.system, "csa", 3, parsed.duration).unwrap();
        assert!(results.jobs > 0);
        assert_eq!(results.missed, 0, "{}", results.summary());
    }

    #[test]
    fn generated_arinc_scenarios_parse_and_say_they_are_generated() {
        for index in 1..=7 {
            let (text, parsed) = generated_with(Generator::Arinc { index }, seeded(DEFAULT_SEED));
            assert!(text.contains("GENERATED"), "{text}");
            for d in &parsed.system.domains {
                assert!(d.vcpu.budget <= d.vcpu.period);
                assert_eq!(d.vcpu.budget.as_ns() % 1_000_000, 0, "whole quanta");
            }
        }
    }

    #[test]
    fn every_generator_has_defaults_that_generate() {
        for name in GENERATORS {
            let generator = Generator::with_defaults(name).unwrap();
            generated_with(generator, GenCommon::default());
        }
    }

    #[test]
    fn period_ranges_parse_in_ms_or_with_units() {
        assert_eq!(
            parse_period_range("550..650").unwrap(),
            (Nanos::from_ms(550), Nanos::from_ms(650))
        );
        assert_eq!(
            parse_period_range("500us..2ms").unwrap(),
            (Nanos::from_us(500), Nanos::from_ms(2))
        );
        assert!(parse_period_range("650..550").is_err());
        assert!(parse_period_range("650").is_err());
    }
}
