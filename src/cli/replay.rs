//! `replay`: a block trace on the drive, with its summary and WAF chart.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use clap::{Args, ValueEnum};
use serde::Serialize;

use duraflash::config::DriveConfig;
use duraflash::content::pattern::DataSpec;
use duraflash::host::raid::{Array, Level, TrimPolicy};
use duraflash::host::smart::Smart;
use duraflash::host::BlockDevice;
use duraflash::lab::plot::{LineChart, Series};
use duraflash::trace::replay::{ReplayError, ReplayReport, ReplaySpec, Speed};
use duraflash::trace::target::ReplayTarget;
use duraflash::trace::{self, BlkAction, Format, ParseOptions, TraceError, TraceReader};
use duraflash::{ByteSize, Drive};

use super::output::{build, emit, with_progress, PlotDir, Provenance};
use super::trim::{parse_level, parse_policy};
use super::{parse_pct, save_image, DriveArgs, Failure, Output, Reads};

#[derive(Args)]
pub(crate) struct ReplayArgs {
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
    /// Exit 0 even when more than 1 % of the records are dropped (beyond the drive or oversized).
    #[arg(long)]
    allow_drops: bool,
    /// Compressibility of the generated content: share of each 512-byte segment that is zeros (fio's meaning).
    #[arg(long, value_parser = parse_pct, default_value = "0")]
    compress_pct: u8,
    /// Skip malformed lines and count them (default: stop at the first with its line number).
    #[arg(long)]
    skip_bad: bool,
    /// Write the WAF-over-time chart into DIR/waf.svg.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    #[command(flatten)]
    drive: DriveArgs,
    #[command(flatten)]
    out: Output,
    /// Drive image: resumed when it exists, created otherwise; saved when the run ends.
    #[arg(long)]
    image: Option<PathBuf>,
    /// Replay on a RAID array of this many member drives (the drive flags give each member).
    #[arg(long)]
    members: Option<usize>,
    /// The array's RAID level: 0, 1 or 10 (with --members).
    #[arg(long, value_parser = parse_level, requires = "members")]
    level: Option<Level>,
    /// The array driver's TRIM policy: rst-10.6 (RAID-1 only), rst-11.2 (RAID-0 and 1), passthrough (with --members).
    #[arg(long, value_parser = parse_policy, requires = "members")]
    driver: Option<TrimPolicy>,
    /// The array's stripe size: a multiple of the members' 4 KiB mapping unit.
    #[arg(long, default_value = "128KiB", requires = "members")]
    stripe: ByteSize,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum TraceFormatArg {
    Msr,
    Blkparse,
    Fiu,
    Spc,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum BlkActionArg {
    #[value(name = "D")]
    D,
    #[value(name = "C")]
    C,
}

#[derive(Clone, Copy, ValueEnum)]
#[value(rename_all = "kebab-case")]
pub(crate) enum SpeedArg {
    AsFastAsPossible,
    Timed,
}

pub(crate) fn parse_fiu_block(s: &str) -> Result<duraflash::trace::FiuBlock, String> {
    s.parse::<u64>()
        .ok()
        .and_then(duraflash::trace::FiuBlock::from_bytes)
        .ok_or_else(|| format!("'{s}' is not 512 or 4096"))
}

/// Counts the bytes read from the trace file (compressed bytes for gzip),
/// for the progress bar.
pub(crate) struct CountingReader<R> {
    inner: R,
    read: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: std::io::Read> std::io::Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(n)
    }
}

#[derive(Serialize)]
pub(crate) struct ReplayOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    trace: String,
    format: Format,
    speed: Speed,
    queue_depth: u32,
    lba_wrap: bool,
    compress_pct: u8,
    dropped: Dropped,
    /// The array replayed on (`--members`).
    #[serde(skip_serializing_if = "Option::is_none")]
    array: Option<ArrayInfo>,
    #[serde(flatten)]
    report: &'a ReplayReport,
}

/// Records the replay could not apply, against the share that fails the run.
#[derive(Serialize)]
pub(crate) struct Dropped {
    /// Rejected beyond the drive's capacity plus oversized.
    records: u64,
    /// `records` over all records.
    share: f64,
    /// The share above which the run fails without `--lba-wrap` or `--allow-drops`.
    limit: f64,
}

