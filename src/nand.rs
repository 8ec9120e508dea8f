//! The NAND array: erase-before-program, in-order page programs, per-block
//! program/erase counts, and (with [`Media::Memory`]) the programmed bytes.
//!
//! Owns physical state only. It does not know what the bytes mean, which
//! chunks are live or which block is a good victim: that is the FTL's.
//! A broken rule returns [`NandError`]; the FTL must never cause one.

use crate::config::{Geometry, Media};
use crate::error::NandError;
use crate::units::{BlockId, DieId, Divisor};

/// Physical state of one erase block.
#[derive(Clone, Debug, Default)]
struct Block {
    /// Pages programmed since the last erase. Invariant: <= pages_per_block.
    programmed: u32,
    /// Erases this block has had.
    pe_cycles: u32,
    /// Programmed bytes (memory media only); len = programmed x page_bytes.
    data: Vec<u8>,
}

/// Lifetime operation counts of the array.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NandCounters {
    /// Pages programmed.
    pub pages_programmed: u64,
    /// Pages read.
    pub pages_read: u64,
    /// Blocks erased.
    pub erases: u64,
}

/// A NAND operation, as the timing model needs to know it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NandOp {
    /// A page read on a die for the host (read-modify-write).
    Read(DieId),
    /// A page program of host data on a die.
    Program(DieId),
    /// A page read by garbage collection.
    GcRead(DieId),
    /// A page program of data garbage collection moved.
    GcProgram(DieId),
    /// A block erase on a die.
    Erase(DieId),
}

/// The whole NAND array.
#[derive(Clone, Debug)]
pub struct NandArray {
    geometry: Geometry,
    /// `geometry.blocks_per_die`, for [`NandArray::die_of`].
    blocks_per_die: Divisor,
    keep_data: bool,
    blocks: Vec<Block>,
    counters: NandCounters,
    /// Operations since the controller last drained them, in order.
    journal: Vec<NandOp>,
    /// Whether reads and programs now are garbage collection's.
    collecting: bool,
}

impl NandArray {
    /// A factory-fresh array (every block erased, no P/E cycles used).
    pub fn new(geometry: &Geometry, media: Media) -> Self {
        NandArray {
            geometry: geometry.clone(),
            blocks_per_die: Divisor::new(geometry.blocks_per_die).expect("validated blocks per die"),
            keep_data: media == Media::Memory,
            blocks: vec![Block::default(); geometry.total_blocks() as usize],
            counters: NandCounters::default(),
            journal: Vec::new(),
            collecting: false,
        }
    }

    /// Marks the reads and programs that follow as garbage collection's
    /// (`true`) or the host's (`false`).
    pub fn set_collecting(&mut self, collecting: bool) {
        self.collecting = collecting;
    }

