//! Figures: line charts (DMR against load, responsiveness CDFs), grouped bar charts and
//! grouped box plots, each written as one SVG and one PNG.
//!
//! Rendering uses `plotters` with its pure-Rust `ab_glyph` text, so no system font library
//! is needed — only a TrueType file, looked up once in standard places (or `RTVMM_FONT`).
//! Every figure has a title, labelled axes (units in the label) and a legend.
//!
//! Figures are for people; the numbers behind them are always in a CSV beside them.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use image::ImageEncoder as _;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::error::ExperimentError;

/// Pixel size of every figure.
pub const FIGURE_SIZE: (u32, u32) = (1024, 640);
const FONT: &str = "sans-serif";

/// Where a TrueType font is looked for, in order (after `RTVMM_FONT`).
pub const FONT_PATHS: [&str; 8] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/liberation/LiberationSans-Regular.ttf",
    "/usr/share/fonts/liberation-sans/LiberationSans-Regular.ttf",
    "/usr/share/fonts/truetype/freefont/FreeSans.ttf",
    "/Library/Fonts/Arial.ttf",
];

static FONT_LOADED: OnceLock<Result<PathBuf, String>> = OnceLock::new();

/// Registers the figure font once per process; the error says how to get one.
pub fn ensure_font() -> Result<PathBuf, ExperimentError> {
    FONT_LOADED
        .get_or_init(|| {
            let from_env = std::env::var_os("RTVMM_FONT").map(PathBuf::from);
            let candidates = from_env
                .into_iter()
                .chain(FONT_PATHS.iter().map(PathBuf::from));
            for path in candidates {
                let Ok(bytes) = rtvmm_system::input::read_bytes(&path) else {
                    continue;
                };
                // plotters keeps a reference for the life of the process.
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font(FONT, FontStyle::Normal, bytes).is_ok() {
                    return Ok(path);
                }
            }
            Err(format!(
                "no TrueType font found (looked in $RTVMM_FONT and {}); install one \
                 (Debian/Ubuntu: apt-get install fonts-dejavu-core) or set RTVMM_FONT to a .ttf file",
                FONT_PATHS.join(", ")
            ))
        })
        .clone()
        .map_err(ExperimentError::Font)
}

/// Distinct colours (the "tab10" palette), cycled by series index.
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// The colour of series `index`.
pub fn colour(index: usize) -> RGBColor {
    PALETTE[index % PALETTE.len()]
}

/// Where the legend goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LegendAt {
    UpperLeft,
    UpperRight,
    LowerLeft,
    LowerRight,
}

impl LegendAt {
    fn position(self) -> SeriesLabelPosition {
        match self {
            LegendAt::UpperLeft => SeriesLabelPosition::UpperLeft,
            LegendAt::UpperRight => SeriesLabelPosition::UpperRight,
            LegendAt::LowerLeft => SeriesLabelPosition::LowerLeft,
            LegendAt::LowerRight => SeriesLabelPosition::LowerRight,
        }
    }
}

/// One named curve.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A horizontal reference line (for example the 5 % DMR threshold).
#[derive(Clone, Debug, PartialEq)]
pub struct RefLine {
    pub y: f64,
    pub label: String,
}

/// Curves over a numeric x axis.
#[derive(Clone, Debug, PartialEq)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Axis ranges; `None` fits the data.
    pub x_range: Option<(f64, f64)>,
    pub y_range: Option<(f64, f64)>,
    /// Draw a marker at every point (sweeps); off for dense curves (CDFs).
    pub markers: bool,
    pub reference: Option<RefLine>,
    pub legend: LegendAt,
    /// Shaded bands behind the curves (the spread over several draws); none by default.
    pub bands: Vec<Band>,
}

/// A shaded band behind curve `series` of a line chart: at each x, from `low` to `high`.
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    pub series: usize,
    /// `(x, low, high)`, by increasing x.
    pub points: Vec<(f64, f64, f64)>,
}

