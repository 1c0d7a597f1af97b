//! Shared state of the fixed-priority servers (Deferrable, Periodic/PTPS, Polling, WCPS,
//! CRPS, Sporadic).
//!
//! The spec's RunQ (VCPUs with work) and RdyQ (VCPUs without) are kept as one array in
//! priority order, each entry knowing whether it has work: with a handful of VCPUs per pcpu
//! a scan of one small array is both the clearest and the fastest form, and "RunQ" and
//! "RdyQ" are views of it (`has_work` true or false). Past 64 servers (thousands of domains
//! on a pcpu) the set keeps an ordered index instead, with the same order ([`ServerSet`]). The IDLE VCPU is implicit: it runs
//! when a policy's pick finds nothing.
//!
//! **Priority** (one total order, used everywhere): smaller `priority` number first, then
//! the RunQ's first-in, first-out order among equal priorities, as in RT-Xen's RunQ: a
//! VCPU is (re)inserted behind every VCPU of its priority whenever it enters the RunQ — when
//! it wakes, when it is replenished while waiting, and when it is put back after running
//! (every `do_schedule`: [`ServerSet::requeue`]). Equal-priority VCPUs therefore take turns
//! quantum by quantum; declaration order only breaks ties until the first of these. Where a
//! rule speaks of a "lower-priority" VCPU (WCPS, CRPS) it means one behind in this order.
//! [`ServerSet`] keeps `servers` sorted by it.
//!
//! **Fixed vs live state**: `params` are the VCPU's configured parameters; `remaining` and
//! `next_boundary` are live. Parameters changed at run time wait in `pending` and are applied
//! at the next replenishment.
//!
//! **Plans**: a decision is first a [`Plan`] — what runs and which budgets pay ([`Charge`]:
//! its own, idled away, both H's and the runner's, or H's lent) — computed by a pure
//! function of the set (`plan_ptps`, `plan_wcps`, `plan_crps`, `plan_own_budget`). `burn`
//! charges the plan in effect; a hook asks for a reschedule exactly when the plan it
//! would make now differs from the one in effect. [`PeriodicFamily`] is that machinery
//! for the policies replenished on period boundaries; each of `periodic.rs`, `polling.rs`,
//! `wcps.rs` and `crps.rs` supplies only its [`PeriodicRule`].

use std::collections::{BTreeMap, BTreeSet};

use crate::cpuset::CpuSet;
use crate::event::{CoreEvent, Cx};
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::global::{self, Affinities};
use crate::policy::per_pcpu::PerPcpu;
use crate::policy::table::VcpuTable;
use crate::policy::{
    BudgetCounters, Decision, PcpuChange, Policy, PolicyKind, Spent, TickInterval, VcpuView,
};
use crate::time::Nanos;

/// One server VCPU.
#[derive(Clone, Debug)]
pub struct Server {
    pub vcpu: VcpuId,
    pub params: VcpuParams,
    /// Parameters set by `adjust`, applied at the next replenishment.
    pub pending: Option<VcpuParams>,
    /// Remaining budget, in `[0, params.budget]`.
    pub remaining: Nanos,
    /// The next period boundary `offset + k·P` (unused by the Sporadic Server). Moved only
    /// by [`ServerSet`]'s own methods: the set caches the earliest one.
    pub next_boundary: Nanos,
    pub has_work: bool,
    pub counters: BudgetCounters,
    /// The RunQ stamp: when the VCPU last entered the RunQ (a counter, not a time). Among
    /// equal priorities the smaller stamp is ahead. Set only by [`ServerSet`].
    queued: u64,
    /// A large set: which of its searches' sets hold the server (bit k: `Search::LISTED[k]`).
    /// Set only by [`ServerSet`].
    listed: u8,
}

impl Server {
    /// The priority key: the one total order of the fixed-priority servers (priority, then
    /// first-in, first-out among equals).
    #[inline]
    pub fn key(&self) -> (u32, u64) {
        (self.params.priority, self.queued)
    }

    /// Takes up to `amount` from the remaining budget and returns what was taken; reports
    /// exhaustion. Callers add the result to whichever counter fits.
    #[inline]
    pub fn take_budget(&mut self, cx: &mut Cx, amount: Nanos) -> Nanos {
        let taken = amount.min(self.remaining);
        self.remaining -= taken;
        if !taken.is_zero() && self.remaining.is_zero() {
            let vcpu = self.vcpu;
            cx.emit(|| CoreEvent::BudgetExhausted { vcpu });
        }
        taken
    }
}

/// Above this many servers a [`ServerSet`] keeps an ordered index ([`Index`]) instead of
/// one sorted array: a scan of a few dozen entries is cheaper than any tree, but with
/// thousands of VCPUs on a pcpu every wake, insertion and pick would walk the array.
const INDEXED_ABOVE: usize = 64;

/// The server VCPUs of one pcpu, in priority order.
///
/// Up to 64 (`INDEXED_ABOVE`) servers, `servers` is sorted by [`Server::key`] and every search
/// is a scan. Past that (once; the set never goes back) `servers` holds the servers in no
/// particular order and an `Index` keeps their keys ordered, once for all of them and once
/// per search, and their next boundaries ordered by time, so that a requeue, an insertion,
/// a removal or a replenishment costs O(log n) and each search on one pcpu is the first
/// entry of its ordered set. Both forms give the same answer to every question: the order
/// is [`Server::key`] in each.
#[derive(Clone, Debug, Default)]
pub struct ServerSet {
    servers: Vec<Server>,
    /// Each VCPU's index in `servers`.
    position: VcpuTable<usize>,
    /// The ordered index of a large set (`None` up to [`INDEXED_ABOVE`] servers).
    index: Option<Box<Index>>,
    /// What [`ServerSet::next_boundary`] returns, kept because the machine asks after
    /// every hook. Boundaries move only in `insert`, `remove` and `replenish_due`, which
    /// refresh it (through `reorder`, or directly; a large set from its `boundaries`).
    earliest_boundary: Option<Nanos>,
    /// The next RunQ stamp to hand out.
    next_stamp: u64,
    /// Replenished VCPUs waiting to be requeued, or servers waiting to be discarded (kept
    /// to avoid allocating per boundary or burn).
    to_requeue: Vec<VcpuId>,
    /// Whether a large set also lists the servers with budget and no work (the last of
    /// [`Search::LISTED`]): only the Polling Server asks ([`Self::discard_ahead_of`]); the
    /// others would pay for its upkeep on every wake and finish for nothing.
    lists_idle_budget: bool,
}

/// The order of a large [`ServerSet`]: each server's key mapped to its index in `servers`.
#[derive(Clone, Debug, Default)]
struct Index {
    /// Every server.
    all: BTreeMap<(u32, u64), usize>,
    /// The servers each [`Search`] accepts, in the order of [`Search::LISTED`]. A server's
    /// `listed` bits say which of these hold it; [`ServerSet::relist`] brings them up to date
    /// after its budget or work changed.
    accepted: [BTreeMap<(u32, u64), usize>; 4],
    /// `(next_boundary, vcpu)` of every server: a boundary finds the servers due without a
    /// scan (with thousands of distinct periods every boundary is its own instant, and a
    /// scan per boundary made a run quadratic).
    boundaries: BTreeSet<(Nanos, VcpuId)>,
}

/// A server borrowed for change from a [`ServerSet`]: when it is dropped, a large set
/// brings its index up to date with the server's budget and work.
pub struct ServerMut<'a> {
    set: &'a mut ServerSet,
    at: usize,
}

impl std::ops::Deref for ServerMut<'_> {
    type Target = Server;

    #[inline]
    fn deref(&self) -> &Server {
        &self.set.servers[self.at]
    }
}

impl std::ops::DerefMut for ServerMut<'_> {
    #[inline]
    fn deref_mut(&mut self) -> &mut Server {
        &mut self.set.servers[self.at]
    }
}

impl Drop for ServerMut<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.set.index.is_some() {
            self.set.relist(self.at);
        }
    }
}

/// The servers of a [`ServerSet`] in priority order.
pub struct Ordered<'a> {
    servers: &'a [Server],
    order: Order<'a>,
}

enum Order<'a> {
    /// A small set: the array is the order (a slice iterator, as before the index).
    Array(std::slice::Iter<'a, Server>),
    /// A large set: the index's order, by index in the array.
    Index(std::collections::btree_map::Values<'a, (u32, u64), usize>),
}

impl<'a> Iterator for Ordered<'a> {
    type Item = &'a Server;

    #[inline(always)]
    fn next(&mut self) -> Option<&'a Server> {
        match &mut self.order {
            Order::Array(servers) => servers.next(),
            Order::Index(values) => values.next().map(|&at| &self.servers[at]),
        }
    }
}

impl<'a> Ordered<'a> {
    /// The next server and its index in the set's array.
    #[inline]
    fn next_at(&mut self) -> Option<(usize, &'a Server)> {
        let at = match &mut self.order {
            Order::Array(servers) => {
                let at = self.servers.len() - servers.len();
                servers.next()?;
                at
            }
            Order::Index(values) => *values.next()?,
        };
        Some((at, &self.servers[at]))
    }
}

impl ServerSet {
    /// An empty set; `lists_idle_budget` as [`PeriodicRule::DISCARDS_IDLE_BUDGET`].
    pub fn new(lists_idle_budget: bool) -> ServerSet {
        ServerSet {
            lists_idle_budget,
            ..ServerSet::default()
        }
    }

