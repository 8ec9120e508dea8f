//! `duraflash serve` driven by real NBD clients: qemu-io, qemu-img,
//! nbdinfo, nbdcopy and fio's nbd engine (ext4 through nbdfuse is in
//! `nbd_ext4.rs`). Each test starts the real binary on ports it binds itself (port
//! 0) and reads them from its first stderr line: ports picked by the test
//! and bound later could be taken in between by a server another test
//! started, whose NBD port this test would then reach.
//!
//! A missing tool skips its test with a message naming the Debian
//! package, unless `CI` is set: then it fails (`.ci/run` installs them).

mod served;
mod tools;

use std::process::{Command, Output};
use std::time::Duration;

use served::{content, run, Scratch, Served};
use tools::have;

#[test]
fn qemu_io_writes_discards_zeroes_and_flushes() {
    if !have("qemu-io", "qemu-utils") {
        return;
    }
    let served = Served::start("64MiB");
    let ops = [
        "write -P 0xab 0 1M",
        "discard 64k 128k",
        "read -P 0xab 0 64k",
        "read -P 0 64k 128k",
        "read -P 0xab 192k 832k",
        "write -P 0x5a 100 1000",
        "read -P 0x5a 100 1000",
        "read -P 0xab 0 100",
        "read -P 0xab 1100 1000",
        "write -z 1M 256k",
        "write -z -u 2M 512k",
        "read -P 0 1M 2M",
        "flush",
    ];
    let mut cmd = Command::new("qemu-io");
    cmd.args(["-f", "raw", &served.uri()]);
    for op in ops {
        cmd.args(["-c", op]);
    }
    let out = run(&mut cmd);
    let text = String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(!text.contains("failed") && !text.contains("error"), "qemu-io reported a failure:\n{text}");
    let m = served.metrics();
    // 128 KiB discarded = 32 units; `write -z -u` lands on never-written
    // units, so it unmaps nothing and maps nothing.
    assert_eq!(m["duraflash_host_trim_units_total"], 32.0, "discard reached the drive as TRIM");
    assert!(m["duraflash_nbd_requests_total{command=\"write_zeroes\"}"] >= 2.0);
    assert!(m["duraflash_nbd_requests_total{command=\"flush\"}"] >= 1.0);
    // 1 MiB of 0xab minus the discarded 128 KiB, plus the zeros written by `write -z` (no unmap).
    assert_eq!(m["duraflash_mapped_units"], 256.0 - 32.0 + 64.0);
    let report = served.stop();
    assert_eq!(report["invariants"], "ok");
}

#[test]
fn qemu_img_convert_then_compare_matches_and_detects_a_change() {
    if !have("qemu-img", "qemu-utils") || !have("qemu-io", "qemu-utils") {
        return;
    }
    let served = Served::start("64MiB");
    let dir = Scratch::new("convert");
    let src = dir.path("src.img");
    std::fs::write(&src, content(6 << 20, 7)).expect("source image");
    let src = src.to_str().expect("utf-8 path");
    run(Command::new("qemu-img").args(["convert", "-n", "-f", "raw", "-O", "raw", src, &served.uri()]));
    // The export is larger than the file: compare checks the rest reads as zeros.
    run(Command::new("qemu-img").args(["compare", "-f", "raw", "-F", "raw", src, &served.uri()]));
    run(Command::new("qemu-io").args(["-f", "raw", &served.uri(), "-c", "write -P 0x11 3M 512"]));
    let out = Command::new("qemu-img").args(["compare", "-f", "raw", "-F", "raw", src, &served.uri()]).output();
    assert_eq!(out.expect("qemu-img runs").status.code(), Some(1), "a changed sector is reported as a difference");
    assert_eq!(served.stop()["invariants"], "ok");
}

