//! Random multicore systems as scenario text, and the check of a report's guarantees
//! against a simulation of the scenario it emitted — shared by
//! `tests/multicore_soundness.rs` (the property), `tests/agreement.rs` (the one-pcpu
//! property, which draws its own systems and checks them here) and
//! `examples/guarantee_cost.rs` (what a guarantee costs in bandwidth).
//!
//! - **Drawing.** A system is decoded from a *tape* of random `u32`s ([`SystemDraw::decode`]):
//!   every choice reads the next number, and a tape of zeros decodes to the simplest system
//!   of the [`Shape`] (fewest pcpus, one pool, one domain of one VCPU and one task). So
//!   proptest's shrinking of the tape, number by number towards 0, shrinks the system, and
//!   a plain seed gives a system too ([`tape_from_seed`]), for the example.
//! - **Shapes.** [`Shape::multicore`]: 2–8 pcpus, one pool under global RTDS, one pool
//!   with every VCPU pinned to one pcpu (partitioned RTDS or a fixed-priority server
//!   policy), or two pools; domains of 1–4 VCPUs whose guests are global EDF (`guest =
//!   "edf"`, `smp = "global"`) or partitioned (`smp = "partitioned"`, each task on one
//!   VCPU), and, rarely, a global fixed-priority guest, which nothing analyses yet.
//!   [`Shape::one_pcpu`]: single-pcpu systems, which the analysis covered first.
//! - **Checking** ([`check_guarantees`]): the domains a report guarantees
//!   ([`guarantees`] — the one place that reads the report's verdicts; adapt it there when
//!   the report changes) miss no deadline in a simulation of a given scenario, and no task
//!   responds later than the bound the report gives for it.
//!
//! Times are whole milliseconds (the analysis unit is the scenario's 1 ms quantum), task
//! offsets whole microseconds.
//!
//! **Where the multicore front-end meets this module.** Only [`guarantees`] reads a
//! report's verdicts (today: nothing while `not_covered` is non-empty, else every
//! schedulable domain); per-pool verdicts, if the report grows them, belong there. Domains
//! are matched to the simulation by name, so an emitted file may add VCPUs, pins and pools.
//! [`vcpu_bandwidth`] reads every VCPU's parameters from the simulated machine once the
//! changes of time 0 are applied; [`scale_budgets`] scales each domain's `vcpu` budget and
//! the budgets its `[[event]]`s set (`sched-set`, `xl sched-rtds -v`).

// Each user of this module uses a part of it.
#![allow(dead_code)]

use rtvmm_analyze::{Report, RtaStatus};
use rtvmm_core::xl::XlCommand;
use rtvmm_core::Nanos;
use rtvmm_scenario::Scenario;
use rtvmm_sim::Simulation;
use rtvmm_system::Change;

/// How the pcpus are shared among pools and VCPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// One pcpu, one pool (no `[[pool]]`, no placement).
    Single,
    /// One pool of every pcpu under global RTDS.
    Global,
    /// One pool of every pcpu, every VCPU pinned to one pcpu.
    Partitioned,
    /// Two pools splitting the pcpus, each global or partitioned.
    Pooled,
}

/// What to draw.
#[derive(Clone, Debug)]
pub struct Shape {
    /// Pcpus, inclusive.
    pub pcpus: (u32, u32),
    pub layouts: Vec<Layout>,
    /// Policies of a pool whose VCPUs are pinned (or of the one pcpu).
    pub policies: Vec<&'static str>,
    /// VCPUs per domain, at most.
    pub max_vcpus: u32,
    /// Domains, at most.
    pub max_domains: u32,
    /// Whether a global fixed-priority guest of several VCPUs may be drawn (one case in
    /// sixteen): the analysis names it as not covered.
    pub uncovered_guests: bool,
}

/// The fixed-priority server policies, whose pools are analysed per pcpu.
pub const SERVER_POLICIES: [&str; 6] = [
    "deferrable",
    "periodic",
    "polling",
    "sporadic",
    "wcps",
    "crps",
];

