//! A system to simulate, in the core's types: the machine, the policy, the domains with
//! their guests, and changes scheduled at given times. The scenario crate builds one from a
//! TOML file; tests and experiments build them in code.

use rtvmm_core::guest::{GuestScheduler, TaskSpec};
use rtvmm_core::machine::MachineConfig;
use rtvmm_core::model::VcpuParams;
use rtvmm_core::policy::PolicyConfig;
use rtvmm_core::Nanos;

/// One domain: one VCPU and its guest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainSpec {
    pub name: String,
    pub vcpu: VcpuParams,
    pub guest: GuestScheduler,
    pub tasks: Vec<TaskSpec>,
}

/// A change to the running system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// New VCPU parameters for a domain (`xl sched-rtds -d D -p P -b B`).
    SetParams { domain: String, params: VcpuParams },
    /// Replace the policy ("hot swap").
    SwapPolicy(PolicyConfig),
    /// A new domain joins.
    AddDomain(DomainSpec),
    /// A domain leaves; its pending jobs are dropped from every count.
    RemoveDomain { domain: String },
}

/// A change and when it happens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimedChange {
    pub at: Nanos,
    pub change: Change,
}

/// Everything a run needs but its seed and length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SystemSpec {
    pub machine: MachineConfig,
    pub policy: PolicyConfig,
    pub domains: Vec<DomainSpec>,
    /// Sorted by time; ties keep their order.
    pub changes: Vec<TimedChange>,
}
