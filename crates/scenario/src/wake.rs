//! `[machine] wake_delivery`: reading a wake delivery latency ([`WakeDelivery`]) from a
//! scenario file or a preset file, and the presets shipped with rtvmm.
//!
//! Both forms are the same keys (`docs/scenario.md`, "`wake_delivery`"):
//! ```toml
//! fixed = "5us"                                        # default "0ns"
//! random = { dist = "exponential", mean = "3us" }      # or "uniform" with `max`, or
//!                                                      # "empirical" with `quantiles`
//! ```
//! A scenario writes them as `wake_delivery = { … }` (or `[machine.wake_delivery]`), or
//! names a preset: `wake_delivery = "this-machine"`. A preset file — what `rtvmm bench
//! wake --write-preset` writes — is those keys alone, at the top of the file.

use std::sync::Arc;

use rtvmm_core::time::TimeParseError;
use rtvmm_core::wake::{WakeDelivery, WakeRandom};
use rtvmm_core::Nanos;

use crate::error::ErrorKind;

/// The presets shipped with rtvmm: (name, the preset file's text). Each was measured on
/// the machine it is named after; its file says when, how, and what it measured.
pub const WAKE_DELIVERY_PRESETS: &[(&str, &str)] = &[(
    "this-machine",
    include_str!("../presets/wake-delivery/this-machine.toml"),
)];

/// The shipped preset `name` ([`WAKE_DELIVERY_PRESETS`]), or `None` when there is none of
/// that name. The latency experiments use it as
/// `MachineConfig { wake_delivery: wake_delivery_preset("this-machine").unwrap(), .. }`.
pub fn wake_delivery_preset(name: &str) -> Option<WakeDelivery> {
    let (name, text) = WAKE_DELIVERY_PRESETS.iter().find(|(n, _)| *n == name)?;
    let value: toml::Value = text.parse().expect("a shipped preset is valid TOML");
    let mut delivery = wake_delivery_from_value(&value)
        .unwrap_or_else(|(field, e)| panic!("shipped preset '{name}': {field}: {e}"));
    delivery.preset = Some(name);
    Some(delivery)
}

