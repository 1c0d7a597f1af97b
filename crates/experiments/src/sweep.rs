//! Running a sweep: many independent runs, in parallel, reporting progress to the caller's
//! callback ([`Options::progress`]; nothing is drawn here), with a cancel flag that keeps
//! what is done.
//!
//! # Determinism
//! Each run is a pure function of its description (the simulator is deterministic), and
//! results are returned **by run index**, whatever order the threads finished in; so
//! everything written from them is the same bytes for the same seed.
//!
//! # Interruption
//! When the caller sets [`Options::cancel`] (the binary does on SIGINT and SIGTERM), runs
//! not yet started are skipped (their slot is `None`), runs in progress — simulated
//! (they check the flag every few thousand steps, see [`crate::Cancel`]) or real-time
//! ([`crate::driver`]) — stop within moments and are dropped, and the experiment writes
//! what it has, marked partial (see [`crate::report`]). No signal handler is installed
//! here.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;

use crate::cancel::while_running;
use crate::error::ExperimentError;
use crate::options::{Options, SweepEvent};

/// What a sweep produced.
#[derive(Debug)]
pub struct SweepOutcome<R> {
    /// One slot per run, in run order; `None` for a run skipped after an interruption.
    pub results: Vec<Option<R>>,
}

impl<R> SweepOutcome<R> {
    /// Runs that finished.
    pub fn done(&self) -> usize {
        self.results.iter().filter(|r| r.is_some()).count()
    }

    /// Runs in the sweep.
    pub fn total(&self) -> usize {
        self.results.len()
    }

    /// Whether some runs were skipped.
    pub fn interrupted(&self) -> bool {
        self.done() < self.total()
    }
}

/// Shared by the sweeps of one experiment: how many runs were started, and the
/// `stop_after_runs` test hook.
#[derive(Debug, Default)]
pub struct RunCounter {
    started: AtomicUsize,
    finished: AtomicUsize,
}

impl RunCounter {
    pub fn new() -> RunCounter {
        RunCounter::default()
    }

    /// Claims the right to start one run; `false` when the sweep must stop.
    fn claim(&self, options: &Options) -> bool {
        if options.cancel.is_cancelled() {
            return false;
        }
        match options.stop_after_runs {
            None => {
                self.started.fetch_add(1, Ordering::SeqCst);
                true
            }
            Some(limit) => self
                .started
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                    (n < limit).then_some(n + 1)
                })
                .is_ok(),
        }
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

/// Tells the caller's progress callback, if any.
fn report(options: &Options, event: SweepEvent<'_>) {
    if let Some(progress) = &options.progress {
        (progress.0)(event);
    }
}

/// Runs `work` on every item, in parallel on `options.jobs` threads (0 = all cores).
///
/// `name(item)` names a run in error messages. A run that returns an error or panics
/// stops the experiment with that error (the first in run order); a run skipped because
/// of an interruption leaves `None`.
pub fn sweep<T, R, W, N>(
    label: &str,
    items: &[T],
    options: &Options,
    counter: &RunCounter,
    name: N,
    work: W,
) -> Result<SweepOutcome<R>, ExperimentError>
where
    T: Sync,
    R: Send,
    W: Fn(&T) -> Result<R, ExperimentError> + Sync,
    N: Fn(&T) -> String + Sync,
{
    // Never more threads than runs: `-j 100000` must not spawn 100000 threads. A
    // real-time run owns the machine: one at a time.
    let threads = match options.jobs {
        _ if options.driver.is_host() => 1,
        0 => 0,
        jobs => jobs.min(items.len().max(1)),
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .map_err(|e| ExperimentError::option("--jobs", e.to_string()))?;
    let total = items.len();
    let done_here = AtomicUsize::new(0);
    report(options, SweepEvent::Started { label, total });
    let slots: Vec<Option<Result<R, ExperimentError>>> = pool.install(|| {
        items
            .par_iter()
            .with_max_len(1)
            .map(|item| {
                if !counter.claim(options) {
                    return None;
                }
                let outcome = catch_unwind(AssertUnwindSafe(|| {
                    while_running(&options.cancel, || work(item))
                }))
                .unwrap_or_else(|payload| {
                    Err(ExperimentError::RunPanicked {
                        run: name(item),
                        message: panic_message(payload),
                    })
                });
                let done = done_here.fetch_add(1, Ordering::SeqCst) + 1;
                let finished = counter.finished.fetch_add(1, Ordering::SeqCst) + 1;
                report(
                    options,
                    SweepEvent::RunDone {
                        label,
                        done,
                        total,
                        finished,
                    },
                );
                Some(outcome)
            })
            .collect()
    });
    report(options, SweepEvent::Ended { label });
    let mut results = Vec::with_capacity(slots.len());
    for slot in slots {
        match slot {
            // A real-time run stopped part-way by the cancel flag is dropped.
            None | Some(Err(ExperimentError::Stopped { .. })) => results.push(None),
            Some(Ok(r)) => results.push(Some(r)),
            Some(Err(e)) => return Err(e),
        }
    }
    Ok(SweepOutcome { results })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_run_order() {
        let mut options = Options::quick("unused");
        options.jobs = 2;
        let items: Vec<u64> = (0..50).collect();
        let counter = RunCounter::new();
        let out = sweep(
            "t",
            &items,
            &options,
            &counter,
            |i| i.to_string(),
            |&i| {
                // Uneven work so threads finish out of order.
                let mut x = 0u64;
                for k in 0..(50 - i) * 1000 {
                    x = x.wrapping_add(k);
                }
                Ok((i, x))
            },
        )
        .unwrap();
        let order: Vec<u64> = out.results.iter().map(|r| r.unwrap().0).collect();
        assert_eq!(order, items);
        assert!(!out.interrupted());
    }

    #[test]
    fn a_huge_jobs_count_starts_no_more_threads_than_runs() {
        let mut options = Options::quick("unused");
        options.jobs = 100_000;
        let items = [1u32, 2, 3];
        let out = sweep(
            "t",
            &items,
            &options,
            &RunCounter::new(),
            |i| i.to_string(),
            |_| Ok(rayon::current_num_threads()),
        )
        .unwrap();
        assert!(out.results.iter().all(|t| *t == Some(3)), "{out:?}");
    }

    #[test]
    fn stop_after_runs_skips_the_rest_and_says_so() {
        let mut options = Options::quick("unused");
        options.jobs = 1;
        options.stop_after_runs = Some(3);
        let items: Vec<u32> = (0..10).collect();
        let counter = RunCounter::new();
        let out = sweep(
            "t",
            &items,
            &options,
            &counter,
            |i| i.to_string(),
            |&i| Ok(i),
        )
        .unwrap();
        assert_eq!(out.done(), 3);
        assert_eq!(out.total(), 10);
        assert!(out.interrupted());
        // A second sweep of the same experiment starts nothing.
        let again = sweep(
            "t",
            &items,
            &options,
            &counter,
            |i| i.to_string(),
            |&i| Ok(i),
        )
        .unwrap();
        assert_eq!(again.done(), 0);
    }

    #[test]
    fn a_panicking_run_becomes_an_error_naming_it() {
        let options = Options::quick("unused");
        let items = [1u32, 2, 3];
        let err = sweep(
            "t",
            &items,
            &options,
            &RunCounter::new(),
            |i| format!("run-{i}"),
            |&i| {
                if i == 2 {
                    panic!("boom");
                }
                Ok(i)
            },
        )
        .unwrap_err();
        let text = err.to_string();
        assert!(text.contains("run-2") && text.contains("boom"), "{text}");
    }
}
