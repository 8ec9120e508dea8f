//! Latencies as a queue keeps them: a log-linear histogram with exact
//! count, mean and max ([`LatencyHistogram`]), and what it sums up to
//! ([`QueueSummary`], [`FioLatency`]).

use serde::Serialize;

use super::FioBins;

/// Sub-buckets per power of two in a [`LatencyHistogram`]: values are
/// kept to within 1/128 (under 0.8%); below 128 ns exactly.
const SUB_BITS: u32 = 7;

/// Counters in one row of a [`LatencyHistogram`]: one power of two.
const ROW: usize = 1 << SUB_BITS;

/// Latencies in log-linear buckets, percentiles within 0.4%; count, mean
/// and max exact. Buckets come in rows of `ROW`, one row per power of
/// two, each allocated when a latency first falls in it: a queue's
/// latencies span a few of the 58 rows, and a throwaway queue (one per
/// [`crate::Drive::write`]) then costs a few KiB rather than all 7.4k
/// counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LatencyHistogram {
    /// Row `r` counts buckets `r * ROW ..`; empty until counted in.
    rows: Vec<Option<Box<[u64; ROW]>>>,
    count: u64,
    sum: u128,
    /// Sum of squares, for the standard deviation.
    sum_sq: u128,
    /// Smallest latency counted (meaningless while `count` is 0).
    min: u64,
    max: u64,
}

impl LatencyHistogram {
    fn bucket(v: u64) -> usize {
        if v < 1 << SUB_BITS {
            return v as usize;
        }
        let shift = 63 - v.leading_zeros() - SUB_BITS;
        (((shift + 1) as usize) << SUB_BITS) + ((v >> shift) as usize - (1 << SUB_BITS))
    }

    /// The middle of bucket `b`'s range of values.
    fn value(b: usize) -> u64 {
        if b < 1 << SUB_BITS {
            return b as u64;
        }
        let shift = (b >> SUB_BITS) - 1;
        let low = (((b & ((1 << SUB_BITS) - 1)) + (1 << SUB_BITS)) as u64) << shift;
        low + ((1u64 << shift) - 1) / 2
    }

