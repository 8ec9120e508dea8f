//! Physical space: which blocks are free, open or sealed, how chunks are
//! packed into pages, and how many live bytes each block holds.
//!
//! Packing: chunks are appended back to back into one open block per die,
//! so a compressed chunk may straddle a page boundary (a read of it then
//! costs two page reads) but never a block boundary: when a chunk does not
//! fit a block's tail, the tail is left as padding and the block is sealed.
//! A page is programmed when it fills; until then its bytes sit in the
//! controller's page buffer, from which reads are served. After each full
//! page the write point moves to the next die, so consecutive data is
//! striped page by page across dies; so does a sealed block's padded last
//! page, when the next die's open block can take the chunk that did not
//! fit (else the chunk opens the die's next block). A die out of erased
//! blocks erases one of its own left with no live data rather than drop
//! out of the stripe; only a die with neither is passed by.
//!
//! Owns block states and per-block live bytes; the chunk store owns which
//! chunk is where, and each block keeps a summary of the chunk ids written
//! to it (like a real FTL's out-of-band area) so GC can find them.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::config::Geometry;
use crate::ftl::greedy::GreedyIndex;
use crate::ftl::victim::BlockView;
use crate::ftl::wear;
use crate::nand::NandArray;
use crate::units::NandExtent;
use crate::units::{BlockId, ChunkId, Divisor};

mod append;
mod check;

/// Life-cycle state of a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BlockState {
    /// Erased and waiting in its die's free list.
    Free,
    /// Taking appends on its die.
    Open,
    /// Full (or padded); a GC candidate.
    Sealed,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct BlockMeta {
    state: BlockState,
    /// Bytes of live chunks. Invariant: live_bytes <= data_bytes.
    live_bytes: u32,
    /// Bytes of chunks appended since the last erase (padding excluded).
    data_bytes: u32,
    sealed_seq: u64,
    last_write: u64,
    /// Chunk ids appended since the last erase (stale ones included).
    summary: Vec<ChunkId>,
    /// Entered in the greedy index (sealed and not yet taken for GC).
    indexed: bool,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct OpenBlock {
    block: BlockId,
    /// Bytes appended so far. Invariant: <= block bytes.
    write_point: u32,
}

/// Space accounting totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpaceCounters {
    /// Bytes left unused where a chunk did not fit a block's tail, or a
    /// partial page was programmed on seal.
    pub padding_bytes: u64,
}

/// Block states, free lists and open blocks of the whole array.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Space {
    page_bytes: Divisor,
    block_bytes: u32,
    blocks_per_die: Divisor,
    meta: Vec<BlockMeta>,
    free: Vec<VecDeque<BlockId>>,
    free_count: u32,
    /// Open blocks: frontier `f`'s block on die `d` at `f x dies + d`.
    open: Vec<Option<OpenBlock>>,
    cursor: usize,
    seal_seq: u64,
    counters: SpaceCounters,
    /// Sealed blocks by live bytes, for greedy's victim. Rebuilt from the
    /// blocks' `indexed` flags when an image is loaded.
    #[serde(skip)]
    greedy: GreedyIndex,
    /// The frontier that wrote each block, so GC can keep a stream's data
    /// together. Not in images: a loaded drive's sealed blocks count as
    /// frontier 0.
    #[serde(skip)]
    frontier_of: Vec<u8>,
    /// Dynamic wear levelling: a die opens its least-worn free block, not
    /// the first freed. A setting, not state: not in images.
    #[serde(skip)]
    least_worn_first: bool,
}

impl Space {
    /// Resident bytes per block when blocks take `chunks_per_block` chunks
    /// between erases: its state, its free-list and greedy-index places,
    /// and its summary (a vector that grows by doubling and keeps its
    /// capacity through erases).
    pub fn bytes_per_block(chunks_per_block: u64) -> u64 {
        let summary = chunks_per_block.next_power_of_two().max(4) * std::mem::size_of::<ChunkId>() as u64 + 16;
        (std::mem::size_of::<BlockMeta>() + std::mem::size_of::<BlockId>() + 1) as u64
            + GreedyIndex::bytes_per_block()
            + summary
    }

    /// All blocks free, nothing open, one write frontier.
    pub fn new(geometry: &Geometry) -> Self {
        Self::with_frontiers(geometry, 1)
    }

