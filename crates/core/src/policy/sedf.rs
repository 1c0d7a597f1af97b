//! SEDF: Xen's simple EDF scheduler (Xen 4.0, `xen/common/sched_sedf.c`; removed in 4.6).
//!
//! # Design note
//! - **Parameters** (fixed): `slice` s (= `params.budget`), `period` p (= `params.period`),
//!   `extratime` (= `params.extratime`). **Live state**: the `remaining` slice and the
//!   current `deadline` (= end of the current period).
//! - **Periods** lie on a fixed grid from the VCPU's first period start (`insert + offset`).
//!   At every boundary the slice is **set** to s (unused slice is lost) and the deadline
//!   moves to the end of the new period; boundaries processed late skip whole periods.
//!   Every VCPU has a boundary timer, with or without work. (Xen 4.0 instead restarts the
//!   period of a domain that wakes after a long block at its wake time; the rtvmm spec
//!   keeps the grid, like the Deferrable Server.)
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
//!   recently blocked domains and a weighted queue; the rtvmm spec asks for plain
//!   round-robin.)
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
//! Known gap: one pcpu per instance (Xen's SEDF was per-pcpu too).

use std::collections::VecDeque;

use crate::event::{CoreEvent, Cx};
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::{BudgetCounters, Decision, Policy, PolicyKind, Spent, TickInterval, VcpuView};
use crate::time::Nanos;

/// How long an extra-time run lasts before the next VCPU's turn (Xen 4.0's
/// `EXTRA_QUANTUM`, 500 µs).
pub const EXTRA_QUANTUM: Nanos = Nanos::from_us(500);

/// One SEDF VCPU.
#[derive(Clone, Debug)]
struct SedfVcpu {
    vcpu: VcpuId,
    params: VcpuParams,
    /// Parameters set by `adjust`, applied at the next boundary.
    pending: Option<VcpuParams>,
    /// Remaining slice in the current period, in `[0, params.budget]`.
    remaining: Nanos,
    /// End of the current period (the next boundary).
    deadline: Nanos,
    has_work: bool,
    counters: BudgetCounters,
}

impl SedfVcpu {
    /// The EDF key: deadline, then VCPU id. Smaller is more urgent.
    #[inline]
    fn key(&self) -> (Nanos, VcpuId) {
        (self.deadline, self.vcpu)
    }

    fn has_slice_and_work(&self) -> bool {
        self.has_work && !self.remaining.is_zero()
    }

    fn wants_extra_time(&self) -> bool {
        self.has_work && self.remaining.is_zero() && self.params.extratime
    }
}

/// What the running VCPU runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RunMode {
    /// Its own slice, consumed while it runs.
    Slice,
    /// Extra time: no slice consumed; the run lasts at most [`EXTRA_QUANTUM`].
    Extra,
}

/// The SEDF policy for one pcpu.
pub struct Sedf {
    /// Indexed by VCPU id; `None` for ids that are not (or no longer) here.
    vcpus: Vec<Option<SedfVcpu>>,
    /// What the last `do_schedule` chose (None = IDLE) and on what.
    current: Option<(VcpuId, RunMode)>,
    /// Extra time the current VCPU has used in its current extra run.
    extra_used: Nanos,
    /// The round-robin order for extra time: every VCPU, next turn first.
    extra_order: VecDeque<VcpuId>,
    /// What [`Policy::next_timer`] returns: the earliest deadline of any VCPU. The machine
    /// asks after every hook, so it is kept rather than recomputed; deadlines change only in
    /// `insert_vcpu`, `remove_vcpu` and `handle_timer`, which call [`Sedf::refresh_timer`].
    next_boundary: Option<Nanos>,
}

impl Sedf {
    pub fn new(_pcpus: u32) -> Sedf {
        Sedf {
            vcpus: Vec::new(),
            current: None,
            extra_used: Nanos::ZERO,
            extra_order: VecDeque::new(),
            next_boundary: None,
        }
    }

