//! What a replay needs of the device beyond [`BlockDevice`]: the mapping
//! unit, whether data is kept, the write counters behind the WAF curve,
//! idle GC's cleaned blocks, and the drives' counters. Implemented for one
//! [`Drive`] and for a RAID [`Array`] of them (its members' sums).
//!
//! [`BlockDevice`] does not carry these (its `idle` returns nothing, and it
//! has no counters), so they live here rather than in `host`.

use crate::config::Media;
use crate::device::{Drive, Stats};
use crate::host::raid::Array;
use crate::host::BlockDevice;
use crate::units::SimTime;

/// A device a trace can be replayed on.
pub trait ReplayTarget: BlockDevice {
    /// Bytes of the mapping unit writes are partial against.
    fn unit_bytes(&self) -> u64;
    /// Whether the device keeps no data bytes (metadata-only media), so a
    /// partial-unit write has no old bytes to merge.
    fn metadata_only(&self) -> bool;
    /// Host bytes written and NAND bytes programmed so far.
    fn bytes_written(&self) -> (u64, u64);
    /// The host is idle from `from` to `until`; returns the blocks GC cleaned.
    fn idle_cleaning(&mut self, from: SimTime, until: SimTime) -> Result<u64, Self::Error>;
    /// The counters of every drive: one for a drive, one per array member.
    fn drive_stats(&self) -> Vec<Stats>;
}

impl ReplayTarget for Drive {
    fn unit_bytes(&self) -> u64 {
        u64::from(self.config().unit_bytes)
    }
    fn metadata_only(&self) -> bool {
        self.config().media == Media::MetadataOnly
    }
    fn bytes_written(&self) -> (u64, u64) {
        (self.host_write_bytes(), self.nand_bytes_programmed())
    }
    fn idle_cleaning(&mut self, from: SimTime, until: SimTime) -> Result<u64, Self::Error> {
        Drive::idle(self, from, until).map(u64::from)
    }
    fn drive_stats(&self) -> Vec<Stats> {
        vec![self.stats()]
    }
}

impl ReplayTarget for Array {
    fn unit_bytes(&self) -> u64 {
        // The array's layout splits on the largest member unit.
        self.members().iter().map(ReplayTarget::unit_bytes).max().unwrap_or(0)
    }
    fn metadata_only(&self) -> bool {
        self.members().iter().any(ReplayTarget::metadata_only)
    }
    fn bytes_written(&self) -> (u64, u64) {
        self.members().iter().map(ReplayTarget::bytes_written).fold((0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
    }
    fn idle_cleaning(&mut self, from: SimTime, until: SimTime) -> Result<u64, Self::Error> {
        // The array's idle reports no count: the members' GC victims tell it.
        let victims = |a: &Array| a.members().iter().map(|d| d.stats().gc_victims).sum::<u64>();
        let before = victims(self);
        BlockDevice::idle(self, from, until)?;
        Ok(victims(self) - before)
    }
    fn drive_stats(&self) -> Vec<Stats> {
        self.members().iter().map(Drive::stats).collect()
    }
}
