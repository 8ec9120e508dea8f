//! Chart layout: axes and their ticks, bounds, and where the legend goes.

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::*;

pub(super) fn check_size(width: u32, height: u32) -> Result<(), PlotError> {
    if width < 300 || height < 200 {
        return Err(PlotError(format!("chart size {width}x{height} is below the 300x200 minimum")));
    }
    Ok(())
}

/// Min and max of the values, or `None` when there are none.
pub(super) fn bounds(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    values.fold(None, |acc, v| Some(acc.map_or((v, v), |(lo, hi): (f64, f64)| (lo.min(v), hi.max(v)))))
}

/// Widens a zero-width range so an axis can be drawn for it.
pub(super) fn widen(lo: f64, hi: f64) -> (f64, f64) {
    if hi - lo > 1e-9 * hi.abs().max(lo.abs()) {
        return (lo, hi);
    }
    let pad = (hi.abs() * 0.1).max(1.0);
    if lo == 0.0 {
        (0.0, hi + pad)
    } else {
        (lo - pad, hi + pad)
    }
}

/// An axis: plotted range, labelled ticks, light grid lines and decimals for tick labels; it is
/// its own plotters coordinate, so the ticks are exactly these.
#[derive(Clone)]
pub(super) struct Axis {
    pub(super) range: Range<f64>,
    pub(super) ticks: Vec<f64>,
    pub(super) light: Vec<f64>,
    pub(super) decimals: usize,
    /// Label ticks in scientific notation (steps of 1e5 and up).
    pub(super) sci: bool,
}

impl Axis {
    pub(super) fn frac(&self, v: f64) -> f64 {
        (v - self.range.start) / (self.range.end - self.range.start)
    }

    pub(super) fn label(&self, v: f64) -> String {
        if v.abs() < 1e-12 * (self.range.end - self.range.start) {
            return format!("{:.*}", self.decimals, 0.0);
        }
        if !self.sci {
            return format!("{v:.*}", self.decimals);
        }
        // 2.5e11 rather than 250000000000.
        let s = format!("{v:.3e}");
        let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
        format!("{}e{exp}", mantissa.trim_end_matches('0').trim_end_matches('.'))
    }
}

impl Ranged for Axis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, (lo, hi): (i32, i32)) -> i32 {
        lo + ((hi - lo) as f64 * self.frac(*v)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// Linear axis with at most about `max_ticks` ticks at 1/2/5 steps; `snap` extends the range to
/// whole steps.
pub(super) fn linear_axis(lo: f64, hi: f64, max_ticks: usize, snap: bool) -> Axis {
    let raw = (hi - lo) / max_ticks as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].into_iter().map(|m| m * mag).find(|&s| s >= raw * (1.0 - 1e-9)).unwrap_or(mag);
    let eps = 1e-9;
    let (lo, hi) = if snap { ((lo / step + eps).floor() * step, (hi / step - eps).ceil() * step) } else { (lo, hi) };
    let first = (lo / step - eps).ceil() as i64;
    let last = (hi / step + eps).floor() as i64;
    let ticks: Vec<f64> = (first..=last).map(|k| k as f64 * step).collect();
    let light = (first - 1..=last).map(|k| (k as f64 + 0.5) * step).filter(|v| (lo..=hi).contains(v)).collect();
    let decimals = (-step.log10().floor()).max(0.0) as usize;
    Axis { range: lo..hi, ticks, light, decimals, sci: step >= 1e5 }
}

/// Axis over log2 values: whole powers of two, thinned to at most 16 labels.
pub(super) fn log2_axis(lo: f64, hi: f64) -> Axis {
    let (lo, mut hi) = (lo.floor(), hi.ceil());
    if hi <= lo {
        hi = lo + 1.0;
    }
    let stride = ((hi - lo) / 16.0).ceil().max(1.0) as i64;
    let (first, last) = (lo as i64, hi as i64);
    let (ticks, light) = (first..=last).map(|k| k as f64).partition(|&v| (v as i64 - first) % stride == 0);
    Axis { range: lo..hi, ticks, light, decimals: 0, sci: false }
}

/// Formats a byte count with binary units: 512 -> "0.5K", 1024 -> "1K", 8388608 -> "8M".
pub(super) fn size_label(bytes: f64) -> String {
    let units = ["", "K", "M", "G", "T", "P"];
    let mut unit = 0;
    while unit + 1 < units.len() && bytes >= 0.5 * 1024f64.powi(unit as i32 + 1) {
        unit += 1;
    }
    let v = bytes / 1024f64.powi(unit as i32);
    let s = format!("{v:.2}");
    format!("{}{}", s.trim_end_matches('0').trim_end_matches('.'), units[unit])
}

pub(super) fn truncate(label: &str, max_chars: usize) -> String {
    if label.chars().count() <= max_chars {
        label.to_string()
    } else {
        let mut s: String = label.chars().take(max_chars - 1).collect();
        s.push('…');
        s
    }
}

/// Whether the segment p0-p1 touches rectangle `r` = [x0, y0, x1, y1] (Liang-Barsky clipping).
pub(super) fn segment_hits_rect(p0: (f64, f64), p1: (f64, f64), r: [f64; 4]) -> bool {
    let (dx, dy) = (p1.0 - p0.0, p1.1 - p0.1);
    let (mut t0, mut t1) = (0.0f64, 1.0f64);
    for (p, q) in [(-dx, p0.0 - r[0]), (dx, r[2] - p0.0), (-dy, p0.1 - r[1]), (dy, r[3] - p0.1)] {
        if p == 0.0 {
            if q < 0.0 {
                return false;
            }
        } else {
            let t = q / p;
            if p < 0.0 {
                t0 = t0.max(t);
            } else {
                t1 = t1.min(t);
            }
        }
    }
    t0 <= t1
}

type Ctx<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<Axis, Axis>>;

/// Title and label areas shared by both chart kinds.
pub(super) struct Frame<'a, 'b> {
    pub(super) area: DrawingArea<SVGBackend<'b>, Shift>,
    pub(super) x_desc: &'a str,
    pub(super) y_desc: &'a str,
    pub(super) x_area: u32,
}

impl<'a, 'b> Frame<'a, 'b> {
    /// Fills the background white and draws the title.
    pub(super) fn new(
        root: &DrawingArea<SVGBackend<'b>, Shift>,
        title: &str,
        x_desc: &'a str,
        y_desc: &'a str,
    ) -> Result<Self, PlotError> {
        root.fill(&WHITE)?;
        let area = if title.is_empty() { root.clone() } else { root.titled(title, font(TITLE_PX))? };
        let x_area = if x_desc.is_empty() { 34 } else { 58 };
        Ok(Frame { area, x_desc, y_desc, x_area })
    }

