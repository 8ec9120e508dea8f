//! The read path: resolve each unit of a request (map lookup, map-cache
//! access, the NAND pages its chunk sits in) and decode its bytes; the
//! plan then goes to [`super::schedule`], which turns it into time.

use super::schedule::{ReadPlan, UnitRead};
use super::{Drive, Issuer, Serial};
use crate::datapath::pipeline;
use crate::error::DriveError;
use crate::units::{BlockId, ChunkId, Lba, Lpn, NandExtent, SECTOR_BYTES};

impl Drive {
    /// The current content of one unit (zeros when unmapped).
    pub(super) fn read_unit(&mut self, lpn: Lpn) -> Result<Vec<u8>, DriveError> {
        let mut out = vec![0u8; self.config.unit_bytes as usize];
        if let Some(id) = self.map.get(lpn) {
            let mut pages = Vec::new();
            self.fetch(id, &mut out, &mut pages)?;
            for &(block, _) in &pages {
                self.nand.journal_read(BlockId(block));
            }
            self.counters.host_page_reads += pages.len() as u64;
        }
        Ok(out)
    }

    /// Decodes chunk `id` into `out`, noting the NAND pages it needed.
    pub(super) fn fetch(&self, id: ChunkId, out: &mut [u8], pages: &mut Vec<(u32, u32)>) -> Result<(), DriveError> {
        let extent = self.chunks.get(id).extent;
        self.space.nand_pages(&self.nand, extent, pages);
        if !self.keeps_data() {
            return Err(DriveError::NoData { what: "a read of a written unit" });
        }
        let corrupt = |reason: String| DriveError::Corrupt { chunk: id.index(), reason };
        let stored = self.bytes.get(id).ok_or_else(|| corrupt("no stored bytes".into()))?;
        if stored.len() != extent.len as usize {
            return Err(corrupt(format!("{} stored bytes for an extent of {}", stored.len(), extent.len)));
        }
        pipeline::decode(stored, out).map_err(corrupt)
    }

    /// Whether `next` continues `prev`'s placement: its bytes follow in the
    /// same block, or it opens the next die of the write stripe. A unit
    /// that does is read as part of the same piece.
    fn continues(&self, prev: NandExtent, next: NandExtent) -> bool {
        let dies = self.config.geometry.dies();
        let (a, b) = (self.nand.die_of(prev.block).0, self.nand.die_of(next.block).0);
        (prev.block == next.block && next.offset == prev.offset + prev.len) || b == (a + 1) % dies
    }

    /// Reads `sectors` sectors from `lba`, issued when the previous
    /// command completed. Unmapped units read as zeros.
    pub fn read(&mut self, lba: Lba, sectors: u64) -> Result<Vec<u8>, DriveError> {
        let data = self.read_on(lba, sectors, &mut Serial(self.now), true)?;
        Ok(data.unwrap_or_default())
    }

