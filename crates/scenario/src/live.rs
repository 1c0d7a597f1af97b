//! The pieces of a scenario that change a system while it runs (`rtvmm ctl`, the host
//! executor's live control): an `[[event]]`'s action without its time, read by the same
//! reader and with the same rules as in a file, so that a live command and a scheduled
//! event can never mean different things.
//!
//! - `sched-set` gives a [`ParamUpdate`], resolved against the VCPU's parameters of the
//!   moment by [`ParamUpdate::applied_to`] (the rule the file's events follow too).
//! - `swap-policy` gives a [`PolicyChange`]: `policy` and, unlike a file's event, any of
//!   the `[scheduler]` section's settings (`credit = { .. }`, `rtds = { .. }`,
//!   `major_frame` with `minor_frames`), read as that section is. Settings not given keep
//!   the running system's ([`PolicyChange::config`]).
//! - `add-domain` gives a [`DomainSpec`] from a table of the `[[domain]]` shape. Its
//!   `vcpu.priority` is required: a file ranks every domain it declares at once, but a
//!   running system's domains are not re-ranked when one joins. An unset weight follows
//!   the share, as in a file.
//! - `remove-domain` gives a name.
//!
//! What needs the running system — whether the domain exists, whether the policy accepts
//! the parameters — is the caller's to check; [`vcpu_refused`] words the policy's refusal
//! as a file's would be.
//!
//! ```
//! use rtvmm_scenario::live::{read_action, LiveAction};
//!
//! let table: toml::Table = toml::from_str(r#"action = "sched-set"
//!     domain = "d1"
//!     budget = "3ms""#).unwrap();
//! let LiveAction::SetParams(update) = read_action(&table, "request")? else { panic!() };
//! assert_eq!(update.budget, Some(rtvmm_core::Nanos::from_ms(3)));
//!
//! let table: toml::Table = toml::from_str(r#"action = "sched-set"
//!     domain = "d1"
//!     budget = "3""#).unwrap();
//! assert_eq!(
//!     read_action(&table, "request").unwrap_err().to_string(),
//!     "request: domain 'd1': budget: 3 is a bare number: write times as a string with a \
//!      unit (ns, us, ms, s), for example \"10ms\""
//! );
//! # Ok::<(), rtvmm_scenario::ScenarioError>(())
//! ```

use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::machine::MachineConfig;
use rtvmm_core::model::{ParamError, VcpuId, VcpuParams};
use rtvmm_core::policy::{CreditConfig, PolicyConfig, PolicyKind, RtdsMode};
use rtvmm_core::Nanos;
use rtvmm_system::DomainSpec;

use crate::build::{default_weight, Builder, EventDraft};

/// The machine an added domain's placement is read against: any pcpu a set can hold; the
/// running system checks its own.
const ANY_MACHINE: MachineConfig = MachineConfig {
    pcpus: CpuSet::MAX,
    quantum: Nanos::from_ms(1),
    replenishment: rtvmm_core::machine::ReplenishMode::Exact,
    overheads: rtvmm_core::machine::Overheads::ZERO,
    overhead_charge: rtvmm_core::machine::OverheadCharge::Incoming,
    wake_delivery: rtvmm_core::wake::WakeDelivery::OFF,
};
use crate::error::{ErrorKind, Location, ScenarioError};
use crate::raw::{RawEvent, RawScheduler};
use crate::{ArincTableSpec, SchedulerSettings};

pub use crate::build::ParamUpdate;

/// Whether `params`'s weight is the one derived from its share (or Xen's default without
/// a period), so that it would follow a new budget or period: how a running system, which
/// does not remember whether a weight was written, tells a derived weight.
pub fn weight_is_derived(params: &VcpuParams) -> bool {
    params.weight == default_weight(params)
}

/// A `swap-policy`: the policy and the `[scheduler]` settings given with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyChange {
    pub kind: PolicyKind,
    pub credit: Option<CreditConfig>,
    pub rtds: Option<RtdsMode>,
    pub arinc653: Option<ArincTableSpec>,
}

impl PolicyChange {
    /// `current` with the settings given here in place of its own.
    pub fn settings(&self, current: &SchedulerSettings) -> SchedulerSettings {
        SchedulerSettings {
            credit: self.credit.unwrap_or(current.credit),
            rtds: self.rtds.unwrap_or(current.rtds),
            arinc653: self.arinc653.clone().or_else(|| current.arinc653.clone()),
        }
    }

