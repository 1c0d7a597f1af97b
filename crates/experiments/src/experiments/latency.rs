//! latency — cyclictest in a domain, on several pcpus (`docs/experiments.md`, `docs/platform.md`).
//!
//! Procedure: a machine of two pcpus. A "driver" domain runs four timer threads, as
//! `cyclictest -t4` does: periodic tasks of intervals 10, 10.5, 11 and 11.5 ms that each run
//! for a few microseconds per wake-up, all at one priority (guest `fp`, equal priorities:
//! first in, first out, as SCHED_FIFO threads of one priority). Three other domains are
//! either **idle** (no work) or **loaded** (each a CPU-bound busy loop). Measured per
//! thread: the **release-to-start latency** of every wake-up — the time from its timer
//! firing to the thread running — as cyclictest reports it: `Min`, `Act` (the last one),
//! `Avg` and `Max`, in µs.
//!
//! The VMM configurations (issue 12):
//! - `rtds-global`: one pool of both pcpus under RTDS (global EDF), every domain at `xl`'s
//!   default 4 ms every 10 ms, extratime on (current Xen's default);
//! - `rtds-global-400us`: the same, with the driver domain at 400 µs every 400 µs;
//! - `rtds-partitioned`: RTDS with the driver domain pinned alone to pcpu 1 and the other
//!   domains to pcpu 0, each at 4 ms every 10 ms, extratime on;
//! - `credit+rtds`: two cpupools — `Pool-0` of pcpu 0 under Credit (Xen 4.0 defaults,
//!   weight 256, no cap) holding the other domains, and `rt` of pcpu 1 under RTDS holding
//!   the driver domain (4 ms every 10 ms, extratime on).
//!
//! `--duration` sets the run length (default 60 s; `--quick`: 2 s).

use crate::figures::decimal;
use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::guest::{GuestScheduler, TaskSpec};
use rtvmm_core::machine::{MachineConfig, Overheads, PoolSpec};
use rtvmm_core::model::{DomainSpec, Placement, VcpuParams};
use rtvmm_core::policy::{CreditConfig, PolicyConfig, PolicySettings, RtdsMode};
use rtvmm_core::rng::SimRng;
use rtvmm_core::Nanos;
use rtvmm_sim::Simulation;
use rtvmm_system::SystemSpec;

use super::Experiment;
use crate::error::ExperimentError;
use crate::plot::{BarChart, Chart, LegendAt};
use crate::report::Output;
use crate::system::simulate_with;

pub const EXPERIMENT: Experiment = Experiment {
    name: "latency",
    title: "cyclictest in a domain on two pcpus",
    description: "Two pcpus. A driver domain runs four cyclictest-like timer threads \
        (intervals 10, 10.5, 11, 11.5 ms, 10 µs of work each); three other domains idle or \
        run busy loops. VMM set-ups: RTDS global EDF with xl's default 4 ms / 10 ms for \
        every domain; the same with the driver domain at 400 µs / 400 µs; RTDS partitioned \
        (the driver domain pinned alone to pcpu 1); and a Credit pool (pcpu 0, the other \
        domains) beside an RTDS pool (pcpu 1, the driver domain). Extratime on (current \
        Xen's default). Shows each thread's release-to-start latency as cyclictest prints \
        it: Min, Act (last), Avg, Max in µs.",
    run: Some(run),
    host: false,
    draws: None,
};

/// The timer threads' intervals (cyclictest `-t4 -i 10000 -d 500`).
pub const INTERVALS_US: [u64; 4] = [10_000, 10_500, 11_000, 11_500];
/// The work a timer thread does per wake-up.
pub const THREAD_WORK: Nanos = Nanos::from_us(10);
/// The machine's pcpus.
pub const PCPUS: u32 = 2;
/// The other domains.
pub const OTHER_DOMAINS: usize = 3;
/// `xl`'s default RTDS parameters.
pub const XL_BUDGET: Nanos = Nanos::from_ms(4);
pub const XL_PERIOD: Nanos = Nanos::from_ms(10);

/// One VMM set-up of the experiment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setup {
    RtdsGlobal,
    RtdsGlobal400us,
    RtdsPartitioned,
    CreditAndRtds,
}

impl Setup {
    pub const ALL: [Setup; 4] = [
        Setup::RtdsGlobal,
        Setup::RtdsGlobal400us,
        Setup::RtdsPartitioned,
        Setup::CreditAndRtds,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Setup::RtdsGlobal => "rtds-global",
            Setup::RtdsGlobal400us => "rtds-global-400us",
            Setup::RtdsPartitioned => "rtds-partitioned",
            Setup::CreditAndRtds => "credit+rtds",
        }
    }
}

