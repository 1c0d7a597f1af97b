//! Credit: Xen's proportional-share scheduler as Xen 4.0 ran it (`xen/common/sched_credit.c`,
//! Ackaouy 2006) — the Credit the RT-Xen 2011 paper measured.
//!
//! # Design note
//! Names in parentheses are Xen 4.0's.
//! - **Parameters**: `weight` (> 0) and `cap` (percent of one pcpu, 0 = none) per VCPU. Xen
//!   sets them per domain and splits a domain's credit among its active VCPUs; rtvmm
//!   domains have one VCPU, so the VCPU is the account holder. Budget and period are not
//!   read. New values take effect at the next accounting.
//! - **Credit** is a signed count of nanoseconds of run time (Xen: 10 credits per ms).
//!   Constants scale with [`CreditConfig`]: one *slice's worth* is `tick × ticks_per_slice`
//!   (`CSCHED_CREDITS_PER_TSLICE`, 30 ms), one *accounting period's worth* is
//!   `tick × ticks_per_accounting` (`CSCHED_CREDITS_PER_ACCT`, 30 ms).
//! - **Charging** (`burn_credits`): at every `do_schedule` and every tick the running VCPU's
//!   credit is debited by the time it ran since it was last charged, rounded to the nearest
//!   0.1 ms credit; the remainder (possibly negative) stays with the VCPU for its next
//!   charge. Time is counted from the instant `do_schedule` chose it (scheduler overhead
//!   charged to it included: [`Spent::Overhead`]).
//! - **Classes** (`pri`): BOOST, then UNDER, then OVER. A new VCPU is UNDER.
//! - **Run queue** (`runq`): the waiting runnable VCPUs, a VCPU inserted behind every VCPU of
//!   its class or a better one (`__runq_insert`: before the first of a strictly lower
//!   class): first-in, first-out within a class. The pick is its head; an empty queue picks
//!   IDLE.
//! - **do_schedule** (`csched_schedule`): charge the running VCPU; if it is still runnable,
//!   insert it back (behind its class); run the head with a time slice of one slice's worth,
//!   or IDLE with no slice (IDLE runs until a wake). So it runs when the running VCPU
//!   blocks, when its slice ends, when a wake must preempt and when a cap parks it —
//!   never at a tick.
//! - **Wake** (`csched_vcpu_wake`): a VCPU that wakes while UNDER and not parked becomes
//!   BOOST; it is inserted and asks for a reschedule only if its class is **strictly**
//!   better than the running VCPU's (`__runq_tickle`), or the pcpu idles: a BOOST wake does
//!   not preempt another BOOST VCPU. A VCPU that is still running (blocked and woke before
//!   it was descheduled) just goes on.
//! - **Tick** (`csched_tick`, every `tick`, per pcpu): the running VCPU, if any, drops from
//!   BOOST to UNDER, is charged, and joins the active set if it was not in it
//!   (`csched_vcpu_acct`); then, after an accounting, the run queue is re-sorted so UNDER
//!   and BOOST VCPUs move ahead of OVER ones, keeping their order (`csched_runq_sort`). The
//!   tick does not reschedule.
//! - **Accounting** (`csched_acct`, one master for the machine, every `ticks_per_accounting`
//!   ticks of pcpu 0; at an instant where both fall, the accounting comes first): a pool of
//!   `accounting period × pcpus` (plus the magnitude of a negative credit balance left by the
//!   previous accounting) is shared among the **active** VCPUs in proportion to weight,
//!   rounded up; each gets at most one accounting period's worth (plus its weighted part of
//!   that balance), less when capped (`⌈cap × accounting period / 100⌉`); what one cannot
//!   use goes to the VCPUs after it in the active list, and a VCPU that could have used more
//!   moves to the list's head for the next time (`credit_xtra`). Then per VCPU: credit < 0 →
//!   OVER (and, if capped and below minus its cap share, **parked**: not runnable until an
//!   accounting makes it UNDER again; credit floored at minus one slice's worth); credit ≥ 0
//!   → UNDER (unparked if parked); credit above one slice's worth (**hoarding**: it did not
//!   run enough to spend it) → it leaves the active set and its credit is reset to 0, until
//!   a tick next finds it running. The credit balance is the sum of the active VCPUs'
//!   credits afterwards.
//! - **Active set** (`active_sdom`): VCPUs join at a tick that finds them running (at the
//!   head of the list) and leave by hoarding or removal. A VCPU never found running at a
//!   tick is never paid.
//! - **Parking** takes the VCPU off the run queue (and off the pcpu: a reschedule);
//!   unparking puts it back if it has work, without BOOST, preempting only a strictly lower
//!   class.
//!
//! - **Several pcpus**: each pcpu has its own decision and its own tick (only pcpu 0, the
//!   master, counts accounting periods); the accounting pool is `pcpus` periods' worth, as
//!   in Xen. The pick for pcpu p is the first VCPU of the run queue whose hard affinity
//!   holds p (the run queue holds only VCPUs that run nowhere). A VCPU put in the queue
//!   (a wake, an unpark) takes an idle pcpu of its affinity, else preempts a pcpu of its
//!   affinity running a **strictly** worse class ([`Policy::tickle`],
//!   [`global::tickle_targets`] with the class as key); a running VCPU parked by the
//!   accounting makes its own pcpu reschedule.
//!   Xen 4.0 keeps one run queue per pcpu, puts a waking VCPU on the queue of the pcpu it
//!   last ran on, and a pcpu whose queue's head is OVER, or that would idle, steals the best
//!   VCPU from its peers (`csched_load_balance`). rtvmm models the outcome of that
//!   stealing — the best waiting VCPU in class order runs wherever a pcpu frees up — with
//!   one class-ordered queue per pool, not the per-pcpu queues themselves.
//!   A pcpu that joins or leaves the pool changes no credit or class: the accounting pool
//!   follows the pcpu count from the next accounting, local pcpu 0 (whichever pcpu that
//!   now is) stays the master, and the VCPU the leaving pcpu ran is charged and queued
//!   again, as at a `do_schedule` (Xen: `prv->ncpus`, `prv->master`).
//!
//! Known gaps: Xen's per-pcpu queues (see above), yield and the credit2 successor are not
//! modelled; VCPUs are their own domains (the per-domain split of credit among several
//! VCPUs comes with multi-VCPU domains).

