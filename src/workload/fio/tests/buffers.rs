//! fio's buffer options: the pattern syntax, and what each combination
//! makes a job write, as fio 3.33 resolves it.

use super::{err, job};
use crate::content::buffers::Reuse;
use crate::content::pattern::DedupeMode;
use crate::workload::fio::values::parse_pattern;

fn pattern(s: &str) -> Vec<u8> {
    parse_pattern(s).unwrap_or_else(|e| panic!("{s}: {e}")).bytes().to_vec()
}

#[test]
fn patterns_read_as_fio_reads_them() {
    // lib/pattern.c's own examples.
    assert_eq!(pattern("\"abcd\""), b"abcd");
    assert_eq!(pattern("-1024"), [0x00, 0xfc, 0xff, 0xff]);
    assert_eq!(pattern("66"), [0x42]);
    assert_eq!(pattern("0xFF0X1"), [0xff, 0x01]);
    assert_eq!(pattern("\"123\"0xFFeeCC"), [0x31, 0x32, 0x33, 0xff, 0xee, 0xcc]);
    assert_eq!(pattern("0xdeadbeef"), [0xde, 0xad, 0xbe, 0xef]);
    assert_eq!(pattern("0xabc"), [0x0a, 0xbc]);
    assert_eq!(pattern("-100xab"), [0xf6, 0xff, 0xff, 0xff, 0xab]);
    assert_eq!(pattern("0"), [0]);
    assert_eq!(pattern(&format!("0x{}", "fe".repeat(512))).len(), 512);
    for bad in ["\"open", "'file'", "%o", "abc", "", "0x", "4294967296", &format!("0x{}", "fe".repeat(513))] {
        assert!(parse_pattern(bad).is_err(), "{bad}");
    }
}

#[test]
fn fio_resolves_what_writes_carry() {
    let data = |text: &str| job(text).data(1 << 20).unwrap();
    // fio's default: random buffers kept a queue slot each, every write stamped.
    let d = data("[j]\nrw=write\niodepth=4\n");
    assert_eq!((d.compress_pct, d.reuse), (0, Reuse::Kept { buffers: 4, scramble: true }));
    assert_eq!(data("[j]\nrw=write\nscramble_buffers=0\n").reuse, Reuse::Kept { buffers: 1, scramble: false });
    assert_eq!(data("[j]\nrw=write\nrefill_buffers\n").reuse, Reuse::Refilled { buffers: 1 });
    // A pattern turns stamping off, and refilling on only for a job that reads.
    let d = data("[j]\nrw=write\nbuffer_pattern=0xdeadbeef\n");
    assert_eq!((d.compress_pct, d.pattern.bytes(), d.reuse), (100, &[0xde, 0xad, 0xbe, 0xef][..], kept(false)));
    assert_eq!(data("[j]\nrw=randrw\nbuffer_pattern=1\n").reuse, Reuse::Refilled { buffers: 1 });
    // ... as the job is set so far: before rw, fio's default rw=read reads.
    assert_eq!(data("[j]\nbuffer_pattern=1\nrw=write\n").reuse, Reuse::Refilled { buffers: 1 });
    assert_eq!(data("[j]\nrw=write\nbuffer_pattern=1\nrw=randrw\n").reuse, kept(false));
    assert_eq!(data("[j]\nrw=write\nbuffer_pattern=1\nscramble_buffers=1\n").reuse, kept(true));
    // zero_buffers given stops stamping unless scramble_buffers is given too.
    assert_eq!(data("[j]\nrw=write\nzero_buffers\n").reuse, kept(false));
    assert_eq!(data("[j]\nrw=write\nzero_buffers\nscramble_buffers=1\n").reuse, kept(true));
    let d = data("[j]\nrw=write\nzero_buffers\n");
    assert!(d.compress_pct == 100 && d.pattern.is_zeros());
    // 100 % compressible is zero buffers, never stamped; with a dedupe
    // share fio fills them at random (its percentage is then 0).
    let d = data("[j]\nrw=write\nbuffer_compress_percentage=100\n");
    assert_eq!((d.compress_pct, d.reuse), (100, kept(false)));
    let d = data("[j]\nrw=write\nbuffer_compress_percentage=100\ndedupe_percentage=50\n");
    assert_eq!((d.compress_pct, d.dedupe_pct, d.reuse), (0, 50, Reuse::Refilled { buffers: 1 }));
    // Giving a percentage, even 0, stops stamping.
    assert_eq!(data("[j]\nrw=write\nbuffer_compress_percentage=0\n").reuse, kept(false));
    // A pattern fills the compressible share.
    let d = data("[j]\nrw=write\nbuffer_compress_percentage=50\nbuffer_pattern=\"ab\"\n");
    assert_eq!((d.compress_pct, d.pattern.bytes(), d.reuse), (50, &b"ab"[..], Reuse::Refilled { buffers: 1 }));
}

fn kept(scramble: bool) -> Reuse {
    Reuse::Kept { buffers: 1, scramble }
}

#[test]
fn the_dedupe_working_set_is_a_share_of_the_region() {
    let j = job("[j]\nrw=write\ndedupe_percentage=50\ndedupe_mode=working_set\ndedupe_working_set_percentage=10\n");
    assert_eq!(j.data(40 << 20).unwrap().dedupe_mode, DedupeMode::WorkingSet { units: 1024 });
    let j = job("[j]\nrw=write\ndedupe_percentage=50\ndedupe_mode=working_set\n");
    assert_eq!(j.data(40 << 20).unwrap().dedupe_mode, DedupeMode::WorkingSet { units: 512 }, "5 % by default");
    let j = job("[j]\nrw=write\ndedupe_percentage=50\n");
    assert_eq!(j.data(40 << 20).unwrap().dedupe_mode, DedupeMode::Repeat);
    let j = job("[j]\nrw=write\ndedupe_percentage=50\ndedupe_mode=working_set\ndedupe_working_set_percentage=0\n");
    let e = j.data(40 << 20).unwrap_err().to_string();
    assert!(e.contains("dedupe_working_set_percentage=0"), "{e}");
    let e = err("[j]\ndedupe_mode=some\n").to_string();
    assert!(e.contains("line 2") && e.contains("repeat or working_set"), "{e}");
    let e = err("[j]\nbuffer_pattern=%o\n").to_string();
    assert!(e.contains("buffer_pattern") && e.contains("%o"), "{e}");
}

#[test]
fn a_synchronous_engine_keeps_one_command_in_flight_as_in_fio() {
    let file = crate::workload::fio::parse(
        "[a]\nioengine=psync\niodepth=32\n[b]\nioengine=libaio\niodepth=32\n[c]\niodepth=8\n",
    )
    .unwrap();
    let depths: Vec<u32> = file.jobs.iter().map(|j| j.iodepth).collect();
    assert_eq!(depths, [1, 32, 8], "psync capped, libaio and the model's own engine queue");
    let psync = file.warnings.iter().find(|w| w.value == "psync").expect("a warning for psync");
    assert!(psync.to_string().contains("one command in flight"), "{psync}");
    assert!(file.warnings.iter().any(|w| w.value == "libaio" && w.to_string().contains("ignored")));
}
