//! fio job files: a strict parser for the subset of fio's INI syntax and
//! options that the drive model can run.
//!
//! This module owns turning job-file text into typed [`Job`]s plus the raw
//! settings of a `[drive]` section ([`DriveSetting`]); it never runs
//! anything. Entry point: [`parse`]. Every rejected input yields a
//! [`FioError`] naming its 1-based line. Options outside [`SUPPORTED_KEYS`]
//! are errors rather than silently ignored, so a real fio job file either
//! means what fio would do or is refused.
//!
//! # File format (fio HOWTO, "Job file format")
//!
//! * `[name]` starts a section. `[global]` sets defaults for the job sections
//!   *below* it. Several `[global]` sections build on each other: fio applies
//!   them all to a single default job, so a later one adds to or overrides
//!   the earlier ones, for later jobs only. `[drive]` is ours, not fio's: its
//!   `key=value` lines are returned unchecked in [`JobFile::drive`]. Every
//!   other section is a job, named after its header unless `name=` is given.
//!   Only the exact name `global` is the global section. (fio treats any
//!   name *starting* with `global` as global; that quirk is not copied.)
//! * `key=value` or `key = value`. Bare `time_based`, `stonewall`,
//!   `refill_buffers` and `group_reporting` mean `=1`. fio types these as
//!   "set" options and also accepts `=0`/`=1`. `direct` is a fio `bool`:
//!   it needs a value.
//! * Comments: as in fio's `strip_blank_end` (parse.c), everything from the
//!   first `;` or `#` on a line is dropped. This covers whole-line and
//!   trailing comments, and it means a value can never hold `;` or `#`.
//! * Not supported: `include` directives, `${VAR}` expansion, `$ncpus`-style
//!   keywords, `(arithmetic)` values.
//!
//! # Values (fio HOWTO, "Parameter types" and "Units")
//!
//! * Sizes and integers: a decimal number (or `0x` hex, without a suffix)
//!   with an optional case-insensitive suffix. This follows fio's default
//!   `kb_base=1024` "compatibility mode", as implemented by `__get_mult_bytes`
//!   in fio's parse.c:
//!   - `k`, `kb`, `m`, `mb`, `g`, `gb`, `t`, `tb`, `p`, `pb` are powers of
//!     **1024** (`4k` = `4KB` = 4096);
//!   - `kib`, `mib`, `gib`, `tib`, `pib` are powers of **1000**
//!     (`4KiB` = 4000; HOWTO "Units": with kb_base=1024 "the unit prefixes
//!     are opposite from those specified in the SI and IEC 80000-13
//!     standards");
//!   - `ki`, `mi`, … (no trailing `b`) are powers of **1024**. This is what
//!     fio's parser actually does (axboe/fio issues #1618 and #1740), even
//!     though the HOWTO examples list `1mi` as 1000000;
//!   - `b` alone is bytes; no suffix means bytes.
//!
//!   `kb_base` is not a supported key, so the inverted IEC meaning always
//!   applies. fio silently truncates fractions (`1.5g` becomes 1 byte), so
//!   fractions are rejected here, except in percentages.
//! * Times (`runtime`): no unit means seconds. `us`/`usec`, `ms`/`msec`,
//!   `s`/`sec`, `m` (minutes), `h`, `d` are accepted, case-insensitive, so
//!   `2M` is two minutes. fio's parser reads `30sec` as microseconds, against
//!   its own HOWTO; here it is 30 seconds, as the HOWTO says.
//! * Percentages: `size=N%` (0 < N <= 100) and `offset=N%` (0 <= N < 100).
//!   See HOWTO "I/O size" (`size`) and "I/O type" (`offset`). Fractional
//!   percentages are accepted as an extension.
//!
//! # Options and defaults
//!
//! | key (aliases) | field | default | HOWTO section |
//! |---|---|---|---|
//! | `rw` (`readwrite`) | [`Job::rw`] | `read` | I/O type |
//! | `bs` | [`Job::bs`] | 4096 | Block size |
//! | `iodepth` | [`Job::iodepth`] | 1 | I/O depth |
//! | `size` | [`Job::size`] | whole device | I/O size |
//! | `offset` | [`Job::offset`] | 0 | I/O type |
//! | `runtime` | [`Job::runtime_ns`] | none (0 = no limit) | Time related parameters |
//! | `time_based` | [`Job::time_based`] | false | Time related parameters |
//! | `io_size` (`io_limit`) | [`Job::io_size`] | none | I/O size |
//! | `number_ios` | [`Job::number_ios`] | none (0 = no limit) | I/O type |
//! | `rwmixread`, `rwmixwrite` | [`Job::rwmixread`] | 50 | I/O type |
//! | `buffer_compress_percentage` | [`Job::compress_pct`] | 0 (unset) | Buffers and memory |
//! | `buffer_compress_chunk` | [`Job::compress_chunk`] | 512 (0 = bs) | Buffers and memory |
//! | `dedupe_percentage` | [`Job::dedupe_pct`] | 0 | Buffers and memory |
//! | `refill_buffers` | [`Job::refill_buffers`] | false | Buffers and memory |
//! | `random_distribution` | [`Job::distribution`] | `random` | I/O type |
//! | `randseed` | [`Job::randseed`] | none (fio's own default is 0x89) | I/O type |
//! | `stonewall` (`wait_for_previous`) | [`Job::stonewall`] | false | Threads, processes and job synchronization |
//! | `name` | [`Job::name`] | section name | Job description |
//! | `numjobs` | must be 1 | 1 | Job description |
//! | `ioengine`, `filename`, `direct`, `group_reporting` | recorded, no effect on the model | | |
//!
//! fio behaviour kept from init.c `fixup_options` and the option callbacks:
//! `rwmixread` and `rwmixwrite` set each other (100 - x), so the later line
//! wins. `dedupe_percentage` turns `refill_buffers` on. A
//! `buffer_compress_percentage` from 1 to 99 turns it on too, unless
//! `refill_buffers` was given explicitly. `random_distribution=zipf` and
//! `pareto` without a parameter use fio's defaults (theta 1.1, h 0.2).
//! A zipf theta of 1.0 is rejected, and pareto h must be in (0, 1).
//!
//! Checks that are stricter than fio: `time_based` without a `runtime` is an
//! error (fio warns and drops `time_based`). A byte `size` smaller than `bs`
//! is an error (as in fio). Duplicate job names are errors (fio allows them).
//! `name` is refused inside `[global]`, because every later job would
//! inherit it.
//!
//! Not supported, and rejected with an error: per-direction or ranged block
//! sizes (`bs=4k,8k`, `bs=4k-16k`), the `rw=randread:8` offset modifier,
//! `rw=randtrimwrite` and the file* modes, `normal`/`gauss`/`zoned`
//! distributions and distribution centres (`zipf:1.2:0.25`), `io_size`
//! percentages, `numjobs` other than 1, and every option not listed above.

