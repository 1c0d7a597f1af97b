//! From the file as written ([`crate::raw`]) to a [`Scenario`]: units, defaults, names,
//! derived priorities and weights, and the events resolved into full parameter sets.
//! The policies' own parameter checks run afterwards, in [`Scenario::validate`].

use std::collections::{BTreeMap, HashSet};

use rtvmm_analysis::rate_monotonic_ranks;
use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::guest::{Arrival, GuestScheduler, TaskSpec, MAX_VCPUS};
use rtvmm_core::machine::{MachineConfig, OverheadCharge, Overheads, PoolSpec, ReplenishMode};
use rtvmm_core::model::{
    GuestSmp, Placement, VcpuParams, DEFAULT_MAX_REPLENISHMENTS, DEFAULT_WEIGHT,
};
use rtvmm_core::policy::{CreditConfig, PolicyConfig, PolicyKind, RtdsMode};
use rtvmm_core::time::TimeParseError;
use rtvmm_core::wake::WakeDelivery;
use rtvmm_core::xl::{parse_cpu_list, VcpuSel, XlCommand};
use rtvmm_core::Nanos;
use rtvmm_system::{ChainSpec, Change, DomainSpec, SystemSpec, TimedChange};

use crate::error::{ErrorKind, Location, ScenarioError};
use crate::raw::{
    RawChain, RawDomain, RawEvent, RawMachine, RawOverhead, RawPool, RawScenario, RawScheduler,
    RawTask, RawTime, RawVcpu,
};
use crate::wake::wake_delivery_from_value;
use crate::{ArincTableSpec, NamedMinorFrame, Scenario, SchedulerSettings, DEFAULT_SEED, MAX_TIME};

/// Parses and converts; does not run the policies' checks (the caller does).
pub(crate) fn build(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
    let raw: RawScenario = crate::raw::parse(text, file)?;
    Builder { file }.scenario(raw)
}

/// A `sched-set`: the domain and the parameters it gives; the others keep their values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParamUpdate {
    pub domain: String,
    pub budget: Option<Nanos>,
    pub period: Option<Nanos>,
    pub priority: Option<u32>,
    pub weight: Option<u32>,
    pub cap: Option<u32>,
    pub extratime: Option<bool>,
    pub max_replenishments: Option<u32>,
}

impl ParamUpdate {
    /// `params` with this update applied. A weight that was never given (`weight_given`
    /// false) follows a new budget or period (it is the share's, see the crate docs).
    pub fn applied_to(&self, params: &VcpuParams, weight_given: bool) -> VcpuParams {
        let mut new = params.clone();
        new.budget = self.budget.unwrap_or(params.budget);
        new.period = self.period.unwrap_or(params.period);
        new.priority = self.priority.unwrap_or(params.priority);
        new.cap = self.cap.unwrap_or(params.cap);
        new.extratime = self.extratime.or(params.extratime);
        new.max_replenishments = self.max_replenishments.unwrap_or(params.max_replenishments);
        new.weight = match self.weight {
            Some(w) => w,
            None if weight_given => params.weight,
            None => default_weight(&new),
        };
        new
    }
}

/// Credit weight proportional to a server's share (the core's rule,
/// [`rtvmm_core::model::credit_weight_from_share`]).
pub use rtvmm_core::model::credit_weight_from_share as weight_from_share;

