//! The checks that need the policies: each VCPU's parameters go through the policy's own
//! [`Policy::validate`] (so the rules live in one place, in the core), through every
//! policy the scenario switches to, in event order; every time is at most [`MAX_TIME`]
//! (see "Limits" in the crate docs for why that keeps the simulator's clock from
//! overflowing); and the overheads leave room in the quantum.

use std::collections::HashMap;

use rtvmm_core::guest::{Arrival, TaskSpec};
use rtvmm_core::machine::{Machine, MachineError};
use rtvmm_core::model::{ParamError, Placement, VcpuId, VcpuParams};
use rtvmm_core::policy::{
    arinc653, credit, Arinc653Table, MinorFrame, Policy, PolicyConfig, PolicyKind, PolicySettings,
};
use rtvmm_core::Nanos;
use rtvmm_system::change::{ChangeError, Domains};
use rtvmm_system::spec::LinkError;
use rtvmm_system::{Change, DomainSpec};

use crate::error::{ErrorKind, Location, ScenarioError};
use crate::{ArincTableSpec, Scenario, SchedulerSettings};

/// Xen's `ARINC653_MAX_DOMAINS_PER_SCHEDULE`: at most this many minor frames per table.
pub use rtvmm_core::policy::arinc653::MAX_MINOR_FRAMES as ARINC653_MAX_MINOR_FRAMES;

/// The largest time a scenario may hold: 10¹⁷ ns = 100,000,000 s, about 3.2 years. Why
/// this keeps every instant the simulator computes inside its clock: "Limits" in the
/// crate docs.
pub const MAX_TIME: Nanos = Nanos(100_000_000 * 1_000_000_000);

impl Scenario {
    fn err(&self, location: Location, kind: ErrorKind) -> ScenarioError {
        ScenarioError::new(&self.file, location, kind)
    }

    /// The configuration of `kind` for this scenario, at `at` for messages.
    pub(crate) fn policy_config_at(
        &self,
        kind: PolicyKind,
        at: Location,
    ) -> Result<PolicyConfig, ScenarioError> {
        // A domain's position among those declared is the id of its VCPU; the first
        // declaration of a name counts (duplicates are refused elsewhere).
        let mut position: HashMap<&str, u32> = HashMap::new();
        for (i, name) in self.declared_domains().enumerate() {
            position.entry(name).or_insert(i as u32);
        }
        let vcpu_of = |name: &str| position.get(name).map(|&i| VcpuId(i));
        policy_config(&self.file, kind, &self.scheduler, &vcpu_of, at)
    }

    /// Every domain name in declaration order (initial domains, then added ones); a
    /// domain's position is the id of its VCPU in a run.
    pub(crate) fn declared_domains(&self) -> impl Iterator<Item = &str> {
        let initial = self.system.domains.iter().map(|d| d.name.as_str());
        let added = self.system.changes.iter().filter_map(|c| match &c.change {
            Change::AddDomain(d) => Some(d.name.as_str()),
            _ => None,
        });
        initial.chain(added)
    }

