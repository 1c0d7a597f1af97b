//! `rtvmm gen rtxen|csa|arinc|uunifast`: the flags; the task set and its servers from the
//! generators (`rtvmm_gen`; csa and arinc domains served by their interfaces, from
//! `rtvmm_experiments::interfaces`); the file written by the scenario crate
//! ([`Scenario::from_servers`], [`Scenario::to_toml`]) under a header that says how it
//! was made and the command that makes it again.

use std::fmt::Write as _;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use rtvmm_analysis::SbfMode;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_experiments::files;
use rtvmm_experiments::interfaces::{
    fixed_period_interfaces, interface_note, interface_servers, optimal_interfaces,
};
use rtvmm_experiments::options::DEFAULT_SEED;
use rtvmm_experiments::ExperimentError;
use rtvmm_gen::arinc::arinc_suite;
use rtvmm_gen::csa::{csa_taskset, CsaParams};
use rtvmm_gen::periods::PeriodDistribution;
use rtvmm_gen::rtxen::{rtxen_system, SharePattern};
use rtvmm_gen::uunifast::{uunifast_system, Sampler, UunifastParams, MAX_TASKS};
use rtvmm_gen::ServerSystem;
use rtvmm_scenario::Scenario;

/// Options every `gen` command shares.
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct GenCommon {
    /// Generator seed.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Write the scenario here instead of to stdout (an existing file is refused unless
    /// --force is given).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace the --out file if it exists (without it, an existing file is refused).
    #[arg(long)]
    pub force: bool,
    /// The scenario's run length.
    #[arg(long, default_value = "10s")]
    pub duration: String,
    /// The scenario's policy [default: deferrable for rtxen and uunifast, periodic for
    /// csa and arinc]; any policy can be chosen at run time with --policy.
    #[arg(long)]
    pub policy: Option<String>,
}

/// `rtvmm gen ...`.
#[derive(Args, Clone, Debug, PartialEq)]
pub struct GenArgs {
    #[command(subcommand)]
    pub kind: GenKind,
}

