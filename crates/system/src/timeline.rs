//! Who ran when: the pcpu's schedule as a list of intervals, rebuilt from a recorded trace.
//! Made for tests that assert a hand-derived schedule exactly.

use rtvmm_core::event::CoreEvent;
use rtvmm_core::Nanos;

use crate::records::TraceEvent;

/// What occupied the pcpu during an interval.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slot {
    Idle,
    /// The VCPU of the named domain.
    Domain(String),
    Overhead,
}

/// `[start, end)` occupied by `slot`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interval {
    pub start: Nanos,
    pub end: Nanos,
    pub slot: Slot,
}

/// Rebuilds pcpu 0's schedule over `[0, end)` from a trace; adjacent intervals of the same
/// slot are merged. `names[vcpu]` names each VCPU's domain.
pub fn timeline(trace: &[(Nanos, TraceEvent)], names: &[String], end: Nanos) -> Vec<Interval> {
    let mut out: Vec<Interval> = Vec::new();
    let mut push = |start: Nanos, stop: Nanos, slot: Slot| {
        if stop <= start {
            return;
        }
        if let Some(last) = out.last_mut() {
            if last.slot == slot && last.end == start {
                last.end = stop;
                return;
            }
        }
        out.push(Interval {
            start,
            end: stop,
            slot,
        });
    };
    let mut since = Nanos::ZERO;
    let mut slot = Slot::Idle;
    for (t, e) in trace {
        let next = match e {
            TraceEvent::Core(CoreEvent::Switch { to, .. } | CoreEvent::Resume { vcpu: to, .. }) => {
                match to {
                    Some(v) => Slot::Domain(names[v.index()].clone()),
                    None => Slot::Idle,
                }
            }
            TraceEvent::Core(CoreEvent::Overhead { .. }) => Slot::Overhead,
            _ => continue,
        };
        push(since, *t, slot);
        since = *t;
        slot = next;
    }
    push(since, end, slot);
    out
}
