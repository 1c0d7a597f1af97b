//! # rtvmm-scenario: scenario files
//!
//! A scenario is a TOML file that says what to simulate: the machine, the VMM policy, the
//! domains with their VCPU and guest tasks, and changes at given times. This crate turns
//! the text into a validated [`Scenario`] (whose [`Scenario::system`] is what
//! `rtvmm_sim::Simulation` runs), prints it back in normalised form
//! ([`Scenario::to_toml`]), re-targets it at another policy ([`Scenario::with_policy`]),
//! and `rtvmm_sim::run` runs it. [`demo`] holds the built-in scenario of `rtvmm demo`;
//! [`live`] reads the events' actions one at a time, for changing a running system.
//! Bad input gives a [`ScenarioError`] that names the file, the place (section, event,
//! domain, task), the field and what is wrong; nothing here panics on input.
//!
//! ```
//! use rtvmm_core::policy::PolicyKind;
//! use rtvmm_scenario::Scenario;
//!
//! let text = r#"
//!     name = "two-domains"
//!     duration = "1s"
//!     [[domain]]
//!     name = "d1"
//!     vcpu = { budget = "2ms", period = "10ms" }
//!     [[domain.task]]
//!     name = "t1"
//!     period = "50ms"
//!     wcet = "5ms"
//! "#;
//! let scenario = Scenario::from_toml(text, "two.toml")?;
//! assert_eq!(scenario.system.domains[0].vcpu.priority, 1); // rate-monotonic
//! assert_eq!(scenario.system.domains[0].vcpu.weight, 2000); // 10000 × 2/10, for Credit
//! // The normalised text parses back to the same scenario.
//! assert_eq!(Scenario::from_toml(&scenario.to_toml(), "two.toml")?, scenario);
//!
//! let err = Scenario::from_toml(&text.replace("\"5ms\"", "5"), "two.toml").unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     "two.toml: domain 'd1', task 't1': wcet: 5 is a bare number: write times as a \
//!      string with a unit (ns, us, ms, s), for example \"10ms\""
//! );
//! # Ok::<(), rtvmm_scenario::ScenarioError>(())
//! ```
//!
//! # The format
//! Every time is a string with a unit: `"10ms"`, `"400us"`, `"2.5ms"`, `"1s"`, `"150ns"`.
//! A bare number is an error, never a guess. Unknown keys are errors.
//!
//! ```toml
//! name = "even-share"              # default: the file's stem
//! duration = "10s"                 # required, > 0
//! seed = 42                        # default 0
//!
//! [machine]                        # every key optional
//! pcpus = 1                        # default 1; more make one pool of all (or see [[pool]])
//! quantum = "1ms"                  # the RT-Xen servers' tick (Credit has its own, below;
//!                                  # SEDF, RTDS and ARINC 653 are event-driven)
//! replenishment = "exact"          # or "tick" (ticking servers only: at the next tick)
//! overhead = { do_schedule = "150ns", context_switch = "1.5us" }   # default 0ns each;
//!                                  # also migration (switching in a VCPU that last ran on
//!                                  # another pcpu) and lock (per do_schedule, per pcpu of
//!                                  # the pool)
//! overhead_charge = "incoming"     # who pays for overhead: the VCPU chosen (default,
//!                                  # as Xen) or "none"
//! wake_delivery = { fixed = "5us", random = { dist = "exponential", mean = "3us" } }
//!                                  # a timer or event reaches its guest task that much
//!                                  # later (default off); or a preset, "this-machine"
//!
//! [scheduler]
//! policy = "deferrable"            # any name or alias of `rtvmm policies`; default deferrable
//! credit = { tick = "10ms", ticks_per_slice = 3, ticks_per_accounting = 3 }  # Xen 4.0
//! rtds = { mode = "event" }        # RTDS: "event" (Xen 4.7+, default) or "quantum" (4.5)
//! major_frame = "20ms"             # ARINC 653 only: its table, required for that policy
//! minor_frames = [{ domain = "d1", runtime = "5ms" }, { domain = "d2", runtime = "10ms" }]
//!
//! [[domain]]
//! name = "d1"                      # unique in the file, added domains included; names
//!                                  # have at most 255 characters
//! guest = "rm"                     # rm | dm | fp | edf; default rm
//! vcpu = { budget = "2ms", period = "10ms", priority = 1 }
//!
//! [[domain.task]]
//! name = "t1"                      # unique within its domain
//! period = "50ms"                  # required, > 0 (minimum inter-arrival for sporadic)
//! wcet = "5ms"                     # required, > 0
//!
//! [[event]]                        # in time order
//! at = "30s"
//! action = "sched-set"
//! domain = "d1"
//! budget = "3ms"
//! ```
//!
//! ## Several pcpus (`[[pool]]`, placement, `xl` events)
//! ```toml
//! [machine]
//! pcpus = 2
//!
//! [[pool]]                         # none: one pool `Pool-0` of every pcpu, [scheduler]'s policy
//! name = "Pool-0"                  # unique; the first pool's policy is the system's
//! pcpus = [0]                      # or "0-1,3" (xl's form); each pcpu in one pool at most
//! policy = "deferrable"            # default: [scheduler] policy
//! quantum = "1ms"                  # optional: the machine's otherwise
//! overhead = { context_switch = "1us" }   # optional: keys not given are the machine's
//!
//! [[pool]]
//! name = "rt"
//! pcpus = "1"
//! policy = "rtds"
//!
//! [[domain]]
//! name = "web"
//! pool = "rt"                      # default: the first pool
//! vcpus = 2                        # default 1
//! affinity = ["1", "all"]          # per VCPU, xl's form; or one string for all VCPUs;
//!                                  # default: every pcpu of its pool
//! smp = "global"                   # or "partitioned": how the guest spreads its tasks
//!
//! [[event]]
//! at = "5ms"
//! xl = "sched-rtds -d web -v all -p 10000 -b 4000"   # any `rtvmm_core::xl` command
//! ```
//! An `xl` event takes `at` and `xl` only. A file that uses any of this is checked by
//! replaying its domains and events on a machine (VCPU parameters under their pool's
//! policy, affinity within the pool, each `xl` command at its time); an error names the
//! event and the line of its `xl` command. `rtvmm analyze` analyses such a file as if on
//! one pcpu and says so; `--policy` replaces the first pool's policy.
//!
//! ## Triggered tasks, task VCPUs and chains (`[[chain]]`)
//! ```toml
//! [[domain.task]]
//! name = "front"
//! kind = "triggered"               # a job each time a job of `trigger` finishes
//! trigger = "driver/rx"            # "DOMAIN/TASK", any domain of the file (this one too)
//! delay = "20us"                   # after that finish (event-channel latency); default 0
//! period = "5ms"                   # the `rm` priority and the default deadline
//! wcet = "200us"
//! vcpu = 1                         # smp = "partitioned" only: the VCPU it runs on, from 0
//!                                  # (default 0); an error on a global guest
//!
//! [[chain]]                        # end-to-end latency, first release to last finish
//! name = "io"                      # unique in the file
//! tasks = ["driver/rx", "guest/front", "driver/tx"]   # each triggered by the one before;
//!                                  # the first released from outside (not triggered)
//! bounds = ["1ms", "5ms"]          # report the share of instances within each; default 1ms
//! ```
//! A triggered task has no `offset`. A name with a `/` in it is split where it names a
//! task of the file. An error at `trigger`, `delay`, a task's `vcpu` or a `[[chain]]` gives
//! its line (`io.toml:36: chain 'io': tasks: ...`). `rtvmm sim` prints a table of the
//! chains' latencies after the pcpus; the JSON results hold them under `chains`.
//!
//! ## VCPU keys (`vcpu = { .. }`)
//! - `budget`, `period`: both or neither. Servers, SEDF (budget = slice) and RTDS need
//!   them; Credit and ARINC 653 do not read them. The policy's own check decides what is
//!   valid (budget > 0, budget ≤ period, ...), through every policy the file switches to.
//! - `priority`: smaller is higher. Give it for every domain or for none: without it,
//!   priorities are rate-monotonic by period over every domain the file declares, ties by
//!   declaration order, numbered from 1. A `sched-set` that changes a period does not
//!   re-rank.
//! - `weight` (Credit): default `round(10000 · budget / period)` (at least 1) when the
//!   VCPU has a budget and period, so a file written for servers runs under Credit with
//!   the same shares; otherwise Xen's 256. `cap`: percent of a pcpu, default 0 (none).
//! - `extratime` (SEDF, RTDS): unsaid, the default of the policy the VCPU runs under —
//!   on under RTDS (as Xen creates every RTDS VCPU, and as `xl sched-rtds` without `-e`
//!   leaves it), off under SEDF (the papers' setting). Write it to fix it either way;
//!   `rtvmm check` writes it only where the file does.
//! - `offset`: first period boundary after the VCPU joins, default `"0ns"`.
//!   `max_replenishments` (Sporadic Server): default 8.
//!
//! ## Task keys (`[[domain.task]]`)
//! - `kind`: `"periodic"` (default), `"sporadic"` (inter-arrival `period` plus a seeded
//!   uniform extra gap in `[0, max_extra_gap]`, default `max_extra_gap = period`) or
//!   `"aperiodic"` (either `releases = ["1ms", "5ms"]` or a Poisson stream with
//!   `mean_gap`; `period` then only sets the `rm` priority and the default deadline) or
//!   `"triggered"` (`trigger`, `delay`: see above; `period` as for aperiodic).
//! - `deadline`: relative, default `period`. `offset`: first release, default `"0ns"`.
//! - `etf`: execution time factor, `0 < etf ≤ 1`; each job draws its execution time
//!   uniformly from `[⌈etf·wcet⌉, wcet]` (computed exactly from the decimal written).
//!   `min_exec` gives `⌈etf·wcet⌉` directly instead; the normalised form writes
//!   `min_exec`.
//! - `priority`: for the `fp` guest (default: declaration order, from 1).
//! - `wcet` may exceed `period` or `deadline`: an overrunning task is legitimate (soft
//!   real-time: its jobs queue up behind each other) and is what some tests want.
//!
//! ## External domains (`attach`, `pids`)
//! A `[[domain]]` may name a workload that already runs instead of tasks: `attach =
//! "/sys/fs/cgroup/unified/vm1"` (an existing cgroup v2 directory, absolute) or `pids =
//! [1234, 1240]` (existing processes, each with all its threads), for example a QEMU
//! virtual machine or a container. Such a domain has a `vcpu` like any other and no
//! `[[domain.task]]` and no `guest` (either is an error, as is giving both `attach` and
//! `pids`). Only `rtvmm host run` runs it ([`external`]): the simulator refuses the file
//! ([`Scenario::simulable`]), `rtvmm check` prints it, and the analysis counts its VCPU
//! at the root (as interference for the other domains) without claiming anything for
//! its unknown workload. An `add-domain` event may add one; a live `rtvmm ctl
//! add-domain` may not.
//!
//! ## Events (`[[event]]`, listed in time order; `at` may lie past `duration`)
//! - `action = "sched-set"`, `domain`, and any of `budget`, `period`, `priority`,
//!   `weight`, `cap`, `extratime`, `max_replenishments`; the rest keep their values (a
//!   derived weight follows a new budget/period).
//! - `action = "swap-policy"`, `policy`: the new policy uses the `[scheduler]` section's
//!   Credit and ARINC 653 settings.
//! - `action = "add-domain"`, `domain = { .. }`: a table of the same shape as
//!   `[[domain]]` (write it as `[event.domain]` and `[[event.domain.task]]`).
//! - `action = "remove-domain"`, `domain`: a name.
//!
//! ## Running under another policy
//! [`Scenario::with_policy`] keeps every VCPU parameter and re-checks them under the new
//! policy: servers and RTDS read budget/period, SEDF reads budget as its slice (extratime
//! as set, default off), Credit reads the weights (derived from the shares unless given)
//! with cap 0, ARINC 653 needs the table in `[scheduler]` and says so when it is missing.
//!
//! ## Limits
//! - **Every time is at most [`MAX_TIME`] = 10¹⁷ ns** (`"100000000s"`, about 3.2 years):
//!   durations, the run's length (also `--duration`), WCETs, `min_exec`, deadlines,
//!   periods, budgets, offsets, overheads, the quantum, Credit's time slice and accounting
//!   period, ARINC 653 frames, release times, gaps and event times. A larger value is
//!   refused as it is read, naming the field and the limit.
//!
//!   *Why this bound keeps the simulator's 64-bit nanosecond clock from overflowing.* Let
//!   M = `MAX_TIME`. The simulator never goes past the run's end, so every instant it has
//!   reached is at most M. Every instant it computes is such an instant plus at most two
//!   times from the scenario, or a multiple that lands within one period of one: a
//!   periodic task's next release (`offset + k·period`, computed after a release at or
//!   before the end: at most end + period, or join time + offset), a sporadic task's
//!   (release + period + extra gap ≤ 3M), a job's absolute deadline (release + deadline)
//!   and finish (now + what it still needs), the next tick (at most a quantum after now),
//!   the end of a slice (now + budget, time slice or minor frame) or of scheduler overhead
//!   (now + `do_schedule` + `context_switch`, less than a quantum), a server's next
//!   replenishment or deadline (now + period or offset, or its period boundary moved to
//!   the first one after now), Credit's next accounting (now + accounting period). The
//!   largest is a Poisson gap: the exponential draw is the mean times −ln(1 − U) with
//!   1 − U ≥ 2⁻⁵³, so at most 36.8 means, and the next release is at most 38M. A wake
//!   delivery ends at a release (at most M) plus at most 1 s + 36.8 s (its times are at
//!   most 1 s, `rtvmm_core::wake::MAX_WAKE_DELIVERY`), or at its task's previous one. So
//!   every instant is below 64·M = 6.4·10¹⁸ < 2⁶³ ≈ 9.2·10¹⁸: inside the `u64` clock with room
//!   to spare, and inside the `i64` in which lateness (finish − deadline) is computed.
//!   Accumulated times (busy, idle, overhead, budget counters, run times) add up to at
//!   most the run's length; sums over jobs are `u128`. The analysis converts times to
//!   units of the quantum and checks its own bound (2⁴⁰ units), under which its products
//!   of two times fit its 128-bit arithmetic.
//! - **`overhead.do_schedule + overhead.context_switch` must be smaller than the
//!   quantum**: otherwise a tick that switches VCPUs spends the whole quantum in
//!   scheduler overhead and no VCPU can make progress.
//! - Validation takes time linear in the size of the file (n log n where it sorts).

