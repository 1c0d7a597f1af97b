//! What every experiment accepts: where to write, how big, which seed, which policies.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use rtvmm_core::machine::Overheads;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;

// Defined below the driver, which hands it to a real-time run; named here with the
// options that carry it.
pub use crate::cancel::Cancel;
use crate::driver::Driver;
use crate::error::ExperimentError;
use crate::shard::{ResultOptions, Runs};

/// The seed used when none is given.
pub const DEFAULT_SEED: u64 = 1;

/// Options common to every experiment. `None` fields mean "the experiment's default"
/// (which depends on `quick`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// Directory that receives the CSVs, figures, tables and `report.md`.
    pub out: PathBuf,
    /// The scaled-down version that finishes in seconds (tests, CI).
    pub quick: bool,
    /// The run seed; task sets and job draws derive from it.
    pub seed: u64,
    /// `--seeds N`: how many task-set draws an experiment that generates task sets runs
    /// (see [`crate::draws`]); `None` is the experiment's default ([`Options::draws`]).
    pub seeds: Option<usize>,
    /// Simulated length of each run, overriding the experiment's.
    pub duration: Option<Nanos>,
    /// Policies to run, overriding the experiment's list.
    pub policies: Option<Vec<PolicyKind>>,
    /// Scheduler overhead costs, for the experiments that model them (`rtxen-quantum`,
    /// `rtxen-overhead`), overriding their defaults.
    pub overheads: Option<Overheads>,
    /// rtxen-*: start every domain's VCPU (and its tasks) at time 0, the synchronous worst
    /// case, instead of at boot offsets drawn from the seed (`crate::rtxen::Phasing`).
    pub in_phase: bool,
    /// Workload files to run instead of generated ones (`csa-arinc --workload FILE`).
    pub workloads: Vec<PathBuf>,
    /// Worker threads for a sweep; 0 = one per core. Real-time runs ([`Driver::Host`])
    /// run one at a time whatever this says.
    pub jobs: usize,
    /// Where the runs happen: the simulator, or real time on this machine (`--host`).
    pub driver: Driver,
    /// Behave as if cancelled once this many runs were started (for tests of the
    /// interruption path; `None` in normal use).
    pub stop_after_runs: Option<usize>,
    /// Set by the caller (the binary does on SIGINT and SIGTERM) to stop starting runs:
    /// runs in progress stop (simulated ones within moments; see `crate::cancel`) and are dropped, and the experiment writes what is done, marked partial.
    pub cancel: Cancel,
    /// Told as each sweep starts, as each of its runs finishes, and as it ends (for a
    /// progress display: the binary draws one; the library draws nothing).
    pub progress: Option<Progress>,
    /// Which runs happen here: all of them, one shard's (`--shard I/N`), or none, their
    /// results read back from shards (`merge`); see [`crate::shard`].
    pub runs: Runs,
}

