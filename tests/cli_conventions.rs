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
    let pct = json(&quick_wa(&["--op", "7%"]));
    let frac = json(&quick_wa(&["--op", "0.07"]));
    assert_eq!(pct["config"], frac["config"], "7% and 0.07 are one drive");
    assert_eq!(pct["waf"], frac["waf"]);
    let op = pct["op"].as_f64().unwrap();
    assert!(op > 0.07 && op < 0.5, "OP {op} is a fraction near 7 %");
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
