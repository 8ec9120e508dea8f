//! Simulated time: per-resource busy-until clocks for NAND dies, channels,
//! the compression engine, the firmware core and the host link.
//!
//! No wall clock anywhere: every completion time is computed from
//! [`TimingParams`] and the order in which work reaches each resource
//! (`start = max(ready, busy_until); busy_until = start + cost`). The
//! controller reports the NAND operations a command caused; this module
//! turns them into time.

use serde::{Deserialize, Serialize};

use crate::units::SimTime;

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
    /// Host interface.
    pub host_link: HostLink,
    /// Firmware time per command, serialized on one core (ns): the IOPS
    /// ceiling is 1e9 / this.
    pub command_service_ns: u64,
    /// Fixed command latency that overlaps other commands (ns): protocol
    /// round trips and queueing in the host stack.
    pub command_latency_ns: u64,
    /// Firmware time per TRIM range (ns).
    pub trim_range_ns: u64,
    /// Page reads one command may have in flight; `None` overlaps all of
    /// them across dies.
    pub read_window: Option<u32>,
}

impl TimingParams {
    /// Checks the parameters, naming the first bad field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        for (field, v) in [
            ("timing.channel_bytes_per_sec", self.channel_bytes_per_sec),
            ("timing.engine_bytes_per_sec", self.engine_bytes_per_sec),
        ] {
            if v == 0 {
                return Err((field, "must be positive".into()));
            }
        }
        if self.read_window == Some(0) {
            return Err(("timing.read_window", "must be at least 1 (or absent for no limit)".into()));
        }
        Ok(())
    }
}

/// Nanoseconds to move `bytes` at `rate` bytes per second, rounded up.
pub fn transfer_ns(bytes: u64, rate: u64) -> u64 {
    (u128::from(bytes) * 1_000_000_000).div_ceil(u128::from(rate)) as u64
}

/// Busy-until clocks of every resource.
#[derive(Clone, Debug)]
pub struct Timeline {
    params: TimingParams,
    page_bytes: u64,
    dies_per_channel: u32,
    dies: Vec<SimTime>,
    channels: Vec<SimTime>,
    engine: SimTime,
    firmware: SimTime,
    link: SimTime,
}

impl Timeline {
    /// All resources idle at time zero.
    pub fn new(params: TimingParams, page_bytes: u32, channels: u32, dies_per_channel: u32) -> Self {
        Timeline {
            params,
            page_bytes: u64::from(page_bytes),
            dies_per_channel,
            dies: vec![SimTime::ZERO; (channels * dies_per_channel) as usize],
            channels: vec![SimTime::ZERO; channels as usize],
            engine: SimTime::ZERO,
            firmware: SimTime::ZERO,
            link: SimTime::ZERO,
        }
    }

    /// The parameters.
    pub fn params(&self) -> &TimingParams {
        &self.params
    }

    fn channel_of(&self, die: u32) -> usize {
        (die / self.dies_per_channel) as usize
    }

    fn occupy(clock: &mut SimTime, ready: SimTime, cost: u64) -> SimTime {
        let start = ready.max(*clock);
        *clock = start + cost;
        *clock
    }

    /// A page read on `die` that may start at `ready`: array read, then the
    /// page crosses its channel. Returns when the data is in the controller.
    pub fn page_read(&mut self, die: u32, ready: SimTime) -> SimTime {
        let sensed = Self::occupy(&mut self.dies[die as usize], ready, self.params.read_ns);
        let xfer = transfer_ns(self.page_bytes, self.params.channel_bytes_per_sec);
        let ch = self.channel_of(die);
        let done = Self::occupy(&mut self.channels[ch], sensed, xfer);
        // The die's page register is busy until its data has left.
        self.dies[die as usize] = self.dies[die as usize].max(done);
        done
    }

