//! What an experiment writes, and the `report.md` that lists it.
//!
//! An experiment gets an [`Output`]: it records parameters, runs its sweeps through it,
//! and writes CSVs, Markdown tables and figures with it; each call adds a section to the
//! [`Report`]. The framework then adds the wall time and the host and writes `report.md`
//! (see [`crate::run_experiment`]).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use std::io::Write as _;

use crate::driver::Driver;
use crate::error::ExperimentError;
use crate::files::{self, AtomicFile, WriteError};
use crate::host::HostInfo;
use crate::options::{describe_overheads, Options};
use crate::plot::{render, Chart};
use crate::shard::{
    run_key, Runs, ShardError, ShardManifest, StoredRun, SHARD_MANIFEST, SHARD_RUNS,
};
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
    /// `--shard`: which shard this was; it wrote its results and manifest
    /// ([`crate::shard`]), not `report.md`, and its runs are the shard's.
    pub shard: Option<crate::shard::Shard>,
}

impl Report {
    /// Whether runs were skipped because of an interruption.
    pub fn interrupted(&self) -> bool {
        self.runs_done < self.runs_total
    }

    /// `partial: interrupted after N of M runs`, the mark of every file of an
    /// interrupted run; `None` when complete.
    pub fn partial_note(&self) -> Option<String> {
        self.interrupted().then(|| {
            format!(
                "partial: interrupted after {} of {} runs",
                self.runs_done, self.runs_total
            )
        })
    }

    /// `N of M runs` when interrupted.
    fn partial_runs(&self) -> Option<String> {
        self.interrupted()
            .then(|| format!("{} of {} runs", self.runs_done, self.runs_total))
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
        match self.shard {
            Some(_) => {
                let _ = writeln!(
                    out,
                    "shard: {}",
                    self.out.join(crate::shard::SHARD_MANIFEST).display()
                );
            }
            None => {
                let _ = writeln!(out, "report: {}", self.out.join("report.md").display());
            }
        }
        out
    }

