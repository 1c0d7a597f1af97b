//! The bound on times (`MAX_TIME`, "Limits" in the crate docs): every time field one
//! nanosecond above it is refused naming the field and the limit; a scenario with every
//! time at the limit simulates under every policy without overflowing (tests run in debug
//! builds, where an overflow panics). And overheads must leave room in the quantum.

use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_scenario::{ErrorKind, Scenario, MAX_TIME};
use rtvmm_sim::run::{run, Record};

use crate::util::{assert_names, edit, error, parse, BASE};

/// `MAX_TIME` as written in a file, and one nanosecond more.
const AT_LIMIT: &str = "100000000s";
const ABOVE: &str = "100000000000000001ns";

#[test]
fn the_limit_is_ten_to_the_seventeen_nanoseconds() {
    assert_eq!(MAX_TIME, Nanos::from_secs(100_000_000));
    assert_eq!(AT_LIMIT.parse::<Nanos>(), Ok(MAX_TIME));
    assert_eq!(ABOVE.parse::<Nanos>(), Ok(Nanos(MAX_TIME.as_ns() + 1)));
}

/// One time field: the text to replace in BASE, its replacement with `{}` for the value,
/// and where the error must point (domain, task, field).
type Case<'a> = (&'a str, &'a str, Option<&'a str>, Option<&'a str>, &'a str);

