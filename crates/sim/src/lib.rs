//! # rtvmm-sim: the discrete-event simulator
//!
//! Drives the scheduling core (`rtvmm-core`) with simulated guests, in virtual time, as fast
//! as the machine allows. Same system, same seed: same bytes out.
//!
//! - [`system`]: what to simulate ([`system::SystemSpec`]), in the core's types.
//! - [`driver`]: the event loop ([`driver::Simulation`]).
//! - [`results`]: what a run measured, and its JSON form.
//! - [`stats`]: per-task counts and distributions in memory that does not grow with the
//!   number of jobs.
//! - [`timeline`]: who ran when, rebuilt from a trace, for tests.
//! - [`trace`]: traces as Chrome/Perfetto trace-event JSON or CSV.
//! - [`xl`]: `xl` commands applied to a running machine.
//!
//! Long runs: [`SystemSpec::estimate_work`] counts a run's work before it starts, and
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
//! use rtvmm_sim::results::RunResults;
//! use rtvmm_sim::{DomainSpec, Simulation, SystemSpec};
//!
//! let ms = Nanos::from_ms;
//! // One domain: a Deferrable Server of 2 ms every 10 ms running a task of 3 ms every 10 ms.
//! let system = SystemSpec {
//!     machine: MachineConfig::default(),
//!     policy: PolicyConfig::Deferrable,
//!     pools: Vec::new(),
//!     policy_settings: Default::default(),
//!     domains: vec![DomainSpec {
//!         name: "d1".into(),
//!         vcpu: VcpuParams::server(ms(2), ms(10), 1),
//!         guest: GuestScheduler::Rm,
//!         tasks: vec![TaskSpec::periodic("t", ms(10), ms(3))],
//!         placement: Default::default(),
//!     }],
//!     changes: vec![],
//!     chains: vec![],
//! };
//! let mut sim = Simulation::new(&system, 42, false).unwrap();
//! sim.run_until(ms(100)).unwrap();
//! let results = RunResults::collect(&sim, "example", 42, ms(100));
//! // The task needs 3 ms per period but its server gives 2: it falls behind.
//! assert!(results.domains[0].missed > 0);
//! assert_eq!(results.pcpus[0].busy_ns, ms(20).as_ns());
//! ```
pub mod driver;
pub mod results;
pub mod stats;
pub mod system;
pub mod timeline;
pub mod trace;
pub mod xl;

pub use driver::{SimError, Simulation, TraceEvent};
pub use system::{
    ChainProblem, ChainSpec, Change, DomainSpec, SystemSpec, TimedChange, WorkEstimate,
};
