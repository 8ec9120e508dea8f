//! What fio's buffer options make a job write, against the bytes real fio
//! writes: how many distinct 4 KiB units, and how far lz4 shrinks them.
//! A compressing, deduplicating drive stores exactly that, so a fio user
//! who forgets `refill_buffers` or sets `buffer_pattern` sees here what
//! their SandForce drive saw. Also: the `${NAME}`s a job file takes from
//! the environment.

mod tools;

use std::collections::HashSet;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What a run wrote: units, distinct units, and the distinct units'
/// stored bytes (lz4's, or raw when lz4 does not shrink them) per raw byte.
#[derive(Debug)]
struct Written {
    units: u64,
    distinct: u64,
    stored: f64,
}

const JOB: [&str; 5] = ["--name=j", "--rw=write", "--bs=4k", "--size=4m", "--iodepth=4"];

fn ours(options: &[&str]) -> Written {
    let mut args = vec!["run", "--capacity", "256MiB", "--quiet", "--output-format=json"];
    args.extend(JOB);
    args.extend(options);
    let out = Command::new(env!("CARGO_BIN_EXE_duraflash")).args(&args).output().unwrap();
    assert!(out.status.success(), "{options:?}: {}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let d = &v["drive"];
    let field = |k: &str| d[k].as_u64().unwrap();
    Written {
        units: field("host_write_units"),
        distinct: field("new_chunks"),
        stored: field("new_stored_bytes") as f64 / field("new_raw_bytes") as f64,
    }
}

/// The same job run by fio (libaio, so `iodepth` buffers are in flight)
/// on a file, its bytes read back.
fn fios(options: &[&str]) -> Written {
    // Tests run side by side: each run its own file.
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, Ordering::Relaxed);
    let file = std::env::temp_dir().join(format!("duraflash-fio-buffers-{}-{run}", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let out = Command::new("fio")
        .args(JOB)
        .args(["--ioengine=libaio", "--output-format=terse", &format!("--filename={}", file.display())])
        .args(options)
        // fio leaves verify state files in its working directory.
        .current_dir(std::env::temp_dir())
        .output()
        .unwrap();
    assert!(out.status.success(), "fio {options:?}: {}", String::from_utf8_lossy(&out.stderr));
    let bytes = std::fs::read(&file).unwrap();
    std::fs::remove_file(&file).unwrap();
    let units: Vec<&[u8]> = bytes.chunks(4096).collect();
    let distinct: HashSet<&[u8]> = units.iter().copied().collect();
    let stored: usize = distinct.iter().map(|u| lz4_flex::block::compress(u).len().min(u.len())).sum();
    Written {
        units: units.len() as u64,
        distinct: distinct.len() as u64,
        stored: stored as f64 / (distinct.len() * 4096) as f64,
    }
}

/// Each combination: its options, the distinct units the mechanism gives
/// (of 1,024 written four deep), and whether lz4 shrinks them far.
const CASES: [(&[&str], u64, bool); 14] = [
    (&[], 1024, false),
    (&["--scramble_buffers=0"], 4, false),
    (&["--refill_buffers"], 1024, false),
    (&["--buffer_pattern=0xdeadbeef"], 1, true),
    (&["--buffer_pattern=0xdeadbeef", "--scramble_buffers=1"], 1024, true),
    (&["--buffer_pattern=\"fio\""], 1, true),
    (&["--zero_buffers"], 1, true),
    (&["--zero_buffers", "--scramble_buffers=1"], 1024, true),
    (&["--buffer_compress_percentage=100"], 1, true),
    (&["--buffer_compress_percentage=50"], 1024, false),
    (&["--buffer_compress_percentage=50", "--refill_buffers=0"], 4, false),
    // verify: every block gets a header of its own, over fresh data.
    (&["--verify=crc32c"], 1024, false),
    (&["--verify_pattern=0xdeadbeef"], 1024, true),
    (&["--verify=md5", "--verify_interval=512", "--buffer_compress_percentage=90", "--refill_buffers=0"], 1024, true),
];

#[test]
fn each_buffer_option_writes_what_fio_writes() {
    let fio = tools::have("fio", "fio");
    for (options, distinct, shrinks) in CASES {
        let ours = ours(options);
        assert_eq!((ours.units, ours.distinct), (1024, distinct), "{options:?}: {ours:?}");
        assert_eq!(ours.stored < 0.2, shrinks, "{options:?}: {ours:?}");
        if fio {
            let theirs = fios(options);
            eprintln!(
                "{options:?}: ours {} distinct at {:.4}, fio {} at {:.4}",
                ours.distinct, ours.stored, theirs.distinct, theirs.stored
            );
            assert_eq!((theirs.units, theirs.distinct), (ours.units, ours.distinct), "{options:?}: fio {theirs:?}");
            assert!((theirs.stored - ours.stored).abs() < 0.01, "{options:?}: fio {theirs:?}, ours {ours:?}");
        }
    }
}

/// A kept buffer is one a queue slot: without stamps, the distinct units
/// follow `iodepth`, as fio's do.
#[test]
fn kept_buffers_follow_the_queue_depth() {
    for depth in [1u64, 8, 32] {
        let depth_option = format!("--iodepth={depth}");
        let ours = ours(&["--scramble_buffers=0", &depth_option]);
        assert_eq!(ours.distinct, depth, "{ours:?}");
    }
    // A synchronous engine keeps one command, so one buffer, in flight (fio's
    // default engine, psync, is one).
    let psync = ours(&["--scramble_buffers=0", "--ioengine=psync"]);
    assert_eq!(psync.distinct, 1, "{psync:?}");
    if tools::have("fio", "fio") {
        assert_eq!(fios(&["--scramble_buffers=0", "--ioengine=psync"]).distinct, 1);
    }
    // Half the buffers repeat an earlier one: about half the units are new.
    let ours = ours(&["--dedupe_percentage=50"]);
    assert!((440..=584).contains(&ours.distinct), "{ours:?}");
}

/// `${NAME}` in a job file is the environment's, as in fio: a script
/// sets the size and block size, and an unset name is nothing.
#[test]
fn variables_in_a_job_file_come_from_the_environment() {
    let job = std::env::temp_dir().join(format!("duraflash-fio-env-{}.fio", std::process::id()));
    std::fs::write(&job, "[j]\nrw=${FIO_RW}\nbs=${FIO_BS}\nsize=${FIO_SIZE}${FIO_UNSET}\n").unwrap();
    let run = |rw: &str| {
        Command::new(env!("CARGO_BIN_EXE_duraflash"))
            .args(["run", job.to_str().unwrap(), "--capacity", "256MiB", "--quiet", "--output-format=json"])
            .env("FIO_RW", rw)
            .env("FIO_BS", "64k")
            .env("FIO_SIZE", "16m")
            .env_remove("FIO_UNSET")
            .output()
            .unwrap()
    };
    let out = run("write");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let write = &v["jobs"][0]["write"];
    assert_eq!((write["io_bytes"].as_u64(), write["total_ios"].as_u64()), (Some(16 << 20), Some(256)));
    let out = run("sideways");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("line 2") && err.contains("'sideways' for 'rw'"), "{err}");
    std::fs::remove_file(job).unwrap();
}

/// fio's `examples/dedupe-global.fio` at 16 MiB a job: two jobs writing
/// half duplicates of half compressible data, with and without one
/// working set shared between them. fio writes each job its own file;
/// here job b starts where a ends. The distinct units of both together
/// are fio's within 4 % (fio also fills its 256 buffers a job once before
/// refilling them, so a working set holds units no write carries).
#[test]
fn the_dedupe_global_example_stores_what_fio_writes() {
    let text =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fio-examples/dedupe-global.fio"))
            .unwrap()
            .replace("size=100m", "size=16m");
    let dir = std::env::temp_dir().join(format!("duraflash-dedupe-global-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for global in ["1", "0"] {
        let text = text.replace("dedupe_global=1", &format!("dedupe_global={global}"));
        let job = dir.join("ours.fio");
        std::fs::write(&job, text.replace("[b]", "[b]\noffset=16m")).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_duraflash"))
            .args(["run", job.to_str().unwrap(), "--capacity", "256MiB", "--quiet", "--output-format=json"])
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ours = v["drive"]["new_chunks"].as_u64().unwrap();
        assert_eq!(v["drive"]["host_write_units"], 8192);
        // Half the writes are duplicates: about half the units are new.
        assert!((3900..4500).contains(&ours), "dedupe_global={global}: {ours}");
        if tools::have("fio", "fio") {
            std::fs::write(dir.join("fio.fio"), &text).unwrap();
            let out =
                Command::new("fio").current_dir(&dir).args(["--output-format=terse", "fio.fio"]).output().unwrap();
            assert!(out.status.success(), "fio: {}", String::from_utf8_lossy(&out.stderr));
            let bytes = [std::fs::read(dir.join("a.0.0")).unwrap(), std::fs::read(dir.join("b.0.0")).unwrap()].concat();
            let theirs = bytes.chunks(4096).collect::<HashSet<_>>().len() as f64;
            assert!((ours as f64 / theirs - 1.0).abs() < 0.04, "dedupe_global={global}: ours {ours}, fio {theirs}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

/// fio reads into the buffer it writes from next, so a mixed job without
/// `refill_buffers` on a new drive writes back the zeros it read, stamped:
/// almost nothing for a compressing drive to store. With
/// `refill_buffers` it writes random bytes.
#[test]
fn a_mixed_job_writes_back_what_it_read_as_fio_does() {
    for (refill, compressible) in [(false, true), (true, false)] {
        let mut options = vec!["--rw=randrw"];
        options.extend(refill.then_some("--refill_buffers"));
        let ours = ours(&options);
        let stored_small = ours.stored < 0.2;
        assert_eq!(stored_small, compressible, "{options:?}: {ours:?}");
        if tools::have("fio", "fio") {
            let file = std::env::temp_dir().join(format!("duraflash-fio-mixed-{}-{refill}", std::process::id()));
            std::fs::write(&file, vec![0u8; 4 << 20]).unwrap();
            let out = Command::new("fio")
                .args(JOB)
                .args(["--ioengine=libaio", "--output-format=terse", &format!("--filename={}", file.display())])
                .args(&options)
                .output()
                .unwrap();
            assert!(out.status.success(), "fio: {}", String::from_utf8_lossy(&out.stderr));
            let bytes = std::fs::read(&file).unwrap();
            std::fs::remove_file(&file).unwrap();
            let written: Vec<&[u8]> = bytes.chunks(4096).filter(|u| u.iter().any(|&b| b != 0)).collect();
            let small = written.iter().filter(|u| lz4_flex::block::compress(u).len() < 800).count();
            // fio wrote about half the units; nearly all (or none) shrink far.
            assert!(written.len() > 400, "fio wrote {} units", written.len());
            let share = small as f64 / written.len() as f64;
            assert_eq!(share > 0.9, compressible, "{options:?}: fio {small} of {} shrink", written.len());
            assert_eq!(share < 0.1, !compressible, "{options:?}: fio {small} of {} shrink", written.len());
        }
    }
}
