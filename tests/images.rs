//! Drive images: a saved and loaded drive is the same drive (stats, data,
//! clock, and what later commands do), and a damaged image is refused with
//! an error naming what is wrong.
//!
//! The fuzz property runs `PROPTEST_CASES` cases (64 by default here).

use std::path::{Path, PathBuf};

use duraflash::image::{self, ImageError};
use duraflash::{Drive, DriveConfig, Lba, Media};
use proptest::prelude::*;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SECTOR: u64 = 512;

fn config() -> DriveConfig {
    let mut cfg = DriveConfig::preset("sf2281-240g").and_then(|c| c.scaled(16 << 20)).expect("preset");
    cfg.media = Media::Memory;
    cfg
}

/// A file in the temp directory, removed when dropped.
struct Temp(PathBuf);

impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl std::ops::Deref for Temp {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Temp {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

fn temp(name: &str) -> Temp {
    Temp(std::env::temp_dir().join(format!("duraflash-images-{}-{name}", std::process::id())))
}

/// One step of a mixed workload: writes (a quarter duplicates of a small
/// set), TRIMs, reads and idle GC, all from `rng`.
fn step(drive: &mut Drive, rng: &mut ChaCha8Rng) {
    let cap = drive.capacity_sectors();
    let lba = rng.random_range(0..cap - 64) & !7;
    match rng.random_range(0..100) {
        0..=59 => {
            let sectors = rng.random_range(1..=64u64);
            let seed: u64 = if rng.random_bool(0.25) { rng.random_range(0..8) } else { rng.random() };
            let mut data = vec![0u8; (sectors * SECTOR) as usize];
            ChaCha8Rng::seed_from_u64(seed).fill(&mut data[..]);
            if rng.random_bool(0.2) {
                data[..(sectors * SECTOR / 2) as usize].fill(0);
            }
            drive.write(Lba(lba), &data).expect("write");
        }
        60..=74 => {
            drive.trim(&[(Lba(lba), rng.random_range(1..=64))]).expect("trim");
        }
        75..=97 => {
            drive.read(Lba(lba), rng.random_range(1..=64)).expect("read");
        }
        _ => {
            drive.idle_gc().expect("idle gc");
        }
    }
}

fn aged_drive(steps: usize, seed: u64) -> (Drive, ChaCha8Rng) {
    let mut drive = Drive::new(config()).expect("drive");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    for _ in 0..steps {
        step(&mut drive, &mut rng);
    }
    (drive, rng)
}

fn whole(drive: &mut Drive) -> Vec<u8> {
    drive.read(Lba(0), drive.capacity_sectors()).expect("read all")
}

#[test]
fn save_then_load_is_the_same_drive() {
    let (mut drive, _) = aged_drive(16000, 7);
    assert!(drive.stats().gc_victims > 0, "the workload must reach GC: {:?}", drive.stats());
    let path = temp("roundtrip.img");
    drive.save(&path).expect("save");
    let (saved, saved_now) = (drive.stats(), drive.now());
    let mut loaded = Drive::load(&path).expect("load");
    assert_eq!(loaded.stats(), drive.stats());
    assert_eq!(loaded.now(), drive.now());
    assert_eq!(loaded.config(), drive.config());
    loaded.check_invariants().expect("invariants");
    assert_eq!(whole(&mut loaded), whole(&mut drive));
    let info = duraflash::device::inspect(&path).expect("inspect");
    assert_eq!(info.version, image::VERSION);
    // The summary is JSON: compare the integer counters (floats may differ in the last bit).
    let s = &info.summary.stats;
    assert_eq!(
        (s.host_write_bytes, s.nand_pages_programmed, s.erases, s.live_chunks, s.mapped_units, s.pe_max),
        (
            saved.host_write_bytes,
            saved.nand_pages_programmed,
            saved.erases,
            saved.live_chunks,
            saved.mapped_units,
            saved.pe_max
        )
    );
    assert_eq!(info.summary.now_ns, saved_now.0);
    assert_eq!(info.sections.len(), image::SECTIONS.len());
    assert!(!Path::new(&format!("{}.tmp", path.0.display())).exists(), "temp file renamed away");
}

/// A workload run in two halves with a save and a load between them ends
/// in the same state as the same workload run in one go.
#[test]
fn a_run_resumed_from_an_image_matches_an_uninterrupted_run() {
    let (mut one_go, _) = aged_drive(16000, 11);
    let (first_half, mut rng) = aged_drive(8000, 11);
    let path = temp("half.img");
    first_half.save(&path).expect("save");
    drop(first_half);
    let mut resumed = Drive::load(&path).expect("load");
    for _ in 0..8000 {
        step(&mut resumed, &mut rng);
    }
    assert!(one_go.stats().gc_victims > 0, "the second half must reach GC");
    assert_eq!(resumed.stats(), one_go.stats());
    assert_eq!(resumed.now(), one_go.now());
    assert_eq!(whole(&mut resumed), whole(&mut one_go));
    resumed.check_invariants().expect("invariants");
}

#[test]
fn metadata_only_drives_round_trip() {
    let mut cfg = config();
    cfg.media = Media::MetadataOnly;
    let mut drive = Drive::new(cfg).expect("drive");
    for i in 0..20_000u64 {
        drive.write(Lba((i * 7919 * 8) % (drive.capacity_sectors() - 8)), &[0u8; 4096]).expect("write");
    }
    let path = temp("meta.img");
    drive.save(&path).expect("save");
    let loaded = Drive::load(&path).expect("load");
    assert_eq!(loaded.stats(), drive.stats());
}

fn saved_image() -> Vec<u8> {
    static IMAGE: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    IMAGE
        .get_or_init(|| {
            let (drive, _) = aged_drive(1500, 3);
            let path = temp("fuzz-base.img");
            drive.save(&path).expect("save");
            std::fs::read(&path).expect("read image")
        })
        .clone()
}

fn load_bytes(bytes: &[u8], name: &str) -> Result<Drive, ImageError> {
    let path = temp(name);
    std::fs::write(&path, bytes).expect("write image");
    Drive::load(&path)
}

/// Offsets where each section's header starts.
fn section_offsets(bytes: &[u8]) -> Vec<usize> {
    let mut at = 12;
    let mut out = Vec::new();
    while at + 44 <= bytes.len() {
        out.push(at);
        let len = u64::from_le_bytes(bytes[at + 4..at + 12].try_into().unwrap()) as usize;
        at += 44 + len;
    }
    out
}

#[test]
fn damaged_images_are_refused_naming_the_damage() {
    let good = saved_image();
    load_bytes(&good, "good.img").expect("the base image loads");
    let err = |bytes: &[u8]| load_bytes(bytes, "bad.img").expect_err("a damaged image must not load").to_string();

    let mut bad = good.clone();
    bad[0] = b'X';
    assert!(err(&bad).contains("not a duraflash drive image"), "{}", err(&bad));
    assert!(err(b"").contains("truncated"));
    assert!(err(b"DURA").contains("truncated"));
    assert!(err(b"DURAFLSH\t\0\0").contains("truncated"), "the magic, then a cut: {}", err(b"DURAFLSH\t\0\0"));
    assert!(err(b"hello, world").contains("not a duraflash drive image"));
    let mut bad = good.clone();
    bad[8] = 99;
    assert!(err(&bad).contains("version 99 is not supported"), "{}", err(&bad));
    bad[8] = 5;
    assert!(err(&bad).contains("version 5 is not supported") && err(&bad).contains("bincode"), "{}", err(&bad));

    let offsets = section_offsets(&good);
    assert_eq!(offsets.len(), image::SECTIONS.len());
    for (tag, &at) in image::SECTIONS.iter().zip(&offsets) {
        let name = String::from_utf8_lossy(tag).trim_end().to_string();
        // A flipped payload byte (or the last one when the payload is tiny).
        let mut bad = good.clone();
        let pos = (at + 44 + 5).min(good.len() - 1);
        bad[pos] ^= 0x40;
        let e = err(&bad);
        assert!(e.contains("checksum") && e.contains(&name), "section {name}: {e}");
        // Cut inside the section.
        let e = err(&good[..at + 20]);
        assert!(e.contains("truncated") && e.contains(&name), "section {name}: {e}");
        // A different tag.
        let mut bad = good.clone();
        bad[at] = b'Z';
        assert!(err(&bad).contains(&format!("expected section {name}")), "{}", err(&bad));
    }
    let mut long = good.clone();
    long.extend_from_slice(b"junk");
    assert!(err(&long).contains("4 unexpected bytes"));
}

/// A config section that claims far more blocks than the image holds,
/// with its checksum recomputed (a deliberate edit, not damage): refused
/// before the NAND table is built for it, not an allocation abort.
#[test]
fn a_config_that_claims_more_blocks_than_the_image_holds_is_refused() {
    let good = saved_image();
    let len = u64::from_le_bytes(good[16..24].try_into().unwrap()) as usize;
    let conf = String::from_utf8(good[56..56 + len].to_vec()).unwrap();
    let per_die = conf.split("\"blocks_per_die\":").nth(1).unwrap().split([',', '}']).next().unwrap().to_string();
    // Twice the blocks (the NAND section is too short for them), more than
    // the machine's memory, more than a chunk extent can address.
    let twice = (per_die.parse::<u64>().unwrap() * 2).to_string();
    for claim in [twice.as_str(), "4000000", "130000000"] {
        let edited = conf.replacen(&format!("\"blocks_per_die\":{per_die}"), &format!("\"blocks_per_die\":{claim}"), 1);
        assert_ne!(edited, conf);
        let mut bytes = good[..12].to_vec();
        bytes.extend(b"CONF");
        bytes.extend((edited.len() as u64).to_le_bytes());
        bytes.extend(blake3::hash(edited.as_bytes()).as_bytes());
        bytes.extend(edited.as_bytes());
        bytes.extend(&good[56 + len..]);
        let e = load_bytes(&bytes, "claims.img").expect_err("more blocks than the image holds").to_string();
        assert!(e.contains("section NAND") || e.contains("config:"), "{claim} blocks a die: {e}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(64),
        ..ProptestConfig::default()
    })]

    /// Random byte flips, truncations and splices of a valid image give an
    /// error (never a panic), unless they left the bytes unchanged.
    #[test]
    fn fuzzed_images_load_or_fail_cleanly(
        flips in prop::collection::vec((any::<prop::sample::Index>(), 1u8..=255), 0..4),
        cut in prop::option::of(any::<prop::sample::Index>()),
        thread in 0u32..1_000_000,
    ) {
        let good = saved_image();
        let mut bytes = good.clone();
        for (at, x) in &flips {
            let i = at.index(bytes.len());
            bytes[i] ^= x;
        }
        if let Some(at) = cut {
            bytes.truncate(at.index(bytes.len()));
        }
        let result = load_bytes(&bytes, &format!("fuzz-{thread}.img"));
        if bytes == good {
            prop_assert!(result.is_ok());
        } else {
            prop_assert!(result.is_err(), "a damaged image loaded");
        }
    }
}

/// A write sweep isolated by an image round trip measures what one on a
/// clone does and leaves the same drive behind (the full-size torture uses
/// it so that measuring does not double the memory); one that consumes the
/// drive (a protocol's last pass) measures the same, and what it shows
/// between its sweeps is the state the others restore.
#[test]
fn an_image_isolated_write_sweep_equals_a_cloned_one() {
    use duraflash::content::pattern::DataSpec;
    use duraflash::workload::job::{fill_spec, run_job};
    use duraflash::workload::review::{hdtach_between, hdtach_isolated, Isolation};
    let mut cfg = DriveConfig::preset("sf2281-240g").and_then(|c| c.scaled(64 << 20)).expect("preset");
    cfg.media = Media::MetadataOnly;
    let data = DataSpec::compressible(50).unwrap();
    let mut a = Drive::new(cfg.clone()).unwrap();
    run_job(&mut a, &fill_spec(cfg.logical_bytes, 128 << 10, 32, data, 3), &mut |_| {}).unwrap();
    let (mut b, mut c) = (a.clone(), a.clone());
    let by_clone = hdtach_isolated(&mut a, 8, data, 5, Isolation::Clone, &mut |_| {}).unwrap();
    let by_image = hdtach_isolated(&mut b, 8, data, 5, Isolation::Image, &mut |_| {}).unwrap();
    assert_eq!(by_clone, by_image);
    assert_eq!(a.stats(), b.stats(), "the image round trip restored the drive");
    assert_eq!(a.now(), b.now());
    let seen = |d: &Drive| Ok((d.stats(), d.now()));
    let (by_consuming, between) =
        hdtach_between(&mut c, 8, data, 5, Isolation::Consume, &mut None, seen, &mut |_| {}).unwrap();
    assert_eq!(by_consuming, by_clone);
    assert_eq!(between, (a.stats(), a.now()), "between the sweeps: the state the others restore");
    assert!(c.stats().host_write_bytes > a.stats().host_write_bytes, "consumed: the sweep's writes stay");
    let again = |d: &mut Drive| hdtach_isolated(d, 4, data, 9, Isolation::Clone, &mut |_| {}).unwrap();
    assert_eq!(again(&mut a), again(&mut b), "later commands behave alike");
    b.check_invariants().unwrap();
}
