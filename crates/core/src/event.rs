//! What the core reports to its driver for traces: VMM-level events, in the order they
//! happened. Recording is off unless the driver asks for it, so a run without a trace pays
//! nothing but a branch.

use crate::model::{PcpuId, VcpuId};
use crate::time::Nanos;

/// Why `do_schedule` ran. When several causes coincide, the first in this order is kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ScheduleReason {
    /// The running VCPU blocked (no more work).
    Block,
    /// The running decision's budget (or slice) ran out.
    BudgetExhausted,
    /// A VCPU woke or was replenished and the policy asked for a reschedule.
    Preempt,
    /// The periodic scheduler tick.
    Tick,
    /// The policy or the machine changed (hot swap, parameter change, domain added/removed).
    Reconfigure,
}

impl ScheduleReason {
    pub fn as_str(self) -> &'static str {
        match self {
            ScheduleReason::Block => "block",
            ScheduleReason::BudgetExhausted => "budget_exhausted",
            ScheduleReason::Preempt => "preempt",
            ScheduleReason::Tick => "tick",
            ScheduleReason::Reconfigure => "reconfigure",
        }
    }
}

/// A VMM-level event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CoreEvent {
    /// `to` starts running on `pcpu` (None = the IDLE VCPU); `from` was running before.
    Switch {
        pcpu: PcpuId,
        from: Option<VcpuId>,
        to: Option<VcpuId>,
        reason: ScheduleReason,
    },
    /// After overhead, the pcpu goes on with the VCPU it ran before (None = IDLE).
    Resume {
        pcpu: PcpuId,
        vcpu: Option<VcpuId>,
    },
    /// The pcpu spends `cost` in scheduler overhead from this instant.
    Overhead {
        pcpu: PcpuId,
        cost: Nanos,
    },
    Wake {
        vcpu: VcpuId,
    },
    Block {
        vcpu: VcpuId,
    },
    /// The VCPU's remaining budget became `budget`.
    Replenish {
        vcpu: VcpuId,
        budget: Nanos,
    },
    /// The VCPU's remaining budget reached zero.
    BudgetExhausted {
        vcpu: VcpuId,
    },
    /// The VCPU's remaining budget was thrown away (Polling Server).
    BudgetDiscarded {
        vcpu: VcpuId,
        amount: Nanos,
    },
}

/// A timestamped event log that is either recording or not.
#[derive(Clone, Debug, Default)]
pub struct EventLog {
    enabled: bool,
    events: Vec<(Nanos, CoreEvent)>,
}

impl EventLog {
    pub fn new(enabled: bool) -> EventLog {
        EventLog {
            enabled,
            events: Vec::new(),
        }
    }
    pub fn is_enabled(&self) -> bool {
        self.enabled
    }
    /// Records the event built by `make`, which is not called when recording is off.
    #[inline]
    pub fn emit(&mut self, now: Nanos, make: impl FnOnce() -> CoreEvent) {
        if self.enabled {
            self.events.push((now, make()));
        }
    }
    /// Hands over what was recorded so far.
    pub fn drain(&mut self) -> std::vec::Drain<'_, (Nanos, CoreEvent)> {
        self.events.drain(..)
    }
}

/// What a policy hook gets besides its own state: the current instant and where to report
/// events.
pub struct Cx<'a> {
    pub now: Nanos,
    pub log: &'a mut EventLog,
}

impl Cx<'_> {
    #[inline]
    pub fn emit(&mut self, make: impl FnOnce() -> CoreEvent) {
        self.log.emit(self.now, make);
    }
}
