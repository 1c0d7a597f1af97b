//! eval-contention — real-time VMs sharing a core (`docs/experiments.md`, from an independent
//! evaluation of the 2011 RT-Xen release, parts (b) and (c)).
//!
//! # The VMs
//! The procedure does not list (b)'s and (c)'s VM parameters; it says the evaluation gave
//! several VMs a budget above their period (75/50 ms and 500/400 ms), which its release
//! treated as always eligible. rtvmm runs two setups ([`SETUPS`]):
//! - **evaluated**: the VM under test (A in (b), H in (c)) is eval-affinity's (75, 50) ms
//!   VM, and every other real-time VM (B1, B2 in (b), L in (c)) is a (500, 400) ms VM —
//!   rtvmm's reading of which VM had which. rtvmm rejects budget above period, as Xen RTDS
//!   does, so both run with **budget = period**: (50, 50) and (400, 400), always eligible;
//! - **25/50**: every VM (25, 50) ms — a budget below the period, where the servers differ
//!   in what they do with it (rtvmm's earlier setting, kept for contrast).
//!
//! # (b) The VM under test next to other real-time VMs
//! A runs on one pcpu (1 ms quantum) with one or with two other VMs B1, B2, which share one
//! priority value; A is declared **last** and runs once at the others' priority
//! (**equal**: ties are first-in, first-out, so equal-priority VCPUs with work take turns
//! quantum by quantum) and once at a higher one (the others **lower**). Every other VM is
//! either **idle** (no task) or **busy** (one job that never ends). A alone is the
//! reference. Policies: Deferrable, PTPS, WCPS, CRPS. Measured in A:
//! - the **extra delay** of the 7 ms / 1 s task, response − 7 ms, largest over all jobs
//!   and over the release phases 0…49 ms (eval-affinity's phase sweep and rules, 10 s per
//!   phase);
//! - the **slowdown** of one CPU-bound job of 20.6 s released at 0: completion time ÷
//!   20.6 s, in a run of 5 × 20.6 s; a job unfinished by then is reported as a lower bound
//!   (> 5).
//!
//! # (c) An interrupt-driven task in an idle high-priority VM
//! VM **H** (the VM under test, priority 1) is idle except for an interrupt handler: a
//! task released by a Poisson stream of interrupts (mean gap 100 ms, from the simulation
//! seed — the same interrupt times for every policy) whose jobs run 100 µs. VM **L** (an
//! other VM, priority 2) is busy (and, for reference, idle). Measured: the release-to-start
//! latency of every handler job (interrupt to handler running), over 5 simulated minutes:
//! min, mean, percentiles, max and the CDF.
//!
//! `--duration` sets the length of each phase run of (b) and of the interrupt run of (c).
//! `--quick`: phases every 5 ms with 2 s per phase; a 2.06 s long job (run 10.3 s);
//! interrupts for 10 s.

use crate::figures::decimal;
use rtvmm_core::guest::{Arrival, GuestScheduler, TaskSpec};
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_sim::Simulation;

use super::eval_affinity::{
    config_label, eval_name, extra_delays, ms, rt_task, run_budget, worst, PhaseDelays, PhaseSweep,
    EVAL_POLICIES, QUANTUM, TASK_COST,
};
use super::Experiment;
use crate::error::ExperimentError;
use crate::plot::{cdf_points, quantile_sorted, BarChart, Chart, LegendAt, LineChart, Series};
use crate::report::Output;
use crate::system::{build_system, machine, simulate_with, ServerDomain};

pub const EXPERIMENT: Experiment = Experiment {
    name: "eval-contention",
    title: "VMs sharing a core",
    description: "(b) The VM under test (a 7 ms / 1 s task) sharing its core with one and with \
        two other real-time VMs of equal priority (ties first-in, first-out, the VM under test \
        declared last) or lower priority, each idle or busy: the largest extra delay of its \
        task over all release phases, and the slowdown of a 20.6 s job; (c) an \
        interrupt-driven task (Poisson interrupts, 100 µs handler) in an idle high-priority \
        VM while a lower-priority VM is busy: the latency from the interrupt to its handler \
        running. VMs as evaluated — (75, 50) and (500, 400) ms, budgets above the period, run \
        as budget = period (always eligible) — and, for contrast, every VM (25, 50) ms. \
        Policies deferrable, ptps, wcps, crps.",
    run: Some(run),
    host: false,
    draws: None,
};

