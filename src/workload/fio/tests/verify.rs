//! fio's `verify` options, resolved as fio 3.33 resolves them.

use super::{err, job};
use crate::content::verify::Checksum;
use crate::workload::fio::parse;

#[test]
fn verify_pattern_alone_verifies_a_header_and_the_pattern_and_verify_wins_whatever_the_order() {
    let alone = job("[j]\nrw=write\nverify_pattern=0xab\n");
    assert_eq!(alone.verify.checksum, Some(Checksum::Pattern));
    assert_eq!(alone.verify.pattern.map(|p| p.bytes().to_vec()), Some(vec![0xab]));
    let before = job("[j]\nrw=write\nverify=crc32c\nverify_pattern=0xab\n");
    let after = job("[j]\nrw=write\nverify_pattern=0xab\nverify=md5\n");
    assert_eq!((before.verify.checksum, after.verify.checksum), (Some(Checksum::Crc32c), Some(Checksum::Md5)));
    assert_eq!(job("[j]\nrw=write\nverify=pattern\nverify_pattern=1\n").verify.checksum, Some(Checksum::PatternOnly));
    assert_eq!(job("[j]\nrw=write\nverify=md5\nverify=0\n").verify.spec(), None, "verify=0 turns it off");
    assert_eq!(job("[j]\nrw=write\nverify=crc32c-intel\n").verify.checksum, Some(Checksum::Crc32c));
    let backlog = job("[j]\nrw=write\nverify=md5\nverify_backlog=1k\nverify_backlog_batch=64\n").verify.spec().unwrap();
    assert_eq!((backlog.backlog, backlog.batch), (1024, 64));
}

#[test]
fn the_interval_is_cut_to_the_sizes_as_fio_cuts_it() {
    let interval = |text: &str| job(&format!("[j]\nverify=md5\n{text}")).verify.interval;
    assert_eq!(interval("rw=write\nbs=8k\n"), 8192, "the write size by default");
    assert_eq!(interval("rw=write\nbs=8k\nverify_interval=512\n"), 512);
    assert_eq!(interval("rw=write\nbs=8k\nverify_interval=16k\n"), 8192, "no more than the write size");
    assert_eq!(interval("rw=write\nbsrange=4k-16k\n"), 4096, "the smallest write of several");
    assert_eq!(interval("rw=randrw\nbs=8k,16k\nverify_interval=12k\n"), 8192, "a job that reads: its smallest read");
    assert_eq!(interval("rw=write\nbsrange=4k-12k\nverify_interval=3k\n"), 4096, "not a divisor: the sizes' gcd");
}

#[test]
fn a_verifying_job_refills_its_buffers_unless_told_and_is_numbered_in_the_plan() {
    assert!(job("[j]\nrw=write\nverify=md5\n").refill_buffers);
    assert!(!job("[j]\nrw=write\nverify=md5\nrefill_buffers=0\n").refill_buffers);
    assert!(!job("[j]\nrw=write\n").refill_buffers);
    let file = parse("[a]\nrw=write\nsize=1m\nverify=md5\nnumjobs=2\n[b]\nrw=write\nsize=1m\nverify=crc7\n").unwrap();
    let plan = file.plan(64 << 20, 1).unwrap();
    let threads: Vec<u16> = plan[0].members.iter().map(|m| m.spec.data.verify.unwrap().thread).collect();
    assert_eq!(threads, [1, 2, 3], "fio numbers jobs from 1, clones after their job");
}

#[test]
fn a_time_based_writer_never_reads_back_and_says_so() {
    let file = parse("[j]\nrw=write\nverify=md5\ntime_based\nruntime=1\n").unwrap();
    let w = file.warnings.iter().find(|w| w.key == "verify").expect("a warning");
    assert!(w.to_string().contains("verification read phase will never start"), "{w}");
    assert!(parse("[j]\nrw=randrw\nverify=md5\ntime_based\nruntime=1\n").unwrap().warnings.is_empty());
    assert!(parse("[j]\nrw=write\nverify=md5\ntime_based\nruntime=1\nverify_backlog=8\n").unwrap().warnings.is_empty());
    let clones = parse("[j]\nrw=write\nverify=md5\nnumjobs=2\n").unwrap();
    assert!(clones.warnings.iter().any(|w| w.to_string().contains("multiple writers may overwrite blocks")));
}

#[test]
fn verify_values_out_of_fio_s_range_are_refused() {
    for (text, what) in [
        ("verify=sha512", "not implemented"),
        ("verify=md6", "unknown verify method"),
        ("verify_interval=79", "at least 80"),
        ("verify_offset=39", "at least 40"),
        ("verify_pattern=%o", "verify_pattern"),
        ("do_verify", "do_verify"),
        ("verify=meta\nverify_offset=4090", "verify_offset 4090"),
    ] {
        let e = err(&format!("[j]\nrw=write\n{text}\n")).to_string();
        assert!(e.contains(what), "{text}: {e}");
    }
}
