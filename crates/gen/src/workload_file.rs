//! A partitioned workload as a TOML file — how to run the real avionics tables.
//!
//! ```toml
//! name = "flight-control"              # optional
//! description = "from Table 3 of …"    # optional
//!
//! [[partition]]
//! name = "p1"                          # optional, default p<k>
//! period = "25ms"                      # the partition's fixed period
//! tasks = [
//!   { name = "nav", period = "25ms", wcet = "1.2ms" },   # name optional, default p1_t<i>
//!   { period = "50ms", wcet = "800us" },
//! ]
//!
//! [[partition]]
//! period = "50ms"
//! [[partition.tasks]]                  # the table form works too
//! period = "100ms"
//! wcet = "3ms"
//! ```
//!
//! Times are strings with a unit (`ns`, `us`, `ms`, `s`), parsed exactly by
//! [`Nanos::from_str`]; a bare number is an error, never a guess. Every task's deadline is
//! its period. Unknown keys are errors (a misspelt `wcte` does not vanish).
//!
//! [`parse_workload`] never panics; its errors give the line and the field:
//! `line 7: partition[1].tasks[2].wcet: '1.5ns' is not a whole number of nanoseconds`.
//! Indices are 1-based. Periods need not be harmonic (use
//! [`crate::arinc::is_harmonic_workload`] to check); the analysis is exact when they are.

use crate::{GenDomain, GenError, GenSystem, GenTask};
use rtvmm_core::words::{serde_message_in_words, Notation};
use rtvmm_core::Nanos;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::ops::Range;
use std::str::FromStr;
use toml::{Spanned, Value};

/// Why a workload file was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WorkloadFileError {
    /// Not TOML, or a table with a missing or unknown key (the message names it). `line`
    /// and `column` are 1-based, 0 when the parser gave no position.
    #[error("line {line}, column {column}: {message}")]
    Syntax {
        line: usize,
        column: usize,
        message: String,
    },
    /// A value is present but wrong. `field` is a path such as
    /// `partition[2].tasks[1].wcet` (1-based indices).
    #[error("line {line}: {field}: {problem}")]
    Field {
        line: usize,
        field: String,
        problem: String,
    },
    /// The file has no `[[partition]]` table.
    #[error("the workload has no partitions: add at least one [[partition]] table")]
    NoPartitions,
}

// `expecting`: a value of the wrong shape is described in words, not by its Rust type.
#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a workload: name, description and [[partition]] tables"
)]
struct RawWorkload {
    name: Option<Spanned<Value>>,
    description: Option<Spanned<Value>>,
    #[serde(default)]
    partition: Vec<Spanned<RawPartition>>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a partition table with name, period and tasks"
)]
struct RawPartition {
    name: Option<Spanned<Value>>,
    period: Spanned<Value>,
    #[serde(default)]
    tasks: Vec<Spanned<RawTask>>,
}

#[derive(Deserialize)]
#[serde(
    deny_unknown_fields,
    expecting = "a task table such as { period = \"25ms\", wcet = \"1ms\" }"
)]
struct RawTask {
    name: Option<Spanned<Value>>,
    period: Spanned<Value>,
    wcet: Spanned<Value>,
}

/// Byte offset → 1-based (line, column in characters).
fn position(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset.min(text.len())).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before
        .rsplit('\n')
        .next()
        .map_or(0, |last| last.chars().count())
        + 1;
    (line, column)
}

struct Reader<'a> {
    text: &'a str,
}

impl Reader<'_> {
    fn line(&self, span: Range<usize>) -> usize {
        position(self.text, span.start).0
    }

    fn field_error(&self, span: Range<usize>, field: String, problem: String) -> WorkloadFileError {
        WorkloadFileError::Field {
            line: self.line(span),
            field,
            problem,
        }
    }

    fn string(&self, value: &Spanned<Value>, field: &str) -> Result<String, WorkloadFileError> {
        match value.get_ref() {
            Value::String(text) if !text.trim().is_empty() => Ok(text.trim().to_string()),
            Value::String(_) => {
                Err(self.field_error(value.span(), field.to_string(), "is empty".into()))
            }
            other => Err(self.field_error(
                value.span(),
                field.to_string(),
                format!("expected a string, found {} {other}", other.type_str()),
            )),
        }
    }

    fn time(&self, value: &Spanned<Value>, field: &str) -> Result<Nanos, WorkloadFileError> {
        let fail = |problem: String| self.field_error(value.span(), field.to_string(), problem);
        let text = match value.get_ref() {
            Value::String(text) => text,
            Value::Integer(n) => {
                return Err(fail(format!(
                    "{n} has no unit: write it as a string with one, e.g. \"{n}ms\""
                )))
            }
            other => {
                return Err(fail(format!(
                    "expected a time such as \"25ms\", found {} {other}",
                    other.type_str()
                )))
            }
        };
        let time = Nanos::from_str(text).map_err(|error| fail(error.to_string()))?;
        if time.is_zero() {
            return Err(fail("must be positive".into()));
        }
        Ok(time)
    }
}

