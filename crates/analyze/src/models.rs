//! `rtvmm analyze FILE.xml --model prm|mpr|dmpr [--table]`: a CARTS file's components
//! under one of CARTS's resource models ([`rtvmm_analysis::carts_models`]), the interface
//! of each and, with `--table`, what CARTS prints for every period of its range — PRM: Θ
//! and the bandwidth at each Π; MPR: Θ and m′; DMPR: m and Θ. Numbers are CARTS's units
//! (no conversion: the model analysis has no VMM policy and no root).
//!
//! `--fixed-period NAME=Π` fixes a component's period (warning when Π lies outside its
//! `min_period..=max_period`); `--period-range` is the range of a component that gives none.

use serde::Serialize;
use std::fmt::Write as _;

use rtvmm_analysis::{
    analyze_components, CartsComponent, CartsModel, CartsSystem, CartsTask, ComponentModel,
    GuestScheduler as AnalysisGuest, ModelInterface, ModelOptions, Ratio, Task,
};
use rtvmm_core::Nanos;

use crate::convert::{fixed_period_warning, CARTS_DEFAULT_UNIT};
use crate::names::InterfaceSource;
use crate::{AnalyzeError, Input, Model, Options, Report};

/// The components of a CARTS file under one model.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ModelReport {
    pub input: String,
    /// prm, mpr or dmpr.
    pub model: &'static str,
    /// The name of the same model in CARTS (`PRM`, `MPR2`, `DMPR`).
    pub carts_model: &'static str,
    /// auto or general (PRM only).
    pub sbf_mode: &'static str,
    /// Per component, each with its rows when `--table` was given (MPR, DMPR: always).
    pub components: Vec<ComponentModel>,
    /// For stderr (a fixed period outside the range).
    pub warnings: Vec<String>,
    /// Whether the rows are shown.
    #[serde(skip)]
    pub table: bool,
}

/// Whether `rtvmm analyze` takes the model path: a CARTS file under `--model mpr|dmpr`, or
/// `--table`. (A scenario's `--model` picks the interface of its global EDF guests of
/// several VCPUs, in the multicore analysis.)
pub fn wants_models(input: &Input, options: &Options, table: bool) -> bool {
    let carts = matches!(input, Input::Carts { .. });
    table || (carts && matches!(options.model, Some(Model::Mpr | Model::Dmpr)))
}

/// Analyses `input` (a CARTS file) under `options.model`.
pub fn analyze_models(
    input: &Input,
    options: &Options,
    table: bool,
) -> Result<ModelReport, AnalyzeError> {
    let Input::Carts { file, system } = input else {
        return Err(AnalyzeError::BadOption(format!(
            "--table reads CARTS files (*.xml); a scenario is analysed without it (its \
             --model {} picks the interface of global EDF guests of several VCPUs)",
            options.model.unwrap_or_default().name()
        )));
    };
    if options.given {
        return Err(AnalyzeError::BadOption(
            "--given checks a scenario's VCPUs; it does not apply to --model or --table"
                .to_string(),
        ));
    }
    let unit = options.quantum.unwrap_or(CARTS_DEFAULT_UNIT).as_ns();
    let model = match options.model.unwrap_or_default() {
        Model::Prm => CartsModel::Prm,
        Model::Mpr => CartsModel::Mpr,
        Model::Dmpr => CartsModel::Dmpr,
    };
    let mut warnings = Vec::new();
    let mut fixed_periods = Vec::new();
    for fixed in &options.fixed_periods {
        let component = system
            .components
            .iter()
            .find(|c| c.name == fixed.domain)
            .ok_or_else(|| {
                let names: Vec<&str> = system.components.iter().map(|c| c.name.as_str()).collect();
                AnalyzeError::BadOption(format!(
                    "--fixed-period: no component named '{}' (components: {})",
                    fixed.domain,
                    names.join(", ")
                ))
            })?;
        let period = fixed.units(unit)?;
        if component.min_period.is_some() || component.max_period.is_some() {
            warnings.extend(fixed_period_warning(
                &component.name,
                period,
                component.min_period.unwrap_or(1),
                component.max_period,
                &format!(
                    "the component's min_period/max_period, {file} line {}",
                    component.line
                ),
            ));
        }
        fixed_periods.push((fixed.domain.clone(), period));
    }
    let default_range = options.period_range.map(|bounds| {
        (
            bounds.min.ceil_units(unit).max(1),
            bounds.max.floor_units(unit),
        )
    });
    if let Some((min, max)) = default_range {
        if min > max {
            return Err(AnalyzeError::BadOption(format!(
                "--period-range: no whole number of units of {} lies in it",
                Nanos::from_ns(unit)
            )));
        }
        for (name, period) in &fixed_periods {
            let own = system
                .components
                .iter()
                .any(|c| c.name == *name && (c.min_period.is_some() || c.max_period.is_some()));
            if !own {
                warnings.extend(fixed_period_warning(
                    name,
                    *period,
                    min,
                    Some(max),
                    "--period-range",
                ));
            }
        }
    }
    let model_options = ModelOptions {
        sbf: options.sbf,
        fixed_periods,
        default_range,
        table,
    };
    let components =
        analyze_components(system, model, &model_options).map_err(|error| AnalyzeError::Carts {
            file: file.clone(),
            error,
        })?;
    Ok(ModelReport {
        input: file.clone(),
        model: model.name(),
        carts_model: model.carts_name(),
        sbf_mode: match options.sbf {
            rtvmm_analysis::SbfMode::Auto => "auto",
            rtvmm_analysis::SbfMode::General => "general",
        },
        components,
        warnings,
        table,
    })
}

