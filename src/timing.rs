//! Simulated time: per-resource busy-until clocks for NAND dies, channels,
//! the compression engine, the firmware core and the host link.
//!
//! No wall clock anywhere: every completion time is computed from
//! [`TimingParams`] and when work is ready for each resource. Work is
//! served in time order, not in the order it is booked: a resource keeps
//! the idle gaps left before work booked earlier but ready later, and work
//! ready inside such a gap runs there (`start` = the earliest idle stretch
//! at or after `ready` that is long enough). Commands of a queue are
//! booked one after another, each with its own dependent steps (a map-page
//! read, then the data page); without the gaps, a data page booked far in
//! the future would hold up the next command's map read on an idle
//! channel. The controller reports the NAND operations a command caused;
//! this module turns them into time.

use serde::{Deserialize, Serialize};

use crate::units::SimTime;

mod lane;
mod params;

use lane::Lane;
pub use params::{
    HostLink, TimingParams, MAX_BYTES_PER_SEC, MAX_GC_LAG_NS, MAX_OP_NS, MAX_PAGES, MAX_PROGRAM_QUEUE,
    MIN_BYTES_PER_SEC,
};

/// Bytes of one ECC codeword: the smallest piece of a page register the
/// controller clocks out and corrects (SF-2281: BCH over 512-byte sectors).
pub const CODEWORD_BYTES: u64 = 512;

/// Nanoseconds to move `bytes` at `rate` bytes per second, rounded up.
pub fn transfer_ns(bytes: u64, rate: u64) -> u64 {
    match bytes.checked_mul(1_000_000_000) {
        Some(scaled) => scaled.div_ceil(rate),
        None => (u128::from(bytes) * 1_000_000_000).div_ceil(u128::from(rate)) as u64,
    }
}

/// The transfer time last computed at one fixed rate, so repeats of the
/// same size (a page, a host write) skip the division. Zero bytes take
/// zero time, so the empty memo is valid.
#[derive(Clone, Copy, Debug, Default)]
struct TransferMemo {
    bytes: u64,
    ns: u64,
}

impl TransferMemo {
    #[inline]
    fn ns(&mut self, bytes: u64, rate: u64) -> u64 {
        if bytes != self.bytes {
            *self = TransferMemo { bytes, ns: transfer_ns(bytes, rate) };
        }
        self.ns
    }
}

/// Whose work a NAND operation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// A host command waits for it.
    Host,
    /// Garbage collection, erases: done when the die has time.
    Background,
}

/// A die's or channel's clocks: its host work (with the gaps in it), and
/// when all its work ends.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct DieClock {
    host: Lane,
    /// Invariant: all >= host.end.
    all: SimTime,
}

/// Busy-until clocks of every resource.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Timeline {
    params: TimingParams,
    page_bytes: u64,
    dies: Vec<DieClock>,
    channels: Vec<DieClock>,
    engine: Lane,
    /// The write path's encoder ([`TimingParams::encode_bytes_per_sec`]).
    #[serde(default)]
    encoder: Lane,
    firmware: Lane,
    link: Lane,
    /// Channel, host link and engine transfer times (derived, not saved).
    #[serde(skip)]
    channel_xfer: TransferMemo,
    #[serde(skip)]
    link_xfer: TransferMemo,
    #[serde(skip)]
    engine_xfer: TransferMemo,
    #[serde(skip)]
    encode_xfer: TransferMemo,
}

impl Timeline {
    /// All resources idle at time zero: `dies` dies spread over `channels`.
    pub fn new(params: TimingParams, page_bytes: u32, channels: u32, dies: u32) -> Self {
        Timeline {
            params,
            page_bytes: u64::from(page_bytes),
            dies: vec![DieClock::default(); dies as usize],
            channels: vec![DieClock::default(); channels as usize],
            engine: Lane::default(),
            encoder: Lane::default(),
            firmware: Lane::default(),
            link: Lane::default(),
            channel_xfer: TransferMemo::default(),
            link_xfer: TransferMemo::default(),
            engine_xfer: TransferMemo::default(),
            encode_xfer: TransferMemo::default(),
        }
    }

    /// The parameters.
    pub fn params(&self) -> &TimingParams {
        &self.params
    }

    /// Dies are numbered across channels first: die d sits on channel
    /// d mod channels, so consecutive dies use different channels.
    fn channel_of(&self, die: u32) -> usize {
        let n = self.channels.len();
        if n.is_power_of_two() {
            die as usize & (n - 1)
        } else {
            die as usize % n
        }
    }

