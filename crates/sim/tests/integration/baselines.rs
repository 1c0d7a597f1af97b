//! The baseline policies — Credit, SEDF, RTDS, ARINC 653 — on hand-derived schedules.
//!
//! Each test draws its timeline (ms) and asserts it exactly, then checks budgets, deadlines
//! or credits at chosen instants (after everything due at that instant was handled).
use crate::util::*;
use rtvmm_core::guest::{GuestScheduler, TaskSpec};
use rtvmm_core::model::{VcpuId, VcpuParams};
use rtvmm_core::policy::{
    Arinc653Table, CreditConfig, MinorFrame, PolicyConfig, PolicyKind, RtdsMode, VcpuView,
};
use rtvmm_core::Nanos;
use rtvmm_sim::Simulation;
use rtvmm_system::timeline::{timeline, Interval};
use rtvmm_system::{Change, DomainSpec, SystemSpec, TimedChange};

// ---------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------

fn dom(name: &str, vcpu: VcpuParams, tasks: Vec<TaskSpec>) -> DomainSpec {
    DomainSpec {
        name: name.to_string(),
        vcpu,
        guest: GuestScheduler::Rm,
        tasks,
        placement: Default::default(),
    }
}

/// Budget (SEDF: slice) and period in ms, with or without extratime.
fn bp(budget_ms: u64, period_ms: u64, extratime: bool) -> VcpuParams {
    let mut p = VcpuParams::server(ms(budget_ms), ms(period_ms), 0);
    p.extratime = Some(extratime);
    p
}

fn weight_cap(weight: u32, cap: u32) -> VcpuParams {
    let mut p = VcpuParams::server(ms(1), ms(10), 0);
    p.weight = weight;
    p.cap = cap;
    p
}

/// Credit with a tick of `tick_ms`, a slice and an accounting period in ticks.
fn credit(tick_ms: u64, ticks_per_slice: u32, ticks_per_accounting: u32) -> PolicyConfig {
    PolicyConfig::Credit(CreditConfig {
        tick: ms(tick_ms),
        ticks_per_slice,
        ticks_per_accounting,
    })
}

/// Credit in ms, as the policy reports it (ns).
fn cr(credit_ms: i64) -> Option<i64> {
    Some(credit_ms * 1_000_000)
}

/// Remaining budget and deadline.
fn bd(budget: Nanos, deadline: Nanos) -> (Option<Nanos>, Option<Nanos>) {
    (Some(budget), Some(deadline))
}

fn budget_deadline(v: &VcpuView) -> (Option<Nanos>, Option<Nanos>) {
    (v.remaining_budget, v.deadline)
}

/// Runs `spec` to `end`, stopping at each of `at` to record every domain's policy view.
/// Returns the schedule and `views[instant][domain]`.
fn run_observing(
    spec: &SystemSpec,
    end: Nanos,
    at: &[Nanos],
) -> (Vec<Interval>, Vec<Vec<VcpuView>>, Simulation) {
    let mut sim = Simulation::new(spec, 1, true).expect("valid system");
    sim.set_check_invariants(true);
    let mut views = Vec::new();
    for &t in at {
        sim.run_until(t).expect("run");
        views.push(
            sim.domains()
                .iter()
                .map(|d| sim.machine().policy().view(d.vcpu))
                .collect(),
        );
    }
    sim.run_until(end).expect("run");
    let names: Vec<String> = spec.domains.iter().map(|d| d.name.clone()).collect();
    let trace = sim.take_trace();
    (timeline(&trace, &names, end), views, sim)
}

// ---------------------------------------------------------------------------------------
// Credit (Xen 4.0)
// ---------------------------------------------------------------------------------------

/// Three equal CPU hogs; tick 1 ms, slice 2 ticks, accounting every 6 ticks. They take
/// turns, 2 ms each, in wake order. All wake UNDER at 0 and are BOOSTed; a BOOST VCPU does
/// not preempt another; the tick that finds each running drops it to UNDER and makes it
/// active, and a VCPU put back at its slice's end goes behind the BOOSTed ones.
/// ```text
/// t(ms)  0    5    10   15   20
/// d1     ██    ██    ██    ██
/// d2       ██    ██    ██    ██
/// d3         ██    ██    ██    ██
/// ```
/// Credits are charged at ticks and at `do_schedule`. At 6 the accounting (before the
/// tick) pays each active VCPU ⌈6 × 256/768⌉ = 2 ms: d1 −2+2 = 0, d2 −2+2 = 0, d3 −1+2 = 1,
/// and the tick then charges d3 its last 1 ms: 0.
#[test]
fn credit_round_robin_with_the_timeslice() {
    let spec = system(
        credit(1, 2, 6),
        vec![
            dom("d1", weight_cap(256, 0), vec![busy("a")]),
            dom("d2", weight_cap(256, 0), vec![busy("b")]),
            dom("d3", weight_cap(256, 0), vec![busy("c")]),
        ],
    );
    let (schedule, views, _) = run_observing(&spec, ms(24), &[ms(5), ms(6)]);
    assert_schedule(
        &schedule,
        "0-2 d1, 2-4 d2, 4-6 d3, 6-8 d1, 8-10 d2, 10-12 d3, \
         12-14 d1, 14-16 d2, 16-18 d3, 18-20 d1, 20-22 d2, 22-24 d3",
    );
    let credits = |i: usize| views[i].iter().map(|v| v.credit).collect::<Vec<_>>();
    assert_eq!(
        credits(0),
        vec![cr(-2), cr(-2), cr(-1)],
        "debited by run time"
    );
    assert_eq!(credits(1), vec![cr(0), cr(0), cr(0)], "paid 2 ms each at 6");
}

