//! A real `duraflash serve` for the client tests: started on ports it
//! binds itself, its metrics read over HTTP, stopped for its final report;
//! scratch directories and seeded content.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, Command, Output, Stdio};

/// A running `duraflash serve`, stopped (killed if need be) on drop.
pub struct Served {
    child: Option<Child>,
    /// Its stderr past the lines already read (`early`).
    stderr: BufReader<ChildStderr>,
    early: String,
    pub port: u16,
    metrics_port: u16,
}

/// The port after `scheme://127.0.0.1:` in `line`.
fn port_in(line: &str, scheme: &str) -> Option<u16> {
    let rest = &line[line.find(&format!("{scheme}://127.0.0.1:"))? + scheme.len() + 13..];
    rest[..rest.find('/')?].parse().ok()
}

impl Served {
    pub fn start(capacity: &str) -> Self {
        Self::start_with(capacity, "0")
    }

    /// A server printing its summary line every `stats_interval` seconds.
    pub fn start_with(capacity: &str, stats_interval: &str) -> Self {
        Self::start_args(&["--capacity", capacity, "--stats-interval", stats_interval])
    }

    /// A server started with `args` (and ports of its own).
    pub fn start_args(args: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_duraflash"))
            .arg("serve")
            .args(args)
            .args(["--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("duraflash serve starts");
        let stderr = BufReader::new(child.stderr.take().expect("stderr piped"));
        // Dropped (so killed and waited for) on any failure below.
        let mut served = Served { child: Some(child), stderr, early: String::new(), port: 0, metrics_port: 0 };
        // Both ports are bound, and accepting, once this line is printed.
        loop {
            let at = served.early.len();
            let n = served.stderr.read_line(&mut served.early).expect("server stderr");
            assert!(n > 0, "server exited before serving: {}", served.early);
            let line = &served.early[at..];
            if line.contains("serving") {
                served.port = port_in(line, "nbd").unwrap_or_else(|| panic!("no NBD port in {line:?}"));
                served.metrics_port = port_in(line, "http").unwrap_or_else(|| panic!("no metrics port in {line:?}"));
                return served;
            }
        }
    }

    pub fn uri(&self) -> String {
        format!("nbd://127.0.0.1:{}/duraflash", self.port)
    }

    /// The server's process id (the fio test reads its CPU time; each test
    /// crate compiles this module on its own, and `nbd_ext4.rs` has no use
    /// for it).
    #[allow(dead_code)]
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map(Child::id).unwrap_or_default()
    }

    /// The `/metrics` exposition as name (with labels) -> value.
    pub fn metrics(&self) -> HashMap<String, f64> {
        let mut s = TcpStream::connect(("127.0.0.1", self.metrics_port)).expect("metrics port");
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").expect("request");
        let mut text = String::new();
        s.read_to_string(&mut text).expect("response");
        assert!(text.starts_with("HTTP/1.0 200"), "metrics answer: {text}");
        text.lines()
            .filter(|l| l.starts_with("duraflash_"))
            .filter_map(|l| l.rsplit_once(' ').and_then(|(k, v)| Some((k.to_string(), v.parse().ok()?))))
            .collect()
    }

    pub fn metric(&self, name: &str) -> f64 {
        self.metrics().get(name).copied().unwrap_or_else(|| panic!("no metric {name}"))
    }

    /// SIGTERM, then the final JSON report.
    pub fn stop(self) -> serde_json::Value {
        self.stop_with_stderr().0
    }

    /// SIGTERM, then the final JSON report and what the server printed on stderr.
    pub fn stop_with_stderr(mut self) -> (serde_json::Value, String) {
        let child = self.child.take().expect("running");
        let status = Command::new("sh").args(["-c", &format!("kill -TERM {}", child.id())]).status();
        assert!(status.is_ok_and(|s| s.success()), "kill -TERM");
        let out = child.wait_with_output().expect("server exits");
        let mut stderr = std::mem::take(&mut self.early);
        self.stderr.read_to_string(&mut stderr).expect("server stderr");
        assert!(out.status.success(), "serve exit status {:?}: {stderr}", out.status);
        let report = serde_json::from_slice(&out.stdout).expect("final report is JSON");
        (report, stderr)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs a command, failing the test with its output unless it succeeds.
pub fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A scratch directory removed on drop.
pub struct Scratch(PathBuf);

impl Scratch {
    pub fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("duraflash-nbd-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch dir");
        Scratch(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `len` bytes mixing random, text-like and zero regions (seeded).
pub fn content(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        match (out.len() / 65536) % 3 {
            0 => out.extend_from_slice(&x.to_le_bytes()),
            1 => out.extend_from_slice(b"duraflash "),
            _ => out.extend_from_slice(&[0u8; 8]),
        }
    }
    out.truncate(len);
    out
}
