//! The operating system, in the few calls the executor needs.
//!
//! # Design note
//! - **Clocks**: every instant is `CLOCK_MONOTONIC` nanoseconds ([`mono_ns`]); a job's
//!   execution is `CLOCK_THREAD_CPUTIME_ID` ([`thread_cpu_ns`]), so preemption does not
//!   distort it. Sleeps are absolute ([`sleep_until`]: `clock_nanosleep` with
//!   `TIMER_ABSTIME`), so lateness never accumulates.
//! - **Scheduling**: [`set_fifo`] puts a thread in `SCHED_FIFO` at a priority with
//!   `sched_setattr` (neither `nix` nor `libc` wraps it; `libc` has the struct and the
//!   number); [`pin_to`] sets affinity; [`lock_memory`] is `mlockall`.
//! - **RT throttling**: [`RT_RUNTIME_PATH`]; lifting and restoring it, shared between
//!   runs, is [`crate::runs`]'s.
//! - **cgroup v2** is found in `/proc/self/mountinfo` (fstype `cgroup2`), never assumed
//!   at a fixed path ([`cgroup2_mount`]).
//! - **Privileges** are checked before anything changes ([`missing_privileges`]), against
//!   an [`Environment`] trait so that the checker is tested with a fake one; each missing
//!   one is named ([`MissingPrivilege`]).
//! - **Steal time** of one cpu comes from `/proc/stat` ([`steal_ns`]).
//! - **Futexes** ([`futex_wait_until`], [`futex_wake_all`]): the IDLE spinner parks on
//!   one, and guest threads wait on one for their next release (so that the end of a run
//!   can wake them). No well-kept crate wraps `futex(2)` with an absolute timeout; this is
//!   the one hand-written syscall, a dozen lines.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU32;

use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::time::TimeSpec;
use nix::time::{clock_gettime, clock_nanosleep, ClockId, ClockNanosleepFlags};
use nix::unistd::Pid;

/// The file that limits real-time threads' share of each second.
pub const RT_RUNTIME_PATH: &str = "/proc/sys/kernel/sched_rt_runtime_us";

/// `CLOCK_MONOTONIC`, in nanoseconds.
#[inline]
pub fn mono_ns() -> u64 {
    let t = clock_gettime(ClockId::CLOCK_MONOTONIC).expect("CLOCK_MONOTONIC is always there");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

/// What one [`mono_ns`] costs on the calling thread: the median gap between two
/// back-to-back reads, over `pairs` pairs.
pub fn clock_read_cost(pairs: usize) -> u64 {
    let mut gaps: Vec<u64> = (0..pairs.max(1))
        .map(|_| {
            let a = mono_ns();
            mono_ns() - a
        })
        .collect();
    gaps.sort_unstable();
    gaps[gaps.len() / 2]
}

/// The calling thread's CPU time, in nanoseconds.
#[inline]
pub fn thread_cpu_ns() -> u64 {
    let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .expect("CLOCK_THREAD_CPUTIME_ID is always there");
    t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64
}

fn timespec(ns: u64) -> TimeSpec {
    TimeSpec::new(
        (ns / 1_000_000_000) as libc::time_t,
        (ns % 1_000_000_000) as libc::c_long,
    )
}

/// Sleeps until the monotonic clock reads `at_ns` (absolute; returns at once if past).
pub fn sleep_until(at_ns: u64) {
    let at = timespec(at_ns);
    while let Err(nix::errno::Errno::EINTR) = clock_nanosleep(
        ClockId::CLOCK_MONOTONIC,
        ClockNanosleepFlags::TIMER_ABSTIME,
        &at,
    ) {}
}

/// Number of cpus configured.
pub fn cpu_count() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Restricts thread `tid` (0: the caller) to `cpus`.
pub fn set_affinity(tid: i32, cpus: &[usize]) -> io::Result<()> {
    let mut set = CpuSet::new();
    for &cpu in cpus {
        set.set(cpu).map_err(io::Error::from)?;
    }
    sched_setaffinity(Pid::from_raw(tid), &set).map_err(io::Error::from)
}

/// The cpus thread `tid` may run on.
pub fn affinity_of(tid: i32) -> io::Result<Vec<usize>> {
    let set = nix::sched::sched_getaffinity(Pid::from_raw(tid)).map_err(io::Error::from)?;
    Ok((0..CpuSet::count())
        .filter(|&c| set.is_set(c).unwrap_or(false))
        .collect())
}

/// Pins thread `tid` (0: the caller) to `cpu`.
pub fn pin_to(tid: i32, cpu: usize) -> io::Result<()> {
    set_affinity(tid, &[cpu])
}

/// Every cpu but `cpu` (all of them if it is the only one): where the executor's helper
/// threads go, off the managed cpu.
pub fn cpus_except(cpu: usize) -> Vec<usize> {
    cpus_except_all(&[cpu])
}

/// Every cpu but `managed` (all of them if none is left): off the managed cpus.
pub fn cpus_except_all(managed: &[usize]) -> Vec<usize> {
    let all: Vec<usize> = (0..cpu_count()).collect();
    let others: Vec<usize> = all
        .iter()
        .copied()
        .filter(|c| !managed.contains(c))
        .collect();
    if others.is_empty() {
        all
    } else {
        others
    }
}

/// Pins every thread of process `pid` to `cpu` (a guest moving to another pcpu's cpu).
pub fn pin_process(pid: i32, cpu: usize) -> io::Result<()> {
    for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let tid = task?.file_name().to_string_lossy().parse::<i32>();
        if let Ok(tid) = tid {
            // A thread that exited meanwhile is no error.
            match pin_to(tid, cpu) {
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => {}
                other => other?,
            }
        }
    }
    Ok(())
}

