//! The write path: validate, split into units (read-modify-write partial
//! ones), encode in parallel, then dedup, place and map in order. Each
//! request's NAND work is journaled and timed by [`super::schedule`].

use super::{Drive, Issuer, Serial};
use crate::datapath::pipeline::EncodedBatch;
use crate::datapath::tape::Tape;
use crate::error::DriveError;
use crate::units::{BlockId, ChunkId, Fingerprint, Lba, Lpn, NandExtent, SECTOR_BYTES};

/// Units encoded together at most: enough to keep both pipeline threads
/// busy, few enough that the compressed output (about 4 KiB a unit) stays
/// in cache until it is placed...
pub(super) const COMMIT_SLICE_UNITS: usize = 64;
/// ...and at least: a smaller batch is cut into this many slices, so its
/// in-order half still overlaps the encoding of the next slice...
const COMMIT_SLICES: usize = 8;
/// ...of at least this many units (rayon's hand-off costs more than a few
/// units save).
const COMMIT_SLICE_MIN_UNITS: usize = 8;

impl Drive {
    /// Writes `data` (whole sectors) at `lba`, issued when the previous
    /// command completed.
    pub fn write(&mut self, lba: Lba, data: &[u8]) -> Result<(), DriveError> {
        self.write_batch(&[(lba, data)])
    }

    /// Writes requests one after another (queue depth 1), with the
    /// parallel pipeline of [`Drive::write_batch_on`].
    pub fn write_batch(&mut self, requests: &[(Lba, &[u8])]) -> Result<(), DriveError> {
        self.write_batch_on(requests, &mut Serial(self.now))
    }

    /// Writes several requests issued through `queue`: the same state as
    /// writing them one by one in order, but units of the whole batch are
    /// compressed and hashed in parallel. Each request's completion time
    /// comes from the NAND work it caused (foreground GC included). All
    /// requests are validated before any is applied.
    pub fn write_batch_on(&mut self, requests: &[(Lba, &[u8])], queue: &mut impl Issuer) -> Result<(), DriveError> {
        let us = self.unit_sectors();
        // Units are a power of two of sectors (validated): shifts, not divisions.
        let shift = us.trailing_zeros();
        let units_of = |lba: Lba, bytes: usize| lba.0 >> shift..(lba.0 + bytes as u64 / SECTOR_BYTES + us - 1) >> shift;
        let mut units = 0;
        for (r, (lba, data)) in requests.iter().enumerate() {
            let sectors = self.check_transfer(*lba, data.len())?;
            let span = units_of(*lba, data.len());
            units += (span.end - span.start) as usize;
            if !self.keeps_data() {
                // A partial unit needs its old bytes unless it was never
                // written, by the drive or an earlier request of the batch.
                let (first, end) = (lba.0, lba.0 + sectors);
                for lpn in units_of(*lba, data.len()) {
                    let whole = lpn * us >= first && (lpn + 1) * us <= end;
                    if !whole
                        && (self.map.get(Lpn(lpn)).is_some()
                            || requests[..r].iter().any(|(l, d)| units_of(*l, d.len()).contains(&lpn)))
                    {
                        return Err(DriveError::NoData { what: "a write of part of a written unit" });
                    }
                }
            }
        }
        self.start_journal();
        let unit = self.config.unit_bytes as usize;
        let mut pending: Vec<(usize, Lpn, &[u8])> = Vec::with_capacity(units);
        for (r, (lba, data)) in requests.iter().enumerate() {
            self.counters.host_write_bytes += data.len() as u64;
            let (first, end) = (lba.0, lba.0 + data.len() as u64 / SECTOR_BYTES);
            for lpn in units_of(*lba, data.len()) {
                let (ustart, uend) = (lpn * us, (lpn + 1) * us);
                if ustart >= first && uend <= end {
                    let off = ((ustart - first) * SECTOR_BYTES) as usize;
                    pending.push((r, Lpn(lpn), &data[off..off + unit]));
                } else {
                    // Read-modify-write: earlier units of the batch must land first.
                    self.commit(&pending)?;
                    pending.clear();
                    self.begin_request(r);
                    let mut merged = self.read_unit(Lpn(lpn))?;
                    let lo = ustart.max(first);
                    let hi = uend.min(end);
                    let dst = ((lo - ustart) * SECTOR_BYTES) as usize;
                    let src = ((lo - first) * SECTOR_BYTES) as usize;
                    let n = ((hi - lo) * SECTOR_BYTES) as usize;
                    merged[dst..dst + n].copy_from_slice(&data[src..src + n]);
                    self.commit(&[(r, Lpn(lpn), &merged)])?;
                }
            }
        }
        self.commit(&pending)?;
        let ops = self.nand.take_journal(std::mem::take(&mut self.ops_spare));
        self.marks.push(ops.len());
        for (r, (_, data)) in requests.iter().enumerate() {
            let submitted = queue.submit_time();
            let done = self.time_write(data.len() as u64, &ops[self.marks[r]..self.marks[r + 1]], submitted);
            queue.complete(submitted, done, data.len() as u64);
            self.advance(done)?;
        }
        self.ops_spare = ops;
        Ok(())
    }

