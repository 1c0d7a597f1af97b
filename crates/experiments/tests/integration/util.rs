//! Harness: run an experiment quietly into a temporary directory, read its CSVs, check its
//! files.
#![allow(dead_code)]

use std::path::Path;

use rtvmm_core::Nanos;
use rtvmm_experiments::{run_experiment, Options, Report};

/// Runs `name` in quick mode into a fresh temporary directory, after `tweak`.
pub fn run(name: &str, tweak: impl FnOnce(&mut Options)) -> (tempfile::TempDir, Report) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut options = Options::quick(dir.path());
    tweak(&mut options);
    let report = run_experiment(name, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
    (dir, report)
}

/// Shortens every run to `ms` milliseconds.
pub fn short(ms: u64) -> impl FnOnce(&mut Options) {
    move |o: &mut Options| o.duration = Some(Nanos::from_ms(ms))
}

/// A CSV as a header and rows of strings.
pub struct Csv {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl Csv {
    pub fn read(path: &Path) -> Csv {
        // `#` lines: the mark of a partial run.
        let mut reader = csv::ReaderBuilder::new()
            .comment(Some(b'#'))
            .from_path(path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let header = reader
            .headers()
            .expect("header")
            .iter()
            .map(String::from)
            .collect();
        let rows = reader
            .records()
            .map(|r| r.expect("row").iter().map(String::from).collect())
            .collect();
        Csv { header, rows }
    }

    pub fn column(&self, name: &str) -> usize {
        self.header
            .iter()
            .position(|h| h == name)
            .unwrap_or_else(|| panic!("no column {name} in {:?}", self.header))
    }

    /// The rows whose columns equal the given values.
    pub fn select(&self, filters: &[(&str, &str)]) -> Vec<&Vec<String>> {
        let cols: Vec<(usize, &str)> = filters.iter().map(|(c, v)| (self.column(c), *v)).collect();
        self.rows
            .iter()
            .filter(|r| cols.iter().all(|(c, v)| r[*c] == *v))
            .collect()
    }

    pub fn f64(&self, row: &[String], name: &str) -> f64 {
        row[self.column(name)].parse().expect("number")
    }

    pub fn u64(&self, row: &[String], name: &str) -> u64 {
        row[self.column(name)].parse().expect("integer")
    }
}

/// Checks the files of a report: every listed file exists and is not empty, figures are a
/// real SVG and PNG, every CSV has `columns` as its header, and `report.md` names every
/// figure, table and CSV.
pub fn assert_structure(dir: &Path, report: &Report, csvs: &[(&str, &[&str])]) {
    for file in report.files() {
        let path = dir.join(&file);
        let len = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .len();
        assert!(len > 0, "{file} is empty");
    }
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.figures().count() > 0, "no figure");
    for f in report.figures() {
        let png = std::fs::read(dir.join(&f.png)).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "{} is not a PNG", f.png);
        assert!(
            png.len() > 5_000,
            "{} looks blank ({} bytes)",
            f.png,
            png.len()
        );
        let svg = std::fs::read_to_string(dir.join(&f.svg)).unwrap();
        assert!(svg.contains("<svg"), "{} is not an SVG", f.svg);
        assert!(
            svg.contains(&escape(&f.title)) || svg.contains(&f.title),
            "{} lacks its title",
            f.svg
        );
        assert!(
            md.contains(&f.png) && md.contains(&f.svg),
            "report.md does not name {}",
            f.png
        );
        assert!(
            md.contains(&f.title),
            "report.md lacks the title {}",
            f.title
        );
    }
    for t in report.tables() {
        assert!(md.contains(&t.title), "report.md lacks table {}", t.title);
        assert!(md.contains(&t.file));
    }
    for (file, columns) in csvs {
        assert!(md.contains(file), "report.md does not name {file}");
        let csv = Csv::read(&dir.join(file));
        assert_eq!(csv.header, *columns, "{file} columns");
        assert!(!csv.rows.is_empty(), "{file} has no rows");
    }
    for needle in [
        "## Run",
        "## Parameters",
        "wall time",
        "host:",
        "seed",
        "command:",
    ] {
        assert!(md.contains(needle), "report.md lacks '{needle}'");
    }
    assert!(!report.interrupted());
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The bytes of every CSV in `dir`, by name.
pub fn csv_bytes(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "csv"))
        .map(|p| {
            (
                p.file_name().unwrap().to_string_lossy().into_owned(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}
