//! What each command does to the device. Byte-granular requests are
//! served exactly: reads cover the enclosing sectors and return the slice
//! asked for; unaligned writes read-modify-write the edge sectors under
//! the same lock; TRIM unmaps only the units it covers entirely (TRIM is
//! advisory). `WRITE_ZEROES` unmaps the units it covers entirely (no NAND
//! program; unmapped units read as zeros) and writes zeros to partial
//! edges; with `NO_HOLE` it writes zeros everywhere (dedup stores them
//! once).

use std::sync::atomic::{AtomicU64, Ordering};

use super::handshake::Session;
use super::{Failure, ServedDevice, Server, State, MAX_PAYLOAD};
use crate::host::CommandKind;
use crate::nbd::protocol::*;
use crate::units::{Lba, SECTOR_BYTES};

/// Zeros written per device command by `WRITE_ZEROES` with `NO_HOLE`.
const ZERO_CHUNK: u64 = 1 << 20;

/// Most extents one BLOCK_STATUS reply describes (the client asks again
/// for the rest, as the protocol allows).
const MAX_EXTENTS: usize = 1 << 16;

/// A successful answer.
pub(super) enum Reply {
    /// No payload.
    Done,
    /// Read data.
    Data(Vec<u8>),
    /// A read of `len` bytes that are all zeros because nothing is mapped.
    Hole(u32),
    /// Block status descriptors `(length, flags)` of one context.
    Status(u32, Vec<(u32, u32)>),
}

impl<D: ServedDevice> Server<D> {
    /// Validates and runs one request.
    pub(super) fn execute(&self, req: &Request, payload: &[u8], session: &Session) -> Result<Reply, Failure> {
        let bad_flags = req.flags & !req.command.allowed_flags(session.structured);
        if bad_flags != 0 {
            return Err(Failure::new(Errno::EINVAL, format!("command flags {bad_flags:#x} are not valid here")));
        }
        let c = &self.counters;
        let count = |a: &AtomicU64| a.fetch_add(1, Ordering::Relaxed);
        match req.command {
            Command::Flush => {
                if req.offset != 0 || req.length != 0 {
                    return Err(Failure::new(Errno::EINVAL, "flush takes no offset or length"));
                }
                // Every completed command is already in the drive's state (the
                // model has no volatile cache); with an image, a flush saves it.
                count(&c.flushes);
                self.persist(&mut *self.lock()?)?;
                return Ok(Reply::Done);
            }
            Command::Unknown(t) => return Err(Failure::new(Errno::EINVAL, format!("unknown command {t}"))),
            _ => {}
        }
        let end = self.check_range(req)?;
        match req.command {
            Command::Read => {
                count(&c.reads);
                if req.length > MAX_PAYLOAD {
                    // EOVERFLOW is for reads the client asked not to fragment.
                    let errno = if req.flags & CMD_FLAG_DF != 0 { Errno::EOVERFLOW } else { Errno::EINVAL };
                    return Err(Failure::new(errno, format!("read over {MAX_PAYLOAD} bytes")));
                }
                c.read_bytes.fetch_add(u64::from(req.length), Ordering::Relaxed);
                self.read(req.offset, end)
            }
            Command::Write => {
                count(&c.writes);
                c.write_bytes.fetch_add(payload.len() as u64, Ordering::Relaxed);
                let mut s = self.lock()?;
                s.queue.set_kind(CommandKind::Write);
                write_bytes(&mut s, req.offset, payload)?;
                self.changed(&mut s, req.flags)?;
                Ok(Reply::Done)
            }
            Command::Trim => {
                count(&c.trims);
                let (first, last) = (req.offset.div_ceil(SECTOR_BYTES), end / SECTOR_BYTES);
                if last > first {
                    let mut s = self.lock()?;
                    let State { dev, queue, .. } = &mut *s;
                    queue.set_kind(CommandKind::Trim);
                    dev.trim_on(&[(Lba(first), last - first)], queue).map_err(Failure::of::<D>)?;
                    self.changed(&mut s, req.flags)?;
                }
                Ok(Reply::Done)
            }
            Command::WriteZeroes => {
                count(&c.write_zeroes);
                let no_hole = req.flags & CMD_FLAG_NO_HOLE != 0;
                if no_hole && req.flags & CMD_FLAG_FAST_ZERO != 0 {
                    return Err(Failure::new(Errno::ENOTSUP, "zeros without holes cost as much as a write"));
                }
                let mut s = self.lock()?;
                write_zeroes(&mut s, req.offset, end, no_hole)?;
                self.changed(&mut s, req.flags)?;
                Ok(Reply::Done)
            }
            Command::BlockStatus => {
                count(&c.block_status);
                let Some(id) = session.allocation else {
                    return Err(Failure::new(Errno::EINVAL, "no metadata context selected"));
                };
                let s = self.lock()?;
                let one = req.flags & CMD_FLAG_REQ_ONE != 0;
                Ok(Reply::Status(id, allocation(&s.dev, req.offset, end, one)))
            }
            Command::Flush | Command::Disconnect | Command::Unknown(_) => {
                Err(Failure::new(Errno::EINVAL, "command handled elsewhere"))
            }
        }
    }

