//! What a run changed on the machine and how to undo it: one [`Undo`] line per change,
//! announced to the watchdog ([`crate::watchdog`]) and written to the run's record
//! ([`crate::runs`]) before the change is made, and the undoing itself ([`undo_domains`]),
//! shared by the watchdog and the recovery of abandoned runs.

use std::fs;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use crate::{cgroup, sys};

/// One thing to undo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Undo {
    /// Write this value back to `sched_rt_runtime_us`.
    RtRuntime(String),
    /// The run's cgroup tree: thaw, kill, remove.
    RunCgroup(PathBuf),
    /// A guest process: kill it (if it is still the process started at `start_time`).
    Guest { pid: i32, start_time: u64 },
    /// An external cgroup the run may have frozen: thaw it.
    ExternalCgroup(PathBuf),
    /// An external process the run may have stopped: continue it.
    ExternalPid(i32),
    /// An external thread whose policy and affinity the run changed: give them back (if
    /// it is still the thread started at `start_time`).
    ExternalThread {
        tid: i32,
        start_time: u64,
        sched: sys::Sched,
        cpus: Vec<usize>,
    },
    /// An external process the run moved into its own cgroup: move it back to `to`.
    ExternalMove {
        pid: i32,
        start_time: u64,
        to: PathBuf,
    },
    /// Whatever is left in the run's cgroup `from` of an external domain (processes the
    /// attached ones started): move it to `to` before the run's cgroups are removed.
    Evacuate { from: PathBuf, to: PathBuf },
    /// The live-control socket: remove it if it is still this file (device, inode).
    Socket { path: PathBuf, dev: u64, ino: u64 },
}

impl Undo {
    /// One line of the protocol (paths must not contain a newline).
    pub fn to_line(&self) -> String {
        match self {
            Undo::RtRuntime(v) => format!("rt_runtime {v}"),
            Undo::RunCgroup(p) => format!("run_cgroup {}", p.display()),
            Undo::Guest { pid, start_time } => format!("guest {pid} {start_time}"),
            Undo::ExternalCgroup(p) => format!("external_cgroup {}", p.display()),
            Undo::ExternalPid(pid) => format!("external_pid {pid}"),
            Undo::ExternalThread {
                tid,
                start_time,
                sched,
                cpus,
            } => {
                let cpus: Vec<String> = cpus.iter().map(usize::to_string).collect();
                format!(
                    "external_thread {tid} {start_time} {} {} {} {}",
                    sched.policy,
                    sched.nice,
                    sched.priority,
                    cpus.join(",")
                )
            }
            Undo::ExternalMove {
                pid,
                start_time,
                to,
            } => format!("external_move {pid} {start_time} {}", to.display()),
            Undo::Evacuate { from, to } => {
                format!("evacuate {}\t{}", from.display(), to.display())
            }
            Undo::Socket { path, dev, ino } => format!("socket {dev} {ino} {}", path.display()),
        }
    }

    pub fn from_line(line: &str) -> Option<Undo> {
        let (kind, rest) = line.split_once(' ')?;
        Some(match kind {
            "rt_runtime" => Undo::RtRuntime(rest.to_string()),
            "run_cgroup" => Undo::RunCgroup(rest.into()),
            "guest" => {
                let (pid, start) = rest.split_once(' ')?;
                Undo::Guest {
                    pid: pid.parse().ok()?,
                    start_time: start.parse().ok()?,
                }
            }
            "external_cgroup" => Undo::ExternalCgroup(rest.into()),
            "external_pid" => Undo::ExternalPid(rest.parse().ok()?),
            "external_thread" => {
                let mut f = rest.split(' ');
                let mut next = || f.next();
                let tid = next()?.parse().ok()?;
                let start_time = next()?.parse().ok()?;
                let sched = sys::Sched {
                    policy: next()?.parse().ok()?,
                    nice: next()?.parse().ok()?,
                    priority: next()?.parse().ok()?,
                };
                let cpus = next()?
                    .split(',')
                    .filter(|c| !c.is_empty())
                    .map(|c| c.parse().ok())
                    .collect::<Option<Vec<usize>>>()?;
                Undo::ExternalThread {
                    tid,
                    start_time,
                    sched,
                    cpus,
                }
            }
            "external_move" => {
                let mut f = rest.splitn(3, ' ');
                Undo::ExternalMove {
                    pid: f.next()?.parse().ok()?,
                    start_time: f.next()?.parse().ok()?,
                    to: f.next()?.into(),
                }
            }
            "evacuate" => {
                let (from, to) = rest.split_once('\t')?;
                Undo::Evacuate {
                    from: from.into(),
                    to: to.into(),
                }
            }
            "socket" => {
                let (dev, rest) = rest.split_once(' ')?;
                let (ino, path) = rest.split_once(' ')?;
                Undo::Socket {
                    path: path.into(),
                    dev: dev.parse().ok()?,
                    ino: ino.parse().ok()?,
                }
            }
            _ => return None,
        })
    }
}

