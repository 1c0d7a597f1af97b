//! `rtvmm ctl`: the live-control client of a running `rtvmm host run` (see
//! `rtvmm_host::ctl` for the protocol and the security model).

use std::path::PathBuf;

use anyhow::anyhow;
use clap::{Args, Subcommand};
use rtvmm_core::Nanos;
use rtvmm_host::ctl::{self, client, ErrorCode, Reply};
use serde_json::{Map, Value};

use crate::{bad_input, parse_time, print, runtime, Failure, EXIT_CODES};

/// Options of `rtvmm ctl`.
#[derive(Args)]
pub struct CtlArgs {
    /// The executor's control socket (default: the one socket in $XDG_RUNTIME_DIR/rtvmm
    /// or /run/rtvmm; `rtvmm host run --ctl PATH` chooses it)
    #[arg(long, global = true, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// Print the executor's reply as it is (one JSON object) instead of text
    #[arg(long, global = true)]
    json: bool,
    /// Give up after this long without a whole reply (with a unit)
    #[arg(long, global = true, value_parser = parse_time, default_value = "10s")]
    timeout: Nanos,
    #[command(subcommand)]
    command: CtlCommand,
}

#[derive(Subcommand)]
enum CtlCommand {
    /// Every domain's parameters and live figures (remaining budget, run time, jobs)
    #[command(after_help = EXIT_CODES)]
    SchedShow {
        /// Only this domain
        #[arg(short = 'd', long)]
        domain: Option<String>,
    },
    /// New VCPU parameters for a domain (`xl sched-set`); times with a unit (3ms, 500us).
    /// They take effect at the domain's next replenishment (a remaining budget above the
    /// new budget is cut at once).
    #[command(after_help = EXIT_CODES)]
    SchedSet {
        #[arg(short = 'd', long)]
        domain: String,
        /// Budget, with a unit
        #[arg(short = 'b', long)]
        budget: Option<String>,
        /// Period, with a unit
        #[arg(short = 'p', long)]
        period: Option<String>,
        /// Priority (smaller is higher)
        #[arg(long)]
        priority: Option<i64>,
        /// Credit weight
        #[arg(long)]
        weight: Option<i64>,
        /// Credit cap, percent of a pcpu (0: none)
        #[arg(long)]
        cap: Option<i64>,
        /// SEDF and RTDS extra time (true or false)
        #[arg(long, value_parser = clap::builder::BoolishValueParser::new())]
        extratime: Option<bool>,
        /// Sporadic Server's limit on pending replenishments
        #[arg(long)]
        max_replenishments: Option<i64>,
    },
    /// `xl sched-rtds`: without -p/-b it shows (one domain with -d); with them it sets.
    /// As xl takes them, -p and -b are microseconds when plain numbers (10000 = 10ms); a
    /// value with a unit is taken as written.
    #[command(after_help = EXIT_CODES)]
    SchedRtds {
        #[arg(short = 'd', long)]
        domain: Option<String>,
        /// Period: microseconds, or a time with a unit
        #[arg(short = 'p', long)]
        period: Option<String>,
        /// Budget: microseconds, or a time with a unit
        #[arg(short = 'b', long)]
        budget: Option<String>,
        /// Extra time: 1 or 0
        #[arg(short = 'e', long, value_parser = clap::builder::BoolishValueParser::new())]
        extratime: Option<bool>,
    },
    /// Swap the policy while running (hot swap); every domain keeps its parameters and
    /// starts its first period under the new policy
    #[command(after_help = EXIT_CODES)]
    Policy {
        /// The policy (name or alias; see `rtvmm policies`)
        name: String,
        /// A file with `[scheduler]` settings (credit = { .. }, rtds = { .. },
        /// major_frame and minor_frames), or a scenario with that section; settings not
        /// given keep the run's
        #[arg(long, value_name = "FILE")]
        scheduler: Option<PathBuf>,
        /// Credit's tick, with a unit
        #[arg(long)]
        credit_tick: Option<String>,
        /// Credit's time slice, in ticks
        #[arg(long)]
        ticks_per_slice: Option<i64>,
        /// Credit's accounting period, in ticks
        #[arg(long)]
        ticks_per_accounting: Option<i64>,
        /// RTDS: event (Xen 4.7+) or quantum (Xen 4.5)
        #[arg(long)]
        rtds_mode: Option<String>,
    },
    /// Add or remove a domain
    #[command(subcommand, after_help = EXIT_CODES)]
    Domain(DomainCommand),
}

#[derive(Subcommand)]
enum DomainCommand {
    /// Add a domain described as a scenario's `[[domain]]` table (TOML, or JSON for
    /// *.json): name, guest, vcpu (its priority required) and tasks
    #[command(after_help = EXIT_CODES)]
    Add { file: PathBuf },
    /// Remove a domain
    #[command(after_help = EXIT_CODES)]
    Remove { name: String },
}

