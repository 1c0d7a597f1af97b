//! The one change path: how a [`Change`] — new parameters for a domain, a policy swap, a
//! domain joining or leaving, an `xl` command — becomes calls on a [`Machine`].
//!
//! The simulator, the host executor and the scenario reader (which replays a file's
//! events on a machine without work to check them) all call [`apply_change`]. It decides
//! everything the machine and the table of domains see; a driver acts only on the
//! [`Applied`] outcome — starts a guest for a domain that joined, ends the one of a
//! domain that left — so one scenario means the same thing in every driver.
//!
//! Rules, each the same for every driver:
//! - A change is all or nothing: a refused change ([`ChangeError`]) leaves the machine and
//!   the table as they were.
//! - `SetParams` gives every VCPU of the domain the new parameters (all are checked by
//!   their pool's policy before any is adjusted), as `xl sched-rtds -d D` without `-v`
//!   does in Xen: there the command without a VCPU sets every VCPU of the domain.
//! - A domain joins its pool (the first pool when it names none) with one VCPU per
//!   [`DomainSpec::placement`]'s count, each with its own affinity; its guest's shape
//!   (VCPUs, tasks pinned within them) is checked before any VCPU is added.
//! - After any change that touches a domain's VCPUs, the domain's spec carries the
//!   parameters of its first VCPU (what results and a printed scenario report).

use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::guest::{Guest, GuestError};
use rtvmm_core::machine::{Machine, MachineError};
use rtvmm_core::model::{DomainId, DomainSpec, VcpuId};
use rtvmm_core::policy::PolicySettings;
use rtvmm_core::Nanos;

use crate::spec::Change;
use crate::xl::{apply_xl, set_params, XlApplyError};

/// The domains a driver runs, as the change path sees them. Indices are the order in
/// which domains joined (a domain's [`DomainId`] is its index) and are never reused: a
/// domain that left keeps its index, and only present domains are found by name.
pub trait DomainTable {
    /// The present domain named `name`: its index and its VCPUs, in VCPU order.
    fn find(&self, name: &str) -> Option<(usize, &[VcpuId])>;
    /// How many domains have joined so far (present or not): the next one's index.
    fn joined(&self) -> usize;
    /// The spec of domain `index`, to keep its VCPU parameters current.
    fn spec_mut(&mut self, index: usize) -> &mut DomainSpec;
}

/// What a change did; what the driver has to act on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Applied {
    /// A domain joined with these VCPUs (in VCPU order). The driver adds it to its table
    /// at index [`DomainTable::joined`] and starts its guest.
    Added {
        spec: DomainSpec,
        vcpus: Vec<VcpuId>,
    },
    /// Domain `index` left: its VCPUs are gone from the machine. The driver ends its
    /// guest and stops finding it by name.
    Removed { index: usize, vcpus: Vec<VcpuId> },
    /// The machine changed (parameters, affinity, pools, the policy); domain `index`, when
    /// the change named one, has its spec updated already. Nothing for a driver to start
    /// or end.
    Reconfigured { index: Option<usize> },
}

/// Why a change was refused; nothing changed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChangeError {
    #[error("change at {at}: no domain named '{domain}'")]
    UnknownDomain { at: Nanos, domain: String },
    #[error("change at {at}: a domain named '{domain}' exists already")]
    DuplicateDomain { at: Nanos, domain: String },
    #[error("domain '{domain}': {error}")]
    Guest { domain: String, error: GuestError },
    #[error(
        "domain '{domain}': affinity of vcpu {vcpu}: pcpu {pcpu} is not a pcpu of the machine \
         (at most {max})",
        max = CpuSet::MAX
    )]
    AffinityOutOfRange {
        domain: String,
        vcpu: u32,
        pcpu: u32,
    },
    // `error`, not `source`: the message includes it, and a reporter walking the chain
    // would print it twice.
    /// The machine refused a domain's VCPUs or their parameters.
    #[error("domain '{domain}': {error}")]
    Machine { domain: String, error: MachineError },
    /// The machine refused a policy swap.
    #[error(transparent)]
    Swap(MachineError),
    #[error(transparent)]
    Xl(#[from] XlApplyError),
}

