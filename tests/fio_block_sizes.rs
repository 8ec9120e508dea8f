//! fio's block sizes as fio users give them: `bs` per direction, `bsrange`
//! and `bssplit`, and where `rw`'s offset modifier puts commands, each run
//! here and, where it is installed, under real fio (`--ioengine=null`)
//! with the same options.

mod tools;

use std::process::{Command, Output};

use duraflash::content::pattern::DataSpec;
use duraflash::workload::access::{Distribution, Rw};
use duraflash::workload::job::{run_job, JobSpec, Limit};
use duraflash::workload::sizes::{BlockSizes, SizeChoice};
use duraflash::{Drive, DriveConfig, Media};

fn duraflash(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_duraflash")).args(args).output().expect("binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Our JSON for job options `args` on a 64 MiB drive.
fn ours(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["run", "--capacity", "64MiB", "--quiet", "--output-format=json", "--name=j"];
    all.extend(args);
    let out = duraflash(&all);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Real fio's JSON for the same options, when fio is installed.
fn theirs(args: &[&str]) -> Option<serde_json::Value> {
    if !tools::have("fio", "fio") {
        return None;
    }
    let out = Command::new("fio")
        .current_dir(std::env::temp_dir())
        .args(["--ioengine=null", "--output-format=json", "--name=j"])
        .args(args)
        .output()
        .expect("fio runs");
    assert!(out.status.success(), "fio {args:?}: {}", stderr(&out));
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

/// Commands and bytes of reads and writes.
type Counts = [(u64, u64); 2];

/// Commands and bytes of reads and writes of the first job.
fn counts(v: &serde_json::Value) -> Counts {
    let dir = |d: &str| (v["jobs"][0][d]["total_ios"].as_u64().unwrap(), v["jobs"][0][d]["io_bytes"].as_u64().unwrap());
    [dir("read"), dir("write")]
}

/// Sizes per direction with fixed results make fio's commands exactly; a
/// split or a range makes fio's bytes, and commands within the spread of
/// fio's own draws (fio 3.33 over seeds 1 to 12: 758 to 832 commands for
/// the random split below, 663 to 686 for the range).
#[test]
fn block_sizes_make_the_io_fio_makes() {
    let exact: &[(&[&str], Counts)] = &[
        (&["--rw=write", "--bs=4k,64k", "--size=1m"], [(0, 0), (16, 1 << 20)]),
        (&["--rw=read", "--bs=4k,64k", "--size=1m"], [(256, 1 << 20), (0, 0)]),
        (&["--rw=write", "--bsrange=16k-16k", "--size=1m"], [(0, 0), (64, 1 << 20)]),
        (&["--rw=write", "--bssplit=8k/100", "--size=1m"], [(0, 0), (128, 1 << 20)]),
    ];
    for (args, want) in exact {
        assert_eq!(counts(&ours(args)), *want, "{args:?}");
        if let Some(fio) = theirs(args) {
            assert_eq!(counts(&fio), *want, "real fio, {args:?}");
        }
    }
    let spread: &[(&[&str], std::ops::Range<u64>)] = &[
        (&["--rw=write", "--bssplit=4k/50:64k/50", "--size=16m"], 420..550),
        (&["--rw=randwrite", "--bssplit=4k/50:64k/50", "--size=16m"], 650..950),
        (&["--rw=randwrite", "--bsrange=4k-64k", "--size=16m"], 580..780),
    ];
    for (args, commands) in spread {
        let v = ours(args);
        let [_, (n, bytes)] = counts(&v);
        assert_eq!(bytes, 16 << 20, "{args:?}: one pass is the region");
        assert!(commands.contains(&n), "{args:?}: {n} commands");
        // fio's random map: every block of the region once.
        assert_eq!(v["drive"]["mapped_units"], 4096, "{args:?}");
        if let Some(fio) = theirs(args) {
            let [_, (n, bytes)] = counts(&fio);
            assert_eq!(bytes, 16 << 20, "real fio, {args:?}");
            assert!(commands.contains(&n), "real fio, {args:?}: {n} commands");
        }
    }
}

/// `rw`'s offset modifier: a pass with holes ends at the region's end
/// (64 writes of 4 KiB 12 KiB apart in 1 MiB) unless that is the device's,
/// `io_size` makes more passes,
/// backward reads cover the region once, and `rw_sequencer=identical`
/// repeats each random offset; fio makes the same commands. Where commands
/// land is in `workload/sequence.rs`, as fio's `write_iolog` shows them.
/// A random run past the region's end ends the job, at a point that
/// depends on the draws (fio's own default run: 118 of 256).
#[test]
fn the_offset_modifier_makes_the_io_fio_makes() {
    // A region that ends before the device: here on 64 MiB, and fio's on
    // a 2 MiB file.
    assert_eq!(counts(&ours(&["--rw=write:12k", "--size=1m"])), [(0, 0), (64, 256 << 10)]);
    assert_eq!(counts(&ours(&["--rw=write:12k", "--size=1m", "--io_size=2m"])), [(0, 0), (512, 2 << 20)]);
    if tools::have("fio", "fio") {
        let file = std::env::temp_dir().join(format!("duraflash-holes-{}", std::process::id()));
        std::fs::write(&file, vec![0u8; 2 << 20]).unwrap();
        let out = Command::new("fio")
            .args(["--name=j", "--ioengine=psync", "--rw=write:12k", "--bs=4k", "--size=1m", "--output-format=json"])
            .arg(format!("--filename={}", file.display()))
            .current_dir(std::env::temp_dir())
            .output()
            .expect("fio runs");
        std::fs::remove_file(&file).unwrap();
        assert_eq!(counts(&serde_json::from_slice(&out.stdout).unwrap()), [(0, 0), (64, 256 << 10)], "real fio");
    }
    let exact: &[(&[&str], Counts)] = &[
        // A region to the device's end wraps: each offset four times.
        (&["--rw=write:12k", "--size=64m"], [(0, 0), (16384, 64 << 20)]),
        (&["--rw=read:-8k", "--size=1m"], [(256, 1 << 20), (0, 0)]),
        (&["--rw=read:-8k", "--size=512k", "--offset=256k"], [(128, 512 << 10), (0, 0)]),
        (&["--rw=randread:4", "--rw_sequencer=identical", "--size=1m"], [(256, 1 << 20), (0, 0)]),
    ];
    for (args, want) in exact {
        assert_eq!(counts(&ours(args)), *want, "{args:?}");
        if let Some(fio) = theirs(args) {
            assert_eq!(counts(&fio), *want, "real fio, {args:?}");
        }
    }
    // fio's own examples/backwards-read.fio: 128 MiB read backwards, 4 KiB at a time.
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/fio-examples/backwards-read.fio");
    let out = duraflash(&["run", example, "--capacity", "256MiB", "--quiet", "--output-format=json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(counts(&serde_json::from_slice(&out.stdout).unwrap()), [(32768, 128 << 20), (0, 0)]);
    let ends: Vec<u64> = (1..=6)
        .map(|seed| {
            let seed = format!("--randseed={seed}");
            counts(&ours(&["--rw=randread:4", "--size=1m", &seed]))[0].0
        })
        .collect();
    assert!(ends.iter().all(|&n| n <= 256) && ends.iter().any(|&n| n < 256), "{ends:?}");
    for (args, why) in [
        (&["--rw=write:6k", "--size=1m"][..], "multiple of (bs=4096)"),
        (&["--rw=write:8k", "--bsrange=4k-8k", "--size=1m"], "one block size"),
        (&["--rw=randread:x", "--size=1m"], "is not a count of commands"),
        (&["--rw=write", "--rw_sequencer=backwards", "--size=1m"], "sequential or identical"),
    ] {
        let mut all = vec!["run", "--capacity", "64MiB", "--quiet", "--name=j"];
        all.extend(args);
        let out = duraflash(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(stderr(&out).contains(why), "{args:?}: {}", stderr(&out));
    }
}

/// A split gives each size its share of the commands: 10 % of 4 KiB and
/// 90 % of 64 KiB average 58 KiB a command, here as in fio.
#[test]
fn a_split_gives_each_size_its_share_and_a_rate_counts_bytes() {
    let args = [
        "--rw=randwrite",
        "--bssplit=4k/10:64k/90",
        "--size=64m",
        "--io_size=1g",
        "--norandommap",
        "--number_ios=2000",
    ];
    let mean = |v: &serde_json::Value| {
        let [_, (n, bytes)] = counts(v);
        assert_eq!(n, 2000);
        bytes as f64 / n as f64 / 1024.0
    };
    let ours_mean = mean(&ours(&args));
    assert!((55.1..60.9).contains(&ours_mean), "{ours_mean} KiB a command");
    if let Some(fio) = theirs(&args) {
        let fio_mean = mean(&fio);
        assert!((55.1..60.9).contains(&fio_mean), "real fio: {fio_mean} KiB a command");
    }
    // rate= limits bytes a second, whatever each command's size.
    let v = ours(&["--rw=randwrite", "--bssplit=4k/50:64k/50", "--size=4m", "--rate=1m"]);
    let bw = v["jobs"][0]["write"]["bw_bytes"].as_f64().unwrap();
    assert!((1_000_000.0..1_100_000.0).contains(&bw), "{bw} B/s at rate=1m");
}

/// fio's job line names each direction's smallest and largest size.
#[test]
fn the_job_line_shows_each_directions_sizes_as_fio_does() {
    let args = ["--rw=randrw", "--bssplit=4k/50:64k/50,8k", "--size=4m"];
    let out = duraflash(&["run", "--capacity", "64MiB", "--quiet", "--name=j", args[0], args[1], args[2]]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let line = String::from_utf8(out.stdout).unwrap().lines().next().unwrap().to_string();
    let want = "bs=(R) 4096B-64.0KiB, (W) 8192B-8192B, (T) 8192B-8192B";
    assert!(line.contains(want), "{line}");
    if tools::have("fio", "fio") {
        let fio = Command::new("fio")
            .current_dir(std::env::temp_dir())
            .args(["--ioengine=null", "--name=j"])
            .args(args)
            .output()
            .expect("fio runs");
        let text = String::from_utf8(fio.stdout).unwrap();
        assert!(text.lines().next().unwrap().contains(want), "{text}");
    }
}

/// `blockalign` puts random offsets on its boundary and, as in fio, turns
/// the random map off with a warning: 256 writes of 4 KiB on 64 KiB
/// boundaries of 1 MiB map the 16 units at those boundaries and no other.
#[test]
fn blockalign_puts_offsets_on_its_boundary_without_the_map() {
    let args = ["--rw=randwrite", "--bs=4k", "--ba=64k", "--size=1m"];
    let mut all = vec!["run", "--capacity", "64MiB", "--output-format=json", "--name=j"];
    all.extend(args);
    let out = duraflash(&all);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("turns off the random map"), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(counts(&v), [(0, 0), (256, 1 << 20)]);
    assert_eq!(v["drive"]["mapped_units"], 16);
    // Sequential jobs ignore it, as fio does: one pass maps every unit.
    let v = ours(&["--rw=write", "--bs=4k", "--ba=64k", "--size=1m"]);
    assert_eq!(v["drive"]["mapped_units"], 256);
    if let Some(fio) = theirs(&args) {
        assert_eq!(counts(&fio), [(0, 0), (256, 1 << 20)], "real fio");
    }
}

/// Each direction's random offsets fall on its own smallest size, as in
/// fio: with 4 KiB reads and 64 KiB writes each write starts a 64 KiB
/// block, so the units written in a block are its first ones (a write
/// ends early at a unit a read covered this pass, fio's random map).
#[test]
fn writes_of_a_mix_fall_on_their_own_boundary() {
    let mut cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(64 << 20).unwrap();
    cfg.media = Media::Memory;
    let mut drive = Drive::new(cfg).unwrap();
    let spec = JobSpec {
        name: "mix".into(),
        rw: Rw::RandRw,
        bs: 4096,
        sizes: BlockSizes::per_direction([SizeChoice::Fixed(4096), SizeChoice::Fixed(65536), SizeChoice::Fixed(4096)]),
        iodepth: 4,
        offset: 0,
        length: 16 << 20,
        limit: Limit::Ops(200),
        rwmixread: 50,
        distribution: Distribution::Shuffled,
        data: DataSpec::compressible(50).unwrap(),
        seed: 7,
    };
    let result = run_job(&mut drive, &spec, &mut |_| {}).unwrap();
    assert!(result.write.io_bytes >= 50 << 16, "{} bytes written", result.write.io_bytes);
    let data = drive.read(duraflash::units::Lba(0), (16 << 20) / 512).unwrap();
    let mut whole = 0;
    for block in data.chunks(65536) {
        let written: Vec<bool> = block.chunks(4096).map(|u| u.iter().any(|&b| b != 0)).collect();
        let first = written.iter().take_while(|&&w| w).count();
        assert!(written[first..].iter().all(|&w| !w), "a write began inside a 64 KiB block: {written:?}");
        whole += usize::from(first == 16);
    }
    assert!(whole > 50, "most writes whole: {whole} blocks");
    drive.check_invariants().expect("invariants");
}

#[test]
fn bad_block_sizes_are_usage_errors_naming_the_option() {
    for (arg, needle) in [
        ("--bssplit=4k/60:8k/50", "more than 100"),
        ("--bssplit=4k/12.5:8k/", "whole percent"),
        ("--bs=4k,8k,16k,32k", "at most three"),
        ("--bs=4k-16k", "bsrange="),
        ("--bsrange=4k", "not a range"),
        ("--bssplit=4k/50:1000/50", "multiple of 512"),
        // Reads of 4 KiB, writes of 128 MiB in a 64 MiB region.
        ("--bs=4k,128m", "fits in the region"),
        ("--ba=1000", "multiple of 512"),
        ("--blockalign=128m", "blockalign"),
    ] {
        let out = duraflash(&["run", "--capacity", "64MiB", "--quiet", "--name=j", "--rw=randrw", "--size=64m", arg]);
        assert_eq!(out.status.code(), Some(2), "{arg}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{arg}: {}", stderr(&out));
    }
}

/// Writes of several sizes through the batch reach every unit: after two
/// passes a memory drive holds written data in each unit of the region
/// (none left unmapped or zero), and its invariants hold.
#[test]
fn writes_of_several_sizes_keep_their_bytes() {
    let mut cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(64 << 20).unwrap();
    cfg.media = Media::Memory;
    let mut drive = Drive::new(cfg).unwrap();
    let split = SizeChoice::Split(vec![(4096, 40), (12288, 30), (65536, 30)]);
    let spec = JobSpec {
        name: "split".into(),
        rw: Rw::RandWrite,
        bs: 4096,
        sizes: BlockSizes::per_direction([SizeChoice::Fixed(4096), split, SizeChoice::Fixed(4096)]),
        iodepth: 8,
        offset: 0,
        length: 16 << 20,
        limit: Limit::Bytes(32 << 20),
        rwmixread: 0,
        distribution: Distribution::Shuffled,
        data: DataSpec::compressible(50).unwrap(),
        seed: 3,
    };
    let result = run_job(&mut drive, &spec, &mut |_| {}).unwrap();
    assert_eq!(result.write.io_bytes, 32 << 20, "two passes over the region");
    drive.check_invariants().expect("invariants");
    assert_eq!(drive.stats().mapped_units, 4096);
    // Every written unit reads back as stored: nothing unmapped inside the region.
    let data = drive.read(duraflash::units::Lba(0), (16 << 20) / 512).unwrap();
    assert!(data.chunks(4096).all(|u| u.iter().any(|&b| b != 0)), "every unit was written");
}
