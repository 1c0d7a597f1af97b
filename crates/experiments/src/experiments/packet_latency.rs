//! packet-latency — an I/O chain through a driver domain (`docs/experiments.md`,
//! "packet-latency"; `docs/platform.md`, "Events between domains").
//!
//! # Design note
//! - **Machine**: two pcpus; three domains of one VCPU each, `thin`, `driver` and
//!   `guest`, booted together at 0.
//! - **A ping** arrives from outside; the driver domain's back-end `rx` handles it
//!   ([`RX_WORK`]) and notifies the guest; the guest's front-end `front` answers
//!   ([`FRONT_WORK`]) and notifies the driver domain; its back-end `tx` sends the reply
//!   ([`TX_WORK`]). Each notification is an event channel of [`EVENT_DELAY`]; waking on it
//!   is a VMM wake (under Credit, BOOST when the VCPU is UNDER). The handlers have their
//!   domain's highest priority (guest `rm`, 1 ms period, against a load task that never
//!   ends). Measured per ping: the round trip, from the ping's arrival to the reply's
//!   `tx` finishing.
//! - **Pings**: one every [`PING_INTERVAL`] (`ping -i 0.2`), each displaced by a draw
//!   uniform in `[0, PING_JITTER)` from the seed: the sender's clock is not the machine's,
//!   and 30 ms is a multiple of every period, slice and accounting period here, so each
//!   ping meets the machine's timers at a uniformly drawn phase. Every configuration sees
//!   the same ping times; the short run's pings are the long run's first ones.
//! - **Loads** ([`Load`]), as published: idle; `thin` CPU-bound ("30 %"); `thin` and
//!   `driver` CPU-bound ("60 %"); all three CPU-bound ("75 %"). CPU-bound is a task that
//!   never ends, below the handlers.
//! - **Schedulers** ([`Sched`]), set as `xl` commands at time 0 ([`Sched::xl`]): Credit at
//!   its defaults (10 ms tick, 30 ms slice, weight 256 each); RTDS partitioned (driver
//!   200 µs / 200 µs alone on pcpu 1; guest 400 µs / 400 µs and thin with a 1 ms period on
//!   pcpu 0); RTDS global, the same parameters in one pool. The guest's reservation is its
//!   whole pcpu, so the thin domain's is what is left: nothing, so it gets RTDS's least
//!   budget, 10 µs, and runs on as extratime (current RTDS's default), below every VCPU
//!   with budget — preempted by the others, given the rest of its pcpu.
//!
//! # Wake delivery
//! [`machine`] is the one place the machine is chosen, with a [`Delivery`]
//! ([`super::multicore_common`], shared with latency); [`system`] takes it. Every
//! configuration runs without wake delivery, as it always did, and again with this
//! machine's measured one (the `this-machine` preset): each of a ping's three releases
//! (`rx` on the ping, `front` and `tx` on their event channels) then reaches its handler a
//! drawn delivery later, so a round trip takes at least [`FLOOR`] plus three of the
//! preset's least delay ([`floor`]). Those runs and figures are named apart
//! (`…-this-machine`); the figures without delivery keep their names and bytes.

use crate::figures::{decimal, percent};
use rtvmm_core::guest::{Arrival, GuestScheduler, TaskSpec};
use rtvmm_core::machine::MachineConfig;
use rtvmm_core::model::{DomainSpec, Placement, VcpuParams};
use rtvmm_core::policy::{CreditConfig, PolicyConfig, RtdsMode};
use rtvmm_core::rng::SimRng;
use rtvmm_core::Nanos;
use rtvmm_system::spec::ChainSpec;
use rtvmm_system::stats::EXACT_SAMPLES;
use rtvmm_system::SystemSpec;

use super::multicore_common::{xl_at_zero, Delivery};
use super::Experiment;
use crate::error::ExperimentError;
use crate::plot::{cdf_points, Chart, LegendAt, LineChart, Series};
use crate::report::Output;
use crate::system::simulate_with;

pub const EXPERIMENT: Experiment = Experiment {
    name: "packet-latency",
    title: "an I/O chain through a driver domain",
    description: "Two pcpus, three domains of one VCPU (thin, driver, guest). A ping goes \
        driver back-end (50 µs) → guest front-end (100 µs) → driver back-end (50 µs), 20 µs \
        event-channel delays; 100 pings per configuration and a 10,000-ping run, one a \
        200 ms at a drawn phase. Loads as published: idle, thin CPU-bound (\"30 %\"), thin \
        and driver (\"60 %\"), all three (\"75 %\"). Schedulers: Credit at its defaults, \
        RTDS partitioned (driver 200 µs / 200 µs alone on pcpu 1; guest 400 µs / 400 µs and \
        thin with a 1 ms period on pcpu 0), RTDS global with the same parameters. Every \
        configuration runs with no wake delivery and again with this machine's measured one. \
        Shows the round trip's average, max, standard deviation, share within 1 ms and CDF.",
    run: Some(run),
    host: false,
    draws: None,
};

