//! The evaluation experiments in `--quick` mode: eval-affinity and eval-contention — their
//! files, and the facts that follow from the servers' rules. (Shares the harness of the
//! `integration` test binary.)

#[path = "integration/util.rs"]
mod util;

use util::{assert_structure, csv_bytes, run, Csv};

const POLICIES: [&str; 4] = ["deferrable", "ptps", "wcps", "crps"];

#[test]
fn eval_affinity_quick_files_and_server_facts() {
    let (dir, report) = run("eval-affinity", |_| {});
    assert_structure(
        dir.path(),
        &report,
        &[
            (
                "delays.csv",
                &[
                    "budget_ms",
                    "period_ms",
                    "policy",
                    "status",
                    "phase_ms",
                    "jobs",
                    "unfinished",
                    "max_extra_delay_ms",
                    "mean_extra_delay_ms",
                ],
            ),
            (
                "summary.csv",
                &[
                    "budget_ms",
                    "period_ms",
                    "policy",
                    "status",
                    "max_extra_delay_ms",
                    "worst_phase_ms",
                    "lower_bound",
                ],
            ),
        ],
    );
    for stem in ["max_delay", "delay_vs_phase_25_50", "delay_vs_phase_50_50"] {
        assert!(
            report.figures().any(|f| f.png == format!("{stem}.png")),
            "{stem}"
        );
    }
    let summary = Csv::read(&dir.path().join("summary.csv"));
    assert_eq!(summary.rows.len(), 12);
    let delay = |b: &str, policy: &str| {
        let r = summary.select(&[("budget_ms", b), ("period_ms", "50"), ("policy", policy)]);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0][summary.column("status")], "ran");
        assert_eq!(r[0][summary.column("lower_bound")], "false");
        summary.f64(r[0], "max_extra_delay_ms")
    };
    for policy in POLICIES {
        // (75, 50): budget above period, refused with the validation error.
        let r = summary.select(&[("budget_ms", "75"), ("policy", policy)]);
        assert!(
            r[0][summary.column("status")].starts_with("rejected: budget"),
            "{r:?}"
        );
        // (50, 50): the VM owns the pcpu, no job ever waits.
        assert_eq!(delay("50", policy), 0.0, "{policy}");
        // (25, 50): the budget (25 ms ≥ 7 ms) is back at every boundary, so no job waits
        // longer than P − B = 25 ms.
        assert!(delay("25", policy) <= 25.0, "{policy}");
    }
    // The Deferrable Server keeps its unused budget: alone, a 7 ms job never waits.
    assert_eq!(delay("25", "deferrable"), 0.0);
    // PTPS idles its budget away: a job released at phase 20 ms finds 5 ms left, runs
    // them, and waits 25 ms for the next period: exactly P − B.
    //   0        20   25                 50 52
    //   |idle....|run5|......wait........|run2|
    assert_eq!(delay("25", "ptps"), 25.0);
    let delays = Csv::read(&dir.path().join("delays.csv"));
    let at20 = delays.select(&[
        ("budget_ms", "25"),
        ("policy", "ptps"),
        ("phase_ms", "20.000"),
    ]);
    assert_eq!(delays.f64(at20[0], "max_extra_delay_ms"), 25.0);
    assert!(report.findings.iter().any(|f| f.contains("rejected")));

    // Same bytes again.
    let (again, _) = run("eval-affinity", |o| o.jobs = 1);
    assert_eq!(csv_bytes(dir.path()), csv_bytes(again.path()));
}

