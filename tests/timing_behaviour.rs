//! The simulated-time model seen from the host: directions and ratios of
//! throughput, IOPS and latency, never wall-clock time.
//!
//! Every drive here is a scaled-down preset (the rates come from dies,
//! channels and timing parameters, which scaling keeps) and most keep
//! metadata only, so the whole file runs in seconds. Each test prints the
//! numbers its assertions rest on (`cargo test -- --nocapture`).

mod sim;

use duraflash::config::PRESETS;
use duraflash::host::HostQueue;
use duraflash::workload::access::Rw;
use duraflash::workload::job::Limit;
use duraflash::workload::review::{hdtach, hdtach_sweep, iometer};
use duraflash::{Drive, DriveConfig, Lba, Media};
use sim::{drive, fill, incompressible, job, preset, run, within, KIB, MIB};

const SECTOR: u64 = 512;

// ---------------------------------------------------------------------------
// 1. Calibration of the clean presets.

#[test]
fn scaling_keeps_dies_channels_and_timing() {
    for name in PRESETS {
        let full = DriveConfig::preset(name).unwrap();
        for capacity in [256 * MIB, 1 << 30] {
            let small = full.scaled(capacity).unwrap();
            assert_eq!(small.geometry.channels, full.geometry.channels, "{name} at {capacity}");
            assert_eq!(small.geometry.dies_per_channel, full.geometry.dies_per_channel, "{name} at {capacity}");
            assert_eq!(small.geometry.page_bytes, full.geometry.page_bytes, "{name} at {capacity}");
            assert_eq!(small.geometry.pages_per_block, full.geometry.pages_per_block, "{name} at {capacity}");
            assert_eq!(small.timing, full.timing, "{name} at {capacity}");
            assert!(small.geometry.blocks_per_die < full.geometry.blocks_per_die, "{name}: only blocks shrink");
        }
    }
    // And the measured rates do not depend on capacity.
    let write_mbps = |capacity: u64| {
        let mut d = drive(preset("samsung830-64g", capacity, Media::MetadataOnly));
        hdtach_sweep(&mut d, Rw::Write, 8, incompressible(), 1, &mut |_| {}).unwrap().avg_mbps
    };
    let (small, large) = (write_mbps(256 * MIB), write_mbps(1 << 30));
    println!("samsung830 sequential write: 256 MiB drive {small:.1} MB/s, 1 GiB drive {large:.1} MB/s");
    assert!(within(small, large, 0.02), "write rate depends on capacity: {small:.1} vs {large:.1} MB/s");
}

#[test]
fn calibration_sf2281_clean_sequential_read_is_402_mbps() {
    let mut d = drive(preset("sf2281-240g", 512 * MIB, Media::MetadataOnly));
    let h = hdtach(&mut d, 8, incompressible(), 1, &mut |_| {}).unwrap();
    println!("sf2281 clean HD Tach: read {:.1} MB/s, write {:.1} MB/s", h.read.avg_mbps, h.write.avg_mbps);
    assert!(within(h.read.avg_mbps, 402.0, 0.05), "sf2281 clean read {:.1} MB/s, want 402 +-5%", h.read.avg_mbps);
    assert_eq!(d.stats().host_write_bytes, 0, "the read sweep wrote nothing (the write sweep ran on a clone)");
}

#[test]
fn calibration_samsung830_clean_sequential_read_500_write_145_to_165_mbps() {
    let mut d = drive(preset("samsung830-64g", 512 * MIB, Media::MetadataOnly));
    let h = hdtach(&mut d, 8, incompressible(), 1, &mut |_| {}).unwrap();
    println!("samsung830 clean HD Tach: read {:.1} MB/s, write {:.1} MB/s", h.read.avg_mbps, h.write.avg_mbps);
    assert!(within(h.read.avg_mbps, 500.0, 0.05), "samsung830 read {:.1} MB/s, want 500 +-5%", h.read.avg_mbps);
    assert!(
        (145.0..=165.0).contains(&h.write.avg_mbps),
        "samsung830 sequential write {:.1} MB/s, want 145-165",
        h.write.avg_mbps
    );
}