use std::collections::HashMap;
use std::ops::Range;

use thiserror::Error;

/// Every option key [`parse`] accepts in a job or `[global]` section,
/// aliases included.
pub const SUPPORTED_KEYS: &[&str] = &[
    "name",
    "rw",
    "readwrite",
    "bs",
    "iodepth",
    "size",
    "offset",
    "runtime",
    "time_based",
    "io_size",
    "io_limit",
    "number_ios",
    "rwmixread",
    "rwmixwrite",
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "dedupe_percentage",
    "refill_buffers",
    "random_distribution",
    "randseed",
    "stonewall",
    "wait_for_previous",
    "ioengine",
    "filename",
    "direct",
    "group_reporting",
    "numjobs",
];

/// A job file that cannot be turned into jobs. `line` is 1-based.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum FioError {
    /// An option this parser does not implement.
    #[error("line {line}: unsupported fio option '{key}' (supported: {list})", list = SUPPORTED_KEYS.join(", "))]
    UnsupportedKey { key: String, line: usize },
    /// A supported option with a value it cannot take.
    #[error("line {line}: bad value '{value}' for '{key}': {reason}")]
    BadValue { key: String, value: String, line: usize, reason: String },
    /// An option line above the first `[section]` header.
    #[error("line {line}: option '{key}' appears before any [section] header")]
    KeyOutsideSection { key: String, line: usize },
    /// A line starting with `[` that is not a well-formed `[name]` header.
    #[error("line {line}: malformed section header: {reason}")]
    BadSection { line: usize, reason: String },
    /// A line that is neither a header, an option nor a comment.
    #[error("line {line}: {reason}")]
    Syntax { line: usize, reason: String },
    /// Two jobs with the same (final) name.
    #[error("line {line}: duplicate job name '{name}' (first defined at line {first_line})")]
    DuplicateJob { name: String, line: usize, first_line: usize },
    /// A file without any job section.
    #[error("no job sections found: a job file needs at least one [job] section besides [global] and [drive]")]
    NoJobs,
}

/// A parsed job file.
#[derive(Debug, Clone, PartialEq)]
pub struct JobFile {
    /// The `[drive]` section's settings, unvalidated and in file order.
    pub drive: Vec<DriveSetting>,
    /// The jobs, in file order.
    pub jobs: Vec<Job>,
}

/// One raw `key=value` line of a `[drive]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct DriveSetting {
    /// The key, trimmed.
    pub key: String,
    /// The value, trimmed (never empty).
    pub value: String,
    /// 1-based line number.
    pub line: usize,
}

/// The I/O pattern of a job (fio `rw=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rw {
    /// `read`: sequential reads.
    Read,
    /// `write`: sequential writes.
    Write,
    /// `randread`: random reads.
    RandRead,
    /// `randwrite`: random writes.
    RandWrite,
    /// `randrw`: random mixed reads and writes, split by `rwmixread`.
    RandRw,
    /// `rw` / `readwrite`: sequential mixed reads and writes.
    SeqRw,
    /// `trim`: sequential trims.
    Trim,
    /// `randtrim`: random trims.
    RandTrim,
    /// `trimwrite`: sequential trim then write of the same blocks.
    TrimWrite,
}

impl Rw {
    /// Whether offsets are chosen at random (else sequentially).
    pub fn is_random(self) -> bool {
        matches!(self, Rw::RandRead | Rw::RandWrite | Rw::RandRw | Rw::RandTrim)
    }

    /// Whether the pattern issues reads.
    pub fn does_read(self) -> bool {
        matches!(self, Rw::Read | Rw::RandRead | Rw::RandRw | Rw::SeqRw)
    }

    /// Whether the pattern issues writes.
    pub fn does_write(self) -> bool {
        matches!(self, Rw::Write | Rw::RandWrite | Rw::RandRw | Rw::SeqRw | Rw::TrimWrite)
    }

    /// Whether the pattern issues trims.
    pub fn does_trim(self) -> bool {
        matches!(self, Rw::Trim | Rw::RandTrim | Rw::TrimWrite)
    }
}

/// A byte quantity that may depend on the device size (`size`, `offset`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Extent {
    /// An absolute number of bytes.
    Bytes(u64),
    /// A percentage of the device, in `(0, 100]` for `size` and `[0, 100)`
    /// for `offset`.
    Percent(f64),
    /// The whole device (fio's behaviour when `size` is absent or 0).
    Whole,
}

/// How random offsets are drawn (fio `random_distribution=`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Distribution {
    /// Uniform.
    Random,
    /// Zipf with this theta (finite, > 0, != 1).
    Zipf(f64),
    /// Pareto with this power h, in (0, 1).
    Pareto(f64),
}

/// One job, with `[global]` defaults and fio defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// `name=`, else the section name.
    pub name: String,
    /// I/O pattern.
    pub rw: Rw,
    /// Block size in bytes (>= 1).
    pub bs: u64,
    /// Queue depth (>= 1).
    pub iodepth: u32,
    /// Region length: bytes, percent of the device, or the whole device.
    pub size: Extent,
    /// Region start: bytes or percent of the device.
    pub offset: Extent,
    /// `runtime` in nanoseconds; `None` when unset or 0 (no limit).
    pub runtime_ns: Option<u64>,
    /// Keep looping over the region until `runtime` expires.
    pub time_based: bool,
    /// Bytes of I/O to issue (may exceed the region); `None` when unset or 0.
    pub io_size: Option<u64>,
    /// Stop after this many I/Os; `None` when unset or 0.
    pub number_ios: Option<u64>,
    /// Percentage of mixed I/O that is reads (writes are `100 - rwmixread`).
    pub rwmixread: u8,
    /// Target compressibility of written buffers, 0-100 (0 = unset).
    pub compress_pct: u8,
    /// Granularity of the random/fixed regions in bytes (0 resolved to `bs`).
    pub compress_chunk: u64,
    /// Percentage of written buffers that duplicate earlier ones, 0-100.
    pub dedupe_pct: u8,
    /// Regenerate buffer contents on every submit, including when fio turns
    /// it on implicitly (see module docs).
    pub refill_buffers: bool,
    /// Offset distribution for random patterns.
    pub distribution: Distribution,
    /// Explicit `randseed`, if any.
    pub randseed: Option<u64>,
    /// Wait for all earlier jobs to finish before starting.
    pub stonewall: bool,
    /// `ioengine=` as written. Recorded only; the model has one engine.
    pub ioengine: Option<String>,
    /// `filename=` as written. Recorded only; the target is the model drive.
    pub filename: Option<String>,
    /// `direct=`. Recorded only; the model has no page cache.
    pub direct: bool,
    /// `group_reporting`. Recorded only.
    pub group_reporting: bool,
    /// 1-based line of the job's section header.
    pub line: usize,
}

