//! Host RAID: an [`Array`] of member drives striped (RAID-0), mirrored
//! (RAID-1) or both (RAID-10), and the driver's TRIM pass-through policy.
//!
//! Owns the address layout and the splitting of commands; it does not own
//! any drive behaviour. A request becomes at most one contiguous command
//! per member, all issued when the array command is issued; it completes
//! when the slowest member's part does. Writes go to every copy; a read
//! goes to one copy, chosen by stripe row so that independent reads spread
//! over the mirrors.

use std::str::FromStr;

use serde::Serialize;
use thiserror::Error;

use crate::device::Drive;
use crate::error::DriveError;
use crate::host::{BlockDevice, HostQueue};
use crate::units::{Lba, SimTime, SECTOR_BYTES};

/// The stripe size when none is given: 128 KiB, as Intel RST's default.
pub const DEFAULT_STRIPE_BYTES: u64 = 128 << 10;

/// What the RAID layer can fail with.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum RaidError {
    /// A member count the level cannot use.
    #[error("--members {members}: RAID-{level} needs {need}")]
    Members { level: Level, members: usize, need: &'static str },
    /// A stripe that is not a positive multiple of the members' mapping unit.
    #[error("--stripe {stripe}: must be a positive multiple of the {unit}-byte mapping unit")]
    Stripe { stripe: u64, unit: u64 },
    /// Members that are too small for one stripe row.
    #[error("members of {member_bytes} bytes cannot hold one {stripe}-byte stripe")]
    TooSmall { member_bytes: u64, stripe: u64 },
    /// A level name that is not 0, 1 or 10.
    #[error("unknown RAID level '{0}' (valid: 0, 1, 10)")]
    UnknownLevel(String),
    /// A TRIM policy name that is not known.
    #[error("unknown driver '{0}' (valid: rst-10.6, rst-11.2, passthrough)")]
    UnknownPolicy(String),
    /// A request past the array's end or not whole sectors.
    #[error("array request: {0}")]
    Request(DriveError),
    /// A member refused its part of a command.
    #[error("member {member}: {source}")]
    Member {
        member: usize,
        #[source]
        source: DriveError,
    },
}

/// RAID level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Level {
    /// Striping, no redundancy.
    #[serde(rename = "0")]
    Raid0,
    /// Mirroring.
    #[serde(rename = "1")]
    Raid1,
    /// Striping over mirrored pairs.
    #[serde(rename = "10")]
    Raid10,
}

impl std::fmt::Display for Level {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Level::Raid0 => "0",
            Level::Raid1 => "1",
            Level::Raid10 => "10",
        })
    }
}

impl FromStr for Level {
    type Err = RaidError;
    fn from_str(s: &str) -> Result<Self, RaidError> {
        match s {
            "0" => Ok(Level::Raid0),
            "1" => Ok(Level::Raid1),
            "10" => Ok(Level::Raid10),
            other => Err(RaidError::UnknownLevel(other.into())),
        }
    }
}

/// Which array TRIMs the RAID driver passes to the members.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum TrimPolicy {
    /// Intel RST 10.6: RAID-1 only.
    #[serde(rename = "rst-10.6")]
    Rst10_6,
    /// Intel RST 11.2: RAID-0 and RAID-1, not RAID-10.
    #[serde(rename = "rst-11.2")]
    Rst11_2,
    /// Every level (Linux md, Windows dynamic disks).
    #[serde(rename = "passthrough")]
    Passthrough,
}

impl FromStr for TrimPolicy {
    type Err = RaidError;
    fn from_str(s: &str) -> Result<Self, RaidError> {
        match s {
            "rst-10.6" => Ok(TrimPolicy::Rst10_6),
            "rst-11.2" => Ok(TrimPolicy::Rst11_2),
            "passthrough" => Ok(TrimPolicy::Passthrough),
            other => Err(RaidError::UnknownPolicy(other.into())),
        }
    }
}

impl std::fmt::Display for TrimPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            TrimPolicy::Rst10_6 => "rst-10.6",
            TrimPolicy::Rst11_2 => "rst-11.2",
            TrimPolicy::Passthrough => "passthrough",
        })
    }
}

