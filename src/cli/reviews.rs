//! The single-drive benchmarks: `wa`, `hdtach`, `atto`, `iometer`, `run`
//! (fio job files) and `torture`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::Serialize;

use duraflash::config::DriveConfig;
use duraflash::device::Stats;
use duraflash::host::smart::Smart;
use duraflash::lab::plot::{LineChart, Series};
use duraflash::lab::torture::{self, Duration, TortureData, TortureReport, TortureSpec};
use duraflash::lab::wa::{self, ModelPoint, WaReport, WaSpec};
use duraflash::workload::access::Access;
use duraflash::workload::job::{fill_spec, run_job};
use duraflash::workload::review::{self, AttoPoint, HdTach, IometerPoint};
use duraflash::ByteSize;

use super::bounds;
use super::output::{build, emit, name, on_off, size_label, with_phases, with_progress, PlotDir, Provenance};
use super::{open_drive, parse_access, parse_pct, save_image, DataArgs, DriveArgs, Failure, Output, Reads};

#[derive(Args)]
pub(crate) struct WaArgs {
    #[command(flatten)]
    drive: DriveArgs,
    /// Drive image: resumed when it exists, created otherwise; saved when the run finishes.
    #[arg(long)]
    image: Option<PathBuf>,
    /// Where random writes go: uniform, zipf:THETA, sequential or hotcold:F:R
    /// (a fraction F of the LBAs gets a fraction R of the writes).
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

/// The JSON result of `wa`.
#[derive(Serialize)]
pub(crate) struct WaOutput<'a> {
    command: Vec<String>,
    version: &'static str,
    quirks: Vec<&'static str>,
    seed: u64,
    config: &'a DriveConfig,
    workload: &'a WaSpec,
    compress_pct: u8,
    dedupe_pct: u8,
    #[serde(flatten)]
    report: &'a WaReport,
}

pub(crate) fn run_wa(args: WaArgs) -> Result<(), Failure> {
    args.out.start(&[("--image", args.image.as_deref()), ("--config", args.drive.config.as_deref())])?;
    let cfg = args.drive.build(Reads::Timing).map_err(Failure::Usage)?;
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
    spec.validate(&cfg).map_err(Failure::usage)?;
    let (mut drive, _lock) = open_drive(cfg.clone(), args.image.as_deref())?;
    let report =
        with_phases(args.out.quiet, |progress| wa::run(&mut drive, &spec, cfg.seed, progress)).map_err(Failure::run)?;
    save_image(&drive, args.image.as_deref())?;
    let summary = wa_summary(&cfg, &report);
    let output = WaOutput {
        command: std::env::args().collect(),
        version: env!("CARGO_PKG_VERSION"),
        quirks: duraflash::firmware::build_quirks(),
        seed: cfg.seed,
        config: &cfg,
        workload: &spec,
        compress_pct,
        dedupe_pct: args.data.dedupe_pct,
        report: &report,
    };
    emit(&args.out, &summary, &output, &[("", Smart::of(&drive))])
}

