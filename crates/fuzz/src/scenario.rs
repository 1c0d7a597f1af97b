//! Scenario files: the reader, the builder and a short simulation.
//!
//! [`check`] reads a scenario as `rtvmm check` does. Refused: the error must name the file
//! and read well. Accepted:
//! 1. the normalised form (`rtvmm check`'s output) parses back to the same scenario and
//!    normalises to itself;
//! 2. it simulates — every core invariant checked after every step — for its duration or
//!    as much of it as [`STEP_TARGET`] steps cover (the cut is computed from
//!    `SystemSpec::estimate_work`, so one case stays well under a millisecond), without a
//!    simulator error (check accepted it, so the run must not refuse it), within
//!    [`STEP_BUDGET`] steps and never [`STUCK_STEPS`] steps at one instant (else a hang);
//! 3. the same holds under another policy (as `rtvmm sim --policy` runs it) when the
//!    scenario is valid under it;
//! 4. the results add up: busy + idle + overhead is the run's length on every pcpu, no
//!    job is counted twice or missed more than counted, ratios lie in [0, 1], and the
//!    results JSON reads back through `compare`'s reader.
//!
//! [`generate`] writes valid-ish scenarios from a tape of choices (see [`crate::text`]).

use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_scenario::Scenario;
use rtvmm_sim::{SimError, Simulation};
use rtvmm_system::results::RunResults;

use crate::text::{quote, Gen};
use crate::{readable, Checked, Failure, FailureKind, Outcome};

/// The steps a simulation is sized to: the simulated time is cut to what about this many
/// steps cover (by `estimate_work`).
pub const STEP_TARGET: u64 = 2_000;

/// The most steps one simulation may take before it counts as a hang: far above
/// [`STEP_TARGET`], since the estimate counts ticks, releases and periods but not every
/// preemption or slice end.
pub const STEP_BUDGET: u64 = 400_000;

/// The most consecutive steps at one instant before a run counts as stuck.
pub const STUCK_STEPS: u64 = 10_000;

const FILE: &str = "fuzz.toml";

/// Reads `text` as a scenario and, when accepted, checks it as the module docs say.
pub fn check(text: &str) -> Checked {
    let scenario = match Scenario::from_toml(text, FILE) {
        Ok(scenario) => scenario,
        Err(error) => {
            let message = error.to_string();
            if !message.starts_with(FILE) {
                return Err(Failure::wrong(format!(
                    "scenario error does not name the file: {message}"
                )));
            }
            readable("scenario", &message, text)?;
            return Ok(Outcome::Refused);
        }
    };
    round_trip(&scenario)?;
    simulate(&scenario)?;
    // As `rtvmm sim --policy` runs it: under another policy, picked by the input.
    let other = PolicyKind::ALL[(scenario.seed as usize ^ text.len()) % PolicyKind::ALL.len()];
    if let Ok(moved) = scenario.with_policy(other) {
        round_trip(&moved)?;
        simulate(&moved)?;
    }
    Ok(Outcome::Accepted)
}

/// The normalised form parses back to the same scenario and normalises to itself.
fn round_trip(scenario: &Scenario) -> Result<(), Failure> {
    let normal = scenario.to_toml();
    let again = Scenario::from_toml(&normal, FILE).map_err(|e| {
        Failure::wrong(format!(
            "check's normalised form is refused by check: {e}\n{normal}"
        ))
    })?;
    if &again != scenario {
        return Err(Failure::wrong(format!(
            "the normalised form reads as another scenario:\n{normal}\nfirst: {scenario:?}\nthen: {again:?}"
        )));
    }
    let twice = again.to_toml();
    if twice != normal {
        return Err(Failure::wrong(format!(
            "normalising twice changes the text:\n{normal}\n---\n{twice}"
        )));
    }
    Ok(())
}

/// The simulated time that about [`STEP_TARGET`] steps cover (at most the duration).
pub fn bounded_end(scenario: &Scenario) -> Nanos {
    let duration = scenario.duration;
    let steps = scenario.system.estimate_work(duration).steps();
    if steps <= STEP_TARGET {
        return duration;
    }
    let cut = duration.as_ns() as u128 * STEP_TARGET as u128 / steps as u128;
    Nanos((cut as u64).max(1))
}

