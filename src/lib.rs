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
#![forbid(unsafe_code)]

pub mod analytic;
pub mod config;
pub mod content;
pub mod controller;
pub mod corpus;
pub mod datapath;
pub mod error;
pub mod fio;
pub mod firmware;
pub mod ftl;
pub mod host;
pub mod nand;
pub mod nbd;
pub mod pattern;
pub mod plot;
pub mod timing;
pub mod trace;
pub mod units;
pub mod workload;

pub use config::{DriveConfig, GcPolicy, Media};
pub use controller::{Drive, Stats};
pub use error::{ConfigError, DriveError};
pub use units::{ByteSize, Lba, Lpn};