    /// All blocks free, nothing open, `frontiers` write frontiers (at
    /// least one), each with an open block per die.
    pub fn with_frontiers(geometry: &Geometry, frontiers: usize) -> Self {
        let dies = geometry.dies() as usize;
        let meta = BlockMeta {
            state: BlockState::Free,
            live_bytes: 0,
            data_bytes: 0,
            sealed_seq: 0,
            last_write: 0,
            summary: Vec::new(),
            indexed: false,
        };
        let free = (0..dies)
            .map(|d| {
                let first = d as u32 * geometry.blocks_per_die;
                (first..first + geometry.blocks_per_die).map(BlockId).collect()
            })
            .collect();
        Space {
            page_bytes: Divisor::new(geometry.page_bytes).expect("validated page size"),
            block_bytes: geometry.block_bytes() as u32,
            blocks_per_die: Divisor::new(geometry.blocks_per_die).expect("validated blocks per die"),
            meta: vec![meta; geometry.total_blocks() as usize],
            free,
            free_count: geometry.total_blocks(),
            open: vec![None; dies * frontiers.max(1)],
            cursor: 0,
            seal_seq: 0,
            counters: SpaceCounters::default(),
            greedy: GreedyIndex::new(geometry.total_blocks(), geometry.block_bytes() as u32),
            frontier_of: vec![0; geometry.total_blocks() as usize],
            least_worn_first: false,
        }
    }

    /// Turns dynamic wear levelling on or off (see [`crate::ftl::wear`]).
    pub fn set_least_worn_first(&mut self, on: bool) {
        self.least_worn_first = on;
    }

    /// Takes the free block die `die` opens next: the first freed, or the
    /// least worn with dynamic wear levelling.
    fn take_free(&mut self, nand: &NandArray, die: usize) -> Option<BlockId> {
        let list = &mut self.free[die];
        let at = if self.least_worn_first { wear::least_worn(list.iter().map(|&b| nand.pe_cycles(b)))? } else { 0 };
        list.remove(at)
    }

    /// Erased blocks not yet opened.
    pub fn free_blocks(&self) -> u32 {
        self.free_count
    }

    /// Padding and other space totals.
    pub fn counters(&self) -> SpaceCounters {
        self.counters
    }

    /// State of `block`.
    pub fn state(&self, block: BlockId) -> BlockState {
        self.meta[block.0 as usize].state
    }

    /// Live bytes in `block`.
    pub fn live_bytes(&self, block: BlockId) -> u32 {
        self.meta[block.0 as usize].live_bytes
    }

    /// Loads what invalidating bytes of `block` updates (its record and
    /// greedy index entry) into cache; returns a value to keep the loads.
    pub fn warm(&self, block: BlockId) -> u32 {
        self.meta[block.0 as usize].live_bytes.wrapping_add(self.greedy.peek(block.0))
    }

    /// Chunk ids appended to `block` since its last erase.
    pub fn summary(&self, block: BlockId) -> &[ChunkId] {
        &self.meta[block.0 as usize].summary
    }

    /// Bytes appended to `block` since its last erase: the write point of
    /// an open block, the whole block once sealed, zero when free.
    pub fn written_bytes(&self, block: BlockId) -> u32 {
        match self.state(block) {
            BlockState::Free => 0,
            BlockState::Sealed => self.block_bytes,
            BlockState::Open => self.open_of(block).map_or(0, |o| o.write_point),
        }
    }

    /// Space that holds no data yet: free blocks plus the unwritten tails
    /// of open blocks. The analytic WA models count it out of the
    /// physical space.
    pub fn unwritten_bytes(&self) -> u64 {
        let tails: u64 = self.open.iter().flatten().map(|o| u64::from(self.block_bytes - o.write_point)).sum();
        u64::from(self.free_count) * u64::from(self.block_bytes) + tails
    }