/// The other domains' load.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    Idle,
    Loaded,
}

impl Load {
    pub fn name(self) -> &'static str {
        match self {
            Load::Idle => "idle",
            Load::Loaded => "loaded",
        }
    }
}

/// An RTDS VCPU of `budget` every `period`, extratime on.
fn rtds(budget: Nanos, period: Nanos) -> VcpuParams {
    let mut p = VcpuParams::server(budget, period, 0);
    p.extratime = Some(true);
    p
}

/// A busy loop: one job that never ends within a run (a CPU-bound task).
pub fn busy_loop() -> TaskSpec {
    let forever = Nanos::from_secs(100_000);
    TaskSpec::periodic("busy", forever, forever)
}

/// Each domain's boot instant: its VCPU's first period starts at an offset drawn
/// uniformly in `[0, P)` from the run seed (`docs/experiments.md`, common setting), and its
/// guest's threads start with it. `in_phase` starts every period at 0.
fn boot(domain: &mut DomainSpec, rng: &mut SimRng, in_phase: bool) {
    if in_phase {
        return;
    }
    let offset = Nanos(rng.uniform_u64(0, domain.vcpu.period.as_ns() - 1));
    domain.vcpu.offset = offset;
    for t in &mut domain.tasks {
        t.offset += offset;
    }
}

/// The system of `setup` with the other domains `load`, booted at offsets drawn from
/// `seed` (or in phase).
pub fn system(
    setup: Setup,
    load: Load,
    seed: u64,
    in_phase: bool,
    overheads: Overheads,
) -> SystemSpec {
    let threads = INTERVALS_US
        .iter()
        .enumerate()
        .map(|(i, &us)| {
            let mut t = TaskSpec::periodic(&format!("T{i}"), Nanos::from_us(us), THREAD_WORK);
            // One priority for all, as cyclictest's threads: first in, first out.
            t.priority = 0;
            t
        })
        .collect();
    let (driver_vcpu, driver_pool, driver_pin, others_pin) = match setup {
        Setup::RtdsGlobal => (rtds(XL_BUDGET, XL_PERIOD), None, None, None),
        Setup::RtdsGlobal400us => (
            rtds(Nanos::from_us(400), Nanos::from_us(400)),
            None,
            None,
            None,
        ),
        Setup::RtdsPartitioned => (rtds(XL_BUDGET, XL_PERIOD), None, Some(1), Some(0)),
        Setup::CreditAndRtds => (rtds(XL_BUDGET, XL_PERIOD), Some("rt"), None, None),
    };
    let placement = |pool: Option<&str>, pin: Option<u32>| Placement {
        pool: pool.map(str::to_string),
        affinity: vec![pin.map(|c| vec![c])],
        ..Placement::default()
    };
    let mut domains = vec![DomainSpec {
        name: "driver".to_string(),
        vcpu: driver_vcpu,
        guest: GuestScheduler::Fp,
        tasks: threads,
        placement: placement(driver_pool, driver_pin),
    }];
    for i in 0..OTHER_DOMAINS {
        let mut vcpu = rtds(XL_BUDGET, XL_PERIOD);
        vcpu.weight = rtvmm_core::model::DEFAULT_WEIGHT;
        domains.push(DomainSpec {
            name: format!("vm{}", i + 1),
            vcpu,
            guest: GuestScheduler::Rm,
            tasks: match load {
                Load::Idle => Vec::new(),
                Load::Loaded => vec![busy_loop()],
            },
            placement: placement(None, others_pin),
        });
    }
    let mut rng = SimRng::new(seed);
    for d in &mut domains {
        boot(d, &mut rng, in_phase);
    }
    let rtds_config = PolicyConfig::Rtds(RtdsMode::Event);
    let pools = match setup {
        Setup::CreditAndRtds => vec![
            PoolSpec::new(
                PoolSpec::DEFAULT_NAME,
                CpuSet::one(0),
                PolicyConfig::Credit(CreditConfig::default()),
            ),
            PoolSpec::new("rt", CpuSet::one(1), rtds_config.clone()),
        ],
        _ => vec![PoolSpec::new(
            PoolSpec::DEFAULT_NAME,
            CpuSet::first(PCPUS),
            rtds_config,
        )],
    };
    SystemSpec {
        machine: MachineConfig {
            pcpus: PCPUS,
            overheads,
            ..MachineConfig::default()
        },
        pools,
        policy_settings: PolicySettings::default(),
        domains,
        changes: Vec::new(),
        chains: Vec::new(),
    }
}

