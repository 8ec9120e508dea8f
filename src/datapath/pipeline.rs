//! The write pipeline's parallel half: compress (lz4_flex) and fingerprint
//! (blake3) each 4 KiB unit of a batch, with rayon.
//!
//! The fingerprint is taken of the stored form (see
//! [`crate::units::Fingerprint`]), so compressible units hash fewer bytes.
//!
//! Pure per unit, so the result is identical whatever the thread count; the
//! order-dependent half (dedup, placement, mapping) runs after it, in order,
//! in the controller. A unit whose compressed form is not smaller than the
//! unit is stored raw.

use rayon::prelude::*;

use crate::profile::{Laps, Phase};
use crate::units::Fingerprint;

/// Batches smaller than this are encoded on the calling thread: rayon's
/// hand-off costs more than it saves on a few units.
const PARALLEL_MIN_UNITS: usize = 8;

/// Units a thread takes at a time, each phase over all of them in turn
/// (lz4, then blake3): few enough that a group's input and output stay in
/// cache, and that the smallest commit slice (8 units) is two groups, so
/// the thread that applied the previous slice takes one instead of
/// sleeping until the other thread has encoded the whole slice; enough
/// that a profiled run's clock read per phase and group (a lap) costs
/// little beside the work.
const GROUP_UNITS: usize = 4;

/// The span of address bits the CPU compares when it checks whether a
/// load depends on an earlier store. lz4 writes its output at nearly the
/// offsets it reads its input from, so an output buffer at the same
/// address modulo this span as the input makes loads falsely wait on
/// stores ("4K aliasing"): lz4 runs up to 2.7x slower on incompressible
/// units. Each output therefore starts half this span away from its input.
const ALIAS_SPAN: usize = 4096;

/// Where in an output slot starting at `slot` the compressed form of the
/// unit at `input` starts: half of `ALIAS_SPAN` away from the input's
/// offset, so stores never alias the loads. Below `ALIAS_SPAN`.
pub fn unaliased_offset(input: *const u8, slot: *const u8) -> usize {
    let want = (input as usize + ALIAS_SPAN / 2) % ALIAS_SPAN;
    (want + ALIAS_SPAN - slot as usize % ALIAS_SPAN) % ALIAS_SPAN
}

/// Bytes of an output slot: the largest lz4 output of a unit, from any
/// offset [`unaliased_offset`] may pick.
pub fn slot_bytes(unit_bytes: usize) -> usize {
    lz4_flex::block::get_maximum_output_size(unit_bytes) + ALIAS_SPAN
}

/// A group of input units and their output slots.
type Group<'a, 'b> = (&'a [&'b [u8]], &'a mut [u8]);

/// How units are encoded.
#[derive(Clone, Copy, Debug)]
pub struct Encoder {
    /// Bytes in one unit.
    pub unit_bytes: usize,
    /// Compress with lz4.
    pub compression: bool,
    /// Compute fingerprints (needed only for dedup).
    pub fingerprint: bool,
}

/// The encoded form of one unit.
#[derive(Clone, Copy, Debug, Default)]
pub struct EncodedUnit {
    /// Fingerprint of the stored bytes (zero when fingerprints are off).
    pub fingerprint: Fingerprint,
    /// Stored length in bytes; equal to the unit size when stored raw.
    pub len: u32,
    /// Where in its output slot the compressed form starts.
    at: u32,
}

impl EncodedUnit {
    /// A unit played back from a tape: its fingerprint and stored length.
    pub(super) fn replayed(fingerprint: Fingerprint, len: u32) -> Self {
        EncodedUnit { fingerprint, len, at: 0 }
    }
}

/// Reusable output buffers for a batch: one slot of `stride` bytes a unit.
/// Only the part of a slot that a unit's output fills is ever touched.
#[derive(Clone, Debug, Default)]
pub struct EncodedBatch {
    arena: Vec<u8>,
    stride: usize,
    units: Vec<EncodedUnit>,
}

impl EncodedBatch {
    /// Encoded units, in input order.
    pub fn units(&self) -> &[EncodedUnit] {
        &self.units
    }

