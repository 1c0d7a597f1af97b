//! A system of several pcpus on several managed cpus (`--cpus`): accepted only where the
//! machine has a core to spare beyond them. On a machine of two cores the run is refused,
//! naming the cores, and the real-time test is skipped with the reason. The plan that
//! turns each decision into the seats' switches and the guests' moves is tested here
//! without real time, on every decision of the simulator's runs of two pcpus (the
//! executor's own plan, carried out on stand-in guests).

use rtvmm_core::machine::MachineConfig;
use rtvmm_core::model::{PcpuId, VcpuId};
use rtvmm_core::policy::PolicyConfig;
use rtvmm_core::Nanos;
use rtvmm_host::executor::plan::{self, Runs, SeatView, Step};
use rtvmm_host::{executor, sys};
use rtvmm_sim::Simulation;
use rtvmm_system::SystemSpec;

use crate::util::{busy, ms, options, skip};

fn two_pcpus() -> SystemSpec {
    let machine = MachineConfig {
        pcpus: 2,
        ..MachineConfig::default()
    };
    SystemSpec {
        domains: vec![
            busy("a", ms(2), ms(10), 1),
            busy("b", ms(3), ms(10), 2),
            busy("c", ms(4), ms(10), 3),
        ],
        ..SystemSpec::one_pool(machine, PolicyConfig::Deferrable)
    }
}

/// A run of two pcpus (three busy domains of 20, 30 and 40 %, global deferrable servers)
/// on cpus 0 and 1, where the machine has a third core to spare: each domain's threads
/// get about their budget of one core, and the VCPUs migrate. Refused, naming the cores,
/// where there is no core to spare (this test then skips, saying so).
pub fn a_system_of_two_pcpus_needs_a_core_to_spare_beyond_its_cpus() {
    let count = sys::cpu_count();
    if count >= 3 && skip("several_pcpus") {
        return;
    }
    let duration = ms(3_000);
    let mut options = options(duration);
    options.cpus = vec![0, 1];
    let run = executor::run(&two_pcpus(), "two", 1, options);
    if count < 3 {
        let refused = match run {
            Err(e) => e.to_string(),
            Ok(_) => String::new(),
        };
        assert!(
            refused.starts_with(&format!(
                "--cpus 0,1: this machine has {count} cores (0-{}), and a run of 2 pcpus \
                 needs at least one core to spare beyond them",
                count - 1
            )),
            "{refused}"
        );
        eprintln!(
            "skipped: several_pcpus: this machine has {count} cores (0-{}): a run of 2 pcpus \
             needs a third to spare beyond them",
            count - 1
        );
        return;
    }
    let run = run.unwrap_or_else(|e| panic!("a run of two pcpus: {e}"));
    let host = run.results.host.as_ref().expect("a host section");
    let seconds = duration.as_ns() as f64;
    for (d, budget) in [20.0, 30.0, 40.0].into_iter().enumerate() {
        let got = 100.0 * host.domain_cpu_ns[d] as f64 / seconds;
        eprintln!("two pcpus: domain {d}: {got:.2}% of a core (budget {budget}%)");
        assert!(
            got > budget - 5.0 && got < budget + 2.5,
            "domain {d} had {got:.2}% of a core for a {budget}% budget"
        );
    }
    let migrations: u64 = run
        .results
        .domains
        .iter()
        .flat_map(|d| &d.vcpus)
        .filter_map(|v| v.migrations)
        .sum();
    assert!(
        migrations > 0,
        "global servers on two pcpus migrated nothing"
    );
}

/// Three single-VCPU domains on two pcpus, `POLICY` in the `[scheduler]` table; the
/// guests' loads leave both pcpus busy much of the time, so a global policy moves VCPUs.
/// `pinned`: a and c on pcpu 0, b on pcpu 1 (what a partitioned policy needs).
fn three_on_two(policy: &str, pinned: bool) -> rtvmm_scenario::Scenario {
    let pin = |cpu: &str| match pinned {
        true => format!("affinity = \"{cpu}\"\n"),
        false => String::new(),
    };
    let (a, b, c) = (pin("0"), pin("1"), pin("0"));
    let text = format!(
        r#"name = "three-on-two"
duration = "400ms"
seed = 3

[machine]
pcpus = 2

[scheduler]
policy = "{policy}"

[[domain]]
name = "a"
vcpu = {{ budget = "6ms", period = "10ms", priority = 1 }}
{a}[[domain.task]]
name = "t"
period = "10ms"
wcet = "5ms"

[[domain]]
name = "b"
vcpu = {{ budget = "7ms", period = "14ms", priority = 2 }}
{b}[[domain.task]]
name = "t"
period = "14ms"
wcet = "6ms"

[[domain]]
name = "c"
vcpu = {{ budget = "9ms", period = "20ms", priority = 3 }}
{c}[[domain.task]]
name = "t"
period = "20ms"
wcet = "4ms"
"#
    );
    rtvmm_scenario::Scenario::from_toml(&text, "three-on-two.toml")
        .unwrap_or_else(|e| panic!("{e}"))
}

