//! What the pipeline benches share: the batch, the raw lz4 + blake3
//! reference and the drive they compare it with.

use duraflash::content::pattern::{DataSpec, PatternGen};
use duraflash::content::Content;
use duraflash::datapath::pipeline;
use duraflash::{Drive, DriveConfig, Lba, Media};

/// Bytes in one unit.
pub const UNIT: usize = 4096;
/// Units in one batch.
pub const BATCH_UNITS: usize = 1024;
/// 512-byte sectors in one unit.
const UNIT_SECTORS: u64 = (UNIT / 512) as u64;
/// Capacity of the drive written.
const CAPACITY: u64 = 1 << 30;

/// A fresh batch of units from `gen`.
pub fn units(gen: &mut dyn Content) -> Vec<u8> {
    let mut buf = vec![0u8; UNIT * BATCH_UNITS];
    gen.fill(Lba(0), &mut buf);
    buf
}

/// lz4 and blake3 of each unit on one thread; with `stored`, the hash is
/// of the stored form (the compressed bytes when they are smaller), as the
/// drive's fingerprint is. The output buffer sits half a page from each
/// unit, as the drive's does: where a buffer lands by chance at the same
/// page offset as the input, lz4 runs up to 2.7x slower (4K aliasing), and
/// the reference would move from run to run with the allocator.
pub fn raw(buf: &[u8], stored: bool) -> usize {
    let mut slot = vec![0u8; pipeline::slot_bytes(UNIT)];
    let mut total = 0;
    for unit in buf.chunks(UNIT) {
        let at = pipeline::unaliased_offset(unit.as_ptr(), slot.as_ptr());
        let out = &mut slot[at..];
        let n = lz4_flex::block::compress_into(unit, out).expect("sized by slot_bytes");
        let hashed = if stored && n < UNIT { &out[..n] } else { unit };
        total += n + blake3::hash(hashed).as_bytes()[0] as usize;
    }
    total
}

/// A drive written sequentially, wrapping, one batch at a time (so GC
/// erases emptied blocks without relocating anything: this measures the
/// pipeline, not GC).
pub struct Wrapping {
    drive: Drive,
    next: u64,
}

impl Wrapping {
    /// A 1 GiB sf2281 drive keeping `media`, every LBA written once with
    /// its own content, so the drive starts where a long run spends its
    /// time: chunk records reused, the dedup index at full size and each
    /// write replacing a live chunk.
    pub fn new(media: Media) -> Self {
        let mut cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(CAPACITY).unwrap();
        cfg.media = media;
        let mut w = Wrapping { drive: Drive::new(cfg).unwrap(), next: 0 };
        let mut gen = PatternGen::new(DataSpec::incompressible(), 2).unwrap();
        let batches = w.drive.capacity_sectors() / (BATCH_UNITS as u64 * UNIT_SECTORS);
        for _ in 0..batches {
            w.write(&units(&mut gen));
        }
        w
    }

    /// Writes `buf`'s units at the next LBAs, on the calling thread's pool.
    pub fn write(&mut self, buf: &[u8]) {
        let sectors = self.drive.capacity_sectors();
        let next = self.next;
        let reqs: Vec<(Lba, &[u8])> =
            buf.chunks(UNIT).enumerate().map(|(i, u)| (Lba((next + i as u64 * UNIT_SECTORS) % sectors), u)).collect();
        self.drive.write_batch(&reqs).unwrap();
        self.next = (next + (buf.len() / UNIT) as u64 * UNIT_SECTORS) % sectors;
    }
}
