//! What a drive will hold in memory, worked out from its config before
//! anything is allocated, and the check of that estimate against a limit
//! (by default the memory the machine has available).
//!
//! Each part is sized by the code that owns it (`L2pMap::bytes_for`,
//! `ChunkStore::bytes_for`, ...), for a drive whose every unit is written:
//! stored bytes as if incompressible (the most memory media can hold),
//! block summaries as if compression halves each unit (more chunks per
//! block than incompressible data gives). Owns the estimate and the
//! limit. What a command holds beside its drives is counted where the
//! command says ([`MemoryEstimate::with_beside`]: a fio run's job buffers,
//! and a command's working state, [`command_bytes`]); a trace read into
//! memory or a filesystem model is not.

use thiserror::Error;

use crate::config::{DriveConfig, Media, StreamInference};
use crate::datapath::chunk_bytes::ChunkBytes;
use crate::datapath::chunks::ChunkStore;
use crate::ftl::map::L2pMap;
use crate::ftl::recency::RecencyTable;
use crate::ftl::space::Space;
use crate::nand::NandArray;
use crate::units::ByteSize;

use super::schedule::UnitRead;
use super::write::COMMIT_SLICE_UNITS;

/// Resident memory of the process before any drive: code, the pipeline's
/// threads and buffers, the allocator. Calibrated: the peak RSS of
/// `duraflash wa --capacity 16MiB --media metadata-only` on Linux x86-64
/// (8.1-8.3 MiB, of which its drive is 0.6 MiB).
pub const PROCESS_BYTES: u64 = 8 << 20;

/// The part that holds stored bytes.
const STORED: &str = "stored data";

/// One part of the estimate.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    /// What it holds.
    pub name: &'static str,
    /// Peak resident bytes.
    pub bytes: u64,
    /// The settings it grows with, as their flags.
    pub grows_with: &'static str,
}

/// The peak resident memory of `drives` drives of one config, and of
/// what the command holds beside them.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryEstimate {
    /// Drives held at once (a command may keep copies, or an array's members).
    pub drives: u32,
    /// One drive's parts, largest first.
    pub parts: Vec<Part>,
    /// What the command holds once beside its drives, largest first.
    pub beside: Vec<Part>,
}

/// The most a drive holds while it serves one command of `bytes` (its
/// working state, freed when the command completes): a read's plan, per
/// unit a `UnitRead` and its one or two pages, listed and in the map of
/// pages sensed, everything twice over for growth by doubling. A write's
/// list of pending units (32 B a unit) is smaller. 312 B a unit; a 1 GiB
/// read of a written drive measured 116.
pub fn command_bytes(config: &DriveConfig, bytes: u64) -> u64 {
    use std::mem::size_of;
    let page = 2 * size_of::<(u32, u32)>() + 2 * (size_of::<((u32, u32), u64)>() + 1);
    let per_unit = 2 * (size_of::<UnitRead>() + 2 * page) as u64;
    bytes.div_ceil(u64::from(config.unit_bytes)).saturating_mul(per_unit)
}

impl MemoryEstimate {
    /// The estimate for `drives` drives built from `config`.
    pub fn of(config: &DriveConfig, drives: u32) -> Self {
        let g = &config.geometry;
        let unit = u64::from(config.unit_bytes);
        let units = config.logical_units();
        let chunks = units + COMMIT_SLICE_UNITS as u64;
        let mean_chunk = if config.compression { unit / 2 } else { unit };
        let per_block = g.block_bytes().div_ceil(mean_chunk);
        let blocks = u64::from(g.total_blocks());
        let stored = match config.media {
            Media::Memory => ChunkBytes::bytes_for(chunks, unit),
            Media::MetadataOnly => 0,
        };
        let mut parts = vec![
            Part { name: "logical map", bytes: L2pMap::bytes_for(units), grows_with: "--capacity" },
            Part {
                name: "chunk records and dedup index",
                bytes: ChunkStore::bytes_for(chunks, config.dedup),
                grows_with: "--capacity, --dedup",
            },
            Part {
                name: "block state and summaries",
                bytes: blocks * Space::bytes_per_block(per_block) + NandArray::bytes_for(g),
                grows_with: "--capacity, --op, --pages-per-block",
            },
            Part {
                name: "stream recency stamps",
                bytes: if config.placement.infer == StreamInference::Off { 0 } else { RecencyTable::bytes_for(units) },
                grows_with: "--stream-infer, --capacity",
            },
            Part { name: STORED, bytes: stored, grows_with: "--media memory, --capacity" },
        ];
        parts.retain(|p| p.bytes > 0);
        parts.sort_by_key(|p| std::cmp::Reverse(p.bytes));
        MemoryEstimate { drives, parts, beside: Vec::new() }
    }

