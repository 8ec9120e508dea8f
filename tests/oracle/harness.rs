//! The harness: a drive beside a plain byte image of what it must hold,
//! and the counter identities the image predicts.

use std::collections::HashSet;

use duraflash::{Drive, DriveConfig, DriveError, Lba, Lpn, Stats};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::ops::{fill, Bad, Content, Op, SECTOR};

/// Earlier writes kept for replays and duplicate content.
const HISTORY: usize = 32;

pub(crate) struct Harness {
    pub(crate) drive: Drive,
    /// What every sector must read as.
    image: Vec<u8>,
    /// Which units the drive must have mapped.
    mapped: Vec<bool>,
    unit_sectors: u64,
    pub(crate) capacity: u64,
    history: Vec<(u64, Vec<u8>)>,
    dedup: bool,
    compression: bool,
    /// Expected counters.
    host_write_bytes: u64,
    host_write_units: u64,
    host_trim_units: u64,
    prev: Stats,
    /// Pages programmed and GC victims at the last secure erase.
    programmed_at_erase: (u64, u64),
    /// Steps between the O(drive) checks (`check_invariants`, distinct
    /// contents); 1 checks after every step.
    pub(crate) deep_every: u64,
    step: u64,
}

type Res = Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)+) => {
        let holds: bool = $cond;
        if !holds {
            return Err(format!($($fmt)+));
        }
    };
}

/// Splits the drive's units evenly over its write streams (stream 0 first).
fn hint_streams(drive: &mut Drive) {
    let streams = drive.config().placement.streams;
    let units = drive.config().logical_units();
    let hints = (1..streams).map(|s| (Lpn(units * u64::from(s) / u64::from(streams)), s)).collect();
    drive.set_stream_hints(hints).expect("hints name the drive's streams");
}

impl Harness {
    pub(crate) fn new(cfg: DriveConfig) -> Self {
        let mut drive = Drive::new(cfg.clone()).expect("valid config");
        hint_streams(&mut drive);
        let capacity = drive.capacity_sectors();
        let unit_sectors = u64::from(cfg.unit_bytes) / SECTOR;
        Harness {
            image: vec![0u8; (capacity * SECTOR) as usize],
            mapped: vec![false; (capacity / unit_sectors) as usize],
            unit_sectors,
            capacity,
            history: Vec::new(),
            dedup: cfg.dedup,
            compression: cfg.compression,
            host_write_bytes: 0,
            host_write_units: 0,
            host_trim_units: 0,
            prev: drive.stats(),
            programmed_at_erase: (0, 0),
            deep_every: 1,
            step: 0,
            drive,
        }
    }

    fn unit_bytes(&self) -> usize {
        (self.unit_sectors * SECTOR) as usize
    }

    fn range(&self, lba: u64, sectors: u64) -> std::ops::Range<usize> {
        (lba * SECTOR) as usize..((lba + sectors) * SECTOR) as usize
    }

    /// Reduces raw numbers to a request inside the drive.
    fn place(&self, lba: u64, sectors: u64, aligned: bool) -> (u64, u64) {
        let us = self.unit_sectors;
        let mut lba = lba % self.capacity;
        let mut sectors = sectors.clamp(1, self.capacity);
        if aligned {
            lba -= lba % us;
            sectors = sectors.div_ceil(us) * us;
        }
        if lba + sectors > self.capacity {
            lba = self.capacity - sectors;
        }
        (lba, sectors)
    }

    fn units_of(&self, lba: u64, sectors: u64) -> std::ops::Range<usize> {
        (lba / self.unit_sectors) as usize..(lba + sectors).div_ceil(self.unit_sectors) as usize
    }

    fn model_write(&mut self, lba: u64, data: &[u8]) {
        let sectors = data.len() as u64 / SECTOR;
        let r = self.range(lba, sectors);
        self.image[r].copy_from_slice(data);
        let units = self.units_of(lba, sectors);
        self.host_write_units += units.len() as u64;
        self.host_write_bytes += data.len() as u64;
        for u in units {
            self.mapped[u] = true;
        }
        if self.history.len() == HISTORY {
            self.history.remove(0);
        }
        self.history.push((lba, data.to_vec()));
    }