use std::collections::VecDeque;

use crate::cpuset::CpuSet;
use crate::event::Cx;
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::global::{self, Affinities};
use crate::policy::per_pcpu::PerPcpu;
use crate::policy::table::VcpuTable;
use crate::policy::{
    BudgetCounters, CreditConfig, Decision, PcpuChange, Policy, PolicyKind, Spent, TickInterval,
    VcpuView,
};
use crate::time::Nanos;

/// Xen 4.0 charges run time in whole credits of 0.1 ms (`CSCHED_CREDITS_PER_MSEC` = 10).
pub const CREDIT_UNIT: Nanos = Nanos::from_us(100);

/// A VCPU's class. Declaration order is urgency order: smaller is more urgent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Class {
    /// Woke while UNDER; until a tick finds it running or the next accounting.
    Boost,
    /// Credit ≥ 0 at its last accounting (or never accounted yet).
    Under,
    /// Credit < 0 at its last accounting.
    Over,
}

/// One Credit VCPU.
#[derive(Clone, Debug)]
struct CreditVcpu {
    vcpu: VcpuId,
    weight: u32,
    cap: u32,
    /// Parameters set by `adjust`, applied at the next accounting.
    pending: Option<VcpuParams>,
    /// Nanoseconds of run time it may still use before it is in debt.
    credit: i64,
    /// Run time not yet charged (Xen keeps it in `start_time`): negative after a charge
    /// rounded up.
    uncharged: i64,
    class: Class,
    has_work: bool,
    parked: bool,
    /// In the active set (paid at accounting).
    active: bool,
    /// Its neighbours in the active list (head first), while active.
    active_prev: Option<VcpuId>,
    active_next: Option<VcpuId>,
    /// Waiting in the run queue.
    queued: bool,
    counters: BudgetCounters,
}

impl CreditVcpu {
    /// Has work and is not parked: waits in the run queue when not running.
    #[inline]
    fn runnable(&self) -> bool {
        self.has_work && !self.parked
    }

    /// `burn_credits`: debits the run time not yet charged, in whole 0.1 ms credits rounded
    /// to the nearest; the rest stays uncharged.
    #[inline]
    fn charge(&mut self) {
        let unit = as_i64(CREDIT_UNIT);
        if self.uncharged <= 0 {
            return;
        }
        let units = (self.uncharged + unit / 2) / unit;
        self.credit = self.credit.saturating_sub(units * unit);
        self.uncharged -= units * unit;
    }
}

/// The Credit policy for one pcpu.
pub struct Credit {
    config: CreditConfig,
    pcpus: u32,
    vcpus: VcpuTable<CreditVcpu>,
    /// Waiting runnable VCPUs (not the running one), head first.
    runq: VecDeque<VcpuId>,
    /// How many VCPUs of each class wait in the run queue (by `Class as usize`): an insert
    /// behind everything needs no search when none of a lower class waits.
    queued_of: [usize; 3],
    /// What the last `do_schedule` chose on each pcpu (None = IDLE).
    current: PerPcpu<Option<VcpuId>>,
    /// Each VCPU's hard affinity (local pcpu indices).
    affinity: Affinities,
    /// Several pcpus: pcpus whose running VCPU the accounting parked, until their next
    /// `do_schedule`; part of [`Policy::tickle`]'s answer.
    asked: CpuSet,
    /// The active set, in Xen's list order: its head and tail (a list linked through the
    /// VCPUs, so that joining at the head and leaving anywhere cost no search).
    active_head: Option<VcpuId>,
    active_tail: Option<VcpuId>,
    /// The sum of the active VCPUs' credits after the last accounting.
    credit_balance: i64,
    /// Ticks of pcpu 0 so far (the master counts accounting periods in its ticks).
    master_ticks: u64,
    /// An accounting happened and the run queue has not been re-sorted since.
    sort_pending: bool,
    /// Reused by the accounting and the sort, so that neither allocates.
    scratch: Vec<VcpuId>,
}

