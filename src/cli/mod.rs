//! The binary's modules: argument structs, dispatch targets, printing.
//! Everything here parses flags, calls the library and prints; what a
//! command computes lives in the library (see the layers in README).
//!
//! Shared here: the drive flags ([`DriveArgs`]), the data flags
//! ([`DataArgs`]), the output flags ([`Output`]) and [`Failure`], which
//! `main` turns into the exit status.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use duraflash::config::overrides::{Capacity, DriveOverrides};
use duraflash::config::{DriveConfig, GcPolicy, Media, StreamInference};
use duraflash::content::pattern::DataSpec;
use duraflash::device::memory::{MemoryEstimate, MemoryLimit, Part};
use duraflash::device::resume::{self, ResumeError};
use duraflash::image::{ImageError, ImageLock};
use duraflash::workload::access::Access;
use duraflash::{ByteSize, Drive};

use output::emit;

pub(crate) mod bench;
pub(crate) mod bounds;
pub(crate) mod estimate;
pub(crate) mod fio;
mod fio_json;
mod fio_text;
pub(crate) mod output;
pub(crate) mod replay;
pub(crate) mod reviews;
pub(crate) mod studies;
pub(crate) mod trim;

pub(crate) enum Failure {
    Usage(String),
    Run(String),
    /// Standard output's reader went away (`| head`): nothing left to say.
    Closed,
}

impl Failure {
    /// The run failed with `e` (exit status 1).
    fn run(e: impl std::fmt::Display) -> Self {
        Failure::Run(e.to_string())
    }

    /// The command line asked for something impossible (exit status 2).
    fn usage(e: impl std::fmt::Display) -> Self {
        Failure::Usage(e.to_string())
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum Toggle {
    On,
    Off,
}

impl Toggle {
    fn on(self) -> bool {
        matches!(self, Toggle::On)
    }
}

/// The host capacity every command scales its drive to unless `--capacity`
/// says otherwise: small enough for a laptop, large enough that the
/// sf2281's OP steps stay near its own (12 % data OP against 7 %).
pub(crate) const DEFAULT_CAPACITY: u64 = 1 << 30;

/// The preset every command builds unless `--preset` or `--config` says otherwise.
pub(crate) const DEFAULT_PRESET: &str = "sf2281-240g";

/// Whether a command reads data back, which decides its `--media` default.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Reads {
    /// Reads are timed only: metadata-only media (the same timing, WAF,
    /// compression and dedup, a fraction of the memory).
    Timing,
    /// Reads return the bytes (served to clients, verified, or merged
    /// into sub-unit writes): memory media.
    Data,
}

/// Flags that build a drive; they mean the same on every command.
#[derive(Args, Clone)]
pub(crate) struct DriveArgs {
    /// Built-in drive preset: sf2281-240g, sf2281-120g, samsung830-64g, intel-x25m-g2-160g [default: sf2281-240g]
    #[arg(long)]
    pub(crate) preset: Option<String>,
    /// Drive config file (TOML), instead of a preset (its media and size stand unless flags change them).
    #[arg(long, conflicts_with = "preset")]
    pub(crate) config: Option<PathBuf>,
    /// Scale the drive down to this host capacity (240GB = 240e9 bytes, 256GiB = 256 x 2^30),
    /// or 'full' for the preset's own [default: 1GiB]
    #[arg(long, value_parser = parse_capacity)]
    pub(crate) capacity: Option<Capacity>,
    /// Over-provisioning of the data blocks, (physical - logical) / logical, GC reserve excluded:
    /// 7% or 0.07 [default: the preset's, kept when --capacity scales it]
    #[arg(long, allow_negative_numbers = true, value_parser = parse_op)]
    pub(crate) op: Option<f64>,
    /// NAND pages per erase block (the array keeps its physical size unless --op is given).
    #[arg(long)]
    pub(crate) pages_per_block: Option<u32>,
    /// GC victim policy [default: greedy] [possible values: greedy, cost-benefit, fifo, d-choices:D, windowed:W]
    #[arg(long, value_parser = parse_gc)]
    pub(crate) gc: Option<GcPolicy>,
    /// Compress units (lz4).
    #[arg(long, value_enum)]
    pub(crate) compression: Option<Toggle>,
    /// Store identical units once.
    #[arg(long, value_enum)]
    pub(crate) dedup: Option<Toggle>,
    /// What the NAND keeps: metadata-only (mappings and sizes; the same timing, WAF, compression
    /// and dedup) or memory (the bytes too) [default: metadata-only; memory for serve, soak, atto,
    /// run and replay, which read data back (a sub-unit write reads the old unit)]
    #[arg(long, value_parser = parse_media)]
    pub(crate) media: Option<Media>,
    /// Seed of every random stream [default: 1]
    #[arg(long)]
    pub(crate) seed: Option<u64>,
    /// Firmware profile: sf-3.x, sf-5.0.2, sf-5.0.3, generic (default: the preset's).
    #[arg(long)]
    pub(crate) firmware: Option<String>,
    /// Refuse a drive estimated to need more memory than this (default: the memory available).
    #[arg(long, value_parser = parse_size)]
    pub(crate) memory_limit: Option<u64>,
    /// Host write streams, each with its own open blocks (1 to 8; default 1, no separation).
    #[arg(long)]
    pub(crate) streams: Option<u8>,
    /// GC relocations get open blocks of their own (the double log; default off).
    #[arg(long, value_enum)]
    pub(crate) gc_frontier: Option<Toggle>,
    /// Infer each host write's stream from how recently its unit was last written: off, or
    /// recency[:WINDOW] (hottest stream within WINDOW drive-writes, default 1; each doubling one
    /// stream colder); needs --streams 2 or more (default off: the host's hints).
    #[arg(long, value_parser = parse_stream_infer)]
    pub(crate) stream_infer: Option<StreamInference>,
    /// Dynamic wear levelling: each die opens its least-worn free block (default off).
    #[arg(long, value_enum)]
    pub(crate) wear_dynamic: Option<Toggle>,
    /// Static wear levelling: move the data of the least-worn block when the P/E spread passes
    /// this many cycles, or off (default off).
    #[arg(long, value_parser = parse_wear_static)]
    pub(crate) wear_static: Option<WearStatic>,
}

impl DriveArgs {
    /// The library's overrides these flags give, with every command's
    /// defaults (preset, seed, and the media `reads` asks for) where a flag
    /// is not given; a `--config` file's media stands.
    pub(crate) fn overrides(&self, reads: Reads) -> DriveOverrides {
        let mut o = self.defaults(reads);
        self.apply_given(&mut o);
        o
    }

