//! Several pcpus (issue 24): cpupools, domains of several VCPUs, affinity and `smp` — an
//! interface per domain, its VCPUs, and a root verdict per pool.
//!
//! # Design note
//! A scenario that uses any placement (`machine.pcpus > 1`, `[[pool]]`, `vcpus`,
//! `affinity`, `smp`, `xl` events) comes here instead of the single-pcpu report; the
//! single-pcpu analysis is still what each one-pcpu piece gets.
//! - **Components.** A domain of one VCPU is one component; so is each VCPU of a
//!   `partitioned` guest, holding the tasks pinned to it (`domain.task.vcpu`). A component
//!   is analysed exactly as a one-pcpu domain (its PRM interface, Lemma 1 or the dbf test,
//!   the bounds), by the single-pcpu analysis on a scenario holding it alone. A partitioned
//!   guest's VCPUs share one period (a scenario gives every VCPU of a domain one period):
//!   when their optimal periods differ, each gets `(Π, MinExec(Π))` at the smallest of them.
//! - **Global EDF guests** (`smp = "global"`, several VCPUs, `guest = "edf"`), by
//!   `--model`. **DMPR** (default; Xu et al., RTSS 2013; [`rtvmm_analysis::dmpr`]): the
//!   minimum-bandwidth m full VCPUs `(Π, Π)` and one partial `(Π, Θ)`, at most the
//!   domain's VCPUs; its hybrid root gives each full VCPU a pcpu of its own (below).
//!   **MPR** (Shin, Easwaran & Lee, ECRTS 2008; [`rtvmm_analysis::mpr`]): the
//!   minimum-bandwidth `⟨Π, Θ, m′⟩`, realised as `m′` VCPUs of `(Π, ⌈Θ/m′⌉)`, which supply
//!   at least `⟨Π, m′⌈Θ/m′⌉, m′⟩`, whose sbf is at least that of `⟨Π, Θ, m′⟩` (the gEDF
//!   test runs again on it). With `--given` the VCPUs' own `(Π, Θ_j)` are checked: DMPR
//!   takes those with `Θ = Π` as the full ones and at most one other; MPR takes
//!   `⟨Π, ΣΘ_j, k⟩`. **Global fixed priority** inside a guest has no sound test here: such
//!   a domain is not covered, by name.
//! - **Root, per pool.** RTDS: the VCPUs' affinities must split the pool into clusters
//!   (two VCPUs' pcpu sets are equal or disjoint); each cluster is global EDF over
//!   budget-keeping servers on its m pcpus, checked by the Bertogna–Cirinei–Lipari test
//!   ([`rtvmm_analysis::bcl`], which argues why it holds for servers that keep their
//!   budget); m = 1 is the partitioned case. DMPR's hybrid root: each full VCPU free to
//!   run anywhere gets a pcpu of its own (the highest first) and every other VCPU free to
//!   run anywhere the pcpus left — clusters the test then checks (a full VCPU alone on its
//!   pcpu is always served); when that would leave no pcpu for the others, nothing is
//!   dedicated and a note says so. The fixed-priority servers (Deferrable,
//!   Periodic, Polling, Sporadic, WCPS, CRPS): every VCPU pinned to one pcpu, one VCPU per
//!   domain, and per pcpu the single-pcpu root test of the policy on the domains pinned
//!   there. Credit, ARINC 653, SEDF, global fixed priority at the root and overlapping
//!   affinities are not covered, named per pool.
//! - **What stays not covered for the whole input**: tick replenishment, scheduling
//!   overhead (machine or pool), and events — but for `xl sched-rtds -d D -v i` at time 0
//!   that keeps the VCPU's period, which `--emit scenario` writes to give VCPUs of one
//!   domain different budgets: the core cuts the budget at once, so with `--given` VCPU i's
//!   budget is the smaller of the two.
//! - **Verdict.** A domain is guaranteed iff nothing about it or its pool is not covered,
//!   every component (or the MPR or DMPR test) passes, and its pool's root serves every
//!   VCPU.

use rtvmm_analysis::bcl::bcl_served;
use rtvmm_analysis::{gedf_schedulable, optimal_mpr_interface, GedfVerdict, Interface, Mpr};
use rtvmm_analysis::{gedf_schedulable_dmpr, optimal_dmpr_interface, Dmpr};
use rtvmm_analysis::{Task, Workload};
use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::guest::{GuestScheduler, GuestSmp};
use rtvmm_core::machine::{Overheads, PoolSpec};
use rtvmm_core::model::{DomainSpec, Placement};
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::xl::{VcpuSel, XlCommand};
use rtvmm_core::Nanos;
use rtvmm_scenario::Scenario;
use rtvmm_system::Change;

use crate::convert::machine_not_covered;
use crate::error::AnalyzeError;
use crate::input::Input;
use crate::names::TaskKind;
use crate::options::{FixedPeriod, Length, Model, Options};
use crate::report::{DomainReport, PoolReport, Report, RtaStatus, VcpuReport};

/// Whether the scenario needs the multicore analysis.
pub(crate) fn applies(scenario: &Scenario) -> bool {
    scenario.uses_placement()
}

/// How a domain is analysed.
enum Plan {
    /// One component per entry: (VCPU, its tasks by declared index).
    Components(Vec<(u32, Vec<usize>)>),
    /// A global EDF guest over several VCPUs: an MPR interface.
    Mpr,
    /// Not covered: why.
    NotCovered(String),
}

/// One VCPU at its pool's root.
struct RootVcpu {
    domain: usize,
    index: u32,
    pcpus: CpuSet,
    interface: Interface,
}

/// What one domain came to.
struct Outcome {
    vcpus: Vec<VcpuReport>,
    /// Every VCPU's interface in units (those that have one compete at the root).
    interfaces: Vec<Option<Interface>>,
    model: Option<String>,
    /// Why not guaranteed, when not (before the root).
    reason: Option<String>,
    failed_task: Option<String>,
    not_covered: Option<String>,
    /// Per VCPU: a full DMPR VCPU (computed), to be given a pcpu of its own.
    full: Vec<bool>,
}

impl Outcome {
    /// A global-EDF test's `verdict` on the domain of `report` over the `model` (MPR or
    /// DMPR) supply: a violation is the reason, naming the task, the window and the test
    /// (`source`).
    fn gedf_verdict(
        &mut self,
        report: &DomainReport,
        verdict: GedfVerdict,
        model: &str,
        source: &str,
    ) {
        if let GedfVerdict::Violation {
            task_index,
            window,
            demand,
            supply,
        } = verdict
        {
            let name = report.tasks[task_index].name.clone();
            self.reason = Some(format!(
                "task '{name}': global EDF demand {demand} exceeds the {model} supply {supply} \
                 in a window of {window} units ({source})"
            ));
            self.failed_task = Some(name);
        }
    }
}

