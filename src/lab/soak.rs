//! Soak: millions of mixed operations on a small drive, checked against a
//! shadow of what each unit holds, with the invariant checker every N
//! operations and a save/load through a drive image every M.
//!
//! The mix: 45 % writes of 1-8 whole units (a third of them duplicates of
//! a small content pool), 35 % reads verified unit by unit, 15 % TRIMs of
//! 1-16 units, 5 % idle GC. Unit content is cheap to regenerate from its
//! seed: half a repeating 64-bit pattern (compressible), half zeros.

use std::path::PathBuf;
use std::time::Instant;

use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

use crate::device::{Drive, Stats};
use crate::lab::StudyError;
use crate::units::{Lba, Lpn};

/// Most operations of one soak: 100 times the CLI's default 10 M, about
/// six hours at the 47 k operations a wall second a 1 GiB drive ran on a
/// busy 2-core machine; longer soaks are a loop of runs on one `--image`.
pub const MAX_OPS: u64 = 1_000_000_000;

/// What to run.
#[derive(Clone, Debug)]
pub struct SoakSpec {
    /// Operations in all.
    pub ops: u64,
    /// Invariant check period in operations (0: only at the end).
    pub check_every: u64,
    /// Save/load period in operations (0: never).
    pub image_every: u64,
    /// Where the images go.
    pub image_path: PathBuf,
    /// Seed of the operation stream.
    pub seed: u64,
}

/// What a soak did.
#[derive(Clone, Debug, Serialize)]
pub struct SoakReport {
    /// Operations run.
    pub ops: u64,
    /// Of which writes, reads, TRIMs, idle GCs.
    pub writes: u64,
    /// Reads, each verified against the shadow.
    pub reads: u64,
    /// TRIMs.
    pub trims: u64,
    /// Idle GC calls.
    pub idle_gcs: u64,
    /// Invariant checks passed.
    pub checks: u64,
    /// Save/load round trips.
    pub images: u64,
    /// Wall time in seconds.
    pub seconds: f64,
    /// Operations per wall-clock second.
    pub ops_per_second: f64,
    /// The drive's counters at the end.
    pub stats: Stats,
}

/// Content of a unit written with `seed`.
fn unit(seed: u64, bytes: usize, out: &mut Vec<u8>) {
    out.clear();
    let pattern = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    for i in 0..(bytes / 16) as u64 {
        out.extend_from_slice(&(pattern.wrapping_mul(i + 1)).to_le_bytes());
    }
    out.resize(bytes, 0);
}

