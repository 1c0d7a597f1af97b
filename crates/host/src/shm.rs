//! The memory a guest process shares with the executor: its tasks, their state, every
//! job's times, and the switch probe.
//!
//! # Design note
//! One `memfd` per domain, created and sized by the executor, mapped by both sides (the
//! guest gets it as file descriptor [`GUEST_SHM_FD`]). No locks: every field is a 64-bit
//! atomic word with one writer, so a side that dies half-way leaves nothing locked. A
//! memfd disappears with the last process that maps it: nothing to clean up after a crash.
//!
//! Layout (64-bit words; times in nanoseconds **relative to the run's start**, `START`):
//! - **Header** ([`HEADER_WORDS`]): `MAGIC` ("RTVMMSHM"), `VERSION` ([`VERSION`]), the size
//!   in words, the number of tasks, the ring length, the seed and domain index (for the
//!   guest's random streams), `START` (absolute `CLOCK_MONOTONIC` instant of time 0, set
//!   at "go"), the **phase** word (a 32-bit futex: setup → run → finalize), `END`, the
//!   count of ready task threads, and the **switch probe**: the executor writes
//!   `PROBE_AT` (its decision instant) then bumps `PROBE_SEQ`; the first guest thread that
//!   runs afterwards copies the sequence to `ACK_SEQ` with its own clock in `ACK_AT`.
//! - **Per task, configuration** ([`CONFIG_WORDS`], written once by the executor): arrival
//!   kind, period, wcet, min_exec, deadline, offset, priority, the arrival's parameter,
//!   and the `SCHED_FIFO` priority the executor assigned.
//! - **Per task, state** ([`STATE_WORDS`], written by the guest): its thread id; `STATE`,
//!   the **block/wake protocol** ([`TaskState`]): [`BUSY`] while it has a released,
//!   unfinished job, else the instant of its next release ([`NEVER`]: none); the ring's
//!   head (guest) and tail (executor); records lost to a full ring; finalized; the
//!   thread's CPU time (at each job's end and at the end).
//! - **Per task, a ring** of [`RECORD_WORDS`]-word job records (seq, release, first start,
//!   finish; [`NONE`] for "not yet"): single producer (the task's thread), single consumer
//!   (the executor), head and tail counters that only grow.
//! - The page's **kind** ([`PageKind`]): a guest of task threads (above), or one VCPU of a
//!   global guest of several VCPUs, whose one "task" is the VCPU's worker thread and whose
//!   job comes through the **grant** words (`crate::global`): `GRANT` (the executor's:
//!   generation and the job's demand, or none), `DONE` (generation and the CPU time the
//!   job has had; the worker advances it, the executor takes it back, both by
//!   compare-and-swap, so that a worker that lost its grant can never add to it), and the
//!   worker's `RAN_FROM` (when it began running the grant) and `FINISHED_AT` (when the
//!   job reached its demand), each written before the `DONE` update that makes it count.
//!
//! Block and wake, paravirtually (`docs/host.md`): a domain has work iff one of its tasks is
//! `BUSY` or has a release at or before now. When a task runs out of work it writes its
//! next release and rings the executor's eventfd; the executor then blocks the VCPU and
//! owns the wake-up timer (the earliest next release), so a frozen domain is woken at the
//! right time.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use nix::sys::memfd::{memfd_create, MFdFlags};
use nix::sys::mman::{mmap, munmap, MapFlags, ProtFlags};
use nix::unistd::ftruncate;

/// "RTVMMSHM" in ASCII.
pub const MAGIC: u64 = u64::from_be_bytes(*b"RTVMMSHM");
/// Bumped on every change of the layout.
pub const VERSION: u64 = 2;
/// The file descriptor under which a guest process finds its shared memory.
pub const GUEST_SHM_FD: i32 = 3;
/// The file descriptor under which a guest process finds the executor's eventfd.
pub const GUEST_NOTIFY_FD: i32 = 4;

