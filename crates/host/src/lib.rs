//! # rtvmm-host: the scheduling core in real time, on Linux
//!
//! The simulator says what would happen; this crate makes it happen. It drives the very
//! same [`Machine`](rtvmm_core::machine::Machine) — no second implementation of any
//! policy — with the real clock, and enforces each decision on real processes pinned to
//! one core per pcpu, the way RT-Xen's scheduler did inside Xen (`docs/host.md`). It stands on the
//! core and on the vocabulary both drivers share ([`rtvmm_system`]: systems, changes,
//! results, traces), never on the simulator; every change to the machine — a scenario's
//! timed event or a live-control command — goes through the one change path the
//! simulator uses too ([`rtvmm_system::change::apply_change`]), and the executor acts
//! only on its outcome.
//!
//! The modules, by floor (a module uses only those of the floors before its own):
//! `sys`; `cgroup`, `enforce`, `shm`, `wakeup`; `domain`, `guest`, `idle`, `undo`; `ctl`,
//! `external`, `runs`; `watchdog`; `executor`.
//!
//! - [`executor`]: the run — a resource guard (what the run changes on the machine and
//!   must undo), a seat per managed pcpu (its IDLE spinner, the enforcement of
//!   `activity(pcpu)`, switch probes, timing samples), the plan that orders every seat's
//!   switch and the guests' moves between seats ([`executor::plan`]), and the loop (one
//!   thread, `SCHED_FIFO` 99, pinned, memory locked): sleep until `poll_timeout`
//!   (absolute), `handle_timeout(now)`, enforce each seat; stop if the watchdog died; the paravirtual block/wake protocol per VCPU; the results in the
//!   simulator's format; live control of the run ([`executor::control`]: the control
//!   socket served between two decisions, commands applied by [`ctl::apply`]).
//! - [`domain`]: process domains — one guest process per VCPU (a domain of one VCPU, or
//!   a partitioned guest of several: each VCPU's tasks run only while that VCPU runs; a
//!   global guest of several: each VCPU's worker runs the job it is granted) — and the
//!   bookkeeping of their jobs.
//! - [`global`]: a global guest of several VCPUs — the core's guest scheduler, driven by
//!   the executor as the simulator drives it, granting each VCPU's worker its job.
//! - [`external`]: external domains — an existing cgroup or processes (a QEMU VM, a
//!   container) scheduled as one VCPU; how to put a QEMU VM under rtvmm.
//! - [`guest`]: the guest process: tasks as `SCHED_FIFO` threads burning thread CPU time.
//! - [`shm`]: the memory a guest shares with the executor (lock-free, versioned).
//! - [`enforce`]: stopping and resuming domains: `freeze` (cgroup v2), `band` (priority
//!   band), `signal` (SIGSTOP/SIGCONT).
//! - [`idle`]: the IDLE VCPU, a `SCHED_FIFO` spinner.
//! - [`wakeup`]: timer wake-up latency on real threads, cyclictest's way (`rtvmm bench
//!   wake`): what a wake delivery preset is measured with.
//! - [`cgroup`]: the run's cgroups.
//! - [`undo`]: what a run changed, one line per change, and how it is undone.
//! - [`watchdog`]: the process that undoes everything if the executor dies.
//! - [`runs`]: each run's record on disk (`/run/rtvmm`), the recovery of runs whose
//!   executor and watchdog both died, the shared RT-throttling setting, one run per cpu.
//! - [`ctl`]: live control — the Unix socket, its protocol, the `rtvmm ctl` client, the
//!   executor's domain table ([`ctl::Domains`], over which the change path runs), the one
//!   function through which a running executor applies a command to its machine, and a
//!   stand-in executor (a machine on a virtual clock) for tests without privileges.
//! - [`sys`]: clocks, sleeps, affinity, `sched_setattr`, RT throttling, privileges, steal.
//!
//! The executor re-executes a program for its helpers (the guests and the watchdog): the
//! `rtvmm` binary passes itself ([`HelperCommand`]) and hands its first argument
//! [`HELPER_ARG`] to [`helper_main`].
//!
//! ```no_run
//! # #[cfg(target_os = "linux")] {
//! use rtvmm_core::guest::{GuestScheduler, TaskSpec};
//! use rtvmm_core::machine::MachineConfig;
//! use rtvmm_core::model::{DomainSpec, VcpuParams};
//! use rtvmm_core::policy::PolicyConfig;
//! use rtvmm_core::Nanos;
//! use rtvmm_host::executor::{self, HostOptions};
//! use rtvmm_host::HelperCommand;
//! use rtvmm_system::SystemSpec;
//!
//! let ms = Nanos::from_ms;
//! let mut system = SystemSpec::one_pool(MachineConfig::default(), PolicyConfig::Deferrable);
//! system.domains.push(DomainSpec {
//!     name: "d1".into(),
//!     vcpu: VcpuParams::server(ms(2), ms(10), 1),
//!     guest: GuestScheduler::Rm,
//!     tasks: vec![TaskSpec::periodic("t", ms(10), ms(1))],
//!     placement: Default::default(),
//! });
//! // The helper program must dispatch `HELPER_ARG` to `rtvmm_host::helper_main`.
//! let helper = HelperCommand::this_program().unwrap();
//! let options = HostOptions::new(helper, ms(1000));
//! let run = executor::run(&system, "example", 42, options).unwrap();
//! println!("{}", run.results.summary());
//! # }
//! ```
//!
//! # Live control
//! `rtvmm host run SCENARIO --ctl [PATH]` serves a Unix socket (mode 0600; owner and root
//! only) for the run's length; `rtvmm ctl --socket PATH` is its client:
//!
//! ```text
//! $ sudo rtvmm host run two.toml --ctl /run/rtvmm/two.sock &
//! rtvmm: live control on /run/rtvmm/two.sock (rtvmm ctl --socket /run/rtvmm/two.sock sched-show)
//! $ sudo rtvmm ctl --socket /run/rtvmm/two.sock sched-set -d d1 -b 5ms   # next replenishment
//! $ sudo rtvmm ctl --socket /run/rtvmm/two.sock policy rtds              # hot swap
//! $ sudo rtvmm ctl --socket /run/rtvmm/two.sock domain add d3.toml       # a new guest
//! $ sudo rtvmm ctl --socket /run/rtvmm/two.sock domain remove d3         # reaped
//! ```
//!
//! In a program: [`executor::LiveControl::start`] and
//! [`HostOptions::control`](executor::HostOptions::control). A malformed or refused
//! request gets an error and changes nothing; the watchdog removes the socket if the
//! executor dies.
#![cfg_attr(not(target_os = "linux"), allow(unused))]

