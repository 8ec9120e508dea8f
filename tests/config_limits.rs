//! Configurations no machine or model can hold, and input files larger
//! than any real one, are refused up front with exit 2 and one line naming
//! the flag, TOML field or file, never by an allocation abort or a
//! silently different drive; what a message echoes of a file is cut short.

use std::process::{Command, Output};

fn duraflash(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_duraflash")).args(args).output().expect("binary runs")
}

fn usage_error(out: &Output, needle: &str) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains(needle), "{needle:?} not in: {stderr}");
    stderr
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("duraflash-limits-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn tiny_job(dir: &std::path::Path) -> String {
    let path = dir.join("tiny.fio");
    std::fs::write(&path, "[job]\nrw=randwrite\nbs=4k\nsize=80k\n").unwrap();
    path.to_str().unwrap().to_owned()
}

#[test]
fn a_drive_over_the_memory_limit_is_refused_naming_estimate_and_settings() {
    let dir = scratch("memory");
    let job = tiny_job(&dir);
    let args = [
        "run",
        &job,
        "--capacity",
        "full",
        "--pages-per-block",
        "1",
        "--op",
        "1000%",
        "--media",
        "metadata-only",
        "--memory-limit",
        "4GiB",
    ];
    let e = usage_error(&duraflash(&args), "--pages-per-block");
    assert!(e.contains("needs an estimated") && e.contains("4.00 GiB limit of --memory-limit"), "{e}");
    // The same limit as an address-space rlimit: refused, not aborted.
    if cfg!(target_os = "linux") {
        let script = format!("ulimit -v 4194304; exec \"$0\" {}", args[..10].join(" "));
        let out = Command::new("sh").args(["-c", &script, env!("CARGO_BIN_EXE_duraflash")]).output().unwrap();
        let e = usage_error(&out, "ulimit -v");
        assert!(e.contains("--pages-per-block"), "{e}");
    }
    // A small drive under the same limit runs.
    let ok = duraflash(&["run", &job, "--capacity", "64MiB", "--memory-limit", "4GiB", "--quiet"]);
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn geometry_out_of_range_names_the_flag_or_the_toml_field() {
    usage_error(&duraflash(&["wa", "--pages-per-block", "4294967295"]), "--pages-per-block");
    usage_error(&duraflash(&["wa", "--capacity", "64MiB", "--op", "0.07"]), "--op");
    let dir = scratch("geometry");
    let path = dir.join("wide.toml");
    let toml = toml::to_string(&duraflash::DriveConfig::preset("sf2281-240g").unwrap()).unwrap();
    assert!(toml.contains("channels = 8"), "{toml}");
    std::fs::write(&path, toml.replace("channels = 8", "channels = 10000000")).unwrap();
    usage_error(&duraflash(&["wa", "--config", path.to_str().unwrap()]), "geometry.channels");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_library_drive_whose_tables_cannot_fit_the_machine_is_refused_not_aborted() {
    use duraflash::device::memory::{MemoryEstimate, MemoryLimit};
    use duraflash::{ConfigError, Drive, DriveConfig, Media};
    // The preset 64 times over (15.4 TB on 16 TiB of NAND): near the most
    // units the chunk ids can number.
    let mut cfg = DriveConfig::preset("sf2281-240g").unwrap();
    cfg.geometry.blocks_per_die *= 64;
    cfg.logical_bytes *= 64;
    cfg.media = Media::MetadataOnly;
    cfg.validate().expect("a valid config");
    let (Some(limit), estimate) = (MemoryLimit::installed(), MemoryEstimate::at_build(&cfg).total()) else {
        return; // no /proc/meminfo: nothing to check against
    };
    if estimate <= limit.bytes {
        eprintln!("this machine could build a 16 TiB drive's tables ({estimate} bytes): nothing to refuse");
        return;
    }
    match Drive::new(cfg) {
        Err(ConfigError::TooLarge(text)) => {
            assert!(text.contains("needs an estimated") && text.contains(limit.source), "{text}");
            assert!(text.contains("--capacity"), "names what it grows with: {text}");
        }
        Err(other) => panic!("refused for another reason: {other}"),
        Ok(_) => panic!("built a drive whose tables need {estimate} bytes on a machine of {}", limit.bytes),
    }
    // A small one still builds.
    Drive::new(DriveConfig::preset("sf2281-240g").unwrap().scaled(64 << 20).unwrap()).expect("a small drive");
}

/// `args` run under an address-space limit of 4 GiB, so a regression that
/// reads a device whole fails with a message instead of eating the machine.
fn duraflash_capped(args: &[&str]) -> Output {
    let script = format!("ulimit -v 4194304; exec \"$0\" {}", args.join(" "));
    Command::new("sh").args(["-c", &script, env!("CARGO_BIN_EXE_duraflash")]).output().unwrap()
}

#[test]
fn job_files_configs_and_reports_larger_than_any_real_one_are_refused_naming_the_file_and_the_cap() {
    let dir = scratch("inputs");
    let job = tiny_job(&dir);
    // A 2 GiB sparse job file is refused; /dev/zero below, which never
    // ends, shows it is not read whole.
    let sparse = dir.join("sparse.fio");
    std::fs::File::create(&sparse).unwrap().set_len(2 << 30).unwrap();
    let sparse = sparse.to_str().unwrap();
    let e = usage_error(&duraflash_capped(&["run", sparse, "--capacity", "64MiB"]), sparse);
    assert!(e.contains("more than the 1 MiB a fio job file may hold"), "{e}");
    if cfg!(target_os = "linux") {
        let e = usage_error(&duraflash_capped(&["run", "/dev/zero"]), "/dev/zero: more than the 1 MiB a fio job file");
        assert!(!e.contains("out of memory"), "{e}");
        usage_error(
            &duraflash_capped(&["run", &job, "--config", "/dev/zero"]),
            "--config /dev/zero: more than the 1 MiB a drive config may hold",
        );
        usage_error(
            &duraflash_capped(&["compare", "/dev/zero", &job]),
            "/dev/zero: more than the 64 MiB a reproduce results.json may hold",
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn corpora_sweep_results_and_traces_without_line_ends_are_refused_naming_the_file_and_the_cap() {
    let dir = scratch("data");
    // Sparse files: their sizes are refused before a byte is read.
    let corpus = dir.join("disk.img");
    std::fs::File::create(&corpus).unwrap().set_len(2 << 30).unwrap();
    let corpus = corpus.to_str().unwrap();
    usage_error(
        &duraflash_capped(&["corpus", corpus, "--capacity", "64MiB"]),
        &format!("{corpus}: more than the 1 GiB a corpus may hold"),
    );
    let one = dir.join("one");
    std::fs::create_dir_all(&one).unwrap();
    std::fs::File::create(one.join("point-0.json")).unwrap().set_len((64 << 20) + 1).unwrap();
    usage_error(
        &duraflash_capped(&["sweep", "--merge", one.to_str().unwrap()]),
        "point-0.json: more than the 64 MiB a sweep result may hold",
    );
    let many = dir.join("many");
    std::fs::create_dir_all(&many).unwrap();
    for i in 0..17 {
        std::fs::File::create(many.join(format!("point-{i}.json"))).unwrap().set_len(64 << 20).unwrap();
    }
    usage_error(
        &duraflash_capped(&["sweep", "--merge", many.to_str().unwrap()]),
        "the .json files hold more than the 1 GiB a merge reads",
    );
    if cfg!(target_os = "linux") {
        // It used to skip an endless first line for ever.
        usage_error(
            &duraflash_capped(&["replay", "/dev/zero", "--capacity", "64MiB"]),
            "/dev/zero: line 1: cannot read the trace: no line end in 16 MiB: not a text trace",
        );
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn echoed_values_are_cut_to_80_characters_with_control_characters_escaped() {
    let dir = scratch("echo");
    let cases = [
        // A line of NULs before any section, a long key, a value with a
        // terminal escape, a long [drive] preset.
        ("nul.fio", "\0".repeat(8000)),
        ("key.fio", format!("[job]\n{}=1\n", "k".repeat(8000))),
        ("value.fio", format!("[job]\nbs=4{}\n", "\u{1b}[31m".repeat(1000))),
        ("preset.fio", format!("[drive]\npreset={}\n[job]\nsize=1m\n", "p\u{7}".repeat(2000))),
    ];
    for (name, text) in cases {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        let e = usage_error(&duraflash(&["run", path.to_str().unwrap(), "--capacity", "64MiB"]), name);
        assert!(!e.trim_end().chars().any(char::is_control), "{name}: control characters in {e:?}");
        // What is echoed is cut; the list of fio's options an unknown key
        // gets (about 2 KB) is the tool's own text.
        let echoed = e.split(" (implemented:").next().unwrap_or(&e);
        assert!(e.contains('…') && echoed.len() < 2000, "{name}: {} bytes: {e}", echoed.len());
    }
    // A line longer than fio reads whole is refused by its length.
    let path = dir.join("long.fio");
    std::fs::write(&path, format!("[job]\nbs={}\n", "9".repeat(9000))).unwrap();
    usage_error(&duraflash(&["run", path.to_str().unwrap()]), "line 2: longer than 8192 bytes");
    // A TOML config's error is one line, the file's text cut too.
    let path = dir.join("key.toml");
    std::fs::write(&path, format!("{}\u{0} = 1\n", "x".repeat(100_000))).unwrap();
    let job = tiny_job(&dir);
    let e = usage_error(&duraflash(&["run", &job, "--config", path.to_str().unwrap()]), "line 1, column ");
    assert!(e.len() < 1000 && !e.trim_end().chars().any(char::is_control), "{e}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn every_timing_field_over_its_physical_bound_is_refused_naming_the_field() {
    let dir = scratch("timing");
    let job = tiny_job(&dir);
    let preset = duraflash::DriveConfig::preset("sf2281-240g").unwrap().scaled(64 << 20).unwrap();
    let toml = toml::to_string(&preset).unwrap();
    let fields = [
        "read_ns",
        "program_ns",
        "erase_ns",
        "channel_bytes_per_sec",
        "engine_bytes_per_sec",
        "encode_bytes_per_sec",
        "command_service_ns",
        "command_latency_ns",
        "trim_range_ns",
        "read_window",
        "read_piece_ns",
        "gc_lag_ns",
        "program_queue",
        "read_cache_pages",
    ];
    for field in fields {
        let line = toml.lines().find(|l| l.starts_with(&format!("{field} = "))).expect(field);
        // A count too large for its u32 is named by the TOML parser, one
        // that fits by the range check.
        let counts = ["read_window", "program_queue", "read_cache_pages"];
        let values =
            if counts.contains(&field) { &["1000000000000000000", "4294967295"][..] } else { &["1000000000000000000"] };
        for value in values {
            let path = dir.join(format!("{field}.toml"));
            std::fs::write(&path, toml.replace(line, &format!("{field} = {value}"))).unwrap();
            usage_error(&duraflash(&["run", &job, "--config", path.to_str().unwrap()]), &format!("timing.{field}"));
        }
    }
    // A command without firmware time would let a time_based TRIM job spin
    // with the clock standing still.
    let line = toml.lines().find(|l| l.starts_with("command_service_ns = ")).unwrap();
    let path = dir.join("instant.toml");
    std::fs::write(&path, toml.replace(line, "command_service_ns = 0")).unwrap();
    usage_error(&duraflash(&["run", &job, "--config", path.to_str().unwrap()]), "timing.command_service_ns");
    // At every bound a run's clock adds up: 1 s per command at QD 1.
    let most = [("program_ns", "1000000000"), ("erase_ns", "1000000000"), ("command_latency_ns", "1000000000")];
    let mut text = toml.clone();
    for (field, value) in most {
        let line = text.lines().find(|l| l.starts_with(&format!("{field} = "))).unwrap().to_owned();
        text = text.replace(&line, &format!("{field} = {value}"));
    }
    let path = dir.join("slowest.toml");
    std::fs::write(&path, text.replace("program_queue = 4", "program_queue = 1024")).unwrap();
    let out = duraflash(&["run", &job, "--config", path.to_str().unwrap(), "--json", "-", "--quiet"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let elapsed = v["jobs"][0]["elapsed_ns"].as_u64().unwrap() as f64 / 1e9;
    assert!((20.0..21.0).contains(&elapsed), "20 commands of 1 s latency each: {elapsed} s");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn the_clock_refuses_to_pass_292_years_rather_than_saturate() {
    use duraflash::units::SimTime;
    use duraflash::{Drive, DriveConfig, DriveError, Lba};
    let mut drive = Drive::new(DriveConfig::preset("sf2281-240g").unwrap().scaled(64 << 20).unwrap()).unwrap();
    drive.write(Lba(0), &[7; 4096]).unwrap();
    drive.idle(drive.now(), SimTime(SimTime::LIMIT.0 - 1_000)).unwrap();
    let e = drive.write(Lba(8), &[7; 4096]).unwrap_err();
    assert!(matches!(e, DriveError::ClockOverflow { .. }), "{e}");
    assert!(e.to_string().contains("292 years"), "{e}");
    assert!(drive.now() < SimTime::LIMIT, "the clock stops before the limit: {:?}", drive.now());
    assert!(matches!(drive.idle(drive.now(), SimTime(u64::MAX - 1)), Err(DriveError::ClockOverflow { .. })));
}
