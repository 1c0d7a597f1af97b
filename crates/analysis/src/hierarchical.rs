//! Hierarchical fixed-priority response-time analysis: tasks inside Periodic, Polling,
//! Sporadic and Deferrable servers that are themselves scheduled by fixed priority on one
//! processor.
//!
//! # Source and what is implemented
//! R. I. Davis and A. Burns, "Hierarchical Fixed Priority Pre-emptive Scheduling", RTSS 2005
//! (and the University of York technical report of the same year that extends it), building
//! on Saewong, Rajkumar,
//! Lehoczky & Klein (ECRTS 2002), Bernat & Burns (RTSS 1999) and Strosnider, Lehoczky & Sha
//! (IEEE TC 1995). **The paper's text was not available while this was written**, so the
//! equation numbers of the paper are not cited; what follows is the analysis in the paper's
//! structure as we derived it, with a soundness argument of our own, checked against a
//! discrete-time simulator in the tests (Periodic, Polling and Deferrable servers).
//!
//! For task τ_i (WCET `C_i`, deadline `D_i`) in server S (budget `C_S`, period `T_S`):
//!
//! 1. **Load** (level-i demand inside the server over a window w):
//!    `L_i(w) = C_i + Σ_{j ∈ hp(i) in S} ⌈w / T_j⌉ C_j`.
//! 2. **Server response to x units** at the root, from the start of a server period, with
//!    higher-priority servers X released at the same time:
//!    `r_S(x) = x + Σ_{X ∈ hp(S)} ⌈(r_S(x) + J_X) / T_X⌉ C_X`, where `J_X = T_X − C_X` for a
//!    **Deferrable** X (its budget can run at the end of one period and the start of the
//!    next, back to back: Strosnider et al. 1995) and `J_X = 0` for Periodic, Polling and
//!    Sporadic X (they interfere no more than a periodic task `(T_X, C_X)`; Sprunt, Sha &
//!    Lehoczky 1989 for the sporadic server). S is **schedulable at the root** iff
//!    `r_S(C_S) ≤ T_S`; otherwise its tasks get [`ResponseBound::ServerUnschedulable`].
//! 3. **Response time**: with `k = ⌈L/C_S⌉` server periods needed and `x = L − (k−1)C_S`
//!    units in the last one,
//!    `R_i = G_S + (k − 1)·T_S + r_S(x)`, `L = L_i(R_i)`, solved by fixed-point iteration
//!    from `R_i = C_i` and stopped at `D_i`.
//!    The **capacity gap** `G_S` is the longest wait from the task's release to the start of
//!    the next server period in which the server will serve it:
//!    * Periodic, Sporadic and Deferrable servers: `G_S = T_S − C_S` (the task arrives just
//!      after the server used up its budget, which took at least `C_S` from the period's
//!      start);
//!    * Polling server: `G_S = T_S` (the task can arrive just after the poll found nothing
//!      to do, and the budget is then discarded for the rest of the period).
//!
//! The back-to-back term of Deferrable servers thus appears only as interference on
//! *lower*-priority servers (through `J_X`), which is how Davis & Burns conclude that the
//! Periodic Server dominates the Deferrable Server for task schedulability.
//!
//! # Why it is sound
//! Let the task be released at `a` in server period `[r₀, r₀ + T_S)` with `c` units of
//! budget left. Write `f = r_S`; `f` is non-decreasing and `f(y + d) ≥ f(y) + d`. In every
//! full later period the server delivers `C_S` by `f(C_S) ≤ T_S`, and `x` units of the last
//! one by `f(x)`. If the budget is exhausted at `a`, the server ran `C_S` units in
//! `[r₀, a]`, so `r₀ + T_S − a ≤ T_S − C_S`. If `c > 0` units are left (or delivered only in
//! part, `c'`, before the period ends — Deferrable), the server had either consumed
//! `C_S − c` before `a` or could not run `c' + 1` units in `[a, r₀ + T_S)`, which gives
//! `r₀ + T_S − a ≤ T_S − C_S + c'`; in both cases the units delivered in the first period
//! make up for the shorter gap because `f(x) ≥ f(x − c') + c'` and
//! `f(x + C_S − c') ≤ f(C_S) − (c' − x) ≤ T_S − c' + x`. So from any release instant the
//! server delivers L units within `G_S + (k−1)T_S + f(x)`, a service-time bound valid for
//! every window start, and the usual busy-window argument for fixed priorities inside a
//! supply with such a bound gives `R_i`. For a Polling server the only new case is a poll
//! that found no work just before `a`, whence `G_S = T_S`.
//!
//! # Gaps (stated honestly)
//! * Equation numbers of Davis & Burns are not cited (text unavailable here); the
//!   recurrences are derived as above. Where our derivation and the paper might differ
//!   (e.g. the paper's exact treatment of a Polling server's gap, which we bound by a full
//!   period), ours is on the safe side.
//! * Davis & Burns's refinement for tasks *bound to the server's release* (harmonic task
//!   periods, zero offsets) is not implemented: such tasks get the general (unbound) bound.
//! * Sporadic servers are analysed like Periodic ones (as the paper treats them); the
//!   limit on pending replenishments of a real Sporadic Server is not modelled (see
//!   `crates/scenario/tests/soundness.rs`, which checks all four server kinds against the
//!   simulator).
//! * Priorities: smaller number = higher. Equal priorities (servers among servers, tasks
//!   within a server) are treated as interfering both ways (conservative).

