//! Access patterns, the workload layer's shared vocabulary: what commands
//! a job issues ([`Rw`]), where its random ones land ([`Distribution`],
//! [`Access`]), and which request slot a workload touches next
//! ([`SlotStream`]). fio job files, the review passes and the studies all
//! speak these; the fio parser maps its spellings onto them.
//!
//! A *slot* is a request-sized, request-aligned piece of the drive; a
//! pattern picks slot numbers from `0..slots`, deterministically from its
//! seed.

use std::str::FromStr;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution as _, Zipf};
use serde::Serialize;

use crate::workload::WorkloadError;

mod zones;
pub use zones::{Zones, MAX_ZONES};

/// Where a workload's requests land.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Access {
    /// Every slot equally likely.
    Uniform,
    /// Every slot once per pass over the slots, in a seeded random order
    /// that changes from pass to pass: fio's random map, its default for
    /// uniform random I/O.
    Shuffled,
    /// Zipf-distributed popularity with exponent `theta`, popular slots
    /// scattered over the drive.
    Zipf(f64),
    /// Slots in order, wrapping at the end.
    Sequential,
    /// fio's `pareto:h`: rank = (n - 1) x u^(ln h / ln(1 - h)), popular
    /// slots scattered over the drive.
    Pareto(f64),
    /// fio's `zoned` of any other number of zones: each zone, in order
    /// from slot 0, a share of the slots receiving a share of the
    /// requests, uniformly inside it.
    Zoned(Zones),
    /// `hotcold:F:R`: the first fraction `hot` of the slots receives the
    /// fraction `writes` of the requests, uniformly inside each part (fio's
    /// two-zone `zoned:R/F:(1-R)/(1-F)` in percent). Both in (0, 1).
    HotCold {
        /// Share of the slots that is hot, from slot 0.
        hot: f64,
        /// Share of the requests that goes to the hot slots.
        writes: f64,
    },
}

impl Access {
    /// `hotcold:F:R` with both fractions checked to lie in (0, 1).
    pub fn hot_cold(hot: f64, writes: f64) -> Result<Self, String> {
        for (name, v) in [("hot fraction", hot), ("write fraction", writes)] {
            if !(v > 0.0 && v < 1.0) {
                return Err(format!("hotcold {name} {v} must be between 0 and 1 (exclusive)"));
            }
        }
        Ok(Access::HotCold { hot, writes })
    }

    /// Checks that `slots` request slots can carry the pattern: at least
    /// one, and for hot/cold two (a hot one and a cold one).
    pub fn check_slots(self, slots: u64) -> Result<(), String> {
        match (self, slots) {
            (_, 0) => Err("the workload has no room for a single request".into()),
            (Access::HotCold { .. }, 1) => {
                Err("hotcold needs at least two request slots (a hot and a cold one)".into())
            }
            (Access::Zoned(zones), _) => zones.bounds(slots).map(drop).map_err(|i| {
                format!("zone {} of {} gets none of the region's {slots} request slots", i + 1, zones.len)
            }),
            _ => Ok(()),
        }
    }
}

impl FromStr for Access {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "uniform" => Ok(Access::Uniform),
            "sequential" => Ok(Access::Sequential),
            _ => {
                if let Some(rest) = s.strip_prefix("hotcold:") {
                    let fraction =
                        |v: &str| v.parse::<f64>().map_err(|_| format!("hotcold fraction '{v}' is not a number"));
                    let (f, r) = rest.split_once(':').ok_or_else(|| format!("'{s}' is not hotcold:F:R"))?;
                    return Access::hot_cold(fraction(f)?, fraction(r)?);
                }
                let theta = s.strip_prefix("zipf:").ok_or_else(|| {
                    format!("unknown workload '{s}' (valid: uniform, zipf:THETA, sequential, hotcold:F:R)")
                })?;
                let theta: f64 = theta.parse().map_err(|_| format!("zipf exponent '{theta}' is not a number"))?;
                if !(theta > 0.0 && theta.is_finite()) {
                    return Err(format!("zipf exponent {theta} must be positive"));
                }
                Ok(Access::Zipf(theta))
            }
        }
    }
}

