//! The corpus benchmark behind `duraflash corpus`: each corpus is tiled
//! over a share of the drive ([`crate::content::corpus::Tiled`]), overwritten at
//! random to steady state, and measured: what compression and dedup gain
//! on it, the steady-state WAF beside the data-reduction model, simulated
//! sequential and 4 KiB random write speed, and how fast the real
//! pipeline (lz4 + blake3 through the drive) runs on it in wall-clock time
//! against raw lz4 + blake3 on the same bytes.

use std::time::Instant;

use serde::Serialize;

use crate::config::DriveConfig;
use crate::content::corpus::Corpus;
use crate::device::Drive;
use crate::lab::wa::{run_with, WaSpec};
use crate::lab::StudyError;
use crate::units::{Lba, SECTOR_BYTES};
use crate::workload::access::Access;
use crate::workload::access::{Distribution, Rw};
use crate::workload::job::{run_job_with, JobSpec, Limit};

/// Bytes each simulated write-speed job writes (at most the span).
const SPEED_JOB_BYTES: u64 = 64 << 20;

/// Bytes the wall-clock pipeline measurement pushes through per try.
const PIPELINE_BYTES: usize = 16 << 20;

/// Units per write batch in the pipeline measurement.
const PIPELINE_BATCH: usize = 1024;

/// Tries of the pipeline measurement; the fastest counts.
const PIPELINE_TRIES: usize = 3;

/// What to run on each corpus.
#[derive(Clone, Debug, Serialize)]
pub struct CorpusSpec {
    /// Share of the LBA space the corpus is tiled over.
    pub share: f64,
    /// Random-overwrite passes (of the share) before measuring.
    pub precondition: f64,
    /// Random-overwrite passes measured.
    pub measure: f64,
    /// Seed of the random overwrites.
    pub seed: u64,
}

impl CorpusSpec {
    /// The WA study each corpus runs on a drive of `unit`-byte units.
    fn wa_spec(&self, unit: u64) -> WaSpec {
        WaSpec {
            access: Access::Uniform,
            request_bytes: unit,
            data: crate::content::pattern::DataSpec::incompressible(),
            trim_pct: 0,
            span: self.share,
            precondition: self.precondition,
            measure: self.measure,
        }
    }

    /// Checks the spec against a drive built from `config`, naming the
    /// bad flag (`--share`, `--precondition`, `--measure`).
    pub fn validate(&self, config: &DriveConfig) -> Result<(), StudyError> {
        self.wa_spec(u64::from(config.unit_bytes)).validate(config)
    }
}

/// One corpus's results.
#[derive(Clone, Debug, Serialize)]
pub struct CorpusReport {
    /// Corpus name.
    pub name: String,
    /// What kind of data.
    pub kind: String,
    /// Corpus size.
    pub bytes: u64,
    /// lz4 on the corpus 4 KiB block by block, outside the drive:
    /// compressed (or raw, if larger) bytes / raw bytes.
    pub lz4_block_ratio: f64,
    /// Distinct 4 KiB units / units of the corpus itself.
    pub distinct_ratio: f64,
    /// The drive's stored / raw bytes of the chunks it created.
    pub compression_ratio: f64,
    /// The drive's new chunks / unit writes.
    pub dedup_ratio: f64,
    /// NAND bytes / host bytes at steady state.
    pub waf: f64,
    /// The data-reduction model: write cost x WA_greedy(physical / live).
    pub model_waf: Option<f64>,
    /// Simulated MB/s of 128 KiB sequential writes at QD 32 (on a copy of
    /// the steady-state drive).
    pub seq_write_mbps: f64,
    /// Simulated MB/s of 4 KiB random writes at QD 32 (on a copy).
    pub rand_write_mbps: f64,
    /// Wall-clock MB/s of the drive's write path on the corpus.
    pub pipeline_mbps: f64,
    /// Wall-clock MB/s of raw lz4_flex + blake3 on the same bytes, one thread.
    pub raw_mbps: f64,
    /// pipeline_mbps / raw_mbps.
    pub pipeline_ratio: f64,
    /// MB per CPU-second of this process for the drive's write path (all
    /// its threads): immune to other load on a shared machine.
    pub pipeline_cpu_mbps: f64,
    /// MB per CPU-second of raw lz4_flex + blake3.
    pub raw_cpu_mbps: f64,
    /// SMART attributes of the steady-state drive (the CLI adds them to
    /// JSON when asked).
    #[serde(skip)]
    pub smart: crate::host::smart::Smart,
}

/// lz4 on `corpus` in `unit`-byte blocks: stored bytes over raw bytes,
/// counting a block that does not shrink at its raw size (as the drive
/// stores it).
pub fn lz4_block_ratio(corpus: &Corpus, unit: usize) -> f64 {
    let mut buf = vec![0u8; unit];
    let mut out = vec![0u8; lz4_flex::block::get_maximum_output_size(unit)];
    let (mut raw, mut stored) = (0u64, 0u64);
    for i in 0..corpus.units(unit) {
        corpus.unit(i, &mut buf);
        let n = lz4_flex::block::compress_into(&buf, &mut out).unwrap_or(unit);
        raw += unit as u64;
        stored += n.min(unit) as u64;
    }
    stored as f64 / raw.max(1) as f64
}