    /// How many of [`Search::LISTED`] a large set keeps.
    #[inline(always)]
    fn listed_searches(&self) -> usize {
        Search::LISTED.len() - usize::from(!self.lists_idle_budget)
    }

    /// Adds a server at `now`. Its first period begins at `now + offset`: with no offset it
    /// starts full; with an offset it has no budget until then.
    pub fn insert(&mut self, now: Nanos, vcpu: VcpuId, params: &VcpuParams) {
        let (remaining, next_boundary) = if params.offset.is_zero() {
            (params.budget, now + params.period)
        } else {
            (Nanos::ZERO, now + params.offset)
        };
        let queued = self.stamp();
        let server = Server {
            vcpu,
            params: params.clone(),
            pending: None,
            remaining,
            next_boundary,
            has_work: false,
            counters: BudgetCounters::default(),
            queued,
            listed: 0,
        };
        self.earliest_boundary = Some(
            self.earliest_boundary
                .map_or(next_boundary, |e| e.min(next_boundary)),
        );
        if self.index.is_some() {
            let at = self.servers.len();
            self.servers.push(server);
            self.position.insert(vcpu, at);
            self.list(at);
            let index = self.index.as_deref_mut().expect("a large set");
            index.boundaries.insert((next_boundary, vcpu));
            return;
        }
        // The newest stamp: the server goes behind every server of its priority or above,
        // found by a binary search (a sort per insertion made n insertions O(n² log n)).
        let at = self
            .servers
            .partition_point(|s| s.params.priority <= params.priority);
        self.servers.insert(at, server);
        for i in at..self.servers.len() {
            self.position.insert(self.servers[i].vcpu, i);
        }
        if self.servers.len() > INDEXED_ABOVE {
            self.rebuild_index();
        }
    }

    fn stamp(&mut self) -> u64 {
        self.next_stamp += 1;
        self.next_stamp
    }

    /// Puts the VCPU behind every VCPU of its priority: it (re)enters the RunQ.
    pub fn requeue(&mut self, vcpu: VcpuId) {
        let stamp = self.stamp();
        let from = *self.position.get(vcpu);
        if self.index.is_some() {
            self.unlist(from);
            self.servers[from].queued = stamp;
            self.list(from);
            return;
        }
        let priority = self.servers[from].params.priority;
        self.servers[from].queued = stamp;
        // Its new place is after the last VCPU of the same or a higher priority.
        let mut to = from;
        while to + 1 < self.servers.len() && self.servers[to + 1].params.priority <= priority {
            to += 1;
        }
        if to > from {
            self.servers[from..=to].rotate_left(1);
            for i in from..=to {
                self.position.insert(self.servers[i].vcpu, i);
            }
        }
    }

    pub fn remove(&mut self, vcpu: VcpuId) {
        if self.index.is_none() {
            self.servers.retain(|s| s.vcpu != vcpu);
            self.reorder();
            return;
        }
        let Some(at) = self.position.remove(vcpu) else {
            return;
        };
        self.unlist(at);
        let gone = self.servers.swap_remove(at);
        let index = self.index.as_deref_mut().expect("a large set");
        index.boundaries.remove(&(gone.next_boundary, gone.vcpu));
        if at < self.servers.len() {
            // The last server moved into the gap: its entries point at its new index.
            let moved = &self.servers[at];
            let (key, listed) = (moved.key(), moved.listed);
            self.position.insert(moved.vcpu, at);
            let index = self.index.as_deref_mut().expect("a large set");
            index.all.insert(key, at);
            for (k, accepted) in index.accepted.iter_mut().enumerate() {
                if listed & (1 << k) != 0 {
                    accepted.insert(key, at);
                }
            }
        }
        self.refresh_earliest_boundary();
    }

    /// Restores the order after priorities changed: a sort of the array, or a new index.
    fn reorder(&mut self) {
        if self.index.is_some() {
            self.rebuild_index();
        } else {
            self.servers.sort_by_key(|s| s.key());
            self.position = VcpuTable::new();
            for (i, s) in self.servers.iter().enumerate() {
                self.position.insert(s.vcpu, i);
            }
        }
        self.refresh_earliest_boundary();
    }

    /// Makes the set large: an index of every server, built afresh.
    fn rebuild_index(&mut self) {
        let boundaries = self.servers.iter().map(|s| (s.next_boundary, s.vcpu));
        self.index = Some(Box::new(Index {
            boundaries: boundaries.collect(),
            ..Index::default()
        }));
        for at in 0..self.servers.len() {
            self.servers[at].listed = 0;
            self.list(at);
        }
    }

    /// A large set: enters the server at `at` in the index under its current key.
    fn list(&mut self, at: usize) {
        let index = self.index.as_deref_mut().expect("a large set");
        index.all.insert(self.servers[at].key(), at);
        self.relist(at);
    }

    /// A large set: takes the server at `at` out of the index (before its key changes).
    fn unlist(&mut self, at: usize) {
        let index = self.index.as_deref_mut().expect("a large set");
        let s = &mut self.servers[at];
        let key = s.key();
        index.all.remove(&key);
        for (k, accepted) in index.accepted.iter_mut().enumerate() {
            if s.listed & (1 << k) != 0 {
                accepted.remove(&key);
            }
        }
        s.listed = 0;
    }

    /// A large set: the searches' sets hold the server at `at` exactly when they accept it.
    fn relist(&mut self, at: usize) {
        let listed = self.listed_searches();
        let index = self.index.as_deref_mut().expect("a large set");
        let s = &mut self.servers[at];
        let key = s.key();
        for (k, search) in Search::LISTED.into_iter().enumerate().take(listed) {
            let bit = 1 << k;
            if search.accepts(s) == (s.listed & bit != 0) {
                continue;
            }
            if s.listed & bit == 0 {
                index.accepted[k].insert(key, at);
            } else {
                index.accepted[k].remove(&key);
            }
            s.listed ^= bit;
        }
    }

    fn refresh_earliest_boundary(&mut self) {
        self.earliest_boundary = match self.index.as_deref() {
            None => self.servers.iter().map(|s| s.next_boundary).min(),
            Some(index) => index.boundaries.first().map(|&(at, _)| at),
        };
    }

    #[inline]
    pub fn get(&self, vcpu: VcpuId) -> &Server {
        &self.servers[*self.position.get(vcpu)]
    }

