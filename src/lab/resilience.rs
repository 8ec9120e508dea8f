//! AnandTech's 2011 SandForce resilience protocol (the OCZ Vertex 3
//! reviews, 120 GB and 240 GB): secure erase -> AS-SSD sequential write
//! (clean) -> secure erase -> fill with incompressible data -> 4 KiB random
//! incompressible writes over the whole LBA span at QD 32 for 20 minutes ->
//! AS-SSD (tortured) -> TRIM every LBA -> AS-SSD (after TRIM) -> AS-SSD
//! again (the review's "second AS-SSD pass"). The 2012 Force GS review ran
//! it with 60 minutes of torture on firmware 5.0.2 and 5.0.3 and gave the
//! reads as well ([`ResilienceSpec::duration`] and the drive's firmware).
//!
//! AS-SSD's sequential test writes a 1 GB file in 16 MB requests, one at a
//! time, with incompressible data, reads it back the same way, and deletes
//! the file when it is done (Windows 7 then TRIMs its clusters). Here the
//! file sits at LBA 0, and each pass runs on the drive itself, as the
//! reviewer's did: a pass changes the state the next one meets. The HD
//! Tach protocol of the 2012 review is [`crate::lab::torture`]; this one
//! shares its steps (fill, torture job, format TRIM, idle pauses) and
//! differs in what measures.

use serde::Serialize;

use crate::config::DriveConfig;
use crate::content::pattern::{unit_seed, DataSpec};
use crate::device::Drive;
use crate::host::{BlockDevice, HostQueue};
use crate::lab::torture::{fill_and_torture, format_trim, pause, Duration};
use crate::lab::StudyError;
use crate::units::{Lba, SECTOR_BYTES};
use crate::workload::access::{Distribution, Rw};
use crate::workload::job::{run_job, JobSpec, Limit};

/// AS-SSD's sequential test file: 1 GB (AS-SSD's "1 GB", 2^30 bytes).
pub const AS_SSD_FILE_BYTES: u64 = 1 << 30;

/// AS-SSD's sequential request: 16 MB, one at a time.
pub const AS_SSD_REQUEST: u64 = 16 << 20;

/// Protocol settings.
#[derive(Clone, Debug, Serialize)]
pub struct ResilienceSpec {
    /// Torture length (the review: 20 minutes on the full-size drive).
    pub duration: Duration,
    /// Torture queue depth (the review: 32).
    pub qd: u32,
    /// AS-SSD's file size (the report keeps AS-SSD's 1 GiB, at most a
    /// quarter of a scale model: a file scaled with the drive would fit in
    /// the free blocks idle GC leaves).
    pub file_bytes: u64,
    /// Seed.
    pub seed: u64,
}

/// One AS-SSD sequential pass: decimal MB/s.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct AsSsd {
    /// Writing the file.
    pub write_mbps: f64,
    /// Reading it back.
    pub read_mbps: f64,
}

/// The protocol's result: AS-SSD sequential write and read at each state.
#[derive(Clone, Debug, Serialize)]
pub struct ResilienceReport {
    /// Preset the drive was built from.
    pub preset: String,
    /// Firmware profile.
    pub firmware: String,
    /// Drive-writes of 4 KiB random writes the torture did.
    pub drive_writes: f64,
    /// Simulated seconds of torture.
    pub torture_secs: f64,
    /// NAND bytes / host bytes over fill and torture.
    pub waf: f64,
    /// Bytes of AS-SSD's file.
    pub file_bytes: u64,
    /// Secure-erased drive.
    pub clean: AsSsd,
    /// After fill and torture.
    pub tortured: AsSsd,
    /// After the format TRIM.
    pub after_trim: AsSsd,
    /// The pass right after that one.
    pub second_after_trim: AsSsd,
    /// Free blocks when each of the four passes began.
    pub free_blocks: [u32; 4],
}

/// One AS-SSD sequential pass: the file written at LBA 0 in
/// [`AS_SSD_REQUEST`] requests at QD 1, read back the same way, then
/// deleted (TRIMmed).
pub fn as_ssd(drive: &mut Drive, file_bytes: u64, seed: u64) -> Result<AsSsd, StudyError> {
    let file = file_bytes.clamp(4096, drive.capacity_bytes()) / 4096 * 4096;
    let bs = AS_SSD_REQUEST.min(file);
    let write = JobSpec {
        name: "as-ssd seq".into(),
        rw: Rw::Write,
        bs,
        sizes: Default::default(),
        iodepth: 1,
        offset: 0,
        length: file / bs * bs,
        limit: Limit::Bytes(file / bs * bs),
        rwmixread: 0,
        distribution: Distribution::Random,
        data: DataSpec::incompressible(),
        seed,
    };
    let w = run_job(drive, &write, &mut |_| {})?;
    let read = JobSpec { name: "as-ssd seq read".into(), rw: Rw::Read, ..write.clone() };
    let r = run_job(drive, &read, &mut |_| {})?;
    let mut queue = HostQueue::new(1, drive.now());
    drive.trim_on(&[(Lba(0), write.length / SECTOR_BYTES)], &mut queue)?;
    Ok(AsSsd { write_mbps: w.write.bw_bytes / 1e6, read_mbps: r.read.bw_bytes / 1e6 })
}

