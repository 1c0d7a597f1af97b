//! The guests' job records reach the results: every released job counted once, with the
//! right deadline.

use rtvmm_core::guest::{GuestScheduler, TaskSpec};
use rtvmm_core::model::{DomainSpec, VcpuParams};
use rtvmm_core::policy::PolicyKind;
use rtvmm_host::enforce::Backend;

use crate::util::{ms, run, skip, system};

/// One domain alone with a 50 % server and a light task (1 ms every 10 ms, first at
/// 2 ms): in 1 s, jobs are released at 2, 12, …, 992 ms — 100 of them — and all finish
/// well within their deadline (the server has 5 ms every 10 ms); the job in flight at
/// the end, if any, is the only one not finished.
pub fn every_released_job_is_counted_once_with_its_deadline() {
    if skip("protocol") {
        return;
    }
    let mut task = TaskSpec::periodic("light", ms(10), ms(1));
    task.offset = ms(2);
    let d = DomainSpec {
        name: "alone".into(),
        vcpu: VcpuParams::server(ms(5), ms(10), 1),
        guest: GuestScheduler::Rm,
        tasks: vec![task],
    };
    let results = run(
        &system(PolicyKind::Deferrable, vec![d]),
        ms(1000),
        Backend::Freeze,
    )
    .results;
    let t = &results.domains[0].tasks[0];
    assert_eq!(t.released, 100, "{t:?}");
    assert_eq!(t.finished + t.in_flight, 100, "{t:?}");
    assert_eq!(t.missed, 0, "{t:?}");
    assert!(t.in_flight <= 1, "{t:?}");
    // Response ≥ the 1 ms of execution, and far below the 10 ms deadline.
    assert!(t.response_ns.min >= ms(1).as_ns(), "{:?}", t.response_ns);
    assert!(t.response_ns.p99 < ms(5).as_ns(), "{:?}", t.response_ns);
    assert_eq!(results.source, "host");
    let host = results.host.as_ref().unwrap();
    assert_eq!(host.jobs_lost, 0);
    // The domain blocks between jobs: the IDLE spinner runs and switches are measured.
    assert!(
        results.pcpus[0].idle_ns > ms(800).as_ns(),
        "{:?}",
        results.pcpus
    );
    assert!(host.switch_ns.count >= 100, "{:?}", host.switch_ns);
}
