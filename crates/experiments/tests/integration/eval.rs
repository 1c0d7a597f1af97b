//! The evaluation experiments in `--quick` mode: eval-affinity and eval-contention — their
//! files, and the facts that follow from the servers' rules.

use crate::util::{assert_structure, csv_bytes, run, Csv};

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
                    "run_budget_ms",
                    "policy",
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
                    "run_budget_ms",
                    "policy",
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
    let get = |b: &str, policy: &str| {
        let r = summary.select(&[("budget_ms", b), ("period_ms", "50"), ("policy", policy)]);
        assert_eq!(r.len(), 1);
        assert_eq!(r[0][summary.column("lower_bound")], "false");
        r[0].clone()
    };
    let delay = |b: &str, policy: &str| summary.f64(&get(b, policy), "max_extra_delay_ms");
    for policy in POLICIES {
        // (75, 50): budget above period, run as budget = period — the (50, 50) VM exactly.
        let over = get("75", policy);
        assert_eq!(over[summary.column("run_budget_ms")], "50");
        let full = get("50", policy);
        for column in ["max_extra_delay_ms", "worst_phase_ms"] {
            assert_eq!(over[summary.column(column)], full[summary.column(column)]);
        }
        // (50, 50): the VM owns the pcpu, no job ever waits.
        assert_eq!(delay("50", policy), 0.0, "{policy}");
        // (25, 50): the budget (25 ms ≥ 7 ms) is back at every boundary, so no job waits
        // longer than P − B = 25 ms.
        assert_eq!(get("25", policy)[summary.column("run_budget_ms")], "25");
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
    assert!(report
        .findings
        .iter()
        .any(|f| f.contains("(75→50, 50)") && f.contains("budget = period")));
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.contains("budget = period"), "{md}");

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
                    "vms",
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
                    "vms",
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
        "delay_1_25_50",
        "slowdown_2_25_50",
        "interrupt_latency_busy_25_50",
    ] {
        assert!(
            report.figures().any(|f| f.png == format!("{stem}.png")),
            "{stem}"
        );
    }
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(md.contains("budget = period"), "{md}");
    let c = Csv::read(&dir.path().join("contention.csv"));
    // 2 VM setups × 9 settings × 4 policies.
    assert_eq!(c.rows.len(), 72);
    let get = |vms: &str, others: &str, relation: &str, state: &str, policy: &str| {
        let r = c.select(&[
            ("vms", vms),
            ("others", others),
            ("relation", relation),
            ("others_state", state),
            ("policy", policy),
        ]);
        assert_eq!(r.len(), 1, "{vms} {others} {relation} {state} {policy}");
        r[0].clone()
    };
    let delay = |row: &[String]| c.f64(row, "max_extra_delay_ms");
    let done = |row: &[String]| c.u64(row, "long_job_completion_ns");
    // The quick long job: 2.06 s = 2060 quanta.
    const L: u64 = 2_060_000_000;
    const Q: u64 = 1_000_000;

    // Evaluated VMs: A (75 → 50, 50) and the others (500 → 400, 400) run with budget =
    // period, so every VM always has budget.
    for policy in POLICIES {
        let alone = get("evaluated", "0", "alone", "", policy);
        // Alone, A runs whenever it has work: no delay, the long job takes exactly L.
        assert_eq!(delay(&alone), 0.0, "{policy}");
        assert_eq!(done(&alone), L, "{policy}");
        for others in ["1", "2"] {
            for state in ["idle", "busy"] {
                // Below A, the others never run while A has work (A always has budget,
                // and its wake preempts at once): the same as alone.
                let lower = get("evaluated", others, "lower", state, policy);
                assert_eq!(delay(&lower), 0.0, "{others} {state} {policy}");
                assert_eq!(done(&lower), L, "{others} {state} {policy}");
            }
            // Busy VMs at A's priority take turns with A quantum by quantum (ties are
            // first-in, first-out). With n others A gets one quantum in n + 1: its 7 ms job
            // waits for n quanta between its own, plus up to n before its first — and with
            // two others, its replenishment (every 50 ms) may requeue it behind one more
            // (at most once in a job's window). So 6n ≤ delay ≤ 7n (+ 1 for n = 2).
            let n: u64 = others.parse().unwrap();
            let busy = get("evaluated", others, "equal", "busy", policy);
            let d = delay(&busy);
            assert!(
                d >= 6.0 * n as f64 && d <= (7 * n + n - 1) as f64,
                "{n} {policy}: {d}"
            );
            // The long job: one quantum in n + 1, so about (n + 1)·L. With one other the
            // turns never change (a requeue behind the only other VCPU keeps the order):
            // (n + 1)·L − n ≤ completion ≤ (n + 1)·L. With two, each of A's
            // replenishments may cost it one turn and each of the others' (every 400 ms)
            // may give one back: within (n + 1)·L ∓ completion ÷ 50 ms (resp. ÷ 400 ms).
            let t = done(&busy);
            let ideal = (n + 1) * L;
            if n == 1 {
                assert!(t >= ideal - Q && t <= ideal, "{policy}: {t}");
            } else {
                assert!(t >= ideal - 2 * Q - t / 400, "{policy}: {t}");
                assert!(t <= ideal + t / 50, "{policy}: {t}");
            }
            // Idle VMs at A's priority: the Deferrable Server never gives an idle VCPU the
            // pcpu, and WCPS and CRPS hand an idle one's turn to A — nothing changes. PTPS
            // idles an idle VCPU's turn away: A is slowed down as by busy ones.
            let idle = get("evaluated", others, "equal", "idle", policy);
            if policy == "ptps" {
                let d = delay(&idle);
                assert!(
                    d >= 6.0 * n as f64 && d <= (7 * n + n - 1) as f64,
                    "{n}: {d}"
                );
                let t = done(&idle);
                assert!(
                    t >= ideal - n * Q - t / 400 && t <= ideal + t / 50,
                    "{n}: {t}"
                );
            } else {
                assert!(delay(&idle) <= 1.0, "{n} {policy}");
                assert_eq!(done(&idle), L, "{n} {policy}");
            }
        }
    }

    // Every VM (25, 50).
    for policy in POLICIES {
        let alone = get("25/50", "0", "alone", "", policy);
        // Alone, A gets 25 ms in every 50 ms, whatever the policy: the 2.06 s job
        // completes after 82 full budgets and 10 ms of the 83rd: 82 × 50 + 10 ms.
        assert_eq!(done(&alone), 4_110_000_000, "{policy}");
        for others in ["1", "2"] {
            for state in ["idle", "busy"] {
                let lower = get("25/50", others, "lower", state, policy);
                // VMs below A never make it worse than alone.
                assert!(delay(&lower) <= delay(&alone), "{others} {state} {policy}");
                assert_eq!(lower[c.column("long_job_finished")], "true");
                assert!(done(&lower) <= done(&alone));
                // Under the servers that never lend or borrow, VMs below A change nothing.
                if policy == "deferrable" || policy == "ptps" {
                    for column in ["max_extra_delay_ms", "long_job_completion_ns"] {
                        assert_eq!(lower[c.column(column)], alone[c.column(column)]);
                    }
                }
            }
        }
        // Three busy VMs of equal priority and equal period: ~16.7 quanta each per 50 ms,
        // below every budget, and all replenished at the same instants (requeued in their
        // order), so the turns never change: A gets exactly one quantum in three.
        let three = get("25/50", "2", "equal", "busy", policy);
        assert!(
            done(&three) >= 3 * L - 2 * Q && done(&three) <= 3 * L,
            "{policy}"
        );
    }
    // One busy VM B of A's priority, both (25, 50), A's job released at 45 ms (quick
    // phases are 0, 5, …, 45 ms; A declared last, so B is first at 0). The Deferrable
    // Server keeps A's budget:
    //   B runs 0–25 (its budget), idle 25–45; A runs 45–50 (5 ms); at 50 both are
    //   replenished, A is running so only B is requeued, and at the tick A goes behind it:
    //   B 50, A 51, B 52, A 53 → done at 54: extra delay 54 − 45 − 7 = 2 ms.
    // WCPS: after B's first quantum A (idle) is ahead, so H = A and B runs on both budgets
    //   1–25; B's is gone at 25, A's last 1 ms is idled away 25–26. A's job at 45 has no
    //   budget and waits for 50; A woke behind B, so B 50, A 51, …, A's 7th quantum 63–64:
    //   extra delay 64 − 45 − 7 = 12 ms. (Every later job sees the same.)
    let delays = Csv::read(&dir.path().join("delays.csv"));
    let at45 = |policy: &str| {
        let r = delays.select(&[
            ("vms", "25/50"),
            ("others", "1"),
            ("relation", "equal"),
            ("others_state", "busy"),
            ("policy", policy),
            ("phase_ms", "45.000"),
        ]);
        delays.f64(r[0], "max_extra_delay_ms")
    };
    assert_eq!(at45("deferrable"), 2.0);
    assert_eq!(at45("wcps"), 12.0);

    // (c) The same interrupts for every policy and setup.
    let irq = Csv::read(&dir.path().join("interrupt_latency.csv"));
    assert_eq!(irq.rows.len(), 16);
    let interrupts: Vec<u64> = irq.rows.iter().map(|r| irq.u64(r, "interrupts")).collect();
    assert!(
        interrupts.iter().all(|&n| n == interrupts[0] && n > 20),
        "{interrupts:?}"
    );
    for state in ["busy", "idle"] {
        let row = |vms: &str, policy: &str| {
            irq.select(&[("vms", vms), ("lower_vm", state), ("policy", policy)])[0].clone()
        };
        // H always has budget (budget = period) and its wake preempts L at once: a handler
        // only ever waits behind another handler.
        for policy in POLICIES {
            let r = row("evaluated", policy);
            assert_eq!(irq.f64(&r, "p50_us"), 0.0, "{policy}");
            assert!(irq.f64(&r, "max_us") < 1_000.0, "{policy}");
        }
        // (25, 50): the Deferrable Server keeps H's budget, so a handler only ever waits
        // behind another handler; PTPS idles it away, so a handler may wait for the next
        // period, at most P − B = 25 ms (plus handlers queued).
        assert!(irq.f64(&row("25/50", "deferrable"), "max_us") < 1_000.0);
        let ptps = row("25/50", "ptps");
        assert!(irq.f64(&ptps, "max_us") > 0.0);
        assert!(irq.f64(&ptps, "max_us") <= 26_000.0);
    }
    assert!(report.findings.iter().any(|f| f.starts_with("(c)")));

    // Same bytes again.
    let (again, _) = run("eval-contention", |o| o.jobs = 1);
    assert_eq!(csv_bytes(dir.path()), csv_bytes(again.path()));
}
