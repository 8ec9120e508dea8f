//! The job-file parser: INI sections, `[global]` inheritance, option
//! values with fio's units, and the checks a finished job must pass (see
//! the [parent module](super) for the accepted subset).

use std::collections::HashMap;

use super::block_sizes::{parse_blockalign, parse_bs, parse_bsrange, parse_bssplit, BlockSizeOptions, DEFAULT_BS};
use super::buffers::Buffers;
use super::keys::Key;
use super::values::{
    expand_env, non_empty, parse_distribution, parse_flag, parse_int, parse_iodepth, parse_offset, parse_pattern,
    parse_pct, parse_per_direction, parse_rw_modifier, parse_size, parse_time_in, parse_time_ns, parse_write_hint,
};
use super::verify::VerifyOptions;
use super::{
    DriveSetting, FioError, FioWarning, Job, JobFile, OptionLine, SizeSpec, IGNORED_KEYS, MAX_LINE_BYTES, MAX_NUMJOBS,
    SYNC_ENGINES,
};
use crate::input::Shown;
use crate::workload::access::{Access, Distribution, Rw};
use crate::workload::job::FioTiming;
use crate::workload::sequence::Sequence;
use crate::workload::sizes::SizeChoice;

/// `bwavgtime` or `iopsavgtime`: a window of 1 ms or more (fio takes 0 too,
/// and then samples on every tick of its helper thread).
fn parse_avg_time(v: &str) -> Result<u32, String> {
    match parse_int(v)? {
        n @ 1..=0xFFFF_FFFF => Ok(n as u32),
        _ => Err("the sampling window must be 1 ms or more (up to 4294967295 ms)".into()),
    }
}

/// fio's `percentile_list`: up to 20 percentiles from 0 to 100, separated
/// by `:` (fio's `FIO_IO_U_LIST_MAX_LEN`), and the decimals its text shows
/// them with: the most any of them is written with (parse.c).
fn parse_percentile_list(v: &str) -> Result<(Vec<f64>, u8), String> {
    let list: Vec<f64> = v
        .split(':')
        .map(|p| match p.trim().parse::<f64>() {
            Ok(x) if (0.0..=100.0).contains(&x) => Ok(x),
            _ => Err(format!("'{}' is not a percentile from 0 to 100", Shown::new(p))),
        })
        .collect::<Result<_, _>>()?;
    if list.len() > 20 {
        return Err(format!("{} percentiles: fio takes at most 20", list.len()));
    }
    let decimals = |p: &str| p.split_once('.').map_or(0, |(_, d)| d.chars().take_while(char::is_ascii_digit).count());
    let precision = v.split(':').map(decimals).max().unwrap_or(0).min(9) as u8;
    Ok((list, precision))
}

/// Parse a fio job file (see the module docs for the accepted subset).
pub fn parse(text: &str) -> Result<JobFile, FioError> {
    parse_files(text, &[])
}

