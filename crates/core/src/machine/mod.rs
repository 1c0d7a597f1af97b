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
//! starts when the policy starts (time 0, the instant of a hot swap, or when a pool without
//! pcpus gets its first); a pcpu that joins a pool ticks on the pool's grid. So
//! [`PcpuStats::do_schedule_calls`] counts what the policy really asked for, as Xen's would.
//!
//! # Cpupools at run time
//! A pcpu that joins or leaves a pool ([`Machine::pool_cpu_add`],
//! [`Machine::pool_cpu_remove`]) leaves the pool's policy and every VCPU's scheduling state
//! as they were ([`Policy::change_pcpus`]), as Xen does: only what the leaving pcpu ran
//! stops; a joining pcpu decides at once and ticks on the pool's grid. A pool starts its
//! policy afresh only when it is created and at a hot swap ([`Machine::swap_pool_policy`]);
//! a domain moved to another pool ([`Machine::pool_migrate`]) is inserted there anew.
//!
//! # Time accounting
//! Each pcpu is, at every instant, running a VCPU, running IDLE, or in scheduler overhead.
//! `busy + idle + overhead` equals the time accounted so far, exactly. During overhead no
//! VCPU makes progress; who pays for it is [`OverheadCharge`]: by default the decision
//! that follows it is charged as if it ran (its budget, credit or slice is consumed, and
//! its slice counts from the instant `do_schedule` began), as Xen measures a VCPU's run
//! time from the start of the `do_schedule` that chose it.
//!
//! # Where things are
//! - this file: the [`Machine`] type, its configuration and errors, the driving API
//!   (`wake`, `block`, `poll_timeout`, `handle_timeout`), VCPUs coming and going and what
//!   a driver may ask about them;
//! - `pools.rs`: cpupools (Xen's `cpupool.c`): creating one, pcpus joining and leaving,
//!   domains migrating, the hot swap of a pool's policy, looking pools up;
//! - `pcpu.rs`: per-pcpu state (what each runs, its reschedule request, its tick) and how
//!   the machine asks pcpus to decide again;
//! - `step.rs`: one step: what is due, `do_schedule`, and a decision taking effect;
//! - `accounting.rs`: the overhead model and time accounting (`busy + idle + overhead`).
//!
//! [`Policy::tick_interval`]: crate::policy::Policy::tick_interval
//! [`Policy::change_pcpus`]: crate::policy::Policy::change_pcpus

mod accounting;
mod pcpu;
mod pools;
mod step;
#[cfg(test)]
mod tests;

pub use accounting::{OverheadCharge, Overheads, PcpuStats, VcpuStats};
pub use pcpu::Activity;
pub use pools::PoolSpec;

use crate::cpuset::CpuSet;
use crate::event::{CoreEvent, Cx, EventLog, ScheduleReason};
use crate::model::{DomainId, ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::{BudgetCounters, PolicyConfig, PolicyKind};
use crate::time::Nanos;
use crate::wake::WakeDelivery;
use pcpu::Pcpu;
use pools::Pool;

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

/// Machine-wide settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MachineConfig {
    pub pcpus: u32,
    /// The scheduling quantum: the RT-Xen servers' tick interval.
    pub quantum: Nanos,
    pub replenishment: ReplenishMode,
    pub overheads: Overheads,
    pub overhead_charge: OverheadCharge,
    /// How long a timer or an event takes to reach a guest task ([`WakeDelivery`]). The
    /// machine itself never reads it: a driver applies it to the releases it delivers.
    /// Off by default.
    pub wake_delivery: WakeDelivery,
}

impl Default for MachineConfig {
    fn default() -> Self {
        MachineConfig {
            pcpus: 1,
            quantum: Nanos::from_ms(1),
            replenishment: ReplenishMode::Exact,
            overheads: Overheads::default(),
            overhead_charge: OverheadCharge::Incoming,
            wake_delivery: WakeDelivery::OFF,
        }
    }
}

