//! The native half of the `rtvmm` Python package (`rtvmm._rtvmm`); the Python half,
//! `python/rtvmm`, turns what these functions return into tables.
//!
//! A thin layer: each function calls what the command line calls (`Scenario::load`,
//! `rtvmm_sim::run::run`, `rtvmm_analyze::analyze`, `rtvmm_experiments::generate` and
//! `run_experiment`) and hands back the same text the command line writes (the results
//! JSON of `sim --json`, the jobs CSV of `sim --jobs`, the report JSON of `analyze --json`),
//! so that a Python result and a command-line result of the same input are the same bytes.
//! Errors become [`InputError`] (what the command line refuses with exit code 2) or
//! [`RunError`] (exit code 1), with the command line's message: the error and its causes
//! joined by `": "`.
//!
//! Every run releases the GIL (`Python::detach`), so Python threads run simulations in
//! parallel.

use std::collections::BTreeMap;
use std::error::Error;
use std::path::PathBuf;

use pyo3::conversion::FromPyObjectOwned;
use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rtvmm_analyze as analyze;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_experiments::experiments;
use rtvmm_experiments::generate::{self, GenCommon, Generator};
use rtvmm_experiments::options::{parse_duration, parse_overheads, parse_policies};
use rtvmm_experiments::ExperimentError;
use rtvmm_scenario::Scenario;

create_exception!(
    _rtvmm,
    RtvmmError,
    PyException,
    "Every error rtvmm raises; its message is the command line's."
);
create_exception!(
    _rtvmm,
    InputError,
    RtvmmError,
    "Bad input: a scenario, option or name that the command line refuses with exit code 2."
);
create_exception!(
    _rtvmm,
    RunError,
    RtvmmError,
    "A run that failed: what the command line reports with exit code 1."
);

