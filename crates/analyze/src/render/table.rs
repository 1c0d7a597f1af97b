//! The readable table of `rtvmm analyze` (and `--rta`'s response times).

use std::fmt::Write as _;

use rtvmm_analysis::GuestScheduler as AnalysisGuest;
use rtvmm_core::Nanos;

use crate::names::{ns, server_name, supply_name};
use crate::report::{Report, RtaStatus};

impl Report {
    fn unit(&self) -> Nanos {
        ns(self.unit_ns)
    }

    /// The readable table; `with_rta` adds the response times.
    pub fn table(&self, with_rta: bool) -> String {
        let mut out = String::new();
        let tasks: usize = self.domains.iter().map(|d| d.tasks.len()).sum();
        let _ = writeln!(
            out,
            "{} ({}): {}, {}; unit {}; sbf {}; interfaces {}; policy {}",
            self.input,
            self.format,
            count(self.domains.len(), "domain"),
            count(tasks, "task"),
            self.unit(),
            self.sbf_mode,
            self.interfaces,
            self.policy.name()
        );
        let mut rows = vec![[
            "domain",
            "guest",
            "Π",
            "Θ",
            "period",
            "budget",
            "bandwidth",
            "util",
            "overhead",
            "sbf",
            "prio",
            "schedulable",
        ]
        .map(String::from)
        .to_vec()];
        for d in &self.domains {
            let dash = || "-".to_string();
            let star = if d.proven_optimal { "" } else { "*" };
            rows.push(vec![
                d.name.clone(),
                d.guest.clone(),
                d.period.map_or_else(dash, |v| format!("{v}{star}")),
                d.budget.map_or_else(dash, |v| v.to_string()),
                d.period_ns.map_or_else(dash, |v| ns(v).to_string()),
                d.budget_ns.map_or_else(dash, |v| ns(v).to_string()),
                d.bandwidth_exact
                    .as_ref()
                    .map_or_else(dash, |_| format!("{:.4}", d.bandwidth)),
                format!("{:.4}", d.utilization),
                d.bandwidth_exact
                    .as_ref()
                    .map_or_else(dash, |_| format!("{:.4}", d.overhead)),
                d.sbf
                    .map_or_else(dash, |form| supply_name(form).to_string()),
                d.priority.map_or_else(dash, |v| v.to_string()),
                if d.schedulable { "yes" } else { "NO" }.to_string(),
            ]);
        }
        out.push_str(&render(&rows));
        if self.domains.iter().any(|d| !d.proven_optimal) {
            out.push_str(
                "* optimality not proven (an exact test reached its step limit, or the EDF \
                 period search its bound; the interface is still sound)\n",
            );
        }
        let _ = writeln!(out, "root: {}", self.root_test);
        if !self.pools.is_empty() {
            out.push_str(&self.pools_table());
        }
        let _ = writeln!(
            out,
            "U_RM = {:.4} ({})   U_W = {:.4} ({})   U_RM − U_W = {:.4}",
            self.u_rm, self.u_rm_exact, self.u_w, self.u_w_exact, self.u_rm_minus_u_w
        );
        let _ = writeln!(
            out,
            "verdict: {}",
            if self.schedulable {
                "schedulable"
            } else {
                "NOT schedulable"
            }
        );
        for reason in &self.not_covered {
            let _ = writeln!(out, "  not covered: {reason}");
        }
        for d in self.domains.iter().filter(|d| !d.schedulable) {
            let reason = d.reason.as_deref().unwrap_or("not schedulable");
            match &d.failed_task {
                Some(task) => {
                    let _ = writeln!(out, "  {}: task '{task}': {reason}", d.name);
                }
                None => {
                    let _ = writeln!(out, "  {}: {reason}", d.name);
                }
            }
        }
        if with_rta {
            out.push('\n');
            out.push_str(&self.rta_table());
        }
        if !self.notes.is_empty() {
            out.push_str("notes:\n");
            for note in &self.notes {
                let _ = writeln!(out, "  - {note}");
            }
        }
        out
    }

