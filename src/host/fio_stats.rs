//! What fio measures of a job beside its latencies, counted as fio counts
//! it, in simulated time: bandwidth and IOPS sampled over windows
//! (`bw_min` ... `iops_samples`), the queue depth at each submission
//! (`iodepth_level`) and the latency ranges (`latency_ns`, `latency_us`,
//! `latency_ms`). fio-plot and similar tools read these fields.
//!
//! fio's helper thread samples each job every `bwavgtime` / `iopsavgtime`
//! ms (stat.c `__add_samples`): a sample is what completed since the last
//! one, a direction with nothing completed adds none. Here the windows are
//! exact, `[start + k w, start + (k + 1) w)` from the job's start, and a
//! last window the job did not fill adds no sample.

use std::collections::BTreeMap;

use crate::units::SimTime;

use super::KINDS;

/// A sampled figure as fio keeps one (stat.h `struct io_stat`, updated by
/// stat.c `add_stat_sample`): min, max, and a running mean and sum of
/// squared deviations.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SampleStat {
    /// Smallest sample.
    pub min: u64,
    /// Largest sample.
    pub max: u64,
    /// Mean of the samples.
    pub mean: f64,
    /// Sum of squared deviations from the mean (Welford's `S`).
    s: f64,
    /// Samples taken.
    pub samples: u64,
}

impl SampleStat {
    fn add(&mut self, v: u64) {
        if self.samples == 0 {
            (self.min, self.max) = (v, v);
        }
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        let delta = v as f64 - self.mean;
        self.mean += delta / (self.samples + 1) as f64;
        self.s += delta * (v as f64 - self.mean);
        self.samples += 1;
    }

    /// The sample standard deviation (stat.c `calc_lat`): 0 under two samples.
    pub fn stddev(&self) -> f64 {
        if self.samples > 1 {
            (self.s / (self.samples - 1) as f64).sqrt()
        } else {
            0.0
        }
    }

    /// `other` added in as fio's `group_reporting` adds a job's bandwidth
    /// and IOPS to its group's (stat.c `sum_stat` with `pure_sum`): min, max,
    /// mean, `S` and samples each summed, so the group's mean is the sum of
    /// its jobs' means.
    pub fn sum(&mut self, other: &SampleStat) {
        if other.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = *other;
            return;
        }
        self.min += other.min;
        self.max += other.max;
        self.mean += other.mean;
        self.s += other.s;
        self.samples += other.samples;
    }
}

/// Commands completed per window of simulated time and kind, turned into
/// one [`SampleStat`] per kind as each window closes.
#[derive(Clone, Debug)]
struct Sampler {
    window_ms: u64,
    /// 1024 for KiB/s, 1 for IOPS.
    divisor: u64,
    start: SimTime,
    /// Windows before this one are closed.
    base: u64,
    /// Counts of the open windows that completed anything, by window index:
    /// sparse, so a command that completes years later (a throttled drive)
    /// costs one entry, not one per window in between.
    open: BTreeMap<u64, [u64; KINDS]>,
    stats: [SampleStat; KINDS],
}

impl Sampler {
    fn new(window_ms: u32, divisor: u64, start: SimTime) -> Self {
        Sampler {
            window_ms: u64::from(window_ms.max(1)),
            divisor,
            start,
            base: 0,
            open: BTreeMap::new(),
            stats: Default::default(),
        }
    }

    /// The same windows, empty, from `start`.
    fn restarted(&self, start: SimTime) -> Self {
        Sampler { start, base: 0, open: BTreeMap::new(), stats: Default::default(), ..*self }
    }

    fn window(&self, t: SimTime) -> u64 {
        t.0.saturating_sub(self.start.0) / (self.window_ms * 1_000_000)
    }

    /// Closes every window that ends by `t`: a sample per kind that completed
    /// anything in it, fio's rate arithmetic (`delta * 1000 / spent`, then
    /// `/ 1024` for KiB/s).
    fn close_before(&mut self, t: SimTime) {
        let upto = self.window(t);
        while let Some(entry) = self.open.first_entry().filter(|e| *e.key() < upto) {
            for (stat, &n) in self.stats.iter_mut().zip(&entry.remove()) {
                if n > 0 {
                    let rate = u128::from(n) * 1000 / u128::from(self.window_ms) / u128::from(self.divisor);
                    stat.add(u64::try_from(rate).unwrap_or(u64::MAX));
                }
            }
        }
        self.base = self.base.max(upto);
    }