/// Runs the benchmark for one corpus on a drive built from `config`.
pub fn run(
    config: &DriveConfig,
    corpus: &Corpus,
    spec: &CorpusSpec,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<CorpusReport, StudyError> {
    let unit = config.unit_bytes as usize;
    let mut drive = Drive::new(config.clone())?;
    let span_bytes = (config.logical_bytes as f64 * spec.share) as u64 / unit as u64 * unit as u64;
    let wa = spec.wa_spec(unit as u64);
    let mut content = corpus.content(unit, span_bytes / unit as u64, 0);
    let report = run_with(&mut drive, &wa, content.as_mut(), spec.seed, progress)?;
    drive.check_invariants()?;

    let speed = |rw: Rw, bs: u64, salt: u64| -> Result<f64, StudyError> {
        let mut copy = drive.clone();
        let length = span_bytes / bs * bs;
        let job = JobSpec {
            name: format!("{}-{rw:?}", corpus.name),
            rw,
            bs,
            sizes: Default::default(),
            iodepth: 32,
            offset: 0,
            length,
            limit: Limit::Bytes(SPEED_JOB_BYTES.min(length)),
            rwmixread: 0,
            distribution: Distribution::Random,
            data: crate::content::pattern::DataSpec::incompressible(),
            seed: spec.seed ^ salt,
        };
        // Past the first pass every write takes a fresh permutation.
        let mut content = corpus.content(unit, 0, salt);
        Ok(run_job_with(&mut copy, &job, content.as_mut(), &mut |_| {})?.mbps())
    };
    progress("speed", 0.0);
    let seq_write_mbps = speed(Rw::Write, 128 << 10, 1)?;
    let rand_write_mbps = speed(Rw::RandWrite, unit as u64, 2)?;
    progress("pipeline", 0.0);
    let speed = pipeline_speed(config, corpus)?;
    Ok(CorpusReport {
        name: corpus.name.clone(),
        kind: corpus.kind.clone(),
        bytes: corpus.bytes().len() as u64,
        lz4_block_ratio: lz4_block_ratio(corpus, unit),
        distinct_ratio: corpus.distinct_ratio(unit),
        compression_ratio: report.compression_ratio,
        dedup_ratio: report.dedup_ratio,
        waf: report.waf,
        model_waf: report.model.map(|m| m.greedy),
        seq_write_mbps,
        rand_write_mbps,
        pipeline_mbps: speed.wall.0,
        raw_mbps: speed.wall.1,
        pipeline_ratio: speed.wall.0 / speed.wall.1,
        pipeline_cpu_mbps: speed.cpu.0,
        raw_cpu_mbps: speed.cpu.1,
        smart: crate::host::smart::Smart::of(&drive),
    })
}

/// MB/s of the drive's write path and of raw lz4 + blake3, by the wall
/// clock and per CPU-second of this process.
struct PipelineSpeed {
    wall: (f64, f64),
    cpu: (f64, f64),
}

/// `Drive::write_batch` on the corpus (tiled to [`PIPELINE_BYTES`],
/// sequential, on a fresh drive of the same config) against raw lz4 +
/// blake3 on the same bytes on one thread; the fastest of a few tries of
/// each, interleaved.
fn pipeline_speed(config: &DriveConfig, corpus: &Corpus) -> Result<PipelineSpeed, StudyError> {
    let unit = config.unit_bytes as usize;
    let units = (PIPELINE_BYTES / unit).min((config.logical_bytes / unit as u64) as usize);
    let mut bytes = vec![0u8; units * unit];
    corpus.content(unit, units as u64, 7).fill(Lba(0), &mut bytes);
    let mb = bytes.len() as f64 / 1e6;
    let mut best = [(f64::MAX, f64::MAX); 2]; // (wall, cpu) for drive, raw
    let mut out = vec![0u8; lz4_flex::block::get_maximum_output_size(unit)];
    let sectors = (unit as u64) / SECTOR_BYTES;
    let mut timed = |which: usize, f: &mut dyn FnMut() -> Result<(), StudyError>| -> Result<(), StudyError> {
        let (wall, cpu) = (Instant::now(), cpu_time::ProcessTime::now());
        f()?;
        let (w, c) = (wall.elapsed().as_secs_f64(), cpu.elapsed().as_secs_f64());
        best[which] = (best[which].0.min(w), best[which].1.min(c));
        Ok(())
    };
    for _ in 0..PIPELINE_TRIES {
        let mut drive = Drive::new(config.clone())?;
        timed(0, &mut || {
            for (b, batch) in bytes.chunks(PIPELINE_BATCH * unit).enumerate() {
                let requests: Vec<(Lba, &[u8])> = batch
                    .chunks(unit)
                    .enumerate()
                    .map(|(i, u)| (Lba(((b * PIPELINE_BATCH + i) as u64) * sectors), u))
                    .collect();
                drive.write_batch(&requests)?;
            }
            Ok(())
        })?;
        timed(1, &mut || {
            let mut sink = 0usize;
            for u in bytes.chunks(unit) {
                sink += lz4_flex::block::compress_into(u, &mut out).unwrap_or(0);
                sink += usize::from(blake3::hash(u).as_bytes()[0]);
            }
            std::hint::black_box(sink);
            Ok(())
        })?;
    }
    let rate = |secs: f64| mb / secs.max(1e-9);
    Ok(PipelineSpeed { wall: (rate(best[0].0), rate(best[1].0)), cpu: (rate(best[0].1), rate(best[1].1)) })
}
