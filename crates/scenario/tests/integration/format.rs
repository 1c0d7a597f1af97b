//! What a valid file means: defaults, derived priorities and weights, events resolved to
//! full parameter sets, and the normalised form that parses back to the same scenario.

use rtvmm_core::guest::{Arrival, GuestScheduler};
use rtvmm_core::machine::{OverheadCharge, ReplenishMode};
use rtvmm_core::model::{DEFAULT_MAX_REPLENISHMENTS, DEFAULT_WEIGHT};
use rtvmm_core::policy::{PolicyConfig, PolicyKind, RtdsMode};
use rtvmm_core::Nanos;
use rtvmm_scenario::Scenario;
use rtvmm_system::Change;

use crate::util::{parse, BASE};

const MS: fn(u64) -> Nanos = Nanos::from_ms;

/// Every feature of the format at least once.
const RICH: &str = r#"
name = "rich"
duration = "2s"
seed = 9

[machine]
quantum = "500us"
replenishment = "tick"
overhead = { do_schedule = "150ns", context_switch = "1.5us" }
overhead_charge = "none"

[scheduler]
policy = "ds"
credit = { tick = "1ms", ticks_per_slice = 1 }
rtds = { mode = "quantum" }
major_frame = "20ms"
minor_frames = [{ domain = "a", runtime = "5ms" }, { domain = "late", runtime = "5ms" }]

[[domain]]
name = "a"
guest = "fp"
vcpu = { budget = "2ms", period = "20ms", offset = "1ms", max_replenishments = 3 }
[[domain.task]]
name = "p"
period = "50ms"
wcet = "5ms"
deadline = "40ms"
offset = "2ms"
etf = 0.5
[[domain.task]]
name = "s"
kind = "sporadic"
period = "30ms"
wcet = "1ms"
max_extra_gap = "10ms"
[[domain.task]]
name = "q"
kind = "aperiodic"
period = "100ms"
wcet = "1ms"
releases = ["7ms", "1ms", "3.5ms"]

[[domain]]
name = "b"
guest = "edf"
vcpu = { budget = "3ms", period = "10ms", weight = 100, cap = 50, extratime = true }
[[domain.task]]
name = "poisson"
kind = "aperiodic"
period = "20ms"
wcet = "1ms"
mean_gap = "25ms"
min_exec = "300us"

[[event]]
at = "100ms"
action = "sched-set"
domain = "a"
budget = "4ms"

[[event]]
at = "200ms"
action = "add-domain"
[event.domain]
name = "late"
guest = "dm"
vcpu = { budget = "1ms", period = "5ms" }
[[event.domain.task]]
name = "x"
period = "10ms"
wcet = "1ms"

[[event]]
at = "300ms"
action = "swap-policy"
policy = "rtds"

[[event]]
at = "400ms"
action = "remove-domain"
domain = "b"

[[event]]
at = "5s"
action = "sched-set"
domain = "late"
period = "6ms"
weight = 7
"#;

#[test]
fn defaults_are_filled_in() {
    let s = Scenario::from_toml(
        "duration = \"1s\"\n[[domain]]\nname = \"d\"\nvcpu = { budget = \"1ms\", period = \"4ms\" }\n",
        "dir/minimal.toml",
    )
    .unwrap();
    assert_eq!(s.name, "minimal", "name defaults to the file's stem");
    assert_eq!(s.seed, 0);
    assert_eq!(s.policy(), PolicyKind::Deferrable);
    let m = &s.system.machine;
    assert_eq!(
        (m.pcpus, m.quantum, m.replenishment),
        (1, MS(1), ReplenishMode::Exact)
    );
    assert_eq!(m.overheads.do_schedule, Nanos::ZERO);
    let d = &s.system.domains[0];
    assert_eq!(d.guest, GuestScheduler::Rm);
    assert_eq!(d.vcpu.priority, 1);
    assert_eq!(d.vcpu.weight, 2500);
    assert_eq!(d.vcpu.cap, 0);
    assert_eq!(
        d.vcpu.extratime, None,
        "not given: the policy's default holds"
    );
    assert!(
        d.vcpu.extratime_under(PolicyKind::Rtds),
        "on under RTDS, as in Xen"
    );
    assert!(!d.vcpu.extratime_under(PolicyKind::Sedf), "off under SEDF");
    assert_eq!(d.vcpu.offset, Nanos::ZERO);
    assert_eq!(d.vcpu.max_replenishments, DEFAULT_MAX_REPLENISHMENTS);
}