    /// Runs every check that needs the policies or the run's length. Called by the parser
    /// and by every `with_*` method; call it again after editing a `Scenario` by hand.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.duration.is_zero() {
            return Err(self.err(Location::top("duration"), ErrorKind::Zero));
        }
        self.bounded(&Location::default(), "duration", self.duration)?;
        self.check_machine_and_scheduler()?;
        if self.scheduler.arinc653.is_some() {
            // The table is checked whatever the policy: a swap to ARINC 653 may come.
            self.policy_config_at(PolicyKind::Arinc653, Location::default())?;
        }
        let machine = &self.system.machine;
        self.machine().map_err(|e| {
            let field = match e {
                MachineError::TooManyPcpus(_) | MachineError::NoPcpu => Some("pcpus"),
                MachineError::QuantumZero => Some("quantum"),
                _ => None,
            };
            let mut at = Location {
                section: Some("[machine]"),
                ..Location::default()
            };
            at.field = field.map(str::to_string);
            if field.is_none() && !self.system.has_only_default_pool() {
                at = Location::top("pool");
            }
            self.err(at, ErrorKind::Machine(e))
        })?;
        // The pools the file declares (its one implicit pool is the machine's, checked
        // below at `[machine]`).
        let declared = if self.system.has_only_default_pool() {
            &[][..]
        } else {
            &self.system.pools[..]
        };
        for p in declared {
            let overheads = p.overheads.unwrap_or(machine.overheads);
            let quantum = p.quantum.unwrap_or(machine.quantum);
            let overhead = overheads.do_schedule + overheads.context_switch;
            if overhead >= quantum {
                return Err(self.err(
                    Location {
                        pool: Some(p.name.clone()),
                        ..Location::top("overhead")
                    },
                    ErrorKind::OverheadNotBelowQuantum { overhead, quantum },
                ));
            }
        }
        // With several pcpus, pools, placement or `xl` events, a domain's policy is its
        // pool's: the policies' checks are made by replaying the file on a machine
        // (`replay`), not against the first pool's policy below.
        let policies = !self.uses_placement();
        // Both at most MAX_TIME: the sum fits.
        let overhead = machine.overheads.do_schedule + machine.overheads.context_switch;
        if overhead >= machine.quantum {
            return Err(self.err(
                Location::section("[machine]", "overhead"),
                ErrorKind::OverheadNotBelowQuantum {
                    overhead,
                    quantum: machine.quantum,
                },
            ));
        }

        let mut kind = self.system.policy().kind();
        let mut policy = self.system.policy().build(machine.pcpus);
        let mut live = Live::new(self.swap_targets(machine.pcpus));
        for d in &self.system.domains {
            self.check_domain(policy.as_ref(), kind, d, Location::default(), policies)?;
            if live.index(&d.name).is_some() {
                return Err(self.duplicate_domain(&d.name, Location::top("name")));
            }
            live.insert(&d.name, &d.vcpu);
        }
        let mut previous = Nanos::ZERO;
        for (i, c) in self.system.changes.iter().enumerate() {
            let here = Location {
                event: Some(i + 1),
                ..Location::default()
            };
            self.bounded(&here, "at", c.at)?;
            if c.at < previous {
                return Err(self.err(
                    here.field("at"),
                    ErrorKind::EventsOutOfOrder { at: c.at, previous },
                ));
            }
            previous = c.at;
            let find = |live: &Live, name: &str| {
                live.index(name).ok_or_else(|| {
                    self.err(
                        here.field("domain"),
                        ErrorKind::UnknownDomain {
                            name: name.to_string(),
                            when: format!(" at {}", c.at),
                        },
                    )
                })
            };
            match &c.change {
                Change::SetParams { domain, params } => {
                    let index = find(&live, domain)?;
                    let at = Location {
                        domain: Some(domain.clone()),
                        ..here.clone()
                    };
                    self.check_vcpu(policy.as_ref(), kind, params, at, policies)?;
                    live.set(index, params);
                }
                Change::SwapPolicy(config) => {
                    let new_policy = config.build(machine.pcpus);
                    // Only when some live domain is refused: find the first, for its error.
                    if let Some((name, params)) = live.first_refused_by(config).filter(|_| policies)
                    {
                        let at = Location {
                            domain: Some(name.to_string()),
                            ..here.clone()
                        };
                        self.check_vcpu(new_policy.as_ref(), config.kind(), params, at, true)?;
                    }
                    kind = config.kind();
                    policy = new_policy;
                }
                Change::AddDomain(spec) => {
                    if live.index(&spec.name).is_some() {
                        return Err(self.duplicate_domain(&spec.name, here.field("domain.name")));
                    }
                    self.check_domain(policy.as_ref(), kind, spec, here.clone(), policies)?;
                    live.insert(&spec.name, &spec.vcpu);
                }
                Change::RemoveDomain { domain } => {
                    let index = find(&live, domain)?;
                    live.remove(index);
                }
                Change::Xl(_) => {}
            }
        }
        if !policies {
            self.replay()?;
        }
        self.check_links()
    }

    /// Every trigger names a task of the file and every `[[chain]]` is a sequence of tasks
    /// linked by triggers: the simulator's own check ([`SystemSpec::check_links`]), its
    /// problems said at the task's `trigger` or the chain's `tasks`.
    fn check_links(&self) -> Result<(), ScenarioError> {
        match self.system.check_links() {
            Ok(()) => Ok(()),
            Err(LinkError::UnknownTrigger(t)) => {
                // An added domain's task: at its event.
                let event =
                    self.system.changes.iter().position(
                        |c| matches!(&c.change, Change::AddDomain(d) if d.name == t.domain),
                    );
                let in_file = self.system.domains.iter().any(|d| d.name == t.domain);
                let at = Location {
                    event: event.filter(|_| !in_file).map(|i| i + 1),
                    domain: Some(t.domain.clone()),
                    task: Some(t.task.clone()),
                    ..Location::top("trigger")
                };
                Err(self.err(
                    at,
                    ErrorKind::UnknownTrigger {
                        by_domain: t.by_domain,
                        by_task: t.by_task,
                        what: t.what,
                    },
                ))
            }
            Err(LinkError::Chain { chain, problem }) => {
                let at = Location {
                    chain: Some(chain),
                    // The problem names the task.
                    ..Location::top("tasks")
                };
                Err(self.err(at, ErrorKind::Chain(problem)))
            }
        }
    }

    /// Whether the file uses more than one pcpu, pools, a domain's placement or `xl`
    /// events: what a machine of one pcpu and one pool cannot say.
    pub fn uses_placement(&self) -> bool {
        let placed = |d: &DomainSpec| d.placement != Placement::default();
        self.system.machine.pcpus > 1
            || !self.system.has_only_default_pool()
            || self.system.domains.iter().any(placed)
            || self.system.changes.iter().any(|c| match &c.change {
                Change::Xl(_) => true,
                Change::AddDomain(d) => placed(d),
                _ => false,
            })
    }

    /// The machine the run starts with (its pools, or one of every pcpu), without VCPUs.
    fn machine(&self) -> Result<Machine, MachineError> {
        self.system.machine()
    }

    /// Plays the file's domains and events on a machine without work, in order, so that
    /// everything a run would refuse — a VCPU's parameters under its pool's policy, an
    /// affinity outside its pool, an `xl` command at its time — is refused here, naming
    /// the domain or the event. Time does not matter to these checks: all happens at 0.
    fn replay(&self) -> Result<(), ScenarioError> {
        let now = Nanos::ZERO;
        let mut machine = self
            .machine()
            .map_err(|e| self.err(Location::top("pool"), ErrorKind::Machine(e)))?;
        let mut table = Domains::default();
        let initial = self.system.domains.iter().cloned().map(Change::AddDomain);
        let events = self.system.changes.iter().map(|c| c.change.clone());
        for (i, change) in initial.chain(events).enumerate() {
            let event = i.checked_sub(self.system.domains.len()).map(|e| e + 1);
            let here = Location {
                event,
                ..Location::default()
            };
            let settings = &self.system.policy_settings;
            if let Err(e) = table.apply(&mut machine, now, &change, settings) {
                return Err(self.replay_error(&machine, &table, &change, here, e));
            }
        }
        Ok(())
    }

    /// A change the replay refused, said where the file says it: the domain's `vcpu`,
    /// `pool` or `affinity`, or the event's `xl`.
    fn replay_error(
        &self,
        machine: &Machine,
        table: &Domains,
        change: &Change,
        here: Location,
        error: ChangeError,
    ) -> ScenarioError {
        let at_domain = |domain: &str, field: &str| Location {
            domain: Some(domain.to_string()),
            ..here.field(field)
        };
        // The domain a VCPU id belongs to, and its parameters.
        let owner = |vcpu: u32| {
            table
                .domains
                .iter()
                .find(|(_, vcpus, present)| *present && vcpus.contains(&VcpuId(vcpu)))
                .map(|(spec, _, _)| spec.name.clone())
        };
        match (error, change) {
            (ChangeError::Machine { domain, error }, Change::AddDomain(spec)) => {
                let pool = spec.placement.pool.as_deref();
                let kind = pool
                    .map_or(Ok(0), |name| machine.pool_index(name))
                    .ok()
                    .and_then(|p| machine.pools().nth(p))
                    .map_or(PolicyKind::Deferrable, |p| p.2.kind());
                match error {
                    MachineError::Param { error, .. } => self.err(
                        at_domain(&domain, "vcpu"),
                        vcpu_error(kind, &spec.vcpu, error),
                    ),
                    other => {
                        let pinned = spec.placement.affinity.iter().any(Option::is_some);
                        let about_affinity = matches!(
                            other,
                            MachineError::AffinityOutsidePool { .. }
                                | MachineError::NeedsPinning { .. }
                        );
                        let field = if pinned && about_affinity {
                            "affinity"
                        } else {
                            "pool"
                        };
                        self.err(at_domain(&domain, field), ErrorKind::Machine(other))
                    }
                }
            }
            (
                ChangeError::Machine {
                    domain,
                    error: MachineError::Param { vcpu, error },
                },
                Change::SetParams { params, .. },
            ) => {
                let kind = machine.policy_of(VcpuId(vcpu)).kind();
                self.err(at_domain(&domain, "vcpu"), vcpu_error(kind, params, error))
            }
            (
                ChangeError::Swap(MachineError::Param { vcpu, error }),
                Change::SwapPolicy(config),
            ) => {
                let params = machine.params(VcpuId(vcpu)).clone();
                let at = Location {
                    domain: owner(vcpu),
                    ..here.field("vcpu")
                };
                self.err(at, vcpu_error(config.kind(), &params, error))
            }
            (ChangeError::Swap(other) | ChangeError::Machine { error: other, .. }, _) => {
                self.err(here, ErrorKind::Machine(other))
            }
            (ChangeError::Xl(e), _) => self.err(here.field("xl"), ErrorKind::Xl(e)),
            (ChangeError::AffinityOutOfRange { domain, .. }, _) => {
                let e = ChangeError::AffinityOutOfRange {
                    domain: domain.clone(),
                    vcpu: 0,
                    pcpu: 0,
                };
                self.err(
                    at_domain(&domain, "affinity"),
                    ErrorKind::Invalid(e.to_string()),
                )
            }
            (ChangeError::DuplicateDomain { domain, .. }, _) => {
                self.duplicate_domain(&domain, here)
            }
            (other, _) => self.err(here, ErrorKind::Invalid(other.to_string())),
        }
    }

    /// Every policy configuration an event switches to, once each, built.
    fn swap_targets(&self, pcpus: u32) -> Vec<(&PolicyConfig, Box<dyn Policy>)> {
        let mut targets: Vec<(&PolicyConfig, Box<dyn Policy>)> = Vec::new();
        for c in &self.system.changes {
            if let Change::SwapPolicy(config) = &c.change {
                if !targets.iter().any(|(known, _)| *known == config) {
                    targets.push((config, config.build(pcpus)));
                }
            }
        }
        targets
    }

    fn duplicate_domain(&self, name: &str, mut at: Location) -> ScenarioError {
        at.domain = Some(name.to_string());
        self.err(
            at,
            ErrorKind::Duplicate {
                what: "domain",
                name: name.to_string(),
                scope: "domain names are unique in a file, added domains included",
            },
        )
    }

    /// `value` of `field` at `at` is at most [`MAX_TIME`].
    fn bounded(&self, at: &Location, field: &str, value: Nanos) -> Result<(), ScenarioError> {
        if value > MAX_TIME {
            return Err(self.err(
                at.field(field),
                ErrorKind::TooLarge {
                    value,
                    limit: MAX_TIME,
                },
            ));
        }
        Ok(())
    }

    /// The times of `[machine]` and `[scheduler]` are bounded.
    fn check_machine_and_scheduler(&self) -> Result<(), ScenarioError> {
        let machine = &self.system.machine;
        let at = Location {
            section: Some("[machine]"),
            ..Location::default()
        };
        let overheads = machine.overheads;
        self.bounded(&at, "quantum", machine.quantum)?;
        self.bounded(&at, "overhead.do_schedule", overheads.do_schedule)?;
        self.bounded(&at, "overhead.context_switch", overheads.context_switch)?;
        self.bounded(&at, "overhead.migration", overheads.migration)?;
        self.bounded(&at, "overhead.lock", overheads.lock)?;
        for p in &self.system.pools {
            let at = Location {
                pool: Some(p.name.clone()),
                ..Location::default()
            };
            if let Some(q) = p.quantum {
                self.bounded(&at, "quantum", q)?;
            }
            if let Some(o) = p.overheads {
                self.bounded(&at, "overhead.do_schedule", o.do_schedule)?;
                self.bounded(&at, "overhead.context_switch", o.context_switch)?;
                self.bounded(&at, "overhead.migration", o.migration)?;
                self.bounded(&at, "overhead.lock", o.lock)?;
            }
        }
        let at = Location {
            section: Some("[scheduler]"),
            ..Location::default()
        };
        // Credit's slice and accounting period are tick multiples: bounded as products.
        let credit = &self.scheduler.credit;
        self.bounded(&at, "credit.tick", credit.tick)?;
        self.bounded(&at, "credit.ticks_per_slice", credit.slice())?;
        self.bounded(
            &at,
            "credit.ticks_per_accounting",
            credit.accounting_period(),
        )?;
        if let Some(table) = &self.scheduler.arinc653 {
            self.bounded(&at, "major_frame", table.major_frame)?;
            for (i, frame) in table.minor_frames.iter().enumerate() {
                let field = format!("minor_frames[{}].runtime", i + 1);
                self.bounded(&at, &field, frame.runtime)?;
            }
        }
        Ok(())
    }

    /// A VCPU's times are bounded and, when `policies`, `policy` accepts its parameters.
    fn check_vcpu(
        &self,
        policy: &dyn Policy,
        kind: PolicyKind,
        params: &VcpuParams,
        at: Location,
        policies: bool,
    ) -> Result<(), ScenarioError> {
        for (field, value) in [
            ("vcpu.budget", params.budget),
            ("vcpu.period", params.period),
            ("vcpu.offset", params.offset),
        ] {
            self.bounded(&at, field, value)?;
        }
        if !policies {
            return Ok(());
        }
        policy
            .validate(params)
            .map_err(|error| self.err(at.field("vcpu"), vcpu_error(kind, params, error)))
    }

    /// A domain under the policy in effect when it joins: its VCPU and its tasks.
    fn check_domain(
        &self,
        policy: &dyn Policy,
        kind: PolicyKind,
        domain: &DomainSpec,
        base: Location,
        policies: bool,
    ) -> Result<(), ScenarioError> {
        let here = Location {
            domain: Some(domain.name.clone()),
            ..base
        };
        self.check_vcpu(policy, kind, &domain.vcpu, here.clone(), policies)?;
        for task in &domain.tasks {
            let at = Location {
                task: Some(task.name.clone()),
                ..here.clone()
            };
            self.check_task(task, &at)?;
        }
        Ok(())
    }

    fn check_task(&self, task: &TaskSpec, at: &Location) -> Result<(), ScenarioError> {
        if task.wcet.is_zero() || task.period.is_zero() || task.deadline.is_zero() {
            let field = if task.wcet.is_zero() {
                "wcet"
            } else if task.period.is_zero() {
                "period"
            } else {
                "deadline"
            };
            return Err(self.err(at.field(field), ErrorKind::Zero));
        }
        for (field, value) in [
            ("period", task.period),
            ("wcet", task.wcet),
            ("min_exec", task.min_exec),
            ("deadline", task.deadline),
            ("offset", task.offset),
        ] {
            self.bounded(at, field, value)?;
        }
        match &task.arrival {
            Arrival::Periodic => Ok(()),
            Arrival::Sporadic { max_extra_gap } => {
                self.bounded(at, "max_extra_gap", *max_extra_gap)
            }
            Arrival::AperiodicTimes(times) => match times.iter().position(|&t| t > MAX_TIME) {
                Some(i) => self.bounded(at, &format!("releases[{}]", i + 1), times[i]),
                None => Ok(()),
            },
            Arrival::Poisson { mean_gap } => self.bounded(at, "mean_gap", *mean_gap),
            Arrival::Triggered { delay, .. } => self.bounded(at, "delay", *delay),
        }
    }
}