// The floors, lowest first: a module uses only modules of the groups before its own
// (`tests/integration/layers.rs` in the root package holds it).
#[cfg(target_os = "linux")]
pub mod sys;

#[cfg(target_os = "linux")]
pub mod cgroup;
#[cfg(target_os = "linux")]
pub mod enforce;
#[cfg(target_os = "linux")]
pub mod shm;
#[cfg(target_os = "linux")]
pub mod wakeup;

#[cfg(target_os = "linux")]
pub mod global;

#[cfg(target_os = "linux")]
pub mod domain;
#[cfg(target_os = "linux")]
pub mod guest;
#[cfg(target_os = "linux")]
pub mod idle;
#[cfg(target_os = "linux")]
pub mod undo;

#[cfg(target_os = "linux")]
pub mod ctl;
#[cfg(target_os = "linux")]
pub mod external;
#[cfg(target_os = "linux")]
pub mod runs;

#[cfg(target_os = "linux")]
pub mod watchdog;

#[cfg(target_os = "linux")]
pub mod executor;

use std::path::PathBuf;

/// The first argument of a re-executed helper (a guest or the watchdog).
pub const HELPER_ARG: &str = "__rtvmm-helper";

/// How to start a helper process: this program, with [`HELPER_ARG`] first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HelperCommand {
    pub program: PathBuf,
    /// Arguments before the helper's own (normally just [`HELPER_ARG`]).
    pub args: Vec<String>,
}

