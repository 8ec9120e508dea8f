//! Where an image lives: the file its path names through any symbolic
//! links, and the lock a process holds on it while a drive is open there.

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use super::{io_err, refuse_foreign, refuse_special, ImageError};

/// Most symbolic links [`resolve`] follows (Linux's own limit).
const MAX_LINKS: usize = 40;

/// The file an image path names, with every symbolic link resolved: the
/// canonical path of a file that exists, else the canonical directory and
/// the name (a link to a file not created yet is followed to it). The lock
/// and every save use it, so an alias of an image shares its lock and a
/// save through a link replaces the file, not the link.
pub fn resolve(path: &Path) -> Result<PathBuf, ImageError> {
    let mut at = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match std::fs::canonicalize(&at) {
            Ok(real) => return Ok(real),
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(io_err("resolve", &at, e)),
            Err(_) => {}
        }
        let dir = match at.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        match std::fs::read_link(&at) {
            Ok(target) => at = dir.join(target),
            Err(_) => {
                let name = at.file_name().ok_or_else(|| ImageError::NotRegular { path: path.to_path_buf() })?;
                let dir = std::fs::canonicalize(&dir).map_err(|e| io_err("resolve", &dir, e))?;
                return Ok(dir.join(name));
            }
        }
    }
    Err(io_err("resolve", path, io::Error::other("too many levels of symbolic links")))
}

/// `path` with `suffix` added to its file name.
pub(super) fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    path.with_file_name(name)
}

/// The images this process holds, by resolved path, each with the open
/// file whose advisory lock a hard link shares (none before the first
/// save of a new image). A save moves the hold to the file it puts in
/// place ([`follow`]).
static HELD: Mutex<Vec<(PathBuf, Option<File>)>> = Mutex::new(Vec::new());

fn held() -> std::sync::MutexGuard<'static, Vec<(PathBuf, Option<File>)>> {
    HELD.lock().unwrap_or_else(PoisonError::into_inner)
}

/// An exclusive hold on an image while a drive is open on it: an advisory
/// lock on `PATH.lock` beside the file the image path [`resolve`]s to, and
/// one on the image file itself, which a hard link to it shares. The image
/// is replaced by a rename at every save, and the save takes the lock of
/// the file it puts in place before it appears under the name. The lock
/// file names the holder's pid. The kernel releases both when the holder
/// drops them or exits, however it exits; the small lock file stays, so
/// two openers always contend for the same file.
#[derive(Debug)]
pub struct ImageLock {
    _path: File,
    real: PathBuf,
}

impl ImageLock {
    /// Takes the lock of `image`, or fails at once with
    /// [`ImageError::Locked`] naming the holder. A directory or other
    /// non-file, or a file that is no image, is refused before any lock
    /// file is made beside it.
    pub fn acquire(image: &Path) -> Result<Self, ImageError> {
        refuse_special(image)?;
        refuse_foreign(image)?;
        let real = resolve(image)?;
        let path = beside(&real, ".lock");
        refuse_special(&path)?;
        let mut lock = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io_err("open", &path, e))?;
        if !take(&lock, &path)? {
            let mut holder = String::new();
            let _ = lock.read_to_string(&mut holder);
            let pid = holder.trim().parse().ok();
            return Err(ImageError::Locked { path: image.to_path_buf(), pid });
        }
        let file = match File::open(&real) {
            Ok(file) if take(&file, &real)? => Some(file),
            Ok(file) => return Err(ImageError::Locked { path: image.to_path_buf(), pid: flock_holder(&file) }),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_err("open", &real, e)),
        };
        lock.set_len(0).map_err(|e| io_err("write", &path, e))?;
        lock.write_all(format!("{}\n", std::process::id()).as_bytes()).map_err(|e| io_err("write", &path, e))?;
        held().push((real.clone(), file));
        Ok(ImageLock { _path: lock, real })
    }
}

impl Drop for ImageLock {
    fn drop(&mut self) {
        held().retain(|(p, _)| p != &self.real);
    }
}

/// A save is about to put `file` in place at `real` (resolved) by
/// `rename`: when this process holds that image, `file` is locked first
/// and the hold moves to it once the rename succeeds.
pub(super) fn follow(
    real: &Path,
    file: &File,
    rename: impl FnOnce() -> Result<(), ImageError>,
) -> Result<(), ImageError> {
    let mut held = held();
    let Some(at) = held.iter().position(|(p, _)| p == real) else {
        drop(held);
        return rename();
    };
    let kept = file.try_clone().map_err(|e| io_err("open", real, e))?;
    if !take(&kept, real)? {
        return Err(ImageError::Locked { path: real.to_path_buf(), pid: flock_holder(&kept) });
    }
    rename()?;
    held[at].1 = Some(kept);
    Ok(())
}

/// The pid holding a lock on `file`, from Linux's `/proc/locks` (lines
/// such as `1: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF`, the device
/// numbers in hex): how a holder found through another name is named.
fn flock_holder(file: &File) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let m = file.metadata().ok()?;
    let id = format!("{:02x}:{:02x}:{}", libc::major(m.dev()), libc::minor(m.dev()), m.ino());
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [_, "FLOCK", _, _, pid, at, ..] if *at == id => pid.parse().ok(),
            _ => None,
        }
    })
}