/// Puts thread `tid` (0: the caller) in `SCHED_FIFO` at `priority` (1–99).
pub fn set_fifo(tid: i32, priority: u32) -> io::Result<()> {
    set_policy(tid, libc::SCHED_FIFO as u32, priority)
}

/// Puts thread `tid` back in `SCHED_OTHER` (nice 0).
pub fn set_other(tid: i32) -> io::Result<()> {
    set_policy(tid, libc::SCHED_OTHER as u32, 0)
}

fn set_policy(tid: i32, policy: u32, priority: u32) -> io::Result<()> {
    set_sched(
        tid,
        &Sched {
            policy,
            nice: 0,
            priority,
        },
        false,
    )
}

/// A thread's scheduling policy as `sched_getattr` gives it (what an external domain's
/// threads get back at the end).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sched {
    /// `SCHED_*`.
    pub policy: u32,
    pub nice: i32,
    pub priority: u32,
}

/// Thread `tid`'s policy, nice value and priority.
pub fn sched_of(tid: i32) -> io::Result<Sched> {
    // SAFETY: a zeroed `sched_attr` is valid; the kernel writes at most `size` bytes into
    // it, and it outlives the call.
    let mut attr: libc::sched_attr = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::sched_attr>() as libc::c_uint;
    // SAFETY: as above.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid as libc::c_long,
            &mut attr as *mut libc::sched_attr,
            size,
            0 as libc::c_uint,
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Sched {
        policy: attr.sched_policy,
        nice: attr.sched_nice,
        priority: attr.sched_priority,
    })
}