pub(crate) fn wa_summary(cfg: &DriveConfig, r: &WaReport) -> String {
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
        "data       compression {} ratio {:.3}, dedup {} ratio {:.3}, GC {}\n",
        on_off(cfg.compression),
        r.compression_ratio,
        on_off(cfg.dedup),
        r.dedup_ratio,
        name(&cfg.gc.policy)
    );
    // A measured phase whose few requests all TRIMmed wrote nothing: no WAF.
    let waf = if r.host_bytes == 0 { "undefined (no host writes)".into() } else { format!("{:.3}", r.waf) };
    s += &format!(
        "measured   WAF {waf}  (host {:.2} GiB, NAND {:.2} GiB, GC moved {:.2} GiB, {} erases)\n",
        gib(r.host_bytes),
        gib(r.nand_bytes),
        gib(r.gc_relocated_bytes),
        r.erases
    );
    let (st, wear) = (&r.stats, &cfg.wear);
    s += &format!(
        "wear       P/E min {} avg {:.2} max {} (spread {}); dynamic levelling {}, static {}; \
         static moved {:.2} GiB ({} blocks)\n",
        st.pe_min,
        st.pe_avg,
        st.pe_max,
        st.pe_max - st.pe_min,
        on_off(wear.dynamic),
        wear.static_spread.map_or("off".into(), |n| format!("past a spread of {n}")),
        gib(r.wear_relocated_bytes),
        st.wear_victims
    );
    match &r.model {
        Some(ModelPoint { uniform: false, policy: Some(p), alpha, write_cost, .. }) => {
            s += &format!(
                "model      {} for this workload {p:.3}  (alpha {alpha:.4}, {write_cost:.3} stored bytes per host byte)\n",
                name(&cfg.gc.policy)
            );
            s += &format!("           measured / model = {:.3}\n", r.waf / p);
        }
        Some(ModelPoint { uniform: false, .. }) => {
            s += &format!("model      n/a ({} has no model under this workload)\n", name(&cfg.gc.policy));
        }
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

#[derive(Args)]
pub(crate) struct HdtachArgs {
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
    /// Write the HD Tach graph (MB/s against position) into DIR/hdtach.svg.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
    /// Drive image: resumed when it exists, created otherwise; saved when the run ends.
    #[arg(long)]
    image: Option<PathBuf>,
}

#[derive(Serialize)]
pub(crate) struct HdtachOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    #[serde(flatten)]
    result: &'a HdTach,
    stats: Stats,
}

pub(crate) fn hdtach(args: HdtachArgs) -> Result<(), Failure> {
    args.out.start(&[("--image", args.image.as_deref()), ("--config", args.drive.config.as_deref())])?;
    let plots = PlotDir::open(&args.plot, args.out.quiet)?;
    let (data, _) = args.data.spec()?;
    let (mut drive, _lock) = build(&args.drive, Reads::Timing, args.image.as_deref(), 2)?;
    let seed = drive.config().seed;
    bounds::zones(args.zones, review::HDTACH_REQUEST, drive.config().logical_bytes)?;
    if args.fill {
        let cap = drive.config().logical_bytes;
        let spec = fill_spec(cap, review::HDTACH_REQUEST, 32, data, seed);
        with_progress(&args.out, "fill", |p| run_job(&mut drive, &spec, p)).map_err(Failure::run)?;
    }
    let result = with_progress(&args.out, "hdtach", |p| review::hdtach(&mut drive, args.zones, data, seed, p))
        .map_err(Failure::run)?;
    let gb = |o: u64| o as f64 / 1e9;
    let chart = LineChart {
        title: format!("HD Tach: {} ({})", drive.config().name, if args.fill { "filled" } else { "secure-erased" }),
        x_label: "position (GB)".into(),
        y_label: "MB/s".into(),
        series: vec![
            Series { name: "read".into(), points: result.read.zones.iter().map(|z| (gb(z.offset), z.mbps)).collect() },
            Series {
                name: "write".into(),
                points: result.write.zones.iter().map(|z| (gb(z.offset), z.mbps)).collect(),
            },
        ],
        y_from_zero: true,
        ..Default::default()
    };
    if let Some(p) = &plots {
        p.line("hdtach.svg", &chart)?;
    }
    let summary = format!(
        "HD Tach {} ({} zones): read {:.1} MB/s average, write {:.1} MB/s average\n",
        drive.config().name,
        result.read.zones.len(),
        result.read.avg_mbps,
        result.write.avg_mbps
    );
    let cfg = drive.config().clone();
    save_image(&drive, args.image.as_deref())?;
    emit(
        &args.out,
        &summary,
        &HdtachOutput { provenance: Provenance::new(&cfg), result: &result, stats: drive.stats() },
        &[("", Smart::of(&drive))],
    )
}

