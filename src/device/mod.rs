//! The drive: composition root of the model. Owns the NAND array, the
//! physical space, the chunk store, the map and the counters, and runs
//! every host command through them. One file per path: [`mod@write`],
//! [`read`], [`trim`] (and secure erase), [`gc`], [`schedule`] (turning
//! the NAND work each path records into simulated time), [`persist`]
//! (images), [`check`] (the invariant checker) and [`stats`].
//!
//! Write: validate -> split into units (read-modify-write partial ones) ->
//! compress + fingerprint in parallel -> in order: dedup lookup (a hit
//! costs no NAND program), else foreground GC if space is short, then pack
//! the stored bytes into an open block -> map the unit -> drop the old
//! chunk's reference; at zero its bytes turn invalid in their block.
//! TRIM unmaps whole units the same way. GC moves live chunks and updates
//! the chunk store only, never the map.

use crate::config::{DriveConfig, Media, StreamInference};
use crate::datapath::chunk_bytes::ChunkBytes;
use crate::datapath::chunks::ChunkStore;
use crate::datapath::pipeline::{EncodedBatch, Encoder};
use crate::datapath::tape::{Tape, TapeSlot};
use crate::error::{ConfigError, DriveError};
use crate::ftl::map::L2pMap;
use crate::ftl::map_cache::MapCache;
use crate::ftl::recency::RecencyTable;
use crate::ftl::space::Space;
use crate::nand::{NandArray, NandOp};
use crate::timing::Timeline;
use crate::units::{BlockId, ChunkId, Lba, Lpn, NandExtent, SimTime, SECTOR_BYTES};

pub mod check;
pub mod gc;
pub mod memory;
pub mod persist;
pub mod read;
pub mod resume;
pub mod schedule;
pub mod stats;
pub mod trim;
mod wear;
pub mod write;

pub use check::InvariantError;
pub use persist::{inspect, ImageInfo, ImageSummary};
pub use stats::{Footprint, Stats};

use stats::Counters;
use write::COMMIT_SLICE_UNITS;

/// The host side of commands as a drive sees it: when each command is
/// submitted, and where its completion goes. The host's queue
/// (`host::HostQueue`) is one; [`Serial`] is the simplest.
pub trait Issuer {
    /// When the next command is submitted.
    fn submit_time(&mut self) -> SimTime;
    /// The command submitted at `submitted`, of `bytes` (read, written
    /// or trimmed), completed at `done`.
    fn complete(&mut self, submitted: SimTime, done: SimTime, bytes: u64);
}

/// Commands issued one after another, each when the previous one
/// completed (queue depth 1), starting at the wrapped time.
#[derive(Clone, Copy, Debug)]
pub struct Serial(pub SimTime);

impl Issuer for Serial {
    fn submit_time(&mut self) -> SimTime {
        self.0
    }

    fn complete(&mut self, _submitted: SimTime, done: SimTime, _bytes: u64) {
        self.0 = self.0.max(done);
    }
}

/// A simulated SSD.
#[derive(Clone, Debug)]
pub struct Drive {
    config: DriveConfig,
    nand: NandArray,
    space: Space,
    chunks: ChunkStore,
    /// The stored bytes of each live chunk (memory media only).
    bytes: ChunkBytes,
    map: L2pMap,
    encoder: Encoder,
    /// Scratch buffers reused by every commit: the slice being applied
    /// and the one being encoded.
    batch: EncodedBatch,
    next_batch: EncodedBatch,
    counters: Counters,
    /// Unit writes so far (host and GC): the age clock of cost-benefit GC.
    clock: u64,
    /// Stored bytes of live chunks. Invariant: the sum of live extents.
    live_bytes: u64,
    /// Busy-until clocks of dies, channels, engine, firmware and link.
    timeline: Timeline,
    /// Mapping-table pages held in controller memory.
    map_cache: MapCache,
    /// Completion time of the latest command: where untimed calls start.
    now: SimTime,
    /// Journal position where each request of the current batch began.
    marks: Vec<usize>,
    /// Recently read NAND pages in the controller's read buffer:
    /// `(block, page, erase count)`, most recent last.
    read_cache: std::collections::VecDeque<(u32, u32, u32)>,
    /// Scratch list of a GC victim's chunks, reused by every collection.
    gc_scratch: Vec<(ChunkId, NandExtent)>,
    /// Where GC moved them (the same reuse).
    gc_moved: Vec<NandExtent>,
    /// The journal buffer not in use (see [`NandArray::take_journal`]).
    ops_spare: Vec<NandOp>,
    /// Scratch list of when each GC victim's data is read, per write.
    victim_scratch: Vec<Option<SimTime>>,
    /// The host's stream hints: `(first unit, stream)` in order, each
    /// reaching to the next; units before the first are stream 0.
    stream_hints: Vec<(u64, u8)>,
    /// The encoding tape writes record to or play back from, if any.
    tape: TapeSlot,
    /// Last-write stamps of the units when the drive infers streams
    /// (`placement.infer`); they replace the host's hints.
    recency: Option<RecencyTable>,
}