/// A replay that drops more than this share of its records has measured a
/// different workload than the trace: it fails unless told otherwise.
pub(crate) const MAX_DROPPED_SHARE: f64 = 0.01;

/// The array `--members` asks for, as the JSON records it.
#[derive(Serialize)]
struct ArrayInfo {
    level: Level,
    members: usize,
    stripe_bytes: u64,
    driver: TrimPolicy,
}

pub(crate) fn replay(args: ReplayArgs) -> Result<(), Failure> {
    args.out.start(&[
        ("trace", Some(&args.trace)),
        ("--image", args.image.as_deref()),
        ("--config", args.drive.config.as_deref()),
    ])?;
    let plots = PlotDir::open(&args.plot, args.out.quiet)?;
    if args.qd == 0 {
        return Err(Failure::Usage("--qd: must be at least 1".into()));
    }
    let options = ParseOptions {
        blkparse_action: match args.blkparse_action {
            BlkActionArg::D => BlkAction::D,
            BlkActionArg::C => BlkAction::C,
        },
        fiu_block: args.fiu_block,
    };
    let format = args.format.map(|f| match f {
        TraceFormatArg::Msr => Format::Msr,
        TraceFormatArg::Blkparse => Format::Blkparse,
        TraceFormatArg::Fiu => Format::Fiu,
        TraceFormatArg::Spc => Format::Spc,
    });
    let speed = match args.speed {
        SpeedArg::AsFastAsPossible => Speed::AsFastAsPossible,
        SpeedArg::Timed => Speed::Timed,
    };
    let data = DataSpec::compressible(args.compress_pct).map_err(|e| Failure::Usage(e.to_string()))?;
    let path = args.trace.display().to_string();
    let open = || -> Result<_, Failure> {
        let file = std::fs::File::open(&args.trace).map_err(|e| Failure::Usage(format!("{path}: {e}")))?;
        let total = file.metadata().map(|m| m.len()).unwrap_or(0);
        let read = Arc::new(AtomicU64::new(0));
        let reader = TraceReader::new(CountingReader { inner: file, read: read.clone() }, format, options)
            .map_err(|e| Failure::Usage(format!("{path}: {e}")))?;
        Ok((reader, read, total))
    };
    let (cfg, name, capacity, report, format, spec, smart, array) = match args.members {
        None => {
            let (mut drive, _lock) = build(&args.drive, Reads::Data, args.image.as_deref(), 1)?;
            let (reader, read, total) = open()?;
            let format = reader.format();
            let spec = ReplaySpec {
                speed,
                qd: args.qd,
                lba_wrap: args.lba_wrap,
                skip_bad: args.skip_bad,
                data,
                seed: drive.config().seed,
            };
            let report = run(&args.out, &mut drive, reader, &spec, &read, total, &path)?;
            save_image(&drive, args.image.as_deref())?;
            let cfg = drive.config().clone();
            let name = cfg.name.clone();
            (
                cfg,
                name,
                drive.config().logical_bytes,
                report,
                format,
                spec,
                vec![(String::new(), Smart::of(&drive))],
                None,
            )
        }
        Some(members) => {
            let (Some(level), Some(driver)) = (args.level, args.driver) else {
                return Err(Failure::Usage("--members: give the array's --level and --driver too".into()));
            };
            if args.image.is_some() {
                return Err(Failure::Usage(
                    "--image: an array's members have no image; drop --members or --image".into(),
                ));
            }
            let cfg = args.drive.build_held(Reads::Data, super::bounds::members(members)?).map_err(Failure::Usage)?;
            let drives =
                (0..members).map(|_| Drive::new(cfg.clone())).collect::<Result<Vec<_>, _>>().map_err(Failure::usage)?;
            let mut array = Array::new(level, args.stripe.0, driver, drives).map_err(Failure::usage)?;
            let (reader, read, total) = open()?;
            let format = reader.format();
            let spec = ReplaySpec {
                speed,
                qd: args.qd,
                lba_wrap: args.lba_wrap,
                skip_bad: args.skip_bad,
                data,
                seed: cfg.seed,
            };
            let report = run(&args.out, &mut array, reader, &spec, &read, total, &path)?;
            let smart =
                array.members().iter().enumerate().map(|(i, d)| (format!("member {i}"), Smart::of(d))).collect();
            let info = ArrayInfo { level, members, stripe_bytes: args.stripe.0, driver };
            let name = format!("RAID-{level} of {members} x {} (driver {driver})", cfg.name);
            (cfg, name, array.capacity_bytes(), report, format, spec, smart, Some(info))
        }
    };
    if let Some(p) = &plots {
        p.line("waf.svg", &waf_chart(&name, capacity, &path, &report))?;
    }
    let c = &report.counts;
    let records = c.rejected_beyond_capacity + c.rejected_oversized;
    let dropped = Dropped { records, share: records as f64 / c.records.max(1) as f64, limit: MAX_DROPPED_SHARE };
    let mut summary = replay_summary(&cfg, &name, capacity, &path, format, &spec, &report);
    if records > 0 {
        summary += &format!(
            "dropped  {records} of {} records ({:.1} %): a larger --capacity keeps them, --lba-wrap folds them onto the drive\n",
            c.records,
            dropped.share * 100.0
        );
    }
    let too_many = dropped.share > MAX_DROPPED_SHARE && !args.lba_wrap && !args.allow_drops;
    let failure = too_many.then(|| {
        Failure::Run(format!(
            "{path}: dropped {records} of {} records ({:.1} %, more than {:.0} %): the result is not the trace's; \
             use a larger --capacity, --lba-wrap, or --allow-drops to accept it",
            c.records,
            dropped.share * 100.0,
            MAX_DROPPED_SHARE * 100.0
        ))
    });
    let smart: Vec<(&str, Smart)> = smart.iter().map(|(l, s)| (l.as_str(), s.clone())).collect();
    emit(
        &args.out,
        &summary,
        &ReplayOutput {
            provenance: Provenance::new(&cfg),
            trace: path.clone(),
            format,
            speed,
            queue_depth: args.qd,
            lba_wrap: args.lba_wrap,
            compress_pct: args.compress_pct,
            dropped,
            array,
            report: &report,
        },
        &smart,
    )?;
    failure.map_or(Ok(()), Err)
}

