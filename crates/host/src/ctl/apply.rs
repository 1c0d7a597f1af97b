//! The executor's side: a validated [`Command`] becomes calls on the core's
//! [`Machine`] — `adjust`, `swap_policy`, `add_vcpu`, `remove_vcpu`, or an `xl` command
//! through the simulator's own rule ([`rtvmm_system::xl::apply_xl`], see [`run_xl`]) — or a
//! [`SchedShow`] read from it. Every refusal happens before anything changes: the machine
//! validates parameters before it applies them, and names are looked up first.

use std::collections::{BTreeMap, BTreeSet};

use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::machine::{Machine, MachineError};
use rtvmm_core::model::{DomainId, DomainSpec, PcpuId, VcpuId, VcpuParams};
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::xl::XlCommand;
use rtvmm_core::Nanos;
use rtvmm_scenario::error::{ErrorKind, Location};
use rtvmm_scenario::live::{vcpu_refused, weight_is_derived};
use rtvmm_scenario::{ScenarioError, SchedulerSettings};

use super::protocol::{Command, DomainStatus, ErrorCode, Reply, SchedShow, ORIGIN};
use super::server::Request;

/// What live control needs beside the machine: the running domains by name, the names
/// used before (never reused, as in a scenario file: results and traces name domains),
/// and the run's `[scheduler]` settings (a swap that gives none uses these; a swap that
/// gives some keeps them for the next).
#[derive(Clone, Debug)]
pub struct Domains {
    by_name: BTreeMap<String, VcpuId>,
    removed: BTreeSet<String>,
    settings: SchedulerSettings,
}

impl Domains {
    /// No domains yet; `settings` are the scenario's `[scheduler]` settings.
    pub fn new(settings: SchedulerSettings) -> Domains {
        Domains {
            by_name: BTreeMap::new(),
            removed: BTreeSet::new(),
            settings,
        }
    }

    /// Records a domain the executor added itself (the scenario's initial domains, and
    /// those its `add-domain` events add).
    pub fn insert(&mut self, name: &str, vcpu: VcpuId) {
        self.by_name.insert(name.to_string(), vcpu);
    }

    /// Records that the executor removed a domain itself (a `remove-domain` event).
    pub fn remove(&mut self, name: &str) -> Option<VcpuId> {
        let vcpu = self.by_name.remove(name)?;
        self.removed.insert(name.to_string());
        Some(vcpu)
    }

    /// Forgets a domain that never ran (its guest failed to start): unlike
    /// [`Domains::remove`], its name stays free.
    pub(crate) fn forget(&mut self, name: &str) {
        self.by_name.remove(name);
    }

    /// The VCPU of a running domain.
    pub fn vcpu(&self, name: &str) -> Option<VcpuId> {
        self.by_name.get(name).copied()
    }

    /// The name of a running domain's VCPU.
    pub fn name_of(&self, vcpu: VcpuId) -> Option<&str> {
        self.by_name
            .iter()
            .find(|(_, &v)| v == vcpu)
            .map(|(name, _)| name.as_str())
    }

    /// The running domains in the order they joined.
    pub fn running(&self) -> Vec<(&str, VcpuId)> {
        let mut all: Vec<(&str, VcpuId)> = self
            .by_name
            .iter()
            .map(|(name, &vcpu)| (name.as_str(), vcpu))
            .collect();
        all.sort_by_key(|&(_, vcpu)| vcpu);
        all
    }

    /// The `[scheduler]` settings in force.
    pub fn settings(&self) -> &SchedulerSettings {
        &self.settings
    }

