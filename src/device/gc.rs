//! Garbage collection: foreground (below the low watermark, inside a
//! write), idle (up to the high watermark while the host is idle) and the
//! erase of emptied blocks ahead of need. The victim policy decides
//! (`ftl::victim`, `ftl::greedy`); this file moves the live chunks.

use super::Drive;
use crate::config::GcPolicy;
use crate::content::pattern::unit_seed;
use crate::error::DriveError;
use crate::ftl::victim;
use crate::units::{BlockId, SimTime};

/// Which of the seed's streams draws GC samples.
const GC_DRAW_STREAM: u64 = 0x6763;

impl Drive {
    /// Runs GC while free blocks are under the low watermark. Fails rather
    /// than spin when collections stop gaining space.
    pub(super) fn foreground_gc(&mut self) -> Result<(), DriveError> {
        let mut fruitless = 0;
        // Frontiers past the first each keep an open block per die.
        let low = u64::from(self.config.gc.low_watermark) + self.config.extra_reserve();
        while u64::from(self.space.free_blocks()) < low {
            let before = self.space.unwritten_bytes();
            if !self.collect_one()? {
                return Err(DriveError::NoSpace(format!(
                    "{} free blocks and no block with reclaimable space",
                    self.space.free_blocks()
                )));
            }
            fruitless = if self.space.unwritten_bytes() > before { 0 } else { fruitless + 1 };
            if fruitless > self.config.geometry.total_blocks() {
                return Err(DriveError::NoSpace("garbage collection no longer gains space".into()));
            }
        }
        Ok(())
    }

    /// Idle-time GC with unlimited idle time from the latest completion.
    /// See [`Drive::idle`].
    /// Unlike [`Drive::idle`] it leaves emptied blocks past the watermark
    /// unerased.
    pub fn idle_gc(&mut self) -> Result<u32, DriveError> {
        self.collect_idle(self.now, SimTime(u64::MAX))
    }

    /// The host is idle from `from` to `until`: queued background work
    /// drains, and GC cleans blocks while the dies are free before `until`,
    /// until the high watermark of free blocks is reached, nothing is
    /// reclaimable, or a collection gains no space (moving a block's live
    /// data would only pad another). Then, when the firmware does so
    /// (`Firmware::idle_erase`), blocks left with no live data are erased
    /// ahead of need while the idle time lasts (`erase_emptied`). The next untimed command is issued at
    /// `until` (when finite). Returns the blocks GC cleaned.
    pub fn idle(&mut self, from: SimTime, until: SimTime) -> Result<u32, DriveError> {
        if until.0 != u64::MAX {
            self.advance(until)?;
        }
        let cleaned = self.collect_idle(from, until)?;
        if self.config.firmware.idle_erase {
            self.erase_emptied(from, until);
        }
        Ok(cleaned)
    }

    /// Idle GC from `from` to `until`, up to the high watermark (see
    /// [`Drive::idle`]). Returns the blocks cleaned.
    fn collect_idle(&mut self, from: SimTime, until: SimTime) -> Result<u32, DriveError> {
        let mut cleaned = 0;
        let mut at = from;
        while self.space.free_blocks() < self.config.gc.high_watermark && at < until {
            let before = self.space.unwritten_bytes();
            let collected = self.collect_one()?;
            at = self.time_background(at);
            if !collected {
                break;
            }
            cleaned += 1;
            if self.space.unwritten_bytes() <= before {
                break;
            }
        }
        Ok(cleaned)
    }

