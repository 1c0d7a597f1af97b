//! The CARTS reader: the happy path, every error naming its line, and the pipeline CARTS →
//! domains → system analysis → JSON with the field names the CLI relies on.

use rtvmm_analysis::*;

const SYSTEM: &str = r#"<?xml version="1.0"?>
<system os_scheduler="RM">
  <component name="avionics" scheduler="RM" criticality="0">
    <task name="nav" p="25" d="25" e="3"/>
    <task name="radio" p="50" e="5"/>
    <task name="log" p="100.0" d="100" e="4"></task>
  </component>
  <component name="control" os_scheduler="EDF" min_period="2" max_period="6">
    <task name="loop" p="7" e="2"/>
    <task name="io" p="8" e="1"/>
    <task name="ui" p="10" e="1"/>
  </component>
</system>
"#;

#[test]
fn parses_the_carts_format() {
    let system = parse_carts(SYSTEM).unwrap();
    assert_eq!(system.scheduler.as_deref(), Some("RM"));
    assert_eq!(system.components.len(), 2);
    let avionics = &system.components[0];
    assert_eq!(avionics.name, "avionics");
    assert_eq!(avionics.scheduler, GuestScheduler::Rm);
    assert_eq!(avionics.tasks[2].task, Task::new(100, 4));
    assert_eq!(avionics.tasks[0].line, 4);
    let control = &system.components[1];
    assert_eq!(control.scheduler, GuestScheduler::Edf);
    assert_eq!((control.min_period, control.max_period), (Some(2), Some(6)));
}

/// End to end, and the JSON field names of the spec (`u_rm`, `u_w`, `schedulable`,
/// `domains[].{name, period, budget, bandwidth, utilization, overhead, schedulable}`).
#[test]
fn carts_to_system_analysis_to_json() {
    let domains = parse_carts(SYSTEM)
        .unwrap()
        .to_domains(SbfMode::General)
        .unwrap();
    let report = analyze_system(&domains, SbfMode::General);
    // avionics is the spec's W = {(25,3),(50,5),(100,4)}: general optimum (7, 2).
    assert_eq!(
        (report.domains[0].period, report.domains[0].budget),
        (Some(7), Some(2))
    );
    let control = &report.domains[1];
    let period = control.period.unwrap();
    assert!((2..=6).contains(&period));
    assert!(report.schedulable, "{report:#?}");
    let json = serde_json::to_value(&report).unwrap();
    for key in ["u_rm", "u_w", "schedulable", "domains"] {
        assert!(json.get(key).is_some(), "missing {key}");
    }
    for key in [
        "name",
        "period",
        "budget",
        "bandwidth",
        "utilization",
        "overhead",
        "schedulable",
    ] {
        assert!(
            json["domains"][0].get(key).is_some(),
            "missing domains[].{key}"
        );
    }
    assert_eq!(json["domains"][0]["period"], 7);
}

#[test]
fn nested_component_becomes_a_task_of_its_parent() {
    let xml = r#"<system>
  <component name="parent" scheduler="RM">
    <task p="100" e="10"/>
    <component name="child" scheduler="RM" min_period="25" max_period="25">
      <task p="25" e="3"/><task p="50" e="5"/><task p="100" e="4"/>
    </component>
  </component>
</system>"#;
    let domains = parse_carts(xml).unwrap().to_domains(SbfMode::Auto).unwrap();
    // The child's interface at Π = 25 with the harmonic sbf is (25, 7) (spec); it becomes the
    // task (25, 7) of the parent, next to (100, 10).
    let tasks = domains[0].workload.tasks();
    assert_eq!(tasks, &[Task::new(25, 7), Task::new(100, 10)]);
}

fn error_of(xml: &str) -> CartsError {
    parse_carts(xml).unwrap_err()
}

#[test]
fn malformed_xml_names_the_line() {
    let error = error_of(
        "<system>\n  <component name=\"a\">\n    <task p=\"5\" e=\"1\">\n  </component>\n</system>",
    );
    assert_eq!(error.line, 4);
    assert!(matches!(error.kind, CartsErrorKind::Xml(_)));
    assert!(error.to_string().starts_with("line 4"));
}

#[test]
fn missing_attribute_names_line_and_attribute() {
    let error =
        error_of("<system>\n<component name=\"a\">\n<task p=\"5\"/>\n</component>\n</system>");
    assert_eq!(error.line, 3);
    assert_eq!(
        error.kind,
        CartsErrorKind::MissingAttribute {
            element: "task".into(),
            attribute: "e".into()
        }
    );
}

#[test]
fn bad_number_points_at_the_value() {
    let error = error_of(
        "<system>\n<component name=\"a\">\n  <task p=\"5\" e=\"1.5\"/>\n</component>\n</system>",
    );
    assert_eq!((error.line, error.column), (3, 18)); // the value "1.5" starts at column 18
    assert_eq!(
        error.kind,
        CartsErrorKind::BadNumber {
            attribute: "e".into(),
            value: "1.5".into()
        }
    );
}

