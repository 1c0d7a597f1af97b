//! Cpupools at run time, by hand-derived schedules under the real policies: a domain
//! moving to a new pool, invalid pool commands refused without a trace, partitioned
//! policies and pinning, and a pcpu joining or leaving a pool of each policy family while
//! every VCPU keeps its budget, deadline or credit.

use super::*;

/// Two pcpus: Pool-0 on pcpu 0, pcpu 1 free. A (4 ms every 10, priority 1) and B (10 ms
/// every 10, priority 2) are Deferrable servers in Pool-0, always busy.
fn two_pools() -> (Machine, VcpuId, VcpuId) {
    let config = MachineConfig {
        pcpus: 2,
        ..MachineConfig::default()
    };
    let pool0 = PoolSpec::new("Pool-0", CpuSet::one(0), PolicyConfig::Deferrable);
    let mut m = Machine::with_pools(config, vec![pool0]).unwrap();
    let a = m
        .add_vcpu(
            Nanos::ZERO,
            DomainId(0),
            VcpuParams::server(ms(4), ms(10), 1),
        )
        .unwrap();
    let b = m
        .add_vcpu(
            Nanos::ZERO,
            DomainId(1),
            VcpuParams::server(ms(10), ms(10), 2),
        )
        .unwrap();
    m.wake(Nanos::ZERO, a);
    m.wake(Nanos::ZERO, b);
    (m, a, b)
}

/// Pool reconfiguration at run time, by hand. On pcpu 0, A runs 0–4 and B 4–5. At 5 a
/// pool `rt` is created, pcpu 1 joins it and B's domain moves there: B runs on pcpu 1
/// from 5 (one migration), always (budget = period). Pcpu 0 keeps A alone: idle 5–10,
/// A 10–14, idle 14–20. At 20: pcpu 0 busy 4 + 1 + 4 = 9 ms, pcpu 1 busy 15 ms (free
/// and idle 0–5); A ran 8 ms, B 1 + 15 = 16 ms.
#[test]
fn a_domain_moves_to_a_new_pool_on_a_pcpu_that_joins_it() {
    let (mut m, a, b) = two_pools();
    run_to(&mut m, ms(5));
    assert_eq!(m.running(PcpuId(0)), Some(b));
    m.pool_create(
        ms(5),
        PoolSpec::new("rt", CpuSet::EMPTY, PolicyConfig::Deferrable),
    )
    .unwrap();
    let rt = m.pool_index("rt").unwrap();
    assert_eq!(
        m.pool_migrate(ms(5), DomainId(1), rt),
        Err(MachineError::EmptyPool {
            pool: "rt".to_string()
        }),
        "a pool without pcpus cannot hold a domain"
    );
    m.pool_cpu_add(ms(5), rt, 1).unwrap();
    m.pool_migrate(ms(5), DomainId(1), rt).unwrap();
    run_to(&mut m, ms(20));
    assert_eq!(m.placement(b), ("rt", CpuSet::one(1)));
    assert_eq!(m.pcpu_stats(PcpuId(0)).busy, ms(9));
    assert_eq!(m.pcpu_stats(PcpuId(0)).idle, ms(11));
    assert_eq!(m.pcpu_stats(PcpuId(1)).busy, ms(15));
    assert_eq!(m.pcpu_stats(PcpuId(1)).idle, ms(5));
    assert_eq!(m.vcpu_stats(a).run, ms(8));
    assert_eq!(m.vcpu_stats(b).run, ms(16));
    assert_eq!(m.vcpu_stats(b).migrations, 1);
    assert_eq!(m.vcpu_stats(a).migrations, 0);
    assert_eq!(m.check_invariants(), Ok(()));
}