    /// The server of `vcpu`, for change (see [`ServerMut`]).
    #[inline]
    pub fn get_mut(&mut self, vcpu: VcpuId) -> ServerMut<'_> {
        let at = *self.position.get(vcpu);
        ServerMut { set: self, at }
    }

    pub fn contains(&self, vcpu: VcpuId) -> bool {
        self.position.contains(vcpu)
    }

    /// All servers, highest priority first.
    #[inline(always)]
    pub fn iter(&self) -> Ordered<'_> {
        let order = match &self.index {
            None => Order::Array(self.servers.iter()),
            Some(index) => Order::Index(index.all.values()),
        };
        Ordered {
            servers: &self.servers,
            order,
        }
    }

    /// The first server, in priority order, that `search` and `eligible` accept. Inlined
    /// into each caller, where `search` is a constant: the small set's scan is then the
    /// one it was before the index existed.
    #[inline(always)]
    fn first(&self, search: Search, eligible: impl Fn(VcpuId) -> bool) -> Option<&Server> {
        match &self.index {
            None => self
                .servers
                .iter()
                .find(|s| search.accepts(s) && eligible(s.vcpu)),
            Some(index) => self.first_indexed(index, search, eligible),
        }
    }

    /// [`Self::first`] in a large set; apart, so that the small set's callers stay small.
    #[inline(never)]
    fn first_indexed(
        &self,
        index: &Index,
        search: Search,
        eligible: impl Fn(VcpuId) -> bool,
    ) -> Option<&Server> {
        index.accepted[search as usize]
            .values()
            .map(|&at| &self.servers[at])
            .find(|s| eligible(s.vcpu))
    }

    /// `queuePick(RunQ)`: the highest-priority VCPU with work and budget left.
    #[inline]
    pub fn pick_with_work(&self) -> Option<&Server> {
        self.pick_with_work_among(|_| true)
    }

    /// [`Self::pick_with_work`] among the VCPUs `eligible` accepts.
    #[inline]
    pub fn pick_with_work_among(&self, eligible: impl Fn(VcpuId) -> bool) -> Option<&Server> {
        self.first(Search::WorkAndBudget, eligible)
    }

    /// H: the highest-priority VCPU with budget left, with or without work.
    #[inline]
    pub fn highest_with_budget(&self) -> Option<&Server> {
        self.highest_with_budget_among(|_| true)
    }

    /// [`Self::highest_with_budget`] among the VCPUs `eligible` accepts.
    #[inline]
    pub fn highest_with_budget_among(&self, eligible: impl Fn(VcpuId) -> bool) -> Option<&Server> {
        self.first(Search::WithBudget, eligible)
    }

    /// The highest-priority VCPU with work, with or without budget, among the VCPUs
    /// `eligible` accepts.
    #[inline]
    pub fn first_with_work_among(&self, eligible: impl Fn(VcpuId) -> bool) -> Option<&Server> {
        self.first(Search::Work, eligible)
    }

    /// Whether `a` has a higher priority than `b`.
    pub fn higher(&self, a: VcpuId, b: VcpuId) -> bool {
        self.get(a).key() < self.get(b).key()
    }

    /// Takes up to `amount` from the VCPU's budget and returns what was taken; reports
    /// exhaustion. Callers add the result to whichever counter fits.
    pub fn take_budget(&mut self, cx: &mut Cx, vcpu: VcpuId, amount: Nanos) -> Nanos {
        self.get_mut(vcpu).take_budget(cx, amount)
    }

    /// The earliest period boundary of any server.
    #[inline]
    pub fn next_boundary(&self) -> Option<Nanos> {
        self.earliest_boundary
    }

    /// The periodic replenishment rule shared by Deferrable, Periodic, Polling, WCPS and
    /// CRPS: at every boundary `offset + k·P` at or before `now`, the remaining budget is
    /// **set** to B (unused budget is lost), pending parameters take effect, and the next
    /// boundary moves to the first grid point after `now` (whole missed periods are skipped:
    /// with tick-timed replenishment a boundary may be processed late). A replenished VCPU
    /// with work that is not part of the decision in effect (`in_effect`) is requeued (it
    /// re-enters the RunQ); the running one is requeued at the next `do_schedule`. Calls
    /// `replenished` with each replenished server, in priority order.
    pub fn replenish_due(
        &mut self,
        cx: &mut Cx,
        in_effect: impl Fn(VcpuId) -> bool,
        mut replenished: impl FnMut(&Server),
    ) -> bool {
        let now = cx.now;
        let mut any = false;
        let mut reorder = false;
        let mut to_requeue = std::mem::take(&mut self.to_requeue);
        match self.index.as_deref() {
            None => {
                for s in self.servers.iter_mut() {
                    if s.next_boundary <= now {
                        reorder |= replenish_one(s, cx, &in_effect, &mut to_requeue);
                        replenished(s);
                        any = true;
                    }
                }
            }
            Some(index) => {
                // The due servers from the boundaries' order, then in priority order, as
                // the array would be: the requeues hand out stamps.
                let mut due: Vec<((u32, u64), usize)> = index
                    .boundaries
                    .range(..=(now, VcpuId(u32::MAX)))
                    .map(|&(_, vcpu)| {
                        let at = *self.position.get(vcpu);
                        (self.servers[at].key(), at)
                    })
                    .collect();
                due.sort_unstable_by_key(|&(key, _)| key);
                for (_, at) in due {
                    let s = &mut self.servers[at];
                    let (vcpu, before) = (s.vcpu, s.next_boundary);
                    reorder |= replenish_one(s, cx, &in_effect, &mut to_requeue);
                    replenished(s);
                    any = true;
                    let after = s.next_boundary;
                    let index = self.index.as_deref_mut().expect("a large set");
                    index.boundaries.remove(&(before, vcpu));
                    index.boundaries.insert((after, vcpu));
                    self.relist(at);
                }
            }
        }
        if reorder {
            self.reorder();
        } else if any {
            self.refresh_earliest_boundary();
        }
        for &vcpu in &to_requeue {
            self.requeue(vcpu);
        }
        to_requeue.clear();
        self.to_requeue = to_requeue;
        any
    }

    /// `adjust` for the periodic family: store the new parameters for the next
    /// replenishment and cut the remaining budget down to the new budget at once.
    pub fn adjust(&mut self, vcpu: VcpuId, params: &VcpuParams) {
        let mut s = self.get_mut(vcpu);
        s.remaining = s.remaining.min(params.budget);
        s.pending = Some(params.clone());
    }

    pub fn view(&self, vcpu: VcpuId) -> VcpuView {
        VcpuView {
            remaining_budget: Some(self.get(vcpu).remaining),
            ..VcpuView::default()
        }
    }

    /// Budgets in `[0, B]`, the servers in priority order (for a large set: its index holds
    /// every server under its key, each search's set exactly the servers it accepts, and
    /// the boundaries' set every server's next boundary), the earliest boundary up to date.
    pub fn check_invariants(&self) -> Result<(), String> {
        let earliest = self.servers.iter().map(|s| s.next_boundary).min();
        if self.earliest_boundary != earliest {
            return Err(format!(
                "cached earliest boundary {:?} differs from {:?}",
                self.earliest_boundary, earliest
            ));
        }
        let ordered: Vec<&Server> = self.iter().collect();
        if ordered.len() != self.servers.len() {
            return Err(format!(
                "{} servers in order, {} in the set",
                ordered.len(),
                self.servers.len()
            ));
        }
        for w in ordered.windows(2) {
            if w[0].key() >= w[1].key() {
                return Err(format!(
                    "servers out of priority order: {:?} before {:?}",
                    w[0].vcpu, w[1].vcpu
                ));
            }
        }
        for (at, s) in self.servers.iter().enumerate() {
            if self.position.try_get(s.vcpu) != Some(&at) {
                return Err(format!("vcpu {:?}: position out of date", s.vcpu));
            }
            if s.remaining > s.params.budget {
                return Err(format!(
                    "vcpu {:?}: remaining budget {} above budget {}",
                    s.vcpu, s.remaining, s.params.budget
                ));
            }
        }
        if let Some(index) = &self.index {
            if index
                .all
                .iter()
                .any(|(key, &at)| self.servers[at].key() != *key)
            {
                return Err("the index's keys are out of date".to_string());
            }
            for (k, search) in Search::LISTED
                .into_iter()
                .enumerate()
                .take(self.listed_searches())
            {
                let listed: Vec<usize> = index.accepted[k].values().copied().collect();
                let expected: Vec<usize> = index
                    .all
                    .values()
                    .copied()
                    .filter(|&at| search.accepts(&self.servers[at]))
                    .collect();
                if listed != expected {
                    return Err(format!("the index of {search:?} is out of date"));
                }
            }
            let boundaries: BTreeSet<(Nanos, VcpuId)> = self
                .servers
                .iter()
                .map(|s| (s.next_boundary, s.vcpu))
                .collect();
            if index.boundaries != boundaries {
                return Err("the index of boundaries is out of date".to_string());
            }
        }
        Ok(())
    }
}

/// One server's replenishment at a boundary due at `cx.now` ([`ServerSet::replenish_due`]):
/// pending parameters, the requeue, the next boundary, the budget. Returns whether its
/// priority changed.
#[inline(always)]
fn replenish_one(
    s: &mut Server,
    cx: &mut Cx,
    in_effect: &impl Fn(VcpuId) -> bool,
    to_requeue: &mut Vec<VcpuId>,
) -> bool {
    let now = cx.now;
    let mut reorder = false;
    if let Some(p) = s.pending.take() {
        reorder = p.priority != s.params.priority;
        s.params = p;
    }
    if s.has_work && !in_effect(s.vcpu) {
        to_requeue.push(s.vcpu);
    }
    let period = s.params.period;
    // Move to the first boundary strictly after now.
    let behind = (now - s.next_boundary).as_ns() / period.as_ns();
    s.next_boundary += Nanos(period.as_ns() * (behind + 1));
    s.remaining = s.params.budget;
    let (vcpu, budget) = (s.vcpu, s.remaining);
    cx.emit(|| CoreEvent::Replenish { vcpu, budget });
    reorder
}

/// Which budgets the decision in effect consumes, and on whose account (for `burn` and
/// the counters). One variant per way the fixed-priority servers spend budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Charge {
    /// Nothing is charged: IDLE because no VCPU has budget.
    Nothing,
    /// The running VCPU pays with its own budget (`consumed`).
    Own(VcpuId),
    /// The pcpu idles and H's budget is idled away (`idled`; PTPS, WCPS, CRPS).
    IdledAway(VcpuId),
    /// WCPS: `runner`, of lower priority than the work-less `server`, runs and both budgets
    /// are consumed (`consumed` on both).
    Both { server: VcpuId, runner: VcpuId },
    /// CRPS: `runner` runs on the work-less `lender`'s budget only (`lent` on the lender,
    /// `borrowed` on the runner); the runner's own budget is untouched.
    Lent { lender: VcpuId, runner: VcpuId },
}

impl Charge {
    /// The VCPUs named by this charge: the budget owner first, then the runner (when they
    /// differ). At the next `do_schedule` they are put back in this order.
    pub fn vcpus(self) -> [Option<VcpuId>; 2] {
        match self {
            Charge::Nothing => [None, None],
            Charge::Own(v) | Charge::IdledAway(v) => [Some(v), None],
            Charge::Both { server, runner } => [Some(server), Some(runner)],
            Charge::Lent { lender, runner } => [Some(lender), Some(runner)],
        }
    }

    /// Whether `vcpu`'s budget (or run) is part of this charge.
    pub fn involves(self, vcpu: VcpuId) -> bool {
        match self {
            Charge::Nothing => false,
            Charge::Own(v) | Charge::IdledAway(v) => v == vcpu,
            Charge::Both { server, runner } => server == vcpu || runner == vcpu,
            Charge::Lent { lender, runner } => lender == vcpu || runner == vcpu,
        }
    }
}

/// A scheduling decision of the fixed-priority servers before it is handed to the
/// machine: what runs and whose budget pays. Plans are pure functions of the
/// [`ServerSet`], so a hook can tell whether an event matters by comparing the plan it
/// would make now with the plan in effect (`plan != active`): only then is a reschedule
/// asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The VCPU to run; `None` runs IDLE.
    pub run: Option<VcpuId>,
    pub charge: Charge,
}

impl Plan {
    pub const IDLE: Plan = Plan {
        run: None,
        charge: Charge::Nothing,
    };

    /// `vcpu` runs on its own budget.
    pub fn own(vcpu: VcpuId) -> Plan {
        Plan {
            run: Some(vcpu),
            charge: Charge::Own(vcpu),
        }
    }

