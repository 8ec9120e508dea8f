//! duraflash: a model of a SandForce-style SSD controller.
//!
//! Every 4 KiB unit the host writes is compressed (lz4) and fingerprinted
//! (blake3); identical units are stored once and reference-counted; stored
//! chunks are packed into NAND pages; garbage collection, over-provisioning
//! and TRIM decide how much NAND is written per host byte.
//!
//! ```
//! use duraflash::{Drive, DriveConfig, Lba};
//!
//! let config = DriveConfig::preset("sf2281-240g")?.scaled(256 << 20)?;
//! let mut drive = Drive::new(config)?;
//! drive.write(Lba(0), &vec![7u8; 8192])?;
//! drive.write(Lba(16), &vec![7u8; 4096])?; // same content: deduplicated
//! assert_eq!(drive.read(Lba(16), 8)?, vec![7u8; 4096]);
//! drive.trim(&[(Lba(0), 16)])?;
//! assert_eq!(drive.read(Lba(0), 8)?, vec![0u8; 4096]);
//! let stats = drive.stats();
//! assert_eq!(stats.new_chunks, 1);
//! drive.check_invariants().map_err(|e| e.to_string())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! A write-amplification study: a drive from a preset (or
//! [`DriveConfig::from_toml`]), a workload run on it
//! ([`workload::job::run_job`], or [`lab::wa::run`] for the whole
//! fill-precondition-measure study), stats read at any point, and a state
//! cloned so two futures can be compared. `examples/wa_sweep.rs` sweeps OP
//! this way; `duraflash sweep` runs whole grids.
//!
//! ```
//! use duraflash::workload::access::{Distribution, Rw};
//! use duraflash::content::pattern::DataSpec;
//! use duraflash::workload::job::{fill_spec, run_job, JobSpec, Limit};
//! use duraflash::{Drive, DriveConfig, Media};
//!
//! // 16-page blocks: at 64 MiB the preset's 2 MiB blocks would step the OP by 100 %.
//! let mut config = DriveConfig::preset("sf2281-240g")?.scaled(64 << 20)?.with_pages_per_block(16)?.with_op(0.28)?;
//! config.media = Media::MetadataOnly; // keep mappings and sizes, not bytes
//! let capacity = config.logical_bytes;
//! let mut drive = Drive::new(config)?;
//! let data = DataSpec::compressible(50)?; // fio's buffer_compress_percentage=50
//! run_job(&mut drive, &fill_spec(capacity, 128 << 10, 32, data, 1), &mut |_| {})?;
//! let filled = drive.stats();
//!
//! let random = JobSpec {
//!     name: "4k-randwrite".into(),
//!     rw: Rw::RandWrite,
//!     bs: 4096,
//!     sizes: Default::default(),
//!     iodepth: 32,
//!     offset: 0,
//!     length: capacity,
//!     limit: Limit::Bytes(2 * capacity),
//!     rwmixread: 0,
//!     distribution: Distribution::Random,
//!     data,
//!     seed: 2,
//! };
//! let before = drive.clone(); // the filled state, kept for later
//! let r = run_job(&mut drive, &random, &mut |_| {})?;
//! let after = drive.stats();
//! let waf = (after.nand_bytes_programmed - filled.nand_bytes_programmed) as f64
//!     / (after.host_write_bytes - filled.host_write_bytes) as f64;
//! assert!(waf < 1.0, "half-size chunks: less NAND than host bytes ({waf})");
//! assert!(r.write.iops > 0.0);
//! assert_eq!(before.stats(), filled, "the clone kept the filled state");
//! drive.check_invariants()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod config;
pub mod content;
pub mod datapath;
pub mod device;
pub mod error;
pub mod firmware;
pub mod ftl;
pub mod host;
pub mod huge_pages;
pub mod image;
pub mod input;
pub mod lab;
pub mod nand;
pub mod nbd;
pub mod profile;
pub mod timing;
pub mod trace;
pub mod units;
pub mod workload;

pub use config::{DriveConfig, GcPolicy, Media};
pub use device::{Drive, Stats};
pub use error::{ConfigError, DriveError};
pub use units::{ByteSize, Lba, Lpn};
