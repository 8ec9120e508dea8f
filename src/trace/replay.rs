//! Replays trace records on a drive, or an array of them, in simulated time.
//!
//! Owns the mapping of records to host commands: byte ranges round out to
//! whole sectors, zero-length records are ignored, requests beyond the
//! drive are wrapped or rejected (and counted), writes get generated
//! content, and commands go through a [`HostQueue`]. Partial-unit writes
//! reach the drive as they are and the drive read-modify-writes them; with
//! metadata-only media there are no old bytes to merge, so they are
//! widened to whole units instead (the same unit programs, without the
//! read). It does not parse (see [`crate::trace`]) or print.
//!
//! Content: traces carry no bytes. FIU records name their content by MD5;
//! each distinct MD5 becomes deterministic bytes keyed by the hash and the
//! seed, with the chosen compressibility, so equal hashes give equal bytes
//! and the drive's own pipeline deduplicates them. Other formats get fresh
//! content for every write.

use std::collections::HashSet;

use serde::Serialize;
use thiserror::Error;

use crate::content::pattern::{unit_seed, DataSpec, PatternGen};
use crate::device::Stats;
use crate::host::{BlockDevice, CommandKind, HostQueue, LatencyHistogram, QueueSummary};
use crate::trace::target::ReplayTarget;
use crate::trace::{ContentHash, Op, TraceError, TraceRecord};
use crate::units::{Lba, SimTime, SECTOR_BYTES};
use crate::workload::batch::BATCH_BYTES;

/// Writes gathered into one pipeline batch at most (as-fast-as-possible).
const WRITE_BATCH: usize = 64;

/// Largest request replayed; larger ones are rejected and counted (ATA
/// allows 32 MiB per command; this leaves room for merged requests).
pub const MAX_REQUEST_BYTES: u64 = 64 << 20;

/// Points kept on the WAF curve: when twice as many are sampled, every
/// other one is dropped and the sampling step doubles.
const WAF_POINTS: usize = 256;

/// First sampling step of the WAF curve, in host bytes written.
const WAF_FIRST_STEP: u64 = 256 << 10;

/// How arrival times are used.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Speed {
    /// Ignore timestamps: keep `qd` commands outstanding.
    AsFastAsPossible,
    /// Issue each command at its trace time (relative to the first), at
    /// most `qd` outstanding; the drive idles (and runs idle GC) between.
    Timed,
}

/// How to replay.
#[derive(Clone, Copy, Debug)]
pub struct ReplaySpec {
    /// Timestamps honoured or not.
    pub speed: Speed,
    /// Commands outstanding at most (at least 1).
    pub qd: u32,
    /// Wrap requests beyond the drive's end instead of rejecting them.
    pub lba_wrap: bool,
    /// Count malformed lines and go on, instead of failing.
    pub skip_bad: bool,
    /// Compressibility of generated content (its dedupe settings are ignored
    /// for FIU content, which the hashes decide).
    pub data: DataSpec,
    /// Seed of the generated content.
    pub seed: u64,
}

/// Why a replay stopped. `E` is the device's error: [`crate::DriveError`]
/// for a drive, [`crate::host::raid::RaidError`] for an array.
#[derive(Debug, Error)]
pub enum ReplayError<E: std::error::Error + 'static = crate::error::DriveError> {
    /// The trace could not be read or a line is malformed (without `skip_bad`).
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The drive refused a command of lines `first..=last`.
    #[error("{}: {source}", line_span(*first, *last))]
    Drive { first: u64, last: u64, source: E },
    /// The spec is unusable.
    #[error("{0}")]
    Spec(String),
}

fn line_span(first: u64, last: u64) -> String {
    if first == last {
        format!("line {first}")
    } else {
        format!("lines {first}-{last}")
    }
}

