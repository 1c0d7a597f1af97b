//! The crate's one error type. The CLI turns it into a message and an exit code.
//!
//! Each message says its cause once: a variant whose text includes an inner error does
//! not also return it from `source()` (reporters that walk the chain, such as `anyhow`'s
//! `{:#}`, would print it twice).

use std::path::PathBuf;

use rtvmm_gen::GenError;
use rtvmm_sim::SimError;

use crate::files::{OutputError, WriteError};
use crate::shard::ShardError;

/// Why an experiment, `gen` or `compare` could not finish.
#[derive(Debug, thiserror::Error)]
pub enum ExperimentError {
    #[error("unknown experiment '{name}'; known: {known}")]
    UnknownExperiment { name: String, known: String },
    #[error("experiment '{0}' is listed but not implemented yet")]
    NotImplemented(String),
    #[error("{option}: {problem}")]
    InvalidOption { option: String, problem: String },
    #[error("policy {policy} cannot run this experiment: {reason}")]
    UnsupportedPolicy { policy: String, reason: String },
    /// An input file cannot be read.
    #[error("cannot read {path}: {error}")]
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    /// A results file that is not JSON of the right shape; `message` says where and what.
    #[error("{path}: not a results file: {message}")]
    Json { path: PathBuf, message: String },
    /// An output path or directory that cannot be used, found before anything ran.
    #[error("{0}")]
    Output(OutputError),
    /// Writing an output failed (the previous file, if any, is untouched).
    #[error("{0}")]
    Write(WriteError),
    #[error("figure {path}: {message}")]
    Plot { path: PathBuf, message: String },
    #[error("no font for figures: {0}")]
    Font(String),
    #[error("run '{run}': {error}")]
    Sim { run: String, error: SimError },
    #[error("run '{run}' panicked: {message}")]
    RunPanicked { run: String, message: String },
    #[error("task-set generator: {0}")]
    Gen(GenError),
    #[error("analysis: {0}")]
    Analysis(String),
    /// The host executor refused or failed a real-time run (`--host`); `run` is `None`
    /// when it refused before any run started.
    #[error("{}{message}", run.as_ref().map(|r| format!("run '{r}' (real time on the host): ")).unwrap_or_else(|| "--host: ".to_string()))]
    Host {
        run: Option<String>,
        message: String,
        /// The user's to fix (a missing privilege, a backend, a cpu): nothing ran.
        refused: bool,
    },
    /// A real-time run stopped part-way by the cancel flag; the sweep drops it (never
    /// reported as an error).
    #[error("run '{run}' was stopped before its end")]
    Stopped { run: String },
    /// `rtvmm sweep --fail-fast`: a scenario file of the sweep that could not be read,
    /// checked (`bad_input`) or run.
    #[error("{file}: {message}")]
    SweepFile {
        file: PathBuf,
        message: String,
        bad_input: bool,
    },
    /// `--shard` or `merge`: a bad shard number, or shards that cannot be merged.
    #[error("{0}")]
    Shard(ShardError),
}

impl From<ShardError> for ExperimentError {
    fn from(e: ShardError) -> ExperimentError {
        ExperimentError::Shard(e)
    }
}

impl From<GenError> for ExperimentError {
    fn from(e: GenError) -> ExperimentError {
        ExperimentError::Gen(e)
    }
}

impl From<OutputError> for ExperimentError {
    fn from(e: OutputError) -> ExperimentError {
        ExperimentError::Output(e)
    }
}

impl From<WriteError> for ExperimentError {
    fn from(e: WriteError) -> ExperimentError {
        ExperimentError::Write(e)
    }
}

impl ExperimentError {
    /// An input file that cannot be read.
    pub(crate) fn read(path: impl Into<PathBuf>, error: std::io::Error) -> ExperimentError {
        ExperimentError::Read {
            path: path.into(),
            error,
        }
    }

    /// A bad command-line value.
    pub fn option(option: &str, problem: impl Into<String>) -> ExperimentError {
        ExperimentError::InvalidOption {
            option: option.to_string(),
            problem: problem.into(),
        }
    }

    /// Whether the user is to fix it — a bad option or name, an unreadable input, an
    /// unusable output path, a refused host run (the command line's exit code 2) — rather
    /// than a failure while running (exit code 1).
    pub fn is_bad_input(&self) -> bool {
        match self {
            ExperimentError::UnknownExperiment { .. }
            | ExperimentError::NotImplemented(_)
            | ExperimentError::InvalidOption { .. }
            | ExperimentError::UnsupportedPolicy { .. }
            | ExperimentError::Read { .. }
            | ExperimentError::Json { .. }
            | ExperimentError::Output(_)
            | ExperimentError::Shard(_)
            | ExperimentError::Gen(_) => true,
            ExperimentError::Write(_)
            | ExperimentError::Plot { .. }
            | ExperimentError::Font(_)
            | ExperimentError::Sim { .. }
            | ExperimentError::RunPanicked { .. }
            | ExperimentError::Analysis(_)
            | ExperimentError::Stopped { .. } => false,
            ExperimentError::Host { refused, .. } => *refused,
            ExperimentError::SweepFile { bad_input, .. } => *bad_input,
        }
    }
}
