//! Workload files (TOML partitions), as `rtvmm experiment csa-arinc --workload` reads them.
//!
//! [`check`] reads a file with `parse_workload`. Refused: the error reads well. Accepted:
//! every partition has a fixed period and at least one task, every task a positive WCET
//! within its period and its deadline at its period, names are unique, and the system
//! written back (`workload_to_toml`) reads again to the same system.
//!
//! [`generate`] writes workload files from a tape, in both table forms.

use std::collections::BTreeSet;

use rtvmm_gen::workload_file::{parse_workload, workload_to_toml};

use crate::text::Gen;
use crate::{readable, Checked, Failure, Outcome};

/// Reads `text` as a workload file and checks the result (module docs).
pub fn check(text: &str) -> Checked {
    let system = match parse_workload(text) {
        Ok(system) => system,
        Err(error) => {
            readable("workload", &error.to_string(), text)?;
            return Ok(Outcome::Refused);
        }
    };
    let fail = |what: String| Err(Failure::wrong(format!("workload: {what}")));
    if system.domains.is_empty() {
        return fail("accepted with no partition".into());
    }
    let mut partitions = BTreeSet::new();
    for d in &system.domains {
        if !partitions.insert(&d.name) {
            return fail(format!("partition '{}' accepted twice", d.name));
        }
        if d.fixed_period.is_none_or(|p| p.is_zero()) || d.tasks.is_empty() {
            return fail(format!(
                "partition '{}': period {:?}, {} tasks",
                d.name,
                d.fixed_period,
                d.tasks.len()
            ));
        }
        let mut tasks = BTreeSet::new();
        for t in &d.tasks {
            if !tasks.insert(&t.name)
                || t.wcet.is_zero()
                || t.wcet > t.period
                || t.deadline != t.period
            {
                return fail(format!(
                    "partition '{}': task '{}' accepted with period {}, wcet {}, deadline {} \
                     (or its name twice)",
                    d.name, t.name, t.period, t.wcet, t.deadline
                ));
            }
        }
    }
    let written = workload_to_toml(&system)
        .map_err(|e| Failure::wrong(format!("workload: cannot write back what it read: {e}")))?;
    match parse_workload(&written) {
        Ok(again) if again == system => Ok(Outcome::Accepted),
        Ok(again) => fail(format!(
            "written back, it reads as another system:\n{written}\n{system:?}\n{again:?}"
        )),
        Err(e) => fail(format!("written back, it is refused: {e}\n{written}")),
    }
}

/// A workload file as TOML, decided by `tape`.
pub fn generate(tape: &[u8]) -> String {
    let mut g = Gen::new(tape);
    let mut out = String::new();
    let line = |g: &mut Gen, out: &mut String, key: &str, value: String| {
        out.push_str(&format!("{key} = {value}\n"));
        if g.odd() && g.maybe(10) {
            out.push_str(&format!("{key} = {value}\n"));
        }
    };
    if g.maybe(50) {
        let name = g.name("demo");
        line(&mut g, &mut out, "name", name);
    }
    if g.maybe(30) {
        let description = g.name("from a table");
        line(&mut g, &mut out, "description", description);
    }
    let partitions = match g.below(8) {
        0 if g.odd() => 0,
        7 => g.between(4, 30) as usize,
        n => 1 + n % 3,
    };
    for p in 1..=partitions {
        out.push_str("\n[[partition]]\n");
        if g.maybe(60) {
            let name = g.name(&format!("p{p}"));
            line(&mut g, &mut out, "name", name);
        }
        let period_ms = g.pick(&[25u64, 50, 100, 10, 1]);
        if !(g.odd() && g.maybe(20)) {
            let period = g.time(period_ms, period_ms, "ms");
            line(&mut g, &mut out, "period", period);
        }
        let tasks = match g.below(8) {
            0 if g.odd() => 0,
            7 => g.between(4, 20) as usize,
            n => 1 + n % 3,
        };
        let inline = g.maybe(50);
        let mut items = Vec::new();
        for t in 1..=tasks {
            let mut fields = Vec::new();
            if g.maybe(50) {
                fields.push(("name", g.name(&format!("t{t}"))));
            }
            let task_period_us = period_ms * 1000 * g.pick(&[1u64, 2, 4]);
            if !(g.odd() && g.maybe(20)) {
                fields.push(("period", g.time(task_period_us, task_period_us, "us")));
            }
            if !(g.odd() && g.maybe(20)) {
                let wcet_us = g.between(1, task_period_us / 3);
                fields.push(("wcet", g.time(wcet_us, wcet_us, "us")));
            }
            if g.odd() && g.maybe(10) {
                fields.push(("deadline", "\"1ms\"".into()));
            }
            items.push(fields);
        }
        if inline {
            let written: Vec<String> = items
                .iter()
                .map(|fields| {
                    let body: Vec<String> =
                        fields.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                    format!("{{ {} }}", body.join(", "))
                })
                .collect();
            out.push_str(&format!("tasks = [\n  {},\n]\n", written.join(",\n  ")));
        } else {
            for fields in items {
                out.push_str("[[partition.tasks]]\n");
                for (k, v) in fields {
                    line(&mut g, &mut out, k, v);
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_tape_gives_a_workload_that_round_trips() {
        let text = generate(&[]);
        assert_eq!(check(&text), Ok(Outcome::Accepted), "{text}");
    }
}
