//! A job: a stream of host commands with a pattern, block size, queue
//! depth, region and limit, run against a drive in simulated time. fio job
//! files, HD Tach, ATTO and IOmeter sweeps are all built from jobs.

use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::content::buffers::Writes;
use crate::content::pattern::{unit_seed, DataSpec};
use crate::content::Content;
use crate::host::{BlockDevice, CommandKind, FioCounts, HostQueue, LatencyHistogram, QueueSummary};
use crate::units::SECTOR_BYTES;
use crate::workload::access::{Access, Distribution, Rw};
use crate::workload::batch::WriteBatch;
pub use crate::workload::pace::FioTiming;
use crate::workload::pace::{Pace, Think};
use crate::workload::sizes::{BlockSizes, Placer, SizeChoice};
use crate::workload::WorkloadError;

/// Writes gathered into one pipeline batch at most (timing stays per
/// command; see [`WriteBatch`] for the bytes limit).
const WRITE_BATCH: usize = 64;

/// Bytes a verifying job holds per logged write: its offset, sectors and
/// number (16 bytes) in a B-tree whose nodes are at least half full
/// (measured: 30 to 36 bytes a write).
const VERIFY_LOG_BYTES: u64 = 64;

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
    /// Bytes per command: a positive multiple of 512. With `sizes`, the
    /// smallest (fio's minimum `bs`).
    pub bs: u64,
    /// Sizes of reads, writes and TRIMs when they are not all `bs`, and
    /// where their random offsets align (fio's `bs` per direction,
    /// `bsrange`, `bssplit`, `blockalign`).
    #[serde(skip_serializing_if = "BlockSizes::is_one_size")]
    pub sizes: BlockSizes,
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
    /// The same latencies, counted (for other percentiles, or fio's
    /// bins: [`crate::host::FioBins::of`]).
    #[serde(skip)]
    pub hist: LatencyHistogram,
}

/// What a job did.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct JobResult {
    /// The job's name.
    pub name: String,
    /// Simulated time from the first command to the last completion.
    pub elapsed_ns: u64,
    /// The run times of the jobs it reports, summed (one job's is its
    /// `elapsed_ns`; fio's `job_runtime` of a group).
    #[serde(skip)]
    pub jobs_ns: u64,
    /// When the job started (simulated).
    pub start_ns: u64,
    /// Reads.
    pub read: DirResult,
    /// Writes.
    pub write: DirResult,
    /// TRIMs.
    pub trim: DirResult,
    /// What fio reports beside latencies, when the job was run to count it
    /// ([`run_fio_group`]).
    #[serde(skip)]
    pub fio: Option<FioCounts>,
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
        // Every job draws its random slots from the region (of `bs` each).
        Access::from(self.distribution).check_slots(self.length / self.bs).map_err(|e| {
            WorkloadError::BadSpec(format!(
                "random_distribution: {e}; the region of {} bytes (size) holds {} of bs={}",
                self.length,
                self.length / self.bs,
                self.bs
            ))
        })?;
        self.sizes.check(self.bs, self.length, &self.kinds()).map_err(WorkloadError::BadSpec)?;
        if self.rwmixread > 100 {
            return bad(format!("rwmixread {} is over 100", self.rwmixread));
        }
        if let Some(v) = self.data.verify {
            v.check_sizes(self.bs).map_err(WorkloadError::BadSpec)?;
        }
        Ok(self.data.validate()?)
    }

    /// The kinds of command the job issues.
    pub fn kinds(&self) -> Vec<CommandKind> {
        let kinds = [CommandKind::Read, CommandKind::Write, CommandKind::Trim];
        kinds.into_iter().zip(self.rw.directions()).filter_map(|(kind, does)| does.then_some(kind)).collect()
    }

    /// The largest command the job issues.
    pub fn largest_command(&self) -> u64 {
        self.sizes.largest(self.bs, &self.kinds())
    }

    /// The slot the job's region is cut into ([`BlockSizes::slot`]).
    pub fn slot(&self) -> u64 {
        self.sizes.slot(self.bs, &self.kinds())
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
    let mut gen = Writes::new(spec.data, unit_seed(spec.seed, 1), spec.largest_command())?;
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
    let mut job = Running::new(drive, spec, WRITE_BATCH, 0)?;
    while !job.done() {
        if job.ops.is_multiple_of(4096) {
            progress(job.fraction());
        }
        job.step(drive, content)?;
    }
    job.flush(drive, content)?;
    progress(1.0);
    job.verified()?;
    Ok(job.result())
}

