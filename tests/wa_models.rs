//! GC victim policies against their analytic models, and the orderings the
//! literature reports, coming out of the runs: random selection worst,
//! d-choices falling toward greedy as D grows, FIFO close to greedy under
//! uniform writes and clearly worse under hot/cold writes. Content-free
//! (metadata-only, incompressible, no dedup) so it runs in seconds.

use std::process::Command;

use duraflash::config::StreamInference;
use duraflash::content::pattern::DataSpec;
use duraflash::lab::wa::{run, WaReport, WaSpec};
use duraflash::workload::access::Access;
use duraflash::{Drive, DriveConfig, GcPolicy, Media};

/// sf2281 geometry at 128 MiB with 16-page (32-chunk) blocks: over 1000
/// blocks at every OP used here.
fn config(op: f64, policy: GcPolicy) -> DriveConfig {
    let mut cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(128 << 20).unwrap();
    cfg.geometry.pages_per_block = 16;
    cfg.compression = false;
    cfg.dedup = false;
    cfg.media = Media::MetadataOnly;
    cfg.gc.policy = policy;
    cfg.with_op(op).unwrap()
}

fn study(op: f64, policy: GcPolicy, access: Access) -> WaReport {
    let cfg = config(op, policy);
    assert!(cfg.geometry.total_blocks() >= 1000, "{} blocks", cfg.geometry.total_blocks());
    let mut drive = Drive::new(cfg).unwrap();
    let spec = WaSpec {
        access,
        request_bytes: 4096,
        data: DataSpec::incompressible(),
        trim_pct: 0,
        span: 1.0,
        precondition: 2.0,
        measure: 1.0,
    };
    let report = run(&mut drive, &spec, 5, &mut |_, _| {}).unwrap();
    drive.check_invariants().unwrap();
    report
}

/// Measured WAF within 3 % of the policy's mean-field model, at OP 7 %
/// and 28 %.
fn matches_model(policy: GcPolicy) {
    for op in [0.07, 0.28] {
        let r = study(op, policy, Access::Uniform);
        let model = r.model.as_ref().and_then(|m| m.policy).expect("uniform writes have a model");
        let err = r.waf / model - 1.0;
        assert!(err.abs() < 0.03, "{policy} OP {op}: measured {:.3} vs model {model:.3} ({:+.1}%)", r.waf, err * 100.0);
    }
}

#[test]
fn fifo_matches_its_model() {
    matches_model(GcPolicy::Fifo);
}

#[test]
fn random_selection_matches_its_model() {
    matches_model(GcPolicy::DChoices(1));
}

#[test]
fn two_choices_match_their_model() {
    matches_model(GcPolicy::DChoices(2));
}

#[test]
fn ten_choices_match_their_model() {
    matches_model(GcPolicy::DChoices(10));
}

#[test]
fn greedy_matches_its_model() {
    matches_model(GcPolicy::Greedy);
}