    fn names(&self) -> String {
        if self.by_name.is_empty() {
            return "none".to_string();
        }
        self.running()
            .into_iter()
            .map(|(name, _)| name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    fn unknown(&self, name: &str) -> Reply {
        refused(ScenarioError {
            file: ORIGIN.to_string(),
            location: Box::new(Location {
                field: Some("domain".to_string()),
                ..Location::default()
            }),
            kind: ErrorKind::UnknownDomain {
                name: name.to_string(),
                when: format!(" (running: {})", self.names()),
            },
        })
    }
}

/// What [`apply`] did, beyond the reply: what the executor must do outside the machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Nothing changed (a `sched-show`, or a refusal).
    None,
    /// New parameters for a VCPU; the machine has them, nothing else to do.
    Adjusted { vcpu: VcpuId },
    /// The policy was swapped; the machine has it, nothing else to do.
    Swapped { from: PolicyKind, to: PolicyKind },
    /// A domain joined the machine, without work: the executor starts its guest (and
    /// reports its work with `Machine::wake` as for any domain).
    Added { vcpu: VcpuId, domain: DomainSpec },
    /// A domain left the machine: the executor stops its guest.
    Removed { vcpu: VcpuId, name: String },
}

/// A command's outcome: the reply for the client and what the executor must do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Applied {
    pub reply: Reply,
    pub effect: Effect,
}

fn refused(error: ScenarioError) -> Reply {
    Reply::error(ErrorCode::Refused, error.to_string())
}

fn done(message: String, effect: Effect) -> Applied {
    Applied {
        reply: Reply::Done { message },
        effect,
    }
}

fn nothing(reply: Reply) -> Applied {
    Applied {
        reply,
        effect: Effect::None,
    }
}

/// The machine's refusal of `vcpu`'s parameters under `policy`, worded as a scenario's.
fn machine_refused(
    error: MachineError,
    domain: &str,
    policy: PolicyKind,
    params: &rtvmm_core::model::VcpuParams,
) -> Reply {
    match error {
        MachineError::Param { error, .. } => {
            refused(vcpu_refused(ORIGIN, domain, policy, params, error))
        }
        other => Reply::error(
            ErrorCode::Refused,
            format!("{ORIGIN}: domain '{domain}': {other}"),
        ),
    }
}

/// Applies `command` to the running system at `now` (the executor's clock, as it passes
/// it to the machine; an instant before the machine's last one is taken as that one).
/// Changes take effect as the core's calls say (`adjust`: from the VCPU's next
/// replenishment, a remaining budget above the new budget cut at once); each asks the
/// machine for a reschedule, so the executor calls `handle_timeout` as `poll_timeout`
/// then says (at once). On a refusal nothing has changed.
pub fn apply(
    machine: &mut Machine,
    domains: &mut Domains,
    now: Nanos,
    command: Command,
) -> Applied {
    let now = now.max(machine.now());
    match command {
        Command::SchedShow { domain } => nothing(show(machine, domains, domain.as_deref())),
        Command::SchedSet(update) => {
            let Some(vcpu) = domains.vcpu(&update.domain) else {
                return nothing(domains.unknown(&update.domain));
            };
            let before = machine.params(vcpu).clone();
            let after = update.applied_to(&before, !weight_is_derived(&before));
            let policy = machine.policy_kind();
            if let Err(error) = machine.adjust(now, vcpu, after.clone()) {
                return nothing(machine_refused(error, &update.domain, policy, &after));
            }
            let changes = param_changes(&before, &after);
            let what = if changes.is_empty() {
                "unchanged".to_string()
            } else {
                changes.join(", ")
            };
            done(
                format!(
                    "{}: {what} (policy {policy}: from its next replenishment; a remaining \
                     budget above the new budget is cut at once)",
                    update.domain
                ),
                Effect::Adjusted { vcpu },
            )
        }
        Command::SwapPolicy(change) => {
            let vcpu_of = |name: &str| domains.vcpu(name);
            let (config, settings) = match change.config(domains.settings(), &vcpu_of, ORIGIN) {
                Ok(chosen) => chosen,
                Err(error) => return nothing(refused(error)),
            };
            let from = machine.policy_kind();
            let to = config.kind();
            if let Err(error) = machine.swap_policy(now, config) {
                let reply = match error {
                    MachineError::Param { vcpu, error } => {
                        let vcpu = VcpuId(vcpu);
                        let name = domains.name_of(vcpu).unwrap_or("?");
                        refused(vcpu_refused(ORIGIN, name, to, machine.params(vcpu), error))
                    }
                    other => Reply::error(ErrorCode::Refused, format!("{ORIGIN}: {other}")),
                };
                return nothing(reply);
            }
            domains.settings = settings;
            done(
                format!(
                    "policy {from} -> {to}: every domain starts its first period under {to} now"
                ),
                Effect::Swapped { from, to },
            )
        }
        Command::AddDomain(spec) => {
            if domains.by_name.contains_key(&spec.name) || domains.removed.contains(&spec.name) {
                return nothing(refused(ScenarioError {
                    file: ORIGIN.to_string(),
                    location: Box::new(Location {
                        domain: Some(spec.name.clone()),
                        field: Some("domain.name".to_string()),
                        ..Location::default()
                    }),
                    kind: ErrorKind::Duplicate {
                        what: "domain",
                        name: spec.name.clone(),
                        scope: "domain names are unique in a run, removed domains included",
                    },
                }));
            }
            let policy = machine.policy_kind();
            // One VCPU per domain: the domain's id is its VCPU's, as in the simulator.
            let id = DomainId(machine.vcpu_count() as u32);
            let vcpu = match machine.add_vcpu(now, id, spec.vcpu.clone()) {
                Ok(vcpu) => vcpu,
                Err(error) => {
                    return nothing(machine_refused(error, &spec.name, policy, &spec.vcpu))
                }
            };
            domains.insert(&spec.name, vcpu);
            done(
                format!(
                    "{}: added as VCPU {} ({} task{}, guest {}; budget {}, period {}, \
                     priority {})",
                    spec.name,
                    vcpu.0,
                    spec.tasks.len(),
                    if spec.tasks.len() == 1 { "" } else { "s" },
                    spec.guest.name(),
                    spec.vcpu.budget,
                    spec.vcpu.period,
                    spec.vcpu.priority
                ),
                Effect::Added { vcpu, domain: spec },
            )
        }
        Command::Xl(command) => match run_xl(machine, domains, now, &command) {
            Ok(XlApplied { message, vcpu }) => done(
                message,
                match vcpu {
                    Some(vcpu) => Effect::Adjusted { vcpu },
                    None => Effect::None,
                },
            ),
            Err(why) => nothing(Reply::error(ErrorCode::Refused, format!("{ORIGIN}: {why}"))),
        },
        Command::RemoveDomain { domain } => {
            let Some(vcpu) = domains.vcpu(&domain) else {
                return nothing(domains.unknown(&domain));
            };
            if let Err(error) = machine.remove_vcpu(now, vcpu) {
                return nothing(Reply::error(
                    ErrorCode::Refused,
                    format!("{ORIGIN}: domain '{domain}': {error}"),
                ));
            }
            domains.remove(&domain);
            done(
                format!("{domain}: removed (VCPU {})", vcpu.0),
                Effect::Removed { vcpu, name: domain },
            )
        }
    }
}

