//! Reading an input file with a bound on its size: every file rtvmm reads (scenarios,
//! CARTS XML, workload files, results files for `compare`) goes through [`read_text`] or
//! [`read_bytes`], so that `rtvmm check /dev/zero` or a file of several gigabytes is
//! refused with a message instead of filling memory.
//!
//! The bound is read as the file is read, never from its metadata: a device, a pipe or a
//! file that grows while it is read stops at the limit too. One limit holds for the whole
//! process ([`max_input_size`]); the binary sets it from `--max-input-size`
//! ([`set_max_input_size`]), libraries and tests leave the default.

use std::fmt;
use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The default limit: 256 MiB. A scenario of 100,000 domains of one task each, the largest
/// input rtvmm is measured with, is 13 MB of TOML as written by hand and 29 MB in the
/// normalised form `rtvmm check` prints: the limit leaves a margin of about nine times
/// that, and stays far below what a machine's memory bounds (a scenario in memory takes a
/// few times its text).
pub const DEFAULT_MAX_INPUT_SIZE: u64 = 256 << 20;

/// The flag that raises the limit, named in the error.
pub const MAX_INPUT_SIZE_FLAG: &str = "--max-input-size";

static MAX_INPUT_SIZE: AtomicU64 = AtomicU64::new(DEFAULT_MAX_INPUT_SIZE);

/// The largest input file, in bytes, that [`read_text`] and [`read_bytes`] accept.
pub fn max_input_size() -> u64 {
    MAX_INPUT_SIZE.load(Ordering::Relaxed)
}

/// Sets the limit for the rest of the process (the binary does, from `--max-input-size`).
pub fn set_max_input_size(bytes: u64) {
    MAX_INPUT_SIZE.store(bytes, Ordering::Relaxed);
}

/// The input was larger than the limit. Carried inside an [`io::Error`] of kind
/// [`io::ErrorKind::InvalidData`], so that every reader's "cannot read FILE: …" message
/// says it without a new error variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLarge {
    /// The limit in bytes.
    pub limit: u64,
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "it is larger than the input size limit of {} (raise it with {MAX_INPUT_SIZE_FLAG} \
             SIZE, for example {MAX_INPUT_SIZE_FLAG} 1GiB)",
            format_size(self.limit)
        )
    }
}

impl std::error::Error for TooLarge {}

/// Whether `error` is the size limit's.
pub fn is_too_large(error: &io::Error) -> bool {
    error
        .get_ref()
        .is_some_and(|inner| inner.downcast_ref::<TooLarge>().is_some())
}

/// A size in the largest binary unit that divides it (`256 MiB`, `1000 B`).
pub fn format_size(bytes: u64) -> String {
    for (shift, unit) in [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if bytes >= 1 << shift && bytes.is_multiple_of(1 << shift) {
            return format!("{} {unit}", bytes >> shift);
        }
    }
    format!("{bytes} B")
}

/// Parses a size: a whole number of bytes with an optional unit, `B`, `K`/`KiB`,
/// `M`/`MiB`, `G`/`GiB`, `T`/`TiB` (powers of 1024; `KB`, `MB`, `GB` and `TB` are read
/// the same way). `0` is refused: no file could be read.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        other => {
            return Err(format!(
                "unknown unit '{other}' in '{text}': write bytes with B, KiB, MiB, GiB or TiB \
                 (for example 512MiB)"
            ))
        }
    };
    let number: u64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a size (for example 512MiB)"))?;
    let bytes = number
        .checked_mul(1 << shift)
        .ok_or_else(|| format!("'{text}' is too large"))?;
    if bytes == 0 {
        return Err("must be greater than 0".to_string());
    }
    Ok(bytes)
}

/// Reads at most `limit` bytes of `path`; a longer file is an error ([`TooLarge`]).
pub fn read_bytes_limited(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::new();
    // One byte more than the limit tells a file of exactly `limit` bytes from a longer one.
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            TooLarge { limit },
        ));
    }
    Ok(bytes)
}

/// Reads `path` whole, up to [`max_input_size`].
pub fn read_bytes(path: &Path) -> io::Result<Vec<u8>> {
    read_bytes_limited(path, max_input_size())
}

/// Reads `path` as UTF-8 text, up to [`max_input_size`] (as `std::fs::read_to_string`
/// otherwise).
pub fn read_text(path: &Path) -> io::Result<String> {
    let bytes = read_bytes(path)?;
    String::from_utf8(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("1KiB"), Ok(1024));
        assert_eq!(parse_size("256MiB"), Ok(DEFAULT_MAX_INPUT_SIZE));
        assert_eq!(parse_size("2 GB"), Ok(2 << 30));
        assert!(parse_size("0").is_err());
        assert!(parse_size("12 parsecs").is_err());
        assert!(parse_size("MiB").is_err());
        assert!(parse_size("99999999999TiB").is_err());
        assert_eq!(format_size(DEFAULT_MAX_INPUT_SIZE), "256 MiB");
        assert_eq!(format_size(1000), "1000 B");
    }

    #[test]
    fn a_file_over_the_limit_is_refused_and_one_at_it_is_read() {
        let dir = std::env::temp_dir().join(format!("rtvmm-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ten.txt");
        std::fs::write(&path, "0123456789").unwrap();
        assert_eq!(read_bytes_limited(&path, 10).unwrap().len(), 10);
        let error = read_bytes_limited(&path, 9).unwrap_err();
        assert!(is_too_large(&error));
        assert_eq!(
            error.to_string(),
            "it is larger than the input size limit of 9 B (raise it with --max-input-size \
             SIZE, for example --max-input-size 1GiB)"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn dev_zero_stops_at_the_limit() {
        let error = read_bytes_limited(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert!(is_too_large(&error));
    }
}