    /// Runs `cost` of work on `die` from `ready`. Host work goes ahead of
    /// queued background (GC) work, which it pushes back, unless the
    /// background backlog is more than `gc_lag_ns` deep: then the host
    /// waits, so GC can defer but never escape its share of die time.
    #[inline(always)]
    fn on_die(&mut self, die: u32, ready: SimTime, cost: u64, work: Work) -> SimTime {
        Self::schedule(&mut self.dies[die as usize], self.params.gc_lag_ns, ready, cost, work)
    }

    /// Moves `bytes` over `die`'s channel, host transfers ahead of
    /// background ones as on the dies.
    #[inline(always)]
    fn on_channel(&mut self, die: u32, ready: SimTime, bytes: u64, work: Work) -> SimTime {
        let xfer = self.channel_xfer.ns(bytes, self.params.channel_bytes_per_sec);
        let ch = self.channel_of(die);
        Self::schedule(&mut self.channels[ch], self.params.gc_lag_ns, ready, xfer, work)
    }

    #[inline(always)]
    fn schedule(d: &mut DieClock, lag: u64, ready: SimTime, cost: u64, work: Work) -> SimTime {
        match work {
            Work::Background => {
                let start = ready.max(d.all);
                d.all = start + cost;
                d.all
            }
            Work::Host => {
                let host_end = d.host.end;
                // Host work waits only for a background backlog deeper than `lag`.
                let floor = if d.all > host_end { SimTime(d.all.0.saturating_sub(lag)) } else { SimTime::ZERO };
                let start = d.host.book(ready.max(floor), cost);
                let end = start + cost;
                // Queued background work is pushed back by host work that
                // jumps it; work in a gap of host work leaves `all` alone
                // when nothing waits behind the host work.
                d.all = if start >= d.all {
                    end
                } else if d.all > host_end {
                    d.all + cost
                } else {
                    d.all.max(d.host.end)
                };
                end
            }
        }
    }

    /// A page read on `die` that may start at `ready`: array read, then the
    /// page crosses its channel. Returns when the data is in the controller.
    pub fn page_read(&mut self, die: u32, ready: SimTime, work: Work) -> SimTime {
        self.page_read_part(die, ready, self.page_bytes, work)
    }

    /// A page read on `die` of which only `bytes` cross the channel: the
    /// controller clocks out just the ECC codewords it needs from the page
    /// register (rounded up to whole codewords, at most a page).
    pub fn page_read_part(&mut self, die: u32, ready: SimTime, bytes: u64, work: Work) -> SimTime {
        let sensed = self.on_die(die, ready, self.params.read_ns, work);
        self.register_out(die, sensed, bytes, work)
    }

    /// `pages` background page reads on `die`, all ready at `ready`, one
    /// after another: when the last one's data is in the controller
    /// (`ready` for none). The same bookings as `pages` calls of
    /// [`Timeline::page_read`], in closed form: the die senses them back
    /// to back, and the channel clocks each out once it is sensed and the
    /// previous one is out, so the last transfer ends after the channel's
    /// backlog, the first sense or the last sense, whichever is latest.
    pub fn background_reads(&mut self, die: u32, ready: SimTime, pages: u32) -> SimTime {
        if pages == 0 {
            return ready;
        }
        let (n, read) = (u64::from(pages), self.params.read_ns);
        let xfer = self
            .channel_xfer
            .ns(Self::clocked_out(self.page_bytes, self.page_bytes), self.params.channel_bytes_per_sec);
        let d = &mut self.dies[die as usize];
        let first = ready.max(d.all);
        d.all = first + n.saturating_mul(read);
        let ch = self.channel_of(die);
        let c = &mut self.channels[ch];
        let (reads, xfers) = (n.saturating_mul(read), n.saturating_mul(xfer));
        c.all = (c.all + xfers).max(first + read + xfers).max(first + reads + xfer);
        c.all
    }

    /// Bytes of a page of `page_bytes` that cross the channel when
    /// `bytes` of it are wanted: whole codewords, at most the page.
    fn clocked_out(bytes: u64, page_bytes: u64) -> u64 {
        (bytes.div_ceil(CODEWORD_BYTES).max(1) * CODEWORD_BYTES).min(page_bytes)
    }

    /// Clocks `bytes` more out of a page already in `die`'s register
    /// (whole codewords, at most a page): channel time only.
    pub fn register_out(&mut self, die: u32, ready: SimTime, bytes: u64, work: Work) -> SimTime {
        self.on_channel(die, ready, Self::clocked_out(bytes, self.page_bytes), work)
    }