/// The machine's pcpus.
pub const PCPUS: u32 = 2;
/// Pings per configuration, as published, and the long run's.
pub const PINGS: u64 = 100;
pub const LONG_PINGS: u64 = 10_000;
/// The short and the long run's pings with `--quick`.
pub const QUICK_PINGS: u64 = 5;
pub const QUICK_LONG_PINGS: u64 = 10;
/// The interval between pings: `ping -i 0.2`, the least an ordinary user may ask for —
/// far above any round trip here (a check says so), and a fifth of the simulated time
/// `ping`'s default 1 s would take, where CPU-bound domains keep the simulator busy.
pub const PING_INTERVAL: Nanos = Nanos::from_ms(200);
/// Each ping's displacement is drawn in `[0, PING_JITTER)`: a multiple of every period,
/// slice and accounting period of the machine (200 µs, 400 µs, 1 ms, 10 ms, 30 ms).
pub const PING_JITTER: Nanos = Nanos::from_ms(30);
/// The handlers' work per ping.
pub const RX_WORK: Nanos = Nanos::from_us(50);
pub const FRONT_WORK: Nanos = Nanos::from_us(100);
pub const TX_WORK: Nanos = Nanos::from_us(50);
/// The event-channel delay of each notification.
pub const EVENT_DELAY: Nanos = Nanos::from_us(20);
/// The bound whose share is reported.
pub const WITHIN: Nanos = Nanos::from_ms(1);

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

    /// The `xl` commands run at time 0, in order (times in µs).
    pub fn xl(self) -> &'static [&'static str] {
        const RTDS: [&str; 3] = [
            "sched-rtds -d driver -p 200 -b 200",
            "sched-rtds -d guest -p 400 -b 400",
            "sched-rtds -d thin -p 1000 -b 10",
        ];
        const PARTITIONED: [&str; 6] = [
            "vcpu-pin thin all 0",
            "vcpu-pin guest all 0",
            "vcpu-pin driver all 1",
            RTDS[0],
            RTDS[1],
            RTDS[2],
        ];
        match self {
            Sched::Credit => &[],
            Sched::RtdsPartitioned => &PARTITIONED,
            Sched::RtdsGlobal => &RTDS,
        }
    }
}

/// Which domains are CPU-bound.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    Idle,
    Thin,
    ThinDriver,
    All,
}

impl Load {
    pub const ALL: [Load; 4] = [Load::Idle, Load::Thin, Load::ThinDriver, Load::All];

    pub fn name(self) -> &'static str {
        match self {
            Load::Idle => "idle",
            Load::Thin => "thin",
            Load::ThinDriver => "thin+driver",
            Load::All => "all",
        }
    }

    /// The published name of the load (its total CPU load).
    pub fn published(self) -> &'static str {
        match self {
            Load::Idle => "idle",
            Load::Thin => "30 %",
            Load::ThinDriver => "60 %",
            Load::All => "75 %",
        }
    }

    /// The published load as a number, for the x axis (0 for idle).
    pub fn percent(self) -> u64 {
        match self {
            Load::Idle => 0,
            Load::Thin => 30,
            Load::ThinDriver => 60,
            Load::All => 75,
        }
    }

    /// Whether `domain` is CPU-bound under this load.
    pub fn busy(self, domain: &str) -> bool {
        match self {
            Load::Idle => false,
            Load::Thin => domain == "thin",
            Load::ThinDriver => domain == "thin" || domain == "driver",
            Load::All => true,
        }
    }
}

/// One configuration, its wake delivery and the number of pings it runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    pub sched: Sched,
    pub load: Load,
    pub delivery: Delivery,
    pub pings: u64,
}

impl Config {
    /// The run's name in progress lines and shards (`…-this-machine` with delivery).
    pub fn key(self) -> String {
        self.delivery.suffixed(&format!(
            "packet-latency-{}-{}-{}",
            self.sched.name(),
            self.load.name(),
            self.pings
        ))
    }

    /// `credit, load 75 %` (`…, delivery this-machine` with delivery).
    pub fn label(self) -> String {
        format!(
            "{}, load {}{}",
            self.sched.name(),
            self.load.published(),
            match self.delivery {
                Delivery::None => String::new(),
                d => format!(", delivery {}", d.name()),
            }
        )
    }
}

/// The machine every configuration runs on: two pcpus and `delivery`'s wake delivery, the
/// defaults otherwise.
pub fn machine(delivery: Delivery) -> MachineConfig {
    MachineConfig {
        pcpus: PCPUS,
        wake_delivery: delivery.setting(),
        ..MachineConfig::default()
    }
}

/// The arrival of each of `pings` pings: the k-th (from 1) at `k·PING_INTERVAL` plus a
/// draw in `[0, PING_JITTER)`, drawn in order from `seed`, so that a shorter run's pings
/// are a longer one's first.
pub fn ping_times(seed: u64, pings: u64) -> Vec<Nanos> {
    let mut rng = SimRng::new(seed);
    (1..=pings)
        .map(|k| Nanos(k * PING_INTERVAL.as_ns() + rng.uniform_u64(0, PING_JITTER.as_ns() - 1)))
        .collect()
}

/// How long a run of `pings` pings lasts: one interval past the last ping's slot.
pub fn run_length(pings: u64) -> Nanos {
    Nanos((pings + 1) * PING_INTERVAL.as_ns())
}

/// A back-end or front-end task of `work`, released by `arrival`; its 1 ms period puts it
/// above the load under `rm`, and is its deadline.
fn handler(name: &str, work: Nanos, arrival: Arrival) -> TaskSpec {
    let mut t = TaskSpec::periodic(name, Nanos::from_ms(1), work);
    t.arrival = arrival;
    t
}

fn triggered(domain: &str, task: &str) -> Arrival {
    Arrival::Triggered {
        by_domain: domain.to_string(),
        by_task: task.to_string(),
        delay: EVENT_DELAY,
    }
}

/// A CPU-bound task: one job that never ends within a run.
fn busy_loop() -> TaskSpec {
    let forever = Nanos::from_secs(100_000);
    TaskSpec::periodic("load", forever, forever)
}