    /// This estimate with `parts` held once beside the drives.
    pub fn with_beside(mut self, mut parts: Vec<Part>) -> Self {
        parts.retain(|p| p.bytes > 0);
        parts.sort_by_key(|p| std::cmp::Reverse(p.bytes));
        self.beside = parts;
        self
    }

    /// What building one drive of `config` allocates at once: every part
    /// but the stored data, which grows with what is written.
    pub fn at_build(config: &DriveConfig) -> Self {
        let mut estimate = Self::of(config, 1);
        estimate.parts.retain(|p| p.name != STORED);
        estimate
    }

    /// Peak resident bytes of the process: the drives, what is beside
    /// them and the rest.
    pub fn total(&self) -> u64 {
        let sum = |parts: &[Part]| parts.iter().fold(0u64, |sum, p| sum.saturating_add(p.bytes));
        let drives = u64::from(self.drives).saturating_mul(sum(&self.parts));
        PROCESS_BYTES.saturating_add(drives).saturating_add(sum(&self.beside))
    }

    /// `Ok` when the estimate fits in `limit`.
    pub fn check(&self, limit: &MemoryLimit) -> Result<(), MemoryError> {
        let total = self.total();
        if total <= limit.bytes {
            return Ok(());
        }
        let list =
            |parts: &[Part]| parts.iter().map(|p| format!("{} {}", p.name, ByteSize(p.bytes))).collect::<Vec<_>>();
        let mut shown = list(&self.beside);
        if !self.parts.is_empty() {
            let each = if self.drives == 1 { String::new() } else { format!("{} drives, each ", self.drives) };
            shown.push(format!("{each}{}", list(&self.parts).join(", ")));
        }
        // The parts of a quarter of the total or more, a drive's counted once per drive.
        let big = |p: &&Part, times: u64| p.bytes.saturating_mul(times).saturating_mul(4) >= total;
        let drives = u64::from(self.drives).max(1);
        let big_parts = self.beside.iter().filter(|p| big(p, 1)).chain(self.parts.iter().filter(|p| big(p, drives)));
        let mut drivers: Vec<&str> = big_parts.flat_map(|p| p.grows_with.split(", ")).collect();
        drivers.sort_unstable();
        drivers.dedup();
        Err(MemoryError { estimate: total, parts: shown.join("; "), drivers: drivers.join(", "), limit: limit.clone() })
    }
}

/// How much memory a run may take, and where that figure came from.
#[derive(Clone, Debug, PartialEq)]
pub struct MemoryLimit {
    /// The limit in bytes.
    pub bytes: u64,
    /// Where it came from, for the message: "--memory-limit", "available
    /// memory", "the address space (ulimit -v)".
    pub source: &'static str,
}

impl MemoryLimit {
    /// The machine's: the memory available now (Linux `MemAvailable`),
    /// or the process's address-space limit if that is lower. `None`
    /// where neither can be read.
    pub fn machine() -> Option<Self> {
        let available = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(MemoryLimit { bytes: kib << 10, source: "available memory" })
        });
        let address_space =
            address_space_limit().map(|bytes| MemoryLimit { bytes, source: "the address space (ulimit -v)" });
        lower(available, address_space)
    }

    /// The most any allocation could get: the machine's memory and swap
    /// (Linux `MemTotal` + `SwapTotal`), or the address-space limit if
    /// lower. `None` where neither can be read.
    pub fn installed() -> Option<Self> {
        let installed = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
            let kib = |key: &str| -> Option<u64> {
                let line = text.lines().find(|l| l.starts_with(key))?;
                line.split_whitespace().nth(1)?.parse().ok()
            };
            let total = kib("MemTotal:")?.saturating_add(kib("SwapTotal:").unwrap_or(0));
            Some(MemoryLimit { bytes: total << 10, source: "installed memory and swap" })
        });
        let address_space =
            address_space_limit().map(|bytes| MemoryLimit { bytes, source: "the address space (ulimit -v)" });
        lower(installed, address_space)
    }
}

/// The lower of two limits, or whichever is known.
fn lower(a: Option<MemoryLimit>, b: Option<MemoryLimit>) -> Option<MemoryLimit> {
    match (a, b) {
        (Some(a), Some(b)) => Some(if b.bytes < a.bytes { b } else { a }),
        (a, b) => a.or(b),
    }
}

#[cfg(unix)]
fn address_space_limit() -> Option<u64> {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit only writes the struct it is given.
    #[allow(unsafe_code)]
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } == 0;
    (ok && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}

#[cfg(not(unix))]
fn address_space_limit() -> Option<u64> {
    None
}

