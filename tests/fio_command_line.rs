//! fio's command line as fio users type it: jobs as options (`--name=j
//! --rw=randwrite --bs=4k`), `--section`, `--output-format` and `--output`,
//! each checked against real fio (`--ioengine=null`) where it is installed.

mod tools;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn duraflash(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_duraflash")).args(args).output().expect("binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("duraflash-fio-cmdline-{}-{name}", std::process::id()))
}

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name).to_str().unwrap().to_string()
}

/// The fio JSON reader's lines for `json`, without the first (the program).
fn read_like_fio_users(json: &Path) -> Vec<String> {
    let reader = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tools/fio_json_reader.py");
    let out = Command::new("python3").arg(reader).arg(json).output().expect("python3 runs");
    assert!(out.status.success(), "the reader failed on {}: {}", json.display(), stderr(&out));
    String::from_utf8(out.stdout).unwrap().lines().skip(1).map(str::to_string).collect()
}

/// Ours with `args` (after `run --capacity 64MiB --quiet`), JSON into a
/// file by fio's own flags: the reader's lines and the JSON.
fn ours(name: &str, args: &[&str]) -> (Vec<String>, serde_json::Value) {
    let json = temp(name);
    let output = format!("--output={}", json.display());
    let mut all = vec!["run", "--capacity", "64MiB", "--quiet", "--output-format=json", &output];
    all.extend(args);
    let out = duraflash(&all);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    let lines = read_like_fio_users(&json);
    let value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    std::fs::remove_file(json).unwrap();
    (lines, value)
}

/// Ours with `args` (after `run --capacity 64MiB --quiet`), fio's JSON on
/// stdout, without the reader.
fn ours_value(args: &[&str]) -> serde_json::Value {
    let mut all = vec!["run", "--capacity", "64MiB", "--quiet", "--output-format=json"];
    all.extend(args);
    let out = duraflash(&all);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Real fio's JSON for `args` (`--ioengine=null`) in the file `name`,
/// when fio is installed.
fn fio_json_file(name: &str, args: &[&str]) -> Option<PathBuf> {
    if !tools::have("fio", "fio") {
        return None;
    }
    let json = temp(name);
    let out = Command::new("fio")
        .current_dir(std::env::temp_dir())
        .args(["--ioengine=null", "--output-format=json", &format!("--output={}", json.display())])
        .args(args)
        .output()
        .expect("fio runs");
    assert!(out.status.success(), "fio {args:?}: {}", stderr(&out));
    Some(json)
}

/// Real fio's reader lines for `args`, when fio is installed.
fn fio(name: &str, args: &[&str]) -> Option<Vec<String>> {
    let json = fio_json_file(name, args)?;
    let lines = read_like_fio_users(&json);
    std::fs::remove_file(json).unwrap();
    Some(lines)
}

/// Real fio's JSON for `args`, when fio is installed.
fn fio_value(name: &str, args: &[&str]) -> Option<serde_json::Value> {
    let json = fio_json_file(name, args)?;
    let value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    std::fs::remove_file(json).unwrap();
    Some(value)
}

/// Options before the first `--name` are global, as in fio.
const JOB: [&str; 10] = [
    "--bs=4k",
    "--size=16m",
    "--randseed=7",
    "--name=w",
    "--rw=randwrite",
    "--iodepth=4",
    "--number_ios=500",
    "--name=r",
    "--rw=randread",
    "--number_ios=300",
];

#[test]
fn a_fio_command_line_runs_as_fio_runs_it_and_as_its_job_file() {
    let (lines, value) = ours("cmdline.json", &JOB);
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines.iter().all(|l| !l.contains("False")), "{lines:?}");
    if let Some(theirs) = fio("cmdline-fio.json", &JOB) {
        assert_eq!(lines, theirs, "the reader sees the same jobs from fio and from us");
    }
    // The job file the same options stand for runs the same jobs.
    let file = temp("cmdline.fio");
    let text = "[global]\nbs=4k\nsize=16m\nrandseed=7\n[w]\nrw=randwrite\niodepth=4\nnumber_ios=500\n\
                [r]\nrw=randread\nnumber_ios=300\n";
    std::fs::write(&file, text).unwrap();
    let (file_lines, file_value) = ours("file.json", &[file.to_str().unwrap()]);
    assert_eq!(file_lines, lines);
    assert_eq!(file_value["jobs"], value["jobs"], "the same numbers, option for option");
    assert_eq!(file_value["global options"], value["global options"]);
    assert_eq!(value["global options"]["bs"], "4k");
    std::fs::remove_file(file).unwrap();
}

