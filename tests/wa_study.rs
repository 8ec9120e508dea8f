//! The write-amplification study against the analytic models, and how data
//! reduction changes it. Content-free runs where bytes do not matter keep
//! this fast.

use duraflash::content::pattern::DataSpec;
use duraflash::lab::wa::{run, WaReport, WaSpec};
use duraflash::workload::access::Access;
use duraflash::{Drive, DriveConfig, GcPolicy, Media};

fn study(cfg: DriveConfig, data: DataSpec, pre: f64, measure: f64) -> WaReport {
    let mut drive = Drive::new(cfg).unwrap();
    let spec = WaSpec {
        access: Access::Uniform,
        request_bytes: 4096,
        data,
        trim_pct: 0,
        span: 1.0,
        precondition: pre,
        measure,
    };
    let report = run(&mut drive, &spec, 3, &mut |_, _| {}).unwrap();
    drive.check_invariants().unwrap();
    report
}

/// sf2281 geometry at 512 MiB with 16-page blocks: over 2000 blocks.
fn config(op: f64, compression: bool, dedup: bool) -> DriveConfig {
    let mut cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(512 << 20).unwrap();
    cfg.geometry.pages_per_block = 16;
    cfg.compression = compression;
    cfg.dedup = dedup;
    cfg.media = Media::MetadataOnly;
    cfg.with_op(op).unwrap()
}

#[test]
fn greedy_waf_matches_desnoyers_model_within_5_percent() {
    for op in [0.1, 0.2] {
        let cfg = config(op, false, false);
        assert!(cfg.geometry.total_blocks() >= 1000);
        let r = study(cfg, DataSpec::incompressible(), 2.0, 1.0);
        let m = r.model.expect("uniform writes have a model");
        let err = (r.waf / m.greedy - 1.0).abs();
        assert!(err < 0.05, "OP {op}: measured {} vs model {} ({:.1}% off)", r.waf, m.greedy, err * 100.0);
        assert!(r.waf < m.fifo, "greedy beats FIFO's model at finite block size");
    }
}

#[test]
fn more_over_provisioning_means_less_write_amplification() {
    let low = study(config(0.1, false, false), DataSpec::incompressible(), 1.0, 0.5);
    let high = study(config(0.3, false, false), DataSpec::incompressible(), 1.0, 0.5);
    assert!(high.waf < 0.7 * low.waf, "OP 30%: {} vs OP 10%: {}", high.waf, low.waf);
}

#[test]
fn fifo_gc_is_worse_than_greedy_under_uniform_writes() {
    let greedy = study(config(0.1, false, false), DataSpec::incompressible(), 2.0, 1.0);
    let mut cfg = config(0.1, false, false);
    cfg.gc.policy = GcPolicy::Fifo;
    let fifo = study(cfg, DataSpec::incompressible(), 2.0, 1.0);
    let model = fifo.model.unwrap();
    assert!(fifo.waf > greedy.waf * 1.03, "fifo {} greedy {}", fifo.waf, greedy.waf);
    assert!((fifo.waf / model.fifo - 1.0).abs() < 0.05, "fifo {} vs LRW model {}", fifo.waf, model.fifo);
}

#[test]
fn compression_and_dedup_cut_waf() {
    let base = study(config(0.1, true, true), DataSpec::incompressible(), 1.0, 0.5);
    let half = study(config(0.1, true, true), DataSpec::compressible(50).unwrap(), 1.0, 0.5);
    let dedup = study(config(0.1, true, true), DataSpec::compressible(50).unwrap().with_dedupe(50).unwrap(), 1.0, 0.5);
    assert!(half.waf <= 0.6 * base.waf, "compress 50: {} vs incompressible {}", half.waf, base.waf);
    assert!(half.waf < 1.0, "compressible data writes less NAND than host bytes: {}", half.waf);
    assert!(dedup.waf < half.waf, "dedupe 50: {} vs {}", dedup.waf, half.waf);
    assert!(dedup.dedup_ratio < 0.7, "half the units repeat: {}", dedup.dedup_ratio);
    // The reduced-data model (c x WA(alpha / c)) still tracks the measurement.
    let m = half.model.unwrap();
    assert!((half.waf / m.greedy - 1.0).abs() < 0.1, "measured {} vs reduced model {}", half.waf, m.greedy);
}
