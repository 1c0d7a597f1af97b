//! `rtvmm experiment` without the binary, for timing the experiments:
//!
//! ```text
//! cargo run --release -p rtvmm-experiments --example experiment -- rtxen-capacity --out /tmp/cap
//! ```
use clap::Parser;
use rtvmm_experiments::{run_experiment_command, Cancel, ExperimentArgs};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: ExperimentArgs,
}

fn main() {
    let cli = Cli::parse();
    let started = std::time::Instant::now();
    // No signal handling here: the `rtvmm` binary owns it.
    match run_experiment_command(&cli.args, &Cancel::new(), None) {
        Ok(out) => {
            print!("{}", out.text);
            eprintln!("total wall time: {:.2} s", started.elapsed().as_secs_f64());
            if out.interrupted {
                std::process::exit(130);
            }
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    }
}
