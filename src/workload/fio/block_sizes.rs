//! fio's block sizes: `bs` per direction, `bsrange`, `bssplit` and
//! `blockalign`, each given as `reads[,writes[,trims]]` (HOWTO "Block size": a value not
//! ended by a comma applies to the directions after it, an empty one is
//! the default), and how they combine: `bssplit` over `bsrange` over
//! `bs`, whatever their order, as fio's options do.

use super::values::parse_int;
use crate::input::Shown;
use crate::workload::sizes::SizeChoice;

/// fio's default block size.
pub(super) const DEFAULT_BS: u64 = 4096;

/// A `bssplit` direction: sizes and their percents.
type Split = Vec<(u64, u8)>;

/// fio's most `bssplit` entries a direction.
const MAX_SPLIT: usize = 64;

/// The block-size options of a job, per direction (reads, writes, TRIMs):
/// `None` where an option leaves a direction to the next one down.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct BlockSizeOptions {
    pub(super) bs: [u64; 3],
    pub(super) range: [Option<(u64, u64)>; 3],
    pub(super) split: [Option<Split>; 3],
    /// `blockalign`: `None` for the direction's smallest size.
    pub(super) align: [Option<u64>; 3],
}

impl Default for BlockSizeOptions {
    fn default() -> Self {
        BlockSizeOptions { bs: [DEFAULT_BS; 3], range: [None, None, None], split: [None, None, None], align: [None; 3] }
    }
}

impl BlockSizeOptions {
    /// Each direction's sizes: its `bssplit`, else its `bsrange`, else its `bs`.
    pub(super) fn choices(&self) -> [SizeChoice; 3] {
        std::array::from_fn(|d| match (&self.split[d], self.range[d]) {
            (Some(split), _) => SizeChoice::Split(split.clone()),
            (None, Some((lo, hi))) if lo < hi => SizeChoice::Range { lo, hi },
            (None, Some((lo, _))) => SizeChoice::Fixed(lo),
            (None, None) => SizeChoice::Fixed(self.bs[d]),
        })
    }
}

/// The parts of a per-direction value for reads, writes and TRIMs.
fn directions(s: &str) -> Result<[Option<&str>; 3], String> {
    if s.trim().trim_matches(',').trim().is_empty() {
        return Err("expected a size for reads, writes or TRIMs".to_string());
    }
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err("at most three comma-separated values: reads, writes, TRIMs".to_string());
    }
    let last = parts.last().copied().filter(|p| !p.is_empty());
    Ok(std::array::from_fn(|d| match parts.get(d) {
        Some(p) => Some(*p).filter(|p| !p.is_empty()),
        None => last,
    }))
}

/// One block size: at least 1 byte, no sign.
fn one_size(s: &str) -> Result<u64, String> {
    if s.starts_with('-') {
        return Err("a block size cannot be negative".to_string());
    }
    match parse_int(s)? {
        0 => Err("block size must be at least 1 byte".to_string()),
        n => Ok(n),
    }
}

/// `bs=r[,w[,t]]`; an empty direction is fio's default, 4096.
pub(super) fn parse_bs(s: &str) -> Result<[u64; 3], String> {
    if s.contains([':', '/']) || s.split(',').any(|p| p.trim().get(1..).is_some_and(|rest| rest.contains('-'))) {
        return Err("a range or split of sizes is bsrange= or bssplit=, not bs=".to_string());
    }
    let mut out = [DEFAULT_BS; 3];
    for (slot, part) in out.iter_mut().zip(directions(s)?) {
        if let Some(p) = part {
            *slot = one_size(p)?;
        }
    }
    Ok(out)
}

/// `blockalign=r[,w[,t]]` (`ba`): a positive multiple of 512 a direction;
/// an empty one keeps the direction's smallest size.
pub(super) fn parse_blockalign(s: &str) -> Result<[Option<u64>; 3], String> {
    let mut out = [None; 3];
    for (slot, part) in out.iter_mut().zip(directions(s)?) {
        if let Some(p) = part {
            let a = one_size(p)?;
            if !a.is_multiple_of(512) {
                return Err(format!("a boundary of {a} bytes is not a multiple of 512 (a sector)"));
            }
            *slot = Some(a);
        }
    }
    Ok(out)
}