/// A BOOSTed wake waits behind another BOOSTed VCPU for the rest of its slice. Xen 4.0's
/// defaults (tick 10 ms, slice 30 ms, accounting 30 ms). d1 has a 40 ms job at 0, d2 a
/// 2 ms job at 5.
/// ```text
/// t(ms)  0         5         30 32        42
/// d1     ██████████████████████   ██████████
/// d2               (waits)    ██
/// ```
/// d1 wakes BOOST at 0 and runs. d2 wakes at 5, BOOST too: not strictly better, no
/// preemption. The tick at 10 drops d1 to UNDER, but the tick does not reschedule: d2
/// waits for d1's slice to end at 30, where d1 goes back behind it. At 30 the accounting
/// pays d1 (the only active VCPU) 30: −20+30 = 10, and the tick charges 10 more: 0. d2,
/// never found running by a tick, is never active: not paid.
#[test]
fn credit_boosted_wake_waits_behind_a_boosted_vcpu_for_its_slice() {
    let spec = system(
        credit(10, 3, 3),
        vec![
            dom("d1", weight_cap(256, 0), vec![jobs_at("long", &[0], 40)]),
            dom("d2", weight_cap(256, 0), vec![jobs_at("short", &[5], 2)]),
        ],
    );
    let (schedule, views, _) = run_observing(&spec, ms(60), &[ms(29), ms(60)]);
    assert_schedule(&schedule, "0-30 d1, 30-32 d2, 32-42 d1, 42-60 idle");
    let credits = |i: usize| views[i].iter().map(|v| v.credit).collect::<Vec<_>>();
    assert_eq!(credits(0), vec![cr(-20), cr(0)]);
    // At 60 d1 (−8 at the tick of 40, −2 when it blocked at 42) is paid 30: 20.
    assert_eq!(credits(1), vec![cr(20), cr(-2)]);
}

/// A VCPU goes OVER and loses to UNDER ones at the next slice. Three equal hogs, Xen
/// 4.0's defaults.
/// ```text
/// t(ms)  0-30 d1, 30-60 d2, 60-90 d3, 90-120 d1, 120-150 d2, 150-180 d1
/// ```
/// At 30 only d1 is active: paid 30 (−20+30 = 10, then −10 at the tick: 0). At 60 d2 and
/// d1 share the pool: d2 −20+15 = −5 OVER (−15 after the tick), d1 0+15 = 15. At 90 all
/// three share it (10 each): d3 −20+10 = −10 OVER, d2 −15+10 = −5 OVER, d1 25 UNDER — so at
/// the slice's end the UNDER d1 runs, ahead of the OVER d2 that waited longer. At 120 d2 is
/// back to UNDER (−5+10 = 5) and runs; at 150 d2 (−15+10 = −5) is OVER again and d1 runs
/// ahead of d3 (0, UNDER), which it was queued ahead of.
#[test]
fn credit_over_vcpu_loses_to_under_ones_at_the_next_slice() {
    let spec = system(
        credit(10, 3, 3),
        vec![
            dom("d1", weight_cap(256, 0), vec![busy("a")]),
            dom("d2", weight_cap(256, 0), vec![busy("b")]),
            dom("d3", weight_cap(256, 0), vec![busy("c")]),
        ],
    );
    let (schedule, views, _) = run_observing(&spec, ms(180), &[ms(60), ms(90), ms(120)]);
    assert_schedule(
        &schedule,
        "0-30 d1, 30-60 d2, 60-90 d3, 90-120 d1, 120-150 d2, 150-180 d1",
    );
    let credits = |i: usize| views[i].iter().map(|v| v.credit).collect::<Vec<_>>();
    assert_eq!(credits(0), vec![cr(15), cr(-15), cr(0)]);
    assert_eq!(credits(1), vec![cr(25), cr(-5), cr(-20)]);
    assert_eq!(credits(2), vec![cr(5), cr(5), cr(-10)]);
}

/// BOOST on wake preempts a CPU hog (a strictly better class). d1 is a hog; d2 is mostly
/// idle (1 ms jobs at 40 and 70). Xen 4.0's defaults.
/// ```text
/// t(ms)  0        30  40 41        60  70 71       90      (not to scale)
/// d1     ████████████████  ████████████████  ██████████
/// d2                     ██                ██
/// ```
/// At 40 d2 wakes UNDER → BOOST and preempts the UNDER hog at once. It blocks at 41
/// without a tick having found it running: it stays BOOST and never becomes active, so it
/// is never paid (−1, then −2) and preempts again at 70. d1 is paid 30 at each accounting
/// as the only active VCPU: −19+30 = 11 at 60 (1 after the tick), −18+30 = 12 at 90 (2).
#[test]
fn credit_boost_on_wake_preempts_a_cpu_hog() {
    let spec = system(
        credit(10, 3, 3),
        vec![
            dom("d1", weight_cap(256, 0), vec![busy("hog")]),
            dom("d2", weight_cap(256, 0), vec![jobs_at("io", &[40, 70], 1)]),
        ],
    );
    let (schedule, views, _) = run_observing(&spec, ms(90), &[ms(30), ms(60), ms(90)]);
    assert_schedule(&schedule, "0-40 d1, 40-41 d2, 41-70 d1, 70-71 d2, 71-90 d1");
    let credits = |i: usize| views[i].iter().map(|v| v.credit).collect::<Vec<_>>();
    assert_eq!(credits(0), vec![cr(0), cr(0)], "d2 inactive: not paid");
    assert_eq!(credits(1), vec![cr(1), cr(-1)]);
    assert_eq!(credits(2), vec![cr(2), cr(-2)]);
}

