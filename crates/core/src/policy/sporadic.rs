//! Sporadic Server, corrected (Stanovich, Baker, Wang & González Harbour, "Defects of the
//! POSIX Sporadic Server and How to Correct Them", RTAS 2010; after Sprunt, Sha & Lehoczky
//! 1989).
//!
//! # Design note
//! - **Eligibility and picking**: a VCPU is eligible while its remaining budget is > 0;
//!   the highest-priority eligible VCPU with work runs on its own budget (`queuePick(RunQ)`,
//!   as for the Deferrable Server); slice: its remaining budget.
//! - **Activation and chunks**: a VCPU is *active* while it has work and a remaining
//!   budget above 0, whether it runs or a higher-priority VCPU preempts it. Its
//!   *activation* is the instant it becomes active: a wake with budget left, or a
//!   replenishment reaching it while it has work and no budget (it is active again at that
//!   instant, even if it cannot run yet). A *chunk* lasts from an activation while the
//!   VCPU stays active: being preempted does not end it; blocking or exhausting its
//!   budget does (and so does a change of parameters: the chunk closes under the old
//!   rules and, if the VCPU is still active, a new one begins at once).
//! - **Replenishment**: a closing chunk queues a replenishment of the budget it actually
//!   consumed, due at its activation + P. Due replenishments add to the remaining budget
//!   (exactly at their due time, or at the next tick in `tick` mode); one that arrives
//!   during a chunk lengthens that chunk.
//! - **Where the spec's shorthand is read as the published algorithm**: the spec words the
//!   rule "when the VCPU starts running at time s … queued for s + P". Taken literally (s =
//!   the start of each stretch of execution), a server that a higher-priority VCPU
//!   preempts at each of its replenishments gets B every P + (that delay), not every P,
//!   and the response-time bounds of Davis & Burns (which treat a Sporadic Server like a
//!   periodic task, as Sprunt et al. show it may be) fail — pinned in
//!   `crates/scenario/tests/integration/soundness.rs`,
//!   `sporadic_server_replenishes_from_activation`.
//!   The spec names Stanovich et al. 2010 as its source, so `s` is read as their
//!   activation time (Sprunt et al.: the instant the server's priority level becomes
//!   active with budget > 0).
//! - **Overhead** does not split a chunk: the payback is anchored at the activation, which
//!   precedes every unit the chunk consumes, so scheduler overhead inside a chunk only
//!   delays consumption and never brings a payback closer to the time it paid for.
//! - **At most `max_replenishments` pending** per VCPU: when one more is needed, its
//!   amount is added to the latest pending replenishment and that one moves to the new
//!   (later) due time. Due times are kept non-decreasing.
//! - **Timer**: each VCPU's earliest pending replenishment is kept in a set ordered by due
//!   time (`DueFronts`): the timer is its first entry, and a timer replenishes only the
//!   VCPUs due, in VCPU order, as a pass over every VCPU would (each may requeue, which
//!   hands out RunQ stamps). So a queued payback costs O(log n), and a timer O(log n) per
//!   VCPU it replenishes, not a scan of every VCPU.
//! - **Conservation** (checked by `check_invariants`): remaining + pending amounts + the
//!   budget consumed by the open chunk = B; a chunk is open exactly while the VCPU is
//!   active. Hence from any activation `a` the VCPU runs at most B in `[a, a + P)`: all it
//!   consumes from `a` on belongs to chunks activated at or after `a`, paid back at `a + P`
//!   or later. This is the spec's "never more than B in any window of length P", for
//!   windows that begin at an activation. A window that begins elsewhere may hold more —
//!   budget spent at the end of one activation window, then again at its replenishment —
//!   exactly as two back-to-back jobs of a periodic task `(P, B)` (and as under the
//!   Periodic Server); it never holds more than 2B (one chunk consumes at most B). Both
//!   bounds assume no parameter change in between.
//! - **Offset**: a VCPU with an offset starts with no budget and a replenishment of B due
//!   at the offset.
//! - **adjust** (choices where the spec is silent): the remaining budget is cut to the new
//!   budget at once; the other changes wait for the VCPU's next replenishment. Then the
//!   open chunk (if any) is closed, surplus pending replenishments are merged into the
//!   last, and the books are balanced to the new budget: a surplus is taken from the
//!   latest pending replenishments (then from the remaining budget), a deficit is granted
//!   with that replenishment. A VCPU at rest (nothing pending, nothing consumed by an open
//!   chunk) has no next replenishment to wait for: its new parameters apply at once, and a
//!   budget increase is queued as a replenishment one new period later (never granted
//!   early).
//! - **Several pcpus: global fixed priority** (`docs/platform.md`; [`GlobalFp`]): each pcpu's
//!   decision is its own (`Own(v)` or IDLE); `do_schedule(p)` picks the highest-priority
//!   VCPU with work and budget that its affinity allows on p and that runs on no other
//!   pcpu; wakes and replenishments tickle like RTDS. Chunks follow activity, not pcpus: a
//!   VCPU that migrates keeps its chunk open — also when the pcpu it ran on leaves the
//!   pool, which changes no budget or pending replenishment.
//!
//! Known gaps: the merge at `max_replenishments` brings budget back later
//! than one period after the activation that spent it, so a Sporadic Server behaves
//! like the periodic task the response-time analysis assumes only while nothing is merged
//! (`crates/scenario/tests/integration/soundness.rs`,
//! `sporadic_server_merge_limit_can_delay_budget_past_the_bound`).

