//! The steady-state write-amplification study behind `duraflash wa`.
//!
//! Fill the drive sequentially, run random writes for `precondition`
//! drive-writes to reach steady state, then measure WAF over `measure`
//! drive-writes. Alongside the measurement it evaluates the analytic
//! models ([`crate::lab::analytic`]) at the space the data really had: the
//! physical bytes minus the time-averaged unwritten space (free blocks and
//! open-block tails), over the time-averaged stored bytes of live data;
//! with compression or dedup each host write first costs only the stored
//! bytes it creates, so the model is that cost times the relocation WA.

use serde::Serialize;

use crate::config::{DriveConfig, GcPolicy, StreamInference};
use crate::content::pattern::{unit_seed, DataSpec, PatternGen};
use crate::content::Content;
use crate::device::{Drive, Stats};
use crate::error::DriveError;
use crate::host::HostQueue;
use crate::lab::analytic;
use crate::lab::{check_drive_writes, StudyError};
use crate::units::{Lba, Lpn, SECTOR_BYTES};
use crate::workload::access::{Access, SlotStream};
use crate::workload::batch::WriteBatch;

/// Requests gathered into one `write_batch`, so the pipeline has units to
/// spread over threads.
const BATCH_REQUESTS: usize = 256;

/// Samples of the unwritten space taken over the measured phase.
const SPACE_SAMPLES: u64 = 200;

/// Most requests in a hundred that may TRIM instead of writing: at 100
/// the measured phase writes nothing and WAF (NAND bytes over host bytes)
/// has no value.
pub const MAX_TRIM_PCT: u8 = 99;

/// What to run.
#[derive(Clone, Debug, Serialize)]
pub struct WaSpec {
    /// Where random writes go.
    pub access: Access,
    /// Bytes per request: a positive multiple of the unit.
    pub request_bytes: u64,
    /// Content of written units.
    #[serde(skip)]
    pub data: DataSpec,
    /// Share of requests (percent, at most [`MAX_TRIM_PCT`]) that TRIM one
    /// random mapped unit.
    pub trim_pct: u8,
    /// Share of the LBA space (from LBA 0) filled and overwritten; the
    /// rest is never written. 1 for the whole drive.
    pub span: f64,
    /// Random-write drive-writes (of the span) before measuring.
    pub precondition: f64,
    /// Random-write drive-writes measured.
    pub measure: f64,
}

impl WaSpec {
    /// Checks the spec against the drive it will run on, naming the bad flag.
    pub fn validate(&self, cfg: &DriveConfig) -> Result<(), StudyError> {
        let unit = u64::from(cfg.unit_bytes);
        if self.request_bytes == 0 || !self.request_bytes.is_multiple_of(unit) {
            return Err(StudyError::BadSpec(format!(
                "--bs {} is not a positive multiple of the {unit}-byte unit",
                self.request_bytes
            )));
        }
        if self.request_bytes > cfg.logical_bytes {
            return Err(StudyError::BadSpec(format!("--bs {} is larger than the drive", self.request_bytes)));
        }
        check_drive_writes("--precondition", self.precondition, true)?;
        check_drive_writes("--measure", self.measure, false)?;
        if !(self.span > 0.0 && self.span <= 1.0) || (cfg.logical_bytes as f64 * self.span) < self.request_bytes as f64
        {
            return Err(StudyError::BadSpec(format!(
                "--share {:?} must be in (0, 1] and hold one {}-byte request",
                self.span, self.request_bytes
            )));
        }
        let slots = (cfg.logical_bytes as f64 * self.span) as u64 / self.request_bytes;
        self.access.check_slots(slots).map_err(|e| {
            StudyError::BadSpec(format!("--workload: {e}; the drive holds {slots} of --bs {}", self.request_bytes))
        })?;
        if self.trim_pct > MAX_TRIM_PCT {
            return Err(StudyError::BadSpec(format!(
                "--trim-pct {}: every request would TRIM, leaving no host write to measure WAF over \
                 (0 to {MAX_TRIM_PCT})",
                self.trim_pct
            )));
        }
        Ok(())
    }
}

