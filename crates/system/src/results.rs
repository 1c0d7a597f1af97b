//! What a run measured, per job, task, domain, VCPU and pcpu — and its JSON form.
//!
//! # Counting rule
//! A job that finished counts, and is missed iff it finished after its deadline. A job that
//! has not finished by the end counts as missed if its deadline is at or before the end;
//! otherwise it is **in flight** and left out of every ratio. Jobs of a removed domain that
//! were pending at its removal are left out too. Response-time, responsiveness and latency
//! distributions are over finished jobs; release-to-start latency also includes unfinished
//! jobs that started.
//!
//! # Exactness
//! Counts, minima, maxima and means are exact. Percentiles are exact (nearest rank) while
//! every task of a distribution has at most [`crate::stats::EXACT_SAMPLES`] values;
//! beyond that they come from a histogram and are at most 1/1024 above the exact value
//! (see [`crate::stats`]). The results never depend on whether the simulation kept every
//! job.
//!
//! The JSON field names are a stable interface (`policy`, `seed`, `duration_ns`, `pcpus[]`,
//! `domains[]`, `domains[].tasks[]`, `domains[].vcpus[]`, ...): scripts rely on them.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use rtvmm_core::machine::{Machine, Overheads};
use rtvmm_core::model::{DomainSpec, PcpuId, VcpuId};
use rtvmm_core::Nanos;

use crate::records::JobRecord;
use crate::stats::{percentiles, percentiles_of_sorted, ChainStats, Samples, TaskStats};
use crate::trace::csv_field;

/// A distribution of nanosecond values (nearest-rank percentiles).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Dist {
    pub count: u64,
    pub min: u64,
    pub mean: f64,
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub max: u64,
}

impl Dist {
    /// Summarises `values` (sorted in place).
    pub fn of(values: &mut [u64]) -> Dist {
        if values.is_empty() {
            return Dist::default();
        }
        values.sort_unstable();
        let sum: u128 = values.iter().map(|&v| v as u128).sum();
        Dist {
            count: values.len() as u64,
            min: values[0],
            mean: sum as f64 / values.len() as f64,
            p50: nearest_rank(values, 50),
            p90: nearest_rank(values, 90),
            p99: nearest_rank(values, 99),
            max: values[values.len() - 1],
        }
    }
}

/// A distribution of ratios (responsiveness = response time ÷ relative deadline).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RatioDist {
    pub count: u64,
    pub min: f64,
    pub mean: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub max: f64,
}

impl RatioDist {
    /// Summarises `values` (sorted in place; no NaN).
    pub fn of(values: &mut [f64]) -> RatioDist {
        if values.is_empty() {
            return RatioDist::default();
        }
        values.sort_by(|a, b| a.total_cmp(b));
        let n = values.len();
        let rank = |p: usize| values[(p * n).div_ceil(100).clamp(1, n) - 1];
        RatioDist {
            count: n as u64,
            min: values[0],
            mean: values.iter().sum::<f64>() / n as f64,
            p50: rank(50),
            p90: rank(90),
            p99: rank(99),
            max: values[n - 1],
        }
    }
}

/// A distribution of signed nanosecond values (lateness = finish − deadline).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SignedDist {
    pub count: u64,
    pub min: i64,
    pub mean: f64,
    pub max: i64,
}

impl SignedDist {
    pub fn of(values: &[i64]) -> SignedDist {
        match (values.iter().min(), values.iter().max()) {
            (Some(&min), Some(&max)) => SignedDist {
                count: values.len() as u64,
                min,
                mean: values.iter().map(|&v| v as i128).sum::<i128>() as f64 / values.len() as f64,
                max,
            },
            _ => SignedDist::default(),
        }
    }
}

fn nearest_rank(sorted: &[u64], p: usize) -> u64 {
    let n = sorted.len();
    sorted[(p * n).div_ceil(100).clamp(1, n) - 1]
}

/// Per-task results.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    pub name: String,
    /// Jobs counted (finished + missed unfinished); in-flight jobs excluded.
    pub jobs: u64,
    pub released: u64,
    pub finished: u64,
    pub missed: u64,
    pub in_flight: u64,
    pub deadline_miss_ratio: f64,
    pub max_response_ns: u64,
    pub response_ns: Dist,
    pub responsiveness: RatioDist,
    /// Finish − deadline of finished jobs (negative: early).
    pub lateness_ns: SignedDist,
    /// Release-to-start latency (the cyclictest figure).
    pub latency_ns: Dist,
}