/// The recency table `config` asks for, its window in host unit writes.
fn recency_table(config: &DriveConfig) -> Option<RecencyTable> {
    match config.placement.infer {
        StreamInference::Off => None,
        StreamInference::Recency { window_milli } => {
            let units = config.logical_units();
            let window = units.saturating_mul(u64::from(window_milli)) / 1000;
            Some(RecencyTable::new(units, window, config.placement.streams))
        }
    }
}

impl Drive {
    /// Whether the tables of a drive of `config` could be allocated on this
    /// machine (its memory and swap, or `ulimit -v`): checked before any is.
    fn fits_in_memory(config: &DriveConfig) -> Result<(), ConfigError> {
        match memory::MemoryLimit::installed() {
            Some(limit) => {
                memory::MemoryEstimate::at_build(config).check(&limit).map_err(|e| ConfigError::TooLarge(e.to_string()))
            }
            None => Ok(()),
        }
    }

    /// A secure-erased drive built from a validated `config`. Refuses one
    /// whose tables could never be allocated on this machine
    /// ([`ConfigError::TooLarge`]) rather than aborting on the allocation.
    pub fn new(config: DriveConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Self::fits_in_memory(&config)?;
        // Live chunks never exceed the units (each has a reference), plus
        // the one placed before the chunk it replaces is freed.
        let chunks = config.logical_units() as usize + COMMIT_SLICE_UNITS;
        let mut space = Space::with_frontiers(&config.geometry, config.placement.frontiers());
        space.set_least_worn_first(config.wear.dynamic);
        Ok(Drive {
            nand: NandArray::new(&config.geometry),
            space,
            chunks: ChunkStore::with_capacity(config.dedup, config.packing()?, chunks),
            bytes: ChunkBytes::with_capacity(if config.media == Media::Memory { chunks } else { 0 }),
            map: L2pMap::new(config.logical_units()),
            encoder: Encoder {
                unit_bytes: config.unit_bytes as usize,
                compression: config.compression,
                fingerprint: config.dedup,
            },
            batch: EncodedBatch::default(),
            next_batch: EncodedBatch::default(),
            counters: Counters::default(),
            clock: 0,
            live_bytes: 0,
            timeline: Timeline::new(
                config.timing.clone(),
                config.geometry.page_bytes,
                config.geometry.channels,
                config.geometry.dies(),
            ),
            map_cache: MapCache::new(config.map_cache_pages(), u64::from(config.geometry.page_bytes / 4)),
            now: SimTime::ZERO,
            marks: Vec::new(),
            read_cache: std::collections::VecDeque::new(),
            gc_scratch: Vec::new(),
            gc_moved: Vec::new(),
            ops_spare: Vec::new(),
            stream_hints: Vec::new(),
            recency: recency_table(&config),
            victim_scratch: Vec::new(),
            tape: TapeSlot::default(),
            config,
        })
    }

    /// Sets the host's write-stream hints (like NVMe stream ids or fio's
    /// `write_hint`): `(first unit, stream)` pairs, each reaching to the
    /// next, units before the first in stream 0. New data of a unit goes
    /// to its stream's open blocks, and GC keeps it in that stream. A
    /// run-time setting, not kept in images. Fails naming the first stream
    /// the drive does not have (`placement.streams`).
    pub fn set_stream_hints(&mut self, mut hints: Vec<(Lpn, u8)>) -> Result<(), DriveError> {
        let streams = self.config.placement.streams;
        if let Some(&(_, stream)) = hints.iter().find(|(_, s)| *s >= streams) {
            return Err(DriveError::UnknownStream { stream, streams });
        }
        hints.sort_by_key(|&(lpn, _)| lpn.0);
        self.stream_hints = hints.into_iter().map(|(lpn, s)| (lpn.0, s)).collect();
        Ok(())
    }