/// The system of `sched` under `load` on `machine`, with pings at `pings`.
pub fn system(sched: Sched, load: Load, pings: Vec<Nanos>, machine: MachineConfig) -> SystemSpec {
    // Every domain starts at xl's defaults; the commands set the rest.
    let domain = |name: &str, mut tasks: Vec<TaskSpec>| {
        if load.busy(name) {
            tasks.push(busy_loop());
        }
        DomainSpec {
            name: name.to_string(),
            vcpu: VcpuParams::server(Nanos::from_ms(4), Nanos::from_ms(10), 0),
            guest: GuestScheduler::Rm,
            tasks,
            placement: Placement::default(),
        }
    };
    let domains = vec![
        domain("thin", Vec::new()),
        domain(
            "driver",
            vec![
                handler("rx", RX_WORK, Arrival::AperiodicTimes(pings)),
                handler("tx", TX_WORK, triggered("guest", "front")),
            ],
        ),
        domain(
            "guest",
            vec![handler("front", FRONT_WORK, triggered("driver", "rx"))],
        ),
    ];
    let policy = match sched {
        Sched::Credit => PolicyConfig::Credit(CreditConfig::default()),
        _ => PolicyConfig::Rtds(RtdsMode::Event),
    };
    let changes = xl_at_zero(sched.xl());
    SystemSpec {
        domains,
        changes,
        chains: vec![ChainSpec {
            name: "round-trip".to_string(),
            tasks: vec![
                ("driver".to_string(), "rx".to_string()),
                ("guest".to_string(), "front".to_string()),
                ("driver".to_string(), "tx".to_string()),
            ],
            bounds: vec![WITHIN],
        }],
        ..SystemSpec::one_pool(machine, policy)
    }
}

/// Runs `config` on `machine` (its delivery's, [`machine`]) with the first `config.pings`
/// of `times`, and returns its round trips.
pub fn round_trips(
    config: Config,
    times: &[Nanos],
    machine: &MachineConfig,
    seed: u64,
) -> Result<Pings, ExperimentError> {
    let pings = times[..config.pings as usize].to_vec();
    let system = system(config.sched, config.load, pings, machine.clone());
    let key = config.key();
    let (_, latencies) = simulate_with(&system, &key, seed, run_length(config.pings), |sim| {
        let samples = &sim.chains()[0].stats.latency;
        // At most EXACT_SAMPLES pings (checked by `run`): every value is held.
        debug_assert!(samples.is_exact(), "every round trip is kept");
        let mut v = Vec::with_capacity(samples.count() as usize);
        samples.for_each(|value, count| v.extend(std::iter::repeat_n(value, count as usize)));
        v
    })?;
    Ok(Pings {
        sent: config.pings,
        latencies,
    })
}

/// The round trips of one run.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pings {
    /// Pings sent.
    pub sent: u64,
    /// Each answered ping's round trip (ns), in the order the replies left.
    pub latencies: Vec<u64>,
}

/// The figures of a sample of round trips (ns): computed exactly from the values.
#[derive(Clone, Debug, PartialEq)]
pub struct Stats {
    pub count: u64,
    pub mean_ns: f64,
    pub max_ns: u64,
    /// Population standard deviation.
    pub std_dev_ns: f64,
    /// The share of round trips at or below [`WITHIN`].
    pub within: f64,
}

impl Stats {
    pub fn of(latencies: &[u64]) -> Stats {
        let count = latencies.len() as u64;
        if count == 0 {
            return Stats {
                count,
                mean_ns: 0.0,
                max_ns: 0,
                std_dev_ns: 0.0,
                within: 0.0,
            };
        }
        let n = count as f64;
        let sum: u128 = latencies.iter().map(|&l| l as u128).sum();
        let mean = sum as f64 / n;
        let squares: f64 = latencies
            .iter()
            .map(|&l| (l as f64 - mean) * (l as f64 - mean))
            .sum();
        let within = latencies.iter().filter(|&&l| l <= WITHIN.as_ns()).count();
        Stats {
            count,
            mean_ns: mean,
            max_ns: latencies.iter().copied().max().unwrap_or(0),
            std_dev_ns: (squares / n).sqrt(),
            within: within as f64 / n,
        }
    }
}

/// `ns` in ms, by the crate's rule, 3 places.
fn ms(ns: f64) -> String {
    decimal(ns / 1e6, 3)
}

/// What the run reproduces of the published set-up.
pub const REPRODUCES: &[&str] = &[
    "A ping through a driver domain: a back-end in the driver domain, a front-end in the \
     guest, event channels between them; three domains (thin, driver, guest) on two pcpus.",
    "100 pings per configuration, and a 10,000-ping run of each (`--quick`: 5 and 10; \
     `--duration D`: the long run pings until D).",
    "The published loads: idle; the thin domain CPU-bound (\"30 %\"); the thin and driver \
     domains (\"60 %\"); all three (\"75 %\").",
    "Credit at its defaults (10 ms tick, 30 ms slice), equal weights.",
    "RTDS partitioned: `xl vcpu-pin thin all 0`, `vcpu-pin guest all 0`, `vcpu-pin driver \
     all 1`; driver 200 µs / 200 µs, guest 400 µs / 400 µs, thin with a 1 ms period; RTDS \
     global: the same parameters in one pool of both pcpus.",
    "Per configuration: the round trip's average, max, standard deviation, share within \
     1 ms, and its CDF; each with no wake delivery and with this machine's measured one.",
];

