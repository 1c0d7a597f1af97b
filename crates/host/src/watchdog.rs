//! The watchdog: a small process that undoes what a run changed if the executor dies.
//!
//! # Design note
//! The executor starts it first (re-executing its own program, `HELPER_ARG watchdog CPU`),
//! in a process group of its own (so a Ctrl-C to the terminal does not reach it), and
//! keeps the write end of a pipe to its standard input. Before changing anything, the
//! executor announces how to undo it, one line at a time ([`Undo`]): the RT throttling
//! value to restore, the run's cgroup tree to thaw, empty and remove, each guest process
//! (pid and start time, so a reused pid is never killed), each external cgroup to thaw
//! and each external process to continue, and the live-control socket to remove (if it is
//! still the file the run created: device and inode). When the pipe closes — the executor finished
//! (after its own clean-up), panicked, was stopped by a signal or killed with `kill -9` —
//! the watchdog undoes everything announced, idempotently, and exits. The executor waits
//! for it at a normal end, so that when `rtvmm host run` returns the machine is as it was.
//!
//! The executor watches the watchdog too: it holds a pidfd of it (`pidfd_open`), polled
//! with the loop's timer, so a watchdog that dies (killed alone, by a user or the OOM
//! killer) is noticed within one loop iteration. The executor then stops the run and
//! undoes everything itself (see `executor`), and, the watchdog being gone, removes the
//! run's record itself once that is done ([`Watchdog`]'s drop).
//!
//! The same lines go to the run's record in the state directory ([`crate::runs`]), for the
//! case the watchdog cannot cover: both processes killed at once. The watchdog removes the
//! record when it is done. The throttling setting is shared with other runs: it is
//! restored through [`runs::restore_throttle`].
//!
//! No RT spinner can outlive the executor: the IDLE spinner is one of its threads, and the
//! guests die with it (parent-death signal, and the watchdog's kill).

use std::fs;
use std::io::{self, BufRead, Write};
use std::os::fd::{AsFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::runs::{self, RunRecord};
use crate::{sys, HelperCommand};

pub use crate::undo::{start_time, stat_of, undo_domains, Undo};

/// The watchdog process's entry point (`HELPER_ARG watchdog CPU [RECORD]`): `RECORD` is
/// the run's record in the state directory ([`crate::runs`]), removed once everything is
/// undone. Returns the exit code.
pub fn main(args: &[String]) -> i32 {
    // Off the managed cpus (`CPUS`: one, or several comma-separated); deaf to the
    // terminal's signals (its own process group already).
    let managed: Option<Vec<usize>> = args
        .first()
        .map(|list| list.split(',').map(str::parse::<usize>).collect())
        .and_then(Result::ok);
    if let Some(managed) = managed {
        let _ = sys::set_affinity(0, &sys::cpus_except_all(&managed));
    }
    for signal in [
        Signal::SIGINT,
        Signal::SIGTERM,
        Signal::SIGHUP,
        Signal::SIGPIPE,
    ] {
        // SAFETY: SIG_IGN installs no handler code.
        unsafe {
            let _ = nix::sys::signal::signal(signal, nix::sys::signal::SigHandler::SigIgn);
        }
    }
    let mut undo = Vec::new();
    let stdin = io::stdin();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if let Some(u) = Undo::from_line(line.trim_end()) {
            undo.push(u);
        }
    }
    undo_domains(&undo);
    let record = args.get(1).map(PathBuf::from);
    let dir = record
        .as_deref()
        .and_then(|r| r.parent())
        .map(runs::StateDir::at);
    if let Some(v) = undo.iter().find_map(|u| match u {
        Undo::RtRuntime(v) => Some(v),
        _ => None,
    }) {
        runs::restore_throttle(dir.as_ref(), record.as_deref(), v);
    }
    if let Some(record) = &record {
        let _ = fs::remove_file(record);
    }
    0
}

