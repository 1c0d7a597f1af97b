//! The system entry point on small systems derived by hand, one per root model.

use super::*;
use crate::compose::DomainFailure;
use crate::error::WorkloadError;
use crate::prm::SupplyForm;
use crate::rta::ResponseBound;

fn fp_task(period: u64, wcet: u64, priority: u32, offset: Option<u64>) -> GuestTask {
    GuestTask {
        task: FpTask::new(period, wcet, priority),
        offset,
    }
}

fn domain(name: &str, guest: Guest, interface: InterfaceChoice) -> Domain {
    Domain {
        name: name.into(),
        guest,
        interface,
        sbf: SbfMode::General,
        root_priority: None,
        replenishment_cap: None,
    }
}

fn rm(tasks: Vec<GuestTask>) -> Guest {
    Guest::FixedPriority {
        order: PriorityOrder::RateMonotonic,
        tasks,
    }
}

fn given(period: u64, budget: u64) -> InterfaceChoice {
    InterfaceChoice::Given(Interface::new(period, budget))
}

fn periodic(response_times: bool) -> RootModel {
    RootModel::FixedPriority {
        server: ServerKind::Periodic,
        response_times,
    }
}

fn bound(result: &TaskResult) -> Option<u64> {
    match result.response {
        Response::Bound(bound) => bound.response_time(),
        _ => None,
    }
}

/// One Periodic Server (Π, Θ) = (10, 3) alone, general sbf (blackout 2·7 = 14), with
/// fast = (10, 2) and slow = (20, 5), both released at the server's releases.
/// Lemma 1: sbf(t) = 0 for t ≤ 14, so fast fails; slow needs rbf ≥ 7 but sbf(20) = 3.
/// Root: r(3) = 3 ≤ 10. fast, bound: R = r(2) = 2 → guaranteed by its bound.
/// slow, bound: L = 5 + 2⌈R/10⌉: R = 5 → L = 7, k = 3, x = 1 → R = 2·10 + 1 = 21 > 20
/// (unbound: 7 + 20 + 1 = 28; the smaller wins): not guaranteed, and to blame.
#[test]
fn fixed_priority_root_by_hand() {
    let system = System {
        root: periodic(true),
        domains: vec![domain(
            "a",
            rm(vec![fp_task(10, 2, 1, Some(0)), fp_task(20, 5, 2, Some(0))]),
            given(10, 3),
        )],
    };
    let result = analyze(&system);
    let a = &result.domains[0];
    assert_eq!(
        a.root,
        Some(AtRoot {
            priority: 1,
            server: Some(ServerKind::Periodic),
            served: Some(true),
            response_time: Some(3),
        })
    );
    assert_eq!(a.analysed_as, Some(GuestScheduler::Rm));
    assert_eq!(a.supply, Some(SupplyForm::General));
    let (fast, slow) = (&a.tasks[0], &a.tasks[1]);
    assert_eq!(fast.lemma1, Lemma1::Fails);
    assert_eq!((bound(fast), fast.bound_to_release), (Some(2), true));
    assert_eq!(fast.verdict, TaskVerdict::ByResponseTime);
    assert_eq!(
        slow.verdict,
        TaskVerdict::NotGuaranteed {
            lemma1: Lemma1Gap::Fails,
            response: ResponseGap::ExceedsDeadline { at_least: 21 },
        }
    );
    assert_eq!(a.verdict, DomainVerdict::TaskNotGuaranteed { task: 1 });
    assert!(!result.schedulable());
}

