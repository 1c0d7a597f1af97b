//! Identifiers and parameters shared by the VMM policies and the guests.

// Defined with the guest schedulers that read it; a domain's placement names it here.
pub use crate::guest::GuestSmp;
use crate::guest::{GuestScheduler, TaskSpec};
use crate::time::Nanos;

/// A VCPU, by its index in the machine's VCPU table. Ids are never reused, so a removed
/// VCPU's id never names another one.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct VcpuId(pub u32);

/// A domain (virtual machine), by its index in the machine's domain table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DomainId(pub u32);

/// A physical CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PcpuId(pub u32);

impl VcpuId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
impl DomainId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}
impl PcpuId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// Xen's default Credit weight.
pub const DEFAULT_WEIGHT: u32 = 256;
/// The corrected Sporadic Server's default limit on pending replenishments per VCPU.
pub const DEFAULT_MAX_REPLENISHMENTS: u32 = 8;

/// The Credit weight of a server's share, so that a system described by servers runs
/// under Credit with the same shares: `round(10000 · budget / period)` (half up), at least
/// 1; Xen's default [`DEFAULT_WEIGHT`] for a zero period. 10000 keeps four digits of the
/// share, well inside `u32`. The one place this rule is written.
pub fn credit_weight_from_share(budget: Nanos, period: Nanos) -> u32 {
    if period.is_zero() {
        return DEFAULT_WEIGHT;
    }
    let (b, p) = (budget.as_ns() as u128, period.as_ns() as u128);
    // Round half up: (2·10000·b + p) / (2p).
    let w = (2 * 10_000 * b + p) / (2 * p);
    u32::try_from(w).unwrap_or(u32::MAX).max(1)
}

/// Everything a VMM policy may need to know about one VCPU. Each policy reads the fields
/// that concern it: servers and RTDS read `budget`/`period`/`priority` (SEDF reads `budget`
/// as its slice), Credit reads `weight`/`cap`, SEDF and RTDS read `extratime`
/// ([`VcpuParams::extratime_under`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VcpuParams {
    pub budget: Nanos,
    pub period: Nanos,
    /// Smaller number = higher priority.
    pub priority: u32,
    /// Time of the first period boundary (relative to when the VCPU is inserted).
    pub offset: Nanos,
    pub weight: u32,
    /// Percent of one pcpu; 0 = no cap.
    pub cap: u32,
    /// Whether the VCPU may run beyond its budget when nobody with budget wants the pcpu;
    /// `None`: not said, so the policy's default holds ([`PolicyKind::extratime_default`]:
    /// on under RTDS, as Xen gives every new RTDS unit; off under SEDF, the papers'
    /// setting).
    pub extratime: Option<bool>,
    pub max_replenishments: u32,
}

impl VcpuParams {
    /// A fixed-priority server VCPU with the other fields at their defaults.
    pub fn server(budget: Nanos, period: Nanos, priority: u32) -> VcpuParams {
        VcpuParams {
            budget,
            period,
            priority,
            offset: Nanos::ZERO,
            weight: DEFAULT_WEIGHT,
            cap: 0,
            extratime: None,
            max_replenishments: DEFAULT_MAX_REPLENISHMENTS,
        }
    }

    /// Whether the VCPU has extra time under a policy of `kind`: as given, else that
    /// policy's default.
    pub fn extratime_under(&self, kind: PolicyKind) -> bool {
        self.extratime.unwrap_or(kind.extratime_default())
    }

    /// Checks the budget and period every budget-per-period policy relies on: both above
    /// zero, the budget at most the period (SEDF's slice and RTDS's budget too).
    pub fn validate_slice(&self) -> Result<(), ParamError> {
        self.validate_rtds_slice(Nanos::ZERO)
    }

    /// [`VcpuParams::validate_slice`] with RTDS's least budget, `min_budget` (Xen's
    /// `RTDS_MIN_BUDGET`): a budget below it is [`ParamError::RtdsTooSmall`], checked after
    /// the zeros and before the budget is compared with the period, as `xl sched-rtds`
    /// checks each time before comparing them.
    pub fn validate_rtds_slice(&self, min_budget: Nanos) -> Result<(), ParamError> {
        if self.period.is_zero() {
            return Err(ParamError::PeriodZero);
        }
        if self.budget.is_zero() {
            return Err(ParamError::BudgetZero);
        }
        if self.budget < min_budget {
            return Err(ParamError::RtdsTooSmall(self.budget));
        }
        if self.budget > self.period {
            return Err(ParamError::BudgetAbovePeriod {
                budget: self.budget,
                period: self.period,
            });
        }
        Ok(())
    }

    /// Checks the server fields (budget, period, replenishments) of the fixed-priority
    /// servers.
    pub fn validate_server(&self) -> Result<(), ParamError> {
        self.validate_slice()?;
        if self.max_replenishments == 0 {
            return Err(ParamError::MaxReplenishmentsZero);
        }
        Ok(())
    }

