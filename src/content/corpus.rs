//! Real data for benchmarks: the committed samples in `corpora/` (listed
//! with source, licence and checksum in `corpora/manifest.toml`), built-in
//! generated sets, or any file by path.
//!
//! A generated corpus writes like fio: a fresh stream of its pattern for
//! every write. A file corpus is cut into units; [`Tiled`] lays them over an LBA span as
//! many times as it takes. So that repeats of a small corpus do not all
//! deduplicate, every copy maps its bytes through its own byte permutation:
//! equal bytes stay equal and different ones different, so lz4 finds the
//! same matches and the copy compresses like the original, while its
//! fingerprint is new. Duplicates inside the corpus stay duplicates.

use std::path::{Path, PathBuf};

use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::Deserialize;

use crate::content::pattern::{DataSpec, PatternGen};
use crate::content::Content;
use crate::input::{read_bytes_capped, read_capped, ReadError};
use crate::units::{Lba, SECTOR_BYTES};

/// Bytes of each generated corpus.
pub const GENERATED_BYTES: usize = 8 << 20;

/// The built-in generated corpora: name and what it is.
pub const GENERATED: [(&str, &str); 5] = [
    ("random", "seeded ChaCha stream: incompressible"),
    ("fio-c25", "fio buffer_compress_percentage=25"),
    ("fio-c50", "fio buffer_compress_percentage=50"),
    ("fio-c75", "fio buffer_compress_percentage=75"),
    ("fio-d30", "fio buffer_compress_percentage=50, dedupe_percentage=30"),
];

/// Seed of the generated corpora.
const GENERATED_SEED: u64 = 0x5f2281;

/// Most bytes of a corpus file: it is held in memory whole and tiled over
/// the drive, and a GiB of real data is far more than its compression and
/// duplicate ratios need (the committed corpora are under 3 MB).
pub const MAX_CORPUS_BYTES: u64 = 1 << 30;

/// Most bytes of `manifest.toml` (the committed one is under 3 KB).
const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// What can go wrong finding or reading a corpus.
#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The manifest is malformed.
    #[error("{path}: {reason}")]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// Neither a known name nor an existing file.
    #[error("no corpus or file '{name}' (known: {known})")]
    Unknown {
        /// What was asked for.
        name: String,
        /// The names that exist.
        known: String,
    },
    /// The file holds no bytes.
    #[error("{0}: empty file")]
    Empty(PathBuf),
    /// The file holds more than a corpus or manifest may.
    #[error("{path}: {source}")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The cap it passed.
        source: ReadError,
    },
}

impl CorpusError {
    /// `path`'s read failure as a corpus error.
    fn read(path: &Path, e: ReadError) -> Self {
        match e {
            ReadError::Io(source) => CorpusError::Io { path: path.into(), source },
            e @ ReadError::TooLarge { .. } => CorpusError::TooLarge { path: path.into(), source: e },
            e @ ReadError::NotText { .. } => CorpusError::Manifest { path: path.into(), reason: e.to_string() },
        }
    }
}

/// One entry of `corpora/manifest.toml`.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestEntry {
    /// Short name used on the command line.
    pub name: String,
    /// Path relative to the corpora directory.
    pub file: String,
    /// What kind of data (text, database, log...).
    pub kind: String,
    /// Where it came from.
    pub source: String,
    /// Its licence.
    pub licence: String,
    /// SHA-256 of the file, lowercase hex.
    pub sha256: String,
    /// Size in bytes.
    pub bytes: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    corpus: Vec<ManifestEntry>,
}

