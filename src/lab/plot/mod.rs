//! SVG charts for benchmark reports: HD Tach-style throughput curves, ATTO transfer-size sweeps
//! (log2 x axis), WAF-vs-OP curves and grouped bar charts, drawn with `plotters`' SVG backend.
//!
//! Text is emitted as SVG `<text>` elements, so rendering needs no system font library. Non-finite
//! values are skipped; a chart without data still shows its axes and a "no data" note. The legend
//! goes into the first plot corner free of data, or the y axis gets headroom to make one free.

use std::fmt;
use std::path::Path;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

mod layout;
mod overlap;

use layout::*;
use overlap::Overlap;
/// Error while rendering or writing a chart.
#[derive(Debug)]
pub struct PlotError(pub String);

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "plot: {}", self.0)
    }
}

impl std::error::Error for PlotError {}

impl<E: std::error::Error + Send + Sync> From<DrawingAreaErrorKind<E>> for PlotError {
    fn from(e: DrawingAreaErrorKind<E>) -> Self {
        PlotError(e.to_string())
    }
}

/// One named curve or set of points.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A line chart with one curve per series; series 9 and up are dashed, and
/// so is a series lying on an earlier one (drawn over it, it would hide
/// it), whose legend entry names that series; a series that later ones lie
/// on for a stretch is drawn wider, to show along their edges. A model's curve (see
/// [`LineChart::models`]) takes the colour of the series it models and is
/// drawn thin and dashed, without markers, so the measured points stay
/// visible under it.
#[derive(Debug, Clone, PartialEq)]
pub struct LineChart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// Start the y axis at zero (or below, for negative data).
    pub y_from_zero: bool,
    /// Base-2 logarithmic x axis with byte-size tick labels (0.5K, 1K, ... 8M); x <= 0 is skipped.
    pub x_log2: bool,
    pub width: u32,
    pub height: u32,
    /// (model, measured) series index pairs: the first is a model of the second.
    pub models: Vec<(usize, usize)>,
}

impl Default for LineChart {
    fn default() -> Self {
        LineChart {
            title: String::new(),
            x_label: String::new(),
            y_label: String::new(),
            series: Vec::new(),
            y_from_zero: false,
            x_log2: false,
            width: DEFAULT_WIDTH,
            height: DEFAULT_HEIGHT,
            models: Vec::new(),
        }
    }
}

/// How one series of a line chart is drawn.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Pen {
    /// Palette index (past the palette: dashed).
    colour: usize,
    dashed: bool,
    /// A model's curve: thin, no markers.
    model: bool,
}

/// The pens of `n` series: measured series take the palette in order, a
/// series identical to an earlier one is dashed, and a model takes its
/// measured series' colour.
fn pens(n: usize, same_as: &[Option<usize>], models: &[(usize, usize)]) -> Vec<Pen> {
    let model_of = |i: usize| models.iter().find(|&&(m, of)| m == i && of < n && of != i).map(|&(_, of)| of);
    let mut next = 0;
    let mut pens: Vec<Pen> = (0..n)
        .map(|i| {
            if model_of(i).is_some() {
                return Pen { colour: 0, dashed: true, model: true };
            }
            let colour = next;
            next += 1;
            Pen { colour, dashed: colour >= PALETTE.len() || same_as[i].is_some(), model: false }
        })
        .collect();
    for i in 0..n {
        if let Some(of) = model_of(i) {
            pens[i].colour = pens[of].colour;
        }
    }
    pens
}

/// Grouped vertical bars: one cluster per category, one bar (and legend entry) per group.
#[derive(Debug, Clone, PartialEq)]
pub struct BarChart {
    pub title: String,
    pub y_label: String,
    pub categories: Vec<String>,
    /// (group name, one value per category); missing or non-finite values leave a gap.
    pub groups: Vec<(String, Vec<f64>)>,
    pub width: u32,
    pub height: u32,
}

impl Default for BarChart {
    fn default() -> Self {
        BarChart {
            title: String::new(),
            y_label: String::new(),
            categories: Vec::new(),
            groups: Vec::new(),
            width: DEFAULT_WIDTH,
            height: DEFAULT_HEIGHT,
        }
    }
}

