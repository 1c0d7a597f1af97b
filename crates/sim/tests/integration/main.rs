//! The simulator's integration tests: one binary, one module per subject.
//!
//! - `util`: the harness (build tiny systems, run them, compare schedules).
//! - `deferrable`: hand-derived Deferrable Server schedules.
mod util;

mod deferrable;
mod overheads;
mod results;