/// The canonical names and aliases of every policy, for messages.
pub(crate) fn policy_names() -> String {
    PolicyKind::ALL
        .iter()
        .map(|k| {
            let mut s = k.name().to_string();
            for alias in k.aliases() {
                s.push_str(&format!(" ({alias})"));
            }
            s
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// A domain before priorities and weights are settled.
pub(crate) struct DomainDraft {
    pub(crate) spec: DomainSpec,
    /// `Some` for an external domain (`attach`, `pids`).
    pub(crate) external: Option<crate::External>,
    pub(crate) priority_given: bool,
    pub(crate) weight_given: bool,
}

pub(crate) enum EventDraft {
    SetParams(ParamUpdate),
    SwapPolicy(PolicyKind),
    /// Index into the list of drafts.
    AddDomain(usize),
    RemoveDomain(String),
    Xl(XlCommand),
}

/// A `[[pool]]` before its policy's configuration is made (an ARINC 653 table needs every
/// domain).
struct PoolDraft {
    spec: PoolSpec,
    kind: PolicyKind,
}

pub(crate) struct Builder<'a> {
    pub(crate) file: &'a str,
}

impl Builder<'_> {
    pub(crate) fn err(&self, location: Location, kind: ErrorKind) -> ScenarioError {
        ScenarioError::new(self.file, location, kind)
    }

    /// A time as written, at most [`MAX_TIME`].
    fn time(&self, raw: &RawTime, at: &Location) -> Result<Nanos, ScenarioError> {
        match raw {
            RawTime::Text(text) => {
                let t: Nanos = text.parse().map_err(|e| {
                    let kind = match e {
                        TimeParseError::MissingUnit(value) => ErrorKind::BareNumber { value },
                        other => ErrorKind::Time(other),
                    };
                    self.err(at.clone(), kind)
                })?;
                if t > MAX_TIME {
                    return Err(self.err(
                        at.clone(),
                        ErrorKind::TooLarge {
                            value: t,
                            limit: MAX_TIME,
                        },
                    ));
                }
                Ok(t)
            }
            RawTime::Bare(value) => Err(self.err(
                at.clone(),
                ErrorKind::BareNumber {
                    value: value.clone(),
                },
            )),
            RawTime::Other(found) => Err(self.err(
                at.clone(),
                ErrorKind::NotATime {
                    found: found.clone(),
                },
            )),
        }
    }

    fn positive_time(&self, raw: &RawTime, at: &Location) -> Result<Nanos, ScenarioError> {
        let t = self.time(raw, at)?;
        if t.is_zero() {
            return Err(self.err(at.clone(), ErrorKind::Zero));
        }
        Ok(t)
    }

    fn opt_time(
        &self,
        raw: Option<&RawTime>,
        at: &Location,
        positive: bool,
    ) -> Result<Option<Nanos>, ScenarioError> {
        raw.map(|r| {
            if positive {
                self.positive_time(r, at)
            } else {
                self.time(r, at)
            }
        })
        .transpose()
    }

    fn required<T>(&self, value: Option<T>, at: &Location) -> Result<T, ScenarioError> {
        value.ok_or_else(|| self.err(at.clone(), ErrorKind::Missing))
    }

    fn u32_field(&self, value: i64, at: &Location, min: u32) -> Result<u32, ScenarioError> {
        match u32::try_from(value) {
            Ok(v) if v >= min => Ok(v),
            _ => Err(self.err(
                at.clone(),
                ErrorKind::OutOfRange {
                    value: value.to_string(),
                    expected: if min == 0 {
                        "a whole number from 0 to 4294967295"
                    } else {
                        "a whole number from 1 to 4294967295"
                    },
                },
            )),
        }
    }

    fn opt_u32(&self, value: Option<i64>, at: &Location) -> Result<Option<u32>, ScenarioError> {
        value.map(|v| self.u32_field(v, at, 0)).transpose()
    }

    fn name(&self, value: Option<String>, at: &Location) -> Result<String, ScenarioError> {
        let name = self.required(value, at)?;
        if name.trim().is_empty() {
            return Err(self.err(
                at.clone(),
                ErrorKind::Invalid("must not be empty".to_string()),
            ));
        }
        let length = name.chars().count();
        if length > crate::MAX_NAME_CHARS {
            return Err(self.err(at.clone(), ErrorKind::NameTooLong { length }));
        }
        Ok(name)
    }

    fn scenario(&self, raw: RawScenario) -> Result<Scenario, ScenarioError> {
        let name = match raw.name {
            Some(name) => self.name(Some(name), &Location::top("name"))?,
            None => default_name(self.file),
        };
        let duration_at = Location::top("duration");
        let duration = self.positive_time(
            self.required(raw.duration.as_ref(), &duration_at)?,
            &duration_at,
        )?;
        let seed = match raw.seed {
            None => DEFAULT_SEED,
            Some(s) => u64::try_from(s).map_err(|_| {
                self.err(
                    Location::top("seed"),
                    ErrorKind::OutOfRange {
                        value: s.to_string(),
                        expected: "a whole number from 0 to 9223372036854775807",
                    },
                )
            })?,
        };
        let machine = self.machine(raw.machine.unwrap_or_default())?;
        let (policy, scheduler) = self.scheduler(raw.scheduler.unwrap_or_default())?;
        let pools = self.pools(raw.pool, &machine, policy)?;
        // With pools, the first one's policy is the system's.
        let policy = pools.first().map_or(policy, |p| p.kind);

        // Every domain the file declares, initial ones first, then those added by events.
        let mut drafts = Vec::new();
        for d in raw.domain {
            drafts.push(self.domain(d, Location::default(), &machine)?);
        }
        let initial = drafts.len();
        let mut events = Vec::new();
        let mut previous_at = Nanos::ZERO;
        for (i, e) in raw.event.into_iter().enumerate() {
            let at = Location {
                event: Some(i + 1),
                ..Location::default()
            };
            let (time, event) = self.event(e, &at, &mut drafts, &machine)?;
            if time < previous_at {
                return Err(self.err(
                    at.field("at"),
                    ErrorKind::EventsOutOfOrder {
                        at: time,
                        previous: previous_at,
                    },
                ));
            }
            previous_at = time;
            events.push((i + 1, time, event));
        }
        self.unique_domain_names(&drafts, initial)?;
        resolve_triggers(&mut drafts);
        let chains = self.chains(raw.chain, &drafts)?;
        self.settle_priorities(&mut drafts)?;
        for d in &mut drafts {
            if !d.weight_given {
                d.spec.vcpu.weight = default_weight(&d.spec.vcpu);
            }
        }

        let mut scenario = Scenario {
            file: self.file.to_string(),
            name,
            duration,
            seed,
            system: SystemSpec {
                chains,
                domains: drafts[..initial].iter().map(|d| d.spec.clone()).collect(),
                policy_settings: scheduler.for_new_pools(),
                // The pools are set last, below, once their policies can be configured.
                ..SystemSpec::one_pool(machine, PolicyConfig::Deferrable)
            },
            scheduler,
            external: drafts
                .iter()
                .filter_map(|d| Some((d.spec.name.clone(), d.external.clone()?)))
                .collect(),
        };
        let (changes, swaps) = self.changes(events, &drafts, initial)?;
        scenario.system.changes = changes;
        // Policy configurations last: an ARINC 653 table names VCPUs by the order in which
        // domains are declared, added ones included. Each kind's configuration is the same
        // for every swap to it: made once.
        let mut configs: Vec<(PolicyKind, PolicyConfig)> = Vec::new();
        for (index, number, kind) in swaps {
            let config = match configs.iter().find(|(k, _)| *k == kind) {
                Some((_, config)) => config.clone(),
                None => {
                    let at = Location {
                        event: Some(number),
                        ..Location::top("policy")
                    };
                    let config = scenario.policy_config_at(kind, at)?;
                    configs.push((kind, config.clone()));
                    config
                }
            };
            scenario.system.changes[index].change = Change::SwapPolicy(config);
        }
        // Pools are the only truth: a file without `[[pool]]`s has one, `Pool-0`, of every
        // pcpu under `[scheduler]`'s policy.
        if pools.is_empty() {
            let config =
                scenario.policy_config_at(policy, Location::section("[scheduler]", "policy"))?;
            scenario.system.pools[0].policy = config;
            return Ok(scenario);
        }
        scenario.system.pools.clear();
        for mut pool in pools {
            let at = Location {
                pool: Some(pool.spec.name.clone()),
                ..Location::top("policy")
            };
            pool.spec.policy = scenario.policy_config_at(pool.kind, at)?;
            scenario.system.pools.push(pool.spec);
        }
        Ok(scenario)
    }

    fn machine(&self, raw: RawMachine) -> Result<MachineConfig, ScenarioError> {
        let at = |field: &str| Location::section("[machine]", field);
        let defaults = MachineConfig::default();
        let pcpus = match raw.pcpus {
            None => defaults.pcpus,
            Some(n) => self.u32_field(n, &at("pcpus"), 0)?,
        };
        let quantum = self
            .opt_time(raw.quantum.as_ref(), &at("quantum"), false)?
            .unwrap_or(defaults.quantum);
        let replenishment = match raw.replenishment.as_deref() {
            None => defaults.replenishment,
            Some(text) => match text.trim().to_ascii_lowercase().as_str() {
                "exact" => ReplenishMode::Exact,
                "tick" => ReplenishMode::Tick,
                _ => {
                    return Err(self.err(
                        at("replenishment"),
                        ErrorKind::UnknownName {
                            what: "replenishment mode",
                            name: text.to_string(),
                            expected: "exact, tick".to_string(),
                        },
                    ))
                }
            },
        };
        let overheads = self.overheads(
            raw.overhead.unwrap_or_default(),
            &Location::section("[machine]", ""),
            Overheads::ZERO,
        )?;
        let overhead_charge = match raw.overhead_charge.as_deref() {
            None => defaults.overhead_charge,
            Some(text) => OverheadCharge::from_name(text.trim()).ok_or_else(|| {
                self.err(
                    at("overhead_charge"),
                    ErrorKind::UnknownName {
                        what: "overhead charge",
                        name: text.to_string(),
                        expected: "incoming, none".to_string(),
                    },
                )
            })?,
        };
        let wake_delivery = match &raw.wake_delivery {
            None => WakeDelivery::OFF,
            Some(value) => wake_delivery_from_value(value).map_err(|(field, kind)| {
                let field = match field.as_str() {
                    "" => "wake_delivery".to_string(),
                    f => format!("wake_delivery.{f}"),
                };
                self.err(at(&field), kind)
            })?,
        };
        Ok(MachineConfig {
            pcpus,
            quantum,
            replenishment,
            overheads,
            overhead_charge,
            wake_delivery,
        })
    }

    /// An `overhead = { .. }` table at `at` (its `field` is ignored); keys not given keep
    /// `base`'s values.
    fn overheads(
        &self,
        raw: RawOverhead,
        at: &Location,
        base: Overheads,
    ) -> Result<Overheads, ScenarioError> {
        let time = |value: Option<&RawTime>, key: &str, base: Nanos| {
            self.opt_time(value, &at.field(&format!("overhead.{key}")), false)
                .map(|t| t.unwrap_or(base))
        };
        Ok(Overheads {
            do_schedule: time(raw.do_schedule.as_ref(), "do_schedule", base.do_schedule)?,
            context_switch: time(
                raw.context_switch.as_ref(),
                "context_switch",
                base.context_switch,
            )?,
            migration: time(raw.migration.as_ref(), "migration", base.migration)?,
            lock: time(raw.lock.as_ref(), "lock", base.lock)?,
        })
    }

    /// The `[[pool]]` tables: names unique, pcpus on the machine and in one pool each.
    fn pools(
        &self,
        raw: Vec<RawPool>,
        machine: &MachineConfig,
        default_policy: PolicyKind,
    ) -> Result<Vec<PoolDraft>, ScenarioError> {
        let mut pools: Vec<PoolDraft> = Vec::with_capacity(raw.len());
        for (i, p) in raw.into_iter().enumerate() {
            let unnamed = Location {
                pool: Some(format!("#{}", i + 1)),
                ..Location::default()
            };
            let name = self.name(p.name, &unnamed.field("name"))?;
            let here = Location {
                pool: Some(name.clone()),
                ..Location::default()
            };
            if pools.iter().any(|q| q.spec.name == name) {
                return Err(self.err(
                    here.field("name"),
                    ErrorKind::Duplicate {
                        what: "pool",
                        name,
                        scope: "pool names are unique in a file",
                    },
                ));
            }
            let pcpus_at = here.field("pcpus");
            let pcpus = self.cpu_set(self.required(p.pcpus, &pcpus_at)?, machine, &pcpus_at)?;
            for q in &pools {
                if let Some(c) = q.spec.pcpus.intersection(pcpus).lowest() {
                    return Err(self.err(
                        pcpus_at,
                        ErrorKind::Invalid(format!(
                            "pcpu {c} is in pool '{}' already: a pcpu belongs to one pool",
                            q.spec.name
                        )),
                    ));
                }
            }
            let kind = match p.policy.as_deref() {
                None => default_policy,
                Some(text) => self.policy_kind(text, &here.field("policy"))?,
            };
            let quantum = self.opt_time(p.quantum.as_ref(), &here.field("quantum"), true)?;
            let overheads = p
                .overhead
                .map(|o| self.overheads(o, &here, machine.overheads))
                .transpose()?;
            pools.push(PoolDraft {
                spec: PoolSpec {
                    name,
                    pcpus,
                    policy: PolicyConfig::Deferrable,
                    quantum,
                    overheads,
                },
                kind,
            });
        }
        Ok(pools)
    }

    /// A pcpu list at `at`: an array of numbers or a string in `xl`'s form (`"0-2,5"`),
    /// every pcpu on the machine.
    fn cpu_set(
        &self,
        value: toml::Value,
        machine: &MachineConfig,
        at: &Location,
    ) -> Result<CpuSet, ScenarioError> {
        let invalid = |why: String| self.err(at.clone(), ErrorKind::Invalid(why));
        let set = match &value {
            toml::Value::String(text) => parse_cpu_list(text).map_err(|why| {
                // The reason names the part at fault; the whole text is added only when it
                // says more than that part (`'1-x': 'x' is not …`, not `'x1': 'x1' is not …`).
                if why.contains(text.trim()) {
                    invalid(why)
                } else {
                    invalid(format!("'{text}': {why}"))
                }
            })?,
            toml::Value::Array(items) => {
                let mut set = CpuSet::EMPTY;
                for item in items {
                    match item.as_integer().and_then(|n| u32::try_from(n).ok()) {
                        Some(n) if n < CpuSet::MAX => set.insert(n),
                        _ => {
                            return Err(invalid(format!(
                                "{item} is not a pcpu number (0 to {})",
                                CpuSet::MAX - 1
                            )))
                        }
                    }
                }
                set
            }
            other => {
                return Err(invalid(format!(
                    "expected a list of pcpus ([0, 1] or \"0-1\"), found a {}",
                    other.type_str()
                )))
            }
        };
        if let Some(c) = set.iter().find(|&c| c >= machine.pcpus) {
            return Err(invalid(format!(
                "pcpu {c} is not on the machine ([machine] pcpus = {})",
                machine.pcpus
            )));
        }
        Ok(set)
    }

    /// A domain's `pool`, `vcpus`, `affinity` and `smp`.
    fn placement(
        &self,
        raw: &mut RawDomain,
        here: &Location,
        machine: &MachineConfig,
    ) -> Result<Placement, ScenarioError> {
        let vcpus = match raw.vcpus.take() {
            None => 0,
            Some(n) => self.u32_field(n, &here.field("vcpus"), 1)?,
        };
        // Refused here, before an event's replay builds a machine of that many VCPUs.
        const _: () = assert!(MAX_VCPUS == 64, "the message below names the limit");
        if vcpus > MAX_VCPUS {
            return Err(self.err(
                here.field("vcpus"),
                ErrorKind::OutOfRange {
                    value: vcpus.to_string(),
                    expected: "a whole number from 1 to 64 (the VCPUs a domain may have)",
                },
            ));
        }
        let count = vcpus.max(1) as usize;
        let affinity_at = here.field("affinity");
        let one = |value: &toml::Value, at: &Location| -> Result<Option<Vec<u32>>, ScenarioError> {
            match value {
                toml::Value::String(s) if s.trim() == "all" => Ok(None),
                toml::Value::String(_) => Ok(Some(
                    self.cpu_set(value.clone(), machine, at)?.iter().collect(),
                )),
                other => Err(self.err(
                    at.clone(),
                    ErrorKind::Invalid(format!(
                        "expected pcpus in xl's form (\"0-1,3\" or \"all\"), found a {}",
                        other.type_str()
                    )),
                )),
            }
        };
        let affinity = match raw.affinity.take() {
            None => Vec::new(),
            Some(toml::Value::Array(items)) => {
                if items.len() != count {
                    return Err(self.err(
                        affinity_at,
                        ErrorKind::Invalid(format!(
                            "{} entries for {count} VCPU(s): give one per VCPU, or one string \
                             for all",
                            items.len()
                        )),
                    ));
                }
                let mut list = Vec::with_capacity(count);
                for (i, item) in items.iter().enumerate() {
                    list.push(one(item, &here.field(&format!("affinity[{}]", i + 1)))?);
                }
                list
            }
            Some(value) => vec![one(&value, &affinity_at)?; count],
        };
        let smp = match raw.smp.take() {
            None => GuestSmp::default(),
            Some(text) => GuestSmp::from_name(text.trim()).ok_or_else(|| {
                self.err(
                    here.field("smp"),
                    ErrorKind::UnknownName {
                        what: "guest SMP mode",
                        name: text.clone(),
                        expected: "global, partitioned".to_string(),
                    },
                )
            })?,
        };
        let pool = match raw.pool.take() {
            None => None,
            Some(name) => Some(self.name(Some(name), &here.field("pool"))?),
        };
        Ok(Placement {
            pool,
            vcpus,
            affinity,
            smp,
        })
    }

    fn policy_kind(&self, name: &str, at: &Location) -> Result<PolicyKind, ScenarioError> {
        PolicyKind::from_name(name).ok_or_else(|| {
            self.err(
                at.clone(),
                ErrorKind::UnknownName {
                    what: "policy",
                    name: name.to_string(),
                    expected: policy_names(),
                },
            )
        })
    }

    pub(crate) fn scheduler(
        &self,
        raw: RawScheduler,
    ) -> Result<(PolicyKind, SchedulerSettings), ScenarioError> {
        let at = |field: &str| Location::section("[scheduler]", field);
        let policy = match raw.policy.as_deref() {
            None => PolicyKind::Deferrable,
            Some(name) => self.policy_kind(name, &at("policy"))?,
        };
        for (old, given) in [
            ("timeslice", raw.timeslice.is_some()),
            ("accounting_period", raw.accounting_period.is_some()),
        ] {
            if given {
                return Err(self.err(
                    at(old),
                    ErrorKind::Invalid(
                        "replaced by credit = { tick = \"10ms\", ticks_per_slice = 3, \
                         ticks_per_accounting = 3 } (Xen 4.0's defaults: a 30 ms slice and \
                         accounting every 30 ms)"
                            .to_string(),
                    ),
                ));
            }
        }
        let defaults = CreditConfig::default();
        let raw_credit = raw.credit.unwrap_or_default();
        let credit = CreditConfig {
            tick: self
                .opt_time(raw_credit.tick.as_ref(), &at("credit.tick"), true)?
                .unwrap_or(defaults.tick),
            ticks_per_slice: match raw_credit.ticks_per_slice {
                None => defaults.ticks_per_slice,
                Some(n) => self.u32_field(n, &at("credit.ticks_per_slice"), 1)?,
            },
            ticks_per_accounting: match raw_credit.ticks_per_accounting {
                None => defaults.ticks_per_accounting,
                Some(n) => self.u32_field(n, &at("credit.ticks_per_accounting"), 1)?,
            },
        };
        let rtds = match raw.rtds.and_then(|r| r.mode) {
            None => RtdsMode::default(),
            Some(text) => RtdsMode::from_name(text.trim()).ok_or_else(|| {
                self.err(
                    at("rtds.mode"),
                    ErrorKind::UnknownName {
                        what: "RTDS mode",
                        name: text.to_string(),
                        expected: "event, quantum".to_string(),
                    },
                )
            })?,
        };
        let arinc653 = match (raw.major_frame, raw.minor_frames) {
            (None, None) => None,
            (Some(_), None) => return Err(self.err(at("minor_frames"), ErrorKind::Missing)),
            (None, Some(_)) => return Err(self.err(at("major_frame"), ErrorKind::Missing)),
            (Some(major), Some(frames)) => {
                let major_frame = self.positive_time(&major, &at("major_frame"))?;
                let mut minor_frames = Vec::new();
                for (i, f) in frames.into_iter().enumerate() {
                    let field = |name: &str| at(&format!("minor_frames[{}].{name}", i + 1));
                    let domain = self.name(f.domain, &field("domain"))?;
                    let runtime_at = field("runtime");
                    let runtime = self.positive_time(
                        self.required(f.runtime.as_ref(), &runtime_at)?,
                        &runtime_at,
                    )?;
                    minor_frames.push(NamedMinorFrame { domain, runtime });
                }
                Some(ArincTableSpec {
                    major_frame,
                    minor_frames,
                })
            }
        };
        Ok((
            policy,
            SchedulerSettings {
                credit,
                rtds,
                arinc653,
            },
        ))
    }

    /// `base` carries the event number for domains added by an event.
    pub(crate) fn domain(
        &self,
        mut raw: RawDomain,
        base: Location,
        machine: &MachineConfig,
    ) -> Result<DomainDraft, ScenarioError> {
        let name = self.name(raw.name.take(), &base.field("name"))?;
        let here = Location {
            domain: Some(name.clone()),
            ..base
        };
        let placement = self.placement(&mut raw, &here, machine)?;
        let external = crate::external::read(
            self.file,
            &here,
            raw.attach,
            raw.pids,
            !raw.task.is_empty(),
            raw.guest.is_some(),
        )?;
        let guest = match raw.guest.as_deref() {
            None => GuestScheduler::Rm,
            Some(text) => GuestScheduler::from_name(text).ok_or_else(|| {
                self.err(
                    here.field("guest"),
                    ErrorKind::UnknownName {
                        what: "guest scheduler",
                        name: text.to_string(),
                        expected: "rm, dm, fp, edf".to_string(),
                    },
                )
            })?,
        };
        let vcpu = raw.vcpu.unwrap_or_default();
        let (params, priority_given, weight_given) = self.vcpu(vcpu, &here)?;
        let mut tasks: Vec<TaskSpec> = Vec::with_capacity(raw.task.len());
        let mut names: HashSet<String> = HashSet::with_capacity(raw.task.len());
        for (i, t) in raw.task.into_iter().enumerate() {
            let pinned = t.vcpu.is_some();
            let task = self.task(t, i, guest, &here)?;
            if pinned {
                self.task_vcpu(&task, &placement, &here)?;
            }
            if !names.insert(task.name.clone()) {
                return Err(self.err(
                    Location {
                        task: Some(task.name.clone()),
                        ..here.field("name")
                    },
                    ErrorKind::Duplicate {
                        what: "task",
                        name: task.name,
                        scope: "task names are unique within a domain",
                    },
                ));
            }
            tasks.push(task);
        }
        Ok(DomainDraft {
            spec: DomainSpec {
                name,
                vcpu: params,
                guest,
                tasks,
                placement,
            },
            external,
            priority_given,
            weight_given,
        })
    }

    /// A task's `vcpu` (given) fits its domain: the guest is partitioned and has that
    /// VCPU (the core's rule, [`rtvmm_core::guest::GuestError`]).
    fn task_vcpu(
        &self,
        task: &TaskSpec,
        placement: &Placement,
        domain: &Location,
    ) -> Result<(), ScenarioError> {
        let at = Location {
            task: Some(task.name.clone()),
            ..domain.field("vcpu")
        };
        let vcpus = placement.vcpu_count();
        let why = match placement.smp {
            GuestSmp::Global => format!(
                "pins the task, but the guest schedules globally (only a guest with smp = \
                 \"partitioned\" pins tasks to VCPUs; its domain has {vcpus} VCPU(s))"
            ),
            GuestSmp::Partitioned if task.vcpu >= vcpus => format!(
                "{} is not a VCPU of the domain: it has {vcpus} (vcpus = {vcpus}), numbered \
                 from 0",
                task.vcpu
            ),
            GuestSmp::Partitioned => return Ok(()),
        };
        Err(self.err(at, ErrorKind::Invalid(why)))
    }

    /// The VCPU's parameters; budget and period are zero when not given (policies that
    /// read them refuse that in validation).
    fn vcpu(
        &self,
        raw: RawVcpu,
        here: &Location,
    ) -> Result<(VcpuParams, bool, bool), ScenarioError> {
        let at = |field: &str| here.field(&format!("vcpu.{field}"));
        let budget = self.opt_time(raw.budget.as_ref(), &at("budget"), true)?;
        let period = self.opt_time(raw.period.as_ref(), &at("period"), true)?;
        let (budget, period) = match (budget, period) {
            (Some(b), Some(p)) => (b, p),
            (None, None) => (Nanos::ZERO, Nanos::ZERO),
            (Some(_), None) => return Err(self.err(at("period"), ErrorKind::Missing)),
            (None, Some(_)) => return Err(self.err(at("budget"), ErrorKind::Missing)),
        };
        let priority = self.opt_u32(raw.priority, &at("priority"))?;
        let weight = self.opt_u32(raw.weight, &at("weight"))?;
        let params = VcpuParams {
            budget,
            period,
            priority: priority.unwrap_or(0),
            offset: self
                .opt_time(raw.offset.as_ref(), &at("offset"), false)?
                .unwrap_or(Nanos::ZERO),
            weight: weight.unwrap_or(DEFAULT_WEIGHT),
            cap: self.opt_u32(raw.cap, &at("cap"))?.unwrap_or(0),
            extratime: raw.extratime,
            max_replenishments: self
                .opt_u32(raw.max_replenishments, &at("max_replenishments"))?
                .unwrap_or(DEFAULT_MAX_REPLENISHMENTS),
        };
        Ok((params, priority.is_some(), weight.is_some()))
    }

    fn task(
        &self,
        raw: RawTask,
        index: usize,
        guest: GuestScheduler,
        domain: &Location,
    ) -> Result<TaskSpec, ScenarioError> {
        // Until it has a valid name, the task is named by its place (`task '#3'`), as an
        // unnamed pool is: the domain's own `name` is another field.
        let unnamed = Location {
            task: Some(format!("#{}", index + 1)),
            ..domain.clone()
        };
        let name = self.name(raw.name, &unnamed.field("name"))?;
        let here = Location {
            task: Some(name.clone()),
            ..domain.clone()
        };
        let at = |field: &str| here.field(field);
        let kind = raw
            .kind
            .as_deref()
            .unwrap_or("periodic")
            .trim()
            .to_ascii_lowercase();
        if !matches!(
            kind.as_str(),
            "periodic" | "sporadic" | "aperiodic" | "triggered"
        ) {
            return Err(self.err(
                at("kind"),
                ErrorKind::UnknownName {
                    what: "task kind",
                    name: raw.kind.unwrap_or_default(),
                    expected: "periodic, sporadic, aperiodic, triggered".to_string(),
                },
            ));
        }
        let period = self.positive_time(
            self.required(raw.period.as_ref(), &at("period"))?,
            &at("period"),
        )?;
        let wcet =
            self.positive_time(self.required(raw.wcet.as_ref(), &at("wcet"))?, &at("wcet"))?;
        let deadline = self
            .opt_time(raw.deadline.as_ref(), &at("deadline"), true)?
            .unwrap_or(period);
        let offset = self
            .opt_time(raw.offset.as_ref(), &at("offset"), false)?
            .unwrap_or(Nanos::ZERO);
        let min_exec = match (&raw.etf, &raw.min_exec) {
            (Some(_), Some(_)) => {
                return Err(self.err(at("etf"), ErrorKind::Conflict { other: "min_exec" }))
            }
            (None, None) => wcet,
            (Some(etf), None) => {
                min_exec_from_etf(etf, wcet).ok_or_else(|| self.err(at("etf"), etf_error(etf)))?
            }
            (None, Some(raw_min)) => {
                let min = self.positive_time(raw_min, &at("min_exec"))?;
                if min > wcet {
                    return Err(self.err(
                        at("min_exec"),
                        ErrorKind::MinExecAboveWcet {
                            min_exec: min,
                            wcet,
                        },
                    ));
                }
                min
            }
        };
        let priority = match raw.priority {
            Some(p) => self.u32_field(p, &at("priority"), 0)?,
            // fp without priorities: declaration order.
            None if guest == GuestScheduler::Fp => index as u32 + 1,
            None => 0,
        };
        let not_for = |field: &str, kind_needed: &str| {
            self.err(
                at(field),
                ErrorKind::NotUsed {
                    why: format!("only tasks of kind = \"{kind_needed}\" have it"),
                },
            )
        };
        if kind != "sporadic" && raw.max_extra_gap.is_some() {
            return Err(not_for("max_extra_gap", "sporadic"));
        }
        if kind != "triggered" {
            if raw.trigger.is_some() {
                return Err(not_for("trigger", "triggered"));
            }
            if raw.delay.is_some() {
                return Err(not_for("delay", "triggered"));
            }
        } else if raw.offset.is_some() {
            return Err(self.err(
                at("offset"),
                ErrorKind::NotUsed {
                    why: "a triggered task is released when a job of its `trigger` finishes \
                          (plus `delay`)"
                        .to_string(),
                },
            ));
        }
        if kind != "aperiodic" {
            if raw.releases.is_some() {
                return Err(not_for("releases", "aperiodic"));
            }
            if raw.mean_gap.is_some() {
                return Err(not_for("mean_gap", "aperiodic"));
            }
        }
        let arrival = match kind.as_str() {
            "periodic" => Arrival::Periodic,
            "triggered" => {
                let trigger_at = at("trigger");
                let trigger = self.required(raw.trigger.as_deref(), &trigger_at)?;
                let (by_domain, by_task) = split_task_name(trigger)
                    .ok_or_else(|| self.err(trigger_at.clone(), not_a_task_name(trigger)))?;
                Arrival::Triggered {
                    by_domain: by_domain.to_string(),
                    by_task: by_task.to_string(),
                    delay: self
                        .opt_time(raw.delay.as_ref(), &at("delay"), false)?
                        .unwrap_or(Nanos::ZERO),
                }
            }
            "sporadic" => Arrival::Sporadic {
                max_extra_gap: self
                    .opt_time(raw.max_extra_gap.as_ref(), &at("max_extra_gap"), false)?
                    .unwrap_or(period),
            },
            _ => match (&raw.releases, &raw.mean_gap) {
                (Some(_), Some(_)) => {
                    return Err(self.err(at("releases"), ErrorKind::Conflict { other: "mean_gap" }))
                }
                (None, None) => {
                    return Err(self.err(
                        here.clone(),
                        ErrorKind::OneOfRequired {
                            options:
                                "`releases` (a list of times) or `mean_gap` (a Poisson stream)",
                        },
                    ))
                }
                (Some(list), None) => {
                    if raw.offset.is_some() {
                        return Err(self.err(
                            at("offset"),
                            ErrorKind::NotUsed {
                                why: "a task with `releases` is released at the listed times"
                                    .to_string(),
                            },
                        ));
                    }
                    let mut times = Vec::with_capacity(list.len());
                    for (i, t) in list.iter().enumerate() {
                        times.push(self.time(t, &at(&format!("releases[{}]", i + 1)))?);
                    }
                    times.sort();
                    Arrival::AperiodicTimes(times)
                }
                (None, Some(gap)) => Arrival::Poisson {
                    mean_gap: self.positive_time(gap, &at("mean_gap"))?,
                },
            },
        };
        Ok(TaskSpec {
            name,
            period,
            wcet,
            min_exec,
            deadline,
            offset,
            priority,
            arrival,
            vcpu: self.opt_u32(raw.vcpu, &at("vcpu"))?.unwrap_or(0),
        })
    }

    fn event(
        &self,
        mut raw: RawEvent,
        here: &Location,
        drafts: &mut Vec<DomainDraft>,
        machine: &MachineConfig,
    ) -> Result<(Nanos, EventDraft), ScenarioError> {
        let at_field = here.field("at");
        let at = self.time(self.required(raw.at.as_ref(), &at_field)?, &at_field)?;
        if let Some(line) = raw.xl.take() {
            if raw.action.is_some() {
                return Err(self.err(here.field("xl"), ErrorKind::Conflict { other: "action" }));
            }
            // The `xl` line says everything: `action`'s fields are refused.
            if let Some(field) = stray_field(&raw, &[]) {
                return Err(self.err(
                    here.field(field),
                    ErrorKind::NotUsed {
                        why: "an xl event takes `at` and `xl` only: the command line says the \
                              rest"
                            .to_string(),
                    },
                ));
            }
            let command = XlCommand::parse(&line)
                .map_err(|e| self.err(here.field("xl"), ErrorKind::XlSyntax(e)))?;
            return Ok((at, EventDraft::Xl(command)));
        }
        Ok((at, self.action(raw, here, drafts, machine)?))
    }

    /// An event's action, without its time (`at` is read by the caller, or refused by
    /// the live reader). A domain it adds is pushed onto `drafts`.
    pub(crate) fn action(
        &self,
        raw: RawEvent,
        here: &Location,
        drafts: &mut Vec<DomainDraft>,
        machine: &MachineConfig,
    ) -> Result<EventDraft, ScenarioError> {
        let action_at = here.field("action");
        let action = self.required(raw.action.clone(), &action_at)?;
        let action = action.trim().to_ascii_lowercase();
        let allowed: &[&str] = match action.as_str() {
            "sched-set" => &[
                "domain",
                "budget",
                "period",
                "priority",
                "weight",
                "cap",
                "extratime",
                "max_replenishments",
            ],
            "swap-policy" => &["policy"],
            "add-domain" | "remove-domain" => &["domain"],
            _ => {
                return Err(self.err(
                    action_at,
                    ErrorKind::UnknownName {
                        what: "action",
                        name: action,
                        expected: "sched-set, swap-policy, add-domain, remove-domain".to_string(),
                    },
                ))
            }
        };
        if let Some(field) = stray_field(&raw, allowed) {
            return Err(self.err(
                here.field(field),
                ErrorKind::NotUsed {
                    why: format!("action \"{action}\" takes {}", allowed.join(", ")),
                },
            ));
        }
        let domain_at = here.field("domain");
        let domain_name = |value: Option<toml::Value>| -> Result<String, ScenarioError> {
            match self.required(value, &domain_at)? {
                toml::Value::String(s) => self.name(Some(s), &domain_at),
                other => Err(self.err(
                    domain_at.clone(),
                    ErrorKind::Invalid(format!(
                        "expected a domain name (a string), found a {}",
                        other.type_str()
                    )),
                )),
            }
        };
        let event = match action.as_str() {
            "sched-set" => {
                let domain = domain_name(raw.domain)?;
                let here = Location {
                    domain: Some(domain.clone()),
                    ..here.clone()
                };
                EventDraft::SetParams(ParamUpdate {
                    budget: self.opt_time(raw.budget.as_ref(), &here.field("budget"), true)?,
                    period: self.opt_time(raw.period.as_ref(), &here.field("period"), true)?,
                    priority: self.opt_u32(raw.priority, &here.field("priority"))?,
                    weight: self.opt_u32(raw.weight, &here.field("weight"))?,
                    cap: self.opt_u32(raw.cap, &here.field("cap"))?,
                    extratime: raw.extratime,
                    max_replenishments: self
                        .opt_u32(raw.max_replenishments, &here.field("max_replenishments"))?,
                    domain,
                })
            }
            "swap-policy" => {
                let policy_at = here.field("policy");
                let name = self.required(raw.policy, &policy_at)?;
                EventDraft::SwapPolicy(self.policy_kind(&name, &policy_at)?)
            }
            "add-domain" => {
                let value = self.required(raw.domain, &domain_at)?;
                if !value.is_table() {
                    return Err(self.err(
                        domain_at,
                        ErrorKind::Invalid(format!(
                            "expected a domain table ({{ name = \"..\", vcpu = {{ .. }}, task = [..] }}), found a {}",
                            value.type_str()
                        )),
                    ));
                }
                let raw_domain: RawDomain =
                    value.clone().try_into().map_err(|e: toml::de::Error| {
                        let (at, message) = crate::raw::locate_added_domain(&value, here.clone())
                            .unwrap_or((domain_at.clone(), e.message().trim().to_string()));
                        self.err(at, ErrorKind::Invalid(message))
                    })?;
                let declared = drafts.len();
                drafts.push(self.domain(raw_domain, here.clone(), machine)?);
                EventDraft::AddDomain(declared)
            }
            _ => EventDraft::RemoveDomain(domain_name(raw.domain)?),
        };
        Ok(event)
    }

    /// The `[[chain]]` tables: names unique, tasks as `"DOMAIN/TASK"`, bounds positive.
    /// Whether the tasks are linked is the links' check, in validation.
    fn chains(
        &self,
        raw: Vec<RawChain>,
        drafts: &[DomainDraft],
    ) -> Result<Vec<ChainSpec>, ScenarioError> {
        let tasks_of = |domain: &str| {
            drafts
                .iter()
                .find(|d| d.spec.name == domain)
                .map(|d| d.spec.tasks.iter().map(|t| t.name.clone()).collect())
        };
        let mut chains: Vec<ChainSpec> = Vec::with_capacity(raw.len());
        for (i, c) in raw.into_iter().enumerate() {
            let unnamed = Location {
                chain: Some(format!("#{}", i + 1)),
                ..Location::default()
            };
            let name = self.name(c.name, &unnamed.field("name"))?;
            let here = Location {
                chain: Some(name.clone()),
                ..Location::default()
            };
            if chains.iter().any(|other| other.name == name) {
                return Err(self.err(
                    here.field("name"),
                    ErrorKind::Duplicate {
                        what: "chain",
                        name,
                        scope: "chain names are unique in a file",
                    },
                ));
            }
            let list = self.required(c.tasks, &here.field("tasks"))?;
            if list.is_empty() {
                return Err(self.err(
                    here.field("tasks"),
                    ErrorKind::Chain(Box::new(rtvmm_system::spec::ChainProblem::Empty)),
                ));
            }
            let mut tasks = Vec::with_capacity(list.len());
            for (k, text) in list.iter().enumerate() {
                let pair = resolve_task_name(text, &tasks_of).ok_or_else(|| {
                    self.err(
                        here.field(&format!("tasks[{}]", k + 1)),
                        not_a_task_name(text),
                    )
                })?;
                tasks.push(pair);
            }
            let mut bounds = Vec::new();
            for (k, b) in c.bounds.iter().flatten().enumerate() {
                bounds.push(self.positive_time(b, &here.field(&format!("bounds[{}]", k + 1)))?);
            }
            chains.push(ChainSpec {
                name,
                tasks,
                bounds,
            });
        }
        Ok(chains)
    }

    /// Domain names are unique over the whole file, added domains included: results and
    /// traces name domains, so a name never means two domains (a removed name is not
    /// reused).
    fn unique_domain_names(
        &self,
        drafts: &[DomainDraft],
        initial: usize,
    ) -> Result<(), ScenarioError> {
        let mut seen = BTreeMap::new();
        for (i, d) in drafts.iter().enumerate() {
            if seen.insert(d.spec.name.clone(), i).is_some() {
                let mut at = Location::top("name");
                at.domain = Some(d.spec.name.clone());
                if i >= initial {
                    at.field = Some("domain.name".to_string());
                }
                return Err(self.err(
                    at,
                    ErrorKind::Duplicate {
                        what: "domain",
                        name: d.spec.name.clone(),
                        scope: "domain names are unique in a file, added domains included",
                    },
                ));
            }
        }
        Ok(())
    }

    /// Priorities are all given or all derived: rate-monotonic by period over every domain
    /// the file declares, ties by declaration order, numbered from 1.
    fn settle_priorities(&self, drafts: &mut [DomainDraft]) -> Result<(), ScenarioError> {
        let given = drafts.iter().filter(|d| d.priority_given).count();
        if given == drafts.len() {
            return Ok(());
        }
        if given > 0 {
            let with = drafts
                .iter()
                .find(|d| d.priority_given)
                .expect("some given");
            let without = drafts.iter().find(|d| !d.priority_given).expect("some not");
            let mut at = Location::top("vcpu.priority");
            at.domain = Some(with.spec.name.clone());
            return Err(self.err(
                at,
                ErrorKind::PrioritiesMixed {
                    without: without.spec.name.clone(),
                },
            ));
        }
        // Drafts are in declaration order (initial domains, then added ones): ties keep it.
        let periods: Vec<Option<Nanos>> = drafts.iter().map(|d| Some(d.spec.vcpu.period)).collect();
        for (draft, rank) in drafts.iter_mut().zip(rate_monotonic_ranks(&periods)) {
            draft.spec.vcpu.priority = rank.expect("every draft has a period") as u32 + 1;
        }
        Ok(())
    }

    /// The events as timed changes, each `sched-set` resolved against the domain's
    /// parameters at that time (fields not given keep their values; a derived weight
    /// follows a new budget or period).
    /// Policy swaps come back as (change index, event number, kind), with a placeholder
    /// configuration for the caller to fill in.
    #[allow(clippy::type_complexity)]
    fn changes(
        &self,
        events: Vec<(usize, Nanos, EventDraft)>,
        drafts: &[DomainDraft],
        initial: usize,
    ) -> Result<(Vec<TimedChange>, Vec<(usize, usize, PolicyKind)>), ScenarioError> {
        // Live domains: name -> (parameters, weight given explicitly).
        let mut live: BTreeMap<String, (VcpuParams, bool)> = drafts[..initial]
            .iter()
            .map(|d| (d.spec.name.clone(), (d.spec.vcpu.clone(), d.weight_given)))
            .collect();
        let mut changes = Vec::with_capacity(events.len());
        let mut swaps = Vec::new();
        for (number, at, event) in events {
            let here = Location {
                event: Some(number),
                ..Location::default()
            };
            let unknown = |name: &str, live: &BTreeMap<String, (VcpuParams, bool)>| {
                self.err(
                    here.field("domain"),
                    ErrorKind::UnknownDomain {
                        name: name.to_string(),
                        when: format!(" at {at} (domains then: {})", names_of(live)),
                    },
                )
            };
            let change = match event {
                EventDraft::SetParams(update) => {
                    let (params, weight_given) = match live.get(&update.domain) {
                        Some(entry) => entry.clone(),
                        None => return Err(unknown(&update.domain, &live)),
                    };
                    let new = update.applied_to(&params, weight_given);
                    let weight_given = weight_given || update.weight.is_some();
                    live.insert(update.domain.clone(), (new.clone(), weight_given));
                    Change::SetParams {
                        domain: update.domain,
                        params: new,
                    }
                }
                EventDraft::SwapPolicy(kind) => {
                    swaps.push((changes.len(), number, kind));
                    Change::SwapPolicy(rtvmm_core::policy::PolicyConfig::Deferrable)
                }
                EventDraft::AddDomain(i) => {
                    let d = &drafts[i];
                    live.insert(d.spec.name.clone(), (d.spec.vcpu.clone(), d.weight_given));
                    Change::AddDomain(d.spec.clone())
                }
                EventDraft::RemoveDomain(domain) => {
                    if live.remove(&domain).is_none() {
                        return Err(unknown(&domain, &live));
                    }
                    Change::RemoveDomain { domain }
                }
                EventDraft::Xl(command) => {
                    // A later `sched-set` starts from what the command set (on VCPU 0, the
                    // one whose parameters a domain's spec holds).
                    if let Some((params, weight_given)) =
                        command.domain().and_then(|d| live.get_mut(d))
                    {
                        match &command {
                            XlCommand::SchedRtds {
                                vcpu: VcpuSel::All | VcpuSel::One(0),
                                period_us,
                                budget_us,
                                extratime,
                                ..
                            } => {
                                params.budget = Nanos::from_us(*budget_us);
                                params.period = Nanos::from_us(*period_us);
                                params.extratime = extratime.or(params.extratime);
                            }
                            XlCommand::SchedCredit { weight, cap, .. } => {
                                if let Some(w) = weight {
                                    params.weight = *w;
                                    *weight_given = true;
                                }
                                params.cap = cap.unwrap_or(params.cap);
                            }
                            _ => {}
                        }
                    }
                    Change::Xl(command)
                }
            };
            changes.push(TimedChange { at, change });
        }
        Ok((changes, swaps))
    }
}

/// Each trigger whose name holds more than one `/` split as [`resolve_task_name`] says,
/// against every domain the file declares (`task` splits at the first `/`).
fn resolve_triggers(drafts: &mut [DomainDraft]) {
    let names: Vec<(String, Vec<String>)> = drafts
        .iter()
        .map(|d| {
            let tasks = d.spec.tasks.iter().map(|t| t.name.clone()).collect();
            (d.spec.name.clone(), tasks)
        })
        .collect();
    let tasks_of = |domain: &str| {
        names
            .iter()
            .find(|(d, _)| d == domain)
            .map(|(_, tasks)| tasks.clone())
    };
    for d in drafts.iter_mut() {
        for t in &mut d.spec.tasks {
            if let Arrival::Triggered {
                by_domain, by_task, ..
            } = &mut t.arrival
            {
                if by_task.contains('/') {
                    let text = format!("{by_domain}/{by_task}");
                    if let Some((dn, tn)) = resolve_task_name(&text, &tasks_of) {
                        (*by_domain, *by_task) = (dn, tn);
                    }
                }
            }
        }
    }
}

/// The first field of an event that its action does not take (`allowed`).
fn stray_field(raw: &RawEvent, allowed: &[&str]) -> Option<&'static str> {
    let present = [
        ("domain", raw.domain.is_some()),
        ("policy", raw.policy.is_some()),
        ("budget", raw.budget.is_some()),
        ("period", raw.period.is_some()),
        ("priority", raw.priority.is_some()),
        ("weight", raw.weight.is_some()),
        ("cap", raw.cap.is_some()),
        ("extratime", raw.extratime.is_some()),
        ("max_replenishments", raw.max_replenishments.is_some()),
        ("xl", raw.xl.is_some()),
    ];
    present
        .into_iter()
        .find(|(field, given)| *given && !allowed.contains(field))
        .map(|(field, _)| field)
}

