//! The many-pcpu experiments in `--quick` mode: latency (cyclictest in a domain) and
//! packet-latency (an I/O chain through a driver domain) — their files, and the facts that
//! follow from the set-ups.

use crate::util::{assert_structure, csv_bytes, run, Csv};

/// A driver domain alone on its pcpu waits only for its own threads: four threads of
/// 10 µs released together, so the last waits 3 × 10 µs. That holds in every set-up where
/// no other domain competes (the others idle, or elsewhere: partitioned, or another pool);
/// with busy domains under global EDF the driver may wait for their budgets.
#[test]
fn latency_quick_files_and_isolation_facts() {
    let (dir, report) = run("latency", |_| {});
    assert_structure(
        dir.path(),
        &report,
        &[(
            "latency.csv",
            &[
                "setup",
                "load",
                "thread",
                "interval_us",
                "count",
                "min_us",
                "act_us",
                "avg_us",
                "max_us",
            ],
        )],
    );
    let csv = Csv::read(&dir.path().join("latency.csv"));
    assert_eq!(csv.rows.len(), 4 * 2 * 4, "set-ups × loads × threads");
    let max = csv.column("max_us");
    let count = csv.column("count");
    for (setup, load) in [
        ("rtds-global", "idle"),
        ("rtds-global-400us", "idle"),
        ("rtds-global-400us", "loaded"),
        ("rtds-partitioned", "idle"),
        ("rtds-partitioned", "loaded"),
        ("credit+rtds", "idle"),
        ("credit+rtds", "loaded"),
    ] {
        for row in csv.select(&[("setup", setup), ("load", load)]) {
            let m: f64 = row[max].parse().unwrap();
            assert!(
                m <= 30.0,
                "{setup}/{load}: a driver not competing waits ≤ 30 µs: {row:?}"
            );
        }
    }
    // 2 s of 10–11.5 ms timers, starting within the first 10 ms: about 170–200 each.
    for row in &csv.rows {
        let c: u64 = row[count].parse().unwrap();
        assert!((165..=200).contains(&c), "{row:?}");
    }
    let text = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(
        text.contains("T: 0 (driver/T0) P: 0 I:10000 C:"),
        "cyclictest's line form"
    );
    let (again, _) = run("latency", |o| o.jobs = 1);
    assert_eq!(
        csv_bytes(dir.path()),
        csv_bytes(again.path()),
        "same seed, same bytes"
    );
}

/// Without load nothing delays a packet but the packets before it: each round trip takes
/// at least rx 50 + delay 20 + front 100 + delay 20 + tx 50 = 240 µs. Loads only add.
#[test]
fn packet_latency_quick_files_and_chain_bounds() {
    let (dir, report) = run("packet-latency", |_| {});
    assert_structure(
        dir.path(),
        &report,
        &[(
            "packet-latency.csv",
            &[
                "scheduler",
                "load_percent",
                "packets",
                "mean_ms",
                "max_ms",
                "std_dev_ms",
                "within_1ms",
            ],
        )],
    );
    let csv = Csv::read(&dir.path().join("packet-latency.csv"));
    assert_eq!(csv.rows.len(), 3 * 4, "schedulers × loads");
    let (mean, maxc, within, packets) = (
        csv.column("mean_ms"),
        csv.column("max_ms"),
        csv.column("within_1ms"),
        csv.column("packets"),
    );
    for row in &csv.rows {
        let m: f64 = row[mean].parse().unwrap();
        let x: f64 = row[maxc].parse().unwrap();
        let w: f64 = row[within].parse().unwrap();
        assert!(m >= 0.240 && x >= m, "{row:?}");
        assert!((0.0..=1.0).contains(&w), "{row:?}");
        assert!(row[packets].parse::<u64>().unwrap() > 100, "{row:?}");
    }
    for scheduler in ["credit", "rtds-partitioned", "rtds-global"] {
        let idle = csv.select(&[("scheduler", scheduler), ("load_percent", "0")]);
        let m: f64 = idle[0][mean].parse().unwrap();
        assert!(
            m < 0.3,
            "{scheduler}: an idle machine answers in about 240 µs: {m}"
        );
    }
    let (again, _) = run("packet-latency", |o| o.jobs = 1);
    assert_eq!(
        csv_bytes(dir.path()),
        csv_bytes(again.path()),
        "same seed, same bytes"
    );
}
