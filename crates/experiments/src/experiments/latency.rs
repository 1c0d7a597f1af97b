//! latency — cyclictest in a domain on two pcpus (`docs/experiments.md`, "latency";
//! `docs/platform.md` for pools, pinning and `xl`).
//!
//! # Design note
//! The published set-up, case by case, and how each piece is expressed here:
//! - **Machine**: two pcpus, 1 ms quantum. Xen 4.5's RTDS: re-decided at least every
//!   quantum ([`RtdsMode::Quantum`]) and **no extratime** (that flag came with Xen 4.10), so
//!   every RTDS VCPU has `extratime = false`.
//! - **Domains**, in boot order: `thin` (the thin control domain), `Domain-D` (the driver
//!   domain) and `guest`, **two VCPUs each**, created at `xl`'s defaults (4 ms every
//!   10 ms; Credit weight 256). Each boots at an offset drawn from the seed (the common
//!   setting in `docs/experiments.md`), or at 0 with `--in-phase`.
//! - **cyclictest** (`-t4 -i 10000 -l 10000`) in `Domain-D`: four timer threads of
//!   intervals 10, 10.5, 11 and 11.5 ms, started together when the domain boots, each
//!   woken exactly [`LOOPS`] times (listed release times, so a thread that is done stops
//!   competing, as the real one exits). Each wake-up does [`THREAD_WORK`] of work. The
//!   threads share one priority (cyclictest without `-p`), first in first out, in a global
//!   guest scheduler over the domain's two VCPUs.
//! - **Load**: `idle` — no domain but `Domain-D` has work; `loaded` — one CPU-bound task
//!   in `thin`. The guest domain is always idle.
//! - **Cases** ([`Case`]): what differs is only the first pool's policy and the `xl`
//!   commands run at time 0 ([`Case::xl`]), written as published and applied through the
//!   same change path a scenario file's `[[event]] xl = …` takes.
//! - **Measured**: each wake-up's release-to-start latency — from the timer's expiry to the
//!   thread running — reported per thread as cyclictest prints it ([`ThreadLatency`]).
//!
//! # Wake delivery
//! [`machine`] is the one place the machine is chosen and [`systems`] builds every run's
//! system from it, each run with its [`Delivery`] (shared with packet-latency,
//! [`super::multicore_common`]): every case runs without wake delivery and again with
//! this machine's measured one (the `this-machine` preset), its runs named apart
//! (`…-this-machine`).

use crate::figures::decimal;
use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::guest::{Arrival, GuestScheduler, GuestSmp, TaskSpec};
use rtvmm_core::machine::{MachineConfig, Overheads, PoolSpec};
use rtvmm_core::model::{DomainSpec, Placement, VcpuParams, DEFAULT_WEIGHT};
use rtvmm_core::policy::{CreditConfig, PolicyConfig, PolicyKind, PolicySettings, RtdsMode};
use rtvmm_core::rng::SimRng;
use rtvmm_core::Nanos;
use rtvmm_sim::Simulation;
use rtvmm_system::SystemSpec;

use super::multicore_common::{xl_at_zero, Delivery};
use super::Experiment;
use crate::error::ExperimentError;
use crate::plot::{BarChart, Chart, LegendAt};
use crate::report::Output;
use crate::system::simulate_with;

pub const EXPERIMENT: Experiment = Experiment {
    name: "latency",
    title: "cyclictest in a domain on two pcpus",
    description: "The published Xen 4.5 RTDS set-up: two pcpus; a thin control domain, a \
        driver domain (Domain-D) and a guest, two VCPUs each; cyclictest in Domain-D (four \
        timer threads, intervals 10, 10.5, 11, 11.5 ms, 10,000 loops). Cases as published: \
        (1) one RTDS pool, every VCPU at Xen 4.5's default 4 ms / 10 ms, the others idle, \
        then the thin domain loaded; (2) the same pool tuned with xl sched-rtds (Domain-D \
        400 µs / 400 µs, guest 5 ms / 10 ms, thin 400 µs / 1 ms); (3) partitioned with xl \
        vcpu-pin (thin and guest on pcpu 0, Domain-D alone on pcpu 1 at 1 ms / 1 ms); \
        (4) Credit keeps pcpu 0 and a new RTDS pool takes pcpu 1 and Domain-D (xl \
        cpupool-create, cpupool-cpu-remove, cpupool-cpu-add, cpupool-migrate, sched-rtds). \
        Shows each thread's release-to-start latency as cyclictest prints it.",
    run: Some(run),
    host: false,
    draws: None,
};

/// The machine's pcpus.
pub const PCPUS: u32 = 2;
/// Every domain's VCPUs.
pub const VCPUS: u32 = 2;
/// The domains, in boot order.
pub const THIN: &str = "thin";
pub const DRIVER: &str = "Domain-D";
pub const GUEST: &str = "guest";
/// The timer threads' intervals (`cyclictest -t4 -i 10000`: 10 ms, then 500 µs apart).
pub const INTERVALS_US: [u64; 4] = [10_000, 10_500, 11_000, 11_500];
/// Wake-ups per thread (`-l 10000`).
pub const LOOPS: u64 = 10_000;
/// Wake-ups per thread with `--quick`.
pub const QUICK_LOOPS: u64 = 200;
/// The work a timer thread does per wake-up (read the clock, note the latency, re-arm).
pub const THREAD_WORK: Nanos = Nanos::from_us(10);
/// Xen 4.5's default RTDS parameters, every new VCPU's.
pub const XEN45_BUDGET: Nanos = Nanos::from_ms(4);
pub const XEN45_PERIOD: Nanos = Nanos::from_ms(10);
/// The name `cpupool-create` gives the RTDS pool of case 4.
pub const REALTIME_POOL: &str = "realtime";