/// Applies `change` at `now` to `machine` and `table` (see the module doc for the rules).
/// `settings` configure a pool an `xl cpupool-create` makes.
pub fn apply_change(
    machine: &mut Machine,
    table: &mut impl DomainTable,
    now: Nanos,
    change: &Change,
    settings: &PolicySettings,
) -> Result<Applied, ChangeError> {
    let unknown = |domain: &str| ChangeError::UnknownDomain {
        at: now,
        domain: domain.to_string(),
    };
    match change {
        Change::SetParams { domain, params } => {
            let (index, vcpus) = table.find(domain).ok_or_else(|| unknown(domain))?;
            let vcpus = vcpus.to_vec();
            set_params(machine, now, &vcpus, |p| *p = params.clone()).map_err(|error| {
                ChangeError::Machine {
                    domain: domain.clone(),
                    error,
                }
            })?;
            table.spec_mut(index).vcpu = params.clone();
            Ok(Applied::Reconfigured { index: Some(index) })
        }
        Change::SwapPolicy(policy) => {
            machine
                .swap_policy(now, policy.clone())
                .map_err(ChangeError::Swap)?;
            Ok(Applied::Reconfigured { index: None })
        }
        Change::AddDomain(spec) => {
            if table.find(&spec.name).is_some() {
                return Err(ChangeError::DuplicateDomain {
                    at: now,
                    domain: spec.name.clone(),
                });
            }
            let id = DomainId(table.joined() as u32);
            let vcpus = add_domain(machine, now, id, spec)?;
            Ok(Applied::Added {
                spec: spec.clone(),
                vcpus,
            })
        }
        Change::RemoveDomain { domain } => {
            let (index, vcpus) = table.find(domain).ok_or_else(|| unknown(domain))?;
            let vcpus = vcpus.to_vec();
            for &v in &vcpus {
                machine
                    .remove_vcpu(now, v)
                    .map_err(|error| ChangeError::Machine {
                        domain: domain.clone(),
                        error,
                    })?;
            }
            Ok(Applied::Removed { index, vcpus })
        }
        Change::Xl(command) => {
            {
                let table = &*table;
                let vcpus_of = |name: &str| {
                    table
                        .find(name)
                        .map(|(i, vcpus)| (DomainId(i as u32), vcpus.to_vec()))
                };
                apply_xl(machine, now, command, &vcpus_of, settings)?;
            }
            let index = command.domain().and_then(|name| {
                let (index, vcpus) = table.find(name)?;
                Some((index, *vcpus.first()?))
            });
            Ok(Applied::Reconfigured {
                index: index.map(|(index, first)| {
                    table.spec_mut(index).vcpu = machine.params(first).clone();
                    index
                }),
            })
        }
    }
}

/// Adds the VCPUs of a joining domain `id` to its pool, each with its affinity; on a
/// refusal the VCPUs added so far are taken back.
fn add_domain(
    machine: &mut Machine,
    now: Nanos,
    id: DomainId,
    spec: &DomainSpec,
) -> Result<Vec<VcpuId>, ChangeError> {
    let placement = &spec.placement;
    let count = placement.vcpu_count();
    Guest::check_shape(&spec.tasks, count, placement.smp).map_err(|error| ChangeError::Guest {
        domain: spec.name.clone(),
        error,
    })?;
    let machine_error = |error| ChangeError::Machine {
        domain: spec.name.clone(),
        error,
    };
    let pool = match &placement.pool {
        None => 0,
        Some(name) => machine.pool_index(name).map_err(machine_error)?,
    };
    let mut vcpus = Vec::with_capacity(count as usize);
    for i in 0..count {
        let added = match placement.affinity_of(i) {
            None => Ok(None),
            Some(list) => CpuSet::from_indices(list.iter().copied())
                .map(Some)
                .ok_or_else(|| ChangeError::AffinityOutOfRange {
                    domain: spec.name.clone(),
                    vcpu: i,
                    pcpu: list.iter().copied().max().unwrap_or(0),
                }),
        }
        .and_then(|affinity| {
            machine
                .add_vcpu_in(now, id, spec.vcpu.clone(), pool, affinity)
                .map_err(machine_error)
        });
        match added {
            Ok(v) => vcpus.push(v),
            Err(e) => {
                for &v in &vcpus {
                    // Just added, so present: removing it cannot fail.
                    let _ = machine.remove_vcpu(now, v);
                }
                return Err(e);
            }
        }
    }
    Ok(vcpus)
}

