//! Option values with fio's units: sizes and percentages, times, `rw`,
//! `random_distribution` (with the zoned syntax) and `write_hint`.

use std::borrow::Cow;

use super::{SizeSpec, MAX_JOB_MINUTES};
use crate::content::buffers::Pattern;
use crate::input::Shown;
use crate::workload::access::{Access, Distribution, Rw, Zones};

/// A number with fio's size suffix semantics, or a percentage.
enum Quantity {
    Bytes(u64),
    Percent(f64),
}

/// Parse an fio integer / size: decimal with optional suffix, `0x` hex, or `N%`.
fn parse_quantity(s: &str) -> Result<Quantity, String> {
    if s.is_empty() {
        return Err("empty value".to_string());
    }
    if s.starts_with('(') {
        return Err("arithmetic expressions are not supported".to_string());
    }
    if s.starts_with('$') {
        return Err("fio keywords such as $mb_memory are not supported".to_string());
    }
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        if hex.is_empty() || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("expected hexadecimal digits after '0x' (no suffix allowed)".to_string());
        }
        return u64::from_str_radix(hex, 16).map(Quantity::Bytes).map_err(|_| "value does not fit in 64 bits".into());
    }
    let (int_part, rest) = split_digits(s);
    if int_part.is_empty() {
        return Err("expected a non-negative number".to_string());
    }
    let (number, suffix, fractional) = match rest.strip_prefix('.') {
        Some(after) => {
            let (frac, suffix) = split_digits(after);
            if frac.is_empty() {
                return Err("malformed number".to_string());
            }
            (&s[..int_part.len() + 1 + frac.len()], suffix, true)
        }
        None => (int_part, rest, false),
    };
    let suffix_lc = suffix.to_ascii_lowercase();
    if suffix_lc == "%" {
        return number.parse().map(Quantity::Percent).map_err(|_| "malformed percentage".to_string());
    }
    if fractional {
        return Err("fractional values are not supported (fio would truncate them)".to_string());
    }
    let mult = size_multiplier(&suffix_lc).ok_or_else(|| {
        format!(
            "unknown size suffix '{}' (expected k, m, g, t, p optionally followed by b or i (powers of 1024), \
             kib..pib (powers of 1000, fio's kb_base=1024 convention), b, or %)",
            Shown::new(suffix)
        )
    })?;
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .map(Quantity::Bytes)
        .ok_or_else(|| "value does not fit in 64 bits".to_string())
}

/// Split `s` into its leading ASCII digits and the rest.
fn split_digits(s: &str) -> (&str, &str) {
    s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()))
}

/// Multiplier for a lower-cased size suffix (fio parse.c `__get_mult_bytes`
/// with the default kb_base=1024).
fn size_multiplier(suffix: &str) -> Option<u64> {
    if suffix.is_empty() || suffix == "b" {
        return Some(1);
    }
    let mut chars = suffix.chars();
    let power = match chars.next()? {
        'k' => 1,
        'm' => 2,
        'g' => 3,
        't' => 4,
        'p' => 5,
        _ => return None,
    };
    let base: u64 = match chars.as_str() {
        "" | "b" | "i" => 1024,
        "ib" => 1000,
        _ => return None,
    };
    Some(base.pow(power))
}

/// An integer option (fio `int`): suffixes allowed, percentages not.
pub(super) fn parse_int(s: &str) -> Result<u64, String> {
    match parse_quantity(s)? {
        Quantity::Bytes(n) => Ok(n),
        Quantity::Percent(_) => Err("a percentage is not accepted for this option".to_string()),
    }
}

/// An integer percentage in 0..=100.
pub(super) fn parse_pct(s: &str) -> Result<u8, String> {
    match parse_int(s)? {
        n @ 0..=100 => Ok(n as u8),
        _ => Err("must be between 0 and 100".to_string()),
    }
}

/// A value per direction as fio's `rate` and `rate_iops` take them (HOWTO
/// "Block size"): one for reads, writes and TRIMs; `r,w` (TRIMs as
/// writes); `r,w,t`; an empty one is no limit, and so is 0.
pub(super) fn parse_per_direction(s: &str) -> Result<[u64; 3], String> {
    let parts: Vec<&str> = s.split(',').map(str::trim).collect();
    let one = |p: &str| if p.is_empty() { Ok(0) } else { parse_int(p) };
    match parts.as_slice() {
        [all] => Ok([one(all)?; 3]),
        [r, w] => Ok([one(r)?, one(w)?, one(w)?]),
        [r, w, t] => Ok([one(r)?, one(w)?, one(t)?]),
        _ => Err("at most three comma-separated values: reads, writes, TRIMs".to_string()),
    }
}