pub const HEADER_WORDS: usize = 32;
pub const CONFIG_WORDS: usize = 16;
pub const STATE_WORDS: usize = 16;
pub const RECORD_WORDS: usize = 4;
/// Job records per task ring by default: at a 1 ms period, four seconds of jobs between
/// two drains (the executor drains at every decision).
pub const DEFAULT_RING_LEN: usize = 4096;

/// The label of a task's random stream, from the page's domain word and the task: no two
/// tasks of a run share draws.
pub fn stream_label(domain: u32, task: usize) -> u64 {
    ((domain as u64 + 1) << 32) | task as u64
}

/// "Not yet" in a record (no start, no finish).
pub const NONE: u64 = u64::MAX;
/// A task's state: it has a released, unfinished job.
pub const BUSY: u64 = u64::MAX - 1;
/// A task's state: no release will ever come.
pub const NEVER: u64 = u64::MAX;

// Header words.
const H_MAGIC: usize = 0;
const H_VERSION: usize = 1;
const H_WORDS: usize = 2;
const H_TASKS: usize = 3;
const H_RING_LEN: usize = 4;
const H_SEED: usize = 5;
const H_DOMAIN: usize = 6;
const H_START: usize = 7;
/// Read only as a 32-bit futex (its low half, at byte 64).
const H_PHASE: usize = 8;
const H_END: usize = 9;
const H_READY: usize = 10;
const H_PROBE_SEQ: usize = 11;
const H_PROBE_AT: usize = 12;
const H_ACK_SEQ: usize = 13;
const H_ACK_AT: usize = 14;
const H_JOIN: usize = 15;
const H_KIND: usize = 16;
const H_GRANT: usize = 17;
const H_DONE: usize = 18;
const H_RAN_FROM: usize = 19;
const H_FINISHED_AT: usize = 20;

/// Bits of a grant word's value (the job's demand, or the CPU time it has had, in ns): a
/// job of a global guest may need up to 2^44 ns (4.9 hours); the 20 bits above are the
/// generation.
pub const GRANT_VALUE_BITS: u32 = 44;
/// The largest demand a grant carries; also "no job" in `GRANT`.
pub const GRANT_VALUE_MAX: u64 = (1 << GRANT_VALUE_BITS) - 1;
/// Generations wrap at this (20 bits).
pub const GRANT_GEN_MODULUS: u32 = 1 << (64 - GRANT_VALUE_BITS);

fn pack(gen: u32, value: u64) -> u64 {
    debug_assert!(value <= GRANT_VALUE_MAX && gen < GRANT_GEN_MODULUS);
    ((gen as u64) << GRANT_VALUE_BITS) | value
}

fn unpack(word: u64) -> (u32, u64) {
    ((word >> GRANT_VALUE_BITS) as u32, word & GRANT_VALUE_MAX)
}

/// What a guest page serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PageKind {
    /// A guest process of task threads (a domain of one VCPU, a partitioned guest's VCPU).
    Tasks = 0,
    /// One VCPU of a global guest of several VCPUs: a worker that runs the job granted.
    GlobalVcpu = 1,
}

// Task state words.
const S_TID: usize = 0;
const S_STATE: usize = 1;
const S_HEAD: usize = 2;
const S_TAIL: usize = 3;
const S_LOST: usize = 4;
const S_FINALIZED: usize = 5;
const S_CPU: usize = 6;

/// The guest's phase (the futex word).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Phase {
    /// Threads are being set up; nothing is released.
    Setup = 0,
    /// The run is on: release jobs from `START`.
    Run = 1,
    /// The run is over: release what is due up to `END`, report every pending job,
    /// finish.
    Finalize = 2,
}

/// How a task's jobs arrive, as the configuration words encode it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArrivalKind {
    Periodic = 0,
    Sporadic = 1,
    Poisson = 2,
}

