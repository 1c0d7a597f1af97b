//! Deferrable Server: hand-derived schedules.
use crate::util::*;
use rtvmm_core::policy::PolicyConfig;

/// The scenario that separates the fixed-priority servers.
///
/// d1: budget 2, period 5, priority 1; jobs of 1 ms at 0 and of 3 ms at 3.
/// d2: budget 4, period 10, priority 2; always busy.
fn separating_case(policy: PolicyConfig) -> rtvmm_system::SystemSpec {
    system(
        policy,
        vec![
            domain(
                "d1",
                2,
                5,
                1,
                vec![jobs_at("t1", &[0], 1), jobs_at("t2", &[3], 3)],
            ),
            domain("d2", 4, 10, 2, vec![busy("b")]),
        ],
    )
}

/// Deferrable Server: d1 keeps its unused budget while idle and uses it at 3.
/// ```text
/// t(ms)  0   1   2   3   4   5   6   7   8   9  10  11  12  13  14 ... 20
/// d1     ███             ███     ███████                                    (B=2,P=5)
/// d2         ███████         ███         ███         ████████████████       (B=4,P=10)
/// idle                                       ███████                 ██████
/// ```
/// d1 runs 1 ms at 0 and blocks with 1 ms left; d2 runs; at 3 d1 wakes and preempts with
/// its kept 1 ms; at 5 d1 is replenished and finishes its job at 7; d2 spends its last 1 ms
/// by 8; nothing has budget until both are replenished at 10.
#[test]
fn deferrable_keeps_budget_of_idle_server() {
    let (schedule, sim) = run(&separating_case(PolicyConfig::Deferrable), ms(20));
    assert_schedule(
        &schedule,
        "0-1 d1, 1-3 d2, 3-4 d1, 4-5 d2, 5-7 d1, 7-8 d2, 8-10 idle, 10-14 d2, 14-20 idle",
    );
    assert_eq!(
        budget(&sim, 0),
        Some(ms(2)),
        "d1 replenished at 15 and 20, unused"
    );
    assert_eq!(budget(&sim, 1), Some(ms(4)), "d2 replenished at 20");
}
