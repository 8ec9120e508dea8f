//! The host operations the oracle draws (by proptest or from a seed), and
//! the content they write.

use proptest::prelude::*;
use rand::{Rng, RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Bytes of a sector.
pub(crate) const SECTOR: u64 = 512;

/// What a write carries.
#[derive(Clone, Debug)]
pub(crate) enum Content {
    /// Incompressible bytes from a seed.
    Random(u64),
    /// One byte repeated.
    Byte(u8),
    /// A short random pattern (1..=16 bytes) repeated.
    Pattern(u64, u8),
    Zeros,
    /// Each sector: 256 random bytes then zeros (about 2:1 compressible).
    HalfZero(u64),
}

/// A host command (or harness action). Raw numbers are reduced modulo the
/// drive's capacity when applied, so one strategy serves every shape.
#[derive(Clone, Debug)]
pub(crate) enum Op {
    Write {
        lba: u64,
        sectors: u64,
        aligned: bool,
        content: Content,
    },
    /// An earlier write again, at the same place with the same bytes.
    Replay(usize),
    /// An earlier write's bytes at another place with the same alignment.
    Duplicate {
        pick: usize,
        lba: u64,
    },
    /// Whole units copied from one place to another (dedup hits).
    CopyUnits {
        src: u64,
        dst: u64,
        units: u64,
    },
    /// Several requests close together (often overlapping) in one batch.
    Batch {
        base: u64,
        reqs: Vec<(u64, u64, bool, Content)>,
    },
    Trim(Vec<(u64, u64)>),
    Read {
        lba: u64,
        sectors: u64,
    },
    ReadAll,
    IdleGc,
    SecureErase,
    /// Replace the drive by a clone of itself.
    Clone,
    /// Save the drive to an image and carry on with the loaded copy.
    SaveLoad,
    Invalid(Bad),
}

/// Requests that must fail and change nothing.
#[derive(Clone, Debug)]
pub(crate) enum Bad {
    /// A write starting `back` sectors before the end, longer than that.
    WritePastEnd {
        back: u64,
        extra: u64,
    },
    /// A write whose length is not a positive multiple of 512.
    WriteMisaligned {
        lba: u64,
        len: usize,
    },
    /// A write at an LBA so large that start + length overflows.
    WriteOverflow,
    ReadZero {
        lba: u64,
    },
    ReadPastEnd {
        back: u64,
        extra: u64,
    },
    /// A TRIM with one valid range and one past the end.
    TrimPartlyOutOfRange {
        lba: u64,
        sectors: u64,
        extra: u64,
    },
    /// A batch whose last request is misaligned; the others are valid.
    BatchPartlyMisaligned {
        lba: u64,
        sectors: u64,
        bad_len: usize,
    },
}

fn content_strategy() -> impl Strategy<Value = Content> {
    prop_oneof![
        5 => any::<u64>().prop_map(Content::Random),
        2 => any::<u8>().prop_map(Content::Byte),
        2 => (any::<u64>(), 1u8..=16).prop_map(|(s, p)| Content::Pattern(s, p)),
        1 => Just(Content::Zeros),
        2 => any::<u64>().prop_map(Content::HalfZero),
    ]
}

fn sectors_strategy() -> impl Strategy<Value = u64> {
    prop_oneof![8 => 1u64..=24, 1 => 25u64..=160]
}

fn misaligned_len() -> impl Strategy<Value = usize> {
    prop_oneof![Just(0usize), 1usize..512, (1usize..16, 1usize..512).prop_map(|(s, r)| s * 512 + r)]
}

fn bad_strategy() -> impl Strategy<Value = Bad> {
    prop_oneof![
        (0u64..16, 1u64..32).prop_map(|(back, extra)| Bad::WritePastEnd { back, extra }),
        (any::<u64>(), misaligned_len()).prop_map(|(lba, len)| Bad::WriteMisaligned { lba, len }),
        Just(Bad::WriteOverflow),
        any::<u64>().prop_map(|lba| Bad::ReadZero { lba }),
        (0u64..16, 1u64..32).prop_map(|(back, extra)| Bad::ReadPastEnd { back, extra }),
        (any::<u64>(), 1u64..64, 1u64..32).prop_map(|(lba, sectors, extra)| Bad::TrimPartlyOutOfRange {
            lba,
            sectors,
            extra
        }),
        (any::<u64>(), 1u64..32, misaligned_len()).prop_map(|(lba, sectors, bad_len)| Bad::BatchPartlyMisaligned {
            lba,
            sectors,
            bad_len
        }),
    ]
}

pub(crate) fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        30 => (any::<u64>(), sectors_strategy(), any::<bool>(), content_strategy())
            .prop_map(|(lba, sectors, aligned, content)| Op::Write { lba, sectors, aligned, content }),
        5 => any::<usize>().prop_map(Op::Replay),
        5 => (any::<usize>(), any::<u64>()).prop_map(|(pick, lba)| Op::Duplicate { pick, lba }),
        5 => (any::<u64>(), any::<u64>(), 1u64..=8).prop_map(|(src, dst, units)| Op::CopyUnits { src, dst, units }),
        8 => (
            any::<u64>(),
            prop::collection::vec((0u64..48, sectors_strategy(), any::<bool>(), content_strategy()), 2..6)
        )
            .prop_map(|(base, reqs)| Op::Batch { base, reqs }),
        8 => prop::collection::vec((any::<u64>(), prop_oneof![4 => 0u64..=40, 1 => 41u64..=400]), 1..4)
            .prop_map(Op::Trim),
        10 => (any::<u64>(), sectors_strategy()).prop_map(|(lba, sectors)| Op::Read { lba, sectors }),
        1 => Just(Op::ReadAll),
        3 => Just(Op::IdleGc),
        1 => Just(Op::SecureErase),
        1 => Just(Op::Clone),
        1 => Just(Op::SaveLoad),
        4 => bad_strategy().prop_map(Op::Invalid),
    ]
}