    /// Notes that a command changed the device; with FUA, saves it before
    /// the command is answered.
    fn changed(&self, s: &mut State<D>, flags: u16) -> Result<(), Failure> {
        s.dirty = true;
        s.unchecked = true;
        if flags & CMD_FLAG_FUA != 0 {
            self.persist(s)?;
        }
        Ok(())
    }

    /// The request's end offset, or the error for a request that is empty,
    /// overflows, or reaches past the export.
    fn check_range(&self, req: &Request) -> Result<u64, Failure> {
        if req.length == 0 {
            return Err(Failure::new(Errno::EINVAL, "zero-length request"));
        }
        let end = req.offset.checked_add(u64::from(req.length));
        match end {
            Some(end) if end <= self.size => Ok(end),
            _ => {
                let errno = match req.command {
                    Command::Write | Command::Trim | Command::WriteZeroes => Errno::ENOSPC,
                    _ => Errno::EINVAL,
                };
                Err(Failure::new(
                    errno,
                    format!("bytes {}+{} reach past the {}-byte export", req.offset, req.length, self.size),
                ))
            }
        }
    }

    /// Reads bytes `offset..end` (at most [`MAX_PAYLOAD`]).
    fn read(&self, offset: u64, end: u64) -> Result<Reply, Failure> {
        let mut s = self.lock()?;
        let State { dev, queue, .. } = &mut *s;
        queue.set_kind(CommandKind::Read);
        let first = offset / SECTOR_BYTES;
        let sectors = end.div_ceil(SECTOR_BYTES) - first;
        let len = (end - offset) as u32;
        if !any_mapped(dev, offset, end) {
            dev.read_on(Lba(first), sectors, queue, false).map_err(Failure::of::<D>)?;
            return Ok(Reply::Hole(len));
        }
        let data = dev.read_on(Lba(first), sectors, queue, true).map_err(Failure::of::<D>)?.unwrap_or_default();
        let skip = (offset - first * SECTOR_BYTES) as usize;
        let piece = data.get(skip..skip + len as usize).ok_or_else(|| Failure::new(Errno::EIO, "short read"))?;
        Ok(Reply::Data(if skip == 0 && data.len() == len as usize { data } else { piece.to_vec() }))
    }
}

/// Whether any unit overlapping bytes `offset..end` holds data.
fn any_mapped(dev: &impl ServedDevice, offset: u64, end: u64) -> bool {
    let unit = dev.unit_bytes();
    (offset / unit..end.div_ceil(unit)).any(|u| dev.is_unit_mapped(u))
}

