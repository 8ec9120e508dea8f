//! RAID arrays: TRIM pass-through policies, the RAID-0 experiment's shape
//! and an oracle over the array's bytes.

use duraflash::host::raid::{Level, TrimPolicy};
use duraflash::workload::raid::{raid, RaidReport, RaidSpec};
use duraflash::{DriveConfig, Media};

fn run(level: Level, members: usize, driver: TrimPolicy) -> RaidReport {
    let mut member = DriveConfig::preset("samsung830-64g").unwrap().scaled(128 << 20).unwrap();
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
