//! The machine's unit tests, by concern:
//! - `fake_policy`: the machine alone, driven with a fake policy that records what it is
//!   asked;
//! - `pools`: cpupools at run time under the real policies, by hand-derived schedules;
//! - `smp_properties`: random machines of several pcpus, and the invariants after every
//!   step.

mod fake_policy;
mod pools;
mod smp_properties;

use super::*;

fn us(x: u64) -> Nanos {
    Nanos::from_us(x)
}

fn ms(x: u64) -> Nanos {
    Nanos::from_ms(x)
}

/// Runs the machine to `t`, handling everything due on the way.
fn run_to(m: &mut Machine, t: Nanos) {
    loop {
        let due = m.poll_timeout();
        if due > t {
            break;
        }
        m.handle_timeout(due);
    }
    m.advance(t);
}
