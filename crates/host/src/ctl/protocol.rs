//! The wire: one JSON object per line each way, `"v": 1` in every one.
//!
//! A request names its command in `cmd`; the other keys are those of the scenario
//! format's `[[event]]` of the same action, times written with a unit (`"3ms"`):
//!
//! ```text
//! {"v":1,"cmd":"sched-show"}                          optional "domain":"d1"
//! {"v":1,"cmd":"sched-set","domain":"d1","budget":"3ms","period":"10ms"}
//!     any of budget, period, priority, weight, cap, extratime, max_replenishments
//! {"v":1,"cmd":"swap-policy","policy":"credit","credit":{"tick":"1ms","ticks_per_slice":1}}
//!     policy, and any of [scheduler]'s credit, rtds, major_frame + minor_frames
//! {"v":1,"cmd":"add-domain","domain":{"name":"d3","vcpu":{"budget":"2ms","period":"10ms","priority":3},"task":[...]}}
//! {"v":1,"cmd":"remove-domain","domain":"d3"}
//! {"v":1,"cmd":"xl","xl":"sched-rtds -d d1 -p 10000 -b 4000"}
//!     one `xl` command line (`rtvmm_core::xl`), as a scenario's `[[event]] xl = "..."`
//! ```
//!
//! A reply's `status` is `done` (with a `message`), `show` (the [`SchedShow`] fields) or
//! `error` (a [`ErrorCode`] and a `message`). Times in replies are integer nanoseconds in
//! fields ending in `_ns`, as in `rtvmm sim --json`.
//!
//! [`Command::parse`] is the one reader of a request: the server runs it on every line,
//! and the client on what it is about to send, so a request the server would refuse as
//! malformed is refused before it leaves.

use rtvmm_core::model::DomainSpec;
use rtvmm_core::xl::XlCommand;
use rtvmm_scenario::live::{read_action, LiveAction, ParamUpdate, PolicyChange};
use rtvmm_scenario::ScenarioError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The protocol version this build speaks.
pub const VERSION: u32 = 1;

/// The longest request line accepted, in bytes (its newline included). A domain with a
/// thousand tasks takes about 100 KiB.
pub const MAX_REQUEST_BYTES: usize = 256 * 1024;

/// The name of a request's origin in messages (`request: domain 'd1': budget: ...`).
pub const ORIGIN: &str = "request";

/// The commands, as named in `cmd`.
pub const COMMANDS: [&str; 6] = [
    "sched-show",
    "sched-set",
    "swap-policy",
    "add-domain",
    "remove-domain",
    "xl",
];

/// A validated request: everything that can be checked without the running system has
/// been (names, times, units, ranges, unknown keys, policy names, the added domain's
/// tables and tasks). Whether the domain exists and whether the policy accepts the new
/// parameters is the executor's to say ([`super::apply`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Every domain (or one) with its parameters and live figures.
    SchedShow {
        domain: Option<String>,
    },
    /// New parameters for a domain's VCPU (`xl sched-set`, `xl sched-rtds -d D -p P -b B`).
    SchedSet(ParamUpdate),
    /// Hot swap of the policy, with `[scheduler]` settings.
    SwapPolicy(PolicyChange),
    /// A new domain (`[[domain]]` table; its priority given).
    AddDomain(DomainSpec),
    RemoveDomain {
        domain: String,
    },
    /// An `xl` command (`sched-rtds`, `sched-credit`, `vcpu-pin`, `cpupool-*`), applied by
    /// the simulator's rule (`rtvmm_system::xl::apply_xl`) where one pcpu can honour it.
    Xl(XlCommand),
}

/// Why a request line was refused before reaching the executor.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    #[error("not JSON: {0}")]
    NotJson(String),
    #[error("expected a JSON object such as {{\"v\":1,\"cmd\":\"sched-show\"}}, found {found}")]
    NotAnObject { found: &'static str },
    #[error("v: missing (required): the protocol version, {VERSION}")]
    MissingVersion,
    #[error("v: protocol version {found} is not spoken here (this build speaks {VERSION})")]
    Version { found: String },
    #[error("cmd: missing (required): one of {}", COMMANDS.join(", "))]
    MissingCommand,
    #[error("cmd: unknown command '{name}': expected one of {}", COMMANDS.join(", "))]
    UnknownCommand { name: String },
    #[error("{field}: {problem}")]
    Field { field: String, problem: String },
    /// The scenario reader's refusal (it names the domain and the field).
    #[error("{0}")]
    Invalid(ScenarioError),
}

