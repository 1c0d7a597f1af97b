//! Shared state of the EDF servers (RTDS, `sedf-ideal`), as [`fp`](super::fp) is for the
//! fixed-priority servers.
//!
//! An [`EdfServer`] is a VCPU with a budget B (SEDF: its slice) per period P and a deadline
//! at the end of its current period. **Fixed** parameters (`params`) sit apart from **live**
//! state (`remaining`, `deadline`); parameters changed at run time wait in `pending` for
//! the next replenishment. An [`EdfSet`] holds a policy's servers (with whatever else the
//! policy keeps per VCPU, through [`EdfMember`]), picks the most urgent by the policy's own
//! key, and remembers the earliest deadline among the VCPUs that have a timer, because the
//! machine asks for it after every hook.
//!
//! The rules they share, stated once here:
//! - **Joining** at `now`: the first period starts at `now + offset`; without an offset the
//!   VCPU starts full with its deadline at `now + P`, with one it has no budget until its
//!   first period starts (the deadline is then that start).
//! - **Consumption**: only while the VCPU runs on its budget (or overhead is charged to it);
//!   preserved while it does not.
//! - **Replenishment** when `now ≥ deadline` (Xen's `rt_update_deadline`): pending
//!   parameters take effect, the deadline moves past `now` by whole periods (periods that
//!   passed are skipped), the budget is full again.
//! - **adjust**: the remaining budget is cut to the new budget at once; a larger budget is
//!   not granted early; the rest waits for the next replenishment.

use crate::event::{CoreEvent, Cx};
use crate::model::{VcpuId, VcpuParams};
use crate::policy::table::VcpuTable;
use crate::policy::{BudgetCounters, Spent, VcpuView};
use crate::time::Nanos;

/// One EDF server VCPU.
#[derive(Clone, Debug)]
pub struct EdfServer {
    pub vcpu: VcpuId,
    pub params: VcpuParams,
    /// Parameters set by `adjust`, applied at the next replenishment.
    pub pending: Option<VcpuParams>,
    /// Remaining budget, in `[0, params.budget]`.
    pub remaining: Nanos,
    /// End of the current period.
    pub deadline: Nanos,
    pub has_work: bool,
    pub counters: BudgetCounters,
}

impl EdfServer {
    /// A VCPU joining at `now` (see the module note).
    pub fn new(now: Nanos, vcpu: VcpuId, params: &VcpuParams) -> EdfServer {
        let (remaining, deadline) = if params.offset.is_zero() {
            (params.budget, now + params.period)
        } else {
            (Nanos::ZERO, now + params.offset)
        };
        EdfServer {
            vcpu,
            params: params.clone(),
            pending: None,
            remaining,
            deadline,
            has_work: false,
            counters: BudgetCounters::default(),
        }
    }

    /// Has work and budget left.
    #[inline]
    pub fn eligible(&self) -> bool {
        self.has_work && !self.remaining.is_zero()
    }

    /// Takes up to `ran` from the budget (counted as run time or as overhead); reports the
    /// budget reaching zero. Returns whether it did.
    pub fn consume(&mut self, cx: &mut Cx, ran: Nanos, spent: Spent) -> bool {
        let taken = ran.min(self.remaining);
        self.remaining -= taken;
        self.counters.spend(spent, taken);
        let exhausted = !taken.is_zero() && self.remaining.is_zero();
        if exhausted {
            let vcpu = self.vcpu;
            cx.emit(|| CoreEvent::BudgetExhausted { vcpu });
        }
        exhausted
    }

    /// The replenishment rule, called when `cx.now ≥ deadline` (see the module note).
    pub fn replenish(&mut self, cx: &mut Cx) {
        debug_assert!(cx.now >= self.deadline);
        if let Some(p) = self.pending.take() {
            self.params = p;
        }
        let period = self.params.period.as_ns();
        let periods_passed = (cx.now - self.deadline).as_ns() / period + 1;
        self.deadline += Nanos(period * periods_passed);
        self.refill(cx);
    }

    /// The budget is full again (a replenishment, or RTDS's extratime refill).
    pub fn refill(&mut self, cx: &mut Cx) {
        self.remaining = self.params.budget;
        let (vcpu, budget) = (self.vcpu, self.remaining);
        cx.emit(|| CoreEvent::Replenish { vcpu, budget });
    }

    /// New parameters: the budget is cut at once, the rest waits (see the module note).
    pub fn adjust(&mut self, params: &VcpuParams) {
        self.remaining = self.remaining.min(params.budget);
        self.pending = Some(params.clone());
    }

    /// What [`Policy::view`](crate::policy::Policy::view) shows of it: the remaining
    /// budget and the deadline.
    pub fn view(&self) -> VcpuView {
        VcpuView {
            remaining_budget: Some(self.remaining),
            deadline: Some(self.deadline),
            credit: None,
        }
    }
}