/// The corpora directory: `$DURAFLASH_CORPORA`, or `corpora/` of the
/// source tree this binary was built from.
pub fn default_dir() -> PathBuf {
    std::env::var_os("DURAFLASH_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("corpora"))
}

/// Reads `manifest.toml` in `dir`.
pub fn manifest(dir: &Path) -> Result<Vec<ManifestEntry>, CorpusError> {
    let path = dir.join("manifest.toml");
    let text = read_capped(&path, MAX_MANIFEST_BYTES, "corpus manifest").map_err(|e| CorpusError::read(&path, e))?;
    let m: Manifest = toml::from_str(&text).map_err(|e| CorpusError::Manifest { path, reason: e.to_string() })?;
    Ok(m.corpus)
}

/// The file of corpus `name` (a manifest name, else a path), its kind and
/// the name it is shown by.
fn locate(name: &str, dir: &Path) -> Result<(PathBuf, String, String), CorpusError> {
    let entries = manifest(dir).unwrap_or_default();
    match entries.iter().find(|e| e.name == name) {
        Some(e) => Ok((dir.join(&e.file), e.kind.clone(), e.name.clone())),
        None if Path::new(name).is_file() => {
            let shown = Path::new(name).file_name().map_or(name.to_string(), |f| f.to_string_lossy().into());
            Ok((PathBuf::from(name), "file".to_string(), shown))
        }
        None => {
            let mut known: Vec<String> = entries.into_iter().map(|e| e.name).collect();
            known.extend(GENERATED.iter().map(|(n, _)| n.to_string()));
            Err(CorpusError::Unknown { name: name.into(), known: known.join(", ") })
        }
    }
}

/// A corpus in memory.
#[derive(Clone, Debug)]
pub struct Corpus {
    /// Its name (a manifest or built-in name, or the file name).
    pub name: String,
    /// What kind of data.
    pub kind: String,
    bytes: Vec<u8>,
    /// The pattern a generated corpus comes from.
    pattern: Option<DataSpec>,
}

impl Corpus {
    /// A corpus from bytes.
    pub fn from_bytes(name: &str, kind: &str, bytes: Vec<u8>) -> Self {
        Corpus { name: name.into(), kind: kind.into(), bytes, pattern: None }
    }

    /// Every known corpus name: the manifest's, then the generated ones.
    pub fn names(dir: &Path) -> Result<Vec<String>, CorpusError> {
        let mut names: Vec<String> = manifest(dir)?.into_iter().map(|e| e.name).collect();
        names.extend(GENERATED.iter().map(|(n, _)| n.to_string()));
        Ok(names)
    }

    /// Loads a manifest corpus or a generated one by name, or any file by
    /// path.
    pub fn load(name: &str, dir: &Path) -> Result<Self, CorpusError> {
        if let Some(c) = Self::generated(name) {
            return Ok(c);
        }
        let (path, kind, shown) = locate(name, dir)?;
        let bytes = read_bytes_capped(&path, MAX_CORPUS_BYTES, "corpus").map_err(|e| CorpusError::read(&path, e))?;
        if bytes.is_empty() {
            return Err(CorpusError::Empty(path));
        }
        Ok(Corpus { name: shown, kind, bytes, pattern: None })
    }

    /// The bytes [`Corpus::load`] would hold for `name`, from the file's
    /// size without reading it, so a run can check its memory first; a
    /// file over [`MAX_CORPUS_BYTES`] is refused here as by the load.
    pub fn held_bytes(name: &str, dir: &Path) -> Result<u64, CorpusError> {
        if GENERATED.iter().any(|(n, _)| *n == name) {
            return Ok(GENERATED_BYTES as u64);
        }
        let (path, ..) = locate(name, dir)?;
        let len = std::fs::metadata(&path).map_err(|source| CorpusError::Io { path: path.clone(), source })?.len();
        if len > MAX_CORPUS_BYTES {
            let source = ReadError::TooLarge { what: "corpus", cap: MAX_CORPUS_BYTES };
            return Err(CorpusError::TooLarge { path, source });
        }
        Ok(len)
    }

    /// A built-in generated corpus.
    pub fn generated(name: &str) -> Option<Self> {
        let (spec, kind) = match name {
            "random" => (DataSpec::incompressible(), "random"),
            "fio-c25" => (DataSpec::compressible(25).ok()?, "fio"),
            "fio-c50" => (DataSpec::compressible(50).ok()?, "fio"),
            "fio-c75" => (DataSpec::compressible(75).ok()?, "fio"),
            "fio-d30" => (DataSpec::compressible(50).ok()?.with_dedupe(30).ok()?, "fio"),
            _ => return None,
        };
        let mut gen = PatternGen::new(spec, GENERATED_SEED).ok()?;
        let mut bytes = vec![0u8; GENERATED_BYTES];
        gen.fill(&mut bytes);
        Some(Corpus { name: name.into(), kind: kind.into(), bytes, pattern: Some(spec) })
    }

    /// What writes of this corpus carry over a span of `span_units`
    /// units: a generated corpus's pattern, fresh from `salt` (as fio
    /// generates it, duplicates included), or the file [`Tiled`].
    pub fn content(&self, unit: usize, span_units: u64, salt: u64) -> Box<dyn Content + '_> {
        match self.pattern.and_then(|p| PatternGen::new(p, GENERATED_SEED ^ salt.wrapping_add(1)).ok()) {
            Some(gen) => Box::new(gen),
            None => Box::new(Tiled::new(self, unit, span_units, salt)),
        }
    }

    /// Distinct units / units of the corpus itself (1 = no duplicates).
    pub fn distinct_ratio(&self, unit: usize) -> f64 {
        let mut seen = std::collections::HashSet::new();
        let mut buf = vec![0u8; unit];
        let n = self.units(unit);
        for i in 0..n {
            self.unit(i, &mut buf);
            seen.insert(*blake3::hash(&buf).as_bytes());
        }
        seen.len() as f64 / n.max(1) as f64
    }

    /// The raw bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Units of `unit` bytes the corpus makes (the last one completed from
    /// the start of the corpus).
    pub fn units(&self, unit: usize) -> u64 {
        self.bytes.len().div_ceil(unit) as u64
    }

    /// Copies unit `i` (of `out.len()` bytes, modulo the unit count) into
    /// `out`.
    pub fn unit(&self, i: u64, out: &mut [u8]) {
        let unit = out.len();
        if self.bytes.is_empty() || unit == 0 {
            out.fill(0); // an empty corpus (only `from_bytes` makes one) reads as zeros
            return;
        }
        // Whole runs of the corpus, wrapping to its start (a byte-by-byte
        // modulo took more time than lz4 on the unit).
        let mut pos = (i % self.units(unit)) as usize * unit;
        let mut rest = out;
        while !rest.is_empty() {
            let n = rest.len().min(self.bytes.len() - pos);
            let (now, later) = rest.split_at_mut(n);
            now.copy_from_slice(&self.bytes[pos..pos + n]);
            (rest, pos) = (later, 0);
        }
    }
}

