//! VMM-level scheduling policies: one trait, one file per policy.
//!
//! # How the machine drives a policy
//! The [`Machine`](crate::machine::Machine) owns time, the pcpus and the overhead model;
//! a policy owns its queues and budgets. Before any hook that can change state, the machine
//! calls [`Policy::burn`] with the time the current decision has been in effect, so a
//! policy always sees its budgets up to date. Then, in a fixed order: due timers
//! ([`Policy::handle_timer`]), the tick ([`Policy::tick`]), and — when anything asked for
//! it — [`Policy::do_schedule`].
//!
//! # Which policies tick
//! Each policy says how it wants the periodic tick ([`Policy::tick_interval`]), as in Xen:
//! the RT-Xen servers tick every scheduling quantum and reschedule at every tick
//! ([`TickInterval::Quantum`]); Credit has its own 10 ms tick that charges the running VCPU
//! without rescheduling by itself ([`TickInterval::Every`]); SEDF, RTDS and ARINC 653 are
//! event-driven ([`TickInterval::None`]): they are called back only when a slice they
//! returned ends, a timer of theirs is due, or a VCPU blocks or wakes.
//!
//! # Pools that change
//! A pcpu that joins or leaves a pool (`cpupool-cpu-add`, `cpupool-cpu-remove`) does not
//! restart the pool's policy: [`Policy::change_pcpus`] renumbers its per-pcpu state, every
//! VCPU keeps its budget, deadline, credit and pending replenishments (as in Xen, whose
//! `schedule_cpu_add`/`schedule_cpu_rm` move a pcpu in or out of a scheduler without
//! touching its units), and only what the leaving pcpu ran is descheduled. A hot swap
//! starts the new policy afresh, and a domain moved to another pool is inserted there
//! anew (Xen's `sched_move_domain`).
//!
//! Hooks are named like Xen's (`xen/common/sched/*.c`): `insert_vcpu`, `remove_vcpu`,
//! `wake`, `sleep`, `do_schedule`, `tick`, `adjust`. A policy never reads a clock: `cx.now`
//! is the instant of the call.

use crate::cpuset::CpuSet;
use crate::event::Cx;
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
// Defined with the other identifiers in `model`, whose VCPU parameters ask it for their
// defaults; callers name it here, with the policies.
pub use crate::model::{PolicyKind, UnknownPolicy};
use crate::time::Nanos;

pub mod arinc653;
pub mod credit;
pub mod crps;
pub mod deferrable;
pub mod edf;
pub mod fp;
pub mod global;
pub(crate) mod ordered_queue;
pub mod partitioned;
pub mod per_pcpu;
pub mod periodic;
pub mod polling;
pub mod rtds;
pub mod sedf;
pub mod sedf_ideal;
pub mod sporadic;
pub mod table;
pub mod wcps;

/// What `do_schedule` decided for one pcpu.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The VCPU to run; `None` runs the IDLE VCPU.
    pub run: Option<VcpuId>,
    /// Call `do_schedule` again at the latest after this much run time (for example when a
    /// budget runs out). `None`: only when another event asks for it.
    pub slice: Option<Nanos>,
}

impl Decision {
    pub const IDLE: Decision = Decision {
        run: None,
        slice: None,
    };
}

/// How a policy wants the periodic scheduler tick (see the module doc).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TickInterval {
    /// Every scheduling quantum of the machine; every tick calls `do_schedule`, and with
    /// tick-timed replenishment ([`ReplenishMode::Tick`](crate::machine::ReplenishMode))
    /// the policy's due timers are processed at the tick (the RT-Xen servers).
    Quantum,
    /// The policy's own tick of this interval (greater than 0); `do_schedule` runs after it
    /// only when [`Policy::tick`] asks. The policy's timers are always exact.
    Every(Nanos),
    /// No tick: event-driven. The policy's timers are always exact.
    None,
}

/// What the time passed to [`Policy::burn`] was spent on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spent {
    /// The decision was in effect: its VCPU ran (or the pcpu idled on its behalf).
    Running,
    /// Scheduler overhead before the decision took effect, charged to the decision as if
    /// it were running (`overhead_charge = "incoming"`): Xen measures a VCPU's run time
    /// from the instant `do_schedule` began choosing it.
    Overhead,
}

