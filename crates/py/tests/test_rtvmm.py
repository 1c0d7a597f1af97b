"""The package against the command line: the same input gives the same numbers, the same
bytes and the same error messages."""

import json
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import pytest

import rtvmm
from conftest import rows

EVEN = "examples/even-share.toml"


@pytest.fixture(autouse=True)
def at_repo_root(repo, monkeypatch):
    monkeypatch.chdir(repo)


def test_simulate_gives_the_bytes_of_sim_json_and_sim_jobs(cli, tmp_path):
    out, jobs = tmp_path / "r.json", tmp_path / "jobs.csv"
    code, stdout, err = cli("sim", EVEN, "--policy", "polling", "--json", out, "--jobs", jobs)
    assert code == 0, err
    results = rtvmm.simulate(EVEN, policy="polling")
    assert results.json + "\n" == out.read_text()
    assert stdout.startswith(results.summary)
    assert stdout[len(results.summary) :].startswith("simulated 10s in ")
    assert results.jobs_csv == jobs.read_text()
    # The per-domain table holds the JSON's numbers, domain by domain.
    expected = json.loads(out.read_text())["domains"]
    domains = rows(results.domains)
    assert [r["name"] for r in domains] == ["d1", "d2", "d3", "d4", "d5"]
    for row, domain in zip(domains, expected):
        for key in ("jobs", "released", "finished", "missed", "in_flight"):
            assert row[key] == domain[key], (row["name"], key)
        assert row["deadline_miss_ratio"] == domain["deadline_miss_ratio"]
        assert row["response_ns_max"] == domain["response_ns"]["max"]
    assert results.raw["jobs"] == sum(r["jobs"] for r in domains) == 999
    assert len(results.tasks) == sum(len(d["tasks"]) for d in expected)
    # Every counted job is a row of the jobs table.
    counted = [j for j in rows(results.jobs) if j["outcome"] in ("on_time", "missed")]
    assert len(counted) == results.raw["jobs"]


def test_overrides_are_the_flags(cli, tmp_path):
    out = tmp_path / "r.json"
    code, _, err = cli(
        "sim", EVEN, "--policy", "credit", "--duration", "2s", "--seed", "7", "--json", out
    )
    assert code == 0, err
    results = rtvmm.simulate(EVEN, policy="credit", duration="2s", seed=7)
    assert results.json + "\n" == out.read_text()
    assert (results.policy, results.raw["seed"], results.raw["duration_ns"]) == (
        "credit",
        7,
        2_000_000_000,
    )


def test_a_bad_file_raises_the_message_the_cli_prints(cli):
    for bad in ("examples/bad/bare-number.toml", "examples/bad/budget-above-period.toml"):
        code, _, err = cli("sim", bad)
        assert code == 2
        with pytest.raises(rtvmm.InputError) as raised:
            rtvmm.simulate(bad)
        assert err == "rtvmm: error: %s\n" % raised.value
        assert isinstance(raised.value, rtvmm.RtvmmError)


def test_a_missing_file_and_a_bad_policy_say_what_the_cli_says(cli):
    code, _, err = cli("sim", "examples/no-such.toml")
    assert code == 2
    with pytest.raises(rtvmm.InputError) as raised:
        rtvmm.simulate("examples/no-such.toml")
    assert err == "rtvmm: error: %s\n" % raised.value
    # clap words the flag around the same message.
    code, _, err = cli("sim", EVEN, "--policy", "fifo")
    assert code == 2
    with pytest.raises(rtvmm.InputError) as raised:
        rtvmm.simulate(EVEN, policy="fifo")
    assert str(raised.value).startswith("unknown policy 'fifo': expected one of deferrable")
    assert str(raised.value) in err


SMALL_TOML = """
name = "small"
duration = "1s"
seed = 3

[[domain]]
name = "a"
vcpu = { budget = "3ms", period = "10ms", priority = 1 }
[[domain.task]]
name = "a1"
period = "20ms"
wcet = "4ms"

[[domain]]
name = "b"
vcpu = { budget = "5ms", period = "20ms", priority = 2 }
[[domain.task]]
name = "b1"
period = "40ms"
wcet = "6ms"
"""

SMALL_DICT = {
    "name": "small",
    "duration": "1s",
    "seed": 3,
    "domain": [
        {
            "name": "a",
            "vcpu": {"budget": "3ms", "period": "10ms", "priority": 1},
            "task": [{"name": "a1", "period": "20ms", "wcet": "4ms"}],
        },
        {
            "name": "b",
            "vcpu": {"budget": "5ms", "period": "20ms", "priority": 2},
            "task": [{"name": "b1", "period": "40ms", "wcet": "6ms"}],
        },
    ],
}


