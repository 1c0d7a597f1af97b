//! The carts reader on generated and on mutated inputs (see `rtvmm_fuzz::carts`).

use proptest::prelude::*;
use rtvmm_fuzz::harness::suite;
use rtvmm_fuzz::{carts, mutate, seeds};

#[test]
fn generated() {
    let tapes = prop::collection::vec(any::<u8>(), 0..1024);
    suite(
        "carts (generated)",
        file!(),
        2,
        tapes.prop_map(|tape| carts::generate(&tape)),
        carts::check,
    );
}

#[test]
fn mutated() {
    suite(
        "carts (mutated)",
        file!(),
        2,
        mutate::mutated(seeds::carts(), seeds::CARTS_TOKENS),
        carts::check,
    );
}
