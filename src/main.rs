//! `rtvmm`: the command line. It parses flags, calls the libraries and maps errors to exit
//! codes — no scheduling logic lives here.
//!
//! Exit codes, one rule for every command ([`EXIT_CODES`]): 0 success; 1 a run failed or
//! writing an output failed; 2 bad usage or bad input, unusable output paths included
//! (found before anything runs); 128 + the signal's number (130 SIGINT, 143 SIGTERM) for
//! an experiment stopped by a signal, with what finished written and marked partial.
//!
//! Every output file is checked before anything runs and written atomically
//! ([`rtvmm_experiments::files`]).

use std::io::{self, Write};
use std::ops::ControlFlow;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, Context};
use clap::{Parser, Subcommand};
use rtvmm_analysis::{GuestScheduler as AnalysisGuest, SbfMode};
use rtvmm_analyze as analyze;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_experiments::files::{self, AtomicFile, WriteError};
use rtvmm_experiments::ExperimentError;
use rtvmm_scenario::demo::{self, DemoError};
use rtvmm_scenario::Scenario;
use rtvmm_system::trace::TraceFormat;

// Floors, bottom first; a blank line between them keeps `rustfmt` from sorting them.
mod signals;

mod progress;

#[cfg(target_os = "linux")]
mod ctl;
mod gen;

#[cfg(target_os = "linux")]
mod host;

mod experiment;

mod sweep;

use experiment::ExperimentArgs;
use gen::GenArgs;
use sweep::SweepArgs;