#[derive(Args)]
pub(crate) struct AttoArgs {
    #[command(flatten)]
    drive: DriveArgs,
    /// Span written and read at each transfer size, at most the drive
    /// [default: 256MiB, or the whole drive when smaller]
    #[arg(long)]
    span: Option<ByteSize>,
    /// Write the ATTO chart (MB/s against transfer size) into DIR/atto.svg.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
    /// Drive image: resumed when it exists, created otherwise; saved when the run ends.
    #[arg(long)]
    image: Option<PathBuf>,
}

#[derive(Serialize)]
pub(crate) struct AttoOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    span: u64,
    queue_depth: u32,
    sizes: &'a [AttoPoint],
}

pub(crate) fn atto(args: AttoArgs) -> Result<(), Failure> {
    args.out.start(&[("--image", args.image.as_deref()), ("--config", args.drive.config.as_deref())])?;
    let plots = PlotDir::open(&args.plot, args.out.quiet)?;
    if let Some(span) = args.span.filter(|s| s.0 < review::ATTO_SIZES[0]) {
        return Err(Failure::Usage(format!("--span {}: must hold at least one 512-byte transfer", span.0)));
    }
    let (drive, _lock) = build(&args.drive, Reads::Data, args.image.as_deref(), 2)?;
    let (seed, capacity) = (drive.config().seed, drive.config().logical_bytes);
    let span = args.span.map_or(Ok(review::ATTO_SPAN.min(capacity)), |s| bounds::within("--span", s.0, capacity))?;
    let points = with_progress(&args.out, "atto", |p| review::atto(&drive, span, seed, p)).map_err(Failure::run)?;
    let chart = LineChart {
        title: format!("ATTO: {} (QD {}, {} span)", drive.config().name, review::ATTO_QD, ByteSize(span)),
        x_label: "transfer size".into(),
        y_label: "MB/s".into(),
        series: vec![
            Series { name: "write".into(), points: points.iter().map(|p| (p.size as f64, p.write_mbps)).collect() },
            Series { name: "read".into(), points: points.iter().map(|p| (p.size as f64, p.read_mbps)).collect() },
        ],
        y_from_zero: true,
        x_log2: true,
        ..Default::default()
    };
    if let Some(p) = &plots {
        p.line("atto.svg", &chart)?;
    }
    let mut summary = format!(
        "ATTO {} (QD {}):\n{:>10} {:>10} {:>10}\n",
        drive.config().name,
        review::ATTO_QD,
        "size",
        "write MB/s",
        "read MB/s"
    );
    for p in &points {
        summary += &format!("{:>10} {:>10.1} {:>10.1}\n", size_label(p.size), p.write_mbps, p.read_mbps);
    }
    let cfg = drive.config().clone();
    save_image(&drive, args.image.as_deref())?;
    emit(
        &args.out,
        &summary,
        &AttoOutput { provenance: Provenance::new(&cfg), span, queue_depth: review::ATTO_QD, sizes: &points },
        &[("", Smart::of(&drive))],
    )
}

#[derive(Args)]
pub(crate) struct IometerArgs {
    #[command(flatten)]
    drive: DriveArgs,
    #[command(flatten)]
    data: DataArgs,
    /// Span the random commands cover, at most the drive; it is filled sequentially first
    /// [default: 1GiB, or the whole drive when smaller]
    #[arg(long)]
    span: Option<ByteSize>,
    /// Commands per queue depth and direction (at most 100000000).
    #[arg(long, default_value_t = 20_000)]
    ops: u64,
    /// Write the IOPS-against-queue-depth chart into DIR/iometer.svg.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
    /// Drive image: resumed when it exists, created otherwise; saved when the run ends.
    #[arg(long)]
    image: Option<PathBuf>,
}

/// Request size of the sequential fill before IOmeter.
pub(crate) const IOMETER_FILL_REQUEST: u64 = 128 << 10;

#[derive(Serialize)]
pub(crate) struct IometerOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    span: u64,
    ops: u64,
    queue_depths: &'a [IometerPoint],
}

