//! Every request read or refused: one test per kind of input, each asserting the whole
//! message (it names the field and what is wrong).

use super::*;
use rtvmm_core::policy::PolicyKind;
use rtvmm_core::Nanos;

fn refused(line: &str) -> String {
    Command::parse(line).expect_err(line).to_string()
}

#[test]
fn malformed_lines_are_refused_before_any_command_is_read() {
    assert_eq!(
        refused("{\"v\":1,"),
        "not JSON: EOF while parsing a value at line 1 column 7"
    );
    assert_eq!(
        refused("[1,2]"),
        "expected a JSON object such as {\"v\":1,\"cmd\":\"sched-show\"}, found an array"
    );
    assert_eq!(
        refused(r#"{"cmd":"sched-show"}"#),
        "v: missing (required): the protocol version, 1"
    );
    assert_eq!(
        refused(r#"{"v":2,"cmd":"sched-show"}"#),
        "v: protocol version 2 is not spoken here (this build speaks 1)"
    );
    assert_eq!(
        refused(r#"{"v":"1","cmd":"sched-show"}"#),
        "v: protocol version \"1\" is not spoken here (this build speaks 1)"
    );
    assert_eq!(
        refused(r#"{"v":1}"#),
        "cmd: missing (required): one of sched-show, sched-set, swap-policy, add-domain, \
         remove-domain, xl"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"destroy"}"#),
        "cmd: unknown command 'destroy': expected one of sched-show, sched-set, swap-policy, \
         add-domain, remove-domain, xl"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":7}"#),
        "cmd: expected a command name (a string), found a number"
    );
}

#[test]
fn sched_show_takes_an_optional_domain() {
    assert_eq!(
        Command::parse(r#"{"v":1,"cmd":"sched-show"}"#).unwrap(),
        Command::SchedShow { domain: None }
    );
    assert_eq!(
        Command::parse(r#"{"v":1,"cmd":"SCHED-SHOW","domain":"d1"}"#).unwrap(),
        Command::SchedShow {
            domain: Some("d1".into())
        }
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"sched-show","budget":"1ms"}"#),
        "budget: not used here: sched-show takes domain"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"sched-show","domain":3}"#),
        "domain: expected a domain name (a string), found a number"
    );
}

#[test]
fn sched_set_reads_times_with_units_and_every_vcpu_key() {
    let command = Command::parse(
        r#"{"v":1,"cmd":"sched-set","domain":"d1","budget":"2.5ms","period":"10ms",
            "priority":2,"weight":512,"cap":50,"extratime":true,"max_replenishments":4}"#,
    )
    .unwrap();
    let Command::SchedSet(update) = command else {
        panic!("{command:?}")
    };
    assert_eq!(update.domain, "d1");
    assert_eq!(update.budget, Some(Nanos(2_500_000)));
    assert_eq!(update.period, Some(Nanos::from_ms(10)));
    assert_eq!(update.priority, Some(2));
    assert_eq!(update.weight, Some(512));
    assert_eq!(update.cap, Some(50));
    assert_eq!(update.extratime, Some(true));
    assert_eq!(update.max_replenishments, Some(4));
    assert!(Command::SchedSet(update).changes_anything());
}

#[test]
fn sched_set_refuses_bad_times_and_missing_or_unknown_fields() {
    assert_eq!(
        refused(r#"{"v":1,"cmd":"sched-set","domain":"d1","budget":"3"}"#),
        "request: domain 'd1': budget: 3 is a bare number: write times as a string with a \
         unit (ns, us, ms, s), for example \"10ms\""
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"sched-set","domain":"d1","budget":3000}"#),
        "request: domain 'd1': budget: 3000 is a bare number: write times as a string with \
         a unit (ns, us, ms, s), for example \"10ms\""
    );
    assert!(
        refused(r#"{"v":1,"cmd":"sched-set","domain":"d1","period":"10 parsecs"}"#)
            .starts_with("request: domain 'd1': period: "),
        "a unit it does not know"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"sched-set","domain":"d1","period":"0ms"}"#),
        "request: domain 'd1': period: must be greater than 0"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"sched-set","budget":"3ms"}"#),
        "request: domain: missing (required)"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"sched-set","domain":"","budget":"3ms"}"#),
        "request: domain: must not be empty"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"sched-set","domain":"d1","budgte":"3ms"}"#),
        "request: unknown key `budgte`, expected one of `at`, `action`, `domain`, `policy`, \
         `budget`, `period`, `priority`, `weight`, `cap`, `extratime`, `max_replenishments`, `xl`"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"sched-set","domain":"d1","cap":-5}"#),
        "request: domain 'd1': cap: -5 is out of range: a whole number from 0 to 4294967295"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"sched-set","domain":"d1","budget":null}"#),
        "budget: null is not a value: leave the key out"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"sched-set","domain":"d1","action":"swap-policy"}"#),
        "action: not used here: the command is `cmd`"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"sched-set","domain":"d1","at":"1s"}"#),
        "request: at: not used here: a live command acts at once"
    );
}

