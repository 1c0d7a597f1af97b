//! One rounding rule for every figure an experiment prints (and the binary's host report).
//!
//! **The rule: a figure is rounded half away from zero on its decimal value** — the
//! shortest decimal that reads back as the computed `f64` (what `{}` prints) — to a fixed
//! number of places. So 0.6615 is 66.2 %, wherever it is printed: a table, a finding on
//! the terminal, `report.md`. Rounding the decimal a reader sees, not the binary fraction
//! stored for it, is what a reader checking the figure by hand does; Rust's `{:.N}` rounds
//! the binary value instead, and 0.6615 is stored as 0.66149999…, so `{:.1}` of
//! `0.6615 * 100.0` can print 66.1 or 66.2 depending on how the product was formed.
//!
//! A percentage shifts the decimal point by two places in the text, not by multiplying,
//! so no second rounding creeps in. A figure is rounded once, from the computed value,
//! never from a figure already printed. A value that rounds to zero prints without a
//! minus sign. Not-a-number and infinities print as `{}` prints them.

/// `value` rounded to `places` decimal places, half away from zero on its decimal value
/// (see the module's rule): `decimal(0.6615, 3)` is `"0.662"`, `decimal(-2.5, 0)` is
/// `"-3"`.
pub fn decimal(value: f64, places: usize) -> String {
    shifted(value, 0, places)
}

/// `ratio` as a percentage with `places` decimal places, no `%` sign, by the module's
/// rule: `percent(0.6615, 1)` is `"66.2"`.
pub fn percent(ratio: f64, places: usize) -> String {
    shifted(ratio, 2, places)
}

/// [`percent`] with a sign always: `"+1.25"`, `"-0.50"`, `"+0.00"`.
pub fn signed_percent(ratio: f64, places: usize) -> String {
    let text = percent(ratio, places);
    if text.starts_with('-') || !ratio.is_finite() {
        text
    } else {
        format!("+{text}")
    }
}

/// [`decimal`] with a sign always: `"+3"`, `"-0.125"`, `"+0.000"`.
pub fn signed_decimal(value: f64, places: usize) -> String {
    let text = decimal(value, places);
    if text.starts_with('-') || !value.is_finite() {
        text
    } else {
        format!("+{text}")
    }
}

/// `value × 10^shift`, rounded to `places` places half away from zero, worked on the
/// digits of its shortest decimal form.
fn shifted(value: f64, shift: usize, places: usize) -> String {
    if !value.is_finite() {
        return format!("{value}");
    }
    // Rust's `Display` for f64 never uses an exponent: "0.6615", "1500", "0.0000001".
    let text = format!("{}", value.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, ""));
    let mut digits: Vec<u8> = int.bytes().chain(frac.bytes()).map(|b| b - b'0').collect();
    // The decimal point sits after `point` digits.
    let point = int.len() + shift;
    let keep = point + places;
    digits.resize(digits.len().max(keep + 1), 0);
    let round_up = digits[keep] >= 5;
    digits.truncate(keep);
    if round_up {
        let mut i = keep;
        loop {
            if i == 0 {
                digits.insert(0, 1);
                break;
            }
            i -= 1;
            if digits[i] == 9 {
                digits[i] = 0;
            } else {
                digits[i] += 1;
                break;
            }
        }
    }
    // A carry past the first digit made the integer part one digit longer.
    let int_len = digits.len() - places;
    let int_digits = &digits[..int_len];
    let first = int_digits
        .iter()
        .position(|&d| d != 0)
        .unwrap_or(int_len.saturating_sub(1));
    let mut out = String::new();
    if value < 0.0 && digits.iter().any(|&d| d != 0) {
        out.push('-');
    }
    if int_len == 0 {
        out.push('0');
    }
    out.extend(int_digits[first..].iter().map(|&d| char::from(b'0' + d)));
    if places > 0 {
        out.push('.');
        out.extend(digits[int_len..].iter().map(|&d| char::from(b'0' + d)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_packet_table_case_rounds_up_everywhere() {
        // 0.6615 is stored as 0.66149999…: `{:.1}` of `0.6615 * 100.0` gave 66.2 on the
        // terminal and `{:.1}` of `"0.6615".parse() * 100.0` 66.1 in the report.
        assert_eq!(percent(0.6615, 1), "66.2");
        assert_eq!(percent(3969.0 / 6000.0, 1), "66.2");
        assert_eq!(decimal(0.6615, 3), "0.662");
        assert_eq!(decimal(0.6615, 4), "0.6615");
    }

    #[test]
    fn halves_go_away_from_zero() {
        assert_eq!(decimal(0.5, 0), "1");
        assert_eq!(decimal(1.5, 0), "2");
        assert_eq!(decimal(2.5, 0), "3");
        assert_eq!(decimal(-2.5, 0), "-3");
        assert_eq!(decimal(0.125, 2), "0.13");
        assert_eq!(decimal(1.005, 2), "1.01");
        assert_eq!(decimal(2.675, 2), "2.68");
        assert_eq!(percent(0.00005, 2), "0.01");
    }

    #[test]
    fn below_half_goes_down_and_carries_propagate() {
        assert_eq!(decimal(0.6614999, 3), "0.661");
        assert_eq!(decimal(9.995, 2), "10.00");
        assert_eq!(decimal(99.95, 1), "100.0");
        assert_eq!(percent(0.9999999, 2), "100.00");
        assert_eq!(percent(1.0, 2), "100.00");
        assert_eq!(percent(0.0, 2), "0.00");
        assert_eq!(percent(0.05, 0), "5");
    }

    #[test]
    fn small_large_and_signed_values() {
        assert_eq!(decimal(1e-7, 6), "0.000000");
        assert_eq!(decimal(5e-7, 6), "0.000001");
        assert_eq!(decimal(1500.0, 1), "1500.0");
        assert_eq!(decimal(123456789.0, 0), "123456789");
        assert_eq!(decimal(-0.0004, 3), "0.000", "no minus sign on a zero");
        assert_eq!(decimal(-1.25, 1), "-1.3");
        assert_eq!(signed_percent(0.0125, 2), "+1.25");
        assert_eq!(signed_percent(-0.005, 2), "-0.50");
        assert_eq!(signed_percent(0.0, 2), "+0.00");
        assert_eq!(signed_decimal(2.5, 0), "+3");
        assert_eq!(signed_decimal(-0.0001, 3), "+0.000");
        assert_eq!(decimal(f64::NAN, 2), "NaN");
        assert_eq!(decimal(f64::INFINITY, 2), "inf");
    }

    #[test]
    fn agrees_with_format_away_from_ties() {
        for &v in &[
            0.0,
            0.1234,
            0.987654321,
            12.3456,
            1.23456789,
            0.333333,
            2.0 / 3.0,
        ] {
            for places in 0..6 {
                let ours = decimal(v, places);
                let theirs = format!("{v:.places$}");
                assert_eq!(ours, theirs, "{v} to {places} places");
            }
        }
    }
}
