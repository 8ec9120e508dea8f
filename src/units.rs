//! Address newtypes and byte sizes.
//!
//! Every address space has its own type so the compiler keeps them apart:
//! [`Lba`] (512-byte host sectors), [`Lpn`] (4 KiB mapping units),
//! [`BlockId`] / [`DieId`] (NAND), [`ChunkId`] (stored unit contents).
//! [`ByteSize`] parses the sizes users type (`240GB`, `256GiB`, `4k`).

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;
use crate::input::Shown;

/// Bytes in one host sector (the unit of [`Lba`]).
pub const SECTOR_BYTES: u64 = 512;

/// A host logical block address, in 512-byte sectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Lba(pub u64);

impl Lba {
    /// The sector holding byte `offset`.
    pub fn from_byte(offset: u64) -> Self {
        Lba(offset / SECTOR_BYTES)
    }

    /// Byte offset of this sector.
    pub fn byte(self) -> u64 {
        self.0 * SECTOR_BYTES
    }
}

/// A logical page number: the index of one mapping unit (4 KiB by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Lpn(pub u64);

/// A NAND erase block, numbered across the whole array (die-major).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct BlockId(pub u32);

/// A NAND die, numbered across all channels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct DieId(pub u32);

/// Division by a divisor fixed at setup, without a `div` instruction: a
/// shift when the divisor is a power of two, otherwise a multiply by its
/// rounded-up reciprocal, `ceil(2^64 / d)`, which is exact for every `u32`
/// dividend (Lemire, Kaser and Kurz, "Faster remainder by direct
/// computation", 2019). Hot paths divide by page and die sizes. Serialized
/// as the divisor itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "u32", into = "u32")]
pub struct Divisor {
    d: u32,
    shift: u32,
    /// The reciprocal, or 0 when `d` is a power of two.
    m: u64,
}

impl Divisor {
    /// Division by `d`; `None` for zero.
    pub fn new(d: u32) -> Option<Self> {
        match d {
            0 => None,
            _ if d.is_power_of_two() => Some(Divisor { d, shift: d.trailing_zeros(), m: 0 }),
            _ => Some(Divisor { d, shift: 0, m: u64::MAX / u64::from(d) + 1 }),
        }
    }

    /// The divisor.
    pub fn get(self) -> u32 {
        self.d
    }
}

impl std::ops::Div<Divisor> for u32 {
    type Output = u32;
    #[inline]
    fn div(self, d: Divisor) -> u32 {
        if d.m == 0 {
            self >> d.shift
        } else {
            ((u128::from(d.m) * u128::from(self)) >> 64) as u32
        }
    }
}

impl std::ops::Rem<Divisor> for u32 {
    type Output = u32;
    #[inline]
    fn rem(self, d: Divisor) -> u32 {
        self - self / d * d.d
    }
}

impl TryFrom<u32> for Divisor {
    type Error = &'static str;
    fn try_from(d: u32) -> Result<Self, Self::Error> {
        Divisor::new(d).ok_or("a divisor must not be zero")
    }
}

impl From<Divisor> for u32 {
    fn from(d: Divisor) -> u32 {
        d.d
    }
}

/// A stored chunk (one unit's content, possibly shared by several LPNs).
///
/// Stored as index + 1 so `Option<ChunkId>` costs 4 bytes in the map.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ChunkId(NonZeroU32);

impl ChunkId {
    /// The chunk at table index `index`; `None` when the index cannot be
    /// represented (more than `u32::MAX - 1` chunks).
    pub fn from_index(index: usize) -> Option<Self> {
        Self::from_raw(u32::try_from(index).ok()?.checked_add(1)?)
    }

    /// Position of this chunk in the chunk table.
    pub fn index(self) -> usize {
        (self.0.get() - 1) as usize
    }

    /// The stored form: index + 1, never 0.
    pub fn raw(self) -> u32 {
        self.0.get()
    }

    /// The chunk whose [`ChunkId::raw`] is `raw`; `None` for 0.
    pub fn from_raw(raw: u32) -> Option<Self> {
        NonZeroU32::new(raw).map(ChunkId)
    }
}

