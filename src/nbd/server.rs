//! NBD connections onto one shared device (a [`crate::Drive`] or a RAID
//! [`crate::host::raid::Array`], anything [`ServedDevice`]): the
//! handshake, then requests executed in order and answered in order (many
//! may be in flight: the client pipelines them and replies are batched
//! until the socket has no more input buffered).
//!
//! Owns the device (behind a mutex, one command at a time, so every
//! connection sees every completed write: `NBD_FLAG_CAN_MULTI_CONN` is
//! honest), the simulated host queue commands are issued through, and
//! the served-request counters. Does not own sockets' lifetimes beyond
//! shutting them down when asked; accepting them is [`super::listen`]'s,
//! and the process side (signals, printing) belongs to the CLI.
//!
//! This file holds the server's lifecycle: connections spawned, served
//! and shut down, checkpoints. `handshake` negotiates, `transmission`
//! reads requests and writes replies, `execute` runs commands on the
//! device, `snapshot` reports.

use std::collections::HashMap;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Duration;

use super::device::{DeviceError, ServedDevice};
use super::protocol::{Errno, ProtocolError};
use crate::device::Drive;
use crate::host::{CommandKind, HostQueue, LatencyHistogram};
use crate::units::SECTOR_BYTES;

mod execute;
mod handshake;
mod snapshot;
mod transmission;

use snapshot::Counters;
pub use snapshot::{Latencies, Served, Snapshot};

/// Largest read or write payload served (32 MiB): bounds a connection's memory.
pub const MAX_PAYLOAD: u32 = 32 << 20;

/// Connections served at once by default ([`Limits::max_connections`]).
pub const MAX_CONNECTIONS: usize = 64;

/// Default time a client in transmission may stay silent before it is
/// disconnected ([`Limits::idle_timeout`]): generous, since a mounted
/// filesystem with nothing to do sends nothing.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(600);

/// Clients beyond the limit being told so at once; further ones are closed
/// without a word (a flood of them must not cost a thread each).
const MAX_REFUSING: usize = 16;

/// Time a refused client gets to read its refusal.
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(5);

/// Socket buffer sizes of a connection.
const IO_BUFFER: usize = 256 << 10;

/// Time a client has to finish the handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// Time connections get on shutdown to flush their replies.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

/// How many clients the server takes, and how long it waits on them.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections served at once. A client beyond them gets the
    /// greeting, then `NBD_REP_ERR_POLICY` ("too many connections") to
    /// every option but `NBD_OPT_ABORT`, so it can say why; one that
    /// sends `NBD_OPT_EXPORT_NAME`, which has no error reply, is closed.
    pub max_connections: usize,
    /// Time a client in transmission may send no request (or leave a
    /// reply unread) before it is disconnected, freeing its slot; `None`
    /// (or zero): as long as it likes.
    pub idle_timeout: Option<Duration>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { max_connections: MAX_CONNECTIONS, idle_timeout: Some(IDLE_TIMEOUT) }
    }
}

/// The result of the latest invariant check (see [`Server::check_invariants`]).
#[derive(Clone, Debug)]
pub struct InvariantCheck {
    /// `Err` names the first broken invariant.
    pub result: Result<(), String>,
    /// Wall-clock time the check finished, in seconds since the Unix epoch.
    pub unix_seconds: f64,
    /// The device's simulated time when it was checked, in seconds.
    pub sim_seconds: f64,
    /// Wall time the check took, in seconds (the device is locked meanwhile).
    pub took_seconds: f64,
}

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

/// The device and the simulated queue, changed together under one lock.
struct State<D> {
    dev: D,
    queue: HostQueue,
    /// Latencies by command kind (read, write, trim), folded out of the
    /// queue after every command so memory stays bounded however long
    /// the server runs.
    latency: [LatencyHistogram; 3],
    /// Whether a write, TRIM or write-zeroes changed the device since the
    /// last checkpoint.
    dirty: bool,
    /// Whether one changed it since the last invariant check (or none ran yet).
    unchecked: bool,
}

/// The command kinds, in `State::latency` order.
const KINDS: [CommandKind; 3] = [CommandKind::Read, CommandKind::Write, CommandKind::Trim];

impl<D> State<D> {
    fn new(dev: D, queue: HostQueue) -> Self {
        State { dev, queue, latency: Default::default(), dirty: false, unchecked: true }
    }