    /// A page program on `die` whose data is ready at `ready`. The write
    /// is accepted once the die's backlog is under `program_queue` program
    /// times; the page crosses the channel and the die programs it when
    /// free. Returns the acceptance time.
    #[inline(always)]
    pub fn page_program(&mut self, die: u32, ready: SimTime, work: Work) -> SimTime {
        let backlog = u64::from(self.params.program_queue).saturating_mul(self.params.program_ns);
        let d = &self.dies[die as usize];
        let queue_end = match work {
            Work::Background => d.all,
            Work::Host => d.host.end.max(SimTime(d.all.0.saturating_sub(self.params.gc_lag_ns))),
        };
        let accepted = ready.max(SimTime(queue_end.0.saturating_sub(backlog)));
        let on_bus = self.on_channel(die, accepted, self.page_bytes, work);
        self.on_die(die, on_bus, self.params.program_ns, work);
        on_bus
    }

    /// A block erase on `die` (background work). Returns when it is done.
    pub fn erase(&mut self, die: u32, ready: SimTime) -> SimTime {
        self.on_die(die, ready, self.params.erase_ns, Work::Background)
    }

    /// Compression or decompression of `bytes` raw bytes.
    pub fn engine(&mut self, bytes: u64, ready: SimTime) -> SimTime {
        let cost = self.engine_xfer.ns(bytes, self.params.engine_bytes_per_sec);
        self.engine.book(ready, cost) + cost
    }

    /// One host page through the write path's encoder from `ready`
    /// (at once when the preset has no such bound). Returns when it is
    /// through.
    pub fn encode_page(&mut self, ready: SimTime) -> SimTime {
        let Some(rate) = self.params.encode_bytes_per_sec else {
            return ready;
        };
        let cost = self.encode_xfer.ns(self.page_bytes, rate);
        self.encoder.book(ready, cost) + cost
    }

    /// Firmware time `ns` on the controller core from `ready` (per-piece
    /// work inside a command). Returns when it is done.
    pub fn firmware_work(&mut self, ready: SimTime, ns: u64) -> SimTime {
        self.firmware.book(ready, ns) + ns
    }

    /// Firmware handling of one command arriving at `ready`, plus `extra`
    /// serialized firmware time (TRIM ranges). Media work may start then.
    pub fn firmware(&mut self, ready: SimTime, extra: u64) -> SimTime {
        let cost = self.params.command_service_ns.saturating_add(extra);
        self.firmware.book(ready, cost) + cost
    }

    /// The earliest time data of a command issued at `submitted` may cross
    /// the link, or the command complete.
    pub fn link_floor(&self, submitted: SimTime) -> SimTime {
        submitted + self.params.command_latency_ns
    }

    /// `bytes` of payload over the host link.
    pub fn link(&mut self, bytes: u64, ready: SimTime) -> SimTime {
        let cost = self.link_xfer.ns(bytes, self.params.host_link.bytes_per_sec());
        self.link.book(ready, cost) + cost
    }

    /// When `die` has finished all the work booked on it.
    pub fn die_idle_at(&self, die: u32) -> SimTime {
        self.dies[die as usize].all
    }

    /// The latest time any die is busy until.
    pub fn dies_idle_at(&self) -> SimTime {
        self.dies.iter().map(|d| d.all).max().unwrap_or(SimTime::ZERO)
    }