/// What happened to the trace's records.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RecordCounts {
    /// Records parsed (requests; headers, comments and filtered events excluded).
    pub records: u64,
    /// Read commands issued.
    pub reads: u64,
    /// Write commands issued.
    pub writes: u64,
    /// TRIM commands issued.
    pub trims: u64,
    /// Zero-length records, ignored.
    pub empty: u64,
    /// Records reaching past the drive's end (without `lba_wrap`, or larger than the drive).
    pub rejected_beyond_capacity: u64,
    /// Records over [`MAX_REQUEST_BYTES`].
    pub rejected_oversized: u64,
    /// Records moved into the drive by `lba_wrap`.
    pub wrapped: u64,
    /// Malformed lines skipped (`skip_bad`).
    pub skipped_bad_lines: u64,
    /// Records not on 512-byte boundaries, rounded out to whole sectors.
    pub rounded_to_sectors: u64,
    /// Writes covering part of a 4 KiB unit: the drive read-modify-writes
    /// them, or, with metadata-only media (no old bytes to merge), they are
    /// widened to whole units of fresh content (see `partial_writes_widened`).
    pub partial_unit_writes: u64,
}

/// Deduplication as the trace's content hashes describe it (FIU traces).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TraceDedup {
    /// Blocks written (one hash each).
    pub written_blocks: u64,
    /// Distinct hashes among them (a set of them is kept: 16 bytes plus
    /// table overhead per distinct hash, the one cost that grows with the trace).
    pub distinct_hashes: u64,
    /// `distinct_hashes / written_blocks`: 1 = no duplicates (the drive's
    /// `dedup_ratio` has the same sense).
    pub ratio: f64,
}

/// One point of the WAF curve.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct WafPoint {
    /// Host bytes written so far.
    pub host_bytes: u64,
    /// NAND bytes programmed so far.
    pub nand_bytes: u64,
    /// Simulated time of the sample.
    pub sim_ns: u64,
}

/// Command kinds, in the order latencies are kept.
/// Longest stretch of trace time a timed replay follows (about 31 years).
const MAX_TRACE_SPAN_NS: u64 = 1_000_000_000_000_000_000;

const KINDS: [CommandKind; 3] = [CommandKind::Read, CommandKind::Write, CommandKind::Trim];

/// Moves the queue's recorded latencies into the histograms (bounded memory).
fn fold_latencies(queue: &mut HostQueue, hist: &mut [LatencyHistogram; 3]) {
    for (kind, h) in KINDS.into_iter().zip(hist.iter_mut()) {
        h.merge(&queue.take_latencies(kind));
    }
}

/// Latencies per command kind (percentiles to within 0.4%, see
/// [`LatencyHistogram`]).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Latencies {
    /// Reads.
    pub read: QueueSummary,
    /// Writes.
    pub write: QueueSummary,
    /// TRIMs.
    pub trim: QueueSummary,
    /// All commands.
    pub all: QueueSummary,
}

/// What a replay did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ReplayReport {
    /// Record and command counts.
    pub counts: RecordCounts,
    /// Time between the first and the latest trace timestamp.
    pub trace_span_ns: u64,
    /// Simulated time from the first command to the last completion.
    pub simulated_ns: u64,
    /// Blocks idle GC cleaned between timed arrivals.
    pub idle_gc_blocks: u64,
    /// Partial-unit writes were widened to whole units (metadata-only media).
    pub partial_writes_widened: bool,
    /// Completion latencies.
    pub latency: Latencies,
    /// Dedup the trace's hashes describe (FIU traces only).
    pub trace_dedup: Option<TraceDedup>,
    /// Cumulative host and NAND bytes as the replay went on.
    pub waf_curve: Vec<WafPoint>,
    /// The drive's counters at the end (an array's: its members' summed).
    pub stats: Stats,
    /// Each array member's counters at the end (empty for one drive).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<Stats>,
}

/// Samples the drive's NAND writes every `step` host bytes, keeping at most
/// `2 * WAF_POINTS` points whatever the trace length.
struct WafCurve {
    step: u64,
    next: u64,
    points: Vec<WafPoint>,
}

impl WafCurve {
    fn new() -> Self {
        WafCurve { step: WAF_FIRST_STEP, next: WAF_FIRST_STEP, points: Vec::new() }
    }

