//! The benchmark subcommands of the binary (`hdtach`, `atto`, `iometer`,
//! `run`, `torture`, `corpus`, `sweep`, `replay`): build the drive, run the workload with a progress bar, print a
//! summary, write JSON and plots.

use std::path::Path;

use serde::Serialize;

use duraflash::config::DriveConfig;
use duraflash::device::Stats;
use duraflash::host::raid::Layout;
use duraflash::host::smart::Smart;
use duraflash::lab::optimizer::{self, OptimizerReport};
use duraflash::lab::plot::{self, LineChart, Series};
use duraflash::lab::raid::{self, RaidReport, RaidSpec};
use duraflash::workload::fio;
use duraflash::workload::job::{fill_spec, run_job, JobResult};
use duraflash::workload::review::{self, AttoPoint, HdTach, IometerPoint};
use duraflash::Drive;

use duraflash::content::pattern::DataSpec;
use duraflash::lab::torture::{self, Duration, TortureData, TortureReport, TortureSpec};
use duraflash::trace::replay::{ReplayReport, ReplaySpec, Speed};
use duraflash::trace::{self, BlkAction, Format, ParseOptions, TraceReader};

use super::{
    emit, progress_bar, setup_threads, AttoArgs, BenchArgs, BlkActionArg, CorpusArgs, Failure, HdtachArgs, IometerArgs,
    OptimizerArgs, Output, RaidArgs, ReplayArgs, ReproduceArgs, RunArgs, SpeedArg, SweepArgs, TortureArgs,
    TortureDataArg, TraceFormatArg,
};

/// Every JSON result starts with how it was made.
#[derive(Serialize)]
pub(crate) struct Provenance<'a> {
    command: Vec<String>,
    version: &'static str,
    seed: u64,
    config: &'a DriveConfig,
}

impl<'a> Provenance<'a> {
    pub(crate) fn new(config: &'a DriveConfig) -> Self {
        Provenance {
            command: std::env::args().collect(),
            version: env!("CARGO_PKG_VERSION"),
            seed: config.seed,
            config,
        }
    }
}

/// Runs `f` with a progress callback that names the current phase and the
/// fraction done, drawn as one bar (none when `quiet` or not a terminal).
/// The bar's message is the simulation rate: host MB moved (read and
/// written, simulated) per wall-clock second over the last second or so.
pub(crate) fn with_phases<T: Send>(quiet: bool, f: impl FnOnce(&mut dyn FnMut(&str, f64)) -> T + Send) -> T {
    let bar = progress_bar(quiet);
    let mut last = (std::time::Instant::now(), duraflash::device::host_bytes_moved());
    let mut tick = |phase: &str, x: f64| {
        if let Some(b) = &bar {
            if b.prefix() != phase {
                b.set_prefix(phase.to_string());
            }
            b.set_position((x.clamp(0.0, 1.0) * 1000.0) as u64);
            let secs = last.0.elapsed().as_secs_f64();
            if secs >= 1.0 {
                let moved = duraflash::device::host_bytes_moved();
                b.set_message(format!("{:.0} host MB/s", (moved - last.1) as f64 / 1e6 / secs));
                last = (std::time::Instant::now(), moved);
            }
        }
    };
    // On a pool thread, the run's parallel steps (content generation,
    // encoding) hand work to the other threads without waking this one.
    let result = rayon::scope(|_| f(&mut tick));
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    result
}

/// Runs `f` with a progress callback drawn as a bar named `phase`.
fn with_progress<T: Send>(out: &Output, phase: &str, f: impl FnOnce(&mut dyn FnMut(f64)) -> T + Send) -> T {
    with_phases(out.quiet, |tick| f(&mut |x| tick(phase, x)))
}

fn write_plot(path: &Option<std::path::PathBuf>, chart: &LineChart) -> Result<(), Failure> {
    match path {
        Some(p) => plot::line_chart(p, chart).map_err(|e| Failure::Run(format!("--plot {}: {e}", p.display()))),
        None => Ok(()),
    }
}

/// The drive the flags describe, or the one saved in `image` (see
/// [`super::open_drive`]).
fn build(drive: &super::DriveArgs, image: Option<&Path>) -> Result<Drive, Failure> {
    let cfg = drive.build(None).map_err(Failure::Usage)?;
    super::open_drive(cfg, image)
}

#[derive(Serialize)]
struct HdtachOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    #[serde(flatten)]
    result: &'a HdTach,
    stats: Stats,
}

pub(super) fn hdtach(args: HdtachArgs) -> Result<(), Failure> {
    setup_threads(&args.out)?;
    let (data, _) = args.data.spec()?;
    if args.zones == 0 {
        return Err(Failure::Usage("--zones: must be at least 1".into()));
    }
    let mut drive = build(&args.drive, args.image.as_deref())?;
    let seed = drive.config().seed;
    if u64::from(args.zones) * review::HDTACH_REQUEST > drive.config().logical_bytes {
        return Err(Failure::Usage(format!(
            "--zones {}: the drive is too small for that many zones of one {}-byte request",
            args.zones,
            review::HDTACH_REQUEST
        )));
    }
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
    write_plot(&args.plot, &chart)?;
    let summary = format!(
        "HD Tach {} ({} zones): read {:.1} MB/s average, write {:.1} MB/s average\n",
        drive.config().name,
        result.read.zones.len(),
        result.read.avg_mbps,
        result.write.avg_mbps
    );
    let cfg = drive.config().clone();
    super::save_image(&drive, args.image.as_deref())?;
    emit(
        &args.out,
        &summary,
        &HdtachOutput { provenance: Provenance::new(&cfg), result: &result, stats: drive.stats() },
        &[("", Smart::of(&drive))],
    )
}

#[derive(Serialize)]
struct AttoOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    span: u64,
    queue_depth: u32,
    sizes: &'a [AttoPoint],
}