impl Job {
    /// Bytes denoted by `e` on a device of `device_bytes` bytes, before any
    /// alignment. Percentages round down and never exceed the device.
    pub fn resolve_bytes(&self, e: &Extent, device_bytes: u64) -> u64 {
        match *e {
            Extent::Bytes(b) => b,
            Extent::Whole => device_bytes,
            // `as` saturates; p <= 100 keeps the result within the device.
            Extent::Percent(p) => ((device_bytes as f64 * p / 100.0) as u64).min(device_bytes),
        }
    }

    /// The byte range this job works in on a device of `device_bytes` bytes.
    ///
    /// A percentage `offset` is aligned up to `bs` (HOWTO `offset_align`
    /// default). A whole-device `size` runs from the offset to the end of
    /// the device. The range is clamped to the device.
    pub fn region(&self, device_bytes: u64) -> Range<u64> {
        let raw = self.resolve_bytes(&self.offset, device_bytes);
        let start = match self.offset {
            Extent::Percent(_) => raw.div_ceil(self.bs).saturating_mul(self.bs),
            _ => raw,
        }
        .min(device_bytes);
        let len = match self.size {
            Extent::Whole => device_bytes - start,
            size => self.resolve_bytes(&size, device_bytes),
        };
        start..start.saturating_add(len).min(device_bytes)
    }
}

/// Parse a fio job file (see the module docs for the accepted subset).
pub fn parse(text: &str) -> Result<JobFile, FioError> {
    let mut drive = Vec::new();
    let mut jobs: Vec<Job> = Vec::new();
    let mut global = Builder::default();
    let mut section = Section::None;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        let content = raw.find([';', '#']).map_or(raw, |cut| &raw[..cut]).trim();
        if content.is_empty() {
            continue;
        }
        if content.starts_with('[') {
            finish(std::mem::replace(&mut section, Section::None), &mut jobs)?;
            section = match section_name(content, line)? {
                "global" => Section::Global,
                "drive" => Section::Drive,
                name => Section::Job { name: name.to_string(), line, builder: Box::new(global.clone()) },
            };
            continue;
        }
        let (key, value) = split_option(content, line)?;
        match &mut section {
            Section::None => return Err(FioError::KeyOutsideSection { key: key.to_string(), line }),
            Section::Global => global.apply(key, value, line, true)?,
            Section::Job { builder, .. } => builder.apply(key, value, line, false)?,
            Section::Drive => match value {
                Some(v) if !v.is_empty() => {
                    drive.push(DriveSetting { key: key.to_string(), value: v.to_string(), line })
                }
                _ => {
                    return Err(FioError::Syntax {
                        line,
                        reason: format!("expected key=value with a non-empty value in [drive], found '{content}'"),
                    })
                }
            },
        }
    }
    finish(section, &mut jobs)?;
    if jobs.is_empty() {
        return Err(FioError::NoJobs);
    }
    Ok(JobFile { drive, jobs })
}

/// The section whose lines are being read.
enum Section {
    None,
    Global,
    Drive,
    Job { name: String, line: usize, builder: Box<Builder> },
}

/// Finalise the job section `section` (if it is one) and append it.
fn finish(section: Section, jobs: &mut Vec<Job>) -> Result<(), FioError> {
    let Section::Job { name, line, builder } = section else {
        return Ok(());
    };
    let job = builder.build(name, line)?;
    if let Some(first) = jobs.iter().find(|j| j.name == job.name) {
        return Err(FioError::DuplicateJob { name: job.name, line, first_line: first.line });
    }
    jobs.push(job);
    Ok(())
}

/// The name inside a `[name]` header line (already comment-stripped).
fn section_name(content: &str, line: usize) -> Result<&str, FioError> {
    let bad = |reason: &str| FioError::BadSection { line, reason: format!("{reason} in '{content}'") };
    let inner = content.strip_prefix('[').and_then(|s| s.strip_suffix(']')).ok_or_else(|| bad("missing ']' at end"))?;
    if inner.contains(['[', ']']) {
        return Err(bad("stray bracket"));
    }
    match inner.trim() {
        "" => Err(bad("empty section name")),
        name => Ok(name),
    }
}

/// Split an option line into key and optional value, both trimmed.
fn split_option(content: &str, line: usize) -> Result<(&str, Option<&str>), FioError> {
    let (key, value) = match content.split_once('=') {
        Some((k, v)) => (k.trim(), Some(v.trim())),
        None => (content, None),
    };
    if key.is_empty() {
        return Err(FioError::Syntax { line, reason: format!("missing option name before '=' in '{content}'") });
    }
    // fio's `include file` directive is a bare line with a space.
    match key.split_once(char::is_whitespace) {
        Some(("include", _)) => Err(FioError::UnsupportedKey { key: "include".to_string(), line }),
        _ => Ok((key, value)),
    }
}

/// A supported option, aliases folded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    Name,
    Rw,
    Bs,
    Iodepth,
    Size,
    Offset,
    Runtime,
    TimeBased,
    IoSize,
    NumberIos,
    RwmixRead,
    RwmixWrite,
    CompressPct,
    CompressChunk,
    DedupePct,
    RefillBuffers,
    Distribution,
    Randseed,
    Stonewall,
    Ioengine,
    Filename,
    Direct,
    GroupReporting,
    Numjobs,
}

impl Key {
    /// The option spelled `key`, if supported (case-sensitive, as in fio).
    fn from_name(key: &str) -> Option<Key> {
        Some(match key {
            "name" => Key::Name,
            "rw" | "readwrite" => Key::Rw,
            "bs" => Key::Bs,
            "iodepth" => Key::Iodepth,
            "size" => Key::Size,
            "offset" => Key::Offset,
            "runtime" => Key::Runtime,
            "time_based" => Key::TimeBased,
            "io_size" | "io_limit" => Key::IoSize,
            "number_ios" => Key::NumberIos,
            "rwmixread" => Key::RwmixRead,
            "rwmixwrite" => Key::RwmixWrite,
            "buffer_compress_percentage" => Key::CompressPct,
            "buffer_compress_chunk" => Key::CompressChunk,
            "dedupe_percentage" => Key::DedupePct,
            "refill_buffers" => Key::RefillBuffers,
            "random_distribution" => Key::Distribution,
            "randseed" => Key::Randseed,
            "stonewall" | "wait_for_previous" => Key::Stonewall,
            "ioengine" => Key::Ioengine,
            "filename" => Key::Filename,
            "direct" => Key::Direct,
            "group_reporting" => Key::GroupReporting,
            "numjobs" => Key::Numjobs,
            _ => return None,
        })
    }
}

/// Where an option got its current value: the key as written, the value
/// and its line (used for errors found only once the job is complete).
#[derive(Clone)]
struct Origin {
    key: String,
    value: String,
    line: usize,
}

