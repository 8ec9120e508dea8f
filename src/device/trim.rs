//! TRIM (unmap whole units, drop their chunks' references; no NAND work)
//! and ATA secure erase.

use super::{Drive, Issuer, Serial};
use crate::error::DriveError;
use crate::firmware::DSM_MAX_SECTORS;
use crate::units::{Lba, Lpn, SECTOR_BYTES};

impl Drive {
    /// TRIMs `(lba, sectors)` ranges, issued when the previous command
    /// completed. See [`Drive::trim_on`].
    pub fn trim(&mut self, ranges: &[(Lba, u64)]) -> Result<u64, DriveError> {
        self.trim_on(ranges, &mut Serial(self.now))
    }

    /// TRIMs `(lba, sectors)` ranges as one command issued through `queue`.
    /// Every range is checked before any is applied. Only units the
    /// command's ranges cover entirely (together) are unmapped: a unit
    /// partly covered keeps its data (TRIM is advisory, and zeroing part of
    /// a unit would cost a read-modify-write program).
    /// No NAND work: the firmware spends `trim_range_ns` per range.
    /// Returns the units unmapped.
    pub fn trim_on(&mut self, ranges: &[(Lba, u64)], queue: &mut impl Issuer) -> Result<u64, DriveError> {
        for (lba, sectors) in ranges {
            self.check_range(*lba, *sectors)?;
        }
        let us = self.unit_sectors();
        let mut unmapped = 0;
        // Ranges reach the firmware as ATA DSM entries of at most 65535
        // sectors; the firmware profile decides how much of each it unmaps.
        // A unit is unmapped when the command's pieces together cover it.
        let mut pieces: Vec<(u64, u64)> = Vec::new();
        for &(lba, sectors) in ranges {
            for i in 0..sectors.div_ceil(DSM_MAX_SECTORS) {
                let start = lba.0 + i * DSM_MAX_SECTORS;
                let len = self.config.firmware.trim_entry_sectors((sectors - i * DSM_MAX_SECTORS).min(DSM_MAX_SECTORS));
                if len > 0 {
                    pieces.push((start, start + len));
                }
            }
        }
        pieces.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for (start, end) in pieces {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        for (start, end) in merged {
            let sectors = end - start;
            let (first, end) = (start.div_ceil(us), (start + sectors) / us);
            for lpn in first..end.max(first) {
                if let Some(old) = self.map.set(Lpn(lpn), None) {
                    self.release(old);
                    unmapped += 1;
                }
            }
        }
        self.counters.host_trim_units += unmapped;
        let submitted = queue.submit_time();
        let extra = self.config.timing.trim_range_ns.saturating_mul(ranges.len() as u64);
        let done = self.timeline.firmware(submitted, extra).max(self.timeline.link_floor(submitted));
        let bytes = ranges.iter().map(|&(_, sectors)| sectors.saturating_mul(SECTOR_BYTES)).sum();
        queue.complete(submitted, done, bytes);
        self.advance(done)?;
        Ok(unmapped)
    }

    /// ATA secure erase: every written block erased, every mapping and
    /// chunk gone. Lifetime counters (host, NAND, P/E) keep counting.
    pub fn secure_erase(&mut self) {
        self.space.secure_erase(&mut self.nand);
        self.now = self.time_background(self.now);
        self.map_cache.clear();
        self.chunks.clear();
        self.bytes.clear();
        self.map.clear();
        self.live_bytes = 0;
    }
}