use serde::Serialize;
use thiserror::Error;

use crate::error::WorkloadError;
use crate::rta::{self, FpTask, ResponseBound};
use crate::workload::MAX_TIME;

/// Server policies (as described by Davis & Burns 2005).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum ServerKind {
    /// Released every period with budget `C_S`; runs (idling if it has no work) until the
    /// budget is used. Equivalent to a periodic task at the root.
    Periodic,
    /// Released every period; if no task is ready when it runs, the budget is discarded
    /// until the next period, and likewise when its queue empties.
    Polling,
    /// Budget is replenished `T_S` after each chunk of consumption began (Sprunt et al.).
    Sporadic,
    /// Keeps its budget for the whole period and serves tasks whenever they are ready;
    /// replenished to `C_S` every period (Strosnider et al. 1995).
    Deferrable,
}

/// A server with its tasks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Server {
    /// For reports.
    pub name: String,
    /// `C_S`.
    pub budget: u64,
    /// `T_S`.
    pub period: u64,
    /// Root priority; smaller = higher.
    pub priority: u32,
    /// Policy.
    pub kind: ServerKind,
    /// The server's tasks with their local priorities (smaller = higher).
    pub tasks: Vec<FpTask>,
}

/// Result for one server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServerAnalysis {
    /// The server's name.
    pub name: String,
    /// `r_S(C_S)`: the latest the full budget is delivered after the period starts, if
    /// within the period.
    pub budget_response_time: Option<u64>,
    /// `r_S(C_S) ≤ T_S`.
    pub schedulable_at_root: bool,
    /// One bound per task, in the order given.
    pub tasks: Vec<ResponseBound>,
}

/// Invalid input for the hierarchical analysis.
#[derive(Clone, Debug, PartialEq, Eq, Error, Serialize)]
pub enum HierarchyError {
    /// No servers.
    #[error("no servers")]
    Empty,
    /// `C_S = 0`, `C_S > T_S`, or `T_S` above the maximum.
    #[error("server {server}: budget {budget} must be in 1..={period} (its period)")]
    BadServer {
        /// Index of the server.
        server: usize,
        /// Budget.
        budget: u64,
        /// Period.
        period: u64,
    },
    /// A task is invalid.
    #[error("server {server}: {error}")]
    BadTask {
        /// Index of the server.
        server: usize,
        /// What is wrong.
        error: WorkloadError,
    },
}

/// Worst-case response-time bounds of every task in every server (Davis & Burns 2005, as
/// documented in the module docs).
///
/// ```
/// use rtvmm_analysis::{hierarchical_response_times, FpTask, ResponseBound, Server, ServerKind};
/// let servers = [Server {
///     name: "S".into(), budget: 2, period: 5, priority: 0, kind: ServerKind::Periodic,
///     tasks: vec![FpTask::new(20, 3, 0)],
/// }];
/// // L = 3, k = 2, x = 1: R = (5 − 2) + 5 + 1 = 9.
/// let result = hierarchical_response_times(&servers).unwrap();
/// assert_eq!(result[0].tasks[0], ResponseBound::Bounded { response_time: 9, slack: 11 });
/// ```
pub fn hierarchical_response_times(
    servers: &[Server],
) -> Result<Vec<ServerAnalysis>, HierarchyError> {
    validate(servers)?;
    Ok((0..servers.len())
        .map(|index| analyse_server(servers, index))
        .collect())
}

