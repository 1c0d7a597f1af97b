//! The cancel flag: the caller sets it (the binary does on SIGINT and SIGTERM); sweeps and
//! real-time runs read it. It sits below the driver and the options, which both carry it.
//!
//! A simulated run reads it too, so that a signal stops a long run within moments rather
//! than at its end: the sweep makes its flag the running thread's ([`while_running`]), and
//! [`crate::system::simulate_with`] checks it every few thousand steps and stops with
//! [`crate::ExperimentError::Stopped`] (the run is then dropped, as a real-time one).
//! Through the thread rather than through every experiment's call of `simulate`, so that
//! no experiment can forget to pass it.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

thread_local! {
    /// The flag of the sweep whose run this thread is running.
    static CURRENT: RefCell<Option<Cancel>> = const { RefCell::new(None) };
}

/// Runs `f` with `cancel` as this thread's flag ([`is_current_cancelled`]).
pub(crate) fn while_running<R>(cancel: &Cancel, f: impl FnOnce() -> R) -> R {
    /// Puts the previous flag back, even when `f` panics.
    struct Restore(Option<Cancel>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = previous);
        }
    }
    let previous = CURRENT.with(|c| c.borrow_mut().replace(cancel.clone()));
    let _restore = Restore(previous);
    f()
}

/// Whether the flag of the run on this thread is set (false outside a sweep).
pub(crate) fn is_current_cancelled() -> bool {
    CURRENT.with(|c| c.borrow().as_ref().is_some_and(Cancel::is_cancelled))
}

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
