//! A global guest of several VCPUs on the host: the core's guest scheduler choosing, the
//! VCPUs' worker threads running what it chose.
//!
//! # Design note
//! A global guest (`smp = "global"`) has one ready queue for all its VCPUs: with r of its
//! VCPUs running, its r best jobs run on them, a job keeps a VCPU that still runs, and the
//! others take the free running VCPUs best first, lowest index first
//! ([`rtvmm_core::guest`], "Several VCPUs"). The executor runs it as the simulator does:
//! - **The guest scheduler is the core's [`Guest`]**, held by the executor in a
//!   [`GlobalGuest`] and driven as the simulator's driver drives it: jobs released at their
//!   instants (the core's rules and draws, one random stream per task as the other host
//!   guests draw), [`Guest::set_running`] with the VCPUs the seats run, the CPU time each
//!   VCPU's job had credited with [`Guest::run_on`], [`Guest::vcpu_has_work`] reported to
//!   the machine as wake and block. No second copy of the rule.
//! - **One VCPU process per VCPU**, each one worker thread ([`Burner`]) that burns, as
//!   thread CPU time, the job its VCPU is granted and nothing else. The process is the
//!   enforcement unit, as for a partitioned guest: stopped and resumed with its VCPU, moved
//!   with it from seat to seat; a job moves between VCPUs as data (its progress), never as
//!   a thread.
//! - **The grant** (the VCPU's page, [`crate::shm`]): after every change that can change
//!   the choice — the VCPUs running (after each enforcement), a release, a job reaching its
//!   demand (the worker rings the executor) — the executor, before the machine decides,
//!   takes in the finished jobs and the releases due ([`GlobalGuest::take_in`]) and tells
//!   the machine which VCPUs have work; once the seats run what the machine decided, it
//!   takes every grant back (a compare-and-swap that ends the grant's generation, so that
//!   a worker still burning for it can no longer add to it), credits each job exactly the
//!   CPU time its worker wrote, asks the core which job each running VCPU runs and grants
//!   those ([`GlobalGuest::hand_out`]) — the simulator's order: finishes and releases,
//!   wake and block, the machine's decision, then the guest told which of its VCPUs
//!   run. Nothing is locked: the executor alone writes grants, one worker alone advances
//!   each, and a frozen worker holds nothing another VCPU waits for.
//!
//! Why the executor and not the guest process: the executor already knows, at the instant
//! it enforces them, which VCPUs run; the simulator releases jobs and re-chooses at their
//! instants whether or not a VCPU of the guest runs then, as the executor's timer does; and
//! a guest-side scheduler shared by several processes would need a lock that a frozen VCPU
//! could hold while another runs (lock-holder preemption), stalling a running VCPU for a
//! whole period. The guest processes keep what must be real: each job's execution time is
//! burnt as thread CPU time on its VCPU's core, while that VCPU runs.
//!
//! Known gaps: a job handed from a running VCPU to another is credited what its old
//! worker had written when the grant was taken back; the microseconds it burnt after that
//! are lost (as a switch's are). A job may need at most
//! [`GRANT_VALUE_MAX`](crate::shm::GRANT_VALUE_MAX) ns. Generations wrap after 2^20
//! grants of a VCPU: a worker frozen across exactly that many, finding its job's progress
//! unchanged, could add to a grant that is no longer its own (not guarded against).

use rtvmm_core::guest::{Guest, GuestSmp};
use rtvmm_core::model::DomainSpec;
use rtvmm_core::rng::SimRng;
use rtvmm_core::Nanos;

use crate::shm::{stream_label, JobTimes, Shared, GRANT_GEN_MODULUS};

/// Whether `spec` is a global guest of several VCPUs (run by this module).
pub fn is_global(spec: &DomainSpec) -> bool {
    spec.placement.vcpu_count() > 1 && spec.placement.smp == GuestSmp::Global
}

