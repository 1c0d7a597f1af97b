//! `rtvmm host run` and `rtvmm bench host`: the scheduling core in real time on Linux
//! (`rtvmm-host`). Flags live here; the library takes [`HostOptions`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::anyhow;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_experiments::driver::{RealTime, RealTimeError};
use rtvmm_experiments::figures::percent;
use rtvmm_experiments::{files, Cancel};
use rtvmm_host::ctl::{self, ServerError};
use rtvmm_host::enforce::Backend;
use rtvmm_host::executor::{self, HostOptions, HostRun, LiveControl};
use rtvmm_host::{HelperCommand, HostError};
use rtvmm_system::results::HostResults;
use rtvmm_system::results::RunResults;
use rtvmm_system::trace::{write_trace_marked, TraceFormat};
use rtvmm_system::SystemSpec;

use crate::{
    bad_input, load, output_file, parse_policy, parse_time, print, runtime, text_file, Failure,
    RunFlags,
};

/// `--cpus`'s value: host cpus, in ascending order.
#[derive(Clone, Debug)]
struct CpuList(Vec<usize>);

/// `--cpus`: a cpu list in xl's form (`0-2,5`).
fn parse_cpus(text: &str) -> Result<CpuList, String> {
    let set = rtvmm_core::xl::parse_cpu_list(text)?;
    Ok(CpuList(set.iter().map(|c| c as usize).collect()))
}

pub fn parse_backend(text: &str) -> Result<Backend, String> {
    Backend::from_name(text).ok_or_else(|| {
        format!("unknown enforcement backend '{text}': expected freeze, band or signal")
    })
}

/// `rtvmm host ...`.
#[derive(clap::Subcommand)]
pub enum HostCommand {
    /// Run a scenario in real time: each domain a guest process whose tasks are SCHED_FIFO
    /// threads, scheduled by the same core as `rtvmm sim`, each pcpu on a pinned cpu of
    /// its own; prints the same summary plus the executor's overhead, and writes the same
    /// JSON
    ///
    /// Needs root (SCHED_FIFO, lifting RT throttling, mlockall, cgroup v2 for `freeze`);
    /// without, it refuses and names what is missing, unless --best-effort. Ctrl-C stops
    /// the run and keeps what was measured (exit 130). Whatever happens to the executor, a
    /// watchdog process thaws, restores and removes what the run changed; if both are
    /// killed, the next run (or `rtvmm host cleanup`) does, from the run's record in
    /// /run/rtvmm; if the watchdog alone dies, the run stops and undoes everything itself
    /// (exit 1). One run per cpu: a second run on a managed cpu is refused.
    Run(Box<HostRunArgs>),
    /// Undo what runs whose executor and watchdog are both gone left behind (a frozen
    /// domain cgroup, leftover guests, lifted RT throttling), from their records in
    /// /run/rtvmm; live runs are left alone. Every `host run` does this first
    ///
    /// The watchdog normally does it; this is for when the executor and the watchdog were
    /// killed together (a kill of the whole process tree or session). Needs root.
    Cleanup,
}

