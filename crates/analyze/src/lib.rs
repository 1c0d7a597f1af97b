//! # `rtvmm analyze` and `rtvmm check --admit`
//!
//! A scenario (or a CARTS XML file) through the compositional analysis of
//! [`rtvmm_analysis`], and the results back out as a readable table, JSON, a runnable
//! scenario whose VCPUs are the interfaces, or `xl sched-rtds` commands for a Xen host.
//! This module converts and reports; the analysis itself — interfaces, the root, a typed
//! verdict per domain and per task — is [`rtvmm_analysis::system::analyze`].
//!
//! | module | concern |
//! |---|---|
//! | `options` | the command line's options (`Options`, lengths, period ranges, fixed periods) |
//! | `input` | what is read: a scenario, or a CARTS XML file ([`Input`]) |
//! | `convert` | input conversion: scenario or CARTS → the analysis's [`System`](rtvmm_analysis::system::System), in units, options applied |
//! | `names` | the names every output shares (guests, servers, sbf forms, times) |
//! | `report` | the [`Report`]: what was analysed and found, per domain and task (the JSON) |
//! | `words` | the verdicts put into words |
//! | `build` | the report, built at the end from the converted input and the analysis's result |
//! | `multicore` | several pcpus, pools, VCPUs: components, MPR interfaces, a root per pool |
//! | `render` | the table, JSON and `xl` lines |
//! | `emit` | `--emit scenario`: a runnable scenario whose VCPUs are the interfaces |
//! | `models` | a CARTS file under `--model prm\|mpr\|dmpr`, `--table` (per period, as CARTS prints), `--emit carts` |
//! | `error` | [`AnalyzeError`] |
//!
//! ```
//! use rtvmm_analyze::{analyze, Input, Options};
//! use rtvmm_scenario::Scenario;
//!
//! // VCPU parameters are optional for the analysis.
//! let text = r#"
//!     duration = "1s"
//!     [scheduler]
//!     policy = "periodic"
//!     [[domain]]
//!     name = "control"
//!     [[domain.task]]
//!     name = "t1"
//!     period = "7ms"
//!     wcet = "2ms"
//!     [[domain.task]]
//!     name = "t2"
//!     period = "8ms"
//!     wcet = "1ms"
//!     [[domain.task]]
//!     name = "t3"
//!     period = "10ms"
//!     wcet = "1ms"
//! "#;
//! let scenario = Scenario::from_toml_for_analysis(text, "control.toml")?;
//! let report = analyze(&Input::Scenario(scenario), &Options::default())?;
//! assert!(report.schedulable);
//! // The RTAS 2012 workload in 1 ms quanta: (Π, Θ) = (3, 2). Lemma 1 with the general
//! // sbf (blackout 2): sbf(7) = 2·2 + max(0, 7 − 2 − 6) = 4 ≥ rbf_3(7) = 2 + 1 + 1.
//! let control = &report.domains[0];
//! assert_eq!((control.period_ns, control.budget_ns), (Some(3_000_000), Some(2_000_000)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Design note
//! - **Unit.** The analysis counts time in whole units: the scenario's quantum, or
//!   `--quantum`; for CARTS input, whose numbers have no unit, `--quantum` says how long
//!   one unit is (default 1 ms). A task time that is not a whole number of units is
//!   rounded the safe way — wcet up, period and deadline down (more demand, more often,
//!   due sooner) — and every rounding is listed in the notes. A deadline beyond the period
//!   is cut to the period (the analyses need `d ≤ p`; an earlier deadline is safe). With
//!   `--given`, the unit is the gcd of the quantum and every VCPU budget and period, so
//!   the VCPUs are checked exactly.
//! - **Tasks.** Periodic tasks, and sporadic tasks at their minimum inter-arrival time,
//!   whatever their offsets (every test here holds for any phasing). Aperiodic, Poisson
//!   and triggered tasks have no minimum inter-arrival time: nothing can be guaranteed for
//!   them or for the tasks they can delay, so their domain fails, naming them. An
//!   overrunning task (wcet > period) fails its domain too.
//! - **What is refused** (issue 23: what `check --admit` admits, the simulation must
//!   show). A domain with a **VCPU offset** fails, naming the domain and `vcpu.offset`: its
//!   VCPU has no budget before its first period while its tasks may be released from 0,
//!   which no interface or bound models. A domain that fails this way (or for a task
//!   above) still runs its VCPU, which still competes at the root. And the whole input is
//!   **not covered** — no verdict is a guarantee, `check --admit` refuses naming the field,
//!   and `analyze`'s verdict is "NOT schedulable" (the domains are still analysed, as if on
//!   one pcpu) — with several pcpus, cpupools, a domain of several VCPUs or with affinity
//!   or `smp` (unless the multicore analysis below covers them), events, tick
//!   replenishment, scheduling overhead, SEDF, or a policy that enforces no budget per
//!   period (Credit, ARINC 653) ([`Report::not_covered`]).
//! - **Several pcpus** (`multicore`; `docs/analysis.md`, "Many pcpus"): a file with
//!   several pcpus, pools, VCPUs, affinity or `smp` gets an interface per domain realised
//!   as VCPUs — the analysis below per one-pcpu component (a one-VCPU domain, or a VCPU of
//!   a partitioned guest), DMPR (default) or MPR (`--model`) for a global EDF guest — and a
//!   root verdict per pool: RTDS by the Bertogna–Cirinei–Lipari test per cluster of equal
//!   affinity (DMPR's full VCPUs on pcpus of their own), the fixed-priority servers per
//!   pcpu. Each [`DomainReport`] says whether it is `guaranteed`; what is not covered is
//!   named per pool or domain.
//! - **Guests.** Lemma 1 is the rate-monotonic test: `rm` guests, and `dm`/`fp` guests
//!   whose priority order is rate-monotonic (the workload is built in the guest's own
//!   priority order); `edf` guests get the dbf test. **Equal priorities** — equal periods
//!   (`rm`), equal deadlines (`dm`), equal `priority` (`fp`), as the guest compares them —
//!   are one level, which the guest serves first-in, first-out: each task of a level
//!   interferes with every other, in Lemma 1 and in the response-time bounds alike
//!   ([`rtvmm_analysis::interferes`]). An `fp` tie between different periods is not
//!   rate-monotonic, so only the bounds speak for such a domain. `--guest rm|edf` analyses every domain as that scheduler instead. A
//!   CARTS component that says `DM`, or `RM` with a deadline below its period (CARTS orders
//!   such tasks by deadline, and a note says so), is analysed deadline-monotonic: Lemma 1
//!   with the tasks in deadline order.
//! - **sbf per domain.** `--sbf auto` uses the harmonic supply bound only where it is
//!   sound — Π dividing every task period *and* releases at the interface's period
//!   boundaries. A domain qualifies only if every task is periodic with offset 0 and a
//!   period that is a whole number of units, and its VCPU offset is 0 (for CARTS: no child
//!   components). Any other domain is analysed with the general sbf. Each domain is
//!   analysed on its own with its own mode.
//! - **Interfaces.** Computed (Algorithm 1 within `--period-range`, or `(Π, MinExec(Π))`
//!   for `--fixed-period NAME=Π`), or given: with `--given` (and `check --admit`) a
//!   domain's own VCPU budget and period are the interface to check. A domain without
//!   tasks needs no interface; if it has a VCPU, that VCPU still competes at the root.
//! - **Server priorities** at the root: rate-monotonic by interface period, ties by domain
//!   order, numbered from 1 — what `--emit scenario` writes; with `--given` the VCPUs' own
//!   priorities.
//! - **Supply and root, by policy** (the analysis's
//!   [`RootModel`](rtvmm_analysis::system::RootModel)). Deferrable, Periodic, Sporadic, WCPS and CRPS servers
//!   deliver Θ in every period Π to a backlogged domain once the root can deliver it
//!   (`r_S(Θ) ≤ Π` in the hierarchical analysis, which counts a Deferrable server's
//!   back-to-back interference; WCPS and CRPS are checked as Periodic servers), so the
//!   periodic resource model and Lemma 1 hold. A **Polling** server loses its budget when
//!   it finds its domain idle, so a domain that becomes busy just after a poll can wait
//!   up to `2Π − Θ`, more than the model's `2(Π − Θ)`: under Polling, Lemma 1 is not used
//!   and the verdict rests on the hierarchical response-time bounds. The same holds for a
//!   Sporadic Server that can merge replenishments (below).
//!   RTDS servers keep unused budget to the end of the period (a server that wakes late
//!   claims all of Θ just before its deadline), so `Σ Θ/Π ≤ 1` is not enough: the root is
//!   the test of Bertogna, Cirinei and Lipari, which holds for such servers
//!   ([`rtvmm_analysis::bcl`]). SEDF is checked the same way but not covered (its rules
//!   are not the ones that argument is made for). Credit and ARINC 653 do not enforce a
//!   budget per period: the verdict then assumes a server that does (the root is checked
//!   as RM, the interfaces as periodic tasks), the notes say so, and the input is not
//!   covered either.
//! - **Response times** (`--rta`): Davis & Burns's hierarchical analysis
//!   ([`rtvmm_analysis::hierarchical`]) under the Deferrable, Periodic, Polling or Sporadic
//!   server, with each domain's local fixed priorities as its guest orders them; "not
//!   applicable" under other policies and for EDF guests. A task is **bound to its
//!   server's release** (no capacity gap; Davis & Burns) when it is periodic, its period
//!   and offset are whole multiples of the server period, the VCPU's offset is 0, and the
//!   server is Periodic, Deferrable or Polling (the table marks it `*`).
//! - **Verdict, task by task** (the analysis's typed
//!   [`TaskVerdict`](rtvmm_analysis::system::TaskVerdict), put into words here): the root
//!   delivers the server's budget, and either Lemma 1
//!   holds for the task on the interface (where the model holds; `∃t ≤ d_i: sbf(t) ≥
//!   rbf_i(t)` concerns task i alone) or its response-time bound is within its deadline —
//!   both are sufficient, so either guarantees the task. An EDF guest needs the dbf test
//!   on the interface. A domain is schedulable iff all its tasks are guaranteed, and the
//!   refusal names the first one (by local priority) that is not; the system is
//!   schedulable iff every domain is.
//! - **The Sporadic Server** is analysed like a Periodic Server, as published (budget
//!   paid back one period after the server became active, which is what the core does),
//!   when it can never merge replenishments: its `max_replenishments` is at least its
//!   budget in ns (each pending replenishment is at least 1 ns). Otherwise (the default
//!   limit is 8) a merge at the limit can bring budget back up to a period late
//!   (`tests/integration/soundness.rs`, `sporadic_server_merge_limit_can_delay_budget_past_the_bound`),
//!   so the domain is analysed as
//!   [`ServerKind::SporadicMerging`](rtvmm_analysis::ServerKind::SporadicMerging) — a capacity gap of a
//!   whole period — and Lemma 1 is not used for it; the notes name such domains.

