//! Partitioned scheduling of a pool of several pcpus for the policies that do not schedule
//! globally ([`PolicyKind::schedules_globally`]): SEDF and ARINC 653.
//!
//! # Design note
//! - **One instance per pcpu**: [`Partitioned`] holds one instance of the inner policy per
//!   pcpu of the pool, each built for one pcpu, and forwards every hook to the instance of
//!   the pcpu concerned (as local pcpu 0 of that instance). So a pool of m pcpus behaves
//!   exactly like m machines of one pcpu, each running the VCPUs pinned to it.
//! - **Placement**: a VCPU lives in the instance of the one pcpu its affinity names (the
//!   machine refuses any other affinity for these policies; should one get here, its lowest
//!   pcpu is used). [`Policy::set_affinity`] comes right before [`Policy::insert_vcpu`]; a
//!   later one naming another pcpu **moves** the VCPU: it leaves the old instance and joins
//!   the new one as if inserted at that instant (with its latest parameters, periods started
//!   anew, as a hot swap does), waking there if it has work. Its budget counters from the
//!   old instance are kept.
//! - **Pool changes** ([`Policy::change_pcpus`]): a pcpu that joins gets a new, empty
//!   instance; the instance of a pcpu that leaves holds nobody (the machine refuses to take
//!   a pcpu a VCPU is pinned to); every other instance, and so every VCPU, goes on
//!   untouched, its home renumbered. A policy of one pcpu whose pool grows becomes the
//!   instance of its pcpu ([`Partitioned::around`]).
//! - **Timers**: the earliest timer of any instance; `handle_timer` runs every instance
//!   whose timer is due. **Tick**: the inner policy's interval; each pcpu's tick goes to its
//!   own instance.
//! - **Reschedules**: a hook that an instance answers `true` marks that instance's pcpu;
//!   [`Policy::tickle`] names the marked pcpus and forgets them (the machine asks right
//!   after such a hook), and a pcpu's `do_schedule` forgets its own mark.

use std::cell::Cell;

use crate::cpuset::CpuSet;
use crate::event::Cx;
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::table::VcpuTable;
use crate::policy::{
    BudgetCounters, Decision, PcpuChange, Policy, PolicyConfig, PolicyKind, Spent, TickInterval,
    VcpuView,
};
use crate::time::Nanos;

/// The pcpu an instance's policy sees itself on.
const LOCAL: PcpuId = PcpuId(0);

/// The home of a VCPU whose pcpu left the pool (see [`Partitioned::move_to`]).
const LEFT: u32 = u32::MAX;

/// What the wrapper remembers of a VCPU to move it between instances.
#[derive(Clone, Debug)]
struct Member {
    /// The pcpu (local index) whose instance holds it.
    home: u32,
    params: VcpuParams,
    has_work: bool,
    /// Budget counters of the instances it left.
    earlier: BudgetCounters,
}

/// A policy of one pcpu run once per pcpu of the pool (see the module note).
pub struct Partitioned {
    /// The inner policy, for the instance of a pcpu that joins.
    config: PolicyConfig,
    instances: Vec<Box<dyn Policy>>,
    members: VcpuTable<Member>,
    /// Homes set by `set_affinity` for VCPUs not inserted yet.
    placed: VcpuTable<u32>,
    /// Pcpus whose instance asked for a reschedule not yet passed on by `tickle` nor met
    /// by their `do_schedule`.
    asked: Cell<CpuSet>,
}

impl Partitioned {
    /// `config`'s policy on each of `pcpus` pcpus (at least one).
    pub fn new(config: &PolicyConfig, pcpus: u32) -> Partitioned {
        Partitioned {
            config: config.clone(),
            instances: (0..pcpus.max(1)).map(|_| config.build(1)).collect(),
            members: VcpuTable::new(),
            placed: VcpuTable::new(),
            asked: Cell::new(CpuSet::EMPTY),
        }
    }

    /// `config`'s policy already running on one pcpu (`single`, built by `config` for one
    /// pcpu), as the instance of local pcpu 0, with its VCPUs (`members`: id, parameters,
    /// whether it has work) and their live state — so that its pool can grow
    /// ([`Policy::change_pcpus`]) without restarting them.
    pub fn around(
        config: &PolicyConfig,
        single: Box<dyn Policy>,
        members: impl IntoIterator<Item = (VcpuId, VcpuParams, bool)>,
    ) -> Partitioned {
        let mut table = VcpuTable::new();
        for (vcpu, params, has_work) in members {
            table.insert(
                vcpu,
                Member {
                    home: 0,
                    params,
                    has_work,
                    earlier: BudgetCounters::default(),
                },
            );
        }
        Partitioned {
            config: config.clone(),
            instances: vec![single],
            members: table,
            placed: VcpuTable::new(),
            asked: Cell::new(CpuSet::EMPTY),
        }
    }

