//! The host side of a command stream: a closed-loop queue that keeps up to
//! `depth` commands outstanding in simulated time, and what it measured.

use std::collections::VecDeque;

use serde::Serialize;

use crate::device::{Drive, Issuer};
use crate::error::DriveError;
use crate::units::{Lba, SimTime};

pub use fio_bins::FioBins;
use fio_stats::FioStats;
pub use fio_stats::{FioCounts, SampleStat, DEPTH_LEVELS, LATENCY_RANGES};

mod fio_bins;
mod fio_stats;
pub mod fs;
pub mod raid;
pub mod smart;

/// What workloads and benchmarks drive: one [`Drive`] or a
/// [`raid::Array`] of them. Commands are issued through a [`HostQueue`]
/// and complete in simulated time.
pub trait BlockDevice: Clone {
    /// What a command can fail with.
    type Error: std::error::Error;
    /// Host-visible capacity in bytes.
    fn capacity_bytes(&self) -> u64;
    /// Completion time of the latest command.
    fn now(&self) -> SimTime;
    /// Whether written bytes matter (see [`Drive::needs_content`]).
    fn needs_content(&self) -> bool;
    /// Writes `(lba, data)` requests issued through `queue`.
    fn write_batch_on(&mut self, requests: &[(Lba, &[u8])], queue: &mut HostQueue) -> Result<(), Self::Error>;
    /// Reads `sectors` at `lba` through `queue`; the bytes when `want_data`.
    fn read_on(
        &mut self,
        lba: Lba,
        sectors: u64,
        queue: &mut HostQueue,
        want_data: bool,
    ) -> Result<Option<Vec<u8>>, Self::Error>;
    /// TRIMs `(lba, sectors)` ranges as one command; returns units unmapped.
    fn trim_on(&mut self, ranges: &[(Lba, u64)], queue: &mut HostQueue) -> Result<u64, Self::Error>;
    /// The host is idle from `from` to `until` (see [`Drive::idle`]).
    fn idle(&mut self, from: SimTime, until: SimTime) -> Result<(), Self::Error>;
}

impl BlockDevice for Drive {
    type Error = DriveError;
    fn capacity_bytes(&self) -> u64 {
        self.config().logical_bytes
    }
    fn now(&self) -> SimTime {
        Drive::now(self)
    }
    fn needs_content(&self) -> bool {
        Drive::needs_content(self)
    }
    fn write_batch_on(&mut self, requests: &[(Lba, &[u8])], queue: &mut HostQueue) -> Result<(), DriveError> {
        Drive::write_batch_on(self, requests, queue)
    }
    fn read_on(
        &mut self,
        lba: Lba,
        sectors: u64,
        queue: &mut HostQueue,
        want_data: bool,
    ) -> Result<Option<Vec<u8>>, DriveError> {
        Drive::read_on(self, lba, sectors, queue, want_data)
    }
    fn trim_on(&mut self, ranges: &[(Lba, u64)], queue: &mut HostQueue) -> Result<u64, DriveError> {
        Drive::trim_on(self, ranges, queue)
    }
    fn idle(&mut self, from: SimTime, until: SimTime) -> Result<(), DriveError> {
        Drive::idle(self, from, until).map(|_| ())
    }
}

/// Range entries in one DSM TRIM command (one 512-byte payload block).
pub const DSM_ENTRIES_PER_COMMAND: usize = 64;

impl Issuer for HostQueue {
    fn submit_time(&mut self) -> SimTime {
        HostQueue::submit_time(self)
    }

    fn complete(&mut self, submitted: SimTime, done: SimTime) {
        HostQueue::complete(self, submitted, done)
    }
}

/// Keeps up to `depth` commands in flight: a command is issued as soon as
/// one of the outstanding ones completes (a benchmark's worker threads).
#[derive(Clone, Debug)]
pub struct HostQueue {
    depth: usize,
    /// Completion times of the commands in flight, earliest first: a new
    /// one usually completes last and goes on the end, so at the depths
    /// queues run this is cheaper than a heap.
    in_flight: VecDeque<SimTime>,
    clock: SimTime,
    start: SimTime,
    last_done: SimTime,
    /// Completion latencies per kind of command (see [`HostQueue::set_kind`]),
    /// in histograms: fixed memory however long the run.
    latencies: [LatencyHistogram; KINDS],
    kind: usize,
    /// What fio reports beside latencies, for a queue that counts it.
    fio: Option<Box<FioStats>>,
    /// Commands done before this are a warm-up, not counted (fio's
    /// `ramp_time`); `start` unless set.
    measured: SimTime,
    /// Whether a command completed at or after `measured`: until then
    /// everything is counted, as fio counts all of a job that ends within
    /// its `ramp_time`, and the first such command clears the counts.
    warmed: bool,
}

