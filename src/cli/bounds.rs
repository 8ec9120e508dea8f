//! Flags that size a benchmark against the drive, checked before it runs:
//! a span or a count of zones the drive cannot hold is a usage error
//! (exit 2) naming the flag, as `run` refuses a job `size` past the drive.

use duraflash::ByteSize;

use super::Failure;

/// `bytes` of `flag` (`--span`, `--atto`), refused when it is more than
/// the drive's `capacity` rather than cut down to it.
pub(crate) fn within(flag: &str, bytes: u64, capacity: u64) -> Result<u64, Failure> {
    if bytes > capacity {
        return Err(Failure::Usage(format!(
            "{flag} {}: more than the drive's {}; give at most {capacity} bytes or a larger --capacity",
            ByteSize(bytes),
            ByteSize(capacity)
        )));
    }
    Ok(bytes)
}

/// HD Tach's `--zones`: at least one, and each zone at least one
/// `request`-byte request of the `capacity`-byte drive.
pub(crate) fn zones(zones: u32, request: u64, capacity: u64) -> Result<(), Failure> {
    if zones == 0 {
        return Err(Failure::Usage("--zones: must be at least 1".into()));
    }
    if u64::from(zones).saturating_mul(request) > capacity {
        return Err(Failure::Usage(format!(
            "--zones {zones}: the drive is too small for that many zones of one {request}-byte request \
             (at most {})",
            capacity / request
        )));
    }
    Ok(())
}

/// An array's `--members` as the memory estimate counts drives: refused
/// past `u32::MAX` rather than counted as fewer.
pub(crate) fn members(members: usize) -> Result<u32, Failure> {
    u32::try_from(members)
        .map_err(|_| Failure::Usage(format!("--members {members}: more drives than the model counts ({})", u32::MAX)))
}
