//! `rtvmm compare A.json B.json`: two run-results files side by side — per domain the
//! jobs counted, the deadline miss ratio and the responsiveness percentiles of each, and
//! B − A — for example a simulated run against a real one of the same scenario.
//!
//! Domains are matched by name, in A's order, then B's extra ones; a domain present in
//! only one file shows `—` on the other side.

use crate::figures::{decimal, percent, signed_decimal, signed_percent};
use rtvmm_core::words::{serde_message_in_words, Notation};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::Path;

use rtvmm_system::results::{DomainResult, RunResults};

use crate::error::ExperimentError;
use crate::report::markdown_table;

/// Reads a results file written by `rtvmm sim --json` (or by the host executor).
pub fn load_results(path: &Path) -> Result<RunResults, ExperimentError> {
    let text = rtvmm_system::input::read_text(path).map_err(|e| ExperimentError::read(path, e))?;
    parse_results(&text, path)
}

/// Reads the text of a results file; `path` names it in errors, which say where (the
/// field's path and the line) and what is wrong in words, not in Rust types.
pub fn parse_results(text: &str, path: &Path) -> Result<RunResults, ExperimentError> {
    let fail = |field: String, error: &serde_json::Error| ExperimentError::Json {
        path: path.to_path_buf(),
        message: json_error_in_words(&field, error),
    };
    let mut reader = serde_json::Deserializer::from_str(text);
    let results: RunResults = serde_path_to_error::deserialize(&mut reader)
        .map_err(|e| fail(e.path().to_string(), e.inner()))?;
    // Text after the object is an error, as `serde_json::from_str` has it.
    reader.end().map_err(|e| fail(String::new(), &e))?;
    // Domains are matched by name: two of one name would show the first one's figures
    // for both.
    let mut seen = HashMap::with_capacity(results.domains.len());
    for (i, d) in results.domains.iter().enumerate() {
        if let Some(first) = seen.insert(d.name.as_str(), i) {
            return Err(ExperimentError::Json {
                path: path.to_path_buf(),
                message: format!(
                    "domains[{i}].name: '{}' is also the name of domains[{first}]: a results \
                     file names each domain once",
                    d.name
                ),
            });
        }
    }
    Ok(results)
}

/// `domains[2].response_ns.p50: expected a whole number (0 or more), found the number 0.5
/// (line 4, column 7)` instead of serde's `invalid type: floating point `0.5`, expected u64 at
/// line 4 column 7`.
fn json_error_in_words(field: &str, inner: &serde_json::Error) -> String {
    let position = format!(" at line {} column {}", inner.line(), inner.column());
    let shown = inner.to_string();
    let message = shown.strip_suffix(&position).unwrap_or(&shown);
    let message = serde_message_in_words(message, Notation::Json);
    let place = if inner.line() == 0 {
        String::new()
    } else {
        format!(" (line {}, column {})", inner.line(), inner.column())
    };
    if field == "." || field.is_empty() {
        format!("{message}{place}")
    } else {
        format!("{field}: {message}{place}")
    }
}

/// How a metric is shown.
#[derive(Clone, Copy)]
enum Format {
    /// A ratio shown in percent.
    Percent,
    /// A plain ratio with three decimals.
    Ratio,
}

impl Format {
    fn show(self, v: f64) -> String {
        match self {
            Format::Percent => format!("{}%", percent(v, 2)),
            Format::Ratio => decimal(v, 3),
        }
    }

    fn show_diff(self, d: f64) -> String {
        match self {
            Format::Percent => format!("{}%", signed_percent(d, 2)),
            Format::Ratio => signed_decimal(d, 3),
        }
    }
}

