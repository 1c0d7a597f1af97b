//! The `xl`-compatible commands (`docs/platform.md`, "Pcpus, pools and affinity"): one command
//! line of Xen's `xl` tool as a typed [`XlCommand`], read by [`XlCommand::parse`] and
//! written back by its `Display` as the exact `xl` line (normalised: quotes only where a
//! name needs them, `-v` only for one VCPU). Times are in µs, as `xl` takes them.
//!
//! | command | line |
//! | --- | --- |
//! | [`XlCommand::CpupoolCreate`] | `cpupool-create NAME sched=POLICY` (also xl's `name="NAME" sched="rtds"`) |
//! | [`XlCommand::CpupoolCpuAdd`] | `cpupool-cpu-add POOL CPU` |
//! | [`XlCommand::CpupoolCpuRemove`] | `cpupool-cpu-remove POOL CPU` |
//! | [`XlCommand::CpupoolMigrate`] | `cpupool-migrate DOMAIN POOL` |
//! | [`XlCommand::VcpuPin`] | `vcpu-pin DOMAIN VCPU\|all CPUS\|all` (CPUS as `0-2,5`) |
//! | [`XlCommand::SchedRtds`] | `sched-rtds -d DOMAIN [-v VCPU\|all] -p PERIOD -b BUDGET [-e 0\|1]` |
//! | [`XlCommand::SchedCredit`] | `sched-credit -d DOMAIN [-w WEIGHT] [-c CAP]` |
//!
//! A leading `xl` is accepted. Long options (`--domain=D`, `--period P`, ...) are read as
//! xl reads them. What this module checks is what the line alone decides (numbers, RTDS's
//! 10 µs minimum, budget ≤ period); whether the domain, pool or pcpu exists is the
//! running system's to say.
//!
//! ```
//! use rtvmm_core::xl::{VcpuSel, XlCommand};
//!
//! let cmd = XlCommand::parse("xl sched-rtds -d web -v all -p 10000 -b 4000").unwrap();
//! assert_eq!(
//!     cmd,
//!     XlCommand::SchedRtds {
//!         domain: "web".into(),
//!         vcpu: VcpuSel::All,
//!         period_us: 10_000,
//!         budget_us: 4_000,
//!         extratime: None,
//!     }
//! );
//! assert_eq!(cmd.to_string(), "sched-rtds -d web -p 10000 -b 4000");
//! let err = XlCommand::parse("sched-rtds -d web -p 1000 -b 4000").unwrap_err();
//! assert_eq!(err.to_string(), "sched-rtds: -b: the budget 4000us is above the period 1000us");
//! ```

use std::fmt;

use crate::cpuset::CpuSet;
use crate::policy::PolicyKind;

pub use crate::model::RTDS_MIN_US;

/// The largest time an `xl` command may give, in µs: 10¹⁴ µs = 10¹⁷ ns, the scenario
/// format's bound on every time (`rtvmm_scenario::MAX_TIME`, "Limits" there says why).
pub const MAX_US: u64 = 100_000_000_000_000;

/// Xen's range of Credit weights.
pub const CREDIT_MAX_WEIGHT: u32 = 65_535;

/// Which VCPUs of a domain a command concerns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VcpuSel {
    /// Every VCPU of the domain (`all`, or no `-v`).
    All,
    /// VCPU `i` of the domain (0-based, as xl numbers them).
    One(u32),
}

impl fmt::Display for VcpuSel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VcpuSel::All => f.write_str("all"),
            VcpuSel::One(i) => write!(f, "{i}"),
        }
    }
}

/// One `xl` command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum XlCommand {
    /// A new cpupool without pcpus, scheduled by `sched`.
    CpupoolCreate { name: String, sched: PolicyKind },
    /// A free pcpu joins `pool`.
    CpupoolCpuAdd { pool: String, cpu: u32 },
    /// A pcpu leaves `pool` and becomes free.
    CpupoolCpuRemove { pool: String, cpu: u32 },
    /// Every VCPU of `domain` moves to `pool`.
    CpupoolMigrate { domain: String, pool: String },
    /// Hard affinity of the chosen VCPUs; `cpus: None` is `all` (every pcpu of the pool).
    VcpuPin {
        domain: String,
        vcpu: VcpuSel,
        cpus: Option<CpuSet>,
    },
    /// RTDS budget and period (µs) of the chosen VCPUs; `extratime: None` keeps it.
    SchedRtds {
        domain: String,
        vcpu: VcpuSel,
        period_us: u64,
        budget_us: u64,
        extratime: Option<bool>,
    },
    /// Credit weight and cap of every VCPU of `domain`; a field not given keeps its value.
    SchedCredit {
        domain: String,
        weight: Option<u32>,
        cap: Option<u32>,
    },
}

