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
//! The pipe alone is not enough: it closes only when the executor's last thread has
//! exited, and a killed executor whose `SCHED_FIFO` threads spin on a cpu of their own
//! (RT throttling lifted) was once seen to stay for 21 minutes with its leader a zombie
//! and SIGKILL pending in every thread. So while the pipe is open the watchdog looks at the
//! executor every 100 ms, and when it is dying (a zombie leader, or SIGKILL pending) kills
//! it and puts its threads in `SCHED_OTHER`, which makes the kernel deliver the kill.
//!
//! No RT spinner can outlive the executor: the IDLE spinner is one of its threads, and the
//! guests die with it (parent-death signal, and the watchdog's kill).

use std::fs;
use std::io::{self, Write};
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
    // The executor is the process that started us; named by pid and start time.
    let executor = nix::unistd::getppid().as_raw();
    let executor_start = crate::undo::start_time(executor).unwrap_or(0);
    let stdin = io::stdin();
    let undo = read_until_closed(stdin.as_fd(), || watch_executor(executor, executor_start));
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

/// How often the watchdog looks at its executor while the pipe stays open.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// Reads undo lines from `input` until it closes (end of file or an error), calling
/// `look` at least every [`LOOK_EVERY`] meanwhile.
fn read_until_closed(input: BorrowedFd<'_>, mut look: impl FnMut()) -> Vec<Undo> {
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    let mut undo = Vec::new();
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    let timeout = PollTimeout::try_from(LOOK_EVERY.as_millis() as u32).unwrap_or(PollTimeout::MAX);
    loop {
        let ready = {
            let mut fds = [PollFd::new(input, PollFlags::POLLIN)];
            match poll(&mut fds, timeout) {
                Ok(n) => n > 0,
                Err(nix::errno::Errno::EINTR) => false,
                Err(_) => true,
            }
        };
        if ready {
            match nix::unistd::read(input, &mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    pending.extend_from_slice(&chunk[..n]);
                    while let Some(end) = pending.iter().position(|&b| b == b'\n') {
                        let line: Vec<u8> = pending.drain(..=end).collect();
                        if let Some(u) = Undo::from_line(String::from_utf8_lossy(&line).trim_end())
                        {
                            undo.push(u);
                        }
                    }
                }
                Err(nix::errno::Errno::EINTR | nix::errno::Errno::EAGAIN) => {}
                Err(_) => break,
            }
        }
        look();
    }
    undo
}

/// One look at the executor while its pipe is open: if it is dying with threads left
/// (its leader a zombie, or a SIGKILL pending), it is killed and its threads demoted, so
/// that they reach their exit and close the pipe — a run whose leader has gone has no one
/// left to finish it, and a `SCHED_FIFO` thread may not take a kill on its own
/// ([`crate::undo::demote_threads`]).
fn watch_executor(pid: i32, start: u64) {
    if start != 0 && crate::undo::dying(pid, start) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), Signal::SIGKILL);
        crate::undo::demote_threads(pid);
    }
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

    /// Undo lines arrive in pieces and with pauses; each complete line is read, the
    /// executor is looked at while the pipe is quiet (the writer waits for two looks
    /// before it goes on), and the end comes at its close.
    #[test]
    fn undo_lines_are_read_across_pieces_with_looks_in_between_until_the_pipe_closes() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        let (read, write) = nix::unistd::pipe().unwrap();
        let looks = Arc::new(AtomicUsize::new(0));
        let seen = Arc::clone(&looks);
        let writer = std::thread::spawn(move || {
            let wait_for = |n: usize| {
                let deadline = Instant::now() + Duration::from_secs(30);
                while seen.load(Ordering::SeqCst) < n && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
            };
            let mut w = std::fs::File::from(write);
            w.write_all(b"guest 12 345\nrt_runtime 95").unwrap();
            wait_for(2);
            w.write_all(b"0000\nnonsense\nexternal_pid 7\n").unwrap();
            let before = seen.load(Ordering::SeqCst);
            wait_for(before + 2);
        });
        let undo = read_until_closed(read.as_fd(), || {
            looks.fetch_add(1, Ordering::SeqCst);
        });
        writer.join().unwrap();
        assert_eq!(
            undo,
            vec![
                Undo::Guest {
                    pid: 12,
                    start_time: 345
                },
                Undo::RtRuntime("950000".into()),
                Undo::ExternalPid(7),
            ]
        );
        assert!(
            looks.load(Ordering::SeqCst) >= 4,
            "looked while the pipe was open"
        );
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
