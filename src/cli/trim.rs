//! The TRIM experiments: `raid` (TRIM through a RAID driver) and
//! `optimizer` (manual TRIM by a wiper over a filesystem model).

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use serde::Serialize;

use duraflash::config::overrides::Capacity;
use duraflash::config::DriveConfig;
use duraflash::host::raid::{Layout, Level, TrimPolicy};
use duraflash::host::smart::Smart;
use duraflash::lab::optimizer::{self, OptimizerReport};
use duraflash::lab::plot::{LineChart, Series};
use duraflash::lab::raid::{self, RaidReport, RaidSpec};
use duraflash::lab::torture::Duration;
use duraflash::units::SECTOR_BYTES;
use duraflash::workload::review::HDTACH_REQUEST;
use duraflash::{ByteSize, Drive};

use super::output::{emit, size_label, with_phases, PlotDir, Provenance};
use super::{bounds, parse_capacity, DriveArgs, Failure, Output, Reads};

#[derive(Args)]
pub(crate) struct RaidArgs {
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
    /// Write the HD Tach read and write graphs (SVG) into DIR.
    #[arg(long, value_name = "DIR")]
    plot: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum RaidProtocol {
    /// Secure erase, fill, 4 KiB random writes at QD 32, format, HD Tach.
    Torture,
}

pub(crate) fn parse_level(s: &str) -> Result<Level, String> {
    s.parse().map_err(|e: duraflash::host::raid::RaidError| e.to_string())
}

pub(crate) fn parse_policy(s: &str) -> Result<TrimPolicy, String> {
    s.parse().map_err(|e: duraflash::host::raid::RaidError| e.to_string())
}

#[derive(Serialize)]
pub(crate) struct RaidOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    spec: &'a RaidSpec,
    #[serde(flatten)]
    report: &'a RaidReport,
}

pub(crate) fn raid(args: RaidArgs) -> Result<(), Failure> {
    args.out.start(&[("--config", args.drive.config.as_deref())])?;
    let plots = PlotDir::open(&args.plot, args.out.quiet)?;
    let cfg = args.drive.build_held(Reads::Timing, bounds::members(args.members)?).map_err(Failure::Usage)?;
    Duration::Minutes(args.minutes).validate().map_err(Failure::usage)?;
    let RaidProtocol::Torture = args.protocol;
    // Check the layout before running anything: bad counts and stripes are usage errors.
    let layout = Layout::new(args.level, args.members, args.stripe.0, cfg.logical_bytes, u64::from(cfg.unit_bytes))
        .map_err(|e| Failure::Usage(e.to_string()))?;
    // HD Tach runs on one member and on the array, in stripe rows; the lone
    // member is filled in stripe rows too.
    bounds::zones(args.zones, HDTACH_REQUEST, cfg.logical_bytes)?;
    let row = args.stripe.0.saturating_mul(layout.columns as u64);
    let array = layout.sectors() * SECTOR_BYTES;
    if row > cfg.logical_bytes || u64::from(args.zones).saturating_mul(row) > array {
        return Err(Failure::Usage(format!(
            "--stripe {}: a stripe row ({}: the stripe on each of {} data columns) must fit in one member ({}) and --zones {} \
             rows in the array ({}); use a smaller --stripe, fewer --members or --zones, or a larger --capacity",
            args.stripe,
            duraflash::ByteSize(row),
            layout.columns,
            duraflash::ByteSize(cfg.logical_bytes),
            args.zones,
            duraflash::ByteSize(array)
        )));
    }
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
    if let Some(p) = &plots {
        raid_plots(p, &cfg, &r)?;
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
        "{:<20} {:>10} {:>10}   (HD Tach: {} requests on the array, {} on one member)\n",
        "state",
        "read MB/s",
        "write MB/s",
        size_label(r.request_bytes),
        size_label(HDTACH_REQUEST)
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

pub(crate) fn raid_plots(plots: &PlotDir, cfg: &DriveConfig, r: &RaidReport) -> Result<(), Failure> {
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
        plots.line(&format!("raid{}-{driver}-{dir_name}.svg", r.layout.level), &chart)?;
    }
    Ok(())
}

#[derive(Args)]
pub(crate) struct OptimizerArgs {
    /// Built-in drive preset (a conventional drive: the trace writes no content).
    #[arg(long, default_value = "intel-x25m-g2-160g")]
    preset: String,
    /// Scale the drive down to this host capacity, or 'full' for the preset's own.
    #[arg(long, default_value = "1GiB", value_parser = parse_capacity)]
    capacity: Capacity,
    /// Seed of the filesystem content and the trace.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    out: Output,
}

#[derive(Serialize)]
pub(crate) struct OptimizerOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    #[serde(flatten)]
    report: &'a OptimizerReport,
    review: [f64; 3],
}

pub(crate) fn optimizer(args: OptimizerArgs) -> Result<(), Failure> {
    args.out.start(&[])?;
    let mut cfg = DriveConfig::preset(&args.preset)
        .and_then(|c| args.capacity.apply(c))
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