/// Replays `reader` on `dev` with a progress bar that follows the bytes read.
fn run<D: ReplayTarget + Send>(
    out: &Output,
    dev: &mut D,
    reader: TraceReader,
    spec: &ReplaySpec,
    read: &AtomicU64,
    total: u64,
    path: &str,
) -> Result<ReplayReport, Failure>
where
    D::Error: Send + 'static,
{
    with_progress(out, "replay", |p| {
        let mut tick = |_records: u64| p(read.load(Ordering::Relaxed) as f64 / total.max(1) as f64);
        trace::replay::replay(dev, reader, spec, &mut tick)
    })
    .map_err(|e| match e {
        ReplayError::Trace(TraceError::Empty) => Failure::Usage(format!("{path}: {e}")),
        e => Failure::Run(format!("{path}: {e}")),
    })
}

/// Cumulative WAF and WAF between samples against host data written.
pub(crate) fn waf_chart(drive: &str, capacity: u64, path: &str, r: &ReplayReport) -> LineChart {
    let max = r.waf_curve.last().map_or(0, |p| p.host_bytes);
    let (scale, unit) = if max >= 1 << 30 { ((1u64 << 30) as f64, "GiB") } else { ((1u64 << 20) as f64, "MiB") };
    let ratio = |nand: u64, host: u64| if host == 0 { f64::NAN } else { nand as f64 / host as f64 };
    let cumulative = r.waf_curve.iter().map(|p| (p.host_bytes as f64 / scale, ratio(p.nand_bytes, p.host_bytes)));
    let interval = r.waf_curve.windows(2).map(|w| {
        (w[1].host_bytes as f64 / scale, ratio(w[1].nand_bytes - w[0].nand_bytes, w[1].host_bytes - w[0].host_bytes))
    });
    let name = Path::new(path).file_name().map_or(path.into(), |n| n.to_string_lossy());
    LineChart {
        title: format!("WAF replaying {name} on {drive} at {}", duraflash::ByteSize(capacity)),
        x_label: format!("host data written ({unit})"),
        y_label: "WAF (NAND bytes / host bytes)".into(),
        series: vec![
            Series { name: "cumulative".into(), points: cumulative.collect() },
            Series { name: "between samples".into(), points: interval.collect() },
        ],
        y_from_zero: true,
        ..Default::default()
    }
}

