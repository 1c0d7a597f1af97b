//! The IDLE VCPU: a `SCHED_FIFO` spinner pinned to the managed cpu.
//!
//! # Design note
//! When the scheduler picks IDLE (or is in modelled overhead), every domain is stopped and
//! the spinner runs, so the core never halts (a halted core collects the host's steal time
//! and wakes late, `docs/host.md`) and idle time is time someone visibly spent. While a domain
//! runs the spinner is parked on a futex, so that it takes nothing from a domain whose
//! threads are not real-time (an external process). It answers the switch probe like a
//! guest does (its [`Shared`] page has no tasks), so the switch to IDLE is measured too.

use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::shm::{Shared, ShmError};
use crate::sys;

const PARKED: u32 = 0;
const SPINNING: u32 = 1;
const EXIT: u32 = 2;

/// The spinner thread; stopped and joined when dropped.
pub struct IdleSpinner {
    state: Arc<AtomicU32>,
    page: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl IdleSpinner {
    /// Starts the spinner on `cpu` at `SCHED_FIFO` `priority` (`None`: stays
    /// `SCHED_OTHER`, best effort), parked; `start` is the run's time 0 (for its probe
    /// answers).
    pub fn start(cpu: usize, priority: Option<u32>, start: u64) -> Result<IdleSpinner, ShmError> {
        let state = Arc::new(AtomicU32::new(PARKED));
        let page = Arc::new(Shared::create(0, 1, 0, u32::MAX)?);
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<io::Result<()>>();
        let thread = {
            let state = Arc::clone(&state);
            let page = Arc::clone(&page);
            std::thread::Builder::new()
                .name("rtvmm-idle".into())
                .spawn(move || {
                    let setup = sys::pin_to(0, cpu)
                        .and_then(|()| priority.map_or(Ok(()), |p| sys::set_fifo(0, p)));
                    let failed = setup.is_err();
                    let _ = ready_tx.send(setup);
                    if failed {
                        return;
                    }
                    spin(&state, &page, start)
                })
                .map_err(ShmError::Io)?
        };
        let spinner = IdleSpinner {
            state,
            page,
            thread: Some(thread),
        };
        match ready_rx.recv() {
            Ok(Ok(())) => Ok(spinner),
            Ok(Err(e)) => Err(ShmError::Io(e)),
            Err(_) => Err(ShmError::Io(io::Error::other("the IDLE spinner died"))),
        }
    }

    /// Runs the spinner (IDLE picked).
    pub fn spin(&self) {
        self.state.store(SPINNING, Ordering::Release);
        sys::futex_wake_all(&self.state, false);
    }

    /// Parks it (a domain picked): it stops at its next look.
    pub fn park(&self) {
        self.state.store(PARKED, Ordering::Release);
    }

    /// Its probe page (the executor probes it like a domain).
    pub fn page(&self) -> &Shared {
        &self.page
    }
}

fn spin(state: &AtomicU32, page: &Shared, start: u64) {
    loop {
        match state.load(Ordering::Acquire) {
            PARKED => sys::futex_wait_until(state, PARKED, None, false),
            SPINNING => {
                page.answer_probe(|| sys::mono_ns().saturating_sub(start));
                std::hint::spin_loop();
            }
            _ => return,
        }
    }
}

impl Drop for IdleSpinner {
    fn drop(&mut self) {
        self.state.store(EXIT, Ordering::Release);
        sys::futex_wake_all(&self.state, false);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
