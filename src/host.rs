//! `rtvmm host run` and `rtvmm bench host`: the scheduling core in real time on Linux
//! (`rtvmm-host`). Flags live here; the library takes [`HostOptions`].

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use anyhow::anyhow;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_experiments::files;
use rtvmm_host::enforce::Backend;
use rtvmm_host::executor::{self, HostOptions, HostRun};
use rtvmm_host::{HelperCommand, HostError};
use rtvmm_sim::results::HostResults;
use rtvmm_sim::trace::{write_trace, TraceFormat};

use crate::{
    bad_input, load, output_file, parse_policy, parse_time, print, runtime, text_file, Failure,
};

fn parse_backend(text: &str) -> Result<Backend, String> {
    Backend::from_name(text).ok_or_else(|| {
        format!("unknown enforcement backend '{text}': expected freeze, band or signal")
    })
}

/// `rtvmm host ...`.
#[derive(clap::Subcommand)]
pub enum HostCommand {
    /// Run a scenario in real time: each domain a guest process whose tasks are SCHED_FIFO
    /// threads, scheduled by the same core as `rtvmm sim` on one pinned cpu; prints the
    /// same summary plus the executor's overhead, and writes the same JSON
    ///
    /// Needs root (SCHED_FIFO, lifting RT throttling, mlockall, cgroup v2 for `freeze`);
    /// without, it refuses and names what is missing, unless --best-effort. Ctrl-C stops
    /// the run and keeps what was measured (exit 130). Whatever happens to the executor, a
    /// watchdog process thaws, restores and removes what the run changed.
    Run(HostRunArgs),
}

#[derive(clap::Args)]
pub struct HostRunArgs {
    /// The scenario file (TOML), as for `rtvmm sim`
    scenario: PathBuf,
    /// The managed cpu (default: the last one)
    #[arg(long)]
    cpu: Option<usize>,
    /// How domains are stopped: freeze (cgroup v2), band (SCHED_FIFO priority band) or
    /// signal (SIGSTOP/SIGCONT)
    #[arg(long, value_parser = parse_backend, default_value = "freeze")]
    enforce: Backend,
    /// Run for this long instead of the file's duration (with a unit: 5s, 500ms)
    #[arg(long, value_parser = parse_time)]
    duration: Option<Nanos>,
    /// Run under this policy instead of the file's
    #[arg(long, value_parser = parse_policy)]
    policy: Option<PolicyKind>,
    /// Seed instead of the file's (the guests' execution-time draws)
    #[arg(long)]
    seed: Option<u64>,
    /// Write the full results as JSON (the format of `rtvmm sim --json`, source "host")
    #[arg(long, value_name = "OUT")]
    json: Option<PathBuf>,
    /// Write the trace: *.json (Chrome/Perfetto) or *.csv
    #[arg(long, value_name = "OUT")]
    trace: Option<PathBuf>,
    /// Run without the real-time privileges that are missing; every result is labelled
    /// not real-time
    #[arg(long)]
    best_effort: bool,
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
        HostCommand::Run(args) => host_run(args),
    }
}

