"""rtvmm from Python: simulate, analyse, generate and run experiments.

A thin layer over the library calls the ``rtvmm`` command line makes: the same scenario
and options give the same numbers (``Results.json`` is the text of ``rtvmm sim --json``,
``Analysis.json`` that of ``rtvmm analyze --json``), and errors carry the command line's
messages. Runs release the GIL, so a thread pool runs simulations in parallel.

A scenario is given as a path (``str`` or ``os.PathLike``), as TOML text (a ``str`` with
a newline or an ``=``) or as a ``dict`` shaped like the TOML file (``docs/scenario.md``).

Tables are pandas DataFrames when pandas can be imported, lists of dicts otherwise.

    >>> import rtvmm
    >>> results = rtvmm.simulate("examples/even-share.toml", policy="polling")
    >>> results.domains[["name", "jobs", "missed"]]        # doctest: +SKIP
"""

from __future__ import annotations

import csv
import io
import json
import os
from collections.abc import Mapping as _MappingABC
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _rtvmm
from ._rtvmm import DEFAULT_SEED, InputError, RtvmmError, RunError

try:  # pandas is optional: the tables are lists of dicts without it
    import pandas as _pandas  # type: ignore  # (no stubs needed to use the package)
except ImportError:  # pragma: no cover - depends on the environment
    _pandas = None

try:
    from importlib.metadata import version as _version

    __version__ = _version("rtvmm")
except Exception:  # pragma: no cover - not installed as a distribution
    __version__ = "unknown"

__all__ = [
    "Analysis",
    "DEFAULT_SEED",
    "ExperimentResult",
    "InputError",
    "Results",
    "RtvmmError",
    "RunError",
    "ScenarioLike",
    "analyze",
    "experiment",
    "experiments",
    "generate",
    "policies",
    "simulate",
]

ScenarioLike = Union[str, "os.PathLike[str]", Mapping[str, Any]]
"""A scenario: a path, TOML text, or a dict shaped like the TOML file."""

Table = Any
"""A pandas DataFrame, or a list of dicts (one per row) without pandas."""


def _source(scenario: ScenarioLike) -> Tuple[str, str]:
    """Which reader a scenario argument goes to, and what it hands it."""
    if isinstance(scenario, _MappingABC):
        return "json", json.dumps(scenario)
    if isinstance(scenario, os.PathLike):
        return "path", os.fspath(scenario)
    if isinstance(scenario, str):
        if "\n" in scenario or "=" in scenario:
            return "toml", scenario
        return "path", scenario
    raise TypeError(
        "scenario: expected a path, TOML text or a dict, not %s" % type(scenario).__name__
    )


def _table(rows: List[Dict[str, Any]]) -> Table:
    if _pandas is not None:
        return _pandas.DataFrame(rows)
    return rows


def _flatten(row: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
    """One table row: nested figures as ``response_ns_mean``; lists left out."""
    flat: Dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, _MappingABC):
            flat.update(_flatten(value, prefix + key + "_"))
        elif not isinstance(value, list):
            flat[prefix + key] = value
    return flat


def _jobs_table(text: str) -> Table:
    """The rows of ``rtvmm sim --jobs`` CSV: numbers as numbers, empty cells as None."""
    rows: List[Dict[str, Any]] = []
    for record in csv.DictReader(io.StringIO(text)):
        row: Dict[str, Any] = {}
        for key, cell in record.items():
            if key in ("domain", "task", "outcome"):
                row[key] = cell
            elif cell == "":
                row[key] = None
            elif key == "responsiveness":
                row[key] = float(cell)
            else:
                row[key] = int(cell)
        rows.append(row)
    if _pandas is not None:
        frame = _pandas.DataFrame(rows, columns=next(csv.reader(io.StringIO(text))))
        for column in frame.columns:
            if column.endswith("_ns") or column == "job":
                frame[column] = frame[column].astype("Int64")
        return frame
    return rows


