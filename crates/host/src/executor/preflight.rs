//! What refuses a run before anything on the machine changes, in the order a user fixes
//! it: the cpus, the system (one managed cpu per pcpu, what the executor runs, the guests, the external domains, the
//! `xl` events), the control socket's path, the privileges, the enforcement backend.

use rtvmm_core::cpuset::CpuSet;
use rtvmm_system::{Change, SystemSpec};

use super::HostOptions;
use crate::ctl;
use crate::domain::check_runnable;
use crate::enforce::Backend;
use crate::sys::{self, MissingPrivilege};
use crate::HostError;

/// What this machine allows a run, after the privilege check.
#[derive(Clone, Debug)]
pub(super) struct Allowed {
    pub(super) fifo: bool,
    pub(super) throttle: bool,
    pub(super) mlock: bool,
    pub(super) cgroup: Option<std::path::PathBuf>,
    pub(super) missing: Vec<MissingPrivilege>,
}

/// Checks what would refuse any run with `options` before it starts: the cpus, the
/// privileges (unless `best_effort`), the enforcement backend — for a caller that runs
/// many systems (an experiment) and wants to refuse before the first. [`super::run`]
/// checks the same again, with the system.
pub fn check(options: &HostOptions) -> Result<(), HostError> {
    managed_cpus(options)?;
    allowed(options).map(|_| ())
}