/// The long job's execution time (full scale).
pub const LONG_JOB: Nanos = Nanos::from_ms(20_600);
/// The long job's execution time in `--quick`.
pub const QUICK_LONG_JOB: Nanos = Nanos::from_ms(2_060);
/// The long-job run lasts this many times the job.
pub const LONG_RUN_FACTOR: u64 = 5;
/// The delay figures draw larger delays (starvation lower bounds) at this height, so the
/// bars of tens of ms stay readable.
const DELAY_FIGURE_CAP_MS: f64 = 100.0;
/// Mean gap between interrupts.
pub const IRQ_MEAN_GAP: Nanos = Nanos::from_ms(100);
/// Execution time of an interrupt handler job.
pub const IRQ_HANDLER: Nanos = Nanos::from_us(100);
/// The priority of the VM under test when it is above the others, and of the others then.
const HIGH: u32 = 1;
const LOW: u32 = 2;

/// The VMs' (budget, period) as given; rtvmm runs [`run_budget`] of each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VmSetup {
    /// A short name for tables, CSVs and figure file names.
    pub name: &'static str,
    /// The VM under test: A in (b), H in (c).
    pub test_vm: (Nanos, Nanos),
    /// Every other real-time VM: B1, B2 in (b), L in (c).
    pub other_vm: (Nanos, Nanos),
}

impl VmSetup {
    /// "A (75→50, 50) ms, others (500→400, 400) ms".
    pub fn describe(&self) -> String {
        format!(
            "VM under test {} ms, others {} ms",
            config_label(self.test_vm.0, self.test_vm.1),
            config_label(self.other_vm.0, self.other_vm.1)
        )
    }

    /// The suffix of this setup's figure files ("" for the evaluated one).
    fn stem_suffix(&self) -> String {
        if self.name == SETUPS[0].name {
            String::new()
        } else {
            format!("_{}", self.name.replace('/', "_"))
        }
    }
}

/// The setups, the evaluated one first (module note).
pub const SETUPS: [VmSetup; 2] = [
    VmSetup {
        name: "evaluated",
        test_vm: (Nanos::from_ms(75), Nanos::from_ms(50)),
        other_vm: (Nanos::from_ms(500), Nanos::from_ms(400)),
    },
    VmSetup {
        name: "25/50",
        test_vm: (Nanos::from_ms(25), Nanos::from_ms(50)),
        other_vm: (Nanos::from_ms(25), Nanos::from_ms(50)),
    },
];

/// How the other VMs' priority relates to A's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Relation {
    /// No other VM.
    Alone,
    /// The others share a priority below A's.
    Lower,
    /// A at the others' priority, declared after them.
    Equal,
}

impl Relation {
    /// A short name for tables and CSVs.
    pub fn name(self) -> &'static str {
        match self {
            Relation::Alone => "alone",
            Relation::Lower => "lower",
            Relation::Equal => "equal",
        }
    }
}

/// One contention setting of part (b).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    pub others: usize,
    pub relation: Relation,
    pub busy: bool,
}

impl Setting {
    /// "alone", "1 other, lower, busy".
    pub fn label(&self) -> String {
        if self.relation == Relation::Alone {
            return "alone".to_string();
        }
        format!(
            "{} other{}, {}, {}",
            self.others,
            if self.others == 1 { "" } else { "s" },
            self.relation.name(),
            if self.busy { "busy" } else { "idle" }
        )
    }

    fn short(&self) -> String {
        if self.relation == Relation::Alone {
            return "alone".to_string();
        }
        format!(
            "{} {}",
            self.relation.name(),
            if self.busy { "busy" } else { "idle" }
        )
    }

    /// A alone, then for one and two others every relation and state.
    pub fn all() -> Vec<Setting> {
        let mut settings = vec![Setting {
            others: 0,
            relation: Relation::Alone,
            busy: false,
        }];
        for others in [1, 2] {
            for relation in [Relation::Lower, Relation::Equal] {
                for busy in [false, true] {
                    settings.push(Setting {
                        others,
                        relation,
                        busy,
                    });
                }
            }
        }
        settings
    }
}

/// A task with one job released at 0 that needs `execution` and whose deadline lies
/// beyond `horizon` (so it is never counted as missed).
fn one_job(name: &str, execution: Nanos, horizon: Nanos) -> TaskSpec {
    let far = horizon + execution + Nanos::from_secs(1);
    let mut task = TaskSpec::periodic(name, far + far, execution);
    task.arrival = Arrival::AperiodicTimes(vec![Nanos::ZERO]);
    task
}

