//! Several task-set draws (`--seeds N`): the seed of each draw, the spread of a figure over
//! the draws, and how often a finding holds.
//!
//! # Design note
//! A finding drawn from one random task set is one sample. An experiment that generates
//! task sets runs its whole procedure once per draw, each draw with its own seed, and its
//! report gives every figure as the mean over the draws with its spread, and every
//! qualitative finding as "holds in k of N draws".
//!
//! - **Seeds.** Draw 0 uses the run seed `S` itself, so `--seeds 1` is the single-draw run
//!   of `--seed S`, byte for byte. Draw `k ≥ 1` uses the `k`-th output of SplitMix64
//!   seeded with `S` (Steele, Lea and Flood 2014): `mix(S + k·0x9e3779b97f4a7c15)`
//!   ([`draw_seed`]). The draws of one `S` are well apart, and the draws of two run seeds
//!   do not share a seed the way `S + k` would (seed 1's draw 1 would be seed 2's draw 0).
//!   Each draw is an ordinary run with that seed: `--seed <draw k's seed> --seeds 1`
//!   reruns it alone.
//! - **Spread** ([`Spread`]): the mean, the minimum and maximum, and a 95 % confidence
//!   interval for the mean, Student's t with `n − 1` degrees of freedom:
//!   `mean ± t(0.975, n − 1) · s / √n`, `s` the sample standard deviation (divisor
//!   `n − 1`). One draw has no interval. The interval says where the mean over task sets
//!   lies, assuming the draws' values are roughly normal; min–max says how far one task
//!   set can move the figure.
//! - **Findings** ([`Tally`]): an experiment states each finding as a check it evaluates
//!   on every draw (`crate::report::Output::check`); the report counts the draws in which
//!   it holds.
//!
//! Tables, CSVs and figures of several draws are built from the draws' own by the
//! functions here ([`summarise_rows`], [`spread_cell`]) and `crate::plot::mean_of_draws`.

use crate::figures::decimal;

/// SplitMix64's increment (the golden ratio in 64-bit fixed point).
const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// SplitMix64's output function.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The seed of draw `draw` of a run seeded `seed`: `seed` itself for draw 0, the
/// `draw`-th output of SplitMix64 seeded with `seed` after it (see the module note).
pub fn draw_seed(seed: u64, draw: usize) -> u64 {
    if draw == 0 {
        return seed;
    }
    mix(seed.wrapping_add((draw as u64).wrapping_mul(GOLDEN_GAMMA)))
}

/// The seeds of draws `0..count`.
pub fn draw_seeds(seed: u64, count: usize) -> Vec<u64> {
    (0..count).map(|k| draw_seed(seed, k)).collect()
}

/// The 0.975 quantile of Student's t distribution with `df` degrees of freedom (`df ≥ 1`):
/// from a table up to 30, then the Cornish–Fisher expansion around the normal quantile
/// (off by less than 1e-4 there).
pub fn student_t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706_205, 4.302_653, 3.182_446, 2.776_445, 2.570_582, 2.446_912, 2.364_624, 2.306_004,
        2.262_157, 2.228_139, 2.200_985, 2.178_813, 2.160_369, 2.144_787, 2.131_450, 2.119_905,
        2.109_816, 2.100_922, 2.093_024, 2.085_963, 2.079_614, 2.073_873, 2.068_658, 2.063_899,
        2.059_539, 2.055_529, 2.051_831, 2.048_407, 2.045_230, 2.042_272,
    ];
    assert!(df >= 1, "Student's t needs at least one degree of freedom");
    if df <= TABLE.len() {
        return TABLE[df - 1];
    }
    let z = 1.959_964_f64;
    let n = df as f64;
    z + (z.powi(3) + z) / (4.0 * n)
        + (5.0 * z.powi(5) + 16.0 * z.powi(3) + 3.0 * z) / (96.0 * n * n)
}

/// A figure over several draws: mean, extremes and a 95 % interval for the mean.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Spread {
    /// How many draws gave a value.
    pub count: usize,
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    /// Student's t 95 % interval for the mean; `None` for a single value.
    pub ci95: Option<(f64, f64)>,
}