const EXIT_CODES: &str = "\
Exit codes (every command):
  0    success
  1    a run failed, or writing an output failed (a full disk): no output file is left
       half-written, a previous one stays as it was
  2    usage error or bad input: an unknown flag or name, an input that cannot be read or
       is invalid, an output path that cannot be used (its directory missing or not
       writable, the same file as an input, or given twice); found before anything runs
  130  an experiment, a sweep, a long `sim` or a `host run` stopped by SIGINT (Ctrl-C), 143 by
       SIGTERM (128 + the signal's number): what finished is written and marked partial; a second signal
       stops at once";

#[derive(Parser)]
#[command(
    name = "rtvmm",
    version,
    about = "Real-time scheduling for virtual machines: the RT-Xen policies in a fast simulator and in real time on Linux",
    after_help = EXIT_CODES
)]
struct Cli {
    /// The largest input file read (scenario, CARTS XML, workload, results): bytes with
    /// an optional unit (KiB, MiB, GiB); a larger file, or a device that never ends, is
    /// refused (exit 2)
    #[arg(long, global = true, value_name = "SIZE", value_parser = rtvmm_system::input::parse_size,
          default_value = "256MiB")]
    max_input_size: u64,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the built-in scenario under every policy and print one comparison table
    ///
    /// Five domains with the RT-Xen "even" shares (budget/period 2/10, 4/20, 6/30, 8/40,
    /// 10/50 ms, priorities 1-5), each running a rate-monotonic task set drawn for a total
    /// load of 70%. ARINC 653 runs a 10 ms major frame with a 2 ms minor frame per domain
    /// (the same 20% shares); Credit runs with the papers' 1 ms setting (a 1 ms tick and
    /// time slice, accounting every 3 ms).
    #[command(after_help = EXIT_CODES)]
    Demo {
        /// Simulated time per policy (with a unit: 10s, 500ms)
        #[arg(long, value_parser = parse_time, default_value = "10s")]
        duration: Nanos,
        /// Seed of the task sets and of the run
        #[arg(long, default_value_t = demo::DEMO_SEED)]
        seed: u64,
        /// Only these policies (repeat the flag); default: all
        #[arg(long = "policy", value_parser = parse_policy)]
        policies: Vec<PolicyKind>,
        /// Print the demo scenario as a scenario file instead of running it
        #[arg(long)]
        print_scenario: bool,
    },
    /// Simulate a scenario file and print a summary
    #[command(after_help = EXIT_CODES)]
    Sim {
        #[command(flatten)]
        run: RunFlags,
    },
    /// Validate a scenario file and print it normalised (every default written out)
    #[command(after_help = EXIT_CODES)]
    Check {
        /// The scenario file (TOML)
        scenario: PathBuf,
        /// Check it under this policy instead of the file's
        #[arg(long, value_parser = parse_policy)]
        policy: Option<PolicyKind>,
        /// Also run the schedulability analysis and refuse (exit 2) a scenario in which a
        /// task cannot be guaranteed, naming the domain and the task (the VCPUs' own
        /// budgets and periods are the interfaces checked; see `rtvmm analyze --given`)
        #[arg(long)]
        admit: bool,
    },
    /// Compositional analysis: each domain's periodic resource interface, the system
    /// verdict, and task response times
    ///
    /// Reads a scenario (VCPU parameters optional) or a CARTS XML file (*.xml). Times are
    /// counted in units of the quantum; task times that are not whole units are rounded the
    /// safe way (wcet up, period and deadline down) and the notes say so.
    #[command(after_help = EXIT_CODES)]
    Analyze(AnalyzeArgs),
    /// Re-run a published evaluation (`list` describes them; `all` runs every one)
    ///
    /// Writes raw CSV, SVG and PNG figures, Markdown tables and report.md to --out. Runs of
    /// a sweep run in parallel on all cores; SIGINT (Ctrl-C) or SIGTERM stops starting new
    /// runs and writes what is finished, every file marked partial.
    #[command(after_help = EXIT_CODES)]
    Experiment(ExperimentArgs),
    /// Generate a task set as a scenario file (rtxen, csa, arinc, uunifast), or K of them
    /// into a directory (--count), or one shard of those (--shard)
    #[command(after_help = EXIT_CODES)]
    Gen(GenArgs),
    /// Simulate (or analyze) every scenario file of a directory into one results table
    ///
    /// One CSV row per file and domain, in file name order: `file` and `status` (`ok`, or
    /// `error: <reason>` for a file that could not be read, checked or run, its other cells
    /// empty), then the results. Files run in parallel on all cores; the bytes are the same
    /// for any thread count. `--shard I/N` runs a fixed N-th of the files, and `rtvmm sweep
    /// merge OUT DIR…` turns the N shards into the unsharded table. SIGINT (Ctrl-C) or
    /// SIGTERM writes the files that finished, under a first line `# partial: …`.
    #[command(after_help = EXIT_CODES)]
    Sweep(SweepArgs),
    /// Put two results files (`sim --json`, `host run --json`) side by side
    #[command(after_help = EXIT_CODES)]
    Compare(CompareArgs),
    /// List the VMM scheduling policies, with their aliases
    #[command(after_help = EXIT_CODES)]
    Policies,
    /// Run scenarios in real time on this machine (Linux; needs root)
    #[cfg(target_os = "linux")]
    #[command(subcommand)]
    Host(host::HostCommand),
    /// Benchmarks of the real-time executor
    #[cfg(target_os = "linux")]
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Live control of a running `rtvmm host run` over its control socket: sched-show,
    /// sched-set, sched-rtds, policy (hot swap), domain add/remove
    #[cfg(target_os = "linux")]
    #[command(after_help = EXIT_CODES)]
    Ctl(ctl::CtlArgs),
}

/// `rtvmm bench ...`.
#[cfg(target_os = "linux")]
#[derive(Subcommand)]
enum BenchCommand {
    /// The executor's overhead: five domains at a 1 ms quantum under each server policy
    /// (do_schedule and switch latency median/p99, CPU lost to scheduling, steal)
    #[command(after_help = EXIT_CODES)]
    Host(host::BenchHostArgs),
    /// Timer wake-up latency, cyclictest's way: a thread pinned to a cpu (SCHED_FIFO 99;
    /// needs root or CAP_SYS_NICE, else refused unless --best-effort) sleeps on absolute
    /// clock_nanosleep deadlines; latency = wake time - deadline. Prints min/avg/max and
    /// percentiles; --write-preset writes the distribution as a `[machine] wake_delivery`
    /// preset
    #[command(after_help = EXIT_CODES)]
    Wake(host::BenchWakeArgs),
}

