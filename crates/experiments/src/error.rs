//! The crate's one error type. The CLI turns it into a message and an exit code.

use std::path::PathBuf;

use rtvmm_gen::GenError;
use rtvmm_sim::SimError;

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
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {source}")]
    Csv { path: PathBuf, source: csv::Error },
    #[error("{path}: not a results file: {source}")]
    Json {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("figure {path}: {message}")]
    Plot { path: PathBuf, message: String },
    #[error("no font for figures: {0}")]
    Font(String),
    #[error("run '{run}': {source}")]
    Sim { run: String, source: SimError },
    #[error("run '{run}' panicked: {message}")]
    RunPanicked { run: String, message: String },
    #[error("task-set generator: {0}")]
    Gen(#[from] GenError),
    #[error("analysis: {0}")]
    Analysis(String),
}

impl ExperimentError {
    /// An I/O error on `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> ExperimentError {
        ExperimentError::Io {
            path: path.into(),
            source,
        }
    }

    /// A bad command-line value.
    pub(crate) fn option(option: &str, problem: impl Into<String>) -> ExperimentError {
        ExperimentError::InvalidOption {
            option: option.to_string(),
            problem: problem.into(),
        }
    }
}
