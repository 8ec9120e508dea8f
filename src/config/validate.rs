//! [`DriveConfig::validate`]: every field's range, each refusal naming the
//! TOML field it came from (the command-line overrides map those names
//! onto their flags).

use super::{DriveConfig, Placement, StreamInference, DEFAULT_LOW_WATERMARK};
use crate::error::ConfigError;

/// Most channels a config may have: far beyond any controller (the SF-2281
/// has 8), low enough that the per-channel clocks stay small.
pub const MAX_CHANNELS: u32 = 1024;
/// Most dies on one channel (real packages stack up to 16).
pub const MAX_DIES_PER_CHANNEL: u32 = 256;
/// Most pages in an erase block.
pub const MAX_PAGES_PER_BLOCK: u32 = 1 << 16;
/// Most rated P/E cycles (SLC is rated near 100,000).
pub const MAX_PE_CYCLES: u32 = 100_000_000;

impl DriveConfig {
    /// Checks every field, naming the first that is wrong.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let g = &self.geometry;
        let ranges = [
            ("geometry.channels", g.channels, MAX_CHANNELS),
            ("geometry.dies_per_channel", g.dies_per_channel, MAX_DIES_PER_CHANNEL),
            ("geometry.blocks_per_die", g.blocks_per_die, u32::MAX),
            ("geometry.pages_per_block", g.pages_per_block, MAX_PAGES_PER_BLOCK),
            ("geometry.pe_cycles", g.pe_cycles, MAX_PE_CYCLES),
        ];
        for (field, v, max) in ranges {
            if v == 0 || v > max {
                return Err(ConfigError::invalid(field, format!("{v} is outside 1..={max}")));
            }
        }
        if g.page_bytes < 512 || !g.page_bytes.is_multiple_of(512) || g.page_bytes > 1 << 20 {
            return Err(ConfigError::invalid(
                "geometry.page_bytes",
                format!("{} is not a multiple of 512 between 512 and 1 MiB", g.page_bytes),
            ));
        }
        let blocks = u64::from(g.channels) * u64::from(g.dies_per_channel) * u64::from(g.blocks_per_die);
        if blocks >= u64::from(u32::MAX) {
            return Err(ConfigError::invalid("geometry.blocks_per_die", "more blocks than a u32 can number"));
        }
        if g.block_bytes() > u64::from(u32::MAX) {
            return Err(ConfigError::invalid("geometry.pages_per_block", "a block must be under 4 GiB"));
        }
        let u = self.unit_bytes;
        if !u.is_power_of_two() || u < 512 || u64::from(u) > g.block_bytes() || u > 1 << 20 {
            return Err(ConfigError::invalid(
                "unit_bytes",
                format!("{u} is not a power of two from 512 up to the block size (and at most 1 MiB)"),
            ));
        }
        self.packing()?;
        if self.logical_bytes == 0 || !self.logical_bytes.is_multiple_of(u64::from(u)) {
            return Err(ConfigError::invalid(
                "logical_bytes",
                format!("{} is not a positive multiple of the {u}-byte unit", self.logical_bytes),
            ));
        }
        if self.logical_units() >= u64::from(u32::MAX) {
            return Err(ConfigError::invalid("logical_bytes", "more units than the chunk table can number"));
        }
        if self.gc.low_watermark < DEFAULT_LOW_WATERMARK {
            return Err(ConfigError::invalid(
                "gc.low_watermark",
                format!("must be at least {DEFAULT_LOW_WATERMARK} so GC can always make progress"),
            ));
        }
        if self.map_cache_bytes.is_some_and(|b| b < u64::from(g.page_bytes)) {
            return Err(ConfigError::invalid("map_cache_bytes", "must hold at least one page (or be absent)"));
        }
        self.timing.validate().map_err(|(field, reason)| ConfigError::invalid(field, reason))?;
        self.firmware.validate()?;
        if self.gc.high_watermark < self.gc.low_watermark {
            return Err(ConfigError::invalid("gc.high_watermark", "must be at least gc.low_watermark"));
        }
        if u64::from(self.gc.high_watermark) >= blocks {
            return Err(ConfigError::invalid(
                "gc.high_watermark",
                format!("{} free blocks is not below the drive's {blocks} blocks", self.gc.high_watermark),
            ));
        }
        if !(1..=Placement::MAX_STREAMS).contains(&self.placement.streams) {
            return Err(ConfigError::invalid("placement.streams", "must be from 1 to 8"));
        }
        if let StreamInference::Recency { window_milli } = self.placement.infer {
            if !(1..=StreamInference::MAX_WINDOW_MILLI).contains(&window_milli) {
                return Err(ConfigError::invalid("placement.infer", "its window must be 0.001 to 1000 drive-writes"));
            }
            if self.placement.streams < 2 {
                return Err(ConfigError::invalid("placement.infer", "needs placement.streams of 2 or more"));
            }
        }
        if self.wear.static_spread == Some(0) {
            return Err(ConfigError::invalid("wear.static_spread", "must be at least 1 (or absent: off)"));
        }
        if self.placement.frontiers() > 1 && u64::from(self.reserve_blocks()) >= blocks {
            return Err(ConfigError::invalid(
                "placement",
                format!(
                    "the open blocks of {} write frontiers on {} dies and the GC's reserve take {} blocks, not fewer \
                     than the drive's {blocks}: give fewer streams (--streams, placement.streams), no GC frontier \
                     (--gc-frontier off, placement.gc_frontier) or a larger drive",
                    self.placement.frontiers(),
                    g.dies(),
                    self.reserve_blocks()
                ),
            ));
        }
        let reserve = u64::from(self.reserve_blocks()) * g.block_bytes();
        // Each block may waste up to one unit of padding where a chunk does
        // not fit its tail; require room for that too.
        let padding = blocks * u64::from(u);
        let usable = g.physical_bytes().saturating_sub(reserve).saturating_sub(padding);
        if usable <= self.logical_bytes {
            return Err(ConfigError::invalid(
                "geometry.blocks_per_die",
                format!(
                    "{} bytes of NAND leave {usable} bytes after the GC reserve ({} blocks) and block-tail padding, \
                     not more than the {} logical bytes: add blocks or lower the capacity",
                    g.physical_bytes(),
                    self.reserve_blocks(),
                    self.logical_bytes
                ),
            ));
        }
        Ok(())
    }
}
