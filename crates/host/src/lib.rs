//! # rtvmm-host: the scheduling core in real time on Linux
//!
//! - [`ctl`]: live control — the Unix socket, its protocol, the `rtvmm ctl` client, and
//!   the one function through which a running executor applies a command to its machine.
pub mod ctl;
