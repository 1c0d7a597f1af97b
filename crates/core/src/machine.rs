//! The machine: pcpus, VCPUs, the scheduler tick, the overhead model and one policy — the
//! part of a hypervisor's scheduler that is the same for every policy (Xen's
//! `xen/common/sched/core.c`).
//!
//! # Driving it
//! A driver (the simulator, or the real-time executor on Linux) owns time. It reports
//! what guests do with [`Machine::wake`] and [`Machine::block`], asks
//! [`Machine::poll_timeout`] when to call back, and calls [`Machine::handle_timeout`] then.
//! Between two calls the machine's state is constant: what runs on each pcpu is
//! [`Machine::activity`] until the next call. After reporting events at an instant, a driver
//! calls `handle_timeout(now)` while `poll_timeout() <= now` (a wake that should preempt
//! raises a reschedule "softirq" that is due at once; several events at one instant then
//! cost one `do_schedule`).
//!
//! ```
//! use rtvmm_core::machine::{Machine, MachineConfig};
//! use rtvmm_core::model::{DomainId, PcpuId, VcpuParams};
//! use rtvmm_core::policy::PolicyConfig;
//! use rtvmm_core::Nanos;
//!
//! let mut m = Machine::new(MachineConfig::default(), PolicyConfig::Deferrable).unwrap();
//! let ms = Nanos::from_ms;
//! let v = m.add_vcpu(Nanos::ZERO, DomainId(0), VcpuParams::server(ms(2), ms(10), 1)).unwrap();
//! m.wake(Nanos::ZERO, v);
//! while m.poll_timeout() <= Nanos::ZERO {
//!     m.handle_timeout(Nanos::ZERO);
//! }
//! assert_eq!(m.running(PcpuId(0)), Some(v));
//! // Its 2 ms budget runs out at 2 ms; the machine asks to be called then.
//! assert_eq!(m.poll_timeout(), ms(1)); // first the 1 ms tick
//! ```
//!
//! # The tick
//! Each policy says how it wants the periodic tick ([`Policy::tick_interval`]): the RT-Xen
//! servers every quantum (each tick reschedules), Credit its own tick (which reschedules
//! only when the policy asks), SEDF, RTDS and ARINC 653 none. Ticks lie on a grid that
//! starts when the policy starts (time 0, or the instant of a hot swap). So
//! [`PcpuStats::do_schedule_calls`] counts what the policy really asked for, as Xen's would.
//!
//! # Time accounting
//! Each pcpu is, at every instant, running a VCPU, running IDLE, or in scheduler overhead.
//! `busy + idle + overhead` equals the time accounted so far, exactly. During overhead no
//! VCPU makes progress; who pays for it is [`OverheadCharge`]: by default the decision
//! that follows it is charged as if it ran (its budget, credit or slice is consumed, and
//! its slice counts from the instant `do_schedule` began), as Xen measures a VCPU's run
//! time from the start of the `do_schedule` that chose it.

use std::cell::Cell;

use crate::event::{CoreEvent, Cx, EventLog, ScheduleReason};
use crate::model::{DomainId, ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::{
    BudgetCounters, Decision, Policy, PolicyConfig, PolicyKind, Spent, TickInterval,
};
use crate::time::Nanos;

/// When due replenishments take effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ReplenishMode {
    /// At their due time.
    #[default]
    Exact,
    /// At the first tick at or after their due time (the 2011 implementation scanned its
    /// replenishment queue once per quantum).
    Tick,
}

/// Costs charged as pcpu overhead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Overheads {
    /// Charged for every `do_schedule` call.
    pub do_schedule: Nanos,
    /// Charged in addition when the chosen VCPU differs from the previous one.
    pub context_switch: Nanos,
}

/// Who pays for scheduler overhead (the cost of `do_schedule` and of the switch it causes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OverheadCharge {
    /// The decision that follows the overhead is charged for it as if it ran: the chosen
    /// VCPU's budget (credit, slice) is consumed, and its slice counts from the instant
    /// `do_schedule` began, as in Xen. Nobody pays when IDLE runs on nobody's budget.
    #[default]
    Incoming,
    /// Nobody: overhead time is lost to everyone and consumes no budget.
    None,
}

impl OverheadCharge {
    pub fn name(self) -> &'static str {
        match self {
            OverheadCharge::Incoming => "incoming",
            OverheadCharge::None => "none",
        }
    }

    pub fn from_name(name: &str) -> Option<OverheadCharge> {
        match name {
            "incoming" => Some(OverheadCharge::Incoming),
            "none" => Some(OverheadCharge::None),
            _ => None,
        }
    }
}

/// Machine-wide settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MachineConfig {
    pub pcpus: u32,
    /// The scheduling quantum: the RT-Xen servers' tick interval.
    pub quantum: Nanos,
    pub replenishment: ReplenishMode,
    pub overheads: Overheads,
    pub overhead_charge: OverheadCharge,
}

