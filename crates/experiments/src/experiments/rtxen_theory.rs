//! rtxen-theory — analysis against run (`experiments.md`).
//!
//! Procedure: for the rtxen-capacity task sets (three share patterns, α from 30 % to
//! 100 % in steps of 5 %, the run seed), apply the hierarchical fixed-priority
//! response-time analysis (Davis & Burns 2005, as implemented in
//! [`rtvmm_analysis::hierarchical`]) to the five servers under the Deferrable and under the
//! Periodic Server, in units of 1 ms (every budget, period and cost of these task sets is a
//! whole number of milliseconds) with overheads taken as zero. A load is **guaranteed**
//! for a policy when every server is schedulable at the root and every task has a
//! response-time bound within its deadline. Then run each (pattern, α, policy) for 5
//! simulated minutes (no overhead, whatever `--overhead` says) and check:
//! - every guaranteed load shows no deadline miss;
//! - more finely, every domain whose tasks are all bounded shows no miss, and no task's
//!   observed worst response time exceeds its bound.
//!
//! Task priorities inside a domain are rate-monotonic with ties broken by declaration
//! order (the guest `rm` scheduler's rule), given to the analysis as distinct priorities.
//!
//! `--quick`: α ∈ {30, 50, 70, 90, 100} %, 5 s per run.

use rtvmm_analysis::{hierarchical_response_times, FpTask, ResponseBound, Server, ServerKind};
use rtvmm_core::machine::Overheads;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_gen::rtxen::{rtxen_loads_permille, SharePattern};
use rtvmm_sim::results::RunResults;

use super::rtxen_capacity::QUICK_LOADS_PERMILLE;
use super::Experiment;
use crate::error::ExperimentError;
use crate::plot::{Chart, LegendAt, LineChart, Series};
use crate::report::Output;
use crate::rtxen::rtxen_domains;
use crate::system::{build_system, machine, simulate, vcpu_params, ServerDomain};

pub const EXPERIMENT: Experiment = Experiment {
    name: "rtxen-theory",
    title: "analysis against run",
    description: "For the rtxen-capacity task sets, marks the loads α at which the Davis & \
        Burns hierarchical response-time analysis guarantees the system under the Deferrable \
        and the Periodic Server (overheads taken as zero), runs each of them for 5 simulated \
        minutes, and checks that every guaranteed load — and every domain the analysis \
        bounds — shows no deadline miss, and that no observed response time exceeds its \
        bound.",
    run: Some(run),
};

/// The analysis unit: every time of the rtxen task sets is a whole number of ms.
const UNIT: Nanos = Nanos::from_ms(1);

/// The policies compared, with the server kind the analysis uses for each.
pub const THEORY_POLICIES: [(PolicyKind, ServerKind); 2] = [
    (PolicyKind::Deferrable, ServerKind::Deferrable),
    (PolicyKind::Periodic, ServerKind::Periodic),
];

fn in_units(t: Nanos) -> Result<u64, ExperimentError> {
    if t.as_ns().checked_rem(UNIT.as_ns()) != Some(0) {
        return Err(ExperimentError::Analysis(format!(
            "{t} is not a whole number of {UNIT}"
        )));
    }
    Ok(t.as_ns() / UNIT.as_ns())
}

/// The servers of `domains` for the analysis, in ms, tasks with rate-monotonic priorities
/// (ties by declaration order).
pub fn analysis_servers(
    domains: &[ServerDomain],
    kind: ServerKind,
) -> Result<Vec<Server>, ExperimentError> {
    domains
        .iter()
        .map(|d| {
            // The rm guest's priority levels: by period, equal periods sharing one (served
            // first-in, first-out, so they interfere both ways in the analysis).
            let mut periods: Vec<Nanos> = d.tasks.iter().map(|t| t.period).collect();
            periods.sort_unstable();
            periods.dedup();
            let rank: Vec<u32> = d
                .tasks
                .iter()
                .map(|t| periods.partition_point(|&p| p < t.period) as u32)
                .collect();
            let tasks = d
                .tasks
                .iter()
                .zip(&rank)
                .map(|(t, &priority)| {
                    Ok(FpTask {
                        period: in_units(t.period)?,
                        wcet: in_units(t.wcet)?,
                        deadline: in_units(t.deadline)?,
                        priority,
                    })
                })
                .collect::<Result<Vec<_>, ExperimentError>>()?;
            // The simulated VCPU's cap on pending replenishments decides whether a
            // Sporadic Server can merge them (and so wait a whole period).
            let limit = vcpu_params(PolicyKind::Sporadic, d.budget, d.period, d.priority)
                .max_replenishments;
            let kind = match kind {
                ServerKind::Sporadic => ServerKind::sporadic(u64::from(limit), d.budget.as_ns()),
                other => other,
            };
            Ok(Server {
                bound: Vec::new(),
                name: d.name.clone(),
                budget: in_units(d.budget)?,
                period: in_units(d.period)?,
                priority: d.priority,
                kind,
                tasks,
            })
        })
        .collect()
}

