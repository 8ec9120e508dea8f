//! fio job files: a strict parser for the subset of fio's INI syntax and
//! options that the drive model can run.
//!
//! This module owns turning job-file text into typed [`Job`]s plus the raw
//! settings of a `[drive]` section ([`DriveSetting`]), and those into what
//! runs: [`JobFile::specs`] (one [`crate::workload::job::JobSpec`] per job)
//! and [`JobFile::apply_drive`] (the `[drive]` section over the command's
//! drive settings); it never runs anything. Entry point: [`parse`] (in
//! `parse.rs`; the conversion is in `convert.rs`). Every rejected input yields a
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
//! * `${NAME}` in an option line becomes the environment variable's value,
//!   or nothing when it is unset, as fio's `fio_option_dup_subs` does.
//! * Not supported: `include` directives, `$ncpus`-style keywords,
//!   `(arithmetic)` values.
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
//! | `rw` (`readwrite`) | [`Job::rw`], its `:<nr>` offset modifier and `rw_sequencer` in [`Job::sequence`] | `read`, none, `sequential` | I/O type |
//! | `bs` (`blocksize`) | [`Job::bs`], [`Job::block_sizes`] (per direction: `r[,w[,t]]`) | 4096 | Block size |
//! | `bsrange` (`blocksize_range`), `bssplit` | [`Job::block_sizes`] (per direction) | none | Block size |
//! | `blockalign` (`ba`) | [`Job::block_align`] (per direction; turns `norandommap` on) | each direction's smallest size | Block size |
//! | `iodepth` | [`Job::iodepth`] | 1 | I/O depth |
//! | `size` | [`Job::size`] | whole device | I/O size |
//! | `offset` | [`Job::offset`] | 0 | I/O type |
//! | `offset_increment` | [`Job::offset_increment`] | 0 | I/O type |
//! | `runtime` (`timeout`) | [`Job::runtime_ns`] | none (0 = no limit) | Time related parameters |
//! | `time_based` | [`Job::time_based`] | false | Time related parameters |
//! | `io_size` (`io_limit`) | [`Job::io_size`] | none | I/O size |
//! | `number_ios` | [`Job::number_ios`] | none (0 = no limit) | I/O type |
//! | `rwmixread`, `rwmixwrite` | [`Job::rwmixread`] | 50 | I/O type |
//! | `buffer_compress_percentage` | [`Job::compress_pct`] | 0 (unset) | Buffers and memory |
//! | `buffer_compress_chunk` | [`Job::compress_chunk`] | 512 (0 = bs) | Buffers and memory |
//! | `dedupe_percentage` | [`Job::dedupe_pct`] | 0 | Buffers and memory |
//! | `refill_buffers` | [`Job::refill_buffers`] | false | Buffers and memory |
//! | `buffer_pattern`, `zero_buffers`, `scramble_buffers`, `dedupe_mode`, `dedupe_working_set_percentage`, `dedupe_global` | [`Job::buffers`] (see `buffers.rs` for how fio resolves them) | zeros, false, true, `repeat`, 5, false | Buffers and memory |
//! | `random_distribution` | [`Job::distribution`] | `random` | I/O type |
//! | `write_hint` | [`Job::write_hint`] (`none`, `short`, `medium`, `long`, `extreme`: streams 0-4) | `none` | I/O type |
//! | `randseed` | [`Job::randseed`] | none (fio's own default is 0x89) | I/O type |
//! | `stonewall` (`wait_for_previous`) | [`Job::stonewall`] | false | Threads, processes and job synchronization |
//! | `name` | [`Job::name`] | section name | Job description |
//! | `numjobs` | [`Job::numjobs`] | 1 | Job description |
//! | `group_reporting` | [`Job::group_reporting`] | false | Measurements and reporting |
//! | `bwavgtime`, `iopsavgtime` | [`Job::timing`] (ms, at least 1) | 500 | Measurements and reporting |
//! | `ramp_time` | [`Job::timing`] (a time, as `runtime`) | none | Time related parameters |
//! | `startdelay` | [`Job::timing`] (a time; no range) | 0 | Time related parameters |
//! | `rate_iops`, `rate` | [`Job::timing`] (per direction: `r[,w[,t]]`, as `bs` in fio; bytes/s for `rate`) | no limit | I/O rate |
//! | `thinktime`, `thinktime_spin`, `thinktime_blocks`, `thinktime_blocks_type`, `thinktime_iotime` | [`Job::timing`] | none, 0, 1, `complete`, none | I/O rate |
//! | `ioengine`, `filename`, `direct` | recorded; a synchronous engine ([`SYNC_ENGINES`]) caps `iodepth` at 1, as in fio | | |
//! | `loops` | [`Job::loops`] | 1 | Threads, processes and job synchronization |
//! | `norandommap` | [`Job::norandommap`] | false (a random map: each pass touches every block once) | I/O type |
//! | `verify`, `do_verify`, `verify_interval`, `verify_offset`, `verify_pattern`, `verify_fatal`, `verify_only`, `verify_backlog`, `verify_backlog_batch` | [`Job::verify`] (see `verify.rs`; not `sha256`, `sha512`) | 0, true, the smallest write size, 0, none, false, false, 0, the backlog | Verification |
//! | `percentile_list`, `clat_percentiles`, `lat_percentiles` | [`Job::percentile_list`] (up to 20, `:`-separated), [`Job::clat_percentiles`], [`Job::lat_percentiles`] (values 0 or 1) | fio's 17, true, false | Measurements and reporting |
//! | [`IGNORED_KEYS`] (`randrepeat`, `thread`, ...) | accepted with one [`FioWarning`] each | | |
//!
//! fio behaviour kept from init.c `fixup_options` and the option callbacks:
//! `rwmixread` and `rwmixwrite` set each other (100 - x), so the later line
//! wins. `dedupe_percentage` turns `refill_buffers` on. A
//! `buffer_compress_percentage` from 1 to 99 turns it on too, unless
//! `refill_buffers` was given explicitly. Without `refill_buffers` a job
//! writes its `iodepth` buffers again, stamped per sector unless
//! `scramble_buffers=0` ([`Job::data`]), as fio does: on a deduplicating
//! drive that decides what is stored. `random_distribution=zipf` and
//! `pareto` without a parameter use fio's defaults (theta 1.1, h 0.2).
//! A zipf theta of 1.0 is rejected, and pareto h must be in (0, 1).
//!
//! # Groups and clones (fio HOWTO, "Threads, processes and job synchronization")
//!
//! As in fio, the jobs of a file run together, from the same moment, each
//! with its own queue of `iodepth` commands, until a job with `stonewall`
//! waits for all earlier jobs to finish and starts a new group (fio's
//! `groupid`). `numjobs=N` runs N clones of a job in its group, under its
//! name; clone k > 0 draws its offsets and data from its own seed, as fio
//! seeds each clone from its thread number. `group_reporting` on any job
//! of a group reports the group as one job ([`JobFile::plan`]).
//! `name=` in `[global]` is accepted with a warning and names no job: fio
//! (init.c `get_new_job`) names every job after its section header.
//!
//! As in fio (init.c `fixup_options`), `time_based` without a `runtime`
//! warns and is dropped: the job runs by size. A job without `io_size`
//! makes one pass over the whole blocks of its region; `loops` repeats
//! its passes, `io_size` or `number_ios`.
//!
//! Checks that are stricter than fio: a byte `size` smaller than `bs`
//! is an error (as in fio). Duplicate job section names in one file are
//! errors (fio allows them). I/O of more than [`MAX_DRIVE_PASSES`] passes over
//! the drive (`io_size`, or the region, times `loops`) is an error (fio runs
//! it at the drive's speed), and so is a
//! line longer than [`MAX_LINE_BYTES`] (fio splits it).
//!
//! Not supported, and rejected with an error: a range given to `bs`
//! (`bs=4k-16k`; fio's is `bsrange=`), a sequential offset modifier that is
//! not a multiple of `bs` or beside several block sizes, `rw=randtrimwrite` and the file* modes, `normal`/`gauss`/`zoned_abs`
//! distributions, per-direction zones and distribution centres
//! (`zipf:1.2:0.25`), `io_size`
//! percentages, `numjobs` above [`MAX_NUMJOBS`], and every option not listed above
//! or in [`IGNORED_KEYS`]. A byte `size` (plus `offset`) beyond the drive is
//! an error, not a clamp ([`JobFile::specs`]).