/// Runs the scenario to [`bounded_end`] with invariants checked after every step.
fn simulate(scenario: &Scenario) -> Result<(), Failure> {
    let sim_error = |e: SimError| -> Failure {
        Failure::wrong(format!(
            "check accepted the scenario but the simulator refuses it: {e}"
        ))
    };
    let mut sim = Simulation::new(&scenario.system, scenario.seed, false).map_err(sim_error)?;
    sim.set_keep_jobs(false);
    // Checked here, so that a violation is a failure with its message, not a panic.
    sim.set_check_invariants(false);
    let end = bounded_end(scenario);
    let (mut steps, mut stuck, mut last) = (0u64, 0u64, Nanos::ZERO);
    while sim.now() < end {
        match sim.step(end) {
            Ok(_) => {}
            // A task overloaded long enough stops the run: legitimate, and named.
            Err(SimError::Backlog { .. }) => return Ok(()),
            Err(e) => return Err(sim_error(e)),
        }
        if let Err(e) = sim.machine().check_invariants() {
            return Err(Failure::new(
                FailureKind::Invariant,
                format!("at {} (step {steps}): {e}", sim.now()),
            ));
        }
        steps += 1;
        stuck = if sim.now() == last { stuck + 1 } else { 0 };
        last = sim.now();
        if steps > STEP_BUDGET || stuck > STUCK_STEPS {
            let estimate = scenario.system.estimate_work(end).steps();
            return Err(Failure::new(
                FailureKind::Hang,
                format!(
                    "{steps} steps to reach {} of {end} ({stuck} at that instant; estimated \
                     {estimate} steps)",
                    sim.now()
                ),
            ));
        }
    }
    sim.run_until(end).map_err(sim_error)?;
    if let Err(e) = sim.machine().check_invariants() {
        return Err(Failure::new(
            FailureKind::Invariant,
            format!("at the end {end}: {e}"),
        ));
    }
    let results = sim.results(&scenario.name, scenario.seed, end);
    results_add_up(&results, end)?;
    crate::results::read_back(&results.to_json())
}

