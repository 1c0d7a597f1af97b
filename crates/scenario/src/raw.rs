//! The file as written: serde mirrors of the TOML with every field optional, so that the
//! conversion (in `build.rs`) can say *which* domain or task lacks a field, and times kept
//! as written, so that a bare number is reported as such instead of as a type error.
//! Unknown keys are rejected here (`deny_unknown_fields`), with their line and column.
//!
//! A value of the wrong shape (`vcpu = 3`, `priority = "x"`) is a serde error that knows
//! its line and column but not which domain, task or key it is in, and names Rust types
//! ("expected struct RawVcpu", "expected i64"). [`parse`] then finds the place by
//! deserializing the document piece by piece ([`locate`]) and says it in words:
//! `domain 'd1', task 't': priority: expected a whole number, found the string "x"`.

use rtvmm_core::words::{serde_message_in_words, Notation};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};

use crate::error::{ErrorKind, Location, ScenarioError};

/// A time value as it appears in the file.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RawTime {
    /// A string: to be parsed with its unit.
    Text(String),
    /// A bare TOML number: always an error, reported with the number.
    Bare(String),
    /// Anything else (boolean, array, table, date): the TOML type.
    Other(String),
}

impl<'de> Deserialize<'de> for RawTime {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RawTime, D::Error> {
        Ok(match toml::Value::deserialize(deserializer)? {
            toml::Value::String(s) => RawTime::Text(s),
            toml::Value::Integer(i) => RawTime::Bare(i.to_string()),
            toml::Value::Float(x) => RawTime::Bare(x.to_string()),
            other => RawTime::Other(format!("a {}", other.type_str())),
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a scenario: name, duration, seed, [machine], [scheduler], [[pool]], [[domain]], [[event]] and [[chain]] tables"
)]
pub(crate) struct RawScenario {
    pub name: Option<String>,
    pub duration: Option<RawTime>,
    pub seed: Option<i64>,
    pub machine: Option<RawMachine>,
    pub scheduler: Option<RawScheduler>,
    #[serde(default)]
    pub pool: Vec<RawPool>,
    #[serde(default)]
    pub domain: Vec<RawDomain>,
    #[serde(default)]
    pub event: Vec<RawEvent>,
    #[serde(default)]
    pub chain: Vec<RawChain>,
}

/// One `[[chain]]`: tasks linked by triggers, whose end-to-end latency a run measures.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table such as { name = \"io\", tasks = [\"driver/rx\", \"guest/front\"] }"
)]
pub(crate) struct RawChain {
    pub name: Option<String>,
    /// `"DOMAIN/TASK"`, first to last.
    pub tasks: Option<Vec<String>>,
    pub bounds: Option<Vec<RawTime>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table with pcpus, quantum, replenishment, overhead, overhead_charge, wake_delivery"
)]
pub(crate) struct RawMachine {
    pub pcpus: Option<i64>,
    pub quantum: Option<RawTime>,
    pub replenishment: Option<String>,
    pub overhead: Option<RawOverhead>,
    pub overhead_charge: Option<String>,
    /// A preset's name or a table: kept as a value to accept both (`wake.rs` reads it).
    pub wake_delivery: Option<toml::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table such as { do_schedule = \"150ns\", context_switch = \"1.5us\" }"
)]
pub(crate) struct RawOverhead {
    pub do_schedule: Option<RawTime>,
    pub context_switch: Option<RawTime>,
    pub migration: Option<RawTime>,
    pub lock: Option<RawTime>,
}