/// The names of the shipped presets, for messages.
pub fn wake_delivery_preset_names() -> String {
    WAKE_DELIVERY_PRESETS
        .iter()
        .map(|(n, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A preset file's text (or a `wake_delivery` table written out) as a [`WakeDelivery`].
/// An error names the field (`random.mean`) and what is wrong.
pub fn parse_wake_delivery(text: &str) -> Result<WakeDelivery, String> {
    let value: toml::Value = text.parse().map_err(|e: toml::de::Error| {
        format!("not a TOML table of fixed and random: {}", e.message())
    })?;
    wake_delivery_from_value(&value).map_err(|(field, e)| format!("{field}: {e}"))
}

/// Which `wake_delivery` a value gives: a preset's name, or a table of `fixed` and
/// `random`. On error: the field, dotted below `wake_delivery` (empty for the value
/// itself), and what is wrong.
pub(crate) fn wake_delivery_from_value(
    value: &toml::Value,
) -> Result<WakeDelivery, (String, ErrorKind)> {
    let at = |field: &str| field.to_string();
    let table = match value {
        toml::Value::String(name) => {
            return wake_delivery_preset(name.trim()).ok_or_else(|| {
                (
                    at(""),
                    ErrorKind::UnknownName {
                        what: "wake delivery preset",
                        name: name.clone(),
                        expected: wake_delivery_preset_names(),
                    },
                )
            })
        }
        toml::Value::Table(table) => table,
        other => {
            return Err((
                at(""),
                ErrorKind::Invalid(format!(
                    "expected a preset's name (\"this-machine\") or a table such as \
                     {{ fixed = \"5us\", random = {{ dist = \"exponential\", mean = \"3us\" }} }}, \
                     found a {}",
                    other.type_str()
                )),
            ))
        }
    };
    only_keys(table, &["fixed", "random"], "")?;
    let fixed = match table.get("fixed") {
        None => Nanos::ZERO,
        Some(v) => time(v).map_err(|e| (at("fixed"), e))?,
    };
    let random = match table.get("random") {
        None => WakeRandom::None,
        Some(v) => random(v)?,
    };
    WakeDelivery::new(fixed, random).map_err(|e| (at(""), ErrorKind::Invalid(e.to_string())))
}

/// `random = { dist = …, … }`.
fn random(value: &toml::Value) -> Result<WakeRandom, (String, ErrorKind)> {
    let at = |field: &str| format!("random.{field}");
    let Some(table) = value.as_table() else {
        return Err((
            "random".to_string(),
            ErrorKind::Invalid(format!(
                "expected a table such as {{ dist = \"exponential\", mean = \"3us\" }}, found a {}",
                value.type_str()
            )),
        ));
    };
    const DISTS: &str = "exponential, uniform, empirical";
    let dist = match table.get("dist") {
        None => return Err((at("dist"), ErrorKind::Missing)),
        Some(toml::Value::String(s)) => s.trim().to_ascii_lowercase(),
        Some(other) => {
            return Err((
                at("dist"),
                ErrorKind::Invalid(format!(
                    "expected one of {DISTS} as a string, found a {}",
                    other.type_str()
                )),
            ))
        }
    };
    let required_time = |key: &str| match table.get(key) {
        None => Err((at(key), ErrorKind::Missing)),
        Some(v) => time(v).map_err(|e| (at(key), e)),
    };
    match dist.as_str() {
        "exponential" => {
            only_keys(table, &["dist", "mean"], "random.")?;
            Ok(WakeRandom::Exponential {
                mean: required_time("mean")?,
            })
        }
        "uniform" => {
            only_keys(table, &["dist", "max"], "random.")?;
            Ok(WakeRandom::Uniform {
                max: required_time("max")?,
            })
        }
        "empirical" => {
            only_keys(table, &["dist", "quantiles"], "random.")?;
            let items = match table.get("quantiles") {
                None => return Err((at("quantiles"), ErrorKind::Missing)),
                Some(toml::Value::Array(items)) => items,
                Some(other) => {
                    return Err((
                        at("quantiles"),
                        ErrorKind::Invalid(format!(
                            "expected a list of times, least first, found a {}",
                            other.type_str()
                        )),
                    ))
                }
            };
            let quantiles = items
                .iter()
                .enumerate()
                .map(|(i, v)| time(v).map_err(|e| (format!("random.quantiles[{i}]"), e)))
                .collect::<Result<Vec<Nanos>, _>>()?;
            Ok(WakeRandom::Empirical {
                quantiles: Arc::from(quantiles),
            })
        }
        _ => Err((
            at("dist"),
            ErrorKind::UnknownName {
                what: "distribution",
                name: dist,
                expected: DISTS.to_string(),
            },
        )),
    }
}

/// Refuses a key of `table` not in `keys`, naming it (`prefix` dotted before it).
fn only_keys(
    table: &toml::map::Map<String, toml::Value>,
    keys: &[&str],
    prefix: &str,
) -> Result<(), (String, ErrorKind)> {
    match table.keys().find(|k| !keys.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err((
            format!("{prefix}{k}"),
            ErrorKind::Invalid(format!("unknown key: expected {}", keys.join(", "))),
        )),
    }
}

/// A time written as a string with its unit, as every time of a scenario.
fn time(value: &toml::Value) -> Result<Nanos, ErrorKind> {
    match value {
        toml::Value::String(text) => text.parse().map_err(|e| match e {
            TimeParseError::MissingUnit(value) => ErrorKind::BareNumber { value },
            other => ErrorKind::Time(other),
        }),
        toml::Value::Integer(i) => Err(ErrorKind::BareNumber {
            value: i.to_string(),
        }),
        toml::Value::Float(x) => Err(ErrorKind::BareNumber {
            value: x.to_string(),
        }),
        other => Err(ErrorKind::NotATime {
            found: format!("a {}", other.type_str()),
        }),
    }
}

/// The `wake_delivery` value of the normalised form: the preset's name, or the table on
/// one line. `None` when delivery is off (the key is then left out, as before it existed).
pub(crate) fn wake_delivery_toml(delivery: &WakeDelivery) -> Option<String> {
    if delivery.is_off() {
        return None;
    }
    if let Some(name) = delivery.preset {
        return Some(toml::Value::String(name.to_string()).to_string());
    }
    let q = |t: Nanos| format!("\"{t}\"");
    let random = match &delivery.random {
        WakeRandom::None => None,
        WakeRandom::Exponential { mean } => {
            Some(format!("{{ dist = \"exponential\", mean = {} }}", q(*mean)))
        }
        WakeRandom::Uniform { max } => Some(format!("{{ dist = \"uniform\", max = {} }}", q(*max))),
        WakeRandom::Empirical { quantiles } => Some(format!(
            "{{ dist = \"empirical\", quantiles = [{}] }}",
            quantiles
                .iter()
                .map(|&t| q(t))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    };
    Some(match random {
        None => format!("{{ fixed = {} }}", q(delivery.fixed)),
        Some(r) => format!("{{ fixed = {}, random = {r} }}", q(delivery.fixed)),
    })
}

/// A preset file for `quantiles` (evenly spaced probabilities, least first), with
/// `comment` lines (each written after `# `) at its top: what `rtvmm bench wake
/// --write-preset` writes, and what [`parse_wake_delivery`] and a shipped preset read.
pub fn wake_delivery_preset_file(comment: &[String], quantiles: &[Nanos]) -> String {
    let mut out = String::new();
    for line in comment {
        out.push_str(&format!("# {line}\n").replace("# \n", "#\n"));
    }
    out.push_str("fixed = \"0ns\"\n\n[random]\ndist = \"empirical\"\n");
    out.push_str(&format!(
        "# {} quantiles at evenly spaced probabilities, from the least (p0) to the largest (p100)\n",
        quantiles.len()
    ));
    out.push_str("quantiles = [\n");
    for row in quantiles.chunks(8) {
        let cells: Vec<String> = row.iter().map(|t| format!("\"{t}\"")).collect();
        out.push_str(&format!("    {},\n", cells.join(", ")));
    }
    out.push_str("]\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Nanos {
        Nanos::from_us(n)
    }

    #[test]
    fn every_shipped_preset_reads_and_is_named() {
        for (name, _) in WAKE_DELIVERY_PRESETS {
            let d = wake_delivery_preset(name).expect("listed");
            assert_eq!(d.preset, Some(*name));
            assert!(!d.is_off(), "preset {name} delivers at once");
        }
        assert!(wake_delivery_preset("nowhere").is_none());
    }

    #[test]
    fn a_preset_file_reads_back_to_its_quantiles() {
        let quantiles = vec![us(3), us(4), Nanos(4_500), us(9), us(40)];
        let text = wake_delivery_preset_file(&["measured here".to_string()], &quantiles);
        let d = parse_wake_delivery(&text).unwrap();
        assert_eq!(d.fixed, Nanos::ZERO);
        assert_eq!(
            d.random,
            WakeRandom::Empirical {
                quantiles: quantiles.into()
            }
        );
        // And the normalised form of it reads back to the same.
        let inline = wake_delivery_toml(&d).unwrap();
        let value: toml::Value = format!("w = {inline}").parse().unwrap();
        assert_eq!(wake_delivery_from_value(&value["w"]).unwrap(), d);
    }
}
