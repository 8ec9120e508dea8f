//! Fuzzing the fio job parser: job files built from real section names,
//! keys and value shapes (and raw noise) parse or fail with an error, never
//! a panic; what parses resolves to regions inside any device size.
//!
//! `PROPTEST_CASES` sets the cases (512 by default).

use duraflash::workload::fio;
use proptest::prelude::*;

/// Keys the generator picks from: every key the parser supports (so the
/// fuzzing follows the parser), the `[drive]` section's, and fio keys the
/// parser refuses.
fn keys() -> Vec<&'static str> {
    let drive = ["preset", "capacity", "seed", "op", "gc", "media", "compression", "dedup"];
    let refused = ["include", "blocksize"];
    fio::SUPPORTED_KEYS.iter().copied().chain(drive).chain(refused).collect()
}

const VALUES: &[&str] = &[
    "",
    "0",
    "1",
    "4k",
    "4K",
    "128KiB",
    "1m",
    "1g",
    "64GiB",
    "18446744073709551615",
    "99999999999999999999",
    "-1",
    "50%",
    "100%",
    "0%",
    "101%",
    "randwrite",
    "randread",
    "randrw",
    "write",
    "read",
    "trim",
    "randtrim",
    "rw",
    "zipf:1.2",
    "zipf:0",
    "pareto:0.5",
    "normal:10",
    "random",
    "uniform",
    "10s",
    "5ms",
    "1h",
    "x",
    "on",
    "off",
    "true",
    "libaio",
    "/dev/nbd0",
    "greedy",
    "memory",
    "sf2281-240g",
    "0.07",
    "nan",
    "inf",
    "4k-64k",
    "4k,8k",
    "2",
    "1e9",
    "crc32c",
    "sha256",
    "pattern",
    "0xdeadbeef",
    "80",
    "write:4k",
    "read:-8k",
    "randread:8",
    "identical",
];

fn line() -> impl Strategy<Value = String> {
    let key = prop::sample::select(keys());
    let value = prop_oneof![prop::sample::select(VALUES).prop_map(str::to_string), "[ -~]{0,12}"];
    prop_oneof![
        6 => (key.clone(), value).prop_map(|(k, v)| format!("{k}={v}")),
        1 => key.prop_map(str::to_string),
        1 => prop::sample::select(&["[global]", "[drive]", "[job]", "[job2]", "[]", "[", "; comment", "# c", ""][..])
            .prop_map(str::to_string),
        1 => "[ -~]{0,24}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(512),
        ..ProptestConfig::default()
    })]

    #[test]
    fn structured_job_files_parse_or_fail_cleanly(lines in prop::collection::vec(line(), 0..24)) {
        let text = lines.join("\n");
        if let Ok(file) = fio::parse(&text) {
            for job in &file.jobs {
                for device in [4096u64, 1 << 30, 240_000_000_000, u64::MAX / 2] {
                    let r = job.region(device);
                    prop_assert!(r.start <= r.end && r.end <= device, "region {r:?} of a {device}-byte device");
                }
            }
            // What runs is planned, or refused, without a panic.
            let _ = file.plan(1 << 30, 1);
        }
    }

    #[test]
    fn arbitrary_text_parses_or_fails_cleanly(text in "(?s).{0,300}") {
        let _ = fio::parse(&text);
    }

    /// Whatever a line holds, a message shows a short, escaped excerpt of
    /// it: one line, no control characters, bounded in length.
    #[test]
    fn messages_echo_short_escaped_excerpts(
        key in prop_oneof![prop::sample::select(keys()).prop_map(str::to_string), "(?s).{0,3000}"],
        value in "(?s).{0,3000}",
        section in r"[^\]\n]{0,3000}",
    ) {
        let most = fio::FioError::UnsupportedKey { key: String::new(), line: 1 }.to_string().len() + 400;
        for text in [format!("[job]\n{key}={value}\n"), format!("[{section}]\n[{section}]\n"), format!("[drive]\n{key}")] {
            let shown: Vec<String> = match fio::parse(&text) {
                Ok(file) => file.warnings.iter().map(ToString::to_string).collect(),
                Err(e) => vec![e.to_string()],
            };
            for s in shown {
                prop_assert!(!s.chars().any(char::is_control), "control characters in {s:?}");
                prop_assert!(s.len() <= most, "{} bytes: {s}", s.len());
            }
        }
    }
}