/// What the plan's steps do to stand-in guests: each VCPU's guest stopped or running, and
/// the host cpu it is pinned to.
#[derive(Default)]
struct StandInGuests {
    /// By VCPU index: (running, pinned cpu).
    guests: Vec<(bool, Option<usize>)>,
    /// By VCPU index: moves from a cpu where a run had placed the guest.
    migrations: Vec<u64>,
    /// By VCPU index: the time its guest was resumed on a seat.
    run: Vec<Nanos>,
}

/// Plans every decision of `policy`'s simulation of [`three_on_two`] over 400 ms on two
/// seats (host cpus 5 and 7: the plan never runs anything) and carries the steps out on
/// stand-in guests, checking each: a guest is stopped where it ran, moved only while
/// stopped and from where it is pinned, resumed only on the cpu it is pinned to and never
/// on two seats; after each decision every seat runs the core's `activity`. Returns the
/// stand-ins and the simulation.
fn planned(policy: &str, pinned: bool) -> (StandInGuests, Simulation) {
    planned_scenario(&three_on_two(policy, pinned), policy)
}

/// [`planned`] for any scenario of two pcpus (`name` in messages).
fn planned_scenario(
    scenario: &rtvmm_scenario::Scenario,
    name: &str,
) -> (StandInGuests, Simulation) {
    let policy = name;
    let mut sim = Simulation::new(&scenario.system, 3, false).expect("a valid system");
    let cpus = [5, 7];
    let mut seats: Vec<SeatView> = cpus
        .iter()
        .enumerate()
        .map(|(p, &cpu)| SeatView {
            pcpu: PcpuId(p as u32),
            cpu,
            runs: None,
        })
        .collect();
    let mut stand_in = StandInGuests::default();
    let mut steps = Vec::new();
    let end = ms(400);
    let mut at = Nanos::ZERO;
    let mut decisions = 0;
    while at < end {
        let next = sim.step(end).expect("the simulation runs");
        // What the seats ran over [at, next).
        for s in &seats {
            if let Some(Runs::Vcpu(v)) = s.runs {
                stand_in.run[v.index()] += next - at;
            }
        }
        at = next;
        let machine = sim.machine();
        let vcpus = machine.vcpu_count();
        stand_in.guests.resize(vcpus, (false, None));
        stand_in.migrations.resize(vcpus, 0);
        stand_in.run.resize(vcpus, Nanos::ZERO);
        let guests = &stand_in.guests;
        let decided = |p| plan::target(machine, p);
        plan::plan(&seats, decided, |v| guests[v.index()].1, &mut steps);
        decisions += usize::from(!steps.is_empty());
        for step in &steps {
            match *step {
                Step::Stop { seat, vcpu } => {
                    assert_eq!(seats[seat].runs, Some(Runs::Vcpu(vcpu)), "{at}: {step:?}");
                    let guest = &mut stand_in.guests[vcpu.index()];
                    assert!(guest.0, "{at}: {step:?}: not running");
                    guest.0 = false;
                    seats[seat].runs = None;
                }
                Step::Park { seat } => {
                    assert_eq!(seats[seat].runs, Some(Runs::Idle), "{at}: {step:?}");
                    seats[seat].runs = None;
                }
                Step::Move { vcpu, from, to } => {
                    let guest = &mut stand_in.guests[vcpu.index()];
                    assert!(!guest.0, "{at}: {step:?}: moved while running");
                    assert_eq!(guest.1, from, "{at}: {step:?}");
                    assert_ne!(from, Some(to), "{at}: {step:?}: a move to where it is");
                    guest.1 = Some(to);
                    if from.is_some() {
                        stand_in.migrations[vcpu.index()] += 1;
                    }
                }
                Step::Resume { seat, vcpu } => {
                    assert_eq!(seats[seat].runs, None, "{at}: {step:?}: not left first");
                    let guest = &mut stand_in.guests[vcpu.index()];
                    assert!(!guest.0, "{at}: {step:?}: resumed on two seats");
                    assert_eq!(guest.1, Some(seats[seat].cpu), "{at}: {step:?}");
                    guest.0 = true;
                    seats[seat].runs = Some(Runs::Vcpu(vcpu));
                }
                Step::Spin { seat } => {
                    assert_eq!(seats[seat].runs, None, "{at}: {step:?}: not left first");
                    seats[seat].runs = Some(Runs::Idle);
                }
            }
        }
        for s in &seats {
            assert_eq!(s.runs, Some(plan::target(machine, s.pcpu)), "{at}: {s:?}");
        }
        let running = stand_in.guests.iter().filter(|g| g.0).count();
        let seated = seats
            .iter()
            .filter(|s| matches!(s.runs, Some(Runs::Vcpu(_))))
            .count();
        assert_eq!(running, seated, "{at}: a guest running on no seat");
    }
    assert!(
        decisions > 100,
        "{policy}: only {decisions} decisions in 400 ms"
    );
    (stand_in, sim)
}

