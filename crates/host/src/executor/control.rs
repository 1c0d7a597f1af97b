//! Live control of a running executor: its end of [`crate::ctl`].
//!
//! # Design note
//! [`LiveControl::start`] creates the control socket ([`ctl::Server`]) with a wake hook
//! ([`ServerConfig::wake`]) that rings an eventfd; the scheduler loop polls that eventfd
//! beside its timer, so a command is served as soon as it is queued, even while the loop
//! sleeps. The loop serves every queued request between two decisions (step 3 of the
//! loop): [`ctl::apply`] makes the change on the machine — the one rule from a command to
//! the core, the stand-in executor's too — and the executor then does what the change
//! asks of it outside the machine:
//! - `add-domain`: a guest the host cannot run (an EDF guest, listed release times) is
//!   refused before the machine changes; otherwise the machine takes the VCPU (joining
//!   at the request's instant, without work), then the guest process starts, stopped;
//!   its tasks' releases begin once it is ready. If the guest fails to start, the VCPU is
//!   removed again, its name stays free, and the client is told that nothing was added.
//! - `remove-domain`: the guest's jobs so far are taken into its book (they stay in the
//!   results, as a removed domain's do in the simulator); its threads are moved off the
//!   managed cpu and the process is killed, so that it dies at once whatever its
//!   priority; the loop reaps it (step 3 of the loop) and removes its cgroup. An
//!   external domain ([`crate::external`]) is given back instead, never killed: thawed
//!   and continued, its threads' policies and cpus restored, moved back to its cgroups.
//! - `sched-set`: the domain's parameters as the results report them follow the
//!   machine's.
//! - `sched-show`: the jobs each guest has finished and how many of them missed their
//!   deadline, from the job books (none for an external domain: rtvmm knows no tasks of
//!   it).
//!
//! An external domain cannot be added live: the request is refused when it is read
//! (`attach` or `pids` in `add-domain`), before it reaches the executor.
//!
//! The reply is sent once all that is done: a client told `done` for an `add-domain`
//! can count on the guest running. While a guest starts (a few milliseconds: a process
//! is executed and its threads set up) the scheduler thread waits for it, as for a
//! scenario's `add-domain` event; the core accounts the time as it measures it.
//!
//! The socket is announced to the watchdog when the run starts, so that it is removed
//! even if the executor dies; normally it goes when the run ends, before the results are
//! built (a command then gets "the executor has stopped": nothing changes).

use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;
use std::sync::mpsc::Receiver;
use std::sync::Arc;

use nix::sys::eventfd::{EfdFlags, EventFd};
use rtvmm_scenario::SchedulerSettings;

use crate::ctl::{self, Request, Server, ServerConfig, ServerError};

/// The control socket of a run, the channel its commands arrive on, and the eventfd
/// that wakes the loop. Put it in [`HostOptions::control`](super::HostOptions::control);
/// the socket lives as long as the run.
pub struct LiveControl {
    server: Server,
    pub(super) requests: Receiver<Request>,
    wake: Arc<EventFd>,
    /// The scenario's `[scheduler]` settings, for a swap that gives none.
    pub(super) settings: SchedulerSettings,
}

impl LiveControl {
    /// Creates the socket at `path` (see [`Server::start`]: mode 0600, owner and root
    /// only). `settings` are the scenario's `[scheduler]` settings.
    pub fn start(
        path: impl AsRef<Path>,
        settings: SchedulerSettings,
    ) -> Result<LiveControl, ServerError> {
        LiveControl::start_with(path, settings, ServerConfig::default())
    }

    /// [`LiveControl::start`] with other limits (its `wake` is replaced).
    pub fn start_with(
        path: impl AsRef<Path>,
        settings: SchedulerSettings,
        mut config: ServerConfig,
    ) -> Result<LiveControl, ServerError> {
        let wake = EventFd::from_value_and_flags(0, EfdFlags::EFD_CLOEXEC | EfdFlags::EFD_NONBLOCK)
            .map(Arc::new)
            .map_err(|e| ServerError::Wake(e.into()))?;
        let ring = Arc::clone(&wake);
        config.wake = Some(Arc::new(move || {
            let _ = ring.write(1);
        }));
        let (server, requests) = Server::start_with(path, config)?;
        Ok(LiveControl {
            server,
            requests,
            wake,
            settings,
        })
    }

    /// The socket's path.
    pub fn path(&self) -> &Path {
        self.server.path()
    }

    /// Keeps the server's threads off the managed cpus.
    pub(super) fn keep_off(&self, cpus: &[usize]) {
        let _ = self.server.set_affinity(&crate::sys::cpus_except_all(cpus));
    }

    /// Device and inode of the socket file (what the watchdog checks before removing it).
    pub(super) fn file_id(&self) -> (u64, u64) {
        self.server.file_id()
    }

    /// The eventfd the server rings after queueing a command.
    pub(super) fn wake_fd(&self) -> BorrowedFd<'_> {
        self.wake.as_fd()
    }

    /// Resets the eventfd (after the loop woke).
    pub(super) fn clear_wake(&self) {
        let _ = self.wake.read();
    }
}

/// The name of a request's origin in the executor's own refusals.
pub(super) use ctl::protocol::ORIGIN;