/// The analysis of a scenario with several pcpus, pools or VCPUs (module docs).
pub(crate) fn analyze(scenario: &Scenario, options: &Options) -> Result<Report, AnalyzeError> {
    if options.policy.is_some() {
        return Err(AnalyzeError::BadOption(
            "--policy: this scenario has several pcpus, pools or VCPUs; set each [[pool]]'s \
             policy in the file instead"
                .to_string(),
        ));
    }
    let system = &scenario.system;
    let mut not_covered = global_not_covered(scenario);
    let given: Vec<Vec<(Nanos, Nanos)>> = system
        .domains
        .iter()
        .map(|d| given_vcpus(scenario, d))
        .collect();
    let unit = unit(scenario, options, &given);
    let sub_options = Options {
        quantum: Some(Nanos::from_ns(unit)),
        ..options.clone()
    };
    let mut base = crate::analyze_one_pcpu(&Input::Scenario(scenario.clone()), &sub_options)?;
    base.notes.retain(|n| !n.starts_with("NOT COVERED"));

    let pool_of: Vec<usize> = system
        .domains
        .iter()
        .map(|d| pool_index(scenario, &d.placement))
        .collect();
    let mut pool_problem: Vec<Option<String>> = system
        .pools
        .iter()
        .map(|p| pool_not_covered(&p.policy.kind(), &p.name))
        .collect();

    // Plans and each VCPU's pcpus.
    let mut plans = Vec::new();
    let mut affinities: Vec<Vec<CpuSet>> = Vec::new();
    for (d, domain) in system.domains.iter().enumerate() {
        let pool = &system.pools[pool_of[d]];
        let k = domain.placement.vcpu_count();
        let sets: Vec<CpuSet> = (0..k)
            .map(|j| match domain.placement.affinity_of(j) {
                Some(list) => CpuSet::from_indices(list.iter().copied())
                    .unwrap_or(CpuSet::EMPTY)
                    .intersection(pool.pcpus),
                None => pool.pcpus,
            })
            .collect();
        let mut plan = plan(domain, options, pool.policy.kind());
        if let Some(j) = sets.iter().position(|s| s.is_empty()) {
            plan = Plan::NotCovered(format!(
                "domain '{}': VCPU {j}'s affinity holds no pcpu of pool '{}'",
                domain.name, pool.name
            ));
        }
        if pool.policy.kind().is_server() && pool_problem[pool_of[d]].is_none() {
            if let Some(j) = sets.iter().position(|s| s.len() != 1) {
                pool_problem[pool_of[d]] = Some(format!(
                    "pool '{}' ({}): domain '{}', VCPU {j} may run on pcpus {}; global fixed \
                     priority over several pcpus is not analysed (pin every VCPU to one pcpu)",
                    pool.name,
                    pool.policy.kind(),
                    domain.name,
                    sets[j]
                ));
            }
        }
        plans.push(plan);
        affinities.push(sets);
    }

    // A domain the analysis does not take still runs its VCPUs: under fixed priority
    // nothing bounds what they take from the others on their pcpus.
    for (d, domain) in system.domains.iter().enumerate() {
        let p = pool_of[d];
        if let (Plan::NotCovered(why), true, None) = (
            &plans[d],
            system.pools[p].policy.kind().is_server(),
            &pool_problem[p],
        ) {
            pool_problem[p] = Some(format!(
                "pool '{}' ({}): {why}; its VCPUs still compete with every other domain of \
                 the pool (domain '{}')",
                system.pools[p].name,
                system.pools[p].policy.kind(),
                domain.name
            ));
        }
    }

    // Components and MPR interfaces.
    let mut outcomes: Vec<Outcome> = Vec::new();
    for (d, domain) in system.domains.iter().enumerate() {
        let base_domain = &base.domains[d];
        let pool = &system.pools[pool_of[d]];
        let mut outcome = Outcome {
            vcpus: Vec::new(),
            interfaces: vec![None; domain.placement.vcpu_count() as usize],
            model: None,
            reason: None,
            failed_task: None,
            not_covered: None,
            full: vec![false; domain.placement.vcpu_count() as usize],
        };
        match &plans[d] {
            Plan::NotCovered(why) => outcome.not_covered = Some(why.clone()),
            _ if pool_problem[pool_of[d]].is_some() => {}
            Plan::Mpr => mpr(domain, base_domain, &given[d], options, unit, &mut outcome),
            Plan::Components(components) if pool.policy.kind() == PolicyKind::Rtds => {
                let reports =
                    rtds_components(scenario, pool, domain, components, &given[d], &sub_options)?;
                record_components(
                    &mut base.domains[d],
                    components,
                    &reports,
                    unit,
                    &mut outcome,
                );
            }
            // Fixed-priority pools: per pcpu, below.
            Plan::Components(_) => {}
        }
        outcomes.push(outcome);
    }

    // Fixed-priority pools: per pcpu, the domains pinned there (one VCPU each).
    let mut served: Vec<Vec<Option<bool>>> = system
        .domains
        .iter()
        .map(|d| vec![None; d.placement.vcpu_count() as usize])
        .collect();
    for (p, pool) in system.pools.iter().enumerate() {
        if !pool.policy.kind().is_server() || pool_problem[p].is_some() {
            continue;
        }
        for pcpu in pool.pcpus.iter() {
            let members: Vec<usize> = (0..system.domains.len())
                .filter(|&d| {
                    pool_of[d] == p
                        && affinities[d][0] == CpuSet::one(pcpu)
                        && matches!(plans[d], Plan::Components(_))
                })
                .collect();
            if members.is_empty() {
                continue;
            }
            let domains: Vec<DomainSpec> = members
                .iter()
                .map(|&d| {
                    let mut one = system.domains[d].clone();
                    one.placement = Placement::default();
                    one
                })
                .collect();
            let names: Vec<&str> = domains.iter().map(|d| d.name.as_str()).collect();
            let sub = one_pcpu_scenario(scenario, pool, domains.clone());
            let report =
                crate::analyze_one_pcpu(&Input::Scenario(sub), &only_for(&sub_options, &names))?;
            for (&d, r) in members.iter().zip(&report.domains) {
                let all: Vec<usize> = (0..system.domains[d].tasks.len()).collect();
                record_components(
                    &mut base.domains[d],
                    &[(0, all)],
                    std::slice::from_ref(r),
                    unit,
                    &mut outcomes[d],
                );
                served[d][0] = r.root_schedulable;
                base.domains[d].priority = r.priority;
                base.domains[d].root_response_time = r.root_response_time;
            }
        }
    }

    // RTDS pools: clusters of equal affinity, each by the BCL test.
    let mut pools = Vec::new();
    for (p, pool) in system.pools.iter().enumerate() {
        let members: Vec<usize> = (0..system.domains.len())
            .filter(|&d| pool_of[d] == p)
            .collect();
        let mut root_test = String::new();
        if pool.policy.kind() == PolicyKind::Rtds && pool_problem[p].is_none() {
            if let Some(note) = dedicate(pool, &members, &outcomes, &mut affinities) {
                base.notes.push(note);
            }
        }
        if pool.policy.kind() == PolicyKind::Rtds && pool_problem[p].is_none() {
            let mut vcpus = Vec::new();
            for &d in &members {
                for (j, interface) in root_interfaces(&outcomes[d], &given[d], unit)
                    .into_iter()
                    .enumerate()
                {
                    if let Some(interface) = interface {
                        vcpus.push(RootVcpu {
                            domain: d,
                            index: j as u32,
                            pcpus: affinities[d][j],
                            interface,
                        });
                    }
                }
            }
            match clusters(&vcpus) {
                Err((a, b)) => {
                    let name = |v: &RootVcpu| {
                        format!("'{}' VCPU {}", system.domains[v.domain].name, v.index)
                    };
                    pool_problem[p] = Some(format!(
                        "pool '{}' (rtds): the affinities of {} (pcpus {}) and {} (pcpus {}) \
                         overlap without being equal; only affinities that split the pool \
                         into clusters are analysed",
                        pool.name,
                        name(&vcpus[a]),
                        vcpus[a].pcpus,
                        name(&vcpus[b]),
                        vcpus[b].pcpus
                    ));
                }
                Ok(list) => {
                    let mut described = Vec::new();
                    for (set, group) in list {
                        let servers: Vec<Interface> =
                            group.iter().map(|&v| vcpus[v].interface).collect();
                        for (&v, ok) in group.iter().zip(bcl_served(&servers, u64::from(set.len())))
                        {
                            served[vcpus[v].domain][vcpus[v].index as usize] = Some(ok);
                        }
                        let count = match group.len() {
                            1 => "1 VCPU".to_string(),
                            n => format!("{n} VCPUs"),
                        };
                        described.push(format!("pcpus {set} ({count})"));
                    }
                    root_test = format!(
                        "global EDF over budget-keeping VCPUs per cluster of equal affinity \
                         ({}): Σ_{{i≠k}} min(W_i(Π_k), Π_k − Θ_k + 1) < m·(Π_k − Θ_k + 1) \
                         (Bertogna, Cirinei & Lipari 2005)",
                        if described.is_empty() {
                            "no VCPUs".to_string()
                        } else {
                            described.join(", ")
                        }
                    );
                }
            }
        } else if pool.policy.kind().is_server() && pool_problem[p].is_none() {
            root_test = format!(
                "partitioned: per pcpu, {} by fixed priority, r_S(Θ) ≤ Π for every server \
                 (Davis & Burns 2005)",
                pool.policy.kind()
            );
        }
        pools.push((p, members, root_test));
    }

    // Verdicts.
    for (d, outcome) in outcomes.iter_mut().enumerate() {
        let domain = &system.domains[d];
        let report = &mut base.domains[d];
        report.pool = Some(system.pools[pool_of[d]].name.clone());
        if !system.pools[pool_of[d]].policy.kind().is_server() {
            // Fixed priorities at the root only under the servers (set per pcpu above).
            report.priority = None;
            report.root_response_time = None;
        }
        if outcome.not_covered.is_none() {
            outcome.not_covered = pool_problem[pool_of[d]].clone();
        }
        for (j, v) in outcome.vcpus.iter_mut().enumerate() {
            v.pcpus = affinities[d][j].iter().collect();
            v.served = served[d][j];
        }
        let unserved = outcome
            .vcpus
            .iter()
            .find(|v| v.served != Some(true) && v.budget.is_some());
        let reason = if let Some(why) = &outcome.not_covered {
            Some(format!("not covered: {why}"))
        } else if let Some(why) = &outcome.reason {
            Some(why.clone())
        } else if outcome.vcpus.is_empty() && !domain.tasks.is_empty() {
            Some("no interface".to_string())
        } else {
            unserved.map(|v| {
                format!(
                    "VCPU {} ({}, {}) is not given its budget in every period by its pool's \
                     root test on pcpus {}",
                    v.index,
                    Nanos::from_ns(v.period_ns.unwrap_or(0)),
                    Nanos::from_ns(v.budget_ns.unwrap_or(0)),
                    affinities[d][v.index as usize]
                )
            })
        };
        let at_root: Vec<&VcpuReport> = outcome
            .vcpus
            .iter()
            .filter(|v| v.budget.is_some())
            .collect();
        let all_served = at_root.iter().all(|v| v.served == Some(true));
        report.root_schedulable = (!at_root.is_empty()).then_some(all_served);
        report.schedulable = reason.is_none();
        report.failed_task = if outcome.reason.is_some() && outcome.not_covered.is_none() {
            outcome.failed_task.clone()
        } else {
            None
        };
        report.reason = reason;
        report.model = outcome.model.clone();
        report.not_covered = outcome.not_covered.clone();
        report.vcpus = std::mem::take(&mut outcome.vcpus);
        set_summary(report);
    }
    let covered = not_covered.is_empty();
    for d in &mut base.domains {
        d.guaranteed = d.schedulable && covered;
    }
    base.pools = pools
        .into_iter()
        .map(|(p, members, root_test)| {
            let pool = &system.pools[p];
            let schedulable = pool_problem[p]
                .is_none()
                .then(|| members.iter().all(|&d| base.domains[d].schedulable));
            PoolReport {
                name: pool.name.clone(),
                policy: pool.policy.kind().name().to_string(),
                pcpus: pool.pcpus.iter().collect(),
                domains: members
                    .iter()
                    .map(|&d| system.domains[d].name.clone())
                    .collect(),
                root_test: if root_test.is_empty() {
                    "not covered".to_string()
                } else {
                    root_test
                },
                schedulable,
                not_covered: pool_problem[p].clone(),
            }
        })
        .collect();
    not_covered.sort();
    not_covered.dedup();
    base.root_test = format!(
        "per pool ({} pool(s), {} pcpu(s)); see the pools",
        system.pools.len(),
        system.machine.pcpus
    );
    base.rta_server = None;
    let mut u_rm = rtvmm_analysis::ExactSum::zero();
    for v in base.domains.iter().flat_map(|d| &d.vcpus) {
        if let (Some(period), Some(budget)) = (v.period, v.budget) {
            u_rm.add(rtvmm_analysis::Ratio::new(budget, period));
        }
    }
    base.u_rm = u_rm.to_f64();
    base.u_rm_exact = u_rm.to_fraction_string();
    base.u_rm_minus_u_w = base.u_rm - base.u_w;
    base.root_schedulable = base
        .domains
        .iter()
        .all(|d| d.root_schedulable.unwrap_or(true));
    base.schedulable = covered && base.domains.iter().all(|d| d.schedulable);
    base.not_covered = not_covered;
    Ok(base)
}