/// What a group of jobs run together did: each job, and all of them as
/// one (fio's `group_reporting`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupResult {
    /// One result per job, in the order given.
    pub jobs: Vec<JobResult>,
    /// The jobs together under the first one's name: bytes and commands
    /// summed, latencies merged, over the time from the group's start to
    /// its last completion.
    pub total: JobResult,
}

/// Runs `specs` together from the drive's present time, as fio runs the
/// jobs between two stonewalls: each job keeps its own `iodepth` commands
/// outstanding, the drive serves them all, and whichever job can issue
/// first goes next (ties: the earlier job). A job's writes are issued in
/// batches of at most its queue depth, so no job runs ahead of the others
/// by more than one queue-full. `progress` gets the mean fraction done.
pub fn run_group<D: BlockDevice>(
    drive: &mut D,
    specs: &[JobSpec],
    progress: &mut dyn FnMut(f64),
) -> Result<GroupResult, WorkloadError>
where
    WorkloadError: From<D::Error>,
{
    run_counted(drive, specs, None, progress)
}

/// [`run_group`], each job timed as fio times it (`timings` has one entry
/// per spec): from its start delay, at most at its rates, measured after
/// its warm-up, and counting what fio reports beside its latencies
/// ([`JobResult::fio`]). The drive idles (idle GC) while no job has a
/// command to issue. Once `stop` is set (fio's SIGINT), no job issues
/// another command and the results are those of the commands issued.
pub fn run_fio_group<D: BlockDevice>(
    drive: &mut D,
    specs: &[JobSpec],
    timings: &[FioTiming],
    stop: &AtomicBool,
    progress: &mut dyn FnMut(f64),
) -> Result<GroupResult, WorkloadError>
where
    WorkloadError: From<D::Error>,
{
    if timings.len() != specs.len() {
        return Err(WorkloadError::BadSpec(format!("{} jobs but {} timings", specs.len(), timings.len())));
    }
    run_counted(drive, specs, Some((timings, stop)), progress)
}

fn run_counted<D: BlockDevice>(
    drive: &mut D,
    specs: &[JobSpec],
    fio: Option<(&[FioTiming], &AtomicBool)>,
    progress: &mut dyn FnMut(f64),
) -> Result<GroupResult, WorkloadError>
where
    WorkloadError: From<D::Error>,
{
    let (timings, stop) = (fio.map(|f| f.0), fio.map(|f| f.1));
    if specs.is_empty() {
        return Err(WorkloadError::BadSpec("a group needs at least one job".into()));
    }
    let mut gens = specs
        .iter()
        .map(|s| Writes::new(s.data, unit_seed(s.seed, 1), s.largest_command()))
        .collect::<Result<Vec<_>, _>>()?;
    let default = FioTiming::default();
    let timing = |i: usize| timings.and_then(|t| t.get(i)).unwrap_or(&default);
    let mut jobs = Vec::with_capacity(specs.len());
    for (i, s) in specs.iter().enumerate() {
        // A paced or thinking job's writes go one at a time, each at its own issue time.
        let batch = if timing(i).open_loop() { 1 } else { group_batch(s, specs.len()) };
        let mut job = Running::new(drive, s, batch, timing(i).start_delay_ns)?;
        if timings.is_some() {
            let t = timing(i);
            let start = job.queue.started_at();
            job.queue.measure_from(start + t.ramp_ns);
            job.queue.count_for_fio(t.iops_ms, t.bw_ms);
            job.pace = t.limits_rate().then(|| Pace::new(t, start, start + t.ramp_ns));
            job.think = Think::new(t, start);
            job.runtime_cap = t.runtime_cap_ns;
        }
        jobs.push(job);
    }
    let mut steps = 0u64;
    loop {
        if stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
            // Stopped: what each job issued completes, nothing more.
            for (job, content) in jobs.iter_mut().zip(&mut gens).filter(|(j, _)| !j.done()) {
                job.flush(drive, content)?;
            }
            break;
        }
        let due = jobs.iter().enumerate().filter(|(_, j)| !j.done()).min_by_key(|&(i, j)| (j.ready_at(), i));
        let Some((i, _)) = due else { break };
        // Every command booked so far is done by the drive's present time:
        // until the next issue, the drive is idle.
        let at = jobs[i].ready_at();
        if timings.is_some() && at > drive.now() {
            drive.idle(drive.now(), at)?;
        }
        jobs[i].step(drive, &mut gens[i])?;
        if jobs[i].done() {
            jobs[i].flush(drive, &mut gens[i])?;
        }
        steps += 1;
        if steps.is_multiple_of(4096) {
            progress(jobs.iter().map(Running::fraction).sum::<f64>() / jobs.len() as f64);
        }
    }
    progress(1.0);
    jobs.iter().try_for_each(Running::verified)?;
    let total = Running::merged(&jobs);
    Ok(GroupResult { jobs: jobs.iter().map(Running::result).collect(), total })
}