impl Default for MachineConfig {
    fn default() -> Self {
        MachineConfig {
            pcpus: 1,
            quantum: Nanos::from_ms(1),
            replenishment: ReplenishMode::Exact,
            overheads: Overheads::default(),
            overhead_charge: OverheadCharge::Incoming,
        }
    }
}

/// What a pcpu is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    Idle,
    Running(VcpuId),
    /// Scheduler overhead from `since` (the `do_schedule` call) until `until`; then
    /// `decision` takes effect.
    Overhead {
        since: Nanos,
        until: Nanos,
        decision: Decision,
        reason: ScheduleReason,
    },
}

/// Per-pcpu counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PcpuStats {
    pub busy: Nanos,
    pub idle: Nanos,
    pub overhead: Nanos,
    pub do_schedule_calls: u64,
    pub context_switches: u64,
}

/// Per-VCPU counters kept by the machine (budget counters are the policy's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VcpuStats {
    pub run: Nanos,
    /// Times switched in.
    pub scheduled: u64,
    /// Times switched out while it still had work.
    pub preemptions: u64,
}

/// Errors of machine operations.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MachineError {
    #[error("vcpu {vcpu}: {error}")]
    Param { vcpu: u32, error: ParamError },
    #[error(
        "{0} pcpus: this version schedules one pcpu (several pcpus come with the multicore work)"
    )]
    TooManyPcpus(u32),
    #[error("pcpus: must be at least 1")]
    NoPcpu,
    #[error("quantum: must be greater than 0")]
    QuantumZero,
    #[error("vcpu {0}: no such VCPU")]
    UnknownVcpu(u32),
}

#[derive(Clone, Debug)]
struct VcpuEntry {
    domain: DomainId,
    params: VcpuParams,
    has_work: bool,
    present: bool,
    stats: VcpuStats,
    /// Budget counters of policies this VCPU has left (hot swap, removal): the live
    /// policy's counters are added to these.
    earlier_counters: BudgetCounters,
}

#[derive(Clone, Debug)]
struct Pcpu {
    activity: Activity,
    accounted_to: Nanos,
    /// When the current decision's slice runs out.
    slice_end: Option<Nanos>,
    /// A reschedule is due at once ("softirq raised"), for this reason.
    resched: Option<ScheduleReason>,
    /// The next tick; `None` when the policy does not tick.
    next_tick: Option<Nanos>,
    /// The decision in effect before the current overhead (None = IDLE).
    last_run: Option<VcpuId>,
    stats: PcpuStats,
}

impl Pcpu {
    /// The VCPU that runs (or is about to run after overhead); None for IDLE.
    fn current(&self) -> Option<VcpuId> {
        match self.activity {
            Activity::Idle => None,
            Activity::Running(v) => Some(v),
            Activity::Overhead { decision, .. } => decision.run,
        }
    }

    fn request(&mut self, reason: ScheduleReason) {
        self.resched = Some(self.resched.map_or(reason, |r| r.min(reason)));
    }
}

/// One machine: its pcpus, its VCPUs and the policy that schedules them.
pub struct Machine {
    config: MachineConfig,
    policy_config: PolicyConfig,
    policy: PolicySlot,
    vcpus: Vec<VcpuEntry>,
    pcpus: Vec<Pcpu>,
    now: Nanos,
    log: EventLog,
    /// The tick of the current policy: its interval (`None`: no tick) and whether it is the
    /// RT-Xen servers' quantum tick (which processes due timers in `tick` replenishment
    /// mode).
    tick: Option<Nanos>,
    quantum_tick: bool,
}

/// The policy and its next timer, remembered until the policy next changes: the driver
/// polls [`Machine::poll_timeout`] far more often than the policy changes. The policy is
/// reached mutably only through [`PolicySlot::get_mut`], which forgets the remembered
/// timer, so no hook can leave it stale.
struct PolicySlot {
    policy: Box<dyn Policy>,
    /// `None`: not known since the last change.
    timer: Cell<Option<Option<Nanos>>>,
}

impl PolicySlot {
    fn new(policy: Box<dyn Policy>) -> PolicySlot {
        PolicySlot {
            policy,
            timer: Cell::new(None),
        }
    }

    #[inline]
    fn get(&self) -> &dyn Policy {
        self.policy.as_ref()
    }

    /// The policy, for a hook that may change it: the remembered timer is forgotten.
    #[inline]
    fn get_mut(&mut self) -> &mut dyn Policy {
        self.timer.set(None);
        self.policy.as_mut()
    }

    /// The policy's [`Policy::next_timer`], remembered until the next [`Self::get_mut`].
    #[inline]
    fn next_timer(&self) -> Option<Nanos> {
        match self.timer.get() {
            Some(due) => due,
            None => {
                let due = self.policy.next_timer();
                self.timer.set(Some(due));
                due
            }
        }
    }
}

