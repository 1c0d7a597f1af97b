//! The plan: what the seats must do, in which order, to make every pcpu run what the
//! core decided — pure (no system call), so that it is tested without real time.
//!
//! # Design note
//! After the core's decisions at `now`, each seat runs what `activity(pcpu)` says: a
//! VCPU's guest or IDLE (the spinner; modelled overhead is IDLE too). A seat whose target
//! changed switches, in three phases over all seats, never one seat after another:
//! 1. **leave**: every switching seat stops the VCPU it ran ([`Step::Stop`]) or parks
//!    its spinner ([`Step::Park`]);
//! 2. **move**: a VCPU to run on a seat whose host cpu is not the one its guest is pinned
//!    to has its guest's threads re-pinned there ([`Step::Move`], an affinity change) —
//!    under a global policy (RTDS global EDF, the global fixed-priority servers) the core
//!    moves VCPUs between pcpus, and its guest follows; under a partitioned one a VCPU
//!    stays on its pcpu and its guest moves at most once, at its first run;
//! 3. **enter**: every switching seat resumes its new VCPU ([`Step::Resume`]) or spins
//!    ([`Step::Spin`]).
//!
//! Why phases: a global decision can hand pcpu 0's VCPU to pcpu 1 and give pcpu 0
//! another. Switching seat by seat, seat 1 would resume the VCPU and seat 0 then stop it
//! (it ran there); with the phases it is stopped, moved, and resumed once, and no VCPU's
//! guest is ever resumed on two seats.
//!
//! A move counts where the guest had been placed by an earlier run (`from` is `Some`),
//! which is when the core counts a migration (a VCPU resuming on a pcpu other than the
//! one it last ran on): the test `several_pcpus` checks that the two counts agree.

use rtvmm_core::machine::{Activity, Machine};
use rtvmm_core::model::{PcpuId, VcpuId};

/// What a seat runs: a VCPU's guest or IDLE.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runs {
    Idle,
    Vcpu(VcpuId),
}

/// A seat as the plan sees it: its pcpu, its host cpu, what it runs now (`None`: nothing
/// yet — before the first decision — or a VCPU of a domain that was removed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeatView {
    pub pcpu: PcpuId,
    pub cpu: usize,
    pub runs: Option<Runs>,
}

/// One thing to do, in order. `seat` is an index into the seats given to [`plan`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Seat `seat` stops the guest of `vcpu` (it ran there).
    Stop { seat: usize, vcpu: VcpuId },
    /// Seat `seat` parks its spinner.
    Park { seat: usize },
    /// The guest of `vcpu` is re-pinned from host cpu `from` (`None`: never placed by a
    /// run) to `to`; it is stopped.
    Move {
        vcpu: VcpuId,
        from: Option<usize>,
        to: usize,
    },
    /// Seat `seat` resumes the guest of `vcpu`, pinned to the seat's cpu.
    Resume { seat: usize, vcpu: VcpuId },
    /// Seat `seat` runs its spinner.
    Spin { seat: usize },
}

/// What `pcpu` is to run after the core's decisions: `activity(pcpu)`, overhead as IDLE.
pub fn target(machine: &Machine, pcpu: PcpuId) -> Runs {
    match machine.activity(pcpu) {
        Activity::Running(v) => Runs::Vcpu(v),
        Activity::Idle | Activity::Overhead { .. } => Runs::Idle,
    }
}

