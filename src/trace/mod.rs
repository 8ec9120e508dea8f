//! Block-trace input: streaming parsers for public I/O trace formats.
//!
//! Owns reading a trace (plain or gzip, told apart by the gzip magic
//! bytes), detecting its format from the first records, and turning each
//! line into a [`TraceRecord`] with its line number. One parser per format:
//! [`msr`] (MSR Cambridge CSV), [`blkparse`] (blkparse default text),
//! [`fiu`] (FIU dedup traces with an MD5 per block) and [`spc`] (SPC /
//! UMass CSV). It knows nothing of drives: [`replay`] maps records onto one.
//!
//! Reading is streaming: one line is held at a time (at most
//! [`MAX_LINE_BYTES`]), so memory does not grow with the trace. A malformed
//! line yields an error naming its line number and the iterator goes on
//! with the next line; a read error (a truncated gzip stream) ends it.

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::str::FromStr;

use serde::Serialize;
use thiserror::Error;

pub mod blkparse;
pub mod fiu;
pub mod msr;
pub mod replay;
pub mod spc;
pub mod target;

/// Longest line accepted; longer ones are malformed (no real trace comes
/// near it, and binary garbage without newlines must not be buffered whole).
pub const MAX_LINE_BYTES: usize = 64 << 10;

/// Most bytes of one overlong line skipped to reach the next line; past
/// them the input ends with an error.
const MAX_SKIPPED_BYTES: usize = 16 << 20;

/// Records looked at to detect the format.
const DETECT_LINES: usize = 16;

/// What can go wrong reading a trace.
#[derive(Debug, Error)]
pub enum TraceError {
    /// The file cannot be opened.
    #[error("{path}: {source}")]
    Open { path: PathBuf, source: io::Error },
    /// Reading failed (for gzip: a truncated or corrupt stream).
    #[error("line {line}: cannot read the trace: {source}")]
    Io { line: u64, source: io::Error },
    /// A line that is not a record of the format.
    #[error("line {line}: {reason}")]
    Parse { line: u64, reason: String },
    /// No line of the first ones looks like any known format.
    #[error("cannot detect the trace format from its first {lines} lines (use --format msr|blkparse|fiu|spc)")]
    Undetected { lines: u64 },
    /// Nothing to detect a format from.
    #[error("the trace is empty (no line but blanks and comments)")]
    Empty,
}

/// A trace file format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// MSR Cambridge (SNIA IOTTA) CSV.
    Msr,
    /// blkparse default text output.
    Blkparse,
    /// FIU dedup traces (homes, mail, web-vm).
    Fiu,
    /// SPC / UMass CSV.
    Spc,
}

impl Format {
    /// Every format, in detection order.
    pub const ALL: [Format; 4] = [Format::Msr, Format::Spc, Format::Fiu, Format::Blkparse];

    /// Whether `line` (trimmed, not a comment) looks like a record of this format.
    fn matches(self, line: &str) -> bool {
        match self {
            Format::Msr => msr::looks_like(line),
            Format::Spc => spc::looks_like(line),
            Format::Fiu => fiu::looks_like(line),
            Format::Blkparse => blkparse::looks_like(line),
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Format::Msr => "msr",
            Format::Blkparse => "blkparse",
            Format::Fiu => "fiu",
            Format::Spc => "spc",
        })
    }
}

/// What a host command does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Read.
    Read,
    /// Write.
    Write,
    /// Discard / TRIM.
    Trim,
}

/// The MD5 an FIU trace gives one block: its content identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ContentHash(pub [u8; 16]);

impl FromStr for ContentHash {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("'{}' is not a 32-digit hex MD5", s.chars().take(40).collect::<String>());
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(bad());
        }
        let mut out = [0u8; 16];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(ContentHash(out))
    }
}

/// A byte address or length as the trace gives it (not necessarily sector-aligned).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TraceBytes(pub u64);

/// A trace timestamp in nanoseconds from the format's own origin.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TraceTime(pub u64);

