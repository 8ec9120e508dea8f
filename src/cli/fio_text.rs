//! `run`'s summary in fio's normal output (`--output-format=normal`, fio's
//! default), written from the same figures as its JSON
//! ([`super::fio_json`]), so scripts that read fio's text (`IOPS=`,
//! `BW=`, `clat percentiles`, `Run status group`) read ours. Formats
//! follow fio 3.33's stat.c (`show_thread_status_normal`,
//! `show_ddir_status`, `show_group_stats`) and lib/num2str.c.

use duraflash::host::{FioLatency, FIO_PERCENTILES};
use duraflash::units::UtcTime;

use super::fio_json::{FioDir, FioJob, Percents};

/// fio's `num2str`: `num` in at most `maxlen` digits (the point counted),
/// scaled by 1000 (or 1024 with `pow2`) with the unit prefix, rounded as
/// fio rounds, then `unit`.
fn num2str(mut num: u64, maxlen: usize, pow2: bool, unit: &str) -> String {
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let prefixes = if pow2 { ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"] } else { ["", "k", "M", "G", "T", "P", "E"] };
    let (mut post, mut modulo, mut carry) = (0, None, false);
    while post < prefixes.len() && num.to_string().len() > maxlen {
        let m = num % thousand;
        num /= thousand;
        carry = m >= thousand / 2;
        modulo = Some(m);
        post += 1;
    }
    if post >= prefixes.len() {
        post = 0;
    }
    let digits = num.to_string().len();
    match modulo {
        Some(m) if maxlen > digits + 1 => {
            let frac = format!("{:.*}", maxlen - digits - 1, m as f64 / thousand as f64);
            if frac.starts_with('1') {
                num += 1;
            }
            format!("{num}.{}{}{unit}", &frac[2..], prefixes[post])
        }
        Some(_) => format!("{}{}{unit}", num + u64::from(carry), prefixes[post]),
        None => format!("{num}{}{unit}", prefixes[post]),
    }
}

/// fio's `display_lat`: a latency line in ns, us or ms by its spread.
fn lat_line(name: &str, l: &FioLatency) -> String {
    let (mut min, mut max, mut mean, mut dev, mut base) = (l.min, l.max, l.mean, l.stddev, "(nsec)");
    for (div, unit, min_over, max_over) in
        [(1_000_000, "(msec)", 2_000_000, 99_999_999), (1_000, "(usec)", 2_000, 99_999)]
    {
        if min > min_over && max > max_over && dev > div as f64 {
            (min, max, mean, dev, base) = (min / div, max / div, mean / div as f64, dev / div as f64, unit);
            break;
        }
    }
    let (min, max) = (num2str(min, 6, false, ""), num2str(max, 6, false, ""));
    format!("    {name} {base}: min={min}, max={max}, avg={mean:5.2}, stdev={dev:5.2}\n")
}

/// fio's `show_clat_percentiles` for `name` (`clat` or `lat`), with
/// `precision` decimals, when the latency carries percentiles.
fn percentiles(name: &str, l: &FioLatency, precision: u8) -> String {
    let Some(p) = &l.percentile else { return String::new() };
    let mut list: Vec<(f64, u64)> = p.iter().filter_map(|(k, &v)| Some((k.parse().ok()?, v))).collect();
    list.sort_by(|a, b| a.0.total_cmp(&b.0));
    let (minv, maxv) = list.iter().fold((u64::MAX, 0), |(lo, hi), &(_, v)| (lo.min(v), hi.max(v)));
    let (unit, scale) = match (minv, maxv) {
        (2_000_001.., 100_000_000..) => ("msec", 2),
        (2_001.., 100_000..) => ("usec", 1),
        _ => ("nsec", 0),
    };
    let divisor = 1000u64.pow(scale);
    let width = 5.max(((maxv / divisor).max(1) as f64).log10() as usize + 1);
    let precision = usize::from(precision);
    let per_line = 73 / (precision + 10 + width);
    let mut out = format!("    {name} percentiles ({unit}):\n     |");
    for (j, &(pct, mut v)) in list.iter().enumerate() {
        if j != 0 && j % per_line == 0 {
            out += "     |";
        }
        for _ in 0..scale {
            v = v.div_ceil(1000);
        }
        let last = j + 1 == list.len();
        let pct = format!("{pct:.precision$}");
        out += &format!(" {pct:>w$}th=[{v:width$}]{}", if last { '\n' } else { ',' }, w = precision + 3);
        if !last && j % per_line == per_line - 1 {
            out += "\n";
        }
    }
    out
}

/// One direction of a job (fio's `show_ddir_status`), none if it did nothing.
fn ddir(name: &str, d: &FioDir, precision: u8) -> String {
    if d.runtime == 0 {
        return String::new();
    }
    // The JSON's rates, from the simulated time in ns (fio's come from whole ms).
    let (bw, iops) = (d.bw_bytes, d.iops.round() as u64);
    // fio 3.33 ends a write line with its zoned-device count (`zbd_write_status`).
    let zone_resets = if name == "write" { "; 0 zone resets" } else { "" };
    let mut out = format!(
        "  {name}: IOPS={}, BW={} ({})({}/{}msec){zone_resets}\n",
        num2str(iops, 4, false, ""),
        num2str(bw, 4, true, "B/s"),
        num2str(bw, 4, false, "B/s"),
        num2str(d.io_bytes, 4, true, "B"),
        d.runtime
    );
    out += &lat_line("slat", &d.slat_ns);
    out += &lat_line("clat", &d.clat_ns);
    out += &lat_line(" lat", &d.lat_ns);
    out += &percentiles("clat", &d.clat_ns, precision);
    out += &percentiles("lat", &d.lat_ns, precision);
    if d.bw_samples > 0 {
        let (mut min, mut max, mut mean, mut dev, mut unit) = (d.bw_min, d.bw_max, d.bw_mean, d.bw_dev, "KiB");
        if mean > 1024.0 * 1024.0 {
            (min, max, mean, dev, unit) = (min / 1024, max / 1024, mean / 1024.0, dev / 1024.0, "MiB");
        }
        out += &format!(
            "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={:3.2}%, avg={mean:5.2}, stdev={dev:5.2}, samples={}\n",
            d.bw_agg, d.bw_samples
        );
    }
    if d.iops_samples > 0 {
        out += &format!(
            "   iops        : min={:5}, max={:5}, avg={:5.2}, stdev={:5.2}, samples={}\n",
            d.iops_min, d.iops_max, d.iops_mean, d.iops_stddev, d.iops_samples
        );
    }
    out
}

/// fio's `show_lat`: the nonzero ranges of one unit, five to a line.
fn lat_ranges(unit: &str, p: &Percents) -> String {
    let shown: Vec<String> = p.0.iter().filter(|(_, v)| *v > 0.0).map(|(k, v)| format!("{k}={v:3.2}%")).collect();
    shown.chunks(5).map(|line| format!("  lat ({unit})   : {}\n", line.join(", "))).collect()
}

fn depths(p: &Percents) -> String {
    p.0.iter().map(|(k, v)| format!("{k}={v:3.1}%")).collect::<Vec<_>>().join(", ")
}

/// A job section as fio announces it before the run.
pub(crate) struct JobLine<'a> {
    pub(crate) name: &'a str,
    pub(crate) group: u32,
    pub(crate) rw: &'static str,
    /// The smallest and largest block size of reads, writes and TRIMs.
    pub(crate) bs: [(u64, u64); 3],
    pub(crate) iodepth: u32,
    pub(crate) clones: u32,
}

