//! The SandForce 5.0.x TRIM bug and its fix, through the reviewers'
//! torture protocol at a small capacity. Each test asserts a direction or
//! a ratio that the mechanism (placement, read path, TRIM handling, GC)
//! must produce, and that changes when its cause does.

use duraflash::lab::torture::{torture, Duration, TortureData, TortureReport, TortureSpec};
use duraflash::DriveConfig;

const CAPACITY: u64 = 512 << 20;
const DRIVE_WRITES: f64 = 1.5;

fn config(preset: &str, firmware: &str) -> DriveConfig {
    let mut cfg = DriveConfig::preset(preset).unwrap().scaled(CAPACITY).unwrap();
    cfg.media = duraflash::Media::MetadataOnly;
    cfg.firmware = duraflash::firmware::Firmware::profile(firmware).unwrap();
    cfg
}

fn spec(data: TortureData, drive_writes: f64, span: f64) -> TortureSpec {
    TortureSpec {
        data,
        duration: Duration::DriveWrites(drive_writes),
        qd: 32,
        span,
        zones: 16,
        atto_span: None,
        seed: 5,
    }
}

fn run(cfg: &DriveConfig, spec: &TortureSpec) -> TortureReport {
    let r = torture(cfg, spec, &mut |_, _| {}).unwrap();
    println!(
        "{} {:?} {:.2} dw span {}: read clean {:.1} tortured {:.1} trim {:.1} trim2 {:.1}; write clean {:.1} \
         tortured {:.1} trim {:.1}",
        r.firmware,
        r.data,
        r.drive_writes,
        spec.span,
        r.clean.read_mbps,
        r.tortured.read_mbps,
        r.after_trim.read_mbps,
        r.after_second_trim.read_mbps,
        r.clean.write_mbps,
        r.tortured.write_mbps,
        r.after_trim.write_mbps
    );
    r
}

fn read_ratio(r: &TortureReport, s: &duraflash::lab::torture::State) -> f64 {
    s.read_mbps / r.clean.read_mbps
}

#[test]
#[cfg(all(feature = "quirk-read-degradation", feature = "quirk-incomplete-trim"))]
fn sf_502_trim_restores_reads_only_partly_and_retrimming_changes_nothing() {
    let r = run(&config("sf2281-240g", "sf-5.0.2"), &spec(TortureData::Compressible, DRIVE_WRITES, 1.0));
    let (tortured, trimmed, twice) =
        (read_ratio(&r, &r.tortured), read_ratio(&r, &r.after_trim), read_ratio(&r, &r.after_second_trim));
    assert!(tortured <= 0.6, "tortured read {tortured:.2} of clean");
    assert!(
        r.tortured.write_mbps >= 0.9 * r.clean.write_mbps,
        "SandForce writes hold up: {:.1} vs {:.1}",
        r.tortured.write_mbps,
        r.clean.write_mbps
    );
    assert!(trimmed >= tortured + 0.10, "TRIM helps: {trimmed:.2} vs tortured {tortured:.2}");
    assert!(trimmed < 0.9, "but does not restore: {trimmed:.2}");
    assert!((twice - trimmed).abs() < 0.02, "a second TRIM changes nothing: {twice:.2} vs {trimmed:.2}");
    let units = CAPACITY / 4096;
    let left = r.after_trim.mapped_units as f64 / units as f64;
    assert!((0.45..0.55).contains(&left), "half of every 65535-sector range stays mapped: {left:.3}");
    assert_eq!(r.trimmed_units[1], 0, "the second TRIM misses the same ranges");
    assert_eq!(r.after_second_trim.mapped_units, r.after_trim.mapped_units);
}

#[test]
#[cfg(all(feature = "quirk-read-degradation", feature = "quirk-incomplete-trim"))]
fn the_502_defect_does_not_depend_on_compressibility() {
    let comp = run(&config("sf2281-240g", "sf-5.0.2"), &spec(TortureData::Compressible, DRIVE_WRITES, 1.0));
    let pseudo = run(&config("sf2281-240g", "sf-5.0.2"), &spec(TortureData::PseudoRandom, DRIVE_WRITES, 1.0));
    let incomp = run(&config("sf2281-240g", "sf-5.0.2"), &spec(TortureData::Incompressible, DRIVE_WRITES, 1.0));
    for r in [&pseudo, &incomp] {
        assert_eq!(r.after_trim.mapped_units, comp.after_trim.mapped_units, "the same LBAs stay mapped");
        assert!(read_ratio(r, &r.after_trim) < 0.9, "{:?}: no full recovery", r.data);
        assert!(read_ratio(r, &r.after_trim) > read_ratio(r, &r.tortured), "{:?}: partial recovery", r.data);
    }
    for r in [&pseudo, &incomp] {
        let gap = (read_ratio(r, &r.after_trim) - read_ratio(&comp, &comp.after_trim)).abs();
        assert!(gap <= 0.05, "{:?} and compressible data recover alike: gap {gap:.3}", r.data);
    }
}