/// Budget above period is the policy's to refuse (Credit reads neither): the request
/// reads, and `apply` refuses it with the core's message (see `apply`'s tests).
#[test]
fn budget_above_period_is_left_to_the_policy() {
    let command = Command::parse(
        r#"{"v":1,"cmd":"sched-set","domain":"d1","budget":"20ms","period":"10ms"}"#,
    )
    .unwrap();
    assert!(matches!(command, Command::SchedSet(_)));
}

#[test]
fn swap_policy_reads_names_aliases_and_scheduler_settings() {
    let command = Command::parse(r#"{"v":1,"cmd":"swap-policy","policy":"ptps"}"#).unwrap();
    let Command::SwapPolicy(change) = command else {
        panic!("{command:?}")
    };
    assert_eq!(change.kind, PolicyKind::Periodic);
    let command =
        Command::parse(r#"{"v":1,"cmd":"swap-policy","policy":"rtds","rtds":{"mode":"quantum"}}"#)
            .unwrap();
    let Command::SwapPolicy(change) = command else {
        panic!("{command:?}")
    };
    assert_eq!(change.rtds, Some(rtvmm_core::policy::RtdsMode::Quantum));
    let error = refused(r#"{"v":1,"cmd":"swap-policy","policy":"fifo"}"#);
    assert!(
        error.starts_with(
            "request: policy: unknown policy 'fifo': expected one of deferrable (ds),"
        ),
        "{error}"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"swap-policy"}"#),
        "request: policy: missing (required)"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"swap-policy","policy":"credit","credit":{"tick":"0ms"}}"#),
        "request: credit.tick: must be greater than 0"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"swap-policy","policy":"arinc","major_frame":"10ms"}"#),
        "request: minor_frames: missing (required)"
    );
}

#[test]
fn add_domain_reads_a_domain_table_with_its_tasks() {
    let command = Command::parse(
        r#"{"v":1,"cmd":"add-domain","domain":{"name":"d3","guest":"edf",
            "vcpu":{"budget":"2ms","period":"10ms","priority":3},
            "task":[{"name":"t1","period":"20ms","wcet":"1ms"}]}}"#,
    )
    .unwrap();
    let Command::AddDomain(spec) = command else {
        panic!("{command:?}")
    };
    assert_eq!(spec.name, "d3");
    assert_eq!(spec.vcpu.budget, Nanos::from_ms(2));
    assert_eq!(spec.vcpu.priority, 3);
    assert_eq!(spec.vcpu.weight, 2000, "derived from the share");
    assert_eq!(spec.tasks.len(), 1);
    assert_eq!(spec.tasks[0].wcet, Nanos::from_ms(1));

    assert_eq!(
        refused(
            r#"{"v":1,"cmd":"add-domain","domain":{"name":"d3","vcpu":{"budget":"2ms","period":"10ms"}}}"#
        ),
        "request: domain 'd3': vcpu.priority: missing: a domain added to a running system \
         needs a priority (smaller is higher), as the running domains are not re-ranked"
    );
    assert_eq!(
        refused(
            r#"{"v":1,"cmd":"add-domain","domain":{"name":"d3","vcpu":{"budget":"2ms","period":"10ms","priority":1},
                "task":[{"name":"t1","period":"20ms"}]}}"#
        ),
        "request: domain 'd3', task 't1': wcet: missing (required)"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"add-domain","domain":"d3"}"#),
        "request: domain: expected a domain table ({ name = \"..\", vcpu = { .. }, task = \
         [..] }), found a string"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"add-domain"}"#),
        "request: domain: missing (required)"
    );
}

