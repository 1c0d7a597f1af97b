//! rtxen-theory in quick mode.

use crate::util::{assert_structure, run, short, Csv};

#[test]
fn every_domain_the_full_analysis_bounds_runs_without_a_miss() {
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
                    "guaranteed_tasks_only",
                    "domains_guaranteed_tasks_only",
                    "guaranteed_full",
                    "domains_guaranteed_full",
                    "servers_schedulable_at_root",
                    "missed",
                    "deadline_miss_ratio",
                    "tasks_only_guaranteed_domains_missed",
                    "tasks_only_bounds_exceeded",
                    "full_violations",
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
                    "bound_tasks_only_ns",
                    "bound_full_ns",
                    "observed_max_response_ns",
                    "jobs",
                    "missed",
                    "within_tasks_only_bound",
                    "within_full_bound",
                ],
            ),
        ],
    );
    let runs = Csv::read(&dir.path().join("theory.csv"));
    // 3 patterns × 5 loads × 2 policies.
    assert_eq!(runs.rows.len(), 30);
    for row in &runs.rows {
        // The full analysis is sound: no violation, and a load it guarantees never misses.
        assert_eq!(runs.u64(row, "full_violations"), 0, "{row:?}");
        if row[runs.column("guaranteed_full")] == "true" {
            assert_eq!(runs.u64(row, "missed"), 0, "{row:?}");
            // The root only adds interference: what is guaranteed in full is guaranteed
            // tasks only too.
            assert_eq!(row[runs.column("guaranteed_tasks_only")], "true", "{row:?}");
        }
        assert!(
            runs.u64(row, "domains_guaranteed_full")
                <= runs.u64(row, "domains_guaranteed_tasks_only"),
            "{row:?}"
        );
        // A domain is guaranteed in full only if its server is schedulable at the root.
        assert!(
            runs.u64(row, "domains_guaranteed_full")
                <= runs.u64(row, "servers_schedulable_at_root"),
            "{row:?}"
        );
    }
    // The shares add up to 100 % of the pcpu, so at the root the lowest-priority server
    // waits for every higher one's full budget: under the Deferrable Server (whose budgets
    // can run back to back) some server is never schedulable at the root.
    for row in runs.select(&[("policy", "deferrable")]) {
        assert!(runs.u64(row, "servers_schedulable_at_root") < 5, "{row:?}");
        assert_eq!(row[runs.column("guaranteed_full")], "false", "{row:?}");
    }
    let tasks = Csv::read(&dir.path().join("theory_tasks.csv"));
    let bounded: Vec<_> = tasks
        .rows
        .iter()
        .filter(|r| !r[tasks.column("bound_full_ns")].is_empty())
        .collect();
    // Not vacuous: the full analysis bounds many tasks at the lower loads.
    assert!(bounded.len() > 100, "only {} tasks bounded", bounded.len());
    for row in bounded {
        assert!(
            tasks.u64(row, "observed_max_response_ns") <= tasks.u64(row, "bound_full_ns"),
            "{row:?}"
        );
        assert_eq!(tasks.u64(row, "missed"), 0, "{row:?}");
        // A full bound is never below the tasks-only bound of the same task.
        assert!(
            tasks.u64(row, "bound_tasks_only_ns") <= tasks.u64(row, "bound_full_ns"),
            "{row:?}"
        );
    }
    assert!(report
        .findings
        .iter()
        .any(|f| f.starts_with("check: every")));
    assert!(report
        .findings
        .iter()
        .any(|f| f.starts_with("tasks-only verdict")));
}
