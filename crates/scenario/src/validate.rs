//! The checks that need the policies: each VCPU's parameters go through the policy's own
//! [`Policy::validate`] (so the rules live in one place, in the core), through every
//! policy the scenario switches to, in event order; and every time the run can reach must
//! fit the 64-bit nanosecond clock.

use rtvmm_core::guest::{Arrival, TaskSpec};
use rtvmm_core::machine::{Machine, MachineError};
use rtvmm_core::model::{ParamError, VcpuId, VcpuParams};
use rtvmm_core::policy::{
    arinc653, credit, Arinc653Table, MinorFrame, Policy, PolicyConfig, PolicyKind,
};
use rtvmm_core::Nanos;
use rtvmm_sim::{Change, DomainSpec};

use crate::error::{ErrorKind, Location, ScenarioError};
use crate::{ArincTableSpec, Scenario};

/// Xen's `ARINC653_MAX_DOMAINS_PER_SCHEDULE`: at most this many minor frames per table.
pub use rtvmm_core::policy::arinc653::MAX_MINOR_FRAMES as ARINC653_MAX_MINOR_FRAMES;

/// A Poisson gap is the mean times −ln(U) with U ≥ 2⁻⁵³, so at most about 37 means; this
/// bound keeps every drawn gap inside the clock.
const POISSON_GAP_BOUND: u64 = 64;

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
        Ok(match kind {
            PolicyKind::Deferrable => PolicyConfig::Deferrable,
            PolicyKind::Periodic => PolicyConfig::Periodic,
            PolicyKind::Polling => PolicyConfig::Polling,
            PolicyKind::Sporadic => PolicyConfig::Sporadic,
            PolicyKind::Wcps => PolicyConfig::Wcps,
            PolicyKind::Crps => PolicyConfig::Crps,
            PolicyKind::Credit => {
                // The core's rules; the parser already refuses zero times with a field.
                credit::validate_config(&self.scheduler.credit).map_err(|problem| {
                    self.err(
                        Location::section("[scheduler]", "credit"),
                        ErrorKind::Invalid(problem),
                    )
                })?;
                PolicyConfig::Credit(self.scheduler.credit)
            }
            PolicyKind::Sedf => PolicyConfig::Sedf,
            PolicyKind::Rtds => PolicyConfig::Rtds(self.scheduler.rtds),
            PolicyKind::Arinc653 => {
                let table = self
                    .scheduler
                    .arinc653
                    .as_ref()
                    .ok_or_else(|| self.err(at, ErrorKind::NeedsArincTable))?;
                PolicyConfig::Arinc653(self.arinc_table(table)?)
            }
        })
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

    /// Checks the table and turns domain names into VCPU ids. The checks here name the
    /// minor frame at fault; the core's [`arinc653::validate_table`] has the last word.
    fn arinc_table(&self, table: &ArincTableSpec) -> Result<Arinc653Table, ScenarioError> {
        let at = |field: String| Location::section("[scheduler]", &field);
        if table.major_frame.is_zero() {
            return Err(self.err(at("major_frame".into()), ErrorKind::Zero));
        }
        let count = table.minor_frames.len();
        if count > ARINC653_MAX_MINOR_FRAMES {
            return Err(self.err(
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
                return Err(self.err(field("runtime"), ErrorKind::Zero));
            }
            let vcpu = self
                .declared_domains()
                .position(|name| name == frame.domain)
                .ok_or_else(|| {
                    self.err(
                        field("domain"),
                        ErrorKind::UnknownDomain {
                            name: frame.domain.clone(),
                            when: String::new(),
                        },
                    )
                })?;
            total = total.checked_add(frame.runtime).ok_or_else(|| {
                self.err(
                    field("runtime"),
                    ErrorKind::Overflow {
                        detail: "the sum of the minor frames".to_string(),
                    },
                )
            })?;
            minor_frames.push(MinorFrame {
                vcpu: VcpuId(vcpu as u32),
                runtime: frame.runtime,
            });
        }
        if total > table.major_frame {
            return Err(self.err(
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
            .map_err(|problem| self.err(at("minor_frames".into()), ErrorKind::Invalid(problem)))?;
        Ok(table)
    }

    /// Runs every check that needs the policies or the run's length. Called by the parser
    /// and by every `with_*` method; call it again after editing a `Scenario` by hand.
    pub fn validate(&self) -> Result<(), ScenarioError> {
        if self.duration.is_zero() {
            return Err(self.err(Location::top("duration"), ErrorKind::Zero));
        }
        if let Some(table) = &self.scheduler.arinc653 {
            self.arinc_table(table)?;
        }
        let machine = &self.system.machine;
        Machine::new(*machine, self.system.policy.clone()).map_err(|e| {
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
            self.err(at, ErrorKind::Machine(e))
        })?;

        let mut kind = self.system.policy.kind();
        let mut policy = self.system.policy.build(machine.pcpus);
        let mut live: Vec<(&str, &VcpuParams)> = Vec::new();
        for d in &self.system.domains {
            self.check_domain(policy.as_ref(), kind, d, Nanos::ZERO, Location::default())?;
            if live.iter().any(|(name, _)| *name == d.name) {
                return Err(self.duplicate_domain(&d.name, Location::top("name")));
            }
            live.push((&d.name, &d.vcpu));
        }
        let mut previous = Nanos::ZERO;
        for (i, c) in self.system.changes.iter().enumerate() {
            let here = Location {
                event: Some(i + 1),
                ..Location::default()
            };
            if c.at < previous {
                return Err(self.err(
                    here.field("at"),
                    ErrorKind::EventsOutOfOrder { at: c.at, previous },
                ));
            }
            previous = c.at;
            let find = |live: &[(&str, &VcpuParams)], name: &str| {
                live.iter().position(|(n, _)| *n == name).ok_or_else(|| {
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
                    self.check_vcpu(policy.as_ref(), kind, params, at)?;
                    live[index].1 = params;
                }
                Change::SwapPolicy(config) => {
                    let new_policy = config.build(machine.pcpus);
                    for (name, params) in &live {
                        let at = Location {
                            domain: Some(name.to_string()),
                            ..here.clone()
                        };
                        self.check_vcpu(new_policy.as_ref(), config.kind(), params, at)?;
                    }
                    kind = config.kind();
                    policy = new_policy;
                }
                Change::AddDomain(spec) => {
                    if live.iter().any(|(name, _)| *name == spec.name) {
                        return Err(self.duplicate_domain(&spec.name, here.field("domain.name")));
                    }
                    self.check_domain(policy.as_ref(), kind, spec, c.at, here.clone())?;
                    live.push((&spec.name, &spec.vcpu));
                }
                Change::RemoveDomain { domain } => {
                    let index = find(&live, domain)?;
                    live.remove(index);
                }
            }
        }
        Ok(())
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

    fn check_vcpu(
        &self,
        policy: &dyn Policy,
        kind: PolicyKind,
        params: &VcpuParams,
        at: Location,
    ) -> Result<(), ScenarioError> {
        policy.validate(params).map_err(|error| {
            let unset = params.budget.is_zero() && params.period.is_zero();
            let kind = if unset && matches!(error, ParamError::PeriodZero | ParamError::BudgetZero)
            {
                ErrorKind::NeedsServerParams { policy: kind }
            } else {
                ErrorKind::Param {
                    policy: kind,
                    error,
                }
            };
            self.err(at.field("vcpu"), kind)
        })
    }

    /// A domain joining at `start`: its VCPU under the policy in effect, and the times its
    /// VCPU and tasks can reach before the run ends.
    fn check_domain(
        &self,
        policy: &dyn Policy,
        kind: PolicyKind,
        domain: &DomainSpec,
        start: Nanos,
        base: Location,
    ) -> Result<(), ScenarioError> {
        let here = Location {
            domain: Some(domain.name.clone()),
            ..base
        };
        self.check_vcpu(policy, kind, &domain.vcpu, here.clone())?;
        let end = self.end_after(start, &here)?;
        let vcpu = &domain.vcpu;
        self.reach(
            end,
            &[("vcpu.offset", vcpu.offset), ("vcpu.period", vcpu.period)],
            &here,
        )?;
        for task in &domain.tasks {
            let at = Location {
                task: Some(task.name.clone()),
                ..here.clone()
            };
            self.check_task(task, end, &at)?;
        }
        Ok(())
    }

    fn end_after(&self, start: Nanos, at: &Location) -> Result<Nanos, ScenarioError> {
        start.checked_add(self.duration).ok_or_else(|| {
            self.err(
                at.field(if start.is_zero() { "duration" } else { "at" }),
                ErrorKind::Overflow {
                    detail: format!("the run's end ({start} + duration {})", self.duration),
                },
            )
        })
    }

    /// `end` plus each step in turn must fit the clock.
    fn reach(
        &self,
        end: Nanos,
        steps: &[(&str, Nanos)],
        at: &Location,
    ) -> Result<(), ScenarioError> {
        let mut t = end;
        for (field, value) in steps {
            t = t.checked_add(*value).ok_or_else(|| {
                self.err(
                    at.field(field),
                    ErrorKind::Overflow {
                        detail: format!("{value}, added to the run's end {end},"),
                    },
                )
            })?;
        }
        Ok(())
    }

    fn check_task(&self, task: &TaskSpec, end: Nanos, at: &Location) -> Result<(), ScenarioError> {
        let mut steps = vec![
            ("offset", task.offset),
            ("period", task.period),
            ("deadline", task.deadline),
        ];
        match &task.arrival {
            Arrival::Periodic => {}
            Arrival::Sporadic { max_extra_gap } => steps.push(("max_extra_gap", *max_extra_gap)),
            Arrival::AperiodicTimes(times) => {
                if let Some(&last) = times.last() {
                    steps.push(("releases", last));
                }
            }
            Arrival::Poisson { mean_gap } => {
                let bound = mean_gap.checked_mul(POISSON_GAP_BOUND).ok_or_else(|| {
                    self.err(
                        at.field("mean_gap"),
                        ErrorKind::Overflow {
                            detail: format!("{mean_gap} × {POISSON_GAP_BOUND}"),
                        },
                    )
                })?;
                steps.push(("mean_gap", bound));
            }
        }
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
        self.reach(end, &steps, at)
    }
}
