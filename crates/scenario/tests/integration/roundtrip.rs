//! The normalised form (`rtvmm check`) and `rtvmm analyze --emit scenario` are scenarios
//! that check accepts and that simulate to the same bytes — over generated scenarios with
//! every policy, every guest, every task kind and every kind of event.
//!
//! `ROUNDTRIP_CASES=5000 cargo test -p rtvmm-scenario --test integration roundtrip`
//! searches harder (default 48 cases).

use proptest::prelude::*;
use rtvmm_analyze::{self as analyze, Input};
use rtvmm_core::policy::PolicyKind;
use rtvmm_scenario::Scenario;
use rtvmm_sim::run::{run, Record};
use rtvmm_system::trace::TraceFormat;

/// Policies that read budget and period (the others run without them).
fn needs_servers(kind: PolicyKind) -> bool {
    !matches!(kind, PolicyKind::Credit | PolicyKind::Arinc653)
}

#[derive(Clone, Debug)]
struct GenTask {
    /// 0 periodic, 1 sporadic, 2 aperiodic at given times, 3 Poisson.
    kind: u8,
    period_ms: u64,
    wcet_permille: u64,
    deadline_permille: Option<u64>,
    offset_ms: Option<u64>,
    etf_tenths: Option<u64>,
}

#[derive(Clone, Debug)]
struct GenVcpu {
    budget_ms: u64,
    period_ms: u64,
    priority: Option<u32>,
    weight: Option<u32>,
    cap: Option<u32>,
    extratime: Option<bool>,
    max_replenishments: Option<u32>,
    offset_ms: Option<u64>,
}

#[derive(Clone, Debug)]
struct GenDomain {
    guest: &'static str,
    vcpu: GenVcpu,
    tasks: Vec<GenTask>,
}

#[derive(Clone, Debug)]
enum GenEvent {
    /// Which domain (modulo the live ones), and which fields it sets.
    SchedSet {
        domain: usize,
        budget_ms: Option<u64>,
        period_ms: Option<u64>,
        weight: Option<u32>,
        cap: Option<u32>,
        extratime: Option<bool>,
    },
    Swap(PolicyKind),
    Add(GenDomain),
    Remove(usize),
}

#[derive(Clone, Debug)]
struct GenScenario {
    policy: PolicyKind,
    /// Write budget/period for every domain even under Credit/ARINC 653 (always when a
    /// policy that needs them is involved).
    servers: bool,
    priorities: bool,
    tick_replenishment: bool,
    overhead: bool,
    /// Bit 0: `overhead_charge = "none"`; bit 1: Credit's 1 ms setting (else a 10 ms tick,
    /// 2 ticks per slice); bit 2: RTDS in quantum mode.
    knobs: u8,
    seed: u64,
    domains: Vec<GenDomain>,
    events: Vec<(u64, GenEvent)>,
}

const PERIODS_MS: [u64; 4] = [5, 10, 20, 40];

fn task() -> impl Strategy<Value = GenTask> {
    (
        0u8..4,
        prop::sample::select(PERIODS_MS.to_vec()),
        50u64..600,
        prop::option::of(500u64..=1000),
        prop::option::of(0u64..5),
        prop::option::of(1u64..=10),
    )
        .prop_map(
            |(kind, period_ms, wcet_permille, deadline_permille, offset_ms, etf_tenths)| GenTask {
                kind,
                period_ms,
                wcet_permille,
                deadline_permille,
                offset_ms,
                etf_tenths,
            },
        )
}

fn vcpu() -> impl Strategy<Value = GenVcpu> {
    (
        prop::sample::select(PERIODS_MS.to_vec()),
        1u64..=5,
        prop::option::of(1u32..10),
        prop::option::of(1u32..20_000),
        prop::option::of(0u32..=100),
        prop::option::of(any::<bool>()),
        prop::option::of(1u32..10),
        prop::option::of(0u64..3),
    )
        .prop_map(
            |(period_ms, budget, priority, weight, cap, extratime, max_repl, offset_ms)| GenVcpu {
                budget_ms: budget.min(period_ms),
                period_ms,
                priority,
                weight,
                cap,
                extratime,
                max_replenishments: max_repl,
                offset_ms,
            },
        )
}