/// Errors of machine operations. Each names what is wrong; an operation that fails changes
/// nothing.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MachineError {
    #[error("vcpu {vcpu}: {error}")]
    Param { vcpu: u32, error: ParamError },
    #[error("pcpus: {0} is more than the {max} a machine may have", max = CpuSet::MAX)]
    TooManyPcpus(u32),
    #[error("pcpus: must be at least 1")]
    NoPcpu,
    #[error("quantum: must be greater than 0")]
    QuantumZero,
    #[error("vcpu {0}: no such VCPU")]
    UnknownVcpu(u32),
    #[error("cpupool '{0}': no such pool")]
    UnknownPool(String),
    #[error("cpupool '{0}': a pool of that name exists already")]
    DuplicatePool(String),
    #[error("pcpu {pcpu}: no such pcpu (the machine has {pcpus})")]
    UnknownPcpu { pcpu: u32, pcpus: u32 },
    #[error("pcpu {pcpu}: it is in cpupool '{pool}' already (a pcpu belongs to one pool)")]
    PcpuInPool { pcpu: u32, pool: String },
    #[error("pcpu {pcpu}: it is not in cpupool '{pool}'")]
    PcpuNotInPool { pcpu: u32, pool: String },
    #[error("cpupool '{pool}': it has no pcpus, so it cannot hold domains")]
    EmptyPool { pool: String },
    #[error(
        "cpupool '{pool}': removing pcpu {pcpu} would leave it without pcpus while it holds VCPUs"
    )]
    WouldEmptyPool { pool: String, pcpu: u32 },
    #[error(
        "vcpu {vcpu}: affinity {affinity} is not within cpupool '{pool}' (pcpus {pool_pcpus})"
    )]
    AffinityOutsidePool {
        vcpu: u32,
        affinity: CpuSet,
        pool: String,
        pool_pcpus: CpuSet,
    },
    #[error(
        "vcpu {vcpu}: {policy} schedules a pool of several pcpus partitioned, one pcpu per \
         VCPU: pin it to one pcpu of cpupool '{pool}' (its affinity is {affinity}), or use a \
         policy that schedules globally (rtds, credit, or a server policy)"
    )]
    NeedsPinning {
        vcpu: u32,
        policy: PolicyKind,
        pool: String,
        affinity: CpuSet,
    },
}

#[derive(Clone, Debug)]
struct VcpuEntry {
    domain: DomainId,
    params: VcpuParams,
    has_work: bool,
    present: bool,
    /// Its cpupool (index into the machine's pools).
    pool: usize,
    /// Its hard affinity (machine pcpu ids); `None`: every pcpu of its pool.
    affinity: Option<CpuSet>,
    /// The pcpu it last ran on, for migrations.
    last_pcpu: Option<u32>,
    stats: VcpuStats,
    /// Budget counters of policies this VCPU has left (hot swap, removal): the live
    /// policy's counters are added to these.
    earlier_counters: BudgetCounters,
}

/// One machine: its pcpus, grouped in cpupools, its VCPUs and the policy of each pool.
pub struct Machine {
    config: MachineConfig,
    pools: Vec<Pool>,
    /// One pcpu in one pool (see [`Self::lone`]), kept up to date by every change of the
    /// pools: asked on every step.
    lone: bool,
    vcpus: Vec<VcpuEntry>,
    pcpus: Vec<Pcpu>,
    now: Nanos,
    log: EventLog,
}

impl Machine {
    /// A machine of `config.pcpus` pcpus in one pool (`Pool-0`) scheduled by `policy`.
    pub fn new(config: MachineConfig, policy: PolicyConfig) -> Result<Machine, MachineError> {
        if config.pcpus > CpuSet::MAX {
            return Err(MachineError::TooManyPcpus(config.pcpus));
        }
        let pool = PoolSpec::new(PoolSpec::DEFAULT_NAME, CpuSet::first(config.pcpus), policy);
        Self::with_pools(config, vec![pool])
    }

    /// A machine of `config.pcpus` pcpus in the given cpupools (the first one is where
    /// VCPUs go unless told otherwise). Every pcpu is in at most one pool; a pcpu in none
    /// is free and idles.
    pub fn with_pools(
        config: MachineConfig,
        pools: Vec<PoolSpec>,
    ) -> Result<Machine, MachineError> {
        if config.pcpus == 0 {
            return Err(MachineError::NoPcpu);
        }
        if config.pcpus > CpuSet::MAX {
            return Err(MachineError::TooManyPcpus(config.pcpus));
        }
        if config.quantum.is_zero() {
            return Err(MachineError::QuantumZero);
        }
        let pcpus = config.pcpus;
        let mut m = Machine {
            config,
            pools: Vec::new(),
            lone: false,
            vcpus: Vec::new(),
            pcpus: (0..pcpus)
                .map(|_| Pcpu::new(None, None, Nanos::ZERO))
                .collect(),
            now: Nanos::ZERO,
            log: EventLog::new(false),
        };
        for spec in pools {
            m.check_new_pool(&spec)?;
            let cpus = spec.pcpus;
            let pool = m.make_pool(spec);
            m.pools.push(pool);
            for c in cpus.iter() {
                m.place_pcpu(m.pools.len() - 1, c);
            }
        }
        if m.pools.is_empty() {
            return Err(MachineError::UnknownPool(
                PoolSpec::DEFAULT_NAME.to_string(),
            ));
        }
        for p in 0..m.pools.len() {
            m.rebuild_pool(Nanos::ZERO, p, None);
        }
        Ok(m)
    }