pub(crate) fn iometer(args: IometerArgs) -> Result<(), Failure> {
    args.out.start(&[("--image", args.image.as_deref()), ("--config", args.drive.config.as_deref())])?;
    let plots = PlotDir::open(&args.plot, args.out.quiet)?;
    let (data, _) = args.data.spec()?;
    if args.ops == 0 {
        return Err(Failure::Usage("--ops: must be at least 1".into()));
    }
    if args.ops > review::IOMETER_MAX_OPS {
        return Err(Failure::Usage(format!(
            "--ops {} is more than {} commands per point, the most a run takes (it would not finish)",
            args.ops,
            review::IOMETER_MAX_OPS
        )));
    }
    let (mut drive, _lock) = build(&args.drive, Reads::Timing, args.image.as_deref(), 1)?;
    let (seed, capacity) = (drive.config().seed, drive.config().logical_bytes);
    let span = args.span.map_or(Ok(review::IOMETER_SPAN.min(capacity)), |s| bounds::within("--span", s.0, capacity))?;
    if span < IOMETER_FILL_REQUEST {
        return Err(Failure::Usage(format!("--span {span}: must be at least {IOMETER_FILL_REQUEST} bytes")));
    }
    let fill = fill_spec(span, IOMETER_FILL_REQUEST, 32, data, seed);
    with_progress(&args.out, "fill", |p| run_job(&mut drive, &fill, p)).map_err(Failure::run)?;
    let points = with_progress(&args.out, "iometer", |p| review::iometer(&mut drive, span, args.ops, data, seed, p))
        .map_err(Failure::run)?;
    let chart = LineChart {
        title: format!("IOmeter 4 KiB random: {}", drive.config().name),
        x_label: "queue depth".into(),
        y_label: "IOPS".into(),
        series: vec![
            Series { name: "read".into(), points: points.iter().map(|p| (f64::from(p.qd), p.read_iops)).collect() },
            Series { name: "write".into(), points: points.iter().map(|p| (f64::from(p.qd), p.write_iops)).collect() },
        ],
        y_from_zero: true,
        x_log2: false,
        ..Default::default()
    };
    if let Some(p) = &plots {
        p.line("iometer.svg", &chart)?;
    }
    let mut summary = format!(
        "IOmeter 4 KiB random {}:\n{:>4} {:>10} {:>10}\n",
        drive.config().name,
        "QD",
        "read IOPS",
        "write IOPS"
    );
    for p in &points {
        summary += &format!("{:>4} {:>10.0} {:>10.0}\n", p.qd, p.read_iops, p.write_iops);
    }
    let cfg = drive.config().clone();
    save_image(&drive, args.image.as_deref())?;
    emit(
        &args.out,
        &summary,
        &IometerOutput { provenance: Provenance::new(&cfg), span, ops: args.ops, queue_depths: &points },
        &[("", Smart::of(&drive))],
    )
}

#[derive(Args)]
pub(crate) struct TortureArgs {
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
    /// Write the HD Tach read and write graphs (SVG) into DIR.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    /// Print the CPU time by phase (generation, lz4, blake3, simulation,
    /// image, copies) on stderr and add it to the JSON as `profile`.
    #[arg(long)]
    profile: bool,
    #[command(flatten)]
    out: Output,
}

#[derive(Clone, Copy, ValueEnum)]
#[value(rename_all = "kebab-case")]
pub(crate) enum TortureDataArg {
    Compressible,
    PseudoRandom,
    Incompressible,
}

#[derive(Serialize)]
pub(crate) struct TortureOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    #[serde(flatten)]
    report: &'a TortureReport,
    #[serde(skip_serializing_if = "Option::is_none")]
    profile: Option<duraflash::profile::Split>,
}

