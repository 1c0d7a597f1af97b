//! The `--host` path of rtxen-overhead and rtxen-isolation, driven by a stand-in
//! [`RealTime`] that needs no privilege (it simulates and attaches made-up executor
//! measurements): what the reports and CSVs say, refusals, and a real-time run stopped
//! part-way. The real executor is tested by the binary's tests (`tests/integration/host_experiments.rs`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rtvmm_core::Nanos;
use rtvmm_experiments::driver::{Driver, RealTime, RealTimeError};
use rtvmm_experiments::system::simulate;
use rtvmm_experiments::{run_experiment, Cancel, ExperimentError, Options};
use rtvmm_system::results::{Dist, HostResults, RunResults, SOURCE_HOST};
use rtvmm_system::SystemSpec;

use crate::util::{assert_structure, Csv};

/// Simulates, then labels the results as a host run with fixed measurements.
#[derive(Default)]
struct StandIn {
    refuse: Option<RealTimeError>,
    /// Stop (set the cancel flag and give up) at this run (0-based).
    stop_at: Option<usize>,
    real_time: bool,
    runs: AtomicUsize,
    /// The names of the runs, in the order they started.
    started: Mutex<Vec<String>>,
}

fn dist(p50: u64, count: u64) -> Dist {
    Dist {
        count,
        min: p50 / 2,
        mean: p50 as f64,
        p50,
        p90: p50 * 2,
        p99: p50 * 3,
        max: p50 * 10,
    }
}

impl RealTime for StandIn {
    fn check(&self) -> Result<(), RealTimeError> {
        self.refuse.clone().map_or(Ok(()), Err)
    }

    fn run(
        &self,
        system: &SystemSpec,
        scenario: &str,
        seed: u64,
        duration: Nanos,
        stop: &Cancel,
    ) -> Result<Option<RunResults>, RealTimeError> {
        let n = self.runs.fetch_add(1, Ordering::SeqCst);
        self.started.lock().unwrap().push(scenario.to_string());
        if self.stop_at == Some(n) {
            stop.cancel();
            return Ok(None);
        }
        let mut r = simulate(system, scenario, seed, duration).map_err(|e| RealTimeError {
            message: e.to_string(),
            refused: false,
        })?;
        let calls = r.pcpus[0].do_schedule_calls;
        r.source = SOURCE_HOST.to_string();
        r.host = Some(HostResults {
            real_time: self.real_time,
            not_real_time_because: if self.real_time {
                vec![]
            } else {
                vec!["real-time scheduling: SCHED_FIFO needs root".to_string()]
            },
            cpu: 1,
            enforce: "freeze".into(),
            do_schedule_ns: dist(1_000, calls),
            do_schedule_total_ns: calls * 1_000,
            switch_ns: dist(20_000, r.pcpus[0].context_switches),
            switch_total_ns: r.pcpus[0].context_switches * 20_000,
            tick_lateness_ns: dist(10_000, calls),
            scheduler_cpu_ns: 1_000_000,
            cpu_lost_share: 0.01,
            steal_ns: 30_000_000,
            jobs_lost: 0,
            domain_cpu_ns: vec![1; system.domains.len()],
            ..HostResults::default()
        });
        Ok(Some(r))
    }

    fn describe(&self) -> String {
        "stand-in executor".to_string()
    }

    fn flags(&self) -> String {
        "--host".to_string()
    }
}

fn host_options(dir: &std::path::Path, stand_in: Arc<StandIn>) -> Options {
    let mut options = Options::quick(dir);
    options.driver = Driver::Host(stand_in);
    options.duration = Some(Nanos::from_ms(300));
    options
}

fn real_time() -> Arc<StandIn> {
    Arc::new(StandIn {
        real_time: true,
        ..StandIn::default()
    })
}

#[test]
fn overhead_on_the_host_writes_the_measured_table_with_a_host_row_per_policy() {
    let dir = tempfile::tempdir().unwrap();
    let stand_in = real_time();
    let options = host_options(dir.path(), Arc::clone(&stand_in));
    let report = run_experiment("rtxen-overhead", &options).unwrap();
    let columns = rtvmm_experiments::experiments::rtxen_overhead::HOST_COLUMNS;
    assert_structure(dir.path(), &report, &[("overhead_host.csv", &columns)]);
    // The simulated files are not written.
    assert!(!dir.path().join("overhead.csv").exists());
    let csv = Csv::read(&dir.path().join("overhead_host.csv"));
    let names: Vec<&str> = csv.rows.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        names,
        [
            "deferrable",
            "periodic",
            "polling",
            "sporadic",
            "credit",
            "credit-1ms",
            "sedf"
        ]
    );
    for row in &csv.rows {
        assert_eq!(row[csv.column("source")], "host");
        assert_eq!(row[csv.column("real_time")], "true");
        assert!(csv.u64(row, "do_schedule_calls") > 0, "{row:?}");
        assert_eq!(csv.u64(row, "do_schedule_p50_ns"), 1_000);
        assert_eq!(csv.u64(row, "steal_ns"), 30_000_000);
    }
    // One run at a time, in the policies' order.
    let started = stand_in.started.lock().unwrap().clone();
    assert_eq!(started.len(), 7);
    assert_eq!(started[0], "rtxen-overhead-deferrable");
    let md = std::fs::read_to_string(dir.path().join("report.md")).unwrap();
    for expected in [
        "real time on Linux",
        "stand-in executor",
        "--quick --duration 300ms --host`",
        "real time per run",
        "Each run's conditions",
        "host steal (ms)",
        "in real time on this machine",
    ] {
        assert!(md.contains(expected), "{expected} missing:\n{md}");
    }
    assert!(!md.contains("NOT real time"), "{md}");
}