    /// Refills the batch with `n` units `read` produces (from a tape), with
    /// no stored bytes: for drives that keep metadata only.
    pub(super) fn replayed(
        &mut self,
        n: usize,
        mut read: impl FnMut(&mut EncodedUnit) -> std::io::Result<()>,
    ) -> std::io::Result<()> {
        self.stride = 0;
        self.arena.clear();
        self.units.clear();
        self.units.resize(n, EncodedUnit::default());
        self.units.iter_mut().try_for_each(&mut read)
    }

    /// The stored bytes of unit `i`: its compressed form, or `raw` itself
    /// when it is stored raw.
    pub fn stored<'a>(&'a self, i: usize, raw: &'a [u8]) -> &'a [u8] {
        let len = self.units[i].len as usize;
        if len == raw.len() {
            raw
        } else {
            let at = i * self.stride + self.units[i].at as usize;
            &self.arena[at..at + len]
        }
    }
}

impl Encoder {
    /// Whether encoding does anything (compression or fingerprints), so
    /// it is worth running beside the in-order half.
    pub fn has_work(&self) -> bool {
        self.compression || self.fingerprint
    }

    /// Encodes `units` (each exactly `unit_bytes` long) into `out`.
    pub fn encode(&self, units: &[&[u8]], out: &mut EncodedBatch) {
        let stride = if self.compression { slot_bytes(self.unit_bytes) } else { 0 };
        out.stride = stride;
        out.arena.resize(units.len() * stride, 0);
        out.units.clear();
        out.units.resize(units.len(), EncodedUnit::default());
        let serial = units.len() < PARALLEL_MIN_UNITS;
        // Each thread times its run of groups as laps (see `profile::Laps`).
        if stride == 0 {
            // No compression: only fingerprints, and no arena.
            let work = |laps: &mut Laps, (group, encs): (&[&[u8]], &mut [EncodedUnit])| {
                self.encode_group(laps, group, &mut [], 0, encs)
            };
            if serial || !self.fingerprint {
                let mut laps = Laps::start();
                units.chunks(GROUP_UNITS).zip(out.units.chunks_mut(GROUP_UNITS)).for_each(|g| work(&mut laps, g));
            } else {
                units
                    .par_chunks(GROUP_UNITS)
                    .zip(out.units.par_chunks_mut(GROUP_UNITS))
                    .for_each_init(Laps::start, work);
            }
            return;
        }
        let slots = stride * GROUP_UNITS;
        let work = |laps: &mut Laps, (group, encs): (Group, &mut [EncodedUnit])| {
            self.encode_group(laps, group.0, group.1, stride, encs)
        };
        if serial {
            let mut laps = Laps::start();
            units
                .chunks(GROUP_UNITS)
                .zip(out.arena.chunks_mut(slots))
                .zip(out.units.chunks_mut(GROUP_UNITS))
                .for_each(|g| work(&mut laps, g));
        } else {
            units
                .par_chunks(GROUP_UNITS)
                .zip(out.arena.par_chunks_mut(slots))
                .zip(out.units.par_chunks_mut(GROUP_UNITS))
                .for_each_init(Laps::start, work);
        }
    }

    /// Encodes a group of units into their slots (`stride` bytes each, or
    /// none without compression): all of them through lz4, then all
    /// through blake3, so a profiled run times each phase once a group.
    fn encode_group(&self, laps: &mut Laps, units: &[&[u8]], slots: &mut [u8], stride: usize, out: &mut [EncodedUnit]) {
        if self.compression {
            for ((unit, slot), enc) in units.iter().zip(slots.chunks_mut(stride)).zip(out.iter_mut()) {
                debug_assert_eq!(unit.len(), self.unit_bytes, "pipeline input must be whole units");
                let at = unaliased_offset(unit.as_ptr(), slot.as_ptr());
                // The slot is sized by slot_bytes, so this cannot fail.
                let n = lz4_flex::block::compress_into(unit, &mut slot[at..]).unwrap_or(unit.len());
                *enc =
                    EncodedUnit { fingerprint: Fingerprint::default(), len: n.min(unit.len()) as u32, at: at as u32 };
            }
            laps.lap(Phase::Lz4);
        } else {
            for (unit, enc) in units.iter().zip(out.iter_mut()) {
                debug_assert_eq!(unit.len(), self.unit_bytes, "pipeline input must be whole units");
                enc.len = unit.len() as u32;
            }
        }
        if self.fingerprint {
            for (i, (unit, enc)) in units.iter().zip(out.iter_mut()).enumerate() {
                let stored = if enc.len as usize == unit.len() {
                    unit
                } else {
                    let at = i * stride + enc.at as usize;
                    &slots[at..at + enc.len as usize]
                };
                enc.fingerprint = Fingerprint::of(stored);
            }
            laps.lap(Phase::Blake3);
        }
    }
}