/// What the analysis says about one system.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Per domain, per task: the response-time bound (ms), `None` when there is none
    /// within the deadline.
    pub tasks: Vec<Vec<Option<u64>>>,
    /// Per domain: whether its server is schedulable at the root.
    pub root_schedulable: Vec<bool>,
}

/// The hierarchical analysis of `domains` served by `kind` servers.
pub fn task_bounds(domains: &[ServerDomain], kind: ServerKind) -> Result<Bounds, ExperimentError> {
    let servers = analysis_servers(domains, kind)?;
    let analysis = hierarchical_response_times(&servers)
        .map_err(|e| ExperimentError::Analysis(e.to_string()))?;
    Ok(Bounds {
        tasks: analysis
            .iter()
            .map(|s| s.tasks.iter().map(ResponseBound::response_time).collect())
            .collect(),
        root_schedulable: analysis.iter().map(|s| s.schedulable_at_root).collect(),
    })
}

#[derive(Clone, Debug)]
struct Point {
    pattern: SharePattern,
    load_permille: u32,
    policy: PolicyKind,
    kind: ServerKind,
}

/// What one (pattern, α, policy) gave.
struct Outcome {
    bounds: Vec<Vec<Option<u64>>>,
    /// Per server: can the root deliver its budget within its period?
    root_schedulable: Vec<bool>,
    results: RunResults,
}

impl Outcome {
    fn domain_guaranteed(&self, d: usize) -> bool {
        self.bounds[d].iter().all(Option::is_some)
    }

    fn guaranteed(&self) -> bool {
        (0..self.bounds.len()).all(|d| self.domain_guaranteed(d))
    }

    /// Violations: guaranteed domains with misses, tasks above their bound.
    fn violations(&self) -> Vec<String> {
        let mut found = Vec::new();
        for (d, domain) in self.results.domains.iter().enumerate() {
            if self.domain_guaranteed(d) && domain.missed > 0 {
                found.push(format!(
                    "{}: guaranteed but missed {} of {} jobs",
                    domain.name, domain.missed, domain.jobs
                ));
            }
            for (t, task) in domain.tasks.iter().enumerate() {
                if let Some(bound) = self.bounds[d][t] {
                    let bound_ns = bound * UNIT.as_ns();
                    if task.max_response_ns > bound_ns {
                        found.push(format!(
                            "{}: observed response {} above the bound {}",
                            task.name,
                            Nanos(task.max_response_ns),
                            Nanos(bound_ns)
                        ));
                    }
                }
            }
        }
        found
    }
}

fn percent(permille: u32) -> String {
    format!("{}%", f64::from(permille) / 10.0)
}