#[derive(clap::Args)]
#[command(
    mut_arg("scenario", |a| a.help("The scenario file (TOML), as for `rtvmm sim`")),
    mut_arg("policy", |a| a.help("Run under this policy instead of the file's")),
    mut_arg("duration", |a| a.help(
        "Run for this long instead of the file's duration (with a unit: 5s, 500ms)"
    )),
    mut_arg("seed", |a| a.help(
        "Seed instead of the file's (the guests' execution-time draws)"
    )),
    mut_arg("json", |a| a.help(
        "Write the full results as JSON (the format of `rtvmm sim --json`, source \"host\")"
    )),
    mut_arg("trace", |a| a.help("Write the trace: *.json (Chrome/Perfetto) or *.csv")),
    mut_arg("jobs", |a| a.help(
        "Write every job (release, start, finish, response, responsiveness, lateness, \
         latency, outcome) as CSV to this file, as `rtvmm sim --jobs` does"
    )),
)]
pub struct HostRunArgs {
    /// The flags shared with `rtvmm sim` (help worded for a real-time run above).
    #[command(flatten)]
    run: RunFlags,
    /// The managed cpu (default: the last one)
    #[arg(long)]
    cpu: Option<usize>,
    /// The managed cpus, one per pcpu of the scenario's machine (pcpu i on the i-th
    /// lowest), as xl writes them (0-2,5); several only where the machine has at least one
    /// core to spare beyond them (the scheduler thread, which drives every pcpu, runs there)
    #[arg(long, value_name = "LIST", value_parser = parse_cpus, conflicts_with = "cpu")]
    cpus: Option<CpuList>,
    /// How domains are stopped: freeze (cgroup v2), band (SCHED_FIFO priority band) or
    /// signal (SIGSTOP/SIGCONT)
    #[arg(long, value_parser = parse_backend, default_value = "freeze")]
    enforce: Backend,
    /// Run without the real-time privileges that are missing; every result is labelled
    /// not real-time
    #[arg(long)]
    best_effort: bool,
    /// If the watchdog process dies during the run, warn and run on without it (by
    /// default the run stops, undoes everything itself and exits with an error: nothing
    /// would undo the run if the executor then died)
    #[arg(long)]
    carry_on_without_watchdog: bool,
    /// Serve live control on a Unix socket (mode 0600) while running: `rtvmm ctl
    /// --socket PATH sched-show|sched-set|sched-rtds|policy|domain add|domain remove`.
    /// Without PATH: $XDG_RUNTIME_DIR/rtvmm/NAME.sock, or /run/rtvmm/NAME.sock (NAME: the
    /// scenario's name), where `rtvmm ctl` finds it without --socket. The path is printed
    /// (stderr) at the start; the socket is removed at the end
    #[arg(long, value_name = "PATH", num_args = 0..=1)]
    ctl: Option<Option<PathBuf>>,
}

/// `rtvmm bench host`.
#[derive(clap::Args)]
pub struct BenchHostArgs {
    /// Time per policy (with a unit)
    #[arg(long, value_parser = parse_time, default_value = "3s")]
    duration: Nanos,
    /// The managed cpu (default: the last one)
    #[arg(long)]
    cpu: Option<usize>,
    #[arg(long, value_parser = parse_backend, default_value = "freeze")]
    enforce: Backend,
    /// Only these policies (repeat); default: the six server policies
    #[arg(long = "policy", value_parser = parse_policy)]
    policies: Vec<PolicyKind>,
    /// Write every run's results as JSON lines to this file
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// Rounds (every policy once per round); each figure is then the median of the
    /// rounds with their range
    #[arg(long, default_value_t = 1)]
    repeat: usize,
}

/// `rtvmm bench wake`.
#[derive(clap::Args)]
pub struct BenchWakeArgs {
    /// The cpu the measuring thread is pinned to (default: the last one)
    #[arg(long)]
    cpu: Option<usize>,
    /// Between two deadlines (with a unit; cyclictest's -i)
    #[arg(long, value_parser = parse_time, default_value = "1ms")]
    interval: Nanos,
    /// Wakes to measure (cyclictest's -l); loops × interval is at most 10 minutes
    #[arg(long, default_value_t = 10_000)]
    loops: u64,
    /// Keep the cpu busy with a SCHED_OTHER spinner (no halting between wakes)
    #[arg(long)]
    busy: bool,
    /// Without real-time privileges, measure as SCHED_OTHER instead of refusing (the
    /// result is labelled as not real-time)
    #[arg(long)]
    best_effort: bool,
    /// Write the distribution as a wake delivery preset (the `fixed` and `random` keys of
    /// `[machine] wake_delivery`, with empirical quantiles)
    #[arg(long, value_name = "PATH")]
    write_preset: Option<PathBuf>,
    /// Quantiles in the preset, at evenly spaced probabilities from p0 to p100 (at least 2)
    #[arg(long, default_value_t = 1001)]
    quantiles: usize,
}

