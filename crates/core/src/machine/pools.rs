//! Cpupools (Xen's `cpupool.c`): a pool as configured ([`PoolSpec`]) and at run time,
//! creating one, a pcpu joining or leaving one, a domain migrating between them, the hot
//! swap of a pool's policy, and looking pools up. The rules are in the design note of
//! [`super`] ("Cpupools at run time").

use super::{Machine, MachineConfig, MachineError, Overheads};
use crate::cpuset::CpuSet;
use crate::event::{Cx, ScheduleReason};
use crate::model::{DomainId, VcpuId};
use crate::policy::partitioned::Partitioned;
use crate::policy::{PcpuChange, Policy, PolicyConfig, PolicyKind, TickInterval};
use crate::time::Nanos;

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

    /// The pool's quantum on a machine of `config`: its own, else the machine's.
    pub fn quantum_on(&self, config: &MachineConfig) -> Nanos {
        self.quantum.unwrap_or(config.quantum)
    }

    /// The periodic tick `policy` takes on each pcpu of a pool of `quantum`: its interval
    /// and whether it is the quantum tick (the RT-Xen servers, RTDS in quantum mode), or
    /// `None` for an event-driven policy. What a machine arms, and what a driver's
    /// estimate of a run's work counts: the one answer to "how often does this pool
    /// tick".
    pub fn tick_of(policy: &PolicyConfig, quantum: Nanos) -> Option<(Nanos, bool)> {
        let (tick, quantum_tick) = Machine::resolve_tick(policy.build(1).tick_interval(), quantum);
        tick.map(|every| (every, quantum_tick))
    }
}

/// A cpupool at run time.
pub(super) struct Pool {
    pub(super) name: String,
    pub(super) policy: Box<dyn Policy>,
    pub(super) policy_config: PolicyConfig,
    /// Its pcpus (machine ids), in local order: local index i is `cpus[i]`.
    pub(super) cpus: Vec<u32>,
    pub(super) quantum: Nanos,
    pub(super) overheads: Overheads,
    /// The tick of the current policy: its interval (`None`: no tick) and whether it is the
    /// RT-Xen servers' quantum tick (which processes due timers in `tick` replenishment
    /// mode).
    pub(super) tick: Option<Nanos>,
    pub(super) quantum_tick: bool,
    /// Its policy runs inside [`Partitioned`] (one instance per pcpu): built so for several
    /// pcpus, or grown to several since (it stays so when the pool shrinks back to one).
    pub(super) partitioned: bool,
}

impl Pool {
    pub(super) fn cpuset(&self) -> CpuSet {
        CpuSet::from_indices(self.cpus.iter().copied()).expect("pcpu ids are below CpuSet::MAX")
    }

    /// A machine affinity in the pool's local indices.
    pub(super) fn local(&self, affinity: Option<CpuSet>) -> CpuSet {
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

impl Machine {
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

    pub(super) fn check_new_pool(&self, spec: &PoolSpec) -> Result<(), MachineError> {
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

    /// Checks that `affinity` (machine ids; `None`: the whole pool) suits a VCPU `id` of
    /// pool `pool`: within the pool, and one pcpu when the pool's policy is partitioned.
    pub(super) fn check_affinity(
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

    /// A pool without pcpus yet and with its policy built for none.
    pub(super) fn make_pool(&self, spec: PoolSpec) -> Pool {
        let quantum = spec.quantum_on(&self.config);
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
    pub(super) fn place_pcpu(&mut self, pool: usize, c: u32) -> u32 {
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
    pub(super) fn rebuild_pool(&mut self, now: Nanos, pool: usize, config: Option<PolicyConfig>) {
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

    /// The tick interval of a policy (None: no tick) and whether it is the quantum tick:
    /// the one rule, which [`PoolSpec::tick_of`] answers for a policy not yet built.
    pub(super) fn resolve_tick(interval: TickInterval, quantum: Nanos) -> (Option<Nanos>, bool) {
        match interval {
            TickInterval::Quantum => (Some(quantum), true),
            // A zero interval (refused when a configuration is validated) would loop.
            TickInterval::Every(every) => (Some(every.max(Nanos(1))), false),
            TickInterval::None => (None, false),
        }
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
}
