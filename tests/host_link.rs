//! No command beats the host link: a read's data crosses it in order and
//! the command completes once the last byte is out, so no job, at any
//! transfer size or queue depth, moves more bytes per second than the
//! link carries, whatever gaps earlier work left on it. A write's data
//! streams the other way: its pages program while the rest of it still
//! crosses the link, so one large command keeps the dies as busy as many
//! small ones.

use duraflash::config::PRESETS;
use duraflash::content::pattern::DataSpec;
use duraflash::workload::access::{Distribution, Rw};
use duraflash::workload::job::{run_job, JobSpec, Limit};
use duraflash::workload::review::atto;
use duraflash::{Drive, DriveConfig, Media};

const MIB: u64 = 1 << 20;

/// ATTO (QD 4, highly compressible data, 512 B to 8 MiB) on each clean
/// preset: its data comes off the NAND faster than the link takes it, so
/// the link is the bound, and a short span leaves only a few commands per
/// size to share it.
#[test]
fn atto_never_reads_or_writes_faster_than_the_host_link() {
    for name in PRESETS {
        let mut cfg = DriveConfig::preset(name).unwrap().scaled(256 * MIB).unwrap();
        cfg.media = Media::Memory;
        let link = cfg.timing.host_link.bytes_per_sec() as f64 / 1e6;
        let drive = Drive::new(cfg).unwrap();
        for span in [16 * MIB, 32 * MIB] {
            for p in atto(&drive, span, 1, &mut |_| {}).unwrap() {
                println!(
                    "{name} span {span} size {}: read {:.1} write {:.1} link {link:.1} MB/s",
                    p.size, p.read_mbps, p.write_mbps
                );
                assert!(
                    p.read_mbps <= link,
                    "{name}, {} B reads over a {span} B span: {:.1} MB/s",
                    p.size,
                    p.read_mbps
                );
                assert!(
                    p.write_mbps <= link,
                    "{name}, {} B writes over a {span} B span: {:.1} MB/s",
                    p.size,
                    p.write_mbps
                );
            }
        }
    }
}

/// AS-SSD's sequential write (16 MiB commands at QD 1) and a queue of 32
/// commands of 128 KiB write a clean drive of incompressible data equally
/// fast: each page programs once its share of the command is through the
/// link and the engine. When a command crossed both whole before its
/// first program, the dies idled for the next command's transfer, and the
/// SF-2281's QD 1 write was two thirds of its QD 32 one.
#[test]
fn one_large_write_streams_as_fast_as_a_queue_of_small_ones() {
    for name in PRESETS {
        let mut cfg = DriveConfig::preset(name).unwrap().scaled(1 << 30).unwrap();
        cfg.media = Media::MetadataOnly;
        let drive = Drive::new(cfg).unwrap();
        let write = |bs: u64, qd: u32| {
            let spec = JobSpec {
                name: format!("write {bs} at QD {qd}"),
                rw: Rw::Write,
                bs,
                sizes: Default::default(),
                iodepth: qd,
                offset: 0,
                length: 256 * MIB,
                limit: Limit::Bytes(256 * MIB),
                rwmixread: 0,
                distribution: Distribution::Random,
                data: DataSpec::incompressible(),
                seed: 1,
            };
            run_job(&mut drive.clone(), &spec, &mut |_| {}).unwrap().write.bw_bytes / 1e6
        };
        let (large, small) = (write(16 * MIB, 1), write(128 << 10, 32));
        println!("{name}: 16 MiB at QD 1 {large:.1} MB/s, 128 KiB at QD 32 {small:.1} MB/s");
        assert!(large > 0.95 * small, "{name}: {large:.1} against {small:.1} MB/s");
    }
}
