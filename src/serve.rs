//! `duraflash serve`: the drive as an NBD export until SIGINT/SIGTERM,
//! with a periodic summary on stderr, optional Prometheus metrics, and a
//! final JSON report (stdout, or `--json PATH`).

use std::io::{ErrorKind, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::Serialize;

use duraflash::config::Media;
use duraflash::nbd::metrics::{serve_metrics, summary_line};
use duraflash::nbd::{ExportConfig, Server, Snapshot};
use duraflash::ByteSize;

use crate::commands::{is_stdout, Provenance};
use crate::{Failure, ServeArgs};

/// Capacity `serve` uses when none is given: big enough for a filesystem,
/// small enough that its map and data fit comfortably in memory.
const SERVE_DEFAULT_CAPACITY: u64 = 1 << 30;

/// How often the accept loop looks for a signal when no client connects.
const POLL: Duration = Duration::from_millis(20);

/// The final report.
#[derive(Serialize)]
struct ServeReport<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    export: &'a str,
    wall_seconds: f64,
    /// "ok", or the first broken invariant.
    invariants: String,
    #[serde(flatten)]
    snapshot: Snapshot,
}

pub(crate) fn serve(args: ServeArgs) -> Result<(), Failure> {
    if !args.stats_interval.is_finite() || args.stats_interval < 0.0 {
        return Err(Failure::Usage(format!(
            "--stats-interval: '{}' is not a number of seconds >= 0",
            args.stats_interval
        )));
    }
    if args.export.len() > 4096 || args.export.contains('\0') {
        return Err(Failure::Usage("--export: a name of at most 4096 bytes without NUL".into()));
    }
    let interval = Duration::try_from_secs_f64(args.stats_interval)
        .map_err(|_| Failure::Usage(format!("--stats-interval {}: out of range", args.stats_interval)))?;
    let cfg = args.drive.build(Some(SERVE_DEFAULT_CAPACITY)).map_err(Failure::Usage)?;
    let fresh_image = args.image.as_deref().filter(|p| !p.exists());
    let drive = crate::open_drive(cfg.clone(), args.image.as_deref())?;
    if fresh_image.is_some() {
        // The image exists from the start: a crash before the first flush resumes this drive.
        crate::save_image(&drive, fresh_image)?;
    }
    if cfg.media == Media::MetadataOnly {
        eprintln!("duraflash: note: --media metadata-only keeps no data; reads of written units fail with ENOTSUP");
    }
    let term = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal while shutting down exits at once.
        signal_hook::flag::register_conditional_shutdown(sig, 1, Arc::clone(&term))
            .and_then(|_| signal_hook::flag::register(sig, Arc::clone(&term)))
            .map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;
    }
    // The metrics port is bound first: once the NBD port accepts, both do.
    let metrics = args
        .metrics
        .map(|addr| TcpListener::bind(addr).map_err(|e| Failure::Run(format!("--metrics {addr}: {e}"))))
        .transpose()?;
    let listener =
        TcpListener::bind(args.listen).map_err(|e| Failure::Run(format!("--listen {}: {e}", args.listen)))?;
    listener.set_nonblocking(true).map_err(|e| Failure::Run(e.to_string()))?;
    let description = format!("duraflash {} ({}, {})", cfg.name, ByteSize(cfg.logical_bytes), cfg.firmware.name);
    let export = ExportConfig { name: args.export.clone(), description, queue_depth: args.qd };
    let mut server = Server::new(drive, export);
    if let Some(path) = &args.image {
        server = server.with_image(path.clone());
    }
    let server = Arc::new(server);
    // The addresses bound, which differ from those asked for when a port is 0.
    let bound = |l: &TcpListener| l.local_addr().map_err(|e| Failure::Run(e.to_string()));
    let nbd_addr = bound(&listener)?;
    let metrics_addr = metrics.as_ref().map(bound).transpose()?;
    if let Some(metrics) = metrics {
        let s = Arc::clone(&server);
        std::thread::Builder::new()
            .name("metrics".into())
            .spawn(move || serve_metrics(metrics, s))
            .map_err(|e| Failure::Run(e.to_string()))?;
    }
    eprintln!(
        "duraflash: serving {} ({} bytes) at nbd://{}/{}{}",
        cfg.name,
        server.size(),
        nbd_addr,
        args.export,
        metrics_addr.map(|m| format!(", metrics at http://{m}/metrics")).unwrap_or_default()
    );
    let started = Instant::now();
    let mut last = Instant::now();
    while !term.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => {
                if let Err(e) = stream.set_nonblocking(false).and_then(|_| server.spawn(stream)) {
                    eprintln!("duraflash: connection refused: {e}");
                }
                continue;
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(e) => eprintln!("duraflash: accept: {e}"),
        }
        std::thread::sleep(POLL);
        if !interval.is_zero() && last.elapsed() >= interval {
            last = Instant::now();
            if let Some(s) = server.snapshot(false) {
                eprintln!("{}", summary_line(&s));
            }
        }
    }
    eprintln!("duraflash: shutting down");
    server.shutdown();
    if args.image.is_some() {
        server.checkpoint().map_err(|e| Failure::Run(format!("--image: {e}")))?;
    }
    let snapshot = server.snapshot(true).ok_or_else(|| Failure::Run("the drive failed (internal error)".into()))?;
    let invariants = match server.with_device(|d| d.check_invariants()) {
        Some(Ok(())) => "ok".to_string(),
        Some(Err(e)) => e,
        None => "the drive failed (internal error)".to_string(),
    };
    eprintln!("{}", summary_line(&snapshot));
    let report = ServeReport {
        provenance: Provenance::new(&cfg),
        export: &args.export,
        wall_seconds: started.elapsed().as_secs_f64(),
        invariants: invariants.clone(),
        snapshot,
    };
    let json = serde_json::to_string_pretty(&report).map_err(|e| Failure::Run(e.to_string()))?;
    match args.json.as_deref() {
        Some(p) if !is_stdout(p) => {
            std::fs::write(p, json + "\n").map_err(|e| Failure::Run(format!("--json {}: {e}", p.display())))?
        }
        _ => {
            println!("{json}");
            std::io::stdout().flush().map_err(|e| Failure::Run(e.to_string()))?;
        }
    }
    if invariants != "ok" {
        return Err(Failure::Run(format!("drive invariant broken: {invariants}")));
    }
    Ok(())
}
