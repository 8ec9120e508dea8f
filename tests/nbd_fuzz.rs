//! Protocol fuzzing: random and malformed handshakes and requests, fed
//! to the server both in memory and over real TCP, never panic it, and a
//! well-behaved client on its own connection keeps working throughout.

use std::io::{Cursor, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use proptest::prelude::*;

use duraflash::nbd::protocol::*;
use duraflash::nbd::{ExportConfig, Server};
use duraflash::{Drive, DriveConfig};

const SIZE: u64 = 64 << 20;

/// A server of its own, listening on an ephemeral port.
fn new_server() -> (Arc<Server>, u16) {
    let config = DriveConfig::preset("sf2281-240g").and_then(|c| c.scaled(SIZE)).expect("preset");
    let export = ExportConfig { name: "duraflash".into(), description: "fuzz".into(), queue_depth: 32 };
    let server = Arc::new(Server::new(Drive::new(config).expect("drive"), export));
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let s = Arc::clone(&server);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let _ = s.spawn(stream);
        }
    });
    (server, port)
}

/// One server for the fuzzed sessions of the whole run. They write
/// anywhere on it, so a test that reads back what it wrote takes its own.
fn server() -> &'static (Arc<Server>, u16) {
    static SERVER: OnceLock<(Arc<Server>, u16)> = OnceLock::new();
    SERVER.get_or_init(new_server)
}

/// A minimal, correct client: `NBD_OPT_GO`, then simple replies.
struct Client {
    s: TcpStream,
    cookie: u64,
}

impl Client {
    fn connect(port: u16) -> Self {
        let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        s.set_nodelay(true).expect("nodelay");
        let mut greeting = [0u8; 18];
        s.read_exact(&mut greeting).expect("greeting");
        assert_eq!(&greeting[..8], &INIT_MAGIC.to_be_bytes());
        s.write_all(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes()).expect("flags");
        let name = b"duraflash";
        let mut data = (name.len() as u32).to_be_bytes().to_vec();
        data.extend_from_slice(name);
        data.extend_from_slice(&0u16.to_be_bytes());
        s.write_all(&option(OPT_GO, &data)).expect("go");
        loop {
            let mut head = [0u8; 20];
            s.read_exact(&mut head).expect("option reply");
            let kind = u32::from_be_bytes([head[12], head[13], head[14], head[15]]);
            let len = u32::from_be_bytes([head[16], head[17], head[18], head[19]]);
            let mut body = vec![0u8; len as usize];
            s.read_exact(&mut body).expect("option reply data");
            if kind == REP_ACK {
                break;
            }
            assert_eq!(kind, REP_INFO, "GO succeeds");
        }
        Client { s, cookie: 0 }
    }

    fn request(&mut self, command: u16, offset: u64, data: &[u8], length: u32) -> u32 {
        self.cookie += 1;
        let mut req = header(0, command, self.cookie, offset, length);
        req.extend_from_slice(data);
        self.s.write_all(&req).expect("request");
        let mut reply = [0u8; 16];
        self.s.read_exact(&mut reply).expect("reply");
        assert_eq!(&reply[..4], &SIMPLE_REPLY_MAGIC.to_be_bytes());
        assert_eq!(&reply[8..], &self.cookie.to_be_bytes(), "reply for this request");
        u32::from_be_bytes([reply[4], reply[5], reply[6], reply[7]])
    }

    fn write(&mut self, offset: u64, data: &[u8]) {
        assert_eq!(self.request(1, offset, data, data.len() as u32), 0, "write succeeds");
    }

    fn read(&mut self, offset: u64, len: u32) -> Vec<u8> {
        assert_eq!(self.request(0, offset, &[], len), 0, "read succeeds");
        let mut data = vec![0u8; len as usize];
        self.s.read_exact(&mut data).expect("read data");
        data
    }
}

fn option(code: u32, data: &[u8]) -> Vec<u8> {
    let mut out = OPTS_MAGIC.to_be_bytes().to_vec();
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(&(data.len() as u32).to_be_bytes());
    out.extend_from_slice(data);
    out
}

