//! fio's verify phase (backend.c `do_verify`): the writes a verifying job
//! logged, read back in offset order once it has written them, and what
//! the reads found.

use std::collections::BTreeMap;

use crate::content::verify::{Expect, Verify};
use crate::host::CommandKind;
use crate::units::SECTOR_BYTES;
use crate::workload::access::Rw;
use crate::workload::WorkloadError;

use super::{JobSpec, Limit};

/// What a verifying job logged and found.
#[derive(Debug)]
pub(super) struct Verifying {
    verify: Verify,
    /// The writes not yet read back, by byte offset on the drive: their
    /// sectors and their number among the job's writes (the 16 bits fio
    /// checks). A write replaces the pieces it overlaps (fio's
    /// `log_io_piece`).
    log: BTreeMap<u64, (u32, u16)>,
    /// Writes logged so far: the next one's `numberio`.
    writes: u64,
    /// Whether a read back checks the write's number (fio: a job that
    /// writes one block size, not time based, not `verify_only`).
    numberio: bool,
    /// Whether the job logs its writes to read them back.
    logs: bool,
    /// Whether the job reads its writes back once they are done.
    phase: bool,
    /// Reads back due now, in a `verify_backlog` batch.
    due: u64,
    /// Whether its writes are only logged (`verify_only` on a job that writes).
    dry: bool,
    /// Whether the last command was a read back (the next one after a
    /// write starts a batch or the final phase).
    reading: bool,
    /// Blocks read and checked, and how many failed.
    checked: u64,
    failures: u64,
    /// fio's message for the first block that failed.
    first: Option<String>,
}

impl Verifying {
    /// The verify state of `spec`, if it verifies.
    pub(super) fn new(spec: &JobSpec) -> Result<Option<Self>, WorkloadError> {
        let Some(verify) = spec.data.verify else { return Ok(None) };
        let time_based = matches!(spec.limit, Limit::Time(_));
        if verify.only && time_based && spec.rw.does_write() {
            return Err(WorkloadError::BadSpec(
                "verify_only replays the job's writes without time passing, so the job must end by its size, not time_based".into(),
            ));
        }
        let writes = spec.rw.does_write();
        let one_write_size = spec.sizes.of(CommandKind::Write).is_none_or(|c| c.min() == c.max());
        Ok(Some(Verifying {
            verify,
            log: BTreeMap::new(),
            writes: 0,
            numberio: writes && one_write_size && !time_based && !verify.only,
            logs: writes && verify.read_back && (!time_based || verify.backlog > 0),
            phase: writes && verify.read_back && !time_based,
            due: 0,
            dry: writes && verify.only,
            reading: false,
            checked: 0,
            failures: 0,
            first: None,
        }))
    }

    /// Whether the job's writes are only logged, not issued (`verify_only`).
    pub(super) fn dry(&self) -> bool {
        self.dry
    }

    /// Whether the reads of a job of `rw` are checked as they come (fio
    /// checks every read of a job that does not write).
    pub(super) fn checks_reads(&self, rw: Rw) -> bool {
        !rw.does_write()
    }

    /// Logs a write of `bytes` at byte `at` of the drive.
    pub(super) fn wrote(&mut self, at: u64, bytes: u64) {
        if !self.logs {
            return;
        }
        self.reading = false;
        let end = at.saturating_add(bytes);
        if let Some((&start, &(sectors, _))) = self.log.range(..at).next_back() {
            if start + u64::from(sectors) * SECTOR_BYTES > at {
                self.log.remove(&start);
            }
        }
        while let Some(start) = self.log.range(at..end).next().map(|(&s, _)| s) {
            self.log.remove(&start);
        }
        let sectors = u32::try_from(bytes / SECTOR_BYTES).unwrap_or(u32::MAX);
        self.log.insert(at, (sectors, self.writes as u16));
        self.writes += 1;
        // fio's check_get_verify: a batch once the unverified writes reach
        // a multiple of the backlog (its dry run, `verify_only`, reads
        // everything back at the end).
        let backlog = self.verify.backlog;
        if backlog > 0 && !self.dry && (self.log.len() as u64).is_multiple_of(backlog) {
            self.due = if self.verify.batch > 0 { self.verify.batch } else { backlog };
        }
    }

    /// Whether a `verify_backlog` batch is due before the next command.
    pub(super) fn batch_due(&self) -> bool {
        self.due > 0 && !self.log.is_empty() && !self.stopped()
    }

    /// Whether reads back run while the job writes (`verify_backlog`).
    pub(super) fn reads_while_writing(&self) -> bool {
        self.logs && self.verify.backlog > 0
    }

    /// Whether reading back is still to do.
    pub(super) fn pending(&self) -> bool {
        self.phase && !self.log.is_empty() && !self.stopped()
    }

    /// Whether this read back is the first since a write: a batch or the
    /// final phase begins.
    pub(super) fn begin(&mut self) -> bool {
        !std::mem::replace(&mut self.reading, true)
    }

    /// The next write to read back: its offset, bytes and number.
    pub(super) fn next(&mut self) -> Option<(u64, u64, Expect)> {
        let numberio = self.numberio;
        self.due = self.due.saturating_sub(1);
        self.log.pop_first().map(|(at, (sectors, n))| {
            (at, u64::from(sectors) * SECTOR_BYTES, Expect { numberio: numberio.then_some(u64::from(n)) })
        })
    }

    /// Checks `data`, read at byte `at` of the drive.
    pub(super) fn check(&mut self, data: &[u8], at: u64, expect: Expect) {
        self.checked += 1;
        if let Err(e) = self.verify.check(data, at, expect) {
            self.failures += 1;
            self.first.get_or_insert(e.0);
        }
    }

    /// Whether a block has failed and `verify_fatal` stops the job.
    pub(super) fn stopped(&self) -> bool {
        self.verify.fatal && self.failures > 0
    }

    /// The job's verdict: an error naming the first bad block, if any.
    pub(super) fn outcome(&self) -> Result<(), WorkloadError> {
        match &self.first {
            None => Ok(()),
            Some(first) => {
                Err(WorkloadError::Verify { failures: self.failures, checked: self.checked, first: first.clone() })
            }
        }
    }
}
