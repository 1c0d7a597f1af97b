//! rtxen-quantum — how fine can the quantum be? (`docs/experiments.md`)
//!
//! Procedure: two domains under the Deferrable Server on one pcpu, for each quantum
//! q ∈ {1 ms, 100 µs, 10 µs, 1 µs}:
//! - domain 1 (priority 1): budget q, period 2q; one task of period 100 ms whose cost is
//!   swept from 1 ms to 50 ms (utilisation 1 % … 50 %), 600 jobs per point (60 s);
//! - domain 2 (priority 2): budget 2q, period 4q; one task that never finishes.
//!
//! The overhead model is on: a cost per `do_schedule` call and per context switch, paid —
//! as in Xen, where a VCPU's run time is measured from the instant `do_schedule` began
//! choosing it — from the budget of the VCPU each decision chose (the machine's default
//! `overhead_charge = incoming`; nobody pays when IDLE is chosen). By default the sweep
//! runs under two sets of costs (`xen`: 150 ns / 1.5 µs; `host`: the host executor's
//! measured 10 µs / 15 µs, see [`crate::options::OVERHEAD_PRESETS`]); `--overhead` runs
//! one set of costs instead. For each (costs, quantum) the report gives the utilisation at
//! which domain 1 starts to miss deadlines: the smallest swept utilisation with a deadline
//! miss ratio above zero.
//!
//! The two domains boot at staggered offsets drawn in `[0, 2q)` and `[0, 4q)` from the seed
//! and the quantum (the same for every cost), their tasks with them; `--in-phase` boots
//! both at 0.
//!
//! `--quick`: quanta 1 ms, 100 µs, 10 µs; costs 5, 10, …, 50 ms; 20 jobs per point.

use crate::figures::{decimal, percent};
use rtvmm_core::guest::{Arrival, GuestScheduler, TaskSpec};
use rtvmm_core::machine::Overheads;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;

use super::Experiment;
use crate::error::ExperimentError;
use crate::options::{describe_overheads, OVERHEAD_PRESETS};
use crate::plot::{Chart, LegendAt, LineChart, Series};
use crate::report::Output;
use crate::rtxen::{record_offsets, Phasing};
use crate::system::{
    build_system_with, rtxen_machine, run_labels, run_policies, simulate, RunPolicy, ServerDomain,
    RTXEN_REPLENISHMENT,
};

pub const EXPERIMENT: Experiment = Experiment {
    name: "rtxen-quantum",
    title: "how fine can the quantum be?",
    description: "Two domains under the Deferrable Server: domain 1 (budget 1 quantum, period \
        2 quanta) runs one task of period 100 ms whose cost is swept from 1 to 50 ms; domain 2 \
        (budget 2 quanta, period 4 quanta) runs a busy loop. Quantum 1 ms, 100 µs, 10 µs and \
        1 µs, with a cost per do_schedule call and per context switch paid from the budget of \
        the VCPU chosen (Xen-like and host-measured costs); domains boot at staggered offsets \
        (or --in-phase). Shows, per quantum, the utilisation at which domain 1 starts to miss \
        deadlines.",
    run: Some(run),
    host: false,
    draws: None,
};

/// Domain 1's task period.
pub const TASK_PERIOD: Nanos = Nanos::from_ms(100);

/// The two-domain system for quantum `q` and domain-1 cost `cost`, running `duration`.
pub fn quantum_domains(q: Nanos, cost: Nanos, duration: Nanos) -> Vec<ServerDomain> {
    let task = TaskSpec::periodic("t1", TASK_PERIOD, cost);
    // One job released at 0 that needs longer than the run: always has work, and its
    // deadline lies beyond the end, so it is never counted.
    let forever = duration + Nanos::from_secs(1);
    let mut busy = TaskSpec::periodic("busy", forever + forever, forever);
    busy.arrival = Arrival::AperiodicTimes(vec![Nanos::ZERO]);
    vec![
        ServerDomain {
            name: "d1".to_string(),
            budget: q,
            period: Nanos(2 * q.as_ns()),
            priority: 1,
            guest: GuestScheduler::Rm,
            tasks: vec![task],
            offset: Nanos::ZERO,
        },
        ServerDomain {
            name: "d2".to_string(),
            budget: Nanos(2 * q.as_ns()),
            period: Nanos(4 * q.as_ns()),
            priority: 2,
            guest: GuestScheduler::Rm,
            tasks: vec![busy],
            offset: Nanos::ZERO,
        },
    ]
}

/// The smallest cost (ms) whose run shows a miss in domain 1.
pub fn first_miss(points: &[(u64, f64)]) -> Option<u64> {
    points
        .iter()
        .filter(|(_, dmr)| *dmr > 0.0)
        .map(|(cost, _)| *cost)
        .min()
}

#[derive(Clone, Debug)]
struct Point<'a> {
    costs: usize,
    policy: &'a RunPolicy,
    quantum: Nanos,
    cost_ms: u64,
}

