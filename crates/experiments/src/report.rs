//! What an experiment writes, and the `report.md` that lists it.
//!
//! An experiment gets an [`Output`]: it records parameters, runs its sweeps through it,
//! and writes CSVs, Markdown tables and figures with it; each call adds a section to the
//! [`Report`]. The framework then adds the wall time and the host and writes `report.md`
//! (see [`crate::run_experiment`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::ExperimentError;
use crate::host::HostInfo;
use crate::options::{describe_overheads, Options};
use crate::plot::{render, Chart};
use crate::sweep::{sweep, RunCounter, SweepOutcome};

/// A table, as written to its own `.md` file and into the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// File name of its Markdown copy, relative to the output directory.
    pub file: String,
}

impl Table {
    pub fn to_markdown(&self) -> String {
        markdown_table(&self.header, &self.rows)
    }
}

/// A figure written as SVG and PNG.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub title: String,
    pub caption: String,
    /// File names relative to the output directory.
    pub svg: String,
    pub png: String,
}

/// One part of a report, in the order the experiment produced it.
#[derive(Clone, Debug, PartialEq)]
pub enum Section {
    /// Markdown text.
    Text(String),
    Table(Table),
    Figure(Figure),
    /// A CSV of raw numbers.
    Data {
        title: String,
        file: String,
    },
}

/// What an experiment did: everything `report.md` says.
#[derive(Clone, Debug)]
pub struct Report {
    pub experiment: String,
    pub title: String,
    pub description: String,
    /// The command that reproduces this report.
    pub command: String,
    pub out: PathBuf,
    pub parameters: Vec<(String, String)>,
    /// The main results, one line each (also printed by the CLI).
    pub findings: Vec<String>,
    pub sections: Vec<Section>,
    pub runs_done: usize,
    pub runs_total: usize,
    pub wall_time: Duration,
    pub host: Option<HostInfo>,
}

impl Report {
    /// Whether runs were skipped because of an interruption.
    pub fn interrupted(&self) -> bool {
        self.runs_done < self.runs_total
    }

    /// "complete: M runs" or "interrupted: N of M runs done".
    pub fn status(&self) -> String {
        if self.interrupted() {
            format!(
                "interrupted: {} of {} runs done",
                self.runs_done, self.runs_total
            )
        } else {
            format!("complete: {} runs", self.runs_total)
        }
    }

    /// Every figure in the report.
    pub fn figures(&self) -> impl Iterator<Item = &Figure> {
        self.sections.iter().filter_map(|s| match s {
            Section::Figure(f) => Some(f),
            _ => None,
        })
    }

    /// Every table in the report.
    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.sections.iter().filter_map(|s| match s {
            Section::Table(t) => Some(t),
            _ => None,
        })
    }

    /// Every file written, relative to the output directory, `report.md` last.
    pub fn files(&self) -> Vec<String> {
        let mut files = Vec::new();
        for s in &self.sections {
            match s {
                Section::Text(_) => {}
                Section::Table(t) => files.push(t.file.clone()),
                Section::Figure(f) => {
                    files.push(f.svg.clone());
                    files.push(f.png.clone());
                }
                Section::Data { file, .. } => files.push(file.clone()),
            }
        }
        files.push("report.md".to_string());
        files
    }

    /// A few lines for the terminal: status, findings, where the report is.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{} — {}", self.experiment, self.title);
        let _ = writeln!(
            out,
            "{} · wall time {:.1} s",
            self.status(),
            self.wall_time.as_secs_f64()
        );
        for f in &self.findings {
            let _ = writeln!(out, "  {f}");
        }
        let _ = writeln!(out, "report: {}", self.out.join("report.md").display());
        out
    }

    /// The report as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(md, "# {} — {}\n", self.experiment, self.title);
        let _ = writeln!(md, "{}\n", self.description.trim());
        if self.interrupted() {
            let _ = writeln!(
                md,
                "> **Interrupted: {} of {} runs done.** Tables and figures show the finished \
                 runs only.\n",
                self.runs_done, self.runs_total
            );
        }
        let _ = writeln!(md, "## Run\n");
        let _ = writeln!(md, "- command: `{}`", self.command);
        let _ = writeln!(md, "- status: {}", self.status());
        let _ = writeln!(md, "- wall time: {:.2} s", self.wall_time.as_secs_f64());
        if let Some(host) = &self.host {
            let _ = writeln!(md, "- host: {}", host.describe());
        }
        let _ = writeln!(md, "- rtvmm {}\n", env!("CARGO_PKG_VERSION"));
        let _ = writeln!(md, "## Parameters\n");
        let header = vec!["parameter".to_string(), "value".to_string()];
        let rows: Vec<Vec<String>> = self
            .parameters
            .iter()
            .map(|(k, v)| vec![k.clone(), v.clone()])
            .collect();
        let _ = writeln!(md, "{}", markdown_table(&header, &rows));
        if !self.findings.is_empty() {
            let _ = writeln!(md, "## Main results\n");
            for f in &self.findings {
                let _ = writeln!(md, "- {f}");
            }
            let _ = writeln!(md);
        }
        let _ = writeln!(md, "## Results\n");
        for s in &self.sections {
            match s {
                Section::Text(text) => {
                    let _ = writeln!(md, "{}\n", text.trim());
                }
                Section::Table(t) => {
                    let _ = writeln!(md, "### Table: {}\n", t.title);
                    let _ = writeln!(md, "{}", t.to_markdown());
                    let _ = writeln!(md, "(also in [{}]({}))\n", t.file, t.file);
                }
                Section::Figure(f) => {
                    let _ = writeln!(md, "### Figure: {}\n", f.title);
                    let _ = writeln!(md, "![{}]({})\n", f.title, f.png);
                    if !f.caption.is_empty() {
                        let _ = writeln!(md, "{}\n", f.caption.trim());
                    }
                    let _ = writeln!(md, "Vector version: [{}]({})\n", f.svg, f.svg);
                }
                Section::Data { title, file } => {
                    let _ = writeln!(md, "Raw data — {title}: [{file}]({file})\n");
                }
            }
        }
        let _ = writeln!(md, "## Files\n");
        for f in self.files() {
            let _ = writeln!(md, "- [{f}]({f})");
        }
        md
    }
}