fn bandwidth(ratio: Ratio) -> String {
    format!("{:.4}", ratio.to_f64())
}

impl ModelReport {
    /// The report as JSON (every row, whether or not the table is shown).
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("the report serialises")
    }

    /// The readable table: one line per component (its interface), and with `--table` a
    /// row per period under it.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let model = match self.model {
            "prm" => format!("PRM (one pcpu, sbf {})", self.sbf_mode),
            "mpr" => "MPR ⟨Π, Θ, m′⟩, global EDF".to_string(),
            _ => "DMPR (m full VCPUs + a partial (Π, Θ)), global EDF".to_string(),
        };
        let _ = writeln!(
            out,
            "{} (carts): {} components; model {model} — CARTS's {}; times in the file's units",
            self.input,
            self.components.len(),
            self.carts_model
        );
        for component in &self.components {
            let range = if component.min_period == component.max_period {
                format!("Π = {}", component.min_period)
            } else {
                format!("Π ∈ {}..={}", component.min_period, component.max_period)
            };
            let found = match (&component.best, &component.failure) {
                (Some(best), _) => {
                    let mark = if component.limited {
                        " (a test hit its work limit: sound, maybe not the least)"
                    } else {
                        ""
                    };
                    format!("{}{mark}", self.describe(best))
                }
                (None, Some(why)) => format!("no interface: {why}"),
                (None, None) => "no interface".to_string(),
            };
            let _ = writeln!(out, "  {} ({range}): {found}", component.name);
            if self.table {
                let header = match self.model {
                    "prm" => "      Π       Θ  bandwidth",
                    "mpr" => "      Π       Θ     m′  bandwidth",
                    _ => "      Π       m       Θ  bandwidth  (CARTS: cpus, Θ total)",
                };
                let _ = writeln!(out, "{header}");
                for row in &component.rows {
                    let _ = match (&row.interface, self.model) {
                        (None, _) => writeln!(out, "{:>7}       —", row.period),
                        (Some(i), "prm") => writeln!(
                            out,
                            "{:>7} {:>7}  {:>9}",
                            i.period,
                            i.budget,
                            bandwidth(i.bandwidth)
                        ),
                        (Some(i), "mpr") => writeln!(
                            out,
                            "{:>7} {:>7} {:>6}  {:>9}",
                            i.period,
                            i.budget,
                            i.processors,
                            bandwidth(i.bandwidth)
                        ),
                        (Some(i), _) => writeln!(
                            out,
                            "{:>7} {:>7} {:>7}  {:>9}  ({}, {})",
                            i.period,
                            i.processors,
                            i.budget,
                            bandwidth(i.bandwidth),
                            i.carts_cpus,
                            i.carts_execution_time
                        ),
                    };
                }
            }
        }
        out
    }

    fn describe(&self, i: &ModelInterface) -> String {
        match self.model {
            "prm" => format!(
                "(Π, Θ) = ({}, {}), bandwidth {}",
                i.period,
                i.budget,
                bandwidth(i.bandwidth)
            ),
            "mpr" => format!(
                "⟨Π, Θ, m′⟩ = ⟨{}, {}, {}⟩, bandwidth {}",
                i.period,
                i.budget,
                i.processors,
                bandwidth(i.bandwidth)
            ),
            _ => format!(
                "m = {} full VCPUs + (Π, Θ) = ({}, {}), bandwidth {} (CARTS: cpus {}, Θ {})",
                i.processors,
                i.period,
                i.budget,
                bandwidth(i.bandwidth),
                i.carts_cpus,
                i.carts_execution_time
            ),
        }
    }
}

