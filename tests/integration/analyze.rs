//! `rtvmm analyze` and `rtvmm check --admit`, run as a user runs them: the table, the JSON
//! fields the issue names, the emitted scenario (which `check` and `sim` must accept), the
//! `xl` lines, CARTS input, and the exit codes (0 ok, 2 bad input or refused).

use crate::common::*;

use serde_json::Value;

fn json_report(args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("report.json");
    let mut all = vec!["analyze"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--json", out.to_str().unwrap()]);
    let o = rtvmm(&all);
    assert_exit(&o, 0);
    serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap()
}

/// Two domains under the Deferrable Server without any VCPU parameters: `check` refuses
/// it (the servers need budgets), `analyze` computes them.
const NO_VCPUS: &str = r#"name = "bare"
duration = "1s"
[[domain]]
name = "a"
[[domain.task]]
name = "t1"
period = "20ms"
wcet = "2ms"
[[domain.task]]
name = "t2"
period = "50ms"
wcet = "5ms"
[[domain]]
name = "b"
guest = "edf"
[[domain.task]]
name = "u1"
period = "40ms"
wcet = "4ms"
"#;

#[test]
fn the_example_is_schedulable_and_the_table_says_so() {
    let o = rtvmm(&["analyze", &example("analysis.toml")]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    for needle in [
        "avionics",
        "control",
        "logging",
        "U_RM = ",
        "U_W = ",
        "U_RM − U_W = ",
        "verdict: schedulable",
        "policy periodic",
    ] {
        assert!(out.contains(needle), "{needle} missing in\n{out}");
    }
    // No --rta, no response-time section.
    assert!(!out.contains("response times"), "{out}");
}

#[test]
fn json_has_the_fields_the_issue_names() {
    let report = json_report(&[&example("analysis.toml")]);
    for key in ["u_rm", "u_w", "schedulable"] {
        assert!(report.get(key).is_some(), "{key} missing: {report}");
    }
    assert_eq!(report["schedulable"], Value::Bool(true));
    let domains = report["domains"].as_array().unwrap();
    assert_eq!(domains.len(), 3);
    let mut sum = 0.0;
    for d in domains {
        for key in [
            "name",
            "period_ns",
            "budget_ns",
            "bandwidth",
            "utilization",
            "overhead",
            "schedulable",
        ] {
            assert!(d.get(key).is_some(), "{key} missing: {d}");
        }
        let (period, budget) = (
            d["period_ns"].as_u64().unwrap(),
            d["budget_ns"].as_u64().unwrap(),
        );
        // Whole quanta (1 ms), and the bandwidth is their ratio.
        assert_eq!(period % 1_000_000, 0);
        assert_eq!(budget % 1_000_000, 0);
        let bandwidth = d["bandwidth"].as_f64().unwrap();
        assert!((bandwidth - budget as f64 / period as f64).abs() < 1e-12);
        let overhead = d["overhead"].as_f64().unwrap();
        assert!((overhead - (bandwidth - d["utilization"].as_f64().unwrap())).abs() < 1e-9);
        sum += bandwidth;
    }
    assert!((report["u_rm"].as_f64().unwrap() - sum).abs() < 1e-9);
    // U_W of the example: 3/25 + 5/50 + 4/100 + 1/10 + 2/20 + 3/35 + 4/40 + 6/60 + 10/200.
    let u_w = 0.12 + 0.1 + 0.04 + 0.1 + 0.1 + 3.0 / 35.0 + 0.1 + 0.1 + 0.05;
    assert!((report["u_w"].as_f64().unwrap() - u_w).abs() < 1e-12);
}

#[test]
fn emitted_scenario_checks_and_simulates_without_misses() {
    let dir = tempfile::tempdir().unwrap();
    let emitted = dir.path().join("tuned.toml");
    let o = rtvmm(&[
        "analyze",
        &example("analysis.toml"),
        "--emit",
        "scenario",
        emitted.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("scenario: "), "{}", stdout(&o));
    let check = rtvmm(&["check", emitted.to_str().unwrap()]);
    assert_exit(&check, 0);
    let results = dir.path().join("r.json");
    let sim = rtvmm(&[
        "sim",
        emitted.to_str().unwrap(),
        "--duration",
        "2s",
        "--json",
        results.to_str().unwrap(),
    ]);
    assert_exit(&sim, 0);
    let results: Value = serde_json::from_str(&std::fs::read_to_string(results).unwrap()).unwrap();
    assert_eq!(results["missed"], Value::from(0u64), "{results}");
    // The VCPUs are the interfaces of the report.
    let report = json_report(&[&example("analysis.toml")]);
    let text = std::fs::read_to_string(&emitted).unwrap();
    for d in report["domains"].as_array().unwrap() {
        let budget = format!(
            "budget = \"{}ms\"",
            d["budget_ns"].as_u64().unwrap() / 1_000_000
        );
        assert!(text.contains(&budget), "{budget} not in\n{text}");
    }
}

#[test]
fn emit_to_stdout_prints_only_the_emitted_text() {
    let o = rtvmm(&["analyze", &example("analysis.toml"), "--emit", "scenario"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.starts_with("# Emitted by `rtvmm analyze"), "{out}");
    assert!(!out.contains("verdict:"), "{out}");
}

#[test]
fn xl_lines_carry_each_interface_in_microseconds() {
    let report = json_report(&[&example("analysis.toml")]);
    let o = rtvmm(&["analyze", &example("analysis.toml"), "--emit", "xl"]);
    assert_exit(&o, 0);
    let lines: Vec<String> = stdout(&o)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(str::to_string)
        .collect();
    let expected: Vec<String> = report["domains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "xl sched-rtds -d {} -p {} -b {}",
                d["name"].as_str().unwrap(),
                d["period_ns"].as_u64().unwrap() / 1000,
                d["budget_ns"].as_u64().unwrap() / 1000
            )
        })
        .collect();
    assert_eq!(lines, expected);
}

#[test]
fn rta_adds_response_times_under_the_file_s_server() {
    let o = rtvmm(&["analyze", &example("analysis.toml"), "--rta"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(
        out.contains("response times under the Periodic Server"),
        "{out}"
    );
    assert!(out.contains("n/a (edf guest)"), "{out}");
    let o = rtvmm(&[
        "analyze",
        &example("analysis.toml"),
        "--rta",
        "--policy",
        "credit",
    ]);
    assert_exit(&o, 0);
    assert!(
        stdout(&o).contains("response times: not applicable under credit"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn vcpu_parameters_are_optional_for_analyze_only() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "bare.toml", NO_VCPUS);
    let check = rtvmm(&["check", &path]);
    assert_exit(&check, 2);
    let o = rtvmm(&["analyze", &path]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("policy deferrable"), "{}", stdout(&o));
    // The emitted scenario fills them in, and then `check` accepts it.
    let emitted = dir.path().join("filled.toml");
    let o = rtvmm(&[
        "analyze",
        &path,
        "--emit",
        "scenario",
        emitted.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    assert_exit(&rtvmm(&["check", emitted.to_str().unwrap()]), 0);
}

#[test]
fn task_times_off_the_quantum_are_rounded_safely_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let text = NO_VCPUS.replace("wcet = \"2ms\"", "wcet = \"2.5ms\"");
    let path = write(dir.path(), "odd.toml", &text);
    let report = json_report(&[&path]);
    let t1 = &report["domains"][0]["tasks"][0];
    assert_eq!(
        t1["wcet"],
        Value::from(3u64),
        "2.5 ms rounds up to 3 quanta"
    );
    assert_eq!(t1["wcet_ns"], Value::from(2_500_000u64));
    let notes = report["notes"].as_array().unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.as_str().unwrap().contains("rounded")),
        "{notes:?}"
    );
    // With a 500 µs unit nothing needs rounding.
    let fine = json_report(&[&path, "--quantum", "500us"]);
    assert_eq!(fine["unit_ns"], Value::from(500_000u64));
    assert_eq!(fine["domains"][0]["tasks"][0]["wcet"], Value::from(5u64));
}

#[test]
fn fixed_period_and_period_range_shape_the_interfaces() {
    let report = json_report(&[
        &example("analysis.toml"),
        "--fixed-period",
        "avionics=10",
        "--period-range",
        "5ms..20ms",
    ]);
    let domains = report["domains"].as_array().unwrap();
    assert_eq!(domains[0]["period_ns"], Value::from(10_000_000u64));
    assert_eq!(domains[0]["interface_source"], "fixed period");
    for d in &domains[1..] {
        let period = d["period_ns"].as_u64().unwrap();
        assert!((5_000_000..=20_000_000).contains(&period), "{d}");
    }
}

#[test]
fn carts_input_is_analysed_and_emitted() {
    let o = rtvmm(&["analyze", &example("carts.xml"), "--rta"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.contains("(carts)"), "{out}");
    assert!(out.contains("flight"), "{out}");
    // What CARTS computes (general sbf) for the spec's workload: (7, 2).
    let report = json_report(&[&example("carts.xml"), "--sbf", "general"]);
    let flight = &report["domains"][0];
    assert_eq!(
        (flight["period"].as_u64(), flight["budget"].as_u64()),
        (Some(7), Some(2))
    );
    // The engine component's own range 5..15.
    let engine = report["domains"][1]["period"].as_u64().unwrap();
    assert!((5..=15).contains(&engine));
    let dir = tempfile::tempdir().unwrap();
    let emitted = dir.path().join("carts.toml");
    let o = rtvmm(&[
        "analyze",
        &example("carts.xml"),
        "--emit",
        "scenario",
        emitted.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    assert_exit(&rtvmm(&["check", emitted.to_str().unwrap()]), 0);
}

/// `--model mpr|dmpr` on the gEDF example prints the interfaces CARTS's `MPR2` and `DMPR`
/// print for it (run by hand, `docs/analysis.md`): vision ⟨10, 28, 3⟩ and control
/// ⟨10, 7, 1⟩ under MPR; under DMPR CARTS's (cpus, Θ) = (2, 20) and (1, 7). `--table`
/// gives PRM's rows per period, in the JSON too, and `--emit carts` writes a file that
/// reads back to the same interfaces.
#[test]
fn carts_models_table_and_emit() {
    let gedf = example("carts-gedf.xml");
    let o = rtvmm(&["analyze", &gedf, "--model", "mpr"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(
        out.contains("vision (Π = 10): ⟨Π, Θ, m′⟩ = ⟨10, 28, 3⟩"),
        "{out}"
    );
    assert!(
        out.contains("control (Π = 10): ⟨Π, Θ, m′⟩ = ⟨10, 7, 1⟩"),
        "{out}"
    );
    let report = json_report(&[&gedf, "--model", "dmpr"]);
    let carts_form = |c: &Value| {
        (
            c["best"]["carts_cpus"].as_u64(),
            c["best"]["carts_execution_time"].as_u64(),
        )
    };
    assert_eq!(carts_form(&report["components"][0]), (Some(2), Some(20)));
    assert_eq!(carts_form(&report["components"][1]), (Some(1), Some(7)));
    // The one-pcpu analysis refuses gEDF, naming the component.
    let o = rtvmm(&["analyze", &gedf]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("\"vision\" is scheduled by gEDF"),
        "{}",
        stderr(&o)
    );
    // PRM's table: engine's range 5..15, one row each; CARTS prints Θ = 2 at Π = 5.
    let report = json_report(&[&example("carts.xml"), "--table", "--sbf", "general"]);
    let engine = &report["components"][1];
    let rows = engine["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 11);
    assert_eq!(rows[0]["interface"]["budget"].as_u64(), Some(2));
    let o = rtvmm(&[
        "analyze",
        &example("carts.xml"),
        "--table",
        "--sbf",
        "general",
    ]);
    assert_exit(&o, 0);
    assert!(stdout(&o).contains("engine (Π ∈ 5..=15)"), "{}", stdout(&o));
    // --emit carts: read back, the same interfaces.
    let dir = tempfile::tempdir().unwrap();
    let written = dir.path().join("back.xml");
    let o = rtvmm(&[
        "analyze",
        &gedf,
        "--model",
        "mpr",
        "--emit",
        "carts",
        written.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let without_lines = |mut report: Value| {
        for c in report["components"].as_array_mut().unwrap() {
            c.as_object_mut().unwrap().remove("line");
        }
        report["components"].clone()
    };
    let again = json_report(&[written.to_str().unwrap(), "--model", "mpr"]);
    let first = json_report(&[&gedf, "--model", "mpr"]);
    assert_eq!(without_lines(again), without_lines(first));
}

/// `--fixed-period` outside the component's `min_period..max_period` warns on stderr,
/// naming the component, the value and the range, and still analyses at that period.
#[test]
fn fixed_period_outside_the_range_warns_on_stderr() {
    let carts = example("carts.xml");
    let o = rtvmm(&["analyze", &carts, "--fixed-period", "engine=30"]);
    assert_exit(&o, 0);
    let err = stderr(&o);
    assert!(
        err.contains(
            "warning: --fixed-period engine=30: 30 units lie outside engine's period range 5..=15"
        ),
        "{err}"
    );
    let o = rtvmm(&["analyze", &carts, "--fixed-period", "engine=10"]);
    assert_exit(&o, 0);
    assert!(!stderr(&o).contains("warning"), "{}", stderr(&o));
}

#[test]
fn bad_carts_input_names_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "bad.xml",
        "<system>\n  <component name=\"c\">\n    <task p=\"10\"/>\n  </component>\n</system>\n",
    );
    let o = rtvmm(&["analyze", &path]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("line 3"), "{}", stderr(&o));
}

#[test]
fn admit_accepts_the_example() {
    let o = rtvmm(&["check", "--admit", &example("analysis.toml")]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    assert!(out.starts_with("# valid: "), "{out}");
    assert!(
        out.contains("# admitted: every task is guaranteed"),
        "{out}"
    );
}

/// `control`'s VCPU cut to (10 ms, 2 ms) — bandwidth 0.2 for a load of 0.2857 — and its
/// tasks released 1 ms after the server's releases (so none is bound to them). Task by
/// task (general sbf: 10 does not divide 35): `loop` (10, 1) fails Lemma 1 (blackout
/// 2·8 = 16 > 10) but its response-time bound (10 − 2) + r(1) = 8 + 2 = 10 ms is within
/// its deadline, so it is guaranteed; `sensor` (20, 2) fails both (R ≥ 21 ms > 20), and is
/// the one named. The file still checks.
#[test]
fn admit_refuses_naming_the_domain_and_the_task() {
    let text = std::fs::read_to_string(example("analysis.toml"))
        .unwrap()
        .replace(
            "vcpu = { budget = \"2ms\", period = \"5ms\" }",
            "vcpu = { budget = \"2ms\", period = \"10ms\" }",
        )
        .replace("wcet = \"1ms\"\n", "wcet = \"1ms\"\noffset = \"1ms\"\n")
        .replace("wcet = \"2ms\"\n", "wcet = \"2ms\"\noffset = \"1ms\"\n");
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "tight.toml", &text);
    assert_exit(&rtvmm(&["check", &path]), 0);
    let o = rtvmm(&["check", "--admit", &path]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains("domain 'control', task 'sensor' cannot be guaranteed"),
        "{err}"
    );
    assert!(stdout(&o).is_empty(), "{}", stdout(&o));
}

/// The same cut, with the tasks released at the server's releases (offset 0; 10 and 20
/// are multiples of Π = 10, 35 is not): `loop` and `sensor` are bound to the release, so
/// no capacity gap. Only `logging` (Π 4, Θ 1) is above `control` at the root: r(1) = 1 +
/// ⌈r/4⌉ = 2; `loop`: R = r(1) = 2; `sensor`: L = 2 + ⌈R/10⌉ → R = 2: L = 3, k = 2, x = 1
/// → R = 10 + r(1) = 12 → L = 4, x = 2, r(2) = 2 + ⌈r/4⌉ = 3 → R = 13 → L = 4 → 13 ms.
/// Both are guaranteed; the refusal now names `actuator` (not bound, bandwidth 0.2 below
/// the domain's load 0.2857, so nothing can guarantee it).
#[test]
fn admit_uses_the_bound_task_form_for_tasks_on_the_server_grid() {
    let text = std::fs::read_to_string(example("analysis.toml"))
        .unwrap()
        .replace(
            "vcpu = { budget = \"2ms\", period = \"5ms\" }",
            "vcpu = { budget = \"2ms\", period = \"10ms\" }",
        );
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "on-grid.toml", &text);
    let o = rtvmm(&["check", "--admit", &path]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains("domain 'control', task 'actuator' cannot be guaranteed"),
        "{err}"
    );
    let o = rtvmm(&["analyze", "--given", "--rta", &path]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    let row = |task: &str| {
        out.lines()
            .find(|l| l.starts_with("control") && l.contains(task))
            .unwrap_or_else(|| panic!("no row for {task}:\n{out}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert!(row("loop").ends_with("fails 2ms * 8ms"), "{}", row("loop"));
    assert!(
        row("sensor").ends_with("fails 13ms * 7ms"),
        "{}",
        row("sensor")
    );
    assert!(
        out.contains("* released exactly at its server's releases"),
        "{out}"
    );
}

#[test]
fn bad_options_exit_2() {
    let input = example("analysis.toml");
    for args in [
        vec!["--fixed-period", "nope=10"],
        vec!["--fixed-period", "avionics=2.5ms"],
        vec!["--period-range", "20..5"],
        vec!["--period-range", "5"],
        vec!["--sbf", "harmonic"],
        vec!["--guest", "fifo"],
        vec!["--emit", "yaml"],
        vec!["--given", "--quantum", "0ms"],
    ] {
        let mut all = vec!["analyze", input.as_str()];
        all.extend(args.iter().copied());
        let o = rtvmm(&all);
        assert_exit(&o, 2);
        assert!(stderr(&o).contains("error"), "{args:?}: {}", stderr(&o));
    }
    assert_exit(&rtvmm(&["analyze", "/nonexistent/x.toml"]), 2);
}

/// Issue 24: `examples/multicore-rtds.toml` (four pcpus, one RTDS pool). The report
/// guarantees every domain and gives each VCPU its interface and pcpus; the scenario it
/// emits is admitted by `check --admit` (which reads the per-VCPU budgets back) and runs
/// 2 s without a miss.
#[test]
fn multicore_example_emits_a_scenario_that_runs_without_misses() {
    let report = json_report(&[&example("multicore-rtds.toml")]);
    assert_eq!(report["schedulable"], Value::Bool(true), "{report}");
    let pools = report["pools"].as_array().unwrap();
    assert_eq!(pools.len(), 1);
    assert_eq!(pools[0]["schedulable"], Value::Bool(true));
    for d in report["domains"].as_array().unwrap() {
        assert_eq!(d["guaranteed"], Value::Bool(true), "{d}");
        for v in d["vcpus"].as_array().unwrap() {
            assert_eq!(v["served"], Value::Bool(true), "{v}");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let emitted = dir.path().join("out.toml");
    let o = rtvmm(&[
        "analyze",
        &example("multicore-rtds.toml"),
        "--emit",
        "scenario",
        emitted.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let admit = rtvmm(&["check", "--admit", emitted.to_str().unwrap()]);
    assert_exit(&admit, 0);
    let results = dir.path().join("r.json");
    let sim = rtvmm(&[
        "sim",
        emitted.to_str().unwrap(),
        "--json",
        results.to_str().unwrap(),
    ]);
    assert_exit(&sim, 0);
    let results: Value = serde_json::from_str(&std::fs::read_to_string(results).unwrap()).unwrap();
    assert_eq!(results["missed"], Value::from(0u64), "{results}");
}

/// The table names the pool's verdict and test and lists every VCPU; `--emit xl` writes a
/// `vcpu-pin` where a VCPU's pcpus are narrower than its pool and a `sched-rtds -v i` per
/// VCPU, in µs, as the JSON gives them. `video`'s DMPR interface is one full VCPU (5 ms,
/// 5 ms) on pcpu 3 of its own and a partial one (5 ms, 4 ms) on pcpus 0–2.
#[test]
fn multicore_table_and_xl_lines_size_and_pin_each_vcpu() {
    let o = rtvmm(&["analyze", &example("multicore-rtds.toml")]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    for needle in [
        "pool Pool-0 (rtds, pcpus 0,1,2,3): schedulable",
        "(Bertogna, Cirinei & Lipari 2005)",
        "video    dmpr 1 full + (5, 4)  0     5   5  5ms     5ms     3      yes",
        "video    dmpr 1 full + (5, 4)  1     5   4  5ms     4ms     0,1,2  yes",
        "verdict: schedulable",
    ] {
        assert!(out.contains(needle), "{needle} missing in\n{out}");
    }
    let report = json_report(&[&example("multicore-rtds.toml")]);
    let o = rtvmm(&["analyze", &example("multicore-rtds.toml"), "--emit", "xl"]);
    assert_exit(&o, 0);
    let lines: Vec<String> = stdout(&o)
        .lines()
        .filter(|l| l.starts_with("xl sched-rtds"))
        .map(str::to_string)
        .collect();
    let mut expected = Vec::new();
    for d in report["domains"].as_array().unwrap() {
        for v in d["vcpus"].as_array().unwrap() {
            expected.push(format!(
                "xl sched-rtds -d {} -v {} -p {} -b {}",
                d["name"].as_str().unwrap(),
                v["index"],
                v["period_ns"].as_u64().unwrap() / 1000,
                v["budget_ns"].as_u64().unwrap() / 1000
            ));
        }
    }
    assert_eq!(lines, expected);
    let out = stdout(&o);
    assert!(out.contains("xl vcpu-pin video 0 3\n"), "{out}");
    assert!(out.contains("xl vcpu-pin video 1 0-2\n"), "{out}");
    assert!(
        out.contains("xl sched-rtds -d video -v 0 -p 5000 -b 5000\n"),
        "{out}"
    );
}

/// Two pools: `--emit xl` creates the second, moves its pcpus out of `Pool-0` and its
/// domain into it; a Credit pool beside them is named not covered, and `check --admit`
/// refuses naming its domain and the pool.
#[test]
fn multicore_pools_get_cpupool_lines_and_a_credit_pool_is_not_covered() {
    let text = r#"
name = "pools"
duration = "1s"
[machine]
pcpus = 3
[[pool]]
name = "Pool-0"
pcpus = "0"
policy = "rtds"
[[pool]]
name = "rt"
pcpus = "1"
policy = "rtds"
[[pool]]
name = "batch"
pcpus = "2"
policy = "credit"
[[domain]]
name = "a"
vcpu = { budget = "2ms", period = "5ms" }
[[domain.task]]
name = "t"
period = "10ms"
wcet = "1ms"
[[domain]]
name = "web"
pool = "rt"
vcpu = { budget = "2ms", period = "5ms" }
[[domain.task]]
name = "t"
period = "10ms"
wcet = "1ms"
[[domain]]
name = "bulk"
pool = "batch"
vcpu = { budget = "2ms", period = "5ms" }
[[domain.task]]
name = "t"
period = "10ms"
wcet = "1ms"
"#;
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "pools.toml", text);
    let o = rtvmm(&["analyze", &path, "--emit", "xl"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    for line in [
        "xl cpupool-create name=\"rt\" sched=\"rtds\"",
        "xl cpupool-cpu-remove Pool-0 1",
        "xl cpupool-cpu-add rt 1",
        "xl cpupool-migrate web rt",
        "xl cpupool-create name=\"batch\" sched=\"credit\"",
    ] {
        assert!(out.lines().any(|l| l == line), "{line} missing in\n{out}");
    }
    let o = rtvmm(&["analyze", &path]);
    let out = stdout(&o);
    assert!(
        out.contains("pool batch (credit, pcpus 2): NOT COVERED (pool 'batch' (credit): it does not enforce a budget per period"),
        "{out}"
    );
    assert!(
        out.contains("pool rt (rtds, pcpus 1): schedulable"),
        "{out}"
    );
    let admit = rtvmm(&["check", "--admit", &path]);
    assert_exit(&admit, 2);
    assert!(
        stderr(&admit)
            .contains("domain 'bulk' cannot be guaranteed: not covered: pool 'batch' (credit)"),
        "{}",
        stderr(&admit)
    );
}

/// `--model mpr` on the same example: `video`'s MPR interface ⟨5, 9, 2⟩ becomes two
/// (5 ms, 5 ms) VCPUs in one cluster of four pcpus with three others; each has
/// `Π − Θ + 1 = 1` and four other VCPUs interfering 1 each, 4 ≮ 4·1: not served — which is
/// why DMPR, whose full VCPU gets a pcpu of its own, is the default. A model that does not
/// exist is bad input.
#[test]
fn multicore_model_mpr_leaves_full_vcpus_unserved_and_a_bad_model_exits_2() {
    let o = rtvmm(&["analyze", &example("multicore-rtds.toml"), "--model", "mpr"]);
    assert_exit(&o, 0);
    let out = stdout(&o);
    for needle in [
        "video    mpr ⟨5, 9, 2⟩  0     5   5  5ms     5ms     0,1,2,3  NO",
        "video: VCPU 0 (5ms, 5ms) is not given its budget in every period by its pool's root test on pcpus 0-3",
        "verdict: NOT schedulable",
    ] {
        assert!(out.contains(needle), "{needle} missing in\n{out}");
    }
    let o = rtvmm(&["analyze", &example("multicore-rtds.toml"), "--model", "xyz"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("unknown model 'xyz': expected prm, mpr or dmpr"),
        "{}",
        stderr(&o)
    );
}