impl Shape {
    /// 2–8 pcpus: global RTDS, partitioned RTDS or servers, two pools.
    pub fn multicore() -> Shape {
        let mut policies = vec!["rtds", "rtds"];
        policies.extend(SERVER_POLICIES);
        Shape {
            pcpus: (2, 8),
            layouts: vec![Layout::Global, Layout::Partitioned, Layout::Pooled],
            policies,
            max_vcpus: 4,
            max_domains: 8,
            uncovered_guests: true,
        }
    }

    /// One pcpu under `policy`, up to three domains of one VCPU.
    pub fn one_pcpu(policy: &'static str) -> Shape {
        Shape {
            pcpus: (1, 1),
            layouts: vec![Layout::Single],
            policies: vec![policy],
            max_vcpus: 1,
            max_domains: 3,
            uncovered_guests: false,
        }
    }
}

/// Task periods in ms, drawn from here three times in four: their hyperperiod is 600 ms.
pub const PERIODS_MS: [u64; 10] = [10, 12, 15, 20, 24, 25, 30, 40, 50, 60];
/// VCPU periods in ms, as written in the file (the analysis computes its own).
const VCPU_PERIODS_MS: [u64; 5] = [2, 4, 5, 10, 20];
const GUESTS: [&str; 4] = ["rm", "dm", "fp", "edf"];

#[derive(Clone, Debug)]
pub struct TaskDraw {
    pub period_ms: u64,
    pub wcet_ms: u64,
    pub deadline_ms: u64,
    /// `fp` priority, from a small range so that ties are common.
    pub priority: u32,
    pub sporadic: bool,
    /// Minimum execution time in per mille of the wcet.
    pub min_per_mille: u64,
    /// The VCPU of a partitioned guest.
    pub vcpu: u32,
}

#[derive(Clone, Debug)]
pub struct DomainDraw {
    pub guest: &'static str,
    pub pool: usize,
    pub vcpus: u32,
    /// `smp = "partitioned"` (else global), written only for several VCPUs.
    pub partitioned: bool,
    /// One pcpu per VCPU where its pool pins them.
    pub affinity: Option<Vec<u32>>,
    /// The file's own VCPU, in ms.
    pub budget_ms: u64,
    pub period_ms: u64,
    /// RTDS only; `None`: the policy's default (on).
    pub extratime: Option<bool>,
    pub tasks: Vec<TaskDraw>,
}

#[derive(Clone, Debug)]
pub struct PoolDraw {
    pub policy: &'static str,
    pub pcpus: Vec<u32>,
    /// Every VCPU of the pool pinned to one of its pcpus.
    pub pinned: bool,
}

#[derive(Clone, Debug)]
pub struct SystemDraw {
    pub layout: Layout,
    pub pcpus: u32,
    pub pools: Vec<PoolDraw>,
    pub domains: Vec<DomainDraw>,
    pub seed: u64,
    /// Seeds of the two random phasings.
    pub phasings: [u64; 2],
}

/// Numbers on the tape: enough for the largest system of any shape here.
pub const TAPE_LEN: usize = 512;

/// Reads a tape; past its end every number is 0 (the simplest choice).
struct Tape<'a> {
    numbers: &'a [u32],
    next: usize,
}

impl Tape<'_> {
    fn raw(&mut self) -> u32 {
        let x = self.numbers.get(self.next).copied().unwrap_or(0);
        self.next += 1;
        x
    }

    /// In `lo..=hi`; 0 on the tape gives `lo`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + u64::from(self.raw()) % (hi - lo + 1)
    }

    /// One of `items`; 0 on the tape gives the first.
    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.range(0, items.len() as u64 - 1) as usize]
    }

    /// True one time in `n`; 0 on the tape gives false.
    fn one_in(&mut self, n: u64) -> bool {
        self.range(0, n - 1) == n - 1
    }

    fn wide(&mut self) -> u64 {
        (u64::from(self.raw()) << 32) | u64::from(self.raw())
    }
}

