//! Numeric flags that set how long a run is have documented upper bounds
//! (docs/cli.md): a value past one, or NaN, infinite or negative, is
//! refused at once with exit 2 and one line naming the flag, never run
//! for ever or announced with a saturated estimate.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const U64_MAX: &str = "18446744073709551615";
const U32_MAX: &str = "4294967295";

/// Runs `args` for at most 60 s; exit 2 with one stderr line containing
/// every needle.
fn refused(args: &[&str], needles: &[&str]) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_duraflash"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary starts");
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("{args:?} still runs after a minute");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let err = std::io::read_to_string(child.stderr.take().unwrap()).unwrap();
    assert_eq!(status.code(), Some(2), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: more than one line: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: '{err}' does not mention {n}");
    }
    assert!(!err.contains("estimated"), "{args:?} announced a run it refuses: {err}");
}

#[test]
fn run_lengths_past_their_bound_or_not_numbers_are_refused_naming_the_flag() {
    let raid = ["raid", "--level", "0", "--members", "2", "--driver", "rst-11.2", "--capacity", "16MiB"];
    for v in ["1e300", U64_MAX, "NaN", "inf", "-1"] {
        refused(&["torture", "--capacity", "16MiB", "--minutes", v], &["--minutes"]);
        refused(&["torture", "--capacity", "16MiB", "--drive-writes", v], &["--drive-writes"]);
        refused(&[&raid[..], &["--minutes", v]].concat(), &["--minutes"]);
        refused(&["wa", "--capacity", "16MiB", "--precondition", v], &["--precondition"]);
        refused(&["wa", "--capacity", "16MiB", "--measure", v], &["--measure"]);
    }
    // Just past each bound, with the bound named.
    refused(&["torture", "--capacity", "16MiB", "--minutes", "10001"], &["--minutes", "10000"]);
    refused(&["torture", "--capacity", "16MiB", "--drive-writes", "1001"], &["--drive-writes", "1000"]);
    refused(&["wa", "--capacity", "16MiB", "--precondition", "1001"], &["--precondition", "1000"]);
    refused(&["corpus", "alice29", "--capacity", "16MiB", "--precondition", "1e300"], &["--precondition", "1000"]);
    refused(&["corpus", "alice29", "--capacity", "16MiB", "--measure", "1e300"], &["--measure", "1000"]);
    let sweep = ["sweep", "--capacity", "64MiB", "--op", "150%", "--compress-pct", "0", "--dedupe-pct", "0"];
    refused(&[&sweep[..], &["--precondition", "1e300"]].concat(), &["--precondition", "1000"]);
    refused(&[&sweep[..], &["--measure", U64_MAX]].concat(), &["--measure", "1000"]);
    refused(&["bench", "--sizes", "1GiB", "--precondition", "1e300"], &["--precondition", "1000"]);
    refused(&["bench", "--sizes", "1GiB", "--measure", "NaN"], &["--measure"]);
    refused(&["bench", "--sizes", "1GiB", "--min-writes", U64_MAX], &["--min-writes", "1000 drive-writes"]);
    refused(&["iometer", "--capacity", "16MiB", "--ops", U64_MAX], &["--ops", "100000000"]);
    refused(&["iometer", "--capacity", "16MiB", "--ops", "0"], &["--ops"]);
    refused(&["soak", "--capacity", "16MiB", "--ops", U64_MAX], &["--ops", "1000000000"]);
}

#[test]
fn a_corpus_length_or_share_it_cannot_run_is_a_usage_error() {
    refused(&["corpus", "alice29", "--capacity", "16MiB", "--measure", "0"], &["--measure", "positive"]);
    refused(&["corpus", "alice29", "--capacity", "16MiB", "--share", "1e-300"], &["--share 1e-300"]);
}

#[test]
fn counts_the_drive_cannot_hold_are_usage_errors() {
    let raid = ["raid", "--level", "0", "--members", "2", "--driver", "rst-11.2", "--capacity", "16MiB"];
    refused(&["torture", "--capacity", "16MiB", "--zones", U32_MAX], &["--zones", "at most 128"]);
    refused(&[&raid[..], &["--zones", U32_MAX]].concat(), &["--zones"]);
    refused(&["raid", "--level", "0", "--members", U64_MAX, "--driver", "rst-11.2"], &["--members"]);
    // Named as written, not spelled out in 300 digits.
    refused(&["serve", "--capacity", "16MiB", "--stats-interval", "1e300"], &["--stats-interval 1e300: out of range"]);
}

#[test]
fn the_longest_torture_accepted_is_announced_in_hours_not_a_saturated_count() {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_duraflash"))
        .args(["torture", "--capacity", "full", "--drive-writes", "1000", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary starts");
    let mut line = String::new();
    std::io::BufReader::new(child.stderr.take().unwrap()).read_line(&mut line).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let hours: u64 = line.split("estimated ").nth(1).and_then(|t| t.split(" h ").next()?.parse().ok()).expect(&line);
    assert!((10..1000).contains(&hours), "{line}");
}

/// A capacity that is no whole number of 4 KiB units runs on the whole
/// units below it, and says so.
#[test]
fn a_capacity_of_part_of_a_unit_is_noted_not_silently_rounded() {
    let run = |capacity: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_duraflash"))
            .args(["run", "--capacity", capacity, "--quiet", "--name=j", "--rw=write", "--size=1m"])
            .output()
            .expect("binary runs");
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stderr).unwrap()
    };
    let odd = run("100000001");
    assert!(odd.contains("capacity 100000001 bytes is not a whole number of 4096-byte units"), "{odd}");
    assert!(odd.contains("the drive holds 99999744 bytes"), "{odd}");
    assert!(!run("64MiB").contains("whole number"));
}