/// What a VCPU was granted.
#[derive(Clone, Copy, Debug)]
struct Granted {
    task: usize,
    /// The CPU time the job had when granted.
    base: u64,
    demand: u64,
}

/// The executor's half of a global guest: the core's guest scheduler and the grants.
#[derive(Clone, Debug)]
pub struct GlobalGuest {
    guest: Guest,
    /// One random stream per task (releases and demands).
    rngs: Vec<SimRng>,
    /// Per VCPU: the generation of its page's last grant.
    gens: Vec<u32>,
    granted: Vec<Option<Granted>>,
    /// The VCPUs running as of the last hand-out (bit j = VCPU j).
    running: u64,
    /// Finishes and releases were taken in, not yet handed out.
    taken_in: bool,
}

fn next(gen: u32) -> u32 {
    (gen + 1) % GRANT_GEN_MODULUS
}

impl GlobalGuest {
    /// The guest of domain `spec` (number `domain` of the run, whose tasks draw from the
    /// run's `seed`), starting at `start`: nothing released, no VCPU granted anything.
    pub fn new(
        spec: &DomainSpec,
        seed: u64,
        domain: u32,
        start: Nanos,
    ) -> Result<GlobalGuest, String> {
        let vcpus = spec.placement.vcpu_count();
        let guest = Guest::with_vcpus(
            spec.guest,
            spec.tasks.clone(),
            start,
            vcpus,
            GuestSmp::Global,
        )
        .map_err(|e| e.to_string())?;
        Ok(GlobalGuest {
            guest,
            rngs: (0..spec.tasks.len())
                .map(|t| SimRng::derived(seed, stream_label(domain, t)))
                .collect(),
            gens: vec![0; vcpus as usize],
            granted: vec![None; vcpus as usize],
            running: 0,
            taken_in: true,
        })
    }

    /// The VCPUs.
    pub fn vcpus(&self) -> usize {
        self.gens.len()
    }