    /// Idle time past the high watermark: blocks with no live byte left
    /// (overwritten or trimmed away) are erased ahead of need, as drives
    /// do in the background, so later writes find them ready instead of
    /// waiting for erases on the dies they program. Moving no data, it
    /// costs no NAND writes and only the erase each block needs anyway
    /// before reuse. Erases run on each block's die from `from`, and only
    /// those that end by `until`; dies work in parallel. Returns the
    /// blocks erased.
    fn erase_emptied(&mut self, from: SimTime, until: SimTime) -> u32 {
        let erase_ns = self.config.timing.erase_ns;
        let mut erased = 0;
        for block in self.space.emptied_blocks() {
            let die = self.nand.die_of(block).0;
            if self.timeline.die_idle_at(die).max(from) + erase_ns > until {
                continue;
            }
            let summary = self.space.take_summary(block);
            self.space.erase(&mut self.nand, block, summary);
            self.time_background(from);
            erased += 1;
        }
        erased
    }

    /// Cleans one victim chosen by the configured policy. False when no
    /// sealed block has reclaimable space.
    fn collect_one(&mut self) -> Result<bool, DriveError> {
        let chosen = match self.config.gc.policy {
            GcPolicy::Greedy => self.space.greedy_victim(),
            policy => {
                // d-choices' sample: a stream of the drive's seed, one draw
                // per victim, so a seed and config give the same choices.
                let draw = unit_seed(unit_seed(self.config.seed, GC_DRAW_STREAM), self.counters.gc_victims);
                victim::choose(policy, self.space.sealed_views(self.clock), draw)
            }
        };
        let Some(victim) = chosen else {
            return Ok(false);
        };
        self.nand.set_collecting(true);
        let moved = self.relocate_all(victim);
        self.nand.set_collecting(false);
        moved?;
        self.level_wear()?;
        Ok(true)
    }

    /// Moves every live chunk out of `victim` and erases it, in one pass
    /// per step: gather the live chunks, journal the victim's page reads,
    /// append them all, then point their records at the new extents. The
    /// journal gets the reads first, then the programs, then the erase.
    pub(super) fn relocate_all(&mut self, victim: BlockId) -> Result<(), DriveError> {
        let frontier = self.gc_frontier(victim);
        let summary = self.space.take_summary(victim);
        let mut live = std::mem::take(&mut self.gc_scratch);
        live.clear();
        self.chunks.gather_live(&summary, victim, &mut live);
        // An id freed and reused within the block appears twice in its
        // summary; both entries now name the same chunk, at its later
        // place, which breaks the rising offset order the summary
        // otherwise has. So an entry is the chunk's own exactly when its
        // offset is below every later entry's (chunks are never empty):
        // one pass from the end keeps those, in order.
        if !live.is_sorted_by(|a, b| a.1.offset < b.1.offset) {
            let (mut below, mut kept) = (u32::MAX, live.len());
            for i in (0..live.len()).rev() {
                if live[i].1.offset < below {
                    below = live[i].1.offset;
                    kept -= 1;
                    live[kept] = live[i];
                }
            }
            live.drain(..kept);
        }
        let pages = self.space.nand_page_count_in_order(&self.nand, live.iter().map(|&(_, extent)| extent));
        self.nand.journal_reads(victim, pages);
        self.counters.gc_page_reads += u64::from(pages);
        // A chunk's bytes stay with the chunk (memory media): GC moves
        // only its extent.
        let mut moved = std::mem::take(&mut self.gc_moved);
        moved.clear();
        let chunks = live.iter().map(|&(id, old)| (id, old.len));
        let result = self.space.append_run(&mut self.nand, chunks, &mut self.clock, frontier, &mut moved);
        let mut bytes = 0;
        for (&(id, old), &new) in live.iter().zip(&moved) {
            self.chunks.relocate(id, new);
            bytes += old.len;
        }
        self.space.drop_live(victim, bytes);
        self.counters.gc_relocated_bytes += u64::from(bytes);
        self.counters.gc_relocated_chunks += moved.len() as u64;
        self.gc_scratch = live;
        self.gc_moved = moved;
        if let Err(e) = result {
            // The victim keeps what was not moved, and stays a candidate.
            self.space.untake_summary(victim, summary);
            return Err(e);
        }
        self.counters.gc_victims += 1;
        self.space.erase(&mut self.nand, victim, summary);
        Ok(())
    }
}
