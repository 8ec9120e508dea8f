//! Command sizes and where commands land: fio's `bs` per direction,
//! `bsrange`, `bssplit` and `blockalign` ([`SizeChoice`], [`BlockSizes`]),
//! and a job's placement of its commands in its region (`Placer`).
//!
//! A job's region is cut into slots: its smallest block size, or less
//! where a direction's boundary is not a multiple of it. A sequential
//! job's next command starts where the last one ended; a random one
//! starts on its direction's boundary (fio's `blockalign`, by default the
//! direction's smallest size: with `bs=4k,64k` writes fall on 64 KiB
//! boundaries) and covers its bytes rounded up to whole slots. fio's
//! random map keeps each slot to one command a pass: with one size the
//! shuffled slot stream does that alone; with several, as fio does, a
//! uniform draw that lands on a covered slot moves to the next free one on
//! its boundary (lib/axmap.c `axmap_next_free`), and a command ends at the
//! first covered slot (io_u.c `mark_random_map`).

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::host::CommandKind;
use crate::workload::access::{Access, SlotStream};
use crate::workload::sequence::Sequence;
use crate::workload::WorkloadError;

/// The sizes one direction's commands take, in bytes.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SizeChoice {
    /// Every command this size.
    Fixed(u64),
    /// fio's `bsrange=lo-hi`: `lo + u x hi` for a uniform `u` in [0, 1),
    /// rounded down to a multiple of `lo`, at most `hi` (io_u.c
    /// `get_next_buflen`).
    Range {
        /// The smallest size.
        lo: u64,
        /// The largest size.
        hi: u64,
    },
    /// fio's `bssplit`: sizes with the percent of commands each takes, by
    /// size; the percents sum to 100.
    Split(Vec<(u64, u8)>),
}

impl SizeChoice {
    /// The smallest size it gives.
    pub fn min(&self) -> u64 {
        match self {
            SizeChoice::Fixed(b) => *b,
            SizeChoice::Range { lo, .. } => *lo,
            SizeChoice::Split(split) => split.iter().map(|&(b, _)| b).min().unwrap_or(0),
        }
    }

    /// The largest size it gives.
    pub fn max(&self) -> u64 {
        match self {
            SizeChoice::Fixed(b) => *b,
            SizeChoice::Range { hi, .. } => *hi,
            SizeChoice::Split(split) => split.iter().map(|&(b, _)| b).max().unwrap_or(0),
        }
    }

    /// Every size it can give, in bytes.
    fn sizes(&self) -> Vec<u64> {
        match self {
            SizeChoice::Fixed(b) => vec![*b],
            SizeChoice::Range { lo, hi } => {
                let mut v: Vec<u64> = (1..=hi / lo).map(|k| k * lo).collect();
                v.push(*hi);
                v.dedup();
                v
            }
            SizeChoice::Split(split) => split.iter().map(|&(b, _)| b).collect(),
        }
    }

    /// A size of at most `room` bytes (`room` at least [`SizeChoice::min`]),
    /// drawn as fio draws one: again until it fits, so from the sizes that
    /// fit in their own proportions.
    fn draw(&self, room: u64, rng: &mut ChaCha8Rng) -> u64 {
        match self {
            SizeChoice::Fixed(b) => *b,
            SizeChoice::Range { lo, hi } => {
                // `lo + u x hi` maps onto sizes in order, so the draws that
                // fit are those below the first that maps past `room`.
                let width = if room >= *hi { *hi } else { (room / lo + 1) * lo - lo };
                let raw = lo + (rng.random::<f64>() * width as f64) as u64;
                (raw - raw % lo).min(*hi)
            }
            SizeChoice::Split(split) => {
                let fits = |&&(b, _): &&(u64, u8)| b <= room;
                let total: u32 = split.iter().filter(fits).map(|&(_, p)| u32::from(p)).sum();
                let mut r = rng.random_range(0..total.max(1));
                for &(b, p) in split.iter().filter(fits) {
                    if r < u32::from(p) {
                        return b;
                    }
                    r -= u32::from(p);
                }
                self.min()
            }
        }
    }