/// Why `policy` refused a VCPU's `params`: the policy's own reason, or — when budget and
/// period were never given and the policy needs them — a hint to give them.
pub(crate) fn vcpu_error(policy: PolicyKind, params: &VcpuParams, error: ParamError) -> ErrorKind {
    let unset = params.budget.is_zero() && params.period.is_zero();
    if unset && matches!(error, ParamError::PeriodZero | ParamError::BudgetZero) {
        ErrorKind::NeedsServerParams { policy }
    } else {
        ErrorKind::Param { policy, error }
    }
}

/// The configuration of `kind` under `settings` (Credit's checked, ARINC 653's table
/// resolved: `vcpu_of` gives the VCPU of a domain name). Errors name `file` and, for a
/// missing table, `at`.
pub(crate) fn policy_config(
    file: &str,
    kind: PolicyKind,
    settings: &SchedulerSettings,
    vcpu_of: &dyn Fn(&str) -> Option<VcpuId>,
    at: Location,
) -> Result<PolicyConfig, ScenarioError> {
    let err = |location, kind| ScenarioError::new(file, location, kind);
    if kind == PolicyKind::Credit {
        // The core's rules; the parser already refuses zero times with a field.
        credit::validate_config(&settings.credit).map_err(|problem| {
            err(
                Location::section("[scheduler]", "credit"),
                ErrorKind::Invalid(problem),
            )
        })?;
    }
    let arinc653 = match (kind, &settings.arinc653) {
        (PolicyKind::Arinc653, Some(table)) => Some(arinc_table(file, table, vcpu_of)?),
        _ => None,
    };
    let settings = PolicySettings {
        credit: settings.credit,
        rtds: settings.rtds,
        arinc653,
    };
    settings
        .config(kind)
        .map_err(|_| err(at, ErrorKind::NeedsArincTable))
}