    /// Every command's defaults, before any flag: the preset, 1 GiB, seed
    /// 1, and the media `reads` asks for (none over a `--config` file's).
    pub(crate) fn defaults(&self, reads: Reads) -> DriveOverrides {
        let media = match (reads, &self.config) {
            (_, Some(_)) => None,
            (Reads::Timing, None) => Some(Media::MetadataOnly),
            (Reads::Data, None) => Some(Media::Memory),
        };
        DriveOverrides {
            preset: DEFAULT_PRESET.into(),
            config: None,
            capacity: self.config.is_none().then_some(Capacity::Bytes(DEFAULT_CAPACITY)),
            op: None,
            pages_per_block: None,
            gc: None,
            compression: None,
            dedup: None,
            media,
            seed: 1,
            firmware: None,
            streams: None,
            gc_frontier: None,
            stream_infer: None,
            wear_dynamic: None,
            wear_static: None,
        }
    }

    /// Applies the flags given on the command line on top of `o` and
    /// returns their names (`--capacity`, ...).
    pub(crate) fn apply_given(&self, o: &mut DriveOverrides) -> Vec<&'static str> {
        let mut given = Vec::new();
        macro_rules! take {
            ($field:ident, $flag:literal, $value:expr) => {
                if let Some(v) = &self.$field {
                    o.$field = $value(v.clone());
                    given.push($flag);
                }
            };
        }
        take!(preset, "--preset", |v| v);
        take!(config, "--config", Some);
        take!(capacity, "--capacity", Some);
        take!(op, "--op", Some);
        take!(pages_per_block, "--pages-per-block", Some);
        take!(gc, "--gc", Some);
        take!(compression, "--compression", |v: Toggle| Some(v.on()));
        take!(dedup, "--dedup", |v: Toggle| Some(v.on()));
        take!(media, "--media", Some);
        take!(seed, "--seed", |v| v);
        take!(firmware, "--firmware", Some);
        take!(streams, "--streams", Some);
        take!(gc_frontier, "--gc-frontier", |v: Toggle| Some(v.on()));
        take!(stream_infer, "--stream-infer", Some);
        take!(wear_dynamic, "--wear-dynamic", |v: Toggle| Some(v.on()));
        take!(wear_static, "--wear-static", |v: WearStatic| Some(v.0));
        given
    }

