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
//! - **Several pcpus: global EDF** (`docs/platform.md`). Each VCPU keeps its hard affinity (the
//!   pool's pcpus it may run on; one pcpu = partitioned). `do_schedule(p)` runs the
//!   smallest-key eligible VCPU whose affinity holds p and that does not run on another
//!   pcpu, so the m best run on the m pcpus. [`Policy::tickle`] names the pcpus that must
//!   reschedule, like Xen's `runq_tickle`: for each eligible VCPU that runs nowhere, in key
//!   order, an idle pcpu of its affinity, else the pcpu of its affinity running the largest
//!   key if the waiting VCPU's key is smaller, both searched from the pcpu the VCPU last ran
//!   on, upwards and wrapping around — each pcpu named once ([`global::tickle_targets`]);
//!   and the pcpus whose running VCPU was replenished (its
//!   slice must be re-armed). A VCPU that runs on a pcpu without budget (and without
//!   extratime) counts as leaving it: that pcpu is as good as idle.
//! - **Queues** (a matter of cost: decisions are the same without them). On several pcpus
//!   the eligible VCPUs that run nowhere wait by key (`Rtds::waiting`), so a pick and a
//!   tickle read the most urgent ones. From `INDEX_FROM` (64) VCPUs in the pool that queue
//!   is kept on one pcpu too, and the VCPUs with a replenishment timer are kept by
//!   deadline (Xen's replenishment queue), so that a pick, a wake, a block and a
//!   replenishment cost O(log n) instead of a look at every VCPU (`docs/benchmarks.md`,
//!   "RTDS at scale"). A queued key never changes in place: every change is a removal
//!   under the old key and an insertion under the new one.
//! - **Pool changes** ([`Policy::change_pcpus`]): a pcpu that joins or leaves changes no
//!   VCPU's budget, deadline or level; the VCPU the leaving pcpu ran waits like any other,
//!   and `current`, `asked` and the VCPUs' `on` are renumbered (the waiting queue, kept only
//!   on several pcpus, is rebuilt).
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
//! Known gaps: Xen tickles one pcpu per event (the waking or replenished VCPU's), rtvmm
//! names every pcpu some waiting VCPU should take, which converges to the same m best
//! VCPUs sooner. Xen keeps one run queue per cpupool as rtvmm does, and no soft affinity
//! is modelled.

use std::cell::{Cell, RefCell};
use std::collections::BTreeSet;

use crate::cpuset::CpuSet;
use crate::event::Cx;
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::edf::{EdfMember, EdfServer, EdfSet};
use crate::policy::global::{self, Affinities};
use crate::policy::{
    BudgetCounters, Decision, PcpuChange, Policy, PolicyKind, RtdsMode, Spent, TickInterval,
    VcpuView,
};
use crate::time::Nanos;

/// Xen's lower bound on both budget and period (`RTDS_MIN_BUDGET`, 10 µs): below it the
/// scheduler's own overhead dominates.
pub const RTDS_MIN_BUDGET: Nanos = Nanos::from_us(crate::model::RTDS_MIN_US);

/// RTDS's priority key: level, then deadline, then VCPU id (see [`RtVcpu::key`]).
type RtKey = (u32, Nanos, VcpuId);

/// From this many VCPUs in the pool on, RTDS keeps its indexes ([`Rtds::index`]). Below
/// it, looking at every VCPU for a pick or a due replenishment costs less than keeping them.
const INDEX_FROM: usize = 64;

/// The most keys a [`KeyQueue`] keeps in its sorted array.
const SMALL_QUEUE: usize = 64;

/// RTDS keys, most urgent first: up to [`SMALL_QUEUE`] keys a sorted array, most urgent
/// *last* (taking the most urgent, the usual change, is then a pop); past that an ordered
/// set, O(log n) per change, until it empties. Keys end with the VCPU id, so they are
/// unique and the order is theirs alone: no insertion number is needed for ties. A key
/// must not change while queued: it is removed by the key it went in under.
#[derive(Clone, Debug, Default)]
struct KeyQueue {
    small: Vec<RtKey>,
    big: BTreeSet<RtKey>,
}

impl KeyQueue {
    #[inline(always)]
    fn insert(&mut self, key: RtKey) {
        if !(self.big.is_empty() && self.small.len() < SMALL_QUEUE) {
            return self.insert_big(key);
        }
        let at = self
            .small
            .binary_search_by(|k| key.cmp(k))
            .expect_err("keys are unique");
        self.small.insert(at, key);
    }

    /// [`Self::insert`] into the set (the array's keys moved there first).
    #[inline(never)]
    fn insert_big(&mut self, key: RtKey) {
        self.big.extend(self.small.drain(..));
        let fresh = self.big.insert(key);
        assert!(fresh, "keys are unique");
    }

    #[inline(always)]
    fn remove(&mut self, key: RtKey) {
        if !self.big.is_empty() {
            return self.remove_big(key);
        }
        if self.small.last() == Some(&key) {
            self.small.pop();
        } else {
            let at = self
                .small
                .binary_search_by(|k| key.cmp(k))
                .expect("a queued VCPU is in the queue");
            self.small.remove(at);
        }
    }

    #[inline(never)]
    fn remove_big(&mut self, key: RtKey) {
        let found = self.big.remove(&key);
        assert!(found, "a queued VCPU is in the queue");
    }

    /// The most urgent key.
    #[inline]
    fn first(&self) -> Option<RtKey> {
        if self.big.is_empty() {
            self.small.last().copied()
        } else {
            self.big.first().copied()
        }
    }

    /// The keys, most urgent *last*, while they are in the array.
    #[inline]
    fn array(&self) -> Option<&[RtKey]> {
        self.big.is_empty().then_some(self.small.as_slice())
    }

    /// Every key, most urgent first.
    #[inline]
    fn iter(&self) -> KeyIter<'_> {
        if self.big.is_empty() {
            KeyIter::Small(self.small.iter().rev())
        } else {
            KeyIter::Big(self.big.iter())
        }
    }

    fn clear(&mut self) {
        self.small.clear();
        self.big.clear();
    }
}