impl LineChart {
    /// A chart with markers, fitted axes and the legend upper left.
    pub fn new(title: &str, x_label: &str, y_label: &str, series: Vec<Series>) -> LineChart {
        LineChart {
            title: title.to_string(),
            x_label: x_label.to_string(),
            y_label: y_label.to_string(),
            series,
            x_range: None,
            y_range: None,
            markers: true,
            reference: None,
            legend: LegendAt::UpperLeft,
            bands: Vec::new(),
        }
    }
}

/// Bars grouped by category: one bar per series in each category.
#[derive(Clone, Debug, PartialEq)]
pub struct BarChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub categories: Vec<String>,
    /// `(series name, one value per category)`.
    pub series: Vec<(String, Vec<f64>)>,
    pub legend: LegendAt,
}

/// A box plot's numbers: median, quartiles, whiskers at the most extreme samples within
/// 1.5 × IQR of the quartiles, and the samples beyond them.
#[derive(Clone, Debug, PartialEq)]
pub struct BoxStats {
    pub count: usize,
    pub q1: f64,
    pub median: f64,
    pub q3: f64,
    pub whisker_low: f64,
    pub whisker_high: f64,
    pub outliers: Vec<f64>,
}

impl BoxStats {
    /// Summarises `samples` (NaN-free); `None` when empty. Quartiles interpolate linearly
    /// between order statistics (type 7, the common default).
    pub fn of(samples: &[f64]) -> Option<BoxStats> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(|a, b| a.total_cmp(b));
        let q1 = quantile_sorted(&sorted, 0.25);
        let median = quantile_sorted(&sorted, 0.5);
        let q3 = quantile_sorted(&sorted, 0.75);
        let iqr = q3 - q1;
        let (low_fence, high_fence) = (q1 - 1.5 * iqr, q3 + 1.5 * iqr);
        let whisker_low = sorted
            .iter()
            .copied()
            .find(|&v| v >= low_fence)
            .unwrap_or(q1);
        let whisker_high = sorted
            .iter()
            .rev()
            .copied()
            .find(|&v| v <= high_fence)
            .unwrap_or(q3);
        let outliers = sorted
            .iter()
            .copied()
            .filter(|&v| v < whisker_low || v > whisker_high)
            .collect();
        Some(BoxStats {
            count: sorted.len(),
            q1,
            median,
            q3,
            whisker_low,
            whisker_high,
            outliers,
        })
    }
}

/// Quantile `q` ∈ [0, 1] of sorted samples, interpolating linearly (type 7).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let n = sorted.len();
    if n == 1 {
        return sorted[0];
    }
    let h = (n - 1) as f64 * q.clamp(0.0, 1.0);
    let lo = h.floor() as usize;
    let hi = (lo + 1).min(n - 1);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

/// Boxes grouped by category: one box per series in each category.
#[derive(Clone, Debug, PartialEq)]
pub struct BoxChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub categories: Vec<String>,
    /// `(series name, one box per category; None where there is no sample)`.
    pub series: Vec<(String, Vec<Option<BoxStats>>)>,
    pub legend: LegendAt,
}

/// Any figure.
#[derive(Clone, Debug, PartialEq)]
pub enum Chart {
    Line(LineChart),
    Bar(BarChart),
    /// Bars with a range drawn over each (`ranges[series][category]`: the minimum and
    /// maximum over several draws).
    BarRange(BarChart, Vec<Vec<Option<(f64, f64)>>>),
    Box(BoxChart),
}

impl Chart {
    pub fn title(&self) -> &str {
        match self {
            Chart::Line(c) => &c.title,
            Chart::Bar(c) | Chart::BarRange(c, _) => &c.title,
            Chart::Box(c) => &c.title,
        }
    }

    /// The same chart under another title.
    pub fn titled(&self, title: String) -> Chart {
        let mut chart = self.clone();
        match &mut chart {
            Chart::Line(c) => c.title = title,
            Chart::Bar(c) | Chart::BarRange(c, _) => c.title = title,
            Chart::Box(c) => c.title = title,
        }
        chart
    }
}

