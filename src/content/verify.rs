//! fio's `verify` (verify.c, fio 3.33): the header and checksum a
//! verifying job writes into each `verify_interval` of a block, and the
//! check fio makes of what a read returns. The bytes are fio's own, so fio
//! can verify what a run wrote and a run can verify what fio wrote.

use std::fmt;

use md5::Digest;
use rayon::prelude::*;

use crate::content::buffers::Pattern;
use crate::content::pattern::{unit_seed, DataSpec, PatternError, PatternGen};
use crate::content::Content;
use crate::units::{Lba, SECTOR_BYTES};

/// Bytes of fio's `struct verify_header`.
pub const HEADER_BYTES: usize = 40;
/// fio's `FIO_HDR_MAGIC`.
const MAGIC: u16 = 0xacca;
/// The header bytes its own CRC covers (up to `crc32`).
const HEADER_CRC_SPAN: usize = 36;

/// fio's `fio_crc32c`: Castagnoli's polynomial from all ones, as
/// iSCSI's, but not inverted at the end.
const CRC32C_FIO: crc::Algorithm<u32> =
    crc::Algorithm { xorout: 0, check: !crc::CRC_32_ISCSI.check, ..crc::CRC_32_ISCSI };
const CRC32C: crc::Crc<u32, crc::Table<16>> = crc::Crc::<u32, crc::Table<16>>::new(&CRC32C_FIO);
/// fio's `fio_crc32`: the 0x04c11db7 polynomial, most significant bit
/// first, starting from 0 and not inverted.
const CRC32_FIO: crc::Algorithm<u32> = crc::Algorithm {
    width: 32,
    poly: 0x04c1_1db7,
    init: 0,
    refin: false,
    refout: false,
    xorout: 0,
    check: 0x89a1_897f,
    residue: 0,
};
const CRC32: crc::Crc<u32, crc::Table<16>> = crc::Crc::<u32, crc::Table<16>>::new(&CRC32_FIO);
/// fio's `fio_crc64` is the Jones polynomial, reflected, from 0 (Redis's).
const CRC64: crc::Crc<u64, crc::Table<16>> = crc::Crc::<u64, crc::Table<16>>::new(&crc::CRC_64_REDIS);
/// fio's `fio_crc16` is Linux's lib/crc16.c: CRC-16/ARC.
const CRC16: crc::Crc<u16, crc::Table<16>> = crc::Crc::<u16, crc::Table<16>>::new(&crc::CRC_16_ARC);
/// fio's `fio_crc7` is Linux's old crc7: CRC-7/MMC.
const CRC7: crc::Crc<u8> = crc::Crc::<u8>::new(&crc::CRC_7_MMC);

/// What fio's `verify` checks each interval of a block with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checksum {
    /// `md5`.
    Md5,
    /// `crc64`.
    Crc64,
    /// `crc32`.
    Crc32,
    /// `crc32c` and `crc32c-intel`.
    Crc32c,
    /// `crc16`.
    Crc16,
    /// `crc7`.
    Crc7,
    /// `sha1`.
    Sha1,
    /// `sha3-224`.
    Sha3_224,
    /// `sha3-256`.
    Sha3_256,
    /// `sha3-384`.
    Sha3_384,
    /// `sha3-512`.
    Sha3_512,
    /// `xxhash` (XXH32, seed 1).
    Xxhash,
    /// `meta`: the header alone (and `verify_pattern` after it, if given).
    Meta,
    /// `verify_pattern` without `verify`: a header, then the pattern.
    Pattern,
    /// `verify=pattern`: the pattern over the whole block, no header.
    PatternOnly,
    /// `null`: read back, check nothing.
    Null,
}

