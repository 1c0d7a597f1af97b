//! Times `parse_carts` on one file (the scale case of `docs/benchmarks.md`, "Scale"):
//! `cargo run --release -p rtvmm-analysis --example parse_carts -- FILE.xml`.

use std::time::Instant;

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: parse_carts FILE.xml");
        std::process::exit(2);
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("{path}: {error}");
            std::process::exit(2);
        }
    };
    let start = Instant::now();
    match rtvmm_analysis::parse_carts(&text) {
        Ok(system) => println!(
            "{path}: {} components parsed in {:.3} s",
            system.components.len(),
            start.elapsed().as_secs_f64()
        ),
        Err(error) => {
            eprintln!("{path}: {error}");
            std::process::exit(1);
        }
    }
}
