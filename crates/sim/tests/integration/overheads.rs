//! The machine's overhead model and time accounting, hand-derived.
use crate::util::*;
use rtvmm_core::machine::{Overheads, ReplenishMode};
use rtvmm_core::model::PcpuId;
use rtvmm_core::policy::PolicyConfig;

/// Deferrable, d1 (B 2 ms, P 5 ms) always busy; do_schedule costs 100 µs and a context
/// switch 50 µs more. Ticks every 1 ms. No budget is consumed during overhead, so d1's 2 ms
/// are spread over three stretches.
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
    };
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
