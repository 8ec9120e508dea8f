//! What a long run is about to do and roughly how long it takes, printed
//! before it starts (docs/cli.md: a run of more than a few minutes says so).
//!
//! The rate is measured, not modelled: the headline full-size torture run
//! (docs/performance.md, "Session 19: after writes began to stream")
//! wrote and read its 411 M units (fill, torture and four HD Tach passes)
//! in 14 min 44 s on this project's 2-core machine at `8500a3f`; runs
//! with content use the corpora runs' measured rate. Estimates scale the work from them
//! and are printed as "about".

/// Units per wall-second of the headline torture run: 58.6 M units a
/// drive-write, times the fill, four HD Tach passes and 2.01
/// drive-writes of torture, in 884 s.
const UNITS_PER_SECOND: f64 = 240e9 / 4096.0 * (5.0 + HEADLINE_DRIVE_WRITES) / 884.0;

/// Drive-writes of torture the headline's 20 simulated minutes gave.
const HEADLINE_DRIVE_WRITES: f64 = 2.01;

/// Host writes with their content (a corpus tiled and permuted, lz4 +
/// blake3, two threads) per wall-second: `duraflash corpus alice29
/// database log random fio-c50` (the report's five, each written four
/// times over) took 425.7 s at 16 GiB on the idle 2-core machine at
/// `2adc8bc`, 83.9 M host writes (101.9 s at 4 GiB, 206 k a second: what
/// a corpus costs beside its writes does not show).
const CORPUS_UNITS_PER_SECOND: f64 = 83_886_080.0 / 425.7;

/// NAND writes per wall-second without content, host writes and GC
/// relocations alike: `reproduce --scale full --only wa` wrote its three
/// points (OP 7, 15 and 28 %, three drive-writes each, greedy WAF 7.60,
/// 3.96 and 2.46 at 256 pages a block: 2.46e9 NAND units) in 2784 s at
/// `82b5ce0`, single-threaded beside another run.
const NAND_UNITS_PER_SECOND: f64 = 2.464e9 / 2784.0;

/// Estimates shorter than this are not announced.
const ANNOUNCE_OVER_SECS: f64 = 120.0;

/// Wall seconds of the torture protocol on `capacity` host bytes: the fill,
/// four HD Tach write sweeps and `drive_writes` of torture, or
/// `minutes` simulated minutes as the headline's 20 gave 2.01 of them.
pub(crate) fn torture_secs(capacity: u64, drive_writes: Option<f64>, minutes: f64) -> f64 {
    let dw = drive_writes.unwrap_or(HEADLINE_DRIVE_WRITES * minutes / 20.0);
    (capacity as f64 / 4096.0) * (5.0 + dw) / UNITS_PER_SECOND
}

/// Wall seconds of `corpora` corpora each written `passes` times over
/// `bytes` of the drive with their content (the fill, preconditioning and
/// the measured passes).
pub(crate) fn corpora_secs(bytes: u64, corpora: usize, passes: f64) -> f64 {
    corpora as f64 * (bytes as f64 / 4096.0) * passes / CORPUS_UNITS_PER_SECOND
}

/// Wall seconds of `reproduce`'s WA part on `capacity` host bytes: each
/// operating point in `ops` written `drive_writes` times over without
/// content, each host write costing the greedy model's WAF in NAND writes
/// (relocations included) at [`NAND_UNITS_PER_SECOND`].
pub(crate) fn wa_secs(capacity: u64, ops: &[f64], pages_per_block: u32, drive_writes: f64) -> f64 {
    let waf: f64 = ops.iter().map(|&op| duraflash::lab::analytic::wa_greedy(1.0 + op, pages_per_block)).sum();
    (capacity as f64 / 4096.0) * drive_writes * waf / NAND_UNITS_PER_SECOND
}

/// Longest estimate [`human`] spells out: a thousand days.
const HUMAN_MAX_SECS: f64 = 1000.0 * 86_400.0;

/// `2 h 10 min`, `14 min`, `90 s`; past [`HUMAN_MAX_SECS`] (or not a
/// number) a bound, never a figure cast past its type.
pub(crate) fn human(secs: f64) -> String {
    match secs {
        s if s.is_nan() => "an unknown time".into(),
        s if s > HUMAN_MAX_SECS => "more than 1000 days".into(),
        s if s >= 3600.0 => format!("{} h {:02} min", (s / 3600.0) as u64, ((s % 3600.0) / 60.0) as u64),
        s if s >= 120.0 => format!("{:.0} min", s / 60.0),
        s => format!("{s:.0} s"),
    }
}

/// Prints `what` and the estimate on stderr when the run will be long.
pub(crate) fn announce(what: &str, secs: f64, smaller: &str) {
    if secs > ANNOUNCE_OVER_SECS {
        note!("duraflash: {what}: estimated {} on 2 cores (measured rate); {smaller}", human(secs));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_headline_run_estimates_its_own_measured_time() {
        let secs = torture_secs(240_000_000_000, None, 20.0);
        assert!((secs / 884.0 - 1.0).abs() < 0.01, "{secs}");
        assert!(torture_secs(4 << 30, None, 20.0) < ANNOUNCE_OVER_SECS, "the 4 GiB model is not announced");
        for (capacity, secs) in [(4u64 << 30, 101.9), (16 << 30, 425.7)] {
            let est = corpora_secs(capacity, 5, 4.0);
            assert!((est / secs - 1.0).abs() < 0.05, "the measured corpora runs estimate their own time: {est}");
        }
        assert!(corpora_secs(240_000_000_000, 5, 4.0) > 3600.0, "five corpora on the whole drive take hours");
        assert!(
            corpora_secs(256 << 20, 5, 4.0) < ANNOUNCE_OVER_SECS,
            "the quick scale's 256 MiB model is not announced"
        );
        let wa = wa_secs(240_000_000_000, &[0.07, 0.15, 0.28], 256, 3.0);
        assert!((wa / 2784.0 - 1.0).abs() < 0.01, "the measured WA run estimates its own time: {wa}");
        assert!(
            wa_secs(1 << 30, &[0.07], 64, 3.0) < ANNOUNCE_OVER_SECS,
            "the quick scale's 1 GiB model is not announced"
        );
        assert!(wa_secs(1 << 30, &[0.07], 64, 3.0) > 2.0 * wa_secs(1 << 30, &[0.28], 64, 3.0), "less spare, more GC");
        assert_eq!(human(7800.0), "2 h 10 min");
        assert_eq!(human(840.0), "14 min");
        assert_eq!(human(1e300), "more than 1000 days", "no hour count saturated at u64::MAX");
        assert_eq!(human(f64::INFINITY), "more than 1000 days");
        assert_eq!(human(f64::NAN), "an unknown time");
    }
}
