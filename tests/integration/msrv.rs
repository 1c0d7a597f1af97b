//! The declared minimum Rust version is true: no locked dependency built for this machine
//! (dev-dependencies included) asks for a newer one. Only this platform's: the others' are
//! not downloaded by a build here, and `--offline` cannot read them on a fresh machine.
//! Clippy's `incompatible_msrv` lint, run by CI with the same declared version, checks that
//! rtvmm's own code uses nothing newer.

use std::process::Command;

/// `"1.85"`, `"1.85.0"` → `(1, 85, 0)`.
fn version(text: &str) -> (u64, u64, u64) {
    let mut parts = text.split('.').map(|p| p.parse::<u64>().expect("a number"));
    (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    )
}

/// The target this cargo builds for by default (`host:` of `cargo -vV`).
fn host(cargo: &str) -> String {
    let output = Command::new(cargo)
        .arg("-vV")
        .output()
        .expect("cargo -vV runs");
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .unwrap_or_else(|| panic!("cargo -vV names no host:\n{text}"))
        .to_string()
}

#[test]
fn declared_rust_version_covers_every_locked_dependency() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let host = host(&cargo);
    let output = Command::new(&cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
        .args(["--filter-platform", &host])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let declared = version(env!("CARGO_PKG_RUST_VERSION"));
    let packages = metadata["packages"].as_array().expect("packages");
    assert!(packages.len() > 20, "the lock file's packages are listed");
    let too_new: Vec<String> = packages
        .iter()
        .filter_map(|p| {
            let needs = p["rust_version"].as_str()?;
            (version(needs) > declared)
                .then(|| format!("{} {} needs {needs}", p["name"], p["version"]))
        })
        .collect();
    assert!(
        too_new.is_empty(),
        "rust-version {} is below what the lock file needs: {too_new:?}",
        env!("CARGO_PKG_RUST_VERSION")
    );
}
