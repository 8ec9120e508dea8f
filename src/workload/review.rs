//! The review benchmarks the field reports speak in, built from jobs:
//! HD Tach (sequential sweeps across the span in zones), ATTO (transfer
//! sizes 0.5 KiB to 8 MiB at queue depth 4 on highly compressible data)
//! and IOmeter (4 KiB random at several queue depths).

use serde::Serialize;

use crate::content::pattern::{unit_seed, DataSpec};
use crate::datapath::tape::Tape;
use crate::device::Drive;
use crate::error::DriveError;
use crate::host::BlockDevice;
use crate::profile::{self, Phase};
use crate::workload::access::{Distribution, Rw};
use crate::workload::job::{run_job, JobSpec, Limit};
use crate::workload::WorkloadError;

/// HD Tach's request size in the model: 128 KiB sequential commands at
/// queue depth 1.
pub const HDTACH_REQUEST: u64 = 128 << 10;
/// Zones an HD Tach pass samples across the span.
pub const HDTACH_ZONES: u32 = 64;
/// ATTO's transfer sizes: 0.5 KiB to 8 MiB in powers of two.
pub const ATTO_SIZES: [u64; 15] = [
    512,
    1 << 10,
    2 << 10,
    4 << 10,
    8 << 10,
    16 << 10,
    32 << 10,
    64 << 10,
    128 << 10,
    256 << 10,
    512 << 10,
    1 << 20,
    2 << 20,
    4 << 20,
    8 << 20,
];
/// ATTO's queue depth.
pub const ATTO_QD: u32 = 4;
/// ATTO's default span ("total length").
pub const ATTO_SPAN: u64 = 256 << 20;
/// ATTO's test data: highly compressible (90 % zeros in each 512 B).
pub const ATTO_COMPRESS_PCT: u8 = 90;
/// IOmeter's queue depths.
pub const IOMETER_QDS: [u32; 4] = [1, 3, 32, 64];
/// IOmeter's default span: the first GiB.
pub const IOMETER_SPAN: u64 = 1 << 30;
/// Most commands per IOmeter point: 5,000 times the CLI's 20,000. The
/// eight points of it take about an hour at the 0.26 M commands a wall
/// second a 64 MiB drive ran on a busy 2-core machine; more would not finish.
pub const IOMETER_MAX_OPS: u64 = 100_000_000;

/// One zone of an HD Tach sweep.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Zone {
    /// Byte offset of the zone.
    pub offset: u64,
    /// Decimal MB/s measured in it.
    pub mbps: f64,
}

/// A read or write sweep across the span.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Sweep {
    /// Bytes over time of the whole sweep, in decimal MB/s.
    pub avg_mbps: f64,
    /// Each zone.
    pub zones: Vec<Zone>,
}

/// Sweeps the whole span in `zones` zones with sequential `request`-byte
/// commands at queue depth 1, reading (`Rw::Read`) or writing
/// (`Rw::Write`, with `data`). Reads do not change the drive; writes do.
pub fn hdtach_sweep<D: BlockDevice>(
    drive: &mut D,
    rw: Rw,
    zones: u32,
    data: DataSpec,
    seed: u64,
    progress: &mut dyn FnMut(f64),
) -> Result<Sweep, WorkloadError>
where
    WorkloadError: From<D::Error>,
{
    sweep(drive, rw, HDTACH_REQUEST, zones, data, seed, progress)
}