/// Options of `rtvmm analyze`.
/// `rtvmm compare A.json B.json`.
/// The flags `rtvmm sim` and `rtvmm host run` share: one scenario file run with the
/// same overrides and the same outputs, by either driver. The help is `sim`'s; `host run`
/// words some of it for real time (`mut_arg` in `host::HostRunArgs`).
#[derive(clap::Args)]
pub struct RunFlags {
    /// The scenario file (TOML)
    pub scenario: PathBuf,
    /// Run under this policy instead of the file's (name or alias; see `rtvmm policies`)
    #[arg(long, value_parser = parse_policy)]
    pub policy: Option<PolicyKind>,
    /// Simulated time instead of the file's (with a unit: 10s, 500ms)
    #[arg(long, value_parser = parse_time)]
    pub duration: Option<Nanos>,
    /// Seed instead of the file's
    #[arg(long)]
    pub seed: Option<u64>,
    /// Write the full results as JSON to this file
    #[arg(long, value_name = "OUT")]
    pub json: Option<PathBuf>,
    /// Write the trace to this file: *.json (Chrome/Perfetto trace events) or *.csv
    #[arg(long, value_name = "OUT")]
    pub trace: Option<PathBuf>,
    /// Write every job (release, start, finish, response, responsiveness, lateness,
    /// latency, outcome) as CSV to this file
    #[arg(long, value_name = "OUT")]
    pub jobs: Option<PathBuf>,
}

#[derive(clap::Args)]
struct CompareArgs {
    /// The first results file (`rtvmm sim --json`).
    a: PathBuf,
    /// The second results file.
    b: PathBuf,
}

#[derive(clap::Args)]
struct AnalyzeArgs {
    /// A scenario file (TOML) or a CARTS input file (*.xml)
    input: PathBuf,
    /// The analysis unit instead of the scenario's quantum (CARTS: the length of one unit,
    /// default 1ms)
    #[arg(long, value_parser = parse_time)]
    quantum: Option<Nanos>,
    /// Supply bound: auto (the harmonic form where it is sound) or general (as CARTS)
    #[arg(long, value_parser = analyze::parse_sbf, default_value = "auto")]
    sbf: SbfMode,
    /// Analyse every domain as this guest scheduler (rm or edf) instead of its own
    #[arg(long, value_parser = analyze::parse_guest)]
    guest: Option<AnalysisGuest>,
    /// Allowed interface periods, MIN..MAX: whole units (5..50) or times (5ms..50ms)
    #[arg(long, value_name = "MIN..MAX")]
    period_range: Option<analyze::PeriodBounds>,
    /// A fixed interface period for one domain, NAME=PERIOD (units or a time); repeatable
    #[arg(long = "fixed-period", value_name = "NAME=PERIOD")]
    fixed_periods: Vec<analyze::FixedPeriod>,
    /// The VMM policy instead of the file's (CARTS: periodic); decides the root test and
    /// the server of the response-time analysis
    #[arg(long, value_parser = parse_policy)]
    policy: Option<PolicyKind>,
    /// Check the scenario's own VCPU budgets and periods instead of computing interfaces
    #[arg(long)]
    given: bool,
    /// The resource model of the interfaces: prm (one processor), mpr or dmpr (a global
    /// EDF guest of several VCPUs). Default: dmpr for such a guest in a scenario, prm for
    /// a CARTS file
    #[arg(long, value_parser = analyze::parse_model)]
    model: Option<analyze::Model>,
    /// CARTS input: per component, a row for every period of its range (PRM: Θ and the
    /// bandwidth; MPR: Θ and m′; DMPR: m and Θ), as CARTS prints them; also in --json
    #[arg(long)]
    table: bool,
    /// Add each task's worst-case response-time bound and slack under the server policy
    #[arg(long)]
    rta: bool,
    /// Write the report as JSON to this file
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// Emit the interfaces: `scenario [OUT.toml]` (a runnable scenario), `xl [OUT]`
    /// (`xl sched-rtds` commands) or `carts [OUT.xml]` (the input as CARTS XML, which CARTS
    /// reads); without OUT (or with -) to standard output instead of the table
    #[arg(long, num_args = 1..=2, value_names = ["KIND", "OUT"])]
    emit: Option<Vec<String>>,
}