impl TrimPolicy {
    /// Whether TRIM reaches the members of a `level` array.
    pub fn passes(self, level: Level) -> bool {
        match self {
            TrimPolicy::Rst10_6 => level == Level::Raid1,
            TrimPolicy::Rst11_2 => level != Level::Raid10,
            TrimPolicy::Passthrough => true,
        }
    }
}

/// Where array sectors live. Members are grouped into `columns` of
/// `copies` mirrors; stripe `k` (of `stripe` sectors) lives in column
/// `k % columns` at row `k / columns` of every member of that column.
/// Invariant: `columns * copies` members; `rows >= 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Layout {
    /// The level.
    pub level: Level,
    /// Stripe size in sectors.
    pub stripe: u64,
    /// Data columns (members for RAID-0, 1 for RAID-1, pairs for RAID-10).
    pub columns: usize,
    /// Copies of each column.
    pub copies: usize,
    /// Stripe rows each member holds.
    pub rows: u64,
}

/// One member's part of an array range: `sectors` at member `lba`, which
/// hold array sectors `array_lba..` in order (one contiguous run).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Piece {
    column: usize,
    lba: u64,
    sectors: u64,
    /// Offset of the piece in the array request, in sectors.
    at: u64,
}

impl Layout {
    /// Checks the member count and stripe for `level` over members of
    /// `member_bytes` with a `unit_bytes` mapping unit.
    pub fn new(
        level: Level,
        members: usize,
        stripe_bytes: u64,
        member_bytes: u64,
        unit_bytes: u64,
    ) -> Result<Self, RaidError> {
        let (columns, copies) = match level {
            Level::Raid0 if members >= 2 => (members, 1),
            Level::Raid1 if members >= 2 => (1, members),
            Level::Raid10 if members >= 4 && members.is_multiple_of(2) => (members / 2, 2),
            _ => {
                let need = if level == Level::Raid10 { "an even number from 4" } else { "at least 2" };
                return Err(RaidError::Members { level, members, need });
            }
        };
        // Whole mapping units and whole sectors (a unit need not be whole sectors).
        if stripe_bytes == 0 || [unit_bytes.max(1), SECTOR_BYTES].iter().any(|&m| !stripe_bytes.is_multiple_of(m)) {
            return Err(RaidError::Stripe { stripe: stripe_bytes, unit: unit_bytes });
        }
        let rows = member_bytes / stripe_bytes;
        if rows == 0 {
            return Err(RaidError::TooSmall { member_bytes, stripe: stripe_bytes });
        }
        // The array's sectors must be countable (more members than any host has).
        if (columns as u64).checked_mul(member_bytes / SECTOR_BYTES).is_none() {
            return Err(RaidError::Members { level, members, need: "a size in sectors that fits 64 bits" });
        }
        Ok(Layout { level, stripe: stripe_bytes / SECTOR_BYTES, columns, copies, rows })
    }

    /// Array capacity in sectors.
    pub fn sectors(&self) -> u64 {
        self.columns as u64 * self.rows * self.stripe
    }

    /// Members of `column`.
    fn members_of(&self, column: usize) -> std::ops::Range<usize> {
        column * self.copies..(column + 1) * self.copies
    }

    /// Array sector of member `member`'s sector `lba`, if the array uses it.
    pub fn array_lba(&self, member: usize, lba: u64) -> Option<u64> {
        let (row, off) = (lba / self.stripe, lba % self.stripe);
        (row < self.rows && member < self.columns * self.copies)
            .then(|| (row * self.columns as u64 + (member / self.copies) as u64) * self.stripe + off)
    }

    /// Where array sector `lba` (in range) lives: each member holding a
    /// copy of it, with the member sector there.
    pub fn holders(&self, lba: u64) -> impl Iterator<Item = (usize, u64)> {
        let (k, off) = (lba / self.stripe, lba % self.stripe);
        let column = (k % self.columns as u64) as usize;
        let member_lba = (k / self.columns as u64) * self.stripe + off;
        self.members_of(column).map(move |m| (m, member_lba))
    }