fn header(flags: u16, command: u16, cookie: u64, offset: u64, length: u32) -> Vec<u8> {
    let mut out = REQUEST_MAGIC.to_be_bytes().to_vec();
    out.extend_from_slice(&flags.to_be_bytes());
    out.extend_from_slice(&command.to_be_bytes());
    out.extend_from_slice(&cookie.to_be_bytes());
    out.extend_from_slice(&offset.to_be_bytes());
    out.extend_from_slice(&length.to_be_bytes());
    out
}

/// Option payloads: random bytes, or well-formed INFO/GO and meta-context
/// payloads with random names and queries.
fn option_payload() -> impl Strategy<Value = Vec<u8>> {
    let name = prop_oneof![Just(b"duraflash".to_vec()), Just(Vec::new()), prop::collection::vec(any::<u8>(), 0..12)];
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..48),
        (name.clone(), prop::collection::vec(any::<u16>(), 0..4)).prop_map(|(n, infos)| {
            let mut d = (n.len() as u32).to_be_bytes().to_vec();
            d.extend_from_slice(&n);
            d.extend_from_slice(&(infos.len() as u16).to_be_bytes());
            infos.iter().for_each(|i| d.extend_from_slice(&(i % 5).to_be_bytes()));
            d
        }),
        (name, prop::collection::vec(prop_oneof![Just(b"base:allocation".to_vec()), Just(b"base:".to_vec())], 0..3))
            .prop_map(|(n, queries)| {
                let mut d = (n.len() as u32).to_be_bytes().to_vec();
                d.extend_from_slice(&n);
                d.extend_from_slice(&(queries.len() as u32).to_be_bytes());
                for q in queries {
                    d.extend_from_slice(&(q.len() as u32).to_be_bytes());
                    d.extend_from_slice(&q);
                }
                d
            }),
    ]
}

/// Requests with the right magic and hostile fields.
fn request() -> impl Strategy<Value = Vec<u8>> {
    let offset = prop_oneof![
        Just(0u64),
        Just(511),
        Just(4095),
        Just(SIZE - 1),
        Just(SIZE),
        Just(u64::MAX - 8),
        any::<u64>(),
        0..SIZE
    ];
    let length =
        prop_oneof![Just(0u32), Just(1), Just(512), Just(4096), Just((32 << 20) + 1), Just(u32::MAX), 0..20_000u32];
    (any::<u16>(), 0u16..10, offset, length, prop::collection::vec(any::<u8>(), 0..64)).prop_map(
        |(flags, command, offset, length, fill)| {
            let mut out = header(flags & 0x3f, command, 7, offset, length);
            if command == 1 {
                // Some of the payload, perhaps not all of it.
                let n = (length as usize).min(8192).saturating_sub(fill.len() % 2);
                out.extend((0..n).map(|i| fill.get(i % fill.len().max(1)).copied().unwrap_or(0)));
            }
            out
        },
    )
}

/// A whole session: random bytes, or a handshake prefix (sometimes with
/// bad flags or magic), options, GO or EXPORT_NAME, then requests.
fn session() -> impl Strategy<Value = Vec<u8>> {
    let opt = (prop_oneof![1u32..12, any::<u32>()], option_payload(), prop::bool::weighted(0.05)).prop_map(
        |(code, data, bad_magic)| {
            let mut o = option(code, &data);
            if bad_magic {
                o[0] ^= 0xff;
            }
            o
        },
    );
    let structured = prop::bool::ANY.prop_map(|s| if s { option(OPT_STRUCTURED_REPLY, &[]) } else { Vec::new() });
    let meta = prop::bool::ANY.prop_map(|m| {
        if !m {
            return Vec::new();
        }
        let mut d = 0u32.to_be_bytes().to_vec();
        d.extend_from_slice(&1u32.to_be_bytes());
        d.extend_from_slice(&(BASE_ALLOCATION.len() as u32).to_be_bytes());
        d.extend_from_slice(BASE_ALLOCATION.as_bytes());
        option(OPT_SET_META_CONTEXT, &d)
    });
    let enter = prop_oneof![
        Just(option(OPT_GO, &[0, 0, 0, 0, 0, 0])),
        Just(option(OPT_EXPORT_NAME, b"")),
        Just(option(OPT_EXPORT_NAME, b"nope")),
    ];
    let flags = prop_oneof![Just(3u32), Just(1), any::<u32>()];
    prop_oneof![
        prop::collection::vec(any::<u8>(), 0..256),
        (
            flags,
            structured,
            meta,
            prop::collection::vec(opt, 0..4),
            enter,
            prop::collection::vec(request(), 0..8),
            prop::collection::vec(any::<u8>(), 0..8)
        )
            .prop_map(|(flags, structured, meta, opts, enter, reqs, tail)| {
                let mut out = flags.to_be_bytes().to_vec();
                out.extend(structured);
                out.extend(meta);
                opts.into_iter().for_each(|o| out.extend(o));
                out.extend(enter);
                reqs.into_iter().for_each(|r| out.extend(r));
                out.extend(tail);
                out
            }),
    ]
}

