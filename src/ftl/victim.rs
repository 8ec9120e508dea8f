//! GC victim policies: pure functions from a view of the sealed blocks to
//! the block to clean. They decide; the controller's GC executor acts.

use crate::config::GcPolicy;
use crate::units::BlockId;

/// What a policy may know about a sealed block.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockView {
    /// The block.
    pub block: BlockId,
    /// Bytes of live chunks in it. Invariant: live_bytes <= data_bytes.
    pub live_bytes: u32,
    /// Bytes of chunks ever appended since its erase (live or dead; block
    /// tail padding excluded). Invariant: data_bytes <= capacity_bytes.
    pub data_bytes: u32,
    /// Bytes the block can hold.
    pub capacity_bytes: u32,
    /// Order in which blocks were sealed (smaller = older).
    pub sealed_seq: u64,
    /// Host unit writes since data was last written to the block.
    pub age: u64,
}

impl BlockView {
    /// Whether cleaning frees anything: dead chunks, not just the tail
    /// padding (relocation would leave as much padding elsewhere, so a
    /// block whose only waste is padding is never worth cleaning).
    fn reclaimable(&self) -> bool {
        self.live_bytes < self.data_bytes
    }

    /// Rosenblum & Ousterhout's benefit/cost: (1 - u) x age / (1 + u),
    /// where reading and rewriting the live share u costs 1 + u. A block
    /// with nothing live costs nothing to clean and always wins.
    fn cost_benefit(&self) -> f64 {
        if self.live_bytes == 0 {
            return f64::INFINITY;
        }
        let u = f64::from(self.live_bytes) / f64::from(self.capacity_bytes);
        (1.0 - u) * (self.age as f64 + 1.0) / (1.0 + u)
    }
}

/// Picks the block `policy` would clean, or `None` when no block holds
/// any reclaimable space. Ties go to the older block, so the choice is
/// deterministic whatever the view's order.
pub fn choose(policy: GcPolicy, views: impl IntoIterator<Item = BlockView>) -> Option<BlockId> {
    let candidates = views.into_iter().filter(BlockView::reclaimable);
    let best = match policy {
        GcPolicy::Greedy => candidates.min_by_key(|v| (v.live_bytes, v.sealed_seq)),
        GcPolicy::Fifo => candidates.min_by_key(|v| v.sealed_seq),
        GcPolicy::CostBenefit => candidates
            .max_by(|a, b| a.cost_benefit().total_cmp(&b.cost_benefit()).then(b.sealed_seq.cmp(&a.sealed_seq))),
    };
    best.map(|v| v.block)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(block: u32, live: u32, seq: u64, age: u64) -> BlockView {
        BlockView {
            block: BlockId(block),
            live_bytes: live,
            data_bytes: 100,
            capacity_bytes: 100,
            sealed_seq: seq,
            age,
        }
    }

    #[test]
    fn greedy_takes_fewest_live_bytes_then_oldest() {
        let v = [view(0, 50, 1, 0), view(1, 10, 5, 0), view(2, 10, 3, 0), view(3, 90, 0, 0)];
        assert_eq!(choose(GcPolicy::Greedy, v), Some(BlockId(2)));
    }

    #[test]
    fn fifo_takes_oldest_reclaimable() {
        let v = [view(0, 100, 0, 9), view(1, 99, 1, 0), view(2, 0, 2, 0)];
        assert_eq!(choose(GcPolicy::Fifo, v), Some(BlockId(1)), "a full block is skipped");
    }

    #[test]
    fn cost_benefit_prefers_old_cold_blocks_over_slightly_emptier_young_ones() {
        let v = [view(0, 30, 0, 1000), view(1, 20, 1, 10)];
        assert_eq!(choose(GcPolicy::CostBenefit, v), Some(BlockId(0)));
        assert_eq!(choose(GcPolicy::Greedy, v), Some(BlockId(1)));
        let empty = [view(0, 0, 0, 0), view(1, 50, 1, 1_000_000)];
        assert_eq!(choose(GcPolicy::CostBenefit, empty), Some(BlockId(0)), "an empty block is free to clean");
    }

    #[test]
    fn padding_alone_is_not_reclaimable() {
        let padded = BlockView { data_bytes: 90, ..view(0, 90, 0, 5) };
        for p in [GcPolicy::Greedy, GcPolicy::Fifo, GcPolicy::CostBenefit] {
            assert_eq!(choose(p, [padded]), None);
        }
    }

    #[test]
    fn nothing_reclaimable_means_no_victim() {
        for p in [GcPolicy::Greedy, GcPolicy::Fifo, GcPolicy::CostBenefit] {
            assert_eq!(choose(p, [view(0, 100, 0, 5)]), None);
            assert_eq!(choose(p, []), None);
        }
    }
}