    /// IDLE runs while `server`'s budget is idled away.
    pub fn idled_away(server: VcpuId) -> Plan {
        Plan {
            run: None,
            charge: Charge::IdledAway(server),
        }
    }

    /// The plan after `vcpu` left: a charge naming it falls back to the runner's own
    /// budget (or nothing); the machine reschedules at its next tick at the latest.
    pub fn without(self, vcpu: VcpuId) -> Plan {
        if !self.charge.involves(vcpu) {
            return self;
        }
        match self.run.filter(|&r| r != vcpu) {
            Some(r) => Plan::own(r),
            None => Plan::IDLE,
        }
    }
}

/// The three searches a plan makes, each for the highest-priority server (in
/// [`ServerSet`]'s order) among the VCPUs it may use: on one pcpu every VCPU; on several,
/// those eligible on the pcpu planning (see [`PeriodicFamily`]). A plan is a function of
/// their answers alone, so a search may be answered by a scan ([`Among`]) or from answers
/// prepared for every pcpu at once ([`PeriodicFamily`]'s `tickle`).
pub trait Candidates {
    /// H: the first server with budget left, with or without work.
    fn highest_with_budget(&self) -> Option<&Server>;
    /// `queuePick(RunQ)`: the first server with work and budget left.
    fn pick_with_work(&self) -> Option<&Server>;
    /// The first server with work, with or without budget (CRPS's last-resort borrower).
    fn first_with_work(&self) -> Option<&Server>;
}

/// The servers `eligible` accepts, searched by a scan in priority order.
pub struct Among<'a, F> {
    pub servers: &'a ServerSet,
    pub eligible: F,
}

impl<F: Fn(VcpuId) -> bool> Candidates for Among<'_, F> {
    #[inline(always)]
    fn highest_with_budget(&self) -> Option<&Server> {
        self.servers.highest_with_budget_among(&self.eligible)
    }

    #[inline(always)]
    fn pick_with_work(&self) -> Option<&Server> {
        self.servers.pick_with_work_among(&self.eligible)
    }

    #[inline(always)]
    fn first_with_work(&self) -> Option<&Server> {
        self.servers.first_with_work_among(&self.eligible)
    }
}

/// What each search asks of a server: the three of a plan (see [`Candidates`]), in the
/// order of [`Search::ALL`], and the Polling Server's discard
/// ([`ServerSet::discard_ahead_of`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Search {
    WithBudget,
    WorkAndBudget,
    Work,
    BudgetWithoutWork,
}

impl Search {
    /// The searches of a plan.
    const ALL: [Search; 3] = [Search::WithBudget, Search::WorkAndBudget, Search::Work];
    /// The searches a large [`ServerSet`] keeps an ordered set for (bit k of
    /// `Server::listed`: the k-th).
    const LISTED: [Search; 4] = [
        Search::WithBudget,
        Search::WorkAndBudget,
        Search::Work,
        Search::BudgetWithoutWork,
    ];

    #[inline(always)]
    fn accepts(self, s: &Server) -> bool {
        match self {
            Search::WithBudget => !s.remaining.is_zero(),
            Search::WorkAndBudget => s.has_work && !s.remaining.is_zero(),
            Search::Work => s.has_work,
            Search::BudgetWithoutWork => !s.has_work && !s.remaining.is_zero(),
        }
    }
}

/// `queuePick(RunQ)` as a plan (Deferrable, Sporadic, Polling): the highest-priority VCPU
/// with work and budget runs on its own budget; else IDLE, charging nobody.
#[inline(always)]
pub fn plan_own_budget(c: &impl Candidates) -> Plan {
    c.pick_with_work().map_or(Plan::IDLE, |s| Plan::own(s.vcpu))
}

/// PTPS: H with work runs; H without work idles its budget away; no H: IDLE.
#[inline(always)]
pub fn plan_ptps(c: &impl Candidates) -> Plan {
    match c.highest_with_budget() {
        None => Plan::IDLE,
        Some(h) if h.has_work => Plan::own(h.vcpu),
        Some(h) => Plan::idled_away(h.vcpu),
    }
}

/// WCPS: H with work runs; else L — the highest-priority VCPU with work and budget,
/// necessarily of lower priority than H since nobody above H has budget — runs on both
/// budgets; no L: IDLE, H's budget idled away.
#[inline(always)]
pub fn plan_wcps(c: &impl Candidates) -> Plan {
    match c.highest_with_budget() {
        None => Plan::IDLE,
        Some(h) if h.has_work => Plan::own(h.vcpu),
        Some(h) => match c.pick_with_work() {
            Some(l) => Plan {
                run: Some(l.vcpu),
                charge: Charge::Both {
                    server: h.vcpu,
                    runner: l.vcpu,
                },
            },
            None => Plan::idled_away(h.vcpu),
        },
    }
}

/// CRPS: H with work runs; else H lends its budget to the highest-priority VCPU with work
/// and budget, or failing that to the highest-priority VCPU with work (budget 0, possibly
/// above H); nobody with work: IDLE, H's budget idled away. No H at all: IDLE even if some
/// VCPU has work.
#[inline(always)]
pub fn plan_crps(c: &impl Candidates) -> Plan {
    match c.highest_with_budget() {
        None => Plan::IDLE,
        Some(h) if h.has_work => Plan::own(h.vcpu),
        Some(h) => match c.pick_with_work().or_else(|| c.first_with_work()) {
            Some(r) => Plan {
                run: Some(r.vcpu),
                charge: Charge::Lent {
                    lender: h.vcpu,
                    runner: r.vcpu,
                },
            },
            None => Plan::idled_away(h.vcpu),
        },
    }
}

impl ServerSet {
    /// The servers `eligible` accepts, for the plan functions.
    #[inline]
    pub fn among<F: Fn(VcpuId) -> bool>(&self, eligible: F) -> Among<'_, F> {
        Among {
            servers: self,
            eligible,
        }
    }

    /// [`plan_own_budget`] among every VCPU.
    pub fn plan_own_budget(&self) -> Plan {
        plan_own_budget(&self.among(|_| true))
    }

    /// [`plan_ptps`] among every VCPU.
    pub fn plan_ptps(&self) -> Plan {
        plan_ptps(&self.among(|_| true))
    }

    /// [`plan_wcps`] among every VCPU.
    pub fn plan_wcps(&self) -> Plan {
        plan_wcps(&self.among(|_| true))
    }

    /// [`plan_crps`] among every VCPU.
    pub fn plan_crps(&self) -> Plan {
        plan_crps(&self.among(|_| true))
    }

    /// The slice of a plan: run time until the first budget it consumes runs out.
    pub fn slice(&self, charge: Charge) -> Option<Nanos> {
        match charge {
            Charge::Nothing => None,
            Charge::Own(v) | Charge::IdledAway(v) => Some(self.get(v).remaining),
            Charge::Both { server, runner } => {
                Some(self.get(server).remaining.min(self.get(runner).remaining))
            }
            Charge::Lent { lender, .. } => Some(self.get(lender).remaining),
        }
    }

    /// The machine's decision for a plan.
    pub fn decision(&self, plan: Plan) -> Decision {
        Decision {
            run: plan.run,
            slice: self.slice(plan.charge),
        }
    }

    /// Puts the VCPUs of the decision that was in effect back in the RunQ, behind their
    /// equals (called by `do_schedule` before it decides).
    pub fn put_back(&mut self, charge: Charge) {
        for vcpu in charge.vcpus().into_iter().flatten() {
            if self.contains(vcpu) {
                self.requeue(vcpu);
            }
        }
    }

    /// Charges `ran` nanoseconds of `charge` to the budgets and counters it names. Overhead
    /// charged to the decision consumes the same budgets and is counted as `overhead`.
    /// Returns whether a budget it charged ran out (the decision's slice is over: the
    /// machine reschedules at its end, which may come after overhead).
    pub fn charge(&mut self, cx: &mut Cx, charge: Charge, ran: Nanos, spent: Spent) -> bool {
        let overhead = spent == Spent::Overhead;
        let mut exhausted = false;
        let mut take =
            |s: &mut Server, cx: &mut Cx, counter: fn(&mut BudgetCounters) -> &mut Nanos| {
                let taken = s.take_budget(cx, ran);
                *if overhead {
                    &mut s.counters.overhead
                } else {
                    counter(&mut s.counters)
                } += taken;
                exhausted |= !taken.is_zero() && s.remaining.is_zero();
                taken
            };
        // The servers by index, not `get_mut`: a large set relists them once, below.
        let at = |set: &ServerSet, v: VcpuId| *set.position.get(v);
        match charge {
            Charge::Nothing => {}
            Charge::Own(v) => {
                let i = at(self, v);
                take(&mut self.servers[i], cx, |c| &mut c.consumed);
            }
            Charge::IdledAway(h) => {
                let i = at(self, h);
                take(&mut self.servers[i], cx, |c| &mut c.idled);
            }
            Charge::Both { server, runner } => {
                let i = at(self, server);
                take(&mut self.servers[i], cx, |c| &mut c.consumed);
                let i = at(self, runner);
                take(&mut self.servers[i], cx, |c| &mut c.consumed);
            }
            Charge::Lent { lender, runner } => {
                let i = at(self, lender);
                let taken = take(&mut self.servers[i], cx, |c| &mut c.lent);
                if !overhead {
                    let i = at(self, runner);
                    self.servers[i].counters.borrowed += taken;
                }
            }
        }
        if self.index.is_some() {
            for vcpu in charge.vcpus().into_iter().flatten() {
                let i = at(self, vcpu);
                self.relist(i);
            }
        }
        exhausted
    }

    /// Throws the VCPU's remaining budget away (Polling Server) and returns the amount.
    /// `at` stamps the event: the instant the discard took effect.
    pub fn discard(&mut self, cx: &mut Cx, vcpu: VcpuId, at: Nanos) -> Nanos {
        let mut s = self.get_mut(vcpu);
        let amount = s.remaining;
        s.remaining = Nanos::ZERO;
        s.counters.discarded += amount;
        if !amount.is_zero() {
            cx.log
                .emit(at, || CoreEvent::BudgetDiscarded { vcpu, amount });
        }
        amount
    }

    /// The Polling Server's discard: every server ahead of `runner` in priority order (every
    /// server, when `runner` is `None` or unknown) that has budget but no work and that
    /// `eligible` accepts loses its budget ([`Self::discard`], stamped `at`), in priority
    /// order. A small set scans; a large one walks the ordered set of the servers with budget
    /// and no work, so that a burn with nothing to discard costs O(log n), not a scan of
    /// every server ahead of the runner.
    #[inline(always)]
    pub fn discard_ahead_of(
        &mut self,
        cx: &mut Cx,
        runner: Option<VcpuId>,
        at: Nanos,
        eligible: impl Fn(VcpuId) -> bool,
    ) {
        if self.index.is_some() {
            return self.discard_ahead_of_indexed(cx, runner, at, eligible);
        }
        // One at a time (no list to allocate): a discarded server has no budget left,
        // so the next search finds the next one.
        while let Some(vcpu) = self
            .servers
            .iter()
            .take_while(|s| Some(s.vcpu) != runner)
            .find(|s| !s.has_work && !s.remaining.is_zero() && eligible(s.vcpu))
            .map(|s| s.vcpu)
        {
            self.discard(cx, vcpu, at);
        }
    }

    /// [`Self::discard_ahead_of`] in a large set; apart, so that the small set's `burn`
    /// stays as small as before.
    #[inline(never)]
    fn discard_ahead_of_indexed(
        &mut self,
        cx: &mut Cx,
        runner: Option<VcpuId>,
        at: Nanos,
        eligible: impl Fn(VcpuId) -> bool,
    ) {
        debug_assert!(
            self.lists_idle_budget,
            "a set made without the list of servers with budget and no work"
        );
        let bound = runner
            .and_then(|v| self.position.try_get(v))
            .map(|&i| self.servers[i].key());
        // A discard changes no other server's budget, work or eligibility: one pass finds
        // them all.
        let mut to_discard = std::mem::take(&mut self.to_requeue);
        let index = self.index.as_deref().expect("a large set");
        to_discard.extend(
            index.accepted[Search::BudgetWithoutWork as usize]
                .iter()
                .take_while(|(key, _)| bound.is_none_or(|b| **key < b))
                .map(|(_, &i)| self.servers[i].vcpu)
                .filter(|&v| eligible(v)),
        );
        for &vcpu in &to_discard {
            self.discard(cx, vcpu, at);
        }
        to_discard.clear();
        self.to_requeue = to_discard;
    }

    /// Replaces a VCPU's parameters now (keeping its live budget), re-sorting when its
    /// priority changed. For policies whose replenishment is not the periodic rule.
    pub fn set_params(&mut self, vcpu: VcpuId, params: VcpuParams) {
        let mut s = self.get_mut(vcpu);
        let reorder = s.params.priority != params.priority;
        s.params = params;
        drop(s);
        if reorder {
            self.reorder();
        }
    }
}

