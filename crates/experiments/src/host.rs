//! What machine a report was made on: host name, cores, kernel, CPU model. Read from
//! `/proc` where available, with `uname` as a fallback; never fails (unknown fields say
//! so).

use std::process::Command;

/// The host an experiment ran on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostInfo {
    pub hostname: String,
    /// Cores available to this process.
    pub cores: usize,
    pub kernel: String,
    pub cpu_model: String,
}

fn read_trimmed(path: &str) -> Option<String> {
    rtvmm_system::input::read_text(std::path::Path::new(path))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

fn uname(flag: &str) -> Option<String> {
    let out = Command::new("uname").arg(flag).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !text.is_empty()).then_some(text)
}

impl HostInfo {
    /// Probes the running host.
    pub fn probe() -> HostInfo {
        let hostname = read_trimmed("/proc/sys/kernel/hostname")
            .or_else(|| read_trimmed("/etc/hostname"))
            .or_else(|| uname("-n"))
            .unwrap_or_else(|| "unknown".to_string());
        let kernel = match (
            read_trimmed("/proc/sys/kernel/ostype"),
            read_trimmed("/proc/sys/kernel/osrelease"),
        ) {
            (Some(os), Some(release)) => format!("{os} {release}"),
            _ => match (uname("-s"), uname("-r")) {
                (Some(os), Some(release)) => format!("{os} {release}"),
                _ => "unknown".to_string(),
            },
        };
        let cpu_model = rtvmm_system::input::read_text(std::path::Path::new("/proc/cpuinfo"))
            .ok()
            .and_then(|info| {
                info.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split_once(':'))
                    .map(|(_, v)| v.trim().to_string())
            })
            .unwrap_or_else(|| "unknown".to_string());
        HostInfo {
            hostname,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel,
            cpu_model,
        }
    }

    /// One line for a report.
    pub fn describe(&self) -> String {
        format!(
            "{} · {} cores · {} · {}",
            self.hostname, self.cores, self.kernel, self.cpu_model
        )
    }
}
