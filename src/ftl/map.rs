//! The logical-to-physical map: one entry per mapping unit, pointing at the
//! chunk that holds its content, or at nothing (never written or trimmed).
//!
//! Owns only the mapping; reference counts live in the chunk store, which
//! the controller keeps in step with every change made here.

use serde::{Deserialize, Serialize};

use crate::units::{ChunkId, Lpn};

/// Unit -> chunk map. 4 bytes a unit.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct L2pMap {
    entries: Vec<Option<ChunkId>>,
}

impl L2pMap {
    /// A map of `units` unmapped entries.
    pub fn new(units: u64) -> Self {
        let entries = vec![None; units as usize];
        crate::ftl::huge_pages::advise(&entries);
        L2pMap { entries }
    }

    /// Units the map covers.
    pub fn units(&self) -> u64 {
        self.entries.len() as u64
    }

    /// The chunk `lpn` maps to. `lpn` must be in range (callers validate).
    pub fn get(&self, lpn: Lpn) -> Option<ChunkId> {
        self.entries[lpn.0 as usize]
    }

    /// Points `lpn` at `chunk`, returning what it pointed at before.
    pub fn set(&mut self, lpn: Lpn, chunk: Option<ChunkId>) -> Option<ChunkId> {
        std::mem::replace(&mut self.entries[lpn.0 as usize], chunk)
    }

    /// Every entry in unit order.
    pub fn iter(&self) -> impl Iterator<Item = Option<ChunkId>> + '_ {
        self.entries.iter().copied()
    }

    /// Units that map to a chunk.
    pub fn mapped(&self) -> u64 {
        self.entries.iter().filter(|e| e.is_some()).count() as u64
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> u64 {
        (self.entries.capacity() * std::mem::size_of::<Option<ChunkId>>()) as u64
    }

    /// Unmaps everything.
    pub fn clear(&mut self) {
        self.entries.fill(None);
    }
}