/// What distinguishes one member of the periodic-replenishment family (PTPS, Polling,
/// WCPS, CRPS): how a decision is planned, and what happens to budgets while time passes
/// besides the plan's own charge.
pub trait PeriodicRule: Send + 'static {
    const KIND: PolicyKind;

    /// Whether the rule discards the budget of servers without work
    /// ([`ServerSet::discard_ahead_of`]): a large set then lists them.
    const DISCARDS_IDLE_BUDGET: bool = false;

    /// The decision for the current state among the `candidates` (on one pcpu: every VCPU;
    /// on several: those allowed on the pcpu and in no other pcpu's plan). Must be a pure
    /// function of the answers of their searches.
    fn plan(candidates: &impl Candidates) -> Plan;

    /// Called by `burn` before the plan's charge, with the plan that was in effect on the
    /// pcpu during the `ran` nanoseconds ending at `cx.now` and the same `eligible` as
    /// [`Self::plan`] for that pcpu. The default does nothing.
    fn time_passed(
        _servers: &mut ServerSet,
        _cx: &mut Cx,
        _active: Plan,
        _ran: Nanos,
        _eligible: impl Fn(VcpuId) -> bool,
    ) {
    }
}

/// The machinery shared by the periodic-replenishment servers; the rule `R` decides.
///
/// - **Replenishment**: [`ServerSet::replenish_due`] (set to B at every boundary).
/// - **Budget**: `burn` charges the plan in effect ([`ServerSet::charge`]).
/// - **Reschedule requests**: every hook that can change the state (`wake`, `sleep`,
///   `handle_timer`, `adjust`) compares the plan it would make now with the plan in effect
///   and asks for a reschedule only when they differ — so a wake matters exactly when the
///   rule says it does (under PTPS, the wake of an H that idles its budget away; under
///   WCPS, the wake of H while L runs on H's budget; ...). `adjust` also asks when it cut a
///   budget the plan in effect is spending, to shorten the slice. A replenishment that only
///   lengthens the budget in use does not ask: the old slice ends early and the next
///   `do_schedule` re-arms it.
/// - **Invariant**: the plan in effect is the plan the rule makes now, unless a reschedule
///   is owed (asked for, a budget of the plan ran out, or a VCPU in the plan was removed,
///   and `do_schedule` has not run yet).
///
/// **Several pcpus: global fixed priority** (`docs/platform.md`). Each pcpu p has its own plan
/// in effect; the rule plans for p among the VCPUs *eligible on p*: allowed there by their
/// affinity and named by no other pcpu's plan (neither running nor paying elsewhere). So,
/// taking the pcpus one by one as they decide, each assigns greedily the servers in
/// priority order the others left: H_p is the highest-priority eligible VCPU with budget,
/// and a server is H (or runner, or lender) on one pcpu at a time. `burn(p)` charges p's
/// plan (and runs the rule's `time_passed` with p's eligibility); `do_schedule(p)` puts
/// back p's VCPUs and plans again. [`Policy::tickle`] names every pcpu whose plan would
/// now differ from the one in effect (the one-pcpu reschedule rule, per pcpu), and those
/// whose plan spends a budget `adjust` cut. It converges: right after `do_schedule(p)`,
/// p's plan is the one it would make; VCPUs p lets go are requeued behind their equals,
/// so they change another pcpu's plan only by beating it or by giving it something to do.
/// Which of two pcpus that both want a released VCPU gets it is decided by which decides
/// first (the machine's order: pcpu by pcpu at one instant).
///
/// **Pool changes** ([`Policy::change_pcpus`]): budgets and boundaries stay; the plans are
/// renumbered (one pcpu's `active` becomes a plan of several, or the remaining plan
/// becomes `active`), and the leaving pcpu's plan is dropped, its VCPUs put back behind
/// their equals as at a `do_schedule`.
pub struct PeriodicFamily<R> {
    servers: ServerSet,
    /// One pcpu: what the last `do_schedule` decided.
    active: Plan,
    /// One pcpu: a reschedule was asked for (or is due) and `do_schedule` has not run since.
    reschedule_owed: bool,
    /// Several pcpus: what the last `do_schedule` of each pcpu decided (empty on one pcpu,
    /// which keeps its plan in `active`, so that its hooks stay as small as before).
    plans: Vec<Plan>,
    /// Several pcpus: how many plans of `plans` name each VCPU, kept with `plans` so that
    /// eligibility costs one look-up instead of a scan of every pcpu's plan.
    claims: Claims,
    /// Several pcpus: each VCPU's hard affinity.
    affinity: Affinities,
    /// Several pcpus: pcpus whose plan spends a budget `adjust` cut (the slice must
    /// shorten), until their next `do_schedule`.
    asked: CpuSet,
    rule: std::marker::PhantomData<R>,
}

/// How many pcpus' plans name each VCPU (by VCPU index; a VCPU a plan names twice counts
/// once). Kept up to date by every write to [`PeriodicFamily`]'s `plans`.
#[derive(Clone, Debug, Default)]
struct Claims(Vec<u16>);

impl Claims {
    /// The number of plans naming `vcpu`.
    #[inline]
    fn of(&self, vcpu: VcpuId) -> u16 {
        self.0.get(vcpu.index()).copied().unwrap_or(0)
    }

    /// The VCPUs `plan` names, each once.
    #[inline]
    fn named(plan: Plan) -> impl Iterator<Item = VcpuId> {
        let [first, second] = plan.charge.vcpus();
        first
            .into_iter()
            .chain(second.filter(|&s| Some(s) != first))
    }

    fn add(&mut self, plan: Plan) {
        for v in Self::named(plan) {
            if self.0.len() <= v.index() {
                self.0.resize(v.index() + 1, 0);
            }
            self.0[v.index()] += 1;
        }
    }

    fn sub(&mut self, plan: Plan) {
        for v in Self::named(plan) {
            self.0[v.index()] -= 1;
        }
    }

    /// Counted afresh from `plans` (after a change of several plans at once).
    fn recount(&mut self, plans: &[Plan]) {
        self.0.clear();
        for &plan in plans {
            self.add(plan);
        }
    }
}

