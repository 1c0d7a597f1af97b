//! Deferrable Server (Strosnider, Lehoczky & Sha, IEEE ToC 1995; RT-Xen, EMSOFT 2011).
//!
//! # Design note
//! - **Replenishment**: at every period boundary `offset + k·P` the remaining budget is set
//!   to B (unused budget is lost) — [`ServerSet::replenish_due`].
//! - **Consumption**: only while the VCPU itself runs. A VCPU that blocks keeps its budget
//!   until the next boundary ("deferred").
//! - **do_schedule** (at every quantum tick and on the events below): the running VCPU goes
//!   back to its queue (RunQ if it has work, RdyQ if not — here: its `has_work` state),
//!   behind every VCPU of its priority; then `queuePick(RunQ)` runs: the highest-priority
//!   VCPU with work and budget left; if none, IDLE. So equal priorities take turns quantum by
//!   quantum (see `fp.rs`). The slice is the chosen VCPU's remaining budget, so the machine
//!   reschedules when it runs out.
//! - **Preemption**: a wake or a replenishment asks for a reschedule only when the VCPU then
//!   has work and budget and beats what runs (or the pcpu idles); a VCPU that wakes goes
//!   behind its equals, so it never preempts one of the same priority.
//!
//! Known gap: one pcpu per instance (global fixed priority comes with the multicore work).

use crate::event::Cx;
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::fp::{Charge, ServerSet};
use crate::policy::{BudgetCounters, Decision, Policy, PolicyKind, Spent, TickInterval, VcpuView};
use crate::time::Nanos;

pub struct Deferrable {
    servers: ServerSet,
    /// What the last `do_schedule` chose (None = IDLE).
    current: Option<VcpuId>,
}

impl Deferrable {
    pub fn new(_pcpus: u32) -> Deferrable {
        Deferrable {
            servers: ServerSet::default(),
            current: None,
        }
    }

    /// Whether `vcpu`, having work and budget, should preempt the current decision.
    fn preempts(&self, vcpu: VcpuId) -> bool {
        let s = self.servers.get(vcpu);
        s.has_work
            && !s.remaining.is_zero()
            && match self.current {
                None => true,
                Some(c) => c != vcpu && self.servers.higher(vcpu, c),
            }
    }
}

impl Policy for Deferrable {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Deferrable
    }

    fn validate(&self, params: &VcpuParams) -> Result<(), ParamError> {
        params.validate_server()
    }

    fn insert_vcpu(&mut self, cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) {
        self.servers.insert(cx.now, vcpu, params);
    }

    fn remove_vcpu(&mut self, _cx: &mut Cx, vcpu: VcpuId) {
        if self.current == Some(vcpu) {
            self.current = None;
        }
        self.servers.remove(vcpu);
    }

    fn wake(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.servers.get_mut(vcpu).has_work = true;
        self.servers.requeue(vcpu);
        self.preempts(vcpu)
    }

    fn sleep(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.servers.get_mut(vcpu).has_work = false;
        self.current == Some(vcpu)
    }

    fn burn(&mut self, cx: &mut Cx, _pcpu: PcpuId, ran: Nanos, spent: Spent) {
        if let Some(v) = self.current {
            // A budget that runs out ends the slice: the machine reschedules then.
            self.servers.charge(cx, Charge::Own(v), ran, spent);
        }
    }

    fn do_schedule(&mut self, _cx: &mut Cx, _pcpu: PcpuId) -> Decision {
        if let Some(c) = self.current {
            self.servers.requeue(c);
        }
        let decision = match self.servers.pick_with_work() {
            Some(s) => Decision {
                run: Some(s.vcpu),
                slice: Some(s.remaining),
            },
            None => Decision::IDLE,
        };
        self.current = decision.run;
        decision
    }

    fn tick_interval(&self) -> TickInterval {
        TickInterval::Quantum
    }

    fn next_timer(&self) -> Option<Nanos> {
        self.servers.next_boundary()
    }

    fn handle_timer(&mut self, cx: &mut Cx) -> bool {
        let current = self.current;
        let mut current_replenished = false;
        let any = self.servers.replenish_due(
            cx,
            |v| Some(v) == current,
            |s| current_replenished |= Some(s.vcpu) == current,
        );
        // The running VCPU's slice grew with its budget: reschedule to re-arm it. Otherwise
        // only a VCPU that now beats what runs matters (a replenished VCPU went behind its
        // equals, so it does not beat an equal-priority current one).
        any && (current_replenished
            || self
                .servers
                .pick_with_work()
                .is_some_and(|s| Some(s.vcpu) != current && self.preempts(s.vcpu)))
    }

    fn adjust(&mut self, _cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) -> bool {
        self.servers.adjust(vcpu, params);
        self.current == Some(vcpu)
    }

    fn view(&self, vcpu: VcpuId) -> VcpuView {
        self.servers.view(vcpu)
    }

    fn counters(&self, vcpu: VcpuId) -> BudgetCounters {
        self.servers.get(vcpu).counters
    }

    fn check_invariants(&self) -> Result<(), String> {
        self.servers.check_invariants()
    }
}