/// What every run's results satisfy, whatever the scenario.
pub fn results_add_up(r: &RunResults, end: Nanos) -> Result<(), Failure> {
    let fail = |what: String| Err(Failure::wrong(format!("results: {what}")));
    for (i, p) in r.pcpus.iter().enumerate() {
        let total = p.busy_ns as u128 + p.idle_ns as u128 + p.overhead_ns as u128;
        if total != end.as_ns() as u128 {
            return fail(format!(
                "pcpu {i}: busy {} + idle {} + overhead {} = {total}, not the run's {}",
                p.busy_ns,
                p.idle_ns,
                p.overhead_ns,
                end.as_ns()
            ));
        }
    }
    let ratio_ok = |x: f64| (0.0..=1.0).contains(&x);
    let (mut jobs, mut missed) = (0u64, 0u64);
    for d in &r.domains {
        if d.missed > d.jobs || d.finished > d.released || d.jobs > d.released {
            return fail(format!(
                "domain '{}': released {}, finished {}, counted {}, missed {}",
                d.name, d.released, d.finished, d.jobs, d.missed
            ));
        }
        if !ratio_ok(d.deadline_miss_ratio) {
            return fail(format!(
                "domain '{}': deadline miss ratio {}",
                d.name, d.deadline_miss_ratio
            ));
        }
        let task_jobs: u64 = d.tasks.iter().map(|t| t.jobs).sum();
        let task_missed: u64 = d.tasks.iter().map(|t| t.missed).sum();
        if (task_jobs, task_missed) != (d.jobs, d.missed) {
            return fail(format!(
                "domain '{}': its tasks count {task_jobs} jobs, {task_missed} missed; the domain \
                 {}, {}",
                d.name, d.jobs, d.missed
            ));
        }
        if d.response_ns.count > d.finished || d.response_ns.max > end.as_ns() {
            return fail(format!(
                "domain '{}': {} response times (max {} ns) for {} finished jobs in {end}",
                d.name, d.response_ns.count, d.response_ns.max, d.finished
            ));
        }
        jobs += d.jobs;
        missed += d.missed;
    }
    if (jobs, missed) != (r.jobs, r.missed) || !ratio_ok(r.deadline_miss_ratio) {
        return fail(format!(
            "totals {} jobs, {} missed (ratio {}) but the domains add up to {jobs}, {missed}",
            r.jobs, r.missed, r.deadline_miss_ratio
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The generator.

/// Every policy's name and alias, the first the default.
fn policy_names() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = PolicyKind::ALL.iter().map(|k| k.name()).collect();
    names.extend(
        PolicyKind::ALL
            .iter()
            .flat_map(|k| k.aliases().iter().copied()),
    );
    names
}

/// What the generator knows while it writes: names, to refer to them (and clash).
struct Writer<'g, 'a> {
    g: &'g mut Gen<'a>,
    out: String,
    domains: Vec<String>,
    /// Whether VCPUs give their priority: all of them or none, unless odd.
    priorities: bool,
    /// The pcpus `[machine]` gives (1 when it does not).
    pcpus: u64,
    /// The `[[pool]]`s' names, as meant, with their first and last pcpu.
    pools: Vec<(String, u64, u64)>,
}

/// A scenario as TOML, decided by `tape` (see [`crate::tape`]).
pub fn generate(tape: &[u8]) -> String {
    let mut g = Gen::new(tape);
    let mut w = Writer {
        g: &mut g,
        out: String::new(),
        domains: Vec::new(),
        priorities: false,
        pcpus: 1,
        pools: Vec::new(),
    };
    w.scenario();
    w.out
}

impl Writer<'_, '_> {
    fn line(&mut self, key: &str, value: String) {
        self.out.push_str(key);
        self.out.push_str(" = ");
        self.out.push_str(&value);
        self.out.push('\n');
        // A key twice is a TOML error the reader must report, not trip on.
        if self.g.odd() && self.g.maybe(10) {
            self.out.push_str(&format!("{key} = {value}\n"));
        }
    }

    fn junk_key(&mut self) {
        if self.g.odd() && self.g.maybe(20) {
            let key = self
                .g
                .pick(&["wcte", "bugdet", "Name", "\"\"", "timeslice", "x.y"]);
            let value = self.g.odd_value();
            self.line(key, value);
        }
    }

    fn scenario(&mut self) {
        let policies = policy_names();
        self.priorities = self.g.maybe(20);
        if self.g.maybe(50) {
            let name = self.g.name("fuzzed");
            self.line("name", name);
        }
        if !(self.g.odd() && self.g.maybe(30)) {
            let duration = match self.g.below(4) {
                0 => self.g.time(1, 2000, "ms"),
                1 => self.g.time(1, 100, "s"),
                2 => self.g.time(1, 100_000, "us"),
                _ => self.g.time(1, 3600, "s"),
            };
            self.line("duration", duration);
        }
        if self.g.maybe(50) {
            let seed = self.g.integer(0, 1000);
            self.line("seed", seed);
        }
        self.junk_key();

        let domain_count = match self.g.below(16) {
            0 if self.g.odd() => 0,
            15 => self.g.between(5, 40) as usize,
            n => 1 + n % 4,
        };
        let added = self.g.below(3);
        self.domains = (1..=domain_count).map(|i| format!("d{i}")).collect();
        let added_names: Vec<String> = (1..=added).map(|i| format!("a{i}")).collect();

        if self.g.maybe(60) {
            self.out.push_str("\n[machine]\n");
            self.machine();
        }
        let policy = self.g.word(&policies);
        let swaps: Vec<String> = (0..self.g.below(3))
            .map(|_| self.g.word(&policies))
            .collect();
        let involves = |name: &str| {
            std::iter::once(&policy)
                .chain(&swaps)
                .any(|p| p.trim_matches('"') == name)
        };
        let arinc = involves("arinc653") || involves("arinc");
        let credit = involves("credit");
        let rtds = involves("rtds");
        self.out.push_str("\n[scheduler]\n");
        self.line("policy", policy.clone());
        if credit && self.g.maybe(50) || self.g.odd() && self.g.maybe(10) {
            self.credit();
        }
        if rtds && self.g.maybe(50) || self.g.odd() && self.g.maybe(10) {
            let mode = self.g.word(&["event", "quantum"]);
            self.line("rtds", format!("{{ mode = {mode} }}"));
        }
        if arinc || self.g.odd() && self.g.maybe(10) {
            let all: Vec<String> = self.domains.iter().chain(&added_names).cloned().collect();
            self.arinc_table(&all);
        }
        self.junk_key();
        if self.pcpus > 1 && self.g.maybe(40) || self.g.odd() && self.g.maybe(5) {
            self.pools(&policies);
        }

        for i in 0..domain_count {
            let name = self.domains[i].clone();
            self.out.push_str("\n[[domain]]\n");
            self.domain(&name, "domain");
        }
        self.events(&added_names, &swaps);
        if domain_count > 0 && self.g.maybe(20) {
            self.chain();
        }
    }

    /// `[[pool]]`s splitting the pcpus into consecutive runs (odd: overlapping, empty, out
    /// of range, of another type).
    fn pools(&mut self, policies: &[&str]) {
        let n = self.pcpus.max(1);
        let count = 1 + self.g.below(n.min(3) as usize) as u64;
        for i in 0..count {
            let (low, high) = (i * n / count, (i + 1) * n / count - 1);
            let meant = if i == 0 {
                "Pool-0".to_string()
            } else {
                format!("p{i}")
            };
            self.out.push_str("\n[[pool]]\n");
            if !(self.g.odd() && self.g.maybe(20)) {
                let name = self.g.name(&meant);
                self.line("name", name);
            }
            let pcpus = if self.g.odd() {
                self.g
                    .pick(&[
                        "\"0-1\"", "\"64\"", "\"1-0\"", "[]", "\"\"", "[0, 0]", "\"0,x\"", "[-1]",
                        "7",
                    ])
                    .to_string()
            } else if self.g.maybe(50) {
                format!("\"{low}-{high}\"")
            } else {
                let list: Vec<String> = (low..=high).map(|p| p.to_string()).collect();
                format!("[{}]", list.join(", "))
            };
            self.line("pcpus", pcpus);
            if !(self.g.odd() && self.g.maybe(20)) {
                // ARINC 653 needs a table no pool has: only when odd.
                let policy = if self.g.odd() {
                    self.g.word(policies)
                } else {
                    let fine: Vec<&str> = policies
                        .iter()
                        .copied()
                        .filter(|p| !p.starts_with("arinc"))
                        .collect();
                    self.g.word(&fine)
                };
                self.line("policy", policy);
            }
            if self.g.maybe(20) {
                let quantum = self.g.time(100, 2000, "us");
                self.line("quantum", quantum);
            }
            if self.g.maybe(20) {
                let migration = self.g.time(0, 50, "us");
                let lock = self.g.time(0, 500, "ns");
                self.line(
                    "overhead",
                    format!("{{ migration = {migration}, lock = {lock} }}"),
                );
            }
            self.junk_key();
            self.pools.push((meant, low, high));
        }
    }

    /// A pcpu set in `xl`'s form (`"0-2,5"`) within pcpus `first..=last`, usually; odd:
    /// outside them, malformed or of another type.
    fn cpus(&mut self, first: u64, last: u64) -> String {
        if self.g.odd() {
            return self
                .g
                .pick(&[
                    "\"9\"", "\"3-1\"", "\"\"", "\"x\"", "\"0-\"", "\"0,,1\"", "[]", "5", "\"all\"",
                ])
                .to_string();
        }
        let low = self.g.between(first, last);
        let high = self.g.between(low, last);
        if low == high {
            format!("\"{low}\"")
        } else {
            format!("\"{low}-{high}\"")
        }
    }

    /// A `[[chain]]` of tasks by `DOMAIN/TASK` (usually ones that exist).
    fn chain(&mut self) {
        self.out.push_str("\n[[chain]]\n");
        let name = self.g.name("c");
        self.line("name", name);
        let links: Vec<String> = (0..1 + self.g.below(3)).map(|_| self.task_ref()).collect();
        self.line("tasks", format!("[{}]", links.join(", ")));
        if self.g.maybe(50) {
            let bound = self.g.time(1, 20, "ms");
            self.line("bounds", format!("[{bound}]"));
        }
    }

    /// `"DOMAIN/TASK"` naming a task of a declared domain, usually.
    fn task_ref(&mut self) -> String {
        if self.g.odd() && self.g.maybe(30) {
            return self
                .g
                .pick(&[
                    "\"d1\"",
                    "\"/t1\"",
                    "\"d1/\"",
                    "\"nobody/t1\"",
                    "\"d1/t9\"",
                    "1",
                ])
                .to_string();
        }
        let domain = if self.domains.is_empty() {
            "d1".to_string()
        } else {
            let i = self.g.below(self.domains.len());
            self.domains[i].clone()
        };
        let task = 1 + self.g.below(2);
        quote(&format!("{domain}/t{task}"))
    }

    fn machine(&mut self) {
        if self.g.maybe(50) {
            // Several pcpus as often as one; odd: 0, 65 or another type.
            self.pcpus = 1 + self.g.below(4) as u64;
            let pcpus = self.g.integer(self.pcpus, self.pcpus);
            self.line("pcpus", pcpus);
        }
        if self.g.maybe(70) {
            let quantum = match self.g.below(4) {
                0 => "\"1ms\"".to_string(),
                1 => self.g.time(10, 1000, "us"),
                2 => self.g.time(1, 10, "ms"),
                _ => self.g.time(1, 1000, "ns"),
            };
            self.line("quantum", quantum);
        }
        if self.g.maybe(30) {
            let mode = self.g.word(&["exact", "tick"]);
            self.line("replenishment", mode);
        }
        if self.g.maybe(40) {
            let mut parts = Vec::new();
            if self.g.maybe(80) {
                parts.push(format!("do_schedule = {}", self.g.time(0, 2000, "ns")));
            }
            if self.g.maybe(80) {
                parts.push(format!("context_switch = {}", self.g.time(0, 20, "us")));
            }
            if self.pcpus > 1 && self.g.maybe(40) {
                parts.push(format!("migration = {}", self.g.time(0, 50, "us")));
            }
            if self.pcpus > 1 && self.g.maybe(20) {
                parts.push(format!("lock = {}", self.g.time(0, 500, "ns")));
            }
            self.line("overhead", format!("{{ {} }}", parts.join(", ")));
        }
        if self.g.maybe(20) {
            let charge = self.g.word(&["incoming", "none"]);
            self.line("overhead_charge", charge);
        }
        self.junk_key();
    }

    fn credit(&mut self) {
        let mut parts = Vec::new();
        if self.g.maybe(70) {
            let tick = match self.g.below(3) {
                0 => "\"10ms\"".to_string(),
                1 => self.g.time(1, 30, "ms"),
                _ => self.g.time(100, 5000, "us"),
            };
            parts.push(format!("tick = {tick}"));
        }
        if self.g.maybe(60) {
            parts.push(format!("ticks_per_slice = {}", self.g.integer(1, 5)));
        }
        if self.g.maybe(40) {
            parts.push(format!("ticks_per_accounting = {}", self.g.integer(1, 5)));
        }
        self.line("credit", format!("{{ {} }}", parts.join(", ")));
    }

    fn arinc_table(&mut self, names: &[String]) {
        let mut frames = Vec::new();
        let mut total_ms = 0;
        for name in names {
            if self.g.odd() && self.g.maybe(20) {
                continue; // a domain without a frame
            }
            let runtime_ms = self.g.between(1, 5);
            total_ms += runtime_ms;
            let domain = self.g.name(name);
            let runtime = if self.g.odd() {
                self.g.odd_time()
            } else {
                format!("\"{runtime_ms}ms\"")
            };
            frames.push(format!("{{ domain = {domain}, runtime = {runtime} }}"));
        }
        if self.g.odd() && self.g.maybe(10) {
            // More frames than Xen's table holds.
            let extra = self.g.between(60, 70) as usize;
            frames.extend((0..extra).map(|_| "{ domain = \"d1\", runtime = \"1ms\" }".into()));
        }
        let major = self.g.time(total_ms.max(1), total_ms + 20, "ms");
        self.line("major_frame", major);
        self.line("minor_frames", format!("[{}]", frames.join(", ")));
    }

    /// A `[[domain]]` or `[event.domain]` table's keys and tasks; `table` is its header.
    fn domain(&mut self, name: &str, table: &str) {
        if !(self.g.odd() && self.g.maybe(20)) {
            let written = self.g.name(name);
            self.line("name", written);
        }
        let guest = if self.g.maybe(50) {
            Some(self.g.word(&["rm", "dm", "fp", "edf"]))
        } else {
            None
        };
        if let Some(guest) = &guest {
            self.line("guest", guest.clone());
        }
        let fp = guest.as_deref() == Some("\"fp\"");
        if !(self.g.odd() && self.g.maybe(20)) {
            let vcpu = self.vcpu();
            self.line("vcpu", vcpu);
        }
        // Several pcpus: a pool, an affinity, several VCPUs.
        let several = self.pcpus > 1;
        // The pcpus this domain's pool has (Pool-0's when it names none).
        let mut range = self
            .pools
            .first()
            .map_or((0, self.pcpus.max(1) - 1), |p| (p.1, p.2));
        if !self.pools.is_empty() && self.g.maybe(60) || self.g.odd() && self.g.maybe(5) {
            let meant = if self.pools.is_empty() {
                "rt".to_string()
            } else {
                let (name, low, high) = self.pools[self.g.below(self.pools.len())].clone();
                range = (low, high);
                name
            };
            let pool = self.g.name(&meant);
            self.line("pool", pool);
        }
        let mut vcpus = 1;
        if several && self.g.maybe(25) || self.g.odd() && self.g.maybe(5) {
            vcpus = 1 + self.g.below((range.1 - range.0 + 1) as usize) as u64;
            let written = self.g.integer(vcpus, vcpus);
            self.line("vcpus", written);
        }
        let smp = if vcpus > 1 && self.g.maybe(60) || self.g.odd() && self.g.maybe(5) {
            let smp = self.g.word(&["global", "partitioned"]);
            self.line("smp", smp.clone());
            smp == "\"partitioned\""
        } else {
            false
        };
        if several && self.g.maybe(50) || self.g.odd() && self.g.maybe(5) {
            let affinity = if vcpus > 1 && self.g.maybe(50) {
                let each: Vec<String> = (0..vcpus).map(|_| self.cpus(range.0, range.1)).collect();
                format!("[{}]", each.join(", "))
            } else {
                self.cpus(range.0, range.1)
            };
            self.line("affinity", affinity);
        }
        self.junk_key();
        let tasks = match self.g.below(8) {
            0 if self.g.odd() => 0,
            7 => self.g.between(4, 12) as usize,
            n => 1 + n % 3,
        };
        for j in 1..=tasks {
            self.out.push_str(&format!("\n[[{table}.task]]\n"));
            self.task(j, fp);
            if smp || self.g.odd() && self.g.maybe(5) {
                let on = self.g.integer(0, vcpus - 1);
                self.line("vcpu", on);
            }
        }
    }

    fn vcpu(&mut self) -> String {
        let period_ms = self.g.pick(&[10u64, 5, 20, 40, 100, 1, 7]);
        let mut parts = Vec::new();
        if !(self.g.odd() && self.g.maybe(20)) {
            let budget_us = self.g.between(100, period_ms * 1000 / 2);
            parts.push(format!(
                "budget = {}",
                self.g.time(budget_us, budget_us, "us")
            ));
            parts.push(format!(
                "period = {}",
                self.g.time(period_ms, period_ms, "ms")
            ));
        }
        if self.priorities != (self.g.odd() && self.g.maybe(20)) {
            parts.push(format!("priority = {}", self.g.integer(1, 10)));
        }
        if self.g.maybe(15) {
            parts.push(format!("weight = {}", self.g.integer(1, 65535)));
        }
        if self.g.maybe(15) {
            parts.push(format!("cap = {}", self.g.integer(0, 100)));
        }
        if self.g.maybe(15) {
            let extratime = if self.g.odd() {
                self.g.odd_value()
            } else {
                self.g.pick(&["true", "false"]).to_string()
            };
            parts.push(format!("extratime = {extratime}"));
        }
        if self.g.maybe(15) {
            parts.push(format!("max_replenishments = {}", self.g.integer(1, 10)));
        }
        if self.g.maybe(15) {
            parts.push(format!("offset = {}", self.g.time(0, 10, "ms")));
        }
        if self.g.odd() && self.g.maybe(10) {
            return self.g.odd_value();
        }
        format!("{{ {} }}", parts.join(", "))
    }

    fn task(&mut self, index: usize, fp: bool) {
        if !(self.g.odd() && self.g.maybe(10)) {
            let name = self.g.name(&format!("t{index}"));
            self.line("name", name);
        }
        let kind = match self.g.below(7) {
            0..=2 => None,
            3 => Some("sporadic"),
            4 if self.domains.len() > 1 || self.g.odd() => Some("triggered"),
            _ => Some("aperiodic"),
        };
        if let Some(kind) = kind {
            let written = if self.g.odd() {
                self.g
                    .word(&["periodic", "sporadic", "aperiodic", "triggered"])
            } else {
                quote(kind)
            };
            self.line("kind", written);
        }
        if kind == Some("triggered") || self.g.odd() && self.g.maybe(5) {
            let trigger = self.task_ref();
            self.line("trigger", trigger);
            if self.g.maybe(70) {
                let delay = self.g.time(0, 500, "us");
                self.line("delay", delay);
            }
        }
        let period_us = self
            .g
            .pick(&[10_000u64, 5_000, 20_000, 50_000, 100_000, 1_000, 333]);
        if !(self.g.odd() && self.g.maybe(20)) {
            let period = self.g.time(period_us, period_us, "us");
            self.line("period", period);
        }
        let wcet_us = self.g.between(1, (period_us / 2).max(1));
        if !(self.g.odd() && self.g.maybe(20)) {
            let wcet = self.g.time(wcet_us, wcet_us, "us");
            self.line("wcet", wcet);
        }
        if self.g.maybe(20) {
            let deadline = self.g.time(wcet_us, period_us * 2, "us");
            self.line("deadline", deadline);
        }
        if !matches!(kind, Some("aperiodic" | "triggered")) && self.g.maybe(15) {
            let offset = self.g.time(0, 20, "ms");
            self.line("offset", offset);
        }
        if self.g.maybe(15) {
            let etf = if self.g.odd() {
                self.g
                    .pick(&[
                        "0",
                        "0.0",
                        "-0.5",
                        "1.0000001",
                        "2",
                        "1e-300",
                        "nan",
                        "\"0.5\"",
                    ])
                    .to_string()
            } else {
                format!("0.{}", self.g.between(1, 9))
            };
            self.line("etf", etf);
        } else if self.g.maybe(10) {
            let min_exec = self.g.time(1, wcet_us, "us");
            self.line("min_exec", min_exec);
        }
        if fp || self.g.maybe(5) {
            let priority = self.g.integer(index as u64, index as u64);
            self.line("priority", priority);
        }
        match kind {
            Some("triggered") => {}
            Some("sporadic") if self.g.maybe(50) => {
                let gap = self.g.time(0, 50, "ms");
                self.line("max_extra_gap", gap);
            }
            Some("aperiodic") => {
                if self.g.maybe(50) {
                    let count = self.g.below(6);
                    let times: Vec<String> =
                        (0..count).map(|_| self.g.time(0, 500, "ms")).collect();
                    self.line("releases", format!("[{}]", times.join(", ")));
                } else {
                    let gap = self.g.time(1, 100, "ms");
                    self.line("mean_gap", gap);
                }
            }
            _ => {}
        }
        self.junk_key();
    }

    fn events(&mut self, added: &[String], swaps: &[String]) {
        // Every swap and every added domain the header planned for, and a few more
        // events, in an order the tape picks.
        let mut plan: Vec<(&str, Option<String>)> = swaps
            .iter()
            .map(|p| ("swap-policy", Some(p.clone())))
            .chain(added.iter().map(|a| ("add-domain", Some(a.clone()))))
            .collect();
        for _ in 0..self.g.below(4) {
            let action = self
                .g
                .pick(&["sched-set", "remove-domain", "sched-set", "swap-policy"]);
            plan.push((action, None));
        }
        if self.pcpus > 1 || self.g.odd() {
            for _ in 0..self.g.below(4) {
                plan.push(("xl", None));
            }
        }
        let mut at_ms = 0;
        let mut live = self.domains.clone();
        while !plan.is_empty() {
            let (action, planned) = plan.remove(self.g.below(plan.len()));
            // In time order, usually.
            at_ms += self.g.between(0, 300);
            let at = if self.g.odd() {
                self.g.odd_time()
            } else {
                format!("\"{at_ms}ms\"")
            };
            self.out.push_str("\n[[event]]\n");
            self.line("at", at);
            if action == "xl" {
                let command = self.xl(&live);
                self.line("xl", command);
                continue;
            }
            let written = if self.g.odd() {
                self.g.word(&[action, "set", "add"])
            } else {
                quote(action)
            };
            self.line("action", written);
            let target = if live.is_empty() || self.g.odd() {
                "nobody".to_string()
            } else {
                let i = self.g.below(live.len());
                live[i].clone()
            };
            match action {
                "swap-policy" => {
                    // Unplanned: a policy that needs no table in the header.
                    let mut policies = policy_names();
                    policies.retain(|p| !p.starts_with("arinc"));
                    let policy = planned.unwrap_or_else(|| self.g.word(&policies));
                    self.line("policy", policy);
                }
                "sched-set" => {
                    let target = self.g.name(&target);
                    self.line("domain", target);
                    let period_ms = self.g.pick(&[10u64, 20, 5, 40]);
                    if self.g.maybe(60) {
                        let budget = self.g.time(1, period_ms / 2, "ms");
                        self.line("budget", budget);
                    }
                    if self.g.maybe(30) {
                        let period = self.g.time(period_ms, period_ms, "ms");
                        self.line("period", period);
                    }
                    for (key, low, high) in [
                        ("priority", 1, 10),
                        ("weight", 1, 1000),
                        ("cap", 0, 100),
                        ("max_replenishments", 1, 9),
                    ] {
                        if self.g.maybe(10) {
                            let value = self.g.integer(low, high);
                            self.line(key, value);
                        }
                    }
                    if self.g.maybe(10) {
                        self.line("extratime", "true".into());
                    }
                }
                "add-domain" => {
                    let name = planned.unwrap_or_else(|| format!("x{at_ms}"));
                    live.push(name.clone());
                    if self.g.odd() && self.g.maybe(20) {
                        let odd = self.g.odd_value();
                        self.line("domain", odd);
                    } else {
                        self.out.push_str("[event.domain]\n");
                        self.domain(&name, "event.domain");
                    }
                }
                _ => {
                    if !self.g.odd() {
                        live.retain(|d| *d != target);
                    }
                    let target = self.g.name(&target);
                    self.line("domain", target);
                }
            }
        }
    }

    /// One `xl` command line as a TOML string, usually well formed and about the pools,
    /// domains and pcpus there are (odd: malformed, or about what is not there).
    fn xl(&mut self, live: &[String]) -> String {
        if self.g.odd() && self.g.maybe(30) {
            return self
                .g
                .pick(&[
                    "\"\"",
                    "\"xl\"",
                    "\"sched-rtds -d\"",
                    "\"sched-rtds -d d1 -p 5 -b 5\"",
                    "\"sched-rtds -d d1 -p 1000 -b 2000\"",
                    "\"vcpu-pin d1 0 99\"",
                    "\"cpupool-cpu-add Pool-0 0\"",
                    "\"cpupool-destroy Pool-0\"",
                    "\"sched-credit -d d1 -w 0\"",
                    "\"cpupool-create name=\\\"q\\\" sched=\\\"rtds\\\"\"",
                    "\"vcpu-pin d1 all 0-1,\"",
                    "\"cpupool-migrate d1 nowhere\"",
                    "7",
                ])
                .to_string();
        }
        let domain = if live.is_empty() || self.g.odd() && self.g.maybe(20) {
            "nobody".to_string()
        } else {
            live[self.g.below(live.len())].clone()
        };
        let pool = match self.pools.len() {
            0 => "Pool-0".to_string(),
            n => self.pools[self.g.below(n)].0.clone(),
        };
        let cpu = self.g.below(self.pcpus.max(1) as usize + 1);
        let line = match self.g.below(7) {
            0 => {
                let sched = ["rtds", "credit", "deferrable", "sporadic", "sedf"][self.g.below(5)];
                format!("cpupool-create q{} sched={sched}", self.g.below(3))
            }
            1 => format!("cpupool-cpu-add {pool} {cpu}"),
            2 => format!("cpupool-cpu-remove {pool} {cpu}"),
            3 => format!("cpupool-migrate {domain} {pool}"),
            4 => {
                let vcpu = if self.g.maybe(50) {
                    "all".to_string()
                } else {
                    self.g.below(2).to_string()
                };
                let cpus = if self.g.maybe(20) {
                    "all".to_string()
                } else {
                    let last = self.pcpus.max(1) - 1;
                    self.cpus(0, last).trim_matches('"').to_string()
                };
                format!("vcpu-pin {domain} {vcpu} {cpus}")
            }
            5 => {
                let period = self.g.pick(&[10_000u64, 4_000, 20_000, 100]);
                let budget = self.g.between(10, period);
                let vcpu = if self.g.maybe(30) { " -v all" } else { "" };
                let extra = ["", " -e 0", " -e 1"][self.g.below(3)];
                format!("sched-rtds -d {domain}{vcpu} -p {period} -b {budget}{extra}")
            }
            _ => {
                let weight = self.g.between(1, 65_535);
                let cap = self.g.between(0, 100);
                format!("sched-credit -d {domain} -w {weight} -c {cap}")
            }
        };
        quote(&line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_tape_gives_a_valid_scenario() {
        let text = generate(&[]);
        Scenario::from_toml(&text, "t.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    }

    #[test]
    fn a_run_is_cut_to_about_the_step_target() {
        let text = "duration = \"3600s\"\n[machine]\nquantum = \"1ns\"\n\
                    [[domain]]\nname = \"d\"\nvcpu = { budget = \"1ms\", period = \"2ms\" }\n\
                    [[domain.task]]\nname = \"t\"\nperiod = \"3ms\"\nwcet = \"1ms\"\n";
        let scenario = Scenario::from_toml(text, "t.toml").unwrap();
        let end = bounded_end(&scenario);
        let steps = scenario.system.estimate_work(end).steps();
        assert!(end < scenario.duration, "{end}");
        assert!(
            (STEP_TARGET / 2..=STEP_TARGET * 11 / 10).contains(&steps),
            "{steps} steps to {end}"
        );
        assert_eq!(check(text), Ok(Outcome::Accepted));
    }

    #[test]
    fn results_that_do_not_add_up_are_caught() {
        let mut results = RunResults::default();
        results.pcpus.push(rtvmm_system::results::PcpuResult {
            busy_ns: 10,
            idle_ns: 5,
            ..Default::default()
        });
        assert!(results_add_up(&results, Nanos(15)).is_ok());
        assert!(results_add_up(&results, Nanos(16)).is_err());
        results.deadline_miss_ratio = 1.5;
        assert!(results_add_up(&results, Nanos(15)).is_err());
    }

    #[test]
    fn bad_input_is_refused_not_failed() {
        assert_eq!(check("duration = 5"), Ok(Outcome::Refused));
        assert_eq!(check("[[[["), Ok(Outcome::Refused));
    }
}