    /// Operations done since the last call, in order; the journal empties.
    pub fn drain_journal(&mut self) -> std::vec::Drain<'_, NandOp> {
        self.journal.drain(..)
    }

    /// Operations recorded so far (since the last drain).
    pub fn journal(&self) -> &[NandOp] {
        &self.journal
    }

    /// The array's shape.
    pub fn geometry(&self) -> &Geometry {
        &self.geometry
    }

    /// The die a block sits on.
    pub fn die_of(&self, block: BlockId) -> DieId {
        DieId(block.0 / self.blocks_per_die)
    }

    /// Heap bytes held: `(block records, stored page bytes)`.
    pub fn heap_bytes(&self) -> (u64, u64) {
        let records = self.blocks.capacity() * std::mem::size_of::<Block>()
            + self.journal.capacity() * std::mem::size_of::<NandOp>();
        let data: usize = self.blocks.iter().map(|b| b.data.capacity()).sum();
        (records as u64, data as u64)
    }

    /// Pages programmed in `block` since its last erase.
    pub fn programmed_pages(&self, block: BlockId) -> u32 {
        self.blocks[block.0 as usize].programmed
    }

    /// Erase count of `block`.
    pub fn pe_cycles(&self, block: BlockId) -> u32 {
        self.blocks[block.0 as usize].pe_cycles
    }

    /// Erase counts of every block, in block order.
    pub fn pe_counts(&self) -> impl Iterator<Item = u32> + '_ {
        self.blocks.iter().map(|b| b.pe_cycles)
    }

    /// Lifetime operation counts.
    pub fn counters(&self) -> NandCounters {
        self.counters
    }

    /// Programs `page` of `block` with `data` (ignored for metadata-only
    /// media; when kept it must be one page long). Pages go in order.
    pub fn program(&mut self, block: BlockId, page: u32, data: &[u8]) -> Result<(), NandError> {
        let page_bytes = self.geometry.page_bytes as usize;
        let pages = self.geometry.pages_per_block;
        let keep = self.keep_data;
        let b = &mut self.blocks[block.0 as usize];
        if page != b.programmed || page >= pages {
            return Err(NandError::OutOfOrderProgram { block: block.0, page, next: b.programmed });
        }
        if keep {
            debug_assert_eq!(data.len(), page_bytes, "program data must be one page");
            if b.data.capacity() == 0 {
                b.data.reserve_exact(page_bytes * pages as usize);
            }
            b.data.extend_from_slice(data);
        }
        b.programmed += 1;
        self.counters.pages_programmed += 1;
        let die = self.die_of(block);
        self.journal.push(if self.collecting { NandOp::GcProgram(die) } else { NandOp::Program(die) });
        Ok(())
    }

    /// The bytes of a programmed page: `Some` with memory media, `None`
    /// without. Does not count a read: callers count the page reads a
    /// request needed with [`NandArray::count_reads`].
    pub fn page(&self, block: BlockId, page: u32) -> Result<Option<&[u8]>, NandError> {
        let page_bytes = self.geometry.page_bytes as usize;
        let b = &self.blocks[block.0 as usize];
        if page >= b.programmed {
            return Err(NandError::ReadUnprogrammed { block: block.0, page });
        }
        if !self.keep_data {
            return Ok(None);
        }
        let start = page as usize * page_bytes;
        Ok(Some(&b.data[start..start + page_bytes]))
    }

    /// Counts `pages` page reads whose timing the caller models itself
    /// (host reads); nothing is journaled.
    pub fn count_reads(&mut self, pages: u64) {
        self.counters.pages_read += pages;
    }

    /// Counts and journals a read of a page of `block` (GC and
    /// read-modify-write reads, timed with the command that caused them).
    pub fn journal_read(&mut self, block: BlockId) {
        self.counters.pages_read += 1;
        let die = self.die_of(block);
        self.journal.push(if self.collecting { NandOp::GcRead(die) } else { NandOp::Read(die) });
    }

    /// Erases `block`: every page programmable again, one more P/E cycle.
    pub fn erase(&mut self, block: BlockId) {
        let b = &mut self.blocks[block.0 as usize];
        b.programmed = 0;
        b.pe_cycles += 1;
        // Keep the buffer: a block is rewritten soon after it is erased.
        b.data.clear();
        self.counters.erases += 1;
        self.journal.push(NandOp::Erase(self.die_of(block)));
    }
    /// Streams the blocks (programmed pages, P/E cycles, page bytes with
    /// memory media) and the counters into an image section.
    pub fn write_image(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        let c = self.counters;
        for v in [c.pages_programmed, c.pages_read, c.erases] {
            w.write_all(&v.to_le_bytes())?;
        }
        for b in &self.blocks {
            w.write_all(&b.programmed.to_le_bytes())?;
            w.write_all(&b.pe_cycles.to_le_bytes())?;
            w.write_all(&b.data)?;
        }
        Ok(())
    }

    /// Reads what [`NandArray::write_image`] wrote for an array of
    /// `geometry` and `media`, checking every block's page count.
    pub fn read_image(geometry: &Geometry, media: Media, r: &mut dyn std::io::Read) -> Result<Self, String> {
        let mut nand = NandArray::new(geometry, media);
        let mut word = [0u8; 8];
        let mut next = |r: &mut dyn std::io::Read| -> Result<u64, String> {
            r.read_exact(&mut word).map_err(|e| e.to_string())?;
            Ok(u64::from_le_bytes(word))
        };
        nand.counters = NandCounters { pages_programmed: next(r)?, pages_read: next(r)?, erases: next(r)? };
        let page_bytes = geometry.page_bytes as usize;
        for (i, b) in nand.blocks.iter_mut().enumerate() {
            let mut half = [0u8; 4];
            r.read_exact(&mut half).map_err(|e| e.to_string())?;
            b.programmed = u32::from_le_bytes(half);
            r.read_exact(&mut half).map_err(|e| e.to_string())?;
            b.pe_cycles = u32::from_le_bytes(half);
            if b.programmed > geometry.pages_per_block {
                return Err(format!("block {i} has {} programmed pages of {}", b.programmed, geometry.pages_per_block));
            }
            if nand.keep_data {
                b.data = vec![0u8; b.programmed as usize * page_bytes];
                r.read_exact(&mut b.data).map_err(|e| e.to_string())?;
            }
        }
        Ok(nand)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn geometry() -> Geometry {
        Geometry {
            channels: 1,
            dies_per_channel: 2,
            blocks_per_die: 2,
            pages_per_block: 4,
            page_bytes: 512,
            pe_cycles: 10,
        }
    }

    #[test]
    fn pages_program_in_order_and_erase_resets() {
        let mut nand = NandArray::new(&geometry(), Media::Memory);
        let page = vec![7u8; 512];
        nand.program(BlockId(1), 0, &page).unwrap();
        assert!(matches!(nand.program(BlockId(1), 2, &page), Err(NandError::OutOfOrderProgram { next: 1, .. })));
        assert!(matches!(nand.program(BlockId(1), 0, &page), Err(NandError::OutOfOrderProgram { .. })));
        assert_eq!(nand.page(BlockId(1), 0).unwrap().unwrap(), &page[..]);
        assert!(nand.page(BlockId(1), 1).is_err());
        for p in 1..4 {
            nand.program(BlockId(1), p, &page).unwrap();
        }
        assert!(nand.program(BlockId(1), 4, &page).is_err(), "block full");
        nand.erase(BlockId(1));
        assert_eq!(nand.pe_cycles(BlockId(1)), 1);
        nand.program(BlockId(1), 0, &page).unwrap();
        assert_eq!(nand.counters().pages_programmed, 5);
        assert_eq!(nand.die_of(BlockId(3)), DieId(1));
    }

    #[test]
    fn metadata_only_keeps_no_bytes() {
        let mut nand = NandArray::new(&geometry(), Media::MetadataOnly);
        nand.program(BlockId(0), 0, &[]).unwrap();
        assert_eq!(nand.page(BlockId(0), 0).unwrap(), None);
    }
}
