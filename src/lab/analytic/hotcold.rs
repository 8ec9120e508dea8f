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
//! cleaner over both pools settles on (its victims at about one valid
//! count in both pools, the hot pool's up to a page emptier).

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
/// victim the emptiest block of either), in the mean-field limit, with
/// the hot pool's share of the physical space (`T_h / T`).
///
/// Greedy does not split the space itself; it keeps both pools' victims
/// at about the same valid count, and the spare follows. "About" is the
/// point: with `b` pages per block the victims' level is an integer `k`,
/// and blocks wait there in arrival order until they are taken, while
/// each keeps losing pages (a block with `i` valid pages loses one at rate
/// `i lambda`, `lambda = ` the pool's writes per logical page: `r / f`
/// hot, `(1 - r) / (1 - f)` cold). A block that loses one before its turn
/// is at `k - 1`, the lowest level, and is taken at once. With a wait `t`
/// at level `k` a pool's block is taken there with probability
/// `s = exp(-k lambda t)`, so its victims hold `j = k - 1 + s` valid pages
/// on average: the hot pool's blocks, which lose pages faster, are taken
/// emptier (`s_c = s_h^(lambda_c / lambda_h)`). Each pool is then the
/// single-pool greedy fluid model ([`super::wa_greedy_mean_field`]): the
/// levels above `k` hold `F / (i lambda)` blocks for a flow `F` of
/// blocks, level `k` holds `F (1 - s) / (k lambda)`, and
/// `F (b - j) = ` the pool's writes. Counting the pools' blocks against the
/// physical space,
///
/// `sum_p U_p / (b - j_p) (H_b - H_k + (1 - s_p) / k) = alpha / b`
///
/// (`U_p` the pool's share of the logical pages, `f` and `1 - f`) fixes `k`
/// and `t`; `WA = r b / (b - j_h) + (1 - r) b / (b - j_c)`. Both pools at
/// the drive's `alpha` (the equal-victims idealisation) is the limit of
/// equal write rates, where this is exactly the uniform model; skew makes
/// the hot pool's victims up to a page emptier, which buys it spare from
/// the cold pool and lowers the total toward Desnoyers' best split
/// ([`wa_hot_cold_optimal`]). Derived here from the same fluid model as
/// the single pool, not taken from a paper. Assumptions: uniform writes
/// inside each pool, perfect separation (relocations stay in their pool),
/// many blocks in each pool, first come first taken at the victims'
/// level (the simulator breaks ties by seal order, which favours cold
/// blocks a little more; taking every cold block first moves the result
/// by under 0.7 % at 20/80 and 10/90). NaN when `alpha <= 1` or the
/// fractions are outside (0, 1); a zero `pages_per_block` is treated as 1.
#[must_use]
pub fn wa_hot_cold_shared_greedy(alpha: f64, f: f64, r: f64, pages_per_block: u32) -> (f64, f64) {
    if !valid(alpha, f, r) {
        return (f64::NAN, f64::NAN);
    }
    let bn = pages_per_block.max(1);
    let b = f64::from(bn);
    let rho = ((1.0 - r) / (1.0 - f)) / (r / f);
    let target = alpha / b;
    // H_b - H_k, grown as k walks down.
    let mut tail = 0.0;
    for k in (1..=bn).rev() {
        let kf = f64::from(k);
        // Blocks of each pool (per logical page) at level k with the hot
        // pool's chance `s` of being taken there.
        let blocks =
            |s: f64| [(f, s), (1.0 - f, s.powf(rho))].map(|(u, s)| u / (b - (kf - 1.0 + s)) * (tail + (1.0 - s) / kf));
        let space = |s: f64| blocks(s).iter().sum::<f64>();
        if space(0.0) >= target {
            // space falls as s grows from 0 toward 1 (at s = 1 both are
            // taken at k): bisect.
            let (mut lo, mut hi) = (0.0, 1.0);
            for _ in 0..200 {
                let mid = 0.5 * (lo + hi);
                if space(mid) >= target {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            let s = 0.5 * (lo + hi);
            let (jh, jc) = (kf - 1.0 + s, kf - 1.0 + s.powf(rho));
            let [bh, bc] = blocks(s);
            return (r * b / (b - jh) + (1.0 - r) * b / (b - jc), bh / (bh + bc));
        }
        tail += 1.0 / kf;
    }
    // Victims hold nothing: no copies.
    (1.0, f)
}

/// WA of FIFO / LRW cleaning when hot and cold writes share the open
/// blocks (no separation): a fraction `f` of the logical pages receives a
/// fraction `r` of the writes, uniform inside each part.
///
/// A page written at the head of the log reaches its tail after the whole
/// physical space has been written once more, `alpha U / A` host writes
/// later, and survives to be copied with probability
/// `s_p = exp(-lambda_p alpha / A)`, `lambda_p` its part's writes per
/// logical page (`r / f` hot, `(1 - r) / (1 - f)` cold). Each host write of
/// a part's page is then programmed `1 / (1 - s_p)` times on average, so
///
/// `A = r / (1 - s_h) + (1 - r) / (1 - s_c)`,
///
/// solved here by bisection (the right-hand side grows more slowly than
/// `A` past the root). With `f = r` it is [`super::wa_fifo`]. Source:
/// P. Desnoyers, "Analytic Modeling of SSD Write Performance", SYSTOR 2012
/// (LRW under non-uniform traffic, exact as the block count grows), in
/// this fixed-point form. Skew makes FIFO worse than uniform writes: cold
/// pages survive nearly every pass and are copied again and again.
/// NaN when `alpha <= 1` or the fractions are outside (0, 1).
#[must_use]
pub fn wa_fifo_hot_cold(alpha: f64, f: f64, r: f64) -> f64 {
    if !valid(alpha, f, r) {
        return f64::NAN;
    }
    let parts = [(r, r / f), (1.0 - r, (1.0 - r) / (1.0 - f))];
    let excess = |a: f64| parts.iter().map(|&(w, lambda)| w / -(-lambda * alpha / a).exp_m1()).sum::<f64>() - a;
    let (mut lo, mut hi) = (1.0, 2.0);
    while excess(hi) > 0.0 {
        (lo, hi) = (hi, 2.0 * hi);
        if hi > 1e12 {
            return f64::INFINITY;
        }
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if excess(mid) > 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
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
            let (shared, _) = wa_hot_cold_shared_greedy(1.15, f, r, 64);
            assert!(opt < shared, "{f}/{r}: optimal {opt} vs shared greedy {shared}");
            let hot_alpha = share * 1.15 / f;
            assert!(hot_alpha > 1.15, "the hot pool gets more than its share of spare: {hot_alpha}");
        }
        let (mild, _) = wa_hot_cold_optimal(1.15, 0.2, 0.8, greedy);
        let (strong, _) = wa_hot_cold_optimal(1.15, 0.1, 0.9, greedy);
        assert!(strong < mild, "more skew, lower optimum: {strong} vs {mild}");
    }

    #[test]
    fn fifo_mixed_equals_uniform_without_skew_and_worsens_with_it() {
        for alpha in [1.07, 1.15, 1.28] {
            let same = wa_fifo_hot_cold(alpha, 0.3, 0.3);
            assert!((same / wa_fifo(alpha) - 1.0).abs() < 1e-9, "{alpha}: {same} vs {}", wa_fifo(alpha));
            let mild = wa_fifo_hot_cold(alpha, 0.2, 0.8);
            let strong = wa_fifo_hot_cold(alpha, 0.1, 0.9);
            assert!(wa_fifo(alpha) < mild && mild < strong, "{alpha}: {} < {mild} < {strong}", wa_fifo(alpha));
        }
    }

    #[test]
    fn nonsense_is_nan() {
        assert!(wa_hot_cold_optimal(1.0, 0.2, 0.8, wa_fifo).0.is_nan());
        assert!(wa_hot_cold_optimal(1.2, 1.5, 0.8, wa_fifo).0.is_nan());
        assert!(wa_hot_cold_shared_greedy(1.2, 0.2, 0.0, 32).0.is_nan());
        assert!(wa_fifo_hot_cold(1.0, 0.2, 0.8).is_nan());
        assert!(wa_fifo_hot_cold(1.2, 0.2, 1.0).is_nan());
        assert!(wa_hot_cold_shared_greedy(0.9, 0.2, 0.8, 32).0.is_nan());
    }

    #[test]
    fn shared_greedy_without_skew_is_the_uniform_model() {
        for (alpha, b) in [(1.07, 32), (1.15, 32), (1.28, 64), (1.5, 16)] {
            let (wa, share) = wa_hot_cold_shared_greedy(alpha, 0.3, 0.3, b);
            assert!((wa / wa_greedy_mean_field(alpha, b) - 1.0).abs() < 1e-9, "{alpha} {b}: {wa}");
            assert!((share - 0.3).abs() < 1e-9, "{share}");
        }
    }

    #[test]
    fn shared_greedy_lies_between_the_best_split_and_equal_pools() {
        for alpha in [1.07, 1.1, 1.15, 1.2, 1.28] {
            for (f, r) in [(0.2, 0.8), (0.1, 0.9), (0.3, 0.6)] {
                let (opt, _) = wa_hot_cold_optimal(alpha, f, r, |a| wa_greedy_mean_field(a, 32));
                let (shared, share) = wa_hot_cold_shared_greedy(alpha, f, r, 32);
                let equal = wa_greedy_mean_field(alpha, 32);
                assert!(opt < shared && shared <= equal + 1e-12, "{alpha} {f}/{r}: {opt} < {shared} <= {equal}");
                // The hot pool's emptier victims buy it spare.
                assert!(share >= f - 1e-12, "{alpha} {f}/{r}: hot share {share}");
            }
        }
        // One-page blocks never copy.
        assert_eq!(wa_hot_cold_shared_greedy(1.2, 0.2, 0.8, 1).0, 1.0);
    }
}