#[test]
fn nbdinfo_reports_size_capabilities_and_trimmed_holes() {
    if !have("nbdinfo", "libnbd-bin") || !have("nbdcopy", "libnbd-bin") || !have("qemu-io", "qemu-utils") {
        return;
    }
    let served = Served::start_with("64MiB", "0.05");
    let out = run(Command::new("nbdinfo").args(["--json", &served.uri()]));
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).expect("nbdinfo --json");
    let export = &info["exports"][0];
    assert_eq!(export["export-size"], 64u64 << 20);
    for cap in ["can_trim", "can_flush", "can_zero", "can_fua", "can_multi_conn"] {
        assert_eq!(export[cap], true, "{cap}");
    }
    assert_eq!(export["is_read_only"], false);
    assert_eq!(info["structured"], true);

    run(Command::new("qemu-io").args([
        "-f",
        "raw",
        &served.uri(),
        "-c",
        "write -P 0x33 0 1M",
        "-c",
        "discard 256k 256k",
    ]));
    let out = run(Command::new("nbdinfo").args(["--map", "--json", &served.uri()]));
    let map: serde_json::Value = serde_json::from_slice(&out.stdout).expect("nbdinfo --map --json");
    let extents: Vec<(u64, u64, u64)> = map
        .as_array()
        .expect("extent list")
        .iter()
        .map(|e| {
            (e["offset"].as_u64().unwrap_or(0), e["length"].as_u64().unwrap_or(0), e["type"].as_u64().unwrap_or(9))
        })
        .collect();
    let hole_zero = 3;
    assert_eq!(
        extents,
        vec![
            (0, 256 << 10, 0),
            (256 << 10, 256 << 10, hole_zero),
            (512 << 10, 512 << 10, 0),
            (1 << 20, 63 << 20, hole_zero)
        ],
        "data, trimmed hole, data, never-written hole"
    );
    std::thread::sleep(Duration::from_millis(100));
    let (report, stderr) = served.stop_with_stderr();
    assert_eq!(report["invariants"], "ok");
    let line = stderr.lines().find(|l| l.starts_with("serve: sim")).unwrap_or_else(|| panic!("no summary: {stderr}"));
    for field in ["host W", "NAND", "WAF", "compression", "dedup", "free blocks"] {
        assert!(line.contains(field), "summary line lacks {field}: {line}");
    }
}

#[test]
fn nbdcopy_both_ways_keeps_checksums_over_several_connections() {
    if !have("nbdcopy", "libnbd-bin") {
        return;
    }
    let size = 24usize << 20;
    let served = Served::start("24MiB");
    let dir = Scratch::new("nbdcopy");
    let (src, back) = (dir.path("src.img"), dir.path("back.img"));
    let data = content(size, 11);
    std::fs::write(&src, &data).expect("source image");
    let (src, back_s) = (src.to_str().expect("utf-8"), back.to_str().expect("utf-8"));
    run(Command::new("nbdcopy").args(["--connections=4", src, &served.uri()]));
    run(Command::new("nbdcopy").args(["--connections=4", &served.uri(), back_s]));
    let copied = std::fs::read(&back).expect("copied image");
    assert_eq!(copied.len(), size);
    assert_eq!(blake3::hash(&copied), blake3::hash(&data), "checksums differ after the round trip");
    let report = served.stop();
    assert!(report["served"]["connections"].as_u64().unwrap_or(0) >= 4, "nbdcopy used several connections");
    assert_eq!(report["invariants"], "ok");
}

/// Parses fio's JSON output (fio may print a line before it).
fn fio_json(out: &Output) -> serde_json::Value {
    let text = String::from_utf8_lossy(&out.stdout);
    let start = text.find('{').unwrap_or(0);
    serde_json::from_str(&text[start..]).unwrap_or_else(|e| panic!("fio JSON: {e}\n{text}"))
}

/// User + system CPU seconds of process `pid` so far.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the parenthesised command name; utime and stime are the 14th and 15th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}

