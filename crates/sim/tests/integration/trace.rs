//! The trace writers on a simulated run: Chrome/Perfetto JSON a viewer opens, CSV with one
//! row per event, both byte-deterministic.

use rtvmm_core::event::CoreEvent;
use rtvmm_core::guest::{GuestScheduler, TaskSpec};
use rtvmm_core::machine::{MachineConfig, Overheads};
use rtvmm_core::model::VcpuId;
use rtvmm_core::model::VcpuParams;
use rtvmm_core::policy::PolicyConfig;
use rtvmm_core::Nanos;
use rtvmm_sim::Simulation;
use rtvmm_system::records::TraceEvent;
use rtvmm_system::trace::{write_trace, TraceFormat, TraceNames, PCPU_PID};
use serde_json::Value;

use rtvmm_system::spec::{DomainSpec, SystemSpec};

fn ms(x: u64) -> Nanos {
    Nanos::from_ms(x)
}

/// d1 (B=2, P=5, prio 1) with a 1 ms job every 5 ms and d2 (B=4, P=10) with a 3 ms job
/// every 4 ms, overheads on, under the Deferrable Server.
fn small_run(overheads: Overheads) -> Simulation {
    let domain = |name: &str, b, p, prio, tasks| DomainSpec {
        name: name.to_string(),
        vcpu: VcpuParams::server(ms(b), ms(p), prio),
        guest: GuestScheduler::Rm,
        tasks,
        placement: Default::default(),
    };
    let spec = SystemSpec {
        chains: Vec::new(),
        policy_settings: Default::default(),
        domains: vec![
            domain(
                "d1",
                2,
                5,
                1,
                vec![TaskSpec::periodic("t\"1,x", ms(5), ms(1))],
            ),
            domain("d2", 4, 10, 2, vec![TaskSpec::periodic("u", ms(4), ms(3))]),
        ],
        changes: vec![],
        ..SystemSpec::one_pool(
            MachineConfig {
                overheads,
                ..MachineConfig::default()
            },
            PolicyConfig::Deferrable,
        )
    };
    let mut sim = Simulation::new(&spec, 7, true).unwrap();
    sim.run_until(ms(40)).unwrap();
    sim
}

fn export(sim: &mut Simulation, format: TraceFormat) -> Vec<u8> {
    let trace = sim.take_trace();
    let names = sim.trace_names();
    let mut out = Vec::new();
    write_trace(&mut out, format, &trace, &names).unwrap();
    out
}

