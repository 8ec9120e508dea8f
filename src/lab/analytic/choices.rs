//! Random and d-choices victim selection under uniform random overwrites.
//!
//! Same definitions as the parent module (`alpha = T / U`, `b` pages per
//! block, `WA = b / (b - j)` for the victim's mean valid count `j`).

/// WA of random victim selection among all blocks: `alpha / (alpha - 1)`.
///
/// A victim drawn uniformly from all blocks holds on average the mean
/// valid count `b / alpha`, so `WA = b / (b - b / alpha)`, whatever `b`.
/// The simulator's `d-choices:1` never draws a block with nothing to
/// reclaim, which makes it better than this by a margin that shrinks as
/// blocks grow ([`wa_d_choices`] with `d = 1`: 0.91 of it at 64 pages per
/// block, 0.99 at 512, `alpha = 1.15`). Returns `+inf` for `alpha <= 1`,
/// NaN for NaN.
#[must_use]
pub fn wa_random(alpha: f64) -> f64 {
    if alpha.is_nan() {
        return f64::NAN;
    }
    if alpha <= 1.0 {
        return f64::INFINITY;
    }
    alpha / (alpha - 1.0)
}

/// WA of d-choices selection (sample `d` of the blocks that hold at least
/// one invalid page, clean the one with the fewest valid pages) in the
/// mean-field (many-blocks) limit.
///
/// Source: B. Van Houdt, "A mean field model for a class of garbage
/// collection algorithms in flash-based solid state drives", SIGMETRICS
/// 2013, whose d-choices samples among all full blocks. The fixed point
/// below is derived here in the paper's terms, not copied from it, and for
/// the simulator's variant, which leaves out blocks with nothing to
/// reclaim: at 32 pages per block and OP 15 % about one block in seven is
/// still entirely valid, and drawing one would cost a block of copies for
/// nothing (with them, `d = 1` is [`wa_random`]).
///
/// Let `x_i` be the fraction of blocks with `i` valid pages, and
/// `G_i = sum_{i <= k < b} x_k / (1 - x_b)` the share of the sampled
/// population with at least `i`. The victim has at least `i` valid pages
/// with probability `G_i^d`; it is refilled to `b` valid pages (its
/// survivors plus host writes), and each host write invalidates a
/// uniformly chosen valid page, so a block leaves level `i` at a rate
/// proportional to `i x_i`. Balancing the flow across each level boundary
/// per collection gives
///
/// `W b x_b = 1` and `W i x_i = 1 - G_i^d` for `i = 1..b`,
/// with `W = (b - E[j]) / m`,
///
/// where `m = sum i x_i = b / alpha` and `E[j]` is the victim's mean valid
/// count. For a given `W` the levels follow from the top down (each a
/// monotone scalar equation); `W` is the root of `m(W) = b / alpha`
/// (bisection), and `WA = b / (b - E[j]) = alpha / W`. Assumptions:
/// uniform random single-page overwrites of all logical pages, a block
/// enters the pool with all `b` pages valid (relocated pages share the
/// frontier with host writes), samples with replacement (the same as
/// without in the limit). `d -> infinity` gives greedy
/// ([`super::wa_greedy_mean_field`]).
///
/// Returns `+inf` for `alpha <= 1`, NaN for NaN; a zero `d` or `b` is
/// treated as 1.
#[must_use]
pub fn wa_d_choices(alpha: f64, pages_per_block: u32, d: u32) -> f64 {
    if alpha.is_nan() || alpha <= 1.0 {
        return wa_random(alpha);
    }
    let (b, d) = (pages_per_block.max(1), d.max(1));
    let target = f64::from(b) / alpha;
    // m(W) falls as W grows; WA = alpha / W >= 1 puts W in (0, alpha].
    let (mut lo, mut hi) = (alpha * 1e-12, alpha);
    if mean_valid(hi, b, d) >= target {
        return 1.0;
    }
    for _ in 0..200 {
        let mid = (lo * hi).sqrt();
        if mean_valid(mid, b, d) > target {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi / lo < 1.0 + 1e-13 {
            break;
        }
    }
    alpha / (lo * hi).sqrt()
}

/// Mean valid pages per block, `sum i x_i`, at the levels `W` implies.
fn mean_valid(w: f64, b: u32, d: u32) -> f64 {
    let full = 1.0 / (w * f64::from(b)); // x_b
    if full >= 1.0 {
        return f64::from(b);
    }
    let sampled = 1.0 - full;
    let power = i32::try_from(d).unwrap_or(i32::MAX);
    let mut tail = 0.0; // sum_{i < k < b} x_k
    let mut mean = f64::from(b) * full;
    for i in (1..b).rev() {
        let wi = w * f64::from(i);
        // Solve wi x = 1 - ((tail + x) / sampled)^d for x in
        // [0, sampled - tail]: the left side rises, the right falls.
        let (mut lo, mut hi) = (0.0, sampled - tail);
        for _ in 0..100 {
            let x = 0.5 * (lo + hi);
            if wi * x > 1.0 - ((tail + x) / sampled).powi(power) {
                hi = x;
            } else {
                lo = x;
            }
            if hi - lo < 1e-16 {
                break;
            }
        }
        let x = 0.5 * (lo + hi);
        tail += x;
        mean += f64::from(i) * x;
    }
    mean
}

#[cfg(test)]
mod tests {
    use super::super::wa_greedy_mean_field;
    use super::*;

    #[test]
    fn one_choice_approaches_random_selection_as_blocks_grow() {
        for alpha in [1.07, 1.15, 1.28, 2.0] {
            let mut last = 0.0;
            for b in [8, 64, 512, 4096] {
                let ratio = wa_d_choices(alpha, b, 1) / wa_random(alpha);
                assert!(ratio < 1.0 && ratio > last, "alpha {alpha} b {b}: {ratio} (previous {last})");
                last = ratio;
            }
            assert!(last > 0.99, "alpha {alpha}: {last}");
        }
        assert!((wa_random(1.25) - 5.0).abs() < 1e-12);
        assert_eq!(wa_random(1.0), f64::INFINITY);
        assert!(wa_random(f64::NAN).is_nan());
    }

    #[test]
    fn more_choices_fall_toward_greedy() {
        for alpha in [1.07, 1.15, 1.28] {
            let b = 64;
            let greedy = wa_greedy_mean_field(alpha, b);
            let mut last = f64::INFINITY;
            for d in [1, 2, 3, 5, 10, 30, 100] {
                let m = wa_d_choices(alpha, b, d);
                assert!(m < last && m > greedy, "alpha {alpha} d {d}: {m} (previous {last}, greedy {greedy})");
                last = m;
            }
            let many = wa_d_choices(alpha, b, 100_000);
            assert!((many / greedy - 1.0).abs() < 0.01, "alpha {alpha}: d = 1e5 gives {many}, greedy {greedy}");
        }
    }

    #[test]
    fn levels_solve_the_balance_equations() {
        // At the fixed point the mean is b / alpha.
        let (alpha, b, d) = (1.15, 32, 4);
        let wa = wa_d_choices(alpha, b, d);
        let w = alpha / wa;
        assert!((mean_valid(w, b, d) - f64::from(b) / alpha).abs() < 1e-6);
    }

    #[test]
    fn degenerate_inputs() {
        assert_eq!(wa_d_choices(1.0, 64, 2), f64::INFINITY);
        assert!(wa_d_choices(f64::NAN, 64, 2).is_nan());
        assert!(wa_d_choices(100.0, 64, 1000) >= 1.0);
        assert!(wa_d_choices(1.2, 0, 0).is_finite());
    }
}
