//! The `rtvmm` binary, run as a user runs it: exit codes (0 ok, 1 a run or a write failed,
//! 2 usage or bad input incl. unusable output paths, 130/143 an experiment stopped by
//! SIGINT/SIGTERM), what each command prints, the files `sim` writes, and that no
//! output ever destroys an input or is left half-written.

use std::path::PathBuf;

use crate::common::*;

use serde_json::Value;

/// Every policy, in the order `policies` and `demo` list them.
const POLICIES: [&str; 11] = [
    "deferrable",
    "periodic",
    "polling",
    "sporadic",
    "wcps",
    "crps",
    "credit",
    "sedf",
    "sedf-ideal",
    "rtds",
    "arinc653",
];

const SMALL: &str = r#"name = "small"
duration = "200ms"
seed = 5
[[domain]]
name = "d1"
vcpu = { budget = "2ms", period = "10ms" }
[[domain.task]]
name = "t1"
period = "20ms"
wcet = "3ms"
[[domain]]
name = "d2"
vcpu = { budget = "5ms", period = "20ms" }
[[domain.task]]
name = "t2"
period = "40ms"
wcet = "8ms"
etf = 0.5
"#;

#[test]
fn policies_lists_all_eleven_with_aliases() {
    let o = rtvmm(&["policies"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), POLICIES.len(), "{text}");
    for (line, name) in lines.iter().zip(POLICIES) {
        assert!(line.starts_with(name), "{line}");
        assert!(line.len() > name.len() + 20, "has a description: {line}");
    }
    assert!(lines[1].contains("(ptps)"), "{}", lines[1]);
    assert!(lines[5].contains("(ssps)"), "{}", lines[5]);
}

#[test]
fn check_prints_a_normalised_form_that_checks_the_same() {
    let dir = tempfile::tempdir().unwrap();
    for path in examples() {
        let path = path.display().to_string();
        let first = rtvmm(&["check", &path]);
        assert_exit(&first, 0);
        let normal = stdout(&first);
        assert!(normal.starts_with("# valid: "), "{normal}");
        let again_path = write(dir.path(), "normal.toml", &normal);
        let second = rtvmm(&["check", &again_path]);
        assert_exit(&second, 0);
        assert_eq!(stdout(&second), normal, "check of check's output differs");
    }
}

#[test]
fn check_under_another_policy() {
    let o = rtvmm(&["check", &example("even-share.toml"), "--policy", "credit"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(text.contains("policy = \"credit\""), "{text}");
    assert!(text.contains("weight = 2000"), "{text}");
}

#[test]
fn bad_scenario_exits_2_naming_file_domain_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bad.toml",
        &SMALL.replace(
            r#"budget = "5ms", period = "20ms""#,
            r#"budget = "25ms", period = "20ms""#,
        ),
    );
    for command in ["check", "sim"] {
        let o = rtvmm(&[command, &bad]);
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert!(err.contains("bad.toml"), "{err}");
        assert!(err.contains("domain 'd2'"), "{err}");
        assert!(
            err.contains("vcpu: budget: 25ms is above the period 20ms"),
            "{err}"
        );
        assert!(stdout(&o).is_empty());
    }
}

#[test]
fn bare_number_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "bare.toml",
        &SMALL.replace(r#"wcet = "3ms""#, "wcet = 3"),
    );
    let o = rtvmm(&["check", &bad]);
    assert_exit(&o, 2);
    let err = stderr(&o);
    assert!(
        err.contains("bare.toml: domain 'd1', task 't1': wcet: 3 is a bare number"),
        "{err}"
    );
}

#[test]
fn toml_syntax_error_exits_2_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(dir.path(), "syntax.toml", "duration = \"1s\"\nname = = 3\n");
    let o = rtvmm(&["check", &bad]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("syntax.toml:2:"), "{}", stderr(&o));
}

