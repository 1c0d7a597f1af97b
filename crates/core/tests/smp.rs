//! Machines of several pcpus driven directly (`wake`/`block`/`poll_timeout`/
//! `handle_timeout`): global EDF (RTDS), global fixed priority (Deferrable, PTPS, Polling,
//! WCPS, CRPS), and pinned VCPUs, each against a schedule derived by hand or against
//! single-pcpu runs of the same VCPUs.

use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::machine::{Machine, MachineConfig, Overheads, PcpuStats};
use rtvmm_core::model::{DomainId, PcpuId, VcpuId, VcpuParams};
use rtvmm_core::policy::{PolicyConfig, RtdsMode};
use rtvmm_core::Nanos;

fn ms(x: u64) -> Nanos {
    Nanos::from_ms(x)
}

fn us(x: u64) -> Nanos {
    Nanos::from_us(x)
}

#[derive(Clone, Copy, Debug)]
enum Act {
    Wake,
    Block,
}

/// Handles everything due strictly before `t`, then accounts up to `t`.
fn run_to(m: &mut Machine, t: Nanos) {
    loop {
        let next = m.poll_timeout();
        if next >= t {
            break;
        }
        m.handle_timeout(next);
        m.check_invariants().unwrap();
    }
    m.advance(t);
}

/// Handles everything due at `t` (after the events reported at `t`).
fn settle(m: &mut Machine, t: Nanos) {
    while m.poll_timeout() <= t {
        m.handle_timeout(t);
        m.check_invariants().unwrap();
    }
}

/// Reports `events` (time, vcpu, what; in time order, before `end`) — at each instant all
/// its events first, then whatever is due — and runs to `end`.
fn drive(m: &mut Machine, events: &[(Nanos, VcpuId, Act)], end: Nanos) {
    for (i, &(t, v, act)) in events.iter().enumerate() {
        assert!(t < end, "an event at {t} after the end {end}");
        run_to(m, t);
        match act {
            Act::Wake => m.wake(t, v),
            Act::Block => m.block(t, v),
        }
        if events.get(i + 1).is_none_or(|next| next.0 > t) {
            settle(m, t);
        }
    }
    run_to(m, end);
}

fn rtds(budget_ms: u64, period_ms: u64, extratime: bool) -> VcpuParams {
    let mut p = VcpuParams::server(ms(budget_ms), ms(period_ms), 0);
    p.extratime = Some(extratime);
    p
}

fn machine(pcpus: u32, overheads: Overheads, policy: PolicyConfig) -> Machine {
    let config = MachineConfig {
        pcpus,
        overheads,
        ..MachineConfig::default()
    };
    Machine::new(config, policy).unwrap()
}