fn run(out: &mut Output) -> Result<(), ExperimentError> {
    let options = out.options;
    let duration = options.duration_or(Nanos::from_secs(300), Nanos::from_secs(5));
    let loads: Vec<u32> = if options.quick {
        QUICK_LOADS_PERMILLE.to_vec()
    } else {
        rtxen_loads_permille()
    };
    let policies: Vec<(PolicyKind, ServerKind)> = match &options.policies {
        None => THEORY_POLICIES.to_vec(),
        Some(chosen) => {
            let mut kept = Vec::new();
            for p in chosen {
                let kind = match p {
                    PolicyKind::Deferrable => ServerKind::Deferrable,
                    PolicyKind::Periodic => ServerKind::Periodic,
                    PolicyKind::Polling => ServerKind::Polling,
                    PolicyKind::Sporadic => ServerKind::Sporadic,
                    other => {
                        return Err(ExperimentError::UnsupportedPolicy {
                            policy: other.to_string(),
                            reason: "the hierarchical analysis covers the deferrable, \
                                     periodic, polling and sporadic servers"
                                .to_string(),
                        })
                    }
                };
                kept.push((*p, kind));
            }
            kept
        }
    };
    let seed = options.seed;
    out.param("share patterns", "decreasing, even, increasing");
    out.param(
        "loads α",
        loads
            .iter()
            .map(|&l| percent(l))
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.param(
        "policies",
        policies
            .iter()
            .map(|(p, _)| p.name())
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.param(
        "analysis",
        "Davis & Burns 2005 hierarchical FP response times (rtvmm-analysis), unit 1 ms",
    );
    out.param("simulated time per run", duration);
    out.param("overheads", "none (taken as zero, as the procedure says)");
    out.param("pcpus · quantum", "1 · 1ms");

    let mut points = Vec::new();
    for pattern in SharePattern::ALL {
        for &load_permille in &loads {
            for &(policy, kind) in &policies {
                points.push(Point {
                    pattern,
                    load_permille,
                    policy,
                    kind,
                });
            }
        }
    }
    let name = |p: &Point| {
        format!(
            "rtxen-theory-{}-{}-{}",
            p.pattern, p.load_permille, p.policy
        )
    };
    let outcome = out.sweep("rtxen-theory", &points, name, |p| {
        let domains = rtxen_domains(p.pattern, p.load_permille, seed)?;
        let Bounds {
            tasks: bounds,
            root_schedulable,
        } = task_bounds(&domains, p.kind)?;
        let system = build_system(
            &domains,
            p.policy,
            machine(Nanos::from_ms(1), Overheads::default()),
        )?;
        let results = simulate(&system, &name(p), seed, duration)?;
        Ok(Outcome {
            bounds,
            root_schedulable,
            results,
        })
    })?;
    let finished: Vec<(&Point, &Outcome)> = points
        .iter()
        .zip(&outcome.results)
        .filter_map(|(p, o)| o.as_ref().map(|o| (p, o)))
        .collect();

    // Per task: bound against observation.
    let mut task_rows = Vec::new();
    for (p, o) in &finished {
        for (d, domain) in o.results.domains.iter().enumerate() {
            for (t, task) in domain.tasks.iter().enumerate() {
                let bound = o.bounds[d][t];
                task_rows.push(vec![
                    p.pattern.to_string(),
                    p.load_permille.to_string(),
                    p.policy.to_string(),
                    domain.name.clone(),
                    task.name.clone(),
                    bound.map_or_else(String::new, |b| (b * UNIT.as_ns()).to_string()),
                    task.max_response_ns.to_string(),
                    task.jobs.to_string(),
                    task.missed.to_string(),
                    bound
                        .map(|b| task.max_response_ns <= b * UNIT.as_ns())
                        .map_or_else(String::new, |ok| ok.to_string()),
                ]);
            }
        }
    }
    out.csv(
        "theory_tasks.csv",
        "per task: analytical response-time bound (empty = none within the deadline) and \
         the observed worst response",
        &[
            "pattern",
            "load_permille",
            "policy",
            "domain",
            "task",
            "bound_ns",
            "observed_max_response_ns",
            "jobs",
            "missed",
            "within_bound",
        ],
        &task_rows,
    )?;

    // Per (pattern, α, policy): guaranteed? missed? violations.
    let mut rows = Vec::new();
    let mut all_violations = Vec::new();
    for (p, o) in &finished {
        let guaranteed_domains = (0..o.bounds.len())
            .filter(|&d| o.domain_guaranteed(d))
            .count();
        let violations = o.violations();
        for v in &violations {
            all_violations.push(format!(
                "{} α={} {}: {v}",
                p.pattern,
                percent(p.load_permille),
                p.policy
            ));
        }
        rows.push(vec![
            p.pattern.to_string(),
            p.load_permille.to_string(),
            p.policy.to_string(),
            o.guaranteed().to_string(),
            guaranteed_domains.to_string(),
            o.results.missed.to_string(),
            format!("{:.6}", o.results.deadline_miss_ratio),
            violations.len().to_string(),
        ]);
    }
    out.csv(
        "theory.csv",
        "per run: guaranteed by the analysis, domains guaranteed, misses, violations",
        &[
            "pattern",
            "load_permille",
            "policy",
            "guaranteed",
            "domains_guaranteed",
            "missed",
            "deadline_miss_ratio",
            "violations",
        ],
        &rows,
    )?;

    for pattern in SharePattern::ALL {
        let mut header = vec!["α".to_string()];
        for (policy, _) in &policies {
            header.push(format!("{policy}: guaranteed (domains)"));
            header.push(format!("{policy}: DMR"));
        }
        let header_refs: Vec<&str> = header.iter().map(String::as_str).collect();
        let mut table = Vec::new();
        let mut series = Vec::new();
        for (policy, _) in &policies {
            let mine: Vec<&(&Point, &Outcome)> = finished
                .iter()
                .filter(|(p, _)| p.pattern == pattern && p.policy == *policy)
                .collect();
            series.push(Series {
                name: format!("{policy}: domains guaranteed by analysis"),
                points: mine
                    .iter()
                    .map(|(p, o)| {
                        let n = (0..o.bounds.len())
                            .filter(|&d| o.domain_guaranteed(d))
                            .count();
                        (f64::from(p.load_permille) / 10.0, n as f64)
                    })
                    .collect(),
            });
            series.push(Series {
                name: format!("{policy}: domains without a miss in the run"),
                points: mine
                    .iter()
                    .map(|(p, o)| {
                        let n = o.results.domains.iter().filter(|d| d.missed == 0).count();
                        (f64::from(p.load_permille) / 10.0, n as f64)
                    })
                    .collect(),
            });
        }
        for &load in &loads {
            let mut row = vec![percent(load)];
            for (policy, _) in &policies {
                match finished.iter().find(|(p, _)| {
                    p.pattern == pattern && p.policy == *policy && p.load_permille == load
                }) {
                    Some((_, o)) => {
                        let n = (0..o.bounds.len())
                            .filter(|&d| o.domain_guaranteed(d))
                            .count();
                        let verdict = if o.guaranteed() { "yes" } else { "no" };
                        row.push(format!("{verdict} ({n}/{})", o.bounds.len()));
                        row.push(format!("{:.2}%", o.results.deadline_miss_ratio * 100.0));
                    }
                    None => {
                        row.push("—".to_string());
                        row.push("—".to_string());
                    }
                }
            }
            table.push(row);
        }
        out.table(
            &format!("theory_{pattern}"),
            &format!("Analysis against run, {pattern} shares"),
            &header_refs,
            table,
        )?;
        let mut chart = LineChart::new(
            &format!("rtxen-theory: analysis against run ({pattern} shares)"),
            "total load α (%)",
            "domains (of 5)",
            series,
        );
        chart.x_range = Some((27.0, 103.0));
        chart.y_range = Some((-0.2, 6.5));
        chart.legend = LegendAt::UpperRight;
        out.figure(
            &format!("theory_{pattern}"),
            &Chart::Line(chart),
            &format!(
                "Per load α: how many domains the hierarchical analysis guarantees (all \
                 tasks bounded within their deadlines) and how many showed no miss in \
                 {duration} of simulation, {pattern} shares, seed {seed}. A guaranteed \
                 domain must show no miss."
            ),
        )?;
        for (policy, _) in &policies {
            let guaranteed: Vec<String> = finished
                .iter()
                .filter(|(p, o)| p.pattern == pattern && p.policy == *policy && o.guaranteed())
                .map(|(p, _)| percent(p.load_permille))
                .collect();
            let roots = finished
                .iter()
                .find(|(p, _)| p.pattern == pattern && p.policy == *policy)
                .map(|(_, o)| {
                    let ok = o.root_schedulable.iter().filter(|&&r| r).count();
                    format!(
                        "{ok} of {} servers schedulable at the root",
                        o.root_schedulable.len()
                    )
                })
                .unwrap_or_default();
            let loads = if guaranteed.is_empty() {
                "none".to_string()
            } else {
                guaranteed.join(", ")
            };
            out.finding(format!(
                "{pattern}, {policy}: loads guaranteed by the analysis: {loads} ({roots})"
            ));
        }
    }
    if all_violations.is_empty() {
        out.finding(
            "check: every guaranteed load and every bounded domain ran without a miss, and no \
             observed response time exceeded its bound",
        );
        out.text("**Check passed:** no guaranteed domain missed a deadline and no observed response time exceeded its analytical bound.");
    } else {
        out.finding(format!(
            "check FAILED: {} violation(s), first: {}",
            all_violations.len(),
            all_violations[0]
        ));
        let mut text = String::from("**Check failed.** Violations:\n\n");
        for v in &all_violations {
            text.push_str(&format!("- {v}\n"));
        }
        out.text(text);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvmm_core::guest::{GuestScheduler, TaskSpec};

    #[test]
    fn servers_are_given_in_ms_with_rm_task_priority_levels() {
        let domains = vec![ServerDomain {
            name: "d1".into(),
            budget: Nanos::from_ms(2),
            period: Nanos::from_ms(10),
            priority: 1,
            guest: GuestScheduler::Rm,
            tasks: vec![
                TaskSpec::periodic("a", Nanos::from_ms(50), Nanos::from_ms(5)),
                TaskSpec::periodic("b", Nanos::from_ms(20), Nanos::from_ms(1)),
                TaskSpec::periodic("c", Nanos::from_ms(50), Nanos::from_ms(2)),
            ],
            offset: Nanos::ZERO,
        }];
        let servers = analysis_servers(&domains, ServerKind::Periodic).unwrap();
        assert_eq!((servers[0].budget, servers[0].period), (2, 10));
        let priorities: Vec<u32> = servers[0].tasks.iter().map(|t| t.priority).collect();
        // Equal periods share a level: the rm guest serves them first-in, first-out.
        assert_eq!(priorities, vec![1, 0, 1]);
        assert_eq!(servers[0].tasks[0].period, 50);
        // A non-whole millisecond is refused, not rounded.
        let mut odd = domains.clone();
        odd[0].tasks[0].wcet = Nanos::from_us(5500);
        assert!(analysis_servers(&odd, ServerKind::Periodic).is_err());
    }
}