/// Sets thread `tid`'s policy, nice value and priority; `reset_on_fork`: threads it
/// creates start in `SCHED_OTHER` instead of inheriting a real-time policy.
pub fn set_sched(tid: i32, sched: &Sched, reset_on_fork: bool) -> io::Result<()> {
    let attr = libc::sched_attr {
        size: std::mem::size_of::<libc::sched_attr>() as u32,
        sched_policy: sched.policy,
        sched_flags: if reset_on_fork {
            libc::SCHED_FLAG_RESET_ON_FORK as u64
        } else {
            0
        },
        sched_nice: sched.nice,
        sched_priority: sched.priority,
        sched_runtime: 0,
        sched_deadline: 0,
        sched_period: 0,
    };
    // SAFETY: `attr` is a valid, initialised `sched_attr` that outlives the call; the
    // kernel only reads it.
    let r = unsafe {
        libc::syscall(
            libc::SYS_sched_setattr,
            tid as libc::c_long,
            &attr as *const libc::sched_attr,
            0 as libc::c_uint,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The scheduling policy and priority of thread `tid`: (`SCHED_*`, priority).
pub fn policy_of(tid: i32) -> io::Result<(i32, i32)> {
    // SAFETY: plain syscalls on a thread id; no memory is passed but `param`, which
    // outlives the call.
    unsafe {
        let policy = libc::sched_getscheduler(tid);
        if policy < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut param = libc::sched_param { sched_priority: 0 };
        if libc::sched_getparam(tid, &mut param) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok((policy & !libc::SCHED_RESET_ON_FORK, param.sched_priority))
    }
}

/// Locks the process's memory, present and future (no page fault in the loop).
pub fn lock_memory() -> io::Result<()> {
    use nix::sys::mman::{mlockall, MlockAllFlags};
    mlockall(MlockAllFlags::MCL_CURRENT | MlockAllFlags::MCL_FUTURE).map_err(io::Error::from)
}

/// The calling thread's id.
pub fn gettid() -> i32 {
    nix::unistd::gettid().as_raw()
}

/// Where cgroup v2 is mounted, from a mountinfo text (`/proc/self/mountinfo`): the mount
/// point of the first `cgroup2` entry.
pub fn cgroup2_mount_in(mountinfo: &str) -> Option<PathBuf> {
    for line in mountinfo.lines() {
        // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER"
        let Some((before, after)) = line.split_once(" - ") else {
            continue;
        };
        if after.split_whitespace().next() != Some("cgroup2") {
            continue;
        }
        let mount = before.split_whitespace().nth(4)?;
        return Some(PathBuf::from(unescape_mount(mount)));
    }
    None
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape_mount(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\' && i + 4 <= bytes.len() {
            let octal = std::str::from_utf8(&bytes[i + 1..i + 4]).ok();
            if let Some(v) = octal.and_then(|o| u8::from_str_radix(o, 8).ok()) {
                out.push(v);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where cgroup v2 is mounted on this machine, if anywhere.
pub fn cgroup2_mount() -> Option<PathBuf> {
    cgroup2_mount_in(&fs::read_to_string("/proc/self/mountinfo").ok()?)
}

/// The host's steal time on `cpu` so far, in nanoseconds (`/proc/stat`, the eighth value
/// of the `cpuN` line, in clock ticks). `None` when the kernel does not say.
pub fn steal_ns(cpu: usize) -> Option<u64> {
    let stat = fs::read_to_string("/proc/stat").ok()?;
    steal_ticks_in(&stat, cpu).map(|ticks| ticks * (1_000_000_000 / clock_ticks_per_second()))
}

/// The steal ticks of `cpu` in a `/proc/stat` text.
pub fn steal_ticks_in(stat: &str, cpu: usize) -> Option<u64> {
    let name = format!("cpu{cpu}");
    let line = stat
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name.as_str()))?;
    line.split_whitespace().nth(8)?.parse().ok()
}

fn clock_ticks_per_second() -> u64 {
    // SAFETY: sysconf reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as u64
    } else {
        100
    }
}

/// Waits while `*word == expected`, until woken or until the monotonic clock reads
/// `until_ns` (absolute; `None`: no limit). `shared`: the word is in memory shared between
/// processes. Returns early on a wake, a signal, or a changed word.
pub fn futex_wait_until(word: &AtomicU32, expected: u32, until_ns: Option<u64>, shared: bool) {
    let op = libc::FUTEX_WAIT_BITSET | if shared { 0 } else { libc::FUTEX_PRIVATE_FLAG };
    let ts = until_ns.map(|ns| libc::timespec {
        tv_sec: (ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (ns % 1_000_000_000) as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned u32; `ts_ptr` is null or points to a timespec that
    // outlives the call. FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            expected,
            ts_ptr,
            std::ptr::null::<u32>(),
            libc::FUTEX_BITSET_MATCH_ANY,
        );
    }
}

/// Wakes every waiter on `word` (see [`futex_wait_until`]).
pub fn futex_wake_all(word: &AtomicU32, shared: bool) {
    let op = libc::FUTEX_WAKE | if shared { 0 } else { libc::FUTEX_PRIVATE_FLAG };
    // SAFETY: `word` is a live, aligned u32; FUTEX_WAKE reads nothing else.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), op, i32::MAX);
    }
}

/// A privilege the executor needs and does not have.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MissingPrivilege {
    #[error(
        "real-time scheduling: SCHED_FIFO needs root or CAP_SYS_NICE (run as root, or \
         `setcap cap_sys_nice+ep` on the binary)"
    )]
    RealTimeScheduling,
    #[error(
        "RT throttling: {path} is not writable (root needed to lift the 50 ms/s limit on \
         real-time threads)"
    )]
    RtThrottling { path: String },
    #[error("memory locking: mlockall needs root or CAP_IPC_LOCK")]
    MemoryLock,
    #[error(
        "cgroup v2: no cgroup2 file system is mounted (see /proc/self/mountinfo); the \
         freeze backend needs one (or use --enforce band or signal)"
    )]
    Cgroup2NotFound,
    #[error(
        "cgroup v2: {path} is not writable (root needed to create the run's cgroups; the \
         freeze backend needs them)"
    )]
    Cgroup2NotWritable { path: String },
}