    /// The report as Markdown.
    pub fn to_markdown(&self) -> String {
        let mut md = String::new();
        let _ = writeln!(md, "# {} — {}\n", self.experiment, self.title);
        let _ = writeln!(md, "{}\n", self.description.trim());
        if let Some(note) = self.partial_note() {
            let _ = writeln!(
                md,
                "> **{}.** Tables, figures and CSVs show the finished runs only.\n",
                capitalised(&note)
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
    if let Driver::Host(host) = &options.driver {
        let _ = write!(cmd, " {}", host.flags());
    }
    cmd
}

/// A file an experiment produced, written when the experiment ends (see
/// [`Output::finish`]), once it is known whether the run is complete.
enum Pending {
    Csv {
        file: String,
        header: Vec<String>,
        rows: Vec<Vec<String>>,
    },
    Table {
        file: String,
        title: String,
        markdown: String,
    },
    Figure {
        stem: String,
        chart: Chart,
    },
}

/// The name of the manifest every experiment leaves in its output directory.
pub const MANIFEST: &str = "rtvmm-manifest.txt";

/// The writer an experiment uses for everything it produces.
///
/// Nothing is written while the experiment runs: CSVs, tables and figures are kept and
/// written by [`Output::finish`], each atomically (see [`crate::files`]), so that a
/// failed experiment leaves the directory as it was and an interrupted one marks every
/// file it writes as partial:
///
/// - CSV: a first line `# partial: interrupted after N of M runs` (a complete run's
///   CSV has no such line and is byte-for-byte what it always was);
/// - Markdown tables and `report.md`: a `**Partial: interrupted after N of M runs.**`
///   banner under the title;
/// - figures: `(partial: N of M runs)` after the title, in the SVG and the PNG;
/// - the manifest ([`MANIFEST`]): `status: partial: interrupted after N of M runs`.
///
/// The manifest lists the files this experiment wrote. When an experiment writes into a
/// directory that holds a manifest, the files it lists and this run does not write are
/// removed — so a reused `--out` holds no stale files of another run or experiment — and
/// nothing else is ever removed.
pub struct Output<'a> {
    pub options: &'a Options,
    counter: RunCounter,
    report: Report,
    pending: Vec<Pending>,
    /// `--shard`: the results of this shard's runs, in run order.
    stored: Vec<StoredRun>,
    /// `--shard`: how many of the experiment's runs are this shard's.
    shard_runs: usize,
    /// The findings stated as checks ([`Output::check`]) in the draw under way.
    checks: Vec<(String, bool)>,
    /// Several task-set draws (`--seeds N`): what each finished draw produced.
    draws: Vec<DrawRecord>,
    /// The draw under way, and the runs counted before it began.
    draw: Option<(usize, u64, usize, usize)>,
    /// How many task-set draws the run makes (1 unless `--seeds` or the default says).
    draw_count: usize,
}

/// What one task-set draw of several produced, put aside until every draw is done and
/// [`Output::combine_draws`] writes them as one.
struct DrawRecord {
    seed: u64,
    parameters: Vec<(String, String)>,
    findings: Vec<String>,
    sections: Vec<Section>,
    pending: Vec<Pending>,
    /// Its checks; `None` when some of its runs did not finish (interrupted, or another
    /// shard's).
    checks: Option<Vec<(String, bool)>>,
}

impl<'a> Output<'a> {
    /// A fresh output for `experiment` into `options.out`: the directory is created and
    /// proven writable, and the figure font found, before anything runs.
    pub fn new(
        experiment: &str,
        title: &str,
        description: &str,
        options: &'a Options,
    ) -> Result<Output<'a>, ExperimentError> {
        files::prepare_dir(&options.out)?;
        crate::plot::ensure_font()?;
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
                shard: None,
            },
            pending: Vec::new(),
            stored: Vec::new(),
            shard_runs: 0,
            checks: Vec::new(),
            draws: Vec::new(),
            draw: None,
            draw_count: 1,
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

    /// States a qualitative finding as a check on this draw's runs: `finding` (the same
    /// words in every draw, no figures of this draw) and whether it `holds`. With several
    /// task-set draws the report lists each as "holds in k of N draws"; a single draw's
    /// report is unchanged (its findings are [`Output::finding`]'s).
    pub fn check(&mut self, finding: impl Into<String>, holds: bool) {
        self.checks.push((finding.into(), holds));
    }

    /// Adds `--seeds N` to the report's command line when `--seeds` asked for a number of
    /// draws other than the experiment's default at this scale.
    pub(crate) fn name_draws(&mut self, draws: usize, default: usize) {
        self.draw_count = draws;
        if self.options.seeds.is_some() && draws != default {
            let _ = write!(self.report.command, " --seeds {draws}");
        }
    }

    /// How many task-set draws this run makes (see [`crate::draws`]); each calls the
    /// experiment's `run` once.
    pub fn draw_count(&self) -> usize {
        self.draw_count
    }

    /// How many parameters are recorded so far.
    pub(crate) fn parameter_count(&self) -> usize {
        self.report.parameters.len()
    }

    /// Begins draw `index` of several, run with `options` (the run's options with the
    /// draw's seed; see [`crate::draws`]).
    pub(crate) fn begin_draw(&mut self, index: usize, options: &'a Options) {
        self.options = options;
        self.draw = Some((
            index,
            options.seed,
            self.report.runs_done,
            self.report.runs_total,
        ));
    }

    /// Puts aside what the draw begun last produced; the next draw starts from the
    /// run's own parameters.
    pub(crate) fn end_draw(&mut self, base_parameters: usize) {
        let Some((_, seed, done_before, total_before)) = self.draw.take() else {
            return;
        };
        let complete = self.report.runs_done - done_before == self.report.runs_total - total_before;
        let checks = std::mem::take(&mut self.checks);
        self.draws.push(DrawRecord {
            seed,
            parameters: self.report.parameters.split_off(base_parameters),
            findings: std::mem::take(&mut self.report.findings),
            sections: std::mem::take(&mut self.report.sections),
            pending: std::mem::take(&mut self.pending),
            checks: complete.then_some(checks),
        });
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

    /// Writes the draws put aside by [`Output::end_draw`] as one report (see
    /// [`crate::draws`]): each finding checked as "holds in k of N draws"; each CSV with
    /// every draw's rows (a `draw` column first) and its spread beside it
    /// (`<name>_spread.csv`: mean, min, max and the 95 % interval per point and column);
    /// each table cell as the mean and range over the draws; each figure as the mean with
    /// its range; `draws.csv` listing each draw's seed and checks. The text is draw 0's.
    pub(crate) fn combine_draws(&mut self) -> Result<(), ExperimentError> {
        let draws = std::mem::take(&mut self.draws);
        let Some(first) = draws.first() else {
            return Ok(());
        };
        let count = draws.len();
        let seeds: Vec<String> = draws.iter().map(|d| d.seed.to_string()).collect();
        self.param(
            "task-set draws (--seeds)",
            format!(
                "{count}, seeds {} (draw 0: the run seed; draw k: the k-th SplitMix64 output \
                 from it); parameters and text below that name a seed are draw 0's",
                seeds.join(", ")
            ),
        );
        self.report
            .parameters
            .extend(first.parameters.iter().cloned());
        let checked: Vec<Vec<(String, bool)>> =
            draws.iter().filter_map(|d| d.checks.clone()).collect();
        let tally = crate::draws::Tally::of(&checked);
        self.report.findings = if tally.findings.is_empty() {
            first
                .findings
                .iter()
                .map(|f| format!("draw 0: {f}"))
                .collect()
        } else {
            tally.lines()
        };
        let mut intro = format!(
            "### Several task-set draws\n\n{count} draws, each the whole procedure on its own \
             task sets. Tables give each figure as the mean over the draws with the range \
             (min–max) in parentheses, or each value with the number of draws that gave it; \
             every CSV holds every draw's rows (column `draw`), and `NAME_spread.csv` beside it \
             the mean, min, max and a 95 % confidence interval for the mean (Student's t, \
             n − 1 degrees of freedom) per point and column; figures show the mean with the \
             draws' range. The main results count the draws in which each finding holds \
             (`draws.csv`).\n\nFindings of each draw:\n\n"
        );
        for (k, draw) in draws.iter().enumerate() {
            let status = if draw.checks.is_some() {
                ""
            } else {
                " (not every run finished)"
            };
            let _ = writeln!(intro, "- draw {k} (seed {}){status}:", draw.seed);
            for f in &draw.findings {
                let _ = writeln!(intro, "  - {f}");
            }
        }
        self.text(intro);
        let mut check_rows = Vec::new();
        for (k, draw) in draws.iter().enumerate() {
            for (finding, holds) in draw.checks.iter().flatten() {
                check_rows.push(vec![
                    k.to_string(),
                    draw.seed.to_string(),
                    finding.clone(),
                    holds.to_string(),
                ]);
            }
        }
        self.csv(
            "draws.csv",
            "each draw's seed and whether each finding held in it",
            &["draw", "seed", "finding", "holds"],
            &check_rows,
        )?;
        let pending_of = |draw: &DrawRecord, wanted: &str| -> Option<usize> {
            draw.pending.iter().position(|p| match p {
                Pending::Csv { file, .. } | Pending::Table { file, .. } => file == wanted,
                Pending::Figure { stem, .. } => format!("{stem}.svg") == wanted,
            })
        };
        for section in &first.sections {
            match section {
                Section::Text(text) => self.text(text.clone()),
                Section::Data { title, file } => {
                    let Some(i) = pending_of(first, file) else {
                        continue;
                    };
                    let Pending::Csv { header, .. } = &first.pending[i] else {
                        continue;
                    };
                    let mut all_rows = Vec::new();
                    let mut per_draw = Vec::new();
                    for (k, draw) in draws.iter().enumerate() {
                        let rows = match pending_of(draw, file).map(|j| &draw.pending[j]) {
                            Some(Pending::Csv {
                                header: h, rows, ..
                            }) if h == header => rows.clone(),
                            _ => Vec::new(),
                        };
                        for row in &rows {
                            let mut line = vec![k.to_string()];
                            line.extend(row.iter().cloned());
                            all_rows.push(line);
                        }
                        per_draw.push(rows);
                    }
                    let mut stacked_header = vec!["draw"];
                    stacked_header.extend(header.iter().map(String::as_str));
                    self.csv(
                        file,
                        &format!("{title}, every draw"),
                        &stacked_header,
                        &all_rows,
                    )?;
                    let stem = file.strip_suffix(".csv").unwrap_or(file);
                    match crate::draws::summarise_rows(header, &per_draw) {
                        Some((h, rows)) => {
                            let h: Vec<&str> = h.iter().map(String::as_str).collect();
                            self.csv(
                                &format!("{stem}_spread.csv"),
                                &format!("{title}: mean, min–max and 95 % interval over the draws"),
                                &h,
                                &rows,
                            )?;
                        }
                        None => self.text(format!(
                            "({file}: the draws' rows are not the same points, so it has no \
                             spread file; compare the draws by its `draw` column.)"
                        )),
                    }
                }
                Section::Table(table) => {
                    let tables: Vec<&Table> = draws
                        .iter()
                        .filter_map(|d| {
                            d.sections.iter().find_map(|s| match s {
                                Section::Table(t) if t.file == table.file => Some(t),
                                _ => None,
                            })
                        })
                        .collect();
                    let same_shape = tables.len() == count
                        && tables.iter().all(|t| {
                            t.header == table.header
                                && t.rows.len() == table.rows.len()
                                && t.rows
                                    .iter()
                                    .zip(&table.rows)
                                    .all(|(a, b)| a.len() == b.len())
                        });
                    let (title, rows) = if same_shape {
                        let rows = table
                            .rows
                            .iter()
                            .enumerate()
                            .map(|(r, row)| {
                                (0..row.len())
                                    .map(|c| {
                                        let cells: Vec<&str> =
                                            tables.iter().map(|t| t.rows[r][c].as_str()).collect();
                                        crate::draws::spread_cell(&cells)
                                    })
                                    .collect()
                            })
                            .collect();
                        (format!("{} — over {count} draws", table.title), rows)
                    } else {
                        (
                            format!(
                                "{} — draw 0 (the draws' tables differ in shape)",
                                table.title
                            ),
                            table.rows.clone(),
                        )
                    };
                    let header: Vec<&str> = table.header.iter().map(String::as_str).collect();
                    let stem = table.file.strip_suffix(".md").unwrap_or(&table.file);
                    self.table(stem, &title, &header, rows)?;
                }
                Section::Figure(figure) => {
                    let charts: Vec<Chart> = draws
                        .iter()
                        .filter_map(|d| {
                            d.pending.iter().find_map(|p| match p {
                                Pending::Figure { stem, chart }
                                    if format!("{stem}.svg") == figure.svg =>
                                {
                                    Some(chart.clone())
                                }
                                _ => None,
                            })
                        })
                        .collect();
                    let Some(chart) = crate::plot::mean_of_draws(&charts) else {
                        continue;
                    };
                    let how = match chart {
                        Chart::Line(_) => "each curve is the mean of the draws, shaded from their minimum to their maximum",
                        Chart::Bar(_) | Chart::BarRange(..) => "each bar is the mean of the draws, the line over it their minimum to maximum",
                        Chart::Box(_) => "each box averages the draws' quartiles and whiskers (outliers: in the draws' CSVs)",
                    };
                    let caption = format!(
                        "{} Over {count} task-set draws: {how}; a seed named above is draw 0's.",
                        figure.caption.trim()
                    );
                    let stem = figure.svg.strip_suffix(".svg").unwrap_or(&figure.svg);
                    self.figure(stem, &chart, &caption)?;
                }
            }
        }
        Ok(())
    }

    /// Runs a sweep (see [`crate::sweep::sweep`]) and counts its runs for the report.
    ///
    /// The runs are numbered over the whole experiment, in order; with `--shard` only
    /// the shard's run (the others are `None`, as skipped ones), and in a merge none:
    /// their results are read back from the shards (see [`crate::shard`]).
    pub fn sweep<T, R, W, N>(
        &mut self,
        label: &str,
        items: &[T],
        name: N,
        work: W,
    ) -> Result<SweepOutcome<R>, ExperimentError>
    where
        T: Sync,
        R: Send + serde::Serialize + serde::de::DeserializeOwned,
        W: Fn(&T) -> Result<R, ExperimentError> + Sync,
        N: Fn(&T) -> String + Sync,
    {
        // Draw k > 0 names its runs apart from draw 0's, which keeps the single draw's names.
        let draw = self.draw.map_or(0, |d| d.0);
        let name = |item: &T| match draw {
            0 => name(item),
            k => format!("{} (draw {k})", name(item)),
        };
        let first = self.report.runs_total;
        let outcome = match &self.options.runs {
            Runs::All => sweep(label, items, self.options, &self.counter, name, work)?,
            Runs::Shard(shard) => {
                let mine: Vec<(usize, &T)> = shard
                    .runs_of_sweep(first, items.len())
                    .into_iter()
                    .map(|i| (i, &items[i]))
                    .collect();
                let part = sweep(
                    label,
                    &mine,
                    self.options,
                    &self.counter,
                    |(_, item)| name(item),
                    |(_, item)| work(item),
                )?;
                self.shard_runs += mine.len();
                let mut results: Vec<Option<R>> = items.iter().map(|_| None).collect();
                for ((i, item), result) in mine.iter().zip(part.results) {
                    let Some(result) = result else { continue };
                    let value = serde_json::to_value(&result).map_err(|e| {
                        ExperimentError::Analysis(format!(
                            "run '{}': result not storable: {e}",
                            name(item)
                        ))
                    })?;
                    self.stored.push(StoredRun {
                        run: first + i,
                        name: name(item),
                        result: value,
                    });
                    results[*i] = Some(result);
                }
                SweepOutcome { results }
            }
            Runs::Replay(replay) => {
                let results = items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| replay.result(first + i, &name(item)).map(Some))
                    .collect::<Result<Vec<Option<R>>, ShardError>>()?;
                SweepOutcome { results }
            }
        };
        self.report.runs_done += outcome.done();
        self.report.runs_total += outcome.total();
        Ok(outcome)
    }

    /// Keeps `file` (a `.csv` name) with `header` and `rows` for the end, and lists it in
    /// the report.
    pub fn csv(
        &mut self,
        file: &str,
        title: &str,
        header: &[&str],
        rows: &[Vec<String>],
    ) -> Result<(), ExperimentError> {
        self.pending.push(Pending::Csv {
            file: file.to_string(),
            header: header.iter().map(|h| h.to_string()).collect(),
            rows: rows.to_vec(),
        });
        self.report.sections.push(Section::Data {
            title: title.to_string(),
            file: file.to_string(),
        });
        Ok(())
    }

    /// Keeps a Markdown table for `<stem>.md` and puts it in the report.
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
        self.pending.push(Pending::Table {
            file: table.file.clone(),
            title: table.title.clone(),
            markdown: table.to_markdown(),
        });
        self.report.sections.push(Section::Table(table));
        Ok(())
    }