/// The analytic models at the measured operating point.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ModelPoint {
    /// Physical bytes holding data / live stored bytes (T / U).
    pub alpha: f64,
    /// Live chunks a block holds on average (the models' pages per block).
    pub chunks_per_block: f64,
    /// Live stored bytes / logical bytes written (data reduction, 1 = none).
    pub reduction: f64,
    /// Stored bytes of new chunks per host byte written in the measured
    /// phase: what a host write costs before GC (compression x dedup).
    pub write_cost: f64,
    /// The writes were uniform: the greedy, FIFO and random models below
    /// assume it; otherwise only `policy` and `hot_cold_optimal` apply.
    pub uniform: bool,
    /// Desnoyers' greedy model: `write_cost` x WA_greedy(alpha, chunks per block).
    pub greedy: f64,
    /// The LRW/FIFO model: `write_cost` x WA_fifo(alpha).
    pub fifo: f64,
    /// Random selection: `write_cost` x alpha / (alpha - 1).
    pub random: f64,
    /// The mean-field (many-blocks) model of the drive's own GC policy,
    /// `write_cost` x: greedy's [`analytic::wa_greedy_mean_field`], FIFO's
    /// [`analytic::wa_fifo`], d-choices' [`analytic::wa_d_choices`]; none
    /// for cost-benefit and windowed greedy. Hot/cold writes separated
    /// into two streams under greedy: [`analytic::wa_hot_cold_shared_greedy`];
    /// mixed in one stream under FIFO: [`analytic::wa_fifo_hot_cold`].
    pub policy: Option<f64>,
    /// Hot/cold writes separated into two streams: the two-pool model
    /// with the spare split to minimise WA (greedy in each pool), what the
    /// best split of the space would give.
    pub hot_cold_optimal: Option<f64>,
}

/// Result of one study.
#[derive(Clone, Debug, Serialize)]
pub struct WaReport {
    /// NAND bytes programmed / host bytes written over the measured phase.
    pub waf: f64,
    /// Host bytes written in the measured phase.
    pub host_bytes: u64,
    /// NAND bytes programmed in the measured phase.
    pub nand_bytes: u64,
    /// Bytes GC relocated in the measured phase.
    pub gc_relocated_bytes: u64,
    /// Bytes static wear levelling moved in the measured phase (apart
    /// from GC's).
    #[serde(default)]
    pub wear_relocated_bytes: u64,
    /// Block erases in the measured phase.
    pub erases: u64,
    /// Stored / raw bytes of chunks created (lifetime).
    pub compression_ratio: f64,
    /// New chunks / unit writes (lifetime).
    pub dedup_ratio: f64,
    /// Over-provisioning of the data blocks, reserve excluded (config).
    pub op: f64,
    /// Over-provisioning of the whole array, reserve included.
    pub op_total: f64,
    /// NAND pages per block.
    pub pages_per_block: u32,
    /// Host-visible bytes.
    pub capacity_bytes: u64,
    /// Erase blocks in the array.
    pub blocks: u32,
    /// Drive-writes done before measuring (fill included).
    pub drive_writes_before: f64,
    /// The analytic models where they apply (uniform random overwrites,
    /// no TRIM).
    pub model: Option<ModelPoint>,
    /// Full drive counters at the end.
    pub stats: Stats,
    /// Cost of simulating the measured phase on this machine (left out of
    /// the JSON, which a seed reproduces byte for byte; `duraflash bench`
    /// reports it).
    #[serde(skip)]
    pub speed: Speed,
}

/// What simulating the measured phase cost: wall time and the process's CPU
/// time (every thread), and host unit writes per CPU-second and per second.
#[derive(Clone, Copy, Debug, Serialize, PartialEq)]
pub struct Speed {
    /// Host 4 KiB unit writes in the measured phase.
    pub host_writes: u64,
    /// Chunks written to NAND in the measured phase: new ones and GC's
    /// relocations (the FTL's per-chunk work).
    pub chunk_writes: u64,
    /// Wall-clock seconds.
    pub wall_secs: f64,
    /// CPU seconds of all the process's threads.
    pub cpu_secs: f64,
    /// Host unit writes per CPU-second.
    pub writes_per_cpu_sec: f64,
    /// Host unit writes per wall-clock second.
    pub writes_per_sec: f64,
}

