//! Wear levelling on a hot/cold workload (10 % of the LBAs take 90 % of
//! the writes), where cold blocks sit while hot ones cycle: static
//! levelling holds the P/E spread near its threshold, costs little WAF and
//! counts its moves apart from GC's; dynamic levelling lowers the most-worn
//! block's count; SMART 177 follows the spread. Content-free and small
//! (32 MiB, 336 blocks) so it runs in seconds.

use std::process::Command;

use duraflash::config::WearConfig;
use duraflash::content::pattern::DataSpec;
use duraflash::host::smart::Smart;
use duraflash::lab::wa::{run, WaReport, WaSpec};
use duraflash::workload::access::Access;
use duraflash::{Drive, DriveConfig, Media};

const SPREAD: u32 = 8;

/// Rated P/E cycles of the test drive: low, so SMART 177's percentage of
/// them shows a spread of a few cycles.
const RATED: u32 = 200;

fn levelled(wear: WearConfig) -> (WaReport, Smart) {
    let mut cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(32 << 20).unwrap();
    cfg.geometry.pages_per_block = 16;
    cfg.geometry.pe_cycles = RATED;
    cfg.compression = false;
    cfg.dedup = false;
    cfg.media = Media::MetadataOnly;
    cfg.wear = wear;
    let mut drive = Drive::new(cfg.with_op(0.15).unwrap()).unwrap();
    let spec = WaSpec {
        access: Access::HotCold { hot: 0.1, writes: 0.9 },
        request_bytes: 4096,
        data: DataSpec::incompressible(),
        trim_pct: 0,
        span: 1.0,
        precondition: 10.0,
        measure: 30.0,
    };
    let report = run(&mut drive, &spec, 5, &mut |_, _| {}).unwrap();
    drive.check_invariants().unwrap();
    (report, Smart::of(&drive))
}

fn spread(r: &WaReport) -> u32 {
    r.stats.pe_max - r.stats.pe_min
}

fn raw_177(s: &Smart) -> u64 {
    s.attributes.iter().find(|a| a.id == 177).expect("SandForce table has 177").raw
}

#[test]
fn static_levelling_holds_the_spread_near_its_threshold_at_little_waf() {
    let (none, none_smart) = levelled(WearConfig::default());
    let (stat, stat_smart) = levelled(WearConfig { dynamic: false, static_spread: Some(SPREAD) });
    assert!(spread(&none) > 3 * SPREAD, "without levelling the spread grows: {}", spread(&none));
    // The trigger is the least-worn sealed block against the most worn;
    // a free or open block may sit a cycle or two lower.
    assert!(spread(&stat) <= SPREAD + 2, "static levelling: spread {} past {SPREAD}", spread(&stat));
    assert_eq!((none.wear_relocated_bytes, none.stats.wear_victims), (0, 0));
    assert!(stat.wear_relocated_bytes > 0 && stat.stats.wear_victims > 0);
    // Its moves are not GC's: GC's own counter falls by about what it moves.
    let gc_and_wear = stat.gc_relocated_bytes + stat.wear_relocated_bytes;
    assert!(
        stat.gc_relocated_bytes < none.gc_relocated_bytes,
        "{} vs {}",
        stat.gc_relocated_bytes,
        none.gc_relocated_bytes
    );
    assert!((gc_and_wear as f64 / none.gc_relocated_bytes as f64 - 1.0).abs() < 0.1);
    assert!((stat.waf / none.waf - 1.0).abs() < 0.05, "WAF {} with static levelling, {} without", stat.waf, none.waf);
    // SMART 177 is the spread in percent of rated cycles.
    assert_eq!(raw_177(&none_smart), u64::from(spread(&none)) * 100 / u64::from(RATED));
    assert!(raw_177(&stat_smart) < raw_177(&none_smart));
}

#[test]
fn dynamic_levelling_lowers_the_most_worn_block_and_is_deterministic() {
    let (none, _) = levelled(WearConfig::default());
    let dynamic = WearConfig { dynamic: true, static_spread: None };
    let (dyn_a, _) = levelled(dynamic);
    let (dyn_b, _) = levelled(dynamic);
    assert_eq!(dyn_a.stats, dyn_b.stats, "same seed and config, same counts");
    assert!(dyn_a.stats.pe_max < none.stats.pe_max, "max P/E {} vs {}", dyn_a.stats.pe_max, none.stats.pe_max);
    // Which free block opens moves no data.
    assert_eq!(dyn_a.wear_relocated_bytes, 0);
    assert!((dyn_a.waf / none.waf - 1.0).abs() < 0.02, "WAF {} vs {}", dyn_a.waf, none.waf);
}

#[test]
fn a_zero_static_spread_is_a_usage_error_naming_the_flag() {
    for (args, flag) in [
        (vec!["wa", "--wear-static", "0"], "--wear-static"),
        (vec!["wa", "--wear-static", "x"], "--wear-static"),
        (vec!["wa", "--wear-dynamic", "maybe"], "--wear-dynamic"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_duraflash")).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(err.contains(flag), "{args:?}: '{err}' does not name {flag}");
    }
}
