//! The job-file parser: INI sections, `[global]` inheritance, option
//! values with fio's units, and the checks a finished job must pass (see
//! the [parent module](super) for the accepted subset).

use std::collections::HashMap;

use super::{DriveSetting, FioError, FioWarning, Job, JobFile, SizeSpec, IGNORED_KEYS, MAX_NUMJOBS};
use crate::workload::access::{Distribution, Rw};

/// Parse a fio job file (see the module docs for the accepted subset).
pub fn parse(text: &str) -> Result<JobFile, FioError> {
    let mut drive = Vec::new();
    let mut jobs: Vec<Job> = Vec::new();
    let mut global = Builder::default();
    let mut section = Section::None;
    let mut global_options = Vec::new();
    let mut warnings: Vec<FioWarning> = Vec::new();
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
        if !matches!(section, Section::Drive | Section::None) {
            if let Some((_, reason)) = IGNORED_KEYS.iter().find(|(k, _)| *k == key) {
                if !warnings.iter().any(|w| w.key == key) {
                    let value = value.unwrap_or("").to_string();
                    let reason = format!("no meaning for a simulated drive ({reason})");
                    warnings.push(FioWarning { key: key.to_string(), value, line, reason });
                }
            }
        }
        if matches!(section, Section::Global) && key == "name" {
            // fio (init.c get_new_job) names each job after its section
            // header, overwriting a name inherited from [global].
            let value = value.unwrap_or("").to_string();
            let reason = "in [global] it names no job: as in fio, each job is named by its section header \
                          or its own name="
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
    Ok(JobFile { drive, jobs, global_options, warnings })
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
pub(super) enum Key {
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
    WriteHint,
    Randseed,
    Stonewall,
    Ioengine,
    Filename,
    Direct,
    GroupReporting,
    Numjobs,
    /// One of [`IGNORED_KEYS`] without a field.
    Ignored,
}

impl Key {
    /// The option spelled `key`, if supported (case-sensitive, as in fio).
    pub(super) fn from_name(key: &str) -> Option<Key> {
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
            "write_hint" => Key::WriteHint,
            "randseed" => Key::Randseed,
            "stonewall" | "wait_for_previous" => Key::Stonewall,
            "ioengine" => Key::Ioengine,
            "filename" => Key::Filename,
            "direct" => Key::Direct,
            "group_reporting" => Key::GroupReporting,
            "numjobs" => Key::Numjobs,
            k if IGNORED_KEYS.iter().any(|(i, _)| *i == k) => Key::Ignored,
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
                size: SizeSpec::Whole,
                offset: SizeSpec::Bytes(0),
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
                write_hint: 0,
                randseed: None,
                stonewall: false,
                ioengine: None,
                filename: None,
                direct: false,
                group_reporting: false,
                numjobs: 1,
                options: Vec::new(),
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
            Key::Name if in_global => {
                non_empty(required()?).map_err(bad)?;
            }
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
            Key::WriteHint => job.write_hint = parse_write_hint(required()?).map_err(bad)?,
            Key::Ignored => {}
            Key::Numjobs => {
                job.numjobs = match parse_int(required()?).map_err(bad)? {
                    n @ 1..=MAX_NUMJOBS => n as u32,
                    _ => return Err(bad(format!("numjobs must be 1 to {MAX_NUMJOBS} clones of the job"))),
                }
            }
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
        if let SizeSpec::Bytes(size) = job.size {
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

fn parse_size(s: &str) -> Result<SizeSpec, String> {
    match parse_quantity(s)? {
        Quantity::Bytes(0) => Ok(SizeSpec::Whole),
        Quantity::Bytes(n) => Ok(SizeSpec::Bytes(n)),
        Quantity::Percent(p) if p > 0.0 && p <= 100.0 => Ok(SizeSpec::Percent(p)),
        Quantity::Percent(_) => Err("a size percentage must be greater than 0 and at most 100".to_string()),
    }
}

fn parse_offset(s: &str) -> Result<SizeSpec, String> {
    match parse_quantity(s)? {
        Quantity::Bytes(n) => Ok(SizeSpec::Bytes(n)),
        Quantity::Percent(p) if p < 100.0 => Ok(SizeSpec::Percent(p)),
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
pub(super) const RW_VALUES: &[(&str, Rw)] = &[
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

/// fio's `write_hint` values (Linux's write lifetime hints), as streams.
const WRITE_HINTS: [&str; 5] = ["none", "short", "medium", "long", "extreme"];

fn parse_write_hint(s: &str) -> Result<u8, String> {
    WRITE_HINTS
        .iter()
        .position(|h| *h == s)
        .map(|i| i as u8)
        .ok_or_else(|| format!("unknown write hint (valid: {})", WRITE_HINTS.join(", ")))
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
        "zoned" => parse_zoned(param.unwrap_or("")),
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
        k if matches!(k, "normal" | "gauss") || k.starts_with("zoned") => Err(format!(
            "distribution '{k}' is not supported (supported: random, zipf[:theta], pareto[:h], zoned:A/R:B/S)"
        )),
        _ => Err("unknown distribution (supported: random, zipf[:theta], pareto[:h], zoned:A/R:B/S)".to_string()),
    }
}

/// fio's `zoned:A/R:B/S` (percent of accesses / percent of the range, zones
/// in order from the start; an empty last range is the rest), two zones:
/// the hot/cold workload.
fn parse_zoned(zones: &str) -> Result<Distribution, String> {
    let pct = |v: &str| v.parse::<f64>().ok().filter(|p| (0.0..=100.0).contains(p));
    let parsed: Option<Vec<(f64, Option<f64>)>> = zones
        .split(':')
        .map(|z| {
            let (a, r) = z.split_once('/')?;
            Some((pct(a)?, if r.is_empty() { None } else { Some(pct(r)?) }))
        })
        .collect();
    let Some(&[(hot_io, Some(hot_range)), (cold_io, cold_range)]) = parsed.as_deref() else {
        return Err(format!("zoned '{zones}' must be two zones, access%/range%:access%/range%"));
    };
    let cold_range = cold_range.unwrap_or(100.0 - hot_range);
    if (hot_io + cold_io - 100.0).abs() > 1e-9 || (hot_range + cold_range - 100.0).abs() > 1e-9 {
        return Err(format!("zoned '{zones}': the accesses and the ranges must each add up to 100"));
    }
    let (hot, writes) = (hot_range / 100.0, hot_io / 100.0);
    crate::workload::access::Access::hot_cold(hot, writes)?;
    Ok(Distribution::HotCold { hot, writes })
}