/// No BOOST while OVER, and classes matter only where the queue is read. Weights d1 512,
/// d2 256; Xen 4.0's defaults. d1 is a hog; d2 has a 25 ms job at 0 and a 1 ms job at 65.
/// ```text
/// t(ms)  0-30 d1, 30-55 d2, 55-145 d1, 145-146 d2, 146-150 d1
/// ```
/// Both wake BOOSTed at 0; d1 runs its slice, then d2 its job. At 60 both are active:
/// d2 −25+10 = −15 OVER, d1 0+20 = 20 (15 after the tick). d2 wakes at 65 OVER: no BOOST,
/// no preemption, queued behind. At 85 d1's slice ends but d1 (UNDER) is put back ahead
/// of the OVER d2 and runs on. At 90 d2 is still OVER (−5); at 120 it is UNDER (5), but
/// only a slice's end reads the queue: at 145 d1 goes behind d2 and d2 runs.
#[test]
fn credit_no_boost_for_an_over_vcpu() {
    let spec = system(
        credit(10, 3, 3),
        vec![
            dom("d1", weight_cap(512, 0), vec![busy("hog")]),
            dom(
                "d2",
                weight_cap(256, 0),
                vec![jobs_at("batch", &[0], 25), jobs_at("io", &[65], 1)],
            ),
        ],
    );
    let (schedule, views, _) = run_observing(&spec, ms(150), &[ms(61), ms(90), ms(121)]);
    assert_schedule(
        &schedule,
        "0-30 d1, 30-55 d2, 55-145 d1, 145-146 d2, 146-150 d1",
    );
    let credits = |i: usize| views[i].iter().map(|v| v.credit).collect::<Vec<_>>();
    assert_eq!(credits(0), vec![cr(15), cr(-15)]);
    assert_eq!(credits(1), vec![cr(5), cr(-5)]);
    assert_eq!(credits(2), vec![cr(-5), cr(5)]);
}

/// Credit in µs, as the policy reports it (ns).
fn cr_us(credit_us: i64) -> Option<i64> {
    Some(credit_us * 1_000)
}

/// A capped domain is parked. d1 is a hog with cap 25 % (⌈25 × 30/100⌉ = 7.5 ms per
/// accounting), d2 a hog without cap; Xen 4.0's defaults.
/// ```text
/// t(ms)  0-30 d1, 30-120 d2, 120-150 d1, 150-160 d2
/// ```
/// At 30 d1, the only active VCPU, is paid its capped peak 7.5: −20+7.5 = −12.5 < −7.5:
/// OVER and parked, off the pcpu at once (−22.5 after the tick). d2 runs. At 60 the
/// negative balance (−12.5) is added to the pool (42.5): d1 gets 7.5 (−15, still parked),
/// d2 ⌈42.5/2⌉ = 21.25. At 90 d1 (−7.5) is not below −7.5 but still OVER: parked. At 120
/// it reaches 0, UNDER: unparked without BOOST, queued; d2 (UNDER) is not preempted, but at
/// its slice's end it goes behind d1. At 150 d1 is parked again.
#[test]
fn credit_cap_parks_until_an_accounting_makes_it_under() {
    let spec = system(
        credit(10, 3, 3),
        vec![
            dom("d1", weight_cap(256, 25), vec![busy("hog")]),
            dom("d2", weight_cap(256, 0), vec![busy("other")]),
        ],
    );
    let (schedule, views, _) = run_observing(&spec, ms(160), &[ms(30), ms(60), ms(120)]);
    assert_schedule(&schedule, "0-30 d1, 30-120 d2, 120-150 d1, 150-160 d2");
    let credits = |i: usize| views[i].iter().map(|v| v.credit).collect::<Vec<_>>();
    assert_eq!(credits(0), vec![cr_us(-22_500), cr(0)]);
    assert_eq!(credits(1), vec![cr_us(-15_000), cr_us(-8_750)]);
    assert_eq!(credits(2), vec![cr(0), cr(-10)]);
}

/// Credit calls `do_schedule` only when Xen 4.0's did: two equal hogs, Xen's defaults,
/// 290 ms. The tick (every 10 ms) never reschedules; each 30 ms slice's end does: 10 calls
/// (0, 30, …, 270), each a switch — after the first accounting the two alternate (the
/// one that just ran is OVER or behind the other UNDER one). A quantum-driven machine would
/// have called it 290 times.
#[test]
fn credit_do_schedule_counts_on_two_domains() {
    let spec = system(
        credit(10, 3, 3),
        vec![
            dom("d1", weight_cap(256, 0), vec![busy("a")]),
            dom("d2", weight_cap(256, 0), vec![busy("b")]),
        ],
    );
    let (schedule, _, sim) = run_observing(&spec, ms(290), &[]);
    assert_schedule(
        &schedule,
        "0-30 d1, 30-60 d2, 60-90 d1, 90-120 d2, 120-150 d1, 150-180 d2, 180-210 d1, \
         210-240 d2, 240-270 d1, 270-290 d2",
    );
    let stats = sim.machine().pcpu_stats(rtvmm_core::model::PcpuId(0));
    assert_eq!(stats.do_schedule_calls, 10);
    assert_eq!(stats.context_switches, 10);
}

// ---------------------------------------------------------------------------------------
// SEDF
// ---------------------------------------------------------------------------------------

