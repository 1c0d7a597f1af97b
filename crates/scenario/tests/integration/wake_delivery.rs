//! `[machine] wake_delivery`: what it reads, what it refuses (naming the field), and the
//! normalised form.

use rtvmm_core::wake::{WakeDelivery, WakeRandom};
use rtvmm_core::Nanos;
use rtvmm_scenario::{wake_delivery_preset, ErrorKind};

use crate::util::{assert_names, edit, error, parse, BASE};

/// BASE with `[machine] wake_delivery = VALUE`.
fn with(value: &str) -> String {
    edit(
        BASE,
        "seed = 3\n",
        &format!("seed = 3\n[machine]\nwake_delivery = {value}\n"),
    )
}

fn us(n: u64) -> Nanos {
    Nanos::from_us(n)
}

#[test]
fn off_unless_given_and_left_out_of_the_normalised_form() {
    let s = parse(BASE);
    assert_eq!(s.system.machine.wake_delivery, WakeDelivery::OFF);
    assert!(!s.to_toml().contains("wake_delivery"));
}

#[test]
fn a_fixed_and_an_exponential_part() {
    let s = parse(&with(
        r#"{ fixed = "5us", random = { dist = "exponential", mean = "3us" } }"#,
    ));
    let d = &s.system.machine.wake_delivery;
    assert_eq!(d.fixed, us(5));
    assert_eq!(d.random, WakeRandom::Exponential { mean: us(3) });
    // The normalised form reads back to the same.
    let again = parse(&s.to_toml());
    assert_eq!(&again.system.machine.wake_delivery, d);
}

#[test]
fn a_table_of_its_own_and_the_other_distributions() {
    let text = edit(
        BASE,
        "seed = 3\n",
        "seed = 3\n[machine.wake_delivery]\nrandom = { dist = \"uniform\", max = \"10us\" }\n",
    );
    let d = parse(&text).system.machine.wake_delivery;
    assert_eq!(
        (d.fixed, d.random),
        (Nanos::ZERO, WakeRandom::Uniform { max: us(10) })
    );
    let d = parse(&with(
        r#"{ random = { dist = "empirical", quantiles = ["2us", "3us", "40us"] } }"#,
    ))
    .system
    .machine
    .wake_delivery;
    assert_eq!(
        d.random,
        WakeRandom::Empirical {
            quantiles: vec![us(2), us(3), us(40)].into()
        }
    );
}

#[test]
fn a_preset_by_name() {
    let s = parse(&with("\"this-machine\""));
    let d = &s.system.machine.wake_delivery;
    assert_eq!(Some(d), wake_delivery_preset("this-machine").as_ref());
    assert_eq!(d.preset, Some("this-machine"));
    assert!(matches!(d.random, WakeRandom::Empirical { .. }));
    // The normalised form names the preset, and reads back to it.
    assert!(s.to_toml().contains("wake_delivery = \"this-machine\"\n"));
    assert_eq!(&parse(&s.to_toml()).system.machine.wake_delivery, d);
}

#[test]
fn an_unknown_preset_is_refused_with_the_known_ones() {
    let e = error(&with("\"that-machine\""));
    assert!(matches!(e.kind, ErrorKind::UnknownName { .. }), "{e}");
    assert_names(&e, None, None, Some("wake_delivery"));
    assert_eq!(
        e.to_string(),
        "bad.toml: [machine]: wake_delivery: unknown wake delivery preset 'that-machine': \
         expected one of this-machine"
    );
}

#[test]
fn an_unknown_distribution_is_refused_naming_the_field() {
    let e = error(&with(r#"{ random = { dist = "gamma", mean = "3us" } }"#));
    assert!(matches!(e.kind, ErrorKind::UnknownName { .. }), "{e}");
    assert_names(&e, None, None, Some("wake_delivery.random.dist"));
    assert!(
        e.to_string().ends_with(
            "unknown distribution 'gamma': expected one of exponential, uniform, empirical"
        ),
        "{e}"
    );
}

#[test]
fn negative_bare_and_missing_times_are_refused_naming_the_field() {
    let e = error(&with(r#"{ fixed = "-5us" }"#));
    assert!(matches!(e.kind, ErrorKind::Time(_)), "{e}");
    assert_names(&e, None, None, Some("wake_delivery.fixed"));
    assert!(e.to_string().contains("negative"), "{e}");

    let e = error(&with(r#"{ random = { dist = "exponential", mean = 3 } }"#));
    assert!(matches!(e.kind, ErrorKind::BareNumber { .. }), "{e}");
    assert_names(&e, None, None, Some("wake_delivery.random.mean"));

    let e = error(&with(r#"{ random = { dist = "exponential" } }"#));
    assert!(matches!(e.kind, ErrorKind::Missing), "{e}");
    assert_names(&e, None, None, Some("wake_delivery.random.mean"));

    let e = error(&with(
        r#"{ random = { dist = "empirical", quantiles = ["1us", "x"] } }"#,
    ));
    assert_names(&e, None, None, Some("wake_delivery.random.quantiles[1]"));
}

#[test]
fn unknown_keys_zero_means_large_and_decreasing_values_are_refused() {
    let e = error(&with(r#"{ fxed = "5us" }"#));
    assert_names(&e, None, None, Some("wake_delivery.fxed"));
    assert!(
        e.to_string()
            .ends_with("unknown key: expected fixed, random"),
        "{e}"
    );

    let e = error(&with(r#"{ random = { dist = "uniform", mean = "5us" } }"#));
    assert_names(&e, None, None, Some("wake_delivery.random.mean"));

    let e = error(&with(
        r#"{ random = { dist = "exponential", mean = "0us" } }"#,
    ));
    assert!(
        e.to_string()
            .contains("random.mean: must be greater than 0"),
        "{e}"
    );

    let e = error(&with(r#"{ fixed = "2s" }"#));
    assert!(
        e.to_string()
            .ends_with("wake_delivery: fixed: 2s is above the limit of 1s for a wake delivery"),
        "{e}"
    );

    let e = error(&with(
        r#"{ random = { dist = "empirical", quantiles = ["3us", "2us"] } }"#,
    ));
    assert!(e.to_string().contains("quantile 1 (2us) is below"), "{e}");

    let e = error(&with("5"));
    assert_names(&e, None, None, Some("wake_delivery"));
}
