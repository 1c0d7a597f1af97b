//! Why a scenario was rejected: a typed error that names the file, where in the file
//! (section, event, domain, task, field) and what is wrong.

use std::fmt;

use rtvmm_core::machine::MachineError;
use rtvmm_core::model::ParamError;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::time::TimeParseError;
use rtvmm_core::Nanos;

/// Where in a scenario file a problem is. Every part is optional; the display joins the
/// ones present: `event 2, domain 'd3', task 't1': wcet: ...`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Location {
    /// `[machine]` or `[scheduler]`, for their fields.
    pub section: Option<&'static str>,
    /// A `[[pool]]`, by name (or `#n` when it has none).
    pub pool: Option<String>,
    /// A `[[chain]]`, by name (or `#n` when it has none).
    pub chain: Option<String>,
    /// 1-based number of the `[[event]]`, in file order (which is time order).
    pub event: Option<usize>,
    pub domain: Option<String>,
    pub task: Option<String>,
    /// The field, dotted as in the file: `vcpu.budget`, `overhead.context_switch`,
    /// `minor_frames[2].runtime`.
    pub field: Option<String>,
    /// The 1-based line, for an `xl` event, a triggered or pinned task's `trigger`,
    /// `delay` and `vcpu`, and a `[[chain]]` (set by the reader, which has the text).
    pub line: Option<usize>,
}

impl Location {
    pub(crate) fn top(field: &str) -> Location {
        Location {
            field: Some(field.to_string()),
            ..Location::default()
        }
    }

    pub(crate) fn section(section: &'static str, field: &str) -> Location {
        Location {
            section: Some(section),
            field: Some(field.to_string()),
            ..Location::default()
        }
    }