use thiserror::Error;

use crate::input::Shown;
pub use crate::workload::access::{Distribution, Rw};
use crate::workload::job::FioTiming;
use crate::workload::sequence::Sequence;
use crate::workload::sizes::SizeChoice;
pub use buffers::Buffers;
pub use cmdline::{is_option, takes_value, CommandLineJobs};
pub use convert::{memory_beside, Group, Member, DRIVE_KEYS};
pub use keys::IGNORED_KEYS;
pub use parse::{parse, parse_files};
pub use values::rw_name;
pub use verify::VerifyOptions;

mod block_sizes;
mod buffers;
mod cmdline;
mod convert;
mod keys;
mod parse;
#[cfg(test)]
mod tests;
mod values;
mod verify;

/// The largest job file read (1 MiB): fio's largest example job file is
/// 3.5 KB (`examples/cmdprio-bssplit.fio`) and a hand-written one a few
/// KB, so this leaves room for a generated file of thousands of jobs while
/// `/dev/zero` or a huge sparse file is refused after 1 MiB.
pub const MAX_JOB_FILE_BYTES: u64 = 1 << 20;

/// The longest line [`parse`] takes: fio reads a job file in lines of at
/// most 8192 bytes (`OPT_LEN_MAX` in its `parse.h`) and splits a longer
/// one; here it is refused.
pub const MAX_LINE_BYTES: usize = 8192;

