//! Host workloads that drive a [`crate::Drive`] or an array: the shared
//! vocabulary of access patterns ([`access`]), jobs ([`job`]), fio job
//! files ([`fio`]) and the review passes built from jobs ([`review`]).

use thiserror::Error;

use crate::content::pattern::PatternError;
use crate::error::{ConfigError, DriveError};
use crate::host::raid::RaidError;
use crate::image::ImageError;
use crate::input::Shown;

pub mod access;
pub mod batch;
pub mod fio;
pub mod job;
pub mod pace;
pub mod review;
pub mod sequence;
pub mod sizes;

/// What a workload can fail with: a spec it cannot run (the CLI reports
/// these as usage errors where the user gave the spec), or a command the
/// drive or array refused.
#[derive(Debug, Error)]
pub enum WorkloadError {
    /// A job or access pattern that cannot run, with the reason.
    #[error("{0}")]
    BadSpec(String),
    /// Data settings that describe no content.
    #[error(transparent)]
    Pattern(#[from] PatternError),
    /// A config that describes no drive.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A drive refused a command.
    #[error(transparent)]
    Drive(#[from] DriveError),
    /// An array refused a command.
    #[error(transparent)]
    Raid(#[from] RaidError),
    /// Saving or restoring a drive image failed (`what` says which).
    #[error("{what}: {source}")]
    Image {
        what: String,
        #[source]
        source: ImageError,
    },
    /// fio's verify found blocks that do not hold what was written.
    #[error("verify: {failures} of {checked} blocks read back bad; the first: {first}")]
    Verify { failures: u64, checked: u64, first: String },
    /// What failed inside the named job.
    #[error("job '{}': {source}", Shown::new(job))]
    Job {
        job: String,
        #[source]
        source: Box<WorkloadError>,
    },
}

impl WorkloadError {
    /// `self`, as failed inside job `job`.
    pub fn in_job(self, job: &str) -> Self {
        WorkloadError::Job { job: job.to_string(), source: Box::new(self) }
    }
}
