//! Drives and fio-style jobs the timing tests share: scaled presets,
//! incompressible data and one job at a time.

use duraflash::content::pattern::DataSpec;
use duraflash::workload::access::{Distribution, Rw};
use duraflash::workload::job::{fill_spec, run_job, JobResult, JobSpec, Limit};
use duraflash::{Drive, DriveConfig, Media};

pub const KIB: u64 = 1 << 10;
pub const MIB: u64 = 1 << 20;

/// `name` scaled to `capacity` bytes, keeping `media`.
pub fn preset(name: &str, capacity: u64, media: Media) -> DriveConfig {
    let mut cfg = DriveConfig::preset(name).expect("preset").scaled(capacity).expect("scaled preset");
    cfg.media = media;
    cfg
}

/// A drive built from `cfg` (metadata-only ones take 4 KiB-aligned writes only and time reads without data).
pub fn drive(cfg: DriveConfig) -> Drive {
    Drive::new(cfg).expect("valid config")
}

pub fn incompressible() -> DataSpec {
    DataSpec::incompressible()
}

#[allow(clippy::too_many_arguments)]
pub fn job(rw: Rw, bs: u64, qd: u32, offset: u64, length: u64, limit: Limit, data: DataSpec, seed: u64) -> JobSpec {
    JobSpec {
        name: format!("{rw:?}-bs{bs}-qd{qd}").to_lowercase(),
        rw,
        bs,
        sizes: Default::default(),
        iodepth: qd,
        offset,
        length,
        limit,
        rwmixread: 0,
        distribution: Distribution::Random,
        data,
        seed,
    }
}

pub fn run(drive: &mut Drive, spec: &JobSpec) -> JobResult {
    run_job(drive, spec, &mut |_| {}).unwrap_or_else(|e| panic!("job {} failed: {e}", spec.name))
}

/// Writes the first `span` bytes once, sequentially (128 KiB at QD 32).
pub fn fill(drive: &mut Drive, span: u64, data: DataSpec, seed: u64) {
    run(drive, &fill_spec(span, 128 * KIB, 32, data, seed));
}

/// Whether `value` is within `tolerance` (a share) of `target`.
pub fn within(value: f64, target: f64, tolerance: f64) -> bool {
    (value - target).abs() <= target * tolerance
}
