//! The experiments crate's integration tests: every experiment in `--quick` mode (with
//! durations shortened further where the debug build needs it), its files and the facts
//! that follow from the theory; plus the framework (list, interruption, compare, gen).
//! One binary: `csa` holds the 2012 experiments, `eval` the evaluation experiments,
//! `host_driver` the `--host` path of rtxen-overhead and rtxen-isolation (a stand-in
//! executor), `shard` the sharded sweeps and their merge, `draws` several task-set draws
//! (`--seeds`).
mod util;

mod capacity;
mod csa;
mod draws;
mod eval;
mod framework;
mod host_driver;
mod isolation;
mod multicore;
mod overhead;
mod quantum;
mod shard;
mod theory;
