//! `rtvmm gen rtxen|csa|arinc|uunifast`: the flags, and where the file goes (stdout, or
//! `--out` and `--force`). The scenario text is `rtvmm_experiments::generate`'s, which the
//! Python package calls too.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use rtvmm_experiments::files;
use rtvmm_experiments::generate::{defaults, generate, GenCommon as Common, Generator};
use rtvmm_experiments::options::DEFAULT_SEED;
use rtvmm_experiments::ExperimentError;

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
    #[arg(long, default_value = defaults::DURATION)]
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
        #[arg(long, default_value = defaults::RTXEN_PATTERN)]
        pattern: String,
        /// Total load α in (0, 1].
        #[arg(long, default_value_t = defaults::RTXEN_LOAD)]
        load: f64,
        #[command(flatten)]
        common: GenCommon,
    },
    /// A csa task set (Lee et al. 2012) with optimal integer interfaces.
    Csa {
        /// Task utilisation U_W in (0, 1].
        #[arg(long, default_value_t = defaults::CSA_UTILISATION)]
        utilisation: f64,
        /// Period range in ms, MIN..MAX.
        #[arg(long, default_value = defaults::CSA_PERIODS)]
        periods: String,
        #[command(flatten)]
        common: GenCommon,
    },
    /// Generated avionics workload N (1…7) of the csa-arinc suite, fixed-period interfaces.
    Arinc {
        #[arg(long, default_value_t = defaults::ARINC_INDEX)]
        index: usize,
        #[command(flatten)]
        common: GenCommon,
    },
    /// General purpose: N tasks, total utilisation U, over D domains.
    Uunifast {
        /// Number of tasks, 1 to 1000000.
        #[arg(long, default_value_t = defaults::UUNIFAST_TASKS)]
        tasks: usize,
        #[arg(long, default_value_t = defaults::UUNIFAST_UTILISATION)]
        utilisation: f64,
        /// Number of domains, 1 to the number of tasks.
        #[arg(long, default_value_t = defaults::UUNIFAST_DOMAINS)]
        domains: usize,
        /// Period range in ms, MIN..MAX.
        #[arg(long, default_value = defaults::UUNIFAST_PERIODS)]
        periods: String,
        /// Log-uniform periods (Emberson et al. 2010) instead of uniform.
        #[arg(long)]
        log_uniform: bool,
        /// uunifast, discard (UUniFast-Discard, every u ≤ 1) or randfixedsum.
        #[arg(long, default_value = defaults::UUNIFAST_SAMPLER)]
        sampler: String,
        /// Execution-time factor in (0, 1]: jobs take [etf·wcet, wcet].
        #[arg(long)]
        etf: Option<f64>,
        /// Every domain's server period.
        #[arg(long, default_value = defaults::UUNIFAST_SERVER_PERIOD)]
        server_period: String,
        #[command(flatten)]
        common: GenCommon,
    },
}

impl GenKind {
    /// The generator with its options, and the options every generator shares.
    fn split(&self) -> (Generator, &GenCommon) {
        match self.clone() {
            GenKind::Rtxen { pattern, load, .. } => {
                (Generator::Rtxen { pattern, load }, self.common())
            }
            GenKind::Csa {
                utilisation,
                periods,
                ..
            } => (
                Generator::Csa {
                    utilisation,
                    periods,
                },
                self.common(),
            ),
            GenKind::Arinc { index, .. } => (Generator::Arinc { index }, self.common()),
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
            } => (
                Generator::Uunifast {
                    tasks,
                    utilisation,
                    domains,
                    periods,
                    log_uniform,
                    sampler,
                    etf,
                    server_period,
                },
                self.common(),
            ),
        }
    }

    fn common(&self) -> &GenCommon {
        match self {
            GenKind::Rtxen { common, .. }
            | GenKind::Csa { common, .. }
            | GenKind::Arinc { common, .. }
            | GenKind::Uunifast { common, .. } => common,
        }
    }
}

/// `rtvmm gen ...`: the scenario TOML (or, with `--out`, a line saying where it went).
/// An unusable `--out` is refused before anything is generated.
pub fn run_gen(args: &GenArgs) -> Result<String, ExperimentError> {
    let (generator, common) = args.kind.split();
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
    let shared = Common {
        seed: common.seed,
        duration: common.duration.clone(),
        policy: common.policy.clone(),
    };
    let text = generate(&generator, &shared)?;
    match &common.out {
        Some(path) => {
            files::write_file(path, text.as_bytes())?;
            Ok(format!("wrote {}\n", path.display()))
        }
        None => Ok(text),
    }
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

    fn parsed(args: &[&str]) -> GenArgs {
        TestCli::try_parse_from(std::iter::once("rtvmm").chain(args.iter().copied()))
            .unwrap()
            .args
    }

    #[test]
    fn gen_args_parse_and_generate() {
        let text = run_gen(&parsed(&[
            "rtxen",
            "--pattern",
            "even",
            "--load",
            "0.7",
            "--seed",
            "5",
        ]))
        .unwrap();
        assert!(text.contains("[[domain]]"));
        assert!(run_gen(&parsed(&["rtxen", "--load", "1.5"])).is_err());
    }

    /// The flags' defaults are the library's: `rtvmm gen NAME` and
    /// `Generator::with_defaults(NAME)` make the same file.
    #[test]
    fn flag_defaults_are_the_generators_defaults() {
        for name in rtvmm_experiments::generate::GENERATORS {
            let args = parsed(&[name]);
            let (generator, common) = args.kind.split();
            assert_eq!(Some(generator), Generator::with_defaults(name), "{name}");
            assert_eq!(common.seed, Common::default().seed);
            assert_eq!(common.duration, Common::default().duration);
        }
    }
}
