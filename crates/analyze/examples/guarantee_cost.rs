//! What a guarantee costs (issue 24): for random systems, the bandwidth of the VCPUs that
//! `rtvmm analyze` computes (`Σ Θ/Π` of the scenario `--emit scenario` writes) against the
//! least bandwidth that simulates without a miss, found by scaling every emitted budget by
//! one common factor.
//!
//! ```text
//! cargo run --release -p rtvmm-analyze --example guarantee_cost -- [--pcpus one|many]
//!     [--systems N] [--seed S] [--policy P] [--steps K]
//! ```
//!
//! - `--pcpus one` (default): single-pcpu systems, under
//!   `--policy` (default `periodic`); `many`: 2–8 pcpus, pools, global and partitioned
//!   guests (`tests/support`, as the multicore soundness property draws them). A system
//!   whose report does not guarantee every domain (not covered, not schedulable) is
//!   listed after the table with the reason.
//! - Every job runs its wcet and every task is periodic ([`SystemDraw::worst_case`]): the
//!   demand the analysis assumes; no VCPU has extratime: the supply it assumes.
//! - Each system is analysed with the general sbf (`--sbf general`) in three phasings —
//!   synchronous and two random ones — and each phasing's emitted scenario is simulated.
//!   The factor `f ∈ (0, 1]` is found by bisection (`--steps`, default 8: to 1/256): at
//!   `f` every phasing runs without a miss in any domain (budgets `⌈f·Θ⌉` to 10 µs, at
//!   least 10 µs). Three phasings and a few hyperperiods see less than the worst case, and
//!   misses need not be monotone in `f`: the least bandwidth is what this search finds,
//!   below what a proof would need — the table bounds the analysis's pessimism from above.
//! - A run at `f = 1` that misses is a soundness bug and is printed as such.
//!
//! Prints a markdown table: per measured system its pcpus, domains, tasks, task
//! utilisation `U_W`, the analysed `Σ Θ/Π`, the least simulated one, the factor and the
//! ratio; then a summary and the systems not measured. Exits with 1 if a system missed at
//! its analysed interfaces.

#[path = "../tests/support/mod.rs"]
mod support;

use rtvmm_analysis::SbfMode;
use rtvmm_analyze::{analyze, emit_scenario, Input, Options};
use rtvmm_scenario::Scenario;
use support::{
    guarantees, misses, mix, rephase, scale_budgets, scenario_text, tape_from_seed, vcpu_bandwidth,
    without_extratime, Shape, SystemDraw,
};

