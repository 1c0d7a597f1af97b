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
    // pcpu; the 1.65 µs switch into it comes out of its budget, so it delivers 998.35 µs
    // per 2 ms: a task needing at most 45 % never misses, one needing 50 % does.
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
}