    /// The instance of local pcpu `pcpu`, for its views (tests, traces).
    pub fn instance(&self, pcpu: u32) -> &dyn Policy {
        self.instances[pcpu as usize].as_ref()
    }

    /// The local pcpu whose instance holds `vcpu`.
    pub fn home(&self, vcpu: VcpuId) -> u32 {
        self.members.get(vcpu).home
    }

    fn ask(&self, pcpu: u32, asked: bool) -> bool {
        if asked {
            let mut s = self.asked.get();
            s.insert(pcpu);
            self.asked.set(s);
        }
        asked
    }

    /// The home an affinity names, within the pool.
    fn home_of(&self, affinity: CpuSet) -> u32 {
        affinity
            .intersection(CpuSet::first(self.instances.len() as u32))
            .lowest()
            .unwrap_or(0)
    }

    /// Moves `vcpu` to the instance of `home`: it leaves its old one (unless its old home
    /// is [`LEFT`]) and joins the new one as if inserted now, waking there if it has work.
    /// Both pcpus must decide again.
    fn move_to(&mut self, cx: &mut Cx, vcpu: VcpuId, home: u32) -> bool {
        let m = self.members.get(vcpu);
        let (old, params, has_work) = (m.home, m.params.clone(), m.has_work);
        let mut left = BudgetCounters::default();
        if let Some(instance) = self.instances.get_mut(old as usize) {
            left = instance.counters(vcpu);
            instance.remove_vcpu(cx, vcpu);
            self.ask(old, true);
        }
        let instance = self.instances[home as usize].as_mut();
        instance.set_affinity(cx, vcpu, CpuSet::one(0));
        instance.insert_vcpu(cx, vcpu, &params);
        if has_work {
            instance.wake(cx, vcpu);
        }
        let m = self.members.get_mut(vcpu);
        m.home = home;
        m.earlier += left;
        self.ask(home, true)
    }

    fn instance_of(&mut self, vcpu: VcpuId) -> (u32, &mut dyn Policy) {
        let home = self.members.get(vcpu).home;
        (home, self.instances[home as usize].as_mut())
    }
}

impl Policy for Partitioned {
    fn kind(&self) -> PolicyKind {
        self.config.kind()
    }

    fn validate(&self, params: &VcpuParams) -> Result<(), ParamError> {
        self.instances[0].validate(params)
    }

    fn insert_vcpu(&mut self, cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) {
        let home = self.placed.remove(vcpu).unwrap_or(0);
        let instance = self.instances[home as usize].as_mut();
        instance.set_affinity(cx, vcpu, CpuSet::one(0));
        instance.insert_vcpu(cx, vcpu, params);
        self.members.insert(
            vcpu,
            Member {
                home,
                params: params.clone(),
                has_work: false,
                earlier: BudgetCounters::default(),
            },
        );
    }

    fn remove_vcpu(&mut self, cx: &mut Cx, vcpu: VcpuId) {
        let (home, instance) = self.instance_of(vcpu);
        instance.remove_vcpu(cx, vcpu);
        self.ask(home, true);
        self.members.remove(vcpu);
    }

    fn wake(&mut self, cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.members.get_mut(vcpu).has_work = true;
        let (home, instance) = self.instance_of(vcpu);
        let asked = instance.wake(cx, vcpu);
        self.ask(home, asked)
    }

    fn sleep(&mut self, cx: &mut Cx, vcpu: VcpuId) -> bool {
        self.members.get_mut(vcpu).has_work = false;
        let (home, instance) = self.instance_of(vcpu);
        let asked = instance.sleep(cx, vcpu);
        self.ask(home, asked)
    }

    fn burn(&mut self, cx: &mut Cx, pcpu: PcpuId, ran: Nanos, spent: Spent) {
        self.instances[pcpu.index()].burn(cx, LOCAL, ran, spent);
    }

    fn do_schedule(&mut self, cx: &mut Cx, pcpu: PcpuId) -> Decision {
        let mut asked = self.asked.get();
        asked.remove(pcpu.0);
        self.asked.set(asked);
        self.instances[pcpu.index()].do_schedule(cx, LOCAL)
    }

    fn tick_interval(&self) -> TickInterval {
        self.instances[0].tick_interval()
    }

    fn tick(&mut self, cx: &mut Cx, pcpu: PcpuId) -> bool {
        self.instances[pcpu.index()].tick(cx, LOCAL)
    }

    fn next_timer(&self) -> Option<Nanos> {
        self.instances.iter().filter_map(|i| i.next_timer()).min()
    }

    fn handle_timer(&mut self, cx: &mut Cx) -> bool {
        let mut any = false;
        for p in 0..self.instances.len() {
            let instance = self.instances[p].as_mut();
            if instance.next_timer().is_some_and(|due| due <= cx.now) {
                let asked = instance.handle_timer(cx);
                any |= self.ask(p as u32, asked);
            }
        }
        any
    }