/// One task's configuration, as the executor writes it for the guest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskConfig {
    pub arrival: ArrivalKind,
    pub period: u64,
    pub wcet: u64,
    pub min_exec: u64,
    pub deadline: u64,
    pub offset: u64,
    pub priority: u32,
    /// Sporadic: the largest extra gap; Poisson: the mean gap; periodic: 0.
    pub arrival_param: u64,
    /// The thread's `SCHED_FIFO` priority inside the guest.
    pub fifo_priority: u32,
}

/// One job as a guest reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobTimes {
    pub seq: u64,
    pub release: u64,
    pub first_start: Option<u64>,
    pub finish: Option<u64>,
}

/// A task's state word, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskState {
    Busy,
    /// Idle until this instant.
    NextRelease(u64),
    /// Idle for good.
    Never,
}

impl TaskState {
    pub fn decode(word: u64) -> TaskState {
        match word {
            BUSY => TaskState::Busy,
            NEVER => TaskState::Never,
            at => TaskState::NextRelease(at),
        }
    }

    pub fn encode(self) -> u64 {
        match self {
            TaskState::Busy => BUSY,
            TaskState::Never => NEVER,
            TaskState::NextRelease(at) => at.min(BUSY - 1),
        }
    }

    /// Whether the task has work at `now`: a job pending, or one due.
    pub fn has_work_at(self, now: u64) -> bool {
        match self {
            TaskState::Busy => true,
            TaskState::NextRelease(at) => at <= now,
            TaskState::Never => false,
        }
    }
}

/// Why a mapping is not a guest's shared memory of this version.
#[derive(Debug, thiserror::Error)]
pub enum ShmError {
    #[error("shared memory: {0}")]
    Io(#[from] io::Error),
    #[error("shared memory: bad magic {0:#x} (not an rtvmm guest page)")]
    Magic(u64),
    #[error("shared memory: layout version {found}, this rtvmm reads version {VERSION}")]
    Version { found: u64 },
    #[error("shared memory: {words} words announced, {mapped} mapped")]
    Size { words: u64, mapped: usize },
}

/// A mapped shared region (either side).
pub struct Shared {
    base: NonNull<AtomicU64>,
    words: usize,
    fd: OwnedFd,
}

// SAFETY: the region is only ever accessed through atomics.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: `base` was returned by mmap for exactly this length and is unmapped once.
        unsafe {
            let _ = munmap(self.base.cast(), self.words * 8);
        }
    }
}

fn map(fd: &OwnedFd, words: usize) -> io::Result<NonNull<AtomicU64>> {
    let len = std::num::NonZeroUsize::new(words * 8).ok_or(io::ErrorKind::InvalidInput)?;
    // SAFETY: a fresh shared mapping of a memfd we hold; nothing else aliases it in this
    // process, and all accesses go through atomics.
    let ptr = unsafe {
        mmap(
            None,
            len,
            ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
            MapFlags::MAP_SHARED,
            fd,
            0,
        )
    }
    .map_err(io::Error::from)?;
    Ok(ptr.cast())
}

/// Words of a region for `tasks` tasks with rings of `ring_len` records.
pub fn words_for(tasks: usize, ring_len: usize) -> usize {
    HEADER_WORDS + tasks * (CONFIG_WORDS + STATE_WORDS + ring_len * RECORD_WORDS)
}

impl Shared {
    /// A new region for `tasks` tasks (the executor's side), zeroed but for its header.
    pub fn create(
        tasks: usize,
        ring_len: usize,
        seed: u64,
        domain: u32,
    ) -> Result<Shared, ShmError> {
        let fd = memfd_create(c"rtvmm-guest", MFdFlags::MFD_CLOEXEC).map_err(io::Error::from)?;
        let words = words_for(tasks, ring_len);
        ftruncate(&fd, (words * 8) as i64).map_err(io::Error::from)?;
        let base = map(&fd, words)?;
        let shared = Shared { base, words, fd };
        shared.set(H_WORDS, words as u64);
        shared.set(H_TASKS, tasks as u64);
        shared.set(H_RING_LEN, ring_len as u64);
        shared.set(H_SEED, seed);
        shared.set(H_DOMAIN, domain as u64);
        for t in 0..tasks {
            shared.set(shared.state_base(t) + S_STATE, NEVER);
        }
        shared.set(H_VERSION, VERSION);
        shared.word(H_MAGIC).store(MAGIC, Ordering::Release);
        Ok(shared)
    }