    /// A command of `kind` issued at `submitted` completed at `done`,
    /// adding `amount` to its window (1 for IOPS, its bytes for
    /// bandwidth). Later commands are issued no earlier, so windows that
    /// ended by `submitted` are complete.
    fn record(&mut self, kind: usize, submitted: SimTime, done: SimTime, amount: u64) {
        self.close_before(submitted);
        let at = self.window(done).max(self.base);
        let sum = &mut self.open.entry(at).or_insert([0; KINDS])[kind];
        *sum = sum.saturating_add(amount);
    }
}

/// fio's latency ranges: `latency_ns` and `latency_us` split at 2, 4, 10,
/// 20, 50, 100, 250, 500, 750 and 1000 of their unit, `latency_ms` adds
/// 2000 and `>=2000` (io_u.c `io_u_mark_latency`).
pub const LATENCY_RANGES: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];

/// Keys of fio's `iodepth_level`: depths 1, 2-3, 4-7, ..., 64 and over.
pub const DEPTH_LEVELS: [&str; 7] = ["1", "2", "4", "8", "16", "32", ">=64"];

/// What a job's queue counted for fio's report (see the module docs).
#[derive(Clone, Debug)]
pub struct FioStats {
    iops: Sampler,
    bw: Sampler,
    /// Submissions by queue depth, [`DEPTH_LEVELS`].
    depth: [u64; 7],
    /// Completions in the ns, us and ms ranges: 10 + 10 + 12.
    latency: [u64; 32],
}

/// What a job's queue counted for fio, once the job is done.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioCounts {
    /// IOPS samples per kind.
    pub iops: [SampleStat; KINDS],
    /// Bandwidth samples per kind, KiB/s.
    pub bw: [SampleStat; KINDS],
    /// Submissions by queue depth, keyed by [`DEPTH_LEVELS`].
    pub depth: [u64; 7],
    /// Completions by latency range: 10 in ns, 10 in us, 12 in ms.
    pub latency: [u64; 32],
}

impl FioStats {
    /// Windows of `iops_ms` and `bw_ms` from `start`.
    pub fn new(iops_ms: u32, bw_ms: u32, start: SimTime) -> Self {
        FioStats {
            iops: Sampler::new(iops_ms, 1, start),
            bw: Sampler::new(bw_ms, 1024, start),
            depth: [0; 7],
            latency: [0; 32],
        }
    }

    /// Nothing counted yet, windows from `start`: fio's reset when a job's
    /// `ramp_time` ends.
    pub(super) fn restart(&mut self, start: SimTime) {
        *self = FioStats {
            iops: self.iops.restarted(start),
            bw: self.bw.restarted(start),
            depth: [0; 7],
            latency: [0; 32],
        };
    }

    /// A command of `kind` and `bytes` issued at `submitted` with `depth`
    /// commands in flight (itself included) completed at `done`.
    pub(super) fn record(&mut self, kind: usize, submitted: SimTime, done: SimTime, depth: usize, bytes: u64) {
        self.iops.record(kind, submitted, done, 1);
        self.bw.record(kind, submitted, done, bytes);
        let level = (usize::BITS - depth.max(1).leading_zeros() - 1) as usize;
        self.depth[level.min(6)] += 1;
        let ns = done.0.saturating_sub(submitted.0);
        let range = |v: u64| LATENCY_RANGES.iter().take_while(|&&r| v >= r).count();
        let at = match ns {
            0..1_000 => range(ns),
            1_000..1_000_000 => 10 + range(ns / 1_000),
            _ => match ns / 1_000_000 {
                ms @ ..1_000 => 20 + range(ms),
                1_000..2_000 => 30,
                _ => 31,
            },
        };
        self.latency[at] += 1;
    }

    /// The counts of a job that ended at `end`: windows it did not fill
    /// add no sample.
    pub fn finish(&mut self, end: SimTime) -> FioCounts {
        self.iops.close_before(end);
        self.bw.close_before(end);
        FioCounts { iops: self.iops.stats, bw: self.bw.stats, depth: self.depth, latency: self.latency }
    }
}