// Floors, bottom first; a blank line between them keeps `rustfmt` from sorting them.
pub mod error;

pub mod external;
pub mod wake;

mod raw;

mod build;

mod validate;

mod print;

pub mod live;

pub mod demo;

use std::collections::BTreeMap;
use std::path::Path;

use rtvmm_core::machine::MachineConfig;
use rtvmm_core::policy::{CreditConfig, PolicyConfig, PolicyKind, RtdsMode};
use rtvmm_core::Nanos;
use rtvmm_gen::ServerDomain;
use rtvmm_gen::ServerSystem;
use rtvmm_system::SystemSpec;

pub use build::weight_from_share;
pub use error::{ErrorKind, Location, ScenarioError};
pub use external::External;
pub use validate::{ARINC653_MAX_MINOR_FRAMES, MAX_TIME};
pub use wake::{parse_wake_delivery, wake_delivery_preset, WAKE_DELIVERY_PRESETS};

/// The seed of a scenario whose file names none.
pub const DEFAULT_SEED: u64 = 0;

/// The longest name (of a scenario, domain, task, CARTS component or task) accepted, in
/// characters: names go into tables, traces and `xl` commands, and a longer one is a
/// mistake, not a name.
pub const MAX_NAME_CHARS: usize = 255;

/// One minor frame of an ARINC 653 table, by domain name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamedMinorFrame {
    pub domain: String,
    pub runtime: Nanos,
}

