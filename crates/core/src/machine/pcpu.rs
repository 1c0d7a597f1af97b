//! Per-pcpu state: what a pcpu is doing ([`Activity`]), when its slice ends, its pending
//! reschedule and its next tick; and how the machine asks pcpus to decide again (a
//! reschedule request, Xen's "softirq", or a tickle the policy aims).

use super::{Machine, PcpuStats};
use crate::cpuset::CpuSet;
use crate::event::ScheduleReason;
use crate::model::VcpuId;
use crate::policy::Decision;
use crate::time::Nanos;

/// What a pcpu is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activity {
    Idle,
    Running(VcpuId),
    /// Scheduler overhead from `since` (the `do_schedule` call) until `until`; then
    /// `decision` takes effect.
    Overhead {
        since: Nanos,
        until: Nanos,
        decision: Decision,
        reason: ScheduleReason,
    },
}

#[derive(Clone, Debug)]
pub(super) struct Pcpu {
    /// Its cpupool and its index there; `None`: a free pcpu (in no pool), which idles.
    pub(super) pool: Option<(u32, u32)>,
    pub(super) activity: Activity,
    pub(super) accounted_to: Nanos,
    /// When the current decision's slice runs out.
    pub(super) slice_end: Option<Nanos>,
    /// A reschedule is due at once ("softirq raised"), for this reason.
    pub(super) resched: Option<ScheduleReason>,
    /// The next tick; `None` when the policy does not tick.
    pub(super) next_tick: Option<Nanos>,
    /// The decision in effect before the current overhead (None = IDLE).
    pub(super) last_run: Option<VcpuId>,
    pub(super) stats: PcpuStats,
}

impl Pcpu {
    pub(super) fn new(
        pool: Option<(u32, u32)>,
        next_tick: Option<Nanos>,
        accounted_to: Nanos,
    ) -> Pcpu {
        Pcpu {
            pool,
            activity: Activity::Idle,
            accounted_to,
            slice_end: None,
            resched: pool.map(|_| ScheduleReason::Reconfigure),
            next_tick,
            last_run: None,
            stats: PcpuStats::default(),
        }
    }

    /// The VCPU that runs (or is about to run after overhead); None for IDLE.
    // Inline: the step (`step.rs`) asks it on every call, from another module.
    #[inline]
    pub(super) fn current(&self) -> Option<VcpuId> {
        match self.activity {
            Activity::Idle => None,
            Activity::Running(v) => Some(v),
            Activity::Overhead { decision, .. } => decision.run,
        }
    }

    /// Whatever it runs stops: it idles at once, or, in the middle of a scheduling
    /// overhead, when the overhead ends, with IDLE as the decision it pays for.
    fn stop(&mut self) {
        self.activity = match self.activity {
            Activity::Overhead { since, until, .. } => Activity::Overhead {
                since,
                until,
                decision: Decision::IDLE,
                reason: ScheduleReason::Reconfigure,
            },
            _ => Activity::Idle,
        };
        self.last_run = None;
        self.slice_end = None;
    }

    // Inline: the step (`step.rs`) asks it on every call, from another module.
    #[inline]
    pub(super) fn request(&mut self, reason: ScheduleReason) {
        self.resched = Some(self.resched.map_or(reason, |r| r.min(reason)));
    }
}

impl Machine {
    /// Asks every pcpu of `pool` to reschedule.
    pub(super) fn request_pool(&mut self, pool: usize, reason: ScheduleReason) {
        for &c in &self.pools[pool].cpus {
            self.pcpus[c as usize].request(reason);
        }
    }

    /// A hook of pool `pool`'s policy asked for a reschedule: on a pool of one pcpu, that
    /// pcpu; on several, the pcpus the policy names ([`Policy::tickle`]).
    pub(super) fn tickle(&mut self, pool: usize, reason: ScheduleReason) {
        let p = &self.pools[pool];
        if p.cpus.len() == 1 {
            self.pcpus[p.cpus[0] as usize].request(reason);
            return;
        }
        let targets = p.policy.tickle();
        for local in targets.iter() {
            if let Some(&c) = p.cpus.get(local as usize) {
                self.pcpus[c as usize].request(reason);
            }
        }
    }

    /// The pcpu `vcpu` runs on (or is about to run on, after overhead), if any.
    pub(super) fn pcpu_running(&self, vcpu: VcpuId) -> Option<usize> {
        self.pcpus.iter().position(|p| p.current() == Some(vcpu))
    }

    /// Stops `vcpu` wherever it runs (on the pcpus of `on`): the pcpu idles until it
    /// decides again, at once — or, in the middle of a scheduling overhead, when the
    /// overhead ends, with IDLE as the decision it was paying for.
    pub(super) fn deschedule(&mut self, vcpu: VcpuId, on: CpuSet) {
        for (c, p) in self.pcpus.iter_mut().enumerate() {
            if p.current() != Some(vcpu) || !on.contains(c as u32) {
                continue;
            }
            p.stop();
            p.request(ScheduleReason::Reconfigure);
        }
    }

    /// Makes pcpu `c` idle and asks it to decide again.
    pub(super) fn release_pcpu(&mut self, c: u32) {
        let p = &mut self.pcpus[c as usize];
        p.stop();
        p.next_tick = None;
        p.resched = None;
    }
}
