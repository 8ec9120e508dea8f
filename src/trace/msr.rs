//! MSR Cambridge traces (SNIA IOTTA): CSV lines
//! `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`, with
//! timestamps in Windows 100 ns ticks and offsets and sizes in bytes.
//! `Type` is `Read` or `Write`. A header line naming the fields is skipped.

use super::{field, number, Op, Parsed, TraceBytes, TraceTime};

/// Fields of a record.
const FIELDS: usize = 7;

/// Whether `line` looks like an MSR record.
pub(super) fn looks_like(line: &str) -> bool {
    let f: Vec<&str> = line.split(',').collect();
    f.len() == FIELDS && kind(f[3]).is_some() && f[0].trim().parse::<u64>().is_ok()
}

fn kind(text: &str) -> Option<Op> {
    match text.trim() {
        t if t.eq_ignore_ascii_case("read") => Some(Op::Read),
        t if t.eq_ignore_ascii_case("write") => Some(Op::Write),
        _ => None,
    }
}

/// Parses one line.
pub(super) fn parse(line: &str) -> Result<Parsed, String> {
    let f: Vec<&str> = line.split(',').collect();
    if f[0].trim().eq_ignore_ascii_case("timestamp") {
        return Ok(Parsed::Skip);
    }
    if f.len() > FIELDS {
        return Err(format!("expected {FIELDS} comma-separated fields, found {}", f.len()));
    }
    let ticks: u64 = number(field(&f, 0, "Timestamp")?, "Timestamp")?;
    field(&f, 1, "Hostname")?;
    number::<u32>(field(&f, 2, "DiskNumber")?, "DiskNumber")?;
    let type_text = field(&f, 3, "Type")?;
    let op = kind(type_text).ok_or_else(|| format!("field `Type`: '{type_text}' is not Read or Write"))?;
    let offset = number(field(&f, 4, "Offset")?, "Offset")?;
    let len = number(field(&f, 5, "Size")?, "Size")?;
    number::<u64>(field(&f, 6, "ResponseTime")?, "ResponseTime")?;
    let time = ticks.checked_mul(100).ok_or_else(|| format!("field `Timestamp`: {ticks} ticks overflow"))?;
    Ok(Parsed::Record { time: TraceTime(time), op, offset: TraceBytes(offset), len: TraceBytes(len), content: None })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ticks_bytes_and_type() {
        let Ok(Parsed::Record { time, op, offset, len, content }) =
            parse("128166372003061629,hm,1,Write,3221225472,4096,1331")
        else {
            panic!("not a record")
        };
        assert_eq!(time, TraceTime(12_816_637_200_306_162_900));
        assert_eq!((op, offset, len, content), (Op::Write, TraceBytes(3_221_225_472), TraceBytes(4096), None));
        assert!(matches!(parse("Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"), Ok(Parsed::Skip)));
    }

    #[test]
    fn rejects_malformed_records() {
        for (line, want) in [
            ("1,hm,1,Erase,0,4096,1", "field `Type`: 'Erase' is not Read or Write"),
            ("1,hm,1,Read,0,4k,1", "field `Size`: '4k' is not a valid number"),
            ("1,hm,1,Read,0", "missing field `Size`"),
            ("1,hm,1,Read,0,1,1,9", "expected 7 comma-separated fields, found 8"),
            ("999999999999999999,hm,1,Read,0,1,1", "overflow"),
            ("-1,hm,1,Read,0,1,1", "field `Timestamp`"),
        ] {
            let err = parse(line).err().unwrap_or_else(|| panic!("{line} parsed"));
            assert!(err.contains(want), "{line}: {err}");
        }
    }
}