impl FioCounts {
    /// `other` added in as fio's `group_reporting` adds a job to its group.
    pub fn sum(&mut self, other: &FioCounts) {
        for k in 0..KINDS {
            self.iops[k].sum(&other.iops[k]);
            self.bw[k].sum(&other.bw[k]);
        }
        self.depth.iter_mut().zip(other.depth).for_each(|(a, b)| *a += b);
        self.latency.iter_mut().zip(other.latency).for_each(|(a, b)| *a += b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn windows_sample_what_completed_in_them_and_the_unfilled_one_adds_nothing() {
        let mut s = FioStats::new(500, 500, SimTime(0));
        // 100 reads in the first window, 300 in the second, 50 in a third cut short.
        for (n, from) in [(100, 0), (300, 500 * MS), (50, 1000 * MS)] {
            for i in 0..n {
                let t = SimTime(from + i * MS);
                s.record(0, t, t, 1, 4096);
            }
        }
        let c = s.finish(SimTime(1100 * MS));
        let iops = c.iops[0];
        assert_eq!((iops.samples, iops.min, iops.max), (2, 200, 600));
        assert_eq!(iops.mean, 400.0);
        assert!((iops.stddev() - 282.842_712).abs() < 1e-5, "{}", iops.stddev());
        assert_eq!((c.bw[0].min, c.bw[0].max), (800, 2400), "KiB/s: 100 x 4 KiB in 0.5 s");
        assert_eq!(c.iops[1].samples, 0, "no writes, no samples");
        // Bandwidth sums each command's own bytes (bsrange, bssplit).
        let mut s = FioStats::new(500, 500, SimTime(0));
        s.record(1, SimTime(0), SimTime(MS), 1, 4096);
        s.record(1, SimTime(MS), SimTime(2 * MS), 1, 65536);
        let c = s.finish(SimTime(500 * MS));
        assert_eq!((c.bw[1].max, c.iops[1].max), (136, 4), "69632 B and 2 commands in 0.5 s");
    }

    #[test]
    fn a_completion_after_later_windows_lands_in_its_own() {
        let mut s = FioStats::new(100, 100, SimTime(10 * MS));
        // Issued at 10 ms, done at 350 ms: window 3. Then one issued and done at 50 ms: window 0.
        s.record(1, SimTime(10 * MS), SimTime(350 * MS), 2, 512);
        s.record(1, SimTime(50 * MS), SimTime(50 * MS), 2, 512);
        let c = s.finish(SimTime(500 * MS));
        assert_eq!(c.iops[1].samples, 2);
        assert_eq!((c.iops[1].min, c.iops[1].max), (10, 10));
        assert_eq!(c.depth, [0, 2, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn a_completion_years_later_keeps_one_window_not_one_per_window_between() {
        let mut s = FioStats::new(1, 500, SimTime(0));
        let years = SimTime(100 * 365 * 86_400 * 1_000 * MS);
        s.record(1, SimTime(0), years, 1, 4096);
        s.record(1, SimTime(2 * MS), SimTime(2 * MS), 1, 4096);
        assert_eq!((s.iops.open.len(), s.bw.open.len()), (2, 2));
        let c = s.finish(SimTime(years.0 + 1_000 * MS));
        assert_eq!((c.iops[1].samples, c.iops[1].max), (2, 1000), "one command in each of two 1 ms windows");
    }

    #[test]
    fn latency_ranges_and_depths_split_where_fio_splits_them() {
        let mut s = FioStats::new(500, 500, SimTime(0));
        let cases = [
            (1, 1, 0),
            (2, 2, 1),
            (999, 4, 9),
            (1_000, 8, 10),
            (9_999, 63, 12),
            (10_000, 64, 13),
            (999_999, 100, 19),
            (1_000_000, 1, 20),
            (1_999_999_999, 1, 30),
            (2_000_000_000, 1, 31),
        ];
        for (ns, depth, _) in cases {
            s.record(0, SimTime(0), SimTime(ns), depth, 4096);
        }
        let c = s.finish(SimTime(0));
        for (ns, _, range) in cases {
            assert!(c.latency[range] > 0, "{ns} ns in range {range}: {:?}", c.latency);
        }
        assert_eq!(c.latency.iter().sum::<u64>(), cases.len() as u64);
        assert_eq!(c.depth, [4, 1, 1, 1, 0, 1, 2]);
    }

    #[test]
    fn group_sums_add_means_as_fio_does() {
        let mut a = SampleStat::default();
        [10, 20].into_iter().for_each(|v| a.add(v));
        let mut b = SampleStat::default();
        [30, 50].into_iter().for_each(|v| b.add(v));
        let mut g = SampleStat::default();
        g.sum(&a);
        g.sum(&b);
        assert_eq!((g.min, g.max, g.mean, g.samples), (40, 70, 55.0, 4));
    }
}