/// Per-VCPU results.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct VcpuResult {
    pub run_ns: u64,
    pub budget_consumed_ns: u64,
    pub budget_idled_ns: u64,
    pub budget_discarded_ns: u64,
    pub budget_lent_ns: u64,
    pub budget_borrowed_ns: u64,
    pub scheduled: u64,
    pub preemptions: u64,
    /// Times switched in on another pcpu than the one it last ran on (machines of several
    /// pcpus only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub migrations: Option<u64>,
}

/// Per-chain results: the end-to-end latency of its finished instances.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChainResult {
    pub name: String,
    /// Instances finished (the last task's job finished).
    pub instances: u64,
    pub latency_ns: Dist,
    /// Population standard deviation of the latencies.
    pub latency_std_dev_ns: f64,
    /// For each bound: the instances with a latency at or below it, and their share.
    pub within: Vec<ChainBound>,
}

/// The instances of a chain within a latency bound.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ChainBound {
    pub bound_ns: u64,
    pub instances: u64,
    pub share: f64,
}

/// Per-domain results.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DomainResult {
    pub name: String,
    pub jobs: u64,
    pub released: u64,
    pub finished: u64,
    pub missed: u64,
    pub in_flight: u64,
    pub deadline_miss_ratio: f64,
    pub response_ns: Dist,
    pub responsiveness: RatioDist,
    pub lateness_ns: SignedDist,
    pub latency_ns: Dist,
    pub tasks: Vec<TaskResult>,
    pub vcpus: Vec<VcpuResult>,
}

/// Per-pcpu results.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PcpuResult {
    pub busy_ns: u64,
    pub idle_ns: u64,
    pub overhead_ns: u64,
    pub do_schedule_calls: u64,
    pub context_switches: u64,
}

/// Everything a run measured.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunResults {
    pub scenario: String,
    pub policy: String,
    pub seed: u64,
    pub duration_ns: u64,
    /// True when the run was stopped before its end (SIGINT, SIGTERM): the figures cover
    /// its first `duration_ns`, of `planned_duration_ns`. Absent (false) from a complete
    /// run's JSON, so that its bytes are those of before the field existed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub partial: bool,
    /// The run's planned length, when it is `partial`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planned_duration_ns: Option<u64>,
    /// Whether the numbers come from simulation or from a real-time run.
    pub source: String,
    pub jobs: u64,
    pub missed: u64,
    pub in_flight: u64,
    pub deadline_miss_ratio: f64,
    pub pcpus: Vec<PcpuResult>,
    pub domains: Vec<DomainResult>,
    /// Chains of triggered tasks (absent when the system has none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chains: Vec<ChainResult>,
    /// The host executor's own measurements (`source = "host"` only; absent from a
    /// simulation's JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostResults>,
}

/// What the host executor measured about itself (`rtvmm host run`), beside the figures
/// every driver gives. Times in nanoseconds of the monotonic clock.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostResults {
    /// False when the run lacked a real-time privilege (`--best-effort`): its figures are
    /// not those of a real-time run.
    pub real_time: bool,
    /// Why the run is not real-time, one line per missing privilege (empty otherwise).
    pub not_real_time_because: Vec<String>,
    /// The managed cpu.
    pub cpu: u32,
    /// The enforcement backend: `freeze`, `band` or `signal`.
    pub enforce: String,
    /// Time in `handle_timeout` calls that ran `do_schedule`.
    pub do_schedule_ns: Dist,
    pub do_schedule_total_ns: u64,
    /// From the decision instant to the next domain's (or the IDLE VCPU's) own timestamp
    /// of really running, per context switch.
    pub switch_ns: Dist,
    pub switch_total_ns: u64,
    /// Timer wake-ups of the scheduler thread: actual wake-up − intended instant.
    pub tick_lateness_ns: Dist,
    /// What one clock read costs on the scheduler thread (the median gap between two
    /// back-to-back `CLOCK_MONOTONIC` reads, measured before the run): every
    /// `do_schedule_ns` figure includes about one.
    #[serde(default)]
    pub clock_read_ns: u64,
    /// Times the scheduler thread woke (timer or guest notification): its CPU time per
    /// wake-up is `scheduler_cpu_ns / wakeups`.
    #[serde(default)]
    pub wakeups: u64,
    /// CPU time of the scheduler thread over the run.
    pub scheduler_cpu_ns: u64,
    /// `scheduler_cpu_ns` ÷ the run's length: the share of the managed cpu lost to
    /// scheduling.
    pub cpu_lost_share: f64,
    /// The host's steal time on the managed cpu during the run (`/proc/stat`).
    pub steal_ns: u64,
    /// Job records a guest could not hand over (its ring was full): 0 in a sound run.
    pub jobs_lost: u64,
    /// CPU time each domain's guest threads really had (their own thread CPU clocks), by
    /// domain in the order of `domains`: what enforcement gave, beside the VCPU's
    /// `run_ns` (what the scheduler accounted).
    pub domain_cpu_ns: Vec<u64>,
    /// The external domains (an attached cgroup or processes), in the order of `domains`
    /// among them; absent when the run had none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub external: Vec<HostExternal>,
}