struct Args {
    many: bool,
    systems: u64,
    seed: u64,
    policy: &'static str,
    steps: u32,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        many: false,
        systems: 20,
        seed: 1,
        policy: "periodic",
        steps: 8,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = || value.parse::<u64>().map_err(|e| format!("{flag}: {e}"));
        match flag.as_str() {
            "--pcpus" => {
                args.many = match value.as_str() {
                    "one" => false,
                    "many" => true,
                    _ => return Err(format!("--pcpus: 'one' or 'many', not '{value}'")),
                }
            }
            "--systems" => args.systems = number()?,
            "--seed" => args.seed = number()?,
            "--steps" => args.steps = number()? as u32,
            "--policy" => {
                args.policy = support::SERVER_POLICIES
                    .iter()
                    .chain(&["rtds", "sedf"])
                    .find(|p| **p == value)
                    .copied()
                    .ok_or_else(|| format!("--policy: unknown '{value}'"))?
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(args)
}

/// One system's row.
enum Row {
    /// Why there is nothing to measure.
    NotGuaranteed(String),
    /// A miss at the analysed interfaces.
    Unsound(String),
    Measured {
        analysed: f64,
        least: f64,
        factor: f64,
    },
}

/// The emitted scenario of each phasing, or why there is none.
fn emitted_phasings(system: &SystemDraw) -> Result<Vec<Scenario>, String> {
    let options = Options {
        sbf: SbfMode::General,
        ..Options::default()
    };
    let mut out = Vec::new();
    for phasing in [None, Some(system.phasings[0]), Some(system.phasings[1])] {
        let text = scenario_text(system, phasing);
        let input = Input::Scenario(
            Scenario::from_toml(&text, "drawn.toml").map_err(|e| format!("invalid: {e}"))?,
        );
        let report = analyze(&input, &options).map_err(|e| e.to_string())?;
        if let Some(reason) = report.not_covered.first() {
            return Err(format!("not covered: {reason}"));
        }
        if let Some(d) = report.domains.iter().find(|d| !d.schedulable) {
            let reason = d.reason.as_deref().unwrap_or("not schedulable");
            return Err(format!("{}: {reason}", d.name));
        }
        if guarantees(&report).len() < report.domains.len() {
            return Err("not every domain guaranteed".to_string());
        }
        let emitted = emit_scenario(&input, &report).map_err(|e| e.to_string())?;
        let mut scenario =
            Scenario::from_toml(&emitted, "emitted.toml").map_err(|e| e.to_string())?;
        // The emitted file keeps the phasing's offsets; set them again in case it did not.
        rephase(&mut scenario, phasing);
        // RTDS's extratime (on by default) would serve any budget from idle time.
        let scenario = without_extratime(&scenario);
        let emitted_bandwidth = vcpu_bandwidth(&scenario);
        if (emitted_bandwidth - report.u_rm).abs() > 1e-9 {
            eprintln!(
                "note: the emitted VCPUs add up to {emitted_bandwidth:.6}, the report's U_RM is \
                 {:.6}",
                report.u_rm
            );
        }
        out.push(scenario);
    }
    Ok(out)
}

/// Every phasing runs without a miss with its budgets scaled by `factor`.
fn passes(phasings: &[Scenario], factor: f64) -> bool {
    phasings.iter().all(|s| {
        misses(&scale_budgets(s, factor))
            .iter()
            .all(|(_, m)| *m == 0)
    })
}

fn measure(system: &SystemDraw, steps: u32) -> Row {
    let phasings = match emitted_phasings(system) {
        Ok(p) => p,
        Err(reason) => return Row::NotGuaranteed(reason),
    };
    let bandwidth = |factor: f64| {
        phasings
            .iter()
            .map(|s| vcpu_bandwidth(&scale_budgets(s, factor)))
            .fold(0.0, f64::max)
    };
    if !passes(&phasings, 1.0) {
        let missed = phasings
            .iter()
            .flat_map(|s| misses(s).into_iter().filter(|(_, m)| *m > 0))
            .map(|(d, m)| format!("{d}: {m}"))
            .collect::<Vec<_>>();
        return Row::Unsound(format!(
            "MISS at the analysed interfaces ({})",
            missed.join(", ")
        ));
    }
    let (mut lo, mut hi) = (0.0, 1.0);
    for _ in 0..steps {
        let mid = (lo + hi) / 2.0;
        if passes(&phasings, mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Row::Measured {
        analysed: bandwidth(1.0),
        least: bandwidth(hi),
        factor: hi,
    }
}

fn main() {
    let args = match parse_args() {
        Ok(args) => args,
        Err(e) => {
            eprintln!("guarantee_cost: {e}");
            std::process::exit(2);
        }
    };
    let shape = if args.many {
        Shape::multicore()
    } else {
        Shape::one_pcpu(args.policy)
    };
    println!("| system | pcpus | domains | tasks | U_W | Σ Θ/Π analysed | Σ Θ/Π least simulated | factor | analysed ÷ least |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let mut ratios = Vec::new();
    let (mut over_analysed, mut over_least) = (0.0, 0.0);
    let mut unmeasured = Vec::new();
    let mut unsound = 0;
    for i in 0..args.systems {
        let system = SystemDraw::decode(&shape, &tape_from_seed(mix(args.seed) ^ i)).worst_case();
        let tasks: usize = system.domains.iter().map(|d| d.tasks.len()).sum();
        let u_w: f64 = system
            .domains
            .iter()
            .flat_map(|d| &d.tasks)
            .map(|t| t.wcet_ms as f64 / t.period_ms as f64)
            .sum();
        let head = format!(
            "| {i} | {} | {} | {tasks} | {u_w:.3} |",
            system.pcpus,
            system.domains.len()
        );
        match measure(&system, args.steps) {
            Row::NotGuaranteed(reason) => unmeasured.push(format!("system {i}: {reason}")),
            Row::Unsound(reason) => {
                unsound += 1;
                println!("{head} — | — | — | **{reason}** |");
            }
            Row::Measured {
                analysed,
                least,
                factor,
            } => {
                ratios.push(analysed / least);
                over_analysed += analysed - u_w;
                over_least += least - u_w;
                println!(
                    "{head} {analysed:.3} | {least:.3} | {factor:.3} | {:.2} |",
                    analysed / least
                );
            }
        }
    }
    ratios.sort_by(f64::total_cmp);
    println!();
    if ratios.is_empty() {
        println!("No system was guaranteed: nothing measured.");
    } else {
        let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
        println!(
            "{} of {} systems measured: analysed ÷ least simulated bandwidth median {:.2}, \
             mean {mean:.2}, range {:.2}–{:.2}; bandwidth above U_W: analysed {:.3}, least \
             simulated {:.3} in all ({:.1}×).",
            ratios.len(),
            args.systems,
            ratios[ratios.len() / 2],
            ratios[0],
            ratios[ratios.len() - 1],
            over_analysed,
            over_least,
            over_analysed / over_least.max(f64::MIN_POSITIVE)
        );
    }
    if !unmeasured.is_empty() {
        println!(
            "\nNot guaranteed, so not measured ({} systems):",
            unmeasured.len()
        );
        for line in &unmeasured {
            println!("- {line}");
        }
    }
    if unsound > 0 {
        println!("{unsound} system(s) missed at the analysed interfaces.");
        std::process::exit(1);
    }
}
