//! Input conversion: a scenario or a CARTS system into the analysis's [`System`], in whole
//! units, with the options applied — and, beside it, what the report needs to name and
//! show what was analysed (names, times as written, the guest as written). Nothing here
//! decides a verdict: a domain that cannot be expressed as analysis input (an aperiodic
//! task, an overrun, a time shorter than the unit) is set aside with the reason
//! ([`Refused`]), and the report says so.

mod carts;
mod scenario;

use rtvmm_analysis::system::{self, GuestTask, PriorityOrder, ReplenishmentCap, RootModel, System};
use rtvmm_analysis::{
    FpTask, GuestScheduler as AnalysisGuest, Interface, InterfaceChoice, PeriodRange, SbfMode,
    ServerKind, Task,
};
use rtvmm_core::machine::{Overheads, ReplenishMode};
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;

use super::{AnalyzeError, Input, Options};
use crate::names::{InterfaceSource, TaskKind};

/// CARTS numbers have no unit; without `--quantum` one unit is this long.
pub const CARTS_DEFAULT_UNIT: Nanos = Nanos::from_ms(1);

/// An input converted for the analysis.
pub(crate) struct Converted {
    /// The file analysed.
    pub file: String,
    /// scenario or carts.
    pub format: &'static str,
    /// The analysis unit in ns.
    pub unit: u64,
    /// The VMM policy assumed.
    pub policy: PolicyKind,
    /// The sbf mode asked for (`--sbf`).
    pub sbf: SbfMode,
    /// The VCPUs' own parameters are the interfaces (`--given`).
    pub given: bool,
    /// What the analysis gets.
    pub system: System,
    /// Per input domain, in order.
    pub domains: Vec<DomainInput>,
    /// What the conversion noticed (rounding, options, what the analysis leaves out).
    pub notes: Vec<String>,
    /// What the input holds that the analysis does not model at all (several pcpus, cpupools,
    /// placement, several VCPUs, events): with any of it no verdict is a guarantee.
    pub not_covered: Vec<String>,
    /// What the user should see on stderr (a fixed period outside the period range).
    pub warnings: Vec<String>,
}

/// One input domain, as the report shows it.
pub(crate) struct DomainInput {
    pub name: String,
    /// The guest scheduler as written.
    pub guest_label: String,
    /// The tasks as declared.
    pub tasks: Vec<TaskInput>,
    /// How its interface is chosen.
    pub source: InterfaceSource,
    /// Where it went.
    pub role: Role,
}

/// Where a domain went.
pub(crate) enum Role {
    /// Into the system, at `index`; `order[k]` is the declared index of the analysis's
    /// task k.
    Analysed { index: usize, order: Vec<usize> },
    /// Not into the analysis: why.
    Refused(Refused),
}

/// One task as declared, and what the analysis used.
#[derive(Clone, Debug)]
pub(crate) struct TaskInput {
    pub name: String,
    pub kind: TaskKind,
    pub period_ns: u64,
    pub wcet_ns: u64,
    /// Cut to the period.
    pub deadline_ns: u64,
    /// Period, wcet and deadline in units, when the task could be expressed in them.
    pub units: Option<(u64, u64, u64)>,
    /// Local fixed priority (smaller = higher).
    pub priority: Option<u32>,
}

/// Why a domain could not be expressed as analysis input (the task to blame by its
/// declared index).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// An aperiodic task: no minimum inter-arrival time.
    Aperiodic { task: usize },
    /// A period or deadline shorter than the analysis unit.
    ShorterThanUnit { task: usize, deadline: bool },
    /// A wcet above the period.
    Overrun {
        task: usize,
        wcet: Nanos,
        period: Nanos,
    },
    /// A VCPU whose first period starts after time 0 (`vcpu.offset`): its tasks can be
    /// released before it has any budget, which no interface or bound models.
    VcpuOffset { offset: Nanos },
}

impl Refused {
    /// The task to blame, if one is.
    pub fn task(&self) -> Option<usize> {
        match *self {
            Refused::Aperiodic { task }
            | Refused::ShorterThanUnit { task, .. }
            | Refused::Overrun { task, .. } => Some(task),
            Refused::VcpuOffset { .. } => None,
        }
    }
}

