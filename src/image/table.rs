//! A section's payload as its decoder reads it, and the large tables of
//! fixed-size little-endian records (`CHNK`, `MAP `) that move in bulk
//! rather than field by field (see the parent module's layout).

use std::io::{self, Read, Write};

/// Bytes a table moves through at a time between its items and the stream.
const TABLE_BUFFER_BYTES: usize = 256 << 10;

/// A section's payload as its decoder reads it: it knows how many bytes
/// are left, so a damaged count is refused before anything is reserved.
pub struct Payload<'a> {
    inner: &'a mut dyn Read,
    left: u64,
}

impl<'a> Payload<'a> {
    /// The `len` bytes of `inner` as a payload.
    pub fn new(inner: &'a mut dyn Read, len: u64) -> Self {
        Payload { inner, left: len }
    }

    /// Bytes not yet read.
    pub fn left(&self) -> u64 {
        self.left
    }
}

impl Read for Payload<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = buf.len().min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.left -= n as u64;
        Ok(n)
    }
}

/// A fixed-size item of a table (see the module docs), stored little-endian.
pub trait Plain: Sized {
    /// Bytes of one item.
    const BYTES: usize;
    /// Writes the item into `out` (`BYTES` long).
    fn put(&self, out: &mut [u8]);
    /// The item `bytes` (`BYTES` long) hold, or `None` when they hold no
    /// valid item.
    fn get(bytes: &[u8]) -> Option<Self>;
}

impl Plain for u32 {
    const BYTES: usize = 4;
    fn put(&self, out: &mut [u8]) {
        out.copy_from_slice(&self.to_le_bytes());
    }
    fn get(bytes: &[u8]) -> Option<Self> {
        Some(u32::from_le_bytes(bytes.try_into().ok()?))
    }
}

/// Writes `items` as a table: their count (u64), then each item.
pub fn write_table<T: Plain>(w: &mut dyn Write, items: &[T]) -> io::Result<()> {
    w.write_all(&(items.len() as u64).to_le_bytes())?;
    let per_buffer = (TABLE_BUFFER_BYTES / T::BYTES).max(1);
    let mut buf = vec![0u8; per_buffer * T::BYTES];
    for group in items.chunks(per_buffer) {
        let bytes = &mut buf[..group.len() * T::BYTES];
        for (item, out) in group.iter().zip(bytes.chunks_exact_mut(T::BYTES)) {
            item.put(out);
        }
        w.write_all(bytes)?;
    }
    Ok(())
}

/// Reads a table [`write_table`] wrote into one buffer reserved at its
/// length and advised for huge pages (the tables are read at random).
pub fn read_table<T: Plain>(r: &mut Payload) -> Result<Vec<T>, String> {
    let mut word = [0u8; 8];
    r.read_exact(&mut word).map_err(|e| format!("table count: {e}"))?;
    let count = u64::from_le_bytes(word);
    let fits = count.checked_mul(T::BYTES as u64).is_some_and(|bytes| bytes <= r.left());
    if !fits {
        return Err(format!(
            "a table of {count} items of {} bytes is longer than what is left of the section",
            T::BYTES
        ));
    }
    let count = count as usize;
    let mut items = Vec::new();
    items.try_reserve_exact(count).map_err(|e| format!("a table of {count} items: {e}"))?;
    crate::huge_pages::advise(&items);
    let per_buffer = (TABLE_BUFFER_BYTES / T::BYTES).max(1);
    let mut buf = vec![0u8; per_buffer * T::BYTES];
    while items.len() < count {
        let bytes = &mut buf[..(count - items.len()).min(per_buffer) * T::BYTES];
        r.read_exact(bytes).map_err(|e| format!("table item {}: {e}", items.len()))?;
        for b in bytes.chunks_exact(T::BYTES) {
            let Some(item) = T::get(b) else {
                return Err(format!("table item {} is not valid", items.len()));
            };
            items.push(item);
        }
    }
    Ok(items)
}