def test_a_dict_a_toml_string_and_a_file_are_the_same_scenario(tmp_path):
    path = tmp_path / "small.toml"
    path.write_text(SMALL_TOML)
    from_file = rtvmm.simulate(path)
    from_text = rtvmm.simulate(SMALL_TOML)
    from_dict = rtvmm.simulate(SMALL_DICT)
    assert from_file.raw["jobs"] > 0
    assert from_text.json == from_file.json
    assert from_dict.json == from_file.json
    assert from_dict.jobs_csv == from_file.jobs_csv


def test_errors_in_a_dict_or_a_string_name_their_source():
    bad = dict(SMALL_DICT, domain=[dict(SMALL_DICT["domain"][0], vcpu={"budget": 5})])
    with pytest.raises(rtvmm.InputError, match=r"^<dict>: domain 'a'"):
        rtvmm.simulate(bad)
    with pytest.raises(rtvmm.InputError, match=r"^<string>: "):
        rtvmm.simulate(SMALL_TOML.replace('wcet = "4ms"', "wcet = 4"))
    with pytest.raises(rtvmm.InputError, match=r"^duration: "):
        rtvmm.simulate(SMALL_TOML, duration="10")
    with pytest.raises(TypeError):
        rtvmm.simulate(42)


def test_analyze_gives_the_cli_report_table_and_emitted_scenario(cli, tmp_path):
    out = tmp_path / "report.json"
    code, stdout, err = cli("analyze", "examples/analysis.toml", "--json", out)
    assert code == 0, err
    analysis = rtvmm.analyze("examples/analysis.toml")
    assert analysis.json + "\n" == out.read_text()
    assert stdout == analysis.text + "report: %s\n" % out
    code, stdout, _ = cli("analyze", "examples/analysis.toml", "--rta")
    assert code == 0 and stdout == analysis.text_rta
    code, stdout, _ = cli("analyze", "examples/analysis.toml", "--emit", "scenario")
    assert code == 0 and stdout == analysis.scenario
    code, stdout, _ = cli("analyze", "examples/analysis.toml", "--emit", "xl")
    assert code == 0 and stdout == analysis.xl
    # The interface of each domain is the report's.
    report = json.loads(out.read_text())
    assert [(r["name"], r["period_ns"], r["budget_ns"]) for r in rows(analysis.domains)] == [
        (d["name"], d["period_ns"], d["budget_ns"]) for d in report["domains"]
    ]
    assert analysis.schedulable == report["schedulable"]


def test_analyze_options_are_the_flags(cli, tmp_path):
    out = tmp_path / "report.json"
    flags = ["--sbf", "general", "--period-range", "5..40", "--policy", "periodic"]
    code, _, err = cli("analyze", "examples/analysis.toml", *flags, "--json", out)
    assert code == 0, err
    analysis = rtvmm.analyze(
        "examples/analysis.toml", sbf="general", period_range="5..40", policy="periodic"
    )
    assert analysis.json + "\n" == out.read_text()
    with pytest.raises(rtvmm.InputError, match="^sbf: unknown sbf mode 'x'"):
        rtvmm.analyze("examples/analysis.toml", sbf="x")


def test_generate_prints_what_gen_prints(cli):
    code, stdout, err = cli("gen", "uunifast", "--tasks", "12", "--domains", "3", "--seed", "9")
    assert code == 0, err
    assert rtvmm.generate("uunifast", tasks=12, domains=3, seed=9) == stdout
    code, stdout, _ = cli("gen", "csa")
    assert code == 0 and rtvmm.generate("csa") == stdout
    code, _, err = cli("gen", "rtxen", "--load", "1.5")
    assert code == 2
    with pytest.raises(rtvmm.InputError) as raised:
        rtvmm.generate("rtxen", load=1.5)
    assert err == "rtvmm: error: %s\n" % raised.value
    with pytest.raises(rtvmm.InputError, match="unknown generator 'x'"):
        rtvmm.generate("x")
    with pytest.raises(rtvmm.InputError, match="unknown option pattern"):
        rtvmm.generate("csa", pattern="even")


def test_a_generated_scenario_simulates():
    text = rtvmm.generate("rtxen", load=0.5, seed=3, duration="1s")
    results = rtvmm.simulate(text, policy="rtds")
    assert results.raw["scenario"].startswith("rtxen")
    assert results.raw["jobs"] > 0 and results.raw["missed"] == 0