/// Every invalid pool command is refused with its reason and changes nothing: the run
/// goes on exactly as the one without them.
#[test]
fn invalid_pool_commands_are_refused_and_change_nothing() {
    let (mut m, a, b) = two_pools();
    let (mut same, _, _) = two_pools();
    run_to(&mut m, ms(3));
    let now = ms(3);
    assert_eq!(
        m.pool_create(
            now,
            PoolSpec::new("x", CpuSet::one(0), PolicyConfig::Deferrable)
        ),
        Err(MachineError::PcpuInPool {
            pcpu: 0,
            pool: "Pool-0".to_string()
        })
    );
    assert_eq!(
        m.pool_create(
            now,
            PoolSpec::new("Pool-0", CpuSet::EMPTY, PolicyConfig::Sedf)
        ),
        Err(MachineError::DuplicatePool("Pool-0".to_string()))
    );
    assert_eq!(
        m.pool_cpu_add(now, 0, 2),
        Err(MachineError::UnknownPcpu { pcpu: 2, pcpus: 2 })
    );
    assert_eq!(
        m.pool_cpu_add(now, 0, 0),
        Err(MachineError::PcpuInPool {
            pcpu: 0,
            pool: "Pool-0".to_string()
        })
    );
    assert_eq!(
        m.pool_cpu_remove(now, 0, 0),
        Err(MachineError::WouldEmptyPool {
            pool: "Pool-0".to_string(),
            pcpu: 0
        })
    );
    assert_eq!(
        m.pool_cpu_remove(now, 0, 1),
        Err(MachineError::PcpuNotInPool {
            pcpu: 1,
            pool: "Pool-0".to_string()
        })
    );
    assert!(matches!(
        m.pin(now, a, Some(CpuSet::one(1))),
        Err(MachineError::AffinityOutsidePool { vcpu: 0, .. })
    ));
    let bad = VcpuParams::server(ms(11), ms(10), 1);
    assert!(matches!(
        m.adjust(now, b, bad.clone()),
        Err(MachineError::Param { vcpu: 1, .. })
    ));
    assert!(matches!(
        m.pool_index("nope"),
        Err(MachineError::UnknownPool(_))
    ));
    run_to(&mut m, ms(40));
    run_to(&mut same, ms(40));
    for v in [a, b] {
        assert_eq!(m.vcpu_stats(v), same.vcpu_stats(v));
    }
    for p in [PcpuId(0), PcpuId(1)] {
        assert_eq!(m.pcpu_stats(p), same.pcpu_stats(p));
    }
}

/// A policy that schedules partitioned needs each VCPU pinned to one pcpu of a pool of
/// several; a global one does not.
#[test]
fn partitioned_policies_need_one_pcpu_per_vcpu() {
    let config = MachineConfig {
        pcpus: 2,
        ..MachineConfig::default()
    };
    let mut m = Machine::new(config.clone(), PolicyConfig::Sedf).unwrap();
    let p = VcpuParams::server(ms(2), ms(10), 1);
    assert!(matches!(
        m.add_vcpu(Nanos::ZERO, DomainId(0), p.clone()),
        Err(MachineError::NeedsPinning {
            policy: PolicyKind::Sedf,
            ..
        })
    ));
    let v = m
        .add_vcpu_in(Nanos::ZERO, DomainId(0), p.clone(), 0, Some(CpuSet::one(1)))
        .unwrap();
    assert_eq!(m.placement(v), ("Pool-0", CpuSet::one(1)));
    assert!(matches!(
        m.pin(Nanos::ZERO, v, None),
        Err(MachineError::NeedsPinning { .. })
    ));
    let mut g = Machine::new(config.clone(), PolicyConfig::Rtds(Default::default())).unwrap();
    let w = g.add_vcpu(Nanos::ZERO, DomainId(0), p).unwrap();
    assert_eq!(g.placement(w), ("Pool-0", CpuSet::first(2)));
    assert_eq!(
        Machine::new(
            MachineConfig {
                pcpus: 65,
                ..config
            },
            PolicyConfig::Sedf
        )
        .err(),
        Some(MachineError::TooManyPcpus(65))
    );
}

