//! Static wear levelling: when the P/E spread passes
//! `wear.static_spread`, the data of the least-worn sealed block (cold
//! data) moves through GC's relocation and the block is erased, so it
//! rejoins the free pool and takes hot writes. The choice is
//! `ftl::wear::static_victim`; the cost is counted apart from GC's
//! (`Stats::wear_relocated_bytes`). Dynamic levelling is the free-block
//! choice in `ftl::space`.

use super::Drive;
use crate::error::DriveError;
use crate::ftl::space::BlockState;
use crate::ftl::wear;
use crate::units::BlockId;

impl Drive {
    /// After a GC collection: moves one cold block's data when static
    /// wear levelling is on, the spread has passed its threshold and GC
    /// has brought the free blocks up to the low watermark (a whole
    /// block's data then fits, as a GC victim's does).
    pub(super) fn level_wear(&mut self) -> Result<(), DriveError> {
        let Some(spread) = self.config.wear.static_spread else {
            return Ok(());
        };
        if u64::from(self.space.free_blocks()) < u64::from(self.config.gc.low_watermark) + self.config.extra_reserve() {
            return Ok(());
        }
        let space = &self.space;
        let blocks = self
            .nand
            .pe_counts()
            .enumerate()
            .map(|(i, pe)| (BlockId(i as u32), pe, space.state(BlockId(i as u32)) == BlockState::Sealed));
        let Some(block) = wear::static_victim(blocks, spread) else {
            return Ok(());
        };
        let before = self.counters;
        self.nand.set_collecting(true);
        let moved = self.relocate_all(block);
        self.nand.set_collecting(false);
        self.counters.gc_since_is_wear(&before);
        moved
    }
}
