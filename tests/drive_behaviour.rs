//! Behaviour of the drive as a host sees it, one property per test.

use std::sync::mpsc;
use std::time::Duration;

use duraflash::config::Geometry;
use duraflash::content::pattern::{DataSpec, PatternGen};
use duraflash::{Drive, DriveConfig, DriveError, GcPolicy, Lba, Media, Stats};
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const SECTOR: u64 = 512;
const UNIT: usize = 4096;
/// Sectors in one 4 KiB mapping unit.
const US: u64 = 8;

/// A drive of `dies` dies x `blocks_per_die` blocks of `pages` x 8 KiB
/// pages (SF-2281 page size) holding `units` 4 KiB units.
fn small(dies: u32, blocks_per_die: u32, pages: u32, units: u64) -> DriveConfig {
    let mut cfg = DriveConfig::preset("sf2281-240g").expect("preset");
    cfg.set_geometry(Geometry {
        channels: dies,
        dies_per_channel: 1,
        blocks_per_die,
        pages_per_block: pages,
        page_bytes: 8192,
        pe_cycles: 3000,
    });
    cfg.logical_bytes = units * UNIT as u64;
    cfg.validate().expect("test geometry must validate");
    cfg
}

/// A 1.75 MiB drive on 24 blocks of 128 KiB (3 MiB): GC runs after a few
/// MiB of writes.
fn tiny() -> DriveConfig {
    small(2, 12, 16, 448)
}

fn random_bytes(rng: &mut ChaCha8Rng, len: usize) -> Vec<u8> {
    let mut v = vec![0u8; len];
    rng.fill_bytes(&mut v);
    v
}

fn pattern(spec: DataSpec, seed: u64, len: usize) -> Vec<u8> {
    let mut gen = PatternGen::new(spec, seed).expect("valid spec");
    let mut v = vec![0u8; len];
    gen.fill(&mut v);
    v
}

fn read_all(drive: &mut Drive) -> Vec<u8> {
    let cap = drive.capacity_sectors();
    drive.read(Lba(0), cap).expect("full read")
}

/// `idle_gc`, failing the test instead of hanging if it never returns
/// (see `regression_idle_gc_livelock_*` in tests/oracle/main.rs).
fn idle_gc(drive: &mut Drive) -> u32 {
    let mut work = drive.clone();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = work.idle_gc();
        let _ = tx.send((r, work));
    });
    let (r, work) = rx.recv_timeout(Duration::from_secs(20)).expect("idle_gc did not return within 20 s");
    *drive = work;
    r.expect("idle_gc failed")
}

fn invariants(drive: &Drive) {
    if let Err(e) = drive.check_invariants() {
        panic!("invariant broken: {e}");
    }
}

// ---------------------------------------------------------------------------

#[test]
fn gc_never_changes_what_a_read_returns() {
    for policy in [GcPolicy::Greedy, GcPolicy::CostBenefit, GcPolicy::Fifo] {
        for (dedup, compression) in [(true, true), (false, false), (false, true)] {
            let mut cfg = tiny();
            cfg.gc.policy = policy;
            cfg.dedup = dedup;
            cfg.compression = compression;
            let mut drive = Drive::new(cfg).unwrap();
            let units = drive.capacity_sectors() / US;
            // Cold data: a mix of incompressible, compressible and duplicate units.
            let spec = DataSpec::compressible(40).unwrap().with_dedupe(20).unwrap();
            let cold = pattern(spec, 11, (units * UNIT as u64) as usize);
            for (i, chunk) in cold.chunks(16 * UNIT).enumerate() {
                drive.write(Lba(i as u64 * 16 * US), chunk).unwrap();
            }
            let snapshot = read_all(&mut drive);
            assert_eq!(snapshot, cold);
            // Every fourth unit is hot and overwritten again and again, so
            // every block holds garbage and cold units must be relocated.
            let mut rng = ChaCha8Rng::seed_from_u64(5);
            let mut want = snapshot.clone();
            let before = drive.stats();
            for i in 0..6000 {
                let u = rng.random_range(0..units / 4) * 4;
                let data = random_bytes(&mut rng, UNIT);
                drive.write(Lba(u * US), &data).unwrap();
                want[u as usize * UNIT..(u as usize + 1) * UNIT].copy_from_slice(&data);
                if i % 1000 == 999 {
                    idle_gc(&mut drive);
                    invariants(&drive);
                }
            }
            let after = drive.stats();
            let label = format!("{policy:?} dedup={dedup} compression={compression}");
            assert!(after.gc_victims - before.gc_victims > 100, "{label}: only {} GC victims", after.gc_victims);
            assert!(
                after.gc_relocated_bytes - before.gc_relocated_bytes > 256 * 1024,
                "{label}: GC relocated only {} bytes",
                after.gc_relocated_bytes - before.gc_relocated_bytes
            );
            let now = read_all(&mut drive);
            for u in (0..units as usize).filter(|u| u % 4 != 0) {
                let r = u * UNIT..(u + 1) * UNIT;
                assert!(now[r.clone()] == snapshot[r], "{label}: cold unit {u} reads differently after GC");
            }
            assert!(now == want, "{label}: a hot unit does not read as last written");
            invariants(&drive);
        }
    }
}