/// The message the command line prints after `rtvmm: error: `: the error, then each cause.
fn message(error: &dyn Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

fn input_error(error: impl Error) -> PyErr {
    InputError::new_err(message(&error))
}

fn input_message(text: impl Into<String>) -> PyErr {
    InputError::new_err(text.into())
}

/// The command line's split of the experiments' errors: exit code 2 or 1.
fn experiment_error(error: ExperimentError) -> PyErr {
    if error.is_bad_input() {
        InputError::new_err(message(&error))
    } else {
        RunError::new_err(message(&error))
    }
}

/// Where a scenario comes from, as the Python layer resolved its argument.
enum Source {
    Path(PathBuf),
    /// TOML text: a string, named `<string>` in messages, or a dict turned into TOML,
    /// named `<dict>`.
    Text {
        toml: String,
        name: &'static str,
    },
}

impl Source {
    /// `kind` is `path`, `toml`, or `json` (a dict as the Python layer's `json.dumps`).
    fn new(kind: &str, value: String) -> PyResult<Source> {
        match kind {
            "path" => Ok(Source::Path(PathBuf::from(value))),
            "toml" => Ok(Source::Text {
                toml: value,
                name: "<string>",
            }),
            "json" => {
                let value: serde_json::Value = serde_json::from_str(&value)
                    .map_err(|e| input_message(format!("<dict>: {e}")))?;
                let toml = toml::to_string(&value).map_err(|e| {
                    input_message(format!("<dict>: not a scenario as TOML: {}", message(&e)))
                })?;
                Ok(Source::Text {
                    toml,
                    name: "<dict>",
                })
            }
            _ => Err(input_message(format!("unknown scenario source '{kind}'"))),
        }
    }

    /// The scenario, read as `rtvmm sim` reads it (a file through the size-limited reader).
    fn scenario(&self) -> PyResult<Scenario> {
        match self {
            Source::Path(path) => Scenario::load(path),
            Source::Text { toml, name } => Scenario::from_toml(toml, name),
        }
        .map_err(input_error)
    }

    /// The input of `rtvmm analyze`: a scenario (VCPU parameters optional) or, for a path
    /// ending in `.xml`, a CARTS file.
    fn analysis_input(&self) -> PyResult<analyze::Input> {
        match self {
            Source::Path(path) => analyze::Input::load(path).map_err(input_error),
            Source::Text { toml, name } => Scenario::from_toml_for_analysis(toml, name)
                .map(analyze::Input::Scenario)
                .map_err(input_error),
        }
    }
}

/// A time option (`duration="10s"`): a time with a unit, greater than 0, as the command
/// line's flags take it.
fn time_option(name: &str, text: &str) -> PyResult<Nanos> {
    let time: Nanos = text
        .parse()
        .map_err(|e| input_message(format!("{name}: {e}")))?;
    if time.is_zero() {
        return Err(input_message(format!("{name}: must be greater than 0")));
    }
    Ok(time)
}

fn policy_option(name: Option<&str>) -> PyResult<Option<PolicyKind>> {
    name.map(|n| PolicyKind::parse(n).map_err(input_error))
        .transpose()
}

/// simulate(kind, value, policy=None, duration=None, seed=None, jobs=True)
/// -> (results JSON, summary text, jobs CSV or None)
///
/// Runs a scenario as `rtvmm sim` does; the JSON is `--json`'s, the CSV `--jobs`'.
#[pyfunction]
#[pyo3(signature = (kind, value, policy=None, duration=None, seed=None, jobs=true))]
fn simulate(
    py: Python<'_>,
    kind: &str,
    value: String,
    policy: Option<&str>,
    duration: Option<&str>,
    seed: Option<u64>,
    jobs: bool,
) -> PyResult<(String, String, Option<String>)> {
    let source = Source::new(kind, value)?;
    let policy = policy_option(policy)?;
    let duration = duration.map(|d| time_option("duration", d)).transpose()?;
    let scenario = source
        .scenario()?
        .with_overrides(policy, duration, seed)
        .map_err(input_error)?;
    scenario.simulable().map_err(input_error)?;
    let record = rtvmm_sim::run::Record { trace: false, jobs };
    let run = py
        .detach(|| rtvmm_sim::run::run(&scenario, record))
        .map_err(|e| RunError::new_err(format!("simulating {}: {}", scenario.file, message(&e))))?;
    let csv = match &run.jobs {
        Some(rows) => {
            let mut bytes = Vec::new();
            rtvmm_system::results::write_jobs_csv(&mut bytes, rows)
                .map_err(|e| RunError::new_err(message(&e)))?;
            Some(String::from_utf8_lossy(&bytes).into_owned())
        }
        None => None,
    };
    Ok((run.results.to_json(), run.results.summary(), csv))
}

/// What `analyze` hands back (see there).
type Analysis = (
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    String,
);

/// analyze(kind, value, quantum=None, sbf="auto", guest=None, period_range=None,
/// fixed_periods=(), policy=None, given=False, model=None)
/// -> (report JSON, table, table with response times, emitted scenario, why there is
/// none, xl lines)
///
/// The compositional analysis of `rtvmm analyze`; the JSON is `--json`'s, the tables are
/// what it prints (without and with `--rta`), the scenario and the `xl` lines `--emit`'s.
#[pyfunction]
#[pyo3(name = "analyze", signature = (kind, value, quantum=None, sbf="auto", guest=None, period_range=None,
                    fixed_periods=Vec::new(), policy=None, given=false, model=None))]