pub(super) fn atto(args: AttoArgs) -> Result<(), Failure> {
    setup_threads(&args.out)?;
    if args.span.0 < review::ATTO_SIZES[0] {
        return Err(Failure::Usage(format!("--span {}: must hold at least one 512-byte transfer", args.span.0)));
    }
    let drive = build(&args.drive, args.image.as_deref())?;
    let seed = drive.config().seed;
    let points =
        with_progress(&args.out, "atto", |p| review::atto(&drive, args.span.0, seed, p)).map_err(Failure::run)?;
    let chart = LineChart {
        title: format!("ATTO: {} (QD {}, {} span)", drive.config().name, review::ATTO_QD, args.span),
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
    write_plot(&args.plot, &chart)?;
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
    super::save_image(&drive, args.image.as_deref())?;
    emit(
        &args.out,
        &summary,
        &AttoOutput {
            provenance: Provenance::new(&cfg),
            span: args.span.0,
            queue_depth: review::ATTO_QD,
            sizes: &points,
        },
        &[("", Smart::of(&drive))],
    )
}

fn size_label(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{}M", bytes >> 20)
    } else if bytes >= 1 << 10 {
        format!("{}K", bytes >> 10)
    } else {
        format!("{:.1}K", bytes as f64 / 1024.0)
    }
}

/// Request size of the sequential fill before IOmeter.
const IOMETER_FILL_REQUEST: u64 = 128 << 10;

#[derive(Serialize)]
struct IometerOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    span: u64,
    ops: u64,
    queue_depths: &'a [IometerPoint],
}

pub(super) fn iometer(args: IometerArgs) -> Result<(), Failure> {
    setup_threads(&args.out)?;
    let (data, _) = args.data.spec()?;
    if args.ops == 0 {
        return Err(Failure::Usage("--ops: must be at least 1".into()));
    }
    let mut drive = build(&args.drive, args.image.as_deref())?;
    let seed = drive.config().seed;
    let span = args.span.0.min(drive.config().logical_bytes);
    if span < IOMETER_FILL_REQUEST {
        return Err(Failure::Usage(format!("--span {}: must be at least {IOMETER_FILL_REQUEST} bytes", args.span.0)));
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
    write_plot(&args.plot, &chart)?;
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
    super::save_image(&drive, args.image.as_deref())?;
    emit(
        &args.out,
        &summary,
        &IometerOutput { provenance: Provenance::new(&cfg), span, ops: args.ops, queue_depths: &points },
        &[("", Smart::of(&drive))],
    )
}

/// fio's JSON shape for one direction.
#[derive(Serialize)]
struct FioDir {
    io_bytes: u64,
    bw_bytes: f64,
    iops: f64,
    clat_ns: FioLat,
}

#[derive(Serialize)]
struct FioLat {
    mean: f64,
    max: u64,
    percentile: std::collections::BTreeMap<&'static str, u64>,
}

#[derive(Serialize)]
struct FioJob {
    jobname: String,
    elapsed_ns: u64,
    read: FioDir,
    write: FioDir,
    trim: FioDir,
}

#[derive(Serialize)]
struct FioOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    #[serde(rename = "fio version")]
    fio_version: &'static str,
    jobs: Vec<FioJob>,
    drive: Stats,
}

fn fio_dir(d: &duraflash::workload::job::DirResult) -> FioDir {
    let percentile =
        [("50.000000", d.lat.p50_ns), ("99.000000", d.lat.p99_ns), ("99.900000", d.lat.p999_ns)].into_iter().collect();
    FioDir {
        io_bytes: d.io_bytes,
        bw_bytes: d.bw_bytes,
        iops: d.iops,
        clat_ns: FioLat { mean: d.lat.mean_latency_ns, max: d.lat.max_ns, percentile },
    }
}

pub(super) fn run(args: RunArgs) -> Result<(), Failure> {
    setup_threads(&args.out)?;
    let text =
        std::fs::read_to_string(&args.job).map_err(|e| Failure::Usage(format!("{}: {e}", args.job.display())))?;
    let file = fio::parse(&text).map_err(|e| Failure::Usage(format!("{}: {e}", args.job.display())))?;
    let mut overrides = args.drive.overrides();
    file.apply_drive(&mut overrides).map_err(|e| Failure::Usage(format!("{}: {e}", args.job.display())))?;
    let cfg = overrides.build(None).map_err(Failure::usage)?;
    let mut drive = super::open_drive(cfg, args.image.as_deref())?;
    let capacity = drive.config().logical_bytes;
    let specs = file
        .specs(capacity, drive.config().seed)
        .map_err(|e| Failure::Usage(format!("{}: {e}", args.job.display())))?;
    let mut results: Vec<JobResult> = Vec::new();
    for spec in &specs {
        // Jobs run one after another (each as if stonewalled): the drive is one device.
        let r = with_progress(&args.out, &spec.name, |p| run_job(&mut drive, spec, p)).map_err(Failure::run)?;
        results.push(r);
    }
    super::save_image(&drive, args.image.as_deref())?;
    let mut summary = String::new();
    for r in &results {
        summary += &format!("{}: ", r.name);
        for (name, d) in [("read", &r.read), ("write", &r.write), ("trim", &r.trim)] {
            if d.lat.commands > 0 {
                summary += &format!(
                    "{name} {:.0} IOPS {:.1} MB/s (clat p50 {:.0} us, p99 {:.0} us)  ",
                    d.iops,
                    d.bw_bytes / 1e6,
                    d.lat.p50_ns as f64 / 1e3,
                    d.lat.p99_ns as f64 / 1e3
                );
            }
        }
        summary += &format!("[{:.3} s simulated]\n", r.elapsed_ns as f64 / 1e9);
    }
    let s = drive.stats();
    summary +=
        &format!("drive: WAF {:.3}, compression {:.3}, dedup {:.3}\n", s.waf, s.compression_ratio, s.dedup_ratio);
    let jobs = results
        .iter()
        .map(|r| FioJob {
            jobname: r.name.clone(),
            elapsed_ns: r.elapsed_ns,
            read: fio_dir(&r.read),
            write: fio_dir(&r.write),
            trim: fio_dir(&r.trim),
        })
        .collect();
    let cfg = drive.config().clone();
    let out = FioOutput { provenance: Provenance::new(&cfg), fio_version: "duraflash-fio-compat", jobs, drive: s };
    emit(&args.out, &summary, &out, &[("", Smart::of(&drive))])
}

