//! Deterministic host data generators with fio's buffer-content semantics.
//!
//! This module owns the *bytes* the simulated host writes, so that the
//! compression (lz4) and dedupe (blake3 per 4 KiB unit) stages of the
//! simulator see the same data statistics a real fio run would produce.
//!
//! | [`DataSpec`] field | fio option |
//! |--------------------|------------|
//! | `compress_pct`     | `buffer_compress_percentage` |
//! | `compress_chunk`   | `buffer_compress_chunk` (default 512; 0 = whole buffer) |
//! | `dedupe_pct`       | `dedupe_percentage` |
//! | `dedupe_mode`      | `dedupe_mode` (`repeat` default, or `working_set`) |
//! | `unit`             | the write buffer fio fills per I/O, i.e. `bs` (4096 here) |
//! | `pattern`          | `buffer_pattern` ([`crate::content::buffers`]) |
//! | `reuse`            | `refill_buffers`, `scramble_buffers` ([`crate::content::buffers`]) |
//!
//! What fio does (read from `axboe/fio`):
//! - `io_u.c` `fill_io_buffer`: a write buffer is cut into chunks of
//!   `min(bs, buffer_compress_chunk)` bytes (the last may be shorter), and each
//!   chunk is filled by `lib/rand.c` `__fill_random_buf_percentage` with
//!   `segment == len`: the chunk *starts* with `len * (100 - pct) / 100`
//!   random bytes, and the rest is the fill pattern (zeros unless
//!   `buffer_pattern` is set). Each chunk draws a fresh seed. Without a
//!   percentage the buffer is all pattern, from its first byte.
//! - `init.c`: `buffer_compress_percentage=100` becomes `zero_buffers`; any
//!   other nonzero compress or dedupe percentage forces `refill_buffers`, i.e.
//!   new contents for every write: [`PatternGen`] generates every unit afresh
//!   (or regenerated as a duplicate). Without it fio writes the same buffers
//!   again, and [`crate::content::buffers::KeptBuffers`] sends them.
//! - `io_u.c` `get_buf_state`/`save_buf_state`: one draw `v` in `1..=100` per
//!   *buffer*; `v <= dedupe_percentage` makes the whole buffer a duplicate,
//!   regenerated (compression layout included) from a saved seed. In `repeat`
//!   mode that is the seed of the last unique buffer; in `working_set` mode
//!   (`dedupe.c`) it is one of the seeds of the first
//!   `size * dedupe_working_set_percentage / 100 / bs` unique buffers, chosen
//!   uniformly.
//!
//! Here a "buffer" is one `unit` (4096 bytes by default, the simulator's
//! dedupe granularity): [`PatternGen::fill`] accepts any length and cuts it
//! into units, each with its own dedupe decision; a trailing partial unit is a
//! short unit, as fio's last short chunk is.
//!
//! Deliberate differences from fio: random bytes come from ChaCha8 rather than
//! fio's cheap multiplicative word generator (`__fill_random_buf`), so the
//! bytes differ from fio's while the layout and statistics match. In `repeat`
//! mode fio saves the generator state *after* the last unique buffer, so its
//! "repeat" is in practice bitwise equal to the *next* unique buffer; here it
//! equals the previous one (the documented intent). The number of distinct
//! contents is the same, and every duplicate matches data already written.

use crate::content::buffers::{Pattern, Reuse};
pub use crate::content::dedupe::DedupeMode;
use crate::content::verify::Verify;
use crate::profile::{self, Phase};
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::fmt;

/// Default unit (one "buffer" in fio terms): the simulator's 4 KiB dedupe unit.
pub const DEFAULT_UNIT: usize = 4096;
/// fio's default `buffer_compress_chunk`.
pub const DEFAULT_COMPRESS_CHUNK: usize = 512;

/// Invalid [`DataSpec`] or [`DedupeMode`] parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatternError(String);

impl PatternError {
    pub(crate) fn new(reason: String) -> Self {
        PatternError(reason)
    }