    /// Checks that every size is a positive multiple of 512 and of at
    /// least `unit` bytes.
    fn check(&self, unit: u64) -> Result<(), String> {
        match self.sizes().into_iter().find(|&b| b == 0 || !b.is_multiple_of(512) || b < unit) {
            Some(b) => Err(format!("block size {b} is not a positive multiple of 512 of at least bs={unit}")),
            None => Ok(()),
        }
    }
}

/// The sizes of a job's reads, writes and TRIMs, and where their random
/// offsets align; by default every command is the job's `bs`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BlockSizes(Option<Box<Directions>>);

/// The sizes and alignments of [`BlockSizes`], in [`CommandKind`] order.
#[derive(Clone, Debug, PartialEq, Serialize)]
struct Directions {
    sizes: [SizeChoice; 3],
    /// fio's `blockalign`: the boundary each direction's random offsets
    /// fall on; `None` for the direction's smallest size (fio's default).
    #[serde(skip_serializing_if = "is_default_align")]
    align: [Option<u64>; 3],
    /// fio's offset modifier of `rw` and `rw_sequencer`.
    #[serde(skip_serializing_if = "Sequence::is_plain")]
    seq: Sequence,
}

fn is_default_align(align: &[Option<u64>; 3]) -> bool {
    align.iter().all(Option::is_none)
}

impl BlockSizes {
    /// Reads, writes and TRIMs of these sizes (in [`CommandKind`] order).
    pub fn per_direction(sizes: [SizeChoice; 3]) -> Self {
        BlockSizes(Some(Box::new(Directions { sizes, align: [None; 3], seq: Sequence::default() })))
    }

    /// These sizes with random offsets aligned to `align` per direction
    /// (fio's `blockalign`; `None` keeps the direction's smallest size).
    pub fn aligned(self, align: [Option<u64>; 3]) -> Self {
        BlockSizes(self.0.map(|d| Box::new(Directions { align, ..*d })))
    }

    /// These sizes with fio's offset modifier `seq`, for a job of least
    /// size `bs` (the default sizes become `bs` in every direction).
    pub fn sequenced(self, seq: Sequence, bs: u64) -> Self {
        if seq.is_plain() {
            return self;
        }
        let d = self.0.unwrap_or_else(|| {
            Box::new(Directions { sizes: std::array::from_fn(|_| SizeChoice::Fixed(bs)), align: [None; 3], seq })
        });
        BlockSizes(Some(Box::new(Directions { seq, ..*d })))
    }

    /// The offset modifier, plain by default.
    fn sequence(&self) -> Sequence {
        self.0.as_ref().map(|d| d.seq).unwrap_or_default()
    }

    /// Whether every command is the job's `bs` (the default).
    pub fn is_one_size(&self) -> bool {
        self.0.is_none()
    }

    /// The choice of `kind`'s sizes, `None` for the job's `bs`.
    pub fn of(&self, kind: CommandKind) -> Option<&SizeChoice> {
        self.0.as_ref().map(|d| &d.sizes[kind as usize])
    }

    /// The boundary `kind`'s random offsets fall on, `bs` without a choice.
    fn align(&self, kind: CommandKind, bs: u64) -> u64 {
        self.0.as_ref().map_or(bs, |d| d.align[kind as usize].unwrap_or_else(|| d.sizes[kind as usize].min()))
    }

    /// The largest command of the directions in `kinds`, `bs` for those
    /// without a choice.
    pub fn largest(&self, bs: u64, kinds: &[CommandKind]) -> u64 {
        kinds.iter().map(|&k| self.of(k).map_or(bs, SizeChoice::max)).max().unwrap_or(bs)
    }

    /// The slot a job of least size `bs` issuing `kinds` is cut into: the
    /// largest that every one of their alignments is a whole number of
    /// (`bs` itself unless a direction aligns to a size `bs` does not
    /// divide, such as 6 KiB writes beside 4 KiB reads).
    pub fn slot(&self, bs: u64, kinds: &[CommandKind]) -> u64 {
        kinds.iter().fold(bs, |g, &k| gcd(g, self.align(k, bs)))
    }