/// Writes a job's batch gathers when it runs with `jobs` jobs in all.
fn group_batch(spec: &JobSpec, jobs: usize) -> usize {
    if jobs > 1 {
        WRITE_BATCH.min(spec.iodepth as usize)
    } else {
        WRITE_BATCH
    }
}

/// What jobs run together by [`run_group`] hold beside the drive at most,
/// sized from their specs before anything is allocated.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GroupMemory {
    /// The write batches of the jobs that write ([`WriteBatch::bytes_for`]:
    /// up to 64 requests within 16 MiB, or one request of a larger `bs`).
    pub write_buffers: u64,
    /// The queues' completion times ([`HostQueue::bytes_for`]).
    pub queues: u64,
    /// The largest command, in bytes: the drive's working state for a
    /// command grows with it.
    pub largest_command: u64,
    /// The random maps of jobs with several block sizes (a bit a slot).
    pub random_maps: u64,
    /// What verifying jobs log of their writes to read them back.
    pub verify_logs: u64,
}

impl GroupMemory {
    /// `specs` run together on a drive that needs written bytes when
    /// `content` ([`BlockDevice::needs_content`]).
    pub fn of(specs: &[JobSpec], content: bool) -> Self {
        let mut m = GroupMemory::default();
        for s in specs {
            if s.rw.does_write() {
                let batch = WriteBatch::bytes_for(content, s.largest_command(), group_batch(s, specs.len()));
                let kept = if content { Writes::kept_bytes(&s.data, s.largest_command(), s.rw.does_read()) } else { 0 };
                m.write_buffers = m.write_buffers.saturating_add(batch).saturating_add(kept);
            }
            let commands = match s.limit {
                Limit::Ops(n) => n,
                Limit::Bytes(b) => b.div_ceil(s.bs.max(1)),
                Limit::Time(_) => u64::MAX,
            };
            m.queues = m.queues.saturating_add(HostQueue::bytes_for(s.iodepth, commands));
            m.largest_command = m.largest_command.max(s.largest_command());
            let access = Access::from(s.distribution);
            m.random_maps = m.random_maps.saturating_add(Placer::map_bytes(access, s.slot(), s.length, &s.sizes));
            if s.data.verify.is_some_and(|v| v.read_back) && s.rw.does_write() {
                // A logged write at most per block of the region, in a B-tree node's share.
                let pieces =
                    commands.min(s.length / s.sizes.of(CommandKind::Write).map_or(s.bs, SizeChoice::min).max(1));
                m.verify_logs = m.verify_logs.saturating_add(pieces.saturating_mul(VERIFY_LOG_BYTES));
            }
        }
        m
    }
}

impl DirResult {
    fn new(hist: &LatencyHistogram, io_bytes: u64, elapsed: u64) -> Self {
        let lat = hist.summary(elapsed);
        let secs = elapsed as f64 / 1e9;
        let per_sec = |x: f64| if secs > 0.0 { x / secs } else { 0.0 };
        let iops = per_sec(lat.commands as f64);
        DirResult { io_bytes, bw_bytes: per_sec(io_bytes as f64), iops, lat, hist: hist.clone() }
    }
}

/// A job that writes the whole drive once, sequentially, at queue depth
/// `iodepth` with `bs` commands: the usual precondition. A `bs` of 0 gives
/// a spec that running refuses ([`JobSpec::validate`]).
pub fn fill_spec(capacity_bytes: u64, bs: u64, iodepth: u32, data: DataSpec, seed: u64) -> JobSpec {
    let whole = capacity_bytes - capacity_bytes.checked_rem(bs).unwrap_or(0);
    JobSpec {
        name: "fill".into(),
        rw: Rw::Write,
        bs,
        sizes: Default::default(),
        iodepth,
        offset: 0,
        length: whole,
        limit: Limit::Bytes(whole),
        rwmixread: 0,
        distribution: Distribution::Random,
        data,
        seed,
    }
}

mod running;
#[cfg(test)]
mod tests;
mod verify;

use running::Running;