/// A VM given (budget, period) `vm`, run with [`run_budget`].
fn server(name: &str, vm: (Nanos, Nanos), priority: u32, tasks: Vec<TaskSpec>) -> ServerDomain {
    ServerDomain {
        name: name.to_string(),
        budget: run_budget(vm.0, vm.1),
        period: vm.1,
        priority,
        guest: GuestScheduler::Rm,
        tasks,
        offset: Nanos::ZERO,
    }
}

/// The domains of `setting` under `setup` with A running `a_tasks`, and A's index (A is
/// declared last). Busy VMs run one job longer than `horizon`.
pub fn contention_domains(
    setup: &VmSetup,
    setting: &Setting,
    a_tasks: Vec<TaskSpec>,
    horizon: Nanos,
) -> (Vec<ServerDomain>, usize) {
    let others_priority = match setting.relation {
        Relation::Lower => LOW,
        Relation::Alone | Relation::Equal => HIGH,
    };
    let mut domains: Vec<ServerDomain> = (1..=setting.others)
        .map(|k| {
            let tasks = if setting.busy {
                vec![one_job("busy", horizon + Nanos::from_secs(1), horizon)]
            } else {
                Vec::new()
            };
            server(&format!("B{k}"), setup.other_vm, others_priority, tasks)
        })
        .collect();
    domains.push(server("A", setup.test_vm, HIGH, a_tasks));
    let a = domains.len() - 1;
    (domains, a)
}

/// (c): H (the VM under test, priority 1) with the interrupt handler, L (an other VM,
/// priority 2) busy for longer than `horizon` or idle.
pub fn interrupt_domains(setup: &VmSetup, lower_busy: bool, horizon: Nanos) -> Vec<ServerDomain> {
    let mut handler = TaskSpec::periodic("irq", IRQ_MEAN_GAP, IRQ_HANDLER);
    handler.arrival = Arrival::Poisson {
        mean_gap: IRQ_MEAN_GAP,
    };
    let lower_tasks = if lower_busy {
        vec![one_job("busy", horizon + Nanos::from_secs(1), horizon)]
    } else {
        Vec::new()
    };
    vec![
        server("H", setup.test_vm, HIGH, vec![handler]),
        server("L", setup.other_vm, LOW, lower_tasks),
    ]
}

/// The completion time of the first job of task 0 of `domain`, if it finished.
fn completion(sim: &Simulation, domain: usize) -> Option<Nanos> {
    sim.domains()[domain].finished[0]
        .first()
        .and_then(|j| j.finish.map(|f| f - j.release))
}

/// Release-to-start latencies of task 0 of `domain`: every job that started.
fn start_latencies(sim: &Simulation, domain: usize) -> (usize, Vec<Nanos>) {
    let run = &sim.domains()[domain];
    let mut released = run.finished[0].len();
    let mut latencies: Vec<Nanos> = run.finished[0]
        .iter()
        .filter_map(|j| j.first_start.map(|s| s - j.release))
        .collect();
    for (t, job) in sim.pending_jobs(domain) {
        if t == 0 {
            released += 1;
            if let Some(s) = job.first_start {
                latencies.push(s - job.release);
            }
        }
    }
    (released, latencies)
}