/// The same operation mix from a seeded generator, for the long runs.
pub(crate) fn random_op(rng: &mut ChaCha8Rng) -> Op {
    fn content(rng: &mut ChaCha8Rng) -> Content {
        match rng.random_range(0..12) {
            0..=4 => Content::Random(rng.random()),
            5..=6 => Content::Byte(rng.random()),
            7..=8 => Content::Pattern(rng.random(), rng.random_range(1..=16)),
            9 => Content::Zeros,
            _ => Content::HalfZero(rng.random()),
        }
    }
    fn sectors(rng: &mut ChaCha8Rng) -> u64 {
        if rng.random_ratio(1, 9) {
            rng.random_range(25..=160)
        } else {
            rng.random_range(1..=24)
        }
    }
    fn bad_len(rng: &mut ChaCha8Rng) -> usize {
        match rng.random_range(0..3) {
            0 => 0,
            1 => rng.random_range(1..512),
            _ => rng.random_range(1..16) * 512 + rng.random_range(1..512),
        }
    }
    // Secure erase is rarer here than in the short proptest sequences so
    // that long runs spend their time full.
    match rng.random_range(0..1000) {
        0..=339 => Op::Write { lba: rng.random(), sectors: sectors(rng), aligned: rng.random(), content: content(rng) },
        340..=399 => Op::Replay(rng.random_range(0..=usize::MAX)),
        400..=459 => Op::Duplicate { pick: rng.random_range(0..=usize::MAX), lba: rng.random() },
        460..=519 => Op::CopyUnits { src: rng.random(), dst: rng.random(), units: rng.random_range(1..=8) },
        520..=609 => {
            let n = rng.random_range(2..6);
            let reqs = (0..n).map(|_| (rng.random_range(0..48), sectors(rng), rng.random(), content(rng))).collect();
            Op::Batch { base: rng.random(), reqs }
        }
        610..=699 => {
            let n = rng.random_range(1..4);
            Op::Trim(
                (0..n)
                    .map(|_| {
                        (
                            rng.random(),
                            if rng.random_ratio(1, 5) { rng.random_range(41..=400) } else { rng.random_range(0..=40) },
                        )
                    })
                    .collect(),
            )
        }
        700..=849 => Op::Read { lba: rng.random(), sectors: sectors(rng) },
        850..=859 => Op::ReadAll,
        860..=899 => Op::IdleGc,
        900 => Op::SecureErase,
        901..=903 => Op::Clone,
        904..=905 => Op::SaveLoad,
        _ => Op::Invalid(match rng.random_range(0..7) {
            0 => Bad::WritePastEnd { back: rng.random_range(0..16), extra: rng.random_range(1..32) },
            1 => Bad::WriteMisaligned { lba: rng.random(), len: bad_len(rng) },
            2 => Bad::WriteOverflow,
            3 => Bad::ReadZero { lba: rng.random() },
            4 => Bad::ReadPastEnd { back: rng.random_range(0..16), extra: rng.random_range(1..32) },
            5 => Bad::TrimPartlyOutOfRange {
                lba: rng.random(),
                sectors: rng.random_range(1..64),
                extra: rng.random_range(1..32),
            },
            _ => Bad::BatchPartlyMisaligned {
                lba: rng.random(),
                sectors: rng.random_range(1..32),
                bad_len: bad_len(rng),
            },
        }),
    }
}

pub(crate) fn fill(content: &Content, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    match *content {
        Content::Random(seed) => ChaCha8Rng::seed_from_u64(seed).fill_bytes(&mut out),
        Content::Byte(b) => out.fill(b),
        Content::Pattern(seed, period) => {
            let mut pat = vec![0u8; usize::from(period.max(1))];
            ChaCha8Rng::seed_from_u64(seed).fill_bytes(&mut pat);
            for (i, b) in out.iter_mut().enumerate() {
                *b = pat[i % pat.len()];
            }
        }
        Content::Zeros => {}
        Content::HalfZero(seed) => {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            for sector in out.chunks_mut(SECTOR as usize) {
                let half = sector.len() / 2;
                rng.fill_bytes(&mut sector[..half]);
            }
        }
    }
    out
}