/// One request of a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// Line number in the (decompressed) file, from 1.
    pub line: u64,
    /// When the request was issued (or completed, for blkparse `C` records).
    pub time: TraceTime,
    /// What it does.
    pub op: Op,
    /// First byte.
    pub offset: TraceBytes,
    /// Bytes.
    pub len: TraceBytes,
    /// Content identity of a written block (FIU traces only).
    pub content: Option<ContentHash>,
}

/// blkparse events kept: the request as dispatched to the device or as completed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BlkAction {
    /// `D` records (issued to the driver).
    #[default]
    D,
    /// `C` records (completed).
    C,
}

/// Bytes one FIU MD5 stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FiuBlock {
    /// One MD5 per 512-byte sector (the homes traces).
    B512,
    /// One MD5 per 4 KiB block (mail, web-vm).
    B4096,
}

impl FiuBlock {
    /// Sectors of 512 bytes in one block.
    pub fn sectors(self) -> u64 {
        match self {
            FiuBlock::B512 => 1,
            FiuBlock::B4096 => 8,
        }
    }

    /// The block of `bytes` bytes, if FIU traces use it.
    pub fn from_bytes(bytes: u64) -> Option<Self> {
        match bytes {
            512 => Some(FiuBlock::B512),
            4096 => Some(FiuBlock::B4096),
            _ => None,
        }
    }
}

/// Format-specific choices.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Which blkparse records become requests.
    pub blkparse_action: BlkAction,
    /// FIU block size; `None` detects it from the first record's size.
    pub fiu_block: Option<FiuBlock>,
}

/// What one line turned out to be.
enum Parsed {
    /// A request.
    Record { time: TraceTime, op: Op, offset: TraceBytes, len: TraceBytes, content: Option<ContentHash> },
    /// A valid line that is no request (a header, another blkparse action).
    Skip,
    /// The records are over (blkparse's summary section follows).
    End,
}

/// The per-format line parser.
enum LineParser {
    Msr,
    Spc,
    Fiu(fiu::Parser),
    Blkparse(BlkAction),
}

impl LineParser {
    fn new(format: Format, options: ParseOptions) -> Self {
        match format {
            Format::Msr => LineParser::Msr,
            Format::Spc => LineParser::Spc,
            Format::Fiu => LineParser::Fiu(fiu::Parser::new(options.fiu_block)),
            Format::Blkparse => LineParser::Blkparse(options.blkparse_action),
        }
    }

    fn parse(&mut self, line: &str) -> Result<Parsed, String> {
        match self {
            LineParser::Msr => msr::parse(line),
            LineParser::Spc => spc::parse(line),
            LineParser::Fiu(p) => p.parse(line),
            LineParser::Blkparse(action) => blkparse::parse(line, *action),
        }
    }
}

/// One raw line, or why there is none.
enum RawLine {
    Text(Vec<u8>),
    TooLong,
    Eof,
}

/// A streaming iterator of [`TraceRecord`]s over a plain or gzip input.
pub struct TraceReader {
    input: Box<dyn BufRead + Send>,
    format: Format,
    parser: LineParser,
    /// Lines read so far.
    line: u64,
    /// Lines read during detection, replayed first: `(line number, raw)`.
    pending: VecDeque<(u64, Vec<u8>)>,
    /// A line other than a blank or a comment was read.
    content: bool,
    done: bool,
}

impl TraceReader {
    /// Opens `path`; see [`TraceReader::new`].
    pub fn open(path: &Path, format: Option<Format>, options: ParseOptions) -> Result<Self, TraceError> {
        let file = std::fs::File::open(path).map_err(|source| TraceError::Open { path: path.into(), source })?;
        TraceReader::new(file, format, options)
    }

