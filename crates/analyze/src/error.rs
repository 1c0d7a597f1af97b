//! What can stop `rtvmm analyze` before there is a report.

use rtvmm_analysis::CartsError;
use thiserror::Error;

use rtvmm_scenario::ScenarioError;

/// What can go wrong before there is a report to show.
#[derive(Debug, Error)]
pub enum AnalyzeError {
    /// The input file cannot be read. (`error`, not `source`: the message says it once.)
    #[error("cannot read {file}: {error}")]
    Io { file: String, error: std::io::Error },
    /// The scenario is invalid.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    /// The CARTS file is invalid. (`error` is not a `source`: the message already holds it,
    /// and a reporter that prints the chain would say it twice.)
    #[error("{file}: {error}")]
    Carts { file: String, error: CartsError },
    /// An option does not fit the input (unknown domain, empty range, ...).
    #[error("{0}")]
    BadOption(String),
    /// A CARTS component or task name longer than [`rtvmm_scenario::MAX_NAME_CHARS`].
    #[error("{file}: line {line}: {what} name: {length} characters: a name has at most {max}", max = rtvmm_scenario::MAX_NAME_CHARS)]
    NameTooLong {
        file: String,
        line: u32,
        what: &'static str,
        length: usize,
    },
    /// `--emit` cannot produce its output.
    #[error("cannot emit: {0}")]
    Emit(String),
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvmm_analysis::parse_carts;

    /// A CARTS error is said once: the message holds it, and it is not also the source.
    #[test]
    fn carts_errors_are_not_repeated_as_their_source() {
        let error = AnalyzeError::Carts {
            file: "x.xml".to_string(),
            error: parse_carts("<nope/>").unwrap_err(),
        };
        assert!(std::error::Error::source(&error).is_none());
        assert_eq!(
            error.to_string().matches("root element").count(),
            1,
            "{error}"
        );
    }
}
