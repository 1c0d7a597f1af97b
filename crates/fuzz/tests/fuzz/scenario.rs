//! The scenario reader on generated and on mutated inputs (see `rtvmm_fuzz::scenario`).

use proptest::prelude::*;
use rtvmm_fuzz::harness::suite;
use rtvmm_fuzz::{mutate, scenario, seeds};

#[test]
fn generated() {
    let tapes = prop::collection::vec(any::<u8>(), 0..2048);
    suite(
        "scenario (generated)",
        file!(),
        4,
        tapes.prop_map(|tape| scenario::generate(&tape)),
        scenario::check,
    );
}

#[test]
fn mutated() {
    suite(
        "scenario (mutated)",
        file!(),
        2,
        mutate::mutated(seeds::scenarios(), seeds::SCENARIO_TOKENS),
        scenario::check,
    );
}
