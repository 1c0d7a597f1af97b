//! Exporting a recorded trace, for existing trace viewers and for spreadsheets.
//!
//! # Chrome / Perfetto trace-event JSON ([`TraceFormat::ChromeJson`])
//! The "Trace Event Format" (`{"traceEvents": [...], "displayTimeUnit": "ns"}`), which
//! <https://ui.perfetto.dev> and `chrome://tracing` open directly (drag the file in). Its
//! time unit is the microsecond: `ts` and `dur` are written as µs with three decimals, so
//! they keep full nanosecond precision (written from integers, never through a float).
//!
//! Tracks (processes `pid` and threads `tid`, named by `ph:"M"` metadata):
//! - process **"pcpus"**: one thread per pcpu (`pcpu 0`, ...). Complete events (`ph:"X"`)
//!   cover the pcpu's whole run: the running VCPU (named after its domain), `IDLE`, or
//!   `overhead`. The `args` say which VCPU and why it was switched in.
//! - one process per **domain** (`domain d1`, ...), holding
//!   - one thread per VCPU (`vcpu 0`): its running intervals, and instants (`ph:"i"`) for
//!     `wake`, `block`, `replenish` (new budget), `budget exhausted`, `budget discarded`;
//!   - one thread per task (its name): one complete event per uninterrupted stretch of
//!     execution of a job (`<task> #<seq>`; the driver's consecutive steps are merged),
//!     and instants for `release`, `finish` (with `missed`) and
//!     `deadline miss` (at the job's deadline, for a job that finished late or had not
//!     finished by the end of the trace).
//!
//! Thread ids are unique over the whole file (pcpus first, then VCPUs, then tasks), and
//! `process_sort_index`/`thread_sort_index` keep the tracks in this order in the viewer.
//!
//! # CSV ([`TraceFormat::Csv`])
//! One row per recorded event, in time order (see [`write_trace`]), under the header
//! `time_ns,kind,pcpu,vcpu,domain,task,job,detail`:
//!
//! | kind | pcpu | vcpu | domain | task | job | detail |
//! |---|---|---|---|---|---|---|
//! | `switch` | ✓ | switched-in VCPU (empty = IDLE) | its domain | | | `from=<vcpu or idle>;reason=<why>` |
//! | `resume` | ✓ | VCPU resumed after overhead (empty = IDLE) | its domain | | | |
//! | `overhead` | ✓ | | | | | `cost_ns=<n>` |
//! | `wake`, `block`, `budget_exhausted` | | ✓ | ✓ | | | |
//! | `replenish` | | ✓ | ✓ | | | `budget_ns=<n>` |
//! | `budget_discarded` | | ✓ | ✓ | | | `amount_ns=<n>` |
//! | `release` | | | ✓ | ✓ | ✓ | |
//! | `run` | | | ✓ | ✓ | ✓ | `end_ns=<n>`: the job ran during `[time_ns, end_ns)` (one row per simulation step, as recorded) |
//! | `finish` | | | ✓ | ✓ | ✓ | `missed=<true or false>` |
//!
//! Domains and tasks are written by name (quoted as RFC 4180 says when a name needs it);
//! pcpus, VCPUs and jobs by number. Column order is stable.
//!
//! Both outputs are byte-deterministic: they depend only on the trace and the names, in
//! their order (no hash map, no float formatting).

use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use rtvmm_core::event::CoreEvent;
use rtvmm_core::model::{PcpuId, VcpuId};
use rtvmm_core::Nanos;

use crate::driver::{GuestEvent, Simulation, TraceEvent};

mod chrome;
mod csv;

pub(crate) use csv::csv_field;

/// How to write a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceFormat {
    /// Chrome / Perfetto trace-event JSON.
    ChromeJson,
    /// One CSV row per event.
    Csv,
}

/// Why a trace format could not be chosen.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TraceFormatError {
    #[error(
        "{}: unknown trace format; name the file *.json (Chrome/Perfetto) or *.csv",
        .0.display()
    )]
    UnknownExtension(PathBuf),
}

