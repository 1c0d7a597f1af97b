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
//! - [`words`]: serde's error messages in words, for every reader of a file.
//! - [`xl`]: the `xl`-compatible commands (cpupools, pinning, `sched-rtds`, `sched-credit`).
pub mod cpuset;
pub mod event;
pub mod guest;
pub mod machine;
pub mod model;
pub mod policy;
pub mod rng;
pub mod time;
pub mod words;
pub mod xl;

pub use time::Nanos;