    /// Writes every VCPU's first grant (none) into its page.
    pub fn grant_nothing<'a>(&self, page: impl Fn(usize) -> &'a Shared) {
        for (j, &gen) in self.gens.iter().enumerate() {
            page(j).grant(gen, None);
        }
    }

    /// Whether a re-choice is due at `now` with the VCPUs of `running`: they are not the
    /// ones of the last hand-out, a release is due, or a granted job reached its demand.
    pub fn due<'a>(&self, page: impl Fn(usize) -> &'a Shared, now: Nanos, running: u64) -> bool {
        running != self.running
            || self.next_release().is_some_and(|at| at <= now)
            || self
                .granted
                .iter()
                .enumerate()
                .any(|(j, g)| g.is_some_and(|g| page(j).done() == (self.gens[j], g.demand)))
    }

    /// The earliest next release of any task.
    pub fn next_release(&self) -> Option<Nanos> {
        (0..self.rngs.len())
            .filter_map(|t| self.guest.next_release(t))
            .min()
    }

    /// Whether VCPU `j` has work: the core's rule for a global guest.
    pub fn has_work(&self, j: usize) -> bool {
        self.guest.vcpu_has_work(j as u32)
    }

    /// The job VCPU `j` is granted, as (task, job number).
    pub fn granted_job(&self, j: usize) -> Option<(usize, u64)> {
        let g = self.granted[j]?;
        let job = self.guest.queue(g.task).front()?;
        Some((g.task, job.seq))
    }

    /// Takes in what happened by `now` before the machine decides: each job that reached
    /// its demand finishes (its grant taken back; `record` gets its task and times), then
    /// the jobs due are released. [`Self::has_work`] then says what the core's guest says
    /// after these finishes and releases — what the simulator reports before the machine
    /// decides. The other grants run on until [`Self::hand_out`].
    pub fn take_in<'a>(
        &mut self,
        page: impl Fn(usize) -> &'a Shared,
        now: Nanos,
        record: &mut impl FnMut(usize, JobTimes),
    ) {
        for j in 0..self.vcpus() {
            if self.granted[j].is_some_and(|g| page(j).done() == (self.gens[j], g.demand)) {
                self.take_back(j, page(j), record);
            }
        }
        for t in 0..self.rngs.len() {
            while let Some(at) = self.guest.next_release(t).filter(|&at| at <= now) {
                self.guest.release(at, t, &mut self.rngs[t]);
            }
        }
        self.taken_in = true;
    }

    /// Takes VCPU `j`'s grant back (a compare-and-swap that ends its generation: its worker
    /// can add nothing after) and credits its job the CPU time the worker wrote; a job that
    /// reached its demand finishes (`record`).
    fn take_back(&mut self, j: usize, page: &Shared, record: &mut impl FnMut(usize, JobTimes)) {
        let revoked = next(self.gens[j]);
        let done = page.revoke(self.gens[j], revoked);
        self.gens[j] = revoked;
        let (Some(g), Some(done)) = (self.granted[j].take(), done) else {
            return;
        };
        if done <= g.base {
            return;
        }
        let from = Nanos(page.ran_from());
        if let Some(job) = self.guest.run_on(j as u32, from, Nanos(done - g.base)) {
            let times = JobTimes {
                seq: job.seq,
                release: job.release.as_ns(),
                first_start: job.first_start.map(Nanos::as_ns),
                finish: Some(page.finished_at()),
            };
            record(g.task, times);
        }
    }

    /// Whether finishes and releases were taken in and not handed out since.
    pub fn taken_in(&self) -> bool {
        self.taken_in
    }

    /// The VCPUs of `running` run from now (bit j = VCPU j): every grant taken back and its
    /// job credited (`record` as in [`Self::take_in`]), the core's guest asked which job
    /// each runs ([`Guest::set_running`]), and those granted (nothing to the others).
    pub fn hand_out<'a>(
        &mut self,
        page: impl Fn(usize) -> &'a Shared,
        running: u64,
        record: &mut impl FnMut(usize, JobTimes),
    ) {
        for j in 0..self.vcpus() {
            self.take_back(j, page(j), record);
        }
        self.guest.set_running(running);
        self.running = running;
        for j in 0..self.vcpus() {
            let gen = next(self.gens[j]);
            self.gens[j] = gen;
            let job = self
                .guest
                .job_on(j as u32)
                .filter(|_| running & (1 << j) != 0);
            self.granted[j] = job.map(|job| Granted {
                task: job.task as usize,
                base: job.done.as_ns(),
                demand: job.demand.as_ns(),
            });
            page(j).grant(gen, job.map(|job| (job.done.as_ns(), job.demand.as_ns())));
        }
        self.taken_in = false;
    }

    /// [`Self::take_in`] then [`Self::hand_out`]: the whole re-choice at `now`.
    pub fn sync<'a>(
        &mut self,
        page: impl Fn(usize) -> &'a Shared + Copy,
        now: Nanos,
        running: u64,
        record: &mut impl FnMut(usize, JobTimes),
    ) {
        self.take_in(page, now, record);
        self.hand_out(page, running, record);
    }

    /// Ends the guest at `at` (its VCPUs stopped): every grant taken back and credited, the
    /// jobs due by `at` released, and, `pending`, every unfinished job given to `record`
    /// (with no finish).
    pub fn close<'a>(
        &mut self,
        page: impl Fn(usize) -> &'a Shared + Copy,
        at: Nanos,
        record: &mut impl FnMut(usize, JobTimes),
        pending: bool,
    ) {
        self.sync(page, at, 0, record);
        if !pending {
            return;
        }
        for t in 0..self.rngs.len() {
            for job in self.guest.queue(t) {
                let times = JobTimes {
                    seq: job.seq,
                    release: job.release.as_ns(),
                    first_start: job.first_start.map(Nanos::as_ns),
                    finish: None,
                };
                record(t, times);
            }
        }
    }
}

