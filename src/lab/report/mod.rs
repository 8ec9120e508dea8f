//! `duraflash reproduce`: every figure the project reproduces (WA model
//! check, corpora, SandForce torture and ATTO, RAID-0 TRIM, manual TRIM,
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

mod parts;
mod render;

use parts::*;
pub use render::{fmt_ours, write};

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