/// One published case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Case {
    /// 1: one RTDS pool of both pcpus at Xen 4.5's defaults.
    GlobalDefaults,
    /// 2: the same pool, tuned with `sched-rtds`.
    GlobalTuned,
    /// 3: RTDS partitioned with `vcpu-pin`.
    Partitioned,
    /// 4: Credit on pcpu 0, an RTDS pool on pcpu 1 for `Domain-D`.
    Pools,
}

impl Case {
    pub const ALL: [Case; 4] = [
        Case::GlobalDefaults,
        Case::GlobalTuned,
        Case::Partitioned,
        Case::Pools,
    ];

    /// The case's number in the published list.
    pub fn number(self) -> u32 {
        match self {
            Case::GlobalDefaults => 1,
            Case::GlobalTuned => 2,
            Case::Partitioned => 3,
            Case::Pools => 4,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Case::GlobalDefaults => "global-defaults",
            Case::GlobalTuned => "global-tuned",
            Case::Partitioned => "partitioned",
            Case::Pools => "pools",
        }
    }

    /// The policy of `Pool-0`, which holds both pcpus and every domain at boot.
    pub fn pool0(self) -> PolicyKind {
        match self {
            Case::Pools => PolicyKind::Credit,
            _ => PolicyKind::Rtds,
        }
    }

    /// The `xl` commands run at time 0, in order, as published (times in µs). Where the
    /// source gives a period without a budget (case 2's guest and thin domains), the
    /// budget is case 3's.
    pub fn xl(self) -> &'static [&'static str] {
        match self {
            Case::GlobalDefaults => &[],
            Case::GlobalTuned => &[
                "sched-rtds -d Domain-D -p 400 -b 400",
                "sched-rtds -d guest -p 10000 -b 5000",
                "sched-rtds -d thin -p 1000 -b 400",
            ],
            Case::Partitioned => &[
                "vcpu-pin thin all 0",
                "vcpu-pin guest all 0",
                "vcpu-pin Domain-D all 1",
                "sched-rtds -d thin -p 1000 -b 400",
                "sched-rtds -d guest -p 10000 -b 5000",
                "sched-rtds -d Domain-D -p 1000 -b 1000",
            ],
            Case::Pools => &[
                "cpupool-create realtime sched=rtds",
                "cpupool-cpu-remove Pool-0 1",
                "cpupool-cpu-add realtime 1",
                "cpupool-migrate Domain-D realtime",
                "sched-rtds -d Domain-D -p 1000 -b 1000",
            ],
        }
    }

    /// The loads the case runs with: as published for cases 1 (idle, then loaded) and 2
    /// (idle); the source names none for cases 3 and 4, which run both.
    pub fn loads(self) -> &'static [Load] {
        match self {
            Case::GlobalTuned => &[Load::Idle],
            _ => &[Load::Idle, Load::Loaded],
        }
    }
}

/// The other domains' work.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Load {
    /// No domain but `Domain-D` has work.
    Idle,
    /// One CPU-bound task in the thin domain.
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

/// One run of the experiment: a case under a load, with a wake delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Run {
    pub case: Case,
    pub load: Load,
    pub delivery: Delivery,
}

impl Run {
    /// Every run, in order: each case under each of its loads, without wake delivery, then
    /// the same with the measured one.
    pub fn all() -> Vec<Run> {
        Delivery::ALL
            .iter()
            .flat_map(|&delivery| {
                Case::ALL.iter().flat_map(move |&case| {
                    case.loads().iter().map(move |&load| Run {
                        case,
                        load,
                        delivery,
                    })
                })
            })
            .collect()
    }

    /// `1 global-defaults, thin idle` (`…, delivery this-machine` with the measured one).
    pub fn label(self) -> String {
        format!(
            "{} {}, thin {}{}",
            self.case.number(),
            self.case.name(),
            self.load.name(),
            match self.delivery {
                Delivery::None => String::new(),
                d => format!(", delivery {}", d.name()),
            }
        )
    }

    /// The run's name in progress lines and shards.
    pub fn key(self) -> String {
        self.delivery.suffixed(&format!(
            "latency-{}-{}",
            self.case.name(),
            self.load.name()
        ))
    }
}

/// How long the timer threads run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Length {
    /// Each thread wakes this many times (`cyclictest -l`); the run lasts until the
    /// slowest thread's last wake-up has had one more interval.
    Loops(u64),
    /// `--duration`: the threads wake until this instant, and the run ends there.
    Until(Nanos),
}

/// When the domains boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Boot {
    pub seed: u64,
    /// Every domain (its VCPUs and threads) starts at 0.
    pub in_phase: bool,
}

/// The machine every case runs on: two pcpus, 1 ms quantum, `overheads`. The one place
/// the machine is chosen (see the module's "Wake delivery").
pub fn machine(overheads: Overheads) -> MachineConfig {
    MachineConfig {
        pcpus: PCPUS,
        overheads,
        ..MachineConfig::default()
    }
}

/// Every run with its system on `machine` (with each run's wake delivery), in
/// [`Run::all`]'s order.
pub fn systems(machine: MachineConfig, boot: Boot, length: Length) -> Vec<(Run, SystemSpec)> {
    Run::all()
        .into_iter()
        .map(|run| {
            let machine = MachineConfig {
                wake_delivery: run.delivery.setting(),
                ..machine.clone()
            };
            (run, system(run, machine, boot, length))
        })
        .collect()
}