#[test]
fn identical_writes_cost_zero_nand_programs() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let block = random_bytes(&mut rng, 64 * UNIT);
    let unit = random_bytes(&mut rng, UNIT);
    let workload = |dedup: bool| -> (Stats, Stats, Stats) {
        let mut cfg = small(4, 32, 32, 4096);
        cfg.dedup = dedup;
        let mut drive = Drive::new(cfg).unwrap();
        drive.write(Lba(0), &block).unwrap();
        let first = drive.stats();
        // The same bytes again at the same place, then at ten other places.
        drive.write(Lba(0), &block).unwrap();
        for k in 1..=10u64 {
            drive.write(Lba(k * 64 * US), &block).unwrap();
        }
        let copies = drive.stats();
        // One unit's content at 100 places.
        for k in 0..100u64 {
            drive.write(Lba(1000 * US + k * US), &unit).unwrap();
        }
        let spread = drive.stats();
        for k in 0..=10u64 {
            assert_eq!(drive.read(Lba(k * 64 * US), 64 * US).unwrap(), block);
        }
        assert_eq!(drive.read(Lba(1099 * US), US).unwrap(), unit);
        invariants(&drive);
        (first, copies, spread)
    };
    let (first, copies, spread) = workload(true);
    assert_eq!(first.new_chunks, 64);
    assert!(first.nand_pages_programmed >= 30, "64 random units programmed only {} pages", first.nand_pages_programmed);
    assert_eq!(copies.nand_pages_programmed, first.nand_pages_programmed, "rewriting stored content programmed NAND");
    assert_eq!(copies.new_chunks, 64);
    assert_eq!(copies.dedup_hits, 11 * 64);
    assert_eq!(copies.live_chunks, 64);
    // Only the first of the 100 copies is new: at most one page more.
    assert_eq!(spread.new_chunks, 65);
    assert!(spread.nand_pages_programmed <= copies.nand_pages_programmed + 1);
    assert_eq!(spread.dedup_hits, copies.dedup_hits + 99);

    let (first, copies, spread) = workload(false);
    assert_eq!(copies.dedup_hits, 0);
    assert_eq!(copies.new_chunks, 12 * 64);
    let per_copy = first.nand_pages_programmed;
    assert!(
        copies.nand_pages_programmed >= first.nand_pages_programmed + 11 * per_copy - 2,
        "without dedup, 11 copies of {per_copy} pages programmed only {} more",
        copies.nand_pages_programmed - first.nand_pages_programmed
    );
    assert!(spread.nand_pages_programmed >= copies.nand_pages_programmed + 49, "100 units cost under 50 pages");
}