    /// One write; with dedup on, a write that changes no byte of mapped
    /// units must not program NAND.
    fn write(&mut self, lba: u64, data: Vec<u8>) -> Res {
        let sectors = data.len() as u64 / SECTOR;
        let unchanged =
            self.image[self.range(lba, sectors)] == data[..] && self.units_of(lba, sectors).all(|u| self.mapped[u]);
        let before = self.drive.stats();
        self.drive.write(Lba(lba), &data).map_err(|e| format!("write({lba}, {sectors} sectors) failed: {e}"))?;
        self.model_write(lba, &data);
        let after = self.drive.stats();
        if self.dedup && unchanged {
            ensure!(
                after.nand_pages_programmed == before.nand_pages_programmed && after.new_chunks == before.new_chunks,
                "rewrite of unchanged content at {lba}+{sectors} programmed {} pages, {} new chunks",
                after.nand_pages_programmed - before.nand_pages_programmed,
                after.new_chunks - before.new_chunks
            );
        }
        // Read back what was just written (often still in the page buffer).
        self.compare(lba, sectors)
    }

    pub(crate) fn compare(&mut self, lba: u64, sectors: u64) -> Res {
        let got = self.drive.read(Lba(lba), sectors).map_err(|e| format!("read({lba}, {sectors}) failed: {e}"))?;
        let want = &self.image[self.range(lba, sectors)];
        if got[..] != *want {
            let first = got.iter().zip(want).position(|(a, b)| a != b).unwrap_or(0);
            return Err(format!(
                "read({lba}, {sectors}) differs from the model first at byte {first} (sector {}, unit {}): got {:#04x}, want {:#04x}",
                lba + first as u64 / SECTOR,
                (lba + first as u64 / SECTOR) / self.unit_sectors,
                got[first],
                want[first]
            ));
        }
        Ok(())
    }

    fn expect_unchanged<T: std::fmt::Debug>(
        &mut self,
        what: &str,
        result: Result<T, DriveError>,
        expected: fn(&DriveError) -> bool,
        before: &Stats,
    ) -> Res {
        match result {
            Err(e) if expected(&e) => {}
            other => return Err(format!("{what}: expected a specific error, got {other:?}")),
        }
        let after = self.drive.stats();
        ensure!(after == *before, "{what} failed but changed the stats:\nbefore {before:?}\nafter  {after:?}");
        Ok(())
    }

