//! Guests: tasks, jobs and the guest OS schedulers (`rm`, `dm`, `fp`, `edf`).
//!
//! # Design note
//! - A **task** releases **jobs** (periodic every `period` from `offset`; sporadic with a
//!   minimum inter-arrival of `period` plus a seeded extra gap; aperiodic at listed times or
//!   as a seeded Poisson stream). Each job needs an execution time drawn uniformly from
//!   `[min_exec, wcet]` (`min_exec` = ⌈etf·wcet⌉, computed once by the configuration).
//! - **Soft real-time**: a job past its deadline keeps running until it finishes. Jobs of
//!   one task run in release order; a job released while its predecessor is unfinished
//!   waits behind it (a FIFO per task).
//! - **Guest scheduling** is preemptive: among tasks with a pending job, the head job of the
//!   best task runs. `rm`: shorter period first; `dm`: shorter relative deadline first; `fp`:
//!   smaller explicit priority first; `edf`: earliest absolute deadline of the head job
//!   first. **Ties are first-in, first-out by release**, as Linux's `SCHED_FIFO` serves the
//!   threads of one priority: of two head jobs with equal priority (equal deadlines under
//!   `edf`), the one released first runs first, and a job released later never preempts
//!   it; jobs released at the same instant go in declaration order.
//! - **Time origin**: a guest starts when its domain joins the machine (`start`: time 0, or
//!   the instant a domain is added at run time). A task's releases count from there: the
//!   first at `start + offset` (listed aperiodic times are relative to `start` too).
//! - A guest only sees time while its VCPU runs: the driver calls [`Guest::run`] with the
//!   time the VCPU ran, and a job frozen by the VMM resumes where it stopped.
//!
//! Known gap: one VCPU per guest (multi-VCPU guests come with the multicore work).

use std::collections::VecDeque;

use crate::rng::SimRng;
use crate::time::Nanos;

/// The guest OS scheduler.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GuestScheduler {
    Rm,
    Dm,
    Fp,
    Edf,
}

impl GuestScheduler {
    pub fn name(self) -> &'static str {
        match self {
            GuestScheduler::Rm => "rm",
            GuestScheduler::Dm => "dm",
            GuestScheduler::Fp => "fp",
            GuestScheduler::Edf => "edf",
        }
    }
    pub fn from_name(name: &str) -> Option<GuestScheduler> {
        match name.trim().to_ascii_lowercase().as_str() {
            "rm" => Some(GuestScheduler::Rm),
            "dm" => Some(GuestScheduler::Dm),
            "fp" => Some(GuestScheduler::Fp),
            "edf" => Some(GuestScheduler::Edf),
            _ => None,
        }
    }
}

/// How a task's jobs arrive.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Arrival {
    /// A job at `offset + k·period`.
    Periodic,
    /// Inter-arrival `period + uniform[0, max_extra_gap]`, first at `offset`.
    Sporadic { max_extra_gap: Nanos },
    /// Jobs at the listed instants (sorted).
    AperiodicTimes(Vec<Nanos>),
    /// A Poisson stream with exponentially distributed gaps of the given mean, from
    /// `offset`.
    Poisson { mean_gap: Nanos },
}

/// A task's fixed parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskSpec {
    pub name: String,
    /// Period (or minimum inter-arrival time).
    pub period: Nanos,
    pub wcet: Nanos,
    /// The least execution time a job may draw (⌈etf·wcet⌉); equal to `wcet` when etf = 1.
    pub min_exec: Nanos,
    /// Relative deadline.
    pub deadline: Nanos,
    pub offset: Nanos,
    /// Explicit priority for the `fp` guest scheduler (smaller = higher).
    pub priority: u32,
    pub arrival: Arrival,
}

impl TaskSpec {
    /// A periodic task with deadline = period, etf = 1, offset 0.
    pub fn periodic(name: &str, period: Nanos, wcet: Nanos) -> TaskSpec {
        TaskSpec {
            name: name.to_string(),
            period,
            wcet,
            min_exec: wcet,
            deadline: period,
            offset: Nanos::ZERO,
            priority: 0,
            arrival: Arrival::Periodic,
        }
    }
}

