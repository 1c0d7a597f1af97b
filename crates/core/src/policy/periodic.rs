//! Periodic Server — PTPS, the purely time-driven periodic server (RT-Xen, EMSOFT 2011;
//! "PTPS" in the CSA framework, Lee et al., RTAS 2012). `periodic` and `ptps` name this
//! one policy.
//!
//! # Design note
//! - **Replenishment**: at every period boundary `offset + k·P` the remaining budget is set
//!   to B ([`ServerSet::replenish_due`](super::fp::ServerSet::replenish_due)).
//! - **H** = the highest-priority VCPU with remaining budget > 0, with or without work,
//!   the running one included.
//! - **do_schedule**: H has work → H runs on its own budget (slice: H's budget). H has no
//!   work → the pcpu runs IDLE and H's budget is consumed ("idled away", counted in
//!   `idled`), slice: H's budget; lower-priority VCPUs wait even with work and budget. No
//!   H → IDLE, nothing charged, no slice (the next replenishment reschedules).
//! - **Reschedule on wake**: only the wake of the H that is idling its budget away changes
//!   the decision (anyone above H has no budget; anyone below waits for H), so it alone
//!   preempts IDLE at once. See [`PeriodicFamily`] for the shared machinery.
//! - Not work-conserving, by design: the server behaves as if it had an idle task that
//!   soaks up its budget.
//! - **Several pcpus: global fixed priority** (`docs/platform.md`; the machinery is
//!   [`PeriodicFamily`]'s): the servers are taken in priority order and the pcpus assigned
//!   greedily, pcpu by pcpu as they decide. For pcpu p, **H_p** is the highest-priority VCPU
//!   with budget (work or not) that its affinity allows on p and that no other pcpu's plan
//!   names; H_p with work runs on p, H_p without work idles p and its budget is idled away
//!   there. So a server is H on one pcpu at a time, and an idle H blocks only the pcpu it
//!   idles: the next servers run on the others. A pcpu reschedules when the plan it would
//!   make now differs from the one in effect (the wake of its idling H, a VCPU another pcpu
//!   let go that beats its H, ...). With every VCPU pinned to one pcpu this is exactly the
//!   partitioned PTPS, one per pcpu.

use crate::policy::fp::{self, Candidates, PeriodicFamily, PeriodicRule, Plan};
use crate::policy::PolicyKind;

/// The PTPS decision rule.
pub struct Ptps;

impl PeriodicRule for Ptps {
    const KIND: PolicyKind = PolicyKind::Periodic;

    #[inline(always)]
    fn plan(candidates: &impl Candidates) -> Plan {
        fp::plan_ptps(candidates)
    }
}

/// The Periodic Server (PTPS).
pub type Periodic = PeriodicFamily<Ptps>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{Cx, EventLog};
    use crate::model::{PcpuId, VcpuId, VcpuParams};
    use crate::policy::fp::Charge;
    use crate::policy::Policy;
    use crate::policy::Spent;
    use crate::time::Nanos;

    fn ms(x: u64) -> Nanos {
        Nanos::from_ms(x)
    }

    /// hi (B2, P5, prio 1) and lo (B4, P10, prio 2), both inserted at 0 without work.
    fn two_servers(log: &mut EventLog) -> (Periodic, VcpuId, VcpuId) {
        let mut p = Periodic::new(1);
        let mut cx = Cx { now: ms(0), log };
        let (hi, lo) = (VcpuId(0), VcpuId(1));
        p.insert_vcpu(&mut cx, hi, &VcpuParams::server(ms(2), ms(5), 1));
        p.insert_vcpu(&mut cx, lo, &VcpuParams::server(ms(4), ms(10), 2));
        (p, hi, lo)
    }

    #[test]
    fn idle_highest_server_idles_its_budget_away_and_its_wake_preempts() {
        let mut log = EventLog::new(false);
        let (mut p, hi, lo) = two_servers(&mut log);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        let d = p.do_schedule(&mut cx, PcpuId(0));
        assert_eq!((d.run, d.slice), (None, Some(ms(2))));
        assert_eq!(p.active().charge, Charge::IdledAway(hi));
        assert!(!p.wake(&mut cx, lo), "lo waits behind the idle hi");
        cx.now = ms(1);
        p.burn(&mut cx, PcpuId(0), ms(1), Spent::Running);
        assert_eq!(p.view(hi).remaining_budget, Some(ms(1)));
        assert_eq!(p.counters(hi).idled, ms(1));
        assert_eq!(p.view(lo).remaining_budget, Some(ms(4)));
        assert!(
            p.wake(&mut cx, hi),
            "the idling H wakes: it must run at once"
        );
        let d = p.do_schedule(&mut cx, PcpuId(0));
        assert_eq!((d.run, d.slice), (Some(hi), Some(ms(1))));
        p.check_invariants().unwrap();
    }
}
