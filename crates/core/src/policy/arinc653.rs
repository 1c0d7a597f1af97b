//! ARINC 653: a static cyclic schedule (Xen's `xen/common/sched/arinc653.c`, after the
//! ARINC 653 avionics standard's partition scheduling).
//!
//! # Design note
//! - A **major frame** of length `major_frame` repeats forever from the instant the policy
//!   starts (the first instant it is called: the machine's start, or the moment of a hot
//!   swap — so a new table takes effect at once and its first major frame starts then).
//! - The major frame is a list of **minor frames** `(vcpu, runtime)`, laid end to end from
//!   its start. During a minor frame only its VCPU may run; if that VCPU has no work (or is
//!   not, or no longer, present) the pcpu idles. After the last minor frame the rest of the
//!   major frame is idle. Run time is never carried over: a VCPU with more work than its
//!   frame resumes in its next frame.
//! - `do_schedule` needs no state but the time: it finds the minor frame containing `now`
//!   and returns its VCPU (or IDLE) with a slice that ends at the frame's end, so frame
//!   boundaries are exact whatever the replenishment mode (the policy has no timers).
//! - **Wake** asks for a reschedule only when the VCPU owns the current minor frame and the
//!   pcpu idles. No tick: `do_schedule` runs at minor-frame boundaries (where the slice it
//!   returned ends) and on block and wake only, as in Xen.
//! - Budgets, priorities, weights: not read. `adjust` changes nothing; a new table comes
//!   with a hot swap.
//! - Tables are checked by [`validate_table`] (at most 64 minor frames, every runtime > 0,
//!   their sum ≤ the major frame). A table that breaks these rules is still handled without
//!   panicking: a zero major frame idles forever, zero runtimes are never current, and
//!   minor frames past the end of the major frame are cut off.
//!
//! Several pcpus: ARINC 653 runs partitioned, one instance per pcpu
//! ([`Partitioned`](super::partitioned::Partitioned)), each VCPU pinned to one pcpu. Every
//! pcpu runs the whole table with its own VCPUs, so a minor frame of a VCPU pinned to
//! another pcpu idles here, and the frames of different pcpus are aligned.
//!
//! A pcpu that joins the pool at run time (`cpupool-cpu-add`) gets a new instance that
//! follows the major frames of the pcpus already there ([`Policy::follow_grid`]): it
//! starts in the middle of the current minor frame, aligned with the others, as in Xen,
//! where all pcpus of a pool follow the one schedule.
//!
//! Known gap: one table for all pcpus of a pool (Xen's ARINC 653 scheduler also schedules a
//! single pcpu per table).

use crate::event::Cx;
use crate::model::{ParamError, PcpuId, VcpuId, VcpuParams};
use crate::policy::table::VcpuTable;
use crate::policy::{
    Arinc653Table, BudgetCounters, Decision, Policy, PolicyKind, Spent, TickInterval, VcpuView,
};
use crate::time::Nanos;

/// Xen's `ARINC653_MAX_DOMAINS_PER_SCHEDULE`.
pub const MAX_MINOR_FRAMES: usize = 64;

/// Checks an ARINC 653 table: at most [`MAX_MINOR_FRAMES`] entries, every runtime > 0, the
/// runtimes adding up to no more than the major frame (which must be > 0).
pub fn validate_table(table: &Arinc653Table) -> Result<(), String> {
    if table.major_frame.is_zero() {
        return Err("major_frame: must be greater than 0".to_string());
    }
    if table.minor_frames.len() > MAX_MINOR_FRAMES {
        return Err(format!(
            "minor frames: {} entries, at most {MAX_MINOR_FRAMES} allowed",
            table.minor_frames.len()
        ));
    }
    let mut total = Nanos::ZERO;
    for (i, frame) in table.minor_frames.iter().enumerate() {
        if frame.runtime.is_zero() {
            return Err(format!("minor frame {i}: runtime must be greater than 0"));
        }
        total = total
            .checked_add(frame.runtime)
            .ok_or_else(|| "minor frames: runtimes overflow the time type".to_string())?;
    }
    if total > table.major_frame {
        return Err(format!(
            "minor frames: runtimes add up to {total}, above the major frame {}",
            table.major_frame
        ));
    }
    Ok(())
}

