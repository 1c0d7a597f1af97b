//! `sedf-ideal`: SEDF as ideal EDF over slice/period — rtvmm's SEDF model before it
//! followed Xen 4.0's wake-up rules ([`sedf`](super::sedf) is Xen's). Kept by name, for
//! comparing against what Xen's code did (see `docs/policies.md`, "SEDF").
//!
//! # Design note
//! - **Parameters** (fixed): `slice` s (= `params.budget`), `period` p (= `params.period`),
//!   `extratime` (= `params.extratime`). **Live state**: the `remaining` slice and the
//!   current `deadline` (= end of the current period).
//! - **Periods** lie on a fixed grid from the VCPU's first period start (`insert + offset`).
//!   At every boundary the slice is **set** to s (unused slice is lost) and the deadline
//!   moves to the end of the new period; boundaries processed late skip whole periods.
//!   Every VCPU has a boundary timer, with or without work. (Xen 4.0 instead restarts the
//!   period of a domain that wakes after a long block at its wake time, and takes the rest
//!   of the period from one that wakes inside it: [`sedf`](super::sedf).)
//! - **Consumption**: the slice is consumed only while the VCPU runs on it and preserved
//!   while it does not.
//! - **Priority** — one total order, `key`: earlier deadline, then smaller VCPU
//!   id. `do_schedule` runs the VCPU with work and slice left that has the smallest key; the
//!   decision's slice is its remaining slice.
//! - **Extra time**: when no VCPU with work has slice left, VCPUs with work, no slice and
//!   `extratime` run round-robin, [`EXTRA_QUANTUM`] at a time. Extra time consumes no slice.
//!   The round-robin order is one queue of all VCPUs; a VCPU leaving the pcpu after an extra
//!   run (quantum over, preempted, or blocked) goes to its back. Any VCPU with slice left and
//!   work preempts an extra run at once. (Xen 4.0 split extra time between a "L0" queue of
//!   recently blocked domains and a weighted queue: [`sedf`](super::sedf).)
//! - **Preemption**: a wake or a boundary asks for a reschedule when the VCPU then has work
//!   and slice and its key beats the running one's (or the pcpu idles or runs extra time),
//!   or when a VCPU with extratime wakes on an idle pcpu.
//! - **adjust**: new parameters take effect at the next boundary; the remaining slice is cut
//!   to the new slice at once, and a larger slice is not granted early.
//! - **When it runs** (Xen 4.0's SEDF is event-driven, no tick): `do_schedule` runs when the
//!   slice it returned ends (the running VCPU's slice, or its extra-time quantum), at a
//!   period boundary that asks for it (the boundary timer: a replenished VCPU that beats
//!   what runs, or the running one's slice re-armed), on block, and on a preempting wake.
//! - **Orders kept** (`OrderedQueue`, `policy/ordered_queue.rs`; each O(log n) per change,
//!   so 100,000 VCPUs on one pcpu stay near-linear, `docs/benchmarks.md`, "SEDF at
//!   scale"): the VCPUs with work and slice left by the priority key (the first is EDF's
//!   pick), every VCPU by deadline (the first is the boundary timer; a boundary takes the
//!   due ones in VCPU id order), and the VCPUs that want extra time by their round-robin
//!   turn (a number drawn when the VCPU joins and when an extra run of it ends: the later,
//!   the further back). `sync` puts a VCPU where its state says after every change to it.
//!
//! Several pcpus: SEDF runs partitioned, one instance per pcpu, each VCPU pinned to one
//! pcpu ([`Partitioned`](super::partitioned::Partitioned)) — as Xen's SEDF, which kept one
//! run queue per pcpu and never migrated a VCPU by itself.
//!
//! Known gap: no load balancing between the pcpus of a pool (nor had Xen's).

use crate::event::Cx;
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::edf::EdfServer;
use crate::policy::ordered_queue::{OrderedQueue, Slot};
use crate::policy::table::VcpuTable;
use crate::policy::{BudgetCounters, Decision, Policy, PolicyKind, Spent, TickInterval, VcpuView};
use crate::time::Nanos;

