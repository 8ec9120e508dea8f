//! No command beats the host link: a read's data crosses it in order and
//! the command completes once the last byte is out, so no job, at any
//! transfer size or queue depth, moves more bytes per second than the
//! link carries, whatever gaps earlier work left on it.

use duraflash::config::PRESETS;
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
