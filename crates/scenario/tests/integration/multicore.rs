//! Several pcpus (issue 12): `[[pool]]`, a domain's `pool`/`vcpus`/`affinity`/`smp`,
//! `[machine] overhead.migration`/`lock`, and `[[event]] xl = ".."`: each field read,
//! printed back by `rtvmm check`, and each error naming the file, the place and the field.

use rtvmm_core::cpuset::CpuSet;
use rtvmm_core::model::GuestSmp;
use rtvmm_core::xl::XlCommand;
use rtvmm_core::Nanos;
use rtvmm_scenario::{ErrorKind, Scenario};
use rtvmm_sim::Simulation;
use rtvmm_system::Change;

use crate::util::{assert_names, edit, error, parse};

/// Two pcpus in two pools of one pcpu; `web` pinned in `rt`; an `xl` event (line 27).
const TWO_POOLS: &str = r#"name = "mc"
duration = "100ms"
[machine]
pcpus = 2
overhead = { migration = "2us", lock = "100ns" }
[[pool]]
name = "Pool-0"
pcpus = [0]
policy = "deferrable"
[[pool]]
name = "rt"
pcpus = "1"
policy = "rtds"
quantum = "2ms"
[[domain]]
name = "batch"
vcpu = { budget = "4ms", period = "10ms" }
[[domain]]
name = "web"
pool = "rt"
vcpus = 2
affinity = ["1", "all"]
smp = "partitioned"
vcpu = { budget = "2ms", period = "10ms" }
[[event]]
at = "5ms"
xl = "sched-rtds -d web -v 1 -p 10000 -b 4000"
"#;

#[test]
fn pools_placement_and_xl_events_are_read() {
    let s = parse(TWO_POOLS);
    let pools = &s.system.pools;
    assert_eq!(pools.len(), 2);
    assert_eq!(
        (pools[0].name.as_str(), pools[0].pcpus),
        ("Pool-0", CpuSet::one(0))
    );
    assert_eq!(pools[1].pcpus, CpuSet::one(1));
    assert_eq!(pools[1].quantum, Some(Nanos::from_ms(2)));
    assert_eq!(pools[1].policy.kind().name(), "rtds");
    let o = s.system.machine.overheads;
    assert_eq!((o.migration, o.lock), (Nanos::from_us(2), Nanos(100)));
    let web = &s.system.domains[1].placement;
    assert_eq!(web.pool.as_deref(), Some("rt"));
    assert_eq!(web.vcpus, 2);
    assert_eq!(web.affinity, vec![Some(vec![1]), None]);
    assert_eq!(web.smp, GuestSmp::Partitioned);
    assert_eq!(s.system.changes[0].at, Nanos::from_ms(5));
    assert_eq!(
        s.system.changes[0].change,
        Change::Xl(XlCommand::parse("sched-rtds -d web -v 1 -p 10000 -b 4000").unwrap())
    );
}

