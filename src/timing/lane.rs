//! One resource's busy time: when its booked work ends, and the idle
//! gaps before that which work ready earlier may still fill (see the
//! parent module for why work is served in time order).

use serde::{Deserialize, Serialize};

use crate::units::SimTime;

/// Idle gaps a lane remembers; older ones are forgotten (treated as busy).
/// A power of two, so the ring's index is a mask.
const MAX_GAPS: usize = 64;

/// A lane's idle stretches `(from, to)`, oldest first, disjoint: the newest
/// [`MAX_GAPS`] in a fixed ring, so remembering one more forgets the oldest
/// and moves nothing, and nothing is allocated.
#[derive(Clone, Debug)]
struct Gaps {
    ring: [(SimTime, SimTime); MAX_GAPS],
    head: usize,
    len: usize,
}

impl Default for Gaps {
    fn default() -> Self {
        Gaps { ring: [(SimTime::ZERO, SimTime::ZERO); MAX_GAPS], head: 0, len: 0 }
    }
}

impl Gaps {
    fn at(&self, i: usize) -> usize {
        (self.head + i) & (MAX_GAPS - 1)
    }

    fn get(&self, i: usize) -> (SimTime, SimTime) {
        self.ring[self.at(i)]
    }

    fn set(&mut self, i: usize, gap: (SimTime, SimTime)) {
        self.ring[self.at(i)] = gap;
    }

    /// Forgets the oldest gap.
    fn pop_front(&mut self) {
        self.head = self.at(1);
        self.len -= 1;
    }

    /// Remembers `gap`, the newest, forgetting the oldest when full.
    #[inline]
    fn push_back(&mut self, gap: (SimTime, SimTime)) {
        if self.len == MAX_GAPS {
            self.pop_front();
        }
        let at = self.at(self.len);
        self.ring[at] = gap;
        self.len += 1;
    }

    /// Puts `gap` before the one at `i` (`i` at least 1), forgetting the
    /// oldest when full.
    fn insert(&mut self, mut i: usize, gap: (SimTime, SimTime)) {
        if self.len == MAX_GAPS {
            self.pop_front();
            i -= 1;
        }
        for k in (i..self.len).rev() {
            self.set(k + 1, self.get(k));
        }
        self.set(i, gap);
        self.len += 1;
    }

    /// Drops the gap at `i`.
    fn remove(&mut self, i: usize) {
        for k in i..self.len - 1 {
            self.set(k, self.get(k + 1));
        }
        self.len -= 1;
    }

    /// The first of the gaps, in order, not ending before `at`.
    fn first_ending_from(&self, at: SimTime) -> usize {
        let (mut lo, mut hi) = (0, self.len);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.get(mid).1 < at {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }
}

/// One resource's time: when the work booked on it ends, and the idle gaps
/// before that which work ready earlier may still fill. The gaps are
/// derived state, not saved in images (a loaded drive starts without).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct Lane {
    pub(super) end: SimTime,
    #[serde(skip)]
    gaps: Gaps,
}

impl Lane {
    /// Books `cost` at the earliest idle stretch that starts at or after
    /// `ready` and is long enough. Returns its start.
    #[inline]
    pub(super) fn book(&mut self, ready: SimTime, cost: u64) -> SimTime {
        if ready < self.end {
            return self.book_early(ready, cost);
        }
        if ready > self.end {
            self.gaps.push_back((self.end, ready));
        }
        self.end = ready + cost;
        ready
    }

    /// [`Lane::book`] of work ready before the lane's end: into the first
    /// gap it fits, else at the end. Out of line, so the common case above
    /// stays small where it is inlined.
    #[inline(never)]
    fn book_early(&mut self, ready: SimTime, cost: u64) -> SimTime {
        // Gaps are in time order: those ending before `ready + cost`
        // cannot take the work, so the scan starts after them.
        let skip = self.gaps.first_ending_from(ready + cost);
        let fits = (skip..self.gaps.len).find(|&i| {
            let (from, to) = self.gaps.get(i);
            ready.max(from) + cost <= to
        });
        if let Some(i) = fits {
            let (from, to) = self.gaps.get(i);
            let start = ready.max(from);
            let end = start + cost;
            match (start > from, end < to) {
                (true, true) => {
                    self.gaps.set(i, (from, start));
                    self.gaps.insert(i + 1, (end, to));
                }
                (true, false) => self.gaps.set(i, (from, start)),
                (false, true) => self.gaps.set(i, (end, to)),
                (false, false) => self.gaps.remove(i),
            }
            return start;
        }
        let start = self.end;
        self.end = start + cost;
        start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transfer_longer_than_any_gap_left_waits_for_the_end() {
        let mut lane = Lane::default();
        assert_eq!(lane.book(SimTime(100), 10), SimTime(100));
        assert_eq!(lane.book(SimTime(0), 200), SimTime(110));
        assert_eq!(lane.book(SimTime(0), 50), SimTime(0), "the gap before 100 fits 50");
        assert_eq!(lane.book(SimTime(0), 60), SimTime(310), "no gap fits 60 more");
    }

    /// The gaps as a growable list, forgetting the oldest past
    /// `MAX_GAPS` (what the ring replaced): the same starts, booking by
    /// booking.
    #[test]
    fn the_gap_ring_books_what_an_unbounded_list_cut_to_its_newest_does() {
        fn book(end: &mut u64, gaps: &mut Vec<(u64, u64)>, ready: u64, cost: u64) -> u64 {
            let fits = gaps.iter().position(|&(from, to)| ready < *end && ready.max(from) + cost <= to);
            let start = match fits {
                Some(i) => {
                    let (from, to) = gaps.remove(i);
                    let start = ready.max(from);
                    if start + cost < to {
                        gaps.insert(i, (start + cost, to));
                    }
                    if start > from {
                        gaps.insert(i, (from, start));
                    }
                    start
                }
                None if ready >= *end => {
                    if ready > *end {
                        gaps.push((*end, ready));
                    }
                    *end = ready + cost;
                    ready
                }
                None => std::mem::replace(end, *end + cost),
            };
            if gaps.len() > MAX_GAPS {
                gaps.remove(0);
            }
            start
        }
        let (mut lane, mut end, mut gaps) = (Lane::default(), 0, Vec::new());
        let mut x = 1u64;
        let mut now = 0;
        for _ in 0..5000 {
            // xorshift: work ready around now, sometimes well before it.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            now += x % 50;
            let ready = now.saturating_sub(x % 7 * (x >> 8) % 400);
            let cost = 1 + (x >> 20) % 30;
            assert_eq!(lane.book(SimTime(ready), cost).0, book(&mut end, &mut gaps, ready, cost));
            assert_eq!(lane.end.0, end);
        }
        assert_eq!(lane.gaps.len, MAX_GAPS, "the ring filled and forgot");
    }
}
