//! fio as fio users know it: job files from fio's own examples run or are
//! refused with one clear line, options without meaning for a simulated
//! drive warn once, and the JSON reads with a script written for fio's
//! `--output-format=json`, the same script that reads real fio's JSON.

mod tools;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn duraflash(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_duraflash")).args(args).output().expect("binary runs")
}

fn data(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(name).to_str().unwrap().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("duraflash-fio-{}-{name}", std::process::id()))
}

/// The reader's lines for `json`, without the first (which names the program).
fn read_like_fio_users(json: &Path) -> Vec<String> {
    let reader = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tools/fio_json_reader.py");
    let out = Command::new("python3").arg(reader).arg(json).output().expect("python3 runs");
    assert!(out.status.success(), "the reader failed on {}: {}", json.display(), stderr(&out));
    String::from_utf8(out.stdout).unwrap().lines().skip(1).map(str::to_string).collect()
}

/// Runs `job` here and (when fio is installed) under `fio --ioengine=null`,
/// and checks that the reader sees `lines` lines, none with a wrong field,
/// the same in both; returns our JSON.
fn same_as_fio(name: &str, lines: usize) -> serde_json::Value {
    let job = data(name);
    let ours = temp(&format!("{name}-ours.json"));
    let out = duraflash(&["run", &job, "--quiet", "--json", ours.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let our_lines = read_like_fio_users(&ours);
    assert_eq!(our_lines.len(), lines, "{job}: {our_lines:?}");
    for line in &our_lines {
        assert!(!line.contains("False"), "a field fio readers rely on is wrong: {line}");
    }
    let json = serde_json::from_slice(&std::fs::read(&ours).unwrap()).unwrap();
    let _ = std::fs::remove_file(ours);
    if tools::have("fio", "fio") {
        let theirs = temp(&format!("{name}-fio.json"));
        let fio = Command::new("fio")
            .current_dir(std::env::temp_dir())
            .args(["--ioengine=null", "--output-format=json", "--output", theirs.to_str().unwrap(), &job])
            .output()
            .expect("fio runs");
        assert!(fio.status.success(), "fio: {}", stderr(&fio));
        // Same jobs, directions, counts and bytes; times differ (null engine against the model).
        assert_eq!(our_lines, read_like_fio_users(&theirs), "the reader sees the same jobs in both");
        let theirs_json = serde_json::from_slice(&std::fs::read(&theirs).unwrap()).unwrap();
        let mut missing = Vec::new();
        fields_fio_writes(&json, &theirs_json, "", &mut missing);
        assert!(missing.is_empty(), "{name}: fio writes fields ours lacks: {missing:?}");
        let _ = std::fs::remove_file(theirs);
    }
    json
}

/// What fio writes that ours leaves out on purpose, and why.
const NOT_WRITTEN: [(&str, &str); 3] = [
    ("/time", "wall-clock time: the same seed and config give the same JSON"),
    ("/timestamp", "wall-clock time"),
    ("/timestamp_ms", "wall-clock time"),
];

/// Every field of fio's JSON `theirs` that `ours` lacks or holds as
/// another JSON type, by path, into `missing`: the fields fio-plot and
/// other readers of fio's JSON rely on. The options objects name what
/// each run was given, so only their presence counts.
fn fields_fio_writes(ours: &serde_json::Value, theirs: &serde_json::Value, at: &str, missing: &mut Vec<String>) {
    use serde_json::Value;
    match (ours, theirs) {
        (Value::Object(o), Value::Object(t)) => {
            if at.ends_with(" options") {
                return;
            }
            for (k, v) in t {
                let path = format!("{at}/{k}");
                match o.get(k) {
                    Some(ov) => fields_fio_writes(ov, v, &path, missing),
                    None if NOT_WRITTEN.iter().any(|(p, _)| *p == path) => {}
                    None => missing.push(path),
                }
            }
        }
        (Value::Array(o), Value::Array(t)) if o.len() == t.len() => {
            for (i, (ov, tv)) in o.iter().zip(t).enumerate() {
                fields_fio_writes(ov, tv, &format!("{at}/{i}"), missing);
            }
        }
        (Value::Number(_), Value::Number(_)) | (Value::String(_), Value::String(_)) => {}
        (o, t) => missing.push(format!("{at}: ours {o}, fio's {t}")),
    }
}

#[test]
fn our_json_reads_with_the_script_that_reads_real_fio_json_and_agrees_on_the_job() {
    same_as_fio("fio-compat.fio", 3);
}

#[test]
fn numjobs_clones_stonewall_groups_and_group_reporting_as_fio_reports_them() {
    let v = same_as_fio("fio-compat-groups.fio", 3);
    let jobs: Vec<(String, u64)> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["jobname"].as_str().unwrap().to_string(), j["groupid"].as_u64().unwrap()))
        .collect();
    let want = [("writers", 0), ("readers", 1), ("readers", 1)].map(|(n, g)| (n.to_string(), g));
    assert_eq!(jobs, want, "three writers reported as one, then two readers");
    // The readers ran together after the writers: the same simulated span each, not one after the other.
    let (a, b) = (v["jobs"][1]["elapsed_ns"].as_u64().unwrap(), v["jobs"][2]["elapsed_ns"].as_u64().unwrap());
    assert!(a.abs_diff(b) * 5 < a.max(b), "clones run side by side: {a} vs {b} ns");
}