impl Spread {
    /// The spread of `values` (finite ones only); `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let values: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
        let count = values.len();
        if count == 0 {
            return None;
        }
        let n = count as f64;
        let mean = values.iter().sum::<f64>() / n;
        let min = values.iter().copied().fold(f64::INFINITY, f64::min);
        let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let ci95 = (count > 1).then(|| {
            let variance = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0);
            let half = student_t_975(count - 1) * (variance / n).sqrt();
            (mean - half, mean + half)
        });
        Some(Spread {
            count,
            mean,
            min,
            max,
            ci95,
        })
    }
}

/// How often each finding held: one entry per finding, in the order first stated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    /// `(finding, draws in which it held, draws in which it was checked)`.
    pub findings: Vec<(String, usize, usize)>,
}

impl Tally {
    /// Counts the checks of every draw (`(finding, held)` pairs, one list per draw).
    pub fn of(draws: &[Vec<(String, bool)>]) -> Tally {
        let mut tally = Tally::default();
        for checks in draws {
            for (finding, held) in checks {
                let i = match tally.findings.iter().position(|(f, _, _)| f == finding) {
                    Some(i) => i,
                    None => {
                        tally.findings.push((finding.clone(), 0, 0));
                        tally.findings.len() - 1
                    }
                };
                tally.findings[i].1 += usize::from(*held);
                tally.findings[i].2 += 1;
            }
        }
        tally
    }

    /// Each finding as a line: `finding — holds in k of N draws`.
    pub fn lines(&self) -> Vec<String> {
        self.findings
            .iter()
            .map(|(finding, held, checked)| {
                format!("{finding} — holds in {held} of {checked} draws")
            })
            .collect()
    }
}

