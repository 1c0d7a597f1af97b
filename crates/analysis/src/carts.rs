//! Reading CARTS input (XML, from a `&str`; no file I/O here).
//!
//! Format (CARTS, "CARTS: a tool for compositional analysis of real-time systems", Phan,
//! Lee, Easwaran, Ramaswamy, Chen, Lee & Sokolsky, ACM SIGBED Review 8(1), 2011): a `<system>` root
//! containing `<component>`s, each with `<task>`s and optionally child `<component>`s:
//!
//! ```xml
//! <system os_scheduler="RM">
//!   <component name="C1" scheduler="RM" min_period="5" max_period="50">
//!     <task name="T1" p="25" d="25" e="3"/>
//!     <component name="C1a" os_scheduler="EDF">
//!       <task name="T2" p="50" e="5"/>
//!     </component>
//!   </component>
//! </system>
//! ```
//!
//! * `scheduler` or `os_scheduler`: `RM`, `DM`, `EDF` or `gEDF`; default RM. `gEDF` (global
//!   EDF on several processors, what CARTS's `MPR2` and `DMPR` models analyse) is read here
//!   and analysed by [`crate::carts_models`]; the one-processor analysis refuses it. `DM` orders tasks by
//!   deadline (ties by period, then document order). `RM` with a task whose deadline is
//!   below its period is read as CARTS reads it — tasks ordered by deadline, i.e. `DM` —
//!   and [`CartsComponent::scheduler_written`] keeps what the file said so that reports can
//!   say so.
//! * `min_period` / `max_period`: the allowed interface periods; `period` (optionally with
//!   `budget`): a fixed period (and budget). Other attributes (e.g. `criticality`) are
//!   ignored.
//! * `<task>`: `p` (period), `e` (wcet), `d` (deadline, default p), `name` (optional). Values
//!   must be whole numbers of the time unit (`100` or `100.0`).
//! * One level of nesting below a top-level component. A child's interface `(Π, Θ)` becomes
//!   a periodic task of its parent (Shin & Lee TECS 2008, compositional analysis) when converting to
//!   domains.
//! * Component names are unique in the file (a top-level component is a domain, and a domain
//!   is named by its component); a repeated name is an error naming both lines.
//!
//! Every error names the line (and column) and what is wrong; the parser never panics.

use std::collections::HashMap;
use std::fmt;

use serde::Serialize;
use thiserror::Error;

use crate::compose::{DomainSpec, InterfaceChoice};
use crate::interface::{GuestScheduler, InterfaceAnalyzer, PeriodRange, Verdict, MAX_TEST_STEPS};
use crate::prm::{Interface, SbfMode};
use crate::workload::{Task, Workload};

/// A parsed CARTS system.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CartsSystem {
    /// The root scheduler attribute, if given (the one-pcpu root here is always RM on the
    /// interfaces; this is kept for reporting).
    pub scheduler: Option<String>,
    /// The root's `period` (CARTS's `MPR2` and `DMPR` models need one, or `min_period` equal
    /// to `max_period`, for the interface of the system itself); kept for writing back.
    pub period: Option<u64>,
    /// The root's `min_period`, if given.
    pub min_period: Option<u64>,
    /// The root's `max_period`, if given.
    pub max_period: Option<u64>,
    /// Top-level components: the domains.
    pub components: Vec<CartsComponent>,
}

/// A `<component>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CartsComponent {
    /// `name` attribute (or `component@LINE` when missing).
    pub name: String,
    /// Its scheduler as analysed (`RM` with a constrained deadline reads as `Dm`).
    pub scheduler: GuestScheduler,
    /// The scheduler attribute as written (`"RM"` when absent).
    pub scheduler_written: String,
    /// `min_period`, if given.
    pub min_period: Option<u64>,
    /// `max_period`, if given.
    pub max_period: Option<u64>,
    /// `period`, if given (fixed-period interface).
    pub period: Option<u64>,
    /// `budget`, if given together with `period` (fixed interface).
    pub budget: Option<u64>,
    /// Its tasks, in document order.
    pub tasks: Vec<CartsTask>,
    /// Child components (one level).
    pub children: Vec<CartsComponent>,
    /// Line of the `<component>` tag.
    pub line: u32,
}

impl CartsComponent {
    /// Whether the component says `gEDF` (global EDF on several processors).
    pub fn is_global_edf(&self) -> bool {
        self.scheduler_written.eq_ignore_ascii_case("gedf")
    }
}

