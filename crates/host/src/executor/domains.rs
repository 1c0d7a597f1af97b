//! The run's domains as the executor keeps them: a guest process per VCPU rtvmm started,
//! or an external domain it attached; and who a pcpu is enforced to run.

use rtvmm_core::model::{DomainSpec, VcpuId};
use rtvmm_core::Nanos;

use crate::domain::{JobBook, ProcessDomain};
use crate::external::ExternalDomain;
use crate::shm::Shared;

/// One domain of the run.
pub(super) struct Slot {
    pub(super) domain: Domain,
    pub(super) removed_at: Option<Nanos>,
    /// Removed and killed, not yet reaped.
    pub(super) dying: bool,
    /// When each of its blocked VCPUs is due to wake (the earliest next release of the
    /// VCPU's tasks), in VCPU order.
    pub(super) wake_at: Vec<Option<u64>>,
}

/// A domain of the run: a guest process rtvmm started, or an external one it attached.
// One per domain, made once and never moved in the loop: the sizes do not matter.
#[allow(clippy::large_enum_variant)]
pub(super) enum Domain {
    Process(ProcessDomain),
    External(ExternalDomain),
}

impl Domain {
    pub(super) fn spec(&self) -> &DomainSpec {
        match self {
            Domain::Process(p) => &p.spec,
            Domain::External(e) => &e.spec,
        }
    }
    pub(super) fn spec_mut(&mut self) -> &mut DomainSpec {
        match self {
            Domain::Process(p) => &mut p.spec,
            Domain::External(e) => &mut e.spec,
        }
    }
    /// Its VCPUs, in VCPU order (an external domain has one).
    pub(super) fn vcpus(&self) -> &[VcpuId] {
        match self {
            Domain::Process(p) => &p.vcpus,
            Domain::External(e) => std::slice::from_ref(&e.vcpu),
        }
    }
    pub(super) fn book(&self) -> &JobBook {
        match self {
            Domain::Process(p) => &p.book,
            Domain::External(e) => &e.book,
        }
    }
    /// The shared page of VCPU `j`'s guest (an external domain has none).
    pub(super) fn shared(&self, j: usize) -> Option<&Shared> {
        match self {
            Domain::Process(p) => Some(&p.guest(j).shared),
            Domain::External(_) => None,
        }
    }
    /// Every shared page of its guests.
    pub(super) fn pages(&self) -> impl Iterator<Item = &Shared> {
        let guests = match self {
            Domain::Process(p) => p.guests.as_slice(),
            Domain::External(_) => &[],
        };
        guests.iter().map(|g| &g.shared)
    }
    pub(super) fn drain(&mut self, end: Option<Nanos>) {
        if let Domain::Process(p) = self {
            p.drain(end);
        }
    }
    pub(super) fn cpu_ns(&self) -> u64 {
        match self {
            Domain::Process(p) => p.cpu_ns(),
            Domain::External(e) => e.cpu_ns(),
        }
    }
    pub(super) fn lost(&self) -> u64 {
        match self {
            Domain::Process(p) => p.lost(),
            Domain::External(_) => 0,
        }
    }
}

/// The run's domains; dropped, every external domain is given back (its threads off
/// their real-time priorities, thawed, continued), then every guest is killed before any
/// is waited for.
#[derive(Default)]
pub(super) struct Slots(Vec<Slot>);

impl std::ops::Deref for Slots {
    type Target = Vec<Slot>;
    fn deref(&self) -> &Vec<Slot> {
        &self.0
    }
}

impl std::ops::DerefMut for Slots {
    fn deref_mut(&mut self) -> &mut Vec<Slot> {
        &mut self.0
    }
}

impl<'a> IntoIterator for &'a Slots {
    type Item = &'a Slot;
    type IntoIter = std::slice::Iter<'a, Slot>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a> IntoIterator for &'a mut Slots {
    type Item = &'a mut Slot;
    type IntoIter = std::slice::IterMut<'a, Slot>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter_mut()
    }
}

impl Drop for Slots {
    fn drop(&mut self) {
        // Idempotent: after a normal end they were given back already.
        for slot in &mut self.0 {
            if let Domain::External(e) = &mut slot.domain {
                e.release(None);
            }
        }
        crate::domain::kill_all(self.0.iter_mut().filter_map(|s| match &mut s.domain {
            Domain::Process(p) => Some(p),
            Domain::External(_) => None,
        }));
    }
}

/// Who the pcpu is enforced to run: IDLE, or VCPU `vcpu` (its number in the domain) of
/// domain `domain` — for a process domain, that VCPU's guest process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Target {
    Idle,
    Vcpu { domain: usize, vcpu: usize },
}