#[derive(Clone, Debug)]
struct ContentionPoint {
    setup: VmSetup,
    setting: Setting,
    policy: PolicyKind,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ContentionOutcome {
    phases: Vec<PhaseDelays>,
    /// Completion time of the long job, `None` when it did not finish in the run.
    long_job: Option<Nanos>,
}

#[derive(Clone, Debug)]
struct IrqPoint {
    setup: VmSetup,
    lower_busy: bool,
    policy: PolicyKind,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct IrqOutcome {
    interrupts: usize,
    /// Sorted.
    latencies: Vec<Nanos>,
}

fn run(out: &mut Output) -> Result<(), ExperimentError> {
    let options = out.options;
    let sweep = PhaseSweep::for_options(options);
    let long_job = if options.quick {
        QUICK_LONG_JOB
    } else {
        LONG_JOB
    };
    let long_run = Nanos(long_job.as_ns() * LONG_RUN_FACTOR);
    let irq_duration = options.duration_or(Nanos::from_secs(300), Nanos::from_secs(10));
    let policies = options.policies_or(&EVAL_POLICIES);
    let overheads = options.overheads.unwrap_or_default();
    let seed = options.seed;
    for setup in &SETUPS {
        out.param(&format!("VMs '{}'", setup.name), setup.describe());
    }
    out.param(
        "budget above period",
        "the evaluation's (75, 50) and (500, 400) ms VMs have a budget above their period, \
         which rtvmm rejects (as Xen RTDS does): they run with budget = period, (50, 50) and \
         (400, 400) ms — always eligible, as the evaluated release treated them",
    );
    out.param(
        "priorities",
        "(b) the others share one priority value; A is declared last, at the others' \
         priority (equal: ties first-in, first-out) or above it (others lower); (c) H \
         above L; idle = no task, busy = one endless job",
    );
    out.param(
        "(b) extra delay",
        format!(
            "A's 7 ms / 1 s task, release phases 0 … 49 ms in steps of {}, {} per phase; \
             response − 7 ms, largest over jobs and phases",
            sweep.step, sweep.duration
        ),
    );
    out.param(
        "(b) slowdown",
        format!(
            "one job of {long_job} released at 0 in A, run {long_run}; slowdown = \
             completion ÷ {long_job}"
        ),
    );
    out.param(
        "(c) interrupts",
        format!(
            "Poisson, mean gap {IRQ_MEAN_GAP}, handler {IRQ_HANDLER}, {irq_duration} \
             simulated, seed {seed} (same interrupt times for every policy); latency = \
             handler start − interrupt"
        ),
    );
    out.param(
        "policies",
        policies
            .iter()
            .map(|&p| eval_name(p))
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.param("pcpus · quantum", "1 · 1ms");

    // (b)
    let settings = Setting::all();
    let mut points = Vec::new();
    for setup in SETUPS {
        for &setting in &settings {
            for &policy in &policies {
                points.push(ContentionPoint {
                    setup,
                    setting,
                    policy,
                });
            }
        }
    }
    let name = |p: &ContentionPoint| {
        format!(
            "eval-contention-{}-{}-{}",
            p.setup.name.replace('/', "_"),
            p.setting.label().replace([',', ' '], "_"),
            p.policy
        )
    };
    let outcome = out.sweep("eval-contention (b)", &points, name, |p| {
        let mut phases = Vec::new();
        for phase in sweep.phases(p.setup.test_vm.1) {
            let (domains, a) =
                contention_domains(&p.setup, &p.setting, vec![rt_task(phase)], sweep.duration);
            let system = build_system(&domains, p.policy, machine(QUANTUM, overheads))?;
            let (_, delays) = simulate_with(&system, &name(p), seed, sweep.duration, |sim| {
                extra_delays(sim, a, 0, TASK_COST, sweep.duration)
            })?;
            phases.extend(PhaseDelays::of(phase, &delays));
        }
        let (domains, a) = contention_domains(
            &p.setup,
            &p.setting,
            vec![one_job("long", long_job, long_run)],
            long_run,
        );
        let system = build_system(&domains, p.policy, machine(QUANTUM, overheads))?;
        let (_, long) = simulate_with(&system, &name(p), seed, long_run, |sim| completion(sim, a))?;
        Ok(ContentionOutcome {
            phases,
            long_job: long,
        })
    })?;
    let finished: Vec<(&ContentionPoint, &ContentionOutcome)> = points
        .iter()
        .zip(&outcome.results)
        .filter_map(|(p, r)| r.as_ref().map(|r| (p, r)))
        .collect();
    write_contention(out, &settings, &policies, &finished, long_job, long_run)?;

    // (c)
    let mut irq_points = Vec::new();
    for setup in SETUPS {
        for lower_busy in [true, false] {
            for &policy in &policies {
                irq_points.push(IrqPoint {
                    setup,
                    lower_busy,
                    policy,
                });
            }
        }
    }
    let irq_name = |p: &IrqPoint| {
        format!(
            "eval-contention-irq-{}-{}-{}",
            p.setup.name.replace('/', "_"),
            if p.lower_busy { "busy" } else { "idle" },
            p.policy
        )
    };
    let irq_outcome = out.sweep("eval-contention (c)", &irq_points, irq_name, |p| {
        let domains = interrupt_domains(&p.setup, p.lower_busy, irq_duration);
        let system = build_system(&domains, p.policy, machine(QUANTUM, overheads))?;
        let (_, (interrupts, mut latencies)) =
            simulate_with(&system, &irq_name(p), seed, irq_duration, |sim| {
                start_latencies(sim, 0)
            })?;
        latencies.sort_unstable();
        Ok(IrqOutcome {
            interrupts,
            latencies,
        })
    })?;
    let irq_finished: Vec<(&IrqPoint, &IrqOutcome)> = irq_points
        .iter()
        .zip(&irq_outcome.results)
        .filter_map(|(p, r)| r.as_ref().map(|r| (p, r)))
        .collect();
    write_interrupts(out, &policies, &irq_finished, irq_duration, seed)?;
    out.against_published(
        &[
            "The evaluation's contention scenarios: the VM under test next to one and to two \
             other real-time VMs of equal or lower priority, each idle or busy (extra delay of \
             its 7 ms task, slowdown of a 20.6 s job), and an interrupt-driven task in an idle \
             high-priority VM beside a busy lower-priority one."
                .to_string(),
            "Budgets above the period (75/50 ms, 500/400 ms), which the evaluated release \
             treated as always eligible, run as budget = period: always eligible too."
                .to_string(),
        ],
        &[
            "Which VM had which parameters is rtvmm's reading: the VM under test (75, 50) ms, \
             the other real-time VMs (500, 400) ms. Every VM at (25, 50) ms is run as well, \
             for contrast."
                .to_string(),
            "Equal priorities are first-in, first-out (RT-Xen's RunQ, `docs/policies.md`), the \
             VM under test declared last; equal-priority VMs with work take turns quantum by \
             quantum."
                .to_string(),
            "The interrupts are a Poisson stream (mean gap 100 ms) with a 100 µs handler; the \
             evaluation's interrupt source and handler length are not given."
                .to_string(),
            "Every release phase of the 7 ms task is run and the worst reported; no guest \
             kernel, timer or measurement overhead."
                .to_string(),
        ],
    );

    Ok(())
}

/// The slowdown of a long job, or its lower bound when it did not finish.
fn slowdown(completion: Option<Nanos>, job: Nanos, run: Nanos) -> (f64, bool) {
    match completion {
        Some(c) => (c.as_ns() as f64 / job.as_ns() as f64, true),
        None => (run.as_ns() as f64 / job.as_ns() as f64, false),
    }
}

fn write_contention(
    out: &mut Output,
    settings: &[Setting],
    policies: &[PolicyKind],
    finished: &[(&ContentionPoint, &ContentionOutcome)],
    long_job: Nanos,
    long_run: Nanos,
) -> Result<(), ExperimentError> {
    let find = |setup: &VmSetup, setting: &Setting, policy: PolicyKind| {
        finished
            .iter()
            .find(|(p, _)| p.setup == *setup && p.setting == *setting && p.policy == policy)
            .map(|(_, o)| *o)
    };
    let setting_columns = |setup: &VmSetup, s: &Setting| {
        vec![
            setup.name.to_string(),
            s.others.to_string(),
            s.relation.name().to_string(),
            if s.relation == Relation::Alone {
                String::new()
            } else if s.busy {
                "busy".to_string()
            } else {
                "idle".to_string()
            },
        ]
    };

    let mut rows = Vec::new();
    for (p, o) in finished {
        for ph in &o.phases {
            let mut row = setting_columns(&p.setup, &p.setting);
            row.extend([
                eval_name(p.policy).to_string(),
                ms(ph.phase),
                ph.jobs.to_string(),
                ph.unfinished.to_string(),
                ms(ph.max),
                ms(ph.mean),
            ]);
            rows.push(row);
        }
    }
    out.csv(
        "delays.csv",
        "(b) per VM setup, setting, policy and release phase of A's 7 ms task: counted jobs, \
         unfinished ones (delay = lower bound), largest and mean extra delay (ms)",
        &[
            "vms",
            "others",
            "relation",
            "others_state",
            "policy",
            "phase_ms",
            "jobs",
            "unfinished",
            "max_extra_delay_ms",
            "mean_extra_delay_ms",
        ],
        &rows,
    )?;

    let mut rows = Vec::new();
    for (p, o) in finished {
        let w = worst(&o.phases);
        let lower = o.phases.iter().any(|ph| ph.unfinished > 0);
        let (factor, done) = slowdown(o.long_job, long_job, long_run);
        let mut row = setting_columns(&p.setup, &p.setting);
        row.extend([
            eval_name(p.policy).to_string(),
            w.map_or_else(String::new, |w| ms(w.max)),
            w.map_or_else(String::new, |w| ms(w.phase)),
            lower.to_string(),
            long_job.as_ns().to_string(),
            o.long_job
                .map_or_else(String::new, |c| c.as_ns().to_string()),
            decimal(factor, 4),
            done.to_string(),
        ]);
        rows.push(row);
    }
    out.csv(
        "contention.csv",
        "(b) per VM setup, setting and policy: A's largest extra delay (ms) and its phase, \
         whether it is a lower bound; the long job's completion (ns; empty = unfinished) and \
         slowdown (a lower bound when unfinished)",
        &[
            "vms",
            "others",
            "relation",
            "others_state",
            "policy",
            "max_extra_delay_ms",
            "worst_phase_ms",
            "delay_lower_bound",
            "long_job_ns",
            "long_job_completion_ns",
            "slowdown",
            "long_job_finished",
        ],
        &rows,
    )?;

    // Tables.
    let mut header = vec!["VMs".to_string(), "setting".to_string()];
    header.extend(policies.iter().map(|&p| eval_name(p).to_string()));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut delay_table = Vec::new();
    let mut slowdown_table = Vec::new();
    for setup in &SETUPS {
        for s in settings {
            let mut delay_row = vec![setup.name.to_string(), s.label()];
            let mut slow_row = vec![setup.name.to_string(), s.label()];
            for &policy in policies {
                match find(setup, s, policy) {
                    None => {
                        delay_row.push("—".to_string());
                        slow_row.push("—".to_string());
                    }
                    Some(o) => {
                        let lower = o.phases.iter().any(|ph| ph.unfinished > 0);
                        delay_row.push(worst(&o.phases).map_or_else(
                            || "no job counted".to_string(),
                            |w| format!("{}{} ms", if lower { "≥ " } else { "" }, ms(w.max)),
                        ));
                        let (factor, done) = slowdown(o.long_job, long_job, long_run);
                        slow_row.push(if done {
                            decimal(factor, 3)
                        } else {
                            format!("> {factor} (unfinished)", factor = decimal(factor, 2))
                        });
                    }
                }
            }
            delay_table.push(delay_row);
            slowdown_table.push(slow_row);
        }
    }
    out.table(
        "delay",
        "(b) Largest extra delay of A's 7 ms job (response − 7 ms) over all jobs and release \
         phases",
        &header,
        delay_table.clone(),
    )?;
    out.table(
        "slowdown",
        &format!(
            "(b) Slowdown of a {long_job} job in A: completion time ÷ {long_job} (run of \
             {long_run})"
        ),
        &header,
        slowdown_table.clone(),
    )?;
    for (rows, what) in [
        (&delay_table, "largest extra delay"),
        (&slowdown_table, "slowdown"),
    ] {
        for row in rows.iter() {
            let parts: Vec<String> = policies
                .iter()
                .zip(row.iter().skip(2))
                .map(|(&p, cell)| format!("{} {cell}", eval_name(p)))
                .collect();
            out.finding(format!(
                "(b) {what}, VMs {}, {}: {}",
                row[0],
                row[1],
                parts.join(", ")
            ));
        }
    }

    // Figures: per setup and number of others, alone first.
    let legend_note = "alone = A only; lower = the others share a priority below A's; equal = \
         A at the others' priority, declared last (ties first-in, first-out); idle/busy = the \
         others' state";
    for setup in &SETUPS {
        for others in [1usize, 2] {
            let group: Vec<&Setting> = settings
                .iter()
                .filter(|s| s.others == others || s.relation == Relation::Alone)
                .collect();
            let categories: Vec<String> = group.iter().map(|s| s.short()).collect();
            // One bar per policy and setting: `value` of its outcome, 0 where there is none.
            let series = |value: &dyn Fn(&ContentionOutcome) -> f64| -> Vec<(String, Vec<f64>)> {
                policies
                    .iter()
                    .map(|&policy| {
                        let values = group
                            .iter()
                            .map(|s| find(setup, s, policy).map_or(0.0, value))
                            .collect();
                        (eval_name(policy).to_string(), values)
                    })
                    .collect()
            };
            let delay_series = series(&|o| {
                worst(&o.phases).map_or(0.0, |w| {
                    (w.max.as_ns() as f64 / 1e6).min(DELAY_FIGURE_CAP_MS)
                })
            });
            let plural = if others == 1 { "" } else { "s" };
            let suffix = setup.stem_suffix();
            out.figure(
                &format!("delay_{others}{suffix}"),
                &Chart::Bar(BarChart {
                    title: format!(
                        "eval-contention (b): largest extra delay of A, {others} other VM{plural} \
                         ({} VMs)",
                        setup.name
                    ),
                    x_label: "setting of the other VMs".to_string(),
                    y_label: "largest extra delay of a 7 ms job (ms)".to_string(),
                    categories: categories.clone(),
                    series: delay_series,
                    legend: LegendAt::UpperLeft,
                }),
                &format!(
                    "Largest extra delay (response − execution) of A's 7 ms / 1 s task over all \
                     release phases, per setting and policy; {}. {legend_note}. Bars stop at \
                     {DELAY_FIGURE_CAP_MS} ms: a bar there means at least that much (A starved; \
                     the lower bounds are in delay.md).",
                    setup.describe()
                ),
            )?;
            let slow_series = series(&|o| slowdown(o.long_job, long_job, long_run).0);
            out.figure(
                &format!("slowdown_{others}{suffix}"),
                &Chart::Bar(BarChart {
                    title: format!(
                        "eval-contention (b): slowdown of a {long_job} job, {others} other \
                         VM{plural} ({} VMs)",
                        setup.name
                    ),
                    x_label: "setting of the other VMs".to_string(),
                    y_label: format!("completion time ÷ {long_job}"),
                    categories,
                    series: slow_series,
                    legend: LegendAt::UpperLeft,
                }),
                &format!(
                    "Completion time of one {long_job} job in A divided by {long_job}, per \
                     setting and policy; {}; a job unfinished after {long_run} is drawn at \
                     {LONG_RUN_FACTOR} (a lower bound, see slowdown.md). {legend_note}.",
                    setup.describe()
                ),
            )?;
        }
    }
    Ok(())
}

fn write_interrupts(
    out: &mut Output,
    policies: &[PolicyKind],
    finished: &[(&IrqPoint, &IrqOutcome)],
    duration: Nanos,
    seed: u64,
) -> Result<(), ExperimentError> {
    let us = |t: f64| decimal(t / 1e3, 1);
    let mut rows = Vec::new();
    let mut quantile_rows = Vec::new();
    let mut table = Vec::new();
    for (p, o) in finished {
        let state = if p.lower_busy { "busy" } else { "idle" };
        let values: Vec<f64> = o.latencies.iter().map(|l| l.as_ns() as f64).collect();
        let q = |level: f64| {
            if values.is_empty() {
                String::new()
            } else {
                us(quantile_sorted(&values, level))
            }
        };
        let mean = if values.is_empty() {
            String::new()
        } else {
            us(values.iter().sum::<f64>() / values.len() as f64)
        };
        rows.push(vec![
            p.setup.name.to_string(),
            state.to_string(),
            eval_name(p.policy).to_string(),
            o.interrupts.to_string(),
            values.len().to_string(),
            q(0.0),
            mean.clone(),
            q(0.5),
            q(0.9),
            q(0.99),
            q(1.0),
        ]);
        table.push(vec![
            p.setup.name.to_string(),
            state.to_string(),
            eval_name(p.policy).to_string(),
            values.len().to_string(),
            q(0.0),
            mean,
            q(0.5),
            q(0.99),
            q(1.0),
        ]);
        if !values.is_empty() {
            for k in 0..=100 {
                let level = f64::from(k) / 100.0;
                quantile_rows.push(vec![
                    p.setup.name.to_string(),
                    state.to_string(),
                    eval_name(p.policy).to_string(),
                    values.len().to_string(),
                    decimal(level, 2),
                    us(quantile_sorted(&values, level)),
                ]);
            }
        }
    }
    out.csv(
        "interrupt_latency.csv",
        "(c) per VM setup, lower-VM state and policy: interrupts, handler jobs that started, \
         and the interrupt-to-handler latency (µs): min, mean, median, 90th, 99th percentile, \
         max",
        &[
            "vms",
            "lower_vm",
            "policy",
            "interrupts",
            "started",
            "min_us",
            "mean_us",
            "p50_us",
            "p90_us",
            "p99_us",
            "max_us",
        ],
        &rows,
    )?;
    out.csv(
        "interrupt_latency_quantiles.csv",
        "(c) latency quantiles (0, 0.01, …, 1) in µs",
        &[
            "vms",
            "lower_vm",
            "policy",
            "samples",
            "quantile",
            "latency_us",
        ],
        &quantile_rows,
    )?;
    out.table(
        "interrupt_latency",
        "(c) Interrupt-to-handler latency (µs) in the idle high-priority VM H",
        &[
            "VMs",
            "lower VM L",
            "policy",
            "handler jobs",
            "min",
            "mean",
            "median",
            "p99",
            "max",
        ],
        table.clone(),
    )?;
    for row in table.iter().filter(|r| r[1] == "busy") {
        out.finding(format!(
            "(c) interrupt latency, VMs {}, L busy, {}: mean {} µs, p99 {} µs, max {} µs ({} \
             handler jobs)",
            row[0], row[2], row[5], row[7], row[8], row[3]
        ));
    }
    for setup in &SETUPS {
        for busy in [true, false] {
            let state = if busy { "busy" } else { "idle" };
            let series: Vec<Series> = policies
                .iter()
                .filter_map(|&policy| {
                    let (_, o) = finished.iter().find(|(p, _)| {
                        p.setup == *setup && p.lower_busy == busy && p.policy == policy
                    })?;
                    let values: Vec<f64> =
                        o.latencies.iter().map(|l| l.as_ns() as f64 / 1e6).collect();
                    Some(Series {
                        name: eval_name(policy).to_string(),
                        points: cdf_points(&values, f64::INFINITY, 600),
                    })
                })
                .collect();
            if series.is_empty() {
                continue;
            }
            let mut chart = LineChart::new(
                &format!(
                    "eval-contention (c): interrupt latency CDF, L {state} ({} VMs)",
                    setup.name
                ),
                "interrupt-to-handler latency (ms)",
                "fraction of interrupts (CDF)",
                series,
            );
            chart.markers = false;
            chart.y_range = Some((0.0, 1.02));
            chart.legend = LegendAt::LowerRight;
            out.figure(
                &format!("interrupt_latency_{state}{}", setup.stem_suffix()),
                &Chart::Line(chart),
                &format!(
                    "CDF of the time from an interrupt (Poisson, mean gap {IRQ_MEAN_GAP}) to \
                     its {IRQ_HANDLER} handler starting in the otherwise idle VM H {} ms at \
                     priority 1, with L {} ms at priority 2 {state}; one curve per policy; \
                     {duration} simulated, seed {seed}.",
                    config_label(setup.test_vm.0, setup.test_vm.1),
                    config_label(setup.other_vm.0, setup.other_vm.1)
                ),
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_and_domains() {
        let settings = Setting::all();
        assert_eq!(settings.len(), 9);
        let horizon = Nanos::from_secs(10);
        let equal = Setting {
            others: 2,
            relation: Relation::Equal,
            busy: true,
        };
        let evaluated = &SETUPS[0];
        let (domains, a) =
            contention_domains(evaluated, &equal, vec![rt_task(Nanos::ZERO)], horizon);
        // A last, everyone at one priority value.
        assert_eq!(a, 2);
        assert_eq!(domains[a].name, "A");
        assert!(domains.iter().all(|d| d.priority == HIGH));
        assert_eq!(domains[0].tasks.len(), 1);
        // Budgets above the period run at the period.
        assert_eq!(
            (domains[a].budget, domains[a].period),
            (Nanos::from_ms(50), Nanos::from_ms(50))
        );
        assert_eq!(
            (domains[0].budget, domains[0].period),
            (Nanos::from_ms(400), Nanos::from_ms(400))
        );
        let lower = Setting {
            others: 1,
            relation: Relation::Lower,
            busy: false,
        };
        let (domains, a) = contention_domains(&SETUPS[1], &lower, vec![], horizon);
        assert_eq!((a, domains.len()), (1, 2));
        assert_eq!((domains[0].priority, domains[a].priority), (LOW, HIGH));
        assert!(domains[0].tasks.is_empty());
        assert_eq!(domains[a].budget, Nanos::from_ms(25));
        assert_eq!(lower.label(), "1 other, lower, idle");
        assert_eq!(equal.short(), "equal busy");
        assert_eq!(
            slowdown(None, Nanos::from_secs(2), Nanos::from_secs(10)),
            (5.0, false)
        );
        let irq = interrupt_domains(evaluated, true, horizon);
        assert_eq!((irq[0].priority, irq[1].priority), (HIGH, LOW));
        assert_eq!(irq[0].budget, Nanos::from_ms(50));
        assert_eq!(SETUPS[1].stem_suffix(), "_25_50");
        assert_eq!(SETUPS[0].stem_suffix(), "");
    }
}
