//! Whole command lines: the built `rtvmm` binary on generated inputs, each invocation under
//! a wall-clock timeout.
//!
//! The in-process checks ([`crate::scenario`], …) call the libraries; this mode runs what a
//! person runs, so that it also sees what only the binary does (flag parsing, output files,
//! exit codes, the analysis front-end's printing) and costs that only show at the command
//! line. For one scenario text ([`check`]):
//!
//! 1. `rtvmm check FILE` — exit 0 (accepted) or 2 (refused); nothing else;
//! 2. if accepted: `rtvmm sim FILE --duration D --json J --trace T.csv` — exit 0, and the
//!    trace is well formed ([`check_trace_csv`]: the header, times non-decreasing, every
//!    switch naming its pcpu, and its VCPU and domain together or neither, …);
//! 3. `rtvmm check --admit FILE` — exit 0 or 2; when 0, every domain is guaranteed, so the
//!    run of step 2 has no deadline miss (analysis against simulation);
//! 4. `rtvmm analyze FILE` — exit 0 or 2; with `--emit scenario E.toml` the emitted file is
//!    checked and simulated in turn (steps 1 and 2);
//!
//! and for generator arguments ([`check_gen`]) `rtvmm gen …` (exit 0 or 2; the file it
//! writes checks and simulates). Every invocation: an exit code of 0, 1 or 2 (a panic is
//! 101, an abort 134, a signal none: each a failure), no `panicked at` on stderr, and no run
//! past its timeout: the process is killed and the input saved to a file
//! ([`Cli::hangs`]), whose path the failure names.
//!
//! The binary is `RTVMM_FUZZ_BIN`, else the workspace's `target/release/rtvmm` or
//! `target/debug/rtvmm`, whichever is newer ([`Cli::from_env`]).

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::{Checked, Failure, FailureKind, Outcome};

/// Simulated time of each `sim`: short, since generated scenarios may tick every nanosecond.
pub const SIM_DURATION: &str = "20ms";

/// Wall-clock limit of one invocation, unless `RTVMM_FUZZ_CLI_TIMEOUT_SECS` says otherwise.
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// How to run the binary.
#[derive(Clone, Debug)]
pub struct Cli {
    pub binary: PathBuf,
    pub timeout: Duration,
    /// Where the inputs of hangs are saved (created when needed).
    pub hangs: PathBuf,
    /// Scratch directory of the invocations' files.
    pub scratch: PathBuf,
}

/// One finished invocation.
#[derive(Debug)]
pub struct Run {
    /// The exit code; `None` when a signal ended the process.
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Cli {
    /// The binary from `RTVMM_FUZZ_BIN` or the workspace's `target/`; `None` when there is
    /// none (build it with `cargo build --release --bin rtvmm`).
    pub fn from_env() -> Option<Cli> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let binary = match std::env::var_os("RTVMM_FUZZ_BIN") {
            Some(path) => PathBuf::from(path),
            None => {
                ["release", "debug"]
                    .iter()
                    .map(|profile| root.join("target").join(profile).join("rtvmm"))
                    .filter_map(|p| Some((p.metadata().ok()?.modified().ok()?, p)))
                    .max()?
                    .1
            }
        };
        let timeout = std::env::var("RTVMM_FUZZ_CLI_TIMEOUT_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .map_or(TIMEOUT, Duration::from_secs);
        let scratch = std::env::temp_dir().join(format!("rtvmm-fuzz-cli-{}", std::process::id()));
        Some(Cli {
            binary,
            timeout,
            hangs: root.join("target/fuzz-hangs"),
            scratch,
        })
    }

    /// Runs the binary with `args` under the timeout. A run past it is killed and reported
    /// as a hang, with `input` saved under [`Cli::hangs`].
    pub fn run(&self, args: &[&str], input: &str) -> Result<Run, Failure> {
        self.run_program(&self.binary, args, input)
    }

    /// [`Cli::run`] for any program (the tests time out a `sleep`).
    pub fn run_program(&self, program: &Path, args: &[&str], input: &str) -> Result<Run, Failure> {
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Failure::wrong(format!("cannot run {}: {e}", program.display())))?;
        // Drained on threads, so that a chatty child never blocks on a full pipe.
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut text = Vec::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_end(&mut text);
                }
                String::from_utf8_lossy(&text).into_owned()
            })
        };
        let stdout = drain(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let stderr = drain(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let started = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(status)) => break status,
                Ok(None) if started.elapsed() > self.timeout => {
                    let _ = child.kill();
                    let _ = child.wait();
                    let saved = self.save_hang(input);
                    return Err(Failure::new(
                        FailureKind::Hang,
                        format!(
                            "`{} {}` ran past {:?} and was killed; input saved to {}",
                            program.display(),
                            args.join(" "),
                            self.timeout,
                            saved
                        ),
                    ));
                }
                Ok(None) => std::thread::sleep(Duration::from_millis(2)),
                Err(e) => return Err(Failure::wrong(format!("waiting for the child: {e}"))),
            }
        };
        Ok(Run {
            code: status.code(),
            stdout: stdout.join().unwrap_or_default(),
            stderr: stderr.join().unwrap_or_default(),
        })
    }

    /// Saves a hang's input; returns where (or why it could not).
    fn save_hang(&self, input: &str) -> String {
        static SAVED: AtomicU64 = AtomicU64::new(0);
        let n = SAVED.fetch_add(1, Ordering::Relaxed);
        let path = self
            .hangs
            .join(format!("hang-{}-{n}.txt", std::process::id()));
        match std::fs::create_dir_all(&self.hangs).and_then(|_| std::fs::write(&path, input)) {
            Ok(()) => path.display().to_string(),
            Err(e) => format!("nowhere ({}: {e})", path.display()),
        }
    }

    /// A fresh scratch file name for this thread's case.
    fn scratch_file(&self, stem: &str, extension: &str) -> PathBuf {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        self.scratch.join(format!("{stem}-{n}.{extension}"))
    }
}

