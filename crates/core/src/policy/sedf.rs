//! SEDF: Xen's simple EDF scheduler, as Xen 4.0's `xen/common/sched_sedf.c` ran it (removed
//! in Xen 4.6). The ideal-EDF model rtvmm had before is kept as `sedf-ideal`
//! ([`sedf_ideal`](super::sedf_ideal)); `docs/policies.md` compares them.
//!
//! # Design note
//! - **Parameters** (fixed): `slice` s (= `params.budget`), `period` p, `extratime`.
//!   **Live state**, as Xen keeps it: the absolute `deadline` (the end of the current
//!   period, which begins at `deadline − p`) and the `cputime` used in it (remaining slice =
//!   s − cputime).
//! - **Queues** per pcpu, each ordered as Xen's sorted lists (a newcomer goes after the
//!   entries it ties with), past 64 entries as an ordered set, O(log n) per operation
//!   (`OrderedQueue`, `policy/ordered_queue.rs`): the **run queue** holds the runnable
//!   VCPUs whose period has begun, by deadline (the running EDF VCPU stays on it); the
//!   **wait queue** the runnable ones whose next period has not begun, by period start. A
//!   blocked VCPU is on neither.
//! - **Slice used up** (`desched_edf_dom`): cputime −= s (an overrun carries over), the
//!   deadline moves on by p and the VCPU waits on the wait queue for that period to begin.
//! - **Missed deadline** (`update_queues`, at every `do_schedule`): a run-queue VCPU whose
//!   deadline has passed gets the next period boundary after now and a fresh slice. A
//!   preempted VCPU keeps its slice until then.
//! - **Wake** (`sedf_wake`), by when it comes:
//!   - before its period begins (it used its slice, or waits for the next period): it waits;
//!   - **short unblocking**, inside its period: no more real-time service in this period —
//!     the deadline moves on by p, the slice is fresh, it waits for the next period; the
//!     slice it lost (s − cputime, if above 0) puts it on the **penalty** extra-time queue;
//!   - **long unblocking**, at or after its deadline: the wake instant starts a new period
//!     (deadline = now + p, fresh slice) and it is runnable at once;
//!   - the first wake after joining, inside the first period, is none of these: the VCPU
//!     joins runnable with its whole slice (Xen set up the first deadline on the first
//!     wake, `now + slice`, a boot-time detail rtvmm does not copy).
//! - **Reschedule on wake** (`should_switch`): when the woken VCPU's period begins before
//!   the current decision's time runs out; else never while a VCPU runs in EDF mode; over a
//!   penalty extra run, when the woken VCPU wants the penalty queue with a lower score; over
//!   a utilisation extra run, when it wants the penalty queue; over idle, always.
//! - **`do_schedule`**: the run queue's head runs in EDF mode until its slice is used up or
//!   the wait queue's first period begins, whichever is earlier. With the run queue empty,
//!   if at least [`EXTRA_QUANTUM`] is left before the next period begins, **extra time**:
//!   the penalty queue's head, else the utilisation queue's head, for one quantum (no slice
//!   consumed); otherwise idle until that period begins. Nothing runnable: idle.
//! - **Extra-time queues** (`extraq_add_sort_update`, `desched_extra_dom`): both ordered by
//!   score, lower first. Penalty score = (p << 10) / lost slice; a VCPU gets one penalty
//!   run per short unblocking, whether or not it has `extratime` (Xen does not check it
//!   there). The utilisation queue holds the runnable VCPUs with `extratime`; after a run
//!   a VCPU's score becomes (p << 10) / s and the others' scores drop by its old score, so
//!   it is served in proportion to its utilisation (a uniform drop keeps the order: the
//!   queue keeps each score relative to an offset, `ExtraQueue`). An extra run ends with
//!   cputime = 0.
//! - **adjust**: the remaining slice is cut to the new slice at once; the new slice and
//!   period take effect when the next period starts; `extratime` at once (Xen's
//!   `extraq_check`).
//! - **When it runs**: event-driven, no tick and no timer of its own — every call comes from
//!   the end of the time a decision returned (slice over, a period beginning, a quantum of
//!   extra time over), a block, or a wake that asks for it.
//!
//! Several pcpus: partitioned, one instance per pcpu
//! ([`Partitioned`](super::partitioned::Partitioned)), as Xen's SEDF never migrated a VCPU.
//!
//! Known gaps: latency scaling (`latency`, which halved period and slice after a block) and
//! weight-driven domains (`sedf_adjust_weights`) are not modelled — the papers use neither;
//! Xen's `PERIOD_MIN`/`SLICE_MIN`/`PERIOD_MAX` bounds are not enforced; with nothing
//! runnable rtvmm idles until an event where Xen re-ran `do_schedule` every second.

use crate::event::{CoreEvent, Cx};
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::ordered_queue::{OrderedQueue, Slot};
use crate::policy::table::VcpuTable;
use crate::policy::{BudgetCounters, Decision, Policy, PolicyKind, Spent, TickInterval, VcpuView};
use crate::time::Nanos;

/// The length of one extra-time run (Xen 4.0's `EXTRA_QUANTUM`, 500 µs), and the least
/// time before the next period begins for which extra time is handed out.
pub const EXTRA_QUANTUM: Nanos = Nanos::from_us(500);

/// Where a VCPU is (Xen: which list its `list` links into).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Queue {
    /// Its period has begun and it is runnable (set by a wake, a period beginning, a
    /// missed deadline; left on a block or a used-up slice).
    Run,
    /// Runnable, waiting for its next period to begin.
    Wait,
    /// Blocked (or just joined): on no queue.
    Asleep,
}

