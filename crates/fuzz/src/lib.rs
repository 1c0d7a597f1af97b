//! # rtvmm-fuzz: the fuzzing harness
//!
//! rtvmm reads four kinds of files written by people and other tools: scenarios (TOML),
//! CARTS systems (XML), workload files (TOML) and run results (JSON, for `compare`). This
//! crate keeps true, for every input, what issue 13 asked: **no panic, no hang, no
//! invariant violation, no silent wrong result** — each reader returns a value or a typed
//! error.
//!
//! For each reader it has three things:
//! - a **check** ([`scenario::check`], [`carts::check`], [`workload::check`],
//!   [`results::check`]): feeds one input to the reader and verifies what must hold of the
//!   answer — for a scenario `check` accepts, that its normalised form parses back to the
//!   same scenario and that it simulates, every core invariant checked after every step,
//!   within a step budget (a hang is a [`Failure`], not a stuck test);
//! - a **structure-aware generator** ([`scenario::generate`], …): valid-ish files built
//!   from a [`tape::Tape`] of choices — keys, values, sizes, extreme and malformed
//!   numbers, unicode and very long names, duplicates, missing fields, wrong types — plain
//!   by default and odd at a rate the tape picks per input;
//! - **seeds** ([`seeds`]) for [`mutate`]'s byte-level mutations: the repository's
//!   `examples/` and the formats' documented examples.
//!
//! The proptest suites (`tests/fuzz/`) run each check on generated and on mutated inputs
//! under a watchdog ([`harness`]): a few cases in `cargo test --workspace`, as many as
//! `RTVMM_FUZZ_CASES` asks on demand. The cargo-fuzz targets in the repository's `fuzz/`
//! call the same checks.
//!
//! ```
//! use rtvmm_fuzz::{scenario, Outcome};
//!
//! // The empty tape generates the plainest valid scenario; it simulates cleanly.
//! let text = scenario::generate(&[]);
//! assert_eq!(scenario::check(&text), Ok(Outcome::Accepted));
//! // Input the reader rightly refuses is not a failure.
//! assert_eq!(scenario::check("duration = 5"), Ok(Outcome::Refused));
//! ```

// Floors, lowest first: a module uses only the modules above it (checked by
// `tests/integration/layers.rs`); the modules of one floor do not use each other.
pub mod harness;
pub mod mutate;
pub mod seeds;
pub mod tape;

pub mod text;

pub mod carts;
pub mod results;
pub mod workload;

pub mod scenario;

pub mod cli;

use std::fmt;

/// What a reader did with an input that broke nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Read (and, for scenarios, simulated) with every property holding.
    Accepted,
    /// Refused with a typed error that reads well: bad input, rightly refused.
    Refused,
}

/// What went wrong: a property that must hold for every input did not.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

/// The classes a failure is counted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// A core invariant (`Machine::check_invariants`) broke during a simulation.
    Invariant,
    /// A run did not finish within its step budget, or stopped advancing time.
    Hang,
    /// A wrong answer: a value that contradicts the input or itself, a round trip that
    /// changes the input, an error message a person cannot read.
    WrongResult,
}

impl Failure {
    pub fn new(kind: FailureKind, message: impl Into<String>) -> Failure {
        Failure {
            kind,
            message: message.into(),
        }
    }

    pub(crate) fn wrong(message: impl Into<String>) -> Failure {
        Failure::new(FailureKind::WrongResult, message)
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            FailureKind::Invariant => "invariant violation",
            FailureKind::Hang => "hang",
            FailureKind::WrongResult => "wrong result",
        };
        write!(f, "{kind}: {}", self.message)
    }
}

/// The result of one check.
pub type Checked = Result<Outcome, Failure>;

/// An error message a person can read: no Rust internals, no cause said twice. `what`
/// names the reader, for the failure message; `input` is what was read: a message may
/// quote it, so text that is in the input is not held against the message.
pub(crate) fn readable(what: &str, message: &str, input: &str) -> Result<(), Failure> {
    for internal in [
        "expected struct",
        "expected i64",
        "expected u64",
        "expected u32",
        "Nanos(",
        "Some(",
        "IoError",
        "Custom {",
    ] {
        if message.contains(internal) && !input.contains(internal) {
            return Err(Failure::wrong(format!(
                "{what}: Rust internals ({internal}) in the error: {message}"
            )));
        }
    }
    for line in message.lines() {
        let parts: Vec<&str> = line.split(": ").collect();
        if let Some(pair) = parts.windows(2).find(|p| {
            let part = p[0].trim();
            part == p[1].trim() && !part.is_empty() && !input.contains(part)
        }) {
            return Err(Failure::wrong(format!(
                "{what}: '{}' said twice in the error: {message}",
                pair[0].trim()
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_internals_in_a_message_fail_unless_the_input_wrote_them() {
        let message = "f.toml: quantum: 'Some(' has an unknown unit";
        assert!(readable("scenario", message, "quantum = \"1ms\"").is_err());
        // Found by cargo-fuzz: the message only quotes what the file says.
        assert!(readable("scenario", message, "quantum = \"Some(\"").is_ok());
        assert!(readable("scenario", "x: period: period: 0", "").is_err());
        assert!(readable("scenario", "f.toml: period: missing", "").is_ok());
    }
}
