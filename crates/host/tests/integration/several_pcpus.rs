//! A system of several pcpus on several managed cpus (`--cpus`): accepted only where the
//! machine has a core to spare beyond them. On a machine of two cores the run is refused,
//! naming the cores, and the real-time test is skipped with the reason.

use rtvmm_core::machine::MachineConfig;
use rtvmm_core::policy::PolicyConfig;
use rtvmm_core::policy::RtdsMode;
use rtvmm_host::{executor, sys};
use rtvmm_system::SystemSpec;

use crate::util::{busy, ms, options, skip};

fn two_pcpus() -> SystemSpec {
    let machine = MachineConfig {
        pcpus: 2,
        ..MachineConfig::default()
    };
    SystemSpec {
        domains: vec![busy("a", ms(2), ms(10), 1), busy("b", ms(3), ms(10), 2)],
        ..SystemSpec::one_pool(machine, PolicyConfig::Rtds(RtdsMode::default()))
    }
}

pub fn a_system_of_two_pcpus_needs_a_core_to_spare_beyond_its_cpus() {
    let count = sys::cpu_count();
    let mut options = options(ms(500));
    options.cpus = vec![0, 1];
    let refused = match executor::run(&two_pcpus(), "two", 1, options) {
        Err(e) => e.to_string(),
        Ok(_) => String::new(),
    };
    if count < 3 {
        assert!(
            refused.starts_with(&format!(
                "--cpus 0,1: this machine has {count} cores (0-{}), and a run of 2 pcpus \
                 needs at least one core to spare beyond them",
                count - 1
            )),
            "{refused}"
        );
        eprintln!(
            "skipped: several_pcpus: this machine has {count} cores (0-{}): a run of 2 pcpus \
             needs a third to spare beyond them",
            count - 1
        );
        return;
    }
    if skip("several_pcpus") {
        return;
    }
    // A core to spare: the run is refused by what the executor drives today (one pcpu),
    // by name, before anything changes.
    assert!(
        refused.starts_with("--cpus: 2 pcpus: the host executor drives one pcpu for now"),
        "{refused}"
    );
}
