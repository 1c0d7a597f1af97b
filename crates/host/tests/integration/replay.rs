//! One event list, two drivers: the simulator plays a scenario's timed events, the host's
//! live-control path ([`ctl::apply`] on the stand-in's machine, what the executor calls)
//! receives the same events as commands; after each event both machines must be in the
//! same state — every present domain, and per VCPU its parameters, pool and affinity. No
//! real time: both machines run on virtual time.

use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::machine::Machine;
use rtvmm_core::model::{VcpuId, VcpuParams};
use rtvmm_core::Nanos;
use rtvmm_host::ctl::{self, Command, Domains, Reply};
use rtvmm_scenario::Scenario;
use rtvmm_sim::Simulation;

/// Two pcpus under RTDS: `web`, a partitioned guest of two VCPUs (a task pinned to each),
/// and `db`, one VCPU. Each event is written twice: as the file's `[[event]]` and as the
/// request `rtvmm ctl` sends for it.
const EVENTS: &[(u64, &str, &str)] = &[
    (
        10,
        r#"xl = "sched-rtds -d web -p 10000 -b 3000""#,
        r#"{"v":1,"cmd":"xl","xl":"sched-rtds -d web -p 10000 -b 3000"}"#,
    ),
    (
        20,
        r#"xl = "sched-rtds -d web -v 1 -p 8000 -b 2000""#,
        r#"{"v":1,"cmd":"xl","xl":"sched-rtds -d web -v 1 -p 8000 -b 2000"}"#,
    ),
    (
        30,
        r#"xl = "vcpu-pin web 1 0""#,
        r#"{"v":1,"cmd":"xl","xl":"vcpu-pin web 1 0"}"#,
    ),
    (
        35,
        "action = \"sched-set\"\ndomain = \"db\"\nbudget = \"5ms\"",
        r#"{"v":1,"cmd":"sched-set","domain":"db","budget":"5ms"}"#,
    ),
    (
        40,
        "action = \"add-domain\"\n[event.domain]\nname = \"late\"\n\
         vcpu = { budget = \"1ms\", period = \"5ms\", priority = 3 }\n\
         [[event.domain.task]]\nname = \"t\"\nperiod = \"10ms\"\nwcet = \"1ms\"",
        r#"{"v":1,"cmd":"add-domain","domain":{"name":"late",
            "vcpu":{"budget":"1ms","period":"5ms","priority":3},
            "task":[{"name":"t","period":"10ms","wcet":"1ms"}]}}"#,
    ),
    (
        50,
        "action = \"remove-domain\"\ndomain = \"db\"",
        r#"{"v":1,"cmd":"remove-domain","domain":"db"}"#,
    ),
    (
        60,
        "action = \"swap-policy\"\npolicy = \"credit\"",
        r#"{"v":1,"cmd":"swap-policy","policy":"credit"}"#,
    ),
    (
        70,
        r#"xl = "sched-credit -d web -w 512 -c 50""#,
        r#"{"v":1,"cmd":"xl","xl":"sched-credit -d web -w 512 -c 50"}"#,
    ),
];

fn scenario() -> Scenario {
    let mut text = String::from(
        r#"name = "replay"
duration = "100ms"
seed = 1

[machine]
pcpus = 2

[scheduler]
policy = "rtds"

[[domain]]
name = "web"
vcpus = 2
smp = "partitioned"
vcpu = { budget = "2ms", period = "10ms", priority = 1 }
[[domain.task]]
name = "a"
period = "10ms"
wcet = "1ms"
vcpu = 0
[[domain.task]]
name = "b"
period = "10ms"
wcet = "1ms"
vcpu = 1

[[domain]]
name = "db"
vcpu = { budget = "4ms", period = "20ms", priority = 2 }
[[domain.task]]
name = "q"
period = "20ms"
wcet = "2ms"
"#,
    );
    for (at, event, _) in EVENTS {
        text.push_str(&format!("\n[[event]]\nat = \"{at}ms\"\n{event}\n"));
    }
    Scenario::from_toml(&text, "replay.toml").unwrap_or_else(|e| panic!("{e}"))
}