impl Checksum {
    /// fio's names, in its option's order, and what each means.
    pub const NAMES: [(&'static str, Checksum); 16] = [
        ("md5", Checksum::Md5),
        ("crc64", Checksum::Crc64),
        ("crc32", Checksum::Crc32),
        ("crc32c-intel", Checksum::Crc32c),
        ("crc32c", Checksum::Crc32c),
        ("crc16", Checksum::Crc16),
        ("crc7", Checksum::Crc7),
        ("sha1", Checksum::Sha1),
        ("sha3-224", Checksum::Sha3_224),
        ("sha3-256", Checksum::Sha3_256),
        ("sha3-384", Checksum::Sha3_384),
        ("sha3-512", Checksum::Sha3_512),
        ("xxhash", Checksum::Xxhash),
        ("meta", Checksum::Meta),
        ("pattern", Checksum::PatternOnly),
        ("null", Checksum::Null),
    ];

    /// The checksum fio names `name`, if any.
    pub fn from_name(name: &str) -> Option<Checksum> {
        Self::NAMES.iter().find(|(n, _)| *n == name).map(|&(_, c)| c)
    }

    /// fio's number for it in the header (`enum` in verify.h).
    fn code(self) -> u16 {
        match self {
            Checksum::Meta => 1,
            Checksum::Md5 => 2,
            Checksum::Crc64 => 3,
            Checksum::Crc32 => 4,
            Checksum::Crc32c => 5,
            Checksum::Crc16 => 7,
            Checksum::Crc7 => 8,
            Checksum::Sha3_224 => 11,
            Checksum::Sha3_256 => 12,
            Checksum::Sha3_384 => 13,
            Checksum::Sha3_512 => 14,
            Checksum::Xxhash => 15,
            Checksum::Sha1 => 16,
            Checksum::Pattern => 17,
            Checksum::PatternOnly => 18,
            Checksum::Null => 19,
        }
    }

    /// Bytes of the checksum after the header (fio's `struct vhdr_*`).
    fn digest_bytes(self) -> usize {
        match self {
            Checksum::Md5 => 16,
            Checksum::Crc64 => 8,
            Checksum::Crc32 | Checksum::Crc32c | Checksum::Xxhash => 4,
            Checksum::Crc16 => 2,
            Checksum::Crc7 => 1,
            Checksum::Sha1 => 20,
            Checksum::Sha3_224 => 28,
            Checksum::Sha3_256 => 32,
            Checksum::Sha3_384 => 48,
            Checksum::Sha3_512 => 64,
            Checksum::Meta | Checksum::Pattern | Checksum::PatternOnly | Checksum::Null => 0,
        }
    }

    /// Bytes fio puts before an interval's data: the header and checksum
    /// (fio's `hdr_size`).
    pub fn header_bytes(self) -> usize {
        match self {
            Checksum::PatternOnly => 0,
            c => HEADER_BYTES + c.digest_bytes(),
        }
    }

    /// The checksum of `data` as fio stores it (host byte order, so sha1's
    /// five words come out little-endian).
    fn digest(self, data: &[u8], out: &mut [u8]) {
        match self {
            Checksum::Md5 => out.copy_from_slice(&md5::Md5::digest(data)),
            Checksum::Crc64 => out.copy_from_slice(&CRC64.checksum(data).to_le_bytes()),
            Checksum::Crc32 => out.copy_from_slice(&CRC32.checksum(data).to_le_bytes()),
            Checksum::Crc32c => out.copy_from_slice(&CRC32C.checksum(data).to_le_bytes()),
            Checksum::Crc16 => out.copy_from_slice(&CRC16.checksum(data).to_le_bytes()),
            Checksum::Crc7 => out[0] = CRC7.checksum(data),
            Checksum::Sha1 => {
                let sum = sha1::Sha1::digest(data);
                for (word, be) in out.chunks_exact_mut(4).zip(sum.chunks_exact(4)) {
                    word.copy_from_slice(&[be[3], be[2], be[1], be[0]]);
                }
            }
            Checksum::Sha3_224 => out.copy_from_slice(&sha3::Sha3_224::digest(data)),
            Checksum::Sha3_256 => out.copy_from_slice(&sha3::Sha3_256::digest(data)),
            Checksum::Sha3_384 => out.copy_from_slice(&sha3::Sha3_384::digest(data)),
            Checksum::Sha3_512 => out.copy_from_slice(&sha3::Sha3_512::digest(data)),
            Checksum::Xxhash => out.copy_from_slice(&xxhash_rust::xxh32::xxh32(data, 1).to_le_bytes()),
            Checksum::Meta | Checksum::Pattern | Checksum::PatternOnly | Checksum::Null => {}
        }
    }

    fn name(self) -> &'static str {
        match self {
            Checksum::Crc32c => "crc32c",
            c => Self::NAMES.iter().find(|(_, n)| *n == c).map_or("pattern", |(name, _)| name),
        }
    }
}