/// A process's start time (field 22 of `/proc/PID/stat`), to tell it from a later process
/// with the same pid.
pub fn start_time(pid: i32) -> Option<u64> {
    stat_of(pid).map(|(_, start)| start)
}

/// A process's state letter (field 3) and start time (field 22) from `/proc/PID/stat`.
pub fn stat_of(pid: i32) -> Option<(char, u64)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may contain spaces; it ends at the last ')'.
    let mut after = stat[stat.rfind(')')? + 1..].split_whitespace();
    let state = after.next()?.chars().next()?;
    Some((state, after.nth(18)?.parse().ok()?))
}

/// Whether process `pid` (if it is still the one started at `start`) is on its way out
/// but not gone: its leader has exited (a zombie) or a SIGKILL is pending for it. Either
/// way its other threads must end too, and a `SCHED_FIFO` thread spinning on a cpu may not
/// reach the kernel's exit path on its own (see [`demote_threads`]).
pub fn dying(pid: i32, start: u64) -> bool {
    match stat_of(pid) {
        Some((state, t)) if t == start => {
            matches!(state, 'Z' | 'X')
                || fs::read_to_string(format!("/proc/{pid}/status"))
                    .is_ok_and(|status| sigkill_pending(&status))
        }
        _ => false,
    }
}

/// Whether a `/proc/PID/status` text shows a SIGKILL pending, for the thread
/// (`SigPnd`) or its whole process (`ShdPnd`).
fn sigkill_pending(status: &str) -> bool {
    const SIGKILL_BIT: u64 = 1 << (9 - 1);
    status.lines().any(|line| {
        let value = line
            .strip_prefix("SigPnd:")
            .or_else(|| line.strip_prefix("ShdPnd:"));
        value
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .is_some_and(|mask| mask & SIGKILL_BIT != 0)
    })
}

/// Puts every thread of process `pid` in `SCHED_OTHER`; returns how many were real-time.
///
/// A process killed (`exit_group`, SIGKILL) while one of its threads spins at a
/// `SCHED_FIFO` priority on a cpu of its own, with RT throttling lifted, was seen to stay
/// there for minutes — the leader a zombie, SIGKILL pending in every thread, each still
/// running — until its threads' policy was changed, which makes the kernel reschedule
/// them and so deliver the kill. So whoever kills a process that may hold real-time
/// threads demotes them as well, and does so again while it waits.
pub fn demote_threads(pid: i32) -> usize {
    let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    let mut demoted = 0;
    for task in tasks.flatten() {
        let Ok(tid) = task.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let realtime = sys::policy_of(tid)
            .is_ok_and(|(policy, _)| policy == libc::SCHED_FIFO || policy == libc::SCHED_RR);
        if realtime && sys::set_other(tid).is_ok() {
            demoted += 1;
        }
    }
    demoted
}