#[test]
fn calibration_intel_x25m_random_4k_qd64_40k_read_19k_write_iops() {
    let mut d = drive(preset("intel-x25m-g2-160g", 512 * MIB, Media::MetadataOnly));
    let span = 64 * MIB;
    fill(&mut d, span, incompressible(), 1);
    let points = iometer(&mut d, span, 4000, incompressible(), 1, &mut |_| {}).unwrap();
    for p in &points {
        println!("intel x25-m QD {:>2}: read {:>6.0} IOPS, write {:>6.0} IOPS", p.qd, p.read_iops, p.write_iops);
    }
    let qd64 = points.iter().find(|p| p.qd == 64).expect("QD 64 measured");
    assert!(within(qd64.read_iops, 40_000.0, 0.10), "QD 64 read {:.0} IOPS, want 40000 +-10%", qd64.read_iops);
    assert!(within(qd64.write_iops, 19_000.0, 0.10), "QD 64 write {:.0} IOPS, want 19000 +-10%", qd64.write_iops);
}

// ---------------------------------------------------------------------------
// 2. Random writes reach a GC-bound steady state; free space softens it.

/// Write IOPS of consecutive windows of 4 KiB random writes at QD 32 over
/// the first `span` bytes, each window 0.1 x the drive's capacity. The
/// drive is filled sequentially first: all of it, or only `span` when
/// `fill_all` is false; with `trim_rest` the part beyond `span` is then
/// trimmed.
fn random_write_windows(cfg: DriveConfig, span: u64, fill_all: bool, trim_rest: bool, windows: u64) -> Vec<f64> {
    let mut d = drive(cfg);
    let capacity = d.config().logical_bytes;
    fill(&mut d, if fill_all { capacity } else { span }, incompressible(), 1);
    if trim_rest {
        let unmapped = d.trim(&[(Lba(span / SECTOR), (capacity - span) / SECTOR)]).unwrap();
        // All of it, give or take the units `bug_trim_loses_units_where_a_long_range_is_split` is about.
        assert!(unmapped * 1000 >= (capacity - span) / 4096 * 999, "TRIM unmapped only {unmapped} units");
    }
    let ops = capacity / 4096 / 10;
    (0..windows)
        .map(|w| run(&mut d, &job(Rw::RandWrite, 4 * KIB, 32, 0, span, Limit::Ops(ops), incompressible(), 100 + w)))
        .map(|r| r.write.iops)
        .collect()
}

/// Mean of the last four windows.
fn steady(windows: &[f64]) -> f64 {
    windows[windows.len() - 4..].iter().sum::<f64>() / 4.0
}

fn samsung_no_reduction() -> DriveConfig {
    let mut cfg = preset("samsung830-64g", 512 * MIB, Media::MetadataOnly);
    cfg.compression = false;
    cfg.dedup = false;
    cfg
}

#[test]
fn random_writes_slow_down_as_gc_starts_copying() {
    let mut d = drive(samsung_no_reduction());
    let capacity = d.config().logical_bytes;
    fill(&mut d, capacity, incompressible(), 1);
    let ops = capacity / 4096 / 10;
    let mut iops = Vec::new();
    let mut relocated = vec![d.stats().gc_relocated_bytes];
    for w in 0..12 {
        let r = run(&mut d, &job(Rw::RandWrite, 4 * KIB, 32, 0, capacity, Limit::Ops(ops), incompressible(), 100 + w));
        iops.push(r.write.iops);
        relocated.push(d.stats().gc_relocated_bytes);
    }
    println!("samsung830 full span, 0.1 drive-writes per window: IOPS {iops:.0?}");
    println!("  GC relocated MiB after each window: {:?}", relocated.iter().map(|b| b / MIB).collect::<Vec<_>>());
    let (first, last) = (iops[0], steady(&iops));
    assert!(last < 0.7 * first, "steady {last:.0} IOPS is not well below the first window's {first:.0}");
    assert!(
        relocated.windows(2).skip(1).all(|w| w[1] > w[0]),
        "GC copies in every window once the spare blocks are used: {relocated:?}"
    );
    assert!(relocated[12] - relocated[11] > relocated[1] - relocated[0], "GC copies more at steady state");
    assert!(d.stats().waf > 2.0, "WAF {} at 7 % OP", d.stats().waf);
}

