//! A job: a stream of host commands with a pattern, block size, queue
//! depth, region and limit, run against a drive in simulated time. fio job
//! files, HD Tach, ATTO and IOmeter sweeps are all built from jobs.

use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use crate::content::pattern::{unit_seed, DataSpec, PatternGen};
use crate::content::Content;
use crate::host::{BlockDevice, CommandKind, FioCounts, HostQueue, LatencyHistogram, QueueSummary};
use crate::units::{Lba, SimTime, SECTOR_BYTES};
use crate::workload::access::{Access, Distribution, Rw, SlotStream};
use crate::workload::batch::WriteBatch;
pub use crate::workload::pace::FioTiming;
use crate::workload::pace::Pace;
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
    let mut job = Running::new(drive, spec, WRITE_BATCH, 0)?;
    while !job.done() {
        if job.ops.is_multiple_of(4096) {
            progress(job.fraction());
        }
        job.step(drive, content)?;
    }
    job.flush(drive, content)?;
    progress(1.0);
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
    let mut gens =
        specs.iter().map(|s| PatternGen::new(s.data, unit_seed(s.seed, 1))).collect::<Result<Vec<_>, _>>()?;
    let default = FioTiming::default();
    let timing = |i: usize| timings.and_then(|t| t.get(i)).unwrap_or(&default);
    let mut jobs = Vec::with_capacity(specs.len());
    for (i, s) in specs.iter().enumerate() {
        // A paced job's writes go one at a time, each at its own issue time.
        let batch = if timing(i).limits_rate() { 1 } else { group_batch(s, specs.len()) };
        let mut job = Running::new(drive, s, batch, timing(i).start_delay_ns)?;
        if timings.is_some() {
            let t = timing(i);
            let start = job.queue.started_at();
            job.queue.measure_from(start + t.ramp_ns);
            job.queue.count_for_fio(t.iops_ms, t.bw_ms, s.bs);
            job.pace = t.limits_rate().then(|| Pace::new(t, s.bs, start, start + t.ramp_ns));
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
}

impl GroupMemory {
    /// `specs` run together on a drive that needs written bytes when
    /// `content` ([`BlockDevice::needs_content`]).
    pub fn of(specs: &[JobSpec], content: bool) -> Self {
        let mut m = GroupMemory::default();
        for s in specs {
            if s.rw.does_write() {
                let batch = WriteBatch::bytes_for(content, s.bs, group_batch(s, specs.len()));
                m.write_buffers = m.write_buffers.saturating_add(batch);
            }
            let commands = match s.limit {
                Limit::Ops(n) => n,
                Limit::Bytes(b) => b.div_ceil(s.bs.max(1)),
                Limit::Time(_) => u64::MAX,
            };
            m.queues = m.queues.saturating_add(HostQueue::bytes_for(s.iodepth, commands));
            m.largest_command = m.largest_command.max(s.bs);
        }
        m
    }
}

/// A job under way: its offset streams, queue, pending writes and counts.
struct Running<'a> {
    spec: &'a JobSpec,
    slots: u64,
    random: SlotStream,
    mix: SlotStream,
    queue: HostQueue,
    batch: WriteBatch,
    next_seq: u64,
    ops: u64,
    bytes: u64,
    /// The kind of the next command, drawn ahead so its rate limit can
    /// order the jobs.
    next_kind: CommandKind,
    /// The job's rate limits, if any.
    pace: Option<Pace>,
    /// Measured ns after which the job stops whatever its limit; 0 for none.
    runtime_cap: u64,
}

impl<'a> Running<'a> {
    /// `spec` about to start `delay` ns after the drive's present time,
    /// its writes gathered `batch` at a time.
    fn new<D: BlockDevice>(drive: &D, spec: &'a JobSpec, batch: usize, delay: u64) -> Result<Self, WorkloadError> {
        spec.validate(drive.capacity_bytes())?;
        let slots = spec.length / spec.bs;
        Ok(Running {
            spec,
            slots,
            random: SlotStream::new(Access::from(spec.distribution), slots, unit_seed(spec.seed, 2))?,
            mix: SlotStream::new(Access::Uniform, 1, unit_seed(spec.seed, 3))?,
            queue: HostQueue::new(spec.iodepth, drive.now() + delay),
            batch: WriteBatch::new(drive.needs_content(), spec.bs, batch),
            next_seq: 0,
            ops: 0,
            bytes: 0,
            next_kind: CommandKind::Write,
            pace: None,
            runtime_cap: 0,
        }
        .drawn())
    }