/// Xen 4.5's RTDS: quantum-driven, no extratime.
fn xen45_rtds() -> PolicyConfig {
    PolicyConfig::Rtds(RtdsMode::Quantum)
}

/// A VCPU as `xl create` gives it under Xen 4.5: 4 ms every 10 ms, no extratime, weight
/// 256.
fn xen45_vcpu() -> VcpuParams {
    let mut p = VcpuParams::server(XEN45_BUDGET, XEN45_PERIOD, 0);
    p.extratime = Some(false);
    p.weight = DEFAULT_WEIGHT;
    p
}

/// A busy loop: one job that never ends within a run (a CPU-bound task).
pub fn busy_loop() -> TaskSpec {
    let forever = Nanos::from_secs(100_000);
    TaskSpec::periodic("busy", forever, forever)
}

/// A domain of [`VCPUS`] VCPUs at Xen 4.5's defaults, free to run on any pcpu of
/// `Pool-0`, with a global guest.
fn domain(name: &str, guest: GuestScheduler, tasks: Vec<TaskSpec>) -> DomainSpec {
    DomainSpec {
        name: name.to_string(),
        vcpu: xen45_vcpu(),
        guest,
        tasks,
        placement: Placement {
            vcpus: VCPUS,
            smp: GuestSmp::Global,
            ..Placement::default()
        },
    }
}

/// The four timer threads, each woken at `start + k·interval` for every `k` that
/// `length` allows (listed, so a thread that is done stops). One priority for all.
fn timer_threads(start: Nanos, length: Length) -> Vec<TaskSpec> {
    INTERVALS_US
        .iter()
        .enumerate()
        .map(|(i, &us)| {
            let interval = Nanos::from_us(us);
            let wakes: Vec<Nanos> = match length {
                Length::Loops(n) => (0..n)
                    .map(|k| start + Nanos(k * interval.as_ns()))
                    .collect(),
                Length::Until(end) => (0..)
                    .map(|k| start + Nanos(k * interval.as_ns()))
                    .take_while(|&t| t < end)
                    .collect(),
            };
            let mut t = TaskSpec::periodic(&format!("T{i}"), interval, THREAD_WORK);
            t.priority = 0;
            t.arrival = Arrival::AperiodicTimes(wakes);
            t
        })
        .collect()
}

/// The simulated length of a run whose last domain boots at `latest_boot`.
pub fn run_length(length: Length, latest_boot: Nanos) -> Nanos {
    match length {
        Length::Loops(n) => {
            let slowest = Nanos::from_us(INTERVALS_US[INTERVALS_US.len() - 1]);
            latest_boot + Nanos(n * slowest.as_ns())
        }
        Length::Until(end) => end,
    }
}

/// The system of `run` on `machine`: the three domains booted as `boot` says, the case's
/// pools and its `xl` commands at time 0.
pub fn system(run: Run, machine: MachineConfig, boot: Boot, length: Length) -> SystemSpec {
    // Boot offsets first, in boot order, so that every case and load sees the same ones.
    let mut rng = SimRng::new(boot.seed);
    let mut offset = || {
        if boot.in_phase {
            Nanos::ZERO
        } else {
            Nanos(rng.uniform_u64(0, XEN45_PERIOD.as_ns() - 1))
        }
    };
    let offsets = [offset(), offset(), offset()];
    let thin_tasks = match run.load {
        Load::Idle => Vec::new(),
        Load::Loaded => vec![busy_loop()],
    };
    let mut domains = vec![
        domain(THIN, GuestScheduler::Rm, thin_tasks),
        domain(
            DRIVER,
            GuestScheduler::Fp,
            timer_threads(offsets[1], length),
        ),
        domain(GUEST, GuestScheduler::Rm, Vec::new()),
    ];
    for (d, &at) in domains.iter_mut().zip(&offsets) {
        d.vcpu.offset = at;
        for t in &mut d.tasks {
            if !matches!(t.arrival, Arrival::AperiodicTimes(_)) {
                t.offset += at;
            }
        }
    }
    let pool0 = match run.case.pool0() {
        PolicyKind::Credit => PolicyConfig::Credit(CreditConfig::default()),
        _ => xen45_rtds(),
    };
    let changes = xl_at_zero(run.case.xl());
    SystemSpec {
        machine,
        pools: vec![PoolSpec::new(
            PoolSpec::DEFAULT_NAME,
            CpuSet::first(PCPUS),
            pool0,
        )],
        // The pool `cpupool-create … sched=rtds` makes is Xen 4.5's RTDS too.
        policy_settings: PolicySettings {
            rtds: RtdsMode::Quantum,
            ..PolicySettings::default()
        },
        domains,
        changes,
        chains: Vec::new(),
    }
}

/// One thread's latencies, as cyclictest keeps them (ns; the mean exactly as a sum).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ThreadLatency {
    pub thread: usize,
    pub interval: Nanos,
    /// Wake-ups counted (jobs that started).
    pub count: u64,
    pub min: Nanos,
    /// The last one.
    pub act: Nanos,
    /// The sum of every latency, for the mean.
    pub sum_ns: u128,
    pub max: Nanos,
}

/// `ns` in µs, as an `f64` for [`decimal`].
fn us(ns: u128) -> f64 {
    ns as f64 / 1e3
}