fn validate(servers: &[Server]) -> Result<(), HierarchyError> {
    if servers.is_empty() {
        return Err(HierarchyError::Empty);
    }
    for (index, server) in servers.iter().enumerate() {
        if server.budget == 0 || server.budget > server.period || server.period > MAX_TIME {
            return Err(HierarchyError::BadServer {
                server: index,
                budget: server.budget,
                period: server.period,
            });
        }
        if !server.tasks.is_empty() {
            rta::validate(&server.tasks).map_err(|error| HierarchyError::BadTask {
                server: index,
                error,
            })?;
        }
    }
    Ok(())
}

/// `J_X` of a server as seen by lower-priority servers.
fn release_jitter(server: &Server) -> u64 {
    match server.kind {
        ServerKind::Deferrable => server.period - server.budget,
        ServerKind::Periodic | ServerKind::Polling | ServerKind::Sporadic => 0,
    }
}

/// The capacity gap `G_S`.
fn capacity_gap(server: &Server) -> u64 {
    match server.kind {
        ServerKind::Polling => server.period,
        ServerKind::Periodic | ServerKind::Sporadic | ServerKind::Deferrable => {
            server.period - server.budget
        }
    }
}

/// `r_S(x)` for server `index`, or `None` if it exceeds `limit`.
fn server_response(servers: &[Server], index: usize, units: u64, limit: u64) -> Option<u64> {
    let me = &servers[index];
    let mut response = units;
    loop {
        if response > limit {
            return None;
        }
        let next = units
            + servers
                .iter()
                .enumerate()
                .filter(|&(j, other)| j != index && other.priority <= me.priority)
                .map(|(_, other)| {
                    (response + release_jitter(other)).div_ceil(other.period) * other.budget
                })
                .sum::<u64>();
        if next == response {
            return Some(response);
        }
        response = next;
    }
}

fn analyse_server(servers: &[Server], index: usize) -> ServerAnalysis {
    let server = &servers[index];
    let budget_response_time = server_response(servers, index, server.budget, server.period);
    let schedulable_at_root = budget_response_time.is_some();
    let tasks = (0..server.tasks.len())
        .map(|i| {
            if schedulable_at_root {
                task_bound(servers, index, i)
            } else {
                ResponseBound::ServerUnschedulable
            }
        })
        .collect();
    ServerAnalysis {
        name: server.name.clone(),
        budget_response_time,
        schedulable_at_root,
        tasks,
    }
}

