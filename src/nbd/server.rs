//! NBD connections onto one shared [`Drive`]: the handshake, then
//! requests executed in order and answered in order (many may be in
//! flight: the client pipelines them and replies are batched until the
//! socket has no more input buffered).
//!
//! Owns the drive (behind a mutex, one command at a time, so every
//! connection sees every completed write: `NBD_FLAG_CAN_MULTI_CONN` is
//! honest), the simulated host queue commands are issued through, and
//! the served-request counters. Does not own sockets' lifetimes beyond
//! shutting them down when asked; the process side (signals, the
//! periodic summary) belongs to the CLI.
//!
//! Byte-granular requests are served exactly: reads cover the enclosing
//! sectors and return the slice asked for; unaligned writes
//! read-modify-write the edge sectors under the same lock; TRIM unmaps
//! only the units it covers entirely (TRIM is advisory).
//! `WRITE_ZEROES` unmaps the units it covers entirely (no NAND program;
//! unmapped units read as zeros) and writes zeros to partial edges;
//! with `NO_HOLE` it writes zeros everywhere (dedup stores them once).

use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, BufWriter, ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use serde::Serialize;

use super::protocol::*;
use crate::device::{Drive, Stats};
use crate::error::DriveError;
use crate::host::{CommandKind, HostQueue, LatencyHistogram, QueueSummary};
use crate::units::{Lba, Lpn, SECTOR_BYTES};

/// Largest read or write payload served (32 MiB): bounds a connection's memory.
pub const MAX_PAYLOAD: u32 = 32 << 20;

/// Preferred block size advertised to clients: the drive's mapping unit.
const PREFERRED_BLOCK: u32 = 4096;

/// Connections served at once; further ones are closed on accept.
pub const MAX_CONNECTIONS: usize = 64;

/// Zeros written per drive command by `WRITE_ZEROES` with `NO_HOLE`.
const ZERO_CHUNK: u64 = 1 << 20;

/// Socket buffer sizes of a connection.
const IO_BUFFER: usize = 256 << 10;

/// How the export is offered.
#[derive(Clone, Debug)]
pub struct ExportConfig {
    /// Export name (the empty name, the default export, also selects it).
    pub name: String,
    /// Description shown by `NBD_OPT_LIST` and `NBD_INFO_DESCRIPTION`.
    pub description: String,
    /// Depth of the simulated host queue served commands are issued through.
    pub queue_depth: u32,
}

/// The drive and the simulated queue, changed together under one lock.
struct State {
    drive: Drive,
    queue: HostQueue,
    /// Latencies by command kind (read, write, trim), folded out of the
    /// queue after every command so memory stays bounded however long
    /// the server runs.
    latency: [LatencyHistogram; 3],
    /// Whether a write, TRIM or write-zeroes changed the drive since the
    /// last checkpoint.
    dirty: bool,
}

/// The command kinds, in `State::latency` order.
const KINDS: [CommandKind; 3] = [CommandKind::Read, CommandKind::Write, CommandKind::Trim];

impl State {
    /// Moves the queue's recorded latencies into the histograms.
    fn fold(&mut self) {
        for (kind, h) in KINDS.into_iter().zip(self.latency.iter_mut()) {
            h.merge(&self.queue.take_latencies(kind));
        }
    }
}

/// Served-request counters, by command.
#[derive(Debug, Default)]
struct Counters {
    connections: AtomicU64,
    reads: AtomicU64,
    writes: AtomicU64,
    trims: AtomicU64,
    write_zeroes: AtomicU64,
    flushes: AtomicU64,
    checkpoints: AtomicU64,
    checkpoint_micros: AtomicU64,
    block_status: AtomicU64,
    errors: AtomicU64,
    read_bytes: AtomicU64,
    write_bytes: AtomicU64,
}