use std::collections::{BTreeSet, VecDeque};

use crate::cpuset::CpuSet;
use crate::event::{CoreEvent, Cx};
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::fp::{Charge, GlobalFp, Plan, ServerSet};
use crate::policy::table::VcpuTable;
use crate::policy::{
    BudgetCounters, Decision, PcpuChange, Policy, PolicyKind, Spent, TickInterval, VcpuView,
};
use crate::time::Nanos;

/// One pending replenishment: `amount` is added to the budget at `due`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replenishment {
    pub due: Nanos,
    pub amount: Nanos,
}

/// The open chunk: the VCPU has been active since `activation` and consumed `consumed`.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    activation: Nanos,
    consumed: Nanos,
}

/// A VCPU's replenishment books.
#[derive(Clone, Debug, Default)]
struct Books {
    /// Sorted by due time (non-decreasing), at most `max_replenishments` long.
    pending: VecDeque<Replenishment>,
    /// `Some` exactly while the VCPU is active (has work and budget > 0).
    chunk: Option<Chunk>,
}

impl Books {
    fn pending_total(&self) -> Nanos {
        self.pending.iter().fold(Nanos::ZERO, |t, r| t + r.amount)
    }

    fn consumed_in_chunk(&self) -> Nanos {
        self.chunk.map_or(Nanos::ZERO, |c| c.consumed)
    }
}

/// Past this many VCPUs with a pending replenishment, [`DueFronts`] keeps them ordered by
/// due time: below it, a scan of a few entries is cheaper than any tree.
const ORDERED_ABOVE: usize = 64;

/// The first pending replenishment of each VCPU that has one: the timer's answer is the
/// earliest, and a timer replenishes only the VCPUs due by then. Up to [`ORDERED_ABOVE`]
/// VCPUs it scans them; past that (once; it never goes back) it also keeps them in a set
/// ordered by due time, so that filing a change costs O(log n) and a timer finds the VCPUs
/// due without a scan (with thousands of VCPUs on a pcpu, a scan per timer and per queued
/// payback made a run quadratic). Both forms give the same answers.
#[derive(Clone, Debug, Default)]
struct DueFronts {
    /// Each VCPU's first pending due time.
    due_of: VcpuTable<Nanos>,
    /// How many VCPUs `due_of` holds.
    count: usize,
    /// Past [`ORDERED_ABOVE`]: `(due, vcpu)` for each VCPU of `due_of`.
    ordered: Option<BTreeSet<(Nanos, VcpuId)>>,
    /// The earliest due time, kept because the machine asks after every hook.
    earliest: Option<Nanos>,
}

impl DueFronts {
    /// `vcpu`'s first pending replenishment is now due at `front` (`None`: none pending).
    #[inline]
    fn set(&mut self, vcpu: VcpuId, front: Option<Nanos>) {
        let filed = self.due_of.try_get(vcpu).copied();
        if filed == front {
            return;
        }
        match front {
            Some(due) => self.due_of.insert(vcpu, due),
            None => {
                self.due_of.remove(vcpu);
            }
        }
        match (filed, front) {
            (None, Some(_)) => self.count += 1,
            (Some(_), None) => self.count -= 1,
            _ => {}
        }
        if let Some(ordered) = &mut self.ordered {
            if let Some(due) = filed {
                ordered.remove(&(due, vcpu));
            }
            if let Some(due) = front {
                ordered.insert((due, vcpu));
            }
            self.earliest = ordered.first().map(|&(due, _)| due);
        } else if self.count > ORDERED_ABOVE {
            let ordered: BTreeSet<(Nanos, VcpuId)> =
                self.due_of.entries().map(|(v, &due)| (due, v)).collect();
            self.earliest = ordered.first().map(|&(due, _)| due);
            self.ordered = Some(ordered);
        } else {
            self.earliest = self.due_of.iter().min().copied();
        }
    }

    /// The VCPUs with a replenishment due at or before `now`, appended to `out` in VCPU
    /// order.
    fn due_by(&self, now: Nanos, out: &mut Vec<VcpuId>) {
        let Some(ordered) = &self.ordered else {
            let due = self.due_of.entries().filter(|&(_, &due)| due <= now);
            out.extend(due.map(|(v, _)| v));
            return;
        };
        let from = out.len();
        out.extend(
            ordered
                .range(..=(now, VcpuId(u32::MAX)))
                .map(|&(_, vcpu)| vcpu),
        );
        out[from..].sort_unstable();
    }
}

