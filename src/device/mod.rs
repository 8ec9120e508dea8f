//! The drive: composition root of the model. Owns the NAND array, the
//! physical space, the chunk store, the map and the counters, and runs
//! every host command through them.
//!
//! Write: validate -> split into units (read-modify-write partial ones) ->
//! compress + fingerprint in parallel -> in order: dedup lookup (a hit
//! costs no NAND program), else foreground GC if space is short, then pack
//! the stored bytes into an open block -> map the unit -> drop the old
//! chunk's reference; at zero its bytes turn invalid in their block.
//! TRIM unmaps whole units the same way. GC moves live chunks and updates
//! the chunk store only, never the map.

pub mod resume;

use serde::{Deserialize, Serialize};

use crate::config::{DriveConfig, GcPolicy, Media};
use crate::datapath::chunk_bytes::ChunkBytes;
use crate::datapath::chunks::{ChunkStore, Extent};
use crate::datapath::pipeline::{self, EncodedBatch, Encoder};
use crate::error::{ConfigError, DriveError};
use crate::firmware::DSM_MAX_SECTORS;
use crate::ftl::map::L2pMap;
use crate::ftl::map_cache::MapCache;
use crate::ftl::space::{BlockState, Space};
use crate::ftl::victim;
use crate::host::HostQueue;
use crate::image::{json_section, ImageError, ImageReader, ImageSummary, ImageWriter};
use crate::nand::NandArray;
use crate::nand::NandOp;
use crate::timing::{Timeline, Work};
use crate::units::{BlockId, ChunkId, DieId, Lba, Lpn, SimTime, SECTOR_BYTES};

/// Limits the page reads one command has in flight.
struct ReadWindow {
    limit: Option<usize>,
    in_flight: std::collections::BinaryHeap<std::cmp::Reverse<SimTime>>,
}

impl ReadWindow {
    fn new(limit: Option<u32>) -> Self {
        ReadWindow { limit: limit.map(|l| l as usize), in_flight: std::collections::BinaryHeap::new() }
    }

    /// When a page read that is ready at `ready` may be issued.
    fn admit(&mut self, ready: SimTime) -> SimTime {
        match self.limit {
            Some(limit) if self.in_flight.len() >= limit => {
                let std::cmp::Reverse(oldest) = self.in_flight.pop().expect("window is full");
                ready.max(oldest)
            }
            _ => ready,
        }
    }

    fn issued(&mut self, done: SimTime) {
        if self.limit.is_some() {
            self.in_flight.push(std::cmp::Reverse(done));
        }
    }
}

/// Units encoded together at most: enough to keep both pipeline threads
/// busy, few enough that the compressed output (about 4 KiB a unit) stays
/// in cache until it is placed...
const COMMIT_SLICE_UNITS: usize = 64;
/// ...and at least: a smaller batch is cut into this many slices, so its
/// in-order half still overlaps the encoding of the next slice...
const COMMIT_SLICES: usize = 8;
/// ...of at least this many units (rayon's hand-off costs more than a few
/// units save).
const COMMIT_SLICE_MIN_UNITS: usize = 8;

/// Host-side and data-path counters (NAND ones live in the array).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Counters {
    host_write_bytes: u64,
    host_read_bytes: u64,
    host_write_units: u64,
    host_trim_units: u64,
    dedup_hits: u64,
    new_chunks: u64,
    new_raw_bytes: u64,
    new_stored_bytes: u64,
    host_page_reads: u64,
    gc_relocated_bytes: u64,
    gc_relocated_chunks: u64,
    gc_page_reads: u64,
    gc_victims: u64,
}

/// A snapshot of everything the drive counts, lifetime totals unless said.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// Bytes the host asked to write.
    pub host_write_bytes: u64,
    /// Bytes the host read.
    pub host_read_bytes: u64,
    /// Units written (partial units count once).
    pub host_write_units: u64,
    /// Units unmapped by TRIM.
    pub host_trim_units: u64,
    /// Unit writes whose content was already stored (no NAND program).
    pub dedup_hits: u64,
    /// Unit writes that created a new chunk.
    pub new_chunks: u64,
    /// Raw bytes of the units that created new chunks.
    pub new_raw_bytes: u64,
    /// Stored (compressed) bytes of the new chunks.
    pub new_stored_bytes: u64,
    /// Pages programmed, host data and GC relocation together.
    pub nand_pages_programmed: u64,
    /// `nand_pages_programmed` x page size (SMART 233 style).
    pub nand_bytes_programmed: u64,
    /// Pages read, host and GC.
    pub nand_pages_read: u64,
    /// Pages read on behalf of host reads.
    pub host_page_reads: u64,
    /// Stored bytes GC moved.
    pub gc_relocated_bytes: u64,
    /// Chunks GC moved.
    pub gc_relocated_chunks: u64,
    /// Pages GC read from victims.
    pub gc_page_reads: u64,
    /// Blocks GC cleaned.
    pub gc_victims: u64,
    /// Block erases (GC and secure erase).
    pub erases: u64,
    /// Bytes of NAND left unused by block-tail and partial-page padding.
    pub padding_bytes: u64,
    /// NAND bytes programmed / host bytes written (0 before any write).
    pub waf: f64,
    /// Stored bytes / raw bytes of the chunks created (1 = no gain).
    pub compression_ratio: f64,
    /// New chunks / unit writes (1 = no duplicates).
    pub dedup_ratio: f64,
    /// Chunks currently stored.
    pub live_chunks: u64,
    /// Units currently mapped.
    pub mapped_units: u64,
    /// Stored bytes of the live chunks.
    pub live_bytes: u64,
    /// Erased blocks ready for writing.
    pub free_blocks: u32,
    /// Fewest P/E cycles of any block.
    pub pe_min: u32,
    /// Mean P/E cycles.
    pub pe_avg: f64,
    /// Most P/E cycles of any block.
    pub pe_max: u32,
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

/// The `DRIV` section: the drive's own scalars and small state.
type DriveSection = (Counters, u64, u64, SimTime, Vec<(u32, u32, u32)>, MapCache, Timeline);

/// Heap bytes of a drive's state by structure (see [`Drive::footprint`]).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Footprint {
    /// Logical mapping units of the drive.
    pub units: u64,
    /// The L2P map: one chunk id per unit.
    pub map: u64,
    /// Chunk records: extent and reference count.
    pub chunk_records: u64,
    /// Chunk fingerprints (dedup on).
    pub fingerprints: u64,
    /// Free chunk ids awaiting reuse.
    pub free_ids: u64,
    /// The dedup index: chunk ids in an open-addressing table.
    pub dedup_index: u64,
    /// Per-block state: FTL block records, free lists, NAND block records.
    pub block_state: u64,
    /// Per-block summaries of the chunk ids written (GC's reverse map).
    pub summaries: u64,
    /// The greedy victim index.
    pub greedy_index: u64,
    /// Stored chunk bytes and their slots (memory media only).
    pub chunk_data: u64,
}

impl Footprint {
    /// Every metadata structure (stored chunk bytes excluded).
    pub fn metadata(&self) -> u64 {
        self.map
            + self.chunk_records
            + self.fingerprints
            + self.free_ids
            + self.dedup_index
            + self.block_state
            + self.summaries
            + self.greedy_index
    }