/// Why a command line was refused. Each names the command and the argument at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum XlError {
    #[error("empty command: expected one of {}", XlCommand::NAMES.join(", "))]
    Empty,
    #[error("unknown command '{0}': expected one of {names}", names = XlCommand::NAMES.join(", "))]
    UnknownCommand(String),
    #[error("unterminated quote in '{0}'")]
    Unquoted(String),
    #[error("{command}: {arg} is missing (usage: {usage})")]
    Missing {
        command: &'static str,
        arg: &'static str,
        usage: &'static str,
    },
    #[error("{command}: unexpected argument '{arg}' (usage: {usage})")]
    Unexpected {
        command: &'static str,
        arg: String,
        usage: &'static str,
    },
    #[error("{command}: unknown option '{option}' (usage: {usage})")]
    UnknownOption {
        command: &'static str,
        option: String,
        usage: &'static str,
    },
    #[error("{command}: {arg} is given twice")]
    Twice {
        command: &'static str,
        arg: &'static str,
    },
    #[error("{command}: {arg}: '{value}' is not {expected}")]
    NotANumber {
        command: &'static str,
        arg: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("{command}: {arg}: must be greater than 0")]
    Zero {
        command: &'static str,
        arg: &'static str,
    },
    #[error("{command}: {arg}: {value}us is above the limit of {MAX_US}us")]
    TooLarge {
        command: &'static str,
        arg: &'static str,
        value: u64,
    },
    #[error("sched-rtds: {arg}: {value}us is below RTDS's minimum of {RTDS_MIN_US}us")]
    BelowRtdsMinimum { arg: &'static str, value: u64 },
    #[error("sched-rtds: -b: the budget {budget_us}us is above the period {period_us}us")]
    BudgetAbovePeriod { budget_us: u64, period_us: u64 },
    #[error("sched-credit: -w: {0} is out of range: a weight is from 1 to {CREDIT_MAX_WEIGHT}")]
    WeightOutOfRange(u64),
    #[error("sched-credit: give -w WEIGHT, -c CAP or both")]
    NothingToSet,
    #[error("{command}: {arg}: '{value}' is not a pcpu list: {why}")]
    BadCpus {
        command: &'static str,
        arg: &'static str,
        value: String,
        why: String,
    },
    #[error("cpupool-create: sched: unknown policy '{0}'")]
    UnknownPolicy(String),
    #[error("{command}: {arg}: a name must not be empty")]
    EmptyName {
        command: &'static str,
        arg: &'static str,
    },
}

/// A pcpu list in xl's form, `0-2,5` (ranges and single pcpus joined with commas). `all`
/// is the caller's to read (it means "the whole pool", which a set cannot say). The error
/// says what is wrong with the text.
pub fn parse_cpu_list(text: &str) -> Result<CpuSet, String> {
    let text = text.trim();
    if text.is_empty() {
        return Err("it is empty".to_string());
    }
    let mut set = CpuSet::EMPTY;
    for part in text.split(',') {
        let part = part.trim();
        let number = |s: &str| -> Result<u32, String> {
            let s = s.trim();
            if s.starts_with('^') || s.starts_with("node") {
                return Err(format!(
                    "'{s}': exclusions (^N) and NUMA nodes are not supported; list the pcpus"
                ));
            }
            let n: u32 = s
                .parse()
                .map_err(|_| format!("'{s}' is not a pcpu number"))?;
            if n >= CpuSet::MAX {
                return Err(format!("pcpu {n} is not below {}", CpuSet::MAX));
            }
            Ok(n)
        };
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (number(a)?, number(b)?);
                if a > b {
                    return Err(format!("the range {a}-{b} goes backwards"));
                }
                for i in a..=b {
                    set.insert(i);
                }
            }
            None => set.insert(number(part)?),
        }
    }
    Ok(set)
}

/// Splits a line into words, honouring double quotes (`name="Pool 1"` is one word,
/// `name=Pool 1`).
fn words(line: &str) -> Result<Vec<String>, XlError> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                in_word = true;
            }
            c if c.is_whitespace() && !quoted => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if quoted {
        return Err(XlError::Unquoted(line.trim().to_string()));
    }
    if in_word {
        out.push(word);
    }
    Ok(out)
}

