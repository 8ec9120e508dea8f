//! The torture protocol's later HD Tach write sweeps play back the first
//! sweep's encodings from a tape instead of generating, compressing and
//! hashing the same bytes again: every figure must be what encoding them
//! gives, on both ways of isolating a sweep, and a replay that writes
//! something else must be refused rather than trusted.

use duraflash::content::pattern::DataSpec;
use duraflash::datapath::tape::Tape;
use duraflash::lab::torture::{torture_reusing, Duration, Reuse, TortureData, TortureSpec};
use duraflash::workload::review::{hdtach_between, HdTach, Isolation};
use duraflash::workload::WorkloadError;
use duraflash::{Drive, DriveConfig};

/// An HD Tach pass (seed 7) whose write sweep uses `tape`.
fn taped(
    d: &mut Drive,
    zones: u32,
    data: DataSpec,
    isolation: Isolation,
    tape: &mut Option<Tape>,
) -> Result<HdTach, WorkloadError> {
    hdtach_between(d, zones, data, 7, isolation, tape, |_| Ok(()), &mut |_| {}).map(|(h, ())| h)
}

fn config(capacity: u64) -> DriveConfig {
    let mut cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(capacity).unwrap();
    cfg.media = duraflash::Media::MetadataOnly;
    cfg
}

#[test]
fn reused_encodings_give_every_figure_of_a_run_that_encodes() {
    for data in [TortureData::Compressible, TortureData::PseudoRandom] {
        let spec = TortureSpec {
            data,
            duration: Duration::DriveWrites(0.6),
            qd: 32,
            span: 1.0,
            zones: 8,
            atto_span: Some(8 << 20),
            seed: 3,
        };
        let cfg = config(256 << 20);
        let run = |reuse| {
            let r = torture_reusing(&cfg, &spec, reuse, &mut |_, _| {}).unwrap();
            (serde_json::to_value(&r).unwrap(), serde_json::to_value(&r.smart).unwrap())
        };
        let (plain, reused) = (run(Reuse::Nothing), run(Reuse::Encodings));
        assert_eq!(plain, reused, "{data:?}");
        // The states differ, so equal sweeps are not one sweep copied.
        let tortured = &plain.0["tortured"]["hdtach"]["write"];
        assert_ne!(tortured, &plain.0["clean"]["hdtach"]["write"], "{data:?}");
    }
}

#[test]
fn a_tape_replays_through_clones_and_images_and_refuses_other_sweeps() {
    let data = DataSpec::compressible(50).unwrap();
    let cfg = config(128 << 20);
    let path = std::env::temp_dir().join(format!("duraflash-reuse-test-{}.tape", std::process::id()));
    let mut tape = Some(Tape::create(&path).unwrap());
    let mut fresh = Drive::new(cfg.clone()).unwrap();
    let recorded = taped(&mut fresh, 8, data, Isolation::Clone, &mut tape).unwrap();
    let t = tape.as_ref().unwrap();
    assert!(t.replaying() && t.units() == (128 << 20) / 4096, "{t:?}");
    // A drive holding other data, swept both ways, with and without the tape.
    let mut held = Drive::new(cfg.clone()).unwrap();
    let other = DataSpec::compressible(25).unwrap();
    duraflash::workload::job::run_job(
        &mut held,
        &duraflash::workload::job::fill_spec(64 << 20, 128 << 10, 4, other, 9),
        &mut |_| {},
    )
    .unwrap();
    for isolation in [Isolation::Clone, Isolation::Image] {
        let (mut a, mut b) = (held.clone(), held.clone());
        let plain = taped(&mut a, 8, data, isolation, &mut None).unwrap();
        let replayed = taped(&mut b, 8, data, isolation, &mut tape).unwrap();
        assert_eq!(plain, replayed, "{isolation:?}");
        assert_ne!(plain.write, recorded.write, "the state shows in the write sweep");
        assert_eq!(a.stats(), b.stats(), "{isolation:?}: the swept state is restored either way");
    }
    // Seven zones write fewer units than eight (each zone rounds down to whole requests).
    let mut c = held.clone();
    let refused = taped(&mut c, 7, data, Isolation::Clone, &mut tape);
    assert!(refused.is_err(), "a sweep of another length is refused");
    let mut memory = cfg.clone();
    memory.media = duraflash::Media::Memory;
    let mut d = Drive::new(memory).unwrap();
    assert!(d.put_tape(Tape::create(&path.with_extension("2")).unwrap()).is_err(), "a drive keeping bytes");
}

/// `torture --profile` splits the run's CPU time by phase, and the
/// per-unit phases share their clock reads (timing every 4 KiB piece
/// alone made them a fifth of the full-size headline).
#[test]
fn the_profile_splits_the_run_by_phase_and_costs_little() {
    let json = std::env::temp_dir().join(format!("duraflash-profile-test-{}.json", std::process::id()));
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_duraflash"))
        .args(["torture", "--capacity", "256MiB", "--quiet", "--profile", "--json"])
        .arg(&json)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("profile: "), "the split is printed");
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let p = &v["profile"];
    let s = |k: &str| p[k].as_f64().unwrap_or_else(|| panic!("{k} in {p}"));
    for phase in ["generate_s", "lz4_s", "blake3_s"] {
        assert!(s(phase) > 0.0, "{phase} measured: {p}");
    }
    let parts = ["generate_s", "lz4_s", "blake3_s", "image_s", "copy_s", "profiling_s", "simulation_s"];
    let sum: f64 = parts.iter().map(|k| s(k)).sum();
    assert!((sum - s("total_cpu_s")).abs() <= 0.01 * s("total_cpu_s"), "the phases add up: {sum} of {p}");
    // What keeps the accounting cheap is the clock reads a piece: two for
    // a piece timed alone, one for each of a thread's consecutive pieces
    // (`profile::Laps`, the encoding's). Their CPU cost is a timing, which
    // a test on a loaded machine cannot hold (it read 3.3-5.1 %).
    let count = |k: &str| p[k].as_u64().unwrap_or_else(|| panic!("{k} in {p}"));
    assert!(count("timed_pieces") > 0, "{p}");
    assert!(count("clock_reads") as f64 <= 1.6 * count("timed_pieces") as f64, "laps share clock reads: {p}");
}