/// Inserts `value` under `key` when given.
fn put(fields: &mut Map<String, Value>, key: &str, value: Option<impl Into<Value>>) {
    if let Some(value) = value {
        fields.insert(key.to_string(), value.into());
    }
}

/// xl's plain numbers are microseconds; a value with a unit stays as written.
fn xl_time(value: Option<String>) -> Option<String> {
    value.map(|v| {
        if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) {
            format!("{v}us")
        } else {
            v
        }
    })
}

/// The request a command line asks for.
fn request(command: CtlCommand) -> Result<Value, Failure> {
    let mut fields = Map::new();
    let cmd = match command {
        CtlCommand::SchedShow { domain } => {
            put(&mut fields, "domain", domain);
            "sched-show"
        }
        CtlCommand::SchedSet {
            domain,
            budget,
            period,
            priority,
            weight,
            cap,
            extratime,
            max_replenishments,
        } => {
            if [budget.is_some(), period.is_some(), extratime.is_some()]
                .into_iter()
                .chain([priority, weight, cap, max_replenishments].map(|f| f.is_some()))
                .all(|given| !given)
            {
                return Err(bad_input(anyhow!(
                    "sched-set: nothing to set: give any of --budget, --period, --priority, \
                     --weight, --cap, --extratime, --max-replenishments"
                )));
            }
            put(&mut fields, "domain", Some(domain));
            put(&mut fields, "budget", budget);
            put(&mut fields, "period", period);
            put(&mut fields, "priority", priority);
            put(&mut fields, "weight", weight);
            put(&mut fields, "cap", cap);
            put(&mut fields, "extratime", extratime);
            put(&mut fields, "max_replenishments", max_replenishments);
            "sched-set"
        }
        CtlCommand::SchedRtds {
            domain,
            period,
            budget,
            extratime,
        } => {
            if period.is_none() && budget.is_none() && extratime.is_none() {
                put(&mut fields, "domain", domain);
                "sched-show"
            } else {
                let Some(domain) = domain else {
                    return Err(bad_input(anyhow!(
                        "sched-rtds: -p, -b and -e set a domain's parameters: name it with -d"
                    )));
                };
                put(&mut fields, "domain", Some(domain));
                put(&mut fields, "period", xl_time(period));
                put(&mut fields, "budget", xl_time(budget));
                put(&mut fields, "extratime", extratime);
                "sched-set"
            }
        }
        CtlCommand::Policy {
            name,
            scheduler,
            credit_tick,
            ticks_per_slice,
            ticks_per_accounting,
            rtds_mode,
        } => {
            if let Some(file) = &scheduler {
                fields = ctl::read_scheduler_file(file).map_err(bad_input)?;
            }
            let mut credit = match fields.remove("credit") {
                Some(Value::Object(credit)) => credit,
                Some(other) => {
                    fields.insert("credit".into(), other);
                    Map::new()
                }
                None => Map::new(),
            };
            put(&mut credit, "tick", credit_tick);
            put(&mut credit, "ticks_per_slice", ticks_per_slice);
            put(&mut credit, "ticks_per_accounting", ticks_per_accounting);
            if !credit.is_empty() {
                fields.insert("credit".into(), Value::Object(credit));
            }
            if let Some(mode) = rtds_mode {
                let mut rtds = Map::new();
                rtds.insert("mode".into(), mode.into());
                fields.insert("rtds".into(), Value::Object(rtds));
            }
            put(&mut fields, "policy", Some(name));
            "swap-policy"
        }
        CtlCommand::Domain(DomainCommand::Add { file }) => {
            let domain = ctl::read_domain_file(&file).map_err(bad_input)?;
            fields.insert("domain".into(), domain);
            "add-domain"
        }
        CtlCommand::Domain(DomainCommand::Remove { name }) => {
            put(&mut fields, "domain", Some(name));
            "remove-domain"
        }
    };
    Ok(ctl::request(cmd, fields))
}

/// Runs `rtvmm ctl`: exit 0 when the executor did it, 1 when it refused or could not be
/// reached, 2 for a bad command line or a request it would read as malformed.
pub fn run(args: CtlArgs) -> Result<(), Failure> {
    let request = request(args.command)?;
    let socket = match args.socket {
        Some(path) => path,
        None => client::find_socket().map_err(|e| {
            if e.is_usage() {
                bad_input(e)
            } else {
                runtime(e)
            }
        })?,
    };
    let timeout = std::time::Duration::from_nanos(args.timeout.as_ns());
    let reply = ctl::call(&socket, &request, timeout).map_err(|e| {
        if e.is_usage() {
            bad_input(e)
        } else {
            runtime(e)
        }
    })?;
    if args.json {
        print(&reply.to_line())?;
    }
    match reply {
        Reply::Error { code, message } => {
            let error = anyhow!(message);
            Err(match code {
                ErrorCode::BadRequest | ErrorCode::TooLong => bad_input(error),
                _ => runtime(error),
            })
        }
        reply if !args.json => print(&ctl::render::text(&reply)),
        _ => Ok(()),
    }
}