/// Global EDF on 2 pcpus, extratime off. A (4/10), B (4/20), C (2/6), all from 0.
///
/// ```text
/// t=0   wake A, B. pcpu 0 takes A (deadline 10); B waits and pcpu 1 idles: pcpu 1 takes B.
/// t=1   wake C (deadline 6): no pcpu idles; the latest deadline running is B's (20) on
///       pcpu 1, so pcpu 1 (not pcpu 0) is tickled: C runs there until its budget ends at 3.
/// t=2   A blocks: pcpu 0 takes B (3 ms left), which last ran on pcpu 1: a migration.
/// t=3   C is out of budget: pcpu 1 idles (B runs on pcpu 0, A has no work).
/// t=5   B is out of budget: pcpu 0 idles.
/// t=6   C's deadline: replenished (deadline 12); both pcpus idle, and the search starts
///       where C last ran (Xen's `runq_tickle`, for the cache): pcpu 1 takes it, no
///       migration, and C runs until 8.
/// pcpu 0: A 0-2, B 2-5, idle 5-10.   pcpu 1: B 0-1, C 1-3, idle 3-6, C 6-8, idle 8-10.
/// ```
#[test]
fn global_edf_tickles_the_latest_deadline_and_migrates() {
    let (a, b, c) = (VcpuId(0), VcpuId(1), VcpuId(2));
    let events = [
        (ms(0), a, Act::Wake),
        (ms(0), b, Act::Wake),
        (ms(1), c, Act::Wake),
        (ms(2), a, Act::Block),
    ];
    let build = |overheads| {
        let mut m = machine(2, overheads, PolicyConfig::Rtds(RtdsMode::Event));
        for (d, p) in [rtds(4, 10, false), rtds(4, 20, false), rtds(2, 6, false)]
            .into_iter()
            .enumerate()
        {
            m.add_vcpu(ms(0), DomainId(d as u32), p).unwrap();
        }
        m
    };

    let mut m = build(Overheads::ZERO);
    drive(&mut m, &events[..2], ms(1));
    assert_eq!(m.running(PcpuId(0)), Some(a));
    assert_eq!(m.running(PcpuId(1)), Some(b));
    m.wake(ms(1), c);
    settle(&mut m, ms(1));
    assert_eq!(
        m.running(PcpuId(0)),
        Some(a),
        "A (deadline 10) keeps pcpu 0"
    );
    assert_eq!(m.running(PcpuId(1)), Some(c), "C preempts B (deadline 20)");
    drive(&mut m, &events[3..], ms(10));
    assert_eq!(m.vcpu_stats(a).run, ms(2));
    assert_eq!(m.vcpu_stats(b).run, ms(4));
    assert_eq!(m.vcpu_stats(c).run, ms(4));
    assert_eq!(
        [a, b, c].map(|v| m.vcpu_stats(v).migrations),
        [0, 1, 0],
        "B: pcpu 1 then 0; C: pcpu 1 both times"
    );
    let (p0, p1) = (m.pcpu_stats(PcpuId(0)), m.pcpu_stats(PcpuId(1)));
    assert_eq!((p0.busy, p0.idle), (ms(5), ms(5)));
    assert_eq!((p1.busy, p1.idle), (ms(5), ms(5)));
    // pcpu 0 decided at 0, 2, 5; pcpu 1 at 0, 1, 3, 6, 8.
    assert_eq!(p0.do_schedule_calls, 3);
    assert_eq!(p1.do_schedule_calls, 5);

    // With a 100 µs migration cost: charged on pcpu 0 (the destination) at 2, to the
    // incoming VCPU's budget. B's 3 ms left still end at 5 (its slice counts from the
    // decision at 2), so it runs 2.1-5: 1 + 2.9 ms in all; C does not migrate: 1-3, 6-8.
    let mut m = build(Overheads {
        migration: us(100),
        ..Overheads::ZERO
    });
    drive(&mut m, &events, ms(10));
    assert_eq!(m.pcpu_stats(PcpuId(0)).overhead, us(100));
    assert_eq!(m.pcpu_stats(PcpuId(1)).overhead, Nanos::ZERO);
    assert_eq!(m.vcpu_stats(b).run, ms(4) - us(100));
    assert_eq!(m.vcpu_stats(c).run, ms(4));
    assert_eq!(m.vcpu_stats(b).migrations, 1);
}

/// Extratime on 2 pcpus. X (2/10, extratime) and Y (2/10, no extratime) both always have
/// work. At 0 X takes pcpu 0 (equal deadlines: the smaller id), Y pcpu 1. At 2 both budgets
/// end: X gets a fresh budget one level down and runs on (pcpu 0 has nobody better); Y
/// waits, depleted, and pcpu 1 idles until Y's deadline at 10. At 10 both are replenished
/// and Y runs again: X runs 0-11, Y 0-2 and 10-11.
#[test]
fn extratime_runs_on_an_idle_pcpu_after_the_budget_and_without_it_waits() {
    let mut m = machine(2, Overheads::ZERO, PolicyConfig::Rtds(RtdsMode::Event));
    let x = m.add_vcpu(ms(0), DomainId(0), rtds(2, 10, true)).unwrap();
    let y = m.add_vcpu(ms(0), DomainId(1), rtds(2, 10, false)).unwrap();
    drive(
        &mut m,
        &[(ms(0), x, Act::Wake), (ms(0), y, Act::Wake)],
        ms(5),
    );
    assert_eq!(m.running(PcpuId(0)), Some(x));
    assert_eq!(m.running(PcpuId(1)), None, "Y waits for its deadline");
    drive(&mut m, &[], ms(11));
    assert_eq!(m.vcpu_stats(x).run, ms(11));
    assert_eq!(m.vcpu_stats(y).run, ms(3));
    assert_eq!(m.pcpu_stats(PcpuId(1)).idle, ms(8));
    assert_eq!(m.vcpu_stats(x).migrations + m.vcpu_stats(y).migrations, 0);
}

