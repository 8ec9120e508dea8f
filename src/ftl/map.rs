//! The logical-to-physical map: one entry per mapping unit, pointing at the
//! chunk that holds its content, or at nothing (never written or trimmed).
//!
//! Owns only the mapping; reference counts live in the chunk store, which
//! the controller keeps in step with every change made here.

use serde::{Deserialize, Serialize};

use crate::units::{ChunkId, Lpn};

/// Unit -> chunk map. 4 bytes a unit: each entry is its chunk id's raw
/// value, 0 when unmapped, so a new map is zeroed memory that the kernel
/// backs only as units are written (a full-size map is 234 MB). In images
/// it is the sequence of `Option<ChunkId>` it stands for.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct L2pMap {
    #[serde(with = "entries")]
    entries: Vec<u32>,
}

impl L2pMap {
    /// A map of `units` unmapped entries.
    pub fn new(units: u64) -> Self {
        let entries = vec![0; units as usize];
        crate::ftl::huge_pages::advise(&entries);
        L2pMap { entries }
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

/// The entries as the sequence of `Option<ChunkId>` they stand for.
mod entries {
    use serde::{Deserializer, Serializer};

    use crate::units::ChunkId;

    pub fn serialize<S: Serializer>(entries: &[u32], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(entries.iter().map(|&e| ChunkId::from_raw(e)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u32>, D::Error> {
        crate::ftl::huge_pages::deserialize_vec_with(d, |e: Option<ChunkId>| e.map_or(0, ChunkId::raw))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_hold_the_map_as_optional_chunk_ids() {
        let mut map = L2pMap::new(5);
        let (a, b) = (ChunkId::from_index(0).unwrap(), ChunkId::from_index(41).unwrap());
        assert_eq!(map.set(Lpn(1), Some(a)), None);
        map.set(Lpn(4), Some(b));
        assert_eq!(map.set(Lpn(4), Some(b)), Some(b));
        assert_eq!(map.mapped(), 2);
        let as_options: Vec<Option<ChunkId>> = map.iter().collect();
        assert_eq!(as_options, [None, Some(a), None, None, Some(b)]);
        let bytes = bincode::serialize(&map).unwrap();
        assert_eq!(bytes, bincode::serialize(&as_options).unwrap(), "the image format is unchanged");
        let back: L2pMap = bincode::deserialize(&bytes).unwrap();
        assert_eq!(back.iter().collect::<Vec<_>>(), as_options);
        assert!(bincode::deserialize::<L2pMap>(&bytes[..bytes.len() - 1]).is_err(), "a truncated map is an error");
        let mut huge = bytes.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(bincode::deserialize::<L2pMap>(&huge).is_err(), "a damaged length is an error");
    }
}
