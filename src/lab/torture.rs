//! The reviewers' SandForce torture protocol (seed notes, section 3):
//! secure erase -> HD Tach (clean) -> secure erase -> sequential fill ->
//! 4 KiB random writes over the whole LBA span at QD 32 -> HD Tach
//! (tortured) -> TRIM every LBA as Windows' format does -> HD Tach (after
//! TRIM) -> TRIM again -> HD Tach (after the second TRIM). Write sweeps run
//! on copies, so measuring never changes the state measured.

use serde::Serialize;

use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::{DriveConfig, Media};
use crate::content::pattern::{unit_seed, DataSpec};
use crate::datapath::tape::Tape;
use crate::device::Drive;
use crate::firmware::DSM_MAX_SECTORS;
use crate::host::smart::Smart;
use crate::host::{BlockDevice, HostQueue};
use crate::lab::plot::{LineChart, Series};
use crate::lab::{check_drive_writes, StudyError};
use crate::units::Lba;
use crate::workload::access::{Distribution, Rw};
use crate::workload::job::{fill_spec, run_job, JobResult, JobSpec, Limit};
use crate::workload::review::{atto, hdtach_between, AttoPoint, HdTach, Isolation, HDTACH_REQUEST};
use crate::workload::WorkloadError;

/// Simulated idle time between the protocol's steps (a reviewer starting
/// the next tool): queued background work drains, idle GC runs.
pub const IDLE_BETWEEN_STEPS_NS: u64 = 60_000_000_000;

/// Lets the drive (or array) sit idle between two steps.
pub fn pause<D: BlockDevice>(drive: &mut D) -> Result<(), StudyError>
where
    StudyError: From<D::Error>,
{
    let from = drive.now();
    drive.idle(from, from + IDLE_BETWEEN_STEPS_NS)?;
    Ok(())
}

/// What the fill and torture write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TortureData {
    /// fio-style data, 50 % of each 512 B zeros (lz4 keeps about 52 %).
    Compressible,
    /// Partly compressible data, 25 % zeros (lz4 keeps about 77 %).
    PseudoRandom,
    /// Random bytes: nothing to compress.
    Incompressible,
}

impl TortureData {
    /// The name the command line and the JSON use (`pseudo-random`).
    pub fn name(self) -> &'static str {
        match self {
            TortureData::Compressible => "compressible",
            TortureData::PseudoRandom => "pseudo-random",
            TortureData::Incompressible => "incompressible",
        }
    }

    /// The fio-style data spec.
    pub fn spec(self) -> DataSpec {
        let pct = match self {
            TortureData::Compressible => 50,
            TortureData::PseudoRandom => 25,
            TortureData::Incompressible => 0,
        };
        DataSpec::compressible(pct).expect("percentages are in range")
    }
}

/// How long the torture runs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Duration {
    /// Simulated minutes on the full-size drive; a scaled-down drive runs
    /// proportionally shorter so the same share of its LBA space is
    /// overwritten.
    Minutes(f64),
    /// Drive-writes of 4 KiB random writes.
    DriveWrites(f64),
}

/// Most simulated minutes of torture (`--minutes`, on the full-size drive):
/// about a week. At the 1.5 drive-writes per 20 minutes compressible data
/// gets on the SF-2281 (docs/sandforce-trim.md) that is some 750
/// drive-writes, near [`crate::lab::MAX_DRIVE_WRITES`]; the simulated clock (u64
/// nanoseconds, 584 years) keeps ample headroom.
pub const MAX_MINUTES: f64 = 10_000.0;

