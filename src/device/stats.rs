//! What a drive counts: host, data-path and NAND counters, the snapshot
//! [`Stats`] built from them, and the heap [`Footprint`] of its state.

use serde::{Deserialize, Serialize};

use super::Drive;

/// Host-side and data-path counters (NAND ones live in the array).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Counters {
    pub(super) host_write_bytes: u64,
    pub(super) host_read_bytes: u64,
    pub(super) host_write_units: u64,
    pub(super) host_trim_units: u64,
    pub(super) dedup_hits: u64,
    pub(super) new_chunks: u64,
    pub(super) new_raw_bytes: u64,
    pub(super) new_stored_bytes: u64,
    pub(super) host_page_reads: u64,
    pub(super) gc_relocated_bytes: u64,
    pub(super) gc_relocated_chunks: u64,
    pub(super) gc_page_reads: u64,
    pub(super) gc_victims: u64,
    pub(super) wear_relocated_bytes: u64,
    pub(super) wear_relocated_chunks: u64,
    pub(super) wear_page_reads: u64,
    pub(super) wear_victims: u64,
}

impl Counters {
    /// Moves what GC's counters gained since `before` to wear levelling's:
    /// a static wear-levelling move runs GC's relocation, and its cost is
    /// counted apart.
    pub(super) fn gc_since_is_wear(&mut self, before: &Counters) {
        let moved = |now: &mut u64, then: u64, to: &mut u64| {
            *to += *now - then;
            *now = then;
        };
        moved(&mut self.gc_relocated_bytes, before.gc_relocated_bytes, &mut self.wear_relocated_bytes);
        moved(&mut self.gc_relocated_chunks, before.gc_relocated_chunks, &mut self.wear_relocated_chunks);
        moved(&mut self.gc_page_reads, before.gc_page_reads, &mut self.wear_page_reads);
        moved(&mut self.gc_victims, before.gc_victims, &mut self.wear_victims);
    }
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
    /// Stored bytes static wear levelling moved (NAND writes GC's counters
    /// leave out).
    #[serde(default)]
    pub wear_relocated_bytes: u64,
    /// Chunks static wear levelling moved.
    #[serde(default)]
    pub wear_relocated_chunks: u64,
    /// Pages static wear levelling read from the blocks it moved.
    #[serde(default)]
    pub wear_page_reads: u64,
    /// Blocks static wear levelling emptied and erased.
    #[serde(default)]
    pub wear_victims: u64,
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

impl Stats {
    /// Several drives' counters as one: counts and gauges summed, the ratios
    /// recomputed from the sums (as [`Drive::stats`] computes them), P/E
    /// cycles the extremes and the mean of the means (members are alike).
    /// Mirrored copies each count: host bytes are what the members received.
    pub fn combined(parts: &[Stats]) -> Stats {
        let sum = |f: fn(&Stats) -> u64| parts.iter().map(f).sum::<u64>();
        let (host_write_bytes, host_write_units) = (sum(|s| s.host_write_bytes), sum(|s| s.host_write_units));
        let (nand_bytes_programmed, new_chunks) = (sum(|s| s.nand_bytes_programmed), sum(|s| s.new_chunks));
        let (new_raw_bytes, new_stored_bytes) = (sum(|s| s.new_raw_bytes), sum(|s| s.new_stored_bytes));
        Stats {
            host_write_bytes,
            host_read_bytes: sum(|s| s.host_read_bytes),
            host_write_units,
            host_trim_units: sum(|s| s.host_trim_units),
            dedup_hits: sum(|s| s.dedup_hits),
            new_chunks,
            new_raw_bytes,
            new_stored_bytes,
            nand_pages_programmed: sum(|s| s.nand_pages_programmed),
            nand_bytes_programmed,
            nand_pages_read: sum(|s| s.nand_pages_read),
            host_page_reads: sum(|s| s.host_page_reads),
            gc_relocated_bytes: sum(|s| s.gc_relocated_bytes),
            gc_relocated_chunks: sum(|s| s.gc_relocated_chunks),
            gc_page_reads: sum(|s| s.gc_page_reads),
            gc_victims: sum(|s| s.gc_victims),
            wear_relocated_bytes: sum(|s| s.wear_relocated_bytes),
            wear_relocated_chunks: sum(|s| s.wear_relocated_chunks),
            wear_page_reads: sum(|s| s.wear_page_reads),
            wear_victims: sum(|s| s.wear_victims),
            erases: sum(|s| s.erases),
            padding_bytes: sum(|s| s.padding_bytes),
            waf: ratio(nand_bytes_programmed, host_write_bytes),
            compression_ratio: ratio(new_stored_bytes, new_raw_bytes),
            dedup_ratio: ratio(new_chunks, host_write_units),
            live_chunks: sum(|s| s.live_chunks),
            mapped_units: sum(|s| s.mapped_units),
            live_bytes: sum(|s| s.live_bytes),
            free_blocks: parts.iter().map(|s| s.free_blocks).sum(),
            pe_min: parts.iter().map(|s| s.pe_min).min().unwrap_or(0),
            pe_avg: if parts.is_empty() {
                0.0
            } else {
                parts.iter().map(|s| s.pe_avg).sum::<f64>() / parts.len() as f64
            },
            pe_max: parts.iter().map(|s| s.pe_max).max().unwrap_or(0),
        }
    }
}

fn ratio(num: u64, den: u64) -> f64 {
    if den == 0 {
        0.0
    } else {
        num as f64 / den as f64
    }
}

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

impl Drive {
    /// NAND bytes programmed so far (SMART 233): what [`Drive::stats`]
    /// reports, without its scans of the map and blocks.
    pub fn nand_bytes_programmed(&self) -> u64 {
        self.nand.counters().pages_programmed * u64::from(self.config.geometry.page_bytes)
    }

    /// Host bytes written so far (SMART 241), as in [`Drive::stats`].
    pub fn host_write_bytes(&self) -> u64 {
        self.counters.host_write_bytes
    }

    /// Heap bytes the model's state holds, by structure (allocated
    /// capacity, except the chunk tables reserved up front, which count
    /// the entries written: see [`crate::datapath::chunks::ChunkStore::heap_bytes`]).
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
            wear_relocated_bytes: c.wear_relocated_bytes,
            wear_relocated_chunks: c.wear_relocated_chunks,
            wear_page_reads: c.wear_page_reads,
            wear_victims: c.wear_victims,
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
}
