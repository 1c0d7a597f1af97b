//! The Chrome / Perfetto trace-event JSON writer (see the module doc of [`super`]).

use std::borrow::Borrow;
use std::collections::VecDeque;
use std::io::{self, Write};

use rtvmm_core::event::CoreEvent;
use rtvmm_core::model::{PcpuId, VcpuId};
use rtvmm_core::Nanos;

use super::{core_pcpu, guest_job, Event, TraceExtent, TraceNames};
use crate::records::{GuestEvent, TraceEvent};
/// The tracks of one file and their ids.
struct Layout {
    pcpus: usize,
    vcpus: usize,
    /// Tasks per domain (at least what the names say, more if the trace mentions more).
    tasks: Vec<usize>,
    /// First task tid of each domain.
    task_base: Vec<u64>,
}

/// The `pid` of the "pcpus" process in a Chrome trace (domains follow it).
pub const PCPU_PID: u64 = 1;

impl Layout {
    /// The tracks of the names, and of what else the trace mentions (`extent`).
    fn new(extent: &TraceExtent, names: &TraceNames) -> Layout {
        let pcpus = (names.pcpus.max(1) as usize).max(extent.pcpus);
        let vcpus = names.vcpu_domain.len().max(extent.vcpus);
        let mut tasks: Vec<usize> = names.domains.iter().map(|d| d.tasks.len()).collect();
        if tasks.len() < extent.tasks.len() {
            tasks.resize(extent.tasks.len(), 0);
        }
        for (d, &seen) in extent.tasks.iter().enumerate() {
            tasks[d] = tasks[d].max(seen);
        }
        let mut task_base = Vec::with_capacity(tasks.len());
        let mut next = 1 + (pcpus + vcpus) as u64;
        for &n in &tasks {
            task_base.push(next);
            next += n as u64;
        }
        Layout {
            pcpus,
            vcpus,
            tasks,
            task_base,
        }
    }

    fn domains(&self) -> usize {
        self.tasks.len()
    }

    fn pcpu_tid(&self, pcpu: PcpuId) -> u64 {
        1 + pcpu.0 as u64
    }

    fn vcpu_tid(&self, vcpu: VcpuId) -> u64 {
        1 + (self.pcpus + vcpu.index()) as u64
    }

    fn domain_pid(&self, domain: usize) -> u64 {
        2 + domain as u64
    }

    /// The process of VCPUs that belong to no known domain.
    fn orphan_pid(&self) -> u64 {
        2 + self.domains() as u64
    }

    fn vcpu_pid(&self, names: &TraceNames, vcpu: VcpuId) -> u64 {
        match names.domain_of(vcpu) {
            Some(d) => self.domain_pid(d),
            None => self.orphan_pid(),
        }
    }

    fn task_tid(&self, domain: usize, task: usize) -> u64 {
        self.task_base[domain] + task as u64
    }
}

/// An `args` value.
enum Arg<'a> {
    U64(u64),
    Str(&'a str),
    Bool(bool),
}

/// Writes nanoseconds as microseconds with three decimals (exact, no float).
pub(super) fn write_us(w: &mut impl Write, ns: Nanos) -> io::Result<()> {
    let ns = ns.as_ns();
    write!(w, "{}.{:03}", ns / 1000, ns % 1000)
}

/// Writes a JSON string literal.
fn write_json_str(w: &mut impl Write, s: &str) -> io::Result<()> {
    serde_json::to_writer(&mut *w, s).map_err(io::Error::other)
}

/// Writes the events of one file, separating them with commas.
struct ChromeWriter<'w, W: Write> {
    w: &'w mut W,
    first: bool,
}