/// One external domain of a host run: what it was attached to and what became of it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostExternal {
    pub domain: String,
    /// `cgroup PATH` or `pids 1, 2`.
    pub source: String,
    /// The CPU time its threads had during the run (`schedstat`).
    pub cpu_ns: u64,
    /// When every one of its processes was found gone (relative), if that happened.
    pub gone_at_ns: Option<u64>,
}

impl HostResults {
    /// The simulator's overhead model for this run (`[machine] overhead`): each
    /// `do_schedule` costs the scheduler thread's CPU time per `do_schedule` call (so the
    /// simulated scheduler takes the share of the cpu this one took), each context switch
    /// the median measured switch latency; both rounded to 100 ns. `rtvmm sim` with these
    /// costs (charged to the incoming VCPU, the default) predicts the host run's per-job
    /// figures closely (README, "Real time on Linux").
    pub fn simulator_overheads(&self) -> Overheads {
        let round = |ns: u64| Nanos::from_ns((ns + 50) / 100 * 100);
        Overheads {
            do_schedule: round(self.scheduler_cpu_ns / self.do_schedule_ns.count.max(1)),
            context_switch: round(self.switch_ns.p50),
            ..Default::default()
        }
    }
}

fn ratio(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    }
}

/// The percentiles every distribution reports.
const PERCENTILES: [u64; 3] = [50, 90, 99];

impl Dist {
    /// The distribution of the union of `parts` (see [`crate::stats`] for when the
    /// percentiles are exact and how close they are otherwise; count, min, mean and max
    /// are always exact).
    pub fn of_samples(parts: &[&Samples]) -> Dist {
        let count: u64 = parts.iter().map(|s| s.count()).sum();
        if count == 0 {
            return Dist::default();
        }
        let mut values = Vec::new();
        for part in parts {
            part.for_each(|v, c| values.push((v, c)));
        }
        let max = parts
            .iter()
            .filter_map(|s| s.max())
            .max()
            .expect("not empty");
        let [p50, p90, p99] =
            percentiles(&mut values, PERCENTILES, |a, b| a.cmp(b)).map(|v| v.min(max));
        let sum: u128 = parts.iter().map(|s| s.sum()).sum();
        Dist {
            count,
            min: parts
                .iter()
                .filter_map(|s| s.min())
                .min()
                .expect("not empty"),
            mean: sum as f64 / count as f64,
            p50,
            p90,
            p99,
            max,
        }
    }
}

impl RatioDist {
    /// The distribution of `value ÷ divisor` over the union of `parts`, each part with its
    /// divisor (responsiveness: response times ÷ the task's relative deadline). Exact
    /// parts give exactly what [`RatioDist::of`] gives on the quotients; otherwise the
    /// percentiles are within the bound of [`crate::stats`] and the mean is the sum over
    /// parts of `sum ÷ divisor`, over the count.
    pub fn of_samples(parts: &[(&Samples, Nanos)]) -> RatioDist {
        let count: u64 = parts.iter().map(|(s, _)| s.count()).sum();
        if count == 0 {
            return RatioDist::default();
        }
        let quotient = |v: u64, d: Nanos| v as f64 / d.as_ns() as f64;
        let mut values = Vec::new();
        for &(part, divisor) in parts {
            part.for_each(|v, c| values.push((quotient(v, divisor), c)));
        }
        let extreme = |pick: fn(&Samples) -> Option<u64>, better: fn(f64, f64) -> f64| {
            parts
                .iter()
                .filter_map(|&(s, d)| pick(s).map(|v| quotient(v, d)))
                .reduce(better)
                .expect("not empty")
        };
        let (min, max) = (
            extreme(Samples::min, f64::min),
            extreme(Samples::max, f64::max),
        );
        // Sorted: the mean of exact parts adds the quotients in this order.
        values.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
        let [p50, p90, p99] = percentiles_of_sorted(&values, PERCENTILES).map(|v| v.min(max));
        let mean = if parts.iter().all(|(s, _)| s.is_exact()) {
            // As `RatioDist::of`: the sorted quotients, added in order.
            values.iter().map(|&(v, _)| v).sum::<f64>() / count as f64
        } else {
            parts
                .iter()
                .map(|&(s, d)| s.sum() as f64 / d.as_ns() as f64)
                .sum::<f64>()
                / count as f64
        };
        RatioDist {
            count,
            min,
            mean,
            p50,
            p90,
            p99,
            max,
        }
    }
}

