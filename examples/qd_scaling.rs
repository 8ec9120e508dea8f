//! 4 KiB random-read IOPS against queue depth (1 to 64) on the X25-M G2,
//! SF-2281 and Samsung 830 presets, through the library: each drive scaled
//! to a capacity (1 GiB by default; dies, channels and timing are the
//! preset's), filled once with incompressible data, then read at each
//! depth. Simulated time, so the numbers are the same on any machine.
//!
//! ```sh
//! cargo run --release --example qd_scaling -- [CAPACITY_MIB]
//! ```

use std::error::Error;

use duraflash::content::pattern::DataSpec;
use duraflash::workload::access::{Distribution, Rw};
use duraflash::workload::job::{fill_spec, run_job, JobSpec, Limit};
use duraflash::{Drive, DriveConfig, Media};

const DEPTHS: [u32; 7] = [1, 2, 4, 8, 16, 32, 64];

fn main() -> Result<(), Box<dyn Error>> {
    let capacity_mib: u64 = std::env::args().nth(1).map(|s| s.parse()).transpose()?.unwrap_or(1024);
    let presets = ["intel-x25m-g2-160g", "sf2281-240g", "samsung830-64g"];
    print!("{:<20}", "QD");
    for qd in DEPTHS {
        print!("{qd:>9}");
    }
    println!();
    for preset in presets {
        let mut cfg = DriveConfig::preset(preset)?.scaled(capacity_mib << 20)?;
        cfg.media = Media::MetadataOnly;
        let capacity = cfg.logical_bytes;
        let mut drive = Drive::new(cfg)?;
        run_job(&mut drive, &fill_spec(capacity, 128 << 10, 32, DataSpec::incompressible(), 1), &mut |_| {})?;
        print!("{preset:<20}");
        for qd in DEPTHS {
            let spec = JobSpec {
                name: format!("randread-qd{qd}"),
                rw: Rw::RandRead,
                bs: 4096,
                sizes: Default::default(),
                iodepth: qd,
                offset: 0,
                length: capacity,
                limit: Limit::Ops(20_000),
                rwmixread: 0,
                distribution: Distribution::Random,
                data: DataSpec::incompressible(),
                seed: 5,
            };
            let mut d = drive.clone();
            print!("{:>9.0}", run_job(&mut d, &spec, &mut |_| {})?.read.iops);
        }
        println!();
    }
    Ok(())
}