    /// Starts a command batch: the journal is empty and no request marked.
    pub(super) fn start_journal(&mut self) {
        debug_assert!(self.nand.journal().is_empty(), "NAND work left untimed");
        self.marks.clear();
    }

    /// Notes that request `r`'s NAND work starts here in the journal.
    pub(super) fn begin_request(&mut self, r: usize) {
        let at = self.nand.journal().len();
        while self.marks.len() <= r {
            self.marks.push(at);
        }
    }

    /// Stores whole units in order: encode in parallel, then dedup, place
    /// and map one by one.
    ///
    /// With content to encode, slice `k + 1` is encoded on the pool while
    /// slice `k` is applied, so the in-order half overlaps the parallel one.
    /// Called from outside the pool, the whole commit moves onto a pool
    /// thread first: one hand-off instead of one (a sleep and a wake-up)
    /// per slice.
    pub(super) fn commit(&mut self, units: &[(usize, Lpn, &[u8])]) -> Result<(), DriveError> {
        if units.is_empty() {
            return Ok(());
        }
        if self.encoder.has_work() && units.len() > COMMIT_SLICE_MIN_UNITS && rayon::current_thread_index().is_none() {
            return rayon::scope(|_| self.commit_slices(units));
        }
        self.commit_slices(units)
    }

    /// [`Drive::commit`]'s body, on whatever thread calls it, with the
    /// encoding tape (if any) recording or playing back.
    fn commit_slices(&mut self, units: &[(usize, Lpn, &[u8])]) -> Result<(), DriveError> {
        let mut tape = self.tape.0.take();
        let result = match tape.as_mut() {
            Some(t) if t.replaying() => self.commit_replayed(units, t),
            t => self.commit_encoded(units, t),
        };
        self.tape.0 = tape;
        result
    }

    /// Applies `units` with their encodings played back from `tape`.
    fn commit_replayed(&mut self, units: &[(usize, Lpn, &[u8])], tape: &mut Tape) -> Result<(), DriveError> {
        let mut cur = std::mem::take(&mut self.batch);
        let mut result = Ok(());
        for slice in units.chunks(COMMIT_SLICE_UNITS) {
            result = tape
                .replay(slice.len(), &mut cur)
                .map_err(|e| DriveError::Tape(e.to_string()))
                .and_then(|()| self.apply(slice, &cur));
            if result.is_err() {
                break;
            }
        }
        self.batch = cur;
        result
    }