/// What RTDS keeps on a pool of many VCPUs besides the waiting queue ([`Rtds::index`]).
#[derive(Debug, Default)]
struct Index {
    /// Every VCPU with a replenishment timer ([`RtVcpu::timed`]), by (deadline, id); the
    /// first is the next timer. Changed through [`Rtds::retime`] by every hook that
    /// changes a deadline, `has_work` or `on`, from the timer the VCPU had before.
    timers: BTreeSet<(Nanos, VcpuId)>,
    /// [`Policy::handle_timer`]'s list of due VCPUs (kept so that it does not allocate
    /// each time).
    due: Vec<VcpuId>,
}

/// [`KeyQueue::iter`]: the array's keys or the set's (a chain of both costs a test of
/// each at every step).
enum KeyIter<'a> {
    Small(std::iter::Rev<std::slice::Iter<'a, RtKey>>),
    Big(std::collections::btree_set::Iter<'a, RtKey>),
}

impl Iterator for KeyIter<'_> {
    type Item = RtKey;

    #[inline]
    fn next(&mut self) -> Option<RtKey> {
        match self {
            KeyIter::Small(keys) => keys.next().copied(),
            KeyIter::Big(keys) => keys.next().copied(),
        }
    }
}

/// One RTDS VCPU: an EDF server (see `edf.rs`) and its priority level.
#[derive(Clone, Debug)]
struct RtVcpu {
    server: EdfServer,
    /// 0 = real-time level; each extratime refill moves one level down (a larger number).
    level: u32,
    /// The pcpu (local index) whose `current` it is, if any: `current` seen from the VCPU.
    on: Option<u32>,
    /// The key it is queued under in `Rtds::waiting`, if it is there.
    queued: Option<RtKey>,
}

impl EdfMember for RtVcpu {
    fn server(&self) -> &EdfServer {
        &self.server
    }
    fn server_mut(&mut self) -> &mut EdfServer {
        &mut self.server
    }
}

impl RtVcpu {
    /// The priority key: level, then deadline, then VCPU id. Smaller is more urgent.
    #[inline]
    fn key(&self) -> (u32, Nanos, VcpuId) {
        (self.level, self.server.deadline, self.server.vcpu)
    }

    /// The budget reached zero: with extratime, a fresh budget one level down.
    fn on_exhausted(&mut self, cx: &mut Cx) {
        if self.server.params.extratime_under(PolicyKind::Rtds) {
            self.level += 1;
            self.server.refill(cx);
        }
    }

    /// Whether it has a replenishment timer: like Xen's replenishment queue, only while it
    /// has work or runs.
    #[inline]
    fn timed(&self) -> bool {
        self.server.has_work || self.on.is_some()
    }

    /// Xen's `rt_update_deadline`: the EDF replenishment, back at level 0.
    fn replenish(&mut self, cx: &mut Cx) {
        self.server.replenish(cx);
        self.level = 0;
    }
}

/// The RTDS policy for the pcpus of one pool.
pub struct Rtds {
    /// When `do_schedule` runs: event-driven (Xen 4.7+) or at every quantum (Xen 4.5).
    mode: RtdsMode,
    /// The VCPUs, with the earliest deadline of those that have a replenishment timer
    /// remembered: every hook that changes `has_work`, `current` or a deadline refreshes
    /// it (burn and adjust change none of them).
    vcpus: EdfSet<RtVcpu>,
    /// What the last `do_schedule` chose on each pcpu (None = IDLE).
    current: Vec<Option<VcpuId>>,
    /// Each VCPU's hard affinity (local pcpu indices).
    affinity: Affinities,
    /// Several pcpus: the pcpus whose running VCPU was replenished since their last
    /// `do_schedule` (its slice must be re-armed); part of [`Policy::tickle`]'s answer.
    asked: CpuSet,
    /// Several pcpus, or indexed ([`Rtds::index`]): the keys of the eligible VCPUs that run
    /// nowhere (otherwise it stays empty: see [`Rtds::requeue`]); read it through
    /// [`Rtds::waiters`]. Kept up to date by every hook that changes eligibility, a key or
    /// `current` (through [`Rtds::requeue`]), so that `do_schedule` and [`Policy::tickle`]
    /// read the most urgent ones instead of looking at every VCPU. A queued VCPU's key
    /// cannot change under it: its level changes only on exhaustion, while it runs (so it
    /// is not queued), and its deadline only by a replenishment, after which the hook
    /// requeues it; it is removed by the key it keeps in `queued`.
    waiting: KeyQueue,
    /// The number of VCPUs (the table counts them by looking at every slot).
    members: usize,
    /// [`INDEX_FROM`], but for tests that compare the two ways.
    index_from: usize,
    /// Set once the pool has held [`INDEX_FROM`] VCPUs, and kept ("indexed"): `waiting` is
    /// then kept on one pcpu too, and the replenishment timers in [`Index::timers`], so
    /// that a pick, a wake, a block and a replenishment cost O(log n), not a look at every
    /// VCPU; the set's own remembered timer ([`EdfSet::next_timer`]) is then unused and
    /// `None`. Decisions, and the order of events, are the same either way.
    index: Option<Box<Index>>,
    /// Whether `waiting` is kept: on several pcpus, or indexed. Set by `new`,
    /// [`Rtds::start_index`] and [`Policy::change_pcpus`]; a field, not a test of both,
    /// because every hook reads it (`docs/benchmarks.md`, "RTDS at scale").
    keeps_queue: bool,
    /// The key each pcpu runs, as [`Policy::tickle`] reads it (kept between calls so that
    /// it does not allocate: it runs after every decision on a pool of several pcpus).
    running_keys: RefCell<Vec<Option<RtKey>>>,
    /// Some VCPU's affinity leaves out a pcpu of the pool: [`Policy::tickle`] must then
    /// look at every waiting VCPU, not only the most urgent ones.
    restricted: bool,
    /// The pool `restricted` was last computed for: after a pcpu joins or leaves, the first
    /// change of an affinity looks at them all.
    restricted_for: CpuSet,
    /// [`Policy::tickle`]'s answer without `asked`, while nothing it reads has changed:
    /// every hook that changes `current`, eligibility, a key or an affinity clears it.
    tickled: Cell<Option<CpuSet>>,
}

