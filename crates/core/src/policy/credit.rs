//! Credit: Xen's proportional-share scheduler (default as of Xen 4.0,
//! `xen/common/sched_credit.c`, now `xen/common/sched/credit.c`; Ackaouy 2006).
//!
//! # Design note
//! - **Parameters**: `weight` (> 0) and `cap` (percent of one pcpu, 0 = none) per VCPU. Xen
//!   sets them per domain and splits a domain's credit among its VCPUs; rtvmm domains have
//!   one VCPU, so the VCPU is the account holder. Budget and period are not read.
//! - **Credit** is a signed count of nanoseconds of run time (Xen counts 10 credits per ms;
//!   here 1 credit = 1 ns, integers only). Running debits it by the time run.
//! - **Accounting** every `accounting_period` (first one period after the policy sees its
//!   first VCPU): each *active* VCPU is credited
//!   `⌈accounting_period × pcpus × weight / Σ weight of active VCPUs⌉` (rounded up, as Xen
//!   does), but never more than its cap allows in a period (`accounting_period × cap / 100`).
//!   **Active** = has work now, or ran during the period, or is in debt (credit < 0). Xen's
//!   "active" VCPUs are those charged since their credit last overflowed — in particular a
//!   VCPU in debt stays active and is paid until its debt is gone; a VCPU that neither ran
//!   nor has work nor owes anything gets nothing and does not dilute the others' share.
//!   Then every credit is clamped to `[-accounting_period, +accounting_period]`: a mostly
//!   idle VCPU cannot hoard more than one accounting period's worth (Xen 4.0 resets such a
//!   VCPU to 0 instead; the rtvmm spec asks for a clamp), and a hog's debt is bounded, as in
//!   Xen.
//! - **Classes** — BOOST, then UNDER, then OVER. As in Xen, UNDER/OVER are (re)assigned only
//!   at accounting: UNDER if credit ≥ 0, else OVER. Between two accounting ticks a VCPU keeps
//!   its class whatever its credit does.
//! - **BOOST**: a VCPU that wakes while UNDER (and not parked) becomes BOOST. It returns to
//!   UNDER at the next accounting tick or when it is descheduled (blocked, preempted, or its
//!   time slice ended), whichever comes first.
//! - **Run queue**: one FIFO of waiting VCPUs with work. The pick is the first runnable VCPU
//!   of the best class in it — the same as Xen's queue kept sorted by class with insertion at
//!   the end of the class. A VCPU put back (time slice over, preempted) or woken goes to the
//!   back; so VCPUs of one class take turns (round-robin).
//! - **do_schedule**: the running VCPU goes on while it has work, is not parked, has time
//!   slice left and no waiting VCPU has a strictly better class; otherwise it is put back and
//!   the head runs with a fresh time slice (`CreditConfig::timeslice`, or less: what its cap
//!   still allows in this period). OVER VCPUs run when nothing UNDER or BOOST is runnable:
//!   work-conserving.
//! - **Wake**: asks for a reschedule when the VCPU is runnable and the pcpu idles or its class
//!   beats the running VCPU's (Xen's `__runq_tickle`) — a BOOSTed VCPU preempts a non-BOOST
//!   one at once; an OVER one never preempts.
//! - **Cap**: with `cap > 0` a VCPU that has run `accounting_period × cap / 100` in the
//!   current accounting period is **parked** (not runnable, even on an idle pcpu) until the
//!   next accounting tick. (Xen parks on credit below −cap at accounting; the rtvmm spec asks
//!   for the cap per period.)
//! - **adjust**: new weight and cap take effect at the next accounting tick.
//!
//! Known gaps: one run queue (the machine drives one pcpu); Xen's per-pcpu queues, load
//! balancing and the credit2 successor are not modelled.

use std::collections::VecDeque;

use crate::event::Cx;
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::{BudgetCounters, CreditConfig, Decision, Policy, PolicyKind, VcpuView};
use crate::time::Nanos;

/// A VCPU's class. Declaration order is urgency order: smaller is more urgent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Class {
    /// Woke while UNDER; until descheduled or the next accounting tick.
    Boost,
    /// Credit ≥ 0 at the last accounting tick.
    Under,
    /// Credit < 0 at the last accounting tick.
    Over,
}

/// One Credit VCPU.
#[derive(Clone, Debug)]
struct CreditVcpu {
    vcpu: VcpuId,
    weight: u32,
    cap: u32,
    /// Parameters set by `adjust`, applied at the next accounting tick.
    pending: Option<VcpuParams>,
    /// Nanoseconds of run time it may still use before it is in debt.
    credit: i64,
    class: Class,
    has_work: bool,
    /// Run time in the current accounting period (for the cap).
    used_in_period: Nanos,
    ran_in_period: bool,
    counters: BudgetCounters,
}