#[test]
fn more_free_space_gives_a_higher_random_write_steady_state() {
    let cfg = samsung_no_reduction();
    let capacity = cfg.logical_bytes;
    let half = capacity / 2;
    let full = steady(&random_write_windows(cfg.clone(), capacity, true, false, 15));
    let half_span = steady(&random_write_windows(cfg.clone(), half, false, false, 15));
    let more_op = steady(&random_write_windows(cfg.with_op(0.5).unwrap(), capacity, true, false, 15));
    let lower_half_untrimmed = steady(&random_write_windows(cfg.clone(), half, true, false, 15));
    let lower_half_trimmed = steady(&random_write_windows(cfg.clone(), half, true, true, 15));
    println!(
        "samsung830 steady 4 KiB random write IOPS: full span {full:.0}; half span written {half_span:.0}; \
         OP 0.5 {more_op:.0}; lower half of a full drive {lower_half_untrimmed:.0}, after trimming the upper half \
         {lower_half_trimmed:.0}"
    );
    assert!(half_span > 2.0 * full, "half-span steady {half_span:.0} vs full-span {full:.0}");
    assert!(more_op > 2.0 * full, "OP 0.5 steady {more_op:.0} vs preset OP {full:.0}");
    assert!(lower_half_untrimmed > full, "cold upper half leaves the OP to the hot half");
    assert!(
        lower_half_trimmed > 1.5 * lower_half_untrimmed,
        "TRIM of the upper half: {lower_half_trimmed:.0} vs untrimmed {lower_half_untrimmed:.0}"
    );
}

// ---------------------------------------------------------------------------
// 3. Placement alone slows sequential reads after random writes.

/// Sequential 64 KiB reads at QD 1 over the whole drive: (MB/s, NAND pages
/// read per 8 KiB read).
#[cfg(feature = "quirk-read-degradation")]
fn sequential_read(drive: &mut Drive) -> (f64, f64) {
    let capacity = drive.config().logical_bytes;
    let before = drive.stats().host_page_reads;
    let r = run(
        drive,
        &job(
            Rw::Read,
            duraflash::workload::review::HDTACH_REQUEST,
            1,
            0,
            capacity,
            Limit::Bytes(capacity),
            incompressible(),
            3,
        ),
    );
    let pages = drive.stats().host_page_reads - before;
    (r.read.bw_bytes / 1e6, pages as f64 / (capacity / 8192) as f64)
}