const DEFAULT_WIDTH: u32 = 900;
const DEFAULT_HEIGHT: u32 = 500;
const FONT: &str = "sans-serif";
/// Okabe-Ito colour-blind-safe palette (yellow swapped for olive, which reads on white).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0x00, 0x72, 0xB2),
    RGBColor(0xD5, 0x5E, 0x00),
    RGBColor(0x00, 0x9E, 0x73),
    RGBColor(0xCC, 0x79, 0xA7),
    RGBColor(0xE6, 0x9F, 0x00),
    RGBColor(0x56, 0xB4, 0xE9),
    RGBColor(0x33, 0x33, 0x33),
    RGBColor(0x99, 0x99, 0x33),
];
const TEXT: RGBColor = RGBColor(0x22, 0x22, 0x22);
const MUTED: RGBColor = RGBColor(0x80, 0x80, 0x80);
const AXIS: RGBColor = RGBColor(0x55, 0x55, 0x55);
const GRID: RGBColor = RGBColor(0xD9, 0xD9, 0xD9);
const GRID_LIGHT: RGBColor = RGBColor(0xF0, 0xF0, 0xF0);
const TITLE_PX: f64 = 22.0;
const DESC_PX: f64 = 16.0;
const TICK_PX: f64 = 14.0;
const LEGEND_PX: f64 = 15.0;
const VALUE_PX: f64 = 12.0;
/// Gap between the plot edge and the legend box, in pixels.
const LEGEND_INSET: i32 = 10;
/// Series with at most this many points get a marker on every point.
const MARKER_MAX_POINTS: usize = 24;

/// Text style whose SVG `font-size` is `px` (plotters divides the size by 1.24 when writing SVG).
fn font(px: f64) -> TextStyle<'static> {
    (FONT, px * 1.24).into_font().color(&TEXT)
}

/// Generous width estimate of `text` at `px` (sans-serif glyphs average about 0.6 em).
fn text_width(px: f64, text: &str) -> i32 {
    (0.6 * px * text.chars().count() as f64).ceil() as i32
}