/// What no part of the multicore analysis models, for the whole input.
fn global_not_covered(scenario: &Scenario) -> Vec<String> {
    let system = &scenario.system;
    let mut reasons = machine_not_covered(scenario, " (nor migration or lock cost)");
    for pool in &system.pools {
        if pool.overheads.is_some_and(|o| o != Overheads::ZERO) {
            reasons.push(format!(
                "pool '{}': overhead: the analysis assumes no scheduling overhead",
                pool.name
            ));
        }
    }
    let other = system
        .changes
        .iter()
        .filter(|c| {
            !(c.at.is_zero() && matches!(c.change, Change::Xl(XlCommand::SchedRtds { .. })))
        })
        .count();
    for change in system.changes.iter().filter(|c| c.at.is_zero()) {
        let Change::Xl(
            command @ XlCommand::SchedRtds {
                domain, period_us, ..
            },
        ) = &change.change
        else {
            continue;
        };
        let changes_period = system
            .domains
            .iter()
            .find(|d| &d.name == domain)
            .is_some_and(|d| d.vcpu.period != Nanos::from_us(*period_us));
        if changes_period {
            reasons.push(format!(
                "[[event]] at 0: `{command}` changes the VCPU period of domain '{domain}', \
                 whose first period keeps the old one; only a budget set this way is read"
            ));
        }
    }
    if other > 0 {
        reasons.push(format!(
            "[[event]]: {other} event(s) change the system (only `xl sched-rtds` at time 0 is \
             read, as a VCPU's initial parameters); the analysis covers the domains present at \
             time 0 with their parameters then"
        ));
    }
    reasons
}

/// Why a pool's policy is not covered, if it is not.
fn pool_not_covered(policy: &PolicyKind, pool: &str) -> Option<String> {
    match policy {
        PolicyKind::Rtds => None,
        k if k.is_server() => None,
        PolicyKind::Credit | PolicyKind::Arinc653 => Some(format!(
            "pool '{pool}' ({policy}): it does not enforce a budget per period, which the \
             analysis assumes"
        )),
        _ => Some(format!(
            "pool '{pool}' ({policy}): no root test for it on several pcpus (RTDS and the \
             fixed-priority servers are analysed)"
        )),
    }
}

fn pool_index(scenario: &Scenario, placement: &Placement) -> usize {
    placement
        .pool
        .as_ref()
        .and_then(|name| scenario.system.pools.iter().position(|p| &p.name == name))
        .unwrap_or(0)
}

/// How a domain is analysed (module docs).
fn plan(domain: &DomainSpec, options: &Options, policy: PolicyKind) -> Plan {
    let k = domain.placement.vcpu_count();
    if k == 1 {
        return Plan::Components(vec![(0, (0..domain.tasks.len()).collect())]);
    }
    if policy.is_server() {
        return Plan::NotCovered(format!(
            "domain '{}': vcpus = {k} in a {policy} pool; under the fixed-priority servers \
             one VCPU per domain is analysed",
            domain.name
        ));
    }
    match domain.placement.smp {
        GuestSmp::Partitioned => Plan::Components(
            (0..k)
                .map(|j| {
                    let tasks = (0..domain.tasks.len())
                        .filter(|&i| domain.tasks[i].vcpu == j)
                        .collect();
                    (j, tasks)
                })
                .collect(),
        ),
        GuestSmp::Global => {
            let edf = match options.guest {
                Some(guest) => guest == rtvmm_analysis::GuestScheduler::Edf,
                None => domain.guest == GuestScheduler::Edf,
            };
            if edf {
                Plan::Mpr
            } else {
                Plan::NotCovered(format!(
                    "domain '{}': global fixed priority (guest = {}, smp = global) over {k} \
                     VCPUs; no sound test for it is implemented (use guest = \"edf\" or smp = \
                     \"partitioned\")",
                    domain.name,
                    domain.guest.name()
                ))
            }
        }
    }
}

/// Each VCPU's (period, budget) as the file sets them at time 0: the domain's `vcpu`, then
/// every `xl sched-rtds` at time 0 that keeps the period (the core cuts the budget at once).
/// A VCPU whose period such an event changes gets period 0 (not checked).
fn given_vcpus(scenario: &Scenario, domain: &DomainSpec) -> Vec<(Nanos, Nanos)> {
    let k = domain.placement.vcpu_count() as usize;
    let mut vcpus = vec![(domain.vcpu.period, domain.vcpu.budget); k];
    for change in scenario.system.changes.iter().filter(|c| c.at.is_zero()) {
        let Change::Xl(XlCommand::SchedRtds {
            domain: name,
            vcpu,
            period_us,
            budget_us,
            ..
        }) = &change.change
        else {
            continue;
        };
        if name != &domain.name {
            continue;
        }
        let chosen: Vec<usize> = match vcpu {
            VcpuSel::All => (0..k).collect(),
            VcpuSel::One(i) => vec![*i as usize],
        };
        for j in chosen.into_iter().filter(|&j| j < k) {
            let (period, budget) = vcpus[j];
            if Nanos::from_us(*period_us) == period {
                vcpus[j].1 = budget.min(Nanos::from_us(*budget_us));
            } else {
                vcpus[j].0 = Nanos::ZERO;
            }
        }
    }
    vcpus
}