impl Machine {
    pub fn new(config: MachineConfig, policy: PolicyConfig) -> Result<Machine, MachineError> {
        if config.pcpus == 0 {
            return Err(MachineError::NoPcpu);
        }
        if config.pcpus > 1 {
            return Err(MachineError::TooManyPcpus(config.pcpus));
        }
        if config.quantum.is_zero() {
            return Err(MachineError::QuantumZero);
        }
        let built = policy.build(config.pcpus);
        Ok(Self::with_policy(config, policy, built))
    }

    /// A machine driving `built` (the policy `policy` describes); `config` is valid.
    fn with_policy(config: MachineConfig, policy: PolicyConfig, built: Box<dyn Policy>) -> Machine {
        let (tick, quantum_tick) = Self::resolve_tick(built.tick_interval(), config.quantum);
        let pcpus = (0..config.pcpus)
            .map(|_| Pcpu {
                activity: Activity::Idle,
                accounted_to: Nanos::ZERO,
                slice_end: None,
                resched: Some(ScheduleReason::Reconfigure),
                next_tick: tick,
                last_run: None,
                stats: PcpuStats::default(),
            })
            .collect();
        Machine {
            config,
            policy: PolicySlot::new(built),
            policy_config: policy,
            vcpus: Vec::new(),
            pcpus,
            now: Nanos::ZERO,
            log: EventLog::new(false),
            tick,
            quantum_tick,
        }
    }

    /// The tick interval of a policy (None: no tick) and whether it is the quantum tick.
    fn resolve_tick(interval: TickInterval, quantum: Nanos) -> (Option<Nanos>, bool) {
        match interval {
            TickInterval::Quantum => (Some(quantum), true),
            // A zero interval (refused when a configuration is validated) would loop.
            TickInterval::Every(every) => (Some(every.max(Nanos(1))), false),
            TickInterval::None => (None, false),
        }
    }

    /// Whether the policy's timers wait for the tick (`tick` replenishment on a policy with
    /// the quantum tick) instead of being exact.
    fn timers_at_tick(&self) -> bool {
        self.config.replenishment == ReplenishMode::Tick && self.quantum_tick
    }

    pub fn config(&self) -> &MachineConfig {
        &self.config
    }

    pub fn policy_kind(&self) -> PolicyKind {
        self.policy.get().kind()
    }

    pub fn policy_config(&self) -> &PolicyConfig {
        &self.policy_config
    }

    /// The policy, for its views and counters.
    pub fn policy(&self) -> &dyn Policy {
        self.policy.get()
    }

    /// Turns event recording on or off (off by default).
    pub fn set_recording(&mut self, enabled: bool) {
        self.log = EventLog::new(enabled);
    }

    /// Takes the events recorded so far.
    pub fn drain_events(&mut self) -> Vec<(Nanos, CoreEvent)> {
        self.log.drain().collect()
    }

    /// The last instant the machine was told about.
    pub fn now(&self) -> Nanos {
        self.now
    }

    /// Adds a VCPU of `domain` at `now`, without work. Fails on parameters the policy
    /// cannot accept.
    pub fn add_vcpu(
        &mut self,
        now: Nanos,
        domain: DomainId,
        params: VcpuParams,
    ) -> Result<VcpuId, MachineError> {
        let id = VcpuId(self.vcpus.len() as u32);
        self.policy
            .get()
            .validate(&params)
            .map_err(|error| MachineError::Param { vcpu: id.0, error })?;
        self.account(now);
        let mut cx = Cx {
            now,
            log: &mut self.log,
        };
        self.policy.get_mut().insert_vcpu(&mut cx, id, &params);
        self.vcpus.push(VcpuEntry {
            domain,
            params,
            has_work: false,
            present: true,
            stats: VcpuStats::default(),
            earlier_counters: BudgetCounters::default(),
        });
        self.pcpus[0].request(ScheduleReason::Reconfigure);
        Ok(id)
    }

    /// Removes a VCPU at `now`; the pcpu reschedules at once.
    pub fn remove_vcpu(&mut self, now: Nanos, vcpu: VcpuId) -> Result<(), MachineError> {
        self.entry(vcpu)?;
        self.account(now);
        for p in &mut self.pcpus {
            if p.current() == Some(vcpu) {
                p.activity = Activity::Idle;
                p.last_run = None;
                p.slice_end = None;
            }
            // Even when it is not running, the VCPU may be what the running decision is paid
            // from (an idling PTPS server, a lending WCPS/CRPS server): decide again.
            p.request(ScheduleReason::Reconfigure);
        }
        let mut cx = Cx {
            now,
            log: &mut self.log,
        };
        let counters = self.policy.get().counters(vcpu);
        self.vcpus[vcpu.index()].earlier_counters += counters;
        self.policy.get_mut().remove_vcpu(&mut cx, vcpu);
        let e = &mut self.vcpus[vcpu.index()];
        e.present = false;
        e.has_work = false;
        Ok(())
    }