    /// Keeps `chart` for `<stem>.svg` and `<stem>.png` and puts it in the report.
    pub fn figure(
        &mut self,
        stem: &str,
        chart: &Chart,
        caption: &str,
    ) -> Result<(), ExperimentError> {
        self.pending.push(Pending::Figure {
            stem: stem.to_string(),
            chart: chart.clone(),
        });
        self.report.sections.push(Section::Figure(Figure {
            title: chart.title().to_string(),
            caption: caption.to_string(),
            svg: format!("{stem}.svg"),
            png: format!("{stem}.png"),
        }));
        Ok(())
    }

    /// The report so far, without writing anything.
    pub fn into_report(self) -> Report {
        self.report
    }

    /// Completes the report (`wall_time`, `host`) and writes every file, `report.md` and
    /// the manifest: each is written beside its target and all are renamed into place at
    /// the end; files of the previous manifest that this run does not write are removed.
    pub fn finish(
        self,
        wall_time: Duration,
        host: Option<HostInfo>,
    ) -> Result<Report, ExperimentError> {
        let mut report = self.report;
        report.wall_time = wall_time;
        report.host = host;
        match &self.options.runs {
            Runs::All => {}
            Runs::Shard(_) => {
                return finish_shard(report, self.stored, self.shard_runs, self.options)
            }
            Runs::Replay(replay) => {
                if replay.len() != report.runs_total {
                    return Err(ShardError::RunCount {
                        stored: replay.len(),
                        expected: report.runs_total,
                    }
                    .into());
                }
            }
        }
        let dir = self.options.out.clone();
        // An input (a --workload file) is never overwritten.
        for name in report.files().iter().map(String::as_str).chain([MANIFEST]) {
            let path = dir.join(name);
            if let Some(input) = self
                .options
                .workloads
                .iter()
                .find(|w| files::same_file(&path, w))
            {
                return Err(files::OutputError::SameAsInput {
                    output: path,
                    input: input.clone(),
                }
                .into());
            }
        }
        let partial = report.partial_note();
        let mut written = Vec::new();
        let mut file = |name: &str, bytes: &[u8]| -> Result<(), ExperimentError> {
            let mut f = AtomicFile::create(&dir.join(name))?;
            f.write_all(bytes).map_err(|error| WriteError {
                path: dir.join(name),
                error,
            })?;
            written.push(f);
            Ok(())
        };
        for p in &self.pending {
            match p {
                Pending::Csv {
                    file: name,
                    header,
                    rows,
                } => {
                    file(
                        name,
                        &csv_bytes(&dir.join(name), partial.as_deref(), header, rows)?,
                    )?;
                }
                Pending::Table {
                    file: name,
                    title,
                    markdown,
                } => {
                    let banner = partial
                        .as_deref()
                        .map(|p| format!("> **{}.**\n\n", capitalised(p)))
                        .unwrap_or_default();
                    file(name, format!("# {title}\n\n{banner}{markdown}").as_bytes())?;
                }
                Pending::Figure { stem, chart } => {
                    let chart = match &report.partial_runs() {
                        Some(runs) => chart.titled(format!("{} (partial: {runs})", chart.title())),
                        None => chart.clone(),
                    };
                    let (svg, png) = render(&chart, &dir.join(stem))?;
                    file(&format!("{stem}.svg"), svg.as_bytes())?;
                    file(&format!("{stem}.png"), &png)?;
                }
            }
        }
        file("report.md", report.to_markdown().as_bytes())?;
        // Every byte on disk before any old file goes: a full disk stops here.
        for f in &mut written {
            f.finish()?;
        }
        let names = report.files();
        let previous = read_manifest(&dir);
        // The manifest first lists the old files too: a run stopped half-way still lists
        // everything an rtvmm run wrote here.
        let mut all = previous.clone();
        all.extend(names.iter().filter(|n| !previous.contains(n)).cloned());
        files::write_file(
            &dir.join(MANIFEST),
            manifest(&report.experiment, "writing", &all).as_bytes(),
        )?;
        remove_stale(&dir, &previous, &names, self.options);
        files::commit_all(written)?;
        let status = match &partial {
            Some(p) => p.clone(),
            None => "complete".to_string(),
        };
        files::write_file(
            &dir.join(MANIFEST),
            manifest(&report.experiment, &status, &names).as_bytes(),
        )?;
        Ok(report)
    }
}