#[derive(Serialize)]
struct TortureOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    #[serde(flatten)]
    report: &'a TortureReport,
}

pub(super) fn torture(args: TortureArgs) -> Result<(), Failure> {
    setup_threads(&args.out)?;
    // The protocol reads only for timing, so it keeps no data bytes unless
    // asked to: the write sweeps run on copies of the drive.
    let mut flags = args.drive.clone();
    flags.media = flags.media.or(Some(duraflash::Media::MetadataOnly));
    // The whole drive unless --capacity scales it down (4GiB runs in
    // about a minute).
    let cfg = flags.build(None).map_err(Failure::Usage)?;
    if args.qd == 0 || args.zones == 0 {
        return Err(Failure::Usage("--qd and --zones must be at least 1".into()));
    }
    let duration = match args.drive_writes {
        Some(x) if x.is_finite() && x >= 0.0 => Duration::DriveWrites(x),
        Some(x) => return Err(Failure::Usage(format!("--drive-writes {x} must be a non-negative number"))),
        None if args.minutes.is_finite() && args.minutes >= 0.0 => Duration::Minutes(args.minutes),
        None => return Err(Failure::Usage(format!("--minutes {} must be a non-negative number", args.minutes))),
    };
    let data = match args.data {
        TortureDataArg::Compressible => TortureData::Compressible,
        TortureDataArg::PseudoRandom => TortureData::PseudoRandom,
        TortureDataArg::Incompressible => TortureData::Incompressible,
    };
    let spec = TortureSpec {
        data,
        duration,
        qd: args.qd,
        span: 1.0,
        zones: args.zones,
        atto_span: args.atto.map(|s| s.0),
        seed: cfg.seed,
    };
    let report =
        with_phases(args.out.quiet, |progress| torture::torture(&cfg, &spec, progress)).map_err(Failure::run)?;
    if let Some(dir) = &args.plot {
        torture_plots(dir, &cfg, &report)?;
    }
    let states = [
        ("clean", &report.clean),
        ("tortured", &report.tortured),
        ("after TRIM", &report.after_trim),
        ("after 2nd TRIM", &report.after_second_trim),
    ];
    let mut summary = format!(
        "torture {} firmware {} data {:?} at {}: {:.2} drive-writes of 4 KiB random writes at QD {} ({:.1} s simulated), WAF {:.2}\n",
        cfg.name,
        report.firmware,
        report.data,
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
    emit(&args.out, &summary, &TortureOutput { provenance: Provenance::new(&cfg), report: &report }, &smart)
}

fn torture_plots(dir: &Path, cfg: &DriveConfig, r: &TortureReport) -> Result<(), Failure> {
    std::fs::create_dir_all(dir).map_err(|e| Failure::Run(format!("--plot {}: {e}", dir.display())))?;
    for (file, chart) in torture::hdtach_charts(&cfg.name, r) {
        write_plot(&Some(dir.join(file)), &chart)?;
    }
    Ok(())
}

/// Whether `path` names standard output.
pub(super) fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Default drive size of `corpus`: every corpus is written a few times
/// over, with real bytes through the pipeline.
const CORPUS_DEFAULT_CAPACITY: u64 = 256 << 20;

#[derive(Serialize)]
struct CorpusOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    spec: &'a duraflash::lab::corpora::CorpusSpec,
    corpora: &'a [duraflash::lab::corpora::CorpusReport],
}

/// `duraflash corpus`.
pub(crate) fn corpus(args: CorpusArgs) -> Result<(), Failure> {
    use duraflash::content::corpus::{self, Corpus};
    use duraflash::lab::corpora::{run, CorpusSpec};
    setup_threads(&args.out)?;
    let dir = args.corpora_dir.clone().unwrap_or_else(corpus::default_dir);
    if args.list {
        for e in corpus::manifest(&dir).map_err(|e| Failure::Run(e.to_string()))? {
            println!("{:<10} {:<10} {:>9} B  {}", e.name, e.kind, e.bytes, e.file);
        }
        for (name, what) in corpus::GENERATED {
            println!("{name:<10} {:<10} {:>9} B  generated: {what}", "generated", corpus::GENERATED_BYTES);
        }
        return Ok(());
    }
    if !(args.share > 0.0 && args.share <= 1.0) {
        return Err(Failure::Usage(format!("--share {} must be in (0, 1]", args.share)));
    }
    let mut cfg = args.drive.build(Some(CORPUS_DEFAULT_CAPACITY)).map_err(Failure::Usage)?;
    if args.drive.media.is_none() {
        cfg.media = duraflash::Media::MetadataOnly;
    }
    let names = if args.corpora.is_empty() {
        Corpus::names(&dir).map_err(|e| Failure::Usage(e.to_string()))?
    } else {
        args.corpora.clone()
    };
    let corpora: Vec<Corpus> = names
        .iter()
        .map(|n| Corpus::load(n, &dir))
        .collect::<Result<_, _>>()
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let spec = CorpusSpec { share: args.share, precondition: args.precondition, measure: args.measure, seed: cfg.seed };
    let mut reports = Vec::new();
    for (i, c) in corpora.iter().enumerate() {
        let phase = format!("{} ({}/{})", c.name, i + 1, corpora.len());
        let r = with_progress(&args.out, &phase, |tick| {
            run(&cfg, c, &spec, &mut |p, f| {
                let at = match p {
                    "fill" => 0.0,
                    "precondition" => 0.1,
                    "measure" => 0.5,
                    _ => 0.9,
                };
                let width = match p {
                    "fill" => 0.1,
                    "precondition" => 0.4,
                    "measure" => 0.4,
                    _ => 0.0,
                };
                tick(at + width * f)
            })
        })
        .map_err(|e| Failure::Run(format!("corpus {}: {e}", c.name)))?;
        reports.push(r);
    }
    if let Some(p) = &args.plot {
        let chart = plot::BarChart {
            title: format!("Corpora on {} ({})", cfg.name, duraflash::ByteSize(cfg.logical_bytes)),
            y_label: "ratio".into(),
            categories: reports.iter().map(|r| r.name.clone()).collect(),
            groups: vec![
                ("compression (stored/raw)".into(), reports.iter().map(|r| r.compression_ratio).collect()),
                ("dedup (new/written)".into(), reports.iter().map(|r| r.dedup_ratio).collect()),
                ("WAF".into(), reports.iter().map(|r| r.waf).collect()),
            ],
            ..Default::default()
        };
        plot::bar_chart(p, &chart).map_err(|e| Failure::Run(format!("--plot {}: {e}", p.display())))?;
    }
    let mut summary = format!(
        "drive {} at {}, media {:?}; each corpus tiled over {:.0}% of the LBAs, {} + {} random-overwrite passes\n",
        cfg.name,
        duraflash::ByteSize(cfg.logical_bytes),
        cfg.media,
        spec.share * 100.0,
        spec.precondition,
        spec.measure
    );
    summary += &format!(
        "{:<10} {:>9} {:>6} {:>6} {:>8} {:>6} {:>6} {:>6} {:>8} {:>8} {:>9} {:>8} {:>5} {:>9}\n",
        "corpus",
        "bytes",
        "lz4",
        "comp",
        "distinct",
        "dedup",
        "WAF",
        "model",
        "seq MB/s",
        "4K MB/s",
        "pipe MB/s",
        "raw MB/s",
        "ratio",
        "cpu ratio"
    );
    for r in &reports {
        let model = r.model_waf.map_or("-".to_string(), |m| format!("{m:.3}"));
        summary += &format!(
            "{:<10} {:>9} {:>6.3} {:>6.3} {:>8.3} {:>6.3} {:>6.3} {:>6} {:>8.1} {:>8.1} {:>9.0} {:>8.0} {:>5.2} {:>9.2}\n",
            r.name,
            r.bytes,
            r.lz4_block_ratio,
            r.compression_ratio,
            r.distinct_ratio,
            r.dedup_ratio,
            r.waf,
            model,
            r.seq_write_mbps,
            r.rand_write_mbps,
            r.pipeline_mbps,
            r.raw_mbps,
            r.pipeline_ratio,
            r.pipeline_cpu_mbps / r.raw_cpu_mbps
        );
    }
    let output = CorpusOutput { provenance: Provenance::new(&cfg), spec: &spec, corpora: &reports };
    let smart: Vec<(&str, Smart)> = reports.iter().map(|r| (r.name.as_str(), r.smart.clone())).collect();
    emit(&args.out, &summary, &output, &smart)
}