impl SignedDist {
    /// The distribution of `value − offset` over the union of `parts` (lateness: response
    /// time − relative deadline = finish − absolute deadline), exactly.
    pub fn of_samples(parts: &[(&Samples, Nanos)]) -> SignedDist {
        let count: u64 = parts.iter().map(|(s, _)| s.count()).sum();
        if count == 0 {
            return SignedDist::default();
        }
        let shifted = |v: u64, offset: Nanos| v as i64 - offset.as_ns() as i64;
        let sum: i128 = parts
            .iter()
            .map(|&(s, d)| s.sum() as i128 - s.count() as i128 * d.as_ns() as i128)
            .sum();
        SignedDist {
            count,
            min: parts
                .iter()
                .filter_map(|&(s, d)| s.min().map(|v| shifted(v, d)))
                .min()
                .expect("not empty"),
            mean: sum as f64 / count as f64,
            max: parts
                .iter()
                .filter_map(|&(s, d)| s.max().map(|v| shifted(v, d)))
                .max()
                .expect("not empty"),
        }
    }
}

/// One task's jobs at the end of a run: its statistics of finished jobs and the counts of
/// the pending ones.
struct TaskTally<'a> {
    stats: &'a TaskStats,
    relative_deadline: Nanos,
    pending: u64,
    pending_missed: u64,
    in_flight: u64,
    /// Latency of finished jobs and of pending jobs that started.
    latency: Samples,
}

impl TaskTally<'_> {
    fn released(&self) -> u64 {
        self.stats.finished + self.pending
    }
    fn missed(&self) -> u64 {
        self.stats.finished_late + self.pending_missed
    }
    fn response(&self) -> (&Samples, Nanos) {
        (&self.stats.response, self.relative_deadline)
    }
}

/// Counts over a set of tasks (a domain, or the whole run).
#[derive(Default)]
struct Counts {
    released: u64,
    finished: u64,
    missed: u64,
    in_flight: u64,
}

impl Counts {
    fn add(&mut self, t: &TaskTally) {
        self.released += t.released();
        self.finished += t.stats.finished;
        self.missed += t.missed();
        self.in_flight += t.in_flight;
    }
    fn absorb(&mut self, o: &Counts) {
        self.released += o.released;
        self.finished += o.finished;
        self.missed += o.missed;
        self.in_flight += o.in_flight;
    }
    fn jobs(&self) -> u64 {
        self.released - self.in_flight
    }
}

/// One task's jobs at the end of a run, as a driver hands them over: the statistics of
/// its finished jobs and every job released but not finished by the end.
pub struct TaskJobs<'a> {
    pub name: &'a str,
    pub relative_deadline: Nanos,
    pub stats: &'a TaskStats,
    /// Released and unfinished at the end (empty for a removed domain: its pending jobs
    /// are left out of every count).
    pub pending: Vec<JobRecord>,
}

/// One domain's jobs and VCPUs at the end of a run (see [`TaskJobs`]).
pub struct DomainJobs<'a> {
    pub name: &'a str,
    /// Its VCPUs, by index in the domain.
    pub vcpus: &'a [VcpuId],
    pub tasks: Vec<TaskJobs<'a>>,
}

/// `source` of a simulated run.
pub const SOURCE_SIMULATION: &str = "simulation";
/// `source` of a real-time run on the host (`rtvmm host run`).
pub const SOURCE_HOST: &str = "host";