/// Xen 4.0's SEDF, EDF order. d1: slice 5, period 10; d2: slice 2, period 4; both always
/// busy. The same schedule as ideal EDF (`sedf_ideal_runs_earliest_deadline_first`): nobody
/// blocks. At 16 both have deadline 20 and d1 goes on: d2 joined the run queue at 16, after
/// d1 (Xen's sorted lists put a newcomer after the entries it ties with).
#[test]
fn sedf_runs_earliest_deadline_first() {
    let spec = system(
        PolicyConfig::Sedf,
        vec![
            dom("d1", bp(5, 10, false), vec![busy("a")]),
            dom("d2", bp(2, 4, false), vec![busy("b")]),
        ],
    );
    let (schedule, _, _) = run_observing(&spec, ms(24), &[]);
    assert_schedule(
        &schedule,
        "0-2 d2, 2-4 d1, 4-6 d2, 6-9 d1, 9-11 d2, 11-12 d1, 12-14 d2, 14-18 d1, \
         18-22 d2, 22-24 d1",
    );
}

/// The spec's first timeline (short unblocking). d1: slice 2, period 10; a 1 ms job at 0,
/// a 2 ms job at 3. d1 blocks at 1 and wakes at 3, inside its period: no more real-time
/// service until 10; the 1 ms of slice it lost buys one 500 µs penalty run at 3 (the pcpu
/// is otherwise idle; Xen hands penalty time out whatever the extratime flag).
/// ```text
/// t(ms)  0   1   2   3  3.5  …  10  11.5
/// d1     ████        ██          ██████
/// ```
#[test]
fn sedf_short_unblocking_waits_for_the_next_period() {
    let spec = system(
        PolicyConfig::Sedf,
        vec![dom(
            "d1",
            bp(2, 10, false),
            vec![jobs_at("t1", &[0], 1), jobs_at("t2", &[3], 2)],
        )],
    );
    let (schedule, views, _) = run_observing(&spec, ms(20), &[ms(3)]);
    assert_schedule(
        &schedule,
        "0-1 d1, 1-3 idle, 3-3500us d1, 3500us-10 idle, 10-11500us d1, 11500us-20 idle",
    );
    assert_eq!(budget_deadline(&views[0][0]), bd(ms(2), ms(20)));
}

/// The same, with d2 (slice 9, period 10, busy) taking the time d1 leaves: d1 runs again
/// only at 10, exactly as the spec draws it. At 10 both have deadline 20; d1 went on the
/// wait queue at 3, d2 at 10, so d1 goes first.
#[test]
fn sedf_short_unblocking_runs_again_only_at_the_next_period() {
    let spec = system(
        PolicyConfig::Sedf,
        vec![
            dom(
                "d1",
                bp(2, 10, false),
                vec![jobs_at("t1", &[0], 1), jobs_at("t2", &[3], 2)],
            ),
            dom("d2", bp(9, 10, false), vec![busy("b")]),
        ],
    );
    let (schedule, _, _) = run_observing(&spec, ms(20), &[]);
    assert_schedule(&schedule, "0-1 d1, 1-10 d2, 10-12 d1, 12-20 d2");
}

/// The spec's second timeline (long unblocking). d1: slice 2, period 10; a 1 ms job at 0,
/// then it sleeps through its deadline 10; a 3 ms job at 13. The wake starts a new period
/// 13–23 with a full slice: 13–15; the slice used up, the next period 23–33 brings the
/// last 1 ms (23–24).
/// ```text
/// t(ms)  0  1 …  13   15 …  23  24
/// d1     ███     ██████     ███
/// ```
#[test]
fn sedf_long_unblocking_starts_a_period_at_the_wake() {
    let spec = system(
        PolicyConfig::Sedf,
        vec![dom(
            "d1",
            bp(2, 10, false),
            vec![jobs_at("t1", &[0], 1), jobs_at("t2", &[13], 3)],
        )],
    );
    let (schedule, views, _) = run_observing(&spec, ms(30), &[ms(14)]);
    assert_schedule(
        &schedule,
        "0-1 d1, 1-13 idle, 13-15 d1, 15-23 idle, 23-24 d1, 24-30 idle",
    );
    assert_eq!(budget_deadline(&views[0][0]), bd(ms(1), ms(23)));
}

/// d1: slice 2, period 5; d2: slice 1, period 5; both always busy. The extratime flags vary.
fn sedf_extra_case(d1_extra: bool, d2_extra: bool) -> SystemSpec {
    system(
        PolicyConfig::Sedf,
        vec![
            dom("d1", bp(2, 5, d1_extra), vec![busy("a")]),
            dom("d2", bp(1, 5, d2_extra), vec![busy("b")]),
        ],
    )
}

/// Extratime off: the pcpu idles once both slices are spent.
#[test]
fn sedf_extratime_off_idles_when_slices_are_spent() {
    let (schedule, _, _) = run_observing(&sedf_extra_case(false, false), ms(10), &[]);
    assert_schedule(
        &schedule,
        "0-2 d1, 2-3 d2, 3-5 idle, 5-7 d1, 7-8 d2, 8-10 idle",
    );
}

/// Extratime on for both: the utilisation queue serves them by score, lower first. A
/// run sets the runner's score to (p << 10) / s (d1: 2560, d2: 5120) and lowers the
/// others' by the runner's old score; a newcomer goes after the scores it ties with. Both
/// start at 0, in wake order [d1, d2]. Queue after each extra run:
/// 3–3.5 d1 → [d2 0, d1 2560]; 3.5–4 d2 → [d1 2560, d2 5120]; 4–4.5 d1 → [d2 2560,
/// d1 2560]; 4.5–5 d2 → [d1 0, d2 5120]; 8–8.5 d1 → [d1 2560, d2 5120]; 8.5–9 d1 →
/// [d2 2560, d1 2560]; 9–9.5 d2 → [d1 0, d2 5120]; 9.5–10 d1. d1, with twice d2's
/// utilisation, gets more of the extra time.
#[test]
fn sedf_extratime_vcpus_share_by_utilisation() {
    let (schedule, _, _) = run_observing(&sedf_extra_case(true, true), ms(10), &[]);
    assert_schedule(
        &schedule,
        "0-2 d1, 2-3 d2, 3-3500us d1, 3500us-4 d2, 4-4500us d1, 4500us-5 d2, \
         5-7 d1, 7-8 d2, 8-9 d1, 9-9500us d2, 9500us-10 d1",
    );
}