    /// The earliest deadline of any VCPU.
    fn earliest_deadline(&self) -> Option<Nanos> {
        self.iter().map(|s| s.deadline).min()
    }

    /// Recomputes `next_boundary` after a deadline changed.
    fn refresh_timer(&mut self) {
        self.next_boundary = self.earliest_deadline();
    }

    fn get(&self, vcpu: VcpuId) -> &SedfVcpu {
        self.vcpus[vcpu.index()]
            .as_ref()
            .expect("unknown sedf vcpu")
    }

    fn get_mut(&mut self, vcpu: VcpuId) -> &mut SedfVcpu {
        self.vcpus[vcpu.index()]
            .as_mut()
            .expect("unknown sedf vcpu")
    }

    fn iter(&self) -> impl Iterator<Item = &SedfVcpu> {
        self.vcpus.iter().flatten()
    }

    fn current_vcpu(&self) -> Option<VcpuId> {
        self.current.map(|(v, _)| v)
    }

    /// Whether `vcpu`, just woken or replenished, should take the pcpu now.
    fn preempts(&self, vcpu: VcpuId) -> bool {
        let s = self.get(vcpu);
        match self.current {
            Some((c, _)) if c == vcpu => false,
            None => s.has_slice_and_work() || s.wants_extra_time(),
            Some((_, RunMode::Extra)) => s.has_slice_and_work(),
            Some((c, RunMode::Slice)) => s.has_slice_and_work() && s.key() < self.get(c).key(),
        }
    }

    /// The VCPU ends an extra run: its round-robin turn is over.
    fn end_extra_turn(&mut self, vcpu: VcpuId) {
        self.extra_order.retain(|&v| v != vcpu);
        self.extra_order.push_back(vcpu);
    }

    /// The boundary rule: at every boundary at or before `now` the slice is set to s, pending
    /// parameters apply, and the deadline moves to the first grid point after `now`.
    fn replenish(s: &mut SedfVcpu, cx: &mut Cx) {
        if let Some(p) = s.pending.take() {
            s.params = p;
        }
        let period = s.params.period.as_ns();
        let periods_passed = (cx.now - s.deadline).as_ns() / period + 1;
        s.deadline += Nanos(period * periods_passed);
        s.remaining = s.params.budget;
        let (vcpu, budget) = (s.vcpu, s.remaining);
        cx.emit(|| CoreEvent::Replenish { vcpu, budget });
    }
}