pub(crate) fn torture(args: TortureArgs) -> Result<(), Failure> {
    args.out.start(&[("--config", args.drive.config.as_deref())])?;
    let plots = PlotDir::open(&args.plot, args.out.quiet)?;
    // The protocol reads only for timing: the write sweeps run on copies,
    // so it holds two drives at once.
    let cfg = args.drive.build_held(Reads::Timing, 2).map_err(Failure::Usage)?;
    if args.qd == 0 {
        return Err(Failure::Usage("--qd must be at least 1".into()));
    }
    bounds::zones(args.zones, review::HDTACH_REQUEST, cfg.logical_bytes)?;
    let atto_span = args.atto.map(|s| bounds::within("--atto", s.0, cfg.logical_bytes)).transpose()?;
    let duration = args.drive_writes.map_or(Duration::Minutes(args.minutes), Duration::DriveWrites);
    duration.validate().map_err(Failure::usage)?;
    super::estimate::announce(
        &format!("torture of the {} {} (fill, 4 HD Tach passes, torture)", ByteSize(cfg.logical_bytes), cfg.name),
        super::estimate::torture_secs(cfg.logical_bytes, args.drive_writes, args.minutes),
        "--capacity 4GiB runs a scale model in under a minute",
    );
    let data = match args.data {
        TortureDataArg::Compressible => TortureData::Compressible,
        TortureDataArg::PseudoRandom => TortureData::PseudoRandom,
        TortureDataArg::Incompressible => TortureData::Incompressible,
    };
    let spec = TortureSpec { data, duration, qd: args.qd, span: 1.0, zones: args.zones, atto_span, seed: cfg.seed };
    let started = (cpu_time::ProcessTime::now(), std::time::Instant::now());
    if args.profile {
        duraflash::profile::enable();
    }
    let report =
        with_phases(args.out.quiet, |progress| torture::torture(&cfg, &spec, progress)).map_err(Failure::run)?;
    let profile = args.profile.then(|| duraflash::profile::Split::since(started.0, started.1));
    if let Some(p) = &profile {
        note!("{}", p.line());
    }
    if let Some(p) = &plots {
        torture_plots(p, &cfg, &report)?;
    }
    let states = [
        ("clean", &report.clean),
        ("tortured", &report.tortured),
        ("after TRIM", &report.after_trim),
        ("after 2nd TRIM", &report.after_second_trim),
    ];
    let mut summary = format!(
        "torture {} firmware {} data {} at {}: {:.2} drive-writes of 4 KiB random writes at QD {} ({:.1} s simulated), WAF {:.2}\n",
        cfg.name,
        report.firmware,
        name(&report.data),
        duraflash::ByteSize(cfg.logical_bytes),
        report.drive_writes,
        args.qd,
        report.torture_secs,
        report.waf
    );
    summary += &format!("{:>16} {:>10} {:>10} {:>10}\n", "state", "read MB/s", "write MB/s", "read/clean");
    for (name, s) in states {
        summary += &format!(
            "{name:>16} {:>10.1} {:>10.1} {:>10.2}\n",
            s.read_mbps,
            s.write_mbps,
            s.read_mbps / report.clean.read_mbps
        );
    }
    if let Some(points) = report.clean.atto.as_ref() {
        summary += "ATTO read MB/s by transfer size (clean / tortured / after TRIM):\n";
        let (t, a) = (report.tortured.atto.as_deref().unwrap_or(&[]), report.after_trim.atto.as_deref().unwrap_or(&[]));
        for (i, p) in points.iter().enumerate() {
            let at = |v: &[duraflash::workload::review::AttoPoint]| v.get(i).map_or(f64::NAN, |x| x.read_mbps);
            summary += &format!("{:>10} {:>8.1} {:>8.1} {:>8.1}\n", size_label(p.size), p.read_mbps, at(t), at(a));
        }
    }
    let smart = [("", report.smart.clone())];
    emit(&args.out, &summary, &TortureOutput { provenance: Provenance::new(&cfg), report: &report, profile }, &smart)
}

pub(crate) fn torture_plots(plots: &PlotDir, cfg: &DriveConfig, r: &TortureReport) -> Result<(), Failure> {
    for (file, chart) in torture::hdtach_charts(&cfg.name, r) {
        plots.line(&file, &chart)?;
    }
    Ok(())
}