fn parse_time(text: &str) -> Result<Nanos, String> {
    let t: Nanos = text.parse().map_err(|e| format!("{e}"))?;
    if t.is_zero() {
        return Err("must be greater than 0".to_string());
    }
    Ok(t)
}

fn parse_policy(text: &str) -> Result<PolicyKind, String> {
    PolicyKind::parse(text).map_err(|e| e.to_string())
}

/// An error and the exit code it maps to.
enum Failure {
    /// Usage or bad input: exit code 2.
    BadInput(anyhow::Error),
    /// Run-time failure: exit code 1.
    Runtime(anyhow::Error),
    /// An experiment stopped by a signal: exit code 128 + its number.
    Interrupted { signal: i32 },
}

fn bad_input(e: impl Into<anyhow::Error>) -> Failure {
    Failure::BadInput(e.into())
}

fn runtime(e: impl Into<anyhow::Error>) -> Failure {
    Failure::Runtime(e.into())
}

fn main() -> ExitCode {
    // A re-executed helper of `rtvmm host` (a guest process or the watchdog).
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(code) = rtvmm_host::helper_main(&args) {
        return ExitCode::from(code.clamp(0, 255) as u8);
    }
    let cli = Cli::parse();
    rtvmm_system::input::set_max_input_size(cli.max_input_size);
    // A panic is a bug in rtvmm: say so in one line (`guarded` turns it into exit 1).
    panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("rtvmm: internal error{at}: {message}");
    }));
    let outcome = guarded("running the command", || run(cli));
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::BadInput(e)) => {
            eprintln!("rtvmm: error: {e:#}");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(e)) => {
            eprintln!("rtvmm: error: {e:#}");
            ExitCode::from(1)
        }
        Err(Failure::Interrupted { signal }) => ExitCode::from((128 + signal) as u8),
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    match cli.command {
        Command::Policies => policies(),
        #[cfg(target_os = "linux")]
        Command::Host(command) => host::run(command),
        #[cfg(target_os = "linux")]
        Command::Bench(BenchCommand::Host(args)) => host::bench(args),
        Command::Bench(BenchCommand::Wake(args)) => host::bench_wake(args),
        #[cfg(target_os = "linux")]
        Command::Ctl(args) => ctl::run(args),
        Command::Check {
            scenario,
            policy,
            admit,
        } => check(&scenario, policy, admit),
        Command::Analyze(args) => analyze_command(args),
        Command::Experiment(args) => experiment::run(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::Gen(args) => gen::run_gen(&args)
            .map_err(experiment_failure)
            .and_then(|t| print(&t)),
        Command::Compare(args) => rtvmm_experiments::compare::compare_files(&args.a, &args.b)
            .map_err(experiment_failure)
            .and_then(|t| print(&t)),
        Command::Sim { run } => sim(
            &run.scenario,
            run.policy,
            run.duration,
            run.seed,
            run.json,
            run.trace,
            run.jobs,
        ),
        Command::Demo {
            duration,
            seed,
            policies,
            print_scenario,
        } => demo_command(duration, seed, policies, print_scenario),
    }
}

/// Bad options, unknown names, unreadable inputs and unusable output paths are the
/// user's to fix (exit 2); the rest happened while running (exit 1).
fn experiment_failure(e: ExperimentError) -> Failure {
    if e.is_bad_input() {
        bad_input(e)
    } else {
        runtime(e)
    }
}

/// Writes to stdout; a closed pipe (`rtvmm policies | head -1`) is not an error.
fn print(text: &str) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => {
            Err(runtime(anyhow!(e).context("writing to standard output")))
        }
        _ => Ok(()),
    }
}

/// Runs `f`, turning a panic (a bug in rtvmm; the panic message is already printed) into
/// a run-time failure, so that the exit code stays one of the documented ones.
fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T, Failure>) -> Result<T, Failure> {
    panic::catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|_| {
        Err(runtime(anyhow!(
            "internal error while {what} (a bug in rtvmm; please report it with the scenario)"
        )))
    })
}

