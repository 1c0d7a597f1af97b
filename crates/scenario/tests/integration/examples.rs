//! Every scenario in the repository's `examples/` parses, prints and parses back, and can
//! be retargeted at every policy (ARINC 653 where the file has a table).

use std::path::PathBuf;

use rtvmm_core::machine::MachineError;
use rtvmm_core::policy::PolicyKind;
use rtvmm_scenario::{ErrorKind, Scenario};

fn example_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "examples/ holds at least three scenarios");
    files
}

#[test]
fn every_example_parses_and_round_trips() {
    for path in example_files() {
        let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let again = Scenario::from_toml(&s.to_toml(), &s.file).unwrap();
        assert_eq!(again, s, "{}", path.display());
    }
}

#[test]
fn every_example_runs_under_every_policy() {
    for path in example_files() {
        let s = Scenario::load(&path).unwrap();
        let several_pcpus = s.system.machine.pcpus > 1;
        for kind in PolicyKind::ALL {
            match s.with_policy(kind) {
                Ok(retargeted) => assert_eq!(retargeted.policy(), kind),
                // SEDF and ARINC 653 schedule several pcpus partitioned: a file whose
                // VCPUs are not pinned is refused under them, by name.
                Err(e)
                    if several_pcpus
                        && matches!(
                            kind,
                            PolicyKind::Sedf | PolicyKind::SedfIdeal | PolicyKind::Arinc653
                        )
                        && matches!(
                            e.kind,
                            ErrorKind::Machine(MachineError::NeedsPinning { .. })
                        ) => {}
                Err(e) => {
                    assert_eq!(kind, PolicyKind::Arinc653, "{e}");
                    assert!(matches!(e.kind, ErrorKind::NeedsArincTable), "{e}");
                    assert!(s.scheduler.arinc653.is_none());
                }
            }
        }
    }
}

/// `examples/global-rtds.toml` is the 4-pcpu benchmark's system, which the benchmark builds
/// from `rtvmm_gen::benchmark`: the README's callgrind counts of the file and the criterion
/// figures of the benchmark are of the same system.
#[test]
fn the_global_rtds_example_is_the_benchmarks_system() {
    use rtvmm_core::policy::{PolicyConfig, RtdsMode};
    use rtvmm_gen::benchmark::{global_rtds_domains, GLOBAL_RTDS_PCPUS};
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/global-rtds.toml");
    let s = Scenario::load(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.system.machine.pcpus, GLOBAL_RTDS_PCPUS);
    assert!(s.system.has_only_default_pool(), "one pool of every pcpu");
    assert_eq!(s.system.policy(), &PolicyConfig::Rtds(RtdsMode::Event));
    assert_eq!(s.system.domains, global_rtds_domains());
    assert!(s.system.changes.is_empty() && s.system.chains.is_empty());
}
