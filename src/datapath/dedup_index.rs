//! The dedup index: an open-addressing hash set of chunk ids keyed by the
//! fingerprints the chunk store keeps beside its records.
//!
//! A slot is 0 (empty) or `tag | displacement | (index + 1)`, high bits to
//! low. The id needs only as many bits as the store has records; the spare
//! high bits carry, split between them, how far the entry sits from its
//! home slot (saturating) and bits of the fingerprint's hash. Linear
//! probing at load <= 3/4, removal by backward shift (no tombstones).
//!
//! The displacement spares two kinds of fingerprint fetch, each a random
//! read into a table as large as the drive's chunk count: a lookup fetches
//! only entries with its own home slot and tag, and a removal decides
//! whether to shift an entry back from its displacement alone. Only an
//! entry whose displacement saturated is resolved through its
//! fingerprint. At a full 240 GB drive, 26 id bits leave 6: 3 of
//! displacement (exact up to 6 slots) and a 3-bit tag; at its load of
//! 0.44, about 0.4 % of entries sit 7 or more slots from home (6 % at
//! load 3/4, by simulated random insertion).

use serde::{Deserialize, Serialize};

use crate::units::{ChunkId, Fingerprint};

/// Most displacement bits an index uses.
const MAX_DISP_BITS: u32 = 6;
/// Most bits of a slot given to displacement and tag together.
const MAX_SPARE_BITS: u32 = 16;

/// How a slot's bits divide: `tag | disp | id`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Layout {
    /// High bits holding bits of the fingerprint's hash (0: no tag).
    pub tag_bits: u8,
    /// Bits below the tag holding the displacement (0: none).
    pub disp_bits: u8,
}

impl Layout {
    /// The layout for ids below `records + 1`: the spare bits split
    /// evenly, displacement first.
    pub fn for_records(records: usize) -> Layout {
        let id_bits = usize::BITS - (records + 1).leading_zeros();
        let spare = 32u32.saturating_sub(id_bits).min(MAX_SPARE_BITS);
        let disp = spare.div_ceil(2).min(MAX_DISP_BITS);
        Layout { tag_bits: (spare - disp) as u8, disp_bits: disp as u8 }
    }

    fn id_bits(self) -> u32 {
        32 - u32::from(self.tag_bits) - u32::from(self.disp_bits)
    }

    /// Whether an image's layout is one this code can probe.
    pub fn is_valid(self) -> bool {
        u32::from(self.disp_bits) <= MAX_DISP_BITS
            && u32::from(self.tag_bits) + u32::from(self.disp_bits) <= MAX_SPARE_BITS
    }
}

/// See the module docs.
#[derive(Clone, Debug, Default)]
pub(crate) struct FlatIndex {
    /// Power-of-two sized.
    slots: Vec<u32>,
    /// Occupied slots. Invariant: len <= 3/4 of slots.len().
    len: usize,
    layout: Layout,
}

impl FlatIndex {
    /// Slots the index has grown to once it holds `len` ids (it doubles
    /// from 1024 whenever it would pass 3/4 full).
    pub fn slots_for(len: u64) -> u64 {
        let mut slots = 1024;
        while len * 4 > slots * 3 {
            slots *= 2;
        }
        slots
    }

    /// An empty index laid out for ids below `records + 1`.
    pub fn for_records(records: usize) -> Self {
        FlatIndex { layout: Layout::for_records(records), ..Default::default() }
    }

    /// An index as an image holds it (see [`FlatIndex::well_formed`]).
    pub fn from_parts(slots: Vec<u32>, len: usize, layout: Layout) -> Self {
        FlatIndex { slots, len, layout }
    }

    /// An empty index with this one's layout.
    pub fn emptied(&self) -> Self {
        FlatIndex { layout: self.layout, ..Default::default() }
    }

    /// The slots, as an image stores them.
    pub fn slots(&self) -> &[u32] {
        &self.slots
    }

    /// Entries held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// How the slots' bits divide.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Slots allocated (heap accounting).
    pub fn slot_capacity(&self) -> usize {
        self.slots.capacity()
    }

    fn mask(&self) -> usize {
        self.slots.len() - 1
    }

    fn id_mask(&self) -> u32 {
        u32::MAX >> (32 - self.layout.id_bits())
    }

