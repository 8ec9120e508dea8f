//! The command line: bad input exits 2 with one line, results are
//! deterministic, JSON carries what the issue names.

use std::process::{Command, Output};

fn duraflash(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_duraflash")).args(args).output().expect("binary runs")
}

/// A quick content-free `wa` run (no bytes generated, hashed or stored).
const QUICK: [&str; 14] = [
    "wa",
    "--capacity",
    "256MiB",
    "--compression",
    "off",
    "--dedup",
    "off",
    "--media",
    "metadata-only",
    "--precondition",
    "0.5",
    "--measure",
    "0.5",
    "--quiet",
];

#[test]
fn bad_input_exits_2_with_one_line_naming_the_problem() {
    let cases: [(&[&str], &str); 32] = [
        (&["wa", "--bogus"], "--bogus"),
        (&["wa", "--threads", "100000"], "--threads"),
        (&["wa", "--capacity", "12XB"], "--capacity"),
        (&["wa", "--capacity", "lots"], "--capacity"),
        (&["wa", "--capacity", "1TB"], "capacity"),
        (&["wa", "--op", "0"], "op"),
        (&["wa", "--op", "-0.5"], "op"),
        (&["wa", "--gc", "lru"], "greedy, cost-benefit, fifo"),
        (&["wa", "--compression", "maybe"], "on, off"),
        (&["wa", "--preset", "nope"], "sf2281-240g"),
        (&["wa", "--bs", "3000"], "--bs"),
        (&["wa", "--compress-pct", "120"], "--compress-pct"),
        (&["wa", "--workload", "zipf:abc"], "--workload"),
        (&["torture", "--minutes", "-1"], "--minutes"),
        (&["torture", "--firmware", "sf-9"], "sf-5.0.2"),
        (&["atto", "--span", "0"], "--span"),
        (&["iometer", "--span", "1k"], "--span"),
        (&["hdtach", "--capacity", "16MiB", "--zones", "1000"], "--zones"),
        (&["serve", "--listen", "nowhere"], "--listen"),
        (&["serve", "--metrics", "9100"], "--metrics"),
        (&["serve", "--stats-interval", "-1"], "--stats-interval"),
        (&["serve", "--capacity", "1TB"], "capacity"),
        (&["raid", "--level", "0", "--members", "1", "--driver", "rst-11.2"], "--members 1"),
        (&["raid", "--level", "10", "--members", "3", "--driver", "passthrough"], "even"),
        (&["raid", "--level", "5", "--members", "3", "--driver", "passthrough"], "0, 1, 10"),
        (&["raid", "--level", "0", "--members", "2", "--driver", "rst-9"], "rst-10.6"),
        (&["raid", "--level", "0", "--members", "2", "--driver", "rst-11.2", "--stripe", "6k"], "--stripe"),
        // A stripe row wider than a member, or too few rows for the zones.
        (&["raid", "--capacity", "32MiB", "--level", "0", "--members", "257", "--driver", "passthrough"], "--stripe"),
        (
            &[
                "raid",
                "--capacity",
                "32MiB",
                "--level",
                "1",
                "--members",
                "2",
                "--driver",
                "passthrough",
                "--stripe",
                "32MiB",
            ],
            "--zones 64 rows",
        ),
        (&["wa", "--streams", "8", "--capacity", "64MiB"], "fewer streams (--streams"),
        (&["optimizer", "--preset", "sf2281-240g"], "--preset"),
        (&["sweep", "--smart", "--point", "0"], "--smart"),
    ];
    for (args, needle) in cases {
        let out = duraflash(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?} printed more than one line: {err}");
        assert!(err.contains(needle), "{args:?}: '{err}' does not mention {needle}");
        assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
        assert!(out.stdout.is_empty(), "{args:?} printed to stdout");
    }
}

#[test]
fn wa_json_has_the_named_fields_and_is_byte_identical_for_a_seed() {
    let mut args = QUICK.to_vec();
    args.extend(["--seed", "7", "--json", "-"]);
    let a = duraflash(&args);
    assert_eq!(a.status.code(), Some(0), "{}", String::from_utf8_lossy(&a.stderr));
    let b = duraflash(&args);
    assert_eq!(a.stdout, b.stdout, "same seed, same JSON");
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).expect("stdout is JSON");
    for key in [
        "waf",
        "host_bytes",
        "nand_bytes",
        "gc_relocated_bytes",
        "erases",
        "compression_ratio",
        "dedup_ratio",
        "op",
        "pages_per_block",
        "capacity_bytes",
        "seed",
        "config",
        "command",
        "version",
        "quirks",
    ] {
        assert!(v.get(key).is_some(), "JSON lacks {key}");
    }
    assert_eq!(v["seed"], 7);
    assert_eq!(v["quirks"], serde_json::json!(build_quirks()), "the JSON names this build's quirks");
    assert!(v["waf"].as_f64().unwrap() > 1.0);
    assert!(String::from_utf8_lossy(&a.stderr).contains("WAF"), "summary moves to stderr");

    let mut other = QUICK.to_vec();
    other.extend(["--seed", "8", "--json", "-"]);
    assert_ne!(duraflash(&other).stdout, a.stdout, "another seed, other numbers");
}

