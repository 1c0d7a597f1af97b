//! packet-latency — an I/O chain through a driver domain (`docs/experiments.md`, `docs/platform.md`
//! "Events between domains").
//!
//! Procedure: a machine of two pcpus and three domains of one VCPU each: `thin`, `driver`
//! and `guest`. Packets arrive from outside as a seeded Poisson stream (mean gap 10 ms).
//! Each packet makes a chain of three jobs: the driver domain's back-end `rx` handles it
//! (50 µs) and notifies the guest; the guest's front-end `front` answers (100 µs); the
//! driver domain's back-end `tx` sends the reply (50 µs). Each notification is an event
//! channel with a 20 µs delay; waking on it is a VMM wake (under Credit it earns BOOST
//! when the VCPU is UNDER). The back-end tasks have the driver domain's highest priority.
//! The thin and driver domains also run a CPU-bound task (10 ms period) whose utilisation
//! is the load: 0, 25, 50 or 75 % of a pcpu. Measured: the **round-trip latency** of every
//! packet (the reply's finish − the packet's arrival): average, max, standard deviation,
//! and the share of packets handled within 1 ms.
//!
//! Schedulers:
//! - `credit`: one pool of both pcpus under Credit (Xen 4.0 defaults), weight 256 each;
//! - `rtds-partitioned`: RTDS, the driver domain pinned to pcpu 0, `thin` and `guest` to
//!   pcpu 1; every domain at `xl`'s default 4 ms every 10 ms, extratime on;
//! - `rtds-global`: RTDS global EDF over both pcpus, the same parameters.
//!
//! `--duration` sets the run length (default 60 s, about 6,000 packets; `--quick`: 2 s).

use crate::figures::{decimal, percent};
use rtvmm_core::guest::{Arrival, GuestScheduler, TaskSpec};
use rtvmm_core::machine::MachineConfig;
use rtvmm_core::model::{DomainSpec, Placement, VcpuParams};
use rtvmm_core::policy::{CreditConfig, PolicyConfig, RtdsMode};
use rtvmm_core::Nanos;
use rtvmm_system::results::ChainResult;
use rtvmm_system::spec::ChainSpec;
use rtvmm_system::SystemSpec;

use super::Experiment;
use crate::error::ExperimentError;
use crate::plot::{Chart, LineChart, Series};
use crate::report::Output;
use crate::system::simulate;

pub const EXPERIMENT: Experiment = Experiment {
    name: "packet-latency",
    title: "an I/O chain through a driver domain",
    description: "Two pcpus, three domains (thin, driver, guest). Poisson packets (mean gap \
        10 ms) go driver back-end (50 µs) → guest front-end (100 µs) → driver back-end \
        (50 µs), 20 µs event-channel delays; the thin and driver domains carry a CPU-bound \
        load of 0/25/50/75 % of a pcpu. Schedulers: Credit, RTDS partitioned (driver alone \
        on pcpu 0), RTDS global; every RTDS domain at 4 ms / 10 ms with extratime. Shows \
        the round-trip latency per packet: average, max, standard deviation, share within \
        1 ms.",
    run: Some(run),
    host: false,
    draws: None,
};

/// The loads of the thin and driver domains, in percent of a pcpu.
pub const LOADS: [u64; 4] = [0, 25, 50, 75];
/// The mean gap between packets.
pub const PACKET_GAP: Nanos = Nanos::from_ms(10);
/// The event-channel delay of each notification.
pub const EVENT_DELAY: Nanos = Nanos::from_us(20);
/// The load tasks' period.
pub const LOAD_PERIOD: Nanos = Nanos::from_ms(10);

/// The schedulers compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sched {
    Credit,
    RtdsPartitioned,
    RtdsGlobal,
}

impl Sched {
    pub const ALL: [Sched; 3] = [Sched::Credit, Sched::RtdsPartitioned, Sched::RtdsGlobal];