impl ChainResult {
    /// What chain `name` measured.
    pub fn of(name: &str, stats: &ChainStats) -> ChainResult {
        let instances = stats.latency.count();
        ChainResult {
            name: name.to_string(),
            instances,
            latency_ns: Dist::of_samples(&[&stats.latency]),
            latency_std_dev_ns: stats.std_dev(),
            within: stats
                .within()
                .iter()
                .map(|&(bound, within)| ChainBound {
                    bound_ns: bound.as_ns(),
                    instances: within,
                    share: ratio(within, instances),
                })
                .collect(),
        }
    }
}

impl RunResults {
    /// The results of a run of any driver that ended at `end`: the jobs of every domain
    /// as the driver kept them, the VCPU and pcpu figures from the machine it drove. The
    /// simulator and the host executor both build their results here.
    pub fn from_domains(
        machine: &Machine,
        domains: &[DomainJobs],
        scenario: &str,
        seed: u64,
        end: Nanos,
        source: &str,
    ) -> RunResults {
        let mut total = Counts::default();
        let mut results = Vec::new();
        for run in domains {
            let mut tallies: Vec<TaskTally> = run
                .tasks
                .iter()
                .map(|task| TaskTally {
                    stats: task.stats,
                    relative_deadline: task.relative_deadline,
                    pending: 0,
                    pending_missed: 0,
                    in_flight: 0,
                    latency: task.stats.latency.clone(),
                })
                .collect();
            for (tally, task) in tallies.iter_mut().zip(&run.tasks) {
                for job in &task.pending {
                    tally.pending += 1;
                    if job.deadline <= end {
                        tally.pending_missed += 1;
                    } else {
                        tally.in_flight += 1;
                    }
                    if let Some(start) = job.first_start {
                        tally.latency.record((start - job.release).as_ns());
                    }
                }
            }
            let mut counts = Counts::default();
            let mut tasks = Vec::new();
            for (t, tally) in tallies.iter().enumerate() {
                counts.add(tally);
                let response = tally.response();
                tasks.push(TaskResult {
                    name: run.tasks[t].name.to_string(),
                    jobs: tally.released() - tally.in_flight,
                    released: tally.released(),
                    finished: tally.stats.finished,
                    missed: tally.missed(),
                    in_flight: tally.in_flight,
                    deadline_miss_ratio: ratio(tally.missed(), tally.released() - tally.in_flight),
                    max_response_ns: tally.stats.response.max().unwrap_or(0),
                    response_ns: Dist::of_samples(&[response.0]),
                    responsiveness: RatioDist::of_samples(&[response]),
                    lateness_ns: SignedDist::of_samples(&[response]),
                    latency_ns: Dist::of_samples(&[&tally.latency]),
                });
            }
            total.absorb(&counts);
            let responses: Vec<(&Samples, Nanos)> = tallies.iter().map(|t| t.response()).collect();
            let response_samples: Vec<&Samples> = responses.iter().map(|&(s, _)| s).collect();
            let latencies: Vec<&Samples> = tallies.iter().map(|t| &t.latency).collect();
            let several_pcpus = machine.config().pcpus > 1;
            let vcpus = run
                .vcpus
                .iter()
                .map(|&v| {
                    let stats = machine.vcpu_stats(v);
                    let counters = machine.budget_counters(v);
                    VcpuResult {
                        run_ns: stats.run.as_ns(),
                        budget_consumed_ns: counters.consumed.as_ns(),
                        budget_idled_ns: counters.idled.as_ns(),
                        budget_discarded_ns: counters.discarded.as_ns(),
                        budget_lent_ns: counters.lent.as_ns(),
                        budget_borrowed_ns: counters.borrowed.as_ns(),
                        scheduled: stats.scheduled,
                        preemptions: stats.preemptions,
                        migrations: several_pcpus.then_some(stats.migrations),
                    }
                })
                .collect();
            results.push(DomainResult {
                name: run.name.to_string(),
                jobs: counts.jobs(),
                released: counts.released,
                finished: counts.finished,
                missed: counts.missed,
                in_flight: counts.in_flight,
                deadline_miss_ratio: ratio(counts.missed, counts.jobs()),
                response_ns: Dist::of_samples(&response_samples),
                responsiveness: RatioDist::of_samples(&responses),
                lateness_ns: SignedDist::of_samples(&responses),
                latency_ns: Dist::of_samples(&latencies),
                tasks,
                vcpus,
            });
        }
        let pcpus = (0..machine.config().pcpus)
            .map(|p| {
                let s = machine.pcpu_stats(PcpuId(p));
                PcpuResult {
                    busy_ns: s.busy.as_ns(),
                    idle_ns: s.idle.as_ns(),
                    overhead_ns: s.overhead.as_ns(),
                    do_schedule_calls: s.do_schedule_calls,
                    context_switches: s.context_switches,
                }
            })
            .collect();
        RunResults {
            scenario: scenario.to_string(),
            policy: machine.policy_kind().name().to_string(),
            seed,
            duration_ns: end.as_ns(),
            partial: false,
            planned_duration_ns: None,
            source: source.to_string(),
            jobs: total.jobs(),
            missed: total.missed,
            in_flight: total.in_flight,
            deadline_miss_ratio: ratio(total.missed, total.jobs()),
            pcpus,
            domains: results,
            chains: Vec::new(),
            host: None,
        }
    }