    /// Metadata bytes per logical unit.
    pub fn per_unit(&self) -> f64 {
        self.metadata() as f64 / self.units.max(1) as f64
    }

    /// `(name, bytes)` of each part, largest structures first as listed.
    pub fn parts(&self) -> [(&'static str, u64); 9] {
        [
            ("map", self.map),
            ("chunk records", self.chunk_records),
            ("fingerprints", self.fingerprints),
            ("dedup index", self.dedup_index),
            ("block summaries", self.summaries),
            ("block state", self.block_state),
            ("greedy index", self.greedy_index),
            ("free chunk ids", self.free_ids),
            ("chunk data", self.chunk_data),
        ]
    }
}

/// Host bytes read and written by every drive of the process: a progress
/// meter that bars and logs turn into a rate (see [`host_bytes_moved`]).
static HOST_BYTES_MOVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Host bytes read and written so far by all drives of this process.
pub fn host_bytes_moved() -> u64 {
    HOST_BYTES_MOVED.load(std::sync::atomic::Ordering::Relaxed)
}

fn count_moved(bytes: u64) {
    HOST_BYTES_MOVED.fetch_add(bytes, std::sync::atomic::Ordering::Relaxed);
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
    gc_scratch: Vec<(ChunkId, Extent, u32)>,
    /// Scratch list of when each GC victim's data is read, per write.
    victim_scratch: Vec<SimTime>,
}

impl Drive {
    /// A secure-erased drive built from a validated `config`.
    pub fn new(config: DriveConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        // Live chunks never exceed the units (each has a reference), plus
        // the one placed before the chunk it replaces is freed.
        let chunks = config.logical_units() as usize + COMMIT_SLICE_UNITS;
        Ok(Drive {
            nand: NandArray::new(&config.geometry),
            space: Space::new(&config.geometry),
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
            victim_scratch: Vec::new(),
            config,
        })
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

    fn keeps_data(&self) -> bool {
        self.config.media == Media::Memory
    }

    /// Whether written bytes influence what is stored: false when
    /// compression and dedup are off and no data is kept, so callers may
    /// skip generating content.
    pub fn needs_content(&self) -> bool {
        self.config.compression || self.config.dedup || self.keeps_data()
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
        if len == 0 || len as u64 % SECTOR_BYTES != 0 {
            return Err(DriveError::Misaligned { len, sector: SECTOR_BYTES });
        }
        let sectors = len as u64 / SECTOR_BYTES;
        self.check_range(lba, sectors)?;
        Ok(sectors)
    }

    /// Writes `data` (whole sectors) at `lba`, issued when the previous
    /// command completed.
    pub fn write(&mut self, lba: Lba, data: &[u8]) -> Result<(), DriveError> {
        self.write_batch(&[(lba, data)])
    }

    /// Writes requests one after another (queue depth 1), with the
    /// parallel pipeline of [`Drive::write_batch_on`].
    pub fn write_batch(&mut self, requests: &[(Lba, &[u8])]) -> Result<(), DriveError> {
        let mut queue = HostQueue::new(1, self.now);
        self.write_batch_on(requests, &mut queue)
    }

    /// Writes several requests issued through `queue`: the same state as
    /// writing them one by one in order, but units of the whole batch are
    /// compressed and hashed in parallel. Each request's completion time
    /// comes from the NAND work it caused (foreground GC included). All
    /// requests are validated before any is applied.
    pub fn write_batch_on(&mut self, requests: &[(Lba, &[u8])], queue: &mut HostQueue) -> Result<(), DriveError> {
        let us = self.unit_sectors();
        let mut written_before: Vec<u64> = Vec::new();
        for (lba, data) in requests {
            let sectors = self.check_transfer(*lba, data.len())?;
            if !self.keeps_data() {
                // A partial unit needs its old bytes unless it was never written.
                let (first, end) = (lba.0, lba.0 + sectors);
                for lpn in first / us..end.div_ceil(us) {
                    let whole = lpn * us >= first && (lpn + 1) * us <= end;
                    if !whole && (self.map.get(Lpn(lpn)).is_some() || written_before.contains(&lpn)) {
                        return Err(DriveError::NoData { what: "a write of part of a written unit" });
                    }
                }
                if requests.len() > 1 {
                    written_before.extend(first / us..end.div_ceil(us));
                }
            }
        }
        self.start_journal();
        let unit = self.config.unit_bytes as usize;
        let mut pending: Vec<(usize, Lpn, &[u8])> = Vec::new();
        count_moved(requests.iter().map(|(_, d)| d.len() as u64).sum());
        for (r, (lba, data)) in requests.iter().enumerate() {
            self.counters.host_write_bytes += data.len() as u64;
            let (first, end) = (lba.0, lba.0 + data.len() as u64 / SECTOR_BYTES);
            for lpn in first / us..end.div_ceil(us) {
                let (ustart, uend) = (lpn * us, (lpn + 1) * us);
                if ustart >= first && uend <= end {
                    let off = ((ustart - first) * SECTOR_BYTES) as usize;
                    pending.push((r, Lpn(lpn), &data[off..off + unit]));
                } else {
                    // Read-modify-write: earlier units of the batch must land first.
                    self.commit(&pending)?;
                    pending.clear();
                    self.begin_request(r);
                    let mut merged = self.read_unit(Lpn(lpn))?;
                    let lo = ustart.max(first);
                    let hi = uend.min(end);
                    let dst = ((lo - ustart) * SECTOR_BYTES) as usize;
                    let src = ((lo - first) * SECTOR_BYTES) as usize;
                    let n = ((hi - lo) * SECTOR_BYTES) as usize;
                    merged[dst..dst + n].copy_from_slice(&data[src..src + n]);
                    self.commit(&[(r, Lpn(lpn), &merged)])?;
                }
            }
        }
        self.commit(&pending)?;
        let ops: Vec<NandOp> = self.nand.drain_journal().collect();
        self.marks.push(ops.len());
        for (r, (_, data)) in requests.iter().enumerate() {
            let submitted = queue.submit_time();
            let done = self.time_write(data.len() as u64, &ops[self.marks[r]..self.marks[r + 1]], submitted);
            queue.complete(submitted, done);
            self.now = self.now.max(done);
        }
        Ok(())
    }

    /// Starts a command batch: the journal is empty and no request marked.
    fn start_journal(&mut self) {
        debug_assert!(self.nand.journal().is_empty(), "NAND work left untimed");
        self.marks.clear();
    }

    /// Notes that request `r`'s NAND work starts here in the journal.
    fn begin_request(&mut self, r: usize) {
        let at = self.nand.journal().len();
        while self.marks.len() <= r {
            self.marks.push(at);
        }
    }

    /// Completion time of a write of `bytes` issued at `submitted` whose
    /// NAND work was `ops`: firmware, host transfer, compression and hash,
    /// then its own page programs (and read-modify-write reads). Garbage
    /// collection the write triggered occupies dies and channels, so it
    /// delays whatever needs those dies next, but the write itself completes
    /// once its data is handed to the dies: the drive keeps free blocks in
    /// reserve, so it never waits for an erase.
    ///
    /// GC is booked the way a die scheduler with read priority runs it:
    /// every victim's page reads first, then each victim's relocation
    /// programs once its own reads are in, then its erase. Victims on
    /// different dies proceed in parallel rather than one after another.
    fn time_write(&mut self, bytes: u64, ops: &[NandOp], submitted: SimTime) -> SimTime {
        let throttle = self.life_curve_throttle(submitted);
        let t = &mut self.timeline;
        let accepted = t.firmware(submitted, 0);
        let mut received = t.link(bytes, accepted.max(t.link_floor(submitted)));
        if let Some(rate) = throttle {
            received = t.throttle(bytes, rate, received);
        }
        let ready = if self.config.compression || self.config.dedup { t.engine(bytes, received) } else { received };
        let (mut done, mut host_data) = (ready, ready);
        // Pass 1: host work, and when each victim's live pages are read.
        let mut victim_data = std::mem::take(&mut self.victim_scratch);
        victim_data.clear();
        let mut gc_data = ready;
        for op in ops {
            match *op {
                NandOp::Read(DieId(d)) => {
                    host_data = host_data.max(t.page_read(d, ready, Work::Host));
                    done = done.max(host_data);
                }
                NandOp::Program(DieId(d)) => done = done.max(t.page_program(d, host_data, Work::Host)),
                NandOp::GcRead(DieId(d)) => gc_data = gc_data.max(t.page_read(d, ready, Work::Background)),
                NandOp::Erase(_) => victim_data.push(std::mem::replace(&mut gc_data, ready)),
                NandOp::GcProgram(_) => {}
            }
        }
        // Pass 2: each victim's relocation programs, then its erase.
        let mut victims = victim_data.iter().copied();
        let mut data = victims.next().unwrap_or(gc_data);
        let mut moved = data;
        for op in ops {
            match *op {
                NandOp::GcProgram(DieId(d)) => moved = moved.max(t.page_program(d, data, Work::Background)),
                NandOp::Erase(DieId(d)) => {
                    t.erase(d, moved);
                    data = victims.next().unwrap_or(gc_data);
                    moved = data;
                }
                NandOp::Read(_) | NandOp::Program(_) | NandOp::GcRead(_) => {}
            }
        }
        self.victim_scratch = victim_data;
        done
    }

    /// The throttled write rate when the NAND has been written past the
    /// firmware's life curve at time `at` (see [`crate::firmware`]).
    fn life_curve_throttle(&self, at: SimTime) -> Option<u64> {
        let curve = self.config.firmware.life_curve.as_ref()?;
        let physical = self.config.geometry.physical_bytes() as f64;
        let rated = f64::from(self.config.geometry.pe_cycles) * physical * at.secs() / curve.lifetime_secs;
        let allowance = curve.burst_pe * physical + rated;
        let written = self.nand_bytes_programmed() as f64;
        (written > allowance).then_some(curve.throttled_bytes_per_sec)
    }

    /// NAND bytes programmed so far (SMART 233): what [`Drive::stats`]
    /// reports, without its scans of the map and blocks.
    pub fn nand_bytes_programmed(&self) -> u64 {
        self.nand.counters().pages_programmed * u64::from(self.config.geometry.page_bytes)
    }

    /// Host bytes written so far (SMART 241), as in [`Drive::stats`].
    pub fn host_write_bytes(&self) -> u64 {
        self.counters.host_write_bytes
    }

    /// Schedules journaled NAND work (secure erase, idle GC) from `at`,
    /// returning when it is all done.
    fn time_background(&mut self, at: SimTime) -> SimTime {
        let mut done = at;
        let mut data_ready = at;
        let ops: Vec<NandOp> = self.nand.drain_journal().collect();
        for op in ops {
            let t = &mut self.timeline;
            match op {
                NandOp::Read(DieId(d)) | NandOp::GcRead(DieId(d)) => {
                    let r = t.page_read(d, at, Work::Background);
                    data_ready = data_ready.max(r);
                    done = done.max(r);
                }
                NandOp::Program(DieId(d)) | NandOp::GcProgram(DieId(d)) => {
                    done = done.max(t.page_program(d, data_ready, Work::Background) + t.params().program_ns)
                }
                NandOp::Erase(DieId(d)) => done = done.max(t.erase(d, data_ready)),
            }
        }
        done
    }

    /// Stores whole units in order: encode in parallel, then dedup, place
    /// and map one by one.
    ///
    /// With content to encode, slice `k + 1` is encoded on the pool while
    /// slice `k` is applied, so the in-order half overlaps the parallel one.
    /// Called from outside the pool, the whole commit moves onto a pool
    /// thread first: one hand-off instead of one (a sleep and a wake-up)
    /// per slice.
    fn commit(&mut self, units: &[(usize, Lpn, &[u8])]) -> Result<(), DriveError> {
        if units.is_empty() {
            return Ok(());
        }
        if self.encoder.has_work() && units.len() > COMMIT_SLICE_MIN_UNITS && rayon::current_thread_index().is_none() {
            return rayon::scope(|_| self.commit_slices(units));
        }
        self.commit_slices(units)
    }

    /// [`Drive::commit`]'s body, on whatever thread calls it.
    fn commit_slices(&mut self, units: &[(usize, Lpn, &[u8])]) -> Result<(), DriveError> {
        let encoder = self.encoder;
        let overlap = encoder.has_work();
        let (mut cur, mut next) = (std::mem::take(&mut self.batch), std::mem::take(&mut self.next_batch));
        let slice_units = units.len().div_ceil(COMMIT_SLICES).clamp(COMMIT_SLICE_MIN_UNITS, COMMIT_SLICE_UNITS);
        let slices: Vec<&[(usize, Lpn, &[u8])]> = units.chunks(slice_units).collect();
        fn data<'a>(slice: &[(usize, Lpn, &'a [u8])]) -> Vec<&'a [u8]> {
            slice.iter().map(|(_, _, d)| *d).collect()
        }
        encoder.encode(&data(slices[0]), &mut cur);
        let mut result = Ok(());
        for (k, slice) in slices.iter().enumerate() {
            result = match slices.get(k + 1) {
                Some(following) if overlap => {
                    let input = data(following);
                    rayon::join(|| self.apply(slice, &cur), || encoder.encode(&input, &mut next)).0
                }
                Some(following) => {
                    let r = self.apply(slice, &cur);
                    encoder.encode(&data(following), &mut next);
                    r
                }
                None => self.apply(slice, &cur),
            };
            if result.is_err() {
                break;
            }
            std::mem::swap(&mut cur, &mut next);
        }
        self.batch = cur;
        self.next_batch = next;
        result
    }

    /// The in-order half of a commit: dedup, place, map.
    fn apply(&mut self, units: &[(usize, Lpn, &[u8])], batch: &EncodedBatch) -> Result<(), DriveError> {
        // Touch each unit's map entry, then its old chunk (record,
        // fingerprint, dedup slot) and its new content's dedup slot, then the
        // old chunk's block state: the loads of one pass are independent
        // across units, so their cache misses overlap here instead of
        // stalling one after another in the loop below, and each pass finds
        // the previous one's data in cache.
        let old = |lpn: &Lpn| self.map.get(*lpn).map(|id| self.chunks.get(id));
        let entries = units.iter().map(|(_, lpn, _)| self.map.get(*lpn).map_or(0, ChunkId::index) as u32);
        let chunks = units
            .iter()
            .zip(batch.units())
            .map(|((_, lpn, _), enc)| self.chunks.warm(self.map.get(*lpn), &enc.fingerprint));
        let blocks = units.iter().map(|(_, lpn, _)| old(lpn).map_or(0, |c| self.space.warm(c.extent.block)));
        let warm = [
            entries.fold(0u32, u32::wrapping_add),
            chunks.fold(0, u32::wrapping_add),
            blocks.fold(0, u32::wrapping_add),
        ];
        std::hint::black_box(warm);
        for (i, (r, lpn, data)) in units.iter().enumerate() {
            self.begin_request(*r);
            let enc = batch.units()[i];
            self.clock += 1;
            self.counters.host_write_units += 1;
            let id = match self.chunks.find(&enc.fingerprint) {
                Some(id) => {
                    self.chunks.incref(id);
                    self.counters.dedup_hits += 1;
                    id
                }
                None => {
                    self.foreground_gc()?;
                    let stored = self.keeps_data().then(|| batch.stored(i, data));
                    let id = self.place_new(enc.fingerprint, enc.len, stored)?;
                    self.counters.new_chunks += 1;
                    self.counters.new_raw_bytes += data.len() as u64;
                    self.counters.new_stored_bytes += u64::from(enc.len);
                    id
                }
            };
            if let Some(old) = self.map.set(*lpn, Some(id)) {
                self.release(old);
            }
        }
        Ok(())
    }

    fn place_new(
        &mut self,
        fp: crate::units::Fingerprint,
        len: u32,
        stored: Option<&[u8]>,
    ) -> Result<ChunkId, DriveError> {
        let placeholder = Extent { block: BlockId(0), offset: 0, len };
        let id = self.chunks.insert(fp, placeholder).ok_or(DriveError::ChunkTableFull(self.chunks.live()))?;
        match self.space.append(&mut self.nand, id, len, self.clock) {
            Ok(extent) => {
                self.chunks.relocate(id, extent);
                if let Some(bytes) = stored {
                    self.bytes.put(id, bytes);
                }
                self.live_bytes += u64::from(len);
                Ok(id)
            }
            Err(e) => {
                // Never placed: forget it without touching any block.
                self.chunks.decref(id);
                Err(e)
            }
        }
    }

    /// Drops one reference to `chunk`; at zero its bytes turn invalid.
    fn release(&mut self, chunk: ChunkId) {
        if let Some(extent) = self.chunks.decref(chunk) {
            self.bytes.remove(chunk);
            self.space.invalidate(extent);
            self.live_bytes -= u64::from(extent.len);
        }
    }

    /// The current content of one unit (zeros when unmapped).
    fn read_unit(&mut self, lpn: Lpn) -> Result<Vec<u8>, DriveError> {
        let mut out = vec![0u8; self.config.unit_bytes as usize];
        if let Some(id) = self.map.get(lpn) {
            let mut pages = Vec::new();
            self.fetch(id, &mut out, &mut pages)?;
            for &(block, _) in &pages {
                self.nand.journal_read(BlockId(block));
            }
            self.counters.host_page_reads += pages.len() as u64;
        }
        Ok(out)
    }

    /// Whether the read buffer still holds `page` of `block` as last sensed
    /// (an erase since then invalidates it).
    fn read_cache_hit(&self, block: u32, page: u32) -> bool {
        let pe = self.nand.pe_cycles(BlockId(block));
        self.read_cache.iter().any(|&(b, p, e)| b == block && p == page && e == pe)
    }

    /// Keeps `page` of `block` in the read buffer, evicting the oldest.
    fn remember_page(&mut self, block: u32, page: u32) {
        let capacity = self.config.timing.read_cache_pages as usize;
        if capacity == 0 {
            return;
        }
        let pe = self.nand.pe_cycles(BlockId(block));
        self.read_cache.retain(|&(b, p, _)| !(b == block && p == page));
        if self.read_cache.len() >= capacity {
            self.read_cache.pop_front();
        }
        self.read_cache.push_back((block, page, pe));
    }

    /// The die holding map page `page` (map pages are striped over dies).
    fn map_page_die(&self, page: u64) -> DieId {
        DieId((page % u64::from(self.config.geometry.dies())) as u32)
    }

    /// Decodes chunk `id` into `out`, noting the NAND pages it needed.
    fn fetch(&self, id: ChunkId, out: &mut [u8], pages: &mut Vec<(u32, u32)>) -> Result<(), DriveError> {
        let extent = self.chunks.get(id).extent;
        self.space.nand_pages(&self.nand, extent, pages);
        if !self.keeps_data() {
            return Err(DriveError::NoData { what: "a read of a written unit" });
        }
        let corrupt = |reason: String| DriveError::Corrupt { chunk: id.index(), reason };
        let stored = self.bytes.get(id).ok_or_else(|| corrupt("no stored bytes".into()))?;
        if stored.len() != extent.len as usize {
            return Err(corrupt(format!("{} stored bytes for an extent of {}", stored.len(), extent.len)));
        }
        pipeline::decode(stored, out).map_err(corrupt)
    }

    /// Whether `next` continues `prev`'s placement: its bytes follow in the
    /// same block, or it opens the next die of the write stripe. A unit
    /// that does is read as part of the same piece.
    fn continues(&self, prev: Extent, next: Extent) -> bool {
        let dies = self.config.geometry.dies();
        let (a, b) = (self.nand.die_of(prev.block).0, self.nand.die_of(next.block).0);
        (prev.block == next.block && next.offset == prev.offset + prev.len) || b == (a + 1) % dies
    }

    /// Bytes of `extent` that sit in page `page` of its block.
    fn bytes_in_page(&self, extent: Extent, page: u32) -> u64 {
        let pb = self.config.geometry.page_bytes;
        let (lo, hi) = (page * pb, (page + 1) * pb);
        u64::from((extent.offset + extent.len).min(hi) - extent.offset.max(lo))
    }

    /// Reads `sectors` sectors from `lba`, issued when the previous
    /// command completed. Unmapped units read as zeros.
    pub fn read(&mut self, lba: Lba, sectors: u64) -> Result<Vec<u8>, DriveError> {
        let mut queue = HostQueue::new(1, self.now);
        let data = self.read_on(lba, sectors, &mut queue, true)?;
        Ok(data.unwrap_or_default())
    }

    /// Reads `sectors` sectors from `lba`, issued through `queue`. With
    /// `want_data` the bytes are returned (a drive without stored data then
    /// refuses reads of written units); without it only the time is
    /// modelled, on any media.
    ///
    /// Cost: a map-cache miss reads the unit's map page first; each distinct
    /// NAND page the request's units sit in is sensed once (units packed in
    /// a page share the read; unmapped units and units still in the page
    /// buffer cost none) and each unit's bytes are clocked out of the page
    /// register, at most `read_window` page reads in flight; each unit that
    /// does not continue the previous one's placement costs `read_piece_ns`
    /// of firmware set-up first (see [`DriveConfig::read_piece_ns`]); each
    /// unit is decompressed and crosses the host link as soon as its data
    /// is in.
    pub fn read_on(
        &mut self,
        lba: Lba,
        sectors: u64,
        queue: &mut HostQueue,
        want_data: bool,
    ) -> Result<Option<Vec<u8>>, DriveError> {
        if sectors == 0 {
            return Err(DriveError::Misaligned { len: 0, sector: SECTOR_BYTES });
        }
        self.check_range(lba, sectors)?;
        let bytes = sectors * SECTOR_BYTES;
        let us = self.unit_sectors();
        let unit = self.config.unit_bytes as usize;
        let (first, end) = (lba.0, lba.0 + sectors);
        let mut out = Vec::new();
        if want_data {
            if !self.keeps_data() && (first / us..end.div_ceil(us)).any(|l| self.map.get(Lpn(l)).is_some()) {
                return Err(DriveError::NoData { what: "a read of a written unit" });
            }
            let len = usize::try_from(bytes).map_err(|_| DriveError::OutOfRange {
                start: lba.0,
                end,
                capacity: self.capacity_sectors(),
            })?;
            out = vec![0u8; len];
        }
        let submitted = queue.submit_time();
        let accepted = self.timeline.firmware(submitted, 0);
        let floor = self.timeline.link_floor(submitted);
        let mut page_done: std::collections::HashMap<(u32, u32), SimTime> = std::collections::HashMap::new();
        let mut window = ReadWindow::new(self.config.read_window());
        let mut pages = Vec::new();
        let mut unit_buf = vec![0u8; unit];
        let mut done = accepted;
        let mut nand_reads = 0u64;
        let piece_ns = self.config.read_piece_ns();
        let (mut previous, mut set_up): (Option<Extent>, SimTime) = (None, accepted);
        for lpn in first / us..end.div_ceil(us) {
            let (ustart, uend) = (lpn * us, (lpn + 1) * us);
            let lo = ustart.max(first);
            let hi = uend.min(end);
            let covered = (hi - lo) * SECTOR_BYTES;
            let Some(id) = self.map.get(Lpn(lpn)) else {
                done = self.timeline.link(covered, accepted.max(floor));
                continue;
            };
            let extent = self.chunks.get(id).extent;
            if previous.is_some_and(|p| !self.continues(p, extent)) && piece_ns > 0 {
                set_up = self.timeline.firmware_work(set_up, piece_ns);
            }
            previous = Some(extent);
            let mut ready = set_up;
            if let Some(map_page) = self.map_cache.access(lpn) {
                let die = self.map_page_die(map_page).0;
                let start = window.admit(ready);
                ready = self.timeline.page_read(die, start, Work::Host);
                window.issued(ready);
            }
            pages.clear();
            self.space.nand_pages(&self.nand, extent, &mut pages);
            let mut data_in = ready;
            for &(block, page) in &pages {
                let die = self.nand.die_of(BlockId(block)).0;
                let bytes = self.bytes_in_page(extent, page);
                let at = match page_done.get(&(block, page)) {
                    Some(&t) => self.timeline.register_out(die, t.max(ready), bytes, Work::Host),
                    None if self.read_cache_hit(block, page) => {
                        page_done.insert((block, page), ready);
                        ready
                    }
                    None => {
                        let start = window.admit(ready);
                        let t = self.timeline.page_read_part(die, start, bytes, Work::Host);
                        window.issued(t);
                        page_done.insert((block, page), t);
                        nand_reads += 1;
                        t
                    }
                };
                data_in = data_in.max(at);
            }
            if want_data {
                let dst = ((lo - first) * SECTOR_BYTES) as usize;
                let n = covered as usize;
                if lo == ustart && hi == uend {
                    self.fetch(id, &mut out[dst..dst + n], &mut Vec::new())?;
                } else {
                    self.fetch(id, &mut unit_buf, &mut Vec::new())?;
                    let src = ((lo - ustart) * SECTOR_BYTES) as usize;
                    out[dst..dst + n].copy_from_slice(&unit_buf[src..src + n]);
                }
            }
            let decoded = if self.config.compression { self.timeline.engine(unit as u64, data_in) } else { data_in };
            done = self.timeline.link(covered, decoded.max(floor));
        }
        self.nand.count_reads(nand_reads);
        self.counters.host_page_reads += nand_reads;
        self.counters.host_read_bytes += bytes;
        count_moved(bytes);
        let mut read: Vec<(u32, u32)> = page_done.keys().copied().collect();
        read.sort_unstable();
        for (block, page) in read {
            self.remember_page(block, page);
        }
        queue.complete(submitted, done);
        self.now = self.now.max(done);
        Ok(want_data.then_some(out))
    }

    /// TRIMs `(lba, sectors)` ranges, issued when the previous command
    /// completed. See [`Drive::trim_on`].
    pub fn trim(&mut self, ranges: &[(Lba, u64)]) -> Result<u64, DriveError> {
        let mut queue = HostQueue::new(1, self.now);
        self.trim_on(ranges, &mut queue)
    }

    /// TRIMs `(lba, sectors)` ranges as one command issued through `queue`.
    /// Every range is checked before any is applied. Only units the
    /// command's ranges cover entirely (together) are unmapped: a unit
    /// partly covered keeps its data (TRIM is advisory, and zeroing part of
    /// a unit would cost a read-modify-write program).
    /// No NAND work: the firmware spends `trim_range_ns` per range.
    /// Returns the units unmapped.
    pub fn trim_on(&mut self, ranges: &[(Lba, u64)], queue: &mut HostQueue) -> Result<u64, DriveError> {
        for (lba, sectors) in ranges {
            self.check_range(*lba, *sectors)?;
        }
        let us = self.unit_sectors();
        let mut unmapped = 0;
        // Ranges reach the firmware as ATA DSM entries of at most 65535
        // sectors; the firmware profile decides how much of each it unmaps.
        // A unit is unmapped when the command's pieces together cover it.
        let mut pieces: Vec<(u64, u64)> = Vec::new();
        for &(lba, sectors) in ranges {
            for i in 0..sectors.div_ceil(DSM_MAX_SECTORS) {
                let start = lba.0 + i * DSM_MAX_SECTORS;
                let len = self.config.firmware.trim_entry_sectors((sectors - i * DSM_MAX_SECTORS).min(DSM_MAX_SECTORS));
                if len > 0 {
                    pieces.push((start, start + len));
                }
            }
        }
        pieces.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (start, end) in pieces {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        for (start, end) in merged {
            let sectors = end - start;
            let (first, end) = (start.div_ceil(us), (start + sectors) / us);
            for lpn in first..end.max(first) {
                if let Some(old) = self.map.set(Lpn(lpn), None) {
                    self.release(old);
                    unmapped += 1;
                }
            }
        }
        self.counters.host_trim_units += unmapped;
        let submitted = queue.submit_time();
        let extra = self.config.timing.trim_range_ns.saturating_mul(ranges.len() as u64);
        let done = self.timeline.firmware(submitted, extra).max(self.timeline.link_floor(submitted));
        queue.complete(submitted, done);
        self.now = self.now.max(done);
        Ok(unmapped)
    }

    /// Runs GC while free blocks are under the low watermark. Fails rather
    /// than spin when collections stop gaining space.
    fn foreground_gc(&mut self) -> Result<(), DriveError> {
        let mut fruitless = 0;
        while self.space.free_blocks() < self.config.gc.low_watermark {
            let before = self.space.unwritten_bytes();
            if !self.collect_one()? {
                return Err(DriveError::NoSpace(format!(
                    "{} free blocks and no block with reclaimable space",
                    self.space.free_blocks()
                )));
            }
            fruitless = if self.space.unwritten_bytes() > before { 0 } else { fruitless + 1 };
            if fruitless > self.config.geometry.total_blocks() {
                return Err(DriveError::NoSpace("garbage collection no longer gains space".into()));
            }
        }
        Ok(())
    }

    /// Idle-time GC with unlimited idle time from the latest completion.
    /// See [`Drive::idle`].
    /// Unlike [`Drive::idle`] it leaves emptied blocks past the watermark
    /// unerased.
    pub fn idle_gc(&mut self) -> Result<u32, DriveError> {
        self.collect_idle(self.now, SimTime(u64::MAX))
    }

    /// The host is idle from `from` to `until`: queued background work
    /// drains, and GC cleans blocks while the dies are free before `until`,
    /// until the high watermark of free blocks is reached, nothing is
    /// reclaimable, or a collection gains no space (moving a block's live
    /// data would only pad another). Then blocks left with no live data
    /// are erased ahead of need while the idle time lasts
    /// ([`Drive::erase_emptied`]). The next untimed command is issued at
    /// `until` (when finite). Returns the blocks GC cleaned.
    pub fn idle(&mut self, from: SimTime, until: SimTime) -> Result<u32, DriveError> {
        if until.0 != u64::MAX {
            self.now = self.now.max(until);
        }
        let cleaned = self.collect_idle(from, until)?;
        self.erase_emptied(from, until);
        Ok(cleaned)
    }

    /// Idle GC from `from` to `until`, up to the high watermark (see
    /// [`Drive::idle`]). Returns the blocks cleaned.
    fn collect_idle(&mut self, from: SimTime, until: SimTime) -> Result<u32, DriveError> {
        let mut cleaned = 0;
        let mut at = from;
        while self.space.free_blocks() < self.config.gc.high_watermark && at < until {
            let before = self.space.unwritten_bytes();
            let collected = self.collect_one()?;
            at = self.time_background(at);
            if !collected {
                break;
            }
            cleaned += 1;
            if self.space.unwritten_bytes() <= before {
                break;
            }
        }
        Ok(cleaned)
    }

    /// Idle time past the high watermark: blocks with no live byte left
    /// (overwritten or trimmed away) are erased ahead of need, as drives
    /// do in the background, so later writes find them ready instead of
    /// waiting for erases on the dies they program. Moving no data, it
    /// costs no NAND writes and only the erase each block needs anyway
    /// before reuse. Erases run on each block's die from `from`, and only
    /// those that end by `until`; dies work in parallel. Returns the
    /// blocks erased.
    fn erase_emptied(&mut self, from: SimTime, until: SimTime) -> u32 {
        let erase_ns = self.config.timing.erase_ns;
        let mut erased = 0;
        for block in self.space.emptied_blocks() {
            let die = self.nand.die_of(block).0;
            if self.timeline.die_idle_at(die).max(from) + erase_ns > until {
                continue;
            }
            let summary = self.space.take_summary(block);
            self.space.erase(&mut self.nand, block, summary);
            self.time_background(from);
            erased += 1;
        }
        erased
    }

    /// Cleans one victim chosen by the configured policy. False when no
    /// sealed block has reclaimable space.
    fn collect_one(&mut self) -> Result<bool, DriveError> {
        let chosen = match self.config.gc.policy {
            GcPolicy::Greedy => self.space.greedy_victim(),
            policy => victim::choose(policy, self.space.sealed_views(self.clock)),
        };
        let Some(victim) = chosen else {
            return Ok(false);
        };
        self.nand.set_collecting(true);
        let moved = self.relocate_all(victim);
        self.nand.set_collecting(false);
        moved?;
        Ok(true)
    }

    /// Moves every live chunk out of `victim` and erases it. The journal
    /// gets the victim's reads of live pages first, then the programs of
    /// their chunks elsewhere, then the erase.
    fn relocate_all(&mut self, victim: BlockId) -> Result<(), DriveError> {
        let summary = self.space.take_summary(victim);
        // Gather every entry's record, then keep the live ones.
        let mut live = std::mem::take(&mut self.gc_scratch);
        live.clear();
        self.chunks.gather(&summary, &mut live);
        live.retain(|&(_, extent, refs)| refs > 0 && extent.block == victim);
        // An id freed and reused within the block appears twice in its
        // summary; both entries now name the same chunk. In offset order
        // the copies are adjacent, and the pages come in order.
        live.sort_unstable_by_key(|&(_, extent, _)| extent.offset);
        live.dedup_by_key(|&mut (id, _, _)| id);
        let mut pages = Vec::new();
        self.space.nand_pages_in_order(&self.nand, live.iter().map(|&(_, extent, _)| extent), &mut pages);
        for &(block, _) in &pages {
            self.nand.journal_read(BlockId(block));
        }
        self.counters.gc_page_reads += pages.len() as u64;
        // A chunk's bytes stay with the chunk (memory media): GC moves
        // only its extent.
        let mut result = Ok(());
        for &(id, old, _) in &live {
            self.clock += 1;
            let new = match self.space.append(&mut self.nand, id, old.len, self.clock) {
                Ok(new) => new,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            self.chunks.relocate(id, new);
            self.space.invalidate(old);
            self.counters.gc_relocated_bytes += u64::from(old.len);
            self.counters.gc_relocated_chunks += 1;
        }
        self.gc_scratch = live;
        if let Err(e) = result {
            // The victim keeps what was not moved, and stays a candidate.
            self.space.untake_summary(victim, summary);
            return Err(e);
        }
        self.counters.gc_victims += 1;
        self.space.erase(&mut self.nand, victim, summary);
        Ok(())
    }

    /// ATA secure erase: every written block erased, every mapping and
    /// chunk gone. Lifetime counters (host, NAND, P/E) keep counting.
    pub fn secure_erase(&mut self) {
        self.space.secure_erase(&mut self.nand);
        self.now = self.time_background(self.now);
        self.map_cache.clear();
        self.chunks.clear();
        self.bytes.clear();
        self.map.clear();
        self.live_bytes = 0;
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

    /// Space holding no data yet (free blocks and open-block tails).
    pub fn unwritten_bytes(&self) -> u64 {
        self.space.unwritten_bytes()
    }

    /// Heap bytes the model's state holds, by structure (allocated
    /// capacity, except the chunk tables reserved up front, which count
    /// the entries written: see [`ChunkStore::heap_bytes`]).
    pub fn footprint(&self) -> Footprint {
        let (records, fingerprints, free_ids, dedup_index) = self.chunks.heap_bytes();
        let (blocks, summaries, greedy) = self.space.heap_bytes();
        let nand_blocks = self.nand.heap_bytes();
        Footprint {
            units: self.config.logical_units(),
            map: self.map.heap_bytes(),
            chunk_records: records,
            fingerprints,
            free_ids,
            dedup_index,
            block_state: blocks + nand_blocks,
            summaries,
            greedy_index: greedy,
            chunk_data: self.bytes.heap_bytes(),
        }
    }

    /// A snapshot of every counter.
    pub fn stats(&self) -> Stats {
        let c = &self.counters;
        let n = self.nand.counters();
        let page_bytes = u64::from(self.config.geometry.page_bytes);
        let (mut pe_min, mut pe_max, mut pe_sum, mut blocks) = (u32::MAX, 0u32, 0u64, 0u64);
        for pe in self.nand.pe_counts() {
            pe_min = pe_min.min(pe);
            pe_max = pe_max.max(pe);
            pe_sum += u64::from(pe);
            blocks += 1;
        }
        Stats {
            host_write_bytes: c.host_write_bytes,
            host_read_bytes: c.host_read_bytes,
            host_write_units: c.host_write_units,
            host_trim_units: c.host_trim_units,
            dedup_hits: c.dedup_hits,
            new_chunks: c.new_chunks,
            new_raw_bytes: c.new_raw_bytes,
            new_stored_bytes: c.new_stored_bytes,
            nand_pages_programmed: n.pages_programmed,
            nand_bytes_programmed: n.pages_programmed * page_bytes,
            nand_pages_read: n.pages_read,
            host_page_reads: c.host_page_reads,
            gc_relocated_bytes: c.gc_relocated_bytes,
            gc_relocated_chunks: c.gc_relocated_chunks,
            gc_page_reads: c.gc_page_reads,
            gc_victims: c.gc_victims,
            erases: n.erases,
            padding_bytes: self.space.counters().padding_bytes,
            waf: ratio(n.pages_programmed * page_bytes, c.host_write_bytes),
            compression_ratio: ratio(c.new_stored_bytes, c.new_raw_bytes),
            dedup_ratio: ratio(c.new_chunks, c.host_write_units),
            live_chunks: self.chunks.live() as u64,
            mapped_units: self.map.mapped(),
            live_bytes: self.live_bytes,
            free_blocks: self.space.free_blocks(),
            pe_min: if blocks == 0 { 0 } else { pe_min },
            pe_avg: ratio(pe_sum, blocks),
            pe_max,
        }
    }

    /// Saves the whole drive to an image at `path`, replacing any file
    /// there atomically (see [`crate::image`]).
    pub fn save(&self, path: &std::path::Path) -> Result<(), ImageError> {
        let summary =
            ImageSummary { written_by: env!("CARGO_PKG_VERSION").into(), now_ns: self.now.0, stats: self.stats() };
        let mut w = ImageWriter::create(path)?;
        w.section(*b"CONF", |o| json_section(o, &self.config))?;
        w.section(*b"STAT", |o| json_section(o, &summary))?;
        w.section(*b"NAND", |o| self.nand.write_image(o))?;
        w.bincode_section(*b"SPAC", &self.space)?;
        w.section(*b"CHNK", |o| {
            self.chunks.write_image(o)?;
            self.bytes.write_image(o)
        })?;
        w.section(*b"MAP ", |o| self.map.write_image(o))?;
        let read_cache: Vec<(u32, u32, u32)> = self.read_cache.iter().copied().collect();
        w.bincode_section(
            *b"DRIV",
            &(&self.counters, self.clock, self.live_bytes, self.now, read_cache, &self.map_cache, &self.timeline),
        )?;
        w.commit()
    }

    /// Loads a drive saved by [`Drive::save`]. Every section's checksum is
    /// verified and the state is checked ([`Drive::check_invariants`])
    /// before it is returned: a damaged image is an error, never a panic.
    pub fn load(path: &std::path::Path) -> Result<Drive, ImageError> {
        let mut r = ImageReader::open(path)?;
        let config: DriveConfig = r.json_section(*b"CONF")?;
        config.validate().map_err(|e| ImageError::Inconsistent(format!("config: {e}")))?;
        r.json_section::<ImageSummary>(*b"STAT")?;
        let geometry = config.geometry.clone();
        let nand = r.section(*b"NAND", |rd| NandArray::read_image(&geometry, rd))?;
        let space: Space = r.bincode_section(*b"SPAC")?;
        let unit = config.unit_bytes as usize;
        let (chunks, bytes) =
            r.section(*b"CHNK", |rd| Ok((ChunkStore::read_image(rd)?, ChunkBytes::read_image(rd, unit)?)))?;
        let map = r.section(*b"MAP ", L2pMap::read_image)?;
        let (counters, clock, live_bytes, now, read_cache, map_cache, timeline): DriveSection =
            r.bincode_section(*b"DRIV")?;
        r.finish()?;
        let mut drive = Drive::new(config).map_err(|e| ImageError::Inconsistent(format!("config: {e}")))?;
        let bad = |what: &str, e: String| ImageError::Inconsistent(format!("{what}: {e}"));
        let g = &drive.config.geometry;
        space.check_shape(g, chunks.records()).map_err(|e| bad("block space", e))?;
        chunks
            .check_shape(drive.config.dedup, drive.chunks.packing(), g.total_blocks(), g.block_bytes() as u32)
            .map_err(|e| bad("chunk table", e))?;
        if map.units() != drive.map.units() {
            return Err(bad("map", format!("{} units, the config has {}", map.units(), drive.map.units())));
        }
        if !timeline.same_shape(&drive.timeline) || !map_cache.same_shape(&drive.map_cache) {
            return Err(bad("drive state", "timing model or map cache does not match the config".into()));
        }
        drive.nand = nand;
        drive.space = space;
        drive.space.rebuild_index();
        drive.chunks = chunks;
        drive.bytes = bytes;
        drive.map = map;
        drive.counters = counters;
        drive.clock = clock;
        drive.live_bytes = live_bytes;
        drive.now = now;
        drive.read_cache = read_cache.into();
        drive.map_cache = map_cache;
        drive.timeline = timeline;
        drive.check_invariants().map_err(ImageError::Inconsistent)?;
        Ok(drive)
    }

    /// Checks every structural invariant, returning the first violation:
    /// reference counts equal live map entries; map entries point at live
    /// chunks; each block's live bytes equal the sum of its live extents;
    /// no two live extents overlap and each lies in written space of a
    /// non-free block whose summary lists it; free-block accounting adds
    /// up; the dedup index holds exactly the live chunks; and with memory
    /// media every live chunk decodes to content with its fingerprint.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut refs = vec![0u32; self.chunks.iter_live().map(|(id, _)| id.index() + 1).max().unwrap_or(0)];
        for (lpn, entry) in self.map.iter().enumerate() {
            if let Some(id) = entry {
                match refs.get_mut(id.index()) {
                    Some(r) => *r += 1,
                    None => return Err(format!("unit {lpn} maps to dead chunk {}", id.index())),
                }
            }
        }
        let blocks = self.config.geometry.total_blocks() as usize;
        let mut live = vec![0u64; blocks];
        let mut unit = vec![0u8; self.config.unit_bytes as usize];
        let mut pages = Vec::new();
        for (id, chunk) in self.chunks.iter_live() {
            if refs[id.index()] != chunk.refs {
                return Err(format!(
                    "chunk {} has refcount {} but {} map entries",
                    id.index(),
                    chunk.refs,
                    refs[id.index()]
                ));
            }
            let e = chunk.extent;
            let b = e.block.0 as usize;
            if b >= blocks || self.space.state(e.block) == BlockState::Free {
                return Err(format!("chunk {} lies in free or missing block {}", id.index(), e.block.0));
            }
            if e.offset + e.len > self.space.written_bytes(e.block) {
                return Err(format!("chunk {} extends past the written part of block {}", id.index(), b));
            }
            live[b] += u64::from(e.len);
            if self.keeps_data() {
                self.fetch(id, &mut unit, &mut pages).map_err(|e| e.to_string())?;
                let stored = self.bytes.get(id).unwrap_or_default();
                if self.chunks.fingerprint(id).is_some_and(|fp| *fp != crate::units::Fingerprint::of(stored)) {
                    return Err(format!("chunk {} content does not match its fingerprint", id.index()));
                }
            }
        }
        let held = if self.keeps_data() { self.chunks.live() } else { 0 };
        if self.bytes.count() != held {
            return Err(format!("{} chunks have stored bytes, {held} should", self.bytes.count()));
        }
        let total: u64 = live.iter().sum();
        if total != self.live_bytes {
            return Err(format!("live-byte counter {} but live chunks hold {total}", self.live_bytes));
        }
        // Each block's summary must list every live chunk placed in it: the
        // distinct ones found through it hold all of the block's live bytes.
        let mut listed: Vec<(u32, u32, ChunkId)> = Vec::new();
        for (b, &live) in live.iter().enumerate() {
            let block = BlockId(b as u32);
            if u64::from(self.space.live_bytes(block)) != live {
                return Err(format!(
                    "block {b} counts {} live bytes, its live chunks hold {live}",
                    self.space.live_bytes(block)
                ));
            }
            listed.clear();
            for &id in self.space.summary(block) {
                if id.index() >= self.chunks.records() {
                    return Err(format!("block {b}'s summary names chunk {} past the chunk table", id.index()));
                }
                let c = self.chunks.get(id);
                if c.refs > 0 && c.extent.block == block {
                    listed.push((c.extent.offset, c.extent.len, id));
                }
            }
            // A chunk freed and reused inside the block is listed twice.
            listed.sort_unstable();
            listed.dedup();
            let bytes: u64 = listed.iter().map(|&(_, len, _)| u64::from(len)).sum();
            if bytes != live {
                return Err(format!("block {b}'s summary lists {bytes} of its {live} live bytes"));
            }
            if listed.windows(2).any(|w| w[0].0 + w[0].1 > w[1].0) {
                return Err(format!("block {b} has overlapping live chunks"));
            }
        }
        self.space.check(&self.nand)?;
        self.chunks.check_index()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::pattern::{DataSpec, PatternGen};

    /// A drive filled with unique, incompressible units: one sealed block
    /// a die.
    fn written() -> Drive {
        let mut cfg = DriveConfig::preset("sf2281-240g").and_then(|c| c.scaled(64 << 20)).expect("preset scales");
        cfg.media = Media::MetadataOnly;
        let mut drive = Drive::new(cfg).expect("valid config");
        let mut buf = vec![0u8; 64 << 20];
        PatternGen::new(DataSpec::incompressible(), 3).expect("valid spec").fill(&mut buf);
        drive.write(Lba(0), &buf).expect("in range");
        drive.check_invariants().expect("consistent after writes");
        drive
    }

    #[test]
    fn memory_media_keeps_only_the_live_chunks_bytes() {
        let mut cfg = DriveConfig::preset("sf2281-240g").and_then(|c| c.scaled(16 << 20)).expect("preset scales");
        cfg.media = Media::Memory;
        let mut drive = Drive::new(cfg).expect("valid config");
        let mut buf = vec![0u8; 1 << 20];
        let mut gen = PatternGen::new(DataSpec::compressible(50).unwrap(), 5).expect("valid spec");
        // Four passes over the same MiB: only the last pass's chunks live.
        for _ in 0..4 {
            gen.fill(&mut buf);
            drive.write(Lba(0), &buf).expect("in range");
        }
        drive.check_invariants().expect("consistent");
        assert_eq!(drive.bytes.count(), drive.chunks.live());
        let held: u64 = drive.chunks.iter_live().map(|(id, _)| drive.bytes.get(id).map_or(0, |b| b.len() as u64)).sum();
        assert_eq!(held, drive.live_bytes, "the bytes held are the live chunks' stored bytes");
        assert!(drive.footprint().chunk_data >= held);
        assert!(held < (1 << 20) * 3 / 5, "compressed: {held}");
        assert_eq!(drive.read(Lba(0), 2048).expect("in range"), buf);
        // A chunk whose bytes changed, or went missing, is found.
        let id = drive.map.get(Lpn(3)).expect("mapped");
        let mut wrong = drive.bytes.get(id).expect("held").to_vec();
        wrong[0] ^= 1;
        drive.bytes.put(id, &wrong);
        let err = drive.check_invariants().expect_err("changed bytes are found");
        assert!(err.contains(&format!("chunk {} ", id.index())), "{err}");
        drive.bytes.remove(id);
        let err = drive.check_invariants().expect_err("missing bytes are found");
        assert!(err.contains("no stored bytes"), "{err}");
    }

    #[test]
    fn the_checker_finds_a_live_chunk_missing_from_its_summary() {
        let mut drive = written();
        let (id, chunk) = drive
            .chunks
            .iter_live()
            .find(|(_, c)| drive.space.state(c.extent.block) == BlockState::Sealed)
            .expect("a live chunk in a sealed block");
        let block = chunk.extent.block;
        let mut summary = drive.space.take_summary(block);
        summary.retain(|&x| x != id);
        drive.space.untake_summary(block, summary);
        let err = drive.check_invariants().expect_err("a lost summary entry is found");
        assert!(err.contains("summary lists"), "{err}");
    }

    #[test]
    fn the_checker_finds_overlapping_live_chunks() {
        let mut drive = written();
        let mut live = drive.chunks.iter_live();
        let (_, a) = live.next().expect("a live chunk");
        let (b, chunk) = live.find(|(_, c)| c.extent.block == a.extent.block).expect("a second chunk in the block");
        drop(live);
        // Move the second chunk onto the first one's bytes, keeping each
        // block's live-byte count right, so only the overlap is wrong.
        drive.chunks.relocate(b, Extent { offset: a.extent.offset, ..chunk.extent });
        let err = drive.check_invariants().expect_err("an overlap is found");
        assert!(err.contains("overlapping"), "{err}");
    }
}