    /// The per-column runs of `sectors` array sectors at `lba` (in range):
    /// one contiguous member run per column, since a column's stripes lie
    /// in consecutive rows.
    fn pieces(&self, lba: u64, sectors: u64) -> Vec<Piece> {
        let mut out: Vec<Piece> = Vec::new();
        let mut pos = lba;
        while pos < lba + sectors {
            let (k, off) = (pos / self.stripe, pos % self.stripe);
            let len = (self.stripe - off).min(lba + sectors - pos);
            let column = (k % self.columns as u64) as usize;
            let mlba = (k / self.columns as u64) * self.stripe + off;
            match out.iter_mut().find(|p| p.column == column) {
                Some(p) => {
                    debug_assert_eq!(p.lba + p.sectors, mlba, "a column's runs are contiguous");
                    p.sectors += len;
                }
                None => out.push(Piece { column, lba: mlba, sectors: len, at: pos - lba }),
            }
            pos += len;
        }
        out
    }

    /// Scatter map of a piece: `(offset in request, offset in piece, len)`
    /// for each stripe chunk, in sectors.
    fn chunks(&self, lba: u64, sectors: u64, column: usize) -> Vec<(u64, u64, u64)> {
        let mut out = Vec::new();
        let (mut pos, mut done) = (lba, 0);
        while pos < lba + sectors {
            let (k, off) = (pos / self.stripe, pos % self.stripe);
            let len = (self.stripe - off).min(lba + sectors - pos);
            if (k % self.columns as u64) as usize == column {
                out.push((pos - lba, done, len));
                done += len;
            }
            pos += len;
        }
        out
    }

    /// The member ranges an array TRIM of `ranges` becomes: exactly the
    /// member sectors holding array sectors inside the ranges (partial
    /// stripes included), merged per member. Ranges must be in range.
    pub fn member_ranges(&self, ranges: &[(Lba, u64)]) -> Vec<Vec<(Lba, u64)>> {
        let mut per: Vec<Vec<(u64, u64)>> = vec![Vec::new(); self.columns * self.copies];
        for &(lba, sectors) in ranges {
            for p in self.pieces(lba.0, sectors) {
                for m in self.members_of(p.column) {
                    per[m].push((p.lba, p.lba + p.sectors));
                }
            }
        }
        per.into_iter()
            .map(|mut v| {
                v.sort_unstable();
                let mut merged: Vec<(u64, u64)> = Vec::new();
                for (s, e) in v {
                    match merged.last_mut() {
                        Some(last) if s <= last.1 => last.1 = last.1.max(e),
                        _ => merged.push((s, e)),
                    }
                }
                merged.into_iter().map(|(s, e)| (Lba(s), e - s)).collect()
            })
            .collect()
    }
}

/// An array of member drives behind a RAID driver.
#[derive(Clone, Debug)]
pub struct Array {
    layout: Layout,
    policy: TrimPolicy,
    members: Vec<Drive>,
}

impl Array {
    /// An array of `members` (all alike in size) at `level`.
    pub fn new(level: Level, stripe_bytes: u64, policy: TrimPolicy, members: Vec<Drive>) -> Result<Self, RaidError> {
        let member_bytes = members.iter().map(|d| d.capacity_sectors() * SECTOR_BYTES).min().unwrap_or(0);
        let unit = members.iter().map(|d| u64::from(d.config().unit_bytes)).max().unwrap_or(SECTOR_BYTES);
        let layout = Layout::new(level, members.len(), stripe_bytes, member_bytes, unit)?;
        Ok(Array { layout, policy, members })
    }

    /// The layout.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The TRIM policy.
    pub fn policy(&self) -> TrimPolicy {
        self.policy
    }

    /// The member drives.
    pub fn members(&self) -> &[Drive] {
        &self.members
    }

    /// Secure-erases every member.
    pub fn secure_erase(&mut self) {
        self.members.iter_mut().for_each(Drive::secure_erase);
    }

    fn check(&self, lba: Lba, sectors: u64) -> Result<(), RaidError> {
        let cap = self.layout.sectors();
        match lba.0.checked_add(sectors) {
            Some(end) if end <= cap && sectors > 0 => Ok(()),
            end => Err(RaidError::Request(DriveError::OutOfRange {
                start: lba.0,
                end: end.unwrap_or(u64::MAX),
                capacity: cap,
            })),
        }
    }

