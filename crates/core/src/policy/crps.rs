//! CRPS — the capacity-reclaiming periodic server of the CSA framework, also called SSPS
//! (slack-stealing periodic server) (Lee et al., "Realizing Compositional Scheduling
//! through Virtualization", RTAS 2012).
//!
//! # Design note
//! - **Replenishment**: like the Periodic Server, set to B at every period boundary.
//! - **H** = the highest-priority VCPU with remaining budget > 0, with or without work.
//! - **do_schedule**: H has work → H runs on its own budget (slice: H's budget). H has no
//!   work → H **lends** its budget and only H's budget is consumed (`lent` on H,
//!   `borrowed` on the runner): the runner is the highest-priority VCPU with work and
//!   budget > 0 (necessarily below H); if no VCPU with work has budget, the
//!   highest-priority VCPU with work even with budget 0 — it may even be above H. The
//!   runner's own budget is untouched. Slice: H's budget. Nobody has work → IDLE, H's
//!   budget idled away. No VCPU has budget (no H) → IDLE even if some have work: budget is
//!   never taken from the IDLE VCPU.
//! - **Reschedule**: any event that changes the runner or the lender — H's wake (H then
//!   runs itself), the wake of a VCPU that beats the runner, the replenishment of a VCPU
//!   above the runner that then becomes the lender (the runner stays, but now spends
//!   another budget) — asks for a new decision at once.
//! - **Several pcpus: global fixed priority** (as PTPS, `periodic.rs`): for pcpu p, H_p is
//!   the highest-priority VCPU with budget allowed on p and named by no other pcpu's plan;
//!   without work, H_p lends its budget on p to the best VCPU with work allowed on p and
//!   named by no other plan (one with budget preferred, else any, even above H_p).

use crate::policy::fp::{self, Candidates, PeriodicFamily, PeriodicRule, Plan};
use crate::policy::PolicyKind;

/// The CRPS decision rule.
pub struct CrpsRule;

impl PeriodicRule for CrpsRule {
    const KIND: PolicyKind = PolicyKind::Crps;

    #[inline(always)]
    fn plan(candidates: &impl Candidates) -> Plan {
        fp::plan_crps(candidates)
    }
}

/// The capacity-reclaiming periodic server.
pub type Crps = PeriodicFamily<CrpsRule>;

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

    #[test]
    fn idle_server_lends_only_its_own_budget_even_to_a_depleted_vcpu() {
        let mut log = EventLog::new(false);
        let mut p = Crps::new(1);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        let (a, b) = (VcpuId(0), VcpuId(1));
        p.insert_vcpu(&mut cx, a, &VcpuParams::server(ms(1), ms(5), 1));
        p.insert_vcpu(&mut cx, b, &VcpuParams::server(ms(2), ms(10), 2));
        assert!(p.wake(&mut cx, a));
        let d = p.do_schedule(&mut cx, PcpuId(0));
        assert_eq!((d.run, d.slice), (Some(a), Some(ms(1))));
        cx.now = ms(1);
        p.burn(&mut cx, PcpuId(0), ms(1), Spent::Running);
        // a (work, budget 0) is above H = b (no work): b lends to a.
        let d = p.do_schedule(&mut cx, PcpuId(0));
        assert_eq!((d.run, d.slice), (Some(a), Some(ms(2))));
        assert_eq!(
            p.active().charge,
            Charge::Lent {
                lender: b,
                runner: a
            }
        );
        cx.now = ms(3);
        p.burn(&mut cx, PcpuId(0), ms(2), Spent::Running);
        assert_eq!(p.view(a).remaining_budget, Some(Nanos::ZERO));
        assert_eq!(p.view(b).remaining_budget, Some(Nanos::ZERO));
        assert_eq!(p.counters(b).lent, ms(2));
        assert_eq!(p.counters(a).borrowed, ms(2));
        assert_eq!(p.counters(a).consumed, ms(1));
        // Nobody has budget: IDLE although a has work.
        assert_eq!(
            p.do_schedule(&mut cx, PcpuId(0)),
            crate::policy::Decision::IDLE
        );
        p.check_invariants().unwrap();
    }
}
