//! `rtvmm gen … --count K --out DIR`: K generated systems as the files of a directory,
//! sharded with `--shard I/N` and merged with `rtvmm gen merge OUT DIR…`.
//!
//! # Design note
//! System `i` (from 0) is drawn with seed `seed + i` and is exactly the file `rtvmm gen …
//! --seed seed+i` prints, header and all ([`generate`]); it is named `NAME-i.toml`, `i`
//! zero-padded to the width of `K − 1`, so that names sort in seed order (as `rtvmm
//! sweep` reads a directory). A file is a pure function of the options and its index,
//! so a shard is nothing but a subset of the indices: [`Shard::runs_of_sweep`] over the
//! K systems, the same slicing as an experiment's runs. A shard's directory holds its
//! files, exactly as the unsharded run writes them, and its manifest
//! ([`SHARD_MANIFEST`]: the options, the rtvmm version, the shard, the file names),
//! written last; the union of the shards' `*.toml` files is the unsharded directory,
//! byte for byte. `gen merge` checks the manifests as every merge does
//! ([`shard::check_set`]: one run's options and version, each shard once, none
//! missing) and copies the files; a plain `cp DIR_*/*.toml OUT/` makes the same
//! directory without the checks.
//!
//! Without `--count`, `gen` writes one system, and there is nothing to shard.

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use crate::files;
use crate::generate::{generate, GenCommon, Generator};
use crate::shard::{self, Shard, ShardHead, SHARD_MANIFEST};
use crate::ExperimentError;

/// The largest `--count`.
pub const MAX_COUNT: usize = 1_000_000;

/// A `gen --count --shard` shard's manifest ([`SHARD_MANIFEST`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GenShardManifest {
    /// What was generated: `gen NAME` and its own options.
    pub generator: String,
    pub rtvmm_version: String,
    pub shard: Shard,
    pub seed: u64,
    pub count: usize,
    pub duration: String,
    pub policy: Option<String>,
    /// The files this shard holds, in name order.
    pub files: Vec<String>,
}

impl GenShardManifest {
    fn head(&self, dir: &Path) -> ShardHead {
        let options = vec![
            ("--seed".to_string(), self.seed.to_string()),
            ("--count".to_string(), self.count.to_string()),
            ("--duration".to_string(), self.duration.clone()),
            (
                "--policy".to_string(),
                self.policy.clone().unwrap_or_else(|| "(default)".into()),
            ),
        ];
        ShardHead::new(
            dir,
            self.shard,
            ("the generator", &self.generator),
            &self.rtvmm_version,
            options,
        )
    }
}

/// The name of system `index` of `count` made by `generator`.
pub fn file_name(generator: &Generator, index: usize, count: usize) -> String {
    let width = count.saturating_sub(1).to_string().len();
    format!("{}-{index:0width$}.toml", generator.name())
}

/// Refuses a count out of range, or one whose seeds would pass the largest.
fn check_count(seed: u64, count: usize) -> Result<(), ExperimentError> {
    if count == 0 {
        return Err(ExperimentError::option("--count", "0: at least 1 system"));
    }
    if count > MAX_COUNT {
        return Err(ExperimentError::option(
            "--count",
            format!("{count} is above the most `gen --count` writes, {MAX_COUNT}"),
        ));
    }
    if seed.checked_add(count as u64 - 1).is_none() {
        return Err(ExperimentError::option(
            "--count",
            format!(
                "systems are drawn with seeds --seed … --seed + {}, past the largest seed",
                count - 1
            ),
        ));
    }
    Ok(())
}

/// The indices of the systems of `shard` (all without one), in order.
fn system_indices(count: usize, shard: Option<Shard>) -> Vec<usize> {
    match shard {
        None => (0..count).collect(),
        Some(shard) => shard.runs_of_sweep(0, count),
    }
}

/// The names of the files [`system_files`] makes, without making them.
/// Refuses what [`system_files`] refuses, before anything is generated.
pub fn system_names(
    generator: &Generator,
    common: &GenCommon,
    count: usize,
    shard: Option<Shard>,
) -> Result<Vec<String>, ExperimentError> {
    check_count(common.seed, count)?;
    Ok(system_indices(count, shard)
        .into_iter()
        .map(|index| file_name(generator, index, count))
        .collect())
}

/// Creates `dir` if missing, proves it writable, and refuses (naming it) a file of one of
/// `names` already there unless `force`: what `write_systems` checks, to be called
/// before anything is generated.
pub fn prepare_out<'a>(
    dir: &Path,
    mut names: impl Iterator<Item = &'a str>,
    force: bool,
) -> Result<(), ExperimentError> {
    files::prepare_dir(dir)?;
    if force {
        return Ok(());
    }
    match names.find(|name| dir.join(name).exists()) {
        Some(name) => Err(ExperimentError::option(
            "--out",
            format!(
                "{} already exists; add --force to replace it",
                dir.join(name).display()
            ),
        )),
        None => Ok(()),
    }
}

/// The files of `count` systems, or of `shard`'s slice of them: (name, text) in name
/// order. Generated in parallel; the same bytes whatever the threads.
pub fn system_files(
    generator: &Generator,
    common: &GenCommon,
    count: usize,
    shard: Option<Shard>,
) -> Result<Vec<(String, String)>, ExperimentError> {
    check_count(common.seed, count)?;
    system_indices(count, shard)
        .par_iter()
        .map(|&index| {
            let seeded = GenCommon {
                seed: common.seed + index as u64,
                ..common.clone()
            };
            let text = generate(generator, &seeded)?;
            Ok((file_name(generator, index, count), text))
        })
        .collect()
}

