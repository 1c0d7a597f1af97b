//! The Python package's tests (`crates/py/tests`, pytest), from `cargo test`: a virtual
//! environment in the target directory (`target/tmp/python/venv`) with maturin (pinned),
//! pytest, pandas and matplotlib; the wheel built from this checkout, installed; pytest
//! run against it and this build of the `rtvmm` binary (`RTVMM_BIN`), its output the
//! failure message — twice: as installed, then with pandas and matplotlib hidden
//! (`RTVMM_TEST_WITHOUT`), the tables as lists and docs/python.md's plot skipped.
//!
//! Skipped, with a `skipped: python: …` line saying why, when there is no Python 3.8 or
//! later with `venv`, when pip cannot install the tools (no network), or when
//! `RTVMM_SKIP_PYTHON_TESTS` is set. The environment is kept between runs: pip runs again
//! only when [`REQUIREMENTS`] change.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use crate::common::{run, say_skipped, text};

/// What the environment gets; maturin pinned so that the wheel is built the same way
/// everywhere. pandas and matplotlib are optional (the tests of the tables without pandas
/// and of docs/python.md's plot skip, saying so, if they do not install).
const REQUIREMENTS: &[&str] = &["maturin==1.15.0", "pytest>=7,<10"];
const OPTIONAL: &[&str] = &["pandas", "matplotlib"];

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Where the environment and the wheel live: `target/tmp/python`.
fn work_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("python")
}

/// The last `lines` lines of `text`.
fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// The interpreter to build the environment with (`RTVMM_PYTHON`, else `python3`), if it
/// is 3.8 or later.
fn python() -> Result<String, String> {
    let python = std::env::var("RTVMM_PYTHON").unwrap_or_else(|_| "python3".to_string());
    let output = run(
        Command::new(&python).args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
    )?;
    let version = String::from_utf8_lossy(&output.stdout).trim().to_string();
    let (major, minor) = version
        .split_once('.')
        .and_then(|(a, b)| Some((a.parse::<u32>().ok()?, b.parse::<u32>().ok()?)))
        .ok_or_else(|| format!("{python} did not say its version: {}", text(&output)))?;
    if (major, minor) < (3, 8) {
        return Err(format!(
            "{python} is {version}; the package needs 3.8 or later"
        ));
    }
    Ok(python)
}

/// The environment, made or brought up to date: its interpreter.
fn environment(python: &str) -> Result<PathBuf, String> {
    let venv = work_dir().join("venv");
    let bin = venv.join("bin").join("python");
    if !bin.exists() {
        let made = run(Command::new(python).args(["-m", "venv"]).arg(&venv))?;
        if !made.status.success() {
            let _ = std::fs::remove_dir_all(&venv);
            return Err(format!(
                "`{python} -m venv` failed (on Debian: apt-get install python3-venv): {}",
                tail(&text(&made), 3)
            ));
        }
    }
    // pip runs again only when the requirements change.
    let wanted = [REQUIREMENTS, OPTIONAL].concat().join("\n");
    let stamp = venv.join("rtvmm-requirements.txt");
    if std::fs::read_to_string(&stamp).ok().as_deref() != Some(wanted.as_str()) {
        let pip = |packages: &[&str]| {
            run(Command::new(&bin)
                .args([
                    "-m",
                    "pip",
                    "install",
                    "--quiet",
                    "--disable-pip-version-check",
                ])
                .args(["--only-binary", ":all:"])
                .args(packages))
        };
        let required = pip(REQUIREMENTS)?;
        if !required.status.success() {
            return Err(format!(
                "pip could not install {} (no network?): {}",
                REQUIREMENTS.join(" "),
                tail(&text(&required), 3)
            ));
        }
        // Optional: the tests that need them say so when they are missing.
        let optional = pip(OPTIONAL)?;
        if !optional.status.success() {
            eprintln!(
                "python: pip could not install {}: {}",
                OPTIONAL.join(" "),
                tail(&text(&optional), 3)
            );
        }
        std::fs::write(&stamp, &wanted).map_err(|e| format!("{}: {e}", stamp.display()))?;
    }
    Ok(bin)
}

/// The wheel of this checkout, built by maturin in the profile (debug or release) and the
/// target directory of this test, so that it reuses what `cargo test` compiled; installed.
fn install_wheel(python: &Path) -> Result<(), String> {
    let wheels = work_dir().join("wheels");
    let _ = std::fs::remove_dir_all(&wheels);
    let maturin = python.with_file_name("maturin");
    // The target directory and profile of this test binary's build.
    let target = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the target directory holds tmp/");
    let mut build = Command::new(&maturin);
    build
        .current_dir(repo())
        .args(["build", "--quiet", "--strip"])
        .args(["--manifest-path", "crates/py/Cargo.toml"])
        .arg("--target-dir")
        .arg(target)
        .arg("--out")
        .arg(&wheels);
    if !cfg!(debug_assertions) {
        build.arg("--release");
    }
    let built = run(&mut build)?;
    assert!(
        built.status.success(),
        "maturin build failed:\n{}",
        text(&built)
    );
    let wheel = std::fs::read_dir(&wheels)
        .map_err(|e| format!("{}: {e}", wheels.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .expect("maturin build wrote a wheel");
    let installed = run(Command::new(python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ])
        .args(["--no-deps", "--force-reinstall"])
        .arg(&wheel))?;
    assert!(
        installed.status.success(),
        "installing {} failed:\n{}",
        wheel.display(),
        text(&installed)
    );
    Ok(())
}

#[test]
fn pytest() {
    if std::env::var_os("RTVMM_SKIP_PYTHON_TESTS").is_some() {
        return say_skipped("python: RTVMM_SKIP_PYTHON_TESTS is set");
    }
    let started = Instant::now();
    let python = match python().and_then(|p| environment(&p)) {
        Ok(python) => python,
        Err(why) => return say_skipped(&format!("python: {why}")),
    };
    let ready = started.elapsed();
    if let Err(why) = install_wheel(&python) {
        return say_skipped(&format!("python: {why}"));
    }
    let built = started.elapsed();
    // Twice: as installed, then as on a machine without pandas and matplotlib.
    let mut said = Vec::new();
    for without in ["", "pandas,matplotlib"] {
        let tests = run(Command::new(&python)
            .current_dir(repo())
            .args([
                "-m",
                "pytest",
                "-q",
                "-rs",
                "-p",
                "no:cacheprovider",
                "crates/py/tests",
            ])
            .env("RTVMM_BIN", env!("CARGO_BIN_EXE_rtvmm"))
            .env("RTVMM_TEST_WITHOUT", without)
            .env("MPLBACKEND", "Agg"))
        .expect("pytest starts");
        let output = text(&tests);
        assert!(
            tests.status.success(),
            "pytest (RTVMM_TEST_WITHOUT={without:?}) failed:\n{output}"
        );
        said.push(output.lines().last().unwrap_or("").to_string());
    }
    // What it cost, and pytest's last lines (skips say why above them with `-rs`).
    let _ = writeln!(
        std::io::stderr(),
        "python: environment {:.1}s, wheel {:.1}s, pytest {:.1}s; {}",
        ready.as_secs_f64(),
        (built - ready).as_secs_f64(),
        (started.elapsed() - built).as_secs_f64(),
        said.join("; without pandas and matplotlib: ")
    );
}
