//! The machine alone, driven with a fake policy that records what it is asked: the
//! tick grid, when `do_schedule` runs, slices, overhead and who pays for it, and the
//! time-accounting identity.
use std::sync::{Arc, Mutex};

use super::*;
use crate::model::ParamError;
use crate::policy::{BudgetCounters, Decision, Policy, Spent, TickInterval, VcpuView};

impl Machine {
    /// A machine driving `built` (the policy `policy` describes) on one pool of every pcpu;
    /// `config` is valid.
    fn with_policy(config: MachineConfig, policy: PolicyConfig, built: Box<dyn Policy>) -> Machine {
        let quantum = config.quantum;
        let mut m = Self::new(config, policy).expect("a valid configuration");
        let (tick, quantum_tick) = Self::resolve_tick(built.tick_interval(), quantum);
        let pool = &mut m.pools[0];
        pool.policy = built;
        pool.tick = tick;
        pool.quantum_tick = quantum_tick;
        for p in &mut m.pcpus {
            p.next_tick = tick;
        }
        m
    }
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
        let mut m = machine(config.clone(), policy);
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
