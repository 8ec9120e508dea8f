//! FIU dedup traces (homes, mail, web-vm): whitespace-separated lines
//! `ts pid process lba size op major minor md5`, with the timestamp in
//! nanoseconds, `lba` and `size` in 512-byte sectors, `op` `W` or `R`, and
//! one MD5 per block: 4 KiB for mail and web-vm, 512 bytes for homes. Each
//! line is one block, so `size` must equal the block; the block is given
//! or taken from the first record's size.

use super::{field, number, sectors_to_bytes, ContentHash, FiuBlock, Op, Parsed, TraceTime};

/// Fields of a record.
const FIELDS: usize = 9;

/// Whether `line` looks like an FIU record.
pub(super) fn looks_like(line: &str) -> bool {
    let f: Vec<&str> = line.split_whitespace().collect();
    f.len() == FIELDS && kind(f[5]).is_some() && f[8].parse::<ContentHash>().is_ok()
}

fn kind(text: &str) -> Option<Op> {
    match text {
        "R" | "r" => Some(Op::Read),
        "W" | "w" => Some(Op::Write),
        _ => None,
    }
}

/// Parses FIU lines, fixing the block size at the first record.
pub(super) struct Parser {
    block: Option<FiuBlock>,
}

impl Parser {
    /// A parser for `block`, or detecting it when `None`.
    pub(super) fn new(block: Option<FiuBlock>) -> Self {
        Parser { block }
    }

    /// Parses one line.
    pub(super) fn parse(&mut self, line: &str) -> Result<Parsed, String> {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() > FIELDS {
            return Err(format!("expected {FIELDS} whitespace-separated fields, found {}", f.len()));
        }
        let time = TraceTime(number(field(&f, 0, "ts")?, "ts")?);
        number::<u32>(field(&f, 1, "pid")?, "pid")?;
        field(&f, 2, "process")?;
        let lba: u64 = number(field(&f, 3, "lba")?, "lba")?;
        let size: u64 = number(field(&f, 4, "size")?, "size")?;
        let op_text = field(&f, 5, "op")?;
        let op = kind(op_text).ok_or_else(|| format!("field `op`: '{op_text}' is not W or R"))?;
        number::<u32>(field(&f, 6, "major")?, "major")?;
        number::<u32>(field(&f, 7, "minor")?, "minor")?;
        let hash: ContentHash = field(&f, 8, "md5")?.parse().map_err(|e| format!("field `md5`: {e}"))?;
        let block = match self.block {
            Some(b) => b,
            None => {
                let b = FiuBlock::from_bytes(size.saturating_mul(512))
                    .ok_or_else(|| format!("field `size`: {size} sectors is no FIU block (1 or 8; see --fiu-block)"))?;
                self.block = Some(b);
                b
            }
        };
        if size != block.sectors() {
            return Err(format!(
                "field `size`: {size} sectors, but each line is one {}-byte block (see --fiu-block)",
                block.sectors() * 512
            ));
        }
        Ok(Parsed::Record {
            time,
            op,
            offset: sectors_to_bytes(lba, "lba")?,
            len: sectors_to_bytes(size, "size")?,
            content: (op == Op::Write).then_some(hash),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TraceBytes;

    const LINE: &str = "89966527019504 4318 nfsd 81006256 8 W 6 0 a4b8c6e4f7d5e1f2a3b4c5d6e7f80912";

    #[test]
    fn parses_sectors_and_hash_and_detects_the_block() {
        let mut p = Parser::new(None);
        let Ok(Parsed::Record { time, op, offset, len, content }) = p.parse(LINE) else { panic!("not a record") };
        assert_eq!(
            (time, op, offset, len),
            (TraceTime(89_966_527_019_504), Op::Write, TraceBytes(81_006_256 * 512), TraceBytes(4096))
        );
        assert_eq!(content.unwrap().0[0], 0xa4);
        assert_eq!(p.block, Some(FiuBlock::B4096));
        let err = p.parse(&LINE.replace(" 8 W", " 1 W")).err().unwrap();
        assert!(err.contains("one 4096-byte block"), "{err}");
        let Ok(Parsed::Record { content, .. }) = p.parse(&LINE.replace(" W ", " R ")) else { panic!() };
        assert_eq!(content, None, "reads carry no content identity");
    }

    #[test]
    fn rejects_malformed_records() {
        for (line, want) in [
            (LINE.replace(" W ", " X "), "field `op`: 'X' is not W or R"),
            (LINE.replace("a4b8", "a4"), "field `md5`"),
            (LINE.replace(" 8 W", " 3 W"), "3 sectors is no FIU block"),
            (LINE.rsplit_once(' ').unwrap().0.to_string(), "missing field `md5`"),
            (LINE.replace("81006256", "8x"), "field `lba`"),
        ] {
            let err = Parser::new(None).parse(&line).err().unwrap_or_else(|| panic!("{line} parsed"));
            assert!(err.contains(want), "{line}: {err}");
        }
    }
}