    /// Chart over the axes; the y label area fits the widest y tick label.
    pub(super) fn build(&self, x: &Axis, y: &Axis) -> Result<Ctx<'_, 'b>, PlotError> {
        let widest = y.ticks.iter().map(|&v| text_width(TICK_PX, &y.label(v))).max().unwrap_or(0);
        let desc = if self.y_desc.is_empty() { 0 } else { 28 };
        Ok(ChartBuilder::on(&self.area)
            .margin_top(8)
            .margin_bottom(8)
            .margin_left(10)
            .margin_right(30)
            .x_label_area_size(self.x_area)
            .y_label_area_size(widest as u32 + desc + 16)
            .build_cartesian_2d(x.clone(), y.clone())?)
    }

    /// Plot area size in pixels for these axes.
    pub(super) fn plot_dims(&self, x: &Axis, y: &Axis) -> Result<(u32, u32), PlotError> {
        Ok(self.build(x, y)?.plotting_area().dim_in_pixel())
    }

    /// Draws axes, tick labels, axis descriptions and grid lines (vertical ones if `x_grid`).
    pub(super) fn draw_mesh(
        &self,
        ctx: &mut Ctx<'_, 'b>,
        x_fmt: &dyn Fn(&f64) -> String,
        y_fmt: &dyn Fn(&f64) -> String,
        x_grid: bool,
    ) -> Result<(), PlotError> {
        let mut mesh = ctx.configure_mesh();
        mesh.x_desc(self.x_desc)
            .y_desc(self.y_desc)
            .axis_desc_style(font(DESC_PX))
            .label_style(font(TICK_PX))
            .x_label_formatter(x_fmt)
            .y_label_formatter(y_fmt)
            .bold_line_style(GRID)
            .light_line_style(GRID_LIGHT)
            .axis_style(AXIS);
        if !x_grid {
            mesh.disable_x_mesh();
        }
        Ok(mesh.draw()?)
    }
}

/// How a legend entry shows its colour.
#[derive(Clone, Copy)]
pub(super) enum Swatch {
    Line { dashed: bool },
    Box,
}

/// Legend entries (label, palette index, swatch), laid out in `cols` columns.
pub(super) struct Legend {
    pub(super) entries: Vec<(String, usize, Swatch)>,
    pub(super) cols: usize,
}

impl Legend {
    const PAD: i32 = 8;
    const SWATCH: i32 = 26;

    pub(super) fn row_height() -> i32 {
        (LEGEND_PX * 1.45).round() as i32
    }

    pub(super) fn rows(&self) -> usize {
        self.entries.len().div_ceil(self.cols)
    }

    pub(super) fn col_width(&self) -> i32 {
        let widest = self.entries.iter().map(|e| text_width(LEGEND_PX, &e.0)).max().unwrap_or(0);
        2 * Self::PAD + Self::SWATCH + widest
    }

    pub(super) fn dims(&self) -> (i32, i32) {
        (Self::PAD + self.col_width() * self.cols as i32, 2 * Self::PAD + Self::row_height() * self.rows() as i32)
    }

