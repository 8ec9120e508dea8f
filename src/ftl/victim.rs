//! GC victim policies: pure functions from a view of the sealed blocks to
//! the block to clean. They decide; the controller's GC executor acts.
//! A randomised policy takes its randomness as an argument (`draw`), so the
//! same view and draw always give the same block.

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

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
    /// Free blocks on the block's die: the tie-break between equally cheap
    /// victims (see [`tie_key`]).
    pub die_free: u32,
}

/// The key that orders victims equally cheap to clean: among wholly dead
/// blocks (every block after a TRIM of the whole span), the die with the
/// fewest free blocks first, then the older seal; among blocks that still
/// hold live data, the older seal alone. Writes are striped page by page
/// over the dies and a die with no free block drops out of the stripe, so
/// a firmware that stripes refills the die that runs out first when
/// erasing costs nothing else; erasing the oldest dead block wherever it
/// sits starves some dies while others hoard erased blocks (issue 20, row
/// "write after TRIM"). Among blocks that still hold live data the die does
/// not decide: which data moves then changes the WAF of later collections
/// (with 4 KiB units equal live bytes are common), and the die order raised
/// the X25-M's WAF in the used state of the optimizer study.
pub fn tie_key(live_bytes: u32, die_free: u32, sealed_seq: u64) -> (u32, u64) {
    (if live_bytes == 0 { die_free } else { 0 }, sealed_seq)
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
/// any reclaimable space. Ties go by [`tie_key`] (the die with fewer free
/// blocks, then the older block), so the choice is deterministic whatever
/// the view's order. `draw` seeds the sampling of
/// `d-choices` (the caller derives it from the drive's seed); the other
/// policies ignore it.
pub fn choose(policy: GcPolicy, views: impl IntoIterator<Item = BlockView>, draw: u64) -> Option<BlockId> {
    let candidates = views.into_iter().filter(BlockView::reclaimable);
    let fewest_live = |v: &BlockView| (v.live_bytes, tie_key(v.live_bytes, v.die_free, v.sealed_seq));
    let best = match policy {
        GcPolicy::Greedy => candidates.min_by_key(fewest_live),
        GcPolicy::Fifo => candidates.min_by_key(|v| v.sealed_seq),
        GcPolicy::CostBenefit => candidates.max_by(|a, b| {
            a.cost_benefit().total_cmp(&b.cost_benefit()).then(
                tie_key(b.live_bytes, b.die_free, b.sealed_seq).cmp(&tie_key(a.live_bytes, a.die_free, a.sealed_seq)),
            )
        }),
        GcPolicy::DChoices(d) => {
            // Sample min(d, n) distinct blocks uniformly (a partial
            // Fisher-Yates shuffle) and keep the emptiest. The view's order
            // must not matter: sort by seal order first.
            let mut all: Vec<BlockView> = candidates.collect();
            all.sort_unstable_by_key(|v| v.sealed_seq);
            let mut rng = ChaCha8Rng::seed_from_u64(draw);
            let picks = (d as usize).min(all.len());
            for i in 0..picks {
                let j = rng.random_range(i..all.len());
                all.swap(i, j);
            }
            all[..picks].iter().copied().min_by_key(fewest_live)
        }
        GcPolicy::Windowed(w) => {
            let mut all: Vec<BlockView> = candidates.collect();
            let w = (w as usize).min(all.len());
            if w == 0 {
                return None;
            }
            all.select_nth_unstable_by_key(w - 1, |v| v.sealed_seq);
            all[..w].iter().copied().min_by_key(fewest_live)
        }
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
            die_free: 0,
        }
    }

    #[test]
    fn equally_cheap_victims_go_to_the_die_with_fewest_free_blocks() {
        // Every block dead, as after a TRIM of the whole span: the oldest
        // sits on a die with free blocks to spare, so a starved die wins.
        let dead = |block, seq, die_free| BlockView { die_free, ..view(block, 0, seq, 0) };
        let v = [dead(0, 0, 5), dead(1, 1, 0), dead(2, 2, 0), dead(3, 3, 2)];
        for p in [GcPolicy::Greedy, GcPolicy::CostBenefit, GcPolicy::DChoices(10), GcPolicy::Windowed(10)] {
            assert_eq!(choose(p, v, 0), Some(BlockId(1)), "{p}: starved die, then oldest");
        }
        assert_eq!(choose(GcPolicy::Fifo, v, 0), Some(BlockId(0)), "FIFO is blind to dies");
        // The tie-break never outranks live bytes.
        let cheaper = [BlockView { die_free: 9, ..view(0, 10, 0, 0) }, view(1, 20, 1, 0)];
        assert_eq!(choose(GcPolicy::Greedy, cheaper, 0), Some(BlockId(0)));
        // Among blocks still holding live data the die does not count.
        let live = [BlockView { die_free: 9, ..view(0, 10, 0, 0) }, view(1, 10, 1, 0)];
        assert_eq!(choose(GcPolicy::Greedy, live, 0), Some(BlockId(0)), "older seal, whatever the die");
    }

    #[test]
    fn greedy_takes_fewest_live_bytes_then_oldest() {
        let v = [view(0, 50, 1, 0), view(1, 10, 5, 0), view(2, 10, 3, 0), view(3, 90, 0, 0)];
        assert_eq!(choose(GcPolicy::Greedy, v, 0), Some(BlockId(2)));
    }

    #[test]
    fn fifo_takes_oldest_reclaimable() {
        let v = [view(0, 100, 0, 9), view(1, 99, 1, 0), view(2, 0, 2, 0)];
        assert_eq!(choose(GcPolicy::Fifo, v, 0), Some(BlockId(1)), "a full block is skipped");
    }

    #[test]
    fn cost_benefit_prefers_old_cold_blocks_over_slightly_emptier_young_ones() {
        let v = [view(0, 30, 0, 1000), view(1, 20, 1, 10)];
        assert_eq!(choose(GcPolicy::CostBenefit, v, 0), Some(BlockId(0)));
        assert_eq!(choose(GcPolicy::Greedy, v, 0), Some(BlockId(1)));
        let empty = [view(0, 0, 0, 0), view(1, 50, 1, 1_000_000)];
        assert_eq!(choose(GcPolicy::CostBenefit, empty, 0), Some(BlockId(0)), "an empty block is free to clean");
    }

    #[test]
    fn padding_alone_is_not_reclaimable() {
        let padded = BlockView { data_bytes: 90, ..view(0, 90, 0, 5) };
        for p in ALL {
            assert_eq!(choose(p, [padded], 0), None);
        }
    }

    #[test]
    fn nothing_reclaimable_means_no_victim() {
        for p in ALL {
            assert_eq!(choose(p, [view(0, 100, 0, 5)], 0), None);
            assert_eq!(choose(p, [], 0), None);
        }
    }

    const ALL: [GcPolicy; 7] = [
        GcPolicy::Greedy,
        GcPolicy::Fifo,
        GcPolicy::CostBenefit,
        GcPolicy::DChoices(1),
        GcPolicy::DChoices(3),
        GcPolicy::Windowed(1),
        GcPolicy::Windowed(4),
    ];

    /// Ten reclaimable blocks: block i has 9 x (10 - i) live bytes and was
    /// sealed i-th, so the emptiest is the youngest.
    fn ten() -> Vec<BlockView> {
        (0..10).map(|i| view(i, 9 * (10 - i), u64::from(i), 0)).collect()
    }

    #[test]
    fn policy_names_round_trip_and_zero_counts_are_refused() {
        for p in ALL {
            assert_eq!(p.to_string().parse::<GcPolicy>(), Ok(p));
            let json = serde_json::to_string(&p).unwrap();
            assert_eq!(serde_json::from_str::<GcPolicy>(&json).unwrap(), p, "{json}");
        }
        assert_eq!(serde_json::to_string(&GcPolicy::Greedy).unwrap(), "\"greedy\"", "old images still load");
        for bad in ["d-choices:0", "windowed:0", "d-choices:", "windowed:-1", "d-choices:x", "d-choices"] {
            assert!(bad.parse::<GcPolicy>().is_err(), "{bad}");
        }
    }

    #[test]
    fn windowed_is_greedy_among_the_oldest() {
        assert_eq!(choose(GcPolicy::Windowed(1), ten(), 0), Some(BlockId(0)), "a window of one is FIFO");
        assert_eq!(choose(GcPolicy::Windowed(4), ten(), 0), Some(BlockId(3)));
        assert_eq!(choose(GcPolicy::Windowed(100), ten(), 0), Some(BlockId(9)), "a window of all is greedy");
        let mut reversed = ten();
        reversed.reverse();
        assert_eq!(choose(GcPolicy::Windowed(4), reversed, 0), Some(BlockId(3)), "the view's order does not matter");
    }

    #[test]
    fn d_choices_takes_the_emptiest_of_its_sample() {
        // d at least the block count samples them all: greedy.
        for draw in 0..20 {
            assert_eq!(choose(GcPolicy::DChoices(10), ten(), draw), Some(BlockId(9)));
            assert_eq!(choose(GcPolicy::DChoices(u32::MAX), ten(), draw), Some(BlockId(9)));
        }
        // The same draw gives the same block, whatever the view's order.
        let mut reversed = ten();
        reversed.reverse();
        for draw in 0..50 {
            assert_eq!(
                choose(GcPolicy::DChoices(3), ten(), draw),
                choose(GcPolicy::DChoices(3), reversed.clone(), draw)
            );
        }
        // d = 1 is uniform over the candidates; d = 3 leans to emptier ones.
        let tally = |d: u32| {
            let mut hits = [0u32; 10];
            for draw in 0..5000 {
                hits[choose(GcPolicy::DChoices(d), ten(), draw).unwrap().0 as usize] += 1;
            }
            hits
        };
        let random = tally(1);
        assert!(random.iter().all(|&h| (400..600).contains(&h)), "random selection is uniform: {random:?}");
        let three = tally(3);
        // P(block 9 in a sample of 3 of 10) = 3/10; P(block 0 is the
        // emptiest of the sample) = 0.
        assert_eq!(three[0], 0, "the fullest block never wins a sample of three");
        assert!((1350..1650).contains(&three[9]), "the emptiest wins 30% of samples: {three:?}");
    }
}