/// The most I/O one job may ask for with `io_size`, in passes over the
/// drive: 1000. fio does whatever `io_size` says (HOWTO: "40GiB of I/O
/// within the 0..20GiB region"), which a real drive does at its own speed;
/// a simulated one costs wall time for every command, about 165,000 4 KiB
/// writes a second here, so 1000 passes over the default 1 GiB drive take
/// half an hour and `io_size=16T` on a 64 MiB drive would take seven hours.
/// The longest study here writes its drive 3 times.
pub const MAX_DRIVE_PASSES: u64 = 1000;

/// The longest `runtime`, `ramp_time` or `startdelay`, in simulated
/// minutes: about a week, as `torture --minutes` allows
/// (`crate::lab::torture::MAX_MINUTES` measures it). A `time_based` job
/// issues commands for all of it, and each costs wall time.
pub const MAX_JOB_MINUTES: u64 = 10_000;

/// The most clones `numjobs` may ask for: each clone keeps its own queue
/// and write batch in memory (fio's own limit is its thread count).
pub const MAX_NUMJOBS: u64 = 64;

/// Every option key [`parse`] accepts in a job or `[global]` section,
/// aliases included.
pub const SUPPORTED_KEYS: &[&str] = &[
    "name",
    "rw",
    "readwrite",
    "bs",
    "blocksize",
    "bsrange",
    "blocksize_range",
    "bssplit",
    "blockalign",
    "ba",
    "iodepth",
    "size",
    "offset",
    "offset_increment",
    "runtime",
    "timeout",
    "time_based",
    "io_size",
    "io_limit",
    "number_ios",
    "rwmixread",
    "rwmixwrite",
    "buffer_compress_percentage",
    "buffer_compress_chunk",
    "dedupe_percentage",
    "dedupe_mode",
    "dedupe_working_set_percentage",
    "dedupe_global",
    "refill_buffers",
    "buffer_pattern",
    "zero_buffers",
    "scramble_buffers",
    "random_distribution",
    "write_hint",
    "randseed",
    "stonewall",
    "wait_for_previous",
    "ioengine",
    "filename",
    "direct",
    "group_reporting",
    "numjobs",
    "bwavgtime",
    "iopsavgtime",
    "ramp_time",
    "startdelay",
    "rate_iops",
    "rate",
    "thinktime",
    "thinktime_spin",
    "thinktime_blocks",
    "thinktime_blocks_type",
    "thinktime_iotime",
    "loops",
    "norandommap",
    "rw_sequencer",
    "percentile_list",
    "clat_percentiles",
    "lat_percentiles",
    "verify",
    "do_verify",
    "verify_interval",
    "verify_offset",
    "verify_pattern",
    "verify_fatal",
    "verify_only",
    "verify_backlog",
    "verify_backlog_batch",
];