/// A machine of two pcpus whose Pool-0 holds `pool0` under `policy` (the other pcpu is
/// free), with the VCPUs `params` (domain i for the i-th, affinity as given), all busy.
fn busy_pool(
    pool0: CpuSet,
    policy: PolicyConfig,
    vcpus: &[(VcpuParams, Option<CpuSet>)],
) -> (Machine, Vec<VcpuId>) {
    let config = MachineConfig {
        pcpus: 2,
        ..MachineConfig::default()
    };
    let spec = PoolSpec::new("Pool-0", pool0, policy);
    let mut m = Machine::with_pools(config, vec![spec]).unwrap();
    let ids: Vec<VcpuId> = vcpus
        .iter()
        .enumerate()
        .map(|(d, (params, affinity))| {
            m.add_vcpu_in(
                Nanos::ZERO,
                DomainId(d as u32),
                params.clone(),
                0,
                *affinity,
            )
            .unwrap()
        })
        .collect();
    for &v in &ids {
        m.wake(Nanos::ZERO, v);
    }
    (m, ids)
}

/// An RTDS VCPU without extratime (the schedules below are derived without it).
fn rtds_params(budget: u64, period: u64) -> VcpuParams {
    let mut p = VcpuParams::server(ms(budget), ms(period), 0);
    p.extratime = Some(false);
    p
}

/// RTDS, a pcpu joins: A (2 ms every 10) and B (5 ms every 12), always busy, in Pool-0
/// on pcpu 0. EDF: A (deadline 10) runs 0–1 while B (deadline 12) waits. At 1 pcpu 1
/// joins: A keeps its 1 ms left and its deadline 10, and goes on on pcpu 0 (nothing
/// changed for it: that pcpu does not decide again); B, waiting, takes the joining pcpu
/// with its whole budget and deadline 12: B 1–6 on pcpu 1, A 1–2 on pcpu 0. At 10 A is
/// replenished (deadline 20) and takes the lowest idle pcpu, 0: A 10–12. At 12 B is
/// (deadline 24) and takes pcpu 0 too, idle again: B 12–17 (a migration). At 20: A ran
/// 1 + 1 + 2 = 4 ms, B 5 + 5 = 10 ms; pcpu 0 busy 2 + 2 + 5 = 9 ms, pcpu 1 busy 5 ms.
/// (Restarting the pool at 1, as rtvmm once did, gave A a fresh 2 ms with deadline 11:
/// A ran 1–3, 5 ms in all.)
#[test]
fn a_pcpu_that_joins_leaves_rtds_budgets_and_deadlines_as_they_were() {
    let (mut m, v) = busy_pool(
        CpuSet::one(0),
        PolicyConfig::Rtds(Default::default()),
        &[(rtds_params(2, 10), None), (rtds_params(5, 12), None)],
    );
    let (a, b) = (v[0], v[1]);
    run_to(&mut m, ms(1));
    assert_eq!(m.running(PcpuId(0)), Some(a));
    m.pool_cpu_add(ms(1), 0, 1).unwrap();
    let view = |m: &Machine, v| {
        let view = m.policy_of(v).view(v);
        (view.remaining_budget, view.deadline)
    };
    assert_eq!(view(&m, a), (Some(ms(1)), Some(ms(10))));
    assert_eq!(view(&m, b), (Some(ms(5)), Some(ms(12))));
    run_to(&mut m, ms(1));
    assert_eq!(m.running(PcpuId(0)), Some(a));
    assert_eq!(m.running(PcpuId(1)), Some(b));
    assert_eq!(m.pcpu_stats(PcpuId(0)).do_schedule_calls, 1, "only at 0");
    run_to(&mut m, ms(6));
    assert_eq!(view(&m, a), (Some(Nanos::ZERO), Some(ms(10))));
    assert_eq!(view(&m, b), (Some(Nanos::ZERO), Some(ms(12))));
    run_to(&mut m, ms(20));
    assert_eq!(m.vcpu_stats(a).run, ms(4));
    assert_eq!(m.vcpu_stats(b).run, ms(10));
    assert_eq!(m.vcpu_stats(b).migrations, 1);
    assert_eq!(m.pcpu_stats(PcpuId(0)).busy, ms(9));
    assert_eq!(m.pcpu_stats(PcpuId(1)).busy, ms(5));
    assert_eq!(m.check_invariants(), Ok(()));
}