/// The Credit policy for one pcpu.
pub struct Credit {
    config: CreditConfig,
    pcpus: u32,
    /// Indexed by VCPU id; `None` for ids that are not (or no longer) here.
    vcpus: Vec<Option<CreditVcpu>>,
    /// Waiting VCPUs with work (not the running one), in the order they were put back.
    runq: VecDeque<VcpuId>,
    /// What the last `do_schedule` chose (None = IDLE).
    current: Option<VcpuId>,
    /// Run time of the current VCPU since it was picked.
    slice_used: Nanos,
    /// The next accounting tick; set when the first VCPU arrives.
    next_accounting: Option<Nanos>,
}

/// Checks Credit's tunables (for the scenario layer): both must be greater than 0.
pub fn validate_config(config: &CreditConfig) -> Result<(), String> {
    if config.timeslice.is_zero() {
        return Err("timeslice: must be greater than 0".to_string());
    }
    if config.accounting_period.is_zero() {
        return Err("accounting_period: must be greater than 0".to_string());
    }
    Ok(())
}

impl Credit {
    /// A zero timeslice or accounting period (rejected by [`validate_config`]) is raised to
    /// 1 ns so that a bad configuration cannot make the machine loop.
    pub fn new(pcpus: u32, config: CreditConfig) -> Credit {
        Credit {
            config: CreditConfig {
                timeslice: config.timeslice.max(Nanos(1)),
                accounting_period: config.accounting_period.max(Nanos(1)),
            },
            pcpus: pcpus.max(1),
            vcpus: Vec::new(),
            runq: VecDeque::new(),
            current: None,
            slice_used: Nanos::ZERO,
            next_accounting: None,
        }
    }

    fn get(&self, vcpu: VcpuId) -> &CreditVcpu {
        self.vcpus[vcpu.index()]
            .as_ref()
            .expect("unknown credit vcpu")
    }

    fn get_mut(&mut self, vcpu: VcpuId) -> &mut CreditVcpu {
        self.vcpus[vcpu.index()]
            .as_mut()
            .expect("unknown credit vcpu")
    }

    fn iter(&self) -> impl Iterator<Item = &CreditVcpu> {
        self.vcpus.iter().flatten()
    }

    fn period_ns(&self) -> i64 {
        i64::try_from(self.config.accounting_period.as_ns()).unwrap_or(i64::MAX)
    }

    /// Run time a cap allows per accounting period; None without a cap.
    fn cap_allowance(&self, cap: u32) -> Option<Nanos> {
        (cap > 0).then(|| {
            let ns = self.config.accounting_period.as_ns() as u128 * cap as u128 / 100;
            Nanos(u64::try_from(ns).unwrap_or(u64::MAX))
        })
    }

    fn is_parked(&self, s: &CreditVcpu) -> bool {
        self.cap_allowance(s.cap)
            .is_some_and(|allowed| s.used_in_period >= allowed)
    }

    fn runnable(&self, vcpu: VcpuId) -> bool {
        let s = self.get(vcpu);
        s.has_work && !self.is_parked(s)
    }

    /// The best class among waiting runnable VCPUs.
    fn best_waiting_class(&self) -> Option<Class> {
        let mut best = None;
        for &v in &self.runq {
            if !self.runnable(v) {
                continue;
            }
            let class = self.get(v).class;
            if class == Class::Boost {
                // Nothing is more urgent: the rest of the queue cannot change the answer.
                return Some(class);
            }
            if best.map_or(true, |b| class < b) {
                best = Some(class);
            }
        }
        best
    }

    /// What the current VCPU may still run: the rest of its time slice, and no more than
    /// its cap allows in this period.
    fn slice_left(&self, vcpu: VcpuId) -> Nanos {
        let s = self.get(vcpu);
        let mut left = self.config.timeslice.saturating_sub(self.slice_used);
        if let Some(allowed) = self.cap_allowance(s.cap) {
            left = left.min(allowed.saturating_sub(s.used_in_period));
        }
        left
    }

    /// The accounting clock starts when the policy sees its first VCPU.
    fn start_clock(&mut self, now: Nanos) {
        if self.next_accounting.is_none() {
            self.next_accounting = Some(now + self.config.accounting_period);
        }
    }