class Results:
    """What one simulated run measured (``rtvmm sim``).

    Attributes:
        json: the results as ``rtvmm sim --json`` writes them (same bytes).
        raw: ``json`` parsed.
        summary: the summary ``rtvmm sim`` prints (without its wall-clock line).
        domains: one row per domain (jobs, missed, DMR, response-time figures in ns).
        tasks: one row per task, with its ``domain``.
        vcpus: one row per VCPU, with its ``domain`` and ``vcpu`` index.
        pcpus: one row per pcpu, with its ``pcpu`` index.
        jobs: one row per job as ``rtvmm sim --jobs`` writes them (None when the run was
            asked not to record jobs).
    """

    def __init__(self, json_text: str, summary: str, jobs_csv: Optional[str]) -> None:
        self.json: str = json_text
        self.raw: Dict[str, Any] = json.loads(json_text)
        self.summary: str = summary
        self.jobs_csv: Optional[str] = jobs_csv
        self.domains: Table = _table([_flatten(d) for d in self.raw["domains"]])
        self.tasks: Table = _table(
            [
                dict(domain=d["name"], **_flatten(t))
                for d in self.raw["domains"]
                for t in d["tasks"]
            ]
        )
        self.vcpus: Table = _table(
            [
                dict(domain=d["name"], vcpu=i, **_flatten(v))
                for d in self.raw["domains"]
                for i, v in enumerate(d["vcpus"])
            ]
        )
        self.pcpus: Table = _table(
            [dict(pcpu=i, **_flatten(p)) for i, p in enumerate(self.raw["pcpus"])]
        )
        self.jobs: Optional[Table] = None if jobs_csv is None else _jobs_table(jobs_csv)

    @property
    def policy(self) -> str:
        """The policy the run started with."""
        return self.raw["policy"]

    @property
    def deadline_miss_ratio(self) -> float:
        """Missed jobs ÷ jobs counted, over every domain."""
        return self.raw["deadline_miss_ratio"]

    def __repr__(self) -> str:
        return "<rtvmm.Results %s · policy %s · %d jobs, %d missed>" % (
            self.raw["scenario"],
            self.raw["policy"],
            self.raw["jobs"],
            self.raw["missed"],
        )


def simulate(
    scenario: ScenarioLike,
    policy: Optional[str] = None,
    duration: Optional[str] = None,
    seed: Optional[int] = None,
    *,
    jobs: bool = True,
) -> Results:
    """Simulates a scenario, as ``rtvmm sim SCENARIO`` does.

    Args:
        scenario: a path, TOML text, or a dict shaped like the TOML file.
        policy: run under this policy (a name or an alias; see :func:`policies`) instead
            of the file's; with cpupools, the first pool's policy is replaced.
        duration: simulated time instead of the file's, with a unit (``"10s"``).
        seed: the seed instead of the file's.
        jobs: record every job (the ``jobs`` table); ``False`` saves memory on long runs.

    Raises:
        InputError: the scenario or an option is refused (the command line's exit code 2).
        RunError: the run failed (exit code 1).
    """
    kind, value = _source(scenario)
    return Results(*_rtvmm.simulate(kind, value, policy, duration, seed, jobs))


class Analysis:
    """The compositional analysis of a scenario (``rtvmm analyze``).

    Attributes:
        json: the report as ``rtvmm analyze --json`` writes it (same bytes).
        raw: ``json`` parsed.
        text: the table ``rtvmm analyze`` prints; ``text_rta`` with ``--rta``.
        xl: the ``xl sched-rtds`` commands of ``--emit xl``.
        domains: one row per domain (its interface and verdict).
        tasks: one row per task, with its ``domain``.
    """

    def __init__(
        self,
        json_text: str,
        text: str,
        text_rta: str,
        scenario: Optional[str],
        scenario_error: Optional[str],
        xl: str,
    ) -> None:
        self.json: str = json_text
        self.raw: Dict[str, Any] = json.loads(json_text)
        self.text: str = text
        self.text_rta: str = text_rta
        self.xl: str = xl
        self._scenario = scenario
        self._scenario_error = scenario_error
        domains = self.raw.get("domains", [])
        self.domains: Table = _table([_flatten(d) for d in domains])
        self.tasks: Table = _table(
            [dict(domain=d["name"], **_flatten(t)) for d in domains for t in d.get("tasks", [])]
        )

    @property
    def schedulable(self) -> bool:
        """The system verdict: every task of every domain is guaranteed."""
        return bool(self.raw["schedulable"])

    @property
    def scenario(self) -> str:
        """The interfaces as a runnable scenario (``--emit scenario``).

        Raises:
            InputError: the input cannot be emitted as a scenario (the command line's
                message says why).
        """
        if self._scenario is None:
            raise InputError(self._scenario_error)
        return self._scenario

    def __repr__(self) -> str:
        return "<rtvmm.Analysis %s · schedulable: %s>" % (
            self.raw.get("input", "?"),
            self.raw.get("schedulable"),
        )


