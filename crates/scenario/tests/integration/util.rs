//! Small helpers shared by the test modules.

use rtvmm_scenario::{Scenario, ScenarioError};

/// A valid one-domain scenario that the error tests break one field at a time.
pub const BASE: &str = r#"name = "base"
duration = "1s"
seed = 3

[scheduler]
policy = "deferrable"

[[domain]]
name = "d1"
vcpu = { budget = "2ms", period = "10ms" }

[[domain.task]]
name = "t1"
period = "50ms"
wcet = "5ms"
"#;

/// `text` with `old` replaced by `new`; `old` must occur exactly once, so a test cannot
/// silently stop breaking what it means to break.
pub fn edit(text: &str, old: &str, new: &str) -> String {
    assert_eq!(
        text.matches(old).count(),
        1,
        "'{old}' must occur once in:\n{text}"
    );
    text.replacen(old, new, 1)
}

pub fn parse(text: &str) -> Scenario {
    match Scenario::from_toml(text, "test.toml") {
        Ok(s) => s,
        Err(e) => panic!("should parse, got: {e}\n{text}"),
    }
}

/// The error for `text`, named `bad.toml`.
pub fn error(text: &str) -> ScenarioError {
    match Scenario::from_toml(text, "bad.toml") {
        Ok(_) => panic!("should be rejected:\n{text}"),
        Err(e) => e,
    }
}

/// Asserts where the error points and that its message says so: it starts with the file,
/// and names the domain, task and field given.
pub fn assert_names(
    e: &ScenarioError,
    domain: Option<&str>,
    task: Option<&str>,
    field: Option<&str>,
) {
    let message = e.to_string();
    assert!(message.starts_with("bad.toml"), "file not named: {message}");
    assert_eq!(e.file, "bad.toml");
    assert_eq!(e.location.domain.as_deref(), domain, "{message}");
    assert_eq!(e.location.task.as_deref(), task, "{message}");
    assert_eq!(e.location.field.as_deref(), field, "{message}");
    if let Some(d) = domain {
        assert!(message.contains(&format!("domain '{d}'")), "{message}");
    }
    if let Some(t) = task {
        assert!(message.contains(&format!("task '{t}'")), "{message}");
    }
    if let Some(f) = field {
        assert!(message.contains(&format!("{f}: ")), "{message}");
    }
}