/// RTDS, a pcpu leaves: the same A (2 ms every 10) and B (5 ms every 12) in Pool-0 on
/// pcpus 0 and 1: A runs on pcpu 0, B on pcpu 1 from 0. At 1 pcpu 0 leaves: A, which
/// ran there, stops with its 1 ms left and deadline 10; the pool is pcpu 1 alone (now
/// its local pcpu 0), where A (deadline 10) beats B (deadline 12, 4 ms left): A 1–2, B
/// 2–6. At 10 A is replenished: A 10–12; at 12 B: B 12–17. At 20: A ran 1 + 1 + 2 =
/// 4 ms (one migration), B 1 + 4 + 5 = 10 ms. (A restart at 1 gave A 1–3: 5 ms.)
#[test]
fn a_pcpu_that_leaves_stops_what_it_ran_and_rtds_budgets_stay() {
    let (mut m, v) = busy_pool(
        CpuSet::first(2),
        PolicyConfig::Rtds(Default::default()),
        &[(rtds_params(2, 10), None), (rtds_params(5, 12), None)],
    );
    let (a, b) = (v[0], v[1]);
    run_to(&mut m, ms(1));
    assert_eq!(
        (m.running(PcpuId(0)), m.running(PcpuId(1))),
        (Some(a), Some(b))
    );
    m.pool_cpu_remove(ms(1), 0, 0).unwrap();
    let view = |m: &Machine, v| {
        let view = m.policy_of(v).view(v);
        (view.remaining_budget, view.deadline)
    };
    assert_eq!(view(&m, a), (Some(ms(1)), Some(ms(10))));
    assert_eq!(view(&m, b), (Some(ms(4)), Some(ms(12))));
    assert_eq!(m.running(PcpuId(0)), None, "pcpu 0 is free");
    run_to(&mut m, ms(1));
    assert_eq!(m.running(PcpuId(1)), Some(a));
    run_to(&mut m, ms(20));
    assert_eq!(m.placement(a), ("Pool-0", CpuSet::one(1)));
    assert_eq!(m.vcpu_stats(a).run, ms(4));
    assert_eq!(m.vcpu_stats(b).run, ms(10));
    assert_eq!(m.vcpu_stats(a).migrations, 1);
    assert_eq!(m.pcpu_stats(PcpuId(0)).busy, ms(1));
    assert_eq!(m.pcpu_stats(PcpuId(1)).busy, ms(13));
    assert_eq!(m.check_invariants(), Ok(()));
}

/// The six fixed-priority server policies.
const SERVERS: [PolicyConfig; 6] = [
    PolicyConfig::Deferrable,
    PolicyConfig::Periodic,
    PolicyConfig::Polling,
    PolicyConfig::Sporadic,
    PolicyConfig::Wcps,
    PolicyConfig::Crps,
];

/// A (4 ms every 10, priority 1) and B (10 ms every 10, priority 2), always busy, in
/// Pool-0 on `pcpus` under `policy`.
fn servers_a_and_b(pcpus: CpuSet, policy: PolicyConfig) -> (Machine, VcpuId, VcpuId) {
    let (m, v) = busy_pool(
        pcpus,
        policy,
        &[
            (VcpuParams::server(ms(4), ms(10), 1), None),
            (VcpuParams::server(ms(10), ms(10), 2), None),
        ],
    );
    (m, v[0], v[1])
}