    /// `self` with its next command's kind drawn.
    fn drawn(mut self) -> Self {
        self.next_kind = self.draw_kind();
        self
    }

    /// The kind of the next command: the pattern's, or for a mix a draw.
    fn draw_kind(&mut self) -> CommandKind {
        match self.spec.rw {
            Rw::Read | Rw::RandRead => CommandKind::Read,
            Rw::Write | Rw::RandWrite | Rw::TrimWrite => CommandKind::Write,
            Rw::Trim | Rw::RandTrim => CommandKind::Trim,
            Rw::RandRw | Rw::SeqRw => {
                if self.mix.chance(self.spec.rwmixread) {
                    CommandKind::Read
                } else {
                    CommandKind::Write
                }
            }
        }
    }

    /// How far the job has come toward its limit (1 or more: done; a limit
    /// of nothing is done before it starts).
    fn fraction(&self) -> f64 {
        match self.spec.limit {
            Limit::Ops(0) | Limit::Bytes(0) => 1.0,
            Limit::Ops(n) => self.ops as f64 / n as f64,
            Limit::Bytes(n) => self.bytes as f64 / n as f64,
            Limit::Time(t) => {
                self.queue.finished_at().0.saturating_sub(self.queue.started_at().0) as f64 / t.max(1) as f64
            }
        }
    }

    fn done(&self) -> bool {
        let ran = self.queue.finished_at().0.saturating_sub(self.queue.started_at().0);
        self.fraction() >= 1.0 || (self.runtime_cap > 0 && ran >= self.runtime_cap)
    }

    /// The kind the next command is issued as: the drawn one, or under a
    /// rate, the other direction of a mix when that one is due first.
    fn kind_at(&self, slot: SimTime) -> CommandKind {
        let Some(p) = &self.pace else { return self.next_kind };
        let other = match (self.spec.rw, self.spec.rwmixread, self.next_kind) {
            (Rw::RandRw | Rw::SeqRw, 1..=100, CommandKind::Write) => Some(CommandKind::Read),
            (Rw::RandRw | Rw::SeqRw, 0..=99, CommandKind::Read) => Some(CommandKind::Write),
            _ => None,
        };
        match p.choose(self.next_kind as usize, other.map(|o| o as usize), slot) {
            0 => CommandKind::Read,
            1 => CommandKind::Write,
            _ => CommandKind::Trim,
        }
    }

    /// When the job's next command can be issued: a slot in its queue, and
    /// its rate's time for the next command's kind.
    fn ready_at(&self) -> SimTime {
        let slot = self.queue.next_submit_time();
        self.pace.as_ref().map_or(slot, |p| slot.max(p.gate(self.kind_at(slot) as usize, slot)))
    }

