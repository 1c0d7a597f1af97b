//! Polling Server — the "discarding periodic server" (Davis & Burns; RT-Xen, EMSOFT
//! 2011).
//!
//! # Design note
//! - **Replenishment**: like the Periodic Server, set to B at every period boundary.
//! - **Rule**: let H be the highest-priority VCPU with budget > 0. If H has no work, its
//!   budget is **discarded** (set to 0; counted in `discarded`, event `BudgetDiscarded`)
//!   and the decision continues with the next H. So the VCPU that runs is the
//!   highest-priority one with work and budget (`queuePick(RunQ)`, on its own budget), and
//!   every VCPU above it (every VCPU, when IDLE runs) that has budget but no work loses it.
//!   A VCPU that blocks while running is such a VCPU at the reschedule that follows, so it
//!   loses its remaining budget at that moment; one that discarded and wakes later in the
//!   same period has no budget and waits for its next boundary.
//! - **When the discard happens** (a choice the algorithm leaves open at a single
//!   instant): discards take effect when time starts to pass under the decision — in
//!   `burn`, stamped with the instant the burned time began — not inside `do_schedule`.
//!   Events at one instant are reported one by one (a job finishes, the next is released;
//!   a period boundary and a release coincide; the first decision of a run precedes the
//!   releases at time 0); with eager discards their order would decide whether work that
//!   arrives at the very instant of the poll is served. Here it always is: a server polls
//!   once the instant is over.
//! - **At scale**: the discard looks only at the servers with budget and no work, which a
//!   large [`ServerSet`] keeps in an ordered set ([`ServerSet::discard_ahead_of`]): a burn
//!   with nothing to discard costs O(log n), not a scan of every server above the runner.
//! - **Reschedule**: as for the Deferrable Server, only when a VCPU with work and budget
//!   would beat what runs (a replenished VCPU without work is discarded as time passes,
//!   which needs no new decision).
//! - **Several pcpus: global fixed priority** (as PTPS, `periodic.rs`): for pcpu p, an
//!   H_p (the highest-priority VCPU with budget allowed on p and named by no other pcpu's
//!   plan) without work discards its budget and the pick goes on to the next; so p runs the
//!   highest-priority VCPU with work and budget eligible there. The discards happen as time
//!   passes on p (`burn`): every VCPU eligible on p above p's runner (all of them, when p
//!   idles) that has budget and no work loses it. A VCPU allowed only on pcpus whose runner
//!   beats it keeps its budget, as it is H nowhere.

use crate::event::Cx;
use crate::model::VcpuId;
use crate::policy::fp::{self, Candidates, PeriodicFamily, PeriodicRule, Plan, ServerSet};
use crate::policy::PolicyKind;
use crate::time::Nanos;

/// The Polling Server's decision rule.
pub struct PollingRule;

impl PeriodicRule for PollingRule {
    const KIND: PolicyKind = PolicyKind::Polling;
    const DISCARDS_IDLE_BUDGET: bool = true;

    #[inline(always)]
    fn plan(candidates: &impl Candidates) -> Plan {
        fp::plan_own_budget(candidates)
    }

    #[inline(always)]
    fn time_passed(
        servers: &mut ServerSet,
        cx: &mut Cx,
        active: Plan,
        ran: Nanos,
        eligible: impl Fn(VcpuId) -> bool,
    ) {
        let began = cx.now - ran;
        servers.discard_ahead_of(cx, active.run, began, eligible);
    }
}

/// The Polling Server.
pub type Polling = PeriodicFamily<PollingRule>;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{CoreEvent, EventLog};
    use crate::model::{PcpuId, VcpuId, VcpuParams};
    use crate::policy::Policy;
    use crate::policy::Spent;

    fn ms(x: u64) -> Nanos {
        Nanos::from_ms(x)
    }

    #[test]
    fn work_less_servers_above_the_runner_are_discarded_once_time_passes() {
        let mut log = EventLog::new(true);
        let mut p = Polling::new(1);
        let (hi, mid, lo) = (VcpuId(0), VcpuId(1), VcpuId(2));
        {
            let mut cx = Cx {
                now: ms(0),
                log: &mut log,
            };
            p.insert_vcpu(&mut cx, hi, &VcpuParams::server(ms(2), ms(5), 1));
            p.insert_vcpu(&mut cx, mid, &VcpuParams::server(ms(2), ms(10), 2));
            p.insert_vcpu(&mut cx, lo, &VcpuParams::server(ms(2), ms(20), 3));
            p.do_schedule(&mut cx, PcpuId(0));
            // A wake at the instant of the decision still counts as work at the poll.
            assert!(p.wake(&mut cx, mid));
            let d = p.do_schedule(&mut cx, PcpuId(0));
            assert_eq!((d.run, d.slice), (Some(mid), Some(ms(2))));
            cx.now = ms(1);
            p.burn(&mut cx, PcpuId(0), ms(1), Spent::Running);
            // hi (above the runner, no work) lost its budget; lo (below) kept it.
            assert_eq!(p.view(hi).remaining_budget, Some(Nanos::ZERO));
            assert_eq!(p.counters(hi).discarded, ms(2));
            assert_eq!(p.view(mid).remaining_budget, Some(ms(1)));
            assert_eq!(p.view(lo).remaining_budget, Some(ms(2)));
            // hi wakes later in its period: no budget, it waits.
            assert!(!p.wake(&mut cx, hi));
            // mid blocks with 1 ms left: gone once time passes again.
            p.sleep(&mut cx, mid);
            // hi has work but no budget, nobody else has work: IDLE.
            assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, None);
            cx.now = ms(2);
            p.burn(&mut cx, PcpuId(0), ms(1), Spent::Running);
            assert_eq!(p.view(mid).remaining_budget, Some(Nanos::ZERO));
            assert_eq!(p.view(lo).remaining_budget, Some(Nanos::ZERO));
            p.check_invariants().unwrap();
        }
        let discards: Vec<_> = log
            .drain()
            .filter_map(|(t, e)| match e {
                CoreEvent::BudgetDiscarded { vcpu, amount } => Some((t, vcpu, amount)),
                _ => None,
            })
            .collect();
        assert_eq!(
            discards,
            vec![(ms(0), hi, ms(2)), (ms(1), mid, ms(1)), (ms(1), lo, ms(2))],
            "each discard is stamped with the instant time began to pass"
        );
    }
}
