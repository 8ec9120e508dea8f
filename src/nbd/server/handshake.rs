//! Fixed newstyle negotiation: options until the client picks the export
//! (`NBD_OPT_EXPORT_NAME` or `NBD_OPT_GO`) or aborts; what it settled
//! (structured replies, the `base:allocation` context) is a [`Session`].

use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;

use super::{ServedDevice, Server, MAX_PAYLOAD};
use crate::nbd::protocol::*;

/// Preferred block size advertised to clients: the drive's mapping unit.
const PREFERRED_BLOCK: u32 = 4096;

/// Options a refused client may send before it is closed anyway.
const MAX_REFUSED_OPTIONS: usize = 16;

/// Context id this server gives `base:allocation`.
const ALLOCATION_ID: u32 = 1;

/// What the handshake settled.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Session {
    pub(super) structured: bool,
    /// Context id of `base:allocation` when selected.
    pub(super) allocation: Option<u32>,
}

impl<D: ServedDevice> Server<D> {
    fn is_export(&self, name: &[u8]) -> bool {
        name.is_empty() || name == self.export.name.as_bytes()
    }

    fn transmission_flags(&self, session: &Session) -> u16 {
        let df = if session.structured { TF_SEND_DF } else { 0 };
        TF_HAS_FLAGS
            | TF_SEND_FLUSH
            | TF_SEND_FUA
            | TF_SEND_TRIM
            | TF_SEND_WRITE_ZEROES
            | TF_SEND_FAST_ZERO
            | TF_CAN_MULTI_CONN
            | df
    }

