//! The guest process of a process domain: its tasks as `SCHED_FIFO` threads.
//!
//! # Design note
//! The executor starts one guest process per VCPU of a domain (see [`crate::domain`]) by
//! re-executing its own program (`HELPER_ARG guest CPU PARENT`), never by `fork()` of a
//! multi-threaded process. The guest finds its [`Shared`] memory on fd [`GUEST_SHM_FD`] and the executor's eventfd on
//! [`GUEST_NOTIFY_FD`], pins itself to the managed cpu, and starts one thread per task. The
//! guest scheduler is Linux: each thread runs `SCHED_FIFO` at the priority the executor
//! assigned (rate- or deadline-monotonic, or the explicit `fp` order), as in the published
//! experiments.
//!
//! A task thread keeps a one-task [`Guest`] of the core, so releases and execution times
//! follow exactly the simulator's rules (periodic, sporadic, Poisson; execution time drawn
//! uniformly from `[min_exec, wcet]`), with a random stream per task
//! ([`SimRng::derived`] from the run's seed, the domain and the task: the same draws in
//! every run, though not the simulator's, which shares one stream across the run). Jobs of
//! a task run in release order; a release that falls due while the previous job runs is
//! taken when it finishes, at its own release time (soft real-time).
//!
//! Each job burns its execution time as **thread CPU time**; its release (the instant it
//! was due), first start and finish go into the task's ring. Between jobs the thread
//! publishes its next release, rings the eventfd (block), and waits on the phase futex
//! until that instant (absolute), so that the end of the run can wake it. Every loop (and
//! every few microseconds of burning) answers the executor's switch probe. At the end
//! (phase `Finalize`) it releases what fell due up to the end and reports every job still
//! pending, then exits.
//!
//! A page of kind [`PageKind::GlobalVcpu`] is one VCPU of a global guest of several VCPUs
//! ([`crate::global`]): the process then starts one worker thread instead, which burns the
//! job its VCPU is granted ([`Burner`]), rings the eventfd when it reaches its demand, and
//! spins (answering the switch probe) while it has none.

use std::os::fd::{FromRawFd, OwnedFd};
use std::sync::Arc;

use nix::sys::eventfd::EventFd;
use rtvmm_core::guest::{Arrival, Guest, GuestScheduler, TaskSpec};
use rtvmm_core::rng::SimRng;
use rtvmm_core::Nanos;

use crate::global::{Burn, Burner};
use crate::shm::{
    stream_label, ArrivalKind, JobTimes, PageKind, Phase, Shared, TaskConfig, TaskState,
    GUEST_NOTIFY_FD, GUEST_SHM_FD,
};
use crate::sys;

/// The core's task for a configuration (the rules of releases and draws are the core's).
pub fn task_spec(c: &TaskConfig) -> TaskSpec {
    TaskSpec {
        vcpu: 0,
        name: String::new(),
        period: Nanos(c.period),
        wcet: Nanos(c.wcet),
        min_exec: Nanos(c.min_exec),
        deadline: Nanos(c.deadline),
        offset: Nanos(c.offset),
        priority: c.priority,
        arrival: match c.arrival {
            ArrivalKind::Periodic => Arrival::Periodic,
            ArrivalKind::Sporadic => Arrival::Sporadic {
                max_extra_gap: Nanos(c.arrival_param),
            },
            ArrivalKind::Poisson => Arrival::Poisson {
                mean_gap: Nanos(c.arrival_param),
            },
        },
    }
}

/// The guest process's entry point (`HELPER_ARG guest CPU PARENT`). Returns the exit
/// code.
pub fn main(args: &[String]) -> i32 {
    match run(args) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("rtvmm guest: {e}");
            1
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let [cpu, parent] = args else {
        return Err(format!("expected CPU PARENT, got {args:?}"));
    };
    let cpu: usize = cpu.parse().map_err(|_| format!("bad cpu '{cpu}'"))?;
    let parent: i32 = parent.parse().map_err(|_| format!("bad pid '{parent}'"))?;
    // The parent-death signal was set before exec; if the parent died before that, stop.
    if nix::unistd::getppid().as_raw() != parent {
        return Err("the executor is gone".into());
    }
    // SAFETY: the executor put these two descriptors there for us (see `domain::spawn`);
    // nothing else in this process owns them.
    let (shm, notify) = unsafe {
        (
            OwnedFd::from_raw_fd(GUEST_SHM_FD),
            OwnedFd::from_raw_fd(GUEST_NOTIFY_FD),
        )
    };
    let shared = Arc::new(Shared::open(shm).map_err(|e| e.to_string())?);
    // SAFETY: GUEST_NOTIFY_FD is an eventfd (see above).
    let notify = Arc::new(unsafe { EventFd::from_owned_fd(notify) });
    sys::pin_to(0, cpu).map_err(|e| format!("pinning to cpu {cpu}: {e}"))?;
    let _ = sys::lock_memory();
    if shared.kind() == PageKind::GlobalVcpu {
        return vcpu_worker(&shared, &notify);
    }
    let mut threads = Vec::new();
    for task in 0..shared.tasks() {
        let shared = Arc::clone(&shared);
        let notify = Arc::clone(&notify);
        let thread = std::thread::Builder::new()
            .name(format!("rtvmm-d{}t{task}", shared.domain()))
            .spawn(move || task_thread(&shared, &notify, task))
            .map_err(|e| format!("starting a task thread: {e}"))?;
        threads.push(thread);
    }
    let mut failed = None;
    for t in threads {
        match t.join() {
            Ok(Ok(())) => {}
            Ok(Err(e)) => failed = Some(e),
            Err(_) => failed = Some("a task thread panicked".into()),
        }
    }
    failed.map_or(Ok(()), Err)
}

