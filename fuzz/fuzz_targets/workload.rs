//! libFuzzer's bytes as a workload file: the reader and its round trip (`rtvmm_fuzz::workload::check`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The binary refuses a file that is not UTF-8 before any reader sees it.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Err(failure) = rtvmm_fuzz::workload::check(text) {
        panic!("{failure}");
    }
});