/// How a VCPU's budget was spent, for the per-VCPU metrics. Policies that have no budget
/// leave the fields they do not use at zero.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BudgetCounters {
    /// Budget consumed while this VCPU ran (or, for WCPS, while a VCPU ran on its behalf).
    pub consumed: Nanos,
    /// Budget consumed while the pcpu idled on this VCPU's behalf (PTPS, WCPS, CRPS).
    pub idled: Nanos,
    /// Budget thrown away (Polling Server).
    pub discarded: Nanos,
    /// Budget of this VCPU spent by another VCPU (CRPS).
    pub lent: Nanos,
    /// Run time this VCPU got on another VCPU's budget (CRPS).
    pub borrowed: Nanos,
    /// Budget (Credit: credit; SEDF: slice) consumed by scheduler overhead charged to this
    /// VCPU ([`Spent::Overhead`]); not included in the fields above.
    pub overhead: Nanos,
}

impl BudgetCounters {
    /// Counts `amount` of budget (Credit: credit) spent as `spent` says: run time as
    /// `consumed`, overhead as `overhead`.
    #[inline]
    pub fn spend(&mut self, spent: Spent, amount: Nanos) {
        match spent {
            Spent::Running => self.consumed += amount,
            Spent::Overhead => self.overhead += amount,
        }
    }
}

impl std::ops::AddAssign for BudgetCounters {
    fn add_assign(&mut self, o: BudgetCounters) {
        self.consumed += o.consumed;
        self.idled += o.idled;
        self.discarded += o.discarded;
        self.lent += o.lent;
        self.borrowed += o.borrowed;
        self.overhead += o.overhead;
    }
}

/// A VCPU's live scheduling state as a policy sees it, for tests, traces and invariants.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VcpuView {
    /// Remaining budget (servers, SEDF slice, RTDS). `None` for policies without budgets.
    pub remaining_budget: Option<Nanos>,
    /// Current absolute deadline (SEDF, RTDS).
    pub deadline: Option<Nanos>,
    /// Credit balance in nanoseconds of run time (Credit).
    pub credit: Option<i64>,
}

/// One VMM scheduling policy, for the pcpus of one pool.
pub trait Policy: Send {
    /// The policy's canonical name (see [`PolicyKind::name`]).
    fn kind(&self) -> PolicyKind;

    /// Checks parameters before a VCPU is inserted or adjusted. The default accepts
    /// anything; each policy checks the fields it reads.
    fn validate(&self, params: &VcpuParams) -> Result<(), ParamError>;

    /// A new VCPU, with no work, joins at `cx.now`. Servers start their first period at
    /// `cx.now + params.offset`.
    fn insert_vcpu(&mut self, cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams);

    /// The VCPU leaves. It is not running (the machine deschedules it first).
    fn remove_vcpu(&mut self, cx: &mut Cx, vcpu: VcpuId);

    /// The VCPU now has work. Returns whether the pcpu must reschedule now (the VCPU
    /// should preempt what runs).
    fn wake(&mut self, cx: &mut Cx, vcpu: VcpuId) -> bool;

    /// The VCPU has no work any more. Returns whether the pcpu must reschedule now (the
    /// machine reschedules anyway when the VCPU is the one running).
    fn sleep(&mut self, cx: &mut Cx, vcpu: VcpuId) -> bool;

    /// Charges `ran` nanoseconds of the decision last returned for `pcpu`: time it was in
    /// effect, or scheduler overhead charged to it (`spent`). Called before every other
    /// state-changing hook.
    fn burn(&mut self, cx: &mut Cx, pcpu: PcpuId, ran: Nanos, spent: Spent);

    /// Chooses what `pcpu` runs from `cx.now`.
    fn do_schedule(&mut self, cx: &mut Cx, pcpu: PcpuId) -> Decision;

    /// How this policy wants the periodic tick. Read by the machine when the policy starts.
    fn tick_interval(&self) -> TickInterval;