/// Runs the protocol on a drive built from `config`. `progress` gets the
/// phase name and the fraction of the whole run done.
pub fn resilience(
    config: &DriveConfig,
    spec: &ResilienceSpec,
    progress: &mut dyn FnMut(&str, f64),
) -> Result<ResilienceReport, StudyError> {
    let mut drive = Drive::new(config.clone())?;
    let capacity = config.logical_bytes;
    let data = DataSpec::incompressible();
    let free = |d: &Drive| d.stats().free_blocks;
    let mut free_blocks = [0; 4];
    // AS-SSD writes fresh random data on every run: a seed per pass.
    let mut pass = |drive: &mut Drive, k: usize| -> Result<AsSsd, StudyError> {
        free_blocks[k] = free(drive);
        as_ssd(drive, spec.file_bytes, unit_seed(spec.seed, 30 + k as u64))
    };
    progress("as-ssd clean", 0.0);
    let clean = pass(&mut drive, 0)?;
    drive.secure_erase();
    let (t, waf) = fill_and_torture(&mut drive, config, spec.duration, spec.qd, 1.0, data, spec.seed, &mut |p, f| {
        progress(p, if p == "fill" { 0.05 + f * 0.15 } else { 0.2 + f * 0.7 })
    })?;
    pause(&mut drive)?;
    progress("as-ssd tortured", 0.9);
    let tortured = pass(&mut drive, 1)?;
    format_trim(&mut drive)?;
    pause(&mut drive)?;
    progress("as-ssd after TRIM", 0.95);
    let after_trim = pass(&mut drive, 2)?;
    pause(&mut drive)?;
    let second = pass(&mut drive, 3)?;
    drive.check_invariants()?;
    progress("done", 1.0);
    Ok(ResilienceReport {
        preset: config.name.clone(),
        firmware: config.firmware.name.clone(),
        drive_writes: t.write.io_bytes as f64 / capacity as f64,
        torture_secs: t.elapsed_ns as f64 / 1e9,
        waf,
        file_bytes: spec.file_bytes,
        clean,
        tortured,
        after_trim,
        second_after_trim: second,
        free_blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drive(capacity: u64) -> DriveConfig {
        let mut cfg = DriveConfig::preset("sf2281-120g").unwrap().scaled(capacity).unwrap();
        cfg.media = crate::Media::MetadataOnly;
        cfg
    }

    #[test]
    fn an_as_ssd_pass_deletes_its_file() {
        let mut d = Drive::new(drive(256 << 20)).unwrap();
        let pass = as_ssd(&mut d, 32 << 20, 1).unwrap();
        assert!(pass.write_mbps > 0.0 && pass.read_mbps > 0.0, "{pass:?}");
        assert_eq!(d.stats().mapped_units, 0, "the file is TRIMmed after the pass");
        d.check_invariants().unwrap();
    }

    /// The tortured pass is slow only when the file outgrows the free
    /// blocks GC left: the same torture with a file inside them keeps most
    /// of its clean speed. It still loses some: the dies' open blocks fill
    /// in lockstep and need fresh blocks at once, 16 here against the 8
    /// that idle GC keeps above the watermark, so a rollover during the
    /// file runs foreground GC (0.79 of clean at 8 MiB, 0.33 at 128 MiB).
    #[test]
    fn torture_costs_a_file_larger_than_the_free_blocks() {
        let cfg = drive(512 << 20);
        let run = |file| {
            let spec = ResilienceSpec { duration: Duration::DriveWrites(0.3), qd: 32, file_bytes: file, seed: 1 };
            resilience(&cfg, &spec, &mut |_, _| {}).unwrap()
        };
        let small = run(8 << 20);
        let large = run(128 << 20);
        let share = |r: &ResilienceReport| r.tortured.write_mbps / r.clean.write_mbps;
        assert!(share(&small) > 0.75, "{small:?}");
        assert!(share(&small) > 2.0 * share(&large), "{small:?}\n{large:?}");
        assert!(large.tortured.write_mbps < 0.6 * large.clean.write_mbps, "{large:?}");
        // TRIM restores the model at either size (the review's 120 GB drive
        // stayed at 0.63: a known disagreement).
        assert!(large.after_trim.write_mbps > 0.95 * large.clean.write_mbps, "{large:?}");
    }
}
