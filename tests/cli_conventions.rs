//! One convention for every command (docs/cli.md): OP and sizes as a
//! storage engineer writes them, safe defaults, help that fits a terminal,
//! the same exit status and names everywhere.

use std::process::{Command, Output};

fn duraflash(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_duraflash")).args(args).output().expect("binary runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A content-free `wa` run small enough for a test, plus `extra` flags.
fn quick_wa(extra: &[&str]) -> Output {
    let mut args =
        vec!["wa", "--capacity", "256MiB", "--media", "metadata-only", "--precondition", "0.2", "--measure", "0.2"];
    args.extend(["--quiet", "--json", "-"]);
    args.extend(extra);
    duraflash(&args)
}

fn json(o: &Output) -> serde_json::Value {
    assert_eq!(o.status.code(), Some(0), "{}", stderr(o));
    serde_json::from_slice(&o.stdout).expect("stdout is JSON")
}

/// Exit 2 with one line on stderr that contains every needle.
fn usage_error(args: &[&str], needles: &[&str]) {
    let out = duraflash(args);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: more than one line: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: '{err}' does not mention {n}");
    }
}

#[test]
fn op_reads_seven_percent_either_way_and_refuses_a_bare_seven() {
    // 64-page blocks: 2 MiB ones step a 256 MiB drive's OP by 25 %.
    let pct = json(&quick_wa(&["--pages-per-block", "64", "--op", "7%"]));
    let frac = json(&quick_wa(&["--pages-per-block", "64", "--op", "0.07"]));
    assert_eq!(pct["config"], frac["config"], "7% and 0.07 are one drive");
    assert_eq!(pct["waf"], frac["waf"]);
    let op = pct["op"].as_f64().unwrap();
    assert!(op > 0.07 && op < 0.5, "OP {op} is a fraction near 7 %");
    usage_error(&["wa", "--capacity", "256MiB", "--op", "7%"], &["--op", "steps the OP by 25.0%"]);
    usage_error(&["wa", "--op", "7"], &["--op", "700 %", "7%", "0.07"]);
    usage_error(&["wa", "--op", "2000%"], &["--op", "1000%"]);
    usage_error(&["sweep", "--op", "7,15"], &["--op", "700 %"]);
    usage_error(&["bench", "--op", "7"], &["--op", "700 %"]);
}

#[test]
fn a_capacity_that_leaves_a_nonsensical_drive_is_refused_naming_the_flag() {
    usage_error(&["wa", "--capacity", "100k"], &["--capacity", "over-provisioned", "use at least"]);
    usage_error(&["serve", "--capacity", "1MiB"], &["--capacity"]);
}

#[test]
fn compress_pct_alone_implies_compressible_data_as_in_fio() {
    let v = json(&quick_wa(&["--compress-pct", "50"]));
    let ratio = v["compression_ratio"].as_f64().unwrap();
    assert!(ratio < 0.8, "50 % zeros compresses: {ratio}");
    let plain = json(&quick_wa(&[]));
    assert!(plain["compression_ratio"].as_f64().unwrap() > 0.99, "the default stays incompressible");
    usage_error(&["wa", "--data", "incompressible", "--compress-pct", "50"], &["--compress-pct", "--data"]);
}

/// Starts `args`, returns its first stderr line, and kills it.
fn first_stderr_line(args: &[&str]) -> String {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_duraflash"))
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("binary starts");
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    line
}

const COMMANDS: [&str; 15] = [
    "wa",
    "hdtach",
    "atto",
    "iometer",
    "run",
    "torture",
    "corpus",
    "sweep",
    "bench",
    "reproduce",
    "serve",
    "raid",
    "optimizer",
    "replay",
    "soak",
];

