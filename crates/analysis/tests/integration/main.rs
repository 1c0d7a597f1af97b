//! Integration tests of rtvmm-analysis, one binary.
//!
//! * `worked_examples` — the papers' and the spec's examples, values derived by hand.
//! * `oracle` — sbf and flat FP RTA against the `response-time-analysis` crate.
//! * `properties` — Algorithm 1 vs brute force, monotonicity, MinExec minimality, Auto vs
//!   General, critical time points vs their definition, EDF test vs a naive check.
//! * `hierarchical_sim` — Davis & Burns bounds and Lemma 1 against a discrete-time simulator.
//! * `carts_input` — the CARTS reader, its errors, and CARTS → system analysis → JSON.
//! * `bounded_analysis` — issue 13's inputs with periods orders of magnitude apart, to values
//!   derived by hand, and the typed error where exact analysis would take too long.
//!
//! `util` holds the independent reference implementations the tests compare against.

mod bounded_analysis;
mod carts_input;
mod hierarchical_sim;
mod oracle;
mod properties;
mod util;
mod worked_examples;