    /// Views of the sealed blocks, for a victim policy.
    pub fn sealed_views(&self, now: u64) -> impl Iterator<Item = BlockView> + '_ {
        self.meta.iter().enumerate().filter(|(_, m)| m.state == BlockState::Sealed).map(move |(i, m)| BlockView {
            block: BlockId(i as u32),
            live_bytes: m.live_bytes,
            data_bytes: m.data_bytes,
            capacity_bytes: self.block_bytes,
            sealed_seq: m.sealed_seq,
            age: now.saturating_sub(m.last_write),
            die_free: self.die_free(BlockId(i as u32)),
        })
    }

    /// Dies in the array (open block slots per frontier).
    fn dies(&self) -> usize {
        self.free.len()
    }

    /// The frontier that wrote `block` (0 for blocks of a loaded image).
    pub fn frontier_of(&self, block: BlockId) -> usize {
        self.frontier_of.get(block.0 as usize).map_or(0, |&f| usize::from(f))
    }

    fn open_of(&self, block: BlockId) -> Option<&OpenBlock> {
        let die = (block.0 / self.blocks_per_die) as usize;
        self.open.iter().skip(die).step_by(self.dies()).flatten().find(|o| o.block == block)
    }

    /// Marks `extent`'s bytes dead (its chunk was freed or moved).
    pub fn invalidate(&mut self, extent: NandExtent) {
        let m = &mut self.meta[extent.block.0 as usize];
        debug_assert!(m.live_bytes >= extent.len, "invalidating more bytes than are live");
        m.live_bytes -= extent.len;
        if m.indexed {
            self.greedy.set_live(extent.block.0, m.live_bytes);
        }
    }

    /// Marks `bytes` of a GC victim's live bytes dead at once (its live
    /// chunks moved); the victim is out of the greedy index.
    pub fn drop_live(&mut self, victim: BlockId, bytes: u32) {
        let m = &mut self.meta[victim.0 as usize];
        debug_assert!(!m.indexed && m.live_bytes >= bytes, "dropping live bytes of an indexed block");
        m.live_bytes -= bytes;
    }

    /// The sealed block greedy GC cleans: fewest live bytes, then (wholly
    /// dead blocks only) the die with fewest free blocks, then oldest, among
    /// blocks with dead chunks (see [`crate::ftl::victim::tie_key`]); the same
    /// choice as scanning every block, from an index.
    pub fn greedy_victim(&self) -> Option<BlockId> {
        self.greedy.victim(|b| self.die_free(BlockId(b))).map(BlockId)
    }

    /// Free blocks on `block`'s die.
    fn die_free(&self, block: BlockId) -> u32 {
        self.free[(block.0 / self.blocks_per_die) as usize].len() as u32
    }

    /// Rebuilds the greedy index from the blocks' `indexed` flags (after
    /// loading an image, which does not store it).
    pub fn rebuild_index(&mut self) {
        self.frontier_of = vec![0; self.meta.len()];
        self.greedy = GreedyIndex::new(self.meta.len() as u32, self.block_bytes);
        for (i, m) in self.meta.iter().enumerate().filter(|(_, m)| m.indexed) {
            self.greedy.insert(i as u32, m.live_bytes, m.data_bytes, m.sealed_seq);
        }
    }

    /// Sealed blocks that hold data but no live byte (everything in them
    /// was overwritten or trimmed), oldest seal first: erasing one moves
    /// nothing.
    pub fn emptied_blocks(&self) -> Vec<BlockId> {
        self.greedy.emptied().into_iter().map(BlockId).collect()
    }

    /// Pages of NAND that a read of `extent` must sense (pages still in the
    /// page buffer cost none), pushed as `(block, page)` pairs.
    pub fn nand_pages(&self, nand: &NandArray, extent: NandExtent, out: &mut Vec<(u32, u32)>) {
        let (first, last) = extent.pages(self.page_bytes);
        let end = (last + 1).min(nand.programmed_pages(extent.block));
        out.extend((first..end).map(|p| (extent.block.0, p)));
    }

    /// How many pages reads of all of `extents` must sense, each page
    /// once: [`Space::nand_pages`] of each, without repeats, for extents of
    /// one block in offset order (a GC victim's live chunks).
    pub fn nand_page_count_in_order(&self, nand: &NandArray, extents: impl Iterator<Item = NandExtent>) -> u32 {
        let (mut next, mut count, mut programmed) = (0, 0, None);
        for extent in extents {
            let (first, last) = extent.pages(self.page_bytes);
            let end = (last + 1).min(*programmed.get_or_insert_with(|| nand.programmed_pages(extent.block)));
            count += end.saturating_sub(first.max(next));
            next = next.max(last + 1);
        }
        count
    }

    /// Takes the summary of a sealed victim out for GC.
    pub fn take_summary(&mut self, block: BlockId) -> Vec<ChunkId> {
        let m = &mut self.meta[block.0 as usize];
        if m.indexed {
            self.greedy.remove(block.0);
            m.indexed = false;
        }
        std::mem::take(&mut m.summary)
    }

    /// Gives back the summary of a victim whose collection failed part way:
    /// it stays sealed, indexed again with the live bytes it has left.
    pub fn untake_summary(&mut self, block: BlockId, summary: Vec<ChunkId>) {
        let m = &mut self.meta[block.0 as usize];
        debug_assert_eq!(m.state, BlockState::Sealed, "only a sealed victim is taken");
        m.summary = summary;
        if !m.indexed {
            m.indexed = true;
            self.greedy.insert(block.0, m.live_bytes, m.data_bytes, m.sealed_seq);
        }
    }

    /// Erases a block whose live chunks are all gone, returning it to its
    /// die's free list. `summary` hands back the (emptied) summary buffer.
    pub fn erase(&mut self, nand: &mut NandArray, block: BlockId, mut summary: Vec<ChunkId>) {
        let m = &mut self.meta[block.0 as usize];
        debug_assert_eq!(m.live_bytes, 0, "erasing a block with live data");
        debug_assert_eq!(m.state, BlockState::Sealed, "erasing a block that is not sealed");
        summary.clear();
        m.summary = summary;
        m.state = BlockState::Free;
        m.live_bytes = 0;
        m.data_bytes = 0;
        nand.erase(block);
        let die = (block.0 / self.blocks_per_die) as usize;
        self.free[die].push_back(block);
        self.free_count += 1;
    }

    /// Erases every block that holds anything and empties all state
    /// (secure erase). Free blocks are already erased and stay as they are.
    pub fn secure_erase(&mut self, nand: &mut NandArray) {
        self.greedy.clear();
        for die in 0..self.open.len() {
            if let Some(open) = self.open[die].take() {
                self.meta[open.block.0 as usize].state = BlockState::Sealed;
            }
        }
        for i in 0..self.meta.len() {
            let block = BlockId(i as u32);
            if self.meta[i].state == BlockState::Sealed {
                if nand.programmed_pages(block) > 0 {
                    nand.erase(block);
                }
                let m = &mut self.meta[i];
                m.state = BlockState::Free;
                m.live_bytes = 0;
                m.data_bytes = 0;
                m.indexed = false;
                m.summary.clear();
                let die = (block.0 / self.blocks_per_die) as usize;
                self.free[die].push_back(block);
                self.free_count += 1;
            }
        }
        self.cursor = 0;
    }

    /// Heap bytes held: `(block records and free lists, block summaries,
    /// greedy index)`.
    pub fn heap_bytes(&self) -> (u64, u64, u64) {
        let meta = self.meta.capacity() * std::mem::size_of::<BlockMeta>()
            + self.free.iter().map(|f| f.capacity() * std::mem::size_of::<BlockId>()).sum::<usize>();
        let summaries: usize = self.meta.iter().map(|m| m.summary.capacity() * std::mem::size_of::<ChunkId>()).sum();
        (meta as u64, summaries as u64, self.greedy.heap_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn geometry() -> Geometry {
        Geometry {
            channels: 2,
            dies_per_channel: 2,
            blocks_per_die: 8,
            pages_per_block: 4,
            page_bytes: 4096,
            pe_cycles: 10,
        }
    }

    /// Chunk lengths like compressed units: some straddle pages, some do
    /// not fit a block's tail.
    pub(super) fn lengths() -> Vec<u32> {
        (0..120u32).map(|i| 1 + (i * 2654435761 % 4096)).collect()
    }

    #[test]
    fn page_count_of_a_victim_counts_each_page_once() {
        let g = geometry();
        let mut space = Space::new(&g);
        let mut nand = NandArray::new(&g);
        let extents: Vec<NandExtent> = lengths()
            .into_iter()
            .take(40)
            .enumerate()
            .map(|(i, len)| space.append(&mut nand, ChunkId::from_index(i).unwrap(), len, 1, 0).unwrap())
            .collect();
        let block = extents[0].block;
        let in_block: Vec<NandExtent> = extents.into_iter().filter(|e| e.block == block).collect();
        let mut listed = Vec::new();
        for &e in &in_block {
            space.nand_pages(&nand, e, &mut listed);
        }
        listed.sort_unstable();
        listed.dedup();
        let counted = space.nand_page_count_in_order(&nand, in_block.iter().copied());
        assert_eq!(counted as usize, listed.len());
        assert!(counted > 0);
    }
}
