//! Identifiers and parameters shared by the VMM policies and the guests.

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

/// Everything a VMM policy may need to know about one VCPU. Each policy reads the fields
/// that concern it: servers and RTDS read `budget`/`period`/`priority` (SEDF reads `budget`
/// as its slice), Credit reads `weight`/`cap`, SEDF and RTDS read `extratime`.
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
    pub extratime: bool,
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
            extratime: false,
            max_replenishments: DEFAULT_MAX_REPLENISHMENTS,
        }
    }

    /// Checks the server fields (budget, period) every policy relies on.
    pub fn validate_server(&self) -> Result<(), ParamError> {
        if self.period.is_zero() {
            return Err(ParamError::PeriodZero);
        }
        if self.budget.is_zero() {
            return Err(ParamError::BudgetZero);
        }
        if self.budget > self.period {
            return Err(ParamError::BudgetAbovePeriod {
                budget: self.budget,
                period: self.period,
            });
        }
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
    #[error("budget: RTDS needs at least 10us (got {0})")]
    RtdsTooSmall(Nanos),
    #[error("{0}")]
    Other(String),
}