    /// The periodic scheduler tick on `pcpu`. Returns whether `do_schedule` must run now.
    /// The default (the RT-Xen servers) does nothing else and always asks.
    fn tick(&mut self, _cx: &mut Cx, _pcpu: PcpuId) -> bool {
        true
    }

    /// The earliest instant at which the policy's own timers (replenishments, accounting)
    /// are due, if any.
    fn next_timer(&self) -> Option<Nanos>;

    /// Processes every timer due at or before `cx.now`. Returns whether the pcpu must
    /// reschedule.
    fn handle_timer(&mut self, cx: &mut Cx) -> bool;

    /// New parameters for a VCPU. They take effect at the VCPU's next replenishment; a
    /// remaining budget above the new budget is cut down to it at once, and a larger new
    /// budget is not granted early. Returns whether the pcpu must reschedule.
    fn adjust(&mut self, cx: &mut Cx, vcpu: VcpuId, params: &VcpuParams) -> bool;

    /// The VCPU's live state.
    fn view(&self, vcpu: VcpuId) -> VcpuView;

    /// How the VCPU's budget was spent so far.
    fn counters(&self, vcpu: VcpuId) -> BudgetCounters;

    /// Checks the policy's internal invariants (budgets in range, queues ordered, ...).
    fn check_invariants(&self) -> Result<(), String>;

    /// The VCPU's hard affinity: the pool's pcpus (by their index in the pool) it may run
    /// on. The machine calls it right before [`Policy::insert_vcpu`] and whenever the
    /// affinity changes (`vcpu-pin`); a VCPU whose affinity is never set may run on every
    /// pcpu of the pool. `do_schedule(pcpu)` must never choose a VCPU whose affinity lacks
    /// `pcpu`. Returns whether some pcpu must reschedule (ask through [`Policy::tickle`]).
    /// The default, for a policy of one pcpu, ignores it.
    fn set_affinity(&mut self, _cx: &mut Cx, _vcpu: VcpuId, _affinity: CpuSet) -> bool {
        false
    }

    /// Several pcpus: the pool's pcpus that must reschedule now, so that what runs is what
    /// the policy wants to run (global EDF: an eligible VCPU that runs nowhere and beats
    /// the least urgent running VCPU of its affinity, or finds an idle pcpu in it — Xen's
    /// "tickle"). The machine asks after every hook that returned `true` and after every
    /// `do_schedule` in a pool of several pcpus. It must converge: after the pcpus it names
    /// have rescheduled, with nothing else changed, it names none. The default, for a
    /// policy of one pcpu, names none (the machine reschedules that pcpu itself).
    fn tickle(&self) -> CpuSet {
        CpuSet::EMPTY
    }

    /// A pcpu joins or leaves the pool at `cx.now` (`cpupool-cpu-add`,
    /// `cpupool-cpu-remove`; see [`PcpuChange`] for how local indices move). Every VCPU
    /// keeps its live state — budget, deadline, credit, pending replenishments, queue
    /// order — as Xen's do when a pcpu moves in or out of a pool's scheduler; only what
    /// the leaving pcpu's decision named stops there (the machine has stopped that pcpu
    /// and charged it up to `cx.now` first): it runs nowhere from now and waits like a
    /// VCPU its pcpu let go in `do_schedule`. A joining pcpu runs nothing until its first
    /// `do_schedule`, which the machine asks for at once.
    ///
    /// The policy renumbers everything it keeps per pcpu (what each pcpu runs, pcpus owed
    /// a reschedule, partitioned instances), but not the affinities: right after this
    /// call the machine calls [`Policy::set_affinity`] for every VCPU of the pool, in the
    /// new numbering (a VCPU free in the whole pool gains a joining pcpu that way), and
    /// until then the policy must not read them. A pool never goes below one pcpu here: a
    /// pool that loses its last pcpu holds no VCPU, and its policy stays as built for one.
    ///
    /// Returns, when the pool is left with one pcpu, whether that pcpu must reschedule now
    /// (as [`Policy::wake`] answers: the VCPU the leaving pcpu let go beats what runs);
    /// with several, the machine asks [`Policy::tickle`] once the affinities are re-sent,
    /// and the policy answers `false`. The default, for a policy that only ever runs on
    /// one pcpu (SEDF and ARINC 653 alone: on several they run inside
    /// [`partitioned::Partitioned`], which the machine puts around them when their pool
    /// grows), does nothing.
    fn change_pcpus(&mut self, _cx: &mut Cx, _change: PcpuChange) -> bool {
        false
    }