/// Checks an ARINC 653 table and turns its domain names into VCPU ids (`vcpu_of`). The
/// checks here name the minor frame at fault; the core's [`arinc653::validate_table`] has
/// the last word.
fn arinc_table(
    file: &str,
    table: &ArincTableSpec,
    vcpu_of: &dyn Fn(&str) -> Option<VcpuId>,
) -> Result<Arinc653Table, ScenarioError> {
    let err = |location, kind| ScenarioError::new(file, location, kind);
    let at = |field: String| Location::section("[scheduler]", &field);
    if table.major_frame.is_zero() {
        return Err(err(at("major_frame".into()), ErrorKind::Zero));
    }
    let count = table.minor_frames.len();
    if count > ARINC653_MAX_MINOR_FRAMES {
        return Err(err(
            at("minor_frames".into()),
            ErrorKind::TooManyMinorFrames {
                count,
                max: ARINC653_MAX_MINOR_FRAMES,
            },
        ));
    }
    let mut total = Nanos::ZERO;
    let mut minor_frames = Vec::with_capacity(count);
    for (i, frame) in table.minor_frames.iter().enumerate() {
        let field = |name: &str| at(format!("minor_frames[{}].{name}", i + 1));
        if frame.runtime.is_zero() {
            return Err(err(field("runtime"), ErrorKind::Zero));
        }
        let vcpu = vcpu_of(frame.domain.as_str()).ok_or_else(|| {
            err(
                field("domain"),
                ErrorKind::UnknownDomain {
                    name: frame.domain.clone(),
                    when: String::new(),
                },
            )
        })?;
        total = total.checked_add(frame.runtime).ok_or_else(|| {
            err(
                field("runtime"),
                ErrorKind::Overflow {
                    detail: "the sum of the minor frames".to_string(),
                },
            )
        })?;
        minor_frames.push(MinorFrame {
            vcpu,
            runtime: frame.runtime,
        });
    }
    if total > table.major_frame {
        return Err(err(
            at("minor_frames".into()),
            ErrorKind::MinorFramesExceedMajorFrame {
                total,
                major_frame: table.major_frame,
            },
        ));
    }
    let table = Arinc653Table {
        major_frame: table.major_frame,
        minor_frames,
    };
    arinc653::validate_table(&table)
        .map_err(|problem| err(at("minor_frames".into()), ErrorKind::Invalid(problem)))?;
    Ok(table)
}

