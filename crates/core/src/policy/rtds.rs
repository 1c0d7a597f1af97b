//! RTDS: Xen's Real-Time Deferrable Server scheduler (Xen 4.5 and later,
//! `xen/common/sched/rt.c`; Xi, Xu, Lu, Gill, et al., RT-Xen 2.0, EMSOFT 2014).
//!
//! # Design note
//! - **Parameters** (fixed): `budget` B and `period` P per VCPU, and `extratime`.
//!   **Live state**: `remaining` budget, current `deadline` (= end of the current period) and
//!   the priority `level` (0 = real-time; 1, 2, ... = extra time).
//! - **Priority** — one total order, `RtVcpu::key`: lower level first, then earlier
//!   deadline, then smaller VCPU id. Every decision (pick, preemption on wake, preemption on
//!   replenishment) compares keys and nothing else.
//! - **Eligible**: has work and `remaining > 0`. `do_schedule` runs the eligible VCPU with
//!   the smallest key (on several pcpus: the best one not already running on another pcpu,
//!   so the m best run on the m pcpus); the slice is its remaining budget.
//! - **Consumption**: only while the VCPU runs; preserved while it does not.
//! - **Exhausted budget**: with `extratime` the VCPU at once gets a fresh budget B at the next
//!   lower level (`level += 1`, deadline unchanged), so it only runs when no VCPU at a better
//!   level wants the pcpu; without `extratime` it waits, depleted, for its deadline.
//! - **Replenishment** at the deadline: `remaining = B`, `level = 0`, and
//!   `deadline += k·P` with the smallest k that puts it after now — whole periods that passed
//!   are skipped (Xen's `rt_update_deadline`).
//! - **Timers**: like Xen's replenishment queue, only VCPUs with work have a replenishment
//!   timer. A VCPU without work is brought up to date when it wakes (if its deadline passed,
//!   it is replenished as above, at the wake instant). So [`Policy::view`] of a sleeping
//!   VCPU shows the state it will be updated from when it wakes.
//! - **Wake ("tickle")**: asks for a reschedule when the VCPU is eligible and a pcpu idles or
//!   its key beats the worst running VCPU's key.
//! - **Insertion**: the first period starts at `now + offset`. With an offset the VCPU has no
//!   budget until then (with `extratime`: an extra-level budget).
//! - **When it runs** ([`RtdsMode`]): `Event` (default; Xen 4.7 and later) — the
//!   replenishment timer, and `do_schedule` on budget exhaustion (the slice ends), block,
//!   preempting wake and replenishment, with no periodic call; `Quantum` (Xen 4.5, which
//!   returned `min(budget left, 1 ms)` from `do_schedule`) — additionally a `do_schedule` at
//!   every quantum tick, so at least one per quantum.
//! - **adjust**: new parameters wait for the VCPU's next replenishment; the remaining budget
//!   is cut to the new budget at once, and a larger budget is not granted early. The current
//!   period still ends at the old deadline; later periods use the new period. (Xen applies
//!   `xl sched-rtds` at once; the rtvmm spec asks for the next replenishment.)
//!
//! Known gaps: the machine drives one pcpu today. The state is already per-pcpu
//! (`current[pcpu]`) and the pick skips VCPUs running elsewhere, so global EDF needs only the
//! machine side (which pcpu to tickle, migrations, affinity).

use crate::event::{CoreEvent, Cx};
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::{
    BudgetCounters, Decision, Policy, PolicyKind, RtdsMode, Spent, TickInterval, VcpuView,
};
use crate::time::Nanos;

/// Xen's lower bound on both budget and period (`RTDS_MIN_BUDGET`, 10 µs): below it the
/// scheduler's own overhead dominates.
pub const RTDS_MIN_BUDGET: Nanos = Nanos::from_us(10);

/// One RTDS VCPU.
#[derive(Clone, Debug)]
struct RtVcpu {
    vcpu: VcpuId,
    params: VcpuParams,
    /// Parameters set by `adjust`, applied at the next replenishment.
    pending: Option<VcpuParams>,
    /// Remaining budget at the current level, in `[0, params.budget]`.
    remaining: Nanos,
    /// End of the current period.
    deadline: Nanos,
    /// 0 = real-time level; each extratime refill moves one level down (a larger number).
    level: u32,
    has_work: bool,
    counters: BudgetCounters,
}

impl RtVcpu {
    /// The priority key: level, then deadline, then VCPU id. Smaller is more urgent.
    #[inline]
    fn key(&self) -> (u32, Nanos, VcpuId) {
        (self.level, self.deadline, self.vcpu)
    }

    fn eligible(&self) -> bool {
        self.has_work && !self.remaining.is_zero()
    }