/// Runs the soak on `drive`, calling `progress` with the fraction done
/// now and then. Stops at the first violation: a failed command, a read
/// that differs from what was written, or a broken invariant.
pub fn run(drive: &mut Drive, spec: &SoakSpec, progress: &mut dyn FnMut(f64)) -> Result<SoakReport, StudyError> {
    let ub = drive.config().unit_bytes as usize;
    let us = (ub / 512) as u64;
    let units = drive.capacity_sectors() / us;
    if units < 32 {
        return Err(StudyError::BadSpec("soak needs a drive of at least 32 units".into()));
    }
    if drive.stats().mapped_units > 0 {
        return Err(StudyError::BadSpec("soak needs a secure-erased drive (its shadow starts empty)".into()));
    }
    let mut shadow: Vec<Option<u64>> = vec![None; units as usize];
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    let mut r = SoakReport {
        ops: 0,
        writes: 0,
        reads: 0,
        trims: 0,
        idle_gcs: 0,
        checks: 0,
        images: 0,
        seconds: 0.0,
        ops_per_second: 0.0,
        stats: drive.stats(),
    };
    let (mut data, mut expect) = (Vec::new(), Vec::new());
    let started = Instant::now();
    for op in 1..=spec.ops {
        let at = |what: &str, e: String| StudyError::Violation(format!("op {op}: {what}: {e}"));
        let first = rng.random_range(0..units - 16);
        match rng.random_range(0..100) {
            0..=44 => {
                let n = rng.random_range(1..=8u64);
                data.clear();
                for u in first..first + n {
                    let seed =
                        if rng.random_ratio(1, 3) { rng.random_range(1..=64) } else { rng.random::<u64>() | 1 << 63 };
                    unit(seed, ub, &mut expect);
                    data.extend_from_slice(&expect);
                    shadow[u as usize] = Some(seed);
                }
                drive.write(Lba(first * us), &data).map_err(|e| at("write", e.to_string()))?;
                r.writes += 1;
            }
            45..=79 => {
                let n = rng.random_range(1..=8u64);
                let got = drive.read(Lba(first * us), n * us).map_err(|e| at("read", e.to_string()))?;
                for (i, u) in (first..first + n).enumerate() {
                    match shadow[u as usize] {
                        Some(seed) => unit(seed, ub, &mut expect),
                        None => expect = vec![0; ub],
                    }
                    if got[i * ub..(i + 1) * ub] != expect[..] {
                        return Err(at("read", format!("unit {u} differs from what was written")));
                    }
                }
                r.reads += 1;
            }
            80..=94 => {
                let n = rng.random_range(1..=16u64);
                drive.trim(&[(Lba(first * us), n * us)]).map_err(|e| at("trim", e.to_string()))?;
                // The firmware decides what a TRIM unmaps (the 5.0.x defect
                // leaves some units): units still mapped keep their content.
                for u in first..first + n {
                    if !drive.is_mapped(Lpn(u)) {
                        shadow[u as usize] = None;
                    }
                }
                r.trims += 1;
            }
            _ => {
                drive.idle_gc().map_err(|e| at("idle gc", e.to_string()))?;
                r.idle_gcs += 1;
            }
        }
        if spec.check_every > 0 && op % spec.check_every == 0 {
            drive.check_invariants().map_err(|e| at("invariant", e.to_string()))?;
            r.checks += 1;
        }
        if spec.image_every > 0 && op % spec.image_every == 0 {
            drive.save(&spec.image_path).map_err(|e| at("save", e.to_string()))?;
            let loaded = Drive::load(&spec.image_path).map_err(|e| at("load", e.to_string()))?;
            if loaded.stats() != drive.stats() || loaded.now() != drive.now() {
                return Err(at("image", "the loaded drive differs from the saved one".into()));
            }
            *drive = loaded;
            r.images += 1;
        }
        if op % 65_536 == 0 {
            progress(op as f64 / spec.ops as f64);
        }
        r.ops = op;
    }
    drive.check_invariants().map_err(|e| StudyError::Violation(format!("at the end: invariant: {e}")))?;
    r.checks += 1;
    r.seconds = started.elapsed().as_secs_f64();
    r.ops_per_second = r.ops as f64 / r.seconds.max(1e-9);
    r.stats = drive.stats();
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{DriveConfig, Media};

    #[test]
    fn a_short_soak_passes_and_counts_everything() {
        let mut cfg = DriveConfig::preset("sf2281-240g").and_then(|c| c.scaled(8 << 20)).expect("preset");
        cfg.media = Media::Memory;
        let mut drive = Drive::new(cfg).expect("drive");
        let path = std::env::temp_dir().join(format!("duraflash-soak-test-{}.img", std::process::id()));
        let spec = SoakSpec { ops: 40_000, check_every: 5_000, image_every: 15_000, image_path: path.clone(), seed: 5 };
        let r = run(&mut drive, &spec, &mut |_| {}).expect("soak");
        let _ = std::fs::remove_file(&path);
        assert_eq!(r.ops, 40_000);
        assert_eq!(r.writes + r.reads + r.trims + r.idle_gcs, 40_000);
        assert_eq!((r.checks, r.images), (9, 2));
        assert!(r.stats.gc_victims > 0, "the soak must reach GC: {:?}", r.stats);
    }
}
