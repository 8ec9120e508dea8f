//! `duraflash serve` against hostile or careless use: two servers on one
//! image, slow metrics scrapers, clients that take every connection slot
//! and sit idle, flags that would only fail at shutdown. Each test starts
//! the real binary on ports it binds itself (port 0) and reads them from
//! its "serving" line on stderr.

mod tools;
use tools::have;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use duraflash::nbd::protocol::*;

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

    fn uri(&self) -> String {
        format!("nbd://127.0.0.1:{}/duraflash", self.port)
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

    /// `GET /metrics`, its text and how long it took.
    fn scrape(&self) -> (String, Duration) {
        let started = Instant::now();
        let mut s = TcpStream::connect(("127.0.0.1", self.metrics_port.expect("--metrics given"))).expect("metrics");
        s.set_read_timeout(Some(Duration::from_secs(30))).expect("timeout");
        s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").expect("request");
        let mut text = String::new();
        s.read_to_string(&mut text).expect("response");
        assert!(text.starts_with("HTTP/1.0 200"), "metrics answer: {text}");
        (text, started.elapsed())
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
    // Every other command that resumes and saves an image takes the same lock.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_duraflash"))
        .args(["wa", "--capacity", "64MiB", "--quiet", "--image", image_arg])
        .output()
        .expect("wa runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "wa on a served image: {stderr}");
    assert!(stderr.contains(&format!("process {}", first.child.id())), "names the holder's pid: {stderr}");
    // The first is unharmed, and once it has gone the image is free again.
    let (code, _) = first.stop();
    assert_eq!(code, Some(0));
    let again = Serve::start(&["--image", image_arg]);
    assert_eq!(again.stop().0, Some(0));
    std::fs::remove_dir_all(&d).ok();
}

/// Runs another duraflash command to its end: its exit code and stderr.
fn other_command(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_duraflash")).args(args).output().expect("duraflash runs");
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// A served image and a symbolic link to it, in a fresh directory.
fn served_with_alias(name: &str) -> (PathBuf, PathBuf, PathBuf) {
    let d = dir(name);
    let (image, alias) = (d.join("srv.img"), d.join("alias.img"));
    std::os::unix::fs::symlink("srv.img", &alias).expect("symbolic link");
    (d, image, alias)
}

/// The lock is on the file an image path names: a symbolic link to a
/// served image is refused like the image itself, and stays a link.
#[test]
fn an_alias_of_a_served_image_is_refused_and_stays_a_link() {
    let (d, image, alias) = served_with_alias("alias");
    let first = Serve::start(&["--image", image.to_str().expect("utf-8 path")]);
    let saved = std::fs::read(&image).expect("saved at start-up");
    // The server's drive flags: only the lock stands between the two.
    let alias_arg = alias.to_str().expect("utf-8 path");
    let (code, stderr) =
        other_command(&["wa", "--capacity", "64MiB", "--media", "memory", "--quiet", "--image", alias_arg]);
    assert_eq!(code, Some(1), "wa on a link to a served image: {stderr}");
    assert!(stderr.contains(&format!("process {}", first.child.id())), "names the holder: {stderr}");
    assert!(alias.symlink_metadata().expect("alias").file_type().is_symlink(), "the alias is still a link");
    assert!(std::fs::read(&image).expect("image") == saved, "the served image is untouched");
    assert_eq!(first.stop().0, Some(0));
    std::fs::remove_dir_all(&d).ok();
}

/// A hard link to a served image names the same file, saved after the
/// server took its lock: it is refused too, and the image is untouched.
#[test]
fn a_hard_link_to_a_served_image_is_refused() {
    let d = dir("hardlink");
    let image = d.join("srv.img");
    let first = Serve::start(&["--image", image.to_str().expect("utf-8 path")]);
    let saved = std::fs::read(&image).expect("saved at start-up");
    let link = d.join("link.img");
    std::fs::hard_link(&image, &link).expect("a second name for the served image");
    let (code, stderr) = other_command(&[
        "wa",
        "--capacity",
        "64MiB",
        "--media",
        "memory",
        "--quiet",
        "--image",
        link.to_str().expect("utf-8 path"),
    ]);
    assert_eq!(code, Some(1), "wa on a hard link to a served image: {stderr}");
    assert!(stderr.contains(&format!("in use by process {}", first.child.id())), "names the holder: {stderr}");
    assert!(std::fs::read(&image).expect("image") == saved, "the served image is untouched");
    assert_eq!(first.stop().0, Some(0));
    std::fs::remove_dir_all(&d).ok();
}

/// `soak`, which writes a scratch drive to its `--image`, takes the same
/// lock as every command (directly or through a link), and refuses an
/// existing image even when no one holds it.
#[test]
fn soak_takes_the_image_lock_and_overwrites_no_image() {
    let (d, image, alias) = served_with_alias("soak");
    let (image_arg, alias_arg) = (image.to_str().expect("utf-8 path"), alias.to_str().expect("utf-8 path"));
    let first = Serve::start(&["--image", image_arg]);
    let saved = std::fs::read(&image).expect("saved at start-up");
    let soak = ["soak", "--ops", "2000", "--capacity", "64MiB", "--image-every", "500", "--quiet", "--image"];
    for path in [image_arg, alias_arg] {
        let (code, stderr) = other_command(&[&soak[..], &[path]].concat());
        assert_eq!(code, Some(1), "soak on {path}, served: {stderr}");
        assert!(stderr.contains(&format!("process {}", first.child.id())), "names the holder: {stderr}");
    }
    assert!(std::fs::read(&image).expect("image") == saved, "the served image is untouched");
    assert_eq!(first.stop().0, Some(0));
    let (code, stderr) = other_command(&[&soak[..], &[alias_arg]].concat());
    assert_eq!(code, Some(2), "soak on an existing image: {stderr}");
    assert!(stderr.contains("--image") && stderr.contains("already exists"), "{stderr}");
    assert!(std::fs::read(&image).expect("image") == saved, "and leaves it alone");
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

#[test]
fn a_scrape_is_not_stalled_by_slow_clients() {
    let served = Serve::start(&["--metrics", "127.0.0.1:0"]);
    let port = served.metrics_port.expect("metrics port");
    // Slow clients: a partial request line each, then nothing.
    let slow: Vec<TcpStream> = (0..20)
        .map(|_| {
            let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
            s.write_all(b"GET /metr").expect("partial request");
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(100));
    let (text, took) = served.scrape();
    eprintln!("scrape with {} slow clients took {took:?}", slow.len());
    assert!(took < Duration::from_secs(1), "scrape took {took:?}");
    assert!(text.contains("duraflash_host_write_bytes_total"), "{text}");
    // Many scrapes at once are answered too.
    let started = Instant::now();
    let scrapes: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
                s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").expect("request");
                let mut text = String::new();
                s.read_to_string(&mut text).expect("response");
                text.starts_with("HTTP/1.0 200")
            })
        })
        .collect();
    assert!(scrapes.into_iter().all(|h| h.join().expect("scraper")));
    assert!(started.elapsed() < Duration::from_secs(2), "8 scrapes took {:?}", started.elapsed());
    drop(slow);
}

#[test]
fn the_last_invariant_check_is_exported() {
    let served = Serve::start(&["--metrics", "127.0.0.1:0", "--check-interval", "1"]);
    let value = |text: &str, name: &str| -> Option<f64> {
        text.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
    };
    // Checked at start: soon after the "serving" line.
    let deadline = Instant::now() + Duration::from_secs(10);
    let text = loop {
        let (text, _) = served.scrape();
        if text.contains("duraflash_invariants_ok") || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(value(&text, "duraflash_invariants_ok"), Some(1.0), "{text}");
    let first = value(&text, "duraflash_invariants_checked_timestamp_seconds").expect("check time");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs_f64();
    assert!((now - first).abs() < 60.0, "wall clock time of the check: {first} (now {now})");
    // A write makes the next interval check again.
    let mut c = NbdClient::go(served.port).expect("handshake");
    c.write(0, &[0xab; 4096]);
    std::thread::sleep(Duration::from_millis(2500));
    let (text, _) = served.scrape();
    assert_eq!(value(&text, "duraflash_invariants_ok"), Some(1.0), "{text}");
    let later = value(&text, "duraflash_invariants_checked_timestamp_seconds").expect("check time");
    assert!(later > first, "checked again after a write: {first} -> {later}");
    assert!(value(&text, "duraflash_invariants_checked_sim_seconds").is_some(), "{text}");
}

/// A raw NBD client: `NBD_OPT_GO`, then simple replies.
struct NbdClient {
    s: TcpStream,
}

/// An option request.
fn option(option: u32, data: &[u8]) -> Vec<u8> {
    let mut v = OPTS_MAGIC.to_be_bytes().to_vec();
    v.extend_from_slice(&option.to_be_bytes());
    v.extend_from_slice(&(data.len() as u32).to_be_bytes());
    v.extend_from_slice(data);
    v
}

impl NbdClient {
    /// Negotiates with `NBD_OPT_GO`: the client, or the first error reply's type and message.
    fn go(port: u16) -> Result<Self, (u32, String)> {
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let mut greeting = [0u8; 18];
        s.read_exact(&mut greeting).expect("greeting");
        assert_eq!(&greeting[..8], &INIT_MAGIC.to_be_bytes());
        s.write_all(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes()).expect("flags");
        let mut data = 0u32.to_be_bytes().to_vec(); // the default export
        data.extend_from_slice(&0u16.to_be_bytes());
        s.write_all(&option(OPT_GO, &data)).expect("go");
        loop {
            let mut head = [0u8; 20];
            s.read_exact(&mut head).expect("option reply");
            let kind = u32::from_be_bytes(head[12..16].try_into().expect("4 bytes"));
            let len = u32::from_be_bytes(head[16..20].try_into().expect("4 bytes"));
            let mut body = vec![0u8; len as usize];
            s.read_exact(&mut body).expect("option reply data");
            match kind {
                REP_ACK => return Ok(NbdClient { s }),
                REP_INFO => {}
                _ => return Err((kind, String::from_utf8_lossy(&body).into_owned())),
            }
        }
    }

    fn request(&mut self, command: u16, offset: u64, length: u32, data: &[u8]) -> u32 {
        let mut r = REQUEST_MAGIC.to_be_bytes().to_vec();
        r.extend_from_slice(&0u16.to_be_bytes());
        r.extend_from_slice(&command.to_be_bytes());
        r.extend_from_slice(&7u64.to_be_bytes());
        r.extend_from_slice(&offset.to_be_bytes());
        r.extend_from_slice(&length.to_be_bytes());
        r.extend_from_slice(data);
        self.s.write_all(&r).expect("request");
        let mut reply = [0u8; 16];
        self.s.read_exact(&mut reply).expect("reply");
        u32::from_be_bytes(reply[4..8].try_into().expect("4 bytes"))
    }

    fn write(&mut self, offset: u64, data: &[u8]) {
        assert_eq!(self.request(1, offset, data.len() as u32, data), 0, "write succeeds");
    }

    fn flush(&mut self) {
        assert_eq!(self.request(3, 0, 0, &[]), 0, "flush succeeds");
    }

    /// Whether the server has closed the connection (reads end of file within `timeout`).
    fn closed_within(&mut self, timeout: Duration) -> bool {
        self.s.set_read_timeout(Some(timeout)).expect("timeout");
        let mut b = [0u8; 1];
        match self.s.read(&mut b) {
            Ok(0) => true,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => true,
            other => {
                eprintln!("connection still open: {other:?}");
                false
            }
        }
    }
}

#[test]
fn a_client_beyond_max_connections_is_refused_with_a_message() {
    let served = Serve::start(&["--max-connections", "2"]);
    let mut held: Vec<NbdClient> = (0..2).map(|_| NbdClient::go(served.port).expect("within the limit")).collect();
    let started = Instant::now();
    let refusal = NbdClient::go(served.port).err().expect("a third client is refused");
    eprintln!("refused in {:?}: {refusal:?}", started.elapsed());
    assert_eq!(refusal.0, REP_ERR_POLICY, "{refusal:?}");
    assert!(refusal.1.contains("too many connections") && refusal.1.contains("2"), "{refusal:?}");
    // qemu prints the server's message; libnbd 1.14 ("Operation not
    // supported") only in its debug output.
    if have("qemu-io", "qemu-utils") {
        let out = Command::new("qemu-io")
            .args(["-f", "raw", "-c", "read 0 512", &served.uri()])
            .output()
            .expect("qemu-io runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        eprintln!("qemu-io: {stderr}");
        assert!(!out.status.success());
        assert!(stderr.contains("too many connections"), "qemu-io prints the reason: {stderr}");
    }
    if have("nbdinfo", "libnbd-bin") {
        let out = Command::new("nbdinfo").arg(served.uri()).env("LIBNBD_DEBUG", "1").output().expect("nbdinfo runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success());
        assert!(stderr.contains("server error message: too many connections"), "nbdinfo hears the reason: {stderr}");
    }
    // The clients holding the slots are unaffected, and a freed slot is taken again.
    held[0].write(0, &[1; 512]);
    held.pop();
    let deadline = Instant::now() + Duration::from_secs(5);
    while NbdClient::go(served.port).is_err() {
        assert!(Instant::now() < deadline, "a freed slot is taken again");
        std::thread::sleep(Duration::from_millis(50));
    }
    held[0].flush();
}

#[test]
fn an_idle_client_is_disconnected_and_its_slot_freed() {
    let served = Serve::start(&["--max-connections", "1", "--idle-timeout", "1s", "--metrics", "127.0.0.1:0"]);
    let mut idle = NbdClient::go(served.port).expect("first client");
    // Its last message was the handshake's: the idle time runs from here,
    // however long the refused client below takes on a loaded machine.
    let started = Instant::now();
    assert!(NbdClient::go(served.port).is_err(), "the only slot is taken");
    assert!(idle.closed_within(Duration::from_secs(10)), "idle client disconnected");
    let took = started.elapsed();
    eprintln!("idle client closed after {took:?}");
    assert!(took >= Duration::from_millis(800) && took < Duration::from_secs(5), "{took:?}");
    let mut next = NbdClient::go(served.port).expect("a new client gets in");
    next.write(4096, &[2; 4096]);
    let (text, _) = served.scrape();
    assert!(text.contains("\nduraflash_nbd_idle_disconnects_total 1\n"), "{text}");
    assert!(text.contains("\nduraflash_nbd_refused_total 1\n"), "{text}");
}

#[test]
fn bad_limit_flags_are_usage_errors() {
    for (flag, value) in [("--max-connections", "0"), ("--idle-timeout", "soon"), ("--check-interval", "-1")] {
        let (code, stderr) = run_to_exit(&["--listen", "127.0.0.1:0", flag, value], Duration::from_secs(30));
        assert_eq!(code, Some(2), "{flag} {value}: {stderr}");
        assert!(stderr.contains(flag), "{flag} {value}: {stderr}");
    }
}