/// A domain on its way to the analysis, before the options are applied.
struct Draft {
    name: String,
    guest_label: String,
    /// The scheduler the analysis assumes for it.
    guest: AnalysisGuest,
    tasks: Vec<TaskInput>,
    /// Declared indices in the guest's priority order (the declared order for EDF).
    order: Vec<usize>,
    refused: Option<Refused>,
    /// Releases fall on the interface's period boundaries (the harmonic sbf may apply).
    aligned: bool,
    choice: InterfaceChoice,
    source: InterfaceSource,
    /// The VCPU's budget, period and priority as written, if it has them.
    vcpu: Option<(Nanos, Nanos, u32)>,
    /// The VCPU's cap on pending Sporadic Server replenishments.
    max_replenishments: u32,
    /// Per task (declared order): its release offset in units if its jobs could be bound
    /// to the server's release — periodic, period and offset whole units, VCPU offset 0.
    release_offsets: Vec<Option<u64>>,
}

/// Converts `input` as `options` say.
pub(crate) fn convert(input: &Input, options: &Options) -> Result<Converted, AnalyzeError> {
    let mut notes = Vec::new();
    let mut not_covered = Vec::new();
    let policy = options.policy.unwrap_or(match input {
        Input::Scenario(s) => s.policy(),
        Input::Carts { .. } => PolicyKind::Periodic,
    });
    if options.given && matches!(input, Input::Carts { .. }) {
        return Err(AnalyzeError::BadOption(
            "--given checks a scenario's VCPUs; in CARTS input give a component `period` and \
             `budget` instead"
                .to_string(),
        ));
    }
    let unit = choose_unit(input, options, &mut notes)?;
    let mut drafts = match input {
        Input::Scenario(scenario) => scenario
            .system
            .domains
            .iter()
            .map(|d| scenario::draft(d, unit, options, &mut notes))
            .collect::<Vec<_>>(),
        Input::Carts { file, system } => carts::drafts(file, system, unit, options, &mut notes)?,
    };
    let mut warnings = Vec::new();
    apply_interface_options(&mut drafts, unit, options, &mut notes, &mut warnings)?;
    if let Input::Scenario(scenario) = input {
        scenario_notes(scenario, options, &mut notes);
        not_covered = scenario_not_covered(scenario);
    }
    match root_model(policy) {
        RootModel::RateMonotonic => not_covered.push(format!(
            "scheduler.policy = {}: it does not enforce a budget per period, which the \
             analysis assumes",
            policy.name()
        )),
        // RTDS: the Bertogna–Cirinei–Lipari test with m = 1 (`rtvmm_analysis::bcl`).
        RootModel::Edf if policy == PolicyKind::Rtds => {}
        RootModel::Edf => not_covered.push(format!(
            "scheduler.policy = {}: its rules (slice, extra time) are not the RTDS ones the \
             EDF root test is argued for; only RTDS is analysed",
            policy.name()
        )),
        RootModel::FixedPriority { .. } | RootModel::NoRootCheck { .. } => {}
    }
    let mut system = System {
        root: root_model(policy),
        domains: Vec::new(),
    };
    let domains = drafts
        .into_iter()
        .map(|draft| finish(draft, unit, options, &mut system.domains))
        .collect();
    let (format, file) = match input {
        Input::Scenario(s) => ("scenario", s.file.clone()),
        Input::Carts { file, .. } => ("carts", file.clone()),
    };
    Ok(Converted {
        file,
        format,
        unit,
        policy,
        sbf: options.sbf,
        given: options.given,
        system,
        domains,
        notes,
        not_covered,
        warnings,
    })
}

/// The supply and root model of a policy (see the design note in [`super`]).
pub(crate) fn root_model(policy: PolicyKind) -> RootModel {
    let servers = |server, response_times| RootModel::FixedPriority {
        server,
        response_times,
    };
    match policy {
        PolicyKind::Deferrable => servers(ServerKind::Deferrable, true),
        PolicyKind::Periodic => servers(ServerKind::Periodic, true),
        // Checked at the root as Periodic Servers; their tasks' response times are not
        // covered by the hierarchical analysis.
        PolicyKind::Wcps | PolicyKind::Crps => servers(ServerKind::Periodic, false),
        PolicyKind::Polling => servers(ServerKind::Polling, true),
        PolicyKind::Sporadic => servers(ServerKind::Sporadic, true),
        PolicyKind::Rtds | PolicyKind::Sedf | PolicyKind::SedfIdeal => RootModel::Edf,
        PolicyKind::Credit | PolicyKind::Arinc653 => RootModel::RateMonotonic,
    }
}