impl SystemDraw {
    /// The system `tape` describes under `shape` (module docs).
    pub fn decode(shape: &Shape, tape: &[u32]) -> SystemDraw {
        let mut tape = Tape {
            numbers: tape,
            next: 0,
        };
        let pcpus = tape.range(u64::from(shape.pcpus.0), u64::from(shape.pcpus.1)) as u32;
        let mut layout = tape.pick(&shape.layouts);
        if pcpus < 2 && layout == Layout::Pooled {
            layout = Layout::Partitioned;
        }
        let all: Vec<u32> = (0..pcpus).collect();
        let pools = match layout {
            Layout::Single => vec![PoolDraw {
                policy: tape.pick(&shape.policies),
                pcpus: all,
                pinned: false,
            }],
            Layout::Global => vec![PoolDraw {
                policy: "rtds",
                pcpus: all,
                pinned: false,
            }],
            Layout::Partitioned => vec![PoolDraw {
                policy: tape.pick(&shape.policies),
                pcpus: all,
                pinned: true,
            }],
            Layout::Pooled => {
                let split = tape.range(1, u64::from(pcpus) - 1) as u32;
                [(0..split).collect::<Vec<u32>>(), (split..pcpus).collect()]
                    .into_iter()
                    .map(|pcpus| {
                        let policy = tape.pick(&shape.policies);
                        // RTDS pools are global or partitioned alike; a server pool is
                        // partitioned three times in four (the analysed case).
                        let pinned = if policy == "rtds" {
                            tape.one_in(2)
                        } else {
                            !tape.one_in(4)
                        };
                        PoolDraw {
                            policy,
                            pcpus,
                            pinned,
                        }
                    })
                    .collect()
            }
        };
        // Domains per pool, at least one each, at most about two per pcpu.
        let mut per_pool = Vec::new();
        let mut budget = u64::from(shape.max_domains);
        for (p, pool) in pools.iter().enumerate() {
            let left_for_others = (pools.len() - p - 1) as u64;
            let most = (budget - left_for_others).min(2 * pool.pcpus.len() as u64);
            let n = tape.range(1, most.max(1));
            budget -= n;
            per_pool.push(n);
        }
        // The task load, as a share of the pcpus: light to over-full.
        let load_pm = tape.range(150, 900);
        let uncovered = shape.uncovered_guests && tape.one_in(16);
        let mut domains = Vec::new();
        for (p, pool) in pools.iter().enumerate() {
            let size = pool.pcpus.len() as u64;
            let mut drawn: Vec<DomainDraw> = Vec::new();
            for _ in 0..per_pool[p] {
                let vcpus = tape.range(1, u64::from(shape.max_vcpus).min(size)) as u32;
                drawn.push(decode_domain(&mut tape, p, pool, vcpus, uncovered));
            }
            // Each VCPU's fair share of the pool, and the tasks sized to the load.
            let total_vcpus: u64 = drawn.iter().map(|d| u64::from(d.vcpus)).sum();
            let share_pm = (1000 * size / total_vcpus).min(1000);
            for d in &mut drawn {
                size_domain(&mut tape, d, share_pm * load_pm / 1000);
            }
            domains.extend(drawn);
        }
        SystemDraw {
            layout,
            pcpus,
            pools,
            domains,
            seed: tape.wide() % (i64::MAX as u64), // a TOML integer
            phasings: [tape.wide(), tape.wide()],
        }
    }
}

impl SystemDraw {
    /// The same system with every job running its wcet and every task periodic: the
    /// demand the analysis assumes, for measuring the least bandwidth that serves it.
    pub fn worst_case(mut self) -> SystemDraw {
        for t in self.domains.iter_mut().flat_map(|d| &mut d.tasks) {
            t.min_per_mille = 1000;
            t.sporadic = false;
        }
        self
    }
}