/// The six fixed-priority servers, a pcpu joins: A (4 ms every 10, priority 1) and B
/// (10 ms every 10, priority 2), always busy, in Pool-0 on pcpu 0 (`two_pools`): A runs
/// 0–3. At 3 pcpu 1 joins: A keeps its 1 ms left and its next replenishment at 10; B,
/// waiting with its whole budget, takes pcpu 1. A 3–4 on pcpu 0, which then idles (B
/// runs on pcpu 1, and nobody else has budget) until A's replenishment at 10: A 10–14.
/// B runs 3–20 on pcpu 1: 7 ms of its first budget, then its second (the Sporadic
/// Server's paybacks land at 10 for A and at B's exhaustion, 13, for B, which is as
/// good). At 20: A ran 3 + 1 + 4 = 8 ms, B 17 ms. (A restart at 3 gave A a fresh
/// 4 ms: 3–7, and 11 ms in all.)
#[test]
fn a_pcpu_that_joins_leaves_server_budgets_and_replenishments_as_they_were() {
    for policy in SERVERS {
        let kind = policy.kind();
        let (mut m, a, b) = servers_a_and_b(CpuSet::one(0), policy);
        run_to(&mut m, ms(3));
        m.pool_cpu_add(ms(3), 0, 1).unwrap();
        let left = |m: &Machine, v| m.policy_of(v).view(v).remaining_budget;
        assert_eq!(left(&m, a), Some(ms(1)), "{kind}");
        assert_eq!(left(&m, b), Some(ms(10)), "{kind}");
        run_to(&mut m, ms(9));
        assert_eq!(left(&m, a), Some(Nanos::ZERO), "{kind}");
        assert_eq!(m.running(PcpuId(0)), None, "{kind}");
        run_to(&mut m, ms(10));
        assert_eq!(left(&m, a), Some(ms(4)), "{kind}: replenished at 10");
        assert_eq!(m.running(PcpuId(0)), Some(a), "{kind}");
        run_to(&mut m, ms(20));
        assert_eq!(m.vcpu_stats(a).run, ms(8), "{kind}");
        assert_eq!(m.vcpu_stats(b).run, ms(17), "{kind}");
        assert_eq!(m.vcpu_stats(b).migrations, 0, "{kind}");
        assert_eq!(m.check_invariants(), Ok(()), "{kind}");
    }
}

/// The six fixed-priority servers, a pcpu leaves: the same A and B in Pool-0 on pcpus 0
/// and 1: A runs on pcpu 0, B on pcpu 1 from 0. At 2 pcpu 0 leaves: A, which ran there,
/// stops with 2 ms left; on pcpu 1 alone it beats B (8 ms left): A 2–4, B 4–10. At 10
/// both are replenished (the Sporadic Server: A's 4 ms come back at 10, B keeps its
/// 2 ms left until it spends them, 14–16, and gets its 8 ms back then, 10 being past):
/// A 10–14, B 14–20. At 20: A ran 2 + 2 + 4 = 8 ms (one migration), B 2 + 6 + 6 =
/// 14 ms. (A restart at 2 gave A 2–6 and 10 ms in all.)
#[test]
fn a_pcpu_that_leaves_stops_what_it_ran_and_server_budgets_stay() {
    for policy in SERVERS {
        let kind = policy.kind();
        let (mut m, a, b) = servers_a_and_b(CpuSet::first(2), policy);
        run_to(&mut m, ms(2));
        assert_eq!(
            (m.running(PcpuId(0)), m.running(PcpuId(1))),
            (Some(a), Some(b)),
            "{kind}"
        );
        m.pool_cpu_remove(ms(2), 0, 0).unwrap();
        let left = |m: &Machine, v| m.policy_of(v).view(v).remaining_budget;
        assert_eq!(left(&m, a), Some(ms(2)), "{kind}");
        assert_eq!(left(&m, b), Some(ms(8)), "{kind}");
        run_to(&mut m, ms(2));
        assert_eq!(m.running(PcpuId(1)), Some(a), "{kind}");
        run_to(&mut m, ms(20));
        assert_eq!(m.vcpu_stats(a).run, ms(8), "{kind}");
        assert_eq!(m.vcpu_stats(b).run, ms(14), "{kind}");
        assert_eq!(m.vcpu_stats(a).migrations, 1, "{kind}");
        assert_eq!(m.check_invariants(), Ok(()), "{kind}");
    }
}