/// An ARINC 653 table as written in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArincTableSpec {
    pub major_frame: Nanos,
    pub minor_frames: Vec<NamedMinorFrame>,
}

/// Policy-wide settings from `[scheduler]`, kept whatever the policy, so that a swap or
/// an override to Credit or ARINC 653 finds them. The default is a file's without the
/// settings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SchedulerSettings {
    pub credit: CreditConfig,
    pub rtds: RtdsMode,
    pub arinc653: Option<ArincTableSpec>,
}

impl SchedulerSettings {
    /// The settings a pool created at run time (`xl cpupool-create`) gets its policy's
    /// configuration from: Credit's and RTDS's (a table cannot be given to such a pool).
    pub fn for_new_pools(&self) -> rtvmm_core::policy::PolicySettings {
        rtvmm_core::policy::PolicySettings {
            credit: self.credit,
            rtds: self.rtds,
            arinc653: None,
        }
    }
}

/// A validated scenario.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// The file it came from, for messages.
    pub file: String,
    pub name: String,
    /// Simulated time to run.
    pub duration: Nanos,
    pub seed: u64,
    /// What to simulate: machine, policy, domains, timed changes.
    pub system: SystemSpec,
    pub scheduler: SchedulerSettings,
    /// The external domains (`attach`, `pids`; see [`external`]) by name: each is a
    /// domain of `system` (or one an event adds) with no tasks. Empty for most files.
    pub external: BTreeMap<String, External>,
}