#[test]
fn the_literature_orderings_come_out_of_the_runs() {
    let waf = |policy, access| study(0.15, policy, access).waf;
    let uniform = Access::Uniform;
    let (random, two, ten) = (
        waf(GcPolicy::DChoices(1), uniform),
        waf(GcPolicy::DChoices(2), uniform),
        waf(GcPolicy::DChoices(10), uniform),
    );
    let (fifo, greedy) = (waf(GcPolicy::Fifo, uniform), waf(GcPolicy::Greedy, uniform));
    assert!(random > fifo && random > two, "random selection is worst: {random} vs fifo {fifo}, d=2 {two}");
    assert!(random > two && two > ten && ten > greedy, "d-choices falls toward greedy: {random} {two} {ten} {greedy}");
    assert!(ten < 1.05 * greedy, "ten choices are within 5% of greedy: {ten} vs {greedy}");
    assert!(fifo < 1.10 * greedy && fifo > greedy, "FIFO is close to greedy under uniform writes: {fifo} vs {greedy}");
    // Skew widens the gap while the cold blocks are still settling, as
    // here after 2 + 1 drive-writes: greedy finds the hot blocks' dead
    // space, FIFO cleans cold blocks as often as hot ones. Once they settle
    // (10 + 2 drive-writes) it does not widen (512 MiB, 16-page blocks:
    // 1.109 uniform, 1.081 at 10/90; 1 GiB, 64-page blocks: 1.011, 1.010),
    // and FIFO's loss to skew is what its LRW model predicts
    // (`fifo_under_mixed_hot_cold_matches_the_lrw_model`); the report's
    // row asserts only that FIFO stays behind greedy under skew.
    let gap = |access| waf(GcPolicy::Fifo, access) / waf(GcPolicy::Greedy, access);
    let (mild, strong) =
        (gap(Access::HotCold { hot: 0.2, writes: 0.8 }), gap(Access::HotCold { hot: 0.1, writes: 0.9 }));
    let even = fifo / greedy;
    println!("FIFO / greedy: uniform {even:.3}, 20/80 {mild:.3}, 10/90 {strong:.3}");
    assert!(strong > mild && mild > even + 0.02, "FIFO/greedy: uniform {even:.3}, 20/80 {mild:.3}, 10/90 {strong:.3}");
}

#[test]
fn windowed_greedy_spans_fifo_to_greedy() {
    let access = Access::HotCold { hot: 0.2, writes: 0.8 };
    let run = |policy| study(0.15, policy, access);
    let same = |a: &WaReport, b: &WaReport| (a.nand_bytes, a.erases) == (b.nand_bytes, b.erases);
    assert!(same(&run(GcPolicy::Windowed(1)), &run(GcPolicy::Fifo)), "a window of one is FIFO");
    assert!(same(&run(GcPolicy::Windowed(100_000)), &run(GcPolicy::Greedy)), "a window of every block is greedy");
    let waf: Vec<f64> = [2, 8, 64, 100_000].map(|w| run(GcPolicy::Windowed(w)).waf).to_vec();
    // Windows of 2 and 8 differ by about 0.3 % on average, below the 0.6 %
    // that one window's WAF moves between seeds (3.953-3.976 at seeds
    // 1, 2, 3, 5, 7): between them only "no worse beyond that noise" can
    // be asserted. From 2 to 64 to every block the gains (3 %, 6 %) are
    // far above it.
    let (two, eight, wide, all) = (waf[0], waf[1], waf[2], waf[3]);
    assert!(eight < two * 1.006, "a window of 8 is no worse than 2 beyond seed noise: {waf:?}");
    assert!(two > wide * 1.02 && wide > all * 1.02, "a wider window cleans emptier blocks: {waf:?}");
}

#[test]
fn same_seed_same_choices() {
    let a = study(0.15, GcPolicy::DChoices(2), Access::HotCold { hot: 0.2, writes: 0.8 });
    let b = study(0.15, GcPolicy::DChoices(2), Access::HotCold { hot: 0.2, writes: 0.8 });
    assert_eq!((a.nand_bytes, a.erases), (b.nand_bytes, b.erases));
}

#[test]
fn nonsense_policies_and_workloads_exit_2_naming_the_flag() {
    let cases: [(&[&str], &str); 6] = [
        (&["wa", "--gc", "d-choices:0"], "--gc"),
        (&["wa", "--gc", "windowed:0"], "--gc"),
        (&["wa", "--gc", "d-choices:two"], "--gc"),
        (&["wa", "--workload", "hotcold:1.5:0.8"], "--workload"),
        (&["sweep", "--gc", "greedy,d-choices:0"], "--gc"),
        (&["sweep", "--workload", "uniform,hotcold:0.2:1.2"], "--workload"),
    ];
    for (args, flag) in cases {
        let out = Command::new(env!("CARGO_BIN_EXE_duraflash")).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: '{err}' does not name {flag}");
    }
}