/// A domain's guest, placement and VCPU (its tasks come from [`size_domain`]).
fn decode_domain(
    tape: &mut Tape,
    pool_index: usize,
    pool: &PoolDraw,
    vcpus: u32,
    uncovered: bool,
) -> DomainDraw {
    let (guest, partitioned) = if vcpus == 1 {
        (tape.pick(&GUESTS), false)
    } else if uncovered && tape.one_in(2) {
        ("rm", false) // global fixed priority: not covered
    } else if tape.one_in(2) {
        (tape.pick(&GUESTS), true)
    } else {
        ("edf", false)
    };
    let affinity = pool.pinned.then(|| {
        let first = tape.range(0, pool.pcpus.len() as u64 - 1) as usize;
        (0..vcpus as usize)
            .map(|i| pool.pcpus[(first + i) % pool.pcpus.len()])
            .collect()
    });
    let extratime = if pool.policy == "rtds" {
        [None, Some(false), Some(true)][tape.range(0, 2) as usize]
    } else {
        None
    };
    DomainDraw {
        guest,
        pool: pool_index,
        vcpus,
        partitioned,
        affinity,
        budget_ms: 1,
        period_ms: tape.pick(&VCPU_PERIODS_MS),
        extratime,
        tasks: Vec::new(),
    }
}

/// Tasks whose utilisation is about `share_pm` per mille per VCPU, and the file's VCPU
/// budget a little above that share.
fn size_domain(tape: &mut Tape, d: &mut DomainDraw, share_pm: u64) {
    let count = if d.partitioned {
        // One or two per VCPU, each VCPU with one at least.
        d.vcpus as usize + tape.range(0, u64::from(d.vcpus)) as usize
    } else {
        tape.range(u64::from(d.vcpus), u64::from(d.vcpus) + 2) as usize
    };
    let per_task_pm = share_pm * u64::from(d.vcpus) / count as u64;
    for i in 0..count {
        let period_ms = if tape.one_in(4) {
            tape.range(8, 60)
        } else {
            tape.pick(&PERIODS_MS)
        };
        // Half to one and a half times the even split.
        let util_pm = per_task_pm * tape.range(500, 1500) / 1000;
        let wcet_ms = (period_ms * util_pm / 1000).clamp(1, period_ms);
        let deadline_ms = if tape.one_in(2) {
            wcet_ms + (period_ms - wcet_ms) * tape.range(0, 1000) / 1000
        } else {
            period_ms
        };
        d.tasks.push(TaskDraw {
            period_ms,
            wcet_ms,
            deadline_ms,
            priority: tape.range(1, 3) as u32,
            sporadic: tape.one_in(6),
            min_per_mille: tape.range(1, 1000),
            vcpu: if d.partitioned {
                (i as u32) % d.vcpus
            } else {
                0
            },
        });
    }
    let vcpu_share_pm = (share_pm * 13 / 10).min(1000);
    d.budget_ms = (d.period_ms * vcpu_share_pm)
        .div_ceil(1000)
        .clamp(1, d.period_ms);
}

/// splitmix64: offsets from a phasing seed, tapes from a seed.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// A tape for [`SystemDraw::decode`] from one seed.
pub fn tape_from_seed(seed: u64) -> Vec<u32> {
    (0..TAPE_LEN as u64)
        .map(|i| mix(seed ^ mix(i)) as u32)
        .collect()
}

/// The phasings a drawn system runs in: the synchronous one (`None`), then the random ones
/// of `seeds`.
pub fn phasings(seeds: [u64; 2]) -> [Option<u64>; 3] {
    [None, Some(seeds[0]), Some(seeds[1])]
}

/// The offset of task `task` of domain `domain` in a phasing: `None` is the synchronous
/// phasing (0), `Some(seed)` a random offset in `[0, period)`, in whole µs.
pub fn offset_of(phasing: Option<u64>, domain: usize, task: usize, period: Nanos) -> Nanos {
    match phasing {
        None => Nanos::ZERO,
        Some(seed) => {
            let x = mix(seed ^ mix((domain * 64 + task) as u64));
            Nanos::from_us(x % (period.as_ns() / 1000).max(1))
        }
    }
}

