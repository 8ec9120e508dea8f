//! `duraflash serve` driven by real NBD clients: qemu-io, qemu-img,
//! nbdinfo, nbdcopy, fio's nbd engine, and ext4 through nbdfuse + a loop
//! device. Each test starts the real binary on ports it binds itself (port
//! 0) and reads them from its first stderr line: ports picked by the test
//! and bound later could be taken in between by a server another test
//! started, whose NBD port this test would then reach.
//!
//! A missing tool skips its test with a message naming the Debian
//! package, unless `CI` is set: then it fails (`.ci/run` installs them).

mod tools;
use tools::have;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A running `duraflash serve`, stopped (killed if need be) on drop.
struct Served {
    child: Option<Child>,
    /// Its stderr past the lines already read (`early`).
    stderr: BufReader<ChildStderr>,
    early: String,
    port: u16,
    metrics_port: u16,
}

/// The port after `scheme://127.0.0.1:` in `line`.
fn port_in(line: &str, scheme: &str) -> Option<u16> {
    let rest = &line[line.find(&format!("{scheme}://127.0.0.1:"))? + scheme.len() + 13..];
    rest[..rest.find('/')?].parse().ok()
}

impl Served {
    fn start(capacity: &str) -> Self {
        Self::start_with(capacity, "0")
    }

    /// A server printing its summary line every `stats_interval` seconds.
    fn start_with(capacity: &str, stats_interval: &str) -> Self {
        Self::start_args(&["--capacity", capacity, "--stats-interval", stats_interval])
    }