fn host_failure(e: HostError) -> Failure {
    if e.is_bad_input() {
        bad_input(e)
    } else {
        runtime(e)
    }
}

fn helper() -> Result<HelperCommand, Failure> {
    HelperCommand::this_program()
        .map_err(|e| runtime(anyhow!(e).context("finding this program to re-execute")))
}

/// Installs the SIGINT/SIGTERM handler: the first signal stops the run.
fn stop_on_signal() -> (Arc<AtomicBool>, Arc<AtomicUsize>) {
    let stop = Arc::new(AtomicBool::new(false));
    let which = crate::signals::install(&stop, |name| {
        eprintln!("rtvmm: {name}: stopping the run; what was measured is kept")
    })
    .unwrap_or_else(|_| Arc::new(AtomicUsize::new(0)));
    (stop, which)
}

pub fn run(command: HostCommand) -> Result<(), Failure> {
    match command {
        HostCommand::Run(args) => host_run(*args),
        HostCommand::Cleanup => cleanup(),
    }
}

fn cleanup() -> Result<(), Failure> {
    use rtvmm_host::runs::{self, StateDir};
    let state = StateDir::system();
    let mount = rtvmm_host::sys::cgroup2_mount();
    let recovered =
        runs::recover(&state, mount.as_deref()).map_err(|e| {
            runtime(anyhow!(e).context(
                "recovering abandoned runs (root is needed to change what they left behind)",
            ))
        })?;
    let mut text = String::new();
    if recovered.is_empty() {
        text.push_str("nothing to recover: no abandoned run\n");
    }
    for line in &recovered {
        text.push_str(line);
        text.push('\n');
    }
    for live in state.records().iter().filter(|r| r.live()) {
        text.push_str(&format!(
            "left alone: the live run of executor pid {}{}\n",
            live.executor.pid,
            live.cpu.map(|c| format!(" on cpu {c}")).unwrap_or_default()
        ));
    }
    print(&text)
}

