//! The scenario crate's integration tests: one binary.
//!
//! - `errors`: one test per kind of bad input; each asserts the message names the file,
//!   the domain/task and the field.
//! - `format`: defaults, derived values, events, the normalised form round-trips.
//! - `examples`: every file in the repository's `examples/` parses and runs under every
//!   policy it can.
//! - `roundtrip`: the normalised form and `analyze --emit scenario` check and simulate
//!   to the same bytes, over generated scenarios (a property test).
//! - `limits`: times at and above `MAX_TIME`, overheads against the quantum.
//! - `large`: files with tens of thousands of domains, tasks and events.

mod errors;
mod examples;
mod external;
mod format;
mod large;
mod limits;
mod multicore;
mod roundtrip;
mod util;
mod wake_delivery;