/// The ARINC 653 policy for one pcpu.
pub struct Arinc653 {
    table: Arinc653Table,
    /// When the first major frame starts; set at the first call that knows the time.
    epoch: Option<Nanos>,
    /// Whether each present VCPU has work.
    has_work: VcpuTable<bool>,
    /// What the last `do_schedule` chose (None = IDLE).
    current: Option<VcpuId>,
}

impl Arinc653 {
    pub fn new(_pcpus: u32, table: Arinc653Table) -> Arinc653 {
        Arinc653 {
            table,
            epoch: None,
            has_work: VcpuTable::new(),
            current: None,
        }
    }

    fn start_clock(&mut self, now: Nanos) -> Nanos {
        *self.epoch.get_or_insert(now)
    }

    /// The owner of the minor frame containing `now` (None in the idle remainder of the
    /// major frame) and the time left until that frame ends. None for a zero major frame.
    fn frame_at(&self, epoch: Nanos, now: Nanos) -> Option<(Option<VcpuId>, Nanos)> {
        let major = self.table.major_frame;
        if major.is_zero() {
            return None;
        }
        let into_major = Nanos((now - epoch).as_ns() % major.as_ns());
        let mut frame_start = Nanos::ZERO;
        for frame in &self.table.minor_frames {
            let frame_end = frame_start.checked_add(frame.runtime).unwrap_or(Nanos::MAX);
            if frame_end > major {
                break;
            }
            if into_major < frame_end {
                return Some((Some(frame.vcpu), frame_end - into_major));
            }
            frame_start = frame_end;
        }
        Some((None, major - into_major))
    }

    /// Present and has work (a table may name VCPUs that are absent).
    fn is_ready(&self, vcpu: VcpuId) -> bool {
        self.has_work.try_get(vcpu).copied().unwrap_or(false)
    }
}

impl Policy for Arinc653 {
    fn kind(&self) -> PolicyKind {
        PolicyKind::Arinc653
    }

    /// ARINC 653 reads no VCPU parameters: the table says everything.
    fn validate(&self, _params: &VcpuParams) -> Result<(), ParamError> {
        Ok(())
    }

    fn insert_vcpu(&mut self, cx: &mut Cx, vcpu: VcpuId, _params: &VcpuParams) {
        self.start_clock(cx.now);
        self.has_work.insert(vcpu, false);
    }

    fn remove_vcpu(&mut self, _cx: &mut Cx, vcpu: VcpuId) {
        if self.current == Some(vcpu) {
            self.current = None;
        }
        self.has_work.remove(vcpu);
    }

    fn wake(&mut self, cx: &mut Cx, vcpu: VcpuId) -> bool {
        let epoch = self.start_clock(cx.now);
        *self.has_work.get_mut(vcpu) = true;
        self.current.is_none()
            && matches!(self.frame_at(epoch, cx.now), Some((Some(owner), _)) if owner == vcpu)
    }

    fn sleep(&mut self, _cx: &mut Cx, vcpu: VcpuId) -> bool {
        *self.has_work.get_mut(vcpu) = false;
        self.current == Some(vcpu)
    }

    fn burn(&mut self, _cx: &mut Cx, _pcpu: PcpuId, _ran: Nanos, _spent: Spent) {}

    /// No tick: `do_schedule` runs at minor-frame boundaries (the slice ends there) and on
    /// block and wake only.
    fn tick_interval(&self) -> TickInterval {
        TickInterval::None
    }

    fn do_schedule(&mut self, cx: &mut Cx, _pcpu: PcpuId) -> Decision {
        let epoch = self.start_clock(cx.now);
        let decision = match self.frame_at(epoch, cx.now) {
            None => Decision::IDLE,
            Some((owner, left)) => Decision {
                run: owner.filter(|&v| self.is_ready(v)),
                slice: Some(left),
            },
        };
        self.current = decision.run;
        decision
    }