/// A byte permutation: `variant` 0 is the identity.
fn permutation(variant: u64) -> [u8; 256] {
    let mut p: [u8; 256] = std::array::from_fn(|i| i as u8);
    if variant != 0 {
        p.shuffle(&mut ChaCha8Rng::seed_from_u64(variant));
    }
    p
}

/// A corpus laid over an LBA span: the first pass over the span writes
/// copy `k` of the corpus (permuted by `k`, copy 0 verbatim) at units
/// `k n .. (k+1) n`; every later write of a unit carries the same corpus
/// unit under a permutation no write used before, so it compresses the
/// same and deduplicates only as the corpus itself does.
pub struct Tiled<'a> {
    corpus: &'a Corpus,
    unit: usize,
    span_units: u64,
    written: u64,
    fresh: u64,
    cached: Option<(u64, [u8; 256])>,
}

impl<'a> Tiled<'a> {
    /// Tiles `corpus` in `unit`-byte units over `span_units` units.
    /// `salt` separates the permutations of independent runs.
    pub fn new(corpus: &'a Corpus, unit: usize, span_units: u64, salt: u64) -> Self {
        let copies = span_units.div_ceil(corpus.units(unit));
        Tiled { corpus, unit, span_units, written: 0, fresh: copies + (salt << 40), cached: None }
    }

    fn variant(&mut self, lpn: u64) -> u64 {
        let v = if self.written < self.span_units {
            lpn / self.corpus.units(self.unit)
        } else {
            self.fresh += 1;
            self.fresh
        };
        self.written += 1;
        v
    }
}

/// Writes corpus unit `lpn` under permutation `v` into `out`, reusing
/// `cached` when it holds `v`'s permutation (consecutive units of a first
/// pass share one).
fn permuted_unit(corpus: &Corpus, lpn: u64, v: u64, cached: &mut Option<(u64, [u8; 256])>, out: &mut [u8]) {
    corpus.unit(lpn, out);
    if v != 0 {
        let p = match cached {
            Some((cv, p)) if *cv == v => p,
            _ => &cached.insert((v, permutation(v))).1,
        };
        out.iter_mut().for_each(|b| *b = p[*b as usize]);
    }
}