/// The one [`Cli`] of the process (`None`: no binary found).
pub fn cli() -> Option<&'static Cli> {
    static CLI: OnceLock<Option<Cli>> = OnceLock::new();
    CLI.get_or_init(Cli::from_env).as_ref()
}

/// What every invocation must show: an exit code in `allowed`, and no panic message.
fn expect_code(args: &[&str], run: &Run, allowed: &[i32]) -> Result<i32, Failure> {
    let what = format!("`rtvmm {}`", args.join(" "));
    if run.stderr.contains("panicked at") {
        return Err(Failure::wrong(format!(
            "{what} panicked: {}",
            run.stderr.trim()
        )));
    }
    match run.code {
        Some(code) if allowed.contains(&code) => Ok(code),
        code => Err(Failure::wrong(format!(
            "{what} exited with {code:?} (allowed {allowed:?}); stderr: {}",
            run.stderr.trim()
        ))),
    }
}

/// The CLI checks of one scenario text (see the module's note), with the process's
/// [`cli`]. Refused when no binary was found.
pub fn check(input: &str) -> Checked {
    let Some(cli) = cli() else {
        return Ok(Outcome::Refused);
    };
    check_with(cli, input)
}

/// [`check`] with a given [`Cli`].
pub fn check_with(cli: &Cli, input: &str) -> Checked {
    std::fs::create_dir_all(&cli.scratch)
        .map_err(|e| Failure::wrong(format!("scratch directory: {e}")))?;
    let file = cli.scratch_file("in", "toml");
    std::fs::write(&file, input).map_err(|e| Failure::wrong(format!("scratch file: {e}")))?;
    let _files = Files(vec![file.clone()]);
    scenario_steps(cli, &file, input, true)
}

/// Removes its files when dropped.
struct Files(Vec<PathBuf>);

