//! Domains added and removed while running, hand-derived.
use crate::util::*;
use rtvmm_core::policy::PolicyConfig;
use rtvmm_system::{Change, TimedChange};

/// Deferrable. d1 (B 2, P 5, prio 1) and d2 (B 4, P 10, prio 2) always busy; at 12 ms d0
/// (B 1, P 5, prio 0, busy) joins with a full budget and its own period grid (17, 22, ...);
/// at 22 ms d2 leaves with 4 ms of budget unused.
/// ```text
/// ms   0  2     5  7  8  10 12 13 15 17 18 20 22 23 25 27 28 30
/// d0                        █        █        █        █
/// d1   ██       ██       ██    ██       ██       ██
/// d2      ███      █           ██       ██
/// idle               ██                             ██       ██
/// ```
#[test]
fn added_domain_preempts_and_removed_domain_stops() {
    let mut spec = system(
        PolicyConfig::Deferrable,
        vec![
            domain("d1", 2, 5, 1, vec![busy("b")]),
            domain("d2", 4, 10, 2, vec![busy("b")]),
        ],
    );
    spec.changes = vec![
        TimedChange {
            at: ms(12),
            change: Change::AddDomain(domain("d0", 1, 5, 0, vec![busy("b")])),
        },
        TimedChange {
            at: ms(22),
            change: Change::RemoveDomain {
                domain: "d2".into(),
            },
        },
    ];
    let (schedule, sim) = run(&spec, ms(30));
    assert_schedule(
        &schedule,
        "0-2 d1, 2-5 d2, 5-7 d1, 7-8 d2, 8-10 idle, 10-12 d1, 12-13 d0, 13-15 d2, 15-17 d1, \
         17-18 d0, 18-20 d2, 20-22 d1, 22-23 d0, 23-25 idle, 25-27 d1, 27-28 d0, 28-30 idle",
    );
    assert_eq!(sim.domains()[1].removed_at, Some(ms(22)));
    assert_eq!(sim.machine().vcpu_stats(sim.domains()[2].vcpu).run, ms(4));
}

/// A domain added at 1.2 s releases its tasks from then on: its 10 ms task (1 ms jobs,
/// offset 0) releases at 1.2 s, 1.21 s, …: 10 jobs in the next 100 ms, every one finished
/// within its deadline (the domain has the highest priority and 2 ms per 10 ms). It does not
/// get the 120 jobs it "would have had" since time 0.
#[test]
fn domain_added_at_run_time_releases_from_the_instant_it_joins() {
    let mut spec = system(
        PolicyConfig::Deferrable,
        vec![domain("d1", 5, 10, 1, vec![busy("b")])],
    );
    spec.changes = vec![TimedChange {
        at: ms(1200),
        change: Change::AddDomain(domain("late", 2, 10, 0, vec![periodic("t", 10, 1)])),
    }];
    let mut sim = rtvmm_sim::Simulation::new(&spec, 1, false).expect("valid system");
    sim.set_check_invariants(true);
    sim.run_until(ms(1299)).expect("run");
    let late = &sim.domains()[1];
    let finished = &late.finished[0];
    let releases: Vec<_> = finished.iter().map(|j| j.release).collect();
    let expected: Vec<_> = (0..10).map(|k| ms(1200 + 10 * k)).collect();
    assert_eq!(releases, expected);
    assert!(finished
        .iter()
        .all(|j| j.finish.is_some_and(|f| f <= j.deadline)));
    assert_eq!(sim.pending_jobs(1).count(), 0, "nothing left over");
}