/// `R_i = G_S + (k−1)T_S + r_S(x)` with `L = L_i(R_i)`, iterated from `C_i`.
fn task_bound(servers: &[Server], server_index: usize, task_index: usize) -> ResponseBound {
    let server = &servers[server_index];
    let tasks = &server.tasks;
    let task = tasks[task_index];
    let gap = capacity_gap(server);
    let mut response = task.wcet;
    loop {
        let load = task.wcet
            + rta::interferers(tasks, task_index)
                .map(|other| response.div_ceil(other.period) * other.wcet)
                .sum::<u64>();
        let periods = load.div_ceil(server.budget);
        let last = load - (periods - 1) * server.budget;
        // r_S(last) ≤ r_S(C_S) ≤ T_S, so it always exists here.
        let in_last = server_response(servers, server_index, last, server.period)
            .expect("r_S(x) ≤ r_S(C_S) ≤ T_S");
        let next = gap + (periods - 1) * server.period + in_last;
        if next > task.deadline {
            return ResponseBound::ExceedsDeadline { at_least: next };
        }
        if next == response {
            return ResponseBound::Bounded {
                response_time: next,
                slack: task.deadline - next,
            };
        }
        // The map is monotone and we start below its least fixed point, so `next ≥ response`.
        response = next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(
        kind: ServerKind,
        budget: u64,
        period: u64,
        priority: u32,
        tasks: Vec<FpTask>,
    ) -> Server {
        Server {
            name: format!("{kind:?}"),
            budget,
            period,
            priority,
            kind,
            tasks,
        }
    }

    /// Two servers, by hand.
    /// S1 = Periodic (C=2, T=5, prio 0); S2 = Periodic (C=3, T=10, prio 1).
    /// r_S2(x) = x + ⌈r/5⌉·2: x=3 → 3+2=5 → 5+2=5 ✓ r(3)=5 ≤ 10; x=1 → 1+2 = 3 → 3.
    /// Task (T=40, C=4) alone in S2: L = 4, k = 2, x = 1:
    /// R = (10 − 3) + 10 + r_S2(1) = 7 + 10 + 3 = 20.
    /// The same with S1 Deferrable: J = 3, r_S2(x) = x + ⌈(r+3)/5⌉·2:
    /// x=1 → 1+2=3 → 1 + ⌈6/5⌉2 = 5 → 1 + ⌈8/5⌉2 = 5 ✓ r(1) = 5; x=3: 3+2=5 → 3+⌈8/5⌉2 = 7
    /// → 3 + ⌈10/5⌉2 = 7 ✓ r(3) = 7 ≤ 10. R = 7 + 10 + 5 = 22.
    #[test]
    fn two_servers_by_hand() {
        let task = vec![FpTask::new(40, 4, 0)];
        let periodic = [
            server(ServerKind::Periodic, 2, 5, 0, vec![]),
            server(ServerKind::Periodic, 3, 10, 1, task.clone()),
        ];
        let result = hierarchical_response_times(&periodic).unwrap();
        assert_eq!(result[1].budget_response_time, Some(5));
        assert_eq!(result[1].tasks[0].response_time(), Some(20));
        let deferrable = [
            server(ServerKind::Deferrable, 2, 5, 0, vec![]),
            server(ServerKind::Periodic, 3, 10, 1, task),
        ];
        let result = hierarchical_response_times(&deferrable).unwrap();
        assert_eq!(result[1].budget_response_time, Some(7));
        assert_eq!(result[1].tasks[0].response_time(), Some(22));
    }

    /// Polling server gap is a full period: C=2, T=5, task (20, 3):
    /// L=3, k=2, x=1: R = 5 + 5 + 1 = 11 (periodic gives 3 + 5 + 1 = 9).
    #[test]
    fn polling_gap_is_a_full_period() {
        let polling = [server(
            ServerKind::Polling,
            2,
            5,
            0,
            vec![FpTask::new(20, 3, 0)],
        )];
        let result = hierarchical_response_times(&polling).unwrap();
        assert_eq!(result[0].tasks[0].response_time(), Some(11));
    }

    /// Local interference: server (C=2, T=4) with tasks hi = (8, 1), lo = (16, 2).
    /// lo: R=2 → L = 2 + ⌈2/8⌉1 = 3, k = 2, x = 1 → R = 2 + 4 + 1 = 7
    ///     → L = 2 + ⌈7/8⌉ = 3 → 7 ✓.
    #[test]
    fn local_higher_priority_tasks_add_load() {
        let s = [server(
            ServerKind::Periodic,
            2,
            4,
            0,
            vec![FpTask::new(8, 1, 0), FpTask::new(16, 2, 1)],
        )];
        let result = hierarchical_response_times(&s).unwrap();
        // hi: L = 1, k = 1, x = 1: R = 2 + 1 = 3.
        assert_eq!(result[0].tasks[0].response_time(), Some(3));
        assert_eq!(result[0].tasks[1].response_time(), Some(7));
    }

    #[test]
    fn overloaded_root_makes_tasks_unbounded() {
        let servers = [
            server(ServerKind::Periodic, 4, 5, 0, vec![]),
            server(ServerKind::Periodic, 2, 5, 1, vec![FpTask::new(50, 1, 0)]),
        ];
        let result = hierarchical_response_times(&servers).unwrap();
        assert!(!result[1].schedulable_at_root);
        assert_eq!(result[1].tasks[0], ResponseBound::ServerUnschedulable);
    }

    #[test]
    fn invalid_input_is_typed() {
        let bad = [server(ServerKind::Periodic, 6, 5, 0, vec![])];
        assert_eq!(
            hierarchical_response_times(&bad),
            Err(HierarchyError::BadServer {
                server: 0,
                budget: 6,
                period: 5
            })
        );
    }
}
