//! `duraflash reproduce`: every figure the project reproduces (WA model
//! check, corpora, SandForce torture and ATTO, incompressible torture by
//! capacity, RAID-0 TRIM, manual TRIM,
//! SMART), in one run,
//! written as a report a person can read (`index.html`, `report.md`) and a
//! machine can check (`results.json`). Each part sets what the reviews
//! measured (or the analytic model predicts) beside what the model
//! measured, with its plots and a paragraph on the mechanism. A part that
//! fails is reported in its section; the others still run.

use std::path::Path;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::config::DriveConfig;
use crate::lab::plot::{self, LineChart};
use crate::lab::torture::TortureReport;
use crate::lab::StudyError;

mod check;
mod compare;
mod host_parts;
mod incompressible_part;
mod parts;
mod render;
mod resilience_part;
mod wa_parts;

pub use check::{Criterion, Kind, Verdict, DESNOYERS_2012, FORCE_GS_2012, IMPROV_2009, RAID_2012};
pub use compare::{Compared, Comparison, Run};
use host_parts::*;
use parts::*;
pub use parts::{wa_scale, WaScale, WA_OPS};
pub use render::{fmt_ours, summary_line, write};

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

impl std::fmt::Display for Scale {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Scale::Tiny => "tiny",
            Scale::Quick => "quick",
            Scale::Full => "full",
        })
    }
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
pub const PARTS: [&str; 10] =
    ["wa", "wa-policies", "corpora", "torture", "atto", "resilience", "incompressible", "raid", "optimizer", "smart"];

/// One line of a comparison: a reference (a review's figure, or a model's
/// prediction) beside ours, the criterion ours must meet and the verdict.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// What is compared.
    pub quantity: String,
    /// The reference in words: the figure, or what the review said.
    pub reference_text: String,
    /// Where a reader finds the reference (work, year, figure or table).
    pub source: String,
    /// Calibrated, fitted or predicted.
    pub kind: Kind,
    /// What ours must meet to agree.
    pub criterion: Criterion,
    /// Our measurement.
    pub ours: f64,
    /// Unit of both.
    pub unit: String,
    /// Whether ours meets the criterion.
    pub verdict: Verdict,
}

impl Row {
    /// A row whose verdict is `criterion` applied to `ours`.
    pub fn new(
        quantity: impl Into<String>,
        reference_text: impl Into<String>,
        source: impl Into<String>,
        kind: Kind,
        criterion: Criterion,
        ours: f64,
        unit: &str,
    ) -> Row {
        let verdict = if criterion.holds(ours) { Verdict::Agrees } else { Verdict::Disagrees };
        Row {
            quantity: quantity.into(),
            reference_text: reference_text.into(),
            source: source.into(),
            kind,
            criterion,
            ours,
            unit: unit.into(),
            verdict,
        }
    }
}

/// A table of measurements with no reference to check them against
/// (SMART attributes, raw scores): shown, never judged.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Table {
    /// Caption.
    pub title: String,
    /// Column headings.
    pub columns: Vec<String>,
    /// Cells, one vector per row.
    pub rows: Vec<Vec<String>>,
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
    /// The drives the part ran: preset, scale and geometry.
    pub model: Vec<String>,
    /// How the model produces the effect.
    pub mechanism: String,
    /// The error, when the part failed.
    pub error: Option<String>,
    /// Wall-clock seconds the part took.
    pub wall_secs: f64,
    /// The comparison.
    pub rows: Vec<Row>,
    /// Measurements shown without a reference.
    pub tables: Vec<Table>,
    /// Plot files, relative to the report directory.
    pub plots: Vec<String>,
}

/// How many rows agree, overall and among the predicted ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Rows in all.
    pub rows: usize,
    /// Rows that agree.
    pub agree: usize,
    /// Predicted rows.
    pub predicted: usize,
    /// Predicted rows that agree.
    pub predicted_agree: usize,
}

