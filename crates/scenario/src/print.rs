//! The normalised form of a scenario (`rtvmm check`): the same format, with every default
//! written out (priorities, weights, deadlines, offsets, ...) and every time in its
//! largest exact unit. Parsing it gives back the same [`Scenario`]. `extratime` is the one
//! key written only where the file gives it: its default is the policy's (on under RTDS,
//! off under SEDF), so writing one value out would pin it under every policy.

use std::fmt::Write;

use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::guest::{Arrival, TaskSpec};
use rtvmm_core::machine::{Overheads, PoolSpec, ReplenishMode};
use rtvmm_core::model::{GuestSmp, Placement, VcpuParams};
use rtvmm_core::policy::{CreditConfig, PolicyConfig, RtdsMode};
use rtvmm_system::{Change, DomainSpec};

use crate::{External, Scenario};

/// A TOML string literal, escaped.
fn quote(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// A time as a quoted string with its unit.
fn time(t: rtvmm_core::Nanos) -> String {
    quote(&t.to_string())
}

/// The VCPU's keys; `offset` only where the format has it (not in `sched-set`).
fn vcpu_fields(params: &VcpuParams, with_offset: bool) -> Vec<String> {
    let mut fields = Vec::new();
    // Zero means "not given" (policies without servers; a `sched-set` may give a budget
    // to a domain without a period, or the reverse): a zero is never written, as the
    // format refuses it.
    if !params.budget.is_zero() {
        fields.push(format!("budget = {}", time(params.budget)));
    }
    if !params.period.is_zero() {
        fields.push(format!("period = {}", time(params.period)));
    }
    fields.push(format!("priority = {}", params.priority));
    if with_offset {
        fields.push(format!("offset = {}", time(params.offset)));
    }
    fields.push(format!("weight = {}", params.weight));
    fields.push(format!("cap = {}", params.cap));
    // Its default is the policy's: written only when given.
    if let Some(extratime) = params.extratime {
        fields.push(format!("extratime = {extratime}"));
    }
    fields.push(format!(
        "max_replenishments = {}",
        params.max_replenishments
    ));
    fields
}

impl Scenario {
    /// The normalised scenario as TOML text.
    pub fn to_toml(&self) -> String {
        let mut out = String::new();
        let w = &mut out;
        let _ = writeln!(w, "name = {}", quote(&self.name));
        let _ = writeln!(w, "duration = {}", time(self.duration));
        let _ = writeln!(w, "seed = {}", self.seed);

        let m = &self.system.machine;
        let _ = writeln!(w, "\n[machine]");
        let _ = writeln!(w, "pcpus = {}", m.pcpus);
        let _ = writeln!(w, "quantum = {}", time(m.quantum));
        let replenishment = match m.replenishment {
            ReplenishMode::Exact => "exact",
            ReplenishMode::Tick => "tick",
        };
        let _ = writeln!(w, "replenishment = {}", quote(replenishment));
        let _ = writeln!(
            w,
            "overhead = {}",
            overheads(&m.overheads, &Overheads::default())
        );
        let _ = writeln!(w, "overhead_charge = {}", quote(m.overhead_charge.name()));
        if let Some(delivery) = crate::wake::wake_delivery_toml(&m.wake_delivery) {
            let _ = writeln!(w, "wake_delivery = {delivery}");
        }

        let _ = writeln!(w, "\n[scheduler]");
        let _ = writeln!(w, "policy = {}", quote(self.system.policy().kind().name()));
        let policies = || {
            std::iter::once(self.system.policy()).chain(self.system.changes.iter().filter_map(
                |c| match &c.change {
                    Change::SwapPolicy(p) => Some(p),
                    _ => None,
                },
            ))
        };
        let uses_credit = policies().any(|p| matches!(p, PolicyConfig::Credit(_)));
        if uses_credit || self.scheduler.credit != CreditConfig::default() {
            let c = &self.scheduler.credit;
            let _ = writeln!(
                w,
                "credit = {{ tick = {}, ticks_per_slice = {}, ticks_per_accounting = {} }}",
                time(c.tick),
                c.ticks_per_slice,
                c.ticks_per_accounting
            );
        }
        let uses_rtds = policies().any(|p| matches!(p, PolicyConfig::Rtds(_)));
        if uses_rtds || self.scheduler.rtds != RtdsMode::default() {
            let _ = writeln!(
                w,
                "rtds = {{ mode = {} }}",
                quote(self.scheduler.rtds.name())
            );
        }
        if let Some(table) = &self.scheduler.arinc653 {
            let _ = writeln!(w, "major_frame = {}", time(table.major_frame));
            let _ = writeln!(w, "minor_frames = [");
            for f in &table.minor_frames {
                let _ = writeln!(
                    w,
                    "  {{ domain = {}, runtime = {} }},",
                    quote(&f.domain),
                    time(f.runtime)
                );
            }
            let _ = writeln!(w, "]");
        }

        let declared: &[PoolSpec] = if self.system.has_only_default_pool() {
            &[]
        } else {
            &self.system.pools
        };
        for p in declared {
            let _ = writeln!(w, "\n[[pool]]");
            let _ = writeln!(w, "name = {}", quote(&p.name));
            let _ = writeln!(w, "pcpus = {}", cpus(p.pcpus));
            let _ = writeln!(w, "policy = {}", quote(p.policy.kind().name()));
            if let Some(q) = p.quantum {
                let _ = writeln!(w, "quantum = {}", time(q));
            }
            if let Some(o) = &p.overheads {
                let _ = writeln!(
                    w,
                    "overhead = {}",
                    overheads(o, &self.system.machine.overheads)
                );
            }
        }

        for d in &self.system.domains {
            let _ = writeln!(w, "\n[[domain]]");
            write_domain(w, d, self.external.get(&d.name), "domain");
        }

        for c in &self.system.changes {
            let _ = writeln!(w, "\n[[event]]");
            let _ = writeln!(w, "at = {}", time(c.at));
            match &c.change {
                Change::Xl(command) => {
                    let _ = writeln!(w, "xl = {}", quote(&command.to_string()));
                }
                Change::SetParams { domain, params } => {
                    let _ = writeln!(w, "action = \"sched-set\"");
                    let _ = writeln!(w, "domain = {}", quote(domain));
                    for field in vcpu_fields(params, false) {
                        let _ = writeln!(w, "{field}");
                    }
                }
                Change::SwapPolicy(p) => {
                    let _ = writeln!(w, "action = \"swap-policy\"");
                    let _ = writeln!(w, "policy = {}", quote(p.kind().name()));
                }
                Change::AddDomain(d) => {
                    let _ = writeln!(w, "action = \"add-domain\"");
                    let _ = writeln!(w, "[event.domain]");
                    write_domain(w, d, self.external.get(&d.name), "event.domain");
                }
                Change::RemoveDomain { domain } => {
                    let _ = writeln!(w, "action = \"remove-domain\"");
                    let _ = writeln!(w, "domain = {}", quote(domain));
                }
            }
        }
        for c in &self.system.chains {
            let _ = writeln!(w, "\n[[chain]]");
            let _ = writeln!(w, "name = {}", quote(&c.name));
            let tasks: Vec<String> = c
                .tasks
                .iter()
                .map(|(d, t)| quote(&format!("{d}/{t}")))
                .collect();
            let _ = writeln!(w, "tasks = [{}]", tasks.join(", "));
            if !c.bounds.is_empty() {
                let bounds: Vec<String> = c.bounds.iter().map(|b| time(*b)).collect();
                let _ = writeln!(w, "bounds = [{}]", bounds.join(", "));
            }
        }
        out
    }
}

/// A domain's keys and its tasks as `[[<table>.task]]`; an external domain's `attach` or
/// `pids` in place of its guest (it has no tasks).
fn write_domain(w: &mut String, d: &DomainSpec, external: Option<&External>, table: &str) {
    let _ = writeln!(w, "name = {}", quote(&d.name));
    match external {
        None => {
            let _ = writeln!(w, "guest = {}", quote(d.guest.name()));
        }
        Some(External::Cgroup(path)) => {
            let _ = writeln!(w, "attach = {}", quote(&path.to_string_lossy()));
        }
        Some(External::Pids(pids)) => {
            let list: Vec<String> = pids.iter().map(i32::to_string).collect();
            let _ = writeln!(w, "pids = [{}]", list.join(", "));
        }
    }
    let vcpu = vcpu_fields(&d.vcpu, true);
    let _ = writeln!(w, "vcpu = {{ {} }}", vcpu.join(", "));
    write_placement(w, &d.placement);
    for t in &d.tasks {
        let _ = writeln!(w, "\n[[{table}.task]]");
        write_task(
            w,
            t,
            d.guest == rtvmm_core::guest::GuestScheduler::Fp,
            d.placement.smp == GuestSmp::Partitioned,
        );
    }
}

/// The overheads as an inline table; `migration` and `lock` only when one of them, or what
/// leaving them out would mean (`absent`: zero for the machine, the machine's for a pool),
/// is not zero (a file without them prints as it did before they existed).
fn overheads(o: &Overheads, absent: &Overheads) -> String {
    let mut fields = vec![
        format!("do_schedule = {}", time(o.do_schedule)),
        format!("context_switch = {}", time(o.context_switch)),
    ];
    let zero = |x: &Overheads| x.migration.is_zero() && x.lock.is_zero();
    if !zero(o) || !zero(absent) {
        fields.push(format!("migration = {}", time(o.migration)));
        fields.push(format!("lock = {}", time(o.lock)));
    }
    format!("{{ {} }}", fields.join(", "))
}

/// A pcpu set in `xl`'s form, quoted; `[]` when empty.
fn cpus(set: CpuSet) -> String {
    if set.is_empty() {
        "[]".to_string()
    } else {
        quote(&set.to_string())
    }
}

/// A domain's placement keys, each only when it is not the default.
fn write_placement(w: &mut String, p: &Placement) {
    if let Some(pool) = &p.pool {
        let _ = writeln!(w, "pool = {}", quote(pool));
    }
    if p.vcpus != 0 {
        let _ = writeln!(w, "vcpus = {}", p.vcpus);
    }
    let one = |a: &Option<Vec<u32>>| match a {
        None => quote("all"),
        Some(list) => cpus(CpuSet::from_indices(list.iter().copied()).unwrap_or_default()),
    };
    if let Some(first) = p.affinity.first() {
        let same = p.affinity.iter().all(|a| a == first);
        if same && p.affinity.len() == p.vcpu_count() as usize {
            let _ = writeln!(w, "affinity = {}", one(first));
        } else {
            let list: Vec<String> = p.affinity.iter().map(one).collect();
            let _ = writeln!(w, "affinity = [{}]", list.join(", "));
        }
    }
    if p.smp != GuestSmp::default() {
        let _ = writeln!(w, "smp = {}", quote(p.smp.name()));
    }
}

/// A task's keys; `vcpu` in a partitioned guest only (the only one that reads it).
fn write_task(w: &mut String, t: &TaskSpec, fp_guest: bool, partitioned: bool) {
    let _ = writeln!(w, "name = {}", quote(&t.name));
    let kind = match t.arrival {
        Arrival::Periodic => "periodic",
        Arrival::Sporadic { .. } => "sporadic",
        Arrival::AperiodicTimes(_) | Arrival::Poisson { .. } => "aperiodic",
        Arrival::Triggered { .. } => "triggered",
    };
    let _ = writeln!(w, "kind = {}", quote(kind));
    let _ = writeln!(w, "period = {}", time(t.period));
    let _ = writeln!(w, "wcet = {}", time(t.wcet));
    let _ = writeln!(w, "deadline = {}", time(t.deadline));
    // Listed releases and triggers say when jobs come: no offset.
    if !matches!(
        t.arrival,
        Arrival::AperiodicTimes(_) | Arrival::Triggered { .. }
    ) {
        let _ = writeln!(w, "offset = {}", time(t.offset));
    }
    let _ = writeln!(w, "min_exec = {}", time(t.min_exec));
    if fp_guest || t.priority != 0 {
        let _ = writeln!(w, "priority = {}", t.priority);
    }
    match &t.arrival {
        Arrival::Periodic => {}
        Arrival::Sporadic { max_extra_gap } => {
            let _ = writeln!(w, "max_extra_gap = {}", time(*max_extra_gap));
        }
        Arrival::AperiodicTimes(times) => {
            let list: Vec<String> = times.iter().map(|t| time(*t)).collect();
            let _ = writeln!(w, "releases = [{}]", list.join(", "));
        }
        Arrival::Poisson { mean_gap } => {
            let _ = writeln!(w, "mean_gap = {}", time(*mean_gap));
        }
        Arrival::Triggered {
            by_domain,
            by_task,
            delay,
        } => {
            let _ = writeln!(w, "trigger = {}", quote(&format!("{by_domain}/{by_task}")));
            let _ = writeln!(w, "delay = {}", time(*delay));
        }
    }
    if partitioned {
        let _ = writeln!(w, "vcpu = {}", t.vcpu);
    }
}