    /// Issues the job's next command; a write waits in the batch until the
    /// batch is full.
    fn step<D: BlockDevice>(&mut self, drive: &mut D, content: &mut dyn Content) -> Result<(), WorkloadError>
    where
        WorkloadError: From<D::Error>,
    {
        let spec = self.spec;
        let fail = |e: D::Error| WorkloadError::from(e).in_job(&spec.name);
        let sectors = spec.bs / SECTOR_BYTES;
        // A warm-up command counts toward `number_ios` only after it, and
        // toward the size throughout (as fio's io_issue_bytes).
        let at = self.ready_at();
        let counts = u64::from(at >= self.queue.started_at());
        let kind = self.kind_at(self.queue.next_submit_time());
        if self.pace.is_some() {
            // Open loop: the command waits for its rate's time.
            self.queue.advance_to(at);
        }
        let slot = if spec.rw.is_random() { self.random.next_slot() } else { self.next_seq };
        self.next_seq = (self.next_seq + 1) % self.slots;
        let lba = Lba((spec.offset + slot * spec.bs) / SECTOR_BYTES);
        if spec.rw == Rw::TrimWrite {
            self.batch.flush(drive, &mut self.queue, content).map_err(fail)?;
            self.queue.set_kind(CommandKind::Trim);
            drive.trim_on(&[(lba, sectors)], &mut self.queue).map_err(fail)?;
            self.ops += counts;
        }
        match kind {
            CommandKind::Write => {
                self.batch.add(lba);
                if self.batch.is_full() {
                    self.batch.flush(drive, &mut self.queue, content).map_err(fail)?;
                }
            }
            CommandKind::Read => {
                self.batch.flush(drive, &mut self.queue, content).map_err(fail)?;
                self.queue.set_kind(CommandKind::Read);
                drive.read_on(lba, sectors, &mut self.queue, false).map_err(fail)?;
            }
            CommandKind::Trim => {
                self.batch.flush(drive, &mut self.queue, content).map_err(fail)?;
                self.queue.set_kind(CommandKind::Trim);
                drive.trim_on(&[(lba, sectors)], &mut self.queue).map_err(fail)?;
            }
        }
        self.ops += counts;
        self.bytes += spec.bs;
        if let Some(p) = &mut self.pace {
            p.issued(kind as usize, at);
        }
        self.next_kind = self.draw_kind();
        Ok(())
    }

    /// Issues the writes still waiting in the batch.
    fn flush<D: BlockDevice>(&mut self, drive: &mut D, content: &mut dyn Content) -> Result<(), WorkloadError>
    where
        WorkloadError: From<D::Error>,
    {
        let name = &self.spec.name;
        self.batch.flush(drive, &mut self.queue, content).map_err(|e| WorkloadError::from(e).in_job(name))
    }

    fn result(&self) -> JobResult {
        // A job that ended in its warm-up reports all it did.
        let start = self.queue.reported_from().0;
        let end = self.queue.finished_at().0.max(start);
        let dir = |kind| dir_result(self.queue.latencies(kind), self.spec.bs, end - start);
        JobResult {
            name: self.spec.name.clone(),
            elapsed_ns: end - start,
            jobs_ns: end - start,
            start_ns: start,
            read: dir(CommandKind::Read),
            write: dir(CommandKind::Write),
            trim: dir(CommandKind::Trim),
            fio: self.queue.fio_counts(),
        }
    }

    /// `jobs` (at least one) as one job: fio's `group_reporting`.
    fn merged(jobs: &[Running]) -> JobResult {
        let start = jobs.iter().map(|j| j.queue.reported_from().0).min().unwrap_or(0);
        // fio's group runtime is its longest job's, not the span of jobs
        // that started apart (stat.c sum_thread_stats).
        let ran = |j: &Running| j.queue.finished_at().0.saturating_sub(j.queue.reported_from().0);
        let end = start + jobs.iter().map(ran).max().unwrap_or(0);
        let dir = |kind| {
            let (mut hist, mut io_bytes) = (LatencyHistogram::default(), 0);
            for j in jobs {
                let h = j.queue.latencies(kind);
                io_bytes += h.count() * j.spec.bs;
                hist.merge(h);
            }
            DirResult::new(&hist, io_bytes, end - start)
        };
        JobResult {
            name: jobs.first().map_or_else(String::new, |j| j.spec.name.clone()),
            elapsed_ns: end - start,
            jobs_ns: jobs.iter().map(ran).sum(),
            start_ns: start,
            read: dir(CommandKind::Read),
            write: dir(CommandKind::Write),
            trim: dir(CommandKind::Trim),
            fio: jobs.iter().filter_map(|j| j.queue.fio_counts()).reduce(|mut group, job| {
                group.sum(&job);
                group
            }),
        }
    }
}

/// One direction of a job of `bs`-byte commands that ran `elapsed` ns.
fn dir_result(hist: &LatencyHistogram, bs: u64, elapsed: u64) -> DirResult {
    DirResult::new(hist, hist.count() * bs, elapsed)
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

#[cfg(test)]
mod tests;
