use super::*;

fn verify(checksum: Checksum) -> Verify {
    Verify {
        checksum,
        interval: 4096,
        offset: 0,
        pattern: None,
        read_back: true,
        only: false,
        fatal: false,
        backlog: 0,
        batch: 0,
        thread: 1,
    }
}

/// A write of `len` bytes at byte `at`, as a verifying job writes it.
fn written(v: Verify, at: u64, len: usize, numberio: u64) -> Vec<u8> {
    let mut w = Verified::new(DataSpec::incompressible(), v, 7, 4096).unwrap();
    w.writes = numberio;
    let mut buf = vec![0; len];
    w.fill(Lba(at / SECTOR_BYTES), &mut buf);
    buf
}

const ALL: [Checksum; 13] = [
    Checksum::Md5,
    Checksum::Crc64,
    Checksum::Crc32,
    Checksum::Crc32c,
    Checksum::Crc16,
    Checksum::Crc7,
    Checksum::Sha1,
    Checksum::Sha3_224,
    Checksum::Sha3_256,
    Checksum::Sha3_384,
    Checksum::Sha3_512,
    Checksum::Xxhash,
    Checksum::Meta,
];

#[test]
fn what_is_stamped_checks_and_a_flipped_bit_anywhere_does_not() {
    for c in ALL {
        for (interval, offset) in [(4096, 0), (1024, 0), (4096, 512)] {
            let v = Verify { interval, offset, ..verify(c) };
            let buf = written(v, 8192, 8192, 3);
            let expect = Expect { numberio: Some(3) };
            assert_eq!(v.check(&buf, 8192, expect), Ok(()), "{c:?} {interval} {offset}");
            let header = offset as usize;
            // Flip a bit of the header, of the checksum, and of the data of the last interval.
            let data = if c == Checksum::Meta { Vec::new() } else { vec![8191, header + HEADER_BYTES] };
            for at in [header + 17, header + 3].into_iter().chain(data) {
                let mut bad = buf.clone();
                bad[at] ^= 0x10;
                assert!(v.check(&bad, 8192, expect).is_err(), "{c:?} {interval} {offset}: byte {at} flipped");
            }
        }
    }
}

#[test]
fn a_block_read_from_elsewhere_or_an_older_write_fails_naming_what() {
    let v = verify(Checksum::Crc32c);
    let buf = written(v, 4096, 4096, 5);
    let moved = v.check(&buf, 0, Expect::default()).unwrap_err();
    assert!(moved.0.starts_with("verify: bad header offset 4096, wanted 0 at offset 0"), "{moved}");
    let older = v.check(&buf, 4096, Expect { numberio: Some(6) }).unwrap_err();
    assert!(older.0.starts_with("verify: bad header numberio 5, wanted 6"), "{older}");
    let zeros = v.check(&[0; 4096], 4096, Expect::default()).unwrap_err();
    assert!(zeros.0.starts_with("verify: bad magic header 0, wanted acca"), "{zeros}");
    let mut data = buf.clone();
    data[100] ^= 1;
    let sum = v.check(&data, 4096, Expect::default()).unwrap_err();
    assert!(sum.0.starts_with("crc32c: verify failed: expected "), "{sum}");
}

#[test]
fn a_pattern_fills_what_the_headers_leave_and_is_checked() {
    let p = Pattern::new(&[0xde, 0xad, 0xbe, 0xef, 0x01]).unwrap();
    for c in [Checksum::Pattern, Checksum::PatternOnly, Checksum::Meta, Checksum::Crc32c] {
        let v = Verify { pattern: Some(p), interval: 512, ..verify(c) };
        let buf = written(v, 0, 4096, 0);
        assert_eq!(v.check(&buf, 0, Expect::default()), Ok(()), "{c:?}");
        let h = c.header_bytes();
        assert_eq!(
            buf[512 + h],
            [0xde, 0xad, 0xbe, 0xef, 0x01][(512 + h) % 5],
            "{c:?}: the pattern runs from the block's start"
        );
        let mut bad = buf.clone();
        bad[1000] ^= 0xff;
        assert!(v.check(&bad, 0, Expect::default()).is_err(), "{c:?}");
    }
    // Without a header, the block is all pattern.
    let v = Verify { pattern: Some(p), ..verify(Checksum::PatternOnly) };
    assert!(written(v, 0, 4096, 0).iter().enumerate().all(|(i, &b)| b == p.bytes()[i % 5]));
}