/// A `<task>`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CartsTask {
    /// `name`, or `task@LINE`.
    pub name: String,
    /// The task.
    pub task: Task,
    /// Line of the `<task>` tag.
    pub line: u32,
}

/// An error in CARTS input: where, and what.
#[derive(Clone, Debug, PartialEq, Eq, Error, Serialize)]
#[error("line {line}, column {column}: {kind}")]
pub struct CartsError {
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
    /// What is wrong.
    pub kind: CartsErrorKind,
}

/// What is wrong in CARTS input.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum CartsErrorKind {
    /// Not well-formed XML.
    Xml(String),
    /// The root element is not `<system>`.
    NotASystem(String),
    /// An element that does not belong here.
    UnexpectedElement {
        /// Found.
        found: String,
        /// Where.
        inside: String,
    },
    /// A required attribute is missing.
    MissingAttribute {
        /// Element.
        element: String,
        /// Attribute.
        attribute: String,
    },
    /// An attribute is not a whole non-negative number.
    BadNumber {
        /// Attribute.
        attribute: String,
        /// Its text.
        value: String,
    },
    /// Unknown or unsupported scheduler.
    BadScheduler(String),
    /// The task's values are invalid.
    BadTask(String),
    /// A component with neither tasks nor children.
    EmptyComponent(String),
    /// Components nested deeper than one level below a top-level component.
    TooDeep(String),
    /// `budget` without `period`, or `min_period > max_period`.
    BadPeriods(String),
    /// Two components with the same name.
    DuplicateName {
        /// The name.
        name: String,
        /// Line of the first component with it.
        first_line: u32,
    },
    /// A `gEDF` component in the one-processor (PRM) analysis.
    GlobalEdf(String),
    /// A component the MPR/DMPR analysis cannot take (named, with the reason).
    Multiprocessor {
        /// The component.
        component: String,
        /// Why.
        reason: String,
    },
    /// A child component has no interface (its workload is unschedulable).
    ChildUnschedulable {
        /// Child name.
        child: String,
        /// Why.
        reason: String,
    },
}

impl fmt::Display for CartsErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CartsErrorKind::Xml(message) => write!(f, "malformed XML: {message}"),
            CartsErrorKind::NotASystem(found) => {
                write!(f, "the root element must be <system>, found <{found}>")
            }
            CartsErrorKind::UnexpectedElement { found, inside } => {
                write!(f, "unexpected <{found}> inside <{inside}>")
            }
            CartsErrorKind::MissingAttribute { element, attribute } => {
                write!(f, "<{element}> needs the attribute {attribute}")
            }
            CartsErrorKind::BadNumber { attribute, value } => write!(
                f,
                "attribute {attribute}=\"{value}\" is not a whole non-negative number of time units"
            ),
            CartsErrorKind::BadScheduler(value) => write!(
                f,
                "unsupported scheduler \"{value}\" (expected RM, DM, EDF or gEDF)"
            ),
            CartsErrorKind::BadTask(message) => write!(f, "invalid task: {message}"),
            CartsErrorKind::EmptyComponent(name) => {
                write!(f, "component \"{name}\" has no tasks and no components")
            }
            CartsErrorKind::TooDeep(name) => write!(
                f,
                "component \"{name}\" is nested more than one level below a top-level component"
            ),
            CartsErrorKind::BadPeriods(message) => write!(f, "{message}"),
            CartsErrorKind::DuplicateName { name, first_line } => write!(
                f,
                "component name \"{name}\" is already used by the component on line \
                 {first_line}; component names must be unique (each top-level component is a \
                 domain)"
            ),
            CartsErrorKind::GlobalEdf(name) => write!(
                f,
                "component \"{name}\" is scheduled by gEDF (global EDF on several processors): \
                 analyse it with a multiprocessor model (MPR or DMPR), not PRM"
            ),
            CartsErrorKind::Multiprocessor { component, reason } => {
                write!(f, "component \"{component}\": {reason}")
            }
            CartsErrorKind::ChildUnschedulable { child, reason } => {
                write!(f, "child component \"{child}\" has no interface: {reason}")
            }
        }
    }
}