/// The points of an empirical CDF of `samples` as a step curve, with values above `clip`
/// shown at `clip`. At most about `max_points` points are kept (evenly spaced ranks), so
/// a figure of a million jobs stays small; the first and last ranks are always kept.
pub fn cdf_points(samples: &[f64], clip: f64, max_points: usize) -> Vec<(f64, f64)> {
    if samples.is_empty() {
        return Vec::new();
    }
    let mut sorted: Vec<f64> = samples.iter().map(|&v| v.min(clip)).collect();
    sorted.sort_by(|a, b| a.total_cmp(b));
    let n = sorted.len();
    let step = n.div_ceil(max_points.max(2) / 2).max(1);
    let mut points = Vec::new();
    let mut i = 0;
    loop {
        let below = i as f64 / n as f64;
        let at = (i + 1) as f64 / n as f64;
        points.push((sorted[i], below));
        points.push((sorted[i], at));
        if i == n - 1 {
            break;
        }
        i = (i + step).min(n - 1);
    }
    points
}

/// One figure over several draws, from each draw's version of it (`charts[k]`: draw
/// `k`'s; the same kind of chart, the same series and categories):
///
/// - a line chart: each curve is the mean over the draws, with the draws' min–max as a
///   shaded band. The draws' curves are read at every x any of them has (the value at a
///   point's own x, the last if a step has several; linear between points; the end value
///   beyond the ends), so curves of other x values (CDFs) average too;
/// - a bar chart: the mean bar, with the min–max as a range over it;
/// - a box plot: each statistic (quartiles, whiskers) averaged over the draws, without
///   the outliers.
///
/// A chart unlike the first draw's (another kind) leaves the first draw's as it is.
pub fn mean_of_draws(charts: &[Chart]) -> Option<Chart> {
    let first = charts.first()?;
    match first {
        Chart::Line(line) => {
            let others: Option<Vec<&LineChart>> = charts
                .iter()
                .map(|c| match c {
                    Chart::Line(l) => Some(l),
                    _ => None,
                })
                .collect();
            let others = others?;
            let mut mean = line.clone();
            mean.bands.clear();
            for (i, series) in mean.series.iter_mut().enumerate() {
                let curves: Vec<&[(f64, f64)]> = others
                    .iter()
                    .filter_map(|c| c.series.iter().find(|s| s.name == series.name))
                    .map(|s| s.points.as_slice())
                    .collect();
                let mut xs: Vec<f64> = curves.iter().flat_map(|c| c.iter().map(|p| p.0)).collect();
                xs.sort_by(f64::total_cmp);
                xs.dedup();
                let mut points = Vec::new();
                let mut band = Vec::new();
                for x in xs {
                    let values: Vec<f64> = curves.iter().filter_map(|c| value_at(c, x)).collect();
                    if let Some(spread) = crate::draws::Spread::of(&values) {
                        points.push((x, spread.mean));
                        band.push((x, spread.min, spread.max));
                    }
                }
                series.points = points;
                mean.bands.push(Band {
                    series: i,
                    points: band,
                });
            }
            Some(Chart::Line(mean))
        }
        Chart::Bar(bar) | Chart::BarRange(bar, _) => {
            let values = |s: usize, i: usize| -> Vec<f64> {
                charts
                    .iter()
                    .filter_map(|c| match c {
                        Chart::Bar(b) | Chart::BarRange(b, _) => b.series.get(s)?.1.get(i).copied(),
                        _ => None,
                    })
                    .collect()
            };
            let mut mean = bar.clone();
            let mut ranges = Vec::new();
            for (s, (_, bars)) in mean.series.iter_mut().enumerate() {
                let mut row = Vec::new();
                for (i, value) in bars.iter_mut().enumerate() {
                    let spread = crate::draws::Spread::of(&values(s, i));
                    *value = spread.map_or(f64::NAN, |x| x.mean);
                    row.push(spread.map(|x| (x.min, x.max)));
                }
                ranges.push(row);
            }
            Some(Chart::BarRange(mean, ranges))
        }
        Chart::Box(boxes) => {
            let mut mean = boxes.clone();
            for (s, (_, stats)) in mean.series.iter_mut().enumerate() {
                for (i, slot) in stats.iter_mut().enumerate() {
                    let all: Vec<BoxStats> = charts
                        .iter()
                        .filter_map(|c| match c {
                            Chart::Box(b) => b.series.get(s)?.1.get(i).cloned().flatten(),
                            _ => None,
                        })
                        .collect();
                    let average =
                        |f: fn(&BoxStats) -> f64| all.iter().map(f).sum::<f64>() / all.len() as f64;
                    *slot = (!all.is_empty()).then(|| BoxStats {
                        count: all.iter().map(|b| b.count).sum(),
                        q1: average(|b| b.q1),
                        median: average(|b| b.median),
                        q3: average(|b| b.q3),
                        whisker_low: average(|b| b.whisker_low),
                        whisker_high: average(|b| b.whisker_high),
                        outliers: Vec::new(),
                    });
                }
            }
            Some(Chart::Box(mean))
        }
    }
}