impl Rtds {
    pub fn new(pcpus: u32, mode: RtdsMode) -> Rtds {
        Rtds {
            mode,
            vcpus: EdfSet::default(),
            current: vec![None; pcpus.max(1) as usize],
            affinity: Affinities::default(),
            asked: CpuSet::EMPTY,
            waiting: KeyQueue::default(),
            members: 0,
            index_from: INDEX_FROM,
            index: None,
            keeps_queue: pcpus > 1,
            running_keys: RefCell::new(Vec::new()),
            restricted: false,
            restricted_for: CpuSet::first(pcpus.max(1)),
            tickled: Cell::new(None),
        }
    }

    /// Puts `vcpu` in `waiting` under its current key if it is eligible and runs nowhere,
    /// and takes it out otherwise. Called after anything that may change that.
    /// With one pcpu and fewer than [`INDEX_FROM`] VCPUs there is no queue: `do_schedule`
    /// looks at every VCPU, which costs less than keeping the queue for so few.
    #[inline]
    fn requeue(&mut self, vcpu: VcpuId) {
        if self.keeps_queue() {
            self.requeue_kept(vcpu);
        }
    }

    /// [`Self::requeue`] where the queue is kept.
    fn requeue_kept(&mut self, vcpu: VcpuId) {
        let m = self.vcpus.get_mut(vcpu);
        let want = (m.server.eligible() && m.on.is_none()).then(|| m.key());
        if want == m.queued {
            return;
        }
        let old = std::mem::replace(&mut m.queued, want);
        if let Some(old) = old {
            self.waiting.remove(old);
        }
        if let Some(new) = want {
            self.waiting.insert(new);
        }
    }

    /// Whether `waiting` is kept: on several pcpus, or indexed ([`Rtds::index`]).
    #[inline]
    fn keeps_queue(&self) -> bool {
        debug_assert_eq!(
            self.keeps_queue,
            self.several_pcpus() || self.index.is_some()
        );
        self.keeps_queue
    }

