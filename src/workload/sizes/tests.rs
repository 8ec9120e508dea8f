//! Block sizes and where commands land.

use super::*;

fn rng() -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(5)
}

/// Writes of `choice`, reads and TRIMs of 4 KiB.
fn writes(choice: SizeChoice) -> BlockSizes {
    BlockSizes::per_direction([SizeChoice::Fixed(4096), choice, SizeChoice::Fixed(4096)])
}

#[test]
fn a_range_gives_multiples_of_its_low_end_evenly_and_fits_the_room() {
    let range = SizeChoice::Range { lo: 4096, hi: 16384 };
    let mut counts = [0u32; 5];
    let mut r = rng();
    for _ in 0..40_000 {
        counts[(range.draw(1 << 20, &mut r) / 4096) as usize] += 1;
    }
    assert_eq!(counts[0], 0);
    for c in &counts[1..] {
        assert!((9_400..10_600).contains(c), "4, 8, 12 and 16 KiB a quarter each: {counts:?}");
    }
    // With 9 KiB of room: 4 and 8 KiB only, in their own proportions.
    let mut counts = [0u32; 5];
    for _ in 0..20_000 {
        counts[(range.draw(9216, &mut r) / 4096) as usize] += 1;
    }
    assert_eq!((counts[3], counts[4]), (0, 0), "{counts:?}");
    assert!((9_400..10_600).contains(&counts[1]), "{counts:?}");
    // fio caps a size past the top at the top: 4k-10k gives 4, 8 or 10 KiB.
    let odd = SizeChoice::Range { lo: 4096, hi: 10240 };
    let seen: std::collections::BTreeSet<u64> = (0..1000).map(|_| odd.draw(1 << 20, &mut r)).collect();
    assert_eq!(seen.into_iter().collect::<Vec<_>>(), [4096, 8192, 10240]);
    assert_eq!(odd.sizes(), [4096, 8192, 10240]);
}

#[test]
fn a_split_gives_its_sizes_in_their_shares_of_those_that_fit() {
    let split = SizeChoice::Split(vec![(4096, 10), (32768, 40), (65536, 50)]);
    let mut r = rng();
    let mut n = [0u32; 3];
    for _ in 0..50_000 {
        match split.draw(1 << 20, &mut r) {
            4096 => n[0] += 1,
            32768 => n[1] += 1,
            _ => n[2] += 1,
        }
    }
    assert!((4_600..5_400).contains(&n[0]) && (19_300..20_700).contains(&n[1]), "{n:?}");
    // 40 KiB of room: 4 KiB a fifth and 32 KiB four fifths of the time.
    let small = (0..10_000).filter(|_| split.draw(40_960, &mut r) == 4096).count();
    assert!((1_800..2_200).contains(&small), "{small}");
    assert_eq!((split.min(), split.max()), (4096, 65536));
}

#[test]
fn sizes_are_checked_against_the_slot_and_the_region() {
    let w = [CommandKind::Write];
    assert!(writes(SizeChoice::Split(vec![(4096, 50), (8192, 50)])).check(4096, 1 << 20, &w).is_ok());
    assert!(writes(SizeChoice::Split(vec![(4000, 50), (8192, 50)])).check(512, 1 << 20, &w).is_err());
    assert!(writes(SizeChoice::Fixed(2048)).check(4096, 1 << 20, &w).is_err(), "below the slot");
    assert!(writes(SizeChoice::Fixed(1 << 21)).check(4096, 1 << 20, &w).is_err(), "past the region");
    assert!(writes(SizeChoice::Fixed(1 << 21)).check(4096, 1 << 20, &[CommandKind::Read]).is_ok(), "unused");
    assert_eq!(BlockSizes::default().largest(4096, &w), 4096);
    assert_eq!(writes(SizeChoice::Range { lo: 4096, hi: 16384 }).largest(4096, &w), 16384);
}