    /// Several pcpus: each pool's verdict and root test, then every VCPU with its
    /// interface, pcpus and whether its pool's root serves it.
    fn pools_table(&self) -> String {
        let mut out = String::new();
        for pool in &self.pools {
            let pcpus: Vec<String> = pool.pcpus.iter().map(u32::to_string).collect();
            let verdict = match pool.schedulable {
                Some(true) => "schedulable".to_string(),
                Some(false) => "NOT schedulable".to_string(),
                None => format!(
                    "NOT COVERED ({})",
                    pool.not_covered.as_deref().unwrap_or("not analysed")
                ),
            };
            let _ = writeln!(
                out,
                "pool {} ({}, pcpus {}): {verdict}",
                pool.name,
                pool.policy,
                pcpus.join(",")
            );
            if pool.schedulable.is_some() {
                let _ = writeln!(out, "  root: {}", pool.root_test);
            }
        }
        let mut rows = vec![[
            "domain", "model", "vcpu", "Π", "Θ", "period", "budget", "pcpus", "served",
        ]
        .map(String::from)
        .to_vec()];
        for d in &self.domains {
            for v in &d.vcpus {
                let dash = || "-".to_string();
                let pcpus: Vec<String> = v.pcpus.iter().map(u32::to_string).collect();
                rows.push(vec![
                    d.name.clone(),
                    d.model.clone().unwrap_or_else(dash),
                    v.index.to_string(),
                    v.period.map_or_else(dash, |x| x.to_string()),
                    v.budget.map_or_else(dash, |x| x.to_string()),
                    v.period_ns.map_or_else(dash, |x| ns(x).to_string()),
                    v.budget_ns.map_or_else(dash, |x| ns(x).to_string()),
                    pcpus.join(","),
                    match v.served {
                        Some(true) => "yes",
                        Some(false) => "NO",
                        None => "-",
                    }
                    .to_string(),
                ]);
            }
        }
        if rows.len() > 1 {
            out.push_str(&render(&rows));
        }
        out
    }

    fn rta_table(&self) -> String {
        let mut out = String::new();
        let Some(server) = self.rta_server.map(server_name) else {
            let _ = writeln!(
                out,
                "response times: not applicable under {} (the hierarchical analysis covers \
                 the deferrable, periodic, polling and sporadic servers; --policy picks one)",
                self.policy.name()
            );
            return out;
        };
        let _ = writeln!(
            out,
            "response times under the {server} (Davis & Burns 2005), servers as above; a task is \
             guaranteed if Lemma 1 holds for it or its bound is within its deadline:"
        );
        let mut rows = vec![[
            "domain", "task", "period", "wcet", "deadline", "prio", "lemma 1", "wcrt", "slack",
        ]
        .map(String::from)
        .to_vec()];
        for d in &self.domains {
            for t in &d.tasks {
                let (wcrt, slack) = match t.rta {
                    RtaStatus::Bounded => (
                        ns(t.wcrt_ns.unwrap_or(0)).to_string(),
                        ns(t.slack_ns.unwrap_or(0)).to_string(),
                    ),
                    RtaStatus::ExceedsDeadline => (
                        format!("≥ {}", ns(t.wcrt_ns.unwrap_or(0))),
                        "misses".to_string(),
                    ),
                    RtaStatus::NotApplicable
                        if d.analysed_as == Some(AnalysisGuest::Edf) || t.priority.is_none() =>
                    {
                        ("n/a (edf guest)".to_string(), "-".to_string())
                    }
                    RtaStatus::NotApplicable => ("not applicable".to_string(), "-".to_string()),
                    RtaStatus::ServerUnschedulable => {
                        ("server unschedulable".to_string(), "-".to_string())
                    }
                    RtaStatus::NotAnalysed => ("not analysed".to_string(), "-".to_string()),
                };
                rows.push(vec![
                    d.name.clone(),
                    t.name.clone(),
                    ns(t.period_ns).to_string(),
                    ns(t.wcet_ns).to_string(),
                    ns(t.deadline_ns).to_string(),
                    t.priority
                        .map_or_else(|| "-".to_string(), |p| p.to_string()),
                    match t.lemma1 {
                        Some(true) => "holds",
                        Some(false) => "fails",
                        None => "-",
                    }
                    .to_string(),
                    if t.bound_to_release {
                        format!("{wcrt} *")
                    } else {
                        wcrt
                    },
                    slack,
                ]);
            }
        }
        out.push_str(&render(&rows));
        if self
            .domains
            .iter()
            .flat_map(|d| &d.tasks)
            .any(|t| t.bound_to_release)
        {
            let _ = writeln!(
                out,
                "* released exactly at its server's releases (period and offset multiples of \
                 Π): no capacity gap before its first server period (Davis & Burns's bound tasks)"
            );
        }
        out
    }
}

/// "1 task", "2 tasks".
fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// Left-aligned columns, two spaces apart.
fn render(rows: &[Vec<String>]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            // Padded by hand: `{:<w$}` panics for a width past u16::MAX.
            line.push_str(cell);
            let pad = widths[c] + 2 - cell.chars().count();
            line.push_str(&" ".repeat(pad));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}