/// Every time field, set one nanosecond above the limit.
#[test]
fn a_time_just_above_the_limit_is_refused_naming_the_field() {
    const VCPU: &str = r#"vcpu = { budget = "2ms", period = "10ms" }"#;
    const WCET: &str = r#"wcet = "5ms""#;
    let cases: &[Case] = &[
        (r#"duration = "1s""#, r#"duration = "{}""#, None, None, "duration"),
        ("seed = 3", "seed = 3\n[machine]\nquantum = \"{}\"", None, None, "quantum"),
        (
            "seed = 3",
            "seed = 3\n[machine]\noverhead = { do_schedule = \"{}\" }",
            None,
            None,
            "overhead.do_schedule",
        ),
        (
            "seed = 3",
            "seed = 3\n[machine]\noverhead = { context_switch = \"{}\" }",
            None,
            None,
            "overhead.context_switch",
        ),
        (
            r#"policy = "deferrable""#,
            "policy = \"credit\"\ncredit = { tick = \"{}\", ticks_per_slice = 1, ticks_per_accounting = 1 }",
            None,
            None,
            "credit.tick",
        ),
        (
            r#"policy = "deferrable""#,
            "policy = \"deferrable\"\nmajor_frame = \"{}\"\nminor_frames = [{ domain = \"d1\", runtime = \"1ms\" }]",
            None,
            None,
            "major_frame",
        ),
        (
            r#"policy = "deferrable""#,
            "policy = \"deferrable\"\nmajor_frame = \"10ms\"\nminor_frames = [{ domain = \"d1\", runtime = \"{}\" }]",
            None,
            None,
            "minor_frames[1].runtime",
        ),
        (VCPU, r#"vcpu = { budget = "{}", period = "10ms" }"#, Some("d1"), None, "vcpu.budget"),
        (VCPU, r#"vcpu = { budget = "2ms", period = "{}" }"#, Some("d1"), None, "vcpu.period"),
        (
            VCPU,
            r#"vcpu = { budget = "2ms", period = "10ms", offset = "{}" }"#,
            Some("d1"),
            None,
            "vcpu.offset",
        ),
        (r#"period = "50ms""#, r#"period = "{}""#, Some("d1"), Some("t1"), "period"),
        (WCET, r#"wcet = "{}""#, Some("d1"), Some("t1"), "wcet"),
        (WCET, "wcet = \"5ms\"\ndeadline = \"{}\"", Some("d1"), Some("t1"), "deadline"),
        (WCET, "wcet = \"5ms\"\noffset = \"{}\"", Some("d1"), Some("t1"), "offset"),
        (WCET, "wcet = \"5ms\"\nmin_exec = \"{}\"", Some("d1"), Some("t1"), "min_exec"),
        (
            WCET,
            "wcet = \"5ms\"\nkind = \"sporadic\"\nmax_extra_gap = \"{}\"",
            Some("d1"),
            Some("t1"),
            "max_extra_gap",
        ),
        (
            WCET,
            "wcet = \"5ms\"\nkind = \"aperiodic\"\nreleases = [\"1ms\", \"{}\"]",
            Some("d1"),
            Some("t1"),
            "releases[2]",
        ),
        (
            WCET,
            "wcet = \"5ms\"\nkind = \"aperiodic\"\nmean_gap = \"{}\"",
            Some("d1"),
            Some("t1"),
            "mean_gap",
        ),
        (
            WCET,
            "wcet = \"5ms\"\n[[event]]\nat = \"{}\"\naction = \"sched-set\"\ndomain = \"d1\"\nbudget = \"3ms\"",
            None,
            None,
            "at",
        ),
        (
            WCET,
            "wcet = \"5ms\"\n[[event]]\nat = \"1s\"\naction = \"sched-set\"\ndomain = \"d1\"\nperiod = \"{}\"",
            Some("d1"),
            None,
            "period",
        ),
    ];
    for &(old, new, domain, task, field) in cases {
        // At the limit the file is accepted by the reader (some combinations are refused
        // later for other reasons, e.g. a budget above its period).
        let above = edit(BASE, old, &new.replace("{}", ABOVE));
        let e = error(&above);
        assert!(
            matches!(e.kind, ErrorKind::TooLarge { value, limit }
                if value.as_ns() == MAX_TIME.as_ns() + 1 && limit == MAX_TIME),
            "{field}: {e}"
        );
        assert_names(&e, domain, task, Some(field));
        let message = e.to_string();
        assert!(
            message.contains(&format!("{field}: 100000000000000001ns is too large"))
                && message.contains("at most 100000000s"),
            "{message}"
        );
        let at = edit(BASE, old, &new.replace("{}", AT_LIMIT));
        if let Err(e) = Scenario::from_toml(&at, "ok.toml") {
            assert!(
                !matches!(e.kind, ErrorKind::TooLarge { .. }),
                "{field}: {e}"
            );
        }
    }
}

/// Credit's slice and accounting period are multiples of its tick: bounded as products.
#[test]
fn credit_periods_above_the_limit_are_refused_naming_the_multiplier() {
    for (counts, field) in [
        (
            "ticks_per_slice = 2, ticks_per_accounting = 1",
            "credit.ticks_per_slice",
        ),
        (
            "ticks_per_slice = 1, ticks_per_accounting = 2",
            "credit.ticks_per_accounting",
        ),
    ] {
        let text = edit(
            BASE,
            r#"policy = "deferrable""#,
            &format!("policy = \"credit\"\ncredit = {{ tick = \"{AT_LIMIT}\", {counts} }}"),
        );
        let e = error(&text);
        assert!(
            matches!(e.kind, ErrorKind::TooLarge { value, .. } if value.as_ns() == 2 * MAX_TIME.as_ns()),
            "{e}"
        );
        assert_names(&e, None, None, Some(field));
    }
}

#[test]
fn a_run_length_above_the_limit_is_refused_for_a_scenario_that_had_a_valid_one() {
    let s = parse(BASE);
    let e = s.with_duration(Nanos(MAX_TIME.as_ns() + 1)).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::TooLarge { .. }), "{e}");
    assert_eq!(e.location.field.as_deref(), Some("duration"));
    assert!(s.with_duration(MAX_TIME).is_ok());
}

/// Every time at the limit (the run's length, the quantum, every period, budget,
/// deadline, offset, gap, frame and event time), run to its end under every policy. The
/// quantum being as long as the run keeps it to a few dozen steps; the sums the simulator
/// forms (next tick, next releases, a Poisson gap of up to ~37 mean gaps, deadlines,
/// replenishments) are the largest any valid scenario can produce.
#[test]
fn every_time_at_the_limit_simulates_without_overflow_under_every_policy() {
    let m = AT_LIMIT;
    let text = format!(
        r#"
duration = "{m}"
seed = 11
[machine]
quantum = "{m}"
overhead = {{ do_schedule = "99999999999999999ns", context_switch = "0ns" }}
[scheduler]
credit = {{ tick = "{m}", ticks_per_slice = 1, ticks_per_accounting = 1 }}
major_frame = "{m}"
minor_frames = [{{ domain = "d1", runtime = "{m}" }}]

[[domain]]
name = "d1"
vcpu = {{ budget = "{m}", period = "{m}", offset = "{m}" }}
[[domain.task]]
name = "periodic"
period = "{m}"
wcet = "{m}"
deadline = "{m}"
[[domain.task]]
name = "late"
period = "{m}"
wcet = "1ns"
offset = "{m}"
[[domain.task]]
name = "sporadic"
kind = "sporadic"
period = "{m}"
wcet = "1ns"
max_extra_gap = "{m}"
[[domain.task]]
name = "listed"
kind = "aperiodic"
period = "{m}"
wcet = "1ns"
releases = ["0ns", "{m}"]
[[domain.task]]
name = "poisson"
kind = "aperiodic"
period = "{m}"
wcet = "1ns"
mean_gap = "{m}"

[[domain]]
name = "d2"
vcpu = {{ budget = "10us", period = "{m}" }}
[[domain.task]]
name = "t"
period = "{m}"
wcet = "1ns"

[[event]]
at = "{m}"
action = "sched-set"
domain = "d1"
budget = "{m}"
[[event]]
at = "{m}"
action = "add-domain"
[event.domain]
name = "late-domain"
vcpu = {{ budget = "{m}", period = "{m}", offset = "{m}" }}
[[event.domain.task]]
name = "t"
period = "{m}"
wcet = "{m}"
offset = "{m}"
"#
    );
    let scenario = parse(&text);
    for kind in PolicyKind::ALL {
        let s = scenario
            .with_policy(kind)
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        // Several seeds: the sporadic and Poisson gaps are drawn.
        for seed in 0..4 {
            let done = run(&s.with_seed(seed), Record::default())
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
            let pcpu = &done.results.pcpus[0];
            assert_eq!(
                pcpu.busy_ns + pcpu.idle_ns + pcpu.overhead_ns,
                s.duration.as_ns(),
                "{kind}"
            );
            assert!(done.results.domains[0].tasks[0].released >= 1, "{kind}");
        }
    }
}

#[test]
fn overheads_of_a_whole_quantum_are_refused_with_the_reason() {
    let with = |ds: &str, cs: &str| {
        edit(
            BASE,
            "seed = 3",
            &format!(
                "seed = 3\n[machine]\nquantum = \"1ms\"\noverhead = {{ do_schedule = \"{ds}\", context_switch = \"{cs}\" }}"
            ),
        )
    };
    let e = error(&with("400us", "600us"));
    assert!(
        matches!(e.kind, ErrorKind::OverheadNotBelowQuantum { overhead, quantum }
            if overhead == Nanos::from_ms(1) && quantum == Nanos::from_ms(1)),
        "{e}"
    );
    assert_eq!(e.location.section, Some("[machine]"));
    assert_eq!(e.location.field.as_deref(), Some("overhead"));
    assert_eq!(
        e.to_string(),
        "bad.toml: [machine]: overhead: do_schedule + context_switch = 1ms is not smaller \
         than the quantum 1ms: a tick that switches VCPUs would spend the whole quantum in \
         scheduler overhead, so no VCPU could make progress; lower the overheads or raise \
         the quantum"
    );
    assert!(matches!(
        error(&with("2ms", "0ns")).kind,
        ErrorKind::OverheadNotBelowQuantum { .. }
    ));
    // One nanosecond less is allowed.
    parse(&with("400us", "599999ns"));
}
