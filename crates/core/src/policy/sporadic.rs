//! Sporadic Server, corrected (Stanovich, Baker, Wang & González Harbour, "Defects of the
//! POSIX Sporadic Server and How to Correct Them", RTAS 2010; after Sprunt, Sha & Lehoczky
//! 1989).
//!
//! # Design note
//! - **Eligibility and picking**: a VCPU is eligible while its remaining budget is > 0;
//!   the highest-priority eligible VCPU with work runs on its own budget (`queuePick(RunQ)`,
//!   as for the Deferrable Server); slice: its remaining budget.
//! - **Chunks**: a *chunk* is one stretch of uninterrupted execution `[s, e)`. It ends
//!   when the VCPU is switched out (preempted or blocked), when its budget reaches 0, or
//!   when time passed without it running since its last stretch (scheduler overhead
//!   between two decisions that both chose it: the gap splits the chunk, else its payback
//!   would come before one period after the later stretch began).
//! - **Replenishment**: a chunk queues a replenishment of the budget it consumed (`e - s`
//!   when no overhead interrupts it) due at `s + P` — paid back one period after the
//!   chunk *began*, the split that avoids the premature replenishments of POSIX. Due
//!   replenishments add to the remaining budget (exactly at their due time, or at the next
//!   tick in `tick` mode).
//! - **At most `max_replenishments` pending** per VCPU: when one more is needed, its
//!   amount is added to the latest pending replenishment and that one moves to the new
//!   (later) due time. Due times are kept non-decreasing.
//! - **Conservation** (checked by `check_invariants`): remaining + pending amounts + the
//!   budget consumed by the chunk in progress = B. Hence a VCPU never runs more than B in
//!   any window of length P (each unit comes back no earlier than one period after the
//!   chunk that spent it began).
//! - **Offset**: a VCPU with an offset starts with no budget and a replenishment of B due
//!   at the offset.
//! - **adjust** (choices where the spec is silent): the remaining budget is cut to the new
//!   budget at once; the other changes wait for the VCPU's next replenishment. Then the
//!   chunk in progress (if any) is closed, surplus pending replenishments are merged into
//!   the last, and the books are balanced to the new budget: a surplus is taken from the
//!   latest pending replenishments (then from the remaining budget), a deficit is granted
//!   with that replenishment. A VCPU at rest (nothing pending, not running a chunk) has no
//!   next replenishment to wait for: its new parameters apply at once, and a budget
//!   increase is queued as a replenishment one new period later (never granted early).
//!
//! Known gap: one pcpu per instance.

use std::collections::VecDeque;

use crate::event::{CoreEvent, Cx};
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::fp::{Charge, Plan, ServerSet};
use crate::policy::{BudgetCounters, Decision, Policy, PolicyKind, VcpuView};
use crate::time::Nanos;

/// One pending replenishment: `amount` is added to the budget at `due`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replenishment {
    pub due: Nanos,
    pub amount: Nanos,
}

/// The chunk in progress: run `[start, end)` without interruption, consuming `consumed`.
#[derive(Clone, Copy, Debug)]
struct Chunk {
    start: Nanos,
    end: Nanos,
    consumed: Nanos,
}

/// A VCPU's replenishment books.
#[derive(Clone, Debug, Default)]
struct Books {
    /// Sorted by due time (non-decreasing), at most `max_replenishments` long.
    pending: VecDeque<Replenishment>,
    chunk: Option<Chunk>,
}

impl Books {
    fn pending_total(&self) -> Nanos {
        self.pending.iter().fold(Nanos::ZERO, |t, r| t + r.amount)
    }
}

pub struct Sporadic {
    servers: ServerSet,
    /// `books[vcpu id]`; `None` for ids that are not (or no longer) members.
    books: Vec<Option<Books>>,
    /// What the last `do_schedule` decided.
    active: Plan,
    /// A reschedule was asked for (or is due) and `do_schedule` has not run since.
    reschedule_owed: bool,
}

impl Sporadic {
    pub fn new(_pcpus: u32) -> Sporadic {
        Sporadic {
            servers: ServerSet::default(),
            books: Vec::new(),
            active: Plan::IDLE,
            reschedule_owed: false,
        }
    }

    /// The VCPU's pending replenishments, earliest first (for tests and traces).
    pub fn pending_replenishments(&self, vcpu: VcpuId) -> Vec<Replenishment> {
        self.books(vcpu).pending.iter().copied().collect()
    }

    fn books(&self, vcpu: VcpuId) -> &Books {
        self.books[vcpu.index()]
            .as_ref()
            .expect("unknown sporadic vcpu")
    }

    fn books_mut(&mut self, vcpu: VcpuId) -> &mut Books {
        self.books[vcpu.index()]
            .as_mut()
            .expect("unknown sporadic vcpu")
    }

    /// Whether the decision must be made again now; remembers a "yes".
    fn must_reschedule(&mut self, also: bool) -> bool {
        let answer = also || self.servers.plan_own_budget() != self.active;
        self.reschedule_owed |= answer;
        answer
    }