/// How long an extra-time run lasts before the next VCPU's turn (Xen 4.0's
/// `EXTRA_QUANTUM`, 500 µs).
pub use super::sedf::EXTRA_QUANTUM;

/// The EDF key: deadline, then VCPU id. Smaller is more urgent.
#[inline]
fn key(s: &EdfServer) -> (Nanos, VcpuId) {
    (s.deadline, s.vcpu)
}

#[inline]
fn wants_extra_time(s: &EdfServer) -> bool {
    s.has_work && s.remaining.is_zero() && s.params.extratime_under(PolicyKind::SedfIdeal)
}

/// What the running VCPU runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RunMode {
    /// Its own slice, consumed while it runs.
    Slice,
    /// Extra time: no slice consumed; the run lasts at most [`EXTRA_QUANTUM`].
    Extra,
}

/// One VCPU: its server (slice = budget) and its places in the policy's orders.
#[derive(Clone, Debug)]
struct IdealVcpu {
    server: EdfServer,
    /// Its place among the boundary timers (every VCPU has one), by deadline.
    timer: Slot<Nanos>,
    /// Its place in the EDF order while it has work and slice left.
    ready: Option<Slot<(Nanos, VcpuId)>>,
    /// Its round-robin turn for extra time: drawn when it joins and when an extra run of
    /// it ends.
    turn: u64,
    /// Its place in the extra-time order while it wants extra time.
    extra: Option<Slot<u64>>,
}

/// The ideal-EDF SEDF policy for one pcpu.
pub struct SedfIdeal {
    vcpus: VcpuTable<IdealVcpu>,
    /// Every VCPU by deadline: the first is the next boundary.
    timers: OrderedQueue<Nanos>,
    /// The VCPUs with work and slice left, by [`key`]: the first is EDF's pick.
    ready: OrderedQueue<(Nanos, VcpuId)>,
    /// The VCPUs that want extra time, by turn: the first is next in the round robin.
    extra: OrderedQueue<u64>,
    /// The turn a VCPU gets when it next goes to the back of the round robin.
    next_turn: u64,
    /// What the last `do_schedule` chose (None = IDLE) and on what.
    current: Option<(VcpuId, RunMode)>,
    /// Extra time the current VCPU has used in its current extra run.
    extra_used: Nanos,
    /// `handle_timer`'s list of the VCPUs due (kept to reuse its allocation).
    due: Vec<VcpuId>,
}

impl SedfIdeal {
    pub fn new(_pcpus: u32) -> SedfIdeal {
        SedfIdeal {
            vcpus: VcpuTable::new(),
            timers: OrderedQueue::new(),
            ready: OrderedQueue::new(),
            extra: OrderedQueue::new(),
            next_turn: 0,
            current: None,
            extra_used: Nanos::ZERO,
            due: Vec::new(),
        }
    }

    #[inline]
    fn server(&self, vcpu: VcpuId) -> &EdfServer {
        &self.vcpus.get(vcpu).server
    }

    #[inline]
    fn server_mut(&mut self, vcpu: VcpuId) -> &mut EdfServer {
        &mut self.vcpus.get_mut(vcpu).server
    }

    fn current_vcpu(&self) -> Option<VcpuId> {
        self.current.map(|(v, _)| v)
    }

    /// Puts `vcpu` in the EDF and extra-time orders as its state now says (after any
    /// change to its work, slice, deadline or parameters).
    #[inline(always)]
    fn sync(&mut self, vcpu: VcpuId) {
        let m = self.vcpus.get_mut(vcpu);
        let ready = m.server.eligible().then(|| key(&m.server));
        if m.ready.map(|(k, _)| k) != ready {
            if let Some(slot) = m.ready.take() {
                self.ready.remove(vcpu, slot);
            }
            m.ready = ready.map(|k| self.ready.insert(vcpu, k));
        }
        if m.extra.is_some() != wants_extra_time(&m.server) {
            m.extra = match m.extra.take() {
                Some(slot) => {
                    self.extra.remove(vcpu, slot);
                    None
                }
                None => Some(self.extra.insert(vcpu, m.turn)),
            };
        }
    }