#[test]
fn priorities_are_rate_monotonic_with_ties_in_declaration_order() {
    let domain = |name: &str, period: &str| {
        format!(
            "[[domain]]\nname = \"{name}\"\nvcpu = {{ budget = \"1ms\", period = \"{period}\" }}\n"
        )
    };
    let text = format!(
        "duration = \"1s\"\n{}{}{}[[event]]\nat = \"1ms\"\naction = \"add-domain\"\ndomain = {{ name = \"w\", vcpu = {{ budget = \"1ms\", period = \"5ms\" }} }}\n",
        domain("x", "20ms"),
        domain("y", "10ms"),
        domain("z", "20ms"),
    );
    let s = parse(&text);
    let priorities: Vec<(&str, u32)> = s
        .system
        .domains
        .iter()
        .map(|d| (d.name.as_str(), d.vcpu.priority))
        .collect();
    // w (5ms, added later) = 1, y (10ms) = 2, x and z (20ms) = 3, 4 by declaration.
    assert_eq!(priorities, [("x", 3), ("y", 2), ("z", 4)]);
    match &s.system.changes[0].change {
        Change::AddDomain(d) => assert_eq!(d.vcpu.priority, 1),
        other => panic!("{other:?}"),
    }
}

#[test]
fn weights_follow_the_share_unless_given() {
    let s = parse(RICH);
    assert_eq!(s.system.domains[0].vcpu.weight, 1000); // 2/20
    assert_eq!(s.system.domains[1].vcpu.weight, 100); // given
                                                      // A Credit-only VCPU (no budget/period) gets Xen's default weight, and a server
                                                      // policy says what it misses.
    let text = BASE
        .replace(
            r#"vcpu = { budget = "2ms", period = "10ms" }"#,
            "vcpu = { cap = 10 }",
        )
        .replace(r#"policy = "deferrable""#, r#"policy = "credit""#);
    let credit = parse(&text);
    assert_eq!(credit.system.domains[0].vcpu.weight, DEFAULT_WEIGHT);
    assert_eq!(parse(&credit.to_toml()), credit);
    let e = credit.with_policy(PolicyKind::Sedf).unwrap_err();
    assert!(
        e.to_string().starts_with(
            "test.toml: domain 'd1': vcpu: budget and period are not set, and policy sedf needs them"
        ),
        "{e}"
    );
}

#[test]
fn sched_set_keeps_unset_fields_and_rederives_the_weight() {
    let s = parse(RICH);
    let Change::SetParams { domain, params } = &s.system.changes[0].change else {
        panic!("first change is a sched-set");
    };
    assert_eq!(domain, "a");
    assert_eq!(params.budget, MS(4));
    assert_eq!(params.period, MS(20));
    assert_eq!(params.offset, MS(1));
    assert_eq!(params.max_replenishments, 3);
    assert_eq!(params.priority, s.system.domains[0].vcpu.priority);
    assert_eq!(params.weight, 2000, "derived weight follows the new budget");
    let Change::SetParams { params: late, .. } = &s.system.changes[4].change else {
        panic!("last change is a sched-set");
    };
    assert_eq!((late.budget, late.period, late.weight), (MS(1), MS(6), 7));
}

#[test]
fn tasks_are_converted() {
    let s = parse(RICH);
    let a = &s.system.domains[0];
    let p = &a.tasks[0];
    assert_eq!(
        (p.deadline, p.offset, p.min_exec),
        (MS(40), MS(2), Nanos(2_500_000))
    );
    assert_eq!(p.priority, 1, "fp guest: declaration order");
    assert_eq!(a.tasks[1].priority, 2);
    assert_eq!(
        a.tasks[1].arrival,
        Arrival::Sporadic {
            max_extra_gap: MS(10)
        }
    );
    assert_eq!(
        a.tasks[2].arrival,
        Arrival::AperiodicTimes(vec![MS(1), Nanos(3_500_000), MS(7)]),
        "sorted"
    );
    let b = &s.system.domains[1].tasks[0];
    assert_eq!(b.arrival, Arrival::Poisson { mean_gap: MS(25) });
    assert_eq!(b.min_exec, Nanos::from_us(300));
}

#[test]
fn policy_configurations_use_the_scheduler_section() {
    let s = parse(RICH);
    assert_eq!(s.policy(), PolicyKind::Deferrable);
    assert_eq!(
        s.system.changes[2].change,
        Change::SwapPolicy(PolicyConfig::Rtds(RtdsMode::Quantum))
    );
    assert_eq!(s.system.machine.overhead_charge, OverheadCharge::None);
    match s.policy_config(PolicyKind::Credit).unwrap() {
        PolicyConfig::Credit(c) => {
            assert_eq!(c.tick, MS(1));
            assert_eq!(c.slice(), MS(1));
            assert_eq!(c.ticks_per_accounting, 3, "Xen's default, not given");
            assert_eq!(c.accounting_period(), MS(3));
        }
        other => panic!("{other:?}"),
    }
    match s.policy_config(PolicyKind::Arinc653).unwrap() {
        PolicyConfig::Arinc653(table) => {
            assert_eq!(table.major_frame, MS(20));
            // "late" is declared third (after a, b): its VCPU is the third.
            let vcpus: Vec<u32> = table.minor_frames.iter().map(|f| f.vcpu.0).collect();
            assert_eq!(vcpus, [0, 2]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn normalised_form_of_the_base_scenario() {
    let expected = r#"name = "base"
duration = "1s"
seed = 3

[machine]
pcpus = 1
quantum = "1ms"
replenishment = "exact"
overhead = { do_schedule = "0ns", context_switch = "0ns" }
overhead_charge = "incoming"

[scheduler]
policy = "deferrable"

[[domain]]
name = "d1"
guest = "rm"
vcpu = { budget = "2ms", period = "10ms", priority = 1, offset = "0ns", weight = 2000, cap = 0, max_replenishments = 8 }

[[domain.task]]
name = "t1"
kind = "periodic"
period = "50ms"
wcet = "5ms"
deadline = "50ms"
offset = "0ns"
min_exec = "5ms"
"#;
    assert_eq!(parse(BASE).to_toml(), expected);
}

#[test]
fn normalised_form_round_trips() {
    for text in [BASE, RICH] {
        let s = parse(text);
        let normal = s.to_toml();
        let again = parse(&normal);
        assert_eq!(again, s, "normalised text:\n{normal}");
        assert_eq!(again.to_toml(), normal, "normalising is idempotent");
    }
}

#[test]
fn credit_settings_appear_when_credit_is_used() {
    let normal = parse(RICH).to_toml();
    assert!(
        normal
            .contains("credit = { tick = \"1ms\", ticks_per_slice = 1, ticks_per_accounting = 3 }"),
        "{normal}"
    );
    assert!(normal.contains("rtds = { mode = \"quantum\" }"), "{normal}");
    assert!(normal.contains("major_frame = \"20ms\""), "{normal}");
    assert!(!parse(BASE).to_toml().contains("credit ="));
}

#[test]
fn with_policy_keeps_parameters_and_swaps() {
    let s = parse(RICH);
    let rtds = s.with_policy(PolicyKind::Rtds).unwrap();
    assert_eq!(rtds.policy(), PolicyKind::Rtds);
    assert_eq!(rtds.system.domains, s.system.domains);
    assert_eq!(rtds.system.changes, s.system.changes);
    assert!(rtds.to_toml().contains("policy = \"rtds\""));
}

#[test]
fn with_seed_and_duration() {
    let s = parse(BASE);
    assert_eq!(s.with_seed(77).seed, 77);
    assert_eq!(s.with_duration(MS(5)).unwrap().duration, MS(5));
    assert!(s.with_duration(Nanos::ZERO).is_err());
}

#[test]
fn demo_scenario() {
    let s = rtvmm_scenario::demo::demo(42, Nanos::from_secs(10)).unwrap();
    assert_eq!(s.system.domains.len(), 5);
    let servers: Vec<(u64, u64, u32)> = s
        .system
        .domains
        .iter()
        .map(|d| {
            (
                d.vcpu.budget.as_ns() / 1_000_000,
                d.vcpu.period.as_ns() / 1_000_000,
                d.vcpu.priority,
            )
        })
        .collect();
    assert_eq!(
        servers,
        [(2, 10, 1), (4, 20, 2), (6, 30, 3), (8, 40, 4), (10, 50, 5)]
    );
    assert!(s
        .system
        .domains
        .iter()
        .all(|d| d.tasks.len() == 5 && d.vcpu.weight == 2000));
    let table = s.scheduler.arinc653.as_ref().unwrap();
    assert_eq!(table.major_frame, MS(10));
    assert!(table.minor_frames.iter().all(|f| f.runtime == MS(2)));
    // The demo is a scenario like any other: it prints and parses back.
    let again = Scenario::from_toml(&s.to_toml(), "<demo>").unwrap();
    assert_eq!(again, s);
}

/// Nothing a file can hold makes the parser panic: every prefix of a rich file, and the
/// file with any one line left out, gives a scenario or an error.
#[test]
fn truncated_or_mangled_files_never_panic() {
    let mut boundaries: Vec<usize> = RICH.char_indices().map(|(i, _)| i).collect();
    boundaries.push(RICH.len());
    for end in boundaries {
        let _ = Scenario::from_toml(&RICH[..end], "cut.toml");
    }
    let lines: Vec<&str> = RICH.lines().collect();
    for skip in 0..lines.len() {
        let text: Vec<&str> = lines
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != skip)
            .map(|(_, l)| *l)
            .collect();
        let _ = Scenario::from_toml(&text.join("\n"), "cut.toml");
    }
}
