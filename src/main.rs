//! The `duraflash` command line: the only place that exits the process.
//!
//! Exit status: 0 success, 1 the run failed, 2 usage error (unknown flag,
//! bad value), always with one line naming what was wrong.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use duraflash::config::{DriveConfig, GcPolicy, Media};
use duraflash::content::pattern::DataSpec;
use duraflash::host::raid::{Level, TrimPolicy};
use duraflash::host::smart::Smart;
use duraflash::lab::soak;
use duraflash::lab::wa::{self, WaReport, WaSpec};
use duraflash::workload::access::Access;
use duraflash::{ByteSize, Drive};

mod commands;
mod serve;

#[derive(Parser)]
#[command(name = "duraflash", version, about = "A SandForce-style SSD controller model: compression, dedup, GC, TRIM")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Steady-state write-amplification study: fill, random writes to
    /// steady state, then measure WAF (with the analytic model beside it).
    Wa(WaArgs),
    /// HD Tach-style pass: sequential read and write sweeps across the
    /// span in zones (the write sweep runs on a copy of the drive).
    Hdtach(HdtachArgs),
    /// ATTO-style sweep: transfer sizes 0.5 KiB to 8 MiB at queue depth 4,
    /// highly compressible data, over a bounded span.
    Atto(AttoArgs),
    /// IOmeter-style 4 KiB random read and write IOPS at queue depths 1,
    /// 3, 32 and 64.
    Iometer(IometerArgs),
    /// Run a fio job file against the simulated drive.
    Run(RunArgs),
    /// The reviewers' SandForce torture protocol: clean, tortured, after
    /// TRIM and after a second TRIM, each measured with HD Tach. Runs the
    /// whole drive; `--capacity 4GiB` is a one-minute scale model.
    Torture(TortureArgs),
    /// Real data through the drive: compression, dedup, steady-state WAF
    /// and write speed for each corpus (committed samples, generated sets
    /// or any file).
    Corpus(CorpusArgs),
    /// A grid of write-amplification studies (OP, GC policy, pages per
    /// block, compressibility, dedup, TRIM, workload) run in parallel;
    /// CSV, JSON and a plot of WAF against OP.
    Sweep(SweepArgs),
    /// What simulating costs here: host writes per CPU-second and per
    /// second for content-free, content and retained modes, wall time per
    /// write as the drive grows, and the state's memory by structure.
    Bench(BenchArgs),
    /// Every reproduced figure in one run: the WA model check, corpora, the
    /// SandForce torture protocol and ATTO, TRIM through RAID-0, manual
    /// TRIM (optimizer) and SMART, written as DIR/index.html, DIR/report.md
    /// and DIR/results.json.
    Reproduce(ReproduceArgs),
    /// Serve the drive over NBD (qemu, nbdinfo, nbdcopy, fio, nbdfuse) until
    /// SIGINT/SIGTERM, then print the final JSON report.
    Serve(ServeArgs),
    /// The RAID TRIM experiment: one member alone, then the array clean,
    /// filled, tortured with 4 KiB random writes at QD 32, formatted (TRIM
    /// every LBA, which the driver may drop) and measured with HD Tach.
    Raid(RaidArgs),
    /// Manual TRIM: a desktop-like trace over a filesystem model scored
    /// clean, used (deleted files never trimmed) and after a wiper TRIMs
    /// the filesystem's free space.
    Optimizer(OptimizerArgs),
    /// Replay a block trace (MSR Cambridge, blkparse, FIU dedup, SPC;
    /// plain or gzip) on the drive and report WAF, dedup and latencies.
    Replay(ReplayArgs),
    /// Drive images: `image info PATH` shows what one holds.
    #[command(subcommand)]
    Image(ImageCommand),
    /// Millions of mixed operations on a small drive, checked against a
    /// shadow copy and the invariant checker; reports ops/s.
    Soak(SoakArgs),
}

#[derive(Subcommand)]
enum ImageCommand {
    /// Print an image's format version, config, counters and clock, and its sections.
    Info {
        /// The image file.
        path: PathBuf,
        #[command(flatten)]
        out: Output,
    },
}

#[derive(Args)]
struct SoakArgs {
    #[command(flatten)]
    drive: DriveArgs,
    /// Operations to run.
    #[arg(long, default_value_t = 10_000_000)]
    ops: u64,
    /// Run the invariant checker every N operations (0: only at the end).
    #[arg(long, default_value_t = 100_000)]
    check_every: u64,
    /// Save and reload the drive through an image every N operations (0: never).
    #[arg(long, default_value_t = 1_000_000)]
    image_every: u64,
    /// Where those images go (default: a file in the temp directory, removed at the end).
    #[arg(long)]
    image: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
}

/// Capacity `soak` uses when none is given: small, so GC runs constantly.
const SOAK_DEFAULT_CAPACITY: u64 = 64 << 20;