/// Undoes everything in `undo` but the throttling setting, in a safe order: the control
/// socket goes (no command can arrive any more), external processes go back to their
/// cgroups, their threads get their policies and cpus back, external domains continue,
/// guests die, the run's cgroups go (see [`crate::runs`] for the throttling setting, which other runs
/// may share).
pub fn undo_domains(undo: &[Undo]) {
    for u in undo {
        if let Undo::Socket { path, dev, ino } = u {
            use std::os::unix::fs::MetadataExt;
            if fs::symlink_metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == (*dev, *ino)) {
                let _ = fs::remove_file(path);
            }
        }
    }
    // External processes back where they were (out of the run's cgroups, which are
    // removed, and whatever is inside killed, below).
    for u in undo {
        match u {
            Undo::ExternalMove {
                pid,
                start_time: t,
                to,
            } if start_time(*pid) == Some(*t) => {
                let _ = cgroup::move_process(*pid, to);
            }
            Undo::Evacuate { from, to } => cgroup::evacuate(from, to),
            _ => {}
        }
    }
    for u in undo {
        match u {
            Undo::ExternalThread {
                tid,
                start_time: t,
                sched,
                cpus,
            } if start_time(*tid) == Some(*t) => {
                let _ = sys::set_sched(*tid, sched, false);
                let _ = sys::set_affinity(*tid, cpus);
            }
            Undo::ExternalCgroup(p) => {
                let _ = cgroup::set_frozen(p, false);
            }
            Undo::ExternalPid(pid) => {
                let _ = kill(Pid::from_raw(*pid), Signal::SIGCONT);
            }
            _ => {}
        }
    }
    for u in undo {
        if let Undo::Guest { pid, start_time: t } = u {
            if start_time(*pid) == Some(*t) {
                let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
                let _ = kill(Pid::from_raw(*pid), Signal::SIGCONT);
                demote_threads(*pid);
            }
        }
    }
    for u in undo {
        if let Undo::RunCgroup(p) = u {
            let _ = cgroup::remove_tree(p);
        }
    }
    // Guests not in a cgroup (no cgroup v2): wait until they are gone (bounded).
    let deadline = Instant::now() + Duration::from_secs(2);
    for u in undo {
        if let Undo::Guest { pid, start_time: t } = u {
            while start_time(*pid) == Some(*t) && Instant::now() < deadline {
                demote_threads(*pid);
                std::thread::sleep(Duration::from_millis(2));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pending_sigkill_is_read_from_either_mask_and_no_other_signal_counts() {
        let status = |sig: &str, shd: &str| format!("Name:\tx\nSigPnd:\t{sig}\nShdPnd:\t{shd}\n");
        assert!(sigkill_pending(&status(
            "0000000000000100",
            "0000000000000000"
        )));
        assert!(sigkill_pending(&status(
            "0000000000000000",
            "0000000000000100"
        )));
        assert!(sigkill_pending(&status(
            "0000000000004100",
            "0000000000000000"
        )));
        // SIGTERM (15) and SIGINT (2) are not SIGKILL.
        assert!(!sigkill_pending(&status(
            "0000000000004002",
            "0000000000004000"
        )));
        assert!(!sigkill_pending("Name:\tx\n"));
    }

    #[test]
    fn a_live_process_is_not_dying_and_a_reused_pid_is_not_it() {
        let me = std::process::id() as i32;
        let start = start_time(me).unwrap();
        assert!(!dying(me, start));
        assert!(!dying(me, start + 1), "another process's start time");
        assert!(!dying(i32::MAX, 0), "no such process");
    }

    /// A real-time thread of this process is put back in SCHED_OTHER, and counted; the
    /// others are left as they were (skipped without the privilege to make one).
    #[test]
    fn demoting_a_process_puts_its_real_time_threads_in_sched_other() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let tid = sys::gettid();
            let fifo = sys::set_fifo(0, 1).is_ok();
            tx.send((tid, fifo)).unwrap();
            let _ = done_rx.recv();
        });
        let (tid, fifo) = rx.recv().unwrap();
        if !fifo {
            eprintln!("skipped: SCHED_FIFO is not permitted here (needs root or CAP_SYS_NICE)");
            drop(done_tx);
            thread.join().unwrap();
            return;
        }
        assert_eq!(sys::policy_of(tid).unwrap().0, libc::SCHED_FIFO);
        assert_eq!(demote_threads(std::process::id() as i32), 1);
        assert_eq!(sys::policy_of(tid).unwrap(), (libc::SCHED_OTHER, 0));
        assert_eq!(demote_threads(std::process::id() as i32), 0, "nothing left");
        drop(done_tx);
        thread.join().unwrap();
    }
}