#[test]
fn waf_below_one_with_compressible_data() {
    let run = |compression: bool| -> Stats {
        let mut cfg = small(4, 32, 32, 6144); // 24 MiB on 32 MiB of NAND
        cfg.compression = compression;
        let mut drive = Drive::new(cfg).unwrap();
        let units = drive.capacity_sectors() / US;
        let mut gen = PatternGen::new(DataSpec::compressible(75).unwrap(), 3).unwrap();
        let mut buf = vec![0u8; 32 * UNIT];
        for start in (0..units).step_by(32) {
            gen.fill(&mut buf);
            drive.write(Lba(start * US), &buf).unwrap();
        }
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let mut unit = vec![0u8; UNIT];
        for _ in 0..2 * units {
            gen.fill(&mut unit);
            drive.write(Lba(rng.random_range(0..units) * US), &unit).unwrap();
        }
        invariants(&drive);
        drive.stats()
    };
    let compressed = run(true);
    assert!(compressed.compression_ratio < 0.5, "compressible(75) stored at ratio {}", compressed.compression_ratio);
    assert!(compressed.waf < 1.0, "WAF {} with compression", compressed.waf);
    let plain = run(false);
    assert!(plain.gc_relocated_bytes > 0, "the control run must garbage-collect");
    assert!(plain.waf > 1.0, "WAF {} without compression on a full drive", plain.waf);
}

