//! `duraflash reproduce`: every figure the project reproduces (WA model
//! check, corpora, SandForce torture and ATTO, RAID-0 TRIM, manual TRIM,
//! SMART), in one run,
//! written as a report a person can read (`index.html`, `report.md`) and a
//! machine can check (`results.json`). Each part sets what the reviews
//! measured (or the analytic model predicts) beside what the model
//! measured, with its plots and a paragraph on the mechanism. A part that
//! fails is reported in its section; the others still run.

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::config::DriveConfig;
use crate::content::corpus::{self, Corpus};
use crate::lab::corpora::{self as corpus_bench, CorpusSpec};
use crate::lab::plot::{self, BarChart, LineChart, Series};
use crate::lab::sweep::{self, Point};
use crate::lab::torture::{self, Duration, TortureData, TortureReport, TortureSpec};
use crate::lab::StudyError;
use crate::workload::review::AttoPoint;

/// How big the drives are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scale {
    /// Seconds in all: for the test suite.
    Tiny,
    /// A few minutes on two cores: scale models (the default).
    Quick,
    /// The presets at their real size: hours.
    Full,
}

impl std::str::FromStr for Scale {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "tiny" => Ok(Scale::Tiny),
            "quick" => Ok(Scale::Quick),
            "full" => Ok(Scale::Full),
            _ => Err(format!("unknown scale '{s}' (valid: quick, full, tiny)")),
        }
    }
}

/// The parts, in report order.
pub const PARTS: [&str; 7] = ["wa", "corpora", "torture", "atto", "raid", "optimizer", "smart"];

/// One line of a comparison: a reference (a review's figure, or a model's
/// prediction, or the review's words where it gave no number) beside ours.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// What is compared.
    pub quantity: String,
    /// The reference value, when numeric.
    pub reference: Option<f64>,
    /// The reference in words (always set: the number, or what the review said).
    pub reference_text: String,
    /// Our measurement.
    pub ours: f64,
    /// Unit of both.
    pub unit: String,
}

/// One section of the report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Part {
    /// Short name (`--only`).
    pub name: String,
    /// Section title.
    pub title: String,
    /// Where the reference figures come from.
    pub source: String,
    /// How the model produces the effect.
    pub mechanism: String,
    /// The error, when the part failed.
    pub error: Option<String>,
    /// Wall-clock seconds the part took.
    pub wall_secs: f64,
    /// The comparison.
    pub rows: Vec<Row>,
    /// Plot files, relative to the report directory.
    pub plots: Vec<String>,
}

/// The whole report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// Crate version.
    pub version: String,
    /// The firmware quirks compiled into this build.
    #[serde(default)]
    pub quirks: Vec<String>,
    /// Command line.
    pub command: Vec<String>,
    /// Base seed.
    pub seed: u64,
    /// Scale run.
    pub scale: Scale,
    /// Wall-clock seconds in all.
    pub wall_secs: f64,
    /// Sections.
    pub parts: Vec<Part>,
}

impl Report {
    /// Whether every part ran.
    pub fn ok(&self) -> bool {
        self.parts.iter().all(|p| p.error.is_none())
    }
}

fn row(quantity: impl Into<String>, reference: Option<f64>, text: impl Into<String>, ours: f64, unit: &str) -> Row {
    Row { quantity: quantity.into(), reference, reference_text: text.into(), ours, unit: unit.into() }
}

fn num(quantity: impl Into<String>, reference: f64, ours: f64, unit: &str) -> Row {
    let text = format!("{reference:.3}");
    row(quantity, Some(reference), text, ours, unit)
}

