//! fio's `verify` through the drive: every checksum fio offers (but its
//! sha256 and sha512, which are not the standard digests) written, read back and checked through
//! compression, dedup and GC; a block changed behind a job's back found
//! and named; the verify phase timed apart from the writes, as fio times
//! it. That fio itself accepts these bytes, and that we accept fio's, is
//! in `nbd_clients.rs`.

use std::process::{Command, Output};

/// `duraflash run` of the job file `text` on a small drive.
fn run(text: &str, extra: &[&str]) -> Output {
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let job = std::env::temp_dir().join(format!("duraflash-verify-{}-{n}.fio", std::process::id()));
    std::fs::write(&job, text).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_duraflash"))
        .args(["run", job.to_str().unwrap(), "--capacity", "64MiB", "--quiet", "--output-format=json"])
        .args(extra)
        .output()
        .unwrap();
    std::fs::remove_file(&job).unwrap();
    out
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

const CHECKSUMS: [&str; 16] = [
    "md5",
    "crc64",
    "crc32",
    "crc32c",
    "crc32c-intel",
    "crc16",
    "crc7",
    "sha1",
    "sha3-224",
    "sha3-256",
    "sha3-384",
    "sha3-512",
    "xxhash",
    "meta",
    "null",
    "pattern",
];

/// Each checksum in a job of its own, all at once on a drive they fill
/// twice, so GC moves their blocks: every block reads back whole.
#[test]
fn every_checksum_reads_back_what_it_wrote_through_gc() {
    let mut text = String::from("[global]\nrw=randwrite\nbs=4k\nsize=4m\niodepth=8\nloops=2\n");
    for (k, c) in CHECKSUMS.iter().enumerate() {
        let pattern = if *c == "pattern" { "verify_pattern=\"fio\"0x5a\n" } else { "" };
        text += &format!("[{c}]\nverify={c}\n{pattern}offset={}m\n", 4 * k);
    }
    let v = json(&run(&text, &["--op", "7%", "--pages-per-block", "16"]));
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), CHECKSUMS.len());
    for j in jobs {
        let (read, write) = (&j["read"], &j["write"]);
        // Two passes of 1,024 blocks, the last read back.
        assert_eq!(write["total_ios"], 2048, "{}", j["jobname"]);
        assert_eq!(read["total_ios"], 1024, "{}", j["jobname"]);
        assert_eq!(j["error"], 0);
    }
    assert!(v["drive"]["gc_relocated_chunks"].as_u64().unwrap() > 0, "GC moved blocks: {}", v["drive"]);
}

/// Blocks overwritten without headers and TRIMmed after a verifying
/// write: a later job that verifies its reads names the first, counts
/// them all and fails the run (exit 1); with `verify_fatal` it stops at
/// the first.
#[test]
fn blocks_changed_behind_the_job_fail_it_by_name() {
    let text = "[global]\nbs=4k\nsize=1m\n\
                [w]\nrw=write\nverify=crc32c\ndo_verify=0\n\
                [over]\nstonewall\nrw=write\noffset=256k\nsize=8k\n\
                [t]\nstonewall\nrw=trim\noffset=512k\nsize=4k\n\
                [check]\nstonewall\nrw=read\nverify=crc32c\n";
    let out = run(text, &[]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("job 'check': verify: 3 of 256 blocks read back bad; the first: verify: bad magic header"),
        "{err}"
    );
    assert!(err.contains("at offset 262144, length 4096"), "{err}");
    let fatal = run(&text.replace("[check]\n", "[check]\nverify_fatal=1\n"), &[]);
    assert_eq!(fatal.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&fatal.stderr).contains("verify: 1 of 65 blocks read back bad"));
    // Untouched, the same blocks verify.
    let clean = run(&text.replace("rw=write\noffset", "rw=read\noffset").replace("rw=trim", "rw=read"), &[]);
    assert_eq!(json(&clean)["jobs"][3]["read"]["total_ios"], 256);
}

