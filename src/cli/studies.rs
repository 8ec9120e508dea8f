//! The studies over many drives or runs: `corpus`, `sweep`, `bench`,
//! `reproduce`, `compare` and `soak`, and `image info`.

use std::path::{Path, PathBuf};

use clap::Args;
use serde::Serialize;

use duraflash::config::overrides::Capacity;
use duraflash::config::{DriveConfig, GcPolicy, Media};
use duraflash::device::memory::Part;
use duraflash::host::smart::Smart;
use duraflash::lab::check_drive_writes;
use duraflash::lab::plot;
use duraflash::lab::sweep::{self as sw, Grid, SweepRun};

use super::output::{check_output, emit, name, progress_bar, say, with_phases, with_progress, PlotDir, Provenance};
use super::{parse_capacity, parse_gc, parse_media, parse_op, parse_pct, DriveArgs, Failure, Output, Reads};

#[derive(Args)]
pub(crate) struct CorpusArgs {
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
    /// Write a bar chart (compression, dedup, WAF per corpus) into DIR/corpus.svg.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
}

#[derive(Serialize)]
pub(crate) struct CorpusOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    spec: &'a duraflash::lab::corpora::CorpusSpec,
    corpora: &'a [duraflash::lab::corpora::CorpusReport],
}

/// `duraflash corpus`.
pub(crate) fn corpus(args: CorpusArgs) -> Result<(), Failure> {
    use duraflash::content::corpus::{self, Corpus};
    use duraflash::lab::corpora::{run, CorpusSpec};
    args.out.start(&[("--config", args.drive.config.as_deref())])?;
    let plots = PlotDir::open(&args.plot, args.out.quiet)?;
    let dir = args.corpora_dir.clone().unwrap_or_else(corpus::default_dir);
    if args.list {
        for e in corpus::manifest(&dir).map_err(|e| Failure::Run(e.to_string()))? {
            say!("{:<10} {:<10} {:>9} B  {}", e.name, e.kind, e.bytes, e.file)?;
        }
        for (name, what) in corpus::GENERATED {
            say!("{name:<10} {:<10} {:>9} B  generated: {what}", "generated", corpus::GENERATED_BYTES)?;
        }
        return Ok(());
    }
    // The drive and the copy each speed test runs on.
    let cfg = args.drive.build_held(Reads::Timing, 2).map_err(Failure::Usage)?;
    let spec = CorpusSpec { share: args.share, precondition: args.precondition, measure: args.measure, seed: cfg.seed };
    spec.validate(&cfg).map_err(Failure::usage)?;
    let names = if args.corpora.is_empty() {
        Corpus::names(&dir).map_err(|e| Failure::Usage(e.to_string()))?
    } else {
        args.corpora.clone()
    };
    let mut held = 0u64;
    for n in &names {
        held += Corpus::held_bytes(n, &dir).map_err(|e| Failure::Usage(e.to_string()))?;
    }
    let beside = vec![Part { name: "corpora", bytes: held, grows_with: "the corpora named" }];
    args.drive.check_run_memory(&cfg, 2, beside).map_err(Failure::Usage)?;
    super::estimate::announce(
        &format!("{} corpora through the {} {}", names.len(), duraflash::ByteSize(cfg.logical_bytes), cfg.name),
        super::estimate::corpora_secs(
            (cfg.logical_bytes as f64 * spec.share) as u64,
            names.len(),
            1.0 + spec.precondition + spec.measure,
        ),
        "--capacity 1GiB (the default) runs a scale model in seconds a corpus",
    );
    let corpora: Vec<Corpus> = names
        .iter()
        .map(|n| Corpus::load(n, &dir))
        .collect::<Result<_, _>>()
        .map_err(|e| Failure::Usage(e.to_string()))?;
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
    if let Some(p) = &plots {
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
        p.bars("corpus.svg", &chart)?;
    }
    let mut summary = format!(
        "drive {} at {}, media {};\neach corpus tiled over {:.0}% of the LBAs, {} + {} random-overwrite passes\n\n",
        cfg.name,
        duraflash::ByteSize(cfg.logical_bytes),
        name(&cfg.media),
        spec.share * 100.0,
        spec.precondition,
        spec.measure
    );
    // Two tables, each narrower than 100 columns: what the data does to
    // the drive, then how fast the drive and the pipeline take it.
    summary += &format!(
        "{:<10} {:>9} {:>6} {:>6} {:>8} {:>6} {:>6} {:>6}\n",
        "corpus", "bytes", "lz4", "comp", "distinct", "dedup", "WAF", "model"
    );
    for r in &reports {
        let model = r.model_waf.map_or("-".to_string(), |m| format!("{m:.3}"));
        summary += &format!(
            "{:<10} {:>9} {:>6.3} {:>6.3} {:>8.3} {:>6.3} {:>6.3} {:>6}\n",
            r.name, r.bytes, r.lz4_block_ratio, r.compression_ratio, r.distinct_ratio, r.dedup_ratio, r.waf, model
        );
    }
    summary += &format!(
        "\n{:<10} {:>8} {:>8} {:>9} {:>8} {:>5} {:>9}\n",
        "corpus", "seq MB/s", "4K MB/s", "pipe MB/s", "raw MB/s", "ratio", "cpu ratio"
    );
    for r in &reports {
        summary += &format!(
            "{:<10} {:>8.1} {:>8.1} {:>9.0} {:>8.0} {:>5.2} {:>9.2}\n",
            r.name,
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

#[derive(Args)]
pub(crate) struct SweepArgs {
    /// Built-in drive preset.
    #[arg(long, default_value = "sf2281-240g")]
    preset: String,
    /// Host capacity of every point's drive, or 'full' for the preset's own.
    #[arg(long, default_value = "1GiB", value_parser = parse_capacity)]
    capacity: Capacity,
    /// What the NAND keeps.
    #[arg(long, value_parser = parse_media, default_value = "metadata-only")]
    media: Media,
    /// Base seed; point i runs with its own seed derived from it.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Over-provisioning values (comma-separated; 7% or 0.07 each).
    #[arg(long, value_delimiter = ',', default_value = "7%,15%,28%", value_parser = parse_op, allow_negative_numbers = true)]
    op: Vec<f64>,
    /// GC policies (comma-separated): greedy, cost-benefit, fifo, d-choices:D, windowed:W.
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
    /// Workloads: uniform, zipf:THETA, sequential, hotcold:F:R.
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
    /// Plot WAF against OP, one curve per other combination, into DIR/sweep.svg.
    #[arg(long, value_name = "DIR")]
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

/// `duraflash sweep`.
pub(crate) fn sweep(args: SweepArgs) -> Result<(), Failure> {
    if args.out.smart {
        return Err(Failure::Usage("--smart: a sweep runs many drives; use it on `wa` for one point".into()));
    }
    args.out.start(&[])?;
    if let Some(csv) = &args.csv {
        check_output("--csv", csv, &[])?;
    }
    let plots = PlotDir::open(&args.plot, args.out.quiet)?;
    if let Some(dir) = &args.merge {
        let mut merged = sw::merge(dir).map_err(|e| {
            if e.is_usage() {
                Failure::Usage(format!("--merge {e}"))
            } else {
                Failure::run(e)
            }
        })?;
        let expected = merged.grid.points().len();
        if merged.points.len() < expected {
            note!("duraflash: warning: {} of {expected} grid points present", merged.points.len());
        }
        merged.command = std::env::args().collect();
        return finish_sweep(&args, merged, plots.as_ref());
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
    check_drive_writes("--precondition", args.precondition, true).map_err(Failure::usage)?;
    check_drive_writes("--measure", args.measure, false).map_err(Failure::usage)?;
    let mut base = DriveConfig::preset(&args.preset).map_err(|e| Failure::Usage(format!("--preset: {e}")))?;
    base = args.capacity.apply(base).map_err(|e| Failure::Usage(format!("--capacity: {e}")))?;
    base.media = args.media;
    base.seed = args.seed;
    let points = grid.points();
    // Every point's drive must be buildable before anything runs.
    for p in &points {
        sw::point_config(&base, p).map_err(|e| Failure::Usage(format!("grid point {}: {e}", p.index)))?;
    }
    if let Some(file) = &args.emit_jobs {
        let exe = std::env::current_exe().map_err(Failure::run)?;
        let jobs = sw::JobLines {
            exe: &exe,
            preset: &args.preset,
            capacity: args.capacity,
            media: args.media,
            seed: args.seed,
            grid: &grid,
            precondition: args.precondition,
            measure: args.measure,
            points_dir: &args.points_dir,
        };
        std::fs::write(file, jobs.text()).map_err(|e| Failure::Run(format!("--emit-jobs {}: {e}", file.display())))?;
        // Made here, so the jobs run as written on any machine that shares it.
        std::fs::create_dir_all(&args.points_dir)
            .map_err(|e| Failure::Run(format!("--points-dir {}: {e}", args.points_dir.display())))?;
        say!(
            "{n} jobs written to {}; run them (parallel < {}), then: duraflash sweep --merge {dir}",
            file.display(),
            file.display(),
            n = points.len(),
            dir = args.points_dir.display()
        )?;
        return Ok(());
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
    let results = sw::run_points(&base, &chosen, args.precondition, args.measure, &|| {
        if let Some(b) = &bar {
            b.inc(1);
        }
    });
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let output = SweepRun {
        command: std::env::args().collect(),
        version: env!("CARGO_PKG_VERSION").into(),
        quirks: duraflash::firmware::build_quirks().into_iter().map(String::from).collect(),
        preset: args.preset.clone(),
        capacity: base.logical_bytes,
        seed: args.seed,
        precondition: args.precondition,
        measure: args.measure,
        grid,
        points: results.map_err(Failure::run)?,
    };
    finish_sweep(&args, output, plots.as_ref())
}

/// Table, CSV, plot and JSON of a sweep.
fn finish_sweep(args: &SweepArgs, out: SweepRun, plots: Option<&PlotDir>) -> Result<(), Failure> {
    if let Some(path) = &args.csv {
        out.write_csv(path).map_err(|e| Failure::Run(format!("--csv {}: {e}", path.display())))?;
    }
    if let Some(p) = plots {
        p.line("sweep.svg", &out.chart())?;
    }
    let mut summary = format!(
        "{:>5} {:>6}  {:<40} {:>7} {:>7} {:>7} {:>6} {:>6}\n",
        "point", "OP %", "series", "WAF", "greedy", "policy", "comp", "dedup"
    );
    for r in &out.points {
        summary += &format!(
            "{:>5} {:>6.1}  {:<40} {:>7.3} {:>7} {:>7} {:>6.3} {:>6.3}\n",
            r.point.index,
            r.point.op * 100.0,
            out.grid.series_label(&r.point),
            r.waf,
            r.model_greedy.map_or("-".into(), |m| format!("{m:.3}")),
            r.model_policy.map_or("-".into(), |m| format!("{m:.3}")),
            r.compression_ratio,
            r.dedup_ratio
        );
    }
    emit(&args.out, &summary, &out, &[])
}

#[derive(Args)]
pub(crate) struct ReproduceArgs {
    /// Directory the report is written to.
    #[arg(long, default_value = "report")]
    out: PathBuf,
    /// quick (scale models, minutes), full (the real drive sizes, hours) or tiny (seconds, for tests).
    #[arg(long, default_value = "quick", value_parser = |s: &str| s.parse::<duraflash::lab::report::Scale>())]
    scale: duraflash::lab::report::Scale,
    /// Run only these parts (comma-separated): wa, wa-policies, corpora, torture, atto, resilience, incompressible, raid, optimizer, smart.
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Base seed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// No progress bar.
    #[arg(long)]
    quiet: bool,
}

/// `duraflash reproduce`.
pub(crate) fn reproduce(args: ReproduceArgs) -> Result<(), Failure> {
    use duraflash::lab::report;
    if let Some(bad) = args.only.iter().find(|n| !report::PARTS.contains(&n.as_str())) {
        return Err(Failure::Usage(format!("--only: unknown part '{bad}' (valid: {})", report::PARTS.join(", "))));
    }
    if args.scale == report::Scale::Full {
        // Six full-size torture runs (three firmware, two data kinds),
        // three WA points and five corpora through the whole drive with
        // their bytes dominate; the message names those that run.
        let runs = |part: &str| args.only.is_empty() || args.only.iter().any(|p| p == part);
        let w = report::wa_scale(report::Scale::Full);
        let wa =
            super::estimate::wa_secs(240_000_000_000, &report::WA_OPS, w.pages_per_block, w.precondition + w.measure);
        let heavy = [
            ("torture", "six full-size torture runs", 6.0 * super::estimate::torture_secs(240_000_000_000, None, 20.0)),
            ("wa", "three WA points", wa),
            ("corpora", "five corpora", super::estimate::corpora_secs(240_000_000_000, 5, 4.0)),
        ];
        let (names, secs): (Vec<&str>, Vec<f64>) =
            heavy.iter().filter(|(part, ..)| runs(part)).map(|&(_, what, secs)| (what, secs)).unzip();
        super::estimate::announce(
            &format!(
                "reproduce --scale full: every part at the real drive sizes; {} through the whole 240 GB drive \
                 take most of it (on an idle machine)",
                names.join(", ")
            ),
            secs.iter().sum(),
            "--scale quick takes about 5 minutes",
        );
    }
    std::fs::create_dir_all(&args.out).map_err(|e| Failure::Usage(format!("--out {}: {e}", args.out.display())))?;
    let r =
        with_phases(args.quiet, |progress| report::reproduce(&args.out, args.scale, &args.only, args.seed, progress))
            .map_err(Failure::run)?;
    report::write(&args.out, &r).map_err(|e| Failure::Run(format!("--out {}: {e}", args.out.display())))?;
    let mut text = String::new();
    for p in &r.parts {
        let state = p.error.as_deref().map_or("ok".to_string(), |e| format!("FAILED: {e}"));
        text +=
            &format!("{:<8} {:>7.1} s  {} rows, {} plots  {state}\n", p.name, p.wall_secs, p.rows.len(), p.plots.len());
    }
    for (p, row) in r.rows().filter(|(_, row)| row.verdict == report::Verdict::Disagrees) {
        text += &format!(
            "disagrees: {}: {} ({}): {} {}\n",
            p.name,
            row.quantity,
            row.kind,
            report::fmt_ours(row),
            row.unit
        );
    }
    text += &format!("{}\nreport: {}\n", report::summary_line(&r), args.out.join("index.html").display());
    // A reader that stopped (`| head`) does not hide the parts that failed.
    let shown = say(&text);
    let failed: Vec<&str> = r.parts.iter().filter(|p| p.error.is_some()).map(|p| p.name.as_str()).collect();
    if failed.is_empty() {
        shown
    } else {
        Err(Failure::Run(format!("parts failed: {} (see the report)", failed.join(", "))))
    }
}

#[derive(Args)]
pub(crate) struct CompareArgs {
    /// Two or more `reproduce` reports: their output directories or results.json files.
    #[arg(required = true, num_args = 2..)]
    runs: Vec<PathBuf>,
    /// Show only the rows whose verdict changes between the runs.
    #[arg(long)]
    changed: bool,
    #[command(flatten)]
    out: Output,
}

/// The largest results.json `compare` reads (64 MiB): a report of every
/// part is 74 KB (`reproduce --scale tiny`; the scale changes numbers, not
/// rows) and the full-scale torture, ATTO and RAID-0 parts 33 KB
/// (docs/runs), so this is hundreds of times any real one.
const MAX_REPORT_BYTES: u64 = 64 << 20;

/// `duraflash compare`: exit status 1 when a row changes verdict.
pub(crate) fn compare(args: CompareArgs) -> Result<(), Failure> {
    use duraflash::lab::report::{Comparison, Report};
    // A run given as its directory is read from its results.json, so that
    // is the file an output must not overwrite.
    let files: Vec<PathBuf> =
        args.runs.iter().map(|p| if p.is_dir() { p.join("results.json") } else { p.clone() }).collect();
    let runs: Vec<(&str, Option<&Path>)> = files.iter().map(|p| ("report compared", Some(p.as_path()))).collect();
    args.out.start(&runs)?;
    let mut reports: Vec<(String, Report)> = Vec::new();
    for (path, file) in args.runs.iter().zip(&files) {
        let text = duraflash::input::read_capped(file, MAX_REPORT_BYTES, "reproduce results.json")
            .map_err(|e| Failure::Usage(format!("{}: {e}", file.display())))?;
        let report = serde_json::from_str(&text)
            .map_err(|e| Failure::Usage(format!("{}: not a reproduce results.json ({e})", file.display())))?;
        reports.push((path.display().to_string(), report));
    }
    let comparison = Comparison::new(&reports);
    #[derive(Serialize)]
    struct Json<'a> {
        command: Vec<String>,
        version: &'static str,
        #[serde(flatten)]
        comparison: &'a Comparison,
    }
    let json =
        Json { command: std::env::args().collect(), version: env!("CARGO_PKG_VERSION"), comparison: &comparison };
    // A reader that stopped (`| head`) does not hide the rows that changed.
    let shown = emit(&args.out, &comparison.markdown(args.changed), &json, &[]);
    let changed: Vec<String> = comparison.changed().map(|c| format!("{}: {}", c.part, c.quantity)).collect();
    if changed.is_empty() {
        shown
    } else {
        Err(Failure::Run(format!(
            "{} of {} rows change verdict between the runs: {}",
            changed.len(),
            comparison.rows.len(),
            changed.join("; ")
        )))
    }
}