/// The analysis unit: the quantum (or `--quantum`), with `--given` down to the gcd of every
/// VCPU budget and period.
fn unit(scenario: &Scenario, options: &Options, given: &[Vec<(Nanos, Nanos)>]) -> u64 {
    let mut unit = options.quantum.unwrap_or(scenario.system.machine.quantum);
    if options.given {
        for &(period, budget) in given.iter().flatten() {
            if !period.is_zero() {
                unit = unit.gcd(period).gcd(budget);
            }
        }
    }
    unit.as_ns().max(1)
}

/// `options` with `--fixed-period` only for the named domains (the others are not in the
/// scenario it is used on).
fn only_for(options: &Options, names: &[&str]) -> Options {
    Options {
        fixed_periods: options
            .fixed_periods
            .iter()
            .filter(|f| names.contains(&f.domain.as_str()))
            .cloned()
            .collect(),
        ..options.clone()
    }
}

/// A one-pcpu scenario of `domains` under `pool`'s policy.
fn one_pcpu_scenario(scenario: &Scenario, pool: &PoolSpec, domains: Vec<DomainSpec>) -> Scenario {
    let mut sub = scenario.clone();
    sub.system.machine.pcpus = 1;
    sub.system.pools = vec![PoolSpec {
        pcpus: CpuSet::one(0),
        ..pool.clone()
    }];
    sub.system.domains = domains;
    sub.system.changes.clear();
    sub.system.chains.clear();
    sub.external.clear();
    sub
}

/// Each component of an RTDS domain alone on one pcpu (the root test there is trivial: one
/// server). Computed interfaces of one domain share the smallest of their periods.
fn rtds_components(
    scenario: &Scenario,
    pool: &PoolSpec,
    domain: &DomainSpec,
    components: &[(u32, Vec<usize>)],
    given: &[(Nanos, Nanos)],
    options: &Options,
) -> Result<Vec<DomainReport>, AnalyzeError> {
    let run = |options: &Options| -> Result<Vec<DomainReport>, AnalyzeError> {
        components
            .iter()
            .map(|(j, tasks)| {
                let mut one = domain.clone();
                one.placement = Placement::default();
                one.tasks = tasks
                    .iter()
                    .map(|&i| {
                        let mut t = domain.tasks[i].clone();
                        t.vcpu = 0;
                        t
                    })
                    .collect();
                if options.given {
                    (one.vcpu.period, one.vcpu.budget) = given[*j as usize];
                }
                let sub = one_pcpu_scenario(scenario, pool, vec![one]);
                let report = crate::analyze_one_pcpu(
                    &Input::Scenario(sub),
                    &only_for(options, &[domain.name.as_str()]),
                )?;
                Ok(report.domains.into_iter().next().expect("one domain"))
            })
            .collect()
    };
    let reports = run(options)?;
    if options.given || components.len() < 2 {
        return Ok(reports);
    }
    let periods: Vec<u64> = reports.iter().filter_map(|r| r.period).collect();
    let (Some(&min), Some(&max)) = (periods.iter().min(), periods.iter().max()) else {
        return Ok(reports);
    };
    if min == max {
        return Ok(reports);
    }
    let mut fixed = options.clone();
    fixed.fixed_periods.retain(|f| f.domain != domain.name);
    fixed.fixed_periods.push(FixedPeriod {
        domain: domain.name.clone(),
        period: Length::Units(min),
    });
    run(&fixed)
}

/// The components' results into the domain's report and outcome: each VCPU's interface,
/// its tasks' results, the first failure.
fn record_components(
    report: &mut DomainReport,
    components: &[(u32, Vec<usize>)],
    results: &[DomainReport],
    unit: u64,
    outcome: &mut Outcome,
) {
    let several = components.len() > 1;
    for ((j, tasks), result) in components.iter().zip(results) {
        for (n, &i) in tasks.iter().enumerate() {
            report.tasks[i] = result.tasks[n].clone();
        }
        let interface = result
            .period
            .zip(result.budget)
            .map(|(p, b)| Interface::new(p, b));
        outcome.interfaces[*j as usize] = interface;
        outcome.vcpus.push(vcpu_report(*j, interface, unit));
        if !result.schedulable && outcome.reason.is_none() {
            let why = result
                .reason
                .clone()
                .unwrap_or_else(|| "not schedulable".into());
            outcome.reason = Some(if several {
                format!("VCPU {j}: {why}")
            } else {
                why
            });
            outcome.failed_task = result.failed_task.clone();
        }
        if !several {
            report.analysed_as = result.analysed_as;
            report.sbf = result.sbf;
            report.interface_source = result.interface_source;
            report.proven_optimal = result.proven_optimal;
        }
    }
    outcome.model = Some(if several { "prm per vcpu" } else { "prm" }.to_string());
}

fn vcpu_report(index: u32, interface: Option<Interface>, unit: u64) -> VcpuReport {
    VcpuReport {
        index,
        period: interface.map(|i| i.period),
        budget: interface.map(|i| i.budget),
        period_ns: interface.map(|i| i.period.saturating_mul(unit)),
        budget_ns: interface.map(|i| i.budget.saturating_mul(unit)),
        pcpus: Vec::new(),
        served: None,
    }
}

/// A global EDF guest: the MPR interface (computed or given) and its VCPUs.
fn mpr(
    domain: &DomainSpec,
    report: &DomainReport,
    given: &[(Nanos, Nanos)],
    options: &Options,
    unit: u64,
    outcome: &mut Outcome,
) {
    // What the one-pcpu conversion refuses a domain for (a VCPU offset, an aperiodic task,
    // a time below the unit) holds for any number of VCPUs.
    if let Some(why) = &report.reason {
        if !domain.vcpu.offset.is_zero()
            || report
                .tasks
                .iter()
                .any(|t| t.period.is_none() || t.kind == TaskKind::Aperiodic)
        {
            outcome.reason = Some(why.clone());
            outcome.failed_task = report.failed_task.clone();
            return;
        }
    }
    let tasks: Vec<Task> = report
        .tasks
        .iter()
        .map(|t| {
            Task::with_deadline(
                t.period.unwrap_or(0),
                t.wcet.unwrap_or(0),
                t.deadline.unwrap_or(0),
            )
        })
        .collect();
    if tasks.is_empty() {
        return;
    }
    let workload = match Workload::new(tasks) {
        Ok(w) => w,
        Err(e) => {
            outcome.reason = Some(format!("its tasks are not valid for the analysis: {e}"));
            return;
        }
    };
    let k = u64::from(domain.placement.vcpu_count());
    match options.model {
        None | Some(Model::Dmpr) => {
            return dmpr(report, given, options, unit, &workload, k, outcome);
        }
        Some(Model::Prm) => {
            outcome.not_covered = Some(
                "--model prm is the one-VCPU model: a global EDF guest of several VCPUs \
                 needs --model dmpr (the default) or mpr"
                    .to_string(),
            );
            return;
        }
        Some(Model::Mpr) => {}
    }
    let mpr = if options.given {
        let period = given[0].0;
        if period.is_zero() || given.iter().any(|g| g.0 != period) {
            outcome.not_covered = Some(format!(
                "domain '{}': its VCPUs have different periods; the MPR test needs one",
                domain.name
            ));
            return;
        }
        let budget: u64 = given.iter().map(|g| g.1.as_ns() / unit).sum();
        for (j, g) in given.iter().enumerate() {
            let interface = Interface::new(g.0.as_ns() / unit, g.1.as_ns() / unit);
            outcome.interfaces[j] = Some(interface);
            outcome
                .vcpus
                .push(vcpu_report(j as u32, Some(interface), unit));
        }
        match Mpr::new(period.as_ns() / unit, budget, k) {
            Ok(mpr) => mpr,
            Err(e) => {
                outcome.reason = Some(format!("its VCPUs are no MPR interface: {e}"));
                return;
            }
        }
    } else {
        let (min, max) = search_range(&workload, options, unit);
        let search = match optimal_mpr_interface(&workload, min, max, Some(k)) {
            Ok(search) => search,
            Err(e) => {
                outcome.reason = Some(format!("no MPR interface with at most {k} VCPUs: {e}"));
                return;
            }
        };
        let best = search.best;
        let m = best.concurrency();
        let per_vcpu = best.budget().div_ceil(m);
        for j in 0..m {
            let interface = Interface::new(best.period(), per_vcpu);
            outcome.interfaces[j as usize] = Some(interface);
            outcome
                .vcpus
                .push(vcpu_report(j as u32, Some(interface), unit));
        }
        outcome.interfaces.truncate(m as usize);
        outcome.model = Some(format!("mpr ⟨{}, {}, {m}⟩", best.period(), best.budget()));
        Mpr::new(best.period(), per_vcpu * m, m).expect("within m′ processors")
    };
    if outcome.model.is_none() {
        outcome.model = Some(format!(
            "mpr ⟨{}, {}, {}⟩",
            mpr.period(),
            mpr.budget(),
            mpr.concurrency()
        ));
    }
    outcome.gedf_verdict(
        report,
        gedf_schedulable(&workload, &mpr),
        "MPR",
        "Shin, Easwaran & Lee 2008, Theorem 1",
    );
}