/// A job under construction: fio defaults, then `[global]`, then its own lines.
#[derive(Clone)]
struct Builder {
    job: Job,
    name: Option<String>,
    refill_explicit: bool,
    origins: HashMap<Key, Origin>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            job: Job {
                name: String::new(),
                rw: Rw::Read,
                bs: 4096,
                iodepth: 1,
                size: Extent::Whole,
                offset: Extent::Bytes(0),
                runtime_ns: None,
                time_based: false,
                io_size: None,
                number_ios: None,
                rwmixread: 50,
                compress_pct: 0,
                compress_chunk: 512,
                dedupe_pct: 0,
                refill_buffers: false,
                distribution: Distribution::Random,
                randseed: None,
                stonewall: false,
                ioengine: None,
                filename: None,
                direct: false,
                group_reporting: false,
                line: 0,
            },
            name: None,
            refill_explicit: false,
            origins: HashMap::new(),
        }
    }
}

impl Builder {
    /// Apply one option line.
    fn apply(&mut self, key: &str, value: Option<&str>, line: usize, in_global: bool) -> Result<(), FioError> {
        let canon = Key::from_name(key).ok_or_else(|| FioError::UnsupportedKey { key: key.to_string(), line })?;
        let bad = |reason: String| FioError::BadValue {
            key: key.to_string(),
            value: value.unwrap_or("").to_string(),
            line,
            reason,
        };
        if value.is_some_and(|v| v.contains("${")) {
            return Err(bad("environment variable expansion (${VAR}) is not supported".to_string()));
        }
        let required = || value.ok_or_else(|| bad("this option requires a value".to_string()));
        let job = &mut self.job;
        match canon {
            Key::TimeBased => job.time_based = parse_flag(value).map_err(bad)?,
            Key::Stonewall => job.stonewall = parse_flag(value).map_err(bad)?,
            Key::GroupReporting => job.group_reporting = parse_flag(value).map_err(bad)?,
            Key::RefillBuffers => {
                job.refill_buffers = parse_flag(value).map_err(bad)?;
                self.refill_explicit = true;
            }
            Key::Direct => job.direct = parse_flag(Some(required()?)).map_err(bad)?,
            Key::Name if in_global => return Err(bad("a job name cannot be set in [global]".to_string())),
            Key::Name => self.name = Some(non_empty(required()?).map_err(bad)?),
            Key::Ioengine => job.ioengine = Some(non_empty(required()?).map_err(bad)?),
            Key::Filename => job.filename = Some(non_empty(required()?).map_err(bad)?),
            Key::Rw => job.rw = parse_rw(required()?).map_err(bad)?,
            Key::Bs => job.bs = parse_bs(required()?).map_err(bad)?,
            Key::Iodepth => job.iodepth = parse_iodepth(required()?).map_err(bad)?,
            Key::Size => job.size = parse_size(required()?).map_err(bad)?,
            Key::Offset => job.offset = parse_offset(required()?).map_err(bad)?,
            Key::Runtime => job.runtime_ns = Some(parse_time_ns(required()?).map_err(bad)?).filter(|&ns| ns > 0),
            Key::IoSize => job.io_size = Some(parse_int(required()?).map_err(bad)?).filter(|&n| n > 0),
            Key::NumberIos => job.number_ios = Some(parse_int(required()?).map_err(bad)?).filter(|&n| n > 0),
            Key::Randseed => job.randseed = Some(parse_int(required()?).map_err(bad)?),
            Key::RwmixRead => job.rwmixread = parse_pct(required()?).map_err(bad)?,
            Key::RwmixWrite => job.rwmixread = 100 - parse_pct(required()?).map_err(bad)?,
            Key::CompressPct => job.compress_pct = parse_pct(required()?).map_err(bad)?,
            Key::CompressChunk => job.compress_chunk = parse_int(required()?).map_err(bad)?,
            Key::DedupePct => {
                job.dedupe_pct = parse_pct(required()?).map_err(bad)?;
                // fio's str_dedupe_cb turns refill_buffers on.
                job.refill_buffers = true;
            }
            Key::Distribution => job.distribution = parse_distribution(required()?).map_err(bad)?,
            Key::Numjobs => match parse_int(required()?).map_err(bad)? {
                1 => {}
                _ => return Err(bad("only numjobs=1 is supported: each job section models one worker".to_string())),
            },
        }
        self.origins.insert(canon, Origin { key: key.to_string(), value: value.unwrap_or("").to_string(), line });
        Ok(())
    }

    /// Resolve implied settings and cross-option checks into the final job.
    fn build(self, section: String, line: usize) -> Result<Job, FioError> {
        let Builder { mut job, name, refill_explicit, origins } = self;
        // Every non-default value has an origin; fall back to the header line.
        let bad_at = |k: Key, reason: String| match origins.get(&k) {
            Some(o) => FioError::BadValue { key: o.key.clone(), value: o.value.clone(), line: o.line, reason },
            None => FioError::BadValue { key: format!("{k:?}"), value: String::new(), line, reason },
        };
        if job.time_based && job.runtime_ns.is_none() {
            return Err(bad_at(Key::TimeBased, "time_based requires a non-zero runtime".to_string()));
        }
        if let Extent::Bytes(size) = job.size {
            if size < job.bs {
                let reason = format!("size ({size} bytes) is smaller than the block size ({} bytes)", job.bs);
                return Err(bad_at(Key::Size, reason));
            }
        }
        if job.compress_chunk == 0 {
            job.compress_chunk = job.bs;
        }
        if (1..100).contains(&job.compress_pct) && !refill_explicit {
            job.refill_buffers = true;
        }
        job.name = name.unwrap_or(section);
        job.line = line;
        Ok(job)
    }
}

/// A number with fio's size suffix semantics, or a percentage.
enum Quantity {
    Bytes(u64),
    Percent(f64),
}

/// Parse an fio integer / size: decimal with optional suffix, `0x` hex, or `N%`.
fn parse_quantity(s: &str) -> Result<Quantity, String> {
    if s.is_empty() {
        return Err("empty value".to_string());
    }
    if s.starts_with('(') {
        return Err("arithmetic expressions are not supported".to_string());
    }
    if s.starts_with('$') {
        return Err("fio keywords such as $mb_memory are not supported".to_string());
    }
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("expected hexadecimal digits after '0x' (no suffix allowed)".to_string());
        }
        return u64::from_str_radix(hex, 16).map(Quantity::Bytes).map_err(|_| "value does not fit in 64 bits".into());
    }
    let (int_part, rest) = split_digits(s);
    if int_part.is_empty() {
        return Err("expected a non-negative number".to_string());
    }
    let (number, suffix, fractional) = match rest.strip_prefix('.') {
        Some(after) => {
            let (frac, suffix) = split_digits(after);
            if frac.is_empty() {
                return Err("malformed number".to_string());
            }
            (&s[..int_part.len() + 1 + frac.len()], suffix, true)
        }
        None => (int_part, rest, false),
    };
    let suffix_lc = suffix.to_ascii_lowercase();
    if suffix_lc == "%" {
        return number.parse().map(Quantity::Percent).map_err(|_| "malformed percentage".to_string());
    }
    if fractional {
        return Err("fractional values are not supported (fio would truncate them)".to_string());
    }
    let mult = size_multiplier(&suffix_lc).ok_or_else(|| {
        format!(
            "unknown size suffix '{suffix}' (expected k, m, g, t, p optionally followed by b or i (powers of 1024), \
             kib..pib (powers of 1000, fio's kb_base=1024 convention), b, or %)"
        )
    })?;
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .map(Quantity::Bytes)
        .ok_or_else(|| "value does not fit in 64 bits".to_string())
}