    /// Checks the Credit fields for a machine of `pcpus` pcpus.
    pub fn validate_credit(&self, pcpus: u32) -> Result<(), ParamError> {
        if self.weight == 0 {
            return Err(ParamError::WeightZero);
        }
        if self.cap > 100 * pcpus {
            return Err(ParamError::CapTooLarge {
                cap: self.cap,
                max: 100 * pcpus,
            });
        }
        Ok(())
    }
}

/// A parameter a policy cannot accept. The caller adds which domain and VCPU it concerns.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    #[error("period: must be greater than 0")]
    PeriodZero,
    #[error("budget: must be greater than 0")]
    BudgetZero,
    #[error("budget: {budget} is above the period {period}")]
    BudgetAbovePeriod { budget: Nanos, period: Nanos },
    #[error("weight: must be greater than 0")]
    WeightZero,
    #[error("cap: {cap}% is above {max}% (100 × pcpus)")]
    CapTooLarge { cap: u32, max: u32 },
    #[error("max_replenishments: must be at least 1")]
    MaxReplenishmentsZero,
    #[error("budget: RTDS needs at least {min}us (got {0})", min = RTDS_MIN_US)]
    RtdsTooSmall(Nanos),
    #[error("{0}")]
    Other(String),
}

/// Xen's lower bound on an RTDS budget and period, in µs (`RTDS_MIN_BUDGET`); `xl`
/// refuses less, and so does the policy.
pub const RTDS_MIN_US: u64 = 10;

/// Every policy rtvmm knows, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PolicyKind {
    Deferrable,
    Periodic,
    Polling,
    Sporadic,
    Wcps,
    Crps,
    Credit,
    Sedf,
    /// SEDF as ideal EDF, without Xen's wake-up rules.
    SedfIdeal,
    Rtds,
    Arinc653,
}

impl PolicyKind {
    pub const ALL: [PolicyKind; 11] = [
        PolicyKind::Deferrable,
        PolicyKind::Periodic,
        PolicyKind::Polling,
        PolicyKind::Sporadic,
        PolicyKind::Wcps,
        PolicyKind::Crps,
        PolicyKind::Credit,
        PolicyKind::Sedf,
        PolicyKind::SedfIdeal,
        PolicyKind::Rtds,
        PolicyKind::Arinc653,
    ];

    /// The canonical name, as written in scenario files and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            PolicyKind::Deferrable => "deferrable",
            PolicyKind::Periodic => "periodic",
            PolicyKind::Polling => "polling",
            PolicyKind::Sporadic => "sporadic",
            PolicyKind::Wcps => "wcps",
            PolicyKind::Crps => "crps",
            PolicyKind::Credit => "credit",
            PolicyKind::Sedf => "sedf",
            PolicyKind::SedfIdeal => "sedf-ideal",
            PolicyKind::Rtds => "rtds",
            PolicyKind::Arinc653 => "arinc653",
        }
    }

    /// Other accepted names.
    pub fn aliases(self) -> &'static [&'static str] {
        match self {
            PolicyKind::Periodic => &["ptps"],
            PolicyKind::Crps => &["ssps"],
            PolicyKind::Deferrable => &["ds"],
            PolicyKind::Sporadic => &["ss"],
            PolicyKind::Arinc653 => &["arinc"],
            _ => &[],
        }
    }

    /// One line for `rtvmm policies`.
    pub fn description(self) -> &'static str {
        match self {
            PolicyKind::Deferrable => {
                "Deferrable Server: budget kept while idle, set to B at each period (RT-Xen 2011)"
            }
            PolicyKind::Periodic => {
                "Periodic Server (PTPS): an idle highest-priority server idles its budget away"
            }
            PolicyKind::Polling => {
                "Polling Server: an idle server's budget is discarded until its next period"
            }
            PolicyKind::Sporadic => {
                "Sporadic Server (Stanovich 2010): budget used is paid back one period after activation"
            }
            PolicyKind::Wcps => {
                "Work-conserving periodic server: lower-priority work runs on both budgets (CSA 2012)"
            }
            PolicyKind::Crps => {
                "Capacity-reclaiming periodic server: idle budget is lent to others (CSA 2012)"
            }
            PolicyKind::Credit => {
                "Xen Credit: proportional share by weight, BOOST on wake, optional cap"
            }
            PolicyKind::Sedf => {
                "Xen 4.0 SEDF: EDF over slice/period; a VCPU waking inside its period waits for the next"
            }
            PolicyKind::SedfIdeal => "SEDF as ideal EDF: slice kept while blocked, fixed period grid",
            PolicyKind::Rtds => "Xen RTDS: EDF servers with budget/period and extratime",
            PolicyKind::Arinc653 => "ARINC 653: static cyclic table of minor frames",
        }
    }

    /// Whether the policy is one of the fixed-priority servers.
    pub fn is_server(self) -> bool {
        matches!(
            self,
            PolicyKind::Deferrable
                | PolicyKind::Periodic
                | PolicyKind::Polling
                | PolicyKind::Sporadic
                | PolicyKind::Wcps
                | PolicyKind::Crps
        )
    }

    /// Whether the policy schedules a pool of several pcpus globally (one run queue, a
    /// VCPU may run on any pcpu of its affinity): RTDS (global EDF), Credit, and the
    /// fixed-priority servers (global fixed priority). The others (SEDF, ARINC 653)
    /// schedule such a pool partitioned: every VCPU pinned to one pcpu, one instance of the
    /// policy per pcpu ([`partitioned`](crate::policy::partitioned)).
    pub fn schedules_globally(self) -> bool {
        self.is_server() || matches!(self, PolicyKind::Rtds | PolicyKind::Credit)
    }

    /// Whether a VCPU that says nothing about `extratime` has it under this policy: yes
    /// under RTDS (Xen's `rt_unit_init` sets it on every new unit, and `xl sched-rtds`
    /// without `-e` keeps it), no under SEDF (the papers set it off). The other policies
    /// do not read it.
    pub fn extratime_default(self) -> bool {
        matches!(self, PolicyKind::Rtds)
    }

    /// Looks a policy up by its name or an alias (case-insensitive).
    pub fn from_name(name: &str) -> Option<PolicyKind> {
        let lower = name.trim().to_ascii_lowercase();
        PolicyKind::ALL
            .into_iter()
            .find(|k| k.name() == lower || k.aliases().contains(&lower.as_str()))
    }

    /// [`PolicyKind::from_name`], with an error that lists the names when none matches
    /// (what `rtvmm --policy` and the Python package say).
    pub fn parse(name: &str) -> Result<PolicyKind, UnknownPolicy> {
        PolicyKind::from_name(name).ok_or_else(|| UnknownPolicy(name.to_string()))
    }
}