    /// The write frontier of a host write of `lpn`: the stream inferred
    /// from its recency when the drive infers streams (counting the
    /// write), else its hinted stream.
    fn host_frontier(&mut self, lpn: Lpn) -> usize {
        if let Some(t) = &mut self.recency {
            return usize::from(t.write(lpn));
        }
        let i = self.stream_hints.partition_point(|&(first, _)| first <= lpn.0);
        i.checked_sub(1).map_or(0, |i| usize::from(self.stream_hints[i].1))
    }

    /// The write frontier GC relocates `victim`'s data to: the stream it
    /// was written to, on the GC frontier of that stream when there is
    /// one.
    fn gc_frontier(&self, victim: BlockId) -> usize {
        let streams = usize::from(self.config.placement.streams.max(1));
        let stream = self.space.frontier_of(victim) % streams;
        if self.config.placement.gc_frontier {
            streams + stream
        } else {
            stream
        }
    }

    /// The drive's configuration.
    pub fn config(&self) -> &DriveConfig {
        &self.config
    }

    /// Host-visible capacity in sectors.
    pub fn capacity_sectors(&self) -> u64 {
        self.config.logical_sectors()
    }

    fn unit_sectors(&self) -> u64 {
        u64::from(self.config.unit_bytes) / SECTOR_BYTES
    }

    /// Whether reads can return what was written (memory media).
    pub fn keeps_data(&self) -> bool {
        self.config.media == Media::Memory
    }

    /// Whether written bytes influence what is stored: false when
    /// compression and dedup are off and no data is kept, so callers may
    /// skip generating content.
    pub fn needs_content(&self) -> bool {
        let taped = self.tape.0.as_ref().is_some_and(Tape::replaying);
        (self.config.compression || self.config.dedup) && !taped || self.keeps_data()
    }

    /// Hands the drive an encoding tape: while it records, every unit
    /// written is taped as encoded; while it plays back, writes take their
    /// encoding from it instead of their bytes (see [`Tape`]: the caller
    /// vouches they carry the taped content). A run-time setting, not kept
    /// in images or clones. A drive that keeps the bytes refuses.
    pub fn put_tape(&mut self, tape: Tape) -> Result<(), DriveError> {
        if self.keeps_data() {
            return Err(DriveError::Tape("a drive that keeps the bytes takes no encoding tape".into()));
        }
        self.tape.0 = Some(tape);
        Ok(())
    }

    /// Takes the encoding tape back.
    pub fn take_tape(&mut self) -> Option<Tape> {
        self.tape.0.take()
    }

    fn check_range(&self, lba: Lba, sectors: u64) -> Result<(), DriveError> {
        let end = lba.0.checked_add(sectors);
        match end {
            Some(end) if end <= self.capacity_sectors() => Ok(()),
            _ => Err(DriveError::OutOfRange {
                start: lba.0,
                end: end.unwrap_or(u64::MAX),
                capacity: self.capacity_sectors(),
            }),
        }
    }

    fn check_transfer(&self, lba: Lba, len: usize) -> Result<u64, DriveError> {
        if len == 0 || !(len as u64).is_multiple_of(SECTOR_BYTES) {
            return Err(DriveError::Misaligned { len, sector: SECTOR_BYTES });
        }
        let sectors = len as u64 / SECTOR_BYTES;
        self.check_range(lba, sectors)?;
        Ok(sectors)
    }

    /// Whether `lpn` maps to stored data. `lpn` must be below the unit count.
    pub fn is_mapped(&self, lpn: Lpn) -> bool {
        self.map.get(lpn).is_some()
    }

    /// Stored bytes of the live chunks.
    pub fn live_bytes(&self) -> u64 {
        self.live_bytes
    }

    /// Chunks currently stored.
    pub fn live_chunks(&self) -> u64 {
        self.chunks.live() as u64
    }

    /// Completion time of the latest command.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Moves the clock on to `done` (when later), refusing a time past
    /// [`SimTime::LIMIT`], where its arithmetic may have saturated.
    fn advance(&mut self, done: SimTime) -> Result<(), DriveError> {
        if done > SimTime::LIMIT {
            return Err(DriveError::ClockOverflow { at_ns: done.0 });
        }
        self.now = self.now.max(done);
        Ok(())
    }

    /// Space holding no data yet (free blocks and open-block tails).
    pub fn unwritten_bytes(&self) -> u64 {
        self.space.unwritten_bytes()
    }
}