/// The structure a trace viewer needs: every event has ph, pid, tid; X events have
/// ts and dur ≥ 0; every track used is named by an M event; the pcpu track covers the
/// run without gaps or overlaps.
#[test]
fn chrome_json_is_well_formed_for_trace_viewers() {
    let overheads = Overheads {
        do_schedule: Nanos(150),
        context_switch: Nanos(1_500),
        ..Default::default()
    };
    let mut sim = small_run(overheads);
    let bytes = export(&mut sim, TraceFormat::ChromeJson);
    let doc: Value = serde_json::from_slice(&bytes).expect("valid JSON");
    assert_eq!(doc["displayTimeUnit"], "ns");
    let events = doc["traceEvents"].as_array().expect("traceEvents array");
    let mut named_processes = std::collections::BTreeSet::new();
    let mut named_threads = std::collections::BTreeMap::new();
    for e in events.iter().filter(|e| e["ph"] == "M") {
        let (pid, tid) = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        match e["name"].as_str().unwrap() {
            "process_name" => {
                assert!(e["args"]["name"].is_string());
                named_processes.insert(pid);
            }
            "thread_name" => {
                let name = e["args"]["name"].as_str().unwrap().to_string();
                assert!(named_threads.insert((pid, tid), name).is_none());
            }
            "process_sort_index" | "thread_sort_index" => {
                assert!(e["args"]["sort_index"].is_u64())
            }
            other => panic!("unexpected metadata {other}"),
        }
    }
    // Thread ids are unique across processes.
    let tids: std::collections::BTreeSet<u64> = named_threads.keys().map(|k| k.1).collect();
    assert_eq!(tids.len(), named_threads.len());
    let mut pcpu_cover = Nanos::ZERO;
    let mut kinds = std::collections::BTreeSet::new();
    for e in events.iter().filter(|e| e["ph"] != "M") {
        let ph = e["ph"].as_str().unwrap();
        assert!(ph == "X" || ph == "i", "unexpected ph {ph}");
        let (pid, tid) = (e["pid"].as_u64().unwrap(), e["tid"].as_u64().unwrap());
        assert!(named_processes.contains(&pid), "unnamed process {pid}");
        assert!(named_threads.contains_key(&(pid, tid)), "unnamed thread");
        assert!(e["name"].is_string());
        let ts = e["ts"].as_f64().expect("ts");
        assert!(ts >= 0.0);
        if ph == "X" {
            let dur = e["dur"].as_f64().expect("dur");
            assert!(dur >= 0.0);
            if pid == PCPU_PID {
                // Consecutive, gapless: each starts where the previous ended.
                let start = Nanos((ts * 1000.0).round() as u64);
                assert_eq!(start, pcpu_cover, "pcpu track has a gap or overlap");
                pcpu_cover = start + Nanos((dur * 1000.0).round() as u64);
            }
        } else {
            assert_eq!(e["s"], "t");
        }
        kinds.insert(e["name"].as_str().unwrap().to_string());
    }
    assert_eq!(pcpu_cover, ms(40), "the pcpu track covers the whole run");
    for k in [
        "IDLE",
        "overhead",
        "d1",
        "d2",
        "running",
        "wake",
        "block",
        "release",
        "finish",
        "replenish",
    ] {
        assert!(kinds.contains(k), "no '{k}' event");
    }
    // The awkward task name survives escaping.
    assert!(named_threads.values().any(|n| n == "t\"1,x"));
    assert!(kinds.contains("t\"1,x #0"));
}

/// d2's 3 ms jobs every 4 ms on a 4-per-10 budget fall behind:
/// ```text
/// t(ms)  0   1   2   3   4   5 ... 10  11  12  13
/// d1     ███                 ...   ███
/// d2         ███████████████ ...       ███████
///            u#0 (1-4)   u#1 (4-5) ... u#1 (11-13): finishes at 13, deadline was 8
/// ```
/// u#0 is one slice although the driver reported it in three 1 ms steps; u#1 gets a
/// deadline-miss instant at its deadline, 8 ms.
#[test]
fn chrome_json_merges_job_slices_and_marks_misses() {
    let mut sim = small_run(Overheads::default());
    let bytes = export(&mut sim, TraceFormat::ChromeJson);
    let doc: Value = serde_json::from_slice(&bytes).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let find = |name: &str| -> Vec<(String, String)> {
        events
            .iter()
            .filter(|e| e["name"] == name)
            .map(|e| (e["ts"].to_string(), e["dur"].to_string()))
            .collect()
    };
    let u0 = find("u #0");
    assert_eq!(u0, [("1000.0".to_string(), "3000.0".to_string())]);
    let u1 = find("u #1");
    assert_eq!(u1[0], ("4000.0".to_string(), "1000.0".to_string()));
    assert_eq!(u1[1], ("11000.0".to_string(), "2000.0".to_string()));
    let misses: Vec<&Value> = events
        .iter()
        .filter(|e| e["name"] == "deadline miss")
        .collect();
    assert_eq!(misses[0]["ts"].to_string(), "8000.0");
    assert_eq!(misses[0]["args"]["job"], 1);
    // The textual form keeps every nanosecond digit.
    let text = String::from_utf8(bytes).unwrap();
    assert!(text.contains("\"name\":\"u #0\",\"cat\":\"job\""));
    assert!(text.contains("\"ts\":1000.000,\"dur\":3000.000"));
}

