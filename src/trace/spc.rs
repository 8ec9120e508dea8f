//! SPC / UMass traces: CSV lines `ASU,LBA,Size,Opcode,Timestamp` with the
//! LBA in 512-byte blocks, the size in bytes, opcode `r` or `w` (either
//! case) and the timestamp in seconds. Every ASU lands on the one drive at
//! its own LBAs.

use super::{field, number, seconds_to_ns, sectors_to_bytes, Op, Parsed, TraceBytes};

/// Fields of a record.
const FIELDS: usize = 5;

/// Whether `line` looks like an SPC record.
pub(super) fn looks_like(line: &str) -> bool {
    let f: Vec<&str> = line.split(',').collect();
    f.len() == FIELDS && kind(f[3]).is_some() && f[1].trim().parse::<u64>().is_ok()
}

fn kind(text: &str) -> Option<Op> {
    match text.trim() {
        "r" | "R" => Some(Op::Read),
        "w" | "W" => Some(Op::Write),
        _ => None,
    }
}

/// Parses one line.
pub(super) fn parse(line: &str) -> Result<Parsed, String> {
    let f: Vec<&str> = line.split(',').collect();
    if f[0].trim().eq_ignore_ascii_case("asu") {
        return Ok(Parsed::Skip);
    }
    if f.len() > FIELDS {
        return Err(format!("expected {FIELDS} comma-separated fields, found {}", f.len()));
    }
    number::<u32>(field(&f, 0, "ASU")?, "ASU")?;
    let lba: u64 = number(field(&f, 1, "LBA")?, "LBA")?;
    let len = number(field(&f, 2, "Size")?, "Size")?;
    let op_text = field(&f, 3, "Opcode")?;
    let op = kind(op_text).ok_or_else(|| format!("field `Opcode`: '{op_text}' is not r or w"))?;
    let time = seconds_to_ns(field(&f, 4, "Timestamp")?, "Timestamp")?;
    Ok(Parsed::Record { time, op, offset: sectors_to_bytes(lba, "LBA")?, len: TraceBytes(len), content: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceTime;

    #[test]
    fn parses_blocks_bytes_and_seconds() {
        let Ok(Parsed::Record { time, op, offset, len, .. }) = parse("0,303567,3584,w,0.004112") else {
            panic!("not a record")
        };
        assert_eq!(
            (time, op, offset, len),
            (TraceTime(4_112_000), Op::Write, TraceBytes(303_567 * 512), TraceBytes(3584))
        );
        assert!(matches!(parse("ASU,LBA,Size,Opcode,Timestamp"), Ok(Parsed::Skip)));
    }

    #[test]
    fn rejects_malformed_records() {
        for (line, want) in [
            ("0,1,512,x,0.1", "field `Opcode`: 'x' is not r or w"),
            ("0,1,512,r", "missing field `Timestamp`"),
            ("0,1,512,r,soon", "field `Timestamp`"),
            ("0,-5,512,r,0.1", "field `LBA`"),
            ("0,99999999999999999,512,r,0.1", "overflow"),
        ] {
            let err = parse(line).err().unwrap_or_else(|| panic!("{line} parsed"));
            assert!(err.contains(want), "{line}: {err}");
        }
    }
}