fn host_run(args: HostRunArgs) -> Result<(), Failure> {
    let HostRunArgs {
        run: flags,
        cpu,
        cpus,
        enforce,
        best_effort,
        carry_on_without_watchdog,
        ctl,
    } = args;
    let trace_format = flags
        .trace
        .as_deref()
        .map(TraceFormat::from_path)
        .transpose()
        .map_err(bad_input)?;
    let scenario = load(&flags.scenario, flags.policy, flags.duration, flags.seed)?;
    let outputs: Vec<&Path> = [&flags.json, &flags.trace, &flags.jobs]
        .into_iter()
        .filter_map(|o| o.as_deref())
        .collect();
    files::check_outputs(&[&flags.scenario], &outputs).map_err(bad_input)?;
    let (stop, which) = stop_on_signal();
    let mut options = HostOptions::new(helper()?, scenario.duration);
    options.cpu = cpu;
    options.cpus = cpus.map(|c| c.0).unwrap_or_default();
    options.backend = enforce;
    options.best_effort = best_effort;
    options.carry_on_without_watchdog = carry_on_without_watchdog;
    options.record_trace = flags.trace.is_some();
    options.record_jobs = flags.jobs.is_some();
    options.stop = stop;
    options.external = scenario.external.clone();
    if let Some(path) = ctl {
        let path = path.unwrap_or_else(|| ctl::default_socket_path(&scenario.name));
        let control = LiveControl::start(&path, scenario.scheduler.clone()).map_err(|e| {
            // A path the user chose that cannot be used is theirs to fix.
            let yours = matches!(
                e,
                ServerError::InUse { .. }
                    | ServerError::NotASocket { .. }
                    | ServerError::PathTooLong { .. }
            );
            let e = anyhow!("--ctl: {e}");
            if yours {
                bad_input(e)
            } else {
                runtime(e)
            }
        })?;
        eprintln!(
            "rtvmm: live control on {} (rtvmm ctl --socket {} sched-show)",
            control.path().display(),
            control.path().display()
        );
        options.control = Some(control);
    }
    let mut run = executor::run(&scenario.system, &scenario.name, scenario.seed, options)
        .map_err(host_failure)?;
    // An interrupted run's files say so, as the simulator's do.
    let mut partial = None;
    if let Some(at) = run.stopped_at {
        let name = match which.load(Ordering::Relaxed) as i32 {
            signal_hook::consts::SIGTERM => "SIGTERM",
            _ => "SIGINT",
        };
        run.results.mark_partial(scenario.duration);
        partial = Some(format!(
            "interrupted by {name} at {at} of {}",
            scenario.duration
        ));
    }
    let mut text = run.results.summary();
    if let Some(host) = &run.results.host {
        text.push_str(&overhead_table(host, run.results.duration_ns));
    }
    if let Some(at) = run.stopped_at {
        text.push_str(&format!(
            "stopped at {at} of {}: these results (and the files below) cover the first {at}\n",
            scenario.duration
        ));
    }
    let mut written = Vec::new();
    if let Some(out) = &flags.json {
        written.push(text_file(out, &run.results.to_json())?);
        text.push_str(&format!("results: {}\n", out.display()));
    }
    if let (Some(out), Some(format), Some((events, names))) =
        (&flags.trace, trace_format, &run.trace)
    {
        written.push(output_file(out, |file| {
            write_trace_marked(file, format, events, names, partial.as_deref())
        })?);
        text.push_str(&format!("trace: {}\n", out.display()));
    }
    if let (Some(out), Some(rows)) = (&flags.jobs, &run.jobs) {
        written.push(output_file(out, |file| {
            rtvmm_system::results::write_jobs_csv_marked(file, rows, partial.as_deref())
        })?);
        text.push_str(&format!("jobs: {}\n", out.display()));
    }
    files::commit_all(written).map_err(runtime)?;
    print(&text)?;
    if run.stopped_at.is_some() {
        let signal = match which.load(Ordering::Relaxed) {
            0 => 2,
            s => s as i32,
        };
        return Err(Failure::Interrupted { signal });
    }
    Ok(())
}

/// The executor's own figures, as a table under the summary.
pub fn overhead_table(h: &HostResults, duration_ns: u64) -> String {
    let us = |ns: u64| ns as f64 / 1e3;
    let mut out = format!(
        "executor on cpu {} (enforce {}){}\n{:<34} {:>8} {:>10} {:>10} {:>10} {:>12}\n",
        h.cpu,
        h.enforce,
        if h.real_time {
            ""
        } else {
            " — NOT REAL-TIME"
        },
        "",
        "count",
        "median",
        "p99",
        "max",
        "total"
    );
    for (name, d, total, unit_ns) in [
        (
            "do_schedule (ns)",
            &h.do_schedule_ns,
            h.do_schedule_total_ns,
            true,
        ),
        (
            "switch, decision → running (µs)",
            &h.switch_ns,
            h.switch_total_ns,
            false,
        ),
        ("tick lateness (µs)", &h.tick_lateness_ns, 0, false),
    ] {
        let show = |v: u64| {
            if unit_ns {
                format!("{v}")
            } else {
                format!("{:.1}", us(v))
            }
        };
        let total = if total == 0 {
            "—".to_string()
        } else {
            format!("{:.3} ms", total as f64 / 1e6)
        };
        out.push_str(&format!(
            "{:<34} {:>8} {:>10} {:>10} {:>10} {:>12}\n",
            name,
            d.count,
            show(d.p50),
            show(d.p99),
            show(d.max),
            total
        ));
    }
    out.push_str(&format!(
        "scheduler CPU {:.3} ms = {}% of the cpu lost to scheduling ({} wake-ups, {:.1} µs each) · host steal {:.3} ms · job records lost {}\n",
        h.scheduler_cpu_ns as f64 / 1e6,
        percent(h.cpu_lost_share, 3),
        h.wakeups,
        h.scheduler_cpu_ns as f64 / h.wakeups.max(1) as f64 / 1e3,
        h.steal_ns as f64 / 1e6,
        h.jobs_lost
    ));
    out.push_str(&format!(
        "one clock read costs {} ns here; each do_schedule figure includes about one\n",
        h.clock_read_ns
    ));
    let costs = h.simulator_overheads();
    out.push_str(&format!(
        "to simulate this run with its measured overheads: [machine] overhead = {{ do_schedule = \"{}\", context_switch = \"{}\" }}\n",
        costs.do_schedule, costs.context_switch
    ));
    let duration = duration_ns.max(1) as f64;
    for e in &h.external {
        out.push_str(&format!(
            "external domain '{}' ({}): its threads had {:.3} ms of CPU = {}% of the run{}\n",
            e.domain,
            e.source,
            e.cpu_ns as f64 / 1e6,
            percent(e.cpu_ns as f64 / duration, 1),
            match e.gone_at_ns {
                Some(t) => format!(" · every process gone at {}", Nanos(t)),
                None => String::new(),
            }
        ));
    }
    out
}