    /// Moves the queue's recorded latencies into the histograms.
    fn fold(&mut self) {
        for (kind, h) in KINDS.into_iter().zip(self.latency.iter_mut()) {
            h.merge(&self.queue.take_latencies(kind));
        }
    }
}

/// One NBD export of one device, shared by every connection.
pub struct Server<D = Drive> {
    state: Mutex<State<D>>,
    export: ExportConfig,
    /// Where FLUSH and FUA make the device durable, if anywhere.
    image: Option<std::path::PathBuf>,
    size: u64,
    counters: Counters,
    limits: Limits,
    stopping: AtomicBool,
    open: AtomicUsize,
    /// Refused clients being answered now (at most [`MAX_REFUSING`]).
    refusing: Arc<AtomicUsize>,
    last_check: Mutex<Option<InvariantCheck>>,
    /// Open sockets (to shut them down on exit) and their threads.
    connections: Mutex<HashMap<u64, (TcpStream, JoinHandle<()>)>>,
}

/// A place counted in a gauge, given back when dropped.
struct Slot(Arc<AtomicUsize>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A request that fails: the NBD error and a message for the user.
struct Failure(Errno, String);

impl Failure {
    fn new(errno: Errno, msg: impl Into<String>) -> Self {
        Failure(errno, msg.into())
    }

    /// The failure of a device command.
    fn of<D: ServedDevice>(e: D::Error) -> Self {
        Failure(D::errno(&e), e.to_string())
    }
}

impl<D: ServedDevice> Server<D> {
    /// Serves `dev` as the export described by `export`: its capacity in
    /// whole sectors.
    pub fn new(dev: D, export: ExportConfig) -> Self {
        let size = dev.capacity_bytes() / SECTOR_BYTES * SECTOR_BYTES;
        let queue = HostQueue::new(export.queue_depth, dev.now());
        Server {
            state: Mutex::new(State::new(dev, queue)),
            export,
            image: None,
            size,
            counters: Counters::default(),
            limits: Limits::default(),
            stopping: AtomicBool::new(false),
            open: AtomicUsize::new(0),
            refusing: Arc::new(AtomicUsize::new(0)),
            last_check: Mutex::new(None),
            connections: Mutex::new(HashMap::new()),
        }
    }

    /// Makes FLUSH and FUA durable: before either is answered, the device
    /// is saved to `path` (see [`ServedDevice::save`]) if a command
    /// changed it since the last save.
    pub fn with_image(mut self, path: std::path::PathBuf) -> Self {
        self.image = Some(path);
        self
    }

    /// Serves at most `limits.max_connections` clients at once, and
    /// disconnects idle ones (see [`Limits`]).
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// The connection limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Saves the device to the image, changed or not (on shutdown).
    pub fn checkpoint(&self) -> Result<(), String> {
        let mut s = self.lock().map_err(|f| f.1)?;
        s.dirty = true;
        self.persist(&mut s).map_err(|f| f.1)
    }

    /// Saves the device to the image if it changed since the last save.
    fn persist(&self, s: &mut State<D>) -> Result<(), Failure> {
        let Some(path) = &self.image else { return Ok(()) };
        if !s.dirty {
            return Ok(());
        }
        let started = std::time::Instant::now();
        s.dev.save(path).map_err(|e| Failure::new(Errno::EIO, format!("checkpoint failed: {e}")))?;
        s.dirty = false;
        self.counters.checkpoint(started.elapsed());
        Ok(())
    }

    /// Export size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The export's name and description.
    pub fn export(&self) -> &ExportConfig {
        &self.export
    }

    fn lock(&self) -> Result<MutexGuard<'_, State<D>>, Failure> {
        // A poisoned lock means a command panicked half-way: a bug. Refuse
        // further I/O rather than serve a device in an unknown state.
        let mut s =
            self.state.lock().map_err(|_| Failure::new(Errno::EIO, "the drive failed earlier (internal error)"))?;
        s.fold();
        Ok(s)
    }

    /// Runs `f` on the device (for the final report); `None` when a
    /// command panicked earlier.
    pub fn with_device<T>(&self, f: impl FnOnce(&D) -> T) -> Option<T> {
        self.state.lock().ok().map(|s| f(&s.dev))
    }

    /// The device's invariant check: `Err` names the first broken one (or
    /// says the device failed earlier). The result is kept: see
    /// [`Server::last_check`]. The device is locked while it runs, which
    /// on a large drive takes a while: commands wait.
    pub fn check_invariants(&self) -> Result<(), DeviceError> {
        let started = std::time::Instant::now();
        let checked = self.state.lock().ok().map(|mut s| {
            s.unchecked = false;
            (s.dev.check_invariants(), s.dev.now().secs())
        });
        let (result, sim_seconds) = checked.unwrap_or((Err(DeviceError::Failed), 0.0));
        let unix_seconds =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        let check = InvariantCheck {
            result: result.as_ref().map(|_| ()).map_err(ToString::to_string),
            unix_seconds,
            sim_seconds,
            took_seconds: started.elapsed().as_secs_f64(),
        };
        if let Ok(mut last) = self.last_check.lock() {
            *last = Some(check);
        }
        result
    }

    /// [`Server::check_invariants`] if a command changed the device since
    /// the last check (or none ran yet); `None` when it did not need to run.
    pub fn check_if_changed(&self) -> Option<Result<(), DeviceError>> {
        let unchecked = self.state.lock().map_or(true, |s| s.unchecked);
        unchecked.then(|| self.check_invariants())
    }

    /// The latest invariant check, if one ran.
    pub fn last_check(&self) -> Option<InvariantCheck> {
        self.last_check.lock().ok().and_then(|c| c.clone())
    }

    /// Serves `stream` on its own thread. Closed at once when the server
    /// is stopping; refused with a message when
    /// [`Limits::max_connections`] are open.
    pub fn spawn(self: &Arc<Self>, stream: TcpStream) -> io::Result<()> {
        if self.stopping.load(Ordering::SeqCst) {
            return stream.shutdown(Shutdown::Both);
        }
        if self.open.load(Ordering::SeqCst) >= self.limits.max_connections {
            return self.refuse(stream);
        }
        stream.set_nodelay(true)?;
        let keep = stream.try_clone()?;
        let reader = stream.try_clone()?;
        // Registered before the thread can finish and deregister itself: a
        // stale entry would hold the socket open after the session ended.
        let mut conns = self.connections.lock().map_err(|_| io::Error::other("connection table poisoned"))?;
        let id = self.counters.connected();
        self.open.fetch_add(1, Ordering::SeqCst);
        let server = Arc::clone(self);
        // A client gets HANDSHAKE_TIMEOUT to negotiate; once in
        // transmission it may be silent for the idle timeout. One that
        // leaves its replies unread as long is cut off too: a blocked
        // write would hold its slot forever.
        let idle = self.limits.idle_timeout.filter(|t| !t.is_zero());
        reader.set_read_timeout(Some(HANDSHAKE_TIMEOUT))?;
        reader.set_write_timeout(idle)?;
        let negotiated = reader.try_clone()?;
        let handle = std::thread::Builder::new().name(format!("nbd-{id}")).spawn(move || {
            // A client that breaks the protocol or vanishes ends only its own connection.
            let _ = server.serve_with(reader, stream, || {
                let _ = negotiated.set_read_timeout(idle);
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

    /// Tells a client beyond the connection limit why it is not served, on
    /// a short-lived thread of its own; closes it without a word when
    /// [`MAX_REFUSING`] others are being told already.
    fn refuse(self: &Arc<Self>, stream: TcpStream) -> io::Result<()> {
        self.counters.refused.fetch_add(1, Ordering::Relaxed);
        if self.refusing.fetch_add(1, Ordering::SeqCst) >= MAX_REFUSING {
            self.refusing.fetch_sub(1, Ordering::SeqCst);
            return stream.shutdown(Shutdown::Both);
        }
        let slot = Slot(Arc::clone(&self.refusing));
        stream.set_read_timeout(Some(REFUSAL_TIMEOUT))?;
        stream.set_write_timeout(Some(REFUSAL_TIMEOUT))?;
        let reader = stream.try_clone()?;
        let server = Arc::clone(self);
        let message = format!(
            "too many connections: this server serves at most {} at once; try again later",
            self.limits.max_connections
        );
        std::thread::Builder::new().name("nbd-refuse".into()).spawn(move || {
            let _slot = slot;
            let mut r = BufReader::new(reader);
            let mut w = BufWriter::new(&stream);
            let _ = server.refusal(&mut r, &mut w, &message).and_then(|_| Ok(w.flush()?));
            drop(w);
            let _ = stream.shutdown(Shutdown::Both);
        })?;
        Ok(())
    }

    /// Stops serving: later requests get `ESHUTDOWN`; each connection
    /// stops reading, finishes and answers what it has read, and flushes
    /// its replies; a client that does not take them within
    /// `SHUTDOWN_GRACE` (2 s) is cut off.
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
}