/// fio writes at iodepth 32 with compressible, partly duplicate buffers:
/// the drive measures the compression and dedup fio generated. fio's
/// `verify` stamps a unique header into every block (which defeats
/// dedup), so verification runs as its own pass over a second region.
#[test]
fn fio_randwrite_qd32_ratios_verify_and_randtrim() {
    if !have("fio", "fio") {
        return;
    }
    let served = Served::start("256MiB");
    let uri = served.uri();
    let fio = |args: &[&str]| {
        let mut cmd = Command::new("fio");
        cmd.args(["--ioengine=nbd", &format!("--uri={uri}"), "--output-format=json", "--bs=4k", "--iodepth=32"]);
        cmd.args(["--buffer_compress_percentage=50", "--refill_buffers"]).args(args);
        // fio writes verify state files into its working directory.
        cmd.current_dir(std::env::temp_dir());
        let json = fio_json(&run(&mut cmd));
        let job = &json["jobs"][0];
        assert_eq!(job["error"], 0, "fio reported an error: {job}");
        job.clone()
    };
    let (cpu0, requests0) =
        (cpu_seconds(served.pid()), served.metric("duraflash_nbd_requests_total{command=\"write\"}"));
    let job = fio(&["--name=ratios", "--rw=randwrite", "--size=64m", "--dedupe_percentage=30"]);
    let cpu = cpu_seconds(served.pid()) - cpu0;
    let m = served.metrics();
    let requests = m["duraflash_nbd_requests_total{command=\"write\"}"] - requests0;
    let iops = job["write"]["iops"].as_f64().unwrap_or(0.0);
    eprintln!(
        "fio randwrite 4k qd32: {iops:.0} IOPS; server CPU {cpu:.2} s for {requests} requests = {:.1} us/request",
        cpu * 1e6 / requests.max(1.0)
    );
    assert_eq!(requests, 16384.0, "every 4 KiB of 64 MiB written once");
    // fio zeroes 50% of each 512-byte segment and repeats 30% of its blocks.
    let compression = m["duraflash_compression_ratio"];
    let dedup = m["duraflash_dedup_ratio"];
    assert!((compression - 0.5).abs() < 0.05, "compression {compression} vs fio's 50%");
    assert!((dedup - 0.7).abs() < 0.03, "dedup {dedup} vs fio's 30% duplicates");

    let job = fio(&["--name=verify", "--rw=randwrite", "--size=64m", "--offset=64m", "--verify=crc32c"]);
    assert_eq!(job["read"]["total_ios"], 16384, "every block verified");
    assert_eq!(served.metric("duraflash_mapped_units"), 32768.0);
    fio(&["--name=trim", "--rw=randtrim", "--bs=64k", "--size=128m"]);
    let m = served.metrics();
    assert_eq!(m["duraflash_mapped_units"], 0.0, "randtrim over everything written unmaps every unit");
    assert_eq!(m["duraflash_live_chunks"], 0.0, "no chunk keeps a reference");
    let report = served.stop();
    assert_eq!(report["invariants"], "ok");
    assert_eq!(report["served"]["errors"], 0);
    // Every served command went through the simulated queue.
    let latency = &report["latency"];
    assert_eq!(latency["write"]["N"], 32768);
    assert_eq!(latency["read"]["N"], 16384);
    assert_eq!(latency["trim"]["N"], 2048);
    assert!(
        latency["write"]["percentile"]["99.000000"].as_u64().unwrap_or(0) > 0,
        "simulated time advanced: {latency}"
    );
    assert!(report["sim_seconds"].as_f64().unwrap_or(0.0) > 0.0);
}

/// fio's verify cases: each a job of its own at its own MiB, in fio's
/// command-line syntax, which `duraflash run` shares.
const VERIFY_CASES: [&[&str]; 21] = [
    &["--verify=crc32c"],
    &["--verify=crc32"],
    &["--verify=crc64"],
    &["--verify=crc16"],
    &["--verify=crc7"],
    &["--verify=md5"],
    &["--verify=sha1"],
    &["--verify=sha3-224"],
    &["--verify=sha3-256"],
    &["--verify=sha3-384"],
    &["--verify=sha3-512"],
    &["--verify=xxhash"],
    &["--verify=meta"],
    &["--verify_pattern=0xdeadbeef"],
    &["--verify=pattern", "--verify_pattern=0xdeadbeef01"],
    &["--verify=meta", "--verify_pattern=\"abc\""],
    &["--verify=md5", "--verify_interval=512"],
    &["--verify=crc32c", "--verify_offset=100"],
    &["--verify=sha1", "--verify_interval=1k", "--verify_offset=200"],
    &["--verify=crc32c", "--buffer_compress_percentage=50"],
    &["--verify=xxhash", "--bs=512"],
];

/// The verify jobs as options: shared ones, then each case as a job, and
/// `extra` for every job.
fn verify_jobs(extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = ["--rw=randwrite", "--bs=4k", "--size=1m", "--iodepth=4"].map(String::from).to_vec();
    for (k, case) in VERIFY_CASES.iter().enumerate() {
        args.extend([format!("--name=v{k}"), format!("--offset={k}m")]);
        args.extend(case.iter().chain(extra).map(|s| s.to_string()));
    }
    args
}