/// `sedf-ideal`, EDF order. d1: slice 5, period 10; d2: slice 2, period 4; both always busy.
/// ```text
/// t(ms)  0    5    10   15   20
/// d1       ██  ███  █  ████    ██
/// d2     ██  ██   ██ ██    ████
/// ```
/// At 8 d2 is replenished with deadline 12 but d1's deadline 10 is earlier: d1 goes on
/// (rate-monotonic would have run d2). At 16 both have deadline 20: the smaller VCPU id (d1)
/// goes on. At 20 d2 (deadline 24) goes before d1 (deadline 30).
#[test]
fn sedf_ideal_runs_earliest_deadline_first() {
    let spec = system(
        PolicyConfig::SedfIdeal,
        vec![
            dom("d1", bp(5, 10, false), vec![busy("a")]),
            dom("d2", bp(2, 4, false), vec![busy("b")]),
        ],
    );
    let (schedule, views, _) = run_observing(&spec, ms(24), &[ms(8), ms(16)]);
    assert_schedule(
        &schedule,
        "0-2 d2, 2-4 d1, 4-6 d2, 6-9 d1, 9-11 d2, 11-12 d1, 12-14 d2, 14-18 d1, \
         18-22 d2, 22-24 d1",
    );
    let state = |i: usize| views[i].iter().map(budget_deadline).collect::<Vec<_>>();
    assert_eq!(state(0), vec![bd(ms(1), ms(10)), bd(ms(2), ms(12))]);
    assert_eq!(state(1), vec![bd(ms(2), ms(20)), bd(ms(2), ms(20))]);
}

/// Slice preservation. d1: slice 2, period 5; jobs of 1 ms at 0 and 3 ms at 3. d2: slice 4,
/// period 10, always busy.
/// ```text
/// t(ms)  0   1   2   3   4   5   6   7   8   9  10  11  12  13  14 ... 20
/// d1     ███             ███     ███████
/// d2         ███████         ███         ███         ████████████████
/// idle                                       ███████                 ██████
/// ```
/// d1 blocks at 1 keeping 1 ms of slice (still 1 ms at 2) and spends it at 3 (deadline 5
/// beats 10). At 5 d1 and d2 both have deadline 10: d1 (smaller id) first.
#[test]
fn sedf_ideal_keeps_the_slice_of_a_blocked_vcpu() {
    let spec = system(
        PolicyConfig::SedfIdeal,
        vec![
            dom(
                "d1",
                bp(2, 5, false),
                vec![jobs_at("t1", &[0], 1), jobs_at("t2", &[3], 3)],
            ),
            dom("d2", bp(4, 10, false), vec![busy("b")]),
        ],
    );
    let (schedule, views, _) = run_observing(&spec, ms(20), &[ms(2), ms(4), ms(20)]);
    assert_schedule(
        &schedule,
        "0-1 d1, 1-3 d2, 3-4 d1, 4-5 d2, 5-7 d1, 7-8 d2, 8-10 idle, 10-14 d2, 14-20 idle",
    );
    let state = |i: usize| views[i].iter().map(budget_deadline).collect::<Vec<_>>();
    assert_eq!(state(0), vec![bd(ms(1), ms(5)), bd(ms(3), ms(10))]);
    assert_eq!(state(1), vec![bd(ms(0), ms(5)), bd(ms(2), ms(10))]);
    assert_eq!(state(2), vec![bd(ms(2), ms(25)), bd(ms(4), ms(30))]);
}

/// d1: slice 2, period 5; d2: slice 1, period 5; both always busy. The extratime flags vary.
fn sedf_ideal_extra_case(d1_extra: bool, d2_extra: bool) -> SystemSpec {
    system(
        PolicyConfig::SedfIdeal,
        vec![
            dom("d1", bp(2, 5, d1_extra), vec![busy("a")]),
            dom("d2", bp(1, 5, d2_extra), vec![busy("b")]),
        ],
    )
}

/// Extratime off: the pcpu idles once both slices are spent.
/// ```text
/// t(ms)  0   1   2   3   4   5   6   7   8   9  10
/// d1     ███████                 ███████
/// d2             ███                     ███
/// idle               ███████                 ███████
/// ```
#[test]
fn sedf_ideal_extratime_off_idles_when_slices_are_spent() {
    let (schedule, _, _) = run_observing(&sedf_ideal_extra_case(false, false), ms(10), &[]);
    assert_schedule(
        &schedule,
        "0-2 d1, 2-3 d2, 3-5 idle, 5-7 d1, 7-8 d2, 8-10 idle",
    );
}

/// Extratime on for d1 only: it soaks up the time nobody with slice wants, without
/// consuming slice; at 5 the new period's EDF order applies again.
/// ```text
/// t(ms)  0   1   2   3   4   5   6   7   8   9  10
/// d1     ███████     ███████████████     ███████
/// d2             ███                 ███
/// ```
#[test]
fn sedf_ideal_extratime_vcpu_runs_in_idle_time() {
    let (schedule, views, _) = run_observing(&sedf_ideal_extra_case(true, false), ms(10), &[ms(4)]);
    assert_schedule(&schedule, "0-2 d1, 2-3 d2, 3-7 d1, 7-8 d2, 8-10 d1");
    assert_eq!(
        budget_deadline(&views[0][0]),
        bd(ms(0), ms(5)),
        "extra time consumes no slice"
    );
}