    fn observe<D: ReplayTarget>(&mut self, drive: &D, host_bytes: u64, force: bool) {
        if host_bytes < self.next && !force {
            return;
        }
        let (host, nand) = drive.bytes_written();
        let point = WafPoint { host_bytes: host, nand_bytes: nand, sim_ns: drive.now().0 };
        if force && self.points.last().is_some_and(|p| point.host_bytes - p.host_bytes < self.step / 2) {
            // A closing sample right after the last one would make a noisy interval.
            self.points.pop();
        }
        if self.points.last() != Some(&point) {
            self.points.push(point);
        }
        self.next = host_bytes.saturating_add(self.step);
        if self.points.len() >= 2 * WAF_POINTS {
            let mut i = 0;
            self.points.retain(|_| {
                i += 1;
                i % 2 == 0
            });
            self.step = self.step.saturating_mul(2);
        }
    }
}

/// Where a record lands on the drive.
enum Placement {
    Empty,
    Oversized,
    Beyond,
    At { lba: Lba, sectors: u64, wrapped: bool, rounded: bool },
}

fn place(rec: &TraceRecord, capacity: u64, wrap: bool) -> Placement {
    let (offset, len) = (rec.offset.0, rec.len.0);
    if len == 0 {
        return Placement::Empty;
    }
    if len > MAX_REQUEST_BYTES {
        return Placement::Oversized;
    }
    let first = offset / SECTOR_BYTES;
    let Some(end) = offset.checked_add(len).map(|e| e.div_ceil(SECTOR_BYTES)) else {
        return Placement::Beyond;
    };
    let sectors = end - first;
    let rounded = offset % SECTOR_BYTES != 0 || len % SECTOR_BYTES != 0;
    if end <= capacity {
        return Placement::At { lba: Lba(first), sectors, wrapped: false, rounded };
    }
    if !wrap || sectors > capacity {
        return Placement::Beyond;
    }
    // Wrap the start; a request that would then cross the end is moved back to fit.
    let lba = (first % capacity).min(capacity - sectors);
    Placement::At { lba: Lba(lba), sectors, wrapped: true, rounded }
}

/// Writes waiting for one pipeline batch.
struct Pending {
    /// Generated content (or zeros reused by every request without content).
    buf: Vec<u8>,
    /// `(lba, start in buf, bytes, line)`.
    reqs: Vec<(Lba, usize, usize, u64)>,
}

/// Content generation for writes.
struct Content {
    /// False when the drive ignores bytes (nothing is generated).
    needed: bool,
    data: DataSpec,
    fresh: PatternGen,
    /// Second half of every hash-derived key: the seed.
    seed_key: [u8; 16],
}

impl Content {
    fn new<E: std::error::Error>(drive: &impl BlockDevice, spec: &ReplaySpec) -> Result<Self, ReplayError<E>> {
        let fresh =
            PatternGen::new(spec.data, unit_seed(spec.seed, 1)).map_err(|e| ReplayError::Spec(e.to_string()))?;
        let mut seed_key = [0u8; 16];
        seed_key[..8].copy_from_slice(&unit_seed(spec.seed, 2).to_le_bytes());
        seed_key[8..].copy_from_slice(&unit_seed(spec.seed, 3).to_le_bytes());
        Ok(Content { needed: drive.needs_content(), data: spec.data, fresh, seed_key })
    }

    fn fill(&mut self, hash: Option<ContentHash>, out: &mut [u8]) {
        match hash {
            Some(ContentHash(h)) => {
                let mut key = [0u8; 32];
                key[..16].copy_from_slice(&h);
                key[16..].copy_from_slice(&self.seed_key);
                self.data.fill_keyed(&key, out);
            }
            None => self.fresh.fill(out),
        }
    }
}

impl Pending {
    fn add(&mut self, lba: Lba, bytes: usize, line: u64, hash: Option<ContentHash>, content: &mut Content) {
        if content.needed {
            let at = self.buf.len();
            self.buf.resize(at + bytes, 0);
            content.fill(hash, &mut self.buf[at..]);
            self.reqs.push((lba, at, bytes, line));
        } else {
            if self.buf.len() < bytes {
                self.buf.resize(bytes, 0);
            }
            self.reqs.push((lba, 0, bytes, line));
        }
    }

    fn is_full(&self, content: bool) -> bool {
        self.reqs.len() >= WRITE_BATCH || (content && self.buf.len() >= BATCH_BYTES)
    }