    /// The configuration to swap to, and the settings the system keeps from now on:
    /// Credit's checked, an ARINC 653 table's domains found by `vcpu_of` (the running
    /// domains). Errors name `origin`.
    pub fn config(
        &self,
        current: &SchedulerSettings,
        vcpu_of: &dyn Fn(&str) -> Option<VcpuId>,
        origin: &str,
    ) -> Result<(PolicyConfig, SchedulerSettings), ScenarioError> {
        let settings = self.settings(current);
        let config = crate::validate::policy_config(
            origin,
            self.kind,
            &settings,
            vcpu_of,
            Location::top("policy"),
        )
        .map_err(without_section)?;
        Ok((config, settings))
    }
}

/// What a live command does (an event's action, without `at`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LiveAction {
    SetParams(ParamUpdate),
    SwapPolicy(PolicyChange),
    AddDomain(DomainSpec),
    RemoveDomain(String),
}

/// Reads one action from a table of an `[[event]]`'s keys without `at` (`action` names
/// it: `sched-set`, `swap-policy`, `add-domain`, `remove-domain`). Errors name `origin`,
/// then the domain and the field, as a file's do.
pub fn read_action(table: &toml::Table, origin: &str) -> Result<LiveAction, ScenarioError> {
    let builder = Builder { file: origin };
    if table.contains_key("at") {
        return Err(builder.err(
            Location::top("at"),
            ErrorKind::NotUsed {
                why: "a live command acts at once".to_string(),
            },
        ));
    }
    let action = table.get("action").and_then(toml::Value::as_str);
    if action.is_some_and(|a| a.trim().eq_ignore_ascii_case("swap-policy")) {
        let mut rest = table.clone();
        rest.remove("action");
        return read_policy_change(&builder, rest).map(LiveAction::SwapPolicy);
    }
    let raw: RawEvent =
        toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| {
                let mut document = toml::Table::new();
                document.insert(
                    "event".to_string(),
                    toml::Value::Array(vec![toml::Value::Table(table.clone())]),
                );
                let (mut at, message) = crate::raw::locate(&document).unwrap_or_else(|| {
                    (
                        Location::default(),
                        crate::raw::in_words(e.message().trim()),
                    )
                });
                at.event = None;
                builder.err(at, ErrorKind::Invalid(message))
            })?;
    let mut drafts = Vec::new();
    Ok(
        match builder.action(raw, &Location::default(), &mut drafts, &ANY_MACHINE)? {
            EventDraft::SetParams(update) => LiveAction::SetParams(update),
            EventDraft::RemoveDomain(name) => LiveAction::RemoveDomain(name),
            EventDraft::AddDomain(i) => {
                let draft = drafts.swap_remove(i);
                let mut spec = draft.spec;
                if let Some(external) = &draft.external {
                    let at = Location {
                        domain: Some(spec.name.clone()),
                        ..Location::top(external.field())
                    };
                    return Err(builder.err(
                        at,
                        ErrorKind::Invalid(
                            "an external domain cannot be added to a running system: declare \
                             it in the scenario file"
                                .to_string(),
                        ),
                    ));
                }
                if !draft.priority_given {
                    let at = Location {
                        domain: Some(spec.name.clone()),
                        ..Location::top("vcpu.priority")
                    };
                    return Err(builder.err(
                        at,
                        ErrorKind::Invalid(
                            "missing: a domain added to a running system needs a priority \
                             (smaller is higher), as the running domains are not re-ranked"
                                .to_string(),
                        ),
                    ));
                }
                if !draft.weight_given {
                    spec.vcpu.weight = default_weight(&spec.vcpu);
                }
                LiveAction::AddDomain(spec)
            }
            // Handled above; a file's swap event names only the policy.
            // `action` never reads an `xl` line (only a file's event has one).
            EventDraft::Xl(_) => {
                return Err(ScenarioError::new(
                    origin,
                    Location::top("xl"),
                    ErrorKind::Invalid("not taken live".to_string()),
                ))
            }
            EventDraft::SwapPolicy(kind) => LiveAction::SwapPolicy(PolicyChange {
                kind,
                credit: None,
                rtds: None,
                arinc653: None,
            }),
        },
    )
}

/// Reads one domain, given as a table of the `[[domain]]` shape (`add-domain`).
pub fn read_domain(value: &toml::Value, origin: &str) -> Result<DomainSpec, ScenarioError> {
    let mut table = toml::Table::new();
    table.insert("action".to_string(), "add-domain".into());
    table.insert("domain".to_string(), value.clone());
    match read_action(&table, origin)? {
        LiveAction::AddDomain(spec) => Ok(spec),
        _ => unreachable!("an add-domain table reads as an added domain"),
    }
}