impl TraceFormat {
    /// Chooses the format by the file's extension (case-insensitive): `.json` or `.csv`.
    pub fn from_path(path: &Path) -> Result<TraceFormat, TraceFormatError> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(|e| e.to_ascii_lowercase());
        match ext.as_deref() {
            Some("json") => Ok(TraceFormat::ChromeJson),
            Some("csv") => Ok(TraceFormat::Csv),
            _ => Err(TraceFormatError::UnknownExtension(path.to_path_buf())),
        }
    }
}

/// A task's name, and its relative deadline when known (for `deadline miss` instants).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskNames {
    pub name: String,
    pub deadline: Option<Nanos>,
}

/// A domain's name, its tasks, and when it was removed (its unfinished jobs are then not
/// reported as missed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainNames {
    pub name: String,
    pub tasks: Vec<TaskNames>,
    pub removed_at: Option<Nanos>,
}

impl DomainNames {
    /// The names of `spec`'s domain and tasks (every driver's domains are `DomainSpec`s).
    pub fn of(spec: &rtvmm_core::model::DomainSpec, removed_at: Option<Nanos>) -> DomainNames {
        DomainNames {
            name: spec.name.clone(),
            tasks: spec
                .tasks
                .iter()
                .map(|t| TaskNames {
                    name: t.name.clone(),
                    deadline: Some(t.deadline),
                })
                .collect(),
            removed_at,
        }
    }
}

/// What the trace's numbers stand for: names of domains and tasks (indexed like the
/// trace's `domain`/`task` fields), the domain of each VCPU, and where the run ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceNames {
    pub domains: Vec<DomainNames>,
    /// `vcpu_domain[vcpu id]` = index into `domains`.
    pub vcpu_domain: Vec<Option<usize>>,
    /// Number of pcpus (tracks are also made for any pcpu the trace mentions).
    pub pcpus: u32,
    /// The end of the run: open intervals are closed here. `None`: at the last event.
    pub end: Option<Nanos>,
}

impl TraceNames {
    /// The names of a simulation's domains, tasks and VCPUs; the run ends at its `now`.
    pub fn from_simulation(sim: &Simulation) -> TraceNames {
        let mut vcpu_domain = vec![None; sim.machine().vcpu_count()];
        let domains = sim
            .domains()
            .iter()
            .enumerate()
            .map(|(i, d)| {
                if vcpu_domain.len() <= d.vcpu.index() {
                    vcpu_domain.resize(d.vcpu.index() + 1, None);
                }
                vcpu_domain[d.vcpu.index()] = Some(i);
                DomainNames::of(&d.spec, d.removed_at)
            })
            .collect();
        TraceNames {
            domains,
            vcpu_domain,
            pcpus: sim.machine().config().pcpus,
            end: Some(sim.now()),
        }
    }

    fn domain_of(&self, vcpu: VcpuId) -> Option<usize> {
        self.vcpu_domain.get(vcpu.index()).copied().flatten()
    }

    fn domain_name(&self, domain: usize) -> String {
        match self.domains.get(domain) {
            Some(d) => d.name.clone(),
            None => format!("domain{domain}"),
        }
    }

    fn task_name(&self, domain: usize, task: usize) -> String {
        match self.domains.get(domain).and_then(|d| d.tasks.get(task)) {
            Some(t) => t.name.clone(),
            None => format!("task{task}"),
        }
    }

    fn deadline(&self, domain: usize, task: usize) -> Option<Nanos> {
        self.domains.get(domain)?.tasks.get(task)?.deadline
    }
}

/// One recorded event.
type Event = (Nanos, TraceEvent);