#[test]
fn check_prints_the_new_fields_back() {
    let s = parse(TWO_POOLS);
    let text = s.to_toml();
    for line in [
        "overhead = { do_schedule = \"0ns\", context_switch = \"0ns\", migration = \"2us\", lock = \"100ns\" }",
        "[[pool]]\nname = \"Pool-0\"\npcpus = \"0\"\npolicy = \"deferrable\"\n",
        "[[pool]]\nname = \"rt\"\npcpus = \"1\"\npolicy = \"rtds\"\nquantum = \"2ms\"\n",
        "pool = \"rt\"\nvcpus = 2\naffinity = [\"1\", \"all\"]\nsmp = \"partitioned\"\n",
        "at = \"5ms\"\nxl = \"sched-rtds -d web -v 1 -p 10000 -b 4000\"\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    assert_eq!(Scenario::from_toml(&text, "test.toml").unwrap(), s);
    // One string for every VCPU prints as one string.
    let same = parse(&edit(TWO_POOLS, "[\"1\", \"all\"]", "\"1\""));
    assert_eq!(
        same.system.domains[1].placement.affinity,
        vec![Some(vec![1]); 2]
    );
    assert!(same.to_toml().contains("\naffinity = \"1\"\n"));
    assert_eq!(
        Scenario::from_toml(&same.to_toml(), "test.toml").unwrap(),
        same
    );
}

#[test]
fn a_file_without_the_new_fields_prints_as_before() {
    let s = parse(crate::util::BASE);
    let text = s.to_toml();
    for absent in [
        "[[pool]]",
        "migration",
        "lock",
        "vcpus",
        "affinity",
        "smp",
        "xl",
    ] {
        assert!(!text.contains(absent), "{absent} in:\n{text}");
    }
    assert!(text.contains("overhead = { do_schedule = \"0ns\", context_switch = \"0ns\" }\n"));
    assert!(!s.uses_placement());
}

#[test]
fn pool_errors_name_the_pool_and_field() {
    let e = error(&edit(TWO_POOLS, "pcpus = \"1\"", "pcpus = \"0-1\""));
    assert_names(&e, None, None, Some("pcpus"));
    assert_eq!(e.location.pool.as_deref(), Some("rt"));
    assert_eq!(
        e.to_string(),
        "bad.toml: pool 'rt': pcpus: pcpu 0 is in pool 'Pool-0' already: a pcpu belongs to \
         one pool"
    );
    let e = error(&edit(TWO_POOLS, "pcpus = \"1\"", "pcpus = [2]"));
    assert_eq!(
        e.to_string(),
        "bad.toml: pool 'rt': pcpus: pcpu 2 is not on the machine ([machine] pcpus = 2)"
    );
    let e = error(&edit(TWO_POOLS, "pcpus = \"1\"", "pcpus = \"1-x\""));
    assert_eq!(
        e.to_string(),
        "bad.toml: pool 'rt': pcpus: '1-x': 'x' is not a pcpu number"
    );
    let e = error(&edit(TWO_POOLS, "policy = \"rtds\"", "policy = \"fifo\""));
    assert!(
        e.to_string()
            .starts_with("bad.toml: pool 'rt': policy: unknown policy 'fifo'"),
        "{e}"
    );
    let e = error(&edit(TWO_POOLS, "name = \"rt\"", "name = \"Pool-0\""));
    assert!(
        matches!(e.kind, ErrorKind::Duplicate { what: "pool", .. }),
        "{e}"
    );
    let e = error(&edit(TWO_POOLS, "quantum = \"2ms\"", "quantom = \"2ms\""));
    assert!(e.to_string().contains("pool 'rt'"), "{e}");
    assert!(e.to_string().contains("quantom"), "{e}");
}

#[test]
fn placement_errors_name_the_domain_and_field() {
    let e = error(&edit(TWO_POOLS, "pool = \"rt\"", "pool = \"gpu\""));
    assert_names(&e, Some("web"), None, Some("pool"));
    assert_eq!(
        e.to_string(),
        "bad.toml: domain 'web': pool: cpupool 'gpu': no such pool"
    );
    // Pcpu 0 is on the machine but not in `rt`.
    let e = error(&edit(TWO_POOLS, "[\"1\", \"all\"]", "[\"0\", \"all\"]"));
    assert_names(&e, Some("web"), None, Some("affinity"));
    assert!(
        e.to_string()
            .contains("affinity 0 is not within cpupool 'rt' (pcpus 1)"),
        "{e}"
    );
    let e = error(&edit(TWO_POOLS, "[\"1\", \"all\"]", "[\"1\"]"));
    assert_names(&e, Some("web"), None, Some("affinity"));
    assert!(
        e.to_string()
            .contains("1 entries for 2 VCPU(s): give one per VCPU, or one string for all"),
        "{e}"
    );
    let e = error(&edit(TWO_POOLS, "vcpus = 2", "vcpus = 0"));
    assert_names(&e, Some("web"), None, Some("vcpus"));
    // Found by the fuzzing harness: 65,535 VCPUs in a domain an event adds were only
    // refused when the run built the guest, after `check`'s replay of the events had spent
    // minutes inserting them into a policy. The file is refused as it is read; 64, the
    // most a guest may have, is read.
    let e = error(&edit(TWO_POOLS, "vcpus = 2", "vcpus = 65535"));
    assert_names(&e, Some("web"), None, Some("vcpus"));
    assert!(
        e.to_string()
            .contains("vcpus: 65535 is out of range: a whole number from 1 to 64"),
        "{e}"
    );
    let most = edit(
        &edit(TWO_POOLS, "vcpus = 2", "vcpus = 64"),
        "affinity = [\"1\", \"all\"]",
        "affinity = \"all\"",
    );
    assert_eq!(parse(&most).system.domains[1].placement.vcpus, 64);
    let e = error(&edit(TWO_POOLS, "smp = \"partitioned\"", "smp = \"both\""));
    assert_names(&e, Some("web"), None, Some("smp"));
    // A pcpu beyond the machine, in the single-pcpu default pool.
    let one = "name = \"x\"\nduration = \"1s\"\n[[domain]]\nname = \"d\"\naffinity = \"1\"\nvcpu = { budget = \"1ms\", period = \"10ms\" }\n";
    let e = error(one);
    assert_eq!(
        e.to_string(),
        "bad.toml: domain 'd': affinity: pcpu 1 is not on the machine ([machine] pcpus = 1)"
    );
}

#[test]
fn xl_event_errors_name_the_event_its_line_and_field() {
    // Line 27 is the `xl = ..` line.
    let e = error(&edit(TWO_POOLS, "-b 4000", "-b 40000"));
    assert!(matches!(e.kind, ErrorKind::XlSyntax(_)), "{e}");
    assert_eq!(
        e.to_string(),
        "bad.toml:27: event 1: xl: sched-rtds: -b: the budget 40000us is above the period \
         10000us"
    );
    // Reads, but fails at its time: `web` has two VCPUs.
    let e = error(&edit(TWO_POOLS, "-v 1", "-v 2"));
    assert!(matches!(e.kind, ErrorKind::Xl(_)), "{e}");
    assert_eq!(
        e.to_string(),
        "bad.toml:27: event 1: xl: `sched-rtds -d web -v 2 -p 10000 -b 4000`: domain 'web' has \
         no VCPU 2 (it has 2)"
    );
    let e = error(&edit(
        TWO_POOLS,
        "sched-rtds -d web -v 1 -p 10000 -b 4000",
        "cpupool-cpu-add rt 0",
    ));
    assert_eq!(
        e.to_string(),
        "bad.toml:27: event 1: xl: `cpupool-cpu-add rt 0`: pcpu 0: it is in cpupool 'Pool-0' \
         already (a pcpu belongs to one pool)"
    );
    // An empty pool with domains.
    let e = error(&edit(
        TWO_POOLS,
        "sched-rtds -d web -v 1 -p 10000 -b 4000",
        "cpupool-cpu-remove rt 1",
    ));
    assert!(
        e.to_string().ends_with(
            "cpupool 'rt': removing pcpu 1 would leave it without pcpus while it holds VCPUs"
        ),
        "{e}"
    );
    let e = error(&edit(
        TWO_POOLS,
        "at = \"5ms\"\n",
        "at = \"5ms\"\naction = \"sched-set\"\n",
    ));
    assert_eq!(
        e.to_string(),
        "bad.toml: event 1: xl: give either this or `action`, not both"
    );
    let e = error(&edit(
        TWO_POOLS,
        "at = \"5ms\"\n",
        "at = \"5ms\"\nbudget = \"1ms\"\n",
    ));
    assert_names(&e, None, None, Some("budget"));
}

/// One pcpu under RTDS: `d1` (2 ms every 10 ms, no extratime) runs a task that always has work (10 ms
/// every 10 ms). At 50 ms, `xl sched-rtds` gives it 4 ms every 10 ms. 50 ms is a period
/// boundary, so the new budget counts from there, whether RTDS applies it at once or at
/// the next replenishment:
///
/// ```text
/// [0, 50):   5 periods × 2 ms = 10 ms busy
/// [50, 100): 5 periods × 4 ms = 20 ms busy      → 30 ms busy in 100 ms
/// ```
#[test]
fn an_xl_event_changes_the_budget_at_its_time() {
    let text = r#"name = "xl"
duration = "100ms"
[scheduler]
policy = "rtds"
[[domain]]
name = "d1"
vcpu = { budget = "2ms", period = "10ms", extratime = false }
[[domain.task]]
name = "busy"
period = "10ms"
wcet = "10ms"
[[event]]
at = "50ms"
xl = "sched-rtds -d d1 -p 10000 -b 4000"
"#;
    let busy = |text: &str| {
        let s = parse(text);
        let mut sim = Simulation::new(&s.system, s.seed, false).unwrap();
        sim.run_until(s.duration).unwrap();
        let r = sim.results(&s.name, s.seed, s.duration);
        (
            r.pcpus[0].busy_ns,
            sim.machine().params(sim.domains()[0].vcpu).budget,
        )
    };
    assert_eq!(busy(text), (Nanos::from_ms(30).as_ns(), Nanos::from_ms(4)));
    // Without the event: 10 × 2 ms.
    let without = &text[..text.find("[[event]]").unwrap()];
    assert_eq!(
        busy(without),
        (Nanos::from_ms(20).as_ns(), Nanos::from_ms(2))
    );
}

#[test]
fn the_example_checks_and_round_trips() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/multicore.toml");
    let s = Scenario::load(path).unwrap();
    assert!(s.uses_placement());
    assert_eq!(Scenario::from_toml(&s.to_toml(), path).unwrap(), s);
}