/// Global fixed priority (Deferrable) on 2 pcpus, 1 ms quantum. A (prio 1, 3/10), B (prio
/// 2, 3/10), C (prio 3, 5/10).
///
/// ```text
/// t=0    wake A, B, C: pcpu 0 takes A, pcpu 1 (idle) B; C waits.
/// t=1.5  A blocks (1.5 ms of budget kept): pcpu 0 takes C.
/// t=2.5  A wakes: it beats the lowest priority running (C on pcpu 0, not B on pcpu 1):
///        pcpu 0 takes A back (1.5 ms left, until 4).
/// t=3    B is out of budget: pcpu 1 takes C (4 ms left), which last ran on pcpu 0.
/// t=4    A is out of budget: pcpu 0 idles.   t=7  C is out of budget: pcpu 1 idles.
/// pcpu 0: A 0-1.5, C 1.5-2.5, A 2.5-4, idle 4-10.   pcpu 1: B 0-3, C 3-7, idle 7-10.
/// ```
#[test]
fn global_deferrable_runs_the_two_highest_priorities_and_migrates() {
    let mut m = machine(2, Overheads::ZERO, PolicyConfig::Deferrable);
    let a = m
        .add_vcpu(ms(0), DomainId(0), VcpuParams::server(ms(3), ms(10), 1))
        .unwrap();
    let b = m
        .add_vcpu(ms(0), DomainId(1), VcpuParams::server(ms(3), ms(10), 2))
        .unwrap();
    let c = m
        .add_vcpu(ms(0), DomainId(2), VcpuParams::server(ms(5), ms(10), 3))
        .unwrap();
    drive(
        &mut m,
        &[
            (ms(0), a, Act::Wake),
            (ms(0), b, Act::Wake),
            (ms(0), c, Act::Wake),
            (us(1500), a, Act::Block),
        ],
        ms(2),
    );
    assert_eq!(m.running(PcpuId(0)), Some(c));
    assert_eq!(m.running(PcpuId(1)), Some(b));
    run_to(&mut m, us(2500));
    m.wake(us(2500), a);
    settle(&mut m, us(2500));
    assert_eq!(
        m.running(PcpuId(0)),
        Some(a),
        "A preempts C, the lowest priority"
    );
    assert_eq!(m.running(PcpuId(1)), Some(b));
    drive(&mut m, &[], ms(10));
    assert_eq!(m.vcpu_stats(a).run, ms(3));
    assert_eq!(m.vcpu_stats(b).run, ms(3));
    assert_eq!(m.vcpu_stats(c).run, ms(5));
    assert_eq!([a, b, c].map(|v| m.vcpu_stats(v).migrations), [0, 0, 1]);
    assert_eq!(m.pcpu_stats(PcpuId(0)).busy, ms(4));
    assert_eq!(m.pcpu_stats(PcpuId(1)).busy, ms(7));
}

/// One VCPU of a comparison: its parameters, the pcpu it is pinned to, its events.
struct Pinned {
    params: VcpuParams,
    pcpu: u32,
    events: Vec<(Nanos, Act)>,
}

/// Runs `vcpus` pinned on a machine of 2 pcpus, and each pcpu's VCPUs alone on a machine
/// of one pcpu; returns (per-VCPU run time, per-pcpu stats) of both.
type Outcome = (Vec<Nanos>, Vec<PcpuStats>);

