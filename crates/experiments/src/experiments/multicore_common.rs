//! What the two many-pcpu experiments, latency and packet-latency, share: the wake
//! delivery each run takes ([`Delivery`]) and the `xl` commands a set-up runs at time 0
//! ([`xl_at_zero`]).
//!
//! # Wake delivery
//! Both experiments run every published case twice: once with no wake delivery, where a
//! latency is the schedulers' alone, and once with the delivery measured on this machine
//! (the `this-machine` preset of `[machine] wake_delivery`, `docs/scenario.md`): the
//! interrupt, the hypervisor's upcall and the guest's wake path, drawn per wake
//! (`docs/experiments.md`, "latency" and "packet-latency"). A run without delivery is the
//! run each experiment made before it had the second one, byte for byte.

use rtvmm_core::wake::{WakeDelivery, WakeRandom};
use rtvmm_core::xl::XlCommand;
use rtvmm_core::Nanos;
use rtvmm_system::{Change, TimedChange};

/// How a timer's or an event's wake reaches its task in a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// At once: the latency is the schedulers' alone.
    None,
    /// After the wake delivery measured on this machine (the `this-machine` preset of
    /// `[machine] wake_delivery`): the interrupt, the upcall and the guest's wake path.
    Measured,
}

impl Delivery {
    pub const ALL: [Delivery; 2] = [Delivery::None, Delivery::Measured];

    /// The name a CSV's `delivery` column and a run's key carry.
    pub fn name(self) -> &'static str {
        match self {
            Delivery::None => "none",
            Delivery::Measured => "this-machine",
        }
    }

    /// The machine's setting for it.
    pub fn setting(self) -> WakeDelivery {
        match self {
            Delivery::None => WakeDelivery::OFF,
            Delivery::Measured => {
                rtvmm_scenario::wake_delivery_preset("this-machine").expect("a shipped preset")
            }
        }
    }

    /// The least latency a wake can be given: the fixed part and the least of the random
    /// part (an empirical distribution's first quantile; 0 for the others).
    pub fn least(self) -> Nanos {
        let setting = self.setting();
        setting.fixed
            + match &setting.random {
                WakeRandom::None | WakeRandom::Exponential { .. } | WakeRandom::Uniform { .. } => {
                    Nanos::ZERO
                }
                WakeRandom::Empirical { quantiles } => quantiles[0],
            }
    }

    /// `stem` for no delivery (the name every file had before the second delivery), else
    /// `stem-<name>`.
    pub fn suffixed(self, stem: &str) -> String {
        match self {
            Delivery::None => stem.to_string(),
            d => format!("{stem}-{}", d.name()),
        }
    }
}

/// The `xl` commands `lines`, in order, as changes at time 0: the path a scenario file's
/// `[[event]] xl = …` takes. The lines are an experiment's own, so they parse.
pub fn xl_at_zero(lines: &[&str]) -> Vec<TimedChange> {
    lines
        .iter()
        .map(|line| TimedChange {
            at: Nanos::ZERO,
            change: Change::Xl(XlCommand::parse(line).expect("an experiment's xl commands parse")),
        })
        .collect()
}
