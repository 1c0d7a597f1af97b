//! The 2012 (CSA) experiments in `--quick` mode: csa-periods, csa-etf, csa-arinc — their
//! files, and the facts that follow from the theory rather than from the papers' numbers.

use std::collections::BTreeMap;

use crate::util::{assert_structure, csv_bytes, run, short, Csv};
use rtvmm_core::Nanos;

const PERIODS_RUNS: &[&str] = &[
    "u_w_permille",
    "period_min_ms",
    "period_max_ms",
    "policy",
    "seed",
    "duration_ns",
    "u_rm",
    "analysis_schedulable",
    "jobs",
    "missed",
    "in_flight",
    "deadline_miss_ratio",
    "lowest_domain",
    "lowest_jobs",
    "lowest_finished",
    "lowest_missed",
    "lowest_deadline_miss_ratio",
    "dmr_d1",
    "dmr_d2",
    "dmr_d3",
    "dmr_d4",
    "dmr_d5",
    "responsiveness_p50",
    "responsiveness_p99",
    "responsiveness_max",
];

const INTERFACES: &[&str] = &[
    "u_w_permille",
    "period_min_ms",
    "period_max_ms",
    "domain",
    "tasks",
    "utilisation",
    "interface_period_ms",
    "interface_budget_ms",
    "bandwidth",
    "overhead",
    "priority",
    "schedulable_on_interface",
    "root_response_ms",
];

const SYSTEMS: &[&str] = &[
    "u_w_permille",
    "period_min_ms",
    "period_max_ms",
    "tasks",
    "u_w",
    "u_rm",
    "u_rm_minus_u_w",
    "root_schedulable",
    "schedulable",
];

const PERIODS_QUANTILES: &[&str] = &[
    "u_w_permille",
    "period_min_ms",
    "period_max_ms",
    "policy",
    "scope",
    "domain",
    "samples",
    "quantile",
    "responsiveness",
];

/// Checks that a quantile CSV's values never decrease within one curve (`key` columns).
fn assert_quantiles_monotone(csv: &Csv, key: &[&str], value: &str) {
    let mut last: BTreeMap<Vec<String>, f64> = BTreeMap::new();
    for row in &csv.rows {
        let k: Vec<String> = key.iter().map(|c| row[csv.column(c)].clone()).collect();
        let v = csv.f64(row, value);
        if let Some(prev) = last.get(&k) {
            assert!(v >= *prev, "{k:?}: quantiles decrease ({prev} then {v})");
        }
        last.insert(k, v);
    }
}

/// The domains (`name` column) the analysis guarantees, with their task-set `key`:
/// schedulable on their interface and delivered by the root.
fn guaranteed(interfaces: &Csv, key: &[&str], name: &str) -> Vec<(Vec<String>, String)> {
    interfaces
        .rows
        .iter()
        .filter(|r| {
            r[interfaces.column("schedulable_on_interface")] == "true"
                && !r[interfaces.column("root_response_ms")].is_empty()
        })
        .map(|r| {
            (
                key.iter()
                    .map(|c| r[interfaces.column(c)].clone())
                    .collect(),
                r[interfaces.column(name)].clone(),
            )
        })
        .collect()
}