fn pinned_vs_single(policy: PolicyConfig, vcpus: &[Pinned], end: Nanos) -> (Outcome, Outcome) {
    let events_of = |ids: &[(usize, VcpuId)]| {
        let mut e: Vec<(Nanos, VcpuId, Act)> = ids
            .iter()
            .flat_map(|&(i, v)| vcpus[i].events.iter().map(move |&(t, a)| (t, v, a)))
            .collect();
        e.sort_by_key(|x| x.0);
        e
    };
    // Two pcpus, every VCPU pinned.
    let mut m = machine(2, Overheads::ZERO, policy.clone());
    let ids: Vec<(usize, VcpuId)> = vcpus
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let v = m
                .add_vcpu_in(
                    ms(0),
                    DomainId(i as u32),
                    p.params.clone(),
                    0,
                    Some(CpuSet::one(p.pcpu)),
                )
                .unwrap();
            (i, v)
        })
        .collect();
    drive(&mut m, &events_of(&ids), end);
    let smp = (
        ids.iter().map(|&(_, v)| m.vcpu_stats(v).run).collect(),
        vec![m.pcpu_stats(PcpuId(0)), m.pcpu_stats(PcpuId(1))],
    );
    // Each pcpu alone.
    let mut runs = vec![Nanos::ZERO; vcpus.len()];
    let mut stats = Vec::new();
    for pcpu in 0..2 {
        let mut m = machine(1, Overheads::ZERO, policy.clone());
        let ids: Vec<(usize, VcpuId)> = (0..vcpus.len())
            .filter(|&i| vcpus[i].pcpu == pcpu)
            .map(|i| {
                let v = m
                    .add_vcpu(ms(0), DomainId(i as u32), vcpus[i].params.clone())
                    .unwrap();
                (i, v)
            })
            .collect();
        drive(&mut m, &events_of(&ids), end);
        for &(i, v) in &ids {
            runs[i] = m.vcpu_stats(v).run;
        }
        stats.push(m.pcpu_stats(PcpuId(0)));
    }
    (smp, (runs, stats))
}

/// RTDS with every VCPU pinned to one pcpu is partitioned EDF: each pcpu runs exactly as a
/// machine of one pcpu running only its VCPUs.
///
/// Hand check of pcpu 0 (A 2/5 extratime, B 3/10 without, both busy from 0; A blocks at
/// 13 and wakes at 16):
/// ```text
/// 0-2   A (deadline 5). At 2 A is out: an extra-level budget, behind B.
/// 2-5   B (deadline 10), out of budget at 5. At 5 A is replenished (deadline 10, level 0).
/// 5-7   A; 7-10 A at extra levels (B waits, depleted, for 10).
/// 10-12 A (deadline 15 before B's 20); 12-15 B; A blocks at 13 at its extra level.
/// 15-16 idle (B is out, A has no work); 16 A wakes past its deadline: replenished (20).
/// 16-22 A (levels 0, 1, 2; at 20 replenished, deadline 25 before B's 30); 22-25 B; 25-30 A.
/// ```
/// So B runs 9 ms and pcpu 0 idles 1 ms.
#[test]
fn partitioned_rtds_equals_single_pcpu_runs() {
    let vcpus = [
        Pinned {
            params: rtds(2, 5, true),
            pcpu: 0,
            events: vec![
                (ms(0), Act::Wake),
                (ms(13), Act::Block),
                (ms(16), Act::Wake),
            ],
        },
        Pinned {
            params: rtds(3, 10, false),
            pcpu: 0,
            events: vec![(ms(0), Act::Wake)],
        },
        Pinned {
            params: rtds(1, 4, false),
            pcpu: 1,
            events: vec![
                (ms(1), Act::Wake),
                (us(2500), Act::Block),
                (ms(9), Act::Wake),
            ],
        },
        Pinned {
            params: rtds(5, 7, true),
            pcpu: 1,
            events: vec![(ms(0), Act::Wake), (ms(20), Act::Block)],
        },
    ];
    let (smp, single) = pinned_vs_single(PolicyConfig::Rtds(RtdsMode::Event), &vcpus, ms(30));
    assert_eq!(smp, single);
    assert_eq!(smp.0[1], ms(9));
    assert_eq!(smp.1[0].idle, ms(1));
}

