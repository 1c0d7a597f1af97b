//! Rendering a [`Report`]: the readable table ([`Report::table`]), JSON
//! ([`Report::to_json`]) and `xl sched-rtds` lines ([`Report::xl_commands`]); the verdicts'
//! words are [`crate::words`]'s, the names [`crate::names`]'.

mod table;
mod xl;

use crate::report::Report;

impl Report {
    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the report serialises")
    }
}