#[test]
fn csv_has_one_row_per_event_and_stable_columns() {
    let mut sim = small_run(Overheads::default());
    let trace = sim.take_trace();
    let names = sim.trace_names();
    let mut out = Vec::new();
    write_trace(&mut out, TraceFormat::Csv, &trace, &names).unwrap();
    let text = String::from_utf8(out).unwrap();
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("time_ns,kind,pcpu,vcpu,domain,task,job,detail")
    );
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), trace.len());
    // At 0 both release and wake, d1 (priority 1) runs its 1 ms job and blocks at 1,
    // then d2 runs.
    assert_eq!(
        rows[..9],
        [
            "0,release,,,d1,\"t\"\"1,x\",0,",
            "0,release,,,d2,u,0,",
            "0,wake,,0,d1,,,",
            "0,wake,,1,d2,,,",
            "0,switch,0,0,d1,,,from=idle;reason=preempt",
            "0,run,,,d1,\"t\"\"1,x\",0,end_ns=1000000",
            "1000000,finish,,,d1,\"t\"\"1,x\",0,missed=false",
            "1000000,block,,0,d1,,,",
            "1000000,switch,0,1,d2,,,from=0;reason=block",
        ]
    );
    assert!(rows.contains(&"5000000,replenish,,0,d1,,,budget_ns=2000000"));
    assert!(rows.contains(&"6000000,switch,0,,,,,from=0;reason=block"));
}

/// Events stamped in the past (as the Polling Server's discards are) are written in
/// their place; events of one instant keep their order.
#[test]
fn events_are_written_in_time_order() {
    let v = VcpuId(0);
    let trace = vec![
        (Nanos(5), TraceEvent::Core(CoreEvent::Wake { vcpu: v })),
        (Nanos(9), TraceEvent::Core(CoreEvent::Block { vcpu: v })),
        (
            Nanos(5),
            TraceEvent::Core(CoreEvent::BudgetDiscarded {
                vcpu: v,
                amount: Nanos(3),
            }),
        ),
    ];
    let mut out = Vec::new();
    write_trace(&mut out, TraceFormat::Csv, &trace, &TraceNames::default()).unwrap();
    let text = String::from_utf8(out).unwrap();
    let rows: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(
        rows,
        [
            "5,wake,,0,,,,",
            "5,budget_discarded,,0,,,,amount_ns=3",
            "9,block,,0,,,,"
        ]
    );
}

#[test]
fn same_run_same_bytes() {
    for format in [TraceFormat::ChromeJson, TraceFormat::Csv] {
        let a = export(&mut small_run(Overheads::default()), format);
        let b = export(&mut small_run(Overheads::default()), format);
        assert_eq!(a, b);
    }
}