    /// Checks the directions in `kinds` against slots of `unit` bytes in a
    /// region of `length` bytes: every size a positive multiple of 512 of
    /// at least a slot, the smallest within the region, and every
    /// alignment a positive multiple of 512 within the region.
    pub fn check(&self, unit: u64, length: u64, kinds: &[CommandKind]) -> Result<(), String> {
        let Some(d) = &self.0 else { return Ok(()) };
        for &k in kinds {
            let choice = &d.sizes[k as usize];
            choice.check(unit)?;
            if choice.min() > length {
                return Err(format!("no {}-byte command fits in the region of {length} bytes", choice.min()));
            }
            if let Some(a) = d.align[k as usize] {
                if a == 0 || !a.is_multiple_of(512) || a > length {
                    return Err(format!(
                        "blockalign {a} is not a positive multiple of 512 within the region of {length} bytes"
                    ));
                }
            }
        }
        Ok(())
    }

    /// Whether a command may cover more than one slot of `unit` bytes.
    fn varies(&self, unit: u64) -> bool {
        self.0.as_ref().is_some_and(|d| d.sizes.iter().any(|c| c.max() > unit))
    }
}

/// The greatest common divisor of `a` and `b`.
pub(crate) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Where a job's commands land in its region of `slots` slots of `unit`
/// bytes, and how big each is (see the module docs).
#[derive(Clone, Debug)]
pub(super) struct Placer {
    unit: u64,
    length: u64,
    sizes: BlockSizes,
    random: SlotStream,
    /// Draws the sizes.
    rng: ChaCha8Rng,
    /// The next sequential command's offset in the region.
    next_seq: u64,
    /// The random map of several sizes: the slots covered this pass.
    covered: Option<Vec<u64>>,
    /// fio's offset modifier, and the last command's start and end.
    seq: Sequence,
    last: Option<(u64, u64)>,
    /// Commands placed: a random job with a modifier draws every `every`th.
    count: u64,
}

impl Placer {
    /// Commands over `length` bytes in slots of `unit`, random ones drawn
    /// by `access` from `seed`, sizes by `sizes` from `size_seed`.
    pub(super) fn new(
        access: Access,
        unit: u64,
        length: u64,
        sizes: &BlockSizes,
        seed: u64,
        size_seed: u64,
    ) -> Result<Self, WorkloadError> {
        let slots = length / unit;
        let mapped = access == Access::Shuffled && sizes.varies(unit);
        Ok(Placer {
            unit,
            length,
            sizes: sizes.clone(),
            random: SlotStream::new(access, slots, seed)?,
            rng: ChaCha8Rng::seed_from_u64(size_seed),
            next_seq: 0,
            // A bit for a part slot at the end too, which a command
            // not a multiple of the slot can reach.
            covered: mapped.then(|| vec![0; length.div_ceil(unit).div_ceil(64) as usize]),
            seq: sizes.sequence(),
            last: None,
            count: 0,
        })
    }

    /// The bytes the random map of a job holds: a bit a slot when its
    /// sizes vary and its random commands keep fio's map.
    pub(super) fn map_bytes(access: Access, unit: u64, length: u64, sizes: &BlockSizes) -> u64 {
        if access == Access::Shuffled && sizes.varies(unit) {
            length.div_ceil(unit).div_ceil(64) * 8
        } else {
            0
        }
    }

    /// The next command of `kind`: its offset in the region and its bytes;
    /// `None` once a random job's run from its last random offset would
    /// pass the region's end, which ends the job as in fio.
    pub(super) fn next(&mut self, kind: CommandKind, random: bool) -> Option<(u64, u64)> {
        let placed = match self.follows(random) {
            Some((start, end)) => {
                let at = if self.seq.identical { start } else { end };
                let choice = self.sizes.of(kind)?;
                if at + choice.min() > self.length {
                    return None;
                }
                (at, choice.draw(self.length - at, &mut self.rng))
            }
            None => self.place(kind, random),
        };
        self.last = Some((placed.0, placed.0 + placed.1));
        Some(placed)
    }