#[test]
fn null_checks_nothing_and_writes_unique_random_blocks_otherwise() {
    assert_eq!(verify(Checksum::Null).check(&[0; 4096], 0, Expect::default()), Ok(()));
    let mut w = Verified::new(DataSpec::incompressible(), verify(Checksum::Md5), 7, 4096).unwrap();
    let (mut a, mut b) = (vec![0; 4096], vec![0; 4096]);
    w.fill(Lba(0), &mut a);
    w.fill(Lba(0), &mut b);
    assert_ne!(a[HEADER_BYTES + 16..], b[HEADER_BYTES + 16..], "each write's data is drawn afresh");
    let ratio = lz4_flex::block::compress(&a).len() as f64 / a.len() as f64;
    assert!(ratio > 0.99, "random data behind the header: {ratio}");
}

#[test]
fn fio_s_crcs_are_the_catalogue_ones_it_names() {
    // The check values of "123456789" for the algorithms fio's tables implement.
    let check = b"123456789";
    assert_eq!(CRC32C.checksum(check), !0xe306_9283);
    assert_eq!(CRC32.checksum(check), CRC32_FIO.check);
    assert_eq!(CRC64.checksum(check), crc::CRC_64_REDIS.check);
    assert_eq!(CRC16.checksum(check), 0xbb3d);
    assert_eq!(CRC7.checksum(check), 0x75);
}

#[test]
fn options_that_leave_no_room_for_data_are_refused() {
    let v = Verify { interval: 512, ..verify(Checksum::Sha3_512) };
    assert_eq!(v.check_sizes(4096), Ok(()));
    let tiny = Verify { interval: 64, ..verify(Checksum::Sha3_512) };
    assert!(tiny.check_sizes(4096).unwrap_err().contains("Blocksize too small"));
    let late = Verify { offset: 4090, ..verify(Checksum::Crc32c) };
    assert!(late.check_sizes(4096).unwrap_err().starts_with("verify_offset 4090"));
}

#[test]
fn a_block_too_small_for_its_header_is_a_failure_not_a_panic() {
    let v = Verify { interval: 4096, offset: 4000, ..verify(Checksum::Sha3_512) };
    let e = v.check(&[0; 512], 0, Expect::default()).unwrap_err();
    assert!(e.0.contains("cannot hold verify=sha3-512's 104-byte header at offset 4000"), "{e}");
    let mut small = [7u8; 512];
    v.stamp(&mut small, 0, 0, 0, 0);
    assert_eq!(small, [7u8; 512], "nothing stamped where no header fits");
}

#[test]
fn writes_smaller_than_the_largest_command_are_each_one_region() {
    // A job whose reads are 64 KiB writes 4 KiB at 50 %: each write has its
    // random half, not one region spread over sixteen writes.
    let spec = DataSpec::compressible(50).unwrap();
    let mut w = Verified::new(spec, verify(Checksum::Crc32c), 7, 64 << 10).unwrap();
    let lbas: Vec<Lba> = (0..16).map(|i| Lba(i * 8)).collect();
    let mut buf = vec![0; 16 << 12];
    w.fill_batch(&lbas, &mut buf);
    for (i, write) in buf.chunks(4096).enumerate() {
        let ratio = lz4_flex::block::compress(write).len() as f64 / 4096.0;
        assert!((0.45..0.6).contains(&ratio), "write {i}: {ratio}");
    }
}