    /// Maps a region made by [`Shared::create`] (the guest's side), checking its magic,
    /// version and size.
    pub fn open(fd: OwnedFd) -> Result<Shared, ShmError> {
        let header = map(&fd, HEADER_WORDS)?;
        let peek = Shared {
            base: header,
            words: HEADER_WORDS,
            fd: fd.try_clone()?,
        };
        let magic = peek.word(H_MAGIC).load(Ordering::Acquire);
        if magic != MAGIC {
            return Err(ShmError::Magic(magic));
        }
        let version = peek.get(H_VERSION);
        if version != VERSION {
            return Err(ShmError::Version { found: version });
        }
        let words = peek.get(H_WORDS);
        let expected = words_for(peek.get(H_TASKS) as usize, peek.get(H_RING_LEN) as usize);
        let size = nix::sys::stat::fstat(&fd).map_err(io::Error::from)?.st_size as usize;
        if words as usize != expected || size < expected * 8 {
            return Err(ShmError::Size {
                words,
                mapped: size / 8,
            });
        }
        drop(peek);
        let base = map(&fd, expected)?;
        Ok(Shared {
            base,
            words: expected,
            fd,
        })
    }

    /// The memfd, to hand to the guest process.
    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    #[inline]
    fn word(&self, index: usize) -> &AtomicU64 {
        assert!(index < self.words, "word {index} of {}", self.words);
        // SAFETY: in bounds (checked), aligned (mmap is page-aligned), and alive as long
        // as `self`.
        unsafe { &*self.base.as_ptr().add(index) }
    }

    #[inline]
    fn get(&self, index: usize) -> u64 {
        self.word(index).load(Ordering::Acquire)
    }

    #[inline]
    fn set(&self, index: usize, value: u64) {
        self.word(index).store(value, Ordering::Release)
    }

    pub fn tasks(&self) -> usize {
        self.get(H_TASKS) as usize
    }

    pub fn ring_len(&self) -> usize {
        self.get(H_RING_LEN) as usize
    }

    pub fn seed(&self) -> u64 {
        self.get(H_SEED)
    }

    pub fn domain(&self) -> u32 {
        self.get(H_DOMAIN) as u32
    }

    /// The absolute monotonic instant of the run's time 0 (0 before "go").
    pub fn start(&self) -> u64 {
        self.get(H_START)
    }

    /// When the domain joined the run (relative): its releases count from there.
    pub fn join(&self) -> u64 {
        self.get(H_JOIN)
    }

    pub fn set_join(&self, at: u64) {
        self.set(H_JOIN, at);
    }

    pub fn end(&self) -> u64 {
        self.get(H_END)
    }

    /// The phase futex word.
    pub fn phase_word(&self) -> &AtomicU32 {
        // SAFETY: the low half of an aligned u64 word in bounds, accessed only as this
        // AtomicU32 by both sides.
        unsafe { &*(self.word(H_PHASE) as *const AtomicU64 as *const AtomicU32) }
    }

    pub fn phase(&self) -> Phase {
        match self.phase_word().load(Ordering::Acquire) {
            0 => Phase::Setup,
            1 => Phase::Run,
            _ => Phase::Finalize,
        }
    }

    /// Starts the run at absolute instant `start` and wakes the guest's threads.
    pub fn go(&self, start: u64) {
        self.set(H_START, start);
        self.phase_word()
            .store(Phase::Run as u32, Ordering::Release);
        crate::sys::futex_wake_all(self.phase_word(), true);
    }

