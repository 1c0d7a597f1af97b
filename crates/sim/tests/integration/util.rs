//! Test harness: build tiny systems in code, run them, and compare the pcpu's schedule with
//! a hand-derived one.
#![allow(dead_code)]

use rtvmm_core::guest::{Arrival, GuestScheduler, TaskSpec};
use rtvmm_core::machine::{MachineConfig, OverheadCharge, Overheads, ReplenishMode};
use rtvmm_core::model::VcpuParams;
use rtvmm_core::policy::PolicyConfig;
use rtvmm_core::Nanos;
use rtvmm_sim::Simulation;
use rtvmm_system::timeline::{timeline, Interval, Slot};
use rtvmm_system::{DomainSpec, SystemSpec};

pub fn ms(x: u64) -> Nanos {
    Nanos::from_ms(x)
}

pub fn us(x: u64) -> Nanos {
    Nanos::from_us(x)
}

/// A domain with one server VCPU (budget, period in ms; priority) running `tasks` under rm.
pub fn domain(
    name: &str,
    budget_ms: u64,
    period_ms: u64,
    priority: u32,
    tasks: Vec<TaskSpec>,
) -> DomainSpec {
    DomainSpec {
        name: name.to_string(),
        vcpu: VcpuParams::server(ms(budget_ms), ms(period_ms), priority),
        guest: GuestScheduler::Rm,
        tasks,
        placement: Default::default(),
    }
}

/// Jobs released at the given instants (ms), each needing `wcet_ms`.
pub fn jobs_at(name: &str, at_ms: &[u64], wcet_ms: u64) -> TaskSpec {
    let mut t = TaskSpec::periodic(name, ms(1000), ms(wcet_ms));
    t.arrival = Arrival::AperiodicTimes(at_ms.iter().map(|&x| ms(x)).collect());
    t
}

/// Jobs released at the given instants (µs), each needing `wcet_us`.
pub fn jobs_at_us(name: &str, at_us: &[u64], wcet_us: u64) -> TaskSpec {
    let mut t = TaskSpec::periodic(name, ms(1000), us(wcet_us));
    t.arrival = Arrival::AperiodicTimes(at_us.iter().map(|&x| us(x)).collect());
    t
}

/// A task that always has work: one job released at 0 that needs a full hour.
pub fn busy(name: &str) -> TaskSpec {
    jobs_at(name, &[0], 3_600_000)
}

/// A periodic task (ms).
pub fn periodic(name: &str, period_ms: u64, wcet_ms: u64) -> TaskSpec {
    TaskSpec::periodic(name, ms(period_ms), ms(wcet_ms))
}

pub fn machine() -> MachineConfig {
    MachineConfig {
        pcpus: 1,
        quantum: ms(1),
        replenishment: ReplenishMode::Exact,
        overheads: Overheads::default(),
        overhead_charge: OverheadCharge::Incoming,
        wake_delivery: rtvmm_core::wake::WakeDelivery::OFF,
    }
}

pub fn system(policy: PolicyConfig, domains: Vec<DomainSpec>) -> SystemSpec {
    SystemSpec {
        domains,
        ..SystemSpec::one_pool(machine(), policy)
    }
}

/// Runs `spec` for `end` with tracing; returns the schedule and the finished simulation.
pub fn run(spec: &SystemSpec, end: Nanos) -> (Vec<Interval>, Simulation) {
    let mut sim = Simulation::new(spec, 1, true).expect("valid system");
    sim.set_check_invariants(true);
    sim.run_until(end).expect("run");
    let mut names: Vec<String> = spec.domains.iter().map(|d| d.name.clone()).collect();
    for c in &spec.changes {
        if let rtvmm_system::Change::AddDomain(d) = &c.change {
            names.push(d.name.clone());
        }
    }
    let trace = sim.take_trace();
    (timeline(&trace, &names, end), sim)
}

/// Parses `"0-1 d1, 1-3 d2, 8-10 idle"` (ms; `ovh` for overhead) into intervals.
pub fn expect(text: &str) -> Vec<Interval> {
    text.split(',')
        .map(|part| {
            let mut it = part.split_whitespace();
            let range = it.next().expect("range");
            let who = it.next().expect("slot");
            let (a, b) = range.split_once('-').expect("a-b");
            let parse = |s: &str| -> Nanos {
                if let Some(u) = s.strip_suffix("us") {
                    us(u.parse().unwrap())
                } else {
                    ms(s.parse().unwrap())
                }
            };
            let slot = match who {
                "idle" => Slot::Idle,
                "ovh" => Slot::Overhead,
                d => Slot::Domain(d.to_string()),
            };
            Interval {
                start: parse(a),
                end: parse(b),
                slot,
            }
        })
        .collect()
}

/// Asserts the schedule equals the expected one, with a readable diff on failure.
pub fn assert_schedule(actual: &[Interval], expected: &str) {
    let want = expect(expected);
    let show = |v: &[Interval]| {
        v.iter()
            .map(|i| format!("{}-{} {:?}", i.start, i.end, i.slot))
            .collect::<Vec<_>>()
            .join("\n  ")
    };
    assert_eq!(
        actual,
        want.as_slice(),
        "\nactual:\n  {}\nexpected:\n  {}",
        show(actual),
        show(&want)
    );
}

/// The remaining budget of domain `index`'s VCPU.
pub fn budget(sim: &Simulation, index: usize) -> Option<Nanos> {
    let v = sim.domains()[index].vcpu;
    sim.machine().policy().view(v).remaining_budget
}
