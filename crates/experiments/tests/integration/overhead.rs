//! rtxen-overhead in quick mode.

use rtvmm_core::machine::Overheads;
use rtvmm_core::Nanos;

use crate::util::{assert_structure, run, Csv};

const COLUMNS: &[&str] = &[
    "policy",
    "duration_ns",
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
    assert_eq!(csv.rows.len(), 6);
    for row in &csv.rows {
        let ticks = csv.u64(row, "duration_ns") / 1_000_000;
        let calls = csv.u64(row, "do_schedule_calls");
        // The RT-Xen servers call do_schedule after every 1 ms tick; Credit (its own 10 ms
        // tick, which does not reschedule) and SEDF (event-driven) only when Xen's did:
        // fewer calls than ticks, at 70 % load with 25 tasks still many.
        if ["credit", "sedf"].contains(&row[0].as_str()) {
            assert!(calls < ticks && calls > ticks / 10, "{}: {calls}", row[0]);
        } else {
            assert!(calls >= ticks, "{}", row[0]);
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
