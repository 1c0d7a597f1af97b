//! A stand-in executor, for tests of the server, the client and the protocol: a thread
//! that drains the channel and answers with [`serve`] on a real [`Machine`], advanced on a
//! virtual clock (1 ms per millisecond waited; every domain always has work). It
//! schedules nothing for real; its figures are the core's for that virtual time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::machine::Machine;
use rtvmm_core::Nanos;
use rtvmm_scenario::Scenario;
use rtvmm_system::change::{Applied, ChangeError};
use rtvmm_system::Change;

use super::apply::{serve, Domains};
use super::server::Request;

/// The machine and the domain table of `scenario` at time 0, as the executor starts them:
/// its machine (pools, policies), its first domains joined through the one change path
/// (each VCPU with work from the start), its `[scheduler]` settings; the table drives
/// every pcpu of the machine. Its events are not played.
pub fn start(scenario: &Scenario) -> Result<(Machine, Domains), ChangeError> {
    let system = &scenario.system;
    let mut machine = system.machine().map_err(ChangeError::Swap)?;
    let pcpus = CpuSet::first(system.machine.pcpus.min(CpuSet::MAX));
    let mut domains = Domains::new(scenario.scheduler.clone()).driving(pcpus);
    for domain in &system.domains {
        let change = Change::AddDomain(domain.clone());
        let applied =
            domains.apply_change(&mut machine, Nanos::ZERO, &change, &system.policy_settings)?;
        if let Applied::Added { vcpus, .. } = applied {
            for v in vcpus {
                machine.wake(Nanos::ZERO, v);
            }
        }
    }
    Ok((machine, domains))
}

/// The machine and the domain table, shared with the stand-in's thread.
type Shared = Arc<Mutex<(Machine, Domains)>>;

/// A running stand-in executor; stopped when dropped.
pub struct StandIn {
    shared: Shared,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl StandIn {
    /// Starts serving `requests` on the machine of `scenario`: its machine settings, its
    /// initial policy and domains (each with work from the start), its `[scheduler]`
    /// settings. Its events are not played.
    pub fn from_scenario(
        scenario: &Scenario,
        requests: Receiver<Request>,
    ) -> Result<StandIn, ChangeError> {
        let (machine, domains) = start(scenario)?;
        Ok(StandIn::start(machine, domains, requests))
    }

    /// Starts serving `requests` on `machine`.
    pub fn start(machine: Machine, domains: Domains, requests: Receiver<Request>) -> StandIn {
        let shared: Shared = Arc::new(Mutex::new((machine, domains)));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let (shared, stop) = (Arc::clone(&shared), Arc::clone(&stop));
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let request = requests.recv_timeout(Duration::from_millis(1));
                    let mut guard = shared.lock().unwrap_or_else(|p| p.into_inner());
                    let (machine, domains) = &mut *guard;
                    let now = machine.now() + Nanos::from_ms(1);
                    while machine.poll_timeout() <= now {
                        let due = machine.poll_timeout().max(machine.now());
                        machine.handle_timeout(due);
                    }
                    machine.advance(now);
                    match request {
                        Ok(request) => {
                            // A domain added is left without work; one removed needs
                            // nothing more: there are no guests.
                            serve(request, machine, domains, now);
                        }
                        Err(RecvTimeoutError::Timeout) => {}
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
            })
        };
        StandIn {
            shared,
            stop,
            thread: Some(thread),
        }
    }

    /// Reads the machine and the domain table between two steps.
    pub fn with<T>(&self, f: impl FnOnce(&Machine, &Domains) -> T) -> T {
        let guard = self.shared.lock().unwrap_or_else(|p| p.into_inner());
        f(&guard.0, &guard.1)
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
