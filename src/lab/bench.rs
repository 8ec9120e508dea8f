//! `duraflash bench`: what simulating costs on this machine, and how that
//! cost grows with the drive.
//!
//! Each point is the steady-state WA study ([`crate::lab::wa`]): fill,
//! uniform 4 KiB random writes to steady state, then a measured phase whose
//! CPU time (every thread) and wall time are taken. Three modes:
//! `content-free` (no bytes generated, compressed, hashed or stored: what
//! MQSim and SSDSim simulate), `content` (fio-style 50 % compressible data,
//! compressed and fingerprinted, metadata-only media) and `retained` (the
//! same, with every stored byte kept in NAND pages).

use serde::Serialize;

use crate::config::overrides::smallest_mib;
use crate::config::{DriveConfig, GcPolicy, Media};
use crate::content::pattern::DataSpec;
use crate::device::{Drive, Footprint};
use crate::lab::plot::{LineChart, Series};
use crate::lab::wa::{self, Speed, WaSpec};
use crate::lab::{check_drive_writes, StudyError, MAX_DRIVE_WRITES};
use crate::units::ByteSize;
use crate::workload::access::Access;

/// What a bench point writes and keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// Compression and dedup off, metadata-only media: no content at all.
    ContentFree,
    /// 50 % compressible data, compression and dedup on, metadata-only.
    Content,
    /// As `content`, with the stored bytes kept.
    Retained,
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Mode::ContentFree => "content-free",
            Mode::Content => "content",
            Mode::Retained => "retained",
        })
    }
}

impl Mode {
    /// `cfg` set up for this mode.
    pub fn configure(self, mut cfg: DriveConfig) -> DriveConfig {
        let content = self != Mode::ContentFree;
        cfg.compression = content;
        cfg.dedup = content;
        cfg.media = if self == Mode::Retained { Media::Memory } else { Media::MetadataOnly };
        cfg
    }

    fn data(self) -> DataSpec {
        match self {
            Mode::ContentFree => DataSpec::incompressible(),
            Mode::Content | Mode::Retained => DataSpec::compressible(50).expect("50 % is in range"),
        }
    }
}

/// One measured point.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// The mode.
    pub mode: Mode,
    /// Host-visible bytes.
    pub capacity_bytes: u64,
    /// Over-provisioning of the data blocks.
    pub op: f64,
    /// WAF of the measured phase.
    pub waf: f64,
    /// CPU and wall time of the measured phase.
    pub speed: Speed,
    /// Wall nanoseconds per host write.
    pub ns_per_host_write: f64,
    /// Wall nanoseconds per chunk written (host and GC).
    pub ns_per_chunk_write: f64,
    /// Heap bytes of the drive's state.
    pub footprint: Footprint,
    /// Resident set of the process with the drive alive (Linux), bytes.
    pub rss_bytes: Option<u64>,
}

/// Bench settings.
#[derive(Clone, Debug)]
pub struct BenchSpec {
    /// Random-write drive-writes before measuring.
    pub precondition: f64,
    /// Random-write drive-writes measured.
    pub measure: f64,
    /// Host writes measured at least, whatever `measure` gives: at 1 GiB
    /// one drive-write is a fifth of a CPU-second, too short to stand
    /// above a shared machine's noise.
    pub min_measured_writes: u64,
    /// Seed.
    pub seed: u64,
}

impl BenchSpec {
    /// Checks the spec against a drive built from `config`, naming the bad
    /// flag: drive-writes within [`MAX_DRIVE_WRITES`], `--min-writes` too.
    pub fn validate(&self, config: &DriveConfig) -> Result<(), StudyError> {
        check_drive_writes("--precondition", self.precondition, true)?;
        check_drive_writes("--measure", self.measure, false)?;
        let most = (MAX_DRIVE_WRITES * config.logical_units() as f64) as u64;
        if self.min_measured_writes > most {
            return Err(StudyError::BadSpec(format!(
                "--min-writes {} is more than {MAX_DRIVE_WRITES} drive-writes of the {} drive ({most} writes), the \
                 most a run takes (it would not finish)",
                self.min_measured_writes,
                ByteSize(config.logical_bytes)
            )));
        }
        Ok(())
    }
}

/// `preset` at `size` (`full`, or a size such as `16GiB`) with exactly
/// `op` of over-provisioning of its data blocks: the size moves to the
/// nearest whole unit that gives `op` with whole blocks per die.
pub fn sized(preset: &DriveConfig, size: &str, op: f64) -> Result<DriveConfig, StudyError> {
    let bytes = if size == "full" {
        preset.logical_bytes
    } else {
        size.parse::<ByteSize>().map_err(|e| StudyError::BadSpec(e.to_string()))?.0
    };
    let build = |bytes: u64| preset.scaled(bytes).and_then(|c| c.with_exact_op(op));
    build(bytes).map_err(|e| match smallest_mib(|b| build(b).is_ok(), bytes, preset.logical_bytes) {
        Some(mib) => StudyError::BadSpec(format!("{e}; the smallest size that gives it is {mib}MiB")),
        None => e.into(),
    })
}

