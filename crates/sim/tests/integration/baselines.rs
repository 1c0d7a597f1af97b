//! The baseline policies — Credit, SEDF, RTDS, ARINC 653 — on hand-derived schedules.
//!
//! Each test draws its timeline (ms) and asserts it exactly, then checks budgets, deadlines
//! or credits at chosen instants (after everything due at that instant was handled).
use crate::util::*;
use rtvmm_core::guest::{GuestScheduler, TaskSpec};
use rtvmm_core::model::{VcpuId, VcpuParams};
use rtvmm_core::policy::{
    Arinc653Table, CreditConfig, MinorFrame, PolicyConfig, PolicyKind, VcpuView,
};
use rtvmm_core::Nanos;
use rtvmm_sim::timeline::{timeline, Interval};
use rtvmm_sim::{Change, DomainSpec, Simulation, SystemSpec, TimedChange};

// ---------------------------------------------------------------------------------------
// Harness
// ---------------------------------------------------------------------------------------

fn dom(name: &str, vcpu: VcpuParams, tasks: Vec<TaskSpec>) -> DomainSpec {
    DomainSpec {
        name: name.to_string(),
        vcpu,
        guest: GuestScheduler::Rm,
        tasks,
    }
}

/// Budget (SEDF: slice) and period in ms, with or without extratime.
fn bp(budget_ms: u64, period_ms: u64, extratime: bool) -> VcpuParams {
    let mut p = VcpuParams::server(ms(budget_ms), ms(period_ms), 0);
    p.extratime = extratime;
    p
}

fn weight_cap(weight: u32, cap: u32) -> VcpuParams {
    let mut p = VcpuParams::server(ms(1), ms(10), 0);
    p.weight = weight;
    p.cap = cap;
    p
}

