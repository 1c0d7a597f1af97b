//! The executor's side: a validated [`Command`] becomes a [`Change`] applied through the
//! one change path both drivers use ([`rtvmm_system::change::apply_change`], over the
//! executor's [`Domains`]) — or a [`SchedShow`] read from the machine. Every refusal
//! happens before anything changes: live control's own checks (names never reused, pcpus
//! the executor does not drive) come first, and the change path is all or nothing.

use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::machine::{Machine, MachineError};
use rtvmm_core::model::{DomainSpec, PcpuId, VcpuId, VcpuParams};
use rtvmm_core::policy::{PolicyKind, PolicySettings};
use rtvmm_core::xl::XlCommand;
use rtvmm_core::Nanos;
use rtvmm_scenario::error::{ErrorKind, Location};
use rtvmm_scenario::live::{vcpu_refused, weight_is_derived};
use rtvmm_scenario::{ScenarioError, SchedulerSettings};
use rtvmm_system::change::{self, ChangeError, DomainTable};
use rtvmm_system::Change;

use super::protocol::{Command, DomainStatus, ErrorCode, Reply, SchedShow, ORIGIN};
use super::server::Request;

/// The executor's domains as the change path sees them ([`DomainTable`]: index = join
/// order, a domain's id), plus what live control needs beside them: the names used
/// before (never reused, as in a scenario file: results and traces name domains), the
/// run's `[scheduler]` settings (a swap that gives none uses these; a swap that gives
/// some keeps them for the next), and the pcpus this executor drives (an `xl` command
/// naming another is refused: [`xl_refusal`]).
///
/// The executor keeps its own per-domain books in the same order: its domain `i` is
/// this table's domain `i`.
#[derive(Clone, Debug)]
pub struct Domains {
    table: change::Domains,
    settings: SchedulerSettings,
    driven: CpuSet,
}

impl Domains {
    /// No domains yet; `settings` are the scenario's `[scheduler]` settings. The executor
    /// drives pcpu 0 ([`Domains::driving`] for more).
    pub fn new(settings: SchedulerSettings) -> Domains {
        Domains {
            table: change::Domains::default(),
            settings,
            driven: CpuSet::one(0),
        }
    }

    /// The same table for an executor that drives the machine's pcpus `driven`.
    pub fn driving(self, driven: CpuSet) -> Domains {
        Domains { driven, ..self }
    }

    /// The pcpus this executor drives.
    pub fn driven(&self) -> CpuSet {
        self.driven
    }

    /// Applies a change through the one change path
    /// ([`rtvmm_system::change::apply_change`]) and keeps the table: a domain that joins
    /// is recorded at index [`DomainTable::joined`], one that leaves is marked gone.
    pub fn apply_change(
        &mut self,
        machine: &mut Machine,
        now: Nanos,
        change: &Change,
        settings: &PolicySettings,
    ) -> Result<change::Applied, ChangeError> {
        self.table.apply(machine, now, change, settings)
    }

    /// Takes back the last domain that joined, when its guest could not start: its VCPUs
    /// leave the machine and, unlike a removal, its name and index stay free.
    pub fn unjoin(&mut self, machine: &mut Machine, now: Nanos) {
        if let Some((_, vcpus, _)) = self.table.domains.pop() {
            for v in vcpus {
                // Just added, so present: removing it cannot fail.
                let _ = machine.remove_vcpu(now, v);
            }
        }
    }

    /// How many domains have joined (present or not): the next one's index.
    pub fn joined(&self) -> usize {
        self.table.joined()
    }

    /// The first VCPU of a present domain.
    pub fn vcpu(&self, name: &str) -> Option<VcpuId> {
        self.vcpus(name).and_then(|v| v.first().copied())
    }

    /// The VCPUs of a present domain, in VCPU order.
    pub fn vcpus(&self, name: &str) -> Option<&[VcpuId]> {
        self.table.find(name).map(|(_, vcpus)| vcpus)
    }

    /// The index (join order) of a present domain.
    pub fn index(&self, name: &str) -> Option<usize> {
        self.table.find(name).map(|(index, _)| index)
    }

    /// The spec of domain `index` (present or not), its parameters those of its first
    /// VCPU.
    pub fn spec(&self, index: usize) -> &DomainSpec {
        &self.table.domains[index].0
    }

    /// The name of the present domain a VCPU belongs to.
    pub fn name_of(&self, vcpu: VcpuId) -> Option<&str> {
        self.table
            .domains
            .iter()
            .find(|(_, vcpus, present)| *present && vcpus.contains(&vcpu))
            .map(|(spec, _, _)| spec.name.as_str())
    }

