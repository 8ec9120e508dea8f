//! The RAID-0 TRIM experiment (seed notes, section 1) on any array: one
//! member measured alone for reference (HD Tach's own 128 KiB requests, as
//! on a single drive), then the array clean -> secure
//! erase -> sequential fill -> 4 KiB random reads at QD 1 and 32 -> 4 KiB
//! random writes over the whole span at QD 32 -> HD Tach (tortured) ->
//! format (TRIM every LBA, which the driver may drop) -> HD Tach.

use serde::Serialize;

use crate::config::DriveConfig;
use crate::content::pattern::{unit_seed, DataSpec};
use crate::device::Drive;
use crate::host::raid::{Array, Layout, Level, TrimPolicy};
use crate::host::smart::Smart;
use crate::host::BlockDevice;
use crate::lab::torture::{format_trim, pause, Duration};
use crate::lab::StudyError;
use crate::workload::access::{Distribution, Rw};
use crate::workload::job::{fill_spec, run_job, JobSpec, Limit};
use crate::workload::review::{hdtach_sized, HdTach, HDTACH_REQUEST};
use crate::workload::WorkloadError;

/// Commands of each random-read measurement.
pub const RANDOM_READ_OPS: u64 = 4000;

/// Protocol settings.
#[derive(Clone, Debug, Serialize)]
pub struct RaidSpec {
    /// RAID level.
    pub level: Level,
    /// Member drives.
    pub members: usize,
    /// Stripe size in bytes.
    pub stripe_bytes: u64,
    /// The driver's TRIM policy.
    pub driver: TrimPolicy,
    /// Simulated minutes of torture on full-size members (scaled with
    /// the member capacity, as `torture` does).
    pub minutes: f64,
    /// HD Tach zones.
    pub zones: u32,
    /// Seed.
    pub seed: u64,
}

/// Sequential and random-read figures of one state.
#[derive(Clone, Debug, Serialize)]
pub struct Measured {
    /// HD Tach average read MB/s.
    pub read_mbps: f64,
    /// HD Tach average write MB/s (on a copy).
    pub write_mbps: f64,
    /// The sweeps.
    pub hdtach: HdTach,
}

/// 4 KiB random reads over the filled span.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct RandomRead {
    /// IOPS at queue depth 1.
    pub qd1_iops: f64,
    /// IOPS at queue depth 32.
    pub qd32_iops: f64,
}

/// The protocol's result.
#[derive(Clone, Debug, Serialize)]
pub struct RaidReport {
    /// The array's layout.
    pub layout: Layout,
    /// The driver's TRIM policy.
    pub driver: TrimPolicy,
    /// Whether the driver passed the format's TRIM to the members.
    pub trim_passed: bool,
    /// Bytes of each member.
    pub member_bytes: u64,
    /// Bytes of the array.
    pub array_bytes: u64,
    /// HD Tach request size on the array (one full stripe row).
    pub request_bytes: u64,
    /// One member alone, secure-erased (HD Tach's own requests,
    /// [`HDTACH_REQUEST`]).
    pub single: Measured,
    /// One member alone, filled.
    pub single_random_read: RandomRead,
    /// The secure-erased array.
    pub clean: Measured,
    /// The filled array.
    pub random_read: RandomRead,
    /// Drive-writes (of the array) of 4 KiB random writes.
    pub drive_writes: f64,
    /// Simulated seconds of torture.
    pub torture_secs: f64,
    /// After fill and torture.
    pub tortured: Measured,
    /// Units the format's TRIM unmapped over all members.
    pub trimmed_units: u64,
    /// After the format.
    pub after_format: Measured,
    /// Each member's SMART attributes at the end (the CLI adds them to
    /// JSON when asked).
    #[serde(skip)]
    pub smart: Vec<Smart>,
}

fn measure<D: BlockDevice>(dev: &mut D, request: u64, spec: &RaidSpec, k: u64) -> Result<Measured, StudyError>
where
    StudyError: From<D::Error>,
    WorkloadError: From<D::Error>,
{
    let data = DataSpec::compressible(0)?;
    let h = hdtach_sized(dev, request, spec.zones, data, unit_seed(spec.seed, 20 + k), &mut |_| {})?;
    Ok(Measured { read_mbps: h.read.avg_mbps, write_mbps: h.write.avg_mbps, hdtach: h })
}