/// What a policy keeps per VCPU around its [`EdfServer`].
pub trait EdfMember {
    fn server(&self) -> &EdfServer;
    fn server_mut(&mut self) -> &mut EdfServer;
}

impl EdfMember for EdfServer {
    fn server(&self) -> &EdfServer {
        self
    }
    fn server_mut(&mut self) -> &mut EdfServer {
        self
    }
}

/// A policy's EDF servers and the earliest deadline among those with a timer.
#[derive(Clone, Debug)]
pub struct EdfSet<T> {
    members: VcpuTable<T>,
    /// What [`EdfSet::next_timer`] returns; refreshed by [`EdfSet::refresh_timer`] after
    /// any change it depends on (the policy knows which), checked by
    /// [`EdfSet::check`].
    next_timer: Option<Nanos>,
}

impl<T> Default for EdfSet<T> {
    fn default() -> Self {
        EdfSet {
            members: VcpuTable::new(),
            next_timer: None,
        }
    }
}

impl<T: EdfMember> EdfSet<T> {
    pub fn insert(&mut self, member: T) {
        self.members.insert(member.server().vcpu, member);
    }

    pub fn remove(&mut self, vcpu: VcpuId) {
        self.members.remove(vcpu);
    }

    #[inline]
    pub fn get(&self, vcpu: VcpuId) -> &T {
        self.members.get(vcpu)
    }

    #[inline]
    pub fn get_mut(&mut self, vcpu: VcpuId) -> &mut T {
        self.members.get_mut(vcpu)
    }

    #[inline]
    pub fn server(&self, vcpu: VcpuId) -> &EdfServer {
        self.get(vcpu).server()
    }

    #[inline]
    pub fn server_mut(&mut self, vcpu: VcpuId) -> &mut EdfServer {
        self.get_mut(vcpu).server_mut()
    }

    /// Every member, in VCPU id order.
    #[inline]
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.members.iter()
    }

    /// VCPU ids `0..capacity()` cover every member (for passes that change members).
    pub fn capacity(&self) -> usize {
        self.members.capacity()
    }

    pub fn contains(&self, vcpu: VcpuId) -> bool {
        self.members.contains(vcpu)
    }

    /// The member with work and budget whose `key` is smallest (keys end with the VCPU id,
    /// so they are unique), among those `allowed` lets through.
    #[inline]
    pub fn pick<K: Ord>(&self, allowed: impl Fn(&T) -> bool, key: impl Fn(&T) -> K) -> Option<&T> {
        let mut best: Option<(&T, K)> = None;
        for m in self.members.iter() {
            if !m.server().eligible() || !allowed(m) {
                continue;
            }
            let k = key(m);
            if best.as_ref().is_none_or(|(_, b)| k < *b) {
                best = Some((m, k));
            }
        }
        best.map(|(m, _)| m)
    }

    /// The earliest deadline among the members `timed` says have a timer.
    pub fn earliest_deadline(&self, timed: impl Fn(&T) -> bool) -> Option<Nanos> {
        self.members
            .iter()
            .filter(|m| timed(m))
            .map(|m| m.server().deadline)
            .min()
    }

    /// Recomputes the remembered timer.
    pub fn refresh_timer(&mut self, timed: impl Fn(&T) -> bool) {
        self.next_timer = self.earliest_deadline(timed);
    }

    /// Updates the remembered timer after one member changed: `before` and `after` are its
    /// deadline while it had a timer (`None`: no timer), before and after the change.
    /// Recomputes from every member only when the change took away the earliest deadline.
    pub fn retime(
        &mut self,
        before: Option<Nanos>,
        after: Option<Nanos>,
        timed: impl Fn(&T) -> bool,
    ) {
        if before == after {
            return;
        }
        if let (Some(b), Some(n)) = (before, self.next_timer) {
            if b == n && after.is_none_or(|a| a > b) {
                self.refresh_timer(timed);
                return;
            }
        }
        if let Some(a) = after {
            self.next_timer = Some(self.next_timer.map_or(a, |n| n.min(a)));
        }
    }

    /// The remembered earliest deadline with a timer.
    #[inline]
    pub fn next_timer(&self) -> Option<Nanos> {
        self.next_timer
    }

    /// Budgets in `[0, B]` and the remembered timer up to date.
    pub fn check(&self, timed: impl Fn(&T) -> bool) -> Result<(), String> {
        let earliest = self.earliest_deadline(timed);
        if self.next_timer != earliest {
            return Err(format!(
                "remembered next timer {:?} differs from the earliest deadline {earliest:?}",
                self.next_timer
            ));
        }
        for m in self.members.iter() {
            let s = m.server();
            if s.remaining > s.params.budget {
                return Err(format!(
                    "vcpu {:?}: remaining budget {} above budget {}",
                    s.vcpu, s.remaining, s.params.budget
                ));
            }
        }
        Ok(())
    }
}