    pub fn name(self) -> &'static str {
        match self {
            Sched::Credit => "credit",
            Sched::RtdsPartitioned => "rtds-partitioned",
            Sched::RtdsGlobal => "rtds-global",
        }
    }
}

/// A back-end or front-end task: triggered by `by`, 1 ms period (its priority under `rm`
/// and its deadline).
fn handler(name: &str, wcet: Nanos, by: Option<(&str, &str)>) -> TaskSpec {
    let mut t = TaskSpec::periodic(name, Nanos::from_ms(1), wcet);
    t.arrival = match by {
        None => Arrival::Poisson {
            mean_gap: PACKET_GAP,
        },
        Some((domain, task)) => Arrival::Triggered {
            by_domain: domain.to_string(),
            by_task: task.to_string(),
            delay: EVENT_DELAY,
        },
    };
    t
}

/// The CPU-bound load task of `percent` % of a pcpu (none at 0).
fn load_task(percent: u64) -> Option<TaskSpec> {
    (percent > 0).then(|| {
        TaskSpec::periodic(
            "load",
            LOAD_PERIOD,
            Nanos(LOAD_PERIOD.as_ns() * percent / 100),
        )
    })
}

/// The system of `sched` with the thin and driver domains loaded `percent` %.
pub fn system(sched: Sched, percent: u64) -> SystemSpec {
    let mut vcpu = VcpuParams::server(Nanos::from_ms(4), Nanos::from_ms(10), 0);
    vcpu.extratime = Some(true);
    let pin = |c: u32| Placement {
        affinity: vec![(sched == Sched::RtdsPartitioned).then(|| vec![c])],
        ..Placement::default()
    };
    let domain = |name: &str, tasks: Vec<TaskSpec>, c: u32| DomainSpec {
        name: name.to_string(),
        vcpu: vcpu.clone(),
        guest: GuestScheduler::Rm,
        tasks,
        placement: pin(c),
    };
    let mut driver = vec![
        handler("rx", Nanos::from_us(50), None),
        handler("tx", Nanos::from_us(50), Some(("guest", "front"))),
    ];
    driver.extend(load_task(percent));
    let domains = vec![
        domain("thin", load_task(percent).into_iter().collect(), 1),
        domain("driver", driver, 0),
        domain(
            "guest",
            vec![handler(
                "front",
                Nanos::from_us(100),
                Some(("driver", "rx")),
            )],
            1,
        ),
    ];
    let policy = match sched {
        Sched::Credit => PolicyConfig::Credit(CreditConfig::default()),
        _ => PolicyConfig::Rtds(RtdsMode::Event),
    };
    let machine = MachineConfig {
        pcpus: 2,
        ..MachineConfig::default()
    };
    SystemSpec {
        domains,
        chains: vec![ChainSpec {
            name: "round-trip".to_string(),
            tasks: vec![
                ("driver".to_string(), "rx".to_string()),
                ("guest".to_string(), "front".to_string()),
                ("driver".to_string(), "tx".to_string()),
            ],
            bounds: vec![Nanos::from_ms(1)],
        }],
        ..SystemSpec::one_pool(machine, policy)
    }
}

struct Point {
    sched: Sched,
    load: u64,
}

fn ms(ns: f64) -> String {
    decimal(ns / 1e6, 3)
}

