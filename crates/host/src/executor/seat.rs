//! A seat: one managed pcpu, its scheduler-side state — the host cpu it is on, its IDLE
//! VCPU (the spinner), the enforcement of whatever the core's `activity(pcpu)` says
//! (which VCPU's guest runs, or IDLE: leaving what it ran and entering what it runs, in
//! the order the plan gives, [`super::plan`]), the switch probes, and its timing samples.
//! A seat knows its [`PcpuId`] and its host cpu; nothing else in the executor names a
//! pcpu.

use rtvmm_core::machine::Machine;
use rtvmm_core::model::PcpuId;
use rtvmm_core::Nanos;

use super::domains::{Domain, Slots, Target};
use crate::enforce::Enforcer;
use crate::external::Hold;
use crate::idle::IdleSpinner;
use crate::shm::Shared;
use crate::sys;
use crate::HostError;

/// One managed pcpu of the run.
pub(super) struct Seat {
    /// The machine's pcpu.
    pub(super) pcpu: PcpuId,
    /// The host cpu it runs on.
    pub(super) cpu: usize,
    /// Its IDLE VCPU, started just before time 0.
    pub(super) spinner: Option<IdleSpinner>,
    /// What it is enforced to run now (`None`: nothing yet, or a removed domain's VCPU).
    pub(super) current: Option<Target>,
    /// The target whose page was asked for a switch probe, until it answers.
    pub(super) probed: Option<Target>,
    pub(super) measures: Measures,
    /// The cpu's steal time when the loop began.
    pub(super) steal_at_start: Option<u64>,
}

impl Seat {
    pub(super) fn new(pcpu: PcpuId, cpu: usize, measures: Measures) -> Seat {
        Seat {
            pcpu,
            cpu,
            spinner: None,
            current: None,
            probed: None,
            measures,
            steal_at_start: None,
        }
    }

    fn spinner(&self) -> &IdleSpinner {
        self.spinner.as_ref().expect("started")
    }

    /// The answer to the last switch probe, if any: the switch's latency.
    pub(super) fn read_probe(&mut self, slots: &Slots) {
        let Some(target) = self.probed else { return };
        let Some(page) = self.page(target, slots) else {
            self.probed = None;
            return;
        };
        if let Some((at, ran)) = page.probe_answer() {
            page.clear_answer();
            if ran >= at {
                self.measures.switches.push(ran - at);
            }
            self.probed = None;
        }
    }

    /// The page that answers switch probes for `target` (an external domain has none).
    fn page<'a>(&'a self, target: Target, slots: &'a Slots) -> Option<&'a Shared> {
        match target {
            Target::Idle => Some(self.spinner().page()),
            Target::Vcpu { domain, vcpu } => slots[domain].domain.shared(vcpu),
        }
    }

    /// Leaves what the seat ran (the plan's `Stop` or `Park`): stops the guest of the
    /// VCPU it ran, or parks the spinner; forgets an unanswered switch probe.
    pub(super) fn leave(
        &mut self,
        machine: &Machine,
        slots: &mut Slots,
        enforcer: &mut dyn Enforcer,
    ) -> Result<(), HostError> {
        match self.current.take() {
            Some(Target::Vcpu { domain, vcpu }) => hold(machine, slots, enforcer, domain, vcpu)?,
            Some(Target::Idle) => self.spinner().park(),
            None => {}
        }
        if let Some(old) = self.probed.take() {
            if let Some(page) = self.page(old, slots) {
                page.clear_answer();
            }
        }
        Ok(())
    }

