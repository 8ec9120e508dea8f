//! The parser's errors: each names its line and option, and no input panics.

use super::super::keys::Key;
use super::super::*;
use super::{bad_value_line, err, job};

#[test]
fn unsupported_key_names_key_and_line_and_lists_supported() {
    let text = "[global]\nbs=4k\n\n[job]\nrw=write\n; comment\nverify_async=4\n";
    let e = err(text);
    assert_eq!(e, FioError::UnsupportedKey { key: "verify_async".to_string(), line: 7 });
    let msg = e.to_string();
    assert!(msg.starts_with("line 7: unsupported fio option 'verify_async' (implemented: name, rw, readwrite, bs,"));
    assert!(
        msg.contains("lat_percentiles, verify, do_verify, verify_interval, verify_offset, verify_pattern, verify_fatal, verify_only, verify_backlog, verify_backlog_batch; accepted with a warning"),
        "{msg}"
    );
    // The ignored options are listed too, so a user sees every spelling that works.
    assert!(msg.contains("randrepeat") && msg.contains("thread") && msg.ends_with(')'), "{msg}");
    assert!(!msg.contains("did you mean"), "{msg}");
    // A typo gets the option it most likely meant.
    let typo = err("[job]\niodepht=4\n").to_string();
    assert!(typo.contains("unsupported fio option 'iodepht', did you mean 'iodepth'?"), "{typo}");
    assert_eq!(err("[j]\ninclude other.fio\n"), FioError::UnsupportedKey { key: "include".to_string(), line: 2 });
    assert_eq!(err("[j]\nkb_base=1000\n"), FioError::UnsupportedKey { key: "kb_base".to_string(), line: 2 });
    assert_eq!(err("[j]\nBS=4k\n"), FioError::UnsupportedKey { key: "BS".to_string(), line: 2 });
    for key in SUPPORTED_KEYS {
        assert!(Key::from_name(key).is_some(), "{key}");
    }
}

#[test]
fn bad_values_carry_key_and_line() {
    let cases: &[(&str, &str, usize, &str)] = &[
        ("[j]\n\niodepth=0\n", "iodepth", 3, "at least 1"),
        ("[j]\niodepth=5000000000\n", "iodepth", 2, "32 bits"),
        ("[j]\nrwmixread=101\n", "rwmixread", 2, "between 0 and 100"),
        ("[j]\ndedupe_percentage=200\n", "dedupe_percentage", 2, "between 0 and 100"),
        ("[j]\nbuffer_compress_percentage=50%\n", "buffer_compress_percentage", 2, "percentage"),
        ("[j]\nnumjobs=0\n", "numjobs", 2, "1 to 64"),
        ("[j]\nnumjobs=65\n", "numjobs", 2, "1 to 64"),
        ("[j]\nrandom_distribution=normal\n", "random_distribution", 2, "not supported"),
        ("[j]\nwrite_hint=hot\n", "write_hint", 2, "unknown write hint"),
        ("[j]\nrandom_distribution=gauss:5\n", "random_distribution", 2, "not supported"),
        ("[j]\nrandom_distribution=zoned:50/5:30/15:25/\n", "random_distribution", 2, "add up to 100"),
        ("[j]\nrandom_distribution=zipf:1\n", "random_distribution", 2, "theta"),
        ("[j]\nrandom_distribution=zipf:1.2:0.25\n", "random_distribution", 2, "centre"),
        ("[j]\nrandom_distribution=pareto:1.5\n", "random_distribution", 2, "pareto"),
        ("[j]\nrandom_distribution=zipf:nan\n", "random_distribution", 2, "finite"),
        ("[j]\nrandom_distribution=random:3\n", "random_distribution", 2, "no parameter"),
        ("[j]\nrandom_distribution=uniform\n", "random_distribution", 2, "unknown"),
        ("[j]\ndirect\n", "direct", 2, "requires a value"),
        ("[j]\ndirect=yes\n", "direct", 2, "0 or 1"),
        ("[j]\ntime_based=2\n", "time_based", 2, "0 or 1"),
        ("[j]\nbs\n", "bs", 2, "requires a value"),
        ("[j]\nname=\n", "name", 2, "requires a value"),
        ("[global]\nname=\n[j]\n", "name", 2, "requires a value"),
        ("[j]\nsize=${DURAFLASH_TEST_UNSET}\n", "size", 2, "empty value"),
        ("[j]\nsize=${SIZE\n", "size", 2, "without its closing '}'"),
        ("[j]\nloops=0\n", "loops", 2, "1 or more"),
        ("[j]\nloops=4294967296\n", "loops", 2, "1 or more"),
        ("[j]\nnorandommap=2\n", "norandommap", 2, "0 or 1"),
        ("[j]\npercentile_list=50:101\n", "percentile_list", 2, "'101' is not a percentile"),
        ("[j]\npercentile_list=50::99\n", "percentile_list", 2, "'' is not a percentile"),
        (
            "[j]\npercentile_list=1:2:3:4:5:6:7:8:9:10:11:12:13:14:15:16:17:18:19:20:21\n",
            "percentile_list",
            2,
            "at most 20",
        ),
        ("[j]\nclat_percentiles\n", "clat_percentiles", 2, "requires a value"),
        ("[j]\nbs=8k\nsize=4k\n", "size", 3, "smaller than the block size"),
    ];
    for &(text, key, line, needle) in cases {
        let (k, l, reason) = bad_value_line(text);
        assert_eq!((k.as_str(), l), (key, line), "{text:?}");
        assert!(reason.contains(needle), "{text:?}: {reason}");
    }
    let e = err("[j]\nbs=4q\n");
    assert!(e.to_string().starts_with("line 2: bad value '4q' for 'bs': unknown size suffix 'q'"), "{e}");
}