/// The firmware quirks compiled into this build (see Cargo.toml's features).
fn build_quirks() -> Vec<&'static str> {
    let mut q = Vec::new();
    if cfg!(feature = "quirk-read-degradation") {
        q.push("read-degradation");
    }
    if cfg!(feature = "quirk-incomplete-trim") {
        q.push("incomplete-trim");
    }
    q
}

#[test]
fn help_names_the_quirks_compiled_in() {
    let out = duraflash(&["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    let line = help.lines().find(|l| l.starts_with("Firmware quirks in this build:")).expect("a quirks line");
    match build_quirks() {
        q if q.is_empty() => assert!(line.contains("none"), "{line}"),
        q => assert!(line.ends_with(&q.join(", ")), "{line}"),
    }
}

/// A sweep split into one job per point and merged gives the same table
/// as running the grid at once (each point has its own seed).
#[test]
fn sweep_jobs_merge_to_the_same_results() {
    let dir = std::env::temp_dir().join(format!("duraflash-sweep-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("points")).unwrap();
    let grid = [
        "--capacity",
        "64MiB",
        "--op",
        "0.1,0.3",
        // 2 MiB blocks would step a 64 MiB drive's OP by 100 %.
        "--pages-per-block",
        "16",
        "--compress-pct",
        "0",
        "--dedupe-pct",
        "0,30",
        "--precondition",
        "0.3",
        "--measure",
        "0.3",
        "--quiet",
    ];
    let jobs = dir.join("jobs.txt");
    let points = dir.join("points");
    let mut emit: Vec<&str> = vec!["sweep"];
    emit.extend(grid);
    emit.extend(["--emit-jobs", jobs.to_str().unwrap(), "--points-dir", points.to_str().unwrap()]);
    assert!(duraflash(&emit).status.success());
    let lines = std::fs::read_to_string(&jobs).unwrap();
    assert_eq!(lines.lines().count(), 4, "one command per grid point");
    for line in lines.lines() {
        let status = Command::new("sh").arg("-c").arg(line).status().unwrap();
        assert!(status.success(), "{line}");
    }
    let merged = duraflash(&["sweep", "--merge", points.to_str().unwrap(), "--json", "-", "--quiet"]);
    let mut direct: Vec<&str> = vec!["sweep"];
    direct.extend(grid);
    direct.extend(["--json", "-"]);
    let direct = duraflash(&direct);
    let points_of = |out: &[u8]| -> serde_json::Value {
        serde_json::from_slice::<serde_json::Value>(out).unwrap()["points"].clone()
    };
    assert_eq!(points_of(&merged.stdout), points_of(&direct.stdout));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn smart_adds_a_table_and_json_whose_byte_counts_match_the_stats() {
    let mut args = QUICK.to_vec();
    args.extend(["--smart", "--json", "-"]);
    let out = duraflash(&args);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("ID# ATTRIBUTE_NAME") && err.contains("241 Lifetime_Writes_GiB"), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    let attr = |id: u64| v["smart"]["attributes"].as_array().unwrap().iter().find(|a| a["id"] == id).cloned().unwrap();
    let (nand, host) = (attr(233)["bytes"].as_u64().unwrap(), attr(241)["bytes"].as_u64().unwrap());
    assert_eq!(attr(241)["raw"].as_u64().unwrap(), host >> 30);
    // The run's WAF is over the measured phase; the lifetime ratio covers the fill too.
    assert!(nand > 0 && host > 0 && nand as f64 / host as f64 >= 1.0);
    let plain = duraflash(&QUICK);
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("ATTRIBUTE_NAME"), "no table without --smart");
}

/// `--image`: a second `wa` resumes the drive the first saved (its host
/// writes add up), `image info` describes it, different drive flags and a
/// damaged image are refused with a message naming the problem.
#[test]
fn wa_resumes_from_an_image_and_refuses_a_mismatched_or_damaged_one() {
    let dir = std::env::temp_dir().join(format!("duraflash-cli-image-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let image = dir.join("wa.img");
    let image = image.to_str().expect("utf-8 path");
    let _ = std::fs::remove_file(image);
    let mut args = QUICK.to_vec();
    args.extend(["--image", image]);
    // Lifetime host writes of the drive in the image.
    let host_writes = || {
        let out = duraflash(&["image", "info", image, "--json", "-"]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        v["summary"]["stats"]["host_write_bytes"].as_u64().expect("host_write_bytes")
    };
    assert!(duraflash(&args).status.success());
    let first = host_writes();
    assert!(duraflash(&args).status.success());
    let second = host_writes();
    assert_eq!(second, 2 * first, "the second run continued the first drive");

    let info = duraflash(&["image", "info", image]);
    let text = String::from_utf8_lossy(&info.stderr).into_owned() + &String::from_utf8_lossy(&info.stdout);
    assert!(
        info.status.success()
            && text.contains(&format!("image version {}", duraflash::image::VERSION))
            && text.contains("NAND="),
        "{text}"
    );

    let mut other = args.clone();
    other[2] = "128MiB";
    let out = duraflash(&other);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("different drive") && err.contains("logical_bytes"), "{err}");

    let mut bytes = std::fs::read(image).expect("image");
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(image, &bytes).expect("damage");
    let out = duraflash(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("checksum"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `soak --image` writes its scratch drive to a new file and keeps it; an
/// existing file or a directory is refused (exit 2, naming the flag)
/// before it starts, and the file is left as it was.
#[test]
fn soak_refuses_an_existing_image_or_a_directory() {
    let dir = std::env::temp_dir().join(format!("duraflash-cli-soak-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let image = dir.join("soak.img");
    let soak = |path: &std::path::Path| {
        let args = ["soak", "--ops", "2000", "--capacity", "16MiB", "--image-every", "500", "--quiet", "--image"];
        duraflash(&[&args[..], &[path.to_str().expect("utf-8 path")]].concat())
    };
    let out = soak(&image);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let kept = std::fs::read(&image).expect("the last image is kept");
    for path in [&image, &dir] {
        let out = soak(path);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{}: {err}", path.display());
        assert!(err.starts_with(&format!("duraflash: error: --image {}: ", path.display())), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    assert!(std::fs::read(&image).expect("image") == kept, "the existing image is untouched");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--image` through a symbolic link resumes and saves the file the link
/// names, and the link stays a link.
#[test]
fn an_image_saved_through_a_symbolic_link_keeps_the_link() {
    let dir = std::env::temp_dir().join(format!("duraflash-cli-link-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let (image, alias) = (dir.join("real.img"), dir.join("alias.img"));
    std::os::unix::fs::symlink("real.img", &alias).expect("symbolic link");
    let host_writes = |path: &std::path::Path| {
        let out = duraflash(&["image", "info", path.to_str().expect("utf-8 path"), "--json", "-"]);
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        v["summary"]["stats"]["host_write_bytes"].as_u64().expect("host_write_bytes")
    };
    for path in [&alias, &image, &alias] {
        let out = duraflash(&[&QUICK[..], &["--image", path.to_str().expect("utf-8 path")]].concat());
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(alias.symlink_metadata().expect("alias").file_type().is_symlink(), "the alias is still a link");
    }
    let once = host_writes(&image) / 3;
    assert!(once > 0 && host_writes(&alias) == 3 * once, "three runs aged one drive");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A drive aged by one command is measured by the next: `iometer` fills
/// and writes a span into an image, `hdtach` resumes it (reads find the
/// data), `replay`-style single-drive commands refuse other drive flags.
#[test]
fn benchmarks_resume_an_image_aged_by_another_command() {
    let dir = std::env::temp_dir().join(format!("duraflash-cli-age-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let image = dir.join("aged.img");
    let image = image.to_str().expect("utf-8 path");
    let drive = ["--capacity", "128MiB", "--media", "metadata-only", "--image", image, "--quiet"];
    let mut iometer = vec!["iometer", "--span", "32MiB", "--ops", "500"];
    iometer.extend(drive);
    assert!(duraflash(&iometer).status.success());
    let info = duraflash(&["image", "info", image, "--json", "-"]);
    let v: serde_json::Value = serde_json::from_slice(&info.stdout).expect("JSON");
    let written = v["summary"]["stats"]["host_write_bytes"].as_u64().expect("host writes");
    assert!(written >= 32 << 20, "the span was filled: {written}");
    let mut hdtach = vec!["hdtach", "--zones", "8", "--json", "-"];
    hdtach.extend(drive);
    let out = duraflash(&hdtach);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(v["stats"]["host_write_bytes"].as_u64().unwrap() >= written, "hdtach saw the aged drive");
    let other =
        ["hdtach", "--zones", "8", "--capacity", "64MiB", "--media", "metadata-only", "--image", image, "--quiet"];
    let out = duraflash(&other);
    assert!(String::from_utf8_lossy(&out.stderr).contains("logical_bytes"), "names the field");
    assert_eq!(duraflash(&other).status.code(), Some(2), "different flags are refused");
    let _ = std::fs::remove_dir_all(&dir);
}
