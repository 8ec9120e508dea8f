//! A job under way: where its next command goes and how big it is, its
//! queue, its pending writes and what it counted.

use crate::content::pattern::unit_seed;
use crate::content::verify::Expect;
use crate::content::Content;
use crate::host::{BlockDevice, CommandKind, HostQueue, LatencyHistogram};
use crate::units::{Lba, SimTime, SECTOR_BYTES};
use crate::workload::access::{Access, Rw, SlotStream};
use crate::workload::batch::WriteBatch;
use crate::workload::pace::{Pace, Think};
use crate::workload::sizes::Placer;
use crate::workload::WorkloadError;

use super::verify::Verifying;
use super::{DirResult, JobResult, JobSpec, Limit};

/// A job under way: its offset streams, queue, pending writes and counts.
pub(super) struct Running<'a> {
    spec: &'a JobSpec,
    place: Placer,
    mix: SlotStream,
    pub(super) queue: HostQueue,
    batch: WriteBatch,
    pub(super) ops: u64,
    bytes: u64,
    /// The kind of the next command, drawn ahead so its rate limit can
    /// order the jobs.
    next_kind: CommandKind,
    /// The job's rate limits, if any.
    pub(super) pace: Option<Pace>,
    /// When the job stalls to think, if it does.
    pub(super) think: Option<Think>,
    /// Measured ns after which the job stops whatever its limit; 0 for none.
    pub(super) runtime_cap: u64,
    /// What fio's `verify` logged and found, if the job verifies.
    verifying: Option<Verifying>,
    /// When the job began reading its writes back (ns), if it has.
    verify_from: Option<u64>,
    /// Whether its region ran out before its limit (`rw=randread:N`).
    ended: bool,
}