/// A curve's value at `x` (points by increasing x): the last point's at that x, linear
/// between points, the end value beyond the ends; `None` for an empty curve.
fn value_at(points: &[(f64, f64)], x: f64) -> Option<f64> {
    let first = points.first()?;
    let Some(at) = points.iter().rposition(|p| p.0 <= x) else {
        return Some(first.1);
    };
    let (x0, y0) = points[at];
    match points.get(at + 1) {
        Some(&(x1, y1)) if x0 < x && x1 > x0 => Some(y0 + (y1 - y0) * (x - x0) / (x1 - x0)),
        _ => Some(y0),
    }
}

fn plot_err(path: &Path, e: impl std::fmt::Display) -> ExperimentError {
    ExperimentError::Plot {
        path: path.to_path_buf(),
        message: e.to_string(),
    }
}

/// Renders `chart` as SVG text and PNG bytes, in memory (the caller writes them; see
/// [`crate::files`]). `name` names the figure in errors.
pub fn render(chart: &Chart, name: &Path) -> Result<(String, Vec<u8>), ExperimentError> {
    ensure_font()?;
    let svg_path = name.with_extension("svg");
    let png_path = name.with_extension("png");
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, FIGURE_SIZE).into_drawing_area();
        draw(&root, chart).map_err(|e| plot_err(&svg_path, e))?;
        root.present().map_err(|e| plot_err(&svg_path, e))?;
    }
    let (w, h) = FIGURE_SIZE;
    let mut pixels = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, FIGURE_SIZE).into_drawing_area();
        draw(&root, chart).map_err(|e| plot_err(&png_path, e))?;
        root.present().map_err(|e| plot_err(&png_path, e))?;
    }
    // The encoder and settings `plotters` itself saves PNGs with: the same bytes.
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new(&mut png)
        .write_image(&pixels, w, h, image::ColorType::Rgb8)
        .map_err(|e| plot_err(&png_path, e))?;
    Ok((svg, png))
}

type DrawResult = Result<(), String>;

fn draw<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, chart: &Chart) -> DrawResult {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    match chart {
        Chart::Line(c) => draw_lines(root, c),
        Chart::Bar(c) => draw_bars(root, c, &[]),
        Chart::BarRange(c, ranges) => draw_bars(root, c, ranges),
        Chart::Box(c) => draw_boxes(root, c),
    }
}

/// `(lo, hi)` covering `values` with a little room; a flat or empty range gets width 1.
fn fit(values: impl Iterator<Item = f64>, pad: f64) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    if hi - lo < 1e-12 {
        return (lo - 0.5, hi + 0.5);
    }
    let room = (hi - lo) * pad;
    (lo - room, hi + room)
}

fn title_style() -> TextStyle<'static> {
    (FONT, 26).into_font().into()
}