impl ThreadLatency {
    /// The latencies `latencies` (in wake-up order) of thread `thread` of `interval`.
    pub fn of(thread: usize, interval: Nanos, latencies: &[Nanos]) -> ThreadLatency {
        ThreadLatency {
            thread,
            interval,
            count: latencies.len() as u64,
            min: latencies.iter().copied().min().unwrap_or_default(),
            act: latencies.last().copied().unwrap_or_default(),
            sum_ns: latencies.iter().map(|l| l.as_ns() as u128).sum(),
            max: latencies.iter().copied().max().unwrap_or_default(),
        }
    }

    /// The mean latency in µs (0 without wake-ups).
    pub fn avg_us(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            us(self.sum_ns) / self.count as f64
        }
    }

    /// cyclictest's line, `T:%2d (%5d) P:%2d I:%ld C:%7lu Min:%7ld Act:%5ld Avg:%5ld
    /// Max:%8ld`, times in µs. There is no Linux thread id in a simulation: the thread's
    /// index stands in its place. Every time is whole µs by the crate's one rounding rule
    /// ([`decimal`]), as in the CSV and the tables (cyclictest itself truncates).
    pub fn cyclictest_line(&self) -> String {
        let whole = |ns: u128| decimal(us(ns), 0);
        format!(
            "T:{:2} ({:5}) P:{:2} I:{} C:{:7} Min:{:>7} Act:{:>5} Avg:{:>5} Max:{:>8}",
            self.thread,
            self.thread,
            0,
            self.interval.as_ns() / 1_000,
            self.count,
            whole(self.min.as_ns() as u128),
            whole(self.act.as_ns() as u128),
            decimal(self.avg_us(), 0),
            whole(self.max.as_ns() as u128),
        )
    }
}

/// The release-to-start latencies of `Domain-D`'s threads in `sim`: every wake-up that
/// started, in release order.
pub fn thread_latencies(sim: &Simulation) -> Vec<ThreadLatency> {
    let index = sim
        .domains()
        .iter()
        .position(|d| d.spec.name == DRIVER)
        .expect("Domain-D is in every case");
    let run = &sim.domains()[index];
    run.spec
        .tasks
        .iter()
        .enumerate()
        .map(|(thread, spec)| {
            let mut started: Vec<(Nanos, Nanos)> = run.finished[thread]
                .iter()
                .filter_map(|j| j.first_start.map(|s| (j.release, s - j.release)))
                .collect();
            started.extend(
                sim.pending_jobs(index)
                    .filter(|(t, _)| *t == thread)
                    .filter_map(|(_, j)| j.first_start.map(|s| (j.release, s - j.release))),
            );
            started.sort();
            let latencies: Vec<Nanos> = started.iter().map(|&(_, l)| l).collect();
            ThreadLatency::of(thread, spec.period, &latencies)
        })
        .collect()
}

/// The four threads taken together.
fn overall(threads: &[ThreadLatency]) -> (u64, Nanos, f64, Nanos) {
    let count: u64 = threads.iter().map(|t| t.count).sum();
    let sum: u128 = threads.iter().map(|t| t.sum_ns).sum();
    let min = threads.iter().map(|t| t.min).min().unwrap_or_default();
    let max = threads.iter().map(|t| t.max).max().unwrap_or_default();
    let avg = if count == 0 {
        0.0
    } else {
        us(sum) / count as f64
    };
    (count, min, avg, max)
}

/// What the run reproduces of the published set-up.
pub const REPRODUCES: &[&str] = &[
    "Two pcpus; a thin control domain, a driver domain (Domain-D) and a guest, two VCPUs each.",
    "cyclictest -t4 -i 10000 -l 10000 in Domain-D: four timer threads of intervals 10, 10.5, \
     11 and 11.5 ms, 10,000 wake-ups each (`--quick`: 200; `--duration` replaces the count \
     by a length), latency from the timer's expiry to the thread running, reported per \
     thread as Min, Act, Avg and Max.",
    "Case 1: one RTDS pool of both pcpus, every VCPU at Xen 4.5's default 4 ms / 10 ms, the \
     other domains idle, then a CPU-bound task in the thin domain.",
    "Case 2: the same pool tuned with the published `xl sched-rtds -d Domain-D -p 400 -b \
     400`, the guest at a 10 ms period and the thin domain at a 1 ms period; the others idle.",
    "Case 3: `xl vcpu-pin thin all 0`, `vcpu-pin guest all 0`, `vcpu-pin Domain-D all 1`; \
     thin 400 µs / 1 ms, guest 5 ms / 10 ms, Domain-D 1 ms / 1 ms.",
    "Case 4: Pool-0 under Credit keeps pcpu 0; `xl cpupool-create realtime sched=rtds`, \
     `cpupool-cpu-remove Pool-0 1`, `cpupool-cpu-add realtime 1`, `cpupool-migrate Domain-D \
     realtime`, `sched-rtds -d Domain-D -p 1000 -b 1000`, run as `xl` commands at time 0.",
    "Xen 4.5's RTDS: re-decided at least every 1 ms quantum, no extratime.",
];