    /// Ends the run at `end` (relative) and wakes the guest's threads to report.
    pub fn finalize(&self, end: u64) {
        self.set(H_END, end);
        self.phase_word()
            .store(Phase::Finalize as u32, Ordering::Release);
        crate::sys::futex_wake_all(self.phase_word(), true);
    }

    /// A task thread is ready (guest side).
    pub fn mark_ready(&self) {
        self.word(H_READY).fetch_add(1, Ordering::AcqRel);
    }

    pub fn ready(&self) -> usize {
        self.get(H_READY) as usize
    }

    // ---- the switch probe ----

    /// The executor switched this domain in at `at` (relative).
    pub fn probe(&self, at: u64) {
        self.set(H_ACK_AT, 0);
        self.set(H_PROBE_AT, at);
        self.word(H_PROBE_SEQ).fetch_add(1, Ordering::AcqRel);
    }

    /// Guest side: if a probe is unanswered, answer it with `now` (relative). Cheap when
    /// there is nothing to answer (two loads).
    #[inline]
    pub fn answer_probe(&self, now: impl FnOnce() -> u64) {
        let seq = self.word(H_PROBE_SEQ).load(Ordering::Acquire);
        if self.word(H_ACK_SEQ).load(Ordering::Relaxed) != seq {
            // Several threads may race: the first to swap the sequence answers.
            let ack = self.word(H_ACK_SEQ);
            let old = ack.load(Ordering::Acquire);
            if old != seq
                && ack
                    .compare_exchange(old, seq, Ordering::AcqRel, Ordering::Acquire)
                    .is_ok()
            {
                self.set(H_ACK_AT, now());
            }
        }
    }

    /// The executor's side: the probe's instant and the answer's, once answered.
    pub fn probe_answer(&self) -> Option<(u64, u64)> {
        let seq = self.get(H_PROBE_SEQ);
        if seq == 0 || self.get(H_ACK_SEQ) != seq {
            return None;
        }
        let at = self.get(H_ACK_AT);
        // The answer's time is written after the sequence: 0 means not yet.
        (at != 0).then(|| (self.get(H_PROBE_AT), at))
    }

    /// Forgets the answer once read (so that the next probe waits for a fresh one).
    pub fn clear_answer(&self) {
        self.set(H_ACK_AT, 0);
    }

    // ---- a global guest's VCPU: the grant (`crate::global`) ----

    pub fn kind(&self) -> PageKind {
        match self.get(H_KIND) {
            1 => PageKind::GlobalVcpu,
            _ => PageKind::Tasks,
        }
    }

    pub fn set_kind(&self, kind: PageKind) {
        self.set(H_KIND, kind as u64);
    }

    /// Executor side: grants generation `gen` of the VCPU a job that has had `done` of its
    /// `demand` (`None`: no job). `DONE` first, then `GRANT`: a worker that sees the grant
    /// finds its progress.
    pub fn grant(&self, gen: u32, job: Option<(u64, u64)>) {
        let (done, demand) = job.unwrap_or((0, GRANT_VALUE_MAX));
        self.set(H_DONE, pack(gen, done));
        self.set(H_GRANT, pack(gen, demand));
    }

    /// Executor side: takes the grant of generation `gen` back, giving `DONE` generation
    /// `revoked` (no grant's: no worker can add to it any more). Returns the CPU time the
    /// job had under it, final; `None` if `gen` was not the grant's.
    pub fn revoke(&self, gen: u32, revoked: u32) -> Option<u64> {
        let word = self.word(H_DONE);
        let mut current = word.load(Ordering::Acquire);
        loop {
            let (g, done) = unpack(current);
            if g != gen {
                return None;
            }
            match word.compare_exchange_weak(
                current,
                pack(revoked, done),
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Some(done),
                Err(now) => current = now,
            }
        }
    }

    /// The CPU time the granted job has had and its generation (either side).
    pub fn done(&self) -> (u32, u64) {
        unpack(self.get(H_DONE))
    }