    /// For a policy whose schedule is a fixed grid in time (ARINC 653's major frames): the
    /// instant the grid starts from, once started. `None` for the others.
    fn grid_origin(&self) -> Option<Nanos> {
        None
    }

    /// Starts the grid at `origin` (before the policy's first call) instead of at its first
    /// call: a pcpu joining a partitioned pool follows the grid of the pcpus already there.
    /// The default, for a policy without a grid, does nothing.
    fn follow_grid(&mut self, _origin: Nanos) {}
}

/// A pcpu joins or leaves a pool, in the pool's local indices ([`Policy::change_pcpus`]).
/// The machine numbers a pool's pcpus `0..m` in increasing machine id, so a pcpu that
/// joins or leaves in the middle renumbers the pcpus after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PcpuChange {
    /// A pcpu joins as local index `at`; the pcpus from `at` on move up by one.
    Join(u32),
    /// The pcpu of local index `at` leaves; the pcpus after it move down by one.
    Leave(u32),
}

impl PcpuChange {
    /// The new index of the pcpu that was `old`; `None` for the one that leaves.
    pub fn renumber(self, old: u32) -> Option<u32> {
        match self {
            PcpuChange::Join(at) if old >= at => Some(old + 1),
            PcpuChange::Join(_) => Some(old),
            PcpuChange::Leave(at) => match old.cmp(&at) {
                std::cmp::Ordering::Less => Some(old),
                std::cmp::Ordering::Equal => None,
                std::cmp::Ordering::Greater => Some(old - 1),
            },
        }
    }

    /// A set of pcpus in the new numbering: the leaving pcpu is dropped, the joining one
    /// is not added.
    pub fn renumber_set(self, set: CpuSet) -> CpuSet {
        let mut out = CpuSet::EMPTY;
        for p in set.iter().filter_map(|p| self.renumber(p)) {
            out.insert(p);
        }
        out
    }

    /// Per-pcpu state in the new numbering: `joining()` goes in at the joining pcpu's
    /// index; the leaving pcpu's entry is taken out and returned.
    pub fn apply<T>(
        self,
        per_pcpu: &mut impl PcpuIndexed<T>,
        joining: impl FnOnce() -> T,
    ) -> Option<T> {
        match self {
            PcpuChange::Join(at) => {
                per_pcpu.insert_at(at as usize, joining());
                None
            }
            PcpuChange::Leave(at) => Some(per_pcpu.remove_at(at as usize)),
        }
    }
}

/// Per-pcpu state that [`PcpuChange::apply`] renumbers: a `Vec` or a
/// [`per_pcpu::PerPcpu`].
pub trait PcpuIndexed<T> {
    /// Puts `value` at local index `at`; those from `at` on move up by one.
    fn insert_at(&mut self, at: usize, value: T);
    /// Takes out local index `at`; those after it move down by one.
    fn remove_at(&mut self, at: usize) -> T;
}

impl<T> PcpuIndexed<T> for Vec<T> {
    fn insert_at(&mut self, at: usize, value: T) {
        self.insert(at, value);
    }
    fn remove_at(&mut self, at: usize) -> T {
        self.remove(at)
    }
}

/// One entry of an ARINC 653 schedule: `vcpu` may run for `runtime`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MinorFrame {
    pub vcpu: VcpuId,
    pub runtime: Nanos,
}

/// An ARINC 653 schedule table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Arinc653Table {
    pub major_frame: Nanos,
    pub minor_frames: Vec<MinorFrame>,
}

/// Credit's tunables (Xen 4.0's `CSCHED_MSECS_PER_TICK`, `CSCHED_TICKS_PER_TSLICE` and
/// `CSCHED_TICKS_PER_ACCT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CreditConfig {
    /// The per-pcpu tick that charges the running VCPU (Xen 4.0: 10 ms).
    pub tick: Nanos,
    /// The time slice in ticks (Xen 4.0: 3, so 30 ms).
    pub ticks_per_slice: u32,
    /// The accounting period in ticks (Xen 4.0: 3, so 30 ms).
    pub ticks_per_accounting: u32,
}