/// An error about an event's `xl` command, with the line of that command in the text: the
/// line of `xl = ` after the event's `[[event]]` header (events written as an inline
/// array keep their event number only).
fn with_xl_line(mut error: ScenarioError, text: &str) -> ScenarioError {
    if !matches!(error.kind, ErrorKind::Xl(_) | ErrorKind::XlSyntax(_)) {
        return error;
    }
    let Some(event) = error.location.event else {
        return error;
    };
    let mut headers = 0;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim_start();
        if line.starts_with("[[event]]") {
            headers += 1;
        } else if line.starts_with('[') && headers == event {
            break;
        } else if headers == event && line.starts_with("xl") {
            let key = line["xl".len()..].trim_start();
            if key.starts_with('=') {
                error.location.line = Some(i + 1);
                break;
            }
        }
    }
    error
}

/// Where the keys of tasks and chains are in the text: the document again, with spans,
/// read only when an error needs a line ([`with_key_line`]). Keys it does not name are
/// ignored.
mod spans {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use toml::Spanned;

    pub(crate) type Keys = BTreeMap<String, Spanned<toml::Value>>;

    #[derive(Deserialize)]
    pub(crate) struct Document {
        #[serde(default)]
        pub domain: Vec<Domain>,
        #[serde(default)]
        pub chain: Vec<Keys>,
    }

