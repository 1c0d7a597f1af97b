//! A CARTS file's components under one of CARTS's resource models, period by period: what
//! CARTS prints for each period of a component's range (`PRM`: the least budget Θ at each
//! Π; `MPR2`: Θ and m′; `DMPR`: m and Θ), and the least-bandwidth interface over the range.
//!
//! * **PRM** (Shin & Lee, TECS 2008): a component's workload as
//!   [`CartsSystem::to_domains`] builds it (child components as periodic tasks); per Π,
//!   `MinExec(Π)` ([`InterfaceAnalyzer::min_exec`]); over the range, Algorithm 1
//!   ([`InterfaceAnalyzer::optimal`]), the interface `rtvmm analyze` reports.
//! * **MPR** ([`crate::mpr`]) and **DMPR** ([`crate::dmpr`]): a `gEDF` component's tasks
//!   `(p, e, d)`; per Π, the least processor count with a passing budget and its least
//!   budget; over the range, the least bandwidth (ties: fewer processors, then the smaller
//!   Π), as [`optimal_mpr_interface`] and [`optimal_dmpr_interface`] search — with CARTS's
//!   bound on the processor count, ten times the number of tasks
//!   ([`CARTS_PROCESSORS_PER_TASK`]), not the library's default of one per task: the
//!   published MPR sbf can need more processors than tasks (a generated component of three
//!   tasks, U ≈ 1.74, gets ⟨14, 209, 15⟩ from CARTS and from rtvmm, and none with at most
//!   10), so a smaller bound would answer "no interface" where CARTS answers.
//!
//! The range of a component: a fixed period (the caller's, then the `period` attribute)
//! alone; otherwise `min_period..=max_period`, where a missing `min_period` is 1 (or the
//! caller's default range) and a missing `max_period` is the caller's default range, else —
//! for MPR and DMPR, whose search has no bound of its own, and for the PRM table — the
//! largest task period of the component. CARTS's `MPR2` and `DMPR` accept one period per
//! component only (`period`, or `min_period` equal to `max_period`); a range here is an
//! rtvmm extension, each period analysed as CARTS analyses a fixed one.
//!
//! Not covered: child components under MPR or DMPR (refused, naming the component), and
//! the interface of the `<system>` itself (the root CARTS also prints).

use serde::Serialize;

use crate::carts::{CartsComponent, CartsError, CartsErrorKind, CartsSystem};
use crate::dmpr::{optimal_dmpr_interface, Dmpr};
use crate::interface::{InterfaceAnalyzer, PeriodRange};
use crate::mpr::{optimal_mpr_interface, Mpr, MprError, MAX_CONCURRENCY};
use crate::prm::SbfMode;
use crate::ratio::Ratio;
use crate::workload::{Task, Workload};

/// The most periods one component's range may hold here: each period is a search of its
/// own (a 20-task MPR component costs about 2.5 ms per period), and the table prints a row
/// per period.
pub const MAX_MODEL_PERIODS: u64 = 10_000;

/// CARTS's bound on the processors of an MPR or DMPR interface: its `m_max` is ten times
/// the number of tasks of the component, in both models (`docs/analysis.md`, "CARTS
/// files", has the component that needs more processors than tasks).
pub const CARTS_PROCESSORS_PER_TASK: u64 = 10;

/// One of CARTS's resource models.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum CartsModel {
    /// The periodic resource `(Π, Θ)` on one processor.
    Prm,
    /// The multiprocessor periodic resource `⟨Π, Θ, m′⟩` (CARTS's `MPR2`).
    Mpr,
    /// m full VCPUs and a partial `(Π, Θ)` (CARTS's `DMPR`).
    Dmpr,
}

impl CartsModel {
    /// The model's name on rtvmm's command line: `prm`, `mpr`, `dmpr`.
    pub fn name(self) -> &'static str {
        match self {
            CartsModel::Prm => "prm",
            CartsModel::Mpr => "mpr",
            CartsModel::Dmpr => "dmpr",
        }
    }

    /// The model's name on CARTS's command line: `PRM`, `MPR2`, `DMPR`.
    pub fn carts_name(self) -> &'static str {
        match self {
            CartsModel::Prm => "PRM",
            CartsModel::Mpr => "MPR2",
            CartsModel::Dmpr => "DMPR",
        }
    }
}

/// The interface found at one period.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ModelInterface {
    /// Π.
    pub period: u64,
    /// PRM and MPR: Θ; DMPR: the partial VCPU's Θ.
    pub budget: u64,
    /// MPR: m′ (processors at once); DMPR: m (full VCPUs); PRM: 1.
    pub processors: u64,
    /// The bandwidth: Θ/Π (PRM, MPR), m + Θ/Π (DMPR).
    pub bandwidth: Ratio,
    /// What CARTS's output file writes for it, `<model cpus=… execution_time=…>`: PRM
    /// `(1, Θ)`, MPR `(m′, Θ)`, DMPR `(m + 1, mΠ + Θ)`.
    pub carts_cpus: u64,
    /// See `carts_cpus`.
    pub carts_execution_time: u64,
}