/// The parameters that differ between `before` and `after`, as `field old -> new`.
fn param_changes(before: &VcpuParams, after: &VcpuParams) -> Vec<String> {
    type Field = (&'static str, fn(&VcpuParams) -> String);
    let fields: [Field; 7] = [
        ("budget", |p| p.budget.to_string()),
        ("period", |p| p.period.to_string()),
        ("priority", |p| p.priority.to_string()),
        ("weight", |p| p.weight.to_string()),
        ("cap", |p| p.cap.to_string()),
        ("extratime", |p| {
            p.extratime
                .map_or_else(|| "default".to_string(), |e| e.to_string())
        }),
        ("max_replenishments", |p| p.max_replenishments.to_string()),
    ];
    fields
        .iter()
        .filter_map(|(field, show)| {
            let (old, new) = (show(before), show(after));
            (old != new).then(|| format!("{field} {old} -> {new}"))
        })
        .collect()
}

/// The pcpu the executor drives: the machine's pcpu 0 (on the run's managed cpu).
const DRIVEN: u32 = 0;

/// Why the one-pcpu executor cannot honour `command`, if it cannot: it names a pcpu other
/// than the one it drives (`cpupool-cpu-add`/`-remove` of it, `vcpu-pin` to it), or moves
/// a domain to a pool whose pcpus are all others. Such a command is refused whole, before
/// anything changes; everything else is the machine's to accept or refuse.
pub fn xl_refusal(machine: &Machine, command: &XlCommand) -> Option<String> {
    let one = "the host executor drives one pcpu (pcpu 0, on its managed cpu)";
    match command {
        XlCommand::CpupoolCpuAdd { cpu, .. } | XlCommand::CpupoolCpuRemove { cpu, .. }
            if *cpu != DRIVEN =>
        {
            Some(format!("CPU: {one}: pcpu {cpu} is not one it runs"))
        }
        XlCommand::VcpuPin {
            cpus: Some(cpus), ..
        } if *cpus != CpuSet::one(DRIVEN) => Some(format!(
            "CPUS: {one}: a VCPU pinned to pcpus {cpus} would never run here (pin to 0 or all)"
        )),
        XlCommand::CpupoolMigrate { pool, .. } => {
            let (_, cpus, _) = machine.pools().find(|(name, _, _)| name == pool)?;
            (!cpus.is_empty() && !cpus.contains(DRIVEN)).then(|| {
                format!("POOL: {one}: cpupool '{pool}' has pcpus {cpus}, none of them pcpu 0")
            })
        }
        _ => None,
    }
}

/// What [`run_xl`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XlApplied {
    /// What changed, for a person: each domain's changed parameters and placement, each
    /// pool's change; or that nothing did (the values were in force already).
    pub message: String,
    /// The VCPU of the domain the command concerns, when it concerns one.
    pub vcpu: Option<VcpuId>,
}

