//! RAID arrays: TRIM pass-through policies, the RAID-0 experiment's shape
//! and an oracle over the array's bytes.

use duraflash::host::raid::{Level, TrimPolicy};
use duraflash::lab::raid::{raid, RaidReport, RaidSpec};
use duraflash::{DriveConfig, Media};

fn run(level: Level, members: usize, driver: TrimPolicy) -> RaidReport {
    run_sized(level, members, driver, 128 << 20)
}

fn run_sized(level: Level, members: usize, driver: TrimPolicy, member_bytes: u64) -> RaidReport {
    let mut member = DriveConfig::preset("samsung830-64g").unwrap().scaled(member_bytes).unwrap();
    member.media = Media::MetadataOnly;
    let spec = RaidSpec { level, members, stripe_bytes: 128 << 10, driver, minutes: 30.0, zones: 8, seed: 1 };
    raid(&member, &spec, &mut |_, _| {}).unwrap()
}

#[test]
fn raid0_recovers_after_format_only_when_the_driver_passes_trim() {
    let old = run(Level::Raid0, 2, TrimPolicy::Rst10_6);
    let new = run(Level::Raid0, 2, TrimPolicy::Rst11_2);
    // rst-10.6 drops the format's TRIM: nothing recovers.
    assert_eq!(old.trimmed_units, 0);
    assert!(!old.trim_passed && new.trim_passed);
    assert!(old.tortured.write_mbps < 0.6 * old.clean.write_mbps, "torture degrades writes: {old:?}");
    let ratio = old.after_format.write_mbps / old.tortured.write_mbps;
    assert!((0.9..1.1).contains(&ratio), "no recovery without TRIM: {ratio}");
    // rst-11.2 passes it: back to clean.
    assert!(new.trimmed_units > 0);
    assert!(new.after_format.write_mbps >= 0.95 * new.clean.write_mbps, "{new:?}");
    // Striping doubles sequential speed and random reads at depth, not at QD 1.
    for (array, single) in [(new.clean.read_mbps, new.single.read_mbps), (new.clean.write_mbps, new.single.write_mbps)]
    {
        assert!((1.8..2.2).contains(&(array / single)), "sequential: {array} vs one member {single}");
    }
    assert!(new.random_read.qd1_iops <= 1.02 * new.single_random_read.qd1_iops);
    assert!(new.random_read.qd32_iops >= 1.4 * new.single_random_read.qd32_iops);
}

#[test]
fn rst_11_2_drops_trim_on_raid10_but_passthrough_delivers_it() {
    let dropped = run(Level::Raid10, 4, TrimPolicy::Rst11_2);
    let passed = run(Level::Raid10, 4, TrimPolicy::Passthrough);
    assert_eq!(dropped.trimmed_units, 0);
    assert!(passed.trimmed_units > 0);
    assert!(passed.after_format.write_mbps > 1.5 * dropped.after_format.write_mbps);
}

/// At the CLI's default member size (1 GiB) the format's TRIM empties
/// far more blocks than idle GC's watermark keeps erased; erasing them in
/// the idle time after the format is what brings the write sweep back.
#[test]
fn raid0_recovers_fully_at_the_default_member_size() {
    let new = run_sized(Level::Raid0, 2, TrimPolicy::Rst11_2, 1 << 30);
    let old = run_sized(Level::Raid0, 2, TrimPolicy::Rst10_6, 1 << 30);
    let (recovered, stuck) =
        (new.after_format.write_mbps / new.clean.write_mbps, old.after_format.write_mbps / old.tortured.write_mbps);
    println!("1 GiB members: rst-11.2 after format {recovered:.3} x clean; rst-10.6 {stuck:.3} x tortured");
    assert!(recovered >= 0.95, "rst-11.2 after format {recovered:.3} x clean");
    assert!((0.9..1.1).contains(&stuck), "rst-10.6: no recovery without TRIM: {stuck:.3}");
    assert!(old.after_format.write_mbps < 0.6 * old.clean.write_mbps);
}