/// Where the run departs from the published set-up, and why.
pub const DEPARTS: &[&str] = &[
    "The thin domain's budget: the source gives it \"the rest of its pcpu\", and the \
     guest's 400 µs / 400 µs reserves all of it, so it has RTDS's least budget (10 µs per \
     1 ms) and runs the rest as extratime (current RTDS's default), below every VCPU with \
     budget.",
    "Handler work (rx 50 µs, front 100 µs, tx 50 µs) and the 20 µs event-channel delay are \
     not given by the source.",
    "Wake delivery (interrupt, hypervisor upcall, guest kernel wake path) is modelled, not \
     run: every configuration runs once without it — the round trip is the handlers', the \
     event channels' and the schedulers' alone — and once with this machine's timer wake \
     latency, measured on real threads by `rtvmm bench wake` (the `this-machine` preset), \
     drawn independently for each of a ping's three wakes. The published machine's own \
     delivery cost is not known; this machine is a VM, whose wake path is slower than bare \
     metal.",
    "Each domain has one VCPU (the source gives no count); domains boot together at 0.",
    "Pings come every 200 ms (`ping -i 0.2`; the source gives no interval, and ping's \
     default 1 s would take five times the simulated time for the same pings), each \
     displaced by a draw in [0, 30 ms) from the seed, so each meets the machine's timers at \
     a drawn phase; the 100-ping run's pings are the 10,000-ping run's first 100.",
    "Credit is Xen 4.0's (no rate limit); RTDS is current Xen's (event-driven, extratime \
     on unless set).",
    "The published load labels (\"30 %\", \"60 %\", \"75 %\") are kept as names: the \
     machine's measured load is not.",
];