    fn adjust(&mut self, cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) -> bool {
        self.members.get_mut(vcpu).params = params.clone();
        let (home, instance) = self.instance_of(vcpu);
        let asked = instance.adjust(cx, vcpu, params);
        self.ask(home, asked)
    }

    fn view(&self, vcpu: VcpuId) -> VcpuView {
        self.instances[self.home(vcpu) as usize].view(vcpu)
    }

    fn counters(&self, vcpu: VcpuId) -> BudgetCounters {
        let m = self.members.get(vcpu);
        let mut total = m.earlier;
        total += self.instances[m.home as usize].counters(vcpu);
        total
    }

    fn check_invariants(&self) -> Result<(), String> {
        for (p, instance) in self.instances.iter().enumerate() {
            instance
                .check_invariants()
                .map_err(|e| format!("pcpu {p}: {e}"))?;
        }
        Ok(())
    }

    fn set_affinity(&mut self, cx: &mut Cx, vcpu: VcpuId, affinity: CpuSet) -> bool {
        let home = self.home_of(affinity);
        let Some(m) = self.members.try_get(vcpu) else {
            self.placed.insert(vcpu, home);
            return false;
        };
        if m.home == home {
            return false;
        }
        self.move_to(cx, vcpu, home)
    }

    fn change_pcpus(&mut self, cx: &mut Cx, change: PcpuChange) -> bool {
        let config = &self.config;
        // A joining pcpu follows the grid (ARINC 653's major frames) of those already here.
        let origin = self.instances.iter().find_map(|i| i.grid_origin());
        let mut left = change.apply(&mut self.instances, || {
            let mut joining = config.build(1);
            if let Some(origin) = origin {
                joining.follow_grid(origin);
            }
            joining
        });
        self.asked.set(change.renumber_set(self.asked.get()));
        for home in self.placed.iter_mut() {
            *home = change.renumber(*home).unwrap_or(0);
        }
        for i in 0..self.members.capacity() {
            let vcpu = VcpuId(i as u32);
            let Some(m) = self.members.try_get(vcpu) else {
                continue;
            };
            if let Some(home) = change.renumber(m.home) {
                self.members.get_mut(vcpu).home = home;
                continue;
            }
            // The machine refuses to take a pcpu a VCPU is pinned to, so the leaving
            // instance holds nobody; should it, the VCPU moves to pcpu 0 as a pin would
            // move it.
            if let Some(left) = left.as_mut() {
                let m = self.members.get_mut(vcpu);
                m.earlier += left.counters(vcpu);
                left.remove_vcpu(cx, vcpu);
                m.home = LEFT;
                self.move_to(cx, vcpu, 0);
            }
        }
        // Every other instance goes on as it was: nothing changed for its pcpu.
        false
    }

    fn tickle(&self) -> CpuSet {
        self.asked.replace(CpuSet::EMPTY)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventLog;

    fn ms(x: u64) -> Nanos {
        Nanos::from_ms(x)
    }

    #[test]
    fn each_vcpu_lives_on_its_pinned_pcpu_and_a_pin_moves_it() {
        let mut log = EventLog::new(false);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        let mut p = Partitioned::new(&PolicyConfig::Periodic, 2);
        let (a, b) = (VcpuId(0), VcpuId(1));
        p.set_affinity(&mut cx, a, CpuSet::one(0));
        p.insert_vcpu(&mut cx, a, &VcpuParams::server(ms(2), ms(10), 1));
        p.set_affinity(&mut cx, b, CpuSet::one(1));
        p.insert_vcpu(&mut cx, b, &VcpuParams::server(ms(2), ms(10), 2));
        assert_eq!((p.home(a), p.home(b)), (0, 1));
        // Nothing asked yet: both pcpus decide at insertion (the machine asks).
        assert_eq!(p.tickle(), CpuSet::EMPTY);
        // A wakes: only its pcpu's instance (PTPS: A is H and has work) asks, once.
        assert!(p.wake(&mut cx, a));
        assert_eq!(p.tickle(), CpuSet::one(0));
        assert_eq!(p.tickle(), CpuSet::EMPTY, "forgotten once passed on");
        assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, Some(a));
        // Pcpu 1 runs nothing of A's: B is idle-with-budget (PTPS idles B's budget away).
        assert_eq!(p.do_schedule(&mut cx, PcpuId(1)).run, None);
        // Pinning A to pcpu 1 moves it, with its work: both pcpus must decide again. There A
        // (priority 1) is H and has work, ahead of B (priority 2).
        assert!(p.set_affinity(&mut cx, a, CpuSet::one(1)));
        assert_eq!(p.tickle(), CpuSet::first(2));
        assert_eq!(p.home(a), 1);
        assert_eq!(p.do_schedule(&mut cx, PcpuId(0)).run, None);
        assert_eq!(p.do_schedule(&mut cx, PcpuId(1)).run, Some(a));
        assert_eq!(p.check_invariants(), Ok(()));
    }
}
