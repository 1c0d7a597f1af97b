//! The results reader on generated and on mutated inputs (see `rtvmm_fuzz::results`).

use proptest::prelude::*;
use rtvmm_fuzz::harness::suite;
use rtvmm_fuzz::{mutate, results, seeds};

#[test]
fn generated() {
    let tapes = prop::collection::vec(any::<u8>(), 0..1024);
    suite(
        "results (generated)",
        file!(),
        2,
        tapes.prop_map(|tape| results::generate(&tape)),
        results::check,
    );
}

#[test]
fn mutated() {
    suite(
        "results (mutated)",
        file!(),
        1,
        mutate::mutated(seeds::results(), seeds::RESULTS_TOKENS),
        results::check,
    );
}
