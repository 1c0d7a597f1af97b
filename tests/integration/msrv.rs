//! The declared minimum Rust version is true: no locked dependency (dev-dependencies
//! included) asks for a newer one. Clippy's `incompatible_msrv` lint, run by CI with the
//! same declared version, checks that rtvmm's own code uses nothing newer.

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

#[test]
fn declared_rust_version_covers_every_locked_dependency() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked", "--offline"])
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