/// `xl`'s list form of pcpus.
fn cpu_list(pcpus: &[u32]) -> String {
    pcpus
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// The system as scenario text under a phasing ([`offset_of`]).
pub fn scenario_text(system: &SystemDraw, phasing: Option<u64>) -> String {
    let periods = system
        .domains
        .iter()
        .flat_map(|d| std::iter::once(d.period_ms).chain(d.tasks.iter().map(|t| t.period_ms)));
    let mut text = format!(
        "duration = \"{}ms\"\nseed = {}\n[machine]\npcpus = {}\n[scheduler]\npolicy = \"{}\"\n",
        run_length_ms(periods),
        system.seed,
        system.pcpus,
        system.pools[0].policy
    );
    // One pool is `Pool-0`, under `[scheduler] policy`; two are written out.
    let pooled = system.pools.len() > 1;
    if pooled {
        for (p, pool) in system.pools.iter().enumerate() {
            text.push_str(&format!(
                "[[pool]]\nname = \"p{p}\"\npcpus = \"{}\"\npolicy = \"{}\"\n",
                cpu_list(&pool.pcpus),
                pool.policy
            ));
        }
    }
    for (k, d) in system.domains.iter().enumerate() {
        text.push_str(&format!(
            "[[domain]]\nname = \"d{k}\"\nguest = \"{}\"\n",
            d.guest
        ));
        if pooled {
            text.push_str(&format!("pool = \"p{}\"\n", d.pool));
        }
        if d.vcpus > 1 {
            let smp = if d.partitioned {
                "partitioned"
            } else {
                "global"
            };
            text.push_str(&format!("vcpus = {}\nsmp = \"{smp}\"\n", d.vcpus));
        }
        if let Some(affinity) = &d.affinity {
            let each: Vec<String> = affinity.iter().map(|c| format!("\"{c}\"")).collect();
            text.push_str(&format!("affinity = [{}]\n", each.join(", ")));
        }
        let extratime = d
            .extratime
            .map_or_else(String::new, |on| format!(", extratime = {on}"));
        text.push_str(&format!(
            "vcpu = {{ budget = \"{}ms\", period = \"{}ms\"{extratime} }}\n",
            d.budget_ms, d.period_ms
        ));
        for (i, t) in d.tasks.iter().enumerate() {
            let offset = offset_of(phasing, k, i, Nanos::from_ms(t.period_ms));
            let min_exec_us = (t.wcet_ms * t.min_per_mille).max(1);
            text.push_str(&format!(
                "[[domain.task]]\nname = \"t{i}\"\nperiod = \"{}ms\"\nwcet = \"{}ms\"\n\
                 deadline = \"{}ms\"\npriority = {}\noffset = \"{}us\"\nmin_exec = \"{min_exec_us}us\"\n",
                t.period_ms,
                t.wcet_ms,
                t.deadline_ms,
                t.priority,
                offset.as_ns() / 1000
            ));
            if t.sporadic {
                text.push_str("kind = \"sporadic\"\n");
            }
            if d.partitioned {
                text.push_str(&format!("vcpu = {}\n", t.vcpu));
            }
        }
    }
    text
}

/// The least common multiple of `periods_ms`, capped at 1,000,000 (a run is never that
/// long: callers clamp it).
pub fn hyperperiod_ms(periods_ms: impl Iterator<Item = u64>) -> u64 {
    periods_ms.fold(1u64, |acc, p| {
        let g = Nanos(acc).gcd(Nanos(p)).as_ns();
        (acc / g).saturating_mul(p).min(1_000_000)
    })
}

/// Three hyperperiods of `periods_ms`, at least 240 ms and at most 600 ms, plus 60 ms (the
/// longest drawn period, so that a late first release still meets a deadline in the run).
pub fn run_length_ms(periods_ms: impl Iterator<Item = u64>) -> u64 {
    (3 * hyperperiod_ms(periods_ms)).clamp(240, 600) + 60
}

/// How long to simulate `scenario`: [`run_length_ms`] over its task and VCPU periods in
/// whole ms (a scenario another tool wrote may have any periods).
pub fn run_length(scenario: &Scenario) -> Nanos {
    let ms = |t: Nanos| (t.as_ns() / 1_000_000).max(1);
    let periods = scenario.system.domains.iter().flat_map(|d| {
        std::iter::once(ms(d.vcpu.period)).chain(d.tasks.iter().map(|t| ms(t.period)))
    });
    Nanos::from_ms(run_length_ms(periods.collect::<Vec<_>>().into_iter()))
}

/// Sets every task's offset in `scenario` to `phasing`'s ([`offset_of`]).
pub fn rephase(scenario: &mut Scenario, phasing: Option<u64>) {
    for (k, d) in scenario.system.domains.iter_mut().enumerate() {
        for (i, t) in d.tasks.iter_mut().enumerate() {
            t.offset = offset_of(phasing, k, i, t.period);
        }
    }
}

/// `check --admit`'s report on `scenario`, whether it admits or refuses (a refusal still
/// guarantees the domains it passes).
pub fn admit_report(scenario: &Scenario) -> Report {
    match rtvmm_analyze::admit(scenario) {
        Ok(report) => report,
        Err(refused) => refused.1,
    }
}

/// What a report guarantees for one domain: no miss, and each task's response within its
/// bound where the report gives one (ns, by task index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Guarantee {
    pub domain: String,
    pub bounds: Vec<Option<u64>>,
}

