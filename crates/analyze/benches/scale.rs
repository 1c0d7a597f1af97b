//! The analysis's scale cases of issue 23 (item 2): cases 4 and 5 of `docs/benchmarks.md`,
//! "Scale" (`tools/scale_cases.py` writes the same inputs as files for the CLI).
//!
//! - `carts_100k_components`: a CARTS file of 100,000 components of one EDF task each
//!   (periods 100,000–199,999 units), read and analysed — the reading (a line-start table)
//!   and the root over 100,000 servers (sums by priority level).
//! - `periods_30k`: one EDF domain of 30,000 tasks of distinct periods (1 s + t µs, 1 ns of
//!   work each), analysed at a 1 µs quantum — the exact utilisation sums.
//!
//! Each input is written once to a temporary file outside the timing; each iteration reads
//! and analyses it as `rtvmm analyze` does.
//!
//! ```text
//! cargo bench -p rtvmm-analyze --bench scale
//! ```

use std::fmt::Write;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use rtvmm_analyze::{analyze, Input, Options};
use rtvmm_core::Nanos;

/// Writes `text` to a file of this name in the system's temporary directory.
fn input_file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("rtvmm-bench-{}-{name}", std::process::id()));
    std::fs::write(&path, text).expect("the benchmark's input is written");
    path
}

fn carts(components: u32) -> String {
    let mut s =
        String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<system os_scheduler=\"EDF\">\n");
    for c in 0..components {
        let _ = write!(
            s,
            "  <component name=\"c{c}\" scheduler=\"EDF\">\n    <task name=\"t\" p=\"{}\" e=\"1\"/>\n  </component>\n",
            100_000 + c
        );
    }
    s.push_str("</system>\n");
    s
}

fn periods(tasks: u32) -> String {
    let mut s = String::from(
        "name = \"periods\"\nduration = \"1s\"\nseed = 1\n[scheduler]\npolicy = \"deferrable\"\n\
         [[domain]]\nname = \"d\"\nguest = \"edf\"\nvcpu = { budget = \"9ms\", period = \"10ms\" }\n",
    );
    for t in 0..tasks {
        let _ = write!(
            s,
            "[[domain.task]]\nname = \"t{t}\"\nperiod = \"{}us\"\nwcet = \"1ns\"\n",
            1_000_000 + t
        );
    }
    s
}

fn scale(c: &mut Criterion) {
    let mut group = c.benchmark_group("analysis_scale");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    let xml = input_file("case4.xml", &carts(100_000));
    group.bench_function("carts_100k_components", |b| {
        b.iter(|| {
            let input = Input::load(&xml).expect("the CARTS file reads");
            black_box(analyze(&input, &Options::default()).expect("it is analysed"))
        })
    });
    let toml = input_file("case5.toml", &periods(30_000));
    let micro = Options {
        quantum: Some(Nanos::from_us(1)),
        ..Options::default()
    };
    group.bench_function("periods_30k", |b| {
        b.iter(|| {
            let input = Input::load(&toml).expect("the scenario reads");
            black_box(analyze(&input, &micro).expect("it is analysed"))
        })
    });
    group.finish();
    let _ = std::fs::remove_file(xml);
    let _ = std::fs::remove_file(toml);
}

criterion_group!(benches, scale);
criterion_main!(benches);
