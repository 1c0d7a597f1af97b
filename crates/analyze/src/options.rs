//! The options of `rtvmm analyze`, as the command line gives them.

use std::fmt;
use std::str::FromStr;

use rtvmm_analysis::{GuestScheduler as AnalysisGuest, SbfMode};
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;

/// A length on the command line: a bare whole number counts analysis units, a time with a
/// unit (`10ms`) is converted to them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Length {
    Units(u64),
    Time(Nanos),
}

impl FromStr for Length {
    type Err = String;

    fn from_str(text: &str) -> Result<Length, String> {
        let trimmed = text.trim();
        if !trimmed.is_empty() && trimmed.bytes().all(|b| b.is_ascii_digit()) {
            let units: u64 = trimmed
                .parse()
                .map_err(|_| format!("'{text}' is too large"))?;
            if units == 0 {
                return Err("must be greater than 0".to_string());
            }
            return Ok(Length::Units(units));
        }
        let time: Nanos = trimmed.parse().map_err(|e| format!("'{text}': {e}"))?;
        if time.is_zero() {
            return Err("must be greater than 0".to_string());
        }
        Ok(Length::Time(time))
    }
}

impl fmt::Display for Length {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Length::Units(n) => write!(f, "{n}"),
            Length::Time(t) => write!(f, "{t}"),
        }
    }
}

impl Length {
    pub(crate) fn floor_units(self, unit: u64) -> u64 {
        match self {
            Length::Units(n) => n,
            Length::Time(t) => t.as_ns() / unit,
        }
    }

    pub(crate) fn ceil_units(self, unit: u64) -> u64 {
        match self {
            Length::Units(n) => n,
            Length::Time(t) => t.as_ns().div_ceil(unit),
        }
    }

    pub(crate) fn exact_units(self, unit: u64) -> Option<u64> {
        match self {
            Length::Units(n) => Some(n),
            Length::Time(t) => (t.as_ns() % unit == 0).then(|| t.as_ns() / unit),
        }
    }
}

/// `--period-range MIN..MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PeriodBounds {
    pub min: Length,
    pub max: Length,
}

impl FromStr for PeriodBounds {
    type Err = String;

    fn from_str(text: &str) -> Result<PeriodBounds, String> {
        let (min, max) = text
            .split_once("..")
            .ok_or_else(|| format!("'{text}': write MIN..MAX, for example 5..50 or 5ms..50ms"))?;
        let max = max.strip_prefix('=').unwrap_or(max);
        Ok(PeriodBounds {
            min: min.parse()?,
            max: max.parse()?,
        })
    }
}

/// `--fixed-period NAME=Π`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FixedPeriod {
    pub domain: String,
    pub period: Length,
}

impl FromStr for FixedPeriod {
    type Err = String;

    fn from_str(text: &str) -> Result<FixedPeriod, String> {
        let (domain, period) = text
            .rsplit_once('=')
            .ok_or_else(|| format!("'{text}': write NAME=PERIOD, for example d1=10 or d1=10ms"))?;
        if domain.trim().is_empty() {
            return Err(format!("'{text}': the domain name is empty"));
        }
        Ok(FixedPeriod {
            domain: domain.trim().to_string(),
            period: period.parse()?,
        })
    }
}

impl FixedPeriod {
    /// The period in whole analysis units of `unit` ns; an error when it is not whole.
    pub(crate) fn units(&self, unit: u64) -> Result<u64, crate::AnalyzeError> {
        self.period.exact_units(unit).ok_or_else(|| {
            crate::AnalyzeError::BadOption(format!(
                "--fixed-period {}={}: not a whole number of units of {}",
                self.domain,
                self.period,
                Nanos::from_ns(unit)
            ))
        })
    }
}

/// `--sbf auto|general`.
pub fn parse_sbf(text: &str) -> Result<SbfMode, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "auto" => Ok(SbfMode::Auto),
        "general" => Ok(SbfMode::General),
        _ => Err(format!(
            "unknown sbf mode '{text}': expected auto or general"
        )),
    }
}

/// `--guest rm|edf`.
pub fn parse_guest(text: &str) -> Result<AnalysisGuest, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "rm" => Ok(AnalysisGuest::Rm),
        "edf" => Ok(AnalysisGuest::Edf),
        _ => Err(format!(
            "unknown guest scheduler '{text}': expected rm or edf"
        )),
    }
}

/// `--model prm|mpr|dmpr`: the resource model of the interfaces — the periodic resource
/// on one processor (PRM), or the multiprocessor models of a global EDF guest of several
/// VCPUs: MPR `⟨Π, Θ, m′⟩` (Shin, Easwaran & Lee 2008) as m′ equal VCPUs scheduled by
/// global EDF with the rest of their pool, or DMPR (Xu et al. 2013): m full VCPUs, each on
/// a pcpu of its own, and one partial VCPU `(Π, Θ)` by global EDF on the pool's other pcpus.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Model {
    #[default]
    Prm,
    Mpr,
    Dmpr,
}

impl Model {
    /// The name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Model::Prm => "prm",
            Model::Mpr => "mpr",
            Model::Dmpr => "dmpr",
        }
    }
}

/// `--model prm|mpr|dmpr`.
pub fn parse_model(text: &str) -> Result<Model, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "prm" => Ok(Model::Prm),
        "mpr" => Ok(Model::Mpr),
        "dmpr" => Ok(Model::Dmpr),
        _ => Err(format!("unknown model '{text}': expected prm, mpr or dmpr")),
    }
}

/// How to analyse (the command line's options).
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The analysis unit instead of the scenario's quantum (for CARTS: a unit's length).
    pub quantum: Option<Nanos>,
    pub sbf: SbfMode,
    /// Analyse every domain as this guest scheduler instead of its own.
    pub guest: Option<AnalysisGuest>,
    /// Restrict the interface search.
    pub period_range: Option<PeriodBounds>,
    /// Fixed interface periods for the named domains.
    pub fixed_periods: Vec<FixedPeriod>,
    /// The VMM policy instead of the scenario's (CARTS: Periodic Server).
    pub policy: Option<PolicyKind>,
    /// Check the domains' own VCPU budgets and periods instead of computing interfaces.
    pub given: bool,
    /// The resource model (`--model`); `None` is each input's default: PRM for a CARTS
    /// file, DMPR for a global EDF guest of several VCPUs in a scenario (what suits RTDS:
    /// a full VCPU beside others in one EDF cluster is never sure of its whole period,
    /// while on its own pcpu it is).
    pub model: Option<Model>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_parse() {
        assert_eq!("10".parse::<Length>(), Ok(Length::Units(10)));
        assert_eq!(
            "10ms".parse::<Length>(),
            Ok(Length::Time(Nanos::from_ms(10)))
        );
        assert!("0".parse::<Length>().is_err());
        let b: PeriodBounds = "5..50ms".parse().unwrap();
        assert_eq!(b.min, Length::Units(5));
        assert_eq!(b.max, Length::Time(Nanos::from_ms(50)));
        let f: FixedPeriod = "d=1=10".parse().unwrap();
        assert_eq!(f.domain, "d=1");
        assert!("x".parse::<FixedPeriod>().is_err());
        assert_eq!(parse_model("DMPR"), Ok(Model::Dmpr));
        assert_eq!(Model::default(), Model::Prm);
        assert!(parse_model("mpr2").is_err());
    }
}