/// Extratime on for both: round-robin, 500 µs each, in the idle part of each period.
#[test]
fn sedf_ideal_extratime_vcpus_take_turns() {
    let (schedule, _, _) = run_observing(&sedf_ideal_extra_case(true, true), ms(10), &[]);
    assert_schedule(
        &schedule,
        "0-2 d1, 2-3 d2, 3-3500us d1, 3500us-4 d2, 4-4500us d1, 4500us-5 d2, \
         5-7 d1, 7-8 d2, 8-8500us d1, 8500us-9 d2, 9-9500us d1, 9500us-10 d2",
    );
}

// ---------------------------------------------------------------------------------------
// RTDS
// ---------------------------------------------------------------------------------------

/// d1: budget 2, period 5 (extratime varies); d2: budget 1, period 4, no extratime; both busy.
fn rtds_extra_case(d1_extra: bool) -> SystemSpec {
    system(
        PolicyConfig::Rtds(RtdsMode::Event),
        vec![
            dom("d1", bp(2, 5, d1_extra), vec![busy("a")]),
            dom("d2", bp(1, 4, false), vec![busy("b")]),
        ],
    )
}

/// Extratime off: a depleted VCPU waits for its deadline; the pcpu idles.
/// ```text
/// t(ms)  0    5    10   15   20
/// d1      ██  ██   ██   ██
/// d2     █   █   █   █    █
/// ```
/// (Idle wherever neither runs.) At 16 d2 is
/// replenished with deadline 20, equal to d1's: the smaller id (d1) goes on.
#[test]
fn rtds_without_extratime_a_depleted_vcpu_waits() {
    let (schedule, _, _) = run_observing(&rtds_extra_case(false), ms(20), &[]);
    assert_schedule(
        &schedule,
        "0-1 d2, 1-3 d1, 3-4 idle, 4-5 d2, 5-7 d1, 7-8 idle, 8-9 d2, 9-10 idle, \
         10-12 d1, 12-13 d2, 13-15 idle, 15-17 d1, 17-18 d2, 18-20 idle",
    );
}

/// Extratime on for d1: when its budget is spent it gets a fresh budget one level down, so
/// it fills the idle time — but any level-0 VCPU goes first, whatever the deadlines: at 4
/// d2 (level 0, deadline 8) preempts d1 (level 1, deadline 5). At its deadline d1 is back
/// at level 0.
/// ```text
/// t(ms)  0    5    10   15   20
/// d1      ███ ███ ███ ████ ██
/// d2     █   █   █   █    █
/// ```
#[test]
fn rtds_extratime_runs_at_a_lower_level() {
    let (schedule, views, _) = run_observing(
        &rtds_extra_case(true),
        ms(20),
        &[Nanos::from_us(3500), ms(4)],
    );
    assert_schedule(
        &schedule,
        "0-1 d2, 1-4 d1, 4-5 d2, 5-8 d1, 8-9 d2, 9-12 d1, 12-13 d2, 13-17 d1, \
         17-18 d2, 18-20 d1",
    );
    // At 3.5 ms d1 runs on its extra budget (2 ms from 3): 1.5 ms left, deadline still 5.
    assert_eq!(
        budget_deadline(&views[0][0]),
        bd(Nanos::from_us(1500), ms(5))
    );
    assert_eq!(
        budget_deadline(&views[0][1]),
        bd(ms(0), ms(4)),
        "d2 depleted"
    );
    assert_eq!(
        budget_deadline(&views[1][1]),
        bd(ms(1), ms(8)),
        "d2 replenished"
    );
}

/// Deadline skipping whole periods. d1: budget 2, period 5, 1 ms jobs at 0 and 17; d2:
/// budget 3, period 8, always busy.
/// ```text
/// t(ms)  0    5    10   15   20   25   30
/// d1     █                █
/// d2      ███    ███     █ ██    ███
/// ```
/// d1 blocks at 1 with 1 ms of budget, kept until its deadline 5 (still there at 4). It
/// sleeps through the deadlines 5, 10 and 15; when it wakes at 17 its deadline jumps to 20
/// (three whole periods skipped) with a full budget, and it preempts d2 (deadline 24).
#[test]
fn rtds_deadline_skips_whole_periods() {
    let spec = system(
        PolicyConfig::Rtds(RtdsMode::Event),
        vec![
            dom("d1", bp(2, 5, false), vec![jobs_at("j", &[0, 17], 1)]),
            dom("d2", bp(3, 8, false), vec![busy("b")]),
        ],
    );
    let (schedule, views, _) = run_observing(&spec, ms(30), &[ms(4), ms(17), ms(18)]);
    assert_schedule(
        &schedule,
        "0-1 d1, 1-4 d2, 4-8 idle, 8-11 d2, 11-16 idle, 16-17 d2, 17-18 d1, 18-20 d2, \
         20-24 idle, 24-27 d2, 27-30 idle",
    );
    assert_eq!(budget_deadline(&views[0][0]), bd(ms(1), ms(5)));
    assert_eq!(budget_deadline(&views[1][0]), bd(ms(2), ms(20)));
    assert_eq!(budget_deadline(&views[2][0]), bd(ms(1), ms(20)));
}