/// PTPS on 2 pcpus with every VCPU pinned to one pcpu: each pcpu runs exactly as a machine
/// of one pcpu running only its VCPUs, idled budgets included (global PTPS then equals
/// partitioned PTPS).
///
/// Hand check of pcpu 1 (D prio 1, 2/5, wakes at 3; E prio 2, 4/10, busy from 0): D has
/// no work at 0, so as H it idles its budget away 0-2; E runs 2-5 (D wakes at 3 with no
/// budget left); at 5 D is replenished and runs 5-7; E runs 7-8 (its 4th ms); then no VCPU
/// has budget: idle 8-10.
#[test]
fn partitioned_ptps_equals_single_pcpu_runs() {
    let vcpus = [
        Pinned {
            params: VcpuParams::server(ms(3), ms(10), 1),
            pcpu: 0,
            events: vec![(ms(0), Act::Wake), (ms(2), Act::Block), (ms(9), Act::Wake)],
        },
        Pinned {
            params: VcpuParams::server(ms(4), ms(8), 2),
            pcpu: 0,
            events: vec![(ms(1), Act::Wake)],
        },
        Pinned {
            params: VcpuParams::server(ms(2), ms(5), 1),
            pcpu: 1,
            events: vec![(ms(3), Act::Wake)],
        },
        Pinned {
            params: VcpuParams::server(ms(4), ms(10), 2),
            pcpu: 1,
            events: vec![(ms(0), Act::Wake)],
        },
    ];
    let (smp, single) = pinned_vs_single(PolicyConfig::Periodic, &vcpus, ms(10));
    assert_eq!(smp, single);
    // pcpu 1 by hand: D runs 5-7 (2 ms), E 2-5 and 7-8 (4 ms).
    assert_eq!(smp.0[2], ms(2));
    assert_eq!(smp.0[3], ms(4));
    assert_eq!(smp.1[1].busy, ms(6));
}

/// A machine of 2 pcpus, no overhead, 1 ms quantum, with unpinned servers of parameters
/// (budget ms, period ms, priority), one domain each.
fn servers(policy: PolicyConfig, params: &[(u64, u64, u32)]) -> (Machine, Vec<VcpuId>) {
    let mut m = machine(2, Overheads::ZERO, policy);
    let ids = params
        .iter()
        .enumerate()
        .map(|(d, &(b, p, prio))| {
            m.add_vcpu(
                ms(0),
                DomainId(d as u32),
                VcpuParams::server(ms(b), ms(p), prio),
            )
            .unwrap()
        })
        .collect();
    (m, ids)
}

/// Global PTPS on 2 pcpus. A (prio 1, 2/10) has no work until 1; B (prio 2, 3/10) and C
/// (prio 3, 3/10) are busy from 0.
///
/// ```text
/// t=0  pcpu 0: H_0 = A (budget, no work): pcpu 0 idles, A's budget idled away.
///      pcpu 1: A is H elsewhere, so H_1 = B (work): B runs. C waits.
/// t=1  A wakes with 1 ms left: pcpu 0's plan changes (A runs), pcpu 1's does not.
/// t=2  A is out: pcpu 0 takes C (B is pcpu 1's).   t=3  B is out: pcpu 1 idles.
/// t=5  C is out: both idle until the boundaries at 10.
/// pcpu 0: idle (A idles) 0-1, A 1-2, C 2-5, idle 5-10.   pcpu 1: B 0-3, idle 3-10.
/// ```
/// On one pcpu B would wait for A's idled budget (A 0-2 idle, B 2-5).
#[test]
fn global_ptps_idles_the_highest_budget_on_one_pcpu_while_the_next_runs_on_the_other() {
    let (mut m, v) = servers(
        PolicyConfig::Periodic,
        &[(2, 10, 1), (3, 10, 2), (3, 10, 3)],
    );
    let (a, b, c) = (v[0], v[1], v[2]);
    drive(
        &mut m,
        &[(ms(0), b, Act::Wake), (ms(0), c, Act::Wake)],
        us(500),
    );
    assert_eq!(m.running(PcpuId(0)), None, "A idles its budget away");
    assert_eq!(m.running(PcpuId(1)), Some(b));
    drive(&mut m, &[(ms(1), a, Act::Wake)], ms(10));
    assert_eq!(
        [a, b, c].map(|x| m.vcpu_stats(x).run),
        [ms(1), ms(3), ms(3)]
    );
    let ca = m.budget_counters(a);
    assert_eq!((ca.idled, ca.consumed), (ms(1), ms(1)));
    assert_eq!(m.pcpu_stats(PcpuId(0)).busy, ms(4));
    assert_eq!(m.pcpu_stats(PcpuId(1)).busy, ms(3));
    assert_eq!([a, b, c].map(|x| m.vcpu_stats(x).migrations), [0, 0, 0]);
}

