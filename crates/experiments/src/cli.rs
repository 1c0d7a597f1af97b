//! The command-line surface of this crate, for the `rtvmm` binary: clap argument structs
//! and one entry point per command. Each entry point returns the text to print; errors
//! are [`ExperimentError`]s for the binary to turn into messages and exit codes.
//!
//! | command | args | entry point |
//! |---|---|---|
//! | `rtvmm experiment NAME\|list\|all ...` | [`ExperimentArgs`] | [`run_experiment_command`] |
//! | `rtvmm gen rtxen\|csa\|arinc\|uunifast ...` | [`GenArgs`] | [`run_gen`] |
//! | `rtvmm compare A.json B.json` | [`CompareArgs`] | [`run_compare`] |

use std::path::PathBuf;

use clap::{Args, Subcommand};
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_gen::periods::PeriodDistribution;
use rtvmm_gen::rtxen::SharePattern;

use crate::error::ExperimentError;
use crate::experiments::{self, REGISTRY};
use crate::files;
use crate::gen::{
    arinc_scenario, csa_scenario, rtxen_scenario, scenario_toml, uunifast_scenario, Sampler,
    UunifastParams,
};
use crate::options::{parse_overheads, parse_policies, Cancel, Options, RunHook, DEFAULT_SEED};
use rtvmm_gen::csa::CsaParams;

/// `rtvmm experiment NAME|list|all`.
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct ExperimentArgs {
    /// The experiment to run, `list` to describe them all, or `all` to run every
    /// implemented one (each into OUT/NAME).
    pub name: String,
    /// Output directory [default: results/NAME].
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Scaled-down durations and sweeps that finish in seconds.
    #[arg(long)]
    pub quick: bool,
    /// Run seed (task sets and job draws derive from it).
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Simulated length of each run, with a unit (e.g. 30s, 500ms).
    #[arg(long)]
    pub duration: Option<String>,
    /// Comma-separated policies to run instead of the experiment's own list.
    #[arg(long)]
    pub policies: Option<String>,
    /// Scheduler overhead costs: a preset (none, xen, host) or DO_SCHEDULE,SWITCH with
    /// units (e.g. 150ns,1.5us).
    #[arg(long)]
    pub overhead: Option<String>,
    /// rtxen-*: start every domain's VCPU and tasks at time 0 (the synchronous worst case)
    /// instead of at boot offsets drawn from the seed.
    #[arg(long)]
    pub in_phase: bool,
    /// csa-arinc: run this workload file (repeatable) instead of the generated suite — the
    /// route for the published avionics tables.
    #[arg(long = "workload", value_name = "FILE")]
    pub workloads: Vec<PathBuf>,
    /// Worker threads (0 = one per core).
    #[arg(long, short = 'j', default_value_t = 0)]
    pub jobs: usize,
    /// Do not draw the progress bar.
    #[arg(long)]
    pub no_progress: bool,
}

impl ExperimentArgs {
    /// The options for experiment `name`.
    pub fn options(&self, name: &str) -> Result<Options, ExperimentError> {
        let out = match (&self.out, self.name.as_str()) {
            (Some(dir), "all") => dir.join(name),
            (Some(dir), _) => dir.clone(),
            (None, _) => PathBuf::from("results").join(name),
        };
        let mut options = Options::new(out);
        options.quick = self.quick;
        options.seed = self.seed;
        options.in_phase = self.in_phase;
        options.jobs = self.jobs;
        options.workloads = self.workloads.clone();
        options.progress = !self.no_progress;
        if let Some(d) = &self.duration {
            let d: Nanos = d
                .parse()
                .map_err(|e| ExperimentError::option("--duration", format!("{e}")))?;
            if d.is_zero() {
                return Err(ExperimentError::option("--duration", "must be positive"));
            }
            options.duration = Some(d);
        }
        if let Some(p) = &self.policies {
            options.policies = Some(parse_policies(p)?);
        }
        if let Some(o) = &self.overhead {
            options.overheads = Some(parse_overheads(o)?);
        }
        Ok(options)
    }
}

/// What a command produced: text for stdout, and whether it was cut short by its cancel
/// flag (the binary exits with 128 + the signal's number then).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandOutput {
    pub text: String,
    pub interrupted: bool,
}

/// `rtvmm experiment NAME|list|all`. `cancel` stops starting runs (the binary sets it on
/// SIGINT and SIGTERM); `on_run_done` is called after each run. Every output directory
/// is created and proven writable, and the font found, before the first run.
pub fn run_experiment_command(
    args: &ExperimentArgs,
    cancel: &Cancel,
    on_run_done: Option<RunHook>,
) -> Result<CommandOutput, ExperimentError> {
    let options = |name: &str| -> Result<Options, ExperimentError> {
        let mut o = args.options(name)?;
        o.cancel = cancel.clone();
        o.on_run_done = on_run_done.clone();
        Ok(o)
    };
    match args.name.as_str() {
        "list" => Ok(CommandOutput {
            text: experiments::list(),
            interrupted: false,
        }),
        "all" => {
            let mut text = String::new();
            let mut interrupted = false;
            let all: Vec<_> = REGISTRY.iter().filter(|e| e.run.is_some()).collect();
            crate::plot::ensure_font()?;
            for e in &all {
                files::prepare_dir(&options(e.name)?.out)?;
            }
            for e in all {
                if cancel.is_cancelled() {
                    interrupted = true;
                    break;
                }
                let report = crate::run_experiment(e.name, &options(e.name)?)?;
                interrupted |= report.interrupted();
                text.push_str(&report.summary());
                text.push('\n');
            }
            Ok(CommandOutput { text, interrupted })
        }
        name => {
            let report = crate::run_experiment(name, &options(name)?)?;
            Ok(CommandOutput {
                text: report.summary(),
                interrupted: report.interrupted(),
            })
        }
    }
}

