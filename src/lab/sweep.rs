//! Parameter sweeps of the write-amplification study (`duraflash sweep`):
//! a grid over OP, GC policy, pages per block, compressibility, dedup,
//! TRIM share and workload. Every point is a self-contained
//! [`crate::lab::wa`] run with its own seed, so points run in
//! parallel, one machine or many, and always give the same numbers.

use serde::{Deserialize, Serialize};

use crate::config::{DriveConfig, GcPolicy};
use crate::content::pattern::{unit_seed, DataSpec};
use crate::device::Drive;
use crate::lab::wa::{self, WaSpec};
use crate::lab::StudyError;
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
    /// Workloads (`uniform`, `zipf:THETA`, `sequential`).
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
        model_greedy: r.model.map(|m| m.greedy),
        compression_ratio: r.compression_ratio,
        dedup_ratio: r.dedup_ratio,
        erases: r.erases,
    })
}