fn row(domain: &str, metric: &str, a: Option<f64>, b: Option<f64>, f: Format) -> Vec<String> {
    let dash = || "—".to_string();
    vec![
        domain.to_string(),
        metric.to_string(),
        a.map_or_else(dash, |v| f.show(v)),
        b.map_or_else(dash, |v| f.show(v)),
        match (a, b) {
            (Some(a), Some(b)) => f.show_diff(b - a),
            _ => dash(),
        },
    ]
}

/// A row of job counts, shown exactly (an `f64` rounds counts above 2^53).
fn count_row(domain: &str, metric: &str, a: Option<u64>, b: Option<u64>) -> Vec<String> {
    let dash = || "—".to_string();
    vec![
        domain.to_string(),
        metric.to_string(),
        a.map_or_else(dash, |v| v.to_string()),
        b.map_or_else(dash, |v| v.to_string()),
        match (a, b) {
            (Some(a), Some(b)) => format!("{:+}", i128::from(b) - i128::from(a)),
            _ => dash(),
        },
    ]
}

type Metric = (&'static str, fn(&DomainResult) -> f64, Format);

/// The rows of each domain after its job count.
const METRICS: [Metric; 5] = [
    (
        "deadline miss ratio",
        |d| d.deadline_miss_ratio,
        Format::Percent,
    ),
    (
        "responsiveness p50",
        |d| d.responsiveness.p50,
        Format::Ratio,
    ),
    (
        "responsiveness p90",
        |d| d.responsiveness.p90,
        Format::Ratio,
    ),
    (
        "responsiveness p99",
        |d| d.responsiveness.p99,
        Format::Ratio,
    ),
    (
        "responsiveness max",
        |d| d.responsiveness.max,
        Format::Ratio,
    ),
];

/// Each domain by name; the first of a name (a file read by [`parse_results`] has one).
fn by_name(results: &RunResults) -> HashMap<&str, &DomainResult> {
    let mut map = HashMap::with_capacity(results.domains.len());
    for d in results.domains.iter().rev() {
        map.insert(d.name.as_str(), d);
    }
    map
}

/// The comparison as Markdown: a line naming each file, then one table.
pub fn compare(a: &RunResults, a_name: &str, b: &RunResults, b_name: &str) -> String {
    let (in_a, in_b) = (by_name(a), by_name(b));
    // A's domains in its order, then B's others (each name once), in linear time.
    let mut names: Vec<&str> = a.domains.iter().map(|d| d.name.as_str()).collect();
    let mut shown: HashSet<&str> = names.iter().copied().collect();
    for d in &b.domains {
        if shown.insert(d.name.as_str()) {
            names.push(&d.name);
        }
    }
    let mut rows = Vec::new();
    for name in &names {
        let (da, db) = (in_a.get(name), in_b.get(name));
        rows.push(count_row(
            name,
            "jobs",
            da.map(|d| d.jobs),
            db.map(|d| d.jobs),
        ));
        for (metric, get, format) in METRICS {
            rows.push(row(
                name,
                metric,
                da.map(|d| get(d)),
                db.map(|d| get(d)),
                format,
            ));
        }
    }
    rows.push(count_row("total", "jobs", Some(a.jobs), Some(b.jobs)));
    rows.push(row(
        "total",
        "deadline miss ratio",
        Some(a.deadline_miss_ratio),
        Some(b.deadline_miss_ratio),
        Format::Percent,
    ));
    let header: Vec<String> = ["domain", "metric", "A", "B", "B − A"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let describe = |r: &RunResults| {
        // A run stopped early says so: its figures cover less than it was meant to.
        let partial = match (r.partial, r.planned_duration_ns) {
            (true, Some(planned)) => format!(", partial: of {} s", planned as f64 / 1e9),
            (true, None) => ", partial".to_string(),
            (false, _) => String::new(),
        };
        format!(
            "scenario {}, policy {}, seed {}, {} s{partial}, {}",
            r.scenario,
            r.policy,
            r.seed,
            r.duration_ns as f64 / 1e9,
            r.source
        )
    };
    let mut out = String::new();
    let _ = writeln!(out, "A: {a_name} ({})", describe(a));
    let _ = writeln!(out, "B: {b_name} ({})\n", describe(b));
    let _ = write!(out, "{}", markdown_table(&header, &rows));
    let _ = writeln!(
        out,
        "\nresponsiveness = response time ÷ relative deadline (finished jobs); \
         deadline miss ratio = missed ÷ counted jobs"
    );
    out
}

/// Loads both files and compares them.
pub fn compare_files(a: &Path, b: &Path) -> Result<String, ExperimentError> {
    let ra = load_results(a)?;
    let rb = load_results(b)?;
    Ok(compare(
        &ra,
        &a.display().to_string(),
        &rb,
        &b.display().to_string(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rtvmm_system::results::RatioDist;

    fn results(domains: &[(&str, u64, f64, f64)]) -> RunResults {
        RunResults {
            scenario: "s".into(),
            policy: "deferrable".into(),
            seed: 1,
            duration_ns: 1_000_000_000,
            source: "simulation".into(),
            domains: domains
                .iter()
                .map(|&(name, jobs, dmr, p99)| DomainResult {
                    name: name.into(),
                    jobs,
                    deadline_miss_ratio: dmr,
                    responsiveness: RatioDist {
                        p99,
                        ..RatioDist::default()
                    },
                    ..DomainResult::default()
                })
                .collect(),
            ..RunResults::default()
        }
    }

    /// Found by the fuzzer: a count above 2^53 went through an `f64` and showed rounded
    /// (18446744073709551615 jobs as 18446744073709552000).
    #[test]
    fn job_counts_show_exactly() {
        let a = results(&[("d", u64::MAX, 0.0, 0.0)]);
        let b = results(&[("d", u64::MAX - 5, 0.0, 0.0)]);
        let table = compare(&a, "a.json", &b, "b.json");
        assert!(
            table.contains("| d | jobs | 18446744073709551615 | 18446744073709551610 | -5 |"),
            "{table}"
        );
    }

    #[test]
    fn domains_are_matched_by_name_and_differences_signed() {
        let a = results(&[("d1", 10, 0.0, 0.5), ("d2", 20, 0.1, 1.2)]);
        let b = results(&[("d2", 18, 0.25, 1.0), ("d3", 5, 0.0, 0.3)]);
        let text = compare(&a, "a.json", &b, "b.json");
        assert!(
            text.contains("| d2 | deadline miss ratio | 10.00% | 25.00% | +15.00% |"),
            "{text}"
        );
        assert!(
            text.contains("| d2 | responsiveness p99 | 1.200 | 1.000 | -0.200 |"),
            "{text}"
        );
        assert!(text.contains("| d2 | jobs | 20 | 18 | -2 |"), "{text}");
        assert!(text.contains("| d1 | jobs | 10 | — | — |"), "{text}");
        assert!(text.contains("| d3 | jobs | — | 5 | — |"), "{text}");
    }

    #[test]
    fn a_partial_results_file_is_said_partial() {
        let a = results(&[("d1", 10, 0.0, 0.5)]);
        let mut b = a.clone();
        b.duration_ns = 400_000_000;
        b.mark_partial(rtvmm_core::Nanos::from_secs(1));
        let text = compare(&a, "a.json", &b, "b.json");
        assert!(
            text.contains("A: a.json (scenario s, policy deferrable, seed 1, 1 s, simulation)"),
            "{text}"
        );
        assert!(text.contains("B: b.json (scenario s, policy deferrable, seed 1, 0.4 s, partial: of 1 s, simulation)"), "{text}");
        // The marks read back from the JSON.
        let back = parse_results(&b.to_json(), Path::new("b.json")).unwrap();
        assert_eq!(
            (back.partial, back.planned_duration_ns),
            (true, Some(1_000_000_000))
        );
        assert!(!a.to_json().contains("partial"));
    }
}