impl Duration {
    /// Checks the length, naming its flag: finite, not negative, at most
    /// [`MAX_MINUTES`] or [`crate::lab::MAX_DRIVE_WRITES`].
    pub fn validate(self) -> Result<(), StudyError> {
        match self {
            Duration::DriveWrites(x) => check_drive_writes("--drive-writes", x, true),
            Duration::Minutes(m) if !(m.is_finite() && m >= 0.0) => {
                Err(StudyError::BadSpec(format!("--minutes {m:?} must be a non-negative number")))
            }
            Duration::Minutes(m) if m > MAX_MINUTES => Err(StudyError::BadSpec(format!(
                "--minutes {m:?} is more than {MAX_MINUTES} simulated minutes (about a week), the most a torture \
                 takes (it would not finish)"
            ))),
            Duration::Minutes(_) => Ok(()),
        }
    }
}

/// Protocol settings.
#[derive(Clone, Debug, Serialize)]
pub struct TortureSpec {
    /// Data written by fill, torture and HD Tach write sweeps.
    pub data: TortureData,
    /// Torture length.
    pub duration: Duration,
    /// Torture queue depth.
    pub qd: u32,
    /// Share of the LBA span the random writes cover (from LBA 0; the
    /// protocol uses all of it).
    pub span: f64,
    /// HD Tach zones.
    pub zones: u32,
    /// Also run ATTO over this span at every state (on copies).
    pub atto_span: Option<u64>,
    /// Seed.
    pub seed: u64,
}

/// One measured state.
#[derive(Clone, Debug, Serialize)]
pub struct State {
    /// HD Tach average read MB/s.
    pub read_mbps: f64,
    /// HD Tach average write MB/s (on a copy).
    pub write_mbps: f64,
    /// Units mapped at this point.
    pub mapped_units: u64,
    /// The sweeps, zone by zone.
    pub hdtach: HdTach,
    /// ATTO at this state, when asked for.
    pub atto: Option<Vec<AttoPoint>>,
}

/// The protocol's result.
#[derive(Clone, Debug, Serialize)]
pub struct TortureReport {
    /// Firmware profile.
    pub firmware: String,
    /// Data written.
    pub data: TortureData,
    /// Drive-writes of random 4 KiB writes the torture did.
    pub drive_writes: f64,
    /// Simulated seconds of torture.
    pub torture_secs: f64,
    /// NAND bytes / host bytes over fill and torture.
    pub waf: f64,
    /// Units TRIM unmapped, first and second pass.
    pub trimmed_units: [u64; 2],
    /// Secure-erased drive.
    pub clean: State,
    /// After fill and torture.
    pub tortured: State,
    /// After the format TRIM.
    pub after_trim: State,
    /// After trimming everything again.
    pub after_second_trim: State,
    /// SMART attributes of the protocol's last state, taken before that
    /// pass's write sweep (the CLI adds them to JSON when asked).
    #[serde(skip)]
    pub smart: Smart,
}

/// TRIMs every LBA the way Windows does on a format: ranges of at most
/// 65535 sectors, 64 to a DSM command, commands one after another.
pub fn format_trim<D: BlockDevice>(drive: &mut D) -> Result<u64, StudyError>
where
    StudyError: From<D::Error>,
{
    let sectors = drive.capacity_bytes() / crate::units::SECTOR_BYTES;
    let ranges: Vec<(Lba, u64)> = (0..sectors.div_ceil(DSM_MAX_SECTORS))
        .map(|i| {
            let start = i * DSM_MAX_SECTORS;
            (Lba(start), (sectors - start).min(DSM_MAX_SECTORS))
        })
        .collect();
    let mut queue = HostQueue::new(1, drive.now());
    let mut unmapped = 0;
    for command in ranges.chunks(crate::host::DSM_ENTRIES_PER_COMMAND) {
        unmapped += drive.trim_on(command, &mut queue)?;
    }
    Ok(unmapped)
}

/// Runs the protocol on a drive built from `config`. `progress` gets the
/// phase name and the fraction of the whole run done.
pub fn torture(
    config: &DriveConfig,
    spec: &TortureSpec,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<TortureReport, StudyError> {
    torture_reusing(config, spec, Reuse::Encodings, progress)
}

/// Whether the write sweeps after the first reuse its encodings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reuse {
    /// Every sweep generates, compresses and hashes its bytes.
    Nothing,
    /// A metadata-only drive's later write sweeps play back the first
    /// one's encodings from a tape (the same bytes, so the same figures).
    Encodings,
}