#[test]
fn trim_frees_space_only_at_refcount_zero() {
    let mut drive = Drive::new(tiny()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(8);
    let shared = random_bytes(&mut rng, UNIT);
    let other = random_bytes(&mut rng, UNIT);
    drive.write(Lba(0), &shared).unwrap();
    drive.write(Lba(US), &shared).unwrap();
    drive.write(Lba(2 * US), &other).unwrap();
    let s0 = drive.stats();
    assert_eq!((s0.live_chunks, s0.mapped_units, s0.dedup_hits), (2, 3, 1));

    assert_eq!(drive.trim(&[(Lba(0), US)]).unwrap(), 1);
    let s1 = drive.stats();
    assert_eq!(s1.mapped_units, 2);
    assert_eq!(s1.live_chunks, 2, "a chunk still referenced by unit 1 was freed");
    assert_eq!(s1.live_bytes, s0.live_bytes);
    assert_eq!(drive.read(Lba(0), US).unwrap(), vec![0u8; UNIT]);
    assert_eq!(drive.read(Lba(US), US).unwrap(), shared);
    invariants(&drive);

    assert_eq!(drive.trim(&[(Lba(US), US)]).unwrap(), 1);
    let s2 = drive.stats();
    assert_eq!(s2.mapped_units, 1);
    assert_eq!(s2.live_chunks, 1, "the last reference is gone but the chunk lives on");
    assert_eq!(s2.live_bytes, s0.live_bytes - UNIT as u64, "random data is stored raw");
    assert_eq!(drive.read(Lba(2 * US), US).unwrap(), other);
    // The content is gone from the dedup index too: writing it again stores it anew.
    drive.write(Lba(3 * US), &shared).unwrap();
    assert_eq!(drive.stats().new_chunks, s2.new_chunks + 1);
    invariants(&drive);
}

#[test]
fn trim_is_all_or_nothing() {
    let mut drive = Drive::new(tiny()).unwrap();
    let cap = drive.capacity_sectors();
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let data = random_bytes(&mut rng, (cap * SECTOR) as usize);
    drive.write(Lba(0), &data).unwrap();
    let before = drive.stats();
    for ranges in [
        vec![(Lba(0), 64), (Lba(cap - 4), 8)],
        vec![(Lba(0), 64), (Lba(cap), 1)],
        vec![(Lba(16), 16), (Lba(u64::MAX - 1), 4)],
        vec![(Lba(0), cap + 1)],
    ] {
        let r = drive.trim(&ranges);
        assert!(matches!(r, Err(DriveError::OutOfRange { .. })), "{ranges:?}: {r:?}");
        assert_eq!(drive.stats(), before, "{ranges:?} failed but changed the drive");
    }
    assert_eq!(drive.stats().mapped_units, cap / US);
    assert_eq!(read_all(&mut drive), data);
    // The valid half alone works, and only whole units are unmapped.
    assert_eq!(drive.trim(&[(Lba(4), 60)]).unwrap(), 7);
    let after = read_all(&mut drive);
    assert_eq!(after[..2048], data[..2048], "a partly trimmed unit must keep its data");
    assert!(after[4096..32768].iter().all(|b| *b == 0));
}

#[test]
fn invalid_writes_and_reads_return_err_and_change_nothing() {
    let mut drive = Drive::new(tiny()).unwrap();
    let cap = drive.capacity_sectors();
    let mut rng = ChaCha8Rng::seed_from_u64(10);
    let data = random_bytes(&mut rng, 64 * UNIT);
    drive.write(Lba(0), &data).unwrap();
    let image = read_all(&mut drive);
    let before = drive.stats();
    let unit = vec![0xeeu8; UNIT];

    let writes: Vec<(u64, usize, &str)> = vec![
        (cap - 4, UNIT, "past the end"),
        (cap, 512, "at the end"),
        (u64::MAX - 1, UNIT, "overflowing"),
        (0, 0, "empty"),
        (0, 100, "short"),
        (8, 513, "not whole sectors"),
        (8, 4095, "one byte short of a unit"),
    ];
    for (lba, len, what) in writes {
        let r = drive.write(Lba(lba), &vec![0xeeu8; len]);
        match (len % 512 == 0 && len > 0, &r) {
            (true, Err(DriveError::OutOfRange { .. })) | (false, Err(DriveError::Misaligned { .. })) => {}
            _ => panic!("write {what}: {r:?}"),
        }
        assert_eq!(drive.stats(), before, "failed write {what} changed the stats");
    }
    // One bad request spoils the whole batch, even after good ones.
    let r = drive.write_batch(&[(Lba(0), &unit), (Lba(8), &unit), (Lba(cap - 1), &unit)]);
    assert!(matches!(r, Err(DriveError::OutOfRange { .. })), "{r:?}");
    let r = drive.write_batch(&[(Lba(0), &unit), (Lba(16), &unit[..1000])]);
    assert!(matches!(r, Err(DriveError::Misaligned { len: 1000, .. })), "{r:?}");
    assert_eq!(drive.stats(), before, "a failed batch changed the stats");

    for (lba, sectors, what) in
        [(0, 0, "empty"), (cap - 1, 2, "past the end"), (cap, 1, "at the end"), (u64::MAX, 1, "huge")]
    {
        let r = drive.read(Lba(lba), sectors);
        match (sectors, &r) {
            (0, Err(DriveError::Misaligned { len: 0, .. })) => {}
            (1.., Err(DriveError::OutOfRange { .. })) => {}
            _ => panic!("read {what}: {r:?}"),
        }
    }
    assert_eq!(drive.stats(), before, "failed reads changed the stats");
    assert_eq!(read_all(&mut drive), image);
    invariants(&drive);
}

#[test]
fn metadata_only_refuses_reads_of_data() {
    let mut cfg = tiny();
    cfg.media = Media::MetadataOnly;
    let mut drive = Drive::new(cfg).unwrap();
    let unit = vec![0x42u8; UNIT];
    drive.write(Lba(0), &unit).unwrap();
    drive.write(Lba(16), &[7u8; 3 * 512]).unwrap(); // partial unit over an unwritten unit: fine
    assert_eq!(drive.stats().mapped_units, 2);

    assert!(matches!(drive.read(Lba(0), 8), Err(DriveError::NoData { .. })));
    assert!(matches!(drive.read(Lba(3), 1), Err(DriveError::NoData { .. })));
    assert!(matches!(drive.read(Lba(4), 8), Err(DriveError::NoData { .. })), "a read touching unit 0");
    assert_eq!(drive.read(Lba(8), 8).unwrap(), vec![0u8; UNIT], "unwritten unit reads as zeros");
    assert_eq!(drive.read(Lba(24), 40).unwrap(), vec![0u8; 40 * 512]);

    let before = drive.stats();
    let r = drive.write(Lba(2), &[1u8; 512]);
    assert!(matches!(r, Err(DriveError::NoData { .. })), "partial write over a written unit: {r:?}");
    let r = drive.write(Lba(4), &unit); // covers units 0 and 1 partly; unit 0 is written
    assert!(matches!(r, Err(DriveError::NoData { .. })), "{r:?}");
    // In one batch: a whole-unit write, then part of that unit.
    let r = drive.write_batch(&[(Lba(40), &unit), (Lba(41), &unit[..512])]);
    assert!(matches!(r, Err(DriveError::NoData { .. })), "{r:?}");
    assert_eq!(drive.stats(), before, "a refused write changed the drive");
    assert_eq!(drive.read(Lba(40), 8).unwrap(), vec![0u8; UNIT]);

    // Whole-unit overwrites, TRIM and then partial writes into the trimmed unit work.
    drive.write(Lba(0), &unit).unwrap();
    assert_eq!(drive.trim(&[(Lba(0), 8)]).unwrap(), 1);
    drive.write(Lba(2), &[1u8; 512]).unwrap();
    assert_eq!(drive.stats().mapped_units, 2);
    invariants(&drive);
}

/// Aligned writes, batches and TRIMs: what a metadata-only drive supports.
fn aligned_workload(drive: &mut Drive, seed: u64, rounds: u32) {
    let units = drive.capacity_sectors() / US;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let spec = DataSpec::compressible(50).unwrap().with_dedupe(25).unwrap();
    let mut gen = PatternGen::new(spec, seed).unwrap();
    for _ in 0..rounds {
        let n = rng.random_range(64..=128u64);
        let mut buf = vec![0u8; (n * UNIT as u64) as usize];
        gen.fill(&mut buf);
        let mut reqs = Vec::new();
        let mut rest = &buf[..];
        while !rest.is_empty() {
            let take = rng.random_range(1..=16usize).min(rest.len() / UNIT) * UNIT;
            let (now, later) = rest.split_at(take);
            reqs.push((Lba(rng.random_range(0..=units - (take / UNIT) as u64) * US), now));
            rest = later;
        }
        drive.write_batch(&reqs).unwrap();
        let start = rng.random_range(0..units);
        let len = rng.random_range(1..=32u64).min(units - start);
        drive.trim(&[(Lba(start * US), len * US)]).unwrap();
    }
}

#[test]
fn metadata_only_counts_like_memory() {
    let mut cfg = small(4, 12, 16, 1024);
    cfg.gc.policy = GcPolicy::CostBenefit;
    let mut memory = Drive::new(cfg.clone()).unwrap();
    cfg.media = Media::MetadataOnly;
    let mut metadata = Drive::new(cfg).unwrap();
    aligned_workload(&mut memory, 21, 100);
    aligned_workload(&mut metadata, 21, 100);
    let (a, b) = (memory.stats(), metadata.stats());
    assert!(a.gc_relocated_bytes > 0, "the workload must garbage-collect");
    assert_eq!(serde_json::to_string(&a).unwrap(), serde_json::to_string(&b).unwrap());
    invariants(&memory);
    invariants(&metadata);
}

/// Mixed-content batches of 64+ units, overlapping writes, partial units
/// and TRIMs on a small drive that garbage-collects. Returns the stats as
/// JSON and the whole drive's content.
fn batch_workload(seed: u64) -> (String, Vec<u8>) {
    let mut drive = Drive::new(small(8, 8, 16, 1280)).unwrap();
    aligned_workload(&mut drive, seed, 40);
    let cap = drive.capacity_sectors();
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0xabcdef);
    let mut gen = PatternGen::new(DataSpec::compressible(30).unwrap().with_dedupe(30).unwrap(), seed).unwrap();
    for _ in 0..20 {
        let mut bufs = Vec::new();
        for _ in 0..8 {
            let sectors = rng.random_range(1..=24u64) * if rng.random_ratio(1, 2) { 8 } else { 1 };
            let mut b = vec![0u8; (sectors * SECTOR) as usize];
            gen.fill(&mut b);
            bufs.push((Lba(rng.random_range(0..=cap - sectors)), b));
        }
        // Overlap: the last request rewrites part of the first.
        let (lba0, first) = &bufs[0];
        bufs.push((Lba(lba0.0 + 1), first[..first.len().min(4096)].to_vec()));
        let reqs: Vec<(Lba, &[u8])> = bufs.iter().map(|(l, b)| (*l, &b[..])).collect();
        drive.write_batch(&reqs).unwrap();
    }
    invariants(&drive);
    let stats = drive.stats();
    assert!(stats.gc_relocated_bytes > 0 && stats.dedup_hits > 0 && stats.compression_ratio < 0.9, "{stats:?}");
    let content = read_all(&mut drive);
    (serde_json::to_string(&stats).unwrap(), content)
}

