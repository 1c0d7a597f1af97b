//! Runs on disk: what each run changed, recovery of abandoned runs, one run per cpu.
//!
//! # Design note
//! The watchdog undoes a run if its executor dies, but nothing survives a kill of both at
//! once (a kill of the whole process tree, session or cgroup). So every run also keeps a
//! **record** in the state directory ([`STATE_DIR`], `/run/rtvmm`: a tmpfs, gone at boot
//! like everything it describes): `run-<executor pid>.state`, one line per fact —
//! `executor PID START`, `watchdog PID START`, `cpu N`, then the watchdog's own undo lines
//! ([`Undo`]), each written before the change it undoes. A process is named by its pid and
//! start time, so a reused pid is never mistaken for it.
//!
//! - A run is **live** while its executor or its watchdog lives; otherwise it is
//!   **abandoned**. [`recover`] (at the start of every run, and `rtvmm host cleanup`)
//!   undoes abandoned runs: external domains continue, guests die, the run's cgroup tree
//!   is thawed, emptied (its processes are ours) and removed, throttling is restored; then
//!   the record goes. It also removes `rtvmm-<pid>` cgroups no record names whose pid is
//!   dead (runs of versions without records).
//! - **RT throttling is shared**: two runs on two cpus may both need it lifted. A run
//!   lifting it records the value to restore — another live run's recorded value if one
//!   holds it lifted, else the value in force — and whoever restores it (the executor, its
//!   watchdog, a recovery) writes it back only when no other live run holds it lifted
//!   ([`restore_throttle`]). Lifting, restoring and recovering happen under one lock
//!   (`state.lock`), so two runs never interleave them.
//! - **One run per cpu**: a run holds `cpu<N>.lock` (`flock`, exclusive) for its life; its
//!   watchdog inherits the lock, so the cpu stays taken until everything is undone. The
//!   file holds the holder's pid, to name it in the refusal.

use std::fs::{self, File};
use std::io::{self, Read, Seek, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

use crate::cgroup;
use crate::sys;
use crate::undo::{demote_threads, dying, start_time, stat_of, undo_domains, Undo};

/// Where runs keep their records and locks.
pub const STATE_DIR: &str = "/run/rtvmm";

/// A process, by pid and start time (a later process with the same pid is another).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Proc {
    pub pid: i32,
    pub start_time: u64,
}

impl Proc {
    /// The process `pid` as it is now, if it exists.
    pub fn of(pid: i32) -> Option<Proc> {
        start_time(pid).map(|start_time| Proc { pid, start_time })
    }

    /// The calling process.
    pub fn me() -> Proc {
        Proc::of(std::process::id() as i32).expect("our own /proc entry")
    }

    /// It still runs: it exists with its start time and is not a zombie (dead, waiting
    /// for its parent — or, orphaned, for init — to reap it).
    pub fn alive(&self) -> bool {
        stat_of(self.pid)
            .is_some_and(|(state, start)| start == self.start_time && state != 'Z' && state != 'X')
    }
}

/// The state directory (the system's, or another for tests).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateDir {
    path: PathBuf,
}

impl StateDir {
    /// [`STATE_DIR`].
    pub fn system() -> StateDir {
        StateDir::at(STATE_DIR)
    }

    pub fn at(path: impl Into<PathBuf>) -> StateDir {
        StateDir { path: path.into() }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates the directory if needed (mode 0755: records are readable by anyone).
    pub fn ensure(&self) -> io::Result<()> {
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o755)
            .create(&self.path)
            .map_err(|e| annotate(e, &self.path, "creating"))
    }

    /// The lock under which throttling is lifted or restored and runs are recovered.
    pub fn lock(&self) -> io::Result<StateLock> {
        self.ensure()?;
        let path = self.path.join("state.lock");
        let file = open_lock_file(&path)?;
        Flock::lock(file, FlockArg::LockExclusive)
            .map(StateLock)
            .map_err(|(_, e)| annotate(e.into(), &path, "locking"))
    }