    /// Largest displacement field: "this far or further".
    fn saturated(&self) -> u32 {
        (1 << self.layout.disp_bits) - 1
    }

    fn tag(&self, hash: u64) -> u32 {
        if self.layout.tag_bits == 0 {
            0
        } else {
            (hash >> (64 - u32::from(self.layout.tag_bits))) as u32
        }
    }

    fn slot_tag(&self, slot: u32) -> u32 {
        if self.layout.tag_bits == 0 {
            0
        } else {
            slot >> (32 - u32::from(self.layout.tag_bits))
        }
    }

    fn disp_field(&self, slot: u32) -> u32 {
        (slot >> self.layout.id_bits()) & self.saturated()
    }

    /// `slot` with its displacement field set to `disp` (saturating).
    fn with_disp(&self, slot: u32, disp: usize) -> u32 {
        if self.layout.disp_bits == 0 {
            return slot;
        }
        let field = (disp as u32).min(self.saturated());
        (slot & !(self.saturated() << self.layout.id_bits())) | field << self.layout.id_bits()
    }

    /// How far the entry in slot `at` sits from its home, from its
    /// displacement field or, when that saturated, its fingerprint.
    fn displacement(&self, slot: u32, at: usize, fps: &[Fingerprint]) -> usize {
        let field = self.disp_field(slot);
        if self.layout.disp_bits > 0 && field < self.saturated() {
            return field as usize;
        }
        let home = fps[self.id(slot).index()].hash64() as usize & self.mask();
        at.wrapping_sub(home) & self.mask()
    }

    /// The chunk id a used slot holds.
    fn id(&self, slot: u32) -> ChunkId {
        ChunkId::from_index((slot & self.id_mask()) as usize - 1).expect("a used slot holds an id")
    }

    /// What the slot a hash's probe starts at holds (0 while the table is
    /// empty): the first load of a lookup, for warming.
    pub fn home_slot(&self, hash: u64) -> u32 {
        self.slots.get(hash as usize & self.slots.len().wrapping_sub(1)).copied().unwrap_or(0)
    }

    /// The id whose fingerprint is `fp`, if the index holds one.
    pub fn find(&self, fp: &Fingerprint, fps: &[Fingerprint]) -> Option<ChunkId> {
        if self.slots.is_empty() {
            return None;
        }
        let hash = fp.hash64();
        let tag = self.tag(hash);
        let saturated = self.saturated() as usize;
        let mut i = hash as usize & self.mask();
        for k in 0.. {
            let slot = self.slots[i];
            if slot == 0 {
                return None;
            }
            // Only an entry with this home (displacement k) and tag can match.
            let same_home = self.layout.disp_bits == 0 || self.disp_field(slot) as usize == k.min(saturated);
            if same_home && self.slot_tag(slot) == tag {
                let id = self.id(slot);
                if fps[id.index()] == *fp {
                    return Some(id);
                }
            }
            i = (i + 1) & self.mask();
        }
        unreachable!("a probe ends at an empty slot")
    }