fn in_pool<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> T {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap().install(f)
}

#[test]
fn same_seed_same_results() {
    let a = in_pool(2, || batch_workload(1));
    let b = in_pool(2, || batch_workload(1));
    assert_eq!(a.0, b.0);
    assert!(a.1 == b.1, "same seed, different content");
    let c = in_pool(2, || batch_workload(2));
    assert_ne!(a.0, c.0, "a different seed must give different stats (or the comparison is vacuous)");
}

#[test]
fn thread_count_does_not_change_results() {
    let one = in_pool(1, || batch_workload(3));
    for threads in [2, 4] {
        let many = in_pool(threads, || batch_workload(3));
        assert_eq!(one.0, many.0, "{threads} threads");
        assert!(one.1 == many.1, "{threads} threads: content differs");
    }
}

#[test]
fn secure_erase_returns_zeros_and_resets_mappings() {
    let cfg = tiny();
    let blocks = cfg.geometry.total_blocks();
    let mut drive = Drive::new(cfg).unwrap();
    let cap = drive.capacity_sectors();
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let data = random_bytes(&mut rng, (cap * SECTOR) as usize);
    drive.write(Lba(0), &data).unwrap();
    let unit = data[..UNIT].to_vec();
    let before = drive.stats();
    assert_eq!(before.erases, 0);
    assert_eq!(before.pe_max, 0);
    assert!(before.free_blocks < blocks - 8, "1 MiB of random data must fill at least 8 blocks");

    drive.secure_erase();
    let after = drive.stats();
    assert_eq!((after.mapped_units, after.live_chunks, after.live_bytes), (0, 0, 0));
    assert_eq!(after.free_blocks, blocks);
    let used = u64::from(blocks - before.free_blocks);
    assert!(after.erases >= used - 2, "{} erases for {used} used blocks", after.erases);
    assert!(after.erases <= used);
    assert_eq!(after.pe_max, 1);
    assert!(after.pe_avg > 0.3, "P/E average {}", after.pe_avg);
    assert_eq!(after.host_write_bytes, before.host_write_bytes, "lifetime counters keep counting");
    assert_eq!(after.nand_pages_programmed, before.nand_pages_programmed);
    assert!(read_all(&mut drive).iter().all(|b| *b == 0), "secure-erased drive returned data");
    invariants(&drive);

    // The dedup index is empty too: old content is stored anew.
    drive.write(Lba(64), &unit).unwrap();
    let s = drive.stats();
    assert_eq!((s.new_chunks, s.dedup_hits), (after.new_chunks + 1, after.dedup_hits));
    assert_eq!(drive.read(Lba(64), US).unwrap(), unit);
    // Erasing again wears the blocks again.
    drive.write(Lba(0), &data).unwrap();
    drive.secure_erase();
    assert_eq!(drive.stats().pe_max, 2);
    assert!(drive.stats().erases > after.erases);
    invariants(&drive);
}

