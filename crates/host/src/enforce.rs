//! Enforcement: making a domain stop or run, three ways.
//!
//! # Design note
//! The scheduler decides who runs; an [`Enforcer`] makes it so on Linux. The executor
//! calls [`Enforcer::stop`] on the domain it switches away from and [`Enforcer::resume`] on
//! the one it switches to (nothing else ever runs a domain), so at most one domain is
//! runnable at a time. The backend is chosen per run ([`Backend`]):
//! - **freeze**: each domain in its own cgroup v2; `cgroup.freeze` 1 or 0, written through
//!   a file kept open. Threads keep their `SCHED_FIFO` priorities. Measured here (`docs/host.md`):
//!   ≈ 18 µs median from the decision to the domain running.
//! - **band**: every thread of the running domain in the high `SCHED_FIFO` band
//!   ([`RUN_BAND_TOP`] down), every other domain's threads shifted [`BAND_SHIFT`] lower,
//!   below the whole band but still `SCHED_FIFO` (never `SCHED_IDLE`: the fair server gives
//!   such threads up to ~5% of the core). A demoted thread runs only when no promoted one
//!   can: when the running domain briefly has nothing runnable before the executor hears of
//!   it. The IDLE spinner then sits above the demoted band ([`IDLE_PRIORITY_BAND`]).
//! - **signal**: `SIGSTOP`/`SIGCONT` to the domain's process (last resort; ≈ 27 µs).
//!
//! Priorities used on the managed cpu: the scheduler thread 99; guest threads
//! [`RUN_BAND_BOTTOM`]..=[`RUN_BAND_TOP`] (rank 0 highest); demoted threads
//! `priority - BAND_SHIFT`; the IDLE spinner 1 (freeze, signal) or [`IDLE_PRIORITY_BAND`].

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::sys;

/// The highest priority a guest thread gets (its domain running).
pub const RUN_BAND_TOP: u32 = 80;
/// The lowest priority of the running band.
pub const RUN_BAND_BOTTOM: u32 = 42;
/// How far a stopped domain's threads are demoted under `band`: below the whole running
/// band, leaving one level for the IDLE spinner between the two.
pub const BAND_SHIFT: u32 = RUN_BAND_TOP - RUN_BAND_BOTTOM + 2;
/// The IDLE spinner's priority under `band`: above every demoted thread.
pub const IDLE_PRIORITY_BAND: u32 = RUN_BAND_BOTTOM - 1;
/// The IDLE spinner's priority under `freeze` and `signal`.
pub const IDLE_PRIORITY: u32 = 1;
/// The scheduler thread's priority.
pub const SCHEDULER_PRIORITY: u32 = 99;

// The scheduler thread preempts every guest thread, whatever its band.
const _: () = assert!(RUN_BAND_TOP < SCHEDULER_PRIORITY);
/// Distinct priority levels a guest may use.
pub const GUEST_LEVELS: u32 = RUN_BAND_TOP - RUN_BAND_BOTTOM + 1;

/// How domains are stopped and resumed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Freeze,
    Band,
    Signal,
}

impl Backend {
    pub const ALL: [Backend; 3] = [Backend::Freeze, Backend::Band, Backend::Signal];

    pub fn name(self) -> &'static str {
        match self {
            Backend::Freeze => "freeze",
            Backend::Band => "band",
            Backend::Signal => "signal",
        }
    }

    pub fn from_name(name: &str) -> Option<Backend> {
        Backend::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The IDLE spinner's `SCHED_FIFO` priority under this backend.
    pub fn idle_priority(self) -> u32 {
        match self {
            Backend::Band => IDLE_PRIORITY_BAND,
            _ => IDLE_PRIORITY,
        }
    }
}

/// The `SCHED_FIFO` priority of a guest thread of rank `rank` (0: the guest's most urgent
/// level), or `None` past [`GUEST_LEVELS`] levels.
pub fn guest_priority(rank: u32) -> Option<u32> {
    (rank < GUEST_LEVELS).then(|| RUN_BAND_TOP - rank)
}