// Floors, bottom first; a blank line between them keeps `rustfmt` from sorting them.
mod error;

mod options;

mod input;

mod names;

mod convert;

mod report;

mod words;

mod build;

mod multicore;

mod render;

mod emit;

mod models;

use rtvmm_analysis::system;

pub use convert::CARTS_DEFAULT_UNIT;
pub use emit::emit_scenario;
pub use error::AnalyzeError;
pub use input::Input;
pub use models::{analyze_models, emit_carts, wants_models, ModelReport};
pub use options::{
    parse_guest, parse_model, parse_sbf, FixedPeriod, Length, Model, Options, PeriodBounds,
};
pub use report::{
    DomainReport, InterfaceSource, PoolReport, Refusal, Report, RtaStatus, TaskKind, TaskReport,
    VcpuReport,
};

use rtvmm_scenario::Scenario;

/// Runs the analysis: the input converted, the system analysed, the report built from the
/// result.
pub fn analyze(input: &Input, options: &Options) -> Result<Report, AnalyzeError> {
    match input {
        Input::Scenario(scenario) if multicore::applies(scenario) => {
            multicore::analyze(scenario, options)
        }
        _ => analyze_one_pcpu(input, options),
    }
}

/// The single-pcpu analysis, which [`multicore`] also runs on each one-pcpu piece.
fn analyze_one_pcpu(input: &Input, options: &Options) -> Result<Report, AnalyzeError> {
    let converted = convert::convert(input, options)?;
    let result = system::analyze(&converted.system);
    Ok(build::build(converted, &result))
}