/// `rtvmm bench host`: the demo's five domains (the RT-Xen even shares) at a 1 ms quantum
/// under each server policy, for `duration` each, `repeat` rounds (every policy once per
/// round); the executor's overhead per policy, as the median of the rounds with their
/// range.
pub fn bench(args: BenchHostArgs) -> Result<(), Failure> {
    let policies = if args.policies.is_empty() {
        PolicyKind::ALL
            .into_iter()
            .filter(|k| k.is_server())
            .collect()
    } else {
        args.policies.clone()
    };
    if args.repeat == 0 {
        return Err(bad_input(anyhow!(
            "--repeat 0: at least one round is needed"
        )));
    }
    if let Some(out) = &args.json {
        files::check_outputs(&[], &[out.as_path()]).map_err(bad_input)?;
    }
    let base = rtvmm_scenario::demo::demo(rtvmm_scenario::demo::DEMO_SEED, args.duration)
        .map_err(|e| runtime(anyhow!("{e}")))?;
    let (stop, _) = stop_on_signal();
    let mut runs: Vec<Vec<Round>> = vec![Vec::new(); policies.len()];
    let mut json = String::new();
    'rounds: for _ in 0..args.repeat {
        for (i, &kind) in policies.iter().enumerate() {
            if stop.load(Ordering::Relaxed) {
                break 'rounds;
            }
            let scenario = base.with_policy(kind).map_err(bad_input)?;
            let mut options = HostOptions::new(helper()?, scenario.duration);
            options.cpu = args.cpu;
            options.backend = args.enforce;
            options.stop = Arc::clone(&stop);
            let HostRun { results, .. } =
                executor::run(&scenario.system, &scenario.name, scenario.seed, options)
                    .map_err(host_failure)?;
            runs[i].push(Round {
                host: results.host.clone().unwrap_or_default(),
                miss_ratio: results.deadline_miss_ratio,
                seconds: results.duration_ns as f64 / 1e9,
            });
            json.push_str(&serde_json::to_string(&results).expect("results serialise"));
            json.push('\n');
        }
    }
    let mut text = format!(
        "five domains (RT-Xen even shares, 70% task load), 1 ms quantum, {} per policy, enforce {}, {} round{}\n{}\n",
        args.duration,
        args.enforce.name(),
        args.repeat,
        if args.repeat == 1 { "" } else { "s" },
        machine_description(),
    );
    text.push_str(&bench_table(&policies, &runs));
    if let Some(out) = &args.json {
        files::commit_all(vec![text_file(out, &json)?]).map_err(runtime)?;
        text.push_str(&format!("results: {}\n", out.display()));
    }
    print(&text)
}