fn policies() -> Result<(), Failure> {
    let mut text = String::new();
    for kind in PolicyKind::ALL {
        let mut name = kind.name().to_string();
        if !kind.aliases().is_empty() {
            name.push_str(&format!(" ({})", kind.aliases().join(", ")));
        }
        text.push_str(&format!("{name:<18} {}\n", kind.description()));
    }
    print(&text)
}

/// Loads a scenario, with the command line's overrides applied.
fn load(
    path: &Path,
    policy: Option<PolicyKind>,
    duration: Option<Nanos>,
    seed: Option<u64>,
) -> Result<Scenario, Failure> {
    let scenario = Scenario::load(path)
        .and_then(|s| s.with_overrides(policy, duration, seed))
        .map_err(bad_input)?;
    if let Some(kind) = policy {
        if scenario.system.pools.len() > 1 {
            eprintln!(
                "note: --policy {kind} replaces the policy of the first cpupool ('{}') only; \
                 the other pools keep theirs",
                scenario.system.pools[0].name
            );
        }
    }
    Ok(scenario)
}

fn check(path: &Path, policy: Option<PolicyKind>, admit: bool) -> Result<(), Failure> {
    let scenario = guarded("checking the scenario", || load(path, policy, None, None))?;
    if !admit {
        return print(&normalised(&scenario));
    }
    let report = guarded("analysing the scenario", || {
        analyze::admit(&scenario).map_err(|refused| bad_input(anyhow!("{}", refused.0)))
    })?;
    print(&format!(
        "{}# admitted: every task is guaranteed ({}; U_RM = {:.4}, U_W = {:.4}; see `rtvmm \
         analyze --given`)\n",
        normalised(&scenario),
        report.root_test,
        report.u_rm,
        report.u_w
    ))
}

fn analyze_command(args: AnalyzeArgs) -> Result<(), Failure> {
    let emit = match args.emit.as_deref() {
        None => None,
        Some([kind, rest @ ..]) => {
            if kind != "scenario" && kind != "xl" && kind != "carts" {
                return Err(bad_input(anyhow!(
                    "--emit {kind}: expected `scenario [OUT.toml]`, `xl [OUT]` or `carts \
                     [OUT.xml]`"
                )));
            }
            let out = rest
                .first()
                .filter(|o| o.as_str() != "-")
                .map(PathBuf::from);
            Some((kind.clone(), out))
        }
        Some([]) => None,
    };
    let input = analyze::Input::load(&args.input).map_err(bad_input)?;
    let outputs: Vec<&Path> = args
        .json
        .iter()
        .map(PathBuf::as_path)
        .chain(emit.iter().filter_map(|(_, out)| out.as_deref()))
        .collect();
    files::check_outputs(&[&args.input], &outputs).map_err(bad_input)?;
    let options = analyze::Options {
        quantum: args.quantum,
        sbf: args.sbf,
        guest: args.guest,
        period_range: args.period_range,
        fixed_periods: args.fixed_periods.clone(),
        policy: args.policy,
        given: args.given,
        model: args.model,
    };
    if analyze::wants_models(&input, &options, args.table) {
        return analyze_models_command(&args, &input, &options, emit);
    }
    let report = guarded("analysing", || {
        analyze::analyze(&input, &options).map_err(bad_input)
    })?;
    warn(&report.warnings);
    // Everything is produced before any file is written.
    let emitted = match &emit {
        None => None,
        Some((kind, out)) => {
            let text = match kind.as_str() {
                "xl" => report.xl_commands(),
                "carts" => analyze::emit_carts(&input, &report, &options).map_err(bad_input)?,
                _ => analyze::emit_scenario(&input, &report).map_err(bad_input)?,
            };
            Some((kind, out, text))
        }
    };
    analysis_outputs(
        args.json.as_deref(),
        &report.to_json(),
        emitted,
        report.table(args.rta),
    )
}