    /// The budget reached zero: with extratime, a fresh budget one level down.
    fn on_exhausted(&mut self, cx: &mut Cx) {
        let vcpu = self.vcpu;
        cx.emit(|| CoreEvent::BudgetExhausted { vcpu });
        if self.params.extratime {
            self.level += 1;
            self.remaining = self.params.budget;
            let budget = self.remaining;
            cx.emit(|| CoreEvent::Replenish { vcpu, budget });
        }
    }

    /// Xen's `rt_update_deadline`, called when `now >= deadline`: pending parameters take
    /// effect, the deadline moves past `now` by whole periods, the budget is full again at
    /// level 0.
    fn replenish(&mut self, cx: &mut Cx) {
        debug_assert!(cx.now >= self.deadline);
        if let Some(p) = self.pending.take() {
            self.params = p;
        }
        let period = self.params.period.as_ns();
        let periods_passed = (cx.now - self.deadline).as_ns() / period + 1;
        self.deadline += Nanos(period * periods_passed);
        self.remaining = self.params.budget;
        self.level = 0;
        let (vcpu, budget) = (self.vcpu, self.remaining);
        cx.emit(|| CoreEvent::Replenish { vcpu, budget });
    }
}

/// The RTDS policy for the pcpus of one pool.
pub struct Rtds {
    /// When `do_schedule` runs: event-driven (Xen 4.7+) or at every quantum (Xen 4.5).
    mode: RtdsMode,
    /// Indexed by VCPU id; `None` for ids that are not (or no longer) here.
    vcpus: Vec<Option<RtVcpu>>,
    /// What the last `do_schedule` chose on each pcpu (None = IDLE).
    current: Vec<Option<VcpuId>>,
    /// What [`Policy::next_timer`] returns: the earliest deadline of a VCPU with a
    /// replenishment timer (with work, or running). The machine asks after every hook, so
    /// it is kept rather than recomputed; every hook that changes `has_work`, `current` or
    /// a deadline calls [`Rtds::refresh_timer`] (burn and adjust change none of them).
    next_replenishment: Option<Nanos>,
}

impl Rtds {
    pub fn new(pcpus: u32, mode: RtdsMode) -> Rtds {
        Rtds {
            mode,
            vcpus: Vec::new(),
            current: vec![None; pcpus.max(1) as usize],
            next_replenishment: None,
        }
    }

    /// The earliest deadline among the VCPUs that have a replenishment timer.
    fn earliest_timer(&self) -> Option<Nanos> {
        let mut earliest: Option<Nanos> = None;
        for s in self.iter() {
            if s.has_work || self.is_running(s.vcpu) {
                earliest = Some(earliest.map_or(s.deadline, |e| e.min(s.deadline)));
            }
        }
        earliest
    }

    /// Recomputes `next_replenishment` after a change it depends on.
    fn refresh_timer(&mut self) {
        self.next_replenishment = self.earliest_timer();
    }

    /// Whether `vcpu` is what another pcpu than `pcpu` runs.
    fn runs_elsewhere(&self, vcpu: VcpuId, pcpu: PcpuId) -> bool {
        self.current
            .iter()
            .enumerate()
            .any(|(p, c)| p != pcpu.index() && *c == Some(vcpu))
    }

    fn get(&self, vcpu: VcpuId) -> &RtVcpu {
        self.vcpus[vcpu.index()]
            .as_ref()
            .expect("unknown rtds vcpu")
    }

    fn get_mut(&mut self, vcpu: VcpuId) -> &mut RtVcpu {
        self.vcpus[vcpu.index()]
            .as_mut()
            .expect("unknown rtds vcpu")
    }

    fn iter(&self) -> impl Iterator<Item = &RtVcpu> {
        self.vcpus.iter().flatten()
    }

    /// The priority level of a VCPU (0 = real-time), for tests.
    pub fn level(&self, vcpu: VcpuId) -> u32 {
        self.get(vcpu).level
    }

    fn is_running(&self, vcpu: VcpuId) -> bool {
        self.current.contains(&Some(vcpu))
    }

    /// Whether an eligible `vcpu` should take a pcpu now: some pcpu idles, or it beats the
    /// least urgent running VCPU.
    fn should_tickle(&self, vcpu: VcpuId) -> bool {
        let s = self.get(vcpu);
        if !s.eligible() || self.is_running(vcpu) {
            return false;
        }
        let mut worst_running = None;
        for c in &self.current {
            match c {
                None => return true,
                Some(c) => {
                    let k = self.get(*c).key();
                    worst_running =
                        Some(worst_running.map_or(k, |w: (u32, Nanos, VcpuId)| w.max(k)));
                }
            }
        }
        worst_running.is_some_and(|w| s.key() < w)
    }
}