/// Parses CARTS XML. See the module docs for the format.
///
/// ```
/// let system = rtvmm_analysis::parse_carts(r#"<system os_scheduler="RM">
///   <component name="C1" scheduler="RM"><task name="T1" p="25" e="3"/></component>
/// </system>"#).unwrap();
/// assert_eq!(system.components[0].tasks[0].task.period, 25);
/// ```
pub fn parse_carts(xml: &str) -> Result<CartsSystem, CartsError> {
    let document = roxmltree::Document::parse(xml).map_err(|error| {
        let position = error.pos();
        CartsError {
            line: position.row,
            column: position.col,
            kind: CartsErrorKind::Xml(error.to_string()),
        }
    })?;
    let parser = Parser {
        lines: LineTable::new(xml),
    };
    let root = document.root_element();
    let root_name = root.tag_name().name();
    if root_name != "system" {
        return Err(parser.error(root, CartsErrorKind::NotASystem(root_name.to_string())));
    }
    let mut components = Vec::new();
    let mut names: HashMap<String, u32> = HashMap::new();
    for child in root.children().filter(|node| node.is_element()) {
        match child.tag_name().name() {
            "component" => {
                let component = parser.component(child, 0)?;
                for named in std::iter::once(&component).chain(&component.children) {
                    if let Some(&first_line) = names.get(&named.name) {
                        return Err(CartsError {
                            line: named.line,
                            column: 1,
                            kind: CartsErrorKind::DuplicateName {
                                name: named.name.clone(),
                                first_line,
                            },
                        });
                    }
                    names.insert(named.name.clone(), named.line);
                }
                components.push(component);
            }
            other => {
                return Err(parser.error(
                    child,
                    CartsErrorKind::UnexpectedElement {
                        found: other.to_string(),
                        inside: "system".into(),
                    },
                ))
            }
        }
    }
    Ok(CartsSystem {
        period: parser.number(root, "period")?,
        min_period: parser.number(root, "min_period")?,
        max_period: parser.number(root, "max_period")?,
        scheduler: root
            .attribute("os_scheduler")
            .or_else(|| root.attribute("scheduler"))
            .map(str::to_string),
        components,
    })
}

/// Line and column of a byte offset, by binary search in the offsets where lines start.
///
/// `roxmltree::Document::text_pos_at` counts from the start of the text at every call, so
/// asking it once per component and task made reading N components O(N²): 174 s for
/// 100,000 components (issue 23). This table is built once, in one pass; a look-up is
/// O(log lines) plus the characters of its own line. Positions are the same as
/// roxmltree's: lines counted by `\n`, columns in characters from 1.
struct LineTable<'input> {
    text: &'input str,
    /// Byte offset of the first character of each line; `starts[0] = 0`.
    starts: Vec<usize>,
}

impl<'input> LineTable<'input> {
    fn new(text: &'input str) -> LineTable<'input> {
        let starts = std::iter::once(0)
            .chain(
                text.bytes()
                    .enumerate()
                    .filter(|&(_, byte)| byte == b'\n')
                    .map(|(offset, _)| offset + 1),
            )
            .collect();
        LineTable { text, starts }
    }

    /// 1-based (line, column) of the byte `offset` (clamped to the text's end).
    fn position(&self, offset: usize) -> (u32, u32) {
        let offset = offset.min(self.text.len());
        // The last line starting at or before `offset`; `starts[0] = 0` makes it exist.
        let line = self.starts.partition_point(|&start| start <= offset);
        let start = self.starts[line - 1];
        let column = self
            .text
            .get(start..offset)
            .map_or(0, |prefix| prefix.chars().count());
        (
            u32::try_from(line).unwrap_or(u32::MAX),
            u32::try_from(column + 1).unwrap_or(u32::MAX),
        )
    }
}

struct Parser<'input> {
    lines: LineTable<'input>,
}