/// One job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// Index of the task in its guest.
    pub task: u32,
    /// 0 for the task's first job, then 1, 2, ...
    pub seq: u64,
    pub release: Nanos,
    /// Absolute deadline.
    pub deadline: Nanos,
    /// Execution time this job needs.
    pub demand: Nanos,
    /// Execution time received so far.
    pub done: Nanos,
    pub first_start: Option<Nanos>,
}

/// Where a task's next release comes from.
#[derive(Clone, Debug)]
struct ArrivalState {
    next: Option<Nanos>,
    /// Index into the aperiodic list.
    listed: usize,
    released: u64,
}

/// A guest OS with one VCPU.
#[derive(Clone, Debug)]
pub struct Guest {
    scheduler: GuestScheduler,
    tasks: Vec<TaskSpec>,
    /// Static priority level of each task (smaller = higher): the period (rm), the relative
    /// deadline (dm) or the explicit priority (fp); unused under edf.
    level: Vec<u64>,
    /// When the guest started: releases count from here.
    start: Nanos,
    queues: Vec<VecDeque<Job>>,
    arrivals: Vec<ArrivalState>,
    pending: usize,
    /// What [`Self::pick`] returns, kept up to date instead of scanning every queue on each
    /// call. Only two things change the queue heads: `release` (the new job may become the
    /// best head) and `run` finishing a job (the head leaves: rescan).
    picked: Option<usize>,
}

impl Guest {
    /// A guest running `tasks` under `scheduler`, started at `start` (when its domain
    /// joins). The first release of every task is `start` plus its offset (or plus its first
    /// listed time).
    pub fn new(scheduler: GuestScheduler, tasks: Vec<TaskSpec>, start: Nanos) -> Guest {
        let level = tasks
            .iter()
            .map(|t| match scheduler {
                GuestScheduler::Rm => t.period.as_ns(),
                GuestScheduler::Dm => t.deadline.as_ns(),
                GuestScheduler::Fp => t.priority as u64,
                GuestScheduler::Edf => 0,
            })
            .collect();
        let arrivals = tasks
            .iter()
            .map(|t| ArrivalState {
                next: match &t.arrival {
                    Arrival::AperiodicTimes(times) => times.first().map(|&at| start + at),
                    _ => Some(start + t.offset),
                },
                listed: 0,
                released: 0,
            })
            .collect();
        Guest {
            scheduler,
            queues: vec![VecDeque::new(); tasks.len()],
            tasks,
            level,
            start,
            arrivals,
            pending: 0,
            picked: None,
        }
    }

    pub fn scheduler(&self) -> GuestScheduler {
        self.scheduler
    }

    pub fn tasks(&self) -> &[TaskSpec] {
        &self.tasks
    }

    /// Whether any job is pending.
    #[inline]
    pub fn has_work(&self) -> bool {
        self.pending > 0
    }

    /// Number of pending (released, unfinished) jobs.
    pub fn pending_jobs(&self) -> usize {
        self.pending
    }

    /// The pending jobs of a task, oldest first.
    pub fn queue(&self, task: usize) -> &VecDeque<Job> {
        &self.queues[task]
    }

    /// When `task` next releases a job, if ever.
    pub fn next_release(&self, task: usize) -> Option<Nanos> {
        self.arrivals[task].next
    }

    /// Releases the job of `task` due now: draws its demand and its successor's release
    /// time from `rng`. Returns the released job.
    pub fn release(&mut self, now: Nanos, task: usize, rng: &mut SimRng) -> &Job {
        let spec = &self.tasks[task];
        let demand = if spec.min_exec == spec.wcet {
            spec.wcet
        } else {
            Nanos(rng.uniform_u64(spec.min_exec.as_ns(), spec.wcet.as_ns()))
        };
        let a = &mut self.arrivals[task];
        let job = Job {
            task: task as u32,
            seq: a.released,
            release: now,
            deadline: now + spec.deadline,
            demand,
            done: Nanos::ZERO,
            first_start: None,
        };
        a.released += 1;
        a.next = match &spec.arrival {
            Arrival::Periodic => {
                Some(self.start + spec.offset + Nanos(spec.period.as_ns() * a.released))
            }
            Arrival::Sporadic { max_extra_gap } => {
                Some(now + spec.period + Nanos(rng.uniform_u64(0, max_extra_gap.as_ns())))
            }
            Arrival::AperiodicTimes(times) => {
                a.listed += 1;
                times.get(a.listed).map(|&at| self.start + at)
            }
            Arrival::Poisson { mean_gap } => {
                let gap = rng.exponential_f64(mean_gap.as_ns() as f64).round() as u64;
                Some(now + Nanos(gap.max(1)))
            }
        };
        self.pending += 1;
        let becomes_head = self.queues[task].is_empty();
        self.queues[task].push_back(job);
        if becomes_head {
            self.picked = match self.picked {
                Some(best) if !self.head_before(task, best) => Some(best),
                _ => Some(task),
            };
        }
        debug_assert_eq!(self.picked, self.scan_pick(), "stale pick after release");
        self.queues[task].back().expect("just pushed")
    }