fn random_read<D: BlockDevice>(dev: &mut D, seed: u64) -> Result<RandomRead, StudyError>
where
    StudyError: From<D::Error>,
    WorkloadError: From<D::Error>,
{
    let mut iops = [0.0; 2];
    for (i, qd) in [1u32, 32].into_iter().enumerate() {
        let job = JobSpec {
            name: format!("randread-qd{qd}"),
            rw: Rw::RandRead,
            bs: 4096,
            sizes: Default::default(),
            iodepth: qd,
            offset: 0,
            length: dev.capacity_bytes() / 4096 * 4096,
            limit: Limit::Ops(RANDOM_READ_OPS),
            rwmixread: 0,
            distribution: Distribution::Random,
            data: DataSpec::compressible(0)?,
            seed: unit_seed(seed, u64::from(qd)),
        };
        iops[i] = run_job(dev, &job, &mut |_| {})?.read.iops;
    }
    Ok(RandomRead { qd1_iops: iops[0], qd32_iops: iops[1] })
}

fn fill<D: BlockDevice>(dev: &mut D, request: u64, seed: u64) -> Result<(), StudyError>
where
    StudyError: From<D::Error>,
    WorkloadError: From<D::Error>,
{
    let data = DataSpec::compressible(0)?;
    run_job(dev, &fill_spec(dev.capacity_bytes(), request, 32, data, seed), &mut |_| {})?;
    Ok(())
}

/// Runs the protocol on an array of `spec.members` drives built from
/// `member`. `progress` gets the phase name and the fraction done.
pub fn raid(
    member: &DriveConfig,
    spec: &RaidSpec,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<RaidReport, StudyError> {
    Duration::Minutes(spec.minutes).validate()?;
    let new_drive = || Drive::new(member.clone());
    let drives = (0..spec.members).map(|_| new_drive()).collect::<Result<Vec<_>, _>>()?;
    let mut array = Array::new(spec.level, spec.stripe_bytes, spec.driver, drives)?;
    let layout = *array.layout();
    let request = spec.stripe_bytes * layout.columns as u64;

    progress("one member", 0.0);
    let mut single = new_drive()?;
    // HD Tach on one drive issues its own requests; only the array's
    // driver coalesces them into full stripe rows.
    let single_clean = measure(&mut single, HDTACH_REQUEST, spec, 0)?;
    fill(&mut single, request, unit_seed(spec.seed, 1))?;
    let single_random_read = random_read(&mut single, unit_seed(spec.seed, 2))?;

    progress("array clean", 0.1);
    let clean = measure(&mut array, request, spec, 1)?;
    array.secure_erase();
    progress("fill", 0.2);
    fill(&mut array, request, unit_seed(spec.seed, 3))?;
    let random_read = random_read(&mut array, unit_seed(spec.seed, 4))?;
    let full = DriveConfig::preset(&member.name).map_or(member.logical_bytes, |p| p.logical_bytes);
    let torture = JobSpec {
        name: "torture".into(),
        rw: Rw::RandWrite,
        bs: 4096,
        sizes: Default::default(),
        iodepth: 32,
        offset: 0,
        length: array.capacity_bytes() / 4096 * 4096,
        limit: Limit::Time((spec.minutes * 60e9 * member.logical_bytes as f64 / full.max(1) as f64) as u64),
        rwmixread: 0,
        distribution: Distribution::Random,
        data: DataSpec::compressible(0)?,
        seed: unit_seed(spec.seed, 5),
    };
    let t = run_job(&mut array, &torture, &mut |f| progress("torture", 0.3 + 0.4 * f))?;
    pause(&mut array)?;
    progress("hdtach tortured", 0.7);
    let tortured = measure(&mut array, request, spec, 2)?;
    progress("format", 0.85);
    let trimmed_units = format_trim(&mut array)?;
    pause(&mut array)?;
    let after_format = measure(&mut array, request, spec, 3)?;
    progress("done", 1.0);
    Ok(RaidReport {
        layout,
        driver: spec.driver,
        trim_passed: spec.driver.passes(spec.level),
        member_bytes: member.logical_bytes,
        array_bytes: array.capacity_bytes(),
        request_bytes: request,
        single: single_clean,
        single_random_read,
        clean,
        random_read,
        drive_writes: t.write.io_bytes as f64 / array.capacity_bytes() as f64,
        torture_secs: t.elapsed_ns as f64 / 1e9,
        tortured,
        trimmed_units,
        after_format,
        smart: array.members().iter().map(Smart::of).collect(),
    })
}
