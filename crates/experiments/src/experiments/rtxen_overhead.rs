//! rtxen-overhead — scheduler activity per policy (`docs/experiments.md`).
//!
//! Procedure: five domains with the "even" shares, total load 70 %, five tasks per domain
//! (the rtxen generator), booted at staggered offsets (`crate::rtxen`, or `--in-phase`),
//! 10 simulated seconds per policy (deferrable, periodic, polling, sporadic, credit at
//! Xen 4.0's defaults, credit-1ms, sedf). Counts `do_schedule` calls and context switches,
//! which mean what they mean in Xen: the RT-Xen servers reschedule at every 1 ms quantum;
//! Credit only at the end of its slice, on block and on a preempting wake (its 10 ms — or
//! 1 ms — tick charges without rescheduling); SEDF is event-driven. With `--overhead`,
//! the simulated overhead time and the share of CPU time it takes are reported too (paid
//! from the budget of the VCPU each decision chose). Real timings (time in `do_schedule`
//! and in switches: total, median, p99, max) come from the host executor: `--host`, below.
//!
//! With `--host` ([`Driver::Host`]) the same runs happen in real time on this machine
//! (the host executor, one run after another) and the report is the paper's overhead
//! table from what the executor measured: time in `do_schedule` and per context switch
//! (count, total, median, p99, max) per policy, with every run's tick lateness, CPU lost
//! to the scheduler thread and host steal time.
//!
//! `--quick`: 1 s (simulated, or real with `--host`: 7 runs, about 10 s in all); full:
//! 10 s (with `--host`, about 75 s).

use crate::figures::{decimal, percent};
use rtvmm_core::machine::Overheads;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_gen::rtxen::SharePattern;

use super::Experiment;
use crate::driver::{real_time_label, Driver, RealTime};
use crate::error::ExperimentError;
use crate::host::HostInfo;
use crate::options::describe_overheads;
use crate::plot::{BarChart, Chart, LegendAt};
use crate::report::Output;
use crate::rtxen::{record_offsets, rtxen_domains, Phasing, RTXEN_POLICIES};
use crate::system::{
    build_system_with, rtxen_machine, run_labels, run_policies, simulate, RunPolicy, ServerDomain,
    RTXEN_REPLENISHMENT,
};

/// Task-set draws of a full run (`--seeds`; see `docs/experiments.md`).
pub const DRAWS: usize = 20;

pub const EXPERIMENT: Experiment = Experiment {
    name: "rtxen-overhead",
    title: "scheduler activity per policy",
    description: "Five domains with the even shares (periods 10/20/30/40/50 ms, budgets \
        2/4/6/8/10 ms), total load 70 %, five rate-monotonic tasks per domain, booted at \
        staggered offsets (or --in-phase), 10 simulated seconds per policy; Credit at Xen \
        4.0's defaults (credit) and at the papers' 1 ms setting (credit-1ms). Counts \
        do_schedule calls and context switches per policy as Xen would (each policy's own \
        tick), and, with --overhead, the simulated overhead time. Times measured on real \
        threads come with the host executor.",
    run: Some(run),
    host: true,
    draws: Some(DRAWS),
};

/// The experiment's total load, in permille.
pub const LOAD_PERMILLE: u32 = 700;

/// The procedure's system and the parameters every run shares, recorded in the order the
/// simulated report has always listed them: `(policies, domains, phasing)`.
fn setup(
    out: &mut Output,
    time_per_run: &str,
    duration: Nanos,
) -> Result<(Vec<RunPolicy>, Vec<ServerDomain>, Phasing), ExperimentError> {
    let options = out.options;
    let policies = run_policies(&options.policies_or(&RTXEN_POLICIES))?;
    let phasing = Phasing::of(options);
    out.param("share pattern", "even");
    out.param("total load α", "70%");
    out.param("policies", run_labels(&policies));
    for p in policies.iter().filter(|p| p.kind() == PolicyKind::Credit) {
        out.param(&format!("policy {}", p.label), p.describe());
    }
    out.param(time_per_run, duration);
    out.param("pcpus · quantum", "1 · 1ms");
    let mut domains = rtxen_domains(SharePattern::Even, LOAD_PERMILLE, options.seed)?;
    phasing.boot(&mut domains, u64::from(LOAD_PERMILLE));
    Ok((policies, domains, phasing))
}