#[test]
fn sequential_commands_follow_each_other_and_end_at_the_region() {
    let split = writes(SizeChoice::Split(vec![(4096, 50), (12288, 50)]));
    let mut p = Placer::new(Access::Sequential, 4096, 1 << 20, &split, 1, 2).unwrap();
    let (mut end, mut total) = (0, 0);
    while total < 1 << 20 {
        let (at, bytes) = p.next(CommandKind::Write, false).unwrap();
        assert_eq!(at, end, "each starts where the last ended");
        assert!(at + bytes <= 1 << 20);
        (end, total) = (at + bytes, total + bytes);
    }
    assert_eq!(total, 1 << 20, "one pass is the region exactly");
    assert_eq!(p.next(CommandKind::Write, false).unwrap().0, 0, "and the next starts over");
}

#[test]
fn the_random_map_covers_every_slot_once_a_pass_with_several_sizes() {
    let split = writes(SizeChoice::Split(vec![(4096, 40), (16384, 40), (65536, 20)]));
    let slots = 1000u64;
    let mut p = Placer::new(Access::Shuffled, 4096, slots * 4096, &split, 3, 4).unwrap();
    for pass in 0..3 {
        let mut covered = vec![0u8; slots as usize];
        let mut bytes = 0;
        while bytes < slots * 4096 {
            let (at, n) = p.next(CommandKind::Write, true).unwrap();
            for s in at / 4096..(at + n).div_ceil(4096) {
                covered[s as usize] += 1;
            }
            bytes += n;
        }
        assert!(covered.iter().all(|&c| c == 1), "pass {pass}: every slot once");
    }
    assert_eq!(Placer::map_bytes(Access::Shuffled, 4096, slots * 4096, &split), 128);
    assert_eq!(Placer::map_bytes(Access::Uniform, 4096, slots * 4096, &split), 0);
    assert_eq!(Placer::map_bytes(Access::Shuffled, 4096, slots * 4096, &BlockSizes::default()), 0);
}

#[test]
fn each_direction_lands_on_its_own_boundary_under_the_map() {
    // fio's randrw bs=4k,64k: reads on 4 KiB, writes on 64 KiB.
    let sizes = writes(SizeChoice::Fixed(65536));
    let kinds = [CommandKind::Read, CommandKind::Write];
    assert_eq!(sizes.slot(4096, &kinds), 4096);
    let slots = 4096u64;
    let mut p = Placer::new(Access::Shuffled, 4096, slots * 4096, &sizes, 3, 4).unwrap();
    let mut covered = vec![0u8; slots as usize];
    let mut first_pass = 0;
    for i in 0.. {
        let kind = kinds[i % 2];
        let (at, n) = p.next(kind, true).unwrap();
        assert_eq!(at % if kind == CommandKind::Write { 65536 } else { 4096 }, 0, "{kind:?} at {at}");
        let range = (at / 4096) as usize..((at + n) / 4096) as usize;
        if covered[range.clone()].iter().any(|&c| c > 0) {
            break;
        }
        covered[range].fill(1);
        first_pass += n;
    }
    // A pass ends when no 64 KiB block is wholly free for a write.
    let free_blocks = covered.chunks(16).filter(|b| b.iter().all(|&c| c == 0)).count();
    assert_eq!(free_blocks, 0);
    assert!(first_pass > slots * 4096 / 2, "most of the region once before a slot comes twice: {first_pass}");
}

#[test]
fn a_boundary_no_size_divides_cuts_smaller_slots() {
    // 4 KiB reads beside 6 KiB writes: slots of 2 KiB, writes on 6 KiB.
    let sizes = writes(SizeChoice::Fixed(6144));
    let kinds = [CommandKind::Read, CommandKind::Write];
    assert_eq!(sizes.slot(4096, &kinds), 2048);
    assert_eq!(sizes.slot(4096, &[CommandKind::Read]), 4096, "only the directions issued count");
    let length = 1 << 20;
    let mut p = Placer::new(Access::Shuffled, 2048, length, &sizes, 3, 4).unwrap();
    for _ in 0..2000 {
        let (at, n) = p.next(CommandKind::Write, true).unwrap();
        assert!(at % 6144 == 0 && at + n <= length, "{at}+{n}");
        let (at, _) = p.next(CommandKind::Read, true).unwrap();
        assert_eq!(at % 4096, 0);
    }
}

