//! `sedf-ideal`: SEDF as ideal EDF over slice/period — rtvmm's SEDF model before it
//! followed Xen 4.0's wake-up rules ([`sedf`](super::sedf) is Xen's). Kept by name, for
//! comparing against what Xen's code did (see `docs/policies.md`, "SEDF").
//!
//! # Design note
//! - **Parameters** (fixed): `slice` s (= `params.budget`), `period` p (= `params.period`),
//!   `extratime` (= `params.extratime`). **Live state**: the `remaining` slice and the
//!   current `deadline` (= end of the current period).
//! - **Periods** lie on a fixed grid from the VCPU's first period start (`insert + offset`).
//!   At every boundary the slice is **set** to s (unused slice is lost) and the deadline
//!   moves to the end of the new period; boundaries processed late skip whole periods.
//!   Every VCPU has a boundary timer, with or without work. (Xen 4.0 instead restarts the
//!   period of a domain that wakes after a long block at its wake time, and takes the rest
//!   of the period from one that wakes inside it: [`sedf`](super::sedf).)
//! - **Consumption**: the slice is consumed only while the VCPU runs on it and preserved
//!   while it does not.
//! - **Priority** — one total order, `SedfVcpu::key`: earlier deadline, then smaller VCPU
//!   id. `do_schedule` runs the VCPU with work and slice left that has the smallest key; the
//!   decision's slice is its remaining slice.
//! - **Extra time**: when no VCPU with work has slice left, VCPUs with work, no slice and
//!   `extratime` run round-robin, [`EXTRA_QUANTUM`] at a time. Extra time consumes no slice.
//!   The round-robin order is one queue of all VCPUs; a VCPU leaving the pcpu after an extra
//!   run (quantum over, preempted, or blocked) goes to its back. Any VCPU with slice left and
//!   work preempts an extra run at once. (Xen 4.0 split extra time between a "L0" queue of
//!   recently blocked domains and a weighted queue: [`sedf`](super::sedf).)
//! - **Preemption**: a wake or a boundary asks for a reschedule when the VCPU then has work
//!   and slice and its key beats the running one's (or the pcpu idles or runs extra time),
//!   or when a VCPU with extratime wakes on an idle pcpu.
//! - **adjust**: new parameters take effect at the next boundary; the remaining slice is cut
//!   to the new slice at once, and a larger slice is not granted early.
//! - **When it runs** (Xen 4.0's SEDF is event-driven, no tick): `do_schedule` runs when the
//!   slice it returned ends (the running VCPU's slice, or its extra-time quantum), at a
//!   period boundary that asks for it (the boundary timer: a replenished VCPU that beats
//!   what runs, or the running one's slice re-armed), on block, and on a preempting wake.
//!
//! Several pcpus: SEDF runs partitioned, one instance per pcpu, each VCPU pinned to one
//! pcpu ([`Partitioned`](super::partitioned::Partitioned)) — as Xen's SEDF, which kept one
//! run queue per pcpu and never migrated a VCPU by itself.
//!
//! Known gap: no load balancing between the pcpus of a pool (nor had Xen's).

use std::collections::VecDeque;

use crate::event::Cx;
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::edf::{EdfServer, EdfSet};
use crate::policy::{BudgetCounters, Decision, Policy, PolicyKind, Spent, TickInterval, VcpuView};
use crate::time::Nanos;

/// How long an extra-time run lasts before the next VCPU's turn (Xen 4.0's
/// `EXTRA_QUANTUM`, 500 µs).
pub use super::sedf::EXTRA_QUANTUM;

/// The EDF key: deadline, then VCPU id. Smaller is more urgent.
#[inline]
fn key(s: &EdfServer) -> (Nanos, VcpuId) {
    (s.deadline, s.vcpu)
}

fn wants_extra_time(s: &EdfServer) -> bool {
    s.has_work && s.remaining.is_zero() && s.params.extratime_under(PolicyKind::SedfIdeal)
}

/// Every SEDF VCPU has a boundary timer, with or without work.
fn timed(_: &EdfServer) -> bool {
    true
}

/// What the running VCPU runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RunMode {
    /// Its own slice, consumed while it runs.
    Slice,
    /// Extra time: no slice consumed; the run lasts at most [`EXTRA_QUANTUM`].
    Extra,
}

