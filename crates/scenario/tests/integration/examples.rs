//! Every scenario in the repository's `examples/` parses, prints and parses back, and can
//! be retargeted at every policy (ARINC 653 where the file has a table).

use std::path::PathBuf;

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
        for kind in PolicyKind::ALL {
            match s.with_policy(kind) {
                Ok(retargeted) => assert_eq!(retargeted.policy(), kind),
                Err(e) => {
                    assert_eq!(kind, PolicyKind::Arinc653, "{e}");
                    assert!(matches!(e.kind, ErrorKind::NeedsArincTable), "{e}");
                    assert!(s.scheduler.arinc653.is_none());
                }
            }
        }
    }
}