fn run(out: &mut Output) -> Result<(), ExperimentError> {
    let options = out.options;
    let duration = options.duration_or(Nanos::from_secs(60), Nanos::from_secs(2));
    let seed = options.seed;
    out.param("pcpus", 2);
    out.param(
        "chain",
        "Poisson packets (mean gap 10 ms) → driver/rx 50 µs → guest/front 100 µs → \
         driver/tx 50 µs; 20 µs event-channel delay per notification",
    );
    out.param(
        "load",
        "thin and driver domains: a CPU-bound task every 10 ms of 0/25/50/75 % of a pcpu",
    );
    out.param(
        "schedulers",
        "credit (Xen 4.0 defaults, weight 256), rtds-partitioned (driver on pcpu 0, thin \
         and guest on pcpu 1), rtds-global; RTDS 4 ms / 10 ms, extratime on",
    );
    out.param("simulated time per run", duration);
    let mut points = Vec::new();
    for sched in Sched::ALL {
        for load in LOADS {
            points.push(Point { sched, load });
        }
    }
    let name = |p: &Point| format!("packet-latency-{}-{}", p.sched.name(), p.load);
    let outcome = out.sweep("packet-latency", &points, name, |p| {
        let results = simulate(&system(p.sched, p.load), &name(p), seed, duration)?;
        Ok(results.chains.into_iter().next())
    })?;
    let finished: Vec<(&Point, &ChainResult)> = points
        .iter()
        .zip(&outcome.results)
        .filter_map(|(p, r)| r.as_ref().and_then(|r| r.as_ref()).map(|r| (p, r)))
        .collect();
    let within = |c: &ChainResult| c.within.first().map_or(0.0, |w| w.share);
    let rows: Vec<Vec<String>> = finished
        .iter()
        .map(|(p, c)| {
            vec![
                p.sched.name().to_string(),
                p.load.to_string(),
                c.instances.to_string(),
                ms(c.latency_ns.mean),
                ms(c.latency_ns.max as f64),
                ms(c.latency_std_dev_ns),
                decimal(within(c), 4),
            ]
        })
        .collect();
    out.csv(
        "packet-latency.csv",
        "per scheduler and load: packets answered, round-trip latency mean, max and \
         standard deviation (ms), and the share answered within 1 ms",
        &[
            "scheduler",
            "load_percent",
            "packets",
            "mean_ms",
            "max_ms",
            "std_dev_ms",
            "within_1ms",
        ],
        &rows,
    )?;
    out.table(
        "packet-latency",
        "Round-trip latency per scheduler and load",
        &[
            "scheduler",
            "load %",
            "packets",
            "avg (ms)",
            "max (ms)",
            "std dev (ms)",
            "within 1 ms",
        ],
        rows.iter()
            .zip(&finished)
            .map(|(r, (_, c))| {
                // From the computed share, never from the CSV's rounded figure.
                let mut r = r.clone();
                r[6] = format!("{} %", percent(within(c), 1));
                r
            })
            .collect(),
    )?;
    let series = |f: &dyn Fn(&ChainResult) -> f64| -> Vec<Series> {
        Sched::ALL
            .iter()
            .map(|&s| Series {
                name: s.name().to_string(),
                points: finished
                    .iter()
                    .filter(|(p, _)| p.sched == s)
                    .map(|(p, c)| (p.load as f64, f(c)))
                    .collect(),
            })
            .collect()
    };
    out.figure(
        "packet-latency-mean",
        &Chart::Line(LineChart::new(
            "Round-trip latency, mean",
            "load of the thin and driver domains (% of a pcpu)",
            "mean latency (ms)",
            series(&|c| c.latency_ns.mean / 1e6),
        )),
        "Mean round-trip latency of a packet against the CPU load of the thin and driver \
         domains.",
    )?;
    out.figure(
        "packet-latency-within-1ms",
        &Chart::Line(LineChart::new(
            "Packets answered within 1 ms",
            "load of the thin and driver domains (% of a pcpu)",
            "share within 1 ms (%)",
            series(&|c| within(c) * 100.0),
        )),
        "The share of packets whose round trip took at most 1 ms.",
    )?;
    for (p, c) in &finished {
        out.finding(format!(
            "{} at {} % load: mean {} ms, max {} ms, {} % within 1 ms ({} packets)",
            p.sched.name(),
            p.load,
            ms(c.latency_ns.mean),
            ms(c.latency_ns.max as f64),
            percent(within(c), 1),
            c.instances
        ));
    }
    Ok(())
}