    /// New parameters for a VCPU (Xen's `sched-set`/`adjust`); see [`Policy::adjust`] for
    /// when they take effect.
    pub fn adjust(
        &mut self,
        now: Nanos,
        vcpu: VcpuId,
        params: VcpuParams,
    ) -> Result<(), MachineError> {
        self.entry(vcpu)?;
        self.policy
            .get()
            .validate(&params)
            .map_err(|error| MachineError::Param {
                vcpu: vcpu.0,
                error,
            })?;
        self.account(now);
        let mut cx = Cx {
            now,
            log: &mut self.log,
        };
        let resched = self.policy.get_mut().adjust(&mut cx, vcpu, &params);
        if resched {
            self.pcpus[0].request(ScheduleReason::Reconfigure);
        }
        self.vcpus[vcpu.index()].params = params;
        Ok(())
    }

    /// Replaces the policy at `now` ("hot swap"), keeping every VCPU and whether it has
    /// work. The new policy starts its VCPUs as if inserted now. Fails, changing nothing,
    /// when a VCPU's parameters do not suit the new policy.
    pub fn swap_policy(&mut self, now: Nanos, config: PolicyConfig) -> Result<(), MachineError> {
        let mut policy = config.build(self.config.pcpus);
        for (i, e) in self.vcpus.iter().enumerate().filter(|(_, e)| e.present) {
            policy
                .validate(&e.params)
                .map_err(|error| MachineError::Param {
                    vcpu: i as u32,
                    error,
                })?;
        }
        self.account(now);
        let mut cx = Cx {
            now,
            log: &mut self.log,
        };
        for (i, e) in self.vcpus.iter().enumerate().filter(|(_, e)| e.present) {
            policy.insert_vcpu(&mut cx, VcpuId(i as u32), &e.params);
        }
        for (i, _) in self
            .vcpus
            .iter()
            .enumerate()
            .filter(|(_, e)| e.present && e.has_work)
        {
            policy.wake(&mut cx, VcpuId(i as u32));
        }
        for (i, e) in self.vcpus.iter_mut().enumerate().filter(|(_, e)| e.present) {
            e.earlier_counters += self.policy.get().counters(VcpuId(i as u32));
        }
        let (tick, quantum_tick) = Self::resolve_tick(policy.tick_interval(), self.config.quantum);
        self.policy = PolicySlot::new(policy);
        self.policy_config = config;
        self.tick = tick;
        self.quantum_tick = quantum_tick;
        for p in &mut self.pcpus {
            // The old decision is meaningless to the new policy: decide again at once. The
            // new policy's tick grid starts now.
            p.slice_end = None;
            p.next_tick = tick.map(|every| now + every);
            p.request(ScheduleReason::Reconfigure);
        }
        Ok(())
    }

    /// The guest of `vcpu` has work.
    pub fn wake(&mut self, now: Nanos, vcpu: VcpuId) {
        self.account(now);
        let e = &mut self.vcpus[vcpu.index()];
        if !e.present || e.has_work {
            return;
        }
        e.has_work = true;
        self.log.emit(now, || CoreEvent::Wake { vcpu });
        let mut cx = Cx {
            now,
            log: &mut self.log,
        };
        let resched = self.policy.get_mut().wake(&mut cx, vcpu);
        if resched {
            self.pcpus[0].request(ScheduleReason::Preempt);
        }
    }

    /// The guest of `vcpu` has no work.
    pub fn block(&mut self, now: Nanos, vcpu: VcpuId) {
        self.account(now);
        let e = &mut self.vcpus[vcpu.index()];
        if !e.present || !e.has_work {
            return;
        }
        e.has_work = false;
        self.log.emit(now, || CoreEvent::Block { vcpu });
        let mut cx = Cx {
            now,
            log: &mut self.log,
        };
        let asked = self.policy.get_mut().sleep(&mut cx, vcpu);
        let p = &mut self.pcpus[0];
        if p.current() == Some(vcpu) {
            p.request(ScheduleReason::Block);
        } else if asked {
            p.request(ScheduleReason::Preempt);
        }
    }

    fn entry(&self, vcpu: VcpuId) -> Result<&VcpuEntry, MachineError> {
        self.vcpus
            .get(vcpu.index())
            .filter(|e| e.present)
            .ok_or(MachineError::UnknownVcpu(vcpu.0))
    }

    /// The domain a VCPU belongs to.
    pub fn domain_of(&self, vcpu: VcpuId) -> DomainId {
        self.vcpus[vcpu.index()].domain
    }

    /// The VCPU's parameters as last set.
    pub fn params(&self, vcpu: VcpuId) -> &VcpuParams {
        &self.vcpus[vcpu.index()].params
    }

    /// Number of VCPU ids handed out (removed ones included).
    pub fn vcpu_count(&self) -> usize {
        self.vcpus.len()
    }

    /// How the VCPU's budget was spent over the whole run, across hot swaps and removal.
    pub fn budget_counters(&self, vcpu: VcpuId) -> BudgetCounters {
        let e = &self.vcpus[vcpu.index()];
        let mut total = e.earlier_counters;
        if e.present {
            total += self.policy.get().counters(vcpu);
        }
        total
    }

    pub fn vcpu_stats(&self, vcpu: VcpuId) -> VcpuStats {
        self.vcpus[vcpu.index()].stats
    }