impl Parser<'_> {
    fn position(&self, node: roxmltree::Node<'_, '_>) -> (u32, u32) {
        self.lines.position(node.range().start)
    }

    fn error(&self, node: roxmltree::Node<'_, '_>, kind: CartsErrorKind) -> CartsError {
        let (line, column) = self.position(node);
        CartsError { line, column, kind }
    }

    /// Error positioned at an attribute's value, when the attribute exists.
    fn attribute_error(
        &self,
        node: roxmltree::Node<'_, '_>,
        attribute: &str,
        kind: CartsErrorKind,
    ) -> CartsError {
        match node.attributes().find(|a| a.name() == attribute) {
            Some(found) => {
                let (line, column) = self.lines.position(found.range_value().start);
                CartsError { line, column, kind }
            }
            None => self.error(node, kind),
        }
    }

    fn number(
        &self,
        node: roxmltree::Node<'_, '_>,
        attribute: &str,
    ) -> Result<Option<u64>, CartsError> {
        let Some(text) = node.attribute(attribute) else {
            return Ok(None);
        };
        parse_whole(text).map(Some).ok_or_else(|| {
            self.attribute_error(
                node,
                attribute,
                CartsErrorKind::BadNumber {
                    attribute: attribute.to_string(),
                    value: text.to_string(),
                },
            )
        })
    }

    fn required(&self, node: roxmltree::Node<'_, '_>, attribute: &str) -> Result<u64, CartsError> {
        self.number(node, attribute)?.ok_or_else(|| {
            self.error(
                node,
                CartsErrorKind::MissingAttribute {
                    element: node.tag_name().name().to_string(),
                    attribute: attribute.to_string(),
                },
            )
        })
    }

    fn component(
        &self,
        node: roxmltree::Node<'_, '_>,
        depth: usize,
    ) -> Result<CartsComponent, CartsError> {
        let (line, _) = self.position(node);
        let name = node
            .attribute("name")
            .map(str::to_string)
            .unwrap_or_else(|| format!("component@{line}"));
        if depth > 1 {
            return Err(self.error(node, CartsErrorKind::TooDeep(name)));
        }
        let scheduler_attribute = if node.attribute("scheduler").is_some() {
            "scheduler"
        } else {
            "os_scheduler"
        };
        let scheduler_text = node.attribute(scheduler_attribute).unwrap_or("RM");
        let mut tasks = Vec::new();
        let mut children = Vec::new();
        for child in node.children().filter(|n| n.is_element()) {
            match child.tag_name().name() {
                "task" => tasks.push(self.task(child)?),
                "component" => children.push(self.component(child, depth + 1)?),
                // CARTS output files carry a <resource> with the computed model; ignore it.
                "resource" | "processed_task" => {}
                other => {
                    return Err(self.error(
                        child,
                        CartsErrorKind::UnexpectedElement {
                            found: other.to_string(),
                            inside: "component".into(),
                        },
                    ))
                }
            }
        }
        let constrained = tasks.iter().any(|t| t.task.deadline < t.task.period);
        let scheduler = match scheduler_text.trim().to_ascii_uppercase().as_str() {
            // CARTS orders an RM component's tasks by deadline: with a constrained deadline
            // that is deadline monotonic.
            "RM" if constrained => GuestScheduler::Dm,
            "RM" => GuestScheduler::Rm,
            "DM" => GuestScheduler::Dm,
            // Global EDF reads as EDF; `is_global_edf` keeps it apart (see the module docs).
            "EDF" | "GEDF" => GuestScheduler::Edf,
            _ => {
                return Err(self.attribute_error(
                    node,
                    scheduler_attribute,
                    CartsErrorKind::BadScheduler(scheduler_text.to_string()),
                ))
            }
        };
        let min_period = self.number(node, "min_period")?;
        let max_period = self.number(node, "max_period")?;
        let period = self.number(node, "period")?;
        let budget = self.number(node, "budget")?;
        if budget.is_some() && period.is_none() {
            return Err(self.error(
                node,
                CartsErrorKind::BadPeriods(format!(
                    "component \"{name}\" gives a budget without a period"
                )),
            ));
        }
        for (attribute, value) in [
            ("min_period", min_period),
            ("max_period", max_period),
            ("period", period),
        ] {
            if value == Some(0) {
                return Err(self.attribute_error(
                    node,
                    attribute,
                    CartsErrorKind::BadPeriods(format!("{attribute} must be positive")),
                ));
            }
        }
        if let (Some(low), Some(high)) = (min_period, max_period) {
            if low > high {
                return Err(self.error(
                    node,
                    CartsErrorKind::BadPeriods(format!(
                        "component \"{name}\": min_period {low} exceeds max_period {high}"
                    )),
                ));
            }
        }
        if tasks.is_empty() && children.is_empty() {
            return Err(self.error(node, CartsErrorKind::EmptyComponent(name)));
        }
        Ok(CartsComponent {
            name,
            scheduler,
            scheduler_written: scheduler_text.trim().to_string(),
            min_period,
            max_period,
            period,
            budget,
            tasks,
            children,
            line,
        })
    }

    fn task(&self, node: roxmltree::Node<'_, '_>) -> Result<CartsTask, CartsError> {
        let (line, _) = self.position(node);
        if let Some(child) = node.children().find(|n| n.is_element()) {
            return Err(self.error(
                child,
                CartsErrorKind::UnexpectedElement {
                    found: child.tag_name().name().to_string(),
                    inside: "task".into(),
                },
            ));
        }
        let period = self.required(node, "p")?;
        let wcet = self.required(node, "e")?;
        let deadline = self.number(node, "d")?.unwrap_or(period);
        let task = Task::with_deadline(period, wcet, deadline);
        task.validate(0).map_err(|error| {
            // Re-word the workload error without its index (the line says which task).
            let message = error.to_string();
            let message = message
                .split_once(": ")
                .map_or(message.clone(), |(_, rest)| rest.to_string());
            self.error(node, CartsErrorKind::BadTask(message))
        })?;
        Ok(CartsTask {
            name: node
                .attribute("name")
                .map(str::to_string)
                .unwrap_or_else(|| format!("task@{line}")),
            task,
            line,
        })
    }
}

