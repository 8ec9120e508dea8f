//! The drive shapes and feature mixes the oracle runs on.

use duraflash::config::{Geometry, StreamInference, WearConfig};
use duraflash::{DriveConfig, GcPolicy};

/// Array shapes small enough that GC runs constantly.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    /// 2 dies x 16 blocks of 8 x 4 KiB pages (8 units a block): compressed
    /// chunks straddle pages.
    SmallPages,
    /// 2 dies x 8 blocks of 16 x 8 KiB pages (32 units a block).
    BigPages,
    /// 4 dies x 8 blocks of 4 x 8 KiB pages, GC low watermark 3.
    FourDies,
    /// SmallPages with an 8 KiB mapping unit.
    Unit8k,
    /// SmallPages with 512-byte mapping units (no partial-unit writes).
    Unit512,
    /// 16 KiB units on 4 KiB pages, 4 units a block: a unit spans pages.
    Unit16k,
    /// One die of 40 blocks of 64 x 512-byte pages.
    OneDieTinyPages,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Variant {
    pub(crate) dedup: bool,
    pub(crate) compression: bool,
    pub(crate) policy: GcPolicy,
    pub(crate) shape: Shape,
    /// Logical capacity as a share of the largest `validate` accepts.
    pub(crate) fill_pct: u64,
    /// Host write streams (hinted by LBA thirds, see `hint_streams`).
    pub(crate) streams: u8,
    /// GC relocations on frontiers of their own.
    pub(crate) gc_frontier: bool,
    /// Dynamic and static wear levelling.
    pub(crate) wear: WearConfig,
    /// Streams inferred by the drive from update recency (replacing the hints).
    pub(crate) infer: StreamInference,
}

impl Variant {
    pub(crate) const fn new(dedup: bool, compression: bool, policy: GcPolicy, shape: Shape) -> Self {
        Variant {
            dedup,
            compression,
            policy,
            shape,
            fill_pct: 100,
            streams: 1,
            gc_frontier: false,
            wear: WearConfig { dynamic: false, static_spread: None },
            infer: StreamInference::Off,
        }
    }

    /// Streams inferred from recency with a window of `window_milli`
    /// thousandths of a drive-write.
    pub(crate) const fn inferred(self, window_milli: u32) -> Self {
        Variant { infer: StreamInference::Recency { window_milli }, ..self }
    }

    /// Wear levelling: dynamic when `dynamic`, static past `static_spread`.
    pub(crate) const fn levelled(self, dynamic: bool, static_spread: Option<u32>) -> Self {
        Variant { wear: WearConfig { dynamic, static_spread }, ..self }
    }

    pub(crate) const fn placed(self, streams: u8, gc_frontier: bool) -> Self {
        Variant { streams, gc_frontier, ..self }
    }

    pub(crate) fn config(&self) -> DriveConfig {
        let mut cfg = DriveConfig::preset("sf2281-240g").expect("preset");
        let (channels, dies_per_channel, blocks_per_die, pages_per_block, page_bytes) = match self.shape {
            Shape::SmallPages | Shape::Unit8k | Shape::Unit512 => (2, 1, 16, 8, 4096),
            Shape::BigPages => (2, 1, 8, 16, 8192),
            Shape::FourDies => (2, 2, 8, 4, 8192),
            Shape::Unit16k => (2, 1, 24, 16, 4096),
            Shape::OneDieTinyPages => (1, 1, 40, 64, 512),
        };
        cfg.set_geometry(Geometry {
            channels,
            dies_per_channel,
            blocks_per_die,
            pages_per_block,
            page_bytes,
            pe_cycles: 3000,
        });
        cfg.unit_bytes = match self.shape {
            Shape::Unit8k => 8192,
            Shape::Unit512 => 512,
            Shape::Unit16k => 16384,
            _ => 4096,
        };
        if self.shape == Shape::FourDies {
            cfg.gc.low_watermark = 3;
        }
        cfg.dedup = self.dedup;
        cfg.compression = self.compression;
        cfg.gc.policy = self.policy;
        cfg.placement.streams = self.streams;
        cfg.placement.gc_frontier = self.gc_frontier;
        cfg.placement.infer = self.infer;
        cfg.wear = self.wear;
        let g = &cfg.geometry;
        let unit = u64::from(cfg.unit_bytes);
        let usable =
            g.physical_bytes() - u64::from(cfg.reserve_blocks()) * g.block_bytes() - u64::from(g.total_blocks()) * unit;
        let max_units = (usable - 1) / unit;
        let units = (max_units * self.fill_pct / 100).max(1);
        cfg.logical_bytes = units * unit;
        cfg.validate().unwrap_or_else(|e| panic!("{self:?}: {e}"));
        cfg
    }
}
