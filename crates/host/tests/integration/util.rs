//! The runner, the skip check, systems to run, and the leftover check.

use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use rtvmm_core::guest::{GuestScheduler, TaskSpec};
use rtvmm_core::machine::MachineConfig;
use rtvmm_core::model::{DomainSpec, VcpuParams};
use rtvmm_core::policy::{PolicyKind, PolicySettings};
use rtvmm_core::Nanos;
use rtvmm_host::enforce::Backend;
use rtvmm_host::executor::{self, HostOptions, HostRun};
use rtvmm_host::{sys, HelperCommand};
use rtvmm_system::results::HostResults;
use rtvmm_system::SystemSpec;

/// First argument of the stand-alone executor mode:
/// `__run POLICY BACKEND MILLISECONDS [best-effort]`.
pub const RUN_ARG: &str = "__run";
/// The stand-alone executor of a scenario file (`__run_file FILE BACKEND MILLISECONDS`),
/// external domains included.
pub const RUN_FILE_ARG: &str = "__run_file";
/// Set for the stand-alone executor: its scheduler thread panics at this many
/// milliseconds into the run.
pub const PANIC_AT_ENV: &str = "RTVMM_TEST_PANIC_AT_MS";
/// Set for the stand-alone executor: it carries on if its watchdog dies
/// (`--carry-on-without-watchdog`).
/// The stand-alone executor's leader thread exits alone this many milliseconds after it
/// started the run in another thread (a zombie leader whose threads run on).
pub const LEADER_EXIT_ENV: &str = "RTVMM_TEST_LEADER_EXIT_MS";
pub const CARRY_ON_ENV: &str = "RTVMM_TEST_CARRY_ON_WITHOUT_WATCHDOG";

pub fn ms(x: u64) -> Nanos {
    Nanos::from_ms(x)
}