/// Draws a line chart into an SVG file at `path`.
pub fn line_chart(path: &Path, chart: &LineChart) -> Result<(), PlotError> {
    check_size(chart.width, chart.height)?;
    let series: Vec<Vec<(f64, f64)>> = chart
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter(|(x, y)| x.is_finite() && y.is_finite() && (!chart.x_log2 || *x > 0.0))
                .map(|&(x, y)| (if chart.x_log2 { x.log2() } else { x }, y))
                .collect()
        })
        .collect();
    let all = || series.iter().flatten();
    let has_data = all().next().is_some();
    let (xs, ys) = (bounds(all().map(|p| p.0)), bounds(all().map(|p| p.1)));
    // The first earlier series each one lies wholly on, if any.
    let span = ys.map_or(0.0, |(lo, hi)| if chart.y_from_zero { hi.max(0.0) - lo.min(0.0) } else { hi - lo });
    let overlap = Overlap::new(span);
    let same_as: Vec<Option<usize>> =
        (0..series.len()).map(|i| (0..i).find(|&j| overlap.under(&series[i], &series[j]))).collect();

    let x = match xs {
        Some((lo, hi)) if chart.x_log2 => log2_axis(lo, hi),
        None if chart.x_log2 => log2_axis(0.0, 10.0),
        Some((lo, hi)) => {
            let (lo, hi) = widen(lo, hi);
            // Fewer ticks when long labels would collide.
            let fits = |a: &Axis| {
                let widest = a.ticks.iter().map(|&v| text_width(TICK_PX, &a.label(v))).max().unwrap_or(0);
                (widest + 12) as usize * a.ticks.len() <= chart.width as usize * 3 / 4
            };
            (2..=10)
                .rev()
                .map(|n| linear_axis(lo, hi, n, false))
                .find(fits)
                .unwrap_or_else(|| linear_axis(lo, hi, 1, false))
        }
        None => linear_axis(0.0, 1.0, 5, false),
    };
    let y_range = |headroom_top: Option<f64>| {
        let Some((mut lo, mut hi)) = ys else { return linear_axis(0.0, 1.0, 5, true) };
        if chart.y_from_zero {
            lo = lo.min(0.0);
            hi = hi.max(0.0);
        }
        let (lo, hi) = widen(lo, hi);
        let pad = 0.05 * (hi - lo);
        let lo = if lo == 0.0 && chart.y_from_zero { 0.0 } else { lo - pad };
        let hi = headroom_top.map_or(hi + pad, |f| (hi - lo * f) / (1.0 - f));
        linear_axis(lo, hi, 8, true)
    };

    let pens = pens(series.len(), &same_as, &chart.models);
    let widths = overlap.widths(&series, |i, j| pens[i].model || pens[j].model || same_as[j] == Some(i));
    let mut legend = Legend {
        entries: chart
            .series
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.name.is_empty())
            .map(|(i, s)| {
                let swatch = Swatch::Line { dashed: pens[i].dashed };
                match same_as[i].filter(|&j| !chart.series[j].name.is_empty()) {
                    Some(j) => {
                        let sign = if series[i] == series[j] { '=' } else { '≈' };
                        (format!("{} ({sign} {})", s.name, chart.series[j].name), pens[i].colour, swatch)
                    }
                    None => (s.name.clone(), pens[i].colour, swatch),
                }
            })
            .collect(),
        cols: 1,
    };
    let obstacles = |x: &Axis, y: &Axis, (w, h): (u32, u32), r: [f64; 4]| {
        let map = |&(px, py): &(f64, f64)| (x.frac(px) * w as f64, (1.0 - y.frac(py)) * h as f64);
        series
            .iter()
            .map(|pts| {
                let mapped: Vec<(f64, f64)> = pts.iter().map(map).collect();
                match mapped.as_slice() {
                    [p] => usize::from(segment_hits_rect(*p, *p, r)),
                    m => m.windows(2).filter(|w| segment_hits_rect(w[0], w[1], r)).count(),
                }
            })
            .sum()
    };

    let root = SVGBackend::new(path, (chart.width, chart.height)).into_drawing_area();
    let frame = Frame::new(&root, &chart.title, &chart.x_label, &chart.y_label)?;
    let (y, corner) = place_legend(&frame, &x, y_range, &mut legend, 0, obstacles)?;
    let x_fmt = |v: &f64| if chart.x_log2 { size_label(v.exp2()) } else { x.label(*v) };
    let y_fmt = |v: &f64| y.label(*v);
    let mut ctx = frame.build(&x, &y)?;
    frame.draw_mesh(&mut ctx, &x_fmt, &y_fmt, true)?;

    // Models last, over what they model.
    let order = (0..series.len()).filter(|&i| !pens[i].model).chain((0..series.len()).filter(|&i| pens[i].model));
    for i in order {
        let (pts, pen) = (&series[i], pens[i]);
        let width = if pen.model { 1 } else { widths[i] };
        let style = PALETTE[pen.colour % PALETTE.len()].stroke_width(width);
        if pen.dashed {
            ctx.draw_series(DashedLineSeries::new(pts.iter().copied(), 8, 5, style))?;
        } else {
            ctx.draw_series(LineSeries::new(pts.iter().copied(), style))?;
        }
        if pts.len() <= MARKER_MAX_POINTS && !pen.model {
            ctx.draw_series(pts.iter().map(|&p| Circle::new(p, width + 1, style.color.filled())))?;
        }
    }
    finish(&ctx, &legend, corner, has_data)?;
    root.present()?;
    Ok(())
}

