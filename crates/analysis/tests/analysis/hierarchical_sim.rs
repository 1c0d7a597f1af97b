//! Soundness checks against a discrete-time simulator (spec, "Soundness check"):
//! * no response time seen in simulation (random phasings) exceeds the Davis & Burns-style
//!   bound for the same server policy (Periodic, Polling, Deferrable);
//! * a workload that Lemma 1 accepts for `(Π, MinExec(Π))` shows no deadline miss when run
//!   in a Periodic Server with that interface, behind a higher-priority server.

use proptest::prelude::*;
use rtvmm_analysis::*;

use crate::util::{simulate, SimKind, SimServer, SimTask};

/// Longer than any server period generated here.
const WARM_UP: u64 = 10;

fn kind() -> impl Strategy<Value = SimKind> {
    prop::sample::select(vec![
        SimKind::Periodic,
        SimKind::Polling,
        SimKind::Deferrable,
    ])
}

fn server_kind(kind: SimKind) -> ServerKind {
    match kind {
        SimKind::Periodic => ServerKind::Periodic,
        SimKind::Polling => ServerKind::Polling,
        SimKind::Deferrable => ServerKind::Deferrable,
    }
}

/// (kind, budget, period, phase, tasks: (period, wcet, phase))
type RawServer = (SimKind, u64, u64, u64, Vec<(u64, u64, u64)>);

fn raw_server() -> impl Strategy<Value = RawServer> {
    (
        kind(),
        1u64..=4,
        2u64..=10,
        0u64..10,
        prop::collection::vec((4u64..=40, 1u64..=4, 0u64..40), 1..=3),
    )
}

fn build(raw: &[RawServer]) -> (Vec<Server>, Vec<SimServer>) {
    let mut servers = Vec::new();
    let mut sims = Vec::new();
    for (index, (kind, budget, period, phase, tasks)) in raw.iter().enumerate() {
        let budget = (*budget).min(*period);
        let fp_tasks: Vec<FpTask> = tasks
            .iter()
            .enumerate()
            .map(|(k, &(p, e, _))| FpTask::new(p, e.min(p), k as u32))
            .collect();
        servers.push(Server {
            name: format!("s{index}"),
            budget,
            period: *period,
            priority: index as u32,
            kind: server_kind(*kind),
            tasks: fp_tasks.clone(),
        });
        sims.push(SimServer {
            kind: *kind,
            budget,
            period: *period,
            priority: index as u32,
            phase: phase % period,
            tasks: fp_tasks
                .iter()
                .zip(tasks)
                .map(|(task, &(_, _, task_phase))| SimTask {
                    period: task.period,
                    wcet: task.wcet,
                    priority: task.priority,
                    // Tasks start after every server's first release (servers are in steady
                    // state, as the analysis assumes).
                    phase: WARM_UP + task_phase % task.period,
                })
                .collect(),
        });
    }
    (servers, sims)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn simulated_response_times_never_exceed_the_bound(
        raw in prop::collection::vec(raw_server(), 1..=3),
    ) {
        let (servers, sims) = build(&raw);
        let analysis = hierarchical_response_times(&servers).unwrap();
        let observed = simulate(&sims, 1500);
        for (s, result) in analysis.iter().enumerate() {
            for (k, bound) in result.tasks.iter().enumerate() {
                if let ResponseBound::Bounded { response_time, .. } = bound {
                    prop_assert!(
                        observed[s][k] <= *response_time,
                        "server {} task {}: observed {} > bound {}\n{:?}",
                        s, k, observed[s][k], response_time, sims
                    );
                }
            }
        }
    }

    #[test]
    fn lemma_1_interface_has_no_miss_in_a_periodic_server(
        raw in prop::collection::vec((2u64..=20, 1u64..=100), 1..=3),
        period in 2u64..=8,
        disturbance in (kind(), 1u64..=3, 3u64..=9, 0u64..9),
        phases in (0u64..8, 0u64..20),
    ) {
        let tasks: Vec<Task> = raw.iter().map(|&(p, share)| Task::new(p, (p * share / 300).max(1))).collect();
        let w = Workload::new(tasks).unwrap();
        let Ok(budget) = min_exec(period, &w, SbfMode::General, GuestScheduler::Rm) else { return Ok(()) };
        let (kind, hp_budget, hp_period, hp_phase) = disturbance;
        let hp_budget = hp_budget.min(hp_period);
        // The root must deliver Θ every period for the resource model to hold.
        let root = [
            Server { name: "hp".into(), budget: hp_budget, period: hp_period, priority: 0, kind: server_kind(kind), tasks: vec![] },
            Server { name: "dom".into(), budget, period, priority: 1, kind: ServerKind::Periodic, tasks: vec![] },
        ];
        let root_ok = hierarchical_response_times(&root).unwrap()[1].schedulable_at_root;
        prop_assume!(root_ok);
        let sims = vec![
            SimServer { kind, budget: hp_budget, period: hp_period, priority: 0, phase: hp_phase % hp_period, tasks: vec![] },
            SimServer {
                kind: SimKind::Periodic, budget, period, priority: 1, phase: phases.0 % period,
                // RM inside the domain; synchronous release at a random offset.
                tasks: w.tasks().iter().enumerate().map(|(rank, task)| SimTask {
                    period: task.period, wcet: task.wcet, priority: rank as u32, phase: WARM_UP + phases.1,
                }).collect(),
            },
        ];
        let observed = simulate(&sims, 1200);
        for (rank, task) in w.tasks().iter().enumerate() {
            prop_assert!(observed[1][rank] <= task.deadline,
                "task {:?} responded in {} on ({}, {})", task, observed[1][rank], period, budget);
        }
    }
}