/// Split `s` into its leading ASCII digits and the rest.
fn split_digits(s: &str) -> (&str, &str) {
    s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()))
}

/// Multiplier for a lower-cased size suffix (fio parse.c `__get_mult_bytes`
/// with the default kb_base=1024).
fn size_multiplier(suffix: &str) -> Option<u64> {
    if suffix.is_empty() || suffix == "b" {
        return Some(1);
    }
    let mut chars = suffix.chars();
    let power = match chars.next()? {
        'k' => 1,
        'm' => 2,
        'g' => 3,
        't' => 4,
        'p' => 5,
        _ => return None,
    };
    let base: u64 = match chars.as_str() {
        "" | "b" | "i" => 1024,
        "ib" => 1000,
        _ => return None,
    };
    Some(base.pow(power))
}

/// An integer option (fio `int`): suffixes allowed, percentages not.
fn parse_int(s: &str) -> Result<u64, String> {
    match parse_quantity(s)? {
        Quantity::Bytes(n) => Ok(n),
        Quantity::Percent(_) => Err("a percentage is not accepted for this option".to_string()),
    }
}

/// An integer percentage in 0..=100.
fn parse_pct(s: &str) -> Result<u8, String> {
    match parse_int(s)? {
        n @ 0..=100 => Ok(n as u8),
        _ => Err("must be between 0 and 100".to_string()),
    }
}

fn parse_bs(s: &str) -> Result<u64, String> {
    if s.contains([',', ':', '-', '/']) {
        return Err("per-direction block sizes and block size ranges are not supported; give one size".to_string());
    }
    match parse_int(s)? {
        0 => Err("block size must be at least 1 byte".to_string()),
        n => Ok(n),
    }
}

fn parse_iodepth(s: &str) -> Result<u32, String> {
    match u32::try_from(parse_int(s)?) {
        Ok(0) => Err("iodepth must be at least 1".to_string()),
        Ok(n) => Ok(n),
        Err(_) => Err("iodepth does not fit in 32 bits".to_string()),
    }
}

fn parse_size(s: &str) -> Result<Extent, String> {
    match parse_quantity(s)? {
        Quantity::Bytes(0) => Ok(Extent::Whole),
        Quantity::Bytes(n) => Ok(Extent::Bytes(n)),
        Quantity::Percent(p) if p > 0.0 && p <= 100.0 => Ok(Extent::Percent(p)),
        Quantity::Percent(_) => Err("a size percentage must be greater than 0 and at most 100".to_string()),
    }
}

fn parse_offset(s: &str) -> Result<Extent, String> {
    match parse_quantity(s)? {
        Quantity::Bytes(n) => Ok(Extent::Bytes(n)),
        Quantity::Percent(p) if p < 100.0 => Ok(Extent::Percent(p)),
        Quantity::Percent(_) => Err("an offset percentage must be below 100".to_string()),
    }
}

/// A time in nanoseconds; seconds when no unit is given (fio `time`).
fn parse_time_ns(s: &str) -> Result<u64, String> {
    let (number, suffix) = split_digits(s);
    if number.is_empty() {
        return Err("expected a non-negative whole number with an optional unit".to_string());
    }
    const S: u64 = 1_000_000_000;
    let unit = match suffix.to_ascii_lowercase().as_str() {
        "" | "s" | "sec" => S,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "m" => 60 * S,
        "h" => 3600 * S,
        "d" => 86_400 * S,
        _ => return Err(format!("unknown time unit '{suffix}' (expected us, ms, s, m, h or d; default s)")),
    };
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(unit))
        .ok_or_else(|| "time does not fit in 64-bit nanoseconds".to_string())
}

/// A boolean: absent (bare key) or `1` is true, `0` is false.
fn parse_flag(value: Option<&str>) -> Result<bool, String> {
    match value {
        None | Some("1") => Ok(true),
        Some("0") => Ok(false),
        Some(_) => Err("expected 0 or 1".to_string()),
    }
}

fn non_empty(s: &str) -> Result<String, String> {
    if s.is_empty() {
        Err("this option requires a value".to_string())
    } else {
        Ok(s.to_string())
    }
}

/// fio `rw=` spellings this model runs.
const RW_VALUES: &[(&str, Rw)] = &[
    ("read", Rw::Read),
    ("write", Rw::Write),
    ("randread", Rw::RandRead),
    ("randwrite", Rw::RandWrite),
    ("randrw", Rw::RandRw),
    ("rw", Rw::SeqRw),
    ("readwrite", Rw::SeqRw),
    ("trim", Rw::Trim),
    ("randtrim", Rw::RandTrim),
    ("trimwrite", Rw::TrimWrite),
];

fn parse_rw(s: &str) -> Result<Rw, String> {
    let lookup = |v: &str| RW_VALUES.iter().find(|(name, _)| *name == v).map(|&(_, rw)| rw);
    if let Some(rw) = lookup(s) {
        return Ok(rw);
    }
    let names = RW_VALUES.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ");
    match s.split_once(':') {
        Some((base, _)) if lookup(base).is_some() => Err("the ':<nr>' offset modifier is not supported".to_string()),
        _ if matches!(s, "randtrimwrite" | "filecreate" | "filestat" | "filedelete") => {
            Err(format!("fio pattern '{s}' is not supported by this model (supported: {names})"))
        }
        _ => Err(format!("unknown I/O pattern (expected one of: {names})")),
    }
}