/// What a sweep (or one point of it) writes as JSON; `--merge` reads it back.
#[derive(Serialize, serde::Deserialize)]
struct SweepOutput {
    command: Vec<String>,
    version: String,
    preset: String,
    capacity: u64,
    seed: u64,
    precondition: f64,
    measure: f64,
    grid: duraflash::lab::sweep::Grid,
    points: Vec<duraflash::lab::sweep::PointResult>,
}

/// `duraflash sweep`.
pub(crate) fn sweep(args: SweepArgs) -> Result<(), Failure> {
    if args.out.smart {
        return Err(Failure::Usage("--smart: a sweep runs many drives; use it on `wa` for one point".into()));
    }
    use duraflash::lab::sweep::{self as sw, Grid, PointResult};
    use rayon::prelude::*;
    setup_threads(&args.out)?;
    if let Some(dir) = &args.merge {
        let merged = merge_sweep(dir)?;
        return finish_sweep(&args, merged);
    }
    let grid = Grid {
        op: args.op.clone(),
        gc: args.gc.clone(),
        pages_per_block: args.pages_per_block.clone(),
        compress_pct: args.compress_pct.clone(),
        dedupe_pct: args.dedupe_pct.clone(),
        trim_pct: args.trim_pct.clone(),
        workload: args.workload.clone(),
    };
    grid.validate().map_err(Failure::usage)?;
    for (flag, v) in [("--precondition", args.precondition), ("--measure", args.measure)] {
        if !(v.is_finite() && v >= 0.0) || (flag == "--measure" && v == 0.0) {
            return Err(Failure::Usage(format!("{flag} {v} must be a positive number of drive-writes")));
        }
    }
    let mut base = DriveConfig::preset(&args.preset).map_err(|e| Failure::Usage(format!("--preset: {e}")))?;
    base = base.scaled(args.capacity.0).map_err(|e| Failure::Usage(format!("--capacity: {e}")))?;
    base.media = args.media;
    base.seed = args.seed;
    let points = grid.points();
    // Every point's drive must be buildable before anything runs.
    for p in &points {
        sw::point_config(&base, p).map_err(|e| Failure::Usage(format!("grid point {}: {e}", p.index)))?;
    }
    if let Some(file) = &args.emit_jobs {
        return emit_sweep_jobs(&args, file, points.len());
    }
    let chosen: Vec<_> = match args.point {
        Some(n) => vec![points
            .get(n)
            .cloned()
            .ok_or_else(|| Failure::Usage(format!("--point {n}: the grid has {} points", points.len())))?],
        None => points,
    };
    let bar = progress_bar(args.out.quiet);
    if let Some(b) = &bar {
        b.set_prefix("sweep");
        b.set_length(chosen.len() as u64);
    }
    let results: Result<Vec<PointResult>, String> = chosen
        .par_iter()
        .map(|p| {
            let r = sw::run_point(&base, p, args.precondition, args.measure)
                .map_err(|e| format!("grid point {}: {e}", p.index));
            if let Some(b) = &bar {
                b.inc(1);
            }
            r
        })
        .collect();
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let output = SweepOutput {
        command: std::env::args().collect(),
        version: env!("CARGO_PKG_VERSION").into(),
        preset: args.preset.clone(),
        capacity: base.logical_bytes,
        seed: args.seed,
        precondition: args.precondition,
        measure: args.measure,
        grid,
        points: results.map_err(Failure::run)?,
    };
    finish_sweep(&args, output)
}