    /// The drive config these flags describe, on a command whose reads
    /// are `reads`.
    pub(crate) fn build(&self, reads: Reads) -> Result<DriveConfig, String> {
        self.build_held(reads, 1)
    }

    /// [`DriveArgs::build`] for a command that holds `drives` drives of
    /// the config at once (copies, or an array's members).
    pub(crate) fn build_held(&self, reads: Reads, drives: u32) -> Result<DriveConfig, String> {
        let overrides = self.overrides(reads);
        let cfg = overrides.build(None).map_err(|e| e.to_string())?;
        note_rounded_capacity(&overrides, &cfg);
        self.check_memory(&cfg, drives)?;
        Ok(cfg)
    }

    /// Refuses `drives` drives of `cfg` if their memory estimate is over
    /// `--memory-limit` (default: the memory the machine has available).
    pub(crate) fn check_memory(&self, cfg: &DriveConfig, drives: u32) -> Result<(), String> {
        self.check_run_memory(cfg, drives, Vec::new())
    }

    /// [`DriveArgs::check_memory`] for a run that also holds `beside`
    /// beside its drives (a fio run's job buffers).
    pub(crate) fn check_run_memory(&self, cfg: &DriveConfig, drives: u32, beside: Vec<Part>) -> Result<(), String> {
        let limit = match self.memory_limit {
            Some(bytes) => Some(MemoryLimit { bytes, source: "--memory-limit" }),
            None => MemoryLimit::machine(),
        };
        let what = if beside.is_empty() { "the drive" } else { "the run" };
        match limit {
            Some(limit) => MemoryEstimate::of(cfg, drives).with_beside(beside).check(&limit).map_err(|e| {
                let hint = if self.memory_limit.is_some() { "" } else { "; --memory-limit sets another limit" };
                format!("{what} {e}{hint}")
            }),
            None => Ok(()),
        }
    }
}

pub(crate) fn parse_op(s: &str) -> Result<f64, String> {
    duraflash::config::overrides::parse_op(s)
}

pub(crate) fn parse_gc(s: &str) -> Result<GcPolicy, String> {
    s.parse()
}

pub(crate) fn parse_stream_infer(s: &str) -> Result<StreamInference, String> {
    s.parse()
}

/// A `--wear-static` value: a P/E spread, or `None` for off.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WearStatic(Option<u32>);

pub(crate) fn parse_wear_static(s: &str) -> Result<WearStatic, String> {
    duraflash::config::WearConfig::parse_static(s).map(WearStatic)
}

pub(crate) fn parse_media(s: &str) -> Result<Media, String> {
    s.parse()
}

pub(crate) fn parse_access(s: &str) -> Result<Access, String> {
    s.parse()
}

pub(crate) fn parse_pct(s: &str) -> Result<u8, String> {
    match s.parse::<u8>() {
        Ok(v) if v <= 100 => Ok(v),
        _ => Err(format!("'{s}' is not a percentage from 0 to 100")),
    }
}

pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    s.parse::<ByteSize>().map(|b| b.0)
}

pub(crate) fn parse_capacity(s: &str) -> Result<Capacity, String> {
    s.parse()
}

/// What written data looks like (fio's buffer options).
#[derive(Args, Clone)]
pub(crate) struct DataArgs {
    /// Data content: incompressible (random) or compressible (fio-style, see --compress-pct)
    /// [default: incompressible, or compressible when --compress-pct is given]
    #[arg(long, value_enum)]
    pub(crate) data: Option<DataKind>,
    /// fio's buffer_compress_percentage: share of each 512-byte segment that is zeros; implies
    /// --data compressible, as in fio [default with --data compressible: 50]
    #[arg(long, value_parser = parse_pct)]
    pub(crate) compress_pct: Option<u8>,
    /// fio's dedupe_percentage: share of units that repeat earlier content.
    #[arg(long, value_parser = parse_pct, default_value = "0")]
    pub(crate) dedupe_pct: u8,
}