/// Global Polling on 2 pcpus. A (prio 1) and C (prio 3) have no work at 0; B (prio 2) and
/// D (prio 4) are busy; all 2/10.
///
/// ```text
/// t=0  pcpu 0: H = A has no work: discarded; next H = B (work): B runs.
///      pcpu 1: B is pcpu 0's; A is gone; H = C has no work: discarded; D runs.
/// t=1  A wakes: no budget, it waits for its boundary at 10.
/// t=2  B and D are out: both pcpus idle until 10.
/// ```
/// On one pcpu D would run only after B, 2-4 (C discarded at 2).
#[test]
fn global_polling_discards_work_less_servers_and_runs_the_next_on_each_pcpu() {
    let (mut m, v) = servers(
        PolicyConfig::Polling,
        &[(2, 10, 1), (2, 10, 2), (2, 10, 3), (2, 10, 4)],
    );
    let (a, b, c, d) = (v[0], v[1], v[2], v[3]);
    drive(
        &mut m,
        &[
            (ms(0), b, Act::Wake),
            (ms(0), d, Act::Wake),
            (ms(1), a, Act::Wake),
        ],
        ms(10),
    );
    assert_eq!(
        [a, b, c, d].map(|x| m.vcpu_stats(x).run),
        [ms(0), ms(2), ms(0), ms(2)]
    );
    assert_eq!(
        [a, b, c, d].map(|x| m.budget_counters(x).discarded),
        [ms(2), ms(0), ms(2), ms(0)]
    );
    assert_eq!(m.pcpu_stats(PcpuId(0)).busy, ms(2));
    assert_eq!(m.pcpu_stats(PcpuId(1)).busy, ms(2));
}

/// Global WCPS on 2 pcpus. A (prio 1, 3/10) has no work; B (prio 2, 2/10) and C (prio 3,
/// 4/10) are busy.
///
/// ```text
/// t=0  pcpu 0: H_0 = A, no work: L = B runs on both budgets (slice min(3, 2) = 2).
///      pcpu 1: A and B are pcpu 0's: H_1 = C runs on its own budget (slice 4).
/// t=2  B is out (A has 1 ms left): pcpu 0 has no L (C is pcpu 1's): A's budget idles.
/// t=3  A is out: pcpu 0 idles.   t=4  C is out: pcpu 1 idles.
/// ```
#[test]
fn global_wcps_runs_a_lower_server_on_both_budgets_on_one_pcpu() {
    let (mut m, v) = servers(PolicyConfig::Wcps, &[(3, 10, 1), (2, 10, 2), (4, 10, 3)]);
    let (a, b, c) = (v[0], v[1], v[2]);
    drive(
        &mut m,
        &[(ms(0), b, Act::Wake), (ms(0), c, Act::Wake)],
        ms(1),
    );
    assert_eq!(m.running(PcpuId(0)), Some(b), "B on A's and its own budget");
    assert_eq!(m.running(PcpuId(1)), Some(c));
    drive(&mut m, &[], ms(10));
    assert_eq!(
        [a, b, c].map(|x| m.vcpu_stats(x).run),
        [ms(0), ms(2), ms(4)]
    );
    let ca = m.budget_counters(a);
    assert_eq!((ca.consumed, ca.idled), (ms(2), ms(1)));
    assert_eq!(m.budget_counters(b).consumed, ms(2));
    assert_eq!(m.budget_counters(c).consumed, ms(4));
    assert_eq!(m.pcpu_stats(PcpuId(0)).busy, ms(2));
    assert_eq!(m.pcpu_stats(PcpuId(1)).busy, ms(4));
}