fn draw_lines<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &LineChart) -> DrawResult {
    let e = |e: plotters::drawing::DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let all = || c.series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = c.x_range.unwrap_or_else(|| fit(all().map(|p| p.0), 0.02));
    let (y0, y1) = c.y_range.unwrap_or_else(|| {
        let refs = c.reference.iter().map(|r| r.y);
        let bands = c
            .bands
            .iter()
            .flat_map(|b| b.points.iter().flat_map(|&(_, low, high)| [low, high]));
        fit(all().map(|p| p.1).chain(refs).chain(bands), 0.05)
    });
    let mut chart = ChartBuilder::on(root)
        .caption(&c.title, title_style())
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(80)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(e)?;
    chart
        .configure_mesh()
        .x_label_formatter(&|v: &f64| axis_number(*v))
        .x_desc(c.x_label.as_str())
        .y_desc(c.y_label.as_str())
        .label_style((FONT, 16))
        .axis_desc_style((FONT, 18))
        .y_label_formatter(&|v: &f64| axis_number(*v))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(e)?;
    if let Some(reference) = &c.reference {
        let grey = RGBColor(110, 110, 110);
        chart
            .draw_series(LineSeries::new(
                [(x0, reference.y), (x1, reference.y)],
                grey.stroke_width(1),
            ))
            .map_err(e)?
            .label(reference.label.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], grey.stroke_width(1))
            });
    }
    for band in &c.bands {
        // The band's outline: along the lows, back along the highs.
        let outline: Vec<(f64, f64)> = band
            .points
            .iter()
            .map(|&(x, low, _)| (x, low))
            .chain(band.points.iter().rev().map(|&(x, _, high)| (x, high)))
            .collect();
        chart
            .draw_series(std::iter::once(Polygon::new(
                outline,
                colour(band.series).mix(0.2).filled(),
            )))
            .map_err(e)?;
    }
    let count = c.series.len();
    for (i, s) in c.series.iter().enumerate() {
        let col = colour(i);
        // Earlier series are drawn wider, so a later one lying on top of an earlier one
        // leaves it visible at the edges.
        let width = (1 + count - i).clamp(2, 6) as u32;
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                col.stroke_width(width),
            ))
            .map_err(e)?
            .label(s.name.as_str())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 24, y)], col.stroke_width(width))
            });
        if c.markers {
            let radius = width as i32 + 1;
            chart
                .draw_series(
                    s.points
                        .iter()
                        .map(|&p| Circle::new(p, radius, col.filled())),
                )
                .map_err(e)?;
        }
    }
    chart
        .configure_series_labels()
        .position(c.legend.position())
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font((FONT, 16))
        .draw()
        .map_err(e)?;
    Ok(())
}

/// An axis number without needless decimals: `100`, `2.5`, `0.125`.
fn axis_number(v: f64) -> String {
    if v.abs() < 1e-9 {
        return "0".to_string();
    }
    let text = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.3}")
    };
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// Category `i` is centred on x = i; `count` series share 80 % of its width.
fn slot(i: usize, series: usize, count: usize) -> (f64, f64) {
    let width = 0.8 / count.max(1) as f64;
    let left = i as f64 - 0.4 + series as f64 * width;
    (left + width * 0.1, left + width * 0.9)
}

fn category_label(categories: &[String], x: f64) -> String {
    let nearest = x.round();
    if (x - nearest).abs() < 1e-6 && nearest >= 0.0 && (nearest as usize) < categories.len() {
        categories[nearest as usize].clone()
    } else {
        String::new()
    }
}

fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    c: &BarChart,
    ranges: &[Vec<Option<(f64, f64)>>],
) -> DrawResult {
    let e = |e: plotters::drawing::DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let n = c.categories.len().max(1);
    let top = c
        .series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .chain(ranges.iter().flatten().flatten().map(|&(_, high)| high))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    // Headroom for the legend above the tallest bar.
    let headroom = 1.15 + 0.06 * c.series.len() as f64;
    let y1 = if top > 0.0 { top * headroom } else { 1.0 };
    let mut chart = ChartBuilder::on(root)
        .caption(&c.title, title_style())
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(90)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), 0.0..y1)
        .map_err(e)?;
    let formatter = |x: &f64| category_label(&c.categories, *x);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&formatter)
        .x_desc(c.x_label.as_str())
        .y_desc(c.y_label.as_str())
        .label_style((FONT, 16))
        .axis_desc_style((FONT, 18))
        .y_label_formatter(&|v: &f64| axis_number(*v))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(e)?;
    let count = c.series.len();
    for (s, (name, values)) in c.series.iter().enumerate() {
        let col = colour(s);
        chart
            .draw_series(
                values
                    .iter()
                    .enumerate()
                    .filter(|(_, v)| v.is_finite())
                    .map(|(i, &v)| {
                        let (a, b) = slot(i, s, count);
                        Rectangle::new([(a, 0.0), (b, v)], col.filled())
                    }),
            )
            .map_err(e)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], col.filled()));
        let whiskers = ranges.get(s).into_iter().flatten().enumerate();
        let mut lines = Vec::new();
        for (i, range) in whiskers {
            let Some((low, high)) = *range else { continue };
            let (a, b) = slot(i, s, count);
            let (mid, cap) = ((a + b) / 2.0, (b - a) / 4.0);
            for points in [
                vec![(mid, low), (mid, high)],
                vec![(mid - cap, low), (mid + cap, low)],
                vec![(mid - cap, high), (mid + cap, high)],
            ] {
                lines.push(PathElement::new(points, BLACK.stroke_width(1)));
            }
        }
        if !lines.is_empty() {
            chart.draw_series(lines).map_err(e)?;
        }
    }
    chart
        .configure_series_labels()
        .position(c.legend.position())
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font((FONT, 16))
        .draw()
        .map_err(e)?;
    Ok(())
}

/// Outliers drawn per box at most (the CSV has them all).
const MAX_OUTLIERS_DRAWN: usize = 400;

