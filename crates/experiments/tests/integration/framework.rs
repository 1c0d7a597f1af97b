//! The framework: the registry, interruption, compare, gen.

use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_experiments::experiments::REGISTRY;
use rtvmm_experiments::gen::{rtxen_scenario, scenario_toml};
use rtvmm_experiments::rtxen::rtxen_domains;
use rtvmm_experiments::system::{build_system, machine, simulate};
use rtvmm_experiments::{run_experiment, ExperimentError, Options};
use rtvmm_gen::rtxen::SharePattern;

use rtvmm_experiments::report::MANIFEST;

use crate::util::{csv_bytes, Csv};

#[test]
fn list_describes_every_experiment_including_planned_ones() {
    let text = rtvmm_experiments::experiments::list();
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
        assert!(text.contains(name), "list lacks {name}");
        assert!(REGISTRY.iter().any(|e| e.name == name));
    }
}

#[test]
fn unknown_and_planned_experiments_are_errors_that_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let err = run_experiment("rtxen-nothing", &Options::quick(dir.path())).unwrap_err();
    assert!(matches!(err, ExperimentError::UnknownExperiment { .. }));
    assert!(err.to_string().contains("rtxen-capacity"), "{err}");
    for e in REGISTRY.iter().filter(|e| e.run.is_none()) {
        let err = run_experiment(e.name, &Options::quick(dir.path())).unwrap_err();
        assert!(matches!(err, ExperimentError::NotImplemented(_)), "{err}");
    }
}

#[test]
fn an_interrupted_sweep_writes_what_is_done_and_marks_every_file_partial() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = Options::quick(dir.path());
    options.stop_after_runs = Some(2);
    options.jobs = 1;
    options.duration = Some(Nanos::from_ms(200));
    let report = run_experiment("rtxen-overhead", &options).unwrap();
    assert!(report.interrupted());
    // Seven runs: six policies, Credit twice.
    assert_eq!(report.status(), "interrupted: 2 of 7 runs done");
    let mark = "partial: interrupted after 2 of 7 runs";
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(
        md.contains("**Partial: interrupted after 2 of 7 runs.**"),
        "{md}"
    );
    let csv_text = std::fs::read_to_string(dir.path().join("overhead.csv")).unwrap();
    assert!(csv_text.starts_with(&format!("# {mark}\n")), "{csv_text}");
    let csv = Csv::read(&dir.path().join("overhead.csv"));
    assert_eq!(csv.rows.len(), 2);
    for file in report.files() {
        let path = dir.path().join(&file);
        assert!(path.exists(), "{file} written");
        let marked = if file.ends_with(".png") {
            // The title is drawn; the report and the manifest name the figure as partial.
            continue;
        } else {
            std::fs::read_to_string(&path)
                .unwrap()
                .to_lowercase()
                .contains("partial")
        };
        assert!(marked, "{file} is not marked partial");
    }
    let manifest = std::fs::read_to_string(dir.path().join(MANIFEST)).unwrap();
    assert!(
        manifest.contains(&format!("status: {mark}\n")),
        "{manifest}"
    );

    // A complete run into the same directory carries no mark, and its CSV is the bytes
    // of a run into a fresh directory.
    let fresh = tempfile::tempdir().unwrap();
    for out in [dir.path(), fresh.path()] {
        let mut options = Options::quick(out);
        options.duration = Some(Nanos::from_ms(200));
        assert!(!run_experiment("rtxen-overhead", &options)
            .unwrap()
            .interrupted());
    }
    assert_eq!(csv_bytes(dir.path()), csv_bytes(fresh.path()));
    let manifest = std::fs::read_to_string(dir.path().join(MANIFEST)).unwrap();
    assert!(manifest.contains("status: complete\n"), "{manifest}");
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    assert!(!md.to_lowercase().contains("partial"), "{md}");
}

#[test]
fn a_reused_out_directory_keeps_no_stale_files_and_nothing_it_did_not_write() {
    let dir = tempfile::tempdir().unwrap();
    let mut options = Options::quick(dir.path());
    options.duration = Some(Nanos::from_ms(200));
    let first = run_experiment("rtxen-overhead", &options).unwrap();
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let second = run_experiment("eval-affinity", &options).unwrap();
    let mut left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let mut expected = second.files();
    expected.push("notes.txt".to_string());
    expected.push(MANIFEST.to_string());
    expected.sort();
    assert_eq!(left, expected, "first run wrote {:?}", first.files());
    assert!(first.files().iter().any(|f| !second.files().contains(f)));
}