/// Erase-ahead follows its cause: after a full TRIM, a drive given idle
/// time writes at clean speed; the same drive written at once must erase
/// the emptied blocks while it writes, and the dies it waits on slow the
/// sweep.
#[test]
fn emptied_blocks_erased_in_idle_time_restore_write_speed() {
    use duraflash::content::pattern::DataSpec;
    use duraflash::lab::torture::{format_trim, pause};
    use duraflash::workload::access::{Distribution, Rw};
    use duraflash::workload::job::{fill_spec, run_job, JobSpec, Limit};
    use duraflash::workload::review::hdtach;
    let mut cfg = DriveConfig::preset("samsung830-64g").unwrap().scaled(1 << 30).unwrap();
    cfg.media = Media::MetadataOnly;
    let cap = cfg.logical_bytes;
    let data = DataSpec::compressible(0).unwrap();
    let mut d = duraflash::Drive::new(cfg).unwrap();
    let clean = hdtach(&mut d.clone(), 16, data, 3, &mut |_| {}).unwrap().write.avg_mbps;
    run_job(&mut d, &fill_spec(cap, 128 << 10, 32, data, 1), &mut |_| {}).unwrap();
    let torture = JobSpec {
        name: "torture".into(),
        rw: Rw::RandWrite,
        bs: 4096,
        sizes: Default::default(),
        iodepth: 32,
        offset: 0,
        length: cap,
        limit: Limit::Bytes(cap / 2),
        rwmixread: 0,
        distribution: Distribution::Random,
        data,
        seed: 2,
    };
    run_job(&mut d, &torture, &mut |_| {}).unwrap();
    pause(&mut d).unwrap();
    format_trim(&mut d).unwrap();
    let mut rushed = d.clone();
    pause(&mut d).unwrap();
    let rested = hdtach(&mut d, 16, data, 3, &mut |_| {}).unwrap().write.avg_mbps;
    let now = rushed.now();
    rushed.idle(now, now).unwrap(); // no idle time at all
    let hurried = hdtach(&mut rushed, 16, data, 3, &mut |_| {}).unwrap().write.avg_mbps;
    println!("after a full TRIM: write {rested:.1} MB/s rested, {hurried:.1} MB/s at once, clean {clean:.1}");
    assert!(rested >= 0.95 * clean, "rested {rested:.1} vs clean {clean:.1}");
    // The erases cost only their time (about 3 % here): since GC breaks
    // ties between dead blocks by the die with the fewest free blocks, no
    // die drops out of the write stripe (that artefact made this 0.92x).
    assert!(hurried < 0.99 * rested, "without idle time the erases are paid while writing: {hurried:.1}");
    assert!(d.stats().free_blocks > rushed.stats().free_blocks);
}

mod oracle {
    use duraflash::host::raid::{Array, Level, TrimPolicy};
    use duraflash::host::{BlockDevice, HostQueue};
    use duraflash::{Drive, DriveConfig, Lba};
    use proptest::prelude::*;

    /// Sectors of the array the operations touch (collisions wanted).
    const SPAN: u64 = 2048;

    #[derive(Clone, Debug)]
    enum Op {
        Write(u64, u64, u8),
        Trim(Vec<(u64, u64)>),
        Read(u64, u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        let range = (0..SPAN).prop_flat_map(|s| (Just(s), 1..=(SPAN - s).min(96)));
        prop_oneof![
            3 => (range.clone(), any::<u8>()).prop_map(|((s, n), b)| Op::Write(s, n, b)),
            2 => prop::collection::vec(range.clone(), 1..4).prop_map(Op::Trim),
            2 => range.prop_map(|(s, n)| Op::Read(s, n)),
        ]
    }