/// The period range of a global guest's search: `--period-range`, else 1 to its shortest
/// deadline.
fn search_range(workload: &Workload, options: &Options, unit: u64) -> (u64, u64) {
    let min_deadline = workload
        .tasks()
        .iter()
        .map(|t| t.deadline)
        .min()
        .unwrap_or(1);
    match options.period_range {
        Some(b) => (b.min.ceil_units(unit).max(1), b.max.floor_units(unit)),
        None => (1, min_deadline.max(1)),
    }
}

/// A global EDF guest under DMPR: m full VCPUs and one partial `(Π, Θ)` (computed: the
/// minimum-bandwidth one with at most k VCPUs; given: the VCPUs whose budget is their
/// period are the full ones, at most one other is the partial one).
fn dmpr(
    report: &DomainReport,
    given: &[(Nanos, Nanos)],
    options: &Options,
    unit: u64,
    workload: &Workload,
    k: u64,
    outcome: &mut Outcome,
) {
    let dmpr = if options.given {
        let partial: Vec<&(Nanos, Nanos)> = given.iter().filter(|g| g.0 != g.1).collect();
        if partial.len() > 1 || given.iter().any(|g| g.0.is_zero()) {
            outcome.not_covered = Some(format!(
                "domain '{}': {} VCPUs whose budget is below their period; DMPR has one \
                 (--model mpr checks equal VCPUs)",
                report.name,
                partial.len()
            ));
            return;
        }
        for (j, g) in given.iter().enumerate() {
            let interface = Interface::new(g.0.as_ns() / unit, g.1.as_ns() / unit);
            outcome.interfaces[j] = Some(interface);
            outcome
                .vcpus
                .push(vcpu_report(j as u32, Some(interface), unit));
        }
        let full = (given.len() - partial.len()) as u64;
        let (period, budget) = partial
            .first()
            .map_or((given[0].0, Nanos::ZERO), |g| (g.0, g.1));
        match Dmpr::new(full, period.as_ns() / unit, budget.as_ns() / unit) {
            Ok(dmpr) => dmpr,
            Err(e) => {
                outcome.reason = Some(format!("its VCPUs are no DMPR interface: {e}"));
                return;
            }
        }
    } else {
        let (min, max) = search_range(workload, options, unit);
        let best = match optimal_dmpr_interface(workload, min, max, Some(k)) {
            Ok(search) => search.best,
            Err(e) => {
                outcome.reason = Some(format!("no DMPR interface with at most {k} VCPUs: {e}"));
                return;
            }
        };
        let vcpus = best.to_vcpus();
        for (j, &interface) in vcpus.iter().enumerate() {
            outcome.interfaces[j] = Some(interface);
            outcome.full[j] = interface.budget == interface.period;
            outcome
                .vcpus
                .push(vcpu_report(j as u32, Some(interface), unit));
        }
        outcome.interfaces.truncate(vcpus.len());
        outcome.full.truncate(vcpus.len());
        best
    };
    outcome.model = Some(format!(
        "dmpr {} full + ({}, {})",
        dmpr.full(),
        dmpr.period(),
        dmpr.budget()
    ));
    outcome.gedf_verdict(
        report,
        gedf_schedulable_dmpr(workload, &dmpr),
        "DMPR",
        "Xu et al. 2013",
    );
}

/// DMPR's hybrid root: each full VCPU free to run anywhere in the pool gets a pcpu of its
/// own, from the highest down, and every other VCPU free to run anywhere gets the pcpus
/// left. When that leaves no pcpu for the others, nothing is dedicated (the root test then
/// judges the full VCPUs among the others) and the returned note says so.
fn dedicate(
    pool: &PoolSpec,
    members: &[usize],
    outcomes: &[Outcome],
    affinities: &mut [Vec<CpuSet>],
) -> Option<String> {
    let mut left = pool.pcpus;
    let mut dedicated = Vec::new();
    let mut others = 0;
    for &d in members {
        let count = if outcomes[d].vcpus.is_empty() {
            affinities[d].len()
        } else {
            outcomes[d].vcpus.len()
        };
        for (j, &set) in affinities[d].iter().enumerate().take(count) {
            let full = outcomes[d].full.get(j).copied().unwrap_or(false);
            if !full || set != pool.pcpus {
                others += 1;
                continue;
            }
            match left.iter().last() {
                Some(pcpu) => {
                    left.remove(pcpu);
                    dedicated.push((d, j, pcpu));
                }
                None => others += 1,
            }
        }
    }
    if dedicated.is_empty() {
        return None;
    }
    if left.is_empty() && others > 0 {
        return Some(format!(
            "pool '{}': its {} pcpu(s) cannot each hold a full DMPR VCPU and leave one for the \
             other VCPUs; the full VCPUs are scheduled with the others",
            pool.name,
            pool.pcpus.len()
        ));
    }
    for &d in members {
        for set in affinities[d].iter_mut() {
            if *set == pool.pcpus {
                *set = left;
            }
        }
    }
    for (d, j, pcpu) in dedicated {
        affinities[d][j] = CpuSet::one(pcpu);
    }
    None
}

/// The interfaces a domain's VCPUs compete with at the root: the analysed ones, and for a
/// VCPU without one (its tasks refused, or no analysis) its parameters as written (budget
/// up, period down to units) — it still runs.
fn root_interfaces(
    outcome: &Outcome,
    given: &[(Nanos, Nanos)],
    unit: u64,
) -> Vec<Option<Interface>> {
    let written = |&(period, budget): &(Nanos, Nanos)| {
        (!period.is_zero()).then(|| {
            let period = (period.as_ns() / unit).max(1);
            Interface::new(period, budget.as_ns().div_ceil(unit).min(period))
        })
    };
    if outcome.interfaces.iter().any(Option::is_some) {
        return outcome
            .interfaces
            .iter()
            .enumerate()
            .map(|(j, i)| i.or_else(|| given.get(j).and_then(written)))
            .collect();
    }
    given.iter().map(written).collect()
}

/// The VCPUs grouped by pcpu set, sets in order of their lowest pcpu; `Err` names two
/// VCPUs whose sets overlap without being equal.
#[allow(clippy::type_complexity)]
fn clusters(vcpus: &[RootVcpu]) -> Result<Vec<(CpuSet, Vec<usize>)>, (usize, usize)> {
    let mut groups: Vec<(CpuSet, Vec<usize>)> = Vec::new();
    for (v, vcpu) in vcpus.iter().enumerate() {
        match groups.iter_mut().find(|(set, _)| *set == vcpu.pcpus) {
            Some((_, members)) => members.push(v),
            None => {
                if let Some((_, members)) = groups
                    .iter()
                    .find(|(set, _)| !set.intersection(vcpu.pcpus).is_empty())
                {
                    return Err((members[0], v));
                }
                groups.push((vcpu.pcpus, vec![v]));
            }
        }
    }
    groups.sort_by_key(|(set, _)| set.lowest());
    Ok(groups)
}