/// fio's lines before a run: each job section's pattern (`...` for its
/// clones), the version, and how many jobs start.
pub(crate) fn preamble(jobs: &[JobLine]) -> String {
    let mut out = String::new();
    for j in jobs {
        let [r, w, t] = j.bs.map(|(lo, hi)| format!("{}-{}", num2str(lo, 4, true, "B"), num2str(hi, 4, true, "B")));
        out += &format!(
            "{}: (g={}): rw={}, bs=(R) {r}, (W) {w}, (T) {t}, ioengine=duraflash, iodepth={}\n",
            j.name, j.group, j.rw, j.iodepth
        );
        if j.clones > 1 {
            out += "...\n";
        }
    }
    let n: u32 = jobs.iter().map(|j| j.clones).sum();
    let plural = if n == 1 { "process" } else { "processes" };
    out + &format!("duraflash-{} (fio-compatible)\nStarting {n} {plural}\n\n", env!("CARGO_PKG_VERSION"))
}

/// One reported job as fio writes it, `members` jobs summed into it.
pub(crate) fn job(j: &FioJob, members: usize) -> String {
    let mut out = format!(
        "{}: (groupid={}, jobs={members}): err={:2}: pid={}: {}\n",
        j.jobname,
        j.groupid,
        j.error,
        std::process::id(),
        UtcTime::now().ctime()
    );
    out += &ddir("read", &j.read, j.percentile_precision);
    out += &ddir("write", &j.write, j.percentile_precision);
    out += &ddir("trim", &j.trim, j.percentile_precision);
    out += &lat_ranges("nsec", &j.latency_ns);
    out += &lat_ranges("usec", &j.latency_us);
    out += &lat_ranges("msec", &j.latency_ms);
    out += &format!(
        "  cpu          : usr={:3.2}%, sys={:3.2}%, ctx={}, majf={}, minf={}\n",
        j.usr_cpu, j.sys_cpu, j.ctx, j.majf, j.minf
    );
    out += &format!("  IO depths    : {}\n", depths(&j.iodepth_level));
    out += &format!("     submit    : {}\n", depths(&j.iodepth_submit));
    out += &format!("     complete  : {}\n", depths(&j.iodepth_complete));
    let dirs = [&j.read, &j.write, &j.trim];
    let [t, s, d] = [|x: &FioDir| x.total_ios, |x: &FioDir| x.short_ios, |x: &FioDir| x.drop_ios]
        .map(|f| dirs.iter().map(|x| f(x).to_string()).collect::<Vec<_>>().join(","));
    out += &format!("     issued rwts: total={t},{} short={s},0 dropped={d},0\n", j.sync.total_ios);
    out += &format!(
        "     latency   : target={}, window={}, percentile={:.2}%, depth={}\n",
        j.latency_target, j.latency_window, j.latency_percentile, j.latency_depth
    );
    out
}

