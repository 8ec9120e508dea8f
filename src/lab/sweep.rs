//! Parameter sweeps of the write-amplification study (`duraflash sweep`):
//! a grid over OP, GC policy, pages per block, compressibility, dedup,
//! TRIM share and workload. Every point is a self-contained
//! [`crate::lab::wa`] run with its own seed, so points run in
//! parallel, one machine or many, and always give the same numbers.
//!
//! Also owns a sweep's result ([`SweepRun`]): merging the results of
//! separately run points ([`merge`]), the command lines that run them
//! ([`JobLines`]), and its CSV and chart.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::config::overrides::Capacity;
use crate::config::{DriveConfig, GcPolicy, Media};
use crate::content::pattern::{unit_seed, DataSpec};
use crate::device::Drive;
use crate::input::{read_capped, ReadError};
use crate::lab::plot::{LineChart, Series};
use crate::lab::wa::{self, WaSpec};
use crate::lab::StudyError;
use crate::units::ByteSize;
use crate::workload::access::Access;

/// The axes of a sweep; every combination is a point.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Grid {
    /// Over-provisioning of the data blocks.
    pub op: Vec<f64>,
    /// GC victim policies.
    pub gc: Vec<GcPolicy>,
    /// NAND pages per erase block.
    pub pages_per_block: Vec<u32>,
    /// fio buffer_compress_percentage values (0 = incompressible).
    pub compress_pct: Vec<u8>,
    /// fio dedupe_percentage values.
    pub dedupe_pct: Vec<u8>,
    /// Share of requests that TRIM a random mapped unit (percent).
    pub trim_pct: Vec<u8>,
    /// Workloads (`uniform`, `zipf:THETA`, `sequential`, `hotcold:F:R`).
    pub workload: Vec<String>,
}

/// One grid point.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Position in the grid (row-major in the field order of [`Grid`]).
    pub index: usize,
    /// Over-provisioning of the data blocks.
    pub op: f64,
    /// GC policy.
    pub gc: GcPolicy,
    /// Pages per block.
    pub pages_per_block: u32,
    /// Compress percentage.
    pub compress_pct: u8,
    /// Dedupe percentage.
    pub dedupe_pct: u8,
    /// TRIM percentage.
    pub trim_pct: u8,
    /// Workload.
    pub workload: String,
}

/// What a point measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PointResult {
    /// The point.
    #[serde(flatten)]
    pub point: Point,
    /// Seed the point ran with.
    pub seed: u64,
    /// Measured WAF.
    pub waf: f64,
    /// Desnoyers' greedy model at the measured operating point, where it
    /// applies (uniform writes, no TRIM).
    pub model_greedy: Option<f64>,
    /// The mean-field model of the point's own GC policy, where the
    /// library has one ([`crate::lab::wa::ModelPoint::policy`]).
    #[serde(default)]
    pub model_policy: Option<f64>,
    /// Stored / raw bytes.
    pub compression_ratio: f64,
    /// New chunks / unit writes.
    pub dedup_ratio: f64,
    /// Block erases in the measured phase.
    pub erases: u64,
}

impl Grid {
    /// Checks every axis has a value and every value is usable.
    pub fn validate(&self) -> Result<(), StudyError> {
        let axes = [
            ("--op", self.op.len()),
            ("--gc", self.gc.len()),
            ("--pages-per-block", self.pages_per_block.len()),
            ("--compress-pct", self.compress_pct.len()),
            ("--dedupe-pct", self.dedupe_pct.len()),
            ("--trim-pct", self.trim_pct.len()),
            ("--workload", self.workload.len()),
        ];
        if let Some((flag, _)) = axes.iter().find(|(_, n)| *n == 0) {
            return Err(StudyError::BadSpec(format!("{flag}: needs at least one value")));
        }
        for w in &self.workload {
            w.parse::<Access>().map_err(|e| StudyError::BadSpec(format!("--workload: {e}")))?;
        }
        for (flag, v) in
            [("--compress-pct", &self.compress_pct), ("--dedupe-pct", &self.dedupe_pct), ("--trim-pct", &self.trim_pct)]
        {
            if let Some(p) = v.iter().find(|&&p| p > 100) {
                return Err(StudyError::BadSpec(format!("{flag}: {p} is over 100")));
            }
        }
        if let Some(p) = self.trim_pct.iter().find(|&&p| p > wa::MAX_TRIM_PCT) {
            return Err(StudyError::BadSpec(format!(
                "--trim-pct: {p} leaves no host write to measure WAF over (0 to {})",
                wa::MAX_TRIM_PCT
            )));
        }
        Ok(())
    }

