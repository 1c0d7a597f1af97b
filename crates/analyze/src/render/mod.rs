//! Rendering a [`Report`]: the readable table ([`Report::table`]), JSON
//! ([`Report::to_json`]) and `xl sched-rtds` lines ([`Report::xl_commands`]); the verdicts'
//! words ([`words`]) and the names shared by all of them.

mod table;
pub(crate) mod words;
mod xl;

use rtvmm_analysis::{GuestScheduler as AnalysisGuest, ServerKind, SupplyForm};
use rtvmm_core::Nanos;

use super::report::Report;

impl Report {
    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the report serialises")
    }
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