    /// Whether the decision in effect should change: the pcpu idles while someone is
    /// runnable, or the running VCPU cannot go on or is beaten by a waiting class.
    fn decision_outdated(&self) -> bool {
        let best = self.best_waiting_class();
        match self.current {
            None => best.is_some(),
            Some(c) => !self.runnable(c) || best.is_some_and(|b| b < self.get(c).class),
        }
    }

    /// The accounting tick: pay every active VCPU its share, clamp, reassign classes, end
    /// BOOST and parking, start a new period.
    fn account(&mut self) {
        for s in self.vcpus.iter_mut().flatten() {
            if let Some(p) = s.pending.take() {
                s.weight = p.weight;
                s.cap = p.cap;
            }
        }
        let active: Vec<bool> = self
            .vcpus
            .iter()
            .map(|s| {
                s.as_ref()
                    .is_some_and(|s| s.has_work || s.ran_in_period || s.credit < 0)
            })
            .collect();
        let total_weight: u128 = self
            .iter()
            .filter(|s| active[s.vcpu.index()])
            .map(|s| s.weight as u128)
            .sum();
        let period = self.period_ns();
        let share_pool = self.config.accounting_period.as_ns() as u128 * self.pcpus as u128;
        let allowances: Vec<Option<Nanos>> = self
            .vcpus
            .iter()
            .map(|s| s.as_ref().and_then(|s| self.cap_allowance(s.cap)))
            .collect();
        for s in self.vcpus.iter_mut().flatten() {
            if active[s.vcpu.index()] {
                let weight = s.weight as u128;
                // Rounded up, as Xen does, so that the shares add up to at least the pool.
                let mut fair = (share_pool * weight).div_ceil(total_weight);
                if let Some(allowed) = allowances[s.vcpu.index()] {
                    fair = fair.min(allowed.as_ns() as u128);
                }
                let fair = i64::try_from(fair).unwrap_or(i64::MAX);
                s.credit = s.credit.saturating_add(fair);
            }
            s.credit = s.credit.clamp(-period, period);
            s.class = if s.credit >= 0 {
                Class::Under
            } else {
                Class::Over
            };
            s.used_in_period = Nanos::ZERO;
            s.ran_in_period = false;
        }
    }
}