/// A JSON value's kind, for messages.
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A JSON value as the TOML value the scenario reader takes; `field` names it in
/// messages. JSON's null and integers beyond TOML's have no TOML form.
pub(crate) fn to_toml(value: &Value, field: &str) -> Result<toml::Value, RequestError> {
    let problem = |problem: String| RequestError::Field {
        field: field.to_string(),
        problem,
    };
    Ok(match value {
        Value::Null => return Err(problem("null is not a value: leave the key out".into())),
        Value::Bool(b) => toml::Value::Boolean(*b),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => toml::Value::Integer(i),
            (None, Some(_)) if n.is_u64() => {
                return Err(problem(format!("{n} is out of range")));
            }
            (None, Some(x)) => toml::Value::Float(x),
            (None, None) => return Err(problem(format!("{n} is out of range"))),
        },
        Value::String(s) => toml::Value::String(s.clone()),
        Value::Array(items) => toml::Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, v)| to_toml(v, &format!("{field}[{}]", i + 1)))
                .collect::<Result<_, _>>()?,
        ),
        Value::Object(map) => toml::Value::Table(
            map.iter()
                .map(|(k, v)| {
                    let path = if field.is_empty() {
                        k.clone()
                    } else {
                        format!("{field}.{k}")
                    };
                    Ok((k.clone(), to_toml(v, &path)?))
                })
                .collect::<Result<_, RequestError>>()?,
        ),
    })
}

impl Command {
    /// Reads one request line.
    pub fn parse(line: &str) -> Result<Command, RequestError> {
        let value: Value =
            serde_json::from_str(line).map_err(|e| RequestError::NotJson(e.to_string()))?;
        Command::from_json(&value)
    }

    /// Reads a request already parsed as JSON.
    pub fn from_json(value: &Value) -> Result<Command, RequestError> {
        let Value::Object(map) = value else {
            return Err(RequestError::NotAnObject {
                found: kind_of(value),
            });
        };
        match map.get("v") {
            None => return Err(RequestError::MissingVersion),
            Some(v) if v.as_u64() == Some(VERSION as u64) => {}
            Some(v) => {
                return Err(RequestError::Version {
                    found: v.to_string(),
                })
            }
        }
        let name = match map.get("cmd") {
            None => return Err(RequestError::MissingCommand),
            Some(Value::String(name)) => name.trim().to_ascii_lowercase(),
            Some(other) => {
                return Err(RequestError::Field {
                    field: "cmd".into(),
                    problem: format!(
                        "expected a command name (a string), found {}",
                        kind_of(other)
                    ),
                })
            }
        };
        let mut rest: Map<String, Value> = map.clone();
        rest.remove("v");
        rest.remove("cmd");
        if name == "sched-show" {
            return Self::sched_show(rest);
        }
        if name == "xl" {
            return Self::xl(rest);
        }
        if !COMMANDS.contains(&name.as_str()) {
            return Err(RequestError::UnknownCommand { name });
        }
        if rest.contains_key("action") {
            return Err(RequestError::Field {
                field: "action".into(),
                problem: "not used here: the command is `cmd`".into(),
            });
        }
        let mut table = match to_toml(&Value::Object(rest), "")? {
            toml::Value::Table(table) => table,
            _ => unreachable!("an object becomes a table"),
        };
        table.insert("action".into(), toml::Value::String(name));
        Ok(
            match read_action(&table, ORIGIN).map_err(RequestError::Invalid)? {
                LiveAction::SetParams(update) => Command::SchedSet(update),
                LiveAction::SwapPolicy(change) => Command::SwapPolicy(change),
                LiveAction::AddDomain(spec) => Command::AddDomain(spec),
                LiveAction::RemoveDomain(domain) => Command::RemoveDomain { domain },
            },
        )
    }

    fn sched_show(rest: Map<String, Value>) -> Result<Command, RequestError> {
        let mut domain = None;
        for (key, value) in rest {
            match (key.as_str(), value) {
                ("domain", Value::String(name)) => domain = Some(name),
                ("domain", other) => {
                    return Err(RequestError::Field {
                        field: key,
                        problem: format!(
                            "expected a domain name (a string), found {}",
                            kind_of(&other)
                        ),
                    })
                }
                _ => {
                    return Err(RequestError::Field {
                        field: key,
                        problem: "not used here: sched-show takes domain".into(),
                    })
                }
            }
        }
        Ok(Command::SchedShow { domain })
    }

    /// `{"xl": LINE}`: the line is read by `xl`'s own reader ([`XlCommand::parse`]), whose
    /// error names the command and the argument at fault.
    fn xl(rest: Map<String, Value>) -> Result<Command, RequestError> {
        let field = |problem: String| RequestError::Field {
            field: "xl".into(),
            problem,
        };
        let mut line = None;
        for (key, value) in rest {
            match (key.as_str(), value) {
                ("xl", Value::String(text)) => line = Some(text),
                ("xl", other) => {
                    return Err(field(format!(
                        "expected an xl command line (a string), found {}",
                        kind_of(&other)
                    )))
                }
                _ => {
                    return Err(RequestError::Field {
                        field: key,
                        problem: "not used here: xl takes xl (the command line)".into(),
                    })
                }
            }
        }
        let line = line.ok_or_else(|| {
            field("missing (required): an xl command line such as \"sched-rtds -d d1 -p 10000 -b 4000\"".into())
        })?;
        XlCommand::parse(&line)
            .map(Command::Xl)
            .map_err(|e| field(e.to_string()))
    }

