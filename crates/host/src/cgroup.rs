//! The run's cgroups (v2): one parent per run under the cgroup2 mount, one child per
//! process domain.
//!
//! # Design note
//! The parent is `<mount>/rtvmm-<executor pid>`; a domain's cgroup is `<parent>/<index>`.
//! Creating them needs nothing from the v2 controllers (the freezer and `cgroup.kill` are
//! core v2 features), so they work in a hybrid layout whose v2 tree has no controllers.
//! [`remove_tree`] is the one clean-up, used by the executor when its [`RunCgroups`] is
//! dropped and by the watchdog if the executor died: thaw every cgroup, kill what is
//! left inside (`cgroup.kill`, or SIGKILL to each member where the kernel lacks it), wait
//! for them to empty, remove them leaves first. It is idempotent.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The run's parent cgroup; removed with everything in it when dropped.
pub struct RunCgroups {
    parent: PathBuf,
}

impl RunCgroups {
    /// The path a run of process `pid` uses under `mount` (to announce before creating).
    pub fn path_for(mount: &Path, pid: u32) -> PathBuf {
        mount.join(format!("rtvmm-{pid}"))
    }

    /// Creates the parent (fails if it exists: another run of this pid's).
    pub fn create(parent: PathBuf) -> io::Result<RunCgroups> {
        fs::create_dir(&parent).map_err(|e| annotate(e, &parent, "creating"))?;
        Ok(RunCgroups { parent })
    }

    pub fn path(&self) -> &Path {
        &self.parent
    }

    /// A child cgroup for a domain, holding `pid`.
    pub fn add(&self, name: &str, pid: i32) -> io::Result<PathBuf> {
        let dir = self.parent.join(name);
        fs::create_dir(&dir).map_err(|e| annotate(e, &dir, "creating"))?;
        let procs = dir.join("cgroup.procs");
        fs::write(&procs, pid.to_string()).map_err(|e| annotate(e, &procs, "writing"))?;
        Ok(dir)
    }
}

impl RunCgroups {
    /// An empty child cgroup (an external domain's, its processes moved in one by one).
    pub fn add_empty(&self, name: &str) -> io::Result<PathBuf> {
        let dir = self.parent.join(name);
        fs::create_dir(&dir).map_err(|e| annotate(e, &dir, "creating"))?;
        Ok(dir)
    }
}

impl Drop for RunCgroups {
    fn drop(&mut self) {
        let _ = remove_tree(&self.parent);
    }
}

fn annotate(e: io::Error, path: &Path, what: &str) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// Sets a cgroup's `cgroup.freeze`.
pub fn set_frozen(cgroup: &Path, frozen: bool) -> io::Result<()> {
    fs::write(cgroup.join("cgroup.freeze"), if frozen { "1" } else { "0" })
}

/// Whether the cgroup (or a descendant) holds a process (`cgroup.events`).
pub fn populated(cgroup: &Path) -> bool {
    fs::read_to_string(cgroup.join("cgroup.events"))
        .map(|e| e.lines().any(|l| l == "populated 1"))
        .unwrap_or(false)
}

/// The processes of a cgroup (`cgroup.procs`).
pub fn procs(cgroup: &Path) -> Vec<i32> {
    fs::read_to_string(cgroup.join("cgroup.procs"))
        .map(|t| t.lines().filter_map(|l| l.trim().parse().ok()).collect())
        .unwrap_or_default()
}

/// Every cgroup of a tree, deepest first.
fn tree(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(root) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(tree(&e.path()));
            }
        }
    }
    out.push(root.to_path_buf());
    out
}

/// Thaws, empties (killing what is inside) and removes a cgroup tree. Idempotent; a tree
/// that is not there is fine.
pub fn remove_tree(root: &Path) -> io::Result<()> {
    if !root.exists() {
        return Ok(());
    }
    let all = tree(root);
    for cg in &all {
        let _ = set_frozen(cg, false);
    }
    if fs::write(root.join("cgroup.kill"), "1").is_err() {
        for cg in &all {
            for pid in procs(cg) {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while populated(root) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut last = Ok(());
    for cg in &all {
        if let Err(e) = fs::remove_dir(cg) {
            if e.kind() != io::ErrorKind::NotFound {
                last = Err(annotate(e, cg, "removing"));
            }
        }
    }
    last
}

/// Moves process `pid` (all its threads) into `cgroup`.
pub fn move_process(pid: i32, cgroup: &Path) -> io::Result<()> {
    let procs = cgroup.join("cgroup.procs");
    fs::write(&procs, pid.to_string()).map_err(|e| annotate(e, &procs, "writing"))
}

/// Moves every process of `from` into `to` (or, where that fails — `to` is gone — into
/// the root of `from`'s hierarchy): an external process is never left where it would be
/// killed.
pub fn evacuate(from: &Path, to: &Path) {
    for pid in procs(from) {
        if move_process(pid, to).is_err() {
            if let Some(root) = crate::sys::cgroup2_mount() {
                let _ = move_process(pid, &root);
            }
        }
    }
}

/// The cgroup v2 directory process `pid` is in (`0::/path` of `/proc/PID/cgroup`, under
/// the cgroup2 mount `mount`).
pub fn cgroup_of(pid: i32, mount: &Path) -> io::Result<PathBuf> {
    let text = fs::read_to_string(format!("/proc/{pid}/cgroup"))?;
    let path = text
        .lines()
        .find_map(|l| l.strip_prefix("0::"))
        .ok_or_else(|| io::Error::other(format!("process {pid}: no cgroup v2 line")))?;
    Ok(mount.join(path.trim_start_matches('/')))
}

/// Whether `dir` is on a cgroup v2 file system.
pub fn is_cgroup2(dir: &Path) -> bool {
    nix::sys::statfs::statfs(dir)
        .map(|s| s.filesystem_type() == nix::sys::statfs::CGROUP2_SUPER_MAGIC)
        .unwrap_or(false)
}