/// What the server has done, for reports and metrics.
#[derive(Clone, Debug, Serialize)]
pub struct Served {
    /// Connections accepted over the server's life.
    pub connections: u64,
    /// Connections open now.
    pub open_connections: u64,
    /// `NBD_CMD_READ` requests answered.
    pub reads: u64,
    /// `NBD_CMD_WRITE` requests answered.
    pub writes: u64,
    /// `NBD_CMD_TRIM` requests answered.
    pub trims: u64,
    /// `NBD_CMD_WRITE_ZEROES` requests answered.
    pub write_zeroes: u64,
    /// `NBD_CMD_FLUSH` requests answered.
    pub flushes: u64,
    /// Images written to make flushed and FUA data durable (`--image`).
    pub checkpoints: u64,
    /// Wall time those checkpoints took, in seconds.
    pub checkpoint_seconds: f64,
    /// `NBD_CMD_BLOCK_STATUS` requests answered.
    pub block_status: u64,
    /// Requests answered with an error.
    pub errors: u64,
    /// Bytes read by clients.
    pub read_bytes: u64,
    /// Bytes written by clients.
    pub write_bytes: u64,
}

impl Served {
    /// Every request answered.
    pub fn requests(&self) -> u64 {
        self.reads + self.writes + self.trims + self.write_zeroes + self.flushes + self.block_status
    }
}

/// A consistent view of the drive and the server at one moment.
#[derive(Clone, Debug, Serialize)]
pub struct Snapshot {
    /// Simulated time of the latest completion, in seconds.
    pub sim_seconds: f64,
    /// Export size in bytes.
    pub size_bytes: u64,
    /// The drive's counters.
    pub stats: Stats,
    /// The drive's SMART attributes.
    pub smart: crate::host::smart::Smart,
    /// Requests served.
    pub served: Served,
    /// Simulated latencies, when asked for (see [`Server::snapshot`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<Latencies>,
}

/// Simulated command latencies by kind.
#[derive(Clone, Debug, Serialize)]
pub struct Latencies {
    /// Reads.
    pub read: QueueSummary,
    /// Writes, including write-zeroes.
    pub write: QueueSummary,
    /// TRIMs.
    pub trim: QueueSummary,
}

/// One NBD export of one drive, shared by every connection.
pub struct Server {
    state: Mutex<State>,
    export: ExportConfig,
    /// Where FLUSH and FUA make the drive durable, if anywhere.
    image: Option<std::path::PathBuf>,
    size: u64,
    counters: Counters,
    stopping: AtomicBool,
    open: AtomicUsize,
    /// Open sockets (to shut them down on exit) and their threads.
    connections: Mutex<HashMap<u64, (TcpStream, JoinHandle<()>)>>,
}

/// A request that fails: the NBD error and a message for the user.
struct Failure(Errno, String);

impl Failure {
    fn new(errno: Errno, msg: impl Into<String>) -> Self {
        Failure(errno, msg.into())
    }
}

impl From<DriveError> for Failure {
    fn from(e: DriveError) -> Self {
        let errno = match e {
            DriveError::OutOfRange { .. } | DriveError::NoSpace(_) | DriveError::ChunkTableFull(_) => Errno::ENOSPC,
            DriveError::Misaligned { .. } => Errno::EINVAL,
            DriveError::NoData { .. } => Errno::EIO,
            DriveError::Internal(_) | DriveError::Corrupt { .. } => Errno::EIO,
        };
        Failure(errno, e.to_string())
    }
}

/// A successful answer.
enum Reply {
    /// No payload.
    Done,
    /// Read data.
    Data(Vec<u8>),
    /// A read of `len` bytes that are all zeros because nothing is mapped.
    Hole(u32),
    /// Block status descriptors `(length, flags)` of one context.
    Status(u32, Vec<(u32, u32)>),
}

/// What the handshake settled.
#[derive(Clone, Copy, Debug, Default)]
struct Session {
    structured: bool,
    /// Context id of `base:allocation` when selected.
    allocation: Option<u32>,
}

