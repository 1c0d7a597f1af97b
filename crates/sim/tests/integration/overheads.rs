//! The machine's overhead model and time accounting, hand-derived.
use crate::util::*;
use rtvmm_core::machine::{OverheadCharge, Overheads, ReplenishMode};
use rtvmm_core::model::PcpuId;
use rtvmm_core::policy::PolicyConfig;
use rtvmm_core::Nanos;

/// Deferrable, d1 (B 2 ms, P 5 ms) always busy; do_schedule costs 100 µs and a context
/// switch 50 µs more. Ticks every 1 ms. With `overhead_charge = "none"` no budget is
/// consumed during overhead, so d1's 2 ms are spread over three stretches.
/// ```text
/// µs      0   150      1000 1100    2000 2100  2350 2500   3000 3100   4000 4100   5000
/// pcpu    ovh  d1      ovh   d1     ovh   d1   ovh   idle  ovh   idle  ovh   idle   (tick+repl)
/// ```
#[test]
fn overhead_is_charged_and_consumes_no_budget() {
    let mut spec = system(
        PolicyConfig::Deferrable,
        vec![domain("d1", 2, 5, 1, vec![busy("b")])],
    );
    spec.machine.overheads = Overheads {
        do_schedule: us(100),
        context_switch: us(50),
        ..Default::default()
    };
    spec.machine.overhead_charge = OverheadCharge::None;
    let (schedule, sim) = run(&spec, ms(5));
    assert_schedule(
        &schedule,
        "0-150us ovh, 150us-1 d1, 1-1100us ovh, 1100us-2 d1, 2-2100us ovh, 2100us-2350us d1, \
         2350us-2500us ovh, 2500us-3 idle, 3-3100us ovh, 3100us-4 idle, 4-4100us ovh, 4100us-5 idle",
    );
    let s = sim.machine().pcpu_stats(PcpuId(0));
    assert_eq!(s.busy, ms(2));
    assert_eq!(s.overhead, us(700));
    assert_eq!(s.idle, us(2300));
    // Calls at 0, 1, 2, 2.35, 3, 4 and 5 ms (the last one's overhead lies after the end).
    assert_eq!(s.do_schedule_calls, 7);
    // None→d1 at 0, d1→IDLE at 2.35, IDLE→d1 at 5.
    assert_eq!(s.context_switches, 3);
}

/// Overhead paid from budgets (the default, `overhead_charge = "incoming"`): a 1-quantum
/// budget with a 2 µs switch every quantum delivers quantum − 2 µs of guest work. d1 (B 1,
/// P 2, priority 1) and d2 (B 1, P 2, priority 2) are busy; a switch costs 2 µs, charged to
/// the VCPU switched to, whose budget (and slice) runs from the `do_schedule` that chose it.
/// ```text
/// µs     0  2        1000 1002     2000 2002     3000 3002     4000
/// pcpu   ovh d1       ovh  d2       ovh  d1       ovh  d2
/// ```
/// Each budget runs out exactly at the next quantum tick: 998 µs of run, 2 µs of overhead.
#[test]
fn overhead_is_paid_from_the_incoming_budget() {
    let mut spec = system(
        PolicyConfig::Deferrable,
        vec![
            domain("d1", 1, 2, 1, vec![busy("a")]),
            domain("d2", 1, 2, 2, vec![busy("b")]),
        ],
    );
    spec.machine.overheads = Overheads {
        do_schedule: Nanos::ZERO,
        context_switch: us(2),
        ..Default::default()
    };
    let (schedule, sim) = run(&spec, ms(4));
    assert_schedule(
        &schedule,
        "0-2us ovh, 2us-1 d1, 1-1002us ovh, 1002us-2 d2, 2-2002us ovh, 2002us-3 d1, \
         3-3002us ovh, 3002us-4 d2",
    );
    for (i, d) in sim.domains().iter().enumerate() {
        let stats = sim.machine().vcpu_stats(d.vcpu);
        assert_eq!(stats.run, us(2 * 998), "domain {i}: guest work");
        let budget = sim.machine().budget_counters(d.vcpu);
        assert_eq!(budget.consumed, us(2 * 998), "domain {i}");
        assert_eq!(
            budget.overhead,
            us(2 * 2),
            "domain {i}: budget paid for switches"
        );
    }
    let s = sim.machine().pcpu_stats(PcpuId(0));
    assert_eq!(s.busy + s.idle + s.overhead, ms(4));
    assert_eq!(s.overhead, us(8));
    // At 0, 1, 2, 3 and 4 ms (the last one's overhead lies after the end).
    assert_eq!(s.do_schedule_calls, 5);
}

/// Tick-timed replenishment: with P = 2.5 ms and a 1 ms quantum the replenishment due at
/// 2.5 ms takes effect at the 3 ms tick.
/// d1 (B 2, P 2.5) busy: runs 0-2, waits for its replenishment; exact mode runs it again
/// at 2.5, tick mode at 3. The boundary grid stays at 2.5·k: the next is 5.0, where the
/// budget that ran out at 5 is refilled at once.
/// ```text
/// ms      0     1     2   2.5   3     4    4.5   5     6
/// exact   ███████████     ██████████████████     ██████
/// tick    ███████████           ███████████████████████
/// ```
#[test]
fn tick_mode_delays_replenishment_to_the_next_tick() {
    let mut spec = system(
        PolicyConfig::Deferrable,
        vec![domain("d1", 2, 5, 1, vec![busy("b")])],
    );
    spec.domains[0].vcpu.period = us(2500);
    let (exact, _) = run(&spec, ms(6));
    assert_schedule(
        &exact,
        "0-2 d1, 2-2500us idle, 2500us-4500us d1, 4500us-5 idle, 5-6 d1",
    );
    spec.machine.replenishment = ReplenishMode::Tick;
    let (tick, _) = run(&spec, ms(6));
    assert_schedule(&tick, "0-2 d1, 2-3 idle, 3-6 d1");
}
