//! The NAND array: erase-before-program, in-order page programs and
//! per-block program/erase counts.
//!
//! Owns physical state only. It does not know what is stored, which
//! chunks are live or which block is a good victim: that is the FTL's.
//! With memory media the stored bytes are kept per chunk
//! ([`crate::datapath::chunk_bytes`]), not per page.
//! A broken rule returns [`NandError`]; the FTL must never cause one.

use crate::config::Geometry;
use crate::error::NandError;
use crate::units::{BlockId, DieId, Divisor};

/// Physical state of one erase block.
#[derive(Clone, Debug, Default)]
struct Block {
    /// Pages programmed since the last erase. Invariant: <= pages_per_block.
    programmed: u32,
    /// Erases this block has had.
    pe_cycles: u32,
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
    /// Page reads by garbage collection: that many pages of a block on a
    /// die, one after another (a victim's live pages, journaled as one run).
    GcRead(DieId, u32),
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
    blocks: Vec<Block>,
    counters: NandCounters,
    /// Operations since the controller last drained them, in order.
    journal: Vec<NandOp>,
    /// Whether reads and programs now are garbage collection's.
    collecting: bool,
}

impl NandArray {
    /// Resident bytes of the array's per-block state.
    pub fn bytes_for(geometry: &Geometry) -> u64 {
        u64::from(geometry.total_blocks()) * std::mem::size_of::<Block>() as u64
    }

    /// A factory-fresh array (every block erased, no P/E cycles used).
    pub fn new(geometry: &Geometry) -> Self {
        NandArray {
            geometry: geometry.clone(),
            blocks_per_die: Divisor::new(geometry.blocks_per_die).expect("validated blocks per die"),
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

    /// Operations done since the last call, in order; the journal empties
    /// and goes on in `spare`'s buffer (hand back the last one returned,
    /// so neither is allocated again).
    pub fn take_journal(&mut self, mut spare: Vec<NandOp>) -> Vec<NandOp> {
        spare.clear();
        std::mem::replace(&mut self.journal, spare)
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

    /// Heap bytes held by the block records and the journal.
    pub fn heap_bytes(&self) -> u64 {
        (self.blocks.capacity() * std::mem::size_of::<Block>()
            + self.journal.capacity() * std::mem::size_of::<NandOp>()) as u64
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

    /// Programs `page` of `block`. Pages go in order.
    #[inline]
    pub fn program(&mut self, block: BlockId, page: u32) -> Result<(), NandError> {
        let pages = self.geometry.pages_per_block;
        let b = &mut self.blocks[block.0 as usize];
        if page != b.programmed || page >= pages {
            return Err(NandError::OutOfOrderProgram { block: block.0, page, next: b.programmed });
        }
        b.programmed += 1;
        self.counters.pages_programmed += 1;
        let die = self.die_of(block);
        self.journal.push(if self.collecting { NandOp::GcProgram(die) } else { NandOp::Program(die) });
        Ok(())
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
        self.journal.push(if self.collecting { NandOp::GcRead(die, 1) } else { NandOp::Read(die) });
    }

    /// [`NandArray::journal_read`] of `pages` pages of `block`.
    pub fn journal_reads(&mut self, block: BlockId, pages: u32) {
        self.counters.pages_read += u64::from(pages);
        let die = self.die_of(block);
        if self.collecting {
            if pages > 0 {
                self.journal.push(NandOp::GcRead(die, pages));
            }
        } else {
            self.journal.extend(std::iter::repeat_n(NandOp::Read(die), pages as usize));
        }
    }

    /// Erases `block`: every page programmable again, one more P/E cycle.
    pub fn erase(&mut self, block: BlockId) {
        let b = &mut self.blocks[block.0 as usize];
        b.programmed = 0;
        b.pe_cycles += 1;
        self.counters.erases += 1;
        self.journal.push(NandOp::Erase(self.die_of(block)));
    }
    /// Streams the counters and the blocks (programmed pages, P/E cycles)
    /// into an image section.
    pub fn write_image(&self, w: &mut dyn std::io::Write) -> std::io::Result<()> {
        let c = self.counters;
        for v in [c.pages_programmed, c.pages_read, c.erases] {
            w.write_all(&v.to_le_bytes())?;
        }
        for b in &self.blocks {
            w.write_all(&b.programmed.to_le_bytes())?;
            w.write_all(&b.pe_cycles.to_le_bytes())?;
        }
        Ok(())
    }

    /// Bytes [`NandArray::write_image`] writes for an array of `geometry`:
    /// three counters, then two words a block.
    pub fn image_bytes(geometry: &Geometry) -> u64 {
        24 + 8 * u64::from(geometry.total_blocks())
    }

    /// Reads what [`NandArray::write_image`] wrote for an array of
    /// `geometry` from `len` bytes, checking the length before the array is
    /// built (a config that claims more blocks than the image holds is
    /// refused, not allocated) and every block's page count.
    pub fn read_image(geometry: &Geometry, len: u64, r: &mut dyn std::io::Read) -> Result<Self, String> {
        let want = Self::image_bytes(geometry);
        if len != want {
            return Err(format!("{len} bytes, where {} blocks take {want}", geometry.total_blocks()));
        }
        let mut nand = NandArray::new(geometry);
        let mut word = [0u8; 8];
        let mut next = |r: &mut dyn std::io::Read| -> Result<u64, String> {
            r.read_exact(&mut word).map_err(|e| e.to_string())?;
            Ok(u64::from_le_bytes(word))
        };
        nand.counters = NandCounters { pages_programmed: next(r)?, pages_read: next(r)?, erases: next(r)? };
        for (i, b) in nand.blocks.iter_mut().enumerate() {
            let mut half = [0u8; 4];
            r.read_exact(&mut half).map_err(|e| e.to_string())?;
            b.programmed = u32::from_le_bytes(half);
            r.read_exact(&mut half).map_err(|e| e.to_string())?;
            b.pe_cycles = u32::from_le_bytes(half);
            if b.programmed > geometry.pages_per_block {
                return Err(format!("block {i} has {} programmed pages of {}", b.programmed, geometry.pages_per_block));
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
        let mut nand = NandArray::new(&geometry());
        nand.program(BlockId(1), 0).unwrap();
        assert!(matches!(nand.program(BlockId(1), 2), Err(NandError::OutOfOrderProgram { next: 1, .. })));
        assert!(matches!(nand.program(BlockId(1), 0), Err(NandError::OutOfOrderProgram { .. })));
        assert_eq!(nand.programmed_pages(BlockId(1)), 1);
        for p in 1..4 {
            nand.program(BlockId(1), p).unwrap();
        }
        assert!(nand.program(BlockId(1), 4).is_err(), "block full");
        nand.erase(BlockId(1));
        assert_eq!((nand.pe_cycles(BlockId(1)), nand.programmed_pages(BlockId(1))), (1, 0));
        nand.program(BlockId(1), 0).unwrap();
        assert_eq!(nand.counters().pages_programmed, 5);
        assert_eq!(nand.die_of(BlockId(3)), DieId(1));
    }
}