/// [`hdtach_sweep`] with `request`-byte commands.
fn sweep<D: BlockDevice>(
    drive: &mut D,
    rw: Rw,
    request: u64,
    zones: u32,
    data: DataSpec,
    seed: u64,
    progress: &mut dyn FnMut(f64),
) -> Result<Sweep, WorkloadError>
where
    WorkloadError: From<D::Error>,
{
    let capacity = drive.capacity_bytes();
    let zones = u64::from(zones.max(1));
    let zone_bytes = (capacity / zones) / request * request;
    if zone_bytes == 0 {
        return Err(WorkloadError::BadSpec(format!(
            "the drive is too small for {zones} HD Tach zones of one {request}-byte request"
        )));
    }
    // HD Tach covers the whole span: each zone is swept entirely.
    let sample = zone_bytes;
    let (mut bytes, mut ns) = (0u64, 0u64);
    let mut out = Vec::new();
    for z in 0..zones {
        let spec = JobSpec {
            name: format!("hdtach-{z}"),
            rw,
            bs: request,
            sizes: Default::default(),
            iodepth: 1,
            offset: z * zone_bytes,
            length: sample,
            limit: Limit::Bytes(sample),
            rwmixread: 0,
            distribution: Distribution::Random,
            data,
            seed: unit_seed(seed, z),
        };
        let r = run_job(drive, &spec, &mut |_| {})?;
        let moved = r.read.io_bytes + r.write.io_bytes;
        bytes += moved;
        ns += r.elapsed_ns;
        out.push(Zone { offset: z * zone_bytes, mbps: r.mbps() });
        progress((z + 1) as f64 / zones as f64);
    }
    Ok(Sweep { avg_mbps: if ns == 0 { 0.0 } else { bytes as f64 * 1e3 / ns as f64 }, zones: out })
}

/// An HD Tach pass: the read sweep on the drive, the write sweep on a copy
/// so that measuring does not change the state measured.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HdTach {
    /// Sequential read sweep.
    pub read: Sweep,
    /// Sequential write sweep (taken on a clone).
    pub write: Sweep,
}

/// Runs an HD Tach pass (see [`HdTach`]).
pub fn hdtach<D: BlockDevice>(
    drive: &mut D,
    zones: u32,
    data: DataSpec,
    seed: u64,
    progress: &mut dyn FnMut(f64),
) -> Result<HdTach, WorkloadError>
where
    WorkloadError: From<D::Error>,
{
    hdtach_sized(drive, HDTACH_REQUEST, zones, data, seed, progress)
}

/// An HD Tach pass with `request`-byte commands (a RAID driver that
/// coalesces sequential I/O into full stripes).
pub fn hdtach_sized<D: BlockDevice>(
    drive: &mut D,
    request: u64,
    zones: u32,
    data: DataSpec,
    seed: u64,
    progress: &mut dyn FnMut(f64),
) -> Result<HdTach, WorkloadError>
where
    WorkloadError: From<D::Error>,
{
    let read = sweep(drive, Rw::Read, request, zones, data, unit_seed(seed, 1), &mut |f| progress(f / 2.0))?;
    let mut copy = profile::time(Phase::Copy, || drive.clone());
    let write =
        sweep(&mut copy, Rw::Write, request, zones, data, unit_seed(seed, 2), &mut |f| progress(0.5 + f / 2.0))?;
    profile::time(Phase::Copy, || drop(copy));
    Ok(HdTach { read, write })
}

/// How a write sweep leaves the drive it measures unchanged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    /// Sweep a clone: twice the state in memory while it runs.
    Clone,
    /// Save an image to a temporary file, sweep the drive itself, then
    /// load the image back: the disk holds the copy instead of memory.
    Image,
    /// Sweep the drive itself and leave it written: for a protocol's last
    /// pass, whose state nobody looks at after the sweep.
    Consume,
}

/// Drive state (metadata and kept chunk bytes) above which
/// [`Isolation::for_drive`] picks an image over a clone.
pub const CLONE_LIMIT_BYTES: u64 = 512 << 20;

impl Isolation {
    /// A clone for small drives, an image for those whose state is over
    /// [`CLONE_LIMIT_BYTES`] (a full-size drive).
    pub fn for_drive(drive: &Drive) -> Self {
        let f = drive.footprint();
        if f.metadata() + f.chunk_data > CLONE_LIMIT_BYTES {
            Isolation::Image
        } else {
            Isolation::Clone
        }
    }
}

/// An HD Tach pass on a single drive whose write sweep is isolated as
/// `isolation` says; the same result either way.
pub fn hdtach_isolated(
    drive: &mut Drive,
    zones: u32,
    data: DataSpec,
    seed: u64,
    isolation: Isolation,
    progress: &mut dyn FnMut(f64),
) -> Result<HdTach, WorkloadError> {
    hdtach_between(drive, zones, data, seed, isolation, &mut None, |_| Ok(()), progress).map(|(h, ())| h)
}

