//! The committed corpora and what the drive makes of them: checksums as
//! the manifest says, compression as lz4 gives it block by block, and WAF
//! as the data-reduction model predicts.

use duraflash::content::corpus::{self, Corpus};
use duraflash::lab::corpora::lz4_block_ratio;
use duraflash::lab::wa::{run_with, WaReport, WaSpec};
use duraflash::workload::access::Access;
use duraflash::{Drive, DriveConfig, Media};
use sha2::{Digest, Sha256};

const UNIT: usize = 4096;

fn study(corpus: &Corpus, capacity: u64, pre: f64, measure: f64) -> WaReport {
    let mut cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(capacity).unwrap();
    cfg.media = Media::MetadataOnly;
    let units = cfg.logical_bytes / UNIT as u64;
    let mut drive = Drive::new(cfg).unwrap();
    let spec = WaSpec {
        access: Access::Uniform,
        request_bytes: UNIT as u64,
        data: duraflash::content::pattern::DataSpec::incompressible(),
        trim_pct: 0,
        span: 1.0,
        precondition: pre,
        measure,
    };
    let mut content = corpus.content(UNIT, units, 0);
    let r = run_with(&mut drive, &spec, content.as_mut(), 3, &mut |_, _| {}).unwrap();
    drive.check_invariants().unwrap();
    r
}

#[test]
fn committed_files_match_the_manifest() {
    let dir = corpus::default_dir();
    let entries = corpus::manifest(&dir).unwrap();
    assert!(entries.len() >= 6, "text, words, database and log corpora are listed");
    let mut total = 0;
    for e in &entries {
        let bytes = std::fs::read(dir.join(&e.file)).unwrap();
        assert_eq!(bytes.len() as u64, e.bytes, "{}: size", e.name);
        assert_eq!(format!("{:x}", Sha256::digest(&bytes)), e.sha256, "{}: checksum", e.name);
        assert!(!e.source.is_empty() && !e.licence.is_empty(), "{}: source and licence noted", e.name);
        total += bytes.len();
    }
    assert!(total < 10_000_000, "committed corpora stay under 10 MB: {total}");
}

#[test]
fn the_drive_compresses_each_corpus_as_lz4_does_block_by_block() {
    let dir = corpus::default_dir();
    for name in corpus::manifest(&dir).unwrap().into_iter().map(|e| e.name).chain(["random".to_string()]) {
        let c = Corpus::load(&name, &dir).unwrap();
        let lz4 = lz4_block_ratio(&c, UNIT);
        let r = study(&c, 32 << 20, 0.5, 0.5);
        println!("{name}: lz4 {lz4:.4}, drive {:.4}, dedup {:.4}", r.compression_ratio, r.dedup_ratio);
        assert!((r.compression_ratio - lz4).abs() <= 0.01 * lz4, "{name}: drive {} vs lz4 {lz4}", r.compression_ratio);
        match c.kind.as_str() {
            "random" => assert!(r.compression_ratio >= 0.99, "random data does not compress"),
            "text" => assert!(r.compression_ratio < 0.85, "{name}: text compresses clearly"),
            _ => {}
        }
    }
}

/// With live data reduced to a fraction c, NAND writes per host write
/// follow c x WA_greedy(physical / (c x logical)): the measured WAF of
/// fio's 25/50/75 % compressible sets tracks the model and falls with c.
#[test]
fn waf_follows_the_data_reduction_model() {
    let mut last = f64::MAX;
    for name in ["fio-c25", "fio-c50", "fio-c75"] {
        let c = Corpus::load(name, &corpus::default_dir()).unwrap();
        let r = study(&c, 64 << 20, 2.0, 1.0);
        let model = r.model.as_ref().unwrap();
        println!("{name}: WAF {:.3}, model {:.3} (write cost {:.3})", r.waf, model.greedy, model.write_cost);
        assert!((r.waf - model.greedy).abs() <= 0.10 * model.greedy, "{name}: {} vs {}", r.waf, model.greedy);
        assert!(r.waf < last, "{name}: more compression, less NAND written");
        last = r.waf;
    }
}

/// fio's dedupe_percentage=30 costs no NAND for the repeats: the drive
/// stores 70 % of the units written.
#[test]
fn fio_dedupe_percentage_reaches_the_drive() {
    let c = Corpus::load("fio-d30", &corpus::default_dir()).unwrap();
    let r = study(&c, 32 << 20, 0.5, 0.5);
    assert!((r.dedup_ratio - 0.70).abs() < 0.02, "dedup ratio {}", r.dedup_ratio);
    assert!((c.distinct_ratio(UNIT) - 0.70).abs() < 0.02);
}

#[test]
fn unknown_corpora_and_empty_files_are_clear_errors() {
    let dir = corpus::default_dir();
    let e = Corpus::load("nope", &dir).unwrap_err().to_string();
    assert!(e.contains("nope") && e.contains("alice29"), "{e}");
    let empty = std::env::temp_dir().join(format!("duraflash-empty-{}", std::process::id()));
    std::fs::write(&empty, b"").unwrap();
    let e = Corpus::load(empty.to_str().unwrap(), &dir).unwrap_err().to_string();
    std::fs::remove_file(&empty).unwrap();
    assert!(e.contains("empty"), "{e}");
}
