//! Which lines of a chart lie on others, so that none is drawn out of
//! sight: a series lying wholly on an earlier one is dashed and named in
//! the legend, and one sharing a stretch with later ones is drawn wider,
//! so that it shows along their edges.

/// Share of the y axis's span within which two lines lie on each other
/// (about a line's width).
const HIDDEN_SHARE: f64 = 0.005;

/// Width of a line, in pixels.
const LINE_PX: u32 = 2;

/// How much wider a line is drawn than the widest later line lying on a
/// stretch of it, in pixels, and the widest a line gets.
const WIDEN_PX: u32 = 2;
const WIDEST_PX: u32 = 8;

/// Overlap tests on the lines of one chart, whose y axis spans `span`.
#[derive(Clone, Copy, Debug)]
pub(super) struct Overlap {
    tolerance: f64,
}

impl Overlap {
    pub(super) fn new(span: f64) -> Self {
        Overlap { tolerance: HIDDEN_SHARE * span }
    }

    fn near(self, y: f64, on: Option<f64>) -> bool {
        on.is_some_and(|v| (y - v).abs() <= self.tolerance)
    }

    /// Whether `a` lies wholly on `b`: y's within the tolerance at the same
    /// x's or, for lines drawn left to right, along each other over `a`'s
    /// extent (a review's two-point level over a measured curve).
    pub(super) fn under(self, a: &[(f64, f64)], b: &[(f64, f64)]) -> bool {
        let same_xs = a.len() == b.len() && a.iter().zip(b).all(|(p, q)| p.0 == q.0 && self.near(p.1, Some(q.1)));
        let along = || {
            let (Some(first), Some(last)) = (a.first(), a.last()) else { return false };
            rightward(a)
                && rightward(b)
                && a.iter().all(|p| self.near(p.1, y_at(b, p.0)))
                && b.iter().filter(|q| (first.0..=last.0).contains(&q.0)).all(|q| self.near(q.1, y_at(a, q.0)))
        };
        !a.is_empty() && (same_xs || along())
    }

    /// Whether `b` lies on a stretch of `a`: on two neighbouring points of
    /// `a` and on every point of its own between them.
    pub(super) fn shares_stretch(self, a: &[(f64, f64)], b: &[(f64, f64)]) -> bool {
        rightward(a)
            && rightward(b)
            && a.windows(2).any(|w| {
                let on_b = w.iter().all(|p| self.near(p.1, y_at(b, p.0)));
                on_b && b.iter().filter(|q| w[0].0 < q.0 && q.0 < w[1].0).all(|q| self.near(q.1, y_at(a, q.0)))
            })
    }

    /// Line widths for `series`, drawn in order: a line is wider than
    /// every later one lying on a stretch of it, so that it shows along
    /// their edges, leaving out `skip`ped ones (a model, or a dashed copy
    /// of it, through which it shows already).
    pub(super) fn widths(self, series: &[Vec<(f64, f64)>], skip: impl Fn(usize, usize) -> bool) -> Vec<u32> {
        let mut widths = vec![LINE_PX; series.len()];
        for i in (0..series.len()).rev() {
            let over = ((i + 1)..series.len())
                .filter(|&j| !skip(i, j) && self.shares_stretch(&series[i], &series[j]))
                .map(|j| widths[j] + WIDEN_PX)
                .max();
            widths[i] = over.map_or(LINE_PX, |w| w.min(WIDEST_PX));
        }
        widths
    }
}

/// Whether a polyline's x's strictly increase.
fn rightward(pts: &[(f64, f64)]) -> bool {
    pts.windows(2).all(|w| w[0].0 < w[1].0)
}

/// The y of a [`rightward`] polyline at `x`, if `x` lies within it.
fn y_at(pts: &[(f64, f64)], x: f64) -> Option<f64> {
    let i = pts.partition_point(|p| p.0 < x);
    match (i.checked_sub(1).and_then(|j| pts.get(j)), pts.get(i)) {
        (_, Some(q)) if q.0 == x => Some(q.1),
        (Some(p), Some(q)) => Some(p.1 + (q.1 - p.1) * (x - p.0) / (q.0 - p.0)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(pts: &[(f64, f64)]) -> Vec<(f64, f64)> {
        pts.to_vec()
    }

    #[test]
    fn a_level_lies_under_a_curve_only_where_the_curve_keeps_to_it() {
        let o = Overlap::new(400.0);
        let flat: Vec<_> = (0..=8).map(|i| (i as f64, 254.0)).collect();
        let dip: Vec<_> = (0..=8).map(|i| (i as f64, if i == 4 { 230.0 } else { 254.0 })).collect();
        let level = line(&[(0.0, 254.0), (8.0, 254.0)]);
        assert!(o.under(&level, &flat) && o.under(&flat, &level));
        assert!(!o.under(&level, &dip), "the dip shows beside the level");
        assert!(!o.under(&line(&[(0.0, 250.0), (8.0, 250.0)]), &flat), "4 apart, over 2 of tolerance");
        assert!(o.under(&line(&[(2.0, 254.0), (3.0, 254.0)]), &dip), "over its own extent only");
        assert_eq!(y_at(&[(0.0, 0.0), (2.0, 4.0)], 0.5), Some(1.0));
        assert_eq!(y_at(&[(0.0, 0.0), (2.0, 4.0)], 3.0), None);
    }

    #[test]
    fn a_line_under_a_stretch_of_later_ones_is_widened() {
        let o = Overlap::new(600.0);
        // ATTO: the clean read lies under the tortured read up to 64K and
        // under the clean write from 64K on.
        let clean_read =
            line(&[(12.0, 150.0), (13.0, 300.0), (14.0, 540.0), (15.0, 560.0), (16.0, 560.0), (17.0, 560.0)]);
        let tortured =
            line(&[(12.0, 150.0), (13.0, 300.0), (14.0, 540.0), (15.0, 560.0), (16.0, 540.0), (17.0, 380.0)]);
        let write = line(&[(12.0, 100.0), (13.0, 200.0), (14.0, 400.0), (15.0, 540.0), (16.0, 560.0), (17.0, 560.0)]);
        assert!(o.shares_stretch(&clean_read, &tortured) && o.shares_stretch(&clean_read, &write));
        assert!(!o.shares_stretch(&tortured, &write), "they cross at a point, no stretch");
        let series = [clean_read, tortured, write];
        assert_eq!(o.widths(&series, |_, _| false), [4, 2, 2]);
        assert_eq!(o.widths(&series, |_, j| j == 1), [4, 2, 2], "the write alone widens it");
        assert_eq!(o.widths(&series, |_, j| j >= 1), [2, 2, 2], "skipped lines do not widen");
        // Layered: each wider than the one lying on it.
        let flat = |n: usize| -> Vec<Vec<(f64, f64)>> { (0..n).map(|_| line(&[(0.0, 1.0), (1.0, 1.0)])).collect() };
        assert_eq!(o.widths(&flat(3), |_, _| false), [6, 4, 2]);
        assert_eq!(o.widths(&flat(6), |_, _| false), [8, 8, 8, 6, 4, 2], "up to the widest");
    }
}
