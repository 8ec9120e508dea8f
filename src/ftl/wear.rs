//! Wear-levelling choices, pure functions of erase counts (the device
//! acts on them): which free block a die opens next (dynamic levelling)
//! and which sealed block's data moves so its block can take hot writes
//! (static levelling). Owns no state.

use crate::units::BlockId;

/// Position of the least-worn entry among `erase_counts` (a die's free
/// list, in free order): the fewest erases, the earliest freed among
/// equals. `None` when there is none.
pub fn least_worn(erase_counts: impl Iterator<Item = u32>) -> Option<usize> {
    erase_counts.enumerate().min_by_key(|&(i, pe)| (pe, i)).map(|(i, _)| i)
}

/// Static wear levelling's victim among `blocks`, given as `(block, erase
/// count, sealed)`: the least-worn sealed block (lowest id among equals)
/// when the most-worn block of all is more than `spread` erases ahead of
/// it, else `None`. Its data is cold (it has sat while others cycled);
/// moving it frees the block for hot writes.
pub fn static_victim(blocks: impl Iterator<Item = (BlockId, u32, bool)>, spread: u32) -> Option<BlockId> {
    let mut most = 0;
    let mut least: Option<(u32, BlockId)> = None;
    for (block, pe, sealed) in blocks {
        most = most.max(pe);
        if sealed && least.is_none_or(|(l, _)| pe < l) {
            least = Some((pe, block));
        }
    }
    least.filter(|&(pe, _)| most - pe > spread).map(|(_, b)| b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_worn_takes_the_fewest_erases_then_the_first_freed() {
        assert_eq!(least_worn([5, 3, 4, 3].into_iter()), Some(1));
        assert_eq!(least_worn([2].into_iter()), Some(0));
        assert_eq!(least_worn(std::iter::empty()), None);
    }

    #[test]
    fn static_victim_fires_only_past_the_spread_and_only_on_sealed_blocks() {
        let b = |i, pe, sealed| (BlockId(i), pe, sealed);
        // Spread 10 - 2 = 8: not past 8, past 7.
        let blocks = [b(0, 10, true), b(1, 2, true), b(2, 5, true)];
        assert_eq!(static_victim(blocks.into_iter(), 8), None);
        assert_eq!(static_victim(blocks.into_iter(), 7), Some(BlockId(1)));
        // A free block is never the victim, though it is the least worn.
        let blocks = [b(0, 10, true), b(1, 0, false), b(2, 3, true)];
        assert_eq!(static_victim(blocks.into_iter(), 5), Some(BlockId(2)));
        // The most-worn block counts whatever its state; ties go to the lowest id.
        let blocks = [b(0, 20, false), b(1, 3, true), b(2, 3, true)];
        assert_eq!(static_victim(blocks.into_iter(), 5), Some(BlockId(1)));
        assert_eq!(static_victim(std::iter::empty(), 0), None);
    }
}