    pub fn config(&self) -> &MachineConfig {
        &self.config
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

    /// Adds a VCPU of `domain` at `now` to the first pool, free to run on any of its pcpus,
    /// without work. Fails on parameters the policy cannot accept.
    pub fn add_vcpu(
        &mut self,
        now: Nanos,
        domain: DomainId,
        params: VcpuParams,
    ) -> Result<VcpuId, MachineError> {
        self.add_vcpu_in(now, domain, params, 0, None)
    }

    /// Adds a VCPU of `domain` at `now` to pool `pool` (an index of [`Self::pools`]) with
    /// hard affinity `affinity` (machine pcpu ids; `None`: any pcpu of the pool), without
    /// work. Fails, changing nothing, on parameters the pool's policy cannot accept, an
    /// affinity outside the pool, or a pool without pcpus.
    pub fn add_vcpu_in(
        &mut self,
        now: Nanos,
        domain: DomainId,
        params: VcpuParams,
        pool: usize,
        affinity: Option<CpuSet>,
    ) -> Result<VcpuId, MachineError> {
        let id = VcpuId(self.vcpus.len() as u32);
        let Some(p) = self.pools.get(pool) else {
            return Err(MachineError::UnknownPool(format!("#{pool}")));
        };
        p.policy
            .validate(&params)
            .map_err(|error| MachineError::Param { vcpu: id.0, error })?;
        self.check_affinity(id.0, pool, affinity)?;
        self.account(now);
        let local = self.pools[pool].local(affinity);
        let mut cx = Cx {
            now,
            log: &mut self.log,
        };
        let policy = self.pools[pool].policy.as_mut();
        policy.set_affinity(&mut cx, id, local);
        policy.insert_vcpu(&mut cx, id, &params);
        self.vcpus.push(VcpuEntry {
            domain,
            params,
            has_work: false,
            present: true,
            pool,
            affinity,
            last_pcpu: None,
            stats: VcpuStats::default(),
            earlier_counters: BudgetCounters::default(),
        });
        self.request_pool(pool, ScheduleReason::Reconfigure);
        Ok(id)
    }

    /// Removes a VCPU at `now`; its pool's pcpus reschedule at once.
    pub fn remove_vcpu(&mut self, now: Nanos, vcpu: VcpuId) -> Result<(), MachineError> {
        self.entry(vcpu)?;
        self.account(now);
        let pool = self.vcpus[vcpu.index()].pool;
        self.deschedule(vcpu, CpuSet::ALL);
        // Even when it is not running, the VCPU may be what the running decision is paid
        // from (an idling PTPS server, a lending WCPS/CRPS server): decide again.
        self.request_pool(pool, ScheduleReason::Reconfigure);
        let mut cx = Cx {
            now,
            log: &mut self.log,
        };
        let policy = &mut self.pools[pool].policy;
        let counters = policy.counters(vcpu);
        self.vcpus[vcpu.index()].earlier_counters += counters;
        policy.remove_vcpu(&mut cx, vcpu);
        let e = &mut self.vcpus[vcpu.index()];
        e.present = false;
        e.has_work = false;
        Ok(())
    }

    /// New parameters for a VCPU (Xen's `sched-set`/`adjust`); see [`Policy::adjust`] for
    /// when they take effect.
    ///
    /// [`Policy::adjust`]: crate::policy::Policy::adjust
    pub fn adjust(
        &mut self,
        now: Nanos,
        vcpu: VcpuId,
        params: VcpuParams,
    ) -> Result<(), MachineError> {
        self.entry(vcpu)?;
        let pool = self.vcpus[vcpu.index()].pool;
        self.pools[pool]
            .policy
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
        let resched = self.pools[pool].policy.adjust(&mut cx, vcpu, &params);
        if resched {
            if self.pools[pool].cpus.len() > 1 {
                if let Some(c) = self.pcpu_running(vcpu) {
                    self.pcpus[c].request(ScheduleReason::Reconfigure);
                }
            }
            self.tickle(pool, ScheduleReason::Reconfigure);
        }
        self.vcpus[vcpu.index()].params = params;
        Ok(())
    }

    /// `xl vcpu-pin DOMAIN VCPU CPUS`: the VCPU's hard affinity (machine pcpu ids; `None`:
    /// every pcpu of its pool). Refused, changing nothing, outside the pool, or not one pcpu
    /// under a partitioned policy.
    pub fn pin(
        &mut self,
        now: Nanos,
        vcpu: VcpuId,
        affinity: Option<CpuSet>,
    ) -> Result<(), MachineError> {
        self.entry(vcpu)?;
        let pool = self.vcpus[vcpu.index()].pool;
        self.check_affinity(vcpu.0, pool, affinity)?;
        self.account(now);
        self.vcpus[vcpu.index()].affinity = affinity;
        let local = self.pools[pool].local(affinity);
        let mut cx = Cx {
            now,
            log: &mut self.log,
        };
        self.pools[pool].policy.set_affinity(&mut cx, vcpu, local);
        // Where it runs now may be outside its new affinity: it stops there at once.
        let outside = affinity.map_or(CpuSet::EMPTY, CpuSet::complement);
        self.deschedule(vcpu, outside);
        self.tickle(pool, ScheduleReason::Reconfigure);
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
        let pool = e.pool;
        self.log.emit(now, || CoreEvent::Wake { vcpu });
        let mut cx = Cx {
            now,
            log: &mut self.log,
        };
        let resched = self.pools[pool].policy.wake(&mut cx, vcpu);
        if resched {
            self.tickle(pool, ScheduleReason::Preempt);
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
        let pool = e.pool;
        self.log.emit(now, || CoreEvent::Block { vcpu });
        let mut cx = Cx {
            now,
            log: &mut self.log,
        };
        let asked = self.pools[pool].policy.sleep(&mut cx, vcpu);
        let cpus = &self.pools[pool].cpus;
        if cpus.len() == 1 {
            let p = &mut self.pcpus[cpus[0] as usize];
            if p.current() == Some(vcpu) {
                p.request(ScheduleReason::Block);
            } else if asked {
                p.request(ScheduleReason::Preempt);
            }
            return;
        }
        if let Some(c) = self.pcpu_running(vcpu) {
            self.pcpus[c].request(ScheduleReason::Block);
        }
        if asked {
            self.tickle(pool, ScheduleReason::Preempt);
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

    /// How the VCPU's budget was spent over the whole run, across hot swaps, pool changes
    /// and removal.
    pub fn budget_counters(&self, vcpu: VcpuId) -> BudgetCounters {
        let e = &self.vcpus[vcpu.index()];
        let mut total = e.earlier_counters;
        if e.present {
            total += self.pools[e.pool].policy.counters(vcpu);
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

    /// The machine's and the policies' invariants: time adds up on every pcpu, each
    /// accounted up to the machine's present instant; what runs
    /// is a present VCPU with work, of the pcpu's pool, within its affinity, and on one
    /// pcpu only; and each policy's own checks.
    pub fn check_invariants(&self) -> Result<(), String> {
        for (i, p) in self.pcpus.iter().enumerate() {
            let sum = p.stats.busy + p.stats.idle + p.stats.overhead;
            if sum != p.accounted_to {
                return Err(format!(
                    "pcpu {i}: busy {} + idle {} + overhead {} != accounted {}",
                    p.stats.busy, p.stats.idle, p.stats.overhead, p.accounted_to
                ));
            }
            if p.accounted_to != self.now {
                return Err(format!(
                    "pcpu {i}: accounted to {}, the machine is at {}",
                    p.accounted_to, self.now
                ));
            }
            if let Some(v) = p.current() {
                let e = &self.vcpus[v.index()];
                if !e.present {
                    return Err(format!("pcpu {i} runs removed vcpu {}", v.0));
                }
                if p.pool.map(|(pool, _)| pool as usize) != Some(e.pool) {
                    return Err(format!("pcpu {i} runs vcpu {} of another pool", v.0));
                }
                if e.affinity.is_some_and(|a| !a.contains(i as u32)) {
                    return Err(format!("pcpu {i} runs vcpu {} outside its affinity", v.0));
                }
                if self.pcpus[i + 1..].iter().any(|o| o.current() == Some(v)) {
                    return Err(format!("vcpu {} runs on two pcpus", v.0));
                }
            }
        }
        for pool in &self.pools {
            pool.policy
                .check_invariants()
                .map_err(|e| format!("cpupool '{}': {e}", pool.name))?;
        }
        Ok(())
    }

    /// Whether the guest of `vcpu` has work, as last reported.
    pub fn has_work(&self, vcpu: VcpuId) -> bool {
        self.vcpus[vcpu.index()].has_work
    }

    /// When the machine next needs `handle_timeout`: the tick, the end of a slice or of
    /// overhead, a due policy timer, or now if a reschedule is pending.
    pub fn poll_timeout(&self) -> Nanos {
        if self.lone() {
            self.poll_timeout_in::<true>()
        } else {
            self.poll_timeout_in::<false>()
        }
    }

    /// Processes everything due at or before `now`, in a fixed order: the end of overhead,
    /// policy timers (pool by pool), then pcpu by pcpu the tick and the end of a slice; then
    /// `do_schedule` if any asked for it.
    pub fn handle_timeout(&mut self, now: Nanos) {
        if self.lone() {
            self.handle_timeout_in::<true>(now);
        } else {
            self.handle_timeout_in::<false>(now);
        }
    }
}
