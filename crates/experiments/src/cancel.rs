//! The cancel flag: the caller sets it (the binary does on SIGINT and SIGTERM); sweeps and
//! real-time runs read it. It sits below the driver and the options, which both carry it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A cancel flag: clones share it. The library only reads it; no signal handler is
/// installed here (the binary owns signals).
#[derive(Clone, Debug, Default)]
pub struct Cancel(Arc<AtomicBool>);

impl Cancel {
    pub fn new() -> Cancel {
        Cancel::default()
    }

    /// Asks every sweep that reads this flag to start no more runs.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// The flag itself, for a signal handler to set.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }
}

/// Two handles are equal when they share one flag.
impl PartialEq for Cancel {
    fn eq(&self, other: &Cancel) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for Cancel {}
