//! What the NBD server needs of a device beyond [`BlockDevice`]: the
//! mapping unit and which units hold data (holes, `base:allocation`),
//! counters and SMART for reports and metrics, the invariant check, image
//! persistence, and the NBD error a failed command gets. Implemented for
//! one [`Drive`] and for a host RAID [`Array`] of them.
//!
//! Owns no state; it only reads the devices it is given.

use std::path::Path;

use serde::Serialize;
use thiserror::Error;

use super::protocol::Errno;
use crate::device::{Drive, InvariantError, Stats};
use crate::error::DriveError;
use crate::host::raid::{Array, RaidError};
use crate::host::smart::Smart;
use crate::host::BlockDevice;
use crate::image::ImageError;
use crate::units::{Lpn, SECTOR_BYTES};

/// A device the NBD server can export.
pub trait ServedDevice: BlockDevice + Send + 'static {
    /// The mapping unit in bytes: holes are found at this granularity.
    fn unit_bytes(&self) -> u64;
    /// Whether host unit `unit` (bytes `unit * unit_bytes()..`, below the
    /// capacity) holds data; an unmapped unit reads as zeros.
    fn is_unit_mapped(&self, unit: u64) -> bool;
    /// The counters; an array's are its members' combined (see [`Stats::combined`]).
    fn stats(&self) -> Stats;
    /// The drive's SMART table; `None` for an array, which has none of
    /// its own (each member's is in [`ServedDevice::member_snapshots`]).
    fn smart(&self) -> Option<Smart>;
    /// Each member drive's counters and SMART; empty for a single drive.
    fn member_snapshots(&self) -> Vec<MemberSnapshot>;
    /// The first broken structural invariant, if any.
    fn check_invariants(&self) -> Result<(), DeviceError>;
    /// Saves the device to an image at `path`, atomically (see [`crate::image`]).
    fn save(&self, path: &Path) -> Result<(), DeviceError>;
    /// The NBD error a command that failed with `err` is answered with.
    fn errno(err: &Self::Error) -> Errno;
}