/// A table of domains for a driver that needs nothing per domain but what the change path
/// keeps: the scenario reader's replay and tests. Index = join order.
#[derive(Clone, Debug, Default)]
pub struct Domains {
    /// Every domain that joined, with its VCPUs and whether it is still present.
    pub domains: Vec<(DomainSpec, Vec<VcpuId>, bool)>,
}

impl Domains {
    /// Applies `change` and keeps the table: a joining domain is recorded, a leaving one
    /// marked gone. What [`apply_change`] returned is passed on.
    pub fn apply(
        &mut self,
        machine: &mut Machine,
        now: Nanos,
        change: &Change,
        settings: &PolicySettings,
    ) -> Result<Applied, ChangeError> {
        let applied = apply_change(machine, self, now, change, settings)?;
        match &applied {
            Applied::Added { spec, vcpus } => {
                self.domains.push((spec.clone(), vcpus.clone(), true))
            }
            Applied::Removed { index, .. } => self.domains[*index].2 = false,
            Applied::Reconfigured { .. } => {}
        }
        Ok(applied)
    }
}

impl DomainTable for Domains {
    fn find(&self, name: &str) -> Option<(usize, &[VcpuId])> {
        self.domains
            .iter()
            .position(|(spec, _, present)| *present && spec.name == name)
            .map(|i| (i, self.domains[i].1.as_slice()))
    }

    fn joined(&self) -> usize {
        self.domains.len()
    }

