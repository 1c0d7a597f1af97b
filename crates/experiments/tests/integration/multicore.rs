//! The many-pcpu experiments in `--quick` mode: latency (cyclictest in a domain) and
//! packet-latency (an I/O chain through a driver domain) — their files, and the facts that
//! follow from the set-ups.

use crate::util::{assert_structure, csv_bytes, run, Csv};

/// Facts that follow from the published set-ups, whatever the schedulers do: every
/// thread wakes the `--quick` 200 times; a thread's latency is at least 0 and, with
/// Domain-D's VCPUs never out of budget (40 µs of work per 10 ms), at most the other
/// three threads' work (30 µs) when nothing else competes; and where Domain-D has pcpu 1
/// to itself (cases 3 and 4) the thin domain's load changes nothing. With this machine's
/// wake delivery every latency is at least the preset's least delay.
#[test]
fn latency_quick_files_and_isolation_facts() {
    let (dir, report) = run("latency", |_| {});
    assert_structure(
        dir.path(),
        &report,
        &[(
            "latency.csv",
            &[
                "case",
                "setup",
                "load",
                "delivery",
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
    assert_eq!(
        csv.rows.len(),
        2 * 7 * 4,
        "deliveries × case-and-load runs × threads"
    );
    for row in &csv.rows {
        assert_eq!(csv.u64(row, "count"), 200, "{row:?}");
    }
    for (setup, load) in [("global-defaults", "idle"), ("global-tuned", "idle")] {
        for row in csv.select(&[("setup", setup), ("load", load), ("delivery", "none")]) {
            assert!(csv.f64(row, "max_us") <= 30.0, "{row:?}");
        }
    }
    for setup in ["partitioned", "pools"] {
        let of = |load| csv.select(&[("setup", setup), ("load", load), ("delivery", "none")]);
        let (idle, loaded) = (of("idle"), of("loaded"));
        let times = |rows: Vec<&Vec<String>>| -> Vec<Vec<String>> {
            rows.iter().map(|r| r[4..].to_vec()).collect()
        };
        assert_eq!(
            times(idle),
            times(loaded),
            "{setup}: Domain-D alone on pcpu 1"
        );
    }
    let measured = rtvmm_scenario::wake_delivery_preset("this-machine").expect("shipped");
    let rtvmm_core::wake::WakeRandom::Empirical { quantiles } = &measured.random else {
        panic!("an empirical preset")
    };
    let least = (measured.fixed + quantiles[0]).as_ns() as f64 / 1_000.0;
    let delivered = csv.select(&[("delivery", "this-machine")]);
    assert_eq!(delivered.len(), 7 * 4);
    for row in delivered {
        assert!(csv.f64(row, "min_us") >= least.floor(), "{row:?}");
    }
    let text = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(
        text.contains("T: 0 (    0) P: 0 I:10000 C:    200 Min:"),
        "cyclictest's line form"
    );
    assert!(text.contains("### Against the published setup"));
    assert!(report
        .findings
        .iter()
        .filter(|f| f.starts_with("check:"))
        .all(|f| f.ends_with("holds") && !f.ends_with("does not hold")));
    let (again, _) = run("latency", |o| o.jobs = 1);
    assert_eq!(
        csv_bytes(dir.path()),
        csv_bytes(again.path()),
        "same seed, same bytes"
    );
}

/// Without load nothing delays a ping but its own chain: each round trip takes exactly
/// rx 50 + delay 20 + front 100 + delay 20 + tx 50 = 240 µs, under every scheduler. Loads
/// only add; every ping is answered; the short run's pings are the long run's first. With
/// this machine's wake delivery each of a ping's three wakes waits at least the preset's
/// least delay, so no round trip is below 240 µs and three of it, and where nothing but the
/// chain delays a ping (every ping within 1 ms without delivery) the mean grows. (Credit
/// with all three domains CPU-bound is left out: there a ping waits for a 30 ms slice, and
/// the delivery moves when it arrives against the slices, which can shorten the wait.)
#[test]
fn packet_latency_quick_files_and_chain_bounds() {
    let (dir, report) = run("packet-latency", |_| {});
    assert_structure(
        dir.path(),
        &report,
        &[
            (
                "packet-latency.csv",
                &[
                    "scheduler",
                    "load",
                    "published_load",
                    "delivery",
                    "pings",
                    "answered",
                    "mean_ms",
                    "max_ms",
                    "std_dev_ms",
                    "within_1ms",
                ],
            ),
            (
                "packet-latency-samples.csv",
                &[
                    "scheduler",
                    "load",
                    "delivery",
                    "pings",
                    "reply",
                    "round_trip_us",
                ],
            ),
        ],
    );
    let csv = Csv::read(&dir.path().join("packet-latency.csv"));
    assert_eq!(
        csv.rows.len(),
        2 * 2 * 3 * 4,
        "deliveries × run lengths × schedulers × loads"
    );
    for row in &csv.rows {
        assert_eq!(csv.u64(row, "pings"), csv.u64(row, "answered"), "{row:?}");
        let (m, x, w) = (
            csv.f64(row, "mean_ms"),
            csv.f64(row, "max_ms"),
            csv.f64(row, "within_1ms"),
        );
        assert!(m >= 0.240 && x >= m, "{row:?}");
        assert!((0.0..=1.0).contains(&w), "{row:?}");
    }
    for row in csv.select(&[("load", "idle"), ("delivery", "none")]) {
        assert_eq!(
            (csv.f64(row, "mean_ms"), csv.f64(row, "max_ms")),
            (0.240, 0.240),
            "an idle machine answers in 240 µs: {row:?}"
        );
    }
    let samples = Csv::read(&dir.path().join("packet-latency-samples.csv"));
    assert_eq!(
        samples.rows.len(),
        2 * 3 * 4 * (5 + 10),
        "every ping's round trip"
    );
    let measured = rtvmm_scenario::wake_delivery_preset("this-machine").expect("shipped");
    let rtvmm_core::wake::WakeRandom::Empirical { quantiles } = &measured.random else {
        panic!("an empirical preset")
    };
    let least_us = 240.0 + 3.0 * (measured.fixed + quantiles[0]).as_ns() as f64 / 1_000.0;
    let delivered = samples.select(&[("delivery", "this-machine")]);
    assert_eq!(delivered.len(), 3 * 4 * (5 + 10));
    for row in delivered {
        assert!(
            samples.f64(row, "round_trip_us") >= least_us - 0.001,
            "{row:?}: below {least_us} µs"
        );
    }
    for none in csv.select(&[("delivery", "none"), ("within_1ms", "1.0000")]) {
        let cell = |name| none[csv.column(name)].as_str();
        let with = csv.select(&[
            ("scheduler", cell("scheduler")),
            ("load", cell("load")),
            ("delivery", "this-machine"),
            ("pings", cell("pings")),
        ]);
        assert_eq!(with.len(), 1, "{none:?}");
        assert!(
            csv.f64(with[0], "mean_ms") > csv.f64(none, "mean_ms"),
            "{none:?} / {:?}",
            with[0]
        );
    }
    let names: Vec<String> = report.figures().map(|f| f.svg.clone()).collect();
    for load in ["idle", "thin", "thin-driver", "all"] {
        for name in [
            format!("packet-latency-cdf-{load}.svg"),
            format!("packet-latency-cdf-{load}-this-machine.svg"),
        ] {
            assert!(names.contains(&name), "{name}: {names:?}");
        }
    }
    assert!(report
        .findings
        .iter()
        .filter(|f| f.starts_with("check:"))
        .all(|f| f.ends_with("holds") && !f.ends_with("does not hold")));
    let (again, _) = run("packet-latency", |o| o.jobs = 1);
    assert_eq!(
        csv_bytes(dir.path()),
        csv_bytes(again.path()),
        "same seed, same bytes"
    );
}