    /// Marks the results as those of a run stopped at `duration_ns`, before its planned
    /// end `planned` (see [`RunResults::partial`]).
    pub fn mark_partial(&mut self, planned: Nanos) {
        self.partial = true;
        self.planned_duration_ns = Some(planned.as_ns());
    }

    /// Pretty JSON; byte-identical for identical results.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("results serialise")
    }

    /// A readable summary: one row per domain, then one per pcpu.
    pub fn summary(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "{} · policy {} · seed {} · {} {}",
            self.scenario,
            self.policy,
            self.seed,
            Nanos(self.duration_ns),
            if self.source == SOURCE_SIMULATION {
                "simulated".to_string()
            } else {
                format!("run on the {}", self.source)
            }
        );
        if let Some(host) = self.host.as_ref().filter(|h| !h.real_time) {
            let _ = writeln!(
                out,
                "NOT REAL-TIME (--best-effort): {}",
                host.not_real_time_because.join("; ")
            );
        }
        let _ = writeln!(
            out,
            "{:<12} {:>7} {:>7} {:>9} {:>8} {:>10} {:>10} {:>10}",
            "domain", "jobs", "missed", "in-flight", "DMR", "resp mean", "resp p99", "resp max"
        );
        let row =
            |out: &mut String, name: &str, jobs, missed, in_flight, dmr: f64, r: &RatioDist| {
                let _ = writeln!(
                    out,
                    "{:<12} {:>7} {:>7} {:>9} {:>7.2}% {:>10.3} {:>10.3} {:>10.3}",
                    name,
                    jobs,
                    missed,
                    in_flight,
                    dmr * 100.0,
                    r.mean,
                    r.p99,
                    r.max
                );
            };
        let mut all = Vec::new();
        for d in &self.domains {
            row(
                &mut out,
                &d.name,
                d.jobs,
                d.missed,
                d.in_flight,
                d.deadline_miss_ratio,
                &d.responsiveness,
            );
            all.push(d.responsiveness.clone());
        }
        let _ = writeln!(
            out,
            "{:<12} {:>7} {:>7} {:>9} {:>7.2}%",
            "total",
            self.jobs,
            self.missed,
            self.in_flight,
            self.deadline_miss_ratio * 100.0
        );
        let _ = writeln!(
            out,
            "(responsiveness = response time ÷ relative deadline, finished jobs)"
        );
        let _ = writeln!(
            out,
            "{:<12} {:>8} {:>8} {:>9} {:>12} {:>10}",
            "pcpu", "busy", "idle", "overhead", "do_schedule", "switches"
        );
        for (i, p) in self.pcpus.iter().enumerate() {
            let share = |x: u64| 100.0 * ratio(x, self.duration_ns);
            let _ = writeln!(
                out,
                "{:<12} {:>7.2}% {:>7.2}% {:>8.3}% {:>12} {:>10}",
                i,
                share(p.busy_ns),
                share(p.idle_ns),
                share(p.overhead_ns),
                p.do_schedule_calls,
                p.context_switches
            );
        }
        if !self.chains.is_empty() {
            let _ = writeln!(
                out,
                "{:<12} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  within",
                "chain",
                "instances",
                "min ms",
                "mean ms",
                "std-dev ms",
                "p50 ms",
                "p99 ms",
                "max ms"
            );
            // Milliseconds with three decimals, as the per-job columns above.
            let ms = |ns: f64| format!("{:.3}", ns / 1e6);
            for c in &self.chains {
                let l = &c.latency_ns;
                let within: Vec<String> = c
                    .within
                    .iter()
                    .map(|w| format!("{:.2}% ≤ {}", w.share * 100.0, Nanos(w.bound_ns)))
                    .collect();
                let _ = writeln!(
                    out,
                    "{:<12} {:>9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  {}",
                    c.name,
                    c.instances,
                    ms(l.min as f64),
                    ms(l.mean),
                    ms(c.latency_std_dev_ns),
                    ms(l.p50 as f64),
                    ms(l.p99 as f64),
                    ms(l.max as f64),
                    within.join(", ")
                );
            }
            let _ = writeln!(
                out,
                "(chain latency = last task's finish − first task's release, finished instances)"
            );
        }
        out
    }
}

