//! Byte-level mutation of valid seed inputs: the shallow end of the search, next to the
//! structure-aware generators. A few edits (flip a bit, set a byte to a syntax
//! character, delete, duplicate or splice a range, insert a token of the format, replace
//! a number with an extreme one, truncate) turn a valid file into a nearly valid one,
//! which is where readers go wrong. Invalid UTF-8 is replaced (the readers take text; the
//! binary refuses a file that is not UTF-8 before any reader sees it).

use proptest::prelude::*;

/// One edit: what, where, and a value; positions wrap around the input's length.
pub type Edit = (u8, u32, u32);

/// Bytes that mean something in TOML, XML or JSON.
const SYNTAX: &[u8] = b"\"'\n\\[]{}=<>/&;:,.-+0123456789e \t#!?\x00\xff";

/// Numbers at the edges, for the digits of the input.
const NUMBERS: &[&str] = &[
    "0",
    "00",
    "1",
    "9",
    "255",
    "4294967296",
    "9223372036854775807",
    "18446744073709551615",
    "18446744073709551616",
    "100000000000000000000000000000",
    "0.5",
    "1e9",
    "-1",
];

/// Applies `edits` to `seed`; `other` is a second seed to splice from, `dictionary` the
/// format's tokens.
pub fn apply(seed: &[u8], other: &[u8], edits: &[Edit], dictionary: &[&str]) -> Vec<u8> {
    let mut bytes = seed.to_vec();
    for &(op, at, value) in edits {
        let len = bytes.len();
        let pos = if len == 0 { 0 } else { at as usize % len };
        let span = (value as usize % 64).min(len - pos.min(len));
        match op % 8 {
            0 if len > 0 => bytes[pos] ^= 1 << (value % 8),
            1 if len > 0 => bytes[pos] = SYNTAX[value as usize % SYNTAX.len()],
            2 => {
                bytes.drain(pos..pos + span);
            }
            3 => {
                let copy = bytes[pos..pos + span].to_vec();
                let to = if len == 0 { 0 } else { value as usize % len };
                bytes.splice(to..to, copy);
            }
            4 => {
                let token = dictionary[value as usize % dictionary.len()];
                bytes.splice(pos..pos, token.bytes());
            }
            5 => {
                // The run of digits at or after `pos` becomes an extreme number.
                let start = (pos..len).find(|&i| bytes[i].is_ascii_digit());
                if let Some(start) = start {
                    let end = (start..len)
                        .find(|&i| !bytes[i].is_ascii_digit())
                        .unwrap_or(len);
                    let number = NUMBERS[value as usize % NUMBERS.len()];
                    bytes.splice(start..end, number.bytes());
                }
            }
            6 if !other.is_empty() => {
                let from = value as usize % other.len();
                let take = (at as usize % 256).min(other.len() - from);
                bytes.splice(pos..pos + span, other[from..from + take].iter().copied());
            }
            7 => bytes.truncate(pos),
            _ => {}
        }
    }
    bytes
}

/// Mutated seeds as text: a seed, a second one to splice from, and one to six edits.
pub fn mutated(
    seeds: Vec<String>,
    dictionary: &'static [&'static str],
) -> impl Strategy<Value = String> {
    let count = seeds.len();
    (
        0..count,
        0..count,
        prop::collection::vec((any::<u8>(), any::<u32>(), any::<u32>()), 1..=6),
    )
        .prop_map(move |(seed, other, edits)| {
            let bytes = apply(
                seeds[seed].as_bytes(),
                seeds[other].as_bytes(),
                &edits,
                dictionary,
            );
            String::from_utf8_lossy(&bytes).into_owned()
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edits_do_what_they_say() {
        let seed = b"period = \"10ms\"";
        assert_eq!(apply(seed, b"", &[], &["x"]), seed.to_vec());
        // Truncate at 6.
        assert_eq!(apply(seed, b"", &[(7, 6, 0)], &["x"]), b"period".to_vec());
        // Digits from 0 on: "10" becomes "0".
        assert_eq!(
            apply(seed, b"", &[(5, 0, 0)], &["x"]),
            b"period = \"0ms\"".to_vec()
        );
        // Insert a token at 0.
        assert_eq!(apply(b"ab", b"", &[(4, 0, 0)], &["[["]), b"[[ab".to_vec());
        // Delete 1 at 0.
        assert_eq!(apply(b"ab", b"", &[(2, 0, 1)], &["x"]), b"b".to_vec());
    }

    #[test]
    fn any_edit_of_any_input_stays_in_bounds() {
        for seed in [&b""[..], b"a", b"12", b"<x a=\"1\"/>"] {
            for op in 0..8u8 {
                for at in [0u32, 1, 7, u32::MAX] {
                    for value in [0u32, 3, 63, 64, u32::MAX] {
                        apply(seed, b"xyz", &[(op, at, value)], &["tok"]);
                    }
                }
            }
        }
    }
}