pub struct Sporadic {
    servers: ServerSet,
    books: VcpuTable<Books>,
    /// What the last `do_schedule` decided on each pcpu (its plan: that VCPU on its own
    /// budget, or IDLE), affinities, owed reschedules.
    global: GlobalFp,
    /// A reschedule was asked for (or is due) and `do_schedule` has not run since.
    reschedule_owed: bool,
    /// Each VCPU's earliest pending replenishment: `next_timer`'s answer and the VCPUs a
    /// timer replenishes. Refiled ([`Self::refile`]) wherever a pending list changes
    /// (`queue`, `replenish_due`, `apply_params`, insert, remove); `check_invariants`
    /// compares it with a fresh scan.
    due: DueFronts,
    /// The VCPUs a timer replenishes (kept to avoid allocating per timer).
    to_replenish: Vec<VcpuId>,
}

impl Sporadic {
    pub fn new(pcpus: u32) -> Sporadic {
        Sporadic {
            servers: ServerSet::default(),
            books: VcpuTable::new(),
            global: GlobalFp::new(pcpus),
            reschedule_owed: false,
            due: DueFronts::default(),
            to_replenish: Vec::new(),
        }
    }

    /// Files the VCPU's earliest pending replenishment in `due` after its list changed.
    #[inline]
    fn refile(&mut self, vcpu: VcpuId) {
        let front = self.books(vcpu).pending.front().map(|r| r.due);
        self.due.set(vcpu, front);
    }

    /// The VCPU's pending replenishments, earliest first (for tests and traces).
    pub fn pending_replenishments(&self, vcpu: VcpuId) -> Vec<Replenishment> {
        self.books(vcpu).pending.iter().copied().collect()
    }

    /// The activation of the VCPU's open chunk, if it is active (for tests and traces).
    pub fn activation(&self, vcpu: VcpuId) -> Option<Nanos> {
        self.books(vcpu).chunk.map(|c| c.activation)
    }

    fn books(&self, vcpu: VcpuId) -> &Books {
        self.books.get(vcpu)
    }

    fn books_mut(&mut self, vcpu: VcpuId) -> &mut Books {
        self.books.get_mut(vcpu)
    }

    /// The plan in effect on `pcpu`.
    fn active(&self, pcpu: usize) -> Plan {
        self.global.current[pcpu].map_or(Plan::IDLE, Plan::own)
    }

    /// `do_schedule` on a pool of several pcpus: what ran here goes back to the RunQ, and
    /// the pick is [`GlobalFp::pick`]'s. Apart, so that the one-pcpu decision stays small.
    #[inline(never)]
    fn do_schedule_on_several(&mut self, pcpu: PcpuId) -> Decision {
        self.global.asked.remove(pcpu.0);
        self.servers.put_back(self.active(pcpu.index()).charge);
        let run = self.global.pick(&self.servers, pcpu.0).map(|s| s.vcpu);
        self.global.run_on(pcpu.0, run);
        self.servers.decision(self.active(pcpu.index()))
    }

    /// Whether the decision must be made again now; remembers a "yes". Several pcpus:
    /// whether some pcpu must ([`Policy::tickle`]).
    fn must_reschedule(&mut self, also: bool) -> bool {
        if self.global.several() {
            return also || !self.tickle().is_empty();
        }
        let answer = also || self.servers.plan_own_budget() != self.active(0);
        self.reschedule_owed |= answer;
        answer
    }

    /// Opens a chunk at `now` when the VCPU has just become active, closes the open one
    /// when it has just stopped being active. Called after every change of its work or
    /// budget, so that a chunk is open exactly while the VCPU is active.
    fn track_activation(&mut self, now: Nanos, vcpu: VcpuId) {
        let s = self.servers.get(vcpu);
        let active = s.has_work && !s.remaining.is_zero();
        let open = self.books(vcpu).chunk.is_some();
        if active && !open {
            self.books_mut(vcpu).chunk = Some(Chunk {
                activation: now,
                consumed: Nanos::ZERO,
            });
        } else if !active && open {
            self.close_chunk(vcpu);
        }
    }

    /// Ends the open chunk, queueing what it consumed one period after its activation.
    fn close_chunk(&mut self, vcpu: VcpuId) {
        if let Some(chunk) = self.books_mut(vcpu).chunk.take() {
            let period = self.servers.get(vcpu).params.period;
            self.queue(vcpu, chunk.activation + period, chunk.consumed);
        }
    }

    /// Queues `amount` at `due`, merging into the latest pending replenishment when the
    /// VCPU already has `max_replenishments`. Never lets the books exceed B.
    fn queue(&mut self, vcpu: VcpuId, due: Nanos, amount: Nanos) {
        let server = self.servers.get(vcpu);
        let (budget, max, remaining) = (
            server.params.budget,
            server.params.max_replenishments as usize,
            server.remaining,
        );
        let books = self.books_mut(vcpu);
        // Only binds after a budget cut: the books hold at most B.
        let room = budget.saturating_sub(remaining + books.pending_total());
        let amount = amount.min(room);
        if amount.is_zero() {
            return;
        }
        let due = books.pending.back().map_or(due, |last| due.max(last.due));
        if books.pending.len() >= max {
            let last = books.pending.back_mut().expect("max_replenishments >= 1");
            last.amount += amount;
            last.due = due;
        } else {
            books.pending.push_back(Replenishment { due, amount });
        }
        self.refile(vcpu);
    }