/// The two extra-time queues (Xen's `EXTRA_PEN_Q` and `EXTRA_UTIL_Q`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Extra {
    Penalty = 0,
    Util = 1,
}

/// What the running VCPU runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RunMode {
    /// Its slice, in EDF order.
    Edf,
    /// A quantum of extra time from one of the extra-time queues.
    Extra(Extra),
}

/// One SEDF VCPU.
#[derive(Clone, Debug)]
struct SedfVcpu {
    vcpu: VcpuId,
    params: VcpuParams,
    /// Slice and period set by `adjust`, taken up when the next period starts.
    pending: Option<VcpuParams>,
    /// End of the current period.
    deadline: Nanos,
    /// Run time in the current period (may pass the slice by an overrun).
    cputime: Nanos,
    queue: Queue,
    /// Where it sits on the run or wait queue (meaningless when `Asleep`). Its key never
    /// changes while it is queued: `deadline` and `params` change only in `new_period`,
    /// which runs on a VCPU off both queues (a wake from `Asleep`, `desched_edf` after
    /// `dequeue`, `update_queues` after `pop_first`).
    slot: Slot<Nanos>,
    has_work: bool,
    /// Joined and not woken yet: its first wake is not an unblocking.
    joined: bool,
    /// On the utilisation extra-time queue when runnable (Xen's `EXTRA_AWARE`).
    extra_aware: bool,
    /// Wants the penalty queue (Xen's `EXTRA_WANT_PEN_Q`): set by a short unblocking that
    /// lost slice, cleared by its penalty run.
    want_penalty: bool,
    /// Extra-time scores, indexed by [`Extra`]; lower is served first. While the VCPU is
    /// on that extra queue the live score is the queue's ([`Sedf::score`]) and this one is
    /// stale; leaving the queue writes the live score back.
    score: [i64; 2],
    /// Where it sits on each extra queue; `None`: not on it.
    extra_slot: [Option<Slot<i128>>; 2],
    counters: BudgetCounters,
}

impl SedfVcpu {
    fn slice(&self) -> Nanos {
        self.params.budget
    }

    fn period_begin(&self) -> Nanos {
        self.deadline.saturating_sub(self.params.period)
    }

    fn remaining(&self) -> Nanos {
        self.slice().saturating_sub(self.cputime)
    }

    /// A new period starts at `start` with `cputime` already used: pending parameters take
    /// effect, the deadline is `start + p`.
    fn new_period(&mut self, cx: &mut Cx, start: Nanos, cputime: Nanos) {
        if let Some(p) = self.pending.take() {
            self.params = p;
        }
        self.deadline = start + self.params.period;
        self.cputime = cputime;
        let (vcpu, budget) = (self.vcpu, self.remaining());
        cx.emit(|| CoreEvent::Replenish { vcpu, budget });
    }
}

/// An extra-time queue: by score, where `add` first drops every entry's score by `sub`.
/// Entries are keyed by score + `offset` at their insertion; a drop raises `offset`, so
/// the live score is key − `offset` and the order is untouched (the drops a VCPU saw
/// while queued are written back to it when it leaves). i128 so that the sum of drops
/// cannot overflow; it restarts at 0 whenever the queue empties.
#[derive(Clone, Debug)]
struct ExtraQueue {
    queue: OrderedQueue<i128>,
    offset: i128,
}

impl ExtraQueue {
    fn new() -> Self {
        ExtraQueue {
            queue: OrderedQueue::new(),
            offset: 0,
        }
    }

    /// Xen's `extraq_add_sort_update`.
    fn add(&mut self, vcpu: VcpuId, score: i64, sub: i64) -> Slot<i128> {
        self.offset += i128::from(sub);
        self.queue.insert(vcpu, i128::from(score) + self.offset)
    }

    /// Removes `vcpu` and returns its live score.
    fn remove(&mut self, vcpu: VcpuId, slot: Slot<i128>) -> i64 {
        let removed = self.queue.remove(vcpu, slot);
        debug_assert!(removed, "{vcpu:?} not on its extra queue");
        let score = self.score(slot);
        if self.queue.is_empty() {
            self.offset = 0;
        }
        score
    }

    fn score(&self, (key, _): Slot<i128>) -> i64 {
        (key - self.offset) as i64
    }
}

/// The SEDF policy for one pcpu.
pub struct Sedf {
    vcpus: VcpuTable<SedfVcpu>,
    /// Runnable VCPUs whose period has begun, by deadline.
    run_queue: OrderedQueue<Nanos>,
    /// Runnable VCPUs waiting for their period, by period start.
    wait_queue: OrderedQueue<Nanos>,
    /// The penalty and utilisation extra-time queues, by score.
    extra_queues: [ExtraQueue; 2],
    /// What the last `do_schedule` chose (None = idle) and on what.
    current: Option<(VcpuId, RunMode)>,
    /// When the last decision's time runs out (Xen's `current_slice_expires`); `None`:
    /// idle with nothing runnable.
    slice_expires: Option<Nanos>,
}

impl Sedf {
    pub fn new(_pcpus: u32) -> Sedf {
        Sedf {
            vcpus: VcpuTable::new(),
            run_queue: OrderedQueue::new(),
            wait_queue: OrderedQueue::new(),
            extra_queues: [ExtraQueue::new(), ExtraQueue::new()],
            current: None,
            slice_expires: None,
        }
    }

    #[inline]
    fn enqueue_run(&mut self, v: VcpuId) {
        let s = self.vcpus.get_mut(v);
        s.queue = Queue::Run;
        s.slot = self.run_queue.insert(v, s.deadline);
    }