/// The domains `report` guarantees. Nothing is guaranteed while the input holds anything
/// the analysis does not model (`not_covered`); otherwise every schedulable domain, with
/// the response bounds of its tasks. The one place that reads the report's verdicts.
pub fn guarantees(report: &Report) -> Vec<Guarantee> {
    if !report.not_covered.is_empty() {
        return Vec::new();
    }
    report
        .domains
        .iter()
        .filter(|d| d.schedulable)
        .map(|d| Guarantee {
            domain: d.name.clone(),
            bounds: d
                .tasks
                .iter()
                .map(|t| match (t.rta, t.wcrt_ns) {
                    (RtaStatus::Bounded, Some(bound)) => Some(bound),
                    _ => None,
                })
                .collect(),
        })
        .collect()
}

/// Simulates `scenario` for [`run_length`] and returns the simulation and its end.
pub fn simulate(scenario: &Scenario) -> (Simulation, Nanos) {
    let end = run_length(scenario);
    (simulate_until(scenario, end), end)
}

/// Simulates `scenario` until `end`.
pub fn simulate_until(scenario: &Scenario, end: Nanos) -> Simulation {
    let mut sim = Simulation::new(&scenario.system, scenario.seed, false)
        .unwrap_or_else(|e| panic!("the scenario does not simulate: {e}"));
    sim.run_until(end).expect("run");
    sim
}

/// Misses per domain of a simulation of `scenario`, by name.
pub fn misses(scenario: &Scenario) -> Vec<(String, u64)> {
    let (sim, end) = simulate(scenario);
    sim.results("misses", scenario.seed, end)
        .domains
        .into_iter()
        .map(|d| (d.name, d.missed))
        .collect()
}

/// Simulates `scenario` for [`run_length`] and checks each of `guaranteed` against it: no
/// miss, and no response (finished, or still pending at the end) above the task's bound.
/// `Err` names the domain, the task and what was seen; `what` says which path the scenario
/// came from.
pub fn check_guarantees(
    scenario: &Scenario,
    guaranteed: &[Guarantee],
    what: &str,
) -> Result<(), String> {
    check_guarantees_until(scenario, run_length(scenario), guaranteed, what)
}