/// Hot swap from the Deferrable Server to RTDS at 30 ms, keeping the VCPUs and their work.
/// d1: budget 2, period 5, priority 1, no extratime; d2: budget 4, period 10, priority 2,
/// extratime (which the Deferrable Server ignores); both always busy.
/// ```text
/// t(ms)  0-30: Deferrable — each 10 ms: d1 2, d2 3, d1 2, d2 1, idle 2.
///        30- : RTDS (VCPUs start afresh at 30: d1 deadline 35, d2 deadline 40)
///              30-32 d1, 32-35 d2, 35-37 d1 (deadline 40 = d2's, smaller id), 37-38 d2,
///              38-40 d2 on extratime where the Deferrable Server idled; then again.
/// ```
#[test]
fn hot_swap_from_deferrable_to_rtds_keeps_work() {
    let mut d1 = VcpuParams::server(ms(2), ms(5), 1);
    d1.extratime = Some(false);
    let mut d2 = VcpuParams::server(ms(4), ms(10), 2);
    d2.extratime = Some(true);
    let mut spec = system(
        PolicyConfig::Deferrable,
        vec![
            dom("d1", d1, vec![busy("a")]),
            dom("d2", d2, vec![busy("b")]),
        ],
    );
    spec.changes.push(TimedChange {
        at: ms(30),
        change: Change::SwapPolicy(PolicyConfig::Rtds(RtdsMode::Event)),
    });
    let (schedule, views, sim) = run_observing(&spec, ms(50), &[ms(50)]);
    assert_schedule(
        &schedule,
        "0-2 d1, 2-5 d2, 5-7 d1, 7-8 d2, 8-10 idle, 10-12 d1, 12-15 d2, 15-17 d1, \
         17-18 d2, 18-20 idle, 20-22 d1, 22-25 d2, 25-27 d1, 27-28 d2, 28-30 idle, \
         30-32 d1, 32-35 d2, 35-37 d1, 37-40 d2, 40-42 d1, 42-45 d2, 45-47 d1, 47-50 d2",
    );
    assert_eq!(sim.machine().policy_kind(), PolicyKind::Rtds);
    let state = views[0].iter().map(budget_deadline).collect::<Vec<_>>();
    assert_eq!(state, vec![bd(ms(2), ms(55)), bd(ms(4), ms(60))]);
    // The hogs' single jobs went on across the swap: 12 + 8 ms for d1, 12 + 12 for d2
    // (extratime fills 38-40 and 48-50).
    let run = |i: usize| sim.machine().vcpu_stats(sim.domains()[i].vcpu).run;
    assert_eq!((run(0), run(1)), (ms(20), ms(24)));
}

// ---------------------------------------------------------------------------------------
// ARINC 653
// ---------------------------------------------------------------------------------------

fn table(major_ms: u64, frames: &[(u32, u64)]) -> Arinc653Table {
    Arinc653Table {
        major_frame: ms(major_ms),
        minor_frames: frames
            .iter()
            .map(|&(v, runtime)| MinorFrame {
                vcpu: VcpuId(v),
                runtime: ms(runtime),
            })
            .collect(),
    }
}

/// Any parameters: ARINC 653 reads none.
fn any() -> VcpuParams {
    VcpuParams::server(ms(1), ms(10), 0)
}

/// Major frame 10 ms: d1 3 ms, d2 2 ms, d3 2 ms, then 3 ms idle. d1 always busy (overruns
/// every frame); d2: 1 ms job at 0, 3 ms job at 10 (overruns its 2 ms frame, finishes in
/// the next major frame); d3: 1 ms job at 16.
/// ```text
/// t(ms)  0    5    10   15   20   25   30
/// frame  1112233---1112233---1112233---   (whose minor frame; -: idle remainder)
/// d1     ███       ███       ███
/// d2        █         ██        █
/// d3                     █
/// ```
/// d2 finishes early at 4: the rest of its frame idles (nobody else may run). d3 has no
/// work in its first frame: idle. d3 wakes inside its own frame at 16 and runs at once.
/// d1's work never spills into other frames.
#[test]
fn arinc653_runs_only_the_frame_owner() {
    let spec = system(
        PolicyConfig::Arinc653(table(10, &[(0, 3), (1, 2), (2, 2)])),
        vec![
            dom("d1", any(), vec![busy("a")]),
            dom(
                "d2",
                any(),
                vec![jobs_at("b1", &[0], 1), jobs_at("b2", &[10], 3)],
            ),
            dom("d3", any(), vec![jobs_at("c", &[16], 1)]),
        ],
    );
    let (schedule, _, sim) = run_observing(&spec, ms(30), &[]);
    assert_schedule(
        &schedule,
        "0-3 d1, 3-4 d2, 4-10 idle, 10-13 d1, 13-15 d2, 15-16 idle, 16-17 d3, 17-20 idle, \
         20-23 d1, 23-24 d2, 24-30 idle",
    );
    // d2's overrunning 3 ms job: 2 ms in its frame at 13-15, the last 1 ms at 23-24.
    let b2 = &sim.domains()[1].finished[1];
    assert_eq!(b2.len(), 1);
    assert_eq!(b2[0].finish, Some(ms(24)));
}

/// A new table takes effect at once: swapped in at 12 ms, in the middle of d1's frame, its
/// first major frame starts at 12.
/// ```text
/// old: major 10 = d1 3, d2 2, idle 5     new: major 4 = d2 1, d1 2, idle 1
/// t(ms)  0    3    5        10  12 13   15 16 17  19 20
/// run    d1   d2   idle     d1  d2 d1   .  d2 d1  .
/// ```
#[test]
fn arinc653_new_table_takes_effect_at_once() {
    let mut spec = system(
        PolicyConfig::Arinc653(table(10, &[(0, 3), (1, 2)])),
        vec![
            dom("d1", any(), vec![busy("a")]),
            dom("d2", any(), vec![busy("b")]),
        ],
    );
    spec.changes.push(TimedChange {
        at: ms(12),
        change: Change::SwapPolicy(PolicyConfig::Arinc653(table(4, &[(1, 1), (0, 2)]))),
    });
    let (schedule, _, _) = run_observing(&spec, ms(20), &[]);
    assert_schedule(
        &schedule,
        "0-3 d1, 3-5 d2, 5-10 idle, 10-12 d1, 12-13 d2, 13-15 d1, 15-16 idle, 16-17 d2, \
         17-19 d1, 19-20 idle",
    );
}