/// fio 3.33's engines that issue one command at a time (`FIO_SYNCIO`), for
/// block devices and files: a job with one keeps one command in flight,
/// whatever its `iodepth`, as fio caps it. fio's default engine, `psync`,
/// is one; without `ioengine` the model's own engine queues `iodepth`.
pub const SYNC_ENGINES: &[&str] =
    &["sync", "psync", "vsync", "pvsync", "pvsync2", "mmap", "splice", "sg", "libzbc", "ftruncate", "falloc"];

/// An option of [`IGNORED_KEYS`] a job file gave (the first line of each).
#[derive(Debug, Clone, PartialEq)]
pub struct FioWarning {
    /// The option.
    pub key: String,
    /// Its value as written (empty for a bare flag).
    pub value: String,
    /// 1-based line.
    pub line: usize,
    /// What becomes of it and why: ignored, or what it changes beside
    /// its own effect.
    pub reason: String,
}

impl std::fmt::Display for FioWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let opt = if self.value.is_empty() {
            Shown::new(&self.key).to_string()
        } else {
            format!("{}={}", Shown::new(&self.key), Shown::new(&self.value))
        };
        write!(f, "line {}: {opt}: {}", self.line, self.reason)
    }
}

/// ", did you mean 'K'?" for the known option closest to `key`, when one
/// is close enough to be a typo. A key more than twice as long as any
/// known one is no typo of one, and is not compared (the comparison's
/// cost grows with the key: a 50 MB key took 27 s).
fn did_you_mean(key: &str) -> String {
    let known = SUPPORTED_KEYS.iter().copied().chain(IGNORED_KEYS.iter().map(|(k, _)| *k));
    let longest = known.clone().map(str::len).max().unwrap_or(0);
    if key.len() > 2 * longest {
        return String::new();
    }
    // Jaro-Winkler ranks the candidates; a typo also keeps most of its
    // letters in place (edit distance), which a shared prefix alone does
    // not: buffer_pattern is no typo of buffered.
    known
        .map(|k| (strsim::jaro_winkler(key, k), k))
        .filter(|&(score, k)| score > 0.85 && strsim::normalized_damerau_levenshtein(key, k) >= 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map_or_else(String::new, |(_, k)| format!(", did you mean '{k}'?"))
}

/// A job file that cannot be turned into jobs. `line` is 1-based.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum FioError {
    /// An option this parser does not implement.
    #[error(
        "line {line}: unsupported fio option '{shown}'{hint} (implemented: {list}; accepted with a warning, as \
         meaningless for a simulated drive: {ignored})",
        shown = Shown::new(key),
        hint = did_you_mean(key),
        list = SUPPORTED_KEYS.join(", "),
        ignored = IGNORED_KEYS.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(", ")
    )]
    UnsupportedKey { key: String, line: usize },
    /// A supported option with a value it cannot take.
    #[error("line {line}: bad value '{}' for '{}': {reason}", Shown::new(value), Shown::new(key))]
    BadValue { key: String, value: String, line: usize, reason: String },
    /// An option line above the first `[section]` header.
    #[error("line {line}: option '{}' appears before any [section] header", Shown::new(key))]
    KeyOutsideSection { key: String, line: usize },
    /// A line starting with `[` that is not a well-formed `[name]` header.
    #[error("line {line}: malformed section header: {reason}")]
    BadSection { line: usize, reason: String },
    /// A line that is neither a header, an option nor a comment.
    #[error("line {line}: {reason}")]
    Syntax { line: usize, reason: String },
    /// Two jobs with the same (final) name.
    #[error("line {line}: duplicate job name '{}' (first defined at line {first_line})", Shown::new(name))]
    DuplicateJob { name: String, line: usize, first_line: usize },
    /// A `[drive]` setting that cannot apply (see [`JobFile::apply_drive`]).
    #[error("line {line}: [drive] {}: {reason}", Shown::new(key))]
    DriveSetting { key: String, line: usize, reason: String },
    /// A file without any job section.
    #[error("no job sections found: a job file needs at least one [job] section besides [global] and [drive]")]
    NoJobs,
    /// Job options on the command line that make no job file.
    #[error("{0}")]
    CommandLine(String),
    /// `--section` names a section the file does not have.
    #[error("--section={}: no such job section (the file has: {})", Shown::new(name), Shown::up_to(known, 200))]
    NoSection {
        /// The name asked for.
        name: String,
        /// The file's job sections.
        known: String,
    },
}

