//! fio's `verify` options of a job, resolved as fio 3.33 resolves them
//! (options.c `str_verify_pattern_cb`, init.c `fixup_options`) into the
//! headers its writes carry and how it reads them back ([`Verify`]).
//!
//! - `verify_pattern` without `verify` is `verify=pattern` with a header
//!   (fio's `VERIFY_PATTERN`); `verify=pattern` itself has none.
//! - `verify_interval` defaults to the smallest write size, is cut to it
//!   (or to the smallest read size of a job that reads), and falls back to
//!   the greatest common divisor of the write sizes when it does not divide
//!   them.
//! - A verifying job refills its buffers unless `refill_buffers` is given.
//! - `verify_backlog` reads back while the job writes, and a time-based
//!   writer with it reads back (fio warns only without it).

use crate::content::buffers::Pattern;
use crate::content::verify::{Checksum, Verify};
use crate::workload::sizes::gcd;

use super::keys::Key;
use super::Job;

/// fio's verify options of a job, as set so far.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VerifyOptions {
    /// `verify` (`None`: fio's `0`, no verification).
    pub checksum: Option<Checksum>,
    /// Whether `verify` was given (else `verify_pattern` sets it).
    given: bool,
    /// `verify_interval` in bytes (0 while unset; resolved for the job's
    /// sizes once its section is read).
    pub interval: u64,
    /// `verify_offset` in bytes.
    pub offset: u64,
    /// `verify_pattern`.
    pub pattern: Option<Pattern>,
    /// `do_verify` (true by default).
    pub read_back: bool,
    /// `verify_fatal`.
    pub fatal: bool,
    /// `verify_only`.
    pub only: bool,
    /// `verify_backlog` (0: unset).
    pub backlog: u64,
    /// `verify_backlog_batch` (0: the backlog).
    pub batch: u64,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            checksum: None,
            given: false,
            interval: 0,
            offset: 0,
            pattern: None,
            read_back: true,
            fatal: false,
            only: false,
            backlog: 0,
            batch: 0,
        }
    }
}

impl VerifyOptions {
    /// `verify=name`.
    pub(super) fn set_checksum(&mut self, name: &str) -> Result<(), String> {
        self.given = true;
        self.checksum = match name {
            "0" => None,
            "sha256" | "sha512" => {
                return Err(format!(
                    "verify={name} is not implemented: fio 3.33's {name} field holds its hash's working \
                     buffer, not the standard digest (use sha3-256, sha1, md5, xxhash or a crc)"
                ))
            }
            _ => Some(Checksum::from_name(name).ok_or_else(|| {
                let names: Vec<&str> = Checksum::NAMES.iter().map(|(n, _)| *n).collect();
                format!("unknown verify method (expected 0, {})", names.join(", "))
            })?),
        };
        Ok(())
    }

    /// `verify_pattern=`: a header and the pattern, unless `verify` is given.
    pub(super) fn set_pattern(&mut self, pattern: Pattern) {
        self.pattern = Some(pattern);
        if !self.given {
            self.checksum = Some(Checksum::Pattern);
        }
    }

    /// `verify_interval=` (fio's minimum: two headers).
    pub(super) fn set_interval(&mut self, bytes: u64) -> Result<(), String> {
        if !(80..=0xFFFF_FFFF).contains(&bytes) {
            return Err("must be at least 80 (two headers) and below 4 GiB".into());
        }
        self.interval = bytes;
        Ok(())
    }

    /// `verify_offset=` (fio's minimum: one header).
    pub(super) fn set_offset(&mut self, bytes: u64) -> Result<(), String> {
        if !(40..=0xFFFF_FFFF).contains(&bytes) {
            return Err("must be at least 40 (one header) and below 4 GiB".into());
        }
        self.offset = bytes;
        Ok(())
    }

    /// Resolves the interval for `job`'s sizes and checks that each holds
    /// its header, naming the option at fault.
    pub(super) fn fixup(&mut self, job: &Job) -> Result<(), (Key, String)> {
        let Some(checksum) = self.checksum else { return Ok(()) };
        if checksum == Checksum::PatternOnly && self.pattern.is_none() {
            return Err((Key::Verify, "verify=pattern needs a verify_pattern".into()));
        }
        let blamed = match (self.offset > 0, self.interval > 0, self.given) {
            (true, _, _) => Key::VerifyOffset,
            (_, true, _) => Key::VerifyInterval,
            (_, _, true) => Key::Verify,
            _ => Key::VerifyPattern,
        };
        let [read, write, _] = &job.block_sizes;
        let (min_w, max_w) = (write.min(), write.max());
        if max_w != min_w && self.interval == 0 {
            self.interval = min_w;
        }
        if self.interval > min_w {
            self.interval = min_w;
        } else if job.rw.does_read() && self.interval > read.min() {
            self.interval = read.min();
        }
        if self.interval == 0 || min_w % self.interval != 0 || max_w % self.interval != 0 {
            self.interval = gcd(min_w, max_w);
        }
        if self.interval > u64::from(u32::MAX) {
            return Err((blamed, format!("a verify_interval of {} bytes is past fio's 4 GiB", self.interval)));
        }
        let Some(v) = self.spec() else { return Ok(()) };
        v.check_sizes(min_w).map_err(|e| (blamed, e))
    }

    /// The job's verification, if it verifies (fio's thread number 1:
    /// [`JobFile::plan`](super::JobFile::plan) numbers the jobs).
    pub fn spec(&self) -> Option<Verify> {
        Some(Verify {
            checksum: self.checksum?,
            interval: self.interval as u32,
            offset: self.offset as u32,
            pattern: self.pattern,
            read_back: self.read_back,
            only: self.only,
            fatal: self.fatal,
            backlog: self.backlog,
            batch: self.batch,
            thread: 1,
        })
    }
}