impl<W: Write> ChromeWriter<'_, W> {
    fn begin(&mut self) -> io::Result<()> {
        if self.first {
            self.first = false;
            self.w.write_all(b"\n")
        } else {
            self.w.write_all(b",\n")
        }
    }

    fn args(&mut self, args: &[(&str, Arg)]) -> io::Result<()> {
        self.w.write_all(b",\"args\":{")?;
        for (i, (key, value)) in args.iter().enumerate() {
            if i > 0 {
                self.w.write_all(b",")?;
            }
            write_json_str(self.w, key)?;
            self.w.write_all(b":")?;
            match value {
                Arg::U64(n) => write!(self.w, "{n}")?,
                Arg::Str(s) => write_json_str(self.w, s)?,
                Arg::Bool(b) => write!(self.w, "{b}")?,
            }
        }
        self.w.write_all(b"}")
    }

    /// A `ph:"M"` metadata event (`process_name`, `thread_name`, `*_sort_index`).
    fn metadata(&mut self, kind: &str, pid: u64, tid: u64, arg: Arg) -> io::Result<()> {
        self.begin()?;
        self.w.write_all(b"{\"ph\":\"M\",\"name\":")?;
        write_json_str(self.w, kind)?;
        write!(self.w, ",\"pid\":{pid},\"tid\":{tid}")?;
        let key = if kind.ends_with("sort_index") {
            "sort_index"
        } else {
            "name"
        };
        self.args(&[(key, arg)])?;
        self.w.write_all(b"}")
    }

    /// A `ph:"X"` complete event over `[start, end)`.
    #[allow(clippy::too_many_arguments)]
    fn complete(
        &mut self,
        name: &str,
        cat: &str,
        pid: u64,
        tid: u64,
        start: Nanos,
        end: Nanos,
        args: &[(&str, Arg)],
    ) -> io::Result<()> {
        self.begin()?;
        self.w.write_all(b"{\"ph\":\"X\",\"name\":")?;
        write_json_str(self.w, name)?;
        write!(
            self.w,
            ",\"cat\":\"{cat}\",\"pid\":{pid},\"tid\":{tid},\"ts\":"
        )?;
        write_us(self.w, start)?;
        self.w.write_all(b",\"dur\":")?;
        write_us(self.w, end.saturating_sub(start))?;
        if !args.is_empty() {
            self.args(args)?;
        }
        self.w.write_all(b"}")
    }

    /// A `ph:"i"` instant event on one thread.
    fn instant(
        &mut self,
        name: &str,
        cat: &str,
        pid: u64,
        tid: u64,
        at: Nanos,
        args: &[(&str, Arg)],
    ) -> io::Result<()> {
        self.begin()?;
        self.w.write_all(b"{\"ph\":\"i\",\"s\":\"t\",\"name\":")?;
        write_json_str(self.w, name)?;
        write!(
            self.w,
            ",\"cat\":\"{cat}\",\"pid\":{pid},\"tid\":{tid},\"ts\":"
        )?;
        write_us(self.w, at)?;
        if !args.is_empty() {
            self.args(args)?;
        }
        self.w.write_all(b"}")
    }
}

/// What a pcpu is doing since `since`.
#[derive(Clone, Copy)]
struct PcpuSlot {
    since: Nanos,
    what: Occupant,
}