fn task_thread(shared: &Shared, notify: &EventFd, task: usize) -> Result<(), String> {
    let config = shared.config(task);
    shared.set_tid(task, sys::gettid());
    if config.fifo_priority > 0 {
        sys::set_fifo(0, config.fifo_priority)
            .map_err(|e| format!("task {task}: SCHED_FIFO {}: {e}", config.fifo_priority))?;
    }
    let mut rng = SimRng::derived(shared.seed(), stream_label(shared.domain(), task));
    shared.mark_ready();
    let phase = shared.phase_word();
    while shared.phase() == Phase::Setup {
        sys::futex_wait_until(phase, Phase::Setup as u32, None, true);
    }
    // The join is read after `go`: the executor sets it then for a guest added while
    // running (its releases begin once it is ready).
    let mut guest = Guest::new(
        GuestScheduler::Rm,
        vec![task_spec(&config)],
        Nanos(shared.join()),
    );
    let start = shared.start();
    let cpu_at_start = sys::thread_cpu_ns();
    let rel = || sys::mono_ns().saturating_sub(start);
    loop {
        let finalizing = shared.phase() == Phase::Finalize;
        let now = if finalizing { shared.end() } else { rel() };
        while let Some(at) = guest.next_release(0).filter(|at| at.as_ns() <= now) {
            guest.release(at, 0, &mut rng);
        }
        if finalizing {
            for job in guest.queue(0) {
                let times = JobTimes {
                    seq: job.seq,
                    release: job.release.as_ns(),
                    first_start: job.first_start.map(Nanos::as_ns),
                    finish: None,
                };
                while !shared.has_room(task) {
                    std::thread::sleep(std::time::Duration::from_micros(200));
                }
                shared.push(task, &times);
            }
            shared.set_cpu(task, sys::thread_cpu_ns() - cpu_at_start);
            shared.mark_finalized(task);
            return Ok(());
        }
        shared.answer_probe(rel);
        if let Some(job) = guest.current_job() {
            shared.set_state(task, TaskState::Busy);
            let remaining = (job.demand - job.done).as_ns();
            let began = rel();
            let burned = burn(shared, remaining, rel);
            shared.set_cpu(task, sys::thread_cpu_ns() - cpu_at_start);
            if let Some(done) = guest.run(Nanos(began), Nanos(burned)) {
                shared.push(
                    task,
                    &JobTimes {
                        seq: done.seq,
                        release: done.release.as_ns(),
                        first_start: done.first_start.map(Nanos::as_ns),
                        finish: Some(rel()),
                    },
                );
            }
            continue;
        }
        let next = guest.next_release(0);
        shared.set_state(
            task,
            next.map_or(TaskState::Never, |at| TaskState::NextRelease(at.as_ns())),
        );
        // Block: tell the executor (it owns the wake-up timer from here).
        let _ = notify.write(1);
        if shared.phase() == Phase::Run {
            sys::futex_wait_until(
                phase,
                Phase::Run as u32,
                next.map(|at| start + at.as_ns()),
                true,
            );
        }
    }
}

/// The worker of one VCPU of a global guest (its page's task 0): burns what is granted.
fn vcpu_worker(shared: &Shared, notify: &EventFd) -> Result<(), String> {
    let config = shared.config(0);
    shared.set_tid(0, sys::gettid());
    if config.fifo_priority > 0 {
        sys::set_fifo(0, config.fifo_priority)
            .map_err(|e| format!("the VCPU worker: SCHED_FIFO {}: {e}", config.fifo_priority))?;
    }
    shared.mark_ready();
    while shared.phase() == Phase::Setup {
        sys::futex_wait_until(shared.phase_word(), Phase::Setup as u32, None, true);
    }
    let start = shared.start();
    let cpu_at_start = sys::thread_cpu_ns();
    let rel = || sys::mono_ns().saturating_sub(start);
    let mut burner = Burner::default();
    while shared.phase() != Phase::Finalize {
        shared.answer_probe(rel);
        let cpu = sys::thread_cpu_ns();
        if burner.step(shared, cpu, rel) == Burn::Finished {
            let _ = notify.write(1);
        }
        shared.set_cpu(0, cpu - cpu_at_start);
        std::hint::spin_loop();
    }
    shared.set_cpu(0, sys::thread_cpu_ns() - cpu_at_start);
    shared.mark_finalized(0);
    Ok(())
}

/// Spins until this thread has had `amount` ns of CPU time, answering the switch probe;
/// stops early when the run ends. Returns the CPU time burned (at most `amount`).
fn burn(shared: &Shared, amount: u64, rel: impl Fn() -> u64 + Copy) -> u64 {
    let begin = sys::thread_cpu_ns();
    loop {
        let used = sys::thread_cpu_ns() - begin;
        if used >= amount {
            return amount;
        }
        shared.answer_probe(rel);
        if shared.phase() == Phase::Finalize {
            return used;
        }
    }
}
