//! rtxen-capacity in quick mode.

use crate::util::{assert_structure, csv_bytes, run, short, Csv};

const RUNS_COLUMNS: &[&str] = &[
    "pattern",
    "load_permille",
    "policy",
    "seed",
    "duration_ns",
    "jobs",
    "missed",
    "in_flight",
    "deadline_miss_ratio",
    "dmr_d1",
    "dmr_d2",
    "dmr_d3",
    "dmr_d4",
    "dmr_d5",
    "do_schedule_calls",
    "context_switches",
];

const SERVERS: [&str; 4] = ["deferrable", "periodic", "polling", "sporadic"];

#[test]
fn quick_capacity_files_facts_and_same_bytes_for_the_same_seed() {
    let (dir, report) = run("rtxen-capacity", short(3000));
    assert_structure(
        dir.path(),
        &report,
        &[
            ("capacity_runs.csv", RUNS_COLUMNS),
            ("capacity.csv", &["pattern", "policy", "capacity_permille"]),
        ],
    );
    for stem in ["dmr_decreasing", "dmr_even", "dmr_increasing", "capacity"] {
        assert!(
            report.figures().any(|f| f.png == format!("{stem}.png")),
            "{stem}"
        );
    }
    // 3 patterns × 5 loads × 7 policy runs (Credit twice: Xen 4.0's defaults and 1 ms).
    let runs = Csv::read(&dir.path().join("capacity_runs.csv"));
    assert_eq!(runs.rows.len(), 105);
    assert_eq!(report.runs_total, 105);
    assert_eq!(runs.select(&[("policy", "credit-1ms")]).len(), 15);
    // Every system's domains boot at offsets below their VCPU's period, the same for every
    // policy (one row per system and domain).
    let offsets = Csv::read(&dir.path().join("offsets.csv"));
    assert_eq!(offsets.rows.len(), 3 * 5 * 5);
    for row in &offsets.rows {
        assert!(
            offsets.u64(row, "offset_ns") < offsets.u64(row, "period_ns"),
            "{row:?}"
        );
    }

    // Every run is within [0, 1] and counts its jobs.
    for row in &runs.rows {
        let dmr = runs.f64(row, "deadline_miss_ratio");
        assert!((0.0..=1.0).contains(&dmr));
        assert!(runs.u64(row, "missed") <= runs.u64(row, "jobs"));
    }

    // The capacity table is what the runs say: the largest α with DMR < 5 %.
    let capacity = Csv::read(&dir.path().join("capacity.csv"));
    for row in &capacity.rows {
        let (pattern, policy) = (&row[0], &row[1]);
        let expected = runs
            .select(&[("pattern", pattern), ("policy", policy)])
            .iter()
            .filter(|r| runs.f64(r, "deadline_miss_ratio") < 0.05)
            .map(|r| runs.u64(r, "load_permille"))
            .max();
        assert_eq!(
            row[2],
            expected.map_or_else(String::new, |c| c.to_string()),
            "{pattern}/{policy}"
        );
    }

    // At α = 30 % no fixed-priority server misses, in any pattern. (An observation of this
    // seed, kept as a regression guard; the stronger "no miss at any α ≤ 50 %" does not
    // hold, see the in-phase fact below.)
    for pattern in ["decreasing", "even", "increasing"] {
        for policy in SERVERS {
            let row = runs.select(&[
                ("pattern", pattern),
                ("policy", policy),
                ("load_permille", "300"),
            ]);
            assert_eq!(row.len(), 1);
            assert_eq!(runs.u64(row[0], "missed"), 0, "{pattern}/{policy} at 30%");
        }
    }

    // Theory, in phase (every domain booted at 0): Periodic Server, increasing pattern,
    // α = 70 %. d1–d4 (period 40 ms, budgets 2 + 4 + 6 + 8 = 20 ms, priorities 1–4) hold
    // the pcpu, running or idling their budgets, for [0, 20) of every 40 ms; d5 (period
    // 20 ms, budget 10 ms, lowest priority) is served only in [20, 30): 25 % of the pcpu.
    // Its load is 50 % × 70 % = 35 %, so its backlog grows and it misses.
    let (in_phase, _) = run("rtxen-capacity", |o| {
        o.duration = Some(rtvmm_core::Nanos::from_ms(3000));
        o.policies = Some(vec![rtvmm_core::policy::PolicyKind::Periodic]);
        o.in_phase = true;
    });
    let in_phase_runs = Csv::read(&in_phase.path().join("capacity_runs.csv"));
    let ptps = in_phase_runs.select(&[
        ("pattern", "increasing"),
        ("policy", "periodic"),
        ("load_permille", "700"),
    ]);
    assert!(
        in_phase_runs.f64(ptps[0], "dmr_d5") > 0.0,
        "d5 should starve under PTPS"
    );
    let zero = Csv::read(&in_phase.path().join("offsets.csv"));
    assert!(zero.rows.iter().all(|r| zero.u64(r, "offset_ns") == 0));
    let md = std::fs::read_to_string(in_phase.path().join("report.md")).unwrap();
    assert!(md.contains("--in-phase") && md.contains("in phase"), "{md}");

    // The findings name every policy's capacity per pattern.
    assert_eq!(
        report
            .findings
            .iter()
            .filter(|f| f.starts_with("capacity"))
            .count(),
        3
    );

    // Same seed: the same bytes in every CSV, whatever the thread timing (run it again on
    // one thread).
    let (again, _) = run("rtxen-capacity", |o| {
        o.duration = Some(rtvmm_core::Nanos::from_ms(3000));
        o.jobs = 1;
    });
    assert_eq!(csv_bytes(dir.path()), csv_bytes(again.path()));
    // Another seed: other task sets, other numbers.
    let (other, _) = run("rtxen-capacity", |o| {
        o.duration = Some(rtvmm_core::Nanos::from_ms(3000));
        o.seed = 2;
    });
    assert_ne!(
        std::fs::read(dir.path().join("capacity_runs.csv")).unwrap(),
        std::fs::read(other.path().join("capacity_runs.csv")).unwrap()
    );
}