/// The ideal-EDF SEDF policy for one pcpu.
pub struct SedfIdeal {
    /// The VCPUs (slice = budget), with the earliest deadline remembered: deadlines change
    /// only in `insert_vcpu`, `remove_vcpu` and `handle_timer`, which refresh it.
    servers: EdfSet<EdfServer>,
    /// What the last `do_schedule` chose (None = IDLE) and on what.
    current: Option<(VcpuId, RunMode)>,
    /// Extra time the current VCPU has used in its current extra run.
    extra_used: Nanos,
    /// The round-robin order for extra time: every VCPU, next turn first.
    extra_order: VecDeque<VcpuId>,
}

impl SedfIdeal {
    pub fn new(_pcpus: u32) -> SedfIdeal {
        SedfIdeal {
            servers: EdfSet::default(),
            current: None,
            extra_used: Nanos::ZERO,
            extra_order: VecDeque::new(),
        }
    }

    fn current_vcpu(&self) -> Option<VcpuId> {
        self.current.map(|(v, _)| v)
    }

    /// Whether `vcpu`, just woken or replenished, should take the pcpu now.
    fn preempts(&self, vcpu: VcpuId) -> bool {
        let s = self.servers.get(vcpu);
        match self.current {
            Some((c, _)) if c == vcpu => false,
            None => s.eligible() || wants_extra_time(s),
            Some((_, RunMode::Extra)) => s.eligible(),
            Some((c, RunMode::Slice)) => s.eligible() && key(s) < key(self.servers.get(c)),
        }
    }

    /// The VCPU ends an extra run: its round-robin turn is over.
    fn end_extra_turn(&mut self, vcpu: VcpuId) {
        self.extra_order.retain(|&v| v != vcpu);
        self.extra_order.push_back(vcpu);
    }
}

impl Policy for SedfIdeal {
    fn kind(&self) -> PolicyKind {
        PolicyKind::SedfIdeal
    }

    /// Slice and period > 0, slice ≤ period.
    fn validate(&self, params: &VcpuParams) -> Result<(), ParamError> {
        params.validate_slice()
    }

    fn insert_vcpu(&mut self, cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) {
        self.servers.insert(EdfServer::new(cx.now, vcpu, params));
        self.extra_order.push_back(vcpu);
        self.servers.refresh_timer(timed);
    }

    fn remove_vcpu(&mut self, _cx: &mut Cx, vcpu: VcpuId) {
        if self.current_vcpu() == Some(vcpu) {
            self.current = None;
        }
        self.extra_order.retain(|&v| v != vcpu);
        self.servers.remove(vcpu);
        self.servers.refresh_timer(timed);
    }

    fn wake(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.servers.get_mut(vcpu).has_work = true;
        self.preempts(vcpu)
    }

    fn sleep(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.servers.get_mut(vcpu).has_work = false;
        self.current_vcpu() == Some(vcpu)
    }

    fn burn(&mut self, cx: &mut Cx, _pcpu: PcpuId, ran: Nanos, spent: Spent) {
        match self.current {
            None => {}
            Some((_, RunMode::Extra)) => self.extra_used += ran,
            Some((v, RunMode::Slice)) => {
                self.servers.get_mut(v).consume(cx, ran, spent);
            }
        }
    }

    fn do_schedule(&mut self, _cx: &mut Cx, _pcpu: PcpuId) -> Decision {
        // 1. EDF among VCPUs with work and slice left.
        let edf = self
            .servers
            .pick(|_| true, key)
            .map(|s| (s.vcpu, s.remaining));
        let extra_runner = match self.current {
            Some((v, RunMode::Extra)) => Some(v),
            _ => None,
        };
        if let Some((vcpu, remaining)) = edf {
            if let Some(x) = extra_runner {
                self.end_extra_turn(x);
            }
            self.current = Some((vcpu, RunMode::Slice));
            return Decision {
                run: Some(vcpu),
                slice: Some(remaining),
            };
        }
        // 2. Extra time, round-robin: the current extra run goes on until its quantum ends.
        if let Some(x) = extra_runner {
            if wants_extra_time(self.servers.get(x)) && self.extra_used < EXTRA_QUANTUM {
                return Decision {
                    run: Some(x),
                    slice: Some(EXTRA_QUANTUM - self.extra_used),
                };
            }
            self.end_extra_turn(x);
        }
        let next = self
            .extra_order
            .iter()
            .copied()
            .find(|&v| wants_extra_time(self.servers.get(v)));
        self.extra_used = Nanos::ZERO;
        match next {
            Some(v) => {
                self.current = Some((v, RunMode::Extra));
                Decision {
                    run: Some(v),
                    slice: Some(EXTRA_QUANTUM),
                }
            }
            None => {
                self.current = None;
                Decision::IDLE
            }
        }
    }

    /// No tick: event-driven, as Xen 4.0's SEDF (see the design note).
    fn tick_interval(&self) -> TickInterval {
        TickInterval::None
    }