/// A global policy (RTDS, global EDF) on two pcpus, planned over 400 ms of the
/// simulator's decisions: each VCPU's guest runs exactly as long as the simulator ran the
/// VCPU, and is moved between the seats' cpus exactly as often as the core counted a
/// migration (and it does move: the policy is global). No real time.
pub fn a_global_rtds_system_of_two_pcpus_is_planned_as_the_simulator_schedules_it() {
    let (stand_in, sim) = planned("rtds", false);
    let machine = sim.machine();
    let mut moved = 0;
    for (i, &(_, pinned)) in stand_in.guests.iter().enumerate() {
        let stats = machine.vcpu_stats(VcpuId(i as u32));
        assert_eq!(stand_in.run[i], stats.run, "VCPU {i}: run time");
        assert!(stats.run > ms(50), "VCPU {i} ran {}", stats.run);
        assert_eq!(
            stand_in.migrations[i], stats.migrations,
            "VCPU {i}: guest moves against the core's migrations"
        );
        assert!(pinned.is_some(), "VCPU {i} was placed");
        moved += stand_in.migrations[i];
    }
    assert!(moved > 0, "global EDF moved no VCPU in 400 ms");
    eprintln!(
        "rtds on 2 pcpus, 400 ms: runs {:?}, guest moves {:?}",
        stand_in.run, stand_in.migrations
    );
}

/// A partitioned policy (SEDF, one instance per pcpu, each VCPU pinned to one) on two
/// pcpus: the same checks, and no guest ever moves once placed.
pub fn a_partitioned_system_of_two_pcpus_never_moves_a_guest() {
    let (stand_in, sim) = planned("sedf", true);
    let machine = sim.machine();
    for (i, run) in stand_in.run.iter().enumerate() {
        let stats = machine.vcpu_stats(VcpuId(i as u32));
        assert_eq!(*run, stats.run, "VCPU {i}: run time");
        assert_eq!(stand_in.migrations[i], 0, "VCPU {i} moved");
        assert_eq!(stats.migrations, 0, "VCPU {i} migrated in the core");
    }
}

/// A global guest of two VCPUs beside two busy domains under RTDS on two pcpus
/// ([`crate::global_guest::TWO_ON_TWO`]): a VCPU process per VCPU, each planned as any
/// VCPU's guest — resumed only on the seat whose pcpu runs its VCPU, for exactly as long
/// as the simulator ran it, and moved exactly as often as the core migrated it; the
/// guest's two processes both move. (Which job each of them runs: `global_guest`.)
pub fn a_global_guest_of_two_vcpus_on_two_pcpus_is_planned_as_simulated() {
    let scenario =
        rtvmm_scenario::Scenario::from_toml(crate::global_guest::TWO_ON_TWO, "global-two.toml")
            .unwrap_or_else(|e| panic!("{e}"));
    let (stand_in, sim) = planned_scenario(&scenario, "rtds, a global guest");
    let machine = sim.machine();
    for (i, run) in stand_in.run.iter().enumerate() {
        let stats = machine.vcpu_stats(VcpuId(i as u32));
        assert_eq!(*run, stats.run, "VCPU {i}: run time");
        assert_eq!(
            stand_in.migrations[i], stats.migrations,
            "VCPU {i}: guest moves against the core's migrations"
        );
    }
    let g = &sim.domains()[0].vcpus;
    assert_eq!(g.len(), 2);
    for v in g {
        assert!(
            stand_in.migrations[v.index()] > 0,
            "the global guest's {v:?} never moved in 400 ms"
        );
    }
    eprintln!(
        "a global guest on 2 pcpus, 400 ms: runs {:?}, guest moves {:?}",
        stand_in.run, stand_in.migrations
    );
}