/// FIFO with hot and cold writes sharing the open blocks: Desnoyers' LRW
/// model under non-uniform traffic, exact for many blocks, within 3 %;
/// and skew costs FIFO well over a tenth against uniform writes (cold
/// pages survive every pass of the log and are copied each time).
#[test]
fn fifo_under_mixed_hot_cold_matches_the_lrw_model() {
    let uniform = study(0.15, GcPolicy::Fifo, Access::Uniform).waf;
    for (hot, writes) in [(0.2, 0.8), (0.1, 0.9)] {
        let r = study(0.15, GcPolicy::Fifo, Access::HotCold { hot, writes });
        let model = r.model.as_ref().and_then(|m| m.policy).expect("mixed FIFO hot/cold has a model");
        let err = r.waf / model - 1.0;
        assert!(err.abs() < 0.03, "{hot}/{writes}: measured {:.3} vs model {model:.3} ({:+.1}%)", r.waf, err * 100.0);
        assert!(r.waf > 1.1 * uniform, "{hot}/{writes}: {:.3} vs uniform {uniform:.3}", r.waf);
    }
}

/// `study` with `streams` hinted write streams and maybe a GC frontier,
/// on 4 dies: each frontier holds an open block per die, on average half
/// unwritten, so with 32 dies every frontier took 3 % of this drive and a
/// comparison of placements weighed open blocks as much as placement.
fn placed(op: f64, policy: GcPolicy, access: Access, streams: u8, gc_frontier: bool) -> WaReport {
    placed_inferring(op, policy, access, streams, gc_frontier, StreamInference::Off)
}

/// `placed` with the drive inferring the streams (`infer`) instead.
fn placed_inferring(
    op: f64,
    policy: GcPolicy,
    access: Access,
    streams: u8,
    gc_frontier: bool,
    infer: StreamInference,
) -> WaReport {
    let mut cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(128 << 20).unwrap();
    let mut g = cfg.geometry.clone();
    g.pages_per_block = 16;
    g.channels = 2;
    g.dies_per_channel = 2;
    cfg.set_geometry(g);
    cfg.compression = false;
    cfg.dedup = false;
    cfg.media = Media::MetadataOnly;
    cfg.gc.policy = policy;
    cfg.placement.streams = streams;
    cfg.placement.gc_frontier = gc_frontier;
    cfg.placement.infer = infer;
    let cfg = cfg.with_op(op).unwrap();
    let mut drive = Drive::new(cfg).unwrap();
    let spec = WaSpec {
        access,
        request_bytes: 4096,
        data: DataSpec::incompressible(),
        trim_pct: 0,
        span: 1.0,
        precondition: 2.0,
        measure: 1.0,
    };
    let report = run(&mut drive, &spec, 5, &mut |_, _| {}).unwrap();
    drive.check_invariants().unwrap();
    report
}

#[test]
fn separating_hot_from_cold_lowers_waf_between_the_two_pool_models() {
    for (hot, writes) in [(0.2, 0.8), (0.1, 0.9)] {
        let access = Access::HotCold { hot, writes };
        let mixed = placed(0.15, GcPolicy::Greedy, access, 1, false);
        let split = placed(0.15, GcPolicy::Greedy, access, 2, false);
        assert!(mixed.model.is_none(), "no model for mixed hot and cold data");
        let m = split.model.as_ref().expect("separated hot/cold has a model");
        // Both pools at the drive's alpha is uniform greedy at that alpha
        // (skew would then not matter): the model's `greedy`. (`policy` is
        // now the model of greedy's own split, checked at steady state in
        // `separated_hot_cold_matches_the_model_of_greedys_split`; at
        // 128 MiB after 2 + 1 drive-writes the cold pool is not yet there.)
        let (equal_alpha, optimal) = (m.greedy, m.hot_cold_optimal.unwrap());
        assert!(split.waf < 0.9 * mixed.waf, "{hot}/{writes}: separated {} vs mixed {}", split.waf, mixed.waf);
        // Greedy over both pools cannot beat the best split of the space,
        // and does at least as well as giving each pool the drive's alpha.
        assert!(
            optimal < split.waf && split.waf < equal_alpha * 1.01,
            "{hot}/{writes}: {optimal} < {} < {equal_alpha}",
            split.waf
        );
    }
}

