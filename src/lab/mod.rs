//! The studies: each runs workloads on drives and measures what the
//! reviews and the literature measured (write amplification, the
//! SandForce torture protocol, RAID TRIM, manual TRIM, real corpora,
//! sweeps, what simulating costs, soak), the analytic models they are
//! checked against, and the report and plots that show them.

use thiserror::Error;

use crate::content::corpus::CorpusError;
use crate::content::pattern::PatternError;
use crate::error::{ConfigError, DriveError};
use crate::host::raid::RaidError;
use crate::image::ImageError;
use crate::workload::WorkloadError;

pub mod analytic;
pub mod bench;
pub mod corpora;
pub mod optimizer;
pub mod plot;
pub mod raid;
pub mod report;
pub mod resilience;
pub mod soak;
pub mod sweep;
pub mod torture;
pub mod wa;

/// Most drive-writes one phase of a study may ask for (`--precondition`,
/// `--measure`, `--drive-writes`): a thousand overwrites of the whole drive
/// age it far past steady state (the studies take 1 to 3). At the 0.9 M
/// NAND writes a second the full-scale WA run measured (docs/cli.md), a
/// thousand at WAF 4 take about 20 minutes on the 1 GiB default and three
/// days on the whole 240 GB drive; more is refused, not run for ever.
pub const MAX_DRIVE_WRITES: f64 = 1000.0;

/// Checks `value` drive-writes given as `flag`: a finite number, positive
/// (or zero where `zero_ok`), at most [`MAX_DRIVE_WRITES`].
pub fn check_drive_writes(flag: &str, value: f64, zero_ok: bool) -> Result<(), StudyError> {
    let least = if zero_ok { "non-negative" } else { "positive" };
    if !(value.is_finite() && (value > 0.0 || zero_ok && value == 0.0)) {
        return Err(StudyError::BadSpec(format!("{flag} {value:?} must be a {least} number of drive-writes")));
    }
    if value > MAX_DRIVE_WRITES {
        return Err(StudyError::BadSpec(format!(
            "{flag} {value:?} is more than {MAX_DRIVE_WRITES} drive-writes, the most a run takes (it would not finish)"
        )));
    }
    Ok(())
}

/// What a study can fail with: a spec it cannot run (the CLI reports these
/// as usage errors where the user gave the spec), a workload or command
/// that failed, a file it could not read or write, or a drive that broke
/// a rule the study checks.
#[derive(Debug, Error)]
pub enum StudyError {
    /// A spec or setting the study cannot run with, with the reason.
    #[error("{0}")]
    BadSpec(String),
    /// A workload failed.
    #[error(transparent)]
    Workload(#[from] WorkloadError),
    /// Data settings that describe no content.
    #[error(transparent)]
    Pattern(#[from] PatternError),
    /// A config that describes no drive.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A drive refused a command.
    #[error(transparent)]
    Drive(#[from] DriveError),
    /// An array refused a command or could not be built.
    #[error(transparent)]
    Raid(#[from] RaidError),
    /// A drive image could not be written or read.
    #[error(transparent)]
    Image(#[from] ImageError),
    /// A corpus could not be loaded.
    #[error(transparent)]
    Corpus(#[from] CorpusError),
    /// A chart could not be drawn or written.
    #[error(transparent)]
    Plot(#[from] plot::PlotError),
    /// A file the study reads or writes.
    #[error("{}: {source}", path.display())]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A result could not be encoded or decoded as JSON.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The drive broke a rule the study checks (wrong data, a broken
    /// invariant), or a step did not happen.
    #[error("{0}")]
    Violation(String),
    /// The drive's state broke an invariant.
    #[error("invariant: {0}")]
    Invariant(#[from] crate::device::InvariantError),
    /// What failed inside the named step.
    #[error("{what}: {source}")]
    In {
        what: String,
        #[source]
        source: Box<StudyError>,
    },
}

impl StudyError {
    /// `self`, as failed inside `what`.
    pub fn within(self, what: impl Into<String>) -> Self {
        StudyError::In { what: what.into(), source: Box::new(self) }
    }
}
