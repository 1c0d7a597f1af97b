//! One step of the machine: what is due (the end of overhead, policy timers, ticks, the
//! end of a slice), `do_schedule` on each pcpu that asked, and a decision taking effect.
//! The driving API in [`super`] (`poll_timeout`, `handle_timeout`) calls these, compiled
//! twice: for the lone pcpu and for every machine (see `Machine::lone`).

use super::pcpu::Pcpu;
use super::pools::Pool;
use super::{Activity, Machine, OverheadCharge, ReplenishMode};
use crate::event::{CoreEvent, Cx, ScheduleReason};
use crate::model::{PcpuId, VcpuId};
use crate::policy::Decision;
use crate::time::Nanos;

impl Machine {
    /// Whether this is the usual machine: one pcpu, in the only pool. The steps a driver
    /// takes all the time ([`Self::poll_timeout`], [`Self::handle_timeout`], accounting)
    /// are compiled twice: with `LONE = true` for that machine, where pcpu 0 is local pcpu
    /// 0 of pool 0 and nothing concerns other pcpus, so no step looks pools up or asks
    /// whom to tickle; and with `LONE = false` for every machine (the general code).
    #[inline]
    pub(super) fn lone(&self) -> bool {
        self.lone
    }

    /// Recomputes [`Self::lone`] after the pools changed.
    pub(super) fn refresh_lone(&mut self) {
        self.lone = self.pcpus.len() == 1 && self.pools.len() == 1 && self.pcpus[0].pool.is_some();
    }

    /// The pcpus a step visits: see [`Self::lone`].
    #[inline(always)]
    pub(super) fn pcpus_of<const LONE: bool>(&self) -> &[Pcpu] {
        if LONE {
            &self.pcpus[..1]
        } else {
            &self.pcpus
        }
    }

    /// Pcpu `i`'s pool and its local index there (`None`: free); see [`Self::lone`].
    #[inline(always)]
    pub(super) fn place<const LONE: bool>(&self, i: usize) -> Option<(usize, u32)> {
        if LONE {
            Some((0, 0))
        } else {
            self.pcpus[i]
                .pool
                .map(|(pool, local)| (pool as usize, local))
        }
    }

    pub(super) fn poll_timeout_in<const LONE: bool>(&self) -> Nanos {
        let mut t = Nanos::MAX;
        for p in self.pcpus_of::<LONE>() {
            if let Some(tick) = p.next_tick {
                t = t.min(tick);
            }
            match p.activity {
                Activity::Overhead { until, .. } => t = t.min(until),
                _ => {
                    if p.resched.is_some() {
                        t = t.min(p.accounted_to);
                    }
                    if let Some(end) = p.slice_end {
                        t = t.min(end);
                    }
                }
            }
        }
        let tick_mode = self.config.replenishment == ReplenishMode::Tick;
        let timer = |pool: &Pool| {
            if tick_mode && pool.quantum_tick {
                None
            } else {
                pool.policy.next_timer()
            }
        };
        let due = if LONE {
            timer(&self.pools[0])
        } else {
            self.pools.iter().filter_map(timer).min()
        };
        if let Some(due) = due {
            t = t.min(due.max(self.now));
        }
        t
    }

    /// [`Self::handle_timeout`]; `LONE`: see [`Self::lone`].
    pub(super) fn handle_timeout_in<const LONE: bool>(&mut self, now: Nanos) {
        self.account_inline::<LONE>(now);
        let tick_mode = self.config.replenishment == ReplenishMode::Tick;
        let due = |p: &Pool| {
            if tick_mode && p.quantum_tick {
                return false;
            }
            p.policy.next_timer().is_some_and(|due| due <= now)
        };
        for pool in 0..if LONE { 1 } else { self.pools.len() } {
            if !due(&self.pools[pool]) {
                continue;
            }
            let mut cx = Cx {
                now,
                log: &mut self.log,
            };
            if self.pools[pool].policy.handle_timer(&mut cx) {
                if LONE {
                    self.pcpus[0].request(ScheduleReason::Preempt);
                } else {
                    self.tickle(pool, ScheduleReason::Preempt);
                }
            }
        }
        for i in 0..self.pcpus_of::<LONE>().len() {
            let Some((pool, local)) = self.place::<LONE>(i) else {
                continue;
            };
            if let Some(tick) = self.pcpus[i].next_tick.filter(|&tick| tick <= now) {
                let p = &mut self.pools[pool];
                let timers_at_tick = tick_mode && p.quantum_tick;
                let every = p.tick.expect("a pcpu with a next tick has a tick interval");
                let several = !LONE && p.cpus.len() > 1;
                let mut cx = Cx {
                    now,
                    log: &mut self.log,
                };
                let policy = p.policy.as_mut();
                let mut resched = policy.tick(&mut cx, PcpuId(local));
                if timers_at_tick {
                    resched |= policy.handle_timer(&mut cx);
                }
                // The next tick is the first grid point after now. In the usual case (this
                // tick is handled before the next one is due) it is simply one interval on,
                // and the division is skipped.
                let following = tick + every;
                let next = if now < following {
                    following
                } else {
                    let behind = (now - following).as_ns() / every.as_ns();
                    following + Nanos((behind + 1) * every.as_ns())
                };
                let p = &mut self.pcpus[i];
                p.next_tick = Some(next);
                if resched {
                    p.request(ScheduleReason::Tick);
                }
                // On several pcpus a tick may concern other pcpus than its own (due timers
                // processed at the tick; Credit's accounting, which may park a VCPU running
                // elsewhere or unpark one that beats another pcpu's): the policy names them.
                if several {
                    self.tickle(pool, ScheduleReason::Preempt);
                }
            }
            let p = &mut self.pcpus[i];
            if p.slice_end.is_some_and(|end| end <= now) {
                p.slice_end = None;
                p.request(ScheduleReason::BudgetExhausted);
            }
            if !matches!(p.activity, Activity::Overhead { .. }) {
                if let Some(reason) = p.resched.take() {
                    self.schedule::<LONE>(PcpuId(i as u32), pool, local, reason);
                }
            }
        }
    }