/// The domains present at one point of the event list, and, for every policy an event
/// switches to, how many of them that policy would refuse: each event then costs time
/// independent of the number of domains (a swap checks one counter instead of every
/// domain), which keeps validation linear in the size of the file.
struct Live<'a> {
    /// The policies events switch to.
    targets: Vec<(&'a PolicyConfig, Box<dyn Policy>)>,
    /// Present domains in joining order; `None` once removed.
    slots: Vec<Option<LiveDomain<'a>>>,
    /// Name → slot, for present domains.
    by_name: HashMap<&'a str, usize>,
    /// Per target: present domains whose parameters it refuses.
    refused: Vec<usize>,
}

struct LiveDomain<'a> {
    name: &'a str,
    params: &'a VcpuParams,
    /// Per target: whether it refuses `params`.
    refused_by: Vec<bool>,
}

impl<'a> Live<'a> {
    fn new(targets: Vec<(&'a PolicyConfig, Box<dyn Policy>)>) -> Live<'a> {
        Live {
            refused: vec![0; targets.len()],
            targets,
            slots: Vec::new(),
            by_name: HashMap::new(),
        }
    }

    fn index(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    fn count(&mut self, slot: usize, sign: isize) {
        if let Some(d) = &self.slots[slot] {
            for (j, &refused) in d.refused_by.iter().enumerate() {
                if refused {
                    self.refused[j] = self.refused[j].wrapping_add_signed(sign);
                }
            }
        }
    }

    fn domain(&self, name: &'a str, params: &'a VcpuParams) -> LiveDomain<'a> {
        let refused_by = self
            .targets
            .iter()
            .map(|(_, policy)| policy.validate(params).is_err())
            .collect();
        LiveDomain {
            name,
            params,
            refused_by,
        }
    }

    fn insert(&mut self, name: &'a str, params: &'a VcpuParams) {
        let slot = self.slots.len();
        self.slots.push(Some(self.domain(name, params)));
        self.count(slot, 1);
        self.by_name.insert(name, slot);
    }

    fn set(&mut self, slot: usize, params: &'a VcpuParams) {
        self.count(slot, -1);
        let name = self.slots[slot].as_ref().expect("present").name;
        self.slots[slot] = Some(self.domain(name, params));
        self.count(slot, 1);
    }

    fn remove(&mut self, slot: usize) {
        self.count(slot, -1);
        if let Some(d) = self.slots[slot].take() {
            self.by_name.remove(d.name);
        }
    }

    /// The first present domain (in joining order) that `config` refuses, if any.
    fn first_refused_by(&self, config: &PolicyConfig) -> Option<(&'a str, &'a VcpuParams)> {
        let j = self.targets.iter().position(|(c, _)| *c == config)?;
        if self.refused[j] == 0 {
            return None;
        }
        self.slots
            .iter()
            .flatten()
            .find(|d| d.refused_by[j])
            .map(|d| (d.name, d.params))
    }
}
