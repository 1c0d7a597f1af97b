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
            bound: Vec::new(),
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

/// (kind, budget, period, phase, tasks: (bound, period or multiple of the server period,
/// wcet, phase))
type RawBoundServer = (SimKind, u64, u64, u64, Vec<(bool, u64, u64, u64)>);

fn raw_bound_server() -> impl Strategy<Value = RawBoundServer> {
    (
        kind(),
        1u64..=4,
        2u64..=10,
        0u64..10,
        prop::collection::vec((any::<bool>(), 1u64..=40, 1u64..=4, 0u64..40), 1..=3),
    )
}

/// Like [`build`], but a task marked bound has a period that is a multiple (1–4) of its
/// server's and is released exactly at server releases, and is declared so to the analysis.
fn build_bound(raw: &[RawBoundServer]) -> (Vec<Server>, Vec<SimServer>) {
    let mut servers = Vec::new();
    let mut sims = Vec::new();
    for (index, (kind, budget, period, phase, tasks)) in raw.iter().enumerate() {
        let (budget, phase) = ((*budget).min(*period), phase % period);
        // The first server release at or after the warm-up.
        let grid_start = phase + WARM_UP.div_ceil(*period) * period;
        let mut fp_tasks = Vec::new();
        let mut sim_tasks = Vec::new();
        let mut bound = Vec::new();
        for (k, &(is_bound, p, e, task_phase)) in tasks.iter().enumerate() {
            let (task_period, task_phase) = if is_bound {
                let multiple = 1 + p % 4;
                (
                    multiple * period,
                    grid_start + (task_phase % multiple) * period,
                )
            } else {
                (p.max(4), WARM_UP + task_phase % p.max(4))
            };
            let task = FpTask::new(task_period, e.min(task_period), k as u32);
            fp_tasks.push(task);
            bound.push(is_bound);
            sim_tasks.push(SimTask {
                period: task.period,
                wcet: task.wcet,
                priority: task.priority,
                phase: task_phase,
            });
        }
        servers.push(Server {
            name: format!("s{index}"),
            budget,
            period: *period,
            priority: index as u32,
            kind: server_kind(*kind),
            tasks: fp_tasks,
            bound,
        });
        sims.push(SimServer {
            kind: *kind,
            budget,
            period: *period,
            priority: index as u32,
            phase,
            tasks: sim_tasks,
        });
    }
    (servers, sims)
}

/// A task bound to its server's release: the bound-task form is exact for a tiny case.
/// Server (C 2, T 4) alone, Periodic (it idles its budget away without work); bound task
/// b = (8, 3) released at 4, 12, 20, … (server releases); unbound higher-priority task
/// h = (16, 1) released at 3, 19, 35, ….
/// Analysis: h (general, gap 2): L = 1 → R_h = 2 + 1 = 3. b (H4, carry-in R_h = 3):
/// R = 3 → L = 3 + ⌈6/16⌉ = 4 → k = 2, x = 2 → R = 4 + 2 = 6 → L = 3 + ⌈9/16⌉ = 4 → 6 ✓.
/// The general form gives 2 + 4 + 2 = 8.
/// Schedule (every 16): h released at 3 finds the budget spent (b's job from 12 used
/// [0, 1), the server idled [1, 2)); at 4 the budget returns, h runs [4, 5) (response 2),
/// b's job released at 4 runs [5, 6) and [8, 10): response 6 — the bound, met exactly.
/// b's job at 12 runs [12, 14) and [16, 17): response 5.
#[test]
fn bound_task_form_is_tighter_and_holds_in_simulation() {
    let servers = [Server {
        name: "s".into(),
        budget: 2,
        period: 4,
        priority: 0,
        kind: ServerKind::Periodic,
        tasks: vec![FpTask::new(16, 1, 0), FpTask::new(8, 3, 1)],
        bound: vec![false, true],
    }];
    let result = hierarchical_response_times(&servers).unwrap();
    assert_eq!(result[0].tasks[0].response_time(), Some(3));
    assert_eq!(result[0].tasks[1].response_time(), Some(6));
    let mut unbound = servers.clone();
    unbound[0].bound = Vec::new();
    let general = hierarchical_response_times(&unbound).unwrap();
    assert_eq!(general[0].tasks[1].response_time(), Some(8));
    let sims = [SimServer {
        kind: SimKind::Periodic,
        budget: 2,
        period: 4,
        priority: 0,
        phase: 0,
        tasks: vec![
            SimTask {
                period: 16,
                wcet: 1,
                priority: 0,
                phase: 3,
            },
            SimTask {
                period: 8,
                wcet: 3,
                priority: 1,
                phase: 4,
            },
        ],
    }];
    let observed = simulate(&sims, 400);
    assert_eq!(observed[0], vec![2, 6]);
}