/// Global CRPS on 2 pcpus. A (prio 1, 3/10) has no work; B (prio 2, 1/10) and C (prio 3,
/// 2/10) are busy.
///
/// ```text
/// t=0  pcpu 0: H_0 = A, no work: lends to B (work and budget); slice A's 3.
///      pcpu 1: A and B are pcpu 0's: C runs on its own budget (slice 2).
/// t=2  C is out: pcpu 1 has no H (A, B are pcpu 0's; C has none): idle.
/// t=3  A is out: pcpu 0: H = B (1 ms of its own): B runs 3-4.   t=4  idle.
/// ```
#[test]
fn global_crps_lends_the_idle_budget_on_one_pcpu_while_the_next_runs_on_the_other() {
    let (mut m, v) = servers(PolicyConfig::Crps, &[(3, 10, 1), (1, 10, 2), (2, 10, 3)]);
    let (a, b, c) = (v[0], v[1], v[2]);
    drive(
        &mut m,
        &[(ms(0), b, Act::Wake), (ms(0), c, Act::Wake)],
        ms(10),
    );
    assert_eq!(
        [a, b, c].map(|x| m.vcpu_stats(x).run),
        [ms(0), ms(4), ms(2)]
    );
    assert_eq!(m.budget_counters(a).lent, ms(3));
    let cb = m.budget_counters(b);
    assert_eq!((cb.borrowed, cb.consumed), (ms(3), ms(1)));
    assert_eq!(m.pcpu_stats(PcpuId(0)).busy, ms(4));
    assert_eq!(m.pcpu_stats(PcpuId(1)).busy, ms(2));
}

/// CRPS with every VCPU pinned to one pcpu equals partitioned CRPS: each pcpu runs exactly
/// as a machine of one pcpu running only its VCPUs.
///
/// Hand check of pcpu 0 (A prio 1, 2/5, never has work; B prio 2, 3/10, busy):
/// ```text
/// 0-2   A lends to B.   2-5  B on its own budget.   5-7  A (replenished) lends to B, whose
/// budget is 0 (no VCPU with work has budget: any with work).   7-10  nobody has budget.
/// 10-20 the same again.
/// ```
/// So B runs 14 ms by 20.
#[test]
fn pinned_crps_equals_single_pcpu_runs() {
    let vcpus = [
        Pinned {
            params: VcpuParams::server(ms(2), ms(5), 1),
            pcpu: 0,
            events: vec![],
        },
        Pinned {
            params: VcpuParams::server(ms(3), ms(10), 2),
            pcpu: 0,
            events: vec![(ms(0), Act::Wake)],
        },
        Pinned {
            params: VcpuParams::server(ms(1), ms(4), 1),
            pcpu: 1,
            events: vec![(ms(0), Act::Wake), (ms(2), Act::Block), (ms(9), Act::Wake)],
        },
        Pinned {
            params: VcpuParams::server(ms(2), ms(5), 2),
            pcpu: 1,
            events: vec![(ms(0), Act::Wake), (ms(13), Act::Block)],
        },
    ];
    let (smp, single) = pinned_vs_single(PolicyConfig::Crps, &vcpus, ms(20));
    assert_eq!(smp, single);
    assert_eq!(smp.0[1], ms(14));
    assert_eq!(smp.1[0].busy, ms(14));
}
