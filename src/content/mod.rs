//! What written units contain: generated fio-style patterns
//! ([`crate::content::pattern::PatternGen`]) or real data ([`crate::content::corpus`]).
//! Workloads ask a [`Content`] for the bytes of each write.

pub mod buffers;
pub mod corpus;
pub mod dedupe;
pub mod pattern;
pub mod verify;

use crate::content::pattern::PatternGen;
use crate::units::Lba;

/// A source of write payloads.
pub trait Content {
    /// Fills `buf`, a whole number of units, with the bytes a write at
    /// `lba` carries.
    fn fill(&mut self, lba: Lba, buf: &mut [u8]);

    /// Whether the bytes a job reads go into the buffers it writes from
    /// (fio's io_us, when it does not refill them).
    fn takes_reads(&self) -> bool {
        false
    }

    /// Puts the bytes of a read into the buffer it was read into.
    fn read_into(&mut self, _data: &[u8]) {}

    /// Fills `buf` with the payloads of writes at `lbas`, in order, each
    /// `buf.len() / lbas.len()` bytes: the same bytes as calling
    /// [`Content::fill`] for each. Sources whose bytes are pure functions
    /// of a cheaply drawn id generate them in parallel.
    fn fill_batch(&mut self, lbas: &[Lba], buf: &mut [u8]) {
        let Some(each) = buf.len().checked_div(lbas.len()) else { return };
        for (&lba, out) in lbas.iter().zip(buf.chunks_mut(each)) {
            self.fill(lba, out);
        }
    }
}

impl Content for PatternGen {
    fn fill(&mut self, _lba: Lba, buf: &mut [u8]) {
        PatternGen::fill(self, buf);
    }

    fn fill_batch(&mut self, lbas: &[Lba], buf: &mut [u8]) {
        if self.spec().compress_pct >= 100 {
            // A pattern starts again with each write.
            let each = buf.len() / lbas.len().max(1);
            buf.chunks_mut(each.max(1)).for_each(|write| PatternGen::fill(self, write));
        } else {
            self.fill_parallel(buf);
        }
    }
}
