//! rtxen-theory in quick mode.

use crate::util::{assert_structure, run, short, Csv};

#[test]
fn every_domain_the_analysis_bounds_runs_without_a_miss() {
    let (dir, report) = run("rtxen-theory", short(3000));
    assert_structure(
        dir.path(),
        &report,
        &[
            (
                "theory.csv",
                &[
                    "pattern",
                    "load_permille",
                    "policy",
                    "guaranteed",
                    "domains_guaranteed",
                    "missed",
                    "deadline_miss_ratio",
                    "violations",
                ],
            ),
            (
                "theory_tasks.csv",
                &[
                    "pattern",
                    "load_permille",
                    "policy",
                    "domain",
                    "task",
                    "bound_ns",
                    "observed_max_response_ns",
                    "jobs",
                    "missed",
                    "within_bound",
                ],
            ),
        ],
    );
    let runs = Csv::read(&dir.path().join("theory.csv"));
    // 3 patterns × 5 loads × 2 policies.
    assert_eq!(runs.rows.len(), 30);
    for row in &runs.rows {
        assert_eq!(runs.u64(row, "violations"), 0, "{row:?}");
        if row[runs.column("guaranteed")] == "true" {
            assert_eq!(runs.u64(row, "missed"), 0, "{row:?}");
        }
    }
    let tasks = Csv::read(&dir.path().join("theory_tasks.csv"));
    let bounded: Vec<_> = tasks
        .rows
        .iter()
        .filter(|r| !r[tasks.column("bound_ns")].is_empty())
        .collect();
    // Not vacuous: the analysis bounds many tasks at the lower loads.
    assert!(bounded.len() > 100, "only {} tasks bounded", bounded.len());
    for row in bounded {
        assert!(
            tasks.u64(row, "observed_max_response_ns") <= tasks.u64(row, "bound_ns"),
            "{row:?}"
        );
        assert_eq!(tasks.u64(row, "missed"), 0, "{row:?}");
    }
    assert!(report
        .findings
        .iter()
        .any(|f| f.starts_with("check: every")));
}