/// Streams inferred from update recency (no hints) land between no
/// separation and the workload's perfect hint, nearer the hint; a window
/// far too short to see a hot unit's rewrites separates almost nothing.
#[test]
fn inferred_streams_land_between_mixed_and_hinted() {
    let access = Access::HotCold { hot: 0.1, writes: 0.9 };
    let mixed = placed(0.15, GcPolicy::Greedy, access, 1, false);
    let hinted = placed(0.15, GcPolicy::Greedy, access, 2, false);
    let recency = |window_milli| StreamInference::Recency { window_milli };
    let inferred = placed_inferring(0.15, GcPolicy::Greedy, access, 2, false, recency(1000));
    let blind = placed_inferring(0.15, GcPolicy::Greedy, access, 2, false, recency(1));
    let (m, h, i, b) = (mixed.waf, hinted.waf, inferred.waf, blind.waf);
    eprintln!("10/90 mixed {m:.3} hinted {h:.3} inferred {i:.3} window 0.001 {b:.3}");
    assert!(h < i && i < m, "hinted {h} < inferred {i} < mixed {m}");
    assert!(i - h < 0.5 * (m - h), "inferred {i} is nearer hinted {h} than mixed {m}");
    assert!(b > i + 0.5 * (m - i), "a window of a thousandth of a drive-write: {b} (inferred {i}, mixed {m})");
}

#[test]
fn a_gc_frontier_keeps_uniform_writes_on_their_model() {
    for policy in [GcPolicy::Greedy, GcPolicy::DChoices(2)] {
        let r = placed(0.15, policy, Access::Uniform, 1, true);
        let model = r.model.as_ref().and_then(|m| m.policy).unwrap();
        assert!((r.waf / model - 1.0).abs() < 0.03, "{policy} with a GC frontier: {} vs {model}", r.waf);
    }
}

#[test]
fn a_gc_frontier_lowers_waf_under_skew() {
    let access = Access::HotCold { hot: 0.1, writes: 0.9 };
    let shared = placed(0.15, GcPolicy::Greedy, access, 1, false);
    let double = placed(0.15, GcPolicy::Greedy, access, 1, true);
    // Relocated data has survived a cleaning: colder than host writes, and
    // kept apart from them it is cleaned less often.
    assert!(double.waf < 0.95 * shared.waf, "double log {} vs shared {}", double.waf, shared.waf);
}

#[test]
fn placement_flags_refuse_nonsense() {
    for (args, flag) in [(&["wa", "--streams", "0"][..], "--streams"), (&["wa", "--streams", "9"][..], "--streams")] {
        let out = Command::new(env!("CARGO_BIN_EXE_duraflash")).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag) && err.trim_end().lines().count() == 1, "{args:?}: {err}");
    }
    for (args, flag) in [
        (&["wa", "--stream-infer", "recency"][..], "--stream-infer"),
        (&["wa", "--streams", "2", "--stream-infer", "recency:0"][..], "--stream-infer"),
        (&["wa", "--streams", "2", "--stream-infer", "recency:x"][..], "--stream-infer"),
        (&["wa", "--streams", "2", "--stream-infer", "lru"][..], "--stream-infer"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_duraflash")).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(flag) && err.trim_end().lines().count() == 1, "{args:?}: {err}");
    }
    let base = toml::to_string(&DriveConfig::preset("sf2281-240g").unwrap()).unwrap();
    assert!(base.contains("[placement]\n"), "{base}");
    for bad in ["\"lru\"", "\"recency:-1\""] {
        let text = base.replace("[placement]\n", &format!("[placement]\ninfer = {bad}\n"));
        let e = DriveConfig::from_toml(&text).unwrap_err().to_string();
        assert!(e.contains("infer"), "{bad}: {e}");
    }
    let mut cfg = config(0.15, GcPolicy::Greedy);
    cfg.placement.streams = 2;
    let mut drive = Drive::new(cfg).unwrap();
    let e = drive.set_stream_hints(vec![(duraflash::Lpn(0), 2)]).unwrap_err();
    assert!(e.to_string().contains("stream 2"), "{e}");
}