/// Writes one command line per grid point into `file`.
fn emit_sweep_jobs(args: &SweepArgs, file: &Path, n: usize) -> Result<(), Failure> {
    let exe = std::env::current_exe().map_err(|e| Failure::Run(e.to_string()))?;
    let join = |v: Vec<String>| v.join(",");
    let common = format!(
        "{} sweep --preset {} --capacity {} --media {} --seed {} --op {} --gc {} --pages-per-block {} \
         --compress-pct {} --dedupe-pct {} --trim-pct {} --workload {} --precondition {} --measure {} --quiet",
        exe.display(),
        args.preset,
        args.capacity.0,
        match args.media {
            duraflash::Media::Memory => "memory",
            duraflash::Media::MetadataOnly => "metadata-only",
        },
        args.seed,
        join(args.op.iter().map(f64::to_string).collect()),
        join(args.gc.iter().map(duraflash::GcPolicy::to_string).collect()),
        join(args.pages_per_block.iter().map(u32::to_string).collect()),
        join(args.compress_pct.iter().map(u8::to_string).collect()),
        join(args.dedupe_pct.iter().map(u8::to_string).collect()),
        join(args.trim_pct.iter().map(u8::to_string).collect()),
        join(args.workload.clone()),
        args.precondition,
        args.measure,
    );
    let mut text = String::new();
    for i in 0..n {
        text += &format!("{common} --point {i} --json {}\n", args.points_dir.join(format!("point-{i}.json")).display());
    }
    std::fs::write(file, text).map_err(|e| Failure::Run(format!("--emit-jobs {}: {e}", file.display())))?;
    println!(
        "{n} jobs written to {}; run them (mkdir -p {dir}; parallel < {}), then: duraflash sweep --merge {dir}",
        file.display(),
        file.display(),
        dir = args.points_dir.display()
    );
    Ok(())
}

/// Reads every `*.json` sweep output in `dir` into one.
fn merge_sweep(dir: &Path) -> Result<SweepOutput, Failure> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| Failure::Usage(format!("--merge {}: {e}", dir.display())))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut merged: Option<SweepOutput> = None;
    for f in &files {
        let text = std::fs::read_to_string(f).map_err(|e| Failure::Run(format!("{}: {e}", f.display())))?;
        let part: SweepOutput = serde_json::from_str(&text)
            .map_err(|e| Failure::Run(format!("{}: not a sweep result: {e}", f.display())))?;
        match &mut merged {
            None => merged = Some(part),
            Some(m) => {
                let same = serde_json::to_value(&m.grid).ok() == serde_json::to_value(&part.grid).ok()
                    && m.preset == part.preset
                    && m.capacity == part.capacity
                    && m.seed == part.seed;
                if !same {
                    return Err(Failure::Run(format!(
                        "{}: from a different sweep than {}",
                        f.display(),
                        files[0].display()
                    )));
                }
                m.points.extend(part.points);
            }
        }
    }
    let mut m = merged.ok_or_else(|| Failure::Usage(format!("--merge {}: no .json files", dir.display())))?;
    m.points.sort_by_key(|p| p.point.index);
    m.points.dedup_by_key(|p| p.point.index);
    let expected = m.grid.points().len();
    if m.points.len() < expected {
        eprintln!("duraflash: warning: {} of {expected} grid points present", m.points.len());
    }
    m.command = std::env::args().collect();
    Ok(m)
}

/// Table, CSV, plot and JSON of a sweep.
fn finish_sweep(args: &SweepArgs, out: SweepOutput) -> Result<(), Failure> {
    // Curves are named by the axes that vary besides OP.
    let g = &out.grid;
    let label = |p: &duraflash::lab::sweep::Point| {
        let mut parts = Vec::new();
        if g.gc.len() > 1 {
            parts.push(p.gc.to_string());
        }
        if g.pages_per_block.len() > 1 {
            parts.push(format!("{} pages/block", p.pages_per_block));
        }
        if g.compress_pct.len() > 1 {
            parts.push(format!("compress {}%", p.compress_pct));
        }
        if g.dedupe_pct.len() > 1 {
            parts.push(format!("dedupe {}%", p.dedupe_pct));
        }
        if g.trim_pct.len() > 1 {
            parts.push(format!("trim {}%", p.trim_pct));
        }
        if g.workload.len() > 1 {
            parts.push(p.workload.clone());
        }
        if parts.is_empty() {
            "WAF".to_string()
        } else {
            parts.join(", ")
        }
    };
    if let Some(path) = &args.csv {
        let mut w = csv::Writer::from_path(path).map_err(|e| Failure::Run(format!("--csv {}: {e}", path.display())))?;
        w.write_record([
            "index",
            "op",
            "gc",
            "pages_per_block",
            "compress_pct",
            "dedupe_pct",
            "trim_pct",
            "workload",
            "seed",
            "waf",
            "model_greedy",
            "compression_ratio",
            "dedup_ratio",
            "erases",
        ])
        .map_err(|e| Failure::Run(e.to_string()))?;
        for r in &out.points {
            let p = &r.point;
            w.write_record([
                p.index.to_string(),
                p.op.to_string(),
                p.gc.to_string(),
                p.pages_per_block.to_string(),
                p.compress_pct.to_string(),
                p.dedupe_pct.to_string(),
                p.trim_pct.to_string(),
                p.workload.clone(),
                r.seed.to_string(),
                format!("{:.5}", r.waf),
                r.model_greedy.map_or(String::new(), |m| format!("{m:.5}")),
                format!("{:.5}", r.compression_ratio),
                format!("{:.5}", r.dedup_ratio),
                r.erases.to_string(),
            ])
            .map_err(|e| Failure::Run(e.to_string()))?;
        }
        w.flush().map_err(|e| Failure::Run(e.to_string()))?;
    }
    if let Some(path) = &args.plot {
        let mut series: Vec<Series> = Vec::new();
        for r in &out.points {
            let name = label(&r.point);
            match series.iter_mut().find(|s| s.name == name) {
                Some(s) => s.points.push((r.point.op * 100.0, r.waf)),
                None => series.push(Series { name, points: vec![(r.point.op * 100.0, r.waf)] }),
            }
        }
        for s in &mut series {
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        let chart = LineChart {
            title: format!("WAF against over-provisioning: {} at {}", out.preset, duraflash::ByteSize(out.capacity)),
            x_label: "over-provisioning of the data blocks (%)".into(),
            y_label: "write amplification (NAND / host bytes)".into(),
            series,
            y_from_zero: true,
            ..Default::default()
        };
        write_plot(&Some(path.clone()), &chart)?;
    }
    let mut summary = format!(
        "{:>5} {:>6}  {:<40} {:>7} {:>7} {:>6} {:>6}\n",
        "point", "OP %", "series", "WAF", "model", "comp", "dedup"
    );
    for r in &out.points {
        summary += &format!(
            "{:>5} {:>6.1}  {:<40} {:>7.3} {:>7} {:>6.3} {:>6.3}\n",
            r.point.index,
            r.point.op * 100.0,
            label(&r.point),
            r.waf,
            r.model_greedy.map_or("-".into(), |m| format!("{m:.3}")),
            r.compression_ratio,
            r.dedup_ratio
        );
    }
    emit(&args.out, &summary, &out, &[])
}

/// Counts the bytes read from the trace file (compressed bytes for gzip),
/// for the progress bar.
struct CountingReader<R> {
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
struct ReplayOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    trace: String,
    format: Format,
    speed: Speed,
    queue_depth: u32,
    lba_wrap: bool,
    compress_pct: u8,
    #[serde(flatten)]
    report: &'a ReplayReport,
}

pub(super) fn replay(args: ReplayArgs) -> Result<(), Failure> {
    setup_threads(&args.out)?;
    if args.qd == 0 {
        return Err(Failure::Usage("--qd: must be at least 1".into()));
    }
    let mut drive = build(&args.drive, args.image.as_deref())?;
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
    let path = args.trace.display().to_string();
    let file = std::fs::File::open(&args.trace).map_err(|e| Failure::Usage(format!("{path}: {e}")))?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let read = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let reader = TraceReader::new(CountingReader { inner: file, read: read.clone() }, format, options)
        .map_err(|e| Failure::Usage(format!("{path}: {e}")))?;
    let format = reader.format();
    let data = DataSpec::compressible(args.compress_pct).map_err(|e| Failure::Usage(e.to_string()))?;
    let speed = match args.speed {
        SpeedArg::AsFastAsPossible => Speed::AsFastAsPossible,
        SpeedArg::Timed => Speed::Timed,
    };
    let spec = ReplaySpec {
        speed,
        qd: args.qd,
        lba_wrap: args.lba_wrap,
        skip_bad: args.skip_bad,
        data,
        seed: drive.config().seed,
    };
    let report = with_progress(&args.out, "replay", |p| {
        let mut tick = |_records: u64| p(read.load(std::sync::atomic::Ordering::Relaxed) as f64 / total.max(1) as f64);
        trace::replay::replay(&mut drive, reader, &spec, &mut tick)
    })
    .map_err(|e| Failure::Run(format!("{path}: {e}")))?;
    let cfg = drive.config().clone();
    if let Some(dir) = &args.plot {
        std::fs::create_dir_all(dir).map_err(|e| Failure::Run(format!("--plot {}: {e}", dir.display())))?;
        write_plot(&Some(dir.join("waf.svg")), &waf_chart(&cfg, &path, &report))?;
    }
    let summary = replay_summary(&cfg, &path, format, &spec, &report);
    super::save_image(&drive, args.image.as_deref())?;
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
            report: &report,
        },
        &[("", Smart::of(&drive))],
    )
}