/// The review got the same after-TRIM read with every data type although
/// incompressible torture, far slower, covers a fraction of the LBAs in
/// its 20 minutes: the degradation saturates. One unit out of place sends
/// a whole request unit by unit, so a fifth of a drive-write degrades
/// nearly as much as one and a half (before that rule, at 1 GiB: 338.6
/// vs 252.5 MB/s after TRIM).
#[test]
#[cfg(all(feature = "quirk-read-degradation", feature = "quirk-incomplete-trim"))]
fn read_degradation_saturates_with_coverage() {
    let cfg = config("sf2281-240g", "sf-5.0.2");
    let light = run(&cfg, &spec(TortureData::Compressible, 0.3, 1.0));
    let heavy = run(&cfg, &spec(TortureData::Compressible, DRIVE_WRITES, 1.0));
    for (what, a, b) in [
        ("tortured", read_ratio(&light, &light.tortured), read_ratio(&heavy, &heavy.tortured)),
        ("after TRIM", read_ratio(&light, &light.after_trim), read_ratio(&heavy, &heavy.after_trim)),
    ] {
        assert!((a - b).abs() <= 0.05, "{what}: {a:.3} of clean after 0.3 drive-writes, {b:.3} after {DRIVE_WRITES}");
    }
}

#[test]
#[cfg(feature = "quirk-read-degradation")]
fn fixed_and_older_firmware_trim_restores_reads() {
    for firmware in ["sf-5.0.3", "sf-3.x"] {
        let r = run(&config("sf2281-240g", firmware), &spec(TortureData::Compressible, DRIVE_WRITES, 1.0));
        assert!(read_ratio(&r, &r.tortured) <= 0.6, "{firmware}: torture still degrades reads");
        assert!(read_ratio(&r, &r.after_trim) >= 0.95, "{firmware}: after TRIM {:.2}", read_ratio(&r, &r.after_trim));
        assert_eq!(r.after_trim.mapped_units, 0, "{firmware}: every LBA unmapped");
    }
}

#[test]
#[cfg(feature = "quirk-read-degradation")]
fn degradation_follows_its_causes() {
    let cfg = config("sf2281-240g", "sf-5.0.2");
    let none = run(&cfg, &spec(TortureData::Compressible, 0.0, 1.0));
    assert!(
        read_ratio(&none, &none.tortured) >= 0.9,
        "no torture, no degradation: {:.2}",
        read_ratio(&none, &none.tortured)
    );
    let half = run(&cfg, &spec(TortureData::Compressible, DRIVE_WRITES / 2.0, 0.5));
    let full = run(&cfg, &spec(TortureData::Compressible, DRIVE_WRITES, 1.0));
    assert!(
        half.tortured.read_mbps > full.tortured.read_mbps * 1.2,
        "torturing half the span degrades less: {:.1} vs {:.1}",
        half.tortured.read_mbps,
        full.tortured.read_mbps
    );
    let mut dram = cfg.clone();
    dram.firmware.read_degradation = false;
    let quirk_off = run(&dram, &spec(TortureData::Compressible, DRIVE_WRITES, 1.0));
    assert!(
        read_ratio(&quirk_off, &quirk_off.tortured) > read_ratio(&full, &full.tortured) + 0.25,
        "without the SF-2281 read path torture degrades reads much less: {:.2} vs {:.2}",
        read_ratio(&quirk_off, &quirk_off.tortured),
        read_ratio(&full, &full.tortured)
    );
}

/// A build without the read quirk runs the SandForce profiles with that
/// behaviour fixed: the profile that asks for it tortures exactly like the
/// same profile with the quirk switched off.
#[test]
#[cfg(not(feature = "quirk-read-degradation"))]
fn without_the_read_quirk_sandforce_reads_as_with_the_quirk_off() {
    let cfg = config("sf2281-240g", "sf-5.0.2");
    assert!(cfg.firmware.read_degradation, "the profile still names the quirk");
    let mut off = cfg.clone();
    off.firmware.read_degradation = false;
    let spec = spec(TortureData::Compressible, DRIVE_WRITES, 1.0);
    let (asked, fixed) = (run(&cfg, &spec), run(&off, &spec));
    assert_eq!(asked.tortured.read_mbps, fixed.tortured.read_mbps);
    assert_eq!(asked.after_trim.read_mbps, fixed.after_trim.read_mbps);
}

#[test]
fn a_conventional_drive_loses_write_speed_instead() {
    let r = run(&config("samsung830-64g", "generic"), &spec(TortureData::Compressible, DRIVE_WRITES, 1.0));
    assert!(
        r.tortured.write_mbps < 0.5 * r.clean.write_mbps,
        "GC copies slow the write sweep: {:.1} vs {:.1}",
        r.tortured.write_mbps,
        r.clean.write_mbps
    );
    assert!(read_ratio(&r, &r.after_trim) >= 0.95, "generic firmware TRIMs everything");
}

