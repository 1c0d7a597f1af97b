//! The fuzzing suites, one binary: each reader on generated and on mutated inputs.
//!
//! `cargo test -p rtvmm-fuzz` runs a few cases of each from a fixed seed;
//! `RTVMM_FUZZ_CASES=1000000 cargo test --profile fuzz -p rtvmm-fuzz --test fuzz -- --nocapture`
//! runs a million inputs in all (shared by the suites' weights, out of 16) and prints
//! what each suite did. Failures are saved to `tests/proptest-regressions/` and re-run
//! first.
//!
//! - `scenario`: `rtvmm check` + a short simulation with every invariant checked (weight 4
//!   generated, 2 mutated);
//! - `carts`: the CARTS reader and, for small systems, the analysis (2 + 2);
//! - `workload`: the workload-file reader (2 + 1);
//! - `results`: `compare`'s reader of results JSON (2 + 1);
//! - `cli`: whole command lines of the built binary (`rtvmm_fuzz::cli`), counted apart
//!   (`RTVMM_FUZZ_CLI_CASES`).

mod carts;
mod cli;
mod results;
mod scenario;
mod workload;