/// The first 16 bytes of the blake3 hash of a unit's stored form (its lz4
/// bytes, or the unit itself when stored raw): the dedup identity. lz4 is
/// deterministic and lossless, so equal units have equal stored forms and
/// different units different ones; hashing the compressed bytes halves
/// the hash work on half-compressible data.
///
/// With n distinct units the chance that any two share a 128-bit prefix is
/// about n^2 / 2^129: for a whole 240 GB drive (n = 5.9e7 units) that is
/// 1e-23, far below the drive's own uncorrectable-error rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Fingerprint(pub [u8; 16]);

impl Fingerprint {
    /// Fingerprint of `data`.
    pub fn of(data: &[u8]) -> Self {
        let hash = blake3::hash(data);
        let mut fp = [0u8; 16];
        fp.copy_from_slice(&hash.as_bytes()[..16]);
        Fingerprint(fp)
    }

    /// The first 8 bytes as an integer: already uniformly distributed, so
    /// it serves directly as a hash-table hash.
    pub fn hash64(&self) -> u64 {
        let mut b = [0u8; 8];
        b.copy_from_slice(&self.0[..8]);
        u64::from_le_bytes(b)
    }
}

/// A point in simulated time, in nanoseconds since the drive was built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SimTime(pub u64);

impl SimTime {
    /// Time zero.
    pub const ZERO: SimTime = SimTime(0);

    /// The latest a drive's clock may reach: 2^63 ns, 292 years.
    /// Arithmetic on simulated time saturates at `u64::MAX` instead of
    /// wrapping, and one command adds far less than the 292 years between
    /// the two, so only a run past this can have saturated: the drive
    /// refuses it ([`crate::DriveError::ClockOverflow`]).
    pub const LIMIT: SimTime = SimTime(1 << 63);

    /// Seconds as a float, for reports.
    pub fn secs(self) -> f64 {
        self.0 as f64 / 1e9
    }
}

impl std::ops::Add<u64> for SimTime {
    type Output = SimTime;
    fn add(self, ns: u64) -> SimTime {
        SimTime(self.0.saturating_add(ns))
    }
}

/// A byte count parsed from user input.
///
/// Accepts plain bytes (`4096`), SI suffixes (`240GB` = 240e9, `kB`, `MB`,
/// `TB`), IEC suffixes (`256GiB` = 256 x 2^30, `KiB`, `MiB`, `TiB`) and fio
/// style single letters (`4k` = 4096, `1m`, `2g`: 1024-based, as fio does).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let shown = Shown::new(s);
        let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
        let (num, suffix) = s.split_at(split);
        if num.is_empty() {
            return Err(format!("'{shown}' is not a size (examples: 4096, 4k, 64MiB, 240GB)"));
        }
        let mult: u64 = match suffix.trim() {
            "" | "b" | "B" => 1,
            "k" | "K" | "KiB" | "kiB" => 1 << 10,
            "m" | "M" | "MiB" => 1 << 20,
            "g" | "G" | "GiB" => 1 << 30,
            "t" | "T" | "TiB" => 1 << 40,
            "kB" | "KB" => 1_000,
            "MB" => 1_000_000,
            "GB" => 1_000_000_000,
            "TB" => 1_000_000_000_000,
            other => {
                return Err(format!(
                    "unknown size suffix '{}' in '{shown}' (use B, k/KiB, KB, M/MiB, MB, G/GiB, GB, T/TiB, TB)",
                    Shown::new(other)
                ))
            }
        };
        let value = if num.contains('.') {
            let f: f64 =
                num.parse().map_err(|_| format!("'{shown}' is not a size (bad number '{}')", Shown::new(num)))?;
            let bytes = f * mult as f64;
            if !bytes.is_finite() || bytes >= u64::MAX as f64 || bytes.fract() != 0.0 {
                return Err(format!("'{shown}' is not a whole number of bytes"));
            }
            bytes as u64
        } else {
            let n: u64 = num.parse().map_err(|_| format!("'{shown}' is too large"))?;
            n.checked_mul(mult).ok_or_else(|| format!("'{shown}' is too large"))?
        };
        Ok(ByteSize(value))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(&str, u64); 4] = [("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)];
        for (name, size) in UNITS {
            if self.0 >= size {
                return write!(f, "{:.2} {name}", self.0 as f64 / size as f64);
            }
        }
        write!(f, "{} B", self.0)
    }
}