    /// Runs `f` on member `m` with a queue issuing at `at`; when it completed.
    fn on_member<T>(
        &mut self,
        m: usize,
        at: SimTime,
        f: impl FnOnce(&mut Drive, &mut HostQueue) -> Result<T, DriveError>,
    ) -> Result<(T, SimTime), RaidError> {
        let mut q = HostQueue::new(1, at);
        let out = f(&mut self.members[m], &mut q).map_err(|source| RaidError::Member { member: m, source })?;
        Ok((out, q.finished_at()))
    }
}

impl BlockDevice for Array {
    type Error = RaidError;

    fn capacity_bytes(&self) -> u64 {
        self.layout.sectors() * SECTOR_BYTES
    }

    fn now(&self) -> SimTime {
        self.members.iter().map(Drive::now).max().unwrap_or(SimTime::ZERO)
    }

    fn needs_content(&self) -> bool {
        self.members.iter().any(Drive::needs_content)
    }

    fn keeps_data(&self) -> bool {
        self.members.iter().all(Drive::keeps_data)
    }

    /// All requests are range-checked before any is applied; a member that
    /// refuses its part stops the batch there.
    fn write_batch_on(&mut self, requests: &[(Lba, &[u8])], queue: &mut HostQueue) -> Result<(), RaidError> {
        for (lba, data) in requests {
            if !(data.len() as u64).is_multiple_of(SECTOR_BYTES) {
                return Err(RaidError::Request(DriveError::Misaligned { len: data.len(), sector: SECTOR_BYTES }));
            }
            self.check(*lba, data.len() as u64 / SECTOR_BYTES)?;
        }
        let mut buf = Vec::new();
        for &(lba, data) in requests {
            let sectors = data.len() as u64 / SECTOR_BYTES;
            let submitted = queue.submit_time();
            let mut done = submitted;
            for p in self.layout.pieces(lba.0, sectors) {
                buf.clear();
                for (at, _, len) in self.layout.chunks(lba.0, sectors, p.column) {
                    let (a, n) = ((at * SECTOR_BYTES) as usize, (len * SECTOR_BYTES) as usize);
                    buf.extend_from_slice(&data[a..a + n]);
                }
                for m in self.layout.members_of(p.column) {
                    let part = &buf[..];
                    let ((), t) = self.on_member(m, submitted, |d, q| d.write_batch_on(&[(Lba(p.lba), part)], q))?;
                    done = done.max(t);
                }
            }
            queue.complete(submitted, done, data.len() as u64);
        }
        Ok(())
    }

    fn read_on(
        &mut self,
        lba: Lba,
        sectors: u64,
        queue: &mut HostQueue,
        want_data: bool,
    ) -> Result<Option<Vec<u8>>, RaidError> {
        self.check(lba, sectors)?;
        let submitted = queue.submit_time();
        let mut done = submitted;
        let mut out = want_data.then(|| vec![0u8; (sectors * SECTOR_BYTES) as usize]);
        let row = lba.0 / self.layout.stripe / self.layout.columns as u64;
        let copy = (row % self.layout.copies as u64) as usize;
        for p in self.layout.pieces(lba.0, sectors) {
            let m = self.layout.members_of(p.column).start + copy;
            let (bytes, t) = self.on_member(m, submitted, |d, q| d.read_on(Lba(p.lba), p.sectors, q, want_data))?;
            done = done.max(t);
            if let (Some(out), Some(bytes)) = (out.as_mut(), bytes) {
                for (at, from, len) in self.layout.chunks(lba.0, sectors, p.column) {
                    let (a, f, n) =
                        ((at * SECTOR_BYTES) as usize, (from * SECTOR_BYTES) as usize, (len * SECTOR_BYTES) as usize);
                    out[a..a + n].copy_from_slice(&bytes[f..f + n]);
                }
            }
        }
        queue.complete(submitted, done, sectors * SECTOR_BYTES);
        Ok(out)
    }