#[test]
fn missing_file_exits_2() {
    let o = rtvmm(&["sim", "/nonexistent/scenario.toml"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("/nonexistent/scenario.toml: cannot read the file"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn usage_errors_exit_2() {
    let even = example("even-share.toml");
    for args in [
        vec![],
        vec!["frobnicate"],
        vec!["sim"],
        vec!["sim", &even, "--policy", "lottery"],
        vec!["sim", &even, "--duration", "10"],
        vec!["sim", &even, "--duration", "0s"],
        vec!["sim", &even, "--seed", "-1"],
        vec!["sim", &even, "--trace", "trace.txt"],
        vec!["demo", "--policy", "nope"],
    ] {
        let o = rtvmm(&args);
        assert_exit(&o, 2);
        assert!(!stderr(&o).is_empty(), "{args:?} says why");
    }
}

#[test]
fn arinc653_without_a_table_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let small = write(dir.path(), "small.toml", SMALL);
    let o = rtvmm(&["sim", &small, "--policy", "arinc653"]);
    assert_exit(&o, 2);
    assert!(
        stderr(&o).contains("policy arinc653 needs its schedule table"),
        "{}",
        stderr(&o)
    );
}

/// A path whose directory cannot exist (its parent is a regular file): unusable for
/// anyone, root included.
fn unusable(dir: &std::path::Path, name: &str) -> String {
    let file = dir.join("a-file");
    std::fs::write(&file, "x").unwrap();
    file.join(name).display().to_string()
}

#[test]
fn unusable_output_paths_exit_2_before_anything_runs() {
    let dir = tempfile::tempdir().unwrap();
    let small = write(dir.path(), "small.toml", SMALL);
    let missing_dir = dir.path().join("no/such/dir/results.json");
    let missing_dir = missing_dir.to_str().unwrap();
    let under_file = unusable(dir.path(), "out.json");
    let a_dir = dir.path().to_str().unwrap().to_string();
    let analysis = example("analysis.toml");
    for args in [
        vec!["sim", &small, "--json", missing_dir],
        vec!["sim", &small, "--trace", &under_file],
        vec!["sim", &small, "--jobs", &a_dir],
        vec!["analyze", &analysis, "--json", missing_dir],
        vec!["analyze", &analysis, "--emit", "scenario", &under_file],
        vec!["gen", "rtxen", "--out", missing_dir],
        vec![
            "experiment",
            "rtxen-overhead",
            "--quick",
            "--no-progress",
            "--out",
            &under_file,
        ],
        vec![
            "experiment",
            "all",
            "--quick",
            "--no-progress",
            "--out",
            &under_file,
        ],
    ] {
        let o = rtvmm(&args);
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert!(err.starts_with("rtvmm: error: "), "{args:?}: {err}");
        let lower = err.to_lowercase();
        assert!(
            lower.contains("does not exist")
                || lower.contains("not a directory")
                || lower.contains("is a directory"),
            "{args:?}: {err}"
        );
        assert_readable(&err);
        assert!(stdout(&o).is_empty(), "{args:?} ran: {}", stdout(&o));
    }
}

#[test]
fn an_output_that_is_an_input_is_refused_and_the_input_kept() {
    let dir = tempfile::tempdir().unwrap();
    let small = write(dir.path(), "small.toml", SMALL);
    let dotted = dir.path().join(".").join("small.toml");
    let link = dir.path().join("link.toml");
    std::os::unix::fs::symlink(&small, &link).unwrap();
    for out in [
        small.clone(),
        dotted.display().to_string(),
        link.display().to_string(),
    ] {
        for args in [
            vec!["sim", small.as_str(), "--json", &out],
            vec!["sim", small.as_str(), "--trace", "t.json", "--jobs", &out],
            vec!["analyze", small.as_str(), "--json", &out],
            vec!["analyze", small.as_str(), "--emit", "scenario", &out],
        ] {
            let o = rtvmm(&args);
            assert_exit(&o, 2);
            assert!(stderr(&o).contains("is the input file"), "{}", stderr(&o));
            assert_eq!(std::fs::read_to_string(&small).unwrap(), SMALL);
        }
    }
}

#[test]
fn two_outputs_with_one_path_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let small = write(dir.path(), "small.toml", SMALL);
    let out = dir.path().join("out.json");
    let same = dir.path().join(".").join("out.json");
    let (out, same) = (out.to_str().unwrap(), same.to_str().unwrap());
    for args in [
        vec!["sim", small.as_str(), "--json", out, "--trace", same],
        vec!["sim", small.as_str(), "--json", out, "--jobs", out],
        vec![
            "analyze",
            small.as_str(),
            "--json",
            out,
            "--emit",
            "xl",
            same,
        ],
    ] {
        let o = rtvmm(&args);
        assert_exit(&o, 2);
        assert!(
            stderr(&o).contains("same file as the output"),
            "{}",
            stderr(&o)
        );
        assert!(!dir.path().join("out.json").exists(), "{args:?} wrote");
    }
}

#[test]
fn a_failed_write_exits_1_and_replaces_no_file() {
    // /dev/full takes no byte: writing it fails like a full disk.
    let dir = tempfile::tempdir().unwrap();
    let small = write(dir.path(), "small.toml", SMALL);
    let json = write(dir.path(), "r.json", "previous");
    let o = rtvmm(&["sim", &small, "--json", &json, "--jobs", "/dev/full"]);
    assert_exit(&o, 1);
    assert!(
        stderr(&o).contains("cannot write /dev/full"),
        "{}",
        stderr(&o)
    );
    assert_readable(&stderr(&o));
    assert_eq!(
        std::fs::read_to_string(&json).unwrap(),
        "previous",
        "--json replaced although --trace failed"
    );
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 2, "a temporary file was left behind");
    for args in [
        vec!["analyze", small.as_str(), "--json", "/dev/full"],
        vec!["gen", "rtxen", "--out", "/dev/full"],
    ] {
        let o = rtvmm(&args);
        assert_exit(&o, 1);
        assert_readable(&stderr(&o));
    }
}

#[test]
fn every_command_follows_one_exit_code_rule() {
    let dir = tempfile::tempdir().unwrap();
    let small = write(dir.path(), "small.toml", SMALL);
    let invalid = write(dir.path(), "bad.toml", &SMALL.replace("\"3ms\"", "3"));
    let json = dir.path().join("r.json").display().to_string();
    let missing = dir.path().join("missing.toml").display().to_string();
    let missing_json = dir.path().join("missing.json").display().to_string();
    let bad_out = unusable(dir.path(), "out");
    let out = dir.path().join("out").display().to_string();
    let gen_out = dir.path().join("gen.toml").display().to_string();
    let cases: Vec<(Vec<&str>, i32)> = vec![
        (vec!["policies"], 0),
        (vec!["policies", "--bogus"], 2),
        (vec!["demo", "--duration", "100ms", "--policy", "ds"], 0),
        (vec!["demo", "--policy", "nope"], 2),
        (vec!["sim", &small, "--json", &json], 0),
        (vec!["sim", &missing], 2),
        (vec!["sim", &invalid], 2),
        (vec!["sim", &small, "--json", &bad_out], 2),
        (vec!["sim", &small, "--json", "/dev/full"], 1),
        (vec!["check", &small], 0),
        (vec!["check", &missing], 2),
        (vec!["check", &invalid], 2),
        (vec!["analyze", &small], 0),
        (vec!["analyze", &missing], 2),
        (vec!["analyze", "/nonexistent/carts.xml"], 2),
        (vec!["analyze", &small, "--json", &bad_out], 2),
        (vec!["analyze", &small, "--json", "/dev/full"], 1),
        (vec!["gen", "rtxen", "--out", &gen_out], 0),
        (vec!["gen", "rtxen", "--duration", "0s"], 2),
        (vec!["gen", "rtxen", "--out", &bad_out], 2),
        (vec!["gen", "rtxen", "--out", "/dev/full"], 1),
        (vec!["compare", &json, &json], 0),
        (vec!["compare", &json, &missing_json], 2),
        (vec!["compare", &json, &small], 2),
        (vec!["experiment", "list"], 0),
        (vec!["experiment", "nope"], 2),
        (
            vec![
                "experiment",
                "rtxen-capacity",
                "--seeds",
                "0",
                "--out",
                &out,
            ],
            2,
        ),
        (
            vec!["experiment", "rtxen-quantum", "--seeds", "2", "--out", &out],
            2,
        ),
        (
            vec!["experiment", "rtxen-overhead", "--quick", "--out", &bad_out],
            2,
        ),
        (
            vec![
                "experiment",
                "csa-arinc",
                "--quick",
                "--workload",
                &missing,
                "--out",
                &out,
            ],
            2,
        ),
    ];
    for (args, code) in cases {
        let o = rtvmm(&args);
        assert_eq!(
            o.status.code(),
            Some(code),
            "{args:?}\nstdout:\n{}\nstderr:\n{}",
            stdout(&o),
            stderr(&o)
        );
        if code != 0 {
            assert_readable(&stderr(&o));
        }
    }
}

#[test]
fn an_experiment_stopped_by_a_signal_exits_128_plus_it_and_marks_its_files_partial() {
    for (signal, code) in [("SIGINT", 130), ("SIGTERM", 143)] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("ovh");
        let o = rtvmm_env(
            &[
                "experiment",
                "rtxen-overhead",
                "--quick",
                "--no-progress",
                "-j",
                "1",
                "--duration",
                "200ms",
                "--out",
                out.to_str().unwrap(),
            ],
            &[("RTVMM_TEST_RAISE", &format!("{signal}:2"))],
        );
        assert_exit(&o, code);
        assert!(stderr(&o).contains(signal), "{}", stderr(&o));
        assert!(
            stdout(&o).contains("interrupted: 2 of 7 runs done"),
            "{}",
            stdout(&o)
        );
        let csv = std::fs::read_to_string(out.join("overhead.csv")).unwrap();
        assert!(
            csv.starts_with("# partial: interrupted after 2 of 7 runs\n"),
            "{csv}"
        );
        assert_eq!(csv.lines().count(), 1 + 1 + 2, "mark, header, two runs");
        let md = std::fs::read_to_string(out.join("report.md")).unwrap();
        assert!(
            md.contains("Partial: interrupted after 2 of 7 runs"),
            "{md}"
        );
    }
}