/// Every VCPU of a domain of several VCPUs carries its domain in the trace (a regression:
/// only the first did, so the second VCPU's switches had no domain in the CSV and sat
/// under "vcpus without a domain" in Perfetto).
///
/// One pcpu, RTDS; `web` has two VCPUs (partitioned guest, one 1 ms job on each VCPU),
/// so both VCPUs wake at 0 and run one after the other: VCPU ids 0 and 1, both `web`'s.
#[test]
fn every_vcpu_of_a_multi_vcpu_domain_is_named_after_its_domain() {
    use rtvmm_core::model::{GuestSmp, Placement};
    use rtvmm_core::policy::RtdsMode;
    let task = |name: &str, vcpu: u32| TaskSpec {
        vcpu,
        ..TaskSpec::periodic(name, ms(10), ms(1))
    };
    let mut spec = SystemSpec::one_pool(
        MachineConfig::default(),
        PolicyConfig::Rtds(RtdsMode::Event),
    );
    spec.domains.push(DomainSpec {
        name: "web".into(),
        vcpu: VcpuParams::server(ms(4), ms(10), 1),
        guest: GuestScheduler::Edf,
        tasks: vec![task("a", 0), task("b", 1)],
        placement: Placement {
            vcpus: 2,
            smp: GuestSmp::Partitioned,
            ..Placement::default()
        },
    });
    let mut sim = Simulation::new(&spec, 1, true).unwrap();
    sim.run_until(ms(5)).unwrap();
    let names = sim.trace_names();
    assert_eq!(names.vcpu_domain, vec![Some(0), Some(0)]);
    let mut out = Vec::new();
    write_trace(&mut out, TraceFormat::Csv, &sim.take_trace(), &names).unwrap();
    let text = String::from_utf8(out).unwrap();
    let switches: Vec<&str> = text.lines().filter(|l| l.contains(",switch,")).collect();
    assert!(
        switches.iter().any(|l| l.starts_with("0,switch,0,0,web,")),
        "{text}"
    );
    assert!(
        switches.iter().any(|l| l.contains(",switch,0,1,web,")),
        "{text}"
    );
    // Every switch to a VCPU names its domain.
    for line in &switches {
        let cells: Vec<&str> = line.split(',').collect();
        assert!(cells[3].is_empty() || cells[4] == "web", "{line}");
    }
}

/// The trace of `scenario` (its first `length`) in both formats: written from memory, and
/// streamed through a spool that spills every `chunk` events.
fn memory_and_streamed(
    scenario: &rtvmm_scenario::Scenario,
    length: Nanos,
    chunk: usize,
    dir: &std::path::Path,
) -> (Vec<u8>, Vec<u8>) {
    let mut memory = Simulation::new(&scenario.system, scenario.seed, true).unwrap();
    let mut streamed = Simulation::new(&scenario.system, scenario.seed, true).unwrap();
    streamed.stream_trace(rtvmm_system::trace::TraceSpool::with_chunk_events(
        dir, chunk,
    ));
    memory.run_until(length).unwrap();
    streamed.run_until(length).unwrap();
    let names = memory.trace_names();
    assert_eq!(streamed.trace_names(), names);
    let events = memory.take_trace();
    let mut spool = streamed.take_trace_spool().expect("streamed");
    spool.finish().unwrap();
    assert_eq!(spool.len(), events.len() as u64);
    let (mut from_memory, mut from_spool) = (Vec::new(), Vec::new());
    for format in [TraceFormat::ChromeJson, TraceFormat::Csv] {
        write_trace(&mut from_memory, format, &events, &names).unwrap();
        spool.write(&mut from_spool, format, &names, None).unwrap();
    }
    (from_memory, from_spool)
}

/// Every example scenario (multi-pcpu, pools, chains, `xl` events, a domain added at run
/// time, the Polling Server's back-stamped discards) streams to the bytes of the trace
/// held in memory, with chunks small enough that every run spills many.
#[test]
fn a_streamed_trace_has_the_bytes_of_the_trace_in_memory() {
    let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let dir = tempfile::tempdir().unwrap();
    let mut compared = 0;
    for entry in std::fs::read_dir(examples).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "toml") {
            continue;
        }
        let scenario = rtvmm_scenario::Scenario::load(&path).unwrap();
        if scenario.simulable().is_err() {
            continue;
        }
        let length = scenario.duration.min(ms(300));
        let mut kinds = vec![scenario.clone()];
        if let Ok(polling) = scenario.with_policy(rtvmm_core::policy::PolicyKind::Polling) {
            kinds.push(polling);
        }
        for s in &kinds {
            for chunk in [13, 1000] {
                let (memory, streamed) = memory_and_streamed(s, length, chunk, dir.path());
                assert!(
                    memory == streamed,
                    "{}: chunks of {chunk}: the streamed trace differs",
                    path.display()
                );
                compared += 1;
            }
        }
    }
    assert!(compared >= 10, "{compared}");
}