    /// Enters `id`, whose fingerprint is `fps[id]` and not yet present.
    pub fn insert(&mut self, id: ChunkId, fps: &[Fingerprint]) {
        if (id.index() + 1) as u64 > u64::from(self.id_mask()) {
            // More records than the layout left room for: give the id more bits.
            self.rebuild(Layout::for_records(id.index() + 1), self.slots.len(), fps);
        }
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            self.rebuild(self.layout, (self.slots.len() * 2).max(1024), fps);
        }
        self.place(id, fps);
        self.len += 1;
    }

    fn place(&mut self, id: ChunkId, fps: &[Fingerprint]) {
        let hash = fps[id.index()].hash64();
        let home = hash as usize & self.mask();
        let mut i = home;
        while self.slots[i] != 0 {
            i = (i + 1) & self.mask();
        }
        let tag = if self.layout.tag_bits == 0 { 0 } else { self.tag(hash) << (32 - u32::from(self.layout.tag_bits)) };
        self.slots[i] = self.with_disp(tag | (id.index() as u32 + 1), i.wrapping_sub(home) & self.mask());
    }

    /// Re-enters every id into `size` slots laid out by `layout`.
    fn rebuild(&mut self, layout: Layout, size: usize, fps: &[Fingerprint]) {
        // Straight from the old table into the new one, without a list of
        // ids beside them (200 MB at a full 240 GB drive).
        let old = std::mem::replace(&mut self.slots, vec![0; size]);
        crate::huge_pages::advise(&self.slots);
        let old_ids = self.id_mask();
        self.layout = layout;
        for slot in old.into_iter().filter(|&s| s != 0) {
            let id = ChunkId::from_index((slot & old_ids) as usize - 1).expect("a used slot holds an id");
            self.place(id, fps);
        }
    }

    /// Removes `id` (which must be present), shifting later entries of the
    /// probe run back so lookups never need tombstones.
    pub fn remove(&mut self, id: ChunkId, fps: &[Fingerprint]) {
        let mask = self.mask();
        let raw = id.index() as u32 + 1;
        let mut i = fps[id.index()].hash64() as usize & mask;
        while self.slots[i] & self.id_mask() != raw {
            debug_assert!(self.slots[i] != 0, "removing a chunk the index does not hold");
            i = (i + 1) & mask;
        }
        self.slots[i] = 0;
        self.len -= 1;
        let mut hole = i;
        let mut j = (i + 1) & mask;
        while self.slots[j] != 0 {
            let slot = self.slots[j];
            // Move the entry into the hole unless its home lies cyclically in (hole, j].
            let dist_home = self.displacement(slot, j, fps);
            let dist_hole = j.wrapping_sub(hole) & mask;
            if dist_home >= dist_hole {
                self.slots[hole] = self.with_disp(slot, dist_home - dist_hole);
                self.slots[j] = 0;
                hole = j;
            }
            j = (j + 1) & mask;
        }
    }

    /// Whether the layout is valid and every used slot names a record
    /// below `records`. (Whether each entry sits where its fields say is
    /// checked by finding every live chunk: see `ChunkStore::check_index`.)
    pub fn well_formed(&self, records: usize) -> bool {
        let used = self.slots.iter().filter(|&&s| s != 0).count();
        self.layout.is_valid()
            && (self.slots.is_empty() || self.slots.len().is_power_of_two())
            && used == self.len
            && (self.slots.is_empty() || used < self.slots.len())
            && self.slots.iter().filter(|&&s| s != 0).all(|&s| {
                let raw = (s & self.id_mask()) as usize;
                raw >= 1 && raw <= records
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_split_the_spare_bits() {
        assert_eq!(Layout::for_records(4000), Layout { tag_bits: 10, disp_bits: 6 });
        assert_eq!(Layout::for_records(usize::MAX >> 1), Layout { tag_bits: 0, disp_bits: 0 });
        assert!(!Layout { tag_bits: 12, disp_bits: 6 }.is_valid());
    }

    #[test]
    fn saturated_displacements_shift_back_through_the_fingerprint() {
        // Every fingerprint homes at slot 5 (the hash is its first 8
        // bytes) with the same tag: displacements run past what 3 bits
        // hold, and each removal shifts every later entry back.
        let fps: Vec<Fingerprint> = (0..40u64)
            .map(|n| {
                let mut f = [0u8; 16];
                f[..8].copy_from_slice(&5u64.to_le_bytes());
                f[8..].copy_from_slice(&n.to_le_bytes());
                Fingerprint(f)
            })
            .collect();
        // 26 id bits, as at a full 240 GB drive.
        let mut index = FlatIndex::for_records((1 << 26) - 2);
        assert_eq!(index.layout(), Layout { tag_bits: 3, disp_bits: 3 });
        let ids: Vec<ChunkId> = (0..40).map(|i| ChunkId::from_index(i).unwrap()).collect();
        for &id in &ids {
            index.insert(id, &fps);
        }
        for (n, &id) in ids.iter().enumerate().filter(|(n, _)| n % 2 == 0) {
            index.remove(id, &fps);
            for (m, &other) in ids.iter().enumerate() {
                let held = m > n || m % 2 == 1;
                assert_eq!(index.find(&fps[m], &fps), held.then_some(other), "after removing {n}, id {m}");
            }
        }
        assert!(index.well_formed(40));
        assert_eq!(index.len(), 20);
    }
}
