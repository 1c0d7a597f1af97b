//! CARTS systems (XML), as `rtvmm analyze FILE.xml` reads them.
//!
//! [`check`] reads a file with `parse_carts`. Refused: the error gives a line and reads
//! well. Accepted: every component has tasks or child components, nesting is at most one
//! level, every task is valid (0 < e ≤ p, 0 < d ≤ p), periods are positive, a budget
//! comes with a period, and what `CartsSystem::to_xml` writes reads back to the same
//! system. Then, only for small systems (every number at most
//! [`ANALYSIS_MAX_NUMBER`], at most [`ANALYSIS_MAX_TASKS`] tasks), the whole analysis of
//! `rtvmm analyze` runs and must answer with a report or an error that reads well: the
//! analysis of large numbers is bounded by its own tests and benchmark, not here.
//!
//! [`generate`] writes CARTS XML from a tape: nested components, every attribute, odd
//! numbers, unknown elements, comments, entities and malformed markup.

use rtvmm_analysis::{parse_carts, CartsComponent, CartsSystem};
use rtvmm_analyze::{analyze, Input, Options};

use crate::text::Gen;
use crate::{readable, Checked, Failure, Outcome};

/// Systems whose numbers are all at most this are analysed as well as read.
pub const ANALYSIS_MAX_NUMBER: u64 = 200;

/// Systems with at most this many tasks (children's included) are analysed.
pub const ANALYSIS_MAX_TASKS: usize = 12;

/// Reads `text` as CARTS XML and checks the result (module docs).
pub fn check(text: &str) -> Checked {
    let system = match parse_carts(text) {
        Ok(system) => system,
        Err(error) => {
            let message = error.to_string();
            if !message.starts_with("line ") {
                return Err(Failure::wrong(format!(
                    "CARTS error without a line: {message}"
                )));
            }
            readable("carts", &message, text)?;
            return Ok(Outcome::Refused);
        }
    };
    for c in &system.components {
        component_holds(c, 0)?;
    }
    round_trip(&system)?;
    if small(&system) {
        let input = Input::Carts {
            file: "fuzz.xml".into(),
            system,
        };
        if let Err(e) = analyze(&input, &Options::default()) {
            readable("carts analysis", &e.to_string(), text)?;
        }
    }
    Ok(Outcome::Accepted)
}

/// What `CartsSystem::to_xml` (`rtvmm analyze --emit carts`) writes reads back to the same
/// system, lines aside (and a root without `os_scheduler` written as RM, which CARTS needs).
fn round_trip(system: &CartsSystem) -> Result<(), Failure> {
    fn without_lines(mut system: CartsSystem) -> CartsSystem {
        system.scheduler.get_or_insert_with(|| "RM".to_string());
        fn strip(c: &mut CartsComponent) {
            c.line = 0;
            c.tasks.iter_mut().for_each(|t| t.line = 0);
            c.children.iter_mut().for_each(strip);
        }
        system.components.iter_mut().for_each(strip);
        system
    }
    let written = system.to_xml();
    match parse_carts(&written) {
        Ok(again) if without_lines(again.clone()) == without_lines(system.clone()) => Ok(()),
        Ok(_) => Err(Failure::wrong(format!(
            "CARTS written by to_xml reads back to another system:\n{written}"
        ))),
        Err(error) => Err(Failure::wrong(format!(
            "CARTS written by to_xml is refused ({error}):\n{written}"
        ))),
    }
}

fn component_holds(c: &CartsComponent, depth: usize) -> Result<(), Failure> {
    let fail = |what: &str| {
        Err(Failure::wrong(format!(
            "CARTS component '{}' (line {}) accepted {what}",
            c.name, c.line
        )))
    };
    if depth > 1 {
        return fail("nested more than one level deep");
    }
    if c.tasks.is_empty() && c.children.is_empty() {
        return fail("without tasks or components");
    }
    if [c.min_period, c.max_period, c.period].contains(&Some(0)) {
        return fail("with a zero period");
    }
    if c.budget.is_some() && c.period.is_none() {
        return fail("with a budget but no period");
    }
    if let (Some(low), Some(high)) = (c.min_period, c.max_period) {
        if low > high {
            return fail("with min_period above max_period");
        }
    }
    if let Some(t) = c.tasks.iter().find(|t| t.task.validate(0).is_err()) {
        return fail(&format!("with an invalid task '{}': {:?}", t.name, t.task));
    }
    for child in &c.children {
        component_holds(child, depth + 1)?;
    }
    Ok(())
}