#[test]
fn help_documents_the_exit_codes() {
    for args in [vec!["--help"], vec!["sim", "--help"]] {
        let o = rtvmm(&args);
        assert_exit(&o, 0);
        let text = stdout(&o);
        assert!(text.contains("Exit codes (every command):"), "{text}");
        assert!(text.contains("2    usage error or bad input"), "{text}");
        assert!(
            text.contains(
                "130  an experiment, a sweep, a long `sim` or a `host run` stopped by SIGINT"
            ),
            "{text}"
        );
    }
}

#[test]
fn sim_prints_a_summary_and_writes_json_with_the_promised_fields() {
    let dir = tempfile::tempdir().unwrap();
    let small = write(dir.path(), "small.toml", SMALL);
    let json = dir.path().join("out.json");
    let o = rtvmm(&[
        "sim",
        &small,
        "--policy",
        "ptps",
        "--seed",
        "11",
        "--duration",
        "300ms",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let summary = stdout(&o);
    for needle in ["small", "periodic", "d1", "d2", "total", "do_schedule"] {
        assert!(summary.contains(needle), "{needle} in:\n{summary}");
    }

    let v: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["policy"], "periodic");
    assert_eq!(v["seed"], 11);
    assert_eq!(v["duration_ns"], 300_000_000u64);
    let has = |object: &Value, fields: &[&str]| {
        for f in fields {
            assert!(object.get(f).is_some(), "missing field {f} in {object}");
        }
    };
    let pcpus = v["pcpus"].as_array().unwrap();
    assert_eq!(pcpus.len(), 1);
    has(
        &pcpus[0],
        &[
            "busy_ns",
            "idle_ns",
            "overhead_ns",
            "do_schedule_calls",
            "context_switches",
        ],
    );
    let p = &pcpus[0];
    let total = p["busy_ns"].as_u64().unwrap()
        + p["idle_ns"].as_u64().unwrap()
        + p["overhead_ns"].as_u64().unwrap();
    assert_eq!(total, 300_000_000, "busy + idle + overhead = the run");
    let domains = v["domains"].as_array().unwrap();
    assert_eq!(domains.len(), 2);
    for d in domains {
        has(
            d,
            &[
                "name",
                "jobs",
                "missed",
                "in_flight",
                "deadline_miss_ratio",
                "tasks",
                "vcpus",
            ],
        );
        for t in d["tasks"].as_array().unwrap() {
            has(
                t,
                &[
                    "name",
                    "jobs",
                    "missed",
                    "deadline_miss_ratio",
                    "max_response_ns",
                ],
            );
        }
        for vcpu in d["vcpus"].as_array().unwrap() {
            has(
                vcpu,
                &["run_ns", "budget_consumed_ns", "scheduled", "preemptions"],
            );
        }
    }
    assert_eq!(domains[0]["name"], "d1");
    assert_eq!(domains[1]["tasks"][0]["name"], "t2");
    // d1's task releases at 0, 20, ..., 300 ms (a run handles what is due at its end):
    // 16 jobs, each counted or in flight.
    let d1 = &domains[0];
    assert_eq!(d1["released"], 16);
    assert_eq!(
        d1["jobs"].as_u64().unwrap() + d1["in_flight"].as_u64().unwrap(),
        16
    );
}

#[test]
fn sim_writes_traces_by_extension_and_same_seed_gives_same_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let small = write(dir.path(), "small.toml", SMALL);
    let run = |tag: &str| {
        let json = dir.path().join(format!("results-{tag}.json"));
        let chrome = dir.path().join(format!("trace-{tag}.json"));
        let csv = dir.path().join(format!("trace-{tag}.csv"));
        for (trace, json) in [(&chrome, Some(&json)), (&csv, None)] {
            let mut args = vec!["sim", &small, "--trace", trace.to_str().unwrap()];
            if let Some(json) = json {
                args.extend(["--json", json.to_str().unwrap()]);
            }
            let o = rtvmm(&args);
            assert_exit(&o, 0);
        }
        let read = |p: &PathBuf| std::fs::read(p).unwrap();
        (read(&json), read(&chrome), read(&csv))
    };
    let (json_a, chrome_a, csv_a) = run("a");
    let (json_b, chrome_b, csv_b) = run("b");
    assert_eq!(json_a, json_b, "results are byte-identical");
    assert_eq!(chrome_a, chrome_b, "Chrome trace is byte-identical");
    assert_eq!(csv_a, csv_b, "CSV trace is byte-identical");

    let chrome: Value = serde_json::from_slice(&chrome_a).unwrap();
    let events = chrome["traceEvents"].as_array().unwrap();
    assert!(events.len() > 10);
    let csv = String::from_utf8(csv_a).unwrap();
    assert!(
        csv.starts_with("time_ns,kind,pcpu,vcpu,domain,task,job,detail\n"),
        "{}",
        &csv[..80.min(csv.len())]
    );
}