fn run(out: &mut Output) -> Result<(), ExperimentError> {
    let options = out.options;
    let quick = options.quick;
    let quanta: Vec<Nanos> = if quick {
        vec![Nanos::from_ms(1), Nanos::from_us(100), Nanos::from_us(10)]
    } else {
        vec![
            Nanos::from_ms(1),
            Nanos::from_us(100),
            Nanos::from_us(10),
            Nanos::from_us(1),
        ]
    };
    let costs_ms: Vec<u64> = if quick {
        (5..=50).step_by(5).collect()
    } else {
        (1..=50).collect()
    };
    let jobs: u64 = if quick { 20 } else { 600 };
    let duration = options
        .duration
        .unwrap_or(Nanos(TASK_PERIOD.as_ns() * jobs));
    let overhead_sets: Vec<(String, Overheads)> = match options.overheads {
        Some(o) => vec![(describe_overheads(&o), o)],
        None => OVERHEAD_PRESETS
            .iter()
            .filter(|(name, _)| *name != "none")
            .map(|(name, o)| (name.to_string(), *o))
            .collect(),
    };
    let policies = run_policies(&options.policies_or(&[PolicyKind::Deferrable]))?;
    let seed = options.seed;
    let phasing = Phasing::of(options);
    // Boot offsets per quantum (the key), the same for every cost and policy.
    let booted = |quantum: Nanos, cost: Nanos| {
        let mut domains = quantum_domains(quantum, cost, duration);
        phasing.boot(&mut domains, quantum.as_ns());
        domains
    };
    out.param(
        "quanta",
        quanta
            .iter()
            .map(|q| q.to_string())
            .collect::<Vec<_>>()
            .join(", "),
    );
    out.param(
        "domain 1",
        "budget 1 quantum, period 2 quanta, priority 1; one task, period 100 ms",
    );
    out.param(
        "domain 2",
        "budget 2 quanta, period 4 quanta, priority 2; one busy task",
    );
    out.param(
        "domain-1 task cost",
        format!(
            "{} ms … {} ms ({} points)",
            costs_ms[0],
            costs_ms[costs_ms.len() - 1],
            costs_ms.len()
        ),
    );
    out.param("simulated time per point", duration);
    out.param("policies", run_labels(&policies));
    for (name, o) in &overhead_sets {
        out.param(&format!("overhead costs '{name}'"), describe_overheads(o));
    }
    out.param(
        "who pays for overhead",
        "the VCPU each do_schedule chose, from its budget (incoming, as in Xen); nobody when \
         IDLE is chosen",
    );
    let systems: Vec<(String, Vec<ServerDomain>)> = quanta
        .iter()
        .map(|&q| {
            (
                format!("quantum-{q}"),
                booted(q, Nanos::from_ms(costs_ms[0])),
            )
        })
        .collect();
    record_offsets(out, phasing, &systems)?;

    let mut points = Vec::new();
    for costs in 0..overhead_sets.len() {
        for policy in &policies {
            for &quantum in &quanta {
                for &cost_ms in &costs_ms {
                    points.push(Point {
                        costs,
                        policy,
                        quantum,
                        cost_ms,
                    });
                }
            }
        }
    }
    let label = |p: &Point| {
        format!(
            "rtxen-quantum-{}-{}-q{}-c{}ms",
            overhead_sets[p.costs].0, p.policy, p.quantum, p.cost_ms
        )
    };
    let outcome = out.sweep("rtxen-quantum", &points, label, |p| {
        let domains = booted(p.quantum, Nanos::from_ms(p.cost_ms));
        let system = build_system_with(
            &domains,
            &p.policy.config,
            rtxen_machine(p.quantum, overhead_sets[p.costs].1),
        )?;
        simulate(&system, &label(p), seed, duration)
    })?;

    let mut rows = Vec::new();
    for (p, r) in points.iter().zip(&outcome.results) {
        let Some(r) = r else { continue };
        let d1 = &r.domains[0];
        let pcpu = &r.pcpus[0];
        rows.push(vec![
            overhead_sets[p.costs].0.clone(),
            p.policy.to_string(),
            p.quantum.as_ns().to_string(),
            p.cost_ms.to_string(),
            decimal(p.cost_ms as f64 / 100.0, 2),
            d1.jobs.to_string(),
            d1.missed.to_string(),
            decimal(d1.deadline_miss_ratio, 6),
            decimal(d1.responsiveness.max, 6),
            pcpu.do_schedule_calls.to_string(),
            pcpu.context_switches.to_string(),
            decimal(pcpu.overhead_ns as f64 / r.duration_ns as f64, 6),
        ]);
    }
    out.csv(
        "quantum.csv",
        "domain 1's deadline miss ratio per (overhead costs, policy, quantum, cost)",
        &[
            "overheads",
            "policy",
            "quantum_ns",
            "cost_ms",
            "utilisation",
            "d1_jobs",
            "d1_missed",
            "d1_deadline_miss_ratio",
            "d1_responsiveness_max",
            "do_schedule_calls",
            "context_switches",
            "overhead_share",
        ],
        &rows,
    )?;

    let mut table = Vec::new();
    for (c, (costs_name, _)) in overhead_sets.iter().enumerate() {
        let mut series = Vec::new();
        for policy in &policies {
            for &quantum in &quanta {
                let curve: Vec<(u64, f64, f64)> = points
                    .iter()
                    .zip(&outcome.results)
                    .filter(|(p, _)| {
                        p.costs == c && p.policy.label == policy.label && p.quantum == quantum
                    })
                    .filter_map(|(p, r)| {
                        r.as_ref().map(|r| {
                            let share = r.pcpus[0].overhead_ns as f64 / r.duration_ns as f64;
                            (p.cost_ms, r.domains[0].deadline_miss_ratio, share)
                        })
                    })
                    .collect();
                let dmr: Vec<(u64, f64)> = curve.iter().map(|&(c, d, _)| (c, d)).collect();
                let threshold = first_miss(&dmr);
                let shown = match threshold {
                    Some(c) if c == costs_ms[0] => format!("≤ {c}%"),
                    Some(c) => format!("{c}%"),
                    None if curve.is_empty() => "—".to_string(),
                    None => format!("none up to {}%", curve.last().map_or(0, |p| p.0)),
                };
                let mean_share = if curve.is_empty() {
                    0.0
                } else {
                    curve.iter().map(|p| p.2).sum::<f64>() / curve.len() as f64
                };
                table.push(vec![
                    costs_name.clone(),
                    policy.to_string(),
                    quantum.to_string(),
                    shown.clone(),
                    format!("{}%", percent(mean_share, 2)),
                ]);
                out.finding(format!(
                    "{costs_name} costs, {policy}, quantum {quantum}: domain 1 starts to miss \
                     at utilisation {shown}"
                ));
                let name = if policies.len() > 1 {
                    format!("{policy}, quantum {quantum}")
                } else {
                    format!("quantum {quantum}")
                };
                series.push(Series {
                    name,
                    points: curve
                        .iter()
                        .map(|&(c, d, _)| (c as f64, d * 100.0))
                        .collect(),
                });
            }
        }
        let mut chart = LineChart::new(
            &format!("rtxen-quantum: domain 1 deadline misses ({costs_name} overhead costs)"),
            "domain 1 task utilisation (%)",
            "domain 1 deadline miss ratio (%)",
            series,
        );
        chart.legend = LegendAt::UpperLeft;
        chart.x_range = Some((0.0, 51.0));
        let stem = format!(
            "quantum_{}",
            costs_name.split_whitespace().next().unwrap_or("costs")
        );
        out.figure(
            &stem,
            &Chart::Line(chart),
            &format!(
                "Deadline miss ratio of domain 1 against its task's utilisation, one curve \
                 per quantum; overhead {} paid from the chosen VCPU's budget; {duration} \
                 simulated per point, {}.",
                describe_overheads(&overhead_sets[c].1),
                phasing.short()
            ),
        )?;
    }
    out.table(
        "quantum",
        "Utilisation at which domain 1 starts to miss deadlines",
        &[
            "overhead costs",
            "policy",
            "quantum",
            "first miss at utilisation",
            "mean CPU share lost to overhead",
        ],
        table,
    )?;
    out.against_published(
        &[
            "The 2011 quantum experiment's procedure: two domains under the Deferrable Server, \
             domain 1 (1 quantum every 2) with a 100 ms task of growing cost, domain 2 (2 \
             quanta every 4) busy, quanta 1 ms to 1 µs, 600 jobs per point; the first-miss \
             utilisation per quantum."
                .to_string(),
            "The scheduler's cost comes out of the budget of the VCPU each decision chose, as \
             Xen measures a VCPU's run time from the instant do_schedule began choosing it."
                .to_string(),
        ],
        &[
            "The paper measured a real hypervisor, whose cost per scheduling event is not a \
             constant (caches, TLB, timer interrupts, the guest kernel's own work); here it is \
             a fixed cost per do_schedule and per context switch, under two sets of \
             parameters: 'xen' (150 ns + 1.5 µs: an order of magnitude for a hypervisor \
             scheduler, not measured here) and 'host' (10 µs + 15 µs: rtvmm's host executor as \
             measured on this kind of machine)."
                .to_string(),
            RTXEN_REPLENISHMENT.to_string(),
            format!(
                "Domains boot at {} (the paper's domains were started one after another).",
                phasing.short()
            ),
            "The guest is an ideal rm scheduler: no guest kernel, no timer of its own.".to_string(),
        ],
    );

    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_miss_is_the_smallest_missing_cost() {
        assert_eq!(
            first_miss(&[(1, 0.0), (2, 0.0), (3, 0.5), (4, 0.0)]),
            Some(3)
        );
        assert_eq!(first_miss(&[(1, 0.0)]), None);
    }

    #[test]
    fn the_system_follows_the_quantum() {
        let q = Nanos::from_us(10);
        let d = quantum_domains(q, Nanos::from_ms(5), Nanos::from_secs(1));
        assert_eq!((d[0].budget, d[0].period), (q, Nanos::from_us(20)));
        assert_eq!(
            (d[1].budget, d[1].period),
            (Nanos::from_us(20), Nanos::from_us(40))
        );
        assert_eq!(d[0].tasks[0].wcet, Nanos::from_ms(5));
    }
}