#[derive(Args)]
struct ReproduceArgs {
    /// Directory the report is written to.
    #[arg(long, default_value = "report")]
    out: PathBuf,
    /// quick (scale models, minutes), full (the real drive sizes, hours) or tiny (seconds, for tests).
    #[arg(long, default_value = "quick", value_parser = |s: &str| s.parse::<duraflash::lab::report::Scale>())]
    scale: duraflash::lab::report::Scale,
    /// Run only these parts (comma-separated): wa, corpora, torture, atto, raid, optimizer, smart.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Base seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

#[derive(Args)]
struct SweepArgs {
    /// Built-in drive preset.
    #[arg(long, default_value = "sf2281-240g")]
    preset: String,
    /// Host capacity of every point's drive.
    #[arg(long, default_value = "512MiB")]
    capacity: ByteSize,
    /// What the NAND keeps.
    #[arg(long, value_parser = parse_media, default_value = "metadata-only")]
    media: Media,
    /// Base seed; point i runs with its own seed derived from it.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Over-provisioning values (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "0.07,0.15,0.28", allow_negative_numbers = true)]
    op: Vec<f64>,
    /// GC policies (greedy, cost-benefit, fifo).
    #[arg(long, value_delimiter = ',', value_parser = parse_gc, default_value = "greedy")]
    gc: Vec<GcPolicy>,
    /// Pages per erase block values (small blocks keep OP steps fine on a small drive).
    #[arg(long, value_delimiter = ',', default_value = "64")]
    pages_per_block: Vec<u32>,
    /// fio buffer_compress_percentage values (0: incompressible).
    #[arg(long, value_delimiter = ',', value_parser = parse_pct, default_value = "0,50")]
    compress_pct: Vec<u8>,
    /// fio dedupe_percentage values.
    #[arg(long, value_delimiter = ',', value_parser = parse_pct, default_value = "0,30")]
    dedupe_pct: Vec<u8>,
    /// Share of requests that TRIM a random mapped unit (percent values).
    #[arg(long, value_delimiter = ',', value_parser = parse_pct, default_value = "0")]
    trim_pct: Vec<u8>,
    /// Workloads: uniform, zipf:THETA, sequential.
    #[arg(long, value_delimiter = ',', default_value = "uniform")]
    workload: Vec<String>,
    /// Random-write drive-writes before measuring, per point.
    #[arg(long, default_value_t = 2.0)]
    precondition: f64,
    /// Measured random-write drive-writes, per point.
    #[arg(long, default_value_t = 1.0)]
    measure: f64,
    /// Write the results as CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Plot WAF against OP (SVG), one curve per other combination.
    #[arg(long)]
    plot: Option<PathBuf>,
    /// Write one self-contained command line per point (for GNU parallel or
    /// a Slurm array) instead of running; each writes DIR/point-N.json.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["point", "merge"])]
    emit_jobs: Option<PathBuf>,
    /// Where the emitted jobs write their JSON.
    #[arg(long, value_name = "DIR", default_value = "sweep-points")]
    points_dir: PathBuf,
    /// Run only grid point N.
    #[arg(long, value_name = "N", conflicts_with = "merge")]
    point: Option<usize>,
    /// Combine the JSON files of DIR (from --point runs) instead of running.
    #[arg(long, value_name = "DIR")]
    merge: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
}

#[derive(Args)]
struct BenchArgs {
    /// Built-in drive preset.
    #[arg(long, default_value = "sf2281-240g")]
    preset: String,
    /// Drive capacities to measure (comma-separated sizes, or 'full' for the preset's); each
    /// moves to the nearest whole unit that gives exactly --op with whole blocks per die.
    #[arg(long, value_delimiter = ',', default_value = "4GiB")]
    sizes: Vec<String>,
    /// Modes: content-free, content, retained.
    #[arg(long, value_delimiter = ',', value_enum, default_value = "content-free,content,retained")]
    modes: Vec<duraflash::lab::bench::Mode>,
    /// Over-provisioning of the data blocks, the same at every size.
    #[arg(long, default_value_t = 0.07)]
    op: f64,
    /// Random-write drive-writes before the measured phase.
    #[arg(long, default_value_t = 1.0)]
    precondition: f64,
    /// Random-write drive-writes measured.
    #[arg(long, default_value_t = 1.0)]
    measure: f64,
    /// Host writes measured at least, whatever --measure gives (a small drive's
    /// drive-write is too short to stand above a shared machine's noise).
    #[arg(long, default_value_t = 2_000_000)]
    min_writes: u64,
    /// Seed of every random stream.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Plot wall time per host write against capacity (SVG) when several sizes run.
    #[arg(long)]
    plot: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
}

#[derive(Args)]
struct CorpusArgs {
    /// Corpus names (see --list) or file paths; default: every known corpus.
    corpora: Vec<String>,
    #[command(flatten)]
    drive: DriveArgs,
    /// Share of the drive each corpus is tiled over.
    #[arg(long, default_value_t = 1.0)]
    share: f64,
    /// Random-overwrite passes over the share before measuring.
    #[arg(long, default_value_t = 2.0)]
    precondition: f64,
    /// Random-overwrite passes measured.
    #[arg(long, default_value_t = 1.0)]
    measure: f64,
    /// The corpora directory (default: $DURAFLASH_CORPORA or the source tree's corpora/).
    #[arg(long)]
    corpora_dir: Option<PathBuf>,
    /// List the known corpora and exit.
    #[arg(long)]
    list: bool,
    /// Write a bar chart (compression, dedup, WAF per corpus) as SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    drive: DriveArgs,
    /// Address NBD clients connect to (port 0: any free port; the one bound
    /// is printed on stderr).
    #[arg(long, default_value = "127.0.0.1:10809")]
    listen: std::net::SocketAddr,
    /// Export name (the empty default name selects it too).
    #[arg(long, default_value = "duraflash")]
    export: String,
    /// Also answer Prometheus scrapes: GET http://ADDR/metrics.
    #[arg(long)]
    metrics: Option<std::net::SocketAddr>,
    /// Seconds between one-line summaries on stderr (0: none).
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    stats_interval: f64,
    /// Depth of the simulated host queue served commands are issued through.
    #[arg(long, default_value_t = 32)]
    qd: u32,
    /// Clients served at once; one more is refused in its handshake with
    /// NBD_REP_ERR_POLICY "too many connections" (qemu prints it), not closed silently.
    #[arg(long, default_value_t = 64)]
    max_connections: usize,
    /// Disconnect a client that sends no request (or leaves replies unread)
    /// for this long, freeing its slot: 600, 90s, 10m, 1h (0: never).
    #[arg(long, default_value = "10m", value_parser = serve::parse_duration)]
    idle_timeout: std::time::Duration,
    /// Check the drive's invariants at start and then this often if it
    /// changed (the drive is locked meanwhile; 0: only at shutdown). The
    /// latest result is the duraflash_invariants_* metrics.
    #[arg(long, default_value = "60s", value_parser = serve::parse_duration, allow_negative_numbers = true)]
    check_interval: std::time::Duration,
    /// Write the final JSON report to PATH instead of stdout (checked for
    /// writing at start).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Drive image: resumed when it exists, created otherwise; saved before
    /// every FLUSH or FUA write is answered, and on shutdown. Refused with
    /// --members 2 or more (exit 2): an array is not saved to an image.
    #[arg(long)]
    image: Option<PathBuf>,
    /// Serve a host RAID array of this many drives instead of one (the
    /// drive flags, --capacity included, describe each member).
    #[arg(long, default_value_t = 1)]
    members: usize,
    /// RAID level of the array: 0, 1 or 10 (needs --members 2 or more).
    #[arg(long)]
    level: Option<Level>,
    /// The array's RAID driver, which decides whether TRIM reaches the members:
    /// rst-10.6 (RAID-1 only), rst-11.2 (RAID-0 and 1), passthrough.
    #[arg(long)]
    driver: Option<TrimPolicy>,
    /// Stripe size of the array: a multiple of the members' 4 KiB mapping
    /// unit [default: 128KiB].
    #[arg(long)]
    stripe: Option<ByteSize>,
}

#[derive(Args)]
struct ReplayArgs {
    /// The trace file (gzip is read directly).
    trace: PathBuf,
    /// Trace format (default: detected from the first records).
    #[arg(long, value_enum)]
    format: Option<TraceFormatArg>,
    /// blkparse events replayed: D (dispatched) or C (completed).
    #[arg(long, value_enum, ignore_case = true, default_value = "D")]
    blkparse_action: BlkActionArg,
    /// Bytes one FIU MD5 covers: 4096 (mail, web-vm) or 512 (homes); default: from the first record.
    #[arg(long, value_parser = parse_fiu_block)]
    fiu_block: Option<duraflash::trace::FiuBlock>,
    /// as-fast-as-possible keeps --qd commands outstanding; timed issues them at their trace times.
    #[arg(long, value_enum, default_value = "as-fast-as-possible")]
    speed: SpeedArg,
    /// Commands outstanding at most.
    #[arg(long, default_value_t = 32)]
    qd: u32,
    /// Wrap requests beyond the drive's end onto it (default: reject and count them).
    #[arg(long)]
    lba_wrap: bool,
    /// Compressibility of the generated content: share of each 512-byte segment that is zeros (fio's meaning).
    #[arg(long, value_parser = parse_pct, default_value = "0")]
    compress_pct: u8,
    /// Skip malformed lines and count them (default: stop at the first with its line number).
    #[arg(long)]
    skip_bad: bool,
    /// Write the WAF-over-time chart (waf.svg) into this directory.
    #[arg(long)]
    plot: Option<PathBuf>,
    #[command(flatten)]
    drive: DriveArgs,
    #[command(flatten)]
    out: Output,
    /// Drive image: resumed when it exists, created otherwise; saved when the run ends.
    #[arg(long)]
    image: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum TraceFormatArg {
    Msr,
    Blkparse,
    Fiu,
    Spc,
}

#[derive(Clone, Copy, ValueEnum)]
enum BlkActionArg {
    #[value(name = "D")]
    D,
    #[value(name = "C")]
    C,
}

#[derive(Clone, Copy, ValueEnum)]
#[value(rename_all = "kebab-case")]
enum SpeedArg {
    AsFastAsPossible,
    Timed,
}

fn parse_fiu_block(s: &str) -> Result<duraflash::trace::FiuBlock, String> {
    s.parse::<u64>()
        .ok()
        .and_then(duraflash::trace::FiuBlock::from_bytes)
        .ok_or_else(|| format!("'{s}' is not 512 or 4096"))
}

#[derive(Args)]
struct TortureArgs {
    #[command(flatten)]
    drive: DriveArgs,
    /// Data the fill, torture and write sweeps use.
    #[arg(long, value_enum, default_value = "compressible")]
    data: TortureDataArg,
    /// Simulated minutes of torture on the full-size drive (scaled with --capacity).
    #[arg(long, default_value_t = 20.0, conflicts_with = "drive_writes", allow_negative_numbers = true)]
    minutes: f64,
    /// Torture for this many drive-writes instead of --minutes.
    #[arg(long, allow_negative_numbers = true)]
    drive_writes: Option<f64>,
    /// Queue depth of the random writes.
    #[arg(long, default_value_t = 32)]
    qd: u32,
    /// HD Tach zones per pass.
    #[arg(long, default_value_t = duraflash::workload::review::HDTACH_ZONES)]
    zones: u32,
    /// Also run ATTO over this span at every state (sizes below 4 KiB need --media memory).
    #[arg(long)]
    atto: Option<ByteSize>,
    /// Write the HD Tach read and write graphs (SVG) into this directory.
    #[arg(long)]
    plot: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
}

#[derive(Args)]
struct RaidArgs {
    /// RAID level: 0, 1 or 10.
    #[arg(long, value_parser = parse_level)]
    level: Level,
    /// Member drives (RAID-0 and RAID-1: 2 or more; RAID-10: even, 4 or more).
    #[arg(long)]
    members: usize,
    /// Stripe size: a multiple of the members' 4 KiB mapping unit.
    #[arg(long, default_value = "128KiB")]
    stripe: ByteSize,
    /// The RAID driver's TRIM policy: rst-10.6 (RAID-1 only), rst-11.2 (RAID-0 and 1), passthrough.
    #[arg(long, value_parser = parse_policy)]
    driver: TrimPolicy,
    /// The protocol run on the array.
    #[arg(long, value_enum, default_value = "torture")]
    protocol: RaidProtocol,
    /// Member drives; --capacity is each member's (default 1GiB).
    #[command(flatten)]
    drive: DriveArgs,
    /// Simulated minutes of torture on full-size members (scaled with --capacity).
    #[arg(long, default_value_t = 30.0, allow_negative_numbers = true)]
    minutes: f64,
    /// HD Tach zones per pass.
    #[arg(long, default_value_t = duraflash::workload::review::HDTACH_ZONES)]
    zones: u32,
    /// Write the HD Tach read and write graphs (SVG) into this directory.
    #[arg(long)]
    plot: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
}

#[derive(Args)]
struct OptimizerArgs {
    /// Built-in drive preset (a conventional drive: the trace writes no content).
    #[arg(long, default_value = "intel-x25m-g2-160g")]
    preset: String,
    /// Scale the drive down to this host capacity.
    #[arg(long, default_value = "1GiB")]
    capacity: ByteSize,
    /// Seed of the filesystem content and the trace.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    out: Output,
}

#[derive(Clone, Copy, ValueEnum)]
enum RaidProtocol {
    /// Secure erase, fill, 4 KiB random writes at QD 32, format, HD Tach.
    Torture,
}

fn parse_level(s: &str) -> Result<Level, String> {
    s.parse().map_err(|e: duraflash::host::raid::RaidError| e.to_string())
}

fn parse_policy(s: &str) -> Result<TrimPolicy, String> {
    s.parse().map_err(|e: duraflash::host::raid::RaidError| e.to_string())
}

#[derive(Clone, Copy, ValueEnum)]
#[value(rename_all = "kebab-case")]
enum TortureDataArg {
    Compressible,
    PseudoRandom,
    Incompressible,
}

/// What written data looks like (fio's buffer options).
#[derive(Args, Clone)]
struct DataArgs {
    /// Data content: incompressible (random) or compressible (fio-style, see --compress-pct).
    #[arg(long, value_enum, default_value = "incompressible")]
    data: DataKind,
    /// fio's buffer_compress_percentage: share of each 512-byte segment that is zeros.
    #[arg(long, value_parser = parse_pct)]
    compress_pct: Option<u8>,
    /// fio's dedupe_percentage: share of units that repeat earlier content.
    #[arg(long, value_parser = parse_pct, default_value = "0")]
    dedupe_pct: u8,
}

impl DataArgs {
    /// The data spec and the compress percentage it uses.
    fn spec(&self) -> Result<(DataSpec, u8), Failure> {
        let pct = match (self.data, self.compress_pct) {
            (DataKind::Incompressible, Some(p)) if p > 0 => {
                return Err(Failure::Usage("--compress-pct needs --data compressible".into()))
            }
            (DataKind::Incompressible, _) => 0,
            (DataKind::Compressible, p) => p.unwrap_or(DEFAULT_COMPRESS_PCT),
        };
        let spec = DataSpec::compressible(pct)
            .and_then(|d| d.with_dedupe(self.dedupe_pct))
            .map_err(|e| Failure::Usage(e.to_string()))?;
        Ok((spec, pct))
    }
}

#[derive(Args)]
struct HdtachArgs {
    #[command(flatten)]
    drive: DriveArgs,
    #[command(flatten)]
    data: DataArgs,
    /// Zones sampled across the span.
    #[arg(long, default_value_t = duraflash::workload::review::HDTACH_ZONES)]
    zones: u32,
    /// Fill the drive sequentially first (default: measure the secure-erased drive).
    #[arg(long)]
    fill: bool,
    /// Write the HD Tach graph (MB/s against position) as SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
    /// Drive image: resumed when it exists, created otherwise; saved when the run ends.
    #[arg(long)]
    image: Option<PathBuf>,
}

#[derive(Args)]
struct AttoArgs {
    #[command(flatten)]
    drive: DriveArgs,
    /// Span written and read at each transfer size.
    #[arg(long, default_value = "256MiB")]
    span: ByteSize,
    /// Write the ATTO chart (MB/s against transfer size) as SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
    /// Drive image: resumed when it exists, created otherwise; saved when the run ends.
    #[arg(long)]
    image: Option<PathBuf>,
}

#[derive(Args)]
struct IometerArgs {
    #[command(flatten)]
    drive: DriveArgs,
    #[command(flatten)]
    data: DataArgs,
    /// Span the random commands cover; it is filled sequentially first.
    #[arg(long, default_value = "1GiB")]
    span: ByteSize,
    /// Commands per queue depth and direction.
    #[arg(long, default_value_t = 20_000)]
    ops: u64,
    /// Write the IOPS-against-queue-depth chart as SVG.
    #[arg(long)]
    plot: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
    /// Drive image: resumed when it exists, created otherwise; saved when the run ends.
    #[arg(long)]
    image: Option<PathBuf>,
}

#[derive(Args)]
struct RunArgs {
    /// The fio job file.
    job: PathBuf,
    #[command(flatten)]
    drive: DriveArgs,
    /// Drive image: resumed when it exists, created otherwise; saved when the jobs finish.
    #[arg(long)]
    image: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
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

/// Flags that build a drive; they mean the same on every command.
#[derive(Args, Clone)]
struct DriveArgs {
    /// Built-in drive preset: sf2281-240g, samsung830-64g, intel-x25m-g2-160g.
    #[arg(long, default_value = "sf2281-240g")]
    preset: String,
    /// Drive config file (TOML), instead of a preset.
    #[arg(long, conflicts_with = "preset")]
    config: Option<PathBuf>,
    /// Scale the drive down to this host capacity (240GB = 240e9 bytes, 256GiB = 256 x 2^30),
    /// or 'full' for the preset's own.
    #[arg(long, value_parser = parse_capacity)]
    capacity: Option<Capacity>,
    /// Over-provisioning of the data blocks: (physical - logical) / logical, GC reserve excluded.
    #[arg(long, allow_negative_numbers = true)]
    op: Option<f64>,
    /// NAND pages per erase block (the array keeps its physical size unless --op is given).
    #[arg(long)]
    pages_per_block: Option<u32>,
    /// GC victim policy.
    #[arg(long, value_parser = parse_gc)]
    gc: Option<GcPolicy>,
    /// Compress units (lz4).
    #[arg(long, value_enum)]
    compression: Option<Toggle>,
    /// Store identical units once.
    #[arg(long, value_enum)]
    dedup: Option<Toggle>,
    /// What the NAND keeps: memory (data, reads work) or metadata-only.
    #[arg(long, value_parser = parse_media)]
    media: Option<Media>,
    /// Seed of every random stream.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Firmware profile: sf-3.x, sf-5.0.2, sf-5.0.3, generic (default: the preset's).
    #[arg(long)]
    firmware: Option<String>,
}

fn parse_gc(s: &str) -> Result<GcPolicy, String> {
    s.parse()
}

fn parse_media(s: &str) -> Result<Media, String> {
    s.parse()
}

fn parse_access(s: &str) -> Result<Access, String> {
    s.parse()
}

fn parse_pct(s: &str) -> Result<u8, String> {
    match s.parse::<u8>() {
        Ok(v) if v <= 100 => Ok(v),
        _ => Err(format!("'{s}' is not a percentage from 0 to 100")),
    }
}

impl DriveArgs {
    /// The drive config these flags describe; `default_capacity` applies
    /// when `--capacity` is not given.
    fn build(&self, default_capacity: Option<u64>) -> Result<DriveConfig, String> {
        let mut cfg = match &self.config {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| format!("--config {}: {e}", path.display()))?;
                DriveConfig::from_toml(&text).map_err(|e| format!("--config {}: {e}", path.display()))?
            }
            None => DriveConfig::preset(&self.preset).map_err(|e| format!("--preset: {e}"))?,
        };
        cfg.seed = self.seed;
        if let Some(c) = self.compression {
            cfg.compression = c.on();
        }
        if let Some(d) = self.dedup {
            cfg.dedup = d.on();
        }
        if let Some(m) = self.media {
            cfg.media = m;
        }
        if let Some(g) = self.gc {
            cfg.gc.policy = g;
        }
        if let Some(f) = &self.firmware {
            cfg.firmware = duraflash::firmware::Firmware::profile(f).map_err(|e| format!("--firmware: {e}"))?;
        }
        let cap = match self.capacity {
            Some(Capacity::Full) => None,
            Some(Capacity::Bytes(b)) => Some(b),
            None => default_capacity,
        };
        if let Some(cap) = cap {
            cfg = cfg.scaled(cap).map_err(|e| format!("--capacity: {e}"))?;
        }
        if let Some(ppb) = self.pages_per_block {
            cfg = cfg.with_pages_per_block(ppb).map_err(|e| format!("--pages-per-block: {e}"))?;
        }
        if let Some(op) = self.op {
            cfg = cfg.with_op(op).map_err(|e| format!("--op: {e}"))?;
        }
        cfg.validate().map_err(|e| e.to_string())?;
        Ok(cfg)
    }
}

/// The drive the flags describe, or the one saved in `image` when that
/// file exists: then the flags must describe the same drive, or the image
/// is refused naming the fields that differ.
fn open_drive(cfg: DriveConfig, image: Option<&std::path::Path>) -> Result<Drive, Failure> {
    match image {
        Some(path) if path.exists() => {
            let drive = Drive::load(path).map_err(|e| Failure::Run(format!("--image {}: {e}", path.display())))?;
            let fields = duraflash::image::config_diff(drive.config(), &cfg);
            if !fields.is_empty() {
                let e = duraflash::image::ImageError::ConfigMismatch(format!(
                    "the drive flags differ in {} (give the flags the image was created with)",
                    fields.join(", ")
                ));
                return Err(Failure::Usage(format!("--image {}: {e}", path.display())));
            }
            Ok(drive)
        }
        _ => Drive::new(cfg).map_err(|e| Failure::Usage(e.to_string())),
    }
}

/// Saves the drive to `image`, if given.
fn save_image(drive: &Drive, image: Option<&std::path::Path>) -> Result<(), Failure> {
    match image {
        Some(path) => drive.save(path).map_err(|e| Failure::Run(format!("--image {}: {e}", path.display()))),
        None => Ok(()),
    }
}

fn image_info(path: &std::path::Path, out: &Output) -> Result<(), Failure> {
    let info = duraflash::device::inspect(path).map_err(|e| Failure::Run(format!("{}: {e}", path.display())))?;
    let (c, s) = (&info.config, &info.summary.stats);
    let mut summary = format!(
        "{}: duraflash image version {} ({} bytes, written by duraflash {})\n",
        path.display(),
        info.version,
        info.file_bytes,
        info.summary.written_by
    );
    summary += &format!(
        "drive: {} ({}), firmware {}, media {:?}, compression {}, dedup {}, {} blocks of {} x {} B pages\n",
        c.name,
        ByteSize(c.logical_bytes),
        c.firmware.name,
        c.media,
        c.compression,
        c.dedup,
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

fn soak(args: SoakArgs) -> Result<(), Failure> {
    setup_threads(&args.out)?;
    let mut cfg = args.drive.build(Some(SOAK_DEFAULT_CAPACITY)).map_err(Failure::Usage)?;
    if args.drive.media.is_none() {
        cfg.media = Media::Memory;
    }
    if cfg.media != Media::Memory {
        return Err(Failure::Usage("--media: soak verifies reads, so it needs memory media".into()));
    }
    let mut drive = Drive::new(cfg.clone()).map_err(|e| Failure::Usage(e.to_string()))?;
    let temp = args.image.is_none();
    let image_path = args
        .image
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join(format!("duraflash-soak-{}.img", std::process::id())));
    let spec = soak::SoakSpec {
        ops: args.ops,
        check_every: args.check_every,
        image_every: args.image_every,
        image_path: image_path.clone(),
        seed: cfg.seed,
    };
    let bar = progress_bar(args.out.quiet);
    let result = soak::run(&mut drive, &spec, &mut |f| {
        if let Some(b) = &bar {
            b.set_position((f * 1000.0) as u64);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if temp {
        let _ = std::fs::remove_file(&image_path);
    }
    let report = result.map_err(|e| Failure::Run(format!("soak violation: {e}")))?;
    let summary = format!(
        "soak: {} ops ({} writes, {} reads, {} TRIMs, {} idle GC) in {:.1} s = {:.0} ops/s; {} invariant checks, {} image round trips, 0 violations; WAF {:.3}, {} GC victims",
        report.ops,
        report.writes,
        report.reads,
        report.trims,
        report.idle_gcs,
        report.seconds,
        report.ops_per_second,
        report.checks,
        report.images,
        report.stats.waf,
        report.stats.gc_victims
    );
    emit(&args.out, &summary, &report, &[])
}

/// Where the JSON result goes.
#[derive(Args)]
struct Output {
    /// Write the full result as JSON to PATH, or to stdout with '-' (the summary then goes to stderr).
    #[arg(long)]
    json: Option<PathBuf>,
    /// No progress bars.
    #[arg(long)]
    quiet: bool,
    /// Worker threads for the compression/hash pipeline (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Print the drive's SMART attributes (smartctl -A style) and add `smart` to the JSON.
    #[arg(long)]
    smart: bool,
}

#[derive(Args)]
struct WaArgs {
    #[command(flatten)]
    drive: DriveArgs,
    /// Drive image: resumed when it exists, created otherwise; saved when the run finishes.
    #[arg(long)]
    image: Option<PathBuf>,
    /// Where random writes go: uniform, zipf:THETA or sequential.
    #[arg(long, default_value = "uniform", value_parser = parse_access)]
    workload: Access,
    /// Request size (a multiple of the 4 KiB unit).
    #[arg(long, default_value = "4k")]
    bs: ByteSize,
    #[command(flatten)]
    data: DataArgs,
    /// Share of requests that TRIM one random mapped unit instead of writing.
    #[arg(long, value_parser = parse_pct, default_value = "0")]
    trim_pct: u8,
    /// Random-write drive-writes before measuring.
    #[arg(long, default_value_t = 2.0, allow_negative_numbers = true)]
    precondition: f64,
    /// Random-write drive-writes measured.
    #[arg(long, default_value_t = 1.0, allow_negative_numbers = true)]
    measure: f64,
    #[command(flatten)]
    out: Output,
}

#[derive(Clone, Copy, ValueEnum)]
#[value(rename_all = "kebab-case")]
enum DataKind {
    Incompressible,
    Compressible,
}

/// Capacity `wa` uses when none is given: large enough for over a thousand
/// blocks on every preset, small enough to run in seconds.
const WA_DEFAULT_CAPACITY: u64 = 2 << 30;

/// Default --compress-pct for `--data compressible`.
const DEFAULT_COMPRESS_PCT: u8 = 50;

/// The JSON result of `wa`.
#[derive(Serialize)]
struct WaOutput<'a> {
    command: Vec<String>,
    version: &'static str,
    seed: u64,
    config: &'a DriveConfig,
    workload: &'a WaSpec,
    compress_pct: u8,
    dedupe_pct: u8,
    #[serde(flatten)]
    report: &'a WaReport,
}

enum Failure {
    Usage(String),
    Run(String),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if e.use_stderr() => {
            // One line naming the flag and what it accepts; no usage dump.
            let text = e.to_string();
            let line: Vec<&str> = text
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information"))
                .map(|l| l.trim_start_matches("error: "))
                .collect();
            eprintln!("duraflash: error: {}", line.join("; "));
            return ExitCode::from(2);
        }
        Err(e) => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    let result = match cli.command {
        Command::Wa(args) => run_wa(args),
        Command::Hdtach(args) => commands::hdtach(args),
        Command::Atto(args) => commands::atto(args),
        Command::Iometer(args) => commands::iometer(args),
        Command::Run(args) => commands::run(args),
        Command::Torture(args) => commands::torture(args),
        Command::Corpus(args) => commands::corpus(args),
        Command::Sweep(args) => commands::sweep(args),
        Command::Bench(args) => commands::bench(args),
        Command::Reproduce(args) => commands::reproduce(args),
        Command::Serve(args) => serve::serve(args),
        Command::Replay(args) => commands::replay(args),
        Command::Raid(args) => commands::raid(args),
        Command::Optimizer(args) => commands::optimizer(args),
        Command::Image(ImageCommand::Info { path, out }) => image_info(&path, &out),
        Command::Soak(args) => soak(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!("duraflash: error: {msg}");
            ExitCode::from(2)
        }
        Err(Failure::Run(msg)) => {
            eprintln!("duraflash: failed: {msg}");
            ExitCode::from(1)
        }
    }
}

fn setup_threads(out: &Output) -> Result<(), Failure> {
    if let Some(n) = out.threads {
        if n == 0 {
            return Err(Failure::Usage("--threads: must be at least 1".into()));
        }
        rayon::ThreadPoolBuilder::new().num_threads(n).build_global().map_err(|e| Failure::Run(e.to_string()))?;
    }
    Ok(())
}

/// A `--capacity` value.
#[derive(Clone, Copy, Debug)]
enum Capacity {
    /// The preset's own size.
    Full,
    /// Scaled down to this many host bytes.
    Bytes(u64),
}

fn parse_capacity(s: &str) -> Result<Capacity, String> {
    if s == "full" {
        Ok(Capacity::Full)
    } else {
        s.parse::<ByteSize>().map(|b| Capacity::Bytes(b.0))
    }
}

fn progress_bar(quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(1000);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>12} [{bar:30}] {percent:>3}% {elapsed_precise} eta {eta}")
            .expect("static template")
            .progress_chars("=> "),
    );
    Some(bar)
}

fn run_wa(args: WaArgs) -> Result<(), Failure> {
    setup_threads(&args.out)?;
    let cfg = args.drive.build(Some(WA_DEFAULT_CAPACITY)).map_err(Failure::Usage)?;
    let (data, compress_pct) = args.data.spec()?;
    let spec = WaSpec {
        access: args.workload,
        request_bytes: args.bs.0,
        data,
        trim_pct: args.trim_pct,
        span: 1.0,
        precondition: args.precondition,
        measure: args.measure,
    };
    spec.validate(&cfg).map_err(Failure::Usage)?;
    let mut drive = open_drive(cfg.clone(), args.image.as_deref())?;
    let report = commands::with_phases(args.out.quiet, |progress| wa::run(&mut drive, &spec, cfg.seed, progress))
        .map_err(Failure::Run)?;
    save_image(&drive, args.image.as_deref())?;
    let summary = wa_summary(&cfg, &report);
    let output = WaOutput {
        command: std::env::args().collect(),
        version: env!("CARGO_PKG_VERSION"),
        seed: cfg.seed,
        config: &cfg,
        workload: &spec,
        compress_pct,
        dedupe_pct: args.data.dedupe_pct,
        report: &report,
    };
    emit(&args.out, &summary, &output, &[("", Smart::of(&drive))])
}

/// Prints `summary` and writes `value` as JSON where `--json` says. With
/// `--smart`, each labelled SMART table (one per drive) follows the
/// summary, and the JSON gets `smart`: the table, or an object of tables
/// by label when there are several.
fn emit(out: &Output, summary: &str, value: &impl Serialize, smart: &[(&str, Smart)]) -> Result<(), Failure> {
    let mut summary = summary.to_string();
    let json = if out.smart {
        let mut value = serde_json::to_value(value).map_err(|e| Failure::Run(e.to_string()))?;
        if smart.is_empty() {
            return Err(Failure::Usage("--smart: this command has no drive to report on".into()));
        }
        let json = match smart {
            [(_, one)] => serde_json::to_value(one),
            many => serde_json::to_value(
                many.iter().map(|(l, s)| (l.to_string(), s)).collect::<std::collections::BTreeMap<_, _>>(),
            ),
        }
        .map_err(|e| Failure::Run(e.to_string()))?;
        if let Some(map) = value.as_object_mut() {
            map.insert("smart".into(), json);
        }
        for (label, table) in smart {
            let label = if label.is_empty() { String::new() } else { format!(" ({label})") };
            summary += &format!("SMART attributes{label}, {:?} table:\n{}", table.vendor, table.table());
        }
        serde_json::to_string_pretty(&value)
    } else {
        serde_json::to_string_pretty(value)
    }
    .map_err(|e| Failure::Run(e.to_string()))?;
    let summary = summary.as_str();
    match out.json.as_deref() {
        Some(p) if commands::is_stdout(p) => {
            eprint!("{summary}");
            println!("{json}");
        }
        Some(p) => {
            std::fs::write(p, json + "\n").map_err(|e| Failure::Run(format!("--json {}: {e}", p.display())))?;
            print!("{summary}");
        }
        None => print!("{summary}"),
    }
    std::io::stdout().flush().map_err(|e| Failure::Run(e.to_string()))
}

fn wa_summary(cfg: &DriveConfig, r: &WaReport) -> String {
    let mut s = String::new();
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    s += &format!(
        "drive      {} at {} ({} blocks of {} pages x {} B, {} dies), OP {:.1}% data / {:.1}% total\n",
        cfg.name,
        ByteSize(cfg.logical_bytes),
        r.blocks,
        r.pages_per_block,
        cfg.geometry.page_bytes,
        cfg.geometry.dies(),
        r.op * 100.0,
        r.op_total * 100.0
    );
    s += &format!(
        "data       compression {} ratio {:.3}, dedup {} ratio {:.3}, GC {:?}\n",
        on_off(cfg.compression),
        r.compression_ratio,
        on_off(cfg.dedup),
        r.dedup_ratio,
        cfg.gc.policy
    );
    s += &format!(
        "measured   WAF {:.3}  (host {:.2} GiB, NAND {:.2} GiB, GC moved {:.2} GiB, {} erases)\n",
        r.waf,
        gib(r.host_bytes),
        gib(r.nand_bytes),
        gib(r.gc_relocated_bytes),
        r.erases
    );
    match &r.model {
        Some(m) => {
            s += &format!(
                "model      greedy {:.3}, FIFO {:.3}  (alpha {:.4}, {:.0} chunks/block, live data {:.3} of logical, \
                 {:.3} stored bytes per host byte)\n",
                m.greedy, m.fifo, m.alpha, m.chunks_per_block, m.reduction, m.write_cost
            );
            s += &format!("           measured / greedy model = {:.3}\n", r.waf / m.greedy);
        }
        None => s += "model      n/a (the analytic models assume uniform random writes without TRIM)\n",
    }
    let v = &r.speed;
    s += &format!(
        "speed      {:.2} M host writes per CPU-second, {:.2} M per second ({} writes measured, {:.2} CPU-s, {:.2} s)\n",
        v.writes_per_cpu_sec / 1e6,
        v.writes_per_sec / 1e6,
        v.host_writes,
        v.cpu_secs,
        v.wall_secs
    );
    s
}

fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}