#[test]
fn eval_contention_quick_files_and_isolation_facts() {
    let (dir, report) = run("eval-contention", |_| {});
    assert_structure(
        dir.path(),
        &report,
        &[
            (
                "contention.csv",
                &[
                    "others",
                    "relation",
                    "others_state",
                    "policy",
                    "max_extra_delay_ms",
                    "worst_phase_ms",
                    "delay_lower_bound",
                    "long_job_ns",
                    "long_job_completion_ns",
                    "slowdown",
                    "long_job_finished",
                ],
            ),
            (
                "interrupt_latency.csv",
                &[
                    "lower_vm",
                    "policy",
                    "interrupts",
                    "started",
                    "min_us",
                    "mean_us",
                    "p50_us",
                    "p90_us",
                    "p99_us",
                    "max_us",
                ],
            ),
        ],
    );
    for stem in [
        "delay_1",
        "delay_2",
        "slowdown_1",
        "slowdown_2",
        "interrupt_latency_busy",
        "interrupt_latency_idle",
    ] {
        assert!(
            report.figures().any(|f| f.png == format!("{stem}.png")),
            "{stem}"
        );
    }
    let c = Csv::read(&dir.path().join("contention.csv"));
    // 13 settings × 4 policies.
    assert_eq!(c.rows.len(), 52);
    let get = |others: &str, relation: &str, state: &str, policy: &str| {
        let r = c.select(&[
            ("others", others),
            ("relation", relation),
            ("others_state", state),
            ("policy", policy),
        ]);
        assert_eq!(r.len(), 1, "{others} {relation} {state} {policy}");
        r[0].clone()
    };
    for policy in POLICIES {
        let alone = get("0", "alone", "", policy);
        // Alone, A gets 25 ms in every 50 ms, whatever the policy: the 2.06 s job
        // completes after 82 full budgets and 10 ms of the 83rd: 82 × 50 + 10 ms.
        assert_eq!(
            c.u64(&alone, "long_job_completion_ns"),
            4_110_000_000,
            "{policy}"
        );
        for others in ["1", "2"] {
            for state in ["idle", "busy"] {
                let lower = get(others, "lower", state, policy);
                // (Equal priorities are served first-in, first-out: declaring A first no
                // longer makes it the higher one.)
                // VMs below A never make it worse than alone.
                assert!(
                    c.f64(&lower, "max_extra_delay_ms") <= c.f64(&alone, "max_extra_delay_ms"),
                    "{others} {state} {policy}"
                );
                assert_eq!(lower[c.column("long_job_finished")], "true");
                assert!(
                    c.u64(&lower, "long_job_completion_ns")
                        <= c.u64(&alone, "long_job_completion_ns")
                );
                // Under the fixed-priority servers that never lend or borrow, VMs below
                // A change nothing at all.
                if policy == "deferrable" || policy == "ptps" {
                    for column in ["max_extra_delay_ms", "long_job_completion_ns"] {
                        assert_eq!(lower[c.column(column)], alone[c.column(column)]);
                    }
                }
            }
        }
    }
    // (Equal priorities take turns first-in, first-out, so busy VMs of A's priority no
    // longer starve it; the experiment's equal-priority cases follow the updated
    // procedure.)

    // (c) The same interrupts for every policy; the Deferrable Server keeps H's budget,
    // so a handler only ever waits behind another handler; PTPS idles it away, so a
    // handler may wait for the next period, at most P − B = 25 ms (plus handlers queued).
    let irq = Csv::read(&dir.path().join("interrupt_latency.csv"));
    assert_eq!(irq.rows.len(), 8);
    let interrupts: Vec<u64> = irq.rows.iter().map(|r| irq.u64(r, "interrupts")).collect();
    assert!(
        interrupts.iter().all(|&n| n == interrupts[0] && n > 20),
        "{interrupts:?}"
    );
    for state in ["busy", "idle"] {
        let row = |policy: &str| irq.select(&[("lower_vm", state), ("policy", policy)])[0].clone();
        assert!(irq.f64(&row("deferrable"), "max_us") < 1_000.0);
        let ptps = row("ptps");
        assert!(irq.f64(&ptps, "max_us") > 0.0);
        assert!(irq.f64(&ptps, "max_us") <= 26_000.0);
    }
    assert!(report.findings.iter().any(|f| f.starts_with("(c)")));
}
