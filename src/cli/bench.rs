//! The simulator's own checks: `bench` (what simulating costs here) and
//! `soak` (millions of mixed operations against a shadow copy).

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde::Serialize;

use duraflash::config::{DriveConfig, Media};
use duraflash::device::resume::ResumeError;
use duraflash::image::ImageLock;
use duraflash::lab::soak;
use duraflash::Drive;

use super::output::{emit, progress_bar, with_phases, PlotDir, Provenance};
use super::{image_failure, DriveArgs, Failure, Output, Reads};

#[derive(Args)]
pub(crate) struct BenchArgs {
    /// Built-in drive preset.
    #[arg(long, default_value = "sf2281-240g")]
    preset: String,
    /// Drive capacities to measure (comma-separated sizes, or 'full' for the preset's); each
    /// moves to the nearest whole unit that gives exactly --op with whole blocks per die.
    #[arg(long, value_delimiter = ',', default_value = "4GiB")]
    sizes: Vec<String>,
    /// Modes: content-free, content, retained.
    #[arg(long, value_delimiter = ',', value_enum, default_value = "content-free,content,retained")]
    modes: Vec<BenchModeArg>,
    /// Over-provisioning of the data blocks, the same at every size.
    #[arg(long, default_value = "7%", value_parser = super::parse_op)]
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
    /// Plot wall time per host write against capacity, when several sizes run, into DIR/bench.svg.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
}

/// `--modes` values: [`duraflash::lab::bench::Mode`] (the library has no clap).
#[derive(Clone, Copy, ValueEnum)]
#[value(rename_all = "kebab-case")]
pub(crate) enum BenchModeArg {
    /// Compression and dedup off, metadata-only media: no content at all.
    ContentFree,
    /// 50 % compressible data, compression and dedup on, metadata-only.
    Content,
    /// As `content`, with the stored bytes kept.
    Retained,
}

impl From<BenchModeArg> for duraflash::lab::bench::Mode {
    fn from(m: BenchModeArg) -> Self {
        match m {
            BenchModeArg::ContentFree => Self::ContentFree,
            BenchModeArg::Content => Self::Content,
            BenchModeArg::Retained => Self::Retained,
        }
    }
}

#[derive(Serialize)]
pub(crate) struct BenchOutput<'a> {
    command: Vec<String>,
    version: &'static str,
    quirks: Vec<&'static str>,
    preset: &'a str,
    threads: usize,
    points: &'a [duraflash::lab::bench::Point],
}

pub(crate) fn bench(args: BenchArgs) -> Result<(), Failure> {
    use duraflash::lab::bench::{self, BenchSpec};
    args.out.start(&[])?;
    let plots = PlotDir::open(&args.plot, args.out.quiet)?;
    let preset = DriveConfig::preset(&args.preset).map_err(|e| Failure::Usage(format!("--preset: {e}")))?;
    let spec = BenchSpec {
        precondition: args.precondition,
        measure: args.measure,
        min_measured_writes: args.min_writes,
        seed: args.seed,
    };
    let mut sizes = Vec::new();
    for s in &args.sizes {
        let cfg = bench::sized(&preset, s, args.op)
            .map_err(|e| Failure::Usage(format!("--sizes {s} with --op {}: {e}", args.op)))?;
        spec.validate(&cfg).map_err(Failure::usage)?;
        sizes.push(cfg);
    }
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
                let _ = std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes());
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
    if let (Some(p), Some(chart)) = (&plots, bench::chart(&args.preset, &points)) {
        p.line("bench.svg", &chart)?;
    }
    let output = BenchOutput {
        command: std::env::args().collect(),
        version: env!("CARGO_PKG_VERSION"),
        quirks: duraflash::firmware::build_quirks(),
        preset: &args.preset,
        threads: rayon::current_num_threads(),
        points: &points,
    };
    emit(&args.out, &summary, &output, &[])
}

#[derive(Args)]
pub(crate) struct SoakArgs {
    #[command(flatten)]
    drive: DriveArgs,
    /// Operations to run (at most 1000000000, about six hours).
    #[arg(long, default_value_t = 10_000_000)]
    ops: u64,
    /// Run the invariant checker every N operations (0: only at the end).
    #[arg(long, default_value_t = 100_000)]
    check_every: u64,
    /// Save and reload the drive through an image every N operations (0: never).
    #[arg(long, default_value_t = 1_000_000)]
    image_every: u64,
    /// A new file where those images go, kept at the end (refused if it exists or another
    /// process holds it; default: a file in the temp directory, removed at the end).
    #[arg(long)]
    image: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
}

pub(crate) fn soak(args: SoakArgs) -> Result<(), Failure> {
    args.out.start(&[("--image", args.image.as_deref()), ("--config", args.drive.config.as_deref())])?;
    if args.ops > soak::MAX_OPS {
        return Err(Failure::Usage(format!(
            "--ops {}: at most {} operations, about six hours; run longer soaks as a loop on one --image",
            args.ops,
            soak::MAX_OPS
        )));
    }
    let cfg = args.drive.build(Reads::Data).map_err(Failure::Usage)?;
    if cfg.media != Media::Memory {
        return Err(Failure::Usage("--media: soak verifies reads, so it needs memory media".into()));
    }
    // The image's lock, held until soak ends, as every command that opens an image holds it.
    let _lock = args.image.as_deref().map(soak_image).transpose()?;
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
    #[derive(Serialize)]
    struct SoakOutput<'a> {
        #[serde(flatten)]
        provenance: Provenance<'a>,
        #[serde(flatten)]
        report: &'a soak::SoakReport,
    }
    emit(&args.out, &summary, &SoakOutput { provenance: Provenance::new(&cfg), report: &report }, &[])
}

/// The lock of `--image` for soak, which writes a scratch drive there: a
/// directory or an existing file is refused (exit 2; soak would overwrite
/// a user's drive), an image another process holds as by every command.
fn soak_image(path: &Path) -> Result<ImageLock, Failure> {
    let usage = |why: &str| Failure::Usage(format!("--image {}: {why}", path.display()));
    if path.metadata().is_ok_and(|m| !m.is_file()) {
        return Err(usage("not a regular file (soak writes its scratch drive to a new file)"));
    }
    let lock = ImageLock::acquire(path).map_err(|source| image_failure(ResumeError::Locked { source }))?;
    if path.symlink_metadata().is_ok() {
        return Err(usage("already exists (soak would overwrite it with its scratch drive): give a new path"));
    }
    Ok(lock)
}