/// What `gen --count` writes to `dir` (created if missing): the `systems`, and with a
/// shard its manifest, last. A file of the same name already there is refused (naming
/// it) unless `force`, before anything is written.
pub fn write_systems(
    dir: &Path,
    systems: &[(String, String)],
    force: bool,
    shard: Option<&GenShardManifest>,
) -> Result<(), ExperimentError> {
    prepare_out(dir, systems.iter().map(|(name, _)| name.as_str()), force)?;
    // A stale manifest would vouch for files this run did not write.
    let manifest_path = dir.join(SHARD_MANIFEST);
    files::remove_if_present(&manifest_path)?;
    for (name, text) in systems {
        files::write_file(&dir.join(name), text.as_bytes())?;
    }
    if let Some(manifest) = shard {
        let json = shard::manifest_text(manifest)
            .map_err(|e| ExperimentError::Analysis(format!("shard manifest: {e}")))?;
        files::write_file(&manifest_path, json.as_bytes())?;
    }
    Ok(())
}

/// The manifest of a shard of `count` systems holding `systems`.
pub fn shard_manifest(
    generator: &Generator,
    common: &GenCommon,
    count: usize,
    shard: Shard,
    systems: &[(String, String)],
) -> GenShardManifest {
    GenShardManifest {
        generator: format!("gen {} {generator:?}", generator.name()),
        rtvmm_version: env!("CARGO_PKG_VERSION").to_string(),
        shard,
        seed: common.seed,
        count,
        duration: common.duration.clone(),
        policy: common.policy.clone(),
        files: systems.iter().map(|(name, _)| name.clone()).collect(),
    }
}

/// `rtvmm gen merge OUT DIR…`: the shards' files, checked to be every shard of one run
/// once, copied into `out`. Returns how many files were written.
pub fn merge_systems(
    out: &Path,
    shard_dirs: &[PathBuf],
    force: bool,
) -> Result<usize, ExperimentError> {
    shard::refuse_out_among(out, shard_dirs)?;
    let manifests = shard_dirs
        .iter()
        .map(|dir| shard::read_manifest::<GenShardManifest>(dir))
        .collect::<Result<Vec<_>, _>>()?;
    let heads: Vec<ShardHead> = manifests
        .iter()
        .zip(shard_dirs)
        .map(|(m, dir)| m.head(dir))
        .collect();
    shard::check_set(&heads)?;
    let mut systems = Vec::new();
    for (manifest, dir) in manifests.iter().zip(shard_dirs) {
        for name in &manifest.files {
            let path = dir.join(name);
            let text =
                std::fs::read_to_string(&path).map_err(|e| shard::ShardError::Unreadable {
                    path: path.clone(),
                    message: format!("listed in {SHARD_MANIFEST} but not readable: {e}"),
                })?;
            systems.push((name.clone(), text));
        }
    }
    let expected = manifests[0].count;
    if systems.len() != expected {
        return Err(shard::ShardError::RunCount {
            stored: systems.len(),
            expected,
        }
        .into());
    }
    systems.sort();
    write_systems(out, &systems, force, None)?;
    Ok(systems.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rtxen() -> Generator {
        Generator::with_defaults("rtxen").unwrap()
    }

    #[test]
    fn names_sort_in_seed_order() {
        let g = rtxen();
        assert_eq!(file_name(&g, 0, 1), "rtxen-0.toml");
        assert_eq!(file_name(&g, 7, 10), "rtxen-7.toml");
        assert_eq!(file_name(&g, 7, 11), "rtxen-07.toml");
        assert_eq!(file_name(&g, 999, 1000), "rtxen-999.toml");
    }

    /// System i is the file `gen --seed seed+i` makes.
    #[test]
    fn system_i_is_the_file_of_seed_plus_i() {
        let common = GenCommon {
            seed: 5,
            ..GenCommon::default()
        };
        let files = system_files(&rtxen(), &common, 3, None).unwrap();
        let seeded = GenCommon {
            seed: 7,
            ..GenCommon::default()
        };
        assert_eq!(
            files[2],
            (
                "rtxen-2.toml".to_string(),
                generate(&rtxen(), &seeded).unwrap()
            )
        );
        assert!(files[2].1.contains("--seed 7`"), "{}", files[2].1);
    }

    #[test]
    fn the_shards_of_a_count_are_the_unsharded_files() {
        let common = GenCommon::default();
        let all = system_files(&rtxen(), &common, 7, None).unwrap();
        for count in 1..=8 {
            let mut union = Vec::new();
            for index in 1..=count {
                union.extend(
                    system_files(&rtxen(), &common, 7, Some(Shard { index, count })).unwrap(),
                );
            }
            union.sort();
            assert_eq!(union, all, "{count} shards");
        }
    }

    #[test]
    fn a_count_past_the_last_seed_is_refused() {
        let common = GenCommon {
            seed: u64::MAX,
            ..GenCommon::default()
        };
        let e = system_files(&rtxen(), &common, 2, None)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("--count") && e.contains("past the largest seed"),
            "{e}"
        );
        assert!(system_files(&rtxen(), &common, 1, None).is_ok());
        let e = system_files(&rtxen(), &GenCommon::default(), 0, None).unwrap_err();
        assert!(e.to_string().contains("--count"), "{e}");
    }
}