    /// The command's name on the wire.
    pub fn name(&self) -> &'static str {
        match self {
            Command::SchedShow { .. } => "sched-show",
            Command::SchedSet(_) => "sched-set",
            Command::SwapPolicy(_) => "swap-policy",
            Command::AddDomain(_) => "add-domain",
            Command::RemoveDomain { .. } => "remove-domain",
            Command::Xl(_) => "xl",
        }
    }

    /// Whether the command changes the running system.
    pub fn changes_anything(&self) -> bool {
        !matches!(self, Command::SchedShow { .. })
    }
}

/// A request object for `cmd` with `fields` (the version added).
pub fn request(cmd: &str, fields: Map<String, Value>) -> Value {
    let mut map = Map::new();
    map.insert("v".into(), VERSION.into());
    map.insert("cmd".into(), cmd.into());
    map.extend(fields);
    Value::Object(map)
}

/// What the executor says.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "kebab-case")]
pub enum Reply {
    /// A change was made; the message says what and when it takes effect.
    Done { message: String },
    /// `sched-show`.
    Show(SchedShow),
    /// Nothing was changed (except where the message says otherwise: an executor that
    /// took a command and then did not answer in time).
    Error { code: ErrorCode, message: String },
}

/// Why a request got no answer from the executor, or a refusal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorCode {
    /// Malformed or invalid request (bad JSON, unknown command or key, a bad time): the
    /// client's to fix.
    BadRequest,
    /// Longer than [`MAX_REQUEST_BYTES`].
    TooLong,
    /// The executor refused: no such domain, a name in use, parameters the policy refuses.
    Refused,
    /// The peer is neither the socket's owner nor root.
    NotPermitted,
    /// The client sent no whole request in time, or the executor did not answer in time.
    Timeout,
    /// Too many connections at once.
    Busy,
    /// The executor has stopped taking commands.
    Unavailable,
}

impl Reply {
    pub fn error(code: ErrorCode, message: impl Into<String>) -> Reply {
        Reply::Error {
            code,
            message: message.into(),
        }
    }

    /// The reply as one line, newline included.
    pub fn to_line(&self) -> String {
        #[derive(Serialize)]
        struct Envelope<'a> {
            v: u32,
            #[serde(flatten)]
            reply: &'a Reply,
        }
        let mut line = serde_json::to_string(&Envelope {
            v: VERSION,
            reply: self,
        })
        .expect("a reply serializes");
        line.push('\n');
        line
    }

    /// Reads a reply line.
    pub fn parse(line: &str) -> Result<Reply, ReplyError> {
        #[derive(Deserialize)]
        struct Envelope {
            v: u32,
            #[serde(flatten)]
            reply: Reply,
        }
        let value: Value =
            serde_json::from_str(line).map_err(|e| ReplyError::Malformed(e.to_string()))?;
        if let Some(v) = value.get("v").and_then(Value::as_u64) {
            if v != VERSION as u64 {
                return Err(ReplyError::Version(v));
            }
        }
        let envelope: Envelope =
            serde_json::from_value(value).map_err(|e| ReplyError::Malformed(e.to_string()))?;
        debug_assert_eq!(envelope.v, VERSION);
        Ok(envelope.reply)
    }
}

/// A reply line that could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReplyError {
    #[error("the executor's reply is not one this client reads: {0}")]
    Malformed(String),
    #[error("the executor speaks protocol version {0}; this client speaks {VERSION}")]
    Version(u64),
}

/// `sched-show`'s answer: the policy and every domain (or the one asked for), in the
/// order they joined.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedShow {
    /// The running policy's canonical name.
    pub policy: String,
    /// The instant (since the run began) the figures are as of: the executor's last
    /// call into the machine.
    pub as_of_ns: u64,
    pub domains: Vec<DomainStatus>,
}

/// One domain in [`SchedShow`]: its VCPU's parameters as the policy reads them (a
/// derived weight included) and its live figures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DomainStatus {
    pub name: String,
    /// Its VCPU's id (the `ID` column, as `xl` shows a domain id).
    pub vcpu: u32,
    /// Zero when not set (a policy that does not read it).
    pub budget_ns: u64,
    pub period_ns: u64,
    /// Smaller is higher.
    pub priority: u32,
    pub weight: u32,
    /// Percent of a pcpu; 0 = none.
    pub cap: u32,
    /// Whether it has extra time under its policy: as given, else the policy's default.
    pub extratime: bool,
    pub max_replenishments: u32,
    /// Whether its guest has work, as last reported.
    pub has_work: bool,
    /// Whether it is the VCPU running.
    pub running: bool,
    /// Budget left in the current period (servers, RTDS; SEDF's slice); None for
    /// policies without budgets.
    pub remaining_budget_ns: Option<u64>,
    /// Current absolute deadline (SEDF, RTDS).
    pub deadline_ns: Option<u64>,
    /// Credit balance in nanoseconds of run time (Credit).
    pub credit_ns: Option<i64>,
    /// Run time so far.
    pub run_ns: u64,
    /// Budget consumed so far (every policy that has budgets).
    pub budget_consumed_ns: u64,
    /// Jobs finished and deadlines missed by its guest, when the executor knows them
    /// (process domains); None otherwise.
    pub jobs: Option<u64>,
    pub misses: Option<u64>,
}

#[cfg(test)]
mod tests;