/// Whether the analysis of `system` is cheap enough to run on every input.
fn small(system: &CartsSystem) -> bool {
    let mut numbers = Vec::new();
    let mut tasks = 0;
    let mut stack: Vec<&CartsComponent> = system.components.iter().collect();
    while let Some(c) = stack.pop() {
        numbers.extend(
            [c.min_period, c.max_period, c.period, c.budget]
                .into_iter()
                .flatten(),
        );
        for t in &c.tasks {
            numbers.extend([t.task.period, t.task.wcet, t.task.deadline]);
        }
        tasks += c.tasks.len();
        stack.extend(&c.children);
    }
    tasks <= ANALYSIS_MAX_TASKS && numbers.iter().all(|&n| n <= ANALYSIS_MAX_NUMBER)
}

// ---------------------------------------------------------------------------------------
// The generator.

/// A CARTS system as XML, decided by `tape`.
pub fn generate(tape: &[u8]) -> String {
    let mut g = Gen::new(tape);
    let mut out = String::new();
    if g.maybe(20) {
        out.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    }
    if g.odd() && g.maybe(10) {
        out.push_str(g.pick(PROLOGUES));
    }
    let root = if g.odd() && g.maybe(10) {
        g.pick(&["systm", "component", "System"])
    } else {
        "system"
    };
    out.push_str(&format!("<{root}"));
    if g.maybe(60) {
        let scheduler = scheduler(&mut g);
        out.push_str(&format!(" os_scheduler=\"{scheduler}\""));
    }
    out.push_str(">\n");
    let components = match g.below(8) {
        0 if g.odd() => 0,
        7 => g.between(3, 12) as usize,
        n => 1 + n % 3,
    };
    for i in 1..=components {
        component(&mut g, &mut out, &format!("C{i}"), 0);
    }
    if g.odd() && g.maybe(20) {
        out.push_str(g.pick(ODD_ELEMENTS));
    }
    if !(g.odd() && g.maybe(10)) {
        out.push_str(&format!("</{root}>\n"));
    }
    out
}

fn component(g: &mut Gen, out: &mut String, name: &str, depth: usize) {
    let indent = "  ".repeat(depth + 1);
    out.push_str(&format!("{indent}<component"));
    if !(g.odd() && g.maybe(20)) {
        out.push_str(&format!(" name=\"{}\"", attribute_text(g, name)));
    }
    if g.maybe(70) {
        let key = g.pick(&["scheduler", "os_scheduler"]);
        out.push_str(&format!(" {key}=\"{}\"", scheduler(g)));
    }
    let period = g.pick(&[5u64, 10, 20, 50, 100]);
    match g.below(4) {
        0 => {
            out.push_str(&format!(
                " min_period=\"{}\" max_period=\"{}\"",
                number(g, 1, period),
                number(g, period, period * 4)
            ));
        }
        1 => out.push_str(&format!(" period=\"{}\"", number(g, period, period))),
        2 if g.maybe(50) => out.push_str(&format!(
            " period=\"{}\" budget=\"{}\"",
            number(g, period, period),
            number(g, 1, period)
        )),
        _ => {}
    }
    if g.maybe(10) {
        out.push_str(" criticality=\"HI\"");
    }
    if g.odd() && g.maybe(10) {
        out.push_str(" name=\"twice\""); // an attribute twice: malformed XML
    }
    out.push_str(">\n");
    let tasks = match g.below(8) {
        0 if g.odd() => 0,
        7 => g.between(4, 10) as usize,
        n => 1 + n % 3,
    };
    for t in 1..=tasks {
        out.push_str(&format!("{indent}  <task"));
        if g.maybe(70) {
            out.push_str(&format!(
                " name=\"{}\"",
                attribute_text(g, &format!("T{t}"))
            ));
        }
        let p = g.pick(&[25u64, 50, 100, 10, 200]);
        let e = g.between(1, p / 4);
        if !(g.odd() && g.maybe(20)) {
            out.push_str(&format!(" p=\"{}\"", number(g, p, p)));
        }
        if g.maybe(40) {
            out.push_str(&format!(" d=\"{}\"", number(g, e, p)));
        }
        if !(g.odd() && g.maybe(20)) {
            out.push_str(&format!(" e=\"{}\"", number(g, e, e)));
        }
        if g.odd() && g.maybe(10) {
            out.push_str("><task p=\"1\" e=\"1\"/></task>\n");
        } else {
            out.push_str("/>\n");
        }
    }
    if depth < 2 && g.maybe(if depth == 0 { 25 } else { 5 }) {
        let children = 1 + g.below(2);
        for c in 1..=children {
            component(g, out, &format!("{name}_{c}"), depth + 1);
        }
    }
    if g.maybe(10) {
        out.push_str(&format!(
            "{indent}  <resource period=\"10\" bandwidth=\"0.5\"/>\n"
        ));
    }
    if g.odd() && g.maybe(15) {
        out.push_str(g.pick(ODD_ELEMENTS));
    }
    out.push_str(&format!("{indent}</component>\n"));
}

