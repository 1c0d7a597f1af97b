//! What a driver records while a system runs: a job's life ([`JobRecord`]) and the events
//! a trace is made of ([`TraceEvent`]: the core's, and the guests' [`GuestEvent`]s). The
//! simulator and the host executor record the same events, so one trace writer and one
//! results format serve both.

use rtvmm_core::event::CoreEvent;
use rtvmm_core::guest::Job;
use rtvmm_core::Nanos;

/// What happened to one job.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRecord {
    pub seq: u64,
    pub release: Nanos,
    pub deadline: Nanos,
    pub first_start: Option<Nanos>,
    pub finish: Option<Nanos>,
}

impl JobRecord {
    pub fn from_job(job: &Job, finish: Option<Nanos>) -> JobRecord {
        JobRecord {
            seq: job.seq,
            release: job.release,
            deadline: job.deadline,
            first_start: job.first_start,
            finish,
        }
    }
}

/// A guest-level event, for traces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GuestEvent {
    Release {
        domain: u32,
        task: u32,
        seq: u64,
    },
    /// The job received execution during `[at, end)`, on VCPU `vcpu` of its domain.
    Run {
        domain: u32,
        task: u32,
        seq: u64,
        end: Nanos,
        vcpu: u32,
    },
    Finish {
        domain: u32,
        task: u32,
        seq: u64,
        missed: bool,
    },
}

/// Anything recorded during a run, in time order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TraceEvent {
    Core(CoreEvent),
    Guest(GuestEvent),
}