/// A verifying job's options (fio's `verify` and its family).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verify {
    /// `verify`.
    pub checksum: Checksum,
    /// `verify_interval`: bytes each header covers (a divisor of every
    /// write size, at least one header's worth).
    pub interval: u32,
    /// `verify_offset`: where in each interval the header sits (0: first).
    pub offset: u32,
    /// `verify_pattern`: what fills writes instead of random bytes.
    pub pattern: Option<Pattern>,
    /// `do_verify`: read the job's writes back once it has written them.
    pub read_back: bool,
    /// `verify_only`: issue none of the job's writes, only read back what
    /// they would have written.
    pub only: bool,
    /// `verify_fatal`: stop at the first bad block.
    pub fatal: bool,
    /// `verify_backlog`: read back after every this many writes (0: only
    /// once the job's writes are done).
    pub backlog: u64,
    /// `verify_backlog_batch`: how many to read back then (0: `backlog`).
    pub batch: u64,
    /// fio's number of the job (1 for the first), stamped in each header.
    pub thread: u16,
}

/// What a read of a block should find beside fio's header and checksum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Expect {
    /// The write's number among the job's writes (fio's `numberio`, kept
    /// to 16 bits), when the job can know it.
    pub numberio: Option<u64>,
}

/// A block that failed verification: fio's message for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure(pub String);

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Verify {
    /// Whether the job's writes are verify's own (fresh data and headers):
    /// all but `null`'s, which are the job's usual writes.
    pub fn fills_writes(&self) -> bool {
        self.checksum != Checksum::Null
    }

    /// Bytes between headers in a block of `len` bytes (fio's `get_hdr_inc`).
    fn step(&self, len: usize) -> usize {
        match self.interval as usize {
            0 => len,
            i if i > len => len,
            i => i,
        }
    }

    /// Checks the options against a job whose commands are `smallest`
    /// bytes or more, naming the bad option.
    pub fn check_sizes(&self, smallest: u64) -> Result<(), String> {
        let header = self.checksum.header_bytes();
        if self.checksum != Checksum::Null && self.step(smallest as usize) <= header {
            return Err(format!(
                "verify_interval {} leaves no data after verify={}'s {header}-byte header (fio: \"Blocksize too small\")",
                self.step(smallest as usize),
                self.checksum.name()
            ));
        }
        if self.offset > 0 && self.offset as usize + header > self.step(smallest as usize) {
            return Err(format!(
                "verify_offset {} puts the {header}-byte header past the {}-byte interval",
                self.offset,
                self.step(smallest as usize)
            ));
        }
        Ok(())
    }

    /// Writes fio's headers into `buf`, a write at byte `at` filled with
    /// its data: the job's write number `numberio`, its random seed, and
    /// `nsec` as the issue time (seconds 0).
    pub fn stamp(&self, buf: &mut [u8], at: u64, numberio: u64, seed: u64, nsec: u32) {
        if matches!(self.checksum, Checksum::PatternOnly | Checksum::Null) {
            return;
        }
        let step = self.step(buf.len());
        let header = self.checksum.header_bytes();
        if self.offset as usize + header > step {
            // Refused before any write (`check_sizes`).
            return;
        }
        for (n, chunk) in buf.chunks_exact_mut(step).enumerate() {
            let h = &mut chunk[..HEADER_BYTES];
            h[0..2].copy_from_slice(&MAGIC.to_le_bytes());
            h[2..4].copy_from_slice(&self.checksum.code().to_le_bytes());
            h[4..8].copy_from_slice(&(step as u32).to_le_bytes());
            h[8..16].copy_from_slice(&seed.to_le_bytes());
            h[16..24].copy_from_slice(&(at + (n * step) as u64).to_le_bytes());
            h[24..28].copy_from_slice(&0u32.to_le_bytes());
            h[28..32].copy_from_slice(&nsec.to_le_bytes());
            h[32..34].copy_from_slice(&self.thread.to_le_bytes());
            h[34..36].copy_from_slice(&(numberio as u16).to_le_bytes());
            let crc = CRC32C.checksum(&h[..HEADER_CRC_SPAN]);
            h[36..40].copy_from_slice(&crc.to_le_bytes());
            let (head, data) = chunk.split_at_mut(header);
            self.checksum.digest(data, &mut head[HEADER_BYTES..]);
            if self.offset > 0 {
                swap(chunk, self.offset as usize, header);
            }
        }
    }

    /// Checks `buf`, read at byte `at`, as fio does (verify.c
    /// `verify_io_u`): each interval's header, then its checksum or
    /// pattern. The first bad interval is the failure.
    pub fn check(&self, buf: &[u8], at: u64, expect: Expect) -> Result<(), Failure> {
        if self.checksum == Checksum::Null {
            return Ok(());
        }
        let step = self.step(buf.len());
        let header = self.checksum.header_bytes();
        if self.offset as usize + header.max(HEADER_BYTES) > step {
            return Err(Failure(format!(
                "verify: a {step}-byte interval cannot hold verify={}'s {header}-byte header at offset {}",
                self.checksum.name(),
                self.offset
            )));
        }
        let mut moved = Vec::new();
        for (n, chunk) in buf.chunks_exact(step).enumerate() {
            let chunk = if self.offset > 0 {
                moved.clear();
                moved.extend_from_slice(chunk);
                swap(&mut moved, self.offset as usize, header);
                &moved[..]
            } else {
                chunk
            };
            let here = at + (n * step) as u64;
            let fail = |what: String| {
                Failure(format!(
                    "{what} at offset {here}, length {step} (requested block: offset={at}, length={})",
                    buf.len()
                ))
            };
            if self.checksum != Checksum::PatternOnly {
                check_header(chunk, step, here, expect).map_err(fail)?;
            }
            match self.checksum {
                Checksum::Meta | Checksum::Pattern | Checksum::PatternOnly => {
                    if let Some(p) = self.pattern {
                        check_pattern(&chunk[header..], p.bytes(), n * step + header).map_err(fail)?;
                    }
                }
                c => {
                    let mut sum = [0u8; 64];
                    let sum = &mut sum[..c.digest_bytes()];
                    c.digest(&chunk[header..], sum);
                    if sum[..] != chunk[HEADER_BYTES..header] {
                        let written = u16::from_le_bytes([chunk[2], chunk[3]]);
                        let mismatch = match written == c.code() {
                            true => String::new(),
                            false => format!(" (verify type mismatch: {written} media, {} given)", c.code()),
                        };
                        return Err(fail(format!(
                            "{}: verify failed: expected {}, received {}{mismatch}",
                            c.name(),
                            hex(&chunk[HEADER_BYTES..header]),
                            hex(sum)
                        )));
                    }
                }
            }
        }
        Ok(())
    }
}