/// The I/O pattern of a job (fio `rw=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rw {
    /// `read`: sequential reads.
    Read,
    /// `write`: sequential writes.
    Write,
    /// `randread`: random reads.
    RandRead,
    /// `randwrite`: random writes.
    RandWrite,
    /// `randrw`: random mixed reads and writes, split by `rwmixread`.
    RandRw,
    /// `rw` / `readwrite`: sequential mixed reads and writes.
    SeqRw,
    /// `trim`: sequential trims.
    Trim,
    /// `randtrim`: random trims.
    RandTrim,
    /// `trimwrite`: sequential trim then write of the same blocks.
    TrimWrite,
}

impl Rw {
    /// Whether offsets are chosen at random (else sequentially).
    pub fn is_random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw | Rw::RandTrim)
    }

    /// Whether the pattern issues reads.
    pub fn does_read(self) -> bool {
        matches!(self, Rw::Read | Rw::RandRead | Rw::RandRw | Rw::SeqRw)
    }

    /// Whether the pattern issues writes.
    pub fn does_write(self) -> bool {
        matches!(self, Rw::Write | Rw::RandWrite | Rw::RandRw | Rw::SeqRw | Rw::TrimWrite)
    }

    /// Whether the pattern issues trims.
    pub fn does_trim(self) -> bool {
        matches!(self, Rw::Trim | Rw::RandTrim | Rw::TrimWrite)
    }

    /// Whether it issues reads, writes and trims, in that order (fio's
    /// per-direction order).
    pub fn directions(self) -> [bool; 3] {
        [self.does_read(), self.does_write(), self.does_trim()]
    }
}

/// How random offsets are drawn (fio `random_distribution=`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    /// Uniform, each draw independent of the last (fio's `norandommap`):
    /// some offsets come twice in a pass over the region, others not at
    /// all. The studies' random writes.
    Random,
    /// Uniform without repeats (fio's default random map): each pass over
    /// the region touches every offset once, in a seeded random order (the
    /// order is ours; fio's comes from its tausworthe generator and map).
    Shuffled,
    /// Zipf with this theta (finite, > 0, != 1).
    Zipf(f64),
    /// Pareto with this power h, in (0, 1).
    Pareto(f64),
    /// fio's two-zone `zoned:A/R:B/S`: the first `hot` share of the range
    /// gets the `writes` share of the accesses (see [`Access::HotCold`]).
    HotCold {
        /// Share of the range that is hot, from its start.
        hot: f64,
        /// Share of the accesses to the hot part.
        writes: f64,
    },
    /// fio's `zoned` of one or three or more zones (see [`Access::Zoned`]).
    Zoned(Zones),
}

impl From<Distribution> for Access {
    fn from(d: Distribution) -> Self {
        match d {
            Distribution::Random => Access::Uniform,
            Distribution::Shuffled => Access::Shuffled,
            Distribution::Zipf(theta) => Access::Zipf(theta),
            Distribution::Pareto(h) => Access::Pareto(h),
            Distribution::HotCold { hot, writes } => Access::HotCold { hot, writes },
            Distribution::Zoned(zones) => Access::Zoned(zones),
        }
    }
}

/// A seeded stream of slot numbers.
#[derive(Clone, Debug)]
pub struct SlotStream {
    slots: u64,
    rng: ChaCha8Rng,
    kind: Kind,
}

#[derive(Clone, Debug)]
enum Kind {
    Uniform,
    Shuffled(Shuffle),
    Zipf(Zipf<f64>),
    Sequential(u64),
    Pareto(f64),
    /// Hot slots `0..hot`, cold ones `hot..slots`; the hot share of draws
    /// as a threshold on a uniform u64.
    HotCold {
        hot: u64,
        threshold: u64,
    },
    /// Zones ending at `ends`, drawn while a uniform u64 is below their
    /// cumulative share of the accesses, `below`.
    Zoned {
        ends: Vec<u64>,
        below: Vec<u64>,
    },
}

/// Mersenne prime 2^61 - 1: multiplying by it permutes `0..n` for any
/// n < 2^61, scattering Zipf ranks over the drive.
const SCATTER: u128 = (1 << 61) - 1;