/// Where a chunk's stored bytes sit: `len` bytes from byte `offset` of
/// `block`. A chunk never crosses a block boundary; it may cross pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NandExtent {
    /// The erase block.
    pub block: BlockId,
    /// Byte offset inside the block.
    pub offset: u32,
    /// Stored (compressed) length in bytes.
    pub len: u32,
}

impl NandExtent {
    /// Pages `first..=last` of the block that this extent touches.
    pub fn pages(&self, page_bytes: Divisor) -> (u32, u32) {
        (self.offset / page_bytes, (self.offset + self.len - 1) / page_bytes)
    }
}

/// How an extent packs into 64 bits: the length in the low `len_bits`,
/// the offset above it in `offset_bits`, the block in the rest.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtentPacking {
    offset_bits: u8,
    len_bits: u8,
}

impl ExtentPacking {
    /// The packing for blocks of `block_bytes` and chunks of at most
    /// `unit_bytes`, or an error when `blocks` blocks do not fit the rest.
    pub fn new(blocks: u32, block_bytes: u32, unit_bytes: u32) -> Result<Self, ConfigError> {
        let bits = |max: u32| (32 - max.leading_zeros()) as u8;
        let p = ExtentPacking { offset_bits: bits(block_bytes.saturating_sub(1)), len_bits: bits(unit_bytes) };
        let block_bits = 64 - u32::from(p.offset_bits + p.len_bits);
        if block_bits < 32 && blocks > (1 << block_bits) {
            return Err(ConfigError::invalid(
                "geometry",
                format!("{blocks} blocks of {block_bytes} bytes do not fit a 64-bit chunk extent"),
            ));
        }
        Ok(p)
    }

    #[inline]
    pub(crate) fn pack(self, e: NandExtent) -> [u32; 2] {
        let v = (u64::from(e.block.0) << (self.offset_bits + self.len_bits))
            | (u64::from(e.offset) << self.len_bits)
            | u64::from(e.len);
        [v as u32, (v >> 32) as u32]
    }

    /// The block of a packed extent, without unpacking the rest.
    #[inline]
    pub(crate) fn block_of(self, w: [u32; 2]) -> BlockId {
        let v = u64::from(w[0]) | (u64::from(w[1]) << 32);
        BlockId((v >> (self.offset_bits + self.len_bits)) as u32)
    }

    #[inline]
    pub(crate) fn unpack(self, w: [u32; 2]) -> NandExtent {
        let v = u64::from(w[0]) | (u64::from(w[1]) << 32);
        let mask = |bits: u8| (1u64 << bits) - 1;
        NandExtent {
            block: BlockId((v >> (self.offset_bits + self.len_bits)) as u32),
            offset: ((v >> self.len_bits) & mask(self.offset_bits)) as u32,
            len: (v & mask(self.len_bits)) as u32,
        }
    }
}

/// A wall-clock time in UTC, for headers and fio's job lines only: no
/// figure depends on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UtcTime {
    /// Seconds since 1970-01-01 00:00:00 UTC.
    pub unix_secs: u64,
}

impl UtcTime {
    /// The system clock's time now.
    pub fn now() -> Self {
        let unix_secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        UtcTime { unix_secs }
    }

    /// Year, month (1-12) and day of the month (Howard Hinnant's
    /// civil-from-days).
    fn date(self) -> (i64, u64, u64) {
        let z = (self.unix_secs / 86_400) as i64 + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let day = (doy - (153 * mp + 2) / 5 + 1) as u64;
        let month = (if mp < 10 { mp + 3 } else { mp - 9 }) as u64;
        (yoe + era * 400 + i64::from(month <= 2), month, day)
    }