    /// Adds every replenishment of `vcpu` due at or before `cx.now` to its budget; applies
    /// parameters waiting for it; activates the VCPU if it has work and was out of budget.
    fn replenish_due(&mut self, cx: &mut Cx, vcpu: VcpuId) {
        let mut replenished = false;
        while let Some(r) = self.books(vcpu).pending.front().copied() {
            if r.due > cx.now {
                break;
            }
            self.books_mut(vcpu).pending.pop_front();
            let mut s = self.servers.get_mut(vcpu);
            s.remaining = (s.remaining + r.amount).min(s.params.budget);
            let budget = s.remaining;
            cx.emit(|| CoreEvent::Replenish { vcpu, budget });
            replenished = true;
        }
        if replenished {
            self.refile(vcpu);
            // A waiting VCPU re-enters the RunQ behind its equals; the one in effect is put
            // back at the next do_schedule.
            if self.servers.get(vcpu).has_work && !self.global.is_running(vcpu) {
                self.servers.requeue(vcpu);
            }
            // A running VCPU's slice grew with its budget: re-arm it.
            if self.global.several() {
                if let Some(p) = self.global.pcpu_of(vcpu) {
                    self.global.asked.insert(p);
                }
            }
        }
        if !replenished {
            // Neither its work nor its budget changed: its chunk is as it should be.
            return;
        }
        if self.servers.get(vcpu).pending.is_some() {
            self.apply_params(cx, vcpu, true);
        }
        self.track_activation(cx.now, vcpu);
    }

    /// Puts parameters set by `adjust` into effect and balances the books to the new
    /// budget: a deficit is granted now (`grant_now`, at a replenishment) or queued one
    /// new period later (a VCPU at rest). The caller re-opens a chunk if the VCPU is
    /// still active (`track_activation`).
    fn apply_params(&mut self, cx: &mut Cx, vcpu: VcpuId, grant_now: bool) {
        let Some(params) = self.servers.get_mut(vcpu).pending.take() else {
            return;
        };
        // Close the open chunk at the change: its payback follows the old rules.
        self.close_chunk(vcpu);
        let max = params.max_replenishments as usize;
        let (budget, period) = (params.budget, params.period);
        self.servers.set_params(vcpu, params);
        let remaining = self.servers.get(vcpu).remaining;
        let books = self.books_mut(vcpu);
        while books.pending.len() > max {
            let last = books.pending.pop_back().expect("longer than max");
            let before = books.pending.back_mut().expect("max >= 1");
            before.amount += last.amount;
            before.due = last.due;
        }
        let held = remaining + books.pending_total();
        if held > budget {
            let mut surplus = held - budget;
            while surplus > Nanos::ZERO {
                let Some(last) = books.pending.back_mut() else {
                    break;
                };
                let cut = surplus.min(last.amount);
                last.amount -= cut;
                surplus -= cut;
                if last.amount.is_zero() {
                    books.pending.pop_back();
                }
            }
            let mut s = self.servers.get_mut(vcpu);
            let cut = surplus.min(s.remaining);
            s.remaining -= cut;
        } else if held < budget {
            let deficit = budget - held;
            if grant_now {
                let mut s = self.servers.get_mut(vcpu);
                s.remaining += deficit;
                let budget = s.remaining;
                cx.emit(|| CoreEvent::Replenish { vcpu, budget });
            } else {
                self.queue(vcpu, cx.now + period, deficit);
            }
        }
        self.refile(vcpu);
    }
}