/// What the privilege check looks at; [`Host`] is the real machine, tests use fakes.
pub trait Environment {
    /// The effective user id.
    fn euid(&self) -> u32;
    /// The effective capability set (`CapEff` of `/proc/self/status`).
    fn effective_capabilities(&self) -> u64;
    /// Whether the calling process may write `path`.
    fn writable(&self, path: &Path) -> bool;
    /// Where cgroup v2 is mounted.
    fn cgroup2_mount(&self) -> Option<PathBuf>;
}

/// The machine this runs on.
pub struct Host;

const CAP_IPC_LOCK: u32 = 14;
const CAP_SYS_NICE: u32 = 23;

impl Environment for Host {
    fn euid(&self) -> u32 {
        nix::unistd::geteuid().as_raw()
    }
    fn effective_capabilities(&self) -> u64 {
        fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("CapEff:"))
                    .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            })
            .unwrap_or(0)
    }
    fn writable(&self, path: &Path) -> bool {
        nix::unistd::access(path, nix::unistd::AccessFlags::W_OK).is_ok()
    }
    fn cgroup2_mount(&self) -> Option<PathBuf> {
        cgroup2_mount()
    }
}

/// Every privilege a run with `needs_cgroup` (the freeze backend, or external cgroups)
/// lacks on `env`, in a fixed order. Empty: the run may start.
pub fn missing_privileges(env: &dyn Environment, needs_cgroup: bool) -> Vec<MissingPrivilege> {
    let root = env.euid() == 0;
    let caps = env.effective_capabilities();
    let has = |cap: u32| root || caps & (1 << cap) != 0;
    let mut missing = Vec::new();
    if !has(CAP_SYS_NICE) {
        missing.push(MissingPrivilege::RealTimeScheduling);
    }
    if !env.writable(Path::new(RT_RUNTIME_PATH)) {
        missing.push(MissingPrivilege::RtThrottling {
            path: RT_RUNTIME_PATH.to_string(),
        });
    }
    if !has(CAP_IPC_LOCK) {
        missing.push(MissingPrivilege::MemoryLock);
    }
    if needs_cgroup {
        match env.cgroup2_mount() {
            None => missing.push(MissingPrivilege::Cgroup2NotFound),
            Some(mount) if !env.writable(&mount) => {
                missing.push(MissingPrivilege::Cgroup2NotWritable {
                    path: mount.display().to_string(),
                })
            }
            Some(_) => {}
        }
    }
    missing
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake {
        euid: u32,
        caps: u64,
        writable: Vec<PathBuf>,
        cgroup2: Option<PathBuf>,
    }

    impl Environment for Fake {
        fn euid(&self) -> u32 {
            self.euid
        }
        fn effective_capabilities(&self) -> u64 {
            self.caps
        }
        fn writable(&self, path: &Path) -> bool {
            self.writable.iter().any(|p| p == path)
        }
        fn cgroup2_mount(&self) -> Option<PathBuf> {
            self.cgroup2.clone()
        }
    }

    fn root() -> Fake {
        Fake {
            euid: 0,
            caps: 0,
            writable: vec![RT_RUNTIME_PATH.into(), "/sys/fs/cgroup/unified".into()],
            cgroup2: Some("/sys/fs/cgroup/unified".into()),
        }
    }

    #[test]
    fn root_with_cgroup2_lacks_nothing() {
        assert_eq!(missing_privileges(&root(), true), vec![]);
    }

    #[test]
    fn an_unprivileged_user_is_told_each_missing_privilege_by_name() {
        let user = Fake {
            euid: 1000,
            caps: 0,
            writable: vec![],
            ..root()
        };
        let missing = missing_privileges(&user, true);
        assert_eq!(
            missing,
            vec![
                MissingPrivilege::RealTimeScheduling,
                MissingPrivilege::RtThrottling {
                    path: RT_RUNTIME_PATH.into()
                },
                MissingPrivilege::MemoryLock,
                MissingPrivilege::Cgroup2NotWritable {
                    path: "/sys/fs/cgroup/unified".into()
                },
            ]
        );
        assert!(missing[0].to_string().contains("CAP_SYS_NICE"));
        assert!(missing[1].to_string().contains("sched_rt_runtime_us"));
    }

    #[test]
    fn cap_sys_nice_alone_grants_real_time_scheduling_but_not_the_rest() {
        let user = Fake {
            euid: 1000,
            caps: 1 << CAP_SYS_NICE,
            writable: vec![],
            cgroup2: None,
        };
        let missing = missing_privileges(&user, false);
        assert!(!missing.contains(&MissingPrivilege::RealTimeScheduling));
        assert!(missing.contains(&MissingPrivilege::MemoryLock));
        let missing = missing_privileges(&user, true);
        assert!(missing.contains(&MissingPrivilege::Cgroup2NotFound));
    }

    #[test]
    fn cgroup2_is_found_in_mountinfo_wherever_it_is_mounted() {
        let text = "\
25 30 0:21 / /sys rw,nosuid shared:7 - sysfs sysfs rw
31 25 0:26 / /sys/fs/cgroup ro shared:9 - tmpfs tmpfs ro,mode=755
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime shared:10 - cgroup2 cgroup2 rw
42 31 0:39 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu
";
        assert_eq!(
            cgroup2_mount_in(text),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(
            cgroup2_mount_in("42 31 0:39 / /x rw - cgroup cgroup rw"),
            None
        );
        assert_eq!(
            cgroup2_mount_in("41 31 0:38 / /my\\040cg rw - cgroup2 none rw"),
            Some(PathBuf::from("/my cg"))
        );
    }

    #[test]
    fn steal_is_the_eighth_value_of_the_cpus_line() {
        let stat =
            "cpu  1 2 3 4 5 6 7 99 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\ncpu1 1 2 3 4 5 6 7 42 0 0\n";
        assert_eq!(steal_ticks_in(stat, 1), Some(42));
        assert_eq!(steal_ticks_in(stat, 0), Some(8));
        assert_eq!(steal_ticks_in(stat, 2), None);
    }
}