/// Parse several job files given one after another in `text`, each later
/// one starting at a line of `starts`, as fio reads the job files of one
/// command line (init.c `parse_jobs_ini` with its `stonewall_flag`): a
/// file's first line closes the section the file before it left open,
/// each file starts from fio's defaults (a `[global]` applies to its own
/// file; the JSON's `global options` are the last file's, as fio's are),
/// a job name may come again in another file, and each job knows its file
/// ([`Job::file`]): the first job run from each later file starts a new
/// group, as if it said `stonewall`.
pub fn parse_files(text: &str, starts: &[usize]) -> Result<JobFile, FioError> {
    let mut drive = Vec::new();
    let mut jobs: Vec<Job> = Vec::new();
    let mut global = Builder::default();
    let mut section = Section::None;
    let mut global_options = Vec::new();
    let mut warnings: Vec<FioWarning> = Vec::new();
    // Each job's name and header line, for duplicates.
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut file = 0;
    for (index, raw) in text.lines().enumerate() {
        let line = index + 1;
        if starts.contains(&line) {
            finish(std::mem::replace(&mut section, Section::None), &mut jobs, &mut names, &mut warnings)?;
            (global, file) = (Builder::default(), file + 1);
            global_options.clear();
            names.clear();
        }
        if raw.len() > MAX_LINE_BYTES {
            let reason = format!("longer than {MAX_LINE_BYTES} bytes, the longest line fio reads whole");
            return Err(FioError::Syntax { line, reason });
        }
        let content = raw.find([';', '#']).map_or(raw, |cut| &raw[..cut]).trim();
        if content.is_empty() {
            continue;
        }
        if content.starts_with('[') {
            finish(std::mem::replace(&mut section, Section::None), &mut jobs, &mut names, &mut warnings)?;
            section = match section_name(content, line)? {
                "global" => Section::Global,
                "drive" => Section::Drive,
                name => {
                    let mut builder = Box::new(global.clone());
                    builder.job.file = file;
                    Section::Job { name: name.to_string(), line, builder }
                }
            };
            continue;
        }
        let content = expand_env(content, |name| std::env::var_os(name).map(|v| v.to_string_lossy().into_owned()));
        if content.len() > MAX_LINE_BYTES {
            let reason = format!("longer than {MAX_LINE_BYTES} bytes once its ${{VAR}}s are expanded");
            return Err(FioError::Syntax { line, reason });
        }
        let (key, value) = split_option(&content, line)?;
        if !matches!(section, Section::Drive | Section::None) {
            if let Some((_, reason)) = IGNORED_KEYS.iter().find(|(k, _)| *k == key) {
                let reason = match (key, value) {
                    ("ioengine", Some(engine)) if SYNC_ENGINES.contains(&engine) => {
                        "a synchronous engine: as in fio, a job keeps one command in flight whatever its iodepth"
                            .to_string()
                    }
                    _ => format!("no meaning for a simulated drive ({reason}); ignored"),
                };
                if !warnings.iter().any(|w| w.key == key && w.reason == reason) {
                    let value = value.unwrap_or("").to_string();
                    warnings.push(FioWarning { key: key.to_string(), value, line, reason });
                }
            }
        }
        if matches!(section, Section::Global) && key == "name" {
            // fio (init.c get_new_job) names each job after its section
            // header, overwriting a name inherited from [global].
            let value = value.unwrap_or("").to_string();
            let reason = "in [global] it names no job: as in fio, each job is named by its section header \
                          or its own name=; ignored"
                .to_string();
            warnings.push(FioWarning { key: key.to_string(), value, line, reason });
        }
        let written = (key.to_string(), value.unwrap_or("").to_string());
        match &mut section {
            Section::None => return Err(FioError::KeyOutsideSection { key: key.to_string(), line }),
            Section::Global => {
                global.apply(key, value, line, true)?;
                global_options.push(written);
            }
            Section::Job { builder, .. } => {
                builder.apply(key, value, line, false)?;
                builder.job.options.push(written);
            }
            Section::Drive => match value {
                Some(v) if !v.is_empty() => {
                    drive.push(DriveSetting { key: key.to_string(), value: v.to_string(), line })
                }
                _ => {
                    return Err(FioError::Syntax {
                        line,
                        reason: format!(
                            "expected key=value with a non-empty value in [drive], found '{}'",
                            Shown::new(&content)
                        ),
                    })
                }
            },
        }
    }
    finish(section, &mut jobs, &mut names, &mut warnings)?;
    if jobs.is_empty() {
        return Err(FioError::NoJobs);
    }
    Ok(JobFile { drive, jobs, global_options, warnings, sections: Vec::new() })
}

/// The section whose lines are being read.
enum Section {
    None,
    Global,
    Drive,
    Job { name: String, line: usize, builder: Box<Builder> },
}

/// Finalise the job section `section` (if it is one) and append it;
/// `names` holds the header line of each job's name so far.
fn finish(
    section: Section,
    jobs: &mut Vec<Job>,
    names: &mut HashMap<String, usize>,
    warnings: &mut Vec<FioWarning>,
) -> Result<(), FioError> {
    let Section::Job { name, line, builder } = section else {
        return Ok(());
    };
    let (job, found) = builder.build(name, line)?;
    for w in found {
        if !warnings.iter().any(|seen| seen.key == w.key && seen.line == w.line) {
            warnings.push(w);
        }
    }
    if let Some(&first_line) = names.get(&job.name) {
        return Err(FioError::DuplicateJob { name: job.name, line, first_line });
    }
    names.insert(job.name.clone(), line);
    jobs.push(job);
    Ok(())
}