#[test]
fn blockalign_moves_offsets_without_a_map() {
    let length = 1 << 20;
    let wide = writes(SizeChoice::Fixed(4096)).aligned([None, Some(65536), None]);
    assert_eq!(wide.slot(4096, &[CommandKind::Write]), 4096);
    let mut p = Placer::new(Access::Uniform, 4096, length, &wide, 3, 4).unwrap();
    let starts: std::collections::BTreeSet<u64> =
        (0..2000).map(|_| p.next(CommandKind::Write, true).unwrap().0).collect();
    assert!(starts.iter().all(|at| at % 65536 == 0));
    assert_eq!(starts.len(), 16, "every 64 KiB boundary of 1 MiB is reached: {starts:?}");
    let narrow = writes(SizeChoice::Fixed(4096)).aligned([None, Some(512), None]);
    let slot = narrow.slot(4096, &[CommandKind::Write]);
    assert_eq!(slot, 512);
    let mut p = Placer::new(Access::Uniform, slot, length, &narrow, 3, 4).unwrap();
    let starts: Vec<u64> = (0..2000).map(|_| p.next(CommandKind::Write, true).unwrap().0).collect();
    assert!(starts.iter().all(|&at| at % 512 == 0 && at + 4096 <= length));
    assert!(starts.iter().any(|at| at % 4096 != 0), "offsets between 4 KiB boundaries too");
    let w = [CommandKind::Write];
    assert!(writes(SizeChoice::Fixed(4096)).aligned([None, Some(1000), None]).check(4096, length, &w).is_err());
    assert!(writes(SizeChoice::Fixed(4096)).aligned([None, Some(2 << 20), None]).check(4096, length, &w).is_err());
}

#[test]
fn the_next_free_slot_is_found_word_by_word() {
    let mut map = vec![0u64; 3];
    assert_eq!(next_free(&map, 5, 150), Some(5));
    map[0] = u64::MAX;
    map[1] = 0b1011;
    assert_eq!(next_free(&map, 3, 150), Some(66));
    assert_eq!(next_free(&map, 67, 150), Some(68));
    assert_eq!(next_free(&map, 3, 65), None, "past the last slot");
    map[1] = u64::MAX;
    map[2] = u64::MAX;
    assert_eq!(next_free(&map, 0, 191), None);
    assert_eq!(next_free(&map, 500, 600), None, "beyond the map");
}

#[test]
fn a_command_may_end_in_a_part_slot_at_the_regions_end() {
    // 64 whole slots and half of one: 6 KiB from the last whole slot
    // reaches into the half.
    let split = writes(SizeChoice::Split(vec![(4096, 50), (6144, 50)]));
    let length = 64 * 4096 + 2048;
    let mut p = Placer::new(Access::Shuffled, 4096, length, &split, 3, 4).unwrap();
    for _ in 0..10_000 {
        let (at, n) = p.next(CommandKind::Write, true).unwrap();
        assert!(at + n <= length);
    }
    assert_eq!(Placer::map_bytes(Access::Shuffled, 4096, length, &split), 16);
}

#[test]
fn without_a_map_random_commands_start_where_the_least_size_fits() {
    let sizes = writes(SizeChoice::Fixed(65536));
    let mut p = Placer::new(Access::Uniform, 4096, 1 << 20, &sizes, 3, 4).unwrap();
    for _ in 0..10_000 {
        let (at, n) = p.next(CommandKind::Write, true).unwrap();
        assert!(at % 4096 == 0 && at + n <= 1 << 20 && n == 65536);
        let (at, n) = p.next(CommandKind::Read, true).unwrap();
        assert!(at % 4096 == 0 && at + n <= 1 << 20 && n == 4096);
    }
}