    #[inline]
    fn enqueue_wait(&mut self, v: VcpuId) {
        let s = self.vcpus.get_mut(v);
        s.queue = Queue::Wait;
        s.slot = self.wait_queue.insert(v, s.period_begin());
    }

    /// On the run queue if its period has begun by `now`, else on the wait queue.
    #[inline]
    fn enqueue(&mut self, v: VcpuId, now: Nanos) {
        if self.vcpus.get(v).period_begin() > now {
            self.enqueue_wait(v);
        } else {
            self.enqueue_run(v);
        }
    }

    #[inline]
    fn dequeue(&mut self, v: VcpuId) {
        let s = self.vcpus.get_mut(v);
        let removed = match s.queue {
            Queue::Run => self.run_queue.remove(v, s.slot),
            Queue::Wait => self.wait_queue.remove(v, s.slot),
            Queue::Asleep => true,
        };
        debug_assert!(removed, "{v:?} not on its {:?} queue", s.queue);
        s.queue = Queue::Asleep;
    }

    /// Xen's `extraq_add_sort_update`: every entry's score drops by `sub`, then `v` goes in
    /// before the first entry with a higher score.
    fn extra_add(&mut self, q: Extra, v: VcpuId, sub: i64) {
        let s = self.vcpus.get_mut(v);
        debug_assert!(s.extra_slot[q as usize].is_none());
        let slot = self.extra_queues[q as usize].add(v, s.score[q as usize], sub);
        s.extra_slot[q as usize] = Some(slot);
    }

    /// Takes `v` off extra queue `q` (if on it), its live score written back.
    #[inline]
    fn extra_remove(&mut self, q: Extra, v: VcpuId) {
        let s = self.vcpus.get_mut(v);
        if let Some(slot) = s.extra_slot[q as usize].take() {
            s.score[q as usize] = self.extra_queues[q as usize].remove(v, slot);
        }
    }

    fn on_extra(&self, q: Extra, v: VcpuId) -> bool {
        self.vcpus.get(v).extra_slot[q as usize].is_some()
    }

    /// `v`'s live score for extra queue `q`.
    fn score(&self, q: Extra, v: VcpuId) -> i64 {
        let s = self.vcpus.get(v);
        match s.extra_slot[q as usize] {
            Some(slot) => self.extra_queues[q as usize].score(slot),
            None => s.score[q as usize],
        }
    }

    /// A blocked VCPU leaves every queue.
    #[inline]
    fn put_to_sleep(&mut self, v: VcpuId) {
        self.dequeue(v);
        self.extra_remove(Extra::Penalty, v);
        self.extra_remove(Extra::Util, v);
    }

    /// Xen's `desched_edf_dom`: the VCPU that ran in EDF mode, charged up to now (`burn`).
    fn desched_edf(&mut self, cx: &mut Cx, v: VcpuId) {
        let s = self.vcpus.get(v);
        if s.cputime < s.slice() && s.has_work {
            return;
        }
        self.dequeue(v);
        let s = self.vcpus.get_mut(v);
        if s.cputime >= s.slice() {
            let (start, overrun) = (s.deadline, s.cputime - s.slice());
            s.new_period(cx, start, overrun);
        }
        if s.has_work {
            self.enqueue_wait(v);
        } else {
            self.put_to_sleep(v);
        }
    }

    /// Xen's `desched_extra_dom`: the VCPU that ran a quantum of extra time from `q`.
    fn desched_extra(&mut self, v: VcpuId, q: Extra) {
        self.extra_remove(q, v);
        let s = self.vcpus.get_mut(v);
        s.cputime = Nanos::ZERO;
        let old_score = s.score[q as usize];
        let requeue = match q {
            // One penalty run per short unblocking (Xen: "compensated").
            Extra::Penalty => {
                s.want_penalty = false;
                false
            }
            Extra::Util => {
                s.score[Extra::Util as usize] = util_score(&s.params);
                s.extra_aware
            }
        };
        if !s.has_work {
            self.put_to_sleep(v);
        } else if requeue {
            self.extra_add(q, v, old_score);
        }
    }

    /// Xen's `update_queues`: periods that have begun, then deadlines that have passed.
    fn update_queues(&mut self, cx: &mut Cx) {
        let now = cx.now;
        // A queued VCPU's key is its live period start (see `SedfVcpu::slot`).
        while let Some((begin, w)) = self.wait_queue.first_entry() {
            if begin > now {
                break;
            }
            self.wait_queue.pop_first();
            self.enqueue_run(w);
        }
        while let Some(r) = self.run_queue.first() {
            let s = self.vcpus.get(r);
            if s.deadline >= now && s.cputime < s.slice() {
                break;
            }
            self.run_queue.pop_first();
            let s = self.vcpus.get_mut(r);
            // The next period boundary at or after now (Xen: one period, then DIV_UP).
            let period = s.params.period.as_ns();
            let mut deadline = s.deadline + s.params.period;
            if deadline < now {
                deadline += Nanos((now - deadline).as_ns().div_ceil(period) * period);
            }
            s.new_period(cx, deadline - s.params.period, Nanos::ZERO);
            self.enqueue(r, now);
        }
    }

    /// Xen's `should_switch`: whether the woken `other` makes the pcpu reschedule now.
    fn should_switch(&self, other: VcpuId) -> bool {
        let o = self.vcpus.get(other);
        if self.slice_expires.is_none_or(|end| o.period_begin() < end) {
            return true;
        }
        match self.current {
            None => true,
            Some((_, RunMode::Edf)) => false,
            Some((c, RunMode::Extra(Extra::Penalty))) => {
                o.want_penalty && self.score(Extra::Penalty, other) < self.score(Extra::Penalty, c)
            }
            Some((_, RunMode::Extra(Extra::Util))) => o.want_penalty,
        }
    }
}

