//! NBD wire format: magic numbers, flags, option and command codes, and
//! the parsing of what a client sends, as the NBD project's `proto.md`
//! describes it (fixed newstyle handshake, structured replies,
//! `base:allocation`). Owns bytes on the wire only; what a command does
//! to the drive is [`super::server`]'s business.
//!
//! Every parser takes untrusted input and returns [`ProtocolError`]
//! rather than panicking.

use std::io::{self, Read, Write};

use thiserror::Error;

/// `NBDMAGIC`: the first 8 bytes the server sends.
pub const INIT_MAGIC: u64 = 0x4e42_444d_4147_4943;
/// `IHAVEOPT`: newstyle negotiation, and the prefix of every option.
pub const OPTS_MAGIC: u64 = 0x4948_4156_454f_5054;
/// Prefix of every option reply.
pub const REP_MAGIC: u64 = 0x0003_e889_0455_65a9;
/// Prefix of every transmission request.
pub const REQUEST_MAGIC: u32 = 0x2560_9513;
/// Prefix of a simple reply.
pub const SIMPLE_REPLY_MAGIC: u32 = 0x6744_6698;
/// Prefix of a structured reply chunk.
pub const STRUCTURED_REPLY_MAGIC: u32 = 0x668e_33ef;

/// Handshake flag: the server speaks fixed newstyle.
pub const FLAG_FIXED_NEWSTYLE: u16 = 1 << 0;
/// Handshake flag: the server may omit the 124 zero bytes.
pub const FLAG_NO_ZEROES: u16 = 1 << 1;
/// Client flag: the client speaks fixed newstyle.
pub const FLAG_C_FIXED_NEWSTYLE: u32 = 1 << 0;
/// Client flag: no 124 zero bytes after `NBD_OPT_EXPORT_NAME`.
pub const FLAG_C_NO_ZEROES: u32 = 1 << 1;

/// Transmission flag: always set.
pub const TF_HAS_FLAGS: u16 = 1 << 0;
/// Transmission flag: `NBD_CMD_FLUSH` is understood.
pub const TF_SEND_FLUSH: u16 = 1 << 2;
/// Transmission flag: `NBD_CMD_FLAG_FUA` is understood.
pub const TF_SEND_FUA: u16 = 1 << 3;
/// Transmission flag: `NBD_CMD_TRIM` is understood.
pub const TF_SEND_TRIM: u16 = 1 << 5;
/// Transmission flag: `NBD_CMD_WRITE_ZEROES` is understood.
pub const TF_SEND_WRITE_ZEROES: u16 = 1 << 6;
/// Transmission flag: `NBD_CMD_FLAG_DF` is honoured on reads.
pub const TF_SEND_DF: u16 = 1 << 7;
/// Transmission flag: every connection sees the same data at once.
pub const TF_CAN_MULTI_CONN: u16 = 1 << 8;
/// Transmission flag: `NBD_CMD_FLAG_FAST_ZERO` is understood.
pub const TF_SEND_FAST_ZERO: u16 = 1 << 11;

/// Option: choose an export and start transmission (no error reply possible).
pub const OPT_EXPORT_NAME: u32 = 1;
/// Option: end negotiation.
pub const OPT_ABORT: u32 = 2;
/// Option: list exports.
pub const OPT_LIST: u32 = 3;
/// Option: describe one export.
pub const OPT_INFO: u32 = 6;
/// Option: describe one export and start transmission.
pub const OPT_GO: u32 = 7;
/// Option: use structured replies.
pub const OPT_STRUCTURED_REPLY: u32 = 8;
/// Option: list metadata contexts.
pub const OPT_LIST_META_CONTEXT: u32 = 9;
/// Option: select metadata contexts for `NBD_CMD_BLOCK_STATUS`.
pub const OPT_SET_META_CONTEXT: u32 = 10;