    /// The waiting VCPUs' keys, most urgent first.
    #[inline]
    fn waiters(&self) -> impl Iterator<Item = RtKey> + '_ {
        self.waiting.iter()
    }

    /// Counts a VCPU that joined, and starts the indexes when the pool reaches
    /// [`INDEX_FROM`] VCPUs.
    fn count_joined(&mut self) {
        self.members += 1;
        if self.index.is_none() && self.members >= self.index_from {
            self.start_index();
        }
    }

    /// Builds the indexes from every VCPU ([`Rtds::index`]): the waiting queue on one pcpu,
    /// and the timers.
    fn start_index(&mut self) {
        self.index = Some(Box::default());
        self.keeps_queue = true;
        for i in 0..self.vcpus.capacity() {
            let v = VcpuId(i as u32);
            if self.vcpus.contains(v) {
                self.requeue(v);
            }
        }
        self.refresh_timer();
        // The set's remembered timer is unused from now on: `None`, as `check` expects
        // with no member counted as timed.
        self.vcpus.refresh_timer(|_| false);
    }

    /// What [`Policy::tickle`] reads changed.
    #[inline]
    fn changed(&self) {
        self.tickled.set(None);
    }

    fn several_pcpus(&self) -> bool {
        self.current.len() > 1
    }

    /// Recomputes the replenishment timers ([`RtVcpu::timed`]) from every VCPU: the
    /// earliest, or (indexed) all of them.
    fn refresh_timer(&mut self) {
        if let Some(index) = &mut self.index {
            index.timers.clear();
            let timed = self.vcpus.iter().filter(|m| m.timed());
            index
                .timers
                .extend(timed.map(|m| (m.server.deadline, m.server.vcpu)));
        } else {
            self.vcpus.refresh_timer(RtVcpu::timed);
        }
    }

    /// The deadline of `vcpu`'s replenishment timer, if it has one.
    fn timer_of(&self, vcpu: VcpuId) -> Option<Nanos> {
        let m = self.vcpus.get(vcpu);
        m.timed().then_some(m.server.deadline)
    }

    /// [`Self::refresh_timer`] after a change to `vcpu` alone, whose timer was `before`.
    #[inline]
    fn retime(&mut self, vcpu: VcpuId, before: Option<Nanos>) {
        if self.index.is_some() {
            return self.retime_indexed(vcpu, before);
        }
        let after = self.timer_of(vcpu);
        self.vcpus.retime(before, after, RtVcpu::timed);
    }

    /// [`Self::retime`] of an indexed pool.
    #[inline(never)]
    fn retime_indexed(&mut self, vcpu: VcpuId, before: Option<Nanos>) {
        let after = self.timer_of(vcpu);
        let Some(index) = &mut self.index else {
            unreachable!("indexed");
        };
        if before == after {
            return;
        }
        if let Some(b) = before {
            let found = index.timers.remove(&(b, vcpu));
            debug_assert!(found, "{vcpu:?}'s timer at {b} is indexed");
        }
        if let Some(a) = after {
            index.timers.insert((a, vcpu));
        }
    }

    fn earliest_timer(&self) -> Option<Nanos> {
        self.vcpus.earliest_deadline(RtVcpu::timed)
    }

    /// The priority level of a VCPU (0 = real-time), for tests.
    pub fn level(&self, vcpu: VcpuId) -> u32 {
        self.vcpus.get(vcpu).level
    }

    fn is_running(&self, vcpu: VcpuId) -> bool {
        self.vcpus.get(vcpu).on.is_some()
    }

    /// The pcpu `vcpu` runs on (local index), if any.
    fn pcpu_of(&self, vcpu: VcpuId) -> Option<u32> {
        self.vcpus.get(vcpu).on
    }

    /// Recomputes `restricted` after a VCPU's affinity changed to `affinity` (`None`: the
    /// VCPU left). Only a VCPU that no longer leaves out a pcpu can clear it, and a pool
    /// that changed may change it: only then are all affinities looked at.
    fn refresh_restricted(&mut self, affinity: Option<CpuSet>) {
        let pool = CpuSet::first(self.current.len() as u32);
        if affinity.is_some_and(|a| !pool.is_subset(a)) {
            self.restricted = true;
        } else if self.restricted || pool != self.restricted_for {
            self.restricted = !self.affinity.all_hold(pool);
        }
        self.restricted_for = pool;
    }

    /// [`Policy::handle_timer`] for one due VCPU (its timer is then out of date): replenishes
    /// it; returns, on one pcpu, whether the pcpu must reschedule.
    #[inline(always)]
    fn replenish_due(&mut self, cx: &mut Cx, v: VcpuId) -> bool {
        self.vcpus.get_mut(v).replenish(cx);
        self.requeue(v);
        if self.several_pcpus() {
            // A running VCPU's slice changed with its budget: re-arm it there.
            if let Some(p) = self.pcpu_of(v) {
                self.asked.insert(p);
            }
            return false;
        }
        // A running VCPU's slice changed with its budget: re-arm it.
        self.is_running(v) || self.should_tickle(v)
    }

    /// Whether an eligible `vcpu` should take a pcpu now: some pcpu idles, or it beats the
    /// least urgent running VCPU.
    fn should_tickle(&self, vcpu: VcpuId) -> bool {
        let m = self.vcpus.get(vcpu);
        if !m.server.eligible() || self.is_running(vcpu) {
            return false;
        }
        let mut worst_running = None;
        for c in &self.current {
            match c {
                None => return true,
                Some(c) => {
                    let k = self.vcpus.get(*c).key();
                    worst_running =
                        Some(worst_running.map_or(k, |w: (u32, Nanos, VcpuId)| w.max(k)));
                }
            }
        }
        worst_running.is_some_and(|w| m.key() < w)
    }

    /// [`Self::tickle_targets`], remembered in `tickled`.
    #[inline(never)]
    fn tickle_fresh(&self) -> CpuSet {
        let targets = self.tickle_targets();
        self.tickled.set(Some(targets));
        targets
    }

    /// [`global::tickle_targets`] over this pool (without `asked`).
    fn tickle_targets(&self) -> CpuSet {
        if self.restricted {
            return self.tickle_targets_restricted();
        }
        let named = self.tickle_targets_full();
        debug_assert_eq!(named, self.tickle_targets_restricted());
        named
    }

    /// [`Self::tickle_targets`] when every affinity holds the whole pool.
    fn tickle_targets_full(&self) -> CpuSet {
        // Every affinity holds the whole pool. Then [`global::tickle_targets`] comes down
        // to: while pcpus idle, each most urgent waiting VCPU takes one (the first from
        // where it last ran); then each next one takes the unnamed pcpu running the largest
        // key (keys are unique) if it beats that key, and the first that does not stops the
        // search.
        let Some(first) = self.waiting.first() else {
            return CpuSet::EMPTY;
        };
        // One pass: the pcpus that idle, and the largest running key among the others.
        let mut idle = CpuSet::EMPTY;
        let mut worst: Option<(RtKey, u32)> = None;
        for p in 0..self.current.len() {
            match self.running_key(p) {
                None => idle.insert(p as u32),
                Some(k) => {
                    if worst.is_none_or(|(w, _)| k > w) {
                        worst = Some((k, p as u32));
                    }
                }
            }
        }
        // The usual answer: nobody idles and the most urgent waiter beats nobody.
        if idle.is_empty() && worst.is_none_or(|(w, _)| first >= w) {
            return CpuSet::EMPTY;
        }
        // The queue's form is chosen once, not at every key (`KeyIter` tests it at each).
        match self.waiting.array() {
            Some(keys) => self.name_targets(keys.iter().rev().copied(), idle, worst),
            None => self.name_targets(self.waiting.big.iter().copied(), idle, worst),
        }
    }

    /// The key `self.current[p]` runs under, if it runs an eligible VCPU (one without
    /// budget, and without extratime, is as good as gone).
    #[inline]
    fn running_key(&self, p: usize) -> Option<RtKey> {
        self.current[p]
            .map(|v| self.vcpus.get(v))
            .filter(|m| m.server.eligible())
            .map(RtVcpu::key)
    }

    /// [`Self::tickle_targets_full`] past its first pass: names the pcpus the `waiters`
    /// (most urgent first) take, from the pcpus that `idle` and the `worst` running key.
    #[inline]
    fn name_targets(
        &self,
        waiters: impl Iterator<Item = RtKey>,
        mut idle: CpuSet,
        mut worst: Option<(RtKey, u32)>,
    ) -> CpuSet {
        let running = |p: usize| self.running_key(p);
        let mut named = CpuSet::EMPTY;
        for key in waiters {
            if !idle.is_empty() {
                let last = self.affinity.placement(key.2).last.unwrap_or(0);
                let p = idle.iter_from(last).next().expect("not empty");
                idle.remove(p);
                named.insert(p);
                continue;
            }
            match worst {
                Some((w, p)) if key < w => named.insert(p),
                _ => break,
            }
            // The next largest key among the running pcpus not named yet.
            worst = None;
            for p in 0..self.current.len() {
                if named.contains(p as u32) {
                    continue;
                }
                if let Some(k) = running(p) {
                    if worst.is_none_or(|(w, _)| k > w) {
                        worst = Some((k, p as u32));
                    }
                }
            }
        }
        named
    }

    /// [`Self::tickle_targets`] when some affinity leaves out a pcpu of the pool (and, in
    /// debug builds, the check of the shortcut taken when none does).
    fn tickle_targets_restricted(&self) -> CpuSet {
        let pcpus = self.current.len();
        let mut running = self.running_keys.borrow_mut();
        running.clear();
        running.extend(self.current.iter().map(|c| {
            c.map(|v| self.vcpus.get(v))
                .filter(|m| m.server.eligible())
                .map(RtVcpu::key)
        }));
        let running = |p: usize| running[p];
        if global::nothing_to_tickle(pcpus, running, self.waiting.first()) {
            return CpuSet::EMPTY;
        }
        let affinity = |k: RtKey| (k, self.affinity.placement(k.2));
        global::tickle_targets(pcpus, running, self.waiters().map(affinity))
    }
}

