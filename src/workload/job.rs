//! A job: a stream of host commands with a pattern, block size, queue
//! depth, region and limit, run against a drive in simulated time. fio job
//! files, HD Tach, ATTO and IOmeter sweeps are all built from jobs.

use serde::Serialize;

use crate::content::pattern::{unit_seed, DataSpec, PatternGen};
use crate::content::Content;
use crate::host::{BlockDevice, CommandKind, HostQueue, QueueSummary};
use crate::units::{Lba, SECTOR_BYTES};
use crate::workload::access::{Access, Distribution, Rw, SlotStream};
use crate::workload::batch::WriteBatch;
use crate::workload::WorkloadError;

/// Writes gathered into one pipeline batch at most (timing stays per
/// command; see [`WriteBatch`] for the bytes limit).
const WRITE_BATCH: usize = 64;

/// When a job stops.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// After this many commands.
    Ops(u64),
    /// After this many bytes of I/O.
    Bytes(u64),
    /// After this much simulated time (ns). Completion times are known
    /// per write batch, so a write job may run up to 63 commands over.
    Time(u64),
}

/// One job.
#[derive(Clone, Debug, Serialize)]
pub struct JobSpec {
    /// Name in reports.
    pub name: String,
    /// Command pattern (fio's `rw`).
    #[serde(serialize_with = "serialize_debug")]
    pub rw: Rw,
    /// Bytes per command: a positive multiple of 512.
    pub bs: u64,
    /// Commands kept outstanding.
    pub iodepth: u32,
    /// First byte of the region the job touches.
    pub offset: u64,
    /// Bytes of the region (at least `bs`).
    pub length: u64,
    /// When to stop.
    pub limit: Limit,
    /// Percent of mixed commands that read.
    pub rwmixread: u8,
    /// Where random commands land.
    #[serde(serialize_with = "serialize_debug")]
    pub distribution: Distribution,
    /// What writes carry.
    #[serde(skip)]
    pub data: DataSpec,
    /// Seed of the job's offsets and data.
    pub seed: u64,
}

fn serialize_debug<T: std::fmt::Debug, S: serde::Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format!("{v:?}").to_lowercase())
}

/// What one direction of a job did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DirResult {
    /// Bytes moved.
    pub io_bytes: u64,
    /// Bytes per simulated second over the job's run time.
    pub bw_bytes: f64,
    /// Commands per simulated second over the job's run time.
    pub iops: f64,
    /// Completion latencies.
    pub lat: QueueSummary,
}

/// What a job did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobResult {
    /// The job's name.
    pub name: String,
    /// Simulated time from the first command to the last completion.
    pub elapsed_ns: u64,
    /// When the job started (simulated).
    pub start_ns: u64,
    /// Reads.
    pub read: DirResult,
    /// Writes.
    pub write: DirResult,
    /// TRIMs.
    pub trim: DirResult,
}

impl JobResult {
    /// Decimal megabytes per second of reads and writes together.
    pub fn mbps(&self) -> f64 {
        (self.read.bw_bytes + self.write.bw_bytes) / 1e6
    }
}

impl JobSpec {
    /// Checks the job against the drive, naming the bad setting.
    pub fn validate(&self, capacity_bytes: u64) -> Result<(), WorkloadError> {
        self.check(capacity_bytes).map_err(|e| e.in_job(&self.name))
    }

    fn check(&self, capacity_bytes: u64) -> Result<(), WorkloadError> {
        let bad = |reason: String| Err(WorkloadError::BadSpec(reason));
        if self.bs == 0 || !self.bs.is_multiple_of(SECTOR_BYTES) {
            return bad(format!("bs {} is not a positive multiple of 512", self.bs));
        }
        if self.iodepth == 0 {
            return bad("iodepth must be at least 1".into());
        }
        if !self.offset.is_multiple_of(SECTOR_BYTES) {
            return bad(format!("offset {} is not sector-aligned", self.offset));
        }
        let end = self.offset.checked_add(self.length);
        if self.length < self.bs || end.is_none_or(|e| e > capacity_bytes) {
            return bad(format!(
                "region {}+{} must hold one {}-byte command and end within the drive's {capacity_bytes} bytes",
                self.offset, self.length, self.bs
            ));
        }
        if self.rwmixread > 100 {
            return bad(format!("rwmixread {} is over 100", self.rwmixread));
        }
        Ok(self.data.validate()?)
    }
}

/// Runs `spec` on `drive` (a drive or an array), starting when its last
/// command completed. `progress` gets the fraction done.
pub fn run_job<D: BlockDevice>(
    drive: &mut D,
    spec: &JobSpec,
    progress: &mut dyn FnMut(f64),
) -> Result<JobResult, WorkloadError>
where
    WorkloadError: From<D::Error>,
{
    let mut gen = PatternGen::new(spec.data, unit_seed(spec.seed, 1))?;
    run_job_with(drive, spec, &mut gen, progress)
}

