//! The memory estimate made from a config before anything is allocated,
//! against what a drive of that config holds once written to steady state
//! (its own count of heap bytes by structure), and a fio run's estimate,
//! which counts the job buffers it holds beside the drive.

use std::process::Command;

use duraflash::content::buffers::Reuse;
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
        sizes: Default::default(),
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

/// fio without `refill_buffers` keeps a buffer a queue slot
/// ([`Reuse::Kept`]); a drive that takes no bytes never fills them.
#[test]
fn kept_write_buffers_grow_with_iodepth() {
    let kept = |iodepth| JobSpec {
        data: DataSpec::incompressible().with_reuse(Reuse::Kept { buffers: iodepth, scramble: true }),
        ..spec(Rw::RandWrite, 4096, iodepth)
    };
    for iodepth in [1, 32, 4096] {
        let batch = 64 * 4096;
        assert_eq!(GroupMemory::of(&[kept(iodepth)], true).write_buffers, batch + u64::from(iodepth) * 4096);
    }
    assert_eq!(GroupMemory::of(&[kept(32)], false).write_buffers, 4096, "content-free: one shared request");
    // A mixed job also holds a read on its way into a buffer.
    let mixed = JobSpec { rw: Rw::RandRw, ..kept(32) };
    assert_eq!(GroupMemory::of(&[mixed], true).write_buffers, 64 * 4096 + 33 * 4096);
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
    // Each clone's write batch and its kept buffer (fio's io_u, iodepth=1).
    for needle in
        ["write.fio: the run needs an estimated", "job write buffers 16.00 GiB", "grows with bs, iodepth, numjobs"]
    {
        assert!(stderr.contains(needle), "{needle:?} not in {stderr}");
    }
    // Reads hold no write buffer: the same clones reading fit.
    let out = run("read");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(dir).unwrap();
}

/// Peak resident bytes of `duraflash ARGS`, from the kernel's account of
/// the child (`wait4`), and whether it succeeded.
#[cfg(target_os = "linux")]
fn peak_resident(args: &[&str]) -> (bool, u64) {
    use std::process::Stdio;
    let child =
        Command::new(env!("CARGO_BIN_EXE_duraflash")).args(args).stdout(Stdio::null()).stderr(Stdio::null()).spawn();
    let pid = child.unwrap().id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: both out-pointers are valid locals; the child is ours and
    // not waited for elsewhere.
    #[allow(unsafe_code)]
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::wait4(pid, &mut status, 0, &mut usage), pid);
        usage
    };
    (libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0, usage.ru_maxrss as u64 * 1024)
}

/// A fio run of memory media stays within its estimate however the
/// pipeline's threads fall: with a malloc arena per thread, each chunk's
/// bytes came from the arena of the thread that stored them, and one run
/// in ten to one in three of this job (by how busy the machine was)
/// peaked at 1.8x the estimate, so eight runs catch that in most
/// test runs. Some runs still peak over the estimate by allocator slack
/// it does not count, more on a loaded machine: 18 % (354 MB against 300)
/// one run in forty alone, 26 % (378 MB) once in CI beside the other
/// tests. The bound leaves room for that, not for a second copy (80 %).
#[cfg(target_os = "linux")]
#[test]
fn a_memory_media_run_stays_within_its_estimate_run_after_run() {
    let job = [
        "run",
        "--capacity",
        "256MiB",
        "--quiet",
        "--name=f",
        "--rw=write",
        "--bs=1m",
        "--name=r",
        "--stonewall",
        "--rw=randwrite",
        "--bs=4k",
        "--numjobs=4",
        "--iodepth=32",
    ];
    let refused = Command::new(env!("CARGO_BIN_EXE_duraflash")).args(job).args(["--memory-limit", "1MiB"]).output();
    let stderr = String::from_utf8_lossy(&refused.unwrap().stderr).into_owned();
    let estimate = stderr
        .split("needs an estimated ")
        .nth(1)
        .and_then(|rest| {
            let mut words = rest.split_whitespace();
            let n: f64 = words.next()?.parse().ok()?;
            let unit = match words.next()? {
                "MiB" => 1u64 << 20,
                "GiB" => 1 << 30,
                _ => return None,
            };
            Some((n * unit as f64) as u64)
        })
        .unwrap_or_else(|| panic!("no estimate in {stderr}"));
    for run in 0..8 {
        let (ok, peak) = peak_resident(&job);
        assert!(ok, "run {run} failed");
        assert!(peak as f64 <= 1.5 * estimate as f64, "run {run}: peak {peak} bytes resident, estimate {estimate}");
    }
}
