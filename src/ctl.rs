//! `rtvmm ctl`: the live-control client of a running `rtvmm host run` (see
//! `rtvmm_host::ctl` for the protocol and the security model).

use std::path::PathBuf;

use anyhow::anyhow;
use clap::{Args, Subcommand};
use rtvmm_core::xl::XlCommand;
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
    /// One `xl` command, as Xen's `xl` takes it: sched-rtds -d D [-v V|all] -p PERIOD_US
    /// -b BUDGET_US [-e 0|1], sched-credit -d D [-w W] [-c CAP], vcpu-pin D V|all CPUS|all,
    /// cpupool-create NAME sched=POLICY, cpupool-cpu-add|cpupool-cpu-remove POOL CPU,
    /// cpupool-migrate D POOL. Applied by the simulator's rule; a command naming a pcpu
    /// other than the executor's one is refused, changing nothing. Give --socket, --json
    /// and --timeout before `xl`.
    #[command(after_help = EXIT_CODES)]
    Xl {
        /// The command and its arguments
        #[arg(
            required = true,
            num_args = 1..,
            trailing_var_arg = true,
            allow_hyphen_values = true,
            value_name = "COMMAND"
        )]
        words: Vec<String>,
    },
}

/// An `xl` command line from its words, each quoted where `xl`'s reader would split it.
fn xl_line(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if w.is_empty() || w.chars().any(char::is_whitespace) {
                format!("\"{w}\"")
            } else {
                w.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
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
        CtlCommand::Xl { words } => {
            // Read here by xl's own reader, so that a line the executor would refuse as
            // malformed never leaves; sent in its normal form.
            let line = xl_line(&words);
            let command = XlCommand::parse(&line).map_err(|e| bad_input(anyhow!("xl: {e}")))?;
            put(&mut fields, "xl", Some(command.to_string()));
            "xl"
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

#[cfg(test)]
mod tests {
    use super::*;

    fn words(ws: &[&str]) -> Vec<String> {
        ws.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn an_xl_command_line_becomes_one_request_in_its_normal_form() {
        let request = request(CtlCommand::Xl {
            words: words(&[
                "sched-rtds",
                "-d",
                "web",
                "-v",
                "all",
                "-p",
                "10000",
                "-b",
                "4000",
            ]),
        })
        .unwrap_or_else(|_| panic!("refused"));
        assert_eq!(
            request,
            serde_json::json!({"v": 1, "cmd": "xl", "xl": "sched-rtds -d web -p 10000 -b 4000"})
        );
        // A word with a space is quoted, so that it stays one name.
        assert_eq!(
            xl_line(&words(&["cpupool-migrate", "my web", "Pool-0"])),
            r#"cpupool-migrate "my web" Pool-0"#
        );
        let request = request_of(&["cpupool-migrate", "my web", "Pool-0"]);
        assert_eq!(request["xl"], r#"cpupool-migrate "my web" Pool-0"#);
    }

    fn request_of(ws: &[&str]) -> Value {
        request(CtlCommand::Xl { words: words(ws) }).unwrap_or_else(|_| panic!("refused"))
    }

    #[test]
    fn a_malformed_xl_command_is_refused_before_it_is_sent() {
        for ws in [
            &["sched-rtds", "-d", "web", "-p", "1000", "-b", "4000"][..],
            &["sched-rtds", "-d", "web"][..],
            &["destroy", "web"][..],
        ] {
            assert!(
                request(CtlCommand::Xl { words: words(ws) }).is_err(),
                "{ws:?}"
            );
        }
    }
}