/// Real fio verifies every block a verifying `duraflash run` wrote (its
/// headers and checksums are fio's, byte for byte), and `duraflash run`
/// verifies what fio wrote: each of fio's methods but sha256 and sha512.
#[test]
fn fio_and_duraflash_verify_each_other_s_blocks() {
    if !have("fio", "fio") {
        return;
    }
    let dir = Scratch::new("verify");
    let (ours, theirs) = (dir.path("ours.img"), dir.path("theirs.img"));
    let duraflash = |image: &std::path::Path, extra: &[&str]| {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_duraflash"));
        cmd.args(["run", "--quiet", "--capacity", "64MiB", "--output-format=json", "--image"]).arg(image);
        fio_json(&run(cmd.args(verify_jobs(extra))))
    };
    let fio = |image: &std::path::Path, extra: &[&str]| {
        let served = Served::start_args(&["--capacity", "64MiB", "--image", image.to_str().unwrap()]);
        let mut cmd = Command::new("fio");
        cmd.args(["--ioengine=nbd", &format!("--uri={}", served.uri()), "--output-format=json"]);
        cmd.args(verify_jobs(extra)).current_dir(std::env::temp_dir());
        let out = cmd.output().expect("fio runs");
        assert_eq!(served.stop()["invariants"], "ok");
        (out.status.success(), fio_json(&out))
    };
    let blocks = |job: &serde_json::Value| job["read"]["io_bytes"].as_u64().unwrap_or(0) / 4096;
    let written = duraflash(&ours, &[]);
    let (ok, checked) = fio(&ours, &["--verify_only"]);
    for (job, case) in checked["jobs"].as_array().unwrap().iter().zip(VERIFY_CASES) {
        assert_eq!((job["error"].as_u64(), blocks(job)), (Some(0), 256), "fio verifying our {case:?}: {job}");
    }
    assert!(ok);
    assert_eq!(written["jobs"][0]["read"]["total_ios"], 256, "we read back what we wrote, too");
    // fio's check is real: our crc32c blocks are not md5 ones.
    let (ok, wrong) = fio(&ours, &["--verify_only", "--verify=md5"]);
    assert!(!ok && wrong["jobs"][0]["error"] == 84, "fio finds md5 where crc32c was written: {}", wrong["jobs"][0]);

    let (ok, _) = fio(&theirs, &["--do_verify=0"]);
    assert!(ok, "fio writes");
    let checked = duraflash(&theirs, &["--verify_only"]);
    for (job, case) in checked["jobs"].as_array().unwrap().iter().zip(VERIFY_CASES) {
        assert_eq!((job["write"]["total_ios"].as_u64(), blocks(job)), (Some(0), 256), "we verify fio's {case:?}");
    }
    // A job that only reads checks every read, as fio's does.
    let read = duraflash(&theirs, &["--rw=read"]);
    assert!(read["jobs"].as_array().unwrap().iter().all(|j| blocks(j) == 256 && j["write"]["total_ios"] == 0));
}

/// RAID flags of `serve` are checked before anything is served: exit 2,
/// one line naming the flag.
#[test]
fn serve_refuses_bad_array_flags_with_one_line() {
    let dir = Scratch::new("array-flags");
    let image = dir.path("never.img");
    let image_arg = image.to_str().expect("utf-8 path");
    let cases: [(&[&str], &str); 6] = [
        (&["--members", "2", "--level", "0", "--driver", "rst-11.2", "--image", image_arg], "--image"),
        (&["--members", "2", "--driver", "rst-11.2"], "--level"),
        (&["--members", "2", "--level", "0"], "--driver"),
        (&["--level", "0"], "--members 2"),
        (&["--members", "3", "--level", "10", "--driver", "passthrough"], "even"),
        (&["--members", "2", "--level", "0", "--driver", "rst-11.2", "--stripe", "6k"], "--stripe"),
    ];
    for (args, needle) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_duraflash"))
            .arg("serve")
            .args(args)
            .args(["--capacity", "64MiB", "--listen", "127.0.0.1:0"])
            .output()
            .expect("binary runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?} printed more than one line: {err}");
        assert!(err.contains(needle), "{args:?}: '{err}' does not mention {needle}");
        assert!(!image.exists(), "no image was written");
    }
}