/// Runs the tests whose names contain every non-flag argument, one after another;
/// prints libtest's lines (so CI counts them). A test fails by panicking, or by leaving
/// something behind.
pub fn run_tests(tests: &[(&str, fn())], args: &[String]) -> ExitCode {
    let filters: Vec<&String> = args.iter().filter(|a| !a.starts_with('-')).collect();
    let chosen: Vec<&(&str, fn())> = tests
        .iter()
        .filter(|(name, _)| filters.iter().all(|f| name.contains(f.as_str())))
        .collect();
    let began = Instant::now();
    // Read before any run changes it.
    rt_runtime_at_start();
    println!("\nrunning {} tests", chosen.len());
    let mut failed = Vec::new();
    for (name, test) in &chosen {
        let outcome = panic::catch_unwind(AssertUnwindSafe(test));
        let leftovers = leftovers();
        let ok = outcome.is_ok() && leftovers.is_empty();
        if !leftovers.is_empty() {
            eprintln!("{name}: left behind: {leftovers:?}");
        }
        println!("test {name} ... {}", if ok { "ok" } else { "FAILED" });
        if !ok {
            failed.push(*name);
        }
    }
    let passed = chosen.len() - failed.len();
    if !failed.is_empty() {
        println!("\nfailures:");
        for f in &failed {
            println!("    {f}");
        }
    }
    println!(
        "\ntest result: {}. {passed} passed; {} failed; 0 ignored; 0 measured; {} filtered out; finished in {:.2}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        failed.len(),
        tests.len() - chosen.len(),
        began.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `Err(reason)` unless this machine lets a real-time run start: root (or the
/// capabilities), a writable RT-throttling setting, and a writable cgroup v2.
pub fn real_time_available() -> Result<(), String> {
    let missing = sys::missing_privileges(&sys::Host, true);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "))
    }
}

/// Set to skip every real-time test on a machine shared with others (CI leaves it unset).
pub const SKIP_RT_TESTS: &str = "RTVMM_SKIP_RT_TESTS";

/// Whether `RTVMM_SKIP_RT_TESTS` asks to skip the real-time tests: set and neither empty
/// nor `0`.
pub fn rt_tests_switched_off() -> bool {
    std::env::var_os(SKIP_RT_TESTS).is_some_and(|v| !v.is_empty() && v != "0")
}

/// Prints why the test is skipped and returns true when it must be: `RTVMM_SKIP_RT_TESTS`
/// is set, or this machine lacks the privileges.
pub fn skip(test: &str) -> bool {
    if rt_tests_switched_off() {
        eprintln!("skipped: {test}: {SKIP_RT_TESTS} is set");
        return true;
    }
    match real_time_available() {
        Ok(()) => false,
        Err(reason) => {
            eprintln!("skipped: {test}: needs root, cgroup v2 and SCHED_FIFO: {reason}");
            true
        }
    }
}

/// A domain whose one task always has work (wcet twice its period).
pub fn busy(name: &str, budget: Nanos, period: Nanos, priority: u32) -> DomainSpec {
    DomainSpec {
        name: name.into(),
        vcpu: VcpuParams::server(budget, period, priority),
        guest: GuestScheduler::Rm,
        tasks: vec![TaskSpec::periodic("busy", period, period + period)],
        placement: Default::default(),
    }
}

pub fn system(policy: PolicyKind, domains: Vec<DomainSpec>) -> SystemSpec {
    let policy = PolicySettings::default()
        .config(policy)
        .expect("a policy without a table");
    SystemSpec {
        domains,
        ..SystemSpec::one_pool(MachineConfig::default(), policy)
    }
}

/// The two-domain system of the share test: `d20` (2 ms every 10 ms, priority 1) and
/// `rest` (10 ms every 10 ms, priority 2), both always busy.
pub fn twenty_percent(policy: PolicyKind) -> SystemSpec {
    system(
        policy,
        vec![
            busy("d20", ms(2), ms(10), 1),
            busy("rest", ms(10), ms(10), 2),
        ],
    )
}

/// The share of the core (percent) a domain with a budget of `budget_percent` can have had
/// in a run of `duration_ns`: its budget, less its part of what the run measured was taken
/// from whatever ran — the scheduler thread's CPU and the host's steal. Budgets are charged
/// by the clock, so both come out of each domain in proportion to its budget (on a machine
/// whose scheduler thread costs 5 % of the core, a 30 % domain has about 28.5 %).
pub fn expected_share(budget_percent: f64, host: &HostResults, duration_ns: u64) -> f64 {
    let taken = (host.scheduler_cpu_ns + host.steal_ns) as f64 / duration_ns as f64;
    budget_percent * (1.0 - taken)
}

pub fn options(duration: Nanos) -> HostOptions {
    HostOptions::new(
        HelperCommand::this_program().expect("this test binary"),
        duration,
    )
}

pub fn run(system: &SystemSpec, duration: Nanos, backend: Backend) -> HostRun {
    let mut options = options(duration);
    options.backend = backend;
    executor::run(system, "test", 1, options).unwrap_or_else(|e| panic!("host run: {e}"))
}

/// The stand-alone executor (`__run POLICY BACKEND MILLISECONDS [best-effort]`): runs
/// [`twenty_percent`] and prints its summary; exit 0, 1 (failed) or 2 (refused, the
/// message on stderr).
pub fn run_executor(args: &[String]) -> ExitCode {
    let (policy, backend, millis, best_effort) = match args {
        [p, b, m] => (p, b, m, false),
        [p, b, m, flag] if flag == "best-effort" => (p, b, m, true),
        _ => {
            eprintln!("usage: {RUN_ARG} POLICY BACKEND MILLISECONDS [best-effort]");
            return ExitCode::from(2);
        }
    };
    let policy = PolicyKind::from_name(policy).expect("a policy");
    let backend = Backend::from_name(backend).expect("a backend");
    let mut options = options(ms(millis.parse().expect("milliseconds")));
    options.backend = backend;
    options.best_effort = best_effort;
    // The safety tests' fault injection (never a user's).
    if let Ok(at) = std::env::var(PANIC_AT_ENV) {
        options.test_panic_at = Some(ms(at.parse().expect("milliseconds")));
    }
    options.carry_on_without_watchdog = std::env::var_os(CARRY_ON_ENV).is_some();
    if let Ok(after) = std::env::var(LEADER_EXIT_ENV) {
        let after = Duration::from_millis(after.parse().expect("milliseconds"));
        let system = twenty_percent(policy);
        std::thread::spawn(move || {
            let _ = executor::run(&system, "test", 1, options);
        });
        std::thread::sleep(after);
        // SAFETY: `exit` (not `exit_group`) ends the calling thread only, on purpose: the
        // process lives on without its leader, as one does mid-way through being killed.
        unsafe { libc::syscall(libc::SYS_exit, 0) };
        unreachable!("the leader exited");
    }
    match executor::run(&twenty_percent(policy), "test", 1, options) {
        Ok(run) => {
            print!("{}", run.results.summary());
            println!("{}", run.results.to_json());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(if e.is_bad_input() { 2 } else { 1 })
        }
    }
}

/// The stand-alone executor of a scenario file: runs it, prints its summary.
pub fn run_file_executor(args: &[String]) -> ExitCode {
    let [file, backend, millis] = args else {
        eprintln!("usage: {RUN_FILE_ARG} FILE BACKEND MILLISECONDS");
        return ExitCode::from(2);
    };
    let scenario = rtvmm_scenario::Scenario::load(file).expect("a valid scenario");
    let mut options = options(ms(millis.parse().expect("milliseconds")));
    options.backend = Backend::from_name(backend).expect("a backend");
    options.external = scenario.external.clone();
    match executor::run(&scenario.system, "test", 1, options) {
        Ok(run) => {
            print!("{}", run.results.summary());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}

/// The RT throttling setting before any test ran (read once).
pub fn rt_runtime_at_start() -> String {
    static AT_START: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    AT_START
        .get_or_init(|| {
            std::fs::read_to_string(sys::RT_RUNTIME_PATH)
                .unwrap_or_default()
                .trim()
                .to_string()
        })
        .clone()
}

/// What a run may have left behind: rtvmm cgroups, a changed RT throttling setting,
/// threads named `rtvmm-*` (guest task threads, the IDLE spinner, the scheduler thread)
/// anywhere on the machine, with their scheduling class, and run records.
pub fn leftovers() -> Vec<String> {
    let mut found = Vec::new();
    if let Some(mount) = sys::cgroup2_mount() {
        if let Ok(entries) = std::fs::read_dir(&mount) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with("rtvmm-") {
                    found.push(format!("cgroup {}", e.path().display()));
                }
            }
        }
    }
    let now = std::fs::read_to_string(sys::RT_RUNTIME_PATH)
        .unwrap_or_default()
        .trim()
        .to_string();
    if now != rt_runtime_at_start() {
        found.push(format!(
            "sched_rt_runtime_us is {now}, was {}",
            rt_runtime_at_start()
        ));
    }
    found.extend(rtvmm_threads());
    found.extend(
        run_records()
            .iter()
            .map(|r| format!("record {}", r.display())),
    );
    found
}

/// The run records in the state directory (`rtvmm_host::runs`).
pub fn run_records() -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(rtvmm_host::runs::STATE_DIR) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "state"))
        .collect()
}