/// Writes `data` at byte `offset`, read-modify-writing partial sectors.
fn write_bytes<D: ServedDevice>(s: &mut State<D>, offset: u64, data: &[u8]) -> Result<(), Failure> {
    let State { dev, queue, .. } = s;
    let end = offset + data.len() as u64;
    let first = offset / SECTOR_BYTES;
    if offset.is_multiple_of(SECTOR_BYTES) && end.is_multiple_of(SECTOR_BYTES) {
        return dev.write_batch_on(&[(Lba(first), data)], queue).map_err(Failure::of::<D>);
    }
    let sectors = end.div_ceil(SECTOR_BYTES) - first;
    let mut merged = dev.read_on(Lba(first), sectors, queue, true).map_err(Failure::of::<D>)?.unwrap_or_default();
    let skip = (offset - first * SECTOR_BYTES) as usize;
    merged
        .get_mut(skip..skip + data.len())
        .ok_or_else(|| Failure::new(Errno::EIO, "short read-modify-write"))?
        .copy_from_slice(data);
    dev.write_batch_on(&[(Lba(first), &merged)], queue).map_err(Failure::of::<D>)
}

/// Writes zeros to bytes `offset..end` in bounded pieces.
fn write_zero_bytes<D: ServedDevice>(s: &mut State<D>, offset: u64, end: u64) -> Result<(), Failure> {
    let zeros = vec![0u8; ZERO_CHUNK.min(end - offset) as usize];
    let mut at = offset;
    while at < end {
        // Pieces end on chunk boundaries, so only the range's own edges read-modify-write.
        let next = ((at / ZERO_CHUNK + 1) * ZERO_CHUNK).min(end);
        write_bytes(s, at, &zeros[..(next - at) as usize])?;
        at = next;
    }
    Ok(())
}

/// `NBD_CMD_WRITE_ZEROES` on bytes `offset..end`: whole units are unmapped
/// (they then read as zeros; no NAND program) unless `no_hole`, and every
/// other byte gets written zeros.
fn write_zeroes<D: ServedDevice>(s: &mut State<D>, offset: u64, end: u64, no_hole: bool) -> Result<(), Failure> {
    s.queue.set_kind(CommandKind::Write);
    let unit = s.dev.unit_bytes();
    let (u_first, u_end) = (offset.div_ceil(unit), end / unit);
    if no_hole || u_end <= u_first {
        return write_zero_bytes(s, offset, end);
    }
    write_zero_bytes(s, offset, u_first * unit)?;
    let us = unit / SECTOR_BYTES;
    {
        let State { dev, queue, .. } = &mut *s;
        queue.set_kind(CommandKind::Trim);
        dev.trim_on(&[(Lba(u_first * us), (u_end - u_first) * us)], queue).map_err(Failure::of::<D>)?;
    }
    s.queue.set_kind(CommandKind::Write);
    // A firmware that leaves some trimmed units mapped (the SandForce TRIM
    // defect) still owes zeros there.
    let mut u = u_first;
    while u < u_end {
        if s.dev.is_unit_mapped(u) {
            let mut stop = u + 1;
            while stop < u_end && s.dev.is_unit_mapped(stop) {
                stop += 1;
            }
            write_zero_bytes(s, u * unit, stop * unit)?;
            u = stop;
        } else {
            u += 1;
        }
    }
    write_zero_bytes(s, u_end * unit, end)
}