fn domain() -> impl Strategy<Value = GenDomain> {
    (
        prop::sample::select(vec!["rm", "dm", "fp", "edf"]),
        vcpu(),
        prop::collection::vec(task(), 1..=2),
    )
        .prop_map(|(guest, vcpu, tasks)| GenDomain { guest, vcpu, tasks })
}

fn event() -> impl Strategy<Value = GenEvent> {
    prop_oneof![
        (
            0usize..4,
            prop::option::of(1u64..=5),
            prop::option::of(prop::sample::select(PERIODS_MS.to_vec())),
            prop::option::of(1u32..20_000),
            prop::option::of(0u32..=100),
            prop::option::of(any::<bool>()),
        )
            .prop_map(|(domain, budget_ms, period_ms, weight, cap, extratime)| {
                GenEvent::SchedSet {
                    domain,
                    budget_ms,
                    period_ms,
                    weight,
                    cap,
                    extratime,
                }
            }),
        prop::sample::select(PolicyKind::ALL.to_vec()).prop_map(GenEvent::Swap),
        domain().prop_map(GenEvent::Add),
        (0usize..4).prop_map(GenEvent::Remove),
    ]
}

fn scenario() -> impl Strategy<Value = GenScenario> {
    (
        prop::sample::select(PolicyKind::ALL.to_vec()),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        (0u8..8, 0u64..1000),
        prop::collection::vec(domain(), 1..=3),
        prop::collection::vec((0u64..150, event()), 0..=3),
    )
        .prop_map(
            |(policy, servers, priorities, tick, overhead, (knobs, seed), domains, mut events)| {
                events.sort_by_key(|(at, _)| *at);
                GenScenario {
                    policy,
                    servers,
                    priorities,
                    tick_replenishment: tick,
                    overhead,
                    knobs,
                    seed,
                    domains,
                    events,
                }
            },
        )
}