fn run(out: &mut Output) -> Result<(), ExperimentError> {
    let options = out.options;
    let seed = options.seed;
    let (short, long) = match (options.duration, options.quick) {
        (Some(d), _) => (PINGS, (d.as_ns() / PING_INTERVAL.as_ns()).saturating_sub(1)),
        (None, true) => (QUICK_PINGS, QUICK_LONG_PINGS),
        (None, false) => (PINGS, LONG_PINGS),
    };
    if long > EXACT_SAMPLES as u64 {
        return Err(ExperimentError::option(
            "--duration",
            format!(
                "at most {} here: the run keeps every round trip exactly, {EXACT_SAMPLES} \
                 pings at most",
                run_length(EXACT_SAMPLES as u64)
            ),
        ));
    }
    out.param("pcpus", PCPUS);
    out.param(
        "domains",
        "thin, driver, guest: one VCPU each, booted together at 0, created at xl's \
         defaults (4 ms / 10 ms, weight 256)",
    );
    out.param(
        "chain",
        "ping → driver/rx 50 µs → 20 µs event channel → guest/front 100 µs → 20 µs event \
         channel → driver/tx 50 µs; round trip = the reply's finish − the ping's arrival",
    );
    out.param(
        "pings",
        format!(
            "{short} and {long} per configuration; one every {PING_INTERVAL} plus a draw in \
             [0, {PING_JITTER}) from the seed (the same pings for every configuration)"
        ),
    );
    out.param(
        "loads",
        "idle; \"30 %\": thin CPU-bound; \"60 %\": thin and driver; \"75 %\": all three (a \
         task that never ends, below the handlers)",
    );
    for sched in Sched::ALL {
        let xl = if sched.xl().is_empty() {
            "no xl commands".to_string()
        } else {
            sched
                .xl()
                .iter()
                .map(|c| format!("`xl {c}`"))
                .collect::<Vec<_>>()
                .join("; ")
        };
        let pool = match sched {
            Sched::Credit => "Credit (10 ms tick, 30 ms slice), weight 256 each",
            _ => "RTDS (event-driven, extratime on)",
        };
        out.param(
            &format!("scheduler {}", sched.name()),
            format!("one pool of both pcpus under {pool}; at 0: {xl}"),
        );
    }
    let measured = Delivery::Measured.setting();
    out.param(
        "wake delivery",
        format!(
            "every configuration twice: none beyond the event-channel delays, and this \
             machine's (the `this-machine` preset of `[machine] wake_delivery`: timer wake \
             latency of a SCHED_FIFO thread measured by `rtvmm bench wake` on the host, mean \
             {} µs, least {} µs, its distribution by quantiles), drawn for each of a ping's \
             three releases (rx on the ping, front and tx on their event channels) and added \
             before the handler's job reaches its guest's scheduler",
            decimal(measured.mean_ns() / 1e3, 1),
            decimal(Delivery::Measured.least().as_ns() as f64 / 1e3, 1),
        ),
    );
    let mut configs = Vec::new();
    for delivery in Delivery::ALL {
        for pings in [short, long] {
            for sched in Sched::ALL {
                for load in Load::ALL {
                    configs.push(Config {
                        sched,
                        load,
                        delivery,
                        pings,
                    });
                }
            }
        }
    }
    let times = ping_times(seed, short.max(long));
    let machines = Delivery::ALL.map(|d| (d, machine(d)));
    let outcome = out.sweep(
        "packet-latency",
        &configs,
        |c| c.key(),
        |c| {
            let (_, machine) = machines
                .iter()
                .find(|(d, _)| *d == c.delivery)
                .expect("a machine per delivery");
            round_trips(*c, &times, machine, seed)
        },
    )?;
    let finished: Vec<(Config, &Pings, Stats)> = configs
        .iter()
        .zip(&outcome.results)
        .filter_map(|(c, r)| r.as_ref().map(|r| (*c, r, Stats::of(&r.latencies))))
        .collect();

    let rows: Vec<Vec<String>> = finished
        .iter()
        .map(|(c, p, s)| {
            vec![
                c.sched.name().to_string(),
                c.load.name().to_string(),
                c.load.published().to_string(),
                c.delivery.name().to_string(),
                p.sent.to_string(),
                s.count.to_string(),
                ms(s.mean_ns),
                ms(s.max_ns as f64),
                ms(s.std_dev_ns),
                decimal(s.within, 4),
            ]
        })
        .collect();
    out.csv(
        "packet-latency.csv",
        "per scheduler, load, wake delivery and run length: pings sent and answered, round \
         trip mean, max and standard deviation (ms), and the share answered within 1 ms",
        &[
            "scheduler",
            "load",
            "published_load",
            "delivery",
            "pings",
            "answered",
            "mean_ms",
            "max_ms",
            "std_dev_ms",
            "within_1ms",
        ],
        &rows,
    )?;
    let mut raw = Vec::new();
    for (c, p, _) in &finished {
        for (i, &l) in p.latencies.iter().enumerate() {
            raw.push(vec![
                c.sched.name().to_string(),
                c.load.name().to_string(),
                c.delivery.name().to_string(),
                c.pings.to_string(),
                (i + 1).to_string(),
                decimal(l as f64 / 1e3, 3),
            ]);
        }
    }
    out.csv(
        "packet-latency-samples.csv",
        "every answered ping's round trip (µs), per scheduler, load, wake delivery and run \
         length, in the order the replies left",
        &[
            "scheduler",
            "load",
            "delivery",
            "pings",
            "reply",
            "round_trip_us",
        ],
        &raw,
    )?;
    out.table(
        "packet-latency",
        "Round trip per scheduler, load, wake delivery and number of pings",
        &[
            "scheduler",
            "load",
            "delivery",
            "pings",
            "avg (ms)",
            "max (ms)",
            "std dev (ms)",
            "within 1 ms",
        ],
        finished
            .iter()
            .map(|(c, p, s)| {
                vec![
                    c.sched.name().to_string(),
                    c.load.published().to_string(),
                    c.delivery.name().to_string(),
                    if s.count == p.sent {
                        p.sent.to_string()
                    } else {
                        format!("{} of {}", s.count, p.sent)
                    },
                    ms(s.mean_ns),
                    ms(s.max_ns as f64),
                    ms(s.std_dev_ns),
                    // From the computed share, never from the CSV's rounded figure.
                    format!("{} %", percent(s.within, 1)),
                ]
            })
            .collect(),
    )?;
    for delivery in Delivery::ALL {
        figures(out, &finished, delivery, long)?;
    }
    for delivery in Delivery::ALL {
        for sched in Sched::ALL {
            for load in Load::ALL {
                let config = |pings| Config {
                    sched,
                    load,
                    delivery,
                    pings,
                };
                let of = |pings| {
                    finished
                        .iter()
                        .find(|(c, _, _)| *c == config(pings))
                        .map(|(_, _, s)| s)
                };
                let say = |s: &Stats| {
                    format!(
                        "{} pings: avg {} ms, max {} ms, {} % within 1 ms",
                        s.count,
                        ms(s.mean_ns),
                        ms(s.max_ns as f64),
                        percent(s.within, 1)
                    )
                };
                let parts: Vec<String> = [of(short), of(long)]
                    .into_iter()
                    .flatten()
                    .map(say)
                    .collect();
                if !parts.is_empty() {
                    out.finding(format!("{}: {}", config(long).label(), parts.join("; ")));
                }
            }
        }
    }
    let pairs: Vec<(&Pings, &Pings)> = finished
        .iter()
        .filter(|(c, _, _)| c.pings == short)
        .filter_map(|(c, p, _)| {
            finished
                .iter()
                .find(|(o, _, _)| *o == Config { pings: long, ..*c })
                .map(|(_, l, _)| (*p, *l))
        })
        .collect();
    for check in checks(
        &finished
            .iter()
            .map(|(c, p, _)| (*c, *p))
            .collect::<Vec<_>>(),
        &pairs,
    ) {
        out.finding(check);
    }
    out.against_published(
        &REPRODUCES.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        &DEPARTS.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
    );
    Ok(())
}

