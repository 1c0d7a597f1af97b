//! The file as written: serde mirrors of the TOML with every field optional, so that the
//! conversion (in `build.rs`) can say *which* domain or task lacks a field, and times kept
//! as written, so that a bare number is reported as such instead of as a type error.
//! Unknown keys are rejected here (`deny_unknown_fields`), with their line and column.

use serde::{Deserialize, Deserializer};

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
#[serde(deny_unknown_fields)]
pub(crate) struct RawScenario {
    pub name: Option<String>,
    pub duration: Option<RawTime>,
    pub seed: Option<i64>,
    pub machine: Option<RawMachine>,
    pub scheduler: Option<RawScheduler>,
    #[serde(default)]
    pub domain: Vec<RawDomain>,
    #[serde(default)]
    pub event: Vec<RawEvent>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawMachine {
    pub pcpus: Option<i64>,
    pub quantum: Option<RawTime>,
    pub replenishment: Option<String>,
    pub overhead: Option<RawOverhead>,
    pub overhead_charge: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawOverhead {
    pub do_schedule: Option<RawTime>,
    pub context_switch: Option<RawTime>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
pub(crate) struct RawMinorFrame {
    pub domain: Option<String>,
    pub runtime: Option<RawTime>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawDomain {
    pub name: Option<String>,
    pub guest: Option<String>,
    pub vcpu: Option<RawVcpu>,
    #[serde(default)]
    pub task: Vec<RawTask>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
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
}

/// One `[[event]]`: the union of every action's fields; which ones an action accepts is
/// checked in the conversion.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
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
}