/// Runs the study on `drive` (which should be freshly erased). `progress`
/// is told the phase name and the fraction done.
pub fn run(
    drive: &mut Drive,
    spec: &WaSpec,
    seed: u64,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<WaReport, StudyError> {
    let mut gen = PatternGen::new(spec.data, unit_seed(seed, 1))?;
    run_with(drive, spec, &mut gen, seed, progress)
}

/// Runs the study with writes carrying `content` instead of `spec.data`.
pub fn run_with(
    drive: &mut Drive,
    spec: &WaSpec,
    gen: &mut dyn Content,
    seed: u64,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<WaReport, StudyError> {
    let cfg = drive.config().clone();
    spec.validate(&cfg)?;
    let span = (cfg.logical_bytes as f64 * spec.span) as u64;
    let slots = (span / spec.request_bytes).max(1);
    let mut access = SlotStream::new(spec.access, slots, unit_seed(seed, 2))?;
    let mut writer = Writer::new(drive.needs_content(), spec.request_bytes);
    // With streams, a hot/cold workload tells the drive which units are
    // hot (stream 1), as a host with stream ids would, unless the drive
    // infers streams itself; either way the two-pool model applies.
    let separated = cfg.placement.streams >= 2 && access.hot_slots().is_some();
    let hinted = separated && cfg.placement.infer == StreamInference::Off;
    if let (true, Some(hot)) = (hinted, access.hot_slots()) {
        let hot_units = hot * spec.request_bytes / u64::from(cfg.unit_bytes);
        drive.set_stream_hints(vec![(Lpn(0), 1), (Lpn(hot_units), 0)])?;
    }

    // Sequential fill.
    let mut filled = 0;
    while filled < slots {
        let n = (slots - filled).min(writer.max as u64);
        for s in filled..filled + n {
            writer.add(s);
        }
        writer.flush(drive, gen)?;
        filled += n;
        progress("fill", filled as f64 / slots as f64);
    }

    let per_drive_write = slots as f64;
    let pre = (spec.precondition * per_drive_write).round() as u64;
    random_phase(drive, spec, &mut access, gen, &mut writer, pre, &mut |f| progress("precondition", f), None)?;

    let before = drive.stats();
    let measured = (spec.measure * per_drive_write).round().max(1.0) as u64;
    let mut sampler = SpaceSampler::default();
    let (wall, cpu) = (std::time::Instant::now(), cpu_time::ProcessTime::now());
    random_phase(
        drive,
        spec,
        &mut access,
        gen,
        &mut writer,
        measured,
        &mut |f| progress("measure", f),
        Some(&mut sampler),
    )?;
    let (wall_secs, cpu_secs) = (wall.elapsed().as_secs_f64(), cpu.elapsed().as_secs_f64());
    let after = drive.stats();
    let host_writes = after.host_write_units - before.host_write_units;
    let chunk_writes =
        (after.new_chunks + after.gc_relocated_chunks) - (before.new_chunks + before.gc_relocated_chunks);
    let speed = Speed {
        host_writes,
        chunk_writes,
        wall_secs,
        cpu_secs,
        writes_per_cpu_sec: host_writes as f64 / cpu_secs.max(1e-9),
        writes_per_sec: host_writes as f64 / wall_secs.max(1e-9),
    };

    let host_bytes = after.host_write_bytes - before.host_write_bytes;
    let nand_bytes = after.nand_bytes_programmed - before.nand_bytes_programmed;
    let geometry = &cfg.geometry;
    let fifo = cfg.gc.policy == GcPolicy::Fifo;
    let uniform = matches!(spec.access, Access::Uniform);
    let mixed_fifo = matches!(spec.access, Access::HotCold { .. }) && !separated && fifo;
    let modelled = uniform || separated || mixed_fifo;
    let model = (modelled && spec.trim_pct == 0 && sampler.n > 0).then(|| {
        let unwritten = sampler.unwritten / sampler.n as f64;
        let live = sampler.live / sampler.n as f64;
        let chunks = sampler.chunks / sampler.n as f64;
        let alpha = (geometry.physical_bytes() as f64 - unwritten) / live;
        let chunks_per_block = geometry.block_bytes() as f64 * chunks / live;
        let reduction = live / (slots * spec.request_bytes) as f64;
        let write_cost = (after.new_stored_bytes - before.new_stored_bytes) as f64 / host_bytes as f64;
        let np = chunks_per_block.round().max(1.0) as u32;
        ModelPoint {
            uniform,
            alpha,
            chunks_per_block,
            reduction,
            write_cost,
            greedy: write_cost * analytic::wa_greedy(alpha, np),
            fifo: write_cost * analytic::wa_fifo(alpha),
            random: write_cost * analytic::wa_random(alpha),
            policy: match spec.access {
                Access::HotCold { hot, writes } if mixed_fifo => {
                    Some(write_cost * analytic::wa_fifo_hot_cold(alpha, hot, writes))
                }
                Access::HotCold { hot, writes } => (cfg.gc.policy == GcPolicy::Greedy)
                    .then(|| write_cost * analytic::wa_hot_cold_shared_greedy(alpha, hot, writes, np).0),
                _ => policy_model(cfg.gc.policy, alpha, np).map(|wa| write_cost * wa),
            },
            hot_cold_optimal: match spec.access {
                Access::HotCold { hot, writes } if separated => {
                    let pool = |a| analytic::wa_greedy_mean_field(a, np);
                    Some(write_cost * analytic::wa_hot_cold_optimal(alpha, hot, writes, pool).0)
                }
                _ => None,
            },
        }
    });
    Ok(WaReport {
        waf: nand_bytes as f64 / host_bytes as f64,
        host_bytes,
        nand_bytes,
        gc_relocated_bytes: after.gc_relocated_bytes - before.gc_relocated_bytes,
        wear_relocated_bytes: after.wear_relocated_bytes - before.wear_relocated_bytes,
        erases: after.erases - before.erases,
        compression_ratio: after.compression_ratio,
        dedup_ratio: after.dedup_ratio,
        op: cfg.data_op(),
        op_total: cfg.op(),
        pages_per_block: geometry.pages_per_block,
        capacity_bytes: cfg.logical_bytes,
        blocks: geometry.total_blocks(),
        drive_writes_before: 1.0 + spec.precondition,
        model,
        stats: after,
        speed,
    })
}

/// The mean-field WA of `policy` under uniform writes, where the library
/// has one.
pub fn policy_model(policy: GcPolicy, alpha: f64, chunks_per_block: u32) -> Option<f64> {
    match policy {
        GcPolicy::Greedy => Some(analytic::wa_greedy_mean_field(alpha, chunks_per_block)),
        GcPolicy::Fifo => Some(analytic::wa_fifo(alpha)),
        GcPolicy::DChoices(d) => Some(analytic::wa_d_choices(alpha, chunks_per_block, d)),
        GcPolicy::CostBenefit | GcPolicy::Windowed(_) => None,
    }
}

/// Time averages of the space state over the measured phase.
#[derive(Default)]
struct SpaceSampler {
    n: u64,
    unwritten: f64,
    live: f64,
    chunks: f64,
}

#[allow(clippy::too_many_arguments)]
fn random_phase(
    drive: &mut Drive,
    spec: &WaSpec,
    access: &mut SlotStream,
    gen: &mut dyn Content,
    writer: &mut Writer,
    requests: u64,
    progress: &mut dyn FnMut(f64),
    mut sampler: Option<&mut SpaceSampler>,
) -> Result<(), DriveError> {
    let units = drive.config().logical_units();
    let sample_every = (requests / SPACE_SAMPLES).max(1);
    for i in 0..requests {
        if access.chance(spec.trim_pct) {
            writer.flush(drive, gen)?;
            trim_random_mapped(drive, access, units)?;
        } else {
            writer.add(access.next_slot());
            if writer.len() == writer.max {
                writer.flush(drive, gen)?;
            }
        }
        if (i + 1) % sample_every == 0 {
            writer.flush(drive, gen)?;
            if let Some(s) = sampler.as_deref_mut() {
                s.n += 1;
                s.unwritten += drive.unwritten_bytes() as f64;
                s.live += drive.live_bytes() as f64;
                s.chunks += drive.live_chunks() as f64;
            }
            progress((i + 1) as f64 / requests as f64);
        }
    }
    writer.flush(drive, gen)
}

/// TRIMs one mapped unit picked at random (a few tries; an almost empty
/// drive may yield none).
fn trim_random_mapped(drive: &mut Drive, access: &mut SlotStream, units: u64) -> Result<(), DriveError> {
    let unit_sectors = u64::from(drive.config().unit_bytes) / SECTOR_BYTES;
    for _ in 0..16 {
        let lpn = Lpn(access.uniform(units));
        if drive.is_mapped(lpn) {
            drive.trim(&[(Lba(lpn.0 * unit_sectors), unit_sectors)])?;
            break;
        }
    }
    Ok(())
}

/// The study's requests, by slot, gathered into one [`WriteBatch`].
struct Writer {
    batch: WriteBatch,
    /// Requests per batch: 1 to BATCH_REQUESTS, within BATCH_BYTES.
    max: usize,
    /// Sectors per request: slot `s` starts at LBA `s * sectors`.
    sectors: u64,
}

impl Writer {
    fn new(content: bool, request_bytes: u64) -> Self {
        let batch = WriteBatch::new(content, request_bytes, BATCH_REQUESTS);
        Writer { max: batch.capacity(), batch, sectors: request_bytes / SECTOR_BYTES }
    }

    fn len(&self) -> usize {
        self.batch.len()
    }

    fn add(&mut self, slot: u64) {
        self.batch.add(Lba(slot * self.sectors), self.sectors * SECTOR_BYTES);
    }

    /// Writes the batch as [`Drive::write_batch`] does: through a queue of
    /// depth 1 from the drive's clock.
    fn flush(&mut self, drive: &mut Drive, gen: &mut dyn Content) -> Result<(), DriveError> {
        let mut queue = HostQueue::new(1, drive.now());
        self.batch.flush(drive, &mut queue, gen)
    }
}
