//! The memory estimate made from a config before anything is allocated,
//! against what a drive of that config holds once written to steady state
//! (its own count of heap bytes by structure), and a fio run's estimate,
//! which counts the job buffers it holds beside the drive.

use std::process::Command;

use duraflash::content::pattern::DataSpec;
use duraflash::device::memory::{MemoryEstimate, PROCESS_BYTES};
use duraflash::lab::wa::{run, WaSpec};
use duraflash::workload::access::{Access, Distribution, Rw};
use duraflash::workload::job::{GroupMemory, JobSpec, Limit};
use duraflash::{Drive, DriveConfig, Media};

/// Estimated and held bytes of one drive written to steady state.
fn estimate_and_held(media: Media, data: DataSpec) -> (u64, u64) {
    let mut cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(256 << 20).unwrap();
    cfg.media = media;
    let cfg = cfg.with_pages_per_block(16).unwrap();
    let estimate = MemoryEstimate::of(&cfg, 1).total() - PROCESS_BYTES;
    let mut drive = Drive::new(cfg).unwrap();
    let spec = WaSpec {
        access: Access::Uniform,
        request_bytes: 4096,
        data,
        trim_pct: 0,
        span: 1.0,
        precondition: 1.0,
        measure: 0.2,
    };
    run(&mut drive, &spec, 5, &mut |_, _| {}).unwrap();
    drive.check_invariants().unwrap();
    let f = drive.footprint();
    (estimate, f.metadata() + f.chunk_data)
}

fn assert_within(estimate: u64, held: u64, tolerance: f64, what: &str) {
    let ratio = estimate as f64 / held as f64;
    eprintln!("{what}: estimate {estimate} B, held {held} B, ratio {ratio:.3}");
    assert!((ratio - 1.0).abs() <= tolerance, "{what}: estimate {estimate} B, held {held} B, ratio {ratio:.3}");
}

#[test]
fn metadata_estimate_matches_a_steady_state_drive_with_compressible_data() {
    let (estimate, held) = estimate_and_held(Media::MetadataOnly, DataSpec::compressible(50).unwrap());
    assert_within(estimate, held, 0.15, "metadata-only, 50 % compressible");
}

#[test]
fn memory_media_estimate_covers_incompressible_data() {
    let (estimate, held) = estimate_and_held(Media::Memory, DataSpec::incompressible());
    assert_within(estimate, held, 0.05, "memory media, incompressible");
}

fn spec(rw: Rw, bs: u64, iodepth: u32) -> JobSpec {
    JobSpec {
        name: "j".into(),
        rw,
        bs,
        iodepth,
        offset: 0,
        length: 1 << 30,
        limit: Limit::Ops(1),
        rwmixread: 50,
        distribution: Distribution::Random,
        data: DataSpec::incompressible(),
        seed: 1,
    }
}

#[test]
fn job_write_buffers_grow_with_bs_and_numjobs_not_with_iodepth() {
    let buffers = |specs: &[JobSpec], content| GroupMemory::of(specs, content).write_buffers;
    // One job gathers up to 64 writes within 16 MiB, however deep its queue.
    for iodepth in [1, 32, 4096] {
        assert_eq!(buffers(&[spec(Rw::RandWrite, 4096, iodepth)], true), 64 * 4096, "iodepth {iodepth}");
    }
    assert_eq!(buffers(&[spec(Rw::Write, 1 << 20, 1)], true), 16 << 20);
    assert_eq!(buffers(&[spec(Rw::Write, 512 << 20, 1)], true), 512 << 20, "one request of a larger bs");
    // Jobs run together gather at most a queue-full each.
    let two = [spec(Rw::RandWrite, 4096, 4), spec(Rw::RandRw, 4096, 4)];
    assert_eq!(buffers(&two, true), 2 * 4 * 4096);
    // 16 clones of bs=512m: 8 GiB, which the estimate used to leave out.
    let clones = vec![spec(Rw::Write, 512 << 20, 1); 16];
    assert_eq!(buffers(&clones, true), 8 << 30);
    assert_eq!(buffers(&clones, false), 8 << 30, "a content-free drive shares one request a job");
    assert_eq!(buffers(&[spec(Rw::RandRead, 512 << 20, 1), spec(Rw::Trim, 4096, 1)], true), 0, "no writes, no buffer");
    // A queue holds a completion time for each command in flight.
    let deep = GroupMemory::of(&[JobSpec { limit: Limit::Time(1), ..spec(Rw::RandRead, 4096, 1 << 20) }], true);
    assert_eq!(deep.queues, 16 << 20);
    assert_eq!(GroupMemory::of(&[spec(Rw::RandRead, 4096, 1 << 20)], true).queues, 16, "one command, one slot");
}

#[test]
fn a_fio_run_whose_job_buffers_do_not_fit_is_refused_naming_bs_and_numjobs() {
    let dir = std::env::temp_dir().join(format!("duraflash-run-memory-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let run = |rw: &str| {
        let job = dir.join(format!("{rw}.fio"));
        std::fs::write(&job, format!("[j]\nrw={rw}\nbs=512m\nnumjobs=16\nsize=100%\nnumber_ios=1\n")).unwrap();
        // Under an address-space limit: a regression aborts (exit 134)
        // instead of taking 8 GiB.
        let script = format!("ulimit -v 4000000; exec \"$0\" run {} --capacity 1GiB --quiet", job.display());
        Command::new("sh").args(["-c", &script, env!("CARGO_BIN_EXE_duraflash")]).output().unwrap()
    };
    let out = run("write");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    for needle in ["write.fio: the run needs an estimated", "job write buffers 8.00 GiB", "grows with bs, numjobs"] {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
    // Reads hold no write buffer: the same clones reading fit.
    let out = run("read");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(dir).unwrap();
}
