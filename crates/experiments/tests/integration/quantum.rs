//! rtxen-quantum in quick mode (shortened: 3 jobs per point).

use crate::util::{assert_structure, run, short, Csv};

const COLUMNS: &[&str] = &[
    "overheads",
    "policy",
    "quantum_ns",
    "cost_ms",
    "utilisation",
    "d1_jobs",
    "d1_missed",
    "d1_deadline_miss_ratio",
    "d1_responsiveness_max",
    "do_schedule_calls",
    "context_switches",
    "overhead_share",
];

#[test]
fn quantum_sweep_files_and_facts() {
    let (dir, report) = run("rtxen-quantum", short(300));
    assert_structure(dir.path(), &report, &[("quantum.csv", COLUMNS)]);
    // One figure per set of overhead costs (xen, host).
    assert_eq!(report.figures().count(), 2);
    let csv = Csv::read(&dir.path().join("quantum.csv"));
    // 2 cost sets × 3 quanta × 10 costs.
    assert_eq!(csv.rows.len(), 60);
    // 1 ms quantum, xen costs: domain 1 is the highest-priority server with half the
    // pcpu; the 1.65 µs do_schedule and switch into it come out of its budget, so it
    // delivers at most 998.35 µs per 2 ms (and at least 998.05, see below): a task needing
    // at most 45 % never misses, one needing 50 % does.
    for row in csv.select(&[("overheads", "xen"), ("quantum_ns", "1000000")]) {
        let cost = csv.u64(row, "cost_ms");
        if cost <= 45 {
            assert_eq!(csv.u64(row, "d1_missed"), 0, "cost {cost} ms");
        } else if cost == 50 {
            assert!(
                csv.u64(row, "d1_missed") > 0,
                "cost {cost} ms: budget pays for switches"
            );
        }
    }
    // The same reasoning for the other quanta with staggered boot offsets: in each of its
    // periods (2q) domain 1 pays at least one do_schedule and one switch into it (d2 is
    // always busy and runs in between) and at most that plus the do_schedule of every tick
    // within its q of budget (at most two). Its supply per 2q is therefore between
    // q − switch − 3·do_schedule and q − switch − do_schedule, and the first job (released
    // with d1's first period, 50 periods in its 100 ms) misses exactly when its cost is
    // above what those periods supply.
    //   xen, 10 µs: 40.25 % … 41.75 %  → no miss at ≤ 40 %, a miss at ≥ 45 %;
    //   host, 1 ms: 47.75 % … 48.75 % → no miss at ≤ 45 %, a miss at 50 %;
    //   host, 100 µs: 27.5 % … 37.5 % → no miss at ≤ 25 %, a miss at ≥ 40 %.
    for (costs, quantum, safe, missing) in [
        ("xen", "10000", 40, 45),
        ("host", "1000000", 45, 50),
        ("host", "100000", 25, 40),
    ] {
        for row in csv.select(&[("overheads", costs), ("quantum_ns", quantum)]) {
            let cost = csv.u64(row, "cost_ms");
            let missed = csv.u64(row, "d1_missed");
            if cost <= safe {
                assert_eq!(missed, 0, "{costs} q={quantum} cost {cost} ms");
            } else if cost >= missing {
                assert!(missed > 0, "{costs} q={quantum} cost {cost} ms");
            }
        }
    }
    // 10 µs quantum, host costs: a 10 µs do_schedule on every 10 µs tick leaves no time
    // to run anything, so domain 1 misses even at the smallest cost.
    for row in csv.select(&[("overheads", "host"), ("quantum_ns", "10000")]) {
        assert!(csv.u64(row, "d1_missed") > 0, "cost {} ms", row[3]);
        assert!(csv.f64(row, "overhead_share") > 0.9);
    }
    // Finer quanta cost more scheduler calls.
    let calls = |q: &str| {
        let rows = csv.select(&[("overheads", "xen"), ("quantum_ns", q), ("cost_ms", "5")]);
        csv.u64(rows[0], "do_schedule_calls")
    };
    assert!(calls("10000") > calls("100000") && calls("100000") > calls("1000000"));
    assert_eq!(report.findings.len(), 6);
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(
        md.contains("paid from the budget") || md.contains("from its budget"),
        "{md}"
    );
}
