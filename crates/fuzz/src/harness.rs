//! Running checks many times: how many cases, a watchdog for hangs, and the tally.
//!
//! - **Cases.** In `cargo test` each suite runs a few cases from a fixed seed, so CI is
//!   reproducible and quick. `RTVMM_FUZZ_CASES=N` asks for about N inputs *in total*,
//!   shared out between the suites by their weights (a scenario, which is simulated,
//!   costs more than a results file); the seed is then random unless `RTVMM_FUZZ_SEED`
//!   fixes it, and the suites print what they did.
//! - **Hangs.** A simulation has a step budget (see [`crate::scenario`]), which catches a
//!   loop in the scheduler deterministically. Anything else that does not return — a
//!   parser or an analysis — is caught by the watchdog: a case running longer than
//!   [`WATCHDOG_LIMIT`] (or `RTVMM_FUZZ_WATCHDOG_SECS`) prints its target and input and
//!   aborts the process, since a stuck thread cannot be stopped from outside.
//! - **Panics** are caught by proptest (which then shrinks the input and prints it) in the
//!   suites, and by libFuzzer in the cargo-fuzz targets.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};

use crate::{Checked, Outcome};

/// How long one case may run before the watchdog calls it a hang: generous, since a
/// debug build on a loaded machine is slow, and no legitimate case comes near it.
pub const WATCHDOG_LIMIT: Duration = Duration::from_secs(60);

/// Cases per suite in the test-suite mode, before the suite's weight.
const SUITE_CASES: u32 = 64;

/// The case count for a suite of `weight` (out of [`TOTAL_WEIGHT`]) and whether the
/// count came from `RTVMM_FUZZ_CASES`.
pub fn cases(weight: u32) -> (u32, bool) {
    match std::env::var("RTVMM_FUZZ_CASES")
        .ok()
        .and_then(|n| n.replace('_', "").parse::<u64>().ok())
    {
        Some(total) => {
            let share = total * weight as u64 / TOTAL_WEIGHT as u64;
            (share.clamp(1, u32::MAX as u64) as u32, true)
        }
        None => ((SUITE_CASES * weight / 2).max(4), false),
    }
}

/// The sum of every suite's weight (`tests/fuzz/`): each suite's share of
/// `RTVMM_FUZZ_CASES` is its weight over this.
pub const TOTAL_WEIGHT: u32 = 16;

/// The proptest configuration of a suite of `weight`: a fixed seed in the test-suite mode
/// (reproducible CI), random (or `RTVMM_FUZZ_SEED`) when asked for many cases.
pub fn config(weight: u32) -> Config {
    let (cases, on_demand) = cases(weight);
    let seed = match std::env::var("RTVMM_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(seed) => RngSeed::Fixed(seed),
        None if on_demand => RngSeed::Random,
        None => RngSeed::Fixed(0x7274_766d_6d13),
    };
    Config {
        cases,
        rng_seed: seed,
        // A failing case is shrunk, but never for longer than this.
        max_shrink_time: 120_000,
        ..Config::default()
    }
}

/// Counts for one suite, printed at its end.
#[derive(Default)]
pub struct Tally {
    pub inputs: AtomicU64,
    pub accepted: AtomicU64,
    pub refused: AtomicU64,
}

/// Runs one suite: `check` on `cases(weight)` inputs from `strategy`, under the watchdog.
/// `source_file` (the caller's `file!()`) places proptest's regressions file. Panics with
/// the (shrunk) input when a case fails or panics; prints the tally when all pass.
pub fn suite<S>(
    name: &'static str,
    source_file: &'static str,
    weight: u32,
    strategy: S,
    check: fn(&str) -> Checked,
) where
    S: Strategy<Value = String>,
{
    let started = Instant::now();
    let tally = Tally::default();
    let mut config = config(weight);
    config.source_file = Some(source_file);
    let mut runner = TestRunner::new(config);
    let result = runner.run(&strategy, |input| run_case(name, &tally, &input, check));
    if let Err(error) = result {
        panic!("fuzz {name}: {error}");
    }
    report(name, &tally, started);
}

/// What the watchdog watches: the case running now, per thread.
struct Running {
    target: &'static str,
    input: String,
    since: Instant,
}

static RUNNING: Mutex<Vec<Option<Running>>> = Mutex::new(Vec::new());
static WATCHDOG: Once = Once::new();

fn watchdog_limit() -> Duration {
    std::env::var("RTVMM_FUZZ_WATCHDOG_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .map_or(WATCHDOG_LIMIT, Duration::from_secs)
}

fn start_watchdog() {
    WATCHDOG.call_once(|| {
        let limit = watchdog_limit();
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(500));
            let running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
            for case in running.iter().flatten() {
                if case.since.elapsed() > limit {
                    eprintln!(
                        "\nHANG: target {} has run one input for more than {:?}; the input \
                         ({} bytes):\n{:?}\n",
                        case.target,
                        limit,
                        case.input.len(),
                        case.input
                    );
                    std::process::abort();
                }
            }
        });
    });
}

/// A slot in [`RUNNING`] for the calling thread, released when dropped.
struct Slot(usize);

impl Slot {
    fn take(target: &'static str, input: &str) -> Slot {
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        let case = Running {
            target,
            input: input.to_string(),
            since: Instant::now(),
        };
        match running.iter().position(Option::is_none) {
            Some(i) => {
                running[i] = Some(case);
                Slot(i)
            }
            None => {
                running.push(Some(case));
                Slot(running.len() - 1)
            }
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut running = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
        running[self.0] = None;
    }
}

/// Runs `check` on `input` under the watchdog and counts the outcome in `tally`. A
/// failure fails the proptest case with the input (proptest then shrinks it); a panic
/// propagates to proptest, which does the same.
pub fn run_case(
    target: &'static str,
    tally: &Tally,
    input: &str,
    check: impl FnOnce(&str) -> Checked,
) -> Result<(), TestCaseError> {
    start_watchdog();
    let slot = Slot::take(target, input);
    let checked = check(input);
    drop(slot);
    tally.inputs.fetch_add(1, Ordering::Relaxed);
    match checked {
        Ok(Outcome::Accepted) => {
            tally.accepted.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        Ok(Outcome::Refused) => {
            tally.refused.fetch_add(1, Ordering::Relaxed);
            Ok(())
        }
        Err(failure) => Err(TestCaseError::fail(format!(
            "{target}: {failure}\ninput ({} bytes):\n{input}",
            input.len()
        ))),
    }
}

/// Prints one suite's figures (visible with `--nocapture`; the big run's report reads
/// them). Reached only when every case passed: no panic, hang or violation.
pub fn report(suite: &str, tally: &Tally, started: Instant) {
    let (inputs, accepted, refused) = (
        tally.inputs.load(Ordering::Relaxed),
        tally.accepted.load(Ordering::Relaxed),
        tally.refused.load(Ordering::Relaxed),
    );
    eprintln!(
        "fuzz {suite}: {inputs} inputs ({accepted} accepted, {refused} refused), 0 panics, \
         0 hangs, 0 invariant violations, 0 wrong results, {:.1} s",
        started.elapsed().as_secs_f64()
    );
}