#[test]
fn csa_periods_and_csa_etf_quick_files_theory_and_same_bytes_for_the_same_seed() {
    let (dir, report) = run("csa-periods", short(5000));
    assert_structure(
        dir.path(),
        &report,
        &[
            ("runs.csv", PERIODS_RUNS),
            ("interfaces.csv", INTERFACES),
            ("systems.csv", SYSTEMS),
            ("responsiveness_quantiles.csv", PERIODS_QUANTILES),
        ],
    );
    // 2 U_W × 2 ranges × 3 policies; a CDF per set and scope, a DMR figure per range.
    let runs = Csv::read(&dir.path().join("runs.csv"));
    assert_eq!(runs.rows.len(), 12);
    assert_eq!(report.runs_total, 12);
    for stem in [
        "overhead",
        "dmr_550-650",
        "dmr_100-1100",
        "cdf_550-650_800_all",
        "cdf_550-650_800_lowest",
        "cdf_100-1100_1000_all",
        "cdf_100-1100_1000_lowest",
    ] {
        assert!(
            report.figures().any(|f| f.png == format!("{stem}.png")),
            "{stem}"
        );
    }
    for row in &runs.rows {
        let dmr = runs.f64(row, "deadline_miss_ratio");
        assert!((0.0..=1.0).contains(&dmr));
        assert!(runs.u64(row, "missed") <= runs.u64(row, "jobs"));
        assert!(runs.u64(row, "lowest_finished") <= runs.u64(row, "lowest_jobs") + 1);
    }

    // Interfaces: bw(Γ) ≥ bw(W) for every domain, so U_RM ≥ U_W; at U_W = 1 the
    // interfaces cannot fit (U_RM ≥ U_W ≥ 1) and the experiment still ran and says so.
    let systems = Csv::read(&dir.path().join("systems.csv"));
    assert_eq!(systems.rows.len(), 4);
    for row in &systems.rows {
        let (u_w, u_rm) = (systems.f64(row, "u_w"), systems.f64(row, "u_rm"));
        assert!(u_rm >= u_w - 1e-9, "{row:?}");
        assert!(systems.f64(row, "u_rm_minus_u_w") >= -1e-9);
        if row[0] == "1000" {
            assert!(u_w >= 1.0 - 1e-9 && u_rm >= 1.0, "{row:?}");
            assert_eq!(row[systems.column("schedulable")], "false");
        }
    }
    let interfaces = Csv::read(&dir.path().join("interfaces.csv"));
    for row in &interfaces.rows {
        assert!(interfaces.f64(row, "overhead") >= -1e-9, "{row:?}");
        let (p, b) = (
            interfaces.u64(row, "interface_period_ms"),
            interfaces.u64(row, "interface_budget_ms"),
        );
        assert!(b >= 1 && b <= p, "{row:?}");
    }
    // Priorities are rate-monotonic by interface period.
    for key in systems.rows.iter().map(|r| (&r[0], &r[1])) {
        let mut domains: Vec<(u64, u64)> = interfaces
            .select(&[("u_w_permille", key.0), ("period_min_ms", key.1)])
            .iter()
            .map(|r| {
                (
                    interfaces.u64(r, "priority"),
                    interfaces.u64(r, "interface_period_ms"),
                )
            })
            .collect();
        domains.sort();
        assert!(domains.windows(2).all(|w| w[0].1 <= w[1].1), "{domains:?}");
    }

    // Theory: a domain schedulable on its interface, whose interface the root delivers,
    // misses nothing under PTPS (whatever the lower-priority domains do).
    let sure = guaranteed(&interfaces, &["u_w_permille", "period_min_ms"], "domain");
    assert!(
        sure.len() >= 5,
        "vacuous: {} guaranteed domains",
        sure.len()
    );
    for (key, domain) in &sure {
        let row = runs.select(&[
            ("u_w_permille", &key[0]),
            ("period_min_ms", &key[1]),
            ("policy", "ptps"),
        ]);
        assert_eq!(row.len(), 1);
        let column = format!("dmr_{domain}");
        assert_eq!(runs.f64(row[0], &column), 0.0, "{key:?} {domain}");
    }
    assert!(report
        .findings
        .iter()
        .any(|f| f.starts_with("check: every")));

    // CRPS lends idle budget down: the lowest-priority domain never finishes fewer jobs
    // than under PTPS on the same task set.
    for key in systems.rows.iter().map(|r| (&r[0], &r[1])) {
        let of = |policy: &str| {
            let row = runs.select(&[
                ("u_w_permille", key.0),
                ("period_min_ms", key.1),
                ("policy", policy),
            ]);
            runs.u64(row[0], "lowest_finished")
        };
        assert!(of("crps") >= of("ptps"), "{key:?}");
    }

    let quantiles = Csv::read(&dir.path().join("responsiveness_quantiles.csv"));
    assert_quantiles_monotone(
        &quantiles,
        &["u_w_permille", "period_min_ms", "policy", "scope"],
        "responsiveness",
    );

    // Same seed, one thread: the same bytes.
    let (again, _) = run("csa-periods", |o| {
        o.duration = Some(Nanos::from_ms(5000));
        o.jobs = 1;
    });
    assert_eq!(csv_bytes(dir.path()), csv_bytes(again.path()));

    // csa-etf shares the task sets: checked here, against these runs.
    check_csa_etf(&runs);
}