/// The executor's end of the watchdog (and of the run's record, which says the same).
pub struct Watchdog {
    child: Child,
    pipe: Option<ChildStdin>,
    record: Option<RunRecord>,
    /// A pidfd of the watchdog process: readable once it has exited (`None` where the
    /// kernel has no `pidfd_open`, before 5.3: then its death is seen by [`Self::death`]
    /// only).
    pidfd: Option<OwnedFd>,
    /// How the watchdog ended, once it is seen to have died while the run needed it.
    died: Option<String>,
}

/// How a process ended, in words (`killed by SIGKILL`, `exit code 1`).
fn ended(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit code {code}"),
        (None, Some(signal)) => match Signal::try_from(signal) {
            Ok(s) => format!("killed by {}", s.as_str()),
            Err(_) => format!("killed by signal {signal}"),
        },
        _ => status.to_string(),
    }
}

/// A pidfd of process `pid` (`pidfd_open(2)`), if the kernel has them.
fn pidfd_open(pid: u32) -> Option<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1; it
    // touches no memory of ours.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
    if fd < 0 {
        return None;
    }
    // SAFETY: the descriptor was just returned by the kernel and is owned by nobody else.
    Some(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

impl Watchdog {
    /// Starts the watchdog process, and the run's record in `state` if given. `inherit`:
    /// descriptors the watchdog keeps open for its life (the managed cpus' locks).
    pub fn spawn(
        helper: &HelperCommand,
        cpus: &[usize],
        state: Option<&runs::StateDir>,
        inherit: &[RawFd],
    ) -> io::Result<Watchdog> {
        use std::os::unix::process::CommandExt;
        let record_path = state.map(|s| s.record_path(std::process::id() as i32));
        let mut command = Command::new(&helper.program);
        command
            .args(&helper.args)
            .arg("watchdog")
            .arg(
                cpus.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            )
            .args(record_path.iter())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .process_group(0);
        if !inherit.is_empty() {
            let inherit = inherit.to_vec();
            // SAFETY: fcntl is async-signal-safe; it only clears close-on-exec on
            // descriptors this process owns (the closure allocates nothing).
            unsafe {
                command.pre_exec(move || {
                    for &fd in &inherit {
                        if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                            return Err(io::Error::last_os_error());
                        }
                    }
                    Ok(())
                });
            }
        }
        let mut child = command.spawn().map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("starting the watchdog ({}): {e}", helper.program.display()),
            )
        })?;
        let pipe = child.stdin.take();
        let pidfd = pidfd_open(child.id());
        let mut watchdog = Watchdog {
            child,
            pipe,
            record: None,
            pidfd,
            died: None,
        };
        if let Some(state) = state {
            let me = runs::Proc::me();
            let pid = watchdog.child.id() as i32;
            // Its start time is there as soon as the process exists.
            let it = runs::Proc::of(pid).ok_or_else(|| io::Error::other("the watchdog died"))?;
            // The first managed cpu stands for the run in its record.
            watchdog.record = Some(RunRecord::create(state, me, it, cpus[0])?);
        }
        Ok(watchdog)
    }

    /// Tells the watchdog (and the run's record) how to undo something, before it is done.
    pub fn announce(&mut self, undo: &Undo) -> io::Result<()> {
        if let Some(record) = &mut self.record {
            record.append(undo)?;
        }
        let pipe = self
            .pipe
            .as_mut()
            .ok_or_else(|| io::Error::other("watchdog closed"))?;
        writeln!(pipe, "{}", undo.to_line())?;
        pipe.flush()
    }

    /// The watchdog's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A descriptor that becomes readable when the watchdog exits (its pidfd), for the
    /// executor's poll.
    pub fn exit_fd(&self) -> Option<BorrowedFd<'_>> {
        self.pidfd.as_ref().map(AsFd::as_fd)
    }

    /// `Some(how it ended)` if the watchdog has exited (it must not before the run
    /// ends): it is reaped, and from then on the record is the executor's to remove.
    pub fn death(&mut self) -> Option<&str> {
        if self.died.is_none() {
            if let Ok(Some(status)) = self.child.try_wait() {
                self.died = Some(ended(status));
            }
        }
        self.died.as_deref()
    }

    /// Closes the pipe and waits (bounded) for the watchdog to finish undoing.
    pub fn finish(mut self) {
        self.close_and_wait();
    }

    fn close_and_wait(&mut self) {
        self.pipe = None;
        if self.died.is_some() {
            // Nobody else will: everything the record names was undone by the executor
            // before this (the guard drops the watchdog last).
            if let Some(record) = &self.record {
                let _ = fs::remove_file(record.path());
            }
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            match self.child.try_wait() {
                Ok(Some(status)) => {
                    // Killed before it was done (between the executor's last look and
                    // now): the executor has undone everything already; the record is
                    // left to it.
                    if status.code().is_none() {
                        if let Some(record) = &self.record {
                            let _ = fs::remove_file(record.path());
                        }
                    }
                    return;
                }
                Err(_) => return,
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        self.close_and_wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_undo_line_reads_back() {
        let all = [
            Undo::RtRuntime("950000".into()),
            Undo::RunCgroup("/sys/fs/cgroup/unified/rtvmm-12".into()),
            Undo::Guest {
                pid: 42,
                start_time: 123456,
            },
            Undo::ExternalCgroup("/sys/fs/cgroup/unified/my vm".into()),
            Undo::ExternalPid(7),
            Undo::ExternalThread {
                tid: 8,
                start_time: 99,
                sched: sys::Sched {
                    policy: 0,
                    nice: -5,
                    priority: 0,
                },
                cpus: vec![0, 1],
            },
            Undo::ExternalMove {
                pid: 9,
                start_time: 100,
                to: "/sys/fs/cgroup/unified/user slice/a".into(),
            },
            Undo::Evacuate {
                from: "/sys/fs/cgroup/unified/rtvmm-12/d1".into(),
                to: "/sys/fs/cgroup/unified/my vm".into(),
            },
            Undo::Socket {
                path: "/run/rtvmm/my run.sock".into(),
                dev: 64769,
                ino: 1234567,
            },
        ];
        for u in all {
            assert_eq!(Undo::from_line(&u.to_line()), Some(u.clone()), "{u:?}");
        }
        assert_eq!(Undo::from_line("guest 12"), None);
        assert_eq!(Undo::from_line("reboot now"), None);
    }

    /// A watchdog that dies is seen through its pidfd and named with how it ended (a
    /// shell standing in for the helper; no state directory, so no record).
    #[test]
    fn a_dead_watchdog_rings_its_exit_fd_and_says_how_it_died() {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        let helper = HelperCommand {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), "exec sleep 30".into(), "sh".into()],
        };
        let mut watchdog = Watchdog::spawn(&helper, &[0], None, &[]).expect("spawned");
        assert_eq!(watchdog.death(), None, "alive");
        let Some(fd) = watchdog.exit_fd() else {
            eprintln!("skipped: no pidfd_open on this kernel");
            return;
        };
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        assert_eq!(poll(&mut fds, PollTimeout::ZERO).unwrap(), 0, "alive");
        let pid = nix::unistd::Pid::from_raw(watchdog.pid() as i32);
        nix::sys::signal::kill(pid, Signal::SIGKILL).unwrap();
        let fd = watchdog.exit_fd().expect("a pidfd");
        let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
        assert_eq!(poll(&mut fds, PollTimeout::from(5000u16)).unwrap(), 1);
        assert_eq!(watchdog.death(), Some("killed by SIGKILL"));
        assert_eq!(watchdog.death(), Some("killed by SIGKILL"), "remembered");
        watchdog.finish();
    }

    #[test]
    fn a_process_start_time_is_read_past_a_name_with_spaces() {
        let me = std::process::id() as i32;
        let t = start_time(me).expect("our own start time");
        assert!(t > 0);
        assert_eq!(start_time(me), Some(t), "stable");
        assert_eq!(start_time(i32::MAX), None);
    }
}
