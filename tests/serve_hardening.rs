//! `duraflash serve` against hostile or careless use: two servers on one
//! image, slow metrics scrapers, clients that take every connection slot
//! and sit idle, flags that would only fail at shutdown. Each test starts
//! the real binary on ports it binds itself (port 0) and reads them from
//! its "serving" line on stderr.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `duraflash serve`, killed on drop.
struct Serve {
    child: Child,
    lines: Receiver<String>,
    /// Everything it printed on stderr so far.
    stderr: Arc<Mutex<String>>,
    port: u16,
    metrics_port: Option<u16>,
}

/// The port after `scheme://127.0.0.1:` in `line`.
fn port_in(line: &str, scheme: &str) -> Option<u16> {
    let rest = &line[line.find(&format!("{scheme}://127.0.0.1:"))? + scheme.len() + 13..];
    rest[..rest.find('/')?].parse().ok()
}

fn spawn(args: &[&str]) -> (Child, Receiver<String>, Arc<Mutex<String>>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_duraflash"))
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("duraflash serve starts");
    let stderr = BufReader::new(child.stderr.take().expect("stderr piped"));
    let all = Arc::new(Mutex::new(String::new()));
    let (tx, rx) = mpsc::channel();
    let keep = Arc::clone(&all);
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            keep.lock().expect("stderr buffer").push_str(&format!("{line}\n"));
            let _ = tx.send(line);
        }
    });
    (child, rx, all)
}

impl Serve {
    /// A server started with `args` (plus `--listen 127.0.0.1:0`), once it serves.
    fn start(args: &[&str]) -> Self {
        let mut all = vec!["--listen", "127.0.0.1:0", "--capacity", "64MiB", "--stats-interval", "0"];
        all.extend_from_slice(args);
        let (child, lines, stderr) = spawn(&all);
        let mut served = Serve { child, lines, stderr, port: 0, metrics_port: None };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match served.lines.recv_timeout(left) {
                Ok(line) if line.contains("serving") => {
                    served.port = port_in(&line, "nbd").unwrap_or_else(|| panic!("no NBD port in {line:?}"));
                    served.metrics_port = port_in(&line, "http");
                    return served;
                }
                Ok(_) => {}
                Err(e) => panic!("server not serving ({e:?}): {}", served.stderr()),
            }
        }
    }

    fn stderr(&self) -> String {
        self.stderr.lock().expect("stderr buffer").clone()
    }

    /// SIGTERM, then the exit code and stdout.
    fn stop(mut self) -> (Option<i32>, String) {
        let status = Command::new("kill").args(["-TERM", &self.child.id().to_string()]).status();
        assert!(status.is_ok_and(|s| s.success()), "kill -TERM");
        let code = self.child.wait().expect("server exits").code();
        let mut out = String::new();
        self.child.stdout.take().expect("stdout piped").read_to_string(&mut out).expect("stdout");
        (code, out)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `serve args` expecting it to exit within `timeout` (it is killed
/// otherwise: the test then fails); its exit code and stderr.
fn run_to_exit(args: &[&str], timeout: Duration) -> (Option<i32>, String) {
    let (mut child, _lines, stderr) = spawn(args);
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            // Let the reader thread take the last lines.
            std::thread::sleep(Duration::from_millis(100));
            return (status.code(), stderr.lock().expect("stderr").clone());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            let text = stderr.lock().expect("stderr").clone();
            panic!("serve {args:?} still running after {timeout:?}: {text}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A fresh directory for one test.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("duraflash-hardening-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn stderr_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.trim().is_empty()).collect()
}

#[test]
fn a_second_server_on_the_same_image_exits_1_naming_the_holder() {
    let d = dir("lock");
    let image = d.join("shared.img");
    let image_arg = image.to_str().expect("utf-8 path");
    let first = Serve::start(&["--image", image_arg]);
    // The same flags: only the lock stands between the two.
    let (code, stderr) = run_to_exit(
        &["--listen", "127.0.0.1:0", "--capacity", "64MiB", "--stats-interval", "0", "--image", image_arg],
        Duration::from_secs(30),
    );
    assert_eq!(code, Some(1), "second serve: {stderr}");
    let lines = stderr_lines(&stderr);
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(lines[0].contains(image_arg), "names the image: {stderr}");
    assert!(lines[0].contains(&format!("process {}", first.child.id())), "names the holder's pid: {stderr}");
    // The first is unharmed, and once it has gone the image is free again.
    let (code, _) = first.stop();
    assert_eq!(code, Some(0));
    let again = Serve::start(&["--image", image_arg]);
    assert_eq!(again.stop().0, Some(0));
    std::fs::remove_dir_all(&d).ok();
}

#[test]
fn serve_qd_0_is_a_usage_error_naming_the_flag() {
    let (code, stderr) = run_to_exit(&["--listen", "127.0.0.1:0", "--qd", "0"], Duration::from_secs(30));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--qd"), "{stderr}");
    assert_eq!(stderr_lines(&stderr).len(), 1, "{stderr}");
}

#[test]
fn an_unwritable_json_path_is_refused_at_start_up() {
    let d = dir("json");
    // Root may write anywhere: a missing directory and a directory are
    // unwritable for everyone.
    for path in [d.join("missing").join("report.json"), d.clone()] {
        let p = path.to_str().expect("utf-8 path");
        let (code, stderr) = run_to_exit(&["--listen", "127.0.0.1:0", "--json", p], Duration::from_secs(30));
        assert_eq!(code, Some(2), "{p}: {stderr}");
        assert!(stderr.contains("--json") && stderr.contains(p), "{p}: {stderr}");
        assert_eq!(stderr_lines(&stderr).len(), 1, "{stderr}");
    }
    // A writable one gets the report at shutdown; a refused start leaves no file behind.
    let report = d.join("report.json");
    let served = Serve::start(&["--json", report.to_str().expect("utf-8")]);
    assert_eq!(served.stop().0, Some(0));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).expect("report written")).expect("JSON");
    assert_eq!(json["invariants"], "ok");
    let busy = d.join("busy.img");
    let holder = Serve::start(&["--image", busy.to_str().expect("utf-8")]);
    let refused = d.join("refused.json");
    let (code, _) = run_to_exit(
        &[
            "--listen",
            "127.0.0.1:0",
            "--capacity",
            "64MiB",
            "--image",
            busy.to_str().expect("utf-8"),
            "--json",
            refused.to_str().expect("utf-8"),
        ],
        Duration::from_secs(30),
    );
    assert_eq!(code, Some(1));
    assert!(!refused.exists(), "a failed start leaves no empty report");
    drop(holder);
    std::fs::remove_dir_all(&d).ok();
}