    /// The record of the run whose executor is `pid`.
    pub fn record_path(&self, pid: i32) -> PathBuf {
        self.path.join(format!("run-{pid}.state"))
    }

    /// Every record in the directory (unreadable or malformed ones are skipped).
    pub fn records(&self) -> Vec<Recorded> {
        let Ok(entries) = fs::read_dir(&self.path) else {
            return Vec::new();
        };
        let mut out: Vec<Recorded> = entries
            .flatten()
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with("run-") && name.ends_with(".state")
            })
            .filter_map(|e| {
                let text = fs::read_to_string(e.path()).ok()?;
                Recorded::parse(e.path(), &text)
            })
            .collect();
        out.sort_by_key(|r| r.executor.pid);
        out
    }
}

/// Held while throttling is lifted or restored or runs are recovered.
pub struct StateLock(#[allow(dead_code)] Flock<File>);

fn open_lock_file(path: &Path) -> io::Result<File> {
    File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .open(path)
        .map_err(|e| annotate(e, path, "opening"))
}

fn annotate(e: io::Error, path: &Path, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// The record a run writes as it goes.
pub struct RunRecord {
    path: PathBuf,
    file: File,
}

impl RunRecord {
    /// Creates the record of the run of `executor` (with its `watchdog`) on `cpu`.
    pub fn create(
        dir: &StateDir,
        executor: Proc,
        watchdog: Proc,
        cpu: usize,
    ) -> io::Result<RunRecord> {
        dir.ensure()?;
        let path = dir.record_path(executor.pid);
        let mut file = File::options()
            .append(true)
            .create(true)
            .truncate(false)
            .mode(0o644)
            .open(&path)
            .map_err(|e| annotate(e, &path, "creating"))?;
        file.set_len(0)?;
        let header = format!(
            "executor {} {}\nwatchdog {} {}\ncpu {cpu}\n",
            executor.pid, executor.start_time, watchdog.pid, watchdog.start_time
        );
        file.write_all(header.as_bytes())
            .map_err(|e| annotate(e, &path, "writing"))?;
        Ok(RunRecord { path, file })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one thing to undo (one write of one line).
    pub fn append(&mut self, undo: &Undo) -> io::Result<()> {
        self.file
            .write_all(format!("{}\n", undo.to_line()).as_bytes())
            .map_err(|e| annotate(e, &self.path, "writing"))
    }
}

/// A record as read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Recorded {
    pub path: PathBuf,
    pub executor: Proc,
    pub watchdog: Option<Proc>,
    pub cpu: Option<usize>,
    pub undo: Vec<Undo>,
}

impl Recorded {
    /// Reads a record's text; `None` without its `executor` line. A torn last line (the
    /// run was killed while writing it) is skipped.
    pub fn parse(path: PathBuf, text: &str) -> Option<Recorded> {
        let proc_of = |rest: &str| {
            let (pid, start) = rest.split_once(' ')?;
            Some(Proc {
                pid: pid.parse().ok()?,
                start_time: start.parse().ok()?,
            })
        };
        let mut executor = None;
        let mut watchdog = None;
        let mut cpu = None;
        let mut undo = Vec::new();
        for line in text.lines() {
            match line.split_once(' ') {
                Some(("executor", rest)) => executor = proc_of(rest),
                Some(("watchdog", rest)) => watchdog = proc_of(rest),
                Some(("cpu", rest)) => cpu = rest.parse().ok(),
                _ => undo.extend(Undo::from_line(line)),
            }
        }
        Some(Recorded {
            path,
            executor: executor?,
            watchdog,
            cpu,
            undo,
        })
    }

    /// Its executor or its watchdog lives.
    pub fn live(&self) -> bool {
        self.executor.alive() || self.watchdog.is_some_and(|w| w.alive())
    }

    /// The throttling value it will restore, if it lifted throttling.
    pub fn rt_runtime(&self) -> Option<&str> {
        self.undo.iter().find_map(|u| match u {
            Undo::RtRuntime(v) => Some(v.as_str()),
            _ => None,
        })
    }
}

/// Another live run that holds throttling lifted (not the run recorded at `own`).
fn throttle_holder(dir: &StateDir, own: Option<&Path>) -> Option<Recorded> {
    dir.records()
        .into_iter()
        .filter(|r| Some(r.path.as_path()) != own)
        .find(|r| r.rt_runtime().is_some() && r.live())
}

/// What to restore after a run that lifts throttling now (call under [`StateDir::lock`],
/// before lifting): the value another live run recorded, if one holds it lifted (then
/// the value in force is that run's -1, not the machine's), else the value in force.
pub fn throttle_to_restore(dir: &StateDir, own: &Path) -> io::Result<String> {
    match throttle_holder(dir, Some(own)).and_then(|r| r.rt_runtime().map(str::to_string)) {
        Some(v) => Ok(v),
        None => Ok(fs::read_to_string(sys::RT_RUNTIME_PATH)?.trim().to_string()),
    }
}

/// RT throttling lifted (-1 in `sched_rt_runtime_us`) for as long as it lives; dropped,
/// it restores the value by [`restore_throttle`]'s rule.
pub struct LiftedThrottle {
    old: String,
    state: Option<StateDir>,
    record: Option<PathBuf>,
}

impl LiftedThrottle {
    /// Under the state lock (when there is a state directory): finds the value to restore
    /// ([`throttle_to_restore`]), hands it to `announce` (the watchdog and the record),
    /// then writes -1.
    pub fn lift(
        state: Option<&StateDir>,
        record: Option<&Path>,
        announce: impl FnOnce(&str) -> io::Result<()>,
    ) -> io::Result<LiftedThrottle> {
        let _lock = state.map(StateDir::lock).transpose()?;
        let old = match (state, record) {
            (Some(state), Some(record)) => throttle_to_restore(state, record)?,
            _ => fs::read_to_string(sys::RT_RUNTIME_PATH)?.trim().to_string(),
        };
        announce(&old)?;
        fs::write(sys::RT_RUNTIME_PATH, "-1")?;
        Ok(LiftedThrottle {
            old,
            state: state.cloned(),
            record: record.map(Path::to_path_buf),
        })
    }
}

impl Drop for LiftedThrottle {
    fn drop(&mut self) {
        restore_throttle(self.state.as_ref(), self.record.as_deref(), &self.old);
    }
}

/// What [`restore_throttle`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Restored {
    /// The value was written back.
    Written(String),
    /// Left lifted: the live run of this executor pid holds it.
    KeptFor(i32),
}

/// Writes `value` back to `sched_rt_runtime_us` unless another live run (not the one
/// recorded at `own`) holds throttling lifted. Takes the state lock; without a state
/// directory (no record was possible) it just writes.
pub fn restore_throttle(dir: Option<&StateDir>, own: Option<&Path>, value: &str) -> Restored {
    let _lock = dir.and_then(|d| d.lock().ok());
    if let Some(holder) = dir.and_then(|d| throttle_holder(d, own)) {
        return Restored::KeptFor(holder.executor.pid);
    }
    let _ = fs::write(sys::RT_RUNTIME_PATH, value);
    Restored::Written(value.to_string())
}

/// Undoes every abandoned run recorded in `dir` (and removes `rtvmm-<pid>` cgroups under
/// `cgroup_mount` that no record names and whose pid is dead); returns one line per
/// recovered run, saying what was done. Takes the state lock.
pub fn recover(dir: &StateDir, cgroup_mount: Option<&Path>) -> io::Result<Vec<String>> {
    if !dir.path().exists() && cgroup_mount.is_none() {
        return Ok(Vec::new());
    }
    let _lock = dir.lock()?;
    let mut said = Vec::new();
    let records = dir.records();
    // An executor on its way out whose real-time threads spin on: demoted so the kill
    // lands (see [`demote_threads`]); its watchdog, or the next recovery, undoes the rest.
    for r in records
        .iter()
        .filter(|r| dying(r.executor.pid, r.executor.start_time))
    {
        let _ = nix::sys::signal::kill(
            nix::unistd::Pid::from_raw(r.executor.pid),
            nix::sys::signal::Signal::SIGKILL,
        );
        let demoted = demote_threads(r.executor.pid);
        if demoted > 0 {
            said.push(format!(
                "demoted {demoted} real-time thread{} of the dying executor pid {}",
                if demoted == 1 { "" } else { "s" },
                r.executor.pid
            ));
        }
    }
    for r in records.iter().filter(|r| !r.live()) {
        let mut done = Vec::new();
        for u in &r.undo {
            match u {
                Undo::RunCgroup(p) if p.exists() => {
                    done.push(format!("thawed, emptied and removed {}", p.display()))
                }
                Undo::Guest { pid, start_time: t } if start_time(*pid) == Some(*t) => {
                    done.push(format!("killed guest {pid}"))
                }
                Undo::ExternalCgroup(p) => done.push(format!("thawed {}", p.display())),
                Undo::ExternalPid(pid) => done.push(format!("continued process {pid}")),
                _ => {}
            }
        }
        undo_domains(&r.undo);
        if let Some(v) = r.rt_runtime() {
            // The lock is held: check and write here.
            match throttle_holder(dir, Some(&r.path)) {
                Some(holder) => done.push(format!(
                    "left RT throttling lifted (the live run of pid {} holds it)",
                    holder.executor.pid
                )),
                None => {
                    let now = fs::read_to_string(sys::RT_RUNTIME_PATH).unwrap_or_default();
                    if now.trim() != v {
                        let _ = fs::write(sys::RT_RUNTIME_PATH, v);
                        done.push(format!("restored {} to {v}", sys::RT_RUNTIME_PATH));
                    }
                }
            }
        }
        let _ = fs::remove_file(&r.path);
        said.push(format!(
            "recovered the abandoned run of executor pid {}{}: {}",
            r.executor.pid,
            r.cpu.map(|c| format!(" (cpu {c})")).unwrap_or_default(),
            if done.is_empty() {
                "nothing was left to undo".to_string()
            } else {
                done.join(", ")
            }
        ));
    }
    if let Some(mount) = cgroup_mount {
        let named: Vec<&Path> = records
            .iter()
            .flat_map(|r| r.undo.iter())
            .filter_map(|u| match u {
                Undo::RunCgroup(p) => Some(p.as_path()),
                _ => None,
            })
            .collect();
        for (path, pid) in run_cgroups(mount) {
            if named.contains(&path.as_path()) || Path::new(&format!("/proc/{pid}")).exists() {
                continue;
            }
            let _ = cgroup::remove_tree(&path);
            said.push(format!(
                "removed {} (left by a dead run of pid {pid}, without a record): thawed, \
                 emptied and removed",
                path.display()
            ));
        }
    }
    Ok(said)
}

/// The `rtvmm-<pid>` cgroups directly under `mount`.
fn run_cgroups(mount: &Path) -> Vec<(PathBuf, i32)> {
    let Ok(entries) = fs::read_dir(mount) else {
        return Vec::new();
    };
    let mut out: Vec<(PathBuf, i32)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            let pid = name
                .to_string_lossy()
                .strip_prefix("rtvmm-")?
                .parse()
                .ok()?;
            e.file_type().ok()?.is_dir().then(|| (e.path(), pid))
        })
        .collect();
    out.sort_by_key(|(_, pid)| *pid);
    out
}