/// Checks Credit's tunables (for the scenario layer).
pub fn validate_config(config: &CreditConfig) -> Result<(), String> {
    if config.tick.is_zero() {
        return Err("tick: must be greater than 0".to_string());
    }
    if config.ticks_per_slice == 0 {
        return Err("ticks_per_slice: must be at least 1".to_string());
    }
    if config.ticks_per_accounting == 0 {
        return Err("ticks_per_accounting: must be at least 1".to_string());
    }
    Ok(())
}

fn as_i64(t: Nanos) -> i64 {
    i64::try_from(t.as_ns()).unwrap_or(i64::MAX)
}

/// `⌈a / b⌉` for `a ≥ 0`, `b > 0`.
fn div_ceil(a: i128, b: i128) -> i128 {
    (a + b - 1) / b
}

impl Credit {
    /// A configuration [`validate_config`] refuses is raised to the smallest valid one, so
    /// that it cannot make the machine loop.
    pub fn new(pcpus: u32, config: CreditConfig) -> Credit {
        Credit {
            config: CreditConfig {
                tick: config.tick.max(Nanos(1)),
                ticks_per_slice: config.ticks_per_slice.max(1),
                ticks_per_accounting: config.ticks_per_accounting.max(1),
            },
            pcpus: pcpus.max(1),
            vcpus: VcpuTable::new(),
            runq: VecDeque::new(),
            queued_of: [0; 3],
            current: PerPcpu::new(pcpus, None),
            affinity: Affinities::default(),
            asked: CpuSet::EMPTY,
            active_head: None,
            active_tail: None,
            credit_balance: 0,
            master_ticks: 0,
            sort_pending: false,
            scratch: Vec::new(),
        }
    }

    fn get(&self, vcpu: VcpuId) -> &CreditVcpu {
        self.vcpus.get(vcpu)
    }

    fn get_mut(&mut self, vcpu: VcpuId) -> &mut CreditVcpu {
        self.vcpus.get_mut(vcpu)
    }

    fn iter(&self) -> impl Iterator<Item = &CreditVcpu> {
        self.vcpus.iter()
    }

    /// The VCPU's class (for tests and traces).
    pub fn class(&self, vcpu: VcpuId) -> Class {
        self.get(vcpu).class
    }

    /// Whether the VCPU is parked by its cap (for tests and traces).
    pub fn is_parked(&self, vcpu: VcpuId) -> bool {
        self.get(vcpu).parked
    }

    /// Whether the VCPU is in the active set (for tests and traces).
    pub fn is_active(&self, vcpu: VcpuId) -> bool {
        self.get(vcpu).active
    }

    fn slice_worth(&self) -> i64 {
        as_i64(self.config.slice())
    }

    fn accounting_worth(&self) -> i64 {
        as_i64(self.config.accounting_period())
    }

    fn runnable(&self, vcpu: VcpuId) -> bool {
        self.get(vcpu).runnable()
    }

    /// `__runq_insert`: before the first waiting VCPU of a strictly lower class (at the
    /// tail, without a search, when none waits).
    fn insert(&mut self, vcpu: VcpuId) {
        let class = self.get(vcpu).class;
        debug_assert!(!self.get(vcpu).queued, "{vcpu:?} queued twice");
        if self.queued_of[class as usize + 1..].iter().all(|&n| n == 0) {
            self.runq.push_back(vcpu);
        } else {
            let at = self
                .runq
                .iter()
                .position(|&v| self.get(v).class > class)
                .unwrap_or(self.runq.len());
            self.runq.insert(at, vcpu);
        }
        self.queued_of[class as usize] += 1;
        self.get_mut(vcpu).queued = true;
    }

    /// Takes `vcpu` out of the run queue, if it waits there.
    fn dequeue(&mut self, vcpu: VcpuId) {
        if !self.get(vcpu).queued {
            return;
        }
        if let Some(at) = self.runq.iter().position(|&v| v == vcpu) {
            self.runq.remove(at);
        }
        self.left_queue(vcpu);
    }

    /// Bookkeeping for `vcpu`, just taken out of the run queue.
    fn left_queue(&mut self, vcpu: VcpuId) {
        let s = self.get_mut(vcpu);
        s.queued = false;
        let class = s.class as usize;
        self.queued_of[class] -= 1;
    }