    /// Whether `vcpu`, just woken or replenished, should take the pcpu now.
    fn preempts(&self, vcpu: VcpuId) -> bool {
        let s = self.server(vcpu);
        match self.current {
            Some((c, _)) if c == vcpu => false,
            None => s.eligible() || wants_extra_time(s),
            Some((_, RunMode::Extra)) => s.eligible(),
            Some((c, RunMode::Slice)) => s.eligible() && key(s) < key(self.server(c)),
        }
    }

    /// The VCPU ends an extra run: its round-robin turn is over, it goes to the back.
    fn end_extra_turn(&mut self, vcpu: VcpuId) {
        let m = self.vcpus.get_mut(vcpu);
        m.turn = self.next_turn;
        self.next_turn += 1;
        if let Some(slot) = m.extra.take() {
            self.extra.remove(vcpu, slot);
            m.extra = Some(self.extra.insert(vcpu, m.turn));
        }
    }
}

impl Policy for SedfIdeal {
    fn kind(&self) -> PolicyKind {
        PolicyKind::SedfIdeal
    }

    /// Slice and period > 0, slice ≤ period.
    fn validate(&self, params: &VcpuParams) -> Result<(), ParamError> {
        params.validate_slice()
    }

    fn insert_vcpu(&mut self, cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) {
        let server = EdfServer::new(cx.now, vcpu, params);
        let timer = self.timers.insert(vcpu, server.deadline);
        let turn = self.next_turn;
        self.next_turn += 1;
        self.vcpus.insert(
            vcpu,
            IdealVcpu {
                server,
                timer,
                ready: None,
                turn,
                extra: None,
            },
        );
        self.sync(vcpu);
    }

    fn remove_vcpu(&mut self, _cx: &mut Cx, vcpu: VcpuId) {
        if self.current_vcpu() == Some(vcpu) {
            self.current = None;
        }
        if let Some(m) = self.vcpus.remove(vcpu) {
            self.timers.remove(vcpu, m.timer);
            if let Some(slot) = m.ready {
                self.ready.remove(vcpu, slot);
            }
            if let Some(slot) = m.extra {
                self.extra.remove(vcpu, slot);
            }
        }
    }

    fn wake(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        // Already with work, it is where it belongs.
        if !std::mem::replace(&mut self.server_mut(vcpu).has_work, true) {
            self.sync(vcpu);
        }
        self.preempts(vcpu)
    }

    fn sleep(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        if std::mem::replace(&mut self.server_mut(vcpu).has_work, false) {
            self.sync(vcpu);
        }
        self.current_vcpu() == Some(vcpu)
    }

    fn burn(&mut self, cx: &mut Cx, _pcpu: PcpuId, ran: Nanos, spent: Spent) {
        match self.current {
            None => {}
            Some((_, RunMode::Extra)) => self.extra_used += ran,
            Some((v, RunMode::Slice)) => {
                let exhausted = self.server_mut(v).consume(cx, ran, spent);
                // Only a slice running out changes where the VCPU belongs.
                if exhausted {
                    self.sync(v);
                }
            }
        }
    }