    /// Worker side: the grant — its generation and the job's demand (`None`: no job).
    pub fn granted(&self) -> (u32, Option<u64>) {
        let (gen, demand) = unpack(self.get(H_GRANT));
        (gen, (demand != GRANT_VALUE_MAX).then_some(demand))
    }

    /// Worker side: the job of generation `gen` has had `to` (it had `from`, as this worker
    /// last wrote or read it); `false` if the grant was taken back meanwhile (nothing
    /// written).
    pub fn advance(&self, gen: u32, from: u64, to: u64) -> bool {
        self.word(H_DONE)
            .compare_exchange(
                pack(gen, from),
                pack(gen, to.min(GRANT_VALUE_MAX)),
                Ordering::AcqRel,
                Ordering::Acquire,
            )
            .is_ok()
    }

    /// Worker side: when it began running the current grant (relative; before its first
    /// [`Self::advance`] under it).
    pub fn set_ran_from(&self, at: u64) {
        self.set(H_RAN_FROM, at);
    }

    pub fn ran_from(&self) -> u64 {
        self.get(H_RAN_FROM)
    }

    /// Worker side: when the granted job reached its demand (before the [`Self::advance`]
    /// that says so).
    pub fn set_finished_at(&self, at: u64) {
        self.set(H_FINISHED_AT, at);
    }

    pub fn finished_at(&self) -> u64 {
        self.get(H_FINISHED_AT)
    }

    // ---- tasks ----

    fn config_base(&self, task: usize) -> usize {
        assert!(task < self.tasks());
        HEADER_WORDS + task * CONFIG_WORDS
    }

    fn state_base(&self, task: usize) -> usize {
        HEADER_WORDS + self.tasks() * CONFIG_WORDS + task * STATE_WORDS
    }

    fn ring_base(&self, task: usize) -> usize {
        HEADER_WORDS
            + self.tasks() * (CONFIG_WORDS + STATE_WORDS)
            + task * self.ring_len() * RECORD_WORDS
    }

    pub fn write_config(&self, task: usize, c: &TaskConfig) {
        let b = self.config_base(task);
        let values = [
            c.arrival as u64,
            c.period,
            c.wcet,
            c.min_exec,
            c.deadline,
            c.offset,
            c.priority as u64,
            c.arrival_param,
            c.fifo_priority as u64,
        ];
        for (i, v) in values.into_iter().enumerate() {
            self.set(b + i, v);
        }
    }

    pub fn config(&self, task: usize) -> TaskConfig {
        let b = self.config_base(task);
        TaskConfig {
            arrival: match self.get(b) {
                1 => ArrivalKind::Sporadic,
                2 => ArrivalKind::Poisson,
                _ => ArrivalKind::Periodic,
            },
            period: self.get(b + 1),
            wcet: self.get(b + 2),
            min_exec: self.get(b + 3),
            deadline: self.get(b + 4),
            offset: self.get(b + 5),
            priority: self.get(b + 6) as u32,
            arrival_param: self.get(b + 7),
            fifo_priority: self.get(b + 8) as u32,
        }
    }

    pub fn set_tid(&self, task: usize, tid: i32) {
        self.set(self.state_base(task) + S_TID, tid as u64);
    }

    pub fn tid(&self, task: usize) -> i32 {
        self.get(self.state_base(task) + S_TID) as i32
    }

    pub fn set_state(&self, task: usize, state: TaskState) {
        self.set(self.state_base(task) + S_STATE, state.encode());
    }

    pub fn state(&self, task: usize) -> TaskState {
        TaskState::decode(self.get(self.state_base(task) + S_STATE))
    }

    /// Whether any task has work at `now`, and otherwise the earliest next release.
    pub fn work_at(&self, now: u64) -> Result<(), Option<u64>> {
        let mut next: Option<u64> = None;
        for t in 0..self.tasks() {
            match self.state(t) {
                s if s.has_work_at(now) => return Ok(()),
                TaskState::NextRelease(at) => next = Some(next.map_or(at, |n| n.min(at))),
                _ => {}
            }
        }
        Err(next)
    }