/// `--emit carts`: the input as a CARTS file that CARTS itself reads (every task with its
/// `d`). A CARTS input is written back as read; a scenario's analysed domains become
/// components (RM, DM or EDF as analysed, tasks in analysis units, a fixed period as
/// `period`, `--period-range` as `min_period`/`max_period`); refused domains are left out,
/// and a comment says so and gives the unit.
pub fn emit_carts(
    input: &Input,
    report: &Report,
    options: &Options,
) -> Result<String, AnalyzeError> {
    let system = match input {
        Input::Carts { system, .. } => system.clone(),
        Input::Scenario(_) => scenario_as_carts(report, options)?,
    };
    let mut text = system.to_xml();
    let note = format!(
        "written by rtvmm analyze (emit carts) from {}; one unit is {}{}",
        report.input,
        Nanos::from_ns(report.unit_ns),
        match input {
            Input::Scenario(_) => {
                let left: Vec<&str> = report
                    .domains
                    .iter()
                    .filter(|d| {
                        d.analysed_as.is_none() || d.tasks.iter().any(|t| t.period.is_none())
                    })
                    .map(|d| d.name.as_str())
                    .collect();
                if left.is_empty() {
                    String::new()
                } else {
                    format!("; left out (not analysable): {}", left.join(", "))
                }
            }
            Input::Carts { .. } => String::new(),
        }
    );
    // A comment may not hold two dashes in a row (file and domain names may).
    let mut note = note.replace("--", "- -");
    while note.contains("--") {
        note = note.replace("--", "- -");
    }
    let after_declaration = text.find('\n').map_or(0, |i| i + 1);
    text.insert_str(
        after_declaration,
        &format!("<!-- {} -->\n", note.trim_end_matches('-')),
    );
    Ok(text)
}

