//! What the binary's test modules share: run `rtvmm`, read its output, find the examples.
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};

pub fn rtvmm(args: &[&str]) -> Output {
    rtvmm_env(args, &[])
}

/// Runs `rtvmm` with extra environment variables.
pub fn rtvmm_env(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rtvmm"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run rtvmm")
}

/// Asserts that an error message says each thing once: no cause repeated (`x: y: y`),
/// no OS error twice, no Rust type names.
pub fn assert_readable(message: &str) {
    for line in message.lines() {
        let parts: Vec<&str> = line.split(": ").collect();
        for pair in parts.windows(2) {
            assert_ne!(pair[0].trim(), pair[1].trim(), "repeated in: {line}");
        }
        assert!(
            line.matches("(os error").count() <= 1,
            "an OS error twice in: {line}"
        );
        for internal in [
            "expected struct",
            "expected i64",
            "expected u64",
            "Nanos(",
            "Some(",
            "IoError",
            "Custom {",
            "kind: ",
            "at path \"",
        ] {
            assert!(
                !line.contains(internal),
                "Rust internals ({internal}) in: {line}"
            );
        }
    }
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Asserts the exit code, showing the output when it is not the expected one.
pub fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        stdout(o),
        stderr(o)
    );
}

pub fn example(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples")
        .join(name)
        .display()
        .to_string()
}

pub fn examples() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

/// One real-time run at a time: this binary's tests run in parallel, and two executors
/// would share the managed cpu (and the RT-throttling setting).
pub static REAL_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Set to skip every real-time test on a machine shared with others (CI leaves it unset).
pub const SKIP_RT_TESTS: &str = "RTVMM_SKIP_RT_TESTS";

/// Prints why a real-time test is skipped and returns true when it must be:
/// `RTVMM_SKIP_RT_TESTS` is set (neither empty nor `0`), or this machine lacks the
/// privileges.
pub fn skip_real_time(test: &str) -> bool {
    if std::env::var_os(SKIP_RT_TESTS).is_some_and(|v| !v.is_empty() && v != "0") {
        say_skipped(&format!("{test}: {SKIP_RT_TESTS} is set"));
        return true;
    }
    let missing = rtvmm_host::sys::missing_privileges(&rtvmm_host::sys::Host, true);
    if missing.is_empty() {
        return false;
    }
    let reasons: Vec<String> = missing.iter().map(ToString::to_string).collect();
    say_skipped(&format!(
        "{test}: needs root, cgroup v2 and SCHED_FIFO: {}",
        reasons.join("; ")
    ));
    true
}

/// Says that a test is skipped and why, past the test harness's capture of `println!`
/// and `eprintln!` (which would hide it behind the passing test's `ok`), so that a run
/// without the privileges shows what it did not test.
pub fn say_skipped(why: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "skipped: {why}");
}

/// One hour at a 1 ns quantum: 3.6·10¹² ticks, days of wall-clock time.
pub const ONE_HOUR_AT_ONE_NANOSECOND: &str = r#"name = "fine"
duration = "3600s"
seed = 1
[machine]
quantum = "1ns"
[[domain]]
name = "d1"
vcpu = { budget = "2ms", period = "10ms" }
[[domain.task]]
name = "t1"
period = "50ms"
wcet = "5ms"
"#;

/// A run of days that is killed if the test fails before it is stopped: a failed
/// assertion must not leave the simulation running behind the test.
pub struct Reaped(pub Option<Child>);

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(child) = self.0.as_mut() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs a command to its end: its output, or why it could not start (the tests that set
/// up tools of their own: Python, Slurm).
pub fn run(command: &mut Command) -> Result<Output, String> {
    command
        .output()
        .map_err(|e| format!("{:?}: {e}", command.get_program()))
}

/// A command's stdout and stderr, one after the other.
pub fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}