/// Runs `spec` with writes carrying `content` instead of `spec.data`.
pub fn run_job_with<D: BlockDevice>(
    drive: &mut D,
    spec: &JobSpec,
    content: &mut dyn Content,
    progress: &mut dyn FnMut(f64),
) -> Result<JobResult, WorkloadError>
where
    WorkloadError: From<D::Error>,
{
    spec.validate(drive.capacity_bytes())?;
    let slots = spec.length / spec.bs;
    let mut random = SlotStream::new(Access::from(spec.distribution), slots, unit_seed(spec.seed, 2))?;
    let mut mix = SlotStream::new(Access::Uniform, 1, unit_seed(spec.seed, 3))?;
    let mut queue = HostQueue::new(spec.iodepth, drive.now());
    let start = queue.started_at();
    let mut batch = WriteBatch::new(drive.needs_content(), spec.bs, WRITE_BATCH);
    let mut next_seq = 0u64;
    let (mut ops, mut bytes) = (0u64, 0u64);
    let sectors = spec.bs / SECTOR_BYTES;
    let fail = |e: D::Error| WorkloadError::from(e).in_job(&spec.name);
    loop {
        let fraction = match spec.limit {
            Limit::Ops(n) => ops as f64 / n.max(1) as f64,
            Limit::Bytes(n) => bytes as f64 / n.max(1) as f64,
            Limit::Time(t) => (queue.finished_at().0 - start.0) as f64 / t.max(1) as f64,
        };
        if fraction >= 1.0 {
            break;
        }
        if ops % 4096 == 0 {
            progress(fraction);
        }
        let slot = if spec.rw.is_random() { random.next_slot() } else { next_seq };
        next_seq = (next_seq + 1) % slots;
        let lba = Lba((spec.offset + slot * spec.bs) / SECTOR_BYTES);
        let kind = match spec.rw {
            Rw::Read | Rw::RandRead => CommandKind::Read,
            Rw::Write | Rw::RandWrite => CommandKind::Write,
            Rw::Trim | Rw::RandTrim => CommandKind::Trim,
            Rw::RandRw | Rw::SeqRw => {
                if mix.chance(spec.rwmixread) {
                    CommandKind::Read
                } else {
                    CommandKind::Write
                }
            }
            Rw::TrimWrite => {
                batch.flush(drive, &mut queue, content).map_err(fail)?;
                queue.set_kind(CommandKind::Trim);
                drive.trim_on(&[(lba, sectors)], &mut queue).map_err(fail)?;
                ops += 1;
                CommandKind::Write
            }
        };
        match kind {
            CommandKind::Write => {
                batch.add(lba);
                if batch.is_full() {
                    batch.flush(drive, &mut queue, content).map_err(fail)?;
                }
            }
            CommandKind::Read => {
                batch.flush(drive, &mut queue, content).map_err(fail)?;
                queue.set_kind(CommandKind::Read);
                drive.read_on(lba, sectors, &mut queue, false).map_err(fail)?;
            }
            CommandKind::Trim => {
                batch.flush(drive, &mut queue, content).map_err(fail)?;
                queue.set_kind(CommandKind::Trim);
                drive.trim_on(&[(lba, sectors)], &mut queue).map_err(fail)?;
            }
        }
        ops += 1;
        bytes += spec.bs;
    }
    batch.flush(drive, &mut queue, content).map_err(fail)?;
    progress(1.0);
    let elapsed = queue.finished_at().0 - start.0;
    let dir = |kind: CommandKind| {
        let lat = queue.summary_of(kind);
        let io_bytes = lat.commands * spec.bs;
        let secs = elapsed as f64 / 1e9;
        let per_sec = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
        DirResult { io_bytes, bw_bytes: per_sec(io_bytes as f64), iops: per_sec(lat.commands as f64), lat }
    };
    Ok(JobResult {
        name: spec.name.clone(),
        elapsed_ns: elapsed,
        start_ns: start.0,
        read: dir(CommandKind::Read),
        write: dir(CommandKind::Write),
        trim: dir(CommandKind::Trim),
    })
}

/// A job that writes the whole drive once, sequentially, at queue depth
/// `iodepth` with `bs` commands: the usual precondition.
pub fn fill_spec(capacity_bytes: u64, bs: u64, iodepth: u32, data: DataSpec, seed: u64) -> JobSpec {
    JobSpec {
        name: "fill".into(),
        rw: Rw::Write,
        bs,
        iodepth,
        offset: 0,
        length: capacity_bytes - capacity_bytes % bs,
        limit: Limit::Bytes(capacity_bytes - capacity_bytes % bs),
        rwmixread: 0,
        distribution: Distribution::Random,
        data,
        seed,
    }
}
