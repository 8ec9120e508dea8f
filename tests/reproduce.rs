//! `duraflash reproduce`: the report builds, the HTML parses, every image
//! it references exists, every table row has our number beside a
//! reference, a criterion and a verdict, and results.json holds what the
//! HTML shows (at the tiny scale). Every predicted row agrees at the
//! default quick scale but the named known disagreements, and each of
//! those still disagrees (the list only shrinks); the tiny scale, which
//! the other tests run, differs from the quick one on the rows named in
//! [`TINY_DISAGREES`] and [`TINY_AGREES`]. A part that fails is reported
//! and the others still run.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use duraflash::lab::report::{fmt_ours, Kind, Report, Verdict};

/// Predicted rows that disagree with the reviews today at the quick scale
/// (`duraflash reproduce`), by part and quantity: each is an open problem
/// of the model (issue 20), never a loosened criterion. Remove a row when
/// its mechanism is fixed.
///
/// The two incompressible write-after-TRIM rows disagree at every scale:
/// the sweep after TRIM writes 0.997 of clean at 256 MiB, 0.995 at 1 GiB
/// and 0.998 at 4 GiB (sf-5.0.3). They used to agree from 1 GiB up (0.933,
/// 0.896) through an artefact that grew with the drive: GC erased the
/// oldest-sealed dead block wherever it sat, and a die whose free list ran
/// dry dropped out of the write stripe. Victims equally cheap to clean now
/// go to the die with the fewest free blocks (`ftl::victim::tie_key`), as
/// a firmware that stripes over dies does; what is left is the erase time
/// (about 1 %). A scale-free cause of the review's loss is still missing.
///
/// The Vertex 3 rows (2011, AS-SSD after incompressible torture) split by
/// capacity in the reviews and not in the model. Tortured, the model loses
/// as much at 240 GB as at 120 GB (0.249 and 0.215 of clean at the quick
/// scale, 8 and 4 GiB): AS-SSD's 1 GiB file outgrows the few dozen free
/// blocks idle GC leaves and pays steady-state GC; the review's 240 GB
/// drive lost nothing (0.979), its 120 GB drive as much as ours (0.236:
/// that row agrees). After TRIM the model restores both drives (0.993,
/// 1.000), the review only the larger (0.626, then 0.814 on a second
/// pass). No sourced mechanism is known for either split
/// (docs/sandforce-trim.md).
///
/// The 2012 review's incompressible AS-SSD table (60 minutes of torture)
/// agrees on 5.0.2's writes (0.263 tortured against 0.277, 0.789 after
/// TRIM against 0.814: incomplete TRIM leaves half the drive mapped). The
/// reads disagree: a 16 MB request with one unit out of place is read
/// unit by unit, and a fresh file written under GC pressure has units out
/// of place where its stripe skipped a die waiting for a free block (0.36
/// / 0.39 of clean against 0.753 / 0.971; see docs/sandforce-trim.md, "The
/// 2012 incompressible table"). 5.0.3 writes as 5.0.2 does when tortured
/// (0.263 against 0.585) and is fully restored by TRIM (0.995 against
/// 0.563): the model has nothing of what 5.0.3 changed; its fresh file
/// reads 0.36 tortured and 0.86 after TRIM (0.987, 0.997).
///
/// The optimizer's used state loses more than the review's (0.579 of
/// clean against 0.845) and moves with the seed (docs/optimizer.md).
const KNOWN_DISAGREEMENTS: &[(&str, &str)] = &[
    ("torture", "sf-3.x incompressible: write after TRIM / clean"),
    ("torture", "sf-5.0.3 incompressible: write after TRIM / clean"),
    ("resilience", "240 GB: AS-SSD write tortured / clean"),
    ("resilience", "120 GB: AS-SSD write after TRIM / clean"),
    ("resilience", "120 GB: second AS-SSD pass after TRIM / clean"),
    ("incompressible", "sf-5.0.2 incompressible: AS-SSD read tortured / clean"),
    ("incompressible", "sf-5.0.2 incompressible: AS-SSD read after TRIM / clean"),
    ("incompressible", "sf-5.0.3 incompressible: AS-SSD write tortured / clean"),
    ("incompressible", "sf-5.0.3 incompressible: AS-SSD write after TRIM / clean"),
    ("incompressible", "sf-5.0.3 incompressible: AS-SSD read tortured / clean"),
    ("incompressible", "sf-5.0.3 incompressible: AS-SSD read after TRIM / clean"),
    ("optimizer", "used / clean"),
];

