//! `duraflash serve`: the command-line side of [`duraflash::nbd`]. Checks
//! the flags, builds the drive (or the RAID array of `--members` drives),
//! installs the SIGINT/SIGTERM handlers, prints the bound addresses, the
//! periodic summary and the final JSON report (stdout, or `--json PATH`).
//! The server's life itself is [`duraflash::nbd::Listening`]'s.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

use duraflash::config::{DriveConfig, Media};
use duraflash::host::raid::{Array, Layout, Level, TrimPolicy, DEFAULT_STRIPE_BYTES};
use duraflash::nbd::listen::Event;
use duraflash::nbd::metrics::summary_line;
use duraflash::nbd::{ExportConfig, Limits, Listening, ServeError, ServedDevice, Server, Snapshot};
use duraflash::{ByteSize, Drive};

use crate::commands::{check_output, is_stdout, Provenance};
use crate::{Failure, ServeArgs};

/// The array served instead of one drive, as the report records it.
#[derive(Serialize)]
struct RaidReport {
    members: usize,
    stripe_bytes: u64,
    driver: TrimPolicy,
    layout: Layout,
}

/// The final report.
#[derive(Serialize)]
struct ServeReport<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    export: &'a str,
    /// The array's settings, when an array is served (`config` is then each member's).
    #[serde(skip_serializing_if = "Option::is_none")]
    raid: Option<RaidReport>,
    wall_seconds: f64,
    /// "ok", or the first broken invariant.
    invariants: String,
    #[serde(flatten)]
    snapshot: Snapshot,
}

/// `--level` and `--driver` of an array of `--members` drives; `None` for one drive.
fn array_flags(args: &ServeArgs) -> Result<Option<(Level, TrimPolicy)>, Failure> {
    let usage = |m: String| Err(Failure::Usage(m));
    match (args.members, args.level, args.driver) {
        (0, ..) => usage("--members: at least 1".into()),
        (1, Some(_), _) => usage("--level: needs --members 2 or more".into()),
        (1, _, Some(_)) => usage("--driver: needs --members 2 or more".into()),
        (1, None, None) if args.stripe.is_some() => usage("--stripe: needs --members 2 or more".into()),
        (1, None, None) => Ok(None),
        (n, None, _) => usage(format!("--level: required with --members {n} (valid: 0, 1, 10)")),
        (n, _, None) => {
            usage(format!("--driver: required with --members {n} (valid: rst-10.6, rst-11.2, passthrough)"))
        }
        (n, Some(_), Some(_)) if args.image.is_some() => {
            usage(format!("--image: not supported with --members {n} (an array is not saved to an image)"))
        }
        (_, Some(level), Some(driver)) => Ok(Some((level, driver))),
    }
}

/// Where the final report goes: stdout, or a file opened for writing at
/// start-up, so an unwritable `--json PATH` is refused before the server
/// runs rather than after it has lost the report. A file this run created
/// and never wrote is removed again, however the run ends.
enum ReportOut {
    Stdout,
    File { file: std::fs::File, path: PathBuf, created: bool, written: bool },
}

impl ReportOut {
    fn open(json: Option<&Path>) -> Result<Self, Failure> {
        let Some(path) = json.filter(|p| !is_stdout(p)) else { return Ok(ReportOut::Stdout) };
        let created = !path.exists();
        // Not truncated yet: a refused start keeps an earlier report.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
            .map_err(|e| Failure::Usage(format!("--json {}: cannot write there: {e}", path.display())))?;
        Ok(ReportOut::File { file, path: path.to_path_buf(), created, written: false })
    }

    fn write(&mut self, json: &str) -> Result<(), Failure> {
        match self {
            ReportOut::Stdout => say!("{json}"),
            ReportOut::File { file, path, written, .. } => {
                *written = true;
                // Truncated only now, and only a regular file (not /dev/stdout or a pipe).
                file.metadata()
                    .and_then(|m| if m.is_file() { file.set_len(0) } else { Ok(()) })
                    .and_then(|_| file.write_all(json.as_bytes()))
                    .and_then(|_| file.write_all(b"\n"))
                    .and_then(|_| file.flush())
                    .map_err(|e| Failure::Run(format!("--json {}: {e}", path.display())))
            }
        }
    }
}

impl Drop for ReportOut {
    fn drop(&mut self) {
        if let ReportOut::File { path, created: true, written: false, .. } = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A duration flag's value: seconds (`600`, `1.5`), or a number with `s`,
/// `m` or `h` (`90s`, `10m`, `1h`).
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let scale = match unit {
        "s" => 1.0,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("unknown unit '{unit}' (valid: s, m, h; a plain number is seconds)")),
    };
    number
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n >= 0.0)
        .and_then(|n| Duration::try_from_secs_f64(n * scale).ok())
        .ok_or_else(|| "not a duration >= 0 (e.g. 600, 90s, 10m, 1h)".to_string())
}

