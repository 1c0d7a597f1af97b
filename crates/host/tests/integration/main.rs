//! The host crate's integration tests: one binary.
//!
//! - `ctl`: live control end to end — the socket's mode and life, a stand-in executor that
//!   applies commands to a real `Machine`, the client library, malformed and
//!   unauthorised requests (a child switched to an unprivileged uid, when run as root),
//!   and time-outs on both sides.

mod ctl;
