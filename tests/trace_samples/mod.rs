//! Generates the sample traces under `tests/data/` (the public traces are
//! not redistributable): deterministic, small, one per format, shaped like
//! the real files. `DURAFLASH_WRITE_SAMPLES=1 cargo test --release --test
//! trace_replay committed_samples` rewrites them; the test otherwise checks
//! the committed files still equal this output.

use std::fmt::Write;

/// Sample files: name and content (the `.gz` one is `trace-msr.csv` gzipped).
pub const NAMES: [&str; 5] =
    ["trace-msr.csv", "trace-blkparse.txt", "trace-fiu-mail.txt", "trace-fiu-homes.txt", "trace-spc.csv"];

/// The drive the samples are sized for (their writes stay within it, but
/// for the MSR records aimed beyond it on purpose).
pub const DRIVE_BYTES: u64 = 64 << 20;

/// MSR records placed beyond [`DRIVE_BYTES`].
pub const MSR_BEYOND: u64 = 5;

/// xorshift64*: small and deterministic.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// An MD5-shaped hex string for content number `k`.
pub fn hash_hex(k: u64) -> String {
    let mut r = Rng::new(k.wrapping_add(0x5eed));
    format!("{:016x}{:016x}", r.next(), r.next())
}

/// The content of sample `name`.
pub fn generate(name: &str) -> String {
    match name {
        "trace-msr.csv" => msr(),
        "trace-blkparse.txt" => blkparse(),
        "trace-fiu-mail.txt" => fiu(8, 400, 150, 1),
        "trace-fiu-homes.txt" => fiu(1, 200, 60, 2),
        "trace-spc.csv" => spc(),
        other => panic!("no sample named {other}"),
    }
}

/// 400 requests on disk 1 of host `hm`: 4 KiB-aligned mostly, some
/// 512-byte-aligned small ones, [`MSR_BEYOND`] beyond the drive.
fn msr() -> String {
    let mut r = Rng::new(1);
    let mut t = 128_166_372_003_061_629u64;
    let mut out = String::new();
    for i in 0..400u64 {
        t += r.below(20_000);
        let kind = if r.below(100) < 60 { "Write" } else { "Read" };
        let (offset, size) = if i % 67 == 66 {
            ((10u64 << 30) + r.below(1 << 20) * 4096, 4096) // far beyond the drive
        } else if r.below(10) == 0 {
            (r.below(48 << 11) * 512, (1 + r.below(7)) * 512)
        } else {
            (r.below(48 << 8) * 4096, (1 + r.below(16)) * 4096)
        };
        writeln!(out, "{t},hm,1,{kind},{offset},{size},{}", 200 + r.below(5000)).unwrap();
    }
    out
}

/// 150 requests traced through the block layer (Q, G, I, D, C events),
/// writes, reads, discards and flushes, then blkparse's summary.
fn blkparse() -> String {
    let mut r = Rng::new(2);
    let mut out = String::new();
    let mut ns = 0u64;
    let mut seq = 0u64;
    let secs = |ns: u64| format!("{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
    for i in 0..150u64 {
        let cpu = r.below(4);
        let pid = 600 + r.below(50);
        let (rwbs, sector, count) = match r.below(10) {
            0 => ("DS", r.below(24) * 2048, 2048),
            1..=5 => ("WS", r.below(48 << 8) * 8, (1 + r.below(16)) * 8),
            _ => ("R", r.below(48 << 8) * 8, (1 + r.below(8)) * 8),
        };
        for action in ["Q", "G", "I", "D"] {
            seq += 1;
            ns += 1_000 + r.below(5_000);
            writeln!(
                out,
                "{:>3},{:<3}{cpu:>2} {seq:>8} {:>14} {pid:>5}  {action} {rwbs:>3} {sector} + {count} [fio]",
                8,
                0,
                secs(ns)
            )
            .unwrap();
        }
        seq += 1;
        ns += 50_000 + r.below(200_000);
        writeln!(
            out,
            "{:>3},{:<3}{cpu:>2} {seq:>8} {:>14} {:>5}  C {rwbs:>3} {sector} + {count} [0]",
            8,
            0,
            secs(ns),
            0
        )
        .unwrap();
        if i % 40 == 39 {
            seq += 1;
            writeln!(out, "{:>3},{:<3}{cpu:>2} {seq:>8} {:>14} {pid:>5}  D FWS [jbd2/sda1-8]", 8, 0, secs(ns)).unwrap();
            writeln!(out, "{:>3},{:<3}{cpu:>2} {:>8} {:>14} {:>5}  m   N cfq{pid} dispatched", 8, 0, 0, secs(ns), 0)
                .unwrap();
        }
    }
    out += "CPU0 (8,0):\n Reads Queued:          42,      168KiB\t Writes Queued:          77,     4180KiB\n";
    out += "Total (8,0):\n Reads Queued:         150,      600KiB\t Writes Queued:         300,    16720KiB\n";
    out
}

/// `records` FIU lines with `sectors`-sector blocks: writes drawn from
/// `distinct` contents (popular ones more often), a fifth reads.
fn fiu(sectors: u64, records: u64, distinct: u64, seed: u64) -> String {
    let mut r = Rng::new(10 + seed);
    let mut ts = 89_966_527_019_504u64;
    let mut out = String::new();
    let blocks = (32 << 20) / (sectors * 512);
    for _ in 0..records {
        ts += r.below(3_000_000);
        let op = if r.below(5) == 0 { "R" } else { "W" };
        let content = r.below(distinct).min(r.below(distinct));
        let lba = r.below(blocks) * sectors;
        writeln!(out, "{ts} {} nfsd {lba} {sectors} {op} 8 0 {}", 4000 + r.below(400), hash_hex(content)).unwrap();
    }
    out
}

/// 300 requests over ASU 0 and 1 with 512-byte-multiple sizes.
fn spc() -> String {
    let mut r = Rng::new(4);
    let mut out = String::new();
    let mut us = 0u64;
    for _ in 0..300u64 {
        us += r.below(4000);
        let op = if r.below(100) < 70 { "w" } else { "r" };
        let size = (1 + r.below(32)) * 512;
        writeln!(out, "{},{},{size},{op},{}.{:06}", r.below(2), r.below(90_000), us / 1_000_000, us % 1_000_000)
            .unwrap();
    }
    out
}
