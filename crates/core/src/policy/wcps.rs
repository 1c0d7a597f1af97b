//! WCPS — the work-conserving periodic server of the CSA framework (Lee et al.,
//! "Realizing Compositional Scheduling through Virtualization", RTAS 2012).
//!
//! # Design note
//! - **Replenishment**: like the Periodic Server, set to B at every period boundary.
//! - **H** = the highest-priority VCPU with remaining budget > 0, with or without work.
//! - **do_schedule**: H has work → H runs on its own budget (slice: H's budget). H has no
//!   work → L = the highest-priority VCPU with work and budget > 0 (necessarily below H:
//!   nobody above H has budget) runs, and **both** H's and L's budgets are consumed, one
//!   unit each per unit of time (both counted in `consumed`); slice: the smaller of the
//!   two budgets, so a new decision comes when either runs out. No L → IDLE, H's budget
//!   idled away (`idled`). No H → IDLE, nothing charged.
//! - **L stops** when it runs out of work (it blocks), when its budget or H's is gone (the
//!   slice), or when H gets work: H's wake changes the plan, so it preempts L at once. A
//!   wake of a VCPU between H and L (with budget) likewise takes L's place at once.
//! - Choice where the paper is silent: L's own budget is consumed at the same rate as H's
//!   (the spec's "each at one unit per unit of time"), so work done on H's behalf is not
//!   free for L.
//! - **Several pcpus: global fixed priority** (as PTPS, `periodic.rs`): for pcpu p, H_p is
//!   the highest-priority VCPU with budget allowed on p and named by no other pcpu's plan;
//!   without work, L_p — the highest-priority VCPU with work and budget allowed on p and
//!   named by no other plan, necessarily behind H_p — runs on p on both budgets. L_p is
//!   chosen by the pcpu that decides first: a VCPU that could run on its own budget on an
//!   idle pcpu may be taken by another pcpu's H first (greedy, pcpu by pcpu).

use crate::policy::fp::{self, Candidates, PeriodicFamily, PeriodicRule, Plan};
use crate::policy::PolicyKind;

/// The WCPS decision rule.
pub struct WcpsRule;

impl PeriodicRule for WcpsRule {
    const KIND: PolicyKind = PolicyKind::Wcps;

    #[inline(always)]
    fn plan(candidates: &impl Candidates) -> Plan {
        fp::plan_wcps(candidates)
    }
}

/// The work-conserving periodic server.
pub type Wcps = PeriodicFamily<WcpsRule>;

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
    fn lower_priority_work_runs_on_both_budgets_until_the_smaller_runs_out() {
        let mut log = EventLog::new(false);
        let mut p = Wcps::new(1);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        let (hi, mid, lo) = (VcpuId(0), VcpuId(1), VcpuId(2));
        p.insert_vcpu(&mut cx, hi, &VcpuParams::server(ms(3), ms(5), 1));
        p.insert_vcpu(&mut cx, mid, &VcpuParams::server(ms(2), ms(10), 2));
        p.insert_vcpu(&mut cx, lo, &VcpuParams::server(ms(1), ms(10), 3));
        p.do_schedule(&mut cx, PcpuId(0));
        // IDLE idling hi's budget; lo's wake gives hi's time a user.
        assert!(p.wake(&mut cx, lo));
        let d = p.do_schedule(&mut cx, PcpuId(0));
        assert_eq!(d.run, Some(lo));
        assert_eq!(d.slice, Some(ms(1)), "lo's 1 ms runs out before hi's 3 ms");
        assert_eq!(
            p.active().charge,
            Charge::Both {
                server: hi,
                runner: lo
            }
        );
        // mid wakes: it has budget and beats lo, so it takes lo's place at once.
        assert!(p.wake(&mut cx, mid));
        let d = p.do_schedule(&mut cx, PcpuId(0));
        assert_eq!((d.run, d.slice), (Some(mid), Some(ms(2))));
        cx.now = ms(2);
        p.burn(&mut cx, PcpuId(0), ms(2), Spent::Running);
        assert_eq!(p.view(hi).remaining_budget, Some(ms(1)));
        assert_eq!(p.view(mid).remaining_budget, Some(Nanos::ZERO));
        assert_eq!(p.counters(hi).consumed, ms(2));
        assert_eq!(p.counters(mid).consumed, ms(2));
        // hi wakes: it preempts whoever runs on its budget.
        let d = p.do_schedule(&mut cx, PcpuId(0));
        assert_eq!((d.run, d.slice), (Some(lo), Some(ms(1))));
        assert!(p.wake(&mut cx, hi));
        let d = p.do_schedule(&mut cx, PcpuId(0));
        assert_eq!((d.run, d.slice), (Some(hi), Some(ms(1))));
        p.check_invariants().unwrap();
    }
}