/// The managed cpus, one per pcpu: `options.cpus` (`--cpus`), else `options.cpu`, else
/// the last cpu. Several are accepted only where the machine has at least one core to
/// spare beyond them (for the scheduler thread that drives them all, the watchdog, the
/// control socket's threads and the rest of the system), and each at most once.
pub(super) fn managed_cpus(options: &HostOptions) -> Result<Vec<usize>, HostError> {
    let count = sys::cpu_count();
    let cpus = match options.cpus.as_slice() {
        [] => vec![options.cpu.unwrap_or(count - 1)],
        cpus => cpus.to_vec(),
    };
    for &cpu in &cpus {
        if cpu >= count {
            return Err(HostError::NoSuchCpu { cpu, count });
        }
    }
    let list = || {
        cpus.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    if let Some(twice) = cpus
        .iter()
        .find(|c| cpus.iter().filter(|d| d == c).count() > 1)
    {
        return Err(HostError::Unsupported(format!(
            "--cpus {}: cpu {twice} is named twice",
            list()
        )));
    }
    if cpus.len() > 1 && cpus.len() >= count {
        return Err(HostError::Unsupported(format!(
            "--cpus {}: this machine has {count} cores (0-{}), and a run of {} pcpus needs at \
             least one core to spare beyond them (for the scheduler thread that drives every \
             pcpu, the watchdog and the rest of the system); give fewer cpus",
            list(),
            count - 1,
            cpus.len()
        )));
    }
    Ok(cpus)
}

/// Checks everything that can be refused before the run, in the order a user fixes
/// them: the cpu, the system (policy, guests, tasks), the privileges, the backend.
pub(super) fn preflight(
    system: &SystemSpec,
    options: &HostOptions,
) -> Result<(Vec<usize>, Allowed), HostError> {
    let cpus = managed_cpus(options)?;
    seats_for(system, &cpus)?;
    what_it_runs(system)?;
    let added = system.changes.iter().filter_map(|c| match &c.change {
        Change::AddDomain(d) => Some(d),
        _ => None,
    });
    // An `xl` event that names a pcpu this executor does not drive is refused before the
    // run (what the machine refuses was refused when the scenario was read).
    let probe = system
        .machine()
        .map_err(|e| HostError::Machine(e.to_string()))?;
    for c in &system.changes {
        if let Change::Xl(command) = &c.change {
            if let Some(why) = ctl::xl_refusal(&probe, driven(system), command) {
                return Err(HostError::Unsupported(format!(
                    "event at {}: xl `{command}`: {why}",
                    c.at
                )));
            }
        }
    }
    let mut declared = Vec::new();
    for d in system.domains.iter().chain(added) {
        declared.push(d.name.as_str());
        if options.external.contains_key(&d.name) {
            continue;
        }
        runnable_on(d, cpus.len()).map_err(|reason| HostError::Domain {
            domain: d.name.clone(),
            reason,
        })?;
    }
    let mount = sys::cgroup2_mount();
    for (name, source) in &options.external {
        let bad = |reason: String| HostError::Domain {
            domain: name.clone(),
            reason,
        };
        if !declared.contains(&name.as_str()) {
            return Err(bad("external, but not a domain of the system".into()));
        }
        let vcpus = system
            .domains
            .iter()
            .chain(system.changes.iter().filter_map(|c| match &c.change {
                Change::AddDomain(d) => Some(d),
                _ => None,
            }))
            .find(|d| &d.name == name)
            .map_or(1, |d| d.placement.vcpu_count());
        if vcpus > 1 {
            return Err(bad(format!(
                "external with vcpus = {vcpus}: an external domain is scheduled as one VCPU"
            )));
        }
        if cpus.len() > 1 {
            return Err(bad(format!(
                "external on a machine of {} pcpus: an external domain's threads are not \
                 moved between the seats' cpus (yet); run it on one pcpu",
                cpus.len()
            )));
        }
        crate::external::validate(source, mount.as_deref()).map_err(bad)?;
    }
    if let Some(control) = &options.control {
        if control
            .path()
            .as_os_str()
            .as_encoded_bytes()
            .contains(&b'\n')
        {
            return Err(HostError::Unsupported(format!(
                "--ctl {:?}: a newline in the socket's path (the watchdog, which removes it if \
                 the executor dies, reads paths one a line)",
                control.path()
            )));
        }
    }
    Ok((cpus, allowed(options)?))
}

/// Whether the executor can run domain `spec` as guest processes on `seats` seats: what
/// any run refuses ([`check_runnable`]). Every guest runs on any number of seats: a
/// process per VCPU for a partitioned or global guest of several VCPUs, each moved with
/// its VCPU ([`crate::global`] for a global one).
pub(super) fn runnable_on(
    spec: &rtvmm_core::model::DomainSpec,
    _seats: usize,
) -> Result<(), String> {
    check_runnable(spec)
}

/// The machine's pcpus, all driven by the executor.
pub(super) fn driven(system: &SystemSpec) -> CpuSet {
    CpuSet::first(system.machine.pcpus.min(CpuSet::MAX))
}

/// One seat per pcpu: the system's machine has as many pcpus as there are managed cpus
/// (`--cpus`, one per pcpu, in pcpu order), else it is refused naming both.
fn seats_for(system: &SystemSpec, cpus: &[usize]) -> Result<(), HostError> {
    let pcpus = system.machine.pcpus as usize;
    if pcpus == cpus.len() {
        return Ok(());
    }
    let list = cpus
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let cores = sys::cpu_count();
    Err(HostError::Unsupported(format!(
        "[machine] pcpus = {pcpus}, but {} managed cpu{} ({list}): the executor runs each \
         pcpu on a cpu of its own; give --cpus with {pcpus} cpus (this machine has {cores} \
         cores, 0-{}, and a run of several pcpus needs one more to spare beyond them)",
        cpus.len(),
        if cpus.len() == 1 { "" } else { "s" },
        cores - 1
    )))
}

/// What the executor runs: one pool of any number of pcpus (one seat each). Cpupools,
/// domains in a pool of their own, or chains are refused by name (the simulator runs
/// them). Domains of several VCPUs run ([`crate::domain::tasks_by_vcpu`]).
fn what_it_runs(system: &SystemSpec) -> Result<(), HostError> {
    let refuse = |what: String| {
        Err(HostError::Unsupported(format!(
            "{what}: the host executor runs one pool; simulate this system with `rtvmm sim`"
        )))
    };
    if !system.has_only_default_pool() {
        return refuse(format!("[[pool]] '{}'", system.pools[0].name));
    }
    if let Some(chain) = system.chains.first() {
        return refuse(format!(
            "[[chain]] '{}' (chains are measured in simulation)",
            chain.name
        ));
    }
    let added = system.changes.iter().filter_map(|c| match &c.change {
        Change::AddDomain(d) => Some(d),
        _ => None,
    });
    for d in system.domains.iter().chain(added) {
        let p = &d.placement;
        if let Some(pool) = &p.pool {
            return refuse(format!("domain '{}': pool = '{pool}'", d.name));
        }
    }
    Ok(())
}

/// The privileges: refused when one is missing (unless `best_effort`), then what the
/// backend needs (and external domains: `SCHED_RR`).
fn allowed(options: &HostOptions) -> Result<Allowed, HostError> {
    let needs_cgroup = options.backend == Backend::Freeze;
    let missing = sys::missing_privileges(&sys::Host, needs_cgroup);
    if !missing.is_empty() && !options.best_effort {
        return Err(HostError::Privileges(missing));
    }
    // With --best-effort: what can be had.
    let all = sys::missing_privileges(&sys::Host, true);
    let cgroup = sys::cgroup2_mount().filter(|m| {
        !all.iter().any(|p| {
            matches!(
                p,
                MissingPrivilege::Cgroup2NotFound | MissingPrivilege::Cgroup2NotWritable { .. }
            )
        }) && m.exists()
    });
    let allowed = Allowed {
        fifo: !missing.contains(&MissingPrivilege::RealTimeScheduling),
        throttle: !missing
            .iter()
            .any(|p| matches!(p, MissingPrivilege::RtThrottling { .. })),
        mlock: !missing.contains(&MissingPrivilege::MemoryLock),
        cgroup,
        missing,
    };
    if !allowed.fifo {
        if let Some(name) = options.external.keys().next() {
            return Err(HostError::Domain {
                domain: name.clone(),
                reason: "an external domain's threads are held by SCHED_RR priorities, \
                         which needs root or CAP_SYS_NICE (even with --best-effort)"
                    .into(),
            });
        }
    }
    match options.backend {
        Backend::Freeze if allowed.cgroup.is_none() => {
            return Err(HostError::BackendUnavailable {
                backend: "freeze",
                reason: "it needs a writable cgroup v2 file system (none found, or not \
                         writable); use --enforce band or signal"
                    .into(),
            })
        }
        Backend::Band if !allowed.fifo => {
            return Err(HostError::BackendUnavailable {
                backend: "band",
                reason: "it moves threads between SCHED_FIFO priorities, which needs root \
                         or CAP_SYS_NICE; use --enforce signal"
                    .into(),
            })
        }
        _ => {}
    }
    Ok(allowed)
}

#[cfg(test)]
mod tests {
    use rtvmm_core::guest::{GuestScheduler, GuestSmp, TaskSpec};
    use rtvmm_core::machine::{MachineConfig, PoolSpec};
    use rtvmm_core::model::{DomainSpec, VcpuParams};
    use rtvmm_core::policy::PolicyConfig;
    use rtvmm_core::Nanos;

    use super::*;

    fn system() -> SystemSpec {
        let ms = Nanos::from_ms;
        SystemSpec {
            domains: vec![DomainSpec {
                name: "d".into(),
                vcpu: VcpuParams::server(ms(2), ms(10), 1),
                guest: GuestScheduler::Rm,
                tasks: vec![TaskSpec::periodic("t", ms(10), ms(1))],
                placement: Default::default(),
            }],
            ..SystemSpec::one_pool(MachineConfig::default(), PolicyConfig::Deferrable)
        }
    }

    /// Several managed cpus are refused where the machine has no core to spare beyond
    /// them, naming the cores; a cpu named twice or missing is refused by number.
    #[test]
    fn several_cpus_need_a_core_to_spare() {
        let count = sys::cpu_count();
        let mut options = crate::executor::HostOptions::new(
            crate::HelperCommand {
                program: "/bin/false".into(),
                args: Vec::new(),
            },
            Nanos::from_ms(10),
        );
        options.cpus = (0..count).collect();
        let why = match managed_cpus(&options) {
            Err(HostError::Unsupported(why)) => why,
            other => panic!("not refused: {other:?}"),
        };
        let all = (0..count)
            .map(|c| c.to_string())
            .collect::<Vec<_>>()
            .join(",");
        assert!(
            why.starts_with(&format!(
                "--cpus {all}: this machine has {count} cores (0-{}), and a run of {count} \
                 pcpus needs at least one core to spare",
                count - 1
            )),
            "{why}"
        );
        options.cpus = vec![0, 0];
        assert!(
            matches!(managed_cpus(&options), Err(HostError::Unsupported(w)) if w.contains("cpu 0 is named twice"))
        );
        options.cpus = vec![0, count];
        assert!(matches!(
            managed_cpus(&options),
            Err(HostError::NoSuchCpu { .. })
        ));
        options.cpus = vec![count - 1];
        assert_eq!(managed_cpus(&options).unwrap(), vec![count - 1]);
    }

    /// A seat per pcpu: as many managed cpus as pcpus, else refused naming both.
    #[test]
    fn a_system_needs_one_managed_cpu_per_pcpu() {
        let machine = MachineConfig {
            pcpus: 2,
            ..MachineConfig::default()
        };
        let two = SystemSpec {
            domains: system().domains,
            ..SystemSpec::one_pool(machine, PolicyConfig::Deferrable)
        };
        assert!(seats_for(&two, &[0, 1]).is_ok());
        assert!(seats_for(&system(), &[1]).is_ok());
        let why = match seats_for(&two, &[1]) {
            Err(HostError::Unsupported(why)) => why,
            other => panic!("not refused: {other:?}"),
        };
        assert!(
            why.starts_with(
                "[machine] pcpus = 2, but 1 managed cpu (1): the executor runs each pcpu on a \
                 cpu of its own; give --cpus with 2 cpus"
            ),
            "{why}"
        );
        assert!(what_it_runs(&two).is_ok(), "several pcpus of one pool run");
        let mut pair = system().domains[0].clone();
        pair.placement.vcpus = 2;
        assert_eq!(runnable_on(&pair, 1), Ok(()), "a global guest on one pcpu");
        assert_eq!(runnable_on(&pair, 2), Ok(()), "a global guest on two pcpus");
        pair.placement.smp = GuestSmp::Partitioned;
        assert_eq!(runnable_on(&pair, 2), Ok(()), "a partitioned guest");
    }

    #[test]
    fn pools_and_chains_are_refused_by_name() {
        assert!(what_it_runs(&system()).is_ok());
        let refused = |s: &SystemSpec| match what_it_runs(s) {
            Err(HostError::Unsupported(why)) => why,
            other => panic!("not refused: {other:?}"),
        };
        let mut pooled = system();
        pooled.pools = vec![PoolSpec::new(
            "rt",
            rtvmm_core::cpuset::CpuSet::one(0),
            PolicyConfig::Deferrable,
        )];
        assert!(refused(&pooled).starts_with("[[pool]] 'rt'"));
        let mut multi = system();
        multi.domains[0].placement.vcpus = 2;
        assert!(what_it_runs(&multi).is_ok());
        assert_eq!(check_runnable(&multi.domains[0]), Ok(()), "a global guest");
        multi.domains[0].placement.smp = rtvmm_core::model::GuestSmp::Partitioned;
        assert_eq!(
            check_runnable(&multi.domains[0]),
            Ok(()),
            "a partitioned guest"
        );
    }
}
