//! Valid inputs to mutate, and each format's tokens for the mutator's insertions.
//!
//! Seeds are the repository's `examples/` (compiled in, so the cargo-fuzz targets and the
//! suites see the same ones), the formats' documented examples, and — for results files —
//! the JSON that short runs of the example scenarios write.

use rtvmm_core::Nanos;
use rtvmm_scenario::Scenario;
use rtvmm_sim::run::{run, Record};

/// The scenario files of `examples/`.
pub const EXAMPLE_SCENARIOS: &[&str] = &[
    include_str!("../../../examples/even-share.toml"),
    include_str!("../../../examples/hotswap.toml"),
    include_str!("../../../examples/overload.toml"),
    include_str!("../../../examples/analysis.toml"),
];

/// Scenarios in every policy's shape that the examples do not cover: ARINC 653's table,
/// Credit's and RTDS's settings, every event action.
const MORE_SCENARIOS: &[&str] = &[
    r#"name = "arinc"
duration = "200ms"
[scheduler]
policy = "arinc653"
major_frame = "20ms"
minor_frames = [{ domain = "d1", runtime = "5ms" }, { domain = "d2", runtime = "10ms" }]
[[domain]]
name = "d1"
guest = "fp"
[[domain.task]]
name = "t1"
period = "20ms"
wcet = "2ms"
priority = 1
[[domain]]
name = "d2"
guest = "edf"
[[domain.task]]
name = "t1"
kind = "sporadic"
period = "40ms"
wcet = "5ms"
max_extra_gap = "10ms"
"#,
    r#"duration = "1s"
seed = 9
[machine]
quantum = "100us"
overhead = { do_schedule = "1us", context_switch = "2us" }
overhead_charge = "none"
[scheduler]
policy = "credit"
credit = { tick = "1ms", ticks_per_slice = 3, ticks_per_accounting = 3 }
rtds = { mode = "quantum" }
[[domain]]
name = "d1"
vcpu = { budget = "2ms", period = "10ms", weight = 512, cap = 50, extratime = true }
[[domain.task]]
name = "t"
period = "10ms"
wcet = "1ms"
etf = 0.5
[[event]]
at = "100ms"
action = "sched-set"
domain = "d1"
budget = "3ms"
weight = 100
[[event]]
at = "200ms"
action = "swap-policy"
policy = "rtds"
[[event]]
at = "300ms"
action = "add-domain"
[event.domain]
name = "a1"
vcpu = { budget = "1ms", period = "5ms", offset = "1ms", max_replenishments = 2 }
[[event.domain.task]]
name = "t"
kind = "aperiodic"
period = "10ms"
mean_gap = "7ms"
wcet = "1ms"
[[event]]
at = "400ms"
action = "remove-domain"
domain = "d1"
"#,
];

/// Every scenario seed.
pub fn scenarios() -> Vec<String> {
    EXAMPLE_SCENARIOS
        .iter()
        .chain(MORE_SCENARIOS)
        .map(|s| s.to_string())
        .collect()
}

/// Tokens of the scenario format.
pub const SCENARIO_TOKENS: &[&str] = &[
    "[[domain]]\n",
    "[[domain.task]]\n",
    "[[event]]\n",
    "[event.domain]\n",
    "[machine]\n",
    "[scheduler]\n",
    "name = \"d1\"\n",
    " = ",
    "\"1ns\"",
    "\"0ns\"",
    "\"100000000s\"",
    "action = \"add-domain\"\n",
    "policy = \"arinc653\"\n",
    "kind = \"aperiodic\"\n",
    "releases = []\n",
    "vcpu = {}\n",
    "{ ",
    " }",
    "\"\"\"",
    "'",
    "\\u0000",
    "#",
    "\n",
];

/// The CARTS examples of `examples/` and the format's documented examples.
pub fn carts() -> Vec<String> {
    vec![
        include_str!("../../../examples/carts.xml").to_string(),
        include_str!("../../../examples/carts-gedf.xml").to_string(),
        r#"<system os_scheduler="RM">
  <component name="C1" scheduler="RM" min_period="5" max_period="50">
    <task name="T1" p="25" d="25" e="3"/>
    <component name="C1a" os_scheduler="EDF">
      <task name="T2" p="50" e="5"/>
    </component>
  </component>
</system>
"#
        .to_string(),
        r#"<system os_scheduler="EDF">
  <component name="A" scheduler="DM" period="10" budget="4">
    <task name="x" p="20.0" d="20" e="2"/>
    <resource period="10" bandwidth="0.4"/>
  </component>
  <component name="B" os_scheduler="EDF" period="20">
    <task p="40" e="4"/>
    <processed_task p="40" e="4"/>
  </component>
</system>
"#
        .to_string(),
    ]
}

/// Tokens of XML and of CARTS.
pub const CARTS_TOKENS: &[&str] = &[
    "<component name=\"C\">",
    "</component>",
    "<task p=\"10\" e=\"1\"/>",
    " min_period=\"1\"",
    " max_period=\"18446744073709551615\"",
    " period=\"",
    " budget=\"",
    " d=\"",
    "&amp;",
    "&#x0;",
    "&#1114112;",
    "<!--",
    "-->",
    "<![CDATA[",
    "]]>",
    "<?xml version=\"1.0\"?>",
    "\"",
    "'",
    "/>",
    ">",
    "<",
];

/// The workload format's documented example (`rtvmm_gen::workload_file`).
pub fn workloads() -> Vec<String> {
    vec![
        r#"name = "flight-control"
description = "from Table 3"

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
"#
        .to_string(),
        "[[partition]]\nperiod = \"1ns\"\ntasks = [{ period = \"1ns\", wcet = \"1ns\" }]\n"
            .to_string(),
    ]
}

/// Tokens of the workload format.
pub const WORKLOAD_TOKENS: &[&str] = &[
    "[[partition]]\n",
    "[[partition.tasks]]\n",
    "tasks = [",
    "{ period = \"1ms\", wcet = \"1ms\" }",
    "name = \"p1\"\n",
    "period = ",
    "wcet = ",
    "\"0ns\"",
    "\"18446744073709551615ns\"",
    ", ",
    "]",
    "\"",
    "\n",
];

/// Results files: the JSON of each example scenario run for 50 ms (long enough to hold
/// every field with values in it).
pub fn results() -> Vec<String> {
    EXAMPLE_SCENARIOS
        .iter()
        .chain(MORE_SCENARIOS)
        .filter_map(|text| {
            let scenario = Scenario::from_toml(text, "seed.toml").ok()?;
            let short = scenario.with_duration(Nanos::from_ms(50)).ok()?;
            Some(run(&short, Record::default()).ok()?.results.to_json())
        })
        .collect()
}

/// Tokens of JSON and of the results' field names.
pub const RESULTS_TOKENS: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "\"",
    "null",
    "-1",
    "1e999",
    "\"name\": \"d1\"",
    "\"domains\": []",
    "\"jobs\": 18446744073709551616",
    "\"deadline_miss_ratio\": NaN",
    "\\u0000",
    "\\ud800",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_seed_is_valid() {
        for text in scenarios() {
            Scenario::from_toml(&text, "seed.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        }
        for text in carts() {
            rtvmm_analysis::parse_carts(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        }
        for text in workloads() {
            rtvmm_gen::workload_file::parse_workload(&text)
                .unwrap_or_else(|e| panic!("{e}\n{text}"));
        }
        assert_eq!(results().len(), scenarios().len());
    }
}