    /// Each nonempty bucket's lowest value and count, in rising order.
    pub(super) fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        let rows = self.rows.iter().enumerate().filter_map(|(r, row)| Some((r, row.as_ref()?)));
        rows.flat_map(|(r, row)| {
            row.iter().enumerate().filter(|(_, &n)| n > 0).map(move |(i, &n)| {
                let b = r * ROW + i;
                let low = match b >> SUB_BITS {
                    0 => b as u64,
                    row => (((b & (ROW - 1)) + ROW) as u64) << (row - 1),
                };
                (low, n)
            })
        })
    }

    /// Row `r`, allocated if it was not.
    #[inline(never)]
    fn row(&mut self, r: usize) -> &mut [u64; ROW] {
        if self.rows.len() <= r {
            self.rows.resize_with(r + 1, || None);
        }
        self.rows[r].get_or_insert_with(|| Box::new([0; ROW]))
    }

    /// Counts one latency.
    pub fn record(&mut self, ns: u64) {
        let b = Self::bucket(ns);
        match self.rows.get_mut(b / ROW) {
            Some(Some(row)) => row[b % ROW] += 1,
            _ => self.row(b / ROW)[b % ROW] += 1,
        }
        self.min = if self.count == 0 { ns } else { self.min.min(ns) };
        self.count += 1;
        self.sum += u128::from(ns);
        self.sum_sq += u128::from(ns) * u128::from(ns);
        self.max = self.max.max(ns);
    }

    /// Latencies counted.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Adds every count of `other`.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        for (r, theirs) in other.rows.iter().enumerate().filter_map(|(r, row)| Some((r, row.as_ref()?))) {
            for (a, b) in self.row(r).iter_mut().zip(theirs.iter()) {
                *a += b;
            }
        }
        if other.count > 0 {
            self.min = if self.count == 0 { other.min } else { self.min.min(other.min) };
        }
        self.count += other.count;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.max = self.max.max(other.max);
    }

    /// The latency at percentile `p` (0 to 100), to the bucket's
    /// precision: the smallest value at least `p` % of the latencies reach
    /// (the largest at 100; 0 when nothing was counted).
    pub fn percentile(&self, p: f64) -> u64 {
        if self.count == 0 {
            return 0;
        }
        let rank = (((p / 100.0) * self.count as f64).ceil() as u64).clamp(1, self.count);
        if rank == self.count {
            return self.max;
        }
        let mut seen = 0;
        for (r, row) in self.rows.iter().enumerate().filter_map(|(r, row)| Some((r, row.as_ref()?))) {
            for (i, &n) in row.iter().enumerate() {
                seen += n;
                if seen >= rank {
                    return Self::value(r * ROW + i).clamp(self.min, self.max);
                }
            }
        }
        self.max
    }

    /// The latency at each percentile of `list`, keyed as fio's JSON keys
    /// them (`"99.900000"`).
    pub fn percentiles(&self, list: &[f64]) -> std::collections::BTreeMap<String, u64> {
        list.iter().map(|&p| (format!("{p:.6}"), self.percentile(p))).collect()
    }

    /// The summary over `elapsed_ns` (percentiles as [`super::HostQueue`] picks
    /// them, to the bucket's precision; mean and max exact).
    pub fn summary(&self, elapsed_ns: u64) -> QueueSummary {
        let mean = if self.count == 0 { 0.0 } else { self.sum as f64 / self.count as f64 };
        let stddev = if self.count < 2 {
            0.0
        } else {
            let n = self.count as f64;
            ((self.sum_sq as f64 - n * mean * mean) / (n - 1.0)).max(0.0).sqrt()
        };
        QueueSummary {
            commands: self.count,
            elapsed_ns,
            mean_latency_ns: mean,
            stddev_ns: stddev,
            min_ns: if self.count == 0 { 0 } else { self.min },
            p50_ns: self.percentile(50.0),
            p99_ns: self.percentile(99.0),
            p999_ns: self.percentile(99.9),
            max_ns: self.max,
            percentile: self.percentiles(&FIO_PERCENTILES),
        }
    }
}

/// fio's default `percentile_list`: the percentiles every latency in JSON
/// carries, keyed as fio keys them (`"99.000000"`).
pub const FIO_PERCENTILES: [f64; 17] =
    [1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95, 99.99];

/// Command counts and latency percentiles of one run. In JSON it is fio's
/// `clat_ns` object (`min`, `max`, `mean`, `stddev`, `N`, `percentile`),
/// the one latency shape of every command (`run`, `serve`, `replay`, ...).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(into = "FioLatency")]
pub struct QueueSummary {
    /// Commands completed.
    pub commands: u64,
    /// Simulated time from the first issue to the last completion.
    pub elapsed_ns: u64,
    /// Mean completion latency.
    pub mean_latency_ns: f64,
    /// Standard deviation of the completion latency (sample, as fio's).
    pub stddev_ns: f64,
    /// Shortest completion latency.
    pub min_ns: u64,
    /// Median completion latency.
    pub p50_ns: u64,
    /// 99th percentile completion latency.
    pub p99_ns: u64,
    /// 99.9th percentile completion latency.
    pub p999_ns: u64,
    /// Longest completion latency.
    pub max_ns: u64,
    /// Completion latency at each of [`FIO_PERCENTILES`], keyed as fio keys them.
    pub percentile: std::collections::BTreeMap<String, u64>,
}