/// The exclusive hold of one cpu (see the design note).
pub struct CpuLock {
    lock: Flock<File>,
}

impl CpuLock {
    /// The lock's descriptor (for the watchdog to inherit).
    pub fn raw_fd(&self) -> RawFd {
        self.lock.as_raw_fd()
    }
}

/// Why a cpu could not be taken.
#[derive(Debug)]
pub enum CpuLockError {
    /// Another run holds it (its executor pid, as it wrote it).
    Busy {
        holder: Option<i32>,
    },
    Io(io::Error),
}

/// Takes `cpu` for this run (without waiting), writing our pid into the lock file.
pub fn lock_cpu(dir: &StateDir, cpu: usize) -> Result<CpuLock, CpuLockError> {
    dir.ensure().map_err(CpuLockError::Io)?;
    let path = dir.path().join(format!("cpu{cpu}.lock"));
    let file = open_lock_file(&path).map_err(CpuLockError::Io)?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(mut lock) => {
            let pid = std::process::id().to_string();
            let write = lock
                .set_len(0)
                .and_then(|_| lock.rewind())
                .and_then(|_| lock.write_all(pid.as_bytes()));
            write.map_err(|e| CpuLockError::Io(annotate(e, &path, "writing")))?;
            Ok(CpuLock { lock })
        }
        Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            Err(CpuLockError::Busy {
                holder: text.trim().parse().ok(),
            })
        }
        Err((_, e)) => Err(CpuLockError::Io(annotate(e.into(), &path, "locking"))),
    }
}