    /// Enters `target` (the plan's `Resume` or `Spin`, after [`Self::leave`]): resumes
    /// the VCPU's guest (already pinned to this seat's cpu) or spins, and probes the
    /// switch.
    pub(super) fn enter(
        &mut self,
        now: Nanos,
        target: Target,
        slots: &mut Slots,
        enforcer: &mut dyn Enforcer,
    ) -> Result<(), HostError> {
        let probed = match self.page(target, slots) {
            Some(page) => {
                page.probe(now.as_ns());
                Some(target)
            }
            None => None,
        };
        match target {
            Target::Vcpu { domain, vcpu } => {
                let slot = &mut slots[domain];
                let resumed = match &mut slot.domain {
                    Domain::Process(p) => enforcer.resume(&p.guest(vcpu).member),
                    Domain::External(e) => e.set_hold(Hold::Running, enforcer),
                };
                resumed.map_err(|e| {
                    HostError::io(format!("domain '{}': resuming it", slot.domain.spec().name))(e)
                })?
            }
            Target::Idle => self.spinner().spin(),
        }
        self.current = Some(target);
        self.probed = probed;
        Ok(())
    }

    /// Times the core's decisions due at `now` that ran `do_schedule` on this seat's
    /// pcpu: `decide` is the machine's `handle_timeout(now)`.
    pub(super) fn timed(&mut self, machine: &mut Machine, decide: impl FnOnce(&mut Machine)) {
        let calls = machine.pcpu_stats(self.pcpu).do_schedule_calls;
        let before = sys::mono_ns();
        decide(machine);
        let after = sys::mono_ns();
        if machine.pcpu_stats(self.pcpu).do_schedule_calls != calls {
            self.measures.do_schedule.push(after - before);
        }
    }

    /// Forgets domain `d`'s VCPU if this seat runs or probes it (the domain is ended):
    /// returns the VCPU it ran, for the caller to stop.
    pub(super) fn forget(&mut self, d: usize) -> Option<usize> {
        let of_d =
            |t: Option<Target>| matches!(t, Some(Target::Vcpu { domain, .. }) if domain == d);
        if of_d(self.probed) {
            self.probed = None;
        }
        match self.current {
            Some(Target::Vcpu { domain, vcpu }) if domain == d => {
                self.current = None;
                Some(vcpu)
            }
            _ => None,
        }
    }
}

/// Stops VCPU `j` of domain `d` (not running): a process domain's guest of that VCPU by
/// the backend; an external domain (one VCPU) stopped while it has work, parked while it
/// has none.
pub(super) fn hold(
    machine: &Machine,
    slots: &mut Slots,
    enforcer: &mut dyn Enforcer,
    d: usize,
    j: usize,
) -> Result<(), HostError> {
    let has_work = machine.has_work(slots[d].domain.vcpus()[j]);
    let slot = &mut slots[d];
    let stopped = match &mut slot.domain {
        Domain::Process(p) => enforcer.stop(&p.guest(j).member),
        Domain::External(e) => {
            let hold = if has_work {
                Hold::Stopped
            } else {
                Hold::Parked
            };
            e.set_hold(hold, enforcer)
        }
    };
    stopped
        .map_err(|e| HostError::io(format!("domain '{}': stopping it", slot.domain.spec().name))(e))
}

/// The timing samples of a seat's scheduler thread.
#[derive(Default)]
pub(super) struct Measures {
    /// Time in `handle_timeout` calls that ran `do_schedule` on the seat's pcpu.
    pub(super) do_schedule: Vec<u64>,
    /// Decision instant to the next VCPU (or IDLE) really running, per switch.
    pub(super) switches: Vec<u64>,
    /// The cost of one clock read, measured before the run.
    pub(super) clock_read: u64,
}

/// The most samples of each kind reserved before the run (8 MiB each).
const RESERVED_SAMPLES: u64 = 1 << 20;

impl Measures {
    /// Room for a run of `duration` at `quantum` (about one sample of each kind per
    /// quantum), reserved before the run: memory is locked, so a vector growing in the
    /// loop would fault its new pages in there.
    pub(super) fn for_run(duration: Nanos, quantum: Nanos) -> Measures {
        Measures {
            do_schedule: Measures::room(duration, quantum),
            switches: Measures::room(duration, quantum),
            ..Measures::default()
        }
    }

    /// Room for one kind of sample, about one per quantum.
    pub(super) fn room(duration: Nanos, quantum: Nanos) -> Vec<u64> {
        let samples = (duration.as_ns() / quantum.as_ns().max(1) + 64).min(RESERVED_SAMPLES);
        Vec::with_capacity(samples as usize)
    }
}