/// Cumulative WAF and WAF between samples against host data written.
fn waf_chart(cfg: &DriveConfig, path: &str, r: &ReplayReport) -> LineChart {
    let max = r.waf_curve.last().map_or(0, |p| p.host_bytes);
    let (scale, unit) = if max >= 1 << 30 { ((1u64 << 30) as f64, "GiB") } else { ((1u64 << 20) as f64, "MiB") };
    let ratio = |nand: u64, host: u64| if host == 0 { f64::NAN } else { nand as f64 / host as f64 };
    let cumulative = r.waf_curve.iter().map(|p| (p.host_bytes as f64 / scale, ratio(p.nand_bytes, p.host_bytes)));
    let interval = r.waf_curve.windows(2).map(|w| {
        (w[1].host_bytes as f64 / scale, ratio(w[1].nand_bytes - w[0].nand_bytes, w[1].host_bytes - w[0].host_bytes))
    });
    let name = Path::new(path).file_name().map_or(path.into(), |n| n.to_string_lossy());
    LineChart {
        title: format!("WAF replaying {name} on {} at {}", cfg.name, duraflash::ByteSize(cfg.logical_bytes)),
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

fn replay_summary(cfg: &DriveConfig, path: &str, format: Format, spec: &ReplaySpec, r: &ReplayReport) -> String {
    let c = &r.counts;
    let s = &r.stats;
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    let speed = match spec.speed {
        Speed::AsFastAsPossible => "as fast as possible",
        Speed::Timed => "timed",
    };
    let mut out = format!(
        "replay {path} ({format}) on {} at {}: {speed}, QD {}\n",
        cfg.name,
        duraflash::ByteSize(cfg.logical_bytes),
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

/// `duraflash reproduce`.
pub(crate) fn reproduce(args: ReproduceArgs) -> Result<(), Failure> {
    use duraflash::lab::report;
    if let Some(bad) = args.only.iter().find(|n| !report::PARTS.contains(&n.as_str())) {
        return Err(Failure::Usage(format!("--only: unknown part '{bad}' (valid: {})", report::PARTS.join(", "))));
    }
    std::fs::create_dir_all(&args.out).map_err(|e| Failure::Usage(format!("--out {}: {e}", args.out.display())))?;
    let r =
        with_phases(args.quiet, |progress| report::reproduce(&args.out, args.scale, &args.only, args.seed, progress))
            .map_err(Failure::run)?;
    report::write(&args.out, &r).map_err(|e| Failure::Run(format!("--out {}: {e}", args.out.display())))?;
    for p in &r.parts {
        let state = p.error.as_deref().map_or("ok".to_string(), |e| format!("FAILED: {e}"));
        println!("{:<8} {:>7.1} s  {} rows, {} plots  {state}", p.name, p.wall_secs, p.rows.len(), p.plots.len());
    }
    println!("report: {}", args.out.join("index.html").display());
    let failed: Vec<&str> = r.parts.iter().filter(|p| p.error.is_some()).map(|p| p.name.as_str()).collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Failure::Run(format!("parts failed: {} (see the report)", failed.join(", "))))
    }
}

/// Member capacity `raid` uses when none is given.
const RAID_DEFAULT_MEMBER_CAPACITY: u64 = 1 << 30;

#[derive(Serialize)]
struct RaidOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    spec: &'a RaidSpec,
    #[serde(flatten)]
    report: &'a RaidReport,
}

pub(super) fn raid(args: RaidArgs) -> Result<(), Failure> {
    setup_threads(&args.out)?;
    let mut flags = args.drive.clone();
    flags.media = flags.media.or(Some(duraflash::Media::MetadataOnly));
    let cfg = flags.build(Some(RAID_DEFAULT_MEMBER_CAPACITY)).map_err(Failure::Usage)?;
    if args.zones == 0 {
        return Err(Failure::Usage("--zones: must be at least 1".into()));
    }
    if !(args.minutes.is_finite() && args.minutes >= 0.0) {
        return Err(Failure::Usage(format!("--minutes {} must be a non-negative number", args.minutes)));
    }
    let super::RaidProtocol::Torture = args.protocol;
    // Check the layout before running anything: bad counts and stripes are usage errors.
    Layout::new(args.level, args.members, args.stripe.0, cfg.logical_bytes, u64::from(cfg.unit_bytes))
        .map_err(|e| Failure::Usage(e.to_string()))?;
    let spec = RaidSpec {
        level: args.level,
        members: args.members,
        stripe_bytes: args.stripe.0,
        driver: args.driver,
        minutes: args.minutes,
        zones: args.zones,
        seed: cfg.seed,
    };
    let r = with_phases(args.out.quiet, |progress| raid::raid(&cfg, &spec, progress)).map_err(Failure::run)?;
    if let Some(dir) = &args.plot {
        raid_plots(dir, &cfg, &r)?;
    }
    let mut summary = format!(
        "RAID-{} of {} x {} at {} (array {}), stripe {}, driver {} (format TRIM {})\n",
        args.level,
        args.members,
        cfg.name,
        duraflash::ByteSize(r.member_bytes),
        duraflash::ByteSize(r.array_bytes),
        duraflash::ByteSize(args.stripe.0),
        args.driver,
        if r.trim_passed { "passed to the members" } else { "dropped by the driver" },
    );
    summary += &format!(
        "torture: {:.2} array-writes of 4 KiB random writes at QD 32 ({:.1} s simulated); format unmapped {} units\n",
        r.drive_writes, r.torture_secs, r.trimmed_units
    );
    summary += &format!(
        "{:<20} {:>10} {:>10}   (HD Tach, {} requests)\n",
        "state",
        "read MB/s",
        "write MB/s",
        size_label(r.request_bytes)
    );
    for (name, m) in [
        ("one member, clean", &r.single),
        ("array clean", &r.clean),
        ("array tortured", &r.tortured),
        ("array after format", &r.after_format),
    ] {
        summary += &format!("{name:<20} {:>10.1} {:>10.1}\n", m.read_mbps, m.write_mbps);
    }
    summary += &format!("{:<20} {:>10} {:>10}\n", "4 KiB random read", "QD1 IOPS", "QD32 IOPS");
    for (name, x) in [("one member", &r.single_random_read), ("array", &r.random_read)] {
        summary += &format!("{name:<20} {:>10.0} {:>10.0}\n", x.qd1_iops, x.qd32_iops);
    }
    let labels: Vec<String> = (0..r.smart.len()).map(|i| format!("member {i}")).collect();
    let smart: Vec<(&str, Smart)> = labels.iter().map(String::as_str).zip(r.smart.iter().cloned()).collect();
    emit(&args.out, &summary, &RaidOutput { provenance: Provenance::new(&cfg), spec: &spec, report: &r }, &smart)
}

fn raid_plots(dir: &Path, cfg: &DriveConfig, r: &RaidReport) -> Result<(), Failure> {
    std::fs::create_dir_all(dir).map_err(|e| Failure::Run(format!("--plot {}: {e}", dir.display())))?;
    let gb = |o: u64| o as f64 / 1e9;
    let states = [("clean", &r.clean), ("tortured", &r.tortured), ("after format", &r.after_format)];
    let driver = r.driver.to_string();
    for (dir_name, pick) in [("read", true), ("write", false)] {
        let series = states
            .iter()
            .map(|(name, s)| {
                let sweep = if pick { &s.hdtach.read } else { &s.hdtach.write };
                Series { name: (*name).into(), points: sweep.zones.iter().map(|z| (gb(z.offset), z.mbps)).collect() }
            })
            .collect();
        let chart = LineChart {
            title: format!("HD Tach {dir_name}: RAID-{} of {}, driver {driver}", r.layout.level, cfg.name),
            x_label: "position (GB)".into(),
            y_label: "MB/s".into(),
            series,
            y_from_zero: true,
            ..Default::default()
        };
        write_plot(&Some(dir.join(format!("raid{}-{driver}-{dir_name}.svg", r.layout.level))), &chart)?;
    }
    Ok(())
}

#[derive(Serialize)]
struct OptimizerOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    #[serde(flatten)]
    report: &'a OptimizerReport,
    review: [f64; 3],
}