/// One `[[pool]]`: a cpupool.
#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table with name, pcpus, policy, quantum, overhead"
)]
pub(crate) struct RawPool {
    pub name: Option<String>,
    /// `[0, 1]` or `"0-1"`: kept as a value to accept both.
    pub pcpus: Option<toml::Value>,
    pub policy: Option<String>,
    pub quantum: Option<RawTime>,
    pub overhead: Option<RawOverhead>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table with policy, timeslice, accounting_period, major_frame, minor_frames"
)]
pub(crate) struct RawScheduler {
    pub policy: Option<String>,
    pub credit: Option<RawCredit>,
    pub rtds: Option<RawRtds>,
    /// Replaced by `credit = { .. }`: read only to say so.
    pub timeslice: Option<toml::Value>,
    /// Replaced by `credit = { .. }`: read only to say so.
    pub accounting_period: Option<toml::Value>,
    pub major_frame: Option<RawTime>,
    pub minor_frames: Option<Vec<RawMinorFrame>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCredit {
    pub tick: Option<RawTime>,
    pub ticks_per_slice: Option<i64>,
    pub ticks_per_accounting: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRtds {
    pub mode: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table such as { domain = \"d1\", runtime = \"5ms\" }"
)]
pub(crate) struct RawMinorFrame {
    pub domain: Option<String>,
    pub runtime: Option<RawTime>,
}

#[derive(Debug, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table with name, guest, vcpu and task"
)]
pub(crate) struct RawDomain {
    pub name: Option<String>,
    pub guest: Option<String>,
    pub vcpu: Option<RawVcpu>,
    #[serde(default)]
    pub task: Vec<RawTask>,
    /// An external domain: an existing cgroup v2 directory ([`crate::external`]).
    pub attach: Option<String>,
    /// An external domain: existing processes ([`crate::external`]).
    pub pids: Option<Vec<i64>>,
    pub pool: Option<String>,
    pub vcpus: Option<i64>,
    /// `"0-1"` for every VCPU or `["0", "1-2"]` per VCPU: kept as a value to accept both.
    pub affinity: Option<toml::Value>,
    pub smp: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a table such as { budget = \"2ms\", period = \"10ms\" }"
)]
pub(crate) struct RawVcpu {
    pub budget: Option<RawTime>,
    pub period: Option<RawTime>,
    pub priority: Option<i64>,
    pub offset: Option<RawTime>,
    pub weight: Option<i64>,
    pub cap: Option<i64>,
    pub extratime: Option<bool>,
    pub max_replenishments: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table with name, period, wcet, …")]
pub(crate) struct RawTask {
    pub name: Option<String>,
    pub kind: Option<String>,
    pub period: Option<RawTime>,
    pub wcet: Option<RawTime>,
    pub deadline: Option<RawTime>,
    pub offset: Option<RawTime>,
    /// A number (TOML float or integer): kept as a value to accept both.
    pub etf: Option<toml::Value>,
    pub min_exec: Option<RawTime>,
    pub priority: Option<i64>,
    pub max_extra_gap: Option<RawTime>,
    pub releases: Option<Vec<RawTime>>,
    pub mean_gap: Option<RawTime>,
    /// `"DOMAIN/TASK"`: what releases a triggered task.
    pub trigger: Option<String>,
    pub delay: Option<RawTime>,
    /// The VCPU a task of a partitioned guest runs on.
    pub vcpu: Option<i64>,
}

/// One `[[event]]`: the union of every action's fields; which ones an action accepts is
/// checked in the conversion.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, expecting = "a table with at, action, …")]
pub(crate) struct RawEvent {
    pub at: Option<RawTime>,
    pub action: Option<String>,
    /// A name (`sched-set`, `remove-domain`) or a whole domain (`add-domain`).
    pub domain: Option<toml::Value>,
    pub policy: Option<String>,
    pub budget: Option<RawTime>,
    pub period: Option<RawTime>,
    pub priority: Option<i64>,
    pub weight: Option<i64>,
    pub cap: Option<i64>,
    pub extratime: Option<bool>,
    pub max_replenishments: Option<i64>,
    /// An `xl` command line, in place of `action`.
    pub xl: Option<String>,
}

/// Parses the file as written. A value of the wrong shape is reported where it is, in
/// words; TOML syntax errors keep the parser's message.
pub(crate) fn parse(text: &str, file: &str) -> Result<RawScenario, ScenarioError> {
    let error = match toml::from_str::<RawScenario>(text) {
        Ok(raw) => return Ok(raw),
        Err(e) => e,
    };
    let (line, column) = match error.span() {
        Some(span) => crate::error::line_and_column(text, span.start),
        None => (1, 1),
    };
    let (location, message) = match toml::from_str::<toml::Table>(text) {
        Ok(document) => locate(&document)
            .unwrap_or_else(|| (Location::default(), in_words(error.message().trim()))),
        Err(_) => (Location::default(), error.message().trim().to_string()),
    };
    Err(ScenarioError::new(
        file,
        location,
        ErrorKind::Syntax {
            line,
            column,
            message,
        },
    ))
}

/// The first key of `table` whose value `T` refuses, and serde's message for it. Every
/// field of the raw types is optional, so a table of that one key fails only for it.
fn bad_key<T: DeserializeOwned>(table: &toml::Table) -> Option<(&str, &toml::Value, String)> {
    table.iter().find_map(|(key, value)| {
        let mut single = toml::Table::new();
        single.insert(key.clone(), value.clone());
        T::deserialize(toml::Value::Table(single))
            .err()
            .map(|e| (key.as_str(), value, e.message().trim().to_string()))
    })
}

/// `value` as `T`, or serde's message.
fn refused<T: DeserializeOwned>(value: &toml::Value) -> Option<String> {
    T::deserialize(value.clone())
        .err()
        .map(|e| e.message().trim().to_string())
}

/// Where in the document a value of the wrong shape is, and what is wrong, in words.
pub(crate) fn locate(document: &toml::Table) -> Option<(Location, String)> {
    let (key, value, message) = bad_key::<RawScenario>(document)?;
    let found = match (key, value) {
        ("machine", toml::Value::Table(t)) => {
            let at = |field: String| Location {
                section: Some("[machine]"),
                ..Location::top(&field)
            };
            match bad_key::<RawMachine>(t) {
                Some(("overhead", toml::Value::Table(o), m)) => match bad_key::<RawOverhead>(o) {
                    Some((k, _, m)) => (at(format!("overhead.{k}")), m),
                    None => (at("overhead".into()), m),
                },
                Some((k, _, m)) => (at(k.to_string()), m),
                None => (Location::top("machine"), message),
            }
        }
        ("scheduler", toml::Value::Table(t)) => {
            let at = |field: String| Location {
                section: Some("[scheduler]"),
                ..Location::top(&field)
            };
            match bad_key::<RawScheduler>(t) {
                Some(("minor_frames", toml::Value::Array(frames), m)) => frames
                    .iter()
                    .enumerate()
                    .find_map(|(i, f)| match f {
                        toml::Value::Table(f) => bad_key::<RawMinorFrame>(f)
                            .map(|(k, _, m)| (at(format!("minor_frames[{}].{k}", i + 1)), m)),
                        other => refused::<RawMinorFrame>(other)
                            .map(|m| (at(format!("minor_frames[{}]", i + 1)), m)),
                    })
                    .unwrap_or((at("minor_frames".into()), m)),
                Some((k, _, m)) => (at(k.to_string()), m),
                None => (Location::top("scheduler"), message),
            }
        }
        ("pool", toml::Value::Array(pools)) => pools
            .iter()
            .enumerate()
            .find_map(|(i, p)| {
                let at = Location {
                    pool: Some(
                        p.get("name")
                            .and_then(|n| n.as_str())
                            .map_or_else(|| format!("#{}", i + 1), str::to_string),
                    ),
                    ..Location::default()
                };
                match p {
                    toml::Value::Table(t) => match bad_key::<RawPool>(t) {
                        Some(("overhead", toml::Value::Table(o), m)) => {
                            match bad_key::<RawOverhead>(o) {
                                Some((k, _, m)) => Some((at.field(&format!("overhead.{k}")), m)),
                                None => Some((at.field("overhead"), m)),
                            }
                        }
                        Some((k, _, m)) => Some((at.field(k), m)),
                        None => None,
                    },
                    other => refused::<RawPool>(other).map(|m| (at, m)),
                }
            })
            .unwrap_or((Location::top("pool"), message)),
        ("domain", toml::Value::Array(domains)) => domains
            .iter()
            .find_map(|d| locate_domain(d, Location::default()))
            .unwrap_or((Location::top("domain"), message)),
        ("chain", toml::Value::Array(chains)) => chains
            .iter()
            .enumerate()
            .find_map(|(i, c)| {
                let at = Location {
                    chain: Some(chain_label(c, i)),
                    ..Location::default()
                };
                match c {
                    toml::Value::Table(t) => {
                        bad_key::<RawChain>(t).map(|(k, _, m)| (at.field(k), m))
                    }
                    other => refused::<RawChain>(other).map(|m| (at, m)),
                }
            })
            .unwrap_or((Location::top("chain"), message)),
        ("event", toml::Value::Array(events)) => events
            .iter()
            .enumerate()
            .find_map(|(i, e)| {
                let at = Location {
                    event: Some(i + 1),
                    ..Location::default()
                };
                locate_event(e, at)
            })
            .unwrap_or((Location::top("event"), message)),
        (key, _) => (Location::top(key), message),
    };
    Some(without_repeated_field(found))
}

/// A `[[chain]]`'s name in messages: its `name`, or `#n` (1-based) when it has none.
pub(crate) fn chain_label(chain: &toml::Value, index: usize) -> String {
    chain
        .get("name")
        .and_then(|n| n.as_str())
        .map_or_else(|| format!("#{}", index + 1), str::to_string)
}

fn locate_event(value: &toml::Value, at: Location) -> Option<(Location, String)> {
    let toml::Value::Table(t) = value else {
        return refused::<RawEvent>(value).map(|m| (at, m));
    };
    let (key, value, message) = bad_key::<RawEvent>(t)?;
    Some(match (key, value) {
        ("domain", toml::Value::Table(_)) => {
            locate_domain(value, at.clone()).unwrap_or((at.field("domain"), message))
        }
        (key, _) => (at.field(key), message),
    })
}

/// Where an added domain's table (`add-domain`) is wrong, in words; `at` is its event.
pub(crate) fn locate_added_domain(value: &toml::Value, at: Location) -> Option<(Location, String)> {
    locate_domain(value, at).map(without_repeated_field)
}

/// Where a `[[domain]]` (or an added domain's table) is wrong. `at` carries the event
/// number for an added domain.
fn locate_domain(value: &toml::Value, at: Location) -> Option<(Location, String)> {
    let toml::Value::Table(t) = value else {
        return refused::<RawDomain>(value).map(|m| (at, m));
    };
    let here = Location {
        domain: t.get("name").and_then(|n| n.as_str()).map(str::to_string),
        ..at
    };
    let (key, value, message) = bad_key::<RawDomain>(t)?;
    Some(match (key, value) {
        ("vcpu", toml::Value::Table(v)) => match bad_key::<RawVcpu>(v) {
            Some((k, _, m)) => (here.field(&format!("vcpu.{k}")), m),
            None => (here.field("vcpu"), message),
        },
        ("task", toml::Value::Array(tasks)) => tasks
            .iter()
            .find_map(|task| {
                let toml::Value::Table(task) = task else {
                    return refused::<RawTask>(task).map(|m| (here.field("task"), m));
                };
                let at = Location {
                    task: task
                        .get("name")
                        .and_then(|n| n.as_str())
                        .map(str::to_string),
                    ..here.clone()
                };
                bad_key::<RawTask>(task).map(|(k, _, m)| (at.field(k), m))
            })
            .unwrap_or((here.field("task"), message)),
        (key, _) => (here.field(key), message),
    })
}

/// An unknown key names itself: no field before it.
fn without_repeated_field((mut location, message): (Location, String)) -> (Location, String) {
    if message.starts_with("unknown field") {
        location.field = None;
    }
    (location, in_words(&message))
}

/// serde's message in words (the core's one wording, in TOML's terms).
pub(crate) fn in_words(message: &str) -> String {
    serde_message_in_words(message, Notation::Toml)
}
