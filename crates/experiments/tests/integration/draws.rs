//! Several task-set draws (`--seeds N`, issue 25): one draw is the run as it always was,
//! byte for byte; each draw of several is the single run of its own seed; the findings
//! are counted over the draws; bad counts are refused.

use std::collections::BTreeMap;
use std::path::Path;

use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_experiments::draws::draw_seed;
use rtvmm_experiments::{run_experiment, Options};

use crate::util::{run, Csv};

/// Every file of `dir` but `report.md` (its wall time differs between any two runs) and
/// the manifest.
fn outputs(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name != "report.md" && name != "rtvmm-manifest.txt"
        })
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect()
}

/// rtxen-overhead's quick run, shortened, with `--seed seed` and `--seeds seeds`.
fn overhead(seed: u64, seeds: Option<usize>) -> (tempfile::TempDir, rtvmm_experiments::Report) {
    run("rtxen-overhead", |o| {
        o.seed = seed;
        o.seeds = seeds;
        o.duration = Some(Nanos::from_ms(500));
    })
}

#[test]
fn one_draw_is_the_run_without_seeds_byte_for_byte() {
    let (plain, plain_report) = overhead(5, None);
    let (one, one_report) = overhead(5, Some(1));
    assert_eq!(outputs(plain.path()), outputs(one.path()));
    assert_eq!(plain_report.findings, one_report.findings);
    // No trace of draws in a single draw's files.
    assert!(!plain.path().join("draws.csv").exists());
    let md = std::fs::read_to_string(one.path().join("report.md")).unwrap();
    assert!(
        !md.contains("--seeds") && !md.contains("task-set draws"),
        "{md}"
    );
}

#[test]
fn each_draw_of_several_is_the_single_run_of_its_seed() {
    let (many, report) = overhead(5, Some(3));
    assert_eq!(report.runs_total, 3 * 7);
    let stacked = Csv::read(&many.path().join("overhead.csv"));
    assert_eq!(stacked.header[0], "draw");
    for draw in 0..3 {
        let (single, _) = overhead(draw_seed(5, draw), Some(1));
        let alone = Csv::read(&single.path().join("overhead.csv"));
        assert_eq!(stacked.header[1..], alone.header[..]);
        let rows: Vec<Vec<String>> = stacked
            .select(&[("draw", &draw.to_string())])
            .into_iter()
            .map(|r| r[1..].to_vec())
            .collect();
        assert_eq!(rows, alone.rows, "draw {draw}");
    }
    // The seeds, as `draws.csv` and the report list them.
    let draws = Csv::read(&many.path().join("draws.csv"));
    let seeds: Vec<u64> = draws.rows.iter().map(|r| draws.u64(r, "seed")).collect();
    assert!(
        seeds.contains(&5) && seeds.contains(&draw_seed(5, 2)),
        "{seeds:?}"
    );
}

#[test]
fn spread_files_give_mean_range_and_interval_per_point() {
    let (many, _) = overhead(1, Some(3));
    let stacked = Csv::read(&many.path().join("overhead.csv"));
    let spread = Csv::read(&many.path().join("overhead_spread.csv"));
    for column in [
        "policy",
        "column",
        "draws",
        "mean",
        "min",
        "max",
        "ci95_low",
        "ci95_high",
    ] {
        spread.column(column);
    }
    // Every (policy, column) row is the statistics of the three draws' cells.
    for row in &spread.rows {
        let policy = &row[spread.column("policy")];
        let column = &row[spread.column("column")];
        let values: Vec<f64> = stacked
            .select(&[("policy", policy)])
            .iter()
            .map(|r| stacked.f64(r, column))
            .collect();
        assert_eq!(values.len(), 3, "{policy} {column}");
        let mean = values.iter().sum::<f64>() / 3.0;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-6 * b.abs().max(1.0);
        assert!(close(spread.f64(row, "mean"), mean), "{row:?}");
        assert!(close(spread.f64(row, "min"), min), "{row:?}");
        assert!(close(spread.f64(row, "max"), max), "{row:?}");
        let (low, high) = (spread.f64(row, "ci95_low"), spread.f64(row, "ci95_high"));
        assert!(low <= mean + 1e-9 && mean <= high + 1e-9, "{row:?}");
        // t(0.975, 2) = 4.302653: the half-width is 4.302653 · s / √3.
        let s = (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / 2.0).sqrt();
        assert!(close(high - mean, 4.302_653 * s / 3f64.sqrt()), "{row:?}");
    }
    assert!(!spread.rows.is_empty());
}

#[test]
fn each_finding_is_counted_over_the_draws_it_held_in() {
    let (many, report) = run("rtxen-capacity", |o| {
        o.seeds = Some(3);
        o.duration = Some(Nanos::from_ms(1000));
        o.policies = Some(vec![
            PolicyKind::Deferrable,
            PolicyKind::Periodic,
            PolicyKind::Credit,
        ]);
    });
    let draws = Csv::read(&many.path().join("draws.csv"));
    assert!(!report.findings.is_empty());
    for finding in &report.findings {
        let (statement, count) = finding
            .rsplit_once(" — holds in ")
            .unwrap_or_else(|| panic!("{finding}"));
        let held = draws
            .select(&[("finding", statement), ("holds", "true")])
            .len();
        let checked = draws.select(&[("finding", statement)]).len();
        assert_eq!(count, format!("{held} of {checked} draws"), "{finding}");
        assert_eq!(checked, 3, "{finding}");
    }
    // The capacity table gives each cell over the draws, the figure a band per curve.
    let md = std::fs::read_to_string(many.path().join("report.md")).unwrap();
    assert!(
        md.contains("over 3 draws") && md.contains("holds in"),
        "{md}"
    );
    let svg = std::fs::read_to_string(many.path().join("dmr_even.svg")).unwrap();
    assert!(svg.contains("<polygon"), "a band in the figure");
}

#[test]
fn bad_draw_counts_are_refused_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = Options::quick(dir.path());
    options.seeds = Some(0);
    let e = run_experiment("rtxen-capacity", &options)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--seeds") && e.contains("at least 1"), "{e}");
    options.seeds = Some(3);
    let e = run_experiment("rtxen-quantum", &options)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("--seeds") && e.contains("rtxen-quantum draws no task sets"),
        "{e}"
    );
    // Workload files are read, not drawn.
    options.workloads = vec![dir.path().join("w.toml")];
    let e = run_experiment("csa-arinc", &options)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--seeds"), "{e}");
}

#[test]
fn an_interrupted_run_of_several_draws_counts_only_the_draws_that_finished() {
    let (dir, report) = run("rtxen-overhead", |o| {
        o.seeds = Some(3);
        o.duration = Some(Nanos::from_ms(200));
        o.jobs = 1;
        // Draw 0's 7 runs and 3 of draw 1's.
        o.stop_after_runs = Some(10);
    });
    assert!(report.interrupted());
    assert_eq!((report.runs_done, report.runs_total), (10, 21));
    for finding in &report.findings {
        assert!(finding.ends_with(" of 1 draws"), "{finding}");
    }
    let draws = Csv::read(&dir.path().join("draws.csv"));
    assert!(draws.rows.iter().all(|r| r[0] == "0"), "{:?}", draws.rows);
    // The draws' rows differ in number: no spread file, and a CSV marked partial.
    assert!(!dir.path().join("overhead_spread.csv").exists());
    let csv = std::fs::read_to_string(dir.path().join("overhead.csv")).unwrap();
    assert!(
        csv.starts_with("# partial: interrupted after 10 of 21 runs"),
        "{csv}"
    );
}
