//! libFuzzer's bytes as a scenario file: rtvmm check, the normalised form, a short simulation with every invariant checked (`rtvmm_fuzz::scenario::check`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The binary refuses a file that is not UTF-8 before any reader sees it.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(failure) = rtvmm_fuzz::scenario::check(text) {
        panic!("{failure}");
    }
});