/// The running system's state an `xl` command can change: each running domain's
/// parameters and placement (pool, affinity), each pool's pcpus and policy.
type XlState = (
    Vec<(String, VcpuParams, String, CpuSet)>,
    Vec<(String, CpuSet, PolicyKind)>,
);

fn xl_state(machine: &Machine, domains: &Domains) -> XlState {
    let running = domains
        .running()
        .into_iter()
        .map(|(name, vcpu)| {
            let (pool, affinity) = machine.placement(vcpu);
            (
                name.to_string(),
                machine.params(vcpu).clone(),
                pool.to_string(),
                affinity,
            )
        })
        .collect();
    let pools = machine
        .pools()
        .map(|(name, cpus, config)| (name.to_string(), cpus, config.kind()))
        .collect();
    (running, pools)
}

/// Applies an `xl` command to the executor's machine at `now`: refused when one pcpu
/// cannot honour it ([`xl_refusal`]), else by the simulator's rule
/// ([`rtvmm_system::xl::apply_xl`]: every VCPU checked before any changes). A domain's VCPUs
/// are its one VCPU; a pool created gets the run's `[scheduler]` settings. The error names
/// the command and the argument at fault; on an error nothing has changed.
pub fn run_xl(
    machine: &mut Machine,
    domains: &Domains,
    now: Nanos,
    command: &XlCommand,
) -> Result<XlApplied, String> {
    let now = now.max(machine.now());
    if let Some(why) = xl_refusal(machine, command) {
        return Err(format!("`{command}`: {why}; nothing changed"));
    }
    let (domains_before, pools_before) = xl_state(machine, domains);
    // One VCPU per domain: the domain's id is its VCPU's (as `add_domain` gives it).
    let vcpus_of = |name: &str| domains.vcpu(name).map(|v| (DomainId(v.0), vec![v]));
    rtvmm_system::xl::apply_xl(
        machine,
        now,
        command,
        &vcpus_of,
        &domains.settings().for_new_pools(),
    )
    .map_err(|e| format!("{e}; nothing changed"))?;
    let (domains_after, pools_after) = xl_state(machine, domains);
    let mut parts = Vec::new();
    for (name, cpus, kind) in &pools_after {
        match pools_before.iter().find(|(n, _, _)| n == name) {
            None => parts.push(format!("cpupool '{name}' created ({kind}, pcpus {cpus})")),
            Some((_, old, _)) if old != cpus => {
                parts.push(format!("cpupool '{name}': pcpus {old} -> {cpus}"))
            }
            Some(_) => {}
        }
    }
    // The note on when a new budget or period applies, when one changed.
    let mut params_changed = false;
    for ((name, old, old_pool, old_affinity), (_, new, new_pool, new_affinity)) in
        domains_before.iter().zip(&domains_after)
    {
        let mut changes = param_changes(old, new);
        params_changed |= old.budget != new.budget || old.period != new.period;
        if old_pool != new_pool {
            let kind = machine
                .policy_of(domains.vcpu(name).expect("running"))
                .kind();
            changes.push(format!("cpupool {old_pool} -> {new_pool} (policy {kind})"));
        }
        if old_affinity != new_affinity {
            changes.push(format!("affinity {old_affinity} -> {new_affinity}"));
        }
        if !changes.is_empty() {
            parts.push(format!("{name}: {}", changes.join(", ")));
        }
    }
    let mut message = if parts.is_empty() {
        "unchanged: the command's values were in force already".to_string()
    } else {
        parts.join("; ")
    };
    if params_changed {
        message.push_str(
            " (from the next replenishment; a remaining budget above the new budget is cut \
             at once)",
        );
    }
    Ok(XlApplied {
        message,
        vcpu: command.domain().and_then(|d| domains.vcpu(d)),
    })
}

