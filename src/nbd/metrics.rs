//! Live visibility of a served device: the one-line summary, the
//! Prometheus text exposition of the same counters, and a minimal
//! HTTP/1.0 responder for `GET /metrics`: one short-lived thread per
//! scrape, at most [`MAX_SCRAPES`] at once, each given
//! [`REQUEST_TIMEOUT`] in all to send its request, so a slow or silent
//! client delays no other scrape (and a flood of them one by at most that).
//!
//! The SMART attributes come from [`crate::host::smart`]: the drive vendor's
//! table, raw values in each attribute's unit. An array's counters are its
//! members' combined; each member's own, and its SMART table, carry a
//! `member` label.

use std::fmt::Write as _;
use std::io::{self, ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::device::ServedDevice;
use super::server::{Server, Snapshot};
use crate::device::Stats;

const GIB: f64 = (1u64 << 30) as f64;

/// Longest HTTP request head read before answering.
const MAX_HTTP_REQUEST: u64 = 8192;

/// Scrapes answered at once. Beyond them, new connections wait in the
/// listen backlog until one finishes, at most [`REQUEST_TIMEOUT`] later.
pub const MAX_SCRAPES: usize = 64;

/// Time a scraper has to send its whole request head.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(1);

/// Time a scraper has to take the response.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(5);

/// Stack of a scrape's thread: the exposition is built on the heap.
const SCRAPE_STACK: usize = 256 << 10;

/// One line for stderr: host and NAND GiB, WAF, ratios, free blocks.
pub fn summary_line(s: &Snapshot) -> String {
    let st = &s.stats;
    format!(
        "serve: sim {:.3} s | host W {:.3} GiB R {:.3} GiB | NAND {:.3} GiB | WAF {:.3} | compression {:.3} | \
         dedup {:.3} | free blocks {} | mapped units {} | {} requests, {} clients",
        s.sim_seconds,
        st.host_write_bytes as f64 / GIB,
        st.host_read_bytes as f64 / GIB,
        st.nand_bytes_programmed as f64 / GIB,
        st.waf,
        st.compression_ratio,
        st.dedup_ratio,
        st.free_blocks,
        st.mapped_units,
        s.served.requests(),
        s.served.open_connections,
    )
}

/// The Prometheus text exposition (format 0.0.4) of `s`.
pub fn prometheus(s: &Snapshot) -> String {
    let st = &s.stats;
    let sv = &s.served;
    let mut out = String::new();
    let mut metric = |name: &str, kind: &str, help: &str, value: f64| {
        let _ =
            writeln!(out, "# HELP duraflash_{name} {help}\n# TYPE duraflash_{name} {kind}\nduraflash_{name} {value}");
    };
    metric("sim_seconds", "gauge", "Simulated time of the latest completion.", s.sim_seconds);
    metric("size_bytes", "gauge", "Export size.", s.size_bytes as f64);
    metric("host_write_bytes_total", "counter", "Bytes the host wrote.", st.host_write_bytes as f64);
    metric("host_read_bytes_total", "counter", "Bytes the host read.", st.host_read_bytes as f64);
    metric("host_write_units_total", "counter", "Units written.", st.host_write_units as f64);
    metric("host_trim_units_total", "counter", "Units unmapped by TRIM.", st.host_trim_units as f64);
    metric("dedup_hits_total", "counter", "Unit writes whose content was already stored.", st.dedup_hits as f64);
    metric("new_chunks_total", "counter", "Unit writes that stored new content.", st.new_chunks as f64);
    metric("new_raw_bytes_total", "counter", "Raw bytes of new chunks.", st.new_raw_bytes as f64);
    metric("new_stored_bytes_total", "counter", "Compressed bytes of new chunks.", st.new_stored_bytes as f64);
    metric("nand_bytes_programmed_total", "counter", "NAND bytes programmed.", st.nand_bytes_programmed as f64);
    metric("nand_pages_read_total", "counter", "NAND pages read.", st.nand_pages_read as f64);
    metric("gc_relocated_bytes_total", "counter", "Stored bytes moved by GC.", st.gc_relocated_bytes as f64);
    metric("gc_victims_total", "counter", "Blocks cleaned by GC.", st.gc_victims as f64);
    metric("erases_total", "counter", "Block erases.", st.erases as f64);
    metric("waf", "gauge", "NAND bytes programmed per host byte written.", st.waf);
    metric("compression_ratio", "gauge", "Stored / raw bytes of new chunks.", st.compression_ratio);
    metric("dedup_ratio", "gauge", "New chunks / unit writes.", st.dedup_ratio);
    metric("live_chunks", "gauge", "Chunks stored.", st.live_chunks as f64);
    metric("mapped_units", "gauge", "Units mapped.", st.mapped_units as f64);
    metric("live_bytes", "gauge", "Stored bytes of live chunks.", st.live_bytes as f64);
    metric("free_blocks", "gauge", "Erased blocks ready for writing.", f64::from(st.free_blocks));
    metric("pe_cycles_min", "gauge", "Fewest P/E cycles of any block.", f64::from(st.pe_min));
    metric("pe_cycles_avg", "gauge", "Mean P/E cycles.", st.pe_avg);
    metric("pe_cycles_max", "gauge", "Most P/E cycles of any block.", f64::from(st.pe_max));
    metric("nbd_connections_total", "counter", "Connections accepted.", sv.connections as f64);
    metric("nbd_open_connections", "gauge", "Connections open.", sv.open_connections as f64);
    metric("nbd_errors_total", "counter", "Requests answered with an error.", sv.errors as f64);
    metric("nbd_refused_total", "counter", "Clients refused at the connection limit.", sv.refused as f64);
    metric("nbd_idle_disconnects_total", "counter", "Clients disconnected when idle.", sv.idle_disconnects as f64);
    if let Some(c) = &s.invariants {
        metric(
            "invariants_ok",
            "gauge",
            "1 if the latest invariant check passed, else 0.",
            f64::from(c.result.is_ok()),
        );
        metric(
            "invariants_checked_timestamp_seconds",
            "gauge",
            "Wall-clock time of the latest invariant check, seconds since the Unix epoch.",
            c.unix_seconds,
        );
        metric(
            "invariants_checked_sim_seconds",
            "gauge",
            "Simulated time of the drive at the latest invariant check.",
            c.sim_seconds,
        );
        metric("invariants_check_seconds", "gauge", "Wall time the latest invariant check took.", c.took_seconds);
    }
    let _ = writeln!(out, "# HELP duraflash_nbd_requests_total Requests answered, by command.");
    let _ = writeln!(out, "# TYPE duraflash_nbd_requests_total counter");
    for (cmd, n) in [
        ("read", sv.reads),
        ("write", sv.writes),
        ("trim", sv.trims),
        ("write_zeroes", sv.write_zeroes),
        ("flush", sv.flushes),
        ("block_status", sv.block_status),
    ] {
        let _ = writeln!(out, "duraflash_nbd_requests_total{{command=\"{cmd}\"}} {n}");
    }
    if !s.members.is_empty() {
        for (name, kind, help, value) in MEMBER_METRICS {
            let _ = writeln!(out, "# HELP duraflash_member_{name} {help}\n# TYPE duraflash_member_{name} {kind}");
            for (i, m) in s.members.iter().enumerate() {
                let _ = writeln!(out, "duraflash_member_{name}{{member=\"{i}\"}} {}", value(&m.stats));
            }
        }
    }
    let _ = writeln!(out, "# HELP duraflash_smart_raw SMART attributes, raw values in each attribute's unit.");
    let _ = writeln!(out, "# TYPE duraflash_smart_raw gauge");
    for a in s.smart.iter().flat_map(|t| &t.attributes) {
        let _ = writeln!(out, "duraflash_smart_raw{{id=\"{}\",name=\"{}\"}} {}", a.id, a.name, a.raw);
    }
    for (i, m) in s.members.iter().enumerate() {
        for a in &m.smart.attributes {
            let _ =
                writeln!(out, "duraflash_smart_raw{{member=\"{i}\",id=\"{}\",name=\"{}\"}} {}", a.id, a.name, a.raw);
        }
    }
    out
}

/// Each array member's own counters, exposed with a `member` label.
type MemberMetric = (&'static str, &'static str, &'static str, fn(&Stats) -> f64);
const MEMBER_METRICS: [MemberMetric; 6] = [
    ("host_write_bytes_total", "counter", "Bytes the member was sent to write.", |s| s.host_write_bytes as f64),
    ("host_trim_units_total", "counter", "Member units unmapped by TRIM.", |s| s.host_trim_units as f64),
    ("nand_bytes_programmed_total", "counter", "Member NAND bytes programmed.", |s| s.nand_bytes_programmed as f64),
    ("mapped_units", "gauge", "Member units mapped.", |s| s.mapped_units as f64),
    ("live_bytes", "gauge", "Stored bytes of the member's live chunks.", |s| s.live_bytes as f64),
    ("free_blocks", "gauge", "Member erased blocks ready for writing.", |s| f64::from(s.free_blocks)),
];

/// Answers HTTP requests on `listener` until the process ends: `GET
/// /metrics` gets the exposition, anything else 404.
pub fn serve_metrics<D: ServedDevice>(listener: TcpListener, server: Arc<Server<D>>) {
    let busy = Arc::new((Mutex::new(0usize), Condvar::new()));
    loop {
        // Wait for a free slot before accepting: the backlog holds the rest.
        {
            let (count, freed) = &*busy;
            let Ok(mut n) = count.lock() else { return };
            while *n >= MAX_SCRAPES {
                n = match freed.wait(n) {
                    Ok(n) => n,
                    Err(_) => return,
                };
            }
            *n += 1;
        }
        let slot = ScrapeSlot(Arc::clone(&busy));
        let stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of file descriptors, say: do not spin.
                std::thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let server = Arc::clone(&server);
        // A misbehaving scraper only loses its own request; if no thread
        // can be started, the connection is closed (the slot with it).
        let _ = std::thread::Builder::new().name("metrics-scrape".into()).stack_size(SCRAPE_STACK).spawn(move || {
            let _slot = slot;
            let _ = answer(stream, &server);
        });
    }
}

/// One of the [`MAX_SCRAPES`] places, given back when the scrape ends.
struct ScrapeSlot(Arc<(Mutex<usize>, Condvar)>);

impl Drop for ScrapeSlot {
    fn drop(&mut self) {
        let (count, freed) = &*self.0;
        if let Ok(mut n) = count.lock() {
            *n -= 1;
            freed.notify_one();
        }
    }
}

fn answer<D: ServedDevice>(mut stream: TcpStream, server: &Server<D>) -> io::Result<()> {
    stream.set_write_timeout(Some(RESPONSE_TIMEOUT))?;
    // One deadline for the whole head: a byte a second does not extend it.
    let deadline = Instant::now() + REQUEST_TIMEOUT;
    let mut head = Vec::new();
    let mut limited = (&stream).take(MAX_HTTP_REQUEST);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && !head.windows(2).any(|w| w == b"\n\n") {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(ErrorKind::TimedOut.into());
        }
        limited.get_ref().set_read_timeout(Some(left))?;
        let n = limited.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
    let mut parts = line.split(|&b| b == b' ');
    let (method, path) = (parts.next().unwrap_or_default(), parts.next().unwrap_or_default());
    let (status, body) = match (method, path) {
        (b"GET", b"/metrics") => match server.snapshot(false) {
            Some(s) => ("200 OK", prometheus(&s)),
            None => ("500 Internal Server Error", "drive failed\n".to_string()),
        },
        _ => ("404 Not Found", "try GET /metrics\n".to_string()),
    };
    write!(
        stream,
        "HTTP/1.0 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}
