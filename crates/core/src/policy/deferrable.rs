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
//! - **Several pcpus: global fixed priority** (`docs/platform.md`; [`GlobalFp`]): each pcpu's
//!   `do_schedule` puts back what it ran and picks the highest-priority VCPU with work and
//!   budget that its affinity allows there and that runs on no other pcpu, so the m
//!   highest-priority eligible VCPUs run; a wake or replenishment tickles like RTDS (an idle
//!   pcpu of the VCPU's affinity, else the one running the lowest priority if the VCPU
//!   beats it). Each pcpu has its own quantum tick. A pcpu that joins or leaves the pool
//!   changes no budget or boundary; the VCPU the leaving pcpu ran is put back behind its
//!   equals, as at a `do_schedule`.

use crate::cpuset::CpuSet;
use crate::event::Cx;
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::fp::{Charge, GlobalFp, Server, ServerSet};
use crate::policy::{
    BudgetCounters, Decision, PcpuChange, Policy, PolicyKind, Spent, TickInterval, VcpuView,
};
use crate::time::Nanos;

pub struct Deferrable {
    servers: ServerSet,
    /// What the last `do_schedule` chose on each pcpu, affinities, owed reschedules.
    global: GlobalFp,
}

impl Deferrable {
    pub fn new(pcpus: u32) -> Deferrable {
        Deferrable {
            servers: ServerSet::default(),
            global: GlobalFp::new(pcpus),
        }
    }

    /// One pcpu: whether `vcpu`, having work and budget, should preempt the current
    /// decision.
    fn preempts(&self, vcpu: VcpuId) -> bool {
        let s = self.servers.get(vcpu);
        s.has_work
            && !s.remaining.is_zero()
            && match self.global.current[0] {
                None => true,
                Some(c) => c != vcpu && self.servers.higher(vcpu, c),
            }
    }

    /// Run `server` (IDLE if none) with its remaining budget as the slice.
    #[inline(always)]
    fn decision(server: Option<&Server>) -> Decision {
        match server {
            Some(s) => Decision {
                run: Some(s.vcpu),
                slice: Some(s.remaining),
            },
            None => Decision::IDLE,
        }
    }

    /// `do_schedule` on a pool of several pcpus: what ran here goes back to the RunQ, and
    /// the pick is [`GlobalFp::pick`]'s. Apart, so that the one-pcpu decision stays small.
    #[inline(never)]
    fn do_schedule_on_several(&mut self, pcpu: PcpuId) -> Decision {
        self.global.asked.remove(pcpu.0);
        if let Some(c) = self.global.current[pcpu.index()] {
            self.servers.requeue(c);
        }
        let decision = Self::decision(self.global.pick(&self.servers, pcpu.0));
        self.global.run_on(pcpu.0, decision.run);
        decision
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
        self.global.forget(vcpu);
        self.servers.remove(vcpu);
    }

    fn wake(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.servers.get_mut(vcpu).has_work = true;
        self.servers.requeue(vcpu);
        if self.global.several() {
            return !self.tickle().is_empty();
        }
        self.preempts(vcpu)
    }

    fn sleep(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.servers.get_mut(vcpu).has_work = false;
        self.global.is_running(vcpu)
    }

    fn burn(&mut self, cx: &mut Cx, pcpu: PcpuId, ran: Nanos, spent: Spent) {
        if let Some(v) = self.global.current[pcpu.index()] {
            // A budget that runs out ends the slice: the machine reschedules then.
            self.servers.charge(cx, Charge::Own(v), ran, spent);
        }
    }

    fn do_schedule(&mut self, _cx: &mut Cx, pcpu: PcpuId) -> Decision {
        if self.global.several() {
            return self.do_schedule_on_several(pcpu);
        }
        // One pcpu (the usual case, on every quantum): `queuePick(RunQ)`, nothing else.
        if let Some(c) = self.global.current[0] {
            self.servers.requeue(c);
        }
        let decision = Self::decision(self.servers.pick_with_work());
        self.global.current[0] = decision.run;
        decision
    }

    fn tick_interval(&self) -> TickInterval {
        TickInterval::Quantum
    }

    fn next_timer(&self) -> Option<Nanos> {
        self.servers.next_boundary()
    }