/// The scenario as TOML. Made valid by construction where that is easy (budget within
/// period, live domains only in events, an ARINC 653 table naming every domain); the rest
/// is left to `check`, and cases it refuses are skipped.
fn to_toml(g: &GenScenario) -> String {
    let policies: Vec<PolicyKind> = std::iter::once(g.policy)
        .chain(g.events.iter().filter_map(|(_, e)| match e {
            GenEvent::Swap(p) => Some(*p),
            _ => None,
        }))
        .collect();
    let servers = g.servers || policies.iter().any(|p| needs_servers(*p));
    let mut all_domains: Vec<String> = (1..=g.domains.len()).map(|i| format!("d{i}")).collect();
    let added = g
        .events
        .iter()
        .filter(|(_, e)| matches!(e, GenEvent::Add(_)))
        .count();
    for i in 0..added {
        all_domains.push(format!("a{}", i + 1));
    }
    let mut t = format!(
        "name = \"generated\"\nduration = \"200ms\"\nseed = {}\n\n[machine]\nquantum = \"1ms\"\n",
        g.seed
    );
    if g.tick_replenishment {
        t.push_str("replenishment = \"tick\"\n");
    }
    if g.overhead {
        t.push_str("overhead = { do_schedule = \"150ns\", context_switch = \"1.5us\" }\n");
    }
    if g.knobs & 1 != 0 {
        t.push_str("overhead_charge = \"none\"\n");
    }
    t.push_str(&format!(
        "\n[scheduler]\npolicy = \"{}\"\n",
        g.policy.name()
    ));
    if policies.contains(&PolicyKind::Credit) {
        t.push_str(if g.knobs & 2 != 0 {
            "credit = { tick = \"1ms\", ticks_per_slice = 1 }\n"
        } else {
            "credit = { tick = \"10ms\", ticks_per_slice = 2 }\n"
        });
    }
    if policies.contains(&PolicyKind::Rtds) && g.knobs & 4 != 0 {
        t.push_str("rtds = { mode = \"quantum\" }\n");
    }
    if policies.contains(&PolicyKind::Arinc653) {
        let frames: Vec<String> = all_domains
            .iter()
            .map(|d| format!("{{ domain = \"{d}\", runtime = \"1ms\" }}"))
            .collect();
        t.push_str(&format!(
            "major_frame = \"{}ms\"\nminor_frames = [{}]\n",
            all_domains.len() * 2,
            frames.join(", ")
        ));
    }
    for (i, d) in g.domains.iter().enumerate() {
        t.push_str("\n[[domain]]\n");
        write_domain(
            &mut t,
            &format!("d{}", i + 1),
            d,
            servers,
            g.priorities,
            "domain",
        );
    }
    let mut live: Vec<String> = (1..=g.domains.len()).map(|i| format!("d{i}")).collect();
    let mut added = 0;
    let mut periods: std::collections::BTreeMap<String, u64> = g
        .domains
        .iter()
        .enumerate()
        .map(|(i, d)| (format!("d{}", i + 1), d.vcpu.period_ms))
        .collect();
    for (at, e) in &g.events {
        match e {
            GenEvent::SchedSet {
                domain,
                budget_ms,
                period_ms,
                weight,
                cap,
                extratime,
            } => {
                if live.is_empty() {
                    continue;
                }
                let name = live[domain % live.len()].clone();
                t.push_str(&format!(
                    "\n[[event]]\nat = \"{at}ms\"\naction = \"sched-set\"\ndomain = \"{name}\"\n"
                ));
                let period = period_ms.unwrap_or(periods[&name]);
                if let Some(p) = period_ms {
                    t.push_str(&format!("period = \"{p}ms\"\n"));
                    periods.insert(name.clone(), *p);
                }
                if let Some(b) = budget_ms {
                    t.push_str(&format!("budget = \"{}ms\"\n", b.min(&period)));
                }
                if let Some(w) = weight {
                    t.push_str(&format!("weight = {w}\n"));
                }
                if let Some(c) = cap {
                    t.push_str(&format!("cap = {c}\n"));
                }
                if let Some(x) = extratime {
                    t.push_str(&format!("extratime = {x}\n"));
                }
            }
            GenEvent::Swap(p) => {
                t.push_str(&format!(
                    "\n[[event]]\nat = \"{at}ms\"\naction = \"swap-policy\"\npolicy = \"{}\"\n",
                    p.name()
                ));
            }
            GenEvent::Add(d) => {
                added += 1;
                let name = format!("a{added}");
                t.push_str(&format!(
                    "\n[[event]]\nat = \"{at}ms\"\naction = \"add-domain\"\n[event.domain]\n"
                ));
                write_domain(&mut t, &name, d, servers, g.priorities, "event.domain");
                periods.insert(name.clone(), d.vcpu.period_ms);
                live.push(name);
            }
            GenEvent::Remove(i) => {
                if live.is_empty() {
                    continue;
                }
                let name = live.remove(i % live.len());
                t.push_str(&format!(
                    "\n[[event]]\nat = \"{at}ms\"\naction = \"remove-domain\"\ndomain = \"{name}\"\n"
                ));
            }
        }
    }
    t
}

fn write_domain(
    t: &mut String,
    name: &str,
    d: &GenDomain,
    servers: bool,
    priorities: bool,
    table: &str,
) {
    t.push_str(&format!("name = \"{name}\"\nguest = \"{}\"\n", d.guest));
    let v = &d.vcpu;
    let mut fields = Vec::new();
    if servers {
        fields.push(format!("budget = \"{}ms\"", v.budget_ms));
        fields.push(format!("period = \"{}ms\"", v.period_ms));
    }
    if priorities {
        fields.push(format!("priority = {}", v.priority.unwrap_or(1)));
    }
    if let Some(w) = v.weight {
        fields.push(format!("weight = {w}"));
    }
    if let Some(c) = v.cap {
        fields.push(format!("cap = {c}"));
    }
    if let Some(x) = v.extratime {
        fields.push(format!("extratime = {x}"));
    }
    if let Some(m) = v.max_replenishments {
        fields.push(format!("max_replenishments = {m}"));
    }
    if let Some(o) = v.offset_ms {
        fields.push(format!("offset = \"{o}ms\""));
    }
    if !fields.is_empty() {
        t.push_str(&format!("vcpu = {{ {} }}\n", fields.join(", ")));
    }
    for (j, task) in d.tasks.iter().enumerate() {
        let period_us = task.period_ms * 1000;
        t.push_str(&format!(
            "\n[[{table}.task]]\nname = \"t{}\"\nperiod = \"{}ms\"\nwcet = \"{}us\"\n",
            j + 1,
            task.period_ms,
            (period_us * task.wcet_permille / 1000).max(1)
        ));
        if let Some(d) = task.deadline_permille {
            t.push_str(&format!(
                "deadline = \"{}us\"\n",
                (period_us * d / 1000).max(period_us * task.wcet_permille / 1000 + 1)
            ));
        }
        match task.kind {
            1 => t.push_str("kind = \"sporadic\"\n"),
            2 => t.push_str("kind = \"aperiodic\"\nreleases = [\"3ms\", \"17ms\", \"90ms\"]\n"),
            3 => t.push_str("kind = \"aperiodic\"\nmean_gap = \"15ms\"\n"),
            _ => {}
        }
        if task.kind != 2 {
            if let Some(o) = task.offset_ms {
                t.push_str(&format!("offset = \"{o}ms\"\n"));
            }
        }
        if let Some(e) = task.etf_tenths {
            t.push_str(&format!("etf = {}\n", e as f64 / 10.0));
        }
        if d.guest == "fp" {
            t.push_str(&format!("priority = {}\n", j + 1));
        }
    }
}