#[test]
fn structural_errors() {
    assert_eq!(err("bs=4k\n[j]\n"), FioError::KeyOutsideSection { key: "bs".to_string(), line: 1 });
    assert_eq!(err("# c\n\ntime_based\n"), FioError::KeyOutsideSection { key: "time_based".to_string(), line: 3 });
    for (text, line) in [("[j]\n[]\n", 2), ("[j\n", 1), ("[a]b\n", 1), ("[a[b]]\n", 1), ("[   ]\n", 1)] {
        match err(text) {
            FioError::BadSection { line: l, .. } => assert_eq!(l, line, "{text:?}"),
            other => panic!("{text:?}: {other:?}"),
        }
    }
    assert_eq!(
        err("[j]\n= 4k\n"),
        FioError::Syntax { line: 2, reason: "missing option name before '=' in '= 4k'".to_string() }
    );
    assert!(matches!(err("[drive]\npreset\n[j]\n"), FioError::Syntax { line: 2, .. }));
    assert!(matches!(err("[drive]\npreset=\n[j]\n"), FioError::Syntax { line: 2, .. }));
    assert_eq!(err("[a]\nbs=4k\n[b]\n[a]\n"), FioError::DuplicateJob { name: "a".to_string(), line: 4, first_line: 1 });
    assert_eq!(err("[a]\n[b]\nname=a\n"), FioError::DuplicateJob { name: "a".to_string(), line: 2, first_line: 1 });
    assert_eq!(err(""), FioError::NoJobs);
    assert_eq!(err("; only comments\n\n"), FioError::NoJobs);
    assert_eq!(err("[global]\nbs=4k\n[drive]\nseed=1\n"), FioError::NoJobs);
    assert!(FioError::NoJobs.to_string().contains("no job sections"));
}

#[test]
fn comments_whitespace_and_line_endings() {
    let file =
        parse("\r\n  [ spaced name ]  # header comment\r\n\tbs = 8k ;x\r\n  time_based # on\r\nruntime=1\r\n").unwrap();
    let j = &file.jobs[0];
    assert_eq!((j.name.as_str(), j.bs, j.time_based, j.line), ("spaced name", 8192, true, 2));
    // fio cuts values at ';' / '#', like its strip_blank_end.
    assert_eq!(job("[j]\nfilename=/dev/sda#1\n").filename.as_deref(), Some("/dev/sda"));
    assert_eq!(job("[j]\nname=a=b\n").name, "a=b");
}

/// xorshift64* so the fuzz test needs no extra crates and is reproducible.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

#[test]
fn random_input_never_panics() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..10_000 {
        let len = (rng.next() % 200) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let _ = parse(&String::from_utf8_lossy(&bytes));
    }
    let fragments = [
        "[",
        "]",
        "[global]",
        "[drive]",
        "[job]",
        "[j2]",
        "=",
        " ",
        ";",
        "#",
        "%",
        ":",
        ",",
        "-",
        ".",
        "0x",
        "\n",
        "\r\n",
        "é",
        "\u{0}",
        "${X}",
        "(",
        "bs",
        "size",
        "offset",
        "offset_increment",
        "runtime",
        "rw",
        "random_distribution",
        "zipf",
        "pareto",
        "normal",
        "randrw",
        "time_based",
        "numjobs",
        "name",
        "rwmixwrite",
        "io_size",
        "0",
        "1",
        "100",
        "4k",
        "4KiB",
        "18446744073709551615",
        "99999999999999999999",
        "1e309",
        "nan",
        "inf",
        "-0",
        "s",
        "ms",
        "m",
        "p",
        "pib",
        "include",
        "direct",
        "buffer_compress_chunk",
        "iodepth",
    ];
    for _ in 0..10_000 {
        let mut text = String::new();
        for _ in 0..rng.next() % 40 {
            text.push_str(rng.pick(&fragments));
        }
        if let Ok(file) = parse(&text) {
            for j in &file.jobs {
                for dev in [0, 1, 4096, u64::MAX] {
                    let r = j.clone_region(dev, u64::from(j.numjobs) - 1);
                    assert!(r.start <= r.end && r.end <= dev, "{text:?}");
                }
            }
        }
    }
}