    /// Reads a trace from `input` (gzip is recognised by its magic bytes).
    /// Without `format`, the first lines that look like a known format decide
    /// it; a read error during detection is returned here.
    pub fn new(
        input: impl Read + Send + 'static,
        format: Option<Format>,
        options: ParseOptions,
    ) -> Result<Self, TraceError> {
        let mut plain = BufReader::new(input);
        let magic = plain.fill_buf().map_err(|source| TraceError::Io { line: 1, source })?;
        let input: Box<dyn BufRead + Send> = if magic.starts_with(&[0x1f, 0x8b]) {
            Box::new(BufReader::new(flate2::bufread::MultiGzDecoder::new(plain)))
        } else {
            Box::new(plain)
        };
        let mut reader = TraceReader {
            input,
            format: format.unwrap_or(Format::Msr),
            parser: LineParser::Msr,
            line: 0,
            pending: VecDeque::new(),
            content: false,
            done: false,
        };
        let format = match format {
            Some(f) => f,
            None => reader.detect()?,
        };
        reader.format = format;
        reader.parser = LineParser::new(format, options);
        Ok(reader)
    }

    /// The format being parsed.
    pub fn format(&self) -> Format {
        self.format
    }

    /// Reads lines until one looks like a known format, keeping them to replay.
    fn detect(&mut self) -> Result<Format, TraceError> {
        let mut looked = 0;
        while looked < DETECT_LINES {
            let line = self.line + 1;
            let raw = match self.read_raw().map_err(|source| TraceError::Io { line, source })? {
                RawLine::Eof => break,
                RawLine::TooLong => Vec::new(),
                RawLine::Text(t) => t,
            };
            // Blank and comment lines do not count; every other line does,
            // text or not, so a binary file fails after DETECT_LINES lines
            // instead of being read whole.
            let text = std::str::from_utf8(&raw).ok().map(str::trim);
            let skip = text.is_some_and(|t| t.is_empty() || t.starts_with('#'));
            let found = text.and_then(|t| Format::ALL.into_iter().find(|f| f.matches(t)));
            self.pending.push_back((line, raw));
            match found {
                Some(format) => return Ok(format),
                None if !skip => looked += 1,
                None => {}
            }
        }
        if looked == 0 {
            return Err(TraceError::Empty);
        }
        Err(TraceError::Undetected { lines: self.line })
    }

    /// The next line, without its newline, bounded by [`MAX_LINE_BYTES`].
    fn read_raw(&mut self) -> io::Result<RawLine> {
        let mut buf = Vec::new();
        let n = (&mut self.input).take(MAX_LINE_BYTES as u64 + 1).read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(RawLine::Eof);
        }
        if buf.last() == Some(&b'\n') {
            buf.pop();
        } else if buf.len() > MAX_LINE_BYTES {
            // Drop the rest of the overlong line, up to a bound: a stream
            // without line ends (`/dev/zero`) is not a trace.
            let mut dropped = buf.len();
            loop {
                let avail = self.input.fill_buf()?;
                if avail.is_empty() {
                    break;
                }
                match avail.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        self.input.consume(i + 1);
                        break;
                    }
                    None => {
                        let len = avail.len();
                        self.input.consume(len);
                        dropped += len;
                    }
                }
                if dropped > MAX_SKIPPED_BYTES {
                    let why = format!("no line end in {} MiB: not a text trace", MAX_SKIPPED_BYTES >> 20);
                    return Err(io::Error::new(io::ErrorKind::InvalidData, why));
                }
            }
            self.line += 1;
            return Ok(RawLine::TooLong);
        }
        self.line += 1;
        Ok(RawLine::Text(buf))
    }
}

