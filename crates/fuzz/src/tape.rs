//! A tape of choices: the bytes a structure-aware generator reads its decisions from.
//!
//! Every decision (which key, which value, how many) takes a few bytes from the tape; a
//! tape that has run out answers 0 to everything, and choice 0 is always the plainest
//! valid option. So the empty tape gives the smallest valid input, a shorter tape a simpler
//! input, and smaller bytes plainer values: proptest's shrinking (which drops and lowers
//! bytes) simplifies the input, and libFuzzer's byte mutations steer the same generator.

/// Choices read from bytes, front to back.
pub struct Tape<'a> {
    bytes: &'a [u8],
    position: usize,
}

impl<'a> Tape<'a> {
    pub fn new(bytes: &'a [u8]) -> Tape<'a> {
        Tape { bytes, position: 0 }
    }

    fn byte(&mut self) -> u8 {
        let b = self.bytes.get(self.position).copied().unwrap_or(0);
        self.position += 1;
        b
    }

    /// A number in `0..n` (`n` > 0); 0 once the tape has run out.
    pub fn below(&mut self, n: usize) -> usize {
        debug_assert!(n > 0);
        if n <= 256 {
            self.byte() as usize % n
        } else {
            let wide = u32::from_le_bytes([self.byte(), self.byte(), self.byte(), self.byte()]);
            wide as usize % n
        }
    }

    /// A number in `low..=high`.
    pub fn between(&mut self, low: u64, high: u64) -> u64 {
        debug_assert!(low <= high);
        let span = high - low;
        if span < 256 {
            return low + self.byte() as u64 % (span + 1);
        }
        let raw = self.any_u64();
        match span.checked_add(1) {
            Some(count) => low + raw % count,
            None => raw, // the whole u64 range
        }
    }

    /// True with about `percent` % probability; false once the tape has run out.
    pub fn chance(&mut self, percent: u8) -> bool {
        (self.byte() as u32 * 100) / 256 >= 100 - percent as u32
    }

    /// One of `options`; the first once the tape has run out.
    pub fn pick<T: Clone>(&mut self, options: &[T]) -> T {
        options[self.below(options.len())].clone()
    }

    /// A raw 64-bit value.
    pub fn any_u64(&mut self) -> u64 {
        let mut wide = [0u8; 8];
        wide.iter_mut().for_each(|b| *b = self.byte());
        u64::from_le_bytes(wide)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exhausted_tape_makes_the_plainest_choices() {
        let mut tape = Tape::new(&[]);
        assert_eq!(tape.below(7), 0);
        assert_eq!(tape.below(100_000), 0);
        assert_eq!(tape.between(3, 9), 3);
        assert!(!tape.chance(99));
        assert_eq!(tape.pick(&["plain", "odd"]), "plain");
    }

    #[test]
    fn choices_stay_in_range() {
        let bytes: Vec<u8> = (0..=255).cycle().take(4096).collect();
        let mut tape = Tape::new(&bytes);
        for _ in 0..200 {
            assert!(tape.below(3) < 3);
            assert!(tape.below(1000) < 1000);
            let x = tape.between(10, 20);
            assert!((10..=20).contains(&x));
            assert!((5..=1_000_000).contains(&tape.between(5, 1_000_000)));
        }
        assert!(Tape::new(&[255]).chance(1));
        assert!(!Tape::new(&[0]).chance(99));
    }
}