/// A job executing during `[start, end)`.
#[derive(Clone, Copy)]
struct JobRun {
    seq: u64,
    start: Nanos,
    end: Nanos,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Occupant {
    Idle,
    Vcpu(VcpuId, &'static str),
    Overhead,
}

/// Writes the trace: `events` in time order, `extent` what they mention. Memory: the
/// tracks, one open slice per pcpu and per task, and the released unfinished jobs — not
/// the events.
pub(super) fn write_chrome<W: Write, E: Borrow<Event>>(
    w: &mut W,
    events: impl Iterator<Item = io::Result<E>>,
    extent: &TraceExtent,
    names: &TraceNames,
    partial: Option<&str>,
) -> io::Result<()> {
    let layout = Layout::new(extent, names);
    let end = names.end.or(extent.last).unwrap_or(Nanos::ZERO);
    w.write_all(b"{\"displayTimeUnit\":\"ns\",")?;
    if let Some(why) = partial {
        w.write_all(b"\"otherData\":{\"partial\":")?;
        write_json_str(w, why)?;
        w.write_all(b"},")?;
    }
    w.write_all(b"\"traceEvents\":[")?;
    let mut out = ChromeWriter { w, first: true };

    // Track names and order.
    out.metadata("process_name", PCPU_PID, 0, Arg::Str("pcpus"))?;
    out.metadata("process_sort_index", PCPU_PID, 0, Arg::U64(0))?;
    for p in 0..layout.pcpus {
        let tid = layout.pcpu_tid(PcpuId(p as u32));
        out.metadata("thread_name", PCPU_PID, tid, Arg::Str(&format!("pcpu {p}")))?;
        out.metadata("thread_sort_index", PCPU_PID, tid, Arg::U64(tid))?;
    }
    for d in 0..layout.domains() {
        let pid = layout.domain_pid(d);
        let name = format!("domain {}", names.domain_name(d));
        out.metadata("process_name", pid, 0, Arg::Str(&name))?;
        out.metadata("process_sort_index", pid, 0, Arg::U64(pid))?;
        for t in 0..layout.tasks[d] {
            let tid = layout.task_tid(d, t);
            out.metadata("thread_name", pid, tid, Arg::Str(&names.task_name(d, t)))?;
            out.metadata("thread_sort_index", pid, tid, Arg::U64(tid))?;
        }
    }
    let orphans = (0..layout.vcpus).any(|v| names.domain_of(VcpuId(v as u32)).is_none());
    if orphans {
        let pid = layout.orphan_pid();
        out.metadata("process_name", pid, 0, Arg::Str("vcpus without a domain"))?;
        out.metadata("process_sort_index", pid, 0, Arg::U64(pid))?;
    }
    for v in 0..layout.vcpus {
        let vcpu = VcpuId(v as u32);
        let (pid, tid) = (layout.vcpu_pid(names, vcpu), layout.vcpu_tid(vcpu));
        out.metadata("thread_name", pid, tid, Arg::Str(&format!("vcpu {v}")))?;
        out.metadata("thread_sort_index", pid, tid, Arg::U64(tid))?;
    }

    let vcpu_label = |v: VcpuId| match names.domain_of(v) {
        Some(d) => names.domain_name(d),
        None => format!("vcpu {}", v.0),
    };
    let mut pcpu_slots = vec![
        PcpuSlot {
            since: Nanos::ZERO,
            what: Occupant::Idle,
        };
        layout.pcpus
    ];
    // Released, unfinished jobs per (domain, task): (seq, release), oldest first.
    let mut open_jobs: Vec<Vec<VecDeque<(u64, Nanos)>>> = layout
        .tasks
        .iter()
        .map(|&n| vec![VecDeque::new(); n])
        .collect();

    // The latest stretch of execution of each task, not yet written.
    let mut open_runs: Vec<Vec<Option<JobRun>>> =
        layout.tasks.iter().map(|&n| vec![None; n]).collect();
    let write_run =
        |out: &mut ChromeWriter<W>, d: usize, t: usize, run: JobRun| -> io::Result<()> {
            let name = format!("{} #{}", names.task_name(d, t), run.seq);
            let (pid, tid) = (layout.domain_pid(d), layout.task_tid(d, t));
            let args = [("job", Arg::U64(run.seq))];
            out.complete(&name, "job", pid, tid, run.start, run.end, &args)
        };

    // Closes a pcpu's current interval at `at` and writes it on the pcpu's track and, when
    // a VCPU ran, on the VCPU's track.
    let close_slot =
        |out: &mut ChromeWriter<W>, pcpu: usize, slot: PcpuSlot, at: Nanos| -> io::Result<()> {
            if at <= slot.since {
                return Ok(());
            }
            let tid = layout.pcpu_tid(PcpuId(pcpu as u32));
            match slot.what {
                Occupant::Idle => out.complete("IDLE", "pcpu", PCPU_PID, tid, slot.since, at, &[]),
                Occupant::Overhead => {
                    out.complete("overhead", "pcpu", PCPU_PID, tid, slot.since, at, &[])
                }
                Occupant::Vcpu(v, reason) => {
                    let label = vcpu_label(v);
                    let args = [("vcpu", Arg::U64(v.0 as u64)), ("reason", Arg::Str(reason))];
                    out.complete(&label, "pcpu", PCPU_PID, tid, slot.since, at, &args)?;
                    let (vpid, vtid) = (layout.vcpu_pid(names, v), layout.vcpu_tid(v));
                    let args = [
                        ("pcpu", Arg::U64(pcpu as u64)),
                        ("reason", Arg::Str(reason)),
                    ];
                    out.complete("running", "vcpu", vpid, vtid, slot.since, at, &args)
                }
            }
        };

    for item in events {
        let item = item?;
        let (at, event) = item.borrow();
        let at = *at;
        match event {
            TraceEvent::Core(core) => {
                if let Some(pcpu) = core_pcpu(core) {
                    let p = pcpu.index();
                    let what = match core {
                        CoreEvent::Switch { to, reason, .. } => match to {
                            Some(v) => Occupant::Vcpu(*v, reason.as_str()),
                            None => Occupant::Idle,
                        },
                        CoreEvent::Resume { vcpu, .. } => match vcpu {
                            Some(v) => Occupant::Vcpu(*v, "resume"),
                            None => Occupant::Idle,
                        },
                        _ => Occupant::Overhead,
                    };
                    close_slot(&mut out, p, pcpu_slots[p], at)?;
                    pcpu_slots[p] = PcpuSlot { since: at, what };
                    continue;
                }
                let (vcpu, name, args): (VcpuId, &str, Vec<(&str, Arg)>) = match core {
                    CoreEvent::Wake { vcpu } => (*vcpu, "wake", vec![]),
                    CoreEvent::Block { vcpu } => (*vcpu, "block", vec![]),
                    CoreEvent::Replenish { vcpu, budget } => (
                        *vcpu,
                        "replenish",
                        vec![("budget_ns", Arg::U64(budget.as_ns()))],
                    ),
                    CoreEvent::BudgetExhausted { vcpu } => (*vcpu, "budget exhausted", vec![]),
                    CoreEvent::BudgetDiscarded { vcpu, amount } => (
                        *vcpu,
                        "budget discarded",
                        vec![("amount_ns", Arg::U64(amount.as_ns()))],
                    ),
                    CoreEvent::Switch { .. }
                    | CoreEvent::Resume { .. }
                    | CoreEvent::Overhead { .. } => unreachable!("pcpu events handled above"),
                };
                let (pid, tid) = (layout.vcpu_pid(names, vcpu), layout.vcpu_tid(vcpu));
                out.instant(name, "vcpu", pid, tid, at, &args)?;
            }
            TraceEvent::Guest(guest) => {
                let (domain, task, seq) = guest_job(guest);
                let (d, t) = (domain as usize, task as usize);
                let (pid, tid) = (layout.domain_pid(d), layout.task_tid(d, t));
                match guest {
                    GuestEvent::Release { .. } => {
                        open_jobs[d][t].push_back((seq, at));
                        out.instant("release", "job", pid, tid, at, &[("job", Arg::U64(seq))])?;
                    }
                    GuestEvent::Run { end, .. } => {
                        // The driver reports execution step by step; adjacent stretches
                        // of one job make one slice.
                        match &mut open_runs[d][t] {
                            Some(run) if run.seq == seq && run.end == at => run.end = *end,
                            slot => {
                                if let Some(run) = slot.take() {
                                    write_run(&mut out, d, t, run)?;
                                }
                                *slot = Some(JobRun {
                                    seq,
                                    start: at,
                                    end: *end,
                                });
                            }
                        }
                    }
                    GuestEvent::Finish { missed, .. } => {
                        if let Some(run) = open_runs[d][t].take() {
                            write_run(&mut out, d, t, run)?;
                        }
                        let released = match open_jobs[d][t].iter().position(|j| j.0 == seq) {
                            Some(i) => open_jobs[d][t].remove(i).map(|j| j.1),
                            None => None,
                        };
                        let args = [("job", Arg::U64(seq)), ("missed", Arg::Bool(*missed))];
                        out.instant("finish", "job", pid, tid, at, &args)?;
                        if *missed {
                            let deadline = match (released, names.deadline(d, t)) {
                                (Some(r), Some(rel)) => r + rel,
                                _ => at,
                            };
                            let args = [("job", Arg::U64(seq))];
                            out.instant("deadline miss", "job", pid, tid, deadline, &args)?;
                        }
                    }
                }
            }
        }
    }
    for (p, slot) in pcpu_slots.iter().enumerate() {
        close_slot(&mut out, p, *slot, end)?;
    }
    for (d, tasks) in open_runs.iter_mut().enumerate() {
        for (t, run) in tasks.iter_mut().enumerate() {
            if let Some(run) = run.take() {
                write_run(&mut out, d, t, run)?;
            }
        }
    }
    // Jobs still unfinished whose deadline passed by the end are missed.
    for (d, tasks) in open_jobs.iter().enumerate() {
        let removed_at = names.domains.get(d).and_then(|n| n.removed_at);
        for (t, jobs) in tasks.iter().enumerate() {
            let Some(relative) = names.deadline(d, t) else {
                continue;
            };
            let (pid, tid) = (layout.domain_pid(d), layout.task_tid(d, t));
            for &(seq, release) in jobs {
                let deadline = release + relative;
                let dropped = removed_at.is_some_and(|r| r < deadline);
                if deadline <= end && !dropped {
                    let args = [("job", Arg::U64(seq)), ("unfinished", Arg::Bool(true))];
                    out.instant("deadline miss", "job", pid, tid, deadline, &args)?;
                }
            }
        }
    }
    out.w.write_all(b"\n]}\n")
}
