//! A filesystem's free-space view of the LBA space, and the wiper that
//! TRIMs it (Indilinx Wiper, Intel SSD Optimizer: seed notes, section 2).
//!
//! Owns which 4 KiB clusters hold files and the files' extents; it knows
//! nothing of the drive. Deleting a file only frees its clusters here: the
//! drive hears nothing unless the wiper (or a TRIM-aware OS) tells it.

use crate::host::{BlockDevice, HostQueue, DSM_ENTRIES_PER_COMMAND};
use crate::units::{Lba, SECTOR_BYTES};

/// Bytes of one cluster (the allocation unit).
pub const CLUSTER_BYTES: u64 = 4096;

/// A run of clusters: `start..start + len`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClusterRun {
    /// First cluster.
    pub start: u64,
    /// Clusters (at least 1).
    pub len: u64,
}

/// Files as extents over a bitmap. Invariant: a cluster is marked used
/// exactly when one live file's extent covers it.
#[derive(Clone, Debug)]
pub struct FileSystem {
    used: Vec<bool>,
    files: Vec<Option<Vec<ClusterRun>>>,
    /// Where next-fit allocation resumes.
    cursor: u64,
    free: u64,
}

/// A file's number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId(pub usize);

impl FileSystem {
    /// An empty filesystem over `bytes` of LBA space.
    pub fn new(bytes: u64) -> Self {
        let clusters = bytes / CLUSTER_BYTES;
        FileSystem { used: vec![false; clusters as usize], files: Vec::new(), cursor: 0, free: clusters }
    }

    /// Free clusters.
    pub fn free_clusters(&self) -> u64 {
        self.free
    }

    /// Clusters in all.
    pub fn clusters(&self) -> u64 {
        self.used.len() as u64
    }

    /// Live files.
    pub fn live_files(&self) -> Vec<FileId> {
        (0..self.files.len()).filter(|&i| self.files[i].is_some()).map(FileId).collect()
    }

    /// The extents of `file` (empty if deleted).
    pub fn extents(&self, file: FileId) -> &[ClusterRun] {
        self.files.get(file.0).and_then(|f| f.as_deref()).unwrap_or(&[])
    }

    /// Allocates `clusters` next-fit from the cursor (fragmenting over
    /// free runs); None, changing nothing, when they do not fit.
    pub fn create(&mut self, clusters: u64) -> Option<FileId> {
        self.create_near(clusters, self.cursor)
    }

    /// Allocates `clusters` from the first free cluster at or after
    /// `hint` (wrapping), as a filesystem places a small file near its
    /// directory; the cursor moves past it.
    pub fn create_near(&mut self, clusters: u64, hint: u64) -> Option<FileId> {
        if clusters == 0 || clusters > self.free {
            return None;
        }
        let n = self.used.len() as u64;
        let (mut left, mut at, mut extents) = (clusters, hint % n, Vec::<ClusterRun>::new());
        while left > 0 {
            if !self.used[at as usize] {
                self.used[at as usize] = true;
                match extents.last_mut() {
                    Some(e) if e.start + e.len == at => e.len += 1,
                    _ => extents.push(ClusterRun { start: at, len: 1 }),
                }
                left -= 1;
            }
            at = (at + 1) % n;
        }
        self.cursor = at;
        self.free -= clusters;
        self.files.push(Some(extents));
        Some(FileId(self.files.len() - 1))
    }

    /// Deletes `file`, freeing its clusters (no TRIM).
    pub fn delete(&mut self, file: FileId) {
        if let Some(extents) = self.files.get_mut(file.0).and_then(Option::take) {
            for e in extents {
                self.used[e.start as usize..(e.start + e.len) as usize].iter_mut().for_each(|u| *u = false);
                self.free += e.len;
            }
        }
    }

    /// The free runs, in order.
    pub fn free_extents(&self) -> Vec<ClusterRun> {
        let mut out: Vec<ClusterRun> = Vec::new();
        for (i, &u) in self.used.iter().enumerate() {
            if !u {
                match out.last_mut() {
                    Some(e) if e.start + e.len == i as u64 => e.len += 1,
                    _ => out.push(ClusterRun { start: i as u64, len: 1 }),
                }
            }
        }
        out
    }
}

/// The wiper: TRIMs every free extent of `fs` on `dev`, 64 ranges to a
/// DSM command at queue depth 1. Returns the units unmapped.
pub fn wipe<D: BlockDevice>(fs: &FileSystem, dev: &mut D) -> Result<u64, D::Error> {
    let per = CLUSTER_BYTES / SECTOR_BYTES;
    let max = crate::firmware::DSM_MAX_SECTORS;
    let mut ranges = Vec::new();
    for e in fs.free_extents() {
        let (mut s, end) = (e.start * per, (e.start + e.len) * per);
        while s < end {
            let n = (end - s).min(max);
            ranges.push((Lba(s), n));
            s += n;
        }
    }
    let mut queue = HostQueue::new(1, dev.now());
    let mut unmapped = 0;
    for command in ranges.chunks(DSM_ENTRIES_PER_COMMAND) {
        unmapped += dev.trim_on(command, &mut queue)?;
    }
    Ok(unmapped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deleting_frees_exactly_the_files_clusters() {
        let mut fs = FileSystem::new(64 * CLUSTER_BYTES);
        let a = fs.create(10).unwrap();
        let b = fs.create(20).unwrap();
        assert_eq!(fs.free_clusters(), 34);
        fs.delete(a);
        assert_eq!(fs.free_extents(), vec![ClusterRun { start: 0, len: 10 }, ClusterRun { start: 30, len: 34 }]);
        // Next-fit: the next file starts at the cursor, wraps, and fragments.
        let c = fs.create(40).unwrap();
        assert_eq!(fs.extents(c), &[ClusterRun { start: 30, len: 34 }, ClusterRun { start: 0, len: 6 }]);
        assert!(fs.create(5).is_none(), "only 4 clusters left");
        assert_eq!(fs.extents(b), &[ClusterRun { start: 10, len: 20 }]);
    }

    #[test]
    fn the_wiper_unmaps_free_space_only() {
        let cfg = crate::DriveConfig::preset("intel-x25m-g2-160g").unwrap().scaled(64 << 20).unwrap();
        let mut d = crate::Drive::new(cfg).unwrap();
        let cap = d.capacity_sectors() * SECTOR_BYTES;
        let mut fs = FileSystem::new(cap);
        d.write(Lba(0), &vec![1u8; cap as usize]).unwrap();
        let keep = fs.create(100).unwrap();
        let gone = fs.create(50).unwrap();
        fs.delete(gone);
        let unmapped = wipe(&fs, &mut d).unwrap();
        assert_eq!(unmapped, fs.clusters() - 100);
        for e in fs.extents(keep) {
            assert!((e.start..e.start + e.len).all(|u| d.is_mapped(crate::Lpn(u))));
        }
        assert!(!d.is_mapped(crate::Lpn(120)));
    }
}
