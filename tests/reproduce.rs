//! `duraflash reproduce`: the report builds, the HTML parses, every image
//! it references exists, every table row has our number beside a
//! reference, a criterion and a verdict, and results.json holds what the
//! HTML shows (at the tiny scale). Every predicted row agrees at the
//! default quick scale but the named known disagreements, and each of
//! those still disagrees (the list only shrinks); the tiny scale, which
//! the other tests run, differs from the quick one on the rows named in
//! [`TINY_DISAGREES`] and [`TINY_AGREES`]. A part that fails is reported
//! and the others still run. Whether verdicts hold at other seeds is
//! `tests/seed_stability.rs`.

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
/// as much at 240 GB as at 120 GB (0.238 and 0.186 of clean at the quick
/// scale, 8 and 4 GiB): AS-SSD's 1 GiB file outgrows the few dozen free
/// blocks idle GC leaves and pays steady-state GC; the review's 240 GB
/// drive lost nothing (0.979), its 120 GB drive as much as ours (0.236:
/// that row agrees). After TRIM the model restores both drives (1.000,
/// 0.999), the review only the larger (0.626, then 0.814 on a second
/// pass). No sourced mechanism is known for either split
/// (docs/sandforce-trim.md). Clean, the 240 GB model writes at its
/// write path's rate (284.2 MB/s, calibrated to the review's 284.4) and
/// the 120 GB one at its dies' (16 two-plane dies, 201.7 MB/s), 0.710 of
/// the larger against the review's 0.570 (162.1 MB/s): what holds the
/// real 120 GB drive a fifth below its dies is not modelled. The row
/// agreed (0.598) only while a write crossed the link and the engine
/// whole before its first page was programmed, which slowed QD 1 writes
/// of 16 MB on both drives to two thirds of their dies.
///
/// The 2012 review's incompressible AS-SSD table (60 minutes of torture)
/// agrees on 5.0.2's writes (0.218 tortured against 0.277, 0.672 after
/// TRIM against 0.814: incomplete TRIM leaves half the drive mapped). The
/// reads disagree: a 16 MB request with one unit out of place is read
/// unit by unit, and a fresh file written under GC pressure has units out
/// of place where its stripe skipped a die waiting for a free block (0.38
/// / 0.39 of clean against 0.753 / 0.971; see docs/sandforce-trim.md, "The
/// 2012 incompressible table"). 5.0.3 writes as 5.0.2 does when tortured
/// (0.218 against 0.585) and is fully restored by TRIM (1.000 against
/// 0.563): the model has nothing of what 5.0.3 changed; its fresh file
/// reads 0.38 tortured (0.987). After TRIM it reads 1.000 (0.997; it was
/// 0.89 while a die out of erased blocks was passed by even when it held a
/// dead block: it now erases that block and keeps its place in the
/// stripe). The tortured drive's dies hold no dead blocks, only GC can
/// free them, and the two tortured reads cannot both agree with one
/// mechanism: before TRIM 5.0.2 and 5.0.3 are the same firmware to the
/// model, and the review's bands (0.565-0.942, 0.938-1.037) barely meet.
///
/// The optimizer's used state loses more than the review's (0.579 of
/// clean against 0.845) and moves with the seed (docs/optimizer.md).
const KNOWN_DISAGREEMENTS: &[(&str, &str)] = &[
    ("torture", "sf-3.x incompressible: write after TRIM / clean"),
    ("torture", "sf-5.0.3 incompressible: write after TRIM / clean"),
    ("resilience", "240 GB: AS-SSD write tortured / clean"),
    ("resilience", "120 GB: AS-SSD write after TRIM / clean"),
    ("resilience", "120 GB: second AS-SSD pass after TRIM / clean"),
    ("resilience", "120 GB / 240 GB: AS-SSD write clean"),
    ("incompressible", "sf-5.0.2 incompressible: AS-SSD read tortured / clean"),
    ("incompressible", "sf-5.0.2 incompressible: AS-SSD read after TRIM / clean"),
    ("incompressible", "sf-5.0.3 incompressible: AS-SSD write tortured / clean"),
    ("incompressible", "sf-5.0.3 incompressible: AS-SSD write after TRIM / clean"),
    ("incompressible", "sf-5.0.3 incompressible: AS-SSD read tortured / clean"),
    ("optimizer", "used / clean"),
];

/// Rows that agree at the quick scale and disagree on the tiny models:
/// what the tiny scale gets wrong, not what the model does.
///
/// 5.0.2's incompressible HD Tach write after TRIM is 0.727 of clean at
/// the quick scale (4 GiB) and 1.000 on the tiny model. What scales wrongly is
/// the tiny array: whole 2 MiB blocks on 32 dies step its size by 64 MiB,
/// a quarter of the drive, so the 256 MiB model of the torture part has 7
/// blocks a die and 75 % OP (the report's geometry line), and the half of
/// the drive that incomplete TRIM leaves mapped fits in its spare blocks
/// without GC. The 1 GiB model agrees (`torture --capacity 1GiB --firmware
/// sf-5.0.2 --data incompressible`: 163.5 of 212.9 MB/s, 0.768).
///
/// Five rows were listed here before writes streamed through the link and
/// the engine and the SF-2281 dies programmed both planes: the three ATTO
/// reads, the 120 GB drive's tortured AS-SSD write and 5.0.2's tortured
/// incompressible one. Each now agrees on the tiny models as at the quick
/// scale.
const TINY_DISAGREES: &[(&str, &str)] = &[("torture", "sf-5.0.2 incompressible: write after TRIM / clean")];

/// Known disagreements that agree on the tiny models at seed 1: none.
const TINY_AGREES: &[(&str, &str)] = &[];

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

/// `compare` refuses what is not a report: exit 2 naming the file.
#[test]
fn compare_names_a_file_that_is_not_a_report() {
    let dir = scratch("compare-bad");
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("results.json");
    std::fs::write(&bad, "{\"parts\": [").unwrap();
    let o = duraflash(&["compare", dir.to_str().unwrap(), bad.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains(bad.to_str().unwrap()) && stderr.contains("not a reproduce results.json"), "{stderr}");
    let o = duraflash(&["compare", dir.join("missing").to_str().unwrap(), bad.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    // A report given as its directory is read from its results.json, and
    // --json there is refused before anything is read or written.
    let other = scratch("compare-other");
    std::fs::create_dir_all(&other).unwrap();
    let o =
        duraflash(&["compare", dir.to_str().unwrap(), other.to_str().unwrap(), "--json", bad.to_str().unwrap()], None);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--json") && stderr.contains("is also the report compared"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&bad).unwrap(), "{\"parts\": [", "the report is untouched");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&other).unwrap();
}