/// Reads a workload file (format in the module note) into a [`GenSystem`] whose domains
/// are the partitions, each with `fixed_period = Some(period)`.
pub fn parse_workload(text: &str) -> Result<GenSystem, WorkloadFileError> {
    let raw: RawWorkload = toml::from_str(text).map_err(|error| {
        let (line, column) = error
            .span()
            .map_or((0, 0), |span| position(text, span.start));
        WorkloadFileError::Syntax {
            line,
            column,
            message: serde_message_in_words(error.message().trim(), Notation::Toml),
        }
    })?;
    let reader = Reader { text };
    if raw.partition.is_empty() {
        return Err(WorkloadFileError::NoPartitions);
    }

    let mut partition_names = BTreeSet::new();
    let mut domains = Vec::with_capacity(raw.partition.len());
    for (p_index, spanned_partition) in raw.partition.iter().enumerate() {
        let p_path = format!("partition[{}]", p_index + 1);
        let partition = spanned_partition.get_ref();
        let name = match &partition.name {
            Some(value) => reader.string(value, &format!("{p_path}.name"))?,
            None => format!("p{}", p_index + 1),
        };
        if !partition_names.insert(name.clone()) {
            let span = partition
                .name
                .as_ref()
                .map_or(spanned_partition.span(), |n| n.span());
            return Err(reader.field_error(
                span,
                format!("{p_path}.name"),
                format!("partition name \"{name}\" is used twice"),
            ));
        }
        let period = reader.time(&partition.period, &format!("{p_path}.period"))?;
        if partition.tasks.is_empty() {
            return Err(reader.field_error(
                spanned_partition.span(),
                format!("{p_path}.tasks"),
                format!("partition \"{name}\" has no tasks: give it at least one"),
            ));
        }

        let mut task_names = BTreeSet::new();
        let mut tasks = Vec::with_capacity(partition.tasks.len());
        for (t_index, spanned_task) in partition.tasks.iter().enumerate() {
            let t_path = format!("{p_path}.tasks[{}]", t_index + 1);
            let task = spanned_task.get_ref();
            let task_name = match &task.name {
                Some(value) => reader.string(value, &format!("{t_path}.name"))?,
                None => format!("{name}_t{}", t_index + 1),
            };
            if !task_names.insert(task_name.clone()) {
                let span = task.name.as_ref().map_or(spanned_task.span(), |n| n.span());
                return Err(reader.field_error(
                    span,
                    format!("{t_path}.name"),
                    format!("task name \"{task_name}\" is used twice in partition \"{name}\""),
                ));
            }
            let task_period = reader.time(&task.period, &format!("{t_path}.period"))?;
            let wcet = reader.time(&task.wcet, &format!("{t_path}.wcet"))?;
            if wcet > task_period {
                return Err(reader.field_error(
                    task.wcet.span(),
                    format!("{t_path}.wcet"),
                    format!("task \"{task_name}\": wcet {wcet} exceeds its period {task_period}"),
                ));
            }
            tasks.push(GenTask::new(task_name, task_period, wcet));
        }
        domains.push(GenDomain {
            name,
            tasks,
            fixed_period: Some(period),
        });
    }

    let name = match &raw.name {
        Some(value) => Some(reader.string(value, "name")?),
        None => None,
    };
    let description = match &raw.description {
        Some(value) => reader.string(value, "description")?,
        None => format!(
            "workload {} read from a file",
            name.as_deref().unwrap_or("(unnamed)")
        ),
    };
    Ok(GenSystem {
        domains,
        description,
    })
}

#[derive(Serialize)]
struct OutWorkload<'a> {
    description: &'a str,
    partition: Vec<OutPartition<'a>>,
}