/// Kinds of command a queue tells apart in its latencies.
const KINDS: usize = 3;

/// What a command does, for per-direction statistics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandKind {
    /// Reads.
    Read = 0,
    /// Writes.
    Write = 1,
    /// TRIMs.
    Trim = 2,
}

impl HostQueue {
    /// A queue of `depth` (at least 1) starting at `start`.
    pub fn new(depth: u32, start: SimTime) -> Self {
        HostQueue {
            depth: depth.max(1) as usize,
            in_flight: VecDeque::new(),
            clock: start,
            start,
            last_done: start,
            latencies: Default::default(),
            kind: CommandKind::Write as usize,
            fio: None,
            measured: start,
            warmed: true,
        }
    }

    /// Commands done before `at` are a warm-up: once a command completes at
    /// or after `at`, no latency or fio figure counts them, and the queue's
    /// measured time starts there ([`HostQueue::started_at`]). A queue
    /// whose commands all complete before `at` reports them all, from its
    /// start ([`HostQueue::reported_from`]), as fio reports a job that
    /// ends within its `ramp_time`.
    pub fn measure_from(&mut self, at: SimTime) {
        self.measured = at.max(self.start);
        self.warmed = self.measured == self.start;
    }

    /// From now on the queue also counts what fio reports beside
    /// latencies, for commands of `bytes` each (see [`FioCounts`]).
    pub fn count_for_fio(&mut self, iops_window_ms: u32, bw_window_ms: u32, bytes: u64) {
        self.fio = Some(Box::new(FioStats::new(iops_window_ms, bw_window_ms, bytes, self.reported_from())));
    }

    /// What the queue counted for fio, its last unfilled window left out.
    pub fn fio_counts(&self) -> Option<FioCounts> {
        self.fio.as_ref().map(|f| f.as_ref().clone().finish(self.finished_at()))
    }

    /// The most bytes a queue of `depth` holds over `commands` commands:
    /// the completion time of each in flight, twice over for the deque's
    /// growth by doubling.
    pub fn bytes_for(depth: u32, commands: u64) -> u64 {
        u64::from(depth.max(1)).min(commands).saturating_mul(2 * std::mem::size_of::<SimTime>() as u64)
    }

    /// Commands completed from now on count as `kind`.
    pub fn set_kind(&mut self, kind: CommandKind) {
        self.kind = kind as usize;
    }

    /// When the next command can be issued.
    pub fn submit_time(&mut self) -> SimTime {
        if self.in_flight.len() >= self.depth {
            if let Some(done) = self.in_flight.pop_front() {
                self.clock = self.clock.max(done);
            }
        }
        self.clock
    }

    /// When the next command could be issued, without issuing it.
    pub fn next_submit_time(&self) -> SimTime {
        match self.in_flight.front() {
            Some(&done) if self.in_flight.len() >= self.depth => self.clock.max(done),
            _ => self.clock,
        }
    }

    /// The host issues nothing before `at` (an open-loop arrival time):
    /// commands completed by then leave the queue.
    pub fn advance_to(&mut self, at: SimTime) {
        self.clock = self.clock.max(at);
        while self.in_flight.front().is_some_and(|&done| done <= self.clock) {
            self.in_flight.pop_front();
        }
    }

    /// Records that a command issued at `submitted` completed at `done`.
    pub fn complete(&mut self, submitted: SimTime, done: SimTime) {
        if !self.warmed && done >= self.measured {
            // The warm-up is over: what it counted is dropped (fio's
            // reset_all_stats when ramp_time ends).
            self.warmed = true;
            self.latencies = Default::default();
            if let Some(fio) = self.fio.as_mut() {
                fio.restart(self.measured);
            }
        }
        let counted = !self.warmed || done >= self.measured;
        if let Some(fio) = self.fio.as_mut().filter(|_| counted) {
            // In flight when it was issued: those done later, and itself.
            let depth = self.in_flight.len() - self.in_flight.partition_point(|&t| t <= submitted) + 1;
            fio.record(self.kind, submitted, done, depth);
        }
        if self.in_flight.back().is_none_or(|&last| last <= done) {
            self.in_flight.push_back(done);
        } else {
            let at = self.in_flight.partition_point(|&t| t <= done);
            self.in_flight.insert(at, done);
        }
        self.last_done = self.last_done.max(done);
        if counted {
            self.latencies[self.kind].record(done.0.saturating_sub(submitted.0));
        }
    }

    /// The time all commands issued so far have completed.
    pub fn finished_at(&self) -> SimTime {
        self.last_done.max(self.clock)
    }

    /// When the queue's measured time starts: its start, or the end of
    /// its warm-up ([`HostQueue::measure_from`]). Limits on a job's
    /// commands and run time count from here.
    pub fn started_at(&self) -> SimTime {
        self.measured
    }

