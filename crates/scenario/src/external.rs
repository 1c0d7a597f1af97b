//! External domains: a `[[domain]]` whose workload is not described by tasks but already
//! runs on the machine — a cgroup (`attach = "/sys/fs/cgroup/.../vm1"`) or a list of
//! processes (`pids = [1234, 1240]`), for example a QEMU virtual machine or a container.
//!
//! # Design note
//! This is the one home of the kind: the reader puts it in [`Scenario::external`] (keyed
//! by domain name, which the file keeps unique, added domains included), the serializer
//! writes it back, the host executor (`rtvmm-host`) attaches it. The domain's
//! [`DomainSpec`](rtvmm_system::DomainSpec) is an ordinary VCPU with no tasks: to the
//! scheduling core an external domain is a VCPU whose wake and block its driver reports,
//! and the core knows nothing of processes.
//!
//! The simulator cannot run an external domain: its workload is unknown. Simulating it
//! as idle (no tasks) or as always busy would print figures that look measured and are
//! invented, so [`Scenario::simulable`] refuses, naming the domain (`rtvmm sim` and
//! `rtvmm_sim::run::run` call it); `rtvmm check` still prints the file.
//!
//! What the file says is checked here (an absolute path without a newline; process ids
//! from 1 to 2³¹−1, at least one, none twice). Whether the cgroup or the processes exist
//! is the executor's to check when it starts: a file may be written on one machine and
//! run on another.

use std::fmt;
use std::path::PathBuf;

use crate::error::{ErrorKind, Location, ScenarioError};
use crate::Scenario;

/// Where an external domain's threads are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum External {
    /// An existing cgroup v2 directory (its whole subtree): `attach = "PATH"`.
    Cgroup(PathBuf),
    /// Existing processes (each with all its threads): `pids = [..]`.
    Pids(Vec<i32>),
}

impl External {
    /// The key that declares it in the file.
    pub fn field(&self) -> &'static str {
        match self {
            External::Cgroup(_) => "attach",
            External::Pids(_) => "pids",
        }
    }
}

impl fmt::Display for External {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            External::Cgroup(path) => write!(f, "cgroup {}", path.display()),
            External::Pids(pids) => {
                let list: Vec<String> = pids.iter().map(i32::to_string).collect();
                write!(f, "pids {}", list.join(", "))
            }
        }
    }
}

impl Scenario {
    /// `Ok` when the simulator can run every domain of the file; else an error naming the
    /// first external domain (in name order).
    pub fn simulable(&self) -> Result<(), ScenarioError> {
        match self.external.iter().next() {
            None => Ok(()),
            Some((name, external)) => Err(ScenarioError::new(
                &self.file,
                Location::default(),
                ErrorKind::External {
                    domain: name.clone(),
                    field: external.field(),
                },
            )),
        }
    }
}

/// Reads `attach` and `pids` of a domain at `here`: `None` for a domain of tasks.
pub(crate) fn read(
    file: &str,
    here: &Location,
    attach: Option<String>,
    pids: Option<Vec<i64>>,
    has_tasks: bool,
    has_guest: bool,
) -> Result<Option<External>, ScenarioError> {
    let err = |field: &str, kind| ScenarioError::new(file, here.field(field), kind);
    let external = match (attach, pids) {
        (None, None) => return Ok(None),
        (Some(_), Some(_)) => return Err(err("attach", ErrorKind::Conflict { other: "pids" })),
        (Some(path), None) => {
            let invalid = |why: &str| err("attach", ErrorKind::Invalid(why.to_string()));
            if path.trim().is_empty() {
                return Err(invalid("must not be empty"));
            }
            if path.contains('\n') {
                return Err(invalid("a path with a newline is not accepted"));
            }
            let path = PathBuf::from(path);
            if !path.is_absolute() {
                return Err(invalid(&format!(
                    "'{}' is not an absolute path: give the cgroup's directory, for example \
                     \"/sys/fs/cgroup/unified/vm1\"",
                    path.display()
                )));
            }
            External::Cgroup(path)
        }
        (None, Some(list)) => {
            if list.is_empty() {
                return Err(err(
                    "pids",
                    ErrorKind::Invalid("must list at least one process id".into()),
                ));
            }
            let mut pids = Vec::with_capacity(list.len());
            for value in list {
                let pid = i32::try_from(value)
                    .ok()
                    .filter(|&p| p > 0)
                    .ok_or_else(|| {
                        err(
                            "pids",
                            ErrorKind::OutOfRange {
                                value: value.to_string(),
                                expected: "a process id from 1 to 2147483647",
                            },
                        )
                    })?;
                if pids.contains(&pid) {
                    return Err(err(
                        "pids",
                        ErrorKind::Invalid(format!("process {pid} is listed twice")),
                    ));
                }
                pids.push(pid);
            }
            External::Pids(pids)
        }
    };
    if has_tasks {
        return Err(err(external.field(), ErrorKind::ExternalWithTasks));
    }
    if has_guest {
        return Err(err(
            "guest",
            ErrorKind::NotUsed {
                why: format!(
                    "an external domain ({}) runs its own guest; rtvmm schedules only its VCPU",
                    external.field()
                ),
            },
        ));
    }
    Ok(Some(external))
}