fn names_of(live: &BTreeMap<String, (VcpuParams, bool)>) -> String {
    if live.is_empty() {
        return "none".to_string();
    }
    live.keys().cloned().collect::<Vec<_>>().join(", ")
}

/// The weight a VCPU gets when the file gives none: proportional to its share when it
/// has a budget and period, else Xen's default.
pub(crate) fn default_weight(params: &VcpuParams) -> u32 {
    if params.period.is_zero() {
        DEFAULT_WEIGHT
    } else {
        weight_from_share(params.budget, params.period)
    }
}

/// The scenario name when the file gives none: the file's stem.
fn default_name(file: &str) -> String {
    std::path::Path::new(file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "scenario".to_string())
}

/// `"DOMAIN/TASK"` split at its first `/`, both sides non-empty; `None` otherwise. A
/// name with a `/` is resolved against the file's domains by [`resolve_task_name`].
pub(crate) fn split_task_name(text: &str) -> Option<(&str, &str)> {
    let (domain, task) = text.split_once('/')?;
    (!domain.is_empty() && !task.is_empty()).then_some((domain, task))
}

fn not_a_task_name(text: &str) -> ErrorKind {
    ErrorKind::Invalid(format!(
        "'{text}' is not a task: write \"DOMAIN/TASK\", for example \"driver/rx\""
    ))
}