    /// The order of head jobs — priority (or absolute deadline under edf), then release
    /// (first-in, first-out), then declaration — for a task that has a pending job.
    #[inline]
    fn head_key(&self, task: usize) -> (u64, Nanos, usize) {
        let head = self.queues[task].front().expect("has a job");
        let level = match self.scheduler {
            GuestScheduler::Edf => head.deadline.as_ns(),
            _ => self.level[task],
        };
        (level, head.release, task)
    }

    /// Whether the head job of task `a` runs before the head job of task `b` (both have
    /// one): the guest scheduler's order, the one [`Self::scan_pick`] minimises.
    fn head_before(&self, a: usize, b: usize) -> bool {
        self.head_key(a) < self.head_key(b)
    }

    /// The pick computed from scratch: the best head job over every task's queue.
    fn scan_pick(&self) -> Option<usize> {
        if self.pending == 0 {
            return None;
        }
        (0..self.queues.len())
            .filter(|&t| !self.queues[t].is_empty())
            .min_by_key(|&t| self.head_key(t))
    }

    /// The task whose head job runs if the VCPU runs now.
    #[inline]
    pub fn pick(&self) -> Option<usize> {
        self.picked
    }

    /// The job that runs if the VCPU runs now.
    #[inline]
    pub fn current_job(&self) -> Option<&Job> {
        self.pick().and_then(|t| self.queues[t].front())
    }

    /// How long the VCPU must run for the current job to finish.
    #[inline]
    pub fn time_to_completion(&self) -> Option<Nanos> {
        self.current_job().map(|j| j.demand - j.done)
    }

    /// The VCPU ran from `start` for `ran` (no longer than [`Self::time_to_completion`]): the
    /// current job progresses. Returns the job if it finished (at `start + ran`).
    pub fn run(&mut self, start: Nanos, ran: Nanos) -> Option<Job> {
        let task = self.pick()?;
        let q = &mut self.queues[task];
        let job = q.front_mut().expect("picked task has a job");
        if job.first_start.is_none() {
            job.first_start = Some(start);
        }
        debug_assert!(job.done + ran <= job.demand, "ran past the job's demand");
        job.done += ran;
        if job.done >= job.demand {
            self.pending -= 1;
            let finished = q.pop_front();
            self.picked = self.scan_pick();
            finished
        } else {
            None
        }
    }

