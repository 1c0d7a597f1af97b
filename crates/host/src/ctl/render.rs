//! Replies as text, the way `xl` prints them: a header line, then one row per domain.

use rtvmm_core::Nanos;

use super::protocol::{Reply, SchedShow};

/// A time column: `-` when unknown.
fn time(ns: Option<u64>) -> String {
    ns.map_or_else(|| "-".to_string(), readable)
}

/// A time as a person reads it: exact when it is a whole number of microseconds or more
/// (a parameter: `2ms`, `500us`), else in milliseconds to the microsecond (a measured
/// figure: `2.993ms`, `0.000ms` for under 0.5 µs).
fn readable(ns: u64) -> String {
    if ns.is_multiple_of(1_000) {
        Nanos(ns).to_string()
    } else {
        format!("{:.3}ms", ns as f64 / 1e6)
    }
}

/// A count column: `-` when unknown.
fn count(n: Option<u64>) -> String {
    n.map_or_else(|| "-".to_string(), |n| n.to_string())
}

/// The text of a successful reply (an error's message is the caller's to print).
pub fn text(reply: &Reply) -> String {
    match reply {
        Reply::Done { message } => format!("{message}\n"),
        Reply::Show(show) => table(show),
        Reply::Error { message, .. } => format!("error: {message}\n"),
    }
}

/// `sched-show` as a table. Budget and period read `-` when unset (a policy that does not
/// read them); Remaining is the budget left in the current period, Credit the Credit
/// balance (shown under Credit only).
pub fn table(show: &SchedShow) -> String {
    let with_credit = show.domains.iter().any(|d| d.credit_ns.is_some());
    let mut header = vec![
        "Name",
        "ID",
        "Budget",
        "Period",
        "Prio",
        "Weight",
        "Cap",
        "Extra",
        "Work",
        "Remaining",
    ];
    if with_credit {
        header.push("Credit");
    }
    header.extend(["Run", "Jobs", "Misses"]);
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for d in &show.domains {
        let nonzero = |ns: u64| (ns > 0).then_some(ns);
        let mut row = vec![
            d.name.clone(),
            d.vcpu.to_string(),
            time(nonzero(d.budget_ns)),
            time(nonzero(d.period_ns)),
            d.priority.to_string(),
            d.weight.to_string(),
            d.cap.to_string(),
            if d.extratime { "yes" } else { "no" }.to_string(),
            if d.running {
                "running"
            } else if d.has_work {
                "waiting"
            } else {
                "idle"
            }
            .to_string(),
            time(d.remaining_budget_ns),
        ];
        if with_credit {
            row.push(d.credit_ns.map_or_else(
                || "-".to_string(),
                |c| {
                    let sign = if c < 0 { "-" } else { "" };
                    format!("{sign}{}", readable(c.unsigned_abs()))
                },
            ));
        }
        row.extend([time(Some(d.run_ns)), count(d.jobs), count(d.misses)]);
        rows.push(row);
    }
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = format!(
        "policy {}, as of {} into the run\n",
        show.policy,
        readable(show.as_of_ns)
    );
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                // Names left-aligned, figures right-aligned.
                if c == 0 {
                    format!("{cell:<w$}", w = widths[c])
                } else {
                    format!("{cell:>w$}", w = widths[c])
                }
            })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}