/// Where the run departs from the published set-up, and why.
pub const DEPARTS: &[&str] = &[
    "Wake delivery (interrupt, hypervisor upcall, guest kernel wake path) is modelled, not \
     run: every case runs once without it — the latency is the schedulers' alone, with \
     zero scheduler cost unless `--overhead` is given — and once with this machine's \
     timer wake latency, measured on real threads by `rtvmm bench wake` (the \
     `this-machine` preset), drawn independently for each wake. The published board's own \
     delivery cost is not known; this machine is a VM, whose timer path is slower than \
     bare metal.",
    "Case 2's guest and thin budgets are not given by the source: case 3's are used (guest \
     5 ms / 10 ms, thin 400 µs / 1 ms).",
    "The source names no load for cases 3 and 4: both run idle and with the thin domain \
     loaded.",
    "cyclictest without `-p` runs its threads under Linux's fair scheduler; here they share \
     one fixed priority, first in first out, in a global guest scheduler over Domain-D's two \
     VCPUs, and each wake-up does 10 µs of work.",
    "Every domain boots at an offset drawn from the seed (its VCPUs' first period and its \
     threads start there; `--in-phase`: at 0), and the `xl` commands run at time 0, so new \
     RTDS parameters take effect at each VCPU's first replenishment (rtvmm's rule; Xen \
     applies them at once).",
    "Credit (case 4's Pool-0) is Xen 4.0's: 10 ms tick, 30 ms slice, no rate limit; each of \
     a domain's VCPUs holds the domain's weight (Xen splits it among them).",
    "The tid column of the cyclictest lines holds the thread's index (a simulation has no \
     Linux thread ids), and times are whole µs rounded by the crate's rule rather than \
     truncated as cyclictest does.",
];

