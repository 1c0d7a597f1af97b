//! `xl sched-rtds` lines for a Xen host.

use std::fmt::Write as _;

use rtvmm_analysis::SupplyForm;

use crate::names::ns;
use crate::report::Report;

/// VCPUs per domain. One today (the core's guests have one VCPU each); `--emit xl` writes
/// the `-v all` form for domains with more.
const VCPUS_PER_DOMAIN: usize = 1;

impl Report {
    /// `xl sched-rtds` commands, one per domain (`-v all` where a domain has several
    /// VCPUs). Budgets are rounded up and periods down to whole microseconds.
    pub fn xl_commands(&self) -> String {
        if !self.pools.is_empty() {
            return self.xl_multicore();
        }
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# Xen RTDS parameters from `rtvmm analyze {}` (period and budget in µs).",
            self.input
        );
        // An RTDS VCPU keeps its budget to the end of its period, so the interfaces are a
        // guarantee under RTDS only when the root test was RTDS's (docs/analysis.md, "Many
        // pcpus"): say which policy they were analysed under.
        let _ = writeln!(
            out,
            "# The interfaces analysed under {} (total bandwidth U_RM = {:.4}).{}",
            self.policy.name(),
            self.u_rm,
            if self.policy == rtvmm_core::policy::PolicyKind::Rtds {
                ""
            } else {
                " Under RTDS check them with `rtvmm analyze --given --policy rtds` on a \
                 scenario that sets them."
            }
        );
        if !self.schedulable {
            let _ = writeln!(
                out,
                "# WARNING: the analysis found this system NOT schedulable (see `rtvmm analyze`)."
            );
        }
        for d in self
            .domains
            .iter()
            .filter(|d| d.sbf == Some(SupplyForm::Harmonic))
        {
            let _ = writeln!(
                out,
                "# {}: this interface relies on the harmonic supply bound, sound only if the \
                 guest releases its tasks at the VCPU's period boundaries; otherwise use \
                 --sbf general.",
                d.name
            );
        }
        for d in &self.domains {
            match (d.period_ns, d.budget_ns) {
                (Some(period), Some(budget)) => {
                    let (period_us, budget_us) = (period / 1000, budget.div_ceil(1000));
                    if period % 1000 != 0 || budget % 1000 != 0 {
                        let _ = writeln!(
                            out,
                            "# {}: {} / {} rounded to whole µs (budget up, period down)",
                            d.name,
                            ns(budget),
                            ns(period)
                        );
                    }
                    let vcpus = if VCPUS_PER_DOMAIN > 1 { " -v all" } else { "" };
                    let _ = writeln!(
                        out,
                        "xl sched-rtds -d {}{vcpus} -p {period_us} -b {budget_us}",
                        shell_word(&d.name)
                    );
                }
                _ => {
                    let _ = writeln!(
                        out,
                        "# {}: no interface ({})",
                        d.name,
                        d.reason.as_deref().unwrap_or("no tasks")
                    );
                }
            }
        }
        out
    }
}

impl Report {
    /// Several pcpus: the pools (`cpupool-create`, each pcpu moved out of `Pool-0` and into
    /// its pool), each domain moved to its pool, each VCPU pinned where its affinity is
    /// narrower than its pool and given its own `(Π, Θ)` — the commands of
    /// `docs/platform.md`, times in µs (budgets rounded up, periods down).
    fn xl_multicore(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# Xen pools, pinning and RTDS parameters from `rtvmm analyze {}` (period and \
             budget in µs).",
            self.input
        );
        if self.schedulable {
            let _ = writeln!(
                out,
                "# Every domain is guaranteed: each pool's root test serves every VCPU."
            );
        } else {
            let _ = writeln!(
                out,
                "# WARNING: not every domain is guaranteed (see `rtvmm analyze`)."
            );
        }
        let first = self
            .pools
            .first()
            .map(|p| p.name.as_str())
            .unwrap_or("Pool-0");
        for pool in self.pools.iter().skip(1) {
            // xl's own `VARIABLE=VALUE` form (rtvmm's `xl` reader takes it too).
            let _ = writeln!(
                out,
                "xl cpupool-create name=\"{}\" sched=\"{}\"",
                pool.name.replace(['"', '\\'], ""),
                pool.policy
            );
            for cpu in &pool.pcpus {
                let _ = writeln!(out, "xl cpupool-cpu-remove {} {cpu}", shell_word(first));
                let _ = writeln!(out, "xl cpupool-cpu-add {} {cpu}", shell_word(&pool.name));
            }
        }
        for d in &self.domains {
            let name = shell_word(&d.name);
            let Some(pool) = self.pools.iter().find(|p| Some(&p.name) == d.pool.as_ref()) else {
                continue;
            };
            if pool.name != first {
                let _ = writeln!(out, "xl cpupool-migrate {name} {}", shell_word(&pool.name));
            }
            if !d.guaranteed {
                let _ = writeln!(
                    out,
                    "# {}: not guaranteed ({})",
                    d.name,
                    d.reason.as_deref().unwrap_or("see `rtvmm analyze`")
                );
            }
            for v in &d.vcpus {
                if v.pcpus != pool.pcpus && !v.pcpus.is_empty() {
                    let _ = writeln!(out, "xl vcpu-pin {name} {} {}", v.index, cpu_list(&v.pcpus));
                }
                if let (Some(period), Some(budget)) = (v.period_ns, v.budget_ns) {
                    let _ = writeln!(
                        out,
                        "xl sched-rtds -d {name} -v {} -p {} -b {}",
                        v.index,
                        period / 1000,
                        budget.div_ceil(1000)
                    );
                }
            }
        }
        out
    }
}

/// Pcpus as `xl` writes them: `0-2,5`.
fn cpu_list(pcpus: &[u32]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut k = 0;
    while k < pcpus.len() {
        let start = pcpus[k];
        let mut end = start;
        while k + 1 < pcpus.len() && pcpus[k + 1] == end + 1 {
            k += 1;
            end = pcpus[k];
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        k += 1;
    }
    parts.join(",")
}

/// A domain name as one shell word.
fn shell_word(name: &str) -> String {
    if !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.+:@/".contains(c))
    {
        name.to_string()
    } else {
        format!("'{}'", name.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use crate::tests::{domain, run_on, HEAD};
    use crate::Options;

    #[test]
    fn xl_lines() {
        let text = format!(
            "{HEAD}{}",
            domain("web server", "", &[("t", "50ms", "5ms")])
        );
        let report = run_on(&text, &Options::default());
        let xl = report.xl_commands();
        let line = xl.lines().find(|l| l.starts_with("xl ")).unwrap();
        let (p, b) = (
            report.domains[0].period_ns.unwrap() / 1000,
            report.domains[0].budget_ns.unwrap() / 1000,
        );
        assert_eq!(line, format!("xl sched-rtds -d 'web server' -p {p} -b {b}"));
    }
}
