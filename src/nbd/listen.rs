//! A server's life as a process runs it: the metrics and NBD ports bound
//! (metrics first: once the NBD port accepts, both do), connections
//! accepted until a stop flag is raised, a periodic snapshot, then
//! shutdown, the last checkpoint, the final snapshot and the invariant
//! check.
//!
//! Owns the listening sockets. Does not own signals, printing or the
//! report's format: the caller raises the flag (from a signal handler,
//! say) and hears about the loop through [`Event`]s.

use std::io::{self, ErrorKind};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use thiserror::Error;

use super::device::{DeviceError, ServedDevice};
use super::metrics::serve_metrics;
use super::server::{Server, Snapshot};

/// How often the accept loop looks at the stop flag when no client connects.
const POLL: Duration = Duration::from_millis(20);

/// Default time between invariant checks while serving
/// ([`Listening::with_check_interval`]).
pub const CHECK_INTERVAL: Duration = Duration::from_secs(60);

/// What can stop a server from starting or finishing.
#[derive(Debug, Error)]
pub enum ServeError {
    /// The metrics address cannot be bound.
    #[error("metrics address {addr}: {source}")]
    BindMetrics {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    /// The NBD address cannot be bound.
    #[error("NBD address {addr}: {source}")]
    BindNbd {
        addr: SocketAddr,
        #[source]
        source: io::Error,
    },
    /// A socket or thread operation failed.
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The checkpoint on shutdown failed.
    #[error("checkpoint on shutdown: {0}")]
    Checkpoint(String),
    /// A command panicked earlier, so there is no final snapshot.
    #[error("the drive failed (internal error)")]
    Failed,
}

/// What the accept loop tells its caller.
#[derive(Debug)]
pub enum Event<'a> {
    /// The periodic snapshot (without latencies).
    Tick(&'a Snapshot),
    /// An accepted connection could not be served.
    Refused(io::Error),
    /// Accepting failed (the loop goes on).
    AcceptFailed(io::Error),
    /// A periodic invariant check failed (the device keeps serving; the
    /// final check decides the exit).
    InvariantBroken(&'a DeviceError),
    /// The stop flag was seen; connections are being shut down.
    ShuttingDown,
}

/// How a server ended.
#[derive(Debug)]
pub struct Finished {
    /// The final snapshot, with latencies.
    pub snapshot: Snapshot,
    /// The device's invariant check.
    pub invariants: Result<(), DeviceError>,
    /// Wall time from the start of [`Listening::run`].
    pub wall_seconds: f64,
}

/// A server whose ports are bound and accepting.
pub struct Listening<D: ServedDevice> {
    server: Arc<Server<D>>,
    listener: TcpListener,
    nbd_addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    check_interval: Duration,
}

impl<D: ServedDevice> Listening<D> {
    /// Binds `metrics` (if given; answered on its own thread from now on),
    /// then `nbd`. Port 0 binds any free port: see [`Listening::nbd_addr`].
    pub fn bind(server: Server<D>, nbd: SocketAddr, metrics: Option<SocketAddr>) -> Result<Self, ServeError> {
        let metrics = metrics
            .map(|addr| TcpListener::bind(addr).map_err(|source| ServeError::BindMetrics { addr, source }))
            .transpose()?;
        let listener = TcpListener::bind(nbd).map_err(|source| ServeError::BindNbd { addr: nbd, source })?;
        listener.set_nonblocking(true)?;
        let server = Arc::new(server);
        let nbd_addr = listener.local_addr()?;
        let metrics_addr = metrics.as_ref().map(TcpListener::local_addr).transpose()?;
        if let Some(metrics) = metrics {
            let s = Arc::clone(&server);
            std::thread::Builder::new().name("metrics".into()).spawn(move || serve_metrics(metrics, s))?;
        }
        Ok(Listening { server, listener, nbd_addr, metrics_addr, check_interval: CHECK_INTERVAL })
    }

    /// Checks the device's invariants when [`Listening::run`] starts and
    /// then every `interval` if a command changed it meanwhile (never
    /// while serving when zero: only on shutdown). The result is kept for
    /// the metrics ([`Server::last_check`]); the device is locked while a
    /// check runs, so on a large drive a short interval costs throughput.
    pub fn with_check_interval(mut self, interval: Duration) -> Self {
        self.check_interval = interval;
        self
    }

    /// The NBD address bound.
    pub fn nbd_addr(&self) -> SocketAddr {
        self.nbd_addr
    }

    /// The metrics address bound, if any.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// The server.
    pub fn server(&self) -> &Arc<Server<D>> {
        &self.server
    }

    /// Accepts connections until `stop` is set, passing a snapshot to
    /// `event` every `interval` (never when zero) and checking the device
    /// every check interval (see [`Listening::with_check_interval`]); then
    /// shuts the server down, checkpoints it (when it has an image) and
    /// takes the final snapshot and invariant check.
    pub fn run(
        self,
        stop: &AtomicBool,
        interval: Duration,
        mut event: impl FnMut(Event),
    ) -> Result<Finished, ServeError> {
        let started = Instant::now();
        let mut last = Instant::now();
        let checking = !self.check_interval.is_zero();
        let mut checked = Instant::now();
        let check = |event: &mut dyn FnMut(Event)| {
            if let Some(Err(e)) = self.server.check_if_changed() {
                event(Event::InvariantBroken(&e));
            }
        };
        if checking {
            check(&mut event);
        }
        while !stop.load(Ordering::SeqCst) {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    if let Err(e) = stream.set_nonblocking(false).and_then(|_| self.server.spawn(stream)) {
                        event(Event::Refused(e));
                    }
                    continue;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                Err(e) => event(Event::AcceptFailed(e)),
            }
            std::thread::sleep(POLL);
            if !interval.is_zero() && last.elapsed() >= interval {
                last = Instant::now();
                if let Some(s) = self.server.snapshot(false) {
                    event(Event::Tick(&s));
                }
            }
            if checking && checked.elapsed() >= self.check_interval {
                check(&mut event);
                checked = Instant::now();
            }
        }
        event(Event::ShuttingDown);
        drop(self.listener);
        self.server.shutdown();
        self.server.checkpoint().map_err(ServeError::Checkpoint)?;
        let snapshot = self.server.snapshot(true).ok_or(ServeError::Failed)?;
        let invariants = self.server.check_invariants();
        Ok(Finished { snapshot, invariants, wall_seconds: started.elapsed().as_secs_f64() })
    }
}