pub(crate) fn replay_summary(
    cfg: &DriveConfig,
    drive: &str,
    capacity: u64,
    path: &str,
    format: Format,
    spec: &ReplaySpec,
    r: &ReplayReport,
) -> String {
    let c = &r.counts;
    let s = &r.stats;
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let speed = match spec.speed {
        Speed::AsFastAsPossible => "as fast as possible",
        Speed::Timed => "timed",
    };
    let mut out = format!(
        "replay {path} ({format}) on {} at {}: {speed}, QD {}\n",
        drive,
        duraflash::ByteSize(capacity),
        spec.qd
    );
    out += &format!(
        "records  {}: {} writes, {} reads, {} trims; rejected {} beyond capacity, {} oversized; {} wrapped, {} bad lines skipped, {} empty\n",
        c.records, c.writes, c.reads, c.trims, c.rejected_beyond_capacity, c.rejected_oversized, c.wrapped, c.skipped_bad_lines, c.empty
    );
    out += &format!(
        "         {} rounded to whole sectors, {} partial-unit writes ({})\n",
        c.rounded_to_sectors,
        c.partial_unit_writes,
        if r.partial_writes_widened { "widened to whole units: metadata-only media" } else { "read-modify-write" }
    );
    out += &format!(
        "written  host {:.2} MiB, NAND {:.2} MiB: WAF {:.3} (GC moved {:.2} MiB, {} erases, {} blocks by idle GC)\n",
        mib(s.host_write_bytes),
        mib(s.nand_bytes_programmed),
        s.waf,
        mib(s.gc_relocated_bytes),
        s.erases,
        r.idle_gc_blocks
    );
    let trace_dedup = match &r.trace_dedup {
        Some(d) => format!("trace {:.3} ({} distinct of {} blocks), ", d.ratio, d.distinct_hashes, d.written_blocks),
        None => "trace n/a (no content hashes), ".into(),
    };
    out += &format!(
        "dedup    {trace_dedup}drive {:.3} ({} new chunks of {} unit writes); compression {:.3}\n",
        s.dedup_ratio, s.new_chunks, s.host_write_units, s.compression_ratio
    );
    out += &format!(
        "latency  {:>9} {:>10} {:>10} {:>10} {:>10} {:>10}\n",
        "commands", "mean us", "p50 us", "p99 us", "p99.9 us", "max us"
    );
    let us = |ns: u64| ns as f64 / 1e3;
    for (name, l) in [("read", &r.latency.read), ("write", &r.latency.write), ("trim", &r.latency.trim)] {
        out += &format!(
            "  {name:<6} {:>9} {:>10.1} {:>10.1} {:>10.1} {:>10.1} {:>10.1}\n",
            l.commands,
            l.mean_latency_ns / 1e3,
            us(l.p50_ns),
            us(l.p99_ns),
            us(l.p999_ns),
            us(l.max_ns)
        );
    }
    out += &format!(
        "time     {:.3} s simulated for {:.3} s of trace\n",
        r.simulated_ns as f64 / 1e9,
        r.trace_span_ns as f64 / 1e9
    );
    out += &format!(
        "SMART    233 NAND writes {:.2} MiB, 241 host writes {:.2} MiB, 242 host reads {:.2} MiB, P/E min/avg/max {}/{:.2}/{} of {}\n",
        mib(s.nand_bytes_programmed),
        mib(s.host_write_bytes),
        mib(s.host_read_bytes),
        s.pe_min,
        s.pe_avg,
        s.pe_max,
        cfg.geometry.pe_cycles
    );
    out
}
