//! The chunk store: one record per stored unit content, with its reference
//! count and NAND extent, and the dedup index that finds a chunk by
//! fingerprint.
//!
//! Owns chunk identity and reference counts. It does not own placement
//! (the controller decides extents) or the logical map.
//!
//! Memory: a record (packed extent and reference count) is 12 bytes, and with
//! dedup on each chunk's 16-byte fingerprint sits in a parallel table, so
//! GC, which reads records of whole blocks at random, finds twice as many
//! per cache line. The index (`dedup_index`) is a flat open-addressing
//! table of 4-byte slots (linear probing, load <= 3/4) that compares
//! fingerprints through the fingerprint table, so it costs 5.3 to 10.7
//! bytes per indexed chunk. A `DashMap<[u8; 16], u32>` costs 45-77 bytes an entry
//! (measured for the issue), which alone would exceed a 64-byte-per-unit
//! budget; the batch pipeline hashes in parallel and applies results in
//! order, so the index needs no concurrent writers.

use std::io;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::dedup_index::{FlatIndex, Layout};
use crate::image::{decode_from, encode_into, read_table, write_table, Payload, Plain};
use crate::units::{BlockId, ChunkId, ExtentPacking, Fingerprint, NandExtent};

/// One stored content, as the store hands it out (its fingerprint is kept
/// apart: see [`ChunkStore::fingerprint`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Chunk {
    /// Where its bytes are.
    pub extent: NandExtent,
    /// Map entries pointing here. Invariant: 0 exactly when the record is
    /// on the free list.
    pub refs: u32,
}

/// A chunk record: 12 bytes (packed extent, reference count).
#[derive(Clone, Copy, Debug, Default)]
struct Record {
    extent: [u32; 2],
    refs: u32,
}

impl Plain for Record {
    const BYTES: usize = 12;
    fn put(&self, out: &mut [u8]) {
        for (word, v) in out.chunks_exact_mut(4).zip([self.extent[0], self.extent[1], self.refs]) {
            word.copy_from_slice(&v.to_le_bytes());
        }
    }
    fn get(bytes: &[u8]) -> Option<Self> {
        let word = |i: usize| u32::get(&bytes[4 * i..4 * i + 4]);
        Some(Record { extent: [word(0)?, word(1)?], refs: word(2)? })
    }
}

impl Plain for Fingerprint {
    const BYTES: usize = 16;
    fn put(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.0);
    }
    fn get(bytes: &[u8]) -> Option<Self> {
        Some(Fingerprint(bytes.try_into().ok()?))
    }
}

impl Plain for ChunkId {
    const BYTES: usize = 4;
    fn put(&self, out: &mut [u8]) {
        self.raw().put(out);
    }
    fn get(bytes: &[u8]) -> Option<Self> {
        ChunkId::from_raw(u32::get(bytes)?)
    }
}

/// Chunk records, free ids and the dedup index.
#[derive(Clone, Debug, Default)]
pub struct ChunkStore {
    /// Whether chunks are entered in the index (dedup on).
    dedup: bool,
    packing: ExtentPacking,
    records: Vec<Record>,
    /// Fingerprint of each record's content; empty without dedup.
    fingerprints: Vec<Fingerprint>,
    free: Vec<ChunkId>,
    index: FlatIndex,
    /// Scratch copy of the records [`ChunkStore::gather_live`] reads.
    gathered: Vec<Record>,
}

/// What an image holds of a [`ChunkStore`] ahead of its tables.
#[derive(Serialize, Deserialize)]
struct StoreHead {
    dedup: bool,
    packing: ExtentPacking,
    index_len: usize,
    index_layout: Layout,
}

impl ChunkStore {
    /// An empty store whose extents pack by `packing`; with `dedup` every
    /// chunk is findable by fingerprint.
    pub fn new(dedup: bool, packing: ExtentPacking) -> Self {
        ChunkStore { dedup, packing, ..Default::default() }
    }