/// Option reply: done, success.
pub const REP_ACK: u32 = 1;
/// Option reply: one export of a list.
pub const REP_SERVER: u32 = 2;
/// Option reply: one piece of export information.
pub const REP_INFO: u32 = 3;
/// Option reply: one metadata context.
pub const REP_META_CONTEXT: u32 = 4;
/// Option error: unknown option.
pub const REP_ERR_UNSUP: u32 = (1 << 31) + 1;
/// Option error: the option is not allowed by server policy (here: the
/// connection limit is reached).
pub const REP_ERR_POLICY: u32 = (1 << 31) + 2;
/// Option error: syntactically or semantically invalid option.
pub const REP_ERR_INVALID: u32 = (1 << 31) + 3;
/// Option error: no such export.
pub const REP_ERR_UNKNOWN: u32 = (1 << 31) + 6;
/// Option error: the server is shutting down.
pub const REP_ERR_SHUTDOWN: u32 = (1 << 31) + 7;

/// `NBD_REP_INFO` type: size and transmission flags.
pub const INFO_EXPORT: u16 = 0;
/// `NBD_REP_INFO` type: canonical export name.
pub const INFO_NAME: u16 = 1;
/// `NBD_REP_INFO` type: human-readable description.
pub const INFO_DESCRIPTION: u16 = 2;
/// `NBD_REP_INFO` type: minimum, preferred and maximum block sizes.
pub const INFO_BLOCK_SIZE: u16 = 3;

/// Command flag: reply only once the data is persistent.
pub const CMD_FLAG_FUA: u16 = 1 << 0;
/// Command flag (`WRITE_ZEROES`): do not create a hole.
pub const CMD_FLAG_NO_HOLE: u16 = 1 << 1;
/// Command flag (`READ`): send at most one content chunk.
pub const CMD_FLAG_DF: u16 = 1 << 2;
/// Command flag (`BLOCK_STATUS`): one extent is enough.
pub const CMD_FLAG_REQ_ONE: u16 = 1 << 3;
/// Command flag (`WRITE_ZEROES`): fail with `ENOTSUP` unless faster than a write.
pub const CMD_FLAG_FAST_ZERO: u16 = 1 << 4;

/// Structured reply flag: the last chunk of a reply.
pub const REPLY_FLAG_DONE: u16 = 1 << 0;
/// Structured reply type: data at an offset.
pub const REPLY_TYPE_OFFSET_DATA: u16 = 1;
/// Structured reply type: zeros at an offset.
pub const REPLY_TYPE_OFFSET_HOLE: u16 = 2;
/// Structured reply type: block status descriptors.
pub const REPLY_TYPE_BLOCK_STATUS: u16 = 5;
/// Structured reply type: an error with a message.
pub const REPLY_TYPE_ERROR: u16 = (1 << 15) + 1;

/// `base:allocation` state: not allocated.
pub const STATE_HOLE: u32 = 1 << 0;
/// `base:allocation` state: reads as zeros.
pub const STATE_ZERO: u32 = 1 << 1;

/// The one metadata context this server knows.
pub const BASE_ALLOCATION: &str = "base:allocation";

/// Bytes of a request header.
pub const REQUEST_HEADER_BYTES: usize = 28;

/// Longest option payload accepted; longer ones get a hard disconnect
/// (the longest legal option, a meta-context query, is far shorter).
pub const MAX_OPTION_BYTES: u32 = 64 * 1024;

/// An NBD error value (the protocol's restricted errno set).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Errno(pub u32);

impl Errno {
    /// Input/output error.
    pub const EIO: Errno = Errno(5);
    /// Invalid argument.
    pub const EINVAL: Errno = Errno(22);
    /// No space left on device.
    pub const ENOSPC: Errno = Errno(28);
    /// Value too large.
    pub const EOVERFLOW: Errno = Errno(75);
    /// Operation not supported.
    pub const ENOTSUP: Errno = Errno(95);
    /// Server is shutting down.
    pub const ESHUTDOWN: Errno = Errno(108);
}

