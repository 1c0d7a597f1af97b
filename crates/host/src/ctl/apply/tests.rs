//! Commands applied to a real machine: each maps to the right core call, and each refusal
//! leaves the machine exactly as it was.

use super::*;
use rtvmm_core::machine::MachineConfig;
use rtvmm_core::model::VcpuParams;
use rtvmm_core::policy::{CreditConfig, PolicyConfig, RtdsMode};
use rtvmm_scenario::ArincTableSpec;

fn ms(x: u64) -> Nanos {
    Nanos::from_ms(x)
}

fn settings() -> SchedulerSettings {
    SchedulerSettings {
        credit: CreditConfig::default(),
        rtds: RtdsMode::default(),
        arinc653: None,
    }
}

/// Deferrable Server with d1 (2/10 ms, priority 1) and d2 (4/20 ms, priority 2), both
/// busy, run to 5 ms; weights derived from the shares, as a scenario would.
fn system() -> (Machine, Domains) {
    let mut machine = Machine::new(MachineConfig::default(), PolicyConfig::Deferrable).unwrap();
    let mut domains = Domains::new(settings());
    for (name, budget, period, priority) in [("d1", 2, 10, 1), ("d2", 4, 20, 2)] {
        let params = VcpuParams {
            weight: rtvmm_core::model::credit_weight_from_share(ms(budget), ms(period)),
            ..VcpuParams::server(ms(budget), ms(period), priority)
        };
        let vcpu = join(&mut machine, &mut domains, name, params);
        machine.wake(Nanos::ZERO, vcpu);
    }
    run_to(&mut machine, ms(5));
    (machine, domains)
}

/// A domain of one VCPU and no tasks joins at time 0, through the change path.
fn join(machine: &mut Machine, domains: &mut Domains, name: &str, params: VcpuParams) -> VcpuId {
    let spec = DomainSpec {
        name: name.into(),
        vcpu: params,
        guest: rtvmm_core::guest::GuestScheduler::Rm,
        tasks: Vec::new(),
        placement: Default::default(),
    };
    let change = Change::AddDomain(spec);
    match domains.apply_change(machine, Nanos::ZERO, &change, &Default::default()) {
        Ok(change::Applied::Added { vcpus, .. }) => vcpus[0],
        other => panic!("{name}: {other:?}"),
    }
}

fn run_to(machine: &mut Machine, end: Nanos) {
    while machine.poll_timeout() <= end {
        let due = machine.poll_timeout().max(machine.now());
        machine.handle_timeout(due);
    }
    machine.advance(end);
}

