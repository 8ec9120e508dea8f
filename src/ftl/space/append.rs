//! The write path of the space: chunks appended to the open blocks of a
//! write frontier, pages programmed as they fill, blocks opened from their
//! die's free list and sealed when full (see the parent module for the
//! packing rules).

use super::{BlockState, OpenBlock, Space};
use crate::error::{DriveError, NandError};
use crate::nand::NandArray;
use crate::units::{BlockId, ChunkId, NandExtent};

impl Space {
    /// The die after `die`, round robin (without a division).
    fn next_die(&self, die: usize) -> usize {
        if die + 1 == self.dies() {
            0
        } else {
            die + 1
        }
    }

    /// Appends a chunk of `len` stored bytes to write frontier `frontier`
    /// (clamped to the frontiers there are), programming pages as they
    /// fill. `now` is the write clock for cost-benefit ages.
    pub fn append(
        &mut self,
        nand: &mut NandArray,
        chunk: ChunkId,
        len: u32,
        now: u64,
        frontier: usize,
    ) -> Result<NandExtent, DriveError> {
        let base = self.frontier_base(frontier);
        self.append_from(nand, base, chunk, len, now)
    }

    /// Appends chunks `(id, len)` in order to write frontier `frontier`:
    /// the same placement as [`Space::append`] of each with write clocks
    /// `*clock + 1`, `*clock + 2`, ... (`clock` advances), without
    /// per-chunk set-up: a GC victim's live chunks go out in one pass.
    /// Pushes each placed chunk's extent to `out`; on failure `out` holds
    /// those placed before it.
    pub fn append_run(
        &mut self,
        nand: &mut NandArray,
        chunks: impl Iterator<Item = (ChunkId, u32)>,
        clock: &mut u64,
        frontier: usize,
        out: &mut Vec<NandExtent>,
    ) -> Result<(), DriveError> {
        let base = self.frontier_base(frontier);
        for (chunk, len) in chunks {
            *clock += 1;
            let die = self.cursor;
            if let Some(extent) = self.append_in_page(base + die, chunk, len, *clock) {
                out.push(extent);
                continue;
            }
            let fits = matches!(&self.open[base + die], Some(o) if self.block_bytes - o.write_point >= len);
            let extent = if fits {
                self.append_at(nand, base + die, die, chunk, len, *clock)?
            } else {
                self.append_from(nand, base, chunk, len, *clock)?
            };
            out.push(extent);
        }
        Ok(())
    }

    /// The first open-block slot of frontier `frontier` (clamped to the
    /// frontiers there are).
    fn frontier_base(&self, frontier: usize) -> usize {
        // The last frontier's slots start a die count before the end
        // (this is `frontier.min(frontiers - 1) * dies`, without a division).
        frontier.saturating_mul(self.dies()).min(self.open.len() - self.dies())
    }

    /// [`Space::append`] to the frontier whose slots start at `base`.
    fn append_from(
        &mut self,
        nand: &mut NandArray,
        base: usize,
        chunk: ChunkId,
        len: u32,
        now: u64,
    ) -> Result<NandExtent, DriveError> {
        debug_assert!(len > 0 && len <= self.block_bytes, "chunk length out of range");
        if let Some(extent) = self.append_in_page(base + self.cursor, chunk, len, now) {
            return Ok(extent);
        }
        for _ in 0..self.dies() {
            let die = self.cursor;
            match self.ensure_room(nand, base + die, len)? {
                Some(true) => {
                    // The padded page passes the stripe on, to the next
                    // die if its open block takes the chunk as it is.
                    let next = self.next_die(die);
                    let fits = matches!(&self.open[base + next], Some(o) if self.block_bytes - o.write_point >= len);
                    let die = if fits { next } else { die };
                    self.cursor = die;
                    return Ok(self.append_at(nand, base + die, die, chunk, len, now)?);
                }
                Some(false) => return Ok(self.append_at(nand, base + die, die, chunk, len, now)?),
                None => self.cursor = self.next_die(die),
            }
        }
        Err(DriveError::NoSpace(format!("no die has room for a {len}-byte chunk ({} free blocks)", self.free_count)))
    }

    /// Makes open-block slot `slot`'s block able to take `len` bytes,
    /// sealing a too-full one and opening a free one of its die. `None`
    /// when the die has no room; `Some(true)` when it sealed a block by
    /// programming a padded last page (which, like any page program,
    /// passes the stripe on), `Some(false)` otherwise.
    fn ensure_room(&mut self, nand: &mut NandArray, slot: usize, len: u32) -> Result<Option<bool>, NandError> {
        let mut sealed_partial = false;
        if let Some(open) = &self.open[slot] {
            if self.block_bytes - open.write_point >= len {
                return Ok(Some(false));
            }
            sealed_partial = open.write_point % self.page_bytes != 0;
            self.seal(nand, slot)?;
        }
        let die = slot % self.dies();
        let Some(block) = self.take_free(nand, die).or_else(|| self.erase_emptied_on(nand, die)) else {
            return Ok(None);
        };
        self.free_count -= 1;
        let m = &mut self.meta[block.0 as usize];
        debug_assert_eq!(m.state, BlockState::Free, "opened block must be free");
        m.state = BlockState::Open;
        self.open[slot] = Some(OpenBlock { block, write_point: 0 });
        let frontier = (slot / self.dies()) as u8;
        if let Some(f) = self.frontier_of.get_mut(block.0 as usize) {
            *f = frontier;
        }
        Ok(Some(sealed_partial))
    }

