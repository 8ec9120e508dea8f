//! Persistence: the whole drive in one image file (see [`crate::image`]
//! for the container). An image holds exactly these sections, in this
//! order: `CONF` (the drive config, JSON), `STAT` ([`ImageSummary`],
//! JSON, for `duraflash image info`), `NAND` (blocks: programmed pages,
//! P/E cycles), `SPAC` (block states, open blocks, free lists), `CHNK`
//! (chunk table, dedup index and, for memory media, each live chunk's
//! stored bytes), `MAP ` (the L2P map) and `DRIV` (counters, clocks,
//! timing model, map cache, read buffer).

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::stats::Counters;
use super::{Drive, Stats};
use crate::config::DriveConfig;
use crate::datapath::chunk_bytes::ChunkBytes;
use crate::datapath::chunks::ChunkStore;
use crate::ftl::map::L2pMap;
use crate::ftl::map_cache::MapCache;
use crate::ftl::space::Space;
use crate::image::{io_err, json_section, tag_name, ImageError, ImageReader, ImageWriter, SECTIONS, VERSION};
use crate::nand::NandArray;
use crate::timing::Timeline;
use crate::units::SimTime;

/// The `DRIV` section: the drive's own scalars and small state.
type DriveSection = (Counters, u64, u64, SimTime, Vec<(u32, u32, u32)>, MapCache, Timeline);

/// What an image's `STAT` section holds: enough to describe the drive
/// without reading the rest.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ImageSummary {
    /// Version of duraflash that wrote the image.
    pub written_by: String,
    /// Simulated time of the latest completion, in nanoseconds.
    pub now_ns: u64,
    /// The drive's counters when it was saved.
    pub stats: Stats,
}

/// What `duraflash image info` shows: the config and summary (checksums
/// verified) and every section's size (the large ones not read).
#[derive(Clone, Debug, Serialize)]
pub struct ImageInfo {
    /// Format version.
    pub version: u32,
    /// The drive's config.
    pub config: DriveConfig,
    /// Counters and clock.
    pub summary: ImageSummary,
    /// Each section's tag and payload bytes, in file order.
    pub sections: Vec<(String, u64)>,
    /// Size of the file.
    pub file_bytes: u64,
}

/// Reads an image's header, config and summary, and walks its sections.
pub fn inspect(path: &Path) -> Result<ImageInfo, ImageError> {
    let file_bytes = std::fs::metadata(path).map_err(|e| io_err("stat", path, e))?.len();
    let mut r = ImageReader::open(path)?;
    let mut sections = Vec::new();
    let config: DriveConfig = r.json_section(SECTIONS[0])?;
    sections.push((tag_name(&SECTIONS[0]), r.last_len()));
    let summary: ImageSummary = r.json_section(SECTIONS[1])?;
    sections.push((tag_name(&SECTIONS[1]), r.last_len()));
    for tag in &SECTIONS[2..] {
        sections.push((tag_name(tag), r.skip_section(*tag)?));
    }
    r.finish()?;
    Ok(ImageInfo { version: VERSION, config, summary, sections, file_bytes })
}

impl Drive {
    /// Saves the whole drive to an image at `path`, replacing any file
    /// there atomically (see [`crate::image`] for the file format).
    pub fn save(&self, path: &Path) -> Result<(), ImageError> {
        self.write_image(path)?.commit()
    }

    /// Saves a scratch image that this process loads back and removes
    /// (a write sweep's isolation): the same file, renamed into place
    /// without the fsyncs that make [`Drive::save`] survive a crash.
    pub fn save_scratch(&self, path: &Path) -> Result<(), ImageError> {
        self.write_image(path)?.commit_unsynced()
    }