#[test]
fn every_example_simulates() {
    let dir = tempfile::tempdir().unwrap();
    for path in examples() {
        let json = dir.path().join("r.json");
        let o = rtvmm(&[
            "sim",
            path.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ]);
        assert_exit(&o, 0);
    }
}

#[test]
fn demo_compares_every_policy() {
    let o = rtvmm(&["demo", "--duration", "300ms"]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("demo-even-70 · seed 42 · 300ms"),
        "{text}"
    );
    assert!(lines[1].starts_with("policy"), "{text}");
    for (line, kind) in lines[2..2 + POLICIES.len()].iter().zip(POLICIES) {
        assert!(line.starts_with(kind), "{line}");
    }
}

#[test]
fn demo_scenario_prints_as_a_valid_file() {
    let dir = tempfile::tempdir().unwrap();
    let o = rtvmm(&["demo", "--print-scenario", "--seed", "3"]);
    assert_exit(&o, 0);
    let file = write(dir.path(), "demo.toml", &stdout(&o));
    let checked = rtvmm(&["check", &file]);
    assert_exit(&checked, 0);
    assert_eq!(stdout(&checked), stdout(&o));
    let one = rtvmm(&["sim", &file, "--policy", "arinc653", "--duration", "100ms"]);
    assert_exit(&one, 0);
}