    pub fn mark_finalized(&self, task: usize) {
        self.set(self.state_base(task) + S_FINALIZED, 1);
    }

    pub fn finalized(&self, task: usize) -> bool {
        self.get(self.state_base(task) + S_FINALIZED) != 0
    }

    /// Guest side: the task thread's CPU time so far.
    pub fn set_cpu(&self, task: usize, ns: u64) {
        self.set(self.state_base(task) + S_CPU, ns);
    }

    /// The CPU time the task's thread reported last (at each job's end and at the end).
    pub fn cpu(&self, task: usize) -> u64 {
        self.get(self.state_base(task) + S_CPU)
    }

    /// Records lost because the task's ring was full.
    pub fn lost(&self, task: usize) -> u64 {
        self.get(self.state_base(task) + S_LOST)
    }

    /// Guest side: appends a job record; `false` (and the loss counted) if the ring is
    /// full.
    pub fn push(&self, task: usize, job: &JobTimes) -> bool {
        let s = self.state_base(task);
        let head = self.word(s + S_HEAD).load(Ordering::Relaxed);
        let tail = self.get(s + S_TAIL);
        let len = self.ring_len() as u64;
        if head - tail >= len {
            self.word(s + S_LOST).fetch_add(1, Ordering::AcqRel);
            return false;
        }
        let r = self.ring_base(task) + (head % len) as usize * RECORD_WORDS;
        self.word(r).store(job.seq, Ordering::Relaxed);
        self.word(r + 1).store(job.release, Ordering::Relaxed);
        self.word(r + 2)
            .store(job.first_start.unwrap_or(NONE), Ordering::Relaxed);
        self.word(r + 3)
            .store(job.finish.unwrap_or(NONE), Ordering::Relaxed);
        self.set(s + S_HEAD, head + 1);
        true
    }

    /// Whether the task's ring has room for one more record.
    pub fn has_room(&self, task: usize) -> bool {
        let s = self.state_base(task);
        self.get(s + S_HEAD) - self.get(s + S_TAIL) < self.ring_len() as u64
    }

