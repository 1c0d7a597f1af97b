//! # rtvmm-core: the scheduling core
//!
//! A pure, deterministic state machine of VMM scheduling policies and guest schedulers.
//! It does no I/O, reads no clock, spawns no thread and uses no floating point in
//! decisions: every state-changing call takes `now`, and the core tells its driver when it
//! next needs a call ([`machine::Machine::poll_timeout`]). The simulator (`rtvmm-sim`) and
//! the real-time executor on Linux are two drivers of it.
//!
//! - [`time`]: [`Nanos`], the one time type.
//! - [`model`]: identifiers and VCPU parameters.
//! - [`cpuset`]: sets of pcpus (affinity, pools).
//! - [`policy`]: the [`policy::Policy`] trait and one file per VMM policy.
//! - [`machine`]: pcpus, the tick, overheads and time accounting around a policy.
//! - [`guest`]: tasks, jobs and the guest schedulers (rm, dm, fp, edf).
//! - [`rng`]: the portable seeded random stream.
//! - [`wake`]: the latency of a timer or event reaching a guest task ([`wake::WakeDelivery`]).
//! - [`words`]: serde's error messages in words, for every reader of a file.
//! - [`xl`]: the `xl`-compatible commands (cpupools, pinning, `sched-rtds`, `sched-credit`).

// Floors, lowest first: a module uses only the modules above it (checked by
// `tests/integration/layers.rs`); the modules of one floor do not use each other.
pub mod cpuset;
pub mod rng;
pub mod time;
pub mod words;

pub mod guest;
pub mod wake;

pub mod model;

pub mod event;

pub mod policy;

pub mod machine;
pub mod xl;

pub use time::Nanos;