    /// The human-readable reason.
    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid data pattern: {}", self.0)
    }
}

impl std::error::Error for PatternError {}

/// What the host writes; see the module docs for the fio mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataSpec {
    /// `buffer_compress_percentage`, 0..=100: the share of each chunk
    /// filled with `pattern`.
    pub compress_pct: u8,
    /// `buffer_compress_chunk` in bytes; 0 means one region per unit (as in fio).
    pub compress_chunk: usize,
    /// `dedupe_percentage`, 0..=100: share of units that repeat earlier content.
    pub dedupe_pct: u8,
    /// `dedupe_mode`.
    pub dedupe_mode: DedupeMode,
    /// Bytes per dedupe decision ("buffer"); default [`DEFAULT_UNIT`].
    pub unit: usize,
    /// `buffer_pattern`: what fills the compressible share (zeros by default).
    pub pattern: Pattern,
    /// Whether each write is filled afresh or sent from a kept buffer.
    pub reuse: Reuse,
    /// fio's `verify`: writes carry its headers, and the job reads them
    /// back and checks them.
    pub verify: Option<Verify>,
}

impl Default for DataSpec {
    fn default() -> Self {
        Self::incompressible()
    }
}

impl DataSpec {
    /// Validated spec with `repeat` dedupe and 4 KiB units.
    pub fn new(compress_pct: u8, compress_chunk: usize, dedupe_pct: u8) -> Result<Self, PatternError> {
        let spec = DataSpec { compress_pct, compress_chunk, dedupe_pct, ..Self::incompressible() };
        spec.validate()?;
        Ok(spec)
    }

    /// Fully random, unique units (fio default contents with `refill_buffers`).
    pub fn incompressible() -> Self {
        DataSpec {
            compress_pct: 0,
            compress_chunk: DEFAULT_COMPRESS_CHUNK,
            dedupe_pct: 0,
            dedupe_mode: DedupeMode::Repeat,
            unit: DEFAULT_UNIT,
            pattern: Pattern::ZEROS,
            reuse: Reuse::Refill,
            verify: None,
        }
    }

    /// All zeros (`zero_buffers`, or `buffer_compress_percentage=100`).
    pub fn zeros() -> Self {
        DataSpec { compress_pct: 100, ..Self::incompressible() }
    }

    /// `buffer_compress_percentage=pct` with the default 512-byte chunk.
    pub fn compressible(pct: u8) -> Result<Self, PatternError> {
        Self::new(pct, DEFAULT_COMPRESS_CHUNK, 0)
    }

    /// Same spec with `dedupe_percentage=pct`.
    pub fn with_dedupe(self, pct: u8) -> Result<Self, PatternError> {
        let spec = DataSpec { dedupe_pct: pct, ..self };
        spec.validate()?;
        Ok(spec)
    }

    /// Same spec with another `dedupe_mode`.
    pub fn with_dedupe_mode(self, mode: DedupeMode) -> Result<Self, PatternError> {
        let spec = DataSpec { dedupe_mode: mode, ..self };
        spec.validate()?;
        Ok(spec)
    }

    /// Same spec with another `buffer_compress_chunk` (0 = whole unit).
    pub fn with_compress_chunk(self, chunk: usize) -> Result<Self, PatternError> {
        let spec = DataSpec { compress_chunk: chunk, ..self };
        spec.validate()?;
        Ok(spec)
    }

    /// Same spec with `pattern` where it had zeros.
    pub fn with_pattern(self, pattern: Pattern) -> Self {
        DataSpec { pattern, ..self }
    }

    /// Same spec with writes filled as `reuse` says.
    pub fn with_reuse(self, reuse: Reuse) -> Self {
        DataSpec { reuse, ..self }
    }

    /// Same spec with fio's `verify` (or none).
    pub fn with_verify(self, verify: Option<Verify>) -> Self {
        DataSpec { verify, ..self }
    }

    /// Same spec with another unit size (e.g. fio's `bs` for per-I/O dedupe).
    pub fn with_unit(self, unit: usize) -> Result<Self, PatternError> {
        let spec = DataSpec { unit, ..self };
        spec.validate()?;
        Ok(spec)
    }