pub(crate) fn serve(args: ServeArgs) -> Result<(), Failure> {
    if args.qd == 0 {
        return Err(Failure::Usage("--qd: must be at least 1".into()));
    }
    if args.max_connections == 0 {
        return Err(Failure::Usage("--max-connections: must be at least 1".into()));
    }
    if !args.stats_interval.is_finite() || args.stats_interval < 0.0 {
        return Err(Failure::Usage(format!(
            "--stats-interval: '{:?}' is not a number of seconds >= 0",
            args.stats_interval
        )));
    }
    if args.export.len() > 4096 || args.export.contains('\0') {
        return Err(Failure::Usage("--export: a name of at most 4096 bytes without NUL".into()));
    }
    let interval = Duration::try_from_secs_f64(args.stats_interval)
        .map_err(|_| Failure::Usage(format!("--stats-interval {:?}: out of range", args.stats_interval)))?;
    let array = array_flags(&args)?;
    let members = crate::cli::bounds::members(args.members)?;
    let cfg = args.drive.build_held(crate::cli::Reads::Data, members).map_err(Failure::Usage)?;
    if let Some(json) = &args.json {
        check_output(
            "--json",
            json,
            &[("--image", args.image.as_deref()), ("--config", args.drive.config.as_deref())],
        )?;
    }
    let mut out = ReportOut::open(args.json.as_deref())?;
    let Some((level, driver)) = array else {
        // The image's lock is taken before it is read or created and held
        // until the server has finished with it (dropped on return, or with
        // the process): a second server on the same image would overwrite
        // this one's acknowledged writes with its own checkpoints.
        let fresh_image = args.image.as_deref().filter(|p| !p.exists());
        let (drive, _lock) = crate::open_drive(cfg.clone(), args.image.as_deref())?;
        if fresh_image.is_some() {
            // The image exists from the start: a crash before the first flush resumes this drive.
            crate::save_image(&drive, fresh_image)?;
        }
        let description = format!("{} ({}, {})", cfg.name, ByteSize(cfg.logical_bytes), cfg.firmware.name);
        return export(drive, &args, &cfg, (cfg.name.clone(), description), None, interval, &mut out);
    };
    let stripe = args.stripe.map_or(DEFAULT_STRIPE_BYTES, |s| s.0);
    let members = (0..args.members)
        .map(|_| Drive::new(cfg.clone()).map_err(|e| Failure::Usage(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    let array = Array::new(level, stripe, driver, members).map_err(|e| Failure::Usage(e.to_string()))?;
    let name = format!("RAID-{level} of {} x {}", args.members, cfg.name);
    let description = format!(
        "{name} ({} each, {}, stripe {}, driver {driver})",
        ByteSize(cfg.logical_bytes),
        cfg.firmware.name,
        ByteSize(stripe)
    );
    let raid = RaidReport { members: args.members, stripe_bytes: stripe, driver, layout: *array.layout() };
    export(array, &args, &cfg, (name, description), Some(raid), interval, &mut out)
}

/// Serves `dev` (called `name`, offered with `description`) until a
/// signal, then reports.
fn export<D: ServedDevice>(
    dev: D,
    args: &ServeArgs,
    cfg: &DriveConfig,
    (name, description): (String, String),
    raid: Option<RaidReport>,
    interval: Duration,
    out: &mut ReportOut,
) -> Result<(), Failure> {
    if cfg.media == Media::MetadataOnly {
        note!("duraflash: note: --media metadata-only keeps no data; reads of written units fail with ENOTSUP");
    }
    let term = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal while shutting down exits at once.
        signal_hook::flag::register_conditional_shutdown(sig, 1, Arc::clone(&term))
            .and_then(|_| signal_hook::flag::register(sig, Arc::clone(&term)))
            .map_err(|e| Failure::Run(format!("cannot install signal handlers: {e}")))?;
    }
    let export = ExportConfig {
        name: args.export.clone(),
        description: format!("duraflash {description}"),
        queue_depth: args.qd,
    };
    let limits = Limits {
        max_connections: args.max_connections,
        idle_timeout: Some(args.idle_timeout).filter(|t| !t.is_zero()),
    };
    let mut server = Server::new(dev, export).with_limits(limits);
    if let Some(path) = &args.image {
        server = server.with_image(path.clone());
    }
    let listening = Listening::bind(server, args.listen, args.metrics)
        .map_err(|e| match e {
            ServeError::BindMetrics { addr, source } => Failure::Run(format!("--metrics {addr}: {source}")),
            ServeError::BindNbd { addr, source } => Failure::Run(format!("--listen {addr}: {source}")),
            e => Failure::Run(e.to_string()),
        })?
        .with_check_interval(args.check_interval);
    // The addresses bound, which differ from those asked for when a port is 0.
    note!(
        "duraflash: serving {name} ({} bytes) at nbd://{}/{}{}",
        listening.server().size(),
        listening.nbd_addr(),
        args.export,
        listening.metrics_addr().map(|m| format!(", metrics at http://{m}/metrics")).unwrap_or_default()
    );
    let finished = listening
        .run(&term, interval, |event| match event {
            Event::Tick(s) => note!("{}", summary_line(s)),
            Event::Refused(e) => note!("duraflash: connection refused: {e}"),
            Event::AcceptFailed(e) => note!("duraflash: accept: {e}"),
            Event::InvariantBroken(e) => note!("duraflash: drive invariant broken: {e}"),
            Event::ShuttingDown => note!("duraflash: shutting down"),
        })
        .map_err(|e| match e {
            ServeError::Checkpoint(e) => Failure::Run(format!("--image: {e}")),
            e => Failure::Run(e.to_string()),
        })?;
    note!("{}", summary_line(&finished.snapshot));
    let invariants = finished.invariants.err().map_or_else(|| "ok".to_string(), |e| e.to_string());
    let report = ServeReport {
        provenance: Provenance::new(cfg),
        export: &args.export,
        raid,
        wall_seconds: finished.wall_seconds,
        invariants: invariants.clone(),
        snapshot: finished.snapshot,
    };
    let json = serde_json::to_string_pretty(&report).map_err(|e| Failure::Run(e.to_string()))?;
    out.write(&json)?;
    if invariants != "ok" {
        return Err(Failure::Run(format!("drive invariant broken: {invariants}")));
    }
    Ok(())
}