#[test]
fn section_runs_only_the_named_sections_as_fio_does() {
    let groups = data("fio-compat-groups.fio");
    let (all, _) = ours("all.json", &[&groups]);
    let (readers, _) = ours("readers.json", &[&groups, "--section=readers"]);
    assert_eq!(all.len(), 3, "{all:?}");
    assert_eq!(readers, all[1..], "the two reader clones, as in the whole file");
    if let Some(theirs) = fio("readers-fio.json", &["--section=readers", &groups]) {
        assert_eq!(readers, theirs);
    }
    let out = duraflash(&["run", &groups, "--section=reader", "--quiet"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("--section=reader: no such job section (the file has: writers, readers)"));
}

#[test]
fn output_formats_and_files_go_where_fio_sends_them() {
    let base = ["run", "--capacity", "64MiB", "--quiet", "--name=j", "--rw=write", "--size=1m"];
    let with = |more: &[&str]| duraflash(&[&base[..], more].concat());
    // json: the JSON alone on stdout.
    let out = with(&["--output-format=json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is the JSON alone");
    assert_eq!(v["jobs"][0]["write"]["io_bytes"], 1 << 20);
    assert!(stderr(&out).is_empty(), "and no text, as fio: {}", stderr(&out));
    // json into --output: nothing on stdout.
    let json = temp("only.json");
    let out = with(&["--output-format=json", &format!("--output={}", json.display())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stdout.is_empty() && stderr(&out).is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    std::fs::remove_file(json).unwrap();
    // normal into --output: the summary in the file, nothing on stdout.
    let summary = temp("summary.txt");
    let out = with(&[&format!("--output={}", summary.display())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert!(std::fs::read_to_string(&summary).unwrap().starts_with("j: (g=0): rw=write, bs=(R) 4096B-4096B"));
    std::fs::remove_file(summary).unwrap();
    // normal and json: the JSON, then the summary, in the one place, as fio writes them.
    let both = temp("both.txt");
    let out = with(&["--output-format=normal,json", &format!("--output={}", both.display())]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stdout.is_empty(), "all in the file");
    for text in [std::fs::read(&both).unwrap(), with(&["--output-format=json,normal"]).stdout] {
        // fio's job lines come first, as fio writes them before the run.
        let at = text.windows(2).position(|w| w == b"\n{").expect("a JSON object") + 1;
        assert!(String::from_utf8_lossy(&text[..at]).starts_with("j: (g=0): rw=write"));
        let text = &text[at..];
        let mut values = serde_json::Deserializer::from_slice(text).into_iter::<serde_json::Value>();
        assert_eq!(values.next().unwrap().unwrap()["jobs"][0]["jobname"], "j");
        let rest = String::from_utf8_lossy(&text[values.byte_offset()..]).into_owned();
        assert!(rest.trim_start().starts_with("j: (groupid=0, jobs=1)"), "the summary follows the JSON: {rest}");
    }
    std::fs::remove_file(both).unwrap();
    for (more, says) in [
        (&["--output-format=csv"][..], "'csv': accepted: normal, json, json+, terse"),
        (&["--output-format=json", "--output=a.json", "--json", "b.json"], "--output and --json both"),
        // The text into a file the JSON would then overwrite.
        (&["--output=r.txt", "--json", "./r.txt"], "--output and --json both name r.txt"),
        (&["--bs=4q"], "command line: --bs=4q: bad value '4q' for 'bs'"),
        (&["--numjobs=100"], "command line: --numjobs=100: bad value"),
        (&["--verify_async", "4"], "command line: --verify_async=4: unsupported fio option 'verify_async'"),
        (&["--output-format=json", "--output=/nonexistent/r.json"], "--output /nonexistent/r.json: "),
        (&[data("fio-compat.fio").as_str()], "not both"),
        // Beside a job file, a key that is no fio option is named as a flag typo.
        (&[data("fio-compat.fio").as_str(), "--compress-pct", "50"], "--compress-pct=50: neither a flag of run"),
    ] {
        let out = with(more);
        assert_eq!(out.status.code(), Some(2), "{more:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{more:?}: {}", stderr(&out));
    }
    // --parse-only: checked, nothing run or written.
    let image = temp("parse-only.img");
    let out = with(&["--parse-only", "--image", image.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(out.stdout.is_empty() && !image.exists(), "nothing ran");
    let out = with(&["--parse-only", "--size=1g"]);
    assert_eq!(out.status.code(), Some(2), "a job past the drive is refused as a run would refuse it");
    assert!(stderr(&out).contains("--size=1g"), "{}", stderr(&out));
    for (args, says) in [
        (&["run", "--rw=write"][..], "need --name=NAME to start a job"),
        (&["run"], "no jobs: give a fio job file"),
        (&["run", "--capcity", "64MiB", "--name=j"], "a similar argument exists: '--capacity'"),
        (&["run", "/nonexistent/a.fio", "/nonexistent/b.fio"], "/nonexistent/a.fio: "),
    ] {
        let out = duraflash(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_benchmark_scripts_command_line_runs_as_written() {
    // The shape of fio lines in public benchmark scripts: values after a
    // space, `--blocksize`, progress and file options, json+ into a file.
    let json = temp("script.json");
    let line = format!(
        "run --capacity 256MiB --name seq_4k --directory /tmp --eta-newline=5s --rw=randwrite --size=16m \
         --io_size=32m --blocksize 4k --ioengine=libaio --fsync=1 --iodepth=1 --direct=1 --numjobs=4 \
         --group_reporting --stonewall --fallocate=native --eta never --output={} --output-format=json+",
        json.display()
    );
    let out = duraflash(&line.split_whitespace().collect::<Vec<_>>());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    std::fs::remove_file(json).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1, "four clones reported as one");
    assert_eq!(jobs[0]["jobname"], "seq_4k");
    assert_eq!(jobs[0]["write"]["io_bytes"], 4u64 * (32 << 20), "io_size per clone, as in fio");
    assert_eq!(jobs[0]["job options"]["bs"], serde_json::Value::Null, "given as blocksize");
    assert_eq!(jobs[0]["job options"]["blocksize"], "4k");
    let warned = stderr(&out);
    for key in ["directory", "ioengine", "fsync", "direct", "fallocate"] {
        assert!(warned.contains(&format!("command line: --{key}=")), "{key} warns, naming its argument: {warned}");
    }
    assert!(!warned.contains("group_reporting"), "implemented, so no warning: {warned}");
}

/// json+: fio's JSON with each completion latency's histogram bins, in
/// fio's bin scheme, read by fio's own json+ tool as it reads fio's.
#[test]
fn json_plus_carries_fios_latency_bins() {
    let json = temp("plus.json");
    let out = duraflash(&[
        "run",
        "--capacity",
        "64MiB",
        "--quiet",
        "--name=j",
        "--rw=randrw",
        "--bs=4k",
        "--size=8m",
        "--iodepth=8",
        "--output-format=json+",
        &format!("--output={}", json.display()),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains("warning"), "nothing to warn about: {}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    for dir in ["read", "write"] {
        let clat = &v["jobs"][0][dir]["clat_ns"];
        let bins = clat["bins"].as_object().unwrap_or_else(|| panic!("{dir}: {clat}"));
        let counted: u64 = bins.values().map(|n| n.as_u64().unwrap()).sum();
        assert_eq!(counted, clat["N"].as_u64().unwrap(), "{dir}: every command in a bin");
        let mut values: Vec<u64> = bins.keys().map(|k| k.parse().unwrap()).collect();
        values.sort_unstable();
        let (min, max) = (clat["min"].as_u64().unwrap(), clat["max"].as_u64().unwrap());
        assert!(values[0] <= min.max(1) * 65 / 64 && *values.last().unwrap() >= max * 63 / 64, "{dir}: {values:?}");
        assert!(v["jobs"][0][dir]["lat_ns"].get("bins").is_none(), "clat only, as fio");
    }
    assert!(v["jobs"][0]["trim"]["clat_ns"].get("bins").is_none(), "no commands, no bins, as fio");
    if tools::have("fio_jsonplus_clat2csv", "fio") {
        // The script fio ships for json+ (it needs python3-six).
        let csv = temp("plus.csv");
        let run = |more: &[&str]| {
            let out = Command::new("fio_jsonplus_clat2csv").arg(&json).arg(&csv).args(more).output().unwrap();
            assert!(out.status.success(), "fio_jsonplus_clat2csv {more:?}: {}", stderr(&out));
        };
        run(&[]);
        run(&["--validate"]);
        let table = temp("plus_job0.csv");
        let text = std::fs::read_to_string(&table).unwrap();
        // Columns: nsec, then count, cumulative and share for each of
        // slat, clat and lat of read, write and trim; clat is the second.
        for (dir, col) in [("read", 4), ("write", 13)] {
            let rows: Vec<Vec<String>> =
                text.lines().skip(1).map(|l| l.split(',').map(|f| f.trim().to_string()).collect()).collect();
            let filled: Vec<&Vec<String>> = rows.iter().filter(|r| !r[col].is_empty()).collect();
            let last = filled.last().unwrap_or_else(|| panic!("{dir}: no bins in {text}"));
            assert_eq!(last[col + 1].parse::<u64>().unwrap(), v["jobs"][0][dir]["clat_ns"]["N"].as_u64().unwrap());
            assert_eq!(last[col + 2].parse::<f64>().unwrap(), 1.0, "{dir}: every command counted");
        }
        std::fs::remove_file(table).unwrap();
    }
    std::fs::remove_file(json).unwrap();
    // Plain json has no bins.
    let (_, plain) = ours("plain.json", &["--name=j", "--rw=randread", "--size=1m"]);
    assert!(plain["jobs"][0]["read"]["clat_ns"].get("bins").is_none());
    if tools::have("fio", "fio") {
        // fio's json+ fields, as fio 3.33 writes them: bins in clat_ns only.
        let out = Command::new("fio")
            .current_dir(std::env::temp_dir())
            .args(["--ioengine=null", "--name=j", "--rw=randrw", "--size=1m", "--output-format=json+"])
            .output()
            .unwrap();
        let theirs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let keys = |x: &serde_json::Value| x.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        for (dir, lat) in [("read", "clat_ns"), ("read", "lat_ns"), ("write", "clat_ns"), ("trim", "clat_ns")] {
            assert_eq!(keys(&v["jobs"][0][dir][lat]), keys(&theirs["jobs"][0][dir][lat]), "{dir} {lat}");
        }
    }
}

/// Commands and bytes a job makes, per direction (read, write).
type Counts = [(u64, u64); 2];

/// The [`Counts`] of a fio JSON's first job.
fn counts(json: &serde_json::Value) -> Counts {
    let dir = |d: &str| {
        let v = &json["jobs"][0][d];
        (v["total_ios"].as_u64().unwrap(), v["io_bytes"].as_u64().unwrap())
    };
    [dir("read"), dir("write")]
}

/// How much I/O a job makes, and where: what fio 3.33 does with
/// `--ioengine=null` (the counts below are its, and real fio is run too
/// where installed), and fio's random map, which touches every block once
/// a pass unless `--norandommap`.
#[test]
fn a_job_makes_the_io_fio_makes_and_keeps_fios_random_map() {
    let cases: &[(&[&str], Counts)] = &[
        (&["--name=j", "--rw=write", "--bs=6k", "--size=1m"], [(0, 0), (170, 1_044_480)]),
        (&["--name=j", "--rw=write", "--bs=4k", "--size=6k"], [(0, 0), (1, 4096)]),
        (&["--name=j", "--rw=randwrite", "--bs=4k", "--size=64k", "--loops=3"], [(0, 0), (48, 196_608)]),
        (&["--name=j", "--rw=write", "--bs=4k", "--size=1m", "--io_size=10k", "--loops=2"], [(0, 0), (5, 20480)]),
        (&["--name=j", "--rw=write", "--bs=4k", "--size=64k", "--number_ios=5", "--loops=3"], [(0, 0), (15, 61440)]),
        (&["--name=j", "--rw=randwrite", "--bs=6k", "--size=1m", "--io_size=2m"], [(0, 0), (342, 2_101_248)]),
        // A job that ends within its ramp_time reports all it did.
        (&["--name=j", "--rw=write", "--bs=4k", "--size=1m", "--ramp_time=10"], [(0, 0), (256, 1 << 20)]),
    ];
    for (args, fio_counts) in cases {
        let (_, value) = ours("counts.json", args);
        assert_eq!(counts(&value), *fio_counts, "{args:?}");
        if let Some(theirs) = fio_value("counts-fio.json", args) {
            assert_eq!(counts(&theirs), *fio_counts, "real fio, {args:?}");
        }
    }
    // The random map: one pass of 4 KiB random writes over 16 MiB maps all
    // 4096 blocks; drawn independently, about 1 - 1/e of them.
    let mapped = |extra: &[&str]| {
        let mut args = vec!["--name=j", "--rw=randwrite", "--bs=4k", "--size=16m"];
        args.extend(extra);
        let (_, value) = ours("map.json", &args);
        assert_eq!(counts(&value)[1].0, 4096, "{args:?}");
        value["drive"]["mapped_units"].as_u64().unwrap()
    };
    assert_eq!(mapped(&[]), 4096);
    let independent = mapped(&["--norandommap"]);
    assert!((2500..2700).contains(&independent), "{independent} of 4096 mapped, 1 - 1/e is 2589");
    // numjobs clones share their region unless offset_increment moves each.
    let clones = |extra: &[&str]| {
        let mut args = vec!["--name=j", "--rw=write", "--bs=4k", "--size=1m", "--numjobs=4"];
        args.extend(extra);
        ours_value(&args)["drive"]["mapped_units"].as_u64().unwrap()
    };
    assert_eq!((clones(&[]), clones(&["--offset_increment=1m"])), (256, 1024));
    let one = ["run", "--capacity", "64MiB", "--quiet", "--name=j", "--size=32m", "--offset_increment=32m"];
    let out = duraflash(&one);
    assert_eq!(out.status.code(), Some(0), "one clone: {}", stderr(&out));
    let out = duraflash(&[&one[..], &["--numjobs=3"]].concat());
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("--offset_increment=32m") && stderr(&out).contains("clone 2"), "{}", stderr(&out));
    // time_based without a runtime warns and runs by size, as fio does.
    let out = duraflash(&[
        "run",
        "--capacity",
        "64MiB",
        "--quiet",
        "--output-format=json",
        "--name=j",
        "--rw=write",
        "--size=1m",
        "--time_based",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("time_based needs a non-zero runtime"), "{}", stderr(&out));
    let value: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(counts(&value)[1], (256, 1 << 20));
}

/// `job options` as fio writes them: in the order given, an option given
/// twice listed twice (a reader keeps the last), bare flags left out; and
/// `description=` as the job's `desc`.
#[test]
fn job_options_keep_fios_order_and_leave_out_bare_flags() {
    let file = temp("options.fio");
    let text = "[global]\nbs=4k\ndescription=all\n[j]\nrw=write\nsize=1m\ntime_based\nruntime=1\n\
                norandommap\ndescription=hello\nsize=2m\n[k]\nrw=read\nsize=1m\n";
    std::fs::write(&file, text).unwrap();
    let out = duraflash(&["run", file.to_str().unwrap(), "--capacity", "64MiB", "--quiet", "--output-format=json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let raw = String::from_utf8(out.stdout).unwrap();
    // serde_json's Value sorts keys, so the order is read from the text.
    let options = |raw: &str, job: usize| -> Vec<String> {
        let at = raw.match_indices("\"job options\"").nth(job).expect("job options").0;
        let body = &raw[at..at + raw[at..].find('}').unwrap()];
        body.split('"').skip(3).step_by(4).map(str::to_string).collect()
    };
    assert_eq!(options(&raw, 0), ["rw", "size", "runtime", "description", "size"]);
    let v: serde_json::Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(v["jobs"][0]["job options"]["size"], "2m");
    assert_eq!((v["jobs"][0]["desc"].as_str(), v["jobs"][1]["desc"].as_str()), (Some("hello"), Some("all")));
    if tools::have("fio", "fio") {
        let out = Command::new("fio")
            .current_dir(std::env::temp_dir())
            .args(["--ioengine=null", "--output-format=json", file.to_str().unwrap()])
            .output()
            .expect("fio runs");
        let theirs = String::from_utf8(out.stdout).unwrap();
        assert_eq!(options(&theirs, 0), options(&raw, 0), "fio's order");
        assert_eq!(options(&theirs, 1), options(&raw, 1));
        let t: serde_json::Value = serde_json::from_str(&theirs[theirs.find('{').unwrap()..]).unwrap();
        assert_eq!(t["jobs"][0]["desc"], v["jobs"][0]["desc"]);
        assert_eq!(t["jobs"][1]["desc"], v["jobs"][1]["desc"]);
    }
    std::fs::remove_file(file).unwrap();
}

/// fio's latency percentile options: `percentile_list` picks the
/// percentiles (their keys and the text's decimals as fio's),
/// `lat_percentiles=1` adds them to `lat_ns`, `clat_percentiles=0` takes
/// them from `clat_ns`.
#[test]
fn percentile_options_pick_the_percentiles_fio_reports() {
    let job = ["--name=j", "--rw=randwrite", "--bs=4k", "--size=16m", "--iodepth=8", "--number_ios=2000"];
    let keys = |v: &serde_json::Value, lat: &str| -> Option<Vec<String>> {
        let p = v["jobs"][0]["write"][lat]["percentile"].as_object()?;
        Some(p.keys().cloned().collect())
    };
    let both = |extra: &[&str]| {
        let mut args: Vec<&str> = job.to_vec();
        args.extend(extra);
        (ours_value(&args), fio_value("pct-fio.json", &args))
    };
    let (v, fio) = both(&["--percentile_list=99.9:50:99", "--lat_percentiles=1"]);
    let want: Vec<String> = ["50.000000", "99.000000", "99.900000"].map(String::from).to_vec();
    assert_eq!((keys(&v, "clat_ns"), keys(&v, "lat_ns")), (Some(want.clone()), Some(want)));
    let p = &v["jobs"][0]["write"]["clat_ns"]["percentile"];
    assert!(p["50.000000"].as_u64() <= p["99.900000"].as_u64(), "{p}");
    if let Some(fio) = fio {
        assert_eq!((keys(&fio, "clat_ns"), keys(&fio, "lat_ns")), (keys(&v, "clat_ns"), keys(&v, "lat_ns")));
    }
    let (v, fio) = both(&["--clat_percentiles=0"]);
    assert_eq!((keys(&v, "clat_ns"), keys(&v, "lat_ns")), (None, None));
    if let Some(fio) = fio {
        assert_eq!((keys(&fio, "clat_ns"), keys(&fio, "lat_ns")), (None, None));
    }
    // The text: fio's decimals, the most any entry is written with.
    let mut args = vec!["run", "--capacity", "64MiB", "--quiet"];
    args.extend(job);
    args.extend(["--percentile_list=50:99.5", "--lat_percentiles=1"]);
    let text = String::from_utf8(duraflash(&args).stdout).unwrap();
    assert!(text.contains("    clat percentiles (") && text.contains("    lat percentiles ("), "{text}");
    assert!(text.contains(" 50.0th=[") && text.contains(" 99.5th=["), "{text}");
}

/// SIGINT, as a fio user's Ctrl-C: the jobs stop issuing, and the output
/// reports what ran (fio's "terminating on signal"), exit status 0.
#[cfg(unix)]
#[test]
fn an_interrupted_run_reports_what_ran() {
    let child = Command::new(env!("CARGO_BIN_EXE_duraflash"))
        .args(["run", "--capacity", "256MiB", "--quiet", "--output-format=json", "--name=w", "--rw=randwrite"])
        .args(["--bs=4k", "--iodepth=32", "--runtime=100000", "--time_based"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_secs(2));
    // SAFETY: signals our own child, still running (a 100000 s job).
    #[allow(unsafe_code)]
    let sent = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    assert_eq!(sent, 0);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("interrupted"), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let write = &v["jobs"][0]["write"];
    assert!(write["total_ios"].as_u64().unwrap() > 0, "{write}");
    assert!(v["jobs"][0]["elapsed"].as_u64().unwrap() < 100_000);
    assert_eq!(v["drive"]["host_write_bytes"], write["io_bytes"], "every command issued is counted");
}

/// `thinktime` as fio stalls: after each command by default, or every
/// `thinktime_blocks` commands, or after `thinktime_iotime` of I/O; the
/// job waits for its commands in flight, then the drive idles.
#[test]
fn thinktime_stalls_the_job_as_fio_does() {
    let args = ["--name=j", "--rw=write", "--bs=4k", "--size=64k", "--thinktime=10ms"];
    let runtime = |v: &serde_json::Value| v["jobs"][0]["write"]["runtime"].as_u64().unwrap();
    let v = ours_value(&args);
    assert_eq!(counts(&v)[1].0, 16);
    // fio 3.33 with --ioengine=null: 16 stalls of 10 ms, runtime 161 ms.
    assert!((160..=168).contains(&runtime(&v)), "16 stalls and 16 writes: {} ms", runtime(&v));
    if let Some(theirs) = fio_value("think-fio.json", &args) {
        assert_eq!(counts(&theirs)[1].0, 16);
        assert!(runtime(&theirs) >= 159, "real fio: {} ms", runtime(&theirs));
    }
    let blocks = ours_value(&[&args[..], &["--thinktime_blocks=4"]].concat());
    assert!(runtime(&blocks) < runtime(&v) / 2, "a stall every 4 writes: {} ms", runtime(&blocks));
    // Four deep, the blocks count completions (fio's default
    // thinktime_blocks_type=complete): the last writes complete after the
    // job last asks, so 3 stalls of 10 ms, not 4; counting issues, 4.
    for (kind, stalls) in [("complete", 30), ("issue", 40)] {
        let deep = [&args[..], &["--iodepth=4", "--thinktime_blocks=4"], &[&format!("--thinktime_blocks_type={kind}")]];
        let deep = deep.concat();
        let ms = runtime(&ours_value(&deep));
        assert!((stalls..stalls + 6).contains(&ms), "{kind}: {ms} ms");
        if let Some(theirs) = fio_value(&format!("think-{kind}.json"), &deep) {
            assert!((stalls..stalls + 3).contains(&runtime(&theirs)), "real fio, {kind}: {} ms", runtime(&theirs));
        }
    }
    // A stall of 100 ms once 500 ms have passed since the last began
    // (fio: thinktime_iotime + thinktime): in 2 s, 1.7 s of I/O.
    let iops = |extra: &[&str]| {
        let mut a = vec!["--name=j", "--rw=randwrite", "--bs=4k", "--iodepth=8", "--runtime=2s", "--time_based"];
        a.extend(extra);
        ours_value(&a)["jobs"][0]["write"]["iops"].as_f64().unwrap()
    };
    let share = iops(&["--thinktime=100ms", "--thinktime_iotime=400ms"]) / iops(&[]);
    assert!((0.82..0.88).contains(&share), "{share} of the writes");
}