impl Iterator for TraceReader {
    type Item = Result<TraceRecord, TraceError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            let (line, raw) = match self.pending.pop_front() {
                Some(p) => p,
                None => match self.read_raw() {
                    Ok(RawLine::Text(t)) => (self.line, t),
                    Ok(RawLine::TooLong) => {
                        let reason = format!("line longer than {MAX_LINE_BYTES} bytes");
                        return Some(Err(TraceError::Parse { line: self.line, reason }));
                    }
                    Ok(RawLine::Eof) => {
                        self.done = true;
                        // Nothing but blank and comment lines, in a format given.
                        return (!self.content).then_some(Err(TraceError::Empty));
                    }
                    Err(source) => {
                        self.done = true;
                        return Some(Err(TraceError::Io { line: self.line + 1, source }));
                    }
                },
            };
            let Ok(text) = std::str::from_utf8(&raw) else {
                return Some(Err(TraceError::Parse { line, reason: "not UTF-8 text".into() }));
            };
            let text = text.trim();
            if text.is_empty() || text.starts_with('#') {
                continue;
            }
            self.content = true;
            match self.parser.parse(text) {
                Ok(Parsed::Record { time, op, offset, len, content }) => {
                    return Some(Ok(TraceRecord { line, time, op, offset, len, content }))
                }
                Ok(Parsed::Skip) => {}
                Ok(Parsed::End) => self.done = true,
                Err(reason) => return Some(Err(TraceError::Parse { line, reason })),
            }
        }
        None
    }
}

/// Field `i` (named `name` in errors) of a split line.
fn field<'a>(fields: &[&'a str], i: usize, name: &str) -> Result<&'a str, String> {
    fields.get(i).map(|f| f.trim()).ok_or_else(|| format!("missing field `{name}` (field {} of the record)", i + 1))
}

/// A number in field `name`.
fn number<T: FromStr>(text: &str, name: &str) -> Result<T, String> {
    text.parse().map_err(|_| format!("field `{name}`: '{}' is not a valid number", clip(text)))
}

/// At most 40 characters of `text`, for error messages.
fn clip(text: &str) -> String {
    text.chars().take(40).collect()
}

/// Seconds with up to nine decimals (`12.000345678`) as nanoseconds.
fn seconds_to_ns(text: &str, name: &str) -> Result<TraceTime, String> {
    let bad = || format!("field `{name}`: '{}' is not a time in seconds", clip(text));
    let (secs, frac) = text.split_once('.').unwrap_or((text, ""));
    if secs.is_empty() && frac.is_empty() {
        return Err(bad());
    }
    let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(secs) || !all_digits(frac) {
        return Err(bad());
    }
    let whole: u64 = if secs.is_empty() { 0 } else { secs.parse().map_err(|_| bad())? };
    let mut nanos = 0u64;
    for (i, b) in frac.bytes().take(9).enumerate() {
        nanos += u64::from(b - b'0') * 10u64.pow(8 - i as u32);
    }
    whole.checked_mul(1_000_000_000).and_then(|n| n.checked_add(nanos)).map(TraceTime).ok_or_else(bad)
}