    /// A page program on `die` whose data is ready at `ready`: the page
    /// crosses the channel, then the die programs it. Returns when the die
    /// has taken the data (the controller's buffer is free again); the die
    /// stays busy for tPROG after that.
    pub fn page_program(&mut self, die: u32, ready: SimTime) -> SimTime {
        let xfer = transfer_ns(self.page_bytes, self.params.channel_bytes_per_sec);
        let ch = self.channel_of(die);
        let die_free = self.dies[die as usize];
        let on_bus = Self::occupy(&mut self.channels[ch], ready.max(die_free), xfer);
        self.dies[die as usize] = on_bus + self.params.program_ns;
        on_bus
    }

    /// A block erase on `die`. Returns when the block is erased.
    pub fn erase(&mut self, die: u32, ready: SimTime) -> SimTime {
        Self::occupy(&mut self.dies[die as usize], ready, self.params.erase_ns)
    }

    /// Compression or decompression of `bytes` raw bytes.
    pub fn engine(&mut self, bytes: u64, ready: SimTime) -> SimTime {
        let cost = transfer_ns(bytes, self.params.engine_bytes_per_sec);
        Self::occupy(&mut self.engine, ready, cost)
    }

    /// Firmware handling of one command arriving at `ready`, plus `extra`
    /// serialized firmware time (TRIM ranges).
    pub fn firmware(&mut self, ready: SimTime, extra: u64) -> SimTime {
        let cost = self.params.command_service_ns + extra;
        Self::occupy(&mut self.firmware, ready + self.params.command_latency_ns, cost)
    }

    /// `bytes` of payload over the host link.
    pub fn link(&mut self, bytes: u64, ready: SimTime) -> SimTime {
        let cost = transfer_ns(bytes, self.params.host_link.bytes_per_sec());
        Self::occupy(&mut self.link, ready, cost)
    }

    /// The latest time any die is busy until.
    pub fn dies_idle_at(&self) -> SimTime {
        self.dies.iter().copied().max().unwrap_or(SimTime::ZERO)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> TimingParams {
        TimingParams {
            read_ns: 50_000,
            program_ns: 1_000_000,
            erase_ns: 3_000_000,
            channel_bytes_per_sec: 200_000_000,
            engine_bytes_per_sec: 1_000_000_000,
            host_link: HostLink::Sata6g,
            command_service_ns: 10_000,
            command_latency_ns: 5_000,
            trim_range_ns: 1_000,
            read_window: None,
        }
    }

    #[test]
    fn reads_on_one_die_serialize_and_on_two_dies_overlap() {
        let mut t = Timeline::new(params(), 8192, 2, 1);
        let xfer = transfer_ns(8192, 200_000_000);
        let a = t.page_read(0, SimTime::ZERO);
        let b = t.page_read(0, SimTime::ZERO);
        assert_eq!(a, SimTime(50_000 + xfer));
        assert!(b.0 >= a.0 + 50_000, "second read on the same die waits");
        let mut t = Timeline::new(params(), 8192, 2, 1);
        let c = t.page_read(0, SimTime::ZERO);
        let d = t.page_read(1, SimTime::ZERO);
        assert_eq!(c, d, "different dies on different channels overlap fully");
    }

    #[test]
    fn programs_back_up_behind_a_busy_die() {
        let mut t = Timeline::new(params(), 8192, 1, 1);
        let first = t.page_program(0, SimTime::ZERO);
        let second = t.page_program(0, SimTime::ZERO);
        assert_eq!(second.0 - first.0, 1_000_000 + transfer_ns(8192, 200_000_000));
        let e = t.erase(0, SimTime::ZERO);
        assert!(e.0 > second.0 + 1_000_000);
    }

    #[test]
    fn firmware_caps_iops() {
        let mut t = Timeline::new(params(), 8192, 1, 1);
        let mut last = SimTime::ZERO;
        for _ in 0..100 {
            last = t.firmware(SimTime::ZERO, 0);
        }
        assert_eq!(last, SimTime(5_000 + 100 * 10_000));
        assert_eq!(transfer_ns(560, 560_000_000), 1_000);
    }
}