/// Every byte a run writes: results JSON, trace (both formats) and jobs CSV; or the
/// error.
fn simulate(s: &Scenario) -> Result<Vec<u8>, String> {
    let run = run(
        s,
        Record {
            trace: true,
            jobs: true,
        },
    )
    .map_err(|e| e.to_string())?;
    let mut bytes = run.results.to_json().into_bytes();
    if let Some(trace) = &run.trace {
        trace.write(&mut bytes, TraceFormat::ChromeJson).unwrap();
        trace.write(&mut bytes, TraceFormat::Csv).unwrap();
    }
    if let Some(jobs) = &run.jobs {
        rtvmm_system::results::write_jobs_csv(&mut bytes, jobs).unwrap();
    }
    Ok(bytes)
}

/// `text` passes check, its normalised form passes check, normalises to itself, parses
/// to the same scenario and simulates to the same bytes.
fn assert_round_trip(text: &str, what: &str) -> Result<(), TestCaseError> {
    let scenario = Scenario::from_toml(text, "gen.toml")
        .map_err(|e| TestCaseError::fail(format!("{what} refused by check: {e}\n{text}")))?;
    let normal = scenario.to_toml();
    let again = Scenario::from_toml(&normal, "gen.toml")
        .map_err(|e| TestCaseError::fail(format!("normalised {what} refused: {e}\n{normal}")))?;
    prop_assert_eq!(&again, &scenario, "{}", normal);
    prop_assert_eq!(again.to_toml(), normal.clone());
    prop_assert!(
        simulate(&scenario) == simulate(&again),
        "{what} and its normalised form simulate differently:\n{normal}"
    );
    Ok(())
}

fn cases() -> u32 {
    std::env::var("ROUNDTRIP_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(48)
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: cases(),
        max_global_rejects: 100_000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn normalised_and_emitted_scenarios_check_and_simulate_the_same(g in scenario()) {
        let text = to_toml(&g);
        // What check refuses is not this test's concern (bad input has its own tests).
        prop_assume!(Scenario::from_toml(&text, "gen.toml").is_ok());
        assert_round_trip(&text, "the scenario")?;

        let input = Input::Scenario(
            Scenario::from_toml_for_analysis(&text, "gen.toml").expect("parses"),
        );
        if let Ok(report) = analyze::analyze(&input, &analyze::Options::default()) {
            // Refusing to emit (a domain without an interface) is fine; emitting a
            // scenario check refuses is not.
            if let Ok(emitted) = analyze::emit_scenario(&input, &report) {
                assert_round_trip(&emitted, "the emitted scenario")?;
            }
        }
    }
}

/// The case issue 13 names: a Credit domain without server parameters and a
/// `sched-set` giving it only a budget normalised to `period = "0ns"`.
#[test]
fn a_sched_set_with_only_a_budget_normalises_to_a_valid_scenario() {
    for set in ["budget = \"1ms\"", "period = \"20ms\"", "weight = 100"] {
        let text = format!(
            "duration = \"1s\"\n[scheduler]\npolicy = \"credit\"\n[[domain]]\nname = \"d1\"\n\
             [[domain.task]]\nname = \"t\"\nperiod = \"10ms\"\nwcet = \"1ms\"\n\
             [[event]]\nat = \"100ms\"\naction = \"sched-set\"\ndomain = \"d1\"\n{set}\n"
        );
        assert_round_trip(&text, set).unwrap();
    }
}