/// A latency as fio's JSON writes one (`clat_ns`, `lat_ns`).
#[derive(Serialize)]
pub struct FioLatency {
    /// Shortest, ns.
    pub min: u64,
    /// Longest, ns.
    pub max: u64,
    /// Mean, ns.
    pub mean: f64,
    /// Standard deviation, ns.
    pub stddev: f64,
    /// Commands counted.
    #[serde(rename = "N")]
    pub n: u64,
    /// Percentiles (absent when nothing was counted, as in fio), written
    /// in fio's order: by percentile, not by key.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "in_percentile_order")]
    pub percentile: Option<std::collections::BTreeMap<String, u64>>,
    /// fio's latency bins, in `--output-format=json+` only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bins: Option<FioBins>,
}

fn in_percentile_order<S: serde::Serializer>(
    p: &Option<std::collections::BTreeMap<String, u64>>,
    s: S,
) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let Some(p) = p else { return s.serialize_none() };
    let mut keyed: Vec<(f64, &String, &u64)> = p.iter().map(|(k, v)| (k.parse().unwrap_or(0.0), k, v)).collect();
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut m = s.serialize_map(Some(keyed.len()))?;
    for (_, k, v) in keyed {
        m.serialize_entry(k, v)?;
    }
    m.end()
}

impl From<QueueSummary> for FioLatency {
    fn from(q: QueueSummary) -> Self {
        FioLatency {
            min: q.min_ns,
            max: q.max_ns,
            mean: q.mean_latency_ns,
            stddev: q.stddev_ns,
            n: q.commands,
            percentile: (q.commands > 0).then_some(q.percentile),
            bins: None,
        }
    }
}

impl QueueSummary {
    /// Commands per simulated second.
    pub fn iops(&self) -> f64 {
        if self.elapsed_ns == 0 {
            0.0
        } else {
            self.commands as f64 * 1e9 / self.elapsed_ns as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::HostQueue;
    use crate::units::SimTime;

    #[test]
    fn histogram_percentiles_track_the_exact_ones() {
        let mut q = HostQueue::new(1, SimTime::ZERO);
        let mut h = LatencyHistogram::default();
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for i in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let lat = if i % 3 == 0 { x % 100 } else { 1000 + x % 50_000_000 };
            let at = q.submit_time();
            q.complete(at, at + lat, 4096);
            h.record(lat);
        }
        let (exact, approx) = (q.summary(), h.summary(q.summary().elapsed_ns));
        assert_eq!(
            (approx.commands, approx.max_ns, approx.elapsed_ns),
            (exact.commands, exact.max_ns, exact.elapsed_ns)
        );
        assert!((approx.mean_latency_ns - exact.mean_latency_ns).abs() < 1e-6 * exact.mean_latency_ns);
        for (a, e) in [(approx.p50_ns, exact.p50_ns), (approx.p99_ns, exact.p99_ns), (approx.p999_ns, exact.p999_ns)] {
            assert!((a as f64 - e as f64).abs() <= e as f64 / 256.0, "{a} vs {e}");
        }
        let mut small = LatencyHistogram::default();
        for v in [5, 7, 127] {
            small.record(v);
        }
        let s = small.summary(0);
        assert_eq!((s.p50_ns, s.p99_ns), (7, 127), "exact below 128 ns");
        let mut merged = LatencyHistogram::default();
        merged.merge(&h);
        assert_eq!(merged, h);
        merged.merge(&small);
        assert_eq!(merged.summary(0).commands, h.count + 3);
        assert_eq!(merged.summary(0).max_ns, h.max);
        let mut one = LatencyHistogram::default();
        one.record(20_000);
        assert_eq!(one.rows.iter().flatten().count(), 1, "only the row counted in is allocated");
        assert_eq!(one.summary(0).p50_ns, 20_000);
        for v in [128u64, 255, 256, 1 << 40, u64::MAX] {
            let b = LatencyHistogram::bucket(v);
            let mid = LatencyHistogram::value(b);
            assert!(mid.abs_diff(v) <= v / 128, "{v}: bucket {b} value {mid}");
        }
    }
}
