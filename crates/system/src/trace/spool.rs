//! A trace that streams out of memory as it is recorded ([`TraceSpool`]).
//!
//! The writers need the events in time order, and the Chrome writer needs to know every
//! track before the first event; a driver records events nearly, but not exactly, in time
//! order (a Polling Server's discard is stamped with the instant the discarded time
//! began). So the spool keeps one chunk of events in memory; a full chunk is sorted (a
//! stable sort: events of one instant keep the order they were recorded in) and appended
//! to an unnamed temporary file as fixed-size records. Writing merges the sorted chunks,
//! taking on equal instants the earlier chunk first: exactly the order of one stable sort
//! of the whole trace, so the bytes are those [`super::write_trace`] writes for the same
//! events. Memory: one chunk ([`CHUNK_EVENTS`] events, about 40 MB) while recording, and
//! a read buffer of 19 KB per spilled chunk while writing.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use rtvmm_core::event::{CoreEvent, ScheduleReason};
use rtvmm_core::model::{PcpuId, VcpuId};
use rtvmm_core::Nanos;

use super::{write_events, Event, TraceExtent, TraceFormat, TraceNames};
use crate::records::{GuestEvent, TraceEvent};

/// Events kept in memory before a chunk is spilled.
pub const CHUNK_EVENTS: usize = 1 << 20;

/// Bytes of one spilled event: time (8), kind (1), flags (1), three 32-bit fields (12),
/// two 64-bit fields (16).
const RECORD: usize = 38;

/// Records read at once from one spilled chunk while merging.
const READ_RECORDS: usize = 512;

/// A trace recorded in bounded memory (module note). Record with [`TraceSpool::record`],
/// then [`TraceSpool::finish`] and [`TraceSpool::write`].
pub struct TraceSpool {
    dir: PathBuf,
    chunk_events: usize,
    chunk: Vec<Event>,
    /// The temporary file, made at the first spill.
    spill: Option<BufWriter<File>>,
    /// The file once [`TraceSpool::finish`]ed.
    file: Option<File>,
    /// Spilled chunks: (first record, records).
    runs: Vec<(u64, u64)>,
    spilled: u64,
    extent: TraceExtent,
    /// The first error while spilling; reported by `finish` and `write`.
    error: Option<io::Error>,
}

impl TraceSpool {
    /// A spool whose temporary file (made only when a chunk fills) goes in `dir`: put it
    /// beside the trace's output, on a disk rather than a memory-backed `/tmp`.
    pub fn new(dir: &Path) -> TraceSpool {
        TraceSpool::with_chunk_events(dir, CHUNK_EVENTS)
    }

    /// A spool that spills every `events` events (tests use small chunks).
    pub fn with_chunk_events(dir: &Path, events: usize) -> TraceSpool {
        TraceSpool {
            dir: dir.to_path_buf(),
            chunk_events: events.max(1),
            chunk: Vec::new(),
            spill: None,
            file: None,
            runs: Vec::new(),
            spilled: 0,
            extent: TraceExtent::default(),
            error: None,
        }
    }

    /// Records one event.
    pub fn record(&mut self, at: Nanos, event: TraceEvent) {
        self.extent.see(at, &event);
        self.chunk.push((at, event));
        if self.chunk.len() >= self.chunk_events {
            self.spill_chunk();
        }
    }

    /// Events recorded so far.
    pub fn len(&self) -> u64 {
        self.spilled + self.chunk.len() as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sorts the chunk in memory and appends it to the temporary file.
    fn spill_chunk(&mut self) {
        if self.chunk.is_empty() {
            return;
        }
        self.chunk.sort_by_key(|e| e.0);
        if self.error.is_none() {
            if let Err(e) = self.append_chunk() {
                self.error = Some(e);
            }
        }
        // After an error the events are dropped: memory stays bounded, and the error is
        // reported at the end.
        self.chunk.clear();
    }

    fn append_chunk(&mut self) -> io::Result<()> {
        if self.spill.is_none() {
            let file = tempfile::tempfile_in(&self.dir).map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!(
                        "cannot make the trace's temporary file in {}: {e}",
                        self.dir.display()
                    ),
                )
            })?;
            self.spill = Some(BufWriter::with_capacity(1 << 16, file));
        }
        let spill = self.spill.as_mut().expect("made above");
        let mut record = [0u8; RECORD];
        for (at, event) in &self.chunk {
            encode(*at, event, &mut record);
            spill.write_all(&record)?;
        }
        let count = self.chunk.len() as u64;
        self.runs.push((self.spilled, count));
        self.spilled += count;
        Ok(())
    }

    /// Ends the recording: a trace that spilled spills its last chunk too.
    pub fn finish(&mut self) -> io::Result<()> {
        if !self.runs.is_empty() {
            self.spill_chunk();
        } else {
            self.chunk.sort_by_key(|e| e.0);
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if let Some(spill) = self.spill.take() {
            self.file = Some(spill.into_inner().map_err(|e| e.into_error())?);
        }
        Ok(())
    }

    /// Writes the trace as [`super::write_trace_marked`] would write the same events
    /// held in memory. Call [`TraceSpool::finish`] first.
    pub fn write(
        &self,
        w: &mut impl Write,
        format: TraceFormat,
        names: &TraceNames,
        partial: Option<&str>,
    ) -> io::Result<()> {
        match &self.file {
            None => {
                // Never spilled: the chunk is the trace, sorted by `finish`.
                let events = self.chunk.iter().map(Ok);
                write_events(w, format, events, &self.extent, names, partial)
            }
            Some(file) => {
                let merge = Merge::new(file, &self.runs)?;
                write_events(w, format, merge, &self.extent, names, partial)
            }
        }
    }
}

