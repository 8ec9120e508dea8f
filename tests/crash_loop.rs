//! Crash safety of `duraflash serve --image`: once a FLUSH or a FUA write
//! is answered, its data survives `kill -9`. Each iteration starts the
//! server on the image left by the previous one, reads back every unit the
//! test wrote (a flushed write must be there; an unflushed one may or may
//! not), writes and flushes new patterns, and kills the server at a random
//! moment; every other iteration kills it while a FLUSH is in flight, so
//! checkpoints get cut short. Between iterations the image must load and
//! pass the invariant checker.
//!
//! `CRASH_ITERATIONS` sets the iteration count (60 by default).

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use duraflash::nbd::protocol::*;
use duraflash::Drive;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

const UNIT: usize = 4096;
/// Units the test writes to (a 1 MiB region, so units are overwritten often).
const UNITS: u64 = 256;

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

fn start(image: &std::path::Path, port: u16) -> Child {
    let child = Command::new(env!("CARGO_BIN_EXE_duraflash"))
        .args(["serve", "--capacity", "16MiB", "--media", "memory", "--stats-interval", "0"])
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .arg("--image")
        .arg(image)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("duraflash serve starts");
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "server did not accept within 20 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    child
}

fn kill9(pid: u32) {
    let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
}

/// A minimal NBD client: `NBD_OPT_GO`, simple replies; I/O errors (the
/// server was killed) come back as `Err`.
struct Client {
    s: TcpStream,
    cookie: u64,
}

impl Client {
    fn connect(port: u16) -> std::io::Result<Self> {
        let mut s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        s.set_nodelay(true)?;
        let mut greeting = [0u8; 18];
        s.read_exact(&mut greeting)?;
        s.write_all(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes())?;
        let name = b"duraflash";
        let mut go = OPTS_MAGIC.to_be_bytes().to_vec();
        go.extend_from_slice(&OPT_GO.to_be_bytes());
        go.extend_from_slice(&(4 + name.len() as u32 + 2).to_be_bytes());
        go.extend_from_slice(&(name.len() as u32).to_be_bytes());
        go.extend_from_slice(name);
        go.extend_from_slice(&0u16.to_be_bytes());
        s.write_all(&go)?;
        loop {
            let mut head = [0u8; 20];
            s.read_exact(&mut head)?;
            let kind = u32::from_be_bytes([head[12], head[13], head[14], head[15]]);
            let len = u32::from_be_bytes([head[16], head[17], head[18], head[19]]);
            let mut body = vec![0u8; len as usize];
            s.read_exact(&mut body)?;
            if kind == REP_ACK {
                return Ok(Client { s, cookie: 0 });
            }
            assert_eq!(kind, REP_INFO, "GO succeeds");
        }
    }

    fn send(&mut self, flags: u16, command: u16, offset: u64, data: &[u8], length: u32) -> std::io::Result<()> {
        self.cookie += 1;
        let mut req = REQUEST_MAGIC.to_be_bytes().to_vec();
        req.extend_from_slice(&flags.to_be_bytes());
        req.extend_from_slice(&command.to_be_bytes());
        req.extend_from_slice(&self.cookie.to_be_bytes());
        req.extend_from_slice(&offset.to_be_bytes());
        req.extend_from_slice(&length.to_be_bytes());
        req.extend_from_slice(data);
        self.s.write_all(&req)
    }

    fn reply(&mut self) -> std::io::Result<()> {
        let mut reply = [0u8; 16];
        self.s.read_exact(&mut reply)?;
        assert_eq!(&reply[8..], &self.cookie.to_be_bytes(), "reply for this request");
        assert_eq!(u32::from_be_bytes([reply[4], reply[5], reply[6], reply[7]]), 0, "request succeeds");
        Ok(())
    }

    fn write(&mut self, unit: u64, data: &[u8], fua: bool) -> std::io::Result<()> {
        self.send(if fua { CMD_FLAG_FUA } else { 0 }, 1, unit * UNIT as u64, data, data.len() as u32)?;
        self.reply()
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.send(0, 3, 0, &[], 0)?;
        self.reply()
    }

    fn read(&mut self, unit: u64) -> std::io::Result<Vec<u8>> {
        self.send(0, 0, unit * UNIT as u64, &[], UNIT as u32)?;
        self.reply()?;
        let mut data = vec![0u8; UNIT];
        self.s.read_exact(&mut data)?;
        Ok(data)
    }
}

fn pattern(seed: u64) -> Vec<u8> {
    let mut data = vec![0u8; UNIT];
    ChaCha8Rng::seed_from_u64(seed).fill(&mut data[..UNIT / 2]);
    data
}

