//! libFuzzer's bytes as the tape of choices of the scenario generator
//! (`rtvmm_fuzz::scenario::generate`): libFuzzer's coverage guidance steers the
//! structure-aware generator, so most inputs are scenarios that reach the simulator.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|tape: &[u8]| {
    let text = rtvmm_fuzz::scenario::generate(tape);
    if let Err(failure) = rtvmm_fuzz::scenario::check(&text) {
        panic!("{failure}\ninput:\n{text}");
    }
});