impl Policy for Rtds {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Rtds
    }

    /// Budget and period > 0, budget ≥ 10 µs (so the period is too), budget ≤ period.
    fn validate(&self, params: &VcpuParams) -> Result<(), ParamError> {
        if params.period.is_zero() {
            return Err(ParamError::PeriodZero);
        }
        if params.budget.is_zero() {
            return Err(ParamError::BudgetZero);
        }
        if params.budget < RTDS_MIN_BUDGET {
            return Err(ParamError::RtdsTooSmall(params.budget));
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
        let mut s = RtVcpu {
            vcpu,
            params: params.clone(),
            pending: None,
            remaining: params.budget,
            deadline: cx.now + params.period,
            level: 0,
            has_work: false,
            counters: BudgetCounters::default(),
        };
        if !params.offset.is_zero() {
            // No budget before the first period starts.
            s.remaining = Nanos::ZERO;
            s.deadline = cx.now + params.offset;
            if params.extratime {
                s.level = 1;
                s.remaining = params.budget;
            }
        }
        if self.vcpus.len() <= vcpu.index() {
            self.vcpus.resize(vcpu.index() + 1, None);
        }
        self.vcpus[vcpu.index()] = Some(s);
        self.refresh_timer();
    }

    fn remove_vcpu(&mut self, _cx: &mut Cx, vcpu: VcpuId) {
        for c in &mut self.current {
            if *c == Some(vcpu) {
                *c = None;
            }
        }
        self.vcpus[vcpu.index()] = None;
        self.refresh_timer();
    }

    fn wake(&mut self, cx: &mut Cx, vcpu: VcpuId) -> bool {
        let s = self.get_mut(vcpu);
        s.has_work = true;
        // Sleeping VCPUs have no replenishment timer: catch up now (Xen's rt_unit_wake).
        if cx.now >= s.deadline {
            s.replenish(cx);
        }
        self.refresh_timer();
        self.should_tickle(vcpu)
    }

    fn sleep(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.get_mut(vcpu).has_work = false;
        self.refresh_timer();
        self.is_running(vcpu)
    }

    fn burn(&mut self, cx: &mut Cx, pcpu: PcpuId, ran: Nanos, spent: Spent) {
        let Some(v) = self.current[pcpu.index()] else {
            return;
        };
        let s = self.get_mut(v);
        let taken = ran.min(s.remaining);
        s.remaining -= taken;
        match spent {
            Spent::Running => s.counters.consumed += taken,
            Spent::Overhead => s.counters.overhead += taken,
        }
        if !taken.is_zero() && s.remaining.is_zero() {
            s.on_exhausted(cx);
        }
    }

    fn do_schedule(&mut self, _cx: &mut Cx, pcpu: PcpuId) -> Decision {
        // With one pcpu nothing runs elsewhere; skip asking.
        let several_pcpus = self.current.len() > 1;
        let mut best: Option<&RtVcpu> = None;
        for s in self.iter() {
            if !s.eligible() || (several_pcpus && self.runs_elsewhere(s.vcpu, pcpu)) {
                continue;
            }
            // Keys are unique (they end with the VCPU id): the minimum is the pick.
            if best.map_or(true, |b| s.key() < b.key()) {
                best = Some(s);
            }
        }
        let decision = match best {
            Some(s) => Decision {
                run: Some(s.vcpu),
                slice: Some(s.remaining),
            },
            None => Decision::IDLE,
        };
        if self.current[pcpu.index()] != decision.run {
            self.current[pcpu.index()] = decision.run;
            self.refresh_timer();
        }
        decision
    }

    fn tick_interval(&self) -> TickInterval {
        match self.mode {
            RtdsMode::Event => TickInterval::None,
            RtdsMode::Quantum => TickInterval::Quantum,
        }
    }

    fn next_timer(&self) -> Option<Nanos> {
        debug_assert_eq!(self.next_replenishment, self.earliest_timer());
        self.next_replenishment
    }

    fn handle_timer(&mut self, cx: &mut Cx) -> bool {
        let mut resched = false;
        let mut replenished = false;
        // A VCPU's due test reads its own state and `current`; replenishing another VCPU
        // changes neither, so one pass in id order replenishes exactly the VCPUs due on entry.
        for i in 0..self.vcpus.len() {
            let Some(s) = &self.vcpus[i] else {
                continue;
            };
            let v = s.vcpu;
            if !((s.has_work || self.is_running(v)) && s.deadline <= cx.now) {
                continue;
            }
            self.get_mut(v).replenish(cx);
            replenished = true;
            // A running VCPU's slice changed with its budget: re-arm it.
            resched |= self.is_running(v) || self.should_tickle(v);
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
        self.is_running(vcpu)
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
        if self.next_replenishment != self.earliest_timer() {
            return Err(format!(
                "cached next replenishment {:?} differs from the earliest timer {:?}",
                self.next_replenishment,
                self.earliest_timer()
            ));
        }
        for s in self.iter() {
            if s.remaining > s.params.budget {
                return Err(format!(
                    "vcpu {:?}: remaining budget {} above budget {}",
                    s.vcpu, s.remaining, s.params.budget
                ));
            }
            if s.level > 0 && !s.params.extratime {
                return Err(format!(
                    "vcpu {:?}: at extra level {} without extratime",
                    s.vcpu, s.level
                ));
            }
        }
        for (p, c) in self.current.iter().enumerate() {
            if let Some(v) = c {
                if self.vcpus.get(v.index()).and_then(|s| s.as_ref()).is_none() {
                    return Err(format!("pcpu {p} runs unknown vcpu {v:?}"));
                }
                if self.current.iter().filter(|o| *o == c).count() > 1 {
                    return Err(format!("vcpu {v:?} runs on two pcpus"));
                }
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

    fn params(budget_ms: u64, period_ms: u64, extratime: bool) -> VcpuParams {
        let mut p = VcpuParams::server(ms(budget_ms), ms(period_ms), 0);
        p.extratime = extratime;
        p
    }

    #[test]
    fn validation_names_the_field() {
        let rtds = Rtds::new(1, RtdsMode::Event);
        let mut p = params(2, 10, false);
        assert_eq!(rtds.validate(&p), Ok(()));
        p.budget = Nanos::from_us(9);
        assert_eq!(
            rtds.validate(&p),
            Err(ParamError::RtdsTooSmall(Nanos::from_us(9)))
        );
        p.budget = Nanos::from_us(10);
        assert_eq!(rtds.validate(&p), Ok(()));
        p.budget = ms(11);
        assert!(matches!(
            rtds.validate(&p),
            Err(ParamError::BudgetAbovePeriod { .. })
        ));
        p.budget = Nanos::ZERO;
        assert_eq!(rtds.validate(&p), Err(ParamError::BudgetZero));
        p.period = Nanos::ZERO;
        assert_eq!(rtds.validate(&p), Err(ParamError::PeriodZero));
        // Fields RTDS does not read are not checked.
        let mut q = params(2, 10, false);
        q.max_replenishments = 0;
        q.weight = 0;
        assert_eq!(rtds.validate(&q), Ok(()));
    }

    #[test]
    fn extratime_refills_one_level_down_and_deadline_resets_it() {
        let mut log = EventLog::new(false);
        let mut rtds = Rtds::new(1, RtdsMode::Event);
        let v = VcpuId(0);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        rtds.insert_vcpu(&mut cx, v, &params(2, 5, true));
        rtds.wake(&mut cx, v);
        assert_eq!(rtds.do_schedule(&mut cx, PcpuId(0)).slice, Some(ms(2)));
        let mut cx = Cx {
            now: ms(2),
            log: &mut log,
        };
        rtds.burn(&mut cx, PcpuId(0), ms(2), Spent::Running);
        assert_eq!(rtds.level(v), 1);
        assert_eq!(rtds.view(v).remaining_budget, Some(ms(2)));
        assert_eq!(rtds.view(v).deadline, Some(ms(5)));
        let mut cx = Cx {
            now: ms(5),
            log: &mut log,
        };
        rtds.burn(&mut cx, PcpuId(0), ms(3), Spent::Running);
        assert_eq!(rtds.level(v), 2, "a second refill, one more level down");
        assert!(
            rtds.handle_timer(&mut cx),
            "the running VCPU was replenished"
        );
        assert_eq!(rtds.level(v), 0);
        assert_eq!(rtds.view(v).deadline, Some(ms(10)));
        assert_eq!(rtds.check_invariants(), Ok(()));
    }

    #[test]
    fn adjust_cuts_now_and_grows_at_next_replenishment() {
        let mut log = EventLog::new(false);
        let mut rtds = Rtds::new(1, RtdsMode::Event);
        let v = VcpuId(0);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        rtds.insert_vcpu(&mut cx, v, &params(4, 10, false));
        rtds.wake(&mut cx, v);
        rtds.adjust(&mut cx, v, &params(1, 20, false));
        assert_eq!(rtds.view(v).remaining_budget, Some(ms(1)));
        rtds.adjust(&mut cx, v, &params(3, 20, false));
        assert_eq!(
            rtds.view(v).remaining_budget,
            Some(ms(1)),
            "not granted early"
        );
        let mut cx = Cx {
            now: ms(10),
            log: &mut log,
        };
        rtds.handle_timer(&mut cx);
        assert_eq!(rtds.view(v).remaining_budget, Some(ms(3)));
        assert_eq!(
            rtds.view(v).deadline,
            Some(ms(30)),
            "old deadline 10, new period 20"
        );
    }
}