/// `base:allocation` descriptors of bytes `offset..end`: unmapped units
/// are holes that read as zeros, mapped units are data.
fn allocation(dev: &impl ServedDevice, offset: u64, end: u64, only_one: bool) -> Vec<(u32, u32)> {
    let unit = dev.unit_bytes();
    let mut out: Vec<(u32, u32)> = Vec::new();
    let mut at = offset;
    // The reply may describe a prefix of the range: stop at a bounded
    // number of extents so one request cannot hold the device for long.
    while at < end && out.len() < MAX_EXTENTS {
        let u = at / unit;
        let next = ((u + 1) * unit).min(end);
        let flags = if dev.is_unit_mapped(u) { 0 } else { STATE_HOLE | STATE_ZERO };
        let len = (next - at) as u32; // at most one request length, a u32
        let same = out.last().is_some_and(|last| last.1 == flags);
        if same {
            if let Some(last) = out.last_mut() {
                last.0 += len;
            }
        } else if only_one && !out.is_empty() {
            break;
        } else {
            out.push((len, flags));
        }
        at = next;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::DriveConfig;
    use crate::device::Drive;
    use crate::host::raid::{Array, Level, TrimPolicy};
    use crate::host::{BlockDevice, HostQueue};
    use crate::units::Lpn;

    fn drive() -> Drive {
        let config = DriveConfig::preset("sf2281-240g").and_then(|c| c.scaled(64 << 20)).expect("preset");
        Drive::new(config).expect("drive")
    }

    fn state<D: ServedDevice>(dev: D) -> State<D> {
        let queue = HostQueue::new(32, dev.now());
        State::new(dev, queue)
    }

    #[test]
    fn unaligned_writes_read_modify_write_whole_sectors() {
        let mut s = state(drive());
        write_bytes(&mut s, 0, &[1u8; 8192]).map_err(|f| f.1).expect("aligned write");
        write_bytes(&mut s, 100, &[2u8; 1000]).map_err(|f| f.1).expect("unaligned write");
        let data = s.dev.read(Lba(0), 16).expect("read");
        assert!(data[..100].iter().all(|&b| b == 1));
        assert!(data[100..1100].iter().all(|&b| b == 2));
        assert!(data[1100..].iter().all(|&b| b == 1));
    }

    #[test]
    fn write_zeroes_unmaps_whole_units_and_zeroes_the_edges() {
        let mut s = state(drive());
        write_bytes(&mut s, 0, &[9u8; 16384]).map_err(|f| f.1).expect("write");
        let before = s.dev.stats();
        write_zeroes(&mut s, 1000, 13000, false).map_err(|f| f.1).expect("zeroes");
        let after = s.dev.stats();
        assert_eq!(after.host_trim_units - before.host_trim_units, 2, "units 1 and 2 are unmapped");
        assert_eq!(after.host_write_units - before.host_write_units, 2, "only the edge units 0 and 3 are written");
        let data = s.dev.read(Lba(0), 32).expect("read");
        assert!(data[..1000].iter().all(|&b| b == 9));
        assert!(data[1000..13000].iter().all(|&b| b == 0));
        assert!(data[13000..].iter().all(|&b| b == 9));
        assert!(!s.dev.is_mapped(Lpn(1)) && !s.dev.is_mapped(Lpn(2)), "whole units are unmapped");
        let map = allocation(&s.dev, 0, 16384, false);
        assert_eq!(map, vec![(4096, 0), (8192, STATE_HOLE | STATE_ZERO), (4096, 0)]);
        assert_eq!(allocation(&s.dev, 4096, 16384, true), vec![(8192, STATE_HOLE | STATE_ZERO)]);
    }

    #[test]
    fn an_array_serves_holes_per_member_and_zeros_where_its_driver_drops_trim() {
        for (policy, passes) in [(TrimPolicy::Rst11_2, true), (TrimPolicy::Rst10_6, false)] {
            let array = Array::new(Level::Raid0, 8192, policy, vec![drive(), drive()]).expect("array");
            let mut s = state(array);
            // Units 0..4: two stripes of two units, on member 0 then member 1.
            write_bytes(&mut s, 0, &[5u8; 16384]).map_err(|f| f.1).expect("write");
            write_zeroes(&mut s, 4096, 12288, false).map_err(|f| f.1).expect("zeroes");
            let mut q = HostQueue::new(1, s.dev.now());
            let data = s.dev.read_on(Lba(0), 32, &mut q, true).expect("read").expect("data");
            assert!(data[..4096].iter().all(|&b| b == 5) && data[12288..].iter().all(|&b| b == 5));
            assert!(data[4096..12288].iter().all(|&b| b == 0), "zeros whether or not TRIM passed");
            let members = s.dev.member_snapshots();
            let trimmed: Vec<u64> = members.iter().map(|m| m.stats.host_trim_units).collect();
            let hole = STATE_HOLE | STATE_ZERO;
            if passes {
                assert_eq!(trimmed, vec![1, 1], "unit 1 on member 0 and unit 2 on member 1");
                assert_eq!(allocation(&s.dev, 0, 16384, false), vec![(4096, 0), (8192, hole), (4096, 0)]);
            } else {
                assert_eq!(trimmed, vec![0, 0], "RST 10.6 drops RAID-0 TRIM");
                assert_eq!(allocation(&s.dev, 0, 16384, false), vec![(16384, 0)], "zeros were written");
            }
            assert!(s.dev.check_invariants().is_ok());
        }
    }
}