/// What `analyze` writes, once everything is computed: the JSON report to `--json`, the
/// emitted text to its file (or, alone, to stdout), then the table with the files named.
/// Every file is written before any is put in place.
fn analysis_outputs(
    json: Option<&Path>,
    report_json: &str,
    emitted: Option<(&String, &Option<PathBuf>, String)>,
    mut table: String,
) -> Result<(), Failure> {
    let mut written = Vec::new();
    let mut text = String::new();
    if let Some(out) = json {
        written.push(text_file(out, report_json)?);
    }
    let mut stdout_only = None;
    if let Some((kind, out, emitted)) = emitted {
        match out {
            None => stdout_only = Some(emitted),
            Some(out) => {
                written.push(text_file(out, &emitted)?);
                text.push_str(&format!("{kind}: {}\n", out.display()));
            }
        }
    }
    files::commit_all(written).map_err(runtime)?;
    if let Some(emitted) = stdout_only {
        return print(&emitted);
    }
    if let Some(out) = json {
        table.push_str(&format!("report: {}\n", out.display()));
    }
    print(&(table + &text))
}

/// Each warning on standard error, one line each.
fn warn(warnings: &[String]) {
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
}

/// `analyze FILE.xml --model mpr|dmpr` or `--table`: the components under one of CARTS's
/// models ([`analyze::ModelReport`]).
fn analyze_models_command(
    args: &AnalyzeArgs,
    input: &analyze::Input,
    options: &analyze::Options,
    emit: Option<(String, Option<PathBuf>)>,
) -> Result<(), Failure> {
    if args.rta {
        return Err(bad_input(anyhow!(
            "--rta is the one-pcpu analysis's; it does not apply to --model {} or --table",
            options.model.unwrap_or_default().name()
        )));
    }
    let report = guarded("analysing", || {
        analyze::analyze_models(input, options, args.table).map_err(bad_input)
    })?;
    warn(&report.warnings);
    let emitted = match &emit {
        None => None,
        Some((kind, out)) if kind == "carts" => match input {
            analyze::Input::Carts { system, .. } => Some((kind, out, system.to_xml())),
            // analyze_models has refused a scenario already.
            analyze::Input::Scenario(_) => None,
        },
        Some((kind, _)) => {
            return Err(bad_input(anyhow!(
                "--emit {kind} writes one-pcpu (PRM) interfaces; with --model {} or --table \
                 only --emit carts is available",
                options.model.unwrap_or_default().name()
            )))
        }
    };
    analysis_outputs(
        args.json.as_deref(),
        &report.to_json(),
        emitted,
        report.table(),
    )
}

/// A whole text file (with a final newline), written but not yet in place (see
/// [`files::commit_all`]).
fn text_file(path: &Path, text: &str) -> Result<AtomicFile, Failure> {
    output_file(path, |file| {
        file.write_all(text.as_bytes())?;
        if !text.ends_with('\n') {
            file.write_all(b"\n")?;
        }
        Ok(())
    })
}

/// An output file filled by `fill`, not yet in place (see [`files::commit_all`]).
fn output_file(
    path: &Path,
    fill: impl FnOnce(&mut AtomicFile) -> io::Result<()>,
) -> Result<AtomicFile, Failure> {
    let mut file = AtomicFile::create(path).map_err(runtime)?;
    fill(&mut file).map_err(|error| {
        runtime(WriteError {
            path: path.to_path_buf(),
            error,
        })
    })?;
    Ok(file)
}

/// The normalised scenario under a comment that says what it holds (the comment is the
/// same for the same scenario, so `check` of `check`'s output prints the same text).
fn normalised(scenario: &Scenario) -> String {
    let tasks: usize = scenario.system.domains.iter().map(|d| d.tasks.len()).sum();
    format!(
        "# valid: {} domains, {} tasks, {} events; normalised by `rtvmm check`\n{}",
        scenario.system.domains.len(),
        tasks,
        scenario.system.changes.len(),
        scenario.to_toml()
    )
}

