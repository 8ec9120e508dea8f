//! The greedy victim index: sealed blocks bucketed by live bytes.
//!
//! Greedy GC cleans the sealed block with the fewest live bytes (among
//! equals, by [`victim::tie_key`]) that has any dead bytes. Every invalidation
//! lowers some block's live bytes, so the index must make that update
//! cheap: a block moves between buckets of `2^shift` live bytes in O(1),
//! and finding the victim scans only the lowest bucket that holds a
//! reclaimable block. Buckets are ordered by live bytes, so the exact
//! minimum is in that bucket. An ordered tree gave the same choice but
//! cost a removal and an insertion on every host overwrite.

use crate::ftl::victim;

/// The bound on buckets for a small drive (under 2048 blocks): coarse
/// enough that most invalidations leave a block in its bucket (a 2 MiB
/// block's buckets are then 32 KiB, eight 4 KiB units: with 4 KiB buckets
/// every content-free overwrite moved a block).
const MIN_BUCKETS: u32 = 128;

/// Blocks per bucket, on average over all buckets, that a larger drive
/// gets more buckets to keep: the victim scan reads the lowest bucket
/// whole, so its length must not grow with the drive. With 65 buckets
/// at full size (123k blocks of the sf2281) that scan took a fifth of
/// content-free CPU time (perf); with 4097 it takes 3 %.
const BLOCKS_PER_BUCKET: u32 = 16;

/// The bound on buckets for the largest drives (a bucket's `Vec` is 24
/// bytes).
const MAX_BUCKETS: u32 = 1 << 14;

/// An indexed block with its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Entry {
    live: u32,
    data: u32,
    seq: u64,
    block: u32,
}

impl Entry {
    fn reclaimable(&self) -> bool {
        self.live < self.data
    }
}

/// Where an indexed block's entry sits: bucket and position.
const NOT_INDEXED: u32 = u32::MAX;

/// Sealed blocks by live bytes (see the module docs).
#[derive(Clone, Debug, Default)]
pub struct GreedyIndex {
    shift: u32,
    buckets: Vec<Vec<Entry>>,
    /// Per block: (bucket, position in it), or `NOT_INDEXED`.
    slot: Vec<(u32, u32)>,
    /// Bit `b` set when bucket `b` is not empty.
    nonempty: Vec<u64>,
    len: usize,
}

impl GreedyIndex {
    /// An empty index for `blocks` blocks of at most `block_bytes` live bytes.
    pub fn new(blocks: u32, block_bytes: u32) -> Self {
        let most = (blocks / BLOCKS_PER_BUCKET).clamp(MIN_BUCKETS, MAX_BUCKETS);
        let mut shift = 0;
        while (block_bytes >> shift) >= most {
            shift += 1;
        }
        let buckets = (block_bytes >> shift) as usize + 1;
        GreedyIndex {
            shift,
            buckets: vec![Vec::new(); buckets],
            slot: vec![(NOT_INDEXED, 0); blocks as usize],
            nonempty: vec![0; buckets.div_ceil(64)],
            len: 0,
        }
    }

    /// Resident bytes per block: its slot, and its entry in a bucket
    /// (buckets grow by doubling, so half again on average).
    pub fn bytes_per_block() -> u64 {
        (std::mem::size_of::<(u32, u32)>() + std::mem::size_of::<Entry>() * 3 / 2) as u64
    }

    /// Blocks indexed.
    pub fn count(&self) -> usize {
        self.len
    }

    /// Whether `block` is indexed.
    pub fn contains(&self, block: u32) -> bool {
        self.slot[block as usize].0 != NOT_INDEXED
    }

    /// Enters a sealed block with `live` of `data` bytes, sealed `seq`-th.
    pub fn insert(&mut self, block: u32, live: u32, data: u32, seq: u64) {
        debug_assert!(!self.contains(block), "block indexed twice");
        self.push(Entry { live, data, seq, block });
        self.len += 1;
    }

    fn push(&mut self, e: Entry) {
        let b = (e.live >> self.shift) as usize;
        let bucket = &mut self.buckets[b];
        self.slot[e.block as usize] = (b as u32, bucket.len() as u32);
        bucket.push(e);
        self.nonempty[b / 64] |= 1 << (b % 64);
    }

    /// Takes `block`'s entry out of its bucket.
    fn take(&mut self, block: u32) -> Entry {
        let (b, pos) = std::mem::replace(&mut self.slot[block as usize], (NOT_INDEXED, 0));
        let bucket = &mut self.buckets[b as usize];
        let e = bucket.swap_remove(pos as usize);
        if let Some(moved) = bucket.get(pos as usize) {
            self.slot[moved.block as usize].1 = pos;
        }
        if bucket.is_empty() {
            self.nonempty[b as usize / 64] &= !(1 << (b % 64));
        }
        e
    }

    /// `block` now has `live` live bytes (fewer than before).
    pub fn set_live(&mut self, block: u32, live: u32) {
        let (b, pos) = self.slot[block as usize];
        debug_assert_ne!(b, NOT_INDEXED, "updating a block not indexed");
        if live >> self.shift == b {
            self.buckets[b as usize][pos as usize].live = live;
        } else {
            let mut e = self.take(block);
            e.live = live;
            self.push(e);
        }
    }

    /// Loads `block`'s slot and entry (into cache, ahead of an update):
    /// its live bytes when indexed, else 0.
    pub fn peek(&self, block: u32) -> u32 {
        let (b, pos) = self.slot[block as usize];
        self.buckets.get(b as usize).and_then(|bucket| bucket.get(pos as usize)).map_or(0, |e| e.live)
    }