/// A transmission command.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Command {
    /// `NBD_CMD_READ`.
    Read,
    /// `NBD_CMD_WRITE` (a payload of `length` bytes follows).
    Write,
    /// `NBD_CMD_DISC`.
    Disconnect,
    /// `NBD_CMD_FLUSH`.
    Flush,
    /// `NBD_CMD_TRIM`.
    Trim,
    /// `NBD_CMD_WRITE_ZEROES`.
    WriteZeroes,
    /// `NBD_CMD_BLOCK_STATUS`.
    BlockStatus,
    /// Any other type (answered with `EINVAL`).
    Unknown(u16),
}

impl Command {
    fn from_wire(t: u16) -> Self {
        match t {
            0 => Command::Read,
            1 => Command::Write,
            2 => Command::Disconnect,
            3 => Command::Flush,
            4 => Command::Trim,
            6 => Command::WriteZeroes,
            7 => Command::BlockStatus,
            other => Command::Unknown(other),
        }
    }

    /// Command flags this command accepts.
    pub fn allowed_flags(self, structured: bool) -> u16 {
        let df = if structured { CMD_FLAG_DF } else { 0 };
        CMD_FLAG_FUA
            | match self {
                Command::Read => df,
                Command::WriteZeroes => CMD_FLAG_NO_HOLE | CMD_FLAG_FAST_ZERO,
                Command::BlockStatus => CMD_FLAG_REQ_ONE,
                _ => 0,
            }
    }
}

/// A transmission request header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    /// Command flags as sent.
    pub flags: u16,
    /// What to do.
    pub command: Command,
    /// Opaque client handle, echoed in the reply.
    pub cookie: u64,
    /// Byte offset into the export.
    pub offset: u64,
    /// Byte length.
    pub length: u32,
}

impl Request {
    /// Parses a 28-byte request header.
    pub fn parse(b: &[u8; REQUEST_HEADER_BYTES]) -> Result<Self, ProtocolError> {
        let magic = be32(&b[0..4]);
        if magic != REQUEST_MAGIC {
            return Err(ProtocolError::BadMagic { what: "request", got: u64::from(magic) });
        }
        Ok(Request {
            flags: be16(&b[4..6]),
            command: Command::from_wire(be16(&b[6..8])),
            cookie: be64(&b[8..16]),
            offset: be64(&b[16..24]),
            length: be32(&b[24..28]),
        })
    }
}