fn parse_distribution(s: &str) -> Result<Distribution, String> {
    let (kind, param) = match s.split_once(':') {
        Some((k, p)) => (k, Some(p)),
        None => (s, None),
    };
    let float = |p: &str| -> Result<f64, String> {
        if p.contains(':') {
            return Err("a distribution centre (second parameter) is not supported".to_string());
        }
        p.parse::<f64>().ok().filter(|f| f.is_finite()).ok_or_else(|| format!("'{p}' is not a finite number"))
    };
    match kind {
        "random" if param.is_none() => Ok(Distribution::Random),
        "random" => Err("'random' takes no parameter".to_string()),
        "zipf" => match param.map(float).transpose()?.unwrap_or(1.1) {
            theta if theta > 0.0 && theta != 1.0 => Ok(Distribution::Zipf(theta)),
            _ => Err("zipf theta must be greater than 0 and different from 1.0".to_string()),
        },
        "pareto" => match param.map(float).transpose()?.unwrap_or(0.2) {
            h if h > 0.0 && h < 1.0 => Ok(Distribution::Pareto(h)),
            _ => Err("pareto h must be between 0 and 1 (exclusive)".to_string()),
        },
        k if matches!(k, "normal" | "gauss") || k.starts_with("zoned") => {
            Err(format!("distribution '{k}' is not supported (supported: random, zipf[:theta], pareto[:h])"))
        }
        _ => Err("unknown distribution (supported: random, zipf[:theta], pareto[:h])".to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    fn job(text: &str) -> Job {
        let mut file = parse(text).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.jobs.len(), 1);
        file.jobs.remove(0)
    }

    fn err(text: &str) -> FioError {
        parse(text).expect_err("expected a parse error")
    }

    fn bad_value_line(text: &str) -> (String, usize, String) {
        match err(text) {
            FioError::BadValue { key, line, reason, .. } => (key, line, reason),
            other => panic!("expected BadValue, got {other:?}"),
        }
    }

    #[test]
    fn realistic_file_with_global_inheritance_and_drive_section() {
        let text = "\
; SandForce-style endurance test
[drive]
preset = sf2281-240g
capacity=64GiB   ; trailing comment
seed=7

[global]
ioengine=libaio
direct=1
bs=4k
iodepth = 32
size=80%
randseed=0x1234
group_reporting
filename=/dev/nvme0n1

# first: fill sequentially
[precondition]
rw=write
bs=128k
buffer_compress_percentage=50
buffer_compress_chunk=4k
dedupe_percentage=20

[steady]
stonewall
rw=randrw
rwmixread=70
random_distribution=zipf:1.2
runtime=2m
time_based
offset=10%
io_size=10g
number_ios=1000000
refill_buffers=0
numjobs=1

[trimmer]
wait_for_previous=1
name=trim-pass
readwrite=randtrim
random_distribution=pareto:0.3
size=1g
offset=4096
";
        let file = parse(text).unwrap();
        let drive: Vec<_> = file.drive.iter().map(|d| (d.key.as_str(), d.value.as_str(), d.line)).collect();
        assert_eq!(drive, [("preset", "sf2281-240g", 3), ("capacity", "64GiB", 4), ("seed", "7", 5)]);
        assert_eq!(file.jobs.len(), 3);

        let pre = &file.jobs[0];
        assert_eq!((pre.name.as_str(), pre.line, pre.rw), ("precondition", 18, Rw::Write));
        assert_eq!((pre.bs, pre.iodepth, pre.size), (128 * 1024, 32, Extent::Percent(80.0)));
        assert_eq!((pre.compress_pct, pre.compress_chunk, pre.dedupe_pct), (50, 4096, 20));
        assert!(pre.refill_buffers, "implied by compress 50% and dedupe");
        assert_eq!(pre.ioengine.as_deref(), Some("libaio"));
        assert_eq!(pre.filename.as_deref(), Some("/dev/nvme0n1"));
        assert!(pre.direct && pre.group_reporting && !pre.stonewall);
        assert_eq!(pre.randseed, Some(0x1234));
        assert_eq!(pre.distribution, Distribution::Random);

        let steady = &file.jobs[1];
        assert_eq!((steady.rw, steady.rwmixread, steady.bs), (Rw::RandRw, 70, 4096));
        assert_eq!(steady.distribution, Distribution::Zipf(1.2));
        assert_eq!(steady.runtime_ns, Some(120_000_000_000));
        assert!(steady.time_based && steady.stonewall && !steady.refill_buffers);
        assert_eq!(
            (steady.offset, steady.io_size, steady.number_ios),
            (Extent::Percent(10.0), Some(10 * GIB), Some(1_000_000))
        );
        assert_eq!((steady.compress_pct, steady.compress_chunk), (0, 512));

        let trim = &file.jobs[2];
        assert_eq!((trim.name.as_str(), trim.rw, trim.line), ("trim-pass", Rw::RandTrim, 38));
        assert!(trim.stonewall);
        assert_eq!(trim.distribution, Distribution::Pareto(0.3));
        assert_eq!((trim.size, trim.offset), (Extent::Bytes(GIB), Extent::Bytes(4096)));
    }

    #[test]
    fn defaults_match_fio() {
        let j = job("[only]\n");
        let expected = Job {
            name: "only".to_string(),
            rw: Rw::Read,
            bs: 4096,
            iodepth: 1,
            size: Extent::Whole,
            offset: Extent::Bytes(0),
            runtime_ns: None,
            time_based: false,
            io_size: None,
            number_ios: None,
            rwmixread: 50,
            compress_pct: 0,
            compress_chunk: 512,
            dedupe_pct: 0,
            refill_buffers: false,
            distribution: Distribution::Random,
            randseed: None,
            stonewall: false,
            ioengine: None,
            filename: None,
            direct: false,
            group_reporting: false,
            line: 1,
        };
        assert_eq!(j, expected);
    }

    #[test]
    fn later_global_overrides_only_subsequent_jobs_and_accumulates() {
        let file = parse("[global]\nbs=8k\niodepth=4\n[a]\n[global]\nbs=16k\n[b]\n[c]\nbs=1k\n").unwrap();
        let got: Vec<_> = file.jobs.iter().map(|j| (j.name.as_str(), j.bs, j.iodepth)).collect();
        assert_eq!(got, [("a", 8192, 4), ("b", 16384, 4), ("c", 1024, 4)]);
    }

    #[test]
    fn size_suffixes_follow_fio_kb_base_1024() {
        let cases: &[(&str, u64)] = &[
            ("4096", 4096),
            ("4096b", 4096),
            ("4096B", 4096),
            ("4k", 4096),
            ("4K", 4096),
            ("4kb", 4096),
            ("4KB", 4096),
            ("4ki", 4096),
            ("4Ki", 4096),
            ("4KiB", 4000),
            ("4kib", 4000),
            ("1m", 1 << 20),
            ("1MB", 1 << 20),
            ("1MiB", 1_000_000),
            ("1g", 1 << 30),
            ("1GiB", 1_000_000_000),
            ("2t", 2 << 40),
            ("1TiB", 1_000_000_000_000),
            ("1p", 1 << 50),
            ("1pib", 1_000_000_000_000_000),
            ("0x1000", 4096),
            ("0X10", 16),
        ];
        for &(text, bytes) in cases {
            assert_eq!(job(&format!("[j]\nbs={text}\nsize=1p\n")).bs, bytes, "bs={text}");
        }
        for text in [
            "4x",
            "1.5k",
            "",
            "-1",
            "k",
            "(4*1024)",
            "$pagesize",
            "4 k",
            "0x",
            "0x1k",
            "20000p",
            "99999999999999999999",
        ] {
            let (key, line, reason) = bad_value_line(&format!("[j]\nbs={text}\n"));
            assert_eq!((key.as_str(), line), ("bs", 2), "bs={text}: {reason}");
        }
        assert!(bad_value_line("[j]\nbs=4k,8k\n").2.contains("per-direction"));
        assert!(bad_value_line("[j]\nbs=4k-16k\n").2.contains("ranges"));
        assert!(bad_value_line("[j]\nbs=0\n").2.contains("at least 1"));
    }

    #[test]
    fn percentages_and_region_resolution() {
        let j = job("[j]\nbs=4k\nsize=50%\noffset=10%\n");
        let dev = 1_000_000;
        assert_eq!(j.resolve_bytes(&j.size, dev), 500_000);
        assert_eq!(j.resolve_bytes(&j.offset, dev), 100_000);
        // Percentage offsets align up to bs: 100_000 -> 102_400.
        assert_eq!(j.region(dev), 102_400..602_400);
        // Clamped to the device.
        assert_eq!(job("[j]\nsize=100%\noffset=60%\n").region(dev), 602_112..1_000_000);
        assert_eq!(job("[j]\noffset=4096\n").region(dev), 4096..1_000_000);
        assert_eq!(job("[j]\nsize=12.5%\n").size, Extent::Percent(12.5));
        assert_eq!(job("[j]\nsize=0\n").size, Extent::Whole);
        assert_eq!(job("[j]\noffset=0%\n").offset, Extent::Percent(0.0));
        assert_eq!(job("[j]\nsize=8k\n").region(u64::MAX), 0..8192);
        for text in
            ["[j]\nsize=0%\n", "[j]\nsize=101%\n", "[j]\noffset=100%\n", "[j]\nio_size=50%\n", "[j]\nsize=5.%\n"]
        {
            assert_eq!(bad_value_line(text).1, 2, "{text}");
        }
    }

    #[test]
    fn runtime_units() {
        let cases: &[(&str, u64)] = &[
            ("30", 30_000_000_000),
            ("30s", 30_000_000_000),
            ("30sec", 30_000_000_000),
            ("2m", 120_000_000_000),
            ("2M", 120_000_000_000),
            ("500ms", 500_000_000),
            ("500msec", 500_000_000),
            ("10us", 10_000),
            ("1h", 3_600_000_000_000),
            ("1d", 86_400_000_000_000),
        ];
        for &(text, ns) in cases {
            assert_eq!(job(&format!("[j]\nruntime={text}\n")).runtime_ns, Some(ns), "runtime={text}");
        }
        assert_eq!(job("[j]\nruntime=0\n").runtime_ns, None);
        for text in ["1.5s", "5x", "min", "", "s", "-3", "999999999999d"] {
            assert_eq!(bad_value_line(&format!("[j]\nruntime={text}\n")).1, 2, "runtime={text}");
        }
    }

    #[test]
    fn implied_and_explicit_refill_and_rwmix() {
        assert!(!job("[j]\nbuffer_compress_percentage=100\n").refill_buffers);
        assert!(!job("[j]\nbuffer_compress_percentage=0\n").refill_buffers);
        assert!(job("[j]\nbuffer_compress_percentage=1\n").refill_buffers);
        assert!(!job("[j]\nrefill_buffers=0\nbuffer_compress_percentage=40\n").refill_buffers);
        assert!(job("[j]\nrefill_buffers\n").refill_buffers);
        assert!(job("[j]\ndedupe_percentage=0\n").refill_buffers);
        assert_eq!(job("[j]\nbs=64k\nbuffer_compress_chunk=0\n").compress_chunk, 65536);
        assert_eq!(job("[j]\nrwmixwrite=30\n").rwmixread, 70);
        assert_eq!(job("[j]\nrwmixread=10\nrwmixwrite=30\n").rwmixread, 70);
        assert_eq!(job("[global]\nrwmixwrite=30\n[j]\nrwmixread=10\n").rwmixread, 10);
        assert_eq!(job("[j]\nrandom_distribution=zipf\n").distribution, Distribution::Zipf(1.1));
        assert_eq!(job("[j]\nrandom_distribution=pareto\n").distribution, Distribution::Pareto(0.2));
    }

    #[test]
    fn rw_values_and_helpers() {
        for &(name, rw) in RW_VALUES {
            assert_eq!(job(&format!("[j]\nrw={name}\n")).rw, rw);
        }
        assert!(Rw::RandRw.is_random() && Rw::RandRw.does_read() && Rw::RandRw.does_write() && !Rw::RandRw.does_trim());
        assert!(!Rw::SeqRw.is_random() && Rw::SeqRw.does_read() && Rw::SeqRw.does_write());
        assert!(Rw::TrimWrite.does_trim() && Rw::TrimWrite.does_write() && !Rw::TrimWrite.does_read());
        assert!(!Rw::TrimWrite.is_random() && Rw::RandTrim.is_random() && Rw::RandTrim.does_trim());
        assert!(Rw::Read.does_read() && !Rw::Read.does_write() && !Rw::Write.does_read());
        assert!(bad_value_line("[j]\nrw=randread:8\n").2.contains("offset modifier"));
        assert!(bad_value_line("[j]\nrw=randtrimwrite\n").2.contains("not supported"));
        assert!(bad_value_line("[j]\nrw=READ\n").2.contains("unknown I/O pattern"));
    }

    #[test]
    fn unsupported_key_names_key_and_line_and_lists_supported() {
        let text = "[global]\nbs=4k\n\n[job]\nrw=write\n; comment\nverify_async=4\n";
        let e = err(text);
        assert_eq!(e, FioError::UnsupportedKey { key: "verify_async".to_string(), line: 7 });
        let msg = e.to_string();
        assert!(msg.starts_with("line 7: unsupported fio option 'verify_async' (supported: name, rw, readwrite, bs,"));
        assert!(msg.ends_with("group_reporting, numjobs)"), "{msg}");
        assert_eq!(err("[j]\ninclude other.fio\n"), FioError::UnsupportedKey { key: "include".to_string(), line: 2 });
        assert_eq!(err("[j]\nkb_base=1000\n"), FioError::UnsupportedKey { key: "kb_base".to_string(), line: 2 });
        assert_eq!(err("[j]\nBS=4k\n"), FioError::UnsupportedKey { key: "BS".to_string(), line: 2 });
        for key in SUPPORTED_KEYS {
            assert!(Key::from_name(key).is_some(), "{key}");
        }
    }

    #[test]
    fn bad_values_carry_key_and_line() {
        let cases: &[(&str, &str, usize, &str)] = &[
            ("[j]\n\niodepth=0\n", "iodepth", 3, "at least 1"),
            ("[j]\niodepth=5000000000\n", "iodepth", 2, "32 bits"),
            ("[j]\nrwmixread=101\n", "rwmixread", 2, "between 0 and 100"),
            ("[j]\ndedupe_percentage=200\n", "dedupe_percentage", 2, "between 0 and 100"),
            ("[j]\nbuffer_compress_percentage=50%\n", "buffer_compress_percentage", 2, "percentage"),
            ("[j]\nnumjobs=4\n", "numjobs", 2, "numjobs=1"),
            ("[j]\nrandom_distribution=normal\n", "random_distribution", 2, "not supported"),
            ("[j]\nrandom_distribution=gauss:5\n", "random_distribution", 2, "not supported"),
            ("[j]\nrandom_distribution=zoned:60/10:40/90\n", "random_distribution", 2, "not supported"),
            ("[j]\nrandom_distribution=zipf:1\n", "random_distribution", 2, "theta"),
            ("[j]\nrandom_distribution=zipf:1.2:0.25\n", "random_distribution", 2, "centre"),
            ("[j]\nrandom_distribution=pareto:1.5\n", "random_distribution", 2, "pareto"),
            ("[j]\nrandom_distribution=zipf:nan\n", "random_distribution", 2, "finite"),
            ("[j]\nrandom_distribution=random:3\n", "random_distribution", 2, "no parameter"),
            ("[j]\nrandom_distribution=uniform\n", "random_distribution", 2, "unknown"),
            ("[j]\ndirect\n", "direct", 2, "requires a value"),
            ("[j]\ndirect=yes\n", "direct", 2, "0 or 1"),
            ("[j]\ntime_based=2\n", "time_based", 2, "0 or 1"),
            ("[j]\nbs\n", "bs", 2, "requires a value"),
            ("[j]\nname=\n", "name", 2, "requires a value"),
            ("[global]\nname=x\n[j]\n", "name", 2, "[global]"),
            ("[j]\nsize=${SIZE}\n", "size", 2, "environment"),
            ("[j]\ntime_based\n", "time_based", 2, "runtime"),
            ("[global]\ntime_based\n[j]\nruntime=0\n", "time_based", 2, "runtime"),
            ("[j]\nbs=8k\nsize=4k\n", "size", 3, "smaller than the block size"),
        ];
        for &(text, key, line, needle) in cases {
            let (k, l, reason) = bad_value_line(text);
            assert_eq!((k.as_str(), l), (key, line), "{text:?}");
            assert!(reason.contains(needle), "{text:?}: {reason}");
        }
        let e = err("[j]\nbs=4q\n");
        assert!(e.to_string().starts_with("line 2: bad value '4q' for 'bs': unknown size suffix 'q'"), "{e}");
    }

    #[test]
    fn structural_errors() {
        assert_eq!(err("bs=4k\n[j]\n"), FioError::KeyOutsideSection { key: "bs".to_string(), line: 1 });
        assert_eq!(err("# c\n\ntime_based\n"), FioError::KeyOutsideSection { key: "time_based".to_string(), line: 3 });
        for (text, line) in [("[j]\n[]\n", 2), ("[j\n", 1), ("[a]b\n", 1), ("[a[b]]\n", 1), ("[   ]\n", 1)] {
            match err(text) {
                FioError::BadSection { line: l, .. } => assert_eq!(l, line, "{text:?}"),
                other => panic!("{text:?}: {other:?}"),
            }
        }
        assert_eq!(
            err("[j]\n= 4k\n"),
            FioError::Syntax { line: 2, reason: "missing option name before '=' in '= 4k'".to_string() }
        );
        assert!(matches!(err("[drive]\npreset\n[j]\n"), FioError::Syntax { line: 2, .. }));
        assert!(matches!(err("[drive]\npreset=\n[j]\n"), FioError::Syntax { line: 2, .. }));
        assert_eq!(
            err("[a]\nbs=4k\n[b]\n[a]\n"),
            FioError::DuplicateJob { name: "a".to_string(), line: 4, first_line: 1 }
        );
        assert_eq!(err("[a]\n[b]\nname=a\n"), FioError::DuplicateJob { name: "a".to_string(), line: 2, first_line: 1 });
        assert_eq!(err(""), FioError::NoJobs);
        assert_eq!(err("; only comments\n\n"), FioError::NoJobs);
        assert_eq!(err("[global]\nbs=4k\n[drive]\nseed=1\n"), FioError::NoJobs);
        assert!(FioError::NoJobs.to_string().contains("no job sections"));
    }

    #[test]
    fn comments_whitespace_and_line_endings() {
        let file =
            parse("\r\n  [ spaced name ]  # header comment\r\n\tbs = 8k ;x\r\n  time_based # on\r\nruntime=1\r\n")
                .unwrap();
        let j = &file.jobs[0];
        assert_eq!((j.name.as_str(), j.bs, j.time_based, j.line), ("spaced name", 8192, true, 2));
        // fio cuts values at ';' / '#', like its strip_blank_end.
        assert_eq!(job("[j]\nfilename=/dev/sda#1\n").filename.as_deref(), Some("/dev/sda"));
        assert_eq!(job("[j]\nname=a=b\n").name, "a=b");
    }

    /// xorshift64* so the fuzz test needs no extra crates and is reproducible.
    struct XorShift(u64);

    impl XorShift {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }

        fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
            items[(self.next() % items.len() as u64) as usize]
        }
    }

    #[test]
    fn random_input_never_panics() {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        for _ in 0..10_000 {
            let len = (rng.next() % 200) as usize;
            let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
            let _ = parse(&String::from_utf8_lossy(&bytes));
        }
        let fragments = [
            "[",
            "]",
            "[global]",
            "[drive]",
            "[job]",
            "[j2]",
            "=",
            " ",
            ";",
            "#",
            "%",
            ":",
            ",",
            "-",
            ".",
            "0x",
            "\n",
            "\r\n",
            "é",
            "\u{0}",
            "${X}",
            "(",
            "bs",
            "size",
            "offset",
            "runtime",
            "rw",
            "random_distribution",
            "zipf",
            "pareto",
            "normal",
            "randrw",
            "time_based",
            "numjobs",
            "name",
            "rwmixwrite",
            "io_size",
            "0",
            "1",
            "100",
            "4k",
            "4KiB",
            "18446744073709551615",
            "99999999999999999999",
            "1e309",
            "nan",
            "inf",
            "-0",
            "s",
            "ms",
            "m",
            "p",
            "pib",
            "include",
            "direct",
            "buffer_compress_chunk",
            "iodepth",
        ];
        for _ in 0..10_000 {
            let mut text = String::new();
            for _ in 0..rng.next() % 40 {
                text.push_str(rng.pick(&fragments));
            }
            if let Ok(file) = parse(&text) {
                for j in &file.jobs {
                    for dev in [0, 1, 4096, u64::MAX] {
                        let r = j.region(dev);
                        assert!(r.start <= r.end && r.end <= dev, "{text:?}");
                    }
                }
            }
        }
    }
}