/// A whole non-negative number: `42`, `42.0`, `42.000` (CARTS files often write decimals).
fn parse_whole(text: &str) -> Option<u64> {
    let text = text.trim();
    let (whole, fraction) = match text.split_once('.') {
        Some((whole, fraction)) => (whole, fraction),
        None => (text, ""),
    };
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !fraction.bytes().all(|b| b == b'0') {
        return None;
    }
    whole.parse().ok()
}

impl CartsSystem {
    /// The system as CARTS XML, in the form CARTS's own parsers read: every task with its
    /// `name`, `p`, `d` and `e` (CARTS refuses a task without `d`), every component with its
    /// `name` and `scheduler`, the root with `os_scheduler` (RM when the file gave none).
    /// [`parse_carts`] reads it back to the same system, lines aside.
    ///
    /// ```
    /// let xml = r#"<system><component name="c"><task p="10" e="2"/></component></system>"#;
    /// let system = rtvmm_analysis::parse_carts(xml).unwrap();
    /// let written = system.to_xml();
    /// assert!(written.contains(r#"<task name="task@1" p="10" d="10" e="2"/>"#));
    /// let again = rtvmm_analysis::parse_carts(&written).unwrap();
    /// assert_eq!(again.components[0].tasks[0].task, system.components[0].tasks[0].task);
    /// ```
    pub fn to_xml(&self) -> String {
        let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<system");
        let scheduler = self.scheduler.as_deref().unwrap_or("RM");
        out.push_str(&format!(" os_scheduler=\"{}\"", escape(scheduler)));
        for (attribute, value) in [
            ("period", self.period),
            ("min_period", self.min_period),
            ("max_period", self.max_period),
        ] {
            if let Some(value) = value {
                out.push_str(&format!(" {attribute}=\"{value}\""));
            }
        }
        out.push_str(">\n");
        for component in &self.components {
            write_component(&mut out, component, 1);
        }
        out.push_str("</system>\n");
        out
    }

    /// The top-level components as domains for [`crate::analyze_system`].
    ///
    /// A component's interface choice: `period` + `budget` → given; `period` → fixed
    /// period; otherwise optimal within `[min_period, max_period]`. Each child component's
    /// interface (computed with `mode`, as the child's attributes say) is added to its parent
    /// as a periodic task `(Π, Θ)` (Shin & Lee TECS 2008, compositional analysis).
    pub fn to_domains(&self, mode: SbfMode) -> Result<Vec<DomainSpec>, CartsError> {
        self.components
            .iter()
            .map(|component| {
                if let Some(global) = std::iter::once(component)
                    .chain(&component.children)
                    .find(|c| c.is_global_edf())
                {
                    return Err(CartsError {
                        line: global.line,
                        column: 1,
                        kind: CartsErrorKind::GlobalEdf(global.name.clone()),
                    });
                }
                let mut tasks: Vec<Task> = component.tasks.iter().map(|t| t.task).collect();
                for child in &component.children {
                    tasks.push(child_interface_task(child, mode)?);
                }
                let workload = Workload::new(tasks).map_err(|error| CartsError {
                    line: component.line,
                    column: 1,
                    kind: CartsErrorKind::BadTask(error.to_string()),
                })?;
                Ok(DomainSpec {
                    name: component.name.clone(),
                    workload,
                    guest: component.scheduler,
                    interface: interface_choice(component),
                })
            })
            .collect()
    }
}