/// The name inside a `[name]` header line (already comment-stripped).
fn section_name(content: &str, line: usize) -> Result<&str, FioError> {
    let bad = |reason: &str| FioError::BadSection { line, reason: format!("{reason} in '{}'", Shown::new(content)) };
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
        let reason = format!("missing option name before '=' in '{}'", Shown::new(content));
        return Err(FioError::Syntax { line, reason });
    }
    // fio's `include file` directive is a bare line with a space.
    match key.split_once(char::is_whitespace) {
        Some(("include", _)) => Err(FioError::UnsupportedKey { key: "include".to_string(), line }),
        _ => Ok((key, value)),
    }
}

/// A job under construction: fio defaults, then `[global]`, then its own lines.
#[derive(Clone)]
struct Builder {
    job: Job,
    /// `bs`, `bsrange` and `bssplit` as given, resolved when the job is built.
    sizes: BlockSizeOptions,
    /// `thinktime_spin`: part of each stall, the whole of it if longer.
    think_spin_ns: u64,
    name: Option<String>,
    refill_explicit: bool,
    /// Where each option got its current value (for errors found only
    /// once the job is complete, and [`Job::set_at`]).
    origins: HashMap<Key, OptionLine>,
}

impl Default for Builder {
    fn default() -> Self {
        Builder {
            job: Job {
                name: String::new(),
                rw: Rw::Read,
                bs: DEFAULT_BS,
                block_sizes: BlockSizeOptions::default().choices(),
                block_align: [None; 3],
                iodepth: 1,
                size: SizeSpec::Whole,
                offset: SizeSpec::Bytes(0),
                offset_increment: SizeSpec::Bytes(0),
                runtime_ns: None,
                time_based: false,
                loops: 1,
                norandommap: false,
                percentile_list: None,
                percentile_precision: 2,
                clat_percentiles: true,
                lat_percentiles: false,
                io_size: None,
                number_ios: None,
                rwmixread: 50,
                compress_pct: 0,
                compress_chunk: 512,
                dedupe_pct: 0,
                refill_buffers: false,
                buffers: Buffers::default(),
                verify: VerifyOptions::default(),
                sequence: Sequence::default(),
                distribution: Distribution::Random,
                write_hint: 0,
                randseed: None,
                stonewall: false,
                ioengine: None,
                filename: None,
                direct: false,
                group_reporting: false,
                numjobs: 1,
                timing: FioTiming::default(),
                options: Vec::new(),
                set_at: Vec::new(),
                line: 0,
                file: 0,
                section: String::new(),
            },
            sizes: BlockSizeOptions::default(),
            think_spin_ns: 0,
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
            return Err(bad("a '${' without its closing '}'".to_string()));
        }
        let required = || value.ok_or_else(|| bad("this option requires a value".to_string()));
        let job = &mut self.job;
        match canon {
            Key::TimeBased => job.time_based = parse_flag(value).map_err(bad)?,
            Key::Stonewall => job.stonewall = parse_flag(value).map_err(bad)?,
            Key::NoRandomMap => job.norandommap = parse_flag(value).map_err(bad)?,
            Key::PercentileList => {
                let (list, precision) = parse_percentile_list(required()?).map_err(bad)?;
                (job.percentile_list, job.percentile_precision) = (Some(list), precision);
            }
            Key::ClatPercentiles => job.clat_percentiles = parse_flag(Some(required()?)).map_err(bad)?,
            Key::LatPercentiles => job.lat_percentiles = parse_flag(Some(required()?)).map_err(bad)?,
            Key::Loops => {
                job.loops = match parse_int(required()?).map_err(bad)? {
                    n @ 1..=0xFFFF_FFFF => n as u32,
                    _ => return Err(bad("loops must be 1 or more (up to 4294967295)".into())),
                }
            }
            Key::GroupReporting => job.group_reporting = parse_flag(value).map_err(bad)?,
            Key::RefillBuffers => {
                job.refill_buffers = parse_flag(value).map_err(bad)?;
                self.refill_explicit = true;
            }
            Key::Direct => job.direct = parse_flag(Some(required()?)).map_err(bad)?,
            Key::Name if in_global => {
                non_empty(required()?).map_err(bad)?;
            }
            Key::Name => self.name = Some(non_empty(required()?).map_err(bad)?),
            Key::Ioengine => job.ioengine = Some(non_empty(required()?).map_err(bad)?),
            Key::Filename => job.filename = Some(non_empty(required()?).map_err(bad)?),
            Key::Rw => {
                // fio's str_rw_cb: each rw line sets the modifier afresh.
                let (rw, every, add) = parse_rw_modifier(required()?).map_err(bad)?;
                (job.rw, job.sequence.every, job.sequence.add) = (rw, every, add);
            }
            Key::RwSequencer => {
                job.sequence.identical = match required()? {
                    "sequential" => false,
                    "identical" => true,
                    _ => return Err(bad("expected sequential or identical".into())),
                }
            }
            Key::Bs => self.sizes.bs = parse_bs(required()?).map_err(bad)?,
            Key::BsRange => self.sizes.range = parse_bsrange(required()?).map_err(bad)?,
            Key::BsSplit => self.sizes.split = parse_bssplit(required()?).map_err(bad)?,
            Key::BlockAlign => self.sizes.align = parse_blockalign(required()?).map_err(bad)?,
            Key::Iodepth => job.iodepth = parse_iodepth(required()?).map_err(bad)?,
            Key::Size => job.size = parse_size(required()?).map_err(bad)?,
            Key::Offset => job.offset = parse_offset(required()?).map_err(bad)?,
            Key::OffsetIncrement => job.offset_increment = parse_offset(required()?).map_err(bad)?,
            Key::Runtime => job.runtime_ns = Some(parse_time_ns(required()?).map_err(bad)?).filter(|&ns| ns > 0),
            Key::IoSize => job.io_size = Some(parse_int(required()?).map_err(bad)?).filter(|&n| n > 0),
            Key::NumberIos => job.number_ios = Some(parse_int(required()?).map_err(bad)?).filter(|&n| n > 0),
            Key::Randseed => job.randseed = Some(parse_int(required()?).map_err(bad)?),
            Key::RwmixRead => job.rwmixread = parse_pct(required()?).map_err(bad)?,
            Key::RwmixWrite => job.rwmixread = 100 - parse_pct(required()?).map_err(bad)?,
            Key::CompressPct => {
                job.compress_pct = parse_pct(required()?).map_err(bad)?;
                job.buffers.percentage_given();
            }
            Key::CompressChunk => job.compress_chunk = parse_int(required()?).map_err(bad)?,
            Key::DedupePct => {
                job.dedupe_pct = parse_pct(required()?).map_err(bad)?;
                // fio's str_dedupe_cb turns refill_buffers on.
                job.refill_buffers = true;
                job.buffers.percentage_given();
            }
            Key::DedupeMode => {
                job.buffers.working_set = match required()? {
                    "repeat" => false,
                    "working_set" => true,
                    _ => return Err(bad("expected repeat or working_set".into())),
                }
            }
            Key::DedupeWorkingSet => job.buffers.working_set_pct = parse_pct(required()?).map_err(bad)?,
            Key::DedupeGlobal => job.buffers.global = parse_flag(Some(required()?)).map_err(bad)?,
            Key::BufferPattern => {
                job.buffers.set_pattern(parse_pattern(required()?).map_err(bad)?);
                // fio's str_buffer_pattern_cb, with the job as set so far.
                job.refill_buffers = job.compress_pct != 0 || job.rw.does_read();
            }
            Key::ZeroBuffers => job.buffers.set_zero(parse_flag(value).map_err(bad)?),
            Key::ScrambleBuffers => job.buffers.set_scramble(parse_flag(Some(required()?)).map_err(bad)?),
            Key::Distribution => job.distribution = parse_distribution(required()?).map_err(bad)?,
            Key::Verify => job.verify.set_checksum(required()?).map_err(bad)?,
            Key::DoVerify => job.verify.read_back = parse_flag(Some(required()?)).map_err(bad)?,
            Key::VerifyInterval => job.verify.set_interval(parse_int(required()?).map_err(bad)?).map_err(bad)?,
            Key::VerifyOffset => job.verify.set_offset(parse_int(required()?).map_err(bad)?).map_err(bad)?,
            Key::VerifyPattern => job.verify.set_pattern(parse_pattern(required()?).map_err(bad)?),
            Key::VerifyFatal => job.verify.fatal = parse_flag(Some(required()?)).map_err(bad)?,
            Key::VerifyOnly => job.verify.only = parse_flag(value).map_err(bad)?,
            Key::VerifyBacklog => job.verify.backlog = parse_int(required()?).map_err(bad)?,
            Key::VerifyBacklogBatch => job.verify.batch = parse_int(required()?).map_err(bad)?,
            Key::WriteHint => job.write_hint = parse_write_hint(required()?).map_err(bad)?,
            Key::Ignored => {}
            Key::BwAvgTime => job.timing.bw_ms = parse_avg_time(required()?).map_err(bad)?,
            Key::IopsAvgTime => job.timing.iops_ms = parse_avg_time(required()?).map_err(bad)?,
            Key::RampTime => job.timing.ramp_ns = parse_time_ns(required()?).map_err(bad)?,
            Key::StartDelay => {
                let v = required()?;
                if v.contains('-') {
                    return Err(bad("a range of start delays is not supported; give one time".into()));
                }
                job.timing.start_delay_ns = parse_time_ns(v).map_err(bad)?;
            }
            Key::RateIops => job.timing.rate_iops = parse_per_direction(required()?).map_err(bad)?,
            Key::Rate => job.timing.rate_bytes = parse_per_direction(required()?).map_err(bad)?,
            // fio reads these in microseconds, thinktime_iotime in seconds.
            Key::ThinkTime => job.timing.think_ns = parse_time_in(required()?, "us").map_err(bad)?,
            Key::ThinkTimeSpin => self.think_spin_ns = parse_time_in(required()?, "us").map_err(bad)?,
            Key::ThinkTimeIotime => job.timing.think_iotime_ns = parse_time_ns(required()?).map_err(bad)?,
            Key::ThinkTimeBlocks => {
                job.timing.think_blocks = match parse_int(required()?).map_err(bad)? {
                    n @ 1..=0xFFFF_FFFF => Some(n as u32),
                    _ => return Err(bad("thinktime_blocks must be 1 or more".into())),
                }
            }
            Key::ThinkTimeBlocksType => {
                job.timing.think_on_issue = match required()? {
                    "complete" => false,
                    "issue" => true,
                    _ => return Err(bad("thinktime_blocks_type is complete or issue".into())),
                }
            }
            Key::Numjobs => {
                job.numjobs = match parse_int(required()?).map_err(bad)? {
                    n @ 1..=MAX_NUMJOBS => n as u32,
                    _ => return Err(bad(format!("numjobs must be 1 to {MAX_NUMJOBS} clones of the job"))),
                }
            }
        }
        self.origins.insert(canon, OptionLine { key: key.to_string(), value: value.unwrap_or("").to_string(), line });
        Ok(())
    }