/// A policy name that is none of the names or aliases ([`PolicyKind::parse`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown policy '{0}': expected one of {names} (or an alias; see `rtvmm policies`)",
    names = PolicyKind::ALL.map(PolicyKind::name).join(", ")
)]
pub struct UnknownPolicy(pub String);

impl std::fmt::Display for PolicyKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One domain as a driver is given it: its VCPU parameters, its guest (the scheduler and
/// tasks inside) and where it runs. The simulator runs these; generators and the scenario
/// reader make them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DomainSpec {
    pub name: String,
    /// The parameters of each of its VCPUs (`xl sched-rtds -v all`).
    pub vcpu: VcpuParams,
    pub guest: GuestScheduler,
    pub tasks: Vec<TaskSpec>,
    /// Pool, number of VCPUs and their affinity; the default is one VCPU in `Pool-0`, free
    /// to run on any of its pcpus.
    pub placement: Placement,
}

/// Where a domain runs: its cpupool, its VCPUs and their hard affinity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Placement {
    /// The cpupool by name; `None` is the first pool (`Pool-0`).
    pub pool: Option<String>,
    /// Number of VCPUs; 0 means 1 (the default).
    pub vcpus: u32,
    /// Hard affinity of VCPU i (machine pcpu ids); a missing entry or `None` means every
    /// pcpu of the domain's pool.
    pub affinity: Vec<Option<Vec<u32>>>,
    /// How the guest schedules its tasks over several VCPUs.
    pub smp: GuestSmp,
}

impl Placement {
    /// The number of VCPUs (at least 1).
    pub fn vcpu_count(&self) -> u32 {
        self.vcpus.max(1)
    }

    /// The hard affinity of VCPU `i`, if restricted.
    pub fn affinity_of(&self, i: u32) -> Option<&[u32]> {
        self.affinity.get(i as usize).and_then(|a| a.as_deref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credit_weight_is_the_share_rounded_half_up() {
        let ms = Nanos::from_ms;
        assert_eq!(credit_weight_from_share(ms(2), ms(10)), 2000);
        assert_eq!(
            credit_weight_from_share(ms(2), ms(3)),
            6667,
            "6666.67 rounds up"
        );
        assert_eq!(credit_weight_from_share(ms(1), ms(8)), 1250);
        // 10000 · 1 / 20000 = 0.5: half rounds up, and never below 1.
        assert_eq!(credit_weight_from_share(Nanos(1), Nanos(20_000)), 1);
        assert_eq!(credit_weight_from_share(Nanos(1), Nanos::from_secs(1)), 1);
        assert_eq!(credit_weight_from_share(ms(10), ms(10)), 10_000);
        assert_eq!(credit_weight_from_share(ms(1), Nanos::ZERO), DEFAULT_WEIGHT);
    }
}
