//! The host side of a command stream: a closed-loop queue that keeps up to
//! `depth` commands outstanding in simulated time, and what it measured.

use std::collections::VecDeque;

use crate::device::{Drive, Issuer};
use crate::error::DriveError;
use crate::units::{Lba, SimTime};

pub use fio_bins::FioBins;
use fio_stats::FioStats;
pub use fio_stats::{FioCounts, SampleStat, DEPTH_LEVELS, LATENCY_RANGES};
pub use latency::{FioLatency, LatencyHistogram, QueueSummary, FIO_PERCENTILES};

mod fio_bins;
mod fio_stats;
pub mod fs;
mod latency;
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
    /// Whether a read can return the bytes written (memory media).
    fn keeps_data(&self) -> bool;
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
    fn keeps_data(&self) -> bool {
        Drive::keeps_data(self)
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

    fn complete(&mut self, submitted: SimTime, done: SimTime, bytes: u64) {
        HostQueue::complete(self, submitted, done, bytes)
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
    /// Bytes of the commands counted in `latencies`, per kind.
    bytes: [u64; KINDS],
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
            bytes: [0; KINDS],
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
    /// latencies (see [`FioCounts`]).
    pub fn count_for_fio(&mut self, iops_window_ms: u32, bw_window_ms: u32) {
        self.fio = Some(Box::new(FioStats::new(iops_window_ms, bw_window_ms, self.reported_from())));
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

    /// Records that a command of `bytes` issued at `submitted` completed
    /// at `done`.
    pub fn complete(&mut self, submitted: SimTime, done: SimTime, bytes: u64) {
        if !self.warmed && done >= self.measured {
            // The warm-up is over: what it counted is dropped (fio's
            // reset_all_stats when ramp_time ends).
            self.warmed = true;
            self.latencies = Default::default();
            self.bytes = [0; KINDS];
            if let Some(fio) = self.fio.as_mut() {
                fio.restart(self.measured);
            }
        }
        let counted = !self.warmed || done >= self.measured;
        if let Some(fio) = self.fio.as_mut().filter(|_| counted) {
            // In flight when it was issued: those done later, and itself.
            let depth = self.in_flight.len() - self.in_flight.partition_point(|&t| t <= submitted) + 1;
            fio.record(self.kind, submitted, done, depth, bytes);
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
            self.bytes[self.kind] = self.bytes[self.kind].saturating_add(bytes);
        }
    }

    /// How many commands issued are not complete at `at`.
    pub fn pending_at(&self, at: SimTime) -> u64 {
        (self.in_flight.len() - self.in_flight.partition_point(|&done| done <= at)) as u64
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

    /// The bytes of the commands of `kind` recorded so far.
    pub fn bytes(&self, kind: CommandKind) -> u64 {
        self.bytes[kind as usize]
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warm_up_counts_in_no_figure() {
        let mut q = HostQueue::new(1, SimTime::ZERO);
        q.measure_from(SimTime(100));
        q.count_for_fio(500, 500);
        for (at, done) in [(0, 60), (60, 120), (120, 180)] {
            let s = q.submit_time();
            assert_eq!(s, SimTime(at));
            q.complete(s, SimTime(done), 4096);
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
        q.count_for_fio(500, 500);
        for done in [70, 130] {
            let s = q.submit_time();
            q.complete(s, SimTime(done), 4096);
        }
        let s = q.summary();
        assert_eq!((s.commands, s.elapsed_ns), (2, 120), "both, from the start at 10");
        assert_eq!((q.started_at(), q.reported_from()), (SimTime(1_000), SimTime(10)));
        assert_eq!(q.fio_counts().map(|c| c.depth.iter().sum::<u64>()), Some(2));
        // One completion past the warm-up clears what it counted.
        let s = q.submit_time();
        q.complete(s, SimTime(1_100), 4096);
        assert_eq!((q.summary().commands, q.reported_from()), (1, SimTime(1_000)));
        assert_eq!(q.fio_counts().map(|c| c.depth.iter().sum::<u64>()), Some(1));
    }

    #[test]
    fn depth_limits_commands_in_flight() {
        let mut q = HostQueue::new(2, SimTime::ZERO);
        let a = q.submit_time();
        q.complete(a, SimTime(100), 4096);
        let b = q.submit_time();
        q.complete(b, SimTime(50), 4096);
        assert_eq!((a, b), (SimTime::ZERO, SimTime::ZERO));
        let c = q.submit_time();
        assert_eq!(c, SimTime(50), "third command waits for the first completion");
        q.complete(c, SimTime(120), 4096);
        assert_eq!(q.submit_time(), SimTime(100));
        let s = q.summary();
        assert_eq!(s.commands, 3);
        assert_eq!(q.summary_of(CommandKind::Write).commands, 3);
        assert_eq!(q.summary_of(CommandKind::Read).commands, 0);
        assert_eq!(s.max_ns, 100);
    }

    #[test]
    fn advancing_releases_completed_commands() {
        let mut q = HostQueue::new(2, SimTime::ZERO);
        for done in [100, 300] {
            let at = q.submit_time();
            q.complete(at, SimTime(done), 4096);
        }
        q.advance_to(SimTime(150));
        assert_eq!(q.submit_time(), SimTime(150), "one slot freed by the completion at 100");
        q.complete(SimTime(150), SimTime(400), 4096);
        assert_eq!(q.submit_time(), SimTime(300), "full again: waits for the completion at 300");
        q.advance_to(SimTime(50));
        assert_eq!(q.submit_time(), SimTime(300), "time never goes back");
    }
}