/// `bsrange=lo-hi[,lo-hi[,lo-hi]]` (or `lo:hi`); an empty direction keeps its `bs`.
pub(super) fn parse_bsrange(s: &str) -> Result<[Option<(u64, u64)>; 3], String> {
    let mut out = [None; 3];
    for (slot, part) in out.iter_mut().zip(directions(s)?) {
        let Some(p) = part else { continue };
        let (lo, hi) =
            p.split_once(['-', ':']).ok_or_else(|| format!("'{}' is not a range such as 4k-64k", Shown::new(p)))?;
        let (lo, hi) = (one_size(lo.trim())?, one_size(hi.trim())?);
        // fio swaps a range given high to low.
        *slot = Some((lo.min(hi), lo.max(hi)));
    }
    Ok(out)
}

/// `bssplit=bs/percent:bs/percent...[,...[,...]]`: entries without a
/// percent share what the others leave, and a sum short of 100 leaves
/// the rest to the last entry of more than 0 %, as fio's draw does; more
/// than 100 is refused. An empty direction keeps its `bsrange` or `bs`.
pub(super) fn parse_bssplit(s: &str) -> Result<[Option<Split>; 3], String> {
    let mut out = [None, None, None];
    for (slot, part) in out.iter_mut().zip(directions(s)?) {
        let Some(p) = part else { continue };
        let mut entries: Vec<(u64, Option<u32>)> = Vec::new();
        for entry in p.split(':') {
            let (size, percent) = match entry.split_once('/') {
                Some((b, pct)) => (b.trim(), Some(pct.trim())),
                None => (entry.trim(), None),
            };
            let percent = match percent.filter(|p| !p.is_empty()) {
                Some(pct) => Some(pct.parse::<u32>().map_err(|_| {
                    let (pct, entry) = (Shown::new(pct), Shown::new(entry));
                    format!("'{pct}' in '{entry}' is not a whole percent (fractional percents are not supported)")
                })?),
                None => None,
            };
            entries.push((one_size(size)?, percent));
        }
        if entries.len() > MAX_SPLIT {
            return Err(format!("{} sizes in one direction; fio takes at most {MAX_SPLIT}", entries.len()));
        }
        let given: u32 = entries.iter().filter_map(|e| e.1).fold(0, u32::saturating_add);
        if given > 100 {
            return Err(format!("the percentages add to {given}, more than 100"));
        }
        let blank = entries.iter().filter(|e| e.1.is_none()).count() as u32;
        let share = (100 - given).checked_div(blank).unwrap_or(0);
        let mut split: Split = entries.iter().map(|&(b, p)| (b, p.unwrap_or(share) as u8)).collect();
        // fio's draw skips sizes of 0 % and falls through to the last other.
        split.retain(|&(_, p)| p > 0);
        let sum: u32 = split.iter().map(|&(_, p)| u32::from(p)).sum();
        let Some(last) = split.last_mut() else {
            return Err(format!("no size in '{}' has a percent above 0", Shown::new(p)));
        };
        last.1 += (100 - sum) as u8;
        split.sort_by_key(|&(b, _)| b);
        *slot = Some(split);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_direction_values_follow_fios_comma_rule() {
        assert_eq!(parse_bs("256k").unwrap(), [262_144; 3]);
        assert_eq!(parse_bs("8k,32k").unwrap(), [8192, 32768, 32768]);
        assert_eq!(parse_bs("8k,32k,").unwrap(), [8192, 32768, 4096], "a trailing comma: TRIMs default");
        assert_eq!(parse_bs(",8k").unwrap(), [4096, 8192, 8192]);
        assert_eq!(parse_bs(",8k,").unwrap(), [4096, 8192, 4096]);
        for bad in ["4k,8k,16k,32k", "4k-16k", "4k:8k", "4k/50", "-4k", "0"] {
            assert!(parse_bs(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn ranges_and_splits_parse_as_fio_reads_them() {
        assert_eq!(parse_bsrange("1k-4k,2k-8k").unwrap(), [Some((1024, 4096)), Some((2048, 8192)), Some((2048, 8192))]);
        assert_eq!(parse_bsrange("16k-4k").unwrap()[0], Some((4096, 16384)), "high to low is swapped");
        assert_eq!(parse_bsrange(",4k:8k").unwrap(), [None, Some((4096, 8192)), Some((4096, 8192))]);
        assert!(parse_bsrange("4k").is_err());
        // HOWTO's examples.
        let split = parse_bssplit("4k/10:64k/50:32k/40").unwrap();
        assert_eq!(split[0], Some(vec![(4096, 10), (32768, 40), (65536, 50)]));
        let blanks = parse_bssplit("4k/50:1k/:32k/").unwrap();
        assert_eq!(blanks[0], Some(vec![(1024, 25), (4096, 50), (32768, 25)]));
        let both = parse_bssplit("2k/50:4k/50,4k/90:8k/10").unwrap();
        assert_eq!(
            (both[0].clone(), both[1].clone()),
            (Some(vec![(2048, 50), (4096, 50)]), Some(vec![(4096, 90), (8192, 10)]))
        );
        assert_eq!(both[2], both[1], "TRIMs as writes");
        // 99 in all: the last entry takes the rest, as fio's draw gives it.
        assert_eq!(parse_bssplit("4k/33:8k/33:16k/33").unwrap()[0], Some(vec![(4096, 33), (8192, 33), (16384, 34)]));
        assert_eq!(parse_bssplit("4k").unwrap()[0], Some(vec![(4096, 100)]));
        assert!(parse_bssplit("4k/60:8k/50").unwrap_err().contains("more than 100"));
        assert!(parse_bssplit("4k/12.5:8k/").unwrap_err().contains("whole percent"));
        assert!(parse_bssplit("4x/50").is_err());
        assert!(parse_bssplit("4k/0").unwrap_err().contains("above 0"));
        assert_eq!(parse_bssplit("4k/50:8k/40:16k/0").unwrap()[0], Some(vec![(4096, 50), (8192, 50)]));
        for empty in ["", ",", " , ,"] {
            assert!(parse_bs(empty).is_err() && parse_bsrange(empty).is_err() && parse_bssplit(empty).is_err());
        }
    }

    #[test]
    fn blockalign_follows_the_comma_rule_in_sectors() {
        assert_eq!(parse_blockalign("64k").unwrap(), [Some(65536); 3]);
        assert_eq!(parse_blockalign("8k,").unwrap(), [Some(8192), None, None]);
        assert_eq!(parse_blockalign(",16k").unwrap(), [None, Some(16384), Some(16384)]);
        assert!(parse_blockalign("1000").unwrap_err().contains("multiple of 512"));
        assert!(parse_blockalign("0").is_err() && parse_blockalign("-4k").is_err() && parse_blockalign(",").is_err());
    }

    #[test]
    fn a_split_beats_a_range_beats_bs_per_direction() {
        let o = BlockSizeOptions {
            bs: [8192, 16384, 16384],
            range: [Some((4096, 4096)), None, Some((4096, 65536))],
            split: [None, Some(vec![(4096, 100)]), None],
            align: [None; 3],
        };
        assert_eq!(
            o.choices(),
            [SizeChoice::Fixed(4096), SizeChoice::Split(vec![(4096, 100)]), SizeChoice::Range { lo: 4096, hi: 65536 }]
        );
        assert_eq!(
            BlockSizeOptions::default().choices(),
            [SizeChoice::Fixed(4096), SizeChoice::Fixed(4096), SizeChoice::Fixed(4096)]
        );
    }
}