fn host_run(args: HostRunArgs) -> Result<(), Failure> {
    let trace_format = args
        .trace
        .as_deref()
        .map(TraceFormat::from_path)
        .transpose()
        .map_err(bad_input)?;
    let scenario = load(&args.scenario, args.policy, args.duration, args.seed)?;
    let outputs: Vec<&Path> = [&args.json, &args.trace]
        .into_iter()
        .filter_map(|o| o.as_deref())
        .collect();
    files::check_outputs(&[&args.scenario], &outputs).map_err(bad_input)?;
    let (stop, which) = stop_on_signal();
    let mut options = HostOptions::new(helper()?, scenario.duration);
    options.cpu = args.cpu;
    options.backend = args.enforce;
    options.best_effort = args.best_effort;
    options.record_trace = args.trace.is_some();
    options.stop = stop;
    options.external = scenario.external.clone();
    let run = executor::run(&scenario.system, &scenario.name, scenario.seed, options)
        .map_err(host_failure)?;
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
    if let Some(out) = &args.json {
        written.push(text_file(out, &run.results.to_json())?);
        text.push_str(&format!("results: {}\n", out.display()));
    }
    if let (Some(out), Some(format), Some((events, names))) =
        (&args.trace, trace_format, &run.trace)
    {
        written.push(output_file(out, |file| {
            write_trace(file, format, events, names)
        })?);
        text.push_str(&format!("trace: {}\n", out.display()));
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
        "scheduler CPU {:.3} ms = {:.3}% of the cpu lost to scheduling · host steal {:.3} ms · job records lost {}\n",
        h.scheduler_cpu_ns as f64 / 1e6,
        h.cpu_lost_share * 100.0,
        h.steal_ns as f64 / 1e6,
        h.jobs_lost
    ));
    let duration = duration_ns.max(1) as f64;
    for e in &h.external {
        out.push_str(&format!(
            "external domain '{}' ({}): its threads had {:.3} ms of CPU = {:.1}% of the run{}\n",
            e.domain,
            e.source,
            e.cpu_ns as f64 / 1e6,
            e.cpu_ns as f64 / duration * 100.0,
            match e.gone_at_ns {
                Some(t) => format!(" · every process gone at {}", Nanos(t)),
                None => String::new(),
            }
        ));
    }
    out
}

/// `rtvmm bench host`: the demo's five domains (the RT-Xen even shares) at a 1 ms quantum
/// under each server policy, for `duration` each; the executor's overhead per policy.
pub fn bench(args: BenchHostArgs) -> Result<(), Failure> {
    let policies = if args.policies.is_empty() {
        vec![
            PolicyKind::Deferrable,
            PolicyKind::Periodic,
            PolicyKind::Polling,
            PolicyKind::Sporadic,
            PolicyKind::Wcps,
            PolicyKind::Crps,
        ]
    } else {
        args.policies.clone()
    };
    if let Some(out) = &args.json {
        files::check_outputs(&[], &[out.as_path()]).map_err(bad_input)?;
    }
    let base = rtvmm_scenario::demo::demo(rtvmm_scenario::demo::DEMO_SEED, args.duration)
        .map_err(|e| runtime(anyhow!("{e}")))?;
    let (stop, _) = stop_on_signal();
    let mut text = format!(
        "five domains (RT-Xen even shares, 70% task load), 1 ms quantum, {} per policy, enforce {}\n{:<12} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} {:>9} {:>10}\n",
        args.duration,
        args.enforce.name(),
        "policy",
        "ds med",
        "ds p99",
        "sw med",
        "sw p99",
        "late p99",
        "cpu lost",
        "steal",
        "DMR"
    );
    let mut json = String::new();
    for kind in policies {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let scenario = base.with_policy(kind).map_err(bad_input)?;
        let mut options = HostOptions::new(helper()?, scenario.duration);
        options.cpu = args.cpu;
        options.backend = args.enforce;
        options.stop = Arc::clone(&stop);
        let HostRun { results, .. } =
            executor::run(&scenario.system, &scenario.name, scenario.seed, options)
                .map_err(host_failure)?;
        let h = results.host.clone().unwrap_or_default();
        text.push_str(&format!(
            "{:<12} {:>6} ns {:>6} ns {:>6.1} µs {:>6.1} µs {:>7.1} µs {:>9.3}% {:>6.1} ms {:>9.2}%\n",
            kind.name(),
            h.do_schedule_ns.p50,
            h.do_schedule_ns.p99,
            h.switch_ns.p50 as f64 / 1e3,
            h.switch_ns.p99 as f64 / 1e3,
            h.tick_lateness_ns.p99 as f64 / 1e3,
            h.cpu_lost_share * 100.0,
            h.steal_ns as f64 / 1e6,
            results.deadline_miss_ratio * 100.0
        ));
        json.push_str(&serde_json::to_string(&results).expect("results serialise"));
        json.push('\n');
    }
    text.push_str("(ds: do_schedule; sw: context switch, decision → the next domain running; late: tick lateness; cpu lost: the scheduler thread's CPU time ÷ the run)\n");
    if let Some(out) = &args.json {
        files::commit_all(vec![text_file(out, &json)?]).map_err(runtime)?;
        text.push_str(&format!("results: {}\n", out.display()));
    }
    print(&text)
}