/// Triggered tasks, a pinned task and a chain (lines matter: `trigger` of `front` is line
/// 20, `vcpu` of `pinned` line 33, `tasks` of the chain line 36).
const CHAIN: &str = r#"name = "chain"
duration = "100ms"
[machine]
pcpus = 2
[[domain]]
name = "driver"
vcpu = { budget = "2ms", period = "10ms" }
[[domain.task]]
name = "rx"
period = "10ms"
wcet = "100us"
[[domain]]
name = "guest"
vcpus = 2
smp = "partitioned"
vcpu = { budget = "2ms", period = "10ms" }
[[domain.task]]
name = "front"
kind = "triggered"
trigger = "driver/rx"
delay = "20us"
period = "10ms"
wcet = "200us"
vcpu = 1
[[domain.task]]
name = "other"
period = "10ms"
wcet = "1ms"
[[domain.task]]
name = "pinned"
period = "20ms"
wcet = "1ms"
vcpu = 0
[[chain]]
name = "io"
tasks = ["driver/rx", "guest/front"]
bounds = ["1ms", "5ms"]
"#;

#[test]
fn triggered_tasks_task_vcpus_and_chains_are_read() {
    use rtvmm_core::guest::Arrival;
    let s = parse(CHAIN);
    let guest = &s.system.domains[1];
    let front = &guest.tasks[0];
    assert_eq!(
        front.arrival,
        Arrival::Triggered {
            by_domain: "driver".into(),
            by_task: "rx".into(),
            delay: Nanos::from_us(20),
        }
    );
    assert_eq!(front.vcpu, 1);
    assert_eq!(guest.tasks[1].vcpu, 0); // default
    assert_eq!(guest.tasks[2].vcpu, 0);
    let chain = &s.system.chains[0];
    assert_eq!(chain.name, "io");
    assert_eq!(
        chain.tasks,
        vec![
            ("driver".to_string(), "rx".to_string()),
            ("guest".to_string(), "front".to_string())
        ]
    );
    assert_eq!(chain.bounds, vec![Nanos::from_ms(1), Nanos::from_ms(5)]);
    // `delay` defaults to 0; `bounds` to none (the simulator's 1 ms).
    let s = parse(&edit(
        &edit(CHAIN, "delay = \"20us\"\n", ""),
        "bounds = [\"1ms\", \"5ms\"]\n",
        "",
    ));
    assert!(matches!(
        s.system.domains[1].tasks[0].arrival,
        Arrival::Triggered {
            delay: Nanos::ZERO,
            ..
        }
    ));
    assert!(s.system.chains[0].bounds.is_empty());
}