/// The policy's refusal of a VCPU's parameters, worded as a file's would be:
/// `origin: domain 'd1': vcpu: budget: 12ms is above the period 10ms (rejected by policy
/// rtds)`.
pub fn vcpu_refused(
    origin: &str,
    domain: &str,
    policy: PolicyKind,
    params: &VcpuParams,
    error: ParamError,
) -> ScenarioError {
    let at = Location {
        domain: Some(domain.to_string()),
        ..Location::top("vcpu")
    };
    ScenarioError::new(
        origin,
        at,
        crate::validate::vcpu_error(policy, params, error),
    )
}

/// `policy` and the `[scheduler]` keys given with it.
fn read_policy_change(
    builder: &Builder<'_>,
    table: toml::Table,
) -> Result<PolicyChange, ScenarioError> {
    if !table.contains_key("policy") {
        return Err(builder.err(Location::top("policy"), ErrorKind::Missing));
    }
    let given = |key: &str| table.contains_key(key);
    let (credit, rtds, table_given) = (
        given("credit"),
        given("rtds"),
        given("major_frame") || given("minor_frames"),
    );
    let raw: RawScheduler =
        toml::Value::Table(table.clone())
            .try_into()
            .map_err(|e: toml::de::Error| {
                let mut document = toml::Table::new();
                document.insert("scheduler".to_string(), toml::Value::Table(table.clone()));
                let (at, message) = crate::raw::locate(&document).unwrap_or_else(|| {
                    (
                        Location::default(),
                        crate::raw::in_words(e.message().trim()),
                    )
                });
                without_section(builder.err(at, ErrorKind::Invalid(message)))
            })?;
    let (kind, settings) = builder.scheduler(raw).map_err(without_section)?;
    Ok(PolicyChange {
        kind,
        credit: credit.then_some(settings.credit),
        rtds: rtds.then_some(settings.rtds),
        arinc653: if table_given { settings.arinc653 } else { None },
    })
}