fn command(line: &str) -> Command {
    Command::parse(line).unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// Every VCPU's parameters, the policy and its configuration: what a refusal must leave
/// untouched.
fn snapshot(machine: &Machine) -> (Vec<VcpuParams>, PolicyConfig, usize) {
    let params = (0..machine.vcpu_count())
        .map(|i| machine.params(VcpuId(i as u32)).clone())
        .collect();
    (
        params,
        machine.policy_config().clone(),
        machine.vcpu_count(),
    )
}

fn refusal(applied: &Applied) -> &str {
    match &applied.reply {
        Reply::Error {
            code: ErrorCode::Refused,
            message,
        } => {
            assert_eq!(applied.effect, Effect::None);
            message
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn sched_set_adjusts_the_vcpu() {
    let (mut machine, mut domains) = system();
    let d1 = domains.vcpu("d1").unwrap();
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(6),
        command(r#"{"v":1,"cmd":"sched-set","domain":"d1","budget":"3ms"}"#),
    );
    assert_eq!(applied.effect, Effect::Adjusted { index: 0 });
    assert_eq!(domains.vcpu("d1"), Some(d1));
    assert_eq!(machine.params(d1).budget, ms(3));
    assert_eq!(machine.params(d1).period, ms(10), "kept");
    assert_eq!(
        machine.params(d1).weight,
        3000,
        "a derived weight follows the share"
    );
    let Reply::Done { message } = &applied.reply else {
        panic!("{:?}", applied.reply)
    };
    assert_eq!(
        message,
        "d1: budget 2ms -> 3ms, weight 2000 -> 3000 (policy deferrable: from its next \
         replenishment; a remaining budget above the new budget is cut at once)"
    );
    // An explicit weight stays when the share changes next.
    apply(
        &mut machine,
        &mut domains,
        ms(6),
        command(r#"{"v":1,"cmd":"sched-set","domain":"d1","weight":100}"#),
    );
    apply(
        &mut machine,
        &mut domains,
        ms(7),
        command(r#"{"v":1,"cmd":"sched-set","domain":"d1","budget":"1ms"}"#),
    );
    assert_eq!(machine.params(d1).weight, 100);
    assert_eq!(machine.check_invariants(), Ok(()));
}

#[test]
fn budget_above_period_is_refused_with_the_policys_message_and_changes_nothing() {
    let (mut machine, mut domains) = system();
    let before = snapshot(&machine);
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(6),
        command(r#"{"v":1,"cmd":"sched-set","domain":"d1","budget":"12ms"}"#),
    );
    assert_eq!(
        refusal(&applied),
        "request: domain 'd1': vcpu: budget: 12ms is above the period 10ms (rejected by \
         policy deferrable)"
    );
    assert_eq!(snapshot(&machine), before);
}

#[test]
fn an_unknown_domain_is_refused_and_the_running_ones_named() {
    let (mut machine, mut domains) = system();
    let before = snapshot(&machine);
    for line in [
        r#"{"v":1,"cmd":"sched-set","domain":"d9","budget":"1ms"}"#,
        r#"{"v":1,"cmd":"remove-domain","domain":"d9"}"#,
        r#"{"v":1,"cmd":"sched-show","domain":"d9"}"#,
    ] {
        let applied = apply(&mut machine, &mut domains, ms(6), command(line));
        assert_eq!(
            refusal(&applied),
            "request: domain: no domain named 'd9' (running: d1, d2)"
        );
    }
    assert_eq!(snapshot(&machine), before);
}

#[test]
fn swap_policy_swaps_and_keeps_the_settings_it_was_given() {
    let (mut machine, mut domains) = system();
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(6),
        command(r#"{"v":1,"cmd":"swap-policy","policy":"rtds"}"#),
    );
    assert_eq!(
        applied.effect,
        Effect::Swapped {
            from: PolicyKind::Deferrable,
            to: PolicyKind::Rtds
        }
    );
    assert_eq!(machine.policy_kind(), PolicyKind::Rtds);
    assert_eq!(
        machine.policy_config(),
        &PolicyConfig::Rtds(RtdsMode::Event)
    );

    apply(
        &mut machine,
        &mut domains,
        ms(7),
        command(
            r#"{"v":1,"cmd":"swap-policy","policy":"credit","credit":{"tick":"1ms","ticks_per_slice":1}}"#,
        ),
    );
    let one_ms = CreditConfig {
        tick: ms(1),
        ticks_per_slice: 1,
        ticks_per_accounting: 3,
    };
    assert_eq!(machine.policy_config(), &PolicyConfig::Credit(one_ms));
    // Back to Credit later without settings: the ones given last time.
    apply(
        &mut machine,
        &mut domains,
        ms(8),
        command(r#"{"v":1,"cmd":"swap-policy","policy":"ds"}"#),
    );
    apply(
        &mut machine,
        &mut domains,
        ms(9),
        command(r#"{"v":1,"cmd":"swap-policy","policy":"credit"}"#),
    );
    assert_eq!(machine.policy_config(), &PolicyConfig::Credit(one_ms));
    run_to(&mut machine, ms(30));
    assert_eq!(machine.check_invariants(), Ok(()));
}

#[test]
fn a_swap_the_new_policy_refuses_changes_nothing() {
    let (mut machine, mut domains) = system();
    // RTDS needs budgets of at least 10 us.
    let d2 = domains.vcpu("d2").unwrap();
    machine
        .adjust(ms(5), d2, VcpuParams::server(Nanos::from_us(5), ms(20), 2))
        .unwrap();
    let before = snapshot(&machine);
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(6),
        command(r#"{"v":1,"cmd":"swap-policy","policy":"rtds"}"#),
    );
    assert_eq!(
        refusal(&applied),
        "request: domain 'd2': vcpu: budget: RTDS needs at least 10us (got 5us) (rejected by \
         policy rtds)"
    );
    assert_eq!(snapshot(&machine), before);

    let applied = apply(
        &mut machine,
        &mut domains,
        ms(6),
        command(r#"{"v":1,"cmd":"swap-policy","policy":"arinc653"}"#),
    );
    assert!(
        refusal(&applied).starts_with("request: policy: policy arinc653 needs its schedule table")
    );
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(6),
        command(
            r#"{"v":1,"cmd":"swap-policy","policy":"arinc653","major_frame":"10ms",
                "minor_frames":[{"domain":"d1","runtime":"2ms"},{"domain":"d7","runtime":"2ms"}]}"#,
        ),
    );
    assert_eq!(
        refusal(&applied),
        "request: minor_frames[2].domain: no domain named 'd7'"
    );
    assert_eq!(snapshot(&machine), before);
}

#[test]
fn arinc_tables_name_running_domains() {
    let (mut machine, mut domains) = system();
    domains.settings.arinc653 = Some(ArincTableSpec {
        major_frame: ms(10),
        minor_frames: vec![
            rtvmm_scenario::NamedMinorFrame {
                domain: "d2".into(),
                runtime: ms(4),
            },
            rtvmm_scenario::NamedMinorFrame {
                domain: "d1".into(),
                runtime: ms(2),
            },
        ],
    });
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(6),
        command(r#"{"v":1,"cmd":"swap-policy","policy":"arinc"}"#),
    );
    assert!(matches!(applied.reply, Reply::Done { .. }), "{applied:?}");
    let PolicyConfig::Arinc653(table) = machine.policy_config() else {
        panic!()
    };
    assert_eq!(table.minor_frames[0].vcpu, domains.vcpu("d2").unwrap());
}

#[test]
fn add_domain_adds_a_vcpu_and_names_are_never_reused() {
    let (mut machine, mut domains) = system();
    let add = r#"{"v":1,"cmd":"add-domain","domain":{"name":"d3",
        "vcpu":{"budget":"1ms","period":"5ms","priority":3},
        "task":[{"name":"t1","period":"10ms","wcet":"1ms"}]}}"#;
    let applied = apply(&mut machine, &mut domains, ms(6), command(add));
    let Effect::Added {
        index,
        vcpus,
        domain,
    } = &applied.effect
    else {
        panic!("{applied:?}")
    };
    assert_eq!((*index, vcpus.as_slice()), (2, [VcpuId(2)].as_slice()));
    assert_eq!(domain.tasks.len(), 1);
    assert_eq!(domains.vcpu("d3"), Some(VcpuId(2)));
    assert_eq!(machine.params(VcpuId(2)).budget, ms(1));
    assert_eq!(machine.domain_of(VcpuId(2)), rtvmm_core::model::DomainId(2));
    assert!(!machine.has_work(VcpuId(2)), "its guest starts it");
    assert_eq!(
        applied.reply,
        Reply::Done {
            message: "d3: added as VCPU 2 (1 task, guest rm; budget 1ms, period 5ms, \
                      priority 3)"
                .into()
        }
    );

    let before = snapshot(&machine);
    let applied = apply(&mut machine, &mut domains, ms(6), command(add));
    assert_eq!(
        refusal(&applied),
        "request: domain 'd3': domain.name: domain name 'd3' is used twice (domain names \
         are unique in a run, removed domains included)"
    );
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(6),
        command(
            r#"{"v":1,"cmd":"add-domain","domain":{"name":"d4","vcpu":{"budget":"6ms","period":"5ms","priority":3}}}"#,
        ),
    );
    assert_eq!(
        refusal(&applied),
        "request: domain 'd4': vcpu: budget: 6ms is above the period 5ms (rejected by policy \
         deferrable)"
    );
    assert_eq!(snapshot(&machine), before);
    assert_eq!(domains.vcpu("d4"), None);

    // Removed, then its name refused.
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(7),
        command(r#"{"v":1,"cmd":"remove-domain","domain":"d3"}"#),
    );
    assert_eq!(
        applied.effect,
        Effect::Removed {
            index: 2,
            vcpus: vec![VcpuId(2)],
            name: "d3".into()
        }
    );
    assert_eq!(domains.vcpu("d3"), None);
    let applied = apply(&mut machine, &mut domains, ms(8), command(add));
    assert!(refusal(&applied).contains("removed domains included"));
    run_to(&mut machine, ms(40));
    assert_eq!(machine.check_invariants(), Ok(()));
}

#[test]
fn sched_show_reads_parameters_and_live_figures() {
    let (mut machine, mut domains) = system();
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(5),
        command(r#"{"v":1,"cmd":"sched-show"}"#),
    );
    assert_eq!(applied.effect, Effect::None);
    let Reply::Show(show) = &applied.reply else {
        panic!("{applied:?}")
    };
    assert_eq!(show.policy, "deferrable");
    assert_eq!(show.as_of_ns, ms(5).as_ns());
    let names: Vec<&str> = show.domains.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(names, ["d1", "d2"]);
    let d1 = &show.domains[0];
    // DS: d1 ran 0-2 ms (its budget), d2 2-5 ms: at 5 ms d2 is running with 1 ms left.
    assert_eq!(
        (d1.budget_ns, d1.period_ns, d1.priority),
        (ms(2).as_ns(), ms(10).as_ns(), 1)
    );
    assert_eq!(d1.weight, 2000);
    assert_eq!(d1.run_ns, ms(2).as_ns());
    assert_eq!(d1.remaining_budget_ns, Some(0));
    assert!(d1.has_work && !d1.running);
    let d2 = &show.domains[1];
    assert_eq!(d2.run_ns, ms(3).as_ns());
    assert_eq!(d2.remaining_budget_ns, Some(ms(1).as_ns()));
    assert!(d2.running);
    assert_eq!((d2.jobs, d2.misses), (None, None));

    let applied = apply(
        &mut machine,
        &mut domains,
        ms(5),
        command(r#"{"v":1,"cmd":"sched-show","domain":"d2"}"#),
    );
    let Reply::Show(show) = &applied.reply else {
        panic!()
    };
    assert_eq!(show.domains.len(), 1);
}

#[test]
fn serve_skips_a_request_the_server_gave_up_on() {
    let (mut machine, mut domains) = system();
    let d1 = domains.vcpu("d1").unwrap();
    let (request, answer) = Request::new(command(
        r#"{"v":1,"cmd":"sched-set","domain":"d1","budget":"3ms"}"#,
    ));
    // What the server does when the executor is late.
    assert!(request.claim(), "the first claim wins");
    assert!(!request.claim(), "and only the first");
    let effect = serve(request, &mut machine, &mut domains, ms(6));
    assert_eq!(effect, Effect::None, "already claimed elsewhere: skipped");
    assert_eq!(machine.params(d1).budget, ms(2));
    assert!(answer.try_recv().is_err());

    let (request, answer) = Request::new(command(r#"{"v":1,"cmd":"sched-show"}"#));
    serve_with(request, &mut machine, &mut domains, ms(6), |show| {
        show.domains[0].jobs = Some(7);
    });
    let Reply::Show(show) = answer.try_recv().unwrap() else {
        panic!()
    };
    assert_eq!(show.domains[0].jobs, Some(7));
}

#[test]
fn an_instant_before_the_machines_is_taken_as_the_machines() {
    let (mut machine, mut domains) = system();
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(1),
        command(r#"{"v":1,"cmd":"sched-set","domain":"d2","priority":5}"#),
    );
    assert!(matches!(applied.reply, Reply::Done { .. }));
    assert_eq!(machine.now(), ms(5));
}

fn xl(line: &str) -> Command {
    command(&serde_json::json!({"v": 1, "cmd": "xl", "xl": line}).to_string())
}

fn message(applied: &Applied) -> &str {
    match &applied.reply {
        Reply::Done { message } => message,
        other => panic!("expected done, got {other:?}"),
    }
}

/// `xl sched-rtds` sets d1's budget (2 → 4 ms) through the simulator's rule; the period
/// is the same (10 ms), so only the budget is named. `sched-credit -w` sets d2's weight,
/// derived from its share before: 4 ms / 20 ms = 0.2 → 2000 (a share times 10000).
#[test]
fn xl_sched_rtds_and_sched_credit_set_the_domains_vcpu() {
    let (mut machine, mut domains) = system();
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(5),
        xl("xl sched-rtds -d d1 -v all -p 10000 -b 4000"),
    );
    assert_eq!(
        message(&applied),
        "d1: budget 2ms -> 4ms (from the next replenishment; a remaining budget above the \
         new budget is cut at once)"
    );
    assert_eq!(applied.effect, Effect::Adjusted { index: 0 });
    let p = machine.params(VcpuId(0));
    assert_eq!((p.budget, p.period), (ms(4), ms(10)));
    assert_eq!(machine.params(VcpuId(1)).budget, ms(4), "d2's own 4 ms");
    assert_eq!(machine.params(VcpuId(1)).period, ms(20), "d2 untouched");

    let applied = apply(
        &mut machine,
        &mut domains,
        ms(6),
        xl("sched-credit -d d2 -w 512"),
    );
    assert_eq!(message(&applied), "d2: weight 2000 -> 512");
    assert_eq!(machine.params(VcpuId(1)).weight, 512);

    // The values in force already: done, nothing named.
    let applied = apply(&mut machine, &mut domains, ms(7), xl("vcpu-pin d1 all 0"));
    assert_eq!(
        message(&applied),
        "unchanged: the command's values were in force already"
    );
}

/// What one pcpu cannot honour, what `xl`'s rule refuses and what the machine refuses:
/// each named, and the machine exactly as before (parameters, placement, pools).
#[test]
fn xl_commands_one_pcpu_cannot_honour_are_refused_and_change_nothing() {
    let (mut machine, mut domains) = system();
    let before = snapshot(&machine);
    let pools = |m: &Machine| {
        m.pools()
            .map(|(n, c, p)| (n.to_string(), c, p.kind()))
            .collect::<Vec<_>>()
    };
    let pools_before = pools(&machine);
    let one = "the host executor drives one pcpu (pcpu 0, on its managed cpu)";
    for (line, expected) in [
        (
            "vcpu-pin d1 0 1",
            format!(
                "request: `vcpu-pin d1 0 1`: CPUS: {one}: a VCPU pinned to pcpus 1 would never \
                 run here (pin to 0 or all); nothing changed"
            ),
        ),
        (
            "vcpu-pin d1 all 0-1",
            format!(
                "request: `vcpu-pin d1 all 0-1`: CPUS: {one}: a VCPU pinned to pcpus 0-1 would \
                 never run here (pin to 0 or all); nothing changed"
            ),
        ),
        (
            "cpupool-cpu-add Pool-0 1",
            format!(
                "request: `cpupool-cpu-add Pool-0 1`: CPU: {one}: pcpu 1 is not one it runs; \
                 nothing changed"
            ),
        ),
        (
            "sched-rtds -d nobody -p 10000 -b 4000",
            "request: `sched-rtds -d nobody -p 10000 -b 4000`: no domain named 'nobody'; \
             nothing changed"
                .to_string(),
        ),
        (
            "sched-rtds -d d1 -v 1 -p 10000 -b 4000",
            "request: `sched-rtds -d d1 -v 1 -p 10000 -b 4000`: domain 'd1' has no VCPU 1 \
             (it has 1); nothing changed"
                .to_string(),
        ),
        (
            "cpupool-cpu-remove Pool-0 0",
            "request: `cpupool-cpu-remove Pool-0 0`: cpupool 'Pool-0': removing pcpu 0 would \
             leave it without pcpus while it holds VCPUs; nothing changed"
                .to_string(),
        ),
    ] {
        let applied = apply(&mut machine, &mut domains, ms(5), xl(line));
        assert_eq!(refusal(&applied), expected, "{line}");
    }
    assert_eq!(snapshot(&machine), before);
    assert_eq!(pools(&machine), pools_before);
    for v in [VcpuId(0), VcpuId(1)] {
        assert_eq!(machine.placement(v), ("Pool-0", CpuSet::one(0)));
    }
}

/// A pool created at run time gets the run's settings and no pcpus; a domain cannot move
/// to it while it has none (the machine's refusal), nor to a pool of pcpus this executor
/// does not drive (here `rt` = {1} on a machine of two pcpus).
#[test]
fn xl_pools_are_created_and_a_migration_off_the_driven_pcpu_is_refused() {
    let (mut machine, mut domains) = system();
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(5),
        xl("cpupool-create spare sched=credit"),
    );
    assert_eq!(
        message(&applied),
        "cpupool 'spare' created (credit, pcpus none)"
    );
    assert_eq!(applied.effect, Effect::None);
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(5),
        xl("cpupool-migrate d1 spare"),
    );
    assert_eq!(
        refusal(&applied),
        "request: `cpupool-migrate d1 spare`: cpupool 'spare': it has no pcpus, so it cannot \
         hold domains; nothing changed"
    );

    let config = MachineConfig {
        pcpus: 2,
        ..MachineConfig::default()
    };
    let rtds = PolicyConfig::Rtds(RtdsMode::Event);
    let mut machine = Machine::with_pools(
        config,
        vec![
            rtvmm_core::machine::PoolSpec::new("Pool-0", CpuSet::one(0), rtds.clone()),
            rtvmm_core::machine::PoolSpec::new("rt", CpuSet::one(1), rtds),
        ],
    )
    .unwrap();
    let mut domains = Domains::new(settings());
    let vcpu = join(
        &mut machine,
        &mut domains,
        "d1",
        VcpuParams::server(ms(2), ms(10), 1),
    );
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(1),
        xl("cpupool-migrate d1 rt"),
    );
    assert_eq!(
        refusal(&applied),
        "request: `cpupool-migrate d1 rt`: POOL: the host executor drives one pcpu (pcpu 0, \
         on its managed cpu): cpupool 'rt' has pcpus 1, none of them pcpu 0; nothing changed"
    );
    assert_eq!(machine.placement(vcpu), ("Pool-0", CpuSet::one(0)));
}

/// A domain of two VCPUs through live control: added as two VCPUs, `sched-set` and
/// `sched-rtds` without `-v` reach both, `-v 1` only the second (named by its number in
/// the reply), `sched-show` has a line per VCPU, and removing it takes both.
#[test]
fn a_domain_of_two_vcpus_is_added_set_shown_and_removed_whole() {
    let (mut machine, mut domains) = system();
    let add = r#"{"v":1,"cmd":"add-domain","domain":{"name":"pair","vcpus":2,
        "smp":"partitioned","vcpu":{"budget":"1ms","period":"10ms","priority":3},
        "task":[{"name":"a","period":"10ms","wcet":"1ms","vcpu":0},
                {"name":"b","period":"10ms","wcet":"1ms","vcpu":1}]}}"#;
    let applied = apply(&mut machine, &mut domains, ms(6), command(add));
    assert!(
        message(&applied).starts_with("pair: added as VCPUs 2, 3 (2 tasks"),
        "{applied:?}"
    );
    let pair = [VcpuId(2), VcpuId(3)];
    assert_eq!(domains.vcpus("pair"), Some(pair.as_slice()));
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(7),
        command(r#"{"v":1,"cmd":"sched-set","domain":"pair","budget":"2ms"}"#),
    );
    assert_eq!(applied.effect, Effect::Adjusted { index: 2 });
    for v in pair {
        assert_eq!(machine.params(v).budget, ms(2));
    }
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(8),
        xl("sched-rtds -d pair -v 1 -p 20000 -b 5000"),
    );
    assert!(
        message(&applied).starts_with("pair vcpu 1: budget 2ms -> 5ms, period 10ms -> 20ms"),
        "{applied:?}"
    );
    assert_eq!(machine.params(pair[0]).budget, ms(2));
    assert_eq!(machine.params(pair[1]).budget, ms(5));
    assert_eq!(domains.spec(2).vcpu.budget, ms(2), "the spec has VCPU 0's");
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(8),
        command(r#"{"v":1,"cmd":"sched-show","domain":"pair"}"#),
    );
    let Reply::Show(show) = &applied.reply else {
        panic!("{applied:?}")
    };
    let lines: Vec<(&str, u32, u64)> = show
        .domains
        .iter()
        .map(|d| (d.name.as_str(), d.vcpu, d.budget_ns))
        .collect();
    assert_eq!(
        lines,
        [("pair", 2, ms(2).as_ns()), ("pair", 3, ms(5).as_ns())]
    );
    let applied = apply(
        &mut machine,
        &mut domains,
        ms(9),
        command(r#"{"v":1,"cmd":"remove-domain","domain":"pair"}"#),
    );
    assert_eq!(message(&applied), "pair: removed (VCPUs 2, 3)");
    assert_eq!(
        applied.effect,
        Effect::Removed {
            index: 2,
            vcpus: pair.to_vec(),
            name: "pair".into()
        }
    );
    assert_eq!(domains.vcpus("pair"), None);
    run_to(&mut machine, ms(40));
    assert_eq!(machine.check_invariants(), Ok(()));
}