/// Runs the parts named in `only` (all when empty) at `scale`, writing
/// plots into `dir/plots`. `progress` gets the part name and the fraction
/// of the whole run done.
pub fn reproduce(
    dir: &Path,
    scale: Scale,
    only: &[String],
    seed: u64,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<Report, StudyError> {
    if let Some(bad) = only.iter().find(|n| !PARTS.contains(&n.as_str())) {
        return Err(StudyError::BadSpec(format!("unknown part '{bad}' (valid: {})", PARTS.join(", "))));
    }
    let plots = dir.join("plots");
    std::fs::create_dir_all(&plots).map_err(|source| StudyError::Io { path: plots.clone(), source })?;
    let chosen: Vec<&str> = PARTS.iter().copied().filter(|p| only.is_empty() || only.iter().any(|o| o == p)).collect();
    let start = Instant::now();
    let mut parts = Vec::new();
    // ATTO runs inside the torture protocol: keep those reports for it.
    let mut tortures: Option<Vec<TortureReport>> = None;
    for (i, name) in chosen.iter().enumerate() {
        let at = i as f64 / chosen.len() as f64;
        let width = 1.0 / chosen.len() as f64;
        let mut tick = |f: f64| progress(name, at + width * f);
        let t = Instant::now();
        let mut part = match *name {
            "wa" => wa_part(dir, scale, seed, &mut tick),
            "corpora" => corpora_part(dir, scale, seed, &mut tick),
            "torture" => torture_part(dir, scale, seed, &mut tick, &mut tortures),
            "atto" => atto_part(dir, scale, seed, &mut tick, &mut tortures),
            "raid" => raid_part(dir, scale, seed, &mut tick),
            "optimizer" => optimizer_part(scale, seed, &mut tick),
            _ => smart_part(scale, seed, &mut tick),
        };
        part.wall_secs = t.elapsed().as_secs_f64();
        parts.push(part);
    }
    Ok(Report {
        version: env!("CARGO_PKG_VERSION").into(),
        quirks: crate::firmware::build_quirks().into_iter().map(String::from).collect(),
        command: std::env::args().collect(),
        seed,
        scale,
        wall_secs: start.elapsed().as_secs_f64(),
        parts,
    })
}

fn empty(name: &str, title: &str, source: &str, mechanism: &str) -> Part {
    Part {
        name: name.into(),
        title: title.into(),
        source: source.into(),
        mechanism: mechanism.into(),
        error: None,
        wall_secs: 0.0,
        rows: Vec::new(),
        plots: Vec::new(),
    }
}

/// Fills `part` from `f`, or records its error.
fn fill(mut part: Part, f: impl FnOnce(&mut Part) -> Result<(), StudyError>) -> Part {
    if let Err(e) = f(&mut part) {
        part.error = Some(e.to_string());
    }
    part
}

fn save_line(dir: &Path, file: &str, chart: &LineChart, part: &mut Part) -> Result<(), StudyError> {
    plot::line_chart(&dir.join("plots").join(file), chart)?;
    part.plots.push(format!("plots/{file}"));
    Ok(())
}

/// `preset` at `capacity` (its own size when `None`), metadata-only, with
/// `seed`: the drives every part runs.
fn model(preset: &str, capacity: Option<u64>, seed: u64) -> Result<DriveConfig, StudyError> {
    let mut cfg = DriveConfig::preset(preset)?;
    if let Some(c) = capacity {
        cfg = cfg.scaled(c)?;
    }
    cfg.media = crate::Media::MetadataOnly;
    cfg.seed = seed;
    Ok(cfg)
}

fn wa_part(dir: &Path, scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Part {
    let part = empty(
        "wa",
        "Write amplification against the analytic greedy model",
        "Desnoyers, SYSTOR 2012, Eq. 12, evaluated at the operating point each run really had",
        "Uniform random 4 KiB overwrites of incompressible data; greedy GC picks the block with the least live \
         data. The model predicts the WAF from the spare factor alone; the simulator gets it from moving every \
         live chunk of every victim.",
    );
    fill(part, |part| {
        let (capacity, ppb, pre, measure) = match scale {
            Scale::Tiny => (Some(64 << 20), 64, 1.0, 0.5),
            Scale::Quick => (Some(1 << 30), 64, 2.0, 1.0),
            Scale::Full => (None, 256, 2.0, 1.0),
        };
        let base = model("sf2281-240g", capacity, seed)?;
        let ops = [0.07, 0.15, 0.28];
        let (mut ours, mut model) = (Vec::new(), Vec::new());
        for (i, &op) in ops.iter().enumerate() {
            let point = Point {
                index: i,
                op,
                gc: crate::GcPolicy::Greedy,
                pages_per_block: ppb,
                compress_pct: 0,
                dedupe_pct: 0,
                trim_pct: 0,
                workload: "uniform".into(),
            };
            let r = sweep::run_point(&base, &point, pre, measure)?;
            let m =
                r.model_greedy.ok_or_else(|| StudyError::Violation("the model applies to uniform writes".into()))?;
            part.rows.push(num(format!("WAF at OP {:.0} %", op * 100.0), m, r.waf, "NAND/host bytes"));
            ours.push((op * 100.0, r.waf));
            model.push((op * 100.0, m));
            tick((i + 1) as f64 / ops.len() as f64);
        }
        let chart = LineChart {
            title: "WAF against over-provisioning: greedy GC, incompressible 4 KiB writes".into(),
            x_label: "over-provisioning of the data blocks (%)".into(),
            y_label: "write amplification".into(),
            // The model first, so the measured curve is drawn on top of it.
            series: vec![
                Series { name: "greedy model".into(), points: model },
                Series { name: "measured".into(), points: ours },
            ],
            y_from_zero: true,
            ..Default::default()
        };
        save_line(dir, "wa.svg", &chart, part)
    })
}

fn corpora_part(dir: &Path, scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Part {
    let part = empty(
        "corpora",
        "Compressible and incompressible data",
        "lz4_flex on each corpus 4 KiB block by block (outside the drive), and the data-reduction model \
         c x WA_greedy(physical / (c x logical))",
        "Each unit is compressed with lz4 and stored at its compressed size; chunks are packed back to back \
         into pages. Less live data leaves GC emptier victims, so NAND writes fall faster than the data does.",
    );
    fill(part, |part| {
        let (capacity, pre, measure) = match scale {
            Scale::Tiny => (Some(32 << 20), 0.5, 0.5),
            Scale::Quick => (Some(256 << 20), 2.0, 1.0),
            Scale::Full => (None, 2.0, 1.0),
        };
        let cfg = model("sf2281-240g", capacity, seed)?;
        let names = ["alice29", "database", "log", "random", "fio-c50"];
        let spec = CorpusSpec { share: 1.0, precondition: pre, measure, seed };
        let mut reports = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let c = Corpus::load(name, &corpus::default_dir())?;
            let r = corpus_bench::run(&cfg, &c, &spec, &mut |_, _| {})?;
            part.rows.push(num(
                format!("{name}: compression ratio"),
                r.lz4_block_ratio,
                r.compression_ratio,
                "stored/raw",
            ));
            if let Some(m) = r.model_waf {
                part.rows.push(num(format!("{name}: WAF"), m, r.waf, "NAND/host bytes"));
            }
            reports.push(r);
            tick((i + 1) as f64 / names.len() as f64);
        }
        let chart = BarChart {
            title: "Corpora on the SF-2281 model".into(),
            y_label: "ratio".into(),
            categories: reports.iter().map(|r| r.name.clone()).collect(),
            groups: vec![
                ("compression (stored/raw)".into(), reports.iter().map(|r| r.compression_ratio).collect()),
                ("WAF".into(), reports.iter().map(|r| r.waf).collect()),
                ("WAF model".into(), reports.iter().map(|r| r.model_waf.unwrap_or(f64::NAN)).collect()),
            ],
            ..Default::default()
        };
        plot::bar_chart(&dir.join("plots/corpora.svg"), &chart)?;
        part.plots.push("plots/corpora.svg".into());
        Ok(())
    })
}

/// The torture protocol runs: three firmwares, compressible and
/// incompressible data, with ATTO at every state.
fn run_tortures(scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Result<Vec<TortureReport>, StudyError> {
    let (capacity, atto) = match scale {
        Scale::Tiny => (Some(256 << 20), 16 << 20),
        Scale::Quick => (Some(1 << 30), 64 << 20),
        Scale::Full => (None, 256 << 20),
    };
    let mut out = Vec::new();
    let runs: Vec<(&str, TortureData)> = ["sf-3.x", "sf-5.0.2", "sf-5.0.3"]
        .into_iter()
        .flat_map(|f| [(f, TortureData::Compressible), (f, TortureData::Incompressible)])
        .collect();
    for (i, (firmware, data)) in runs.iter().enumerate() {
        let mut cfg = model("sf2281-240g", capacity, seed)?;
        cfg.firmware = crate::firmware::Firmware::profile(firmware)?;
        let spec = TortureSpec {
            data: *data,
            duration: Duration::Minutes(20.0),
            qd: 32,
            span: 1.0,
            zones: 32,
            atto_span: Some(atto),
            seed,
        };
        out.push(torture::torture(&cfg, &spec, &mut |_, f| tick((i as f64 + f) / runs.len() as f64))?);
    }
    Ok(out)
}

fn torture_part(
    dir: &Path,
    scale: Scale,
    seed: u64,
    tick: &mut dyn FnMut(f64),
    tortures: &mut Option<Vec<TortureReport>>,
) -> Part {
    let part = empty(
        "torture",
        "The SandForce TRIM bug and its fix (HD Tach)",
        "AnandTech 2012, Corsair Force GS 240 GB (SF-2281, firmware 5.0.x): seed notes section 3",
        "Random-write torture scatters each unit of a sequential range into a different place; the DRAM-less \
         SF-2281 sets up every such piece on its own (firmware time per piece) and keeps few page reads in \
         flight, so sequential reads fall while writes, landing in half-empty compressed blocks, hold up. \
         Firmware 5.0.2 keeps only 15 bits of each TRIM range's 16-bit length, so Windows' 65535-sector \
         format ranges unmap half their sectors, the same half every time; 5.0.3 and 3.x unmap everything. \
         Incompressible data fills the array, so after TRIM the write sweep waits for GC.",
    );
    fill(part, |part| {
        let runs = run_tortures(scale, seed, tick)?;
        for r in &runs {
            let key = format!("{} {:?}", r.firmware, r.data).to_lowercase();
            let clean = r.clean.read_mbps;
            let compressible = r.data == TortureData::Compressible;
            part.rows.push(row(format!("{key}: read clean"), Some(402.0), "402", clean, "MB/s"));
            if compressible {
                part.rows.push(row(format!("{key}: read tortured"), Some(182.0), "182", r.tortured.read_mbps, "MB/s"));
            } else {
                part.rows.push(row(
                    format!("{key}: read tortured"),
                    None,
                    "degraded, as with compressible data",
                    r.tortured.read_mbps,
                    "MB/s",
                ));
            }
            let after = if r.firmware == "sf-5.0.2" {
                "partial recovery: above tortured, below clean"
            } else {
                "back to clean"
            };
            part.rows.push(row(format!("{key}: read after TRIM"), None, after, r.after_trim.read_mbps, "MB/s"));
            part.rows.push(row(
                format!("{key}: read after 2nd TRIM"),
                None,
                "no change from the first TRIM",
                r.after_second_trim.read_mbps,
                "MB/s",
            ));
            part.rows.push(row(
                format!("{key}: write tortured / clean"),
                None,
                if compressible { "unchanged (1.0)" } else { "drops (no compression to make room)" },
                r.tortured.write_mbps / r.clean.write_mbps,
                "ratio",
            ));
            if !compressible {
                part.rows.push(row(
                    format!("{key}: write after TRIM / clean"),
                    None,
                    "never fully restored on SandForce",
                    r.after_trim.write_mbps / r.clean.write_mbps,
                    "ratio",
                ));
            }
            for (file, chart) in torture::hdtach_charts("sf2281", r) {
                plot::line_chart(&dir.join("plots").join(&file), &chart)?;
                part.plots.push(format!("plots/{file}"));
            }
        }
        *tortures = Some(runs);
        Ok(())
    })
}

fn atto_part(
    dir: &Path,
    scale: Scale,
    seed: u64,
    tick: &mut dyn FnMut(f64),
    tortures: &mut Option<Vec<TortureReport>>,
) -> Part {
    let part = empty(
        "atto",
        "ATTO on the same states",
        "AnandTech 2012, seed notes section 3: smaller read losses than HD Tach, writes unaffected",
        "ATTO writes its span and reads it back: fresh, sequentially placed data, so in this model its reads \
         do not lose what HD Tach's do (a known gap: the review saw small losses), and writes hold up as \
         HD Tach's do.",
    );
    fill(part, |part| {
        if tortures.is_none() {
            *tortures = Some(run_tortures(scale, seed, tick)?);
        }
        let runs = tortures.as_ref().ok_or_else(|| StudyError::Violation("no torture runs".into()))?;
        let mean = |v: &[AttoPoint], f: fn(&AttoPoint) -> f64| v.iter().map(f).sum::<f64>() / v.len().max(1) as f64;
        let mut series = Vec::new();
        for r in runs.iter().filter(|r| r.data == TortureData::Compressible) {
            let (Some(clean), Some(tortured)) = (&r.clean.atto, &r.tortured.atto) else {
                return Err(StudyError::Violation("ATTO did not run".into()));
            };
            let hdtach = r.tortured.read_mbps / r.clean.read_mbps;
            part.rows.push(row(
                format!("{}: ATTO read tortured / clean", r.firmware),
                None,
                format!("smaller loss than HD Tach's ({hdtach:.2})"),
                mean(tortured, |p| p.read_mbps) / mean(clean, |p| p.read_mbps),
                "ratio",
            ));
            part.rows.push(row(
                format!("{}: ATTO write tortured / clean", r.firmware),
                Some(1.0),
                "unaffected",
                mean(tortured, |p| p.write_mbps) / mean(clean, |p| p.write_mbps),
                "ratio",
            ));
            if r.firmware == "sf-5.0.2" {
                for (state, points) in [("clean read", clean), ("tortured read", tortured)] {
                    series.push(Series {
                        name: state.into(),
                        points: points.iter().map(|p| (p.size as f64, p.read_mbps)).collect(),
                    });
                }
                for (state, points) in [("clean write", clean), ("tortured write", tortured)] {
                    series.push(Series {
                        name: state.into(),
                        points: points.iter().map(|p| (p.size as f64, p.write_mbps)).collect(),
                    });
                }
            }
        }
        let chart = LineChart {
            title: "ATTO, sf-5.0.2, clean and tortured".into(),
            x_label: "transfer size".into(),
            y_label: "MB/s".into(),
            series,
            y_from_zero: true,
            x_log2: true,
            ..Default::default()
        };
        save_line(dir, "atto.svg", &chart, part)
    })
}

fn raid_part(dir: &Path, scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Part {
    use crate::host::raid::{Level, TrimPolicy};
    use crate::lab::raid::{raid, RaidSpec};
    let part = empty(
        "raid",
        "TRIM through RAID-0 (two Samsung 830 64 GB)",
        "AnandTech 2012, seed notes section 1: RST 10.6 passes no TRIM to RAID-0, 11.2 does",
        "The array splits each request over its members by 128 KiB stripes and completes it when the slowest \
         member does. The format's TRIM becomes exactly the member ranges it covers when the driver passes it; \
         RST 10.6 drops it for RAID-0, so the members keep every tortured block full of stale data and writes \
         stay slow. Random 4 KiB reads at QD 1 touch one member at a time.",
    );
    fill(part, |part| {
        let capacity = match scale {
            Scale::Tiny => Some(64 << 20),
            Scale::Quick => Some(512 << 20),
            Scale::Full => None,
        };
        let member = model("samsung830-64g", capacity, seed)?;
        for (i, driver) in [TrimPolicy::Rst10_6, TrimPolicy::Rst11_2].into_iter().enumerate() {
            let spec = RaidSpec {
                level: Level::Raid0,
                members: 2,
                stripe_bytes: 128 << 10,
                driver,
                minutes: 30.0,
                zones: 32,
                seed,
            };
            let r = raid(&member, &spec, &mut |_, f| tick((i as f64 + f) / 2.0))?;
            let d = driver.to_string();
            if i == 0 {
                part.rows.push(row(
                    "array / one member: sequential read",
                    None,
                    "about 2 (over 1 GB/s vs almost 500 MB/s)",
                    r.clean.read_mbps / r.single.read_mbps,
                    "ratio",
                ));
                part.rows.push(row(
                    "array / one member: sequential write",
                    None,
                    "about 2 (over 300 vs under 160 MB/s)",
                    r.clean.write_mbps / r.single.write_mbps,
                    "ratio",
                ));
                part.rows.push(row(
                    "array / one member: 4 KiB random read QD 1",
                    Some(1.0),
                    "no gain (1.0)",
                    r.random_read.qd1_iops / r.single_random_read.qd1_iops,
                    "ratio",
                ));
                part.rows.push(row(
                    "array / one member: 4 KiB random read QD 32",
                    None,
                    "gains (about 2)",
                    r.random_read.qd32_iops / r.single_random_read.qd32_iops,
                    "ratio",
                ));
                part.rows.push(row("one member: sequential read", None, "almost 500", r.single.read_mbps, "MB/s"));
                part.rows.push(row("one member: sequential write", None, "under 160", r.single.write_mbps, "MB/s"));
            }
            part.rows.push(row(
                format!("{d}: tortured write / clean"),
                None,
                "drops",
                r.tortured.write_mbps / r.clean.write_mbps,
                "ratio",
            ));
            let after = if driver == TrimPolicy::Rst10_6 { "no recovery (as tortured)" } else { "full recovery (1.0)" };
            part.rows.push(row(
                format!("{d}: write after format / clean"),
                None,
                after,
                r.after_format.write_mbps / r.clean.write_mbps,
                "ratio",
            ));
            let series = [("clean", &r.clean), ("tortured", &r.tortured), ("after format", &r.after_format)]
                .into_iter()
                .map(|(name, m)| Series {
                    name: name.into(),
                    points: m.hdtach.write.zones.iter().map(|z| (z.offset as f64 / 1e9, z.mbps)).collect(),
                })
                .collect();
            let chart = LineChart {
                title: format!("HD Tach write, RAID-0 of two samsung830-64g, driver {d}"),
                x_label: "position (GB)".into(),
                y_label: "MB/s".into(),
                series,
                y_from_zero: true,
                ..Default::default()
            };
            save_line(dir, &format!("raid0-write-{d}.svg"), &chart, part)?;
        }
        Ok(())
    })
}

fn optimizer_part(scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Part {
    use crate::lab::optimizer::{optimizer, REVIEW_SCORES};
    let part = empty(
        "optimizer",
        "Manual TRIM: Intel SSD Optimizer on an X25-M G2",
        "AnandTech 2009, seed notes section 2: PCMark Vantage HDD 35909 clean, 30354 used, 34014 after the optimizer",
        "A light desktop trace in eight scenarios after PCMark Vantage's HDD tests (mostly reads, small random \
         and whole-file I/O at QD 6, writing under 2 % of the drive) runs over a filesystem model. Used: every \
         LBA was written once and files deleted without TRIM, so the drive still holds the stale data and GC \
         moves it. The wiper asks the filesystem for its free extents and TRIMs them, so GC finds emptier \
         blocks again. Scores are the geometric mean of the scenarios' throughput (KB/s); the review's are \
         PCMark points, so compare the shares of clean.",
    );
    fill(part, |part| {
        let capacity = match scale {
            Scale::Tiny => Some(64 << 20),
            Scale::Quick => Some(1 << 30),
            Scale::Full => None,
        };
        let cfg = model("intel-x25m-g2-160g", capacity, seed)?;
        let drive = crate::Drive::new(cfg)?;
        let r = optimizer(&drive, seed, &mut |_, f| tick(f))?;
        let [clean, used, wiped] = REVIEW_SCORES;
        part.rows.push(row("score clean", None, format!("{clean} (PCMark points)"), r.clean, "KB/s"));
        part.rows.push(row("score used", None, format!("{used}"), r.used, "KB/s"));
        part.rows.push(row("score after the wiper", None, format!("{wiped}"), r.after_wiper, "KB/s"));
        part.rows.push(num("used / clean", used / clean, r.used / r.clean, "ratio"));
        part.rows.push(num("after the wiper / clean", wiped / clean, r.after_wiper / r.clean, "ratio"));
        Ok(())
    })
}

fn smart_part(scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Part {
    use crate::host::smart::{waf_between, Smart};
    use crate::workload::job::{fill_spec, run_job, JobSpec, Limit};
    let part = empty(
        "smart",
        "SMART at the end of a workload, per preset",
        "the drives' own counters: WAF from SMART's NAND- and host-write attributes must equal the model's",
        "Each preset exposes its vendor's attributes (SandForce 233/241, Intel 249/241, Samsung 241 and \
         wear); life left follows average P/E cycles against the rated endurance.",
    );
    fill(part, |part| {
        let capacity = match scale {
            Scale::Tiny => 32 << 20,
            _ => 1 << 30,
        };
        for (i, preset) in ["sf2281-240g", "samsung830-64g", "intel-x25m-g2-160g"].into_iter().enumerate() {
            let cfg = model(preset, Some(capacity), seed)?;
            let cap = cfg.logical_bytes;
            let mut drive = crate::Drive::new(cfg)?;
            let data = crate::content::pattern::DataSpec::compressible(50)?;
            let before_stats = drive.stats();
            let before = Smart::of(&drive);
            run_job(&mut drive, &fill_spec(cap, 128 << 10, 32, data, seed), &mut |_| {})?;
            let random = JobSpec {
                name: "randwrite".into(),
                rw: crate::workload::access::Rw::RandWrite,
                bs: 4096,
                iodepth: 32,
                offset: 0,
                length: cap,
                limit: Limit::Bytes(2 * cap),
                rwmixread: 0,
                distribution: crate::workload::access::Distribution::Random,
                data,
                seed,
            };
            run_job(&mut drive, &random, &mut |_| {})?;
            let after = Smart::of(&drive);
            let stats = drive.stats();
            let waf = (stats.nand_bytes_programmed - before_stats.nand_bytes_programmed) as f64
                / (stats.host_write_bytes - before_stats.host_write_bytes).max(1) as f64;
            if let Some(smart_waf) = waf_between(&before, &after) {
                part.rows.push(num(format!("{preset}: WAF from SMART deltas"), waf, smart_waf, "NAND/host bytes"));
            }
            for a in &after.attributes {
                part.rows.push(row(
                    format!("{preset}: {} {} (raw)", a.id, a.name),
                    None,
                    "drive counter",
                    a.raw as f64,
                    "raw",
                ));
            }
            tick((i + 1) as f64 / 3.0);
        }
        Ok(())
    })
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Our number as the report prints it: raw counters whole, large values
/// to one decimal, ratios to three.
pub fn fmt_ours(r: &Row) -> String {
    let v = r.ours;
    if r.unit == "raw" {
        format!("{v:.0}")
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Writes `index.html`, `report.md` and `results.json` into `dir`.
pub fn write(dir: &Path, report: &Report) -> Result<(), StudyError> {
    let json = serde_json::to_string_pretty(report)?;
    for (file, text) in [("results.json", json + "\n"), ("report.md", markdown(report)), ("index.html", html(report))] {
        let path = dir.join(file);
        std::fs::write(&path, text).map_err(|source| StudyError::Io { path, source })?;
    }
    Ok(())
}

fn header(report: &Report) -> Vec<(String, String)> {
    vec![
        ("version".into(), report.version.clone()),
        ("seed".into(), report.seed.to_string()),
        ("scale".into(), format!("{:?}", report.scale).to_lowercase()),
        ("command".into(), report.command.join(" ")),
        ("wall time".into(), format!("{:.1} s", report.wall_secs)),
    ]
}

fn markdown(report: &Report) -> String {
    let mut s = String::from("# duraflash: reproduced figures\n\n");
    for (k, v) in header(report) {
        let _ = writeln!(s, "- **{k}**: `{v}`");
    }
    for p in &report.parts {
        let _ = write!(s, "\n## {}\n\n_{}; {:.1} s_\n\n", p.title, p.source, p.wall_secs);
        if let Some(e) = &p.error {
            let _ = writeln!(s, "**This part failed:** {e}\n");
        }
        s += "| quantity | reference | ours | unit |\n|---|---|---|---|\n";
        for r in &p.rows {
            let _ = writeln!(s, "| {} | {} | {} | {} |", r.quantity, r.reference_text, fmt_ours(r), r.unit);
        }
        s += "\n";
        for plot in &p.plots {
            let _ = writeln!(s, "![{plot}]({plot})");
        }
        let _ = writeln!(s, "\n{}", p.mechanism);
    }
    s
}

fn html(report: &Report) -> String {
    let mut s = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>duraflash: reproduced figures</title>\n\
         <style>\nbody{font-family:sans-serif;max-width:960px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}\n\
         table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}\n\
         th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}\n\
         .failed{color:#a00;font-weight:bold}.meta td:first-child{font-weight:bold}img{max-width:100%;margin:.5em 0}\n\
         .source{color:#555;font-style:italic}\n</style>\n</head>\n<body>\n<h1>duraflash: reproduced figures</h1>\n<table class=\"meta\">\n",
    );
    for (k, v) in header(report) {
        let _ = writeln!(s, "<tr><td>{}</td><td><code>{}</code></td></tr>", esc(&k), esc(&v));
    }
    s += "</table>\n";
    for p in &report.parts {
        let _ = writeln!(
            s,
            "<section id=\"{}\">\n<h2>{}</h2>\n<p class=\"source\">{} ({:.1} s)</p>",
            esc(&p.name),
            esc(&p.title),
            esc(&p.source),
            p.wall_secs
        );
        if let Some(e) = &p.error {
            let _ = writeln!(s, "<p class=\"failed\">This part failed: {}</p>", esc(e));
        }
        s += "<table class=\"results\">\n<tr><th>quantity</th><th>reference</th><th>ours</th><th>unit</th></tr>\n";
        for r in &p.rows {
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
                esc(&r.quantity),
                esc(&r.reference_text),
                fmt_ours(r),
                esc(&r.unit)
            );
        }
        s += "</table>\n";
        for plot in &p.plots {
            let _ = writeln!(s, "<img src=\"{}\" alt=\"{}\">", esc(plot), esc(plot));
        }
        let _ = writeln!(s, "<p>{}</p>\n</section>", esc(&p.mechanism));
    }
    s += "</body>\n</html>\n";
    s
}