    /// When what the queue reports starts: [`HostQueue::started_at`], or its
    /// start while every completion so far fell in the warm-up.
    pub fn reported_from(&self) -> SimTime {
        if self.warmed {
            self.measured
        } else {
            self.start
        }
    }

    /// The latencies of `kind` recorded so far.
    pub fn latencies(&self, kind: CommandKind) -> &LatencyHistogram {
        &self.latencies[kind as usize]
    }

    /// The latencies of `kind` recorded since the last call.
    pub fn take_latencies(&mut self, kind: CommandKind) -> LatencyHistogram {
        std::mem::take(&mut self.latencies[kind as usize])
    }

    fn elapsed(&self) -> u64 {
        self.finished_at().0.saturating_sub(self.reported_from().0)
    }

    /// What the queue saw of every command kind together.
    pub fn summary(&self) -> QueueSummary {
        let mut all = LatencyHistogram::default();
        self.latencies.iter().for_each(|h| all.merge(h));
        all.summary(self.elapsed())
    }

    /// What the queue saw of commands of `kind`, over the whole elapsed time.
    pub fn summary_of(&self, kind: CommandKind) -> QueueSummary {
        self.latencies[kind as usize].summary(self.elapsed())
    }
}

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
    fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
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

    /// The summary over `elapsed_ns` (percentiles as [`HostQueue`] picks
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

    #[test]
    fn a_warm_up_counts_in_no_figure() {
        let mut q = HostQueue::new(1, SimTime::ZERO);
        q.measure_from(SimTime(100));
        q.count_for_fio(500, 500, 4096);
        for (at, done) in [(0, 60), (60, 120), (120, 180)] {
            let s = q.submit_time();
            assert_eq!(s, SimTime(at));
            q.complete(s, SimTime(done));
        }
        let s = q.summary();
        assert_eq!((s.commands, s.elapsed_ns), (2, 80), "done at 120 and 180, measured from 100");
        assert_eq!(q.started_at(), SimTime(100));
        assert_eq!(q.fio_counts().map(|c| c.depth.iter().sum::<u64>()), Some(2));
    }

    #[test]
    fn a_queue_done_within_its_warm_up_reports_everything() {
        let mut q = HostQueue::new(1, SimTime(10));
        q.measure_from(SimTime(1_000));
        q.count_for_fio(500, 500, 4096);
        for done in [70, 130] {
            let s = q.submit_time();
            q.complete(s, SimTime(done));
        }
        let s = q.summary();
        assert_eq!((s.commands, s.elapsed_ns), (2, 120), "both, from the start at 10");
        assert_eq!((q.started_at(), q.reported_from()), (SimTime(1_000), SimTime(10)));
        assert_eq!(q.fio_counts().map(|c| c.depth.iter().sum::<u64>()), Some(2));
        // One completion past the warm-up clears what it counted.
        let s = q.submit_time();
        q.complete(s, SimTime(1_100));
        assert_eq!((q.summary().commands, q.reported_from()), (1, SimTime(1_000)));
        assert_eq!(q.fio_counts().map(|c| c.depth.iter().sum::<u64>()), Some(1));
    }

    #[test]
    fn depth_limits_commands_in_flight() {
        let mut q = HostQueue::new(2, SimTime::ZERO);
        let a = q.submit_time();
        q.complete(a, SimTime(100));
        let b = q.submit_time();
        q.complete(b, SimTime(50));
        assert_eq!((a, b), (SimTime::ZERO, SimTime::ZERO));
        let c = q.submit_time();
        assert_eq!(c, SimTime(50), "third command waits for the first completion");
        q.complete(c, SimTime(120));
        assert_eq!(q.submit_time(), SimTime(100));
        let s = q.summary();
        assert_eq!(s.commands, 3);
        assert_eq!(q.summary_of(CommandKind::Write).commands, 3);
        assert_eq!(q.summary_of(CommandKind::Read).commands, 0);
        assert_eq!(s.max_ns, 100);
    }

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
            q.complete(at, at + lat);
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

    #[test]
    fn advancing_releases_completed_commands() {
        let mut q = HostQueue::new(2, SimTime::ZERO);
        for done in [100, 300] {
            let at = q.submit_time();
            q.complete(at, SimTime(done));
        }
        q.advance_to(SimTime(150));
        assert_eq!(q.submit_time(), SimTime(150), "one slot freed by the completion at 100");
        q.complete(SimTime(150), SimTime(400));
        assert_eq!(q.submit_time(), SimTime(300), "full again: waits for the completion at 300");
        q.advance_to(SimTime(50));
        assert_eq!(q.submit_time(), SimTime(300), "time never goes back");
    }
}