/// The searches of one pcpu, answered beforehand (indices in the set's array, in the order
/// of [`Search::ALL`]).
struct Prepared<'a> {
    servers: &'a ServerSet,
    answers: [Option<usize>; 3],
}

impl Candidates for Prepared<'_> {
    #[inline]
    fn highest_with_budget(&self) -> Option<&Server> {
        self.answers[0].map(|i| &self.servers.servers[i])
    }

    #[inline]
    fn pick_with_work(&self) -> Option<&Server> {
        self.answers[1].map(|i| &self.servers.servers[i])
    }

    #[inline]
    fn first_with_work(&self) -> Option<&Server> {
        self.answers[2].map(|i| &self.servers.servers[i])
    }
}

/// Whether `vcpu` is eligible on pcpu `pcpu`: allowed there and named by no other pcpu's
/// plan (every plan naming it, if any, is `pcpu`'s own).
#[inline]
fn eligible_on(
    plans: &[Plan],
    claims: &Claims,
    affinity: &Affinities,
    pcpu: usize,
    vcpu: VcpuId,
) -> bool {
    affinity.allows(vcpu, pcpu as u32)
        && claims.of(vcpu) == u16::from(plans[pcpu].charge.involves(vcpu))
}

impl<R: PeriodicRule> PeriodicFamily<R> {
    pub fn new(pcpus: u32) -> PeriodicFamily<R> {
        let plans = if pcpus > 1 {
            vec![Plan::IDLE; pcpus as usize]
        } else {
            Vec::new()
        };
        PeriodicFamily {
            servers: ServerSet::new(R::DISCARDS_IDLE_BUDGET),
            active: Plan::IDLE,
            reschedule_owed: false,
            plans,
            claims: Claims::default(),
            affinity: Affinities::default(),
            asked: CpuSet::EMPTY,
            rule: std::marker::PhantomData,
        }
    }

    pub fn servers(&self) -> &ServerSet {
        &self.servers
    }

    /// The plan in effect on pcpu 0 (the only one, on one pcpu).
    pub fn active(&self) -> Plan {
        self.active_on(0)
    }

    /// The plan in effect on local pcpu `pcpu`.
    pub fn active_on(&self, pcpu: u32) -> Plan {
        if self.several() {
            self.plans[pcpu as usize]
        } else {
            self.active
        }
    }

    /// Whether the pool has several pcpus.
    #[inline]
    fn several(&self) -> bool {
        !self.plans.is_empty()
    }

    /// One pcpu: the plan it would make now.
    #[inline]
    fn plan(&self) -> Plan {
        R::plan(&self.servers.among(|_| true))
    }

    /// Several pcpus: the plan pcpu `pcpu` would make now.
    fn plan_on(&self, pcpu: usize) -> Plan {
        let (plans, claims, affinity) = (&self.plans, &self.claims, &self.affinity);
        R::plan(
            &self
                .servers
                .among(|v| eligible_on(plans, claims, affinity, pcpu, v)),
        )
    }

    /// One pcpu: whether the decision must be made again now; remembers a "yes".
    fn must_reschedule(&mut self, also: bool) -> bool {
        let answer = also || self.plan() != self.active;
        self.reschedule_owed |= answer;
        answer
    }

    /// What a state-changing hook answers: on one pcpu [`Self::must_reschedule`]; on
    /// several, whether some pcpu must reschedule ([`Policy::tickle`]).
    #[inline]
    fn answer(&mut self, also: bool) -> bool {
        if self.several() {
            return !self.tickle().is_empty();
        }
        self.must_reschedule(also)
    }

    /// [`Policy::burn`] on several pcpus.
    #[inline(never)]
    fn burn_on(&mut self, cx: &mut Cx, pcpu: usize, ran: Nanos, spent: Spent) {
        let plan = self.plans[pcpu];
        let (plans, claims, affinity) = (&self.plans, &self.claims, &self.affinity);
        R::time_passed(&mut self.servers, cx, plan, ran, |v| {
            eligible_on(plans, claims, affinity, pcpu, v)
        });
        self.servers.charge(cx, plan.charge, ran, spent);
    }

    /// [`Policy::do_schedule`] on several pcpus.
    #[inline(never)]
    fn do_schedule_on(&mut self, pcpu: usize) -> Decision {
        self.asked.remove(pcpu as u32);
        self.servers.put_back(self.plans[pcpu].charge);
        let plan = self.plan_on(pcpu);
        self.set_plan(pcpu, plan);
        self.servers.decision(plan)
    }

    /// Several pcpus: for each pcpu and each [`Search`], the index in `servers` of the
    /// search's answer among the VCPUs that no plan names and that are allowed on the pcpu:
    /// one pass over the servers per search, each server's affinity settling the pcpus still
    /// without an answer.
    fn unclaimed_answers(&self) -> [[Option<usize>; 3]; CpuSet::MAX as usize] {
        let mut answers = [[None; 3]; CpuSet::MAX as usize];
        for (k, search) in Search::ALL.into_iter().enumerate() {
            let mut open = CpuSet::first(self.plans.len() as u32);
            let mut ordered = self.servers.iter();
            while let Some((i, s)) = ordered.next_at() {
                if open.is_empty() {
                    break;
                }
                if self.claims.of(s.vcpu) != 0 || !search.accepts(s) {
                    continue;
                }
                let settled = self.affinity.get(s.vcpu).intersection(open);
                for p in settled.iter() {
                    answers[p as usize][k] = Some(i);
                }
                open = open.intersection(settled.complement());
            }
        }
        answers
    }

    /// Several pcpus: the searches of pcpu `pcpu` (as [`Self::plan_on`] makes them), from
    /// the answers among the unclaimed VCPUs and the VCPUs of its own plan: its eligible
    /// VCPUs are exactly those two groups, so each answer is the first of the two.
    fn prepared(&self, pcpu: usize, unclaimed: [Option<usize>; 3]) -> Prepared<'_> {
        let mut answers = unclaimed;
        for v in Claims::named(self.plans[pcpu]) {
            let Some(&i) = self.servers.position.try_get(v) else {
                continue;
            };
            if !eligible_on(&self.plans, &self.claims, &self.affinity, pcpu, v) {
                continue;
            }
            let server = &self.servers.servers[i];
            for (k, search) in Search::ALL.into_iter().enumerate() {
                if search.accepts(server)
                    && answers[k].is_none_or(|a| server.key() < self.servers.servers[a].key())
                {
                    answers[k] = Some(i);
                }
            }
        }
        Prepared {
            servers: &self.servers,
            answers,
        }
    }

    /// Several pcpus: pcpu `pcpu`'s plan in effect becomes `plan`.
    #[inline]
    fn set_plan(&mut self, pcpu: usize, plan: Plan) {
        self.claims.sub(self.plans[pcpu]);
        self.claims.add(plan);
        self.plans[pcpu] = plan;
    }

    /// Several pcpus: every VCPU a plan names is known and allowed on that pcpu, and no
    /// VCPU is named by two pcpus' plans.
    fn check_plans(&self) -> Result<(), String> {
        let mut counted = Claims::default();
        counted.recount(&self.plans);
        let len = counted.0.len().max(self.claims.0.len());
        if let Some(i) =
            (0..len).find(|&i| counted.of(VcpuId(i as u32)) != self.claims.of(VcpuId(i as u32)))
        {
            return Err(format!("vcpu {i}: the plans' claims are out of date"));
        }
        for (p, plan) in self.plans.iter().enumerate() {
            for v in plan.charge.vcpus().into_iter().flatten() {
                if !self.servers.contains(v) {
                    return Err(format!("pcpu {p}'s plan {plan:?} names unknown vcpu {v:?}"));
                }
                if !self.affinity.allows(v, p as u32) {
                    return Err(format!(
                        "pcpu {p}'s plan {plan:?} names vcpu {v:?} outside its affinity"
                    ));
                }
                if !eligible_on(&self.plans, &self.claims, &self.affinity, p, v) {
                    return Err(format!("vcpu {v:?} is in the plans of two pcpus"));
                }
            }
        }
        Ok(())
    }
}

impl<R: PeriodicRule> Policy for PeriodicFamily<R> {
    fn kind(&self) -> PolicyKind {
        R::KIND
    }

    fn validate(&self, params: &VcpuParams) -> Result<(), ParamError> {
        params.validate_server()
    }

    fn insert_vcpu(&mut self, cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) {
        self.servers.insert(cx.now, vcpu, params);
        // The machine reschedules after every insertion.
        self.reschedule_owed = true;
    }

    fn remove_vcpu(&mut self, _cx: &mut Cx, vcpu: VcpuId) {
        if self.active.charge.involves(vcpu) {
            self.active = self.active.without(vcpu);
            self.reschedule_owed = true;
        }
        for plan in &mut self.plans {
            *plan = plan.without(vcpu);
        }
        self.claims.recount(&self.plans);
        self.affinity.remove(vcpu);
        self.servers.remove(vcpu);
    }

    fn wake(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.servers.get_mut(vcpu).has_work = true;
        self.servers.requeue(vcpu);
        self.answer(false)
    }

    fn sleep(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.servers.get_mut(vcpu).has_work = false;
        // The machine reschedules anyway the pcpu where `vcpu` is the one running.
        let running = self.active.run == Some(vcpu);
        self.answer(running)
    }