    /// Executor side: takes every record written since the last drain.
    pub fn drain(&self, task: usize, mut f: impl FnMut(JobTimes)) {
        let s = self.state_base(task);
        let head = self.get(s + S_HEAD);
        let tail = self.get(s + S_TAIL);
        let len = self.ring_len() as u64;
        let opt = |v: u64| (v != NONE).then_some(v);
        for i in tail..head {
            let r = self.ring_base(task) + (i % len) as usize * RECORD_WORDS;
            f(JobTimes {
                seq: self.get(r),
                release: self.get(r + 1),
                first_start: opt(self.get(r + 2)),
                finish: opt(self.get(r + 3)),
            });
        }
        self.set(s + S_TAIL, head);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> TaskConfig {
        TaskConfig {
            arrival: ArrivalKind::Sporadic,
            period: 10_000_000,
            wcet: 2_000_000,
            min_exec: 1_000_000,
            deadline: 9_000_000,
            offset: 500,
            priority: 3,
            arrival_param: 7,
            fifo_priority: 44,
        }
    }

    fn job(seq: u64) -> JobTimes {
        JobTimes {
            seq,
            release: seq * 10,
            first_start: Some(seq * 10 + 1),
            finish: seq.is_multiple_of(2).then_some(seq * 10 + 5),
        }
    }

    /// The guest's view (opened from the fd) sees what the executor wrote, and the
    /// reverse: one region, two mappings.
    #[test]
    fn both_sides_see_one_region() {
        let exec = Shared::create(2, 8, 42, 3).unwrap();
        exec.write_config(1, &config());
        let guest = Shared::open(exec.fd().try_clone_to_owned().unwrap()).unwrap();
        assert_eq!((guest.tasks(), guest.ring_len()), (2, 8));
        assert_eq!((guest.seed(), guest.domain()), (42, 3));
        assert_eq!(guest.config(1), config());
        assert_eq!(guest.phase(), Phase::Setup);
        exec.go(123);
        assert_eq!((guest.phase(), guest.start()), (Phase::Run, 123));
        guest.set_tid(0, 777);
        guest.mark_ready();
        assert_eq!((exec.tid(0), exec.ready()), (777, 1));
    }

    /// A record ring hands over every record once, in order, and counts (not overwrites)
    /// what does not fit.
    #[test]
    fn rings_hand_over_records_once_in_order_and_count_what_is_lost() {
        let shared = Shared::create(1, 4, 0, 0).unwrap();
        for seq in 0..6 {
            let pushed = shared.push(0, &job(seq));
            assert_eq!(pushed, seq < 4, "seq {seq}");
        }
        assert_eq!(shared.lost(0), 2);
        assert!(!shared.has_room(0));
        let mut got = Vec::new();
        shared.drain(0, |j| got.push(j));
        assert_eq!(got, (0..4).map(job).collect::<Vec<_>>());
        // Wrapping around: the ring's slots are reused after a drain.
        for seq in 10..13 {
            assert!(shared.push(0, &job(seq)));
        }
        got.clear();
        shared.drain(0, |j| got.push(j));
        assert_eq!(got, (10..13).map(job).collect::<Vec<_>>());
        shared.drain(0, |_| panic!("drained twice"));
    }

    /// The block/wake protocol: a domain has work iff a task is busy or due; otherwise the
    /// executor learns the earliest next release (tasks that never release again do not
    /// count).
    #[test]
    fn a_domain_has_work_iff_a_task_is_busy_or_due() {
        let shared = Shared::create(3, 4, 0, 0).unwrap();
        assert_eq!(shared.work_at(0), Err(None), "nothing ever");
        shared.set_state(0, TaskState::NextRelease(500));
        shared.set_state(1, TaskState::NextRelease(300));
        assert_eq!(shared.work_at(100), Err(Some(300)));
        assert_eq!(shared.work_at(300), Ok(()), "due counts as work");
        shared.set_state(1, TaskState::Never);
        assert_eq!(shared.work_at(300), Err(Some(500)));
        shared.set_state(2, TaskState::Busy);
        assert_eq!(shared.work_at(0), Ok(()));
        for state in [TaskState::Busy, TaskState::Never, TaskState::NextRelease(9)] {
            assert_eq!(TaskState::decode(state.encode()), state);
        }
    }

    /// The switch probe is answered once, by the first thread to run after it.
    #[test]
    fn a_probe_is_answered_once_by_the_first_runner() {
        let shared = Shared::create(1, 4, 0, 0).unwrap();
        assert_eq!(shared.probe_answer(), None);
        shared.probe(1_000);
        assert_eq!(shared.probe_answer(), None, "not yet answered");
        shared.answer_probe(|| 1_250);
        shared.answer_probe(|| panic!("answered twice"));
        assert_eq!(shared.probe_answer(), Some((1_000, 1_250)));
        shared.clear_answer();
        shared.probe(2_000);
        assert_eq!(shared.probe_answer(), None);
        shared.answer_probe(|| 2_100);
        assert_eq!(shared.probe_answer(), Some((2_000, 2_100)));
    }

    /// A mapping that is not a guest page of this version is refused, saying why.
    #[test]
    fn a_foreign_or_newer_layout_is_refused() {
        let shared = Shared::create(1, 4, 0, 0).unwrap();
        shared.set(H_VERSION, VERSION + 1);
        let err = Shared::open(shared.fd().try_clone_to_owned().unwrap())
            .err()
            .unwrap();
        assert!(err.to_string().contains("layout version 3"), "{err}");
        shared.set(H_MAGIC, 0xdead);
        let err = Shared::open(shared.fd().try_clone_to_owned().unwrap())
            .err()
            .unwrap();
        assert!(err.to_string().contains("bad magic"), "{err}");
    }
}
