//! The invariant checker: every structural rule of the drive's state,
//! each violation a variant of [`InvariantError`] that names the rule.

use thiserror::Error;

use super::Drive;
use crate::error::DriveError;
use crate::ftl::space::BlockState;
use crate::units::{BlockId, ChunkId, Fingerprint};

/// A broken invariant of a drive's state: a bug (or a damaged image),
/// never the result of host commands.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum InvariantError {
    /// A map entry names a chunk that is not live.
    #[error("unit {unit} maps to dead chunk {chunk}")]
    MapsToDeadChunk { unit: u64, chunk: usize },
    /// A live chunk's reference count differs from its map entries.
    #[error("chunk {chunk} has refcount {refs} but {entries} map entries")]
    RefcountMismatch { chunk: usize, refs: u32, entries: u32 },
    /// A live chunk lies in a free block, or past the last block.
    #[error("chunk {chunk} lies in free or missing block {block}")]
    ChunkInFreeBlock { chunk: usize, block: u32 },
    /// A live chunk reaches past what its block has written.
    #[error("chunk {chunk} extends past the written part of block {block}")]
    ChunkPastWritten { chunk: usize, block: u32 },
    /// A live chunk's stored bytes cannot be read back (memory media).
    #[error("{0}")]
    Unreadable(DriveError),
    /// A live chunk's stored bytes do not hash to its fingerprint.
    #[error("chunk {chunk} content does not match its fingerprint")]
    FingerprintMismatch { chunk: usize },
    /// Stored bytes are held for other than exactly the live chunks.
    #[error("{held} chunks have stored bytes, {expected} should")]
    StoredBytesCount { held: usize, expected: usize },
    /// The drive's live-byte counter differs from its live chunks.
    #[error("live-byte counter {counter} but live chunks hold {held}")]
    LiveByteCounter { counter: u64, held: u64 },
    /// A block's live-byte count differs from its live chunks.
    #[error("block {block} counts {counted} live bytes, its live chunks hold {held}")]
    BlockLiveBytes { block: u32, counted: u64, held: u64 },
    /// A block's summary names a chunk id past the chunk table.
    #[error("block {block}'s summary names chunk {chunk} past the chunk table")]
    SummaryPastTable { block: u32, chunk: usize },
    /// A block's summary misses some of its live chunks.
    #[error("block {block}'s summary lists {listed} of its {live} live bytes")]
    SummaryIncomplete { block: u32, listed: u64, live: u64 },
    /// Two live chunks share bytes of a block.
    #[error("block {block} has overlapping live chunks")]
    Overlap { block: u32 },
    /// Block states, free lists or open blocks disagree (`Space::check`).
    #[error("{0}")]
    Space(String),
    /// The dedup index does not hold exactly the live chunks.
    #[error("{0}")]
    DedupIndex(String),
}

impl Drive {
    /// Checks every structural invariant, returning the first violation:
    /// reference counts equal live map entries; map entries point at live
    /// chunks; each block's live bytes equal the sum of its live extents;
    /// no two live extents overlap and each lies in written space of a
    /// non-free block whose summary lists it; free-block accounting adds
    /// up; the dedup index holds exactly the live chunks; and with memory
    /// media every live chunk decodes to content with its fingerprint.
    pub fn check_invariants(&self) -> Result<(), InvariantError> {
        let mut refs = vec![0u32; self.chunks.iter_live().map(|(id, _)| id.index() + 1).max().unwrap_or(0)];
        for (lpn, entry) in self.map.iter().enumerate() {
            if let Some(id) = entry {
                match refs.get_mut(id.index()) {
                    Some(r) => *r += 1,
                    None => return Err(InvariantError::MapsToDeadChunk { unit: lpn as u64, chunk: id.index() }),
                }
            }
        }
        let blocks = self.config.geometry.total_blocks() as usize;
        let mut live = vec![0u64; blocks];
        let mut unit = vec![0u8; self.config.unit_bytes as usize];
        let mut pages = Vec::new();
        for (id, chunk) in self.chunks.iter_live() {
            if refs[id.index()] != chunk.refs {
                return Err(InvariantError::RefcountMismatch {
                    chunk: id.index(),
                    refs: chunk.refs,
                    entries: refs[id.index()],
                });
            }
            let e = chunk.extent;
            let b = e.block.0 as usize;
            if b >= blocks || self.space.state(e.block) == BlockState::Free {
                return Err(InvariantError::ChunkInFreeBlock { chunk: id.index(), block: e.block.0 });
            }
            if e.offset + e.len > self.space.written_bytes(e.block) {
                return Err(InvariantError::ChunkPastWritten { chunk: id.index(), block: e.block.0 });
            }
            live[b] += u64::from(e.len);
            if self.keeps_data() {
                self.fetch(id, &mut unit, &mut pages).map_err(InvariantError::Unreadable)?;
                let stored = self.bytes.get(id).unwrap_or_default();
                if self.chunks.fingerprint(id).is_some_and(|fp| *fp != Fingerprint::of(stored)) {
                    return Err(InvariantError::FingerprintMismatch { chunk: id.index() });
                }
            }
        }
        let held = if self.keeps_data() { self.chunks.live() } else { 0 };
        if self.bytes.count() != held {
            return Err(InvariantError::StoredBytesCount { held: self.bytes.count(), expected: held });
        }
        let total: u64 = live.iter().sum();
        if total != self.live_bytes {
            return Err(InvariantError::LiveByteCounter { counter: self.live_bytes, held: total });
        }
        // Each block's summary must list every live chunk placed in it: the
        // distinct ones found through it hold all of the block's live bytes.
        let mut listed: Vec<(u32, u32, ChunkId)> = Vec::new();
        for (b, &live) in live.iter().enumerate() {
            let block = BlockId(b as u32);
            if u64::from(self.space.live_bytes(block)) != live {
                return Err(InvariantError::BlockLiveBytes {
                    block: block.0,
                    counted: u64::from(self.space.live_bytes(block)),
                    held: live,
                });
            }
            listed.clear();
            for &id in self.space.summary(block) {
                if id.index() >= self.chunks.records() {
                    return Err(InvariantError::SummaryPastTable { block: block.0, chunk: id.index() });
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
                return Err(InvariantError::SummaryIncomplete { block: block.0, listed: bytes, live });
            }
            if listed.windows(2).any(|w| w[0].0 + w[0].1 > w[1].0) {
                return Err(InvariantError::Overlap { block: block.0 });
            }
        }
        self.space.check(&self.nand).map_err(InvariantError::Space)?;
        self.chunks.check_index().map_err(InvariantError::DedupIndex)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DriveConfig, Media};
    use crate::content::pattern::{DataSpec, PatternGen};
    use crate::ftl::space::BlockState;
    use crate::units::{Lba, Lpn, NandExtent};

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
        let err = drive.check_invariants().expect_err("changed bytes are found").to_string();
        assert!(err.contains(&format!("chunk {} ", id.index())), "{err}");
        drive.bytes.remove(id);
        let err = drive.check_invariants().expect_err("missing bytes are found").to_string();
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
        let err = drive.check_invariants().expect_err("a lost summary entry is found").to_string();
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
        drive.chunks.relocate(b, NandExtent { offset: a.extent.offset, ..chunk.extent });
        let err = drive.check_invariants().expect_err("an overlap is found").to_string();
        assert!(err.contains("overlapping"), "{err}");
    }
}