/// [`lock_cpu`], but a cpu whose holder is dead is waited for, up to `patience`: its
/// executor was killed and its watchdog (which inherited the lock) is still undoing the run
/// — a run started right after `kill -9` of another waits for the clean-up instead of
/// failing. A live holder is refused at once.
pub fn lock_cpu_after_the_dead(
    dir: &StateDir,
    cpu: usize,
    patience: std::time::Duration,
) -> Result<CpuLock, CpuLockError> {
    let deadline = std::time::Instant::now() + patience;
    loop {
        match lock_cpu(dir, cpu) {
            Err(CpuLockError::Busy { holder: Some(pid) })
                if !Proc::of(pid).is_some_and(|p| p.alive())
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> Proc {
        Proc::me()
    }

    fn dead() -> Proc {
        Proc {
            pid: i32::MAX,
            start_time: 1,
        }
    }

    #[test]
    fn a_record_reads_back_and_a_torn_last_line_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path());
        let mut record = RunRecord::create(&state, me(), dead(), 1).unwrap();
        record.append(&Undo::RtRuntime("950000".into())).unwrap();
        record
            .append(&Undo::RunCgroup("/sys/fs/cgroup/unified/rtvmm-7".into()))
            .unwrap();
        let mut text = fs::read_to_string(record.path()).unwrap();
        text.push_str("guest 12");
        let r = Recorded::parse(record.path().to_path_buf(), &text).unwrap();
        assert_eq!(r.executor, me());
        assert_eq!(r.watchdog, Some(dead()));
        assert_eq!(r.cpu, Some(1));
        assert_eq!(r.rt_runtime(), Some("950000"));
        assert_eq!(r.undo.len(), 2, "{:?}", r.undo);
        assert!(r.live(), "our own process is the executor");
        assert_eq!(state.records(), vec![r]);
        assert_eq!(Recorded::parse("x".into(), "cpu 1\n"), None);
    }

    #[test]
    fn a_run_is_live_while_its_executor_or_its_watchdog_lives() {
        let record = |executor, watchdog| Recorded {
            path: "x".into(),
            executor,
            watchdog,
            cpu: None,
            undo: vec![],
        };
        assert!(record(me(), Some(dead())).live());
        assert!(record(dead(), Some(me())).live());
        assert!(!record(dead(), Some(dead())).live());
        assert!(!record(dead(), None).live());
        let reused = Proc {
            start_time: me().start_time + 1,
            ..me()
        };
        assert!(!record(reused, None).live(), "a reused pid is not the run");
    }

    #[test]
    fn a_zombie_is_not_alive() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id() as i32;
        let it = Proc::of(pid).expect("just started");
        // Not reaped yet: a zombie once it has exited.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while stat_of(pid).is_some_and(|(s, _)| s != 'Z') && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert_eq!(stat_of(pid).map(|(s, _)| s), Some('Z'));
        assert!(!it.alive());
        child.wait().unwrap();
        assert!(!it.alive());
    }

    #[test]
    fn throttling_is_kept_for_another_live_run_and_its_value_is_the_one_to_restore() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path());
        // A live run (this process stands for its watchdog) holds throttling lifted.
        let mut other = RunRecord::create(&state, dead(), me(), 0).unwrap();
        other.append(&Undo::RtRuntime("950000".into())).unwrap();
        let own = state.record_path(4242);
        assert_eq!(throttle_to_restore(&state, &own).unwrap(), "950000");
        assert_eq!(
            throttle_holder(&state, Some(&own)).map(|r| r.executor.pid),
            Some(i32::MAX)
        );
        assert_eq!(
            throttle_holder(&state, Some(other.path())),
            None,
            "a run is not its own holder"
        );
        // Abandoned, it holds nothing.
        let mut abandoned =
            RunRecord::create(&state, Proc { pid: 7, ..dead() }, dead(), 1).unwrap();
        abandoned.append(&Undo::RtRuntime("950000".into())).unwrap();
        fs::remove_file(other.path()).unwrap();
        assert_eq!(throttle_holder(&state, Some(&own)), None);
    }

    #[test]
    fn a_second_lock_of_a_cpu_is_refused_naming_the_holder() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path());
        let held = lock_cpu(&state, 3).unwrap();
        match lock_cpu(&state, 3) {
            Err(CpuLockError::Busy { holder }) => {
                assert_eq!(holder, Some(std::process::id() as i32))
            }
            other => panic!("expected busy, got {:?}", other.err()),
        }
        assert!(lock_cpu(&state, 2).is_ok(), "another cpu is free");
        drop(held);
        assert!(lock_cpu(&state, 3).is_ok(), "released with its holder");
    }

    #[test]
    fn a_cpu_held_for_a_dead_executor_is_waited_for_and_a_live_one_refused_at_once() {
        use std::io::Write as _;
        use std::time::{Duration, Instant};
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path());
        let held = lock_cpu(&state, 4).unwrap();
        // A live holder (this process): refused without waiting.
        let began = Instant::now();
        assert!(matches!(
            lock_cpu_after_the_dead(&state, 4, Duration::from_secs(5)),
            Err(CpuLockError::Busy { holder: Some(_) })
        ));
        assert!(began.elapsed() < Duration::from_secs(4), "not waited for");
        // The holder's executor is dead (its watchdog still holds the lock): waited for
        // until the lock is let go.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(dir.path().join("cpu4.lock"))
            .unwrap();
        file.write_all(i32::MAX.to_string().as_bytes()).unwrap();
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(200));
            drop(held);
        });
        assert!(lock_cpu_after_the_dead(&state, 4, Duration::from_secs(30)).is_ok());
        releaser.join().unwrap();
    }

    #[test]
    fn recovery_without_anything_to_recover_says_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path().join("absent"));
        assert_eq!(recover(&state, None).unwrap(), Vec::<String>::new());
        let state = StateDir::at(dir.path());
        let mut live = RunRecord::create(&state, me(), dead(), 0).unwrap();
        live.append(&Undo::RunCgroup(dir.path().join("cg")))
            .unwrap();
        assert_eq!(recover(&state, None).unwrap(), Vec::<String>::new());
        assert!(live.path().exists(), "a live run's record stays");
    }

    #[test]
    fn an_abandoned_run_is_undone_and_its_record_removed() {
        let dir = tempfile::tempdir().unwrap();
        let state = StateDir::at(dir.path());
        let gone = dir.path().join("not-a-cgroup");
        let mut record = RunRecord::create(&state, dead(), dead(), 1).unwrap();
        record.append(&Undo::RunCgroup(gone.clone())).unwrap();
        let said = recover(&state, None).unwrap();
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains(&format!("pid {}", i32::MAX)), "{said:?}");
        assert!(said[0].contains("cpu 1"), "{said:?}");
        assert!(!record.path().exists());
    }
}