// ---------------------------------------------------------------------------------------
// Which policies tick
// ---------------------------------------------------------------------------------------

/// d1 (budget/slice 2, period 10, priority 1) and d2 (3, 10, priority 2), both busy and
/// without extratime, for 100 ms; ARINC 653 runs the same shares as minor frames of 2 and 3 ms in a 10 ms frame.
/// Every policy gives the same schedule — per 10 ms: d1 2 ms, d2 3 ms, idle 5 ms — but
/// calls `do_schedule` as Xen's would:
/// - SEDF, RTDS (event-driven, Xen 4.7+) and ARINC 653: only at 0, 2 and 5 of each period
///   (start or replenishment, d1's slice or frame over, d2's over): 30 calls;
/// - RTDS in `quantum` mode (Xen 4.5) and the Deferrable Server: at every 1 ms tick, and the
///   events all fall on ticks: 100 calls (0 to 99).
#[test]
fn each_policy_calls_do_schedule_as_xen_does() {
    let server = |budget, priority| {
        let mut v = bp(budget, 10, false);
        v.priority = priority;
        v
    };
    let domains = vec![
        dom("d1", server(2, 1), vec![busy("a")]),
        dom("d2", server(3, 2), vec![busy("b")]),
    ];
    let cases = [
        (PolicyConfig::Sedf, 30),
        (PolicyConfig::Rtds(RtdsMode::Event), 30),
        (PolicyConfig::Arinc653(table(10, &[(0, 2), (1, 3)])), 30),
        (PolicyConfig::Rtds(RtdsMode::Quantum), 100),
        (PolicyConfig::Deferrable, 100),
    ];
    for (policy, calls) in cases {
        let spec = system(policy.clone(), domains.clone());
        let (schedule, _, sim) = run_observing(&spec, ms(99), &[]);
        let expected: Vec<String> = (0..10)
            .flat_map(|k| {
                let t = 10 * k;
                let mut slots = vec![
                    format!("{t}-{} d1", t + 2),
                    format!("{}-{} d2", t + 2, t + 5),
                ];
                if k < 9 {
                    slots.push(format!("{}-{} idle", t + 5, t + 10));
                } else {
                    slots.push(format!("{}-99 idle", t + 5));
                }
                slots
            })
            .collect();
        assert_schedule(&schedule, &expected.join(", "));
        let stats = sim.machine().pcpu_stats(rtvmm_core::model::PcpuId(0));
        assert_eq!(stats.do_schedule_calls, calls, "{policy:?}");
    }
}

/// A hot swap moves to the new policy's tick: SEDF (no tick) until 50 ms, then the
/// Deferrable Server, whose 1 ms ticks start at the swap. Same system as above: SEDF calls
/// at 0, 2, 5, …, 40, 42, 45 (15); the Deferrable Server at 50 (the swap) and at every tick
/// 51 … 99 (50).
#[test]
fn hot_swap_moves_to_the_new_policys_tick() {
    let mut spec = system(
        PolicyConfig::Sedf,
        vec![
            dom("d1", VcpuParams::server(ms(2), ms(10), 1), vec![busy("a")]),
            dom("d2", VcpuParams::server(ms(3), ms(10), 2), vec![busy("b")]),
        ],
    );
    spec.changes.push(TimedChange {
        at: ms(50),
        change: Change::SwapPolicy(PolicyConfig::Deferrable),
    });
    let (_, _, sim) = run_observing(&spec, ms(99), &[]);
    let stats = sim.machine().pcpu_stats(rtvmm_core::model::PcpuId(0));
    assert_eq!(stats.do_schedule_calls, 15 + 50);
}

// ---------------------------------------------------------------------------------------
// Robustness
// ---------------------------------------------------------------------------------------

/// Every baseline, with tick-timed replenishment and overheads, on a mixed load for one
/// second: the simulator checks the machine's and the policy's invariants after every step
/// (time adds up, budgets and credits in range, queues consistent). Nothing is asserted
/// about the schedule itself.
#[test]
fn baselines_keep_their_invariants_with_tick_replenishment_and_overheads() {
    use rtvmm_core::machine::{Overheads, ReplenishMode};
    let policies = [
        credit(1, 1, 3),
        credit(10, 3, 3),
        PolicyConfig::Sedf,
        PolicyConfig::Rtds(RtdsMode::Event),
        PolicyConfig::Arinc653(table(10, &[(0, 3), (1, 2), (2, 4)])),
    ];
    for policy in policies {
        for replenishment in [ReplenishMode::Exact, ReplenishMode::Tick] {
            let mut d1 = bp(2, 5, true);
            d1.cap = 30;
            let mut spec = system(
                policy.clone(),
                vec![
                    dom("d1", d1, vec![periodic("p", 5, 2), busy("hog")]),
                    dom("d2", bp(1, 3, false), vec![periodic("q", 7, 3)]),
                    dom(
                        "d3",
                        bp(3, 10, true),
                        vec![jobs_at("r", &[4, 5, 33, 34], 4)],
                    ),
                ],
            );
            spec.machine.replenishment = replenishment;
            spec.machine.overheads = Overheads {
                do_schedule: Nanos::from_us(20),
                context_switch: Nanos::from_us(30),
                ..Default::default()
            };
            let (_, _, sim) = run_observing(&spec, ms(1000), &[]);
            let stats = sim.machine().pcpu_stats(rtvmm_core::model::PcpuId(0));
            assert_eq!(
                stats.busy + stats.idle + stats.overhead,
                ms(1000),
                "{policy:?}"
            );
        }
    }
}
