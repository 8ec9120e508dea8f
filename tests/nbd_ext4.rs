//! `duraflash serve` under ext4: a filesystem made on an NBD export through
//! nbdfuse and a loop device, its files checked across a remount, and
//! `fstrim` reaching the drive (and both members of a RAID-0 export).
//!
//! The tests skip with a message where FUSE or loop devices do not work
//! (not root, no `/dev/fuse`, `losetup` failing), or fail under `CI`, and
//! tear everything down with `Drop` guards.

mod served;
mod tools;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use served::{content, run, Scratch, Served};
use tools::have;

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