    #[derive(Deserialize)]
    pub(crate) struct Domain {
        pub name: Option<toml::Value>,
        #[serde(default)]
        pub task: Vec<Keys>,
    }
}

/// An error at a task's `trigger`, `delay` or `vcpu` (in a `[[domain]]`, not an added
/// domain) or at a `[[chain]]`, with the line of its key in the text (of the task's `kind`,
/// or the chain's `name`, when the key is missing). Other errors are left as they are.
fn with_key_line(mut error: ScenarioError, text: &str) -> ScenarioError {
    let location = &error.location;
    let field = location.field.as_deref().unwrap_or("");
    let key = field.split(['[', '.']).next().unwrap_or("");
    let task_key = location.task.is_some()
        && location.event.is_none()
        && matches!(key, "trigger" | "delay" | "vcpu");
    if location.line.is_some() || !(task_key || location.chain.is_some()) {
        return error;
    }
    let Ok(document) = toml::from_str::<spans::Document>(text) else {
        return error;
    };
    let keys: Option<&spans::Keys> = match &location.chain {
        Some(chain) => {
            let numbered = chain
                .strip_prefix('#')
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| document.chain.get(n.wrapping_sub(1)));
            numbered.or_else(|| {
                document.chain.iter().find(|c| {
                    c.get("name").and_then(|n| n.get_ref().as_str()) == Some(chain.as_str())
                })
            })
        }
        None => document
            .domain
            .iter()
            .find(|d| d.name.as_ref().and_then(|n| n.as_str()) == location.domain.as_deref())
            .and_then(|d| {
                d.task.iter().find(|t| {
                    t.get("name").and_then(|n| n.get_ref().as_str()) == location.task.as_deref()
                })
            }),
    };
    let fallback = if location.chain.is_some() {
        "name"
    } else {
        "kind"
    };
    if let Some(span) = keys.and_then(|k| k.get(key).or_else(|| k.get(fallback))) {
        error.location.line = Some(error::line_and_column(text, span.span().start).0);
    }
    error
}

impl Scenario {
    /// Parses and validates scenario text; `file` names it in messages.
    pub fn from_toml(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        let lines = |e| with_key_line(with_xl_line(e, text), text);
        let scenario = build::build(text, file).map_err(lines)?;
        scenario.validate().map_err(lines)?;
        Ok(scenario)
    }

    /// Reads and parses a scenario file.
    pub fn load(path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let text = rtvmm_system::input::read_text(path)
            .map_err(|e| ScenarioError::new(&file, Location::default(), ErrorKind::Io(e)))?;
        Scenario::from_toml(&text, &file)
    }

    /// Parses scenario text for tools that read its domains and tasks without running it
    /// (`rtvmm analyze`): the same parsing and defaults as [`Scenario::from_toml`], but not
    /// the policies' checks ([`Scenario::validate`]), so VCPU budgets and periods may be
    /// left out under any policy. The result may not be runnable; validate it before
    /// simulating.
    pub fn from_toml_for_analysis(text: &str, file: &str) -> Result<Scenario, ScenarioError> {
        build::build(text, file).map_err(|e| with_key_line(with_xl_line(e, text), text))
    }