/// Per present domain, in join order: its name and, per VCPU, its parameters, pool and
/// affinity.
type State = Vec<(String, Vec<(VcpuParams, String, CpuSet)>)>;

fn vcpu_state(machine: &Machine, v: VcpuId) -> (VcpuParams, String, CpuSet) {
    let (pool, affinity) = machine.placement(v);
    (machine.params(v).clone(), pool.to_string(), affinity)
}

fn sim_state(sim: &Simulation) -> State {
    sim.domains()
        .iter()
        .filter(|d| d.removed_at.is_none())
        .map(|d| {
            let vcpus = d.vcpus.iter().map(|&v| vcpu_state(sim.machine(), v));
            (d.spec.name.clone(), vcpus.collect())
        })
        .collect()
}

fn host_state(machine: &Machine, domains: &Domains) -> State {
    let mut state: State = Vec::new();
    for (name, _, v) in domains.running() {
        if state.last().is_none_or(|(last, _)| last != name) {
            state.push((name.to_string(), Vec::new()));
        }
        state
            .last_mut()
            .expect("pushed")
            .1
            .push(vcpu_state(machine, v));
    }
    state
}

fn run_to(machine: &mut Machine, end: Nanos) {
    while machine.poll_timeout() <= end {
        let due = machine.poll_timeout().max(machine.now());
        machine.handle_timeout(due);
    }
    machine.advance(end);
}

pub fn the_simulator_and_the_hosts_control_path_leave_the_same_machine_after_each_event() {
    let scenario = scenario();
    let mut sim = Simulation::new(&scenario.system, 1, false).expect("a valid system");
    let (mut machine, mut domains) = ctl::standin::start(&scenario).expect("the host's start");
    assert_eq!(host_state(&machine, &domains), sim_state(&sim), "at 0");
    let ms = Nanos::from_ms;
    for (at, _, request) in EVENTS {
        let at = ms(*at);
        sim.run_until(at).expect("the simulation runs");
        run_to(&mut machine, at);
        let command = Command::parse(&request.replace('\n', " ")).expect("a valid request");
        let applied = ctl::apply(&mut machine, &mut domains, at, command);
        assert!(
            matches!(applied.reply, Reply::Done { .. }),
            "{request}: {:?}",
            applied.reply
        );
        let (host, simulated) = (host_state(&machine, &domains), sim_state(&sim));
        assert_eq!(host, simulated, "after {request}");
        if request.contains("sched-rtds -d web -p") {
            // Without `-v`: every VCPU of web, on both sides (as Xen's `xl` does).
            for (side, state) in [("host", &host), ("simulator", &simulated)] {
                for (params, _, _) in &state[0].1 {
                    assert_eq!((params.budget, params.period), (ms(3), ms(10)), "{side}");
                }
            }
        }
        machine.check_invariants().expect("the host's machine");
    }

    // The checks that tell the events apart, on the final state: `sched-rtds` without
    // `-v` reached both of web's VCPUs (VCPU 0 still has it), `-v 1` only the second,
    // `vcpu-pin` moved the second to pcpu 0, db (given a new budget first) left and late
    // joined, the policy is Credit with web's weight and cap set on every VCPU.
    let state = sim_state(&sim);
    let names: Vec<&str> = state.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["web", "late"]);
    let web = &state[0].1;
    assert_eq!((web[0].0.budget, web[0].0.period), (ms(3), ms(10)));
    assert_eq!((web[1].0.budget, web[1].0.period), (ms(2), ms(8)));
    assert_eq!(web[0].2, CpuSet::first(2));
    assert_eq!(web[1].2, CpuSet::one(0));
    for (params, _, _) in web {
        assert_eq!((params.weight, params.cap), (512, 50));
    }
    assert_eq!(sim.machine().policy_kind(), machine.policy_kind());
}