/// csa-etf in quick mode (5 s runs); `periods` is csa-periods' runs.csv with the same
/// seed and duration.
fn check_csa_etf(periods: &Csv) {
    let (dir, report) = run("csa-etf", short(5000));
    let mut runs_columns = vec![
        "u_w_permille",
        "etf_permille",
        "policy",
        "seed",
        "duration_ns",
        "u_rm",
        "jobs",
        "missed",
        "in_flight",
        "deadline_miss_ratio",
        "lowest_domain",
        "lowest_jobs",
        "lowest_finished",
        "lowest_missed",
        "lowest_deadline_miss_ratio",
    ];
    runs_columns.extend(["dmr_d1", "dmr_d2", "dmr_d3", "dmr_d4", "dmr_d5"]);
    assert_structure(
        dir.path(),
        &report,
        &[
            ("runs.csv", &runs_columns),
            (
                "box_stats.csv",
                &[
                    "u_w_permille",
                    "etf_permille",
                    "policy",
                    "scope",
                    "samples",
                    "whisker_low",
                    "q1",
                    "median",
                    "q3",
                    "whisker_high",
                    "outliers",
                    "max",
                ],
            ),
            (
                "interfaces.csv",
                &[
                    "u_w_permille",
                    "domain",
                    "tasks",
                    "utilisation",
                    "interface_period_ms",
                    "interface_budget_ms",
                    "priority",
                    "etf_applies",
                ],
            ),
        ],
    );
    for stem in ["box_800_all", "box_1000_lowest", "dmr_all", "dmr_lowest"] {
        assert!(
            report.figures().any(|f| f.png == format!("{stem}.png")),
            "{stem}"
        );
    }
    let runs = Csv::read(&dir.path().join("runs.csv"));
    // 2 U_W × 3 etf × 3 policies.
    assert_eq!(runs.rows.len(), 18);

    // The etf goes to exactly the three highest-priority domains.
    let interfaces = Csv::read(&dir.path().join("interfaces.csv"));
    for u_w in ["800", "1000"] {
        let rows = interfaces.select(&[("u_w_permille", u_w)]);
        for row in rows {
            let top3 = interfaces.u64(row, "priority") <= 3;
            assert_eq!(row[interfaces.column("etf_applies")], top3.to_string());
        }
    }

    // Box statistics are ordered.
    let boxes = Csv::read(&dir.path().join("box_stats.csv"));
    for row in &boxes.rows {
        let v: Vec<f64> = ["whisker_low", "q1", "median", "q3", "whisker_high", "max"]
            .iter()
            .map(|c| boxes.f64(row, c))
            .collect();
        assert!(v.windows(2).all(|w| w[0] <= w[1]), "{row:?}");
    }

    for u_w in ["800", "1000"] {
        // Under PTPS a server consumes its whole budget every period whether it runs or
        // idles, so the slack of the higher-priority domains cannot reach the lowest:
        // its jobs see exactly the same schedule for every etf.
        let ptps: Vec<(u64, u64, u64)> = ["1000", "500", "100"]
            .iter()
            .map(|etf| {
                let r = runs.select(&[
                    ("u_w_permille", u_w),
                    ("etf_permille", etf),
                    ("policy", "ptps"),
                ]);
                (
                    runs.u64(r[0], "lowest_jobs"),
                    runs.u64(r[0], "lowest_finished"),
                    runs.u64(r[0], "lowest_missed"),
                )
            })
            .collect();
        assert!(ptps.windows(2).all(|w| w[0] == w[1]), "U_W {u_w}: {ptps:?}");
        let lowest_boxes: Vec<Vec<String>> = ["1000", "500", "100"]
            .iter()
            .map(|etf| {
                let r = boxes.select(&[
                    ("u_w_permille", u_w),
                    ("etf_permille", etf),
                    ("policy", "ptps"),
                    ("scope", "lowest"),
                ]);
                r[0][4..].to_vec()
            })
            .collect();
        assert!(
            lowest_boxes.windows(2).all(|w| w[0] == w[1]),
            "{lowest_boxes:?}"
        );

        // CRPS never gives the lowest-priority domain fewer finished jobs than PTPS.
        for etf in ["1000", "500", "100"] {
            let of = |policy: &str| {
                let r = runs.select(&[
                    ("u_w_permille", u_w),
                    ("etf_permille", etf),
                    ("policy", policy),
                ]);
                runs.u64(r[0], "lowest_finished")
            };
            assert!(of("crps") >= of("ptps"), "U_W {u_w} etf {etf}");
        }
    }

    // etf = 1 is csa-periods' [550, 650] ms task set run the same way: the same numbers.
    for u_w in ["800", "1000"] {
        for policy in ["ptps", "wcps", "crps"] {
            let a = runs.select(&[
                ("u_w_permille", u_w),
                ("etf_permille", "1000"),
                ("policy", policy),
            ]);
            let b = periods.select(&[
                ("u_w_permille", u_w),
                ("period_min_ms", "550"),
                ("policy", policy),
            ]);
            for column in ["jobs", "missed", "lowest_finished", "lowest_missed"] {
                assert_eq!(
                    runs.u64(a[0], column),
                    periods.u64(b[0], column),
                    "U_W {u_w} {policy} {column}"
                );
            }
        }
    }
}