/// `check --admit`: the scenario's own VCPUs are the interfaces where it has them, the
/// computed interfaces elsewhere; refused when the scenario holds something the analysis
/// does not model ([`Report::not_covered`]) or any domain cannot be guaranteed.
pub fn admit(scenario: &Scenario) -> Result<Report, Box<(Refusal, Report)>> {
    let options = Options {
        given: true,
        ..Options::default()
    };
    let report = analyze(&Input::Scenario(scenario.clone()), &options)
        .expect("a validated scenario analyses");
    match report.refusal() {
        None => Ok(report),
        Some(refusal) => Err(Box::new((refusal, report))),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use rtvmm_analysis::parse_carts;
    use rtvmm_core::policy::PolicyKind;

    pub(crate) fn scenario(text: &str) -> Scenario {
        Scenario::from_toml_for_analysis(text, "test.toml").unwrap()
    }

    pub(crate) const HEAD: &str = "duration = \"1s\"\n[scheduler]\npolicy = \"periodic\"\n";

    pub(crate) fn domain(name: &str, vcpu: &str, tasks: &[(&str, &str, &str)]) -> String {
        let mut s = format!("[[domain]]\nname = \"{name}\"\n{vcpu}\n");
        for (t, p, e) in tasks {
            s.push_str(&format!(
                "[[domain.task]]\nname = \"{t}\"\nperiod = \"{p}\"\nwcet = \"{e}\"\n"
            ));
        }
        s
    }

    pub(crate) fn run_on(text: &str, options: &Options) -> Report {
        analyze(&Input::Scenario(scenario(text)), options).unwrap()
    }

    pub(crate) fn carts(xml: &str) -> Input {
        Input::Carts {
            file: "test.xml".to_string(),
            system: parse_carts(xml).unwrap(),
        }
    }

    /// Two deferrable servers that pass as periodic tasks (RM: 2/5 + 6/10 = 1.0, R_2 =
    /// 6 + 2⌈R/5⌉: 8 → 10 ✓) but not with the Deferrable server's back-to-back jitter
    /// J = 3: r = 6 + 2⌈(r+3)/5⌉: 6 → 10 → 12 > 10.
    #[test]
    fn deferrable_root_counts_back_to_back_interference() {
        let mut text = String::from("duration = \"1s\"\n");
        text.push_str(&domain(
            "hi",
            "vcpu = { budget = \"2ms\", period = \"5ms\", priority = 1 }",
            &[("t", "5ms", "1ms")],
        ));
        text.push_str(&domain(
            "lo",
            "vcpu = { budget = \"6ms\", period = \"10ms\", priority = 2 }",
            &[("t", "20ms", "1ms")],
        ));
        let given = Options {
            given: true,
            ..Options::default()
        };
        let deferrable = run_on(&text, &given);
        assert_eq!(deferrable.policy, PolicyKind::Deferrable);
        assert_eq!(deferrable.domains[1].root_schedulable, Some(false));
        assert!(!deferrable.schedulable);
        let periodic = run_on(
            &text,
            &Options {
                policy: Some(PolicyKind::Periodic),
                ..given
            },
        );
        assert_eq!(periodic.domains[1].root_response_time, Some(10));
        assert!(periodic.schedulable);
    }

    /// Issue 13 §2's inputs through the scenario path (the interfaces in units are derived
    /// by hand in `rtvmm-analysis`'s `tests/integration/bounded_analysis.rs`; here the unit
    /// conversion): an EDF domain at a 7 µs quantum, EDF with periods 40 ms and 10^9 s,
    /// and a 1 ms task beside a one-day task at a 10 µs quantum. Each used to run for a
    /// minute or abort out of memory.
    #[test]
    fn pathological_period_ratios_analyse_to_their_interfaces() {
        let edf = |quantum: &str, tasks: &[(&str, &str)]| {
            let mut text = format!("{HEAD}[machine]\nquantum = \"{quantum}\"\n[[domain]]\nname = \"d\"\nguest = \"edf\"\n");
            for (k, (p, e)) in tasks.iter().enumerate() {
                text.push_str(&format!(
                    "[[domain.task]]\nname = \"t{k}\"\nperiod = \"{p}\"\nwcet = \"{e}\"\n"
                ));
            }
            text
        };
        // (158, 157) units of 7 µs.
        let report = run_on(
            &edf("7us", &[("22400us", "20200us"), ("46900us", "4300us")]),
            &Options::default(),
        );
        let d = &report.domains[0];
        assert_eq!((d.period, d.budget), (Some(158), Some(157)));
        assert_eq!(
            (d.period_ns, d.budget_ns),
            (Some(1_106_000), Some(1_099_000))
        );
        assert!(d.proven_optimal && report.schedulable);
        // (8, 1) units of 1 ms.
        let report = run_on(
            &edf("1ms", &[("40ms", "4ms"), ("100000000s", "1s")]),
            &Options::default(),
        );
        let d = &report.domains[0];
        assert_eq!(
            (d.period_ns, d.budget_ns),
            (Some(8_000_000), Some(1_000_000))
        );
        assert!(report.schedulable);
        // (100, 11) units of 10 µs; Lemma 1 recorded for both tasks without a test point per
        // job of the 1 ms task.
        let text = format!(
            "{HEAD}[machine]\nquantum = \"10us\"\n{}",
            domain(
                "daily",
                "",
                &[("tick", "1ms", "100us"), ("backup", "86400s", "1s")]
            )
        );
        let report = run_on(&text, &Options::default());
        let d = &report.domains[0];
        assert_eq!((d.period_ns, d.budget_ns), (Some(1_000_000), Some(110_000)));
        assert!(
            d.tasks.iter().all(|t| t.lemma1 == Some(true)),
            "{:?}",
            d.tasks
        );
        assert!(report.schedulable);
    }
}
