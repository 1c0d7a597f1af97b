//! rtxen-isolation in quick mode.

use crate::util::{assert_structure, run, short, Csv};

#[test]
fn an_overloaded_domain_does_not_hurt_higher_priority_domains_under_the_servers() {
    let (dir, report) = run("rtxen-isolation", short(3000));
    assert_structure(
        dir.path(),
        &report,
        &[(
            "isolation.csv",
            &[
                "case",
                "policy",
                "domain",
                "jobs",
                "missed",
                "in_flight",
                "deadline_miss_ratio",
            ],
        )],
    );
    assert_eq!(report.figures().count(), 2);
    let csv = Csv::read(&dir.path().join("isolation.csv"));
    // 2 cases × 6 policies × 5 domains.
    assert_eq!(csv.rows.len(), 60);
    let cell = |case: &str, policy: &str, domain: &str| -> (u64, u64) {
        let rows = csv.select(&[("case", case), ("policy", policy), ("domain", domain)]);
        assert_eq!(rows.len(), 1, "{case}/{policy}/{domain}");
        (csv.u64(rows[0], "jobs"), csv.u64(rows[0], "missed"))
    };
    for policy in ["deferrable", "periodic", "polling", "sporadic"] {
        // Fixed priority: d1 and d2 never see d3, so their jobs and misses are identical
        // with and without the overload.
        for domain in ["d1", "d2"] {
            assert_eq!(
                cell("normal", policy, domain),
                cell("overloaded", policy, domain),
                "{policy}/{domain}"
            );
        }
    }
    // d3 needs 30 % of the pcpu but its server (and SEDF without extratime) supplies at
    // most its 20 % share: its backlog grows and it misses.
    for policy in ["deferrable", "periodic", "polling", "sporadic", "sedf"] {
        let (_, missed) = cell("overloaded", policy, "d3");
        assert!(missed > 0, "{policy}: the overloaded domain should miss");
    }
}