/// A parsed job file.
#[derive(Debug, Clone, PartialEq)]
pub struct JobFile {
    /// The `[drive]` section's settings, unvalidated and in file order.
    pub drive: Vec<DriveSetting>,
    /// The jobs, in file order.
    pub jobs: Vec<Job>,
    /// `[global]` options as written, in file order (fio's `global options`).
    pub global_options: Vec<(String, String)>,
    /// One per option the file gives that is ignored ([`IGNORED_KEYS`]) or
    /// that changes another (`blockalign` turns the random map off).
    pub warnings: Vec<FioWarning>,
    /// The job sections to run, by header name (fio's `--section`); empty
    /// runs every one. Set by [`JobFile::select`].
    pub sections: Vec<String>,
}

/// Where a job's option got its value.
#[derive(Debug, Clone, PartialEq)]
pub struct OptionLine {
    /// The key as written (an alias stays as written).
    pub key: String,
    /// The value as written (empty for a bare flag).
    pub value: String,
    /// 1-based line.
    pub line: usize,
}

impl OptionLine {
    /// The value refused for `reason`, at its line.
    pub fn bad(&self, reason: String) -> FioError {
        FioError::BadValue { key: self.key.clone(), value: self.value.clone(), line: self.line, reason }
    }
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

/// A byte quantity that may depend on the device size (`size`, `offset`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SizeSpec {
    /// An absolute number of bytes.
    Bytes(u64),
    /// A percentage of the device, in `(0, 100]` for `size` and `[0, 100)`
    /// for `offset`.
    Percent(f64),
    /// The whole device (fio's behaviour when `size` is absent or 0).
    Whole,
}