/// Found by the fuzzing harness: a pool that sets `migration` and `lock` to zero beside a
/// machine that does not printed without them, so `check`'s output read back with the
/// machine's costs in that pool (left out, a pool's overhead fields are the machine's).
#[test]
fn a_pools_zero_migration_and_lock_print_back_beside_the_machines() {
    let text = edit(
        TWO_POOLS,
        "quantum = \"2ms\"\n",
        "quantum = \"2ms\"\noverhead = { migration = \"0us\", lock = \"0ns\" }\n",
    );
    let s = parse(&text);
    let rt = &s.system.pools[1];
    assert_eq!(rt.overheads.map(|o| o.lock), Some(Nanos::ZERO));
    assert_eq!(s.system.machine.overheads.lock, Nanos(100));
    let printed = s.to_toml();
    assert!(
        printed.contains("migration = \"0ns\", lock = \"0ns\" }"),
        "{printed}"
    );
    assert_eq!(Scenario::from_toml(&printed, "test.toml").unwrap(), s);
}

#[test]
fn check_prints_triggers_vcpus_and_chains_back() {
    let s = parse(CHAIN);
    let text = s.to_toml();
    for line in [
        "name = \"front\"\nkind = \"triggered\"\nperiod = \"10ms\"\nwcet = \"200us\"\ndeadline = \"10ms\"\nmin_exec = \"200us\"\ntrigger = \"driver/rx\"\ndelay = \"20us\"\nvcpu = 1\n",
        "name = \"other\"\nkind = \"periodic\"\nperiod = \"10ms\"\nwcet = \"1ms\"\ndeadline = \"10ms\"\noffset = \"0ns\"\nmin_exec = \"1ms\"\nvcpu = 0\n",
        "[[chain]]\nname = \"io\"\ntasks = [\"driver/rx\", \"guest/front\"]\nbounds = [\"1ms\", \"5ms\"]\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    // A triggered task has no offset; the driver's (global) tasks no vcpu.
    let task_vcpus = text
        .lines()
        .filter(|l| l.starts_with("vcpu = ") && !l.starts_with("vcpu = {"))
        .count();
    assert_eq!(task_vcpus, 3, "{text}");
    assert_eq!(Scenario::from_toml(&text, "test.toml").unwrap(), s);
    // Names with a `/`: the split is the one that names a task of the file.
    let slashed = edit(
        &edit(
            &edit(CHAIN, "name = \"driver\"", "name = \"dom/0\""),
            "trigger = \"driver/rx\"",
            "trigger = \"dom/0/rx\"",
        ),
        "tasks = [\"driver/rx\",",
        "tasks = [\"dom/0/rx\",",
    );
    let s = parse(&slashed);
    assert!(matches!(
        &s.system.domains[1].tasks[0].arrival,
        rtvmm_core::guest::Arrival::Triggered { by_domain, by_task, .. }
            if by_domain == "dom/0" && by_task == "rx"
    ));
    assert_eq!(s.system.chains[0].tasks[0], ("dom/0".into(), "rx".into()));
    assert_eq!(Scenario::from_toml(&s.to_toml(), "test.toml").unwrap(), s);
}

#[test]
fn trigger_errors_name_the_line_task_and_field() {
    let e = error(&edit(CHAIN, "\"driver/rx\"\ndelay", "\"driver/rq\"\ndelay"));
    assert_names(&e, Some("guest"), Some("front"), Some("trigger"));
    assert_eq!(
        e.to_string(),
        "bad.toml:20: domain 'guest', task 'front': trigger: 'driver/rq': domain 'driver' \
         has no task 'rq'"
    );
    let e = error(&edit(CHAIN, "\"driver/rx\"\ndelay", "\"drive/rx\"\ndelay"));
    assert_eq!(
        e.to_string(),
        "bad.toml:20: domain 'guest', task 'front': trigger: 'drive/rx': no domain named \
         'drive' in the file"
    );
    let e = error(&edit(CHAIN, "\"driver/rx\"\ndelay", "\"rx\"\ndelay"));
    assert_eq!(
        e.to_string(),
        "bad.toml:20: domain 'guest', task 'front': trigger: 'rx' is not a task: write \
         \"DOMAIN/TASK\", for example \"driver/rx\""
    );
    // Missing: at the line of `kind` (19).
    let e = error(&edit(CHAIN, "trigger = \"driver/rx\"\n", ""));
    assert_eq!(
        e.to_string(),
        "bad.toml:19: domain 'guest', task 'front': trigger: missing (required)"
    );
    let e = error(&edit(CHAIN, "delay = \"20us\"", "delay = 20"));
    assert_names(&e, Some("guest"), Some("front"), Some("delay"));
    assert_eq!(e.location.line, Some(21));
    // Only triggered tasks have a trigger and a delay, and they have no offset.
    let e = error(&edit(
        CHAIN,
        "wcet = \"1ms\"\nvcpu = 0",
        "wcet = \"1ms\"\ndelay = \"1us\"",
    ));
    assert_names(&e, Some("guest"), Some("pinned"), Some("delay"));
    assert!(
        e.to_string().contains("only tasks of kind = \"triggered\""),
        "{e}"
    );
    let e = error(&edit(CHAIN, "delay = \"20us\"", "offset = \"1ms\""));
    assert_names(&e, Some("guest"), Some("front"), Some("offset"));
    let e = error(&edit(CHAIN, "kind = \"triggered\"", "kind = \"trigered\""));
    assert!(
        e.to_string()
            .ends_with("expected one of periodic, sporadic, aperiodic, triggered"),
        "{e}"
    );
}

#[test]
fn task_vcpu_errors_name_the_line_task_and_field() {
    let e = error(&edit(CHAIN, "vcpu = 0\n", "vcpu = 2\n"));
    assert_names(&e, Some("guest"), Some("pinned"), Some("vcpu"));
    assert_eq!(
        e.to_string(),
        "bad.toml:33: domain 'guest', task 'pinned': vcpu: 2 is not a VCPU of the domain: it \
         has 2 (vcpus = 2), numbered from 0"
    );
    // Without the `smp` line, `front`'s `vcpu = 1` is on line 23.
    let e = error(&edit(CHAIN, "smp = \"partitioned\"\n", ""));
    assert_names(&e, Some("guest"), Some("front"), Some("vcpu"));
    assert_eq!(
        e.to_string(),
        "bad.toml:23: domain 'guest', task 'front': vcpu: pins the task, but the guest \
         schedules globally (only a guest with smp = \"partitioned\" pins tasks to VCPUs; its \
         domain has 2 VCPU(s))"
    );
    let e = error(&edit(CHAIN, "vcpu = 0\n", "vcpu = -1\n"));
    assert_names(&e, Some("guest"), Some("pinned"), Some("vcpu"));
    assert_eq!(e.location.line, Some(33));
}

#[test]
fn chain_errors_name_the_line_chain_and_what_is_wrong() {
    // The first task is triggered.
    let e = error(&edit(
        CHAIN,
        "[\"driver/rx\", \"guest/front\"]",
        "[\"guest/front\"]",
    ));
    assert!(matches!(e.kind, ErrorKind::Chain(_)), "{e}");
    assert_eq!(e.location.chain.as_deref(), Some("io"));
    assert_eq!(
        e.to_string(),
        "bad.toml:36: chain 'io': tasks: the first task 'guest'/'front' is triggered; a chain \
         starts at a task released from outside (periodic, sporadic, aperiodic)"
    );
    // Not linked: `other` is not triggered by `rx`.
    let e = error(&edit(CHAIN, "\"guest/front\"]", "\"guest/other\"]"));
    assert_eq!(
        e.to_string(),
        "bad.toml:36: chain 'io': tasks: 'guest'/'other' is not triggered by the task before \
         it in the chain, 'driver'/'rx'"
    );
    let e = error(&edit(CHAIN, "\"guest/front\"]", "\"guest/back\"]"));
    assert_eq!(
        e.to_string(),
        "bad.toml:36: chain 'io': tasks: no task 'back' in a domain 'guest'"
    );
    let e = error(&edit(CHAIN, "[\"driver/rx\", \"guest/front\"]", "[]"));
    assert_eq!(
        e.to_string(),
        "bad.toml:36: chain 'io': tasks: a chain needs at least one task"
    );
    let e = error(&edit(CHAIN, "\"guest/front\"]", "\"front\"]"));
    assert_eq!(e.location.field.as_deref(), Some("tasks[2]"));
    assert_eq!(e.location.line, Some(36));
    let e = error(&edit(CHAIN, "\"5ms\"]", "\"0ms\"]"));
    assert_eq!(
        e.to_string(),
        "bad.toml:37: chain 'io': bounds[2]: must be greater than 0"
    );
    let e = error(&edit(
        CHAIN,
        "tasks = [\"driver/rx\", \"guest/front\"]\n",
        "",
    ));
    assert_eq!(
        e.to_string(),
        "bad.toml:35: chain 'io': tasks: missing (required)"
    );
    let e = error(&format!(
        "{CHAIN}[[chain]]\nname = \"io\"\ntasks = [\"driver/rx\"]\n"
    ));
    assert!(
        matches!(e.kind, ErrorKind::Duplicate { what: "chain", .. }),
        "{e}"
    );
    let e = error(&edit(CHAIN, "bounds", "bound"));
    assert!(e.to_string().contains("chain 'io'"), "{e}");
    assert!(e.to_string().contains("bound"), "{e}");
}

/// The example: every instance of `io` runs rx (100 us), waits the event channel (20 us),
/// front (200 us), the channel again (20 us) and tx (50 us), all with etf = 1, so no
/// instance is faster than 100 + 20 + 200 + 20 + 50 = 390 us; one that meets no other work
/// takes exactly that (each VCPU has budget left: rx and tx on `driver`'s VCPU alone on
/// pcpu 0, front on `guest`'s, whose earlier RTDS deadline beats `batch`'s on pcpu 1 most
/// of the time). Every packet (an rx job) finished before the end starts one instance.
#[test]
fn the_io_chain_example_runs_and_measures_its_chain() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/io-chain.toml");
    let s = Scenario::load(path).unwrap();
    assert_eq!(Scenario::from_toml(&s.to_toml(), path).unwrap(), s);
    let mut sim = Simulation::new(&s.system, s.seed, false).unwrap();
    sim.run_until(s.duration).unwrap();
    let r = sim.results(&s.name, s.seed, s.duration);
    assert_eq!(r.chains.len(), 1);
    let io = &r.chains[0];
    assert_eq!(io.name, "io");
    let guest = r.domains.iter().find(|d| d.name == "guest").unwrap();
    assert!(io.instances > 100, "{io:?}"); // about 1 s / 5 ms = 200 packets
                                           // One front job per instance, at most one instance in flight at the end.
    assert!(guest.released >= io.instances && guest.released <= io.instances + 1);
    assert_eq!(io.latency_ns.min, Nanos::from_us(390).as_ns());
    assert!(io.latency_ns.max < Nanos::from_ms(1).as_ns(), "{io:?}");
    assert_eq!(io.within.len(), 2);
    assert_eq!(io.within[0].bound_ns, Nanos::from_ms(1).as_ns());
}