fn sim(
    path: &Path,
    policy: Option<PolicyKind>,
    duration: Option<Nanos>,
    seed: Option<u64>,
    json: Option<PathBuf>,
    trace: Option<PathBuf>,
    jobs: Option<PathBuf>,
) -> Result<(), Failure> {
    // Everything that can be refused is refused before the run.
    let trace_format = trace
        .as_deref()
        .map(TraceFormat::from_path)
        .transpose()
        .map_err(bad_input)?;
    let scenario = guarded("checking the scenario", || {
        load(path, policy, duration, seed)
    })?;
    scenario.simulable().map_err(bad_input)?;
    let outputs: Vec<&Path> = [&json, &trace, &jobs]
        .into_iter()
        .filter_map(|o| o.as_deref())
        .collect();
    files::check_outputs(&[path], &outputs).map_err(bad_input)?;
    let long = progress::LongRun::start(
        &scenario.system.estimate_work(scenario.duration),
        scenario.duration,
    );
    let mut run = guarded("simulating", || {
        let record = rtvmm_sim::run::Record {
            trace: trace.is_some(),
            jobs: jobs.is_some(),
        };
        let progress = |now| match &long {
            Some(long) => long.observe(now),
            None => ControlFlow::Continue(()),
        };
        // The trace streams out of memory, through a temporary file beside it.
        match &trace {
            Some(out) => {
                let dir = match out.parent() {
                    Some(dir) if !dir.as_os_str().is_empty() => dir,
                    _ => Path::new("."),
                };
                rtvmm_sim::run::run_streamed(&scenario, record, dir, progress)
            }
            None => rtvmm_sim::run::run_with(&scenario, record, progress),
        }
        .with_context(|| format!("simulating {}", path.display()))
        .map_err(runtime)
    })?;
    if let Some(long) = &long {
        long.finish();
    }
    let mut text = run.results.summary();
    // A run stopped early says so on every output: the JSON, the first line of the jobs
    // and trace CSVs, the Chrome trace's `otherData`.
    let mut partial = None;
    if let Some(at) = run.stopped_at {
        let signal = long.as_ref().map_or(0, |long| long.signal());
        let name = if signal == signal_hook::consts::SIGTERM {
            "SIGTERM"
        } else {
            "SIGINT"
        };
        text.push_str(&format!(
            "interrupted by {name} at {at} of {}: these results (and the files below) cover \
             the first {at}\n",
            scenario.duration
        ));
        run.results.mark_partial(scenario.duration);
        partial = Some(format!(
            "interrupted by {name} at {at} of {}",
            scenario.duration
        ));
    }
    text.push_str(&format!(
        "simulated {} in {:.1} ms of wall-clock time ({:.0}× real time)\n",
        Nanos(run.results.duration_ns),
        run.wall.as_secs_f64() * 1e3,
        run.speed()
    ));
    let mut written = Vec::new();
    if let Some(out) = &json {
        written.push(text_file(out, &run.results.to_json())?);
        text.push_str(&format!("results: {}\n", out.display()));
    }
    if let (Some(out), Some(format), Some(recorded)) = (&trace, trace_format, &run.trace) {
        written.push(output_file(out, |file| {
            recorded.write_marked(file, format, partial.as_deref())
        })?);
        text.push_str(&format!("trace: {}\n", out.display()));
    }
    if let (Some(out), Some(rows)) = (&jobs, &run.jobs) {
        written.push(output_file(out, |file| {
            rtvmm_system::results::write_jobs_csv_marked(file, rows, partial.as_deref())
        })?);
        text.push_str(&format!("jobs: {}\n", out.display()));
    }
    // All or nothing: no file is replaced until every one is written.
    files::commit_all(written).map_err(runtime)?;
    print(&text)?;
    if run.stopped_at.is_some() {
        let signal = long.as_ref().map_or(2, |l| l.signal());
        return Err(Failure::Interrupted { signal });
    }
    Ok(())
}

fn demo_command(
    duration: Nanos,
    seed: u64,
    policies: Vec<PolicyKind>,
    print_scenario: bool,
) -> Result<(), Failure> {
    let scenario = demo::demo(seed, duration).map_err(|e| match e {
        DemoError::Scenario(_) | DemoError::Gen(_) => bad_input(e),
    })?;
    if print_scenario {
        return print(&normalised(&scenario));
    }
    let policies = if policies.is_empty() {
        PolicyKind::ALL.to_vec()
    } else {
        policies
    };
    let rows = guarded("simulating the demo", || {
        rtvmm_sim::compare::compare(&scenario, &policies).map_err(runtime)
    })?;
    print(&rtvmm_sim::compare::comparison_table(&scenario, &rows))
}