def analyze(
    scenario: ScenarioLike,
    *,
    quantum: Optional[str] = None,
    sbf: str = "auto",
    guest: Optional[str] = None,
    period_range: Optional[str] = None,
    fixed_periods: Sequence[str] = (),
    policy: Optional[str] = None,
    given: bool = False,
    model: Optional[str] = None,
) -> Analysis:
    """Analyses a scenario or a CARTS XML file (a path ending in ``.xml``), as
    ``rtvmm analyze`` does; each option is the flag of the same name.

    Args:
        scenario: a path, TOML text, or a dict; VCPU parameters may be left out.
        quantum: the analysis unit instead of the scenario's quantum (``"1ms"``).
        sbf: supply bound, ``"auto"`` or ``"general"``.
        guest: analyse every domain as this guest scheduler (``"rm"`` or ``"edf"``).
        period_range: allowed interface periods, ``"MIN..MAX"`` (``"5..50"``, ``"5ms..50ms"``).
        fixed_periods: fixed interface periods, ``"NAME=PERIOD"`` each.
        policy: the VMM policy instead of the file's.
        given: check the scenario's own VCPU budgets and periods instead of computing
            interfaces.
        model: the interface of a global EDF guest of several VCPUs, ``"dmpr"`` (the
            default) or ``"mpr"``; a CARTS file is analysed under ``"prm"`` here (its
            per-component MPR/DMPR report is the command line's, ``--model``).

    Raises:
        InputError: the input or an option is refused.
    """
    kind, value = _source(scenario)
    return Analysis(
        *_rtvmm.analyze(
            kind, value, quantum, sbf, guest, period_range, list(fixed_periods), policy, given,
            model,
        )
    )


def generate(generator: str, **options: Any) -> str:
    """A generated scenario's TOML text, as ``rtvmm gen GENERATOR`` prints it.

    Args:
        generator: ``"rtxen"``, ``"csa"``, ``"arinc"`` or ``"uunifast"``.
        **options: the flags of ``rtvmm gen GENERATOR`` with ``_`` for ``-``: ``seed``,
            ``duration`` (``"10s"``), ``policy``; rtxen ``pattern``, ``load``; csa
            ``utilisation``, ``periods`` (``"550..650"``, ms); arinc ``index``; uunifast
            ``tasks``, ``utilisation``, ``domains``, ``periods``, ``log_uniform``,
            ``sampler``, ``etf``, ``server_period`` (``"10ms"``). Those left out take the
            command line's defaults.

    Raises:
        InputError: an unknown generator or option, or a value out of range.
    """
    return _rtvmm.generate(generator, options)


class ExperimentResult:
    """A finished experiment (``rtvmm experiment NAME``).

    Attributes:
        out: the directory its files went to.
        summary: what the command line prints.
        files: the files written, relative to ``out``.
        interrupted: whether the sweep stopped before its end.
    """

    def __init__(self, out: str, summary: str, files: List[str], interrupted: bool) -> None:
        self.out = out
        self.summary = summary
        self.files = files
        self.interrupted = interrupted

    def __repr__(self) -> str:
        return "<rtvmm.ExperimentResult %s: %d files>" % (self.out, len(self.files))


def experiment(
    name: str,
    out: Optional[Union[str, "os.PathLike[str]"]] = None,
    *,
    quick: bool = False,
    seed: Optional[int] = None,
    duration: Optional[str] = None,
    policies: Optional[Union[str, Sequence[str]]] = None,
    overhead: Optional[str] = None,
    in_phase: bool = False,
    workloads: Sequence[Union[str, "os.PathLike[str]"]] = (),
    jobs: int = 0,
    seeds: Optional[int] = None,
) -> ExperimentResult:
    """Runs a published evaluation, as ``rtvmm experiment NAME`` does (see
    :func:`experiments` for the names), writing its CSV, figures and ``report.md``.

    Args:
        name: the experiment.
        out: the output directory (default ``results/NAME``).
        quick: scaled-down durations and sweeps that finish in seconds.
        seed: the run seed (default :data:`DEFAULT_SEED`).
        duration: simulated length of each run, with a unit.
        policies: policies to run instead of the experiment's own (a list, or a
            comma-separated string).
        overhead: scheduler overhead costs: ``"none"``, ``"xen"``, ``"host"`` or
            ``"DO_SCHEDULE,SWITCH"`` with units.
        in_phase: rtxen-*: start every domain at time 0.
        workloads: csa-arinc: workload files instead of the generated suite.
        jobs: worker threads (0: one per core).
        seeds: task-set draws, for the experiments that generate task sets (default:
            the experiment's own; 1 with ``quick``), as ``--seeds N``.

    Raises:
        InputError: an unknown name, a bad option or an unusable output directory.
        RunError: a run or writing a file failed.
    """
    if out is None:
        out = os.path.join("results", name)
    if policies is not None and not isinstance(policies, str):
        policies = ",".join(policies)
    summary, files, interrupted = _rtvmm.experiment(
        name,
        os.fspath(out),
        quick,
        seed,
        duration,
        policies,
        overhead,
        in_phase,
        [os.fspath(w) for w in workloads],
        jobs,
        seeds,
    )
    return ExperimentResult(os.fspath(out), summary, files, interrupted)


def experiments() -> str:
    """The experiments and what each reproduces (``rtvmm experiment list``)."""
    return _rtvmm.experiments_list()


def policies() -> List[Dict[str, Any]]:
    """The VMM policies: ``name``, ``aliases`` and ``description`` of each
    (``rtvmm policies``)."""
    return [
        {"name": name, "aliases": list(aliases), "description": description}
        for name, aliases, description in _rtvmm.policies()
    ]