/// Two Periodic servers of period 4 sharing 125 % of the pcpu: S1 (Θ 2, priority 1) with
/// (40, 2) and S2 (Θ 3, priority 2) with (40, 3), released at any time.
/// S1: r(2) = 2 ≤ 4; task: gap 2 + r(2) = 4. Lemma 1 on (4, 2), blackout 4: sbf(6) = 2.
/// S2: r(3) = 3 + 2⌈r/4⌉: 3 → 5 → 7 > 4, not served at the root: under the
/// fixed-priority root its task has no bound and the domain fails; without the root
/// check its task gets (5.4)'s bound, gap 1 + r(3) = 1 + 7 = 8, and Lemma 1 on (4, 3)
/// (blackout 2, sbf(5) = 3) guarantees it.
#[test]
fn a_server_the_root_cannot_serve_gets_bounds_only_without_the_root_check() {
    let system = |root| System {
        root,
        domains: vec![
            Domain {
                root_priority: Some(1),
                ..domain("S1", rm(vec![fp_task(40, 2, 1, None)]), given(4, 2))
            },
            Domain {
                root_priority: Some(2),
                ..domain("S2", rm(vec![fp_task(40, 3, 1, None)]), given(4, 3))
            },
        ],
    };
    let full = analyze(&system(periodic(true)));
    let (s1, s2) = (&full.domains[0], &full.domains[1]);
    assert_eq!(bound(&s1.tasks[0]), Some(4));
    assert_eq!(s1.tasks[0].verdict, TaskVerdict::ByLemma1);
    assert_eq!(s2.root.and_then(|r| r.served), Some(false));
    assert_eq!(
        s2.tasks[0].response,
        Response::Bound(ResponseBound::ServerUnschedulable)
    );
    assert_eq!(s2.tasks[0].verdict, TaskVerdict::ServerUnschedulable);
    assert_eq!(s2.verdict, DomainVerdict::ServerUnschedulable);
    assert!(!full.schedulable());

    let unchecked = analyze(&system(RootModel::NoRootCheck {
        server: ServerKind::Periodic,
    }));
    let (s1, s2) = (&unchecked.domains[0], &unchecked.domains[1]);
    assert_eq!(bound(&s1.tasks[0]), Some(4));
    assert_eq!(s2.root.and_then(|r| r.served), None);
    assert_eq!(bound(&s2.tasks[0]), Some(8));
    assert_eq!(s2.tasks[0].lemma1, Lemma1::Holds);
    assert_eq!(s2.tasks[0].verdict, TaskVerdict::ByLemma1);
    assert!(unchecked.schedulable());
}

/// EDF over budget-keeping servers on one pcpu (Bertogna–Cirinei–Lipari with m = 1:
/// `Θ_k + Σ_{i≠k} W_i(Π_k) ≤ Π_k`, `W_i(L) = ⌊L/Π_i⌋Θ_i + min(Θ_i, L mod Π_i)`).
/// (4, 2) and (4, 3): 2 + 3 > 4 and 3 + 2 > 4, neither served. (4, 2) and (8, 3): bandwidth
/// 7/8, yet (4, 2) is refused — 2 + min(3, 4) = 5 > 4: (8, 3) may wake late and claim its
/// 3 units in (4, 2)'s second period — while (8, 3) is served (3 + 2·2 ≤ 8). (4, 1) and
/// (8, 3): 1 + 3 ≤ 4 and 3 + 2 ≤ 8, both served, and the task (40, 3) passes Lemma 1 on
/// (8, 3) (blackout 10, sbf(13) = 3). No response times under EDF.
#[test]
fn edf_root_by_hand() {
    let system = |first: u64, second: u64| System {
        root: RootModel::Edf,
        domains: vec![
            domain("a", rm(vec![fp_task(40, 2, 1, None)]), given(4, first)),
            domain("b", rm(vec![fp_task(40, 3, 1, None)]), given(second, 3)),
        ],
    };
    let over = analyze(&system(2, 4));
    assert_eq!(over.u_rm.to_fraction_string(), "5/4");
    for d in &over.domains {
        assert_eq!(d.root.and_then(|r| r.served), Some(false));
        assert_eq!(d.verdict, DomainVerdict::ServerUnschedulable);
        assert_eq!(d.tasks[0].response, Response::NotApplicable);
    }
    let late_waker = analyze(&system(2, 8));
    assert_eq!(late_waker.u_rm.to_fraction_string(), "7/8");
    assert_eq!(
        late_waker.domains[0].root.and_then(|r| r.served),
        Some(false)
    );
    assert_eq!(
        late_waker.domains[1].root.and_then(|r| r.served),
        Some(true)
    );
    let fits = analyze(&system(1, 8));
    assert_eq!(fits.u_rm.to_fraction_string(), "5/8");
    assert!(fits.schedulable());
    assert_eq!(fits.domains[1].tasks[0].verdict, TaskVerdict::ByLemma1);
    assert_eq!(fits.domains[1].root.and_then(|r| r.server), None);
}

/// Interfaces as RM periodic tasks: (4, 3) first (shorter period), then (8, 3):
/// R = 3 + 3⌈R/4⌉: 3 → 6 → 9 → 12 > 8: not served. Priorities by period, from 1.
#[test]
fn rate_monotonic_root_by_hand() {
    let system = System {
        root: RootModel::RateMonotonic,
        domains: vec![
            domain("b", rm(vec![fp_task(40, 1, 1, None)]), given(8, 3)),
            domain("a", rm(vec![fp_task(40, 1, 1, None)]), given(4, 3)),
        ],
    };
    let result = analyze(&system);
    let roots: Vec<AtRoot> = result.domains.iter().filter_map(|d| d.root).collect();
    assert_eq!(
        roots,
        vec![
            AtRoot {
                priority: 2,
                server: None,
                served: Some(false),
                response_time: None,
            },
            AtRoot {
                priority: 1,
                server: None,
                served: Some(true),
                response_time: Some(3),
            },
        ]
    );
    assert_eq!(
        result.domains[0].verdict,
        DomainVerdict::ServerUnschedulable
    );
    assert_eq!(result.domains[1].verdict, DomainVerdict::Schedulable);
}