/// `sched-show` from the machine's state as of its last call.
fn show(machine: &Machine, domains: &Domains, only: Option<&str>) -> Reply {
    if let Some(name) = only {
        if domains.vcpu(name).is_none() {
            return domains.unknown(name);
        }
    }
    let running = machine.running(PcpuId(0));
    let statuses = domains
        .running()
        .into_iter()
        .filter(|(name, _)| only.is_none_or(|only| only == *name))
        .map(|(name, vcpu)| {
            let params = machine.params(vcpu);
            let view = machine.policy_of(vcpu).view(vcpu);
            DomainStatus {
                name: name.to_string(),
                vcpu: vcpu.0,
                budget_ns: params.budget.as_ns(),
                period_ns: params.period.as_ns(),
                priority: params.priority,
                weight: params.weight,
                cap: params.cap,
                extratime: params.extratime_under(machine.policy_of(vcpu).kind()),
                max_replenishments: params.max_replenishments,
                has_work: machine.has_work(vcpu),
                running: running == Some(vcpu),
                remaining_budget_ns: view.remaining_budget.map(Nanos::as_ns),
                deadline_ns: view.deadline.map(Nanos::as_ns),
                credit_ns: view.credit,
                run_ns: machine.vcpu_stats(vcpu).run.as_ns(),
                budget_consumed_ns: machine.budget_counters(vcpu).consumed.as_ns(),
                jobs: None,
                misses: None,
            }
        })
        .collect();
    Reply::Show(SchedShow {
        policy: machine.policy_kind().name().to_string(),
        as_of_ns: machine.now().as_ns(),
        domains: statuses,
    })
}

/// Answers one request from the channel: applies it (unless the server has given up
/// waiting for it, [`Request::claim`]), sends the reply, and returns what the executor
/// must do outside the machine. The executor's whole side of live control:
///
/// ```
/// # use rtvmm_host::ctl;
/// # use rtvmm_core::{machine::Machine, Nanos};
/// # fn drain(control: &std::sync::mpsc::Receiver<ctl::Request>, machine: &mut Machine,
/// #          domains: &mut ctl::Domains, now: Nanos) {
/// # let start_guest = |_, _| {};
/// # let stop_guest = |_| {};
/// while let Ok(request) = control.try_recv() {
///     match ctl::serve(request, machine, domains, now) {
///         ctl::Effect::Added { vcpu, domain } => start_guest(vcpu, domain),
///         ctl::Effect::Removed { vcpu, .. } => stop_guest(vcpu),
///         _ => {}
///     }
/// }
/// # }
/// ```
pub fn serve(request: Request, machine: &mut Machine, domains: &mut Domains, now: Nanos) -> Effect {
    serve_with(request, machine, domains, now, |_| {})
}

/// [`serve`], with `fill` called on a `sched-show` reply before it is sent (for the
/// figures only the executor knows: jobs and misses per domain).
pub fn serve_with(
    request: Request,
    machine: &mut Machine,
    domains: &mut Domains,
    now: Nanos,
    fill: impl FnOnce(&mut SchedShow),
) -> Effect {
    let Some((command, reply)) = request.take() else {
        return Effect::None;
    };
    let mut applied = apply(machine, domains, now, command);
    if let Reply::Show(show) = &mut applied.reply {
        fill(show);
    }
    // The server may have stopped waiting (a client gone); the change stands either way.
    let _ = reply.try_send(applied.reply);
    applied.effect
}

#[cfg(test)]
mod tests;