/// A configuration that needs more memory than the limit allows.
#[derive(Clone, Debug, Error, PartialEq)]
#[error(
    "needs an estimated {} ({parts}), over the {} limit of {}; it grows with {drivers}",
    ByteSize(*estimate),
    ByteSize(limit.bytes),
    limit.source
)]
pub struct MemoryError {
    /// Estimated peak bytes.
    pub estimate: u64,
    /// The parts, described: what is beside the drives, then one drive's.
    pub parts: String,
    /// The settings that drive the largest parts.
    pub drivers: String,
    /// The limit it was checked against.
    pub limit: MemoryLimit,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sf(capacity: u64) -> DriveConfig {
        let mut cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(capacity).unwrap();
        cfg.media = Media::MetadataOnly;
        cfg
    }

    #[test]
    fn the_estimate_grows_with_what_drives_it() {
        let small = MemoryEstimate::of(&sf(1 << 30), 1).total();
        assert!(MemoryEstimate::of(&sf(4 << 30), 1).total() > 3 * (small - PROCESS_BYTES));
        assert_eq!(MemoryEstimate::of(&sf(1 << 30), 2).total() - PROCESS_BYTES, 2 * (small - PROCESS_BYTES));
        let mut memory = sf(1 << 30);
        memory.media = Media::Memory;
        assert!(MemoryEstimate::of(&memory, 1).total() > small + (1 << 30), "memory media holds the data");
        let tiny_blocks = sf(1 << 30).with_pages_per_block(1).unwrap().with_op(2.0).unwrap();
        assert!(MemoryEstimate::of(&tiny_blocks, 1).total() > 2 * small, "per-block state dominates");
    }

    #[test]
    fn over_the_limit_names_the_estimate_the_limit_and_the_settings() {
        let mut full = DriveConfig::preset("sf2281-240g").unwrap();
        full.media = Media::MetadataOnly;
        let full = full.with_pages_per_block(1).unwrap().with_op(10.0).unwrap();
        let limit = MemoryLimit { bytes: 4 << 30, source: "--memory-limit" };
        let e = MemoryEstimate::of(&full, 1).check(&limit).unwrap_err();
        let text = e.to_string();
        assert!(e.estimate > 20 << 30, "{text}");
        assert!(text.contains("over the 4.00 GiB limit of --memory-limit"), "{text}");
        assert!(text.contains("--pages-per-block"), "{text}");
        MemoryEstimate::of(&sf(64 << 20), 1).check(&limit).expect("a small drive fits");
    }

    #[test]
    fn what_a_command_holds_beside_its_drives_counts_once_and_names_its_settings() {
        let two = MemoryEstimate::of(&sf(64 << 20), 2);
        let buffers = Part { name: "job write buffers", bytes: 8 << 30, grows_with: "bs, numjobs" };
        let with = two.clone().with_beside(vec![buffers, Part { name: "none", bytes: 0, grows_with: "x" }]);
        assert_eq!(with.total(), two.total() + (8 << 30));
        assert_eq!(with.beside.len(), 1, "empty parts are dropped");
        let text = with.check(&MemoryLimit { bytes: 4 << 30, source: "--memory-limit" }).unwrap_err().to_string();
        assert!(text.contains("(job write buffers 8.00 GiB; 2 drives, each chunk records"), "{text}");
        assert!(text.ends_with("it grows with bs, numjobs"), "only the big parts' settings: {text}");
        assert!(command_bytes(&sf(64 << 20), 1 << 30) > 100 << 18, "over 100 B a unit of a 1 GiB command");
    }

    #[test]
    fn the_machine_limit_is_read_where_linux_has_one() {
        if cfg!(target_os = "linux") {
            let limit = MemoryLimit::machine().expect("/proc/meminfo");
            assert!(limit.bytes > 0);
            let installed = MemoryLimit::installed().expect("/proc/meminfo");
            assert!(installed.bytes >= limit.bytes, "available memory is part of what is installed");
        }
    }

    #[test]
    fn building_counts_the_tables_but_not_the_stored_data() {
        let mut memory = sf(1 << 30);
        memory.media = Media::Memory;
        let all = MemoryEstimate::of(&memory, 1);
        let build = MemoryEstimate::at_build(&memory);
        assert!(all.parts.iter().any(|p| p.name == STORED));
        assert!(build.parts.iter().all(|p| p.name != STORED));
        let stored = all.parts.iter().find(|p| p.name == STORED).map_or(0, |p| p.bytes);
        assert!(stored >= 1 << 30, "a 1 GiB drive may store 1 GiB");
        assert_eq!(all.total() - build.total(), stored);
    }
}
