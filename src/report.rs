//! `duraflash reproduce`: every figure the project reproduces, in one run,
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
use crate::corpus::{self, Corpus};
use crate::plot::{self, BarChart, LineChart, Series};
use crate::workload::corpus::{self as corpus_bench, CorpusSpec};
use crate::workload::review::AttoPoint;
use crate::workload::sweep::{self, Point};
use crate::workload::torture::{self, Duration, TortureData, TortureReport, TortureSpec};

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
pub const PARTS: [&str; 4] = ["wa", "corpora", "torture", "atto"];

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
) -> Result<Report, String> {
    if let Some(bad) = only.iter().find(|n| !PARTS.contains(&n.as_str())) {
        return Err(format!("unknown part '{bad}' (valid: {})", PARTS.join(", ")));
    }
    let plots = dir.join("plots");
    std::fs::create_dir_all(&plots).map_err(|e| format!("{}: {e}", plots.display()))?;
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
            _ => atto_part(dir, scale, seed, &mut tick, &mut tortures),
        };
        part.wall_secs = t.elapsed().as_secs_f64();
        parts.push(part);
    }
    Ok(Report {
        version: env!("CARGO_PKG_VERSION").into(),
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
fn fill(mut part: Part, f: impl FnOnce(&mut Part) -> Result<(), String>) -> Part {
    if let Err(e) = f(&mut part) {
        part.error = Some(e);
    }
    part
}

fn save_line(dir: &Path, file: &str, chart: &LineChart, part: &mut Part) -> Result<(), String> {
    plot::line_chart(&dir.join("plots").join(file), chart).map_err(|e| e.to_string())?;
    part.plots.push(format!("plots/{file}"));
    Ok(())
}

fn sf2281(capacity: Option<u64>) -> Result<DriveConfig, String> {
    let cfg = DriveConfig::preset("sf2281-240g").map_err(|e| e.to_string())?;
    match capacity {
        Some(c) => cfg.scaled(c).map_err(|e| e.to_string()),
        None => Ok(cfg),
    }
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
        let mut base = sf2281(capacity)?;
        base.media = crate::Media::MetadataOnly;
        base.seed = seed;
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
            let m = r.model_greedy.ok_or("the model applies to uniform writes")?;
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
        let mut cfg = sf2281(capacity)?;
        cfg.media = crate::Media::MetadataOnly;
        cfg.seed = seed;
        let names = ["alice29", "database", "log", "random", "fio-c50"];
        let spec = CorpusSpec { share: 1.0, precondition: pre, measure, seed };
        let mut reports = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let c = Corpus::load(name, &corpus::default_dir()).map_err(|e| e.to_string())?;
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
        plot::bar_chart(&dir.join("plots/corpora.svg"), &chart).map_err(|e| e.to_string())?;
        part.plots.push("plots/corpora.svg".into());
        Ok(())
    })
}

/// The torture protocol runs: three firmwares, compressible and
/// incompressible data, with ATTO at every state.
fn run_tortures(scale: Scale, seed: u64, tick: &mut dyn FnMut(f64)) -> Result<Vec<TortureReport>, String> {
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
        let mut cfg = sf2281(capacity)?;
        cfg.media = crate::Media::MetadataOnly;
        cfg.firmware = crate::firmware::Firmware::profile(firmware).map_err(|e| e.to_string())?;
        cfg.seed = seed;
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
                plot::line_chart(&dir.join("plots").join(&file), &chart).map_err(|e| e.to_string())?;
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
        let runs = tortures.as_ref().ok_or("no torture runs")?;
        let mean = |v: &[AttoPoint], f: fn(&AttoPoint) -> f64| v.iter().map(f).sum::<f64>() / v.len().max(1) as f64;
        let mut series = Vec::new();
        for r in runs.iter().filter(|r| r.data == TortureData::Compressible) {
            let (Some(clean), Some(tortured)) = (&r.clean.atto, &r.tortured.atto) else {
                return Err("ATTO did not run".into());
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

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Our number as the report prints it.
pub fn fmt_ours(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

/// Writes `index.html`, `report.md` and `results.json` into `dir`.
pub fn write(dir: &Path, report: &Report) -> Result<(), String> {
    let json = serde_json::to_string_pretty(report).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("results.json"), json + "\n").map_err(|e| e.to_string())?;
    std::fs::write(dir.join("report.md"), markdown(report)).map_err(|e| e.to_string())?;
    std::fs::write(dir.join("index.html"), html(report)).map_err(|e| e.to_string())?;
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
            let _ = writeln!(s, "| {} | {} | {} | {} |", r.quantity, r.reference_text, fmt_ours(r.ours), r.unit);
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
                fmt_ours(r.ours),
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