/// What the invariant check or a save of a served device fails with.
#[derive(Debug, Error)]
pub enum DeviceError {
    /// The drive's state breaks an invariant.
    #[error(transparent)]
    Invariant(#[from] InvariantError),
    /// A member of an array breaks an invariant.
    #[error("member {member}: {source}")]
    Member { member: usize, source: InvariantError },
    /// The image could not be written.
    #[error(transparent)]
    Image(#[from] ImageError),
    /// Arrays are not saved: member images alone would not record the
    /// layout, so a resume with other RAID settings would scramble the data.
    #[error("an array is not saved to an image (its layout would not be recorded)")]
    ArrayNotSaved,
    /// A command panicked earlier and the device is no longer usable.
    #[error("the drive failed (internal error)")]
    Failed,
}

/// One member of a served array, as reports and metrics show it.
#[derive(Clone, Debug, Serialize)]
pub struct MemberSnapshot {
    /// The member's counters.
    pub stats: Stats,
    /// The member's SMART attributes.
    pub smart: Smart,
}

/// The NBD error of a drive error.
pub fn drive_errno(e: &DriveError) -> Errno {
    match e {
        DriveError::OutOfRange { .. } | DriveError::NoSpace(_) | DriveError::ChunkTableFull(_) => Errno::ENOSPC,
        DriveError::Misaligned { .. } | DriveError::UnknownStream { .. } => Errno::EINVAL,
        DriveError::NoData { .. } | DriveError::ClockOverflow { .. } => Errno::EIO,
        DriveError::Internal(_) | DriveError::Corrupt { .. } | DriveError::Tape(_) => Errno::EIO,
    }
}

impl ServedDevice for Drive {
    fn unit_bytes(&self) -> u64 {
        u64::from(self.config().unit_bytes)
    }
    fn is_unit_mapped(&self, unit: u64) -> bool {
        self.is_mapped(Lpn(unit))
    }
    fn stats(&self) -> Stats {
        Drive::stats(self)
    }
    fn smart(&self) -> Option<Smart> {
        Some(Smart::of(self))
    }
    fn member_snapshots(&self) -> Vec<MemberSnapshot> {
        Vec::new()
    }
    fn check_invariants(&self) -> Result<(), DeviceError> {
        Ok(Drive::check_invariants(self)?)
    }
    fn save(&self, path: &Path) -> Result<(), DeviceError> {
        Ok(Drive::save(self, path)?)
    }
    fn errno(err: &DriveError) -> Errno {
        drive_errno(err)
    }
}

impl ServedDevice for Array {
    /// The members' mapping unit (the largest, if they differ, as
    /// [`Array::new`] checks the stripe against).
    fn unit_bytes(&self) -> u64 {
        self.members().iter().map(|d| u64::from(d.config().unit_bytes)).max().unwrap_or(SECTOR_BYTES)
    }
    /// Mapped when any copy holds it. The stripe is a whole number of
    /// units, so an array unit is one unit of each member holding it.
    fn is_unit_mapped(&self, unit: u64) -> bool {
        let lba = unit * self.unit_bytes() / SECTOR_BYTES;
        self.layout().holders(lba).any(|(m, at)| {
            let d = &self.members()[m];
            d.is_mapped(Lpn(at * SECTOR_BYTES / u64::from(d.config().unit_bytes)))
        })
    }
    fn stats(&self) -> Stats {
        Stats::combined(&self.members().iter().map(Drive::stats).collect::<Vec<_>>())
    }
    fn smart(&self) -> Option<Smart> {
        None
    }
    fn member_snapshots(&self) -> Vec<MemberSnapshot> {
        self.members().iter().map(|d| MemberSnapshot { stats: d.stats(), smart: Smart::of(d) }).collect()
    }
    fn check_invariants(&self) -> Result<(), DeviceError> {
        for (member, d) in self.members().iter().enumerate() {
            d.check_invariants().map_err(|source| DeviceError::Member { member, source })?;
        }
        Ok(())
    }
    /// Refused: see [`DeviceError::ArrayNotSaved`].
    fn save(&self, _path: &Path) -> Result<(), DeviceError> {
        Err(DeviceError::ArrayNotSaved)
    }
    fn errno(err: &RaidError) -> Errno {
        match err {
            RaidError::Request(e) | RaidError::Member { source: e, .. } => drive_errno(e),
            RaidError::Members { .. }
            | RaidError::Stripe { .. }
            | RaidError::TooSmall { .. }
            | RaidError::UnknownLevel(_)
            | RaidError::UnknownPolicy(_) => Errno::EINVAL,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DriveConfig;
    use crate::host::raid::{Level, TrimPolicy};
    use crate::host::HostQueue;
    use crate::units::Lba;

    fn drive() -> Drive {
        let config = DriveConfig::preset("sf2281-240g").and_then(|c| c.scaled(64 << 20)).expect("preset");
        Drive::new(config).expect("drive")
    }

    #[test]
    fn array_units_map_onto_the_member_holding_them() {
        let mut a = Array::new(Level::Raid0, 8192, TrimPolicy::Rst11_2, vec![drive(), drive()]).expect("array");
        let mut q = HostQueue::new(1, a.now());
        // Array unit 2 is the first unit of member 1's first stripe (2 units per stripe).
        a.write_batch_on(&[(Lba(16), &[7u8; 4096])], &mut q).expect("write");
        let mapped: Vec<u64> = (0..8).filter(|&u| a.is_unit_mapped(u)).collect();
        assert_eq!(mapped, vec![2]);
        assert!(a.members()[1].is_mapped(Lpn(0)) && !a.members()[0].is_mapped(Lpn(0)));
        let s = ServedDevice::stats(&a);
        assert_eq!((s.mapped_units, s.host_write_units), (1, 1));
        let members = a.member_snapshots();
        assert_eq!(members.iter().map(|m| m.stats.mapped_units).collect::<Vec<_>>(), vec![0, 1]);
        assert!(a.smart().is_none() && ServedDevice::check_invariants(&a).is_ok());
        assert!(ServedDevice::save(&a, Path::new("/nonexistent/array.img")).is_err(), "arrays have no image");
        a.trim_on(&[(Lba(16), 8)], &mut q).expect("trim");
        assert!(!a.is_unit_mapped(2));
        assert_eq!(a.member_snapshots()[1].stats.host_trim_units, 1);
    }

    #[test]
    fn combined_stats_sum_counts_and_recompute_ratios() {
        let mut d = drive();
        d.write(Lba(0), &vec![3u8; 8192]).expect("write");
        let one = Drive::stats(&d);
        let two = Stats::combined(&[one.clone(), one.clone()]);
        assert_eq!(two.host_write_bytes, 2 * one.host_write_bytes);
        assert_eq!(two.mapped_units, 2 * one.mapped_units);
        assert!((two.waf - one.waf).abs() < 1e-12 && (two.dedup_ratio - one.dedup_ratio).abs() < 1e-12);
        assert_eq!((two.pe_min, two.pe_max), (one.pe_min, one.pe_max));
    }
}