pub(super) fn parse_iodepth(s: &str) -> Result<u32, String> {
    match u32::try_from(parse_int(s)?) {
        Ok(0) => Err("iodepth must be at least 1".to_string()),
        Ok(n) => Ok(n),
        Err(_) => Err("iodepth does not fit in 32 bits".to_string()),
    }
}

pub(super) fn parse_size(s: &str) -> Result<SizeSpec, String> {
    match parse_quantity(s)? {
        Quantity::Bytes(0) => Ok(SizeSpec::Whole),
        Quantity::Bytes(n) => Ok(SizeSpec::Bytes(n)),
        Quantity::Percent(p) if p > 0.0 && p <= 100.0 => Ok(SizeSpec::Percent(p)),
        Quantity::Percent(_) => Err("a size percentage must be greater than 0 and at most 100".to_string()),
    }
}

pub(super) fn parse_offset(s: &str) -> Result<SizeSpec, String> {
    match parse_quantity(s)? {
        Quantity::Bytes(n) => Ok(SizeSpec::Bytes(n)),
        Quantity::Percent(p) if p < 100.0 => Ok(SizeSpec::Percent(p)),
        Quantity::Percent(_) => Err("an offset percentage must be below 100".to_string()),
    }
}

/// A time in nanoseconds; seconds when no unit is given (fio `time`); at
/// most [`MAX_JOB_MINUTES`].
pub(super) fn parse_time_ns(s: &str) -> Result<u64, String> {
    parse_time_in(s, "s")
}

/// A time in nanoseconds, in `default` units (`us` or `s`) when no unit
/// is given, as fio reads each time option; at most [`MAX_JOB_MINUTES`].
pub(super) fn parse_time_in(s: &str, default: &str) -> Result<u64, String> {
    let (number, suffix) = split_digits(s);
    if number.is_empty() {
        return Err("expected a non-negative whole number with an optional unit".to_string());
    }
    const S: u64 = 1_000_000_000;
    let suffix = if suffix.is_empty() { default } else { suffix };
    let unit = match suffix.to_ascii_lowercase().as_str() {
        "s" | "sec" => S,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "m" => 60 * S,
        "h" => 3600 * S,
        "d" => 86_400 * S,
        _ => {
            return Err(format!(
                "unknown time unit '{}' (expected us, ms, s, m, h or d; default {default})",
                Shown::new(suffix)
            ))
        }
    };
    const MOST: u64 = MAX_JOB_MINUTES * 60 * S;
    match number.parse::<u64>().ok().and_then(|n| n.checked_mul(unit)) {
        Some(ns) if ns <= MOST => Ok(ns),
        _ => Err(format!(
            "more than {MAX_JOB_MINUTES} simulated minutes (about a week), the most a job may run, warm up or \
             wait: every simulated command costs wall time"
        )),
    }
}

/// A boolean: absent (bare key) or `1` is true, `0` is false.
pub(super) fn parse_flag(value: Option<&str>) -> Result<bool, String> {
    match value {
        None | Some("1") => Ok(true),
        Some("0") => Ok(false),
        Some(_) => Err("expected 0 or 1".to_string()),
    }
}

pub(super) fn non_empty(s: &str) -> Result<String, String> {
    if s.is_empty() {
        Err("this option requires a value".to_string())
    } else {
        Ok(s.to_string())
    }
}

/// `rw` as fio names it in its job lines (`rw=randwrite`).
pub fn rw_name(rw: Rw) -> &'static str {
    RW_VALUES.iter().find(|&&(_, r)| r == rw).map_or("read", |&(name, _)| name)
}

/// fio `rw=` spellings this model runs.
pub(super) const RW_VALUES: &[(&str, Rw)] = &[
    ("read", Rw::Read),
    ("write", Rw::Write),
    ("randread", Rw::RandRead),
    ("randwrite", Rw::RandWrite),
    ("randrw", Rw::RandRw),
    ("rw", Rw::SeqRw),
    ("readwrite", Rw::SeqRw),
    ("trim", Rw::Trim),
    ("randtrim", Rw::RandTrim),
    ("trimwrite", Rw::TrimWrite),
];

pub(super) fn parse_rw(s: &str) -> Result<Rw, String> {
    let lookup = |v: &str| RW_VALUES.iter().find(|(name, _)| *name == v).map(|&(_, rw)| rw);
    if let Some(rw) = lookup(s) {
        return Ok(rw);
    }
    let names = RW_VALUES.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ");
    if matches!(s, "randtrimwrite" | "filecreate" | "filestat" | "filedelete") {
        return Err(format!("fio pattern '{s}' is not supported by this model (supported: {names})"));
    }
    Err(format!("unknown I/O pattern (expected one of: {names})"))
}