    fn array(level: Level, members: usize) -> Array {
        let cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(32 << 20).unwrap();
        let drives = (0..members).map(|_| Drive::new(cfg.clone()).unwrap()).collect();
        Array::new(level, 8 << 10, TrimPolicy::Passthrough, drives).unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Every sector not trimmed since its last write reads back exactly
        /// (so no member range another LBA needs was trimmed); a trimmed one
        /// reads as zeros or its old bytes (TRIM of part of a unit is advisory).
        #[test]
        fn array_reads_match_a_byte_image(level in prop_oneof![Just((Level::Raid0, 3)), Just((Level::Raid10, 4)), Just((Level::Raid1, 2))], ops in prop::collection::vec(op(), 1..40)) {
            let mut a = array(level.0, level.1);
            let mut image = vec![0u8; (SPAN * 512) as usize];
            let mut trimmed = vec![false; SPAN as usize];
            let mut q = HostQueue::new(4, a.now());
            for op in ops {
                match op {
                    Op::Write(s, n, b) => {
                        let data: Vec<u8> = (0..n * 512).map(|i| b.wrapping_add((i / 512) as u8)).collect();
                        a.write_batch_on(&[(Lba(s), &data)], &mut q).unwrap();
                        image[(s * 512) as usize..((s + n) * 512) as usize].copy_from_slice(&data);
                        trimmed[s as usize..(s + n) as usize].iter_mut().for_each(|t| *t = false);
                    }
                    Op::Trim(ranges) => {
                        let r: Vec<(Lba, u64)> = ranges.iter().map(|&(s, n)| (Lba(s), n)).collect();
                        a.trim_on(&r, &mut q).unwrap();
                        for (s, n) in ranges {
                            trimmed[s as usize..(s + n) as usize].iter_mut().for_each(|t| *t = true);
                        }
                    }
                    Op::Read(s, n) => {
                        let got = a.read_on(Lba(s), n, &mut q, true).unwrap().unwrap();
                        for i in 0..n {
                            let (lo, hi) = ((i * 512) as usize, ((i + 1) * 512) as usize);
                            let want = &image[((s + i) * 512) as usize..((s + i + 1) * 512) as usize];
                            let ok = &got[lo..hi] == want || (trimmed[(s + i) as usize] && got[lo..hi].iter().all(|&x| x == 0));
                            prop_assert!(ok, "sector {} differs", s + i);
                        }
                    }
                }
            }
            for d in a.members() {
                prop_assert!(d.check_invariants().is_ok());
            }
        }

        /// Every member sector an array TRIM reaches holds an array sector
        /// inside the trimmed ranges.
        #[test]
        fn member_trims_cover_only_trimmed_array_sectors(
            level in prop_oneof![Just((Level::Raid0, 2)), Just((Level::Raid0, 3)), Just((Level::Raid10, 4)), Just((Level::Raid1, 2))],
            stripe_units in 1u64..5,
            ranges in prop::collection::vec((0u64..4000, 1u64..600), 1..6),
        ) {
            let layout = duraflash::host::raid::Layout::new(level.0, level.1, stripe_units * 4096, 1 << 20, 4096).unwrap();
            let ranges: Vec<(Lba, u64)> = ranges
                .into_iter()
                .map(|(s, n)| {
                    let s = s % layout.sectors();
                    (Lba(s), n.min(layout.sectors() - s))
                })
                .collect();
            let inside = |x: u64| ranges.iter().any(|&(s, n)| x >= s.0 && x < s.0 + n);
            let mut covered = 0;
            for (m, parts) in layout.member_ranges(&ranges).iter().enumerate() {
                for &(s, n) in parts {
                    for x in s.0..s.0 + n {
                        let lba = layout.array_lba(m, x);
                        prop_assert!(lba.is_some_and(inside), "member {m} sector {x} -> {lba:?}");
                        covered += 1;
                    }
                }
            }
            let want: u64 = (0..4600).filter(|&x| inside(x)).count() as u64 * layout.copies as u64;
            prop_assert_eq!(covered, want, "every trimmed array sector reaches each copy once");
        }
    }
}