    fn flush<D: BlockDevice>(
        &mut self,
        drive: &mut D,
        queue: &mut HostQueue,
        content: bool,
    ) -> Result<(), ReplayError<D::Error>> {
        let (Some(first), Some(last)) = (self.reqs.first(), self.reqs.last()) else { return Ok(()) };
        let (first, last) = (first.3, last.3);
        let requests: Vec<(Lba, &[u8])> =
            self.reqs.iter().map(|&(lba, at, bytes, _)| (lba, &self.buf[at..at + bytes])).collect();
        queue.set_kind(CommandKind::Write);
        let result = drive.write_batch_on(&requests, queue);
        self.reqs.clear();
        if content {
            self.buf.clear();
        }
        result.map_err(|source| ReplayError::Drive { first, last, source })
    }
}

/// Replays `records` on `drive` (a drive or an array) from its current
/// time. `progress` gets the number of records read, now and then.
pub fn replay<D: ReplayTarget>(
    drive: &mut D,
    records: impl IntoIterator<Item = Result<TraceRecord, TraceError>>,
    spec: &ReplaySpec,
    progress: &mut dyn FnMut(u64),
) -> Result<ReplayReport, ReplayError<D::Error>>
where
    D::Error: 'static,
{
    if spec.qd == 0 {
        return Err(ReplayError::Spec("queue depth must be at least 1".into()));
    }
    let capacity = drive.capacity_bytes() / SECTOR_BYTES;
    let unit_sectors = (drive.unit_bytes() / SECTOR_BYTES).max(1);
    let widen = drive.metadata_only();
    let mut content = Content::new(drive, spec)?;
    let mut queue = HostQueue::new(spec.qd, drive.now());
    let start = queue.started_at();
    let mut pending = Pending { buf: Vec::new(), reqs: Vec::new() };
    let mut counts = RecordCounts::default();
    let mut curve = WafCurve::new();
    let mut hashes: HashSet<ContentHash> = HashSet::new();
    let mut hashed_blocks = 0u64;
    let (mut t0, mut t_max) = (None, 0u64);
    let mut arrival = start;
    let mut host_bytes = 0u64;
    let mut idle_gc_blocks = 0u64;
    let mut hist: [LatencyHistogram; 3] = Default::default();
    for item in records {
        let rec = match item {
            Ok(rec) => rec,
            Err(TraceError::Parse { .. }) if spec.skip_bad => {
                counts.skipped_bad_lines += 1;
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        counts.records += 1;
        if counts.records % 4096 == 0 {
            fold_latencies(&mut queue, &mut hist);
            progress(counts.records);
        }
        let t = rec.time.0;
        let first_time = *t0.get_or_insert(t);
        t_max = t_max.max(t);
        let (lba, sectors) = match place(&rec, capacity, spec.lba_wrap) {
            Placement::Empty => {
                counts.empty += 1;
                continue;
            }
            Placement::Oversized => {
                counts.rejected_oversized += 1;
                continue;
            }
            Placement::Beyond => {
                counts.rejected_beyond_capacity += 1;
                continue;
            }
            Placement::At { lba, sectors, wrapped, rounded } => {
                counts.wrapped += u64::from(wrapped);
                counts.rounded_to_sectors += u64::from(rounded);
                (lba, sectors)
            }
        };
        if spec.speed == Speed::Timed {
            // A garbage timestamp centuries out must not pin the clock at
            // its end: offsets are capped at MAX_TRACE_SPAN_NS.
            arrival = arrival.max(start + t.saturating_sub(first_time).min(MAX_TRACE_SPAN_NS));
            let idle_from = queue.finished_at();
            if arrival > idle_from {
                idle_gc_blocks += drive.idle_cleaning(idle_from, arrival).map_err(|source| ReplayError::Drive {
                    first: rec.line,
                    last: rec.line,
                    source,
                })?;
            }
            queue.advance_to(arrival);
        }
        let drive_err = |source| ReplayError::Drive { first: rec.line, last: rec.line, source };
        match rec.op {
            Op::Write => {
                counts.writes += 1;
                let partial = lba.0 % unit_sectors != 0 || (lba.0 + sectors) % unit_sectors != 0;
                counts.partial_unit_writes += u64::from(partial);
                let (lba, sectors) = if partial && widen {
                    let first = lba.0 / unit_sectors * unit_sectors;
                    let end = ((lba.0 + sectors).div_ceil(unit_sectors) * unit_sectors).min(capacity);
                    (Lba(first), end - first)
                } else {
                    (lba, sectors)
                };
                let bytes = sectors * SECTOR_BYTES;
                if let Some(h) = rec.content {
                    hashed_blocks += 1;
                    hashes.insert(h);
                }
                pending.add(lba, bytes as usize, rec.line, rec.content, &mut content);
                host_bytes += bytes;
                if spec.speed == Speed::Timed || pending.is_full(content.needed) {
                    pending.flush(drive, &mut queue, content.needed)?;
                    curve.observe(drive, host_bytes, false);
                }
            }
            Op::Read => {
                pending.flush(drive, &mut queue, content.needed)?;
                curve.observe(drive, host_bytes, false);
                counts.reads += 1;
                queue.set_kind(CommandKind::Read);
                drive.read_on(lba, sectors, &mut queue, false).map_err(drive_err)?;
            }
            Op::Trim => {
                pending.flush(drive, &mut queue, content.needed)?;
                curve.observe(drive, host_bytes, false);
                counts.trims += 1;
                queue.set_kind(CommandKind::Trim);
                drive.trim_on(&[(lba, sectors)], &mut queue).map_err(drive_err)?;
            }
        }
    }
    pending.flush(drive, &mut queue, content.needed)?;
    curve.observe(drive, host_bytes, true);
    progress(counts.records);
    fold_latencies(&mut queue, &mut hist);
    let finished: SimTime = queue.finished_at();
    let elapsed = finished.0 - start.0;
    let mut all = LatencyHistogram::default();
    for h in &hist {
        all.merge(h);
    }
    let drive_stats = drive.drive_stats();
    let trace_dedup = (hashed_blocks > 0).then(|| TraceDedup {
        written_blocks: hashed_blocks,
        distinct_hashes: hashes.len() as u64,
        ratio: hashes.len() as f64 / hashed_blocks as f64,
    });
    Ok(ReplayReport {
        counts,
        trace_span_ns: t0.map_or(0, |t| t_max - t),
        simulated_ns: elapsed,
        idle_gc_blocks,
        partial_writes_widened: widen,
        latency: Latencies {
            read: hist[0].summary(elapsed),
            write: hist[1].summary(elapsed),
            trim: hist[2].summary(elapsed),
            all: all.summary(elapsed),
        },
        trace_dedup,
        waf_curve: curve.points,
        stats: Stats::combined(&drive_stats),
        members: if drive_stats.len() > 1 { drive_stats } else { Vec::new() },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{TraceBytes, TraceTime};

    fn rec(offset: u64, len: u64) -> TraceRecord {
        TraceRecord {
            line: 1,
            time: TraceTime(0),
            op: Op::Write,
            offset: TraceBytes(offset),
            len: TraceBytes(len),
            content: None,
        }
    }

    fn at(p: Placement) -> Option<(u64, u64, bool, bool)> {
        match p {
            Placement::At { lba, sectors, wrapped, rounded } => Some((lba.0, sectors, wrapped, rounded)),
            _ => None,
        }
    }

    #[test]
    fn placement_rounds_wraps_and_rejects() {
        assert_eq!(at(place(&rec(1024, 4096), 100, false)), Some((2, 8, false, false)));
        assert_eq!(at(place(&rec(1000, 100), 100, false)), Some((1, 2, false, true)), "bytes 1000..1100");
        assert!(matches!(place(&rec(96 * 512, 8 * 512), 100, false), Placement::Beyond));
        assert_eq!(at(place(&rec(96 * 512, 8 * 512), 100, true)), Some((92, 8, true, false)), "moved back to fit");
        assert_eq!(at(place(&rec(250 * 512, 8 * 512), 100, true)), Some((50, 8, true, false)));
        assert!(matches!(place(&rec(0, 101 * 512), 100, true), Placement::Beyond), "larger than the drive");
        assert!(matches!(place(&rec(u64::MAX - 10, 512), 100, true), Placement::Beyond));
        assert!(matches!(place(&rec(0, 0), 100, true), Placement::Empty));
        assert!(matches!(place(&rec(0, MAX_REQUEST_BYTES + 1), u64::MAX, true), Placement::Oversized));
    }
}