/// Reads one spilled chunk, a buffer at a time.
struct RunReader<'f> {
    file: &'f File,
    /// Byte offset of the next unread record, and the end of the chunk.
    next: u64,
    end: u64,
    buffer: Vec<u8>,
    at: usize,
}

impl RunReader<'_> {
    fn next_event(&mut self) -> io::Result<Option<Event>> {
        if self.at == self.buffer.len() {
            if self.next == self.end {
                return Ok(None);
            }
            let len = (self.end - self.next).min((READ_RECORDS * RECORD) as u64) as usize;
            self.buffer.resize(len, 0);
            read_exact_at(self.file, &mut self.buffer, self.next)?;
            self.next += len as u64;
            self.at = 0;
        }
        let record = &self.buffer[self.at..self.at + RECORD];
        self.at += RECORD;
        decode(record).map(Some)
    }
}

/// The spilled chunks merged into one time order; on equal instants the earlier chunk
/// first, as a stable sort of the whole trace has them.
struct Merge<'f> {
    readers: Vec<RunReader<'f>>,
    heads: Vec<Option<Event>>,
    /// (instant, chunk) of each chunk's next event.
    queue: BinaryHeap<Reverse<(Nanos, usize)>>,
}

impl<'f> Merge<'f> {
    fn new(file: &'f File, runs: &[(u64, u64)]) -> io::Result<Merge<'f>> {
        let mut merge = Merge {
            readers: Vec::with_capacity(runs.len()),
            heads: Vec::with_capacity(runs.len()),
            queue: BinaryHeap::with_capacity(runs.len()),
        };
        for (i, &(first, count)) in runs.iter().enumerate() {
            let mut reader = RunReader {
                file,
                next: first * RECORD as u64,
                end: (first + count) * RECORD as u64,
                buffer: Vec::new(),
                at: 0,
            };
            let head = reader.next_event()?;
            if let Some((at, _)) = &head {
                merge.queue.push(Reverse((*at, i)));
            }
            merge.readers.push(reader);
            merge.heads.push(head);
        }
        Ok(merge)
    }
}

impl Iterator for Merge<'_> {
    type Item = io::Result<Event>;

    fn next(&mut self) -> Option<io::Result<Event>> {
        let Reverse((_, i)) = self.queue.pop()?;
        let event = self.heads[i].take().expect("a queued chunk has a head");
        match self.readers[i].next_event() {
            Ok(Some(next)) => {
                self.queue.push(Reverse((next.0, i)));
                self.heads[i] = Some(next);
            }
            Ok(None) => {}
            Err(e) => return Some(Err(e)),
        }
        Some(Ok(event))
    }
}

#[cfg(unix)]
fn read_exact_at(file: &File, buffer: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buffer, offset)
}

#[cfg(windows)]
fn read_exact_at(file: &File, mut buffer: &mut [u8], mut offset: u64) -> io::Result<()> {
    use std::os::windows::fs::FileExt;
    while !buffer.is_empty() {
        let n = file.seek_read(buffer, offset)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buffer = &mut buffer[n..];
        offset += n as u64;
    }
    Ok(())
}

const REASONS: [ScheduleReason; 5] = [
    ScheduleReason::Block,
    ScheduleReason::BudgetExhausted,
    ScheduleReason::Preempt,
    ScheduleReason::Tick,
    ScheduleReason::Reconfigure,
];

/// The fields of one record besides its time.
#[derive(Default)]
struct Fields {
    kind: u8,
    flags: u8,
    x: u32,
    y: u32,
    z: u32,
    m: u64,
    n: u64,
}

fn vcpu_field(v: Option<VcpuId>, bit: u8, flags: &mut u8) -> u32 {
    match v {
        Some(v) => {
            *flags |= bit;
            v.0
        }
        None => 0,
    }
}