    /// Takes `block` out of the index.
    pub fn remove(&mut self, block: u32) {
        self.take(block);
        self.len -= 1;
    }

    /// The reclaimable block with the fewest live bytes; among equals, by
    /// [`victim::tie_key`] of its live bytes, `die_free` (a block's die's
    /// free blocks) and the seal order.
    pub fn victim(&self, die_free: impl Fn(u32) -> u32) -> Option<u32> {
        for (w, &word) in self.nonempty.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                let b = w * 64 + bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let best = self.buckets[b]
                    .iter()
                    .filter(|e| e.reclaimable())
                    .min_by_key(|e| (e.live, victim::tie_key(e.live, die_free(e.block), e.seq)));
                if let Some(e) = best {
                    return Some(e.block);
                }
            }
        }
        None
    }

    /// Indexed blocks that hold data but no live byte, oldest seal first.
    pub fn emptied(&self) -> Vec<u32> {
        let mut out: Vec<&Entry> = self.buckets[0].iter().filter(|e| e.live == 0 && e.data > 0).collect();
        out.sort_unstable_by_key(|e| e.seq);
        out.into_iter().map(|e| e.block).collect()
    }

    /// An indexed block that holds data but no live byte and passes
    /// `keep`: the first in its bucket, so a search stops at the first
    /// match (a full TRIM puts every block in that bucket).
    pub fn emptied_where(&self, keep: impl Fn(u32) -> bool) -> Option<u32> {
        self.buckets[0].iter().find(|e| e.live == 0 && e.data > 0 && keep(e.block)).map(|e| e.block)
    }

    /// Heap bytes held.
    pub fn heap_bytes(&self) -> u64 {
        let entries: usize = self.buckets.iter().map(|b| b.capacity()).sum();
        (entries * std::mem::size_of::<Entry>()
            + self.buckets.capacity() * std::mem::size_of::<Vec<Entry>>()
            + self.slot.capacity() * std::mem::size_of::<(u32, u32)>()
            + self.nonempty.capacity() * 8) as u64
    }

    /// Forgets every block.
    pub fn clear(&mut self) {
        self.buckets.iter_mut().for_each(Vec::clear);
        self.slot.fill((NOT_INDEXED, 0));
        self.nonempty.fill(0);
        self.len = 0;
    }

    /// Every indexed block as `(block, live, data, seq)`, in no set order.
    pub fn entries(&self) -> impl Iterator<Item = (u32, u32, u32, u64)> + '_ {
        self.buckets.iter().flatten().map(|e| (e.block, e.live, e.data, e.seq))
    }

    /// Checks that every entry sits where its slot says and in the bucket
    /// of its live bytes. Returns the first fault.
    pub fn check(&self) -> Result<(), String> {
        let mut count = 0;
        for (b, bucket) in self.buckets.iter().enumerate() {
            if bucket.is_empty() == (self.nonempty[b / 64] & (1 << (b % 64)) != 0) {
                return Err(format!("greedy bucket {b}: non-empty bit does not match"));
            }
            for (pos, e) in bucket.iter().enumerate() {
                if (e.live >> self.shift) as usize != b || self.slot[e.block as usize] != (b as u32, pos as u32) {
                    return Err(format!("greedy index: block {} misplaced", e.block));
                }
                count += 1;
            }
        }
        let slots = self.slot.iter().filter(|s| s.0 != NOT_INDEXED).count();
        if count != self.len || slots != self.len {
            return Err(format!("greedy index: {count} entries, {slots} slots, length {}", self.len));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The index chooses exactly what a scan of every block would.
        #[test]
        /// With 64 slots the index has 65 buckets of 64 bytes; with 16384
        /// (a large drive's count, 64 of them used) 513 of 8 bytes.
        fn victim_matches_a_full_scan(
            ops in prop::collection::vec((0u32..64, 0u32..4096, 0u8..3), 1..400),
            slots in prop::sample::select(vec![64u32, 1 << 14]),
        ) {
            let mut index = GreedyIndex::new(slots, 4096);
            // Reference: block -> (live, data, seq).
            let mut blocks: Vec<Option<(u32, u32, u64)>> = vec![None; 64];
            let mut seq = 0;
            for (block, value, op) in ops {
                match (op, blocks[block as usize]) {
                    (0, None) => {
                        seq += 1;
                        let data = value.max(1);
                        index.insert(block, data - value / 2, data, seq);
                        blocks[block as usize] = Some((data - value / 2, data, seq));
                    }
                    (1, Some((live, data, s))) => {
                        let new = live.min(value);
                        index.set_live(block, new);
                        blocks[block as usize] = Some((new, data, s));
                    }
                    (2, Some(_)) => {
                        index.remove(block);
                        blocks[block as usize] = None;
                    }
                    _ => {}
                }
                prop_assert!(index.check().is_ok());
                // Eight blocks a die; die d has (d x 3) % 5 free blocks.
                let die_free = |b: u32| (b / 8 * 3) % 5;
                let want = blocks
                    .iter()
                    .enumerate()
                    .filter_map(|(b, e)| e.map(|(l, d, s)| (l, d, s, b as u32)))
                    .filter(|&(l, d, _, _)| l < d)
                    .min_by_key(|&(l, _, s, b)| (l, if l == 0 { die_free(b) } else { 0 }, s))
                    .map(|(_, _, _, b)| b);
                prop_assert_eq!(index.victim(die_free), want);
            }
        }
    }
}