/// A figure for a CSV: up to six decimals, without trailing zeros.
pub fn short_number(value: f64) -> String {
    let text = decimal(value, 6);
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// A CSV cell as a number: a decimal, or `true`/`false` as 1/0 (so the mean is the share
/// of draws); `None` for an empty or other cell.
fn cell_number(cell: &str) -> Option<f64> {
    match cell.trim() {
        "true" | "yes" => Some(1.0),
        "false" | "no" => Some(0.0),
        text => text.parse::<f64>().ok().filter(|v| v.is_finite()),
    }
}

/// The columns [`summarise_rows`] adds after the key columns.
pub const SUMMARY_COLUMNS: [&str; 8] = [
    "column",
    "draws",
    "mean",
    "min",
    "max",
    "ci95_low",
    "ci95_high",
    "varies",
];

/// The spread of a CSV's rows over the draws: `draws[k]` is draw `k`'s rows under
/// `header`, the same points in the same order in every draw.
///
/// The key columns are those equal in every draw on every row (the point: pattern, load,
/// policy…), and the columns named `seed`, which say which draw a row is. Every other
/// column with numbers gets one row per point: the key cells, the column's name, how many
/// draws gave a number, mean, min, max and the 95 % interval (empty for one draw), and
/// whether it varies. Returns the header and rows, or `None` when the draws do not have
/// the same number of rows (their points differ, as a CSV of one row per task does).
pub fn summarise_rows(
    header: &[String],
    draws: &[Vec<Vec<String>>],
) -> Option<(Vec<String>, Vec<Vec<String>>)> {
    let first = draws.first()?;
    if draws.iter().any(|rows| rows.len() != first.len()) {
        return None;
    }
    let is_seed = |c: usize| header[c] == "seed";
    let key: Vec<usize> = (0..header.len())
        .filter(|&c| {
            !is_seed(c)
                && (0..first.len())
                    .all(|r| draws.iter().all(|rows| rows[r].get(c) == first[r].get(c)))
        })
        .collect();
    let measured: Vec<usize> = (0..header.len())
        .filter(|&c| !key.contains(&c) && !is_seed(c))
        .filter(|&c| {
            draws
                .iter()
                .flatten()
                .any(|row| row.get(c).and_then(|v| cell_number(v)).is_some())
        })
        .collect();
    let mut out_header: Vec<String> = key.iter().map(|&c| header[c].clone()).collect();
    out_header.extend(SUMMARY_COLUMNS.iter().map(|s| s.to_string()));
    let mut rows = Vec::new();
    for (r, row) in first.iter().enumerate() {
        for &c in &measured {
            let values: Vec<f64> = draws
                .iter()
                .filter_map(|rows| rows[r].get(c).and_then(|v| cell_number(v)))
                .collect();
            let mut line: Vec<String> = key
                .iter()
                .map(|&k| row.get(k).cloned().unwrap_or_default())
                .collect();
            line.push(header[c].clone());
            match Spread::of(&values) {
                Some(s) => {
                    line.push(s.count.to_string());
                    line.extend([s.mean, s.min, s.max].map(short_number));
                    match s.ci95 {
                        Some((lo, hi)) => line.extend([lo, hi].map(short_number)),
                        None => line.extend([String::new(), String::new()]),
                    }
                    line.push((s.min != s.max).to_string());
                }
                None => {
                    line.push("0".to_string());
                    line.extend(std::iter::repeat_n(String::new(), 5));
                    line.push("false".to_string());
                }
            }
            rows.push(line);
        }
    }
    Some((out_header, rows))
}

/// A table cell split into its number and its unit (`"95%"` → 95, `"%"`, 0 decimals);
/// `None` when the cell is not one number followed by a unit without digits.
fn split_number(cell: &str) -> Option<(f64, &str, usize)> {
    let cell = cell.trim();
    let end = cell
        .char_indices()
        .find(|&(i, ch)| !(ch.is_ascii_digit() || ch == '.' || (i == 0 && ch == '-')))
        .map_or(cell.len(), |(i, _)| i);
    let (number, unit) = cell.split_at(end);
    if unit.chars().any(|ch| ch.is_ascii_digit()) {
        return None;
    }
    let value = number.parse::<f64>().ok()?;
    let places = number.split_once('.').map_or(0, |(_, f)| f.len());
    Some((value, unit, places))
}

/// One table cell over the draws: the cell itself when every draw has it; `mean (min–max)`
/// in the cells' unit and precision when each is one number with the same unit; otherwise
/// each distinct value with its count of draws (`none ×2, 95% ×8`), or `varies` when there
/// are more than four.
pub fn spread_cell(cells: &[&str]) -> String {
    let Some(first) = cells.first() else {
        return String::new();
    };
    if cells.iter().all(|c| c == first) {
        return first.to_string();
    }
    let numbers: Option<Vec<(f64, &str, usize)>> = cells.iter().map(|c| split_number(c)).collect();
    if let Some(numbers) = numbers {
        let unit = numbers[0].1;
        if numbers.iter().all(|n| n.1 == unit) {
            let places = numbers.iter().map(|n| n.2).max().unwrap_or(0);
            let values: Vec<f64> = numbers.iter().map(|n| n.0).collect();
            if let Some(s) = Spread::of(&values) {
                let f = |v: f64| decimal(v, places);
                return format!("{}{unit} ({}–{}{unit})", f(s.mean), f(s.min), f(s.max));
            }
        }
    }
    let mut distinct: Vec<(&str, usize)> = Vec::new();
    for cell in cells {
        match distinct.iter_mut().find(|(c, _)| c == cell) {
            Some((_, n)) => *n += 1,
            None => distinct.push((cell, 1)),
        }
    }
    if distinct.len() > 4 {
        return "varies".to_string();
    }
    distinct
        .iter()
        .map(|(c, n)| format!("{c} ×{n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draw_zero_is_the_run_seed_and_the_others_are_splitmix64() {
        assert_eq!(draw_seed(7, 0), 7);
        // SplitMix64's published first outputs from seed 0 (the reference C code).
        assert_eq!(draw_seed(0, 1), 0xe220_a839_7b1d_cdaf);
        assert_eq!(draw_seed(0, 2), 0x6e78_9e6a_a1b9_65f4);
        assert_eq!(draw_seed(0, 3), 0x06c4_5d18_8009_454f);
        // Seed 1's draw 1 is not seed 2's draw 0, as it would be with S + k.
        assert_ne!(draw_seed(1, 1), 2);
        let seeds = draw_seeds(1, 50);
        let mut sorted = seeds.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), 50, "the draws' seeds are distinct");
        assert_eq!(draw_seeds(1, 3), vec![1, draw_seed(1, 1), draw_seed(1, 2)]);
    }

    #[test]
    fn spread_of_a_tiny_sample_by_hand() {
        // 1, 2, 3, 4: mean 2.5; s² = (2.25 + 0.25 + 0.25 + 2.25) / 3 = 5/3; s/√n =
        // √(5/12) = 0.645497; t(0.975, 3) = 3.182446: half-width 2.054260.
        let s = Spread::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.count, s.mean, s.min, s.max), (4, 2.5, 1.0, 4.0));
        let (lo, hi) = s.ci95.unwrap();
        assert!((lo - 0.445_740).abs() < 1e-5, "{lo}");
        assert!((hi - 4.554_260).abs() < 1e-5, "{hi}");
        // Equal values: a zero-width interval; one value: none; no value: no spread.
        assert_eq!(Spread::of(&[3.0, 3.0]).unwrap().ci95, Some((3.0, 3.0)));
        assert_eq!(Spread::of(&[3.0]).unwrap().ci95, None);
        assert_eq!(Spread::of(&[f64::NAN]), None);
        assert_eq!(Spread::of(&[]), None);
    }

    #[test]
    fn student_t_matches_the_table_and_the_normal_limit() {
        assert!((student_t_975(1) - 12.706_205).abs() < 1e-6);
        assert!((student_t_975(9) - 2.262_157).abs() < 1e-6);
        // Past the table: t(0.975, 40) = 2.021075, t(0.975, 120) = 1.979930.
        assert!((student_t_975(40) - 2.021_075).abs() < 1e-4);
        assert!((student_t_975(120) - 1.979_930).abs() < 1e-4);
        assert!(student_t_975(31) < student_t_975(30));
    }

    #[test]
    fn a_finding_is_counted_over_the_draws_that_checked_it() {
        let check = |f: &str, held: bool| (f.to_string(), held);
        let tally = Tally::of(&[
            vec![check("a", true), check("b", false)],
            vec![check("a", false), check("b", false)],
            vec![check("a", true), check("c", true)],
        ]);
        assert_eq!(
            tally.lines(),
            vec![
                "a — holds in 2 of 3 draws",
                "b — holds in 0 of 2 draws",
                "c — holds in 1 of 1 draws",
            ]
        );
    }

    #[test]
    fn rows_are_summarised_per_point_and_column() {
        let header: Vec<String> = ["policy", "seed", "dmr", "label"]
            .map(String::from)
            .to_vec();
        let row = |p: &str, seed: &str, dmr: &str| -> Vec<String> {
            [p, seed, dmr, "x"].map(String::from).to_vec()
        };
        let draws = vec![
            vec![row("ds", "1", "0.1"), row("ps", "1", "0")],
            vec![row("ds", "9", "0.3"), row("ps", "9", "0")],
        ];
        let (h, rows) = summarise_rows(&header, &draws).unwrap();
        assert_eq!(
            h,
            [
                "policy",
                "label",
                "column",
                "draws",
                "mean",
                "min",
                "max",
                "ci95_low",
                "ci95_high",
                "varies"
            ]
        );
        // ds: 0.1 and 0.3, mean 0.2, s = 0.141421, t(0.975, 1) = 12.706205: ± 1.270620.
        assert_eq!(rows[0][..7], ["ds", "x", "dmr", "2", "0.2", "0.1", "0.3"]);
        let number = |c: usize| rows[0][c].parse::<f64>().unwrap();
        assert!((number(7) + 1.070_620_5).abs() < 1e-6, "{:?}", rows[0]);
        assert!((number(8) - 1.470_620_5).abs() < 1e-6, "{:?}", rows[0]);
        assert_eq!(rows[0][9], "true");
        assert_eq!(
            rows[1],
            ["ps", "x", "dmr", "2", "0", "0", "0", "0", "0", "false"]
        );
        // Points that differ between draws cannot be lined up.
        let uneven = vec![vec![row("ds", "1", "0.1")], vec![]];
        assert!(summarise_rows(&header, &uneven).is_none());
    }

    #[test]
    fn table_cells_keep_their_unit_and_precision() {
        assert_eq!(spread_cell(&["95%", "95%"]), "95%");
        assert_eq!(spread_cell(&["90%", "100%", "95%"]), "95% (90–100%)");
        assert_eq!(spread_cell(&["0.50%", "1.25%"]), "0.88% (0.50–1.25%)");
        assert_eq!(spread_cell(&["none", "95%", "none"]), "none ×2, 95% ×1");
        assert_eq!(spread_cell(&["a", "b", "c", "d", "e"]), "varies");
        assert_eq!(spread_cell(&["1 / 2", "1 / 3"]), "1 / 2 ×1, 1 / 3 ×1");
    }
}