/// The domain's summary fields from its VCPUs: the common period and the largest budget
/// (what a scenario's `vcpu` line takes), the bandwidth summed over them.
fn set_summary(report: &mut DomainReport) {
    let with: Vec<&VcpuReport> = report.vcpus.iter().filter(|v| v.budget.is_some()).collect();
    if with.is_empty() {
        return;
    }
    report.period = with.iter().filter_map(|v| v.period).min();
    report.budget = with.iter().filter_map(|v| v.budget).max();
    report.period_ns = with.iter().filter_map(|v| v.period_ns).min();
    report.budget_ns = with.iter().filter_map(|v| v.budget_ns).max();
    let mut sum = rtvmm_analysis::ExactSum::zero();
    for v in &with {
        sum.add(rtvmm_analysis::Ratio::new(
            v.budget.unwrap_or(0),
            v.period.unwrap_or(1),
        ));
    }
    report.bandwidth = sum.to_f64();
    report.bandwidth_exact = Some(sum.to_fraction_string());
    report.overhead = report.bandwidth - report.utilization;
    if report
        .model
        .as_deref()
        .is_some_and(|m| m.starts_with("mpr") || m.starts_with("dmpr"))
    {
        report.sbf = None;
        report.analysed_as = Some(rtvmm_analysis::GuestScheduler::Edf);
        for t in &mut report.tasks {
            t.lemma1 = None;
            t.rta = RtaStatus::NotApplicable;
            t.wcrt = None;
            t.wcrt_ns = None;
            t.slack_ns = None;
            t.bound_to_release = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::{run_on, scenario};
    use crate::{analyze, emit_scenario, Input, Options, Report};
    use rtvmm_analysis::{gedf_schedulable, optimal_mpr_interface, GedfVerdict, Mpr, Workload};
    use rtvmm_analysis::{gedf_schedulable_dmpr, optimal_dmpr_interface};

    fn given() -> Options {
        Options {
            given: true,
            ..Options::default()
        }
    }

    /// `[[domain]]` text: name, extra lines (vcpus, smp, guest, pool, affinity), VCPU
    /// budget/period in ms, tasks (name, period ms, wcet ms, vcpu).
    fn domain(
        name: &str,
        extra: &str,
        vcpu: Option<(u64, u64)>,
        tasks: &[(&str, u64, u64, u32)],
    ) -> String {
        let mut s = format!("[[domain]]\nname = \"{name}\"\n{extra}\n");
        if let Some((budget, period)) = vcpu {
            s.push_str(&format!(
                "vcpu = {{ budget = \"{budget}ms\", period = \"{period}ms\", extratime = false }}\n"
            ));
        }
        for (t, p, e, v) in tasks {
            s.push_str(&format!(
                "[[domain.task]]\nname = \"{t}\"\nperiod = \"{p}ms\"\nwcet = \"{e}ms\"\n"
            ));
            if extra.contains("partitioned") {
                s.push_str(&format!("vcpu = {v}\n"));
            }
        }
        s
    }

    fn rtds(pcpus: u32) -> String {
        format!("duration = \"1s\"\n[machine]\npcpus = {pcpus}\n[scheduler]\npolicy = \"rtds\"\n")
    }

    fn served(report: &Report) -> Vec<Option<bool>> {
        report
            .domains
            .iter()
            .flat_map(|d| d.vcpus.iter().map(|v| v.served))
            .collect()
    }

    /// A 2-pcpu global RTDS pool of three one-VCPU domains (10 ms, 5 ms), each with a task
    /// (20 ms, 2 ms). BCL for each VCPU: L = 10 − 5 + 1 = 6, the two others min(W(10) = 5,
    /// 6) = 5 each, 10 < 2·6: served; the task passes Lemma 1 on (10, 5) (blackout 10,
    /// sbf(20) = 5 ≥ 2). With budgets of 6 ms: L = 5, min(6, 5) = 5 each, 10 ≮ 10: none is
    /// served, so no domain is guaranteed (released together, two run [0, 6) and the third
    /// gets 4 ms of its 6).
    #[test]
    fn two_pcpu_global_rtds_pool_by_hand() {
        let system = |budget: u64| {
            let mut text = rtds(2);
            for name in ["a", "b", "c"] {
                text.push_str(&domain(name, "", Some((budget, 10)), &[("t", 20, 2, 0)]));
            }
            text
        };
        let report = run_on(&system(5), &given());
        assert_eq!(served(&report), vec![Some(true); 3]);
        assert!(report.schedulable, "{report:#?}");
        assert!(report.domains.iter().all(|d| d.guaranteed));
        assert_eq!(report.pools.len(), 1);
        assert_eq!(report.pools[0].schedulable, Some(true));
        assert_eq!(report.domains[0].vcpus[0].pcpus, vec![0, 1]);
        assert_eq!(report.u_rm_exact, "3/2");

        let report = run_on(&system(6), &given());
        assert_eq!(served(&report), vec![Some(false); 3]);
        assert!(!report.schedulable);
        assert!(report.domains.iter().all(|d| !d.guaranteed));
        assert_eq!(report.pools[0].schedulable, Some(false));
        let reason = report.domains[0].reason.as_deref().unwrap();
        assert!(
            reason.contains("VCPU 0 (10ms, 6ms) is not given its budget"),
            "{reason}"
        );
    }

    /// Pinned one to a pcpu each, the same three (10 ms, 6 ms) VCPUs are three clusters of
    /// one pcpu: each alone, served. Pinned a and b to pcpu 0: 6 + min(6, 5) > 10 → both
    /// refused, c alone on pcpu 1 served. Affinities {0} and {0, 1} overlap without being
    /// equal: the pool is not covered, by name.
    #[test]
    fn affinity_clusters_partition_the_pool() {
        let system = |pins: [&str; 3]| {
            let mut text = rtds(2);
            for (name, pin) in ["a", "b", "c"].into_iter().zip(pins) {
                text.push_str(&domain(
                    name,
                    &format!("affinity = \"{pin}\""),
                    Some((6, 10)),
                    &[("t", 20, 2, 0)],
                ));
            }
            text
        };
        let report = run_on(&system(["0", "1", "0-1"]), &given());
        let why = report.pools[0].not_covered.as_deref().unwrap();
        assert!(
            why.contains("'a' VCPU 0 (pcpus 0) and 'c' VCPU 0 (pcpus 0-1) overlap"),
            "{why}"
        );
        assert!(report.domains.iter().all(|d| !d.guaranteed));
        assert_eq!(report.pools[0].schedulable, None);

        let report = run_on(&system(["0", "0", "1"]), &given());
        assert_eq!(served(&report), vec![Some(false), Some(false), Some(true)]);
        assert!(report.domains[2].guaranteed);
        assert!(!report.domains[0].guaranteed);

        let mut three = system(["0", "1", "2"]);
        three = three.replace("pcpus = 2", "pcpus = 3");
        let report = run_on(&three, &given());
        assert_eq!(served(&report), vec![Some(true); 3]);
        assert!(report.schedulable);
    }

    /// A partitioned guest is the one-pcpu analysis VCPU by VCPU: each VCPU's interface,
    /// and every task's result, are what `analyze` gives the same tasks alone on one pcpu
    /// under RTDS. Here both VCPUs hold the RTAS 2012 workload {(7, 2), (8, 1), (10, 1)}
    /// ms, whose interface is (3, 2) (the crate's doctest).
    #[test]
    fn partitioned_guest_is_the_one_pcpu_analysis_per_vcpu() {
        let tasks = |v: u32| [("a", 7, 2, v), ("b", 8, 1, v), ("c", 10, 1, v)];
        let mut text = rtds(2);
        let mut both: Vec<(&str, u64, u64, u32)> = tasks(0).to_vec();
        both.extend([("d", 7, 2, 1), ("e", 8, 1, 1), ("f", 10, 1, 1)]);
        text.push_str(&domain(
            "p",
            "vcpus = 2\nsmp = \"partitioned\"",
            None,
            &both,
        ));
        let report = run_on(&text, &Options::default());
        let alone = run_on(
            &format!("{}{}", rtds(1), domain("p", "", None, &tasks(0))),
            &Options::default(),
        );
        assert!(alone.not_covered.is_empty(), "one pcpu RTDS is covered");
        let one = &alone.domains[0];
        assert_eq!((one.period, one.budget), (Some(3), Some(2)));
        let p = &report.domains[0];
        assert_eq!(p.model.as_deref(), Some("prm per vcpu"));
        for v in &p.vcpus {
            assert_eq!((v.period, v.budget), (one.period, one.budget));
        }
        for half in [&p.tasks[..3], &p.tasks[3..]] {
            for (t, expected) in half.iter().zip(&one.tasks) {
                assert_eq!(
                    (t.lemma1, t.rta, t.wcrt),
                    (expected.lemma1, expected.rta, expected.wcrt)
                );
            }
        }
        // Two VCPUs (3, 2) on two pcpus: L = 2, min(W(3) = 2, 2) = 2 < 2·2: both served.
        assert_eq!(served(&report), vec![Some(true), Some(true)]);
        assert!(report.schedulable, "{report:#?}");
    }

    /// The guest of `examples/multicore-rtds.toml`'s `video` (U = 1.1), three VCPUs.
    const VIDEO: [(&str, u64, u64, u32); 4] = [
        ("a", 10, 3, 0),
        ("b", 10, 3, 0),
        ("c", 20, 6, 0),
        ("d", 40, 8, 0),
    ];

    fn video_pairs() -> Workload {
        Workload::from_pairs(&[(10, 3), (10, 3), (20, 6), (40, 8)]).unwrap()
    }

    /// `--model mpr`: a global EDF guest of up to three VCPUs gets the library's
    /// minimum-bandwidth MPR interface ⟨Π, Θ, m′⟩ (here ⟨5, 9, 2⟩), as m′ VCPUs of
    /// (Π, ⌈Θ/m′⌉) = two (5, 5), which pass the gEDF test as ⟨5, 10, 2⟩. On four pcpus with
    /// f's two VCPUs (10, 5): each (5, 5) has L = 1 and three others contributing 1
    /// (W_(5,5)(5) = 5, W_(10,5)(5) = min(5, 5) = 5, each capped at 1), 3 < 4: served. A global fixed-priority guest is not covered, named — its VCPUs still
    /// compete.
    #[test]
    fn global_guests_mpr_or_not_covered() {
        let mut text = rtds(4);
        text.push_str(&domain(
            "g",
            "vcpus = 3\nsmp = \"global\"\nguest = \"edf\"",
            None,
            &VIDEO,
        ));
        text.push_str(&domain(
            "f",
            "vcpus = 2\nsmp = \"global\"\nguest = \"rm\"",
            Some((5, 10)),
            &VIDEO,
        ));
        let mpr = Options {
            model: Some(crate::Model::Mpr),
            ..Options::default()
        };
        let report = run_on(&text, &mpr);
        let w = video_pairs();
        let best = optimal_mpr_interface(&w, 1, 10, Some(3)).unwrap().best;
        assert_eq!(
            (best.period(), best.budget(), best.concurrency()),
            (5, 9, 2)
        );
        let g = &report.domains[0];
        assert_eq!(g.model.as_deref(), Some("mpr ⟨5, 9, 2⟩"));
        let vcpus: Vec<(Option<u64>, Option<u64>)> =
            g.vcpus.iter().map(|v| (v.period, v.budget)).collect();
        assert_eq!(vcpus, vec![(Some(5), Some(5)); 2]);
        assert_eq!(
            gedf_schedulable(&w, &Mpr::new(5, 10, 2).unwrap()),
            GedfVerdict::Schedulable
        );
        assert!(g.guaranteed, "{g:#?}");
        let f = &report.domains[1];
        assert!(!f.guaranteed);
        let why = f.not_covered.as_deref().unwrap();
        assert!(
            why.starts_with("domain 'f': global fixed priority"),
            "{why}"
        );
        assert!(f.vcpus.is_empty());
        assert!(!report.schedulable);
        assert!(
            report.not_covered.is_empty(),
            "only the domain is not covered"
        );
    }

    /// DMPR (the default): the same guest gets the library's minimum-bandwidth DMPR
    /// interface, one full VCPU and a partial (5, 4). The hybrid root gives the full VCPU
    /// pcpu 3 of its own — alone there, L = 1 and no interference: served — and moves every
    /// VCPU free to run anywhere to pcpus 0–2: the partial (5, 4) and h's (10, 5) there,
    /// BCL on m = 3 (for (5, 4): L = 2, min(W_(10,5)(5) = 5, 2) = 2 < 6; for (10, 5): L = 6,
    /// W_(5,4)(10) = 2·4 + min(4, 0) = 8, min(8, 6) = 6 < 18).
    #[test]
    fn dmpr_hybrid_root_gives_the_full_vcpu_a_pcpu_of_its_own() {
        let mut text = rtds(4);
        text.push_str(&domain(
            "g",
            "vcpus = 3\nsmp = \"global\"\nguest = \"edf\"",
            None,
            &VIDEO,
        ));
        text.push_str(&domain("h", "", Some((5, 10)), &[("t", 20, 1, 0)]));
        let report = run_on(&text, &Options::default());
        let best = optimal_dmpr_interface(&video_pairs(), 1, 10, Some(3))
            .unwrap()
            .best;
        assert_eq!((best.full(), best.period(), best.budget()), (1, 5, 4));
        assert_eq!(
            gedf_schedulable_dmpr(&video_pairs(), &best),
            GedfVerdict::Schedulable
        );
        let g = &report.domains[0];
        assert_eq!(g.model.as_deref(), Some("dmpr 1 full + (5, 4)"));
        let shown = |v: &crate::VcpuReport| (v.period, v.budget, v.pcpus.clone(), v.served);
        assert_eq!(shown(&g.vcpus[0]), (Some(5), Some(5), vec![3], Some(true)));
        assert_eq!(
            shown(&g.vcpus[1]),
            (Some(5), Some(4), vec![0, 1, 2], Some(true))
        );
        assert_eq!(g.vcpus.len(), 2);
        assert_eq!(report.domains[1].vcpus[0].pcpus, vec![0, 1, 2]);
        assert!(report.schedulable, "{report:#?}");
        // The emitted scenario pins them, and `--given` reads the same hybrid back.
        let input = Input::Scenario(scenario(&text));
        let computed = analyze(&input, &Options::default()).unwrap();
        let emitted = emit_scenario(&input, &computed).unwrap();
        assert!(emitted.contains("affinity = [\"3\", \"0-2\"]"), "{emitted}");
        let back = rtvmm_scenario::Scenario::from_toml(&emitted, "emitted.toml").unwrap();
        let again = analyze(&Input::Scenario(back), &given()).unwrap();
        assert_eq!(
            again.domains[0].model.as_deref(),
            Some("dmpr 1 full + (5, 4)")
        );
        assert!(again.schedulable, "{again:#?}");
    }

    /// A Credit pool is named not covered; the domains of the RTDS pool beside it keep
    /// their verdict, and `check --admit` refuses naming the Credit domain's pool.
    #[test]
    fn a_credit_pool_is_not_covered_the_rtds_pool_is() {
        let mut text = String::from(
            "duration = \"1s\"\n[machine]\npcpus = 2\n[[pool]]\nname = \"Pool-0\"\npcpus = \"0\"\npolicy = \"rtds\"\n[[pool]]\nname = \"batch\"\npcpus = \"1\"\npolicy = \"credit\"\n",
        );
        text.push_str(&domain("rt", "", Some((2, 5)), &[("t", 10, 1, 0)]));
        text.push_str(&domain(
            "web",
            "pool = \"batch\"",
            Some((2, 5)),
            &[("t", 10, 1, 0)],
        ));
        let report = run_on(&text, &given());
        assert!(report.domains[0].guaranteed);
        assert_eq!(report.pools[0].schedulable, Some(true));
        let web = &report.domains[1];
        assert!(!web.guaranteed);
        let why = report.pools[1].not_covered.as_deref().unwrap();
        assert!(
            why.starts_with("pool 'batch' (credit): it does not enforce"),
            "{why}"
        );
        assert_eq!(web.not_covered.as_deref(), Some(why));
        let refusal = report.refusal().unwrap();
        assert_eq!(refusal.domain.as_deref(), Some("web"));
        // Every `xl` line is one rtvmm's own `xl` reader takes.
        let xl = report.xl_commands();
        assert!(
            xl.contains("xl cpupool-create name=\"batch\" sched=\"credit\"\n"),
            "{xl}"
        );
        for line in xl.lines().filter_map(|l| l.strip_prefix("xl ")) {
            rtvmm_core::xl::XlCommand::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        }
        assert!(
            refusal.reason.contains("pool 'batch' (credit)"),
            "{}",
            refusal.reason
        );
    }

    /// A partitioned Deferrable pool: per pcpu, the one-pcpu analysis of the domains pinned
    /// there. (5 ms, 2 ms) and (10 ms, 3 ms) on pcpu 0 pass as on one pcpu; the lone
    /// domain on pcpu 1 takes the priority 1 of its own pcpu. A VCPU free to move is
    /// global fixed priority: not covered.
    #[test]
    fn partitioned_fixed_priority_pool_is_the_one_pcpu_root_per_pcpu() {
        let head =
            "duration = \"1s\"\n[machine]\npcpus = 2\n[scheduler]\npolicy = \"deferrable\"\n";
        let mut text = String::from(head);
        text.push_str(&domain("a", "affinity = \"0\"", None, &[("t", 10, 1, 0)]));
        text.push_str(&domain("b", "affinity = \"0\"", None, &[("t", 20, 3, 0)]));
        text.push_str(&domain("c", "affinity = \"1\"", None, &[("t", 40, 6, 0)]));
        let report = run_on(&text, &Options::default());
        let mut alone = String::from("duration = \"1s\"\n[scheduler]\npolicy = \"deferrable\"\n");
        alone.push_str(&domain("a", "", None, &[("t", 10, 1, 0)]));
        alone.push_str(&domain("b", "", None, &[("t", 20, 3, 0)]));
        let one = run_on(&alone, &Options::default());
        for (d, expected) in report.domains.iter().zip(&one.domains) {
            assert_eq!(
                (d.period, d.budget, d.priority, d.root_schedulable),
                (
                    expected.period,
                    expected.budget,
                    expected.priority,
                    expected.root_schedulable
                )
            );
        }
        assert_eq!(report.domains[2].priority, Some(1));
        assert!(report.schedulable, "{report:#?}");
        let free = text.replace("affinity = \"1\"", "");
        let report = run_on(&free, &Options::default());
        assert!(report.pools[0]
            .not_covered
            .as_deref()
            .unwrap()
            .contains("global fixed priority"));
    }

    /// `--emit scenario` writes each VCPU's budget (a time-0 `xl sched-rtds -v i` where a
    /// VCPU's budget is below the domain's), and `--given` on the emitted file reads back
    /// the same VCPUs with the same verdicts.
    #[test]
    fn emitted_multicore_scenario_reads_back_the_same_vcpus() {
        let mut text = rtds(2);
        text.push_str(&domain(
            "p",
            "vcpus = 2\nsmp = \"partitioned\"",
            None,
            &[
                ("sense", 5, 1, 0),
                ("act", 10, 1, 0),
                ("plan", 20, 4, 1),
                ("log", 40, 2, 1),
            ],
        ));
        let input = Input::Scenario(scenario(&text));
        let report = analyze(&input, &Options::default()).unwrap();
        let budgets: Vec<Option<u64>> = report.domains[0]
            .vcpus
            .iter()
            .map(|v| v.budget_ns)
            .collect();
        assert_ne!(budgets[0], budgets[1], "{report:#?}");
        let emitted = emit_scenario(&input, &report).unwrap();
        assert!(
            emitted.contains("xl = \"sched-rtds -d p -v 1 -p 4000 -b 1000\""),
            "{emitted}"
        );
        let back = rtvmm_scenario::Scenario::from_toml(&emitted, "emitted.toml").unwrap();
        let again = analyze(&Input::Scenario(back), &given()).unwrap();
        let budgets_again: Vec<Option<u64>> =
            again.domains[0].vcpus.iter().map(|v| v.budget_ns).collect();
        assert_eq!(budgets, budgets_again);
        assert_eq!(report.schedulable, again.schedulable);
        assert!(again.schedulable, "{again:#?}");
    }

    /// `xl sched-rtds -d D -v i` at time 0 is VCPU i's budget for `--given` (the smaller
    /// of the two: the core cuts the budget at once, and a larger one waits for the next
    /// period); one that changes the period is not covered, by the command.
    #[test]
    fn time_zero_sched_rtds_sets_a_vcpu_budget_and_a_period_change_is_not_covered() {
        let mut text = rtds(2);
        text.push_str(&domain(
            "p",
            "vcpus = 2\nsmp = \"partitioned\"",
            Some((4, 10)),
            &[("a", 20, 1, 0), ("b", 20, 1, 1)],
        ));
        let event = |p: u64, b: u64| {
            format!("[[event]]\nat = \"0ms\"\nxl = \"sched-rtds -d p -v 1 -p {p} -b {b}\"\n")
        };
        let report = run_on(&format!("{text}{}", event(10_000, 2_000)), &given());
        let budgets: Vec<Option<u64>> = report.domains[0]
            .vcpus
            .iter()
            .map(|v| v.budget_ns)
            .collect();
        assert_eq!(budgets, vec![Some(4_000_000), Some(2_000_000)]);
        assert!(
            report.not_covered.is_empty() && report.schedulable,
            "{report:#?}"
        );
        let raised = run_on(&format!("{text}{}", event(10_000, 6_000)), &given());
        assert_eq!(raised.domains[0].vcpus[1].budget_ns, Some(4_000_000));
        let moved = run_on(&format!("{text}{}", event(5_000, 2_000)), &given());
        assert_eq!(moved.not_covered.len(), 1, "{:?}", moved.not_covered);
        assert!(
            moved.not_covered[0]
                .contains("`sched-rtds -d p -v 1 -p 5000 -b 2000` changes the VCPU period"),
            "{}",
            moved.not_covered[0]
        );
        assert!(!moved.schedulable && moved.domains.iter().all(|d| !d.guaranteed));
    }

    /// What the one-pcpu analysis refuses a domain for holds for a global guest too: a
    /// VCPU offset (no budget before it, tasks released from 0) and an aperiodic task.
    #[test]
    fn a_global_guest_with_a_vcpu_offset_or_an_aperiodic_task_is_refused() {
        let mut text = rtds(4);
        text.push_str(&domain(
            "g",
            "vcpus = 3\nsmp = \"global\"\nguest = \"edf\"",
            None,
            &VIDEO,
        ));
        let offset = text.replace(
            "guest = \"edf\"\n",
            "guest = \"edf\"\nvcpu = { budget = \"2ms\", period = \"3ms\", offset = \"1ms\" }\n",
        );
        let report = run_on(&offset, &Options::default());
        let why = report.domains[0].reason.as_deref().unwrap();
        assert!(why.contains("vcpu.offset"), "{why}");
        assert!(!report.domains[0].guaranteed);
        let aperiodic = format!(
            "{text}[[domain.task]]\nname = \"irq\"\nkind = \"aperiodic\"\nreleases = [\"0ms\"]\nperiod = \"100ms\"\nwcet = \"1ms\"\n"
        );
        let report = run_on(&aperiodic, &Options::default());
        assert!(!report.domains[0].guaranteed, "{:#?}", report.domains[0]);
        assert_eq!(report.domains[0].failed_task.as_deref(), Some("irq"));
    }

    /// On one pcpu the full DMPR VCPU cannot have a pcpu of its own and leave one for the
    /// partial VCPU: nothing is dedicated, a note says so, and the root judges them
    /// together — (5, 5) has L = 1 and W_(5,4)(5) = 4, min(4, 1) = 1 ≮ 1: not served.
    #[test]
    fn a_full_dmpr_vcpu_without_a_pcpu_to_spare_is_judged_with_the_others() {
        let mut text = rtds(1);
        text.push_str(&domain(
            "g",
            "vcpus = 3\nsmp = \"global\"\nguest = \"edf\"",
            None,
            &VIDEO,
        ));
        let report = run_on(&text, &Options::default());
        let g = &report.domains[0];
        assert_eq!(g.model.as_deref(), Some("dmpr 1 full + (5, 4)"));
        assert!(g.vcpus.iter().all(|v| v.pcpus == vec![0]));
        assert_eq!(g.vcpus[0].served, Some(false));
        assert!(!g.guaranteed);
        assert!(
            report
                .notes
                .iter()
                .any(|n| n.contains("cannot each hold a full DMPR VCPU")),
            "{:?}",
            report.notes
        );
    }

    /// A VCPU whose tasks the analysis refuses still runs: `p`'s VCPU 0 (10 ms, 5 ms) holds
    /// an aperiodic task that keeps it busy. With it at the root, `s` (10, 5) has L = 6 and
    /// W_p0(10) + W_p1(10) = 5 + 1 = 6 ≮ 6: not served (without it, 1 < 6 would have been).
    #[test]
    fn a_refused_vcpu_still_competes_at_the_root() {
        let mut text = rtds(1);
        text.push_str(
            "[[domain]]\nname = \"p\"\nvcpus = 2\nsmp = \"partitioned\"\nvcpu = { budget = \"5ms\", period = \"10ms\" }\n\
             [[domain.task]]\nname = \"busy\"\nkind = \"aperiodic\"\nreleases = [\"0ms\"]\nperiod = \"1000ms\"\nwcet = \"900ms\"\nvcpu = 0\n\
             [[domain.task]]\nname = \"t\"\nperiod = \"10ms\"\nwcet = \"1ms\"\nvcpu = 1\n\
             [[event]]\nat = \"0ms\"\nxl = \"sched-rtds -d p -v 1 -p 10000 -b 1000\"\n",
        );
        text.push_str(&domain("s", "", Some((5, 10)), &[("t", 10, 5, 0)]));
        let report = run_on(&text, &given());
        let s = &report.domains[1];
        assert_eq!(s.vcpus[0].served, Some(false), "{report:#?}");
        assert!(!s.guaranteed);
        assert!(!report.domains[0].guaranteed);
    }
}