    /// Checks ranges: percentages <= 100, `unit` > 0, non-empty working set.
    pub fn validate(&self) -> Result<(), PatternError> {
        if self.compress_pct > 100 {
            return Err(PatternError(format!("buffer_compress_percentage {} > 100", self.compress_pct)));
        }
        if self.dedupe_pct > 100 {
            return Err(PatternError(format!("dedupe_percentage {} > 100", self.dedupe_pct)));
        }
        if self.unit == 0 {
            return Err(PatternError("unit must be > 0".into()));
        }
        self.dedupe_mode.validate()
    }

    /// Fills `out` with the content named by `key`, unit by unit, laid out
    /// per the spec's compressibility (dedupe settings do not apply): equal
    /// keys give equal bytes. For traces that name content by a hash.
    pub fn fill_keyed(&self, key: &[u8; 32], out: &mut [u8]) {
        for (i, unit) in out.chunks_mut(self.unit).enumerate() {
            self.write_unit(key, i as u64, unit);
        }
    }

    /// Writes the content identified by `id` into `out` (one unit).
    fn write_unit(&self, key: &[u8; 32], id: u64, out: &mut [u8]) {
        let pct = usize::from(self.compress_pct);
        if pct >= 100 {
            self.pattern.fill(out);
            return;
        }
        let mut rng = ChaCha8Rng::from_seed(*key);
        rng.set_stream(id);
        if pct == 0 {
            rng.fill_bytes(out);
            return;
        }
        let chunk = match self.compress_chunk {
            0 => out.len().max(1),
            c => c,
        };
        for c in out.chunks_mut(chunk) {
            let random = (c.len() as u128 * (100 - pct) as u128 / 100) as usize;
            let (r, z) = c.split_at_mut(random);
            rng.fill_bytes(r);
            self.pattern.fill(z);
        }
    }
}

