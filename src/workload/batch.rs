//! The batch writer jobs and studies share: write requests of up to `bs`
//! bytes gathered into one [`BlockDevice::write_batch_on`] call, so the
//! drive's pipeline has units to compress and hash in parallel (timing
//! stays per command), with their content generated all at once.
//!
//! Owns the batch's buffer: room for every request at `bs` when the
//! device needs content, else one shared zeroed request (a content-free
//! drive ignores the bytes), allocated at the first flush, so a job that
//! never writes holds none ([`WriteBatch::bytes_for`] sizes it before any
//! run). It does not pick addresses or decide when to
//! flush; `trace::replay` keeps its own writer, whose requests differ in
//! size and carry per-record content and line numbers.

use crate::content::Content;
use crate::host::{BlockDevice, CommandKind, HostQueue};
use crate::units::Lba;

/// At most this many bytes of generated content per batch, so a large
/// `bs` does not multiply into a huge buffer.
pub const BATCH_BYTES: usize = 16 << 20;

/// Pending writes of up to `bs` bytes each and their generated content.
#[derive(Debug)]
pub struct WriteBatch {
    content: bool,
    bs: usize,
    /// Requests per batch: 1 to the `max_requests` asked for, within BATCH_BYTES.
    max: usize,
    lbas: Vec<Lba>,
    /// Each request's bytes.
    lens: Vec<usize>,
    /// Empty until the first flush.
    buf: Vec<u8>,
}

impl WriteBatch {
    /// A batch of up to `max_requests` requests of up to `bs` bytes (fewer when
    /// they would pass [`BATCH_BYTES`], at least one); `content`: whether
    /// the device needs the bytes ([`BlockDevice::needs_content`]).
    pub fn new(content: bool, bs: u64, max_requests: usize) -> Self {
        WriteBatch {
            content,
            bs: bs as usize,
            max: Self::requests(bs, max_requests),
            lbas: Vec::new(),
            lens: Vec::new(),
            buf: Vec::new(),
        }
    }

    /// Requests a batch of `bs`-byte writes holds at most, `max_requests`
    /// asked for.
    fn requests(bs: u64, max_requests: usize) -> usize {
        (BATCH_BYTES as u64).checked_div(bs).map_or(1, |n| n as usize).clamp(1, max_requests.max(1))
    }

    /// The bytes the buffer of [`WriteBatch::new`]`(content, bs,
    /// max_requests)` holds once it has written.
    pub fn bytes_for(content: bool, bs: u64, max_requests: usize) -> u64 {
        if content {
            bs.saturating_mul(Self::requests(bs, max_requests) as u64)
        } else {
            bs
        }
    }

    /// Requests a batch holds at most.
    pub fn capacity(&self) -> usize {
        self.max
    }

    /// Requests waiting.
    pub fn len(&self) -> usize {
        self.lbas.len()
    }

    /// Whether no request is waiting.
    pub fn is_empty(&self) -> bool {
        self.lbas.is_empty()
    }

    /// Whether the batch should be flushed before the next [`WriteBatch::add`].
    pub fn is_full(&self) -> bool {
        self.lbas.len() >= self.max
    }

    /// Queues a write of `bytes` (at most the batch's `bs`) at `lba`.
    pub fn add(&mut self, lba: Lba, bytes: u64) {
        self.lbas.push(lba);
        self.lens.push((bytes as usize).min(self.bs));
    }

    /// Generates the batch's payloads (all at once, so a generator can
    /// spread them over threads) and writes them through `queue`, counted
    /// as writes. The batch is empty afterwards, whatever the result.
    pub fn flush<D: BlockDevice>(
        &mut self,
        drive: &mut D,
        queue: &mut HostQueue,
        content: &mut dyn Content,
    ) -> Result<(), D::Error> {
        if self.lbas.is_empty() {
            return Ok(());
        }
        let bs = self.bs;
        if self.buf.is_empty() {
            self.buf = vec![0; if self.content { bs * self.max } else { bs }];
        }
        let total: usize = self.lens.iter().sum();
        if self.content {
            if self.lens.iter().all(|&n| n == self.lens[0]) {
                content.fill_batch(&self.lbas, &mut self.buf[..total]);
            } else {
                let mut rest = &mut self.buf[..total];
                for (&lba, &n) in self.lbas.iter().zip(&self.lens) {
                    let (one, more) = rest.split_at_mut(n);
                    content.fill(lba, one);
                    rest = more;
                }
            }
        }
        let mut at = 0;
        let mut requests: Vec<(Lba, &[u8])> = Vec::with_capacity(self.lbas.len());
        for (&lba, &n) in self.lbas.iter().zip(&self.lens) {
            // Content-free devices ignore bytes: every request shares one buffer.
            let from = if self.content { at } else { 0 };
            requests.push((lba, &self.buf[from..from + n]));
            at += n;
        }
        queue.set_kind(CommandKind::Write);
        let result = drive.write_batch_on(&requests, queue);
        self.lbas.clear();
        self.lens.clear();
        result
    }
}