/// `sectors` 512-byte sectors as bytes.
fn sectors_to_bytes(sectors: u64, name: &str) -> Result<TraceBytes, String> {
    sectors.checked_mul(512).map(TraceBytes).ok_or_else(|| format!("field `{name}`: {sectors} sectors overflow"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(text: &str, format: Option<Format>) -> Vec<Result<TraceRecord, String>> {
        let reader = TraceReader::new(io::Cursor::new(text.as_bytes().to_vec()), format, ParseOptions::default())
            .map_err(|e| e.to_string())
            .unwrap();
        reader.map(|r| r.map_err(|e| e.to_string())).collect()
    }

    #[test]
    fn detects_each_format_from_its_first_records() {
        let cases = [
            ("128166372003061629,hm,1,Read,3221225472,4096,1331\n", Format::Msr),
            ("0,303567,3584,w,0.000000\n", Format::Spc),
            ("89966527019504 4318 nfsd 81006256 8 W 6 0 a4b8c6e4f7d5e1f2a3b4c5d6e7f80912\n", Format::Fiu),
            ("  8,0    3        1     0.000000000   697  D  WS 223490 + 8 [kjournald]\n", Format::Blkparse),
        ];
        for (text, want) in cases {
            let text = format!("# a comment\n\n{text}");
            let r = TraceReader::new(io::Cursor::new(text.into_bytes()), None, ParseOptions::default()).unwrap();
            assert_eq!(r.format(), want);
        }
        let err = TraceReader::new(io::Cursor::new(b"hello\nworld\n".to_vec()), None, ParseOptions::default());
        assert!(matches!(err, Err(TraceError::Undetected { lines: 2 })));
        let err = TraceReader::new(io::Cursor::new(Vec::new()), None, ParseOptions::default());
        assert!(matches!(err, Err(TraceError::Empty)));
        // With the format given, the stream says so instead of ending at once.
        for text in ["", "# a comment\n\n"] {
            let input = io::Cursor::new(text.as_bytes().to_vec());
            let mut r = TraceReader::new(input, Some(Format::Msr), ParseOptions::default()).unwrap();
            assert!(matches!(r.next(), Some(Err(TraceError::Empty))), "{text:?}");
            assert!(r.next().is_none());
        }
    }

    #[test]
    fn bad_lines_name_their_line_and_do_not_stop_the_stream() {
        let text = "1,h,0,Write,0,4096,1\n2,h,0,Write,zero,4096,1\n3,h,0,Write\n\u{0}\u{1}\n4,h,0,Read,0,512,1\n";
        let got = records(text, Some(Format::Msr));
        assert_eq!(got.len(), 5);
        assert!(got[0].is_ok());
        assert_eq!(got[1].as_ref().unwrap_err(), "line 2: field `Offset`: 'zero' is not a valid number");
        assert!(got[2].as_ref().unwrap_err().starts_with("line 3: missing field `Offset`"), "{:?}", got[2]);
        assert!(got[3].as_ref().unwrap_err().starts_with("line 4:"));
        assert_eq!(got[4].as_ref().unwrap().line, 5);
    }

    #[test]
    fn overlong_lines_are_errors_and_reading_resumes_after_them() {
        let mut text = "x".repeat(MAX_LINE_BYTES + 10);
        text += "\n1,h,0,Write,0,4096,1\n";
        let got = records(&text, Some(Format::Msr));
        assert_eq!(got.len(), 2);
        assert!(got[0].as_ref().unwrap_err().contains("longer than"));
        assert_eq!(got[1].as_ref().unwrap().line, 2);
    }

    #[test]
    fn a_stream_without_line_ends_ends_the_trace_with_an_error() {
        let endless = io::Cursor::new(b"1,h,0,Write,0,4096,1\n".to_vec()).chain(io::repeat(0));
        let got: Vec<_> = TraceReader::new(endless, None, ParseOptions::default()).unwrap().collect();
        assert_eq!(got.len(), 2, "the record, then the error; the iterator ends");
        assert_eq!(got[0].as_ref().unwrap().line, 1);
        let e = got[1].as_ref().unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("no line end in 16 MiB: not a text trace"), "{e}");
        // Nothing but the stream: detection fails the same way.
        let e = TraceReader::new(io::repeat(b'x'), None, ParseOptions::default()).err().unwrap();
        assert!(e.to_string().contains("no line end in 16 MiB"), "{e}");
    }

    #[test]
    fn seconds_parse_exactly() {
        assert_eq!(seconds_to_ns("12.000345678", "t"), Ok(TraceTime(12_000_345_678)));
        assert_eq!(seconds_to_ns("0.5", "t"), Ok(TraceTime(500_000_000)));
        assert_eq!(seconds_to_ns("7", "t"), Ok(TraceTime(7_000_000_000)));
        assert!(seconds_to_ns("-1.0", "t").is_err());
        assert!(seconds_to_ns(".", "t").is_err());
        assert!(seconds_to_ns("1e3", "t").is_err());
        assert!(seconds_to_ns("99999999999999999999.0", "t").is_err());
    }

    #[test]
    fn md5_hex_parses_and_rejects_junk() {
        let h: ContentHash = "000102030405060708090a0b0c0d0eff".parse().unwrap();
        assert_eq!(h.0[15], 0xff);
        assert!("000102030405060708090a0b0c0d0e".parse::<ContentHash>().is_err());
        assert!("zz0102030405060708090a0b0c0d0eff".parse::<ContentHash>().is_err());
        assert!("é00102030405060708090a0b0c0d0e".parse::<ContentHash>().is_err());
        assert!("+00102030405060708090a0b0c0d0ef".parse::<ContentHash>().is_err());
    }
}