/// What a sweep reports as it goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SweepEvent<'a> {
    /// A sweep of `total` runs begins (`label` names it: the experiment, or its part).
    Started { label: &'a str, total: usize },
    /// A run of the sweep finished: `done` of the sweep's `total`; `finished` counts every
    /// run of the experiment so far (all its sweeps).
    RunDone {
        label: &'a str,
        done: usize,
        total: usize,
        finished: usize,
    },
    /// The sweep is over.
    Ended { label: &'a str },
}

/// A progress callback, called from the sweep's threads.
#[derive(Clone)]
pub struct Progress(pub Arc<dyn Fn(SweepEvent<'_>) + Send + Sync>);

impl fmt::Debug for Progress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Progress")
    }
}

impl PartialEq for Progress {
    fn eq(&self, other: &Progress) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Progress {}

impl Options {
    /// Defaults: full scale, seed [`DEFAULT_SEED`], all cores, no progress callback.
    pub fn new(out: impl Into<PathBuf>) -> Options {
        Options {
            out: out.into(),
            quick: false,
            seed: DEFAULT_SEED,
            seeds: None,
            duration: None,
            policies: None,
            overheads: None,
            in_phase: false,
            workloads: Vec::new(),
            jobs: 0,
            driver: Driver::Simulate,
            stop_after_runs: None,
            cancel: Cancel::new(),
            progress: None,
            runs: Runs::All,
        }
    }

    /// The quick version: what the tests use.
    pub fn quick(out: impl Into<PathBuf>) -> Options {
        Options {
            quick: true,
            ..Options::new(out)
        }
    }

    /// `full` normally, `quick` with `--quick`; `--duration` overrides both.
    pub fn duration_or(&self, full: Nanos, quick: Nanos) -> Nanos {
        self.duration
            .unwrap_or(if self.quick { quick } else { full })
    }

    /// How many task-set draws to run for an experiment whose full run makes
    /// `full_default` of them (`None`: it draws no task sets): `--seeds N`, or one with
    /// `--quick` (a test's scale), or the default. `--seeds 0`, and more than one draw of
    /// an experiment that draws no task sets, are refused.
    pub fn draws(
        &self,
        experiment: &str,
        full_default: Option<usize>,
    ) -> Result<usize, ExperimentError> {
        match (self.seeds, full_default) {
            (Some(0), _) => Err(ExperimentError::option(
                "--seeds",
                "must be at least 1 (one task-set draw per seed)",
            )),
            (Some(n), None) if n > 1 => Err(ExperimentError::option(
                "--seeds",
                format!(
                    "{experiment} draws no task sets: its runs are fixed by its procedure \
                     (drop --seeds, or give --seeds 1)"
                ),
            )),
            (Some(n), _) => Ok(n),
            (None, _) => Ok(self.default_draws(full_default)),
        }
    }

    /// The draws without `--seeds`: `full_default` at full scale, one with `--quick` or
    /// for an experiment that draws no task sets.
    /// Real-time runs (`--host`) take their duration of real time each: one draw unless
    /// `--seeds` asks for more.
    pub fn default_draws(&self, full_default: Option<usize>) -> usize {
        match full_default {
            Some(n) if !self.quick && !self.driver.is_host() => n,
            _ => 1,
        }
    }

    /// Every option that changes the results, for a shard's manifest.
    pub fn result_options(&self) -> ResultOptions {
        ResultOptions {
            quick: self.quick,
            seed: self.seed,
            seeds: self.seeds,
            duration: self.duration.map(|d| format!("{}ns", d.as_ns())),
            policies: self
                .policies
                .as_ref()
                .map(|p| p.iter().map(|k| k.name()).collect::<Vec<_>>().join(",")),
            overhead: self
                .overheads
                .map(|o| format!("{}ns,{}ns", o.do_schedule.as_ns(), o.context_switch.as_ns())),
            in_phase: self.in_phase,
            workloads: self.workloads.clone(),
        }
    }

    /// These options with the result options of a shard's manifest (the inverse of
    /// [`Options::result_options`]).
    pub fn with_result_options(mut self, from: &ResultOptions) -> Result<Options, ExperimentError> {
        self.quick = from.quick;
        self.seed = from.seed;
        self.seeds = from.seeds;
        self.duration = match &from.duration {
            Some(d) => Some(
                d.parse()
                    .map_err(|e| ExperimentError::option("--duration", format!("{e}")))?,
            ),
            None => None,
        };
        self.policies = from.policies.as_deref().map(parse_policies).transpose()?;
        self.overheads = from.overhead.as_deref().map(parse_overheads).transpose()?;
        self.in_phase = from.in_phase;
        self.workloads = from.workloads.clone();
        Ok(self)
    }

    /// The experiment's policies unless `--policies` chose others.
    pub fn policies_or(&self, default: &[PolicyKind]) -> Vec<PolicyKind> {
        self.policies.clone().unwrap_or_else(|| default.to_vec())
    }
}

/// Parses `--duration`: a time with a unit, greater than 0.
pub fn parse_duration(text: &str) -> Result<Nanos, ExperimentError> {
    let d: Nanos = text
        .parse()
        .map_err(|e| ExperimentError::option("--duration", format!("{e}")))?;
    if d.is_zero() {
        return Err(ExperimentError::option("--duration", "must be positive"));
    }
    Ok(d)
}

/// Parses `deferrable,periodic,credit` (names or aliases) into policies, in that order,
/// without duplicates.
pub fn parse_policies(text: &str) -> Result<Vec<PolicyKind>, ExperimentError> {
    let mut policies = Vec::new();
    for name in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let kind = PolicyKind::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = PolicyKind::ALL.iter().map(|k| k.name()).collect();
            ExperimentError::option(
                "--policies",
                format!("unknown policy '{name}'; known: {}", known.join(", ")),
            )
        })?;
        if !policies.contains(&kind) {
            policies.push(kind);
        }
    }
    if policies.is_empty() {
        return Err(ExperimentError::option("--policies", "no policy given"));
    }
    Ok(policies)
}

/// Named overhead presets for `--overhead`.
///
/// - `none`: no overhead.
/// - `xen`: 150 ns per `do_schedule`, 1.5 µs per context switch — the figures of the
///   scenario format's example, of the order of a hypervisor scheduler in the kernel.
/// - `host`: the host executor's costs measured on this kind of machine (`docs/host.md`): the
///   scheduler thread's timer wake-up on a busy core (median ≈ 10 µs) charged per
///   `do_schedule`, and the priority-band switch from the tick to the next domain running
///   (median ≈ 15 µs) charged per context switch.
pub const OVERHEAD_PRESETS: [(&str, Overheads); 3] = [
    (
        "none",
        Overheads {
            do_schedule: Nanos(0),
            context_switch: Nanos(0),
            ..Overheads::ZERO
        },
    ),
    (
        "xen",
        Overheads {
            do_schedule: Nanos(150),
            context_switch: Nanos(1_500),
            ..Overheads::ZERO
        },
    ),
    (
        "host",
        Overheads {
            do_schedule: Nanos(10_000),
            context_switch: Nanos(15_000),
            ..Overheads::ZERO
        },
    ),
];