#[test]
fn remove_domain_takes_a_name() {
    assert_eq!(
        Command::parse(r#"{"v":1,"cmd":"remove-domain","domain":"d2"}"#).unwrap(),
        Command::RemoveDomain {
            domain: "d2".into()
        }
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"remove-domain","domain":{"name":"d2"}}"#),
        "request: domain: expected a domain name (a string), found a table"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"remove-domain"}"#),
        "request: domain: missing (required)"
    );
}

#[test]
fn request_builds_what_parse_reads() {
    let mut fields = Map::new();
    fields.insert("domain".into(), "d1".into());
    fields.insert("budget".into(), "3ms".into());
    let value = request("sched-set", fields);
    let expected: Value =
        serde_json::from_str(r#"{"v":1,"cmd":"sched-set","domain":"d1","budget":"3ms"}"#).unwrap();
    assert_eq!(value, expected);
    assert!(matches!(
        Command::from_json(&value).unwrap(),
        Command::SchedSet(_)
    ));
}

#[test]
fn replies_round_trip_and_say_their_version() {
    let replies = [
        Reply::Done {
            message: "d1: budget 2ms -> 3ms".into(),
        },
        Reply::error(ErrorCode::NotPermitted, "not permitted"),
        Reply::Show(SchedShow {
            policy: "rtds".into(),
            as_of_ns: 5,
            domains: vec![],
        }),
    ];
    for reply in replies {
        let line = reply.to_line();
        assert!(line.starts_with("{\"v\":1,\"status\":"), "{line}");
        assert!(line.ends_with('\n') && !line.trim_end().contains('\n'));
        assert_eq!(Reply::parse(&line).unwrap(), reply);
    }
    assert_eq!(
        Reply::error(ErrorCode::BadRequest, "x").to_line(),
        "{\"v\":1,\"status\":\"error\",\"code\":\"bad-request\",\"message\":\"x\"}\n"
    );
    assert_eq!(
        Reply::parse(r#"{"v":2,"status":"done","message":"x"}"#)
            .unwrap_err()
            .to_string(),
        "the executor speaks protocol version 2; this client speaks 1"
    );
}

#[test]
fn an_xl_request_is_read_by_xls_own_reader() {
    let command =
        Command::parse(r#"{"v":1,"cmd":"xl","xl":"xl sched-rtds -d d1 -v all -p 10000 -b 4000"}"#)
            .unwrap();
    assert_eq!(
        command,
        Command::Xl(rtvmm_core::xl::XlCommand::SchedRtds {
            domain: "d1".into(),
            vcpu: rtvmm_core::xl::VcpuSel::All,
            period_us: 10_000,
            budget_us: 4_000,
            extratime: None,
        })
    );
    assert_eq!(command.name(), "xl");
    assert!(command.changes_anything());
    assert!(matches!(
        Command::parse(r#"{"v":1,"cmd":"XL","xl":"vcpu-pin web all 0"}"#),
        Ok(Command::Xl(rtvmm_core::xl::XlCommand::VcpuPin { .. }))
    ));
}

#[test]
fn a_malformed_xl_request_is_refused_naming_the_argument() {
    assert_eq!(
        refused(r#"{"v":1,"cmd":"xl"}"#),
        "xl: missing (required): an xl command line such as \"sched-rtds -d d1 -p 10000 -b \
         4000\""
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"xl","xl":["sched-rtds"]}"#),
        "xl: expected an xl command line (a string), found an array"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"xl","xl":"sched-credit -d d1 -w 5","domain":"d1"}"#),
        "domain: not used here: xl takes xl (the command line)"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"xl","xl":"sched-rtds -d d1 -p 1000 -b 4000"}"#),
        "xl: sched-rtds: -b: the budget 4000us is above the period 1000us"
    );
    assert_eq!(
        refused(r#"{"v":1,"cmd":"xl","xl":"sched-rtds -d d1 -p 10000 -b 4000 -x 1"}"#),
        "xl: sched-rtds: unknown option '-x' (usage: sched-rtds -d DOMAIN [-v VCPU|all] -p \
         PERIOD_US -b BUDGET_US [-e 0|1])"
    );
    assert!(refused(r#"{"v":1,"cmd":"xl","xl":"destroy web"}"#)
        .starts_with("xl: unknown command 'destroy': expected one of cpupool-create,"),);
}