    /// Sets `vcpu`'s class, keeping the run queue's counts.
    fn set_class(&mut self, vcpu: VcpuId, class: Class) {
        let s = self.get_mut(vcpu);
        let (was, queued) = (s.class, s.queued);
        s.class = class;
        if queued {
            self.queued_of[was as usize] -= 1;
            self.queued_of[class as usize] += 1;
        }
    }

    fn several_pcpus(&self) -> bool {
        self.current.several()
    }

    /// The VCPU a pcpu ran stops there: charged, and queued again while runnable.
    #[inline(always)]
    fn put_back(&mut self, vcpu: VcpuId) {
        let s = self.get_mut(vcpu);
        s.charge();
        if s.runnable() {
            self.insert(vcpu);
        }
    }

    /// Run `next` (IDLE if none) for a time slice.
    #[inline(always)]
    fn decision(&self, next: Option<VcpuId>) -> Decision {
        match next {
            Some(next) => Decision {
                run: Some(next),
                slice: Some(self.config.slice()),
            },
            None => Decision::IDLE,
        }
    }

    /// `do_schedule` on a pool of several pcpus: what ran here is put back; the first
    /// waiting VCPU allowed here runs. Apart, so that the one-pcpu decision stays small.
    #[inline(never)]
    fn do_schedule_on_several(&mut self, pcpu: PcpuId) -> Decision {
        self.asked.remove(pcpu.0);
        if let Some(c) = self.current[pcpu.index()] {
            self.put_back(c);
        }
        let next = self
            .runq
            .iter()
            .position(|&v| self.affinity.allows(v, pcpu.0))
            .and_then(|i| self.runq.remove(i));
        if let Some(v) = next {
            self.left_queue(v);
            self.affinity.ran(v, pcpu.0);
        }
        self.current[pcpu.index()] = next;
        self.decision(next)
    }

    fn is_running(&self, vcpu: VcpuId) -> bool {
        self.current.contains(&Some(vcpu))
    }

    /// One pcpu: `__runq_tickle`: whether `vcpu`, just queued, must preempt what runs.
    /// Several: whether some pcpu must reschedule ([`Policy::tickle`]).
    fn tickles(&self, vcpu: VcpuId) -> bool {
        if self.several_pcpus() {
            return !self.tickle().is_empty();
        }
        match self.current[0] {
            None => true,
            Some(c) => self.get(vcpu).class < self.get(c).class,
        }
    }

    /// `burn_credits` of `vcpu` ([`CreditVcpu::charge`]).
    fn charge(&mut self, vcpu: VcpuId) {
        self.get_mut(vcpu).charge();
    }

    /// Joins the active list at its head (Xen's `list_add`), if not there.
    fn activate(&mut self, vcpu: VcpuId) {
        if self.get(vcpu).active {
            return;
        }
        let head = self.active_head;
        let s = self.get_mut(vcpu);
        s.active = true;
        s.active_prev = None;
        s.active_next = head;
        match head {
            Some(h) => self.get_mut(h).active_prev = Some(vcpu),
            None => self.active_tail = Some(vcpu),
        }
        self.active_head = Some(vcpu);
    }

    /// Leaves the active list, if there.
    fn deactivate(&mut self, vcpu: VcpuId) {
        let s = self.get_mut(vcpu);
        if !s.active {
            return;
        }
        s.active = false;
        let (prev, next) = (s.active_prev.take(), s.active_next.take());
        match prev {
            Some(p) => self.get_mut(p).active_next = next,
            None => self.active_head = next,
        }
        match next {
            Some(n) => self.get_mut(n).active_prev = prev,
            None => self.active_tail = prev,
        }
    }