/// Time a client has to finish the handshake.
const HANDSHAKE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Time connections get on shutdown to flush their replies.
const SHUTDOWN_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

/// Most extents one BLOCK_STATUS reply describes (the client asks again
/// for the rest, as the protocol allows).
const MAX_EXTENTS: usize = 1 << 16;

/// Context id this server gives `base:allocation`.
const ALLOCATION_ID: u32 = 1;

impl Server {
    /// Serves `drive` as the export described by `export`.
    pub fn new(drive: Drive, export: ExportConfig) -> Self {
        let size = drive.capacity_sectors() * SECTOR_BYTES;
        let queue = HostQueue::new(export.queue_depth, drive.now());
        Server {
            state: Mutex::new(State { drive, queue, latency: Default::default(), dirty: false }),
            export,
            image: None,
            size,
            counters: Counters::default(),
            stopping: AtomicBool::new(false),
            open: AtomicUsize::new(0),
            connections: Mutex::new(HashMap::new()),
        }
    }

    /// Makes FLUSH and FUA durable: before either is answered, the drive
    /// is saved to `path` (atomically, see [`crate::image`]) if a command
    /// changed it since the last save.
    pub fn with_image(mut self, path: std::path::PathBuf) -> Self {
        self.image = Some(path);
        self
    }

    /// Saves the drive to the image, changed or not (on shutdown).
    pub fn checkpoint(&self) -> Result<(), String> {
        let mut s = self.lock().map_err(|f| f.1)?;
        s.dirty = true;
        self.persist(&mut s).map_err(|f| f.1)
    }

