//! # rtvmm-sim: the discrete-event simulator
//!
//! Drives the scheduling core (`rtvmm-core`) with simulated guests, in virtual time, as fast
//! as the machine allows. Same system, same seed: same bytes out.
//!
//! - [`system`]: what to simulate ([`system::SystemSpec`]), in the core's types.
//! - [`driver`]: the event loop ([`driver::Simulation`]).
//! - [`results`]: what a run measured, and its JSON form.
//! - [`timeline`]: who ran when, rebuilt from a trace, for tests.
//! - [`trace`]: a recorded trace as Chrome/Perfetto JSON or CSV.
pub mod driver;
pub mod results;
pub mod system;
pub mod timeline;
pub mod trace;

pub use driver::{SimError, Simulation, TraceEvent};
pub use system::{Change, DomainSpec, SystemSpec, TimedChange};