    /// An empty store with room reserved for `chunks` records, so the
    /// tables never grow by doubling past what a full drive needs (the
    /// reservation costs no memory until records are written).
    pub fn with_capacity(dedup: bool, packing: ExtentPacking, chunks: usize) -> Self {
        let records = Vec::with_capacity(chunks);
        crate::huge_pages::advise(&records);
        let fingerprints = Vec::with_capacity(if dedup { chunks } else { 0 });
        crate::huge_pages::advise(&fingerprints);
        ChunkStore {
            dedup,
            packing,
            records,
            fingerprints,
            index: FlatIndex::for_records(chunks),
            ..Default::default()
        }
    }

    /// Resident bytes of a store holding `chunks` chunks: records, and
    /// with `dedup` fingerprints and the index at the size it has grown to.
    /// (While the index doubles it holds both tables, but then the store
    /// holds at most 3/8 of the new table's chunks, so less in all.)
    pub fn bytes_for(chunks: u64, dedup: bool) -> u64 {
        let records = chunks * std::mem::size_of::<Record>() as u64;
        if !dedup {
            return records;
        }
        let fingerprints = chunks * std::mem::size_of::<Fingerprint>() as u64;
        let slots = FlatIndex::slots_for(chunks);
        records + fingerprints + slots * std::mem::size_of::<u32>() as u64
    }

    /// Writes the store as an image's `CHNK` payload: its settings, then
    /// the records, fingerprints, free ids and index slots as tables.
    pub fn write_image(&self, w: &mut dyn io::Write) -> io::Result<()> {
        let head = StoreHead {
            dedup: self.dedup,
            packing: self.packing,
            index_len: self.index.len(),
            index_layout: self.index.layout(),
        };
        encode_into(&mut *w, &head)?;
        write_table(w, &self.records)?;
        write_table(w, &self.fingerprints)?;
        write_table(w, &self.free)?;
        write_table(w, self.index.slots())
    }

    /// Reads what [`ChunkStore::write_image`] wrote. Only the encoding is
    /// checked here; [`ChunkStore::check_shape`] checks the content.
    pub fn read_image(r: &mut Payload) -> Result<Self, String> {
        let head: StoreHead = decode_from(&mut *r)?;
        let records = read_table(r).map_err(|e| format!("chunk records: {e}"))?;
        let fingerprints = read_table(r).map_err(|e| format!("fingerprints: {e}"))?;
        let free = read_table(r).map_err(|e| format!("free chunk ids: {e}"))?;
        let slots = read_table(r).map_err(|e| format!("dedup index: {e}"))?;
        Ok(ChunkStore {
            dedup: head.dedup,
            packing: head.packing,
            records,
            fingerprints,
            free,
            index: FlatIndex::from_parts(slots, head.index_len, head.index_layout),
            gathered: Vec::new(),
        })
    }

    /// Number of live chunks.
    pub fn live(&self) -> usize {
        self.records.len() - self.free.len()
    }

    /// Entries of the chunk table, live and free.
    pub fn records(&self) -> usize {
        self.records.len()
    }

    /// The record of `id`.
    pub fn get(&self, id: ChunkId) -> Chunk {
        let r = self.records[id.index()];
        Chunk { extent: self.packing.unpack(r.extent), refs: r.refs }
    }

    /// Appends `(id, extent)` of each of `ids` whose chunk is live in
    /// `block` to `out`, in order (a GC victim's summary: entries of chunks
    /// since freed or moved are dropped). The records are first copied in
    /// a tight loop of independent loads, so many of their cache misses
    /// overlap, then filtered and unpacked from the copy.
    pub fn gather_live(&mut self, ids: &[ChunkId], block: BlockId, out: &mut Vec<(ChunkId, NandExtent)>) {
        let mut copy = std::mem::take(&mut self.gathered);
        copy.clear();
        copy.extend(ids.iter().map(|id| self.records[id.index()]));
        for (&id, r) in ids.iter().zip(&copy) {
            if r.refs > 0 && self.packing.block_of(r.extent) == block {
                out.push((id, self.packing.unpack(r.extent)));
            }
        }
        self.gathered = copy;
    }

