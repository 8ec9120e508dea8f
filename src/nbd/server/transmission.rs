//! The transmission phase: request headers and payloads read off the
//! socket, each request executed in order, and its reply written (simple
//! or structured, as negotiated), batched until no more input is queued.

use std::io::{self, BufRead, BufReader, ErrorKind, Read, Write};
use std::sync::atomic::Ordering;

use super::execute::Reply;
use super::handshake::Session;
use super::{Failure, ServedDevice, Server, MAX_PAYLOAD};
use crate::nbd::protocol::*;

impl<D: ServedDevice> Server<D> {
    /// Requests until the client disconnects.
    pub(super) fn transmission(
        &self,
        r: &mut BufReader<impl Read>,
        w: &mut impl Write,
        session: Session,
    ) -> Result<(), ProtocolError> {
        let mut payload = Vec::new();
        loop {
            if r.buffer().is_empty() {
                // Nothing more queued: send the replies batched so far.
                w.flush()?;
                match r.fill_buf() {
                    Ok([]) => return Ok(()), // closed between requests
                    Ok(_) => {}
                    // Silent for the idle timeout: its slot goes to the next client.
                    Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                        self.counters.idle_disconnects.fetch_add(1, Ordering::Relaxed);
                        return Ok(());
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            let mut head = [0u8; REQUEST_HEADER_BYTES];
            r.read_exact(&mut head)?;
            let req = Request::parse(&head)?;
            let mut oversized = false;
            if req.command == Command::Write {
                if req.length > MAX_PAYLOAD {
                    // Skip the payload in bounded pieces to stay in step.
                    let skipped = io::copy(&mut r.by_ref().take(u64::from(req.length)), &mut io::sink())?;
                    if skipped < u64::from(req.length) {
                        return Err(io::Error::from(ErrorKind::UnexpectedEof).into());
                    }
                    oversized = true;
                } else {
                    payload.resize(req.length as usize, 0);
                    r.read_exact(&mut payload)?;
                }
            }
            if req.command == Command::Disconnect {
                return Ok(());
            }
            let result = if oversized {
                Err(Failure::new(Errno::EINVAL, format!("write payload over {MAX_PAYLOAD} bytes")))
            } else if self.stopping.load(Ordering::SeqCst) {
                Err(Failure::new(Errno::ESHUTDOWN, "server is shutting down"))
            } else {
                self.execute(&req, &payload, &session)
            };
            self.reply(w, &req, session.structured, result)?;
        }
    }

    fn reply(
        &self,
        w: &mut impl Write,
        req: &Request,
        structured: bool,
        result: Result<Reply, Failure>,
    ) -> io::Result<()> {
        let cookie = req.cookie;
        match result {
            Err(Failure(errno, msg)) => {
                self.counters.errors.fetch_add(1, Ordering::Relaxed);
                if structured {
                    write_structured_error(w, cookie, errno, &msg)
                } else {
                    write_simple_reply(w, errno, cookie)
                }
            }
            Ok(Reply::Done) => write_simple_reply(w, Errno(0), cookie),
            Ok(Reply::Data(data)) if structured => {
                write_chunk_header(w, REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_DATA, cookie, 8 + data.len() as u32)?;
                w.write_all(&req.offset.to_be_bytes())?;
                w.write_all(&data)
            }
            Ok(Reply::Data(data)) => {
                write_simple_reply(w, Errno(0), cookie)?;
                w.write_all(&data)
            }
            Ok(Reply::Hole(len)) if structured => {
                write_chunk_header(w, REPLY_FLAG_DONE, REPLY_TYPE_OFFSET_HOLE, cookie, 12)?;
                w.write_all(&req.offset.to_be_bytes())?;
                w.write_all(&len.to_be_bytes())
            }
            Ok(Reply::Hole(len)) => {
                write_simple_reply(w, Errno(0), cookie)?;
                io::copy(&mut io::repeat(0).take(u64::from(len)), w).map(|_| ())
            }
            Ok(Reply::Status(id, descriptors)) => {
                write_chunk_header(
                    w,
                    REPLY_FLAG_DONE,
                    REPLY_TYPE_BLOCK_STATUS,
                    cookie,
                    4 + 8 * descriptors.len() as u32,
                )?;
                w.write_all(&id.to_be_bytes())?;
                for (len, flags) in descriptors {
                    w.write_all(&len.to_be_bytes())?;
                    w.write_all(&flags.to_be_bytes())?;
                }
                Ok(())
            }
        }
    }
}