    /// Every point, in order.
    pub fn points(&self) -> Vec<Point> {
        let mut out = Vec::new();
        for &op in &self.op {
            for &gc in &self.gc {
                for &pages_per_block in &self.pages_per_block {
                    for &compress_pct in &self.compress_pct {
                        for &dedupe_pct in &self.dedupe_pct {
                            for &trim_pct in &self.trim_pct {
                                for workload in &self.workload {
                                    out.push(Point {
                                        index: out.len(),
                                        op,
                                        gc,
                                        pages_per_block,
                                        compress_pct,
                                        dedupe_pct,
                                        trim_pct,
                                        workload: workload.clone(),
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

/// The drive config of `point` on top of `base`.
pub fn point_config(base: &DriveConfig, point: &Point) -> Result<DriveConfig, StudyError> {
    let mut cfg = base.with_pages_per_block(point.pages_per_block)?;
    cfg = cfg.with_op(point.op)?;
    cfg.gc.policy = point.gc;
    cfg.seed = unit_seed(base.seed, point.index as u64);
    cfg.validate()?;
    Ok(cfg)
}

/// Runs one point: fill, `precondition` drive-writes, then `measure`
/// measured drive-writes of 4 KiB requests.
pub fn run_point(
    base: &DriveConfig,
    point: &Point,
    precondition: f64,
    measure: f64,
) -> Result<PointResult, StudyError> {
    let cfg = point_config(base, point)?;
    let data =
        if point.compress_pct == 0 { DataSpec::incompressible() } else { DataSpec::compressible(point.compress_pct)? };
    let data = data.with_dedupe(point.dedupe_pct)?;
    let spec = WaSpec {
        access: point.workload.parse().map_err(StudyError::BadSpec)?,
        request_bytes: u64::from(cfg.unit_bytes),
        data,
        trim_pct: point.trim_pct,
        span: 1.0,
        precondition,
        measure,
    };
    let mut drive = Drive::new(cfg.clone())?;
    let r = wa::run(&mut drive, &spec, cfg.seed, &mut |_, _| {})?;
    Ok(PointResult {
        point: point.clone(),
        seed: cfg.seed,
        waf: r.waf,
        model_greedy: r.model.as_ref().map(|m| m.greedy),
        model_policy: r.model.and_then(|m| m.policy),
        compression_ratio: r.compression_ratio,
        dedup_ratio: r.dedup_ratio,
        erases: r.erases,
    })
}

/// A sweep's result (or one point's, with `--point`): how it was made and
/// what every point measured. Its JSON is what `--merge` reads back.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SweepRun {
    /// The command line that made it.
    pub command: Vec<String>,
    /// The crate version that made it.
    pub version: String,
    /// The firmware quirks compiled into that build.
    #[serde(default)]
    pub quirks: Vec<String>,
    /// The drive preset of every point.
    pub preset: String,
    /// Host bytes of every point's drive.
    pub capacity: u64,
    /// Base seed.
    pub seed: u64,
    /// Random-write drive-writes before measuring, per point.
    pub precondition: f64,
    /// Measured random-write drive-writes, per point.
    pub measure: f64,
    /// The axes.
    pub grid: Grid,
    /// The points run, by index.
    pub points: Vec<PointResult>,
}

/// Runs `points` in parallel (rayon); `done` is called after each.
pub fn run_points(
    base: &DriveConfig,
    points: &[Point],
    precondition: f64,
    measure: f64,
    done: &(dyn Fn() + Sync),
) -> Result<Vec<PointResult>, StudyError> {
    use rayon::prelude::*;
    points
        .par_iter()
        .map(|p| {
            let r = run_point(base, p, precondition, measure).map_err(|e| e.within(format!("grid point {}", p.index)));
            done();
            r
        })
        .collect()
}

/// Most bytes of one sweep result file (a point's is a few KiB; a merged
/// grid of thousands of points is a few MiB).
pub const MAX_RESULT_BYTES: u64 = 64 << 20;

/// Most bytes a merge reads from all its files together.
pub const MAX_MERGE_BYTES: u64 = 1 << 30;

/// Why sweep results could not be merged.
#[derive(Debug, Error)]
pub enum MergeError {
    /// The directory cannot be listed.
    #[error("{}: {source}", dir.display())]
    Dir {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The directory holds no `.json` file.
    #[error("{}: no .json files", dir.display())]
    NoFiles { dir: PathBuf },
    /// A file cannot be read, or holds more than a sweep result may.
    #[error("{}: {source}", file.display())]
    Read {
        file: PathBuf,
        #[source]
        source: ReadError,
    },
    /// The results together hold more than a merge reads.
    #[error("{}: the .json files hold more than the {} GiB a merge reads", dir.display(), MAX_MERGE_BYTES >> 30)]
    TooMuch { dir: PathBuf },
    /// A file that is not a sweep result.
    #[error("{}: not a sweep result: {source}", file.display())]
    NotASweep {
        file: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// A result of another grid, preset, capacity or seed than the first.
    #[error("{}: from a different sweep than {}", file.display(), first.display())]
    OtherSweep { file: PathBuf, first: PathBuf },
}

impl MergeError {
    /// Whether the directory asked for is wrong (rather than a file in it
    /// unreadable or not a sweep's): missing, empty of results, or holding
    /// more than results ever do.
    pub fn is_usage(&self) -> bool {
        matches!(
            self,
            MergeError::Dir { .. }
                | MergeError::NoFiles { .. }
                | MergeError::TooMuch { .. }
                | MergeError::Read { source: ReadError::TooLarge { .. }, .. }
        )
    }
}

/// Reads every `*.json` sweep result in `dir` (in name order) into one,
/// its points sorted by index with duplicates dropped. Points may be
/// missing: compare with `grid.points()`.
pub fn merge(dir: &Path) -> Result<SweepRun, MergeError> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .map_err(|source| MergeError::Dir { dir: dir.into(), source })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let total: u64 = files.iter().filter_map(|f| std::fs::metadata(f).ok()).map(|m| m.len()).sum();
    if total > MAX_MERGE_BYTES {
        return Err(MergeError::TooMuch { dir: dir.into() });
    }
    let mut merged: Option<SweepRun> = None;
    for f in &files {
        let text = read_capped(f, MAX_RESULT_BYTES, "sweep result")
            .map_err(|source| MergeError::Read { file: f.clone(), source })?;
        let part: SweepRun =
            serde_json::from_str(&text).map_err(|source| MergeError::NotASweep { file: f.clone(), source })?;
        match &mut merged {
            None => merged = Some(part),
            Some(m) => {
                let same = serde_json::to_value(&m.grid).ok() == serde_json::to_value(&part.grid).ok()
                    && m.preset == part.preset
                    && m.capacity == part.capacity
                    && m.seed == part.seed;
                if !same {
                    return Err(MergeError::OtherSweep { file: f.clone(), first: files[0].clone() });
                }
                m.points.extend(part.points);
            }
        }
    }
    let mut m = merged.ok_or_else(|| MergeError::NoFiles { dir: dir.into() })?;
    m.points.sort_by_key(|p| p.point.index);
    m.points.dedup_by_key(|p| p.point.index);
    Ok(m)
}

/// What an emitted job runs: the sweep's settings, one point at a time.
#[derive(Clone, Debug)]
pub struct JobLines<'a> {
    /// The `duraflash` executable.
    pub exe: &'a Path,
    /// Drive preset.
    pub preset: &'a str,
    /// Host capacity asked for.
    pub capacity: Capacity,
    /// What the NAND keeps.
    pub media: Media,
    /// Base seed.
    pub seed: u64,
    /// The axes.
    pub grid: &'a Grid,
    /// Drive-writes before measuring.
    pub precondition: f64,
    /// Drive-writes measured.
    pub measure: f64,
    /// Where each job writes its `point-N.json`.
    pub points_dir: &'a Path,
}

impl JobLines<'_> {
    /// One self-contained command line per point (for GNU parallel or a
    /// Slurm array), each ending in a newline.
    pub fn text(&self) -> String {
        let join = |v: Vec<String>| v.join(",");
        let g = self.grid;
        let common = format!(
            "{} sweep --preset {} --capacity {} --media {} --seed {} --op {} --gc {} --pages-per-block {} \
             --compress-pct {} --dedupe-pct {} --trim-pct {} --workload {} --precondition {} --measure {} --quiet",
            self.exe.display(),
            self.preset,
            self.capacity,
            match self.media {
                Media::Memory => "memory",
                Media::MetadataOnly => "metadata-only",
            },
            self.seed,
            join(g.op.iter().map(f64::to_string).collect()),
            join(g.gc.iter().map(GcPolicy::to_string).collect()),
            join(g.pages_per_block.iter().map(u32::to_string).collect()),
            join(g.compress_pct.iter().map(u8::to_string).collect()),
            join(g.dedupe_pct.iter().map(u8::to_string).collect()),
            join(g.trim_pct.iter().map(u8::to_string).collect()),
            join(g.workload.clone()),
            self.precondition,
            self.measure,
        );
        let mut text = String::new();
        for i in 0..g.points().len() {
            text +=
                &format!("{common} --point {i} --json {}\n", self.points_dir.join(format!("point-{i}.json")).display());
        }
        text
    }
}

impl Grid {
    /// The name of `p`'s curve: the axes that vary besides OP.
    pub fn series_label(&self, p: &Point) -> String {
        let g = self;
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
    }
}

impl SweepRun {
    /// Writes one CSV row per point.
    pub fn write_csv(&self, path: &Path) -> Result<(), csv::Error> {
        let mut w = csv::Writer::from_path(path)?;
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
            "model_policy",
            "compression_ratio",
            "dedup_ratio",
            "erases",
        ])?;
        for r in &self.points {
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
                r.model_policy.map_or(String::new(), |m| format!("{m:.5}")),
                format!("{:.5}", r.compression_ratio),
                format!("{:.5}", r.dedup_ratio),
                r.erases.to_string(),
            ])?;
        }
        w.flush()?;
        Ok(())
    }

    /// WAF against OP, one curve per combination of the other axes, and
    /// beside each the model of its GC policy where there is one.
    pub fn chart(&self) -> LineChart {
        let mut series: Vec<Series> = Vec::new();
        // Measured series first, then each model (with the index of the
        // series it models), drawn in that series' colour.
        let mut modelled: Vec<(usize, Series)> = Vec::new();
        for r in &self.points {
            let label = self.grid.series_label(&r.point);
            let x = r.point.op * 100.0;
            let measured = match series.iter().position(|s| s.name == label) {
                Some(i) => i,
                None => {
                    series.push(Series { name: label.clone(), points: Vec::new() });
                    series.len() - 1
                }
            };
            series[measured].points.push((x, r.waf));
            if let Some(m) = r.model_policy {
                match modelled.iter_mut().find(|(of, _)| *of == measured) {
                    Some((_, s)) => s.points.push((x, m)),
                    None => {
                        modelled.push((measured, Series { name: format!("{label} (model)"), points: vec![(x, m)] }))
                    }
                }
            }
        }
        let mut models = Vec::new();
        for (of, model) in modelled {
            models.push((series.len(), of));
            series.push(model);
        }
        for s in &mut series {
            s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
        }
        LineChart {
            title: format!("WAF against over-provisioning: {} at {}", self.preset, ByteSize(self.capacity)),
            x_label: "over-provisioning of the data blocks (%)".into(),
            y_label: "write amplification (NAND / host bytes)".into(),
            series,
            y_from_zero: true,
            models,
            ..Default::default()
        }
    }
}
