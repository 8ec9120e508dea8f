//! What the server reports: the served-request counters, and a
//! [`Snapshot`] of them with the device's counters and SMART taken
//! together, for the periodic summary, metrics and the final report.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

use super::{InvariantCheck, ServedDevice, Server};
use crate::device::Stats;
use crate::host::smart::Smart;
use crate::host::QueueSummary;
use crate::nbd::device::MemberSnapshot;

/// Served-request counters, by command.
#[derive(Debug, Default)]
pub(super) struct Counters {
    pub(super) connections: AtomicU64,
    pub(super) reads: AtomicU64,
    pub(super) writes: AtomicU64,
    pub(super) trims: AtomicU64,
    pub(super) write_zeroes: AtomicU64,
    pub(super) flushes: AtomicU64,
    pub(super) checkpoints: AtomicU64,
    pub(super) checkpoint_micros: AtomicU64,
    pub(super) block_status: AtomicU64,
    pub(super) errors: AtomicU64,
    pub(super) refused: AtomicU64,
    pub(super) idle_disconnects: AtomicU64,
    pub(super) read_bytes: AtomicU64,
    pub(super) write_bytes: AtomicU64,
}

impl Counters {
    /// Counts one more connection; returns its number.
    pub(super) fn connected(&self) -> u64 {
        self.connections.fetch_add(1, Ordering::Relaxed)
    }

    /// Counts one checkpoint that took `took`.
    pub(super) fn checkpoint(&self, took: Duration) {
        self.checkpoints.fetch_add(1, Ordering::Relaxed);
        self.checkpoint_micros.fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }
}

/// What the server has done, for reports and metrics.
#[derive(Clone, Debug, Serialize)]
pub struct Served {
    /// Connections accepted over the server's life.
    pub connections: u64,
    /// Connections open now.
    pub open_connections: u64,
    /// `NBD_CMD_READ` requests answered.
    pub reads: u64,
    /// `NBD_CMD_WRITE` requests answered.
    pub writes: u64,
    /// `NBD_CMD_TRIM` requests answered.
    pub trims: u64,
    /// `NBD_CMD_WRITE_ZEROES` requests answered.
    pub write_zeroes: u64,
    /// `NBD_CMD_FLUSH` requests answered.
    pub flushes: u64,
    /// Images written to make flushed and FUA data durable (`--image`).
    pub checkpoints: u64,
    /// Wall time those checkpoints took, in seconds.
    pub checkpoint_seconds: f64,
    /// `NBD_CMD_BLOCK_STATUS` requests answered.
    pub block_status: u64,
    /// Requests answered with an error.
    pub errors: u64,
    /// Clients refused because the connection limit was reached.
    pub refused: u64,
    /// Clients disconnected after the idle timeout.
    pub idle_disconnects: u64,
    /// Bytes read by clients.
    pub read_bytes: u64,
    /// Bytes written by clients.
    pub write_bytes: u64,
}

impl Served {
    /// Every request answered.
    pub fn requests(&self) -> u64 {
        self.reads + self.writes + self.trims + self.write_zeroes + self.flushes + self.block_status
    }
}

/// A consistent view of the device and the server at one moment.
#[derive(Clone, Debug, Serialize)]
pub struct Snapshot {
    /// Simulated time of the latest completion, in seconds.
    pub sim_seconds: f64,
    /// Export size in bytes.
    pub size_bytes: u64,
    /// The device's counters (an array's: its members' combined, see
    /// [`Stats::combined`](crate::device::Stats::combined)).
    pub stats: Stats,
    /// The drive's SMART attributes (absent for an array: see `members`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub smart: Option<Smart>,
    /// Each member of an array, in member order (absent for one drive).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberSnapshot>,
    /// Requests served.
    pub served: Served,
    /// Simulated latencies, when asked for (see [`Server::snapshot`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latencies>,
    /// The latest invariant check, if one ran (not in the report, which
    /// carries the final check's result).
    #[serde(skip)]
    pub invariants: Option<InvariantCheck>,
}

/// Simulated command latencies by kind.
#[derive(Clone, Debug, Serialize)]
pub struct Latencies {
    /// Reads.
    pub read: QueueSummary,
    /// Writes, including write-zeroes.
    pub write: QueueSummary,
    /// TRIMs.
    pub trim: QueueSummary,
}

impl<D: ServedDevice> Server<D> {
    /// The device's counters and what was served, taken together; with
    /// `latency`, the simulated latency percentiles too (from fixed-size
    /// histograms, to within 0.4 %). `None` when a command panicked earlier.
    pub fn snapshot(&self, latency: bool) -> Option<Snapshot> {
        let invariants = self.last_check();
        let mut s = self.state.lock().ok()?;
        s.fold();
        let elapsed = s.queue.finished_at().0.saturating_sub(s.queue.started_at().0);
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Some(Snapshot {
            sim_seconds: s.dev.now().secs(),
            size_bytes: self.size,
            stats: s.dev.stats(),
            smart: s.dev.smart(),
            members: s.dev.member_snapshots(),
            served: Served {
                connections: get(&c.connections),
                open_connections: self.open.load(Ordering::Relaxed) as u64,
                reads: get(&c.reads),
                writes: get(&c.writes),
                trims: get(&c.trims),
                write_zeroes: get(&c.write_zeroes),
                flushes: get(&c.flushes),
                checkpoints: get(&c.checkpoints),
                checkpoint_seconds: get(&c.checkpoint_micros) as f64 / 1e6,
                block_status: get(&c.block_status),
                errors: get(&c.errors),
                refused: get(&c.refused),
                idle_disconnects: get(&c.idle_disconnects),
                read_bytes: get(&c.read_bytes),
                write_bytes: get(&c.write_bytes),
            },
            latency: latency.then(|| Latencies {
                read: s.latency[0].summary(elapsed),
                write: s.latency[1].summary(elapsed),
                trim: s.latency[2].summary(elapsed),
            }),
            invariants,
        })
    }
}