#[test]
fn sequential_reads_of_compressible_data_read_fewer_pages_than_units() {
    let mut drive = Drive::new(small(4, 32, 32, 4096)).unwrap();
    let units = 512u64;
    let compressible = pattern(DataSpec::compressible(75).unwrap(), 13, units as usize * UNIT);
    let random = pattern(DataSpec::incompressible(), 14, units as usize * UNIT);
    for (i, chunk) in compressible.chunks(32 * UNIT).enumerate() {
        drive.write(Lba(i as u64 * 32 * US), chunk).unwrap();
    }
    let random_at = units * US;
    for (i, chunk) in random.chunks(32 * UNIT).enumerate() {
        drive.write(Lba(random_at + i as u64 * 32 * US), chunk).unwrap();
    }
    // 8 KiB pages hold two raw units: reads of raw data cost at least
    // units / 2 pages; packed compressed units cost far fewer.
    for request_units in [8u64, 32, 128, 512] {
        let mut pages = 0;
        for start in (0..units).step_by(request_units as usize) {
            let before = drive.stats().host_page_reads;
            let got = drive.read(Lba(start * US), request_units * US).unwrap();
            let cost = drive.stats().host_page_reads - before;
            assert!(cost < request_units, "{request_units}-unit read at unit {start} cost {cost} page reads");
            pages += cost;
            assert!(
                got[..]
                    == compressible[(start * UNIT as u64) as usize..((start + request_units) * UNIT as u64) as usize]
            );
        }
        // Raw units would cost units / 2 = 256 pages; these cost 72..176.
        let bound = if request_units >= 128 { units / 5 } else { units / 2 };
        assert!(pages < bound, "{request_units}-unit requests: {pages} page reads for {units} compressible units");
        let before = drive.stats().host_page_reads;
        for start in (0..units).step_by(request_units as usize) {
            drive.read(Lba(random_at + start * US), request_units * US).unwrap();
        }
        let raw = drive.stats().host_page_reads - before;
        assert!(raw >= units / 2 - 2, "{request_units}-unit requests: {raw} page reads for {units} raw units");
    }
}

