//! Hot/cold writes with perfect separation: two pools, each uniform.
//!
//! A fraction `f` of the logical pages receives a fraction `r` of the
//! writes, uniformly inside each part. With perfect separation hot and cold
//! pages never share a block, so each part is a uniform drive of its own
//! with `U_h = f U` and `U_c = (1 - f) U` logical pages and its share of
//! the physical space (`T_h + T_c = T`); the total is
//!
//! `WA = r WA_h(T_h / U_h) + (1 - r) WA_c(T_c / U_c)`.
//!
//! Source: P. Desnoyers, "Analytic Models of SSD Write Performance", ACM
//! TOS 10(2), 2014, section on hot and cold data (the optimal split of the
//! free space between the two pools). What remains open is how the
//! space is split, and the two functions here are its two answers:
//! [`wa_hot_cold_optimal`] splits it to minimise the total (Desnoyers'
//! bound), [`wa_hot_cold_shared_greedy`] gives the split one greedy
//! cleaner over both pools settles on.

/// WA and the hot pool's share of the physical space (`T_h / T`) when the
/// space is split to minimise the total WA; `wa` is the per-pool model
/// (a function of the pool's own `alpha`, for example
/// `|a| wa_greedy_mean_field(a, 64)`). NaN when `alpha <= 1` or the
/// fractions are outside (0, 1).
#[must_use]
pub fn wa_hot_cold_optimal(alpha: f64, f: f64, r: f64, wa: impl Fn(f64) -> f64) -> (f64, f64) {
    if !valid(alpha, f, r) {
        return (f64::NAN, f64::NAN);
    }
    // The hot pool needs more than its logical pages (share > f / alpha),
    // the cold pool likewise; the total is convex in between.
    let (lo, hi) = (f / alpha, 1.0 - (1.0 - f) / alpha);
    let total = |s: f64| r * wa(s * alpha / f) + (1.0 - r) * wa((1.0 - s) * alpha / (1.0 - f));
    let g = 0.5 * (5f64.sqrt() - 1.0);
    let (mut a, mut b) = (lo, hi);
    for _ in 0..200 {
        let (c, d) = (b - g * (b - a), a + g * (b - a));
        if total(c) < total(d) {
            b = d;
        } else {
            a = c;
        }
        if b - a < 1e-12 {
            break;
        }
    }
    let s = 0.5 * (a + b);
    (total(s), s)
}

/// WA when one greedy cleaner serves both pools (perfect separation, the
/// victim the emptiest block of either). In the mean-field limit greedy
/// settles where both pools' victims hold the same valid count, and a
/// uniform pool's victim count depends only on its own `alpha`, so both
/// pools end with the drive's `alpha`: the WA of uniform writes,
/// `wa(alpha)`, whatever `f` and `r`. Returned with the hot share `f`.
#[must_use]
pub fn wa_hot_cold_shared_greedy(alpha: f64, f: f64, r: f64, wa: impl Fn(f64) -> f64) -> (f64, f64) {
    if !valid(alpha, f, r) {
        return (f64::NAN, f64::NAN);
    }
    (wa(alpha), f)
}

fn valid(alpha: f64, f: f64, r: f64) -> bool {
    alpha > 1.0 && f > 0.0 && f < 1.0 && r > 0.0 && r < 1.0
}

#[cfg(test)]
mod tests {
    use super::super::{wa_fifo, wa_greedy_mean_field};
    use super::*;

    #[test]
    fn no_skew_splits_in_proportion_and_equals_uniform() {
        let (wa, share) = wa_hot_cold_optimal(1.15, 0.3, 0.3, wa_fifo);
        assert!((share - 0.3).abs() < 1e-6, "{share}");
        assert!((wa / wa_fifo(1.15) - 1.0).abs() < 1e-9);
    }

    #[test]
    fn skew_with_separation_beats_uniform_and_gives_the_hot_pool_more_spare() {
        let greedy = |a: f64| wa_greedy_mean_field(a, 64);
        for (f, r) in [(0.2, 0.8), (0.1, 0.9)] {
            let (opt, share) = wa_hot_cold_optimal(1.15, f, r, greedy);
            let (shared, _) = wa_hot_cold_shared_greedy(1.15, f, r, greedy);
            assert!(opt < shared, "{f}/{r}: optimal {opt} vs shared greedy {shared}");
            let hot_alpha = share * 1.15 / f;
            assert!(hot_alpha > 1.15, "the hot pool gets more than its share of spare: {hot_alpha}");
        }
        let (mild, _) = wa_hot_cold_optimal(1.15, 0.2, 0.8, greedy);
        let (strong, _) = wa_hot_cold_optimal(1.15, 0.1, 0.9, greedy);
        assert!(strong < mild, "more skew, lower optimum: {strong} vs {mild}");
    }

    #[test]
    fn nonsense_is_nan() {
        assert!(wa_hot_cold_optimal(1.0, 0.2, 0.8, wa_fifo).0.is_nan());
        assert!(wa_hot_cold_optimal(1.2, 1.5, 0.8, wa_fifo).0.is_nan());
        assert!(wa_hot_cold_shared_greedy(1.2, 0.2, 0.0, wa_fifo).0.is_nan());
    }
}
