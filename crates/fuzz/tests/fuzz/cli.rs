//! Whole command lines of the built binary (see `rtvmm_fuzz::cli`): generated and mutated
//! scenarios through `check`, `sim --trace`, `check --admit`, `analyze` and
//! `analyze --emit scenario`, and `gen` with generated flags.
//!
//! `RTVMM_FUZZ_CLI_CASES` inputs per test (default 6: the binary is slow to start many
//! times over), not part of `RTVMM_FUZZ_CASES`. Without a binary (`RTVMM_FUZZ_BIN`, or
//! `target/release/rtvmm` or `target/debug/rtvmm`) the tests say so and pass.

use std::time::Instant;

use proptest::prelude::*;
use proptest::test_runner::TestRunner;
use rtvmm_fuzz::harness::{config, report, run_case, Tally};
use rtvmm_fuzz::{cli, mutate, scenario, seeds, Checked};

fn cases() -> u32 {
    std::env::var("RTVMM_FUZZ_CLI_CASES")
        .ok()
        .and_then(|n| n.replace('_', "").parse().ok())
        .unwrap_or(6)
}

/// Runs `check` on `cases()` inputs of `strategy`, as the harness's suites do.
fn cli_suite<S: Strategy>(name: &'static str, strategy: S, check: fn(&S::Value) -> Checked)
where
    S::Value: std::fmt::Debug,
{
    let Some(found) = cli::cli() else {
        eprintln!("fuzz {name}: no rtvmm binary (cargo build --release --bin rtvmm), skipped");
        return;
    };
    eprintln!("fuzz {name}: {}", found.binary.display());
    let started = Instant::now();
    let tally = Tally::default();
    let mut config = config(1);
    config.cases = cases();
    config.source_file = Some(file!());
    let mut runner = TestRunner::new(config);
    let result = runner.run(&strategy, |value| {
        let input = format!("{value:?}");
        run_case(name, &tally, &input, |_| check(&value))
    });
    if let Err(error) = result {
        panic!("fuzz {name}: {error}");
    }
    report(name, &tally, started);
    let seconds = started.elapsed().as_secs_f64();
    let inputs = tally.inputs.load(std::sync::atomic::Ordering::Relaxed);
    eprintln!("fuzz {name}: {:.2} inputs/s", inputs as f64 / seconds);
}

#[test]
fn generated_scenarios() {
    let tapes = prop::collection::vec(any::<u8>(), 0..2048);
    cli_suite(
        "cli (generated scenarios)",
        tapes.prop_map(|tape| scenario::generate(&tape)),
        |text| cli::check(text),
    );
}

#[test]
fn mutated_scenarios() {
    cli_suite(
        "cli (mutated scenarios)",
        mutate::mutated(seeds::scenarios(), seeds::SCENARIO_TOKENS),
        |text| cli::check(text),
    );
}

/// `rtvmm gen` with flags from the generators' ranges, their edges and beyond.
#[test]
fn gen_flags() {
    let number = prop_oneof![
        1 => Just("0".to_string()),
        1 => Just("1".to_string()),
        1 => Just("-1".to_string()),
        1 => Just("1e300".to_string()),
        1 => Just("nan".to_string()),
        6 => (0.0f64..1.2).prop_map(|u| format!("{u:.3}")),
        6 => (1u32..60).prop_map(|n| n.to_string()),
    ];
    let periods = prop_oneof![
        1 => Just("10..100".to_string()),
        1 => Just("0..0".to_string()),
        1 => Just("5..1".to_string()),
        1 => Just("1ns..2ns".to_string()),
        6 => (1u32..1000, 0u32..1000).prop_map(|(a, b)| format!("{a}..{}", a + b)),
    ];
    let policy = prop_oneof![
        Just(None),
        Just(Some("rtds")),
        Just(Some("crps")),
        Just(Some("sporadic")),
        Just(Some("arinc653")),
    ];
    let flags = (
        0usize..4,
        number.clone(),
        number,
        periods,
        policy,
        any::<u16>(),
        prop_oneof![Just("50ms"), Just("0s"), Just("1ns"), Just("2s")],
    )
        .prop_map(|(kind, a, b, periods, policy, seed, duration)| {
            let mut args: Vec<String> = match kind {
                0 => vec!["rtxen".into(), "--load".into(), a],
                1 => vec![
                    "csa".into(),
                    "--utilisation".into(),
                    a,
                    "--periods".into(),
                    periods,
                ],
                2 => vec!["arinc".into(), "--index".into(), b],
                _ => vec![
                    "uunifast".into(),
                    "--tasks".into(),
                    b,
                    "--utilisation".into(),
                    a,
                    "--periods".into(),
                    periods,
                ],
            };
            args.extend(["--seed".into(), seed.to_string()]);
            args.extend(["--duration".into(), duration.to_string()]);
            if let Some(p) = policy {
                args.extend(["--policy".into(), p.to_string()]);
            }
            args
        });
    cli_suite("cli (gen)", flags, |args| match cli::cli() {
        Some(found) => cli::check_gen(found, args),
        None => Ok(rtvmm_fuzz::Outcome::Refused),
    });
}