    /// The present domains' VCPUs in the order they joined: name, the VCPU's number in
    /// its domain, the VCPU.
    pub fn running(&self) -> Vec<(&str, u32, VcpuId)> {
        self.table
            .domains
            .iter()
            .filter(|(_, _, present)| *present)
            .flat_map(|(spec, vcpus, _)| {
                vcpus
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| (spec.name.as_str(), i as u32, v))
            })
            .collect()
    }

    /// Whether `name` was ever used in the run (present or removed).
    fn used(&self, name: &str) -> bool {
        self.table
            .domains
            .iter()
            .any(|(spec, _, _)| spec.name == name)
    }

    /// The `[scheduler]` settings in force.
    pub fn settings(&self) -> &SchedulerSettings {
        &self.settings
    }

    fn names(&self) -> String {
        let present: Vec<&str> = self
            .table
            .domains
            .iter()
            .filter(|(_, _, present)| *present)
            .map(|(spec, _, _)| spec.name.as_str())
            .collect();
        if present.is_empty() {
            return "none".to_string();
        }
        present.join(", ")
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

/// What [`apply`] did, beyond the reply: what the executor must do outside the machine
/// (the change path's [`change::Applied`], with what the reply needs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Effect {
    /// Nothing changed (a `sched-show`, or a refusal).
    None,
    /// New parameters or placement for domain `index`'s VCPUs; the machine has them and
    /// the table the domain's spec: the executor updates its books.
    Adjusted { index: usize },
    /// The policy was swapped, or a pool changed; the machine has it, nothing else to do.
    Swapped { from: PolicyKind, to: PolicyKind },
    /// A domain joined the machine with these VCPUs, without work, at index
    /// `index` of the table: the executor starts its guest (and reports its work with
    /// `Machine::wake` as for any domain), or takes it back ([`Domains::unjoin`]).
    Added {
        index: usize,
        vcpus: Vec<VcpuId>,
        domain: DomainSpec,
    },
    /// Domain `index` left the machine: the executor stops its guest.
    Removed {
        index: usize,
        vcpus: Vec<VcpuId>,
        name: String,
    },
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

/// The change path's refusal as a reply: the machine's refusal of a domain's parameters
/// worded as a scenario's (`policy`, `params`: what was asked), anything else as it says.
fn change_refused(error: ChangeError, policy: PolicyKind, params: &VcpuParams) -> Reply {
    match error {
        ChangeError::Machine { domain, error } => machine_refused(error, &domain, policy, params),
        other => Reply::error(ErrorCode::Refused, format!("{ORIGIN}: {other}")),
    }
}

/// "VCPU 2" or "VCPUs 2, 3".
fn vcpu_list(vcpus: &[VcpuId]) -> String {
    let numbers: Vec<String> = vcpus.iter().map(|v| v.0.to_string()).collect();
    match numbers.len() {
        1 => format!("VCPU {}", numbers[0]),
        _ => format!("VCPUs {}", numbers.join(", ")),
    }
}

/// Applies `command` to the running system at `now` (the executor's clock, as it passes
/// it to the machine; an instant before the machine's last one is taken as that one)
/// through the one change path ([`Domains::apply_change`]), after the checks that are
/// live control's own (a domain name used before; an `xl` command naming a pcpu this
/// executor does not drive). Changes take effect as the core's calls say (`adjust`: from
/// the VCPU's next replenishment, a remaining budget above the new budget cut at once);
/// each asks the machine for a reschedule, so the executor calls `handle_timeout` as
/// `poll_timeout` then says (at once). On a refusal nothing has changed.
pub fn apply(
    machine: &mut Machine,
    domains: &mut Domains,
    now: Nanos,
    command: Command,
) -> Applied {
    let now = now.max(machine.now());
    let settings = domains.settings().for_new_pools();
    match command {
        Command::SchedShow { domain } => nothing(show(machine, domains, domain.as_deref())),
        Command::SchedSet(update) => {
            let Some(vcpu) = domains.vcpu(&update.domain) else {
                return nothing(domains.unknown(&update.domain));
            };
            let before = machine.params(vcpu).clone();
            let after = update.applied_to(&before, !weight_is_derived(&before));
            let policy = machine.policy_of(vcpu).kind();
            let change = Change::SetParams {
                domain: update.domain.clone(),
                params: after.clone(),
            };
            let index = match domains.apply_change(machine, now, &change, &settings) {
                Ok(change::Applied::Reconfigured { index }) => index,
                Ok(other) => unreachable!("sched-set did {other:?}"),
                Err(error) => return nothing(change_refused(error, policy, &after)),
            };
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
                Effect::Adjusted {
                    index: index.expect("sched-set names a domain"),
                },
            )
        }
        Command::SwapPolicy(swap) => {
            let vcpu_of = |name: &str| domains.vcpu(name);
            let (config, new_settings) = match swap.config(domains.settings(), &vcpu_of, ORIGIN) {
                Ok(chosen) => chosen,
                Err(error) => return nothing(refused(error)),
            };
            let from = machine.policy_kind();
            let to = config.kind();
            let change = Change::SwapPolicy(config);
            if let Err(error) = domains.apply_change(machine, now, &change, &settings) {
                let reply = match error {
                    ChangeError::Swap(MachineError::Param { vcpu, error }) => {
                        let vcpu = VcpuId(vcpu);
                        let name = domains.name_of(vcpu).unwrap_or("?");
                        refused(vcpu_refused(ORIGIN, name, to, machine.params(vcpu), error))
                    }
                    other => Reply::error(ErrorCode::Refused, format!("{ORIGIN}: {other}")),
                };
                return nothing(reply);
            }
            domains.settings = new_settings;
            done(
                format!(
                    "policy {from} -> {to}: every domain starts its first period under {to} now"
                ),
                Effect::Swapped { from, to },
            )
        }
        Command::AddDomain(spec) => {
            if domains.used(&spec.name) {
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
            let policy = match &spec.placement.pool {
                Some(pool) => machine
                    .pools()
                    .find(|(name, _, _)| name == pool)
                    .map_or(machine.policy_kind(), |(_, _, config)| config.kind()),
                None => machine.policy_kind(),
            };
            let index = domains.table.joined();
            let change = Change::AddDomain(spec.clone());
            let vcpus = match domains.apply_change(machine, now, &change, &settings) {
                Ok(change::Applied::Added { vcpus, .. }) => vcpus,
                Ok(other) => unreachable!("add-domain did {other:?}"),
                Err(error) => return nothing(change_refused(error, policy, &spec.vcpu)),
            };
            done(
                format!(
                    "{}: added as {} ({} task{}, guest {}; budget {}, period {}, \
                     priority {})",
                    spec.name,
                    vcpu_list(&vcpus),
                    spec.tasks.len(),
                    if spec.tasks.len() == 1 { "" } else { "s" },
                    spec.guest.name(),
                    spec.vcpu.budget,
                    spec.vcpu.period,
                    spec.vcpu.priority
                ),
                Effect::Added {
                    index,
                    vcpus,
                    domain: spec,
                },
            )
        }
        Command::Xl(command) => match run_xl(machine, domains, now, &command) {
            Ok(XlApplied { message, index }) => done(
                message,
                match index {
                    Some(index) => Effect::Adjusted { index },
                    None => Effect::None,
                },
            ),
            Err(why) => nothing(Reply::error(ErrorCode::Refused, format!("{ORIGIN}: {why}"))),
        },
        Command::RemoveDomain { domain } => {
            if domains.vcpus(&domain).is_none() {
                return nothing(domains.unknown(&domain));
            }
            let change = Change::RemoveDomain {
                domain: domain.clone(),
            };
            let (index, vcpus) = match domains.apply_change(machine, now, &change, &settings) {
                Ok(change::Applied::Removed { index, vcpus }) => (index, vcpus),
                Ok(other) => unreachable!("remove-domain did {other:?}"),
                Err(error) => {
                    return nothing(Reply::error(
                        ErrorCode::Refused,
                        format!("{ORIGIN}: {error}"),
                    ))
                }
            };
            done(
                format!("{domain}: removed ({})", vcpu_list(&vcpus)),
                Effect::Removed {
                    index,
                    vcpus,
                    name: domain,
                },
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

/// What the executor drives, in a refusal: "one pcpu (pcpu 0, on its managed cpu)" or
/// "pcpus 0-1 (on its managed cpus)".
fn drives(driven: CpuSet) -> String {
    match driven.len() {
        1 => format!(
            "the host executor drives one pcpu (pcpu {}, on its managed cpu)",
            driven
        ),
        _ => format!("the host executor drives pcpus {driven} (on its managed cpus)"),
    }
}

/// Why an executor driving the pcpus `driven` cannot honour `command`, if it cannot: it
/// names a pcpu it does not drive (`cpupool-cpu-add`/`-remove` of it, `vcpu-pin` to it),
/// or moves a domain to a pool whose pcpus are all others. Such a command is refused
/// whole, before anything changes; everything else is the change path's to accept or
/// refuse.
pub fn xl_refusal(machine: &Machine, driven: CpuSet, command: &XlCommand) -> Option<String> {
    let one = drives(driven);
    let pin_to = match driven.len() {
        1 => format!("pin to {driven} or all"),
        _ => format!("pin within {driven} or all"),
    };
    match command {
        XlCommand::CpupoolCpuAdd { cpu, .. } | XlCommand::CpupoolCpuRemove { cpu, .. }
            if !driven.contains(*cpu) =>
        {
            Some(format!("CPU: {one}: pcpu {cpu} is not one it runs"))
        }
        XlCommand::VcpuPin {
            cpus: Some(cpus), ..
        } if !cpus.is_subset(driven) => Some(format!(
            "CPUS: {one}: a VCPU pinned to pcpus {cpus} would never run here ({pin_to})"
        )),
        XlCommand::CpupoolMigrate { pool, .. } => {
            let (_, cpus, _) = machine.pools().find(|(name, _, _)| name == pool)?;
            let which = match driven.len() {
                1 => format!("pcpu {driven}"),
                _ => format!("among pcpus {driven}"),
            };
            (!cpus.is_empty() && cpus.intersection(driven).is_empty()).then(|| {
                format!("POOL: {one}: cpupool '{pool}' has pcpus {cpus}, none of them {which}")
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
    /// The index of the domain the command concerns, when it concerns one.
    pub index: Option<usize>,
}

/// The running system's state an `xl` command can change: each running VCPU's
/// parameters and placement (pool, affinity), named by its domain (and its number in
/// the domain when the domain has several), each pool's pcpus and policy.
type XlState = (
    Vec<(String, VcpuId, VcpuParams, String, CpuSet)>,
    Vec<(String, CpuSet, PolicyKind)>,
);

fn xl_state(machine: &Machine, domains: &Domains) -> XlState {
    let running = domains.running();
    let running = running
        .iter()
        .map(|&(name, i, vcpu)| {
            let (pool, affinity) = machine.placement(vcpu);
            let several = domains.vcpus(name).is_some_and(|v| v.len() > 1);
            let name = match several {
                true => format!("{name} vcpu {i}"),
                false => name.to_string(),
            };
            (
                name,
                vcpu,
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

/// Applies an `xl` command to the executor's machine at `now`: refused when the pcpus it
/// drives cannot honour it ([`xl_refusal`]), else through the one change path
/// ([`Domains::apply_change`], which applies `xl`'s rule: every VCPU checked before any
/// changes; `sched-rtds -d D` without `-v` sets every VCPU of `D`). A pool created gets
/// the run's `[scheduler]` settings. The error names the command and the argument at
/// fault; on an error nothing has changed.
pub fn run_xl(
    machine: &mut Machine,
    domains: &mut Domains,
    now: Nanos,
    command: &XlCommand,
) -> Result<XlApplied, String> {
    let now = now.max(machine.now());
    if let Some(why) = xl_refusal(machine, domains.driven(), command) {
        return Err(format!("`{command}`: {why}; nothing changed"));
    }
    let (domains_before, pools_before) = xl_state(machine, domains);
    let settings = domains.settings().for_new_pools();
    let change = Change::Xl(command.clone());
    let index = match domains.apply_change(machine, now, &change, &settings) {
        Ok(change::Applied::Reconfigured { index }) => index,
        Ok(other) => unreachable!("xl did {other:?}"),
        Err(e) => return Err(format!("{e}; nothing changed")),
    };
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
    for ((name, vcpu, old, old_pool, old_affinity), (_, _, new, new_pool, new_affinity)) in
        domains_before.iter().zip(&domains_after)
    {
        let mut changes = param_changes(old, new);
        params_changed |= old.budget != new.budget || old.period != new.period;
        if old_pool != new_pool {
            let kind = machine.policy_of(*vcpu).kind();
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
    Ok(XlApplied { message, index })
}

/// `sched-show` from the machine's state as of its last call: one line per VCPU (a
/// domain of several VCPUs has several).
fn show(machine: &Machine, domains: &Domains, only: Option<&str>) -> Reply {
    if let Some(name) = only {
        if domains.vcpu(name).is_none() {
            return domains.unknown(name);
        }
    }
    let running: Vec<VcpuId> = (0..machine.config().pcpus)
        .filter_map(|p| machine.running(PcpuId(p)))
        .collect();
    let statuses = domains
        .running()
        .into_iter()
        .filter(|(name, _, _)| only.is_none_or(|only| only == *name))
        .map(|(name, _, vcpu)| {
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
                running: running.contains(&vcpu),
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
///         ctl::Effect::Added { vcpus, domain, .. } => start_guest(vcpus, domain),
///         ctl::Effect::Removed { index, .. } => stop_guest(index),
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