/// Credit, a pcpu joins (10 ms tick, 30 ms slice): A and B wake at 0, A first: A runs
/// from 0 and the tick at 10 charges it 10 ms (credit −10 ms); B waits. At 15 pcpu 1
/// joins, on the pool's tick grid: A keeps its credit (and the 5 ms not charged yet)
/// and goes on on pcpu 0; B takes pcpu 1. The ticks at 20 charge A 10 ms (−20 ms) and
/// B 5 ms (−5 ms). (A restart at 15 reset A's credit: −5 ms at 20.)
#[test]
fn a_pcpu_that_joins_leaves_credit_as_it_was() {
    let credit = VcpuParams {
        weight: 256,
        ..VcpuParams::server(ms(1), ms(10), 0)
    };
    let (mut m, v) = busy_pool(
        CpuSet::one(0),
        PolicyConfig::Credit(Default::default()),
        &[(credit.clone(), None), (credit, None)],
    );
    let (a, b) = (v[0], v[1]);
    let credit_of = |m: &Machine, v| m.policy_of(v).view(v).credit;
    let ns = |x: u64| Nanos::from_ms(x).as_ns() as i64;
    run_to(&mut m, ms(15));
    assert_eq!(credit_of(&m, a), Some(-ns(10)));
    m.pool_cpu_add(ms(15), 0, 1).unwrap();
    assert_eq!(credit_of(&m, a), Some(-ns(10)));
    assert_eq!(credit_of(&m, b), Some(0));
    run_to(&mut m, ms(15));
    assert_eq!(
        (m.running(PcpuId(0)), m.running(PcpuId(1))),
        (Some(a), Some(b))
    );
    run_to(&mut m, ms(20));
    assert_eq!(credit_of(&m, a), Some(-ns(20)));
    assert_eq!(credit_of(&m, b), Some(-ns(5)));
    assert_eq!(m.vcpu_stats(a).run, ms(20));
    assert_eq!(m.vcpu_stats(b).run, ms(5));
    assert_eq!(m.check_invariants(), Ok(()));
}

/// SEDF (partitioned), pcpus join and leave: Pool-0 on pcpu 1 holds A (slice 2 ms every
/// 10), pinned there, busy: A 0–1. At 1 pcpu 0 joins, ahead of pcpu 1 in the pool's
/// numbering: A keeps its 1 ms left and deadline 10 on pcpu 1 (A 1–2), and C (3 ms
/// every 10, from 1), pinned to pcpu 0, runs 1–4 there. At 15 C goes and pcpu 0
/// leaves: A, its slice used up at 12 (A 10–12), keeps its place on the wait queue for
/// its next period 20–30 (full slice, deadline 30) and runs 20–22. At 30: A ran 2 + 2 + 2 = 6 ms, C 3 + 3 = 6 ms (1–4, 11–14). (A restart at 1
/// gave A 1–3; one at 15 gave it 15–17.) A VCPU not pinned to one pcpu keeps its pool
/// from growing: SEDF would have to schedule it partitioned.
#[test]
fn a_partitioned_pool_grows_and_shrinks_without_restarting_its_vcpus() {
    let sedf = |slice| VcpuParams::server(ms(slice), ms(10), 0);
    let (mut m, v) = busy_pool(
        CpuSet::one(1),
        PolicyConfig::Sedf,
        &[(sedf(2), Some(CpuSet::one(1)))],
    );
    let a = v[0];
    let view = |m: &Machine, v| {
        let view = m.policy_of(v).view(v);
        (view.remaining_budget, view.deadline)
    };
    run_to(&mut m, ms(1));
    m.pool_cpu_add(ms(1), 0, 0).unwrap();
    assert_eq!(view(&m, a), (Some(ms(1)), Some(ms(10))));
    let c = m
        .add_vcpu_in(ms(1), DomainId(1), sedf(3), 0, Some(CpuSet::one(0)))
        .unwrap();
    m.wake(ms(1), c);
    run_to(&mut m, ms(1));
    assert_eq!(
        (m.running(PcpuId(0)), m.running(PcpuId(1))),
        (Some(c), Some(a))
    );
    run_to(&mut m, ms(15));
    assert!(matches!(
        m.pool_cpu_remove(ms(15), 0, 0),
        Err(MachineError::AffinityOutsidePool { vcpu: 1, .. })
    ));
    m.remove_vcpu(ms(15), c).unwrap();
    m.pool_cpu_remove(ms(15), 0, 0).unwrap();
    assert_eq!(view(&m, a), (Some(ms(2)), Some(ms(30))));
    run_to(&mut m, ms(30));
    assert_eq!(m.vcpu_stats(a).run, ms(6));
    assert_eq!(m.vcpu_stats(c).run, ms(6));
    assert_eq!(m.check_invariants(), Ok(()));

    let (mut m, v) = busy_pool(CpuSet::one(1), PolicyConfig::Sedf, &[(sedf(2), None)]);
    assert_eq!(
        m.pool_cpu_add(ms(1), 0, 0),
        Err(MachineError::NeedsPinning {
            vcpu: v[0].0,
            policy: PolicyKind::Sedf,
            pool: "Pool-0".to_string(),
            affinity: CpuSet::first(2),
        })
    );
    assert_eq!(
        m.pools().next().unwrap().1,
        CpuSet::one(1),
        "nothing changed"
    );
}