    fn next_timer(&self) -> Option<Nanos> {
        None
    }

    fn handle_timer(&mut self, _cx: &mut Cx) -> bool {
        false
    }

    fn adjust(&mut self, _cx: &mut Cx, _vcpu: VcpuId, _params: &VcpuParams) -> bool {
        false
    }

    fn view(&self, _vcpu: VcpuId) -> VcpuView {
        VcpuView::default()
    }

    fn counters(&self, _vcpu: VcpuId) -> BudgetCounters {
        BudgetCounters::default()
    }

    fn check_invariants(&self) -> Result<(), String> {
        if let Some(c) = self.current {
            if !self.has_work.contains(c) {
                return Err(format!("runs vcpu {c:?}, which is not present"));
            }
            if !self.table.minor_frames.iter().any(|f| f.vcpu == c) {
                return Err(format!("runs vcpu {c:?}, which owns no minor frame"));
            }
        }
        Ok(())
    }

    fn grid_origin(&self) -> Option<Nanos> {
        self.epoch
    }

    fn follow_grid(&mut self, origin: Nanos) {
        self.epoch = Some(origin);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::EventLog;
    use crate::policy::MinorFrame;

    fn ms(x: u64) -> Nanos {
        Nanos::from_ms(x)
    }

    fn table(major: u64, frames: &[(u32, u64)]) -> Arinc653Table {
        Arinc653Table {
            major_frame: ms(major),
            minor_frames: frames
                .iter()
                .map(|&(v, r)| MinorFrame {
                    vcpu: VcpuId(v),
                    runtime: ms(r),
                })
                .collect(),
        }
    }

    #[test]
    fn tables_are_checked() {
        assert_eq!(validate_table(&table(10, &[(0, 3), (1, 7)])), Ok(()));
        assert_eq!(validate_table(&table(10, &[])), Ok(()));
        assert!(validate_table(&table(10, &[(0, 3), (1, 8)])).is_err());
        assert!(validate_table(&table(10, &[(0, 3), (1, 0)])).is_err());
        assert!(validate_table(&table(0, &[])).is_err());
        let many: Vec<(u32, u64)> = (0..65).map(|v| (v, 1)).collect();
        assert!(validate_table(&table(100, &many)).is_err());
        assert_eq!(validate_table(&table(100, &many[..64])), Ok(()));
    }

    #[test]
    fn frames_are_found_from_the_epoch() {
        let a = Arinc653::new(1, table(10, &[(0, 3), (1, 2)]));
        let epoch = ms(100);
        assert_eq!(a.frame_at(epoch, ms(100)), Some((Some(VcpuId(0)), ms(3))));
        assert_eq!(a.frame_at(epoch, ms(103)), Some((Some(VcpuId(1)), ms(2))));
        assert_eq!(a.frame_at(epoch, ms(105)), Some((None, ms(5))));
        assert_eq!(a.frame_at(epoch, ms(119)), Some((None, ms(1))));
        assert_eq!(a.frame_at(epoch, ms(121)), Some((Some(VcpuId(0)), ms(2))));
    }

    #[test]
    fn broken_tables_do_not_panic() {
        let mut log = EventLog::new(false);
        let mut cx = Cx {
            now: ms(0),
            log: &mut log,
        };
        let mut zero = Arinc653::new(1, table(0, &[(0, 1)]));
        zero.insert_vcpu(&mut cx, VcpuId(0), &VcpuParams::server(ms(1), ms(1), 0));
        assert!(!zero.wake(&mut cx, VcpuId(0)));
        assert_eq!(zero.do_schedule(&mut cx, PcpuId(0)), Decision::IDLE);
        let long = Arinc653::new(1, table(4, &[(0, 3), (1, 3)]));
        assert_eq!(long.frame_at(ms(0), ms(3)), Some((None, ms(1))), "cut off");
    }
}
