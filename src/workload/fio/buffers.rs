//! What a fio job's writes carry: `buffer_pattern`, `zero_buffers`,
//! `scramble_buffers` and the dedupe mode beside the percentages, resolved
//! with `refill_buffers` as fio 3.33 resolves them into the bytes a job
//! writes ([`DataSpec`]).
//!
//! fio's rules (options.c callbacks, in line order; init.c
//! `fixup_options` and `td_set_runstate` flags; io_u.c `fill_io_buffer`
//! and `get_io_u`):
//! - `buffer_pattern` turns `scramble_buffers` and `zero_buffers` off, and
//!   `refill_buffers` on if the job compresses or reads by then (else off).
//! - `buffer_compress_percentage=100` is `zero_buffers` with no
//!   percentage; 1 to 99 turns `refill_buffers` on unless it is given.
//!   Giving either percentage, even 0, stops writes being stamped.
//! - A buffer is filled by its percentages if either is nonzero (the
//!   compressible share with the pattern), else with the pattern, else
//!   zeros (`zero_buffers`), else random bytes.
//! - The job's `iodepth` buffers are filled once when it starts. With
//!   `refill_buffers` every write is filled afresh (the first fills go
//!   unwritten). Without it they are written again, each write
//!   stamped unless a percentage was given or `scramble_buffers` is off
//!   (or `zero_buffers` was given and `scramble_buffers` was not).

use super::Job;
use crate::content::buffers::{Pattern, Reuse};
use crate::content::pattern::{DataSpec, DedupeMode, PatternError, DEFAULT_UNIT};

/// fio's buffer options of a job as set so far.
#[derive(Clone, Debug, PartialEq)]
pub struct Buffers {
    /// `buffer_pattern` (zeros when unset).
    pub pattern: Pattern,
    /// `zero_buffers`.
    pub zero: bool,
    /// `scramble_buffers` (true by default).
    pub scramble: bool,
    /// `dedupe_mode=working_set` (else `repeat`).
    pub working_set: bool,
    /// `dedupe_working_set_percentage` (5 by default): of the job's region.
    pub working_set_pct: u8,
    /// `dedupe_global`: the working set is shared with the other jobs
    /// that set it ([`JobFile::plan`](super::JobFile::plan)).
    pub global: bool,
    zero_given: bool,
    scramble_given: bool,
    percentage_given: bool,
}

impl Default for Buffers {
    fn default() -> Self {
        Buffers {
            pattern: Pattern::ZEROS,
            zero: false,
            scramble: true,
            working_set: false,
            working_set_pct: 5,
            global: false,
            zero_given: false,
            scramble_given: false,
            percentage_given: false,
        }
    }
}

impl Buffers {
    /// `buffer_pattern=`: what it turns off (the caller sets `refill_buffers`).
    pub(super) fn set_pattern(&mut self, pattern: Pattern) {
        self.pattern = pattern;
        self.scramble = false;
        self.zero = false;
    }

    /// `zero_buffers`.
    pub(super) fn set_zero(&mut self, on: bool) {
        self.zero = on;
        self.zero_given = true;
    }

    /// `scramble_buffers=`.
    pub(super) fn set_scramble(&mut self, on: bool) {
        self.scramble = on;
        self.scramble_given = true;
    }

    /// `buffer_compress_percentage=` or `dedupe_percentage=`, any value.
    pub(super) fn percentage_given(&mut self) {
        self.percentage_given = true;
    }

    /// Whether fio stamps each write from a kept buffer.
    fn stamps(&self) -> bool {
        let scramble = self.scramble && (self.scramble_given || !(self.zero && self.zero_given));
        scramble && !self.percentage_given
    }
}

impl Job {
    /// What the job's writes carry, on a region of `length` bytes (the
    /// dedupe working set is a share of it).
    pub fn data(&self, length: u64) -> Result<DataSpec, PatternError> {
        let b = &self.buffers;
        let (compress, zero) = match self.compress_pct {
            100 => (0, true),
            pct => (pct, b.zero),
        };
        let spec = if compress > 0 || self.dedupe_pct > 0 {
            let mode = match b.working_set {
                true => DedupeMode::working_set(length, b.working_set_pct, DEFAULT_UNIT).map_err(|_| {
                    PatternError::new(format!(
                        "dedupe_working_set_percentage={} of the job's {length} bytes holds no {DEFAULT_UNIT}-byte unit",
                        b.working_set_pct
                    ))
                })?,
                false => DedupeMode::Repeat,
            };
            DataSpec::new(compress, self.compress_chunk as usize, self.dedupe_pct)?.with_dedupe_mode(mode)?
        } else if !b.pattern.is_zeros() || zero {
            DataSpec::zeros()
        } else {
            DataSpec::incompressible()
        };
        let reuse = match self.refill_buffers {
            true => Reuse::Refilled { buffers: self.iodepth },
            false => Reuse::Kept { buffers: self.iodepth, scramble: b.stamps() },
        };
        Ok(spec.with_pattern(b.pattern).with_reuse(reuse))
    }
}