fn encode(at: Nanos, event: &TraceEvent, out: &mut [u8; RECORD]) {
    let mut f = Fields::default();
    match event {
        TraceEvent::Core(c) => match c {
            CoreEvent::Switch {
                pcpu,
                from,
                to,
                reason,
            } => {
                f.kind = 0;
                f.x = pcpu.0;
                f.y = vcpu_field(*from, 1, &mut f.flags);
                f.z = vcpu_field(*to, 2, &mut f.flags);
                f.m = REASONS
                    .iter()
                    .position(|r| r == reason)
                    .expect("every reason") as u64;
            }
            CoreEvent::Resume { pcpu, vcpu } => {
                f.kind = 1;
                f.x = pcpu.0;
                f.y = vcpu_field(*vcpu, 1, &mut f.flags);
            }
            CoreEvent::Overhead { pcpu, cost } => {
                f.kind = 2;
                f.x = pcpu.0;
                f.m = cost.as_ns();
            }
            CoreEvent::Wake { vcpu } => (f.kind, f.x) = (3, vcpu.0),
            CoreEvent::Block { vcpu } => (f.kind, f.x) = (4, vcpu.0),
            CoreEvent::Replenish { vcpu, budget } => {
                (f.kind, f.x, f.m) = (5, vcpu.0, budget.as_ns())
            }
            CoreEvent::BudgetExhausted { vcpu } => (f.kind, f.x) = (6, vcpu.0),
            CoreEvent::BudgetDiscarded { vcpu, amount } => {
                (f.kind, f.x, f.m) = (7, vcpu.0, amount.as_ns())
            }
        },
        TraceEvent::Guest(g) => match g {
            GuestEvent::Release { domain, task, seq } => {
                (f.kind, f.x, f.y, f.m) = (8, *domain, *task, *seq)
            }
            GuestEvent::Run {
                domain,
                task,
                seq,
                end,
                vcpu,
            } => (f.kind, f.x, f.y, f.z, f.m, f.n) = (9, *domain, *task, *vcpu, *seq, end.as_ns()),
            GuestEvent::Finish {
                domain,
                task,
                seq,
                missed,
            } => {
                (f.kind, f.x, f.y, f.m) = (10, *domain, *task, *seq);
                f.flags = u8::from(*missed);
            }
        },
    }
    out[0..8].copy_from_slice(&at.as_ns().to_le_bytes());
    out[8] = f.kind;
    out[9] = f.flags;
    out[10..14].copy_from_slice(&f.x.to_le_bytes());
    out[14..18].copy_from_slice(&f.y.to_le_bytes());
    out[18..22].copy_from_slice(&f.z.to_le_bytes());
    out[22..30].copy_from_slice(&f.m.to_le_bytes());
    out[30..38].copy_from_slice(&f.n.to_le_bytes());
}