fn scheduler(g: &mut Gen) -> String {
    if g.odd() {
        return g
            .pick(&[
                "", "rm", " EDF ", "dm", "FIFO", "édf", "R&amp;M", "EDF\u{0}",
            ])
            .to_string();
    }
    g.pick(&["RM", "EDF", "DM"]).to_string()
}

/// A whole number as attribute text; odd: decimals, signs, exponents, extremes, empty.
fn number(g: &mut Gen, low: u64, high: u64) -> String {
    if !g.odd() {
        let n = g.between(low.max(1), high.max(1));
        return if g.maybe(10) {
            format!("{n}.0")
        } else {
            n.to_string()
        };
    }
    g.pick(ODD_NUMBERS).to_string()
}

/// Text for an attribute: usually `plain`; odd: entities, unicode, quotes, long.
fn attribute_text(g: &mut Gen, plain: &str) -> String {
    if !g.odd() {
        return plain.to_string();
    }
    match g.below(6) {
        0 => String::new(),
        1 => g.pick(crate::text::UNICODE_NAMES).to_string(),
        2 => "a&amp;b&lt;&#x1F980;&#0;".into(),
        3 => "x".repeat(g.between(256, 70_000) as usize),
        4 => "bad\"quote".into(),
        _ => g.pick(&["C1", "T1", "&undefined;", "<"]).to_string(),
    }
}

const ODD_NUMBERS: &[&str] = &[
    "0",
    "-1",
    "",
    " 7 ",
    "1.5",
    "1e3",
    "0x10",
    "+5",
    "25.000",
    "18446744073709551615",
    "18446744073709551616",
    "99999999999999999999999",
    "100000000000000000",
    "1000000000000",
    "4294967296",
    "NaN",
    "٣",
];

const ODD_ELEMENTS: &[&str] = &[
    "<!-- a comment -->\n",
    "<![CDATA[ <task p=\"1\"/> ]]>\n",
    "<unknown/>\n",
    "<task p=\"10\" e=\"1\"/>\n",
    "<?pi data?>\n",
    "text between elements\n",
    "<component name=\"empty\"/>\n",
];

const PROLOGUES: &[&str] = &[
    "<!DOCTYPE system [<!ENTITY a \"aaaaaaaaaa\"><!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">]>\n",
    "<!DOCTYPE system SYSTEM \"file:///etc/passwd\">\n",
    "\u{feff}",
    "<!-- before -->\n",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_empty_tape_gives_a_system_carts_reads() {
        let text = generate(&[]);
        assert_eq!(check(&text), Ok(Outcome::Accepted), "{text}");
        assert!(parse_carts(&text).is_ok());
    }

    #[test]
    fn small_systems_are_analysed_and_large_ones_only_read() {
        let small_system = parse_carts(
            "<system><component name=\"C\"><task p=\"10\" e=\"1\"/></component></system>",
        )
        .unwrap();
        assert!(small(&small_system));
        let large = parse_carts(
            "<system><component name=\"C\"><task p=\"1000000\" e=\"1\"/></component></system>",
        )
        .unwrap();
        assert!(!small(&large));
    }
}