impl HelperCommand {
    /// The running program as the helper (it must hand [`HELPER_ARG`] to
    /// [`helper_main`]).
    pub fn this_program() -> std::io::Result<HelperCommand> {
        Ok(HelperCommand {
            program: std::env::current_exe()?,
            args: vec![HELPER_ARG.to_string()],
        })
    }
}

/// Runs a helper if `args` (the program's arguments, without the program name) start
/// with [`HELPER_ARG`]: returns its exit code, or `None` when they do not.
pub fn helper_main(args: &[String]) -> Option<i32> {
    if args.first().map(String::as_str) != Some(HELPER_ARG) {
        return None;
    }
    #[cfg(target_os = "linux")]
    {
        Some(match args.get(1).map(String::as_str) {
            Some("guest") => guest::main(&args[2..]),
            Some("watchdog") => watchdog::main(&args[2..]),
            other => {
                eprintln!("rtvmm: unknown helper {other:?}");
                2
            }
        })
    }
    #[cfg(not(target_os = "linux"))]
    {
        Some(2)
    }
}

/// Why a host run could not start or failed.
#[cfg(target_os = "linux")]
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    /// Privileges a real-time run needs are missing (and `--best-effort` was not given).
    #[error(
        "missing privileges for a real-time run:\n  - {}\n(or give --best-effort to run without them; every result is then labelled not real-time)",
        .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n  - ")
    )]
    Privileges(Vec<sys::MissingPrivilege>),
    /// The chosen enforcement backend cannot work here.
    #[error("--enforce {backend}: unavailable: {reason}")]
    BackendUnavailable {
        backend: &'static str,
        reason: String,
    },
    /// Something the host executor does not run (a setting, a guest, a task).
    #[error("domain '{domain}': {reason}")]
    Domain { domain: String, reason: String },
    #[error("{0}")]
    Unsupported(String),
    #[error("cpu {cpu}: no such cpu (this machine has {count}: 0..{})", .count - 1)]
    NoSuchCpu { cpu: usize, count: usize },
    #[error("{what}: {error}")]
    Io {
        what: String,
        #[source]
        error: std::io::Error,
    },
    /// Another run manages the cpu (one run per cpu).
    #[error(
        "cpu {cpu} is managed by another rtvmm run{}: one run per cpu (wait for it to end, or choose another with --cpu)",
        .holder.map(|p| format!(" (executor pid {p})")).unwrap_or_default()
    )]
    CpuBusy { cpu: usize, holder: Option<i32> },
    #[error("{0}")]
    Machine(String),
    #[error("the executor panicked (a bug in rtvmm); everything it changed was undone")]
    Panicked,
    /// The watchdog process died while the run needed it (killed alone): the run was
    /// stopped and the executor undid everything itself.
    #[error(
        "the watchdog (pid {pid}) died ({how}) at {:.1} ms into the run: the run was stopped, \
         its guests killed and reaped, its cgroups thawed and removed, RT throttling \
         restored and its record removed by the executor (without a watchdog nothing \
         would undo the run if the executor died; --carry-on-without-watchdog runs on \
         with a warning instead)",
        .at.as_ns() as f64 / 1e6
    )]
    WatchdogDied {
        pid: u32,
        how: String,
        at: rtvmm_core::Nanos,
    },
}

#[cfg(target_os = "linux")]
impl HostError {
    pub(crate) fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> HostError {
        let what = what.into();
        move |error| HostError::Io { what, error }
    }

    /// Whether the error is the user's to fix (bad input or missing privilege) rather than
    /// a failure while running.
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            HostError::Privileges(_)
                | HostError::BackendUnavailable { .. }
                | HostError::Domain { .. }
                | HostError::Unsupported(_)
                | HostError::NoSuchCpu { .. }
                | HostError::CpuBusy { .. }
        )
    }
}
