//! Stream inference from update recency, as a firmware with no host hints
//! would do it in bounded memory: one 32-bit stamp per logical unit (the
//! count of host unit writes at its last write), and multi-level
//! thresholds on the age since then. A unit rewritten within the window
//! is hot and goes to the hottest stream; each doubling of its age past
//! the window puts it one stream colder; a unit never written (or older
//! than the last level) goes to stream 0. Owns the stamps; deterministic.

use crate::units::Lpn;

/// Last-write stamps of every logical unit and the thresholds on them.
#[derive(Clone, Debug)]
pub struct RecencyTable {
    /// Host unit writes at each unit's last write; 0 for never written.
    stamps: Vec<u32>,
    /// Host unit writes so far (wraps at 2^32, skipping 0: a unit last
    /// written 2^32 writes ago then looks recent, which only misplaces it).
    now: u32,
    /// Hottest stream's age limit in host unit writes (at least 1).
    window: u64,
    /// Streams to choose among (at least 1).
    streams: u8,
}

impl RecencyTable {
    /// A table for `units` logical units, all never written, choosing
    /// among `streams` streams with a hottest window of `window` writes.
    pub fn new(units: u64, window: u64, streams: u8) -> Self {
        RecencyTable { stamps: vec![0; units as usize], now: 0, window: window.max(1), streams: streams.max(1) }
    }

    /// Bytes the table holds for `units` logical units.
    pub fn bytes_for(units: u64) -> u64 {
        units * std::mem::size_of::<u32>() as u64
    }

    /// Counts a host write of `lpn` (below the unit count), stamps it and
    /// returns its stream.
    pub fn write(&mut self, lpn: Lpn) -> u8 {
        self.now = self.now.wrapping_add(1).max(1);
        let last = std::mem::replace(&mut self.stamps[lpn.0 as usize], self.now);
        if last == 0 {
            return 0;
        }
        stream_for_age(u64::from(self.now.wrapping_sub(last)), self.window, self.streams)
    }
}

/// The stream of a unit rewritten `age` host unit writes after its last
/// write: `streams - 1` within `window`, one colder for each doubling
/// past it, never below 0.
pub fn stream_for_age(age: u64, window: u64, streams: u8) -> u8 {
    let mut stream = streams.saturating_sub(1);
    let mut bound = window;
    while stream > 0 && age > bound {
        bound = bound.saturating_mul(2);
        stream -= 1;
    }
    stream
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_map_to_streams_by_doubling_levels() {
        // Two streams: within the window hot, past it cold.
        assert_eq!(stream_for_age(10, 10, 2), 1);
        assert_eq!(stream_for_age(11, 10, 2), 0);
        // Four streams: (0, 10] -> 3, (10, 20] -> 2, (20, 40] -> 1, beyond -> 0.
        let s: Vec<u8> = [1, 10, 11, 20, 21, 40, 41, 1000].iter().map(|&a| stream_for_age(a, 10, 4)).collect();
        assert_eq!(s, [3, 3, 2, 2, 1, 1, 0, 0]);
        // Past the window, no overflow where the doubling saturates.
        assert_eq!(stream_for_age(u64::MAX, u64::MAX / 2, 8), 5);
        assert_eq!(stream_for_age(5, 1, 1), 0);
    }

    #[test]
    fn a_first_write_is_cold_and_a_quick_rewrite_hot() {
        let mut t = RecencyTable::new(8, 3, 2);
        assert_eq!(t.write(Lpn(0)), 0, "never written before");
        assert_eq!(t.write(Lpn(0)), 1, "rewritten one write later");
        for i in 1..5 {
            t.write(Lpn(i));
        }
        // Lpn 0 was last written 5 writes ago: past the window of 3.
        assert_eq!(t.write(Lpn(0)), 0);
        assert_eq!(RecencyTable::bytes_for(1000), 4000);
    }
}