impl<'a> Running<'a> {
    /// `spec` about to start `delay` ns after the drive's present time,
    /// its writes gathered `batch` at a time.
    pub(super) fn new<D: BlockDevice>(
        drive: &D,
        spec: &'a JobSpec,
        batch: usize,
        delay: u64,
    ) -> Result<Self, WorkloadError> {
        spec.validate(drive.capacity_bytes())?;
        let verifying = Verifying::new(spec).map_err(|e| e.in_job(&spec.name))?;
        if verifying.is_some() && !drive.keeps_data() {
            return Err(WorkloadError::BadSpec(
                "verify reads back the bytes written, and this drive keeps none (use --media memory)".into(),
            )
            .in_job(&spec.name));
        }
        let access = Access::from(spec.distribution);
        Ok(Running {
            spec,
            place: Placer::new(
                access,
                spec.slot(),
                spec.length,
                &spec.sizes,
                unit_seed(spec.seed, 2),
                unit_seed(spec.seed, 4),
            )?,
            mix: SlotStream::new(Access::Uniform, 1, unit_seed(spec.seed, 3))?,
            queue: HostQueue::new(spec.iodepth, drive.now() + delay),
            batch: WriteBatch::new(drive.needs_content(), spec.largest_command(), batch),
            ops: 0,
            bytes: 0,
            next_kind: CommandKind::Write,
            pace: None,
            think: None,
            runtime_cap: 0,
            verifying,
            verify_from: None,
            ended: false,
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
    pub(super) fn fraction(&self) -> f64 {
        if self.ended {
            return 1.0;
        }
        match self.spec.limit {
            Limit::Ops(0) | Limit::Bytes(0) => 1.0,
            Limit::Ops(n) => self.ops as f64 / n as f64,
            Limit::Bytes(n) => self.bytes as f64 / n as f64,
            Limit::Time(t) => {
                self.queue.finished_at().0.saturating_sub(self.queue.started_at().0) as f64 / t.max(1) as f64
            }
        }
    }

    pub(super) fn done(&self) -> bool {
        let ran = self.queue.finished_at().0.saturating_sub(self.queue.started_at().0);
        let verify = self.verifying.as_ref();
        (self.issued_all() && !verify.is_some_and(Verifying::pending))
            || (self.runtime_cap > 0 && ran >= self.runtime_cap)
            || verify.is_some_and(Verifying::stopped)
    }

    /// Whether the job has issued all its I/O (what is left is reading
    /// its writes back, for a job that verifies).
    fn issued_all(&self) -> bool {
        self.fraction() >= 1.0
    }

    /// Whether the job's verify fails it: fio's first bad block, in the job.
    pub(super) fn verified(&self) -> Result<(), WorkloadError> {
        self.verifying.as_ref().map_or(Ok(()), Verifying::outcome).map_err(|e| e.in_job(&self.spec.name))
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

    /// When the job's next command can be issued: a slot in its queue (past
    /// any stall to think), and its rate's time for the next command's kind.
    pub(super) fn ready_at(&self) -> SimTime {
        let slot = self.queue.next_submit_time();
        if self.issued_all() {
            return slot;
        }
        self.pace.as_ref().map_or(slot, |p| slot.max(p.gate(self.kind_at(slot) as usize, slot)))
    }

    /// Issues the job's next command; a write waits in the batch until the
    /// batch is full.
    pub(super) fn step<D: BlockDevice>(&mut self, drive: &mut D, content: &mut dyn Content) -> Result<(), WorkloadError>
    where
        WorkloadError: From<D::Error>,
    {
        let spec = self.spec;
        if self.issued_all() || self.verifying.as_ref().is_some_and(Verifying::batch_due) {
            return self.read_back(drive, content);
        }
        // A warm-up command counts toward `number_ios` only after it, and
        // toward the size throughout (as fio's io_issue_bytes).
        let at = self.ready_at();
        let counts = u64::from(at >= self.queue.started_at());
        let kind = self.kind_at(self.queue.next_submit_time());
        if self.pace.is_some() {
            // Open loop: the command waits for its rate's time.
            self.queue.advance_to(at);
        }
        let Some((offset, bytes)) = self.place.next(kind, spec.rw.is_random()) else {
            // fio ends a job whose run from a random offset passes its region.
            self.ended = true;
            return Ok(());
        };
        let at_byte = spec.offset + offset;
        let lba = Lba(at_byte / SECTOR_BYTES);
        if let Some(v) = self.verifying.as_mut().filter(|v| v.dry()) {
            // verify_only: fio's dry run logs the writes and issues nothing.
            if kind == CommandKind::Write {
                v.wrote(at_byte, bytes);
            }
        } else {
            self.issue(drive, content, kind, lba, bytes)?;
        }
        if spec.rw == Rw::TrimWrite {
            // The TRIM before the write is a command of its own.
            self.ops += counts;
        }
        self.ops += counts;
        self.bytes += bytes;
        if let Some(p) = &mut self.pace {
            p.issued(kind as usize, at, bytes);
        }
        if let Some(think) = self.think.as_mut() {
            // The job asks when it could issue its next command: at once,
            // or once one completes when its queue is full.
            let pending = self.queue.pending_at(self.queue.next_submit_time());
            if let Some(resume) = think.after_command(pending, self.queue.finished_at()) {
                self.queue.advance_to(resume);
            }
        }
        self.next_kind = self.draw_kind();
        Ok(())
    }

    /// Issues one command of the main phase: a write into the batch (a
    /// TRIM first for `trimwrite`), or a read or TRIM at once.
    fn issue<D: BlockDevice>(
        &mut self,
        drive: &mut D,
        content: &mut dyn Content,
        kind: CommandKind,
        lba: Lba,
        bytes: u64,
    ) -> Result<(), WorkloadError>
    where
        WorkloadError: From<D::Error>,
    {
        let spec = self.spec;
        let fail = |e: D::Error| WorkloadError::from(e).in_job(&spec.name);
        let sectors = bytes / SECTOR_BYTES;
        if spec.rw == Rw::TrimWrite {
            self.batch.flush(drive, &mut self.queue, content).map_err(fail)?;
            self.queue.set_kind(CommandKind::Trim);
            drive.trim_on(&[(lba, sectors)], &mut self.queue).map_err(fail)?;
        }
        let at_byte = lba.0 * SECTOR_BYTES;
        match kind {
            CommandKind::Write => {
                if let Some(v) = self.verifying.as_mut() {
                    v.wrote(at_byte, bytes);
                }
                self.batch.add(lba, bytes);
                if self.batch.is_full() {
                    self.batch.flush(drive, &mut self.queue, content).map_err(fail)?;
                }
            }
            CommandKind::Read => {
                self.batch.flush(drive, &mut self.queue, content).map_err(fail)?;
                self.queue.set_kind(CommandKind::Read);
                let check = self.verifying.as_ref().is_some_and(|v| v.checks_reads(spec.rw));
                // Only a job that writes sends what it read.
                let into_buffer = check || (spec.rw.does_write() && content.takes_reads() && drive.keeps_data());
                if let Some(data) = drive.read_on(lba, sectors, &mut self.queue, into_buffer).map_err(fail)? {
                    match self.verifying.as_mut().filter(|_| check) {
                        Some(v) => v.check(&data, at_byte, Expect::default()),
                        None => content.read_into(&data),
                    }
                }
            }
            CommandKind::Trim => {
                self.batch.flush(drive, &mut self.queue, content).map_err(fail)?;
                self.queue.set_kind(CommandKind::Trim);
                drive.trim_on(&[(lba, sectors)], &mut self.queue).map_err(fail)?;
            }
        }
        Ok(())
    }

    /// Reads back the next write of a verifying job and checks it (fio's
    /// verify phase, or a `verify_backlog` batch), once the writes before
    /// it have completed.
    fn read_back<D: BlockDevice>(&mut self, drive: &mut D, content: &mut dyn Content) -> Result<(), WorkloadError>
    where
        WorkloadError: From<D::Error>,
    {
        let spec = self.spec;
        let fail = |e: D::Error| WorkloadError::from(e).in_job(&spec.name);
        let last_phase = self.issued_all();
        let Some(v) = self.verifying.as_mut() else { return Ok(()) };
        if !self.batch.is_empty() {
            self.batch.flush(drive, &mut self.queue, content).map_err(fail)?;
        }
        if v.begin() {
            // A batch or the final phase waits for the writes in flight.
            self.queue.advance_to(self.queue.finished_at());
            if last_phase && !v.reads_while_writing() {
                self.verify_from = Some(self.queue.finished_at().0);
            }
        }
        let Some((at, bytes, expect)) = v.next() else { return Ok(()) };
        self.queue.set_kind(CommandKind::Read);
        let lba = Lba(at / SECTOR_BYTES);
        if let Some(data) = drive.read_on(lba, bytes / SECTOR_BYTES, &mut self.queue, true).map_err(fail)? {
            v.check(&data, at, expect);
        }
        Ok(())
    }

    /// Issues the writes still waiting in the batch.
    pub(super) fn flush<D: BlockDevice>(
        &mut self,
        drive: &mut D,
        content: &mut dyn Content,
    ) -> Result<(), WorkloadError>
    where
        WorkloadError: From<D::Error>,
    {
        let name = &self.spec.name;
        self.batch.flush(drive, &mut self.queue, content).map_err(|e| WorkloadError::from(e).in_job(name))
    }

    /// The time each direction ran, ns (read, write, TRIM), as fio counts
    /// it: the whole job, but for one that read its writes back, its writes
    /// and TRIMs until then and its reads from then (or throughout, if it
    /// read before).
    fn spans(&self) -> [u64; 3] {
        let start = self.queue.reported_from().0;
        let end = self.queue.finished_at().0.max(start);
        match self.verify_from.map(|v| v.clamp(start, end)) {
            None => [end - start; 3],
            Some(v) if self.spec.rw.does_read() => [end - start, v - start, v - start],
            Some(v) => [end - v, v - start, v - start],
        }
    }

    pub(super) fn result(&self) -> JobResult {
        // A job that ended in its warm-up reports all it did.
        let start = self.queue.reported_from().0;
        let end = self.queue.finished_at().0.max(start);
        let spans = self.spans();
        let dir = |kind| DirResult::new(self.queue.latencies(kind), self.queue.bytes(kind), spans[kind as usize]);
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
    pub(super) fn merged(jobs: &[Running]) -> JobResult {
        let start = jobs.iter().map(|j| j.queue.reported_from().0).min().unwrap_or(0);
        // fio's group runtime is its longest job's, not the span of jobs
        // that started apart (stat.c sum_thread_stats); so is each
        // direction's.
        let ran = |j: &Running| j.queue.finished_at().0.saturating_sub(j.queue.reported_from().0);
        let end = start + jobs.iter().map(ran).max().unwrap_or(0);
        let dir = |kind: CommandKind| {
            let (mut hist, mut io_bytes) = (LatencyHistogram::default(), 0);
            for j in jobs {
                io_bytes += j.queue.bytes(kind);
                hist.merge(j.queue.latencies(kind));
            }
            let span = jobs.iter().map(|j| j.spans()[kind as usize]).max().unwrap_or(0);
            DirResult::new(&hist, io_bytes, span)
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
