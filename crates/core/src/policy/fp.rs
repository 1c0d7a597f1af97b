//! Shared state of the fixed-priority servers (Deferrable, Periodic/PTPS, Polling, WCPS,
//! CRPS, Sporadic).
//!
//! The spec's RunQ (VCPUs with work) and RdyQ (VCPUs without) are kept as one array in
//! priority order, each entry knowing whether it has work: with a handful of VCPUs per pcpu
//! a scan of one small array is both the clearest and the fastest form, and "RunQ" and
//! "RdyQ" are views of it (`has_work` true or false). The IDLE VCPU is implicit: it runs
//! when a policy's pick finds nothing.
//!
//! **Priority** (one total order, used everywhere): smaller `priority` number first, then
//! smaller VCPU id (declaration order). [`ServerSet`] keeps `servers` sorted by it.
//!
//! **Fixed vs live state**: `params` are the VCPU's configured parameters; `remaining` and
//! `next_boundary` are live. Parameters changed at run time wait in `pending` and are applied
//! at the next replenishment.

use crate::event::{CoreEvent, Cx};
use crate::model::{VcpuId, VcpuParams};
use crate::policy::{BudgetCounters, VcpuView};
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
    /// The next period boundary `offset + k·P` (unused by the Sporadic Server).
    pub next_boundary: Nanos,
    pub has_work: bool,
    pub counters: BudgetCounters,
}

impl Server {
    /// The priority key: the one total order of the fixed-priority servers.
    #[inline]
    pub fn key(&self) -> (u32, VcpuId) {
        (self.params.priority, self.vcpu)
    }
}

/// The server VCPUs of one pcpu, in priority order.
#[derive(Clone, Debug, Default)]
pub struct ServerSet {
    servers: Vec<Server>,
    /// `position[vcpu id]` = index in `servers`.
    position: Vec<Option<usize>>,
}

impl ServerSet {
    /// Adds a server at `now`. Its first period begins at `now + offset`: with no offset it
    /// starts full; with an offset it has no budget until then.
    pub fn insert(&mut self, now: Nanos, vcpu: VcpuId, params: &VcpuParams) {
        let (remaining, next_boundary) = if params.offset.is_zero() {
            (params.budget, now + params.period)
        } else {
            (Nanos::ZERO, now + params.offset)
        };
        self.servers.push(Server {
            vcpu,
            params: params.clone(),
            pending: None,
            remaining,
            next_boundary,
            has_work: false,
            counters: BudgetCounters::default(),
        });
        self.reorder();
    }

    pub fn remove(&mut self, vcpu: VcpuId) {
        self.servers.retain(|s| s.vcpu != vcpu);
        self.reorder();
    }

    fn reorder(&mut self) {
        self.servers.sort_by_key(|s| s.key());
        self.position.clear();
        for (i, s) in self.servers.iter().enumerate() {
            let id = s.vcpu.index();
            if self.position.len() <= id {
                self.position.resize(id + 1, None);
            }
            self.position[id] = Some(i);
        }
    }

    #[inline]
    pub fn get(&self, vcpu: VcpuId) -> &Server {
        &self.servers[self.position[vcpu.index()].expect("unknown server vcpu")]
    }

    #[inline]
    pub fn get_mut(&mut self, vcpu: VcpuId) -> &mut Server {
        let i = self.position[vcpu.index()].expect("unknown server vcpu");
        &mut self.servers[i]
    }

    pub fn contains(&self, vcpu: VcpuId) -> bool {
        self.position.get(vcpu.index()).copied().flatten().is_some()
    }

    /// All servers, highest priority first.
    #[inline]
    pub fn iter(&self) -> std::slice::Iter<'_, Server> {
        self.servers.iter()
    }

    /// `queuePick(RunQ)`: the highest-priority VCPU with work and budget left.
    #[inline]
    pub fn pick_with_work(&self) -> Option<&Server> {
        self.servers
            .iter()
            .find(|s| s.has_work && !s.remaining.is_zero())
    }

    /// H: the highest-priority VCPU with budget left, with or without work.
    #[inline]
    pub fn highest_with_budget(&self) -> Option<&Server> {
        self.servers.iter().find(|s| !s.remaining.is_zero())
    }

    /// Whether `a` has a higher priority than `b`.
    pub fn higher(&self, a: VcpuId, b: VcpuId) -> bool {
        self.get(a).key() < self.get(b).key()
    }

    /// Takes up to `amount` from the VCPU's budget and returns what was taken; reports
    /// exhaustion. Callers add the result to whichever counter fits.
    pub fn take_budget(&mut self, cx: &mut Cx, vcpu: VcpuId, amount: Nanos) -> Nanos {
        let s = self.get_mut(vcpu);
        let taken = amount.min(s.remaining);
        s.remaining -= taken;
        if !taken.is_zero() && s.remaining.is_zero() {
            cx.emit(|| CoreEvent::BudgetExhausted { vcpu });
        }
        taken
    }

    /// The earliest period boundary of any server.
    pub fn next_boundary(&self) -> Option<Nanos> {
        self.servers.iter().map(|s| s.next_boundary).min()
    }

    /// The periodic replenishment rule shared by Deferrable, Periodic, Polling, WCPS and
    /// CRPS: at every boundary `offset + k·P` at or before `now`, the remaining budget is
    /// **set** to B (unused budget is lost), pending parameters take effect, and the next
    /// boundary moves to the first grid point after `now` (whole missed periods are skipped:
    /// with tick-timed replenishment a boundary may be processed late). Calls `replenished`
    /// with each replenished server.
    pub fn replenish_due(&mut self, cx: &mut Cx, mut replenished: impl FnMut(&Server)) -> bool {
        let now = cx.now;
        let mut any = false;
        let mut reorder = false;
        for s in self.servers.iter_mut() {
            if s.next_boundary > now {
                continue;
            }
            if let Some(p) = s.pending.take() {
                reorder |= p.priority != s.params.priority;
                s.params = p;
            }
            let period = s.params.period;
            // Move to the first boundary strictly after now.
            let behind = (now - s.next_boundary).as_ns() / period.as_ns();
            s.next_boundary += Nanos(period.as_ns() * (behind + 1));
            s.remaining = s.params.budget;
            let (vcpu, budget) = (s.vcpu, s.remaining);
            cx.emit(|| CoreEvent::Replenish { vcpu, budget });
            replenished(s);
            any = true;
        }
        if reorder {
            self.reorder();
        }
        any
    }

    /// `adjust` for the periodic family: store the new parameters for the next
    /// replenishment and cut the remaining budget down to the new budget at once.
    pub fn adjust(&mut self, vcpu: VcpuId, params: &VcpuParams) {
        let s = self.get_mut(vcpu);
        s.remaining = s.remaining.min(params.budget);
        s.pending = Some(params.clone());
    }

    pub fn view(&self, vcpu: VcpuId) -> VcpuView {
        VcpuView {
            remaining_budget: Some(self.get(vcpu).remaining),
            ..VcpuView::default()
        }
    }

    /// Budgets in `[0, B]` and the array in priority order.
    pub fn check_invariants(&self) -> Result<(), String> {
        for w in self.servers.windows(2) {
            if w[0].key() >= w[1].key() {
                return Err(format!(
                    "servers out of priority order: {:?} before {:?}",
                    w[0].vcpu, w[1].vcpu
                ));
            }
        }
        for s in &self.servers {
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