/// A broken protocol rule or a failed socket: the connection ends.
#[derive(Debug, Error)]
pub enum ProtocolError {
    /// The socket failed or closed.
    #[error("connection: {0}")]
    Io(#[from] io::Error),
    /// A magic number was wrong, so the stream cannot be followed.
    #[error("bad {what} magic {got:#x}")]
    BadMagic { what: &'static str, got: u64 },
    /// The client sent flags it must not send.
    #[error("client flags {0:#x} are not ones this server offered")]
    ClientFlags(u32),
    /// An option longer than [`MAX_OPTION_BYTES`].
    #[error("option {option} carries {len} bytes (limit {MAX_OPTION_BYTES})")]
    OptionTooLong { option: u32, len: u32 },
    /// `NBD_OPT_EXPORT_NAME` for an export that does not exist (the
    /// protocol has no error reply for it).
    #[error("no export named {0:?}")]
    UnknownExport(String),
}

/// Why an option's payload is invalid (answered with `NBD_REP_ERR_INVALID`).
#[derive(Debug, Error, PartialEq, Eq)]
#[error("{0}")]
pub struct InvalidOption(pub &'static str);

/// A cursor over an option payload that never reads past its end.
pub struct Payload<'a> {
    data: &'a [u8],
}

impl<'a> Payload<'a> {
    /// A cursor at the start of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Payload { data }
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], InvalidOption> {
        if self.data.len() < n {
            return Err(InvalidOption(what));
        }
        let (head, rest) = self.data.split_at(n);
        self.data = rest;
        Ok(head)
    }

    /// A big-endian u16.
    pub fn u16(&mut self, what: &'static str) -> Result<u16, InvalidOption> {
        self.take(2, what).map(be16)
    }

    /// A big-endian u32.
    pub fn u32(&mut self, what: &'static str) -> Result<u32, InvalidOption> {
        self.take(4, what).map(be32)
    }

    /// A string whose u32 length comes first.
    pub fn string(&mut self, what: &'static str) -> Result<&'a [u8], InvalidOption> {
        let len = self.u32(what)? as usize;
        self.take(len, what)
    }

    /// Fails unless every byte was consumed.
    pub fn finish(&self, what: &'static str) -> Result<(), InvalidOption> {
        if self.data.is_empty() {
            Ok(())
        } else {
            Err(InvalidOption(what))
        }
    }
}

/// The payload of `NBD_OPT_INFO` / `NBD_OPT_GO`.
#[derive(Debug, PartialEq, Eq)]
pub struct InfoRequest<'a> {
    /// Export name.
    pub name: &'a [u8],
    /// Information types asked for.
    pub requests: Vec<u16>,
}

impl<'a> InfoRequest<'a> {
    /// Parses the option payload.
    pub fn parse(data: &'a [u8]) -> Result<Self, InvalidOption> {
        let mut p = Payload::new(data);
        let name = p.string("export name runs past the option")?;
        let n = p.u16("missing information request count")?;
        let requests = (0..n).map(|_| p.u16("information requests run past the option")).collect::<Result<_, _>>()?;
        p.finish("trailing bytes after the information requests")?;
        Ok(InfoRequest { name, requests })
    }
}

/// The payload of `NBD_OPT_LIST_META_CONTEXT` / `NBD_OPT_SET_META_CONTEXT`.
#[derive(Debug, PartialEq, Eq)]
pub struct MetaRequest<'a> {
    /// Export name.
    pub name: &'a [u8],
    /// Queries, each starting with a namespace.
    pub queries: Vec<&'a [u8]>,
}

impl<'a> MetaRequest<'a> {
    /// Parses the option payload.
    pub fn parse(data: &'a [u8]) -> Result<Self, InvalidOption> {
        let mut p = Payload::new(data);
        let name = p.string("export name runs past the option")?;
        let n = p.u32("missing query count")?;
        // Each query needs at least its 4-byte length: bound the count first.
        if n as usize > data.len() / 4 {
            return Err(InvalidOption("more queries than the option can hold"));
        }
        let queries = (0..n).map(|_| p.string("query runs past the option")).collect::<Result<_, _>>()?;
        p.finish("trailing bytes after the queries")?;
        Ok(MetaRequest { name, queries })
    }
}

/// Writes an option reply header and its payload.
pub fn write_option_reply(w: &mut impl Write, option: u32, reply: u32, data: &[u8]) -> io::Result<()> {
    let len = u32::try_from(data.len()).map_err(|_| io::Error::other("option reply too long"))?;
    let mut head = [0u8; 20];
    head[0..8].copy_from_slice(&REP_MAGIC.to_be_bytes());
    head[8..12].copy_from_slice(&option.to_be_bytes());
    head[12..16].copy_from_slice(&reply.to_be_bytes());
    head[16..20].copy_from_slice(&len.to_be_bytes());
    w.write_all(&head)?;
    w.write_all(data)
}

/// Writes a simple reply header (a read's data follows separately).
pub fn write_simple_reply(w: &mut impl Write, error: Errno, cookie: u64) -> io::Result<()> {
    let mut head = [0u8; 16];
    head[0..4].copy_from_slice(&SIMPLE_REPLY_MAGIC.to_be_bytes());
    head[4..8].copy_from_slice(&error.0.to_be_bytes());
    head[8..16].copy_from_slice(&cookie.to_be_bytes());
    w.write_all(&head)
}