impl DataArgs {
    /// The data spec and the compress percentage it uses.
    pub(crate) fn spec(&self) -> Result<(DataSpec, u8), Failure> {
        let pct = match (self.data, self.compress_pct) {
            (Some(DataKind::Incompressible), Some(p)) if p > 0 => {
                return Err(Failure::Usage(format!("--compress-pct {p} contradicts --data incompressible (drop one)")))
            }
            (None, Some(p)) => p,
            (Some(DataKind::Incompressible) | None, _) => 0,
            (Some(DataKind::Compressible), p) => p.unwrap_or(DEFAULT_COMPRESS_PCT),
        };
        let spec = DataSpec::compressible(pct)
            .and_then(|d| d.with_dedupe(self.dedupe_pct))
            .map_err(|e| Failure::Usage(e.to_string()))?;
        Ok((spec, pct))
    }
}

#[derive(Clone, Copy, ValueEnum)]
#[value(rename_all = "kebab-case")]
pub(crate) enum DataKind {
    Incompressible,
    Compressible,
}

/// Default --compress-pct for `--data compressible`.
pub(crate) const DEFAULT_COMPRESS_PCT: u8 = 50;

/// Where the JSON result goes.
#[derive(Args)]
pub(crate) struct Output {
    /// Write the full result as JSON to PATH, or to stdout with '-' (the summary then goes to stderr).
    #[arg(long)]
    pub(crate) json: Option<PathBuf>,
    /// No progress bars.
    #[arg(long)]
    pub(crate) quiet: bool,
    /// Worker threads for the compression/hash pipeline (default: one per core).
    #[arg(long)]
    pub(crate) threads: Option<usize>,
    /// Print the drive's SMART attributes (smartctl -A style) and add `smart` to the JSON.
    #[arg(long)]
    pub(crate) smart: bool,
    /// Where the human summary goes instead of stdout (`run --output`, as fio's).
    #[arg(skip)]
    pub(crate) summary: Option<PathBuf>,
    /// The flag that gave `json`, for messages: `--json` unless another
    /// (`run --output`, as fio's) set it.
    #[arg(skip)]
    pub(crate) json_flag: Option<&'static str>,
    /// The summary follows the JSON where the JSON goes, as fio writes
    /// `--output-format=json,normal`.
    #[arg(skip)]
    pub(crate) summary_after_json: bool,
    /// What goes before the JSON when the summary follows it (fio's job
    /// lines, which fio writes before the run).
    #[arg(skip)]
    pub(crate) before_json: String,
}

/// What `--image` failed with, as the exit status says: a config that is
/// not the image's is a usage error, an unreadable image a failed run.
pub(crate) fn image_failure(e: ResumeError) -> Failure {
    match e {
        ResumeError::Config(_) => Failure::Usage(e.to_string()),
        ResumeError::Mismatch { .. } => Failure::Usage(format!("--image {e}")),
        ResumeError::Load { ref source, .. } if source.is_wrong_file() => Failure::Usage(format!("--image {e}")),
        ResumeError::Locked { ref source } if source.is_wrong_file() => Failure::Usage(format!("--image: {e}")),
        ResumeError::Load { .. } | ResumeError::Save { .. } => Failure::Run(format!("--image {e}")),
        ResumeError::Locked { .. } => Failure::Run(format!("--image: {e}")),
    }
}

/// The drive the flags describe, or the one saved in `image` when that
/// file exists, with the image's lock: hold it until the drive is saved
/// (see [`resume::open_locked`]).
pub(crate) fn open_drive(
    cfg: DriveConfig,
    image: Option<&std::path::Path>,
) -> Result<(Drive, Option<ImageLock>), Failure> {
    resume::open_locked(cfg, image).map_err(image_failure)
}

/// Saves the drive to `image`, if given.
pub(crate) fn save_image(drive: &Drive, image: Option<&std::path::Path>) -> Result<(), Failure> {
    resume::save(drive, image).map_err(image_failure)
}

