//! The memory estimate made from a config before anything is allocated,
//! against what a drive of that config holds once written to steady state
//! (its own count of heap bytes by structure).

use duraflash::content::pattern::DataSpec;
use duraflash::device::memory::{MemoryEstimate, PROCESS_BYTES};
use duraflash::lab::wa::{run, WaSpec};
use duraflash::workload::access::Access;
use duraflash::{Drive, DriveConfig, Media};

/// Estimated and held bytes of one drive written to steady state.
fn estimate_and_held(media: Media, data: DataSpec) -> (u64, u64) {
    let mut cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(256 << 20).unwrap();
    cfg.media = media;
    let cfg = cfg.with_pages_per_block(16).unwrap();
    let estimate = MemoryEstimate::of(&cfg, 1).total() - PROCESS_BYTES;
    let mut drive = Drive::new(cfg).unwrap();
    let spec = WaSpec {
        access: Access::Uniform,
        request_bytes: 4096,
        data,
        trim_pct: 0,
        span: 1.0,
        precondition: 1.0,
        measure: 0.2,
    };
    run(&mut drive, &spec, 5, &mut |_, _| {}).unwrap();
    drive.check_invariants().unwrap();
    let f = drive.footprint();
    (estimate, f.metadata() + f.chunk_data)
}

fn assert_within(estimate: u64, held: u64, tolerance: f64, what: &str) {
    let ratio = estimate as f64 / held as f64;
    eprintln!("{what}: estimate {estimate} B, held {held} B, ratio {ratio:.3}");
    assert!((ratio - 1.0).abs() <= tolerance, "{what}: estimate {estimate} B, held {held} B, ratio {ratio:.3}");
}

#[test]
fn metadata_estimate_matches_a_steady_state_drive_with_compressible_data() {
    let (estimate, held) = estimate_and_held(Media::MetadataOnly, DataSpec::compressible(50).unwrap());
    assert_within(estimate, held, 0.15, "metadata-only, 50 % compressible");
}

#[test]
fn memory_media_estimate_covers_incompressible_data() {
    let (estimate, held) = estimate_and_held(Media::Memory, DataSpec::incompressible());
    assert_within(estimate, held, 0.05, "memory media, incompressible");
}
