//! The logical-to-physical map: one entry per mapping unit, pointing at the
//! chunk that holds its content, or at nothing (never written or trimmed).
//!
//! Owns only the mapping; reference counts live in the chunk store, which
//! the controller keeps in step with every change made here.

use std::io;

use crate::image::{read_table, write_table, Payload};
use crate::units::{ChunkId, Lpn};

/// Unit -> chunk map. 4 bytes a unit: each entry is its chunk id's raw
/// value, 0 when unmapped, so a new map is zeroed memory that the kernel
/// backs only as units are written (a full-size map is 234 MB). Images
/// hold the entries as they are.
#[derive(Clone, Debug)]
pub struct L2pMap {
    entries: Vec<u32>,
}

impl L2pMap {
    /// A map of `units` unmapped entries.
    pub fn new(units: u64) -> Self {
        let entries = vec![0; units as usize];
        crate::huge_pages::advise(&entries);
        L2pMap { entries }
    }

    /// Resident bytes of a map of `units` entries.
    pub fn bytes_for(units: u64) -> u64 {
        units * std::mem::size_of::<u32>() as u64
    }

    /// Writes the map as an image's `MAP ` payload: one table of entries.
    pub fn write_image(&self, w: &mut dyn io::Write) -> io::Result<()> {
        write_table(w, &self.entries)
    }

    /// Reads what [`L2pMap::write_image`] wrote.
    pub fn read_image(r: &mut Payload) -> Result<Self, String> {
        Ok(L2pMap { entries: read_table(r)? })
    }

    /// Units the map covers.
    pub fn units(&self) -> u64 {
        self.entries.len() as u64
    }

    /// The chunk `lpn` maps to. `lpn` must be in range (callers validate).
    pub fn get(&self, lpn: Lpn) -> Option<ChunkId> {
        ChunkId::from_raw(self.entries[lpn.0 as usize])
    }

    /// Points `lpn` at `chunk`, returning what it pointed at before.
    pub fn set(&mut self, lpn: Lpn, chunk: Option<ChunkId>) -> Option<ChunkId> {
        ChunkId::from_raw(std::mem::replace(&mut self.entries[lpn.0 as usize], chunk.map_or(0, ChunkId::raw)))
    }

    /// Every entry in unit order.
    pub fn iter(&self) -> impl Iterator<Item = Option<ChunkId>> + '_ {
        self.entries.iter().map(|&e| ChunkId::from_raw(e))
    }

    /// Units that map to a chunk.
    pub fn mapped(&self) -> u64 {
        self.entries.iter().filter(|&&e| e != 0).count() as u64
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> u64 {
        (self.entries.capacity() * std::mem::size_of::<u32>()) as u64
    }

    /// Unmaps everything.
    pub fn clear(&mut self) {
        self.entries.fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_hold_the_entries_as_a_table() {
        let mut map = L2pMap::new(5);
        let (a, b) = (ChunkId::from_index(0).unwrap(), ChunkId::from_index(41).unwrap());
        assert_eq!(map.set(Lpn(1), Some(a)), None);
        map.set(Lpn(4), Some(b));
        assert_eq!(map.set(Lpn(4), Some(b)), Some(b));
        assert_eq!(map.mapped(), 2);
        let mut bytes = Vec::new();
        map.write_image(&mut bytes).unwrap();
        assert_eq!(bytes.len(), 8 + 5 * 4, "a count, then 4 bytes an entry");
        let read = |bytes: &[u8]| L2pMap::read_image(&mut Payload::new(&mut &bytes[..], bytes.len() as u64));
        let back = read(&bytes).unwrap();
        assert_eq!(back.iter().collect::<Vec<_>>(), [None, Some(a), None, None, Some(b)]);
        assert!(read(&bytes[..bytes.len() - 1]).is_err(), "a truncated map is an error");
        let mut huge = bytes.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        let err = read(&huge).unwrap_err();
        assert!(err.contains("longer than what is left"), "a damaged count is refused before reserving: {err}");
    }
}