/// `rw=` with fio's offset modifier (options.c `str_rw_cb`): the pattern,
/// and for `pattern:nr` a random job's commands per random offset or a
/// sequential job's bytes between commands (a size, negative backwards);
/// without a modifier, none (1 and 0).
pub(super) fn parse_rw_modifier(s: &str) -> Result<(Rw, u32, i64), String> {
    let Some((base, nr)) = s.split_once(':') else { return Ok((parse_rw(s)?, 1, 0)) };
    let rw = parse_rw(base)?;
    if rw.is_random() {
        let every = nr.parse::<u32>().ok().filter(|&n| n > 0);
        let every = every.ok_or("what follows ':' is not a count of commands per random offset")?;
        return Ok((rw, every, 0));
    }
    let (minus, size) = match nr.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, nr),
    };
    let bytes = parse_int(size).map_err(|e| format!("what follows ':' is not a size to skip: {e}"))?;
    let add = i64::try_from(bytes).map_err(|_| "what follows ':' is too large".to_string())?;
    Ok((rw, 1, if minus { -add } else { add }))
}

/// fio's `write_hint` values (Linux's write lifetime hints), as streams.
const WRITE_HINTS: [&str; 5] = ["none", "short", "medium", "long", "extreme"];

pub(super) fn parse_write_hint(s: &str) -> Result<u8, String> {
    WRITE_HINTS
        .iter()
        .position(|h| *h == s)
        .map(|i| i as u8)
        .ok_or_else(|| format!("unknown write hint (valid: {})", WRITE_HINTS.join(", ")))
}

pub(super) fn parse_distribution(s: &str) -> Result<Distribution, String> {
    let (kind, param) = match s.split_once(':') {
        Some((k, p)) => (k, Some(p)),
        None => (s, None),
    };
    let float = |p: &str| -> Result<f64, String> {
        if p.contains(':') {
            return Err("a distribution centre (second parameter) is not supported".to_string());
        }
        p.parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .ok_or_else(|| format!("'{}' is not a finite number", Shown::new(p)))
    };
    match kind {
        "zoned" => parse_zoned(param.unwrap_or("")),
        "random" if param.is_none() => Ok(Distribution::Random),
        "random" => Err("'random' takes no parameter".to_string()),
        "zipf" => match param.map(float).transpose()?.unwrap_or(1.1) {
            theta if theta > 0.0 && theta != 1.0 => Ok(Distribution::Zipf(theta)),
            _ => Err("zipf theta must be greater than 0 and different from 1.0".to_string()),
        },
        "pareto" => match param.map(float).transpose()?.unwrap_or(0.2) {
            h if h > 0.0 && h < 1.0 => Ok(Distribution::Pareto(h)),
            _ => Err("pareto h must be between 0 and 1 (exclusive)".to_string()),
        },
        k if matches!(k, "normal" | "gauss") || k.starts_with("zoned") => Err(format!(
            "distribution '{}' is not supported (supported: random, zipf[:theta], pareto[:h], zoned:A/R:B/S...)",
            Shown::new(k)
        )),
        _ => Err("unknown distribution (supported: random, zipf[:theta], pareto[:h], zoned:A/R:B/S...)".to_string()),
    }
}

/// fio's `zoned:A/R:B/S:...` (percent of accesses / percent of the range,
/// zones in order from the start; empty ranges share what the others
/// leave). Two zones that both take accesses are the hot/cold workload;
/// any other split is [`Distribution::Zoned`].
fn parse_zoned(zones: &str) -> Result<Distribution, String> {
    let shown = || Shown::new(zones);
    let pct = |v: &str| v.trim().parse::<f64>().ok().filter(|p| (0.0..=100.0).contains(p));
    let parsed: Option<Vec<(f64, Option<f64>)>> = zones
        .split(':')
        .map(|z| {
            let (a, r) = z.split_once('/')?;
            Some((pct(a)?, if r.trim().is_empty() { None } else { Some(pct(r)?) }))
        })
        .collect();
    let Some(parsed) = parsed.filter(|p| !p.is_empty()) else {
        return Err(format!("zoned '{}' must be zones of access%/range%, joined by ':'", shown()));
    };
    // Blank ranges share what is left in steps of 0.01 %, the last
    // taking the remainder.
    let given: f64 = parsed.iter().filter_map(|z| z.1).sum();
    let blank = parsed.iter().filter(|z| z.1.is_none()).count();
    let each = ((100.0 - given) * 100.0 / blank.max(1) as f64).floor() / 100.0;
    let last_blank = parsed.iter().rposition(|z| z.1.is_none());
    let shares: Vec<(f64, f64)> = parsed
        .iter()
        .enumerate()
        .map(|(i, &(a, r))| {
            let rest = if Some(i) == last_blank { 100.0 - given - each * (blank - 1) as f64 } else { each };
            (a / 100.0, r.unwrap_or(rest) / 100.0)
        })
        .collect();
    let zones = Zones::new(&shares).map_err(|e| format!("zoned '{}': {e}", shown()))?;
    Ok(match shares.as_slice() {
        &[(writes, hot), _] if Access::hot_cold(hot, writes).is_ok() => Distribution::HotCold { hot, writes },
        _ => Distribution::Zoned(zones),
    })
}