/// slow = (40, 2) above fast = (10, 1): not the rate-monotonic order, so Lemma 1 says
/// nothing. Computed interface: none. Given (10, 3), alone: slow R = 7 + r(2) = 9;
/// fast L = 1 + 2⌈R/40⌉: R = 1 → L = 3 → 7 + 3 = 10 → L = 3 → 10 ≤ 10: both bounded.
#[test]
fn a_priority_order_lemma1_does_not_cover() {
    let guest = rm(vec![fp_task(40, 2, 1, None), fp_task(10, 1, 2, None)]);
    let system = |interface| System {
        root: periodic(true),
        domains: vec![domain("d", guest.clone(), interface)],
    };
    let computed = analyze(&system(InterfaceChoice::default()));
    let d = &computed.domains[0];
    assert_eq!(d.verdict, DomainVerdict::PriorityOrderNotCovered);
    assert_eq!((d.interface, d.root, d.analysed_as), (None, None, None));
    assert_eq!(
        d.tasks[0].verdict,
        TaskVerdict::NotAnalysed(NotAnalysed::NoInterface)
    );
    assert_eq!(d.tasks[0].response, Response::NotAnalysed);
    let given = analyze(&system(given(10, 3)));
    let d = &given.domains[0];
    assert_eq!(d.verdict, DomainVerdict::Schedulable);
    assert_eq!(d.analysed_as, None);
    let bounds: Vec<Option<u64>> = d.tasks.iter().map(bound).collect();
    assert_eq!(bounds, vec![Some(9), Some(10)]);
    assert!(d
        .tasks
        .iter()
        .all(|t| t.lemma1 == Lemma1::NotTested && t.verdict == TaskVerdict::ByResponseTime));
}

/// Domains that are not analysed, and one that only competes: an idle domain with a
/// VCPU (10, 1) is a server; one without is not; a task with wcet above its period
/// invalidates its domain; an EDF guest in a Polling Server has no analysis. Root:
/// idle (10, 1) before edf (10, 2) (tie by position): r(2) = 2 + ⌈r/10⌉ = 3 ≤ 10.
#[test]
fn domains_that_are_not_analysed() {
    let system = System {
        root: RootModel::FixedPriority {
            server: ServerKind::Polling,
            response_times: true,
        },
        domains: vec![
            domain("idle", Guest::Idle, given(10, 1)),
            domain("empty", Guest::Idle, InterfaceChoice::default()),
            domain("bad", rm(vec![fp_task(4, 5, 1, None)]), given(10, 2)),
            domain(
                "edf",
                Guest::Edf {
                    tasks: vec![Task::new(40, 4)],
                },
                given(10, 2),
            ),
        ],
    };
    let result = analyze(&system);
    let [idle, empty, bad, edf] = &result.domains[..] else {
        panic!("four domains");
    };
    assert_eq!(idle.verdict, DomainVerdict::Schedulable);
    assert_eq!(idle.root.map(|r| r.priority), Some(1));
    assert_eq!(
        (empty.verdict.clone(), empty.root),
        (DomainVerdict::Schedulable, None)
    );
    assert_eq!(
        bad.verdict,
        DomainVerdict::InvalidTasks {
            task: Some(0),
            error: WorkloadError::WcetExceedsPeriod {
                task: 0,
                wcet: 5,
                period: 4
            },
        }
    );
    assert_eq!(bad.root, None);
    assert_eq!(
        edf.verdict,
        DomainVerdict::EdfNotCovered {
            server: ServerKind::Polling
        }
    );
    assert_eq!(
        edf.root.map(|r| (r.priority, r.served, r.response_time)),
        Some((2, Some(true), Some(3)))
    );
    assert_eq!(edf.tasks[0].response, Response::NotApplicable);
    assert_eq!(result.u_rm.to_fraction_string(), "3/10");
}