#[test]
fn fio_json_has_fio_fields_units_and_percentile_keys() {
    let out = duraflash(&["run", &data("fio-compat.fio"), "--quiet", "--json", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let w = &v["jobs"][0]["write"];
    let bw_bytes = w["bw_bytes"].as_u64().unwrap();
    assert_eq!(w["bw"].as_u64().unwrap(), (bw_bytes as f64 / 1024.0).round() as u64, "bw is KiB/s");
    assert_eq!(w["io_kbytes"].as_u64().unwrap() * 1024, w["io_bytes"].as_u64().unwrap());
    let runtime_ms = w["runtime"].as_u64().unwrap() as f64;
    let from_bw = w["io_bytes"].as_f64().unwrap() / bw_bytes as f64 * 1e3;
    assert!((runtime_ms - from_bw).abs() <= 1.0, "runtime {runtime_ms} ms against io_bytes / bw_bytes {from_bw}");
    let pct = w["clat_ns"]["percentile"].as_object().unwrap();
    assert_eq!(pct.len(), 17, "fio's default percentile_list");
    let (p50, p99) = (pct["50.000000"].as_u64().unwrap(), pct["99.000000"].as_u64().unwrap());
    assert!(p50 <= p99 && p99 <= w["clat_ns"]["max"].as_u64().unwrap() && p50 >= w["clat_ns"]["min"].as_u64().unwrap());
    assert_eq!(w["lat_ns"]["mean"], w["clat_ns"]["mean"], "submission is instant: lat = clat");
    assert_eq!(v["jobs"][0]["job options"]["rw"], "randwrite");
    assert_eq!(v["global options"]["bs"], "4k");
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 0);
}

#[test]
fn fio_examples_run_or_are_refused_with_one_line_naming_the_option() {
    // aio-read.fio: [global] with ioengine=libaio, buffered=0, directory=: runs, one warning each.
    let out = duraflash(&["run", &data("fio-examples/aio-read.fio"), "--quiet", "--json", "-"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    for key in ["ioengine=libaio", "buffered=0", "directory=/data1"] {
        assert_eq!(err.matches(key).count(), 1, "one warning for {key}: {err}");
    }
    assert!(err.contains("never written"), "reads of an unwritten drive get a hint: {err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs"].as_array().unwrap().len(), 4);
    // fio-rand-write.fio: name= in [global] warns (as in fio it names no job), numjobs=4
    // runs four clones, and size=10G does not fit the 1 GiB default drive.
    let out = duraflash(&["run", &data("fio-examples/fio-rand-write.fio"), "--quiet"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("line 4: name=fio-rand-write: in [global] it names no job"), "{err}");
    assert!(err.contains("line 14: bad value '10G' for 'size'") && err.contains("--capacity"), "{err}");
    // The same job scaled to the drive (64 MiB, one simulated second) runs its four clones together.
    let small = temp("rand-write.fio");
    let text = std::fs::read_to_string(data("fio-examples/fio-rand-write.fio")).unwrap();
    std::fs::write(&small, text.replace("size=10G", "size=64m").replace("runtime=900", "runtime=1")).unwrap();
    let out = duraflash(&["run", small.to_str().unwrap(), "--media", "metadata-only", "--quiet", "--json", "-"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 4, "numjobs=4 without group_reporting: four entries");
    assert!(jobs.iter().all(|j| j["jobname"] == "file1" && j["write"]["total_ios"].as_u64().unwrap() > 0));
    let _ = std::fs::remove_file(small);
    // ssd-test.fio: size=10g on the 1 GiB default drive is an error, not a clamp.
    let out = duraflash(&["run", &data("fio-examples/ssd-test.fio"), "--quiet"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("line 17: bad value '10g' for 'size'") && err.contains("--capacity"), "{err}");
}

/// fio's `jesd219.fio`, the JESD219 endurance workload: twelve sizes from
/// 512 B to 64 KiB on 4 KiB boundaries, and three zones (half the accesses
/// to the first 5 % of the drive, 30 % to the next 15 %, the rest to the
/// last 80 %), four clones 256 deep, reported as one.
#[test]
fn the_jesd219_example_runs_its_zones_and_sizes() {
    let job = temp("jesd219.fio");
    let text = std::fs::read_to_string(data("fio-examples/jesd219.fio")).unwrap();
    std::fs::write(&job, text + "number_ios=5000\n").unwrap();
    let out = duraflash(&["run", job.to_str().unwrap(), "--capacity", "64MiB", "--quiet", "--output-format=json"]);
    let _ = std::fs::remove_file(job);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let job = &v["jobs"][0];
    assert_eq!(v["jobs"].as_array().unwrap().len(), 1, "group_reporting");
    let ios = job["read"]["total_ios"].as_u64().unwrap() + job["write"]["total_ios"].as_u64().unwrap();
    assert_eq!(ios, 4 * 5000, "four clones of number_ios=5000");
    let writes = job["write"]["io_bytes"].as_f64().unwrap() / job["write"]["total_ios"].as_f64().unwrap();
    // The split's mean: 7,818 bytes a command.
    assert!((7_400.0..8_200.0).contains(&writes), "{writes} bytes a write");
    // Half the writes go to 5 % of the drive: far fewer units mapped than written.
    let mapped = v["drive"]["mapped_units"].as_f64().unwrap();
    assert!(mapped < 0.6 * 16384.0, "{mapped} of 16384 units mapped");
}

#[test]
fn ignored_options_warn_once_and_the_command_line_beats_the_drive_section() {
    let job = temp("ignored.fio");
    std::fs::write(
        &job,
        "[drive]\ncapacity=64MiB\n[global]\nnorandommap\nrandrepeat=0\nthread=1\n\
         [a]\nrw=randwrite\nsize=1m\nnorandommap\n[b]\nrw=randwrite\nsize=1m\n",
    )
    .unwrap();
    let out = duraflash(&["run", job.to_str().unwrap(), "--capacity", "128MiB", "--quiet", "--json", "-"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    for key in ["randrepeat=0", "thread=1"] {
        assert_eq!(err.matches(key).count(), 1, "one warning for {key}: {err}");
    }
    assert!(!err.contains("norandommap"), "norandommap is implemented, no warning: {err}");
    assert!(err.contains("line 2: [drive] capacity=64MiB is overridden by --capacity"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["config"]["logical_bytes"], 128u64 << 20);
    let _ = std::fs::remove_file(job);
}

#[test]
fn a_bad_drive_preset_names_the_job_file_and_line() {
    let job = temp("preset.fio");
    std::fs::write(&job, "[drive]\n\npreset=nope\n[a]\nrw=write\nsize=1m\n").unwrap();
    let out = duraflash(&["run", job.to_str().unwrap(), "--quiet"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(&format!("{}: line 3: [drive] preset=nope", job.display())), "{err}");
    assert!(!err.contains("--preset"), "the file, not a flag, gave it: {err}");
    let _ = std::fs::remove_file(job);
}

#[test]
fn the_spare_area_fill_jobs_docs_quote_run_as_described() {
    // docs/sandforce-trim.md quotes the last job's write of each file: a
    // 1 GiB AS-SSD write after no fill, two fills, two fills and a TRIM.
    for (name, jobs) in [
        ("clean", &["asssd"][..]),
        ("dirty", &["fill", "fill2", "asssd"]),
        ("trimmed", &["fill", "fill2", "trim", "asssd"]),
    ] {
        let job = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("docs/jobs/spare-fill-{name}.fio"));
        let out = duraflash(&["run", job.to_str().unwrap(), "--capacity", "2GiB", "--quiet", "--json", "-"]);
        assert_eq!(out.status.code(), Some(0), "{name}: {}", stderr(&out));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ran: Vec<&str> = v["jobs"].as_array().unwrap().iter().map(|j| j["jobname"].as_str().unwrap()).collect();
        assert_eq!(ran, jobs, "{name}");
        assert_eq!(v["jobs"][jobs.len() - 1]["write"]["io_bytes"], 1u64 << 30, "{name}");
    }
}

/// fio's figures beside the latencies, as fio-plot reads them: IOPS and
/// bandwidth sampled over windows of simulated time (`iopsavgtime`,
/// `bwavgtime`), the queue depth at each submission, the latency ranges,
/// and `group_reporting` summing its jobs' samples as fio does.
#[test]
fn samples_depths_and_latency_ranges_follow_the_job() {
    let run = |extra: &[&str]| {
        let mut args = vec!["run", "--name=w", "--rw=randwrite", "--bs=4k", "--size=32m", "--iodepth=16"];
        args.extend(["--runtime=2s", "--time_based", "--capacity", "256MiB", "--quiet", "--output-format=json"]);
        args.extend(extra);
        let out = duraflash(&args);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let v = run(&[]);
    let (job, w) = (&v["jobs"][0], &v["jobs"][0]["write"]);
    let f = |k: &str| w[k].as_f64().unwrap();
    // 2 s and a little more of simulated time: four whole windows of 500 ms.
    assert_eq!((w["iops_samples"].as_u64(), w["bw_samples"].as_u64()), (Some(4), Some(4)));
    assert!(f("iops_min") <= f("iops_mean") && f("iops_mean") <= f("iops_max"), "{w}");
    assert!((f("iops_mean") / f("iops") - 1.0).abs() < 0.02, "the windows' mean is the job's rate: {w}");
    assert!((f("bw_mean") - f("iops_mean") * 4.0).abs() <= 1.0, "4 KiB a command: {w}");
    assert!(f("iops_stddev") >= 0.0 && f("bw_agg") > 99.0, "{w}");
    let depth16 = job["iodepth_level"]["16"].as_f64().unwrap();
    assert!(depth16 > 99.0, "a queue of 16 kept full: {}", job["iodepth_level"]);
    let ranges: f64 = ["latency_ns", "latency_us", "latency_ms"]
        .iter()
        .flat_map(|k| job[k].as_object().unwrap().values().map(|p| p.as_f64().unwrap()))
        .sum();
    assert!((ranges - 100.0).abs() < 0.5, "every command in one range: {ranges}");

    // Shorter windows, more samples; a shallower queue, another depth.
    let v = run(&["--iopsavgtime=250", "--bwavgtime=1000", "--iodepth=2"]);
    let w = &v["jobs"][0]["write"];
    assert_eq!((w["iops_samples"].as_u64(), w["bw_samples"].as_u64()), (Some(8), Some(2)));
    assert!(v["jobs"][0]["iodepth_level"]["2"].as_f64().unwrap() > 99.0, "{}", v["jobs"][0]["iodepth_level"]);

    // Two clones reported apart, then together: the group's samples are
    // the sum of its jobs' (stat.c sum_stat's pure sum).
    let apart = run(&["--numjobs=2"]);
    let together = run(&["--numjobs=2", "--group_reporting"]);
    let mean = |v: &serde_json::Value, j: usize| v["jobs"][j]["write"]["iops_mean"].as_f64().unwrap();
    let sum = mean(&apart, 0) + mean(&apart, 1);
    assert!((mean(&together, 0) - sum).abs() < 1e-6 * sum, "{} against {sum}", mean(&together, 0));
    assert_eq!(together["jobs"][0]["write"]["iops_samples"], 8, "both jobs' windows");
}

/// The lines of fio's normal output that scripts read, each reduced to
/// what must match between two runs of the same jobs: names, groups,
/// command and byte counts, depth settings; not times or rates.
fn text_shape(text: &str) -> Vec<String> {
    let after = |line: &str, key: &str| line.split_once(key).map(|(_, rest)| rest.to_string());
    let mut shape: Vec<String> = Vec::new();
    for line in text.lines() {
        let t = line.trim_start();
        let kind = if line.contains(": (groupid=") {
            Some(line.split(": pid=").next().unwrap().to_string())
        } else if ["read: IOPS=", "write: IOPS=", "trim: IOPS="].iter().any(|k| t.starts_with(k)) {
            let io = after(t, ")(").and_then(|r| r.split('/').next().map(str::to_string));
            let suffix = after(t, "msec)").unwrap_or_default();
            Some(format!("{} io={}{suffix}", t.split(':').next().unwrap(), io.unwrap_or_default()))
        } else if t.starts_with("clat (") || t.starts_with("lat (usec): min") || t.starts_with("lat (nsec): min") {
            Some(t.split(' ').next().unwrap().to_string())
        } else if t.starts_with("clat percentiles") {
            Some("percentiles".into())
        } else if t.starts_with('|') {
            // Rows hold as many as the widest value leaves room for: count
            // the block's entries, not its rows.
            let entries = t.matches("th=[").count();
            if let Some(last) = shape.last_mut().filter(|l| l.starts_with("percentiles")) {
                let sum = last.trim_start_matches("percentiles").trim().parse::<usize>().unwrap_or(0) + entries;
                *last = format!("percentiles {sum}");
            }
            None
        } else if ["cpu ", "IO depths", "submit ", "complete "].iter().any(|k| t.starts_with(k)) {
            Some(t.split(':').next().unwrap().trim().to_string())
        } else if t.starts_with("issued rwts:") || t.starts_with("Run status group") {
            Some(t.to_string())
        } else if t.starts_with("latency   :") {
            after(t, "percentile=")
        } else if ["READ: bw=", "WRITE: bw=", "TRIM: bw="].iter().any(|k| t.starts_with(k)) {
            Some(format!(
                "{} io={}",
                t.split(':').next().unwrap(),
                after(t, "io=").unwrap().split(", run").next().unwrap()
            ))
        } else {
            None
        };
        shape.extend(kind);
    }
    shape
}

/// `--output-format=normal` (fio's default) is fio's text: the same lines
/// for the same jobs as real fio writes, with the same command counts and
/// bytes, formatted as fio formats them (`IOPS=`, `BW=`, `io=4000KiB`).
#[test]
fn normal_output_is_fios_text_for_the_same_jobs() {
    let job = data("fio-compat.fio");
    let out = duraflash(&["run", &job, "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ours = String::from_utf8(out.stdout).unwrap();
    assert!(ours.contains("Starting 3 processes\n"), "{ours}");
    let shape = text_shape(&ours);
    for want in [
        "randwrite: (groupid=0, jobs=1): err= 0",
        "write io=8000KiB; 0 zone resets",
        "issued rwts: total=0,2000,0,0 short=0,0,0,0 dropped=0,0,0,0",
    ] {
        assert!(shape.iter().any(|l| l == want), "{want} in {shape:#?}");
    }
    if tools::have("fio", "fio") {
        let fio = Command::new("fio")
            .current_dir(std::env::temp_dir())
            .args(["--ioengine=null", &job])
            .output()
            .expect("fio runs");
        assert!(fio.status.success(), "fio: {}", stderr(&fio));
        let theirs = String::from_utf8(fio.stdout).unwrap();
        assert_eq!(shape, text_shape(&theirs), "ours:\n{ours}\nfio's:\n{theirs}");
    }
}

/// Several job files run as fio runs them: one after another, the first
/// job of each later file starting a new group, each file's `[global]`
/// its own; the reader sees the same jobs as in real fio's JSON, and an
/// error names its file and that file's line.
#[test]
fn several_job_files_run_in_turn_as_fio_runs_them() {
    let (a, b) = (temp("first.fio"), temp("second.fio"));
    std::fs::write(&a, "[global]\nbs=8k\nsize=1m\n[writer]\nrw=write\n[writer2]\nrw=randwrite\nnumber_ios=10").unwrap();
    std::fs::write(&b, "; the second file\n[global]\niodepth=2\n[reader]\nrw=read\nsize=1m\n").unwrap();
    let (a_s, b_s) = (a.to_str().unwrap(), b.to_str().unwrap());
    let ours = temp("files-ours.json");
    let out = duraflash(&["run", a_s, b_s, "--capacity", "64MiB", "--quiet", "--json", ours.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&ours).unwrap()).unwrap();
    let groups: Vec<(&str, u64)> = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| (j["jobname"].as_str().unwrap(), j["groupid"].as_u64().unwrap()))
        .collect();
    assert_eq!(groups, [("writer", 0), ("writer2", 0), ("reader", 1)], "the second file's job waits for the first's");
    assert_eq!(v["jobs"][2]["read"]["total_ios"], 256, "1 MiB in 4 KiB reads: the first file's [global] stays there");
    assert_eq!(v["global options"]["iodepth"], "2", "the last file's, as fio writes them");
    let our_lines = read_like_fio_users(&ours);
    if tools::have("fio", "fio") {
        let theirs = temp("files-fio.json");
        let fio = Command::new("fio")
            .current_dir(std::env::temp_dir())
            .args(["--ioengine=null", "--output-format=json", "--output", theirs.to_str().unwrap(), a_s, b_s])
            .output()
            .expect("fio runs");
        assert!(fio.status.success(), "fio: {}", stderr(&fio));
        assert_eq!(our_lines, read_like_fio_users(&theirs), "the reader sees the same jobs in both");
        let fio_json: serde_json::Value = serde_json::from_slice(&std::fs::read(&theirs).unwrap()).unwrap();
        assert_eq!(fio_json["jobs"][2]["groupid"], 1, "fio groups them so too");
        assert_eq!(fio_json["global options"], v["global options"]);
        let _ = std::fs::remove_file(theirs);
    }
    // Errors name the file and its own line; a key before the second
    // file's first section belongs to no section, as in fio.
    std::fs::write(&b, "[reader]\nrw=read\nbs=4q\n").unwrap();
    let out = duraflash(&["run", a_s, b_s, "--capacity", "64MiB", "--quiet"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(&format!("{b_s}: line 3: bad value '4q' for 'bs'")), "{}", stderr(&out));
    std::fs::write(&b, "[reader]\nrw=read\nbs=line 2\n").unwrap();
    let out = duraflash(&["run", a_s, b_s, "--capacity", "64MiB", "--quiet"]);
    assert!(stderr(&out).contains(&format!("{b_s}: line 3: bad value 'line 2' for 'bs'")), "{}", stderr(&out));
    // The same file twice runs twice, as in fio.
    let out = duraflash(&["run", a_s, a_s, "--capacity", "64MiB", "--quiet", "--output-format=json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["jobs"].as_array().map(Vec::len), Some(4));
    std::fs::write(&b, "rw=read\n[reader]\n").unwrap();
    let out = duraflash(&["run", a_s, b_s, "--capacity", "64MiB", "--quiet"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(&format!("{b_s}: line 1:")), "{}", stderr(&out));
    for f in [a, b, ours] {
        let _ = std::fs::remove_file(f);
    }
}

/// `ramp_time` is a warm-up, as in fio: the job runs that long before
/// anything is counted, and its `runtime` starts after it. On a fresh
/// X25-M model the first seconds of random writes find erased blocks; after
/// a warm-up that fills the drive, GC sets the rate.
#[test]
fn ramp_time_runs_a_warm_up_that_counts_in_no_figure() {
    let run = |ramp: &str| {
        let out = duraflash(&[
            "run",
            "--preset",
            "intel-x25m-g2-160g",
            "--capacity",
            "256MiB",
            "--quiet",
            "--name=w",
            "--rw=randwrite",
            "--bs=4k",
            "--size=256m",
            "--iodepth=32",
            "--runtime=2s",
            "--time_based",
            // Offsets drawn independently: with fio's random map the pass
            // after the warm-up starts with every block still live, and
            // its GC stalls (325 ms) run the last batch past the band.
            "--norandommap",
            "--output-format=json",
            &format!("--ramp_time={ramp}"),
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let (fresh, warm) = (run("0"), run("20s"));
    for v in [&fresh, &warm] {
        let ns = v["jobs"][0]["elapsed_ns"].as_f64().unwrap();
        assert!((2e9..2.2e9).contains(&ns), "the runtime after the warm-up, not with it: {ns} ns");
        assert_eq!(v["jobs"][0]["write"]["iops_samples"], 4, "samples from the end of the warm-up");
    }
    let iops = |v: &serde_json::Value| v["jobs"][0]["write"]["iops"].as_f64().unwrap();
    assert!(iops(&warm) < 0.5 * iops(&fresh), "warmed up {} against fresh {} IOPS", iops(&warm), iops(&fresh));
    let ios = |v: &serde_json::Value| v["jobs"][0]["write"]["total_ios"].as_f64().unwrap();
    assert!((ios(&warm) / iops(&warm) - 2.0).abs() < 0.2, "only the measured commands are counted");
}

/// `rate_iops` runs a job open loop, as fio's linear rate process does:
/// its commands wait for their time, so they meet an idle queue, and the
/// drive idles (idle GC) in the gaps; `startdelay` holds a job back, the
/// drive idle meanwhile, which on a full X25-M model frees blocks for it.
#[test]
fn rate_iops_runs_open_loop_and_startdelay_leaves_the_drive_idle() {
    let run = |file: &str| {
        let job = temp(&format!("pace-{}.fio", file.len()));
        std::fs::write(&job, file).unwrap();
        let out = duraflash(&[
            "run",
            job.to_str().unwrap(),
            "--preset",
            "intel-x25m-g2-160g",
            "--capacity",
            "256MiB",
            "--quiet",
            "--output-format=json",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        let _ = std::fs::remove_file(job);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let w = &v["jobs"].as_array().unwrap().last().unwrap()["write"];
        (w["iops"].as_f64().unwrap(), w["clat_ns"]["mean"].as_f64().unwrap())
    };
    let job = "[global]\nbs=4k\nsize=256m\niodepth=32\nrw=randwrite\nruntime=2s\ntime_based\n[w]\n";
    let (closed, closed_lat) = run(job);
    let (paced, paced_lat) = run(&format!("{job}rate_iops=5000\n"));
    assert!((paced / 5000.0 - 1.0).abs() < 0.01, "{paced} IOPS at rate_iops=5000");
    assert!(
        paced_lat < 0.2 * closed_lat,
        "{paced_lat} ns paced against {closed_lat} ns with 32 queued ({closed} IOPS)"
    );
    let fill = "[global]\nbs=4k\nsize=256m\niodepth=32\nrw=randwrite\ntime_based\n[fill]\nruntime=20s\n[after]\nstonewall\nruntime=1s\n";
    let (at_once, _) = run(fill);
    let (delayed, _) = run(&format!("{fill}startdelay=10\n"));
    assert!(delayed > 1.1 * at_once, "after 10 s idle {delayed} IOPS, at once {at_once}");
}

/// Rates as fio applies them: per direction, a mix issuing the direction
/// that is due (io_u.c `rate_ddir`), the rate restarting after the warm-up,
/// `runtime` without `time_based` stopping a job early, and a group's
/// runtime its longest job's when its jobs start apart.
#[test]
fn rates_follow_fios_rules_for_mixes_warm_ups_runtimes_and_groups() {
    let run = |args: &[&str]| {
        let mut all = vec!["run", "--capacity", "256MiB", "--quiet", "--output-format=json", "--bs=4k", "--size=32m"];
        all.extend(args);
        let out = duraflash(&all);
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let f = |v: &serde_json::Value, job: usize, dir: &str, key: &str| v["jobs"][job][dir][key].as_f64().unwrap();
    let near = |got: f64, want: f64| (got / want - 1.0).abs() < 0.02;
    let mix = run(&["--name=m", "--rw=randrw", "--rate_iops=100,1000", "--runtime=2s", "--time_based"]);
    assert!(near(f(&mix, 0, "read", "iops"), 100.0) && near(f(&mix, 0, "write", "iops"), 1000.0), "{}", mix["jobs"][0]);
    let mostly_reads =
        run(&["--name=m", "--rw=randrw", "--rwmixread=90", "--rate_iops=100", "--runtime=2s", "--time_based"]);
    assert!(near(f(&mostly_reads, 0, "write", "iops"), 100.0), "writes keep their own rate in a 90 % read mix");
    let cut = run(&["--name=c", "--rw=write", "--rate_iops=1000", "--runtime=100ms"]);
    assert!(
        (100.0..=102.0).contains(&f(&cut, 0, "write", "total_ios")),
        "runtime stops a sized job: {}",
        cut["jobs"][0]
    );
    let warm = run(&["--name=w", "--rw=write", "--size=4m", "--rate_iops=1000", "--ramp_time=500ms"]);
    let ios = f(&warm, 0, "write", "total_ios");
    assert!((500.0..=530.0).contains(&ios), "the warm-up counts toward the size, not the figures: {ios}");
    // A job done within its warm-up reports all it did, as fio's does
    // (fio clears its counts when ramp_time ends, and this one never got there).
    let ended_warm = run(&["--name=w", "--rw=write", "--size=4m", "--iodepth=32", "--ramp_time=10s"]);
    assert_eq!(ended_warm["jobs"][0]["write"]["total_ios"], 1024, "{}", ended_warm["jobs"][0]);
    assert!(f(&ended_warm, 0, "write", "runtime") > 0.0, "its run time too");
    let group = run(&[
        "--group_reporting",
        "--rate_iops=1000",
        "--runtime=1s",
        "--time_based",
        "--name=a",
        "--rw=randwrite",
        "--name=b",
        "--rw=randwrite",
        "--startdelay=1s",
    ]);
    assert_eq!(group["jobs"][0]["write"]["runtime"], 1001, "the longest job's runtime, not the span");
    assert_eq!(group["jobs"][0]["job_runtime"], 2001, "the jobs' run times summed, as fio's job_runtime");
    assert!(near(f(&group, 0, "write", "iops"), 2000.0), "{}", group["jobs"][0]["write"]);
}

/// `--output-format=terse` is fio's version 3 line a job: the same number of
/// fields as real fio's for the same jobs, and the same names, groups, and
/// KiB read and written.
#[test]
fn terse_output_is_fios_version_3_line() {
    let job = data("fio-compat.fio");
    let out = duraflash(&["run", &job, "--quiet", "--output-format=terse"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let ours = String::from_utf8(out.stdout).unwrap();
    let fields = |text: &str| -> Vec<Vec<String>> {
        text.lines().filter(|l| l.starts_with("3;")).map(|l| l.split(';').map(str::to_string).collect()).collect()
    };
    let ours = fields(&ours);
    assert_eq!(ours.len(), 3, "a line a job: {ours:?}");
    // Version, name, group, error; KiB read (field 6) and written (field 47).
    let fixed = |f: &Vec<String>| [0, 2, 3, 4, 5, 46].map(|i| f[i].clone());
    assert_eq!(fixed(&ours[0]), ["3", "randwrite", "0", "0", "0", "8000"].map(String::from));
    assert!(ours[0][7..].iter().any(|f| f.starts_with("99.000000%=")), "{:?}", ours[0]);
    let minimal = duraflash(&["run", &job, "--quiet", "--minimal", "--terse-version=3"]);
    assert_eq!(fields(&String::from_utf8(minimal.stdout).unwrap()).len(), 3, "fio's --minimal is the terse format");
    let v2 = duraflash(&["run", &job, "--quiet", "--minimal", "--terse-version=2"]);
    assert_eq!(v2.status.code(), Some(2), "only version 3 is written: {}", stderr(&v2));
    assert!(stderr(&v2).contains("--terse-version"), "{}", stderr(&v2));
    if tools::have("fio", "fio") {
        let fio = Command::new("fio")
            .current_dir(std::env::temp_dir())
            .args(["--ioengine=null", "--output-format=terse", &job])
            .output()
            .expect("fio runs");
        assert!(fio.status.success(), "fio: {}", stderr(&fio));
        let theirs = fields(&String::from_utf8(fio.stdout).unwrap());
        assert_eq!(ours.iter().map(Vec::len).collect::<Vec<_>>(), theirs.iter().map(Vec::len).collect::<Vec<_>>());
        assert_eq!(ours.iter().map(fixed).collect::<Vec<_>>(), theirs.iter().map(fixed).collect::<Vec<_>>());
    }
}