impl Policy for Sedf {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Sedf
    }

    /// Slice and period > 0, slice ≤ period.
    fn validate(&self, params: &VcpuParams) -> Result<(), ParamError> {
        if params.period.is_zero() {
            return Err(ParamError::PeriodZero);
        }
        if params.budget.is_zero() {
            return Err(ParamError::BudgetZero);
        }
        if params.budget > params.period {
            return Err(ParamError::BudgetAbovePeriod {
                budget: params.budget,
                period: params.period,
            });
        }
        Ok(())
    }

    fn insert_vcpu(&mut self, cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) {
        let (remaining, deadline) = if params.offset.is_zero() {
            (params.budget, cx.now + params.period)
        } else {
            // No slice before the first period starts.
            (Nanos::ZERO, cx.now + params.offset)
        };
        if self.vcpus.len() <= vcpu.index() {
            self.vcpus.resize(vcpu.index() + 1, None);
        }
        self.vcpus[vcpu.index()] = Some(SedfVcpu {
            vcpu,
            params: params.clone(),
            pending: None,
            remaining,
            deadline,
            has_work: false,
            counters: BudgetCounters::default(),
        });
        self.extra_order.push_back(vcpu);
        self.refresh_timer();
    }

    fn remove_vcpu(&mut self, _cx: &mut Cx, vcpu: VcpuId) {
        if self.current_vcpu() == Some(vcpu) {
            self.current = None;
        }
        self.extra_order.retain(|&v| v != vcpu);
        self.vcpus[vcpu.index()] = None;
        self.refresh_timer();
    }

    fn wake(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.get_mut(vcpu).has_work = true;
        self.preempts(vcpu)
    }

    fn sleep(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.get_mut(vcpu).has_work = false;
        self.current_vcpu() == Some(vcpu)
    }

    fn burn(&mut self, cx: &mut Cx, _pcpu: PcpuId, ran: Nanos, spent: Spent) {
        match self.current {
            None => {}
            Some((_, RunMode::Extra)) => self.extra_used += ran,
            Some((v, RunMode::Slice)) => {
                let s = self.get_mut(v);
                let taken = ran.min(s.remaining);
                s.remaining -= taken;
                match spent {
                    Spent::Running => s.counters.consumed += taken,
                    Spent::Overhead => s.counters.overhead += taken,
                }
                if !taken.is_zero() && s.remaining.is_zero() {
                    cx.emit(|| CoreEvent::BudgetExhausted { vcpu: v });
                }
            }
        }
    }

    fn do_schedule(&mut self, _cx: &mut Cx, _pcpu: PcpuId) -> Decision {
        // 1. EDF among VCPUs with work and slice left. Keys are unique (they end with the
        // VCPU id): the minimum is the pick.
        let mut best: Option<&SedfVcpu> = None;
        for s in self.iter() {
            if s.has_slice_and_work() && best.map_or(true, |b| s.key() < b.key()) {
                best = Some(s);
            }
        }
        let edf = best.map(|s| (s.vcpu, s.remaining));
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
            if self.get(x).wants_extra_time() && self.extra_used < EXTRA_QUANTUM {
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
            .find(|&v| self.get(v).wants_extra_time());
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
        debug_assert_eq!(self.next_boundary, self.earliest_deadline());
        self.next_boundary
    }

    fn handle_timer(&mut self, cx: &mut Cx) -> bool {
        let mut resched = false;
        let mut replenished = false;
        // A VCPU's due test reads only its own deadline, which only its own replenishment
        // changes: one pass in id order replenishes exactly the VCPUs due on entry.
        for i in 0..self.vcpus.len() {
            let Some(s) = self.vcpus[i].as_mut() else {
                continue;
            };
            if s.deadline > cx.now {
                continue;
            }
            let v = s.vcpu;
            Sedf::replenish(s, cx);
            replenished = true;
            // The running VCPU's slice changed (or it can leave extra time): re-arm it.
            resched |= self.current_vcpu() == Some(v) || self.preempts(v);
        }
        if replenished {
            self.refresh_timer();
        }
        resched
    }

    fn adjust(&mut self, _cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) -> bool {
        let s = self.get_mut(vcpu);
        s.remaining = s.remaining.min(params.budget);
        s.pending = Some(params.clone());
        self.current_vcpu() == Some(vcpu)
    }

    fn view(&self, vcpu: VcpuId) -> VcpuView {
        let s = self.get(vcpu);
        VcpuView {
            remaining_budget: Some(s.remaining),
            deadline: Some(s.deadline),
            credit: None,
        }
    }

    fn counters(&self, vcpu: VcpuId) -> BudgetCounters {
        self.get(vcpu).counters
    }

    fn check_invariants(&self) -> Result<(), String> {
        if self.next_boundary != self.earliest_deadline() {
            return Err(format!(
                "cached next boundary {:?} differs from the earliest deadline {:?}",
                self.next_boundary,
                self.earliest_deadline()
            ));
        }
        for s in self.iter() {
            if s.remaining > s.params.budget {
                return Err(format!(
                    "vcpu {:?}: remaining slice {} above slice {}",
                    s.vcpu, s.remaining, s.params.budget
                ));
            }
            if self.extra_order.iter().filter(|&&v| v == s.vcpu).count() != 1 {
                return Err(format!(
                    "vcpu {:?}: not exactly once in the extra-time order",
                    s.vcpu
                ));
            }
        }
        if self.extra_order.len() != self.iter().count() {
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
        let mut sedf = Sedf::new(1);
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
        let mut sedf = Sedf::new(1);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        let mut p = VcpuParams::server(ms(1), ms(5), 0);
        p.extratime = true;
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