    fn spec_mut(&mut self, index: usize) -> &mut DomainSpec {
        &mut self.domains[index].0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvmm_core::guest::{GuestScheduler, TaskSpec};
    use rtvmm_core::machine::{MachineConfig, PoolSpec};
    use rtvmm_core::model::{GuestSmp, Placement, VcpuParams};
    use rtvmm_core::policy::{PolicyConfig, RtdsMode};
    use rtvmm_core::xl::XlCommand;

    fn ms(n: u64) -> Nanos {
        Nanos::from_ms(n)
    }

    fn two_pcpus() -> Machine {
        let config = MachineConfig {
            pcpus: 2,
            ..MachineConfig::default()
        };
        Machine::with_pools(
            config,
            vec![PoolSpec::new(
                "Pool-0",
                CpuSet::first(2),
                PolicyConfig::Rtds(RtdsMode::Event),
            )],
        )
        .unwrap()
    }

    fn domain(name: &str, vcpus: u32) -> DomainSpec {
        DomainSpec {
            name: name.into(),
            vcpu: VcpuParams::server(ms(2), ms(10), 1),
            guest: GuestScheduler::Edf,
            tasks: vec![TaskSpec::periodic("t", ms(10), ms(1))],
            placement: Placement {
                vcpus,
                smp: GuestSmp::Global,
                ..Placement::default()
            },
        }
    }

    /// Two pcpus under RTDS with `web`, a domain of two VCPUs, joined at 0.
    fn web_on_two_pcpus() -> (Machine, Domains) {
        let mut m = two_pcpus();
        let mut table = Domains::default();
        let web = Change::AddDomain(domain("web", 2));
        table
            .apply(&mut m, Nanos::ZERO, &web, &PolicySettings::default())
            .unwrap();
        (m, table)
    }

    #[test]
    fn set_params_and_sched_rtds_without_v_reach_every_vcpu() {
        let (mut m, mut table) = web_on_two_pcpus();
        let none = PolicySettings::default();
        let vcpus = table.domains[0].1.clone();
        let params = VcpuParams::server(ms(3), ms(6), 1);
        let applied = table
            .apply(
                &mut m,
                ms(1),
                &Change::SetParams {
                    domain: "web".into(),
                    params: params.clone(),
                },
                &none,
            )
            .unwrap();
        assert_eq!(applied, Applied::Reconfigured { index: Some(0) });
        for &v in &vcpus {
            assert_eq!(m.params(v), &params);
        }
        let xl = XlCommand::parse("sched-rtds -d web -p 8000 -b 4000").unwrap();
        table.apply(&mut m, ms(2), &Change::Xl(xl), &none).unwrap();
        for &v in &vcpus {
            assert_eq!((m.params(v).budget, m.params(v).period), (ms(4), ms(8)));
        }
        assert_eq!(table.domains[0].0.vcpu.budget, ms(4), "the spec follows");
        // `-v 1`: the second VCPU only; the spec carries the first VCPU's.
        let xl = XlCommand::parse("sched-rtds -d web -v 1 -p 9000 -b 1000").unwrap();
        table.apply(&mut m, ms(3), &Change::Xl(xl), &none).unwrap();
        assert_eq!(m.params(vcpus[0]).budget, ms(4));
        assert_eq!(m.params(vcpus[1]).budget, ms(1));
        assert_eq!(table.domains[0].0.vcpu.budget, ms(4));
    }

    #[test]
    fn a_refused_change_changes_nothing() {
        let (mut m, mut table) = web_on_two_pcpus();
        let none = PolicySettings::default();
        // A budget above the period: refused by RTDS for the first VCPU checked, before
        // either is adjusted.
        let bad = VcpuParams::server(ms(20), ms(10), 1);
        let err = table
            .apply(
                &mut m,
                ms(1),
                &Change::SetParams {
                    domain: "web".into(),
                    params: bad,
                },
                &none,
            )
            .unwrap_err();
        assert!(matches!(err, ChangeError::Machine { .. }), "{err}");
        for &v in &table.domains[0].1 {
            assert_eq!(m.params(v).budget, ms(2));
        }
        // A second domain of the same name.
        let err = table
            .apply(&mut m, ms(1), &Change::AddDomain(domain("web", 1)), &none)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "change at 1ms: a domain named 'web' exists already"
        );
        // Affinity naming a pcpu the machine lacks for the second VCPU: the first VCPU
        // added is taken back.
        let mut odd = domain("db", 2);
        odd.placement.affinity = vec![Some(vec![0]), Some(vec![5])];
        let err = table
            .apply(&mut m, ms(1), &Change::AddDomain(odd.clone()), &none)
            .unwrap_err();
        assert!(matches!(err, ChangeError::Machine { .. }), "{err}");
        assert_eq!(table.joined(), 1);
        assert!(table.find("db").is_none());
        m.check_invariants().unwrap();
        // The same domain within the machine joins, as the second domain.
        odd.placement.affinity = vec![Some(vec![0]), Some(vec![1])];
        table
            .apply(&mut m, ms(1), &Change::AddDomain(odd), &none)
            .unwrap();
        assert_eq!(table.find("db").map(|(i, v)| (i, v.len())), Some((1, 2)));
    }

    #[test]
    fn a_domain_leaves_and_its_name_is_free_again() {
        let mut m = two_pcpus();
        let mut table = Domains::default();
        let none = PolicySettings::default();
        table
            .apply(
                &mut m,
                Nanos::ZERO,
                &Change::AddDomain(domain("a", 1)),
                &none,
            )
            .unwrap();
        let removed = table
            .apply(
                &mut m,
                ms(1),
                &Change::RemoveDomain { domain: "a".into() },
                &none,
            )
            .unwrap();
        assert!(matches!(removed, Applied::Removed { index: 0, .. }));
        assert!(table.find("a").is_none());
        let err = table
            .apply(
                &mut m,
                ms(2),
                &Change::RemoveDomain { domain: "a".into() },
                &none,
            )
            .unwrap_err();
        assert_eq!(err.to_string(), "change at 2ms: no domain named 'a'");
        // Joins again under a new index (and domain id).
        let added = table
            .apply(&mut m, ms(3), &Change::AddDomain(domain("a", 1)), &none)
            .unwrap();
        assert!(matches!(added, Applied::Added { .. }));
        assert_eq!(table.find("a").map(|(i, _)| i), Some(1));
    }
}
