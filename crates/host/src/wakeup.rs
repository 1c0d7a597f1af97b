//! Timer wake-up latency on real threads, as cyclictest measures it: one thread pinned to
//! a cpu sleeps on absolute `clock_nanosleep` deadlines at a fixed interval, and each wake
//! is late by (the time it reads on waking − the deadline it asked for). `rtvmm bench
//! wake` prints the distribution and can write it as a wake delivery preset, the form
//! `[machine] wake_delivery` reads (`docs/host.md`, "Wake delivery on this machine").
//!
//! # Safety of the run
//! - The measuring thread is `SCHED_FIFO` only when asked ([`WakeupOptions::fifo`]); it
//!   demotes itself to `SCHED_OTHER` before it ends, and it is a thread of this process,
//!   so nothing real-time outlives the run even if the process dies.
//! - The run is bounded: `loops` wakes, at most [`MAX_RUN`] long, and it stops early when
//!   [`WakeupOptions::stop`] is set (Ctrl-C).
//! - A `--busy` run adds a `SCHED_OTHER` spinner on the same cpu (it keeps the core from
//!   halting, as the executor's IDLE VCPU does); it stops with the run.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;

use rtvmm_core::Nanos;

use crate::sys;

/// The longest run accepted: `loops × interval` at most ten minutes.
pub const MAX_RUN: Nanos = Nanos::from_secs(600);

/// The `SCHED_FIFO` priority of the measuring thread (cyclictest's `-p 99`).
pub const FIFO_PRIORITY: u32 = 99;

/// What to measure.
#[derive(Clone, Debug)]
pub struct WakeupOptions {
    /// The cpu the thread is pinned to.
    pub cpu: usize,
    /// Between two deadlines.
    pub interval: Nanos,
    /// Wakes to measure.
    pub loops: u64,
    /// `SCHED_FIFO` at [`FIFO_PRIORITY`] (needs root or `CAP_SYS_NICE`); otherwise
    /// `SCHED_OTHER`, and the result is not a real-time figure.
    pub fifo: bool,
    /// Keep the cpu busy with a `SCHED_OTHER` spinner (no halting between wakes).
    pub busy: bool,
    /// Set to stop early; the wakes measured so far are kept.
    pub stop: Arc<AtomicBool>,
}

/// Why a run was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum WakeupError {
    #[error("--loops: must be at least 1")]
    NoLoops,
    #[error("--interval: must be greater than 0")]
    ZeroInterval,
    #[error("{loops} loops of {interval} take {total}, more than the {MAX_RUN} a run may take")]
    TooLong {
        loops: u64,
        interval: Nanos,
        total: String,
    },
    #[error("--cpu {cpu}: this machine has cpus 0 to {}", count - 1)]
    NoSuchCpu { cpu: usize, count: usize },
    #[error("{what}: {error}")]
    Sys {
        what: &'static str,
        error: io::Error,
    },
}

/// What a run measured.
#[derive(Clone, Debug)]
pub struct WakeupRun {
    /// Each wake's latency, in nanoseconds, in the order measured.
    pub latencies: Vec<u64>,
    /// Steal time on the cpu during the run, when the kernel says.
    pub steal: Option<Nanos>,
    /// The thread ran `SCHED_FIFO`.
    pub fifo: bool,
}

impl WakeupOptions {
    /// Checks the options (before any thread starts).
    pub fn check(&self) -> Result<(), WakeupError> {
        if self.loops == 0 {
            return Err(WakeupError::NoLoops);
        }
        if self.interval == Nanos::ZERO {
            return Err(WakeupError::ZeroInterval);
        }
        let total = (self.interval.as_ns() as u128) * self.loops as u128;
        if total > MAX_RUN.as_ns() as u128 {
            return Err(WakeupError::TooLong {
                loops: self.loops,
                interval: self.interval,
                total: format!("{:.0}s", total as f64 / 1e9),
            });
        }
        let count = sys::cpu_count();
        if self.cpu >= count {
            return Err(WakeupError::NoSuchCpu {
                cpu: self.cpu,
                count,
            });
        }
        Ok(())
    }
}