#[test]
#[cfg(feature = "quirk-read-degradation")]
fn random_writes_fragment_compressed_data_and_slow_sequential_reads() {
    let data = duraflash::content::pattern::DataSpec::compressible(50).unwrap();
    let mut fresh = drive(preset("sf2281-240g", 256 * MIB, Media::MetadataOnly));
    let capacity = fresh.config().logical_bytes;
    fill(&mut fresh, capacity, data, 1);
    let mut rewritten = fresh.clone();
    let mut fragmented = fresh.clone();
    let (fresh_mbps, fresh_pages) = sequential_read(&mut fresh);

    run(&mut fragmented, &job(Rw::RandWrite, 4 * KIB, 32, 0, capacity, Limit::Bytes(capacity), data, 9));
    run(&mut fragmented, &job(Rw::RandWrite, 4 * KIB, 32, 0, capacity, Limit::Bytes(capacity / 2), data, 10));
    let (frag_mbps, frag_pages) = sequential_read(&mut fragmented);

    run(&mut rewritten, &job(Rw::Write, 128 * KIB, 32, 0, capacity, Limit::Bytes(capacity), data, 11));
    let (seq_mbps, seq_pages) = sequential_read(&mut rewritten);
    println!(
        "sf2281 64 KiB sequential read of 50 %-compressible data: fresh {fresh_mbps:.1} MB/s ({fresh_pages:.2} pages \
         per 8 KiB), after 1.5 drive-writes of 4 KiB random writes {frag_mbps:.1} MB/s ({frag_pages:.2}), after a \
         sequential rewrite {seq_mbps:.1} MB/s ({seq_pages:.2})"
    );
    assert!(fresh_pages < 0.75, "compressed sequential data shares pages: {fresh_pages:.2} pages per 8 KiB");
    assert!(frag_pages > 1.5 * fresh_pages, "pages per byte: fragmented {frag_pages:.2} vs fresh {fresh_pages:.2}");
    assert!(frag_mbps < 0.8 * fresh_mbps, "fragmented {frag_mbps:.1} MB/s vs fresh {fresh_mbps:.1} MB/s");
    assert!(within(seq_mbps, fresh_mbps, 0.05), "sequential rewrite {seq_mbps:.1} MB/s vs fresh {fresh_mbps:.1}");
    assert!(within(seq_pages, fresh_pages, 0.05), "sequential rewrite {seq_pages:.2} pages vs fresh {fresh_pages:.2}");
}

// ---------------------------------------------------------------------------
// 4. Simulated time only.

#[test]
fn results_are_deterministic_and_qd1_iops_is_the_inverse_mean_latency() {
    let mut d = drive(preset("samsung830-64g", 256 * MIB, Media::MetadataOnly));
    let capacity = d.config().logical_bytes;
    fill(&mut d, capacity, incompressible(), 1);
    let mut mixed = job(Rw::RandRw, 4 * KIB, 8, 0, capacity, Limit::Ops(20_000), incompressible(), 4);
    mixed.rwmixread = 70;
    let (mut a, mut b) = (d.clone(), d.clone());
    let (ra, rb) = (run(&mut a, &mixed), run(&mut b, &mixed));
    assert_eq!(ra, rb, "same job on clones of one drive");
    assert_eq!(a.stats(), b.stats());
    assert_eq!(a.now(), b.now());
    assert!(ra.read.lat.commands > 0 && ra.write.lat.commands > 0);

    for rw in [Rw::RandRead, Rw::RandWrite] {
        let r = run(&mut d.clone(), &job(rw, 4 * KIB, 1, 0, capacity, Limit::Ops(5000), incompressible(), 6));
        let dir = if rw == Rw::RandRead { &r.read } else { &r.write };
        let inverse = 1e9 / dir.lat.mean_latency_ns;
        println!("QD 1 {rw:?}: {:.1} IOPS, 1e9 / mean latency {inverse:.1}", dir.iops);
        assert!(within(dir.iops, inverse, 0.01), "{rw:?}: {:.1} IOPS vs 1e9/mean latency {inverse:.1}", dir.iops);
    }
}

// ---------------------------------------------------------------------------
// 5. Foreground GC delays host writes.