    fn clock(self) -> String {
        let s = self.unix_secs % 86_400;
        format!("{:02}:{:02}:{:02}", s / 3600, s % 3600 / 60, s % 60)
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`.
    pub fn iso(self) -> String {
        let (y, m, d) = self.date();
        format!("{y:04}-{m:02}-{d:02}T{}Z", self.clock())
    }

    /// As C's `ctime` writes it, without the newline: `Mon Dec  7 05:04:00 2026`.
    pub fn ctime(self) -> String {
        const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
        const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
        let (y, m, d) = self.date();
        let weekday = DAYS[(self.unix_secs / 86_400 % 7) as usize];
        format!("{weekday} {} {d:2} {} {y}", MONTHS[m as usize - 1], self.clock())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn extents_pack_and_unpack_at_the_limits() {
        let p = ExtentPacking::new(1 << 20, 2 << 20, 4096).unwrap();
        for e in [
            NandExtent { block: BlockId(0), offset: 0, len: 1 },
            NandExtent { block: BlockId((1 << 20) - 1), offset: (2 << 20) - 1, len: 4096 },
            NandExtent { block: BlockId(12345), offset: 777_777, len: 2048 },
        ] {
            assert_eq!(p.unpack(p.pack(e)), e);
        }
        assert!(ExtentPacking::new(u32::MAX, u32::MAX, 1 << 20).is_err(), "too many blocks for the bits left");
    }

    use super::*;

    fn check_divisor(d: u32, n: u32) {
        let div = Divisor::new(d).unwrap();
        assert_eq!((n / div, n % div), (n / d, n % d), "{n} / {d}");
    }

    #[test]
    fn divisor_matches_division_at_the_edges() {
        assert_eq!(Divisor::new(0), None);
        for d in
            [1, 2, 3, 5, 7, 73, 512, 1536, 4095, 4096, 8192, 12_345, 1 << 31, (1 << 31) + 1, u32::MAX - 1, u32::MAX]
        {
            for n in [0, 1, d - 1, d, d.saturating_add(1), d.saturating_mul(3), u32::MAX - 1, u32::MAX] {
                check_divisor(d, n);
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn divisor_matches_division(d in 1u32.., n: u32) {
            check_divisor(d, n);
        }
    }

    #[test]
    fn sizes_parse_si_iec_and_fio_style() {
        let p = |s: &str| s.parse::<ByteSize>().map(|b| b.0);
        assert_eq!(p("4096"), Ok(4096));
        assert_eq!(p("4k"), Ok(4096));
        assert_eq!(p("240GB"), Ok(240_000_000_000));
        assert_eq!(p("256GiB"), Ok(256 << 30));
        assert_eq!(p("1.5MiB"), Ok(3 << 19));
        assert!(p("12XB").is_err());
        assert!(p("GB").is_err());
        assert!(p("").is_err());
        assert!(p("99999999999999999999T").is_err());
        assert!(p("0.3").is_err());
    }

    #[test]
    fn chunk_id_round_trips_and_rejects_overflow() {
        assert_eq!(ChunkId::from_index(7).unwrap().index(), 7);
        assert!(ChunkId::from_index(u32::MAX as usize).is_none());
        assert_eq!(std::mem::size_of::<Option<ChunkId>>(), 4);
    }

    #[test]
    fn utc_times_read_as_fio_and_iso_write_them() {
        // fio 3.33's JSON of one run: "timestamp": 1796619840, "time": "Mon Dec  7 05:04:00 2026".
        let t = UtcTime { unix_secs: 1_796_619_840 };
        assert_eq!(t.ctime(), "Mon Dec  7 05:04:00 2026");
        assert_eq!(t.iso(), "2026-12-07T05:04:00Z");
        assert_eq!(UtcTime { unix_secs: 951_782_400 }.iso(), "2000-02-29T00:00:00Z");
        assert_eq!(UtcTime { unix_secs: 0 }.ctime(), "Thu Jan  1 00:00:00 1970");
    }
}
