//! Random machines of several pcpus driven by random wakes, blocks, pins and pool
//! changes (pcpus moving out of Pool-0 and back, in any order, so a pcpu joins or
//! leaves in the middle of a pool's numbering; domains moving): after every step no VCPU runs on two pcpus or outside its affinity or
//! pool, time adds up exactly on every pcpu (`check_invariants`), the pcpus' busy
//! time is the VCPUs' run time, and the same operations give the same counters.
use super::*;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Wake(usize),
    Block(usize),
    /// Pin a VCPU to a set of pcpus (a bit mask, 0 = back to the whole pool).
    Pin(usize, u64),
    /// Move a pcpu out of Pool-0 into pool `p1` (created on first use).
    SplitOff(u32),
    /// Move a pcpu of `p1` back into Pool-0 (where it may join in the middle of the
    /// pool's numbering).
    JoinBack(u32),
    /// Move a domain to `p1`, or back to Pool-0.
    Migrate(usize, bool),
}

fn op(vcpus: usize, pcpus: u32) -> impl Strategy<Value = (u64, Op)> {
    let kind = prop_oneof![
        4 => (0..vcpus).prop_map(Op::Wake),
        3 => (0..vcpus).prop_map(Op::Block),
        2 => (0..vcpus, 0..(1u64 << pcpus)).prop_map(|(v, m)| Op::Pin(v, m)),
        1 => (0..pcpus).prop_map(Op::SplitOff),
        1 => (0..pcpus).prop_map(Op::JoinBack),
        1 => (0..vcpus, any::<bool>()).prop_map(|(v, b)| Op::Migrate(v, b)),
    ];
    (0u64..3_000, kind)
}

fn policy(i: u8) -> PolicyConfig {
    match i % 8 {
        0 => PolicyConfig::Rtds(Default::default()),
        1 => PolicyConfig::Deferrable,
        2 => PolicyConfig::Sporadic,
        3 => PolicyConfig::Credit(Default::default()),
        4 => PolicyConfig::Periodic,
        5 => PolicyConfig::Polling,
        6 => PolicyConfig::Wcps,
        _ => PolicyConfig::Crps,
    }
}

/// Runs the operations; returns every counter, for determinism.
fn drive(
    pcpus: u32,
    policy_index: u8,
    servers: &[(u64, u64)],
    ops: &[(u64, Op)],
) -> Result<Vec<String>, TestCaseError> {
    let config = MachineConfig {
        pcpus,
        overheads: Overheads {
            do_schedule: Nanos(3_000),
            context_switch: Nanos(5_000),
            migration: Nanos(7_000),
            lock: Nanos(1_000),
        },
        ..MachineConfig::default()
    };
    let mut m = Machine::new(config, policy(policy_index)).unwrap();
    let mut vcpus = Vec::new();
    for (d, &(b, p)) in servers.iter().enumerate() {
        let mut params = VcpuParams::server(us(b), us(p), d as u32);
        params.extratime = Some(d % 2 == 0);
        vcpus.push(m.add_vcpu(Nanos::ZERO, DomainId(d as u32), params).unwrap());
    }
    // A pcpu that joins or leaves a pool changes no budget or deadline (Credit's
    // view has neither: the VCPU a leaving pcpu ran is charged, as at a
    // `do_schedule`).
    let budgets = |m: &Machine| -> Vec<(Option<Nanos>, Option<Nanos>)> {
        vcpus
            .iter()
            .map(|&v| {
                let view = m.policy_of(v).view(v);
                (view.remaining_budget, view.deadline)
            })
            .collect()
    };
    let mut now = Nanos::ZERO;
    for (gap, op) in ops {
        now += us(*gap);
        run_to(&mut m, now);
        prop_assert_eq!(m.check_invariants(), Ok(()), "before {:?} at {}", op, now);
        match *op {
            Op::Wake(i) => m.wake(now, vcpus[i]),
            Op::Block(i) => m.block(now, vcpus[i]),
            Op::Pin(i, mask) => {
                let set = (mask != 0)
                    .then(|| CpuSet::from_indices((0..64).filter(|i| mask >> i & 1 == 1)))
                    .flatten();
                let _ = m.pin(now, vcpus[i], set);
            }
            Op::SplitOff(c) => {
                if m.pool_index("p1").is_err() {
                    let _ = m.pool_create(
                        now,
                        PoolSpec::new("p1", CpuSet::EMPTY, policy(policy_index + 1)),
                    );
                }
                let before = budgets(&m);
                if m.pool_cpu_remove(now, 0, c).is_ok() {
                    m.pool_cpu_add(now, 1, c).unwrap();
                }
                prop_assert_eq!(budgets(&m), before, "{:?} at {}", op, now);
            }
            Op::JoinBack(c) => {
                let before = budgets(&m);
                if m.pool_cpu_remove(now, 1, c).is_ok() {
                    m.pool_cpu_add(now, 0, c).unwrap();
                }
                prop_assert_eq!(budgets(&m), before, "{:?} at {}", op, now);
            }
            Op::Migrate(i, to_p1) => {
                let _ = m.pool_migrate(now, DomainId(i as u32), usize::from(to_p1));
            }
        }
        // Everything due at this instant, then the invariants again.
        run_to(&mut m, now);
        prop_assert_eq!(m.check_invariants(), Ok(()), "after {:?} at {}", op, now);
    }
    run_to(&mut m, now + us(20_000));
    let end = m.now();
    let mut busy = Nanos::ZERO;
    let mut out = Vec::new();
    for c in 0..pcpus {
        let s = m.pcpu_stats(PcpuId(c));
        prop_assert_eq!(s.busy + s.idle + s.overhead, end, "pcpu {}", c);
        busy += s.busy;
        out.push(format!("{s:?}"));
    }
    let run = vcpus
        .iter()
        .fold(Nanos::ZERO, |sum, &v| sum + m.vcpu_stats(v).run);
    prop_assert_eq!(busy, run, "busy pcpu time is VCPU run time");
    for &v in &vcpus {
        out.push(format!("{:?} {:?}", m.vcpu_stats(v), m.placement(v)));
    }
    Ok(out)
}

proptest! {
    // 300 cases by default; `PROPTEST_CASES` sets another count.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(300),
        ..ProptestConfig::default()
    })]
    #[test]
    fn no_vcpu_runs_twice_or_outside_its_affinity_and_time_adds_up(
        pcpus in 2u32..=3,
        policy_index in 0u8..8,
        servers in prop::collection::vec((100u64..4_000, 4_000u64..12_000), 2..5),
        ops in prop::collection::vec(op(4, 3), 1..60),
    ) {
        let vcpus = servers.len();
        let ops: Vec<(u64, Op)> = ops
            .into_iter()
            .map(|(g, o)| (g, match o {
                Op::Wake(i) => Op::Wake(i % vcpus),
                Op::Block(i) => Op::Block(i % vcpus),
                Op::Pin(i, m) => Op::Pin(i % vcpus, m & ((1 << pcpus) - 1)),
                Op::SplitOff(c) => Op::SplitOff(c % pcpus),
                Op::JoinBack(c) => Op::JoinBack(c % pcpus),
                Op::Migrate(i, b) => Op::Migrate(i % vcpus, b),
            }))
            .collect();
        let first = drive(pcpus, policy_index, &servers, &ops)?;
        let again = drive(pcpus, policy_index, &servers, &ops)?;
        prop_assert_eq!(first, again, "same operations, same counters");
    }
}
