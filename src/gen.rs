//! `rtvmm gen rtxen|csa|arinc|uunifast`: the flags, and where the file goes (stdout, or
//! `--out` and `--force`; with `--count K`, K files in the `--out` directory, or one shard
//! of them with `--shard I/N`); `rtvmm gen merge OUT DIR…` merges such shards. The
//! scenario text is `rtvmm_experiments::generate`'s, which the Python package calls too;
//! the files of a count, their shards and the merge are `rtvmm_experiments::systems`'.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use rtvmm_experiments::files;
use rtvmm_experiments::generate::{defaults, generate, GenCommon as Common, Generator};
use rtvmm_experiments::options::DEFAULT_SEED;
use rtvmm_experiments::shard::Shard;
use rtvmm_experiments::systems;
use rtvmm_experiments::ExperimentError;

/// Options every `gen` command shares.
#[derive(Args, Clone, Debug, PartialEq, Eq)]
pub struct GenCommon {
    /// Generator seed.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    pub seed: u64,
    /// Write the scenario here instead of to stdout (an existing file is refused unless
    /// --force is given); with --count, the directory of the files.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace the --out file if it exists (without it, an existing file is refused).
    #[arg(long)]
    pub force: bool,
    /// Write K systems into the --out directory, the i-th (from 0) drawn with seed
    /// --seed + i and named NAME-i.toml (i zero-padded): each is the file `rtvmm gen …
    /// --seed` that seed writes.
    #[arg(long, value_name = "K", requires = "out")]
    pub count: Option<usize>,
    /// With --count: write only shard I of N (1 ≤ I ≤ N), a fixed N-th of the K systems,
    /// with a manifest; `rtvmm gen merge OUT DIR…` (or copying every shard's *.toml files
    /// into one directory) makes the unsharded directory.
    #[arg(long, value_name = "I/N", requires = "count")]
    pub shard: Option<String>,
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
    /// Merge the shards of `gen … --count K --shard I/N` (every shard once, of one run)
    /// into OUT: the files the unsharded run writes
    Merge {
        /// The output directory.
        out: PathBuf,
        /// Every shard's directory.
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// Replace files of the same names in OUT (without it, they are refused).
        #[arg(long)]
        force: bool,
    },
}

impl GenKind {
    /// The generator with its options, and the options every generator shares (`None`
    /// for `merge`).
    fn split(&self) -> Option<(Generator, &GenCommon)> {
        let common = self.common()?;
        Some(match self.clone() {
            GenKind::Rtxen { pattern, load, .. } => (Generator::Rtxen { pattern, load }, common),
            GenKind::Csa {
                utilisation,
                periods,
                ..
            } => (
                Generator::Csa {
                    utilisation,
                    periods,
                },
                common,
            ),
            GenKind::Arinc { index, .. } => (Generator::Arinc { index }, common),
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
                common,
            ),
            GenKind::Merge { .. } => return None,
        })
    }

    fn common(&self) -> Option<&GenCommon> {
        match self {
            GenKind::Rtxen { common, .. }
            | GenKind::Csa { common, .. }
            | GenKind::Arinc { common, .. }
            | GenKind::Uunifast { common, .. } => Some(common),
            GenKind::Merge { .. } => None,
        }
    }
}

/// `rtvmm gen ...`: the scenario TOML (or, with `--out`, a line saying where it went).
/// An unusable `--out` is refused before anything is generated.
pub fn run_gen(args: &GenArgs) -> Result<String, ExperimentError> {
    let Some((generator, common)) = args.kind.split() else {
        let GenKind::Merge { out, dirs, force } = &args.kind else {
            unreachable!("only merge has no generator")
        };
        let written = systems::merge_systems(out, dirs, *force)?;
        return Ok(format!(
            "merged {} shards: wrote {written} systems to {}\n",
            dirs.len(),
            out.display()
        ));
    };
    let shared = Common {
        seed: common.seed,
        duration: common.duration.clone(),
        policy: common.policy.clone(),
    };
    if let (Some(count), Some(out)) = (common.count, &common.out) {
        return run_count(&generator, &shared, count, common, out);
    }
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
    let text = generate(&generator, &shared)?;
    match &common.out {
        Some(path) => {
            files::write_file(path, text.as_bytes())?;
            Ok(format!("wrote {}\n", path.display()))
        }
        None => Ok(text),
    }
}

/// `gen … --count K --out DIR [--shard I/N]`: the K systems (or the shard's) as files of
/// DIR.
fn run_count(
    generator: &Generator,
    shared: &Common,
    count: usize,
    common: &GenCommon,
    out: &std::path::Path,
) -> Result<String, ExperimentError> {
    let shard: Option<Shard> = common.shard.as_deref().map(str::parse).transpose()?;
    // An unusable --out, or a file there, is refused before anything is generated.
    let names = systems::system_names(generator, shared, count, shard)?;
    systems::prepare_out(out, names.iter().map(String::as_str), common.force)?;
    let files = systems::system_files(generator, shared, count, shard)?;
    let manifest = shard.map(|s| systems::shard_manifest(generator, shared, count, s, &files));
    systems::write_systems(out, &files, common.force, manifest.as_ref())?;
    Ok(match shard {
        None => format!("wrote {count} systems to {}\n", out.display()),
        Some(shard) => format!(
            "shard {shard}: wrote {} of the {count} systems to {}; merge every shard with \
             `rtvmm gen merge OUT DIR…`\n",
            files.len(),
            out.display()
        ),
    })
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
            let (generator, common) = args.kind.split().unwrap();
            assert_eq!(Some(generator), Generator::with_defaults(name), "{name}");
            assert_eq!(common.seed, Common::default().seed);
            assert_eq!(common.duration, Common::default().duration);
        }
    }
}