#[derive(Serialize)]
struct OutPartition<'a> {
    name: &'a str,
    period: String,
    tasks: Vec<OutTask<'a>>,
}

#[derive(Serialize)]
struct OutTask<'a> {
    name: &'a str,
    period: String,
    wcet: String,
}

/// Writes a system in the workload file format, so a generated workload can be saved,
/// inspected and edited. Every domain needs a fixed period; deadlines are not written
/// (the format's deadline is the period). [`parse_workload`] reads the result back to an
/// equal system when every deadline equals its period.
pub fn workload_to_toml(system: &GenSystem) -> Result<String, GenError> {
    let partition = system
        .domains
        .iter()
        .map(|domain| {
            let period = domain
                .fixed_period
                .ok_or_else(|| GenError::MissingFixedPeriod {
                    domain: domain.name.clone(),
                })?;
            Ok(OutPartition {
                name: &domain.name,
                period: period.to_string(),
                tasks: domain
                    .tasks
                    .iter()
                    .map(|task| OutTask {
                        name: &task.name,
                        period: task.period.to_string(),
                        wcet: task.wcet.to_string(),
                    })
                    .collect(),
            })
        })
        .collect::<Result<Vec<_>, GenError>>()?;
    let out = OutWorkload {
        description: &system.description,
        partition,
    };
    toml::to_string(&out).map_err(|error| GenError::InvalidParameter {
        parameter: "system",
        problem: format!("cannot be written as TOML: {error}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arinc::arinc_suite;

    const EXAMPLE: &str = r#"
name = "demo"

[[partition]]
name = "p1"
period = "25ms"
tasks = [
  { name = "nav", period = "25ms", wcet = "1.2ms" },
  { period = "50ms", wcet = "800us" },
]

[[partition]]
period = "50ms"
[[partition.tasks]]
period = "100ms"
wcet = "3ms"
"#;

    #[test]
    fn reads_both_table_forms() {
        let system = parse_workload(EXAMPLE).unwrap();
        assert_eq!(system.description, "workload demo read from a file");
        assert_eq!(system.domains.len(), 2);
        let p1 = &system.domains[0];
        assert_eq!(p1.name, "p1");
        assert_eq!(p1.fixed_period, Some(Nanos::from_ms(25)));
        assert_eq!(
            p1.tasks,
            vec![
                GenTask::new("nav", Nanos::from_ms(25), Nanos::from_us(1200)),
                GenTask::new("p1_t2", Nanos::from_ms(50), Nanos::from_us(800)),
            ]
        );
        let p2 = &system.domains[1];
        assert_eq!(p2.name, "p2");
        assert_eq!(
            p2.tasks,
            vec![GenTask::new(
                "p2_t1",
                Nanos::from_ms(100),
                Nanos::from_ms(3)
            )]
        );
    }

    #[test]
    fn generated_workloads_round_trip() {
        for system in arinc_suite(5) {
            let text = workload_to_toml(&system).unwrap();
            assert_eq!(parse_workload(&text).unwrap(), system, "{text}");
        }
    }

    #[test]
    fn writing_needs_fixed_periods() {
        let mut system = arinc_suite(5).remove(0);
        system.domains[1].fixed_period = None;
        assert_eq!(
            workload_to_toml(&system),
            Err(GenError::MissingFixedPeriod {
                domain: system.domains[1].name.clone()
            })
        );
    }

    /// Replaces the first occurrence of `from` in EXAMPLE and returns the error.
    fn error_after(from: &str, to: &str) -> WorkloadFileError {
        assert!(EXAMPLE.contains(from), "{from}");
        parse_workload(&EXAMPLE.replacen(from, to, 1)).unwrap_err()
    }

    fn assert_field(error: WorkloadFileError, line: usize, field: &str, says: &str) {
        match &error {
            WorkloadFileError::Field {
                line: l,
                field: f,
                problem,
            } => {
                assert_eq!((*l, f.as_str()), (line, field), "{error}");
                assert!(problem.contains(says), "{error}");
            }
            other => panic!("expected a field error, got {other:?}"),
        }
        let shown = error.to_string();
        assert!(
            shown.contains(field) && shown.contains(&format!("line {line}")),
            "{shown}"
        );
    }

    fn assert_syntax(error: WorkloadFileError, line: usize, says: &str) {
        match &error {
            WorkloadFileError::Syntax {
                line: l, message, ..
            } => {
                assert_eq!(*l, line, "{error}");
                assert!(message.contains(says), "{error}");
            }
            other => panic!("expected a syntax error, got {other:?}"),
        }
    }

    #[test]
    fn bad_values_name_the_line_and_field() {
        assert_field(
            error_after(r#"wcet = "1.2ms""#, r#"wcet = "1.2""#),
            8,
            "partition[1].tasks[1].wcet",
            "no unit",
        );
        assert_field(
            error_after(r#"wcet = "800us""#, r#"wcet = "800 parsecs""#),
            9,
            "partition[1].tasks[2].wcet",
            "unknown unit",
        );
        assert_field(
            error_after(r#"period = "25ms""#, "period = 25"),
            6,
            "partition[1].period",
            "\"25ms\"",
        );
        assert_field(
            error_after(r#"period = "100ms""#, r#"period = "0ms""#),
            15,
            "partition[2].tasks[1].period",
            "positive",
        );
        assert_field(
            error_after(r#"wcet = "3ms""#, r#"wcet = "300ms""#),
            16,
            "partition[2].tasks[1].wcet",
            "exceeds its period",
        );
        assert_field(
            error_after(r#"name = "nav""#, r#"name = "p1_t2""#),
            9,
            "partition[1].tasks[2].name",
            "used twice",
        );
        assert_field(
            error_after(r#"name = "p1""#, "name = 7"),
            5,
            "partition[1].name",
            "expected a string",
        );
        assert_field(
            error_after("name = \"demo\"", "name = \"\""),
            2,
            "name",
            "empty",
        );
    }

    #[test]
    fn missing_and_unknown_keys_are_named_by_the_parser() {
        assert_syntax(
            error_after(r#"wcet = "3ms""#, r#"wcte = "3ms""#),
            16,
            "`wcte`",
        );
        assert_syntax(
            error_after(
                r#"{ period = "50ms", wcet = "800us" }"#,
                r#"{ period = "50ms" }"#,
            ),
            9,
            "missing field `wcet`",
        );
        assert_syntax(
            error_after(
                r#"period = "50ms"
[[partition.tasks]]"#,
                "[[partition.tasks]]",
            ),
            12, // the partition's header
            "missing field `period`",
        );
        assert_syntax(parse_workload("[[partition]\n").unwrap_err(), 1, "");
    }

    /// Issue 13 §5, found by the fuzzing harness: a value of the wrong shape printed
    /// serde's Rust types ("expected struct RawTask").
    #[test]
    fn values_of_the_wrong_shape_are_described_in_words() {
        assert_eq!(
            error_after(r#"wcet = "800us" },"#, r#"wcet = "800us" }, "0ns","#),
            WorkloadFileError::Syntax {
                line: 9,
                column: 40,
                message: "expected a task table such as { period = \"25ms\", wcet = \"1ms\" }, \
                          found the string \"0ns\""
                    .into()
            }
        );
        assert_syntax(
            parse_workload("[[partition]]\nperiod = \"1ms\"\ntasks = 3\n").unwrap_err(),
            3,
            "expected an array, found the number 3",
        );
        assert_syntax(
            parse_workload("partition = [1]").unwrap_err(),
            1,
            "expected a partition table with name, period and tasks, found the number 1",
        );
        for text in [
            "partition = [1]",
            "partition = 1",
            "[partition.tasks]\nperiod = true",
        ] {
            let message = parse_workload(text).unwrap_err().to_string();
            assert!(
                !message.contains("struct") && !message.contains("Raw"),
                "{message}"
            );
        }
    }

    #[test]
    fn empty_workloads_and_partitions_are_refused() {
        assert_eq!(parse_workload(""), Err(WorkloadFileError::NoPartitions));
        assert_field(
            parse_workload("[[partition]]\nname = \"a\"\nperiod = \"25ms\"\n").unwrap_err(),
            1,
            "partition[1].tasks",
            "no tasks",
        );
    }

    #[test]
    fn positions_count_lines_and_characters() {
        assert_eq!(position("ab\ncdµe", 0), (1, 1));
        assert_eq!(position("ab\ncdµe", 3), (2, 1));
        assert_eq!(position("ab\ncdµe", 7), (2, 4));
        assert_eq!(position("ab", 99), (1, 3));
    }
}