/// A name as xl would read it back: quoted when it holds a space, `=` or nothing.
fn name(s: &str) -> String {
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c == '=') {
        format!("\"{s}\"")
    } else {
        s.to_string()
    }
}

const CREATE_USAGE: &str = "cpupool-create NAME sched=POLICY";
const ADD_USAGE: &str = "cpupool-cpu-add POOL CPU";
const REMOVE_USAGE: &str = "cpupool-cpu-remove POOL CPU";
const MIGRATE_USAGE: &str = "cpupool-migrate DOMAIN POOL";
const PIN_USAGE: &str = "vcpu-pin DOMAIN VCPU|all CPUS|all";
const RTDS_USAGE: &str = "sched-rtds -d DOMAIN [-v VCPU|all] -p PERIOD_US -b BUDGET_US [-e 0|1]";
const CREDIT_USAGE: &str = "sched-credit -d DOMAIN [-w WEIGHT] [-c CAP]";

/// A whole number.
fn number(
    command: &'static str,
    arg: &'static str,
    value: &str,
    expected: &'static str,
) -> Result<u64, XlError> {
    value
        .trim()
        .parse::<u64>()
        .map_err(|_| XlError::NotANumber {
            command,
            arg,
            value: value.to_string(),
            expected,
        })
}

fn cpu(command: &'static str, value: &str) -> Result<u32, XlError> {
    let n = number(command, "CPU", value, "a pcpu number")?;
    u32::try_from(n)
        .ok()
        .filter(|&n| n < CpuSet::MAX)
        .ok_or_else(|| XlError::NotANumber {
            command,
            arg: "CPU",
            value: value.to_string(),
            expected: "a pcpu number below 64",
        })
}

fn vcpu_sel(command: &'static str, arg: &'static str, value: &str) -> Result<VcpuSel, XlError> {
    if value == "all" {
        return Ok(VcpuSel::All);
    }
    let n = number(command, arg, value, "a VCPU number or 'all'")?;
    u32::try_from(n)
        .map(VcpuSel::One)
        .map_err(|_| XlError::NotANumber {
            command,
            arg,
            value: value.to_string(),
            expected: "a VCPU number or 'all'",
        })
}

fn nonempty(command: &'static str, arg: &'static str, value: String) -> Result<String, XlError> {
    if value.trim().is_empty() {
        return Err(XlError::EmptyName { command, arg });
    }
    Ok(value)
}

/// Exactly `n` positional arguments.
fn positional(
    command: &'static str,
    usage: &'static str,
    args: Vec<String>,
    names: &[&'static str],
) -> Result<Vec<String>, XlError> {
    if args.len() < names.len() {
        return Err(XlError::Missing {
            command,
            arg: names[args.len()],
            usage,
        });
    }
    if let Some(extra) = args.get(names.len()) {
        return Err(XlError::Unexpected {
            command,
            arg: extra.clone(),
            usage,
        });
    }
    for (value, arg) in args.iter().zip(names) {
        if value.trim().is_empty() {
            return Err(XlError::EmptyName { command, arg });
        }
    }
    Ok(args)
}

/// Options of `sched-rtds` and `sched-credit`: each short option with its long name.
/// Returns the values by option letter, in the order of `options`.
fn options(
    command: &'static str,
    usage: &'static str,
    args: Vec<String>,
    options: &[(&'static str, &'static str)],
) -> Result<Vec<Option<String>>, XlError> {
    let mut values: Vec<Option<String>> = vec![None; options.len()];
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        let (key, inline) = match arg.split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let found = options
            .iter()
            .position(|(short, long)| key == *short || key.strip_prefix("--") == Some(long));
        let Some(i) = found else {
            return Err(if key.starts_with('-') {
                XlError::UnknownOption {
                    command,
                    option: arg,
                    usage,
                }
            } else {
                XlError::Unexpected {
                    command,
                    arg,
                    usage,
                }
            });
        };
        let value = match inline {
            Some(v) => v,
            None => args.next().ok_or(XlError::Missing {
                command,
                arg: options[i].0,
                usage,
            })?,
        };
        if values[i].is_some() {
            return Err(XlError::Twice {
                command,
                arg: options[i].0,
            });
        }
        values[i] = Some(value);
    }
    Ok(values)
}

