//! Overhead and time accounting: what scheduling costs ([`Overheads`]), who pays for it
//! ([`OverheadCharge`]), the counters a driver reads ([`PcpuStats`], [`VcpuStats`]), and
//! the accounting of every pcpu's time up to the present instant, which keeps
//! `busy + idle + overhead` equal to the time accounted, exactly.

use super::{Activity, Machine};
use crate::event::Cx;
use crate::model::PcpuId;
use crate::policy::Spent;
use crate::time::Nanos;

/// Costs charged as pcpu overhead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Overheads {
    /// Charged for every `do_schedule` call.
    pub do_schedule: Nanos,
    /// Charged in addition when the chosen VCPU differs from the previous one.
    pub context_switch: Nanos,
    /// Charged in addition when the chosen VCPU last ran on another pcpu (a migration;
    /// `docs/platform.md`), on the destination pcpu.
    pub migration: Nanos,
    /// The global run-queue lock: charged for every `do_schedule` of a pool, once per
    /// pcpu of that pool (so it grows with the pool).
    pub lock: Nanos,
}

impl Overheads {
    /// No cost at all (the default).
    pub const ZERO: Overheads = Overheads {
        do_schedule: Nanos::ZERO,
        context_switch: Nanos::ZERO,
        migration: Nanos::ZERO,
        lock: Nanos::ZERO,
    };
}

/// Who pays for scheduler overhead (the cost of `do_schedule` and of the switch it causes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OverheadCharge {
    /// The decision that follows the overhead is charged for it as if it ran: the chosen
    /// VCPU's budget (credit, slice) is consumed, and its slice counts from the instant
    /// `do_schedule` began, as in Xen. Nobody pays when IDLE runs on nobody's budget.
    #[default]
    Incoming,
    /// Nobody: overhead time is lost to everyone and consumes no budget.
    None,
}

impl OverheadCharge {
    pub fn name(self) -> &'static str {
        match self {
            OverheadCharge::Incoming => "incoming",
            OverheadCharge::None => "none",
        }
    }

    pub fn from_name(name: &str) -> Option<OverheadCharge> {
        match name {
            "incoming" => Some(OverheadCharge::Incoming),
            "none" => Some(OverheadCharge::None),
            _ => None,
        }
    }
}

/// Per-pcpu counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PcpuStats {
    pub busy: Nanos,
    pub idle: Nanos,
    pub overhead: Nanos,
    pub do_schedule_calls: u64,
    pub context_switches: u64,
}

/// Per-VCPU counters kept by the machine (budget counters are the policy's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VcpuStats {
    pub run: Nanos,
    /// Times switched in.
    pub scheduled: u64,
    /// Times switched out while it still had work.
    pub preemptions: u64,
    /// Times switched in on another pcpu than the one it last ran on.
    pub migrations: u64,
}

impl Machine {
    /// Accounts every pcpu's time up to `now` and charges the policies for it.
    pub(super) fn account(&mut self, now: Nanos) {
        if self.lone() {
            self.account_inline::<true>(now);
        } else {
            self.account_inline::<false>(now);
        }
    }

    /// [`Self::account`], inlined into `handle_timeout`: the call is made on every step.
    /// `LONE`: see [`Self::lone`].
    #[inline(always)]
    pub(super) fn account_inline<const LONE: bool>(&mut self, now: Nanos) {
        assert!(
            now >= self.now,
            "time went backwards: {} after {}",
            now,
            self.now
        );
        // Every pcpu is accounted up to `self.now` whenever this returns (and only this
        // changes `accounted_to`): at the same instant again there is nothing to charge,
        // which is the usual case on several pcpus (a wake or a block, then the timeout,
        // at one instant).
        if now == self.now {
            return;
        }
        self.now = now;
        for i in 0..self.pcpus_of::<LONE>().len() {
            let pcpu = PcpuId(i as u32);
            let place = self.place::<LONE>(i);
            loop {
                let p = &mut self.pcpus[i];
                let from = p.accounted_to;
                match p.activity {
                    Activity::Overhead {
                        since,
                        until,
                        decision,
                        reason,
                    } => {
                        let end = until.min(now);
                        let spent = end - from;
                        p.stats.overhead += spent;
                        p.accounted_to = end;
                        // A free pcpu (in no pool) may finish an overhead begun in a pool:
                        // nobody pays for it.
                        if let Some((pool, local)) = place.filter(|_| {
                            self.config.overhead_charge == OverheadCharge::Incoming
                                && !spent.is_zero()
                        }) {
                            let mut cx = Cx {
                                now: end,
                                log: &mut self.log,
                            };
                            self.pools[pool].policy.burn(
                                &mut cx,
                                PcpuId(local),
                                spent,
                                Spent::Overhead,
                            );
                        }
                        if until > now {
                            break;
                        }
                        // Overhead over: the decision starts at `until`.
                        let previous = self.pcpus[i].last_run;
                        self.now = until;
                        self.start(pcpu, decision, reason, previous, since);
                        self.now = now;
                    }
                    activity => {
                        if from == now {
                            break;
                        }
                        let ran = now - from;
                        match activity {
                            Activity::Running(v) => {
                                p.stats.busy += ran;
                                self.vcpus[v.index()].stats.run += ran;
                            }
                            _ => p.stats.idle += ran,
                        }
                        p.accounted_to = now;
                        // A free pcpu idles on nobody's behalf.
                        if let Some((pool, local)) = place {
                            let mut cx = Cx {
                                now,
                                log: &mut self.log,
                            };
                            self.pools[pool].policy.burn(
                                &mut cx,
                                PcpuId(local),
                                ran,
                                Spent::Running,
                            );
                        }
                        break;
                    }
                }
            }
        }
    }
}