/// The qualitative findings, as checks on this draw (see `Output::check`): the RT-Xen
/// servers reschedule at every tick, Credit at Xen 4.0's defaults only at the end of its
/// slice and on events, SEDF only on events.
fn check_findings(out: &mut Output, names: &[String], calls_per_s: &[f64]) {
    let rate = |label: &str| {
        names
            .iter()
            .position(|n| n == label)
            .map(|i| calls_per_s[i])
    };
    let servers: Vec<f64> = ["deferrable", "periodic", "polling", "sporadic"]
        .into_iter()
        .filter_map(rate)
        .collect();
    let Some(busiest_least) = servers.iter().copied().reduce(f64::min) else {
        return;
    };
    for (label, words) in [
        ("credit", "Credit at Xen 4.0's defaults (30 ms slice)"),
        ("sedf", "SEDF"),
    ] {
        if let Some(calls) = rate(label) {
            out.check(
                format!("{words} calls do_schedule less often than every RT-Xen server"),
                calls < busiest_least,
            );
        }
    }
    if let (Some(coarse), Some(fine)) = (rate("credit"), rate("credit-1ms")) {
        out.check(
            "credit-1ms calls do_schedule more often than credit at Xen 4.0's defaults",
            fine > coarse,
        );
    }
}

fn run(out: &mut Output) -> Result<(), ExperimentError> {
    if let Driver::Host(host) = &out.options.driver {
        return run_on_host(out, host.as_ref());
    }
    let options = out.options;
    let duration = options.duration_or(Nanos::from_secs(10), Nanos::from_secs(1));
    let overheads = options.overheads.unwrap_or_default();
    let seed = options.seed;
    let (policies, domains, phasing) = setup(out, "simulated time per run", duration)?;
    out.param(
        "overhead model",
        format!(
            "{}; paid from the budget of the VCPU each decision chose",
            describe_overheads(&overheads)
        ),
    );
    record_offsets(out, phasing, &[("even-700".to_string(), domains.clone())])?;
    let outcome = out.sweep(
        "rtxen-overhead",
        &policies,
        |p| format!("rtxen-overhead-{p}"),
        |policy| {
            let system = build_system_with(
                &domains,
                &policy.config,
                rtxen_machine(Nanos::from_ms(1), overheads),
            )?;
            simulate(&system, &format!("rtxen-overhead-{policy}"), seed, duration)
        },
    )?;
    let seconds = duration.as_ns() as f64 / 1e9;
    let header = [
        "policy",
        "duration_ns",
        "busy_ns",
        "do_schedule_calls",
        "do_schedule_per_s",
        "context_switches",
        "context_switches_per_s",
        "overhead_ns",
        "overhead_share",
        "deadline_miss_ratio",
    ];
    let mut rows = Vec::new();
    let mut table = Vec::new();
    let mut calls = Vec::new();
    let mut switches = Vec::new();
    let mut names = Vec::new();
    for (policy, result) in policies.iter().zip(&outcome.results) {
        let Some(r) = result else { continue };
        let p = &r.pcpus[0];
        let share = p.overhead_ns as f64 / r.duration_ns as f64;
        rows.push(vec![
            policy.to_string(),
            r.duration_ns.to_string(),
            p.busy_ns.to_string(),
            p.do_schedule_calls.to_string(),
            decimal(p.do_schedule_calls as f64 / seconds, 1),
            p.context_switches.to_string(),
            decimal(p.context_switches as f64 / seconds, 1),
            p.overhead_ns.to_string(),
            decimal(share, 6),
            decimal(r.deadline_miss_ratio, 6),
        ]);
        table.push(vec![
            policy.to_string(),
            p.do_schedule_calls.to_string(),
            decimal(p.do_schedule_calls as f64 / seconds, 0),
            p.context_switches.to_string(),
            decimal(p.context_switches as f64 / seconds, 0),
            format!("{}%", percent(share, 3)),
            format!("{}%", percent(r.deadline_miss_ratio, 2)),
        ]);
        out.finding(format!(
            "{policy}: {} do_schedule/s, {} context switches/s",
            decimal(p.do_schedule_calls as f64 / seconds, 0),
            decimal(p.context_switches as f64 / seconds, 0)
        ));
        names.push(policy.to_string());
        calls.push(p.do_schedule_calls as f64 / seconds);
        switches.push(p.context_switches as f64 / seconds);
    }
    check_findings(out, &names, &calls);
    out.csv(
        "overhead.csv",
        "scheduler activity per policy",
        &header,
        &rows,
    )?;
    out.table(
        "overhead",
        "Scheduler activity per policy (simulated)",
        &[
            "policy",
            "do_schedule calls",
            "per second",
            "context switches",
            "per second",
            "CPU lost to overhead",
            "deadline miss ratio",
        ],
        table,
    )?;
    let chart = BarChart {
        title: "rtxen-overhead: scheduler activity per policy (even shares, α = 70 %)".to_string(),
        x_label: "policy".to_string(),
        y_label: "events per simulated second (1/s)".to_string(),
        categories: names,
        series: vec![
            ("do_schedule calls".to_string(), calls),
            ("context switches".to_string(), switches),
        ],
        legend: LegendAt::UpperRight,
    };
    out.figure(
        "overhead",
        &Chart::Bar(chart),
        &format!(
            "do_schedule calls and context switches per simulated second, {duration} per \
             policy, seed {seed}, {}; credit = Xen 4.0's 10 ms tick and 30 ms slice, \
             credit-1ms = 1 ms tick and slice.",
            phasing.short()
        ),
    )?;
    out.against_published(
        &[
            "The 2011 overhead experiment's setting (even shares, α = 70 %, five tasks per \
             domain, 10 s) and its counts: do_schedule calls and context switches per policy, \
             each policy rescheduling when Xen's would — the RT-Xen servers at every 1 ms \
             quantum and on events, Credit at the end of its slice, on block and on a \
             preempting wake (its tick only charges), SEDF on events only."
                .to_string(),
        ],
        &[
            "No times: the paper measured the time spent in do_schedule and in context \
             switches on real hardware; a simulator has no such time of its own (rtvmm's host \
             executor is where it is measured). With --overhead, modelled costs give the CPU \
             share lost."
                .to_string(),
            RTXEN_REPLENISHMENT.to_string(),
            "Credit runs twice: at Xen 4.0's defaults (credit: 10 ms tick, 30 ms slice) and at \
             the papers' 1 ms setting (credit-1ms: 1 ms tick, 1 ms slice)."
                .to_string(),
            format!(
                "Domains boot at {}; the paper does not say when its domains' periods began.",
                phasing.short()
            ),
        ],
    );

    Ok(())
}