/// Every bounded task's worst simulated response is within its bound.
fn check_bounds(servers: &[Server], sims: &[SimServer]) -> Result<(), TestCaseError> {
    let analysis = hierarchical_response_times(servers).unwrap();
    let observed = simulate(sims, 1500);
    for (s, result) in analysis.iter().enumerate() {
        for (k, bound) in result.tasks.iter().enumerate() {
            if let ResponseBound::Bounded { response_time, .. } = bound {
                prop_assert!(
                    observed[s][k] <= *response_time,
                    "server {} task {} (bound to release: {:?}): observed {} > bound {}\n{:?}",
                    s,
                    k,
                    servers[s].bound.get(k),
                    observed[s][k],
                    response_time,
                    sims
                );
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(160))]

    #[test]
    fn bound_tasks_never_exceed_their_bound(
        raw in prop::collection::vec(raw_bound_server(), 1..=3),
    ) {
        let (servers, sims) = build_bound(&raw);
        check_bounds(&servers, &sims)?;
    }

    #[test]
    fn simulated_response_times_never_exceed_the_bound(
        raw in prop::collection::vec(raw_server(), 1..=3),
    ) {
        let (servers, sims) = build(&raw);
        check_bounds(&servers, &sims)?;
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
            Server { bound: Vec::new(), name: "hp".into(), budget: hp_budget, period: hp_period, priority: 0, kind: server_kind(kind), tasks: vec![] },
            Server { bound: Vec::new(), name: "dom".into(), budget, period, priority: 1, kind: ServerKind::Periodic, tasks: vec![] },
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

/// The published recurrence as restated by H. Mei (thesis, York 2017, §5.2.1): the load
/// (5.5) `L(w) = C_i + Σ_{j∈hp(i)} ⌈(w + J_j)/T_j⌉ C_j` and the window (5.4)
/// `w = L + (⌈L/C_S⌉ − 1)(T_S − C_S) + Σ_{X∈hp(S)} ⌈(max(0, w − (⌈L/C_S⌉ − 1)T_S) + J_X)/T_X⌉ C_X`,
/// iterated from `C_i + (⌈C_i/C_S⌉ − 1)(T_S − C_S)` until it repeats (or passes
/// `D_i − J_i`); `R_i = w + J_i`. Jitters: `J = T_S − C_S` for a task not bound to the
/// server's release, 0 for a bound one; `J_X = T_X − C_X` for a Deferrable Server, else 0.
/// Written from the published form alone (no code shared with the crate).
fn published_bound(servers: &[Server], s: usize, i: usize) -> Option<u64> {
    let server = &servers[s];
    let (capacity, period) = (server.budget, server.period);
    let task_jitter = |k: usize| {
        if server.bound.get(k).copied().unwrap_or(false) {
            0
        } else {
            period - capacity
        }
    };
    let server_jitter = |x: &Server| {
        if x.kind == ServerKind::Deferrable {
            x.period - x.budget
        } else {
            0
        }
    };
    let task = server.tasks[i];
    let load = |w: u64| -> u64 {
        task.wcet
            + server
                .tasks
                .iter()
                .enumerate()
                .filter(|&(k, t)| k != i && t.priority <= task.priority)
                .map(|(k, t)| (w + task_jitter(k)).div_ceil(t.period) * t.wcet)
                .sum::<u64>()
    };
    let mut w = task.wcet + (task.wcet.div_ceil(capacity) - 1) * (period - capacity);
    loop {
        if w + task_jitter(i) > task.deadline {
            return None;
        }
        let l = load(w);
        let gaps = l.div_ceil(capacity) - 1;
        let next = l
            + gaps * (period - capacity)
            + servers
                .iter()
                .filter(|x| x.priority < server.priority)
                .map(|x| {
                    (w.saturating_sub(gaps * period) + server_jitter(x)).div_ceil(x.period)
                        * x.budget
                })
                .sum::<u64>();
        if next == w {
            return Some(w + task_jitter(i));
        }
        w = next;
    }
}

/// Distinct priorities at the root and in each server (the published `hp` is strictly
/// higher; rtvmm counts equals both ways), Periodic, Deferrable or Sporadic servers (the
/// published form does not treat Polling ones).
fn published_applies(servers: &[Server]) -> bool {
    let distinct = |mut p: Vec<u32>| {
        let n = p.len();
        p.sort_unstable();
        p.dedup();
        p.len() == n
    };
    distinct(servers.iter().map(|s| s.priority).collect())
        && servers.iter().all(|s| {
            s.kind != ServerKind::Polling && distinct(s.tasks.iter().map(|t| t.priority).collect())
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    /// Issue 9 §6: without bound tasks, the bounds here are the published recurrence's,
    /// task by task (the same value, or both past the deadline).
    #[test]
    fn without_bound_tasks_the_bound_is_the_published_recurrence(
        raw in prop::collection::vec(raw_server(), 1..=3),
    ) {
        let (servers, _) = build(&raw);
        if !published_applies(&servers) {
            return Ok(());
        }
        for (s, result) in hierarchical_response_times(&servers).unwrap().iter().enumerate() {
            if !result.schedulable_at_root {
                continue;
            }
            for (k, bound) in result.tasks.iter().enumerate() {
                prop_assert_eq!(
                    bound.response_time(),
                    published_bound(&servers, s, k),
                    "server {} task {}: {:?}", s, k, servers
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("RTVMM_PUBLISHED_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
    ))]

    /// The one place the code is looser than published: a bound task's higher-priority
    /// unbound tasks carry in their own bound here, `T_S − C_S` in (5.5). The published
    /// bound is checked against simulation (it held in 300,000 random systems,
    /// `RTVMM_PUBLISHED_CASES=300000`); without its proof it is not used. Run with
    /// `--ignored`.
    #[test]
    #[ignore]
    fn published_carry_in_of_bound_tasks_holds_in_simulation(
        raw in prop::collection::vec(raw_bound_server(), 1..=3),
    ) {
        let (servers, sims) = build_bound(&raw);
        if !published_applies(&servers) {
            return Ok(());
        }
        let analysis = hierarchical_response_times(&servers).unwrap();
        let observed = simulate(&sims, 1500);
        for (s, result) in analysis.iter().enumerate() {
            if !result.schedulable_at_root {
                continue;
            }
            for (k, &seen) in observed[s].iter().enumerate() {
                if let Some(published) = published_bound(&servers, s, k) {
                    prop_assert!(seen <= published, "server {} task {}: observed {} > published {}\n{:?}", s, k, seen, published, sims);
                }
            }
        }
    }
}