    /// Saves the drive to the image if it changed since the last save.
    fn persist(&self, s: &mut State) -> Result<(), Failure> {
        let Some(path) = &self.image else { return Ok(()) };
        if !s.dirty {
            return Ok(());
        }
        let started = std::time::Instant::now();
        s.drive.save(path).map_err(|e| Failure::new(Errno::EIO, format!("checkpoint failed: {e}")))?;
        s.dirty = false;
        self.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
        self.counters.checkpoint_micros.fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Export size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, Failure> {
        // A poisoned lock means a command panicked half-way: a bug. Refuse
        // further I/O rather than serve a drive in an unknown state.
        let mut s =
            self.state.lock().map_err(|_| Failure::new(Errno::EIO, "the drive failed earlier (internal error)"))?;
        s.fold();
        Ok(s)
    }

    /// Runs `f` on the drive (for the final report).
    pub fn with_drive<T>(&self, f: impl FnOnce(&Drive) -> T) -> Option<T> {
        self.state.lock().ok().map(|s| f(&s.drive))
    }

    /// The drive's counters and what was served, taken together; with
    /// `latency`, the simulated latency percentiles too (from fixed-size
    /// histograms, to within 0.4 %).
    pub fn snapshot(&self, latency: bool) -> Option<Snapshot> {
        let mut s = self.state.lock().ok()?;
        s.fold();
        let elapsed = s.queue.finished_at().0.saturating_sub(s.queue.started_at().0);
        let c = &self.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Some(Snapshot {
            sim_seconds: s.drive.now().secs(),
            size_bytes: self.size,
            stats: s.drive.stats(),
            smart: crate::host::smart::Smart::of(&s.drive),
            served: Served {
                connections: get(&c.connections),
                open_connections: self.open.load(Ordering::Relaxed) as u64,
                reads: get(&c.reads),
                writes: get(&c.writes),
                trims: get(&c.trims),
                write_zeroes: get(&c.write_zeroes),
                flushes: get(&c.flushes),
                checkpoints: get(&c.checkpoints),
                checkpoint_seconds: get(&c.checkpoint_micros) as f64 / 1e6,
                block_status: get(&c.block_status),
                errors: get(&c.errors),
                read_bytes: get(&c.read_bytes),
                write_bytes: get(&c.write_bytes),
            },
            latency: latency.then(|| Latencies {
                read: s.latency[0].summary(elapsed),
                write: s.latency[1].summary(elapsed),
                trim: s.latency[2].summary(elapsed),
            }),
        })
    }

    /// Serves `stream` on its own thread; refused (closed) when
    /// [`MAX_CONNECTIONS`] are open or the server is stopping.
    pub fn spawn(self: &Arc<Self>, stream: TcpStream) -> io::Result<()> {
        if self.stopping.load(Ordering::SeqCst) || self.open.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
            return stream.shutdown(Shutdown::Both);
        }
        stream.set_nodelay(true)?;
        let keep = stream.try_clone()?;
        let reader = stream.try_clone()?;
        // Registered before the thread can finish and deregister itself: a
        // stale entry would hold the socket open after the session ended.
        let mut conns = self.connections.lock().map_err(|_| io::Error::other("connection table poisoned"))?;
        let id = self.counters.connections.fetch_add(1, Ordering::Relaxed);
        self.open.fetch_add(1, Ordering::SeqCst);
        let server = Arc::clone(self);
        // A client gets HANDSHAKE_TIMEOUT to negotiate; once in
        // transmission it may sit idle as long as it likes.
        reader.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
        let negotiated = reader.try_clone()?;
        let handle = std::thread::Builder::new().name(format!("nbd-{id}")).spawn(move || {
            // A client that breaks the protocol or vanishes ends only its own connection.
            let _ = server.serve_with(reader, stream, || {
                let _ = negotiated.set_read_timeout(None);
            });
            server.open.fetch_sub(1, Ordering::SeqCst);
            if let Ok(mut conns) = server.connections.lock() {
                conns.remove(&id);
            }
        });
        match handle {
            Ok(handle) => {
                conns.insert(id, (keep, handle));
            }
            Err(e) => {
                self.open.fetch_sub(1, Ordering::SeqCst);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Stops serving: later requests get `ESHUTDOWN`; each connection
    /// stops reading, finishes and answers what it has read, and flushes
    /// its replies; a client that does not take them within
    /// [`SHUTDOWN_GRACE`] is cut off.
    pub fn shutdown(&self) {
        self.stopping.store(true, Ordering::SeqCst);
        let conns: Vec<(TcpStream, JoinHandle<()>)> = match self.connections.lock() {
            Ok(mut c) => c.drain().map(|(_, v)| v).collect(),
            Err(_) => Vec::new(),
        };
        for (stream, _) in &conns {
            let _ = stream.shutdown(Shutdown::Read);
        }
        let deadline = std::time::Instant::now() + SHUTDOWN_GRACE;
        while conns.iter().any(|(_, h)| !h.is_finished()) && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        for (stream, handle) in conns {
            let _ = stream.shutdown(Shutdown::Both);
            let _ = handle.join();
        }
    }

    /// Serves one client from handshake to disconnect. `Ok` when the
    /// client ended the session cleanly (abort, `NBD_CMD_DISC`, or closing
    /// between requests).
    pub fn serve(&self, reader: impl Read, writer: impl Write) -> Result<(), ProtocolError> {
        self.serve_with(reader, writer, || {})
    }

    /// [`Server::serve`], calling `negotiated` when the handshake is done.
    fn serve_with(
        &self,
        reader: impl Read,
        writer: impl Write,
        negotiated: impl FnOnce(),
    ) -> Result<(), ProtocolError> {
        let mut r = BufReader::with_capacity(IO_BUFFER, reader);
        let mut w = BufWriter::with_capacity(IO_BUFFER, writer);
        let result = match self.handshake(&mut r, &mut w) {
            Ok(Some(session)) => {
                negotiated();
                self.transmission(&mut r, &mut w, session)
            }
            Ok(None) => Ok(()),
            Err(e) => Err(e),
        };
        let flushed = w.flush();
        result.and(flushed.map_err(ProtocolError::from))
    }

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
    fn handshake(&self, r: &mut impl Read, w: &mut impl Write) -> Result<Option<Session>, ProtocolError> {
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

    /// Requests until the client disconnects.
    fn transmission(
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
                if r.fill_buf()?.is_empty() {
                    return Ok(()); // closed between requests
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

    /// Validates and runs one request.
    fn execute(&self, req: &Request, payload: &[u8], session: &Session) -> Result<Reply, Failure> {
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
                    let State { drive, queue, .. } = &mut *s;
                    queue.set_kind(CommandKind::Trim);
                    drive.trim_on(&[(Lba(first), last - first)], queue)?;
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
                Ok(Reply::Status(id, allocation(&s.drive, req.offset, end, one)))
            }
            Command::Flush | Command::Disconnect | Command::Unknown(_) => {
                Err(Failure::new(Errno::EINVAL, "command handled elsewhere"))
            }
        }
    }

    /// Notes that a command changed the drive; with FUA, saves it before
    /// the command is answered.
    fn changed(&self, s: &mut State, flags: u16) -> Result<(), Failure> {
        s.dirty = true;
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
        let State { drive, queue, .. } = &mut *s;
        queue.set_kind(CommandKind::Read);
        let first = offset / SECTOR_BYTES;
        let sectors = end.div_ceil(SECTOR_BYTES) - first;
        let len = (end - offset) as u32;
        if !any_mapped(drive, offset, end) {
            drive.read_on(Lba(first), sectors, queue, false)?;
            return Ok(Reply::Hole(len));
        }
        let data = drive.read_on(Lba(first), sectors, queue, true)?.unwrap_or_default();
        let skip = (offset - first * SECTOR_BYTES) as usize;
        let piece = data.get(skip..skip + len as usize).ok_or_else(|| Failure::new(Errno::EIO, "short read"))?;
        Ok(Reply::Data(if skip == 0 && data.len() == len as usize { data } else { piece.to_vec() }))
    }
}

/// The drive's mapping unit in bytes.
fn unit_bytes(drive: &Drive) -> u64 {
    u64::from(drive.config().unit_bytes)
}

/// Whether any unit overlapping bytes `offset..end` holds data.
fn any_mapped(drive: &Drive, offset: u64, end: u64) -> bool {
    let unit = unit_bytes(drive);
    (offset / unit..end.div_ceil(unit)).any(|u| drive.is_mapped(Lpn(u)))
}

/// Writes `data` at byte `offset`, read-modify-writing partial sectors.
fn write_bytes(s: &mut State, offset: u64, data: &[u8]) -> Result<(), Failure> {
    let State { drive, queue, .. } = s;
    let end = offset + data.len() as u64;
    let first = offset / SECTOR_BYTES;
    if offset % SECTOR_BYTES == 0 && end % SECTOR_BYTES == 0 {
        return Ok(drive.write_batch_on(&[(Lba(first), data)], queue)?);
    }
    let sectors = end.div_ceil(SECTOR_BYTES) - first;
    let mut merged = drive.read_on(Lba(first), sectors, queue, true)?.unwrap_or_default();
    let skip = (offset - first * SECTOR_BYTES) as usize;
    merged
        .get_mut(skip..skip + data.len())
        .ok_or_else(|| Failure::new(Errno::EIO, "short read-modify-write"))?
        .copy_from_slice(data);
    Ok(drive.write_batch_on(&[(Lba(first), &merged)], queue)?)
}

/// Writes zeros to bytes `offset..end` in bounded pieces.
fn write_zero_bytes(s: &mut State, offset: u64, end: u64) -> Result<(), Failure> {
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
fn write_zeroes(s: &mut State, offset: u64, end: u64, no_hole: bool) -> Result<(), Failure> {
    s.queue.set_kind(CommandKind::Write);
    let unit = unit_bytes(&s.drive);
    let (u_first, u_end) = (offset.div_ceil(unit), end / unit);
    if no_hole || u_end <= u_first {
        return write_zero_bytes(s, offset, end);
    }
    write_zero_bytes(s, offset, u_first * unit)?;
    let us = unit / SECTOR_BYTES;
    {
        let State { drive, queue, .. } = &mut *s;
        queue.set_kind(CommandKind::Trim);
        drive.trim_on(&[(Lba(u_first * us), (u_end - u_first) * us)], queue)?;
    }
    s.queue.set_kind(CommandKind::Write);
    // A firmware that leaves some trimmed units mapped (the SandForce TRIM
    // defect) still owes zeros there.
    let mut u = u_first;
    while u < u_end {
        if s.drive.is_mapped(Lpn(u)) {
            let mut stop = u + 1;
            while stop < u_end && s.drive.is_mapped(Lpn(stop)) {
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
fn allocation(drive: &Drive, offset: u64, end: u64, only_one: bool) -> Vec<(u32, u32)> {
    let unit = unit_bytes(drive);
    let mut out: Vec<(u32, u32)> = Vec::new();
    let mut at = offset;
    // The reply may describe a prefix of the range: stop at a bounded
    // number of extents so one request cannot hold the drive for long.
    while at < end && out.len() < MAX_EXTENTS {
        let u = at / unit;
        let next = ((u + 1) * unit).min(end);
        let flags = if drive.is_mapped(Lpn(u)) { 0 } else { STATE_HOLE | STATE_ZERO };
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

    fn state() -> State {
        let config = DriveConfig::preset("sf2281-240g").and_then(|c| c.scaled(64 << 20)).expect("preset");
        let drive = Drive::new(config).expect("drive");
        State { queue: HostQueue::new(32, drive.now()), drive, latency: Default::default(), dirty: false }
    }

    #[test]
    fn unaligned_writes_read_modify_write_whole_sectors() {
        let mut s = state();
        write_bytes(&mut s, 0, &[1u8; 8192]).map_err(|f| f.1).expect("aligned write");
        write_bytes(&mut s, 100, &[2u8; 1000]).map_err(|f| f.1).expect("unaligned write");
        let data = s.drive.read(Lba(0), 16).expect("read");
        assert!(data[..100].iter().all(|&b| b == 1));
        assert!(data[100..1100].iter().all(|&b| b == 2));
        assert!(data[1100..].iter().all(|&b| b == 1));
    }

    #[test]
    fn write_zeroes_unmaps_whole_units_and_zeroes_the_edges() {
        let mut s = state();
        write_bytes(&mut s, 0, &[9u8; 16384]).map_err(|f| f.1).expect("write");
        let before = s.drive.stats();
        write_zeroes(&mut s, 1000, 13000, false).map_err(|f| f.1).expect("zeroes");
        let after = s.drive.stats();
        assert_eq!(after.host_trim_units - before.host_trim_units, 2, "units 1 and 2 are unmapped");
        assert_eq!(after.host_write_units - before.host_write_units, 2, "only the edge units 0 and 3 are written");
        let data = s.drive.read(Lba(0), 32).expect("read");
        assert!(data[..1000].iter().all(|&b| b == 9));
        assert!(data[1000..13000].iter().all(|&b| b == 0));
        assert!(data[13000..].iter().all(|&b| b == 9));
        assert!(!s.drive.is_mapped(Lpn(1)) && !s.drive.is_mapped(Lpn(2)), "whole units are unmapped");
        let map = allocation(&s.drive, 0, 16384, false);
        assert_eq!(map, vec![(4096, 0), (8192, STATE_HOLE | STATE_ZERO), (4096, 0)]);
        assert_eq!(allocation(&s.drive, 4096, 16384, true), vec![(8192, STATE_HOLE | STATE_ZERO)]);
    }
}