impl Drop for Files {
    fn drop(&mut self) {
        for f in &self.0 {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// Steps 1–4 of the module's note on the scenario `file` (whose text is `input`); step 4
/// only when `analyze` (an emitted scenario is not analysed again).
fn scenario_steps(cli: &Cli, file: &Path, input: &str, analyze: bool) -> Checked {
    let path = file.to_str().expect("a UTF-8 scratch path");
    let args = ["check", path];
    if expect_code(&args, &cli.run(&args, input)?, &[0, 2])? == 2 {
        return Ok(Outcome::Refused);
    }
    let json = cli.scratch_file("run", "json");
    let trace = cli.scratch_file("trace", "csv");
    let outputs = Files(vec![json.clone(), trace.clone()]);
    let (json_path, trace_path) = (
        json.to_str().expect("UTF-8"),
        trace.to_str().expect("UTF-8"),
    );
    let args = [
        "sim",
        path,
        "--duration",
        SIM_DURATION,
        "--json",
        json_path,
        "--trace",
        trace_path,
    ];
    let run = cli.run(&args, input)?;
    expect_code(&args, &run, &[0])?;
    let trace_text = std::fs::read_to_string(&trace)
        .map_err(|e| Failure::wrong(format!("`sim` wrote no readable trace: {e}")))?;
    check_trace_csv(&trace_text)?;
    let results = std::fs::read_to_string(&json)
        .map_err(|e| Failure::wrong(format!("`sim` wrote no readable JSON: {e}")))?;
    let args = ["check", "--admit", path];
    if expect_code(&args, &cli.run(&args, input)?, &[0, 2])? == 0 {
        let missed = total_missed(&results)?;
        if missed != 0 {
            return Err(Failure::wrong(format!(
                "`check --admit` guaranteed every domain, but `sim --duration {SIM_DURATION}` \
                 missed {missed} deadlines"
            )));
        }
    }
    drop(outputs);
    if !analyze {
        return Ok(Outcome::Accepted);
    }
    let args = ["analyze", path];
    expect_code(&args, &cli.run(&args, input)?, &[0, 2])?;
    let emitted = cli.scratch_file("emitted", "toml");
    let _emitted_file = Files(vec![emitted.clone()]);
    let emitted_path = emitted.to_str().expect("UTF-8");
    let args = ["analyze", path, "--emit", "scenario", emitted_path];
    if expect_code(&args, &cli.run(&args, input)?, &[0, 2])? == 0 {
        let text = std::fs::read_to_string(&emitted)
            .map_err(|e| Failure::wrong(format!("`analyze --emit scenario` wrote no file: {e}")))?;
        match scenario_steps(cli, &emitted, &text, false)? {
            Outcome::Accepted => {}
            Outcome::Refused => {
                return Err(Failure::wrong(format!(
                    "`rtvmm check` refuses the scenario `analyze --emit scenario` wrote:\n{text}"
                )))
            }
        }
    }
    Ok(Outcome::Accepted)
}

/// The run's total deadline misses, from `sim --json`'s `missed`.
fn total_missed(results: &str) -> Result<u64, Failure> {
    let value: serde_json::Value = serde_json::from_str(results)
        .map_err(|e| Failure::wrong(format!("`sim --json` wrote invalid JSON: {e}")))?;
    value["missed"]
        .as_u64()
        .ok_or_else(|| Failure::wrong("`sim --json` has no `missed` count"))
}

/// `rtvmm gen` with `args` (the generator's kind and flags, no `--out`): exit 0 or 2; when
/// 0, the scenario it wrote passes the scenario steps (without the analysis).
pub fn check_gen(cli: &Cli, args: &[String]) -> Checked {
    std::fs::create_dir_all(&cli.scratch)
        .map_err(|e| Failure::wrong(format!("scratch directory: {e}")))?;
    let out = cli.scratch_file("gen", "toml");
    let _out_file = Files(vec![out.clone()]);
    let mut full: Vec<&str> = vec!["gen"];
    full.extend(args.iter().map(String::as_str));
    full.extend(["--out", out.to_str().expect("UTF-8")]);
    let input = args.join(" ");
    if expect_code(&full, &cli.run(&full, &input)?, &[0, 2])? == 2 {
        return Ok(Outcome::Refused);
    }
    let text = std::fs::read_to_string(&out)
        .map_err(|e| Failure::wrong(format!("`rtvmm gen {input}` wrote no file: {e}")))?;
    match scenario_steps(cli, &out, &text, false)? {
        Outcome::Accepted => Ok(Outcome::Accepted),
        Outcome::Refused => Err(Failure::wrong(format!(
            "`rtvmm check` refuses what `rtvmm gen {input}` wrote"
        ))),
    }
}

/// The trace kinds of the CSV format (`docs/guests.md`, "Traces").
const KINDS: [&str; 11] = [
    "switch",
    "resume",
    "overhead",
    "wake",
    "block",
    "budget_exhausted",
    "replenish",
    "budget_discarded",
    "release",
    "run",
    "finish",
];

/// A `sim --trace FILE.csv` trace is well formed: the header, then rows of eight fields
/// with non-decreasing `time_ns` and a known `kind`; a `switch` or `resume` names its pcpu
/// and has a VCPU exactly when it has a domain (IDLE: neither), a switch's detail says
/// `from=<vcpu or idle>;reason=<why>`; VCPU events name their VCPU and domain; job events
/// their domain, task and job; a `run` ends at or after it starts; a `finish` says
/// `missed=true` or `missed=false`.
pub fn check_trace_csv(text: &str) -> Result<(), Failure> {
    let bad = |line: usize, what: String| Failure::wrong(format!("trace line {line}: {what}"));
    let rows = parse_csv(text).map_err(|e| Failure::wrong(format!("trace: {e}")))?;
    let mut rows = rows.into_iter().enumerate().map(|(i, r)| (i + 1, r));
    let header = rows.next().map(|(_, r)| r);
    if header.as_deref()
        != Some(
            &[
                "time_ns", "kind", "pcpu", "vcpu", "domain", "task", "job", "detail",
            ]
            .map(String::from)[..],
        )
    {
        return Err(Failure::wrong(format!("trace header is {header:?}")));
    }
    let mut last = 0u64;
    for (line, row) in rows {
        let [time, kind, pcpu, vcpu, domain, task, job, detail] = &row[..] else {
            return Err(bad(line, format!("{} fields, not 8: {row:?}", row.len())));
        };
        let time: u64 = time
            .parse()
            .map_err(|_| bad(line, format!("time_ns '{time}'")))?;
        if time < last {
            return Err(bad(line, format!("time {time} before {last}")));
        }
        last = time;
        if !KINDS.contains(&kind.as_str()) {
            return Err(bad(line, format!("unknown kind '{kind}'")));
        }
        let number = |field: &str, what: &str| -> Result<(), Failure> {
            field
                .parse::<u64>()
                .map(|_| ())
                .map_err(|_| bad(line, format!("{kind}: {what} '{field}' is not a number")))
        };
        match kind.as_str() {
            "switch" | "resume" | "overhead" => {
                number(pcpu, "pcpu")?;
                if vcpu.is_empty() != domain.is_empty() {
                    return Err(bad(
                        line,
                        format!("{kind}: vcpu '{vcpu}' and domain '{domain}' not both given"),
                    ));
                }
                if !vcpu.is_empty() {
                    number(vcpu, "vcpu")?;
                }
                if kind == "switch" {
                    let from = detail
                        .strip_prefix("from=")
                        .and_then(|d| d.split_once(";reason="))
                        .filter(|(from, reason)| {
                            (*from == "idle" || from.parse::<u64>().is_ok()) && !reason.is_empty()
                        });
                    if from.is_none() {
                        return Err(bad(line, format!("switch detail '{detail}'")));
                    }
                }
            }
            "wake" | "block" | "budget_exhausted" | "replenish" | "budget_discarded" => {
                number(vcpu, "vcpu")?;
                if domain.is_empty() {
                    return Err(bad(line, format!("{kind} of vcpu {vcpu} names no domain")));
                }
            }
            _ => {
                number(job, "job")?;
                if domain.is_empty() || task.is_empty() {
                    return Err(bad(line, format!("{kind} names no domain or task")));
                }
                if kind == "run" {
                    let end: u64 = detail
                        .strip_prefix("end_ns=")
                        .and_then(|e| e.parse().ok())
                        .ok_or_else(|| bad(line, format!("run detail '{detail}'")))?;
                    if end < time {
                        return Err(bad(line, format!("run ends at {end}, before {time}")));
                    }
                }
                if kind == "finish" && detail != "missed=true" && detail != "missed=false" {
                    return Err(bad(line, format!("finish detail '{detail}'")));
                }
            }
        }
    }
    Ok(())
}

/// RFC 4180 records (quoted fields may hold commas, quotes and line breaks). A first line
/// `# partial: …` is skipped (a run stopped early; the fuzzer's runs are never stopped).
fn parse_csv(text: &str) -> Result<Vec<Vec<String>>, String> {
    let mut records = Vec::new();
    let mut record = Vec::new();
    let mut field = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    let mut at_field_start = true;
    while let Some(c) = chars.next() {
        if quoted {
            match c {
                '"' if chars.peek() == Some(&'"') => {
                    chars.next();
                    field.push('"');
                }
                '"' => quoted = false,
                c => field.push(c),
            }
            continue;
        }
        match c {
            '"' if at_field_start => {
                quoted = true;
                at_field_start = false;
            }
            '"' => return Err(format!("a quote inside an unquoted field: {field}\"")),
            ',' => {
                record.push(std::mem::take(&mut field));
                at_field_start = true;
            }
            '\n' => {
                record.push(std::mem::take(&mut field));
                records.push(std::mem::take(&mut record));
                at_field_start = true;
            }
            c => {
                field.push(c);
                at_field_start = false;
            }
        }
    }
    if quoted {
        return Err("a quoted field runs to the end".to_string());
    }
    if !field.is_empty() || !record.is_empty() {
        return Err("the last line has no line break".to_string());
    }
    if records
        .first()
        .is_some_and(|r| r.len() == 1 && r[0].starts_with("# partial"))
    {
        return Err("the trace is marked partial".to_string());
    }
    Ok(records)
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: &str = "time_ns,kind,pcpu,vcpu,domain,task,job,detail\n";

    fn trace(rows: &str) -> String {
        format!("{HEADER}{rows}")
    }

    #[test]
    fn a_well_formed_trace_passes() {
        let t = trace(
            "0,release,,,\"a,b\",t,0,\n\
             0,wake,,0,\"a,b\",,,\n\
             0,switch,0,0,\"a,b\",,,from=idle;reason=wake\n\
             0,run,,,\"a,b\",t,0,end_ns=5\n\
             5,finish,,,\"a,b\",t,0,missed=false\n\
             5,switch,0,,,,,from=0;reason=block\n",
        );
        assert_eq!(check_trace_csv(&t), Ok(()));
    }

    #[test]
    fn broken_traces_fail() {
        for rows in [
            // time goes back
            "5,wake,,0,a,,,\n4,block,,0,a,,,\n",
            // a switch to a VCPU without its domain
            "0,switch,0,0,,,,from=idle;reason=wake\n",
            // a switch without its pcpu
            "0,switch,,0,a,,,from=idle;reason=wake\n",
            // a switch's detail without a reason
            "0,switch,0,0,a,,,from=idle\n",
            // a VCPU event without its domain
            "0,wake,,0,,,,\n",
            // a run that ends before it starts
            "7,run,,,a,t,0,end_ns=5\n",
            "0,finish,,,a,t,0,missed=maybe\n",
            "0,teleport,,,,,,\n",
            "0,wake,,0,a\n",
        ] {
            assert!(check_trace_csv(&trace(rows)).is_err(), "{rows}");
        }
        assert!(check_trace_csv("time_ns,kind\n").is_err());
        assert!(check_trace_csv(&format!("# partial: SIGINT\n{HEADER}")).is_err());
    }

    #[test]
    fn a_run_past_the_timeout_is_killed_and_its_input_saved() {
        let dir = std::env::temp_dir().join(format!("rtvmm-fuzz-cli-test-{}", std::process::id()));
        let cli = Cli {
            binary: PathBuf::from("/bin/sleep"),
            timeout: Duration::from_millis(200),
            hangs: dir.join("hangs"),
            scratch: dir.join("scratch"),
        };
        let started = Instant::now();
        let failure = cli.run(&["30"], "the input").expect_err("a hang");
        assert!(started.elapsed() < Duration::from_secs(10));
        assert_eq!(failure.kind, FailureKind::Hang);
        let saved = failure
            .message
            .rsplit("input saved to ")
            .next()
            .expect("a path");
        assert_eq!(std::fs::read_to_string(saved).expect("saved"), "the input");
        let quick = cli.run(&["0"], "").expect("no hang");
        assert_eq!(quick.code, Some(0));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn panics_and_stray_exit_codes_fail() {
        let run = |code, stderr: &str| Run {
            code,
            stdout: String::new(),
            stderr: stderr.to_string(),
        };
        assert!(expect_code(&["sim"], &run(Some(0), ""), &[0]).is_ok());
        assert!(expect_code(&["sim"], &run(Some(101), ""), &[0, 2]).is_err());
        assert!(expect_code(&["sim"], &run(None, ""), &[0, 2]).is_err());
        assert!(expect_code(&["sim"], &run(Some(2), "thread 'main' panicked at x"), &[2]).is_err());
    }
}