/// `"DOMAIN/TASK"` against the file's domains (`tasks_of` gives a domain's task names):
/// names may hold a `/`, so the split is the one that names a task of the file, else one
/// that names a domain, else the first `/` (which the links' check then reports).
pub(crate) fn resolve_task_name(
    text: &str,
    tasks_of: &dyn Fn(&str) -> Option<Vec<String>>,
) -> Option<(String, String)> {
    let first = split_task_name(text)?;
    let splits: Vec<(&str, &str)> = text
        .match_indices('/')
        .map(|(i, _)| (&text[..i], &text[i + 1..]))
        .filter(|(d, t)| !d.is_empty() && !t.is_empty())
        .collect();
    let known = |d: &str, t: &str| tasks_of(d).is_some_and(|tasks| tasks.iter().any(|x| x == t));
    let (d, t) = splits
        .iter()
        .find(|(d, t)| known(d, t))
        .or_else(|| splits.iter().find(|(d, _)| tasks_of(d).is_some()))
        .copied()
        .unwrap_or(first);
    Some((d.to_string(), t.to_string()))
}

fn etf_error(value: &toml::Value) -> ErrorKind {
    ErrorKind::OutOfRange {
        value: value.to_string(),
        expected: "etf must be a number with 0 < etf <= 1",
    }
}