/// fio's `verify_header` checks of one interval's header.
fn check_header(h: &[u8], step: usize, at: u64, expect: Expect) -> Result<(), String> {
    let u16_at = |i: usize| u16::from_le_bytes([h[i], h[i + 1]]);
    let u32_at = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap_or_default());
    if u16_at(0) != MAGIC {
        return Err(format!("verify: bad magic header {:x}, wanted {MAGIC:x}", u16_at(0)));
    }
    if u32_at(4) as usize != step {
        return Err(format!("verify: bad header length {}, wanted {step}", u32_at(4)));
    }
    if u64_at(16) != at {
        return Err(format!("verify: bad header offset {}, wanted {at}", u64_at(16)));
    }
    if let Some(n) = expect.numberio.map(|n| n as u16).filter(|&n| n != u16_at(34)) {
        return Err(format!("verify: bad header numberio {}, wanted {n}", u16_at(34)));
    }
    let crc = CRC32C.checksum(&h[..HEADER_CRC_SPAN]);
    if crc != u32_at(36) {
        return Err(format!("verify: bad header crc {:x}, calculated {crc:x}", u32_at(36)));
    }
    Ok(())
}

/// Whether `data` continues `pattern` from byte `from` of the block.
fn check_pattern(data: &[u8], pattern: &[u8], from: usize) -> Result<(), String> {
    let wanted = |i: usize| pattern.get((from + i) % pattern.len().max(1)).copied().unwrap_or(0);
    match data.iter().enumerate().find(|&(i, &b)| b != wanted(i)) {
        None => Ok(()),
        Some((i, &b)) => Err(format!("pattern: got '{b:02x}', wanted '{:02x}' at block offset {i}", wanted(i))),
    }
}