impl CreditConfig {
    /// The papers' "1 ms" setting: a 1 ms tick and a 1 ms time slice (accounting every
    /// 3 ticks, as in Xen).
    pub fn one_ms() -> CreditConfig {
        CreditConfig {
            tick: Nanos::from_ms(1),
            ticks_per_slice: 1,
            ticks_per_accounting: 3,
        }
    }

    /// The time slice: `tick × ticks_per_slice` (saturating).
    pub fn slice(&self) -> Nanos {
        Nanos(
            self.tick
                .as_ns()
                .saturating_mul(self.ticks_per_slice as u64),
        )
    }

    /// The accounting period: `tick × ticks_per_accounting` (saturating).
    pub fn accounting_period(&self) -> Nanos {
        Nanos(
            self.tick
                .as_ns()
                .saturating_mul(self.ticks_per_accounting as u64),
        )
    }
}

impl Default for CreditConfig {
    /// Xen 4.0's defaults: 10 ms tick, 30 ms slice, 30 ms accounting.
    fn default() -> Self {
        CreditConfig {
            tick: Nanos::from_ms(10),
            ticks_per_slice: 3,
            ticks_per_accounting: 3,
        }
    }
}

/// When RTDS calls `do_schedule` (see `rtds.rs`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RtdsMode {
    /// Xen 4.7 and later: a replenishment timer, `do_schedule` on budget exhaustion, block,
    /// preempting wake and replenishment; no periodic call.
    #[default]
    Event,
    /// Xen 4.5: rescheduled at least every quantum (a `do_schedule` at every quantum tick).
    Quantum,
}

impl RtdsMode {
    pub fn name(self) -> &'static str {
        match self {
            RtdsMode::Event => "event",
            RtdsMode::Quantum => "quantum",
        }
    }

    pub fn from_name(name: &str) -> Option<RtdsMode> {
        match name {
            "event" => Some(RtdsMode::Event),
            "quantum" => Some(RtdsMode::Quantum),
            _ => None,
        }
    }
}

/// The policy-wide settings of every policy that has them, kept whatever the policy that
/// runs, so that a hot swap, or a run of the same system under another policy, finds them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicySettings {
    pub credit: CreditConfig,
    pub rtds: RtdsMode,
    /// ARINC 653's table; a system described by servers has none.
    pub arinc653: Option<Arinc653Table>,
}

/// ARINC 653 was asked for without a schedule table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("ARINC 653 needs a schedule table (major frame and minor frames)")]
pub struct NeedsArincTable;

impl PolicySettings {
    /// The configuration of `kind` with these settings: the one place a policy's kind
    /// becomes its configuration.
    pub fn config(&self, kind: PolicyKind) -> Result<PolicyConfig, NeedsArincTable> {
        Ok(match kind {
            PolicyKind::Deferrable => PolicyConfig::Deferrable,
            PolicyKind::Periodic => PolicyConfig::Periodic,
            PolicyKind::Polling => PolicyConfig::Polling,
            PolicyKind::Sporadic => PolicyConfig::Sporadic,
            PolicyKind::Wcps => PolicyConfig::Wcps,
            PolicyKind::Crps => PolicyConfig::Crps,
            PolicyKind::Credit => PolicyConfig::Credit(self.credit),
            PolicyKind::Sedf => PolicyConfig::Sedf,
            PolicyKind::SedfIdeal => PolicyConfig::SedfIdeal,
            PolicyKind::Rtds => PolicyConfig::Rtds(self.rtds),
            PolicyKind::Arinc653 => {
                PolicyConfig::Arinc653(self.arinc653.clone().ok_or(NeedsArincTable)?)
            }
        })
    }
}

/// A policy and its policy-wide parameters: everything needed to build one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyConfig {
    Deferrable,
    Periodic,
    Polling,
    Sporadic,
    Wcps,
    Crps,
    Credit(CreditConfig),
    Sedf,
    /// SEDF as ideal EDF (`sedf-ideal`).
    SedfIdeal,
    Rtds(RtdsMode),
    Arinc653(Arinc653Table),
}