#[test]
fn write_batch_equals_writes_one_by_one() {
    let cap = 256 * US;
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    let mut gen = PatternGen::new(DataSpec::compressible(50).unwrap().with_dedupe(30).unwrap(), 15).unwrap();
    let mut batches: Vec<Vec<(Lba, Vec<u8>)>> = Vec::new();
    for _ in 0..200 {
        let batch = (0..rng.random_range(2..12))
            .map(|_| {
                let sectors = rng.random_range(1..=48u64);
                let mut b = vec![0u8; (sectors * SECTOR) as usize];
                gen.fill(&mut b);
                (Lba(rng.random_range(0..=cap - sectors)), b)
            })
            .collect();
        batches.push(batch);
    }
    let mut batched = Drive::new(tiny()).unwrap();
    let mut single = Drive::new(tiny()).unwrap();
    for batch in &batches {
        let reqs: Vec<(Lba, &[u8])> = batch.iter().map(|(l, b)| (*l, &b[..])).collect();
        batched.write_batch(&reqs).unwrap();
        for (l, b) in batch {
            single.write(*l, b).unwrap();
        }
    }
    assert_eq!(batched.stats(), single.stats());
    assert!(batched.stats().gc_victims > 0);
    assert_eq!(read_all(&mut batched), read_all(&mut single));
    invariants(&batched);
}

#[test]
fn partial_unit_writes_keep_the_rest_of_the_unit() {
    let mut drive = Drive::new(tiny()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(16);
    let base = random_bytes(&mut rng, 2 * UNIT);
    drive.write(Lba(0), &base).unwrap();
    let patch = vec![0xabu8; 3 * 512];
    drive.write(Lba(6), &patch).unwrap(); // last 2 sectors of unit 0, first of unit 1
    let mut want = base.clone();
    want[6 * 512..9 * 512].copy_from_slice(&patch);
    assert_eq!(drive.read(Lba(0), 16).unwrap(), want);
    let s = drive.stats();
    assert_eq!(s.host_write_units, 4, "a partial unit counts as one unit write");
    assert_eq!(s.host_write_bytes, (2 * UNIT + 3 * 512) as u64);
    invariants(&drive);
}

#[test]
fn clones_are_independent() {
    let mut a = Drive::new(tiny()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(17);
    let data = random_bytes(&mut rng, 16 * UNIT);
    a.write(Lba(0), &data).unwrap();
    let mut b = a.clone();
    b.write(Lba(0), &vec![1u8; UNIT]).unwrap();
    b.trim(&[(Lba(8), 8)]).unwrap();
    assert_eq!(a.read(Lba(0), 16 * US).unwrap(), data);
    assert_ne!(a.stats(), b.stats());
    invariants(&a);
    invariants(&b);
}

#[test]
fn documented_example_config_is_valid() {
    // The crate-level example (src/lib.rs) builds exactly this drive.
    let cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(256 << 20);
    assert!(cfg.is_ok(), "the documented example drive does not validate: {:?}", cfg.err());
}