    /// Whether this timeline has the shape of `other` (parameters and
    /// resource counts): a check on one read from an image.
    pub fn same_shape(&self, other: &Timeline) -> bool {
        self.params == other.params
            && self.page_bytes == other.page_bytes
            && self.dies.len() == other.dies.len()
            && self.channels.len() == other.channels.len()
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
            encode_bytes_per_sec: None,
            host_link: HostLink::Sata6g,
            command_service_ns: 10_000,
            command_latency_ns: 5_000,
            trim_range_ns: 1_000,
            read_window: None,
            read_piece_ns: 0,
            gc_lag_ns: 0,
            program_queue: 0,
            read_cache_pages: 0,
        }
    }

    #[test]
    fn reads_on_one_die_serialize_and_on_two_dies_overlap() {
        let mut t = Timeline::new(params(), 8192, 2, 2);
        let xfer = transfer_ns(8192, 200_000_000);
        let a = t.page_read(0, SimTime::ZERO, Work::Host);
        let b = t.page_read(0, SimTime::ZERO, Work::Host);
        assert_eq!(a, SimTime(50_000 + xfer));
        assert!(b.0 >= a.0 + 50_000, "second read on the same die waits");
        let mut t = Timeline::new(params(), 8192, 2, 2);
        let c = t.page_read(0, SimTime::ZERO, Work::Host);
        let d = t.page_read(1, SimTime::ZERO, Work::Host);
        assert_eq!(c, d, "different dies on different channels overlap fully");
    }

    #[test]
    fn work_ready_earlier_runs_in_the_gap_before_work_booked_earlier() {
        let mut t = Timeline::new(params(), 4096, 1, 2);
        let xfer = transfer_ns(4096, params().channel_bytes_per_sec);
        // Booked first, ready late: die 0's page crosses the channel at 1 ms.
        let late = t.page_read(0, SimTime(1_000_000), Work::Host);
        // Booked second, ready at once on die 1: it uses the idle channel.
        let early = t.page_read(1, SimTime::ZERO, Work::Host);
        assert_eq!(early.0, params().read_ns + xfer, "served when its resources are free");
        assert_eq!(late.0, 1_000_000 + params().read_ns + xfer, "the earlier booking keeps its time");
    }

    #[test]
    fn a_run_of_background_reads_books_what_one_read_at_a_time_does() {
        // Channel faster and slower than the array, with the die or the
        // channel already busy, and runs of 0 to 5 pages.
        for (channel_rate, page_bytes) in [(200_000_000, 8192), (20_000_000, 8192), (400_000_000, 4000)] {
            let mut p = params();
            p.channel_bytes_per_sec = channel_rate;
            for (busy_die, busy_channel, ready, pages) in
                [(0, 0, 0, 3), (1, 0, 7, 5), (0, 1, 0, 2), (1, 1, 900_000, 4), (0, 0, 5, 0), (1, 0, 0, 1)]
            {
                let mut one = Timeline::new(p.clone(), page_bytes, 1, 2);
                if busy_die == 1 {
                    one.erase(0, SimTime::ZERO);
                }
                if busy_channel == 1 {
                    for _ in 0..3 {
                        one.page_program(1, SimTime::ZERO, Work::Background);
                    }
                }
                let mut run = one.clone();
                let mut last = SimTime(ready);
                for _ in 0..pages {
                    last = last.max(one.page_read(0, SimTime(ready), Work::Background));
                }
                assert_eq!(run.background_reads(0, SimTime(ready), pages), last);
                assert_eq!((run.dies[0].all, run.channels[0].all), (one.dies[0].all, one.channels[0].all));
            }
        }
    }

    #[test]
    fn programs_back_up_behind_a_busy_die() {
        let mut t = Timeline::new(params(), 8192, 1, 1);
        let first = t.page_program(0, SimTime::ZERO, Work::Host);
        let second = t.page_program(0, SimTime::ZERO, Work::Host);
        assert_eq!(second.0 - first.0, 1_000_000 + transfer_ns(8192, 200_000_000));
        let e = t.erase(0, SimTime::ZERO);
        assert!(e.0 > second.0 + 1_000_000);
    }

    #[test]
    fn a_program_queue_absorbs_an_erase() {
        let mut p = params();
        p.program_queue = 4;
        let mut t = Timeline::new(p, 8192, 1, 1);
        t.erase(0, SimTime::ZERO);
        let accepted = t.page_program(0, SimTime::ZERO, Work::Host);
        assert!(accepted.0 < 100_000, "accepted at once behind a 3 ms erase: {accepted:?}");
        assert!(t.dies_idle_at().0 >= 4_000_000, "but the die programs after the erase");
    }

    #[test]
    fn host_work_goes_ahead_of_gc_within_the_lag() {
        let mut p = params();
        p.gc_lag_ns = 10_000_000;
        let mut t = Timeline::new(p, 8192, 1, 1);
        for _ in 0..5 {
            t.page_program(0, SimTime::ZERO, Work::Background);
        }
        let host = t.page_read(0, SimTime::ZERO, Work::Host);
        assert!(host.0 < 200_000, "a read jumps 5 ms of queued GC programs: {host:?}");
        assert!(t.dies_idle_at().0 > 5_000_000, "the GC work still happens");
        let mut strict = Timeline::new(params(), 8192, 1, 1);
        for _ in 0..5 {
            strict.page_program(0, SimTime::ZERO, Work::Background);
        }
        assert!(strict.page_read(0, SimTime::ZERO, Work::Host).0 > 5_000_000, "no lag allowed: the read waits");
    }

    #[test]
    fn firmware_caps_iops() {
        let mut t = Timeline::new(params(), 8192, 1, 1);
        let mut last = SimTime::ZERO;
        for _ in 0..100 {
            last = t.firmware(SimTime::ZERO, 0);
        }
        assert_eq!(last, SimTime(100 * 10_000));
        assert_eq!(t.link_floor(SimTime(1)), SimTime(5_001));
        assert_eq!(transfer_ns(560, 560_000_000), 1_000);
    }
}