    pub(crate) fn apply(&mut self, op: &Op) -> Res {
        self.step += 1;
        let us = self.unit_sectors;
        match op {
            Op::Write { lba, sectors, aligned, content } => {
                let (lba, sectors) = self.place(*lba, *sectors, *aligned);
                self.write(lba, fill(content, (sectors * SECTOR) as usize))?;
            }
            Op::Replay(pick) => {
                if !self.history.is_empty() {
                    let (lba, data) = self.history[pick % self.history.len()].clone();
                    self.write(lba, data)?;
                }
            }
            Op::Duplicate { pick, lba } => {
                if !self.history.is_empty() {
                    let (orig, data) = self.history[pick % self.history.len()].clone();
                    let sectors = data.len() as u64 / SECTOR;
                    let off = orig % us;
                    let max_base = (self.capacity - off - sectors) / us * us;
                    let base = (lba % self.capacity / us * us).min(max_base);
                    self.write(base + off, data)?;
                }
            }
            Op::CopyUnits { src, dst, units } => {
                let (src, sectors) = self.place(*src, units * us, true);
                let (dst, _) = self.place(*dst, sectors, true);
                let data = self.image[self.range(src, sectors)].to_vec();
                self.write(dst, data)?;
            }
            Op::Batch { base, reqs } => {
                let base = base % self.capacity;
                let placed: Vec<(u64, Vec<u8>)> = reqs
                    .iter()
                    .map(|(off, sectors, aligned, content)| {
                        let (lba, sectors) = self.place(base + off, *sectors, *aligned);
                        (lba, fill(content, (sectors * SECTOR) as usize))
                    })
                    .collect();
                let requests: Vec<(Lba, &[u8])> = placed.iter().map(|(l, d)| (Lba(*l), &d[..])).collect();
                self.drive.write_batch(&requests).map_err(|e| format!("write_batch failed: {e}"))?;
                for (lba, data) in &placed {
                    self.model_write(*lba, data);
                }
                for (lba, data) in &placed {
                    self.compare(*lba, data.len() as u64 / SECTOR)?;
                }
            }
            Op::Trim(ranges) => {
                let ranges: Vec<(Lba, u64)> = ranges
                    .iter()
                    .map(|(lba, sectors)| {
                        let lba = lba % self.capacity;
                        (Lba(lba), (*sectors).min(self.capacity - lba))
                    })
                    .collect();
                let mut expect = 0;
                // Units the ranges cover together are unmapped.
                let mut union: Vec<(u64, u64)> =
                    ranges.iter().map(|(l, s)| (l.0, l.0 + s)).filter(|r| r.1 > r.0).collect();
                union.sort_unstable();
                let mut merged: Vec<(u64, u64)> = Vec::new();
                for (a, b) in union {
                    match merged.last_mut() {
                        Some(last) if a <= last.1 => last.1 = last.1.max(b),
                        _ => merged.push((a, b)),
                    }
                }
                for (start, stop) in &merged {
                    let (first, end) = (start.div_ceil(us), stop / us);
                    for u in first..end.max(first) {
                        let u = u as usize;
                        if self.mapped[u] {
                            self.mapped[u] = false;
                            expect += 1;
                        }
                        let ub = self.unit_bytes();
                        self.image[u * ub..(u + 1) * ub].fill(0);
                    }
                }
                let got = self.drive.trim(&ranges).map_err(|e| format!("trim {ranges:?} failed: {e}"))?;
                ensure!(got == expect, "trim {ranges:?} unmapped {got} units, the model {expect}");
                self.host_trim_units += expect;
                for (lba, sectors) in &ranges {
                    // Partly covered units at the edges must keep their data.
                    let lo = lba.0.saturating_sub(us);
                    let hi = (lba.0 + sectors + us).min(self.capacity);
                    self.compare(lo, hi - lo)?;
                }
            }
            Op::Read { lba, sectors } => {
                let (lba, sectors) = self.place(*lba, *sectors, false);
                self.compare(lba, sectors)?;
            }
            Op::ReadAll => self.compare(0, self.capacity)?,
            Op::IdleGc => {
                let before = self.drive.stats();
                let unwritten = self.drive.unwritten_bytes();
                let cleaned = self.drive.idle_gc().map_err(|e| format!("idle_gc failed: {e}"))?;
                let after = self.drive.stats();
                ensure!(
                    after.gc_victims - before.gc_victims == u64::from(cleaned),
                    "idle_gc reported {cleaned} blocks, gc_victims grew by {}",
                    after.gc_victims - before.gc_victims
                );
                if before.free_blocks >= self.drive.config().gc.high_watermark {
                    ensure!(cleaned == 0, "idle_gc cleaned {cleaned} blocks with {} already free", before.free_blocks);
                }
                if cleaned == 0 {
                    ensure!(after == before, "idle_gc cleaned nothing but changed the stats");
                }
                if !self.compression {
                    // Fixed-size chunks leave no tail padding, so each
                    // victim frees at least one unit of garbage.
                    let gained = self.drive.unwritten_bytes() as i64 - unwritten as i64;
                    ensure!(
                        gained >= i64::from(cleaned) * self.unit_bytes() as i64,
                        "idle_gc cleaned {cleaned} blocks but unwritten space changed by {gained} bytes"
                    );
                }
            }
            Op::SecureErase => {
                let before = self.drive.stats();
                self.drive.secure_erase();
                self.image.fill(0);
                self.mapped.fill(false);
                let after = self.drive.stats();
                let blocks = self.drive.config().geometry.total_blocks();
                ensure!(
                    after.mapped_units == 0 && after.live_chunks == 0 && after.live_bytes == 0,
                    "after secure erase: {after:?}"
                );
                ensure!(after.free_blocks == blocks, "secure erase left {} of {blocks} blocks free", after.free_blocks);
                ensure!(after.erases >= before.erases, "erase count went down");
                ensure!(
                    after.pe_max >= before.pe_max && after.pe_avg >= before.pe_avg,
                    "P/E counts went down: {before:?} -> {after:?}"
                );
                if before.nand_pages_programmed > self.programmed_at_erase.0
                    && before.gc_victims == self.programmed_at_erase.1
                {
                    // Pages were programmed since the last secure erase and
                    // GC erased none of their blocks: they must be erased now.
                    ensure!(after.erases > before.erases, "secure erase of a programmed drive erased nothing");
                }
                self.programmed_at_erase = (after.nand_pages_programmed, after.gc_victims);
            }
            Op::Clone => {
                let copy = self.drive.clone();
                ensure!(copy.stats() == self.drive.stats(), "a clone has different stats");
                self.drive = copy;
            }
            Op::SaveLoad => {
                static SAVES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                let n = SAVES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let path = std::env::temp_dir().join(format!("duraflash-oracle-{}-{n}.img", std::process::id()));
                self.drive.save(&path).map_err(|e| format!("save: {e}"))?;
                let loaded = Drive::load(&path).map_err(|e| format!("load: {e}"));
                let _ = std::fs::remove_file(&path);
                let mut loaded = loaded?;
                hint_streams(&mut loaded);
                ensure!(loaded.stats() == self.drive.stats(), "a loaded image has different stats");
                ensure!(loaded.now() == self.drive.now(), "a loaded image has a different clock");
                self.drive = loaded;
            }
            Op::Invalid(bad) => self.apply_bad(bad)?,
        }
        self.check()
    }

