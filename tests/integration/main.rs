//! The `rtvmm` binary's integration tests: one binary, run as a user runs the program.
//!
//! - `cli`: exit codes, what each command prints, the files `sim` writes, and that no
//!   output ever destroys an input or is left half-written.
//! - `analyze`: `rtvmm analyze` and `rtvmm check --admit` — tables, JSON, emitted
//!   scenarios, `xl` lines, CARTS input.
//! - `long_runs`: the announcement of a long run and Ctrl-C keeping what was simulated.
//! - `msrv`: the declared minimum Rust version is true of every locked dependency.
//! - `readme`: every `$ rtvmm …` command of the README's `console` blocks runs as shown
//!   (its exit status and the first line of output the README shows).
//! - `ctl`: `rtvmm ctl` against a control socket served by a stand-in executor: output,
//!   exit codes, refusals that change nothing, another user refused; and against a live
//!   `rtvmm host run --ctl` (real time: skipped without the privileges).
//! - `host`: `rtvmm host run` stopped by SIGINT and SIGTERM keeps its results, exits 130
//!   and 143, and leaves nothing behind; a killed watchdog stops it (exit 1) unless
//!   `--carry-on-without-watchdog` (real time: skipped without root); `host cleanup`.
//! - `host_experiments`: `rtvmm experiment rtxen-overhead|rtxen-isolation --host` in
//!   real time (root; skipped with the reason otherwise; run under
//!   `flock /tmp/rtvmm-rt.lock` when others share the machine), and its refusals.
//! - `layers`: inside each crate, no import cycle among its top-level modules, and an
//!   import up a floor (to a module declared later in `lib.rs`) only with a reason.
//! - `bounds`: the input size limit on every file read, generators' count limits,
//!   `gen --out` and `--force`, and plain messages for the smaller reproducers of issue 23.
//! - `partial`: a `sim` stopped by a signal marks its JSON, jobs CSV and trace partial (a
//!   complete one carries no mark); an experiment's first signal stops even endless runs
//!   and writes what finished, marked partial; a second stops at once.
//! - `python`: the Python package's pytest suite (`crates/py/tests`), against a wheel built
//!   from this checkout, in a virtual environment under the target directory (skipped,
//!   saying why, without Python 3.8+ or pip's network).
//! - `shard`: `experiment NAME --shard I/N` and `experiment merge OUT DIR…`: a bad shard
//!   number refused, a shard stopped by a signal marked partial and named by merge's
//!   refusal, merged shards equal to the unsharded run.
//! - `sweep`: `gen --count K --shard I/N` and `gen merge`, `sweep DIR --shard I/N` and
//!   `sweep merge`: merged shards equal the unsharded files and table byte for byte, a
//!   bad file is a row (or, with `--fail-fast`, the error), refusals name the shard and
//!   the option, a signal keeps the finished rows marked partial.
//! - `slurm`: `tools/slurm/submit.sh` runs a 4-shard study and its merge on a private
//!   one-node Slurm started by the test (root; installs slurm and munge with apt if
//!   missing; skipped with the reason otherwise), equal to the unsharded run.
//! - `common`: running the binary and finding the examples.

mod common;

mod analyze;
mod bounds;
mod cli;
mod ctl;
#[cfg(target_os = "linux")]
mod host;
#[cfg(target_os = "linux")]
mod host_experiments;
mod layers;
mod long_runs;
mod msrv;
mod partial;
mod python;
mod readme;
mod shard;
mod slurm;
mod sweep;