    /// The same place, another field.
    pub(crate) fn field(&self, field: &str) -> Location {
        Location {
            field: Some(field.to_string()),
            ..self.clone()
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts: Vec<String> = Vec::new();
        if let Some(section) = self.section {
            parts.push(section.to_string());
        }
        if let Some(pool) = &self.pool {
            parts.push(format!("pool '{pool}'"));
        }
        if let Some(chain) = &self.chain {
            parts.push(format!("chain '{chain}'"));
        }
        if let Some(event) = self.event {
            parts.push(format!("event {event}"));
        }
        if let Some(domain) = &self.domain {
            parts.push(format!("domain '{domain}'"));
        }
        if let Some(task) = &self.task {
            parts.push(format!("task '{task}'"));
        }
        if !parts.is_empty() {
            write!(f, "{}: ", parts.join(", "))?;
        }
        if let Some(field) = &self.field {
            write!(f, "{field}: ")?;
        }
        Ok(())
    }
}

/// A scenario that cannot be run, and why.
#[derive(Debug)]
pub struct ScenarioError {
    /// The file name as given (or `<text>` when parsed from a string without one).
    pub file: String,
    /// Boxed to keep `Result<_, ScenarioError>` small.
    pub location: Box<Location>,
    pub kind: ErrorKind,
}

impl ScenarioError {
    pub(crate) fn new(file: &str, location: Location, kind: ErrorKind) -> ScenarioError {
        ScenarioError {
            file: file.to_string(),
            location: Box::new(location),
            kind,
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = self.kind.to_string();
        // Some messages name their field themselves (the machine's "pcpus: must be at
        // least 1"): the field is then said once.
        let names_field = self
            .location
            .field
            .as_ref()
            .is_some_and(|field| kind.starts_with(&format!("{field}: ")));
        let location = if names_field {
            Location {
                field: None,
                ..(*self.location).clone()
            }
        } else {
            (*self.location).clone()
        };
        match &self.kind {
            ErrorKind::Syntax { line, column, .. } => {
                write!(f, "{}:{line}:{column}: {location}{kind}", self.file)
            }
            _ => match location.line {
                Some(line) => write!(f, "{}:{line}: {location}{kind}", self.file),
                None => write!(f, "{}: {location}{kind}", self.file),
            },
        }
    }
}

/// No `source()`: the message already includes the cause, and error reporters that walk
/// the chain would print it twice.
impl std::error::Error for ScenarioError {}

/// What is wrong. The messages are written to follow a [`Location`].
#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    #[error("cannot read the file: {0}")]
    Io(std::io::Error),
    /// TOML syntax, a value of the wrong type, or an unknown key; `line`/`column` are
    /// 1-based.
    #[error("{message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{value} is a bare number: write times as a string with a unit (ns, us, ms, s), for example \"10ms\"")]
    BareNumber { value: String },
    #[error("expected a time as a string with a unit (for example \"10ms\"), found {found}")]
    NotATime { found: String },
    #[error("{0}")]
    Time(TimeParseError),
    #[error("missing (required)")]
    Missing,
    #[error("must be greater than 0")]
    Zero,
    #[error("{value} is out of range: {expected}")]
    OutOfRange {
        value: String,
        expected: &'static str,
    },
    #[error("unknown {what} '{name}': expected one of {expected}")]
    UnknownName {
        what: &'static str,
        name: String,
        expected: String,
    },
    #[error("{what} name '{name}' is used twice ({scope})")]
    Duplicate {
        what: &'static str,
        name: String,
        scope: &'static str,
    },
    #[error("no domain named '{name}'{when}")]
    UnknownDomain { name: String, when: String },
    /// The policy's own check (`Policy::validate`) refused a VCPU's parameters.
    #[error("{error} (rejected by policy {policy})")]
    Param {
        policy: PolicyKind,
        error: ParamError,
    },
    #[error("budget and period are not set, and policy {policy} needs them: add vcpu = {{ budget = \"..\", period = \"..\" }}")]
    NeedsServerParams { policy: PolicyKind },
    #[error("{0}")]
    Machine(MachineError),
    #[error("{detail} does not fit the 64-bit nanosecond clock (overflow)")]
    Overflow { detail: String },
    /// A time above [`crate::MAX_TIME`]: see "Limits" in the crate docs.
    #[error("{value} is too large: a time in a scenario is at most {limit} (about 3.2 years), so that every instant the simulator computes fits its 64-bit nanosecond clock")]
    TooLarge { value: Nanos, limit: Nanos },
    /// `do_schedule + context_switch ≥ quantum`.
    #[error("do_schedule + context_switch = {overhead} is not smaller than the quantum {quantum}: a tick that switches VCPUs would spend the whole quantum in scheduler overhead, so no VCPU could make progress; lower the overheads or raise the quantum")]
    OverheadNotBelowQuantum { overhead: Nanos, quantum: Nanos },
    #[error("not used here: {why}")]
    NotUsed { why: String },
    #[error("give either this or `{other}`, not both")]
    Conflict { other: &'static str },
    #[error("one of {options} is required")]
    OneOfRequired { options: &'static str },
    #[error("min_exec {min_exec} is above the wcet {wcet}")]
    MinExecAboveWcet { min_exec: Nanos, wcet: Nanos },
    #[error("policy arinc653 needs its schedule table in the file: add to [scheduler] major_frame = \"20ms\" and minor_frames = [{{ domain = \"d1\", runtime = \"5ms\" }}, ...]")]
    NeedsArincTable,
    #[error("{count} minor frames: ARINC 653 allows at most {max}")]
    TooManyMinorFrames { count: usize, max: usize },
    #[error("the minor frames add up to {total}, more than the major frame {major_frame}")]
    MinorFramesExceedMajorFrame { total: Nanos, major_frame: Nanos },
    #[error("given for some domains but not for '{without}': give every domain a priority, or none (rate-monotonic by period)")]
    PrioritiesMixed { without: String },
    #[error("{at} is before the previous event's time {previous}: list events in time order")]
    EventsOutOfOrder { at: Nanos, previous: Nanos },
    #[error("{length} characters: a name has at most {max}", max = crate::MAX_NAME_CHARS)]
    NameTooLong { length: usize },
    /// An external domain (`attach`, `pids`) given to the simulator.
    #[error("domain '{domain}' is external ({field}): only `rtvmm host run` runs it; the simulator cannot model a workload it does not know")]
    External { domain: String, field: &'static str },
    /// `attach` or `pids` beside `[[domain.task]]`.
    #[error("an external domain has no tasks: give either `attach`/`pids` or `[[domain.task]]`, not both")]
    ExternalWithTasks,
    /// An `xl` command line that does not read.
    #[error("{0}")]
    XlSyntax(rtvmm_core::xl::XlError),
    /// An `xl` command the system at its time refuses.
    #[error("{0}")]
    Xl(rtvmm_system::xl::XlApplyError),
    /// A triggered task's `trigger` names no task of the file.
    #[error("'{by_domain}/{by_task}': {}", match *what {
        "domain" => format!("no domain named '{by_domain}' in the file"),
        _ => format!("domain '{by_domain}' has no task '{by_task}'"),
    })]
    UnknownTrigger {
        by_domain: String,
        by_task: String,
        /// `domain` or `task`: what is missing.
        what: &'static str,
    },
    /// A `[[chain]]` that is not a sequence of tasks linked by triggers.
    #[error("{0}")]
    Chain(Box<rtvmm_system::spec::ChainProblem>),
    #[error("{0}")]
    Invalid(String),
}

/// 1-based line and column (in characters) of a byte offset.
pub(crate) fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod line_tests {
    use super::line_and_column;

    #[test]
    fn line_and_column_are_one_based() {
        let text = "a = 1\nbb = 2\n";
        assert_eq!(line_and_column(text, 0), (1, 1));
        assert_eq!(line_and_column(text, 6), (2, 1));
        assert_eq!(line_and_column(text, 9), (2, 4));
    }
}