impl Policy for Rtds {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Rtds
    }

    /// Budget and period > 0, budget ≥ 10 µs (so the period is too), budget ≤ period.
    fn validate(&self, params: &VcpuParams) -> Result<(), ParamError> {
        params.validate_rtds_slice(RTDS_MIN_BUDGET)
    }

    fn insert_vcpu(&mut self, cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) {
        let mut m = RtVcpu {
            server: EdfServer::new(cx.now, vcpu, params),
            level: 0,
            on: None,
            queued: None,
        };
        if !params.offset.is_zero() && params.extratime_under(PolicyKind::Rtds) {
            // Before its first period, only an extra-level budget.
            m.level = 1;
            m.server.remaining = params.budget;
        }
        self.vcpus.insert(m);
        self.count_joined();
        self.requeue(vcpu);
        // It has no work and runs nowhere: no timer yet.
        self.changed();
    }

    fn remove_vcpu(&mut self, _cx: &mut Cx, vcpu: VcpuId) {
        for c in &mut self.current {
            if *c == Some(vcpu) {
                *c = None;
            }
        }
        let before = self.timer_of(vcpu);
        if let Some(key) = self.vcpus.get(vcpu).queued {
            self.waiting.remove(key);
        }
        self.vcpus.remove(vcpu);
        self.members -= 1;
        self.affinity.remove(vcpu);
        self.refresh_restricted(None);
        match &mut self.index {
            None => self.refresh_timer(),
            Some(index) => {
                if let Some(b) = before {
                    index.timers.remove(&(b, vcpu));
                }
            }
        }
        self.changed();
    }

    fn wake(&mut self, cx: &mut Cx, vcpu: VcpuId) -> bool {
        let before = self.timer_of(vcpu);
        let m = self.vcpus.get_mut(vcpu);
        m.server.has_work = true;
        // Sleeping VCPUs have no replenishment timer: catch up now (Xen's rt_unit_wake).
        if cx.now >= m.server.deadline {
            m.replenish(cx);
        }
        self.requeue(vcpu);
        self.retime(vcpu, before);
        self.changed();
        if self.several_pcpus() {
            return !self.tickle().is_empty();
        }
        self.should_tickle(vcpu)
    }

    fn sleep(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        let before = self.timer_of(vcpu);
        self.vcpus.server_mut(vcpu).has_work = false;
        self.requeue(vcpu);
        self.retime(vcpu, before);
        self.changed();
        // Only its own pcpu must reschedule, and the machine does that itself (Xen's
        // `rt_unit_sleep` raises the softirq there and tickles nobody): the pcpus to
        // tickle for what it leaves are named after that pcpu's decision.
        false
    }

    fn burn(&mut self, cx: &mut Cx, pcpu: PcpuId, ran: Nanos, spent: Spent) {
        let Some(v) = self.current[pcpu.index()] else {
            return;
        };
        let m = self.vcpus.get_mut(v);
        if m.server.consume(cx, ran, spent) {
            m.on_exhausted(cx);
            // No longer eligible, or at a new level: only then does the tickle change.
            self.changed();
        }
    }

    fn do_schedule(&mut self, _cx: &mut Cx, pcpu: PcpuId) -> Decision {
        // With one pcpu nothing runs elsewhere and every affinity holds it; skip asking.
        let several_pcpus = self.several_pcpus();
        self.asked.remove(pcpu.0);
        // The candidates: what this pcpu runs (if still eligible) and the VCPUs that run
        // nowhere (with one pcpu every affinity holds it).
        let previous = self.current[pcpu.index()];
        let restricted = several_pcpus && self.restricted;
        let allowed = |v: VcpuId| !restricted || self.affinity.allows(v, pcpu.0);
        let stay = previous
            .map(|v| self.vcpus.get(v))
            .filter(|m| m.server.eligible() && allowed(m.server.vcpu))
            .map(RtVcpu::key);
        let best = if self.keeps_queue() {
            let waiter = if restricted {
                self.waiters().find(|k| allowed(k.2))
            } else {
                self.waiting.first()
            };
            stay.into_iter().chain(waiter).min()
        } else {
            self.vcpus.pick(|_| true, RtVcpu::key).map(RtVcpu::key)
        };
        let decision = match best {
            Some((_, _, v)) => Decision {
                run: Some(v),
                slice: Some(self.vcpus.server(v).remaining),
            },
            None => Decision::IDLE,
        };
        if previous != decision.run {
            // The VCPU that comes is eligible, so it has work and a timer already: only the
            // one that leaves may lose its timer.
            let before = previous.and_then(|v| self.timer_of(v));
            if let Some(v) = previous {
                self.vcpus.get_mut(v).on = None;
            }
            // `requeue` of both, written out (a call per decision costs more than its work
            // here, `docs/benchmarks.md`, "RTDS at scale"): the one that comes waited if it is
            // queued at all, and leaves the queue; the one that leaves ran, so it was not
            // queued, and waits if it is still eligible and the queue is kept.
            if let Some(v) = decision.run {
                let m = self.vcpus.get_mut(v);
                m.on = Some(pcpu.0);
                if let Some(key) = m.queued.take() {
                    self.waiting.remove(key);
                }
                if several_pcpus {
                    self.affinity.ran(v, pcpu.0);
                }
            }
            if let Some(v) = previous {
                let keeps_queue = self.keeps_queue();
                let m = self.vcpus.get_mut(v);
                debug_assert_eq!(m.queued, None, "a running VCPU is not queued");
                if keeps_queue && m.server.eligible() {
                    let key = m.key();
                    m.queued = Some(key);
                    self.waiting.insert(key);
                }
                self.retime(v, before);
            }
            self.current[pcpu.index()] = decision.run;
            self.changed();
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
        if let Some(index) = &self.index {
            return index.timers.first().map(|&(deadline, _)| deadline);
        }
        debug_assert_eq!(self.vcpus.next_timer(), self.earliest_timer());
        self.vcpus.next_timer()
    }

    fn handle_timer(&mut self, cx: &mut Cx) -> bool {
        let mut resched = false;
        let mut replenished = false;
        // A VCPU's due test reads its own state and `current`; replenishing another VCPU
        // changes neither, so one pass in id order (the order of the `Replenish` events)
        // replenishes exactly the VCPUs due on entry: indexed, those first in `timers`.
        if let Some(index) = &mut self.index {
            let mut due = std::mem::take(&mut index.due);
            let last = (cx.now, VcpuId(u32::MAX));
            due.extend(index.timers.range(..=last).map(|&(_, v)| v));
            due.sort_unstable();
            for &v in &due {
                let before = self.timer_of(v);
                resched |= self.replenish_due(cx, v);
                self.retime(v, before);
            }
            replenished = !due.is_empty();
            due.clear();
            self.index.as_mut().expect("indexed").due = due;
        } else {
            for i in 0..self.vcpus.capacity() {
                let v = VcpuId(i as u32);
                if !self.vcpus.contains(v) {
                    continue;
                }
                let m = self.vcpus.get(v);
                if !(m.timed() && m.server.deadline <= cx.now) {
                    continue;
                }
                resched |= self.replenish_due(cx, v);
                replenished = true;
            }
            if replenished {
                self.refresh_timer();
            }
        }
        if replenished {
            self.changed();
        }
        if self.several_pcpus() {
            return replenished && !self.tickle().is_empty();
        }
        resched
    }

    fn adjust(&mut self, _cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) -> bool {
        // The deadline and the level stay: no timer or key changes.
        self.vcpus.server_mut(vcpu).adjust(params);
        self.requeue(vcpu);
        self.changed();
        self.is_running(vcpu)
    }

    fn set_affinity(&mut self, _cx: &mut Cx, vcpu: VcpuId, affinity: CpuSet) -> bool {
        self.affinity.set(vcpu, affinity);
        self.refresh_restricted(Some(affinity));
        crate::policy::global::stop_outside(&mut self.current, vcpu, affinity);
        // Only `vcpu` may stop running (and lose its timer with it); the machine sets the
        // affinity of a VCPU it has not inserted yet first.
        if self.vcpus.contains(vcpu) {
            let before = self.timer_of(vcpu);
            let m = self.vcpus.get_mut(vcpu);
            m.on = m.on.filter(|&p| affinity.contains(p));
            self.requeue(vcpu);
            self.retime(vcpu, before);
        }
        self.changed();
        // Where it runs may be outside it (the machine reschedules that pcpu), and it may
        // now fit an idle pcpu.
        self.several_pcpus() && !self.tickle().is_empty()
    }

    fn change_pcpus(&mut self, _cx: &mut Cx, change: PcpuChange) -> bool {
        let left = change.apply(&mut self.current, || None).flatten();
        self.asked = change.renumber_set(self.asked);
        self.affinity.change_pcpus(change);
        for i in 0..self.vcpus.capacity() {
            let v = VcpuId(i as u32);
            if self.vcpus.contains(v) {
                let m = self.vcpus.get_mut(v);
                m.on = m.on.and_then(|p| change.renumber(p));
            }
        }
        // The waiting queue exists only on several pcpus (or indexed): build it anew from the
        // VCPUs' state, which is kept (the one the leaving pcpu ran now waits, if eligible).
        self.waiting.clear();
        self.keeps_queue = self.several_pcpus() || self.index.is_some();
        for i in 0..self.vcpus.capacity() {
            let v = VcpuId(i as u32);
            if self.vcpus.contains(v) {
                self.vcpus.get_mut(v).queued = None;
                self.requeue(v);
            }
        }
        // It may have lost its timer with its pcpu (a VCPU without work keeps one only
        // while it runs).
        self.refresh_timer();
        self.changed();
        !self.several_pcpus() && left.is_some_and(|v| self.should_tickle(v))
    }

    fn tickle(&self) -> CpuSet {
        if !self.several_pcpus() {
            return CpuSet::EMPTY;
        }
        // The remembered answer is read without the frame the search needs.
        let targets = match self.tickled.get() {
            Some(targets) => targets,
            None => self.tickle_fresh(),
        };
        self.asked.union(targets)
    }

    fn view(&self, vcpu: VcpuId) -> VcpuView {
        self.vcpus.server(vcpu).view()
    }

    fn counters(&self, vcpu: VcpuId) -> BudgetCounters {
        self.vcpus.server(vcpu).counters
    }

    fn check_invariants(&self) -> Result<(), String> {
        // Indexed, the set's remembered timer is unused (`None`): `timers` holds them all.
        let indexed = self.index.is_some();
        self.vcpus.check(|m| !indexed && m.timed())?;
        let mut timers: Vec<(Nanos, VcpuId)> = self
            .vcpus
            .iter()
            .filter(|m| indexed && m.timed())
            .map(|m| (m.server.deadline, m.server.vcpu))
            .collect();
        timers.sort_unstable();
        let indexed_timers = self.index.as_ref().map(|index| &index.timers);
        if !timers.iter().eq(indexed_timers.into_iter().flatten()) {
            return Err(format!(
                "timers {indexed_timers:?}, but the VCPUs with a timer are {timers:?}"
            ));
        }
        let members = self.vcpus.iter().count();
        if self.members != members || (members >= self.index_from && !indexed) {
            return Err(format!(
                "{} VCPUs counted ({members} present), indexed: {indexed}",
                self.members
            ));
        }
        let pool = CpuSet::first(self.current.len() as u32);
        if self.restricted == self.affinity.all_hold(pool) {
            return Err(format!("restricted: {}, wrongly", self.restricted));
        }
        for m in self.vcpus.iter() {
            if m.level > 0 && !m.server.params.extratime_under(PolicyKind::Rtds) {
                return Err(format!(
                    "vcpu {:?}: at extra level {} without extratime",
                    m.server.vcpu, m.level
                ));
            }
        }
        let mut waiting: Vec<RtKey> = self
            .vcpus
            .iter()
            .filter(|m| m.server.eligible() && m.on.is_none())
            .map(RtVcpu::key)
            .collect();
        waiting.sort_unstable();
        if !self.keeps_queue() {
            waiting.clear();
        }
        let queue = &self.waiting;
        if !waiting.iter().copied().eq(queue.iter())
            || !(queue.small.is_empty() || queue.big.is_empty())
            || queue.small.len() > SMALL_QUEUE
        {
            return Err(format!(
                "waiting queue {queue:?}, but the eligible VCPUs running nowhere are {waiting:?}"
            ));
        }
        for m in self.vcpus.iter() {
            let queued = self.keeps_queue() && m.server.eligible() && m.on.is_none();
            if m.queued != queued.then(|| m.key()) {
                return Err(format!(
                    "vcpu {:?}: queued as {:?}",
                    m.server.vcpu, m.queued
                ));
            }
            if let Some(p) = m.on {
                if self.current.get(p as usize) != Some(&Some(m.server.vcpu)) {
                    return Err(format!(
                        "vcpu {:?}: marked as running on pcpu {p}, which runs {:?}",
                        m.server.vcpu,
                        self.current.get(p as usize)
                    ));
                }
            }
        }
        for (p, c) in self.current.iter().enumerate() {
            if let Some(v) = c {
                if self.vcpus.contains(*v) && self.vcpus.get(*v).on != Some(p as u32) {
                    return Err(format!(
                        "pcpu {p} runs vcpu {v:?}, not marked as running there"
                    ));
                }
                if !self.vcpus.contains(*v) {
                    return Err(format!("pcpu {p} runs unknown vcpu {v:?}"));
                }
                if self.current.iter().filter(|o| *o == c).count() > 1 {
                    return Err(format!("vcpu {v:?} runs on two pcpus"));
                }
                if self.several_pcpus() && !self.affinity.allows(*v, p as u32) {
                    return Err(format!("pcpu {p} runs vcpu {v:?} outside its affinity"));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::fmt::Write;

    use proptest::prelude::*;

    use super::*;
    use crate::event::EventLog;

    fn ms(x: u64) -> Nanos {
        Nanos::from_ms(x)
    }

    fn params(budget_ms: u64, period_ms: u64, extratime: bool) -> VcpuParams {
        let mut p = VcpuParams::server(ms(budget_ms), ms(period_ms), 0);
        p.extratime = Some(extratime);
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
        // Below the minimum and above the period: the minimum is named, as `xl sched-rtds`
        // names it before comparing budget and period; SEDF's rule has no minimum.
        let mut r = params(2, 10, false);
        (r.budget, r.period) = (Nanos::from_us(8), Nanos::from_us(5));
        assert_eq!(
            rtds.validate(&r),
            Err(ParamError::RtdsTooSmall(Nanos::from_us(8)))
        );
        assert_eq!(
            ParamError::RtdsTooSmall(Nanos::from_us(8)).to_string(),
            "budget: RTDS needs at least 10us (got 8us)"
        );
        assert!(matches!(
            r.validate_slice(),
            Err(ParamError::BudgetAbovePeriod { .. })
        ));
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

    /// Two pcpus. A (2/10) and B (2/20) run on pcpus 0 and 1. C (2/5) may run on pcpu 0
    /// only: it preempts A there (the worst running VCPU of its affinity), though B has the
    /// latest deadline. A then waits, and beats B (deadline 20) on pcpu 1: pcpu 1 is
    /// tickled and takes A. B beats nobody: nothing more.
    #[test]
    fn two_pcpus_tickle_within_the_affinity_and_chain() {
        let mut log = EventLog::new(false);
        let mut rtds = Rtds::new(2, RtdsMode::Event);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        let (a, b, c) = (VcpuId(0), VcpuId(1), VcpuId(2));
        for (v, p, aff) in [
            (a, params(2, 10, false), CpuSet::first(2)),
            (b, params(2, 20, false), CpuSet::first(2)),
            (c, params(2, 5, false), CpuSet::one(0)),
        ] {
            rtds.set_affinity(&mut cx, v, aff);
            rtds.insert_vcpu(&mut cx, v, &p);
        }
        assert!(rtds.wake(&mut cx, a));
        assert_eq!(rtds.tickle(), CpuSet::one(0), "the lowest idle pcpu");
        assert!(rtds.wake(&mut cx, b));
        assert_eq!(rtds.do_schedule(&mut cx, PcpuId(0)).run, Some(a));
        assert_eq!(rtds.tickle(), CpuSet::one(1), "B waits and pcpu 1 idles");
        assert_eq!(rtds.do_schedule(&mut cx, PcpuId(1)).run, Some(b));
        assert_eq!(rtds.tickle(), CpuSet::EMPTY);
        assert!(rtds.wake(&mut cx, c));
        assert_eq!(rtds.tickle(), CpuSet::one(0), "C may only run on pcpu 0");
        assert_eq!(rtds.do_schedule(&mut cx, PcpuId(0)).run, Some(c));
        assert_eq!(rtds.tickle(), CpuSet::one(1), "A now beats B");
        assert_eq!(rtds.do_schedule(&mut cx, PcpuId(1)).run, Some(a));
        assert_eq!(rtds.tickle(), CpuSet::EMPTY, "converged");
        // Pcpu 1 never picks C, whatever waits.
        rtds.sleep(&mut cx, a);
        assert_eq!(rtds.do_schedule(&mut cx, PcpuId(1)).run, Some(b));
        assert_eq!(rtds.check_invariants(), Ok(()));
    }

    /// A key with many ties in level and deadline, which the VCPU id breaks.
    fn tied_key(level: u8, deadline: u8, id: u16) -> RtKey {
        (
            u32::from(level),
            Nanos(u64::from(deadline)),
            VcpuId(u32::from(id)),
        )
    }

    proptest! {
        /// The queue holds what a sorted `Vec` holds, in the same order, as it grows past
        /// its array into the set, empties, and starts again in the array.
        #[test]
        fn the_key_queue_keeps_the_order_of_a_sorted_vec(
            ops in prop::collection::vec((0u8..4, 0u8..3, 0u8..6, 0u16..150), 1..500)
        ) {
            let mut queue = KeyQueue::default();
            let mut reference: Vec<RtKey> = Vec::new();
            let agree = |queue: &KeyQueue, reference: &[RtKey]| {
                queue.iter().eq(reference.iter().copied())
                    && queue.first() == reference.first().copied()
                    && (queue.small.is_empty() || queue.big.is_empty())
                    && queue.small.len() <= SMALL_QUEUE
            };
            for (action, level, deadline, id) in ops {
                // Each VCPU is queued under one key at a time, as `requeue` keeps it.
                if let Some(at) = reference.iter().position(|k| k.2 == VcpuId(id.into())) {
                    queue.remove(reference.remove(at));
                }
                if action > 0 {
                    let key = tied_key(level, deadline, id);
                    queue.insert(key);
                    let at = reference.partition_point(|k| *k < key);
                    reference.insert(at, key);
                }
                prop_assert!(agree(&queue, &reference), "{queue:?} vs {reference:?}");
            }
            // Empty it in id order, then fill it again: back in the array.
            while let Some(at) = (0..reference.len()).min_by_key(|&i| reference[i].2) {
                queue.remove(reference.remove(at));
                prop_assert!(agree(&queue, &reference), "{queue:?} vs {reference:?}");
            }
            for id in 0..3 {
                queue.insert(tied_key(0, 0, id));
            }
            prop_assert_eq!(queue.small.len(), 3);
        }
    }

    /// Everything the machine can read from the policy.
    fn answers(rtds: &Rtds, ids: u32) -> String {
        let mut out = format!(
            "timer {:?} tickle {:?} current {:?}",
            rtds.next_timer(),
            rtds.tickle(),
            rtds.current
        );
        for v in (0..ids).map(VcpuId).filter(|&v| rtds.vcpus.contains(v)) {
            let _ = write!(
                out,
                "; {v:?} {:?} {:?} level {}",
                rtds.view(v),
                rtds.counters(v),
                rtds.level(v)
            );
        }
        out
    }

    /// One hook as the machine could call it, at `now`, and what it answered: `op` picks
    /// the hook (inserts and wakes more often, to fill the queues), `n` the VCPU or pcpu,
    /// `x` the parameters, the affinity or the time that passes.
    fn step(
        rtds: &mut Rtds,
        log: &mut EventLog,
        now: &mut Nanos,
        (op, n, x): (u8, u8, u16),
    ) -> String {
        let us = Nanos::from_us;
        let pcpus = rtds.current.len() as u32;
        let v = VcpuId(u32::from(n));
        let present = rtds.vcpus.contains(v);
        let has_work = present && rtds.vcpus.server(v).has_work;
        let x64 = u64::from(x);
        // Budgets and periods of a few values, 10-70 µs: many deadlines tie.
        let period = us(10 + x64 % 7 * 10);
        let mut params = VcpuParams::server(us(10 + x64 / 7 % 4 * 10).min(period), period, 0);
        params.extratime = Some(x & 0x100 != 0);
        if x & 0x200 != 0 {
            params.offset = us(x64 >> 10);
        }
        let mut affinity = CpuSet::EMPTY;
        for p in 0..pcpus {
            if (x >> p) & 1 == 1 || p == u32::from(n) % pcpus {
                affinity.insert(p);
            }
        }
        let mut cx = Cx { now: *now, log };
        match op % 16 {
            0..=2 if !present => {
                rtds.set_affinity(&mut cx, v, affinity);
                rtds.insert_vcpu(&mut cx, v, &params);
                "inserted".into()
            }
            3 if present => {
                rtds.remove_vcpu(&mut cx, v);
                "removed".into()
            }
            4..=6 if present && !has_work => format!("wake {}", rtds.wake(&mut cx, v)),
            7 if present && has_work => format!("sleep {}", rtds.sleep(&mut cx, v)),
            8 | 9 => format!(
                "{:?}",
                rtds.do_schedule(&mut cx, PcpuId(u32::from(n) % pcpus))
            ),
            10 | 11 => {
                // Time passes up to the next timer at most, as the machine lets it.
                let to = (*now + us(x64 % 40)).min(rtds.next_timer().unwrap_or(Nanos(u64::MAX)));
                let ran = to.saturating_sub(*now);
                *now = (*now).max(to);
                let mut cx = Cx { now: *now, log };
                for p in 0..pcpus {
                    rtds.burn(&mut cx, PcpuId(p), ran, Spent::Running);
                }
                let due = rtds.next_timer().is_some_and(|t| t <= *now);
                format!("due {due}: {}", due && rtds.handle_timer(&mut cx))
            }
            12 => format!("timer {}", rtds.handle_timer(&mut cx)),
            13 if present => format!("adjust {}", rtds.adjust(&mut cx, v, &params)),
            14 if present && pcpus > 1 => {
                format!("affinity {}", rtds.set_affinity(&mut cx, v, affinity))
            }
            _ => "nothing".into(),
        }
    }

    proptest! {
        /// With the indexes (as past [`INDEX_FROM`] VCPUs) RTDS decides, answers and
        /// reports exactly as with its scans, on one pcpu and on several, whatever the
        /// hooks called.
        #[test]
        fn the_indexes_decide_as_the_scans(
            pcpus in 1u32..4,
            ops in prop::collection::vec((any::<u8>(), 0u8..80, any::<u16>()), 1..400)
        ) {
            let mut scans = Rtds::new(pcpus, RtdsMode::Event);
            scans.index_from = usize::MAX;
            let mut indexed = Rtds::new(pcpus, RtdsMode::Event);
            indexed.index_from = 1;
            let (mut log_s, mut log_i) = (EventLog::new(true), EventLog::new(true));
            let (mut now_s, mut now_i) = (Nanos::ZERO, Nanos::ZERO);
            for op in ops {
                let said_s = step(&mut scans, &mut log_s, &mut now_s, op);
                let said_i = step(&mut indexed, &mut log_i, &mut now_i, op);
                prop_assert_eq!(said_s, said_i, "{:?}", op);
                prop_assert_eq!(scans.check_invariants(), Ok(()));
                prop_assert_eq!(indexed.check_invariants(), Ok(()));
                prop_assert!(scans.index.is_none());
                prop_assert!(indexed.index.is_some() || indexed.members == 0);
                prop_assert_eq!(answers(&scans, 80), answers(&indexed, 80));
                let events_s: Vec<_> = log_s.drain().collect();
                let events_i: Vec<_> = log_i.drain().collect();
                prop_assert_eq!(format!("{events_s:?}"), format!("{events_i:?}"));
            }
        }
    }
}