#[test]
fn foreground_gc_raises_write_tail_latency() {
    let cfg = samsung_no_reduction();
    let capacity = cfg.logical_bytes;
    let window = |d: &mut Drive, seed| {
        run(d, &job(Rw::RandWrite, 4 * KIB, 32, 0, capacity, Limit::Ops(capacity / 4096 / 20), incompressible(), seed))
    };
    let mut fresh = drive(cfg.clone());
    let clean = window(&mut fresh, 1);
    let mut busy = drive(cfg);
    fill(&mut busy, capacity, incompressible(), 1);
    for seed in 0..10 {
        window(&mut busy, 10 + seed);
    }
    let gc_before = busy.stats().gc_victims;
    let steady = window(&mut busy, 99);
    assert!(busy.stats().gc_victims > gc_before, "foreground GC ran while measuring");
    println!(
        "samsung830 4 KiB random write QD 32: mean/p50/p99 {:.0}/{}/{} us on a secure-erased drive, {:.0}/{}/{} us \
         at steady state",
        clean.write.lat.mean_latency_ns / 1e3,
        clean.write.lat.p50_ns / 1000,
        clean.write.lat.p99_ns / 1000,
        steady.write.lat.mean_latency_ns / 1e3,
        steady.write.lat.p50_ns / 1000,
        steady.write.lat.p99_ns / 1000
    );
    assert_eq!(fresh.stats().gc_victims, 0, "no GC on a fresh drive");
    assert!(
        steady.write.lat.p99_ns > 10 * clean.write.lat.p99_ns,
        "p99 {} vs {} ns",
        steady.write.lat.p99_ns,
        clean.write.lat.p99_ns
    );
    assert!(steady.write.lat.mean_latency_ns > 2.0 * clean.write.lat.mean_latency_ns, "mean latency at the same QD");
}

// ---------------------------------------------------------------------------
// 6. TRIM costs firmware time, no NAND work.

#[test]
fn trim_costs_firmware_time_per_range_and_no_nand_work() {
    let mut d = drive(preset("samsung830-64g", 64 * MIB, Media::MetadataOnly));
    let capacity = d.config().logical_bytes;
    fill(&mut d, capacity, incompressible(), 1);
    let per_range = d.config().timing.trim_range_ns;
    assert!(per_range > 0);
    let elapsed = |d: &mut Drive, ranges: &[(Lba, u64)]| {
        let before = d.stats();
        let start = d.now();
        let mut q = HostQueue::new(1, start);
        let unmapped = d.trim_on(ranges, &mut q).unwrap();
        let after = d.stats();
        assert_eq!(unmapped, ranges.len() as u64, "every range covers one written unit");
        assert_eq!(after.mapped_units, before.mapped_units - unmapped);
        assert_eq!(after.nand_pages_programmed, before.nand_pages_programmed, "TRIM programs nothing");
        assert_eq!(after.nand_pages_read, before.nand_pages_read, "TRIM reads nothing");
        assert_eq!(after.erases, before.erases, "TRIM erases nothing");
        assert!(d.now() >= q.finished_at(), "the drive's clock follows the command");
        q.finished_at().0 - start.0
    };
    let ranges = |first: u64, n: u64| (0..n).map(|i| (Lba((first + 2 * i) * 8), 8)).collect::<Vec<_>>();
    let one = elapsed(&mut d, &ranges(0, 1));
    let hundred = elapsed(&mut d, &ranges(10, 100));
    let two_hundred = elapsed(&mut d, &ranges(400, 200));
    println!(
        "TRIM of 1 range: {one} ns, 100 ranges: {hundred} ns, 200 ranges: {two_hundred} ns (trim_range_ns {per_range})"
    );
    assert!(one >= per_range, "one range {one} ns < {per_range} ns");
    assert!(hundred >= 100 * per_range, "100 ranges {hundred} ns < {} ns", 100 * per_range);
    // A single range's cost may hide under the fixed command latency; a hundred more may not.
    assert!(two_hundred - hundred >= 100 * per_range, "100 more ranges cost {} ns", two_hundred - hundred);
}

// ---------------------------------------------------------------------------
// 7. Idle time lets GC clean ahead of the host.