/// Spreads popularity rank `rank` over `0..slots` (a bijection).
fn scatter(rank: u64, slots: u64) -> u64 {
    ((u128::from(rank) * SCATTER) % u128::from(slots)) as u64
}

/// A pass-by-pass random permutation of `0..slots` in constant memory: a
/// four-round Feistel network on the smallest even number of bits that
/// holds every slot, walking the cycle past values out of range (Black and
/// Rogaway, "Ciphers with Arbitrary Finite Domains", CT-RSA 2002). Each
/// pass draws new round keys.
#[derive(Clone, Debug)]
struct Shuffle {
    slots: u64,
    /// Bits of each Feistel half.
    half: u32,
    keys: [u64; 4],
    /// Position in the current pass; `slots` when a pass is due.
    index: u64,
}

impl Shuffle {
    fn new(slots: u64) -> Self {
        let bits = (u64::BITS - slots.saturating_sub(1).leading_zeros()).max(2);
        Shuffle { slots, half: bits.div_ceil(2), keys: [0; 4], index: slots }
    }

    fn next(&mut self, rng: &mut ChaCha8Rng) -> u64 {
        if self.index == self.slots {
            self.keys = rng.random();
            self.index = 0;
        }
        let mut x = self.permute(self.index);
        while x >= self.slots {
            x = self.permute(x);
        }
        self.index += 1;
        x
    }

    /// The Feistel permutation of `0..2^(2 x half)`.
    fn permute(&self, x: u64) -> u64 {
        let mask = (1u64 << self.half) - 1;
        let (mut left, mut right) = (x >> self.half, x & mask);
        for key in self.keys {
            (left, right) = (right, left ^ (mix(right ^ key) & mask));
        }
        (left << self.half) | right
    }
}

