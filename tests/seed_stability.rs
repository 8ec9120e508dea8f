//! A figure is reproduced only if it holds at every seed (issue 20, item
//! 3). Runs the whole `reproduce --scale tiny` at seeds 1, 5 and 9 (about
//! half a minute a seed; raid and optimizer run at their quick size
//! there): no row of any study changes its verdict from one seed to the
//! next but the named [`SEED_UNSTABLE`] ones, and `duraflash compare`
//! says the same. The RAID-0, manual-TRIM and write-amplification-policy
//! rows (issue 21) must moreover agree at every seed, but for
//! [`NOT_AT_EVERY_SEED`]. Both lists only shrink.

use std::path::PathBuf;
use std::process::{Command, Output};

use duraflash::lab::report::{fmt_ours, Comparison, Report, Row, Verdict};

const SEEDS: [u64; 3] = [1, 5, 9];

/// Whether the default build has both SandForce quirks: without them the
/// SandForce rows follow other firmware, and no row moves with the seed.
const QUIRKS: bool = cfg!(all(feature = "quirk-read-degradation", feature = "quirk-incomplete-trim"));

/// Rows whose verdict moves with the seed at the tiny scale: not
/// reproduced there, whatever one seed shows. Each must still move.
///
/// 5.0.2's AS-SSD write after TRIM is 0.939, 0.974 and 0.911 of clean at
/// seeds 1, 5 and 9 on the 1 GiB model, against a ceiling of 0.95 ("not
/// fully restored"): the 256 MiB file there is a quarter of the drive and
/// the half of each TRIM range left mapped costs it little GC. At the
/// quick scale it is 0.672, 0.720 and 0.718, inside the band at every
/// seed. (5.0.3's fresh-file read after TRIM, once here, disagrees at all
/// three seeds since the SF-2281 dies program both planes.)
const SEED_UNSTABLE: &[(&str, &str)] =
    &[("incompressible", "sf-5.0.2 incompressible: AS-SSD write after TRIM / clean")];

/// The parts whose every row must agree at every seed.
const AGREE_AT_EVERY_SEED: &[&str] = &["raid", "optimizer", "wa-policies"];

/// Rows of those parts that do not agree at all three seeds, by part and
/// quantity, with what the seeds gave: open problems of the model, never
/// a loosened criterion. A row that agrees at every seed must leave.
const NOT_AT_EVERY_SEED: &[(&str, &str)] = &[
    // 0.579 / 0.756 / 0.430 on the tiny scale's 1 GiB model: the writing
    // scenarios fall off a GC cliff that a fixed idle-GC headroom places
    // differently at each seed; the quick scale's 16 GiB model holds at
    // 0.257-0.271 (docs/optimizer.md).
    ("optimizer", "used / clean"),
];

fn duraflash(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_duraflash")).args(args).output().expect("binary runs")
}

/// `reproduce --scale tiny` at `seed`: its output directory and report.
fn reproduce(seed: u64) -> (PathBuf, Report) {
    let out = std::env::temp_dir().join(format!("duraflash-seeds-{seed}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let seed_arg = seed.to_string();
    let o =
        duraflash(&["reproduce", "--scale", "tiny", "--quiet", "--seed", &seed_arg, "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "seed {seed}: {}", String::from_utf8_lossy(&o.stderr));
    let r: Report = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert!(r.ok(), "seed {seed}: every part ran");
    for p in &r.parts {
        assert!(p.error.is_none(), "seed {seed}: {}: {:?}", p.name, p.error);
        assert!(!p.rows.is_empty(), "seed {seed}: {}: rows", p.name);
    }
    (out, r)
}

#[test]
fn every_study_keeps_its_verdicts_at_three_seeds() {
    let (dirs, runs): (Vec<PathBuf>, Vec<(String, Report)>) =
        SEEDS.iter().map(|&s| reproduce(s)).map(|(d, r)| (d, (format!("seed {}", r.seed), r))).unzip();
    let comparison = Comparison::new(&runs);
    let unstable = |part: &str, q: &str| QUIRKS && SEED_UNSTABLE.contains(&(part, q));
    let listed = |part: &str, q: &str| NOT_AT_EVERY_SEED.contains(&(part, q));
    let mut unexpected = Vec::new();
    for c in &comparison.rows {
        assert!(c.runs.iter().all(Option::is_some), "{}: {}: a row at every seed", c.part, c.quantity);
        let seen: Vec<&Row> = c.runs.iter().flatten().collect();
        let values: Vec<String> = seen.iter().map(|r| format!("{} ({})", fmt_ours(r), r.verdict)).collect();
        let line = format!("{}: {}: {} at seeds {SEEDS:?}", c.part, c.quantity, values.join(" / "));
        match (c.changes(), unstable(&c.part, &c.quantity)) {
            (true, false) => unexpected.push(format!("a seed changes its verdict: {line}")),
            (false, true) => {
                unexpected.push(format!("holds at three seeds now (remove it from SEED_UNSTABLE): {line}"))
            }
            (true, true) => println!("known, moves with the seed: {line}"),
            (false, false) => println!("holds: {line}"),
        }
        if AGREE_AT_EVERY_SEED.contains(&c.part.as_str()) {
            let everywhere = seen.iter().all(|r| r.verdict == Verdict::Agrees);
            match (everywhere, listed(&c.part, &c.quantity)) {
                (false, false) => unexpected.push(format!("disagrees at some seed: {line}")),
                (true, true) => unexpected.push(format!("agrees at every seed now (remove it from the list): {line}")),
                _ => {}
            }
        }
    }
    let has = |part: &str, q: &str| comparison.rows.iter().any(|c| c.part == part && c.quantity == q);
    for (part, q) in NOT_AT_EVERY_SEED.iter().chain(SEED_UNSTABLE) {
        assert!(has(part, q), "{part}: {q}: no such row");
    }
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
    compare_names_the_unstable_rows(&dirs);
    for d in dirs {
        std::fs::remove_dir_all(&d).unwrap();
    }
}

/// `duraflash compare --changed` over the runs exits 1 naming each row
/// that moves, and 0 when none does.
fn compare_names_the_unstable_rows(dirs: &[PathBuf]) {
    let mut args = vec!["compare", "--changed"];
    args.extend(dirs.iter().map(|d| d.to_str().unwrap()));
    let o = duraflash(&args);
    let (stdout, stderr) = (String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    let moving: &[(&str, &str)] = if QUIRKS { SEED_UNSTABLE } else { &[] };
    assert_eq!(o.status.code(), Some(if moving.is_empty() { 0 } else { 1 }), "{stderr}");
    for (part, q) in moving {
        assert!(stderr.contains(&format!("{part}: {q}")), "{stderr}");
        assert!(stdout.contains(&format!("| {part} | {q} **(changes)** |")), "{stdout}");
    }
}