/// The figures of `delivery`'s runs of `long` pings: the CDF per load, and the mean and
/// the share within 1 ms against the load. Without delivery they are the figures the
/// experiment always drew, under the same names; with it, `…-this-machine`.
fn figures(
    out: &mut Output,
    finished: &[(Config, &Pings, Stats)],
    delivery: Delivery,
    long: u64,
) -> Result<(), ExperimentError> {
    let runs = || {
        finished
            .iter()
            .filter(move |(c, _, _)| c.delivery == delivery && c.pings == long)
    };
    // In titles and captions: nothing without delivery (the figures' old text).
    let (title_with, caption_with) = match delivery {
        Delivery::None => (String::new(), String::new()),
        d => (
            format!(", delivery {}", d.name()),
            format!(
                ", with this machine's measured wake delivery ({})",
                d.name()
            ),
        ),
    };
    for load in Load::ALL {
        let series: Vec<Series> = Sched::ALL
            .iter()
            .filter_map(|&sched| {
                let (_, p, _) = runs().find(|(c, _, _)| c.sched == sched && c.load == load)?;
                let values: Vec<f64> = p.latencies.iter().map(|&l| l as f64 / 1e6).collect();
                Some(Series {
                    name: sched.name().to_string(),
                    points: cdf_points(&values, f64::INFINITY, 600),
                })
            })
            .collect();
        if series.is_empty() {
            continue;
        }
        let mut chart = LineChart::new(
            &format!(
                "Round trip CDF, load {}{title_with} ({long} pings)",
                load.published()
            ),
            "round-trip latency (ms)",
            "fraction of pings (CDF)",
            series,
        );
        chart.markers = false;
        chart.y_range = Some((0.0, 1.02));
        chart.legend = LegendAt::LowerRight;
        out.figure(
            &delivery.suffixed(&format!(
                "packet-latency-cdf-{}",
                load.name().replace('+', "-")
            )),
            &Chart::Line(chart),
            &format!(
                "The distribution of the round trip of {long} pings under each scheduler, \
                 load {} ({}){caption_with}.",
                load.published(),
                load.name()
            ),
        )?;
    }
    let by_load = |f: &dyn Fn(&Stats) -> f64| -> Vec<Series> {
        Sched::ALL
            .iter()
            .map(|&s| Series {
                name: s.name().to_string(),
                points: runs()
                    .filter(|(c, _, _)| c.sched == s)
                    .map(|(c, _, st)| (c.load.percent() as f64, f(st)))
                    .collect(),
            })
            .collect()
    };
    out.figure(
        &delivery.suffixed("packet-latency-mean"),
        &Chart::Line(LineChart::new(
            &format!("Round trip, mean{title_with} ({long} pings)"),
            "published load (%; 0 = idle)",
            "mean round trip (ms)",
            by_load(&|s| s.mean_ns / 1e6),
        )),
        &format!(
            "Mean round trip against the published load (0 idle, 30 thin, 60 thin and driver, \
             75 all three CPU-bound){caption_with}."
        ),
    )?;
    out.figure(
        &delivery.suffixed("packet-latency-within-1ms"),
        &Chart::Line(LineChart::new(
            &format!("Pings answered within 1 ms{title_with} ({long} pings)"),
            "published load (%; 0 = idle)",
            "share within 1 ms (%)",
            by_load(&|s| s.within * 100.0),
        )),
        &format!(
            "The share of pings whose round trip took at most 1 ms, against the published \
             load{caption_with}."
        ),
    )?;
    Ok(())
}

/// The least round trip: the three handlers' work and the two event channels, with
/// nothing in the way.
pub const FLOOR: Nanos = Nanos(RX_WORK.0 + FRONT_WORK.0 + TX_WORK.0 + 2 * EVENT_DELAY.0);

/// The wakes of one ping that a wake delivery delays: `rx` on the ping, `front` and `tx`
/// on their event channels.
pub const WAKES_PER_PING: u64 = 3;

/// The least round trip with `delivery`: [`FLOOR`], and each of the ping's
/// [`WAKES_PER_PING`] wakes delayed by the least delivery it can draw.
pub fn floor(delivery: Delivery) -> Nanos {
    FLOOR + Nanos(WAKES_PER_PING * delivery.least().as_ns())
}