/// A GitHub-flavoured Markdown table; `|` in cells is escaped.
pub fn markdown_table(header: &[String], rows: &[Vec<String>]) -> String {
    let cell = |s: &str| s.replace('|', "\\|").replace('\n', " ");
    let mut md = String::new();
    let _ = writeln!(
        md,
        "| {} |",
        header
            .iter()
            .map(|h| cell(h))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(
        md,
        "|{}|",
        header.iter().map(|_| "---").collect::<Vec<_>>().join("|")
    );
    for row in rows {
        let _ = writeln!(
            md,
            "| {} |",
            row.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    md
}

/// The command line that reproduces a run with these options.
pub fn command_line(experiment: &str, options: &Options) -> String {
    let mut cmd = format!(
        "rtvmm experiment {experiment} --out {} --seed {}",
        options.out.display(),
        options.seed
    );
    if options.quick {
        cmd.push_str(" --quick");
    }
    if let Some(d) = options.duration {
        let _ = write!(cmd, " --duration {d}");
    }
    if let Some(p) = &options.policies {
        let names: Vec<&str> = p.iter().map(|k| k.name()).collect();
        let _ = write!(cmd, " --policies {}", names.join(","));
    }
    if let Some(o) = &options.overheads {
        let _ = write!(cmd, " --overhead {},{}", o.do_schedule, o.context_switch);
    }
    if options.in_phase {
        cmd.push_str(" --in-phase");
    }
    cmd
}

/// The writer an experiment uses for everything it produces.
pub struct Output<'a> {
    pub options: &'a Options,
    counter: RunCounter,
    report: Report,
}

impl<'a> Output<'a> {
    /// A fresh output for `experiment` into `options.out` (created if missing).
    pub fn new(
        experiment: &str,
        title: &str,
        description: &str,
        options: &'a Options,
    ) -> Result<Output<'a>, ExperimentError> {
        std::fs::create_dir_all(&options.out).map_err(|e| ExperimentError::io(&options.out, e))?;
        let mut parameters = vec![
            ("seed".to_string(), options.seed.to_string()),
            (
                "scale".to_string(),
                if options.quick { "quick" } else { "full" }.to_string(),
            ),
        ];
        if let Some(o) = &options.overheads {
            parameters.push(("overheads (--overhead)".to_string(), describe_overheads(o)));
        }
        Ok(Output {
            options,
            counter: RunCounter::new(),
            report: Report {
                experiment: experiment.to_string(),
                title: title.to_string(),
                description: description.to_string(),
                command: command_line(experiment, options),
                out: options.out.clone(),
                parameters,
                findings: Vec::new(),
                sections: Vec::new(),
                runs_done: 0,
                runs_total: 0,
                wall_time: Duration::ZERO,
                host: None,
            },
        })
    }

    /// The output directory.
    pub fn dir(&self) -> &Path {
        &self.options.out
    }

    /// Records a parameter of the experiment.
    pub fn param(&mut self, name: &str, value: impl std::fmt::Display) {
        self.report
            .parameters
            .push((name.to_string(), value.to_string()));
    }

    /// Records a main result (one line).
    pub fn finding(&mut self, text: impl Into<String>) {
        self.report.findings.push(text.into());
    }

    /// Adds Markdown text to the report.
    pub fn text(&mut self, markdown: impl Into<String>) {
        self.report.sections.push(Section::Text(markdown.into()));
    }

    /// Adds the section that sets the run beside the published one: what it reproduces and
    /// where (and why) it departs, one Markdown bullet each.
    pub fn against_published(&mut self, reproduces: &[String], departs: &[String]) {
        let mut md = String::from("### Against the published setup\n\n**Reproduces.**\n\n");
        for r in reproduces {
            let _ = writeln!(md, "- {r}");
        }
        md.push_str("\n**Departs.**\n\n");
        for d in departs {
            let _ = writeln!(md, "- {d}");
        }
        self.text(md);
    }

    /// Runs a sweep (see [`crate::sweep::sweep`]) and counts its runs for the report.
    pub fn sweep<T, R, W, N>(
        &mut self,
        label: &str,
        items: &[T],
        name: N,
        work: W,
    ) -> Result<SweepOutcome<R>, ExperimentError>
    where
        T: Sync,
        R: Send,
        W: Fn(&T) -> Result<R, ExperimentError> + Sync,
        N: Fn(&T) -> String + Sync,
    {
        let outcome = sweep(label, items, self.options, &self.counter, name, work)?;
        self.report.runs_done += outcome.done();
        self.report.runs_total += outcome.total();
        Ok(outcome)
    }

    /// Writes `file` (a `.csv` name) with `header` and `rows`, and lists it in the report.
    pub fn csv(
        &mut self,
        file: &str,
        title: &str,
        header: &[&str],
        rows: &[Vec<String>],
    ) -> Result<PathBuf, ExperimentError> {
        let path = self.options.out.join(file);
        let csv_err = |source| ExperimentError::Csv {
            path: path.clone(),
            source,
        };
        let mut writer = csv::Writer::from_path(&path).map_err(csv_err)?;
        writer.write_record(header).map_err(csv_err)?;
        for row in rows {
            writer.write_record(row).map_err(csv_err)?;
        }
        writer.flush().map_err(|e| ExperimentError::io(&path, e))?;
        self.report.sections.push(Section::Data {
            title: title.to_string(),
            file: file.to_string(),
        });
        Ok(path)
    }

    /// Writes a Markdown table to `<stem>.md` and puts it in the report.
    pub fn table(
        &mut self,
        stem: &str,
        title: &str,
        header: &[&str],
        rows: Vec<Vec<String>>,
    ) -> Result<(), ExperimentError> {
        let table = Table {
            title: title.to_string(),
            header: header.iter().map(|h| h.to_string()).collect(),
            rows,
            file: format!("{stem}.md"),
        };
        let path = self.options.out.join(&table.file);
        let text = format!("# {}\n\n{}", table.title, table.to_markdown());
        std::fs::write(&path, text).map_err(|e| ExperimentError::io(&path, e))?;
        self.report.sections.push(Section::Table(table));
        Ok(())
    }

    /// Renders `chart` to `<stem>.svg` and `<stem>.png` and puts it in the report.
    pub fn figure(
        &mut self,
        stem: &str,
        chart: &Chart,
        caption: &str,
    ) -> Result<(), ExperimentError> {
        render(chart, &self.options.out.join(stem))?;
        self.report.sections.push(Section::Figure(Figure {
            title: chart.title().to_string(),
            caption: caption.to_string(),
            svg: format!("{stem}.svg"),
            png: format!("{stem}.png"),
        }));
        Ok(())
    }

    /// The report so far (the framework completes it).
    pub fn into_report(self) -> Report {
        self.report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_names_every_option_that_changes_the_run() {
        let mut options = Options::quick("out/x");
        options.seed = 7;
        assert_eq!(
            command_line("rtxen-capacity", &options),
            "rtvmm experiment rtxen-capacity --out out/x --seed 7 --quick"
        );
        options.in_phase = true;
        assert!(command_line("rtxen-capacity", &options).ends_with(" --quick --in-phase"));
    }

    #[test]
    fn markdown_tables_escape_pipes() {
        let md = markdown_table(
            &["a".to_string(), "b".to_string()],
            &[vec!["1|2".to_string(), "x".to_string()]],
        );
        assert_eq!(md, "| a | b |\n|---|---|\n| 1\\|2 | x |\n");
    }
}