    /// The last command, when a random job with `rw=randread:N` goes on
    /// from it rather than drawing.
    fn follows(&mut self, random: bool) -> Option<(u64, u64)> {
        if !random || self.seq.every <= 1 {
            return None;
        }
        let draws = self.count.is_multiple_of(u64::from(self.seq.every));
        self.count += 1;
        self.last.filter(|_| !draws)
    }

    /// A command placed by the job's pattern alone.
    fn place(&mut self, kind: CommandKind, random: bool) -> (u64, u64) {
        let last_end = self.last.map(|(_, end)| end);
        let Placer { unit, length, sizes, random: stream, rng, next_seq, covered, seq, .. } = self;
        let (unit, length) = (*unit, *length);
        let Some(choice) = sizes.of(kind) else {
            // One size, one slot a command.
            let slot = if random { stream.next_slot() } else { self.sequential_slot() };
            return (slot * unit, unit);
        };
        let least = choice.min();
        if !random {
            if seq.add != 0 {
                *next_seq = seq.next_start(last_end, length, least);
            } else if *next_seq + least > length {
                *next_seq = 0;
            }
            let at = *next_seq;
            let bytes = choice.draw(length - at, rng);
            *next_seq = at + bytes;
            return (at, bytes);
        }
        // Random commands start on the direction's boundary, `k` slots
        // apart, and the last where a command of the least size fits.
        let align = sizes.align(kind, unit);
        let k = align / unit;
        let last = (length - least) / align;
        let Some(map) = covered.as_mut() else {
            let at = (stream.next_slot() / k).min(last) * align;
            return (at, choice.draw(length - at, rng));
        };
        let is_covered = |map: &[u64], s: u64| map[(s / 64) as usize] >> (s % 64) & 1 == 1;
        // A uniform draw; a covered slot gives way to the next free one
        // on the boundary after it, wrapping (fio's axmap_next_free); none
        // free begins a new pass.
        let drawn = stream.uniform(last + 1) * k;
        let slot = match next_free_on(map, drawn, k, last * k).or_else(|| next_free_on(map, 0, k, last * k)) {
            Some(free) => free,
            None => {
                map.fill(0);
                drawn
            }
        };
        let at = slot * unit;
        let bytes = choice.draw(length - at, rng);
        // End at the first slot covered already.
        let mut n = 0;
        while n < bytes.div_ceil(unit) && !is_covered(map, slot + n) {
            map[((slot + n) / 64) as usize] |= 1 << ((slot + n) % 64);
            n += 1;
        }
        (at, bytes.min(n * unit))
    }

    fn sequential_slot(&mut self) -> u64 {
        let slot = self.next_seq / self.unit;
        self.next_seq = (slot + 1) % (self.length / self.unit) * self.unit;
        slot
    }
}

/// The first slot from `from` to `last` on a multiple of `k` not set in
/// `map`.
fn next_free_on(map: &[u64], from: u64, k: u64, last: u64) -> Option<u64> {
    let mut at = from;
    loop {
        let free = next_free(map, at, last)?;
        let on = free.div_ceil(k) * k;
        if on == free {
            return Some(free);
        }
        at = on;
        if at > last {
            return None;
        }
    }
}

/// The first slot from `from` to `last` not set in `map`.
fn next_free(map: &[u64], from: u64, last: u64) -> Option<u64> {
    let mut word = from / 64;
    // Bits below `from` in its word count as set.
    let mut bits = map.get(word as usize)? | ((1u64 << (from % 64)) - 1);
    loop {
        if bits != u64::MAX {
            let slot = word * 64 + u64::from(bits.trailing_ones());
            return (slot <= last).then_some(slot);
        }
        word += 1;
        if word * 64 > last {
            return None;
        }
        bits = *map.get(word as usize)?;
    }
}

#[cfg(test)]
mod tests;