/// The experiment's own checks, facts that follow from the set-up whatever the numbers:
/// every ping is answered, none faster than [`FLOOR`] (with delivery, than its
/// [`floor`]), each before the next ping can arrive (so pings never meet); and the two
/// runs of each configuration, whose pings are one list cut at two lengths, answer the
/// pings they share alike (a ping's round trip cannot depend on pings after it).
pub fn checks(finished: &[(Config, &Pings)], pairs: &[(&Pings, &Pings)]) -> Vec<String> {
    let verdict = |ok: bool| if ok { "holds" } else { "does not hold" };
    let answered = finished
        .iter()
        .all(|(_, p)| p.latencies.len() as u64 == p.sent);
    // Whether every round trip of the runs of `delivery` (of every run: `None`) is at
    // least `floor`.
    let above = |delivery: Option<Delivery>, floor: Nanos| {
        finished
            .iter()
            .filter(|(c, _)| delivery.is_none_or(|d| c.delivery == d))
            .all(|(_, p)| p.latencies.iter().all(|&l| l >= floor.as_ns()))
    };
    let floor_held = above(None, FLOOR);
    // With `--duration` the "long" run may be the shorter: compare the pings both have.
    let prefix = pairs.iter().all(|(short, long)| {
        let n = short.latencies.len().min(long.latencies.len());
        short.sent.min(long.sent) as usize == n && long.latencies[..n] == short.latencies[..n]
    });
    let apart = PING_INTERVAL.as_ns() - PING_JITTER.as_ns();
    let alone = finished
        .iter()
        .all(|(_, p)| p.latencies.iter().all(|&l| l < apart));
    let mut out = vec![
        format!("check: every ping answered — {}", verdict(answered)),
        format!(
            "check: every round trip ends before the next ping can arrive ({} ms) — {}",
            apart / 1_000_000,
            verdict(alone)
        ),
        format!(
            "check: no round trip below the handlers' work and event channels ({} µs) — {}",
            FLOOR.as_ns() / 1_000,
            verdict(floor_held)
        ),
    ];
    for delivery in Delivery::ALL {
        if delivery == Delivery::None || finished.iter().all(|(c, _)| c.delivery != delivery) {
            continue;
        }
        let least = floor(delivery);
        out.push(format!(
            "check: with wake delivery {}, no round trip below that and {WAKES_PER_PING} of \
             its least delay ({} µs) — {}",
            delivery.name(),
            decimal(least.as_ns() as f64 / 1e3, 1),
            verdict(above(Some(delivery), least))
        ));
    }
    if !pairs.is_empty() {
        out.push(format!(
            "check: the two runs of each configuration answer the pings they share alike \
             — {}",
            verdict(prefix)
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvmm_core::cpuset::CpuSet;
    use rtvmm_core::machine::Machine;
    use rtvmm_core::model::VcpuId;
    use rtvmm_core::policy::PolicyKind;
    use rtvmm_system::change::Domains;
    use rtvmm_system::Change;

    /// One VCPU as the test sees it: (affinity, budget, period, weight).
    type Seen = (CpuSet, Nanos, Nanos, u32);

    /// Per domain, its VCPUs after the scheduler's `xl` commands ran (the one pool is
    /// asserted here).
    fn layout(sched: Sched) -> Vec<(String, Vec<Seen>)> {
        let system = system(sched, Load::All, ping_times(1, 3), machine(Delivery::None));
        let mut m: Machine = system.machine().unwrap();
        let mut table = Domains::default();
        let joins = system.domains.iter().cloned().map(Change::AddDomain);
        for change in joins.chain(system.changes.iter().map(|c| c.change.clone())) {
            table
                .apply(&mut m, Nanos::ZERO, &change, &system.policy_settings)
                .unwrap();
        }
        assert_eq!(
            m.pools()
                .map(|(n, c, p)| (n.to_string(), c, p.kind()))
                .collect::<Vec<_>>(),
            [(
                "Pool-0".to_string(),
                CpuSet::first(2),
                match sched {
                    Sched::Credit => PolicyKind::Credit,
                    _ => PolicyKind::Rtds,
                }
            )]
        );
        table
            .domains
            .iter()
            .map(|(spec, vcpus, _)| {
                let per = vcpus
                    .iter()
                    .map(|&v: &VcpuId| {
                        let p = m.params(v);
                        (m.placement(v).1, p.budget, p.period, p.weight)
                    })
                    .collect();
                (spec.name.clone(), per)
            })
            .collect()
    }

    fn us(n: u64) -> Nanos {
        Nanos::from_us(n)
    }

    #[test]
    fn rtds_partitioned_is_the_published_layout() {
        let l = layout(Sched::RtdsPartitioned);
        assert_eq!(
            l,
            [
                (
                    "thin".to_string(),
                    vec![(CpuSet::one(0), us(10), us(1_000), 256)]
                ),
                (
                    "driver".to_string(),
                    vec![(CpuSet::one(1), us(200), us(200), 256)]
                ),
                (
                    "guest".to_string(),
                    vec![(CpuSet::one(0), us(400), us(400), 256)]
                ),
            ]
        );
    }

    #[test]
    fn rtds_global_has_the_same_parameters_in_one_pool() {
        let l = layout(Sched::RtdsGlobal);
        let both = CpuSet::first(2);
        assert_eq!(
            l,
            [
                ("thin".to_string(), vec![(both, us(10), us(1_000), 256)]),
                ("driver".to_string(), vec![(both, us(200), us(200), 256)]),
                ("guest".to_string(), vec![(both, us(400), us(400), 256)]),
            ]
        );
    }

    #[test]
    fn credit_has_equal_weights_at_its_defaults() {
        let l = layout(Sched::Credit);
        for (name, vcpus) in &l {
            assert_eq!(vcpus.len(), 1, "{name}");
            assert_eq!((vcpus[0].0, vcpus[0].3), (CpuSet::first(2), 256), "{name}");
        }
        let s = system(
            Sched::Credit,
            Load::Idle,
            Vec::new(),
            machine(Delivery::None),
        );
        let PolicyConfig::Credit(c) = s.policy() else {
            panic!("credit")
        };
        assert_eq!(
            (c.tick, c.slice()),
            (Nanos::from_ms(10), Nanos::from_ms(30))
        );
    }

    #[test]
    fn loads_make_the_published_domains_cpu_bound() {
        let busy = |load| -> Vec<String> {
            system(Sched::Credit, load, Vec::new(), machine(Delivery::None))
                .domains
                .iter()
                .filter(|d| d.tasks.iter().any(|t| t.name == "load"))
                .map(|d| d.name.clone())
                .collect()
        };
        assert!(busy(Load::Idle).is_empty());
        assert_eq!(busy(Load::Thin), ["thin"]);
        assert_eq!(busy(Load::ThinDriver), ["thin", "driver"]);
        assert_eq!(busy(Load::All), ["thin", "driver", "guest"]);
    }

    #[test]
    fn pings_once_a_second_at_drawn_phases_short_runs_are_prefixes() {
        let long = ping_times(5, 1_000);
        assert_eq!(&ping_times(5, 100)[..], &long[..100]);
        for (k, t) in long.iter().enumerate() {
            let slot = Nanos::from_ms(200 * (k as u64 + 1));
            assert!(*t >= slot && *t < slot + PING_JITTER, "{k}: {t}");
        }
        assert_eq!(run_length(100), Nanos::from_ms(20_200));
    }

    /// Round trips 0.3, 0.5, 1.0 and 2.2 ms: mean 1.0 ms; deviations −0.7, −0.5, 0, 1.2
    /// ms, squares 0.49 + 0.25 + 0 + 1.44 = 2.18, / 4 = 0.545, std dev √0.545 =
    /// 0.738241… ms; three of four at or below 1 ms (1 ms itself counts).
    #[test]
    fn statistics_of_a_hand_computed_sample() {
        let s = Stats::of(&[300_000, 500_000, 1_000_000, 2_200_000]);
        assert_eq!(s.count, 4);
        assert_eq!(s.mean_ns, 1_000_000.0);
        assert_eq!(s.max_ns, 2_200_000);
        assert!((s.std_dev_ns - 738_241.2).abs() < 0.1, "{}", s.std_dev_ns);
        assert_eq!(s.within, 0.75);
        assert_eq!(ms(s.std_dev_ns), "0.738");
        assert_eq!(percent(s.within, 1), "75.0");
        assert_eq!(Stats::of(&[]).count, 0);
    }

    /// The CDF of the same sample: a step of 1/4 at each value.
    #[test]
    fn cdf_of_a_hand_computed_sample() {
        let values = [2.2, 0.3, 1.0, 0.5];
        assert_eq!(
            cdf_points(&values, f64::INFINITY, 600),
            [
                (0.3, 0.0),
                (0.3, 0.25),
                (0.5, 0.25),
                (0.5, 0.5),
                (1.0, 0.5),
                (1.0, 0.75),
                (2.2, 0.75),
                (2.2, 1.0)
            ]
        );
    }

    /// With this machine's wake delivery each of a ping's three wakes waits at least the
    /// preset's least delay, so every round trip is at least [`floor`] (about 274 µs), and
    /// the mean grows by about three of the preset's mean; without it, an idle machine
    /// answers every ping in exactly [`FLOOR`], and under load the delivery still adds.
    #[test]
    fn the_measured_wake_delivery_delays_each_of_a_pings_wakes() {
        let seed = 3;
        let times = ping_times(seed, 200);
        let trips = |sched, load, delivery| {
            let config = Config {
                sched,
                load,
                delivery,
                pings: 200,
            };
            round_trips(config, &times, &machine(delivery), seed)
                .unwrap()
                .latencies
        };
        let mean = |v: &[u64]| Stats::of(v).mean_ns;
        let least = floor(Delivery::Measured);
        assert!(
            least >= FLOOR + Nanos::from_us(3 * 5),
            "a measured least delay: {least}"
        );
        let per_ping = 3.0 * Delivery::Measured.setting().mean_ns();
        for sched in Sched::ALL {
            let off = trips(sched, Load::Idle, Delivery::None);
            let on = trips(sched, Load::Idle, Delivery::Measured);
            assert_eq!((off.len(), on.len()), (200, 200), "{sched:?}");
            assert!(
                off.iter().all(|&l| l == FLOOR.as_ns()),
                "{sched:?}: {off:?}"
            );
            assert!(
                on.iter().all(|&l| l >= least.as_ns()),
                "{sched:?}: {:?} < {least}",
                on.iter().min()
            );
            let grown = mean(&on) - mean(&off);
            assert!(
                grown > 0.5 * per_ping && grown < 2.0 * per_ping,
                "{sched:?}: the mean grew by {grown} ns, three deliveries' mean is {per_ping}"
            );
        }
        // Under load (thin CPU-bound under Credit) too.
        let off = trips(Sched::Credit, Load::Thin, Delivery::None);
        let on = trips(Sched::Credit, Load::Thin, Delivery::Measured);
        assert!(on.iter().all(|&l| l >= least.as_ns()));
        assert!(mean(&on) > mean(&off) + 0.5 * per_ping);
    }

    #[test]
    fn runs_are_named_apart_by_delivery() {
        let config = Config {
            sched: Sched::RtdsGlobal,
            load: Load::ThinDriver,
            delivery: Delivery::None,
            pings: 100,
        };
        let measured = Config {
            delivery: Delivery::Measured,
            ..config
        };
        assert_eq!(config.key(), "packet-latency-rtds-global-thin+driver-100");
        assert_eq!(
            measured.key(),
            "packet-latency-rtds-global-thin+driver-100-this-machine"
        );
        assert_eq!(config.label(), "rtds-global, load 60 %");
        assert_eq!(
            measured.label(),
            "rtds-global, load 60 %, delivery this-machine"
        );
        assert!(machine(Delivery::None).wake_delivery.is_off());
        assert_eq!(
            machine(Delivery::Measured).wake_delivery.preset,
            Some("this-machine")
        );
    }

    #[test]
    fn checks_name_what_does_not_hold() {
        let config = Config {
            sched: Sched::Credit,
            load: Load::Idle,
            delivery: Delivery::None,
            pings: 2,
        };
        let good = Pings {
            sent: 2,
            latencies: vec![300_000, 250_000],
        };
        // One ping lost, one too fast, one still out when the next may come.
        let fast = Pings {
            sent: 3,
            latencies: vec![100_000, 180_000_000],
        };
        let all = checks(&[(config, &good)], &[(&good, &good)]);
        assert!(all.iter().all(|c| c.ends_with("— holds")), "{all:?}");
        let bad = checks(&[(config, &fast)], &[(&good, &fast)]);
        assert!(bad.iter().all(|c| c.ends_with("does not hold")), "{bad:?}");
        // With delivery, 250 µs is above the handlers' floor but below the delivered one
        // (274 µs): only that check fails, and only runs with delivery are held to it.
        let delivered = Config {
            delivery: Delivery::Measured,
            ..config
        };
        let both = checks(&[(config, &good), (delivered, &good)], &[]);
        assert_eq!(both.len(), 4, "{both:?}");
        assert!(both[3].starts_with("check: with wake delivery this-machine"));
        assert!(both[3].ends_with("(274.0 µs) — does not hold"), "{both:?}");
        assert!(both[..3].iter().all(|c| c.ends_with("— holds")), "{both:?}");
        let slow = Pings {
            sent: 2,
            latencies: vec![300_000, 280_000],
        };
        let held = checks(&[(config, &good), (delivered, &slow)], &[]);
        assert!(held.iter().all(|c| c.ends_with("— holds")), "{held:?}");
    }
}