/// fio's `show_group_stats` for the reported jobs of group `id`.
pub(crate) fn group(id: u32, jobs: &[&FioJob]) -> String {
    let mut out = format!("\nRun status group {id} (all jobs):\n");
    for (k, name) in ["   READ", "  WRITE", "   TRIM"].into_iter().enumerate() {
        let dirs: Vec<&FioDir> =
            jobs.iter().map(|j| [&j.read, &j.write, &j.trim][k]).filter(|d| d.runtime > 0).collect();
        let Some(max_run) = dirs.iter().map(|d| d.runtime).max() else { continue };
        let min_run = dirs.iter().map(|d| d.runtime).min().unwrap_or(max_run);
        let io: u64 = dirs.iter().map(|d| d.io_bytes).sum();
        let (lo, hi) = dirs.iter().fold((u64::MAX, 0), |(lo, hi), d| (lo.min(d.bw_bytes), hi.max(d.bw_bytes)));
        // The group's bytes over its longest job's time, each job's time
        // from its bytes and rate (as in its own line).
        let secs =
            dirs.iter().filter(|d| d.bw_bytes > 0).map(|d| d.io_bytes as f64 / d.bw_bytes as f64).fold(0.0, f64::max);
        let agg = if secs > 0.0 { (io as f64 / secs).round() as u64 } else { 0 };
        let both = |v: u64| (num2str(v, 4, true, "B/s"), num2str(v, 4, false, "B/s"));
        let ((a, a2), (l, l2), (h, h2)) = (both(agg), both(lo), both(hi));
        out += &format!(
            "{name}: bw={a} ({a2}), {l}-{h} ({l2}-{h2}), io={} ({}), run={min_run}-{max_run}msec\n",
            num2str(io, 4, true, "B"),
            num2str(io, 4, false, "B")
        );
    }
    out
}