pub(super) fn optimizer(args: OptimizerArgs) -> Result<(), Failure> {
    setup_threads(&args.out)?;
    let mut cfg = DriveConfig::preset(&args.preset)
        .and_then(|c| c.scaled(args.capacity.0))
        .map_err(|e| Failure::Usage(format!("--preset/--capacity: {e}")))?;
    if cfg.compression || cfg.dedup {
        return Err(Failure::Usage(format!(
            "--preset {}: the trace writes no content; use samsung830-64g or intel-x25m-g2-160g",
            args.preset
        )));
    }
    cfg.seed = args.seed;
    cfg.media = duraflash::Media::MetadataOnly;
    let drive = Drive::new(cfg.clone()).map_err(|e| Failure::Usage(e.to_string()))?;
    let r = with_phases(args.out.quiet, |progress| optimizer::optimizer(&drive, args.seed, progress))
        .map_err(Failure::run)?;
    let mut summary = format!(
        "optimizer {} at {}: {} commands in {} scenarios at QD {} (mean outstanding {:.2}; {:.0} MB read, {:.0} MB \
         written), files on {:.0}% of the LBAs, wiper unmapped {} units\n",
        cfg.name,
        duraflash::ByteSize(cfg.logical_bytes),
        r.commands,
        optimizer::SCENARIOS.len(),
        optimizer::TRACE_QD,
        r.avg_qd,
        r.read_bytes as f64 / 1e6,
        r.write_bytes as f64 / 1e6,
        r.used_share * 100.0,
        r.wiped_units
    );
    summary += &format!(
        "{:<12} {:>10} {:>8} {:>6} {:>14} {:>8}\n",
        "state", "score", "% clean", "WAF", "review score", "% clean"
    );
    for (i, (name, score)) in
        [("clean", r.clean), ("used", r.used), ("after wiper", r.after_wiper)].into_iter().enumerate()
    {
        summary += &format!(
            "{name:<12} {score:>10.0} {:>7.1}% {:>6.2} {:>14.0} {:>7.1}%\n",
            score / r.clean * 100.0,
            r.waf[i],
            optimizer::REVIEW_SCORES[i],
            optimizer::REVIEW_SCORES[i] / optimizer::REVIEW_SCORES[0] * 100.0
        );
    }
    summary += &format!("{:<20} {:>9} {:>9} {:>9}   (MB/s)\n", "scenario", "clean", "used", "wiped");
    for (i, sc) in r.states[0].scenarios.iter().enumerate() {
        summary += &format!(
            "{:<20} {:>9.1} {:>9.1} {:>9.1}\n",
            sc.name, sc.mbps, r.states[1].scenarios[i].mbps, r.states[2].scenarios[i].mbps
        );
    }
    summary += "(score: geometric mean of the scenarios' MB/s, in KB/s; the review's is PCMark Vantage HDD, the same \
                kind of mean scaled to points, on a 160 GB X25-M G2: compare the shares of clean)\n";
    let smart = [("after wiper", r.smart.clone())];
    emit(
        &args.out,
        &summary,
        &OptimizerOutput { provenance: Provenance::new(&cfg), report: &r, review: optimizer::REVIEW_SCORES },
        &smart,
    )
}