/// The generators.
#[derive(Subcommand, Clone, Debug, PartialEq)]
pub enum GenKind {
    /// The rtxen-capacity task set (Xi et al. 2011) with its share-pattern servers.
    Rtxen {
        /// Share pattern: decreasing, even or increasing.
        #[arg(long, default_value = "even")]
        pattern: String,
        /// Total load α in (0, 1].
        #[arg(long, default_value_t = 0.7)]
        load: f64,
        #[command(flatten)]
        common: GenCommon,
    },
    /// A csa task set (Lee et al. 2012) with optimal integer interfaces.
    Csa {
        /// Task utilisation U_W in (0, 1].
        #[arg(long, default_value_t = 0.8)]
        utilisation: f64,
        /// Period range in ms, MIN..MAX.
        #[arg(long, default_value = "550..650")]
        periods: String,
        #[command(flatten)]
        common: GenCommon,
    },
    /// Generated avionics workload N (1…7) of the csa-arinc suite, fixed-period interfaces.
    Arinc {
        #[arg(long, default_value_t = 1)]
        index: usize,
        #[command(flatten)]
        common: GenCommon,
    },
    /// General purpose: N tasks, total utilisation U, over D domains.
    Uunifast {
        /// Number of tasks, 1 to 1000000.
        #[arg(long, default_value_t = 10)]
        tasks: usize,
        #[arg(long, default_value_t = 0.7)]
        utilisation: f64,
        /// Number of domains, 1 to the number of tasks.
        #[arg(long, default_value_t = 1)]
        domains: usize,
        /// Period range in ms, MIN..MAX.
        #[arg(long, default_value = "10..100")]
        periods: String,
        /// Log-uniform periods (Emberson et al. 2010) instead of uniform.
        #[arg(long)]
        log_uniform: bool,
        /// uunifast, discard (UUniFast-Discard, every u ≤ 1) or randfixedsum.
        #[arg(long, default_value = "discard")]
        sampler: String,
        /// Execution-time factor in (0, 1]: jobs take [etf·wcet, wcet].
        #[arg(long)]
        etf: Option<f64>,
        /// Every domain's server period.
        #[arg(long, default_value = "10ms")]
        server_period: String,
        #[command(flatten)]
        common: GenCommon,
    },
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

fn deliver(text: String, common: &GenCommon) -> Result<String, ExperimentError> {
    match &common.out {
        Some(path) => {
            files::write_file(path, text.as_bytes())?;
            Ok(format!("wrote {}\n", path.display()))
        }
        None => Ok(text),
    }
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

/// `rtvmm gen ...`: the scenario TOML (or, with `--out`, a line saying where it went).
/// An unusable `--out` is refused before anything is generated.
pub fn run_gen(args: &GenArgs) -> Result<String, ExperimentError> {
    let common = match &args.kind {
        GenKind::Rtxen { common, .. }
        | GenKind::Csa { common, .. }
        | GenKind::Arinc { common, .. }
        | GenKind::Uunifast { common, .. } => common,
    };
    if let Some(out) = &common.out {
        files::check_outputs(&[], &[out])?;
        // A file there may be someone's edited scenario: replaced only when asked. (A
        // device or a pipe, `/dev/stdout`, is written to, not replaced.)
        if !common.force && std::fs::metadata(out).is_ok_and(|m| m.is_file()) {
            return Err(ExperimentError::option(
                "--out",
                format!(
                    "{} already exists; add --force to replace it",
                    out.display()
                ),
            ));
        }
    }
    let seed = common.seed;
    let text = match &args.kind {
        GenKind::Rtxen { pattern, load, .. } => {
            let pattern: SharePattern = pattern.parse()?;
            let permille = parse_fraction("--load", *load)?;
            let system = rtxen_system(pattern, permille, seed)?;
            let command = format!(
                "rtvmm gen rtxen --pattern {pattern} --load {} --seed {seed}",
                f64::from(permille) / 1000.0
            );
            scenario_file(&system, &command, common, PolicyKind::Deferrable)?
        }
        GenKind::Csa {
            utilisation,
            periods,
            ..
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
        GenKind::Arinc { index, .. } => {
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
        GenKind::Uunifast {
            tasks,
            utilisation,
            domains,
            periods,
            log_uniform,
            sampler,
            etf,
            server_period,
            ..
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
    deliver(text, common)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct TestCli {
        #[command(flatten)]
        args: GenArgs,
    }

    #[test]
    fn gen_args_parse_and_generate() {
        let cli = TestCli::try_parse_from([
            "rtvmm",
            "rtxen",
            "--pattern",
            "even",
            "--load",
            "0.7",
            "--seed",
            "5",
        ])
        .unwrap();
        let text = run_gen(&cli.args).unwrap();
        assert!(text.contains("[[domain]]"));
        let bad = TestCli::try_parse_from(["rtvmm", "rtxen", "--load", "1.5"]).unwrap();
        assert!(run_gen(&bad.args).is_err());
    }

    /// Runs `rtvmm gen ARGS` and parses the file it writes.
    fn generated(args: &[&str]) -> (String, Scenario) {
        let cli =
            TestCli::try_parse_from(std::iter::once("rtvmm").chain(args.iter().copied())).unwrap();
        let text = run_gen(&cli.args).unwrap();
        let parsed =
            Scenario::from_toml(&text, "gen.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        (text, parsed)
    }

    #[test]
    fn generated_rtxen_scenario_is_what_the_experiments_run() {
        use rtvmm_experiments::rtxen::rtxen_domains;
        use rtvmm_experiments::system::{build_system, machine};
        let args = [
            "rtxen",
            "--pattern",
            "increasing",
            "--load",
            "0.65",
            "--seed",
            "4",
        ];
        let (text, parsed) = generated(&args);
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
        let again = generated(&args);
        assert_eq!(again.0, text);
    }

    #[test]
    fn generated_csa_scenario_is_guaranteed_and_runs_without_a_miss() {
        use rtvmm_analysis::{
            analyze_system, DomainSpec, GuestScheduler, Interface, InterfaceChoice,
        };
        use rtvmm_experiments::interfaces::workload;
        use rtvmm_experiments::system::simulate;
        let (_, parsed) = generated(&[
            "csa",
            "--utilisation",
            "0.5",
            "--periods",
            "100..300",
            "--seed",
            "3",
            "--duration",
            "6s",
        ]);
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
            let (text, parsed) = generated(&["arinc", "--index", &index.to_string()]);
            assert!(text.contains("GENERATED"), "{text}");
            for d in &parsed.system.domains {
                assert!(d.vcpu.budget <= d.vcpu.period);
                assert_eq!(d.vcpu.budget.as_ns() % 1_000_000, 0, "whole quanta");
            }
        }
        let eighth = TestCli::try_parse_from(["rtvmm", "arinc", "--index", "8"]).unwrap();
        assert!(run_gen(&eighth.args).is_err());
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