fn credit(timeslice_ms: u64, accounting_ms: u64) -> PolicyConfig {
    PolicyConfig::Credit(CreditConfig {
        timeslice: ms(timeslice_ms),
        accounting_period: ms(accounting_ms),
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
// Credit
// ---------------------------------------------------------------------------------------

/// Three equal CPU hogs, time slice 2 ms, accounting every 12 ms: they take turns, 2 ms
/// each, in wake order. Everyone wakes UNDER at 0 and is BOOSTed, but a BOOST VCPU does not
/// preempt another, and each loses BOOST when its slice ends. At each accounting tick each
/// is paid 12 × 256/768 = 4 ms, exactly what it ran: credits return to 0.
/// ```text
/// t(ms)  0    5    10   15   20
/// d1     ██    ██    ██    ██
/// d2       ██    ██    ██    ██
/// d3         ██    ██    ██    ██
/// ```
#[test]
fn credit_round_robin_with_the_timeslice() {
    let spec = system(
        credit(2, 12),
        vec![
            dom("d1", weight_cap(256, 0), vec![busy("a")]),
            dom("d2", weight_cap(256, 0), vec![busy("b")]),
            dom("d3", weight_cap(256, 0), vec![busy("c")]),
        ],
    );
    let (schedule, views, _) = run_observing(&spec, ms(24), &[ms(11), ms(13), ms(24)]);
    assert_schedule(
        &schedule,
        "0-2 d1, 2-4 d2, 4-6 d3, 6-8 d1, 8-10 d2, 10-12 d3, \
         12-14 d1, 14-16 d2, 16-18 d3, 18-20 d1, 20-22 d2, 22-24 d3",
    );
    let credits = |i: usize| views[i].iter().map(|v| v.credit).collect::<Vec<_>>();
    assert_eq!(
        credits(0),
        vec![cr(-4), cr(-4), cr(-3)],
        "debited by run time"
    );
    assert_eq!(
        credits(1),
        vec![cr(-1), cr(0), cr(0)],
        "paid 4 ms each at 12"
    );
    assert_eq!(credits(2), vec![cr(0), cr(0), cr(0)]);
}

/// Weights 512/256/256, time slice 2 ms, accounting every 12 ms. Shares per period: 6, 3,
/// 3 ms. Classes change only at accounting ticks (as in Xen), so whoever is UNDER after a
/// tick keeps the pcpu against OVER VCPUs until the next one.
/// ```text
/// t(ms)   0-12: round-robin, 4 ms each.  At 12: d1 −4+6 = +2 UNDER, d2, d3 −4+3 = −1 OVER
///        12-24: d1 alone (UNDER).        At 24: d1 2−12+6 = −4 OVER, d2, d3 −1+3 = +2 UNDER
///        24-36: d2, d3 take turns.       At 36: d1 −4+6 = +2 UNDER, d2, d3 2−6+3 = −1 OVER
///        36-48: d1 alone.
/// ```
#[test]
fn credit_weights_split_the_pool_and_classes_change_at_accounting() {
    let spec = system(
        credit(2, 12),
        vec![
            dom("d1", weight_cap(512, 0), vec![busy("a")]),
            dom("d2", weight_cap(256, 0), vec![busy("b")]),
            dom("d3", weight_cap(256, 0), vec![busy("c")]),
        ],
    );
    let (schedule, views, _) = run_observing(&spec, ms(48), &[ms(12), ms(24), ms(36)]);
    assert_schedule(
        &schedule,
        "0-2 d1, 2-4 d2, 4-6 d3, 6-8 d1, 8-10 d2, 10-12 d3, 12-24 d1, \
         24-26 d2, 26-28 d3, 28-30 d2, 30-32 d3, 32-34 d2, 34-36 d3, 36-48 d1",
    );
    let credits = |i: usize| views[i].iter().map(|v| v.credit).collect::<Vec<_>>();
    assert_eq!(credits(0), vec![cr(2), cr(-1), cr(-1)]);
    assert_eq!(credits(1), vec![cr(-4), cr(2), cr(2)]);
    assert_eq!(credits(2), vec![cr(2), cr(-1), cr(-1)]);
}

/// BOOST on wake. d1 is a CPU hog; d2 is mostly idle (1 ms jobs at 40 and 70). Time slice
/// and accounting period 30 ms, equal weights.
/// ```text
/// t(ms)  0        30  40 41        60  70 71       90      (not to scale)
/// d1     ████████████████  ████████████████  ██████████
/// d2                     ██                ██
/// ```
/// At 30 only d1 is active (d2 neither ran nor has work nor owes): paid 30 → credit 0,
/// UNDER. At 40 d2 wakes UNDER → BOOST and preempts d1 at once. At 60 both are active
/// (d2 ran): 15 ms each — d1 0−29+15 = −14 (OVER), d2 0−1+15 = +14. At 70 d2 wakes UNDER
/// again → BOOST, and preempts the OVER hog at once.
#[test]
fn credit_boost_on_wake_preempts_a_cpu_hog() {
    let spec = system(
        credit(30, 30),
        vec![
            dom("d1", weight_cap(256, 0), vec![busy("hog")]),
            dom("d2", weight_cap(256, 0), vec![jobs_at("io", &[40, 70], 1)]),
        ],
    );
    let (schedule, views, _) = run_observing(&spec, ms(90), &[ms(30), ms(60), ms(90)]);
    assert_schedule(&schedule, "0-40 d1, 40-41 d2, 41-70 d1, 70-71 d2, 71-90 d1");
    let credits = |i: usize| views[i].iter().map(|v| v.credit).collect::<Vec<_>>();
    assert_eq!(credits(0), vec![cr(0), cr(0)], "d2 inactive: not paid");
    assert_eq!(credits(1), vec![cr(-14), cr(14)]);
    // d1: −14 −10 −19 +15; d2: 14 −1 +15.
    assert_eq!(credits(2), vec![cr(-28), cr(28)]);
}

/// No BOOST while OVER. Weights d1 512, d2 256 (shares 20 and 10 ms per 30 ms period); time
/// slice 30 ms. d1 is a hog; d2 has a 25 ms job at 0 and a 1 ms job at 65.
/// ```text
/// t(ms)  0          30        55          65          90 91      100   (not to scale)
/// d1     ████████████           ██████████████████████████  ███████
/// d2                 ██████████            (waits)       ██
/// ```
/// Both wake at 0 BOOSTed; d1 runs first (wake order) for its whole slice. At 30: d1
/// −30+20 = −10 OVER, d2 0+10 = +10 UNDER → d2 runs its job to 55. At 60: d1 −10−5+20 = +5
/// UNDER, d2 10−25+10 = −5 OVER. d2 wakes at 65 OVER: no BOOST, no preemption; it waits
/// until the tick at 90 makes it UNDER (−5+10) and d1 OVER (5−30+20 = −5).
#[test]
fn credit_no_boost_for_an_over_vcpu() {
    let spec = system(
        credit(30, 30),
        vec![
            dom("d1", weight_cap(512, 0), vec![busy("hog")]),
            dom(
                "d2",
                weight_cap(256, 0),
                vec![jobs_at("batch", &[0], 25), jobs_at("io", &[65], 1)],
            ),
        ],
    );
    let (schedule, views, _) = run_observing(&spec, ms(100), &[ms(30), ms(61), ms(90)]);
    assert_schedule(
        &schedule,
        "0-30 d1, 30-55 d2, 55-90 d1, 90-91 d2, 91-100 d1",
    );
    let credits = |i: usize| views[i].iter().map(|v| v.credit).collect::<Vec<_>>();
    assert_eq!(credits(0), vec![cr(-10), cr(10)]);
    assert_eq!(credits(1), vec![cr(4), cr(-5)]);
    assert_eq!(credits(2), vec![cr(-5), cr(5)]);
}

/// Cap parking. d1 is a hog with cap 25 % (5 ms per 20 ms accounting period); d2 has 5 ms
/// jobs at 0 and 21. Time slice 10 ms.
/// ```text
/// t(ms)  0    5    10   15   20   25   30   35   40   45   50   55   60
/// d1     █████               █     ████          █████
/// d2          █████           █████
/// idle             ██████████          ██████████     ███████████████
/// ```
/// d1 runs its 5 ms and is parked: the pcpu idles 10-20 although d1 has work. At 20 it is
/// unparked (and paid min(10, cap 5) = 5 → credit 0); d2 (paid 10 → +5, UNDER) wakes at 21
/// BOOSTed and preempts; d1 uses its last 4 ms 26-30 and is parked again.
#[test]
fn credit_cap_parks_until_the_next_accounting() {
    let spec = system(
        credit(10, 20),
        vec![
            dom("d1", weight_cap(256, 25), vec![busy("hog")]),
            dom("d2", weight_cap(256, 0), vec![jobs_at("j", &[0, 21], 5)]),
        ],
    );
    let (schedule, views, _) = run_observing(&spec, ms(60), &[ms(20), ms(60)]);
    assert_schedule(
        &schedule,
        "0-5 d1, 5-10 d2, 10-20 idle, 20-21 d1, 21-26 d2, 26-30 d1, 30-40 idle, \
         40-45 d1, 45-60 idle",
    );
    let credits = |i: usize| views[i].iter().map(|v| v.credit).collect::<Vec<_>>();
    assert_eq!(credits(0), vec![cr(0), cr(5)]);
    // At 60 d2 has neither run since 40 nor work: inactive, not paid.
    assert_eq!(credits(1), vec![cr(0), cr(10)]);
}

// ---------------------------------------------------------------------------------------
// SEDF
// ---------------------------------------------------------------------------------------

/// EDF order. d1: slice 5, period 10; d2: slice 2, period 4; both always busy.
/// ```text
/// t(ms)  0    5    10   15   20
/// d1       ██  ███  █  ████    ██
/// d2     ██  ██   ██ ██    ████
/// ```
/// At 8 d2 is replenished with deadline 12 but d1's deadline 10 is earlier: d1 goes on
/// (rate-monotonic would have run d2). At 16 both have deadline 20: the smaller VCPU id (d1)
/// goes on. At 20 d2 (deadline 24) goes before d1 (deadline 30).
#[test]
fn sedf_runs_earliest_deadline_first() {
    let spec = system(
        PolicyConfig::Sedf,
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
fn sedf_keeps_the_slice_of_a_blocked_vcpu() {
    let spec = system(
        PolicyConfig::Sedf,
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
/// ```text
/// t(ms)  0   1   2   3   4   5   6   7   8   9  10
/// d1     ███████                 ███████
/// d2             ███                     ███
/// idle               ███████                 ███████
/// ```
#[test]
fn sedf_extratime_off_idles_when_slices_are_spent() {
    let (schedule, _, _) = run_observing(&sedf_extra_case(false, false), ms(10), &[]);
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
fn sedf_extratime_vcpu_runs_in_idle_time() {
    let (schedule, views, _) = run_observing(&sedf_extra_case(true, false), ms(10), &[ms(4)]);
    assert_schedule(&schedule, "0-2 d1, 2-3 d2, 3-7 d1, 7-8 d2, 8-10 d1");
    assert_eq!(
        budget_deadline(&views[0][0]),
        bd(ms(0), ms(5)),
        "extra time consumes no slice"
    );
}

/// Extratime on for both: round-robin, 500 µs each, in the idle part of each period.
#[test]
fn sedf_extratime_vcpus_take_turns() {
    let (schedule, _, _) = run_observing(&sedf_extra_case(true, true), ms(10), &[]);
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
        PolicyConfig::Rtds,
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
        PolicyConfig::Rtds,
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
/// d1: budget 2, period 5, priority 1; d2: budget 4, period 10, priority 2, extratime (which
/// the Deferrable Server ignores); both always busy.
/// ```text
/// t(ms)  0-30: Deferrable — each 10 ms: d1 2, d2 3, d1 2, d2 1, idle 2.
///        30- : RTDS (VCPUs start afresh at 30: d1 deadline 35, d2 deadline 40)
///              30-32 d1, 32-35 d2, 35-37 d1 (deadline 40 = d2's, smaller id), 37-38 d2,
///              38-40 d2 on extratime where the Deferrable Server idled; then again.
/// ```
#[test]
fn hot_swap_from_deferrable_to_rtds_keeps_work() {
    let mut d2 = VcpuParams::server(ms(4), ms(10), 2);
    d2.extratime = true;
    let mut spec = system(
        PolicyConfig::Deferrable,
        vec![
            dom("d1", VcpuParams::server(ms(2), ms(5), 1), vec![busy("a")]),
            dom("d2", d2, vec![busy("b")]),
        ],
    );
    spec.changes.push(TimedChange {
        at: ms(30),
        change: Change::SwapPolicy(PolicyConfig::Rtds),
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
        credit(1, 30),
        credit(30, 30),
        PolicyConfig::Sedf,
        PolicyConfig::Rtds,
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
