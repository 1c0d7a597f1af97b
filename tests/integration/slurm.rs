//! A study on a real Slurm: `tools/slurm/submit.sh` submits a 4-shard job array of
//! `rtxen-overhead --quick` and its merge to a one-node cluster started for the test, and
//! the merged directory must hold the unsharded run's bytes (but for report.md's wall-time
//! line); beside it, a 2-shard `rtvmm sweep` of four generated systems, whose merged table
//! must be the unsharded one's bytes.
//!
//! The cluster is private (docs/cluster.md#the-test): its `slurm.conf` (`SLURM_CONF`),
//! munge key and socket, state, spool, logs and pid files live in a temporary directory;
//! its daemons (`munged`, `slurmctld`, `slurmd`) run in the foreground as children of the
//! test, on free ports, and [`Cluster`]'s `Drop` cancels its jobs and stops them, failed
//! assertion or not. Missing programs are installed with apt (`slurmctld slurmd
//! slurm-client munge`, which leaves the package's own `/etc/munge/munge.key` behind).
//!
//! Skipped, with a `skipped: slurm: …` line saying why, when `RTVMM_SKIP_SLURM_TESTS` is
//! set, when the programs are missing and this is not root or has no apt-get, or when apt
//! cannot install them.

use std::fs::File;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{run, say_skipped, text};

/// The programs the test runs, and the Debian packages that hold them.
const PROGRAMS: &[&str] = &[
    "sbatch",
    "squeue",
    "scontrol",
    "scancel",
    "sinfo",
    "slurmctld",
    "slurmd",
    "munged",
    "mungekey",
];
const PACKAGES: &[&str] = &["slurmctld", "slurmd", "slurm-client", "munge"];

/// How long the cluster may take to come up, and the study to run (about a second each
/// here; the margins are for a loaded CI machine).
const START_TIMEOUT: Duration = Duration::from_secs(30);
const JOBS_TIMEOUT: Duration = Duration::from_secs(120);

const EXPERIMENT: &str = "rtxen-overhead";
const SHARDS: u32 = 4;

/// Where a program is: on PATH, or in the sbin directories a user's PATH may lack.
fn find(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin"), PathBuf::from("/sbin")])
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// A program the test needs, found by [`install`].
fn program(name: &str) -> PathBuf {
    find(name).unwrap_or_else(|| panic!("{name} is not installed"))
}

fn missing_programs() -> Vec<&'static str> {
    PROGRAMS
        .iter()
        .copied()
        .filter(|p| find(p).is_none())
        .collect()
}