// ---- experiment, gen, compare ----

#[test]
fn experiment_list_names_every_experiment_and_unknown_is_bad_input() {
    let o = rtvmm(&["experiment", "list"]);
    assert_exit(&o, 0);
    for name in [
        "rtxen-quantum",
        "rtxen-overhead",
        "rtxen-isolation",
        "rtxen-capacity",
        "rtxen-theory",
        "csa-periods",
        "csa-etf",
        "csa-arinc",
        "eval-affinity",
        "eval-contention",
    ] {
        assert!(stdout(&o).contains(name), "list lacks {name}");
    }
    let o = rtvmm(&["experiment", "no-such-experiment"]);
    assert_exit(&o, 2);
    assert!(stderr(&o).contains("unknown experiment"));
    let o = rtvmm(&[
        "experiment",
        "rtxen-overhead",
        "--quick",
        "--policies",
        "nope",
    ]);
    assert_exit(&o, 2);
}

#[test]
fn experiment_quick_writes_its_report() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("ovh");
    let o = rtvmm(&[
        "experiment",
        "rtxen-overhead",
        "--quick",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let report = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    assert!(report.contains("rtxen-overhead"));
    let csvs = std::fs::read_dir(&out)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "csv")
        })
        .count();
    assert!(csvs >= 1, "no CSV written");
}