/// One policy's run in one round of `bench host`.
#[derive(Clone)]
struct Round {
    host: HostResults,
    miss_ratio: f64,
    seconds: f64,
}

/// One row per policy; each cell the median of the rounds, with `[min–max]` when there
/// are several.
fn bench_table(policies: &[PolicyKind], runs: &[Vec<Round>]) -> String {
    type Figure = (&'static str, fn(&Round) -> f64, fn(f64) -> String);
    let ns = |v: f64| format!("{v:.0}");
    let us = |v: f64| format!("{:.1}", v / 1e3);
    let pct = |v: f64| percent(v, 2);
    let figures: [Figure; 11] = [
        ("ds med ns", |r| r.host.do_schedule_ns.p50 as f64, ns),
        ("ds p99 ns", |r| r.host.do_schedule_ns.p99 as f64, ns),
        ("clock ns", |r| r.host.clock_read_ns as f64, ns),
        ("sw med µs", |r| r.host.switch_ns.p50 as f64, us),
        ("sw p99 µs", |r| r.host.switch_ns.p99 as f64, us),
        ("late p99 µs", |r| r.host.tick_lateness_ns.p99 as f64, us),
        ("cpu lost %", |r| r.host.cpu_lost_share, pct),
        (
            "wakes/s",
            |r| r.host.wakeups as f64 / r.seconds.max(1e-9),
            ns,
        ),
        (
            "µs/wake",
            |r| r.host.scheduler_cpu_ns as f64 / r.host.wakeups.max(1) as f64,
            us,
        ),
        (
            "steal ms",
            |r| r.host.steal_ns as f64 / 1e6,
            |v| format!("{v:.1}"),
        ),
        ("DMR %", |r| r.miss_ratio, pct),
    ];
    let cell = |values: &mut Vec<f64>, show: fn(f64) -> String| -> String {
        values.sort_by(f64::total_cmp);
        match values.len() {
            0 => "—".to_string(),
            1 => show(values[0]),
            n => format!(
                "{} [{}–{}]",
                show(values[n / 2]),
                show(values[0]),
                show(values[n - 1])
            ),
        }
    };
    let mut rows = vec![std::iter::once("policy".to_string())
        .chain(figures.iter().map(|f| f.0.to_string()))
        .collect::<Vec<_>>()];
    for (kind, rounds) in policies.iter().zip(runs) {
        let mut row = vec![kind.name().to_string()];
        for (_, figure, show) in &figures {
            let mut values: Vec<f64> = rounds.iter().map(figure).collect();
            row.push(cell(&mut values, *show));
        }
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (v, w))| {
                let pad = w - v.chars().count();
                if c == 0 {
                    format!("{v}{}", " ".repeat(pad))
                } else {
                    format!("{}{v}", " ".repeat(pad))
                }
            })
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out.push_str(
        "(ds: the core's handle_timeout calls that ran do_schedule, timed between two clock \
         reads (clock: what one read costs here, included once in each ds figure); sw: \
         context switch, decision → the next domain running; late: tick lateness; cpu lost: \
         the scheduler thread's CPU time ÷ the run; µs/wake: its CPU time per wake-up; \
         steal: the host's steal time on the cpu; cells: median [min–max] of the rounds)\n",
    );
    out
}

/// The machine, for the record: cpu model, cpu count, kernel, clock source, virtualised.
fn machine_description() -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|v| v.trim_start_matches([' ', '\t', ':']).trim().to_string())
        .unwrap_or_else(|| "unknown cpu".into());
    let virtualised = cpuinfo
        .lines()
        .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"));
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let clock =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .unwrap_or_default();
    format!(
        "machine: {model}, {} cpus, Linux {}, clock source {}{}",
        rtvmm_host::sys::cpu_count(),
        kernel.trim(),
        clock.trim(),
        if virtualised {
            ", virtualised (a guest of a hypervisor)"
        } else {
            ""
        }
    )
}