/// Rows that agree at the quick scale and disagree on the tiny models:
/// what the tiny scale gets wrong, not what the model does.
///
/// The three ATTO read rows read 0.692 of clean at the quick scale (a
/// read with one unit out of place is served unit by unit, and ATTO's
/// fresh 64 MiB file, written while GC runs, has such a unit in every
/// transfer of 256 KiB and up) and lose nothing on the 256 MiB tiny model
/// (1.000). What scales wrongly is the tiny array: whole 2 MiB blocks on
/// 32 dies step its size by 64 MiB, a quarter of the drive, so it gets 7
/// blocks a die where 5.8 would keep the preset's OP, and its data OP is
/// 23.4 % against 11.7-14.5 % from 512 MiB to full size (`wa --capacity
/// C` prints it). With compressible data the tortured tiny drive then has
/// spare blocks left, and ATTO's file is written with few dies waiting
/// for a free block, so its stripe seldom skips one: at 256 MiB its read stays 1.000 of clean with a 16, 32 or
/// 64 MiB file (`torture --capacity 256MiB --firmware sf-5.0.2 --atto S`),
/// at 512 MiB it is 1.000 with 16 MiB and 0.809 with 64 MiB, at 1 GiB
/// 0.767 with 16 MiB and 0.713 with 64 MiB. Blocks of 64 pages at 256 MiB
/// (the quick scale's array at a quarter of its size) do not bring the
/// loss back (`--pages-per-block 64 --atto 16MiB`: 1.014 of clean).
///
/// The AS-SSD file of the tiny models (256 / 128 MiB on 1 GiB / 512 MiB)
/// is a quarter of the drive, against an eighth and a quarter at the
/// quick scale, and the free blocks idle GC leaves (a few dozen at any
/// capacity) take a larger share of it: the 120 GB drive's tortured write
/// is 0.351 of clean there (0.215 at the quick scale, 0.236 in the
/// review), 5.0.2's tortured incompressible write 0.374 (0.263; 0.277).
const TINY_DISAGREES: &[(&str, &str)] = &[
    ("atto", "sf-3.x: ATTO read tortured / clean"),
    ("atto", "sf-5.0.2: ATTO read tortured / clean"),
    ("atto", "sf-5.0.3: ATTO read tortured / clean"),
    ("resilience", "120 GB: AS-SSD write tortured / clean"),
    ("incompressible", "sf-5.0.2 incompressible: AS-SSD write tortured / clean"),
];

/// Known disagreements that agree on the tiny models at seed 1: 5.0.3's
/// fresh AS-SSD file after TRIM reads 1.000 of clean there and 0.86 at
/// the quick scale; on the tiny models it also moves with the seed (see
/// [`SEED_UNSTABLE`]).
const TINY_AGREES: &[(&str, &str)] = &[("incompressible", "sf-5.0.3 incompressible: AS-SSD read after TRIM / clean")];

/// Whether the default build has both SandForce quirks: without them the
/// SandForce rows follow other firmware, and the lists above are for the
/// default build.
const QUIRKS: bool = cfg!(all(feature = "quirk-read-degradation", feature = "quirk-incomplete-trim"));

