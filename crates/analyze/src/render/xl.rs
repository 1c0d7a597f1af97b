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
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# Xen RTDS parameters from `rtvmm analyze {}` (period and budget in µs).",
            self.input
        );
        // Not a guarantee under RTDS: an RTDS VCPU keeps its budget to the end of its period,
        // so one that wakes late can take it all just before its deadline, and a total
        // bandwidth at most 1 does not give every VCPU its budget (docs/analysis.md, "Ties
        // and fields the analysis does not model").
        let _ = writeln!(
            out,
            "# The interfaces analysed under {} (total bandwidth U_RM = {:.4}). RTDS serves them \
             by EDF, which rtvmm does not analyse: check with `rtvmm sim --policy rtds`.",
            self.policy.name(),
            self.u_rm
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