/// What the test knows about each unit it wrote.
#[derive(Default)]
struct Expect {
    /// Content guaranteed by an answered FLUSH or FUA write.
    durable: HashMap<u64, Vec<u8>>,
    /// Later writes answered without a flush yet (or sent and not
    /// answered): each may or may not have survived.
    maybe: HashMap<u64, Vec<Vec<u8>>>,
}

#[test]
fn flushed_writes_survive_kill_9() {
    let iterations: usize = std::env::var("CRASH_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(60);
    let dir = std::env::temp_dir().join(format!("duraflash-crash-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let image = dir.join("drive.img");
    let mut rng = ChaCha8Rng::seed_from_u64(2026);
    let mut expect = Expect::default();
    let (mut verified, mut flushes, mut fua_writes, mut kills_in_flush) = (0u64, 0u64, 0u64, 0u64);
    let mut flush_time = Duration::from_millis(2);
    let started = Instant::now();
    for iter in 0..iterations {
        let port = free_port();
        let mut child = start(&image, port);
        let pid = child.id();
        let mut c = Client::connect(port).expect("connect after restart");
        // Everything flushed must read back; unflushed writes may be either.
        let mut units: Vec<u64> = expect.durable.keys().chain(expect.maybe.keys()).copied().collect();
        units.sort_unstable();
        units.dedup();
        for u in units {
            let got = c.read(u).expect("read after restart");
            let durable = expect.durable.get(&u).cloned().unwrap_or_else(|| vec![0u8; UNIT]);
            let ok = got == durable || expect.maybe.get(&u).is_some_and(|m| m.contains(&got));
            assert!(ok, "iteration {iter}: unit {u} lost its flushed content");
            if expect.durable.contains_key(&u) {
                verified += 1;
            }
            expect.durable.insert(u, got);
        }
        expect.maybe.clear();

        // Write and flush until killed.
        // The server is not waited for until every killer thread is joined,
        // so its pid cannot be reused by another process before they fire.
        let mut killers = Vec::new();
        let kill_in_flush = iter % 2 == 1;
        if !kill_in_flush {
            let delay = Duration::from_micros(rng.random_range(0..40_000));
            killers.push(std::thread::spawn(move || {
                std::thread::sleep(delay);
                kill9(pid);
            }));
        }
        let ops = rng.random_range(20..120);
        for k in 0..ops {
            let u = rng.random_range(0..UNITS);
            let data = pattern((iter as u64) << 32 | k);
            let fua = rng.random_ratio(1, 8);
            expect.maybe.entry(u).or_default().push(data.clone());
            if c.write(u, &data, fua).is_err() {
                break;
            }
            if fua {
                fua_writes += 1;
                expect.durable.insert(u, data);
                expect.maybe.remove(&u);
            }
            if rng.random_ratio(1, 10) || (kill_in_flush && k + 1 == ops) {
                if kill_in_flush && k + 1 == ops {
                    // Kill somewhere inside this flush's checkpoint.
                    let delay = flush_time.mul_f64(rng.random_range(0.0..1.2));
                    c.send(0, 3, 0, &[], 0).expect("send flush");
                    killers.push(std::thread::spawn(move || {
                        std::thread::sleep(delay);
                        kill9(pid);
                    }));
                    if c.reply().is_err() {
                        kills_in_flush += 1;
                        break;
                    }
                } else {
                    let t = Instant::now();
                    if c.flush().is_err() {
                        break;
                    }
                    flush_time = (flush_time + t.elapsed()) / 2;
                }
                flushes += 1;
                for (u, m) in expect.maybe.drain() {
                    if let Some(last) = m.last() {
                        expect.durable.insert(u, last.clone());
                    }
                }
            }
        }
        kill9(pid);
        for k in killers {
            k.join().expect("killer thread");
        }
        let _ = child.wait();
        // The image left behind loads (checksums and invariants pass).
        let drive = Drive::load(&image).unwrap_or_else(|e| panic!("iteration {iter}: image does not load: {e}"));
        drive.check_invariants().expect("invariants");
    }
    eprintln!(
        "crash loop: {iterations} iterations in {:.1} s, {verified} flushed unit contents verified, \
         {flushes} flushes + {fua_writes} FUA writes answered, {kills_in_flush} kills during a flush, none lost",
        started.elapsed().as_secs_f64()
    );
    assert!(verified > 0, "the loop verified nothing");
    let _ = std::fs::remove_dir_all(&dir);
}