/// The host executor as an experiment's real-time driver (`rtvmm experiment NAME --host`,
/// see `rtvmm_experiments::driver`): this program as the helper, the flags' cpu, backend
/// and `--best-effort`, and the experiment's cancel flag as the run's stop flag.
pub struct ExperimentHost {
    helper: HelperCommand,
    cpu: Option<usize>,
    backend: Backend,
    best_effort: bool,
}

impl ExperimentHost {
    pub fn new(cpu: Option<usize>, backend: Backend, best_effort: bool) -> Result<Self, String> {
        let helper = HelperCommand::this_program()
            .map_err(|e| format!("finding this program to re-execute: {e}"))?;
        Ok(ExperimentHost {
            helper,
            cpu,
            backend,
            best_effort,
        })
    }

    fn options(&self, duration: Nanos) -> HostOptions {
        let mut options = HostOptions::new(self.helper.clone(), duration);
        options.cpu = self.cpu;
        options.backend = self.backend;
        options.best_effort = self.best_effort;
        options
    }
}

fn real_time_error(e: HostError) -> RealTimeError {
    RealTimeError {
        refused: e.is_bad_input(),
        message: e.to_string(),
    }
}

impl RealTime for ExperimentHost {
    fn check(&self) -> Result<(), RealTimeError> {
        executor::check(&self.options(Nanos::from_secs(1))).map_err(real_time_error)
    }

    fn run(
        &self,
        system: &SystemSpec,
        scenario: &str,
        seed: u64,
        duration: Nanos,
        stop: &Cancel,
    ) -> Result<Option<RunResults>, RealTimeError> {
        let mut options = self.options(duration);
        options.stop = stop.flag();
        let run = executor::run(system, scenario, seed, options).map_err(real_time_error)?;
        Ok(run.stopped_at.is_none().then_some(run.results))
    }

    fn describe(&self) -> String {
        let count = rtvmm_host::sys::cpu_count();
        format!(
            "managed cpu {} of 0..{}, enforce {}{}",
            self.cpu.unwrap_or(count - 1),
            count - 1,
            self.backend.name(),
            if self.best_effort {
                ", --best-effort"
            } else {
                ""
            }
        )
    }

    fn flags(&self) -> String {
        let mut flags = "--host".to_string();
        if let Some(cpu) = self.cpu {
            flags.push_str(&format!(" --cpu {cpu}"));
        }
        if self.backend != Backend::Freeze {
            flags.push_str(&format!(" --enforce {}", self.backend.name()));
        }
        if self.best_effort {
            flags.push_str(" --best-effort");
        }
        flags
    }
}