    /// The active list, head first.
    fn active_list(&self) -> impl Iterator<Item = VcpuId> + '_ {
        std::iter::successors(self.active_head, |&v| self.get(v).active_next)
    }

    /// `csched_runq_sort`: UNDER and BOOST VCPUs move ahead of OVER ones, keeping order.
    fn sort_runq(&mut self) {
        if self.queued_of[Class::Over as usize] == 0 {
            // Nothing to move (and no pass over a long queue).
            return;
        }
        let mut over = std::mem::take(&mut self.scratch);
        over.clear();
        let mut kept = 0;
        for i in 0..self.runq.len() {
            let v = self.runq[i];
            if self.get(v).class == Class::Over {
                over.push(v);
            } else {
                self.runq[kept] = v;
                kept += 1;
            }
        }
        self.runq.truncate(kept);
        self.runq.extend(over.iter().copied());
        self.scratch = over;
    }

    /// The cap's share of one accounting period, `⌈cap × period / 100⌉`; None without cap.
    fn cap_share(&self, cap: u32) -> Option<i64> {
        (cap > 0).then(|| {
            let share = div_ceil(cap as i128 * self.accounting_worth() as i128, 100);
            i64::try_from(share).unwrap_or(i64::MAX)
        })
    }

    /// `csched_acct`. Returns whether the pcpu must reschedule (a cap parked the running
    /// VCPU, or an unparked VCPU beats what runs).
    fn account(&mut self) -> bool {
        for s in self.vcpus.iter_mut() {
            if let Some(p) = s.pending.take() {
                s.weight = p.weight;
                s.cap = p.cap;
            }
        }
        let weight_total: i128 = self.active_list().map(|v| self.get(v).weight as i128).sum();
        let mut credit_total = self.accounting_worth() as i128 * self.pcpus as i128
            - self.credit_balance.min(0) as i128;
        let balance = self.credit_balance;
        self.sort_pending = true;
        if weight_total == 0 {
            self.credit_balance = 0;
            return false;
        }
        let mut weight_left = weight_total;
        let mut credit_xtra = false;
        let mut new_balance: i64 = 0;
        let mut resched = false;
        let slice = self.slice_worth() as i128;
        // The list as it was: moves to its head do not change the order of this pass.
        let mut order = std::mem::take(&mut self.scratch);
        order.clear();
        order.extend(self.active_list());
        for &vcpu in &order {
            let (weight, cap) = {
                let s = self.get(vcpu);
                (s.weight as i128, s.cap)
            };
            weight_left -= weight;
            let mut peak = self.accounting_worth() as i128;
            if balance < 0 {
                peak += div_ceil(-(balance as i128) * weight, weight_total);
            }
            let cap_share = self.cap_share(cap).map(i128::from);
            if let Some(share) = cap_share {
                peak = peak.min(share);
            }
            let mut fair = div_ceil(credit_total * weight, weight_total);
            if fair < peak {
                credit_xtra = true;
            } else {
                if weight_left != 0 {
                    // Give the VCPUs after it a chance at what it cannot use.
                    credit_total += div_ceil((fair - peak) * weight_total, weight_left);
                }
                if credit_xtra {
                    self.deactivate(vcpu);
                    self.activate(vcpu);
                }
                fair = peak;
            }
            let fair = i64::try_from(fair).unwrap_or(i64::MAX);
            let running_on = self.current.position(&Some(vcpu));
            let running = running_on.is_some();
            let mut parked_running = None;
            let credit = self.get(vcpu).credit.saturating_add(fair);
            self.set_class(
                vcpu,
                if credit < 0 {
                    Class::Over
                } else {
                    Class::Under
                },
            );
            let s = self.get_mut(vcpu);
            s.credit = credit;
            let mut unparked = false;
            if s.credit < 0 {
                if cap_share.is_some_and(|share| (s.credit as i128) < -share) && !s.parked {
                    s.parked = true;
                    resched |= running;
                    parked_running = running_on;
                }
                s.credit = s.credit.max(-(slice as i64));
            } else {
                if s.parked {
                    s.parked = false;
                    unparked = true;
                }
                if s.credit as i128 > slice {
                    s.credit = 0;
                    self.deactivate(vcpu);
                }
            }
            if let Some(p) = parked_running.filter(|_| self.several_pcpus()) {
                self.asked.insert(p as u32);
            }
            new_balance = new_balance.saturating_add(self.get(vcpu).credit);
            if self.get(vcpu).parked {
                self.dequeue(vcpu);
            }
            if unparked && self.get(vcpu).has_work && !running {
                // `vcpu_unpause` wakes it, still flagged parked, so without BOOST.
                self.insert(vcpu);
                resched |= self.tickles(vcpu);
            }
        }
        self.credit_balance = new_balance;
        self.scratch = order;
        resched
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

    fn insert_vcpu(&mut self, _cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) {
        self.vcpus.insert(
            vcpu,
            CreditVcpu {
                vcpu,
                weight: params.weight,
                cap: params.cap,
                pending: None,
                credit: 0,
                uncharged: 0,
                class: Class::Under,
                has_work: false,
                parked: false,
                active: false,
                active_prev: None,
                active_next: None,
                queued: false,
                counters: BudgetCounters::default(),
            },
        );
    }

    fn remove_vcpu(&mut self, _cx: &mut Cx, vcpu: VcpuId) {
        for c in &mut self.current {
            if *c == Some(vcpu) {
                *c = None;
            }
        }
        self.affinity.remove(vcpu);
        self.dequeue(vcpu);
        self.deactivate(vcpu);
        self.vcpus.remove(vcpu);
    }

    fn wake(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        let s = self.get_mut(vcpu);
        s.has_work = true;
        if s.parked {
            // Paused by its cap: the wake waits for the unpark.
            return false;
        }
        if s.class == Class::Under {
            self.set_class(vcpu, Class::Boost);
        }
        if self.is_running(vcpu) {
            // Blocked and woke again before it was descheduled: it simply goes on.
            return false;
        }
        self.insert(vcpu);
        self.tickles(vcpu)
    }

    fn sleep(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.get_mut(vcpu).has_work = false;
        self.dequeue(vcpu);
        self.is_running(vcpu)
    }

    fn burn(&mut self, _cx: &mut Cx, pcpu: PcpuId, ran: Nanos, spent: Spent) {
        let Some(v) = self.current[pcpu.index()] else {
            return;
        };
        let s = self.get_mut(v);
        s.uncharged = s.uncharged.saturating_add(as_i64(ran));
        s.counters.spend(spent, ran);
    }

    fn do_schedule(&mut self, _cx: &mut Cx, pcpu: PcpuId) -> Decision {
        if self.several_pcpus() {
            return self.do_schedule_on_several(pcpu);
        }
        // One pcpu (the usual case): what ran is charged and queued again while runnable;
        // the head of the run queue runs.
        if let Some(c) = self.current[0] {
            self.put_back(c);
        }
        let next = self.runq.pop_front();
        if let Some(v) = next {
            self.left_queue(v);
        }
        self.current[0] = next;
        self.decision(next)
    }

    fn tick_interval(&self) -> TickInterval {
        TickInterval::Every(self.config.tick)
    }

    fn tick(&mut self, _cx: &mut Cx, pcpu: PcpuId) -> bool {
        let mut resched = false;
        if pcpu == PcpuId(0) {
            self.master_ticks += 1;
            if self
                .master_ticks
                .is_multiple_of(self.config.ticks_per_accounting as u64)
            {
                resched |= self.account();
            }
        }
        if let Some(c) = self.current[pcpu.index()] {
            if self.get(c).class == Class::Boost {
                self.set_class(c, Class::Under);
            }
            self.charge(c);
            self.activate(c);
        }
        if self.sort_pending {
            self.sort_pending = false;
            self.sort_runq();
        }
        if self.several_pcpus() {
            // The pcpus the accounting affects are named by `tickle`, which the machine
            // asks after every tick of a pool of several pcpus.
            return false;
        }
        resched
    }

    fn next_timer(&self) -> Option<Nanos> {
        None
    }

    fn handle_timer(&mut self, _cx: &mut Cx) -> bool {
        false
    }

    fn adjust(&mut self, _cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) -> bool {
        self.get_mut(vcpu).pending = Some(params.clone());
        false
    }

    fn set_affinity(&mut self, _cx: &mut Cx, vcpu: VcpuId, affinity: CpuSet) -> bool {
        self.affinity.set(vcpu, affinity);
        let was_running = self.current.contains(&Some(vcpu));
        crate::policy::global::stop_outside(&mut self.current, vcpu, affinity);
        // Stopped where it ran: back to the run queue while it is runnable.
        if was_running && !self.current.contains(&Some(vcpu)) && self.runnable(vcpu) {
            self.insert(vcpu);
        }
        self.several_pcpus() && !self.tickle().is_empty()
    }

    fn change_pcpus(&mut self, _cx: &mut Cx, change: PcpuChange) -> bool {
        let left = change.apply(&mut self.current, || None).flatten();
        self.asked = change.renumber_set(self.asked);
        self.affinity.change_pcpus(change);
        // The accounting shares one period's worth per pcpu (Xen's `prv->ncpus`); the
        // master is local pcpu 0, whichever pcpu that now is, and keeps counting its ticks.
        self.pcpus = self.current.len() as u32;
        // The VCPU the leaving pcpu ran is charged and queued again, as its `do_schedule`
        // would; its class and credit are kept.
        let Some(v) = left else {
            return false;
        };
        self.charge(v);
        if !self.runnable(v) {
            return false;
        }
        self.insert(v);
        !self.several_pcpus() && self.tickles(v)
    }

    fn tickle(&self) -> CpuSet {
        if !self.several_pcpus() {
            return CpuSet::EMPTY;
        }
        let running = |p: usize| {
            self.current[p]
                .filter(|&v| self.runnable(v))
                .map(|v| self.get(v).class)
        };
        let waiting = self
            .runq
            .iter()
            .map(|&v| (self.get(v).class, self.affinity.placement(v)));
        self.asked
            .union(global::tickle_targets(self.current.len(), running, waiting))
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

    /// The run queue holds exactly the waiting runnable VCPUs, once each, with no OVER VCPU
    /// ahead of another class; the active list matches the flags; no credit above one
    /// slice's worth.
    fn check_invariants(&self) -> Result<(), String> {
        let slice = self.slice_worth();
        for s in self.iter() {
            let queued = self.runq.iter().filter(|&&v| v == s.vcpu).count();
            let should_queue = self.runnable(s.vcpu) && !self.is_running(s.vcpu);
            if queued != usize::from(should_queue) || s.queued != should_queue {
                return Err(format!(
                    "vcpu {:?}: queued {queued} times (has work: {}, parked: {}, running: {})",
                    s.vcpu,
                    s.has_work,
                    s.parked,
                    self.is_running(s.vcpu)
                ));
            }
            if s.credit > slice {
                return Err(format!(
                    "vcpu {:?}: credit {} above one slice's worth {slice}",
                    s.vcpu, s.credit
                ));
            }
            if s.active != self.active_list().any(|v| v == s.vcpu) {
                return Err(format!(
                    "vcpu {:?}: active flag {} disagrees with the active list",
                    s.vcpu, s.active
                ));
            }
        }
        if self.runq.len()
            != self.iter().filter(|s| self.runnable(s.vcpu)).count()
                - self
                    .current
                    .iter()
                    .filter(|c| c.is_some_and(|c| self.runnable(c)))
                    .count()
        {
            return Err("run queue holds unknown vcpus".to_string());
        }
        for class in [Class::Boost, Class::Under, Class::Over] {
            let n = self
                .runq
                .iter()
                .filter(|&&v| self.get(v).class == class)
                .count();
            if n != self.queued_of[class as usize] {
                return Err(format!(
                    "{class:?}: {n} queued, counted {}",
                    self.queued_of[class as usize]
                ));
            }
        }
        if self.active_list().count() != self.iter().filter(|s| s.active).count() {
            return Err("the active list and the flags disagree".to_string());
        }
        if !self.sort_pending {
            let classes: Vec<Class> = self.runq.iter().map(|&v| self.get(v).class).collect();
            if let Some(first_over) = classes.iter().position(|&c| c == Class::Over) {
                if classes[first_over..].iter().any(|&c| c != Class::Over) {
                    return Err(format!("run queue out of class order: {classes:?}"));
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

    fn params(weight: u32, cap: u32) -> VcpuParams {
        let mut p = VcpuParams::server(ms(1), ms(10), 0);
        p.weight = weight;
        p.cap = cap;
        p
    }

    #[test]
    fn validation_reads_weight_and_cap_only() {
        let credit = Credit::new(2, CreditConfig::default());
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
        assert!(validate_config(&CreditConfig::default()).is_ok());
        for bad in [
            CreditConfig {
                tick: Nanos::ZERO,
                ..CreditConfig::default()
            },
            CreditConfig {
                ticks_per_slice: 0,
                ..CreditConfig::default()
            },
            CreditConfig {
                ticks_per_accounting: 0,
                ..CreditConfig::default()
            },
        ] {
            assert!(validate_config(&bad).is_err(), "{bad:?}");
        }
    }

    /// Charges round to the nearest 0.1 ms and carry the rest: 0.26 ms → 0.3 ms debited,
    /// −0.04 ms carried; then 0.14 ms more (0.10 net) → 0.1 ms debited, nothing carried.
    #[test]
    fn charges_round_to_the_nearest_tenth_of_a_millisecond_and_carry_the_rest() {
        let mut log = EventLog::new(false);
        let mut credit = Credit::new(1, CreditConfig::default());
        let v = VcpuId(0);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        credit.insert_vcpu(&mut cx, v, &params(256, 0));
        credit.wake(&mut cx, v);
        assert_eq!(credit.do_schedule(&mut cx, PcpuId(0)).run, Some(v));
        credit.burn(&mut cx, PcpuId(0), Nanos::from_us(260), Spent::Running);
        credit.tick(&mut cx, PcpuId(0));
        assert_eq!(credit.view(v).credit, Some(-300_000));
        assert_eq!(credit.get(v).uncharged, -40_000);
        credit.burn(&mut cx, PcpuId(0), Nanos::from_us(140), Spent::Running);
        credit.do_schedule(&mut cx, PcpuId(0));
        assert_eq!(credit.view(v).credit, Some(-400_000));
        assert_eq!(credit.get(v).uncharged, 0);
    }

    /// Three active VCPUs, weights 512/256/256, one pcpu, 30 ms accounting, no balance:
    /// shares ⌈30·512/1024⌉ = 15, 7.5, 7.5 ms — each below its peak of 30 ms.
    #[test]
    fn accounting_shares_the_pool_by_weight_among_active_vcpus() {
        let mut log = EventLog::new(false);
        let mut credit = Credit::new(1, CreditConfig::default());
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        for (i, w) in [512, 256, 256, 256].into_iter().enumerate() {
            credit.insert_vcpu(&mut cx, VcpuId(i as u32), &params(w, 0));
        }
        for i in 0..3 {
            credit.activate(VcpuId(i));
        }
        credit.account();
        let credits: Vec<Option<i64>> = (0..4).map(|i| credit.view(VcpuId(i)).credit).collect();
        assert_eq!(
            credits,
            vec![Some(15_000_000), Some(7_500_000), Some(7_500_000), Some(0)],
            "the fourth is not active: not paid"
        );
    }

    /// A capped VCPU's unused share goes to the VCPUs after it in the active list. Active
    /// list (head first): a (cap 10 %: ⌈10 × 30 / 100⌉ = 3 ms), b. Equal weights: fair 15 ms
    /// each; a gets its peak 3 ms and leaves (15 − 3)·512/256 = 24 ms more to the pool, so b
    /// is paid ⌈(30 + 24)·256/512⌉ = 27 ms.
    #[test]
    fn unused_capped_share_goes_to_the_vcpus_after_it() {
        let mut log = EventLog::new(false);
        let mut credit = Credit::new(1, CreditConfig::default());
        let (a, b) = (VcpuId(0), VcpuId(1));
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        credit.insert_vcpu(&mut cx, a, &params(256, 10));
        credit.insert_vcpu(&mut cx, b, &params(256, 0));
        credit.activate(b);
        credit.activate(a);
        credit.account();
        assert_eq!(credit.view(a).credit, Some(3_000_000));
        assert_eq!(credit.view(b).credit, Some(27_000_000));
    }

    /// Hoarding: a VCPU paid above one slice's worth leaves the active set with credit 0;
    /// one in debt below a slice's worth is floored there.
    #[test]
    fn hoarders_leave_the_active_set_and_debt_is_floored() {
        let mut log = EventLog::new(false);
        let mut credit = Credit::new(1, CreditConfig::one_ms());
        let (a, b) = (VcpuId(0), VcpuId(1));
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        credit.insert_vcpu(&mut cx, a, &params(256, 0));
        credit.insert_vcpu(&mut cx, b, &params(256, 0));
        credit.activate(a);
        credit.activate(b);
        credit.get_mut(b).credit = -10_000_000;
        // Pool 3 ms (one_ms: 3 ticks of 1 ms), 1.5 ms each: a at 1.5 ms > one slice (1 ms).
        credit.account();
        assert_eq!(credit.view(a).credit, Some(0));
        assert!(!credit.is_active(a));
        assert_eq!(credit.class(a), Class::Under);
        assert_eq!(credit.view(b).credit, Some(-1_000_000), "floored at −1 ms");
        assert_eq!(credit.class(b), Class::Over);
        assert_eq!(credit.check_invariants(), Ok(()));
    }

    /// Two pcpus. A and B (UNDER) run on pcpus 0 and 1 (B takes idle pcpu 1 at its wake).
    /// C wakes (BOOST): both pcpus run UNDER, a strictly worse class: the lowest, pcpu 0, is
    /// tickled and takes C; A waits, UNDER, and beats nobody (not strictly). D (BOOST) may
    /// only run on pcpu 1: it preempts B there, ahead of A in the queue.
    #[test]
    fn two_pcpus_boost_tickles_a_strictly_worse_class_within_the_affinity() {
        let mut log = EventLog::new(false);
        let mut credit = Credit::new(2, CreditConfig::default());
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        let (a, b, c, d) = (VcpuId(0), VcpuId(1), VcpuId(2), VcpuId(3));
        for (v, aff) in [
            (a, CpuSet::first(2)),
            (b, CpuSet::first(2)),
            (c, CpuSet::first(2)),
            (d, CpuSet::one(1)),
        ] {
            credit.set_affinity(&mut cx, v, aff);
            credit.insert_vcpu(&mut cx, v, &params(256, 0));
        }
        assert!(credit.wake(&mut cx, a));
        assert_eq!(credit.do_schedule(&mut cx, PcpuId(0)).run, Some(a));
        assert!(credit.wake(&mut cx, b));
        assert_eq!(credit.tickle(), CpuSet::one(1), "pcpu 1 idles");
        assert_eq!(credit.do_schedule(&mut cx, PcpuId(1)).run, Some(b));
        // A tick finds each running: BOOST ends, both UNDER.
        credit.tick(&mut cx, PcpuId(0));
        credit.tick(&mut cx, PcpuId(1));
        assert_eq!(
            (credit.class(a), credit.class(b)),
            (Class::Under, Class::Under)
        );
        assert!(credit.wake(&mut cx, c));
        assert_eq!(credit.class(c), Class::Boost);
        assert_eq!(credit.tickle(), CpuSet::one(0));
        assert_eq!(credit.do_schedule(&mut cx, PcpuId(0)).run, Some(c));
        assert_eq!(
            credit.tickle(),
            CpuSet::EMPTY,
            "A (UNDER) does not beat B (UNDER)"
        );
        assert!(credit.wake(&mut cx, d));
        assert_eq!(credit.tickle(), CpuSet::one(1), "D may only run on pcpu 1");
        assert_eq!(credit.do_schedule(&mut cx, PcpuId(1)).run, Some(d));
        assert_eq!(credit.tickle(), CpuSet::EMPTY);
        // C blocks: pcpu 0 takes A, the head of the queue.
        credit.sleep(&mut cx, c);
        assert_eq!(credit.do_schedule(&mut cx, PcpuId(0)).run, Some(a));
        assert_eq!(credit.check_invariants(), Ok(()));
    }
}