    /// Fixed newstyle negotiation. `None` when the client aborted.
    pub(super) fn handshake(&self, r: &mut impl Read, w: &mut impl Write) -> Result<Option<Session>, ProtocolError> {
        w.write_all(&INIT_MAGIC.to_be_bytes())?;
        w.write_all(&OPTS_MAGIC.to_be_bytes())?;
        w.write_all(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes())?;
        w.flush()?;
        let client = read_u32(r)?;
        if client & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
            return Err(ProtocolError::ClientFlags(client));
        }
        let no_zeroes = client & FLAG_C_NO_ZEROES != 0;
        let mut session = Session::default();
        loop {
            let magic = read_u64(r)?;
            if magic != OPTS_MAGIC {
                return Err(ProtocolError::BadMagic { what: "option", got: magic });
            }
            let option = read_u32(r)?;
            let len = read_u32(r)?;
            if len > MAX_OPTION_BYTES {
                return Err(ProtocolError::OptionTooLong { option, len });
            }
            let mut data = vec![0u8; len as usize];
            r.read_exact(&mut data)?;
            if self.stopping.load(Ordering::SeqCst) && option != OPT_ABORT {
                write_option_reply(w, option, REP_ERR_SHUTDOWN, b"server is shutting down")?;
                w.flush()?;
                continue;
            }
            match option {
                OPT_EXPORT_NAME => {
                    if !self.is_export(&data) {
                        return Err(ProtocolError::UnknownExport(String::from_utf8_lossy(&data).into_owned()));
                    }
                    w.write_all(&self.size.to_be_bytes())?;
                    w.write_all(&self.transmission_flags(&session).to_be_bytes())?;
                    if !no_zeroes {
                        w.write_all(&[0u8; 124])?;
                    }
                    w.flush()?;
                    return Ok(Some(session));
                }
                OPT_ABORT => {
                    // The client may already have gone: a failed ACK is fine.
                    let _ = write_option_reply(w, option, REP_ACK, &[]).and_then(|_| w.flush());
                    return Ok(None);
                }
                OPT_LIST if !data.is_empty() => {
                    write_option_reply(w, option, REP_ERR_INVALID, b"NBD_OPT_LIST takes no data")?
                }
                OPT_LIST => {
                    let name = self.export.name.as_bytes();
                    let mut reply = (name.len() as u32).to_be_bytes().to_vec();
                    reply.extend_from_slice(name);
                    reply.extend_from_slice(self.export.description.as_bytes());
                    write_option_reply(w, option, REP_SERVER, &reply)?;
                    write_option_reply(w, option, REP_ACK, &[])?;
                }
                OPT_INFO | OPT_GO => {
                    if self.info(w, option, &data, &session)? && option == OPT_GO {
                        w.flush()?;
                        return Ok(Some(session));
                    }
                }
                OPT_STRUCTURED_REPLY if !data.is_empty() => {
                    write_option_reply(w, option, REP_ERR_INVALID, b"NBD_OPT_STRUCTURED_REPLY takes no data")?
                }
                OPT_STRUCTURED_REPLY => {
                    session.structured = true;
                    write_option_reply(w, option, REP_ACK, &[])?;
                }
                OPT_LIST_META_CONTEXT | OPT_SET_META_CONTEXT => self.meta_context(w, option, &data, &mut session)?,
                _ => write_option_reply(w, option, REP_ERR_UNSUP, b"option not supported by duraflash")?,
            }
            w.flush()?;
        }
    }

    /// The handshake of a client that will not be served: the greeting,
    /// then `NBD_REP_ERR_POLICY` with `message` to each option (at most
    /// [`MAX_REFUSED_OPTIONS`]), until the client aborts, sends
    /// `NBD_OPT_EXPORT_NAME` (which has no error reply: the connection is
    /// closed) or goes.
    pub(super) fn refusal(&self, r: &mut impl Read, w: &mut impl Write, message: &str) -> Result<(), ProtocolError> {
        w.write_all(&INIT_MAGIC.to_be_bytes())?;
        w.write_all(&OPTS_MAGIC.to_be_bytes())?;
        w.write_all(&(FLAG_FIXED_NEWSTYLE | FLAG_NO_ZEROES).to_be_bytes())?;
        w.flush()?;
        let client = read_u32(r)?;
        if client & !(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES) != 0 {
            return Err(ProtocolError::ClientFlags(client));
        }
        for _ in 0..MAX_REFUSED_OPTIONS {
            let magic = read_u64(r)?;
            if magic != OPTS_MAGIC {
                return Err(ProtocolError::BadMagic { what: "option", got: magic });
            }
            let option = read_u32(r)?;
            let len = read_u32(r)?;
            if len > MAX_OPTION_BYTES {
                return Err(ProtocolError::OptionTooLong { option, len });
            }
            io::copy(&mut r.by_ref().take(u64::from(len)), &mut io::sink())?;
            match option {
                OPT_EXPORT_NAME => return Ok(()),
                OPT_ABORT => {
                    let _ = write_option_reply(w, option, REP_ACK, &[]).and_then(|_| w.flush());
                    return Ok(());
                }
                _ => write_option_reply(w, option, REP_ERR_POLICY, message.as_bytes())?,
            }
            w.flush()?;
        }
        Ok(())
    }

    /// Answers `NBD_OPT_INFO` / `NBD_OPT_GO`; true when it succeeded.
    fn info(&self, w: &mut impl Write, option: u32, data: &[u8], session: &Session) -> io::Result<bool> {
        let req = match InfoRequest::parse(data) {
            Ok(req) => req,
            Err(e) => {
                write_option_reply(w, option, REP_ERR_INVALID, e.0.as_bytes())?;
                return Ok(false);
            }
        };
        if !self.is_export(req.name) {
            write_option_reply(w, option, REP_ERR_UNKNOWN, b"no such export")?;
            return Ok(false);
        }
        let mut export = INFO_EXPORT.to_be_bytes().to_vec();
        export.extend_from_slice(&self.size.to_be_bytes());
        export.extend_from_slice(&self.transmission_flags(session).to_be_bytes());
        write_option_reply(w, option, REP_INFO, &export)?;
        if req.requests.contains(&INFO_NAME) {
            let mut name = INFO_NAME.to_be_bytes().to_vec();
            name.extend_from_slice(self.export.name.as_bytes());
            write_option_reply(w, option, REP_INFO, &name)?;
        }
        if req.requests.contains(&INFO_DESCRIPTION) {
            let mut desc = INFO_DESCRIPTION.to_be_bytes().to_vec();
            desc.extend_from_slice(self.export.description.as_bytes());
            write_option_reply(w, option, REP_INFO, &desc)?;
        }
        // Any byte offset and length is served; 4 KiB avoids read-modify-write.
        let mut sizes = INFO_BLOCK_SIZE.to_be_bytes().to_vec();
        for v in [1u32, PREFERRED_BLOCK, MAX_PAYLOAD] {
            sizes.extend_from_slice(&v.to_be_bytes());
        }
        write_option_reply(w, option, REP_INFO, &sizes)?;
        write_option_reply(w, option, REP_ACK, &[])?;
        Ok(true)
    }

    /// Answers `NBD_OPT_LIST_META_CONTEXT` / `NBD_OPT_SET_META_CONTEXT`.
    fn meta_context(&self, w: &mut impl Write, option: u32, data: &[u8], session: &mut Session) -> io::Result<()> {
        let set = option == OPT_SET_META_CONTEXT;
        if set {
            session.allocation = None;
        }
        if !session.structured {
            return write_option_reply(w, option, REP_ERR_INVALID, b"negotiate structured replies first");
        }
        let req = match MetaRequest::parse(data) {
            Ok(req) => req,
            Err(e) => return write_option_reply(w, option, REP_ERR_INVALID, e.0.as_bytes()),
        };
        if !self.is_export(req.name) {
            return write_option_reply(w, option, REP_ERR_UNKNOWN, b"no such export");
        }
        let matches = if set {
            req.queries.iter().any(|q| *q == BASE_ALLOCATION.as_bytes())
        } else {
            req.queries.is_empty() || req.queries.iter().any(|q| *q == b"base:" || *q == BASE_ALLOCATION.as_bytes())
        };
        if matches {
            let id = if set { ALLOCATION_ID } else { 0 };
            let mut reply = id.to_be_bytes().to_vec();
            reply.extend_from_slice(BASE_ALLOCATION.as_bytes());
            write_option_reply(w, option, REP_META_CONTEXT, &reply)?;
            if set {
                session.allocation = Some(ALLOCATION_ID);
            }
        }
        write_option_reply(w, option, REP_ACK, &[])
    }
}