impl XlCommand {
    /// The commands, by name.
    pub const NAMES: [&'static str; 7] = [
        "cpupool-create",
        "cpupool-cpu-add",
        "cpupool-cpu-remove",
        "cpupool-migrate",
        "vcpu-pin",
        "sched-rtds",
        "sched-credit",
    ];

    /// The command's name (`sched-rtds`, ...).
    pub fn name(&self) -> &'static str {
        match self {
            XlCommand::CpupoolCreate { .. } => "cpupool-create",
            XlCommand::CpupoolCpuAdd { .. } => "cpupool-cpu-add",
            XlCommand::CpupoolCpuRemove { .. } => "cpupool-cpu-remove",
            XlCommand::CpupoolMigrate { .. } => "cpupool-migrate",
            XlCommand::VcpuPin { .. } => "vcpu-pin",
            XlCommand::SchedRtds { .. } => "sched-rtds",
            XlCommand::SchedCredit { .. } => "sched-credit",
        }
    }

    /// The domain the command concerns, if it concerns one.
    pub fn domain(&self) -> Option<&str> {
        match self {
            XlCommand::CpupoolMigrate { domain, .. }
            | XlCommand::VcpuPin { domain, .. }
            | XlCommand::SchedRtds { domain, .. }
            | XlCommand::SchedCredit { domain, .. } => Some(domain),
            _ => None,
        }
    }

    /// Reads one command line (see the module docs for the forms accepted).
    pub fn parse(line: &str) -> Result<XlCommand, XlError> {
        let mut args = words(line)?;
        if args.first().map(String::as_str) == Some("xl") {
            args.remove(0);
        }
        if args.is_empty() {
            return Err(XlError::Empty);
        }
        let command = args.remove(0);
        match command.as_str() {
            "cpupool-create" => Self::parse_create(args),
            "cpupool-cpu-add" => {
                let a = positional("cpupool-cpu-add", ADD_USAGE, args, &["POOL", "CPU"])?;
                Ok(XlCommand::CpupoolCpuAdd {
                    cpu: cpu("cpupool-cpu-add", &a[1])?,
                    pool: a[0].clone(),
                })
            }
            "cpupool-cpu-remove" => {
                let a = positional("cpupool-cpu-remove", REMOVE_USAGE, args, &["POOL", "CPU"])?;
                Ok(XlCommand::CpupoolCpuRemove {
                    cpu: cpu("cpupool-cpu-remove", &a[1])?,
                    pool: a[0].clone(),
                })
            }
            "cpupool-migrate" => {
                let mut a =
                    positional("cpupool-migrate", MIGRATE_USAGE, args, &["DOMAIN", "POOL"])?;
                Ok(XlCommand::CpupoolMigrate {
                    pool: a.pop().expect("two"),
                    domain: a.pop().expect("two"),
                })
            }
            "vcpu-pin" => {
                let a = positional("vcpu-pin", PIN_USAGE, args, &["DOMAIN", "VCPU", "CPUS"])?;
                let cpus = if a[2] == "all" {
                    None
                } else {
                    Some(parse_cpu_list(&a[2]).map_err(|why| XlError::BadCpus {
                        command: "vcpu-pin",
                        arg: "CPUS",
                        value: a[2].clone(),
                        why,
                    })?)
                };
                Ok(XlCommand::VcpuPin {
                    vcpu: vcpu_sel("vcpu-pin", "VCPU", &a[1])?,
                    domain: a[0].clone(),
                    cpus,
                })
            }
            "sched-rtds" => Self::parse_rtds(args),
            "sched-credit" => Self::parse_credit(args),
            _ => Err(XlError::UnknownCommand(command)),
        }
    }

    fn parse_create(args: Vec<String>) -> Result<XlCommand, XlError> {
        const C: &str = "cpupool-create";
        let mut pool_name = None;
        let mut sched = None;
        for arg in args {
            let slot = match arg.split_once('=') {
                Some(("name", v)) => (&mut pool_name, "name", v.to_string()),
                Some(("sched", v)) => (&mut sched, "sched", v.to_string()),
                Some(_) => {
                    return Err(XlError::UnknownOption {
                        command: C,
                        option: arg,
                        usage: CREATE_USAGE,
                    })
                }
                None if pool_name.is_none() => (&mut pool_name, "name", arg),
                None => {
                    return Err(XlError::Unexpected {
                        command: C,
                        arg,
                        usage: CREATE_USAGE,
                    })
                }
            };
            let (target, arg_name, value) = slot;
            if target.is_some() {
                return Err(XlError::Twice {
                    command: C,
                    arg: arg_name,
                });
            }
            *target = Some(value);
        }
        let missing = |arg| XlError::Missing {
            command: C,
            arg,
            usage: CREATE_USAGE,
        };
        let name = nonempty(C, "NAME", pool_name.ok_or(missing("NAME"))?)?;
        let sched = sched.ok_or(missing("sched=POLICY"))?;
        let sched = PolicyKind::from_name(&sched).ok_or(XlError::UnknownPolicy(sched))?;
        Ok(XlCommand::CpupoolCreate { name, sched })
    }

    fn parse_rtds(args: Vec<String>) -> Result<XlCommand, XlError> {
        const C: &str = "sched-rtds";
        let v = options(
            C,
            RTDS_USAGE,
            args,
            &[
                ("-d", "domain"),
                ("-v", "vcpuid"),
                ("-p", "period"),
                ("-b", "budget"),
                ("-e", "extratime"),
            ],
        )?;
        let missing = |arg| XlError::Missing {
            command: C,
            arg,
            usage: RTDS_USAGE,
        };
        let domain = nonempty(C, "-d", v[0].clone().ok_or(missing("-d DOMAIN"))?)?;
        let vcpu = match &v[1] {
            None => VcpuSel::All,
            Some(s) => vcpu_sel(C, "-v", s)?,
        };
        let time = |i: usize, arg: &'static str| -> Result<u64, XlError> {
            let text = v[i].as_deref().ok_or(missing(arg))?;
            let arg = &arg[..2];
            let us = number(C, arg, text, "a whole number of microseconds")?;
            if us == 0 {
                return Err(XlError::Zero { command: C, arg });
            }
            if us > MAX_US {
                return Err(XlError::TooLarge {
                    command: C,
                    arg,
                    value: us,
                });
            }
            if us < RTDS_MIN_US {
                return Err(XlError::BelowRtdsMinimum { arg, value: us });
            }
            Ok(us)
        };
        let period_us = time(2, "-p PERIOD_US")?;
        let budget_us = time(3, "-b BUDGET_US")?;
        if budget_us > period_us {
            return Err(XlError::BudgetAbovePeriod {
                budget_us,
                period_us,
            });
        }
        let extratime = match v[4].as_deref() {
            None => None,
            Some("1") => Some(true),
            Some("0") => Some(false),
            Some(other) => {
                return Err(XlError::NotANumber {
                    command: C,
                    arg: "-e",
                    value: other.to_string(),
                    expected: "0 or 1",
                })
            }
        };
        Ok(XlCommand::SchedRtds {
            domain,
            vcpu,
            period_us,
            budget_us,
            extratime,
        })
    }

    fn parse_credit(args: Vec<String>) -> Result<XlCommand, XlError> {
        const C: &str = "sched-credit";
        let v = options(
            C,
            CREDIT_USAGE,
            args,
            &[("-d", "domain"), ("-w", "weight"), ("-c", "cap")],
        )?;
        let domain = nonempty(
            C,
            "-d",
            v[0].clone().ok_or(XlError::Missing {
                command: C,
                arg: "-d DOMAIN",
                usage: CREDIT_USAGE,
            })?,
        )?;
        let weight = match v[1].as_deref() {
            None => None,
            Some(s) => {
                let w = number(C, "-w", s, "a whole number")?;
                if w == 0 || w > CREDIT_MAX_WEIGHT as u64 {
                    return Err(XlError::WeightOutOfRange(w));
                }
                Some(w as u32)
            }
        };
        let cap = match v[2].as_deref() {
            None => None,
            Some(s) => {
                let c = number(C, "-c", s, "a whole number of percent")?;
                Some(u32::try_from(c).map_err(|_| XlError::NotANumber {
                    command: C,
                    arg: "-c",
                    value: s.to_string(),
                    expected: "a percentage below 4294967296",
                })?)
            }
        };
        if weight.is_none() && cap.is_none() {
            return Err(XlError::NothingToSet);
        }
        Ok(XlCommand::SchedCredit {
            domain,
            weight,
            cap,
        })
    }
}