impl PolicyConfig {
    pub fn kind(&self) -> PolicyKind {
        match self {
            PolicyConfig::Deferrable => PolicyKind::Deferrable,
            PolicyConfig::Periodic => PolicyKind::Periodic,
            PolicyConfig::Polling => PolicyKind::Polling,
            PolicyConfig::Sporadic => PolicyKind::Sporadic,
            PolicyConfig::Wcps => PolicyKind::Wcps,
            PolicyConfig::Crps => PolicyKind::Crps,
            PolicyConfig::Credit(_) => PolicyKind::Credit,
            PolicyConfig::Sedf => PolicyKind::Sedf,
            PolicyConfig::SedfIdeal => PolicyKind::SedfIdeal,
            PolicyConfig::Rtds(_) => PolicyKind::Rtds,
            PolicyConfig::Arinc653(_) => PolicyKind::Arinc653,
        }
    }

    /// Builds the policy for a pool of `pcpus` pcpus: a policy that does not schedule
    /// globally runs partitioned on several, one instance per pcpu
    /// ([`partitioned::Partitioned`]).
    pub fn build(&self, pcpus: u32) -> Box<dyn Policy> {
        if pcpus > 1 && !self.kind().schedules_globally() {
            return Box::new(partitioned::Partitioned::new(self, pcpus));
        }
        match self {
            PolicyConfig::Deferrable => Box::new(deferrable::Deferrable::new(pcpus)),
            PolicyConfig::Periodic => Box::new(periodic::Periodic::new(pcpus)),
            PolicyConfig::Polling => Box::new(polling::Polling::new(pcpus)),
            PolicyConfig::Sporadic => Box::new(sporadic::Sporadic::new(pcpus)),
            PolicyConfig::Wcps => Box::new(wcps::Wcps::new(pcpus)),
            PolicyConfig::Crps => Box::new(crps::Crps::new(pcpus)),
            PolicyConfig::Credit(config) => Box::new(credit::Credit::new(pcpus, *config)),
            PolicyConfig::Sedf => Box::new(sedf::Sedf::new(pcpus)),
            PolicyConfig::SedfIdeal => Box::new(sedf_ideal::SedfIdeal::new(pcpus)),
            PolicyConfig::Rtds(mode) => Box::new(rtds::Rtds::new(pcpus, *mode)),
            PolicyConfig::Arinc653(table) => {
                Box::new(arinc653::Arinc653::new(pcpus, table.clone()))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool of pcpus 2, 5, 7 (local 0, 1, 2). Pcpu 3 joins: it is local 1, and 5 and 7
    /// move up to 2 and 3. Then pcpu 5 (local 2) leaves: 7 moves down to 2; 2 and 3 stay.
    #[test]
    fn a_pcpu_that_joins_or_leaves_in_the_middle_renumbers_those_after_it() {
        let join = PcpuChange::Join(1);
        assert_eq!(
            (0..3).map(|p| join.renumber(p)).collect::<Vec<_>>(),
            [Some(0), Some(2), Some(3)]
        );
        let set = |i: &[u32]| CpuSet::from_indices(i.iter().copied()).unwrap();
        assert_eq!(join.renumber_set(set(&[0, 2])), set(&[0, 3]));
        let mut per_pcpu = vec!['a', 'b', 'c'];
        assert_eq!(join.apply(&mut per_pcpu, || 'j'), None);
        assert_eq!(per_pcpu, ['a', 'j', 'b', 'c']);

        let leave = PcpuChange::Leave(2);
        assert_eq!(
            (0..4).map(|p| leave.renumber(p)).collect::<Vec<_>>(),
            [Some(0), Some(1), None, Some(2)]
        );
        assert_eq!(leave.renumber_set(set(&[1, 2, 3])), set(&[1, 2]));
        assert_eq!(leave.apply(&mut per_pcpu, || 'x'), Some('b'));
        assert_eq!(per_pcpu, ['a', 'j', 'c']);
    }
}