    /// Runs `do_schedule` on `pcpu` (index `local` of pool `pool`) at `self.now` and starts
    /// the decision, after overhead; `LONE`: see [`Self::lone`].
    fn schedule<const LONE: bool>(
        &mut self,
        pcpu: PcpuId,
        pool: usize,
        local: u32,
        reason: ScheduleReason,
    ) {
        let now = self.now;
        let mut cx = Cx {
            now,
            log: &mut self.log,
        };
        let decision = self.pools[pool].policy.do_schedule(&mut cx, PcpuId(local));
        debug_assert!(
            decision.slice != Some(Nanos::ZERO),
            "a zero slice would loop"
        );
        let overheads = self.pools[pool].overheads;
        let several = !LONE && self.pools[pool].cpus.len() > 1;
        let p = &mut self.pcpus[pcpu.index()];
        p.stats.do_schedule_calls += 1;
        let previous = p.current();
        let switching = decision.run != previous;
        let mut cost = overheads.do_schedule;
        if LONE {
            cost += overheads.lock;
        } else if !overheads.lock.is_zero() {
            cost += Nanos(overheads.lock.as_ns() * self.pools[pool].cpus.len() as u64);
        }
        if switching {
            cost += overheads.context_switch;
            p.stats.context_switches += 1;
            if let Some(prev) = previous {
                let e = &mut self.vcpus[prev.index()];
                if e.has_work && e.present {
                    e.stats.preemptions += 1;
                }
            }
            if let Some(next) = decision.run.filter(|_| !LONE && self.pcpus.len() > 1) {
                let e = &mut self.vcpus[next.index()];
                if e.last_pcpu.is_some_and(|last| last != pcpu.0) {
                    e.stats.migrations += 1;
                    cost += overheads.migration;
                }
            }
        }
        if cost.is_zero() {
            self.start(pcpu, decision, reason, previous, now);
        } else {
            self.log.emit(now, || CoreEvent::Overhead { pcpu, cost });
            let p = &mut self.pcpus[pcpu.index()];
            p.slice_end = None;
            p.activity = Activity::Overhead {
                since: now,
                until: now + cost,
                decision,
                reason,
            };
        }
        // The VCPU this pcpu let go may now belong elsewhere (Xen tickles for a VCPU put
        // back on the run queue).
        if several {
            self.tickle(pool, ScheduleReason::Preempt);
        }
    }

    /// Puts `decision` into effect on `pcpu` at `self.now`. `decided_at` is the instant of
    /// the `do_schedule` that made it (earlier than now after overhead). Inlined: it is
    /// part of every step.
    #[inline(always)]
    pub(super) fn start(
        &mut self,
        pcpu: PcpuId,
        decision: Decision,
        reason: ScheduleReason,
        previous: Option<VcpuId>,
        decided_at: Nanos,
    ) {
        let now = self.now;
        let after_overhead = decided_at != now;
        // With overhead charged to the decision, its slice (a budget) was being spent since
        // `do_schedule`; otherwise it starts now. A slice used up by the overhead ends at
        // once.
        let slice_from = match self.config.overhead_charge {
            OverheadCharge::Incoming => decided_at,
            OverheadCharge::None => now,
        };
        let p = &mut self.pcpus[pcpu.index()];
        p.last_run = decision.run;
        p.activity = match decision.run {
            Some(v) => Activity::Running(v),
            None => Activity::Idle,
        };
        p.slice_end = decision.slice.map(|s| (slice_from + s).max(now));
        // Only a machine of several pcpus has migrations to count.
        if let Some(v) = decision.run.filter(|_| self.pcpus.len() > 1) {
            self.vcpus[v.index()].last_pcpu = Some(pcpu.0);
        }
        if decision.run != previous {
            if let Some(v) = decision.run {
                self.vcpus[v.index()].stats.scheduled += 1;
            }
            self.log.emit(now, || CoreEvent::Switch {
                pcpu,
                from: previous,
                to: decision.run,
                reason,
            });
        } else if after_overhead {
            self.log.emit(now, || CoreEvent::Resume {
                pcpu,
                vcpu: decision.run,
            });
        }
    }
}