#[test]
fn other_errors_are_typed() {
    let bad_scheduler = error_of("<system><component name=\"a\" scheduler=\"gEDF\"><task p=\"5\" e=\"1\"/></component></system>");
    assert_eq!(
        bad_scheduler.kind,
        CartsErrorKind::BadScheduler("gEDF".into())
    );

    let not_system = error_of("<components/>");
    assert_eq!(
        not_system.kind,
        CartsErrorKind::NotASystem("components".into())
    );

    let empty = error_of("<system>\n<component name=\"e\"/>\n</system>");
    assert_eq!(
        (empty.line, empty.kind),
        (2, CartsErrorKind::EmptyComponent("e".into()))
    );

    let deep = error_of(
        "<system><component name=\"a\"><component name=\"b\"><component name=\"c\"><task p=\"5\" e=\"1\"/></component></component></component></system>",
    );
    assert_eq!(deep.kind, CartsErrorKind::TooDeep("c".into()));

    let wcet_too_big =
        error_of("<system>\n<component name=\"a\">\n<task p=\"5\" e=\"6\"/></component></system>");
    assert_eq!(wcet_too_big.line, 3);
    assert!(matches!(wcet_too_big.kind, CartsErrorKind::BadTask(_)));

    let stray = error_of("<system><component name=\"a\"><job p=\"5\"/></component></system>");
    assert!(matches!(
        stray.kind,
        CartsErrorKind::UnexpectedElement { .. }
    ));

    let budget_alone = error_of(
        "<system><component name=\"a\" budget=\"2\"><task p=\"5\" e=\"1\"/></component></system>",
    );
    assert!(matches!(budget_alone.kind, CartsErrorKind::BadPeriods(_)));

    let gedf = error_of("<system><component name=\"a\" scheduler=\"gEDF\"><task p=\"5\" d=\"4\" e=\"1\"/></component></system>");
    assert_eq!(gedf.kind, CartsErrorKind::BadScheduler("gEDF".into()));
}

/// A component whose tasks are schedulable deadline-monotonic but not rate-monotonic, on
/// the given interface Γ = (4, 3) (general sbf: blackout 2, then 3 per 4; sbf(5) = 3,
/// sbf(10) = 2·3 + max(0, 10 − 2 − 8) = 6). Tasks a = (p 12, e 3, d 5), b = (p 10, e 2).
/// DM (a first): a needs sbf(t) ≥ 3 for some t ≤ 5: sbf(5) = 3 ✓; b: rbf = 3⌈t/12⌉ + 2 = 5
/// on (0, 10]: sbf(10) = 6 ✓. RM (b first): a's rbf = 2⌈t/10⌉ + 3 = 5 on (0, 5], sbf(5) = 3 ✗.
fn constrained(scheduler: &str) -> String {
    format!(
        r#"<system>
  <component name="c" scheduler="{scheduler}" period="4" budget="3">
    <task name="a" p="12" d="5" e="3"/>
    <task name="b" p="10" e="2"/>
  </component>
</system>"#
    )
}

/// DM with constrained deadlines is analysed (it used to be refused as "unsupported
/// scheduler DM (expected RM, DM or EDF)"), and RM with a constrained deadline is read as
/// CARTS reads it: tasks ordered by deadline.
#[test]
fn dm_and_rm_with_constrained_deadlines_order_by_deadline() {
    for (scheduler, written) in [("DM", "DM"), ("dm", "dm"), ("RM", "RM")] {
        let system = parse_carts(&constrained(scheduler)).unwrap();
        let component = &system.components[0];
        assert_eq!(component.scheduler, GuestScheduler::Dm, "{scheduler}");
        assert_eq!(component.scheduler_written, written);
        let report = analyze_system(
            &system.to_domains(SbfMode::General).unwrap(),
            SbfMode::General,
        );
        assert!(report.domains[0].schedulable, "{scheduler}: {report:#?}");
    }
    // The same tasks as rate-monotonic (what rtvmm's own `rm` guest means) fail at a.
    let domains = parse_carts(&constrained("RM"))
        .unwrap()
        .to_domains(SbfMode::General)
        .unwrap();
    let as_rm = DomainSpec {
        guest: GuestScheduler::Rm,
        ..domains[0].clone()
    };
    let report = analyze_system(&[as_rm], SbfMode::General);
    assert_eq!(
        report.domains[0].failure,
        Some(DomainFailure::InterfaceTooSmall {
            task_index: 0,
            task: Task::with_deadline(12, 3, 5)
        })
    );
    // Implicit deadlines: RM stays RM.
    let implicit = parse_carts(
        "<system><component name=\"i\" scheduler=\"RM\"><task p=\"5\" e=\"1\"/></component></system>",
    )
    .unwrap();
    assert_eq!(implicit.components[0].scheduler, GuestScheduler::Rm);
}

/// Two components with one name would be one domain named twice (two `xl` lines for one
/// domain): refused, naming both lines — also between a top-level component and a child.
#[test]
fn duplicate_component_names_are_refused() {
    let twice = error_of(
        "<system>\n<component name=\"x\"><task p=\"5\" e=\"1\"/></component>\n<component name=\"x\"><task p=\"7\" e=\"1\"/></component>\n</system>",
    );
    assert_eq!(twice.line, 3);
    assert_eq!(
        twice.kind,
        CartsErrorKind::DuplicateName {
            name: "x".into(),
            first_line: 2
        }
    );
    assert!(twice.to_string().contains("line 2"), "{twice}");
    let nested = error_of(
        "<system>\n<component name=\"p\">\n<component name=\"q\"><task p=\"5\" e=\"1\"/></component>\n</component>\n<component name=\"q\"><task p=\"5\" e=\"1\"/></component>\n</system>",
    );
    assert_eq!(
        (nested.line, nested.kind),
        (
            5,
            CartsErrorKind::DuplicateName {
                name: "q".into(),
                first_line: 3
            }
        )
    );
}

/// The parser never panics on arbitrary input (a quick fuzz over mutations of a valid file).
#[test]
fn never_panics_on_garbage() {
    let bytes = SYSTEM.as_bytes();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..2000 {
        let mut mutated = bytes.to_vec();
        for _ in 0..3 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let position = (seed % mutated.len() as u64) as usize;
            mutated[position] = b"<>\"=/ a0.-9xz"[(seed >> 40) as usize % 13];
        }
        if let Ok(text) = std::str::from_utf8(&mutated) {
            let _ = parse_carts(text).map(|system| system.to_domains(SbfMode::Auto));
        }
    }
}
