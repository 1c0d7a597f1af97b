//! Values for the generators: plain ones, and the odd ones that find bugs — extreme and
//! malformed numbers, zero and negative values, unicode and very long names, wrong types.
//!
//! [`Gen`] wraps a [`Tape`] with an *oddness*: the percent chance that any one value is
//! odd, picked per input from the tape's first byte (0 for about half the inputs, so that
//! many are valid and reach the simulator; up to 40 for the rest).

use crate::tape::Tape;

/// A tape and the rate of odd values for this input.
pub struct Gen<'a> {
    pub tape: Tape<'a>,
    oddness: u8,
}

impl<'a> Gen<'a> {
    pub fn new(bytes: &'a [u8]) -> Gen<'a> {
        let mut tape = Tape::new(bytes);
        let oddness = match tape.below(8) {
            0..=3 => 0,
            4 | 5 => 2,
            6 => 10,
            _ => 40,
        };
        Gen { tape, oddness }
    }

    /// Whether this value is odd.
    pub fn odd(&mut self) -> bool {
        self.oddness > 0 && self.tape.chance(self.oddness)
    }

    /// Whether to write an optional key: usually not (`percent` % of the time).
    pub fn maybe(&mut self, percent: u8) -> bool {
        self.tape.chance(percent)
    }

    pub fn below(&mut self, n: usize) -> usize {
        self.tape.below(n)
    }

    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        self.tape.between(low, high)
    }

    pub fn pick<T: Clone>(&mut self, options: &[T]) -> T {
        self.tape.pick(options)
    }

    /// A time as TOML text, usually `"{n}{unit}"` with `n` in `low..=high` of `unit`; odd:
    /// anything from [`ODD_TIMES`] or a random number and unit.
    pub fn time(&mut self, low: u64, high: u64, unit: &str) -> String {
        if self.odd() {
            return self.odd_time();
        }
        format!("\"{}{unit}\"", self.between(low, high))
    }

    /// An odd time value as TOML text.
    pub fn odd_time(&mut self) -> String {
        match self.below(3) {
            0 => self.pick(ODD_TIMES).to_string(),
            1 => {
                let n = self
                    .pick(EXTREME_INTEGERS)
                    .trim_start_matches('-')
                    .to_string();
                format!("\"{n}{}\"", self.pick(&["ns", "us", "µs", "ms", "s", ""]))
            }
            _ => self.odd_value(),
        }
    }

    /// An integer as TOML text: usually in `low..=high`; odd: extreme or of another type.
    pub fn integer(&mut self, low: u64, high: u64) -> String {
        if self.odd() {
            return match self.below(2) {
                0 => self.pick(EXTREME_INTEGERS).to_string(),
                _ => self.odd_value(),
            };
        }
        self.between(low, high).to_string()
    }

    /// A value of a surprising type, as TOML text.
    pub fn odd_value(&mut self) -> String {
        self.pick(ODD_VALUES).to_string()
    }

    /// A name as a TOML string: usually `plain`; odd: empty, unicode, control
    /// characters, 255 or 256 characters, one of a few shared names (duplicates).
    pub fn name(&mut self, plain: &str) -> String {
        if !self.odd() {
            return quote(plain);
        }
        match self.below(8) {
            0 => quote(""),
            1 => quote(self.pick(UNICODE_NAMES)),
            2 => quote(&"n".repeat(255)),
            3 => quote(&"é".repeat(256)),
            4 => quote(&"x".repeat(self.between(1000, 70_000) as usize)),
            5 => quote(&format!("{plain}\u{0}\t\r\n|\"\\")),
            6 => quote(self.pick(&["d1", "d2", "t1", "a1"])),
            _ => self.odd_value(),
        }
    }

    /// One of `plain` (the first most often); odd: a near miss or another type.
    pub fn word(&mut self, plain: &[&str]) -> String {
        if self.odd() {
            return match self.below(3) {
                0 => quote(&self.pick(plain).to_uppercase()),
                1 => quote(self.pick(&["", " ", "none", "xen", "credit2", "ds ", "ü"])),
                _ => self.odd_value(),
            };
        }
        let word = if self.maybe(50) {
            plain[0]
        } else {
            self.pick(plain)
        };
        quote(word)
    }
}

/// `s` as a TOML basic string, every character escaped as TOML needs.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Times that are malformed, zero, at or past the limits, or of another type.
pub const ODD_TIMES: &[&str] = &[
    "\"0ns\"",
    "\"0s\"",
    "\"1ns\"",
    "\"2ns\"",
    "\"100000000s\"",
    "\"100000000.000000001s\"",
    "\"100000001s\"",
    "\"99999999.999999999s\"",
    "\"18446744073709551615ns\"",
    "\"18446744073709551616ns\"",
    "\"18446744073.709551615s\"",
    "\"184467440737095516150ms\"",
    "\"\"",
    "\" \"",
    "\"ms\"",
    "\"-1ms\"",
    "\"-0ns\"",
    "\"1.5ns\"",
    "\"0.0000000001s\"",
    "\"1.000000000000000000000000000000000001s\"",
    "\"1e3ms\"",
    "\"10 ms\"",
    "\"１ms\"",
    "\"1__0ms\"",
    "\".5ms\"",
    "\"5.ms\"",
    "\".ms\"",
    "\"1.2.3ms\"",
    "\"10MS\"",
    "\"10msec\"",
    "\"NaNms\"",
    "\"infs\"",
    "10",
    "0",
    "-5",
    "1.5",
    "nan",
    "inf",
    "-inf",
    "true",
    "[\"1ms\"]",
    "{ ms = 1 }",
    "1979-05-27T07:32:00Z",
];

/// Integers at the edges of every width the readers use, as TOML text.
pub const EXTREME_INTEGERS: &[&str] = &[
    "0",
    "-1",
    "1",
    "255",
    "256",
    "65535",
    "65536",
    "2147483647",
    "2147483648",
    "4294967295",
    "4294967296",
    "9007199254740993",
    "9223372036854775807",
    "-9223372036854775808",
    "-2147483649",
];

/// Values of surprising types, as TOML text.
pub const ODD_VALUES: &[&str] = &[
    "true",
    "false",
    "1.5",
    "-0.0",
    "1e308",
    "nan",
    "inf",
    "[]",
    "[1, \"a\"]",
    "{}",
    "{ a = 1 }",
    "\"\"",
    "\"x\"",
    "1979-05-27",
    "07:32:00",
];

/// Names in several scripts and widths.
pub const UNICODE_NAMES: &[&str] = &[
    "ドメイン",
    "домен",
    "𝔡𝔬𝔪",
    "🦀🦀",
    "e\u{301}",
    "\u{202e}rtl",
    "\u{feff}bom",
    "a b",
    "-d",
    "--policy",
    "ß",
    "\u{200b}",
];