fn decode(record: &[u8]) -> io::Result<Event> {
    let u32_at = |i: usize| u32::from_le_bytes(record[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(record[i..i + 8].try_into().expect("8 bytes"));
    let at = Nanos(u64_at(0));
    let (kind, flags) = (record[8], record[9]);
    let (x, y, z, m, n) = (u32_at(10), u32_at(14), u32_at(18), u64_at(22), u64_at(30));
    let vcpu = |bit: u8, id: u32| (flags & bit != 0).then_some(VcpuId(id));
    let event = match kind {
        0 => TraceEvent::Core(CoreEvent::Switch {
            pcpu: PcpuId(x),
            from: vcpu(1, y),
            to: vcpu(2, z),
            reason: *REASONS
                .get(m as usize)
                .ok_or_else(|| corrupt("a schedule reason"))?,
        }),
        1 => TraceEvent::Core(CoreEvent::Resume {
            pcpu: PcpuId(x),
            vcpu: vcpu(1, y),
        }),
        2 => TraceEvent::Core(CoreEvent::Overhead {
            pcpu: PcpuId(x),
            cost: Nanos(m),
        }),
        3 => TraceEvent::Core(CoreEvent::Wake { vcpu: VcpuId(x) }),
        4 => TraceEvent::Core(CoreEvent::Block { vcpu: VcpuId(x) }),
        5 => TraceEvent::Core(CoreEvent::Replenish {
            vcpu: VcpuId(x),
            budget: Nanos(m),
        }),
        6 => TraceEvent::Core(CoreEvent::BudgetExhausted { vcpu: VcpuId(x) }),
        7 => TraceEvent::Core(CoreEvent::BudgetDiscarded {
            vcpu: VcpuId(x),
            amount: Nanos(m),
        }),
        8 => TraceEvent::Guest(GuestEvent::Release {
            domain: x,
            task: y,
            seq: m,
        }),
        9 => TraceEvent::Guest(GuestEvent::Run {
            domain: x,
            task: y,
            seq: m,
            end: Nanos(n),
            vcpu: z,
        }),
        10 => TraceEvent::Guest(GuestEvent::Finish {
            domain: x,
            task: y,
            seq: m,
            missed: flags & 1 != 0,
        }),
        _ => return Err(corrupt("an event kind")),
    };
    Ok((at, event))
}

/// The temporary file did not read back what was written (it was changed under us).
fn corrupt(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("the trace's temporary file holds an unknown value for {what}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::write_trace_marked;

    /// Events in nearly time order, as a driver records them: some stamped earlier than
    /// events recorded before them, and many of one instant.
    fn events() -> Vec<Event> {
        let mut out = Vec::new();
        for step in 0..400u64 {
            let seq = step;
            let at = Nanos(step * 1000);
            let v = VcpuId((step % 3) as u32);
            out.push((
                at,
                TraceEvent::Guest(GuestEvent::Release {
                    domain: (step % 2) as u32,
                    task: (step % 4) as u32,
                    seq,
                }),
            ));
            out.push((
                at,
                TraceEvent::Core(CoreEvent::Switch {
                    pcpu: PcpuId((step % 2) as u32),
                    from: (step % 5 != 0).then_some(v),
                    to: (step % 7 != 0).then_some(VcpuId(((step + 1) % 3) as u32)),
                    reason: REASONS[(step % 5) as usize],
                }),
            ));
            out.push((
                at,
                TraceEvent::Guest(GuestEvent::Run {
                    domain: (step % 2) as u32,
                    task: (step % 4) as u32,
                    seq,
                    end: at + Nanos(1000),
                    vcpu: 0,
                }),
            ));
            if step % 9 == 3 {
                // Stamped back in time, as a Polling Server's discard.
                let back = Nanos((step - 3) * 1000 + 500);
                out.push((
                    back,
                    TraceEvent::Core(CoreEvent::BudgetDiscarded {
                        vcpu: v,
                        amount: Nanos(77),
                    }),
                ));
            }
            out.push((
                at + Nanos(1000),
                TraceEvent::Guest(GuestEvent::Finish {
                    domain: (step % 2) as u32,
                    task: (step % 4) as u32,
                    seq,
                    missed: step % 11 == 0,
                }),
            ));
            out.push((at, TraceEvent::Core(CoreEvent::Wake { vcpu: v })));
            out.push((
                at,
                TraceEvent::Core(CoreEvent::Replenish {
                    vcpu: v,
                    budget: Nanos(step),
                }),
            ));
            out.push((at, TraceEvent::Core(CoreEvent::BudgetExhausted { vcpu: v })));
            out.push((at, TraceEvent::Core(CoreEvent::Block { vcpu: v })));
            out.push((
                at,
                TraceEvent::Core(CoreEvent::Overhead {
                    pcpu: PcpuId(1),
                    cost: Nanos(3),
                }),
            ));
            out.push((
                at,
                TraceEvent::Core(CoreEvent::Resume {
                    pcpu: PcpuId(1),
                    vcpu: (step % 2 == 0).then_some(v),
                }),
            ));
        }
        out
    }

    #[test]
    fn records_read_back_as_written() {
        let mut record = [0u8; RECORD];
        for (at, event) in events() {
            encode(at, &event, &mut record);
            assert_eq!(decode(&record).unwrap(), (at, event));
        }
    }

    #[test]
    fn a_spilled_trace_writes_the_bytes_of_the_trace_in_memory() {
        let dir = tempfile::tempdir().unwrap();
        let trace = events();
        let names = TraceNames {
            pcpus: 2,
            end: Some(Nanos(500_000)),
            ..TraceNames::default()
        };
        for format in [TraceFormat::ChromeJson, TraceFormat::Csv] {
            for partial in [None, Some("interrupted by SIGINT at 400us of 1s")] {
                let mut expected = Vec::new();
                write_trace_marked(&mut expected, format, &trace, &names, partial).unwrap();
                // Chunks of one event, of a few, of a prime number, and one chunk.
                for chunk in [1, 7, 100, 1 << 20] {
                    let mut spool = TraceSpool::with_chunk_events(dir.path(), chunk);
                    for (at, event) in trace.iter().cloned() {
                        spool.record(at, event);
                    }
                    spool.finish().unwrap();
                    let mut bytes = Vec::new();
                    spool.write(&mut bytes, format, &names, partial).unwrap();
                    assert!(
                        bytes == expected,
                        "{format:?}, chunks of {chunk}, partial {partial:?}: bytes differ"
                    );
                }
            }
        }
    }
}
