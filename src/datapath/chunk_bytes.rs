//! The stored bytes of live chunks, with memory media.
//!
//! They are held per chunk, not per NAND page: a page keeps a dead chunk's
//! bytes until its block is erased, and greedy GC erases only when free
//! blocks run short, so page storage holds the whole physical array once
//! the drive has been written across (about 2.3x the live bytes of 50 %
//! compressible data). Here a chunk's bytes go when its last reference
//! does, and GC moves an extent without copying a byte. The NAND model
//! keeps only what timing and wear need: which pages are programmed.

use std::io::{self, Read, Write};

use crate::image::Payload;
use crate::units::ChunkId;

/// Bytes of each live chunk, by chunk id.
#[derive(Clone, Debug, Default)]
pub struct ChunkBytes {
    slots: Vec<Option<Box<[u8]>>>,
    /// Bytes held in `slots`.
    held: u64,
}

impl ChunkBytes {
    /// An empty store with slots reserved for `chunks` ids (untouched
    /// reserved memory costs nothing resident).
    pub fn with_capacity(chunks: usize) -> Self {
        ChunkBytes { slots: Vec::with_capacity(chunks), held: 0 }
    }

    /// Resident bytes of `chunks` chunks of `len` stored bytes each: a slot
    /// per id and a heap allocation per chunk (glibc's: an 8-byte header,
    /// rounded to 16, at least 32).
    pub fn bytes_for(chunks: u64, len: u64) -> u64 {
        let slot = std::mem::size_of::<Option<Box<[u8]>>>() as u64;
        chunks * (slot + (len + 8).next_multiple_of(16).max(32))
    }

    /// Keeps `bytes` as `id`'s content, replacing any held.
    pub fn put(&mut self, id: ChunkId, bytes: &[u8]) {
        let i = id.index();
        if self.slots.len() <= i {
            self.slots.resize_with(i + 1, || None);
        }
        self.held += bytes.len() as u64;
        if let Some(old) = self.slots[i].replace(bytes.into()) {
            self.held -= old.len() as u64;
        }
    }

    /// `id`'s content, if held.
    pub fn get(&self, id: ChunkId) -> Option<&[u8]> {
        self.slots.get(id.index()).and_then(|s| s.as_deref())
    }

    /// Drops `id`'s content (its chunk died).
    pub fn remove(&mut self, id: ChunkId) {
        if let Some(old) = self.slots.get_mut(id.index()).and_then(Option::take) {
            self.held -= old.len() as u64;
        }
    }

    /// Drops everything (secure erase).
    pub fn clear(&mut self) {
        self.slots.clear();
        self.held = 0;
    }

    /// Chunks whose content is held.
    pub fn count(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }

    /// Heap bytes: the content plus a 16-byte slot per id.
    pub fn heap_bytes(&self) -> u64 {
        self.held + (self.slots.len() * std::mem::size_of::<Option<Box<[u8]>>>()) as u64
    }

    /// Writes the slot count (u64), then each slot as its length (u32, 0
    /// when empty) and its bytes.
    pub fn write_image(&self, w: &mut dyn Write) -> io::Result<()> {
        w.write_all(&(self.slots.len() as u64).to_le_bytes())?;
        for slot in &self.slots {
            let bytes = slot.as_deref().unwrap_or(&[]);
            w.write_all(&(bytes.len() as u32).to_le_bytes())?;
            w.write_all(bytes)?;
        }
        Ok(())
    }

    /// Reads what [`ChunkBytes::write_image`] wrote; no content may be
    /// longer than `max_len`.
    pub fn read_image(r: &mut Payload, max_len: usize) -> Result<Self, String> {
        let mut word = [0u8; 8];
        r.read_exact(&mut word).map_err(|e| format!("chunk bytes: {e}"))?;
        let count = u64::from_le_bytes(word);
        if count.checked_mul(4).is_none_or(|b| b > r.left()) {
            return Err(format!("chunk bytes: {count} slots are longer than what is left of the section"));
        }
        let mut out = ChunkBytes::with_capacity(count as usize);
        for i in 0..count as usize {
            let mut len = [0u8; 4];
            r.read_exact(&mut len).map_err(|e| format!("chunk bytes: slot {i}: {e}"))?;
            let len = u32::from_le_bytes(len) as usize;
            if len > max_len {
                return Err(format!("chunk bytes: slot {i} holds {len} bytes, more than a unit"));
            }
            let slot = if len == 0 {
                None
            } else {
                let mut bytes = vec![0u8; len].into_boxed_slice();
                r.read_exact(&mut bytes).map_err(|e| format!("chunk bytes: slot {i}: {e}"))?;
                out.held += len as u64;
                Some(bytes)
            };
            out.slots.push(slot);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(i: usize) -> ChunkId {
        ChunkId::from_index(i).unwrap()
    }

    #[test]
    fn content_comes_and_goes_with_its_chunk_and_round_trips() {
        let mut s = ChunkBytes::with_capacity(8);
        s.put(id(3), b"abc");
        s.put(id(0), b"zz");
        assert_eq!(s.get(id(3)), Some(&b"abc"[..]));
        assert_eq!(s.get(id(1)), None);
        assert_eq!(s.get(id(9)), None, "beyond the slots");
        s.put(id(3), b"wxyz");
        s.remove(id(0));
        s.remove(id(7));
        assert_eq!((s.count(), s.held), (1, 4));
        let mut bytes = Vec::new();
        s.write_image(&mut bytes).unwrap();
        let read = |b: &[u8], max| ChunkBytes::read_image(&mut Payload::new(&mut &b[..], b.len() as u64), max);
        let back = read(&bytes, 4096).unwrap();
        assert_eq!((back.get(id(3)), back.get(id(0)), back.count(), back.held), (Some(&b"wxyz"[..]), None, 1, 4));
        assert!(read(&bytes, 3).unwrap_err().contains("more than a unit"));
        assert!(read(&bytes[..bytes.len() - 1], 4096).is_err(), "truncated");
        let mut huge = bytes.clone();
        huge[..8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(read(&huge, 4096).unwrap_err().contains("longer than what is left"));
        s.clear();
        assert_eq!((s.count(), s.heap_bytes()), (0, 0));
    }
}