fn scenario_as_carts(report: &Report, options: &Options) -> Result<CartsSystem, AnalyzeError> {
    let range = options.period_range.map(|bounds| {
        (
            bounds.min.ceil_units(report.unit_ns).max(1),
            bounds.max.floor_units(report.unit_ns),
        )
    });
    let mut components = Vec::new();
    for domain in &report.domains {
        let Some(guest) = domain.analysed_as else {
            continue;
        };
        let tasks: Option<Vec<CartsTask>> = domain
            .tasks
            .iter()
            .map(|t| {
                Some(CartsTask {
                    name: t.name.clone(),
                    task: Task::with_deadline(t.period?, t.wcet?, t.deadline?),
                    line: 0,
                })
            })
            .collect();
        let Some(tasks) = tasks.filter(|t| !t.is_empty()) else {
            continue;
        };
        let fixed = domain.interface_source == Some(InterfaceSource::FixedPeriod);
        components.push(CartsComponent {
            name: domain.name.clone(),
            scheduler: guest,
            scheduler_written: match guest {
                AnalysisGuest::Rm => "RM",
                AnalysisGuest::Dm => "DM",
                AnalysisGuest::Edf => "EDF",
            }
            .to_string(),
            min_period: range.filter(|_| !fixed).map(|(min, _)| min),
            max_period: range.filter(|_| !fixed).map(|(_, max)| max),
            period: domain.period.filter(|_| fixed),
            budget: None,
            tasks,
            children: Vec::new(),
            line: 0,
        });
    }
    if components.is_empty() {
        return Err(AnalyzeError::Emit(
            "no domain has analysable tasks to write as a CARTS component".to_string(),
        ));
    }
    Ok(CartsSystem {
        scheduler: Some("RM".to_string()),
        period: None,
        min_period: None,
        max_period: None,
        components,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tests::carts;

    const GLOBAL: &str = r#"<system os_scheduler="gEDF" period="20">
      <component name="wide" scheduler="gEDF" min_period="49" max_period="50">
        <task name="a" p="200" d="200" e="80"/><task name="b" p="200" d="200" e="100"/>
        <task name="c" p="200" d="200" e="100"/>
      </component></system>"#;

    /// MPR and DMPR print the interface CARTS prints at Π = 50 (`mpr.rs`'s doc example);
    /// the table adds one row per period, and the JSON holds the rows.
    #[test]
    fn model_table_and_json() {
        let input = carts(GLOBAL);
        let mpr = Options {
            model: Some(Model::Mpr),
            fixed_periods: vec!["wide=50".parse().unwrap()],
            ..Options::default()
        };
        let report = analyze_models(&input, &mpr, false).unwrap();
        assert!(report.warnings.is_empty());
        let text = report.table();
        assert!(
            text.contains("wide (Π = 50): ⟨Π, Θ, m′⟩ = ⟨50, 97, 2⟩"),
            "{text}"
        );
        let dmpr = Options {
            model: Some(Model::Dmpr),
            ..Options::default()
        };
        let report = analyze_models(&input, &dmpr, true).unwrap();
        let text = report.table();
        assert!(text.contains("Π ∈ 49..=50"), "{text}");
        assert!(text.contains("     50       1      46"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        let rows = &json["components"][0]["rows"];
        assert_eq!(rows.as_array().unwrap().len(), 2);
        assert_eq!(rows[1]["interface"]["carts_execution_time"], 96);
        assert_eq!(json["carts_model"], "DMPR");
    }

    /// A fixed period outside the component's range warns with the component, the value,
    /// the range and the line; a scenario is refused under --model mpr.
    #[test]
    fn fixed_period_outside_the_component_range_warns() {
        let options = Options {
            model: Some(Model::Mpr),
            fixed_periods: vec!["wide=60".parse().unwrap()],
            ..Options::default()
        };
        let report = analyze_models(&carts(GLOBAL), &options, false).unwrap();
        assert_eq!(report.warnings.len(), 1);
        let warning = &report.warnings[0];
        assert!(
            warning.contains(
                "--fixed-period wide=60: 60 units lie outside wide's period range 49..=50"
            ) && warning.contains("test.xml line 2"),
            "{warning}"
        );
        assert_eq!(report.components[0].min_period, 60);
        let scenario = crate::tests::scenario(&format!(
            "{}{}",
            crate::tests::HEAD,
            crate::tests::domain("d", "", &[("a", "25ms", "3ms")])
        ));
        let error = analyze_models(&Input::Scenario(scenario), &options, false).unwrap_err();
        assert!(error.to_string().contains("reads CARTS files"), "{error}");
    }

    /// Round trip: a scenario written by `--emit carts` and read back gives the same
    /// interfaces (in units) as the scenario; a CARTS file written back gives its own.
    #[test]
    fn emitted_carts_reads_back_to_the_same_interfaces() {
        use crate::tests::{domain, run_on, scenario, HEAD};
        let text = format!(
            "{HEAD}{}{}",
            domain(
                "control",
                "",
                &[
                    ("t1", "7ms", "2ms"),
                    ("t2", "8ms", "1ms"),
                    ("t3", "10ms", "1ms")
                ]
            ),
            domain(
                "avionics",
                "",
                &[
                    ("a", "25ms", "3ms"),
                    ("b", "50ms", "5ms"),
                    ("c", "100ms", "4ms")
                ]
            )
        );
        for options in [
            Options::default(),
            Options {
                sbf: rtvmm_analysis::SbfMode::General,
                period_range: Some("2..30".parse().unwrap()),
                fixed_periods: vec!["avionics=10".parse().unwrap()],
                ..Options::default()
            },
        ] {
            let report = run_on(&text, &options);
            let written = emit_carts(&Input::Scenario(scenario(&text)), &report, &options).unwrap();
            assert!(written.contains("one unit is 1ms"), "{written}");
            let back = crate::analyze(&carts(&written), &options).unwrap();
            let interfaces = |r: &Report| {
                r.domains
                    .iter()
                    .map(|d| (d.name.clone(), d.period, d.budget))
                    .collect::<Vec<_>>()
            };
            assert_eq!(interfaces(&back), interfaces(&report), "{written}");
        }
        let input = carts(GLOBAL);
        let report_options = Options {
            model: Some(Model::Mpr),
            ..Options::default()
        };
        let before = analyze_models(&input, &report_options, true).unwrap();
        let prm_report = run_on(&text, &Options::default());
        let written = emit_carts(&input, &prm_report, &report_options).unwrap();
        let after = analyze_models(&carts(&written), &report_options, true).unwrap();
        assert_eq!(after.components.len(), before.components.len());
        for (a, b) in after.components.iter().zip(&before.components) {
            assert_eq!((a.best, &a.rows), (b.best, &b.rows));
        }
    }
}