/// One direction in fio's terse line (stat.c `show_ddir_status_terse`,
/// version 3): KiB, KiB/s, IOPS, runtime, then slat, clat, 20 percentile
/// slots, lat and bandwidth samples, latencies in us.
fn terse_dir(d: &FioDir) -> String {
    let lat =
        |l: &FioLatency| format!(";{};{};{:.6};{:.6}", l.min / 1000, l.max / 1000, l.mean / 1000.0, l.stddev / 1000.0);
    let mut out = format!(";{};{};{};{}", d.io_bytes >> 10, d.bw_bytes / 1024, d.iops.round() as u64, d.runtime);
    out += &lat(&d.slat_ns);
    out += &lat(&d.clat_ns);
    // fio lists its percentiles, at 0, for a direction that did nothing too.
    let mut pcts: Vec<(f64, u64)> = match &d.clat_ns.percentile {
        Some(p) => p.iter().filter_map(|(k, &v)| Some((k.parse::<f64>().ok()?, v))).collect(),
        None => FIO_PERCENTILES.iter().map(|&p| (p, 0)).collect(),
    };
    pcts.sort_by(|a, b| a.0.total_cmp(&b.0));
    for slot in 0..20 {
        out += &match pcts.get(slot) {
            Some((p, v)) => format!(";{p:.6}%={}", v / 1000),
            None => ";0%=0".to_string(),
        };
    }
    out += &lat(&d.lat_ns);
    match d.bw_samples {
        0 => out += ";0;0;0.000000%;0.000000;0.000000",
        _ => out += &format!(";{};{};{:.6}%;{:.6};{:.6}", d.bw_min, d.bw_max, d.bw_agg, d.bw_mean, d.bw_dev),
    }
    out
}

/// A reported job as fio's terse line, version 3 (`--output-format=terse`,
/// stat.c `show_thread_status_terse_all`): reads and writes (version 3
/// has no TRIMs), CPU, depths, and the latency ranges in us (the ns ones
/// added to the first) and ms.
pub(crate) fn terse(j: &FioJob) -> String {
    let version = concat!("duraflash-", env!("CARGO_PKG_VERSION"));
    let mut out = format!("3;{version};{};{};{}", j.jobname, j.groupid, j.error);
    out += &terse_dir(&j.read);
    out += &terse_dir(&j.write);
    out += &format!(";{:.6}%;{:.6}%;{};{};{}", j.usr_cpu, j.sys_cpu, j.ctx, j.majf, j.minf);
    for (_, v) in &j.iodepth_level.0 {
        out += &format!(";{v:3.1}%");
    }
    let ns: f64 = j.latency_ns.0.iter().map(|(_, v)| v).sum();
    for (i, (_, v)) in j.latency_us.0.iter().enumerate() {
        out += &format!(";{:3.2}%", if i == 0 { v + ns } else { *v });
    }
    for (_, v) in &j.latency_ms.0 {
        out += &format!(";{v:3.2}%");
    }
    out + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn num2str_rounds_and_scales_as_fio() {
        // Each pair as fio 3.33 printed it for the same number.
        assert_eq!(num2str(1_933_000, 4, false, ""), "1933k");
        assert_eq!(num2str(7_917_000_000, 4, true, "B/s"), "7550MiB/s");
        assert_eq!(num2str(7_917_000_000, 4, false, "B/s"), "7917MB/s");
        assert_eq!(num2str(15_841_000_000, 4, true, "B"), "14.8GiB");
        assert_eq!(num2str(3_321_400, 6, false, ""), "3321.4k");
        assert_eq!(num2str(92_559, 6, false, ""), "92559");
        assert_eq!(num2str(4096, 4, true, "B"), "4096B");
        assert_eq!(num2str(65_536, 4, true, "B"), "64.0KiB");
    }

    #[test]
    fn latencies_change_unit_with_their_spread() {
        let l = |min, max, stddev| FioLatency { min, max, mean: 5e5, stddev, n: 9, percentile: None, bins: None };
        assert!(lat_line("clat", &l(100, 3_321_400, 1915.14)).starts_with("    clat (nsec): min=100, max=3321.4k,"));
        assert!(lat_line("clat", &l(30_000, 900_000, 40_000.0)).starts_with("    clat (usec): min=30, max=900,"));
        assert!(lat_line("clat", &l(3_000_000, 200_000_000, 2e6)).starts_with("    clat (msec): min=3, max=200,"));
    }
}