/// fio's `buffer_pattern` (lib/pattern.c `parse_and_fill_pattern`): its
/// pieces one after another, each a string in double quotes (its bytes),
/// `0x` and hexadecimal digits (their bytes in the order written, an odd
/// first digit a byte of its own), or a decimal integer from -2^31 to
/// 2^31-1 (its 32 bits, little-endian, without high zero bytes; 0 is one
/// zero byte). `"ab"0x0d0a` is `a`, `b`, CR, LF. At most 512 bytes.
pub(crate) fn parse_pattern(s: &str) -> Result<Pattern, String> {
    let mut bytes = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let used = match rest.as_bytes()[0] {
            b'"' => {
                let end = rest[1..].find('"').ok_or("a string without its closing '\"'")?;
                bytes.extend_from_slice(&rest.as_bytes()[1..=end]);
                end + 2
            }
            b'\'' => return Err("a pattern read from a file ('name') is not supported".into()),
            b'%' => return Err("formats such as %o are not supported in a buffer pattern (as in fio)".into()),
            _ => pattern_number(rest, &mut bytes)?,
        };
        rest = &rest[used..];
    }
    if bytes.is_empty() {
        return Err("an empty pattern".into());
    }
    Pattern::new(&bytes).map_err(|e| e.message().to_string())
}

/// One number of a pattern at the start of `s`, its bytes pushed to
/// `out`: the length of `s` it took.
fn pattern_number(s: &str, out: &mut Vec<u8>) -> Result<usize, String> {
    let hex_start = |t: &str| matches!(t.as_bytes(), [b'0', b'x' | b'X', d, ..] if d.is_ascii_hexdigit());
    if hex_start(s) {
        let mut digits = s[2..].bytes().take_while(u8::is_ascii_hexdigit).count();
        // "0xff0x14" is two numbers: the 0 before an x starts the next.
        if digits > 1 && hex_start(&s[1 + digits..]) {
            digits -= 1;
        }
        let hex = &s[2..2 + digits];
        let (first, pairs) = hex.split_at(digits % 2);
        let byte = |d: &str| u8::from_str_radix(d, 16).expect("hexadecimal digits");
        if !first.is_empty() {
            out.push(byte(first));
        }
        out.extend(pairs.as_bytes().chunks(2).map(|p| byte(std::str::from_utf8(p).expect("ASCII"))));
        return Ok(2 + digits);
    }
    // A decimal number ends where a hexadecimal one starts (fio looks ahead for "0x").
    let text = &s[..s.to_ascii_lowercase().find("0x").unwrap_or(s.len())];
    let sign = usize::from(text.starts_with(['-', '+']));
    let len = sign + text[sign..].bytes().take_while(u8::is_ascii_digit).count();
    if len == sign {
        return Err(format!(
            "'{}' is not a pattern piece: give \"text\", 0x and hexadecimal digits, or a decimal integer",
            Shown::new(s)
        ));
    }
    let value: i32 =
        text[..len].parse().map_err(|_| format!("{} is out of the 32-bit range", Shown::new(&text[..len])))?;
    let mut v = value as u32;
    if v == 0 {
        out.push(0);
    }
    while v != 0 {
        out.push((v & 0xff) as u8);
        v >>= 8;
    }
    Ok(len)
}

/// fio's `${NAME}` expansion of an option line (options.c
/// `fio_option_dup_subs`): each `${NAME}` becomes `env(NAME)`, or nothing
/// when that is `None` (an unset variable); a `${` without a `}` after it
/// stays as written.
pub(crate) fn expand_env<'a>(text: &'a str, env: impl Fn(&str) -> Option<String>) -> Cow<'a, str> {
    if !text.contains("${") {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("${") {
        let Some(len) = rest[at + 2..].find('}') else { break };
        out.push_str(&rest[..at]);
        out.push_str(&env(&rest[at + 2..at + 2 + len]).unwrap_or_default());
        rest = &rest[at + 3 + len..];
    }
    out.push_str(rest);
    Cow::Owned(out)
}