#[derive(Serialize)]
struct BenchOutput<'a> {
    command: Vec<String>,
    version: &'static str,
    preset: &'a str,
    threads: usize,
    points: &'a [duraflash::lab::bench::Point],
}

pub(crate) fn bench(args: BenchArgs) -> Result<(), Failure> {
    use duraflash::lab::bench::{self, BenchSpec};
    setup_threads(&args.out)?;
    let preset = DriveConfig::preset(&args.preset).map_err(|e| Failure::Usage(format!("--preset: {e}")))?;
    let mut sizes = Vec::new();
    for s in &args.sizes {
        let bytes = if s == "full" {
            preset.logical_bytes
        } else {
            s.parse::<duraflash::units::ByteSize>().map_err(|e| Failure::Usage(format!("--sizes: {e}")))?.0
        };
        let cfg = preset
            .scaled(bytes)
            .and_then(|c| c.with_exact_op(args.op))
            .map_err(|e| Failure::Usage(format!("--sizes {s} with --op {}: {e}", args.op)))?;
        sizes.push(cfg);
    }
    if !(args.measure.is_finite() && args.measure > 0.0) {
        return Err(Failure::Usage("--measure: must be a positive number of drive-writes".into()));
    }
    let spec = BenchSpec {
        precondition: args.precondition,
        measure: args.measure,
        min_measured_writes: args.min_writes,
        seed: args.seed,
    };
    let mut points = Vec::new();
    let mut summary = format!(
        "{:>10} {:>13} {:>6} {:>6} {:>10} {:>10} {:>8} {:>8} {:>9} {:>8} {:>8}\n",
        "capacity", "mode", "OP %", "WAF", "M w/CPU-s", "M w/s", "ns/write", "ns/chunk", "B/unit", "RSS MB", "CPU-s"
    );
    for cfg in &sizes {
        for mode in args.modes.iter().map(|&m| bench::Mode::from(m)) {
            let label = format!("{} {mode}", duraflash::units::ByteSize(cfg.logical_bytes));
            let p = with_phases(args.out.quiet, |tick| {
                bench::point(cfg, mode, &spec, &mut |phase, x| tick(&format!("{label}: {phase}"), x))
            })
            .map_err(Failure::run)?;
            let line = format!(
                "{:>10} {:>13} {:>6.2} {:>6.3} {:>10.2} {:>10.2} {:>8.0} {:>8.0} {:>9.1} {:>8} {:>8.2}\n",
                duraflash::units::ByteSize(p.capacity_bytes).to_string(),
                mode.to_string(),
                p.op * 100.0,
                p.waf,
                p.speed.writes_per_cpu_sec / 1e6,
                p.speed.writes_per_sec / 1e6,
                p.ns_per_host_write,
                p.ns_per_chunk_write,
                p.footprint.per_unit(),
                p.rss_bytes.map_or("-".into(), |b| format!("{:.0}", b as f64 / 1e6)),
                p.speed.cpu_secs,
            );
            if args.out.json.is_some() {
                eprint!("{line}");
            }
            summary += &line;
            points.push(p);
        }
    }
    if let Some(last) = points.last() {
        summary += &format!(
            "memory of the last drive ({}, {}), bytes per logical unit:\n",
            duraflash::units::ByteSize(last.capacity_bytes),
            last.mode
        );
        for (name, bytes) in last.footprint.parts() {
            summary += &format!("  {name:<16} {:>8.2}\n", bytes as f64 / last.footprint.units.max(1) as f64);
        }
        summary += &format!("  {:<16} {:>8.2} (metadata)\n", "total", last.footprint.per_unit());
    }
    if let (Some(path), Some(chart)) = (&args.plot, bench::chart(&args.preset, &points)) {
        write_plot(&Some(path.clone()), &chart)?;
    }
    let output = BenchOutput {
        command: std::env::args().collect(),
        version: env!("CARGO_PKG_VERSION"),
        preset: &args.preset,
        threads: rayon::current_num_threads(),
        points: &points,
    };
    emit(&args.out, &summary, &output, &[])
}