    /// A TRIM the policy does not pass completes at once and unmaps
    /// nothing; one it passes becomes [`Layout::member_ranges`] on every
    /// copy. Returns units unmapped over all members.
    fn trim_on(&mut self, ranges: &[(Lba, u64)], queue: &mut HostQueue) -> Result<u64, RaidError> {
        for &(lba, sectors) in ranges {
            self.check(lba, sectors)?;
        }
        let submitted = queue.submit_time();
        let (mut done, mut unmapped) = (submitted, 0);
        if self.policy.passes(self.layout.level) {
            for (m, parts) in self.layout.member_ranges(ranges).into_iter().enumerate() {
                if !parts.is_empty() {
                    let (n, t) = self.on_member(m, submitted, |d, q| d.trim_on(&parts, q))?;
                    unmapped += n;
                    done = done.max(t);
                }
            }
        }
        let bytes = ranges.iter().map(|&(_, sectors)| sectors.saturating_mul(SECTOR_BYTES)).sum();
        queue.complete(submitted, done, bytes);
        Ok(unmapped)
    }

    fn idle(&mut self, from: SimTime, until: SimTime) -> Result<(), RaidError> {
        for m in 0..self.members.len() {
            self.members[m].idle(from, until).map_err(|source| RaidError::Member { member: m, source })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_reject_bad_member_counts_and_stripes() {
        let mb = 64 << 20;
        assert!(matches!(Layout::new(Level::Raid0, 1, 128 << 10, mb, 4096), Err(RaidError::Members { .. })));
        assert!(matches!(Layout::new(Level::Raid10, 6, 128 << 10, mb, 4096), Ok(l) if l.columns == 3));
        assert!(matches!(Layout::new(Level::Raid10, 5, 128 << 10, mb, 4096), Err(RaidError::Members { .. })));
        assert!(matches!(Layout::new(Level::Raid0, 2, 6 << 10, mb, 4096), Err(RaidError::Stripe { .. })));
        assert!(matches!(Layout::new(Level::Raid0, 2, 0, mb, 4096), Err(RaidError::Stripe { .. })));
        assert!(matches!(Layout::new(Level::Raid1, 2, 128 << 10, 4096, 4096), Err(RaidError::TooSmall { .. })));
        // A unit of 768 bytes does not make a 768-byte stripe whole sectors.
        assert!(matches!(Layout::new(Level::Raid0, 2, 768, mb, 768), Err(RaidError::Stripe { .. })));
        let uncountable = Layout::new(Level::Raid0, usize::MAX, 4096, 1 << 30, 4096);
        assert!(matches!(uncountable, Err(RaidError::Members { .. })), "sectors would wrap");
    }

    #[test]
    fn raid0_stripes_alternate_members() {
        let l = Layout::new(Level::Raid0, 2, 4096, 1 << 20, 4096).unwrap();
        // 8-sector stripes: array 0..8 on member 0 row 0, 8..16 on member 1 row 0, 16..24 on member 0 row 1.
        assert_eq!(l.array_lba(0, 0), Some(0));
        assert_eq!(l.array_lba(1, 0), Some(8));
        assert_eq!(l.array_lba(0, 8), Some(16));
        assert_eq!(l.holders(16).collect::<Vec<_>>(), vec![(0, 8)]);
        assert_eq!(l.holders(9).collect::<Vec<_>>(), vec![(1, 1)]);
        for lba in 0..64 {
            for (m, at) in l.holders(lba) {
                assert_eq!(l.array_lba(m, at), Some(lba), "holders inverts array_lba");
            }
        }
        let mirror = Layout::new(Level::Raid10, 4, 4096, 1 << 20, 4096).unwrap();
        assert_eq!(mirror.holders(8).collect::<Vec<_>>(), vec![(2, 0), (3, 0)], "both copies of column 1");
        let r = l.member_ranges(&[(Lba(4), 20)]);
        assert_eq!(r[0], vec![(Lba(4), 12)]);
        assert_eq!(r[1], vec![(Lba(0), 8)]);
    }

    #[test]
    fn policies_pass_trim_where_the_drivers_did() {
        use Level::*;
        let passes = |p: TrimPolicy| [Raid0, Raid1, Raid10].map(|l| p.passes(l));
        assert_eq!(passes(TrimPolicy::Rst10_6), [false, true, false]);
        assert_eq!(passes(TrimPolicy::Rst11_2), [true, true, false]);
        assert_eq!(passes(TrimPolicy::Passthrough), [true, true, true]);
    }
}