impl Policy for Credit {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Credit
    }

    /// Weight > 0 and cap ≤ 100 × pcpus; budget and period are not read.
    fn validate(&self, params: &VcpuParams) -> Result<(), ParamError> {
        params.validate_credit(self.pcpus)
    }

    fn insert_vcpu(&mut self, cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) {
        self.start_clock(cx.now);
        if self.vcpus.len() <= vcpu.index() {
            self.vcpus.resize(vcpu.index() + 1, None);
        }
        self.vcpus[vcpu.index()] = Some(CreditVcpu {
            vcpu,
            weight: params.weight,
            cap: params.cap,
            pending: None,
            credit: 0,
            class: Class::Under,
            has_work: false,
            used_in_period: Nanos::ZERO,
            ran_in_period: false,
            counters: BudgetCounters::default(),
        });
    }

    fn remove_vcpu(&mut self, _cx: &mut Cx, vcpu: VcpuId) {
        if self.current == Some(vcpu) {
            self.current = None;
        }
        self.runq.retain(|&v| v != vcpu);
        self.vcpus[vcpu.index()] = None;
    }

    fn wake(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.get_mut(vcpu).has_work = true;
        if self.current == Some(vcpu) {
            // Blocked and woke again before it was descheduled: it simply goes on.
            return false;
        }
        let parked = self.is_parked(self.get(vcpu));
        let s = self.get_mut(vcpu);
        if s.class == Class::Under && !parked {
            s.class = Class::Boost;
        }
        self.runq.push_back(vcpu);
        if parked {
            return false;
        }
        let class = self.get(vcpu).class;
        match self.current {
            None => true,
            Some(c) => class < self.get(c).class,
        }
    }

    fn sleep(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.get_mut(vcpu).has_work = false;
        self.runq.retain(|&v| v != vcpu);
        self.current == Some(vcpu)
    }

    fn burn(&mut self, _cx: &mut Cx, _pcpu: PcpuId, ran: Nanos) {
        let Some(v) = self.current else {
            return;
        };
        self.slice_used += ran;
        let s = self.get_mut(v);
        let debit = i64::try_from(ran.as_ns()).unwrap_or(i64::MAX);
        s.credit = s.credit.saturating_sub(debit);
        s.used_in_period += ran;
        s.ran_in_period |= !ran.is_zero();
        s.counters.consumed += ran;
    }

    fn do_schedule(&mut self, _cx: &mut Cx, _pcpu: PcpuId) -> Decision {
        if let Some(c) = self.current {
            let slice_over = self.slice_used >= self.config.timeslice;
            if !slice_over && !self.decision_outdated() {
                return Decision {
                    run: Some(c),
                    slice: Some(self.slice_left(c)),
                };
            }
            // Descheduled: BOOST ends; with work it waits at the back of its class.
            let s = self.get_mut(c);
            if s.class == Class::Boost {
                s.class = Class::Under;
            }
            if s.has_work {
                self.runq.push_back(c);
            }
            self.current = None;
        }
        let Some(best) = self.best_waiting_class() else {
            return Decision::IDLE;
        };
        let position = self
            .runq
            .iter()
            .position(|&v| self.runnable(v) && self.get(v).class == best)
            .expect("the best class has a runnable VCPU");
        let next = self
            .runq
            .remove(position)
            .expect("position is in the queue");
        self.current = Some(next);
        self.slice_used = Nanos::ZERO;
        Decision {
            run: Some(next),
            slice: Some(self.slice_left(next)),
        }
    }

    fn next_timer(&self) -> Option<Nanos> {
        self.next_accounting
    }

    fn handle_timer(&mut self, cx: &mut Cx) -> bool {
        let Some(due) = self.next_accounting else {
            return false;
        };
        if due > cx.now {
            return false;
        }
        self.account();
        let period = self.config.accounting_period.as_ns();
        let periods_passed = (cx.now - due).as_ns() / period + 1;
        self.next_accounting = Some(due + Nanos(period * periods_passed));
        self.decision_outdated()
    }

    fn adjust(&mut self, _cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) -> bool {
        self.get_mut(vcpu).pending = Some(params.clone());
        false
    }

    fn view(&self, vcpu: VcpuId) -> VcpuView {
        VcpuView {
            credit: Some(self.get(vcpu).credit),
            ..VcpuView::default()
        }
    }

    fn counters(&self, vcpu: VcpuId) -> BudgetCounters {
        self.get(vcpu).counters
    }

    fn check_invariants(&self) -> Result<(), String> {
        let period = self.period_ns();
        for s in self.iter() {
            if s.credit > period {
                return Err(format!(
                    "vcpu {:?}: credit {} above one accounting period",
                    s.vcpu, s.credit
                ));
            }
            let queued = self.runq.iter().filter(|&&v| v == s.vcpu).count();
            let should_queue = s.has_work && self.current != Some(s.vcpu);
            if queued != usize::from(should_queue) {
                return Err(format!(
                    "vcpu {:?}: queued {queued} times (has work: {}, running: {})",
                    s.vcpu,
                    s.has_work,
                    self.current == Some(s.vcpu)
                ));
            }
            if let Some(allowed) = self.cap_allowance(s.cap) {
                if s.used_in_period > allowed {
                    return Err(format!(
                        "vcpu {:?}: ran {} in the period, above its cap's {}",
                        s.vcpu, s.used_in_period, allowed
                    ));
                }
            }
        }
        if self.runq.len()
            != self.iter().filter(|s| s.has_work).count()
                - usize::from(self.current.is_some_and(|c| self.get(c).has_work))
        {
            return Err("run queue holds unknown vcpus".to_string());
        }
        if self.current.is_some() && self.slice_used > self.config.timeslice {
            return Err(format!(
                "time slice overrun: {} of {}",
                self.slice_used, self.config.timeslice
            ));
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

    fn config() -> CreditConfig {
        CreditConfig {
            timeslice: ms(30),
            accounting_period: ms(30),
        }
    }

    fn params(weight: u32, cap: u32) -> VcpuParams {
        let mut p = VcpuParams::server(ms(1), ms(10), 0);
        p.weight = weight;
        p.cap = cap;
        p
    }

    /// Runs `vcpu` alone from `from` for `run`, then it blocks.
    fn run_and_block(credit: &mut Credit, log: &mut EventLog, vcpu: VcpuId, from: u64, run: u64) {
        let mut cx = Cx { now: ms(from), log };
        credit.burn(&mut cx, PcpuId(0), Nanos::ZERO);
        credit.wake(&mut cx, vcpu);
        assert_eq!(credit.do_schedule(&mut cx, PcpuId(0)).run, Some(vcpu));
        let mut cx = Cx {
            now: ms(from + run),
            log,
        };
        credit.burn(&mut cx, PcpuId(0), ms(run));
        credit.sleep(&mut cx, vcpu);
        assert_eq!(credit.do_schedule(&mut cx, PcpuId(0)), Decision::IDLE);
        assert_eq!(credit.check_invariants(), Ok(()));
    }

    /// Charges `ran_ms` to whatever runs, then processes the accounting tick at `at`.
    fn accounting_at(credit: &mut Credit, log: &mut EventLog, at: u64, ran_ms: u64) {
        let mut cx = Cx { now: ms(at), log };
        credit.burn(&mut cx, PcpuId(0), ms(ran_ms));
        credit.handle_timer(&mut cx);
    }

    #[test]
    fn validation_reads_weight_and_cap_only() {
        let credit = Credit::new(2, config());
        assert_eq!(credit.validate(&params(256, 200)), Ok(()));
        assert_eq!(credit.validate(&params(0, 0)), Err(ParamError::WeightZero));
        assert_eq!(
            credit.validate(&params(256, 201)),
            Err(ParamError::CapTooLarge { cap: 201, max: 200 })
        );
        let mut p = params(256, 0);
        p.budget = Nanos::ZERO;
        p.period = Nanos::ZERO;
        assert_eq!(
            credit.validate(&p),
            Ok(()),
            "budget and period are not read"
        );
        assert!(validate_config(&config()).is_ok());
        assert!(validate_config(&CreditConfig {
            timeslice: Nanos::ZERO,
            ..config()
        })
        .is_err());
    }

    /// a never runs (inactive); b runs 1 ms per period, so it alone shares the pool: +30 ms
    /// each period, −1 ms used. 29 ms after the first tick, 58 → clamped to 30 after the
    /// second.
    #[test]
    fn mostly_idle_vcpu_cannot_hoard_more_than_a_period() {
        let mut log = EventLog::new(false);
        let mut credit = Credit::new(1, config());
        let (a, b) = (VcpuId(0), VcpuId(1));
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        credit.insert_vcpu(&mut cx, a, &params(256, 0));
        credit.insert_vcpu(&mut cx, b, &params(256, 0));
        run_and_block(&mut credit, &mut log, b, 0, 1);
        accounting_at(&mut credit, &mut log, 30, 0);
        assert_eq!(credit.view(a).credit, Some(0), "inactive: not paid");
        assert_eq!(credit.view(b).credit, Some(ms(29).as_ns() as i64));
        run_and_block(&mut credit, &mut log, b, 40, 1);
        accounting_at(&mut credit, &mut log, 60, 0);
        assert_eq!(credit.view(b).credit, Some(ms(30).as_ns() as i64));
    }

    /// b runs 25 ms and a 5 ms in the first period (15 ms each paid: b −10, a +10); b then
    /// sleeps through the second period in debt. In debt it stays active: at 60 a and b
    /// share the pool (15 ms each), so b is back to +5 and a, who ran 30 ms, is at −5.
    #[test]
    fn vcpu_in_debt_stays_active_while_sleeping() {
        let mut log = EventLog::new(false);
        let mut credit = Credit::new(1, config());
        let (a, b) = (VcpuId(0), VcpuId(1));
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        credit.insert_vcpu(&mut cx, a, &params(256, 0));
        credit.insert_vcpu(&mut cx, b, &params(256, 0));
        credit.wake(&mut cx, b);
        credit.wake(&mut cx, a);
        assert_eq!(credit.do_schedule(&mut cx, PcpuId(0)).run, Some(b));
        let mut cx = Cx {
            now: ms(25),
            log: &mut log,
        };
        credit.burn(&mut cx, PcpuId(0), ms(25));
        credit.sleep(&mut cx, b);
        assert_eq!(credit.do_schedule(&mut cx, PcpuId(0)).run, Some(a));
        accounting_at(&mut credit, &mut log, 30, 5);
        let ms_i64 = |x: i64| x * 1_000_000;
        assert_eq!(credit.view(b).credit, Some(ms_i64(-10)));
        assert_eq!(credit.view(a).credit, Some(ms_i64(10)));
        let mut cx = Cx {
            now: ms(55),
            log: &mut log,
        };
        credit.burn(&mut cx, PcpuId(0), ms(25));
        assert_eq!(credit.do_schedule(&mut cx, PcpuId(0)).run, Some(a));
        accounting_at(&mut credit, &mut log, 60, 5);
        assert_eq!(credit.view(b).credit, Some(ms_i64(5)));
        assert_eq!(credit.view(a).credit, Some(ms_i64(-5)));
        assert_eq!(credit.check_invariants(), Ok(()));
    }
}
