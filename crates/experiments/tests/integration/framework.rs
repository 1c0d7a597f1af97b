//! The framework: the registry, interruption, compare, gen.

use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;
use rtvmm_experiments::experiments::REGISTRY;
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
        "latency",
        "packet-latency",
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
    options.progress = Some(rtvmm_experiments::Progress(std::sync::Arc::new(
        move |event| {
            if let rtvmm_experiments::SweepEvent::RunDone { .. } = event {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        },
    )));
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
    let text = rtvmm_experiments::compare::compare_files(&pa, &pb).unwrap();
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
    let json = rtvmm_sim::run::run(&scenario, Default::default())
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
    let json = rtvmm_sim::run::run(&scenario, Default::default())
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