    fn apply_bad(&mut self, bad: &Bad) -> Res {
        let before = self.drive.stats();
        let cap = self.capacity;
        let out_of_range = |e: &DriveError| matches!(e, DriveError::OutOfRange { .. });
        let misaligned = |e: &DriveError| matches!(e, DriveError::Misaligned { .. });
        match bad {
            Bad::WritePastEnd { back, extra } => {
                let back = (*back).min(cap);
                let data = vec![0xa5u8; ((back + extra) * SECTOR) as usize];
                let r = self.drive.write(Lba(cap - back), &data);
                self.expect_unchanged("write past the end", r, out_of_range, &before)?;
            }
            Bad::WriteMisaligned { lba, len } => {
                let data = vec![0x5au8; *len];
                let r = self.drive.write(Lba(lba % cap), &data);
                self.expect_unchanged("misaligned write", r, misaligned, &before)?;
            }
            Bad::WriteOverflow => {
                let r = self.drive.write(Lba(u64::MAX - 3), &[1u8; 4096]);
                self.expect_unchanged("write at u64::MAX - 3", r, out_of_range, &before)?;
                let r = self.drive.read(Lba(u64::MAX), 1);
                self.expect_unchanged("read at u64::MAX", r, out_of_range, &before)?;
                let r = self.drive.trim(&[(Lba(1), u64::MAX)]);
                self.expect_unchanged("trim of u64::MAX sectors", r, out_of_range, &before)?;
            }
            Bad::ReadZero { lba } => {
                let r = self.drive.read(Lba(lba % cap), 0);
                self.expect_unchanged("read of 0 sectors", r, misaligned, &before)?;
            }
            Bad::ReadPastEnd { back, extra } => {
                let back = (*back).min(cap);
                let r = self.drive.read(Lba(cap - back), back + extra);
                self.expect_unchanged("read past the end", r, out_of_range, &before)?;
            }
            Bad::TrimPartlyOutOfRange { lba, sectors, extra } => {
                let lba = lba % cap;
                let good = (Lba(lba), (*sectors).min(cap - lba));
                let r = self.drive.trim(&[good, (Lba(cap - 1), 1 + extra)]);
                self.expect_unchanged("trim with one bad range", r, out_of_range, &before)?;
            }
            Bad::BatchPartlyMisaligned { lba, sectors, bad_len } => {
                let (lba, sectors) = self.place(*lba, *sectors, false);
                let good = vec![0x77u8; (sectors * SECTOR) as usize];
                let badbuf = vec![0x88u8; *bad_len];
                let r = self.drive.write_batch(&[(Lba(lba), &good), (Lba(0), &good), (Lba(lba), &badbuf)]);
                self.expect_unchanged("batch with a misaligned request", r, misaligned, &before)?;
            }
        }
        Ok(())
    }

