//! rtxen-overhead in quick mode.

use rtvmm_core::machine::Overheads;
use rtvmm_core::Nanos;

use crate::util::{assert_structure, run, Csv};

const COLUMNS: &[&str] = &[
    "policy",
    "duration_ns",
    "busy_ns",
    "do_schedule_calls",
    "do_schedule_per_s",
    "context_switches",
    "context_switches_per_s",
    "overhead_ns",
    "overhead_share",
    "deadline_miss_ratio",
];

#[test]
fn counts_follow_the_tick_and_overhead_is_the_sum_of_its_costs() {
    let (dir, report) = run("rtxen-overhead", |_| {});
    assert_structure(dir.path(), &report, &[("overhead.csv", COLUMNS)]);
    let csv = Csv::read(&dir.path().join("overhead.csv"));
    // Six policies, Credit twice (Xen 4.0's defaults and 1 ms).
    let names: Vec<&str> = csv.rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        names,
        [
            "deferrable",
            "periodic",
            "polling",
            "sporadic",
            "credit",
            "credit-1ms",
            "sedf"
        ]
    );
    assert!(report
        .sections
        .iter()
        .any(|s| matches!(s, rtvmm_experiments::report::Section::Data { file, .. } if file == "offsets.csv")));
    for row in &csv.rows {
        let ticks = csv.u64(row, "duration_ns") / 1_000_000;
        let calls = csv.u64(row, "do_schedule_calls");
        let busy = csv.u64(row, "busy_ns");
        match row[0].as_str() {
            // Credit reschedules at the end of each slice, on block and on a preempting
            // wake; its tick only charges. A VCPU never runs longer than one slice without
            // a do_schedule, so calls ≥ busy ÷ slice (30 ms at Xen 4.0's defaults, 1 ms at
            // the 1 ms setting) — and at 70 % load some time is busy.
            "credit" => {
                assert!(busy > 0);
                assert!(calls >= busy / 30_000_000, "credit: {calls}");
                assert!(calls < ticks, "credit: {calls} calls, {ticks} ticks");
            }
            "credit-1ms" => assert!(calls >= busy / 1_000_000, "credit-1ms: {calls}"),
            // SEDF is event-driven: fewer calls than ticks, at 70 % load with 25 tasks
            // still many.
            "sedf" => assert!(calls < ticks && calls > ticks / 10, "sedf: {calls}"),
            // The RT-Xen servers call do_schedule after every 1 ms tick.
            server => assert!(calls >= ticks, "{server}"),
        }
        // A switch needs a call.
        assert!(csv.u64(row, "context_switches") <= calls);
        // No overhead model by default.
        assert_eq!(csv.u64(row, "overhead_ns"), 0);
    }

    // With costs: overhead time = calls × cost + switches × cost (the last charge may be
    // cut by the end of the run).
    let costs = Overheads {
        do_schedule: Nanos::from_us(10),
        context_switch: Nanos::from_us(15),
        ..Default::default()
    };
    let (dir, _) = run("rtxen-overhead", |o| {
        o.overheads = Some(costs);
        o.duration = Some(Nanos::from_ms(500));
    });
    let csv = Csv::read(&dir.path().join("overhead.csv"));
    for row in &csv.rows {
        let expected =
            csv.u64(row, "do_schedule_calls") * 10_000 + csv.u64(row, "context_switches") * 15_000;
        let got = csv.u64(row, "overhead_ns");
        assert!(
            got <= expected && expected - got <= 25_000,
            "{}: {got} vs {expected}",
            row[0]
        );
    }
}