/// ⌈etf · wcet⌉, computed exactly: the TOML number is read back as its shortest decimal
/// form (what the user wrote) and multiplied in integers, so `etf = 0.1` means one tenth.
/// `None` when etf is not a number in (0, 1].
pub(crate) fn min_exec_from_etf(value: &toml::Value, wcet: Nanos) -> Option<Nanos> {
    let text = match value {
        toml::Value::Integer(i) => i.to_string(),
        toml::Value::Float(x) if x.is_finite() => x.to_string(),
        _ => return None,
    };
    let (int_part, frac_part) = text.split_once('.').unwrap_or((&text, ""));
    let digits = format!("{int_part}{frac_part}");
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return None; // zero or negative
    }
    let numerator: u128 = digits.parse().ok()?;
    let scale_digits = frac_part.len() as u32;
    if scale_digits > 38 {
        // Far below one nanosecond per job: the least positive demand.
        return Some(Nanos(1));
    }
    let scale = 10u128.pow(scale_digits);
    if numerator > scale {
        return None; // above 1
    }
    let product = (wcet.as_ns() as u128).checked_mul(numerator)?;
    let ceil = product.div_ceil(scale);
    Some(Nanos(u64::try_from(ceil).ok()?.max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn etf_is_exact_decimal() {
        let wcet = Nanos::from_ms(10);
        let f = |x: f64| min_exec_from_etf(&toml::Value::Float(x), wcet);
        assert_eq!(f(0.1), Some(Nanos::from_ms(1)));
        assert_eq!(f(0.5), Some(Nanos::from_ms(5)));
        assert_eq!(f(1.0), Some(wcet));
        assert_eq!(
            min_exec_from_etf(&toml::Value::Integer(1), wcet),
            Some(wcet)
        );
        assert_eq!(f(0.333), Some(Nanos(3_330_000)));
        assert_eq!(
            min_exec_from_etf(&toml::Value::Float(1.0 / 3.0), Nanos(10)),
            Some(Nanos(4))
        );
        assert_eq!(f(0.0), None);
        assert_eq!(f(-0.5), None);
        assert_eq!(f(1.5), None);
        assert_eq!(min_exec_from_etf(&toml::Value::Integer(2), wcet), None);
        assert_eq!(f(1e-300), Some(Nanos(1)));
    }
}