    /// Ends the chunk in progress, queueing its payback one period after it began.
    fn close_chunk(&mut self, vcpu: VcpuId) {
        if let Some(chunk) = self.books_mut(vcpu).chunk.take() {
            let period = self.servers.get(vcpu).params.period;
            self.queue(vcpu, chunk.start + period, chunk.consumed);
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
    }

    /// Adds every replenishment of `vcpu` due at or before `cx.now` to its budget; applies
    /// parameters waiting for it.
    fn replenish_due(&mut self, cx: &mut Cx, vcpu: VcpuId) {
        let mut replenished = false;
        while let Some(r) = self.books(vcpu).pending.front().copied() {
            if r.due > cx.now {
                break;
            }
            self.books_mut(vcpu).pending.pop_front();
            let s = self.servers.get_mut(vcpu);
            s.remaining = (s.remaining + r.amount).min(s.params.budget);
            let budget = s.remaining;
            cx.emit(|| CoreEvent::Replenish { vcpu, budget });
            replenished = true;
        }
        if replenished && self.servers.get(vcpu).pending.is_some() {
            self.apply_params(cx, vcpu, true);
        }
    }

    /// Puts parameters set by `adjust` into effect and balances the books to the new
    /// budget: a deficit is granted now (`grant_now`, at a replenishment) or queued one
    /// new period later (a VCPU at rest).
    fn apply_params(&mut self, cx: &mut Cx, vcpu: VcpuId, grant_now: bool) {
        let Some(params) = self.servers.get_mut(vcpu).pending.take() else {
            return;
        };
        // Split the chunk in progress at the change: its payback follows the old rules.
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
            let s = self.servers.get_mut(vcpu);
            s.remaining -= surplus.min(s.remaining);
        } else if held < budget {
            let deficit = budget - held;
            if grant_now {
                let s = self.servers.get_mut(vcpu);
                s.remaining += deficit;
                let budget = s.remaining;
                cx.emit(|| CoreEvent::Replenish { vcpu, budget });
            } else {
                self.queue(vcpu, cx.now + period, deficit);
            }
        }
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
        if self.books.len() <= vcpu.index() {
            self.books.resize(vcpu.index() + 1, None);
        }
        self.books[vcpu.index()] = Some(books);
        // The machine reschedules after every insertion.
        self.reschedule_owed = true;
    }

    fn remove_vcpu(&mut self, _cx: &mut Cx, vcpu: VcpuId) {
        if self.active.charge.involves(vcpu) {
            self.active = self.active.without(vcpu);
            self.reschedule_owed = true;
        }
        self.servers.remove(vcpu);
        self.books[vcpu.index()] = None;
    }

    fn wake(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.servers.get_mut(vcpu).has_work = true;
        self.must_reschedule(false)
    }

    fn sleep(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.servers.get_mut(vcpu).has_work = false;
        // The machine reschedules anyway when `vcpu` is the one running; its chunk closes
        // in that `do_schedule`.
        let running = self.active.run == Some(vcpu);
        self.must_reschedule(running)
    }

    fn burn(&mut self, cx: &mut Cx, _pcpu: PcpuId, ran: Nanos) {
        let Charge::Own(vcpu) = self.active.charge else {
            return;
        };
        let began = cx.now - ran;
        if self
            .books(vcpu)
            .chunk
            .is_some_and(|chunk| chunk.end != began)
        {
            // Time passed without this VCPU running (overhead): a new chunk begins.
            self.close_chunk(vcpu);
        }
        let taken = self.servers.take_budget(cx, vcpu, ran);
        self.servers.get_mut(vcpu).counters.consumed += taken;
        if !taken.is_zero() {
            let chunk = self.books_mut(vcpu).chunk.get_or_insert(Chunk {
                start: began,
                end: began,
                consumed: Nanos::ZERO,
            });
            chunk.end = cx.now;
            chunk.consumed += taken;
        }
        if self.servers.get(vcpu).remaining.is_zero() {
            self.close_chunk(vcpu);
        }
    }

    fn do_schedule(&mut self, _cx: &mut Cx, _pcpu: PcpuId) -> Decision {
        let plan = self.servers.plan_own_budget();
        if let Some(previous) = self.active.run {
            if plan.run != Some(previous) {
                // Preempted or blocked: the stretch ends now.
                self.close_chunk(previous);
            }
        }
        self.active = plan;
        self.reschedule_owed = false;
        self.servers.decision(plan)
    }

    fn next_timer(&self) -> Option<Nanos> {
        self.books
            .iter()
            .flatten()
            .filter_map(|b| b.pending.front().map(|r| r.due))
            .min()
    }

    fn handle_timer(&mut self, cx: &mut Cx) -> bool {
        for index in 0..self.books.len() {
            if self.books[index].is_some() {
                self.replenish_due(cx, VcpuId(index as u32));
            }
        }
        self.must_reschedule(false)
    }