    fn handle_timer(&mut self, cx: &mut Cx) -> bool {
        if self.global.several() {
            let global = &self.global;
            let mut replenished_running = CpuSet::EMPTY;
            let any = self.servers.replenish_due(
                cx,
                |v| global.is_running(v),
                |s| {
                    if let Some(p) = global.pcpu_of(s.vcpu) {
                        replenished_running.insert(p);
                    }
                },
            );
            // The running VCPUs' slices grew with their budgets: re-arm them.
            self.global.asked = self.global.asked.union(replenished_running);
            return any && !self.tickle().is_empty();
        }
        let current = self.global.current[0];
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
        self.global.is_running(vcpu)
    }

    fn set_affinity(&mut self, _cx: &mut Cx, vcpu: VcpuId, affinity: CpuSet) -> bool {
        self.global.set_affinity(vcpu, affinity);
        self.global.several() && !self.tickle().is_empty()
    }

    fn change_pcpus(&mut self, _cx: &mut Cx, change: PcpuChange) -> bool {
        // The VCPU the leaving pcpu ran is put back, as its `do_schedule` would.
        let left = self.global.change_pcpus(change);
        if let Some(v) = left {
            self.servers.requeue(v);
        }
        !self.global.several() && left.is_some_and(|v| self.preempts(v))
    }

    fn tickle(&self) -> CpuSet {
        self.global.tickle(&self.servers)
    }

    fn view(&self, vcpu: VcpuId) -> VcpuView {
        self.servers.view(vcpu)
    }

    fn counters(&self, vcpu: VcpuId) -> BudgetCounters {
        self.servers.get(vcpu).counters
    }

    fn check_invariants(&self) -> Result<(), String> {
        self.servers.check_invariants()?;
        self.global.check(&self.servers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventLog;

    fn ms(x: u64) -> Nanos {
        Nanos::from_ms(x)
    }

    /// Two pcpus. A (prio 1) and B (prio 2) run on pcpus 0 and 1. D (prio 1, equal to A)
    /// wakes: it goes behind A, so it preempts B, the lowest priority running, on pcpu 1.
    /// B then waits and beats nobody. C (prio 3) pinned to pcpu 1 wakes: it beats nobody.
    /// A blocks: pcpu 0 takes B (C may not run there).
    #[test]
    fn two_pcpus_run_the_two_highest_priorities() {
        let mut log = EventLog::new(false);
        let mut ds = Deferrable::new(2);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        let (a, b, c, d) = (VcpuId(0), VcpuId(1), VcpuId(2), VcpuId(3));
        for (v, prio, aff) in [
            (a, 1, CpuSet::first(2)),
            (b, 2, CpuSet::first(2)),
            (c, 3, CpuSet::one(1)),
            (d, 1, CpuSet::first(2)),
        ] {
            ds.set_affinity(&mut cx, v, aff);
            ds.insert_vcpu(&mut cx, v, &VcpuParams::server(ms(3), ms(10), prio));
        }
        ds.wake(&mut cx, a);
        ds.wake(&mut cx, b);
        assert_eq!(ds.tickle(), CpuSet::first(2), "two waiting, two idle pcpus");
        assert_eq!(ds.do_schedule(&mut cx, PcpuId(0)).run, Some(a));
        assert_eq!(ds.do_schedule(&mut cx, PcpuId(1)).run, Some(b));
        assert_eq!(ds.tickle(), CpuSet::EMPTY);
        assert!(ds.wake(&mut cx, d));
        assert_eq!(ds.tickle(), CpuSet::one(1), "D preempts B, not its equal A");
        assert_eq!(ds.do_schedule(&mut cx, PcpuId(1)).run, Some(d));
        assert_eq!(ds.tickle(), CpuSet::EMPTY);
        assert!(!ds.wake(&mut cx, c), "C (prio 3) beats nobody on pcpu 1");
        assert!(ds.sleep(&mut cx, a));
        assert_eq!(
            ds.tickle(),
            CpuSet::one(0),
            "A no longer eligible: pcpu 0 is free"
        );
        assert_eq!(ds.do_schedule(&mut cx, PcpuId(0)).run, Some(b));
        assert_eq!(ds.tickle(), CpuSet::EMPTY, "C may not run on pcpu 0");
        assert_eq!(ds.check_invariants(), Ok(()));
    }
}