/// Sends `bytes` over a fresh TCP connection and drains the answers.
fn over_tcp(port: u16, bytes: &[u8]) {
    let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let mut reader = s.try_clone().expect("clone");
    let drain = std::thread::spawn(move || {
        let mut sink = Vec::new();
        let _ = reader.read_to_end(&mut sink);
    });
    let mut w = &s;
    let _ = w.write_all(bytes);
    let _ = s.shutdown(Shutdown::Write);
    drain.join().expect("drain thread");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn hostile_sessions_do_not_disturb_a_good_client(bytes in session(), seed in any::<u8>()) {
        let (server, port) = server();
        let mut good = Client::connect(*port);
        // In memory (every code path, deterministic), then over TCP.
        let _ = server.serve(Cursor::new(bytes.clone()), std::io::sink());
        over_tcp(*port, &bytes);
        let offset = u64::from(seed) * 8192;
        let data = vec![seed; 8192];
        good.write(offset, &data);
        prop_assert_eq!(good.read(offset, 8192), data);
        prop_assert!(server.with_device(|d| d.check_invariants()).expect("drive lock healthy").is_ok());
    }
}

#[test]
fn malformed_requests_get_errors_and_the_connection_carries_on() {
    let (_server, port) = new_server();
    let mut c = Client::connect(port);
    assert_eq!(c.request(1, SIZE - 512, &[1u8; 1024], 1024), Errno::ENOSPC.0, "write past the end");
    assert_eq!(c.request(0, u64::MAX - 8, &[], 512), Errno::EINVAL.0, "offset overflow");
    assert_eq!(
        c.request(0, 0, &[], (32 << 20) + 1),
        Errno::EINVAL.0,
        "read over the payload bound (EOVERFLOW only with DF)"
    );
    assert_eq!(c.request(9, 0, &[], 512), Errno::EINVAL.0, "unknown command");
    assert_eq!(c.request(3, 4096, &[], 0), Errno::EINVAL.0, "flush with an offset");
    assert_eq!(c.request(7, 0, &[], 4096), Errno::EINVAL.0, "block status without a context");
    c.cookie += 1;
    let mut req = header(CMD_FLAG_FAST_ZERO | CMD_FLAG_NO_HOLE, 6, c.cookie, 0, 4096);
    req.extend(header(0, 1, c.cookie + 1, 0, (32 << 20) + 1));
    c.s.write_all(&req).expect("requests");
    // An oversized write's payload is skipped, not buffered.
    std::io::copy(&mut std::io::repeat(0).take((32 << 20) + 1), &mut c.s).expect("payload");
    let mut reply = [0u8; 32];
    c.s.read_exact(&mut reply).expect("two replies");
    assert_eq!(&reply[4..8], &Errno::ENOTSUP.0.to_be_bytes(), "fast zero without holes");
    assert_eq!(&reply[20..24], &Errno::EINVAL.0.to_be_bytes(), "oversized write");
    c.cookie += 1;
    c.write(1000, &[5u8; 3000]);
    assert_eq!(c.read(1000, 3000), vec![5u8; 3000], "unaligned write and read");
}