/// The steps that make `seats` run what the core decided — `target(pcpu)`, normally
/// [`target`] of the machine — appended to `steps` (cleared first; the caller keeps its
/// room between calls, so the loop allocates nothing). `pinned(v)`: the host cpu the
/// guest of `v` is pinned to (`None`: not placed by a run).
pub fn plan(
    seats: &[SeatView],
    target: impl Fn(PcpuId) -> Runs,
    pinned: impl Fn(VcpuId) -> Option<usize>,
    steps: &mut Vec<Step>,
) {
    steps.clear();
    let switching = |s: &SeatView| s.runs != Some(target(s.pcpu));
    for (seat, s) in seats.iter().enumerate().filter(|(_, s)| switching(s)) {
        match s.runs {
            Some(Runs::Vcpu(vcpu)) => steps.push(Step::Stop { seat, vcpu }),
            Some(Runs::Idle) => steps.push(Step::Park { seat }),
            None => {}
        }
    }
    for s in seats.iter().filter(|s| switching(s)) {
        if let Runs::Vcpu(vcpu) = target(s.pcpu) {
            let from = pinned(vcpu);
            if from != Some(s.cpu) {
                steps.push(Step::Move {
                    vcpu,
                    from,
                    to: s.cpu,
                });
            }
        }
    }
    for (seat, s) in seats.iter().enumerate().filter(|(_, s)| switching(s)) {
        steps.push(match target(s.pcpu) {
            Runs::Vcpu(vcpu) => Step::Resume { seat, vcpu },
            Runs::Idle => Step::Spin { seat },
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const V0: VcpuId = VcpuId(0);
    const V1: VcpuId = VcpuId(1);
    const V2: VcpuId = VcpuId(2);

    fn seat(p: u32, cpu: usize, runs: Option<Runs>) -> SeatView {
        SeatView {
            pcpu: PcpuId(p),
            cpu,
            runs,
        }
    }

    /// Global EDF hands pcpu 0's VCPU to the other pcpu (a tickle):
    /// ```text
    ///            before        after
    /// pcpu 0     v0 (cpu 4)    v1
    /// pcpu 1     v1 (cpu 6)    v2 (never ran)
    /// ```
    /// Both seats leave first, then v1 moves 6 → 4 and v2 is placed on 6, then both
    /// enter: v1 is never resumed while seat 1 still runs it.
    #[test]
    fn a_vcpu_handed_to_another_pcpu_is_stopped_moved_and_resumed_once() {
        let seats = [
            seat(0, 4, Some(Runs::Vcpu(V0))),
            seat(1, 6, Some(Runs::Vcpu(V1))),
        ];
        let after = |p: PcpuId| [Runs::Vcpu(V1), Runs::Vcpu(V2)][p.0 as usize];
        let pinned = |v: VcpuId| [Some(4), Some(6), None][v.index()];
        let mut steps = Vec::new();
        plan(&seats, after, pinned, &mut steps);
        assert_eq!(
            steps,
            [
                Step::Stop { seat: 0, vcpu: V0 },
                Step::Stop { seat: 1, vcpu: V1 },
                Step::Move {
                    vcpu: V1,
                    from: Some(6),
                    to: 4
                },
                Step::Move {
                    vcpu: V2,
                    from: None,
                    to: 6
                },
                Step::Resume { seat: 0, vcpu: V1 },
                Step::Resume { seat: 1, vcpu: V2 },
            ]
        );
    }

    /// Nothing changes: no step. Then pcpu 1 goes from IDLE to v2, already pinned there
    /// (a partitioned VCPU): park, resume, no move; pcpu 0 untouched.
    #[test]
    fn only_switching_seats_act_and_a_guest_where_it_is_is_not_moved() {
        let mut seats = [
            seat(0, 4, Some(Runs::Vcpu(V0))),
            seat(1, 6, Some(Runs::Idle)),
        ];
        let pinned = |v: VcpuId| [Some(4), None, Some(6)][v.index()];
        let mut steps = vec![Step::Spin { seat: 9 }];
        plan(
            &seats,
            |p| seats[p.0 as usize].runs.unwrap(),
            pinned,
            &mut steps,
        );
        assert_eq!(steps, [], "cleared, nothing to do");
        let after = |p: PcpuId| [Runs::Vcpu(V0), Runs::Vcpu(V2)][p.0 as usize];
        plan(&seats, after, pinned, &mut steps);
        assert_eq!(
            steps,
            [Step::Park { seat: 1 }, Step::Resume { seat: 1, vcpu: V2 }]
        );
        // The first decision of a run: nothing to leave.
        seats[0].runs = None;
        plan(&seats[..1], |_| Runs::Idle, pinned, &mut steps);
        assert_eq!(steps, [Step::Spin { seat: 0 }]);
    }
}