/// Runs the measurement (module doc): blocks for about `loops × interval`.
pub fn measure(options: &WakeupOptions) -> Result<WakeupRun, WakeupError> {
    options.check()?;
    let cpu = options.cpu;
    let spin_stop = Arc::new(AtomicBool::new(false));
    let spinner = options.busy.then(|| {
        let stop = Arc::clone(&spin_stop);
        thread::spawn(move || {
            let _ = sys::pin_to(0, cpu);
            while !stop.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
    });
    let steal_before = sys::steal_ns(cpu);
    let opts = options.clone();
    let measured = thread::spawn(move || wake_loop(&opts))
        .join()
        .unwrap_or_else(|_| {
            Err(WakeupError::Sys {
                what: "the measuring thread",
                error: io::Error::other("it panicked"),
            })
        });
    spin_stop.store(true, Ordering::Relaxed);
    if let Some(spinner) = spinner {
        let _ = spinner.join();
    }
    let latencies = measured?;
    let steal = match (steal_before, sys::steal_ns(cpu)) {
        (Some(a), Some(b)) => Some(Nanos(b.saturating_sub(a))),
        _ => None,
    };
    Ok(WakeupRun {
        latencies,
        steal,
        fifo: options.fifo,
    })
}

/// The measuring thread: pinned, `SCHED_FIFO` if asked, demoted before it returns.
fn wake_loop(options: &WakeupOptions) -> Result<Vec<u64>, WakeupError> {
    let sys_err = |what| move |error| WakeupError::Sys { what, error };
    sys::pin_to(0, options.cpu).map_err(sys_err("pinning the thread"))?;
    if options.fifo {
        sys::set_fifo(0, FIFO_PRIORITY).map_err(sys_err("SCHED_FIFO"))?;
    }
    let mut latencies = Vec::with_capacity(options.loops as usize);
    let interval = options.interval.as_ns();
    // The first deadline one interval ahead, as cyclictest starts.
    let start = sys::mono_ns() + interval;
    for k in 0..options.loops {
        if options.stop.load(Ordering::Relaxed) {
            break;
        }
        let deadline = start + k * interval;
        sys::sleep_until(deadline);
        latencies.push(sys::mono_ns().saturating_sub(deadline));
    }
    if options.fifo {
        sys::set_other(0).map_err(sys_err("back to SCHED_OTHER"))?;
    }
    Ok(latencies)
}

/// The `q`-quantile (0 ≤ q ≤ 1) of `sorted` (ascending, not empty): the sample of rank
/// `round(q·(n−1))`, so that 0 is the least and 1 the largest.
pub fn quantile(sorted: &[u64], q: f64) -> u64 {
    let rank = (q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank]
}

/// `count ≥ 2` quantiles of `sorted` at evenly spaced probabilities, least first: the form
/// of an empirical wake delivery (`rtvmm_core::wake::WakeRandom::Empirical`).
pub fn even_quantiles(sorted: &[u64], count: usize) -> Vec<Nanos> {
    let count = count.max(2);
    (0..count)
        .map(|k| Nanos(quantile(sorted, k as f64 / (count - 1) as f64)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(loops: u64, interval: Nanos) -> WakeupOptions {
        WakeupOptions {
            cpu: 0,
            interval,
            loops,
            fifo: false,
            busy: false,
            stop: Arc::new(AtomicBool::new(false)),
        }
    }

    #[test]
    fn quantiles_run_from_the_least_to_the_largest() {
        let sorted: Vec<u64> = (1..=101).collect();
        assert_eq!(quantile(&sorted, 0.0), 1);
        assert_eq!(quantile(&sorted, 0.5), 51);
        assert_eq!(quantile(&sorted, 0.99), 100);
        assert_eq!(quantile(&sorted, 1.0), 101);
        let q = even_quantiles(&sorted, 5);
        assert_eq!(q, [1, 26, 51, 76, 101].map(Nanos).to_vec());
        assert_eq!(even_quantiles(&[7], 3), vec![Nanos(7); 3]);
    }

    #[test]
    fn bad_options_are_refused_before_any_thread() {
        let ms = Nanos::from_ms;
        assert!(matches!(
            options(0, ms(1)).check(),
            Err(WakeupError::NoLoops)
        ));
        assert!(matches!(
            options(10, Nanos::ZERO).check(),
            Err(WakeupError::ZeroInterval)
        ));
        assert!(matches!(
            options(1_000_000, ms(1)).check(),
            Err(WakeupError::TooLong { .. })
        ));
        let mut far = options(10, ms(1));
        far.cpu = 100_000;
        assert!(matches!(far.check(), Err(WakeupError::NoSuchCpu { .. })));
    }

    /// A short run of 20 wakes every 200 µs: one latency per wake. `SCHED_FIFO` only where
    /// privileged; otherwise the run is `SCHED_OTHER` and the test says why.
    #[test]
    fn a_short_run_measures_every_wake_and_leaves_no_real_time_thread() {
        let mut o = options(20, Nanos::from_us(200));
        let privileged = sys::missing_privileges(&sys::Host, false)
            .iter()
            .all(|m| !matches!(m, sys::MissingPrivilege::RealTimeScheduling));
        if !privileged {
            eprintln!("no SCHED_FIFO here (needs root or CAP_SYS_NICE): measuring as SCHED_OTHER");
        }
        o.fifo = privileged;
        let run = measure(&o).unwrap();
        assert_eq!(run.latencies.len(), 20);
        assert_eq!(run.fifo, privileged);
        // The calling thread was never made real-time.
        assert_eq!(sys::policy_of(0).unwrap().0, libc::SCHED_OTHER);
    }
}