/// The whole report.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Report {
    /// Crate version.
    pub version: String,
    /// The commit the binary was built from, when known.
    #[serde(default)]
    pub commit: Option<String>,
    /// When the report was made (UTC, RFC 3339).
    #[serde(default)]
    pub date: String,
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
    /// Verdict counts.
    pub summary: Summary,
    /// Sections.
    pub parts: Vec<Part>,
}

impl Report {
    /// Whether every part ran.
    pub fn ok(&self) -> bool {
        self.parts.iter().all(|p| p.error.is_none())
    }

    /// Every row with the part it belongs to.
    pub fn rows(&self) -> impl Iterator<Item = (&Part, &Row)> {
        self.parts.iter().flat_map(|p| p.rows.iter().map(move |r| (p, r)))
    }

    fn summarize(parts: &[Part]) -> Summary {
        let mut s = Summary::default();
        for r in parts.iter().flat_map(|p| &p.rows) {
            let agrees = r.verdict == Verdict::Agrees;
            s.rows += 1;
            s.agree += usize::from(agrees);
            if r.kind == Kind::Predicted {
                s.predicted += 1;
                s.predicted_agree += usize::from(agrees);
            }
        }
        s
    }
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
            "wa-policies" => wa_parts::wa_policies_part(dir, scale, seed, &mut tick),
            "corpora" => corpora_part(dir, scale, seed, &mut tick),
            "torture" => torture_part(dir, scale, seed, &mut tick, &mut tortures),
            "atto" => atto_part(dir, scale, seed, &mut tick, &mut tortures),
            "resilience" => resilience_part::resilience_part(dir, scale, seed, &mut tick),
            "incompressible" => incompressible_part::incompressible_part(dir, scale, seed, &mut tick),
            "raid" => raid_part(dir, scale, seed, &mut tick),
            "optimizer" => optimizer_part(scale, seed, &mut tick),
            _ => smart_part(scale, seed, &mut tick),
        };
        part.wall_secs = t.elapsed().as_secs_f64();
        parts.push(part);
    }
    Ok(Report {
        version: env!("CARGO_PKG_VERSION").into(),
        commit: option_env!("DURAFLASH_COMMIT").map(String::from),
        date: crate::units::UtcTime::now().iso(),
        quirks: crate::firmware::build_quirks().into_iter().map(String::from).collect(),
        command: std::env::args().collect(),
        seed,
        scale,
        wall_secs: start.elapsed().as_secs_f64(),
        summary: Report::summarize(&parts),
        parts,
    })
}

fn empty(name: &str, title: &str, source: &str, mechanism: &str) -> Part {
    Part {
        name: name.into(),
        title: title.into(),
        source: source.into(),
        model: Vec::new(),
        mechanism: mechanism.into(),
        error: None,
        wall_secs: 0.0,
        rows: Vec::new(),
        tables: Vec::new(),
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

/// The drive a part ran, in one line: preset, size and geometry.
fn describe(preset: &str, cfg: &DriveConfig, full: bool) -> String {
    let g = &cfg.geometry;
    let size = if full { "full size".to_string() } else { format!("scaled to {}", crate::ByteSize(cfg.logical_bytes)) };
    format!(
        "{preset} {size}: {} logical bytes, {} channels x {} dies, {} blocks of {} pages of {} B, OP {:.1} %",
        cfg.logical_bytes,
        g.channels,
        g.dies_per_channel,
        g.total_blocks(),
        g.pages_per_block,
        g.page_bytes,
        100.0 * (g.physical_bytes() as f64 / cfg.logical_bytes as f64 - 1.0)
    )
}

/// Records in `part` the drive it ran (once per distinct drive).
fn note(part: &mut Part, preset: &str, cfg: &DriveConfig, full: bool) {
    let line = describe(preset, cfg, full);
    if !part.model.contains(&line) {
        part.model.push(line);
    }
}