fn draw_boxes<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, c: &BoxChart) -> DrawResult {
    let e = |e: plotters::drawing::DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let n = c.categories.len().max(1);
    let boxes = || c.series.iter().flat_map(|(_, b)| b.iter().flatten());
    let (y0, y1) = fit(
        boxes().flat_map(|b| {
            [b.whisker_low, b.whisker_high]
                .into_iter()
                .chain(b.outliers.iter().copied())
        }),
        0.05,
    );
    let mut chart = ChartBuilder::on(root)
        .caption(&c.title, title_style())
        .margin(16)
        .x_label_area_size(56)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), y0..y1)
        .map_err(e)?;
    let formatter = |x: &f64| category_label(&c.categories, *x);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&formatter)
        .x_desc(c.x_label.as_str())
        .y_desc(c.y_label.as_str())
        .label_style((FONT, 16))
        .axis_desc_style((FONT, 18))
        .y_label_formatter(&|v: &f64| axis_number(*v))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(e)?;
    let count = c.series.len();
    for (s, (name, stats)) in c.series.iter().enumerate() {
        let col = colour(s);
        let mut elements: Vec<DynElement<DB, (f64, f64)>> = Vec::new();
        for (i, b) in stats.iter().enumerate() {
            let Some(b) = b else { continue };
            let (a, z) = slot(i, s, count);
            let mid = (a + z) / 2.0;
            elements
                .push(Rectangle::new([(a, b.q1), (z, b.q3)], col.mix(0.35).filled()).into_dyn());
            elements.push(Rectangle::new([(a, b.q1), (z, b.q3)], col.stroke_width(1)).into_dyn());
            elements.push(
                PathElement::new(vec![(a, b.median), (z, b.median)], BLACK.stroke_width(2))
                    .into_dyn(),
            );
            elements.push(
                PathElement::new(
                    vec![(mid, b.q3), (mid, b.whisker_high)],
                    col.stroke_width(1),
                )
                .into_dyn(),
            );
            elements.push(
                PathElement::new(vec![(mid, b.q1), (mid, b.whisker_low)], col.stroke_width(1))
                    .into_dyn(),
            );
            let cap = (z - a) / 4.0;
            for w in [b.whisker_low, b.whisker_high] {
                elements.push(
                    PathElement::new(vec![(mid - cap, w), (mid + cap, w)], col.stroke_width(1))
                        .into_dyn(),
                );
            }
            let stride = b.outliers.len().div_ceil(MAX_OUTLIERS_DRAWN).max(1);
            for &o in b.outliers.iter().step_by(stride) {
                elements.push(Circle::new((mid, o), 2, col.stroke_width(1)).into_dyn());
            }
        }
        chart
            .draw_series(elements)
            .map_err(e)?
            .label(name.as_str())
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 6), (x + 16, y + 6)], col.mix(0.6).filled())
            });
    }
    chart
        .configure_series_labels()
        .position(c.legend.position())
        .background_style(WHITE.mix(0.9))
        .border_style(BLACK)
        .label_font((FONT, 16))
        .draw()
        .map_err(e)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_stats_use_one_and_a_half_iqr_whiskers() {
        // 1..=9 and an outlier at 100: q1 = 3.25, q3 = 7.75 (type 7), IQR = 4.5, upper
        // fence 14.5: the whisker stops at 9 and 100 is an outlier.
        let mut samples: Vec<f64> = (1..=9).map(f64::from).collect();
        samples.push(100.0);
        let b = BoxStats::of(&samples).unwrap();
        assert_eq!(b.count, 10);
        assert!((b.q1 - 3.25).abs() < 1e-12, "{b:?}");
        assert!((b.median - 5.5).abs() < 1e-12);
        assert!((b.q3 - 7.75).abs() < 1e-12);
        assert_eq!(b.whisker_low, 1.0);
        assert_eq!(b.whisker_high, 9.0);
        assert_eq!(b.outliers, vec![100.0]);
        assert!(BoxStats::of(&[]).is_none());
    }

    #[test]
    fn the_mean_of_draws_is_banded_by_their_extremes() {
        let line = |ys: [f64; 2]| {
            Chart::Line(LineChart::new(
                "t",
                "x",
                "y",
                vec![Series {
                    name: "a".to_string(),
                    points: vec![(0.0, ys[0]), (2.0, ys[1])],
                }],
            ))
        };
        let Some(Chart::Line(mean)) = mean_of_draws(&[line([0.0, 4.0]), line([2.0, 2.0])]) else {
            panic!("a line chart")
        };
        assert_eq!(mean.series[0].points, vec![(0.0, 1.0), (2.0, 3.0)]);
        assert_eq!(mean.bands[0].points, vec![(0.0, 0.0, 2.0), (2.0, 2.0, 4.0)]);
        // Between points a curve is read linearly; beyond its ends, at its end value.
        assert_eq!(value_at(&[(0.0, 0.0), (2.0, 4.0)], 1.0), Some(2.0));
        assert_eq!(value_at(&[(1.0, 5.0), (2.0, 4.0)], 0.0), Some(5.0));
        assert_eq!(
            value_at(&[(1.0, 0.0), (1.0, 0.5), (2.0, 1.0)], 1.0),
            Some(0.5)
        );
        assert_eq!(value_at(&[], 1.0), None);
        let bar = |v: f64| {
            Chart::Bar(BarChart {
                title: "b".to_string(),
                x_label: String::new(),
                y_label: String::new(),
                categories: vec!["c".to_string()],
                series: vec![("s".to_string(), vec![v])],
                legend: LegendAt::UpperRight,
            })
        };
        let Some(Chart::BarRange(mean, ranges)) = mean_of_draws(&[bar(90.0), bar(100.0)]) else {
            panic!("bars with ranges")
        };
        assert_eq!(mean.series[0].1, vec![95.0]);
        assert_eq!(ranges, vec![vec![Some((90.0, 100.0))]]);
    }

    #[test]
    fn cdf_is_a_monotone_step_curve_reaching_one() {
        let samples = [0.5, 0.1, 4.0, 0.3];
        let p = cdf_points(&samples, 3.0, 1000);
        assert_eq!(p.first(), Some(&(0.1, 0.0)));
        assert_eq!(p.last(), Some(&(3.0, 1.0)));
        assert!(p.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 <= w[1].1));
        let many: Vec<f64> = (0..100_000).map(|i| i as f64).collect();
        let thin = cdf_points(&many, f64::INFINITY, 500);
        assert!(thin.len() <= 600, "{}", thin.len());
        assert_eq!(thin.last().unwrap().1, 1.0);
    }
}
