//! Step 3: the root — the servers checked under the system's [`RootModel`], and, for the
//! fixed-priority roots, the tasks' response-time bounds.

use super::domain::{Prepared, Step1};
use super::{AtRoot, GuestTask, RootModel, System};
use crate::bcl::bcl_served;
use crate::compose::rate_monotonic_root;
use crate::hierarchical::{
    hierarchical_response_times_with, HierarchyError, RootCheck, Server, ServerKind,
};
use crate::prm::Interface;
use crate::rta::ResponseBound;

/// A server's state after step 3.
#[derive(Default)]
pub(super) struct ServerState {
    pub(super) at_root: Option<AtRoot>,
    /// Per task in priority order: the hierarchical bound and whether it is bound to the
    /// server's releases.
    pub(super) bounds: Option<Vec<(ResponseBound, bool)>>,
}

pub(super) struct Root {
    pub(super) servers: Vec<ServerState>,
    pub(super) error: Option<HierarchyError>,
}

pub(super) fn root(system: &System, steps: &[Step1], priorities: &[Option<u32>]) -> Root {
    let mut servers: Vec<ServerState> = steps
        .iter()
        .zip(priorities)
        .map(|(step, priority)| ServerState {
            at_root: step.interface.map(|_| AtRoot {
                priority: priority.unwrap_or(u32::MAX),
                server: None,
                served: None,
                response_time: None,
            }),
            bounds: None,
        })
        .collect();
    let mut error = None;
    match system.root {
        RootModel::FixedPriority { server, .. } | RootModel::NoRootCheck { server } => {
            let check = match system.root {
                RootModel::NoRootCheck { .. } => RootCheck::Skipped,
                _ => RootCheck::Checked,
            };
            let with_tasks = system.root.has_response_times();
            let members: Vec<usize> = (0..steps.len())
                .filter(|&k| steps[k].interface.is_some())
                .collect();
            let list: Vec<Server> = members
                .iter()
                .map(|&k| {
                    let interface = steps[k].interface.expect("a server");
                    let domain = &system.domains[k];
                    let kind = match (server, domain.replenishment_cap) {
                        (ServerKind::Sporadic, Some(cap)) => ServerKind::sporadic(
                            cap.max_pending,
                            interface.budget.saturating_mul(cap.grains_per_unit),
                        ),
                        (kind, _) => kind,
                    };
                    if let Some(at_root) = &mut servers[k].at_root {
                        at_root.server = Some(kind);
                    }
                    let tasks: Vec<GuestTask> = match &steps[k].prepared {
                        Prepared::Tasks {
                            fixed: Some(fixed), ..
                        } if with_tasks => fixed.clone(),
                        _ => Vec::new(),
                    };
                    let bound = if tasks.is_empty() || !kind.has_release_grid() {
                        Vec::new()
                    } else {
                        tasks
                            .iter()
                            .map(|t| {
                                t.offset.is_some_and(|offset| {
                                    t.task.period % interface.period == 0
                                        && offset % interface.period == 0
                                })
                            })
                            .collect()
                    };
                    Server {
                        name: domain.name.clone(),
                        budget: interface.budget,
                        period: interface.period,
                        priority: priorities[k].unwrap_or(u32::MAX),
                        kind,
                        tasks: tasks.iter().map(|t| t.task).collect(),
                        bound,
                    }
                })
                .collect();
            match hierarchical_response_times_with(&list, check) {
                Ok(results) => {
                    for ((&k, result), server) in members.iter().zip(results).zip(&list) {
                        let state = &mut servers[k];
                        if let Some(at_root) = &mut state.at_root {
                            at_root.served =
                                (check == RootCheck::Checked).then_some(result.schedulable_at_root);
                            at_root.response_time = result.budget_response_time;
                        }
                        if with_tasks && !result.tasks.is_empty() {
                            let bound = |i: usize| server.bound.get(i).copied().unwrap_or(false);
                            state.bounds = Some(
                                result
                                    .tasks
                                    .iter()
                                    .enumerate()
                                    .map(|(i, b)| (*b, bound(i)))
                                    .collect(),
                            );
                        }
                    }
                }
                // Reachable only with a given interface beyond MAX_TIME.
                Err(e) => error = (!list.is_empty()).then_some(e),
            }
        }
        RootModel::Edf => {
            let members: Vec<usize> = (0..steps.len())
                .filter(|&k| steps[k].interface.is_some())
                .collect();
            let list: Vec<Interface> = members
                .iter()
                .map(|&k| steps[k].interface.expect("a server"))
                .collect();
            for (&k, served) in members.iter().zip(bcl_served(&list, 1)) {
                if let Some(at_root) = &mut servers[k].at_root {
                    at_root.served = Some(served);
                }
            }
        }
        RootModel::RateMonotonic => {
            let interfaces: Vec<Option<Interface>> = steps.iter().map(|s| s.interface).collect();
            for (state, task) in servers.iter_mut().zip(rate_monotonic_root(&interfaces)) {
                if let (Some(at_root), Some(task)) = (&mut state.at_root, task) {
                    at_root.served = Some(task.response_time.is_some());
                    at_root.response_time = task.response_time;
                }
            }
        }
    }
    Root { servers, error }
}