#[test]
fn generated_scenarios_pass_check_and_simulate() {
    let dir = tempfile::tempdir().unwrap();
    for (name, args) in [
        (
            "rtxen.toml",
            vec![
                "gen",
                "rtxen",
                "--pattern",
                "increasing",
                "--load",
                "0.6",
                "--duration",
                "2s",
            ],
        ),
        (
            "csa.toml",
            vec![
                "gen",
                "csa",
                "--utilisation",
                "0.7",
                "--periods",
                "550ms..650ms",
                "--duration",
                "2s",
            ],
        ),
        (
            "arinc.toml",
            vec!["gen", "arinc", "--index", "3", "--duration", "2s"],
        ),
    ] {
        let path = dir.path().join(name);
        let mut full = args.clone();
        full.extend(["--out", path.to_str().unwrap()]);
        let o = rtvmm(&full);
        assert_exit(&o, 0);
        let o = rtvmm(&["check", path.to_str().unwrap()]);
        assert_exit(&o, 0);
        let o = rtvmm(&["sim", path.to_str().unwrap()]);
        assert_exit(&o, 0);
    }
    let o = rtvmm(&["gen", "rtxen", "--load", "1.5"]);
    assert_exit(&o, 2);
}

#[test]
fn compare_puts_two_results_side_by_side() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.json");
    let b = dir.path().join("b.json");
    let scenario = example("even-share.toml");
    for (policy, out) in [("deferrable", &a), ("credit", &b)] {
        let o = rtvmm(&[
            "sim",
            &scenario,
            "--policy",
            policy,
            "--duration",
            "1s",
            "--json",
            out.to_str().unwrap(),
        ]);
        assert_exit(&o, 0);
    }
    let o = rtvmm(&["compare", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    assert!(text.contains("d1") && text.contains("d5"), "{text}");
    let o = rtvmm(&["compare", a.to_str().unwrap(), scenario.as_str()]);
    assert_exit(&o, 2);
}

#[test]
fn sim_writes_every_job_as_csv() {
    let dir = tempfile::tempdir().unwrap();
    let jobs = dir.path().join("jobs.csv");
    let json = dir.path().join("r.json");
    let o = rtvmm(&[
        "sim",
        &example("even-share.toml"),
        "--duration",
        "1s",
        "--jobs",
        jobs.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_exit(&o, 0);
    let csv = std::fs::read_to_string(&jobs).unwrap();
    let results: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let released: u64 = results["domains"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["released"].as_u64().unwrap())
        .sum();
    assert_eq!(
        csv.lines().count() as u64,
        released + 1,
        "one row per released job plus the header"
    );
    let missed = csv.lines().filter(|l| l.ends_with(",missed")).count() as u64;
    assert_eq!(missed, results["missed"].as_u64().unwrap());
}

#[test]
fn no_input_makes_rtvmm_panic_a_long_name_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let long = "d".repeat(65_534);
    let domain = write(
        dir.path(),
        "domain.toml",
        &SMALL.replace("name = \"d1\"", &format!("name = \"{long}\"")),
    );
    let task = write(
        dir.path(),
        "task.toml",
        &SMALL.replace("name = \"t1\"", &format!("name = \"{long}\"")),
    );
    let carts = write(
        dir.path(),
        "long.xml",
        &format!(
            "<system os_scheduler=\"RM\"><component name=\"{long}\" scheduler=\"RM\">\
             <task name=\"t\" p=\"10\" e=\"1\"/></component></system>"
        ),
    );
    for args in [
        vec!["analyze", domain.as_str()],
        vec!["analyze", task.as_str(), "--rta"],
        vec!["check", domain.as_str()],
        vec!["sim", task.as_str()],
        vec!["analyze", carts.as_str()],
    ] {
        let o = rtvmm(&args);
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert!(
            err.contains("65534 characters: a name has at most 255"),
            "{args:?}: {}",
            &err[..err.len().min(300)]
        );
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn errors_say_each_cause_once_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let small = write(dir.path(), "small.toml", SMALL);
    let typed = write(
        dir.path(),
        "typed.toml",
        &SMALL.replace("vcpu = { budget = \"2ms\", period = \"10ms\" }", "vcpu = 3"),
    );
    let pcpus = write(
        dir.path(),
        "pcpus.toml",
        &format!("{SMALL}[machine]\npcpus = 0\n"),
    );
    for (args, needle) in [
        (
            vec!["analyze", "/nonexistent/carts.xml"],
            "No such file or directory",
        ),
        (
            vec!["compare", "/nonexistent/a.json", &small],
            "No such file or directory",
        ),
        (
            vec![
                "experiment",
                "csa-arinc",
                "--quick",
                "--workload",
                "/nonexistent/w.toml",
            ],
            "No such file or directory",
        ),
        (
            vec!["sim", "/nonexistent/s.toml"],
            "No such file or directory",
        ),
        (
            vec!["check", &typed],
            "domain 'd1': vcpu: expected a table such as { budget = \"2ms\", period = \"10ms\" }",
        ),
        (
            vec!["check", &pcpus],
            "[machine]: pcpus: must be at least 1",
        ),
    ] {
        let o = rtvmm(&args);
        assert_exit(&o, 2);
        let err = stderr(&o);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_readable(&err);
    }
}

#[test]
fn a_generated_file_says_how_it_was_made_in_words_and_its_command_remakes_it() {
    let o = rtvmm(&[
        "gen",
        "uunifast",
        "--log-uniform",
        "--periods",
        "5..50",
        "--etf",
        "0.5",
        "--server-period",
        "5ms",
        "--seed",
        "3",
    ]);
    assert_exit(&o, 0);
    let text = stdout(&o);
    let header: String = text
        .lines()
        .take_while(|l| l.starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    assert_readable(&header);
    let flat = header.replace("\n# ", " ");
    assert!(
        flat.contains("periods log-uniform in [5ms, 50ms]"),
        "{header}"
    );
    let command = header
        .split('`')
        .nth(1)
        .expect("the header quotes its command");
    let args: Vec<&str> = command.split_whitespace().skip(1).collect();
    let again = rtvmm(&args);
    assert_exit(&again, 0);
    assert_eq!(stdout(&again), text, "{command} makes another file");
}

/// A file with an external domain (`attach`, `pids`): `check` prints it (and checks its
/// own output the same), `sim` refuses it by name as bad input, before writing anything.
#[test]
fn an_external_domain_is_checked_and_refused_by_sim() {
    let dir = tempfile::tempdir().unwrap();
    let text = "duration = \"1s\"\n[[domain]]\nname = \"vm1\"\n\
                vcpu = { budget = \"3ms\", period = \"10ms\" }\n\
                attach = \"/sys/fs/cgroup/unified/vm1\"\n";
    let path = write(dir.path(), "vm.toml", text);
    let checked = rtvmm(&["check", &path]);
    assert_exit(&checked, 0);
    let normal = stdout(&checked);
    assert!(
        normal.contains("attach = \"/sys/fs/cgroup/unified/vm1\""),
        "{normal}"
    );
    let again = write(dir.path(), "normal.toml", &normal);
    assert_eq!(stdout(&rtvmm(&["check", &again])), normal);
    let json = dir.path().join("out.json").display().to_string();
    let sim = rtvmm(&["sim", &path, "--json", &json]);
    assert_exit(&sim, 2);
    assert!(
        stderr(&sim).contains("domain 'vm1' is external (attach): only `rtvmm host run` runs it"),
        "{}",
        stderr(&sim)
    );
    assert!(!std::path::Path::new(&json).exists(), "nothing written");
}