impl Policy for Sporadic {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Sporadic
    }

    fn validate(&self, params: &VcpuParams) -> Result<(), ParamError> {
        params.validate_server()
    }

    fn insert_vcpu(&mut self, cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) {
        self.servers.insert(cx.now, vcpu, params);
        let mut books = Books::default();
        if !params.offset.is_zero() {
            books.pending.push_back(Replenishment {
                due: cx.now + params.offset,
                amount: params.budget,
            });
        }
        self.books.insert(vcpu, books);
        self.refile(vcpu);
        // The machine reschedules after every insertion.
        self.reschedule_owed = true;
    }

    fn remove_vcpu(&mut self, _cx: &mut Cx, vcpu: VcpuId) {
        if self.global.is_running(vcpu) {
            self.reschedule_owed = true;
        }
        self.global.forget(vcpu);
        self.servers.remove(vcpu);
        self.books.remove(vcpu);
        self.due.set(vcpu, None);
    }

    fn wake(&mut self, cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.servers.get_mut(vcpu).has_work = true;
        self.servers.requeue(vcpu);
        self.track_activation(cx.now, vcpu);
        self.must_reschedule(false)
    }

    fn sleep(&mut self, cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.servers.get_mut(vcpu).has_work = false;
        self.track_activation(cx.now, vcpu);
        // The machine reschedules anyway when `vcpu` is the one running.
        let running = self.global.is_running(vcpu);
        self.must_reschedule(running)
    }

    fn burn(&mut self, cx: &mut Cx, pcpu: PcpuId, ran: Nanos, spent: Spent) {
        let Some(vcpu) = self.global.current[pcpu.index()] else {
            return;
        };
        let before = self.servers.get(vcpu).remaining;
        // A budget that runs out ends the slice: the machine reschedules then (after the
        // overhead, if it ran out while overhead was charged to it).
        self.reschedule_owed |= self.servers.charge(cx, Charge::Own(vcpu), ran, spent);
        let taken = before - self.servers.get(vcpu).remaining;
        if !taken.is_zero() {
            // A decision runs an active VCPU, so a chunk is open; should the VCPU have
            // stopped being active while the decision waited out overhead, what it ran is
            // still paid back, one period after the run began.
            let chunk = self.books_mut(vcpu).chunk.get_or_insert(Chunk {
                activation: cx.now - ran,
                consumed: Nanos::ZERO,
            });
            chunk.consumed += taken;
        }
        self.track_activation(cx.now, vcpu);
    }

    fn do_schedule(&mut self, _cx: &mut Cx, pcpu: PcpuId) -> Decision {
        // Chunks follow activity, not the pcpu: a preempted VCPU keeps its chunk open.
        self.reschedule_owed = false;
        if self.global.several() {
            return self.do_schedule_on_several(pcpu);
        }
        // One pcpu (the usual case, on every quantum): the highest-priority VCPU with work
        // and budget runs on its own budget.
        self.servers.put_back(self.active(0).charge);
        let plan = self.servers.plan_own_budget();
        self.global.current[0] = plan.run;
        self.servers.decision(plan)
    }

    fn tick_interval(&self) -> TickInterval {
        TickInterval::Quantum
    }

    fn next_timer(&self) -> Option<Nanos> {
        self.due.earliest
    }

    fn handle_timer(&mut self, cx: &mut Cx) -> bool {
        // The VCPUs with a replenishment due, in VCPU order: replenishments requeue, which
        // hands out RunQ stamps. Listed before any is processed, which changes only its own
        // VCPU's books: so each is processed once, as by a pass over the table.
        let mut due = std::mem::take(&mut self.to_replenish);
        self.due.due_by(cx.now, &mut due);
        for &vcpu in &due {
            self.replenish_due(cx, vcpu);
        }
        due.clear();
        self.to_replenish = due;
        self.must_reschedule(false)
    }

    fn adjust(&mut self, cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) -> bool {
        let before = self.servers.get(vcpu).remaining;
        self.servers.adjust(vcpu, params);
        let cut = self.servers.get(vcpu).remaining < before;
        let books = self.books(vcpu);
        if books.pending.is_empty() && books.consumed_in_chunk().is_zero() {
            self.apply_params(cx, vcpu, false);
        }
        self.track_activation(cx.now, vcpu);
        self.must_reschedule(cut && self.global.is_running(vcpu))
    }

    fn set_affinity(&mut self, _cx: &mut Cx, vcpu: VcpuId, affinity: CpuSet) -> bool {
        self.global.set_affinity(vcpu, affinity);
        self.global.several() && !self.tickle().is_empty()
    }

    fn change_pcpus(&mut self, _cx: &mut Cx, change: PcpuChange) -> bool {
        // The VCPU the leaving pcpu ran is put back, as its `do_schedule` would; its chunk
        // stays open while it is active (chunks follow activity, not the pcpu).
        if let Some(v) = self.global.change_pcpus(change) {
            self.servers.requeue(v);
        }
        !self.global.several() && self.must_reschedule(false)
    }

    fn tickle(&self) -> CpuSet {
        self.global.tickle(&self.servers)
    }

    fn view(&self, vcpu: VcpuId) -> VcpuView {
        self.servers.view(vcpu)
    }

    fn counters(&self, vcpu: VcpuId) -> BudgetCounters {
        self.servers.get(vcpu).counters
    }

    fn check_invariants(&self) -> Result<(), String> {
        self.servers.check_invariants()?;
        let fronts: BTreeSet<(Nanos, VcpuId)> = self
            .books
            .entries()
            .filter_map(|(v, b)| b.pending.front().map(|r| (r.due, v)))
            .collect();
        let filed: BTreeSet<(Nanos, VcpuId)> = self
            .due
            .due_of
            .entries()
            .map(|(v, &due)| (due, v))
            .collect();
        if filed != fronts
            || self.due.count != fronts.len()
            || self.due.ordered.as_ref().is_some_and(|o| *o != fronts)
            || self.due.earliest != fronts.first().map(|&(due, _)| due)
        {
            return Err(format!(
                "filed replenishments {filed:?} (earliest {:?}) != pending {fronts:?}",
                self.due.earliest
            ));
        }
        for s in self.servers.iter() {
            let books = self.books(s.vcpu);
            let v = s.vcpu;
            if books.pending.len() > s.params.max_replenishments as usize {
                return Err(format!(
                    "vcpu {v:?}: {} pending replenishments, above the limit {}",
                    books.pending.len(),
                    s.params.max_replenishments
                ));
            }
            let pairs = books.pending.iter().zip(books.pending.iter().skip(1));
            for (a, b) in pairs {
                if a.due > b.due {
                    return Err(format!("vcpu {v:?}: replenishments out of order"));
                }
            }
            if books.pending.iter().any(|r| r.amount.is_zero()) {
                return Err(format!("vcpu {v:?}: empty pending replenishment"));
            }
            let active = s.has_work && !s.remaining.is_zero();
            if books.chunk.is_some() != active {
                return Err(format!(
                    "vcpu {v:?}: chunk open = {}, but active (work and budget) = {active}",
                    books.chunk.is_some()
                ));
            }
            let in_chunk = books.consumed_in_chunk();
            let held = s.remaining + books.pending_total() + in_chunk;
            let balanced = if s.pending.is_some() {
                // A budget cut waiting for the next replenishment leaves the books short.
                held <= s.params.budget
            } else {
                held == s.params.budget
            };
            if !balanced {
                return Err(format!(
                    "vcpu {v:?}: remaining {} + pending {} + chunk {} != budget {}",
                    s.remaining,
                    books.pending_total(),
                    in_chunk,
                    s.params.budget
                ));
            }
        }
        self.global.check(&self.servers)?;
        if self.global.several() {
            return Ok(());
        }
        let now = self.servers.plan_own_budget();
        if !self.reschedule_owed && now != self.active(0) {
            return Err(format!(
                "sporadic: plan in effect {:?} differs from the plan for the current state \
                 {:?} and no reschedule was asked for",
                self.active(0),
                now
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventLog;
    use proptest::prelude::*;

    proptest! {
        /// `DueFronts` answers as a scan of every VCPU's front — the earliest due time, and
        /// the VCPUs due by any instant in VCPU order — after any sequence of changes, in
        /// its small form and past [`ORDERED_ABOVE`].
        #[test]
        fn due_fronts_answer_as_a_scan(
            ops in prop::collection::vec(
                (0u32..100, prop::option::weighted(0.7, 0u64..50), 0u64..60),
                1..400,
            )
        ) {
            let mut fronts = DueFronts::default();
            let mut reference: Vec<Option<Nanos>> = vec![None; 100];
            for (vcpu, front, now) in ops {
                let front = front.map(Nanos);
                fronts.set(VcpuId(vcpu), front);
                reference[vcpu as usize] = front;
                let count = reference.iter().flatten().count();
                prop_assert_eq!(fronts.count, count);
                if count > ORDERED_ABOVE {
                    prop_assert!(fronts.ordered.is_some());
                }
                let earliest = reference.iter().flatten().min().copied();
                prop_assert_eq!(fronts.earliest, earliest);
                let mut due = vec![VcpuId(999)];
                fronts.due_by(Nanos(now), &mut due);
                let mut expected = vec![VcpuId(999)];
                expected.extend((0..100u32).map(VcpuId).filter(|v| {
                    reference[v.index()].is_some_and(|d| d <= Nanos(now))
                }));
                prop_assert_eq!(due, expected);
            }
        }
    }

    fn ms(x: u64) -> Nanos {
        Nanos::from_ms(x)
    }

    fn due(at: u64, amount: u64) -> Replenishment {
        Replenishment {
            due: ms(at),
            amount: ms(amount),
        }
    }

    /// Runs `vcpu` alone for the given stretches `(from, to)` (ms): it wakes at `from` and
    /// blocks at `to`. Returns the policy.
    fn run_stretches(params: VcpuParams, stretches: &[(u64, u64)]) -> Sporadic {
        let mut log = EventLog::new(false);
        let mut p = Sporadic::new(1);
        let v = VcpuId(0);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        p.insert_vcpu(&mut cx, v, &params);
        let mut at = ms(0);
        for &(from, to) in stretches {
            cx.now = ms(from);
            p.burn(&mut cx, PcpuId(0), ms(from) - at, Spent::Running);
            p.wake(&mut cx, v);
            assert_eq!(p.activation(v), Some(ms(from)));
            assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, Some(v));
            cx.now = ms(to);
            p.burn(&mut cx, PcpuId(0), ms(to - from), Spent::Running);
            p.sleep(&mut cx, v);
            assert_eq!(p.activation(v), None);
            p.do_schedule(&mut cx, PcpuId(0));
            at = ms(to);
            p.check_invariants().unwrap();
        }
        p
    }

    #[test]
    fn each_chunk_is_paid_back_one_period_after_its_activation() {
        let p = run_stretches(VcpuParams::server(ms(4), ms(10), 1), &[(0, 1), (3, 5)]);
        assert_eq!(
            p.pending_replenishments(VcpuId(0)),
            vec![due(10, 1), due(13, 2)]
        );
        assert_eq!(p.view(VcpuId(0)).remaining_budget, Some(ms(1)));
    }

    #[test]
    fn one_replenishment_too_many_merges_into_the_latest_and_moves_it() {
        let mut params = VcpuParams::server(ms(4), ms(10), 1);
        params.max_replenishments = 2;
        let p = run_stretches(params, &[(0, 1), (2, 3), (4, 5)]);
        assert_eq!(
            p.pending_replenishments(VcpuId(0)),
            vec![due(10, 1), due(14, 2)]
        );
    }

    /// hi (B2, P10, prio 1) and lo (B4, P10, prio 2) wake at 0; hi runs [0,1) and blocks,
    /// lo runs [1,3) and blocks. lo was active from 0, while hi ran: its 2 ms are due at
    /// 10, not 11.
    #[test]
    fn a_preempted_vcpu_stays_active_and_pays_back_from_its_activation() {
        let mut log = EventLog::new(false);
        let mut p = Sporadic::new(1);
        let (hi, lo) = (VcpuId(0), VcpuId(1));
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        p.insert_vcpu(&mut cx, hi, &VcpuParams::server(ms(2), ms(10), 1));
        p.insert_vcpu(&mut cx, lo, &VcpuParams::server(ms(4), ms(10), 2));
        p.wake(&mut cx, lo);
        p.wake(&mut cx, hi);
        assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, Some(hi));
        assert_eq!(p.activation(lo), Some(ms(0)));
        cx.now = ms(1);
        p.burn(&mut cx, PcpuId(0), ms(1), Spent::Running);
        p.sleep(&mut cx, hi);
        assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, Some(lo));
        cx.now = ms(3);
        p.burn(&mut cx, PcpuId(0), ms(2), Spent::Running);
        p.sleep(&mut cx, lo);
        p.do_schedule(&mut cx, PcpuId(0));
        assert_eq!(p.pending_replenishments(hi), vec![due(10, 1)]);
        assert_eq!(p.pending_replenishments(lo), vec![due(10, 2)]);
        p.check_invariants().unwrap();
    }

    /// lo (B1, P10, prio 2) is busy and spends its budget in [0,1). hi (B2, P10, prio 1)
    /// wakes at 9 and runs [9,11). lo's payback lands at 10, while hi runs: lo is active
    /// again from 10, runs [11,12), and pays that back at 20, not 21.
    #[test]
    fn a_replenishment_reaching_a_vcpu_with_work_activates_it_even_while_preempted() {
        let mut log = EventLog::new(false);
        let mut p = Sporadic::new(1);
        let (hi, lo) = (VcpuId(0), VcpuId(1));
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        p.insert_vcpu(&mut cx, hi, &VcpuParams::server(ms(2), ms(10), 1));
        p.insert_vcpu(&mut cx, lo, &VcpuParams::server(ms(1), ms(10), 2));
        p.wake(&mut cx, lo);
        assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, Some(lo));
        cx.now = ms(1);
        p.burn(&mut cx, PcpuId(0), ms(1), Spent::Running);
        assert_eq!(p.activation(lo), None, "out of budget: no longer active");
        assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, None);
        cx.now = ms(9);
        p.burn(&mut cx, PcpuId(0), ms(8), Spent::Running);
        assert!(p.wake(&mut cx, hi));
        assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, Some(hi));
        cx.now = ms(10);
        p.burn(&mut cx, PcpuId(0), ms(1), Spent::Running);
        assert!(!p.handle_timer(&mut cx), "lo's budget does not preempt hi");
        assert_eq!(p.activation(lo), Some(ms(10)));
        p.check_invariants().unwrap();
        cx.now = ms(11);
        p.burn(&mut cx, PcpuId(0), ms(1), Spent::Running);
        assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, Some(lo));
        cx.now = ms(12);
        p.burn(&mut cx, PcpuId(0), ms(1), Spent::Running);
        assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, None);
        assert_eq!(p.pending_replenishments(lo), vec![due(20, 1)]);
        assert_eq!(p.pending_replenishments(hi), vec![due(19, 2)]);
        p.check_invariants().unwrap();
    }

    #[test]
    fn adjust_of_a_vcpu_at_rest_applies_at_once_but_grants_an_increase_a_period_later() {
        let mut log = EventLog::new(false);
        let mut p = Sporadic::new(1);
        let (a, b) = (VcpuId(0), VcpuId(1));
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        p.insert_vcpu(&mut cx, a, &VcpuParams::server(ms(2), ms(10), 1));
        p.insert_vcpu(&mut cx, b, &VcpuParams::server(ms(2), ms(10), 2));
        p.wake(&mut cx, a);
        p.wake(&mut cx, b);
        assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, Some(a));
        cx.now = ms(1);
        p.burn(&mut cx, PcpuId(0), ms(1), Spent::Running);
        // b is at rest (active since 0 but nothing consumed, nothing pending): budget 3
        // and priority 0 apply now; the extra 1 ms comes one new period (8 ms) later; its
        // chunk begins anew at the change; b now beats a.
        assert!(p.adjust(&mut cx, b, &VcpuParams::server(ms(3), ms(8), 0)));
        assert_eq!(p.view(b).remaining_budget, Some(ms(2)));
        assert_eq!(p.pending_replenishments(b), vec![due(9, 1)]);
        assert_eq!(p.activation(b), Some(ms(1)));
        assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, Some(b));
        // a, preempted, keeps its chunk (activated at 0, 1 ms consumed): not at rest, so
        // its cut to 1 ms waits for its next replenishment.
        assert_eq!(p.activation(a), Some(ms(0)));
        assert!(p.pending_replenishments(a).is_empty());
        assert!(!p.adjust(&mut cx, a, &VcpuParams::server(ms(1), ms(10), 1)));
        assert_eq!(p.view(a).remaining_budget, Some(ms(1)));
        p.check_invariants().unwrap();
        cx.now = ms(3);
        p.burn(&mut cx, PcpuId(0), ms(2), Spent::Running);
        // b's chunk [1,3) is paid back at 1 + 8 = 9.
        assert_eq!(p.pending_replenishments(b), vec![due(9, 1), due(9, 2)]);
        assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, Some(a));
        cx.now = ms(4);
        p.burn(&mut cx, PcpuId(0), ms(1), Spent::Running);
        p.sleep(&mut cx, a);
        // a's chunk, activated at 0, consumed 2 ([0,1) and [3,4)): one payback at 10.
        assert_eq!(p.pending_replenishments(a), vec![due(10, 2)]);
        p.do_schedule(&mut cx, PcpuId(0));
        cx.now = ms(10);
        p.burn(&mut cx, PcpuId(0), ms(6), Spent::Running);
        p.handle_timer(&mut cx);
        // At 10: +2; the books hold 2 > 1: the new budget applies and the surplus goes.
        assert_eq!(p.view(a).remaining_budget, Some(ms(1)));
        assert!(p.pending_replenishments(a).is_empty());
        assert_eq!(p.view(b).remaining_budget, Some(ms(3)));
        assert_eq!(p.activation(b), Some(ms(10)));
        p.check_invariants().unwrap();
    }

    #[test]
    fn overhead_gap_inside_a_chunk_does_not_split_it() {
        let mut log = EventLog::new(false);
        let mut p = Sporadic::new(1);
        let v = VcpuId(0);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        p.insert_vcpu(&mut cx, v, &VcpuParams::server(ms(4), ms(10), 1));
        p.wake(&mut cx, v);
        p.do_schedule(&mut cx, PcpuId(0));
        cx.now = ms(1);
        p.burn(&mut cx, PcpuId(0), ms(1), Spent::Running);
        // A reschedule chose v again, after 1 ms of overhead (not burned).
        p.do_schedule(&mut cx, PcpuId(0));
        cx.now = ms(3);
        p.burn(&mut cx, PcpuId(0), ms(1), Spent::Running);
        p.sleep(&mut cx, v);
        p.do_schedule(&mut cx, PcpuId(0));
        assert_eq!(p.pending_replenishments(v), vec![due(10, 2)]);
        p.check_invariants().unwrap();
    }

    /// Two pcpus, global fixed priority: lo (prio 3) wakes first and takes pcpu 0, the
    /// lowest idle one; hi (prio 1, pinned to pcpu 1) takes pcpu 1. At 1 mid (prio 2) wakes:
    /// its chunk opens at its wake; it beats lo, the lowest priority running, on pcpu 0.
    #[test]
    fn two_pcpus_pick_within_the_affinity_and_tickle_the_lowest_priority() {
        let mut log = EventLog::new(false);
        let mut ss = Sporadic::new(2);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        let (hi, lo, mid) = (VcpuId(0), VcpuId(1), VcpuId(2));
        for (v, prio, aff) in [
            (hi, 1, CpuSet::one(1)),
            (lo, 3, CpuSet::first(2)),
            (mid, 2, CpuSet::first(2)),
        ] {
            ss.set_affinity(&mut cx, v, aff);
            ss.insert_vcpu(&mut cx, v, &VcpuParams::server(ms(2), ms(10), prio));
        }
        assert!(ss.wake(&mut cx, lo));
        assert_eq!(ss.tickle(), CpuSet::one(0), "the lowest idle pcpu");
        assert_eq!(ss.do_schedule(&mut cx, PcpuId(0)).run, Some(lo));
        assert!(ss.wake(&mut cx, hi));
        assert_eq!(
            ss.tickle(),
            CpuSet::one(1),
            "hi may only run on pcpu 1, which idles"
        );
        assert_eq!(ss.do_schedule(&mut cx, PcpuId(1)).run, Some(hi));
        assert_eq!(ss.tickle(), CpuSet::EMPTY);
        let mut cx = Cx {
            now: ms(1),
            log: &mut log,
        };
        ss.burn(&mut cx, PcpuId(0), ms(1), Spent::Running);
        ss.burn(&mut cx, PcpuId(1), ms(1), Spent::Running);
        assert!(ss.wake(&mut cx, mid));
        assert_eq!(ss.activation(mid), Some(ms(1)));
        assert_eq!(
            ss.tickle(),
            CpuSet::one(0),
            "mid beats lo, the lowest running"
        );
        assert_eq!(ss.do_schedule(&mut cx, PcpuId(0)).run, Some(mid));
        assert_eq!(ss.tickle(), CpuSet::EMPTY, "lo beats nobody");
        // Each pcpu charged its own VCPU: 1 ms each of hi and lo.
        assert_eq!(ss.view(hi).remaining_budget, Some(ms(1)));
        assert_eq!(ss.view(lo).remaining_budget, Some(ms(1)));
        assert_eq!(ss.check_invariants(), Ok(()));
    }
}