/// [`check_guarantees`] over a simulation that ends at `end` (`tests/agreement.rs` runs
/// each scenario for its own `duration`).
pub fn check_guarantees_until(
    scenario: &Scenario,
    end: Nanos,
    guaranteed: &[Guarantee],
    what: &str,
) -> Result<(), String> {
    if guaranteed.is_empty() {
        return Ok(());
    }
    let sim = simulate_until(scenario, end);
    let results = sim.results("guarantees", scenario.seed, end);
    for g in guaranteed {
        let Some(d) = results.domains.iter().position(|r| r.name == g.domain) else {
            return Err(format!(
                "{what}: domain '{}' is guaranteed but not in the scenario",
                g.domain
            ));
        };
        if results.domains[d].missed > 0 {
            return Err(format!(
                "{what}: domain '{}' is guaranteed but missed {} deadline(s) in {end}",
                g.domain, results.domains[d].missed
            ));
        }
        for (i, bound) in g.bounds.iter().enumerate() {
            let Some(bound) = bound else { continue };
            let finished = sim.domains()[d].finished[i]
                .iter()
                .map(|j| j.finish.expect("finished") - j.release);
            let pending = sim
                .pending_jobs(d)
                .filter(|(t, _)| *t == i)
                .map(|(_, j)| end - j.release);
            let seen = finished.chain(pending).max().unwrap_or(Nanos::ZERO);
            if seen > Nanos::from_ns(*bound) {
                return Err(format!(
                    "{what}: domain '{}', task {i} responded in {seen} > its bound {}",
                    g.domain,
                    Nanos::from_ns(*bound)
                ));
            }
        }
    }
    Ok(())
}

/// `Σ Θ/Π` over every VCPU of `scenario` as the simulated machine holds them once the
/// changes due at time 0 are applied (an emitted file sets smaller budgets of a domain's
/// VCPUs by `xl sched-rtds -v` at time 0).
pub fn vcpu_bandwidth(scenario: &Scenario) -> f64 {
    let mut sim = Simulation::new(&scenario.system, scenario.seed, false)
        .unwrap_or_else(|e| panic!("the scenario does not simulate: {e}"));
    sim.run_until(Nanos::from_ns(1)).expect("runs");
    sim.domains()
        .iter()
        .flat_map(|d| d.vcpus.iter())
        .map(|&v| {
            let p = sim.machine().params(v);
            p.budget.as_ns() as f64 / p.period.as_ns() as f64
        })
        .sum()
}

/// `budget` scaled by `factor` (at most 1), rounded up to a whole 10 µs, at least 10 µs,
/// never above `budget`.
fn scaled(budget: Nanos, factor: f64) -> Nanos {
    let step = 10_000u64;
    let ns = (budget.as_ns() as f64 * factor).ceil() as u64;
    Nanos::from_ns((ns.div_ceil(step).max(1) * step).min(budget.as_ns()))
}

/// `scenario` with every VCPU budget scaled by `factor` ([`scaled`]): each domain's own,
/// and those its changes set (`sched-set`, `xl sched-rtds`).
pub fn scale_budgets(scenario: &Scenario, factor: f64) -> Scenario {
    let mut out = scenario.clone();
    for d in &mut out.system.domains {
        d.vcpu.budget = scaled(d.vcpu.budget, factor);
    }
    for change in &mut out.system.changes {
        match &mut change.change {
            Change::SetParams { params, .. } => params.budget = scaled(params.budget, factor),
            Change::Xl(XlCommand::SchedRtds { budget_us, .. }) => {
                *budget_us = scaled(Nanos::from_us(*budget_us), factor).as_ns() / 1000;
            }
            _ => {}
        }
    }
    out
}

/// `scenario` with no VCPU running beyond its budget (`extratime = false` everywhere): the
/// supply the analysis counts on, and no more.
pub fn without_extratime(scenario: &Scenario) -> Scenario {
    let mut out = scenario.clone();
    for d in &mut out.system.domains {
        d.vcpu.extratime = Some(false);
    }
    for change in &mut out.system.changes {
        match &mut change.change {
            Change::SetParams { params, .. } => params.extratime = Some(false),
            Change::Xl(XlCommand::SchedRtds { extratime, .. }) => *extratime = Some(false),
            _ => {}
        }
    }
    out
}
