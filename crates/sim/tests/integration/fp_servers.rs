//! The fixed-priority servers other than the Deferrable Server — Periodic (PTPS), Polling,
//! Sporadic, WCPS, CRPS — on hand-derived schedules, plus property tests of the Sporadic
//! Server's window bounds.
//!
//! Timelines in the comments: one column per ms unless marked; `█` = running, `░` = the
//! pcpu idles while that VCPU's budget is consumed (idled away or lent), `x` = budget
//! discarded.
use crate::util::*;
use proptest::prelude::*;
use rtvmm_core::event::CoreEvent;
use rtvmm_core::machine::{Overheads, ReplenishMode};
use rtvmm_core::model::{VcpuId, VcpuParams};
use rtvmm_core::policy::{BudgetCounters, PolicyConfig};
use rtvmm_core::Nanos;
use rtvmm_sim::Simulation;
use rtvmm_system::records::TraceEvent;
use rtvmm_system::timeline::{timeline, Interval, Slot};
use rtvmm_system::{Change, DomainSpec, SystemSpec, TimedChange};

/// The scenario that separates the fixed-priority servers (as in `deferrable.rs`).
///
/// d1: budget 2, period 5, priority 1; jobs of 1 ms at 0 and of 3 ms at 3.
/// d2: budget 4, period 10, priority 2; always busy.
fn separating_case(policy: PolicyConfig) -> SystemSpec {
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

/// Runs `spec`, stopping at each instant of `at` (ascending) to read every domain's
/// remaining budget, then on to `end`. Returns the schedule over `[0, end)`, the budgets
/// read and the finished simulation.
fn run_reading_budgets(
    spec: &SystemSpec,
    at: &[Nanos],
    end: Nanos,
) -> (Vec<Interval>, Vec<Vec<Nanos>>, Simulation) {
    let mut sim = Simulation::new(spec, 1, true).expect("valid system");
    sim.set_check_invariants(true);
    let mut budgets = Vec::new();
    for &t in at {
        sim.run_until(t).expect("run");
        budgets.push(
            (0..spec.domains.len())
                .map(|i| budget(&sim, i).expect("servers have budgets"))
                .collect(),
        );
    }
    sim.run_until(end).expect("run");
    let names: Vec<String> = spec.domains.iter().map(|d| d.name.clone()).collect();
    let trace = sim.take_trace();
    (timeline(&trace, &names, end), budgets, sim)
}

fn counters(sim: &Simulation, index: usize) -> BudgetCounters {
    let v = sim.domains()[index].vcpu;
    sim.machine().policy().counters(v)
}

fn ms_us(us_: u64) -> Nanos {
    us(us_)
}

// ---------------------------------------------------------------------------------------
// The separating case under each policy.
// ---------------------------------------------------------------------------------------

/// PTPS: d1 idles its unused budget away; d2 waits meanwhile.
/// ```text
/// t(ms)  0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15  16  17  18  19  20
/// d1     ███░░░              ████████                ███░░░              ░░░░░░░░           (B2,P5)
/// d2             ████████████        ███                     ████████████        ███        (B4,P10)
/// ```
/// At 1 d1's first job is done with 1 ms left: H = d1 has no work, so the pcpu idles 1 ms
/// on d1's budget. d1's 3 ms job (at 3) finds no budget until 5, runs 5-7 and its last
/// 1 ms at 10. At 15 d1 is H again without work and idles its whole 2 ms away.
#[test]
fn ptps_idles_the_idle_servers_budget_away() {
    let (schedule, budgets, sim) = run_reading_budgets(
        &separating_case(PolicyConfig::Periodic),
        &[us(1500), ms(16)],
        ms(20),
    );
    assert_schedule(
        &schedule,
        "0-1 d1, 1-2 idle, 2-5 d2, 5-7 d1, 7-8 d2, 8-10 idle, 10-11 d1, 11-12 idle, \
         12-15 d2, 15-17 idle, 17-18 d2, 18-20 idle",
    );
    assert_eq!(
        budgets[0],
        vec![us(500), ms(4)],
        "at 1.5: d1 idling, d2 untouched"
    );
    assert_eq!(budgets[1], vec![ms(1), ms(1)], "at 16: d1 idling since 15");
    let d1 = counters(&sim, 0);
    assert_eq!((d1.consumed, d1.idled), (ms(4), ms(4)));
    assert_eq!(d1.discarded + d1.lent, Nanos::ZERO);
}

/// Polling: d1's unused budget is discarded when it blocks (and at 15, when it polls
/// with no work); its 3 ms job at 3 waits for the boundary at 5.
/// ```text
/// t(ms)  0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15  16  17  18  19  20
/// d1     ███x            ████████                ███x                x                      (B2,P5)
/// d2         ████████████                            ████████████████                       (B4,P10)
/// ```
#[test]
fn polling_discards_the_idle_servers_budget() {
    let (schedule, budgets, sim) = run_reading_budgets(
        &separating_case(PolicyConfig::Polling),
        &[us(1500), ms(16)],
        ms(20),
    );
    assert_schedule(
        &schedule,
        "0-1 d1, 1-5 d2, 5-7 d1, 7-10 idle, 10-11 d1, 11-15 d2, 15-20 idle",
    );
    assert_eq!(
        budgets[0],
        vec![ms(0), us(3500)],
        "at 1.5: d1 discarded at 1"
    );
    assert_eq!(budgets[1], vec![ms(0), ms(0)], "at 16: d1 discarded at 15");
    let d1 = counters(&sim, 0);
    assert_eq!((d1.consumed, d1.discarded), (ms(4), ms(4)));
    assert_eq!(d1.idled + d1.lent, Nanos::ZERO);
}

/// WCPS: while d1 has no work, d2 runs on both budgets. Same pcpu schedule as Polling
/// here; the budgets tell them apart (d1 still holds budget at 1.5 and 16).
/// ```text
/// t(ms)  0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15  16  17  18  19  20
/// d1     ███▒▒▒          ████████                ███▒▒▒              ░░░░░░░░           (B2,P5)
/// d2         ████████████                            ████████████████                   (B4,P10)
/// ```
/// `▒`: d1's budget consumed together with d2's while d2 runs (1-2, 11-12). At 15 d1 has
/// no work and nobody below it has budget: IDLE, d1's budget idled away.
#[test]
fn wcps_runs_lower_work_on_both_budgets() {
    let (schedule, budgets, sim) = run_reading_budgets(
        &separating_case(PolicyConfig::Wcps),
        &[us(1500), ms(16)],
        ms(20),
    );
    assert_schedule(
        &schedule,
        "0-1 d1, 1-5 d2, 5-7 d1, 7-10 idle, 10-11 d1, 11-15 d2, 15-20 idle",
    );
    assert_eq!(budgets[0], vec![us(500), us(3500)], "at 1.5: both consumed");
    assert_eq!(budgets[1], vec![ms(1), ms(0)], "at 16: d1 idling since 15");
    let d1 = counters(&sim, 0);
    assert_eq!((d1.consumed, d1.idled), (ms(6), ms(2)));
    assert_eq!(counters(&sim, 1).consumed, ms(8));
    assert_eq!(d1.lent + d1.discarded, Nanos::ZERO);
}

/// CRPS: d1's idle budget is lent to d2, whose own budget is untouched meanwhile.
/// ```text
/// t(ms)  0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15  16  17  18  19  20
/// d1     ███░░░          ████████                ███░░░              ░░░░░░░░           (B2,P5)
/// d2         ████████████        ███                 ████████████████████████████       (B4,P10)
/// ```
/// `░` under d1: d1's budget lent to d2 (1-2, 11-12, 15-17). d2 thus runs 11-18 straight:
/// 1 ms on d1's budget, 3 on its own, 2 on d1's again, its last 1 ms of its own.
#[test]
fn crps_lends_only_the_idle_servers_budget() {
    let (schedule, budgets, sim) = run_reading_budgets(
        &separating_case(PolicyConfig::Crps),
        &[us(1500), ms(16)],
        ms(20),
    );
    assert_schedule(
        &schedule,
        "0-1 d1, 1-5 d2, 5-7 d1, 7-8 d2, 8-10 idle, 10-11 d1, 11-18 d2, 18-20 idle",
    );
    assert_eq!(
        budgets[0],
        vec![us(500), ms(4)],
        "at 1.5: only d1's budget runs"
    );
    assert_eq!(
        budgets[1],
        vec![ms(1), ms(1)],
        "at 16: d2 runs on d1's budget"
    );
    let (d1, d2) = (counters(&sim, 0), counters(&sim, 1));
    assert_eq!((d1.consumed, d1.lent, d1.idled), (ms(4), ms(4), ms(0)));
    assert_eq!((d2.consumed, d2.borrowed), (ms(8), ms(4)));
}

/// Sporadic: every chunk is paid back one period after its activation — the instant the
/// VCPU came to have work and budget — however often it was preempted in between.
/// ```text
/// t(ms)  0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15  16  17  18  19  20  21  22
/// d1     ███         ███     ███         ███                                                        (B2,P5)
/// d2         ███████     ███     ███             ███████████████                         ███████    (B4,P10)
/// ```
/// d1: activated at 0 → [0,1), +1 at 5; at 3 (wake) → [3,4), +1 at 8; at 5 (replenished
/// with work) → [5,6), +1 at 10; at 8 → [8,9), +1 at 13. Its 3 ms job runs 3-4 (the 1 ms
/// kept from 0), 5-6, 8-9.
/// d2: activated at 0 and active until its budget is gone at 7 — d1's preemptions at 3
/// and 5 do not end its chunk — so [1,3) + [4,5) + [6,7) = 4 ms come back together at
/// 0 + 10 = 10; activated again at 10 → [10,14), +4 at 20.
#[test]
fn sporadic_pays_each_chunk_back_one_period_after_its_activation() {
    let (schedule, budgets, _sim) = run_reading_budgets(
        &separating_case(PolicyConfig::Sporadic),
        &[ms(12), ms(19)],
        ms(22),
    );
    assert_schedule(
        &schedule,
        "0-1 d1, 1-3 d2, 3-4 d1, 4-5 d2, 5-6 d1, 6-7 d2, 7-8 idle, 8-9 d1, 9-10 idle, \
         10-14 d2, 14-20 idle, 20-22 d2",
    );
    assert_eq!(
        budgets[0],
        vec![ms(1), ms(2)],
        "at 12: d1 +1 at 10; d2 halfway through its 4 ms"
    );
    assert_eq!(
        budgets[1],
        vec![ms(2), ms(0)],
        "at 19: d1 +1 at 13; d2's 4 ms come back at 20"
    );
}

// ---------------------------------------------------------------------------------------
// Sporadic Server specifics.
// ---------------------------------------------------------------------------------------

/// lo (B4, P10, prio 2) is busy; hi (B2, P5, prio 1) has a 1 ms job at 1 that preempts lo
/// in the middle of its chunk. lo stays active while preempted, so its chunk runs on from
/// its activation at 0 until its budget is gone at 5, and all 4 ms come back at 10 in one
/// payback (the stretch-based rule would have queued two: 1 ms at 10, 3 ms at 12).
/// ```text
/// t(ms)  0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15  16
/// hi         ███
/// lo     ███     ███████████                     ███████████████
///        └ activated at 0: [0,1) + [2,5) → +4 at 10      └ activated at 10 → +4 at 20
/// ```
#[test]
fn sporadic_preemption_does_not_split_the_payback() {
    let spec = system(
        PolicyConfig::Sporadic,
        vec![
            domain("hi", 2, 5, 1, vec![jobs_at("j", &[1], 1)]),
            domain("lo", 4, 10, 2, vec![busy("b")]),
        ],
    );
    let (schedule, budgets, _sim) =
        run_reading_budgets(&spec, &[ms(9), us(10_500), us(11_500), us(12_500)], ms(16));
    assert_schedule(
        &schedule,
        "0-1 lo, 1-2 hi, 2-5 lo, 5-10 idle, 10-14 lo, 14-16 idle",
    );
    let lo: Vec<Nanos> = budgets.iter().map(|b| b[1]).collect();
    assert_eq!(
        lo,
        vec![ms(0), us(3500), us(2500), us(1500)],
        "lo at 9, 10.5, 11.5, 12.5: all 4 ms back at 10"
    );
    assert_eq!(budgets[0][0], ms(2), "hi got its 1 ms back at 6");
}

/// The reduced case of `sporadic_server_replenishes_from_activation` (scenario soundness
/// tests): h (B1, P5, prio 1) and s (B1, P9, prio 2) are always busy. Every replenishment of
/// s finds it with work, so it is activated there even when h runs: it gets 1 ms in every
/// 9 ms window [9k, 9k + 9), exactly as under the Periodic and Deferrable servers.
/// ```text
/// t(ms)  0         1         2         3         4         5
///        01234567890123456789012345678901234567890123456789012345
/// h      █    █    █    █    █    █    █    █    █    █    █    █
/// s       █       █        █        █        █         █       █
/// ```
/// s: activated at 0, preempted by h, runs [1,2) → +1 at 9; at 9 → [9,10) → +1 at 18;
/// ... at 45 h runs first, s runs [46,47) but was activated at 45 → +1 at 54, not 55.
/// (Paid back from the start of each run instead, s would get 1 ms every 10 ms: [1,2),
/// [11,12), [21,22), ...)
#[test]
fn sporadic_busy_server_preempted_at_each_activation_gets_its_budget_every_period() {
    let expected = "0-1 h, 1-2 s, 2-5 idle, 5-6 h, 6-9 idle, 9-10 s, 10-11 h, 11-15 idle, \
                    15-16 h, 16-18 idle, 18-19 s, 19-20 idle, 20-21 h, 21-25 idle, 25-26 h, \
                    26-27 idle, 27-28 s, 28-30 idle, 30-31 h, 31-35 idle, 35-36 h, 36-37 s, \
                    37-40 idle, 40-41 h, 41-45 idle, 45-46 h, 46-47 s, 47-50 idle, 50-51 h, \
                    51-54 idle, 54-55 s, 55-56 h";
    for policy in [
        PolicyConfig::Sporadic,
        PolicyConfig::Periodic,
        PolicyConfig::Deferrable,
    ] {
        let spec = system(
            policy.clone(),
            vec![
                domain("h", 1, 5, 1, vec![busy("b")]),
                domain("s", 1, 9, 2, vec![busy("b")]),
            ],
        );
        let (schedule, budgets, _) =
            run_reading_budgets(&spec, &[us(45_500), us(53_500), us(54_500)], ms(56));
        assert_schedule(&schedule, expected);
        let s: Vec<Nanos> = budgets.iter().map(|b| b[1]).collect();
        assert_eq!(
            s,
            vec![ms(1), ms(0), us(500)],
            "{policy:?}: s at 45.5 (waiting with its budget), 53.5, 54.5"
        );
    }
}

/// lo (B4, P20) gets 1 ms jobs at 0, 2 and 4 and an 8 ms job at 6. It blocks after each
/// short job, which ends its chunk: four chunks, activated at 0, 2, 4 and 6, of 1 ms each
/// (the last ends when the budget is gone at 7). With `max_replenishments` = 2 the third
/// and fourth paybacks merge into the second, which moves to 24 and then 26; with the
/// default 8 they stay apart.
/// ```text
/// t(ms)  0   1   2   3   4   5   6   7 ... 20  21  22  23  24  25  26  27  28  29  30
/// lo     ███     ███     ███     ███       ███                     ███████████         max 2
/// lo     ███     ███     ███     ███       ███     ███     ███     ███                 max 8
/// ```
/// max 2: pending (20,1),(22,1) → (20,1),(24,2) → (20,1),(26,3).
#[test]
fn sporadic_merges_the_replenishment_one_beyond_the_limit_into_the_latest() {
    let spec = |max: u32| {
        let mut lo = domain(
            "lo",
            4,
            20,
            1,
            vec![jobs_at("short", &[0, 2, 4], 1), jobs_at("long", &[6], 8)],
        );
        lo.vcpu.max_replenishments = max;
        system(PolicyConfig::Sporadic, vec![lo])
    };
    let first_chunks = "0-1 lo, 1-2 idle, 2-3 lo, 3-4 idle, 4-5 lo, 5-6 idle, 6-7 lo, 7-20 idle";
    let (merged, budgets, _) = run_reading_budgets(&spec(2), &[us(25_500)], ms(30));
    assert_schedule(
        &merged,
        &format!("{first_chunks}, 20-21 lo, 21-26 idle, 26-29 lo, 29-30 idle"),
    );
    assert_eq!(
        budgets[0][0],
        ms(0),
        "at 25.5 the merged 3 ms are not back yet"
    );
    let (apart, budgets, _) = run_reading_budgets(&spec(8), &[us(25_500)], ms(30));
    assert_schedule(
        &apart,
        &format!(
            "{first_chunks}, 20-21 lo, 21-22 idle, 22-23 lo, 23-24 idle, 24-25 lo, \
             25-26 idle, 26-27 lo, 27-30 idle"
        ),
    );
    assert_eq!(budgets[0][0], ms(0));
}

// ---------------------------------------------------------------------------------------
// Behaviour every server policy shows, one scenario run under each.
// ---------------------------------------------------------------------------------------

// ---------------------------------------------------------------------------------------
// Equal priorities: first-in, first-out
// ---------------------------------------------------------------------------------------

const FP_SERVERS: [PolicyConfig; 6] = [
    PolicyConfig::Deferrable,
    PolicyConfig::Periodic,
    PolicyConfig::Polling,
    PolicyConfig::Sporadic,
    PolicyConfig::Wcps,
    PolicyConfig::Crps,
];

/// Two busy VCPUs of equal priority (B 5, P 10, priority 1 both) take turns quantum by
/// quantum under every fixed-priority server: at each tick's `do_schedule` the one that
/// ran is put back behind the other.
/// ```text
/// ms   0  1  2  3  4  5  6  7  8  9  10 ...
/// d1   █     █     █     █     █     █
/// d2      █     █     █     █     █     █
/// ```
/// At 10 both are replenished (the Sporadic Server's paybacks fall due, one period after
/// both became active at 0); d2, running, is put back behind d1 at the tick, so the
/// alternation goes on unchanged.
#[test]
fn equal_priorities_take_turns_each_quantum() {
    for policy in FP_SERVERS {
        let spec = system(
            policy.clone(),
            vec![
                domain("d1", 5, 10, 1, vec![busy("a")]),
                domain("d2", 5, 10, 1, vec![busy("b")]),
            ],
        );
        let (schedule, _) = run(&spec, ms(20));
        let expected: Vec<String> = (0..20)
            .map(|t| format!("{t}-{} d{}", t + 1, 1 + t % 2))
            .collect();
        assert_schedule(&schedule, &expected.join(", "));
    }
}

/// An idle VCPU of equal priority: d1 (B 10, P 10, priority 1) busy, d2 (B 10, P 10,
/// priority 1) never has work. d1 wakes at 0 and goes behind d2.
/// - PTPS: H alternates — d2 ahead, no work: the pcpu idles on d2's budget; at the next
///   tick d2 is put back behind d1, which runs; and so on. d1 gets half the pcpu.
/// - WCPS: d2 ahead without work lets d1 (behind it, so "lower priority") run on both
///   budgets. At each tick both are put back, the budget owner d2 first and the runner d1
///   last, so d2 stays ahead: d1 never stops, and d2's whole budget is consumed.
/// - CRPS: likewise d2 lends its whole budget to d1; d1 never stops.
/// - Deferrable, Polling, Sporadic pick the VCPU with work: d1 never stops.
/// ```text
/// ms     0  1  2  3  4 ...
/// PTPS   ░  █  ░  █  ░  █ ...   (░: idle on d2's budget)
/// WCPS   █  █  █  █  █  █ ...
/// ```
#[test]
fn idle_equal_priority_vcpu_halves_progress_only_under_ptps() {
    for policy in FP_SERVERS {
        let spec = system(
            policy.clone(),
            vec![
                domain("d1", 10, 10, 1, vec![busy("a")]),
                domain("d2", 10, 10, 1, Vec::new()),
            ],
        );
        let (schedule, sim) = run(&spec, ms(20));
        let progress = sim.machine().vcpu_stats(sim.domains()[0].vcpu).run;
        if policy == PolicyConfig::Periodic {
            let expected: Vec<String> = (0..20)
                .map(|t| format!("{t}-{} {}", t + 1, if t % 2 == 0 { "idle" } else { "d1" }))
                .collect();
            assert_schedule(&schedule, &expected.join(", "));
            assert_eq!(progress, ms(10), "halved");
            assert_eq!(counters(&sim, 1).idled, ms(10), "d2's budget idled away");
        } else {
            assert_schedule(&schedule, "0-20 d1");
            assert_eq!(progress, ms(20), "{policy:?}");
        }
        if policy == PolicyConfig::Wcps {
            assert_eq!(
                counters(&sim, 1).consumed,
                ms(20),
                "d2's budget paid for d1's run"
            );
        }
        if policy == PolicyConfig::Crps {
            assert_eq!(counters(&sim, 1).lent, ms(20), "d2 lent its whole budget");
            assert_eq!(
                counters(&sim, 0).consumed,
                Nanos::ZERO,
                "d1's own budget untouched"
            );
        }
    }
}

/// hi (B2, P5, prio 1) gets a 1 ms job at 1.5 ms, between two ticks; lo (B4, P10, prio 2)
/// is busy. Where the rule lets hi run at once, its wake preempts mid-slice (at 1.5, not at
/// the tick at 2).
/// ```text
/// t(ms)        0   1   2   3   4   5   6   7   8   9  10  11  12
/// ptps    hi   ░░░░░░██              ██░░░░                  ░░░░░░░░
///         lo             ████████████      ███
/// wcps    hi   ▒▒▒▒▒▒██              ██░░░░                  ▒▒▒▒▒▒▒▒
///         lo   ██████  ██████████                            ████████
/// crps    hi   ░░░░░░██              ██░░░░                  ░░░░░░░░
///         lo   ██████  ████████████    ██████████            ████████
/// polling hi   x                     ████x                   x
///         lo   ████████████████                              ████████
/// sporadic hi        ████
///         lo   ██████    ██████████                    ████████
/// ```
/// - PTPS: hi idles its budget away until it wakes at 1.5; its last 0.5 ms runs at 5.
/// - WCPS: lo runs on both budgets; hi's wake preempts it at 1.5.
/// - CRPS: lo runs on hi's budget only; hi's wake preempts it at 1.5; lo, with its own
///   budget intact, runs 2-5 and again on hi's lent budget 5.5-7.
/// - Polling: hi discarded its budget at 0 (no work), so its wake at 1.5 waits for 5.
/// - Sporadic: hi preempts lo at 1.5 with its full budget; lo, active since 0, keeps its
///   chunk open while preempted: [0,1.5) + [2.5,5) come back together at 10.
#[test]
fn wake_of_a_higher_priority_vcpu_between_ticks() {
    let spec = |policy| {
        system(
            policy,
            vec![
                domain("hi", 2, 5, 1, vec![jobs_at_us("j", &[1500], 1000)]),
                domain("lo", 4, 10, 2, vec![busy("b")]),
            ],
        )
    };
    let cases = [
        (
            PolicyConfig::Periodic,
            "0-1500us idle, 1500us-2 hi, 2-5 lo, 5-5500us hi, 5500us-7 idle, 7-8 lo, 8-12 idle",
        ),
        (
            PolicyConfig::Wcps,
            "0-1500us lo, 1500us-2 hi, 2-4500us lo, 4500us-5 idle, 5-5500us hi, \
             5500us-10 idle, 10-12 lo",
        ),
        (
            PolicyConfig::Crps,
            "0-1500us lo, 1500us-2 hi, 2-5 lo, 5-5500us hi, 5500us-8 lo, 8-10 idle, 10-12 lo",
        ),
        (
            PolicyConfig::Polling,
            "0-4 lo, 4-5 idle, 5-6 hi, 6-10 idle, 10-12 lo",
        ),
        (
            PolicyConfig::Sporadic,
            "0-1500us lo, 1500us-2500us hi, 2500us-5 lo, 5-10 idle, 10-12 lo",
        ),
    ];
    for (policy, expected) in cases {
        let (schedule, _) = run(&spec(policy.clone()), ms(12));
        assert_schedule(&schedule, expected);
    }
}

/// hi (B2, P5, prio 1) runs a periodic task (p 5, e 1); lo (B3, P10, prio 2) runs a task
/// that needs 9 ms every 10 ms — far beyond its budget. Under every server policy each of
/// hi's jobs starts at its release and finishes 1 ms later, exactly as when lo's task
/// needs only 2 ms: an overrun is contained in its own domain.
#[test]
fn overrun_in_a_lower_priority_domain_does_not_touch_a_higher_one() {
    let spec = |policy: PolicyConfig, lo_wcet: u64| {
        system(
            policy,
            vec![
                domain("hi", 2, 5, 1, vec![periodic("t", 5, 1)]),
                domain("lo", 3, 10, 2, vec![periodic("t", 10, lo_wcet)]),
            ],
        )
    };
    for policy in [
        PolicyConfig::Periodic,
        PolicyConfig::Polling,
        PolicyConfig::Sporadic,
        PolicyConfig::Wcps,
        PolicyConfig::Crps,
    ] {
        let (_, overrun) = run(&spec(policy.clone(), 9), ms(50));
        let (_, normal) = run(&spec(policy.clone(), 2), ms(50));
        let hi_jobs = &overrun.domains()[0].finished[0];
        assert_eq!(hi_jobs.len(), 10, "{policy:?}: hi finished all its jobs");
        for job in hi_jobs {
            assert_eq!(job.first_start, Some(job.release), "{policy:?}: {job:?}");
            assert_eq!(job.finish, Some(job.release + ms(1)), "{policy:?}: {job:?}");
        }
        assert_eq!(hi_jobs, &normal.domains()[0].finished[0], "{policy:?}");
        let lo_first = &overrun.domains()[1].finished[0][0];
        assert!(
            lo_first.finish.unwrap() > lo_first.deadline,
            "{policy:?}: the scenario makes lo overrun"
        );
    }
}

/// d (B 1 ms, P 2.5 ms) is busy; the quantum is 1 ms. In `tick` mode a replenishment takes
/// effect at the first tick at or after its due time.
/// ```text
/// t(ms)             0   1   2   3   4   5   6   7   8   9  10  11  12
/// periodic, exact   ████      ████      ████      ████      ████          (2.5, 5, 7.5, 10)
/// periodic, tick    ████        ████    ████        ████    ████          (3, 5, 8, 10)
/// sporadic, tick    ████        ████        ████        ████              (3, 6, 9)
/// ```
/// The periodic servers keep their grid (2.5 is served at 3, the next boundary is still
/// 5); the Sporadic Server's payback is one period after its activation, and a busy VCPU
/// out of budget is activated when the budget actually comes back — at the tick — so the
/// delay carries over (3 + 2.5 = 5.5 → 6, 6 + 2.5 = 8.5 → 9).
#[test]
fn tick_mode_replenishment_lands_on_the_next_tick() {
    let spec = |policy: PolicyConfig, mode: ReplenishMode| {
        let mut d = domain("d", 1, 5, 1, vec![busy("b")]);
        d.vcpu.period = us(2500);
        let mut s = system(policy, vec![d]);
        s.machine.replenishment = mode;
        s
    };
    let (exact, _) = run(&spec(PolicyConfig::Periodic, ReplenishMode::Exact), ms(12));
    assert_schedule(
        &exact,
        "0-1 d, 1-2500us idle, 2500us-3500us d, 3500us-5 idle, 5-6 d, 6-7500us idle, \
         7500us-8500us d, 8500us-10 idle, 10-11 d, 11-12 idle",
    );
    for policy in [
        PolicyConfig::Periodic,
        PolicyConfig::Polling,
        PolicyConfig::Wcps,
        PolicyConfig::Crps,
    ] {
        let (ticked, _) = run(&spec(policy, ReplenishMode::Tick), ms(12));
        assert_schedule(
            &ticked,
            "0-1 d, 1-3 idle, 3-4 d, 4-5 idle, 5-6 d, 6-8 idle, 8-9 d, 9-10 idle, 10-11 d, \
             11-12 idle",
        );
    }
    let (sporadic, _) = run(&spec(PolicyConfig::Sporadic, ReplenishMode::Tick), ms(12));
    assert_schedule(
        &sporadic,
        "0-1 d, 1-3 idle, 3-4 d, 4-6 idle, 6-7 d, 7-9 idle, 9-10 d, 10-12 idle",
    );
}

/// d1 (B2, P5) is busy. At 1 its budget is raised to 3: not granted early, it gets 3 ms
/// from the next replenishment at 5. At 11, while running with 2 ms left, its budget is cut
/// to 1: the remaining budget drops to 1 at once (it stops at 12, not 13) and from 15 on
/// it gets 1 ms per period.
/// ```text
/// t(ms)  0   1   2   3   4   5   6   7   8   9  10  11  12  13  14  15  16 ... 20  21  22
/// d1     ████████            ████████████        ████████            ███       ███
///            ↑ B=3                                   ↑ B=1
/// ```
/// The same under every server policy: for the Sporadic Server the next replenishment is
/// the payback of the chunk activated at 0 ([0,2)) at 5, and of the one activated at 10
/// ([10,12)) at 15.
#[test]
fn adjust_takes_effect_at_the_next_replenishment() {
    let spec = |policy| {
        let mut s = system(policy, vec![domain("d1", 2, 5, 1, vec![busy("b")])]);
        let set = |at: u64, budget: u64| TimedChange {
            at: ms(at),
            change: Change::SetParams {
                domain: "d1".to_string(),
                params: VcpuParams::server(ms(budget), ms(5), 1),
            },
        };
        s.changes = vec![set(1, 3), set(11, 1)];
        s
    };
    for policy in [
        PolicyConfig::Periodic,
        PolicyConfig::Polling,
        PolicyConfig::Sporadic,
        PolicyConfig::Wcps,
        PolicyConfig::Crps,
    ] {
        let (schedule, budgets, _) =
            run_reading_budgets(&spec(policy.clone()), &[us(1500), us(11_500)], ms(22));
        assert_schedule(
            &schedule,
            "0-2 d1, 2-5 idle, 5-8 d1, 8-10 idle, 10-12 d1, 12-15 idle, 15-16 d1, \
             16-20 idle, 20-21 d1, 21-22 idle",
        );
        assert_eq!(
            budgets,
            vec![vec![us(500)], vec![us(500)]],
            "{policy:?}: at 1.5 not raised; at 11.5 cut to 1 at 11"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Properties over random small systems.
// ---------------------------------------------------------------------------------------

/// Each VCPU's run intervals, rebuilt from the trace: `(start, end)` per domain.
fn runs_per_domain(spec: &SystemSpec, end: Nanos) -> (Vec<Vec<(Nanos, Nanos)>>, Simulation) {
    let names: Vec<String> = (0..spec.domains.len()).map(|i| format!("v{i}")).collect();
    let mut sim = Simulation::new(spec, 7, true).expect("valid system");
    sim.set_check_invariants(true);
    sim.run_until(end).expect("run");
    let trace = sim.take_trace();
    let mut runs = vec![Vec::new(); names.len()];
    for i in timeline(&trace, &names, end) {
        if let Slot::Domain(name) = &i.slot {
            let index: usize = name[1..].parse().unwrap();
            runs[index].push((i.start, i.end));
        }
    }
    (runs, sim)
}

/// One VCPU's run intervals `(start, end)`.
type RunIntervals = Vec<(Nanos, Nanos)>;

/// Each VCPU's run intervals `(start, end)` and its activations — the instants it came to
/// have both work and budget > 0 — per domain, rebuilt from the trace: wake and block
/// events for the work, replenish and budget-exhausted events for the budget (a VCPU
/// starts with its budget, or with none until its offset).
fn runs_and_activations(spec: &SystemSpec, end: Nanos) -> (Vec<RunIntervals>, Vec<Vec<Nanos>>) {
    let names: Vec<String> = (0..spec.domains.len()).map(|i| format!("v{i}")).collect();
    let mut sim = Simulation::new(spec, 7, true).expect("valid system");
    sim.set_check_invariants(true);
    sim.run_until(end).expect("run");
    let trace = sim.take_trace();
    let vcpus: Vec<VcpuId> = sim.domains().iter().map(|d| d.vcpu).collect();
    let mut has_work = vec![false; vcpus.len()];
    let mut has_budget: Vec<bool> = spec
        .domains
        .iter()
        .map(|d| d.vcpu.offset.is_zero())
        .collect();
    let mut activations = vec![Vec::new(); vcpus.len()];
    for (at, event) in &trace {
        let TraceEvent::Core(event) = event else {
            continue;
        };
        let (vcpu, work, budget) = match *event {
            CoreEvent::Wake { vcpu } => (vcpu, Some(true), None),
            CoreEvent::Block { vcpu } => (vcpu, Some(false), None),
            CoreEvent::Replenish { vcpu, budget } => (vcpu, None, Some(!budget.is_zero())),
            CoreEvent::BudgetExhausted { vcpu } => (vcpu, None, Some(false)),
            _ => continue,
        };
        let i = vcpus
            .iter()
            .position(|&v| v == vcpu)
            .expect("a domain's vcpu");
        let was_active = has_work[i] && has_budget[i];
        has_work[i] = work.unwrap_or(has_work[i]);
        has_budget[i] = budget.unwrap_or(has_budget[i]);
        if !was_active && has_work[i] && has_budget[i] {
            activations[i].push(*at);
        }
    }
    let mut runs = vec![Vec::new(); names.len()];
    for interval in timeline(&trace, &names, end) {
        if let Slot::Domain(name) = &interval.slot {
            let index: usize = name[1..].parse().unwrap();
            runs[index].push((interval.start, interval.end));
        }
    }
    (runs, activations)
}

/// Execution within `[from, from + length)`.
fn executed_within(runs: &[(Nanos, Nanos)], from: Nanos, length: Nanos) -> Nanos {
    let to = from + length;
    runs.iter()
        .filter(|&&(a, b)| b > from && a < to)
        .map(|&(a, b)| b.min(to) - a.max(from))
        .fold(Nanos::ZERO, |t, x| t + x)
}

/// A random small system: 1-3 server domains (budget ≤ period, both in 0.5 ms steps),
/// each with a few aperiodic jobs and maybe a periodic task; random overheads and
/// replenishment mode.
fn arb_system(policies: Vec<PolicyConfig>) -> impl Strategy<Value = SystemSpec> {
    let arb_domain = (1u64..=6, 1u64..=8, 0u32..4, 1u32..=4, 0u64..=2)
        .prop_flat_map(|(budget, extra, priority, max_repl, offset)| {
            (
                Just((budget, budget + extra, priority, max_repl, offset)),
                prop::collection::vec((0u64..80, 1u64..=8), 0..6),
                prop::option::of((4u64..=24, 1u64..=6)),
            )
        })
        .prop_map(
            |((budget, period, priority, max_repl, offset), jobs, task)| {
                let half = |x: u64| us(500 * x);
                let mut vcpu = VcpuParams::server(half(budget), half(period), priority);
                vcpu.max_replenishments = max_repl;
                vcpu.offset = half(offset);
                let mut tasks = Vec::new();
                for (k, (at, wcet)) in jobs.into_iter().enumerate() {
                    tasks.push(jobs_at_us(&format!("a{k}"), &[500 * at], 500 * wcet));
                }
                if let Some((p, e)) = task {
                    tasks.push(periodic("p", p, e.min(p)));
                }
                DomainSpec {
                    name: String::new(),
                    vcpu,
                    guest: rtvmm_core::guest::GuestScheduler::Rm,
                    tasks,
                    placement: Default::default(),
                }
            },
        );
    (
        prop::collection::vec(arb_domain, 1..=3),
        prop::sample::select(policies),
        any::<bool>(),
        prop::sample::select(vec![0u64, 30, 100]),
        prop::sample::select(vec![0u64, 20]),
    )
        .prop_map(|(mut domains, policy, ticked, ds_cost, cs_cost)| {
            for (i, d) in domains.iter_mut().enumerate() {
                d.name = format!("v{i}");
            }
            let mut s = system(policy, domains);
            s.machine.replenishment = if ticked {
                ReplenishMode::Tick
            } else {
                ReplenishMode::Exact
            };
            s.machine.overheads = Overheads {
                do_schedule: ms_us(ds_cost),
                context_switch: ms_us(cs_cost),
                ..Default::default()
            };
            s
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// The Sporadic Server's window bounds (design note of `sporadic.rs`): from each
    /// activation `a` — an instant the VCPU comes to have both work and budget — it runs
    /// at most B in `[a, a + P)`. A window of length P that begins elsewhere may hold more
    /// than B (budget spent at the end of one activation window, then again at its
    /// replenishment, like two back-to-back jobs of a periodic task), but never more than
    /// 2B. For the sliding bound the most a window can hold is reached with the window
    /// starting where a run interval starts (a switch-in, or the end of overhead), so
    /// those are the starts checked.
    #[test]
    fn sporadic_runs_at_most_budget_in_the_period_after_each_activation(
        spec in arb_system(vec![PolicyConfig::Sporadic])
    ) {
        let (runs, activations) = runs_and_activations(&spec, ms(60));
        for (i, d) in spec.domains.iter().enumerate() {
            let (budget, period) = (d.vcpu.budget, d.vcpu.period);
            for &a in &activations[i] {
                let within = executed_within(&runs[i], a, period);
                prop_assert!(
                    within <= budget,
                    "{}: ran {} in [{}, {} + P) after an activation, B = {}, P = {}; \
                     runs {:?}; activations {:?}",
                    d.name, within, a, a, budget, period, runs[i], activations[i]
                );
            }
            for &(start, _) in &runs[i] {
                let within = executed_within(&runs[i], start, period);
                prop_assert!(
                    within <= budget + budget,
                    "{}: ran {} in [{}, {} + P), B = {}, P = {}; runs {:?}",
                    d.name, within, start, start, budget, period, runs[i]
                );
            }
        }
    }

    /// Every server policy keeps its invariants (checked after every simulation step:
    /// budgets in range, the plan in effect matches the state unless a reschedule is
    /// owed, Sporadic books balanced) and accounts the pcpu's time exactly; budget spent
    /// never exceeds budget granted.
    #[test]
    fn fp_servers_keep_their_invariants_on_random_systems(
        spec in arb_system(vec![
            PolicyConfig::Periodic,
            PolicyConfig::Polling,
            PolicyConfig::Sporadic,
            PolicyConfig::Wcps,
            PolicyConfig::Crps,
        ])
    ) {
        let end = ms(60);
        let (runs, sim) = runs_per_domain(&spec, end);
        let pcpu = sim.machine().pcpu_stats(rtvmm_core::model::PcpuId(0));
        prop_assert_eq!(pcpu.busy + pcpu.idle + pcpu.overhead, end);
        for (i, d) in spec.domains.iter().enumerate() {
            let c = counters(&sim, i);
            let ran = executed_within(&runs[i], Nanos::ZERO, end);
            // A VCPU runs on its own budget or on a borrowed one (CRPS).
            prop_assert!(ran <= c.consumed + c.borrowed, "{}: ran {} > {:?}", d.name, ran, c);
            // At most one budget per started period can have been spent.
            let periods = end.as_ns() / d.vcpu.period.as_ns() + 1;
            let spent = c.consumed + c.idled + c.discarded + c.lent;
            prop_assert!(spent.as_ns() <= periods * d.vcpu.budget.as_ns(), "{}: {:?}", d.name, c);
        }
    }
}

/// Random run-time changes on top of a random system: a domain removed, the policy
/// swapped for another server policy, new parameters (budget up or down, priority
/// changed).
fn arb_changes(domains: usize) -> impl Strategy<Value = Vec<TimedChange>> {
    let servers = vec![
        PolicyConfig::Periodic,
        PolicyConfig::Polling,
        PolicyConfig::Sporadic,
        PolicyConfig::Wcps,
        PolicyConfig::Crps,
    ];
    let change = (
        1u64..110,
        0usize..domains,
        0u8..3,
        prop::sample::select(servers),
        1u64..=6,
        0u32..4,
    )
        .prop_map(|(at, target, kind, policy, budget, priority)| {
            let name = format!("v{target}");
            let change = match kind {
                0 => Change::RemoveDomain { domain: name },
                1 => Change::SwapPolicy(policy),
                _ => Change::SetParams {
                    domain: name,
                    // Budget 0.5-3 ms, period 3 ms: always valid.
                    params: VcpuParams::server(us(500 * budget), ms(3), priority),
                },
            };
            TimedChange {
                at: us(500 * at),
                change,
            }
        });
    prop::collection::vec(change, 0..4).prop_map(|mut changes| {
        changes.sort_by_key(|c| c.at);
        // Remove each domain at most once.
        let mut removed = Vec::new();
        changes.retain(|c| match &c.change {
            Change::RemoveDomain { domain } | Change::SetParams { domain, .. } => {
                let keep = !removed.contains(domain);
                if matches!(c.change, Change::RemoveDomain { .. }) {
                    removed.push(domain.clone());
                }
                keep
            }
            _ => true,
        });
        changes
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Hot swaps, removals and parameter changes keep every server policy's invariants
    /// (checked after every step) and the pcpu's time accounting exact.
    #[test]
    fn fp_servers_survive_runtime_changes(
        (spec, changes) in arb_system(vec![
            PolicyConfig::Periodic,
            PolicyConfig::Polling,
            PolicyConfig::Sporadic,
            PolicyConfig::Wcps,
            PolicyConfig::Crps,
        ]).prop_flat_map(|spec| {
            let n = spec.domains.len();
            (Just(spec), arb_changes(n))
        })
    ) {
        let mut spec = spec;
        spec.changes = changes;
        let end = ms(60);
        let (_, sim) = runs_per_domain(&spec, end);
        let pcpu = sim.machine().pcpu_stats(rtvmm_core::model::PcpuId(0));
        prop_assert_eq!(pcpu.busy + pcpu.idle + pcpu.overhead, end);
    }
}