    /// Top-left pixel of the legend in a `(w, h)` plot area for corner (right?, top?).
    pub(super) fn origin(&self, (w, h): (u32, u32), (right, top): (bool, bool)) -> (i32, i32) {
        let (lw, lh) = self.dims();
        let x = if right { w as i32 - lw - LEGEND_INSET } else { LEGEND_INSET };
        let y = if top { LEGEND_INSET } else { h as i32 - lh - LEGEND_INSET };
        (x, y)
    }

    pub(super) fn draw(&self, area: &DrawingArea<SVGBackend<'_>, Shift>, (x, y): (i32, i32)) -> Result<(), PlotError> {
        let (lw, lh) = self.dims();
        area.draw(&Rectangle::new([(x, y), (x + lw, y + lh)], WHITE.mix(0.85).filled()))?;
        area.draw(&Rectangle::new([(x, y), (x + lw, y + lh)], GRID.stroke_width(1)))?;
        let style = font(LEGEND_PX).pos(Pos::new(HPos::Left, VPos::Center));
        let rows = self.rows();
        for (i, (label, idx, swatch)) in self.entries.iter().enumerate() {
            let cy = y + Self::PAD + Self::row_height() * (i % rows) as i32 + Self::row_height() / 2;
            let sx0 = x + Self::PAD + self.col_width() * (i / rows) as i32;
            let sx1 = sx0 + Self::SWATCH;
            let color = PALETTE[idx % PALETTE.len()];
            match swatch {
                Swatch::Line { dashed: false } => {
                    area.draw(&PathElement::new(vec![(sx0, cy), (sx1, cy)], color.stroke_width(3)))?
                }
                Swatch::Line { dashed: true } => {
                    area.draw(&DashedPathElement::new(vec![(sx0, cy), (sx1, cy)], 8, 5, color.stroke_width(3)))?
                }
                Swatch::Box => area.draw(&Rectangle::new([(sx0 + 6, cy - 7), (sx1 - 6, cy + 7)], color.filled()))?,
            }
            area.draw(&Text::new(label.as_str(), (sx1 + Self::PAD, cy), style.clone()))?;
        }
        Ok(())
    }
}

/// Picks the y axis and legend corner: the first corner (upper right, upper left, lower right,
/// lower left) free of data, else the upper corner with the fewest hits after adding headroom.
/// `y_range(Some(f))` must keep the top fraction `f` of the plot free of data; `extra` is the
/// pixel room data marks need above their values; `hits` counts data marks inside a pixel rect.
pub(super) fn place_legend(
    frame: &Frame<'_, '_>,
    x: &Axis,
    y_range: impl Fn(Option<f64>) -> Axis,
    legend: &mut Legend,
    extra: i32,
    hits: impl Fn(&Axis, &Axis, (u32, u32), [f64; 4]) -> usize,
) -> Result<(Axis, (bool, bool)), PlotError> {
    let y = y_range(None);
    if legend.entries.is_empty() {
        return Ok((y, (true, true)));
    }
    let dims = frame.plot_dims(x, &y)?;
    // Spread a tall legend over columns while it still fits the plot width.
    while legend.cols < legend.entries.len()
        && legend.dims().1 as f64 > 0.4 * dims.1 as f64
        && legend.col_width() * (legend.cols as i32 + 1) < dims.0 as i32 * 9 / 10
    {
        legend.cols += 1;
    }
    let legend = &*legend;
    let (lw, lh) = legend.dims();
    let count = |y: &Axis, corner| {
        let (lx, ly) = legend.origin(dims, corner);
        hits(x, y, dims, [lx as f64 - 4.0, ly as f64 - 4.0, (lx + lw) as f64 + 4.0, (ly + lh) as f64 + 4.0])
    };
    let corners = [(true, true), (false, true), (true, false), (false, false)];
    if let Some(&c) = corners.iter().find(|&&c| count(&y, c) == 0) {
        return Ok((y, c));
    }
    let top = (LEGEND_INSET + lh + extra + 6) as f64 / dims.1.max(1) as f64;
    if top >= 0.6 {
        return Ok((y, (true, true)));
    }
    let y = y_range(Some(top));
    let best = corners[..2].iter().copied().min_by_key(|&c| count(&y, c)).unwrap_or((true, true));
    Ok((y, best))
}

/// Draws the legend and, for an empty chart, the "no data" note.
pub(super) fn finish(
    ctx: &Ctx<'_, '_>,
    legend: &Legend,
    corner: (bool, bool),
    has_data: bool,
) -> Result<(), PlotError> {
    let area = ctx.plotting_area().strip_coord_spec();
    let dims = area.dim_in_pixel();
    if !has_data {
        let style = font(20.0).color(&MUTED).pos(Pos::new(HPos::Center, VPos::Center));
        area.draw(&Text::new("no data", (dims.0 as i32 / 2, dims.1 as i32 / 2), style))?;
    }
    if !legend.entries.is_empty() {
        legend.draw(&area, legend.origin(dims, corner))?;
    }
    Ok(())
}