/// `extratime` left unsaid takes the policy's default: on under RTDS (as `xl` creates
/// every RTDS VCPU), off under SEDF; said, it holds under both. `d1` has 1 ms every 4 ms
/// and one job of 2 ms released at 0, alone on its pcpu:
///
/// ```text
/// with extratime:    0–1 on its budget, 1–2 on extra time (nobody else wants the pcpu)
///                    → finishes at 2 ms
/// without:           0–1, then waits, depleted, for the next period: 4–5 → at 5 ms
/// ```
#[test]
fn extratime_defaults_to_the_policys_and_a_file_can_say_otherwise() {
    let file = |policy: &str, extratime: &str| {
        format!(
            "name = \"x\"\nduration = \"20ms\"\n[scheduler]\npolicy = \"{policy}\"\n\
             [[domain]]\nname = \"d1\"\nvcpu = {{ budget = \"1ms\", period = \"4ms\"{extratime} }}\n\
             [[domain.task]]\nname = \"job\"\nperiod = \"20ms\"\nwcet = \"2ms\"\n"
        )
    };
    let finish = |text: &str| {
        let s = parse(text);
        let mut sim = Simulation::new(&s.system, s.seed, false).unwrap();
        sim.set_keep_jobs(true);
        sim.run_until(s.duration).unwrap();
        sim.domains()[0].finished[0][0].finish
    };
    let ms = |x| Some(Nanos::from_ms(x));
    assert_eq!(finish(&file("rtds", "")), ms(2), "RTDS: on unless said");
    assert_eq!(finish(&file("rtds", ", extratime = false")), ms(5));
    assert_eq!(finish(&file("sedf", "")), ms(5), "SEDF: off unless said");
    assert_eq!(finish(&file("sedf", ", extratime = true")), ms(2));
    // The default belongs to the policy the VCPU runs under, not to the file's first one.
    let s = parse(&file("sedf", ""));
    let under_rtds = s.with_policy(rtvmm_core::policy::PolicyKind::Rtds).unwrap();
    let mut sim = Simulation::new(&under_rtds.system, 0, false).unwrap();
    sim.set_keep_jobs(true);
    sim.run_until(Nanos::from_ms(20)).unwrap();
    assert_eq!(sim.domains()[0].finished[0][0].finish, ms(2));
}