    fn burn(&mut self, cx: &mut Cx, pcpu: PcpuId, ran: Nanos, spent: Spent) {
        if self.several() {
            // A budget that runs out ends that pcpu's slice: the machine reschedules it.
            return self.burn_on(cx, pcpu.index(), ran, spent);
        }
        R::time_passed(&mut self.servers, cx, self.active, ran, |_| true);
        // A budget that ran out ends the decision's slice: the machine reschedules then
        // (after the overhead, if it ran out while overhead was charged to it).
        self.reschedule_owed |= self.servers.charge(cx, self.active.charge, ran, spent);
    }

    fn do_schedule(&mut self, _cx: &mut Cx, pcpu: PcpuId) -> Decision {
        if self.several() {
            return self.do_schedule_on(pcpu.index());
        }
        self.servers.put_back(self.active.charge);
        self.active = self.plan();
        self.reschedule_owed = false;
        self.servers.decision(self.active)
    }

    fn tick_interval(&self) -> TickInterval {
        TickInterval::Quantum
    }

    fn next_timer(&self) -> Option<Nanos> {
        self.servers.next_boundary()
    }

    fn handle_timer(&mut self, cx: &mut Cx) -> bool {
        if self.several() {
            let claims = &self.claims;
            let in_effect = |v| claims.of(v) > 0;
            self.servers.replenish_due(cx, in_effect, |_| {});
            return !self.tickle().is_empty();
        }
        let charge = self.active.charge;
        self.servers
            .replenish_due(cx, |v| charge.involves(v), |_| {});
        self.must_reschedule(false)
    }

    fn adjust(&mut self, _cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) -> bool {
        let before = self.servers.get(vcpu).remaining;
        self.servers.adjust(vcpu, params);
        let cut = self.servers.get(vcpu).remaining < before;
        if self.several() {
            for (p, plan) in self.plans.iter().enumerate() {
                if cut && plan.charge.involves(vcpu) {
                    self.asked.insert(p as u32);
                }
            }
            return !self.tickle().is_empty();
        }
        self.must_reschedule(cut && self.active.charge.involves(vcpu))
    }

    fn set_affinity(&mut self, _cx: &mut Cx, vcpu: VcpuId, affinity: CpuSet) -> bool {
        self.affinity.set(vcpu, affinity);
        if !self.several() {
            return false;
        }
        // Outside its new affinity it neither runs nor pays (the machine stops it where it
        // runs); the pcpu decides again when its plan would now differ.
        for (p, plan) in self.plans.iter_mut().enumerate() {
            if !affinity.contains(p as u32) {
                *plan = plan.without(vcpu);
            }
        }
        self.claims.recount(&self.plans);
        !self.tickle().is_empty()
    }

    fn change_pcpus(&mut self, _cx: &mut Cx, change: PcpuChange) -> bool {
        let mut plans = if self.several() {
            std::mem::take(&mut self.plans)
        } else {
            vec![self.active]
        };
        // The leaving pcpu's VCPUs neither run nor pay there any more: put back, as its
        // `do_schedule` would.
        if let Some(left) = change.apply(&mut plans, || Plan::IDLE) {
            self.servers.put_back(left.charge);
        }
        self.asked = change.renumber_set(self.asked);
        if plans.len() > 1 {
            self.claims.recount(&plans);
            self.plans = plans;
            self.active = Plan::IDLE;
            return false;
        }
        self.claims = Claims::default();
        self.active = plans[0];
        self.must_reschedule(false)
    }

    fn tickle(&self) -> CpuSet {
        let mut targets = self.asked;
        if !self.several() {
            return targets;
        }
        // Every pcpu plans again: the searches over the VCPUs no plan names are answered for
        // all pcpus in one pass each, so that this costs O(VCPUs + pcpus), not their product
        // (it runs after every tick and every decision of every pcpu).
        let unclaimed = self.unclaimed_answers();
        for (p, plan) in self.plans.iter().enumerate() {
            if R::plan(&self.prepared(p, unclaimed[p])) != *plan {
                targets.insert(p as u32);
            }
        }
        targets
    }

    fn view(&self, vcpu: VcpuId) -> VcpuView {
        self.servers.view(vcpu)
    }

    fn counters(&self, vcpu: VcpuId) -> BudgetCounters {
        self.servers.get(vcpu).counters
    }

    fn check_invariants(&self) -> Result<(), String> {
        self.servers.check_invariants()?;
        if self.several() {
            return self.check_plans();
        }
        let now = self.plan();
        if !self.reschedule_owed && now != self.active {
            return Err(format!(
                "{}: plan in effect {:?} differs from the plan for the current state {:?} \
                 and no reschedule was asked for",
                R::KIND,
                self.active,
                now
            ));
        }
        Ok(())
    }
}

/// Global fixed priority on a pool of several pcpus (Deferrable, Sporadic; `docs/platform.md`):
/// what each pcpu runs, each VCPU's hard affinity, and the pcpus owed a reschedule.
///
/// - **Pick** for pcpu p ([`GlobalFp::pick`]): `queuePick(RunQ)` restricted to the VCPUs
///   whose affinity holds p and that run on no other pcpu — the highest-priority VCPU with
///   work and budget, first-in, first-out among equals. So the m highest-priority eligible
///   VCPUs run on the m pcpus.
/// - **Tickle** ([`GlobalFp::tickle`]): as RTDS's, with the key [`Server::key`]
///   ([`global::tickle_targets`]); a waiting VCPU re-enters the RunQ behind its equals, so it
///   never preempts one of the same priority. Plus the pcpus whose running VCPU was
///   replenished (its slice must be re-armed), until their next `do_schedule`.
/// - On one pcpu every VCPU may run there and nothing runs elsewhere: the pick is exactly
///   [`ServerSet::pick_with_work`], and the policies keep their single-pcpu rules.
/// - **Pool changes** ([`GlobalFp::change_pcpus`]): `current` and `asked` are renumbered;
///   the policy puts back the VCPU the leaving pcpu ran.
#[derive(Clone, Debug)]
pub struct GlobalFp {
    /// What the last `do_schedule` chose on each pcpu (None = IDLE).
    pub current: PerPcpu<Option<VcpuId>>,
    pub affinity: Affinities,
    /// Pcpus whose running VCPU was replenished since their last `do_schedule`.
    pub asked: CpuSet,
}

impl GlobalFp {
    pub fn new(pcpus: u32) -> GlobalFp {
        GlobalFp {
            current: PerPcpu::new(pcpus, None),
            affinity: Affinities::default(),
            asked: CpuSet::EMPTY,
        }
    }

    /// The VCPU's hard affinity (local pcpus); where it runs outside it, it stops at once
    /// ([`global::stop_outside`]).
    pub fn set_affinity(&mut self, vcpu: VcpuId, affinity: CpuSet) {
        self.affinity.set(vcpu, affinity);
        global::stop_outside(&mut self.current, vcpu, affinity);
    }

    /// Pcpu `pcpu` runs `run` from now (what its `do_schedule` chose).
    #[inline(always)]
    pub fn run_on(&mut self, pcpu: u32, run: Option<VcpuId>) {
        self.current[pcpu as usize] = run;
        if self.several() {
            self.ran(pcpu, run);
        }
    }

    /// Several pcpus: where the VCPU `run` ran last, for the tickle. Apart, so that the
    /// one-pcpu `do_schedule` stays as small as before.
    #[inline(never)]
    fn ran(&mut self, pcpu: u32, run: Option<VcpuId>) {
        if let Some(v) = run {
            self.affinity.ran(v, pcpu);
        }
    }

    /// Whether the pool has several pcpus.
    #[inline]
    pub fn several(&self) -> bool {
        self.current.several()
    }

    #[inline]
    pub fn is_running(&self, vcpu: VcpuId) -> bool {
        self.current.contains(&Some(vcpu))
    }

    /// The pcpu `vcpu` runs on, if any.
    pub fn pcpu_of(&self, vcpu: VcpuId) -> Option<u32> {
        self.current
            .iter()
            .position(|c| *c == Some(vcpu))
            .map(|p| p as u32)
    }

    /// The VCPU leaves: no pcpu runs it any more.
    pub fn forget(&mut self, vcpu: VcpuId) {
        for c in &mut self.current {
            if *c == Some(vcpu) {
                *c = None;
            }
        }
        self.affinity.remove(vcpu);
    }

