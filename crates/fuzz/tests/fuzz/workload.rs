//! The workload reader on generated and on mutated inputs (see `rtvmm_fuzz::workload`).

use proptest::prelude::*;
use rtvmm_fuzz::harness::suite;
use rtvmm_fuzz::{mutate, seeds, workload};

#[test]
fn generated() {
    let tapes = prop::collection::vec(any::<u8>(), 0..1024);
    suite(
        "workload (generated)",
        file!(),
        2,
        tapes.prop_map(|tape| workload::generate(&tape)),
        workload::check,
    );
}

#[test]
fn mutated() {
    suite(
        "workload (mutated)",
        file!(),
        1,
        mutate::mutated(seeds::workloads(), seeds::WORKLOAD_TOKENS),
        workload::check,
    );
}
