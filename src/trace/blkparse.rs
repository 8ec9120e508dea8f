//! blkparse default text output: `maj,min cpu seq secs.nanos pid action
//! RWBS sector + count [process]`. Only the chosen action (`D` dispatch or
//! `C` completion) becomes requests; RWBS `D` (discard) is a TRIM, else `W`
//! a write and `R` a read; events without a sector range (flushes) and
//! other actions are skipped. The
//! summary blkparse prints after the events ends the records.

use super::{field, number, seconds_to_ns, sectors_to_bytes, BlkAction, Op, Parsed};

/// Whether `line` looks like a blkparse event.
pub(super) fn looks_like(line: &str) -> bool {
    let f: Vec<&str> = line.split_whitespace().collect();
    f.len() >= 7 && is_device(f[0]) && seconds_to_ns(f[3], "").is_ok()
}

/// `8,0` style device numbers.
fn is_device(text: &str) -> bool {
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    text.split_once(',').is_some_and(|(a, b)| digits(a) && digits(b))
}

/// Parses one line.
pub(super) fn parse(line: &str, keep: BlkAction) -> Result<Parsed, String> {
    let f: Vec<&str> = line.split_whitespace().collect();
    if f[0].starts_with("CPU") || f[0] == "Total" {
        return Ok(Parsed::End);
    }
    let device = field(&f, 0, "device")?;
    if !is_device(device) {
        return Err(format!("field `device`: '{}' is not major,minor", super::clip(device)));
    }
    number::<u32>(field(&f, 1, "cpu")?, "cpu")?;
    number::<u64>(field(&f, 2, "sequence")?, "sequence")?;
    let time = seconds_to_ns(field(&f, 3, "time")?, "time")?;
    number::<u32>(field(&f, 4, "pid")?, "pid")?;
    let action = field(&f, 5, "action")?;
    let rwbs = field(&f, 6, "rwbs")?;
    let wanted = match keep {
        BlkAction::D => "D",
        BlkAction::C => "C",
    };
    if action != wanted {
        return Ok(Parsed::Skip);
    }
    let op = if rwbs.contains('D') {
        Op::Trim
    } else if rwbs.contains('W') {
        Op::Write
    } else if rwbs.contains('R') {
        Op::Read
    } else {
        return Ok(Parsed::Skip);
    };
    if f.get(7).is_none_or(|t| t.starts_with('[')) {
        return Ok(Parsed::Skip); // no sector range: a flush or barrier
    }
    let sector: u64 = number(field(&f, 7, "sector")?, "sector")?;
    if field(&f, 8, "+")? != "+" {
        return Err(format!("expected '+' after the sector, found '{}'", super::clip(f[8])));
    }
    let count: u64 = number(field(&f, 9, "sectors")?, "sectors")?;
    Ok(Parsed::Record {
        time,
        op,
        offset: sectors_to_bytes(sector, "sector")?,
        len: sectors_to_bytes(count, "sectors")?,
        content: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::{TraceBytes, TraceTime};

    #[test]
    fn keeps_the_chosen_action_and_maps_rwbs() {
        let d = "  8,0    3        1     0.000001500   697  D  WS 223490 + 8 [kjournald]";
        let Ok(Parsed::Record { time, op, offset, len, .. }) = parse(d, BlkAction::D) else { panic!("not a record") };
        assert_eq!((time, op, offset, len), (TraceTime(1500), Op::Write, TraceBytes(223_490 * 512), TraceBytes(4096)));
        assert!(matches!(parse(d, BlkAction::C), Ok(Parsed::Skip)));
        let c = "  8,0    1        7     1.5   0  C  DS 2048 + 2048 [0]";
        assert!(matches!(parse(c, BlkAction::C), Ok(Parsed::Record { op: Op::Trim, .. })));
        let c = "  8,0    1        7     1.5   0  C  R 2048 + 16 [0]";
        assert!(matches!(parse(c, BlkAction::C), Ok(Parsed::Record { op: Op::Read, .. })));
        let flush = "  8,0    1        8     1.6   0  D  FWS [jbd2/sda1-8]";
        assert!(matches!(parse(flush, BlkAction::D), Ok(Parsed::Skip)));
        assert!(matches!(parse("CPU0 (8,0):", BlkAction::D), Ok(Parsed::End)));
    }

    #[test]
    fn rejects_malformed_events() {
        for (line, want) in [
            ("8,0 3 1 0.1 697 D W 100 - 8", "expected '+'"),
            ("8,0 3 1 0.1 697 D W 100 +", "missing field `sectors`"),
            ("8,0 3 1 0.1 697 D W 1x0 + 8", "field `sector`"),
            ("8;0 3 1 0.1 697 D W 100 + 8", "field `device`"),
            ("8,0 3 1 zero 697 D W 100 + 8", "field `time`"),
        ] {
            let err = parse(line, BlkAction::D).err().unwrap_or_else(|| panic!("{line} parsed"));
            assert!(err.contains(want), "{line}: {err}");
        }
    }
}
