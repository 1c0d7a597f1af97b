//! A domain with a 20 % server (2 ms every 10 ms, the highest priority) competing with an
//! always-busy domain gets 20 % of the core, under every server policy.

use rtvmm_core::policy::PolicyKind;
use rtvmm_host::enforce::Backend;

use crate::util::{expected_share, ms, run, skip, twenty_percent};

/// The share the 20 % domain's threads really had (their own CPU clocks) may differ from
/// what the run can have given it (20 % less its part of the scheduler's CPU and of the
/// host's steal: [`expected_share`]) by at most this (percentage points): each of its 100
/// switches in per second costs it the switch latency (≈ 15–100 µs on these machines).
const TOLERANCE: f64 = 2.5;
/// What the core accounted (its VCPU's run time, measured with the real clock) is within
/// this of 20 %.
const ACCOUNTED_TOLERANCE: f64 = 1.0;

/// 1.5 s per policy (150 periods), freeze backend.
pub fn a_20_percent_domain_gets_20_percent_under_every_server_policy() {
    if skip("share") {
        return;
    }
    let duration = ms(1500);
    for policy in PolicyKind::ALL.into_iter().filter(|k| k.is_server()) {
        let results = run(&twenty_percent(policy), duration, Backend::Freeze).results;
        let host = results.host.as_ref().expect("a host section");
        assert!(host.real_time, "{policy:?}: a real-time run");
        let seconds = duration.as_secs_f64() * 1e9;
        let got = 100.0 * host.domain_cpu_ns[0] as f64 / seconds;
        let accounted = 100.0 * results.domains[0].vcpus[0].run_ns as f64 / seconds;
        let rest = 100.0 * host.domain_cpu_ns[1] as f64 / seconds;
        let expected = expected_share(20.0, host, duration.as_ns());
        eprintln!(
            "{policy:?}: d20 had {got:.2}% (accounted {accounted:.2}%, expected {expected:.2}%), \
             the busy domain {rest:.2}%; worst wake-up {:.2} ms late",
            host.tick_lateness_ns.max as f64 / 1e6
        );
        assert!(
            (got - expected).abs() <= TOLERANCE,
            "{policy:?}: the 20% domain had {got:.2}% of the core (expected {expected:.2}%: the \
             scheduler took {:.2}%, the host stole {:.2} ms)",
            100.0 * host.cpu_lost_share,
            host.steal_ns as f64 / 1e6
        );
        // A budget runs out when the scheduler thread wakes for it: a host stall that wakes
        // it late lets the VCPU run on until then, so one stall's worth more is allowed.
        let stall = 100.0 * host.tick_lateness_ns.max as f64 / seconds;
        assert!(
            (accounted - 20.0).abs() <= ACCOUNTED_TOLERANCE + stall,
            "{policy:?}: its VCPU was accounted {accounted:.2}% (the run's worst wake-up was \
             {:.2} ms late)",
            host.tick_lateness_ns.max as f64 / 1e6
        );
        assert!(
            rest >= 70.0,
            "{policy:?}: the busy domain had only {rest:.2}% of the rest"
        );
    }
}