/// One thread's latencies, as cyclictest prints them.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ThreadLatency {
    pub thread: usize,
    pub interval: Nanos,
    /// Wake-ups counted (jobs that started).
    pub count: u64,
    pub min: Nanos,
    /// The last one.
    pub act: Nanos,
    pub avg: f64,
    pub max: Nanos,
}

impl ThreadLatency {
    /// cyclictest's line: `T: 0 (driver/T0) P:0 I:10000 C:   1000 Min:   3 Act:   5 Avg:
    /// 4 Max:   17` (times in µs, rounded down as cyclictest's are whole µs).
    pub fn cyclictest_line(&self) -> String {
        let us = |t: Nanos| t.as_ns() / 1_000;
        format!(
            "T:{:2} ({:>9}) P: 0 I:{} C:{:7} Min:{:7} Act:{:5} Avg:{:5} Max:{:8}",
            self.thread,
            format!("driver/T{}", self.thread),
            us(self.interval),
            self.count,
            us(self.min),
            us(self.act),
            (self.avg / 1_000.0).round() as u64,
            us(self.max)
        )
    }
}

/// The release-to-start latencies of the driver domain's threads (domain 0) in `sim`:
/// every job that started, in release order.
pub fn thread_latencies(sim: &Simulation) -> Vec<ThreadLatency> {
    let run = &sim.domains()[0];
    let mut out = Vec::new();
    for (thread, spec) in run.spec.tasks.iter().enumerate() {
        let mut started: Vec<(Nanos, Nanos)> = run.finished[thread]
            .iter()
            .filter_map(|j| j.first_start.map(|s| (j.release, s - j.release)))
            .collect();
        started.extend(
            sim.pending_jobs(0)
                .filter(|(t, _)| *t == thread)
                .filter_map(|(_, j)| j.first_start.map(|s| (j.release, s - j.release))),
        );
        started.sort();
        let lat: Vec<Nanos> = started.iter().map(|&(_, l)| l).collect();
        let count = lat.len() as u64;
        let sum: u128 = lat.iter().map(|l| l.as_ns() as u128).sum();
        out.push(ThreadLatency {
            thread,
            interval: spec.period,
            count,
            min: lat.iter().copied().min().unwrap_or_default(),
            act: lat.last().copied().unwrap_or_default(),
            avg: if count == 0 {
                0.0
            } else {
                sum as f64 / count as f64
            },
            max: lat.iter().copied().max().unwrap_or_default(),
        });
    }
    out
}

struct Point {
    setup: Setup,
    load: Load,
}

