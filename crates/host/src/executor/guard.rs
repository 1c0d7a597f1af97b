//! The resource guard: what a run changes on the machine and must undo — the managed
//! cpus' locks (one run per cpu), the run's record and its watchdog, the lifted RT throttling, the
//! run's cgroups. Taken before anything changes, in that order; dropped (undone) in its
//! fields' order at the end, after the guests, the socket and the seats' spinners (see
//! `Run`), or undone by the watchdog if the executor dies.

use crate::cgroup::RunCgroups;
use crate::runs::{self, CpuLock, CpuLockError, LiftedThrottle, StateDir};
use crate::sys;
use crate::undo::Undo;
use crate::watchdog::Watchdog;
use crate::HostError;

use super::control::LiveControl;
use super::preflight::Allowed;
use super::HostOptions;

/// What the run changed on the machine. Fields are dropped in declaration order: the
/// cgroups, the throttle, the watchdog, then the cpus' locks (which the watchdog holds
/// too, until it is done).
pub(super) struct Guard {
    pub(super) cgroups: Option<RunCgroups>,
    pub(super) throttle: Option<LiftedThrottle>,
    pub(super) watchdog: Watchdog,
    _cpu_locks: Vec<CpuLock>,
}

impl Guard {
    /// Takes the managed `cpus` for the run (the first one's record stands for the run)
    /// and everything the run will change, each announced to the watchdog (and the run's
    /// record) before it is changed.
    pub(super) fn take(
        cpus: &[usize],
        allowed: &Allowed,
        options: &HostOptions,
        control: Option<&LiveControl>,
    ) -> Result<Guard, HostError> {
        // One run per cpu; then what abandoned runs left is undone; then this run is
        // recorded (see `crate::runs`). Without a usable state directory (best effort, not
        // root) there is neither lock nor record.
        let state = StateDir::system();
        let patience = std::time::Duration::from_secs(5);
        let mut cpu_locks = Vec::with_capacity(cpus.len());
        let mut usable = Some(state);
        for &cpu in cpus {
            let Some(state) = &usable else { break };
            match runs::lock_cpu_after_the_dead(state, cpu, patience) {
                Ok(lock) => cpu_locks.push(lock),
                Err(CpuLockError::Busy { holder }) => {
                    return Err(HostError::CpuBusy { cpu, holder })
                }
                Err(CpuLockError::Io(_)) if !allowed.missing.is_empty() => {
                    cpu_locks.clear();
                    usable = None;
                }
                Err(CpuLockError::Io(e)) => return Err(HostError::io("the cpu's lock")(e)),
            }
        }
        let state = usable;
        if let Some(state) = &state {
            let mount = sys::cgroup2_mount();
            let recovered = runs::recover(state, mount.as_deref())
                .map_err(HostError::io("recovering abandoned runs"))?;
            for line in recovered {
                eprintln!("rtvmm: {line}");
            }
        }
        let mut watchdog = Watchdog::spawn(
            &options.helper,
            cpus,
            state.as_ref(),
            &cpu_locks.iter().map(CpuLock::raw_fd).collect::<Vec<_>>(),
        )
        .map_err(HostError::io("the watchdog"))?;
        if let Some(control) = control {
            let (dev, ino) = control.file_id();
            watchdog
                .announce(&Undo::Socket {
                    path: control.path().to_path_buf(),
                    dev,
                    ino,
                })
                .map_err(HostError::io("the watchdog"))?;
        }
        let throttle = if allowed.throttle {
            let record = state
                .as_ref()
                .map(|s| s.record_path(std::process::id() as i32));
            let lifted = LiftedThrottle::lift(state.as_ref(), record.as_deref(), |old| {
                watchdog.announce(&Undo::RtRuntime(old.to_string()))
            });
            Some(lifted.map_err(HostError::io(sys::RT_RUNTIME_PATH))?)
        } else {
            None
        };
        let cgroups = match &allowed.cgroup {
            Some(mount) => {
                let path = RunCgroups::path_for(mount, std::process::id());
                watchdog
                    .announce(&Undo::RunCgroup(path.clone()))
                    .map_err(HostError::io("the watchdog"))?;
                Some(RunCgroups::create(path).map_err(HostError::io("the run's cgroup"))?)
            }
            None => None,
        };
        Ok(Guard {
            cgroups,
            throttle,
            watchdog,
            _cpu_locks: cpu_locks,
        })
    }

    /// Undoes everything at a normal end (cgroups, then the throttle), then lets the
    /// watchdog check and go.
    pub(super) fn finish(self) {
        let Guard {
            cgroups,
            throttle,
            watchdog,
            _cpu_locks,
        } = self;
        drop(cgroups);
        drop(throttle);
        watchdog.finish();
    }
}
