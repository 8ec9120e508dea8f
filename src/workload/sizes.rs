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
}

fn is_default_align(align: &[Option<u64>; 3]) -> bool {
    align.iter().all(Option::is_none)
}

impl BlockSizes {
    /// Reads, writes and TRIMs of these sizes (in [`CommandKind`] order).
    pub fn per_direction(sizes: [SizeChoice; 3]) -> Self {
        BlockSizes(Some(Box::new(Directions { sizes, align: [None; 3] })))
    }

    /// These sizes with random offsets aligned to `align` per direction
    /// (fio's `blockalign`; `None` keeps the direction's smallest size).
    pub fn aligned(self, align: [Option<u64>; 3]) -> Self {
        BlockSizes(self.0.map(|d| Box::new(Directions { align, ..*d })))
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

    /// The next command of `kind`: its offset in the region and its bytes.
    pub(super) fn next(&mut self, kind: CommandKind, random: bool) -> (u64, u64) {
        let Placer { unit, length, sizes, random: stream, rng, next_seq, covered } = self;
        let (unit, length) = (*unit, *length);
        let Some(choice) = sizes.of(kind) else {
            // One size, one slot a command.
            let slot = if random { stream.next_slot() } else { self.sequential_slot() };
            return (slot * unit, unit);
        };
        let least = choice.min();
        if !random {
            if *next_seq + least > length {
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
mod tests {
    use super::*;

    fn rng() -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(5)
    }

    /// Writes of `choice`, reads and TRIMs of 4 KiB.
    fn writes(choice: SizeChoice) -> BlockSizes {
        BlockSizes::per_direction([SizeChoice::Fixed(4096), choice, SizeChoice::Fixed(4096)])
    }

    #[test]
    fn a_range_gives_multiples_of_its_low_end_evenly_and_fits_the_room() {
        let range = SizeChoice::Range { lo: 4096, hi: 16384 };
        let mut counts = [0u32; 5];
        let mut r = rng();
        for _ in 0..40_000 {
            counts[(range.draw(1 << 20, &mut r) / 4096) as usize] += 1;
        }
        assert_eq!(counts[0], 0);
        for c in &counts[1..] {
            assert!((9_400..10_600).contains(c), "4, 8, 12 and 16 KiB a quarter each: {counts:?}");
        }
        // With 9 KiB of room: 4 and 8 KiB only, in their own proportions.
        let mut counts = [0u32; 5];
        for _ in 0..20_000 {
            counts[(range.draw(9216, &mut r) / 4096) as usize] += 1;
        }
        assert_eq!((counts[3], counts[4]), (0, 0), "{counts:?}");
        assert!((9_400..10_600).contains(&counts[1]), "{counts:?}");
        // fio caps a size past the top at the top: 4k-10k gives 4, 8 or 10 KiB.
        let odd = SizeChoice::Range { lo: 4096, hi: 10240 };
        let seen: std::collections::BTreeSet<u64> = (0..1000).map(|_| odd.draw(1 << 20, &mut r)).collect();
        assert_eq!(seen.into_iter().collect::<Vec<_>>(), [4096, 8192, 10240]);
        assert_eq!(odd.sizes(), [4096, 8192, 10240]);
    }

    #[test]
    fn a_split_gives_its_sizes_in_their_shares_of_those_that_fit() {
        let split = SizeChoice::Split(vec![(4096, 10), (32768, 40), (65536, 50)]);
        let mut r = rng();
        let mut n = [0u32; 3];
        for _ in 0..50_000 {
            match split.draw(1 << 20, &mut r) {
                4096 => n[0] += 1,
                32768 => n[1] += 1,
                _ => n[2] += 1,
            }
        }
        assert!((4_600..5_400).contains(&n[0]) && (19_300..20_700).contains(&n[1]), "{n:?}");
        // 40 KiB of room: 4 KiB a fifth and 32 KiB four fifths of the time.
        let small = (0..10_000).filter(|_| split.draw(40_960, &mut r) == 4096).count();
        assert!((1_800..2_200).contains(&small), "{small}");
        assert_eq!((split.min(), split.max()), (4096, 65536));
    }

    #[test]
    fn sizes_are_checked_against_the_slot_and_the_region() {
        let w = [CommandKind::Write];
        assert!(writes(SizeChoice::Split(vec![(4096, 50), (8192, 50)])).check(4096, 1 << 20, &w).is_ok());
        assert!(writes(SizeChoice::Split(vec![(4000, 50), (8192, 50)])).check(512, 1 << 20, &w).is_err());
        assert!(writes(SizeChoice::Fixed(2048)).check(4096, 1 << 20, &w).is_err(), "below the slot");
        assert!(writes(SizeChoice::Fixed(1 << 21)).check(4096, 1 << 20, &w).is_err(), "past the region");
        assert!(writes(SizeChoice::Fixed(1 << 21)).check(4096, 1 << 20, &[CommandKind::Read]).is_ok(), "unused");
        assert_eq!(BlockSizes::default().largest(4096, &w), 4096);
        assert_eq!(writes(SizeChoice::Range { lo: 4096, hi: 16384 }).largest(4096, &w), 16384);
    }

    #[test]
    fn sequential_commands_follow_each_other_and_end_at_the_region() {
        let split = writes(SizeChoice::Split(vec![(4096, 50), (12288, 50)]));
        let mut p = Placer::new(Access::Sequential, 4096, 1 << 20, &split, 1, 2).unwrap();
        let (mut end, mut total) = (0, 0);
        while total < 1 << 20 {
            let (at, bytes) = p.next(CommandKind::Write, false);
            assert_eq!(at, end, "each starts where the last ended");
            assert!(at + bytes <= 1 << 20);
            (end, total) = (at + bytes, total + bytes);
        }
        assert_eq!(total, 1 << 20, "one pass is the region exactly");
        assert_eq!(p.next(CommandKind::Write, false).0, 0, "and the next starts over");
    }

    #[test]
    fn the_random_map_covers_every_slot_once_a_pass_with_several_sizes() {
        let split = writes(SizeChoice::Split(vec![(4096, 40), (16384, 40), (65536, 20)]));
        let slots = 1000u64;
        let mut p = Placer::new(Access::Shuffled, 4096, slots * 4096, &split, 3, 4).unwrap();
        for pass in 0..3 {
            let mut covered = vec![0u8; slots as usize];
            let mut bytes = 0;
            while bytes < slots * 4096 {
                let (at, n) = p.next(CommandKind::Write, true);
                for s in at / 4096..(at + n).div_ceil(4096) {
                    covered[s as usize] += 1;
                }
                bytes += n;
            }
            assert!(covered.iter().all(|&c| c == 1), "pass {pass}: every slot once");
        }
        assert_eq!(Placer::map_bytes(Access::Shuffled, 4096, slots * 4096, &split), 128);
        assert_eq!(Placer::map_bytes(Access::Uniform, 4096, slots * 4096, &split), 0);
        assert_eq!(Placer::map_bytes(Access::Shuffled, 4096, slots * 4096, &BlockSizes::default()), 0);
    }

    #[test]
    fn each_direction_lands_on_its_own_boundary_under_the_map() {
        // fio's randrw bs=4k,64k: reads on 4 KiB, writes on 64 KiB.
        let sizes = writes(SizeChoice::Fixed(65536));
        let kinds = [CommandKind::Read, CommandKind::Write];
        assert_eq!(sizes.slot(4096, &kinds), 4096);
        let slots = 4096u64;
        let mut p = Placer::new(Access::Shuffled, 4096, slots * 4096, &sizes, 3, 4).unwrap();
        let mut covered = vec![0u8; slots as usize];
        let mut first_pass = 0;
        for i in 0.. {
            let kind = kinds[i % 2];
            let (at, n) = p.next(kind, true);
            assert_eq!(at % if kind == CommandKind::Write { 65536 } else { 4096 }, 0, "{kind:?} at {at}");
            let range = (at / 4096) as usize..((at + n) / 4096) as usize;
            if covered[range.clone()].iter().any(|&c| c > 0) {
                break;
            }
            covered[range].fill(1);
            first_pass += n;
        }
        // A pass ends when no 64 KiB block is wholly free for a write.
        let free_blocks = covered.chunks(16).filter(|b| b.iter().all(|&c| c == 0)).count();
        assert_eq!(free_blocks, 0);
        assert!(first_pass > slots * 4096 / 2, "most of the region once before a slot comes twice: {first_pass}");
    }

    #[test]
    fn a_boundary_no_size_divides_cuts_smaller_slots() {
        // 4 KiB reads beside 6 KiB writes: slots of 2 KiB, writes on 6 KiB.
        let sizes = writes(SizeChoice::Fixed(6144));
        let kinds = [CommandKind::Read, CommandKind::Write];
        assert_eq!(sizes.slot(4096, &kinds), 2048);
        assert_eq!(sizes.slot(4096, &[CommandKind::Read]), 4096, "only the directions issued count");
        let length = 1 << 20;
        let mut p = Placer::new(Access::Shuffled, 2048, length, &sizes, 3, 4).unwrap();
        for _ in 0..2000 {
            let (at, n) = p.next(CommandKind::Write, true);
            assert!(at % 6144 == 0 && at + n <= length, "{at}+{n}");
            let (at, _) = p.next(CommandKind::Read, true);
            assert_eq!(at % 4096, 0);
        }
    }

    #[test]
    fn blockalign_moves_offsets_without_a_map() {
        let length = 1 << 20;
        let wide = writes(SizeChoice::Fixed(4096)).aligned([None, Some(65536), None]);
        assert_eq!(wide.slot(4096, &[CommandKind::Write]), 4096);
        let mut p = Placer::new(Access::Uniform, 4096, length, &wide, 3, 4).unwrap();
        let starts: std::collections::BTreeSet<u64> = (0..2000).map(|_| p.next(CommandKind::Write, true).0).collect();
        assert!(starts.iter().all(|at| at % 65536 == 0));
        assert_eq!(starts.len(), 16, "every 64 KiB boundary of 1 MiB is reached: {starts:?}");
        let narrow = writes(SizeChoice::Fixed(4096)).aligned([None, Some(512), None]);
        let slot = narrow.slot(4096, &[CommandKind::Write]);
        assert_eq!(slot, 512);
        let mut p = Placer::new(Access::Uniform, slot, length, &narrow, 3, 4).unwrap();
        let starts: Vec<u64> = (0..2000).map(|_| p.next(CommandKind::Write, true).0).collect();
        assert!(starts.iter().all(|&at| at % 512 == 0 && at + 4096 <= length));
        assert!(starts.iter().any(|at| at % 4096 != 0), "offsets between 4 KiB boundaries too");
        let w = [CommandKind::Write];
        assert!(writes(SizeChoice::Fixed(4096)).aligned([None, Some(1000), None]).check(4096, length, &w).is_err());
        assert!(writes(SizeChoice::Fixed(4096)).aligned([None, Some(2 << 20), None]).check(4096, length, &w).is_err());
    }

    #[test]
    fn the_next_free_slot_is_found_word_by_word() {
        let mut map = vec![0u64; 3];
        assert_eq!(next_free(&map, 5, 150), Some(5));
        map[0] = u64::MAX;
        map[1] = 0b1011;
        assert_eq!(next_free(&map, 3, 150), Some(66));
        assert_eq!(next_free(&map, 67, 150), Some(68));
        assert_eq!(next_free(&map, 3, 65), None, "past the last slot");
        map[1] = u64::MAX;
        map[2] = u64::MAX;
        assert_eq!(next_free(&map, 0, 191), None);
        assert_eq!(next_free(&map, 500, 600), None, "beyond the map");
    }

    #[test]
    fn a_command_may_end_in_a_part_slot_at_the_regions_end() {
        // 64 whole slots and half of one: 6 KiB from the last whole slot
        // reaches into the half.
        let split = writes(SizeChoice::Split(vec![(4096, 50), (6144, 50)]));
        let length = 64 * 4096 + 2048;
        let mut p = Placer::new(Access::Shuffled, 4096, length, &split, 3, 4).unwrap();
        for _ in 0..10_000 {
            let (at, n) = p.next(CommandKind::Write, true);
            assert!(at + n <= length);
        }
        assert_eq!(Placer::map_bytes(Access::Shuffled, 4096, length, &split), 16);
    }

    #[test]
    fn without_a_map_random_commands_start_where_the_least_size_fits() {
        let sizes = writes(SizeChoice::Fixed(65536));
        let mut p = Placer::new(Access::Uniform, 4096, 1 << 20, &sizes, 3, 4).unwrap();
        for _ in 0..10_000 {
            let (at, n) = p.next(CommandKind::Write, true);
            assert!(at % 4096 == 0 && at + n <= 1 << 20 && n == 65536);
            let (at, n) = p.next(CommandKind::Read, true);
            assert!(at % 4096 == 0 && at + n <= 1 << 20 && n == 4096);
        }
    }
}