    /// Reads a scenario file as [`Scenario::from_toml_for_analysis`] does.
    pub fn load_for_analysis(path: impl AsRef<Path>) -> Result<Scenario, ScenarioError> {
        let path = path.as_ref();
        let file = path.display().to_string();
        let text = rtvmm_system::input::read_text(path)
            .map_err(|e| ScenarioError::new(&file, Location::default(), ErrorKind::Io(e)))?;
        Scenario::from_toml_for_analysis(&text, &file)
    }

    /// The policy the run starts with.
    pub fn policy(&self) -> PolicyKind {
        self.system.policy().kind()
    }

    /// The configuration of `kind` for this scenario (Credit's time slice, ARINC 653's
    /// table from `[scheduler]`).
    pub fn policy_config(&self, kind: PolicyKind) -> Result<PolicyConfig, ScenarioError> {
        self.policy_config_at(kind, Location::default())
    }

    /// A scenario of the generated server domains of `system` (`rtvmm gen`): one pcpu
    /// with `quantum`, exact replenishment, no overheads; each VCPU as
    /// [`ServerDomain::vcpu_params`](rtvmm_gen::ServerDomain::vcpu_params) gives it;
    /// `policy` with the default settings (Credit at Xen 4.0's defaults; no ARINC 653
    /// table). Validated; `file` names where it came from in messages.
    pub fn from_servers(
        file: &str,
        system: &ServerSystem,
        duration: Nanos,
        seed: u64,
        quantum: Nanos,
        policy: PolicyKind,
    ) -> Result<Scenario, ScenarioError> {
        let scheduler = SchedulerSettings {
            credit: CreditConfig::default(),
            rtds: RtdsMode::default(),
            arinc653: None,
        };
        let mut scenario = Scenario {
            file: file.to_string(),
            name: system.name.clone(),
            duration,
            seed,
            system: SystemSpec {
                domains: system
                    .domains
                    .iter()
                    .map(ServerDomain::domain_spec)
                    .collect(),
                ..SystemSpec::one_pool(
                    MachineConfig {
                        quantum,
                        ..MachineConfig::default()
                    },
                    PolicyConfig::Deferrable,
                )
            },
            scheduler,
            external: BTreeMap::new(),
        };
        scenario.system.pools[0].policy =
            scenario.policy_config_at(policy, Location::section("[scheduler]", "policy"))?;
        scenario.validate()?;
        Ok(scenario)
    }

    /// The same scenario starting under `kind`, re-validated (see the crate docs for what
    /// each policy reads). Scheduled policy swaps stay as written.
    /// With cpupools, the first pool's policy is replaced (the others keep theirs).
    pub fn with_policy(&self, kind: PolicyKind) -> Result<Scenario, ScenarioError> {
        let mut scenario = self.clone();
        scenario.system.pools[0].policy = self.policy_config(kind)?;
        scenario.validate()?;
        Ok(scenario)
    }

    /// The same scenario running for `duration`, re-validated (times must still fit).
    pub fn with_duration(&self, duration: Nanos) -> Result<Scenario, ScenarioError> {
        let mut scenario = self.clone();
        scenario.duration = duration;
        scenario.validate()?;
        Ok(scenario)
    }

    /// The same scenario with another seed.
    pub fn with_seed(&self, seed: u64) -> Scenario {
        Scenario {
            seed,
            ..self.clone()
        }
    }

    /// The same scenario with a run's overrides applied, each re-validated: the policy
    /// ([`Scenario::with_policy`]), the duration, the seed (`rtvmm sim --policy --duration
    /// --seed`, and the Python package's `simulate`).
    pub fn with_overrides(
        &self,
        policy: Option<PolicyKind>,
        duration: Option<Nanos>,
        seed: Option<u64>,
    ) -> Result<Scenario, ScenarioError> {
        let mut scenario = match policy {
            Some(kind) => self.with_policy(kind)?,
            None => self.clone(),
        };
        if let Some(duration) = duration {
            scenario = scenario.with_duration(duration)?;
        }
        if let Some(seed) = seed {
            scenario.seed = seed;
        }
        Ok(scenario)
    }
}