    fn next_timer(&self) -> Option<Nanos> {
        debug_assert_eq!(
            self.servers.next_timer(),
            self.servers.earliest_deadline(timed)
        );
        self.servers.next_timer()
    }

    fn handle_timer(&mut self, cx: &mut Cx) -> bool {
        let mut resched = false;
        let mut replenished = false;
        // A VCPU's due test reads only its own deadline, which only its own replenishment
        // changes: one pass in id order replenishes exactly the VCPUs due on entry.
        for i in 0..self.servers.capacity() {
            let v = VcpuId(i as u32);
            if !self.servers.contains(v) || self.servers.get(v).deadline > cx.now {
                continue;
            }
            self.servers.get_mut(v).replenish(cx);
            replenished = true;
            // The running VCPU's slice changed (or it can leave extra time): re-arm it.
            resched |= self.current_vcpu() == Some(v) || self.preempts(v);
        }
        if replenished {
            self.servers.refresh_timer(timed);
        }
        resched
    }

    fn adjust(&mut self, _cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) -> bool {
        self.servers.get_mut(vcpu).adjust(params);
        self.current_vcpu() == Some(vcpu)
    }

    fn view(&self, vcpu: VcpuId) -> VcpuView {
        self.servers.get(vcpu).view()
    }

    fn counters(&self, vcpu: VcpuId) -> BudgetCounters {
        self.servers.get(vcpu).counters
    }

    fn check_invariants(&self) -> Result<(), String> {
        self.servers.check(timed)?;
        for s in self.servers.iter() {
            if self.extra_order.iter().filter(|&&v| v == s.vcpu).count() != 1 {
                return Err(format!(
                    "vcpu {:?}: not exactly once in the extra-time order",
                    s.vcpu
                ));
            }
        }
        if self.extra_order.len() != self.servers.iter().count() {
            return Err("extra-time order holds unknown vcpus".to_string());
        }
        if let Some((RunMode::Extra, used)) = self.current.map(|(_, m)| (m, self.extra_used)) {
            if used > EXTRA_QUANTUM {
                return Err(format!("extra run of {used} above the quantum"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventLog;

    fn ms(x: u64) -> Nanos {
        Nanos::from_ms(x)
    }

    #[test]
    fn boundary_sets_slice_and_skips_missed_periods() {
        let mut log = EventLog::new(false);
        let mut sedf = SedfIdeal::new(1);
        let v = VcpuId(0);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        sedf.insert_vcpu(&mut cx, v, &VcpuParams::server(ms(2), ms(5), 0));
        sedf.wake(&mut cx, v);
        sedf.do_schedule(&mut cx, PcpuId(0));
        let mut cx = Cx {
            now: ms(1),
            log: &mut log,
        };
        sedf.burn(&mut cx, PcpuId(0), ms(1), Spent::Running);
        assert_eq!(sedf.view(v).remaining_budget, Some(ms(1)));
        // Processed late (tick-timed): 5 and 10 have passed; the next boundary is 15.
        let mut cx = Cx {
            now: ms(12),
            log: &mut log,
        };
        assert!(sedf.handle_timer(&mut cx));
        assert_eq!(sedf.view(v).remaining_budget, Some(ms(2)));
        assert_eq!(sedf.view(v).deadline, Some(ms(15)));
    }

    #[test]
    fn extratime_vcpu_waking_on_an_idle_pcpu_preempts_idle() {
        let mut log = EventLog::new(false);
        let mut sedf = SedfIdeal::new(1);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        let mut p = VcpuParams::server(ms(1), ms(5), 0);
        p.extratime = Some(true);
        sedf.insert_vcpu(&mut cx, VcpuId(0), &p);
        sedf.wake(&mut cx, VcpuId(0));
        sedf.do_schedule(&mut cx, PcpuId(0));
        let mut cx = Cx {
            now: ms(1),
            log: &mut log,
        };
        sedf.burn(&mut cx, PcpuId(0), ms(1), Spent::Running);
        sedf.sleep(&mut cx, VcpuId(0));
        assert_eq!(sedf.do_schedule(&mut cx, PcpuId(0)), Decision::IDLE);
        let mut cx = Cx {
            now: ms(2),
            log: &mut log,
        };
        assert!(
            sedf.wake(&mut cx, VcpuId(0)),
            "idle pcpu, extra time wanted"
        );
        assert_eq!(
            sedf.do_schedule(&mut cx, PcpuId(0)),
            Decision {
                run: Some(VcpuId(0)),
                slice: Some(EXTRA_QUANTUM)
            }
        );
    }
}