#[test]
fn csa_arinc_quick_generated_suite_then_a_workload_file() {
    let (dir, report) = run("csa-arinc", short(3000));
    assert_structure(
        dir.path(),
        &report,
        &[
            (
                "workloads.csv",
                &[
                    "workload",
                    "source",
                    "partitions",
                    "tasks",
                    "u_w",
                    "u_rm",
                    "u_rm_minus_u_w",
                    "u_rm_1us",
                    "root_schedulable",
                    "schedulable",
                    "description",
                ],
            ),
            (
                "runs.csv",
                &[
                    "workload",
                    "source",
                    "run",
                    "phasing",
                    "policy",
                    "seed",
                    "duration_ns",
                    "jobs",
                    "missed",
                    "in_flight",
                    "deadline_miss_ratio",
                ],
            ),
            (
                "partition_runs.csv",
                &[
                    "workload",
                    "run",
                    "policy",
                    "partition",
                    "priority",
                    "jobs",
                    "finished",
                    "missed",
                    "deadline_miss_ratio",
                ],
            ),
            (
                "interfaces.csv",
                &[
                    "workload",
                    "partition",
                    "tasks",
                    "utilisation",
                    "interface_period_ms",
                    "interface_budget_ms",
                    "bandwidth",
                    "priority",
                    "schedulable_on_interface",
                    "root_response_ms",
                ],
            ),
            (
                "responsiveness_quantiles.csv",
                &[
                    "workload",
                    "policy",
                    "scope",
                    "samples",
                    "quantile",
                    "responsiveness",
                ],
            ),
        ],
    );
    // Labelled as generated, everywhere a reader looks.
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.contains("GENERATED"));
    let workloads = Csv::read(&dir.path().join("workloads.csv"));
    assert_eq!(workloads.rows.len(), 7);
    for row in &workloads.rows {
        assert_eq!(row[workloads.column("source")], "generated");
        assert!(row[workloads.column("description")].contains("GENERATED"));
        // An interface never has less bandwidth than its workload, and budgets rounded
        // to 1 µs need no more than budgets rounded to 1 ms.
        let u_w = workloads.f64(row, "u_w");
        let u_rm = workloads.f64(row, "u_rm");
        let fine = workloads.f64(row, "u_rm_1us");
        assert!(u_w <= fine + 1e-9 && fine <= u_rm + 1e-9, "{row:?}");
        assert!((workloads.f64(row, "u_rm_minus_u_w") - (u_rm - u_w)).abs() < 1e-6);
    }
    assert!(report
        .findings
        .iter()
        .all(|f| !f.starts_with('W') || f.contains("(generated)")));
    let interfaces = Csv::read(&dir.path().join("interfaces.csv"));
    // Fixed periods: every partition's interface period is one of the harmonic set.
    for row in &interfaces.rows {
        assert!([25, 50, 100, 200].contains(&interfaces.u64(row, "interface_period_ms")));
    }
    // 7 workloads × 3 runs × 3 policies.
    let runs = Csv::read(&dir.path().join("runs.csv"));
    assert_eq!(runs.rows.len(), 63);
    // Theory: a guaranteed partition misses nothing under PTPS in any phasing.
    let parts = Csv::read(&dir.path().join("partition_runs.csv"));
    let sure = guaranteed(&interfaces, &["workload"], "partition");
    assert!(sure.len() >= 20, "vacuous: {}", sure.len());
    for (key, partition) in &sure {
        let rows = parts.select(&[
            ("workload", &key[0]),
            ("partition", partition),
            ("policy", "ptps"),
        ]);
        assert_eq!(rows.len(), 3);
        for r in rows {
            assert_eq!(parts.u64(r, "missed"), 0, "{r:?}");
        }
    }

    // A workload file (the route for the real tables), named in the environment.
    let workload = tempfile::tempdir().unwrap();
    let path = workload.path().join("tiny.toml");
    std::fs::write(
        &path,
        "name = \"tiny\"\n\
         [[partition]]\nname = \"fast\"\nperiod = \"25ms\"\n\
         tasks = [ { period = \"25ms\", wcet = \"2ms\" }, { period = \"50ms\", wcet = \"3ms\" } ]\n\
         [[partition]]\nname = \"slow\"\nperiod = \"100ms\"\n\
         tasks = [ { period = \"100ms\", wcet = \"10ms\" } ]\n",
    )
    .unwrap();
    let (dir, report) = run("csa-arinc", |o: &mut rtvmm_experiments::Options| {
        short(1000)(o);
        o.workloads = vec![path.clone()];
    });
    let workloads = Csv::read(&dir.path().join("workloads.csv"));
    assert_eq!(workloads.rows.len(), 1);
    assert_eq!(
        workloads.rows[0][..2],
        ["tiny".to_string(), "file".to_string()]
    );
    // fast: {(25, 2), (50, 3)} at Π = 25 with the harmonic sbf (sbf(25k) = kΘ): the
    // 50 ms task needs 2Θ ≥ 2·2 + 3 at t = 50, so Θ = 4. slow: (100, 10), Θ = 10.
    let interfaces = Csv::read(&dir.path().join("interfaces.csv"));
    let budget = |p: &str| {
        let r = interfaces.select(&[("partition", p)]);
        interfaces.u64(r[0], "interface_budget_ms")
    };
    assert_eq!(budget("fast"), 4);
    assert_eq!(budget("slow"), 10);
    assert!(report
        .parameters
        .iter()
        .any(|(k, v)| k == "workloads" && v.contains("tiny.toml")));
}