/// `--threads` beyond this many per core is refused: the pipeline's work is
/// CPU-bound, so more threads only contend (100,000 of them took minutes
/// to start).
const MAX_THREADS_PER_CORE: usize = 4;

impl Output {
    /// What every command does before its work: refuse a `--json` file it
    /// could not write or that is one of its `inputs` (flag or role, path),
    /// then size the pipeline's thread pool.
    pub(crate) fn start(&self, inputs: &[(&str, Option<&std::path::Path>)]) -> Result<(), Failure> {
        if let Some(path) = &self.json {
            output::check_output(self.json_flag.unwrap_or("--json"), path, inputs)?;
        }
        if let Some(path) = &self.summary {
            output::check_output("--output", path, inputs)?;
        }
        setup_threads(self)
    }
}

fn setup_threads(out: &Output) -> Result<(), Failure> {
    if let Some(n) = out.threads {
        if n == 0 {
            return Err(Failure::Usage("--threads: must be at least 1".into()));
        }
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        let most = MAX_THREADS_PER_CORE * cores;
        if n > most {
            return Err(Failure::Usage(format!(
                "--threads: {n} is more than {MAX_THREADS_PER_CORE} per core of the {cores} here (at most {most}): \
                 more threads than that only contend"
            )));
        }
        rayon::ThreadPoolBuilder::new().num_threads(n).build_global().map_err(|e| Failure::Run(e.to_string()))?;
    }
    Ok(())
}

pub(crate) fn image_info(path: &std::path::Path, out: &Output) -> Result<(), Failure> {
    out.start(&[("image", Some(path))])?;
    // A missing input file is a usage error, as for `run` and `replay`;
    // the image's errors name its path already.
    if !path.exists() {
        return Err(Failure::Usage(format!("{}: no such file", path.display())));
    }
    // A directory or a file of something else is a usage error too.
    let info = duraflash::device::inspect(path).map_err(|e| match e {
        ImageError::NotRegular { .. } => Failure::Usage(e.to_string()),
        ImageError::Io { .. } => Failure::Run(e.to_string()),
        e if e.is_wrong_file() => Failure::Usage(format!("{}: {e}", path.display())),
        e => Failure::Run(format!("{}: {e}", path.display())),
    })?;
    let (c, s) = (&info.config, &info.summary.stats);
    let mut summary = format!(
        "{}: duraflash image version {} ({} bytes, written by duraflash {})\n",
        path.display(),
        info.version,
        info.file_bytes,
        info.summary.written_by
    );
    summary += &format!(
        "drive: {} ({}), firmware {}, media {}, compression {}, dedup {}, {} blocks of {} x {} B pages\n",
        c.name,
        ByteSize(c.logical_bytes),
        c.firmware.name,
        output::name(&c.media),
        output::on_off(c.compression),
        output::on_off(c.dedup),
        c.geometry.total_blocks(),
        c.geometry.pages_per_block,
        c.geometry.page_bytes
    );
    summary += &format!("clock: {:.6} s simulated\n", info.summary.now_ns as f64 / 1e9);
    summary += &format!(
        "counters: host writes {}, NAND writes {}, WAF {:.3}, mapped units {}, live chunks {}, free blocks {}, erases {}, P/E max {}\n",
        ByteSize(s.host_write_bytes),
        ByteSize(s.nand_bytes_programmed),
        s.waf,
        s.mapped_units,
        s.live_chunks,
        s.free_blocks,
        s.erases,
        s.pe_max
    );
    summary += "sections:";
    for (tag, len) in &info.sections {
        summary += &format!(" {tag}={len}");
    }
    summary += "\n";
    emit(out, &summary, &info, &[])
}

/// Notes a capacity that is no whole number of the drive's units: the
/// drive holds the whole units below it.
pub(crate) fn note_rounded_capacity(overrides: &DriveOverrides, cfg: &DriveConfig) {
    if let Some(asked) = overrides.capacity.and_then(|c| c.bytes()).filter(|&b| b != cfg.logical_bytes) {
        note!(
            "duraflash: note: capacity {asked} bytes is not a whole number of {}-byte units; the drive holds {} bytes",
            cfg.unit_bytes,
            cfg.logical_bytes
        );
    }
}