/// Every thread on the machine named `rtvmm-*` that a run of these tests started, as
/// `pid/tid name policy`: in this test binary's processes (the runs' own threads, and the
/// guests and watchdogs it re-executes) — not another program that happens to be called
/// `rtvmm-…` (another build of rtvmm someone runs on this machine).
pub fn rtvmm_threads() -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let mut found = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return found;
    };
    let file = |path: std::path::PathBuf| std::fs::metadata(path).map(|m| (m.dev(), m.ino()));
    let this_binary = file("/proc/self/exe".into()).ok();
    for p in procs.flatten() {
        let Ok(pid) = p.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        // A process whose program is known and another one's is not a run's.
        if let (Some(this), Ok(its)) = (this_binary, file(p.path().join("exe"))) {
            if its != this {
                continue;
            }
        }
        let Ok(tasks) = std::fs::read_dir(p.path().join("task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
            let comm = comm.trim();
            if comm.starts_with("rtvmm-") {
                let tid: i32 = t.file_name().to_string_lossy().parse().unwrap_or(0);
                let policy = sys::policy_of(tid)
                    .map(|(p, prio)| format!("policy {p} prio {prio}"))
                    .unwrap_or_default();
                found.push(format!("thread {pid}/{tid} {comm} {policy}"));
            }
        }
    }
    found
}

/// Waits up to `seconds` for `done`, polling.
pub fn eventually(seconds: u64, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + std::time::Duration::from_secs(seconds);
    while Instant::now() < deadline {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    done()
}

/// The run's cgroup of executor `pid`, if cgroup v2 is mounted.
pub fn run_cgroup(pid: u32) -> Option<std::path::PathBuf> {
    sys::cgroup2_mount().map(|m| m.join(format!("rtvmm-{pid}")))
}

pub fn exists(path: &Option<std::path::PathBuf>) -> bool {
    path.as_deref().is_some_and(Path::exists)
}

/// The run's worst timer wake-up lateness plus 100 µs: how late a timed event may be
/// recorded in a real run.
pub fn late(run: &HostRun) -> u64 {
    let host = run.results.host.as_ref().expect("a host section");
    host.tick_lateness_ns.max + 100_000
}

/// Every replenishment of VCPU 0 in the run's trace: (instant in ns, new budget).
pub fn replenishments(run: &HostRun) -> Vec<(u64, Nanos)> {
    let (events, _) = run.trace.as_ref().expect("a trace");
    events
        .iter()
        .filter_map(|(at, e)| match e {
            rtvmm_system::records::TraceEvent::Core(rtvmm_core::event::CoreEvent::Replenish {
                vcpu,
                budget,
            }) if *vcpu == rtvmm_core::model::VcpuId(0) => Some((at.as_ns(), *budget)),
            _ => None,
        })
        .collect()
}
