//! Live control: the seam between a control front end (a Unix socket server, `rtvmm
//! ctl`) and the running executor.
//!
//! A front end sends [`ControlMessage`]s — a [`ControlRequest`] and where to send the
//! [`ControlReply`] — over the `std::sync::mpsc` channel whose receiver it put in
//! [`HostOptions::control`](super::HostOptions::control). The scheduler loop drains the
//! channel between two decisions, without blocking, and applies each request to the
//! machine with the same code that applies a scenario's timed `[[event]]`s
//! (`Machine::adjust`, `swap_policy`, `add_vcpu`, `remove_vcpu`): a request the machine
//! refuses changes nothing and gets [`ControlReply::Refused`] with the reason. A request
//! waits at most until the loop next wakes (at most `MAX_SLEEP` while nothing is due).

use std::sync::mpsc::Sender;

use rtvmm_core::model::{DomainSpec, VcpuParams};
use rtvmm_core::policy::PolicyConfig;
use rtvmm_core::Nanos;
use rtvmm_sim::Change;

/// What a front end may ask.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlRequest {
    /// The policy and every domain's parameters and state (`xl sched-*` without values).
    Show,
    /// New VCPU parameters for a domain (`sched-set`, `sched-rtds -d D -p P -b B`): the
    /// whole set (read it with `Show`, change what is asked).
    SetParams { domain: String, params: VcpuParams },
    /// Replace the policy ("hot swap").
    SwapPolicy(PolicyConfig),
    /// Start a new process domain.
    AddDomain(DomainSpec),
    /// Remove a domain (its guest is stopped and ended; its pending jobs leave the counts).
    RemoveDomain { domain: String },
}

impl ControlRequest {
    /// The change it makes, if any (`Show` makes none).
    pub fn change(self) -> Option<Change> {
        match self {
            ControlRequest::Show => None,
            ControlRequest::SetParams { domain, params } => {
                Some(Change::SetParams { domain, params })
            }
            ControlRequest::SwapPolicy(p) => Some(Change::SwapPolicy(p)),
            ControlRequest::AddDomain(d) => Some(Change::AddDomain(d)),
            ControlRequest::RemoveDomain { domain } => Some(Change::RemoveDomain { domain }),
        }
    }
}

/// One domain as `Show` reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainView {
    pub name: String,
    pub params: VcpuParams,
    pub has_work: bool,
    pub running: bool,
}

/// The executor's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ControlReply {
    /// Applied.
    Done,
    /// `Show`: the policy, the run's time and the present domains.
    Shown {
        policy: String,
        now: Nanos,
        domains: Vec<DomainView>,
    },
    /// Not applied; nothing changed.
    Refused(String),
}

/// A request and where its reply goes.
pub type ControlMessage = (ControlRequest, Sender<ControlReply>);
