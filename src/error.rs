//! Error types, one per layer, joined by `From`.
//!
//! [`ConfigError`] is bad user configuration (the CLI maps it to exit
//! status 2); [`NandError`] is a broken NAND rule, which only a bug in the
//! FTL can cause; [`DriveError`] is what a host command can get back.

use thiserror::Error;

use crate::input::Shown;

/// A configuration that cannot describe a drive.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum ConfigError {
    /// A field holds a value outside its valid range.
    #[error("invalid config field `{field}`: {reason}")]
    Invalid { field: &'static str, reason: String },
    /// A preset name that is not built in; `valid` lists those that are.
    #[error("unknown preset '{}' (valid: {})", Shown::new(name), valid.join(", "))]
    UnknownPreset { name: String, valid: &'static [&'static str] },
    /// A firmware profile name that is not built in; `valid` lists those that are.
    #[error("unknown firmware '{}' (valid: {})", Shown::new(name), valid.join(", "))]
    UnknownFirmware { name: String, valid: &'static [&'static str] },
    /// A TOML file that does not parse into a config.
    #[error("cannot parse drive config: {0}")]
    Parse(String),
    /// Tables a drive allocates when it is built that could never fit in
    /// the machine (its memory and swap, or the address-space limit).
    #[error("the drive {0}")]
    TooLarge(String),
}

impl ConfigError {
    pub(crate) fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        ConfigError::Invalid { field, reason: reason.into() }
    }
}

/// A violated NAND rule. Never expected: the FTL must not cause one.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum NandError {
    /// Pages of a block must be programmed in order, once each.
    #[error("block {block}: program of page {page} but next programmable page is {next}")]
    OutOfOrderProgram { block: u32, page: u32, next: u32 },
}

/// What a host command can fail with. The drive is unchanged after any of
/// these except [`DriveError::Internal`] and [`DriveError::ClockOverflow`].
#[derive(Debug, Error, Clone, PartialEq)]
pub enum DriveError {
    /// The request reaches past the end of the drive.
    #[error("sectors {start}..{end} are out of range (drive has {capacity} sectors)")]
    OutOfRange { start: u64, end: u64, capacity: u64 },
    /// Data length is not a whole number of sectors, or empty.
    #[error("transfer of {len} bytes is not a positive multiple of the {sector}-byte sector")]
    Misaligned { len: usize, sector: u64 },
    /// The drive keeps no data bytes (`--media metadata-only`).
    #[error("{what} needs stored data, but this drive keeps metadata only (--media metadata-only)")]
    NoData { what: &'static str },
    /// More chunks than the chunk table can number.
    #[error("chunk table is full ({0} chunks)")]
    ChunkTableFull(usize),
    /// No block could be reclaimed and no free space is left.
    #[error("out of physical space: {0}")]
    NoSpace(String),
    /// The FTL broke a NAND rule: a bug, reported rather than hidden.
    #[error("internal NAND error: {0}")]
    Internal(#[from] NandError),
    /// A command would complete past [`crate::units::SimTime::LIMIT`]
    /// (292 simulated years), where the clock's arithmetic may saturate;
    /// the command is applied, the clock stops before it.
    #[error(
        "simulated time would pass 292 years (2^63 ns, at {at_ns} ns), beyond which the clock cannot be trusted: \
         run less (a shorter runtime or fewer I/Os) or a faster drive"
    )]
    ClockOverflow { at_ns: u64 },
    /// A stream hint names a stream the drive does not have.
    #[error("stream {stream} is not one of the drive's {streams} write streams (placement.streams)")]
    UnknownStream { stream: u8, streams: u8 },
    /// Stored bytes failed to decompress: a bug, reported rather than hidden.
    /// An encoding tape could not be recorded or played back (the reason).
    #[error("{0}")]
    Tape(String),
    #[error("internal error: chunk {chunk} does not decompress: {reason}")]
    Corrupt { chunk: usize, reason: String },
}