/// Writes `trace` (as recorded by [`Simulation::take_trace`]) in `format`, in time order.
///
/// A recorded trace is in time order but for events a policy stamps with an earlier
/// instant than when it reports them (the Polling Server's discards carry the instant the
/// discarded time began); those are moved to their place. The sort is stable, so events
/// of one instant keep the order they happened in.
pub fn write_trace(
    w: &mut impl Write,
    format: TraceFormat,
    trace: &[Event],
    names: &TraceNames,
) -> io::Result<()> {
    let mut events: Vec<&Event> = trace.iter().collect();
    if !trace.windows(2).all(|pair| pair[0].0 <= pair[1].0) {
        events.sort_by_key(|e| e.0);
    }
    let mut w = BufWriter::new(w);
    match format {
        TraceFormat::ChromeJson => chrome::write_chrome(&mut w, &events, names)?,
        TraceFormat::Csv => csv::write_csv(&mut w, &events, names)?,
    }
    w.flush()
}

/// The pcpu a core event concerns, if any.
fn core_pcpu(e: &CoreEvent) -> Option<PcpuId> {
    match e {
        CoreEvent::Switch { pcpu, .. }
        | CoreEvent::Resume { pcpu, .. }
        | CoreEvent::Overhead { pcpu, .. } => Some(*pcpu),
        _ => None,
    }
}

/// The VCPUs a core event names (a switch names two).
fn core_vcpus(e: &CoreEvent) -> [Option<VcpuId>; 2] {
    match e {
        CoreEvent::Switch { from, to, .. } => [*from, *to],
        CoreEvent::Resume { vcpu, .. } => [*vcpu, None],
        CoreEvent::Overhead { .. } => [None, None],
        CoreEvent::Wake { vcpu }
        | CoreEvent::Block { vcpu }
        | CoreEvent::Replenish { vcpu, .. }
        | CoreEvent::BudgetExhausted { vcpu }
        | CoreEvent::BudgetDiscarded { vcpu, .. } => [Some(*vcpu), None],
    }
}

/// The (domain, task, job) a guest event concerns.
fn guest_job(e: &GuestEvent) -> (u32, u32, u64) {
    match e {
        GuestEvent::Release { domain, task, seq }
        | GuestEvent::Run {
            domain, task, seq, ..
        }
        | GuestEvent::Finish {
            domain, task, seq, ..
        } => (*domain, *task, *seq),
    }
}

#[cfg(test)]
mod tests {
    use super::chrome::{write_us, PCPU_PID};
    use super::*;
    use rtvmm_core::guest::{GuestScheduler, TaskSpec};
    use rtvmm_core::machine::{MachineConfig, Overheads};
    use rtvmm_core::model::VcpuParams;
    use rtvmm_core::policy::PolicyConfig;
    use serde_json::Value;

    use crate::{DomainSpec, SystemSpec};

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
            pools: Vec::new(),
            machine: MachineConfig {
                overheads,
                ..MachineConfig::default()
            },
            policy: PolicyConfig::Deferrable,
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
        };
        let mut sim = Simulation::new(&spec, 7, true).unwrap();
        sim.run_until(ms(40)).unwrap();
        sim
    }

    fn export(sim: &mut Simulation, format: TraceFormat) -> Vec<u8> {
        let trace = sim.take_trace();
        let names = TraceNames::from_simulation(sim);
        let mut out = Vec::new();
        write_trace(&mut out, format, &trace, &names).unwrap();
        out
    }

    #[test]
    fn format_is_chosen_by_extension() {
        assert_eq!(
            TraceFormat::from_path(Path::new("a/b.json")),
            Ok(TraceFormat::ChromeJson)
        );
        assert_eq!(
            TraceFormat::from_path(Path::new("x.CSV")),
            Ok(TraceFormat::Csv)
        );
        assert!(matches!(
            TraceFormat::from_path(Path::new("x.txt")),
            Err(TraceFormatError::UnknownExtension(_))
        ));
        assert!(TraceFormat::from_path(Path::new("noext")).is_err());
    }

    #[test]
    fn microseconds_keep_nanosecond_precision() {
        let mut s = Vec::new();
        write_us(&mut s, Nanos(1_234_567)).unwrap();
        write_us(&mut s, Nanos(5)).unwrap();
        assert_eq!(String::from_utf8(s).unwrap(), "1234.5670.005");
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
        let names = TraceNames::from_simulation(&sim);
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
}
