//! The zones of fio's `zoned` random distribution ([`Zones`]).

use serde::Serialize;

/// Most zones of a `zoned` distribution (fio takes up to 256; JESD219's
/// client workload has three).
pub const MAX_ZONES: usize = 16;

/// The zones of fio's `zoned:A/R:B/S:...`: in order from the start of the
/// range, each a share of the accesses and a share of the range, in steps
/// of 0.01 % (fio's are whole percents); each kind sums to 100 %. Shown
/// as fio writes them.
#[derive(Clone, Copy, PartialEq)]
pub struct Zones {
    pub(super) len: usize,
    /// (accesses, range) per zone, in hundredths of a percent.
    zones: [(u16, u16); MAX_ZONES],
}

/// Hundredths of a percent in the whole.
const WHOLE: u16 = 10_000;

impl Zones {
    /// Zones of (access share, range share), as fractions, checked.
    pub fn new(zones: &[(f64, f64)]) -> Result<Self, String> {
        if zones.is_empty() || zones.len() > MAX_ZONES {
            return Err(format!("{} zones; zoned takes 1 to {MAX_ZONES}", zones.len()));
        }
        let step = |share: f64| {
            let bp = (share * f64::from(WHOLE)).round();
            ((0.0..=f64::from(WHOLE)).contains(&bp) && (bp - share * f64::from(WHOLE)).abs() < 1e-6)
                .then_some(bp as u16)
                .ok_or_else(|| format!("{} % is not a share from 0 to 100 % in steps of 0.01 %", share * 100.0))
        };
        let mut all = [(0, 0); MAX_ZONES];
        for (slot, &(a, r)) in all.iter_mut().zip(zones) {
            *slot = (step(a)?, step(r)?);
        }
        let sum = |f: fn(&(u16, u16)) -> u16| all.iter().map(|z| u32::from(f(z))).sum::<u32>();
        if sum(|z| z.0) != u32::from(WHOLE) || sum(|z| z.1) != u32::from(WHOLE) {
            return Err("the accesses and the ranges must each add up to 100 %".into());
        }
        if all.iter().any(|&(a, r)| a > 0 && r == 0) {
            return Err("a zone that takes accesses needs a range above 0 %".into());
        }
        Ok(Zones { len: zones.len(), zones: all })
    }

    /// The zones, (access share, range share) each, as fractions.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (f64, f64)> + ExactSizeIterator + '_ {
        let share = |bp: u16| f64::from(bp) / f64::from(WHOLE);
        self.zones[..self.len].iter().map(move |&(a, r)| (share(a), share(r)))
    }

    /// Where each zone ends among `slots` slots (the last at `slots`),
    /// or the first zone that takes accesses and gets no slot.
    pub(super) fn bounds(&self, slots: u64) -> Result<Vec<u64>, usize> {
        let mut at = 0.0;
        let mut ends: Vec<u64> = self
            .iter()
            .map(|(_, r)| {
                at += r;
                ((slots as f64 * at).round() as u64).min(slots)
            })
            .collect();
        if let Some(last) = ends.last_mut() {
            *last = slots;
        }
        let mut start = 0;
        for (i, (&end, (a, _))) in ends.iter().zip(self.iter()).enumerate() {
            if a > 0.0 && end <= start {
                return Err(i);
            }
            start = end;
        }
        Ok(ends)
    }
}

impl std::fmt::Debug for Zones {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let pct = |bp: u16| f64::from(bp) / 100.0;
        let zones: Vec<String> =
            self.zones[..self.len].iter().map(|&(a, r)| format!("{}/{}", pct(a), pct(r))).collect();
        f.write_str(&zones.join(":"))
    }
}

impl Serialize for Zones {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}
