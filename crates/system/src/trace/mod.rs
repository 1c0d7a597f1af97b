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
//!
//! # A run stopped early
//! A trace of a run stopped before its end (SIGINT, SIGTERM) says so: the CSV's first line
//! is `# partial: <why>` (as an experiment's CSVs), and the JSON carries
//! `"otherData":{"partial":"<why>"}` before its events (the trace-event format's place for
//! metadata). A complete run's trace has neither.
//!
//! # Memory
//! [`write_trace`] writes a trace held in memory. A long run streams its events into a
//! [`TraceSpool`] instead, which keeps at most a bounded chunk in memory and spills sorted
//! chunks to a temporary file, then writes the same bytes by merging them.

use std::borrow::Borrow;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use rtvmm_core::event::CoreEvent;
use rtvmm_core::model::{PcpuId, VcpuId};
use rtvmm_core::Nanos;

use crate::records::{GuestEvent, TraceEvent};

mod chrome;
mod csv;
mod spool;

pub use chrome::PCPU_PID;
pub(crate) use csv::csv_field;
pub use spool::{TraceSpool, CHUNK_EVENTS};

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
pub type Event = (Nanos, TraceEvent);

/// What the writers need to know of a whole trace before its first event: the pcpus,
/// VCPUs and tasks it mentions (tracks are made for them) and its last instant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TraceExtent {
    /// One more than the highest pcpu mentioned.
    pcpus: usize,
    /// One more than the highest VCPU mentioned.
    vcpus: usize,
    /// Per domain, one more than the highest task mentioned.
    tasks: Vec<usize>,
    /// The latest instant of any event.
    last: Option<Nanos>,
}

impl TraceExtent {
    fn see(&mut self, at: Nanos, event: &TraceEvent) {
        self.last = Some(self.last.map_or(at, |last| last.max(at)));
        match event {
            TraceEvent::Core(c) => {
                if let Some(p) = core_pcpu(c) {
                    self.pcpus = self.pcpus.max(p.index() + 1);
                }
                for v in core_vcpus(c).into_iter().flatten() {
                    self.vcpus = self.vcpus.max(v.index() + 1);
                }
            }
            TraceEvent::Guest(g) => {
                let (domain, task, _) = guest_job(g);
                let (d, t) = (domain as usize, task as usize);
                if self.tasks.len() <= d {
                    self.tasks.resize(d + 1, 0);
                }
                self.tasks[d] = self.tasks[d].max(t + 1);
            }
        }
    }
}

/// Writes `events` (in time order; `extent` describes them all) in `format`.
fn write_events<E: Borrow<Event>>(
    w: &mut impl Write,
    format: TraceFormat,
    events: impl Iterator<Item = io::Result<E>>,
    extent: &TraceExtent,
    names: &TraceNames,
    partial: Option<&str>,
) -> io::Result<()> {
    let mut w = BufWriter::new(w);
    match format {
        TraceFormat::ChromeJson => chrome::write_chrome(&mut w, events, extent, names, partial)?,
        TraceFormat::Csv => csv::write_csv(&mut w, events, names, partial)?,
    }
    w.flush()
}

/// Writes `trace` (as a driver recorded it) in `format`, in time order.
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
    write_trace_marked(w, format, trace, names, None)
}

/// [`write_trace`], marking the trace partial with `partial` (why and where it stopped)
/// when given (see "A run stopped early" above).
pub fn write_trace_marked(
    w: &mut impl Write,
    format: TraceFormat,
    trace: &[Event],
    names: &TraceNames,
    partial: Option<&str>,
) -> io::Result<()> {
    let mut events: Vec<&Event> = trace.iter().collect();
    if !trace.windows(2).all(|pair| pair[0].0 <= pair[1].0) {
        events.sort_by_key(|e| e.0);
    }
    let mut extent = TraceExtent::default();
    for (at, event) in &events {
        extent.see(*at, event);
    }
    let events = events.into_iter().map(Ok);
    write_events(w, format, events, &extent, names, partial)
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
    use super::chrome::write_us;
    use super::*;

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
}
