//! An idle high-priority domain: under the Deferrable Server it does not keep a busy
//! low-priority domain from running; under the Periodic Server (PTPS, which idles its
//! budget away while it has no work) it does.

use rtvmm_core::guest::{GuestScheduler, TaskSpec};
use rtvmm_core::model::{DomainSpec, VcpuParams};
use rtvmm_core::policy::PolicyKind;
use rtvmm_host::enforce::Backend;

use crate::util::{busy, ms, run, skip, system};

/// `idle`: 5 ms every 10 ms at priority 1, its one task first released after the run;
/// `busy`: 10 ms every 10 ms at priority 2, always busy. DS: `busy` has the whole core
/// (≥ 90 %). PTPS: `idle` holds the core idle for its 5 ms every period, so `busy` has
/// half (45–55 %).
pub fn an_idle_high_priority_domain_blocks_the_busy_one_under_ptps_not_ds() {
    if skip("idle_server") {
        return;
    }
    let duration = ms(1000);
    let mut late = TaskSpec::periodic("later", ms(100), ms(1));
    late.offset = ms(60_000);
    let idle = DomainSpec {
        name: "idle".into(),
        vcpu: VcpuParams::server(ms(5), ms(10), 1),
        guest: GuestScheduler::Rm,
        tasks: vec![late],
        placement: Default::default(),
    };
    let share = |policy| {
        let s = system(policy, vec![idle.clone(), busy("busy", ms(10), ms(10), 2)]);
        let results = run(&s, duration, Backend::Freeze).results;
        let host = results.host.expect("a host section");
        // Its thread's CPU clock counts from the thread's creation: the few microseconds
        // it takes to reach its first sleep, never a job (none is released in the run).
        assert!(
            host.domain_cpu_ns[0] < 1_000_000,
            "{policy:?}: the idle domain ran {} ns",
            host.domain_cpu_ns[0]
        );
        100.0 * host.domain_cpu_ns[1] as f64 / (duration.as_secs_f64() * 1e9)
    };
    let ds = share(PolicyKind::Deferrable);
    let ptps = share(PolicyKind::Periodic);
    eprintln!("busy domain: {ds:.2}% under DS, {ptps:.2}% under PTPS");
    assert!(ds >= 90.0, "DS: the busy domain had {ds:.2}%");
    assert!(
        (45.0..=55.0).contains(&ptps),
        "PTPS: the busy domain had {ptps:.2}%"
    );
}
