//! The names every output shares: guest schedulers, server kinds and sbf forms as the
//! scenario format and the table write them, times for display, and the small enums a
//! task's and an interface's provenance are reported by.

use rtvmm_analysis::{GuestScheduler as AnalysisGuest, ServerKind, SupplyForm};
use rtvmm_core::Nanos;
use serde::Serialize;

/// What kind of task (as written; CARTS children are components).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskKind {
    Periodic,
    Sporadic,
    Aperiodic,
    /// A CARTS child component's interface.
    Component,
}

/// Where a domain's interface comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum InterfaceSource {
    /// Algorithm 1.
    #[serde(rename = "optimal")]
    Optimal,
    /// `(Π, MinExec(Π))`.
    #[serde(rename = "fixed period")]
    FixedPeriod,
    /// The VCPU's own (`--given`).
    #[serde(rename = "given")]
    Given,
    /// A CARTS component's own period and budget.
    #[serde(rename = "carts (fixed)")]
    CartsFixed,
    /// A domain without tasks: its VCPU.
    #[serde(rename = "vcpu (no tasks)")]
    Vcpu,
}

/// A time in the analysis's ns, for display.
pub(crate) fn ns(t: u64) -> Nanos {
    Nanos::from_ns(t)
}

/// A guest scheduler's name as the scenario format writes it.
pub(crate) fn guest_name(guest: AnalysisGuest) -> &'static str {
    match guest {
        AnalysisGuest::Rm => "rm",
        AnalysisGuest::Dm => "dm",
        AnalysisGuest::Edf => "edf",
    }
}

/// A server kind by name.
pub(crate) fn server_name(kind: ServerKind) -> &'static str {
    match kind {
        ServerKind::Deferrable => "Deferrable Server",
        ServerKind::Periodic => "Periodic Server",
        ServerKind::Polling => "Polling Server",
        ServerKind::Sporadic => "Sporadic Server",
        ServerKind::SporadicMerging => "Sporadic Server (merging replenishments)",
    }
}

/// An sbf form by name.
pub(crate) fn supply_name(form: SupplyForm) -> &'static str {
    match form {
        SupplyForm::Harmonic => "harmonic",
        SupplyForm::General => "general",
    }
}