#[test]
fn idle_time_runs_gc_and_frees_blocks() {
    let cfg = samsung_no_reduction();
    let capacity = cfg.logical_bytes;
    let high = cfg.gc.high_watermark;
    let mut d = drive(cfg);
    fill(&mut d, capacity, incompressible(), 1);
    run(&mut d, &job(Rw::RandWrite, 4 * KIB, 32, 0, capacity, Limit::Bytes(capacity / 2), incompressible(), 9));
    let before = d.stats();
    assert!(before.free_blocks < high, "random writes left {} free blocks", before.free_blocks);

    let mut no_time = d.clone();
    let now = no_time.now();
    assert_eq!(no_time.idle(now, now).unwrap(), 0, "no idle time, nothing cleaned");
    assert_eq!(no_time.stats(), before);

    let mut short = d.clone();
    let now = short.now();
    let cleaned_short = short.idle(now, now + 10_000_000).unwrap();

    let now = d.now();
    let cleaned = d.idle(now, now + 10_000_000_000).unwrap();
    let after = d.stats();
    println!(
        "idle GC: 10 ms cleaned {cleaned_short} blocks; 10 s cleaned {cleaned} blocks, free blocks {} -> {}",
        before.free_blocks, after.free_blocks
    );
    assert!(cleaned > 0);
    assert!(cleaned_short < cleaned, "10 ms cleans less than 10 s: {cleaned_short} vs {cleaned}");
    assert_eq!(after.gc_victims - before.gc_victims, u64::from(cleaned));
    assert!(after.free_blocks > before.free_blocks, "{} -> {}", before.free_blocks, after.free_blocks);
    assert!(after.free_blocks >= high, "idle GC stops at the high watermark: {}", after.free_blocks);
    assert_eq!(after.host_write_bytes, before.host_write_bytes);
    d.check_invariants().unwrap();

    // The blocks cleaned ahead of time absorb the next burst (4 blocks' worth) without foreground GC.
    let burst = |d: &mut Drive| {
        let start = d.now() + 2_000_000_000;
        let mut q = HostQueue::new(32, start);
        let victims = d.stats().gc_victims;
        let data = vec![0u8; 4096];
        let requests: Vec<(Lba, &[u8])> = (0..1024u64).map(|i| (Lba((i * 997 % 65536) * 8), &data[..])).collect();
        d.write_batch_on(&requests, &mut q).unwrap();
        (q.summary().p99_ns, d.stats().gc_victims - victims)
    };
    let mut not_idled = no_time;
    let (p99_busy, gc_busy) = burst(&mut not_idled);
    let (p99_idled, gc_idled) = burst(&mut d);
    println!(
        "1024-write burst: p99 {p99_busy} ns with {gc_busy} GC victims without idle, \
         {p99_idled} ns with {gc_idled} after idle"
    );
    assert_eq!(gc_idled, 0, "the idled drive had free blocks for the burst");
    assert!(gc_busy > 0);
    assert!(p99_idled < p99_busy, "burst p99 {p99_idled} ns after idle vs {p99_busy} ns without");
}

/// Regression: ATA DSM carries at most 65535 sectors per range entry, so
/// `trim_on` splits a long range into entries; each entry once unmapped
/// only the whole 4 KiB units it covered, leaving the unit straddling each
/// 65535-sector boundary mapped. Contiguous entries are merged now.
#[test]
fn trim_of_a_long_range_unmaps_every_unit_it_covers() {
    let mut d = drive(preset("samsung830-64g", 64 * MIB, Media::MetadataOnly));
    let capacity = d.config().logical_bytes;
    fill(&mut d, capacity, incompressible(), 1);
    let units = capacity / 4096;
    let unmapped = d.trim(&[(Lba(0), capacity / SECTOR)]).unwrap();
    println!("TRIM of the whole {capacity}-byte drive in one range: {unmapped} of {units} units unmapped");
    assert_eq!(unmapped, units, "a unit-aligned TRIM of the whole drive leaves {} units mapped", units - unmapped);
    assert_eq!(d.stats().mapped_units, 0);
}