/// Draws a grouped vertical bar chart into an SVG file at `path`.
pub fn bar_chart(path: &Path, chart: &BarChart) -> Result<(), PlotError> {
    check_size(chart.width, chart.height)?;
    let n = chart.categories.len();
    let ng = chart.groups.len().max(1);
    // (category, group, value) of every drawable bar.
    let bars: Vec<(usize, usize, f64)> = chart
        .groups
        .iter()
        .enumerate()
        .flat_map(|(g, (_, vals))| vals.iter().take(n).enumerate().map(move |(c, &v)| (c, g, v)))
        .filter(|b| b.2.is_finite())
        .collect();
    let has_data = !bars.is_empty();
    let bar_x = |c: usize, g: usize| {
        let w = 0.8 / ng as f64;
        let x0 = c as f64 + 0.1 + g as f64 * w;
        (x0 + 0.06 * w, x0 + 0.94 * w)
    };

    let ticks: Vec<f64> = (0..n).map(|c| c as f64 + 0.5).collect();
    let x = Axis { range: 0.0..n.max(1) as f64, ticks, light: Vec::new(), decimals: 0, sci: false };
    let vs = bounds(bars.iter().map(|b| b.2));
    let y_range = |headroom_top: Option<f64>| {
        let Some((lo, hi)) = vs else { return linear_axis(0.0, 1.0, 5, true) };
        let (lo, hi) = widen(lo.min(0.0), hi.max(0.0));
        let lo = if lo < 0.0 { lo - 0.08 * (hi - lo) } else { 0.0 };
        let hi = headroom_top.map_or(hi + 0.08 * (hi - lo), |f| (hi - lo * f) / (1.0 - f));
        linear_axis(lo, hi, 8, true)
    };

    let mut legend = Legend {
        entries: chart
            .groups
            .iter()
            .enumerate()
            .filter(|(_, (name, _))| !name.is_empty())
            .map(|(i, (name, _))| (name.clone(), i, Swatch::Box))
            .collect(),
        cols: 1,
    };
    let obstacles = |x: &Axis, y: &Axis, (w, h): (u32, u32), r: [f64; 4]| {
        let (w, h) = (w as f64, h as f64);
        bars.iter()
            .filter(|&&(c, g, v)| {
                let (x0, x1) = bar_x(c, g);
                let (y0, y1) = ((1.0 - y.frac(v.max(0.0))) * h, (1.0 - y.frac(v.min(0.0))) * h);
                // Value labels sit up to ~20 px beyond the bar end.
                let bar = [x.frac(x0) * w, y0 - 20.0, x.frac(x1) * w, y1 + 20.0];
                bar[0] < r[2] && r[0] < bar[2] && bar[1] < r[3] && r[1] < bar[3]
            })
            .count()
    };

    let root = SVGBackend::new(path, (chart.width, chart.height)).into_drawing_area();
    let frame = Frame::new(&root, &chart.title, "", &chart.y_label)?;
    let (y, corner) = place_legend(&frame, &x, y_range, &mut legend, 20, obstacles)?;
    let mut ctx = frame.build(&x, &y)?;
    let slot_px = ctx.plotting_area().dim_in_pixel().0 as f64 / n.max(1) as f64;
    let max_chars = ((slot_px - 4.0) / (0.6 * TICK_PX)).max(2.0) as usize;
    let x_fmt = |v: &f64| {
        let label = chart.categories.get(v.floor().max(0.0) as usize).map_or("", String::as_str);
        truncate(label, max_chars)
    };
    let y_fmt = |v: &f64| y.label(*v);
    frame.draw_mesh(&mut ctx, &x_fmt, &y_fmt, false)?;

    if y.range.start < 0.0 {
        ctx.draw_series(std::iter::once(PathElement::new(vec![(x.range.start, 0.0), (x.range.end, 0.0)], AXIS)))?;
    }
    // Value labels with three significant digits of the largest value, on all bars or none.
    let max_abs = bars.iter().map(|b| b.2.abs()).fold(0.0, f64::max);
    let decimals = (2.0 - max_abs.log10().floor()).clamp(0.0, 3.0) as usize;
    let value_label = |v: f64| format!("{v:.decimals$}");
    let bar_px = bar_x(0, 0).1 - bar_x(0, 0).0;
    let labelled = bars.iter().all(|b| text_width(VALUE_PX, &value_label(b.2)) as f64 <= bar_px * slot_px + 6.0);
    let value_style = font(VALUE_PX);
    for &(c, g, v) in &bars {
        let (x0, x1) = bar_x(c, g);
        let color = PALETTE[g % PALETTE.len()];
        ctx.draw_series(std::iter::once(Rectangle::new([(x0, 0.0), (x1, v)], color.filled())))?;
        if labelled {
            let (dy, vpos) = if v < 0.0 { (4, VPos::Top) } else { (-4, VPos::Bottom) };
            let text = Text::new(value_label(v), (0, dy), value_style.pos(Pos::new(HPos::Center, vpos)));
            ctx.draw_series(std::iter::once(EmptyElement::at(((x0 + x1) / 2.0, v)) + text))?;
        }
    }
    finish(&ctx, &legend, corner, has_data)?;
    root.present()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn out(name: &str) -> PathBuf {
        // A directory a process: two test runs at once would write the same files.
        let dir = std::env::temp_dir().join(format!("duraflash_plot_tests_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    fn read_svg(path: &Path, texts: &[&str]) -> String {
        let svg = std::fs::read_to_string(path).unwrap();
        assert!(svg.starts_with("<svg"), "{}", &svg[..svg.len().min(80)]);
        for t in texts {
            assert!(svg.contains(t), "{} lacks {t:?}", path.display());
        }
        svg
    }

    fn curve(n: usize, f: impl Fn(f64) -> f64) -> Vec<(f64, f64)> {
        (0..=n)
            .map(|i| {
                let x = 240.0 * i as f64 / n as f64;
                (x, f(x))
            })
            .collect()
    }

    #[test]
    fn hd_tach_line_chart_with_nan() {
        let mut tortured = curve(200, |x| 180.0 + 40.0 * (x / 17.0).sin());
        tortured[50].1 = f64::NAN;
        tortured[51].0 = f64::NAN;
        let chart = LineChart {
            title: "HD Tach: sequential read".into(),
            x_label: "position (GB)".into(),
            y_label: "MB/s".into(),
            series: vec![
                Series { name: "clean read".into(), points: curve(200, |x| 265.0 - x * 0.05) },
                Series { name: "tortured read".into(), points: tortured },
                Series { name: "after TRIM read".into(), points: curve(200, |x| 250.0 - (x / 30.0).cos() * 5.0) },
            ],
            y_from_zero: true,
            ..Default::default()
        };
        let path = out("hdtach.svg");
        line_chart(&path, &chart).unwrap();
        let svg = read_svg(&path, &["HD Tach: sequential read", "clean read", "tortured read", "after TRIM read"]);
        assert!(!svg.contains("NaN"));
    }

    #[test]
    fn a_series_under_an_earlier_one_is_dashed_and_named() {
        let polylines = |name: &str, first: Vec<(f64, f64)>, second: Vec<(f64, f64)>| {
            let series = vec![
                Series { name: "after TRIM".into(), points: first },
                Series { name: "after 2nd TRIM".into(), points: second },
            ];
            line_chart(&out(name), &LineChart { series, y_from_zero: true, ..Default::default() }).unwrap();
            std::fs::read_to_string(out(name)).unwrap()
        };
        let flat = || curve(64, |_| 254.0);
        let same = polylines("same.svg", flat(), curve(64, |_| 254.0));
        let near = polylines("near.svg", flat(), curve(64, |_| 254.5));
        let apart = polylines("apart.svg", flat(), curve(64, |_| 250.0));
        assert!(same.contains("after 2nd TRIM (= after TRIM)"), "the legend names the series it hides");
        assert!(near.contains("after 2nd TRIM (≈ after TRIM)"), "a series within a line's width is hidden too");
        assert!(!apart.contains("(= ") && !apart.contains("(≈ "));
        let count = |svg: &str| svg.matches("<polyline").count();
        assert!(count(&same) > count(&apart) + 10, "drawn in dashes: {} vs {}", count(&same), count(&apart));
        // A review's level, two points, over a measured curve of 65.
        let level = |y: f64| vec![(0.0, y), (240.0, y)];
        assert!(polylines("level.svg", flat(), level(254.0)).contains("(≈ after TRIM)"), "a level on the curve");
        assert!(!polylines("level-apart.svg", flat(), level(250.0)).contains("(≈ "), "a level apart from it");
        let dip = curve(64, |x| if (100.0..140.0).contains(&x) { 230.0 } else { 254.0 });
        assert!(!polylines("dip.svg", dip, level(254.0)).contains("(≈ "), "a curve that leaves the level shows");
    }

    #[test]
    fn a_model_takes_its_series_colour_thin_and_dashed_over_its_points() {
        let measured = curve(4, |x| 6.0 - x / 60.0);
        let model = curve(4, |x| 6.05 - x / 60.0);
        let chart = LineChart {
            series: vec![
                Series { name: "fifo".into(), points: measured.clone() },
                Series { name: "fifo (model)".into(), points: model },
                Series { name: "greedy".into(), points: curve(4, |x| 5.0 - x / 60.0) },
            ],
            models: vec![(1, 0)],
            ..Default::default()
        };
        let path = out("models.svg");
        line_chart(&path, &chart).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        let hex = |c: RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
        let (first, second) = (hex(PALETTE[0]), hex(PALETTE[1]));
        assert!(svg.contains(&second), "greedy keeps the second colour: the model takes none of its own");
        let thin = svg.matches(&format!("stroke=\"{first}\" stroke-width=\"1\"")).count();
        assert!(thin > 1, "the model is thin and dashed in fifo's colour: {thin} dashes");
        let markers = svg.matches("<circle").count();
        assert_eq!(markers, 2 * measured.len(), "markers on the measured series only");
    }

    #[test]
    fn atto_log2_chart() {
        let sizes: Vec<f64> = (9..=23).map(|k| 2f64.powi(k)).collect();
        let read = sizes.iter().map(|&s| (s, 280.0 * s / (s + 16384.0))).collect();
        let write = sizes.iter().map(|&s| (s, 250.0 * s / (s + 32768.0))).collect();
        let chart = LineChart {
            title: "ATTO: transfer size sweep".into(),
            x_label: "transfer size (bytes)".into(),
            y_label: "MB/s".into(),
            series: vec![Series { name: "read".into(), points: read }, Series { name: "write".into(), points: write }],
            y_from_zero: true,
            x_log2: true,
            ..Default::default()
        };
        let path = out("atto.svg");
        line_chart(&path, &chart).unwrap();
        read_svg(&path, &["ATTO: transfer size sweep", ">\n0.5K\n<", ">\n1K\n<", ">\n8M\n<", "read", "write"]);
    }

    #[test]
    fn grouped_bar_chart() {
        let chart = BarChart {
            title: "Write amplification by corpus".into(),
            y_label: "WAF".into(),
            categories: vec!["zeros".into(), "text".into(), "database".into(), "random".into()],
            groups: vec![
                ("7% OP".into(), vec![0.12, 0.61, 0.83, 1.12]),
                ("28% OP".into(), vec![0.11, 0.55, 0.71, f64::NAN]),
            ],
            ..Default::default()
        };
        let path = out("bars.svg");
        bar_chart(&path, &chart).unwrap();
        read_svg(&path, &["Write amplification by corpus", "7% OP", "28% OP", "database", "1.12"]);
    }

    #[test]
    fn empty_charts_render_axes_and_note() {
        let path = out("empty_line.svg");
        let chart = LineChart {
            title: "Empty".into(),
            series: vec![Series { name: "nothing".into(), points: vec![(f64::NAN, 1.0)] }],
            x_log2: true,
            ..Default::default()
        };
        line_chart(&path, &chart).unwrap();
        read_svg(&path, &["Empty", "no data", "nothing"]);
        let path = out("empty_bars.svg");
        bar_chart(&path, &BarChart { title: "No bars".into(), ..Default::default() }).unwrap();
        read_svg(&path, &["No bars", "no data"]);
    }

    #[test]
    fn bad_size_and_path_are_errors() {
        let chart = LineChart { width: 10, ..Default::default() };
        assert!(line_chart(&out("tiny.svg"), &chart).is_err());
        let missing = std::env::temp_dir().join("duraflash_no_such_dir").join("x.svg");
        assert!(line_chart(&missing, &LineChart::default()).is_err());
    }

    #[test]
    fn size_labels() {
        assert_eq!(size_label(512.0), "0.5K");
        assert_eq!(size_label(1024.0), "1K");
        assert_eq!(size_label(8.0 * 1024.0 * 1024.0), "8M");
        assert_eq!(size_label(256.0), "256");
    }
}