#[allow(clippy::too_many_arguments)] // the command's flags, one argument each
fn run_analysis(
    py: Python<'_>,
    kind: &str,
    value: String,
    quantum: Option<&str>,
    sbf: &str,
    guest: Option<&str>,
    period_range: Option<&str>,
    fixed_periods: Vec<String>,
    policy: Option<&str>,
    given: bool,
    model: Option<&str>,
) -> PyResult<Analysis> {
    let flag = |name: &str, problem: String| input_message(format!("{name}: {problem}"));
    let options = analyze::Options {
        quantum: quantum.map(|q| time_option("quantum", q)).transpose()?,
        sbf: analyze::parse_sbf(sbf).map_err(|e| flag("sbf", e))?,
        guest: guest
            .map(analyze::parse_guest)
            .transpose()
            .map_err(|e| flag("guest", e))?,
        period_range: period_range
            .map(str::parse)
            .transpose()
            .map_err(|e| flag("period_range", e))?,
        fixed_periods: fixed_periods
            .iter()
            .map(|f| f.parse())
            .collect::<Result<_, String>>()
            .map_err(|e| flag("fixed_periods", e))?,
        policy: policy_option(policy)?,
        given,
        model: model
            .map(analyze::parse_model)
            .transpose()
            .map_err(|e| flag("model", e))?,
    };
    let input = Source::new(kind, value)?.analysis_input()?;
    if analyze::wants_models(&input, &options, false) {
        return Err(input_message(
            "model: a CARTS file under mpr or dmpr gives a per-component report that this \
             package does not return yet; use `rtvmm analyze FILE.xml --model mpr --json OUT`"
                .to_string(),
        ));
    }
    py.detach(|| {
        let report = analyze::analyze(&input, &options).map_err(|e| message(&e))?;
        let (scenario, scenario_error) = match analyze::emit_scenario(&input, &report) {
            Ok(text) => (Some(text), None),
            Err(e) => (None, Some(message(&e))),
        };
        Ok::<_, String>((
            report.to_json(),
            report.table(false),
            report.table(true),
            scenario,
            scenario_error,
            report.xl_commands(),
        ))
    })
    .map_err(input_message)
}

/// generate(name, options) -> scenario TOML
///
/// A generated scenario, as `rtvmm gen NAME` prints it. `options` hold the flags with `_`
/// for `-` (`seed`, `duration`, `policy`, `load`, `server_period`, …); those left out take
/// the command line's defaults.
#[pyfunction]
#[pyo3(name = "generate")]
fn generate_scenario(py: Python<'_>, name: &str, options: &Bound<'_, PyDict>) -> PyResult<String> {
    let mut generator = Generator::with_defaults(name).ok_or_else(|| {
        input_message(format!(
            "unknown generator '{name}': expected one of {}",
            generate::GENERATORS.join(", ")
        ))
    })?;
    let mut common = GenCommon::default();
    let mut given: BTreeMap<String, Bound<'_, PyAny>> = BTreeMap::new();
    for (key, value) in options.iter() {
        given.insert(key.extract()?, value);
    }
    let mut unknown = Vec::new();
    for (key, value) in &given {
        let v = value;
        let known = match (&mut generator, key.as_str()) {
            (_, "seed") => set(&mut common.seed, v, key)?,
            (_, "duration") => set(&mut common.duration, v, key)?,
            (_, "policy") => set(&mut common.policy, v, key)?,
            (Generator::Rtxen { pattern, .. }, "pattern") => set(pattern, v, key)?,
            (Generator::Rtxen { load, .. }, "load") => set(load, v, key)?,
            (Generator::Csa { utilisation, .. }, "utilisation")
            | (Generator::Uunifast { utilisation, .. }, "utilisation") => set(utilisation, v, key)?,
            (Generator::Csa { periods, .. }, "periods")
            | (Generator::Uunifast { periods, .. }, "periods") => set(periods, v, key)?,
            (Generator::Arinc { index }, "index") => set(index, v, key)?,
            (Generator::Uunifast { tasks, .. }, "tasks") => set(tasks, v, key)?,
            (Generator::Uunifast { domains, .. }, "domains") => set(domains, v, key)?,
            (Generator::Uunifast { log_uniform, .. }, "log_uniform") => set(log_uniform, v, key)?,
            (Generator::Uunifast { sampler, .. }, "sampler") => set(sampler, v, key)?,
            (Generator::Uunifast { etf, .. }, "etf") => set(etf, v, key)?,
            (Generator::Uunifast { server_period, .. }, "server_period") => {
                set(server_period, v, key)?
            }
            _ => false,
        };
        if !known {
            unknown.push(key.clone());
        }
    }
    if !unknown.is_empty() {
        return Err(input_message(format!(
            "gen {name}: unknown option {} (see `rtvmm gen {name} --help`)",
            unknown.join(", ")
        )));
    }
    py.detach(|| generate::generate(&generator, &common))
        .map_err(experiment_error)
}