    fn do_schedule(&mut self, _cx: &mut Cx, _pcpu: PcpuId) -> Decision {
        // 1. EDF among VCPUs with work and slice left.
        let edf = self.ready.first().map(|v| (v, self.server(v).remaining));
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
            if wants_extra_time(self.server(x)) && self.extra_used < EXTRA_QUANTUM {
                return Decision {
                    run: Some(x),
                    slice: Some(EXTRA_QUANTUM - self.extra_used),
                };
            }
            self.end_extra_turn(x);
        }
        self.extra_used = Nanos::ZERO;
        match self.extra.first() {
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

    /// Every VCPU has a boundary timer: the earliest deadline.
    fn next_timer(&self) -> Option<Nanos> {
        self.timers.first_entry().map(|(deadline, _)| deadline)
    }

    fn handle_timer(&mut self, cx: &mut Cx) -> bool {
        // The VCPUs due on entry, replenished in VCPU id order: a VCPU's due test reads
        // only its own deadline, which only its own replenishment changes.
        let mut due = std::mem::take(&mut self.due);
        while let Some((deadline, v)) = self.timers.first_entry() {
            if deadline > cx.now {
                break;
            }
            self.timers.pop_first();
            due.push(v);
        }
        due.sort_unstable();
        let mut resched = false;
        for &v in &due {
            let m = self.vcpus.get_mut(v);
            m.server.replenish(cx);
            m.timer = self.timers.insert(v, m.server.deadline);
            self.sync(v);
            // The running VCPU's slice changed (or it can leave extra time): re-arm it.
            resched |= self.current_vcpu() == Some(v) || self.preempts(v);
        }
        due.clear();
        self.due = due;
        resched
    }

    fn adjust(&mut self, _cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) -> bool {
        self.server_mut(vcpu).adjust(params);
        self.sync(vcpu);
        self.current_vcpu() == Some(vcpu)
    }

    fn view(&self, vcpu: VcpuId) -> VcpuView {
        self.server(vcpu).view()
    }

    fn counters(&self, vcpu: VcpuId) -> BudgetCounters {
        self.server(vcpu).counters
    }

    fn check_invariants(&self) -> Result<(), String> {
        let mut counts = [0; 3];
        for m in self.vcpus.iter() {
            let s = &m.server;
            if s.remaining > s.params.budget {
                return Err(format!(
                    "vcpu {:?}: remaining budget {} above budget {}",
                    s.vcpu, s.remaining, s.params.budget
                ));
            }
            if m.timer.0 != s.deadline {
                return Err(format!("vcpu {:?}: timer not at its deadline", s.vcpu));
            }
            if m.ready.map(|(k, _)| k) != s.eligible().then(|| key(s)) {
                return Err(format!("vcpu {:?}: EDF place not its key", s.vcpu));
            }
            if m.extra.map(|(k, _)| k) != wants_extra_time(s).then_some(m.turn) {
                return Err(format!("vcpu {:?}: extra-time place not its turn", s.vcpu));
            }
            counts[0] += 1;
            counts[1] += usize::from(m.ready.is_some());
            counts[2] += usize::from(m.extra.is_some());
        }
        // Each order holds exactly the VCPUs whose slots say so, at those slots.
        for (slot, v) in self.timers.iter() {
            if self.vcpus.try_get(v).map(|m| m.timer) != Some(slot) {
                return Err(format!("vcpu {v:?} among the timers not at its slot"));
            }
        }
        for (slot, v) in self.ready.iter() {
            if self.vcpus.try_get(v).and_then(|m| m.ready) != Some(slot) {
                return Err(format!("vcpu {v:?} in the EDF order not at its slot"));
            }
        }
        for (slot, v) in self.extra.iter() {
            if self.vcpus.try_get(v).and_then(|m| m.extra) != Some(slot) {
                return Err(format!(
                    "vcpu {v:?} in the extra-time order not at its slot"
                ));
            }
        }
        let lens = [self.timers.len(), self.ready.len(), self.extra.len()];
        if lens != counts {
            return Err(format!(
                "orders of {lens:?} entries (timers, EDF, extra time), {counts:?} expected"
            ));
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
    use proptest::prelude::*;

    fn ms(x: u64) -> Nanos {
        Nanos::from_ms(x)
    }

    #[test]
    fn boundary_sets_slice_and_skips_missed_periods() {
        let mut log = EventLog::new(false);
        let mut sedf = SedfIdeal::new(1);
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
        let mut sedf = SedfIdeal::new(1);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        let mut p = VcpuParams::server(ms(1), ms(5), 0);
        p.extratime = Some(true);
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

    /// The policy as it was written before its orders were kept (every decision a scan of
    /// all VCPUs, the round robin a list), to test against.
    mod reference {
        use std::collections::VecDeque;

        use super::super::{key, wants_extra_time, RunMode, EXTRA_QUANTUM};
        use crate::event::Cx;
        use crate::model::{VcpuId, VcpuParams};
        use crate::policy::edf::{EdfServer, EdfSet};
        use crate::policy::{Decision, Spent, VcpuView};
        use crate::time::Nanos;

        fn timed(_: &EdfServer) -> bool {
            true
        }

        #[derive(Default)]
        pub struct Scan {
            servers: EdfSet<EdfServer>,
            current: Option<(VcpuId, RunMode)>,
            extra_used: Nanos,
            extra_order: VecDeque<VcpuId>,
        }

        impl Scan {
            fn current_vcpu(&self) -> Option<VcpuId> {
                self.current.map(|(v, _)| v)
            }

            fn preempts(&self, vcpu: VcpuId) -> bool {
                let s = self.servers.get(vcpu);
                match self.current {
                    Some((c, _)) if c == vcpu => false,
                    None => s.eligible() || wants_extra_time(s),
                    Some((_, RunMode::Extra)) => s.eligible(),
                    Some((c, RunMode::Slice)) => s.eligible() && key(s) < key(self.servers.get(c)),
                }
            }

            fn end_extra_turn(&mut self, vcpu: VcpuId) {
                self.extra_order.retain(|&v| v != vcpu);
                self.extra_order.push_back(vcpu);
            }

            pub fn insert_vcpu(&mut self, cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) {
                self.servers.insert(EdfServer::new(cx.now, vcpu, params));
                self.extra_order.push_back(vcpu);
                self.servers.refresh_timer(timed);
            }

            pub fn remove_vcpu(&mut self, vcpu: VcpuId) {
                if self.current_vcpu() == Some(vcpu) {
                    self.current = None;
                }
                self.extra_order.retain(|&v| v != vcpu);
                self.servers.remove(vcpu);
                self.servers.refresh_timer(timed);
            }

            pub fn wake(&mut self, vcpu: VcpuId) -> bool {
                self.servers.get_mut(vcpu).has_work = true;
                self.preempts(vcpu)
            }

            pub fn sleep(&mut self, vcpu: VcpuId) -> bool {
                self.servers.get_mut(vcpu).has_work = false;
                self.current_vcpu() == Some(vcpu)
            }

            pub fn burn(&mut self, cx: &mut Cx, ran: Nanos) {
                match self.current {
                    None => {}
                    Some((_, RunMode::Extra)) => self.extra_used += ran,
                    Some((v, RunMode::Slice)) => {
                        self.servers.get_mut(v).consume(cx, ran, Spent::Running);
                    }
                }
            }

            pub fn do_schedule(&mut self) -> Decision {
                let edf = self
                    .servers
                    .pick(|_| true, key)
                    .map(|s| (s.vcpu, s.remaining));
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
                if let Some(x) = extra_runner {
                    if wants_extra_time(self.servers.get(x)) && self.extra_used < EXTRA_QUANTUM {
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
                    .find(|&v| wants_extra_time(self.servers.get(v)));
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

            pub fn next_timer(&self) -> Option<Nanos> {
                self.servers.next_timer()
            }

            pub fn handle_timer(&mut self, cx: &mut Cx) -> bool {
                let mut resched = false;
                let mut replenished = false;
                for i in 0..self.servers.capacity() {
                    let v = VcpuId(i as u32);
                    if !self.servers.contains(v) || self.servers.get(v).deadline > cx.now {
                        continue;
                    }
                    self.servers.get_mut(v).replenish(cx);
                    replenished = true;
                    resched |= self.current_vcpu() == Some(v) || self.preempts(v);
                }
                if replenished {
                    self.servers.refresh_timer(timed);
                }
                resched
            }

            pub fn adjust(&mut self, vcpu: VcpuId, params: &VcpuParams) -> bool {
                self.servers.get_mut(vcpu).adjust(params);
                self.current_vcpu() == Some(vcpu)
            }

            pub fn contains(&self, vcpu: VcpuId) -> bool {
                self.servers.contains(vcpu)
            }

            pub fn view(&self, vcpu: VcpuId) -> VcpuView {
                self.servers.get(vcpu).view()
            }
        }
    }

    /// One step of a random run: `kind` picks the hook, `vcpu` its VCPU, `amount` its
    /// time or parameters.
    type Step = (u8, u32, u16);

    /// A VCPU's parameters from `amount`: slices of 1–4 ms per 2–9 ms, a few with an
    /// offset, about half with extratime; VCPUs of one period often share a deadline, so
    /// the EDF key's id tie-break is exercised.
    fn params(amount: u16) -> VcpuParams {
        let period = ms(u64::from(amount % 8) + 2);
        let slice = ms(u64::from(amount / 8 % 4) + 1).min(period);
        let offset = if amount.is_multiple_of(11) {
            ms(1)
        } else {
            Nanos::ZERO
        };
        let mut p = VcpuParams::server(slice, period, 0);
        p.offset = offset;
        p.extratime = Some(amount / 32 % 2 == 1);
        p
    }

    /// Runs `steps` on the policy and on the scan it replaced, as the machine drives a
    /// policy (charge the running decision, then the hook; due timers when time moves);
    /// every answer, every decision, every view and every event must be the same.
    fn same_as_the_scan(steps: &[Step], vcpus: u32) -> Result<(), TestCaseError> {
        let (mut log, mut ref_log) = (EventLog::new(true), EventLog::new(true));
        let mut ours = SedfIdeal::new(1);
        let mut scan = reference::Scan::default();
        let mut now = Nanos::ZERO;
        // What the running decision has left (an extra run must not pass its quantum).
        let mut left: Option<Nanos> = None;
        for &(kind, vcpu, amount) in steps {
            let v = VcpuId(vcpu % vcpus);
            let present = scan.contains(v);
            let mut cx = Cx { now, log: &mut log };
            let mut ref_cx = Cx {
                now,
                log: &mut ref_log,
            };
            match kind % 8 {
                _ if !present => {
                    ours.insert_vcpu(&mut cx, v, &params(amount));
                    scan.insert_vcpu(&mut ref_cx, v, &params(amount));
                }
                0 => {
                    ours.remove_vcpu(&mut cx, v);
                    scan.remove_vcpu(v);
                }
                1 | 2 => prop_assert_eq!(ours.wake(&mut cx, v), scan.wake(v)),
                3 => prop_assert_eq!(ours.sleep(&mut cx, v), scan.sleep(v)),
                4 => prop_assert_eq!(
                    ours.adjust(&mut cx, v, &params(amount)),
                    scan.adjust(v, &params(amount))
                ),
                5 => {
                    let decision = ours.do_schedule(&mut cx, PcpuId(0));
                    prop_assert_eq!(decision, scan.do_schedule());
                    left = decision.slice;
                }
                _ => {
                    // Time moves on: charge the decision, then the due boundaries.
                    let mut ran = Nanos::from_us(u64::from(amount % 3_000));
                    if let Some(l) = left {
                        ran = ran.min(l);
                        left = Some(l - ran);
                    }
                    ours.burn(&mut cx, PcpuId(0), ran, Spent::Running);
                    scan.burn(&mut ref_cx, ran);
                    now += ran;
                    let mut cx = Cx { now, log: &mut log };
                    let mut ref_cx = Cx {
                        now,
                        log: &mut ref_log,
                    };
                    prop_assert_eq!(ours.next_timer(), scan.next_timer());
                    if ours.next_timer().is_some_and(|t| t <= now) {
                        prop_assert_eq!(ours.handle_timer(&mut cx), scan.handle_timer(&mut ref_cx));
                    }
                }
            }
            prop_assert_eq!(ours.check_invariants(), Ok(()));
            prop_assert_eq!(ours.next_timer(), scan.next_timer());
            for w in (0..vcpus).map(VcpuId) {
                if scan.contains(w) {
                    prop_assert_eq!(ours.view(w), scan.view(w));
                }
            }
            let events: Vec<_> = log.drain().collect();
            let ref_events: Vec<_> = ref_log.drain().collect();
            prop_assert_eq!(format!("{events:?}"), format!("{ref_events:?}"));
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]

        /// A handful of VCPUs (the orders' arrays).
        #[test]
        fn decides_as_the_scan_it_replaced(
            steps in prop::collection::vec((any::<u8>(), any::<u32>(), any::<u16>()), 1..400)
        ) {
            same_as_the_scan(&steps, 8)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(16))]

        /// A hundred VCPUs: the orders pass the array's 64 entries.
        #[test]
        fn decides_as_the_scan_it_replaced_past_the_array(
            steps in prop::collection::vec((any::<u8>(), any::<u32>(), any::<u16>()), 1500)
        ) {
            same_as_the_scan(&steps, 100)?;
        }
    }
}
