//! What written units contain: generated fio-style patterns
//! ([`crate::pattern::PatternGen`]) or real data ([`crate::corpus`]).
//! Workloads ask a [`Content`] for the bytes of each write.

use crate::pattern::PatternGen;
use crate::units::Lba;

/// A source of write payloads.
pub trait Content {
    /// Fills `buf`, a whole number of units, with the bytes a write at
    /// `lba` carries.
    fn fill(&mut self, lba: Lba, buf: &mut [u8]);
}

impl Content for PatternGen {
    fn fill(&mut self, _lba: Lba, buf: &mut [u8]) {
        PatternGen::fill(self, buf);
    }
}