/// fio's `memswp` of the header at the start of `chunk` with the bytes at
/// `offset` (`verify_offset`); its own inverse.
fn swap(chunk: &mut [u8], offset: usize, header: usize) {
    let (head, rest) = chunk.split_at_mut(offset);
    head[..header].swap_with_slice(&mut rest[..header]);
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a verifying job writes: each write filled afresh (random bytes at
/// the job's compressibility, or `verify_pattern`), then stamped with
/// fio's headers (fio's `populate_verify_io_u`).
#[derive(Debug)]
pub struct Verified {
    gen: PatternGen,
    verify: Verify,
    seed: u64,
    writes: u64,
}

impl Verified {
    /// The writes of `spec`, whose `verify` is `verify`, drawn from `seed`,
    /// of `bs` bytes. fio fills each afresh whatever `refill_buffers` says,
    /// without dedupe, its compressible share as one region of the write
    /// (verify.c `__fill_buffer`).
    pub fn new(spec: DataSpec, verify: Verify, seed: u64, bs: u64) -> Result<Self, PatternError> {
        let spec = spec.with_dedupe(0)?.with_compress_chunk(0)?.with_unit(bs.max(1) as usize)?;
        Ok(Verified { gen: PatternGen::new(spec, seed)?, verify, seed: unit_seed(seed, 3), writes: 0 })
    }

    fn stamp_all(&mut self, lbas: &[Lba], buf: &mut [u8]) {
        let Some(each) = buf.len().checked_div(lbas.len()) else { return };
        let (first, verify, seed) = (self.writes, self.verify, self.seed);
        buf.par_chunks_mut(each.max(1)).zip(lbas).enumerate().for_each(|(i, (write, lba))| {
            let numberio = first + i as u64;
            let rand = unit_seed(seed, numberio);
            verify.stamp(write, lba.0 * SECTOR_BYTES, numberio, rand, (rand % 1_000_000_000) as u32);
        });
        self.writes += lbas.len() as u64;
    }

    fn fill_data(&mut self, lbas: &[Lba], buf: &mut [u8]) {
        let each = (buf.len() / lbas.len().max(1)).max(1);
        match self.verify.pattern {
            Some(p) => buf.chunks_mut(each).for_each(|w| p.fill(w)),
            // Writes of the generator's unit, in parallel.
            None if each == self.gen.spec().unit => self.gen.fill_batch(lbas, buf),
            // Smaller ones one at a time, so each is one region of its own.
            None => buf.chunks_mut(each).for_each(|w| self.gen.fill(w)),
        }
    }
}

impl Content for Verified {
    fn fill(&mut self, lba: Lba, buf: &mut [u8]) {
        self.fill_batch(&[lba], buf);
    }

    fn fill_batch(&mut self, lbas: &[Lba], buf: &mut [u8]) {
        self.fill_data(lbas, buf);
        self.stamp_all(lbas, buf);
    }
}

#[cfg(test)]
mod tests;
