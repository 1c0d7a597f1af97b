//! Long runs of `rtvmm sim`: said so up front, with the estimate; a progress bar on
//! standard error while it runs (when that is a terminal, as `rtvmm experiment` does);
//! SIGINT (Ctrl-C) or SIGTERM stops the simulation at the instant it has reached and
//! keeps what it simulated (a second signal exits at once with 128 + its number). Short
//! runs get none of this.

use std::io::IsTerminal;
use std::ops::ControlFlow;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rtvmm_core::Nanos;
use rtvmm_system::WorkEstimate;

/// Simulation steps per second of a release build, to turn an estimate into wall-clock
/// time: between two measurements on a shared 2-core machine, 13.6 M/s for 100 tasks of
/// 1 ms (mostly job releases and finishes) and 34 M/s for a 1 ns quantum (mostly ticks).
const STEPS_PER_SECOND: u64 = 15_000_000;

/// Runs estimated to take longer than this are announced and get a progress bar.
const LONG: Duration = Duration::from_secs(3);

/// A long run in progress.
pub struct LongRun {
    bar: ProgressBar,
    stop: Arc<AtomicBool>,
    /// The signal that stopped the run (0 until one comes).
    signal: Arc<AtomicUsize>,
}

/// A large count as a person reads it: `72001`, `12.1 million`, `3.6 trillion`.
fn count(n: u64) -> String {
    let x = n as f64;
    if n < 10_000_000 {
        n.to_string()
    } else if x < 1e9 {
        format!("{:.1} million", x / 1e6)
    } else if x < 1e12 {
        format!("{:.1} billion", x / 1e9)
    } else {
        format!("{:.1} trillion", x / 1e12)
    }
}

/// `seconds` as a person says it: `40 s`, `12 min`, `3.2 h`, `2.1 days`.
fn human(seconds: f64) -> String {
    if seconds < 90.0 {
        format!("{seconds:.0} s")
    } else if seconds < 90.0 * 60.0 {
        format!("{:.0} min", seconds / 60.0)
    } else if seconds < 48.0 * 3600.0 {
        format!("{:.1} h", seconds / 3600.0)
    } else {
        format!("{:.1} days", seconds / 86400.0)
    }
}

impl LongRun {
    /// For a run estimated to take longer than a few seconds: installs the Ctrl-C handler,
    /// says on standard error how long the run will take and what Ctrl-C does, and shows
    /// a progress bar when standard error is a terminal. `None` for a short run.
    pub fn start(estimate: &WorkEstimate, duration: Nanos) -> Option<LongRun> {
        let steps = estimate.steps();
        // A step of a large system costs more than one of a small one (its weight).
        let seconds = estimate.cost() as f64 / STEPS_PER_SECOND as f64;
        if seconds < LONG.as_secs_f64() {
            return None;
        }
        let stop = Arc::new(AtomicBool::new(false));
        // Before the announcement: a signal after it never kills the run half-written.
        let installed = crate::signals::install(&stop, |_| {});
        let handled = installed.is_ok();
        let signal = installed.unwrap_or_else(|_| Arc::new(AtomicUsize::new(0)));
        eprintln!(
            "rtvmm: a long run: about {} simulation steps ({} scheduler ticks and timers, {} \
             job releases over {duration} simulated), roughly {} of wall-clock time{}",
            count(steps),
            count(estimate.ticks.saturating_add(estimate.policy_timers)),
            count(estimate.jobs),
            human(seconds),
            if handled {
                "; Ctrl-C (or SIGTERM) stops it and keeps what was simulated"
            } else {
                ""
            }
        );
        let target = if std::io::stderr().is_terminal() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(duration.as_ns()), target);
        bar.set_style(
            ProgressStyle::with_template(
                "[{bar:32}] {percent:>3}% simulated · {msg} · {elapsed_precise} elapsed · ETA {eta}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar.enable_steady_tick(Duration::from_millis(250));
        Some(LongRun { bar, stop, signal })
    }

    /// The signal that stopped the run: SIGINT or SIGTERM's number, 0 if none came.
    pub fn signal(&self) -> i32 {
        self.signal.load(Ordering::SeqCst) as i32
    }

    /// The simulation has reached `now`: moves the bar; `Break` after a signal.
    pub fn observe(&self, now: Nanos) -> ControlFlow<()> {
        self.bar.set_position(now.as_ns());
        self.bar.set_message(format!("{:.3} s", now.as_secs_f64()));
        if self.stop.load(Ordering::SeqCst) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    }

    /// Clears the bar.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_as_people_say_them() {
        assert_eq!(count(72_001), "72001");
        assert_eq!(count(12_070_000), "12.1 million");
        assert_eq!(count(3_600_000_504_003), "3.6 trillion");
    }

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(human(4.0), "4 s");
        assert_eq!(human(600.0), "10 min");
        assert_eq!(human(7200.0), "2.0 h");
        assert_eq!(human(2.0 * 86400.0), "2.0 days");
    }
}