    /// Invariants and the counter identities the model predicts.
    pub(crate) fn check(&mut self) -> Res {
        let deep = self.step.is_multiple_of(self.deep_every);
        if deep {
            self.drive.check_invariants().map_err(|e| format!("invariant broken: {e}"))?;
        }
        let s = self.drive.stats();
        let mapped = self.mapped.iter().filter(|m| **m).count() as u64;
        ensure!(s.mapped_units == mapped, "drive maps {} units, the model {mapped}", s.mapped_units);
        ensure!(
            s.host_write_bytes == self.host_write_bytes,
            "host_write_bytes {} != {}",
            s.host_write_bytes,
            self.host_write_bytes
        );
        ensure!(
            s.host_write_units == self.host_write_units,
            "host_write_units {} != {}",
            s.host_write_units,
            self.host_write_units
        );
        ensure!(
            s.host_trim_units == self.host_trim_units,
            "host_trim_units {} != {}",
            s.host_trim_units,
            self.host_trim_units
        );
        ensure!(
            s.new_chunks + s.dedup_hits == s.host_write_units,
            "new_chunks {} + dedup_hits {} != unit writes {}",
            s.new_chunks,
            s.dedup_hits,
            s.host_write_units
        );
        if !self.dedup {
            ensure!(s.dedup_hits == 0, "dedup off but {} dedup hits", s.dedup_hits);
            ensure!(s.live_chunks == mapped, "dedup off: {} live chunks for {mapped} mapped units", s.live_chunks);
        } else if deep {
            let ub = self.unit_bytes();
            let distinct: HashSet<&[u8]> = self
                .mapped
                .iter()
                .enumerate()
                .filter(|(_, m)| **m)
                .map(|(u, _)| &self.image[u * ub..(u + 1) * ub])
                .collect();
            ensure!(
                s.live_chunks == distinct.len() as u64,
                "dedup on: {} live chunks, but mapped units hold {} distinct contents",
                s.live_chunks,
                distinct.len()
            );
        }
        if !self.compression {
            ensure!(
                s.live_bytes == s.live_chunks * self.unit_bytes() as u64,
                "compression off: {} live bytes in {} chunks",
                s.live_bytes,
                s.live_chunks
            );
        }
        let p = &self.prev;
        ensure!(
            s.nand_pages_programmed >= p.nand_pages_programmed
                && s.erases >= p.erases
                && s.gc_relocated_bytes >= p.gc_relocated_bytes
                && s.gc_victims >= p.gc_victims
                && s.pe_max >= p.pe_max,
            "a lifetime counter went down:\nbefore {p:?}\nafter  {s:?}"
        );
        let total_pe = s.pe_avg * f64::from(self.drive.config().geometry.total_blocks());
        ensure!((total_pe - s.erases as f64).abs() < 0.5, "P/E cycles sum to {total_pe}, erases are {}", s.erases);
        self.prev = s;
        Ok(())
    }

    /// Fills the drive (sequentially, then half of it again at random) so
    /// that GC is already running when the random operations start.
    pub(crate) fn prefill(&mut self, seed: u64) -> Res {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let us = self.unit_sectors;
        let units = self.capacity / us;
        let ub = self.unit_bytes();
        let chunk = 16u64;
        let gen = |rng: &mut ChaCha8Rng, n: u64| -> Vec<u8> {
            let mut out = Vec::with_capacity(n as usize * ub);
            for _ in 0..n {
                let content = match rng.random_range(0..20) {
                    0..=13 => Content::Random(rng.random()),
                    14..=16 => Content::HalfZero(rng.random()),
                    17 => Content::Byte(rng.random_range(0..4)),
                    _ => Content::Pattern(rng.random_range(0..4), 7),
                };
                out.extend(fill(&content, ub));
            }
            out
        };
        for start in (0..units).step_by(chunk as usize) {
            let n = chunk.min(units - start);
            let data = gen(&mut rng, n);
            self.drive.write(Lba(start * us), &data).map_err(|e| format!("prefill write failed: {e}"))?;
            self.model_write(start * us, &data);
        }
        // Rewrite random units until GC has relocated data (and a little
        // beyond), so every case starts with GC running. Extra write
        // frontiers take blocks that keep many victims empty for a while,
        // so the bound is generous: it only stops a drive GC never needs.
        let mut extra = None;
        for i in 0..units * 32 {
            if extra.is_none() && self.drive.stats().gc_relocated_bytes > 0 {
                extra = Some(i + units / 4);
            }
            if extra.is_some_and(|end| i >= end) {
                break;
            }
            let u = rng.random_range(0..units);
            let data = gen(&mut rng, 1);
            self.drive.write(Lba(u * us), &data).map_err(|e| format!("prefill rewrite failed: {e}"))?;
            self.model_write(u * us, &data);
        }
        self.history.clear();
        self.check()
    }
}