fn run(out: &mut Output) -> Result<(), ExperimentError> {
    let options = out.options;
    let boot = Boot {
        seed: options.seed,
        in_phase: options.in_phase,
    };
    let length = match options.duration {
        Some(d) => Length::Until(d),
        None => Length::Loops(if options.quick { QUICK_LOOPS } else { LOOPS }),
    };
    let overheads = options.overheads.unwrap_or_default();
    out.param("pcpus", PCPUS);
    out.param(
        "domains",
        "thin, Domain-D, guest (boot order), two VCPUs each, created at Xen 4.5's RTDS \
         defaults (4 ms / 10 ms, no extratime; Credit weight 256)",
    );
    out.param(
        "boot",
        if boot.in_phase {
            "in phase: every domain's VCPUs and threads start at 0".to_string()
        } else {
            "each domain boots at an offset drawn uniformly in [0, 10 ms) from the seed; its \
             VCPUs' first period and its threads start there"
                .to_string()
        },
    );
    out.param("overheads", crate::options::describe_overheads(&overheads));
    out.param(
        "wake delivery",
        "every run twice: none (the timer's wake reaches the thread at once), and this \
         machine's (the `this-machine` preset of `[machine] wake_delivery`: timer wake \
         latency of a SCHED_FIFO thread measured by `rtvmm bench wake` on the host, mean \
         about 50 µs, its distribution by quantiles) added between each timer's expiry and \
         the thread's release to the guest's scheduler",
    );
    out.param(
        "cyclictest",
        "in Domain-D: four threads, intervals 10, 10.5, 11, 11.5 ms, started together at \
         boot, one priority (guest fp, first in first out, global over two VCPUs), 10 µs \
         of work per wake-up",
    );
    out.param(
        "length",
        match length {
            Length::Loops(n) => format!("{n} wake-ups per thread (cyclictest -l {n})"),
            Length::Until(d) => format!("--duration {d}: every wake-up until then"),
        },
    );
    out.param(
        "load",
        "idle: only Domain-D has work; loaded: one CPU-bound task in the thin domain; the \
         guest is always idle",
    );
    for case in Case::ALL {
        let xl = if case.xl().is_empty() {
            "no xl commands".to_string()
        } else {
            case.xl()
                .iter()
                .map(|c| format!("`xl {c}`"))
                .collect::<Vec<_>>()
                .join("; ")
        };
        out.param(
            &format!("case {} {}", case.number(), case.name()),
            format!(
                "Pool-0 of both pcpus under {}; at 0: {xl}; loads: {}",
                match case.pool0() {
                    PolicyKind::Credit => "Credit (10 ms tick, 30 ms slice)",
                    _ => "RTDS (Xen 4.5: 1 ms quantum, no extratime)",
                },
                case.loads()
                    .iter()
                    .map(|l| l.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        );
    }
    out.param(
        "latency",
        "release-to-start: from a thread's timer expiring to the thread running (µs, \
         cyclictest's Min/Act/Avg/Max; Act is the last wake-up)",
    );

    let runs = systems(machine(overheads), boot, length);
    let outcome = out.sweep(
        "latency",
        &runs,
        |(run, _)| run.key(),
        |(run, system)| {
            let latest = system
                .domains
                .iter()
                .map(|d| d.vcpu.offset)
                .max()
                .unwrap_or_default();
            let end = run_length(length, latest);
            let (_, threads) = simulate_with(system, &run.key(), boot.seed, end, thread_latencies)?;
            Ok(threads)
        },
    )?;
    let finished: Vec<(Run, &Vec<ThreadLatency>)> = runs
        .iter()
        .zip(&outcome.results)
        .filter_map(|((run, _), r)| r.as_ref().map(|r| (*run, r)))
        .collect();

    let mut rows = Vec::new();
    let mut text = String::new();
    for (run, threads) in &finished {
        text.push_str(&format!("# {}\n", run.label()));
        for t in threads.iter() {
            text.push_str(&t.cyclictest_line());
            text.push('\n');
            rows.push(vec![
                run.case.number().to_string(),
                run.case.name().to_string(),
                run.load.name().to_string(),
                run.delivery.name().to_string(),
                t.thread.to_string(),
                (t.interval.as_ns() / 1_000).to_string(),
                t.count.to_string(),
                decimal(us(t.min.as_ns() as u128), 3),
                decimal(us(t.act.as_ns() as u128), 3),
                decimal(t.avg_us(), 3),
                decimal(us(t.max.as_ns() as u128), 3),
            ]);
        }
    }
    out.csv(
        "latency.csv",
        "per case, load, wake delivery and thread: interval, wake-ups, and the \
         release-to-start latency's min, last (act), mean and max (µs)",
        &[
            "case",
            "setup",
            "load",
            "delivery",
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
        "As `cyclictest` prints it (the tid column holds the thread's index; whole µs):\n\n\
         ```text\n{text}```\n"
    ));
    let table_rows = finished
        .iter()
        .map(|(run, threads)| {
            let (count, min, avg, max) = overall(threads);
            vec![
                run.case.number().to_string(),
                run.case.name().to_string(),
                run.load.name().to_string(),
                run.delivery.name().to_string(),
                count.to_string(),
                decimal(us(min.as_ns() as u128), 0),
                decimal(avg, 0),
                decimal(us(max.as_ns() as u128), 0),
            ]
        })
        .collect();
    out.table(
        "latency",
        "Release-to-start latency over the four threads (µs)",
        &[
            "case", "set-up", "thin", "delivery", "wake-ups", "min", "avg", "max",
        ],
        table_rows,
    )?;
    let categories: Vec<String> = finished
        .iter()
        .map(|(run, _)| {
            format!(
                "{} {}{}",
                run.case.number(),
                run.load.name(),
                match run.delivery {
                    Delivery::None => "",
                    Delivery::Measured => " +d",
                }
            )
        })
        .collect();
    let series = vec![
        (
            "avg".to_string(),
            finished.iter().map(|(_, th)| overall(th).2).collect(),
        ),
        (
            "max".to_string(),
            finished
                .iter()
                .map(|(_, th)| us(overall(th).3.as_ns() as u128))
                .collect(),
        ),
    ];
    out.figure(
        "latency-max",
        &Chart::Bar(BarChart {
            title: "Release-to-start latency of the cyclictest threads".into(),
            x_label: "case and thin domain's load".into(),
            y_label: "latency (µs)".into(),
            categories,
            series,
            legend: LegendAt::UpperRight,
        }),
        "The mean and the largest release-to-start latency over the four timer threads, per \
         case (1 global defaults, 2 global tuned, 3 partitioned, 4 pools) and load of the \
         thin domain; `+d`: with this machine's measured wake delivery.",
    )?;
    for (run, threads) in &finished {
        let (count, _, avg, max) = overall(threads);
        out.finding(format!(
            "{}: avg {} µs, max {} µs over {} wake-ups",
            run.label(),
            decimal(avg, 0),
            decimal(us(max.as_ns() as u128), 0),
            count
        ));
    }
    for check in checks(&finished, length) {
        out.finding(check);
    }
    out.against_published(
        &REPRODUCES.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        &DEPARTS.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
    );
    Ok(())
}

/// The experiment's own checks, facts that follow from the set-up whatever the numbers:
/// every thread woke as often as asked, and where Domain-D has a pcpu to itself (cases 3
/// and 4) the thin domain's load cannot change its threads' latencies.
pub fn checks(finished: &[(Run, &Vec<ThreadLatency>)], length: Length) -> Vec<String> {
    let mut out = Vec::new();
    if let Length::Loops(n) = length {
        let short: Vec<String> = finished
            .iter()
            .filter(|(_, th)| th.iter().any(|t| t.count != n))
            .map(|(run, _)| run.label())
            .collect();
        out.push(if short.is_empty() {
            format!("check: every thread woke {n} times in every run — holds")
        } else {
            format!(
                "check: every thread woke {n} times in every run — does not hold: {}",
                short.join("; ")
            )
        });
    }
    for case in [Case::Partitioned, Case::Pools] {
        // Without delivery: with it, the thin domain's own releases draw delays too, and
        // shift the threads' draws.
        let of = |load| {
            finished
                .iter()
                .find(|(run, _)| {
                    run.case == case && run.load == load && run.delivery == Delivery::None
                })
                .map(|(_, th)| *th)
        };
        if let (Some(idle), Some(loaded)) = (of(Load::Idle), of(Load::Loaded)) {
            out.push(format!(
                "check: case {} ({}), Domain-D alone on pcpu 1: the thin domain's load leaves \
                 every latency unchanged — {}",
                case.number(),
                case.name(),
                if idle == loaded {
                    "holds"
                } else {
                    "does not hold"
                }
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvmm_core::machine::Machine;
    use rtvmm_core::model::VcpuId;
    use rtvmm_core::wake::WakeRandom;
    use rtvmm_system::change::Domains;
    use rtvmm_system::Change;

    fn us(n: u64) -> Nanos {
        Nanos::from_us(n)
    }

    /// The machine a case's system leaves after its domains joined and its `xl`
    /// commands ran (what the scenario reader's replay does), with each domain's VCPUs.
    fn replayed(case: Case) -> (Machine, Vec<(String, Vec<VcpuId>)>) {
        let run = Run {
            case,
            load: Load::Loaded,
            delivery: Delivery::None,
        };
        let boot = Boot {
            seed: 7,
            in_phase: false,
        };
        let system = system(run, machine(Overheads::default()), boot, Length::Loops(3));
        let mut m = system.machine().unwrap();
        let mut table = Domains::default();
        let joins = system.domains.iter().cloned().map(Change::AddDomain);
        for change in joins.chain(system.changes.iter().map(|c| c.change.clone())) {
            table
                .apply(&mut m, Nanos::ZERO, &change, &system.policy_settings)
                .unwrap();
        }
        let vcpus = table
            .domains
            .iter()
            .map(|(spec, v, _)| (spec.name.clone(), v.clone()))
            .collect();
        (m, vcpus)
    }

    /// One VCPU as the test sees it: (pool, affinity, budget, period, extratime).
    type Seen = (String, CpuSet, Nanos, Nanos, Option<bool>);

    /// Per domain, per VCPU, what [`Seen`] lists.
    fn layout(case: Case) -> Vec<(String, Vec<Seen>)> {
        let (m, domains) = replayed(case);
        domains
            .into_iter()
            .map(|(name, vcpus)| {
                let per = vcpus
                    .iter()
                    .map(|&v| {
                        let (pool, cpus) = m.placement(v);
                        let p = m.params(v);
                        (pool.to_string(), cpus, p.budget, p.period, p.extratime)
                    })
                    .collect();
                (name, per)
            })
            .collect()
    }

    /// Both VCPUs of `domain` in `layout` are (pool, affinity, budget µs, period µs).
    fn assert_domain(
        layout: &[(String, Vec<Seen>)],
        domain: &str,
        pool: &str,
        cpus: CpuSet,
        budget_us: u64,
        period_us: u64,
    ) {
        let (_, vcpus) = layout.iter().find(|(n, _)| n == domain).unwrap();
        assert_eq!(vcpus.len(), 2, "{domain}: two VCPUs");
        for v in vcpus {
            assert_eq!(
                (v.0.as_str(), v.1, v.2, v.3),
                (pool, cpus, us(budget_us), us(period_us)),
                "{domain}"
            );
            assert_eq!(v.4, Some(false), "{domain}: Xen 4.5 has no extratime");
        }
    }

    #[test]
    fn case_1_is_one_rtds_pool_at_xen45_defaults() {
        let l = layout(Case::GlobalDefaults);
        let names: Vec<&str> = l.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, [THIN, DRIVER, GUEST]);
        for d in [THIN, DRIVER, GUEST] {
            assert_domain(&l, d, "Pool-0", CpuSet::first(2), 4_000, 10_000);
        }
    }

    #[test]
    fn case_2_tunes_the_global_pool() {
        let l = layout(Case::GlobalTuned);
        assert_domain(&l, DRIVER, "Pool-0", CpuSet::first(2), 400, 400);
        assert_domain(&l, GUEST, "Pool-0", CpuSet::first(2), 5_000, 10_000);
        assert_domain(&l, THIN, "Pool-0", CpuSet::first(2), 400, 1_000);
    }

    #[test]
    fn case_3_pins_domain_d_alone_to_pcpu_1() {
        let l = layout(Case::Partitioned);
        assert_domain(&l, THIN, "Pool-0", CpuSet::one(0), 400, 1_000);
        assert_domain(&l, GUEST, "Pool-0", CpuSet::one(0), 5_000, 10_000);
        assert_domain(&l, DRIVER, "Pool-0", CpuSet::one(1), 1_000, 1_000);
    }

    #[test]
    fn case_4_moves_domain_d_into_an_rtds_pool_of_pcpu_1() {
        let (m, _) = replayed(Case::Pools);
        let pools: Vec<(String, CpuSet, PolicyKind)> = m
            .pools()
            .map(|(name, cpus, config)| (name.to_string(), cpus, config.kind()))
            .collect();
        assert_eq!(
            pools,
            [
                ("Pool-0".to_string(), CpuSet::one(0), PolicyKind::Credit),
                (REALTIME_POOL.to_string(), CpuSet::one(1), PolicyKind::Rtds),
            ]
        );
        let l = layout(Case::Pools);
        assert_domain(&l, DRIVER, REALTIME_POOL, CpuSet::one(1), 1_000, 1_000);
        // Credit reads the weight; the others keep xl's defaults otherwise.
        assert_domain(&l, THIN, "Pool-0", CpuSet::one(0), 4_000, 10_000);
        assert_domain(&l, GUEST, "Pool-0", CpuSet::one(0), 4_000, 10_000);
    }

    /// With this machine's wake delivery every wake-up reaches its thread at least the
    /// preset's smallest delay later than its timer, and the latencies grow by about the
    /// preset's mean; without it, case 1 idle starts a thread within its own 10 µs.
    #[test]
    fn the_measured_wake_delivery_is_added_to_every_latency() {
        let boot = Boot {
            seed: 5,
            in_phase: false,
        };
        let latencies = |delivery| {
            let run = Run {
                case: Case::GlobalDefaults,
                load: Load::Idle,
                delivery,
            };
            let s = &systems(machine(Overheads::default()), boot, Length::Loops(200))
                .into_iter()
                .find(|(r, _)| *r == run)
                .expect("the run")
                .1;
            let latest = s.domains.iter().map(|d| d.vcpu.offset).max().unwrap();
            simulate_with(
                s,
                "t",
                boot.seed,
                run_length(Length::Loops(200), latest),
                thread_latencies,
            )
            .unwrap()
            .1
        };
        let (off, on) = (latencies(Delivery::None), latencies(Delivery::Measured));
        let setting = Delivery::Measured.setting();
        assert!(
            matches!(setting.random, WakeRandom::Empirical { .. }),
            "the preset is an empirical distribution"
        );
        let least = Delivery::Measured.least();
        assert!(least >= Nanos::from_us(5), "a measured floor: {least}");
        for (a, b) in off.iter().zip(&on) {
            assert_eq!((a.count, b.count), (200, 200));
            assert!(
                b.min >= least,
                "thread {}: min {} < {least}",
                b.thread,
                b.min
            );
            assert!(a.max <= Nanos::from_us(30), "without delivery: {}", a.max);
            let grown = b.avg_us() - a.avg_us();
            let mean = setting.mean_ns() / 1_000.0;
            assert!(
                grown > 0.5 * mean && grown < 2.0 * mean,
                "thread {}: avg grew {grown} µs, the preset's mean is {mean} µs",
                b.thread
            );
        }
    }

    #[test]
    fn cyclictest_runs_four_threads_for_the_loops_asked() {
        let boot = Boot {
            seed: 3,
            in_phase: false,
        };
        let run = Run {
            case: Case::GlobalDefaults,
            load: Load::Idle,
            delivery: Delivery::None,
        };
        let s = system(
            run,
            machine(Overheads::default()),
            boot,
            Length::Loops(LOOPS),
        );
        let d = &s.domains[1];
        assert_eq!(d.name, DRIVER);
        assert_eq!(d.placement.vcpu_count(), 2);
        let start = d.vcpu.offset;
        for (t, us_) in d.tasks.iter().zip(INTERVALS_US) {
            let Arrival::AperiodicTimes(times) = &t.arrival else {
                panic!("listed wake-ups")
            };
            assert_eq!(times.len() as u64, LOOPS);
            assert_eq!(times[0], start, "the threads start together at boot");
            assert_eq!(times[1] - times[0], us(us_));
            assert_eq!(t.priority, 0);
        }
        // The run lasts until the slowest thread's last wake-up plus one interval.
        let latest = s.domains.iter().map(|d| d.vcpu.offset).max().unwrap();
        assert_eq!(
            run_length(Length::Loops(LOOPS), latest),
            latest + Nanos::from_ms(115_000)
        );
        // Loaded: one CPU-bound task in the thin domain, nothing else changes.
        let loaded = system(
            Run {
                load: Load::Loaded,
                ..run
            },
            machine(Overheads::default()),
            boot,
            Length::Loops(LOOPS),
        );
        let mut busy = busy_loop();
        busy.offset = loaded.domains[0].vcpu.offset;
        assert_eq!(
            loaded.domains[0].tasks,
            vec![busy],
            "it starts when thin boots"
        );
        assert_eq!(loaded.domains[1..], s.domains[1..]);
    }

    #[test]
    fn runs_are_the_published_cases_and_loads() {
        let keys: Vec<String> = Run::all().into_iter().map(Run::key).collect();
        assert_eq!(
            keys,
            [
                "latency-global-defaults-idle",
                "latency-global-defaults-loaded",
                "latency-global-tuned-idle",
                "latency-partitioned-idle",
                "latency-partitioned-loaded",
                "latency-pools-idle",
                "latency-pools-loaded",
                "latency-global-defaults-idle-this-machine",
                "latency-global-defaults-loaded-this-machine",
                "latency-global-tuned-idle-this-machine",
                "latency-partitioned-idle-this-machine",
                "latency-partitioned-loaded-this-machine",
                "latency-pools-idle-this-machine",
                "latency-pools-loaded-this-machine",
            ]
        );
    }

    /// Latencies 1.5, 2.5, 0.4 and 3 µs: min 0.4, act 3, avg 7.4 / 4 = 1.85, max 3; whole
    /// µs by the crate's rule (half away from zero): 0, 3, 2, 3.
    #[test]
    fn cyclictest_line_in_its_own_format() {
        let lat = [1_500, 2_500, 400, 3_000].map(Nanos);
        let t = ThreadLatency::of(2, us(11_000), &lat);
        assert_eq!(
            (t.count, t.min, t.act, t.max, t.sum_ns),
            (4, Nanos(400), Nanos(3_000), Nanos(3_000), 7_400)
        );
        assert_eq!(t.avg_us(), 1.85);
        assert_eq!(
            t.cyclictest_line(),
            "T: 2 (    2) P: 0 I:11000 C:      4 Min:      0 Act:    3 Avg:    2 Max:       3"
        );
        let half = ThreadLatency::of(0, us(10_000), &[Nanos(2_500)]);
        assert!(half.cyclictest_line().ends_with("Avg:    3 Max:       3"));
    }

    #[test]
    fn checks_report_short_runs_and_isolation() {
        let t = |count, max| ThreadLatency {
            thread: 0,
            interval: us(10_000),
            count,
            min: Nanos::ZERO,
            act: Nanos::ZERO,
            sum_ns: 0,
            max: Nanos(max),
        };
        let (a, b, c) = (vec![t(5, 10)], vec![t(5, 10)], vec![t(4, 20)]);
        let run = |case, load| Run {
            case,
            load,
            delivery: Delivery::None,
        };
        let finished = vec![
            (run(Case::Partitioned, Load::Idle), &a),
            (run(Case::Partitioned, Load::Loaded), &b),
            (run(Case::Pools, Load::Idle), &a),
            (run(Case::Pools, Load::Loaded), &c),
        ];
        let checks = checks(&finished, Length::Loops(5));
        assert_eq!(checks.len(), 3);
        assert!(checks[0].ends_with("does not hold: 4 pools, thin loaded"));
        assert!(checks[1].starts_with("check: case 3") && checks[1].ends_with("holds"));
        assert!(checks[2].starts_with("check: case 4") && checks[2].ends_with("does not hold"));
    }
}
