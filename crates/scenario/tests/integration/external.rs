//! External domains (`attach`, `pids`): read, written back, refused where they make no
//! sense, each error naming the file, the domain and the field.

use std::path::PathBuf;

use rtvmm_core::policy::PolicyKind;
use rtvmm_scenario::{ErrorKind, External, Scenario};
use rtvmm_sim::run::{run, Record, RunError};

use crate::util::{assert_names, edit, error, parse, BASE};

/// BASE with a second, external domain whose keys are `keys`.
fn with_external(keys: &str) -> String {
    format!("{BASE}\n[[domain]]\nname = \"vm1\"\nvcpu = {{ budget = \"3ms\", period = \"10ms\" }}\n{keys}\n")
}

#[test]
fn attach_and_pids_are_read_as_external_domains_without_tasks() {
    let s = parse(&with_external("attach = \"/sys/fs/cgroup/unified/vm1\""));
    assert_eq!(
        s.external.get("vm1"),
        Some(&External::Cgroup(PathBuf::from(
            "/sys/fs/cgroup/unified/vm1"
        )))
    );
    let vm = &s.system.domains[1];
    assert!(vm.tasks.is_empty());
    assert_eq!(
        vm.vcpu.priority, 2,
        "ranked with the others, rate-monotonic"
    );
    let s = parse(&with_external("pids = [1234, 99]"));
    assert_eq!(s.external.get("vm1"), Some(&External::Pids(vec![1234, 99])));
    assert!(!s.external.contains_key("d1"));
}

#[test]
fn the_normalised_form_keeps_them_and_reads_back_the_same() {
    for keys in [
        "attach = \"/sys/fs/cgroup/unified/my \\\"vm\\\"\"",
        "pids = [7, 8]",
    ] {
        let s = parse(&with_external(keys));
        let text = s.to_toml();
        assert!(
            !text.contains("name = \"vm1\"\nguest"),
            "no guest for vm1:\n{text}"
        );
        assert_eq!(parse(&text), s, "{text}");
    }
    // Added by an event, too.
    let text = format!(
        "{BASE}\n[[event]]\nat = \"10ms\"\naction = \"add-domain\"\n[event.domain]\nname = \"vm2\"\n\
         vcpu = {{ budget = \"1ms\", period = \"10ms\" }}\npids = [42]\n"
    );
    let s = parse(&text);
    assert_eq!(s.external.get("vm2"), Some(&External::Pids(vec![42])));
    assert_eq!(parse(&s.to_toml()), s);
}

#[test]
fn files_without_external_domains_print_as_before() {
    // No `attach` or `pids` key appears unless the file has one.
    let text = parse(BASE).to_toml();
    assert!(!text.contains("attach") && !text.contains("pids"), "{text}");
    assert!(parse(BASE).external.is_empty());
}

#[test]
fn tasks_beside_attach_or_pids_are_an_error_naming_the_domain_and_field() {
    let text = edit(
        BASE,
        "vcpu = { budget = \"2ms\", period = \"10ms\" }",
        "vcpu = { budget = \"2ms\", period = \"10ms\" }\nattach = \"/sys/fs/cgroup/unified/vm\"",
    );
    let e = error(&text);
    assert_names(&e, Some("d1"), None, Some("attach"));
    assert!(matches!(e.kind, ErrorKind::ExternalWithTasks), "{e}");
    assert_eq!(
        e.to_string(),
        "bad.toml: domain 'd1': attach: an external domain has no tasks: give either \
         `attach`/`pids` or `[[domain.task]]`, not both"
    );
    let text = edit(
        BASE,
        "vcpu = { budget = \"2ms\", period = \"10ms\" }",
        "vcpu = { budget = \"2ms\", period = \"10ms\" }\npids = [5]",
    );
    assert_names(&error(&text), Some("d1"), None, Some("pids"));
}

#[test]
fn bad_attach_and_pids_values_are_named() {
    let cases: [(&str, &str, &str); 7] = [
        (
            "attach = \"/a\"\npids = [1]",
            "attach",
            "give either this or `pids`, not both",
        ),
        ("attach = \"vm1\"", "attach", "is not an absolute path"),
        ("attach = \"\"", "attach", "must not be empty"),
        ("pids = []", "pids", "at least one process id"),
        ("pids = [0]", "pids", "0 is out of range"),
        ("pids = [3, 3]", "pids", "process 3 is listed twice"),
        ("pids = [1]\nguest = \"rm\"", "guest", "runs its own guest"),
    ];
    for (keys, field, says) in cases {
        let e = error(&with_external(keys));
        assert_names(&e, Some("vm1"), None, Some(field));
        assert!(e.to_string().contains(says), "{keys}: {e}");
    }
    // A value of the wrong type is located like any other.
    let e = error(&with_external("pids = \"12\""));
    assert_names(&e, Some("vm1"), None, Some("pids"));
}

#[test]
fn the_simulator_refuses_an_external_domain_by_name() {
    let s = parse(&with_external("attach = \"/sys/fs/cgroup/unified/vm1\""));
    let e = s.simulable().unwrap_err();
    assert_eq!(
        e.to_string(),
        "test.toml: domain 'vm1' is external (attach): only `rtvmm host run` runs it; the \
         simulator cannot model a workload it does not know"
    );
    match run(&s, Record::default()) {
        Err(RunError::External(_)) => {}
        other => panic!("expected the refusal, got {:?}", other.map(|r| r.results)),
    }
    assert!(parse(BASE).simulable().is_ok());
    // Under every policy the file still validates (the VCPU is an ordinary one).
    for kind in [PolicyKind::Deferrable, PolicyKind::Rtds, PolicyKind::Credit] {
        s.with_policy(kind).unwrap();
    }
}

#[test]
fn a_live_add_domain_cannot_be_external() {
    let value: toml::Value = toml::from_str(
        "name = \"vm\"\nvcpu = { budget = \"1ms\", period = \"10ms\", priority = 3 }\npids = [9]",
    )
    .unwrap();
    let e = rtvmm_scenario::live::read_domain(&value, "request").unwrap_err();
    assert!(
        e.to_string()
            .starts_with("request: domain 'vm': pids: an external domain cannot be added"),
        "{e}"
    );
    let _ = Scenario::from_toml; // the file reader is the one that accepts them
}