/// A shard's end: its results ([`SHARD_RUNS`]) and its manifest ([`SHARD_MANIFEST`])
/// instead of the experiment's files, which only the merge of every shard writes. The
/// report says which runs were this shard's: `runs_done` of `runs_total` (the shard's).
fn finish_shard(
    mut report: Report,
    stored: Vec<StoredRun>,
    shard_runs: usize,
    options: &Options,
) -> Result<Report, ExperimentError> {
    let Runs::Shard(shard) = options.runs else {
        unreachable!("finish_shard is called for a shard")
    };
    let dir = options.out.clone();
    let runs_in_experiment = report.runs_total;
    report.runs_total = shard_runs;
    let status = match report.partial_note() {
        Some(p) => p,
        None => "complete".to_string(),
    };
    let lines = crate::shard::runs_jsonl(&stored)
        .map_err(|e| ExperimentError::Analysis(format!("a result not storable: {e}")))?;
    let manifest_json = ShardManifest {
        experiment: report.experiment.clone(),
        rtvmm_version: env!("CARGO_PKG_VERSION").to_string(),
        shard,
        options: options.result_options(),
        status: status.clone(),
        runs_in_experiment,
        runs: stored.iter().map(run_key).collect(),
    };
    let json = crate::shard::manifest_text(&manifest_json)
        .map_err(|e| ExperimentError::Analysis(format!("shard manifest: {e}")))?;
    let names = vec![SHARD_RUNS.to_string(), SHARD_MANIFEST.to_string()];
    let previous = read_manifest(&dir);
    let mut all = previous.clone();
    all.extend(names.iter().filter(|n| !previous.contains(n)).cloned());
    files::write_file(
        &dir.join(MANIFEST),
        manifest(&report.experiment, "writing", &all).as_bytes(),
    )?;
    remove_stale(&dir, &previous, &names, options);
    // The results before the manifest that vouches for them.
    files::write_file(&dir.join(SHARD_RUNS), lines.as_bytes())?;
    files::write_file(&dir.join(SHARD_MANIFEST), json.as_bytes())?;
    files::write_file(
        &dir.join(MANIFEST),
        manifest(&report.experiment, &status, &names).as_bytes(),
    )?;
    report.sections.clear();
    report.shard = Some(shard);
    report.findings = vec![format!(
        "shard {shard}: {} of the experiment's {runs_in_experiment} runs; merge every shard \
         with `rtvmm experiment merge OUT DIR…`",
        report.runs_done
    )];
    Ok(report)
}

