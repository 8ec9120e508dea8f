//! What a drive model's timing is made of ([`TimingParams`], the host
//! link) and the bounds each parameter is checked against.

use serde::{Deserialize, Serialize};

/// Host interface, by its payload rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HostLink {
    /// SATA 3 Gb/s: 300 MB/s after 8b/10b, about 285 MB/s of payload.
    Sata3g,
    /// SATA 6 Gb/s: 600 MB/s after 8b/10b, about 560 MB/s of payload.
    Sata6g,
}

impl HostLink {
    /// Payload bytes per second after framing (FIS headers, primitives).
    pub fn bytes_per_sec(self) -> u64 {
        match self {
            HostLink::Sata3g => 285_000_000,
            HostLink::Sata6g => 560_000_000,
        }
    }
}

/// Device timing of one drive model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingParams {
    /// Array read time tR: cell to page register (ns).
    pub read_ns: u64,
    /// Effective page program time tPROG (ns), multi-plane programming
    /// folded in.
    pub program_ns: u64,
    /// Block erase time tBERS (ns).
    pub erase_ns: u64,
    /// Channel (flash bus) rate, bytes per second.
    pub channel_bytes_per_sec: u64,
    /// Compression/decompression engine rate on raw bytes, per second.
    pub engine_bytes_per_sec: u64,
    /// Write-path rate on stored bytes, per second: what a host page
    /// passes after compression (encryption and ECC encoding) on its way
    /// to the flash channels. `None`: no bound beyond the dies and buses.
    #[serde(default)]
    pub encode_bytes_per_sec: Option<u64>,
    /// Host interface.
    pub host_link: HostLink,
    /// Firmware time per command, serialized on one core (ns): the IOPS
    /// ceiling is 1e9 / this.
    pub command_service_ns: u64,
    /// Fixed command latency that overlaps other commands and the media
    /// work of its own command (ns): protocol round trips and the host
    /// stack. No data crosses the link before it has passed.
    pub command_latency_ns: u64,
    /// Firmware time per TRIM range (ns).
    pub trim_range_ns: u64,
    /// Page reads one command may have in flight; `None` overlaps all of
    /// them across dies. Applies only with the read-degradation quirk.
    pub read_window: Option<u32>,
    /// Firmware time (ns) to set up each further piece of a read that is
    /// served unit by unit: when one of its units does not continue the
    /// previous unit's placement (the next bytes of the same block, or the
    /// next die of the write stripe), every unit is looked up and
    /// programmed into the NAND sequencer and decompression engine on its
    /// own. The first rides on the command's own setup. Applies only with
    /// the read-degradation quirk.
    #[serde(default)]
    pub read_piece_ns: u64,
    /// How far (ns) background work on a die may fall behind host work
    /// before host work waits for it.
    pub gc_lag_ns: u64,
    /// Programs a die may have queued (cache program and controller
    /// buffer): a write is accepted while its die's backlog is under this
    /// many program times, so a single erase does not stall the host.
    pub program_queue: u32,
    /// NAND pages the controller's read buffer keeps across commands. A
    /// compressed chunk that straddles into its die's next page shares
    /// that page with data written a stripe later; sequential reads find
    /// it here instead of sensing it twice.
    pub read_cache_pages: u32,
}

/// The longest one NAND operation, firmware step or fixed latency may
/// take: 1 s. The slowest of the presets is a 3 ms block erase, and real
/// NAND takes under 25 ms for any operation (QLC erase), so this is 40
/// times any real value; it keeps what one command adds to the clock far
/// below what a `u64` of nanoseconds holds.
pub const MAX_OP_NS: u64 = 1_000_000_000;

/// The furthest background work may trail host work (`gc_lag_ns`): 60 s,
/// 300 times the presets' 200 ms.
pub const MAX_GC_LAG_NS: u64 = 60_000_000_000;

/// The slowest channel, engine or write path: 1 MB/s, at which the largest
/// page (1 MiB) crosses in about [`MAX_OP_NS`]; the slowest preset bus is
/// the X25-M's 40 MB/s.
pub const MIN_BYTES_PER_SEC: u64 = 1_000_000;

/// The fastest: 1 TB/s, 1000 times the presets' fastest engine (1 GB/s).
pub const MAX_BYTES_PER_SEC: u64 = 1_000_000_000_000;

/// The most programs queued per die (`program_queue`): 1024, 256 times the
/// presets' 4 (an 8 MiB buffer per die of 8 KiB pages).
pub const MAX_PROGRAM_QUEUE: u32 = 1024;

/// The most page reads in flight per command (`read_window`) and pages
/// the read buffer keeps (`read_cache_pages`): 4096, 64 times the presets'
/// largest (64); the read buffer is searched on every page read.
pub const MAX_PAGES: u32 = 4096;

impl TimingParams {
    /// Checks the parameters, naming the first bad field: times within
    /// [`MAX_OP_NS`] (NAND operations and a command's firmware time at least
    /// 1 ns), `gc_lag_ns` within
    /// [`MAX_GC_LAG_NS`], rates from [`MIN_BYTES_PER_SEC`] to
    /// [`MAX_BYTES_PER_SEC`], queues and buffers within their maximum.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        let one_s = "1 s, longer than any NAND operation, firmware step or latency";
        for (field, v, min, max, why) in [
            ("timing.read_ns", self.read_ns, 1, MAX_OP_NS, one_s),
            ("timing.program_ns", self.program_ns, 1, MAX_OP_NS, one_s),
            ("timing.erase_ns", self.erase_ns, 1, MAX_OP_NS, one_s),
            // A command that takes no time would let a time-limited job of
            // TRIMs (which move no data) run without the clock moving.
            ("timing.command_service_ns", self.command_service_ns, 1, MAX_OP_NS, one_s),
            ("timing.command_latency_ns", self.command_latency_ns, 0, MAX_OP_NS, one_s),
            ("timing.trim_range_ns", self.trim_range_ns, 0, MAX_OP_NS, one_s),
            ("timing.read_piece_ns", self.read_piece_ns, 0, MAX_OP_NS, one_s),
            ("timing.gc_lag_ns", self.gc_lag_ns, 0, MAX_GC_LAG_NS, "60 s"),
        ] {
            if !(min..=max).contains(&v) {
                return Err((field, format!("{v} ns is outside {min}..={max} (at most {why})")));
            }
        }
        let rates = [
            ("timing.channel_bytes_per_sec", Some(self.channel_bytes_per_sec)),
            ("timing.engine_bytes_per_sec", Some(self.engine_bytes_per_sec)),
            ("timing.encode_bytes_per_sec", self.encode_bytes_per_sec),
        ];
        for (field, v) in rates {
            if let Some(v) = v.filter(|v| !(MIN_BYTES_PER_SEC..=MAX_BYTES_PER_SEC).contains(v)) {
                return Err((
                    field,
                    format!("{v} bytes/s is outside {MIN_BYTES_PER_SEC}..={MAX_BYTES_PER_SEC} (1 MB/s to 1 TB/s)"),
                ));
            }
        }
        let counts = [
            ("timing.program_queue", Some(self.program_queue), 0, MAX_PROGRAM_QUEUE),
            ("timing.read_window", self.read_window, 1, MAX_PAGES),
            ("timing.read_cache_pages", Some(self.read_cache_pages), 0, MAX_PAGES),
        ];
        for (field, v, min, max) in counts {
            if let Some(v) = v.filter(|v| !(min..=max).contains(v)) {
                return Err((field, format!("{v} is outside {min}..={max}")));
            }
        }
        Ok(())
    }
}