    /// Erases a block of die `die` left with no live data, for a
    /// die that has run out of erased blocks: the stripe waits for the
    /// erase instead of passing the die by.
    fn erase_emptied_on(&mut self, nand: &mut NandArray, die: usize) -> Option<BlockId> {
        let per_die = self.blocks_per_die;
        let block = BlockId(self.greedy.emptied_where(|b| (b / per_die) as usize == die)?);
        let summary = self.take_summary(block);
        self.erase(nand, block, summary);
        self.take_free(nand, die)
    }

    /// [`Space::append_at`] where it is only bookkeeping: slot `slot` has
    /// an open block and the chunk ends inside the page it starts in, so
    /// no page is programmed, the block is not sealed and the write point
    /// stays on its die. `None` (and nothing done) otherwise.
    #[inline]
    fn append_in_page(&mut self, slot: usize, chunk: ChunkId, len: u32, now: u64) -> Option<NandExtent> {
        let page = self.page_bytes;
        let open = self.open[slot].as_mut()?;
        let offset = open.write_point;
        if offset % page + len >= page.get() {
            return None;
        }
        open.write_point = offset + len;
        let block = open.block;
        self.account(block, chunk, len, now);
        Some(NandExtent { block, offset, len })
    }

    /// Counts `chunk` (`len` bytes, written at `now`) into `block`.
    #[inline(always)]
    fn account(&mut self, block: BlockId, chunk: ChunkId, len: u32, now: u64) {
        let m = &mut self.meta[block.0 as usize];
        m.live_bytes += len;
        m.data_bytes += len;
        m.last_write = now;
        m.summary.push(chunk);
    }

    /// Appends to open-block slot `slot` (of die `die`), which has room.
    #[inline(always)]
    fn append_at(
        &mut self,
        nand: &mut NandArray,
        slot: usize,
        die: usize,
        chunk: ChunkId,
        len: u32,
        now: u64,
    ) -> Result<NandExtent, NandError> {
        let page = self.page_bytes;
        let open = self.open[slot].as_mut().expect("ensure_room opened a block");
        let block = open.block;
        let offset = open.write_point;
        let end = offset + len;
        // Pages `first..last` fill up with this chunk: program them.
        let (first, last) = (offset / page, end / page);
        for p in first..last {
            nand.program(block, p)?;
        }
        open.write_point = end;
        self.account(block, chunk, len, now);
        if end == self.block_bytes {
            self.seal(nand, slot)?;
        }
        if last > first {
            self.cursor = self.next_die(die);
        }
        Ok(NandExtent { block, offset, len })
    }