/// `rtvmm compare A.json B.json`.
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct CompareArgs {
    /// The first results file (`rtvmm sim --json`).
    pub a: PathBuf,
    /// The second results file.
    pub b: PathBuf,
}

/// `rtvmm compare A.json B.json`: the side-by-side table.
pub fn run_compare(args: &CompareArgs) -> Result<String, ExperimentError> {
    crate::compare::compare_files(&args.a, &args.b)
}

/// Options every `gen` command shares.
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct GenCommon {
    /// Generator seed.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Write the scenario here instead of to stdout.
    #[arg(long)]
    pub out: Option<PathBuf>,
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
        #[arg(long, default_value_t = 10)]
        tasks: usize,
        #[arg(long, default_value_t = 0.7)]
        utilisation: f64,
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
    }
    match &args.kind {
        GenKind::Rtxen {
            pattern,
            load,
            common,
        } => {
            let pattern: SharePattern = pattern.parse()?;
            let load = parse_fraction("--load", *load)?;
            let (duration, policy) = common_parts(common, PolicyKind::Deferrable)?;
            let s = rtxen_scenario(pattern, load, common.seed, duration, policy)?;
            deliver(scenario_toml(&s), common)
        }
        GenKind::Csa {
            utilisation,
            periods,
            common,
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
            let params =
                CsaParams::new(permille, (min.as_ns() / 1_000_000, max.as_ns() / 1_000_000));
            let (duration, policy) = common_parts(common, PolicyKind::Periodic)?;
            let s = csa_scenario(&params, common.seed, duration, policy)?;
            deliver(scenario_toml(&s), common)
        }
        GenKind::Arinc { index, common } => {
            let (duration, policy) = common_parts(common, PolicyKind::Periodic)?;
            let s = arinc_scenario(*index, common.seed, duration, policy)?;
            deliver(scenario_toml(&s), common)
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
            common,
        } => {
            let (min, max) = parse_period_range(periods)?;
            let granularity = Nanos::from_ms(1);
            let periods = if *log_uniform {
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
            let sampler = Sampler::from_name(sampler).ok_or_else(|| {
                ExperimentError::option(
                    "--sampler",
                    format!("'{sampler}' is not uunifast, discard or randfixedsum"),
                )
            })?;
            let server_period: Nanos = server_period
                .parse()
                .map_err(|e| ExperimentError::option("--server-period", format!("{e}")))?;
            let (duration, policy) = common_parts(common, PolicyKind::Deferrable)?;
            let s = uunifast_scenario(&UunifastParams {
                tasks: *tasks,
                utilisation: *utilisation,
                domains: *domains,
                periods,
                sampler,
                server_period,
                quantum: Nanos::from_ms(1),
                etf: *etf,
                seed: common.seed,
                duration,
                policy,
            })?;
            deliver(scenario_toml(&s), common)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser, Debug)]
    struct TestCli {
        #[command(subcommand)]
        command: TestCommand,
    }

    #[derive(Subcommand, Debug)]
    enum TestCommand {
        Experiment(ExperimentArgs),
        Gen(GenArgs),
        Compare(CompareArgs),
    }

    #[test]
    fn experiment_args_parse_into_options() {
        let cli = TestCli::try_parse_from([
            "rtvmm",
            "experiment",
            "rtxen-capacity",
            "--quick",
            "--seed",
            "9",
            "--duration",
            "2s",
            "--policies",
            "ds,credit",
            "--overhead",
            "host",
            "--in-phase",
            "-j",
            "1",
        ])
        .unwrap();
        let TestCommand::Experiment(args) = cli.command else {
            panic!("not experiment")
        };
        let o = args.options("rtxen-capacity").unwrap();
        assert!(o.quick);
        assert_eq!(o.seed, 9);
        assert_eq!(o.duration, Some(Nanos::from_secs(2)));
        assert_eq!(
            o.policies,
            Some(vec![PolicyKind::Deferrable, PolicyKind::Credit])
        );
        assert_eq!(o.out, PathBuf::from("results/rtxen-capacity"));
        assert_eq!(o.jobs, 1);
        assert!(o.in_phase);
    }

    #[test]
    fn gen_and_compare_args_parse() {
        let cli = TestCli::try_parse_from([
            "rtvmm",
            "gen",
            "rtxen",
            "--pattern",
            "even",
            "--load",
            "0.7",
            "--seed",
            "5",
        ])
        .unwrap();
        let TestCommand::Gen(args) = cli.command else {
            panic!()
        };
        let text = run_gen(&args).unwrap();
        assert!(text.contains("[[domain]]"));
        assert!(TestCli::try_parse_from(["rtvmm", "compare", "a.json", "b.json"]).is_ok());
        let bad = TestCli::try_parse_from(["rtvmm", "gen", "rtxen", "--load", "1.5"]).unwrap();
        let TestCommand::Gen(bad) = bad.command else {
            panic!()
        };
        assert!(run_gen(&bad).is_err());
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
