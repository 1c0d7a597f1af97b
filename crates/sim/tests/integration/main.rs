//! The simulator's integration tests: one binary, one module per subject.
//!
//! - `util`: the harness (build tiny systems, run them, compare schedules).
//! - `deferrable`: hand-derived Deferrable Server schedules.
//! - `multicore`: several pcpus, multi-VCPU guests, triggered tasks and chains.
mod util;

mod baselines;
mod deferrable;
mod fp_servers;
mod multicore;
mod overheads;
mod properties;
mod results;
mod runtime_changes;
mod trace;
mod wake_delivery;