    /// Seals slot `slot`'s open block, programming a partial last page
    /// with zero padding.
    fn seal(&mut self, nand: &mut NandArray, slot: usize) -> Result<(), NandError> {
        let Some(open) = self.open[slot].take() else {
            return Ok(());
        };
        let page = self.page_bytes;
        let in_page = open.write_point % page;
        if in_page != 0 {
            nand.program(open.block, open.write_point / page)?;
            self.counters.padding_bytes += u64::from(page.get() - in_page);
        }
        let unwritten_pages = (self.block_bytes - open.write_point) / page;
        self.counters.padding_bytes += u64::from(unwritten_pages * page.get());
        self.seal_seq += 1;
        let m = &mut self.meta[open.block.0 as usize];
        // A sealed block's summary only shrinks (on erase): drop the slack
        // its growth left, which would otherwise be up to half of it.
        m.summary.shrink_to_fit();
        m.state = BlockState::Sealed;
        m.sealed_seq = self.seal_seq;
        m.indexed = true;
        self.greedy.insert(open.block.0, m.live_bytes, m.data_bytes, m.sealed_seq);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{geometry, lengths};
    use super::*;

    #[test]
    fn a_run_places_chunks_as_one_append_each_does() {
        let g = geometry();
        let (mut one, mut run) = (Space::with_frontiers(&g, 2), Space::with_frontiers(&g, 2));
        let (mut nand_one, mut nand_run) = (NandArray::new(&g), NandArray::new(&g));
        let chunks: Vec<(ChunkId, u32)> =
            lengths().into_iter().enumerate().map(|(i, len)| (ChunkId::from_index(i).unwrap(), len)).collect();
        let mut expected = Vec::new();
        for (k, &(id, len)) in chunks.iter().enumerate() {
            expected.push(one.append(&mut nand_one, id, len, 7 + k as u64 + 1, 1).unwrap());
        }
        let (mut clock, mut placed) = (7, Vec::new());
        run.append_run(&mut nand_run, chunks.iter().copied(), &mut clock, 1, &mut placed).unwrap();
        assert_eq!(placed, expected);
        assert_eq!(clock, 7 + chunks.len() as u64);
        assert_eq!(nand_run.journal(), nand_one.journal());
        assert!(nand_one.journal().len() > g.pages_per_block as usize, "the run fills more than a block");
        for b in 0..g.total_blocks() {
            let block = BlockId(b);
            assert_eq!(run.summary(block), one.summary(block));
            assert_eq!((run.state(block), run.live_bytes(block)), (one.state(block), one.live_bytes(block)));
        }
        assert_eq!((run.free_blocks(), run.unwritten_bytes()), (one.free_blocks(), one.unwritten_bytes()));
        run.check(&nand_run).unwrap();
    }

    /// Sealing a block programs its padded last page, and like any page
    /// program that passes the stripe on: the next chunk goes to the next
    /// die when that die's open block can take it, not to a new block of
    /// the same die (a sequential read would otherwise find a unit off the
    /// stripe at every block's end).
    #[test]
    fn a_chunk_after_a_sealed_block_goes_to_the_next_die() {
        let g = geometry();
        let mut space = Space::new(&g);
        let mut nand = NandArray::new(&g);
        let block_bytes = g.pages_per_block * g.page_bytes;
        let die = |e: &NandExtent| (e.block.0 / g.blocks_per_die) as usize;
        // Each die's open block's write point, as the extents show it.
        let mut open: Vec<Option<u32>> = vec![None; g.dies() as usize];
        let mut same_die = 0;
        let mut previous: Option<NandExtent> = None;
        for (i, len) in lengths().into_iter().enumerate() {
            let e = space.append(&mut nand, ChunkId::from_index(i).unwrap(), len, i as u64 + 1, 0).unwrap();
            if let Some(p) = previous {
                let next = (die(&p) + 1) % open.len();
                let next_takes = matches!(open[next], Some(point) if block_bytes - point >= len);
                if e.block != p.block && die(&e) == die(&p) {
                    assert!(!next_takes, "{p:?} then {e:?}: die {next} had room");
                    same_die += 1;
                }
            }
            open[die(&e)] = Some(e.offset + e.len);
            previous = Some(e);
        }
        println!("block ends kept on the same die (the next one had no room): {same_die}");
        space.check(&nand).unwrap();
    }

    #[test]
    fn appends_inside_a_page_program_nothing_and_keep_the_die() {
        let g = geometry();
        let mut space = Space::new(&g);
        let mut nand = NandArray::new(&g);
        let id = |i| ChunkId::from_index(i).unwrap();
        // Three chunks inside the first page of die 0's block, then one
        // that completes it: only that one programs, and the write point
        // moves to die 1.
        let mut placed = Vec::new();
        for (i, len) in [1000, 1000, 2000, 96].into_iter().enumerate() {
            placed.push(space.append(&mut nand, id(i), len, i as u64 + 1, 0).unwrap());
            let programs = if i < 3 { 0 } else { 1 };
            assert_eq!(nand.journal().len(), programs, "after chunk {i}");
        }
        let block = placed[0].block;
        assert!(placed.iter().all(|e| e.block == block));
        assert_eq!(placed.iter().map(|e| e.offset).collect::<Vec<_>>(), [0, 1000, 2000, 4000]);
        assert_eq!(nand.programmed_pages(block), 1);
        assert_eq!((space.live_bytes(block), space.summary(block).len()), (4096, 4));
        let next = space.append(&mut nand, id(4), 10, 5, 0).unwrap();
        assert_ne!(nand.die_of(next.block), nand.die_of(block), "a full page moves the write point on");
        space.check(&nand).unwrap();
    }

    /// A die with no erased block but a dead one erases it and keeps its
    /// place in the stripe: the next die has a free block, and a write that
    /// passed die 0 by would land there, off the stripe.
    #[test]
    fn a_die_out_of_free_blocks_erases_its_dead_one_rather_than_be_passed_by() {
        let g = geometry();
        let mut space = Space::new(&g);
        let mut nand = NandArray::new(&g);
        let page = g.page_bytes;
        let chunks = (g.total_blocks() * g.pages_per_block) as usize;
        let placed: Vec<NandExtent> = (0..chunks)
            .map(|i| space.append(&mut nand, ChunkId::from_index(i).unwrap(), page, i as u64 + 1, 0).unwrap())
            .collect();
        assert_eq!(space.free_blocks(), 0);
        let (die0, die1) = (placed[0].block, placed[1].block);
        assert_eq!((nand.die_of(die0).0, nand.die_of(die1).0), (0, 1));
        for e in placed.iter().filter(|e| e.block == die0 || e.block == die1) {
            space.invalidate(*e);
        }
        let summary = space.take_summary(die1);
        space.erase(&mut nand, die1, summary);
        nand.take_journal(Vec::new());
        let next = space.append(&mut nand, ChunkId::from_index(chunks).unwrap(), page, chunks as u64 + 1, 0).unwrap();
        assert_eq!(next.block, die0, "die 0 reuses its dead block");
        assert_eq!(nand.journal()[0], crate::nand::NandOp::Erase(crate::units::DieId(0)));
        assert_eq!(space.free_blocks(), 1, "die 1's erased block is still free");
        space.check(&nand).unwrap();
    }
}