#[test]
fn isolation_on_the_host_says_which_results_are_real_time_and_the_steal_of_each_run() {
    let dir = tempfile::tempdir().unwrap();
    let stand_in = Arc::new(StandIn::default()); // --best-effort without a privilege
    let mut options = host_options(dir.path(), stand_in);
    options.policies = Some(vec![rtvmm_core::policy::PolicyKind::Deferrable]);
    let report = run_experiment("rtxen-isolation", &options).unwrap();
    let mut columns = vec![
        "case",
        "policy",
        "domain",
        "jobs",
        "missed",
        "in_flight",
        "deadline_miss_ratio",
    ];
    columns.extend(["source", "real_time", "domain_cpu_ns", "run_steal_ns"]);
    assert_structure(dir.path(), &report, &[("isolation_host.csv", &columns)]);
    let csv = Csv::read(&dir.path().join("isolation_host.csv"));
    assert_eq!(csv.rows.len(), 10, "2 cases × 5 domains");
    assert!(csv
        .rows
        .iter()
        .all(|r| r[csv.column("real_time")] == "false"));
    let runs = std::fs::read_to_string(dir.path().join("host_runs.md")).unwrap();
    assert!(
        runs.contains("NOT real time (--best-effort: real-time scheduling"),
        "{runs}"
    );
    assert!(runs.contains("| 30.000 |"), "the steal of each run: {runs}");
    assert!(report.findings.iter().all(|f| f.contains("NOT real time")));
}

#[test]
fn host_is_refused_for_the_other_experiments_and_with_a_modelled_overhead() {
    let dir = tempfile::tempdir().unwrap();
    let options = host_options(dir.path(), real_time());
    let err = run_experiment("rtxen-capacity", &options).unwrap_err();
    assert_eq!(
        err.to_string(),
        "--host: only rtxen-overhead and rtxen-isolation run on the host; rtxen-capacity \
         runs in the simulator only (drop --host)"
    );
    let mut options = host_options(dir.path(), real_time());
    options.overheads = Some(Default::default());
    let err = run_experiment("rtxen-overhead", &options).unwrap_err();
    assert!(err.to_string().starts_with("--overhead: "), "{err}");
}

#[test]
fn a_refusing_executor_stops_the_experiment_before_any_run_with_its_message() {
    let dir = tempfile::tempdir().unwrap();
    let stand_in = Arc::new(StandIn {
        refuse: Some(RealTimeError {
            message: "missing privileges for a real-time run".into(),
            refused: true,
        }),
        ..StandIn::default()
    });
    let options = host_options(&dir.path().join("out"), Arc::clone(&stand_in));
    let err = run_experiment("rtxen-overhead", &options).unwrap_err();
    assert!(
        matches!(
            &err,
            ExperimentError::Host {
                run: None,
                refused: true,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "--host: missing privileges for a real-time run"
    );
    assert_eq!(stand_in.runs.load(Ordering::SeqCst), 0);
    assert!(!dir.path().join("out").exists(), "nothing written");
}

#[test]
fn a_stopped_real_time_run_is_dropped_and_the_finished_ones_are_written_partial() {
    let dir = tempfile::tempdir().unwrap();
    let stand_in = Arc::new(StandIn {
        real_time: true,
        stop_at: Some(2),
        ..StandIn::default()
    });
    let options = host_options(dir.path(), Arc::clone(&stand_in));
    let report = run_experiment("rtxen-overhead", &options).unwrap();
    assert_eq!((report.runs_done, report.runs_total), (2, 7));
    // Nothing starts after the stop.
    assert_eq!(stand_in.runs.load(Ordering::SeqCst), 3);
    let text = std::fs::read_to_string(dir.path().join("overhead_host.csv")).unwrap();
    assert!(
        text.starts_with("# partial: interrupted after 2 of 7 runs\n"),
        "{text}"
    );
    assert_eq!(
        Csv::read(&dir.path().join("overhead_host.csv")).rows.len(),
        2
    );
}