    pub fn pcpu_stats(&self, pcpu: PcpuId) -> PcpuStats {
        self.pcpus[pcpu.index()].stats
    }

    /// Time accounted so far on `pcpu` (busy + idle + overhead add up to it).
    pub fn accounted(&self, pcpu: PcpuId) -> Nanos {
        self.pcpus[pcpu.index()].accounted_to
    }

    pub fn activity(&self, pcpu: PcpuId) -> Activity {
        self.pcpus[pcpu.index()].activity
    }

    /// The VCPU making progress on `pcpu` now: None while IDLE or in overhead.
    pub fn running(&self, pcpu: PcpuId) -> Option<VcpuId> {
        match self.pcpus[pcpu.index()].activity {
            Activity::Running(v) => Some(v),
            _ => None,
        }
    }

    /// Accounts time up to `now` without handling anything due (for the end of a run).
    pub fn advance(&mut self, now: Nanos) {
        self.account(now);
    }

    /// The machine's and the policy's invariants: time adds up on every pcpu, what runs is
    /// a present VCPU with work, and the policy's own checks.
    pub fn check_invariants(&self) -> Result<(), String> {
        for (i, p) in self.pcpus.iter().enumerate() {
            let sum = p.stats.busy + p.stats.idle + p.stats.overhead;
            if sum != p.accounted_to {
                return Err(format!(
                    "pcpu {i}: busy {} + idle {} + overhead {} != accounted {}",
                    p.stats.busy, p.stats.idle, p.stats.overhead, p.accounted_to
                ));
            }
            if let Activity::Running(v) = p.activity {
                if !self.vcpus[v.index()].present {
                    return Err(format!("pcpu {i} runs removed vcpu {}", v.0));
                }
            }
        }
        self.policy.get().check_invariants()
    }

    /// Whether the guest of `vcpu` has work, as last reported.
    pub fn has_work(&self, vcpu: VcpuId) -> bool {
        self.vcpus[vcpu.index()].has_work
    }