/// An HD Tach pass that hands the drive to `between` after the read sweep
/// and before the write sweep (the state the pass measures, which
/// [`Isolation::Consume`] does not keep), with the write sweep recording
/// into or playing back from `tape` (see [`Tape`]), which is rewound after
/// it for the next sweep: the caller vouches that every sweep on one tape
/// writes the same content (the same `zones`, `data`, `seed` and drive
/// capacity).
#[allow(clippy::too_many_arguments)]
pub fn hdtach_between<T>(
    drive: &mut Drive,
    zones: u32,
    data: DataSpec,
    seed: u64,
    isolation: Isolation,
    tape: &mut Option<Tape>,
    between: impl FnOnce(&Drive) -> Result<T, WorkloadError>,
    progress: &mut dyn FnMut(f64),
) -> Result<(HdTach, T), WorkloadError> {
    let request = HDTACH_REQUEST;
    let read = sweep(drive, Rw::Read, request, zones, data, unit_seed(seed, 1), &mut |f| progress(f / 2.0))?;
    let seen = between(drive)?;
    let write_seed = unit_seed(seed, 2);
    let write_sweep =
        |d: &mut Drive| sweep(d, Rw::Write, request, zones, data, write_seed, &mut |f| progress(0.5 + f / 2.0));
    let write = match isolation {
        Isolation::Clone => {
            let mut copy = profile::time(Phase::Copy, || drive.clone());
            let write = taped(&mut copy, tape, write_sweep);
            profile::time(Phase::Copy, || drop(copy));
            write?
        }
        Isolation::Consume => taped(drive, tape, write_sweep)?,
        Isolation::Image => {
            static SWEEPS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
            let n = SWEEPS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let image = TempImage(std::env::temp_dir().join(format!("duraflash-sweep-{}-{n}.img", std::process::id())));
            profile::time(Phase::Image, || drive.save_scratch(&image.0)).map_err(|source| WorkloadError::Image {
                what: "saving the drive before the write sweep".into(),
                source,
            })?;
            let write = taped(drive, tape, write_sweep);
            // Free the swept state before loading the saved one, so the two
            // are never in memory together. A fresh drive of the same config
            // holds only its per-block records: its map and chunk tables stay
            // unbacked until written.
            *drive = Drive::new(drive.config().clone())?;
            *drive = profile::time(Phase::Image, || Drive::load(&image.0)).map_err(|source| WorkloadError::Image {
                what: format!("restoring the drive after the write sweep from {}", image.0.display()),
                source,
            })?;
            write?
        }
    };
    Ok((HdTach { read, write }, seen))
}

/// Runs `f` on `drive` holding `tape` (if any), then takes the tape back
/// and rewinds it.
fn taped<T>(
    drive: &mut Drive,
    tape: &mut Option<Tape>,
    f: impl FnOnce(&mut Drive) -> Result<T, WorkloadError>,
) -> Result<T, WorkloadError> {
    if let Some(t) = tape.take() {
        drive.put_tape(t)?;
    }
    let out = f(drive);
    let back = drive.take_tape();
    let rewound = back.map(|mut t| t.rewind().map(|()| t)).transpose().map_err(|e| DriveError::Tape(e.to_string()));
    *tape = rewound?;
    out
}

/// A temporary image file, removed when dropped, whichever way the
/// isolated sweep returns.
struct TempImage(std::path::PathBuf);

impl Drop for TempImage {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// ATTO at one transfer size.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AttoPoint {
    /// Transfer size in bytes.
    pub size: u64,
    /// Write MB/s (decimal).
    pub write_mbps: f64,
    /// Read MB/s (decimal).
    pub read_mbps: f64,
}