fn run(out: &mut Output) -> Result<(), ExperimentError> {
    let options = out.options;
    let duration = options.duration_or(Nanos::from_secs(60), Nanos::from_secs(2));
    let seed = options.seed;
    let in_phase = options.in_phase;
    let overheads = options.overheads.unwrap_or_default();
    out.param("pcpus", PCPUS);
    out.param(
        "boot",
        if in_phase {
            "in phase: every VCPU's first period starts at 0".to_string()
        } else {
            "each VCPU's first period (and its guest) starts at an offset drawn uniformly in \
             [0, P) from the seed"
                .to_string()
        },
    );
    out.param("overheads", crate::options::describe_overheads(&overheads));
    out.param(
        "driver domain",
        "four timer threads, intervals 10, 10.5, 11, 11.5 ms, 10 µs of work per wake-up, \
         one priority (guest fp, first in first out), one VCPU",
    );
    out.param(
        "other domains",
        "three, one VCPU each: idle (no work) or loaded (a busy loop)",
    );
    out.param(
        "set-ups",
        "rtds-global (every domain 4 ms / 10 ms), rtds-global-400us (driver 400 µs / \
         400 µs), rtds-partitioned (driver pinned alone to pcpu 1, others to pcpu 0), \
         credit+rtds (Pool-0: pcpu 0 under Credit, Xen 4.0 defaults, weight 256, with the \
         other domains; rt: pcpu 1 under RTDS with the driver domain); RTDS extratime on",
    );
    out.param("simulated time per run", duration);
    out.param(
        "latency",
        "release-to-start: from a thread's timer firing to the thread running (µs, \
         cyclictest's Min/Act/Avg/Max; Act is the last wake-up)",
    );
    let mut points = Vec::new();
    for setup in Setup::ALL {
        for load in [Load::Idle, Load::Loaded] {
            points.push(Point { setup, load });
        }
    }
    let name = |p: &Point| format!("latency-{}-{}", p.setup.name(), p.load.name());
    let outcome = out.sweep("latency", &points, name, |p| {
        let system = system(p.setup, p.load, seed, in_phase, overheads);
        let (_, threads) = simulate_with(&system, &name(p), seed, duration, thread_latencies)?;
        Ok(threads)
    })?;
    let finished: Vec<(&Point, &Vec<ThreadLatency>)> = points
        .iter()
        .zip(&outcome.results)
        .filter_map(|(p, r)| r.as_ref().map(|r| (p, r)))
        .collect();

    let mut rows = Vec::new();
    let mut text = String::new();
    for (p, threads) in &finished {
        text.push_str(&format!(
            "# {} / other domains {}\n",
            p.setup.name(),
            p.load.name()
        ));
        for t in threads.iter() {
            text.push_str(&t.cyclictest_line());
            text.push('\n');
            rows.push(vec![
                p.setup.name().to_string(),
                p.load.name().to_string(),
                t.thread.to_string(),
                (t.interval.as_ns() / 1_000).to_string(),
                t.count.to_string(),
                decimal(t.min.as_ns() as f64 / 1e3, 3),
                decimal(t.act.as_ns() as f64 / 1e3, 3),
                decimal(t.avg / 1e3, 3),
                decimal(t.max.as_ns() as f64 / 1e3, 3),
            ]);
        }
    }
    out.csv(
        "latency.csv",
        "per set-up, load of the other domains and thread: interval, wake-ups, and the \
         release-to-start latency's min, last (act), mean and max (µs)",
        &[
            "setup",
            "load",
            "thread",
            "interval_us",
            "count",
            "min_us",
            "act_us",
            "avg_us",
            "max_us",
        ],
        &rows,
    )?;
    out.text(format!(
        "As `cyclictest` prints it:\n\n```text\n{text}```\n"
    ));
    let table_rows = finished
        .iter()
        .map(|(p, threads)| {
            let max = threads.iter().map(|t| t.max).max().unwrap_or_default();
            let count: u64 = threads.iter().map(|t| t.count).sum();
            let sum: f64 = threads.iter().map(|t| t.avg * t.count as f64).sum();
            let min = threads.iter().map(|t| t.min).min().unwrap_or_default();
            vec![
                p.setup.name().to_string(),
                p.load.name().to_string(),
                count.to_string(),
                decimal(min.as_ns() as f64 / 1e3, 0),
                decimal(
                    if count == 0 {
                        0.0
                    } else {
                        sum / count as f64 / 1e3
                    },
                    0,
                ),
                decimal(max.as_ns() as f64 / 1e3, 0),
            ]
        })
        .collect();
    out.table(
        "latency",
        "Release-to-start latency over the four threads (µs)",
        &["set-up", "other domains", "wake-ups", "min", "avg", "max"],
        table_rows,
    )?;
    let categories: Vec<String> = Setup::ALL.iter().map(|s| s.name().to_string()).collect();
    let mut series = Vec::new();
    for load in [Load::Idle, Load::Loaded] {
        let values = Setup::ALL
            .iter()
            .map(|&s| {
                finished
                    .iter()
                    .find(|(p, _)| p.setup == s && p.load == load)
                    .map(|(_, th)| {
                        th.iter().map(|t| t.max).max().unwrap_or_default().as_ns() as f64 / 1e3
                    })
                    .unwrap_or(0.0)
            })
            .collect();
        series.push((format!("other domains {}", load.name()), values));
    }
    out.figure(
        "latency-max",
        &Chart::Bar(BarChart {
            title: "Largest release-to-start latency of the driver threads".into(),
            x_label: "VMM set-up".into(),
            y_label: "max latency (µs)".into(),
            categories,
            series,
            legend: LegendAt::UpperRight,
        }),
        "The largest release-to-start latency over the four timer threads, per set-up, with \
         the other domains idle and loaded.",
    )?;
    for (p, threads) in &finished {
        let max = threads.iter().map(|t| t.max).max().unwrap_or_default();
        out.finding(format!(
            "{} with the other domains {}: largest latency {} µs over {} wake-ups",
            p.setup.name(),
            p.load.name(),
            decimal(max.as_ns() as f64 / 1e3, 0),
            threads.iter().map(|t| t.count).sum::<u64>()
        ));
    }
    Ok(())
}