/// A Sporadic Server (5, 2) with a task (20, 3) released at any time. A cap of 8
/// pending replenishments is below the budget in ns (2·10⁶), so it can merge: gap 5,
/// R = 5 + 5 + r(1) = 11, and Lemma 1 (which holds: sbf(12) = 3) is not used. A cap of
/// 2·10⁶ never merges: Lemma 1 guarantees the task.
#[test]
fn a_sporadic_server_that_can_merge_is_not_a_periodic_resource() {
    let system = |max_pending| System {
        root: RootModel::FixedPriority {
            server: ServerKind::Sporadic,
            response_times: true,
        },
        domains: vec![Domain {
            replenishment_cap: Some(ReplenishmentCap {
                max_pending,
                grains_per_unit: 1_000_000,
            }),
            ..domain("s", rm(vec![fp_task(20, 3, 1, None)]), given(5, 2))
        }],
    };
    let merging = analyze(&system(8));
    let d = &merging.domains[0];
    assert_eq!(
        d.root.and_then(|r| r.server),
        Some(ServerKind::SporadicMerging)
    );
    assert_eq!(d.tasks[0].lemma1, Lemma1::Holds);
    assert_eq!(bound(&d.tasks[0]), Some(11));
    assert_eq!(d.tasks[0].verdict, TaskVerdict::ByResponseTime);
    let plain = analyze(&system(2_000_000));
    assert_eq!(
        plain.domains[0].root.and_then(|r| r.server),
        Some(ServerKind::Sporadic)
    );
    assert_eq!(plain.domains[0].tasks[0].verdict, TaskVerdict::ByLemma1);
}

/// Task indices in verdicts are positions as given, whatever the priority order: lo =
/// (10, 6) given first, hi = (5, 3) second. On a dedicated pcpu lo needs
/// rbf(t) = 6 + 3⌈t/5⌉ ≤ t for some t ≤ 10: 9, 12 at t = 9, 10 — it fails, so there is
/// no interface, and lo (position 0) is named.
#[test]
fn failures_name_tasks_by_their_position_as_given() {
    let system = System {
        root: periodic(true),
        domains: vec![domain(
            "d",
            rm(vec![fp_task(10, 6, 2, None), fp_task(5, 3, 1, None)]),
            InterfaceChoice::default(),
        )],
    };
    let result = analyze(&system);
    assert!(matches!(
        result.domains[0].verdict,
        DomainVerdict::NoInterface(DomainFailure::Unschedulable { task_index: 0, .. })
    ));
}

/// Equal priorities interfere both ways (issue 23): a guest serves them first-in,
/// first-out. Dedicated server (Π, Θ) = (10, 10), tasks short = (20, 1, d 4) and
/// long = (40, 8), both of priority 1.
/// * Their periods differ, so the tie is not a rate-monotonic level: Lemma 1 (which
///   would let `short`, declared first, see only itself) does not cover this order.
/// * The response-time bound of `short` counts `long`: 1 + 8 = 9 > 4 — not guaranteed,
///   and to blame. The bound of `long` counts `short`: 8 + ⌈R/20⌉ = 9.
#[test]
fn equal_priorities_with_different_periods_interfere_and_are_not_lemma_1s_order() {
    let short = GuestTask {
        task: FpTask {
            period: 20,
            wcet: 1,
            deadline: 4,
            priority: 1,
        },
        offset: None,
    };
    let system = System {
        root: periodic(true),
        domains: vec![domain(
            "d",
            rm(vec![short, fp_task(40, 8, 1, None)]),
            given(10, 10),
        )],
    };
    let result = analyze(&system);
    let d = &result.domains[0];
    assert_eq!(d.tasks[0].lemma1, Lemma1::NotTested);
    assert_eq!(
        d.tasks[0].response,
        Response::Bound(ResponseBound::ExceedsDeadline { at_least: 9 })
    );
    assert_eq!(bound(&d.tasks[1]), Some(9));
    assert_eq!(d.verdict, DomainVerdict::TaskNotGuaranteed { task: 0 });
}

/// The same tie between equal periods is a rate-monotonic level: Lemma 1 applies, and
/// `rbf` of `short` = (40, 1, d 4) counts `long` = (40, 8): rbf(t) = 9 > t = sbf(t) for
/// every t ≤ 4 on the dedicated (10, 10) — it fails, as does its bound 9 > 4.
#[test]
fn equal_periods_are_one_level_in_lemma_1() {
    let short = GuestTask {
        task: FpTask {
            period: 40,
            wcet: 1,
            deadline: 4,
            priority: 1,
        },
        offset: None,
    };
    let system = System {
        root: periodic(true),
        domains: vec![domain(
            "d",
            rm(vec![short, fp_task(40, 8, 1, None)]),
            given(10, 10),
        )],
    };
    let d = &analyze(&system).domains[0];
    assert_eq!(d.tasks[0].lemma1, Lemma1::Fails);
    assert_eq!(d.tasks[1].lemma1, Lemma1::Holds);
    assert_eq!(d.verdict, DomainVerdict::TaskNotGuaranteed { task: 0 });
}
