//! # rtvmm-system: the vocabulary every driver speaks
//!
//! rtvmm has two drivers of one scheduling core (`rtvmm-core`): the simulator
//! (`rtvmm-sim`), which runs a system in virtual time, and the host executor
//! (`rtvmm-host`), which runs it in real time on Linux. Both stand on this crate and
//! neither on the other, the way `quinn` and `quinn-proto` do: what a system is, how it
//! changes while it runs, and what a run reports are defined here once.
//!
//! Floors, bottom first (a module uses only those below it):
//! - [`input`]: reading an input file with a bound on its size.
//! - [`records`]: what a driver records — a job's life, guest and core trace events.
//! - [`stats`]: per-task counts and distributions in memory that does not grow with the
//!   number of jobs.
//! - [`spec`]: what to run ([`spec::SystemSpec`]: the machine, its pools, the domains,
//!   timed changes, chains), and the long-run estimate.
//! - [`xl`]: `xl` commands applied to a running machine.
//! - [`change`]: the one change path ([`change::apply_change`]): every driver applies a
//!   [`spec::Change`] through it and acts only on what it returns.
//! - [`trace`]: traces as Chrome/Perfetto trace-event JSON or CSV.
//! - [`timeline`]: who ran when, rebuilt from a trace, for tests.
//! - [`results`]: what a run measured, and its JSON form — the same for both drivers.
//!
//! See `docs/architecture.md` for how the crates stack.
//!
//! ```
//! use rtvmm_core::guest::{GuestScheduler, TaskSpec};
//! use rtvmm_core::machine::MachineConfig;
//! use rtvmm_core::model::{DomainSpec, VcpuParams};
//! use rtvmm_core::policy::PolicyConfig;
//! use rtvmm_core::Nanos;
//! use rtvmm_system::change::{Applied, Domains};
//! use rtvmm_system::spec::{Change, SystemSpec};
//!
//! let ms = Nanos::from_ms;
//! let system = SystemSpec::one_pool(MachineConfig::default(), PolicyConfig::Deferrable);
//! let mut machine = system.machine().unwrap();
//! let mut domains = Domains::default();
//! let web = DomainSpec {
//!     name: "web".into(),
//!     vcpu: VcpuParams::server(ms(2), ms(10), 1),
//!     guest: GuestScheduler::Rm,
//!     tasks: vec![TaskSpec::periodic("t", ms(10), ms(1))],
//!     placement: Default::default(),
//! };
//! let settings = &system.policy_settings;
//! let added = domains.apply(&mut machine, Nanos::ZERO, &Change::AddDomain(web), settings);
//! assert!(matches!(added, Ok(Applied::Added { .. })));
//! // A second domain of the same name is refused, and nothing changes.
//! let web = domains.domains[0].0.clone();
//! assert!(domains.apply(&mut machine, ms(1), &Change::AddDomain(web), settings).is_err());
//! assert_eq!(domains.domains.len(), 1);
//! ```
// Floors, bottom first; a blank line between them keeps `rustfmt` from sorting them.
pub mod input;

pub mod records;

pub mod stats;

pub mod spec;

pub mod xl;

pub mod change;

pub mod trace;

pub mod timeline;

pub mod results;

pub use spec::{
    pool_step_weight, run_step_weight, ChainSpec, Change, DomainSpec, SystemSpec, TimedChange,
    WorkEstimate, SETUP_PER_ITEM,
};