fn write_component(out: &mut String, component: &CartsComponent, depth: usize) {
    let indent = "  ".repeat(depth);
    out.push_str(&format!(
        "{indent}<component name=\"{}\" scheduler=\"{}\"",
        escape(&component.name),
        escape(&component.scheduler_written)
    ));
    for (attribute, value) in [
        ("min_period", component.min_period),
        ("max_period", component.max_period),
        ("period", component.period),
        ("budget", component.budget),
    ] {
        if let Some(value) = value {
            out.push_str(&format!(" {attribute}=\"{value}\""));
        }
    }
    out.push_str(">\n");
    for task in &component.tasks {
        out.push_str(&format!(
            "{indent}  <task name=\"{}\" p=\"{}\" d=\"{}\" e=\"{}\"/>\n",
            escape(&task.name),
            task.task.period,
            task.task.deadline,
            task.task.wcet
        ));
    }
    for child in &component.children {
        write_component(out, child, depth + 1);
    }
    out.push_str(&format!("{indent}</component>\n"));
}

/// Text for an XML attribute value.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' => out.push_str("&#10;"),
            '\t' => out.push_str("&#9;"),
            '\r' => out.push_str("&#13;"),
            c => out.push(c),
        }
    }
    out
}

fn interface_choice(component: &CartsComponent) -> InterfaceChoice {
    match (component.period, component.budget) {
        (Some(period), Some(budget)) => InterfaceChoice::Given(Interface::new(period, budget)),
        (Some(period), None) => InterfaceChoice::FixedPeriod(period),
        _ => InterfaceChoice::Optimal(PeriodRange {
            min: component.min_period.unwrap_or(1),
            max: component.max_period,
        }),
    }
}

fn child_interface_task(child: &CartsComponent, mode: SbfMode) -> Result<Task, CartsError> {
    let fail = |reason: String| CartsError {
        line: child.line,
        column: 1,
        kind: CartsErrorKind::ChildUnschedulable {
            child: child.name.clone(),
            reason,
        },
    };
    let workload =
        Workload::new(child.tasks.iter().map(|t| t.task)).map_err(|e| fail(e.to_string()))?;
    let analyzer = InterfaceAnalyzer::new(&workload, child.scheduler);
    let interface = match interface_choice(child) {
        InterfaceChoice::Given(interface) => {
            let form = analyzer.form(mode, interface.period);
            if interface.budget == 0 || interface.budget > interface.period {
                return Err(fail(format!(
                    "invalid interface ({}, {})",
                    interface.period, interface.budget
                )));
            }
            match analyzer.verdict(interface, form) {
                Verdict::Schedulable => {}
                Verdict::Fails { task } => {
                    return Err(fail(format!(
                        "task {} fails on the given interface",
                        analyzer.workload().declaration_index(task)
                    )))
                }
                Verdict::Undecided { task } => {
                    return Err(fail(format!(
                        "the exact test of task {} on the given interface needs more than {} \
                         steps; analyse in a coarser time unit",
                        analyzer.workload().declaration_index(task),
                        MAX_TEST_STEPS
                    )))
                }
            }
            interface
        }
        InterfaceChoice::FixedPeriod(period) => analyzer
            .min_exec(period, mode)
            .map(|budget| Interface::new(period, budget))
            .map_err(|e| fail(e.to_string()))?,
        InterfaceChoice::Optimal(range) => analyzer
            .optimal(mode, range)
            .map(|found| found.interface)
            .map_err(|e| fail(e.to_string()))?,
    };
    Ok(Task::new(interface.period, interface.budget))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line table answers what roxmltree's own scan answers, at every byte offset that
    /// starts a character: empty lines, CRLF, multi-byte characters, the text's end.
    #[test]
    fn line_table_agrees_with_roxmltree() {
        let text = "<system>\r\n\n  <component name=\"été\">\n\t<task p=\"1\" e=\"1\"/>\
                    </component>\n</system>\n";
        let document = roxmltree::Document::parse(text).unwrap();
        let table = LineTable::new(text);
        for offset in (0..=text.len()).filter(|&o| text.is_char_boundary(o)) {
            let expected = document.text_pos_at(offset);
            assert_eq!(
                table.position(offset),
                (expected.row, expected.col),
                "offset {offset}"
            );
        }
        assert_eq!(table.position(text.len() + 5), table.position(text.len()));
    }

    #[test]
    fn whole_numbers() {
        assert_eq!(parse_whole("42"), Some(42));
        assert_eq!(parse_whole(" 42.00 "), Some(42));
        assert_eq!(parse_whole("42.5"), None);
        assert_eq!(parse_whole("-1"), None);
        assert_eq!(parse_whole(""), None);
        assert_eq!(parse_whole("1e3"), None);
        assert_eq!(parse_whole("99999999999999999999999"), None);
    }
}