/// Separated hot/cold under greedy against the two-pool model of greedy's
/// own split (`wa_hot_cold_shared_greedy`), within 3 %. A many-blocks
/// model, so many blocks in each pool: 512 MiB of eight dies (4900
/// blocks, about 490 hot at 10/90, where 128 MiB comes out 3.8 % under
/// the model) with each stream's eight open blocks a small part of even
/// the hot pool, and ten drive-writes before
/// measuring: the cold pool takes a tenth of the writes at 10/90, and its
/// blocks need that long to reach their steady state.
#[test]
fn separated_hot_cold_matches_the_model_of_greedys_split() {
    for (hot, writes) in [(0.2, 0.8), (0.1, 0.9)] {
        let mut cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(512 << 20).unwrap();
        cfg.geometry.pages_per_block = 16;
        (cfg.geometry.channels, cfg.geometry.dies_per_channel) = (8, 1);
        cfg.compression = false;
        cfg.dedup = false;
        cfg.media = Media::MetadataOnly;
        cfg.placement.streams = 2;
        let cfg = cfg.with_op(0.15).unwrap();
        assert!(cfg.geometry.total_blocks() >= 4000, "{} blocks", cfg.geometry.total_blocks());
        let mut drive = Drive::new(cfg).unwrap();
        let spec = WaSpec {
            access: Access::HotCold { hot, writes },
            request_bytes: 4096,
            data: DataSpec::incompressible(),
            trim_pct: 0,
            span: 1.0,
            precondition: 10.0,
            measure: 2.0,
        };
        let r = run(&mut drive, &spec, 5, &mut |_, _| {}).unwrap();
        drive.check_invariants().unwrap();
        let m = r.model.as_ref().expect("separated hot/cold has a model");
        let model = m.policy.unwrap();
        let err = r.waf / model - 1.0;
        eprintln!("{hot}/{writes}: measured {:.4} model {model:.4} ({:+.2}%) alpha {:.4}", r.waf, err * 100.0, m.alpha);
        assert!(err.abs() < 0.03, "{hot}/{writes}: measured {:.3} vs model {model:.3} ({:+.1}%)", r.waf, err * 100.0);
    }
}

/// fio's `write_hint` names a write stream (`short` is stream 1): a job
/// file that hints a stream the drive lacks is a usage error naming the
/// option; with the streams it runs.
#[test]
fn fio_write_hint_needs_its_stream() {
    let dir = std::env::temp_dir().join(format!("duraflash-write-hint-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("hint.fio");
    // The hot job waits for the fill (stonewall), as fio would run them.
    std::fs::write(
        &job,
        "[fill]\nrw=write\nbs=128k\n[hot]\nstonewall\nrw=randwrite\nsize=20%\nwrite_hint=short\nio_size=4m\n",
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut args = vec!["run", job.to_str().unwrap(), "--capacity", "64MiB", "--quiet"];
        args.extend_from_slice(extra);
        Command::new(env!("CARGO_BIN_EXE_duraflash")).args(&args).output().unwrap()
    };
    let out = run(&[]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("write_hint") && err.contains("--streams 2") && err.trim_end().lines().count() == 1, "{err}");
    let out = run(&["--streams", "2"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(&dir).unwrap();
}