/// ARINC 653, a pcpu joins and follows the pool's major frames. Table: major frame
/// 10 ms, A (VCPU 0) 3 ms then B (VCPU 1) 2 ms; both busy, both pinned to pcpu 0, the
/// pool's only pcpu: A 0–3, B 3–5, idle 5–10, A 10–12. At 12 pcpu 1 joins and B is
/// pinned to it. The frames stay where they were: 10–13 is A's frame on pcpu 1 too (A
/// is not there: idle), 13–15 is B's: B runs 13–15 on pcpu 1, then 23–25; A goes on
/// on pcpu 0 (12–13, 20–23). At 16 pcpu 1 idles (5–10 of the frame is nobody's). At 30:
/// A ran 3 + 3 + 3 = 9 ms, B 2 + 2 + 2 = 6 ms. (Frames started at the join, pcpu 1
/// would have run B 15–17: idle at 14, B at 16.)
#[test]
fn a_pcpu_that_joins_an_arinc_pool_follows_its_major_frames() {
    let frame = |v, runtime| crate::policy::MinorFrame {
        vcpu: VcpuId(v),
        runtime: ms(runtime),
    };
    let table = crate::policy::Arinc653Table {
        major_frame: ms(10),
        minor_frames: vec![frame(0, 3), frame(1, 2)],
    };
    let pinned = Some(CpuSet::one(0));
    let params = VcpuParams::server(ms(1), ms(10), 0);
    let (mut m, v) = busy_pool(
        CpuSet::one(0),
        PolicyConfig::Arinc653(table),
        &[(params.clone(), pinned), (params, pinned)],
    );
    let (a, b) = (v[0], v[1]);
    run_to(&mut m, ms(12));
    assert_eq!(m.vcpu_stats(b).run, ms(2), "B 3–5 on pcpu 0");
    m.pool_cpu_add(ms(12), 0, 1).unwrap();
    m.pin(ms(12), b, Some(CpuSet::one(1))).unwrap();
    run_to(&mut m, ms(12));
    assert_eq!(m.running(PcpuId(1)), None, "A's frame: idle on pcpu 1");
    run_to(&mut m, ms(14));
    assert_eq!(m.running(PcpuId(1)), Some(b), "B's frame, 13–15");
    assert_eq!(m.running(PcpuId(0)), None);
    run_to(&mut m, ms(16));
    assert_eq!(m.running(PcpuId(1)), None);
    run_to(&mut m, ms(30));
    assert_eq!((m.vcpu_stats(a).run, m.vcpu_stats(b).run), (ms(9), ms(6)));
    assert_eq!(m.check_invariants(), Ok(()));
}