/// One job, with `[global]` defaults and fio defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    /// `name=`, else the section name.
    pub name: String,
    /// I/O pattern.
    pub rw: Rw,
    /// `rw`'s offset modifier (`rw=write:4k`, `rw=randread:8`) and
    /// `rw_sequencer`.
    pub sequence: Sequence,
    /// Block size in bytes (>= 1): the smallest of the directions the
    /// job issues, to which its random offsets align (fio's minimum bs).
    pub bs: u64,
    /// The sizes of reads, writes and TRIMs (`bs` per direction,
    /// `bsrange`, `bssplit`).
    pub block_sizes: [SizeChoice; 3],
    /// `blockalign` (`ba`): the boundary a random job's offsets fall on
    /// per direction; `None` for the direction's smallest size (fio's
    /// default, and always for a sequential job).
    pub block_align: [Option<u64>; 3],
    /// Queue depth (>= 1).
    pub iodepth: u32,
    /// Region length: bytes, percent of the device, or the whole device.
    pub size: SizeSpec,
    /// Region start: bytes or percent of the device.
    pub offset: SizeSpec,
    /// `offset_increment`: clone k of `numjobs` starts this much further
    /// in, k times (bytes or percent of the device; 0 by default).
    pub offset_increment: SizeSpec,
    /// `runtime` in nanoseconds; `None` when unset or 0 (no limit).
    pub runtime_ns: Option<u64>,
    /// Keep looping over the region until `runtime` expires.
    pub time_based: bool,
    /// `loops`: the job's I/O this many times over (1 or more): its
    /// passes, its `io_size` or its `number_ios` (fio repeats the job).
    pub loops: u32,
    /// `norandommap`: uniform random offsets drawn independently, so some
    /// come twice in a pass and others not at all. Without it (fio's
    /// default) a pass touches every block once; fio also turns the map
    /// off for every other `random_distribution`.
    pub norandommap: bool,
    /// `percentile_list`: the latency percentiles reported (fio's 17
    /// defaults when `None`).
    pub percentile_list: Option<Vec<f64>>,
    /// Decimals the text shows percentiles with: 2 for fio's list, else
    /// the most any of `percentile_list` is written with.
    pub percentile_precision: u8,
    /// `clat_percentiles`: completion latencies carry percentiles (fio's
    /// default, true).
    pub clat_percentiles: bool,
    /// `lat_percentiles`: total latencies carry them too (false).
    pub lat_percentiles: bool,
    /// Bytes of I/O to issue (may exceed the region); `None` when unset or 0.
    pub io_size: Option<u64>,
    /// Stop after this many I/Os; `None` when unset or 0. As in fio it
    /// only stops a job early, never past its `io_size` or region.
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
    /// `buffer_pattern`, `zero_buffers`, `scramble_buffers` and the dedupe
    /// mode, as set ([`Job::data`] resolves them).
    pub buffers: Buffers,
    /// `verify` and its options, resolved for the job's sizes.
    pub verify: VerifyOptions,
    /// Offset distribution for random patterns.
    pub distribution: Distribution,
    /// fio's `write_hint` as a write stream: `none` 0, `short` 1, `medium`
    /// 2, `long` 3, `extreme` 4 (Linux's `RWH_WRITE_LIFE_*` less one). The
    /// job's region is hinted with it while the job runs.
    pub write_hint: u8,
    /// Explicit `randseed`, if any.
    pub randseed: Option<u64>,
    /// Wait for all earlier jobs to finish before starting.
    pub stonewall: bool,
    /// `ioengine=` as written: the model has one engine, but a synchronous
    /// one ([`SYNC_ENGINES`]) caps [`Job::iodepth`] at 1, as in fio.
    pub ioengine: Option<String>,
    /// `filename=` as written. Recorded only; the target is the model drive.
    pub filename: Option<String>,
    /// `direct=`. Recorded only; the model has no page cache.
    pub direct: bool,
    /// `group_reporting`: the job's group is reported as one job.
    pub group_reporting: bool,
    /// `numjobs`: clones of the job that run together (1 to [`MAX_NUMJOBS`]).
    pub numjobs: u32,
    /// fio's timing of the job: `startdelay`, `rate_iops` and `rate` (the
    /// job then runs open loop), `ramp_time` (a warm-up before anything is
    /// counted), and `iopsavgtime` and `bwavgtime` (the windows of the IOPS
    /// and bandwidth samples in fio's JSON, 500 ms each).
    pub timing: FioTiming,
    /// The job section's own options as written, in order (fio's `job options`).
    pub options: Vec<(String, String)>,
    /// Where each option the file gave the job (its own or `[global]`'s)
    /// last got its value, in line order.
    pub set_at: Vec<OptionLine>,
    /// 1-based line of the job's section header.
    pub line: usize,
    /// Which of the job files given together the job came from (0 for the
    /// first): the first job run from each later file starts a new group.
    pub file: usize,
    /// The section header's name (fio's `--section` selects by it).
    pub section: String,
}