/// Takes an exclusive advisory lock on `file` (at `path`): whether it was free.
fn take(file: &File, path: &Path) -> Result<bool, ImageError> {
    match file.try_lock() {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) => Err(io_err("lock", path, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::tests::dir;

    #[test]
    fn an_image_has_one_holder_at_a_time() {
        let d = dir("lock");
        let path = d.join("drive.img");
        let first = ImageLock::acquire(&path).expect("free");
        let err = ImageLock::acquire(&path).expect_err("held");
        assert!(matches!(err, ImageError::Locked { pid: Some(p), .. } if p == std::process::id()), "{err}");
        assert!(err.to_string().contains(&format!("process {}", std::process::id())), "{err}");
        drop(first);
        ImageLock::acquire(&path).expect("released on drop");
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn an_alias_through_a_symbolic_link_shares_the_lock() {
        let d = dir("alias");
        let real = d.join("drive.img");
        std::fs::write(&real, super::super::MAGIC).expect("an image's first bytes");
        std::os::unix::fs::symlink("drive.img", d.join("alias.img")).expect("link to the file");
        std::os::unix::fs::symlink(&d, d.join("linked-dir")).expect("link to the directory");
        let _held = ImageLock::acquire(&real).expect("free");
        for alias in [d.join("alias.img"), d.join("linked-dir").join("drive.img"), d.join(".").join("drive.img")] {
            let err = ImageLock::acquire(&alias).expect_err("the same file, so held");
            assert!(matches!(&err, ImageError::Locked { path, .. } if path == &alias), "{err}");
        }
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn a_hard_link_shares_the_lock() {
        let d = dir("hardlink");
        let real = d.join("drive.img");
        std::fs::write(&real, super::super::MAGIC).expect("an image's first bytes");
        std::fs::hard_link(&real, d.join("other.img")).expect("a second name for the file");
        let held = ImageLock::acquire(&real).expect("free");
        let err = ImageLock::acquire(&d.join("other.img")).expect_err("the same file, so held");
        assert!(matches!(&err, ImageError::Locked { pid: Some(p), .. } if *p == std::process::id()), "{err}");
        assert!(err.to_string().contains("other.img"), "{err}");
        drop(held);
        let _other = ImageLock::acquire(&d.join("other.img")).expect("released on drop");
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn the_hold_follows_the_image_through_saves() {
        let d = dir("follow");
        let real = d.join("drive.img");
        let held = ImageLock::acquire(&real).expect("free, and no file yet");
        for save in ["first.img", "second.img"] {
            let mut w = crate::image::ImageWriter::create(&real).expect("create");
            w.section(*b"CONF", |_| Ok(())).expect("section");
            w.commit().expect("saved");
            // A name made for the saved file shares its lock.
            std::fs::hard_link(&real, d.join(save)).expect("a second name");
            let err = ImageLock::acquire(&d.join(save)).expect_err("the saved file is held");
            assert!(matches!(&err, ImageError::Locked { pid: Some(p), .. } if *p == std::process::id()), "{err}");
        }
        // The file the second save replaced is no longer held.
        drop(ImageLock::acquire(&d.join("first.img")).expect("the first save's file is free"));
        drop(held);
        drop(ImageLock::acquire(&d.join("second.img")).expect("released with the lock"));
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn a_new_image_resolves_through_its_directory_and_a_dangling_link() {
        let d = dir("resolve");
        let canonical = std::fs::canonicalize(&d).expect("canonical");
        std::os::unix::fs::symlink(&d, d.join("linked-dir")).expect("link to the directory");
        std::os::unix::fs::symlink("later.img", d.join("dangling.img")).expect("link to nothing yet");
        assert_eq!(resolve(&d.join("linked-dir").join("new.img")).expect("resolves"), canonical.join("new.img"));
        assert_eq!(resolve(&d.join("dangling.img")).expect("resolves"), canonical.join("later.img"));
        let err = resolve(&d.join("missing").join("new.img")).expect_err("no such directory");
        assert!(err.to_string().contains("missing"), "{err}");
        std::os::unix::fs::symlink("loop.img", d.join("loop.img")).expect("a link to itself");
        assert!(resolve(&d.join("loop.img")).is_err(), "a loop is an error, not a hang");
        std::fs::remove_dir_all(&d).ok();
    }

    #[test]
    fn a_directory_gets_no_lock_file_beside_it() {
        let d = dir("lockdir");
        let inner = d.join("inner");
        std::fs::create_dir(&inner).expect("dir");
        let err = ImageLock::acquire(&inner).expect_err("a directory is no image");
        assert!(matches!(err, ImageError::NotRegular { .. }), "{err}");
        assert!(!d.join("inner.lock").exists(), "no lock file made");
        std::fs::remove_dir_all(&d).ok();
    }
}