/// `Partial: …` from `partial: …`.
fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(c) => c.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A CSV's bytes: the header and rows, after a `# partial: …` line when partial.
pub(crate) fn csv_bytes(
    path: &Path,
    partial: Option<&str>,
    header: &[String],
    rows: &[Vec<String>],
) -> Result<Vec<u8>, ExperimentError> {
    let mut bytes = Vec::new();
    if let Some(p) = partial {
        bytes.extend_from_slice(format!("# {p}\n").as_bytes());
    }
    let csv_err = |e: csv::Error| {
        ExperimentError::Write(WriteError {
            path: path.to_path_buf(),
            error: std::io::Error::other(e.to_string()),
        })
    };
    let mut writer = csv::Writer::from_writer(bytes);
    writer.write_record(header).map_err(csv_err)?;
    for row in rows {
        writer.write_record(row).map_err(csv_err)?;
    }
    writer
        .into_inner()
        .map_err(|e| csv_err(e.into_error().into()))
}

/// The manifest's text.
fn manifest(experiment: &str, status: &str, names: &[String]) -> String {
    let mut text = format!(
        "# Written by `rtvmm experiment {experiment}`: the files it wrote in this directory.\n\
         # An experiment writing here again first removes the files listed (and no others).\n\
         experiment: {experiment}\nstatus: {status}\n"
    );
    for n in names {
        let _ = writeln!(text, "file: {n}");
    }
    text
}

/// The file names a previous manifest in `dir` lists (only plain names in `dir`).
fn read_manifest(dir: &Path) -> Vec<String> {
    let Ok(text) = rtvmm_system::input::read_text(&dir.join(MANIFEST)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = Vec::new();
    for line in text.lines() {
        let Some(name) = line.strip_prefix("file: ") else {
            continue;
        };
        let plain = {
            let mut parts = Path::new(name).components();
            matches!(
                (parts.next(), parts.next()),
                (Some(std::path::Component::Normal(_)), None)
            )
        };
        if plain && name != MANIFEST && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

/// Removes the regular files `previous` lists that this run does not write (never an
/// input of this run, never a symlink or a directory).
fn remove_stale(dir: &Path, previous: &[String], now: &[String], options: &Options) {
    for name in previous.iter().filter(|n| !now.contains(n)) {
        let path = dir.join(name);
        let is_file = std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file());
        let is_input = options.workloads.iter().any(|w| files::same_file(w, &path));
        if is_file && !is_input {
            let _ = std::fs::remove_file(&path);
        }
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