/// Writes a structured reply chunk header for a payload of `len` bytes.
pub fn write_chunk_header(w: &mut impl Write, flags: u16, kind: u16, cookie: u64, len: u32) -> io::Result<()> {
    let mut head = [0u8; 20];
    head[0..4].copy_from_slice(&STRUCTURED_REPLY_MAGIC.to_be_bytes());
    head[4..6].copy_from_slice(&flags.to_be_bytes());
    head[6..8].copy_from_slice(&kind.to_be_bytes());
    head[8..16].copy_from_slice(&cookie.to_be_bytes());
    head[16..20].copy_from_slice(&len.to_be_bytes());
    w.write_all(&head)
}

/// Writes a final structured error chunk with a message.
pub fn write_structured_error(w: &mut impl Write, cookie: u64, error: Errno, message: &str) -> io::Result<()> {
    // Messages are at most 4096 bytes by the protocol's string rule.
    let mut end = message.len().min(4096);
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    let msg = &message.as_bytes()[..end];
    write_chunk_header(w, REPLY_FLAG_DONE, REPLY_TYPE_ERROR, cookie, 6 + msg.len() as u32)?;
    w.write_all(&error.0.to_be_bytes())?;
    w.write_all(&(msg.len() as u16).to_be_bytes())?;
    w.write_all(msg)
}

/// Reads a big-endian u32.
pub fn read_u32(r: &mut impl Read) -> io::Result<u32> {
    let mut b = [0u8; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_be_bytes(b))
}

/// Reads a big-endian u64.
pub fn read_u64(r: &mut impl Read) -> io::Result<u64> {
    let mut b = [0u8; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_be_bytes(b))
}

fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be64(b: &[u8]) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[..8]);
    u64::from_be_bytes(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_header_round_trips_and_bad_magic_is_an_error() {
        let mut b = [0u8; REQUEST_HEADER_BYTES];
        b[0..4].copy_from_slice(&REQUEST_MAGIC.to_be_bytes());
        b[4..6].copy_from_slice(&CMD_FLAG_FUA.to_be_bytes());
        b[6..8].copy_from_slice(&1u16.to_be_bytes());
        b[8..16].copy_from_slice(&7u64.to_be_bytes());
        b[16..24].copy_from_slice(&4096u64.to_be_bytes());
        b[24..28].copy_from_slice(&512u32.to_be_bytes());
        let r = Request::parse(&b).expect("valid header");
        assert_eq!(r, Request { flags: CMD_FLAG_FUA, command: Command::Write, cookie: 7, offset: 4096, length: 512 });
        b[0] ^= 1;
        assert!(matches!(Request::parse(&b), Err(ProtocolError::BadMagic { .. })));
    }

    #[test]
    fn option_payloads_are_checked_against_their_length() {
        let mut go = Vec::new();
        go.extend_from_slice(&3u32.to_be_bytes());
        go.extend_from_slice(b"abc");
        go.extend_from_slice(&1u16.to_be_bytes());
        go.extend_from_slice(&INFO_BLOCK_SIZE.to_be_bytes());
        assert_eq!(InfoRequest::parse(&go), Ok(InfoRequest { name: b"abc", requests: vec![INFO_BLOCK_SIZE] }));
        assert!(InfoRequest::parse(&go[..go.len() - 1]).is_err(), "short request list");
        let mut long = go.clone();
        long.push(0);
        assert!(InfoRequest::parse(&long).is_err(), "trailing byte");
        let mut meta = Vec::new();
        meta.extend_from_slice(&0u32.to_be_bytes());
        meta.extend_from_slice(&u32::MAX.to_be_bytes());
        assert!(MetaRequest::parse(&meta).is_err(), "a huge query count is refused before allocating");
    }
}