/// The analysis unit in ns.
fn choose_unit(
    input: &Input,
    options: &Options,
    notes: &mut Vec<String>,
) -> Result<u64, AnalyzeError> {
    let base = match (options.quantum, input) {
        (Some(q), _) => q,
        (None, Input::Scenario(s)) => s.system.machine.quantum,
        (None, Input::Carts { .. }) => {
            notes.push(format!(
                "CARTS numbers are taken as units of {CARTS_DEFAULT_UNIT} (--quantum sets the \
                 unit)"
            ));
            CARTS_DEFAULT_UNIT
        }
    };
    if base.is_zero() {
        return Err(AnalyzeError::BadOption(
            "the analysis unit (the quantum) must be greater than 0".to_string(),
        ));
    }
    let mut unit = base;
    if let (true, Input::Scenario(s)) = (options.given, input) {
        for d in &s.system.domains {
            if !d.vcpu.period.is_zero() {
                unit = unit.gcd(d.vcpu.budget).gcd(d.vcpu.period);
            }
        }
        if unit != base {
            notes.push(format!(
                "analysis unit {unit} instead of {base}, so that every VCPU budget and period is \
                 a whole number of units"
            ));
        }
    }
    Ok(unit.as_ns())
}

/// `--period-range`, `--fixed-period` and `--given` turned into each domain's choice.
fn apply_interface_options(
    drafts: &mut [Draft],
    unit: u64,
    options: &Options,
    notes: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Result<(), AnalyzeError> {
    let mut ranged_by_option: Vec<String> = Vec::new();
    if let Some(bounds) = options.period_range {
        let min = bounds.min.ceil_units(unit).max(1);
        let max = bounds.max.floor_units(unit);
        if min > max {
            return Err(AnalyzeError::BadOption(format!(
                "--period-range {}..{}: no whole number of units of {} lies in it",
                bounds.min,
                bounds.max,
                Nanos::from_ns(unit)
            )));
        }
        for d in drafts.iter_mut() {
            // A CARTS component's own min_period/max_period wins over the command line.
            if d.choice == InterfaceChoice::Optimal(PeriodRange::default()) {
                d.choice = InterfaceChoice::Optimal(PeriodRange::new(min, max));
                ranged_by_option.push(d.name.clone());
            }
        }
    }
    if options.given {
        for d in drafts.iter_mut() {
            if let (Some((budget, period, _)), false) = (d.vcpu, d.tasks.is_empty()) {
                d.choice = InterfaceChoice::Given(Interface::new(
                    period.as_ns() / unit,
                    budget.as_ns() / unit,
                ));
                d.source = InterfaceSource::Given;
            }
        }
        if drafts
            .iter()
            .any(|d| d.vcpu.is_none() && !d.tasks.is_empty())
        {
            notes.push(
                "domains without VCPU parameters get computed interfaces; server priorities \
                 are then rate-monotonic by period for every domain"
                    .to_string(),
            );
        }
    }
    for fixed in &options.fixed_periods {
        let names: Vec<String> = drafts.iter().map(|d| d.name.clone()).collect();
        let d = drafts
            .iter_mut()
            .find(|d| d.name == fixed.domain)
            .ok_or_else(|| {
                AnalyzeError::BadOption(format!(
                    "--fixed-period: no domain named '{}' (domains: {})",
                    fixed.domain,
                    names.join(", ")
                ))
            })?;
        let period = fixed.units(unit)?;
        if let InterfaceChoice::Optimal(range) = d.choice {
            let origin = if ranged_by_option.contains(&d.name) {
                "--period-range"
            } else {
                "the component's min_period/max_period"
            };
            warnings.extend(fixed_period_warning(
                &d.name, period, range.min, range.max, origin,
            ));
        }
        d.choice = InterfaceChoice::FixedPeriod(period);
        d.source = InterfaceSource::FixedPeriod;
    }
    Ok(())
}

/// The warning for `--fixed-period NAME=PERIOD` outside the domain's (component's) period
/// range `min..=max` (`max` `None`: unbounded), or `None` when it lies inside.
pub(crate) fn fixed_period_warning(
    name: &str,
    period: u64,
    min: u64,
    max: Option<u64>,
    origin: &str,
) -> Option<String> {
    let outside = period < min || max.is_some_and(|max| period > max);
    outside.then(|| {
        let max = max.map_or_else(|| "∞".to_string(), |max| max.to_string());
        format!(
            "--fixed-period {name}={period}: {period} units lie outside {name}'s period range \
             {min}..={max} ({origin}); the interface is computed at {period} all the same"
        )
    })
}

/// What no analysis here models about the machine: tick replenishment and scheduling
/// overhead (`overhead_also` adds what else the overhead's reason names), one reason each,
/// naming the field. The one-pcpu and the multicore analyses both start from it.
pub(crate) fn machine_not_covered(
    scenario: &rtvmm_scenario::Scenario,
    overhead_also: &str,
) -> Vec<String> {
    let machine = &scenario.system.machine;
    let mut reasons = Vec::new();
    if machine.replenishment == ReplenishMode::Tick {
        reasons.push(
            "machine.replenishment = tick: the analysis assumes budgets replenished exactly on \
             time"
                .to_string(),
        );
    }
    if machine.overheads != Overheads::ZERO {
        reasons.push(format!(
            "machine.overhead: the analysis assumes no scheduling overhead{overhead_also}"
        ));
    }
    reasons
}

/// What a scenario holds that the single-pcpu analysis does not model, one reason per
/// kind, naming the field: tick replenishment, scheduling overhead, several pcpus,
/// cpupools, a domain's placement (several VCPUs, affinity, `smp`), and events (the
/// analysis covers the domains present at time 0 with their parameters then).
fn scenario_not_covered(scenario: &rtvmm_scenario::Scenario) -> Vec<String> {
    let system = &scenario.system;
    let mut reasons = machine_not_covered(scenario, "");
    if system.machine.pcpus > 1 {
        reasons.push(format!(
            "machine.pcpus = {}: the analysis is for one pcpu",
            system.machine.pcpus
        ));
    }
    if !system.has_only_default_pool() {
        reasons.push(format!(
            "[[pool]]: {} cpupools; the analysis is for one pcpu under one policy",
            system.pools.len()
        ));
    }
    for d in &system.domains {
        let vcpus = d.placement.vcpu_count();
        if vcpus > 1 {
            reasons.push(format!(
                "domain '{}': vcpus = {vcpus}; the analysis covers one VCPU per domain",
                d.name
            ));
        } else if d.placement != Default::default() {
            reasons.push(format!(
                "domain '{}': its placement (affinity, smp) is not analysed",
                d.name
            ));
        }
    }
    if !system.changes.is_empty() {
        reasons.push(format!(
            "[[event]]: {} event(s) change the system after time 0; the analysis covers the \
             domains present at time 0 with their parameters then",
            system.changes.len()
        ));
    }
    reasons
}

/// What a scenario holds that the analysis does not cover.
fn scenario_notes(scenario: &rtvmm_scenario::Scenario, options: &Options, notes: &mut Vec<String>) {
    let added = scenario
        .system
        .changes
        .iter()
        .filter(|c| matches!(c.change, rtvmm_system::Change::AddDomain(_)))
        .count();
    let machine = &scenario.system.machine;
    let overheads = machine.overheads.do_schedule + machine.overheads.context_switch;
    if machine.replenishment == ReplenishMode::Tick || !overheads.is_zero() {
        notes.push(format!(
            "the analysis assumes budgets replenished exactly on time and no scheduling \
             overhead; this machine has {} replenishment and {} + {} overhead per decision \
             (do_schedule + context_switch), which the guarantees do not cover",
            match machine.replenishment {
                ReplenishMode::Exact => "exact",
                ReplenishMode::Tick => "tick",
            },
            machine.overheads.do_schedule,
            machine.overheads.context_switch
        ));
    }
    if scenario.uses_placement() {
        let pools: Vec<String> = scenario
            .system
            .pools
            .iter()
            .map(|p| format!("'{}' = pcpus {} under {}", p.name, p.pcpus, p.policy.kind()))
            .collect();
        let pools = if scenario.system.has_only_default_pool() {
            "one pool of all of them".to_string()
        } else {
            pools.join(", ")
        };
        notes.push(format!(
            "NOT COVERED: this machine has {} pcpu(s) ({pools}); the analysis above is the \
             single-pcpu one, as if every domain shared one pcpu under the first pool's \
             policy: it does not cover several pcpus, cpupools, affinity, global scheduling, \
             domains of several VCPUs or `xl` events, so its verdict is no guarantee for this \
             machine",
            machine.pcpus
        ));
    }
    if !scenario.system.changes.is_empty() {
        notes.push(format!(
            "the analysis covers the domains present at time 0 with their parameters then; \
             the file's {} events ({} adding domains) are not analysed",
            scenario.system.changes.len(),
            added
        ));
    }
    if !options.given
        && scenario
            .system
            .domains
            .iter()
            .any(|d| !d.vcpu.period.is_zero() && !d.tasks.is_empty())
    {
        notes.push(
            "interfaces computed; the file's VCPU budgets and periods are not used (--given \
             checks them instead)"
                .to_string(),
        );
    }
}

/// The draft's analysis input (pushed onto `system`), and what the report keeps.
fn finish(
    draft: Draft,
    unit: u64,
    options: &Options,
    system: &mut Vec<system::Domain>,
) -> DomainInput {
    let Draft {
        name,
        guest_label,
        guest,
        tasks,
        order,
        refused,
        aligned,
        choice,
        source,
        vcpu,
        max_replenishments,
        release_offsets,
    } = draft;
    // A domain without tasks has no demand, and a refused one none the analysis can take:
    // neither needs an interface, but a VCPU either has still runs and competes at the
    // root (taken the safe way: budget up, period down).
    let (guest, interface) = if tasks.is_empty() || refused.is_some() {
        let vcpu = vcpu.map(|(budget, period, _)| {
            let period_units = (period.as_ns() / unit).max(1);
            let budget_units = budget.as_ns().div_ceil(unit).clamp(1, period_units);
            InterfaceChoice::Given(Interface::new(period_units, budget_units))
        });
        (system::Guest::Idle, vcpu.unwrap_or_default())
    } else {
        (
            analysis_guest(guest, &tasks, &order, &release_offsets),
            choice,
        )
    };
    system.push(system::Domain {
        name: name.clone(),
        guest,
        interface,
        sbf: if options.sbf == SbfMode::Auto && aligned {
            SbfMode::Auto
        } else {
            SbfMode::General
        },
        root_priority: if options.given {
            vcpu.map(|v| v.2)
        } else {
            None
        },
        replenishment_cap: Some(ReplenishmentCap {
            max_pending: u64::from(max_replenishments),
            grains_per_unit: unit,
        }),
    });
    let role = match refused {
        Some(refused) => Role::Refused(refused),
        None => Role::Analysed {
            index: system.len() - 1,
            order,
        },
    };
    DomainInput {
        name,
        guest_label,
        tasks,
        source,
        role,
    }
}

/// The tasks in the guest's priority order, as the analysis takes them.
fn analysis_guest(
    guest: AnalysisGuest,
    tasks: &[TaskInput],
    order: &[usize],
    release_offsets: &[Option<u64>],
) -> system::Guest {
    let units = |i: usize| tasks[i].units.unwrap_or((0, 0, 0));
    let priority_order = match guest {
        AnalysisGuest::Rm => PriorityOrder::RateMonotonic,
        AnalysisGuest::Dm => PriorityOrder::DeadlineMonotonic,
        AnalysisGuest::Edf => {
            return system::Guest::Edf {
                tasks: order
                    .iter()
                    .map(|&i| {
                        let (period, wcet, deadline) = units(i);
                        Task::with_deadline(period, wcet, deadline)
                    })
                    .collect(),
            }
        }
    };
    system::Guest::FixedPriority {
        order: priority_order,
        tasks: order
            .iter()
            .map(|&i| {
                let (period, wcet, deadline) = units(i);
                GuestTask {
                    task: FpTask {
                        period,
                        wcet,
                        deadline,
                        priority: tasks[i].priority.unwrap_or(u32::MAX),
                    },
                    offset: release_offsets[i],
                }
            })
            .collect(),
    }
}

/// Priority levels along `order`: a new level wherever `key` (of a declared index) changes
/// (equal keys are served first-in, first-out, so they share one).
fn assign_levels<K: PartialEq>(tasks: &mut [TaskInput], order: &[usize], key: impl Fn(usize) -> K) {
    let mut level = 0;
    let mut previous = None;
    for &i in order {
        let k = key(i);
        if previous.as_ref() != Some(&k) {
            level += 1;
            previous = Some(k);
        }
        tasks[i].priority = Some(level);
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{domain, run_on, scenario, HEAD};
    use super::super::{analyze, Input, Options};
    use rtvmm_analysis::SbfMode;

    #[test]
    fn fixed_period_and_unknown_domain() {
        let text = format!(
            "{HEAD}{}",
            domain(
                "d",
                "",
                &[
                    ("a", "25ms", "3ms"),
                    ("b", "50ms", "5ms"),
                    ("c", "100ms", "4ms")
                ]
            )
        );
        let fixed = Options {
            fixed_periods: vec!["d=10".parse().unwrap()],
            sbf: SbfMode::General,
            ..Options::default()
        };
        let report = run_on(&text, &fixed);
        // The analysis crate's example: (10, MinExec(10)) = (10, 3).
        assert_eq!(
            (report.domains[0].period, report.domains[0].budget),
            (Some(10), Some(3))
        );
        assert_eq!(
            report.domains[0].interface_source,
            Some(super::InterfaceSource::FixedPeriod)
        );
        let unknown = Options {
            fixed_periods: vec!["nope=10".parse().unwrap()],
            ..Options::default()
        };
        let err = analyze(&Input::Scenario(scenario(&text)), &unknown).unwrap_err();
        assert!(err.to_string().contains("no domain named 'nope'"), "{err}");
    }

    /// `--fixed-period` outside the period range warns, naming the domain, the value and
    /// the range; inside it, or without a range, it does not. The interface is computed at
    /// the fixed period all the same.
    #[test]
    fn fixed_period_outside_the_range_warns() {
        let text = format!("{HEAD}{}", domain("d", "", &[("a", "25ms", "3ms")]));
        let with = |range: Option<&str>, fixed: &str| {
            let options = Options {
                period_range: range.map(|r| r.parse().unwrap()),
                fixed_periods: vec![fixed.parse().unwrap()],
                ..Options::default()
            };
            run_on(&text, &options)
        };
        let outside = with(Some("5..8"), "d=10");
        assert_eq!(
            outside.warnings,
            vec![
                "--fixed-period d=10: 10 units lie outside d's period range 5..=8 \
                 (--period-range); the interface is computed at 10 all the same"
                    .to_string()
            ]
        );
        assert_eq!(outside.domains[0].period, Some(10));
        assert!(with(Some("5..8"), "d=4").warnings[0].contains("4 units lie outside"));
        assert!(with(Some("5..10"), "d=10").warnings.is_empty());
        assert!(with(None, "d=100").warnings.is_empty());
        // A CARTS component's own range.
        let xml = r#"<system><component name="c" scheduler="RM" min_period="5" max_period="15">
                     <task p="20" d="20" e="2"/></component></system>"#;
        let options = Options {
            fixed_periods: vec!["c=20".parse().unwrap()],
            ..Options::default()
        };
        let report = analyze(&super::super::tests::carts(xml), &options).unwrap();
        assert_eq!(report.warnings.len(), 1);
        assert!(
            report.warnings[0]
                .contains("c's period range 5..=15 (the component's min_period/max_period)"),
            "{:?}",
            report.warnings
        );
    }

    #[test]
    fn tick_replenishment_and_overheads_are_named_as_outside_the_guarantees() {
        let body = domain(
            "a",
            "vcpu = { budget = \"2ms\", period = \"5ms\" }",
            &[("t", "20ms", "3ms")],
        );
        let exact = run_on(&format!("{HEAD}{body}"), &Options::default());
        assert!(!exact
            .notes
            .iter()
            .any(|n| n.contains("replenished exactly")));
        let tick = run_on(
            &format!("{HEAD}[machine]\nreplenishment = \"tick\"\n{body}"),
            &Options::default(),
        );
        assert!(
            tick.notes
                .iter()
                .any(|n| n.contains("this machine has tick replenishment and 0ns + 0ns")),
            "{:?}",
            tick.notes
        );
    }
}