/// A live command has no `[scheduler]` section: its keys are the command's own.
fn without_section(mut error: ScenarioError) -> ScenarioError {
    error.location.section = None;
    error
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).expect("TOML")
    }

    fn refused(text: &str) -> String {
        read_action(&table(text), "request")
            .expect_err("refused")
            .to_string()
    }

    #[test]
    fn sched_set_reads_as_a_files_event() {
        let action = read_action(
            &table("action = \"sched-set\"\ndomain = \"d1\"\nbudget = \"3ms\"\ncap = 50"),
            "request",
        )
        .unwrap();
        let LiveAction::SetParams(update) = action else {
            panic!("{action:?}")
        };
        assert_eq!(update.domain, "d1");
        assert_eq!(update.budget, Some(Nanos::from_ms(3)));
        assert_eq!(update.cap, Some(50));
        assert_eq!(update.period, None);
        // A derived weight follows the new share; a given one stays.
        let ms = Nanos::from_ms;
        let before = VcpuParams {
            weight: 2000,
            ..VcpuParams::server(ms(2), ms(10), 1)
        };
        assert!(weight_is_derived(&before));
        assert_eq!(update.applied_to(&before, false).weight, 3000);
        assert_eq!(update.applied_to(&before, true).weight, 2000);
    }

    #[test]
    fn a_live_action_refuses_what_a_file_refuses_and_a_time() {
        assert_eq!(
            refused("action = \"sched-set\"\ndomain = \"d1\"\nbudget = \"0ms\""),
            "request: domain 'd1': budget: must be greater than 0"
        );
        assert_eq!(
            refused("action = \"sched-set\"\ndomain = \"d1\"\npolicy = \"rtds\""),
            "request: policy: not used here: action \"sched-set\" takes domain, budget, \
             period, priority, weight, cap, extratime, max_replenishments"
        );
        assert_eq!(
            refused("action = \"sched-set\"\nat = \"1s\"\ndomain = \"d1\""),
            "request: at: not used here: a live command acts at once"
        );
        assert_eq!(
            refused("action = \"reboot\""),
            "request: action: unknown action 'reboot': expected one of sched-set, \
             swap-policy, add-domain, remove-domain"
        );
        assert_eq!(
            refused("action = \"sched-set\"\ndomain = \"d1\"\nbudget = true"),
            "request: domain 'd1': budget: expected a time as a string with a unit (for \
             example \"10ms\"), found a boolean"
        );
        assert_eq!(
            refused("action = \"sched-set\"\ndomain = \"d1\"\nweight = -1"),
            "request: domain 'd1': weight: -1 is out of range: a whole number from 0 to \
             4294967295"
        );
    }

    #[test]
    fn swap_policy_takes_scheduler_settings_and_keeps_the_rest() {
        let action = read_action(
            &table(
                "action = \"swap-policy\"\npolicy = \"credit\"\n\
                 credit = { tick = \"1ms\", ticks_per_slice = 1 }",
            ),
            "request",
        )
        .unwrap();
        let LiveAction::SwapPolicy(change) = action else {
            panic!("{action:?}")
        };
        assert_eq!(change.kind, PolicyKind::Credit);
        let credit = change.credit.expect("given");
        assert_eq!(credit.tick, Nanos::from_ms(1));
        assert_eq!(credit.ticks_per_slice, 1);
        assert_eq!(credit.ticks_per_accounting, 3, "a file's default");
        assert_eq!(change.rtds, None, "not given: the system's stays");
        assert_eq!(
            refused("action = \"swap-policy\"\npolicy = \"fifo\"")
                .split(" expected")
                .next(),
            Some("request: policy: unknown policy 'fifo':")
        );
        assert_eq!(
            refused("action = \"swap-policy\""),
            "request: policy: missing (required)"
        );
        assert_eq!(
            refused("action = \"swap-policy\"\npolicy = \"rtds\"\nrtds = { mode = \"x\" }"),
            "request: rtds.mode: unknown RTDS mode 'x': expected one of event, quantum"
        );
        // ARINC 653 without a table anywhere.
        let change = PolicyChange {
            kind: PolicyKind::Arinc653,
            credit: None,
            rtds: None,
            arinc653: None,
        };
        let current = SchedulerSettings {
            credit: CreditConfig::default(),
            rtds: RtdsMode::default(),
            arinc653: None,
        };
        let error = change.config(&current, &|_| None, "request").unwrap_err();
        assert!(error
            .to_string()
            .starts_with("request: policy: policy arinc653 needs its schedule table"));
    }

    #[test]
    fn an_added_domain_needs_its_priority() {
        let domain = |vcpu: &str| {
            let text = format!(
                "name = \"d3\"\nvcpu = {vcpu}\n[[task]]\nname = \"t\"\nperiod = \"10ms\"\n\
                 wcet = \"1ms\""
            );
            toml::Value::Table(table(&text))
        };
        let spec = read_domain(
            &domain("{ budget = \"2ms\", period = \"10ms\", priority = 3 }"),
            "d3.toml",
        )
        .unwrap();
        assert_eq!(spec.name, "d3");
        assert_eq!(spec.vcpu.priority, 3);
        assert_eq!(spec.vcpu.weight, 2000, "the share's");
        assert_eq!(spec.tasks.len(), 1);
        assert_eq!(
            read_domain(
                &domain("{ budget = \"2ms\", period = \"10ms\" }"),
                "d3.toml"
            )
            .unwrap_err()
            .to_string(),
            "d3.toml: domain 'd3': vcpu.priority: missing: a domain added to a running \
             system needs a priority (smaller is higher), as the running domains are not \
             re-ranked"
        );
        assert_eq!(
            read_domain(
                &domain("{ budget = \"2ms\", period = \"10ms\", priority = 3, speed = 1 }"),
                "d3.toml"
            )
            .unwrap_err()
            .to_string(),
            "d3.toml: domain 'd3': unknown key `speed`, expected one of `budget`, \
             `period`, `priority`, `offset`, `weight`, `cap`, `extratime`, \
             `max_replenishments`"
        );
    }

    #[test]
    fn an_external_domain_cannot_be_added_live() {
        let domain = |keys: &str| {
            let text = format!(
                "name = \"vm1\"\nvcpu = {{ budget = \"3ms\", period = \"10ms\", priority = 3 }}\n\
                 {keys}"
            );
            toml::Value::Table(table(&text))
        };
        for (keys, field) in [
            ("attach = \"/sys/fs/cgroup/unified/vm1\"", "attach"),
            ("pids = [1234]", "pids"),
        ] {
            assert_eq!(
                read_domain(&domain(keys), "vm1.toml")
                    .unwrap_err()
                    .to_string(),
                format!(
                    "vm1.toml: domain 'vm1': {field}: an external domain cannot be added to \
                     a running system: declare it in the scenario file"
                )
            );
        }
    }
}