/// The utilisation queue's score after a run: the inverse of the utilisation, with 10
/// fractional bits (Xen, for domains with a slice and period and no extra weight).
fn util_score(params: &VcpuParams) -> i64 {
    ((params.period.as_ns() << 10) / params.budget.as_ns().max(1)) as i64
}

impl Policy for Sedf {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Sedf
    }

    /// Slice and period > 0, slice ≤ period.
    fn validate(&self, params: &VcpuParams) -> Result<(), ParamError> {
        params.validate_slice()
    }

    fn insert_vcpu(&mut self, cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) {
        self.vcpus.insert(
            vcpu,
            SedfVcpu {
                vcpu,
                params: params.clone(),
                pending: None,
                deadline: cx.now + params.offset + params.period,
                cputime: Nanos::ZERO,
                queue: Queue::Asleep,
                slot: (Nanos::ZERO, 0),
                has_work: false,
                joined: true,
                extra_aware: params.extratime_under(PolicyKind::Sedf),
                want_penalty: false,
                score: [0, 0],
                extra_slot: [None, None],
                counters: BudgetCounters::default(),
            },
        );
    }

    fn remove_vcpu(&mut self, _cx: &mut Cx, vcpu: VcpuId) {
        if self.current.is_some_and(|(c, _)| c == vcpu) {
            self.current = None;
        }
        self.put_to_sleep(vcpu);
        self.vcpus.remove(vcpu);
    }

    fn wake(&mut self, cx: &mut Cx, vcpu: VcpuId) -> bool {
        let now = cx.now;
        let s = self.vcpus.get_mut(vcpu);
        s.has_work = true;
        if s.queue != Queue::Asleep {
            // Its block has not been processed yet (it is the current VCPU): no unblocking.
            return false;
        }
        let joined = std::mem::replace(&mut s.joined, false);
        if now < s.period_begin() {
            // Waking before its period begins: it waits; a penalty still owed stays owed.
            if s.want_penalty {
                self.extra_add(Extra::Penalty, vcpu, 0);
            }
        } else if now < s.deadline && !joined {
            // Short unblocking: the rest of this period is lost.
            let lost = s.remaining();
            let start = s.deadline;
            let period = s.params.period;
            s.new_period(cx, start, Nanos::ZERO);
            if !lost.is_zero() {
                s.score[Extra::Penalty as usize] = ((period.as_ns() << 10) / lost.as_ns()) as i64;
                s.want_penalty = true;
                self.extra_add(Extra::Penalty, vcpu, 0);
            }
        } else if now >= s.deadline {
            // Long unblocking: the wake starts a new period.
            s.new_period(cx, now, Nanos::ZERO);
        }
        if self.vcpus.get(vcpu).extra_aware {
            self.extra_add(Extra::Util, vcpu, 0);
        }
        self.enqueue(vcpu, now);
        self.should_switch(vcpu)
    }

    fn sleep(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.vcpus.get_mut(vcpu).has_work = false;
        if self.current.is_some_and(|(c, _)| c == vcpu) {
            // `do_schedule` deschedules it (Xen: the softirq).
            return true;
        }
        self.put_to_sleep(vcpu);
        false
    }

    fn burn(&mut self, cx: &mut Cx, _pcpu: PcpuId, ran: Nanos, spent: Spent) {
        let Some((v, RunMode::Edf)) = self.current else {
            return;
        };
        let s = self.vcpus.get_mut(v);
        let remaining = s.remaining();
        let taken = ran.min(remaining);
        s.counters.spend(spent, taken);
        s.cputime += ran;
        if !taken.is_zero() && taken == remaining {
            cx.emit(|| CoreEvent::BudgetExhausted { vcpu: v });
        }
    }

    fn do_schedule(&mut self, cx: &mut Cx, _pcpu: PcpuId) -> Decision {
        let now = cx.now;
        match self.current.take() {
            Some((v, RunMode::Edf)) => self.desched_edf(cx, v),
            Some((v, RunMode::Extra(q))) => self.desched_extra(v, q),
            None => {}
        }
        self.update_queues(cx);
        let next_begin = self.wait_queue.first_entry().map(|(begin, _)| begin - now);
        let (run, time) = if let Some(r) = self.run_queue.first() {
            let left = self.vcpus.get(r).remaining();
            self.current = Some((r, RunMode::Edf));
            (Some(r), Some(next_begin.map_or(left, |b| left.min(b))))
        } else if let Some(until_begin) = next_begin {
            let extra = [Extra::Penalty, Extra::Util]
                .into_iter()
                .find_map(|q| self.extra_queues[q as usize].queue.first().map(|v| (v, q)))
                .filter(|_| until_begin >= EXTRA_QUANTUM);
            match extra {
                Some((v, q)) => {
                    self.current = Some((v, RunMode::Extra(q)));
                    (Some(v), Some(EXTRA_QUANTUM))
                }
                None => (None, Some(until_begin)),
            }
        } else {
            (None, None)
        };
        self.slice_expires = time.map(|t| now + t);
        Decision { run, slice: time }
    }

    /// No tick: event-driven, as Xen 4.0's SEDF (see the design note).
    fn tick_interval(&self) -> TickInterval {
        TickInterval::None
    }

    /// No timer: every period start is the end of some decision's time.
    fn next_timer(&self) -> Option<Nanos> {
        None
    }

    fn handle_timer(&mut self, _cx: &mut Cx) -> bool {
        false
    }

    fn adjust(&mut self, _cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) -> bool {
        let s = self.vcpus.get_mut(vcpu);
        let remaining = s.remaining().min(params.budget);
        s.cputime = s.slice() - remaining;
        s.pending = Some(params.clone());
        s.extra_aware = params.extratime_under(PolicyKind::Sedf);
        let (aware, runnable) = (s.extra_aware, s.queue != Queue::Asleep && s.has_work);
        let running_extra = self.current == Some((vcpu, RunMode::Extra(Extra::Util)));
        if self.on_extra(Extra::Util, vcpu) {
            if !aware && !running_extra {
                self.extra_remove(Extra::Util, vcpu);
            }
        } else if aware && runnable {
            self.extra_add(Extra::Util, vcpu, 0);
        }
        self.current.is_some_and(|(c, _)| c == vcpu)
    }

    fn view(&self, vcpu: VcpuId) -> VcpuView {
        let s = self.vcpus.get(vcpu);
        VcpuView {
            remaining_budget: Some(s.remaining()),
            deadline: Some(s.deadline),
            credit: None,
        }
    }

    fn counters(&self, vcpu: VcpuId) -> BudgetCounters {
        self.vcpus.get(vcpu).counters
    }

    fn check_invariants(&self) -> Result<(), String> {
        for (name, queue, want) in [
            ("run", &self.run_queue, Queue::Run),
            ("wait", &self.wait_queue, Queue::Wait),
        ] {
            for (slot, v) in queue.iter() {
                if !self.vcpus.contains(v) || self.vcpus.get(v).queue != want {
                    return Err(format!("vcpu {v:?} on the {name} queue is not {want:?}"));
                }
                if self.vcpus.get(v).slot != slot {
                    return Err(format!("vcpu {v:?} on the {name} queue not at its slot"));
                }
            }
        }
        for s in self.vcpus.iter() {
            let on = match s.queue {
                Queue::Run => self.run_queue.iter().filter(|&(_, v)| v == s.vcpu).count(),
                Queue::Wait => self.wait_queue.iter().filter(|&(_, v)| v == s.vcpu).count(),
                Queue::Asleep => 1,
            };
            if on != 1 {
                return Err(format!(
                    "vcpu {:?}: {:?} but queued {on} times",
                    s.vcpu, s.queue
                ));
            }
        }
        // Each queue's order is its stored keys'; the live keys must agree with them.
        let sorted = |queue: &mut dyn Iterator<Item = VcpuId>, key: &dyn Fn(VcpuId) -> i128| {
            let keys: Vec<i128> = queue.map(key).collect();
            keys.windows(2).all(|w| w[0] <= w[1])
        };
        let key_is_live = |queue: &OrderedQueue<Nanos>, live: &dyn Fn(&SedfVcpu) -> Nanos| {
            queue.iter().all(|((k, _), v)| live(self.vcpus.get(v)) == k)
        };
        if !sorted(&mut self.run_queue.iter().map(|(_, v)| v), &|v| {
            self.vcpus.get(v).deadline.as_ns() as i128
        }) || !key_is_live(&self.run_queue, &|s| s.deadline)
        {
            return Err("run queue not in deadline order".to_string());
        }
        if !sorted(&mut self.wait_queue.iter().map(|(_, v)| v), &|v| {
            self.vcpus.get(v).period_begin().as_ns() as i128
        }) || !key_is_live(&self.wait_queue, &|s| s.period_begin())
        {
            return Err("wait queue not in period-start order".to_string());
        }
        for q in [Extra::Penalty, Extra::Util] {
            let queue = &self.extra_queues[q as usize].queue;
            let mut seen = Vec::new();
            for (slot, v) in queue.iter() {
                if !self.vcpus.contains(v) || self.vcpus.get(v).queue == Queue::Asleep {
                    return Err(format!("vcpu {v:?} on the {q:?} extra queue is not queued"));
                }
                if seen.contains(&v) {
                    return Err(format!("vcpu {v:?} twice on the {q:?} extra queue"));
                }
                seen.push(v);
                if self.vcpus.get(v).extra_slot[q as usize] != Some(slot) {
                    return Err(format!(
                        "vcpu {v:?} on the {q:?} extra queue not at its slot"
                    ));
                }
                if q == Extra::Penalty && !self.vcpus.get(v).want_penalty {
                    return Err(format!("vcpu {v:?} on the penalty queue wants none"));
                }
            }
            let flagged = self
                .vcpus
                .iter()
                .filter(|s| s.extra_slot[q as usize].is_some())
                .count();
            if flagged != queue.len() {
                return Err(format!(
                    "{flagged} vcpus say they are on the {q:?} extra queue, {} are",
                    queue.len()
                ));
            }
            if !sorted(&mut queue.iter().map(|(_, v)| v), &|v| {
                self.score(q, v) as i128
            }) {
                return Err(format!("{q:?} extra queue not in score order"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventLog;
    use crate::policy::ordered_queue::SMALL_QUEUE;

    fn ms(x: u64) -> Nanos {
        Nanos::from_ms(x)
    }

    /// Drives one `Sedf` by hand: `at(t)` charges the running decision up to `t`.
    struct Driver {
        sedf: Sedf,
        log: EventLog,
        now: Nanos,
    }

    impl Driver {
        fn new(params: &[VcpuParams]) -> Driver {
            let mut d = Driver {
                sedf: Sedf::new(1),
                log: EventLog::new(false),
                now: Nanos::ZERO,
            };
            for (i, p) in params.iter().enumerate() {
                let mut cx = Cx {
                    now: d.now,
                    log: &mut d.log,
                };
                d.sedf.insert_vcpu(&mut cx, VcpuId(i as u32), p);
            }
            d
        }

        /// Charges the running decision up to `t`, then calls `f` at `t`.
        fn at<R>(&mut self, t: Nanos, f: impl FnOnce(&mut Sedf, &mut Cx) -> R) -> R {
            let ran = t - self.now;
            self.now = t;
            let mut cx = Cx {
                now: t,
                log: &mut self.log,
            };
            self.sedf.burn(&mut cx, PcpuId(0), ran, Spent::Running);
            let out = f(&mut self.sedf, &mut cx);
            self.sedf.check_invariants().unwrap();
            out
        }

        fn wake(&mut self, t: Nanos, v: u32) -> bool {
            self.at(t, |s, cx| s.wake(cx, VcpuId(v)))
        }

        fn sleep(&mut self, t: Nanos, v: u32) -> bool {
            self.at(t, |s, cx| s.sleep(cx, VcpuId(v)))
        }

        fn schedule(&mut self, t: Nanos) -> Decision {
            self.at(t, |s, cx| s.do_schedule(cx, PcpuId(0)))
        }

        fn state(&self, v: u32) -> (Nanos, Nanos) {
            let view = self.sedf.view(VcpuId(v));
            (view.remaining_budget.unwrap(), view.deadline.unwrap())
        }
    }

    fn runs(v: u32, slice: Nanos) -> Decision {
        Decision {
            run: Some(VcpuId(v)),
            slice: Some(slice),
        }
    }

    fn idle_for(t: Nanos) -> Decision {
        Decision {
            run: None,
            slice: Some(t),
        }
    }

    /// The extra queue against Xen's list, step by step: `add` drops every entry's score
    /// by `sub` and puts the newcomer before the first higher score; removal anywhere.
    /// Same order and the same live scores after every operation (a pseudo-random run
    /// that grows the queue past [`SMALL_QUEUE`] and empties it again, in turns).
    #[test]
    fn extra_queue_matches_xens_sorted_list_with_score_drops() {
        const VCPUS: usize = 160;
        let mut queue = ExtraQueue::new();
        let mut slots: Vec<Option<Slot<i128>>> = vec![None; VCPUS];
        let mut model: Vec<(u32, i64)> = Vec::new();
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = |n: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % n
        };
        let (mut most, mut emptied_after_big) = (0, 0);
        for step in 0..12_000 {
            let grow = step / 2_000 % 2 == 0;
            let v = next(VCPUS as u64) as u32;
            if slots[v as usize].is_some() == grow {
                continue;
            }
            if let Some(slot) = slots[v as usize].take() {
                let at = model.iter().position(|&(w, _)| w == v).unwrap();
                let (_, score) = model.remove(at);
                assert_eq!(queue.remove(VcpuId(v), slot), score);
            } else {
                let score = next(8) as i64 - 2;
                let sub = [0, 0, 1, 3][next(4) as usize];
                for entry in model.iter_mut() {
                    entry.1 -= sub;
                }
                let at = model
                    .iter()
                    .position(|&(_, s)| s > score)
                    .unwrap_or(model.len());
                model.insert(at, (v, score));
                slots[v as usize] = Some(queue.add(VcpuId(v), score, sub));
            }
            let ours: Vec<(u32, i64)> = queue
                .queue
                .iter()
                .map(|(slot, v)| (v.0, queue.score(slot)))
                .collect();
            assert_eq!(ours, model);
            most = most.max(model.len());
            if model.is_empty() && most > SMALL_QUEUE {
                emptied_after_big += 1;
                most = 0;
            }
        }
        assert!(
            emptied_after_big >= 2,
            "the run grows past the array and empties"
        );
    }

    /// A used-up slice moves the deadline on by one period and carries an overrun over;
    /// the VCPU waits for its next period, and the pcpu idles until it begins.
    #[test]
    fn used_up_slice_waits_for_the_next_period() {
        let mut d = Driver::new(&[VcpuParams::server(ms(2), ms(5), 0)]);
        d.wake(ms(0), 0);
        assert_eq!(d.schedule(ms(0)), runs(0, ms(2)));
        assert_eq!(d.schedule(ms(2)), idle_for(ms(3)));
        assert_eq!(d.state(0), (ms(2), ms(10)));
        assert_eq!(d.schedule(ms(5)), runs(0, ms(2)));
    }

    /// A run-queue VCPU whose deadline passes before it used its slice gets the next
    /// period boundary after now and a fresh slice; the rest of the old slice is lost.
    /// d0: 3/6, busy; d1: 5/5, busy from 2 (its first wake, inside its first period 0–5).
    /// ```text
    /// t(ms)  0    2         7
    /// d0     ████                    (preempted at 2 with 1 ms left, deadline 6)
    /// d1          ██████████ ███…    (deadline 5; at 7 its next period 5–10 has begun)
    /// ```
    /// At 7 d0's deadline 6 has passed: deadline 12, slice 3; d1 (deadline 10) runs.
    #[test]
    fn missed_deadline_starts_the_next_period_with_a_fresh_slice() {
        let mut d = Driver::new(&[
            VcpuParams::server(ms(3), ms(6), 0),
            VcpuParams::server(ms(5), ms(5), 0),
        ]);
        d.wake(ms(0), 0);
        assert_eq!(d.schedule(ms(0)), runs(0, ms(3)));
        assert!(
            d.wake(ms(2), 1),
            "on the run queue at once: its period has begun"
        );
        assert_eq!(d.schedule(ms(2)), runs(1, ms(5)));
        assert_eq!(d.state(0), (ms(1), ms(6)), "preemption costs no slice");
        assert_eq!(d.schedule(ms(7)), runs(1, ms(5)));
        assert_eq!(d.state(0), (ms(3), ms(12)));
    }

    /// The spec's first timeline: 2/10, blocks at 1, wakes at 3 (short unblocking): its
    /// deadline moves to 20, it waits for the period 10–20 with a fresh slice. The 1 ms it
    /// lost earns one penalty extra-time quantum at 3 (the pcpu is otherwise idle).
    #[test]
    fn short_unblocking_loses_the_rest_of_the_period() {
        let mut d = Driver::new(&[VcpuParams::server(ms(2), ms(10), 0)]);
        d.wake(ms(0), 0);
        assert_eq!(d.schedule(ms(0)), runs(0, ms(2)));
        assert!(d.sleep(ms(1), 0));
        assert_eq!(d.schedule(ms(1)), Decision::IDLE);
        assert_eq!(d.state(0), (ms(1), ms(10)));
        assert!(d.wake(ms(3), 0), "idle pcpu");
        assert_eq!(d.state(0), (ms(2), ms(20)));
        assert_eq!(d.schedule(ms(3)), runs(0, EXTRA_QUANTUM), "penalty run");
        let after = ms(3) + EXTRA_QUANTUM;
        assert_eq!(
            d.schedule(after),
            idle_for(ms(10) - after),
            "one penalty run only"
        );
        assert_eq!(d.schedule(ms(10)), runs(0, ms(2)));
    }

    /// The spec's second timeline: 2/10, blocks at 1, sleeps through its deadline at 10,
    /// wakes at 13 (long unblocking): a new period 13–23, runnable at once.
    #[test]
    fn long_unblocking_starts_a_period_at_the_wake() {
        let mut d = Driver::new(&[VcpuParams::server(ms(2), ms(10), 0)]);
        d.wake(ms(0), 0);
        d.schedule(ms(0));
        d.sleep(ms(1), 0);
        assert_eq!(d.schedule(ms(1)), Decision::IDLE);
        assert!(d.wake(ms(13), 0));
        assert_eq!(d.state(0), (ms(2), ms(23)));
        assert_eq!(d.schedule(ms(13)), runs(0, ms(2)));
    }

    /// A wake at the deadline itself is a long unblocking.
    #[test]
    fn wake_at_the_deadline_is_a_long_unblocking() {
        let mut d = Driver::new(&[VcpuParams::server(ms(2), ms(10), 0)]);
        d.wake(ms(0), 0);
        d.schedule(ms(0));
        d.sleep(ms(1), 0);
        d.schedule(ms(1));
        d.wake(ms(10), 0);
        assert_eq!(d.state(0), (ms(2), ms(20)));
        assert_eq!(d.schedule(ms(10)), runs(0, ms(2)));
    }

    /// A wake reschedules only when the woken VCPU's period begins before the running
    /// decision's time runs out; an EDF run is never cut short otherwise. d0: 1/4, used up
    /// and blocked at 1 (next period 4–8); d1: `d1_slice`/20, busy, runs from 1. d0 wakes
    /// at 2 and waits for 4. With a 2 ms slice d1's run ends at 3: no reschedule at 2, the
    /// pcpu idles 3–4 (under 500 µs is not enough... 1 ms is, but nobody wants extra time).
    /// With a 6 ms slice it would end at 7: `do_schedule` runs at 2 and cuts d1's run to 4.
    #[test]
    fn wake_reschedules_only_when_its_period_begins_before_the_run_ends() {
        for (d1_slice, resched) in [(2, false), (6, true)] {
            let mut d = Driver::new(&[
                VcpuParams::server(ms(1), ms(4), 0),
                VcpuParams::server(ms(d1_slice), ms(20), 0),
            ]);
            d.wake(ms(0), 0);
            d.wake(ms(0), 1);
            assert_eq!(d.schedule(ms(0)), runs(0, ms(1)));
            d.sleep(ms(1), 0);
            assert_eq!(d.schedule(ms(1)), runs(1, ms(d1_slice)));
            assert_eq!(d.wake(ms(2), 0), resched);
            assert_eq!(d.state(0), (ms(1), ms(8)), "no unblocking: it waits for 4");
            if resched {
                assert_eq!(d.schedule(ms(2)), runs(1, ms(2)));
            } else {
                assert_eq!(d.schedule(ms(3)), idle_for(ms(1)));
            }
            assert_eq!(d.schedule(ms(4)), runs(0, ms(1)));
        }
    }

    /// A long unblocking puts the VCPU on the run queue with its period begun, so the wake
    /// reschedules and EDF decides: d0 (1/4, deadline 13 after waking at 9) takes the pcpu
    /// from d1 (10/20, deadline 20).
    #[test]
    fn long_unblocking_with_an_earlier_deadline_takes_the_pcpu() {
        let mut d = Driver::new(&[
            VcpuParams::server(ms(1), ms(4), 0),
            VcpuParams::server(ms(10), ms(20), 0),
        ]);
        d.wake(ms(0), 0);
        d.wake(ms(0), 1);
        d.schedule(ms(0));
        d.sleep(ms(1), 0);
        assert_eq!(d.schedule(ms(1)), runs(1, ms(10)));
        assert!(d.wake(ms(9), 0));
        assert_eq!(d.schedule(ms(9)), runs(0, ms(1)));
        assert_eq!(d.state(1), (ms(2), ms(20)), "d1 keeps its slice");
    }

    /// A VCPU that uses up its slice and blocks has its next period already set (10–20);
    /// waking at 10 is inside it — a short unblocking — so it waits for 20, with one
    /// penalty quantum (it lost its whole slice) at 10.
    #[test]
    fn used_up_slice_then_block_loses_the_next_period_when_woken_in_it() {
        let mut d = Driver::new(&[VcpuParams::server(ms(2), ms(10), 0)]);
        d.wake(ms(0), 0);
        assert_eq!(d.schedule(ms(0)), runs(0, ms(2)));
        d.sleep(ms(2), 0);
        assert_eq!(d.schedule(ms(2)), Decision::IDLE);
        assert_eq!(d.state(0), (ms(2), ms(20)));
        d.wake(ms(10), 0);
        assert_eq!(d.state(0), (ms(2), ms(30)));
        assert_eq!(d.schedule(ms(10)), runs(0, EXTRA_QUANTUM));
        let after = ms(10) + EXTRA_QUANTUM;
        assert_eq!(d.schedule(after), idle_for(ms(20) - after));
        assert_eq!(d.schedule(ms(20)), runs(0, ms(2)));
    }

    /// Extra time needs a whole quantum before the next period begins: d0 (9.7/10, with
    /// extratime) used up at 9.7 leaves 300 µs — the pcpu idles.
    #[test]
    fn no_extra_time_when_less_than_a_quantum_is_left() {
        let mut p = VcpuParams::server(Nanos::from_us(9_700), ms(10), 0);
        p.extratime = Some(true);
        let mut d = Driver::new(&[p]);
        d.wake(ms(0), 0);
        assert_eq!(d.schedule(ms(0)), runs(0, Nanos::from_us(9_700)));
        assert_eq!(
            d.schedule(Nanos::from_us(9_700)),
            idle_for(Nanos::from_us(300))
        );
    }

    /// The penalty queue goes before the utilisation queue, and a VCPU that wants the
    /// penalty queue interrupts a utilisation extra run. d0: 2/10 with extratime, busy;
    /// d1: 2/10 without, a 1 ms job at 0.
    /// ```text
    /// t(ms)  0    2    3    3.5  3.8  4.3
    /// d0     ████      ██████████     ███…   (3–3.8 extra: utilisation queue)
    /// d1          ███            ████        (blocks at 3; wakes at 3.8: penalty run)
    /// ```
    #[test]
    fn penalty_extra_time_goes_before_utilisation_extra_time() {
        let us = Nanos::from_us;
        let mut p0 = VcpuParams::server(ms(2), ms(10), 0);
        p0.extratime = Some(true);
        let mut d = Driver::new(&[p0, VcpuParams::server(ms(2), ms(10), 0)]);
        d.wake(ms(0), 0);
        d.wake(ms(0), 1);
        assert_eq!(d.schedule(ms(0)), runs(0, ms(2)));
        assert_eq!(d.schedule(ms(2)), runs(1, ms(2)));
        d.sleep(ms(3), 1);
        assert_eq!(d.schedule(ms(3)), runs(0, EXTRA_QUANTUM));
        assert_eq!(d.schedule(us(3_500)), runs(0, EXTRA_QUANTUM));
        assert!(d.wake(us(3_800), 1), "wants the penalty queue");
        assert_eq!(d.state(1), (ms(2), ms(20)), "short unblocking");
        assert_eq!(d.schedule(us(3_800)), runs(1, EXTRA_QUANTUM));
        assert_eq!(d.schedule(us(4_300)), runs(0, EXTRA_QUANTUM));
        assert_eq!(d.state(1), (ms(2), ms(20)), "extra time uses no slice");
    }

    /// A VCPU that blocks and wakes again before `do_schedule` took it off the pcpu never
    /// left its queue: no unblocking, it goes on with its slice and deadline.
    #[test]
    fn wake_before_the_block_is_processed_is_no_unblocking() {
        let mut d = Driver::new(&[VcpuParams::server(ms(2), ms(10), 0)]);
        d.wake(ms(0), 0);
        d.schedule(ms(0));
        assert!(d.sleep(ms(1), 0));
        assert!(!d.wake(ms(1), 0));
        assert_eq!(d.schedule(ms(1)), runs(0, ms(1)));
        assert_eq!(d.state(0), (ms(1), ms(10)));
    }

    /// `sched-set` from 4/10 to 2/10 at 1: the remaining 3 ms are cut to 2 at once; the
    /// new slice is the slice from the next period (10–20) on.
    #[test]
    fn adjust_cuts_the_slice_at_once_and_takes_effect_at_the_next_period() {
        let mut d = Driver::new(&[VcpuParams::server(ms(4), ms(10), 0)]);
        d.wake(ms(0), 0);
        assert_eq!(d.schedule(ms(0)), runs(0, ms(4)));
        let new = VcpuParams::server(ms(2), ms(10), 0);
        assert!(d.at(ms(1), |s, cx| s.adjust(cx, VcpuId(0), &new)));
        assert_eq!(d.state(0), (ms(2), ms(10)));
        assert_eq!(d.schedule(ms(1)), runs(0, ms(2)));
        assert_eq!(d.schedule(ms(3)), idle_for(ms(7)));
        assert_eq!(d.state(0), (ms(2), ms(20)));
        assert_eq!(d.schedule(ms(10)), runs(0, ms(2)));
        assert_eq!(d.schedule(ms(12)), idle_for(ms(8)));
    }
}