/// splitmix64 of `base` and `index`: a well-mixed seed per index.
pub fn unit_seed(base: u64, index: u64) -> u64 {
    let mut z = base.wrapping_add(index.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Deterministic generator of host write data for one [`DataSpec`].
///
/// Unique content number `k` is ChaCha8 stream `k` under a key derived from
/// the seed, laid out per the spec; duplicates regenerate an earlier `k`.
/// Same seed and same sequence of `fill` lengths give the same bytes; whole
/// units are independent, so `fill(8192)` equals two `fill(4096)` calls.
#[derive(Debug, Clone)]
pub struct PatternGen {
    spec: DataSpec,
    /// This job's content key.
    key: [u8; 32],
    /// This job's number among those sharing a working set
    /// ([`DedupeMode::Global`]), else 0.
    own: usize,
    decide: ChaCha8Rng,
    unique: u64,
    units: u64,
    dedupe_units: u64,
    /// Scratch content ids of a parallel fill.
    ids: Vec<(usize, u64)>,
}

/// The content key of job `job` among those sharing `mode`'s working set,
/// for the job numbered `own` whose key is `key`.
fn key_for(key: &[u8; 32], own: usize, mode: DedupeMode, job: usize) -> [u8; 32] {
    match mode {
        DedupeMode::Global { seed, .. } if job != own => key_of(unit_seed(seed, job as u64)),
        _ => *key,
    }
}

/// The ChaCha8 key of contents seeded by `seed`.
fn key_of(seed: u64) -> [u8; 32] {
    let mut key = [0u8; 32];
    for (i, word) in key.chunks_exact_mut(8).enumerate() {
        word.copy_from_slice(&unit_seed(seed, i as u64).to_le_bytes());
    }
    key
}

impl PatternGen {
    /// Validates `spec` and seeds the generator explicitly from `seed`
    /// (with [`DedupeMode::Global`], its contents from the mode's seed).
    pub fn new(spec: DataSpec, seed: u64) -> Result<Self, PatternError> {
        spec.validate()?;
        let (key, own) = match spec.dedupe_mode {
            DedupeMode::Global { job, seed: shared, .. } => (key_of(unit_seed(shared, u64::from(job))), job as usize),
            _ => (key_of(seed), 0),
        };
        // Content streams count up from 0; dedupe decisions use the last one.
        let mut decide = ChaCha8Rng::from_seed(key_of(seed));
        decide.set_stream(u64::MAX);
        Ok(PatternGen { spec, key, own, decide, unique: 0, units: 0, dedupe_units: 0, ids: Vec::new() })
    }

    /// The spec this generator follows.
    pub fn spec(&self) -> &DataSpec {
        &self.spec
    }

    /// Fills `buf` (any length) unit by unit; no heap allocation.
    /// A spec without random bytes (`compress_pct` 100) fills `buf` with
    /// its pattern from `buf`'s first byte, as fio fills a buffer.
    pub fn fill(&mut self, buf: &mut [u8]) {
        profile::time(Phase::Generate, || {
            if self.spec.compress_pct >= 100 {
                for _ in buf.chunks(self.spec.unit) {
                    self.next_content_id();
                }
                self.spec.pattern.fill(buf);
                return;
            }
            for unit in buf.chunks_mut(self.spec.unit) {
                let (job, id) = self.next_content_id();
                let key = key_for(&self.key, self.own, self.spec.dedupe_mode, job);
                self.spec.write_unit(&key, id, unit);
            }
        });
    }

    /// [`PatternGen::fill`] with the units' bytes generated in parallel:
    /// content ids are drawn in order, then each unit is written from its id
    /// alone, so the bytes are the same.
    pub fn fill_parallel(&mut self, buf: &mut [u8]) {
        use rayon::prelude::*;
        let mut ids = std::mem::take(&mut self.ids);
        ids.clear();
        ids.extend((0..buf.len().div_ceil(self.spec.unit)).map(|_| self.next_content_id()));
        let (spec, key, own) = (&self.spec, &self.key, self.own);
        // Groups of units a thread takes at a time, timed once a group.
        const GROUP_UNITS: usize = 16;
        buf.par_chunks_mut(spec.unit * GROUP_UNITS).zip(ids.par_chunks(GROUP_UNITS)).for_each(|(group, ids)| {
            profile::time(Phase::Generate, || {
                group
                    .chunks_mut(spec.unit)
                    .zip(ids)
                    .for_each(|(unit, &(job, id))| spec.write_unit(&key_for(key, own, spec.dedupe_mode, job), id, unit))
            })
        });
        self.ids = ids;
    }

    /// Draws the contents of `bytes` without writing them, as a fill of
    /// that many bytes would.
    pub fn skip(&mut self, bytes: u64) {
        for _ in 0..bytes.div_ceil(self.spec.unit as u64) {
            self.next_content_id();
        }
    }

    /// Units generated so far (a short trailing unit counts as one).
    pub fn units(&self) -> u64 {
        self.units
    }

    /// Units that took the dedupe path (repeated a saved content).
    pub fn dedupe_units(&self) -> u64 {
        self.dedupe_units
    }

    /// Fresh contents minted so far.
    pub fn unique_units(&self) -> u64 {
        self.unique
    }

    /// The next unit's content: which sharing job's (this one's own unless
    /// [`DedupeMode::Global`]), and its stream.
    fn next_content_id(&mut self) -> (usize, u64) {
        self.units += 1;
        let pct = self.spec.dedupe_pct;
        if pct > 0 && self.decide.random_range(1..=100u8) <= pct {
            let id = match self.spec.dedupe_mode {
                DedupeMode::Repeat => self.unique.checked_sub(1).map(|id| (self.own, id)),
                DedupeMode::WorkingSet { units } => Some((self.own, self.decide.random_range(0..units))),
                DedupeMode::Global { units, job, jobs, .. } => {
                    let i = self.decide.random_range(0..units);
                    let each = (units / u64::from(jobs)).max(1);
                    Some((((u64::from(job) + i / each) % u64::from(jobs)) as usize, i % each))
                }
            };
            if let Some(id) = id {
                self.dedupe_units += 1;
                return id;
            }
        }
        let id = self.unique;
        self.unique += 1;
        (self.own, id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::time::Instant;

    const U: usize = DEFAULT_UNIT;

    fn units(spec: DataSpec, seed: u64, n: usize) -> Vec<u8> {
        let mut g = PatternGen::new(spec, seed).unwrap();
        let mut buf = vec![0u8; n * U];
        g.fill(&mut buf);
        buf
    }

    fn lz4_ratio(data: &[u8], unit: usize) -> f64 {
        let c: usize = data.chunks(unit).map(|u| lz4_flex::block::compress(u).len()).sum();
        c as f64 / data.len() as f64
    }

    #[test]
    fn deterministic_and_seed_sensitive() {
        let specs = [
            DataSpec::incompressible(),
            DataSpec::compressible(50).unwrap(),
            DataSpec::compressible(30).unwrap().with_dedupe(40).unwrap(),
            DataSpec::incompressible()
                .with_dedupe(60)
                .unwrap()
                .with_dedupe_mode(DedupeMode::WorkingSet { units: 16 })
                .unwrap(),
        ];
        for spec in specs {
            let a = units(spec, 7, 256);
            assert_eq!(a, units(spec, 7, 256), "{spec:?}");
            assert_ne!(a, units(spec, 8, 256), "{spec:?}");
        }
    }

    #[test]
    fn whole_unit_splits_are_equivalent() {
        let spec = DataSpec::compressible(25).unwrap().with_dedupe(50).unwrap();
        let whole = units(spec, 3, 64);
        let mut g = PatternGen::new(spec, 3).unwrap();
        let mut split = vec![0u8; 64 * U];
        for part in split.chunks_mut(4 * U) {
            g.fill(part);
        }
        assert_eq!(whole, split);
    }

    #[test]
    fn pct0_is_incompressible() {
        let data = units(DataSpec::incompressible(), 1, 2000);
        for u in data.chunks(U) {
            assert!(lz4_flex::block::compress(u).len() * 100 >= U * 99);
        }
    }

    #[test]
    fn pct50_compresses_to_about_half() {
        let data = units(DataSpec::compressible(50).unwrap(), 2, 2000);
        let r = lz4_ratio(&data, U);
        assert!((0.50..=0.60).contains(&r), "ratio {r}");
        // Larger chunk, single region per unit: also ~half.
        let spec = DataSpec::compressible(50).unwrap().with_compress_chunk(0).unwrap();
        let r = lz4_ratio(&units(spec, 2, 2000), U);
        assert!((0.49..=0.55).contains(&r), "ratio {r}");
    }

    #[test]
    fn layout_is_random_then_zeros_per_chunk() {
        // 4096 = 4 * 1000 + 96; random share 75% of each chunk, floored.
        let spec = DataSpec::new(25, 1000, 0).unwrap();
        let data = units(spec, 5, 1);
        for c in data.chunks(1000) {
            let r = c.len() * 75 / 100;
            assert!(c[r..].iter().all(|&b| b == 0));
            assert!(c[..r].iter().filter(|&&b| b != 0).count() * 10 > r * 9);
        }
        // chunk 0 = one region per unit.
        let spec = DataSpec::new(50, 0, 0).unwrap();
        let data = units(spec, 5, 1);
        assert!(data[U / 2..].iter().all(|&b| b == 0));
        assert!(data[..U / 2].iter().filter(|&&b| b != 0).count() > U / 2 * 9 / 10);
    }

    #[test]
    fn dedupe50_gives_half_duplicates() {
        let n = 10_000;
        for mode in [DedupeMode::Repeat, DedupeMode::WorkingSet { units: 100 }] {
            let spec = DataSpec::compressible(20).unwrap().with_dedupe(50).unwrap().with_dedupe_mode(mode).unwrap();
            let mut g = PatternGen::new(spec, 11).unwrap();
            let mut distinct = HashSet::new();
            let mut buf = [0u8; U];
            for _ in 0..n {
                g.fill(&mut buf);
                distinct.insert(buf.to_vec());
            }
            let d = distinct.len();
            assert!((4_700..=5_300).contains(&d), "{mode:?}: {d} distinct");
            assert_eq!(g.units(), n as u64);
            assert_eq!(g.unique_units() + g.dedupe_units(), n as u64);
            assert_eq!(d as u64, g.unique_units(), "{mode:?}");
        }
    }

    #[test]
    fn dedupe_zero_and_hundred() {
        let data = units(DataSpec::incompressible(), 4, 1000);
        let set: HashSet<&[u8]> = data.chunks(U).collect();
        assert_eq!(set.len(), 1000);
        let data = units(DataSpec::incompressible().with_dedupe(100).unwrap(), 4, 100);
        let set: HashSet<&[u8]> = data.chunks(U).collect();
        assert_eq!(set.len(), 1);
    }

    #[test]
    fn pct100_is_zeros() {
        let spec = DataSpec::compressible(100).unwrap().with_dedupe(30).unwrap();
        assert!(units(spec, 9, 64).iter().all(|&b| b == 0));
        assert!(units(DataSpec::zeros(), 9, 4).iter().all(|&b| b == 0));
    }

    #[test]
    fn odd_lengths() {
        let mut g = PatternGen::new(DataSpec::compressible(50).unwrap(), 1).unwrap();
        g.fill(&mut []);
        assert_eq!(g.units(), 0);
        let mut buf = vec![0u8; U + 904];
        g.fill(&mut buf);
        assert_eq!(g.units(), 2);
        // Short trailing unit: 512-byte chunks then a 392-byte chunk, half random.
        let tail = &buf[U + 512..];
        assert!(tail[196..].iter().all(|&b| b == 0));
        assert!(tail[..196].iter().any(|&b| b != 0));
    }

    #[test]
    fn validation() {
        assert!(DataSpec::compressible(101).is_err());
        assert!(DataSpec::new(0, 512, 101).is_err());
        assert!(DataSpec::incompressible().with_unit(0).is_err());
        assert!(DataSpec::incompressible().with_dedupe_mode(DedupeMode::WorkingSet { units: 0 }).is_err());
        assert!(DedupeMode::working_set(1 << 30, 101, U).is_err());
        assert!(DedupeMode::working_set(1024, 10, U).is_err());
        assert_eq!(DedupeMode::working_set(1 << 30, 10, U).unwrap(), DedupeMode::WorkingSet { units: 26_214 });
        let bad = DataSpec { compress_pct: 200, ..DataSpec::default() };
        let err = PatternGen::new(bad, 0).unwrap_err();
        assert!(err.to_string().contains("200"));
    }

    #[test]
    fn unit_seed_mixes() {
        assert_eq!(unit_seed(1, 2), unit_seed(1, 2));
        assert_ne!(unit_seed(1, 2), unit_seed(1, 3));
        assert_ne!(unit_seed(1, 2), unit_seed(2, 2));
    }

    /// Throughput report (printed, not asserted): `cargo test --release -- --nocapture`.
    #[test]
    fn throughput_report() {
        let total: usize = 256 << 20;
        let specs = [
            ("random", DataSpec::incompressible()),
            ("compress50", DataSpec::compressible(50).unwrap()),
            ("compress50+dedupe50", DataSpec::compressible(50).unwrap().with_dedupe(50).unwrap()),
            ("zeros", DataSpec::zeros()),
        ];
        let mut buf = [0u8; U];
        for (name, spec) in specs {
            let mut g = PatternGen::new(spec, 42).unwrap();
            let t = Instant::now();
            let mut sink = 0u8;
            for _ in 0..total / U {
                g.fill(&mut buf);
                sink ^= buf[U - 1];
            }
            let s = t.elapsed().as_secs_f64();
            println!("pattern {name:>20}: {:.2} GB/s ({sink})", total as f64 / s / 1e9);
        }
    }
}