#[test]
fn help_wraps_and_shows_the_one_capacity_and_media_default_and_the_gc_values() {
    for cmd in COMMANDS {
        let out = Command::new(env!("CARGO_BIN_EXE_duraflash")).args([cmd, "--help"]).env("COLUMNS", "100").output();
        let help = String::from_utf8(out.unwrap().stdout).unwrap();
        let widest = help.lines().map(|l| l.chars().count()).max().unwrap();
        assert!(widest <= 100, "{cmd} --help is {widest} columns wide");
        if help.contains("--gc") {
            assert!(help.contains("greedy, cost-benefit, fifo"), "{cmd} --help lists no --gc values");
        }
        if help.contains("--media <MEDIA>") {
            assert!(help.contains("[default: metadata-only"), "{cmd} --help hides the --media default");
        }
        if help.contains("--capacity <CAPACITY>") {
            assert!(help.contains("[default: 1GiB]"), "{cmd} --help hides the --capacity default");
            assert!(help.contains("'full'"), "{cmd} --capacity does not take 'full'");
        }
    }
}

#[test]
fn every_command_defaults_to_one_capacity_and_metadata_only_unless_it_reads_data_back() {
    let wa = json(&duraflash(&["wa", "--precondition", "0.1", "--measure", "0.1", "--quiet", "--json", "-"]));
    assert_eq!(wa["config"]["media"], "metadata-only");
    assert_eq!(wa["config"]["logical_bytes"], 1u64 << 30);
    let atto = json(&duraflash(&["atto", "--span", "4MiB", "--quiet", "--json", "-"]));
    assert_eq!(atto["config"]["media"], "memory", "ATTO's 512-byte writes read the old unit");
    assert_eq!(atto["config"]["logical_bytes"], 1u64 << 30);
    let hdtach = json(&duraflash(&["hdtach", "--zones", "4", "--quiet", "--json", "-"]));
    assert_eq!(hdtach["config"]["media"], "metadata-only");
    assert_eq!(hdtach["config"]["logical_bytes"], 1u64 << 30, "no command defaults to the whole drive");
}

#[test]
fn no_arguments_print_the_help_not_an_error_line() {
    for args in [&[][..], &["image"][..]] {
        let out = duraflash(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        assert!(err.contains("Usage: duraflash") && err.contains("Commands:"), "{args:?}: {err}");
        assert!(err.lines().count() > 5 && !err.contains("error:"), "{args:?}: not the help: {err}");
    }
}

#[test]
fn serve_listens_on_a_host_name() {
    let line = first_stderr_line(&["serve", "--listen", "localhost:0", "--capacity", "64MiB", "--stats-interval", "0"]);
    assert!(line.contains("127.0.0.1:") || line.contains("[::1]:"), "{line}");
}

#[test]
fn a_full_size_torture_says_what_it_will_do_and_how_long_before_it_starts() {
    let line = first_stderr_line(&["torture", "--capacity", "full", "--quiet"]);
    assert!(line.contains("torture of the") && line.contains("estimated") && line.contains("min"), "{line}");
    assert!(line.contains("--capacity"), "names the way to a shorter run: {line}");
    // The full-scale report counts its corpora, not only its torture runs:
    // five corpora through the whole drive alone take hours.
    let line = first_stderr_line(&["reproduce", "--scale", "full", "--only", "corpora", "--out", "/proc/duraflash"]);
    assert!(line.contains("estimated") && line.contains(" h "), "{line}");
    // It names the heavy parts that run, and only those.
    assert!(line.contains("five corpora") && !line.contains("torture") && !line.contains("WA"), "{line}");
    let line = first_stderr_line(&["reproduce", "--scale", "full", "--only", "torture,wa", "--out", "/proc/duraflash"]);
    assert!(line.contains("torture runs, three WA points through") && !line.contains("corpora"), "{line}");
}

fn keys(v: &serde_json::Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().expect("an object").keys().cloned().collect();
    k.sort();
    k
}

#[test]
fn run_and_replay_write_latency_in_one_schema_fios_clat_ns() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let run = json(&duraflash(&["run", &format!("{dir}/tests/data/fio-compat.fio"), "--quiet", "--json", "-"]));
    let trace = format!("{dir}/tests/data/trace-msr.csv");
    let replay = json(&duraflash(&["replay", &trace, "--capacity", "64MiB", "--lba-wrap", "--quiet", "--json", "-"]));
    let clat = &run["jobs"][0]["write"]["clat_ns"];
    assert_eq!(keys(clat), ["N", "max", "mean", "min", "percentile", "stddev"]);
    assert_eq!(keys(&replay["latency"]["write"]), keys(clat), "replay's latency is fio's clat_ns");
    assert_eq!(keys(&replay["latency"]["write"]["percentile"]), keys(&clat["percentile"]));
    assert!(replay["latency"]["write"]["percentile"]["99.000000"].as_u64().unwrap() > 0);
}

