//! # rtvmm-sim: the discrete-event simulator
//!
//! Drives the scheduling core (`rtvmm-core`) with simulated guests, in virtual time, as fast
//! as the machine allows. Same system, same seed: same bytes out. What it runs and what it
//! reports are the shared vocabulary of `rtvmm-system` (a [`SystemSpec`](rtvmm_system::SystemSpec), its changes, the
//! results), which the host executor speaks too.
//!
//! - [`driver`]: the event loop ([`driver::Simulation`]).
//! - [`collect`]: the results, job rows and trace names of a run.
//! - [`run`]: a scenario file's system run for its duration, with what it records.
//! - [`compare`]: one scenario under several policies (`rtvmm demo`).
//!
//! Long runs: [`SystemSpec::estimate_work`](rtvmm_system::SystemSpec::estimate_work) counts a run's work before it starts, and
//! [`Simulation::run_until_with`] reports progress every so many steps to a callback that
//! may stop the run (a binary draws the bar and handles Ctrl-C; this crate does neither).
//! Memory: see "Memory" in [`driver`].
//!
//! ```
//! use rtvmm_core::guest::{GuestScheduler, TaskSpec};
//! use rtvmm_core::machine::MachineConfig;
//! use rtvmm_core::model::VcpuParams;
//! use rtvmm_core::policy::PolicyConfig;
//! use rtvmm_core::Nanos;
//! use rtvmm_sim::Simulation;
//! use rtvmm_system::{DomainSpec, SystemSpec};
//!
//! let ms = Nanos::from_ms;
//! // One domain: a Deferrable Server of 2 ms every 10 ms running a task of 3 ms every 10 ms.
//! let mut system = SystemSpec::one_pool(MachineConfig::default(), PolicyConfig::Deferrable);
//! system.domains.push(DomainSpec {
//!     name: "d1".into(),
//!     vcpu: VcpuParams::server(ms(2), ms(10), 1),
//!     guest: GuestScheduler::Rm,
//!     tasks: vec![TaskSpec::periodic("t", ms(10), ms(3))],
//!     placement: Default::default(),
//! });
//! let mut sim = Simulation::new(&system, 42, false).unwrap();
//! sim.run_until(ms(100)).unwrap();
//! let results = sim.results("example", 42, ms(100));
//! // The task needs 3 ms per period but its server gives 2: it falls behind.
//! assert!(results.domains[0].missed > 0);
//! assert_eq!(results.pcpus[0].busy_ns, ms(20).as_ns());
//! ```
// Floors, bottom first; a blank line between them keeps `rustfmt` from sorting them.
pub mod driver;

pub mod collect;

pub mod run;

pub mod compare;

pub use driver::{SimError, Simulation};