fn duraflash(args: &[&str], corpora: Option<&Path>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_duraflash"));
    c.args(args);
    if let Some(dir) = corpora {
        c.env("DURAFLASH_CORPORA", dir);
    }
    c.output().expect("binary runs")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("duraflash-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// The cells of every row of each section's results table (not its tables
/// of measurements), by section id.
fn html_tables(html: &str) -> Vec<(String, Vec<Vec<String>>)> {
    let dom = tl::parse(html, tl::ParserOptions::default()).expect("the HTML parses");
    let parser = dom.parser();
    let mut out = Vec::new();
    for section in dom.query_selector("section").expect("selector").filter_map(|h| h.get(parser)) {
        let tag = section.as_tag().expect("a tag");
        let id = tag.attributes().get("id").flatten().map(|v| v.as_utf8_str().to_string()).unwrap_or_default();
        let mut rows = Vec::new();
        let results = tag
            .query_selector(parser, "table")
            .expect("selector")
            .filter_map(|h| h.get(parser))
            .filter_map(|t| t.as_tag())
            .find(|t| t.attributes().get("class").flatten().is_some_and(|c| c.as_utf8_str() == "results"))
            .expect("a results table");
        for tr in results.query_selector(parser, "tr").expect("selector").filter_map(|h| h.get(parser)) {
            let cells: Vec<String> = tr
                .as_tag()
                .expect("a tag")
                .query_selector(parser, "td")
                .expect("selector")
                .filter_map(|h| h.get(parser))
                .map(|n| n.inner_text(parser).to_string())
                .collect();
            if !cells.is_empty() {
                rows.push(cells);
            }
        }
        out.push((id, rows));
    }
    out
}

#[test]
fn the_report_builds_and_agrees_with_its_json() {
    let out = scratch("report");
    let o = duraflash(&["reproduce", "--scale", "tiny", "--quiet", "--out", out.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: Report = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert!(report.ok());
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    let dom = tl::parse(&html, tl::ParserOptions::default()).unwrap();
    let parser = dom.parser();
    let mut images = 0;
    for img in dom.query_selector("img").unwrap().filter_map(|h| h.get(parser)) {
        let src = img.as_tag().unwrap().attributes().get("src").flatten().unwrap().as_utf8_str().to_string();
        assert!(out.join(&src).is_file(), "image {src} exists");
        images += 1;
    }
    assert_eq!(images, report.parts.iter().map(|p| p.plots.len()).sum::<usize>());
    let tables = html_tables(&html);
    assert_eq!(tables.len(), report.parts.len());
    for ((id, rows), part) in tables.iter().zip(&report.parts) {
        assert_eq!(id, &part.name);
        assert!(!rows.is_empty(), "{id}: a table");
        assert_eq!(rows.len(), part.rows.len(), "{id}: one row per result");
        for (cells, r) in rows.iter().zip(&part.rows) {
            assert_eq!(cells.len(), 8, "{id}: quantity, reference, source, criterion, ours, unit, verdict, kind");
            assert!(!cells[1].trim().is_empty(), "{id}: {}: a reference", cells[0]);
            assert!(!cells[2].trim().is_empty(), "{id}: {}: a source", cells[0]);
            assert!(r.criterion.lo.is_some() || r.criterion.hi.is_some(), "{id}: {}: a bound", cells[0]);
            let ours: f64 = cells[4].trim().parse().unwrap_or_else(|_| panic!("{id}: {}: our number", cells[0]));
            assert!(ours.is_finite());
            assert_eq!(cells[4], fmt_ours(r), "{id}: the HTML shows the JSON's number");
            assert_eq!(cells[0], r.quantity);
            assert_eq!(cells[6], r.verdict.to_string(), "{id}: {}: the HTML shows the JSON's verdict", r.quantity);
            assert_eq!(r.verdict == Verdict::Agrees, r.criterion.holds(r.ours), "{id}: {}: verdict", r.quantity);
            assert_eq!(cells[7], r.kind.to_string());
        }
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    for p in &report.parts {
        assert!(md.contains(&p.title), "report.md has {}", p.title);
    }
    let s = report.summary;
    let line = format!("{} of {} predicted figures agree", s.predicted_agree, s.predicted);
    assert!(html.contains(&line) && md.contains(&line), "both say '{line}'");
    if QUIRKS {
        let tiny: Vec<(&str, &str)> = KNOWN_DISAGREEMENTS
            .iter()
            .filter(|row| !TINY_AGREES.contains(row))
            .chain(TINY_DISAGREES)
            .copied()
            .collect();
        predicted_rows_agree_but(&report, &tiny);
    }
    std::fs::remove_dir_all(&out).unwrap();
}

/// `duraflash reproduce` on its defaults (the quick scale, seed 1): every
/// predicted row agrees but the [`KNOWN_DISAGREEMENTS`].
#[test]
fn at_the_quick_scale_predicted_rows_agree_but_the_known_ones() {
    if !QUIRKS {
        println!("skipped: the known disagreements are those of the default build, with both quirks");
        return;
    }
    let out = scratch("report-quick");
    let o = duraflash(&["reproduce", "--quiet", "--out", out.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let report: Report = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    assert_eq!(report.scale, duraflash::lab::report::Scale::Quick);
    predicted_rows_agree_but(&report, KNOWN_DISAGREEMENTS);
    std::fs::remove_dir_all(&out).unwrap();
}

/// Every predicted row agrees, except those in `known`, which each still
/// disagree.
fn predicted_rows_agree_but(report: &Report, known_rows: &[(&str, &str)]) {
    let known = |part: &str, q: &str| known_rows.contains(&(part, q));
    let mut unexpected = Vec::new();
    for (p, r) in report.rows().filter(|(_, r)| r.kind == Kind::Predicted) {
        let line = format!(
            "{}: {}: ours {} {}, wanted {} {}",
            p.name,
            r.quantity,
            fmt_ours(r),
            r.unit,
            r.criterion.text,
            r.criterion.interval()
        );
        match (r.verdict, known(&p.name, &r.quantity)) {
            (Verdict::Agrees, false) => {}
            (Verdict::Disagrees, true) => println!("known disagreement: {line}"),
            (Verdict::Disagrees, false) => unexpected.push(format!("disagrees: {line}")),
            (Verdict::Agrees, true) => unexpected.push(format!("agrees now (remove it from the list): {line}")),
        }
    }
    for (part, q) in known_rows {
        assert!(report.rows().any(|(p, r)| p.name == *part && r.quantity == *q), "{part}: {q}: no such row");
    }
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
}

#[test]
fn a_failing_part_is_reported_and_the_others_still_run() {
    let out = scratch("report-fail");
    let no_corpora = scratch("no-corpora");
    std::fs::create_dir_all(&no_corpora).unwrap();
    let o = duraflash(
        &["reproduce", "--scale", "tiny", "--quiet", "--only", "wa,corpora", "--out", out.to_str().unwrap()],
        Some(&no_corpora),
    );
    assert_eq!(o.status.code(), Some(1), "a failed part fails the run");
    let report: Report = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
    let wa = report.parts.iter().find(|p| p.name == "wa").unwrap();
    let corpora = report.parts.iter().find(|p| p.name == "corpora").unwrap();
    assert!(wa.error.is_none() && !wa.rows.is_empty(), "wa still ran");
    assert!(corpora.error.is_some(), "corpora failed without its files");
    let html = std::fs::read_to_string(out.join("index.html")).unwrap();
    assert!(html.contains("This part failed"));
    std::fs::remove_dir_all(&out).unwrap();
    std::fs::remove_dir_all(&no_corpora).unwrap();
}

#[test]
fn unknown_parts_are_usage_errors() {
    let o = duraflash(&["reproduce", "--only", "nope", "--out", "/nonexistent/x"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("nope"));
}

/// Rows whose verdict moves with the seed at the tiny scale: not
/// reproduced, whatever one seed shows (issue 20). 5.0.3's fresh AS-SSD
/// file after TRIM reads 1.000, 0.833 and 0.914 of clean at seeds 1, 5
/// and 9: GC only erases then, and a 16 MB request is read unit by unit
/// when the stripe skips a die that is waiting for an erase. Each must
/// still move (the list only shrinks).
const SEED_UNSTABLE: &[(&str, &str)] = &[("incompressible", "sf-5.0.3 incompressible: AS-SSD read after TRIM / clean")];

/// The resilience and incompressible parts give the same verdict on every
/// row at three seeds but the [`SEED_UNSTABLE`] ones, which each change
/// (both run in seconds at the tiny scale).
#[test]
fn resilience_verdicts_hold_at_three_seeds() {
    // The incompressible part checks the 5.0.x quirks; without them its
    // drives are other firmware (whose tortured reads do move with the
    // seed), and only the resilience part (3.x) is held.
    let parts: &[&str] = if QUIRKS { &["resilience", "incompressible"] } else { &["resilience"] };
    let mut all: Vec<Vec<(String, String, Verdict)>> = Vec::new();
    for seed in ["1", "5", "9"] {
        let out = scratch(&format!("resilience-{seed}"));
        let o = duraflash(
            &[
                "reproduce",
                "--scale",
                "tiny",
                "--quiet",
                "--only",
                "resilience,incompressible",
                "--seed",
                seed,
                "--out",
                out.to_str().unwrap(),
            ],
            None,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let report: Report = serde_json::from_str(&std::fs::read_to_string(out.join("results.json")).unwrap()).unwrap();
        let mut these = Vec::new();
        for &name in parts {
            let part = report.parts.iter().find(|p| p.name == name).expect("the part ran");
            assert!(part.error.is_none(), "{:?}", part.error);
            for r in &part.rows {
                println!("seed {seed}: {name}: {}: {} ({})", r.quantity, fmt_ours(r), r.verdict);
                these.push((name.to_string(), r.quantity.clone(), r.verdict));
            }
        }
        all.push(these);
        std::fs::remove_dir_all(&out).unwrap();
    }
    let unstable = |part: &str, q: &str| SEED_UNSTABLE.contains(&(part, q));
    for (i, (part, q, verdict)) in all[0].iter().enumerate() {
        let moved = all.iter().any(|seed| seed[i].2 != *verdict);
        match (moved, unstable(part, q)) {
            (true, false) => panic!("{part}: {q}: a seed changes its verdict"),
            (false, true) => panic!("{part}: {q}: holds at three seeds now (remove it from SEED_UNSTABLE)"),
            _ => {}
        }
    }
    for (part, q) in SEED_UNSTABLE.iter().filter(|_| QUIRKS) {
        assert!(all[0].iter().any(|(p, r, _)| p == part && r == q), "{part}: {q}: no such row");
    }
}