/// One job of a run, for per-job output (`rtvmm sim --jobs OUT.csv`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobRow {
    pub domain: String,
    pub task: String,
    pub seq: u64,
    pub release: Nanos,
    pub deadline: Nanos,
    pub relative_deadline: Nanos,
    pub first_start: Option<Nanos>,
    pub finish: Option<Nanos>,
    /// `on_time`, `missed` or `in_flight` (the counting rule above).
    pub outcome: &'static str,
}

/// One domain's jobs (`(task index, record)`, finished and pending alike) as rows, by task
/// and job number, each with its outcome under the counting rule for a run that ended at
/// `end`: the one rule of `--jobs` for every driver.
pub fn domain_job_rows(
    spec: &DomainSpec,
    mut jobs: Vec<(usize, JobRecord)>,
    end: Nanos,
) -> Vec<JobRow> {
    jobs.sort_by_key(|(t, j)| (*t, j.seq));
    jobs.into_iter()
        .map(|(t, job)| {
            let outcome = match job.finish {
                Some(f) if f <= job.deadline => "on_time",
                Some(_) => "missed",
                None if job.deadline <= end => "missed",
                None => "in_flight",
            };
            let task = &spec.tasks[t];
            JobRow {
                domain: spec.name.clone(),
                task: task.name.clone(),
                seq: job.seq,
                release: job.release,
                deadline: job.deadline,
                relative_deadline: task.deadline,
                first_start: job.first_start,
                finish: job.finish,
                outcome,
            }
        })
        .collect()
}

/// Writes job rows as CSV: `domain,task,job,release_ns,first_start_ns,finish_ns,
/// deadline_ns,response_ns,responsiveness,lateness_ns,latency_ns,outcome` (empty cells
/// where a job has not started or finished). Names are quoted when they need it.
pub fn write_jobs_csv(w: &mut impl std::io::Write, rows: &[JobRow]) -> std::io::Result<()> {
    write_jobs_csv_marked(w, rows, None)
}

/// [`write_jobs_csv`], after a first line `# partial: <why>` when `partial` is given (a
/// run stopped before its end; the same mark as an experiment's CSVs).
pub fn write_jobs_csv_marked(
    w: &mut impl std::io::Write,
    rows: &[JobRow],
    partial: Option<&str>,
) -> std::io::Result<()> {
    if let Some(why) = partial {
        writeln!(w, "# partial: {}", why.replace(['\n', '\r'], " "))?;
    }
    let opt = |t: Option<u64>| t.map(|v| v.to_string()).unwrap_or_default();
    writeln!(
        w,
        "domain,task,job,release_ns,first_start_ns,finish_ns,deadline_ns,response_ns,\
         responsiveness,lateness_ns,latency_ns,outcome"
    )?;
    for r in rows {
        let response = r.finish.map(|f| (f - r.release).as_ns());
        let responsiveness = response
            .map(|x| format!("{:.6}", x as f64 / r.relative_deadline.as_ns() as f64))
            .unwrap_or_default();
        let lateness = r
            .finish
            .map(|f| (f.as_ns() as i64 - r.deadline.as_ns() as i64).to_string())
            .unwrap_or_default();
        writeln!(
            w,
            "{},{},{},{},{},{},{},{},{},{},{},{}",
            csv_field(&r.domain),
            csv_field(&r.task),
            r.seq,
            r.release.as_ns(),
            opt(r.first_start.map(Nanos::as_ns)),
            opt(r.finish.map(Nanos::as_ns)),
            r.deadline.as_ns(),
            opt(response),
            responsiveness,
            lateness,
            opt(r.first_start.map(|s| (s - r.release).as_ns())),
            r.outcome
        )?;
    }
    Ok(())
}
