//! fio's offset modifier of `rw` and its `rw_sequencer` (options.c
//! `str_rw_cb`, io_u.c `get_next_seq_offset` and `get_next_offset`, fio
//! 3.33): a sequential job with holes (`rw=write:112k` starts each command
//! 112 KiB after the last one ended) or going backwards (`rw=read:-8k`),
//! and a random job that draws a new offset every N commands
//! (`rw=randread:8`), following the last command in between, or repeating
//! its offset with `rw_sequencer=identical`.
//!
//! What fio does, as measured with its `write_iolog` on a 1 MiB file with
//! `bs=4k`, and kept here:
//! - `rw=write:12k`: 0, 16k, 32k, ..., 1008k: 64 writes, the pass ending
//!   once an offset reaches the region's end; with `io_size=2m` the passes
//!   repeat from the start (512 writes). A region that ends at the end of
//!   the file or device wraps instead, its bytes making the pass: 256
//!   writes, each offset four times.
//! - `rw=read:-8k`: 0, then the region's end less 8k, then back 4k at a
//!   time, down to 0 (256 reads). In a region that does not start the
//!   device (`offset=256k size=512k`) the first read is at 248k into it,
//!   where fio's mix of absolute and relative offsets puts it.
//! - `rw=randread:4`: runs of four consecutive blocks from random starts;
//!   a run that would pass the region's end ends the job (118 reads of 256
//!   in that run). With `rw_sequencer=identical` each random offset is
//!   read four times.

use serde::Serialize;

/// A job's offset modifier and sequencer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Sequence {
    /// A sequential job's bytes from one command's end to the next one's
    /// start (negative: backwards).
    pub add: i64,
    /// A random job's commands per random offset (0 and 1: every command).
    pub every: u32,
    /// `rw_sequencer=identical`: the commands between random offsets repeat
    /// the last offset instead of following the last command.
    pub identical: bool,
    /// Where the job's region starts on the drive: fio's first backward
    /// command depends on it.
    pub region_start: u64,
    /// Whether the region ends where the drive does: fio then wraps a
    /// pass with holes at the end and goes on by bytes, where a region
    /// ending before the drive's end ends the pass.
    pub to_drive_end: bool,
}

impl Sequence {
    /// Whether the modifier changes nothing (no holes, every command random).
    pub fn is_plain(&self) -> bool {
        self.add == 0 && self.every <= 1
    }

    /// Commands of `bs` bytes a sequential pass over `length` bytes makes:
    /// fewer with holes in a region that ends before the drive does, as
    /// fio ends the pass once an offset reaches the region's end.
    pub fn pass_commands(&self, length: u64, bs: u64) -> u64 {
        match u64::try_from(self.add) {
            Ok(add) if add > 0 && !self.to_drive_end => length.div_ceil(bs.saturating_add(add).max(1)),
            _ => length / bs.max(1),
        }
    }

    /// Where a sequential command of at least `least` bytes starts in a
    /// region of `length` bytes, after one that ended at `end` (`None`: the
    /// job's first command).
    pub(super) fn next_start(&self, end: Option<u64>, length: u64, least: u64) -> u64 {
        let (len, add) = (i128::from(length), i128::from(self.add));
        let pos = match end {
            // fio rewinds a backward job to its region's end, taking the
            // region's length as an offset on the drive.
            None if self.add < 0 && self.region_start > 0 => len - i128::from(self.region_start) + add,
            None => 0,
            Some(end) => i128::from(end) + add,
        };
        if pos < 0 || pos + i128::from(least) > len {
            // Past either end: a forward job starts a new pass, a backward
            // one goes on from the region's end.
            if self.add > 0 {
                0
            } else {
                (len + add).clamp(0, (len - i128::from(least)).max(0)) as u64
            }
        } else {
            pos as u64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::CommandKind;
    use crate::workload::access::Access;
    use crate::workload::sizes::{BlockSizes, Placer};

    const K: u64 = 1024;

    fn placer(seq: Sequence, access: Access, length: u64) -> Placer {
        let sizes = BlockSizes::default().sequenced(seq, 4 * K);
        Placer::new(access, 4 * K, length, &sizes, 3, 4).unwrap()
    }

    fn starts(p: &mut Placer, kind: CommandKind, random: bool, n: usize) -> Vec<u64> {
        (0..n).map_while(|_| p.next(kind, random)).map(|(at, _)| at / K).collect()
    }

    #[test]
    fn holes_and_backward_reads_land_where_fio_puts_them() {
        let holes = Sequence { add: 12 * K as i64, ..Default::default() };
        let mut p = placer(holes, Access::Sequential, 1 << 20);
        let writes = starts(&mut p, CommandKind::Write, false, 65);
        assert_eq!(writes[..4], [0, 16, 32, 48]);
        assert_eq!((writes[63], writes[64]), (1008, 0), "the pass ends at the region's end, the next starts over");
        assert_eq!(holes.pass_commands(1 << 20, 4 * K), 64);
        let to_end = Sequence { to_drive_end: true, ..holes };
        assert_eq!(to_end.pass_commands(1 << 20, 4 * K), 256, "wrapping at the drive's end");

        let back = Sequence { add: -8 * K as i64, ..Default::default() };
        let mut p = placer(back, Access::Sequential, 1 << 20);
        let reads = starts(&mut p, CommandKind::Read, false, 258);
        assert_eq!(reads[..4], [0, 1016, 1012, 1008]);
        assert_eq!(reads[253..258], [8, 4, 0, 1016, 1012], "down to 0, then from the end again");
        assert_eq!(back.pass_commands(1 << 20, 4 * K), 256);

        // offset=256k size=512k: fio's first read is 248k into the region.
        let off = Sequence { region_start: 256 * K, ..back };
        let mut p = placer(off, Access::Sequential, 512 * K);
        let reads = starts(&mut p, CommandKind::Read, false, 65);
        assert_eq!(reads[..3], [248, 244, 240]);
        assert_eq!(reads[62..65], [0, 504, 500]);
    }

    #[test]
    fn a_random_job_runs_on_from_each_random_offset_and_ends_past_the_region() {
        let runs = Sequence { every: 4, ..Default::default() };
        let mut p = placer(runs, Access::Shuffled, 1 << 20);
        // A shuffled pass draws every block, the last one too, within 256
        // random offsets (1,024 commands): its run passes the end.
        let reads = starts(&mut p, CommandKind::Read, true, 1100);
        for run in reads.chunks(4).filter(|r| r.len() == 4) {
            assert_eq!([run[1] - run[0], run[2] - run[1], run[3] - run[2]], [4, 4, 4], "{run:?}");
        }
        assert!(reads.len() < 1100, "a run past the end stops the job: {} commands", reads.len());
        assert_eq!(*reads.last().unwrap() + 4, 1024, "the last command ends the region");

        let same = Sequence { every: 4, identical: true, ..Default::default() };
        let mut p = placer(same, Access::Shuffled, 1 << 20);
        let reads = starts(&mut p, CommandKind::Read, true, 256);
        assert_eq!(reads.len(), 256, "a repeat never passes the end");
        assert!(reads.chunks(4).all(|r| r.iter().all(|&x| x == r[0])));
    }
}