    /// Reads `sectors` sectors from `lba`, issued through `queue`. With
    /// `want_data` the bytes are returned (a drive without stored data then
    /// refuses reads of written units); without it only the time is
    /// modelled, on any media.
    ///
    /// Cost: a map-cache miss reads the unit's map page first; each distinct
    /// NAND page the request's units sit in is sensed once (units packed in
    /// a page share the read; unmapped units and units still in the page
    /// buffer cost none) and each unit's bytes are clocked out of the page
    /// register, at most `read_window` page reads in flight; a request
    /// whose units do not all continue one another's placement is served
    /// unit by unit, each unit after the first costing `read_piece_ns` of
    /// firmware set-up (see `unit_by_unit` and
    /// [`crate::DriveConfig::read_piece_ns`]);
    /// each unit is decompressed once its data is in and crosses the host
    /// link after the unit before it, so the command completes when its
    /// last byte is out (`schedule.rs` books it).
    pub fn read_on(
        &mut self,
        lba: Lba,
        sectors: u64,
        queue: &mut impl Issuer,
        want_data: bool,
    ) -> Result<Option<Vec<u8>>, DriveError> {
        if sectors == 0 {
            return Err(DriveError::Misaligned { len: 0, sector: SECTOR_BYTES });
        }
        self.check_range(lba, sectors)?;
        let bytes = sectors * SECTOR_BYTES;
        let us = self.unit_sectors();
        let unit = self.config.unit_bytes as usize;
        let (first, end) = (lba.0, lba.0 + sectors);
        let mut out = Vec::new();
        if want_data {
            if !self.keeps_data() && (first / us..end.div_ceil(us)).any(|l| self.map.get(Lpn(l)).is_some()) {
                return Err(DriveError::NoData { what: "a read of a written unit" });
            }
            let len = usize::try_from(bytes).map_err(|_| DriveError::OutOfRange {
                start: lba.0,
                end,
                capacity: self.capacity_sectors(),
            })?;
            out = vec![0u8; len];
        }
        let mut plan = ReadPlan::default();
        let mut unit_buf = vec![0u8; unit];
        let mut previous: Option<NandExtent> = None;
        for lpn in first / us..end.div_ceil(us) {
            let (ustart, uend) = (lpn * us, (lpn + 1) * us);
            let lo = ustart.max(first);
            let hi = uend.min(end);
            let covered = (hi - lo) * SECTOR_BYTES;
            let Some(id) = self.map.get(Lpn(lpn)) else {
                plan.units.push(UnitRead { covered, chunk: None });
                continue;
            };
            let extent = self.chunks.get(id).extent;
            let new_piece = previous.is_some_and(|p| !self.continues(p, extent));
            previous = Some(extent);
            let map_page = self.map_cache.access(lpn);
            let from = plan.pages.len();
            self.space.nand_pages(&self.nand, extent, &mut plan.pages);
            plan.units.push(UnitRead {
                covered,
                chunk: Some(super::schedule::ChunkRead { extent, new_piece, map_page, pages: from..plan.pages.len() }),
            });
            if want_data {
                let dst = ((lo - first) * SECTOR_BYTES) as usize;
                let n = covered as usize;
                if lo == ustart && hi == uend {
                    self.fetch(id, &mut out[dst..dst + n], &mut Vec::new())?;
                } else {
                    self.fetch(id, &mut unit_buf, &mut Vec::new())?;
                    let src = ((lo - ustart) * SECTOR_BYTES) as usize;
                    out[dst..dst + n].copy_from_slice(&unit_buf[src..src + n]);
                }
            }
        }
        unit_by_unit(&mut plan);
        let submitted = queue.submit_time();
        let (done, nand_reads) = self.time_read(submitted, &plan);
        self.counters.host_page_reads += nand_reads;
        self.counters.host_read_bytes += bytes;
        queue.complete(submitted, done, bytes);
        self.advance(done)?;
        Ok(want_data.then_some(out))
    }
}

/// A request whose units all continue one another's placement is one
/// sequenced run: its first unit's set-up carries it. One unit placed
/// elsewhere breaks the run, and the firmware then serves the whole
/// request unit by unit: every mapped unit after the first is a piece of
/// its own (`read_piece_ns` each, when the quirk charges it). The cost of
/// a broken request does not depend on how many of its units moved, so
/// read degradation saturates once nearly every request holds one moved
/// unit (a 32-unit read after random writes over a quarter of the span),
/// as the review's does: the same after-TRIM read with compressible and
/// with incompressible data, whose 20 minutes of torture cover far fewer
/// units (issue 20).
fn unit_by_unit(plan: &mut ReadPlan) {
    if !plan.units.iter().any(|u| u.chunk.as_ref().is_some_and(|c| c.new_piece)) {
        return;
    }
    for c in plan.units.iter_mut().filter_map(|u| u.chunk.as_mut()).skip(1) {
        c.new_piece = true;
    }
}