impl ModelInterface {
    fn prm(period: u64, budget: u64) -> ModelInterface {
        ModelInterface {
            period,
            budget,
            processors: 1,
            bandwidth: Ratio::new(budget, period),
            carts_cpus: 1,
            carts_execution_time: budget,
        }
    }

    fn mpr(mpr: &Mpr) -> ModelInterface {
        ModelInterface {
            period: mpr.period(),
            budget: mpr.budget(),
            processors: mpr.concurrency(),
            bandwidth: mpr.bandwidth(),
            carts_cpus: mpr.concurrency(),
            carts_execution_time: mpr.budget(),
        }
    }

    fn dmpr(dmpr: &Dmpr) -> ModelInterface {
        let (_, total, cpus) = dmpr.carts_form();
        ModelInterface {
            period: dmpr.period(),
            budget: dmpr.budget(),
            processors: dmpr.full(),
            bandwidth: dmpr.bandwidth(),
            carts_cpus: cpus,
            carts_execution_time: total,
        }
    }
}

/// One period of a component's range and what was found there (`None`: no interface).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PeriodRow {
    /// Π.
    pub period: u64,
    /// The interface at Π.
    pub interface: Option<ModelInterface>,
}

/// A component's result under one model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ComponentModel {
    /// The component's name.
    pub name: String,
    /// Line of its `<component>` tag.
    pub line: u32,
    /// The range of periods analysed (see the module docs).
    pub min_period: u64,
    /// See `min_period`.
    pub max_period: u64,
    /// The interface of least bandwidth over the range, if any.
    pub best: Option<ModelInterface>,
    /// Per period, ascending; empty unless the table was asked for (always filled for MPR
    /// and DMPR, whose search visits every period).
    pub rows: Vec<PeriodRow>,
    /// Why there is no interface (when `best` is `None`).
    pub failure: Option<String>,
    /// Whether a test hit its work limit (the result is sound, maybe not the least).
    pub limited: bool,
}

/// What to analyse, besides the file.
#[derive(Clone, Debug, Default)]
pub struct ModelOptions {
    /// The supply bound of the PRM analysis.
    pub sbf: SbfMode,
    /// Fixed periods by component name (the command line's), over the file's.
    pub fixed_periods: Vec<(String, u64)>,
    /// The range of a component that gives none (`min_period`/`max_period` win).
    pub default_range: Option<(u64, u64)>,
    /// Fill [`ComponentModel::rows`] for PRM too.
    pub table: bool,
}

/// Every top-level component of `system` under `model`. A component that has no interface
/// is reported with its reason; an input the model cannot take (a `gEDF` component under
/// PRM, another scheduler or child components under MPR/DMPR, a range of more than
/// [`MAX_MODEL_PERIODS`]) is an error naming the component and its line.
pub fn analyze_components(
    system: &CartsSystem,
    model: CartsModel,
    options: &ModelOptions,
) -> Result<Vec<ComponentModel>, CartsError> {
    let workloads: Vec<Workload> = match model {
        CartsModel::Prm => system
            .to_domains(options.sbf)?
            .into_iter()
            .map(|spec| spec.workload)
            .collect(),
        CartsModel::Mpr | CartsModel::Dmpr => system
            .components
            .iter()
            .map(|c| multiprocessor_workload(c, model))
            .collect::<Result<_, _>>()?,
    };
    system
        .components
        .iter()
        .zip(&workloads)
        .map(|(component, workload)| {
            let (min, max) = period_range(component, workload, model, options)?;
            Ok(match model {
                CartsModel::Prm => prm(component, workload, min, max, options),
                CartsModel::Mpr | CartsModel::Dmpr => {
                    multiprocessor(component, workload, model, min, max)
                }
            })
        })
        .collect()
}

fn refuse(component: &CartsComponent, reason: String) -> CartsError {
    CartsError {
        line: component.line,
        column: 1,
        kind: CartsErrorKind::Multiprocessor {
            component: component.name.clone(),
            reason,
        },
    }
}

fn multiprocessor_workload(
    component: &CartsComponent,
    model: CartsModel,
) -> Result<Workload, CartsError> {
    if !component.is_global_edf() {
        return Err(refuse(
            component,
            format!(
                "scheduler=\"{}\": the {} model analyses global EDF components \
                 (scheduler=\"gEDF\")",
                component.scheduler_written,
                model.carts_name()
            ),
        ));
    }
    if let Some(child) = component.children.first() {
        return Err(refuse(
            component,
            format!(
                "child component \"{}\" (line {}): nested components are not analysed under \
                 {} yet",
                child.name,
                child.line,
                model.carts_name()
            ),
        ));
    }
    Workload::new(component.tasks.iter().map(|t| t.task))
        .map_err(|error| refuse(component, error.to_string()))
}