    fn adjust(&mut self, cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) -> bool {
        let before = self.servers.get(vcpu).remaining;
        self.servers.adjust(vcpu, params);
        let cut = self.servers.get(vcpu).remaining < before;
        let books = self.books(vcpu);
        if books.pending.is_empty() && books.chunk.is_none() {
            self.apply_params(cx, vcpu, false);
        }
        self.must_reschedule(cut && self.active.charge.involves(vcpu))
    }

    fn view(&self, vcpu: VcpuId) -> VcpuView {
        self.servers.view(vcpu)
    }

    fn counters(&self, vcpu: VcpuId) -> BudgetCounters {
        self.servers.get(vcpu).counters
    }

    fn check_invariants(&self) -> Result<(), String> {
        self.servers.check_invariants()?;
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
            let in_chunk = books.chunk.map_or(Nanos::ZERO, |c| c.consumed);
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
        let now = self.servers.plan_own_budget();
        if !self.reschedule_owed && now != self.active {
            return Err(format!(
                "sporadic: plan in effect {:?} differs from the plan for the current state \
                 {:?} and no reschedule was asked for",
                self.active, now
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

    /// Runs `vcpu` alone for the given stretches `(from, to)` (ms), switching it out
    /// between them, and returns the policy.
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
            p.burn(&mut cx, PcpuId(0), ms(from) - at);
            p.wake(&mut cx, v);
            assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, Some(v));
            cx.now = ms(to);
            p.burn(&mut cx, PcpuId(0), ms(to - from));
            p.sleep(&mut cx, v);
            p.do_schedule(&mut cx, PcpuId(0));
            at = ms(to);
            p.check_invariants().unwrap();
        }
        p
    }

    #[test]
    fn each_chunk_is_paid_back_one_period_after_it_began() {
        let p = run_stretches(VcpuParams::server(ms(4), ms(10), 1), &[(0, 1), (3, 5)]);
        assert_eq!(
            p.pending_replenishments(VcpuId(0)),
            vec![
                Replenishment {
                    due: ms(10),
                    amount: ms(1)
                },
                Replenishment {
                    due: ms(13),
                    amount: ms(2)
                }
            ]
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
            vec![
                Replenishment {
                    due: ms(10),
                    amount: ms(1)
                },
                Replenishment {
                    due: ms(14),
                    amount: ms(2)
                }
            ]
        );
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
        p.burn(&mut cx, PcpuId(0), ms(1));
        // b is at rest (full, nothing pending): budget 3 and priority 0 apply now; the
        // extra 1 ms comes one new period (8 ms) later; b now beats a.
        assert!(p.adjust(&mut cx, b, &VcpuParams::server(ms(3), ms(8), 0)));
        assert_eq!(p.view(b).remaining_budget, Some(ms(2)));
        assert_eq!(
            p.pending_replenishments(b),
            vec![Replenishment {
                due: ms(9),
                amount: ms(1)
            }]
        );
        assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, Some(b));
        assert_eq!(
            p.pending_replenishments(a),
            vec![Replenishment {
                due: ms(10),
                amount: ms(1)
            }]
        );
        // a is not at rest: its cut to 1 ms waits for its payback at 10, where the books
        // are balanced to the new budget (the 1 ms due is all it may hold).
        assert!(!p.adjust(&mut cx, a, &VcpuParams::server(ms(1), ms(10), 1)));
        assert_eq!(p.view(a).remaining_budget, Some(ms(1)));
        p.check_invariants().unwrap();
        cx.now = ms(3);
        p.burn(&mut cx, PcpuId(0), ms(2));
        assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, Some(a));
        cx.now = ms(4);
        p.burn(&mut cx, PcpuId(0), ms(1));
        p.sleep(&mut cx, a);
        p.do_schedule(&mut cx, PcpuId(0));
        cx.now = ms(10);
        p.burn(&mut cx, PcpuId(0), ms(6));
        p.handle_timer(&mut cx);
        // At 10: +1 (from [0,1)); the books held 1 + 1 (from [3,4), due 13) = 2 > 1: the
        // latest pending payback is cut.
        assert_eq!(p.view(a).remaining_budget, Some(ms(1)));
        assert!(p.pending_replenishments(a).is_empty());
        p.check_invariants().unwrap();
    }

    #[test]
    fn overhead_gap_inside_a_decision_splits_the_chunk() {
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
        p.burn(&mut cx, PcpuId(0), ms(1));
        // A reschedule chose v again, after 1 ms of overhead (not burned).
        p.do_schedule(&mut cx, PcpuId(0));
        cx.now = ms(3);
        p.burn(&mut cx, PcpuId(0), ms(1));
        p.sleep(&mut cx, v);
        p.do_schedule(&mut cx, PcpuId(0));
        assert_eq!(
            p.pending_replenishments(v),
            vec![
                Replenishment {
                    due: ms(10),
                    amount: ms(1)
                },
                Replenishment {
                    due: ms(12),
                    amount: ms(1)
                }
            ]
        );
        p.check_invariants().unwrap();
    }
}