    /// Writes every section to an image that replaces `path` when committed.
    fn write_image(&self, path: &Path) -> Result<ImageWriter, ImageError> {
        let summary =
            ImageSummary { written_by: env!("CARGO_PKG_VERSION").into(), now_ns: self.now.0, stats: self.stats() };
        let mut w = ImageWriter::create(path)?;
        w.section(*b"CONF", |o| json_section(o, &self.config))?;
        w.section(*b"STAT", |o| json_section(o, &summary))?;
        w.section(*b"NAND", |o| self.nand.write_image(o))?;
        w.postcard_section(*b"SPAC", &self.space)?;
        w.section(*b"CHNK", |o| {
            self.chunks.write_image(o)?;
            self.bytes.write_image(o)
        })?;
        w.section(*b"MAP ", |o| self.map.write_image(o))?;
        let read_cache: Vec<(u32, u32, u32)> = self.read_cache.iter().copied().collect();
        w.postcard_section(
            *b"DRIV",
            &(&self.counters, self.clock, self.live_bytes, self.now, read_cache, &self.map_cache, &self.timeline),
        )?;
        Ok(w)
    }

    /// Loads a drive saved by [`Drive::save`]. Every section's checksum is
    /// verified and the state is checked ([`Drive::check_invariants`])
    /// before it is returned: a damaged image is an error, never a panic.
    pub fn load(path: &Path) -> Result<Drive, ImageError> {
        let mut r = ImageReader::open(path)?;
        let config: DriveConfig = r.json_section(*b"CONF")?;
        config.validate().map_err(|e| ImageError::Inconsistent(format!("config: {e}")))?;
        // Refused before any section's tables are built for it, as Drive::new would refuse it.
        Drive::fits_in_memory(&config).map_err(|e| ImageError::Inconsistent(format!("config: {e}")))?;
        r.json_section::<ImageSummary>(*b"STAT")?;
        let geometry = config.geometry.clone();
        let nand = r.section(*b"NAND", |rd| NandArray::read_image(&geometry, rd.left(), rd))?;
        let space: Space = r.postcard_section(*b"SPAC")?;
        let unit = config.unit_bytes as usize;
        let (chunks, bytes) =
            r.section(*b"CHNK", |rd| Ok((ChunkStore::read_image(rd)?, ChunkBytes::read_image(rd, unit)?)))?;
        let map = r.section(*b"MAP ", L2pMap::read_image)?;
        let (counters, clock, live_bytes, now, read_cache, map_cache, timeline): DriveSection =
            r.postcard_section(*b"DRIV")?;
        r.finish()?;
        let mut drive = Drive::new(config).map_err(|e| ImageError::Inconsistent(format!("config: {e}")))?;
        let bad = |what: &str, e: String| ImageError::Inconsistent(format!("{what}: {e}"));
        let g = &drive.config.geometry;
        space
            .check_shape(g, drive.config.placement.frontiers(), chunks.records())
            .map_err(|e| bad("block space", e))?;
        chunks
            .check_shape(drive.config.dedup, drive.chunks.packing(), g.total_blocks(), g.block_bytes() as u32)
            .map_err(|e| bad("chunk table", e))?;
        if map.units() != drive.map.units() {
            return Err(bad("map", format!("{} units, the config has {}", map.units(), drive.map.units())));
        }
        if !timeline.same_shape(&drive.timeline) || !map_cache.same_shape(&drive.map_cache) {
            return Err(bad("drive state", "timing model or map cache does not match the config".into()));
        }
        drive.nand = nand;
        drive.space = space;
        drive.space.rebuild_index();
        drive.space.set_least_worn_first(drive.config.wear.dynamic);
        drive.chunks = chunks;
        drive.bytes = bytes;
        drive.map = map;
        drive.counters = counters;
        drive.clock = clock;
        drive.live_bytes = live_bytes;
        drive.now = now;
        drive.read_cache = read_cache.into();
        drive.map_cache = map_cache;
        drive.timeline = timeline;
        drive.check_invariants().map_err(|e| ImageError::Inconsistent(e.to_string()))?;
        Ok(drive)
    }
}