    /// `queuePick(RunQ)` for `pcpu`: see the type's note.
    #[inline]
    pub fn pick<'a>(&self, servers: &'a ServerSet, pcpu: u32) -> Option<&'a Server> {
        if !self.several() {
            return servers.pick_with_work();
        }
        self.pick_among_several(servers, pcpu)
    }

    /// [`Self::pick`] on several pcpus; apart, so that the one-pcpu pick, on every
    /// `do_schedule`, stays as small as before there were several.
    #[inline(never)]
    fn pick_among_several<'a>(&self, servers: &'a ServerSet, pcpu: u32) -> Option<&'a Server> {
        servers.iter().find(|s| {
            s.has_work
                && !s.remaining.is_zero()
                && self.affinity.allows(s.vcpu, pcpu)
                && !self
                    .current
                    .iter()
                    .enumerate()
                    .any(|(p, c)| p as u32 != pcpu && *c == Some(s.vcpu))
        })
    }

    /// [`Policy::change_pcpus`]: what each pcpu runs and the pcpus owed a reschedule in
    /// the new numbering. Returns the VCPU the leaving pcpu ran, which now runs nowhere.
    pub fn change_pcpus(&mut self, change: PcpuChange) -> Option<VcpuId> {
        let left = change.apply(&mut self.current, || None).flatten();
        self.asked = change.renumber_set(self.asked);
        self.affinity.change_pcpus(change);
        left
    }

    /// The pcpus that must reschedule now (none on one pcpu: the policy answers itself).
    pub fn tickle(&self, servers: &ServerSet) -> CpuSet {
        if !self.several() {
            return CpuSet::EMPTY;
        }
        let eligible = |s: &Server| s.has_work && !s.remaining.is_zero();
        let running = |p: usize| {
            self.current[p]
                .map(|v| servers.get(v))
                .filter(|s| eligible(s))
                .map(Server::key)
        };
        // `servers` is in key order already.
        let waiting = servers
            .iter()
            .filter(|s| eligible(s) && !self.is_running(s.vcpu))
            .map(|s| (s.key(), self.affinity.placement(s.vcpu)));
        self.asked
            .union(global::tickle_targets(self.current.len(), running, waiting))
    }

    /// No VCPU on two pcpus, none outside its affinity, none unknown.
    pub fn check(&self, servers: &ServerSet) -> Result<(), String> {
        for (p, c) in self.current.iter().enumerate() {
            let Some(v) = c else { continue };
            if !servers.contains(*v) {
                return Err(format!("pcpu {p} runs unknown vcpu {v:?}"));
            }
            if self.current.iter().filter(|o| *o == c).count() > 1 {
                return Err(format!("vcpu {v:?} runs on two pcpus"));
            }
            if self.several() && !self.affinity.allows(*v, p as u32) {
                return Err(format!("pcpu {p} runs vcpu {v:?} outside its affinity"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventLog;
    use proptest::prelude::*;

    impl ServerSet {
        /// The indexed form whatever the size, to compare the two forms on small sets.
        fn force_index(&mut self) {
            self.rebuild_index();
        }
    }

    /// Everything a policy can ask of a set, in priority order.
    fn answers(set: &ServerSet) -> Vec<String> {
        let mut out: Vec<String> = set
            .iter()
            .map(|s| {
                format!(
                    "{:?} p{} r{} w{} b{} {:?}",
                    s.vcpu, s.params.priority, s.remaining, s.has_work, s.next_boundary, s.counters
                )
            })
            .collect();
        let odd = |v: VcpuId| v.0 % 2 == 1;
        out.push(format!(
            "{:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            set.pick_with_work().map(|s| s.vcpu),
            set.highest_with_budget().map(|s| s.vcpu),
            set.first_with_work_among(|_| true).map(|s| s.vcpu),
            set.pick_with_work_among(odd).map(|s| s.vcpu),
            set.highest_with_budget_among(odd).map(|s| s.vcpu),
            set.first_with_work_among(odd).map(|s| s.vcpu),
            set.next_boundary(),
        ));
        out
    }

    /// Applies one operation (`op`, on the `pick`-th server, with `amount`) to `set`.
    fn apply(set: &mut ServerSet, log: &mut EventLog, now: &mut Nanos, op: (u8, u16, u16)) {
        let (kind, pick, amount) = op;
        let vcpus: Vec<VcpuId> = set.iter().map(|s| s.vcpu).collect();
        let some = (!vcpus.is_empty()).then(|| vcpus[pick as usize % vcpus.len()]);
        let params = |budget: u16, priority: u16| {
            VcpuParams::server(
                Nanos(u64::from(budget % 50) + 1),
                Nanos(u64::from(budget % 7) * 10 + 60),
                u32::from(priority % 5),
            )
        };
        let mut cx = Cx { now: *now, log };
        match (kind % 11, some) {
            (0, _) | (_, None) => {
                let vcpu = VcpuId(u32::from(pick));
                if !set.contains(vcpu) {
                    set.insert(*now, vcpu, &params(amount, pick));
                }
            }
            (1, Some(v)) => set.requeue(v),
            (2, Some(v)) => {
                set.get_mut(v).has_work = true;
                set.requeue(v);
            }
            (3, Some(v)) => set.get_mut(v).has_work = false,
            (4, Some(v)) => {
                set.take_budget(&mut cx, v, Nanos(u64::from(amount % 40)));
            }
            (5, Some(v)) => set.remove(v),
            (6, Some(_)) => {
                *now += Nanos(u64::from(amount % 70));
                cx.now = *now;
                set.replenish_due(&mut cx, |v| v.0 % 3 == 0, |_| {});
            }
            (7, Some(v)) => set.adjust(v, &params(amount, amount / 7)),
            (8, Some(v)) => {
                // A new priority; the budget stays (the callers cap the live budget first).
                let mut changed = set.get(v).params.clone();
                changed.priority = u32::from(amount % 5);
                set.set_params(v, changed);
            }
            (9, Some(v)) => {
                set.discard(&mut cx, v, *now);
            }
            (_, runner) => {
                // The Polling Server's discard, ahead of a runner or of nobody, among every
                // VCPU or some.
                let runner = runner.filter(|_| amount % 3 != 0);
                let among = u32::from(amount % 4);
                set.discard_ahead_of(&mut cx, runner, *now, |v| v.0 % 4 != among);
            }
        }
    }

    proptest! {
        /// The indexed form answers every question as the sorted array does, after any
        /// sequence of operations, and emits the same events.
        #[test]
        fn the_index_answers_as_the_array(
            ops in prop::collection::vec((any::<u8>(), 0u16..48, any::<u16>()), 1..300)
        ) {
            let (mut array, mut indexed) = (ServerSet::new(true), ServerSet::new(true));
            indexed.force_index();
            let (mut log_a, mut log_i) = (EventLog::new(true), EventLog::new(true));
            let (mut now_a, mut now_i) = (Nanos::ZERO, Nanos::ZERO);
            for op in ops {
                apply(&mut array, &mut log_a, &mut now_a, op);
                apply(&mut indexed, &mut log_i, &mut now_i, op);
                prop_assert!(indexed.index.is_some());
                prop_assert_eq!(array.check_invariants(), Ok(()));
                prop_assert_eq!(indexed.check_invariants(), Ok(()));
                prop_assert_eq!(answers(&array), answers(&indexed));
                let events_a: Vec<_> = log_a.drain().collect();
                let events_i: Vec<_> = log_i.drain().collect();
                prop_assert_eq!(format!("{events_a:?}"), format!("{events_i:?}"));
            }
        }
    }

    /// A large set finds the servers due at a boundary from its boundaries' order, and
    /// replenishes them as the scan of every server in priority order would: 200 servers of
    /// distinct periods (the longest period on the first server, so that boundary order and
    /// priority order differ), some with work (their requeues hand out stamps), some
    /// adjusted to a new priority and period on the way.
    #[test]
    fn a_large_set_replenishes_the_due_servers_as_the_scan_would() {
        let mut set = ServerSet::default();
        for v in 0..200u32 {
            let period = Nanos(1000 + 7 * u64::from(199 - v));
            let params = VcpuParams::server(Nanos(1), period, v % 10);
            set.insert(Nanos::ZERO, VcpuId(v), &params);
            set.get_mut(VcpuId(v)).has_work = v % 4 == 0;
        }
        let mut log = EventLog::new(true);
        let mut now = Nanos::ZERO;
        let mut several = 0;
        for step in 0..400u32 {
            now += Nanos(23);
            if step % 50 == 0 {
                let v = VcpuId(step % 200);
                let params = VcpuParams::server(Nanos(1), Nanos(1100 + u64::from(step)), step % 7);
                set.adjust(v, &params);
            }
            let expected: Vec<VcpuId> = set
                .iter()
                .filter(|s| s.next_boundary <= now)
                .map(|s| s.vcpu)
                .collect();
            several += usize::from(expected.len() > 1);
            let mut replenished = Vec::new();
            let mut cx = Cx { now, log: &mut log };
            set.replenish_due(&mut cx, |v| v.0 % 3 == 0, |s| replenished.push(s.vcpu));
            assert_eq!(replenished, expected, "at {now}");
            assert_eq!(set.check_invariants(), Ok(()));
            assert!(set.next_boundary() > Some(now));
        }
        assert!(
            several > 10,
            "only {several} boundaries replenished several servers"
        );
    }

    /// Past [`INDEXED_ABOVE`] servers the set indexes itself, and stays in priority order
    /// with first-in, first-out among equals: 1,000 servers of ten priorities, each
    /// requeued once in reverse order of insertion.
    #[test]
    fn a_large_set_indexes_itself_and_keeps_the_order() {
        let mut set = ServerSet::default();
        for v in 0..1000u32 {
            let params = VcpuParams::server(Nanos(1), Nanos(10), v % 10);
            set.insert(Nanos::ZERO, VcpuId(v), &params);
            assert_eq!(set.index.is_some(), v as usize >= INDEXED_ABOVE);
        }
        for v in (0..1000u32).rev() {
            set.requeue(VcpuId(v));
        }
        assert_eq!(set.check_invariants(), Ok(()));
        let order: Vec<u32> = set.iter().map(|s| s.vcpu.0).collect();
        let expected: Vec<u32> = (0..10)
            .flat_map(|p| (0..100).rev().map(move |i| i * 10 + p))
            .collect();
        assert_eq!(order, expected);
        set.get_mut(VcpuId(995)).has_work = true;
        set.get_mut(VcpuId(7)).has_work = true;
        assert_eq!(set.pick_with_work().map(|s| s.vcpu), Some(VcpuId(995)));
        set.remove(VcpuId(995));
        assert_eq!(set.pick_with_work().map(|s| s.vcpu), Some(VcpuId(7)));
        assert_eq!(set.check_invariants(), Ok(()));
    }
}