/// Nanoseconds as microseconds with two decimals.
fn us(ns: u64) -> String {
    decimal(ns as f64 / 1e3, 2)
}

/// Nanoseconds as milliseconds with three decimals.
fn ms(ns: u64) -> String {
    decimal(ns as f64 / 1e6, 3)
}

/// `rtxen-overhead --host`: the runs in real time; the overhead table from the executor's
/// own measurements.
fn run_on_host(out: &mut Output, host: &dyn RealTime) -> Result<(), ExperimentError> {
    let options = out.options;
    let duration = options.duration_or(Nanos::from_secs(10), Nanos::from_secs(1));
    let seed = options.seed;
    let (policies, domains, phasing) = setup(out, "real time per run", duration)?;
    let machine_line = format!("{} · {}", HostInfo::probe().describe(), host.describe());
    out.param("driver", format!("host executor ({machine_line})"));
    out.param(
        "overhead model",
        "none: the costs are measured on this machine, not modelled",
    );
    record_offsets(out, phasing, &[("even-700".to_string(), domains.clone())])?;
    let name = |p: &RunPolicy| format!("rtxen-overhead-{p}");
    let outcome = out.sweep("rtxen-overhead --host", &policies, name, |policy| {
        let system = build_system_with(
            &domains,
            &policy.config,
            rtxen_machine(Nanos::from_ms(1), Overheads::default()),
        )?;
        options
            .driver
            .run(&system, &name(policy), seed, duration, &options.cancel)
    })?;

    let mut rows = Vec::new();
    let mut overhead = Vec::new();
    let mut conditions = Vec::new();
    let mut names = Vec::new();
    let mut series: [Vec<f64>; 3] = Default::default();
    let mut all_real_time = true;
    for (policy, result) in policies.iter().zip(&outcome.results) {
        let Some(r) = result else { continue };
        let Some(h) = &r.host else {
            return Err(ExperimentError::Host {
                run: Some(name(policy)),
                message: "the run came back without the executor's measurements".into(),
                refused: false,
            });
        };
        all_real_time &= h.real_time;
        let p = &r.pcpus[0];
        let (ds, sw, late) = (&h.do_schedule_ns, &h.switch_ns, &h.tick_lateness_ns);
        rows.push(vec![
            policy.to_string(),
            r.source.clone(),
            h.real_time.to_string(),
            r.duration_ns.to_string(),
            h.cpu.to_string(),
            h.enforce.clone(),
            p.do_schedule_calls.to_string(),
            ds.count.to_string(),
            h.do_schedule_total_ns.to_string(),
            ds.p50.to_string(),
            ds.p99.to_string(),
            ds.max.to_string(),
            p.context_switches.to_string(),
            sw.count.to_string(),
            h.switch_total_ns.to_string(),
            sw.p50.to_string(),
            sw.p99.to_string(),
            sw.max.to_string(),
            late.count.to_string(),
            late.p50.to_string(),
            late.p99.to_string(),
            late.max.to_string(),
            h.scheduler_cpu_ns.to_string(),
            decimal(h.cpu_lost_share, 6),
            h.steal_ns.to_string(),
            h.jobs_lost.to_string(),
            decimal(r.deadline_miss_ratio, 6),
        ]);
        overhead.push(vec![
            policy.to_string(),
            p.do_schedule_calls.to_string(),
            ms(h.do_schedule_total_ns),
            us(ds.p50),
            us(ds.p99),
            us(ds.max),
            sw.count.to_string(),
            ms(h.switch_total_ns),
            us(sw.p50),
            us(sw.p99),
            us(sw.max),
        ]);
        conditions.push(vec![
            policy.to_string(),
            real_time_label(r),
            format!("{}%", percent(h.cpu_lost_share, 3)),
            ms(h.steal_ns),
            us(late.p50),
            us(late.p99),
            us(late.max),
            format!("{}%", percent(r.deadline_miss_ratio, 2)),
            h.jobs_lost.to_string(),
        ]);
        out.finding(format!(
            "{policy} (host): do_schedule {} calls, median {} µs, p99 {} µs, max {} µs; \
             switch median {} µs, p99 {} µs; CPU lost {}%; steal {} ms; tick lateness \
             p99 {} µs",
            p.do_schedule_calls,
            us(ds.p50),
            us(ds.p99),
            us(ds.max),
            us(sw.p50),
            us(sw.p99),
            percent(h.cpu_lost_share, 3),
            ms(h.steal_ns),
            us(late.p99)
        ));
        names.push(policy.to_string());
        series[0].push(ds.p99 as f64 / 1e3);
        series[1].push(sw.p50 as f64 / 1e3);
        series[2].push(sw.p99 as f64 / 1e3);
    }
    let label = if all_real_time {
        "real time on Linux"
    } else {
        "NOT real time (--best-effort: a real-time privilege was missing)"
    };
    out.csv(
        "overhead_host.csv",
        "the executor's measurements per policy (times in ns of the monotonic clock)",
        &HOST_COLUMNS,
        &rows,
    )?;
    out.text(format!(
        "Measured by the host executor, {label}, on {machine_line}. **do_schedule**: the \
         time of each call into the core that ran a policy's `do_schedule` (the decision \
         alone); **context switch**: from the decision instant to the next domain's \
         thread (or the IDLE VCPU) stamping that it runs — stopping one domain, resuming \
         the next and Linux's wake-up, the enforcement a hypervisor's switch does. The \
         do_schedule count is the core's (as Xen counts); a switch counts when its probe \
         was answered."
    ));
    out.table(
        "overhead_host",
        &format!("Scheduler overhead per policy — host executor, {label} ({machine_line})"),
        &[
            "policy",
            "do_schedule calls",
            "total (ms)",
            "median (µs)",
            "p99 (µs)",
            "max (µs)",
            "context switches",
            "total (ms)",
            "median (µs)",
            "p99 (µs)",
            "max (µs)",
        ],
        overhead,
    )?;
    out.table(
        "host_runs",
        &format!("Each run's conditions — {label}"),
        &[
            "policy",
            "timing",
            "CPU lost to the scheduler thread",
            "host steal (ms)",
            "tick lateness median (µs)",
            "p99 (µs)",
            "max (µs)",
            "deadline miss ratio",
            "job records lost",
        ],
        conditions,
    )?;
    let chart = BarChart {
        title: format!("rtxen-overhead --host: measured overhead per policy ({label})"),
        x_label: "policy".to_string(),
        y_label: "time (µs)".to_string(),
        categories: names,
        series: vec![
            (
                "do_schedule p99".to_string(),
                std::mem::take(&mut series[0]),
            ),
            ("switch median".to_string(), std::mem::take(&mut series[1])),
            ("switch p99".to_string(), std::mem::take(&mut series[2])),
        ],
        legend: LegendAt::UpperRight,
    };
    out.figure(
        "overhead_host",
        &Chart::Bar(chart),
        &format!(
            "The host executor's do_schedule p99 and context-switch median and p99 per \
             policy, {duration} of real time each, seed {seed}, {}; {machine_line}.",
            phasing.short()
        ),
    )?;
    out.against_published(
        &[
            "The 2011 overhead table: per policy, the number of do_schedule calls and of \
             context switches and the time they took (total, median, 99th percentile, max), \
             in the overhead experiment's setting (even shares, α = 70 %, five tasks per \
             domain), from real runs of the scheduler."
                .to_string(),
        ],
        &[
            "Where the scheduler runs: the paper timed Xen's scheduler inside the \
             hypervisor on bare hardware; here the same policies run in a SCHED_FIFO 99 \
             thread of a Linux process, and domains are guest processes stopped and resumed \
             by the enforcement backend, so a context switch is a cgroup freeze/thaw (or a \
             priority change, or a signal) and a Linux wake-up, not Xen's context_switch."
                .to_string(),
            "The machine may itself be virtual: the host's steal time and the scheduler's \
             timer lateness are reported for every run; a run with much steal measures the \
             host as much as rtvmm."
                .to_string(),
            RTXEN_REPLENISHMENT.to_string(),
            "Credit runs twice: at Xen 4.0's defaults (credit) and at the papers' 1 ms \
             setting (credit-1ms)."
                .to_string(),
            format!(
                "Domains boot at {}; the paper does not say when its domains' periods began.",
                phasing.short()
            ),
        ],
    );
    Ok(())
}

/// The columns of `overhead_host.csv`.
pub const HOST_COLUMNS: [&str; 27] = [
    "policy",
    "source",
    "real_time",
    "duration_ns",
    "cpu",
    "enforce",
    "do_schedule_calls",
    "do_schedule_timed",
    "do_schedule_total_ns",
    "do_schedule_p50_ns",
    "do_schedule_p99_ns",
    "do_schedule_max_ns",
    "context_switches",
    "switch_timed",
    "switch_total_ns",
    "switch_p50_ns",
    "switch_p99_ns",
    "switch_max_ns",
    "tick_wakeups",
    "tick_lateness_p50_ns",
    "tick_lateness_p99_ns",
    "tick_lateness_max_ns",
    "scheduler_cpu_ns",
    "cpu_lost_share",
    "steal_ns",
    "jobs_lost",
    "deadline_miss_ratio",
];