#[test]
fn a_manifest_never_removes_files_outside_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let outside = dir.path().join("precious.csv");
    std::fs::write(&outside, "keep").unwrap();
    std::fs::write(
        out.join(MANIFEST),
        "experiment: x\nstatus: complete\nfile: ../precious.csv\nfile: /etc/hostname\n",
    )
    .unwrap();
    let mut options = Options::quick(&out);
    options.duration = Some(Nanos::from_ms(200));
    run_experiment("rtxen-overhead", &options).unwrap();
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep");
}

#[test]
fn an_unusable_out_directory_is_refused_before_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let mut options = Options::quick(file.join("out"));
    let runs = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = runs.clone();
    options.on_run_done = Some(rtvmm_experiments::RunHook(std::sync::Arc::new(move |_| {
        counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    })));
    let err = run_experiment("rtxen-overhead", &options).unwrap_err();
    assert!(matches!(err, ExperimentError::Output(_)), "{err}");
    assert_eq!(runs.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[test]
fn compare_puts_two_results_side_by_side() {
    let domains = rtxen_domains(SharePattern::Even, 900, 1).unwrap();
    let run = |kind| {
        let system = build_system(
            &domains,
            kind,
            machine(Nanos::from_ms(1), Default::default()),
        )
        .unwrap();
        simulate(&system, "even-90", 1, Nanos::from_secs(2)).unwrap()
    };
    let (a, b) = (run(PolicyKind::Deferrable), run(PolicyKind::Credit));
    let dir = tempfile::tempdir().unwrap();
    let (pa, pb) = (dir.path().join("a.json"), dir.path().join("b.json"));
    std::fs::write(&pa, a.to_json()).unwrap();
    std::fs::write(&pb, b.to_json()).unwrap();
    let text = rtvmm_experiments::run_compare(&rtvmm_experiments::CompareArgs {
        a: pa.clone(),
        b: pb,
    })
    .unwrap();
    for d in ["d1", "d2", "d3", "d4", "d5"] {
        assert!(
            text.contains(&format!("| {d} | deadline miss ratio |")),
            "{text}"
        );
        assert!(
            text.contains(&format!("| {d} | responsiveness p99 |")),
            "{text}"
        );
    }
    assert!(text.contains("policy deferrable") && text.contains("policy credit"));
    let expected = format!(
        "| d1 | jobs | {} | {} | {:+} |",
        a.domains[0].jobs,
        b.domains[0].jobs,
        b.domains[0].jobs as i64 - a.domains[0].jobs as i64
    );
    assert!(text.contains(&expected), "{text}");
    // A file that is not results is an error naming it.
    std::fs::write(&pa, "{}").unwrap();
    let err = rtvmm_experiments::compare::compare_files(&pa, &pa).unwrap_err();
    assert!(err.to_string().contains("a.json"), "{err}");
}

#[test]
fn generated_rtxen_scenario_is_what_the_experiments_run() {
    let scenario = rtxen_scenario(
        SharePattern::Increasing,
        650,
        4,
        Nanos::from_secs(10),
        PolicyKind::Deferrable,
    )
    .unwrap();
    let text = scenario_toml(&scenario);
    let parsed = rtvmm_scenario::Scenario::from_toml(&text, "gen.toml")
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let domains = rtxen_domains(SharePattern::Increasing, 650, 4).unwrap();
    let ours = build_system(
        &domains,
        PolicyKind::Deferrable,
        machine(Nanos::from_ms(1), Default::default()),
    )
    .unwrap();
    assert_eq!(parsed.system.domains.len(), 5);
    for (theirs, mine) in parsed.system.domains.iter().zip(&ours.domains) {
        assert_eq!(theirs.name, mine.name);
        assert_eq!(
            (theirs.vcpu.budget, theirs.vcpu.period, theirs.vcpu.priority),
            (mine.vcpu.budget, mine.vcpu.period, mine.vcpu.priority)
        );
        assert_eq!(theirs.tasks, mine.tasks);
    }
    // Credit weights derived the same way by the scenario crate and by the experiments.
    let credit = parsed.with_policy(PolicyKind::Credit).unwrap();
    let ours = build_system(
        &domains,
        PolicyKind::Credit,
        machine(Nanos::from_ms(1), Default::default()),
    )
    .unwrap();
    for (theirs, mine) in credit.system.domains.iter().zip(&ours.domains) {
        assert_eq!(
            (theirs.vcpu.weight, theirs.vcpu.cap),
            (mine.vcpu.weight, mine.vcpu.cap)
        );
    }
}

#[test]
fn generated_csa_system_schedulable_by_the_analysis_shows_no_miss_under_ptps() {
    use rtvmm_analysis::{
        analyze_system, DomainSpec, GuestScheduler, Interface, InterfaceChoice, SbfMode,
    };
    use rtvmm_experiments::gen::csa_scenario;
    use rtvmm_experiments::interfaces::workload;
    use rtvmm_gen::csa::{csa_taskset, CsaParams};

    let params = CsaParams::new(500, (100, 300));
    let scenario = csa_scenario(&params, 3, Nanos::from_secs(6), PolicyKind::Periodic).unwrap();
    let text = scenario_toml(&scenario);
    let parsed = rtvmm_scenario::Scenario::from_toml(&text, "csa.toml")
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    // The analysis, given exactly these interfaces (in ms), accepts the whole system ...
    let system = csa_taskset(&params, 3).unwrap();
    let ms = |t: Nanos| t.as_ns() / 1_000_000;
    let specs: Vec<DomainSpec> = system
        .domains
        .iter()
        .zip(&scenario.domains)
        .map(|(d, s)| DomainSpec {
            name: d.name.clone(),
            workload: workload(d, Nanos::from_ms(1)).unwrap(),
            guest: GuestScheduler::Rm,
            interface: InterfaceChoice::Given(Interface::new(ms(s.period), ms(s.budget))),
        })
        .collect();
    let analysis = analyze_system(&specs, SbfMode::Auto);
    assert!(analysis.schedulable, "{analysis:#?}");
    // ... so under the Periodic Server nothing may miss.
    let results = simulate(&parsed.system, "csa", 3, parsed.duration).unwrap();
    assert!(results.jobs > 0);
    assert_eq!(results.missed, 0, "{}", results.summary());
}

#[test]
fn generated_arinc_scenarios_parse_and_say_they_are_generated() {
    use rtvmm_experiments::gen::arinc_scenario;
    for index in 1..=7 {
        let s = arinc_scenario(index, 1, Nanos::from_secs(1), PolicyKind::Periodic).unwrap();
        let text = scenario_toml(&s);
        assert!(text.contains("GENERATED"), "{text}");
        let parsed = rtvmm_scenario::Scenario::from_toml(&text, "arinc.toml")
            .unwrap_or_else(|e| panic!("W{index}: {e}\n{text}"));
        for d in &parsed.system.domains {
            assert!(d.vcpu.budget <= d.vcpu.period);
            assert_eq!(d.vcpu.budget.as_ns() % 1_000_000, 0, "whole quanta");
        }
    }
    assert!(arinc_scenario(8, 1, Nanos::from_secs(1), PolicyKind::Periodic).is_err());
}

#[test]
fn an_input_in_the_out_directory_is_never_overwritten() {
    use rtvmm_gen::arinc::arinc_suite;
    let dir = tempfile::tempdir().unwrap();
    // A workload file that has the name of a file the experiment writes.
    let suite = arinc_suite(1);
    let text = rtvmm_gen::workload_file::workload_to_toml(&suite[0]).unwrap();
    let input = dir.path().join("report.md");
    std::fs::write(&input, &text).unwrap();
    let mut options = Options::quick(dir.path());
    options.workloads = vec![input.clone()];
    options.duration = Some(Nanos::from_ms(200));
    let err = run_experiment("csa-arinc", &options).unwrap_err();
    assert!(matches!(err, ExperimentError::Output(_)), "{err}");
    assert_eq!(std::fs::read_to_string(&input).unwrap(), text);
}

/// Issue 13 §5, found by the fuzzing harness: `compare`'s reader printed serde's Rust
/// types ("expected u64", "expected struct Dist") and no field. Its errors now say which
/// field, what was expected in words, and the line.
#[test]
fn results_files_of_the_wrong_shape_are_reported_in_words_with_the_field() {
    use rtvmm_experiments::compare::parse_results;
    use std::path::Path;
    let scenario = rtvmm_scenario::Scenario::from_toml(
        "duration = \"100ms\"\n[[domain]]\nname = \"d1\"\n\
         vcpu = { budget = \"2ms\", period = \"10ms\" }\n\
         [[domain.task]]\nname = \"t\"\nperiod = \"10ms\"\nwcet = \"1ms\"\n",
        "s.toml",
    )
    .unwrap();
    let json = rtvmm_scenario::run(&scenario, Default::default())
        .unwrap()
        .results
        .to_json();
    assert!(parse_results(&json, Path::new("r.json")).is_ok());
    let error = |text: &str| {
        parse_results(text, Path::new("r.json"))
            .unwrap_err()
            .to_string()
    };
    let p50 = json.find("\"p50\": ").unwrap();
    let line = json[..p50].lines().count();
    let fraction = json.replacen("\"p50\": ", "\"p50\": 0.5, \"was\": ", 1);
    let message = error(&fraction);
    assert!(
        message.starts_with(&format!(
            "r.json: not a results file: domains[0].response_ns.p50: expected a whole number \
             (0 or more), found the number 0.5 (line {line}, column "
        )),
        "{message}"
    );
    let wrong_object = json.replacen(
        "\"response_ns\": {",
        "\"response_ns\": \"name\", \"x\": {",
        1,
    );
    let object_message = error(&wrong_object);
    assert!(
        object_message
            .contains("domains[0].response_ns: expected an object, found the string \"name\""),
        "{object_message}"
    );
    for internal in ["u64", "struct", "Dist"] {
        assert!(!message.contains(internal) && !object_message.contains(internal));
    }
    assert_eq!(
        error("{}"),
        "r.json: not a results file: missing field `scenario` (line 1, column 2)"
    );
    // Found by cargo-fuzz: an array where an object belongs named the Rust struct.
    assert_eq!(
        error("[]"),
        "r.json: not a results file: expected an object, found an array (line 1, column 2)"
    );
    let array = json.replacen("\"response_ns\": {", "\"response_ns\": [], \"x\": {", 1);
    assert!(
        error(&array).contains("domains[0].response_ns: expected an object, found an array"),
        "{}",
        error(&array)
    );
    let trailing = error(&format!("{json} x"));
    assert!(
        trailing.starts_with("r.json: not a results file: trailing characters (line "),
        "{trailing}"
    );
}

/// Found by the fuzzing harness: compare matches domains by name, so a results file with
/// two domains of one name showed the first one's figures for both, silently. Such a file
/// is refused, naming both places.
#[test]
fn a_results_file_naming_two_domains_alike_is_refused() {
    use rtvmm_experiments::compare::parse_results;
    use std::path::Path;
    let scenario = rtvmm_scenario::Scenario::from_toml(
        "duration = \"100ms\"\n\
         [[domain]]\nname = \"d1\"\nvcpu = { budget = \"2ms\", period = \"10ms\" }\n\
         [[domain.task]]\nname = \"t\"\nperiod = \"10ms\"\nwcet = \"1ms\"\n\
         [[domain]]\nname = \"d2\"\nvcpu = { budget = \"2ms\", period = \"20ms\" }\n\
         [[domain.task]]\nname = \"t\"\nperiod = \"20ms\"\nwcet = \"3ms\"\n",
        "s.toml",
    )
    .unwrap();
    let json = rtvmm_scenario::run(&scenario, Default::default())
        .unwrap()
        .results
        .to_json();
    assert!(parse_results(&json, Path::new("r.json")).is_ok());
    let twice = json.replace("\"name\": \"d2\"", "\"name\": \"d1\"");
    assert_eq!(
        parse_results(&twice, Path::new("r.json"))
            .unwrap_err()
            .to_string(),
        "r.json: not a results file: domains[1].name: 'd1' is also the name of domains[0]: \
         a results file names each domain once"
    );
}