    /// Resolve implied settings and cross-option checks into the final job,
    /// with a warning where fio drops a setting rather than failing.
    fn build(self, section: String, line: usize) -> Result<(Job, Vec<FioWarning>), FioError> {
        let Builder { mut job, sizes, think_spin_ns, name, refill_explicit, origins } = self;
        // fio's stall is the spin, then a sleep for what thinktime leaves.
        if job.timing.think_ns > 0 {
            job.timing.think_ns = job.timing.think_ns.max(think_spin_ns);
        }
        // The job's bs is the least size of the directions it issues.
        job.block_sizes = sizes.choices();
        let used = || job.block_sizes.iter().zip(job.rw.directions()).filter_map(|(c, used)| used.then_some(c));
        job.bs = used().map(SizeChoice::min).min().unwrap_or(DEFAULT_BS);
        // Every non-default value has an origin; fall back to the header line.
        let bad_at = |k: Key, reason: String| match origins.get(&k) {
            Some(o) => o.bad(reason),
            None => FioError::BadValue { key: format!("{k:?}"), value: String::new(), line, reason },
        };
        let mut warnings = Vec::new();
        // A warning names the option as it was written (`ba` or `blockalign`).
        let warn = |k: Key, key: &str, reason: String| match origins.get(&k) {
            Some(o) => FioWarning { key: o.key.clone(), value: o.value.clone(), line: o.line, reason },
            None => FioWarning { key: key.to_string(), value: String::new(), line, reason },
        };
        // A random job's blockalign other than a direction's smallest size
        // turns the random map off, as in fio (init.c fixup_options); a
        // sequential job ignores it.
        job.block_align = std::array::from_fn(|d| {
            sizes.align[d].filter(|&a| job.rw.is_random() && job.rw.directions()[d] && a != job.block_sizes[d].min())
        });
        if job.block_align.iter().any(Option::is_some) && !job.norandommap {
            job.norandommap = true;
            let reason = "as in fio, any use of blockalign turns off the random map (norandommap)".to_string();
            warnings.push(warn(Key::BlockAlign, "blockalign", reason));
        }
        if job.time_based && job.runtime_ns.is_none() {
            // fio (init.c fixup_options): "time_based requires a
            // runtime/timeout setting", and the job runs by size.
            job.time_based = false;
            let reason =
                "time_based needs a non-zero runtime: as in fio, the job runs by its size; ignored".to_string();
            warnings.push(warn(Key::TimeBased, "time_based", reason));
        }
        let t = &mut job.timing;
        if t.rate_iops.iter().any(|&r| r > 0) && t.rate_bytes.iter().any(|&r| r > 0) {
            return Err(bad_at(Key::RateIops, "rate and rate_iops are mutually exclusive, as in fio".to_string()));
        }
        // Without time_based, runtime stops the job early (HOWTO: "whichever
        // occurs first").
        t.runtime_cap_ns = if job.time_based { 0 } else { job.runtime_ns.unwrap_or(0) };
        if let SizeSpec::Bytes(size) = job.size {
            if size < job.bs {
                let reason = format!("size ({size} bytes) is smaller than the block size ({} bytes)", job.bs);
                return Err(bad_at(Key::Size, reason));
            }
        }
        if let (Distribution::HotCold { .. }, SizeSpec::Bytes(size)) = (job.distribution, job.size) {
            if size / job.bs < 2 {
                let reason = format!(
                    "zoned needs at least two bs-sized requests in the region, a hot and a cold one; size={size} \
                     holds {} of bs={}",
                    size / job.bs,
                    job.bs
                );
                return Err(bad_at(Key::Distribution, reason));
            }
        }
        if let (Distribution::Zoned(_), SizeSpec::Bytes(size)) = (job.distribution, job.size) {
            if let Err(e) = Access::from(job.distribution).check_slots(size / job.bs) {
                let reason = format!("{e}: size={size} holds {} of bs={}", size / job.bs, job.bs);
                return Err(bad_at(Key::Distribution, reason));
            }
        }
        if job.compress_chunk == 0 {
            job.compress_chunk = job.bs;
        }
        // fio (backend.c): "queue depth will be capped at 1".
        if job.ioengine.as_deref().is_some_and(|e| SYNC_ENGINES.contains(&e)) {
            job.iodepth = 1;
        }
        if (1..100).contains(&job.compress_pct) && !refill_explicit {
            job.refill_buffers = true;
        }
        if job.sequence.add != 0 {
            let mut used = job.block_sizes.iter().zip(job.rw.directions()).filter(|(_, used)| *used);
            let one_size = used.all(|(c, _)| c.min() == job.bs && c.max() == job.bs);
            if !one_size || job.sequence.add % job.bs as i64 != 0 {
                let reason = format!(
                    "the ':{}' offset modifier needs one block size it is a multiple of (bs={})",
                    job.sequence.add, job.bs
                );
                return Err(bad_at(Key::Rw, reason));
            }
        }
        if job.verify.checksum.is_some() {
            let mut verify = job.verify.clone();
            verify.fixup(&job).map_err(|(key, reason)| bad_at(key, reason))?;
            if verify.only && job.time_based && job.rw.does_write() {
                let reason = "verify_only replays the writes without time passing: give the job a size, not time_based";
                return Err(bad_at(Key::VerifyOnly, reason.to_string()));
            }
            if verify.read_back && job.rw.does_write() && job.numjobs > 1 {
                // fio (init.c fixup_options) warns the same for one target.
                let reason = "multiple writers may overwrite blocks that belong to other jobs, \
                              which can cause verification failures";
                warnings.push(warn(Key::Verify, "verify", reason.to_string()));
            }
            if verify.read_back && job.time_based && job.rw.does_write() && !job.rw.does_read() && verify.backlog == 0 {
                // fio (init.c fixup_options) warns the same.
                let reason = "verification read phase will never start because write phase uses all of runtime";
                warnings.push(warn(Key::Verify, "verify", reason.to_string()));
            }
            job.verify = verify;
            job.refill_buffers |= !refill_explicit;
        }
        job.name = name.unwrap_or_else(|| section.clone());
        job.section = section;
        job.line = line;
        job.set_at = origins.into_values().collect();
        job.set_at.sort_by_key(|o| o.line);
        Ok((job, warnings))
    }
}