/// Measures one point on a drive built from `base` (GC set to greedy)
/// in `mode`.
pub fn point(
    base: &DriveConfig,
    mode: Mode,
    spec: &BenchSpec,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<Point, StudyError> {
    let mut cfg = mode.configure(base.clone());
    cfg.gc.policy = GcPolicy::Greedy;
    let units = cfg.logical_units() as f64;
    let mut drive = Drive::new(cfg)?;
    let wa_spec = WaSpec {
        access: Access::Uniform,
        request_bytes: 4096,
        data: mode.data(),
        trim_pct: 0,
        span: 1.0,
        precondition: spec.precondition,
        measure: spec.measure.max(spec.min_measured_writes as f64 / units),
    };
    let r = wa::run(&mut drive, &wa_spec, spec.seed, progress)?;
    let per = |n: u64| r.speed.wall_secs * 1e9 / n.max(1) as f64;
    Ok(Point {
        mode,
        capacity_bytes: r.capacity_bytes,
        op: r.op,
        waf: r.waf,
        ns_per_host_write: per(r.speed.host_writes),
        ns_per_chunk_write: per(r.speed.chunk_writes),
        speed: r.speed,
        footprint: drive.footprint(),
        rss_bytes: resident_bytes(),
    })
}

/// The process's resident set now (`VmRSS`), where `/proc` has it.
pub fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Wall time per host write and per chunk written against capacity, for
/// each mode measured at more than one capacity.
pub fn chart(preset: &str, points: &[Point]) -> Option<LineChart> {
    // Points run size by size, each size through every mode: keep each
    // mode once, in the order first seen.
    let mut modes: Vec<Mode> = Vec::new();
    for p in points {
        if !modes.contains(&p.mode) {
            modes.push(p.mode);
        }
    }
    let curve = |m: Mode, what: &str, y: fn(&Point) -> f64| Series {
        name: format!("{m}: {what}"),
        points: points.iter().filter(|p| p.mode == m).map(|p| (p.capacity_bytes as f64, y(p))).collect(),
    };
    let series: Vec<Series> = modes
        .iter()
        .flat_map(|&m| {
            [
                curve(m, "per host write", |p| p.ns_per_host_write),
                curve(m, "per chunk written (host + GC)", |p| p.ns_per_chunk_write),
            ]
        })
        .filter(|s| s.points.len() > 1)
        .collect();
    (!series.is_empty()).then(|| LineChart {
        title: format!("Simulation cost against drive size ({preset})"),
        x_label: "drive capacity (bytes)".into(),
        y_label: "wall ns".into(),
        series,
        y_from_zero: true,
        x_log2: true,
        ..Default::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_resolve_to_the_preset_at_that_size_with_exact_op() {
        let preset = DriveConfig::preset("sf2281-240g").unwrap();
        let full = sized(&preset, "full", 0.07).unwrap();
        assert!((full.data_op() - 0.07).abs() < 1e-3, "{}", full.data_op());
        assert!(full.logical_bytes.abs_diff(preset.logical_bytes) < preset.logical_bytes / 100);
        let small = sized(&preset, "1GiB", 0.07).unwrap();
        assert!(small.logical_bytes < full.logical_bytes);
        let err = sized(&preset, "3xyz", 0.07).unwrap_err().to_string();
        assert!(err.contains("xyz"), "{err}");
        assert!(sized(&preset, "100TiB", 0.07).is_err(), "presets only scale down");
        // Too small for the OP with whole blocks: the message names the smallest that works.
        let err = sized(&preset, "128MiB", 0.07).unwrap_err().to_string();
        let mib: u64 = err.split("gives it is ").nth(1).and_then(|m| m.strip_suffix("MiB")?.parse().ok()).unwrap();
        assert!(sized(&preset, &format!("{mib}MiB"), 0.07).is_ok(), "{err}");
        assert!(sized(&preset, &format!("{}MiB", mib - 1), 0.07).is_err(), "{err}");
    }

    #[test]
    fn chart_has_one_pair_of_curves_per_mode_across_sizes() {
        let base = DriveConfig::preset("sf2281-240g").unwrap();
        let spec = BenchSpec { precondition: 0.1, measure: 0.1, min_measured_writes: 0, seed: 1 };
        let mut points = Vec::new();
        for size in [32u64 << 20, 64 << 20] {
            let cfg = base.scaled(size).unwrap();
            for mode in [Mode::ContentFree, Mode::Content] {
                points.push(point(&cfg, mode, &spec, &mut |_, _| {}).unwrap());
            }
        }
        let chart = chart("sf2281-240g", &points).expect("two sizes make curves");
        assert_eq!(chart.series.len(), 4, "{:?}", chart.series.iter().map(|s| &s.name).collect::<Vec<_>>());
        assert!(chart.series.iter().all(|s| s.points.len() == 2));
        let p = &points[1];
        assert_eq!(p.mode, Mode::Content);
        assert!(p.footprint.fingerprints > 0 && points[0].footprint.fingerprints == 0, "dedup only in content mode");
        assert!(p.speed.host_writes > 0 && p.ns_per_chunk_write > 0.0);
    }
}