/// Parses `--overhead`: a preset name (see [`OVERHEAD_PRESETS`]) or
/// `DO_SCHEDULE,CONTEXT_SWITCH` with units (`150ns,1.5us`).
pub fn parse_overheads(text: &str) -> Result<Overheads, ExperimentError> {
    let text = text.trim();
    if let Some((_, preset)) = OVERHEAD_PRESETS.iter().find(|(name, _)| *name == text) {
        return Ok(*preset);
    }
    let bad = |problem: String| ExperimentError::option("--overhead", problem);
    let (a, b) = text.split_once(',').ok_or_else(|| {
        bad(format!(
            "'{text}' is neither a preset (none, xen, host) nor DO_SCHEDULE,CONTEXT_SWITCH \
             (for example 150ns,1.5us)"
        ))
    })?;
    let do_schedule: Nanos = a
        .trim()
        .parse()
        .map_err(|e| bad(format!("do_schedule cost: {e}")))?;
    let context_switch: Nanos = b
        .trim()
        .parse()
        .map_err(|e| bad(format!("context switch cost: {e}")))?;
    Ok(Overheads {
        do_schedule,
        context_switch,
        ..Default::default()
    })
}

/// The preset name of `overheads`, or its two costs.
pub fn describe_overheads(overheads: &Overheads) -> String {
    match OVERHEAD_PRESETS.iter().find(|(_, o)| o == overheads) {
        Some((name, _)) => format!(
            "{name} ({} per do_schedule, {} per context switch)",
            overheads.do_schedule, overheads.context_switch
        ),
        None => format!(
            "{} per do_schedule, {} per context switch",
            overheads.do_schedule, overheads.context_switch
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_parse_by_name_and_alias_in_order() {
        assert_eq!(
            parse_policies("ptps, deferrable,ds").unwrap(),
            vec![PolicyKind::Periodic, PolicyKind::Deferrable]
        );
        assert!(parse_policies("fifo").is_err());
        assert!(parse_policies(" , ").is_err());
    }

    #[test]
    fn result_options_read_back_to_the_same_options() {
        // (Options' own equality also compares the cancel flags, one per value.)
        let fields = |o: &Options| {
            (
                o.quick,
                o.seed,
                o.seeds,
                o.duration,
                o.policies.clone(),
                o.overheads,
                o.in_phase,
                o.workloads.clone(),
            )
        };
        let mut options = Options::quick("a");
        options.seed = 9;
        options.seeds = Some(3);
        options.duration = Some(Nanos(1_500_001));
        options.policies = Some(vec![PolicyKind::Credit, PolicyKind::Deferrable]);
        options.overheads = Some(parse_overheads("150ns,1.5us").unwrap());
        options.in_phase = true;
        options.workloads = vec![PathBuf::from("w.toml")];
        let back = Options::new("a")
            .with_result_options(&options.result_options())
            .unwrap();
        assert_eq!(fields(&back), fields(&options));
        let plain = Options::new("b");
        let back = Options::quick("b")
            .with_result_options(&plain.result_options())
            .unwrap();
        assert_eq!(fields(&back), fields(&plain));
    }

    #[test]
    fn the_number_of_draws_is_the_flag_or_the_scale_default() {
        let mut options = Options::new("a");
        assert_eq!(options.draws("x", Some(10)).unwrap(), 10);
        assert_eq!(options.draws("x", None).unwrap(), 1);
        options.quick = true;
        assert_eq!(options.draws("x", Some(10)).unwrap(), 1);
        options.seeds = Some(4);
        assert_eq!(options.draws("x", Some(10)).unwrap(), 4);
        let e = options
            .draws("rtxen-quantum", None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--seeds") && e.contains("rtxen-quantum draws no task sets"),
            "{e}"
        );
        options.seeds = Some(1);
        assert_eq!(options.draws("rtxen-quantum", None).unwrap(), 1);
        options.seeds = Some(0);
        let e = options.draws("x", Some(10)).unwrap_err().to_string();
        assert!(e.contains("--seeds") && e.contains("at least 1"), "{e}");
    }

    #[test]
    fn overheads_parse_presets_and_pairs() {
        assert_eq!(parse_overheads("none").unwrap(), Overheads::default());
        assert_eq!(
            parse_overheads("150ns, 1.5us").unwrap(),
            Overheads {
                do_schedule: Nanos(150),
                context_switch: Nanos(1500),
                ..Default::default()
            }
        );
        assert!(parse_overheads("150").is_err());
        assert!(parse_overheads("150ns").is_err());
        assert!(describe_overheads(&parse_overheads("host").unwrap()).starts_with("host"));
    }
}
