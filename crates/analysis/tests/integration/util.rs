//! Independent reference implementations: deliberately naive (every integer t, no test-point
//! reduction, no shared code with the crate beyond the sbf formulas themselves) so that the
//! crate's optimisations are checked against the definitions.

use std::collections::VecDeque;

use rtvmm_analysis::{sbf, SupplyForm, Task, Workload};

/// A task's rate-monotonic priority key (smaller = more urgent).
pub fn by_period(task: &Task) -> u64 {
    task.period
}

/// A task's deadline-monotonic priority key.
pub fn by_deadline(task: &Task) -> u64 {
    task.deadline
}

/// `rbf_i(t)` straight from the definition: every task whose priority `key` is at most
/// task i's (higher or equal priority: a guest serves ties first-in, first-out), i included.
pub fn naive_rbf(w: &Workload, key: fn(&Task) -> u64, i: usize, t: u64) -> u64 {
    let own = key(&w.tasks()[i]);
    w.tasks()
        .iter()
        .filter(|task| key(task) <= own)
        .map(|task| t.div_ceil(task.period) * task.wcet)
        .sum()
}

/// Lemma 1 over every integer t in (0, d_i].
pub fn naive_lemma1(
    w: &Workload,
    key: fn(&Task) -> u64,
    period: u64,
    budget: u64,
    form: SupplyForm,
) -> bool {
    (0..w.len()).all(|i| {
        (1..=w.tasks()[i].deadline).any(|t| sbf(form, period, budget, t) >= naive_rbf(w, key, i, t))
    })
}

/// `dbf(t)` from the definition.
pub fn naive_dbf(w: &Workload, t: u64) -> u64 {
    w.tasks()
        .iter()
        .map(|task| {
            if t < task.deadline {
                0
            } else {
                ((t - task.deadline) / task.period + 1) * task.wcet
            }
        })
        .sum()
}

/// dbf ≤ sbf for every integer t in (0, horizon].
pub fn naive_edf(w: &Workload, period: u64, budget: u64, form: SupplyForm, horizon: u64) -> bool {
    (1..=horizon).all(|t| naive_dbf(w, t) <= sbf(form, period, budget, t))
}

pub fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

pub fn lcm(a: u64, b: u64) -> u64 {
    a / gcd(a, b) * b
}

/// Smallest Θ in [1, Π] passing `test`, by linear scan.
pub fn naive_min_exec(period: u64, test: impl Fn(u64) -> bool) -> Option<u64> {
    (1..=period).find(|&budget| test(budget))
}

// ---------------------------------------------------------------------------------------
// A discrete-time simulator of fixed-priority servers with fixed-priority tasks inside.
// One unit of time per step; at each step releases happen first, then one server runs one
// unit, giving it to its most urgent pending job.
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimKind {
    /// Budget consumed whenever it is the most urgent server, work or not (it idles the CPU).
    Periodic,
    /// Budget discarded when the server runs and finds no work, and when its queue empties.
    Polling,
    /// Budget kept for the whole period, used only when work is pending.
    Deferrable,
}

#[derive(Clone, Debug)]
pub struct SimTask {
    pub period: u64,
    pub wcet: u64,
    /// Smaller = more urgent (distinct within a server).
    pub priority: u32,
    pub phase: u64,
}

#[derive(Clone, Debug)]
pub struct SimServer {
    pub kind: SimKind,
    pub budget: u64,
    pub period: u64,
    /// Smaller = more urgent (distinct).
    pub priority: u32,
    pub phase: u64,
    pub tasks: Vec<SimTask>,
}

/// Largest observed response time per task (`[server][task]`), over jobs completed before
/// `horizon`.
pub fn simulate(servers: &[SimServer], horizon: u64) -> Vec<Vec<u64>> {
    let mut order: Vec<usize> = (0..servers.len()).collect();
    order.sort_by_key(|&s| servers[s].priority);
    let mut capacity: Vec<u64> = vec![0; servers.len()];
    let mut next_server_release: Vec<u64> = servers.iter().map(|s| s.phase).collect();
    let mut next_task_release: Vec<Vec<u64>> = servers
        .iter()
        .map(|s| s.tasks.iter().map(|t| t.phase).collect())
        .collect();
    // Pending jobs per server: (task index, release, remaining).
    let mut queues: Vec<VecDeque<(usize, u64, u64)>> = vec![VecDeque::new(); servers.len()];
    let mut worst: Vec<Vec<u64>> = servers.iter().map(|s| vec![0; s.tasks.len()]).collect();

    for now in 0..horizon {
        for (s, server) in servers.iter().enumerate() {
            if now == next_server_release[s] {
                capacity[s] = server.budget;
                next_server_release[s] += server.period;
            }
            for (k, task) in server.tasks.iter().enumerate() {
                if now == next_task_release[s][k] {
                    queues[s].push_back((k, now, task.wcet));
                    next_task_release[s][k] += task.period;
                }
            }
        }
        let mut running: Option<usize> = None;
        for &s in &order {
            if capacity[s] == 0 {
                continue;
            }
            let has_work = !queues[s].is_empty();
            match servers[s].kind {
                SimKind::Periodic => {
                    running = Some(s);
                    break;
                }
                SimKind::Deferrable => {
                    if has_work {
                        running = Some(s);
                        break;
                    }
                }
                SimKind::Polling => {
                    if has_work {
                        running = Some(s);
                        break;
                    }
                    capacity[s] = 0; // polled, found nothing: budget lost
                }
            }
        }
        let Some(s) = running else { continue };
        capacity[s] -= 1;
        if let Some(position) = most_urgent(&queues[s], &servers[s].tasks) {
            let job = &mut queues[s][position];
            job.2 -= 1;
            if job.2 == 0 {
                let (k, release, _) = queues[s].remove(position).expect("job");
                worst[s][k] = worst[s][k].max(now + 1 - release);
            }
        }
        if servers[s].kind == SimKind::Polling && queues[s].is_empty() {
            capacity[s] = 0;
        }
    }
    worst
}

fn most_urgent(queue: &VecDeque<(usize, u64, u64)>, tasks: &[SimTask]) -> Option<usize> {
    queue
        .iter()
        .enumerate()
        .min_by_key(|(_, &(k, release, _))| (tasks[k].priority, release))
        .map(|(position, _)| position)
}