def test_experiment_list_and_errors_are_the_cli_s(cli, tmp_path):
    code, stdout, _ = cli("experiment", "list")
    assert code == 0 and stdout == rtvmm.experiments()
    code, _, err = cli("experiment", "nope", "--out", tmp_path / "o")
    assert code == 2
    with pytest.raises(rtvmm.InputError) as raised:
        rtvmm.experiment("nope", tmp_path / "o")
    assert err == "rtvmm: error: %s\n" % raised.value
    with pytest.raises(rtvmm.InputError, match="^--duration: "):
        rtvmm.experiment("rtxen-capacity", tmp_path / "o", duration="0s")


def test_policies_are_the_cli_s(cli):
    code, stdout, _ = cli("policies")
    assert code == 0
    names = [line.split()[0] for line in stdout.splitlines()]
    assert [p["name"] for p in rtvmm.policies()] == names


def test_without_pandas_the_tables_are_lists_of_dicts(monkeypatch):
    pandas = pytest.importorskip("pandas")
    with_pandas = rtvmm.simulate(SMALL_TOML)
    monkeypatch.setattr(rtvmm, "_pandas", None)
    plain = rtvmm.simulate(SMALL_TOML)
    assert isinstance(plain.domains, list) and isinstance(plain.jobs, list)
    assert plain.domains == with_pandas.domains.to_dict("records")
    assert plain.tasks == with_pandas.tasks.to_dict("records")
    # The jobs table: the same cells, None where a job has not finished.
    frame = with_pandas.jobs.astype(object).where(with_pandas.jobs.notna(), None)
    assert plain.jobs == frame.to_dict("records")
    assert isinstance(pandas.DataFrame(plain.jobs), pandas.DataFrame)


def test_a_run_releases_the_gil():
    """While a simulation runs in one thread, Python runs in another. Had the run held the
    GIL, the main thread, woken just before the run starts, could only go on once it
    ended (as it does around a call that holds the GIL, such as a long `re.match`)."""
    from rtvmm import _rtvmm

    about_to_run = threading.Event()

    def native_run():
        about_to_run.set()
        _rtvmm.simulate("path", EVEN, None, "100s", None, False)
        return time.perf_counter()

    with ThreadPoolExecutor(max_workers=1) as pool:
        future = pool.submit(native_run)
        about_to_run.wait()
        assert sum(range(1000)) == 499500  # Python, in this thread
        main_done = time.perf_counter()
        run_ended = future.result()
    assert run_ended - main_done > 0.01, "the main thread waited for the run to end"


def test_a_thread_pool_runs_simulations_in_parallel_with_the_same_results():
    policies = ["deferrable", "periodic", "polling", "sporadic", "rtds", "credit"]
    started = time.perf_counter()
    alone = [rtvmm.simulate(EVEN, policy=p, duration="30s", jobs=False).json for p in policies]
    serial = time.perf_counter() - started
    started = time.perf_counter()
    with ThreadPoolExecutor(max_workers=2) as pool:
        together = list(
            pool.map(lambda p: rtvmm.simulate(EVEN, policy=p, duration="30s", jobs=False).json, policies)
        )
    parallel = time.perf_counter() - started
    assert together == alone
    # Not asserted (the machine may be busy); shown with `pytest -s`.
    print("%d runs: %.2fs one by one, %.2fs on 2 threads" % (len(policies), serial, parallel))



def test_a_process_pool_runs_simulations_too():
    policies = ["deferrable", "rtds"]
    with ProcessPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(rtvmm.simulate, [EVEN] * 2, policies))
    assert [r.policy for r in results] == policies
    assert results[1].json == rtvmm.simulate(EVEN, policy="rtds").json


def test_an_experiment_writes_the_files_the_cli_writes(cli, tmp_path):
    code, stdout, err = cli("experiment", "rtxen-overhead", "--quick", "--out", tmp_path / "cli")
    assert code == 0, err
    done = rtvmm.experiment("rtxen-overhead", tmp_path / "py", quick=True)
    assert not done.interrupted
    assert stdout.splitlines()[0] == done.summary.splitlines()[0]
    written = sorted(p.name for p in (tmp_path / "cli").iterdir())
    assert sorted(p.name for p in (tmp_path / "py").iterdir()) == written
    assert set(done.files) <= set(written) and "report.md" in done.files
    # Same seed, same CSV bytes.
    for name in written:
        if name.endswith(".csv"):
            assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes()


def test_analyze_reads_carts_xml_as_the_cli_does(cli, tmp_path):
    out = tmp_path / "carts.json"
    code, stdout, err = cli("analyze", "examples/carts.xml", "--json", out)
    assert code == 0, err
    analysis = rtvmm.analyze("examples/carts.xml")
    assert analysis.json + "\n" == out.read_text()
    assert stdout == analysis.text + "report: %s\n" % out