    /// Every live chunk with its id.
    pub fn iter_live(&self) -> impl Iterator<Item = (ChunkId, Chunk)> + '_ {
        self.records.iter().enumerate().filter(|(_, r)| r.refs > 0).filter_map(|(i, r)| {
            Some((ChunkId::from_index(i)?, Chunk { extent: self.packing.unpack(r.extent), refs: r.refs }))
        })
    }

    /// The live chunk holding content `fp`, if any (always `None` without dedup).
    pub fn find(&self, fp: &Fingerprint) -> Option<ChunkId> {
        self.index.find(fp, &self.fingerprints)
    }

    /// How this store packs extents.
    pub fn packing(&self) -> ExtentPacking {
        self.packing
    }

    /// The fingerprint of `id`'s content (dedup on), or `None`.
    pub fn fingerprint(&self, id: ChunkId) -> Option<&Fingerprint> {
        self.fingerprints.get(id.index())
    }

    /// Creates a chunk with one reference at `extent`, entered in the dedup
    /// index when dedup is on. Fails only when ids run out.
    pub fn insert(&mut self, fingerprint: Fingerprint, extent: NandExtent) -> Option<ChunkId> {
        let chunk = Record { extent: self.packing.pack(extent), refs: 1 };
        let id = match self.free.pop() {
            Some(id) => {
                self.records[id.index()] = chunk;
                if self.dedup {
                    self.fingerprints[id.index()] = fingerprint;
                }
                id
            }
            None => {
                let id = ChunkId::from_index(self.records.len())?;
                self.records.push(chunk);
                if self.dedup {
                    self.fingerprints.push(fingerprint);
                }
                id
            }
        };
        if self.dedup {
            self.index.insert(id, &self.fingerprints);
        }
        Some(id)
    }

    /// Loads what dropping a reference to `old` and looking up `fp` will
    /// read first: the old record and fingerprint and both home slots of
    /// the index. Returns a value derived from them so the loads are kept.
    pub fn warm(&self, old: Option<ChunkId>, fp: &Fingerprint) -> u32 {
        let mut x = 0;
        if let Some(id) = old {
            x ^= self.records[id.index()].refs;
            if self.dedup {
                x ^= self.index.home_slot(self.fingerprints[id.index()].hash64());
            }
        }
        if self.dedup {
            x ^= self.index.home_slot(fp.hash64());
        }
        x
    }

    /// Adds a reference to `id`.
    pub fn incref(&mut self, id: ChunkId) {
        let c = &mut self.records[id.index()];
        debug_assert!(c.refs > 0, "incref of a dead chunk");
        c.refs += 1;
    }

    /// Drops a reference to `id`; returns the chunk's extent when that was
    /// the last reference (the chunk is then gone and its id reusable).
    pub fn decref(&mut self, id: ChunkId) -> Option<NandExtent> {
        let c = &mut self.records[id.index()];
        debug_assert!(c.refs > 0, "decref of a dead chunk");
        c.refs -= 1;
        if c.refs > 0 {
            return None;
        }
        let extent = self.packing.unpack(c.extent);
        if self.dedup {
            self.index.remove(id, &self.fingerprints);
        }
        self.free.push(id);
        Some(extent)
    }

    /// Moves a live chunk to a new extent (GC relocation).
    pub fn relocate(&mut self, id: ChunkId, extent: NandExtent) {
        self.records[id.index()].extent = self.packing.pack(extent);
    }

    /// Heap bytes held: `(records, fingerprints, free ids, dedup index)`.
    /// Records and fingerprints count the entries written: their tables are
    /// reserved for a full drive up front, untouched (and not resident)
    /// beyond that.
    pub fn heap_bytes(&self) -> (u64, u64, u64, u64) {
        let bytes = |n: usize, each: usize| (n * each) as u64;
        (
            bytes(self.records.len(), std::mem::size_of::<Record>()),
            bytes(self.fingerprints.len(), std::mem::size_of::<Fingerprint>()),
            bytes(self.free.capacity(), std::mem::size_of::<ChunkId>()),
            bytes(self.index.slot_capacity(), std::mem::size_of::<u32>()),
        )
    }

    /// Forgets every chunk (secure erase).
    pub fn clear(&mut self) {
        self.records.clear();
        self.fingerprints.clear();
        self.free.clear();
        self.index = self.index.emptied();
    }

    /// Checks that the index holds exactly the indexed live chunks, each
    /// findable by its fingerprint. Returns a description of the first fault.
    /// The lookups (a cache miss each on a large drive) run in parallel.
    pub fn check_index(&self) -> Result<(), String> {
        let indexed = if self.dedup { self.live() } else { 0 };
        if indexed != self.index.len() {
            return Err(format!("dedup index holds {} entries, {indexed} live chunks are indexed", self.index.len()));
        }
        if !self.dedup {
            return Ok(());
        }
        let lost = (0..self.records.len()).into_par_iter().find_first(|&i| {
            self.records[i].refs > 0 && self.fingerprints.get(i).and_then(|fp| self.find(fp)) != ChunkId::from_index(i)
        });
        match lost {
            Some(i) => Err(format!("chunk {i} is live but the dedup index does not find it")),
            None => Ok(()),
        }
    }

    /// Checks that a table read from an image stays within `blocks` blocks
    /// of `block_bytes` and that every id it holds names one of its own
    /// records, so lookups cannot go out of bounds or loop.
    pub fn check_shape(
        &self,
        dedup: bool,
        packing: ExtentPacking,
        blocks: u32,
        block_bytes: u32,
    ) -> Result<(), String> {
        if self.dedup != dedup {
            return Err(format!("chunk table has dedup {}, the config {dedup}", self.dedup));
        }
        if self.packing != packing {
            return Err("chunk table packs extents for another geometry".into());
        }
        let n = self.records.len();
        if self.fingerprints.len() != if dedup { n } else { 0 } {
            return Err(format!("{} fingerprints for {n} chunk records", self.fingerprints.len()));
        }
        for (i, c) in self.records.iter().enumerate() {
            let e = self.packing.unpack(c.extent);
            if c.refs > 0
                && (e.block.0 >= blocks
                    || e.len == 0
                    || u64::from(e.offset) + u64::from(e.len) > u64::from(block_bytes))
            {
                return Err(format!("chunk {i} has an extent outside the array"));
            }
        }
        let dead = self.records.iter().filter(|c| c.refs == 0).count();
        let mut seen = vec![false; n];
        for id in &self.free {
            if id.index() >= n || self.records[id.index()].refs != 0 || std::mem::replace(&mut seen[id.index()], true) {
                return Err(format!("free chunk list entry {} is not a dead chunk", id.index()));
            }
        }
        if self.free.len() != dead {
            return Err(format!("{} free chunk ids for {dead} dead chunks", self.free.len()));
        }
        if !self.index.well_formed(n) {
            return Err("dedup index is malformed".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::units::BlockId;

    fn fp(n: u64, bucket: u64) -> Fingerprint {
        // Force collisions: the low bits pick the slot.
        let mut f = [0u8; 16];
        f[..8].copy_from_slice(&bucket.to_le_bytes());
        f[8..].copy_from_slice(&n.to_le_bytes());
        Fingerprint(f)
    }

    fn packing() -> ExtentPacking {
        ExtentPacking::new(1024, 2 << 20, 4096).unwrap()
    }

    fn ext() -> NandExtent {
        NandExtent { block: BlockId(0), offset: 0, len: 1 }
    }

    #[test]
    fn index_survives_colliding_inserts_and_removes() {
        // Untagged, tagged, and tagged for fewer records than inserted (the
        // tag shrinks as ids outgrow it).
        for mut s in [
            ChunkStore::new(true, packing()),
            ChunkStore::with_capacity(true, packing(), 4000),
            ChunkStore::with_capacity(true, packing(), 10),
        ] {
            colliding_inserts_and_removes(&mut s);
        }
    }

    #[test]
    fn check_index_names_the_first_chunk_it_cannot_find() {
        let mut s = ChunkStore::with_capacity(true, packing(), 4000);
        let ids: Vec<ChunkId> = (0..3000u64).map(|n| s.insert(fp(n, n), ext()).unwrap()).collect();
        s.check_index().unwrap();
        for n in [2500, 700] {
            // A fingerprint changed behind the index's back: its chunk is lost.
            s.fingerprints[ids[n].index()] = fp(10_000 + n as u64, 6000);
        }
        let err = s.check_index().unwrap_err();
        assert!(err.contains(&format!("chunk {} ", ids[700].index())), "{err}");
    }

    fn colliding_inserts_and_removes(s: &mut ChunkStore) {
        let ids: Vec<ChunkId> = (0..3000u64).map(|n| s.insert(fp(n, n % 7), ext()).unwrap()).collect();
        s.check_index().unwrap();
        for (n, id) in ids.iter().enumerate() {
            if n % 3 == 0 {
                assert_eq!(s.decref(*id), Some(ext()));
            }
        }
        s.check_index().unwrap();
        for (n, id) in ids.iter().enumerate() {
            let found = s.find(&fp(n as u64, n as u64 % 7));
            assert_eq!(found, (n % 3 != 0).then_some(*id), "chunk {n}");
        }
        assert_eq!(s.live(), 2000);
    }

    #[test]
    fn images_round_trip_the_tables_and_refuse_a_zero_free_id() {
        let mut s = ChunkStore::with_capacity(true, packing(), 4000);
        let ids: Vec<ChunkId> = (0..300u64).map(|n| s.insert(fp(n, n % 7), ext()).unwrap()).collect();
        s.incref(ids[5]);
        for id in ids.iter().step_by(4) {
            s.decref(*id);
        }
        let mut bytes = Vec::new();
        s.write_image(&mut bytes).unwrap();
        let read = |bytes: &[u8]| ChunkStore::read_image(&mut Payload::new(&mut &bytes[..], bytes.len() as u64));
        let back = read(&bytes).unwrap();
        back.check_shape(true, packing(), 1024, 2 << 20).unwrap();
        back.check_index().unwrap();
        assert_eq!(back.live(), s.live());
        for (n, id) in ids.iter().enumerate() {
            assert_eq!(back.find(&fp(n as u64, n as u64 % 7)), s.find(&fp(n as u64, n as u64 % 7)));
            assert_eq!(back.get(*id), s.get(*id));
        }
        // The free ids are the third table, after the records and fingerprints.
        let free_at = bytes.len() - (8 + 4 * s.index.slots().len()) - 4 * s.free.len();
        let mut zero = bytes.clone();
        zero[free_at..free_at + 4].fill(0);
        let err = read(&zero).unwrap_err();
        assert!(err.contains("free chunk ids: table item 0 is not valid"), "{err}");
    }

    #[test]
    fn refcounts_free_only_at_zero_and_ids_are_reused() {
        let mut s = ChunkStore::new(true, packing());
        let a = s.insert(fp(1, 1), ext()).unwrap();
        s.incref(a);
        assert_eq!(s.decref(a), None);
        assert_eq!(s.find(&fp(1, 1)), Some(a));
        assert!(s.decref(a).is_some());
        assert_eq!(s.find(&fp(1, 1)), None);
        let b = s.insert(fp(2, 2), ext()).unwrap();
        assert_eq!(a, b, "freed id reused");
        s.check_index().unwrap();
        let mut plain = ChunkStore::new(false, packing());
        plain.insert(fp(2, 2), ext()).unwrap();
        assert_eq!(plain.find(&fp(2, 2)), None, "without dedup nothing is found");
        plain.check_index().unwrap();
        assert_eq!(std::mem::size_of::<Record>(), 12);
    }
}