/// What an enforcer acts on for one domain.
pub struct Member {
    /// The domain's process (a guest, or an external process).
    pub pids: Vec<i32>,
    /// Its threads and the `SCHED_FIFO` priority each has while the domain runs (band).
    pub threads: Vec<(i32, u32)>,
    /// Its cgroup and its `cgroup.freeze`, open (freeze).
    pub cgroup: Option<(PathBuf, File)>,
}

impl Member {
    /// A member in cgroup `dir` (its `cgroup.freeze` opened for writing).
    pub fn open_cgroup(dir: &Path) -> io::Result<(PathBuf, File)> {
        let file = File::options()
            .write(true)
            .open(dir.join("cgroup.freeze"))
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
        Ok((dir.to_path_buf(), file))
    }
}

/// Stops and resumes domains.
pub trait Enforcer: Send {
    fn backend(&self) -> Backend;
    /// The domain must not run until resumed.
    fn stop(&mut self, member: &Member) -> io::Result<()>;
    /// The domain may run.
    fn resume(&mut self, member: &Member) -> io::Result<()>;
}

/// The enforcer of `backend`.
pub fn enforcer(backend: Backend) -> Box<dyn Enforcer> {
    match backend {
        Backend::Freeze => Box::new(Freeze),
        Backend::Band => Box::new(Band),
        Backend::Signal => Box::new(SignalStop),
    }
}

struct Freeze;

impl Enforcer for Freeze {
    fn backend(&self) -> Backend {
        Backend::Freeze
    }
    fn stop(&mut self, member: &Member) -> io::Result<()> {
        freeze_write(member, b"1")
    }
    fn resume(&mut self, member: &Member) -> io::Result<()> {
        freeze_write(member, b"0")
    }
}

fn freeze_write(member: &Member, value: &[u8]) -> io::Result<()> {
    let (dir, file) = member.cgroup.as_ref().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::Unsupported,
            "freeze: this domain has no cgroup",
        )
    })?;
    file.write_at(value, 0)
        .map(|_| ())
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", dir.display())))
}

struct Band;

impl Enforcer for Band {
    fn backend(&self) -> Backend {
        Backend::Band
    }
    fn stop(&mut self, member: &Member) -> io::Result<()> {
        for &(tid, priority) in &member.threads {
            sys::set_fifo(tid, priority - BAND_SHIFT)?;
        }
        Ok(())
    }
    fn resume(&mut self, member: &Member) -> io::Result<()> {
        for &(tid, priority) in &member.threads {
            sys::set_fifo(tid, priority)?;
        }
        Ok(())
    }
}

struct SignalStop;

impl Enforcer for SignalStop {
    fn backend(&self) -> Backend {
        Backend::Signal
    }
    fn stop(&mut self, member: &Member) -> io::Result<()> {
        signal_all(member, Signal::SIGSTOP)
    }
    fn resume(&mut self, member: &Member) -> io::Result<()> {
        signal_all(member, Signal::SIGCONT)
    }
}

fn signal_all(member: &Member, signal: Signal) -> io::Result<()> {
    for &pid in &member.pids {
        kill(Pid::from_raw(pid), signal).map_err(io::Error::from)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bands_do_not_overlap_and_idle_sits_between_them_under_band() {
        assert_eq!(guest_priority(0), Some(RUN_BAND_TOP));
        assert_eq!(guest_priority(GUEST_LEVELS - 1), Some(RUN_BAND_BOTTOM));
        assert_eq!(guest_priority(GUEST_LEVELS), None);
        let demoted_top = RUN_BAND_TOP - BAND_SHIFT;
        let demoted_bottom = RUN_BAND_BOTTOM - BAND_SHIFT;
        assert!(
            demoted_bottom >= 2,
            "demoted threads stay above SCHED_FIFO 1"
        );
        assert!(demoted_top < IDLE_PRIORITY_BAND && IDLE_PRIORITY_BAND < RUN_BAND_BOTTOM);
        for b in Backend::ALL {
            assert_eq!(Backend::from_name(b.name()), Some(b));
        }
    }
}