fn is_root() -> bool {
    run(Command::new("id").arg("-u"))
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

/// Installs the packages when a program is missing: Ok(true) if it installed them. Root
/// only: the test's slurmd runs jobs as root.
fn install() -> Result<bool, String> {
    if !is_root() {
        return Err("not root (the test's slurmd runs as root)".to_string());
    }
    let missing = missing_programs();
    if missing.is_empty() {
        return Ok(false);
    }
    if find("apt-get").is_none() {
        return Err(format!("{} missing, and no apt-get", missing.join(", ")));
    }
    let apt = |args: &[&str]| {
        run(Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive"))
    };
    let install_args = [
        &["install", "-y", "-qq", "--no-install-recommends"],
        PACKAGES,
    ]
    .concat();
    let mut installed = apt(&install_args)?;
    if !installed.status.success() {
        // Stale package lists: update once and try again.
        apt(&["update", "-qq"])?;
        installed = apt(&install_args)?;
    }
    if !installed.status.success() {
        let said = text(&installed);
        let last: Vec<&str> = said.lines().rev().take(3).collect();
        return Err(format!(
            "apt-get could not install {}: {}",
            PACKAGES.join(" "),
            last.into_iter().rev().collect::<Vec<_>>().join(" / ")
        ));
    }
    match missing_programs().as_slice() {
        [] => Ok(true),
        still => Err(format!(
            "{} missing after apt-get install",
            still.join(", ")
        )),
    }
}

/// A port nobody listens on now (the kernel's choice), for a daemon to take.
fn free_port() -> u16 {
    std::net::TcpListener::bind("0.0.0.0:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The private one-node cluster: its directory and its daemons, stopped on drop.
struct Cluster {
    dir: tempfile::TempDir,
    daemons: Vec<(&'static str, Child)>,
    jobs: Vec<String>,
}

impl Cluster {
    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn conf(&self) -> PathBuf {
        self.path("slurm.conf")
    }

    /// A Slurm client command pointed at this cluster.
    fn slurm(&self, program: &str) -> Command {
        let mut command = Command::new(program);
        command.env("SLURM_CONF", self.conf());
        command
    }

    /// Starts a daemon in the foreground, its output to NAME.out.
    fn start(&mut self, name: &'static str, command: &mut Command) {
        let out = File::create(self.path(&format!("{name}.out"))).unwrap();
        let child = command
            .env("SLURM_CONF", self.conf())
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        self.daemons.push((name, child));
    }

    /// Every log and daemon output, for a failure message.
    fn logs(&self) -> String {
        let mut all = String::new();
        let mut names: Vec<PathBuf> = std::fs::read_dir(self.dir.path())
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .chain(
                std::fs::read_dir(self.path("study/out.shards"))
                    .into_iter()
                    .flatten()
                    .filter_map(|e| e.ok().map(|e| e.path())),
            )
            .filter(|p| p.extension().is_some_and(|x| x == "out" || x == "log"))
            .collect();
        names.sort();
        for name in names {
            let said = std::fs::read_to_string(&name).unwrap_or_default();
            let lines: Vec<&str> = said.lines().collect();
            let tail = lines[lines.len().saturating_sub(15)..].join("\n");
            all.push_str(&format!("--- {}\n{tail}\n", name.display()));
        }
        all
    }

    /// Waits for `done` to say Some, polling; panics with the logs after `timeout`.
    fn wait_for<T>(&self, what: &str, timeout: Duration, mut done: impl FnMut() -> Option<T>) -> T {
        let started = Instant::now();
        loop {
            if let Some(value) = done() {
                return value;
            }
            assert!(
                started.elapsed() < timeout,
                "slurm: no {what} after {timeout:?}:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// A job's state (`COMPLETED`, `PENDING`, …) as the controller reports it.
    fn job_state(&self, job: &str) -> Option<String> {
        let shown = run(self.slurm("scontrol").args(["show", "job", "-o", job])).ok()?;
        let said = String::from_utf8_lossy(&shown.stdout).into_owned();
        let state = said
            .split_whitespace()
            .find_map(|w| w.strip_prefix("JobState="))?;
        Some(state.to_string())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Jobs first, so that no slurmstepd outlives slurmd.
        if !self.jobs.is_empty() {
            let _ = run(self.slurm("scancel").args(&self.jobs));
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(10) {
                let queue = run(self.slurm("squeue").args(["-h", "-o", "%i"]));
                if queue.is_ok_and(|o| o.status.success() && o.stdout.is_empty()) {
                    break;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        // slurmd, slurmctld, munged: SIGTERM each, then SIGKILL if it lingers.
        for (_, child) in self.daemons.iter_mut().rev() {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .status();
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(5) {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Writes the private configuration and starts munged, slurmctld and slurmd; returns
/// when the node is idle.
fn start_cluster() -> Cluster {
    let mut cluster = Cluster {
        dir: tempfile::Builder::new()
            .prefix("rtvmm-slurm")
            .tempdir()
            .unwrap(),
        daemons: Vec::new(),
        jobs: Vec::new(),
    };
    for dir in ["munge", "state", "spool", "study"] {
        std::fs::create_dir(cluster.path(dir)).unwrap();
    }
    let (key, socket) = (
        cluster.path("munge/munge.key"),
        cluster.path("munge/munge.socket"),
    );
    let made = run(Command::new(program("mungekey"))
        .arg("--create")
        .arg(format!("--keyfile={}", key.display())))
    .unwrap();
    assert!(made.status.success(), "mungekey: {}", text(&made));
    let munge = |name: &str| format!("{}", cluster.path(&format!("munge/{name}")).display());
    let mut munged = Command::new(program("munged"));
    munged
        // --force: as root, with the socket in a private (0700) directory.
        .args(["--foreground", "--force"])
        .arg(format!("--key-file={}", key.display()))
        .arg(format!("--socket={}", socket.display()))
        .arg(format!("--pid-file={}", munge("munged.pid")))
        .arg(format!("--log-file={}", munge("munged.log")))
        .arg(format!("--seed-file={}", munge("munged.seed")));
    cluster.start("munged", &mut munged);
    cluster.wait_for("munge socket", START_TIMEOUT, || {
        socket.exists().then_some(())
    });

    // The node as slurmd sees this machine: `NodeName=HOST CPUs=… RealMemory=…`.
    let hardware = run(Command::new(program("slurmd")).arg("-C")).unwrap();
    let node = String::from_utf8_lossy(&hardware.stdout)
        .lines()
        .find(|l| l.starts_with("NodeName="))
        .unwrap_or_else(|| panic!("slurmd -C: {}", text(&hardware)))
        .to_string();
    let host = node["NodeName=".len()..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let d = |name: &str| cluster.path(name).display().to_string();
    let conf = format!(
        "# rtvmm's test cluster (tests/integration/slurm.rs): one node, this machine.
ClusterName=rtvmmtest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={socket}
StateSaveLocation={state}
SlurmdSpoolDir={spool}
SlurmctldPidFile={ctld_pid}
SlurmdPidFile={slurmd_pid}
SlurmctldLogFile={ctld_log}
SlurmdLogFile={slurmd_log}
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
ReturnToService=2
{node} NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP
",
        ctld_port = free_port(),
        slurmd_port = free_port(),
        socket = socket.display(),
        state = d("state"),
        spool = d("spool"),
        ctld_pid = d("slurmctld.pid"),
        slurmd_pid = d("slurmd.pid"),
        ctld_log = d("slurmctld.log"),
        slurmd_log = d("slurmd.log"),
    );
    std::fs::write(cluster.conf(), conf).unwrap();
    cluster.start("slurmctld", Command::new(program("slurmctld")).arg("-D"));
    cluster.start("slurmd", Command::new(program("slurmd")).arg("-D"));
    cluster.wait_for("idle node", START_TIMEOUT, || {
        let info = run(cluster.slurm("sinfo").args(["-h", "-o", "%T"])).ok()?;
        String::from_utf8_lossy(&info.stdout)
            .trim()
            .eq("idle")
            .then_some(())
    });
    cluster
}

/// The lines of report.md but its wall time, which differs between any two runs.
fn report_lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter(|l| !l.starts_with("- wall time: "))
        .map(String::from)
        .collect()
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn a_study_sharded_on_slurm_is_the_unsharded_run() {
    if std::env::var_os("RTVMM_SKIP_SLURM_TESTS").is_some() {
        return say_skipped("slurm: RTVMM_SKIP_SLURM_TESTS is set");
    }
    let started = Instant::now();
    let installed = match install() {
        Ok(installed) => installed,
        Err(why) => return say_skipped(&format!("slurm: {why}")),
    };
    let ready = started.elapsed();
    let mut cluster = start_cluster();
    let up = started.elapsed();

    let rtvmm = env!("CARGO_BIN_EXE_rtvmm");
    let study = cluster.path("study");
    let out = study.join("out");
    let submit = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/slurm/submit.sh");
    // The unsharded run, by the same binary, here, first to OUT: report.md names --out.
    let reference = study.join("reference");
    let unsharded = run(Command::new(rtvmm)
        .args([
            "experiment",
            EXPERIMENT,
            "--quick",
            "--no-progress",
            "--out",
        ])
        .arg(&out))
    .unwrap();
    assert!(unsharded.status.success(), "{}", text(&unsharded));
    std::fs::rename(&out, &reference).unwrap();
    // A sweep beside the study, on the same cluster: 4 generated systems in 2 shards.
    let systems = study.join("systems");
    let generated = run(Command::new(rtvmm)
        .args([
            "gen",
            "rtxen",
            "--count",
            "4",
            "--duration",
            "200ms",
            "--out",
        ])
        .arg(&systems))
    .unwrap();
    assert!(generated.status.success(), "{}", text(&generated));
    let sweep_reference = run(Command::new(rtvmm)
        .arg("sweep")
        .arg(&systems)
        .arg("--no-progress"))
    .unwrap();
    assert!(
        sweep_reference.status.success(),
        "{}",
        text(&sweep_reference)
    );
    let table = study.join("sweep.csv");

    let submit_study = |args: &[&std::ffi::OsStr]| -> (String, String, String) {
        let submitted = run(cluster
            .slurm("bash")
            .arg(&submit)
            .args(args)
            .env("RTVMM", rtvmm))
        .unwrap();
        let said = text(&submitted);
        assert!(submitted.status.success(), "submit.sh: {said}");
        let job_after = |label: &str| -> String {
            said.lines()
                .find_map(|l| l.strip_prefix(label))
                .and_then(|rest| rest.split_whitespace().next())
                .map(|id| id.trim_end_matches(',').to_string())
                .unwrap_or_else(|| panic!("no `{label}` in submit.sh's output: {said}"))
        };
        let (array, merge) = (job_after("shards: array job "), job_after("merge: job "));
        (array, merge, said)
    };
    let shards = SHARDS.to_string();
    let (array, merge, said) = submit_study(&[
        EXPERIMENT.as_ref(),
        shards.as_ref(),
        out.as_ref(),
        "--".as_ref(),
        "--quick".as_ref(),
    ]);
    let sweep_study = format!("sweep={}", systems.display());
    let (sweep_array, sweep_merge, sweep_said) =
        submit_study(&[sweep_study.as_ref(), "2".as_ref(), table.as_ref()]);
    cluster.jobs = vec![array, merge.clone(), sweep_array, sweep_merge.clone()];
    for (merge, said) in [(&merge, &said), (&sweep_merge, &sweep_said)] {
        let state = cluster.wait_for("merge job's end", JOBS_TIMEOUT, || {
            let state = cluster.job_state(merge)?;
            (!matches!(
                state.as_str(),
                "PENDING" | "RUNNING" | "CONFIGURING" | "COMPLETING"
            ))
            .then_some(state)
        });
        assert_eq!(
            state,
            "COMPLETED",
            "the merge job\n{said}\n{}",
            cluster.logs()
        );
    }
    let jobs = started.elapsed();

    assert_eq!(file_names(&reference), file_names(&out));
    for name in file_names(&reference) {
        let (want, got) = (
            std::fs::read(reference.join(&name)).unwrap(),
            std::fs::read(out.join(&name)).unwrap(),
        );
        if name == "report.md" {
            assert_eq!(report_lines(&want), report_lines(&got));
        } else {
            assert!(want == got, "{name} differs");
        }
    }
    assert!(
        std::fs::read(&table).unwrap() == sweep_reference.stdout,
        "the merged sweep's table differs from the unsharded one"
    );
    drop(cluster);
    let _ = writeln!(
        std::io::stderr(),
        "slurm: {} {:.1}s, cluster up {:.1}s, {SHARDS} shards and merge {:.1}s, total {:.1}s",
        if installed {
            "apt install"
        } else {
            "already installed"
        },
        ready.as_secs_f64(),
        (up - ready).as_secs_f64(),
        (jobs - up).as_secs_f64(),
        started.elapsed().as_secs_f64()
    );
}