/// A job that writes and verifies reads its writes back once they are
/// done: fio reports the reads over that phase and the writes over theirs,
/// and a mixed job reads throughout.
#[test]
fn the_verify_phase_is_timed_apart_from_the_writes() {
    let v = json(&run("[j]\nrw=randwrite\nbs=4k\nsize=4m\niodepth=4\nverify=crc32c\n", &[]));
    let j = &v["jobs"][0];
    let (read, write) = (&j["read"], &j["write"]);
    assert_eq!((read["io_bytes"].as_u64(), write["io_bytes"].as_u64()), (Some(4 << 20), Some(4 << 20)));
    let (r, w, whole) =
        (read["runtime"].as_u64().unwrap(), write["runtime"].as_u64().unwrap(), j["job_runtime"].as_u64().unwrap());
    assert!(r > 0 && w > 0 && r + w <= whole + 2 && r + w + 2 >= whole, "read {r} + write {w} ms of {whole}");
    // Without do_verify there is no phase; the writes take the whole time.
    let quiet = json(&run("[j]\nrw=randwrite\nbs=4k\nsize=4m\niodepth=4\nverify=crc32c\ndo_verify=0\n", &[]));
    assert_eq!(quiet["jobs"][0]["read"]["total_ios"], 0);
    assert_eq!(quiet["jobs"][0]["write"]["runtime"], quiet["jobs"][0]["job_runtime"]);
    // verify_backlog reads back while writing: every 16 writes, 8 of the
    // unverified ones, the rest at the end, each once (fio's counts).
    let backlog =
        "[j]\nrw=randwrite\nbs=4k\nsize=4m\niodepth=4\nverify=crc32c\nverify_backlog=16\nverify_backlog_batch=8\n";
    let b = &json(&run(backlog, &[]))["jobs"][0];
    assert_eq!((b["read"]["total_ios"].as_u64(), b["write"]["total_ios"].as_u64()), (Some(1024), Some(1024)));
    assert_eq!(b["read"]["runtime"], b["job_runtime"], "reads throughout the job");
    // verify_only issues no writes, and reads back what they would have written.
    let text = "[j]\nrw=write\nbs=4k\nsize=1m\nverify=md5\n[again]\nstonewall\nrw=write\nbs=4k\nsize=1m\nverify=md5\nverify_only\n";
    let only = json(&run(text, &[]));
    assert_eq!(only["jobs"][1]["write"]["total_ios"], 0);
    assert_eq!(only["jobs"][1]["read"]["total_ios"], 256);
}

/// Options fio refuses, or that the model cannot honour, are usage errors
/// naming the option (exit 2).
#[test]
fn bad_verify_options_are_refused_by_name() {
    let refused = |text: &str, extra: &[&str], what: &str| {
        let out = run(text, extra);
        assert_eq!(out.status.code(), Some(2), "{text}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(what), "{text}: {err}");
    };
    refused("[j]\nrw=write\nsize=1m\nverify=sha256\n", &[], "verify=sha256 is not implemented");
    refused("[j]\nrw=write\nsize=1m\nverify=crc99\n", &[], "unknown verify method (expected 0, md5,");
    refused("[j]\nrw=write\nsize=1m\nverify=pattern\n", &[], "verify=pattern needs a verify_pattern");
    refused("[j]\nrw=write\nbs=512\nsize=1m\nverify=sha3-512\nverify_offset=440\n", &[], "'verify_offset'");
    refused("[j]\nrw=write\nsize=1m\nverify_interval=64\n", &[], "must be at least 80");
    refused(
        "[j]\nrw=write\nsize=1m\nverify=md5\ntime_based\nruntime=1\nverify_only\n",
        &[],
        "'verify_only': verify_only replays the writes",
    );
    refused("[j]\nrw=write\nsize=1m\nverify=md5\n", &["--media", "metadata-only"], "use --media memory");
}

/// fio's own verify examples run as written on a 256 MiB drive: the
/// whole device written and read back.
#[test]
fn fio_s_verify_examples_write_and_verify_the_whole_drive() {
    let example = |name: &str| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fio-examples/").to_string() + name;
        let out = Command::new(env!("CARGO_BIN_EXE_duraflash"))
            .args(["run", &path, "--capacity", "256MiB", "--quiet", "--output-format=json"])
            .output()
            .unwrap();
        json(&out)
    };
    let bytes = |j: &serde_json::Value, dir: &str| j[dir]["io_bytes"].as_u64();
    // Random 4 KiB writes over the device, then each read back (crc32c).
    let basic = &example("basic-verify.fio")["jobs"][0];
    assert_eq!((bytes(basic, "write"), bytes(basic, "read")), (Some(256 << 20), Some(256 << 20)));
    // 64 KiB writes with a header every 512 bytes, then a job that reads and checks them.
    let scan = example("surface-scan.fio");
    assert_eq!((bytes(&scan["jobs"][0], "write"), bytes(&scan["jobs"][1], "read")), (Some(256 << 20), Some(256 << 20)));
}