#[test]
fn a_missing_input_file_exits_2_naming_its_path_once() {
    for args in [
        &["image", "info", "/nonexistent/x.img"][..],
        &["run", "/nonexistent/x.img"][..],
        &["replay", "/nonexistent/x.img"][..],
        &["compare", "/nonexistent/x.img", "report"][..],
    ] {
        let out = duraflash(args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.matches("/nonexistent/x.img").count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn names_in_output_are_lower_case_and_hyphenated() {
    let image = std::env::temp_dir().join(format!("duraflash-names-{}.img", std::process::id()));
    let img = image.to_str().unwrap();
    let out = duraflash(&[
        "wa",
        "--capacity",
        "64MiB",
        "--precondition",
        "0.1",
        "--measure",
        "0.1",
        "--quiet",
        "--image",
        img,
    ]);
    let summary = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(summary.contains("GC greedy"), "{summary}");
    let info = String::from_utf8_lossy(&duraflash(&["image", "info", img]).stdout).into_owned();
    assert!(info.contains("media metadata-only, compression on, dedup on"), "{info}");
    for bad in ["Greedy", "MetadataOnly", "Memory", "Compressible", "compression true"] {
        assert!(!summary.contains(bad) && !info.contains(bad), "{bad} in {summary}{info}");
    }
    let _ = std::fs::remove_file(image);
}

/// Every command that draws takes `--plot DIR`; a file name is refused
/// before anything runs, naming the flag.
const PLOTTING: [&[&str]; 9] = [
    &["hdtach"],
    &["atto"],
    &["iometer"],
    &["torture"],
    &["corpus"],
    &["sweep"],
    &["bench", "--sizes", "1GiB"],
    &["raid", "--level", "0", "--members", "2", "--driver", "passthrough"],
    &["replay", "tests/data/trace-fiu-mail.txt"],
];

#[test]
fn plot_names_a_directory_for_every_command() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("plot-{}", std::process::id()));
    let file = dir.join("chart.svg");
    for cmd in PLOTTING {
        usage_error(&[cmd, &["--plot", file.to_str().unwrap()]].concat(), &["--plot", "takes a directory"]);
    }
    assert!(!file.exists(), "a refused --plot created {}", file.display());
    // The directory form writes every chart the command draws into it.
    let sweep = dir.join("sweep");
    let args = ["sweep", "--capacity", "64MiB", "--pages-per-block", "16", "--op", "10%,30%", "--quiet"];
    let out = duraflash(&[&args[..], &["--plot", sweep.to_str().unwrap()]].concat());
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let svg = std::fs::read_to_string(sweep.join("sweep.svg")).expect("sweep --plot DIR writes DIR/sweep.svg");
    assert!(svg.starts_with("<svg") && svg.contains("WAF"), "not a WAF chart");
}

#[test]
fn corpus_output_fits_in_100_columns() {
    let out = duraflash(&["corpus", "alice29", "random", "--capacity", "256MiB", "--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.lines().count() > 4, "no table: {text}");
    for line in text.lines() {
        assert!(line.chars().count() <= 100, "{} columns: {line}", line.chars().count());
    }
}

#[test]
fn gen_trace_without_arguments_prints_its_usage_not_a_traceback() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/gen-trace.py");
    for args in [&[][..], &["msr"], &["nope", "10"], &["fiu", "ten"]] {
        let out = Command::new("python3").arg(script).args(args).output().expect("python3 runs");
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("usage: gen-trace.py msr|fiu RECORDS"), "{args:?}: {err}");
        assert!(!err.contains("Traceback"), "{args:?}: {err}");
    }
}

#[test]
fn capacity_full_means_the_presets_own_size_on_every_command() {
    // Refused for another reason after the drive is built: 'full' parsed.
    usage_error(&["optimizer", "--capacity", "full", "--preset", "sf2281-240g"], &["--preset sf2281-240g"]);
    // A sweep's jobs carry it as given, for each job to size its own drive.
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("full-jobs-{}", std::process::id()));
    let jobs = dir.join("jobs.txt");
    let points = dir.join("points");
    std::fs::create_dir_all(&dir).unwrap();
    let out = duraflash(&[
        "sweep",
        "--capacity",
        "full",
        "--op",
        "10%,30%",
        "--compress-pct",
        "0",
        "--dedupe-pct",
        "0",
        "--emit-jobs",
        jobs.to_str().unwrap(),
        "--points-dir",
        points.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = std::fs::read_to_string(&jobs).unwrap();
    assert_eq!(text.lines().count(), 2);
    assert!(text.lines().all(|l| l.contains(" --capacity full ")), "{text}");
}

#[test]
fn a_missing_argument_is_named_without_a_stray_separator() {
    usage_error(&["replay", "--level", "0", "trace.csv"], &["not provided: --members"]);
    usage_error(&["raid", "--level", "0"], &["not provided: --members <MEMBERS>, --driver <DRIVER>"]);
}

#[test]
fn a_refused_geometry_names_the_flag_the_user_gave() {
    let job = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("geometry-{}.fio", std::process::id()));
    std::fs::write(&job, "[j]\nrw=randwrite\nsize=4k\n").unwrap();
    usage_error(
        &["run", job.to_str().unwrap(), "--pages-per-block", "65536", "--capacity", "64MiB"],
        &["--pages-per-block", "512.00 MiB", "gc.high_watermark", "fewer pages per block"],
    );
}

#[test]
fn an_op_no_capacity_gives_names_the_op_range_that_works_instead() {
    for op in ["1000%", "0.0000001"] {
        let args = ["wa", "--op", op, "--capacity", "64MiB"];
        usage_error(&args, &["--op", "no capacity up to the drive's", "--op from 71.9% to 943.7% works"]);
        let err = stderr(&duraflash(&args));
        assert!(!err.contains("use at least") && !err.contains("TiB"), "{err}");
    }
    usage_error(&["wa", "--op", "7%", "--capacity", "256MiB"], &["--op", "--capacity 643MiB gives it"]);
}

#[test]
fn a_zoned_job_with_room_for_one_request_is_a_usage_error_naming_file_line_and_option() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("zoned-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("one-slot.fio");
    std::fs::write(&job, "[j]\nrw=randwrite\nsize=4k\nrandom_distribution=zoned:1/1:99/99\n").unwrap();
    let path = job.to_str().unwrap();
    usage_error(&["run", path, "--capacity", "64MiB"], &[path, "line 4", "random_distribution", "size=4096"]);
    // A size the drive resolves (a percentage) is checked when the jobs are planned.
    std::fs::write(&job, "[j]\nrw=randwrite\nbs=512k\nsize=1%\nrandom_distribution=zoned:1/1:99/99\n").unwrap();
    usage_error(&["run", path, "--capacity", "64MiB"], &[path, "job 'j'", "random_distribution", "size"]);
    usage_error(&["wa", "--capacity", "16MiB", "--bs", "16MiB", "--workload", "hotcold:0.2:0.8"], &["--workload"]);
}

#[test]
fn a_study_with_nothing_to_measure_is_refused_up_front() {
    usage_error(&["wa", "--capacity", "16MiB", "--trim-pct", "100"], &["--trim-pct 100", "0 to 99"]);
    usage_error(&["sweep", "--capacity", "64MiB", "--trim-pct", "0,100"], &["--trim-pct", "0 to 99"]);
}

#[test]
fn a_span_beyond_the_drive_is_refused_as_runs_size_is() {
    usage_error(&["atto", "--capacity", "16MiB", "--span", "1T"], &["--span 1.00 TiB", "16.00 MiB"]);
    usage_error(&["iometer", "--capacity", "16MiB", "--span", "1T"], &["--span 1.00 TiB", "16.00 MiB"]);
    usage_error(&["torture", "--capacity", "16MiB", "--atto", "1T"], &["--atto 1.00 TiB", "16.00 MiB"]);
    // The default spans (256 MiB, 1 GiB) fit a smaller drive by covering all of it.
    let v = json(&duraflash(&["iometer", "--capacity", "16MiB", "--ops", "100", "--quiet", "--json", "-"]));
    assert_eq!(v["span"], 16u64 << 20);
}
