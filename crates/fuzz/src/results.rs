//! Run-results files (JSON), as `rtvmm compare` reads them.
//!
//! [`check`] reads a file with `compare`'s reader. Refused: the error names the file and
//! reads well. Accepted: compared with itself and with a plain results file, the table
//! shows every domain of both files (six rows each) and the two totals, and the file
//! written back (`RunResults::to_json`) reads again.
//!
//! [`generate`] writes results files from a tape: the right shape with extreme, negative,
//! fractional and missing numbers, odd names, duplicate domains, wrong types.

use std::path::Path;

use rtvmm_experiments::compare::{compare, parse_results};
use rtvmm_system::results::RunResults;

use crate::text::Gen;
use crate::{readable, Checked, Failure, Outcome};

const FILE: &str = "fuzz.json";

/// Reads `text` with `compare`'s reader and checks the comparison (module docs).
pub fn check(text: &str) -> Checked {
    let results = match parse_results(text, Path::new(FILE)) {
        Ok(results) => results,
        Err(error) => {
            let message = error.to_string();
            if !message.starts_with(FILE) {
                return Err(Failure::wrong(format!(
                    "results error does not name the file: {message}"
                )));
            }
            readable("results", &message, text)?;
            return Ok(Outcome::Refused);
        }
    };
    let plain = RunResults {
        domains: vec![rtvmm_system::results::DomainResult {
            name: "d1".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    shows_every_domain(&results, &results)?;
    shows_every_domain(&results, &plain)?;
    shows_every_domain(&plain, &results)?;
    read_back(&results.to_json())?;
    Ok(Outcome::Accepted)
}

/// The JSON of a run's results reads back through `compare`'s reader.
pub fn read_back(json: &str) -> Result<(), Failure> {
    parse_results(json, Path::new(FILE))
        .map(|_| ())
        .map_err(|e| Failure::wrong(format!("results written by rtvmm do not read back: {e}")))
}

/// `compare(a, b)` has six rows for every domain of `a` and every domain of `b` not in
/// `a`, and two rows of totals; each of `a`'s domains shows its own job count.
fn shows_every_domain(a: &RunResults, b: &RunResults) -> Result<(), Failure> {
    let table = compare(a, "a.json", b, "b.json");
    let rows: Vec<&str> = table
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| domain | metric"))
        .collect();
    let only_in_b = b
        .domains
        .iter()
        .filter(|d| !a.domains.iter().any(|x| x.name == d.name))
        .count();
    let expected = 6 * (a.domains.len() + only_in_b) + 2;
    let fail = |what: String| Err(Failure::wrong(format!("compare {what}:\n{table}")));
    if rows.len() != expected {
        return fail(format!(
            "shows {} rows for {} + {only_in_b} domains (expected {expected})",
            rows.len(),
            a.domains.len()
        ));
    }
    for (i, d) in a.domains.iter().enumerate() {
        // | name | jobs | A | B | B − A |
        let shown = rows[6 * i].rsplit(" | ").nth(2);
        let jobs = d.jobs.to_string();
        if shown != Some(jobs.as_str()) {
            return fail(format!(
                "shows {shown:?} jobs for domain {} of A ('{}'), which has {jobs}",
                i + 1,
                d.name
            ));
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The generator.

/// A results file as JSON, decided by `tape`.
pub fn generate(tape: &[u8]) -> String {
    let mut g = Gen::new(tape);
    let domains = match g.below(8) {
        7 => g.between(3, 30) as usize,
        n => n % 3,
    };
    let mut fields = vec![
        ("scenario", json_string(&mut g, "s")),
        ("policy", json_string(&mut g, "deferrable")),
        ("seed", number(&mut g, 0, 100)),
        ("duration_ns", number(&mut g, 1, 10_000_000_000)),
        ("source", json_string(&mut g, "simulation")),
        ("jobs", number(&mut g, 0, 1000)),
        ("missed", number(&mut g, 0, 10)),
        ("in_flight", number(&mut g, 0, 10)),
        ("deadline_miss_ratio", ratio(&mut g)),
    ];
    let pcpus: Vec<String> = (0..g.below(3))
        .map(|_| {
            object(
                &mut g,
                &[
                    "busy_ns",
                    "idle_ns",
                    "overhead_ns",
                    "do_schedule_calls",
                    "context_switches",
                ],
            )
        })
        .collect();
    fields.push(("pcpus", format!("[{}]", pcpus.join(","))));
    let list: Vec<String> = (0..domains).map(|i| domain(&mut g, i)).collect();
    fields.push(("domains", format!("[{}]", list.join(","))));
    write_object(&mut g, fields)
}

/// An object from `fields`; odd: one left out, one twice, or an extra one.
fn write_object(g: &mut Gen, mut fields: Vec<(&str, String)>) -> String {
    if g.odd() {
        match g.below(3) {
            0 => {
                let i = g.below(fields.len());
                fields.remove(i);
            }
            1 => {
                let i = g.below(fields.len());
                let copy = fields[i].clone();
                fields.push(copy);
            }
            _ => fields.push(("extra", "1".into())),
        }
    }
    let body: Vec<String> = fields.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    format!("{{{}}}", body.join(","))
}

fn domain(g: &mut Gen, index: usize) -> String {
    let name = format!("d{}", index + 1);
    let mut fields = vec![("name", json_string(g, &name))];
    for key in ["jobs", "released", "finished", "missed", "in_flight"] {
        fields.push((key, number(g, 0, 1000)));
    }
    fields.push(("deadline_miss_ratio", ratio(g)));
    let dist = &["count", "min", "mean", "p50", "p90", "p99", "max"];
    fields.push(("response_ns", object(g, dist)));
    fields.push(("responsiveness", ratio_object(g, dist)));
    fields.push(("lateness_ns", object(g, &["count", "min", "mean", "max"])));
    fields.push(("latency_ns", object(g, dist)));
    fields.push(("tasks", "[]".into()));
    fields.push(("vcpus", "[]".into()));
    write_object(g, fields)
}

fn object(g: &mut Gen, keys: &[&'static str]) -> String {
    let fields = keys.iter().map(|k| (*k, number(g, 0, 1_000_000))).collect();
    write_object(g, fields)
}

fn ratio_object(g: &mut Gen, keys: &[&'static str]) -> String {
    let fields = keys.iter().map(|k| (*k, ratio(g))).collect();
    write_object(g, fields)
}

fn json_string(g: &mut Gen, plain: &str) -> String {
    if !g.odd() {
        return format!("\"{plain}\"");
    }
    match g.below(5) {
        0 => "\"\"".into(),
        1 => format!("\"{}\"", g.pick(crate::text::UNICODE_NAMES)),
        2 => format!("\"{}\"", "n".repeat(g.between(256, 20_000) as usize)),
        3 => "\"a|b\\n\\u0000\\ud800\"".into(),
        _ => g.pick(ODD_JSON).to_string(),
    }
}

fn number(g: &mut Gen, low: u64, high: u64) -> String {
    if !g.odd() {
        return g.between(low, high).to_string();
    }
    g.pick(ODD_JSON_NUMBERS).to_string()
}

fn ratio(g: &mut Gen) -> String {
    if !g.odd() {
        return format!("{}", g.between(0, 1000) as f64 / 1000.0);
    }
    g.pick(ODD_JSON_NUMBERS).to_string()
}

const ODD_JSON_NUMBERS: &[&str] = &[
    "-1",
    "0",
    "1.5",
    "-0.0",
    "1e308",
    "1e309",
    "-1e309",
    "18446744073709551615",
    "18446744073709551616",
    "9223372036854775807",
    "-9223372036854775808",
    "-9223372036854775809",
    "4.9e-324",
    "0.1e1",
    "01",
    "NaN",
    "Infinity",
    "null",
    "\"5\"",
    "true",
    "[]",
    "{}",
];

const ODD_JSON: &[&str] = &["null", "1", "true", "[]", "{}", "\"\\u0000\""];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_tape_gives_a_results_file_compare_reads() {
        let text = generate(&[]);
        assert_eq!(check(&text), Ok(Outcome::Accepted), "{text}");
    }

    #[test]
    fn a_comparison_missing_a_domain_is_caught() {
        let mut a = RunResults::default();
        for (name, jobs) in [("d1", 3), ("d1", 4)] {
            a.domains.push(rtvmm_system::results::DomainResult {
                name: name.into(),
                jobs,
                ..Default::default()
            });
        }
        // Two domains of one name: compare shows the first one's figures twice.
        assert!(shows_every_domain(&a, &RunResults::default()).is_err());
        a.domains[1].name = "d2".into();
        assert!(shows_every_domain(&a, &RunResults::default()).is_ok());
    }
}