/// SplitMix64's finaliser: every input bit moves every output bit.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl SlotStream {
    /// A stream over `slots` slots (at least one).
    pub fn new(access: Access, slots: u64, seed: u64) -> Result<Self, WorkloadError> {
        let bad = |reason: String| WorkloadError::BadSpec(reason);
        access.check_slots(slots).map_err(bad)?;
        let kind = match access {
            Access::Uniform => Kind::Uniform,
            Access::Shuffled => Kind::Shuffled(Shuffle::new(slots)),
            Access::Sequential => Kind::Sequential(0),
            Access::Zipf(theta) => Kind::Zipf(Zipf::new(slots as f64, theta).map_err(|e| bad(format!("zipf: {e}")))?),
            Access::Pareto(h) => {
                if !(h > 0.0 && h < 1.0) {
                    return Err(bad(format!("pareto h {h} must be in (0, 1)")));
                }
                Kind::Pareto(h.ln() / (1.0 - h).ln())
            }
            Access::HotCold { hot, writes } => {
                Access::hot_cold(hot, writes).map_err(bad)?;
                let hot = ((slots as f64 * hot).round() as u64).clamp(1, slots - 1);
                Kind::HotCold { hot, threshold: (writes * u64::MAX as f64) as u64 }
            }
            Access::Zoned(zones) => {
                let ends = zones.bounds(slots).map_err(|_| bad("a zone gets no slot".into()))?;
                let mut taken = 0.0;
                let mut below: Vec<u64> = zones
                    .iter()
                    .map(|(a, _)| {
                        taken += a;
                        (taken * u64::MAX as f64) as u64
                    })
                    .collect();
                // The last zone that takes accesses takes what rounding left.
                if let Some(last) = zones.iter().rposition(|(a, _)| a > 0.0) {
                    below[last..].fill(u64::MAX);
                }
                Kind::Zoned { ends, below }
            }
        };
        Ok(SlotStream { slots, rng: ChaCha8Rng::seed_from_u64(seed), kind })
    }

    /// The next slot.
    pub fn next_slot(&mut self) -> u64 {
        match &mut self.kind {
            Kind::Uniform => self.rng.random_range(0..self.slots),
            Kind::Shuffled(shuffle) => shuffle.next(&mut self.rng),
            Kind::Sequential(next) => {
                let s = *next;
                *next = (s + 1) % self.slots;
                s
            }
            Kind::Zipf(z) => {
                let rank = (z.sample(&mut self.rng) as u64).clamp(1, self.slots) - 1;
                scatter(rank, self.slots)
            }
            Kind::Pareto(pow) => {
                let u: f64 = self.rng.random();
                let rank = ((self.slots - 1) as f64 * u.powf(*pow)) as u64;
                scatter(rank.min(self.slots - 1), self.slots)
            }
            Kind::HotCold { hot, threshold } => {
                if self.rng.random::<u64>() < *threshold {
                    self.rng.random_range(0..*hot)
                } else {
                    self.rng.random_range(*hot..self.slots)
                }
            }
            Kind::Zoned { ends, below } => {
                let r = self.rng.random::<u64>();
                // The last zone that takes accesses ends at u64::MAX, and takes it too.
                let zone = below.iter().position(|&b| r < b || b == u64::MAX).unwrap_or(below.len() - 1);
                let start = if zone == 0 { 0 } else { ends[zone - 1] };
                self.rng.random_range(start..ends[zone])
            }
        }
    }

    /// The hot slots of a hot/cold stream (`0..n`), `None` for others.
    pub fn hot_slots(&self) -> Option<u64> {
        match self.kind {
            Kind::HotCold { hot, .. } => Some(hot),
            _ => None,
        }
    }

    /// A uniform draw from `0..n`, from the same seeded stream.
    pub fn uniform(&mut self, n: u64) -> u64 {
        self.rng.random_range(0..n)
    }

    /// True with probability `pct` / 100.
    pub fn chance(&mut self, pct: u8) -> bool {
        pct > 0 && self.rng.random_range(0..100u8) < pct
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        assert_eq!("uniform".parse::<Access>(), Ok(Access::Uniform));
        assert_eq!("zipf:0.9".parse::<Access>(), Ok(Access::Zipf(0.9)));
        assert!("zipf:-1".parse::<Access>().is_err());
        assert!("zipf:x".parse::<Access>().is_err());
        assert!("random".parse::<Access>().is_err());
        assert_eq!("hotcold:0.2:0.8".parse::<Access>(), Ok(Access::HotCold { hot: 0.2, writes: 0.8 }));
        for bad in
            ["hotcold:1.5:0.8", "hotcold:0.2:1", "hotcold:0:0.5", "hotcold:0.2", "hotcold:a:b", "hotcold:NaN:0.5"]
        {
            assert!(bad.parse::<Access>().is_err(), "{bad}");
        }
    }

    #[test]
    fn zones_send_their_shares_to_their_ranges() {
        // JESD219's client workload: 50 % of accesses to the first 5 %,
        // 30 % to the next 15 %, 20 % to the last 80 %.
        let zones = Zones::new(&[(0.5, 0.05), (0.3, 0.15), (0.2, 0.8)]).unwrap();
        assert_eq!(format!("{zones:?}"), "50/5:30/15:20/80");
        let mut s = SlotStream::new(Access::Zoned(zones), 1000, 3).unwrap();
        let mut counts = [0u32; 3];
        for _ in 0..100_000 {
            match s.next_slot() {
                0..50 => counts[0] += 1,
                50..200 => counts[1] += 1,
                200..1000 => counts[2] += 1,
                other => panic!("slot {other} outside the region"),
            }
        }
        for (c, want) in counts.iter().zip([50_000, 30_000, 20_000]) {
            assert!(c.abs_diff(want) < 1_000, "{counts:?}");
        }
        // A zone that takes no accesses gets none.
        let idle = Zones::new(&[(1.0, 0.2), (0.0, 0.8)]).unwrap();
        let mut s = SlotStream::new(Access::Zoned(idle), 1000, 3).unwrap();
        assert!((0..10_000).all(|_| s.next_slot() < 200));
        // Each zone that takes accesses needs a slot of the region.
        let err = Access::Zoned(zones).check_slots(8).unwrap_err();
        assert!(err.contains("zone 1 of 3"), "{err}");
        assert!(Access::Zoned(zones).check_slots(20).is_ok());
        assert!(Zones::new(&[(0.5, 0.5), (0.6, 0.5)]).is_err() && Zones::new(&[]).is_err());
        assert!(Zones::new(&[(0.5, 0.0), (0.5, 1.0)]).is_err(), "accesses to no range");
    }

    #[test]
    fn hot_cold_sends_its_share_of_writes_to_the_hot_slots() {
        let mut s = SlotStream::new(Access::HotCold { hot: 0.1, writes: 0.9 }, 1000, 3).unwrap();
        let (mut hot, mut seen) = (0u32, vec![false; 1000]);
        for _ in 0..100_000 {
            let slot = s.next_slot() as usize;
            seen[slot] = true;
            hot += u32::from(slot < 100);
        }
        assert!((89_000..91_000).contains(&hot), "90% of writes are hot: {hot}");
        assert!(seen.iter().all(|&x| x), "every slot is written, hot or cold");
    }

    #[test]
    fn shuffled_streams_touch_every_slot_once_a_pass_in_a_new_order() {
        for slots in [1u64, 2, 3, 4, 5, 7, 64, 1000, 1025, 4099] {
            let mut s = SlotStream::new(Access::Shuffled, slots, 11).unwrap();
            let mut passes = Vec::new();
            for _ in 0..3 {
                let pass: Vec<u64> = (0..slots).map(|_| s.next_slot()).collect();
                let mut sorted = pass.clone();
                sorted.sort_unstable();
                assert_eq!(sorted, (0..slots).collect::<Vec<_>>(), "{slots} slots: each once a pass");
                passes.push(pass);
            }
            if slots >= 64 {
                assert_ne!(passes[0], passes[1], "{slots} slots: a new order each pass");
                // Not the identity, nor a stride: few slots keep their place
                // and neighbours are scattered.
                let fixed = passes[0].iter().enumerate().filter(|&(i, &x)| i as u64 == x).count();
                assert!(fixed < 8, "{slots} slots: {fixed} fixed points");
                let near = passes[0].windows(2).filter(|w| w[0].abs_diff(w[1]) == 1).count();
                assert!(near < 8, "{slots} slots: {near} neighbours in a row");
            }
        }
        // Uniform draws, by contrast, repeat: about 1/e of the slots stay
        // untouched after one pass's worth.
        let mut u = SlotStream::new(Access::Uniform, 10_000, 11).unwrap();
        let mut seen = vec![false; 10_000];
        (0..10_000).for_each(|_| seen[u.next_slot() as usize] = true);
        let untouched = seen.iter().filter(|&&x| !x).count();
        assert!((3400..3950).contains(&untouched), "{untouched}");
    }

    #[test]
    fn streams_are_deterministic_and_in_range() {
        for access in [
            Access::Uniform,
            Access::Shuffled,
            Access::Zipf(1.1),
            Access::Sequential,
            Access::Pareto(0.2),
            Access::HotCold { hot: 0.2, writes: 0.8 },
        ] {
            let a: Vec<u64> = {
                let mut s = SlotStream::new(access, 1000, 7).unwrap();
                (0..500).map(|_| s.next_slot()).collect()
            };
            let mut s = SlotStream::new(access, 1000, 7).unwrap();
            let b: Vec<u64> = (0..500).map(|_| s.next_slot()).collect();
            assert_eq!(a, b);
            assert!(a.iter().all(|&x| x < 1000));
        }
        let mut z = SlotStream::new(Access::Zipf(1.2), 1000, 1).unwrap();
        let mut counts = vec![0u32; 1000];
        for _ in 0..20000 {
            counts[z.next_slot() as usize] += 1;
        }
        counts.sort_unstable();
        assert!(counts[999] > 20 * counts[500].max(1), "zipf is skewed");
        let mut p = SlotStream::new(Access::Pareto(0.2), 1000, 1).unwrap();
        let mut hot = 0;
        for _ in 0..10000 {
            if p.next_slot().is_multiple_of(1000) {
                hot += 1;
            }
        }
        assert!(hot > 1000, "pareto 80/20 concentrates on rank 0: {hot}");
        assert!(SlotStream::new(Access::Pareto(1.5), 10, 1).is_err());
    }
}