/// The command line's fixed period for the component, else its `period` attribute.
fn fixed_period(component: &CartsComponent, options: &ModelOptions) -> Option<u64> {
    options
        .fixed_periods
        .iter()
        .find(|(name, _)| *name == component.name)
        .map(|&(_, period)| period)
        .or(component.period)
}

fn period_range(
    component: &CartsComponent,
    workload: &Workload,
    model: CartsModel,
    options: &ModelOptions,
) -> Result<(u64, u64), CartsError> {
    let fixed = fixed_period(component, options);
    let largest_period = workload.tasks().iter().map(|t: &Task| t.period).max();
    let (min, max) = match fixed {
        Some(period) => (period, period),
        None => {
            let default = options.default_range;
            let min = component
                .min_period
                .or(default.map(|(min, _)| min))
                .unwrap_or(1);
            let max = component
                .max_period
                .or(default.map(|(_, max)| max))
                .or(largest_period)
                .unwrap_or(min)
                .max(min);
            (min, max)
        }
    };
    let rows_needed = model != CartsModel::Prm || options.table;
    if rows_needed && max - min >= MAX_MODEL_PERIODS {
        return Err(refuse(
            component,
            format!(
                "periods {min}..={max} are {} periods, more than the {MAX_MODEL_PERIODS} \
                 analysed one by one; narrow min_period/max_period (or --period-range)",
                max - min + 1
            ),
        ));
    }
    Ok((min, max))
}

fn prm(
    component: &CartsComponent,
    workload: &Workload,
    min: u64,
    max: u64,
    options: &ModelOptions,
) -> ComponentModel {
    let analyzer = InterfaceAnalyzer::new(workload, component.scheduler);
    let (best, failure, limited) = match fixed_period(component, options) {
        // At a fixed period (with or without a given budget) CARTS prints MinExec there.
        Some(period) => match analyzer.min_exec(period, options.sbf) {
            Ok(budget) => (Some(ModelInterface::prm(period, budget)), None, false),
            Err(error) => (None, Some(error.to_string()), false),
        },
        None => {
            let range = match (component.min_period, component.max_period) {
                (None, None) => match options.default_range {
                    Some((low, high)) => PeriodRange::new(low, high),
                    None => PeriodRange::default(),
                },
                _ => PeriodRange::new(min, max),
            };
            match analyzer.optimal(options.sbf, range) {
                Ok(found) => (
                    Some(ModelInterface::prm(
                        found.interface.period,
                        found.interface.budget,
                    )),
                    None,
                    !found.proven_optimal,
                ),
                Err(error) => (None, Some(error.to_string()), false),
            }
        }
    };
    let rows = if options.table {
        (min..=max)
            .map(|period| PeriodRow {
                period,
                interface: analyzer
                    .min_exec(period, options.sbf)
                    .ok()
                    .map(|budget| ModelInterface::prm(period, budget)),
            })
            .collect()
    } else {
        Vec::new()
    };
    ComponentModel {
        name: component.name.clone(),
        line: component.line,
        min_period: min,
        max_period: max,
        best,
        rows,
        failure,
        limited,
    }
}

fn multiprocessor(
    component: &CartsComponent,
    workload: &Workload,
    model: CartsModel,
    min: u64,
    max: u64,
) -> ComponentModel {
    let max_processors = Some(
        (workload.len() as u64)
            .saturating_mul(CARTS_PROCESSORS_PER_TASK)
            .clamp(1, MAX_CONCURRENCY - 1),
    );
    let result: Result<(ModelInterface, Vec<PeriodRow>, bool), MprError> = match model {
        CartsModel::Mpr => {
            optimal_mpr_interface(workload, min, max, max_processors).map(|search| {
                let rows = search
                    .per_period
                    .iter()
                    .map(|(period, found)| PeriodRow {
                        period: *period,
                        interface: found.as_ref().map(ModelInterface::mpr),
                    })
                    .collect();
                (ModelInterface::mpr(&search.best), rows, search.limited)
            })
        }
        _ => optimal_dmpr_interface(workload, min, max, max_processors).map(|search| {
            let rows = search
                .per_period
                .iter()
                .map(|(period, found)| PeriodRow {
                    period: *period,
                    interface: found.as_ref().map(ModelInterface::dmpr),
                })
                .collect();
            (ModelInterface::dmpr(&search.best), rows, search.limited)
        }),
    };
    let (best, rows, failure, limited) = match result {
        Ok((best, rows, limited)) => (Some(best), rows, None, limited),
        Err(error) => (
            None,
            (min..=max)
                .map(|period| PeriodRow {
                    period,
                    interface: None,
                })
                .collect(),
            Some(error.to_string()),
            false,
        ),
    };
    ComponentModel {
        name: component.name.clone(),
        line: component.line,
        min_period: min,
        max_period: max,
        best,
        rows,
        failure,
        limited,
    }
}