    /// When the machine next needs `handle_timeout`: the tick, the end of a slice or of
    /// overhead, a due policy timer, or now if a reschedule is pending.
    pub fn poll_timeout(&self) -> Nanos {
        let mut t = Nanos::MAX;
        for p in &self.pcpus {
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
        if !self.timers_at_tick() {
            if let Some(due) = self.policy.next_timer() {
                t = t.min(due.max(self.now));
            }
        }
        t
    }

    /// Processes everything due at or before `now`, in a fixed order: the end of overhead,
    /// policy timers, the tick, the end of a slice; then `do_schedule` if any asked for it.
    pub fn handle_timeout(&mut self, now: Nanos) {
        self.account_inline(now);
        if !self.timers_at_tick() && self.policy.next_timer().is_some_and(|due| due <= now) {
            let mut cx = Cx {
                now,
                log: &mut self.log,
            };
            let resched = self.policy.get_mut().handle_timer(&mut cx);
            if resched {
                self.pcpus[0].request(ScheduleReason::Preempt);
            }
        }
        for i in 0..self.pcpus.len() {
            if let Some(tick) = self.pcpus[i].next_tick.filter(|&tick| tick <= now) {
                let timers_at_tick = self.timers_at_tick();
                let mut cx = Cx {
                    now,
                    log: &mut self.log,
                };
                let mut resched = self.policy.get_mut().tick(&mut cx, PcpuId(i as u32));
                if timers_at_tick {
                    resched |= self.policy.get_mut().handle_timer(&mut cx);
                }
                let every = self
                    .tick
                    .expect("a pcpu with a next tick has a tick interval");
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
            }
            let p = &mut self.pcpus[i];
            if p.slice_end.is_some_and(|end| end <= now) {
                p.slice_end = None;
                p.request(ScheduleReason::BudgetExhausted);
            }
            if !matches!(p.activity, Activity::Overhead { .. }) {
                if let Some(reason) = p.resched.take() {
                    self.schedule(PcpuId(i as u32), reason);
                }
            }
        }
    }

    /// Runs `do_schedule` on `pcpu` at `self.now` and starts the decision, after overhead.
    fn schedule(&mut self, pcpu: PcpuId, reason: ScheduleReason) {
        let now = self.now;
        let mut cx = Cx {
            now,
            log: &mut self.log,
        };
        let decision = self.policy.get_mut().do_schedule(&mut cx, pcpu);
        debug_assert!(
            decision.slice != Some(Nanos::ZERO),
            "a zero slice would loop"
        );
        let p = &mut self.pcpus[pcpu.index()];
        p.stats.do_schedule_calls += 1;
        let previous = p.current();
        let switching = decision.run != previous;
        let mut cost = self.config.overheads.do_schedule;
        if switching {
            cost += self.config.overheads.context_switch;
            p.stats.context_switches += 1;
            if let Some(prev) = previous {
                let e = &mut self.vcpus[prev.index()];
                if e.has_work && e.present {
                    e.stats.preemptions += 1;
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
    }

    /// Puts `decision` into effect on `pcpu` at `self.now`. `decided_at` is the instant of
    /// the `do_schedule` that made it (earlier than now after overhead).
    fn start(
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

    /// Accounts every pcpu's time up to `now` and charges the policy for it.
    fn account(&mut self, now: Nanos) {
        self.account_inline(now);
    }

    /// [`Self::account`], inlined into `handle_timeout`: the call is made on every step.
    #[inline(always)]
    fn account_inline(&mut self, now: Nanos) {
        assert!(
            now >= self.now,
            "time went backwards: {} after {}",
            now,
            self.now
        );
        self.now = now;
        for i in 0..self.pcpus.len() {
            let pcpu = PcpuId(i as u32);
            loop {
                let p = &mut self.pcpus[i];
                let from = p.accounted_to;
                match p.activity {
                    Activity::Overhead {
                        since,
                        until,
                        decision,
                        reason,
                    } => {
                        let end = until.min(now);
                        let spent = end - from;
                        p.stats.overhead += spent;
                        p.accounted_to = end;
                        if self.config.overhead_charge == OverheadCharge::Incoming
                            && !spent.is_zero()
                        {
                            let mut cx = Cx {
                                now: end,
                                log: &mut self.log,
                            };
                            self.policy
                                .get_mut()
                                .burn(&mut cx, pcpu, spent, Spent::Overhead);
                        }
                        if until > now {
                            break;
                        }
                        // Overhead over: the decision starts at `until`.
                        let previous = self.pcpus[i].last_run;
                        self.now = until;
                        self.start(pcpu, decision, reason, previous, since);
                        self.now = now;
                    }
                    activity => {
                        if from == now {
                            break;
                        }
                        let ran = now - from;
                        match activity {
                            Activity::Running(v) => {
                                p.stats.busy += ran;
                                self.vcpus[v.index()].stats.run += ran;
                            }
                            _ => p.stats.idle += ran,
                        }
                        p.accounted_to = now;
                        let mut cx = Cx {
                            now,
                            log: &mut self.log,
                        };
                        self.policy
                            .get_mut()
                            .burn(&mut cx, pcpu, ran, Spent::Running);
                        break;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! The machine alone, driven with a fake policy that records what it is asked: the
    //! tick grid, when `do_schedule` runs, slices, overhead and who pays for it, and the
    //! time-accounting identity.
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::model::ParamError;
    use crate::policy::{BudgetCounters, VcpuView};

    fn us(x: u64) -> Nanos {
        Nanos::from_us(x)
    }

    fn ms(x: u64) -> Nanos {
        Nanos::from_ms(x)
    }

    /// What the fake policy saw, shared with the test.
    #[derive(Default, Debug)]
    struct Seen {
        ticks: Vec<Nanos>,
        schedules: Vec<Nanos>,
        timers: Vec<Nanos>,
        running: Nanos,
        overhead: Nanos,
    }

    /// Runs the lowest-id VCPU with work, with a fixed slice; ticks as told; one timer.
    struct Fake {
        tick: TickInterval,
        tick_asks: bool,
        slice: Option<Nanos>,
        timer: Option<Nanos>,
        has_work: Vec<bool>,
        seen: Arc<Mutex<Seen>>,
    }

    impl Policy for Fake {
        fn kind(&self) -> PolicyKind {
            PolicyKind::Deferrable
        }
        fn validate(&self, _: &VcpuParams) -> Result<(), ParamError> {
            Ok(())
        }
        fn insert_vcpu(&mut self, _: &mut Cx, vcpu: VcpuId, _: &VcpuParams) {
            self.has_work.resize(vcpu.index() + 1, false);
        }
        fn remove_vcpu(&mut self, _: &mut Cx, vcpu: VcpuId) {
            self.has_work[vcpu.index()] = false;
        }
        fn wake(&mut self, _: &mut Cx, vcpu: VcpuId) -> bool {
            self.has_work[vcpu.index()] = true;
            true
        }
        fn sleep(&mut self, _: &mut Cx, vcpu: VcpuId) -> bool {
            self.has_work[vcpu.index()] = false;
            false
        }
        fn burn(&mut self, _: &mut Cx, _: PcpuId, ran: Nanos, spent: Spent) {
            let mut seen = self.seen.lock().unwrap();
            match spent {
                Spent::Running => seen.running += ran,
                Spent::Overhead => seen.overhead += ran,
            }
        }
        fn do_schedule(&mut self, cx: &mut Cx, _: PcpuId) -> Decision {
            self.seen.lock().unwrap().schedules.push(cx.now);
            let run = self
                .has_work
                .iter()
                .position(|&w| w)
                .map(|i| VcpuId(i as u32));
            Decision {
                run,
                slice: run.and(self.slice),
            }
        }
        fn tick_interval(&self) -> TickInterval {
            self.tick
        }
        fn tick(&mut self, cx: &mut Cx, _: PcpuId) -> bool {
            self.seen.lock().unwrap().ticks.push(cx.now);
            self.tick_asks
        }
        fn next_timer(&self) -> Option<Nanos> {
            self.timer
        }
        fn handle_timer(&mut self, cx: &mut Cx) -> bool {
            // Called at every tick in tick mode: only a due timer is processed.
            if self.timer.is_some_and(|due| due <= cx.now) {
                self.seen.lock().unwrap().timers.push(cx.now);
                self.timer = None;
            }
            false
        }
        fn adjust(&mut self, _: &mut Cx, _: VcpuId, _: &VcpuParams) -> bool {
            false
        }
        fn view(&self, _: VcpuId) -> VcpuView {
            VcpuView::default()
        }
        fn counters(&self, _: VcpuId) -> BudgetCounters {
            BudgetCounters::default()
        }
        fn check_invariants(&self) -> Result<(), String> {
            Ok(())
        }
    }

    fn machine(config: MachineConfig, fake: Fake) -> Machine {
        Machine::with_policy(config, PolicyConfig::Deferrable, Box::new(fake))
    }

    /// A VCPU (1 ms every 2 ms, priority 1) of domain `domain`, added at 0.
    fn vcpu(m: &mut Machine, domain: u32) -> VcpuId {
        m.add_vcpu(
            Nanos::ZERO,
            DomainId(domain),
            VcpuParams::server(ms(1), ms(2), 1),
        )
        .unwrap()
    }

    fn fake(tick: TickInterval, slice: Option<Nanos>) -> (Fake, Arc<Mutex<Seen>>) {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let fake = Fake {
            tick,
            tick_asks: false,
            slice,
            timer: None,
            has_work: Vec::new(),
            seen: Arc::clone(&seen),
        };
        (fake, seen)
    }

    /// Drives the machine as a driver does until `end`.
    fn run_until(m: &mut Machine, end: Nanos) {
        loop {
            let due = m.poll_timeout();
            if due > end {
                break;
            }
            m.handle_timeout(due);
        }
        m.advance(end);
        assert_eq!(m.check_invariants(), Ok(()));
    }

    /// A policy's own tick (3 ms) lies on a grid from its start; a tick that does not ask
    /// for `do_schedule` gets none.
    #[test]
    fn ticks_follow_the_policys_interval_and_reschedule_only_when_asked() {
        let (mut policy, seen) = fake(TickInterval::Every(ms(3)), None);
        policy.tick_asks = false;
        let mut m = machine(MachineConfig::default(), policy);
        let v = vcpu(&mut m, 0);
        m.wake(Nanos::ZERO, v);
        run_until(&mut m, ms(10));
        let seen = seen.lock().unwrap();
        assert_eq!(seen.ticks, vec![ms(3), ms(6), ms(9)]);
        assert_eq!(seen.schedules, vec![Nanos::ZERO], "only the first decision");
        assert_eq!(m.pcpu_stats(PcpuId(0)).do_schedule_calls, 1);
    }

    /// The quantum tick reschedules at every quantum; no tick at all leaves only events.
    #[test]
    fn quantum_tick_reschedules_every_quantum_and_no_tick_never() {
        let (mut policy, seen) = fake(TickInterval::Quantum, None);
        policy.tick_asks = true;
        let mut m = machine(MachineConfig::default(), policy);
        vcpu(&mut m, 0);
        run_until(&mut m, ms(3));
        assert_eq!(
            seen.lock().unwrap().schedules,
            vec![ms(0), ms(1), ms(2), ms(3)]
        );

        let (policy, seen) = fake(TickInterval::None, Some(ms(2)));
        let mut m = machine(MachineConfig::default(), policy);
        let v = vcpu(&mut m, 0);
        m.wake(Nanos::ZERO, v);
        run_until(&mut m, ms(5));
        // The first decision, then the end of each 2 ms slice.
        assert_eq!(seen.lock().unwrap().schedules, vec![ms(0), ms(2), ms(4)]);
        assert!(seen.lock().unwrap().ticks.is_empty());
    }

    /// Tick-timed replenishment holds a due timer back to the next tick only for a policy
    /// with the quantum tick; a policy with its own tick or none gets it on time.
    #[test]
    fn tick_mode_delays_timers_only_for_the_quantum_tick() {
        let config = MachineConfig {
            replenishment: ReplenishMode::Tick,
            ..MachineConfig::default()
        };
        for (tick, due) in [
            (TickInterval::Quantum, ms(2)),
            (TickInterval::Every(ms(10)), us(1500)),
            (TickInterval::None, us(1500)),
        ] {
            let (mut policy, seen) = fake(tick, None);
            policy.timer = Some(us(1500));
            let mut m = machine(config, policy);
            vcpu(&mut m, 0);
            run_until(&mut m, ms(3));
            assert_eq!(seen.lock().unwrap().timers, vec![due], "{tick:?}");
        }
    }

    /// Overhead and who pays for it. One VCPU busy from 0, slices of 1 ms, no tick;
    /// `do_schedule` costs 100 µs and a switch 50 µs. With the overhead charged to the
    /// incoming VCPU its slice runs from the `do_schedule` (0 → 1 ms), the 150 µs of the
    /// first switch are burned as overhead, and each later reschedule (no switch) costs
    /// 100 µs of its next slice. With "none" the slice starts after the overhead and nobody
    /// is charged. In both, busy + idle + overhead is the elapsed time, exactly.
    #[test]
    fn overhead_is_charged_as_configured_and_time_adds_up() {
        for charge in [OverheadCharge::Incoming, OverheadCharge::None] {
            let config = MachineConfig {
                overheads: Overheads {
                    do_schedule: us(100),
                    context_switch: us(50),
                },
                overhead_charge: charge,
                ..MachineConfig::default()
            };
            let (policy, seen) = fake(TickInterval::None, Some(ms(1)));
            let mut m = machine(config, policy);
            let v = vcpu(&mut m, 0);
            m.wake(Nanos::ZERO, v);
            run_until(&mut m, ms(3));
            let stats = m.pcpu_stats(PcpuId(0));
            assert_eq!(
                stats.busy + stats.idle + stats.overhead,
                ms(3),
                "{charge:?}"
            );
            let seen = seen.lock().unwrap();
            match charge {
                OverheadCharge::Incoming => {
                    // Decisions at 0, 1 and 2 ms: 150 + 100 + 100 µs of overhead.
                    assert_eq!(seen.schedules, vec![ms(0), ms(1), ms(2), ms(3)]);
                    assert_eq!(stats.overhead, us(350));
                    assert_eq!(seen.overhead, us(350), "all of it charged");
                    assert_eq!(stats.busy, ms(3) - us(350));
                }
                OverheadCharge::None => {
                    // Slices of 1 ms after each overhead: decisions at 0, 1.15, 2.25 ms.
                    assert_eq!(seen.schedules, vec![ms(0), us(1150), us(2250)]);
                    assert_eq!(stats.overhead, us(350));
                    assert_eq!(seen.overhead, Nanos::ZERO, "nobody charged");
                    assert_eq!(stats.busy, ms(3) - us(350));
                }
            }
            // The policy was told of every nanosecond not spent in uncharged overhead.
            assert_eq!(
                seen.running + seen.overhead + (stats.overhead - seen.overhead),
                ms(3)
            );
        }
    }

    /// Several events at one instant cost one `do_schedule`; a slice used up by overhead
    /// ends as soon as the overhead does.
    #[test]
    fn events_at_one_instant_cost_one_reschedule_and_overhead_can_use_a_slice_up() {
        let config = MachineConfig {
            overheads: Overheads {
                do_schedule: us(300),
                context_switch: Nanos::ZERO,
            },
            ..MachineConfig::default()
        };
        let (policy, seen) = fake(TickInterval::None, Some(us(200)));
        let mut m = machine(config, policy);
        let a = vcpu(&mut m, 0);
        let b = vcpu(&mut m, 1);
        m.wake(Nanos::ZERO, a);
        m.wake(Nanos::ZERO, b);
        run_until(&mut m, us(700));
        // 0: one decision for both wakes; its 200 µs slice is gone when the 300 µs of
        // overhead end, so the next decision comes at 300 µs, and again at 600 µs.
        assert_eq!(
            seen.lock().unwrap().schedules,
            vec![us(0), us(300), us(600)]
        );
        assert_eq!(m.pcpu_stats(PcpuId(0)).busy, Nanos::ZERO);
    }

    /// A tick that falls inside overhead is taken at its instant (the policy's tick hook
    /// runs then) but its `do_schedule` waits for the overhead to end: with a 1 ms quantum
    /// and 1.5 ms of overhead per decision (the quantum-tick servers reschedule at every
    /// tick), the decision at 0 ends its overhead at 1.5 ms, having passed the tick at 1;
    /// the owed reschedule runs at 1.5, its overhead ends at 3, past the tick at 2, and so
    /// on: nothing ever runs, and time still adds up.
    #[test]
    fn a_tick_inside_overhead_is_taken_on_time_and_its_reschedule_waits() {
        let config = MachineConfig {
            overheads: Overheads {
                do_schedule: us(1500),
                context_switch: Nanos::ZERO,
            },
            ..MachineConfig::default()
        };
        let (mut policy, seen) = fake(TickInterval::Quantum, Some(ms(1)));
        policy.tick_asks = true;
        let mut m = machine(config, policy);
        let v = vcpu(&mut m, 0);
        m.wake(Nanos::ZERO, v);
        run_until(&mut m, us(4600));
        let seen = seen.lock().unwrap();
        assert_eq!(seen.ticks, vec![ms(1), ms(2), ms(3), ms(4)]);
        assert_eq!(seen.schedules, vec![us(0), us(1500), us(3000), us(4500)]);
        let stats = m.pcpu_stats(PcpuId(0));
        assert_eq!(stats.busy, Nanos::ZERO);
        assert_eq!(stats.overhead, us(4600));
    }
}