    /// A server started with `args` (and ports of its own).
    fn start_args(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_duraflash"))
            .arg("serve")
            .args(args)
            .args(["--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("duraflash serve starts");
        let stderr = BufReader::new(child.stderr.take().expect("stderr piped"));
        // Dropped (so killed and waited for) on any failure below.
        let mut served = Served { child: Some(child), stderr, early: String::new(), port: 0, metrics_port: 0 };
        // Both ports are bound, and accepting, once this line is printed.
        loop {
            let at = served.early.len();
            let n = served.stderr.read_line(&mut served.early).expect("server stderr");
            assert!(n > 0, "server exited before serving: {}", served.early);
            let line = &served.early[at..];
            if line.contains("serving") {
                served.port = port_in(line, "nbd").unwrap_or_else(|| panic!("no NBD port in {line:?}"));
                served.metrics_port = port_in(line, "http").unwrap_or_else(|| panic!("no metrics port in {line:?}"));
                return served;
            }
        }
    }

    fn uri(&self) -> String {
        format!("nbd://127.0.0.1:{}/duraflash", self.port)
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or_default()
    }

    /// The `/metrics` exposition as name (with labels) -> value.
    fn metrics(&self) -> HashMap<String, f64> {
        let mut s = TcpStream::connect(("127.0.0.1", self.metrics_port)).expect("metrics port");
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").expect("request");
        let mut text = String::new();
        s.read_to_string(&mut text).expect("response");
        assert!(text.starts_with("HTTP/1.0 200"), "metrics answer: {text}");
        text.lines()
            .filter(|l| l.starts_with("duraflash_"))
            .filter_map(|l| l.rsplit_once(' ').and_then(|(k, v)| Some((k.to_string(), v.parse().ok()?))))
            .collect()
    }

    fn metric(&self, name: &str) -> f64 {
        self.metrics().get(name).copied().unwrap_or_else(|| panic!("no metric {name}"))
    }

    /// SIGTERM, then the final JSON report.
    fn stop(self) -> serde_json::Value {
        self.stop_with_stderr().0
    }

    /// SIGTERM, then the final JSON report and what the server printed on stderr.
    fn stop_with_stderr(mut self) -> (serde_json::Value, String) {
        let child = self.child.take().expect("running");
        let status = Command::new("sh").args(["-c", &format!("kill -TERM {}", child.id())]).status();
        assert!(status.is_ok_and(|s| s.success()), "kill -TERM");
        let out = child.wait_with_output().expect("server exits");
        let mut stderr = std::mem::take(&mut self.early);
        self.stderr.read_to_string(&mut stderr).expect("server stderr");
        assert!(out.status.success(), "serve exit status {:?}: {stderr}", out.status);
        let report = serde_json::from_slice(&out.stdout).expect("final report is JSON");
        (report, stderr)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs a command, failing the test with its output unless it succeeds.
fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A scratch directory removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("duraflash-nbd-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `len` bytes mixing random, text-like and zero regions (seeded).
fn content(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        match (out.len() / 65536) % 3 {
            0 => out.extend_from_slice(&x.to_le_bytes()),
            1 => out.extend_from_slice(b"duraflash "),
            _ => out.extend_from_slice(&[0u8; 8]),
        }
    }
    out.truncate(len);
    out
}

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

/// Undoes the ext4 stack in reverse order, whatever happened.
#[derive(Default)]
struct Ext4Stack {
    mount: Option<PathBuf>,
    loop_dev: Option<String>,
    fuse_dir: Option<PathBuf>,
    nbdfuse: Option<Child>,
}

impl Ext4Stack {
    fn unmount(&mut self) {
        if let Some(m) = self.mount.take() {
            let ok = Command::new("umount").arg(&m).status().is_ok_and(|s| s.success());
            if !ok {
                let _ = Command::new("umount").arg("-l").arg(&m).status();
            }
        }
    }
}

impl Drop for Ext4Stack {
    fn drop(&mut self) {
        self.unmount();
        if let Some(dev) = self.loop_dev.take() {
            let _ = Command::new("losetup").args(["-d", &dev]).status();
        }
        if let Some(dir) = self.fuse_dir.take() {
            let _ = Command::new("fusermount3").arg("-u").arg(&dir).status();
        }
        if let Some(mut child) = self.nbdfuse.take() {
            let deadline = Instant::now() + Duration::from_secs(5);
            while !matches!(child.try_wait(), Ok(Some(_))) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Why this machine cannot stack FUSE and a loop device, if it cannot.
fn ext4_unavailable() -> Option<String> {
    let uid = Command::new("id").arg("-u").output().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if uid.ok().as_deref() != Some("0") {
        return Some("needs root (losetup, mount)".into());
    }
    ["/dev/fuse", "/dev/loop-control"]
        .iter()
        .find(|p| !std::path::Path::new(p).exists())
        .map(|p| format!("{p} does not exist"))
}

/// A tree of files of mixed content: (relative path, bytes).
fn tree() -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = (0..240)
        .map(|i| (format!("d{}/f{i}.dat", i % 12), content(4096 + (i * 7919) % 61440, i as u64 + 100)))
        .collect();
    files.push(("big/blob.bin".into(), content(12 << 20, 5)));
    files
}

/// Whether the ext4 stack can run here: the tools (a missing one fails
/// under CI), root, FUSE and loop devices.
fn ext4_ready() -> bool {
    let tools = [
        ("nbdfuse", "nbdfuse"),
        ("fusermount3", "fuse3"),
        ("losetup", "mount"),
        ("mkfs.ext4", "e2fsprogs"),
        ("fstrim", "util-linux"),
    ];
    if !tools.iter().all(|(t, p)| have(t, p)) {
        return false;
    }
    if let Some(why) = ext4_unavailable() {
        eprintln!("skipping ext4 test: {why}; see README 'Serving the drive over NBD' for the recipe");
        return false;
    }
    true
}

/// The metrics at each step of [`ext4_round`].
struct Ext4Round {
    /// After the tree is copied and synced.
    full: HashMap<String, f64>,
    /// After half the small files and the big one are deleted.
    deleted: HashMap<String, f64>,
    /// After fstrim.
    trimmed: HashMap<String, f64>,
    /// Units the deleted files covered.
    deleted_units: f64,
}

/// ext4 on nbdfuse + loop over `served` (an export of `size` bytes):
/// mkfs (whose discard must reach the export as TRIM), a copied tree,
/// deletes, fstrim, and a remount after which every kept file reads back.
/// `None` when FUSE or the loop device turns out unusable (skipped).
fn ext4_round(served: &Served, size: u64) -> Option<Ext4Round> {
    let dir = Scratch::new(&format!("ext4-{}", served.port));
    let (fuse_dir, mnt) = (dir.path("fuse"), dir.path("mnt"));
    std::fs::create_dir_all(&fuse_dir).expect("fuse dir");
    std::fs::create_dir_all(&mnt).expect("mount point");
    let mut stack = Ext4Stack::default();
    let child = Command::new("nbdfuse").arg(&fuse_dir).arg(served.uri()).stderr(Stdio::null()).spawn();
    stack.nbdfuse = Some(child.expect("nbdfuse starts"));
    stack.fuse_dir = Some(fuse_dir.clone());
    let file = fuse_dir.join("nbd");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0) != size {
        if Instant::now() > deadline {
            eprintln!("skipping ext4 test: nbdfuse did not expose the export (FUSE unusable here)");
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = Command::new("losetup").args(["-f", "--show"]).arg(&file).output().expect("losetup runs");
    if !out.status.success() {
        eprintln!("skipping ext4 test: losetup failed: {}", String::from_utf8_lossy(&out.stderr).trim());
        return None;
    }
    let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
    stack.loop_dev = Some(dev.clone());

    let trims_before_mkfs = served.metric("duraflash_nbd_requests_total{command=\"trim\"}");
    run(Command::new("mkfs.ext4").args(["-q", "-F", &dev]));
    assert!(
        served.metric("duraflash_nbd_requests_total{command=\"trim\"}") > trims_before_mkfs,
        "mkfs.ext4's discard reached the drive as TRIM"
    );
    run(Command::new("mount").arg(&dev).arg(&mnt));
    stack.mount = Some(mnt.clone());
    let files = tree();
    for (name, data) in &files {
        let path = mnt.join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, data).expect("write file");
    }
    run(&mut Command::new("sync"));
    let full = served.metrics();
    // Delete half the small files and the big one.
    let (gone, kept): (Vec<_>, Vec<_>) =
        files.iter().enumerate().partition(|(i, (n, _))| i % 2 == 0 || n.starts_with("big"));
    for (_, (name, _)) in &gone {
        std::fs::remove_file(mnt.join(name)).expect("delete");
    }
    run(&mut Command::new("sync"));
    let deleted = served.metrics();
    run(Command::new("fstrim").arg(&mnt));
    let trimmed = served.metrics();
    let deleted_units = gone.iter().map(|(_, (_, d))| d.len().div_ceil(4096)).sum::<usize>() as f64;

    stack.unmount();
    run(Command::new("mount").arg(&dev).arg(&mnt));
    stack.mount = Some(mnt.clone());
    for (_, (name, data)) in &kept {
        let back = std::fs::read(mnt.join(name)).expect("read back");
        assert!(back == *data, "{name} changed across remount");
    }
    drop(stack);
    Some(Ext4Round { full, deleted, trimmed, deleted_units })
}

impl Ext4Round {
    /// What the filesystem did to the export as a whole: deleting alone
    /// unmaps nothing; fstrim unmaps the deleted files' units and drops the
    /// physical usage.
    fn check_fstrim_freed_units(&self) {
        let (units_full, live_full) = (self.full["duraflash_mapped_units"], self.full["duraflash_live_bytes"]);
        let units_deleted = self.deleted["duraflash_mapped_units"];
        let (units_trimmed, live_trimmed) =
            (self.trimmed["duraflash_mapped_units"], self.trimmed["duraflash_live_bytes"]);
        eprintln!(
            "ext4: mapped units {units_full} after copy, {units_deleted} after delete, {units_trimmed} after fstrim; \
             live bytes {live_full} -> {live_trimmed}"
        );
        assert!(units_deleted >= units_full - 16.0, "deleting alone does not unmap (no discard mount option)");
        assert!(units_trimmed <= units_deleted - 0.9 * self.deleted_units, "fstrim unmapped the deleted files' units");
        assert!(live_trimmed < live_full * 0.5, "physical usage dropped: {live_full} -> {live_trimmed}");
    }
}

/// ext4 on nbdfuse + loop: mkfs's discard, a copied tree, deletes, fstrim;
/// TRIM reaches the refcounts and what is left reads back after remount.
#[test]
fn ext4_on_nbdfuse_loop_fstrim_frees_units_and_files_survive_remount() {
    if !ext4_ready() {
        return;
    }
    let served = Served::start("128MiB");
    let Some(round) = ext4_round(&served, 128 << 20) else { return };
    round.check_fstrim_freed_units();
    assert_eq!(served.stop()["invariants"], "ok");
}

/// The same ext4 round on a RAID-0 of two SF-2281 members behind Intel
/// RST 11.2 (which passes RAID-0 TRIM): fstrim reaches both members'
/// reference counts, in the live metrics and in the final report.
#[test]
fn ext4_fstrim_on_a_raid0_export_reaches_both_members() {
    if !ext4_ready() {
        return;
    }
    let args = ["--preset", "sf2281-240g", "--capacity", "64MiB", "--stats-interval", "0"];
    let served = Served::start_args(&[&args[..], &["--members", "2", "--level", "0", "--driver", "rst-11.2"]].concat());
    let Some(round) = ext4_round(&served, 128 << 20) else { return };
    round.check_fstrim_freed_units();
    let member = |m: &HashMap<String, f64>, name: &str, i: usize| {
        let key = format!("duraflash_member_{name}{{member=\"{i}\"}}");
        m.get(&key).copied().unwrap_or_else(|| panic!("no metric {key}"))
    };
    let mut trimmed_by_fstrim = Vec::new();
    for i in 0..2 {
        let (deleted, trimmed) = (&round.deleted, &round.trimmed);
        let (units_deleted, units_trimmed) = (member(deleted, "mapped_units", i), member(trimmed, "mapped_units", i));
        let by_fstrim = member(trimmed, "host_trim_units_total", i) - member(deleted, "host_trim_units_total", i);
        eprintln!("member {i}: mapped units {units_deleted} -> {units_trimmed} after fstrim ({by_fstrim} trimmed)");
        assert!(units_trimmed < units_deleted, "fstrim lowered member {i}'s mapped units");
        assert!(by_fstrim > 0.0, "fstrim's TRIM reached member {i}");
        trimmed_by_fstrim.push(by_fstrim);
    }
    let total = round.trimmed["duraflash_host_trim_units_total"] - round.deleted["duraflash_host_trim_units_total"];
    assert_eq!(trimmed_by_fstrim.iter().sum::<f64>(), total, "the array's counters are its members' summed");
    let report = served.stop();
    assert_eq!(report["invariants"], "ok");
    assert_eq!(report["raid"]["layout"]["level"], "0");
    assert_eq!(report["raid"]["driver"], "rst-11.2");
    assert!(report.get("smart").is_none(), "an array has no SMART table of its own");
    let members = report["members"].as_array().expect("per-member report");
    assert_eq!(members.len(), 2);
    for (i, m) in members.iter().enumerate() {
        let stats = &m["stats"];
        let trims = stats["host_trim_units"].as_f64().unwrap_or(0.0);
        assert!(trims >= trimmed_by_fstrim[i], "member {i} reports its trimmed units: {stats}");
        // The remount writes a little metadata after fstrim; far less than fstrim unmapped.
        let mapped = stats["mapped_units"].as_f64().unwrap_or(f64::MAX);
        assert!(mapped < member(&round.deleted, "mapped_units", i), "member {i} reports fewer mapped units: {stats}");
        assert!(m["smart"]["attributes"].as_array().is_some_and(|a| !a.is_empty()), "member {i} has SMART");
    }
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