/// The reviews' preparation of a secure-erased drive: a sequential fill
/// with `data`, then 4 KiB random writes of it at `qd` over the first
/// `span` of the LBAs for `duration` (a scale model runs the same share of
/// the minutes as it has of the full drive's LBAs). Returns the torture
/// job's result and the WAF over fill and torture; `progress` gets "fill"
/// or "torture" and that phase's fraction done.
#[allow(clippy::too_many_arguments)]
pub fn fill_and_torture(
    drive: &mut Drive,
    config: &DriveConfig,
    duration: Duration,
    qd: u32,
    span: f64,
    data: DataSpec,
    seed: u64,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<(JobResult, f64), StudyError> {
    duration.validate()?;
    let capacity = config.logical_bytes;
    let before = drive.stats();
    run_job(drive, &fill_spec(capacity, HDTACH_REQUEST, 32, data, unit_seed(seed, 10)), &mut |f| progress("fill", f))?;
    let limit = match duration {
        Duration::DriveWrites(x) => Limit::Ops((x * (capacity / 4096) as f64).round() as u64),
        Duration::Minutes(m) => {
            let full = DriveConfig::preset(&config.name).map_or(capacity, |p| p.logical_bytes).max(capacity);
            Limit::Time((m * 60e9 * capacity as f64 / full as f64) as u64)
        }
    };
    let job = JobSpec {
        name: "torture".into(),
        rw: Rw::RandWrite,
        bs: 4096,
        sizes: Default::default(),
        iodepth: qd,
        offset: 0,
        length: ((capacity as f64 * span.clamp(0.0, 1.0)) as u64 / 4096 * 4096).max(4096),
        limit,
        rwmixread: 0,
        distribution: Distribution::Random,
        data,
        seed: unit_seed(seed, 11),
    };
    let t = run_job(drive, &job, &mut |f| progress("torture", f))?;
    let after = drive.stats();
    let waf = (after.nand_bytes_programmed - before.nand_bytes_programmed) as f64
        / (after.host_write_bytes - before.host_write_bytes).max(1) as f64;
    Ok((t, waf))
}

/// [`torture`], saying whether the write sweeps reuse encodings.
pub fn torture_reusing(
    config: &DriveConfig,
    spec: &TortureSpec,
    reuse: Reuse,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<TortureReport, StudyError> {
    let mut drive = Drive::new(config.clone())?;
    let data = spec.data.spec();
    let capacity = config.logical_bytes;
    // The fill and the torture write content of their own, which the HD
    // Tach sweeps never deduplicate against. HD Tach itself writes the same
    // test pattern on every pass, so all four passes share one data seed
    // (pass 0's); each write sweep runs on a copy of its state, so no pass
    // finds another's data on the drive. ATTO keeps a seed per pass.
    let seed = unit_seed(spec.seed, 20);
    // What each write sweep writes is then the same, so a drive whose
    // sweeps store only metadata encodes it once (see `Tape`).
    let reusable = reuse == Reuse::Encodings && drive.needs_content() && config.media == Media::MetadataOnly;
    let mut tape = if reusable {
        static TAPES: AtomicU64 = AtomicU64::new(0);
        let n = TAPES.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("duraflash-hdtach-{}-{n}.tape", std::process::id()));
        Some(Tape::create(&path).map_err(|source| StudyError::Io { path, source })?)
    } else {
        None
    };
    // Pass `k` (0 clean .. 3 after the second TRIM) runs at `0.6 + 0.1 k`
    // of the whole protocol (clean at 0), its ATTO with a seed of its own.
    // What a pass reports of the drive (SMART included) is read between its
    // two sweeps, so the last pass writes on the drive itself: nothing reads
    // it after, and the copy is saved.
    let mut pass = |drive: &mut Drive,
                    name: &str,
                    k: u64,
                    progress: &mut dyn FnMut(&str, f64)|
     -> Result<(State, Smart), StudyError> {
        let at = if k == 0 { 0.0 } else { 0.5 + 0.1 * k as f64 };
        let isolation = if k == 3 { Isolation::Consume } else { Isolation::for_drive(drive) };
        let atto_seed = unit_seed(spec.seed, 20 + k);
        let between = |d: &Drive| -> Result<_, WorkloadError> {
            let atto = spec.atto_span.map(|span| atto(d, span, atto_seed, &mut |_| {})).transpose()?;
            let stats = d.stats();
            Ok((stats.mapped_units, atto, Smart::from_parts(d.config(), &stats, d.now())))
        };
        let (h, (mapped_units, atto, smart)) =
            hdtach_between(drive, spec.zones, data, seed, isolation, &mut tape, between, &mut |f| {
                progress(name, at + f * 0.1)
            })?;
        let state = State { read_mbps: h.read.avg_mbps, write_mbps: h.write.avg_mbps, mapped_units, hdtach: h, atto };
        Ok((state, smart))
    };
    let (clean, _) = pass(&mut drive, "hdtach clean", 0, progress)?;
    drive.secure_erase();
    let (t, waf) =
        fill_and_torture(&mut drive, config, spec.duration, spec.qd, spec.span, data, spec.seed, &mut |p, f| {
            progress(p, if p == "fill" { 0.1 + f * 0.1 } else { 0.2 + f * 0.4 })
        })?;
    pause(&mut drive)?;
    let (tortured, _) = pass(&mut drive, "hdtach tortured", 1, progress)?;
    let first = format_trim(&mut drive)?;
    pause(&mut drive)?;
    let (after_trim, _) = pass(&mut drive, "hdtach after TRIM", 2, progress)?;
    let second = format_trim(&mut drive)?;
    pause(&mut drive)?;
    let (after_second_trim, smart) = pass(&mut drive, "hdtach after 2nd TRIM", 3, progress)?;
    Ok(TortureReport {
        firmware: config.firmware.name.clone(),
        data: spec.data,
        drive_writes: t.write.io_bytes as f64 / capacity as f64,
        torture_secs: t.elapsed_ns as f64 / 1e9,
        waf,
        trimmed_units: [first, second],
        clean,
        tortured,
        after_trim,
        after_second_trim,
        smart,
    })
}

/// The HD Tach read and write charts of a protocol run (the four states
/// overlaid), with their file names: `hdtach-{read,write}-FIRMWARE-DATA.svg`.
pub fn hdtach_charts(drive_name: &str, r: &TortureReport) -> Vec<(String, LineChart)> {
    let gb = |o: u64| o as f64 / 1e9;
    let states = [
        ("clean", &r.clean),
        ("tortured", &r.tortured),
        ("after TRIM", &r.after_trim),
        ("after 2nd TRIM", &r.after_second_trim),
    ];
    [("read", true), ("write", false)]
        .into_iter()
        .map(|(dir, read)| {
            let series = states
                .iter()
                .map(|(name, s)| {
                    let sweep = if read { &s.hdtach.read } else { &s.hdtach.write };
                    Series {
                        name: (*name).into(),
                        points: sweep.zones.iter().map(|z| (gb(z.offset), z.mbps)).collect(),
                    }
                })
                .collect();
            let chart = LineChart {
                title: format!("HD Tach {dir}: {drive_name} firmware {}, {} data", r.firmware, r.data.name()),
                x_label: "position (GB)".into(),
                y_label: "MB/s".into(),
                series,
                y_from_zero: true,
                ..Default::default()
            };
            (format!("hdtach-{dir}-{}-{}.svg", r.firmware, r.data.name()), chart)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::TortureData;

    #[test]
    fn data_names_are_the_json_spellings() {
        for d in [TortureData::Compressible, TortureData::PseudoRandom, TortureData::Incompressible] {
            assert_eq!(serde_json::to_value(d).unwrap(), d.name(), "{d:?}");
        }
    }
}