impl Content for Tiled<'_> {
    fn fill(&mut self, lba: Lba, buf: &mut [u8]) {
        let first = lba.0 * SECTOR_BYTES / self.unit as u64;
        for (j, out) in buf.chunks_mut(self.unit).enumerate() {
            let lpn = first + j as u64;
            let v = self.variant(lpn);
            permuted_unit(self.corpus, lpn, v, &mut self.cached, out);
        }
    }

    /// The same bytes as [`Content::fill`] write by write: each unit's
    /// corpus unit and permutation are drawn in order, then the units are
    /// copied and permuted in parallel (past the first pass every unit
    /// has a permutation of its own, a shuffle per unit).
    fn fill_batch(&mut self, lbas: &[Lba], buf: &mut [u8]) {
        use rayon::prelude::*;
        let Some(each) = buf.len().checked_div(lbas.len()) else { return };
        let per = each.div_ceil(self.unit) as u64;
        let mut units = Vec::with_capacity(lbas.len() * per as usize);
        for &lba in lbas {
            let first = lba.0 * SECTOR_BYTES / self.unit as u64;
            for lpn in first..first + per {
                units.push((lpn, self.variant(lpn)));
            }
        }
        // Units a thread takes at a time.
        const GROUP_UNITS: usize = 16;
        let (corpus, unit) = (self.corpus, self.unit);
        let fill_group = |(group, units): (&mut [u8], &[(u64, u64)])| {
            let mut cached = None;
            for (out, &(lpn, v)) in group.chunks_mut(unit).zip(units) {
                permuted_unit(corpus, lpn, v, &mut cached, out);
            }
        };
        if each % unit == 0 {
            buf.par_chunks_mut(unit * GROUP_UNITS).zip(units.par_chunks(GROUP_UNITS)).for_each(fill_group);
        } else {
            // Writes of part of a unit: each write's bytes on their own.
            buf.par_chunks_mut(each).zip(units.par_chunks(per as usize)).for_each(fill_group);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lz4_len(unit: &[u8]) -> usize {
        lz4_flex::block::compress(unit).len().min(unit.len())
    }

    #[test]
    fn a_permuted_copy_compresses_alike_and_differs() {
        let text = b"the quick brown fox jumps over the lazy dog; ".repeat(100);
        let c = Corpus::from_bytes("t", "text", text);
        let mut tiled = Tiled::new(&c, 4096, 4, 0);
        let mut a = vec![0u8; 4096];
        let mut b = vec![0u8; 4096];
        tiled.fill(Lba(0), &mut a);
        tiled.fill(Lba(16), &mut b); // unit 2: corpus unit 0 again, second copy
        assert_ne!(a, b, "copies differ");
        let (la, lb) = (lz4_len(&a), lz4_len(&b));
        assert!((la as f64 - lb as f64).abs() <= 0.02 * la as f64, "{la} vs {lb}");
    }

    #[test]
    fn a_batch_holds_the_bytes_of_its_writes_one_by_one() {
        let text: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let c = Corpus::from_bytes("t", "text", text);
        // 30 units over a 24-unit span: the first pass, then fresh permutations.
        for each in [4096, 8192, 2048, 6144] {
            let lbas: Vec<Lba> = (0..30u64).map(|i| Lba((i * 5 % 24) * 8)).collect();
            let (mut one, mut batch) = (Tiled::new(&c, 4096, 24, 3), Tiled::new(&c, 4096, 24, 3));
            let mut want = vec![0u8; each * lbas.len()];
            for (&lba, out) in lbas.iter().zip(want.chunks_mut(each)) {
                one.fill(lba, out);
            }
            let mut got = vec![0u8; want.len()];
            batch.fill_batch(&lbas, &mut got);
            assert!(got == want, "{each}-byte writes");
            // The next write continues the same sequence of permutations.
            let (mut a, mut b) = (vec![0u8; 4096], vec![0u8; 4096]);
            one.fill(Lba(0), &mut a);
            batch.fill(Lba(0), &mut b);
            assert!(a == b, "{each}-byte writes, then one more");
        }
    }

    #[test]
    fn a_file_over_the_cap_is_refused_by_its_size_before_it_is_read() {
        let dir = std::env::temp_dir().join(format!("duraflash-corpus-cap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("huge.img");
        // Sparse: no bytes on disk, and none read.
        std::fs::File::create(&path).unwrap().set_len(MAX_CORPUS_BYTES + 1).unwrap();
        let name = path.to_str().unwrap();
        for e in [Corpus::held_bytes(name, &dir).unwrap_err(), Corpus::load(name, &dir).unwrap_err()] {
            assert!(matches!(e, CorpusError::TooLarge { .. }), "{e}");
            assert_eq!(e.to_string(), format!("{name}: more than the 1 GiB a corpus may hold"));
        }
        std::fs::File::create(&path).unwrap().set_len(4096).unwrap();
        assert_eq!(Corpus::held_bytes(name, &dir).unwrap(), 4096);
        assert_eq!(Corpus::load(name, &dir).unwrap().bytes().len(), 4096);
        assert_eq!(Corpus::held_bytes("random", &dir).unwrap(), GENERATED_BYTES as u64);
        std::fs::write(dir.join("manifest.toml"), vec![b'#'; MAX_MANIFEST_BYTES as usize + 1]).unwrap();
        let e = manifest(&dir).unwrap_err();
        assert!(e.to_string().ends_with("more than the 1 MiB a corpus manifest may hold"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let e = Corpus::load("no-such-corpus", &default_dir()).unwrap_err().to_string();
        assert!(e.contains("random") && e.contains("alice29"), "{e}");
    }

    #[test]
    fn the_last_unit_wraps_to_the_start() {
        let c = Corpus::from_bytes("t", "t", (0..=9u8).collect());
        let mut out = [0u8; 4];
        c.unit(2, &mut out);
        assert_eq!(out, [8, 9, 0, 1]);
        assert_eq!(c.units(4), 3);
        let short = Corpus::from_bytes("s", "s", vec![1, 2, 3]);
        let mut out = [0u8; 8];
        short.unit(5, &mut out);
        assert_eq!(out, [1, 2, 3, 1, 2, 3, 1, 2], "a unit longer than the corpus repeats it");
    }
}