/// An ATTO sweep: for each size, write then read `span` bytes from the
/// start of the drive at queue depth 4 with highly compressible data. Runs
/// on a copy so the drive is unchanged. A drive that keeps no data bytes
/// cannot merge transfers smaller than its mapping unit into written
/// units, so those sizes are left out there.
pub fn atto(
    drive: &Drive,
    span: u64,
    seed: u64,
    progress: &mut dyn FnMut(f64),
) -> Result<Vec<AttoPoint>, WorkloadError> {
    let span = span.min(drive.config().logical_bytes);
    let smallest = if drive.config().media == crate::Media::Memory { 0 } else { u64::from(drive.config().unit_bytes) };
    let data = DataSpec::compressible(ATTO_COMPRESS_PCT)?;
    let mut copy = profile::time(Phase::Copy, || drive.clone());
    let mut out = Vec::new();
    for (i, &size) in ATTO_SIZES.iter().enumerate().filter(|(_, &s)| s >= smallest) {
        let length = span / size * size;
        if length == 0 {
            break;
        }
        let job = |rw: Rw| JobSpec {
            name: format!("atto-{size}"),
            rw,
            bs: size,
            sizes: Default::default(),
            iodepth: ATTO_QD,
            offset: 0,
            length,
            limit: Limit::Bytes(length),
            rwmixread: 0,
            distribution: Distribution::Random,
            data,
            seed: unit_seed(seed, i as u64),
        };
        let w = run_job(&mut copy, &job(Rw::Write), &mut |_| {})?;
        let r = run_job(&mut copy, &job(Rw::Read), &mut |_| {})?;
        out.push(AttoPoint { size, write_mbps: w.mbps(), read_mbps: r.mbps() });
        progress((i + 1) as f64 / ATTO_SIZES.len() as f64);
    }
    Ok(out)
}

/// IOmeter-style 4 KiB random IOPS at one queue depth.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct IometerPoint {
    /// Queue depth.
    pub qd: u32,
    /// 4 KiB random read IOPS.
    pub read_iops: f64,
    /// 4 KiB random write IOPS.
    pub write_iops: f64,
    /// Mean read latency, microseconds.
    pub read_lat_us: f64,
    /// Mean write latency, microseconds.
    pub write_lat_us: f64,
}

/// IOmeter: 4 KiB random reads, then random writes, at each queue depth
/// in [`IOMETER_QDS`], `ops` commands each, over the first `span` bytes
/// (which should hold data, or reads cost no NAND). `data` is what the
/// writes carry.
pub fn iometer<D: BlockDevice>(
    drive: &mut D,
    span: u64,
    ops: u64,
    data: DataSpec,
    seed: u64,
    progress: &mut dyn FnMut(f64),
) -> Result<Vec<IometerPoint>, WorkloadError>
where
    WorkloadError: From<D::Error>,
{
    let span = span.min(drive.capacity_bytes()) / 4096 * 4096;
    let job = |rw: Rw, qd: u32| JobSpec {
        name: format!("iometer-{rw:?}-qd{qd}").to_lowercase(),
        rw,
        bs: 4096,
        sizes: Default::default(),
        iodepth: qd,
        offset: 0,
        length: span,
        limit: Limit::Ops(ops),
        rwmixread: 0,
        distribution: Distribution::Random,
        data,
        seed: unit_seed(seed, u64::from(qd)),
    };
    let steps = (IOMETER_QDS.len() * 2) as f64;
    let mut reads = Vec::new();
    for (i, &qd) in IOMETER_QDS.iter().enumerate() {
        reads.push(run_job(drive, &job(Rw::RandRead, qd), &mut |_| {})?);
        progress((i + 1) as f64 / steps);
    }
    let mut out = Vec::new();
    for (i, (&qd, r)) in IOMETER_QDS.iter().zip(reads).enumerate() {
        let w = run_job(drive, &job(Rw::RandWrite, qd), &mut |_| {})?;
        out.push(IometerPoint {
            qd,
            read_iops: r.read.iops,
            write_iops: w.write.iops,
            read_lat_us: r.read.lat.mean_latency_ns / 1e3,
            write_lat_us: w.write.lat.mean_latency_ns / 1e3,
        });
        progress((IOMETER_QDS.len() + i + 1) as f64 / steps);
    }
    Ok(out)
}