    /// Encodes and applies `units`, taping their encodings if recording.
    fn commit_encoded(&mut self, units: &[(usize, Lpn, &[u8])], mut tape: Option<&mut Tape>) -> Result<(), DriveError> {
        let encoder = self.encoder;
        let overlap = encoder.has_work();
        let (mut cur, mut next) = (std::mem::take(&mut self.batch), std::mem::take(&mut self.next_batch));
        let slice_units = units.len().div_ceil(COMMIT_SLICES).clamp(COMMIT_SLICE_MIN_UNITS, COMMIT_SLICE_UNITS);
        let slices: Vec<&[(usize, Lpn, &[u8])]> = units.chunks(slice_units).collect();
        fn data<'a>(slice: &[(usize, Lpn, &'a [u8])]) -> Vec<&'a [u8]> {
            slice.iter().map(|(_, _, d)| *d).collect()
        }
        encoder.encode(&data(slices[0]), &mut cur);
        let mut result = Ok(());
        for (k, slice) in slices.iter().enumerate() {
            if let Some(t) = tape.as_mut() {
                if let Err(e) = t.record(cur.units()) {
                    result = Err(DriveError::Tape(e.to_string()));
                    break;
                }
            }
            result = match slices.get(k + 1) {
                Some(following) if overlap => {
                    let input = data(following);
                    rayon::join(|| self.apply(slice, &cur), || encoder.encode(&input, &mut next)).0
                }
                Some(following) => {
                    let r = self.apply(slice, &cur);
                    encoder.encode(&data(following), &mut next);
                    r
                }
                None => self.apply(slice, &cur),
            };
            if result.is_err() {
                break;
            }
            std::mem::swap(&mut cur, &mut next);
        }
        self.batch = cur;
        self.next_batch = next;
        result
    }

    /// The in-order half of a commit: dedup, place, map.
    fn apply(&mut self, units: &[(usize, Lpn, &[u8])], batch: &EncodedBatch) -> Result<(), DriveError> {
        // Touch each unit's map entry, then its old chunk (record,
        // fingerprint, dedup slot) and its new content's dedup slot, then the
        // old chunk's block state: the loads of one pass are independent
        // across units, so their cache misses overlap here instead of
        // stalling one after another in the loop below, and each pass finds
        // the previous one's data in cache.
        let old = |lpn: &Lpn| self.map.get(*lpn).map(|id| self.chunks.get(id));
        let entries = units.iter().map(|(_, lpn, _)| self.map.get(*lpn).map_or(0, ChunkId::index) as u32);
        let chunks = units
            .iter()
            .zip(batch.units())
            .map(|((_, lpn, _), enc)| self.chunks.warm(self.map.get(*lpn), &enc.fingerprint));
        let blocks = units.iter().map(|(_, lpn, _)| old(lpn).map_or(0, |c| self.space.warm(c.extent.block)));
        let warm = [
            entries.fold(0u32, u32::wrapping_add),
            chunks.fold(0, u32::wrapping_add),
            blocks.fold(0, u32::wrapping_add),
        ];
        std::hint::black_box(warm);
        for (i, (r, lpn, data)) in units.iter().enumerate() {
            self.begin_request(*r);
            let enc = batch.units()[i];
            self.clock += 1;
            self.counters.host_write_units += 1;
            let frontier = self.host_frontier(*lpn);
            let id = match self.chunks.find(&enc.fingerprint) {
                Some(id) => {
                    self.chunks.incref(id);
                    self.counters.dedup_hits += 1;
                    id
                }
                None => {
                    self.foreground_gc()?;
                    let stored = self.keeps_data().then(|| batch.stored(i, data));
                    let id = self.place_new(enc.fingerprint, enc.len, stored, frontier)?;
                    self.counters.new_chunks += 1;
                    self.counters.new_raw_bytes += data.len() as u64;
                    self.counters.new_stored_bytes += u64::from(enc.len);
                    id
                }
            };
            if let Some(old) = self.map.set(*lpn, Some(id)) {
                self.release(old);
            }
        }
        Ok(())
    }

    fn place_new(
        &mut self,
        fp: Fingerprint,
        len: u32,
        stored: Option<&[u8]>,
        frontier: usize,
    ) -> Result<ChunkId, DriveError> {
        let placeholder = NandExtent { block: BlockId(0), offset: 0, len };
        let id = self.chunks.insert(fp, placeholder).ok_or(DriveError::ChunkTableFull(self.chunks.live()))?;
        match self.space.append(&mut self.nand, id, len, self.clock, frontier) {
            Ok(extent) => {
                self.chunks.relocate(id, extent);
                if let Some(bytes) = stored {
                    self.bytes.put(id, bytes);
                }
                self.live_bytes += u64::from(len);
                Ok(id)
            }
            Err(e) => {
                // Never placed: forget it without touching any block.
                self.chunks.decref(id);
                Err(e)
            }
        }
    }

    /// Drops one reference to `chunk`; at zero its bytes turn invalid.
    pub(super) fn release(&mut self, chunk: ChunkId) {
        if let Some(extent) = self.chunks.decref(chunk) {
            self.bytes.remove(chunk);
            self.space.invalidate(extent);
            self.live_bytes -= u64::from(extent.len);
        }
    }
}
