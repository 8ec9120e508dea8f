//! Resume or create: the drive a config describes, or the one saved in an
//! image file when that file exists (then the config must describe the same
//! drive, or the image is refused naming the fields that differ).
//!
//! Owns that decision and its errors; the image format itself is
//! [`crate::image`]'s, and saving is [`Drive::save`].

use std::path::{Path, PathBuf};

use thiserror::Error;

use crate::config::DriveConfig;
use crate::device::Drive;
use crate::error::ConfigError;
use crate::image::{config_diff, ImageError, ImageLock};

/// Why no drive could be resumed, created or saved.
#[derive(Debug, Error)]
pub enum ResumeError {
    /// The image exists but cannot be read.
    #[error("{}: {source}", path.display())]
    Load {
        path: PathBuf,
        #[source]
        source: ImageError,
    },
    /// The image holds another drive than the config describes
    /// (`source` is [`ImageError::ConfigMismatch`] naming the fields).
    #[error("{}: {source}", path.display())]
    Mismatch {
        path: PathBuf,
        /// The config fields that differ.
        fields: Vec<String>,
        #[source]
        source: ImageError,
    },
    /// Another process has a drive open on the image
    /// ([`ImageError::Locked`] names it).
    #[error("{source}")]
    Locked {
        #[source]
        source: ImageError,
    },
    /// No image: the config describes no drive.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The drive cannot be saved to the image.
    #[error("{}: {source}", path.display())]
    Save {
        path: PathBuf,
        #[source]
        source: ImageError,
    },
}

impl ResumeError {
    /// Whether what was asked for is wrong (a config that describes no
    /// drive, or not the image's), rather than the run failing.
    pub fn is_usage(&self) -> bool {
        matches!(self, ResumeError::Mismatch { .. } | ResumeError::Config(_))
    }
}

/// The drive `config` describes, or the one saved in `image` when that
/// file exists and holds anything (an empty file, such as `mktemp` makes,
/// holds no drive yet); then `config` must describe the same drive.
pub fn open_or_create(config: DriveConfig, image: Option<&Path>) -> Result<Drive, ResumeError> {
    match image {
        Some(path) if path.metadata().is_ok_and(|m| !(m.is_file() && m.len() == 0)) => {
            let drive = Drive::load(path).map_err(|source| ResumeError::Load { path: path.into(), source })?;
            let fields = config_diff(drive.config(), &config);
            if !fields.is_empty() {
                let source = ImageError::ConfigMismatch(format!(
                    "the drive flags differ in {} (give the flags the image was created with)",
                    fields.join(", ")
                ));
                return Err(ResumeError::Mismatch { path: path.into(), fields, source });
            }
            Ok(drive)
        }
        _ => Ok(Drive::new(config)?),
    }
}

/// [`open_or_create`], holding the image's [`ImageLock`] from before it is
/// read until the returned lock is dropped: the way to open a drive that
/// will be saved back, so two processes never save over each other.
pub fn open_locked(config: DriveConfig, image: Option<&Path>) -> Result<(Drive, Option<ImageLock>), ResumeError> {
    let acquire = |path: &Path| {
        // A file of something else, as reading it would say (with its path).
        ImageLock::acquire(path).map_err(|source| match source {
            ImageError::NotAnImage { .. } => ResumeError::Load { path: path.into(), source },
            source => ResumeError::Locked { source },
        })
    };
    let lock = image.map(acquire).transpose()?;
    Ok((open_or_create(config, image)?, lock))
}

/// Saves `drive` to `image`, if given.
pub fn save(drive: &Drive, image: Option<&Path>) -> Result<(), ResumeError> {
    match image {
        Some(path) => drive.save(path).map_err(|source| ResumeError::Save { path: path.into(), source }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creates_resumes_and_refuses_another_drive() {
        let path = std::env::temp_dir().join(format!("duraflash-resume-test-{}.img", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(16 << 20).unwrap();
        let drive = open_or_create(cfg.clone(), Some(&path)).unwrap();
        assert!(!path.exists(), "created, not saved");
        save(&drive, Some(&path)).unwrap();
        assert_eq!(open_or_create(cfg.clone(), Some(&path)).unwrap().config(), &cfg);
        let mut other = cfg.clone();
        other.seed += 1;
        let e = open_or_create(other, Some(&path)).unwrap_err();
        assert!(e.is_usage() && matches!(&e, ResumeError::Mismatch { fields, .. } if fields == &["seed"]), "{e}");
        assert!(e.to_string().contains("image holds a different drive: the drive flags differ in seed"), "{e}");
        std::fs::write(&path, b"garbage").unwrap();
        assert!(!open_or_create(cfg.clone(), Some(&path)).unwrap_err().is_usage());
        std::fs::write(&path, b"").unwrap();
        assert_eq!(
            open_or_create(cfg.clone(), Some(&path)).unwrap().config(),
            &cfg,
            "an empty file holds no drive yet"
        );
        let _ = std::fs::remove_file(&path);
    }
}