/// `rtvmm bench wake`: timer wake-up latency on a real thread (`rtvmm_host::wakeup`).
pub fn bench_wake(args: BenchWakeArgs) -> Result<(), Failure> {
    use rtvmm_host::sys::{self, MissingPrivilege};
    use rtvmm_host::wakeup::{self, WakeupOptions, FIFO_PRIORITY};
    if args.quantiles < 2 {
        return Err(bad_input(anyhow!(
            "--quantiles {}: at least 2 are needed (p0 and p100)",
            args.quantiles
        )));
    }
    if let Some(out) = &args.write_preset {
        files::check_outputs(&[], &[out.as_path()]).map_err(bad_input)?;
    }
    let fifo =
        !sys::missing_privileges(&sys::Host, false).contains(&MissingPrivilege::RealTimeScheduling);
    let mut options = WakeupOptions {
        cpu: args.cpu.unwrap_or(sys::cpu_count() - 1),
        interval: args.interval,
        loops: args.loops,
        fifo,
        busy: args.busy,
        stop: Arc::new(AtomicBool::new(false)),
    };
    options.check().map_err(bad_input)?;
    if !fifo && !args.best_effort {
        return Err(runtime(anyhow!(
            "{}; or give --best-effort to measure as SCHED_OTHER (not a real-time figure)",
            MissingPrivilege::RealTimeScheduling
        )));
    }
    options.stop = stop_on_signal().0;
    let run = wakeup::measure(&options).map_err(runtime)?;
    if run.latencies.is_empty() {
        return Err(runtime(anyhow!("stopped before the first wake")));
    }
    let mut sorted = run.latencies.clone();
    sorted.sort_unstable();
    let n = sorted.len();
    let avg = sorted.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
    let us = |ns: u64| format!("{:.1}us", ns as f64 / 1e3);
    let scheduling = if run.fifo {
        format!("SCHED_FIFO {FIFO_PRIORITY}")
    } else {
        "SCHED_OTHER (not real-time: no privilege, --best-effort)".to_string()
    };
    let setting = format!(
        "{scheduling}, pinned to cpu {}, absolute clock_nanosleep every {}, {} wakes{}, cpu {}",
        options.cpu,
        options.interval,
        n,
        if (n as u64) < options.loops {
            format!(" (stopped early, of {})", options.loops)
        } else {
            String::new()
        },
        if options.busy {
            "kept busy"
        } else {
            "left idle between wakes"
        },
    );
    let percentiles = [0.5, 0.9, 0.99, 0.999]
        .iter()
        .map(|&q| format!("p{} {}", q * 100.0, us(wakeup::quantile(&sorted, q))))
        .collect::<Vec<_>>()
        .join("  ");
    let summary = format!(
        "min {}  avg {:.1}us  max {}  {percentiles}",
        us(sorted[0]),
        avg / 1e3,
        us(sorted[n - 1])
    );
    let steal = run
        .steal
        .map(|s| format!("steal on cpu {} during the run: {s}", options.cpu))
        .unwrap_or_else(|| "steal: not reported by this kernel".to_string());
    // cyclictest's line, in µs.
    let cyclictest = format!(
        "T: 0 P:{} I:{} C:{n} Min:{} Act:{} Avg:{} Max:{}",
        if run.fifo { FIFO_PRIORITY } else { 0 },
        options.interval.as_ns() / 1000,
        sorted[0] / 1000,
        run.latencies[n - 1] / 1000,
        (avg / 1e3).round() as u64,
        sorted[n - 1] / 1000
    );
    let mut text = format!(
        "timer wake-up latency: {setting}\n{}\n{cyclictest}\n{summary}\n{steal}\n",
        machine_description()
    );
    if let Some(out) = &args.write_preset {
        let command: Vec<String> = std::env::args().collect();
        let comment = vec![
            "A wake delivery preset: timer wake-up latency measured by `rtvmm bench wake`.".to_string(),
            format!("measured: {}", utc_now()),
            format!("command: {}", command.join(" ")),
            format!("setting: {setting}"),
            machine_description(),
            format!("result: {summary}"),
            steal,
            "In a scenario, write these keys under `[machine.wake_delivery]` and `[machine.wake_delivery.random]`.".to_string(),
        ];
        let quantiles = wakeup::even_quantiles(&sorted, args.quantiles);
        let preset = rtvmm_scenario::wake::wake_delivery_preset_file(&comment, &quantiles);
        // What was written reads back as a wake delivery.
        rtvmm_scenario::parse_wake_delivery(&preset)
            .map_err(|e| runtime(anyhow!("the preset written does not read back: {e}")))?;
        files::commit_all(vec![text_file(out, &preset)?]).map_err(runtime)?;
        text.push_str(&format!("preset: {}\n", out.display()));
    }
    print(&text)
}

/// The current UTC time as `YYYY-MM-DD HH:MM UTC`.
fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60
    )
}
