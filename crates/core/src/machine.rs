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

use crate::cpuset::CpuSet;
use crate::event::{CoreEvent, Cx, EventLog, ScheduleReason};
use crate::model::{DomainId, ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::partitioned::Partitioned;
use crate::policy::{
    BudgetCounters, Decision, PcpuChange, Policy, PolicyConfig, PolicyKind, Spent, TickInterval,
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
    /// Charged in addition when the chosen VCPU last ran on another pcpu (a migration;
    /// `platform.md`), on the destination pcpu.
    pub migration: Nanos,
    /// The global run-queue lock: charged for every `do_schedule` of a pool, once per
    /// pcpu of that pool (so it grows with the pool).
    pub lock: Nanos,
}

impl Overheads {
    /// No cost at all (the default).
    pub const ZERO: Overheads = Overheads {
        do_schedule: Nanos::ZERO,
        context_switch: Nanos::ZERO,
        migration: Nanos::ZERO,
        lock: Nanos::ZERO,
    };
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
    /// Times switched in on another pcpu than the one it last ran on.
    pub migrations: u64,
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

#[derive(Clone, Debug)]
struct Pcpu {
    /// Its cpupool and its index there; `None`: a free pcpu (in no pool), which idles.
    pool: Option<(u32, u32)>,
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
    fn new(pool: Option<(u32, u32)>, next_tick: Option<Nanos>, accounted_to: Nanos) -> Pcpu {
        Pcpu {
            pool,
            activity: Activity::Idle,
            accounted_to,
            slice_end: None,
            resched: pool.map(|_| ScheduleReason::Reconfigure),
            next_tick,
            last_run: None,
            stats: PcpuStats::default(),
        }
    }

    /// The VCPU that runs (or is about to run after overhead); None for IDLE.
    fn current(&self) -> Option<VcpuId> {
        match self.activity {
            Activity::Idle => None,
            Activity::Running(v) => Some(v),
            Activity::Overhead { decision, .. } => decision.run,
        }
    }

    /// Whatever it runs stops: it idles at once, or, in the middle of a scheduling
    /// overhead, when the overhead ends, with IDLE as the decision it pays for.
    fn stop(&mut self) {
        self.activity = match self.activity {
            Activity::Overhead { since, until, .. } => Activity::Overhead {
                since,
                until,
                decision: Decision::IDLE,
                reason: ScheduleReason::Reconfigure,
            },
            _ => Activity::Idle,
        };
        self.last_run = None;
        self.slice_end = None;
    }

    fn request(&mut self, reason: ScheduleReason) {
        self.resched = Some(self.resched.map_or(reason, |r| r.min(reason)));
    }
}

/// Whether a VCPU of affinity `affinity` in a pool of `pcpus` pcpus scheduled by `kind`
/// breaks the partitioned policies' rule: on several pcpus, one pcpu per VCPU.
fn needs_pinning(kind: PolicyKind, pcpus: usize, affinity: CpuSet) -> bool {
    pcpus > 1 && !kind.schedules_globally() && affinity.len() != 1
}

/// A cpupool as configured: its name, its pcpus (machine ids) and its policy, with the
/// machine's quantum and overheads unless it has its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolSpec {
    pub name: String,
    pub pcpus: CpuSet,
    pub policy: PolicyConfig,
    /// The pool's scheduling quantum; `None`: the machine's.
    pub quantum: Option<Nanos>,
    /// The pool's overheads; `None`: the machine's.
    pub overheads: Option<Overheads>,
}

impl PoolSpec {
    /// The name of the pool a machine has when none is declared (Xen's).
    pub const DEFAULT_NAME: &'static str = "Pool-0";

    /// A pool with the machine's quantum and overheads.
    pub fn new(name: &str, pcpus: CpuSet, policy: PolicyConfig) -> PoolSpec {
        PoolSpec {
            name: name.to_string(),
            pcpus,
            policy,
            quantum: None,
            overheads: None,
        }
    }
}

/// A cpupool at run time.
struct Pool {
    name: String,
    policy: Box<dyn Policy>,
    policy_config: PolicyConfig,
    /// Its pcpus (machine ids), in local order: local index i is `cpus[i]`.
    cpus: Vec<u32>,
    quantum: Nanos,
    overheads: Overheads,
    /// The tick of the current policy: its interval (`None`: no tick) and whether it is the
    /// RT-Xen servers' quantum tick (which processes due timers in `tick` replenishment
    /// mode).
    tick: Option<Nanos>,
    quantum_tick: bool,
    /// Its policy runs inside [`Partitioned`] (one instance per pcpu): built so for several
    /// pcpus, or grown to several since (it stays so when the pool shrinks back to one).
    partitioned: bool,
}

impl Pool {
    fn cpuset(&self) -> CpuSet {
        CpuSet::from_indices(self.cpus.iter().copied()).expect("pcpu ids are below CpuSet::MAX")
    }

    /// A machine affinity in the pool's local indices.
    fn local(&self, affinity: Option<CpuSet>) -> CpuSet {
        match affinity {
            None => CpuSet::first(self.cpus.len() as u32),
            Some(a) => {
                let mut s = CpuSet::EMPTY;
                for (i, &c) in self.cpus.iter().enumerate() {
                    if a.contains(c) {
                        s.insert(i as u32);
                    }
                }
                s
            }
        }
    }
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
        let mut m = Machine {
            config,
            pools: Vec::new(),
            lone: false,
            vcpus: Vec::new(),
            pcpus: (0..config.pcpus)
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

    /// A machine driving `built` (the policy `policy` describes) on one pool of every pcpu;
    /// `config` is valid.
    #[cfg(test)]
    fn with_policy(config: MachineConfig, policy: PolicyConfig, built: Box<dyn Policy>) -> Machine {
        let mut m = Self::new(config, policy).expect("a valid configuration");
        let (tick, quantum_tick) = Self::resolve_tick(built.tick_interval(), config.quantum);
        let pool = &mut m.pools[0];
        pool.policy = built;
        pool.tick = tick;
        pool.quantum_tick = quantum_tick;
        for p in &mut m.pcpus {
            p.next_tick = tick;
        }
        m
    }

    fn check_new_pool(&self, spec: &PoolSpec) -> Result<(), MachineError> {
        if self.pools.iter().any(|p| p.name == spec.name) {
            return Err(MachineError::DuplicatePool(spec.name.clone()));
        }
        if spec.quantum.is_some_and(|q| q.is_zero()) {
            return Err(MachineError::QuantumZero);
        }
        for c in spec.pcpus.iter() {
            self.check_free_pcpu(c)?;
        }
        Ok(())
    }

    fn check_free_pcpu(&self, pcpu: u32) -> Result<(), MachineError> {
        match self.pcpus.get(pcpu as usize) {
            None => Err(MachineError::UnknownPcpu {
                pcpu,
                pcpus: self.config.pcpus,
            }),
            Some(p) => match p.pool {
                Some((pool, _)) => Err(MachineError::PcpuInPool {
                    pcpu,
                    pool: self.pools[pool as usize].name.clone(),
                }),
                None => Ok(()),
            },
        }
    }

    /// A pool without pcpus yet and with its policy built for none.
    fn make_pool(&self, spec: PoolSpec) -> Pool {
        let quantum = spec.quantum.unwrap_or(self.config.quantum);
        let built = spec.policy.build(1);
        let (tick, quantum_tick) = Self::resolve_tick(built.tick_interval(), quantum);
        Pool {
            name: spec.name,
            policy: built,
            policy_config: spec.policy,
            cpus: Vec::new(),
            quantum,
            overheads: spec.overheads.unwrap_or(self.config.overheads),
            tick,
            quantum_tick,
            partitioned: false,
        }
    }

    /// Puts free pcpu `c` in pool `pool` and returns its local index there (the caller
    /// renumbers the pool's pcpus and tells the policy).
    fn place_pcpu(&mut self, pool: usize, c: u32) -> u32 {
        let cpus = &mut self.pools[pool].cpus;
        cpus.push(c);
        cpus.sort_unstable();
        let at = cpus.iter().position(|&x| x == c).expect("just placed") as u32;
        let p = &mut self.pcpus[c as usize];
        p.pool = Some((pool as u32, at));
        at
    }

    /// The present VCPUs of pool `pool`, by index.
    fn members(&self, pool: usize) -> Vec<usize> {
        (0..self.vcpus.len())
            .filter(|&i| self.vcpus[i].present && self.vcpus[i].pool == pool)
            .collect()
    }

    /// Starts pool `pool`'s policy (`config`, or the one it has) afresh on its current
    /// pcpus, keeping its VCPUs and whether they have work: its VCPUs start their periods
    /// anew at `now`. Every pcpu of the pool decides again at once; the tick grid starts at
    /// `now`. This is how a pool starts (at time 0, or created at run time) and what a hot
    /// swap does; a pcpu that joins or leaves a pool does not restart it
    /// ([`Self::change_pool_pcpus`]).
    fn rebuild_pool(&mut self, now: Nanos, pool: usize, config: Option<PolicyConfig>) {
        let config = config.unwrap_or_else(|| self.pools[pool].policy_config.clone());
        let m = self.pools[pool].cpus.len() as u32;
        let mut policy = config.build(m.max(1));
        let members = self.members(pool);
        let mut cx = Cx {
            now,
            log: &mut self.log,
        };
        for &i in &members {
            let e = &self.vcpus[i];
            policy.set_affinity(
                &mut cx,
                VcpuId(i as u32),
                self.pools[pool].local(e.affinity),
            );
            policy.insert_vcpu(&mut cx, VcpuId(i as u32), &e.params);
        }
        for &i in members.iter().filter(|&&i| self.vcpus[i].has_work) {
            policy.wake(&mut cx, VcpuId(i as u32));
        }
        for &i in &members {
            self.vcpus[i].earlier_counters += self.pools[pool].policy.counters(VcpuId(i as u32));
        }
        let quantum = self.pools[pool].quantum;
        let (tick, quantum_tick) = Self::resolve_tick(policy.tick_interval(), quantum);
        let p = &mut self.pools[pool];
        p.partitioned = m > 1 && !config.kind().schedules_globally();
        p.policy = policy;
        p.policy_config = config;
        p.tick = tick;
        p.quantum_tick = quantum_tick;
        let cpus = p.cpus.clone();
        if cpus.len() > 1 {
            // On several pcpus what runs stops at once: the new policy does not know it, and
            // another pcpu may choose it before this one decides again.
            for &c in &cpus {
                if let Some(v) = self.pcpus[c as usize].current() {
                    self.deschedule(v, CpuSet::one(c));
                }
            }
        }
        for (local, &c) in cpus.iter().enumerate() {
            let pc = &mut self.pcpus[c as usize];
            pc.pool = Some((pool as u32, local as u32));
            // The old decision is meaningless to the new policy: decide again at once (what
            // runs goes on until then, an instant later). The new policy's tick grid starts
            // now.
            pc.slice_end = None;
            pc.next_tick = tick.map(|every| now + every);
            pc.request(ScheduleReason::Reconfigure);
        }
        // Every change of the pools ends here.
        self.refresh_lone();
    }

    /// Pool `pool`'s pcpus changed by `change` (its `cpus` already say so; a leaving pcpu
    /// is already stopped and free): the policy goes on, told of the change
    /// ([`Policy::change_pcpus`]), and every VCPU keeps its live state, as in Xen. The
    /// pool's pcpus are renumbered, every VCPU's affinity is sent again in the new
    /// numbering, a joining pcpu decides at once (on the pool's tick grid), and the other
    /// pcpus decide again only when the policy names them. A partitioned policy of one pcpu
    /// that grows is put inside [`Partitioned`] first, as its instance for that pcpu. An
    /// empty pool (no VCPU) that gains its first pcpu or loses its last one keeps its
    /// policy as built for one pcpu.
    fn change_pool_pcpus(&mut self, now: Nanos, pool: usize, change: PcpuChange) {
        let members = self.members(pool);
        let after = self.pools[pool].cpus.len();
        let before = match change {
            PcpuChange::Join(_) => after - 1,
            PcpuChange::Leave(_) => after + 1,
        };
        let mut cx = Cx {
            now,
            log: &mut self.log,
        };
        let mut resched = false;
        if before >= 1 && after >= 1 {
            let p = &mut self.pools[pool];
            if after > 1 && !p.partitioned && !p.policy_config.kind().schedules_globally() {
                let stand_in = p.policy_config.build(1);
                let single = std::mem::replace(&mut p.policy, stand_in);
                let vcpus = &self.vcpus;
                let wrapped = Partitioned::around(
                    &p.policy_config,
                    single,
                    members.iter().map(|&i| {
                        let e = &vcpus[i];
                        (VcpuId(i as u32), e.params.clone(), e.has_work)
                    }),
                );
                p.policy = Box::new(wrapped);
                p.partitioned = true;
            }
            resched |= p.policy.change_pcpus(&mut cx, change);
        }
        let p = &mut self.pools[pool];
        for (local, &c) in p.cpus.iter().enumerate() {
            self.pcpus[c as usize].pool = Some((pool as u32, local as u32));
        }
        for &i in &members {
            let local = p.local(self.vcpus[i].affinity);
            resched |= p.policy.set_affinity(&mut cx, VcpuId(i as u32), local);
        }
        if let PcpuChange::Join(at) = change {
            // The pool's pcpus tick together, on the grid its policy started (an empty
            // pool's grid starts now).
            let joining = p.cpus[at as usize] as usize;
            let grid = p
                .cpus
                .iter()
                .find_map(|&c| self.pcpus[c as usize].next_tick);
            let joining = &mut self.pcpus[joining];
            joining.next_tick = p.tick.map(|every| grid.unwrap_or(now + every));
            joining.request(ScheduleReason::Reconfigure);
        }
        if resched || self.pools[pool].cpus.len() > 1 {
            self.tickle(pool, ScheduleReason::Reconfigure);
        }
        self.refresh_lone();
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

    pub fn config(&self) -> &MachineConfig {
        &self.config
    }

    /// The first pool's policy kind (the only one's, on a machine of one pool).
    pub fn policy_kind(&self) -> PolicyKind {
        self.pools[0].policy.kind()
    }

    /// The first pool's policy configuration.
    pub fn policy_config(&self) -> &PolicyConfig {
        &self.pools[0].policy_config
    }

    /// The first pool's policy, for its views and counters.
    pub fn policy(&self) -> &dyn Policy {
        self.pools[0].policy.as_ref()
    }

    /// The policy that schedules `vcpu` (its pool's).
    pub fn policy_of(&self, vcpu: VcpuId) -> &dyn Policy {
        self.pools[self.vcpus[vcpu.index()].pool].policy.as_ref()
    }

    /// The cpupools, in order: name, pcpus (machine ids), policy.
    pub fn pools(&self) -> impl Iterator<Item = (&str, CpuSet, &PolicyConfig)> {
        self.pools
            .iter()
            .map(|p| (p.name.as_str(), p.cpuset(), &p.policy_config))
    }

    /// A pool's index by name.
    pub fn pool_index(&self, name: &str) -> Result<usize, MachineError> {
        self.pools
            .iter()
            .position(|p| p.name == name)
            .ok_or_else(|| MachineError::UnknownPool(name.to_string()))
    }

    /// The pool of a VCPU and its hard affinity (machine pcpu ids; every pcpu of its pool
    /// when not restricted).
    pub fn placement(&self, vcpu: VcpuId) -> (&str, CpuSet) {
        let e = &self.vcpus[vcpu.index()];
        let pool = &self.pools[e.pool];
        (
            pool.name.as_str(),
            e.affinity.unwrap_or_else(|| pool.cpuset()),
        )
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

    /// Checks that `affinity` (machine ids; `None`: the whole pool) suits a VCPU `id` of
    /// pool `pool`: within the pool, and one pcpu when the pool's policy is partitioned.
    fn check_affinity(
        &self,
        id: u32,
        pool: usize,
        affinity: Option<CpuSet>,
    ) -> Result<(), MachineError> {
        self.check_affinity_under(id, pool, affinity, self.pools[pool].policy_config.kind())
    }

    /// [`Self::check_affinity`] as if the pool's policy were of kind `kind` (a hot swap
    /// checks before it swaps).
    fn check_affinity_under(
        &self,
        id: u32,
        pool: usize,
        affinity: Option<CpuSet>,
        kind: PolicyKind,
    ) -> Result<(), MachineError> {
        let p = &self.pools[pool];
        let pool_cpus = p.cpuset();
        if p.cpus.is_empty() {
            return Err(MachineError::EmptyPool {
                pool: p.name.clone(),
            });
        }
        let a = affinity.unwrap_or(pool_cpus);
        if a.is_empty() || !a.is_subset(pool_cpus) {
            return Err(MachineError::AffinityOutsidePool {
                vcpu: id,
                affinity: a,
                pool: p.name.clone(),
                pool_pcpus: pool_cpus,
            });
        }
        if needs_pinning(kind, p.cpus.len(), a) {
            return Err(MachineError::NeedsPinning {
                vcpu: id,
                policy: kind,
                pool: p.name.clone(),
                affinity: a,
            });
        }
        Ok(())
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

    /// Asks every pcpu of `pool` to reschedule.
    fn request_pool(&mut self, pool: usize, reason: ScheduleReason) {
        for &c in &self.pools[pool].cpus {
            self.pcpus[c as usize].request(reason);
        }
    }

    /// A hook of pool `pool`'s policy asked for a reschedule: on a pool of one pcpu, that
    /// pcpu; on several, the pcpus the policy names ([`Policy::tickle`]).
    fn tickle(&mut self, pool: usize, reason: ScheduleReason) {
        let p = &self.pools[pool];
        if p.cpus.len() == 1 {
            self.pcpus[p.cpus[0] as usize].request(reason);
            return;
        }
        let targets = p.policy.tickle();
        for local in targets.iter() {
            if let Some(&c) = p.cpus.get(local as usize) {
                self.pcpus[c as usize].request(reason);
            }
        }
    }

    /// The pcpu `vcpu` runs on (or is about to run on, after overhead), if any.
    fn pcpu_running(&self, vcpu: VcpuId) -> Option<usize> {
        self.pcpus.iter().position(|p| p.current() == Some(vcpu))
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

    /// Stops `vcpu` wherever it runs (on the pcpus of `on`): the pcpu idles until it
    /// decides again, at once — or, in the middle of a scheduling overhead, when the
    /// overhead ends, with IDLE as the decision it was paying for.
    fn deschedule(&mut self, vcpu: VcpuId, on: CpuSet) {
        for (c, p) in self.pcpus.iter_mut().enumerate() {
            if p.current() != Some(vcpu) || !on.contains(c as u32) {
                continue;
            }
            p.stop();
            p.request(ScheduleReason::Reconfigure);
        }
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

    /// Replaces the first pool's policy at `now` ("hot swap"); see [`Self::swap_pool_policy`].
    pub fn swap_policy(&mut self, now: Nanos, config: PolicyConfig) -> Result<(), MachineError> {
        self.swap_pool_policy(now, 0, config)
    }

    /// Replaces pool `pool`'s policy at `now` ("hot swap"), keeping every VCPU and whether
    /// it has work. The new policy starts its VCPUs as if inserted now. Fails, changing
    /// nothing, when a VCPU's parameters or affinity do not suit the new policy.
    pub fn swap_pool_policy(
        &mut self,
        now: Nanos,
        pool: usize,
        config: PolicyConfig,
    ) -> Result<(), MachineError> {
        let probe = config.build(1);
        for (i, e) in self.vcpus.iter().enumerate() {
            if !(e.present && e.pool == pool) {
                continue;
            }
            probe
                .validate(&e.params)
                .map_err(|error| MachineError::Param {
                    vcpu: i as u32,
                    error,
                })?;
        }
        for (i, e) in self.vcpus.iter().enumerate() {
            if e.present && e.pool == pool {
                self.check_affinity_under(i as u32, pool, e.affinity, config.kind())?;
            }
        }
        self.account(now);
        self.rebuild_pool(now, pool, Some(config));
        Ok(())
    }

    /// `xl cpupool-create NAME sched=POLICY`: a new pool without pcpus.
    pub fn pool_create(&mut self, now: Nanos, spec: PoolSpec) -> Result<(), MachineError> {
        self.check_new_pool(&spec)?;
        self.account(now);
        let cpus = spec.pcpus;
        let pool = self.make_pool(spec);
        self.pools.push(pool);
        let index = self.pools.len() - 1;
        for c in cpus.iter() {
            self.release_pcpu(c);
            self.place_pcpu(index, c);
        }
        self.rebuild_pool(now, index, None);
        Ok(())
    }

    /// Makes pcpu `c` idle and asks it to decide again.
    fn release_pcpu(&mut self, c: u32) {
        let p = &mut self.pcpus[c as usize];
        p.stop();
        p.next_tick = None;
        p.resched = None;
    }

    /// `xl cpupool-cpu-add NAME CPU`: a free pcpu joins pool `pool`. Its VCPUs keep their
    /// scheduling state (see [`Policy::change_pcpus`]). Refused, changing nothing, when
    /// the pool's policy would then schedule it partitioned and a VCPU of it is not pinned
    /// to one pcpu.
    pub fn pool_cpu_add(&mut self, now: Nanos, pool: usize, pcpu: u32) -> Result<(), MachineError> {
        let Some(p) = self.pools.get(pool) else {
            return Err(MachineError::UnknownPool(format!("#{pool}")));
        };
        self.check_free_pcpu(pcpu)?;
        let kind = p.policy_config.kind();
        let mut grown = p.cpuset();
        grown.insert(pcpu);
        for i in self.members(pool) {
            let affinity = self.vcpus[i].affinity.unwrap_or(grown);
            if needs_pinning(kind, p.cpus.len() + 1, affinity) {
                return Err(MachineError::NeedsPinning {
                    vcpu: i as u32,
                    policy: kind,
                    pool: p.name.clone(),
                    affinity,
                });
            }
        }
        self.account(now);
        self.release_pcpu(pcpu);
        let at = self.place_pcpu(pool, pcpu);
        self.change_pool_pcpus(now, pool, PcpuChange::Join(at));
        Ok(())
    }

    /// `xl cpupool-cpu-remove NAME CPU`: pcpu `pcpu` leaves pool `pool` and becomes free.
    /// What it ran stops; the pool's VCPUs keep their scheduling state (see
    /// [`Policy::change_pcpus`]). Refused, changing nothing, when the pool would hold VCPUs
    /// without pcpus, when a VCPU's affinity would be left empty, or when the policy
    /// schedules partitioned and a VCPU is pinned there.
    pub fn pool_cpu_remove(
        &mut self,
        now: Nanos,
        pool: usize,
        pcpu: u32,
    ) -> Result<(), MachineError> {
        let Some(p) = self.pools.get(pool) else {
            return Err(MachineError::UnknownPool(format!("#{pool}")));
        };
        if !p.cpus.contains(&pcpu) {
            return Err(MachineError::PcpuNotInPool {
                pcpu,
                pool: p.name.clone(),
            });
        }
        let members = self.members(pool);
        if p.cpus.len() == 1 && !members.is_empty() {
            return Err(MachineError::WouldEmptyPool {
                pool: p.name.clone(),
                pcpu,
            });
        }
        let mut rest = p.cpuset();
        rest.remove(pcpu);
        let (name, kind, left) = (p.name.clone(), p.policy_config.kind(), p.cpus.len() - 1);
        for &i in &members {
            let a = self.vcpus[i].affinity.unwrap_or(rest).intersection(rest);
            if a.is_empty() || needs_pinning(kind, left, a) {
                return Err(MachineError::AffinityOutsidePool {
                    vcpu: i as u32,
                    affinity: self.vcpus[i].affinity.unwrap_or(p.cpuset()),
                    pool: name,
                    pool_pcpus: rest,
                });
            }
        }
        self.account(now);
        for &i in &members {
            if let Some(a) = self.vcpus[i].affinity.as_mut() {
                a.remove(pcpu);
            }
        }
        // What runs there stops; every other pcpu goes on.
        self.release_pcpu(pcpu);
        self.pcpus[pcpu as usize].pool = None;
        let cpus = &mut self.pools[pool].cpus;
        let at = cpus.iter().position(|&c| c == pcpu).expect("checked above") as u32;
        cpus.remove(at as usize);
        self.change_pool_pcpus(now, pool, PcpuChange::Leave(at));
        Ok(())
    }

    /// `xl cpupool-migrate DOMAIN NAME`: every VCPU of `domain` moves to pool `pool`, with
    /// its affinity reset to the whole pool (as Xen does). Its parameters are kept and must
    /// suit the new pool's policy. Refused, changing nothing, for a pool without pcpus.
    pub fn pool_migrate(
        &mut self,
        now: Nanos,
        domain: DomainId,
        pool: usize,
    ) -> Result<(), MachineError> {
        let Some(p) = self.pools.get(pool) else {
            return Err(MachineError::UnknownPool(format!("#{pool}")));
        };
        let members: Vec<usize> = (0..self.vcpus.len())
            .filter(|&i| self.vcpus[i].present && self.vcpus[i].domain == domain)
            .collect();
        for &i in &members {
            p.policy
                .validate(&self.vcpus[i].params)
                .map_err(|error| MachineError::Param {
                    vcpu: i as u32,
                    error,
                })?;
            self.check_affinity(i as u32, pool, None)?;
        }
        self.account(now);
        let mut from = Vec::new();
        for &i in &members {
            let v = VcpuId(i as u32);
            let old = self.vcpus[i].pool;
            if old == pool {
                continue;
            }
            self.deschedule(v, CpuSet::ALL);
            let mut cx = Cx {
                now,
                log: &mut self.log,
            };
            let policy = &mut self.pools[old].policy;
            self.vcpus[i].earlier_counters += policy.counters(v);
            policy.remove_vcpu(&mut cx, v);
            let e = &mut self.vcpus[i];
            e.pool = pool;
            e.affinity = None;
            let (params, has_work) = (e.params.clone(), e.has_work);
            let local = self.pools[pool].local(None);
            let policy = self.pools[pool].policy.as_mut();
            policy.set_affinity(&mut cx, v, local);
            policy.insert_vcpu(&mut cx, v, &params);
            if has_work {
                policy.wake(&mut cx, v);
            }
            from.push(old);
        }
        for old in from {
            self.request_pool(old, ScheduleReason::Reconfigure);
        }
        self.request_pool(pool, ScheduleReason::Reconfigure);
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

    /// Whether this is the usual machine: one pcpu, in the only pool. The steps a driver
    /// takes all the time ([`Self::poll_timeout`], [`Self::handle_timeout`], accounting)
    /// are compiled twice: with `LONE = true` for that machine, where pcpu 0 is local pcpu
    /// 0 of pool 0 and nothing concerns other pcpus, so no step looks pools up or asks
    /// whom to tickle; and with `LONE = false` for every machine (the general code).
    #[inline]
    fn lone(&self) -> bool {
        self.lone
    }

    /// Recomputes [`Self::lone`] after the pools changed.
    fn refresh_lone(&mut self) {
        self.lone = self.pcpus.len() == 1 && self.pools.len() == 1 && self.pcpus[0].pool.is_some();
    }

    /// The pcpus a step visits: see [`Self::lone`].
    #[inline(always)]
    fn pcpus_of<const LONE: bool>(&self) -> &[Pcpu] {
        if LONE {
            &self.pcpus[..1]
        } else {
            &self.pcpus
        }
    }

    /// Pcpu `i`'s pool and its local index there (`None`: free); see [`Self::lone`].
    #[inline(always)]
    fn place<const LONE: bool>(&self, i: usize) -> Option<(usize, u32)> {
        if LONE {
            Some((0, 0))
        } else {
            self.pcpus[i]
                .pool
                .map(|(pool, local)| (pool as usize, local))
        }
    }

    fn poll_timeout_in<const LONE: bool>(&self) -> Nanos {
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

    /// [`Self::handle_timeout`]; `LONE`: see [`Self::lone`].
    fn handle_timeout_in<const LONE: bool>(&mut self, now: Nanos) {
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

    /// Accounts every pcpu's time up to `now` and charges the policies for it.
    fn account(&mut self, now: Nanos) {
        if self.lone() {
            self.account_inline::<true>(now);
        } else {
            self.account_inline::<false>(now);
        }
    }

    /// [`Self::account`], inlined into `handle_timeout`: the call is made on every step.
    /// `LONE`: see [`Self::lone`].
    #[inline(always)]
    fn account_inline<const LONE: bool>(&mut self, now: Nanos) {
        assert!(
            now >= self.now,
            "time went backwards: {} after {}",
            now,
            self.now
        );
        // Every pcpu is accounted up to `self.now` whenever this returns (and only this
        // changes `accounted_to`): at the same instant again there is nothing to charge,
        // which is the usual case on several pcpus (a wake or a block, then the timeout,
        // at one instant).
        if now == self.now {
            return;
        }
        self.now = now;
        for i in 0..self.pcpus_of::<LONE>().len() {
            let pcpu = PcpuId(i as u32);
            let place = self.place::<LONE>(i);
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
                        // A free pcpu (in no pool) may finish an overhead begun in a pool:
                        // nobody pays for it.
                        if let Some((pool, local)) = place.filter(|_| {
                            self.config.overhead_charge == OverheadCharge::Incoming
                                && !spent.is_zero()
                        }) {
                            let mut cx = Cx {
                                now: end,
                                log: &mut self.log,
                            };
                            self.pools[pool].policy.burn(
                                &mut cx,
                                PcpuId(local),
                                spent,
                                Spent::Overhead,
                            );
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
                        // A free pcpu idles on nobody's behalf.
                        if let Some((pool, local)) = place {
                            let mut cx = Cx {
                                now,
                                log: &mut self.log,
                            };
                            self.pools[pool].policy.burn(
                                &mut cx,
                                PcpuId(local),
                                ran,
                                Spent::Running,
                            );
                        }
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
                    ..Default::default()
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
                ..Default::default()
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
                ..Default::default()
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

    /// Runs the machine to `t`, handling everything due on the way.
    fn run_to(m: &mut Machine, t: Nanos) {
        loop {
            let due = m.poll_timeout();
            if due > t {
                break;
            }
            m.handle_timeout(due);
        }
        m.advance(t);
    }

    /// Two pcpus: Pool-0 on pcpu 0, pcpu 1 free. A (4 ms every 10, priority 1) and B (10 ms
    /// every 10, priority 2) are Deferrable servers in Pool-0, always busy.
    fn two_pools() -> (Machine, VcpuId, VcpuId) {
        let config = MachineConfig {
            pcpus: 2,
            ..MachineConfig::default()
        };
        let pool0 = PoolSpec::new("Pool-0", CpuSet::one(0), PolicyConfig::Deferrable);
        let mut m = Machine::with_pools(config, vec![pool0]).unwrap();
        let a = m
            .add_vcpu(
                Nanos::ZERO,
                DomainId(0),
                VcpuParams::server(ms(4), ms(10), 1),
            )
            .unwrap();
        let b = m
            .add_vcpu(
                Nanos::ZERO,
                DomainId(1),
                VcpuParams::server(ms(10), ms(10), 2),
            )
            .unwrap();
        m.wake(Nanos::ZERO, a);
        m.wake(Nanos::ZERO, b);
        (m, a, b)
    }

    /// Pool reconfiguration at run time, by hand. On pcpu 0, A runs 0–4 and B 4–5. At 5 a
    /// pool `rt` is created, pcpu 1 joins it and B's domain moves there: B runs on pcpu 1
    /// from 5 (one migration), always (budget = period). Pcpu 0 keeps A alone: idle 5–10,
    /// A 10–14, idle 14–20. At 20: pcpu 0 busy 4 + 1 + 4 = 9 ms, pcpu 1 busy 15 ms (free
    /// and idle 0–5); A ran 8 ms, B 1 + 15 = 16 ms.
    #[test]
    fn a_domain_moves_to_a_new_pool_on_a_pcpu_that_joins_it() {
        let (mut m, a, b) = two_pools();
        run_to(&mut m, ms(5));
        assert_eq!(m.running(PcpuId(0)), Some(b));
        m.pool_create(
            ms(5),
            PoolSpec::new("rt", CpuSet::EMPTY, PolicyConfig::Deferrable),
        )
        .unwrap();
        let rt = m.pool_index("rt").unwrap();
        assert_eq!(
            m.pool_migrate(ms(5), DomainId(1), rt),
            Err(MachineError::EmptyPool {
                pool: "rt".to_string()
            }),
            "a pool without pcpus cannot hold a domain"
        );
        m.pool_cpu_add(ms(5), rt, 1).unwrap();
        m.pool_migrate(ms(5), DomainId(1), rt).unwrap();
        run_to(&mut m, ms(20));
        assert_eq!(m.placement(b), ("rt", CpuSet::one(1)));
        assert_eq!(m.pcpu_stats(PcpuId(0)).busy, ms(9));
        assert_eq!(m.pcpu_stats(PcpuId(0)).idle, ms(11));
        assert_eq!(m.pcpu_stats(PcpuId(1)).busy, ms(15));
        assert_eq!(m.pcpu_stats(PcpuId(1)).idle, ms(5));
        assert_eq!(m.vcpu_stats(a).run, ms(8));
        assert_eq!(m.vcpu_stats(b).run, ms(16));
        assert_eq!(m.vcpu_stats(b).migrations, 1);
        assert_eq!(m.vcpu_stats(a).migrations, 0);
        assert_eq!(m.check_invariants(), Ok(()));
    }

    /// Every invalid pool command is refused with its reason and changes nothing: the run
    /// goes on exactly as the one without them.
    #[test]
    fn invalid_pool_commands_are_refused_and_change_nothing() {
        let (mut m, a, b) = two_pools();
        let (mut same, _, _) = two_pools();
        run_to(&mut m, ms(3));
        let now = ms(3);
        assert_eq!(
            m.pool_create(
                now,
                PoolSpec::new("x", CpuSet::one(0), PolicyConfig::Deferrable)
            ),
            Err(MachineError::PcpuInPool {
                pcpu: 0,
                pool: "Pool-0".to_string()
            })
        );
        assert_eq!(
            m.pool_create(
                now,
                PoolSpec::new("Pool-0", CpuSet::EMPTY, PolicyConfig::Sedf)
            ),
            Err(MachineError::DuplicatePool("Pool-0".to_string()))
        );
        assert_eq!(
            m.pool_cpu_add(now, 0, 2),
            Err(MachineError::UnknownPcpu { pcpu: 2, pcpus: 2 })
        );
        assert_eq!(
            m.pool_cpu_add(now, 0, 0),
            Err(MachineError::PcpuInPool {
                pcpu: 0,
                pool: "Pool-0".to_string()
            })
        );
        assert_eq!(
            m.pool_cpu_remove(now, 0, 0),
            Err(MachineError::WouldEmptyPool {
                pool: "Pool-0".to_string(),
                pcpu: 0
            })
        );
        assert_eq!(
            m.pool_cpu_remove(now, 0, 1),
            Err(MachineError::PcpuNotInPool {
                pcpu: 1,
                pool: "Pool-0".to_string()
            })
        );
        assert!(matches!(
            m.pin(now, a, Some(CpuSet::one(1))),
            Err(MachineError::AffinityOutsidePool { vcpu: 0, .. })
        ));
        let bad = VcpuParams::server(ms(11), ms(10), 1);
        assert!(matches!(
            m.adjust(now, b, bad.clone()),
            Err(MachineError::Param { vcpu: 1, .. })
        ));
        assert!(matches!(
            m.pool_index("nope"),
            Err(MachineError::UnknownPool(_))
        ));
        run_to(&mut m, ms(40));
        run_to(&mut same, ms(40));
        for v in [a, b] {
            assert_eq!(m.vcpu_stats(v), same.vcpu_stats(v));
        }
        for p in [PcpuId(0), PcpuId(1)] {
            assert_eq!(m.pcpu_stats(p), same.pcpu_stats(p));
        }
    }

    /// A policy that schedules partitioned needs each VCPU pinned to one pcpu of a pool of
    /// several; a global one does not.
    #[test]
    fn partitioned_policies_need_one_pcpu_per_vcpu() {
        let config = MachineConfig {
            pcpus: 2,
            ..MachineConfig::default()
        };
        let mut m = Machine::new(config, PolicyConfig::Sedf).unwrap();
        let p = VcpuParams::server(ms(2), ms(10), 1);
        assert!(matches!(
            m.add_vcpu(Nanos::ZERO, DomainId(0), p.clone()),
            Err(MachineError::NeedsPinning {
                policy: PolicyKind::Sedf,
                ..
            })
        ));
        let v = m
            .add_vcpu_in(Nanos::ZERO, DomainId(0), p.clone(), 0, Some(CpuSet::one(1)))
            .unwrap();
        assert_eq!(m.placement(v), ("Pool-0", CpuSet::one(1)));
        assert!(matches!(
            m.pin(Nanos::ZERO, v, None),
            Err(MachineError::NeedsPinning { .. })
        ));
        let mut g = Machine::new(config, PolicyConfig::Rtds(Default::default())).unwrap();
        let w = g.add_vcpu(Nanos::ZERO, DomainId(0), p).unwrap();
        assert_eq!(g.placement(w), ("Pool-0", CpuSet::first(2)));
        assert_eq!(
            Machine::new(
                MachineConfig {
                    pcpus: 65,
                    ..config
                },
                PolicyConfig::Sedf
            )
            .err(),
            Some(MachineError::TooManyPcpus(65))
        );
    }

    /// A machine of two pcpus whose Pool-0 holds `pool0` under `policy` (the other pcpu is
    /// free), with the VCPUs `params` (domain i for the i-th, affinity as given), all busy.
    fn busy_pool(
        pool0: CpuSet,
        policy: PolicyConfig,
        vcpus: &[(VcpuParams, Option<CpuSet>)],
    ) -> (Machine, Vec<VcpuId>) {
        let config = MachineConfig {
            pcpus: 2,
            ..MachineConfig::default()
        };
        let spec = PoolSpec::new("Pool-0", pool0, policy);
        let mut m = Machine::with_pools(config, vec![spec]).unwrap();
        let ids: Vec<VcpuId> = vcpus
            .iter()
            .enumerate()
            .map(|(d, (params, affinity))| {
                m.add_vcpu_in(
                    Nanos::ZERO,
                    DomainId(d as u32),
                    params.clone(),
                    0,
                    *affinity,
                )
                .unwrap()
            })
            .collect();
        for &v in &ids {
            m.wake(Nanos::ZERO, v);
        }
        (m, ids)
    }

    /// An RTDS VCPU without extratime (the schedules below are derived without it).
    fn rtds_params(budget: u64, period: u64) -> VcpuParams {
        let mut p = VcpuParams::server(ms(budget), ms(period), 0);
        p.extratime = Some(false);
        p
    }

    /// RTDS, a pcpu joins: A (2 ms every 10) and B (5 ms every 12), always busy, in Pool-0
    /// on pcpu 0. EDF: A (deadline 10) runs 0–1 while B (deadline 12) waits. At 1 pcpu 1
    /// joins: A keeps its 1 ms left and its deadline 10, and goes on on pcpu 0 (nothing
    /// changed for it: that pcpu does not decide again); B, waiting, takes the joining pcpu
    /// with its whole budget and deadline 12: B 1–6 on pcpu 1, A 1–2 on pcpu 0. At 10 A is
    /// replenished (deadline 20) and takes the lowest idle pcpu, 0: A 10–12. At 12 B is
    /// (deadline 24) and takes pcpu 0 too, idle again: B 12–17 (a migration). At 20: A ran
    /// 1 + 1 + 2 = 4 ms, B 5 + 5 = 10 ms; pcpu 0 busy 2 + 2 + 5 = 9 ms, pcpu 1 busy 5 ms.
    /// (Restarting the pool at 1, as rtvmm once did, gave A a fresh 2 ms with deadline 11:
    /// A ran 1–3, 5 ms in all.)
    #[test]
    fn a_pcpu_that_joins_leaves_rtds_budgets_and_deadlines_as_they_were() {
        let (mut m, v) = busy_pool(
            CpuSet::one(0),
            PolicyConfig::Rtds(Default::default()),
            &[(rtds_params(2, 10), None), (rtds_params(5, 12), None)],
        );
        let (a, b) = (v[0], v[1]);
        run_to(&mut m, ms(1));
        assert_eq!(m.running(PcpuId(0)), Some(a));
        m.pool_cpu_add(ms(1), 0, 1).unwrap();
        let view = |m: &Machine, v| {
            let view = m.policy_of(v).view(v);
            (view.remaining_budget, view.deadline)
        };
        assert_eq!(view(&m, a), (Some(ms(1)), Some(ms(10))));
        assert_eq!(view(&m, b), (Some(ms(5)), Some(ms(12))));
        run_to(&mut m, ms(1));
        assert_eq!(m.running(PcpuId(0)), Some(a));
        assert_eq!(m.running(PcpuId(1)), Some(b));
        assert_eq!(m.pcpu_stats(PcpuId(0)).do_schedule_calls, 1, "only at 0");
        run_to(&mut m, ms(6));
        assert_eq!(view(&m, a), (Some(Nanos::ZERO), Some(ms(10))));
        assert_eq!(view(&m, b), (Some(Nanos::ZERO), Some(ms(12))));
        run_to(&mut m, ms(20));
        assert_eq!(m.vcpu_stats(a).run, ms(4));
        assert_eq!(m.vcpu_stats(b).run, ms(10));
        assert_eq!(m.vcpu_stats(b).migrations, 1);
        assert_eq!(m.pcpu_stats(PcpuId(0)).busy, ms(9));
        assert_eq!(m.pcpu_stats(PcpuId(1)).busy, ms(5));
        assert_eq!(m.check_invariants(), Ok(()));
    }

    /// RTDS, a pcpu leaves: the same A (2 ms every 10) and B (5 ms every 12) in Pool-0 on
    /// pcpus 0 and 1: A runs on pcpu 0, B on pcpu 1 from 0. At 1 pcpu 0 leaves: A, which
    /// ran there, stops with its 1 ms left and deadline 10; the pool is pcpu 1 alone (now
    /// its local pcpu 0), where A (deadline 10) beats B (deadline 12, 4 ms left): A 1–2, B
    /// 2–6. At 10 A is replenished: A 10–12; at 12 B: B 12–17. At 20: A ran 1 + 1 + 2 =
    /// 4 ms (one migration), B 1 + 4 + 5 = 10 ms. (A restart at 1 gave A 1–3: 5 ms.)
    #[test]
    fn a_pcpu_that_leaves_stops_what_it_ran_and_rtds_budgets_stay() {
        let (mut m, v) = busy_pool(
            CpuSet::first(2),
            PolicyConfig::Rtds(Default::default()),
            &[(rtds_params(2, 10), None), (rtds_params(5, 12), None)],
        );
        let (a, b) = (v[0], v[1]);
        run_to(&mut m, ms(1));
        assert_eq!(
            (m.running(PcpuId(0)), m.running(PcpuId(1))),
            (Some(a), Some(b))
        );
        m.pool_cpu_remove(ms(1), 0, 0).unwrap();
        let view = |m: &Machine, v| {
            let view = m.policy_of(v).view(v);
            (view.remaining_budget, view.deadline)
        };
        assert_eq!(view(&m, a), (Some(ms(1)), Some(ms(10))));
        assert_eq!(view(&m, b), (Some(ms(4)), Some(ms(12))));
        assert_eq!(m.running(PcpuId(0)), None, "pcpu 0 is free");
        run_to(&mut m, ms(1));
        assert_eq!(m.running(PcpuId(1)), Some(a));
        run_to(&mut m, ms(20));
        assert_eq!(m.placement(a), ("Pool-0", CpuSet::one(1)));
        assert_eq!(m.vcpu_stats(a).run, ms(4));
        assert_eq!(m.vcpu_stats(b).run, ms(10));
        assert_eq!(m.vcpu_stats(a).migrations, 1);
        assert_eq!(m.pcpu_stats(PcpuId(0)).busy, ms(1));
        assert_eq!(m.pcpu_stats(PcpuId(1)).busy, ms(13));
        assert_eq!(m.check_invariants(), Ok(()));
    }

    /// The six fixed-priority server policies.
    const SERVERS: [PolicyConfig; 6] = [
        PolicyConfig::Deferrable,
        PolicyConfig::Periodic,
        PolicyConfig::Polling,
        PolicyConfig::Sporadic,
        PolicyConfig::Wcps,
        PolicyConfig::Crps,
    ];

    /// A (4 ms every 10, priority 1) and B (10 ms every 10, priority 2), always busy, in
    /// Pool-0 on `pcpus` under `policy`.
    fn servers_a_and_b(pcpus: CpuSet, policy: PolicyConfig) -> (Machine, VcpuId, VcpuId) {
        let (m, v) = busy_pool(
            pcpus,
            policy,
            &[
                (VcpuParams::server(ms(4), ms(10), 1), None),
                (VcpuParams::server(ms(10), ms(10), 2), None),
            ],
        );
        (m, v[0], v[1])
    }

    /// The six fixed-priority servers, a pcpu joins: A (4 ms every 10, priority 1) and B
    /// (10 ms every 10, priority 2), always busy, in Pool-0 on pcpu 0 (`two_pools`): A runs
    /// 0–3. At 3 pcpu 1 joins: A keeps its 1 ms left and its next replenishment at 10; B,
    /// waiting with its whole budget, takes pcpu 1. A 3–4 on pcpu 0, which then idles (B
    /// runs on pcpu 1, and nobody else has budget) until A's replenishment at 10: A 10–14.
    /// B runs 3–20 on pcpu 1: 7 ms of its first budget, then its second (the Sporadic
    /// Server's paybacks land at 10 for A and at B's exhaustion, 13, for B, which is as
    /// good). At 20: A ran 3 + 1 + 4 = 8 ms, B 17 ms. (A restart at 3 gave A a fresh
    /// 4 ms: 3–7, and 11 ms in all.)
    #[test]
    fn a_pcpu_that_joins_leaves_server_budgets_and_replenishments_as_they_were() {
        for policy in SERVERS {
            let kind = policy.kind();
            let (mut m, a, b) = servers_a_and_b(CpuSet::one(0), policy);
            run_to(&mut m, ms(3));
            m.pool_cpu_add(ms(3), 0, 1).unwrap();
            let left = |m: &Machine, v| m.policy_of(v).view(v).remaining_budget;
            assert_eq!(left(&m, a), Some(ms(1)), "{kind}");
            assert_eq!(left(&m, b), Some(ms(10)), "{kind}");
            run_to(&mut m, ms(9));
            assert_eq!(left(&m, a), Some(Nanos::ZERO), "{kind}");
            assert_eq!(m.running(PcpuId(0)), None, "{kind}");
            run_to(&mut m, ms(10));
            assert_eq!(left(&m, a), Some(ms(4)), "{kind}: replenished at 10");
            assert_eq!(m.running(PcpuId(0)), Some(a), "{kind}");
            run_to(&mut m, ms(20));
            assert_eq!(m.vcpu_stats(a).run, ms(8), "{kind}");
            assert_eq!(m.vcpu_stats(b).run, ms(17), "{kind}");
            assert_eq!(m.vcpu_stats(b).migrations, 0, "{kind}");
            assert_eq!(m.check_invariants(), Ok(()), "{kind}");
        }
    }

    /// The six fixed-priority servers, a pcpu leaves: the same A and B in Pool-0 on pcpus 0
    /// and 1: A runs on pcpu 0, B on pcpu 1 from 0. At 2 pcpu 0 leaves: A, which ran there,
    /// stops with 2 ms left; on pcpu 1 alone it beats B (8 ms left): A 2–4, B 4–10. At 10
    /// both are replenished (the Sporadic Server: A's 4 ms come back at 10, B keeps its
    /// 2 ms left until it spends them, 14–16, and gets its 8 ms back then, 10 being past):
    /// A 10–14, B 14–20. At 20: A ran 2 + 2 + 4 = 8 ms (one migration), B 2 + 6 + 6 =
    /// 14 ms. (A restart at 2 gave A 2–6 and 10 ms in all.)
    #[test]
    fn a_pcpu_that_leaves_stops_what_it_ran_and_server_budgets_stay() {
        for policy in SERVERS {
            let kind = policy.kind();
            let (mut m, a, b) = servers_a_and_b(CpuSet::first(2), policy);
            run_to(&mut m, ms(2));
            assert_eq!(
                (m.running(PcpuId(0)), m.running(PcpuId(1))),
                (Some(a), Some(b)),
                "{kind}"
            );
            m.pool_cpu_remove(ms(2), 0, 0).unwrap();
            let left = |m: &Machine, v| m.policy_of(v).view(v).remaining_budget;
            assert_eq!(left(&m, a), Some(ms(2)), "{kind}");
            assert_eq!(left(&m, b), Some(ms(8)), "{kind}");
            run_to(&mut m, ms(2));
            assert_eq!(m.running(PcpuId(1)), Some(a), "{kind}");
            run_to(&mut m, ms(20));
            assert_eq!(m.vcpu_stats(a).run, ms(8), "{kind}");
            assert_eq!(m.vcpu_stats(b).run, ms(14), "{kind}");
            assert_eq!(m.vcpu_stats(a).migrations, 1, "{kind}");
            assert_eq!(m.check_invariants(), Ok(()), "{kind}");
        }
    }

    /// Credit, a pcpu joins (10 ms tick, 30 ms slice): A and B wake at 0, A first: A runs
    /// from 0 and the tick at 10 charges it 10 ms (credit −10 ms); B waits. At 15 pcpu 1
    /// joins, on the pool's tick grid: A keeps its credit (and the 5 ms not charged yet)
    /// and goes on on pcpu 0; B takes pcpu 1. The ticks at 20 charge A 10 ms (−20 ms) and
    /// B 5 ms (−5 ms). (A restart at 15 reset A's credit: −5 ms at 20.)
    #[test]
    fn a_pcpu_that_joins_leaves_credit_as_it_was() {
        let credit = VcpuParams {
            weight: 256,
            ..VcpuParams::server(ms(1), ms(10), 0)
        };
        let (mut m, v) = busy_pool(
            CpuSet::one(0),
            PolicyConfig::Credit(Default::default()),
            &[(credit.clone(), None), (credit, None)],
        );
        let (a, b) = (v[0], v[1]);
        let credit_of = |m: &Machine, v| m.policy_of(v).view(v).credit;
        let ns = |x: u64| Nanos::from_ms(x).as_ns() as i64;
        run_to(&mut m, ms(15));
        assert_eq!(credit_of(&m, a), Some(-ns(10)));
        m.pool_cpu_add(ms(15), 0, 1).unwrap();
        assert_eq!(credit_of(&m, a), Some(-ns(10)));
        assert_eq!(credit_of(&m, b), Some(0));
        run_to(&mut m, ms(15));
        assert_eq!(
            (m.running(PcpuId(0)), m.running(PcpuId(1))),
            (Some(a), Some(b))
        );
        run_to(&mut m, ms(20));
        assert_eq!(credit_of(&m, a), Some(-ns(20)));
        assert_eq!(credit_of(&m, b), Some(-ns(5)));
        assert_eq!(m.vcpu_stats(a).run, ms(20));
        assert_eq!(m.vcpu_stats(b).run, ms(5));
        assert_eq!(m.check_invariants(), Ok(()));
    }

    /// SEDF (partitioned), pcpus join and leave: Pool-0 on pcpu 1 holds A (slice 2 ms every
    /// 10), pinned there, busy: A 0–1. At 1 pcpu 0 joins, ahead of pcpu 1 in the pool's
    /// numbering: A keeps its 1 ms left and deadline 10 on pcpu 1 (A 1–2), and C (3 ms
    /// every 10, from 1), pinned to pcpu 0, runs 1–4 there. At 15 C goes and pcpu 0
    /// leaves: A, depleted since 12 (A 10–12), keeps slice 0 and deadline 20 and runs
    /// 20–22. At 30: A ran 2 + 2 + 2 = 6 ms, C 3 + 3 = 6 ms (1–4, 11–14). (A restart at 1
    /// gave A 1–3; one at 15 gave it 15–17.) A VCPU not pinned to one pcpu keeps its pool
    /// from growing: SEDF would have to schedule it partitioned.
    #[test]
    fn a_partitioned_pool_grows_and_shrinks_without_restarting_its_vcpus() {
        let sedf = |slice| VcpuParams::server(ms(slice), ms(10), 0);
        let (mut m, v) = busy_pool(
            CpuSet::one(1),
            PolicyConfig::Sedf,
            &[(sedf(2), Some(CpuSet::one(1)))],
        );
        let a = v[0];
        let view = |m: &Machine, v| {
            let view = m.policy_of(v).view(v);
            (view.remaining_budget, view.deadline)
        };
        run_to(&mut m, ms(1));
        m.pool_cpu_add(ms(1), 0, 0).unwrap();
        assert_eq!(view(&m, a), (Some(ms(1)), Some(ms(10))));
        let c = m
            .add_vcpu_in(ms(1), DomainId(1), sedf(3), 0, Some(CpuSet::one(0)))
            .unwrap();
        m.wake(ms(1), c);
        run_to(&mut m, ms(1));
        assert_eq!(
            (m.running(PcpuId(0)), m.running(PcpuId(1))),
            (Some(c), Some(a))
        );
        run_to(&mut m, ms(15));
        assert!(matches!(
            m.pool_cpu_remove(ms(15), 0, 0),
            Err(MachineError::AffinityOutsidePool { vcpu: 1, .. })
        ));
        m.remove_vcpu(ms(15), c).unwrap();
        m.pool_cpu_remove(ms(15), 0, 0).unwrap();
        assert_eq!(view(&m, a), (Some(Nanos::ZERO), Some(ms(20))));
        run_to(&mut m, ms(30));
        assert_eq!(m.vcpu_stats(a).run, ms(6));
        assert_eq!(m.vcpu_stats(c).run, ms(6));
        assert_eq!(m.check_invariants(), Ok(()));

        let (mut m, v) = busy_pool(CpuSet::one(1), PolicyConfig::Sedf, &[(sedf(2), None)]);
        assert_eq!(
            m.pool_cpu_add(ms(1), 0, 0),
            Err(MachineError::NeedsPinning {
                vcpu: v[0].0,
                policy: PolicyKind::Sedf,
                pool: "Pool-0".to_string(),
                affinity: CpuSet::first(2),
            })
        );
        assert_eq!(
            m.pools().next().unwrap().1,
            CpuSet::one(1),
            "nothing changed"
        );
    }

    /// ARINC 653, a pcpu joins and follows the pool's major frames. Table: major frame
    /// 10 ms, A (VCPU 0) 3 ms then B (VCPU 1) 2 ms; both busy, both pinned to pcpu 0, the
    /// pool's only pcpu: A 0–3, B 3–5, idle 5–10, A 10–12. At 12 pcpu 1 joins and B is
    /// pinned to it. The frames stay where they were: 10–13 is A's frame on pcpu 1 too (A
    /// is not there: idle), 13–15 is B's: B runs 13–15 on pcpu 1, then 23–25; A goes on
    /// on pcpu 0 (12–13, 20–23). At 16 pcpu 1 idles (5–10 of the frame is nobody's). At 30:
    /// A ran 3 + 3 + 3 = 9 ms, B 2 + 2 + 2 = 6 ms. (Frames started at the join, pcpu 1
    /// would have run B 15–17: idle at 14, B at 16.)
    #[test]
    fn a_pcpu_that_joins_an_arinc_pool_follows_its_major_frames() {
        let frame = |v, runtime| crate::policy::MinorFrame {
            vcpu: VcpuId(v),
            runtime: ms(runtime),
        };
        let table = crate::policy::Arinc653Table {
            major_frame: ms(10),
            minor_frames: vec![frame(0, 3), frame(1, 2)],
        };
        let pinned = Some(CpuSet::one(0));
        let params = VcpuParams::server(ms(1), ms(10), 0);
        let (mut m, v) = busy_pool(
            CpuSet::one(0),
            PolicyConfig::Arinc653(table),
            &[(params.clone(), pinned), (params, pinned)],
        );
        let (a, b) = (v[0], v[1]);
        run_to(&mut m, ms(12));
        assert_eq!(m.vcpu_stats(b).run, ms(2), "B 3–5 on pcpu 0");
        m.pool_cpu_add(ms(12), 0, 1).unwrap();
        m.pin(ms(12), b, Some(CpuSet::one(1))).unwrap();
        run_to(&mut m, ms(12));
        assert_eq!(m.running(PcpuId(1)), None, "A's frame: idle on pcpu 1");
        run_to(&mut m, ms(14));
        assert_eq!(m.running(PcpuId(1)), Some(b), "B's frame, 13–15");
        assert_eq!(m.running(PcpuId(0)), None);
        run_to(&mut m, ms(16));
        assert_eq!(m.running(PcpuId(1)), None);
        run_to(&mut m, ms(30));
        assert_eq!((m.vcpu_stats(a).run, m.vcpu_stats(b).run), (ms(9), ms(6)));
        assert_eq!(m.check_invariants(), Ok(()));
    }

    mod smp_properties {
        //! Random machines of several pcpus driven by random wakes, blocks, pins and pool
        //! changes (pcpus moving out of Pool-0 and back, in any order, so a pcpu joins or
        //! leaves in the middle of a pool's numbering; domains moving): after every step no VCPU runs on two pcpus or outside its affinity or
        //! pool, time adds up exactly on every pcpu (`check_invariants`), the pcpus' busy
        //! time is the VCPUs' run time, and the same operations give the same counters.
        use super::*;
        use proptest::prelude::*;

        #[derive(Clone, Debug)]
        enum Op {
            Wake(usize),
            Block(usize),
            /// Pin a VCPU to a set of pcpus (a bit mask, 0 = back to the whole pool).
            Pin(usize, u64),
            /// Move a pcpu out of Pool-0 into pool `p1` (created on first use).
            SplitOff(u32),
            /// Move a pcpu of `p1` back into Pool-0 (where it may join in the middle of the
            /// pool's numbering).
            JoinBack(u32),
            /// Move a domain to `p1`, or back to Pool-0.
            Migrate(usize, bool),
        }

        fn op(vcpus: usize, pcpus: u32) -> impl Strategy<Value = (u64, Op)> {
            let kind = prop_oneof![
                4 => (0..vcpus).prop_map(Op::Wake),
                3 => (0..vcpus).prop_map(Op::Block),
                2 => (0..vcpus, 0..(1u64 << pcpus)).prop_map(|(v, m)| Op::Pin(v, m)),
                1 => (0..pcpus).prop_map(Op::SplitOff),
                1 => (0..pcpus).prop_map(Op::JoinBack),
                1 => (0..vcpus, any::<bool>()).prop_map(|(v, b)| Op::Migrate(v, b)),
            ];
            (0u64..3_000, kind)
        }

        fn policy(i: u8) -> PolicyConfig {
            match i % 8 {
                0 => PolicyConfig::Rtds(Default::default()),
                1 => PolicyConfig::Deferrable,
                2 => PolicyConfig::Sporadic,
                3 => PolicyConfig::Credit(Default::default()),
                4 => PolicyConfig::Periodic,
                5 => PolicyConfig::Polling,
                6 => PolicyConfig::Wcps,
                _ => PolicyConfig::Crps,
            }
        }

        /// Runs the operations; returns every counter, for determinism.
        fn drive(
            pcpus: u32,
            policy_index: u8,
            servers: &[(u64, u64)],
            ops: &[(u64, Op)],
        ) -> Result<Vec<String>, TestCaseError> {
            let config = MachineConfig {
                pcpus,
                overheads: Overheads {
                    do_schedule: Nanos(3_000),
                    context_switch: Nanos(5_000),
                    migration: Nanos(7_000),
                    lock: Nanos(1_000),
                },
                ..MachineConfig::default()
            };
            let mut m = Machine::new(config, policy(policy_index)).unwrap();
            let mut vcpus = Vec::new();
            for (d, &(b, p)) in servers.iter().enumerate() {
                let mut params = VcpuParams::server(us(b), us(p), d as u32);
                params.extratime = Some(d % 2 == 0);
                vcpus.push(m.add_vcpu(Nanos::ZERO, DomainId(d as u32), params).unwrap());
            }
            // A pcpu that joins or leaves a pool changes no budget or deadline (Credit's
            // view has neither: the VCPU a leaving pcpu ran is charged, as at a
            // `do_schedule`).
            let budgets = |m: &Machine| -> Vec<(Option<Nanos>, Option<Nanos>)> {
                vcpus
                    .iter()
                    .map(|&v| {
                        let view = m.policy_of(v).view(v);
                        (view.remaining_budget, view.deadline)
                    })
                    .collect()
            };
            let mut now = Nanos::ZERO;
            for (gap, op) in ops {
                now += us(*gap);
                run_to(&mut m, now);
                prop_assert_eq!(m.check_invariants(), Ok(()), "before {:?} at {}", op, now);
                match *op {
                    Op::Wake(i) => m.wake(now, vcpus[i]),
                    Op::Block(i) => m.block(now, vcpus[i]),
                    Op::Pin(i, mask) => {
                        let set = (mask != 0)
                            .then(|| CpuSet::from_indices((0..64).filter(|i| mask >> i & 1 == 1)))
                            .flatten();
                        let _ = m.pin(now, vcpus[i], set);
                    }
                    Op::SplitOff(c) => {
                        if m.pool_index("p1").is_err() {
                            let _ = m.pool_create(
                                now,
                                PoolSpec::new("p1", CpuSet::EMPTY, policy(policy_index + 1)),
                            );
                        }
                        let before = budgets(&m);
                        if m.pool_cpu_remove(now, 0, c).is_ok() {
                            m.pool_cpu_add(now, 1, c).unwrap();
                        }
                        prop_assert_eq!(budgets(&m), before, "{:?} at {}", op, now);
                    }
                    Op::JoinBack(c) => {
                        let before = budgets(&m);
                        if m.pool_cpu_remove(now, 1, c).is_ok() {
                            m.pool_cpu_add(now, 0, c).unwrap();
                        }
                        prop_assert_eq!(budgets(&m), before, "{:?} at {}", op, now);
                    }
                    Op::Migrate(i, to_p1) => {
                        let _ = m.pool_migrate(now, DomainId(i as u32), usize::from(to_p1));
                    }
                }
                // Everything due at this instant, then the invariants again.
                run_to(&mut m, now);
                prop_assert_eq!(m.check_invariants(), Ok(()), "after {:?} at {}", op, now);
            }
            run_to(&mut m, now + us(20_000));
            let end = m.now();
            let mut busy = Nanos::ZERO;
            let mut out = Vec::new();
            for c in 0..pcpus {
                let s = m.pcpu_stats(PcpuId(c));
                prop_assert_eq!(s.busy + s.idle + s.overhead, end, "pcpu {}", c);
                busy += s.busy;
                out.push(format!("{s:?}"));
            }
            let run = vcpus
                .iter()
                .fold(Nanos::ZERO, |sum, &v| sum + m.vcpu_stats(v).run);
            prop_assert_eq!(busy, run, "busy pcpu time is VCPU run time");
            for &v in &vcpus {
                out.push(format!("{:?} {:?}", m.vcpu_stats(v), m.placement(v)));
            }
            Ok(out)
        }

        proptest! {
            // 300 cases by default; `PROPTEST_CASES` sets another count.
            #![proptest_config(ProptestConfig {
                cases: std::env::var("PROPTEST_CASES")
                    .ok()
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(300),
                ..ProptestConfig::default()
            })]
            #[test]
            fn no_vcpu_runs_twice_or_outside_its_affinity_and_time_adds_up(
                pcpus in 2u32..=3,
                policy_index in 0u8..8,
                servers in prop::collection::vec((100u64..4_000, 4_000u64..12_000), 2..5),
                ops in prop::collection::vec(op(4, 3), 1..60),
            ) {
                let vcpus = servers.len();
                let ops: Vec<(u64, Op)> = ops
                    .into_iter()
                    .map(|(g, o)| (g, match o {
                        Op::Wake(i) => Op::Wake(i % vcpus),
                        Op::Block(i) => Op::Block(i % vcpus),
                        Op::Pin(i, m) => Op::Pin(i % vcpus, m & ((1 << pcpus) - 1)),
                        Op::SplitOff(c) => Op::SplitOff(c % pcpus),
                        Op::JoinBack(c) => Op::JoinBack(c % pcpus),
                        Op::Migrate(i, b) => Op::Migrate(i % vcpus, b),
                    }))
                    .collect();
                let first = drive(pcpus, policy_index, &servers, &ops)?;
                let again = drive(pcpus, policy_index, &servers, &ops)?;
                prop_assert_eq!(first, again, "same operations, same counters");
            }
        }
    }
}