/// SandForce's life-time throttling (`firmware::LifeCurve`): no wear is
/// throttled while a new drive's credits last; once they have run out, a
/// drive written past its curve is held to the curve's rate, and idle
/// power-on time, not TRIM, lets it recover.
#[test]
fn the_life_curve_holds_a_worn_drive_to_its_rate_until_idle_time_catches_up() {
    use duraflash::content::pattern::DataSpec;
    use duraflash::firmware::LifeCurve;
    use duraflash::units::SimTime;
    use duraflash::workload::access::{Distribution, Rw};
    use duraflash::workload::job::{fill_spec, run_job, JobSpec, Limit};
    let mut cfg = config("sf2281-240g", "sf-5.0.3");
    assert_eq!(cfg.firmware.life_curve, None, "no profile throttles unless the vendor asks");
    // Three years of warranty, credits for the first simulated second.
    let curve = LifeCurve { credit_share: 1.0 / (3.0 * LifeCurve::YEAR_SECS), ..LifeCurve::warranty(3.0) };
    cfg.firmware.life_curve = Some(curve.clone());
    let rate = curve.bytes_per_sec(cfg.geometry.physical_bytes() as f64, cfg.geometry.pe_cycles);
    let data = DataSpec::incompressible();
    // Each sweep writes new data: a repeat would be deduplicated.
    let sweep = |drive: &mut duraflash::Drive, seed: u64| {
        let job = JobSpec {
            name: "sweep".into(),
            rw: Rw::Write,
            bs: 128 << 10,
            sizes: Default::default(),
            iodepth: 1,
            offset: 0,
            length: 64 << 20,
            limit: Limit::Bytes(64 << 20),
            rwmixread: 0,
            distribution: Distribution::Random,
            data,
            seed,
        };
        run_job(drive, &job, &mut |_| {}).unwrap().write.bw_bytes
    };
    let mut drive = duraflash::Drive::new(cfg.clone()).unwrap();
    let within_credits = sweep(&mut drive.clone(), 9);
    run_job(&mut drive, &fill_spec(CAPACITY, 128 << 10, 32, data, 3), &mut |_| {}).unwrap();
    let worn = sweep(&mut drive, 9);
    // Idle until the curve allows what was written plus two more sweeps.
    let allowed_from = (drive.nand_bytes_programmed() as f64 + 2.0 * (64 << 20) as f64) / rate;
    let now = drive.now();
    drive.idle(now, SimTime((allowed_from * 1e9) as u64)).unwrap();
    let rested = sweep(&mut drive, 10);
    cfg.firmware.life_curve = None;
    let mut free = duraflash::Drive::new(cfg).unwrap();
    let unthrottled = sweep(&mut free.clone(), 9);
    run_job(&mut free, &fill_spec(CAPACITY, 128 << 10, 32, data, 3), &mut |_| {}).unwrap();
    let free_worn = sweep(&mut free, 9);
    println!(
        "life curve at {:.1} kB/s of NAND: {:.1} MB/s within the credits, {:.3} MB/s worn, {:.1} MB/s rested; \
         without it {:.1} / {:.1} MB/s",
        rate / 1e3,
        within_credits / 1e6,
        worn / 1e6,
        rested / 1e6,
        unthrottled / 1e6,
        free_worn / 1e6
    );
    assert_eq!(within_credits, unthrottled, "no throttling while the credits last");
    assert!(worn <= rate * 1.01 && worn >= rate * 0.5, "held to the curve's rate once past it: {worn} vs {rate}");
    assert!(free_worn > 1000.0 * rate, "without a life curve the same wear costs no speed: {free_worn}");
    assert!(rested > 0.9 * free_worn, "idle power-on time lets it recover: {rested} vs {free_worn}");
}

/// ATTO writes its test span and reads it back, so it reads fresh,
/// sequentially placed data: in this model its reads do not degrade after
/// torture (the review saw small losses; see the README's known gaps), and
/// its writes hold up as HD Tach's do.
#[test]
fn atto_writes_are_unaffected_by_torture() {
    let mut s = spec(TortureData::Compressible, DRIVE_WRITES, 1.0);
    s.atto_span = Some(32 << 20);
    let r = run(&config("sf2281-240g", "sf-5.0.2"), &s);
    let (clean, tortured) = (r.clean.atto.as_ref().unwrap(), r.tortured.atto.as_ref().unwrap());
    let mean = |v: &[duraflash::workload::review::AttoPoint], f: fn(&duraflash::workload::review::AttoPoint) -> f64| {
        v.iter().map(f).sum::<f64>() / v.len() as f64
    };
    let read = mean(tortured, |p| p.read_mbps) / mean(clean, |p| p.read_mbps);
    let write = mean(tortured, |p| p.write_mbps) / mean(clean, |p| p.write_mbps);
    println!("ATTO tortured/clean: read {read:.2}, write {write:.2}; HD Tach read {:.2}", read_ratio(&r, &r.tortured));
    assert!(read > read_ratio(&r, &r.tortured), "ATTO reads lose less than HD Tach's: {read:.2}");
    assert!(write > 0.9, "ATTO writes essentially unaffected: {write:.2}");
}