/// The command as an `xl` line (without the leading `xl`), which [`XlCommand::parse`]
/// reads back to the same command.
impl fmt::Display for XlCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            XlCommand::CpupoolCreate { name: pool, sched } => {
                write!(f, "cpupool-create {} sched={}", name(pool), sched.name())
            }
            XlCommand::CpupoolCpuAdd { pool, cpu } => {
                write!(f, "cpupool-cpu-add {} {cpu}", name(pool))
            }
            XlCommand::CpupoolCpuRemove { pool, cpu } => {
                write!(f, "cpupool-cpu-remove {} {cpu}", name(pool))
            }
            XlCommand::CpupoolMigrate { domain, pool } => {
                write!(f, "cpupool-migrate {} {}", name(domain), name(pool))
            }
            XlCommand::VcpuPin { domain, vcpu, cpus } => {
                write!(f, "vcpu-pin {} {vcpu} ", name(domain))?;
                match cpus {
                    None => f.write_str("all"),
                    Some(set) => write!(f, "{set}"),
                }
            }
            XlCommand::SchedRtds {
                domain,
                vcpu,
                period_us,
                budget_us,
                extratime,
            } => {
                write!(f, "sched-rtds -d {}", name(domain))?;
                if let VcpuSel::One(i) = vcpu {
                    write!(f, " -v {i}")?;
                }
                write!(f, " -p {period_us} -b {budget_us}")?;
                if let Some(e) = extratime {
                    write!(f, " -e {}", u8::from(*e))?;
                }
                Ok(())
            }
            XlCommand::SchedCredit {
                domain,
                weight,
                cap,
            } => {
                write!(f, "sched-credit -d {}", name(domain))?;
                if let Some(w) = weight {
                    write!(f, " -w {w}")?;
                }
                if let Some(c) = cap {
                    write!(f, " -c {c}")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> XlCommand {
        XlCommand::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    fn error(line: &str) -> String {
        XlCommand::parse(line)
            .map(|c| panic!("{line}: accepted as {c:?}"))
            .unwrap_err()
            .to_string()
    }

    /// Every command prints as `canonical`, which parses back to the same command.
    fn round_trip(line: &str, canonical: &str) -> XlCommand {
        let cmd = parse(line);
        assert_eq!(cmd.to_string(), canonical, "{line}");
        assert_eq!(parse(canonical), cmd, "{canonical}");
        cmd
    }

    #[test]
    fn cpupool_create_reads_both_forms() {
        let want = XlCommand::CpupoolCreate {
            name: "rt".into(),
            sched: PolicyKind::Rtds,
        };
        assert_eq!(
            round_trip(
                "cpupool-create rt sched=rtds",
                "cpupool-create rt sched=rtds"
            ),
            want
        );
        assert_eq!(parse("xl cpupool-create name=\"rt\" sched=\"rtds\""), want);
        assert_eq!(parse("cpupool-create sched=RTDS name=rt"), want);
        let spaced = round_trip(
            "cpupool-create name=\"Pool 1\" sched=ds",
            "cpupool-create \"Pool 1\" sched=deferrable",
        );
        assert_eq!(
            spaced,
            XlCommand::CpupoolCreate {
                name: "Pool 1".into(),
                sched: PolicyKind::Deferrable
            }
        );
    }

    #[test]
    fn cpupool_create_errors_name_the_argument() {
        assert_eq!(
            error("cpupool-create rt"),
            "cpupool-create: sched=POLICY is missing (usage: cpupool-create NAME sched=POLICY)"
        );
        assert_eq!(
            error("cpupool-create sched=rtds"),
            "cpupool-create: NAME is missing (usage: cpupool-create NAME sched=POLICY)"
        );
        assert_eq!(
            error("cpupool-create rt sched=fifo"),
            "cpupool-create: sched: unknown policy 'fifo'"
        );
        assert_eq!(
            error("cpupool-create rt sched=rtds cpus=1"),
            "cpupool-create: unknown option 'cpus=1' (usage: cpupool-create NAME sched=POLICY)"
        );
        assert_eq!(
            error("cpupool-create rt other sched=rtds"),
            "cpupool-create: unexpected argument 'other' (usage: cpupool-create NAME sched=POLICY)"
        );
        assert_eq!(
            error("cpupool-create a name=b sched=rtds"),
            "cpupool-create: name is given twice"
        );
        assert_eq!(
            error("cpupool-create name=\"\" sched=rtds"),
            "cpupool-create: NAME: a name must not be empty"
        );
        assert_eq!(
            error("cpupool-create name=\"rt sched=rtds"),
            "unterminated quote in 'cpupool-create name=\"rt sched=rtds'"
        );
    }

    #[test]
    fn cpupool_cpu_add_remove_and_migrate() {
        assert_eq!(
            round_trip("cpupool-cpu-add rt 3", "cpupool-cpu-add rt 3"),
            XlCommand::CpupoolCpuAdd {
                pool: "rt".into(),
                cpu: 3
            }
        );
        assert_eq!(
            round_trip(
                "xl cpupool-cpu-remove Pool-0 1",
                "cpupool-cpu-remove Pool-0 1"
            ),
            XlCommand::CpupoolCpuRemove {
                pool: "Pool-0".into(),
                cpu: 1
            }
        );
        assert_eq!(
            round_trip("cpupool-migrate web rt", "cpupool-migrate web rt"),
            XlCommand::CpupoolMigrate {
                domain: "web".into(),
                pool: "rt".into()
            }
        );
        assert_eq!(
            error("cpupool-cpu-add rt"),
            "cpupool-cpu-add: CPU is missing (usage: cpupool-cpu-add POOL CPU)"
        );
        assert_eq!(
            error("cpupool-cpu-add rt x"),
            "cpupool-cpu-add: CPU: 'x' is not a pcpu number"
        );
        assert_eq!(
            error("cpupool-cpu-remove rt 64"),
            "cpupool-cpu-remove: CPU: '64' is not a pcpu number below 64"
        );
        assert_eq!(
            error("cpupool-migrate web"),
            "cpupool-migrate: POOL is missing (usage: cpupool-migrate DOMAIN POOL)"
        );
        assert_eq!(
            error("cpupool-migrate web rt now"),
            "cpupool-migrate: unexpected argument 'now' (usage: cpupool-migrate DOMAIN POOL)"
        );
    }

    #[test]
    fn vcpu_pin_reads_cpu_lists() {
        assert_eq!(
            round_trip("vcpu-pin web 1 0-2,5", "vcpu-pin web 1 0-2,5"),
            XlCommand::VcpuPin {
                domain: "web".into(),
                vcpu: VcpuSel::One(1),
                cpus: Some(CpuSet::from_indices([0, 1, 2, 5]).unwrap()),
            }
        );
        assert_eq!(
            round_trip("vcpu-pin web all all", "vcpu-pin web all all"),
            XlCommand::VcpuPin {
                domain: "web".into(),
                vcpu: VcpuSel::All,
                cpus: None,
            }
        );
        // Written out of order or overlapping: the set, normalised.
        round_trip("vcpu-pin web 0 3,1,2,2", "vcpu-pin web 0 1-3");
        assert_eq!(
            error("vcpu-pin web 0 2-1"),
            "vcpu-pin: CPUS: '2-1' is not a pcpu list: the range 2-1 goes backwards"
        );
        assert_eq!(
            error("vcpu-pin web 0 ^1"),
            "vcpu-pin: CPUS: '^1' is not a pcpu list: '^1': exclusions (^N) and NUMA nodes \
             are not supported; list the pcpus"
        );
        assert_eq!(
            error("vcpu-pin web 0 0,70"),
            "vcpu-pin: CPUS: '0,70' is not a pcpu list: pcpu 70 is not below 64"
        );
        assert_eq!(
            error("vcpu-pin web x 1"),
            "vcpu-pin: VCPU: 'x' is not a VCPU number or 'all'"
        );
        assert_eq!(
            error("vcpu-pin web 0"),
            "vcpu-pin: CPUS is missing (usage: vcpu-pin DOMAIN VCPU|all CPUS|all)"
        );
        assert_eq!(
            error("vcpu-pin web 0 1 2"),
            "vcpu-pin: unexpected argument '2' (usage: vcpu-pin DOMAIN VCPU|all CPUS|all)"
        );
    }

    #[test]
    fn sched_rtds_reads_xl_options() {
        assert_eq!(
            round_trip(
                "sched-rtds -d web -v 1 -p 10000 -b 4000 -e 1",
                "sched-rtds -d web -v 1 -p 10000 -b 4000 -e 1"
            ),
            XlCommand::SchedRtds {
                domain: "web".into(),
                vcpu: VcpuSel::One(1),
                period_us: 10_000,
                budget_us: 4_000,
                extratime: Some(true),
            }
        );
        // Long options, in any order; `-v all` is the same as no `-v`.
        let cmd = round_trip(
            "sched-rtds --budget=10 --period 10 --domain=web --vcpuid=all --extratime=0",
            "sched-rtds -d web -p 10 -b 10 -e 0",
        );
        assert_eq!(
            cmd,
            XlCommand::SchedRtds {
                domain: "web".into(),
                vcpu: VcpuSel::All,
                period_us: 10,
                budget_us: 10,
                extratime: Some(false),
            }
        );
    }

    #[test]
    fn sched_rtds_errors_name_the_argument() {
        let usage =
            "(usage: sched-rtds -d DOMAIN [-v VCPU|all] -p PERIOD_US -b BUDGET_US [-e 0|1])";
        assert_eq!(
            error("sched-rtds -p 100 -b 50"),
            format!("sched-rtds: -d DOMAIN is missing {usage}")
        );
        assert_eq!(
            error("sched-rtds -d web -b 50"),
            format!("sched-rtds: -p PERIOD_US is missing {usage}")
        );
        assert_eq!(
            error("sched-rtds -d web -p 100"),
            format!("sched-rtds: -b BUDGET_US is missing {usage}")
        );
        assert_eq!(
            error("sched-rtds -d web -p 10ms -b 50"),
            "sched-rtds: -p: '10ms' is not a whole number of microseconds"
        );
        assert_eq!(
            error("sched-rtds -d web -p 100 -b 500"),
            "sched-rtds: -b: the budget 500us is above the period 100us"
        );
        assert_eq!(
            error("sched-rtds -d web -p 100 -b 9"),
            "sched-rtds: -b: 9us is below RTDS's minimum of 10us"
        );
        assert_eq!(
            error("sched-rtds -d web -p 0 -b 9"),
            "sched-rtds: -p: must be greater than 0"
        );
        assert_eq!(
            error("sched-rtds -d web -p 100000000000001 -b 90"),
            "sched-rtds: -p: 100000000000001us is above the limit of 100000000000000us"
        );
        assert_eq!(
            error("sched-rtds -d web -p 100 -b 50 -e 2"),
            "sched-rtds: -e: '2' is not 0 or 1"
        );
        assert_eq!(
            error("sched-rtds -d web -p 100 -b 50 -x 2"),
            format!("sched-rtds: unknown option '-x' {usage}")
        );
        assert_eq!(
            error("sched-rtds -d web -d db -p 100 -b 50"),
            "sched-rtds: -d is given twice"
        );
        assert_eq!(
            error("sched-rtds -d web -p 100 -b"),
            format!("sched-rtds: -b is missing {usage}")
        );
        assert_eq!(
            error("sched-rtds -d web -v -1 -p 100 -b 50"),
            "sched-rtds: -v: '-1' is not a VCPU number or 'all'"
        );
    }

    #[test]
    fn sched_credit_weight_and_cap() {
        assert_eq!(
            round_trip(
                "sched-credit -d web -w 512 -c 50",
                "sched-credit -d web -w 512 -c 50"
            ),
            XlCommand::SchedCredit {
                domain: "web".into(),
                weight: Some(512),
                cap: Some(50),
            }
        );
        round_trip("sched-credit -c 0 -d web", "sched-credit -d web -c 0");
        assert_eq!(
            error("sched-credit -d web"),
            "sched-credit: give -w WEIGHT, -c CAP or both"
        );
        assert_eq!(
            error("sched-credit -w 10"),
            "sched-credit: -d DOMAIN is missing (usage: sched-credit -d DOMAIN [-w WEIGHT] [-c CAP])"
        );
        assert_eq!(
            error("sched-credit -d web -w 0"),
            "sched-credit: -w: 0 is out of range: a weight is from 1 to 65535"
        );
        assert_eq!(
            error("sched-credit -d web -w 65536"),
            "sched-credit: -w: 65536 is out of range: a weight is from 1 to 65535"
        );
        assert_eq!(
            error("sched-credit -d web -c half"),
            "sched-credit: -c: 'half' is not a whole number of percent"
        );
    }

    #[test]
    fn unknown_and_empty_commands() {
        assert_eq!(
            error("sched-sedf -d web"),
            "unknown command 'sched-sedf': expected one of cpupool-create, cpupool-cpu-add, \
             cpupool-cpu-remove, cpupool-migrate, vcpu-pin, sched-rtds, sched-credit"
        );
        assert!(error("  ").starts_with("empty command: expected one of cpupool-create"));
        assert!(error("xl").starts_with("empty command"));
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(
            parse_cpu_list(" 0-1, 3 "),
            Ok(CpuSet::from_indices([0, 1, 3]).unwrap())
        );
        assert_eq!(parse_cpu_list(""), Err("it is empty".to_string()));
        assert_eq!(
            parse_cpu_list("a"),
            Err("'a' is not a pcpu number".to_string())
        );
    }
}
