//! The README's commands run as shown.
//!
//! The convention, which the README states at its end: in a fenced block whose info string
//! is `console`, a line that starts with `$ rtvmm ` is a command; the lines after it, up to
//! the next line starting with `$ `, are what it prints (a line `…` stands for lines left
//! out). A command must exit with 0, unless the next command of the block is `$ echo $?`,
//! whose one line of output is then the status expected. The first output line shown, if
//! it is not `…`, must be a line of what the command prints (stdout or stderr). Commands
//! run with the built binary in a scratch directory holding a copy of `examples/`, so the
//! files they write go nowhere near the repository. The arguments are split at spaces:
//! no quotes, pipes or redirections in a README command.

use std::path::{Path, PathBuf};
use std::process::Command;

/// One `$ rtvmm …` line of the README and what the README says about its result.
#[derive(Debug, PartialEq, Eq)]
struct Shown {
    /// 1-based line in README.md.
    line: usize,
    /// The arguments after `rtvmm`.
    args: Vec<String>,
    /// The exit status the README implies.
    status: i32,
    /// The first output line the README shows, unless none or `…`.
    first_line: Option<String>,
}

/// Every `$ rtvmm …` command of `console` blocks in `text`.
fn commands(text: &str) -> Vec<Shown> {
    let mut found = Vec::new();
    let mut in_console = false;
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if let Some(info) = line.trim_start().strip_prefix("```") {
            in_console = !in_console && info.trim() == "console";
            continue;
        }
        let Some(rest) = line.strip_prefix("$ rtvmm ").filter(|_| in_console) else {
            continue;
        };
        assert!(
            !rest.contains(['"', '\'', '|', '>', '<', '&', ';', '#']),
            "README.md:{}: a README command has no quotes, pipes, redirections or \
             comments (the test splits it at spaces): {line}",
            i + 1
        );
        // What the README shows after the command, up to the next `$ ` line or the fence.
        let output: Vec<&str> = lines[i + 1..]
            .iter()
            .take_while(|l| !l.starts_with("$ ") && !l.trim_start().starts_with("```"))
            .copied()
            .collect();
        let next = lines.get(i + 1 + output.len()).copied().unwrap_or("");
        let status = if next == "$ echo $?" {
            let shown = lines.get(i + 2 + output.len()).copied().unwrap_or("");
            shown.trim().parse().unwrap_or_else(|_| {
                panic!(
                    "README.md:{}: `$ echo $?` must be followed by a status, not {shown:?}",
                    i + 2 + output.len()
                )
            })
        } else {
            0
        };
        found.push(Shown {
            line: i + 1,
            args: rest.split_whitespace().map(String::from).collect(),
            status,
            first_line: output
                .first()
                .filter(|l| l.trim() != "…" && !l.trim().is_empty())
                .map(|l| l.trim_end().to_string()),
        });
    }
    found
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Runs each command in `scratch` and returns what went wrong, one line each.
fn check(shown: &[Shown], scratch: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for c in shown {
        let output = Command::new(env!("CARGO_BIN_EXE_rtvmm"))
            .args(&c.args)
            .current_dir(scratch)
            .output()
            .expect("run rtvmm");
        let printed = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        let command = format!("README.md:{}: `rtvmm {}`", c.line, c.args.join(" "));
        if output.status.code() != Some(c.status) {
            problems.push(format!(
                "{command}: exit status {:?}, the README implies {}; it printed:\n{printed}",
                output.status.code(),
                c.status
            ));
        } else if let Some(first) = &c.first_line {
            if !printed.lines().any(|l| l.trim_end() == first) {
                problems.push(format!(
                    "{command}: the README shows the line {first:?}, which it does not \
                     print; it printed:\n{printed}"
                ));
            }
        }
    }
    problems
}

fn readme() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("README.md");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn every_rtvmm_command_of_the_readme_runs_as_shown() {
    let shown = commands(&readme());
    assert!(
        shown.len() >= 5,
        "the README's tour shows rtvmm commands: {shown:?}"
    );
    assert!(
        shown.iter().any(|c| c.status != 0),
        "the README shows a command that fails, with its status"
    );
    let scratch = tempfile::tempdir().unwrap();
    copy_dir(
        &PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples"),
        &scratch.path().join("examples"),
    );
    let problems = check(&shown, scratch.path());
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn the_convention_reads_commands_statuses_and_first_lines() {
    let text = "intro\n\
        ```sh\n$ rtvmm not-in-console\n```\n\
        ```console\n\
        $ cargo run --release -- demo\nhello\n\
        $ rtvmm policies\ndeferrable (ds)    Deferrable Server\n…\n\
        $ rtvmm check bad.toml\nrtvmm: error: bad\n$ echo $?\n2\n\
        $ rtvmm experiment list\n…\n\
        ```\n";
    let shown = commands(text);
    assert_eq!(
        shown,
        vec![
            Shown {
                line: 8,
                args: vec!["policies".into()],
                status: 0,
                first_line: Some("deferrable (ds)    Deferrable Server".into()),
            },
            Shown {
                line: 11,
                args: vec!["check".into(), "bad.toml".into()],
                status: 2,
                first_line: Some("rtvmm: error: bad".into()),
            },
            Shown {
                line: 15,
                args: vec!["experiment".into(), "list".into()],
                status: 0,
                first_line: None,
            },
        ]
    );
}

/// The test can fail: a misspelt command, a wrong status and a line the program does not
/// print are each reported.
#[test]
fn a_misspelt_command_a_wrong_status_and_a_wrong_line_are_caught() {
    let text = "```console\n\
        $ rtvmm polices\n\
        $ rtvmm policies\n$ echo $?\n2\n\
        $ rtvmm policies\nnot a policy line\n\
        $ rtvmm policies\ndeferrable (ds)    Deferrable Server: budget kept while idle, set to B at each period (RT-Xen 2011)\n\
        ```\n";
    let scratch = tempfile::tempdir().unwrap();
    let problems = check(&commands(text), scratch.path());
    assert_eq!(problems.len(), 3, "{problems:#?}");
    assert!(problems[0].contains("`rtvmm polices`: exit status Some(2)"));
    assert!(problems[1].contains("the README implies 2"));
    assert!(problems[2].contains("\"not a policy line\""));
}