    /// Every pending job, for the end-of-run count.
    pub fn pending(&self) -> impl Iterator<Item = &Job> {
        self.queues.iter().flat_map(|q| q.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Nanos {
        Nanos::from_ms(x)
    }

    #[test]
    fn rm_prefers_shorter_period_and_jobs_queue_fifo() {
        let mut rng = SimRng::new(1);
        let mut g = Guest::new(
            GuestScheduler::Rm,
            vec![
                TaskSpec::periodic("slow", ms(20), ms(5)),
                TaskSpec::periodic("fast", ms(10), ms(2)),
            ],
            Nanos::ZERO,
        );
        g.release(ms(0), 0, &mut rng);
        assert_eq!(g.pick(), Some(0));
        g.release(ms(0), 1, &mut rng);
        assert_eq!(g.pick(), Some(1), "shorter period wins under rm");
        assert_eq!(g.run(ms(0), ms(2)).map(|j| j.task), Some(1));
        assert_eq!(g.pick(), Some(0));
        assert_eq!(g.next_release(1), Some(ms(10)));
        // Two jobs of one task: the second waits behind the first.
        g.release(ms(20), 0, &mut rng);
        assert_eq!(g.queue(0).len(), 2);
        assert_eq!(g.time_to_completion(), Some(ms(5)));
    }

    #[test]
    fn edf_prefers_earliest_absolute_deadline() {
        let mut rng = SimRng::new(1);
        let mut g = Guest::new(
            GuestScheduler::Edf,
            vec![
                TaskSpec::periodic("a", ms(10), ms(1)),
                TaskSpec::periodic("b", ms(30), ms(1)),
            ],
            Nanos::ZERO,
        );
        g.release(ms(0), 1, &mut rng); // deadline 30
        g.release(ms(25), 0, &mut rng); // deadline 35
        assert_eq!(
            g.pick(),
            Some(1),
            "edf: deadline 30 beats 35 despite the longer period"
        );
        let mut rm = Guest::new(GuestScheduler::Rm, g.tasks().to_vec(), Nanos::ZERO);
        rm.release(ms(0), 1, &mut rng);
        rm.release(ms(25), 0, &mut rng);
        assert_eq!(rm.pick(), Some(0));
    }

    #[test]
    fn demand_is_drawn_within_etf_bounds() {
        let mut rng = SimRng::new(3);
        let mut t = TaskSpec::periodic("t", ms(10), ms(4));
        t.min_exec = ms(1);
        let mut g = Guest::new(GuestScheduler::Rm, vec![t], Nanos::ZERO);
        let mut distinct = std::collections::BTreeSet::new();
        for k in 0..50 {
            let d = g.release(ms(10 * k), 0, &mut rng).demand;
            assert!(d >= ms(1) && d <= ms(4));
            distinct.insert(d);
        }
        assert!(distinct.len() > 10);
    }

    /// Equal priorities (rm, equal periods) are served by release, not by declaration: b's
    /// job released at 1 runs before a's released at 3, and a's later job does not preempt
    /// it; jobs released together go in declaration order.
    #[test]
    fn equal_priorities_are_first_in_first_out_by_release() {
        let mut rng = SimRng::new(1);
        let mut g = Guest::new(
            GuestScheduler::Rm,
            vec![
                TaskSpec::periodic("a", ms(10), ms(2)),
                TaskSpec::periodic("b", ms(10), ms(2)),
            ],
            Nanos::ZERO,
        );
        g.release(ms(1), 1, &mut rng);
        g.release(ms(3), 0, &mut rng);
        assert_eq!(g.pick(), Some(1), "released first, runs first");
        assert_eq!(g.run(ms(1), ms(2)).map(|j| j.task), Some(1));
        assert_eq!(g.pick(), Some(0));
        g.release(ms(10), 0, &mut rng);
        g.release(ms(10), 1, &mut rng);
        assert_eq!(g.run(ms(3), ms(2)).map(|j| j.task), Some(0));
        assert_eq!(
            g.pick(),
            Some(0),
            "a's job of 10 and b's of 10: declaration order"
        );
        let mut h = Guest::new(GuestScheduler::Rm, g.tasks().to_vec(), Nanos::ZERO);
        h.release(ms(0), 1, &mut rng);
        h.release(ms(0), 0, &mut rng);
        assert_eq!(h.pick(), Some(0), "same instant: declaration order");
    }

    /// A guest that starts at 1.2 s releases its 10 ms task at 1.2 s, 1.21 s, …: releases
    /// count from the start, not from time 0.
    #[test]
    fn releases_count_from_the_guest_start() {
        let mut rng = SimRng::new(1);
        let mut t = TaskSpec::periodic("t", ms(10), ms(1));
        t.offset = ms(3);
        let mut listed = TaskSpec::periodic("l", ms(10), ms(1));
        listed.arrival = Arrival::AperiodicTimes(vec![ms(5), ms(7)]);
        let mut g = Guest::new(GuestScheduler::Rm, vec![t, listed], ms(1200));
        assert_eq!(g.next_release(0), Some(ms(1203)));
        assert_eq!(g.next_release(1), Some(ms(1205)));
        g.release(ms(1203), 0, &mut rng);
        assert_eq!(g.next_release(0), Some(ms(1213)));
        g.release(ms(1205), 1, &mut rng);
        assert_eq!(g.next_release(1), Some(ms(1207)));
    }
}