/// Restores a unit from its stored bytes into `out` (one unit long).
pub fn decode(stored: &[u8], out: &mut [u8]) -> Result<(), String> {
    if stored.len() == out.len() {
        out.copy_from_slice(stored);
        return Ok(());
    }
    match lz4_flex::block::decompress_into(stored, out) {
        Ok(n) if n == out.len() => Ok(()),
        Ok(n) => Err(format!("decompressed to {n} bytes, expected {}", out.len())),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressible_units_shrink_and_round_trip() {
        let enc = Encoder { unit_bytes: 4096, compression: true, fingerprint: true };
        let zeros = vec![0u8; 4096];
        let mut noise = vec![0u8; 4096];
        let mut x = 0x9e3779b97f4a7c15u64;
        for b in noise.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        let units: Vec<&[u8]> = vec![&zeros, &noise, &zeros];
        let mut out = EncodedBatch::default();
        enc.encode(&units, &mut out);
        assert!(out.units()[0].len < 100);
        assert_eq!(out.units()[1].len, 4096, "incompressible stored raw");
        assert_eq!(out.units()[0].fingerprint, out.units()[2].fingerprint);
        assert_ne!(out.units()[0].fingerprint, out.units()[1].fingerprint);
        for (i, raw) in units.iter().enumerate() {
            assert_eq!(out.units()[i].fingerprint, Fingerprint::of(out.stored(i, raw)), "the stored form is hashed");
            let mut back = vec![1u8; 4096];
            decode(out.stored(i, raw), &mut back).unwrap();
            assert_eq!(&back[..], *raw);
        }
        assert!(decode(&[0xff, 0xff], &mut [0u8; 4096]).is_err());
    }

    #[test]
    fn outputs_start_half_a_page_from_their_inputs() {
        let slot = vec![0u8; slot_bytes(4096)];
        let input = vec![0u8; 3 * 4096];
        for shift in [0, 1, 16, 2047, 2048, 4095] {
            let unit = &input[shift..shift + 4096];
            let at = unaliased_offset(unit.as_ptr(), slot.as_ptr());
            assert!(at < ALIAS_SPAN);
            let out = slot[at..].as_ptr() as usize;
            assert_eq!((out + ALIAS_SPAN - unit.as_ptr() as usize % ALIAS_SPAN) % ALIAS_SPAN, ALIAS_SPAN / 2);
            assert!(slot.len() - at >= lz4_flex::block::get_maximum_output_size(4096));
        }
    }

    #[test]
    fn parallel_and_serial_encoding_agree() {
        let data: Vec<Vec<u8>> = (0..64u32).map(|i| (0..4096u32).map(|j| ((i * j) >> 3) as u8).collect()).collect();
        let units: Vec<&[u8]> = data.iter().map(|v| &v[..]).collect();
        let enc = Encoder { unit_bytes: 4096, compression: true, fingerprint: true };
        let mut par = EncodedBatch::default();
        enc.encode(&units, &mut par);
        for (i, u) in units.iter().enumerate() {
            let mut one = EncodedBatch::default();
            enc.encode(&[u], &mut one);
            assert_eq!(one.units()[0].len, par.units()[i].len);
            assert_eq!(one.units()[0].fingerprint, par.units()[i].fingerprint);
            assert_eq!(one.stored(0, u), par.stored(i, u));
        }
    }
}