/// What one step of a worker did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Burn {
    /// No job (none granted, the grant not written yet, or taken back).
    Idle,
    /// The granted job progressed.
    Running,
    /// The granted job reached its demand now: the worker tells the executor.
    Finished,
}

/// The grant a worker holds.
#[derive(Clone, Copy, Debug)]
struct Held {
    gen: u32,
    demand: u64,
    /// The job's CPU time when taken, and the thread's CPU time then.
    base: u64,
    cpu_from: u64,
    /// The CPU time last written into the page.
    written: u64,
    finished: bool,
}

/// The worker's half: the VCPU's one thread runs [`Burner::step`] in a loop, burning the
/// granted job's demand as its own CPU time.
#[derive(Clone, Debug, Default)]
pub struct Burner {
    held: Option<Held>,
}

impl Burner {
    /// One step at thread CPU time `cpu` (ns) and instant `now()` (relative): takes a new
    /// grant, or writes the held job's progress, or finishes it.
    pub fn step(&mut self, page: &Shared, cpu: u64, now: impl Fn() -> u64) -> Burn {
        let (gen, demand) = page.granted();
        if self.held.is_some_and(|h| h.gen != gen) {
            self.held = None;
        }
        let Some(demand) = demand else {
            return Burn::Idle;
        };
        let held = match &mut self.held {
            Some(held) => held,
            None => {
                let (written_for, done) = page.done();
                if written_for != gen {
                    return Burn::Idle;
                }
                page.set_ran_from(now());
                self.held.insert(Held {
                    gen,
                    demand,
                    base: done,
                    cpu_from: cpu,
                    written: done,
                    finished: false,
                })
            }
        };
        if held.finished {
            return Burn::Idle;
        }
        let had = (held.base + cpu.saturating_sub(held.cpu_from)).min(held.demand);
        if had == held.written {
            return Burn::Running;
        }
        if had == held.demand {
            page.set_finished_at(now());
        }
        if !page.advance(held.gen, held.written, had) {
            self.held = None;
            return Burn::Idle;
        }
        held.written = had;
        if had == held.demand {
            held.finished = true;
            return Burn::Finished;
        }
        Burn::Running
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shm::PageKind;
    use rtvmm_core::guest::{Arrival, GuestScheduler, TaskSpec};
    use rtvmm_core::model::{Placement, VcpuParams};

    fn ms(x: u64) -> Nanos {
        Nanos::from_ms(x)
    }

    fn domain(tasks: Vec<TaskSpec>, vcpus: u32) -> DomainSpec {
        DomainSpec {
            name: "g".into(),
            vcpu: VcpuParams::server(ms(2), ms(10), 1),
            guest: GuestScheduler::Rm,
            tasks,
            placement: Placement {
                vcpus,
                ..Placement::default()
            },
        }
    }

    fn pages(k: usize) -> Vec<Shared> {
        (0..k)
            .map(|_| {
                let page = Shared::create(1, 1, 0, 0).unwrap();
                page.set_kind(PageKind::GlobalVcpu);
                page
            })
            .collect()
    }

    /// Stand-in workers: each VCPU's [`Burner`] and its thread's CPU clock.
    struct Workers {
        burners: Vec<Burner>,
        cpu: Vec<u64>,
    }

    impl Workers {
        fn new(k: usize) -> Workers {
            Workers {
                burners: vec![Burner::default(); k],
                cpu: vec![0; k],
            }
        }

        /// The VCPUs of `running` run from `from` until `to` or until a job finishes (the
        /// earliest): returns that instant. Each worker steps at `from` and then at the
        /// instant reached, its thread having burnt the time between.
        fn run(&mut self, pages: &[Shared], running: u64, from: Nanos, to: Nanos) -> Nanos {
            let mut until = to;
            for j in (0..pages.len()).filter(|j| running & (1 << j) != 0) {
                self.burners[j].step(&pages[j], self.cpu[j], || from.as_ns());
                if let Some(h) = self.burners[j].held.filter(|h| !h.finished) {
                    let left = h.demand - h.written;
                    until = until.min(from + Nanos(left));
                }
            }
            for j in (0..pages.len()).filter(|j| running & (1 << j) != 0) {
                self.cpu[j] += (until - from).as_ns();
                self.burners[j].step(&pages[j], self.cpu[j], || until.as_ns());
            }
            until
        }
    }

    fn job_at_zero(name: &str, period: u64, wcet: u64) -> TaskSpec {
        let mut t = TaskSpec::periodic(name, ms(period), ms(wcet));
        t.arrival = Arrival::AperiodicTimes(vec![Nanos::ZERO]);
        t
    }

    /// The core's hand-derived case ("Global, 2 VCPUs, rm" in `rtvmm_core::guest`), run
    /// through grants and stand-in workers:
    /// ```text
    ///        0      2      4      6
    /// V0     a......|             b......     (V0 descheduled over [2, 4))
    /// V1     b......a......|      c......
    /// ```
    /// a (period 10), b (20), c (30), 4 ms each, all released at 0. Both VCPUs run: a on
    /// V0, b on V1. At 2 V0 is descheduled: a, the best, moves to V1 with its 2 ms done,
    /// b goes back to the queue. a finishes on V1 at 4; with both running again b takes
    /// V0 (2 ms left) and c V1.
    #[test]
    fn a_job_moves_to_the_vcpu_left_running_with_its_progress() {
        let spec = domain(
            vec![
                job_at_zero("a", 10, 4),
                job_at_zero("b", 20, 4),
                job_at_zero("c", 30, 4),
            ],
            2,
        );
        let pages = pages(2);
        let page = |j: usize| &pages[j];
        let mut g = GlobalGuest::new(&spec, 1, 0, Nanos::ZERO).unwrap();
        g.grant_nothing(page);
        let mut jobs: Vec<(usize, JobTimes)> = Vec::new();
        let mut workers = Workers::new(2);
        assert!(g.due(page, Nanos::ZERO, 0), "releases due at 0");
        g.sync(page, Nanos::ZERO, 0, &mut |t, j| jobs.push((t, j)));
        assert!(g.has_work(0) && g.has_work(1), "3 ready jobs, 2 VCPUs");
        assert!(!g.due(page, Nanos::ZERO, 0));
        assert!(g.due(page, Nanos::ZERO, 0b11), "both VCPUs run now");
        g.sync(page, Nanos::ZERO, 0b11, &mut |t, j| jobs.push((t, j)));
        assert_eq!(
            (g.granted_job(0), g.granted_job(1)),
            (Some((0, 0)), Some((1, 0)))
        );
        assert_eq!(workers.run(&pages, 0b11, ms(0), ms(2)), ms(2));
        g.sync(page, ms(2), 0b10, &mut |t, j| jobs.push((t, j)));
        assert_eq!(
            (g.granted_job(0), g.granted_job(1)),
            (None, Some((0, 0))),
            "a moves"
        );
        assert_eq!(pages[1].done().1, ms(2).as_ns(), "with its 2 ms done");
        // A worker that still held a's grant on V0 can no longer add to it.
        workers.cpu[0] += ms(1).as_ns();
        assert_eq!(
            workers.burners[0].step(&pages[0], workers.cpu[0], || 0),
            Burn::Idle
        );
        let finish = workers.run(&pages, 0b10, ms(2), ms(10));
        assert_eq!(finish, ms(4), "a finishes on V1 at 4");
        assert!(g.due(page, ms(4), 0b10), "a reached its demand");
        g.sync(page, ms(4), 0b11, &mut |t, j| jobs.push((t, j)));
        let [(0, a)] = jobs[..] else {
            panic!("a alone finished: {jobs:?}")
        };
        assert_eq!((a.first_start, a.finish), (Some(0), Some(ms(4).as_ns())));
        assert_eq!(
            (g.granted_job(0), g.granted_job(1)),
            (Some((1, 0)), Some((2, 0)))
        );
        assert_eq!(
            pages[0].done().1,
            ms(2).as_ns(),
            "b resumes where it stopped"
        );
        // b finishes on V0 at 6, c on V1 at 8; then nothing is left to run.
        let mut at = ms(4);
        while at < ms(8) {
            at = workers.run(&pages, 0b11, at, ms(20));
            g.sync(page, at, 0b11, &mut |t, j| jobs.push((t, j)));
        }
        let finishes: Vec<(usize, Option<u64>)> =
            jobs.iter().map(|&(t, j)| (t, j.finish)).collect();
        assert_eq!(
            finishes,
            [
                (0, Some(ms(4).as_ns())),
                (1, Some(ms(6).as_ns())),
                (2, Some(ms(8).as_ns()))
            ]
        );
        assert!(!g.has_work(0) && !g.has_work(1));
        assert_eq!((g.granted_job(0), g.granted_job(1)), (None, None));
    }

    /// A job left unfinished at the end is reported pending with its first start; one due
    /// by the end is released first.
    #[test]
    fn at_the_end_every_unfinished_job_is_pending() {
        let spec = domain(
            vec![
                TaskSpec::periodic("a", ms(10), ms(6)),
                TaskSpec::periodic("b", ms(20), ms(1)),
            ],
            2,
        );
        let pages = pages(2);
        let page = |j: usize| &pages[j];
        let mut g = GlobalGuest::new(&spec, 1, 0, Nanos::ZERO).unwrap();
        g.grant_nothing(page);
        let mut jobs: Vec<(usize, JobTimes)> = Vec::new();
        let mut workers = Workers::new(2);
        g.sync(page, Nanos::ZERO, 0b01, &mut |t, j| jobs.push((t, j)));
        assert_eq!(g.granted_job(0), Some((0, 0)));
        assert_eq!(workers.run(&pages, 0b01, ms(0), ms(3)), ms(3));
        g.close(page, ms(10), &mut |t, j| jobs.push((t, j)), true);
        let pending: Vec<(usize, u64, Option<u64>, Option<u64>)> = jobs
            .iter()
            .map(|&(t, j)| (t, j.seq, j.first_start, j.finish))
            .collect();
        // a's first job (started at 0, 3 of 6 ms), a's second (due at 10), b's first.
        assert_eq!(
            pending,
            [
                (0, 0, Some(0), None),
                (0, 1, None, None),
                (1, 0, None, None)
            ]
        );
    }

    /// A grant taken back while its worker burns: the worker's next write fails, it adds
    /// nothing, and it holds nothing until the next grant, which it takes with the progress
    /// the executor wrote.
    #[test]
    fn a_worker_cannot_add_to_a_grant_taken_back() {
        let page = &pages(1)[0];
        page.grant(5, Some((0, ms(10).as_ns())));
        let mut burner = Burner::default();
        assert_eq!(burner.step(page, 100, || 7), Burn::Running);
        assert_eq!(page.ran_from(), 7);
        assert_eq!(burner.step(page, 100 + 1_000, || 8), Burn::Running);
        assert_eq!(page.done(), (5, 1_000));
        assert_eq!(page.revoke(5, 6), Some(1_000));
        assert_eq!(page.revoke(5, 6), None, "taken back once");
        assert_eq!(burner.step(page, 100 + 5_000, || 9), Burn::Idle);
        assert_eq!(page.done(), (6, 1_000), "nothing added after");
        page.grant(7, Some((1_000, 3_000)));
        assert_eq!(burner.step(page, 200_000, || 10), Burn::Running);
        assert_eq!(burner.step(page, 202_000, || 11), Burn::Finished);
        assert_eq!((page.done(), page.finished_at()), ((7, 3_000), 11));
        assert_eq!(burner.step(page, 300_000, || 12), Burn::Idle, "done once");
    }
}