/// Sets `field` from a Python value; a value of the wrong type names the option.
fn set<'py, T: FromPyObjectOwned<'py>>(
    field: &mut T,
    value: &Bound<'py, PyAny>,
    key: &str,
) -> PyResult<bool> {
    *field = value.extract::<T>().map_err(|e| {
        let e: PyErr = e.into();
        input_message(format!("{key}: {e}"))
    })?;
    Ok(true)
}

/// experiment(name, out, quick=False, seed=1, duration=None, policies=None, overhead=None,
/// in_phase=False, workloads=(), jobs=0, seeds=None) -> (summary, files, interrupted)
///
/// Runs experiment `name` as `rtvmm experiment NAME` does, writing its files to `out`.
#[pyfunction]
#[pyo3(signature = (name, out, quick=false, seed=None, duration=None, policies=None,
                    overhead=None, in_phase=false, workloads=Vec::new(), jobs=0, seeds=None))]
#[allow(clippy::too_many_arguments)] // the command's flags, one argument each
fn experiment(
    py: Python<'_>,
    name: &str,
    out: PathBuf,
    quick: bool,
    seed: Option<u64>,
    duration: Option<&str>,
    policies: Option<&str>,
    overhead: Option<&str>,
    in_phase: bool,
    workloads: Vec<PathBuf>,
    jobs: usize,
    seeds: Option<usize>,
) -> PyResult<(String, Vec<String>, bool)> {
    let mut options = rtvmm_experiments::Options::new(out);
    options.quick = quick;
    options.seeds = seeds;
    if let Some(seed) = seed {
        options.seed = seed;
    }
    options.in_phase = in_phase;
    options.jobs = jobs;
    options.workloads = workloads;
    options.duration = duration
        .map(parse_duration)
        .transpose()
        .map_err(input_error)?;
    options.policies = policies
        .map(parse_policies)
        .transpose()
        .map_err(input_error)?;
    options.overheads = overhead
        .map(parse_overheads)
        .transpose()
        .map_err(input_error)?;
    let report = py
        .detach(|| rtvmm_experiments::run_experiment(name, &options))
        .map_err(experiment_error)?;
    Ok((report.summary(), report.files(), report.interrupted()))
}

/// experiments() -> the text of `rtvmm experiment list`.
#[pyfunction]
fn experiments_list() -> String {
    experiments::list()
}

/// policies() -> [(name, aliases, description)], as `rtvmm policies` lists them.
#[pyfunction]
fn policies() -> Vec<(&'static str, Vec<&'static str>, &'static str)> {
    PolicyKind::ALL
        .iter()
        .map(|k| (k.name(), k.aliases().to_vec(), k.description()))
        .collect()
}

#[pymodule]
fn _rtvmm(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("RtvmmError", py.get_type::<RtvmmError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("RunError", py.get_type::<RunError>())?;
    m.add_function(wrap_pyfunction!(simulate, m)?)?;
    m.add_function(wrap_pyfunction!(run_analysis, m)?)?;
    m.add_function(wrap_pyfunction!(generate_scenario, m)?)?;
    m.add_function(wrap_pyfunction!(experiment, m)?)?;
    m.add_function(wrap_pyfunction!(experiments_list, m)?)?;
    m.add_function(wrap_pyfunction!(policies, m)?)?;
    m.add("DEFAULT_SEED", rtvmm_experiments::options::DEFAULT_SEED)?;
    Ok(())
}
