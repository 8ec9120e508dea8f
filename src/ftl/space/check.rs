//! The space's self-checks: accounting ([`Space::check`]) and the shape of
//! state read from an image ([`Space::check_shape`]).

use std::collections::VecDeque;

use super::{BlockState, Space};
use crate::config::Geometry;
use crate::nand::NandArray;

impl Space {
    /// Checks free-list and state accounting; returns the first fault.
    pub fn check(&self, nand: &NandArray) -> Result<(), String> {
        let listed: usize = self.free.iter().map(VecDeque::len).sum();
        let free_state = self.meta.iter().filter(|m| m.state == BlockState::Free).count();
        if listed != self.free_count as usize || free_state != listed {
            return Err(format!(
                "free accounting: counter {}, listed {listed}, in Free state {free_state}",
                self.free_count
            ));
        }
        for (die, list) in self.free.iter().enumerate() {
            for b in list {
                if (b.0 / self.blocks_per_die) as usize != die || nand.programmed_pages(*b) != 0 {
                    return Err(format!("free block {} is on die {die}'s list but not an erased block of it", b.0));
                }
            }
        }
        let open_state = self.meta.iter().filter(|m| m.state == BlockState::Open).count();
        if open_state != self.open.iter().flatten().count() {
            return Err(format!(
                "{open_state} blocks in Open state, {} open slots",
                self.open.iter().flatten().count()
            ));
        }
        self.greedy.check()?;
        let indexed = self.meta.iter().filter(|m| m.indexed).count();
        let sealed = self.meta.iter().filter(|m| m.state == BlockState::Sealed).count();
        if indexed != self.greedy.count() || indexed != sealed {
            return Err(format!(
                "greedy index: {} entries, {indexed} blocks marked indexed, {sealed} sealed",
                self.greedy.count()
            ));
        }
        for (block, live, data, seq) in self.greedy.entries() {
            let m = &self.meta[block as usize];
            if !m.indexed || (m.live_bytes, m.data_bytes, m.sealed_seq) != (live, data, seq) {
                return Err(format!("greedy index entry of block {block} does not match the block"));
            }
        }
        for o in self.open.iter().flatten() {
            let whole = o.write_point / self.page_bytes;
            if nand.programmed_pages(o.block) != whole {
                return Err(format!(
                    "open block {}: write point {} but {} pages programmed",
                    o.block.0,
                    o.write_point,
                    nand.programmed_pages(o.block)
                ));
            }
        }
        Ok(())
    }

    /// Checks that state read from an image fits `geometry` and a chunk
    /// table of `records` entries, so that no later access goes out of
    /// bounds. [`Space::check`] then checks the accounting.
    pub fn check_shape(&self, geometry: &Geometry, frontiers: usize, records: usize) -> Result<(), String> {
        let fresh = Space::with_frontiers(geometry, frontiers);
        if (self.page_bytes, self.block_bytes, self.blocks_per_die)
            != (fresh.page_bytes, fresh.block_bytes, fresh.blocks_per_die)
            || self.meta.len() != fresh.meta.len()
            || self.free.len() != fresh.free.len()
            || self.open.len() != fresh.open.len()
            || self.cursor >= self.free.len()
        {
            return Err("block space does not match the geometry".into());
        }
        let blocks = self.meta.len() as u32;
        if self.free.iter().flatten().any(|b| b.0 >= blocks) {
            return Err("a free list names a block beyond the array".into());
        }
        for (slot, o) in self.open.iter().enumerate() {
            let Some(o) = o else { continue };
            let die = slot % self.free.len();
            if o.block.0 / self.blocks_per_die != die as u32
                || o.write_point > self.block_bytes
                || self.meta[o.block.0 as usize].state != BlockState::Open
            {
                return Err(format!("open block {} of die {die} is malformed", o.block.0));
            }
        }
        for (b, m) in self.meta.iter().enumerate() {
            if m.summary.iter().any(|id| id.index() >= records) {
                return Err(format!("block {b}'s summary names a chunk beyond the chunk table"));
            }
            if m.live_bytes > self.block_bytes || m.data_bytes > self.block_bytes {
                return Err(format!("block {b} counts more bytes than it holds"));
            }
        }
        Ok(())
    }
}
