//! The registry of experiments: one file per experiment, one entry per file in
//! [`REGISTRY`].
//!
//! # Adding an experiment
//! 1. Write `src/experiments/<name>.rs` with `pub const EXPERIMENT: Experiment` and its
//!    `run(out: &mut Output)`: read sizes from `out.options` (honour `quick`, `seed`,
//!    `duration`, `policies`), record parameters with `out.param`, run the sweep with
//!    `out.sweep`, write CSVs, tables and figures with `out.csv` / `out.table` /
//!    `out.figure`, and the main results with `out.finding`. An experiment that generates
//!    task sets also sets `draws` and states each qualitative finding as a check,
//!    `out.check(finding, holds)`, evaluated on its runs: with several draws
//!    (`--seeds N`) its `run` is called once per draw and the report counts the draws in
//!    which each finding holds.
//! 2. Add `pub mod <name>;` below and its `EXPERIMENT` to [`REGISTRY`] (replacing its
//!    "planned" entry if there is one).
//! 3. Add a `--quick` test in `tests/`.

use crate::error::ExperimentError;
use crate::report::Output;

pub mod csa_arinc;
pub mod csa_common;
pub mod csa_etf;
pub mod csa_periods;
pub mod eval_affinity;
pub mod eval_contention;
pub mod latency;
pub mod multicore_common;
pub mod packet_latency;
pub mod rtxen_capacity;
pub mod rtxen_isolation;
pub mod rtxen_overhead;
pub mod rtxen_quantum;
pub mod rtxen_theory;

/// An experiment's entry point.
pub type RunFn = fn(&mut Output) -> Result<(), ExperimentError>;

/// One experiment of `rtvmm experiment NAME`.
#[derive(Clone, Copy, Debug)]
pub struct Experiment {
    /// The command-line name.
    pub name: &'static str,
    /// A short title.
    pub title: &'static str,
    /// What it runs and what it shows (Markdown, a paragraph or two).
    pub description: &'static str,
    /// `None` for an experiment that is listed but not implemented yet.
    pub run: Option<RunFn>,
    /// Whether it also runs in real time on this machine (`--host`,
    /// [`crate::driver::Driver::Host`]); its `run` then reads `out.options.driver`.
    pub host: bool,
    /// For an experiment that generates task sets: how many task-set draws its full run
    /// makes unless `--seeds` says (`--quick` makes one; see [`crate::draws`]). `None`:
    /// it draws no task sets, and runs once.
    pub draws: Option<usize>,
}

/// An experiment that is described here and implemented later.
#[allow(dead_code)] // every listed experiment is implemented at the moment
const fn planned(name: &'static str, title: &'static str, description: &'static str) -> Experiment {
    Experiment {
        name,
        title,
        description,
        run: None,
        host: false,
        draws: None,
    }
}

/// Every experiment, in the order `rtvmm experiment list` shows them.
pub const REGISTRY: &[Experiment] = &[
    rtxen_quantum::EXPERIMENT,
    rtxen_overhead::EXPERIMENT,
    rtxen_isolation::EXPERIMENT,
    rtxen_capacity::EXPERIMENT,
    rtxen_theory::EXPERIMENT,
    csa_periods::EXPERIMENT,
    csa_etf::EXPERIMENT,
    csa_arinc::EXPERIMENT,
    eval_affinity::EXPERIMENT,
    eval_contention::EXPERIMENT,
    latency::EXPERIMENT,
    packet_latency::EXPERIMENT,
];

/// The experiment named `name`.
pub fn find(name: &str) -> Result<&'static Experiment, ExperimentError> {
    REGISTRY
        .iter()
        .find(|e| e.name == name.trim())
        .ok_or_else(|| ExperimentError::UnknownExperiment {
            name: name.to_string(),
            known: REGISTRY
                .iter()
                .map(|e| e.name)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The experiments that run on the host (`--host`), by name.
pub fn host_experiments() -> Vec<&'static str> {
    REGISTRY.iter().filter(|e| e.host).map(|e| e.name).collect()
}

/// The error for `--host` on `name`, an experiment that runs only in the simulator.
pub fn host_refused(name: &str) -> ExperimentError {
    ExperimentError::option(
        "--host",
        format!(
            "only {} run on the host; {name} runs in the simulator only (drop --host)",
            host_experiments().join(" and ")
        ),
    )
}

/// `rtvmm experiment list`: every experiment with its title and description.
pub fn list() -> String {
    let mut out = String::from("Experiments (rtvmm experiment NAME [--quick] [--seed S] ...):\n");
    for e in REGISTRY {
        let status = match (e.run.is_some(), e.host) {
            (false, _) => "  [planned]",
            (true, true) => "  [also --host]",
            (true, false) => "",
        };
        let draws = e
            .draws
            .map_or_else(String::new, |n| format!("  [--seeds {n} by default]"));
        out.push_str(&format!(
            "\n{:<16} {}{}{}\n",
            e.name, e.title, status, draws
        ));
        for line in wrap(e.description, 72) {
            out.push_str(&format!("{:<16} {}\n", "", line));
        }
    }
    out
}

/// Greedy word wrap.
fn wrap(text: &str, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > width {
            lines.push(std::mem::take(&mut line));
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}
