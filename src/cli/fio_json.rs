//! `run`'s report in fio's JSON shape (`--output-format=json` and `json+`):
//! every field fio 3.33 writes for a job, so the tools that read fio's
//! JSON (fio-plot, fio's own `fio_jsonplus_clat2csv`, notebooks) read
//! ours. Fields of host work the model does not simulate are zero: no
//! submission latency, no sync commands, no host CPU, context switches or
//! page faults. The top-level `time` and `timestamp` are left out: the
//! same seed and config give the same JSON.

use std::collections::BTreeMap;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use duraflash::device::Stats;
use duraflash::host::{FioBins, FioLatency, SampleStat, DEPTH_LEVELS, LATENCY_RANGES};
use duraflash::workload::fio::Job;
use duraflash::workload::job::{DirResult, JobResult};

use super::output::Provenance;

/// One direction as fio writes it (`bw` is KiB/s and `runtime` ms, as in
/// fio). Submission is instant in the model, so `slat_ns` is zero and
/// `lat_ns` (submission to completion) equals `clat_ns`.
#[derive(Serialize)]
pub(crate) struct FioDir {
    pub(super) io_bytes: u64,
    pub(super) io_kbytes: u64,
    pub(super) bw_bytes: u64,
    pub(super) bw: u64,
    pub(super) iops: f64,
    pub(super) runtime: u64,
    pub(super) total_ios: u64,
    pub(super) short_ios: u64,
    pub(super) drop_ios: u64,
    pub(super) slat_ns: FioLatency,
    pub(super) clat_ns: FioLatency,
    pub(super) lat_ns: FioLatency,
    pub(super) bw_min: u64,
    pub(super) bw_max: u64,
    /// Percent of the group's aggregate bandwidth (fio's `bw_agg`).
    pub(super) bw_agg: f64,
    pub(super) bw_mean: f64,
    pub(super) bw_dev: f64,
    pub(super) bw_samples: u64,
    pub(super) iops_min: u64,
    pub(super) iops_max: u64,
    pub(super) iops_mean: f64,
    pub(super) iops_stddev: f64,
    pub(super) iops_samples: u64,
}

/// fio's `sync` object: the jobs issue no flushes.
#[derive(Serialize)]
pub(super) struct FioSync {
    pub(super) total_ios: u64,
    pub(super) lat_ns: FioLatency,
}

/// A distribution in percent under fio's keys, in fio's order.
pub(super) struct Percents(pub(super) Vec<(String, f64)>);

impl Serialize for Percents {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl Percents {
    /// `counts` under `keys` as percent of `total`; a share under `floor`
    /// that is not nothing shows as `floor` (stat.c `stat_calc_dist` 0.1,
    /// `stat_calc_lat` 0.01).
    fn of(keys: impl IntoIterator<Item = String>, counts: &[u64], total: u64, floor: f64) -> Self {
        let pct = |n: u64| match (total, n) {
            (0, _) => 0.0,
            (_, 0) => 0.0,
            _ => (n as f64 * 100.0 / total as f64).max(floor),
        };
        Percents(keys.into_iter().zip(counts).map(|(k, &n)| (k, pct(n))).collect())
    }
}

#[derive(Serialize)]
pub(crate) struct FioJob {
    /// Decimals of the text's percentiles (fio's `percentile_precision`).
    #[serde(skip)]
    pub(super) percentile_precision: u8,
    pub(super) jobname: String,
    pub(super) groupid: u32,
    pub(super) error: u32,
    /// Seconds left: none, the job is done.
    pub(super) eta: u64,
    /// Simulated seconds, whole (fio's `elapsed`).
    pub(super) elapsed: u64,
    /// Simulated ns (ours; fio has only whole seconds).
    pub(super) elapsed_ns: u64,
    #[serde(rename = "job options")]
    pub(super) job_options: FioOptions,
    /// `description=`, as fio's `desc`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) desc: Option<String>,
    pub(super) read: FioDir,
    pub(super) write: FioDir,
    pub(super) trim: FioDir,
    pub(super) sync: FioSync,
    pub(super) job_runtime: u64,
    pub(super) usr_cpu: f64,
    pub(super) sys_cpu: f64,
    pub(super) ctx: u64,
    pub(super) majf: u64,
    pub(super) minf: u64,
    pub(super) iodepth_level: Percents,
    pub(super) iodepth_submit: Percents,
    pub(super) iodepth_complete: Percents,
    pub(super) latency_ns: Percents,
    pub(super) latency_us: Percents,
    pub(super) latency_ms: Percents,
    pub(super) latency_depth: u32,
    pub(super) latency_target: u64,
    pub(super) latency_percentile: f64,
    pub(super) latency_window: u64,
}

/// A section's options as fio's JSON lists them: in the order written,
/// an option given twice twice (a JSON reader keeps the last, the value
/// that counts), and a flag given without a value (`time_based`) left
/// out, as fio leaves it out.
pub(crate) struct FioOptions(Vec<(String, String)>);

impl FioOptions {
    pub(crate) fn of(written: &[(String, String)]) -> Self {
        FioOptions(written.iter().filter(|(_, v)| !v.is_empty()).cloned().collect())
    }

    /// The value that counts for `key` (the last given), if any.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }
}

impl Serialize for FioOptions {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

#[derive(Serialize)]
pub(crate) struct FioOutput<'a> {
    #[serde(flatten)]
    pub(crate) provenance: Provenance<'a>,
    #[serde(rename = "fio version")]
    pub(crate) fio_version: &'static str,
    #[serde(rename = "global options")]
    pub(crate) global_options: FioOptions,
    pub(crate) jobs: Vec<FioJob>,
    pub(crate) drive: Stats,
}

/// A group's aggregate bandwidth per direction, bytes/s: its bytes over
/// its longest job's simulated time (fio's `rs->agg`, there over whole ms).
pub(crate) fn group_agg<'a>(jobs: impl IntoIterator<Item = &'a JobResult>) -> [u64; 3] {
    let (mut bytes, mut run_ns) = ([0u64; 3], [0u64; 3]);
    for r in jobs {
        for (k, d) in [&r.read, &r.write, &r.trim].into_iter().enumerate() {
            bytes[k] += d.io_bytes;
            if d.lat.commands > 0 {
                run_ns[k] = run_ns[k].max(d.lat.elapsed_ns);
            }
        }
    }
    std::array::from_fn(|k| if run_ns[k] > 0 { (bytes[k] as f64 * 1e9 / run_ns[k] as f64).round() as u64 } else { 0 })
}

/// How long the direction ran, ms (a job that reads its writes back reads
/// for part of its time: [`DirResult::lat`]'s span).
fn runtime_ms(d: &DirResult) -> u64 {
    if d.lat.commands > 0 {
        d.lat.elapsed_ns.div_ceil(1_000_000)
    } else {
        0
    }
}

/// fio's JSON for one direction of a job, sampled as `iops` and `bw`
/// (KiB/s), in a group of `agg` bytes/s; with `plus` (json+) the
/// completion latency carries fio's histogram bins.
fn fio_dir(d: &DirResult, plus: bool, shown: &Percentiles, iops: &SampleStat, bw: &SampleStat, agg: u64) -> FioDir {
    let zero = FioLatency { min: 0, max: 0, mean: 0.0, stddev: 0.0, n: d.lat.commands, percentile: None, bins: None };
    let percentiles = shown.of(d);
    // The model's total latency is its completion latency (submission is
    // instant), so lat_percentiles shows the same values under lat_ns.
    let lat = FioLatency { percentile: percentiles.clone().filter(|_| shown.lat), ..FioLatency::from(d.lat.clone()) };
    let percentile = percentiles.filter(|_| shown.clat);
    let bins = (plus && d.lat.commands > 0).then(|| FioBins::of(&d.hist));
    // stat.c `convert_agg_kbytes_percent`: the mean taken whole, at most 100.
    let bw_agg = match (bw.samples, agg) {
        (0, _) => 0.0,
        (_, 0..=1024) => 100.0,
        _ => (bw.mean.trunc() * 100.0 / (agg as f64 / 1024.0)).min(100.0),
    };
    FioDir {
        io_bytes: d.io_bytes,
        io_kbytes: d.io_bytes / 1024,
        bw_bytes: d.bw_bytes.round() as u64,
        bw: (d.bw_bytes / 1024.0).round() as u64,
        iops: d.iops,
        runtime: runtime_ms(d),
        total_ios: d.lat.commands,
        short_ios: 0,
        drop_ios: 0,
        slat_ns: zero,
        clat_ns: FioLatency { bins, percentile, ..FioLatency::from(d.lat.clone()) },
        lat_ns: lat,
        bw_min: bw.min,
        bw_max: bw.max,
        bw_agg,
        bw_mean: bw.mean,
        bw_dev: bw.stddev(),
        bw_samples: bw.samples,
        iops_min: iops.min,
        iops_max: iops.max,
        iops_mean: iops.mean,
        iops_stddev: iops.stddev(),
        iops_samples: iops.samples,
    }
}

/// Which latency percentiles a job reports: fio's `percentile_list`,
/// `clat_percentiles` and `lat_percentiles`.
struct Percentiles<'a> {
    list: Option<&'a [f64]>,
    clat: bool,
    lat: bool,
}

impl Percentiles<'_> {
    /// The percentiles of `d`'s latencies, keyed as fio keys them; none
    /// for a direction that did nothing, as in fio.
    fn of(&self, d: &DirResult) -> Option<BTreeMap<String, u64>> {
        (d.lat.commands > 0).then(|| match self.list {
            Some(list) => d.hist.percentiles(list),
            None => d.lat.percentile.clone(),
        })
    }
}

impl FioJob {
    /// Job `r` of group `groupid` (aggregate bandwidth `agg`, bytes/s), as
    /// `job` asked for it, beside the `[global]` options `global`.
    pub(crate) fn new(r: &JobResult, groupid: u32, job: &Job, global: &FioOptions, agg: [u64; 3], plus: bool) -> Self {
        let options = FioOptions::of(&job.options);
        // fio's `desc`: the job's description=, else [global]'s.
        let desc = options.get("description").or(global.get("description")).map(str::to_string);
        let iodepth = job.iodepth;
        let shown =
            Percentiles { list: job.percentile_list.as_deref(), clat: job.clat_percentiles, lat: job.lat_percentiles };
        let c = r.fio.clone().unwrap_or_default();
        let dir = |k: usize, d: &DirResult| fio_dir(d, plus, &shown, &c.iops[k], &c.bw[k], agg[k]);
        let ios = r.read.lat.commands + r.write.lat.commands + r.trim.lat.commands;
        let ranges = |unit_ms: bool| {
            let mut keys: Vec<String> = LATENCY_RANGES.iter().map(u64::to_string).collect();
            if unit_ms {
                keys.extend(["2000".to_string(), ">=2000".to_string()]);
            }
            keys
        };
        // Every command is submitted and reaped on its own: fio's bucket "1 to 4".
        let one_at_a_time = || {
            Percents::of(
                ["0", "4", "8", "16", "32", "64", ">=64"].map(String::from),
                &[0, ios, 0, 0, 0, 0, 0],
                ios,
                0.1,
            )
        };
        FioJob {
            percentile_precision: job.percentile_precision,
            jobname: r.name.clone(),
            groupid,
            error: 0,
            eta: 0,
            elapsed: r.elapsed_ns.div_ceil(1_000_000_000),
            elapsed_ns: r.elapsed_ns,
            job_options: options,
            desc,
            read: dir(0, &r.read),
            write: dir(1, &r.write),
            trim: dir(2, &r.trim),
            sync: FioSync {
                total_ios: 0,
                lat_ns: FioLatency { min: 0, max: 0, mean: 0.0, stddev: 0.0, n: 0, percentile: None, bins: None },
            },
            job_runtime: r.jobs_ns.div_ceil(1_000_000),
            usr_cpu: 0.0,
            sys_cpu: 0.0,
            ctx: 0,
            majf: 0,
            minf: 0,
            iodepth_level: Percents::of(DEPTH_LEVELS.map(String::from), &c.depth, ios, 0.1),
            iodepth_submit: one_at_a_time(),
            iodepth_complete: one_at_a_time(),
            latency_ns: Percents::of(ranges(false), &c.latency[..10], ios, 0.01),
            latency_us: Percents::of(ranges(false), &c.latency[10..20], ios, 0.01),
            latency_ms: Percents::of(ranges(true), &c.latency[20..], ios, 0.01),
            latency_depth: iodepth,
            latency_target: 0,
            latency_percentile: 100.0,
            latency_window: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percents_keep_fios_order_and_floor() {
        let p = Percents::of(DEPTH_LEVELS.map(String::from), &[1, 0, 0, 0, 0, 0, 9999], 10_000, 0.1);
        let json = serde_json::to_string(&p).unwrap();
        assert_eq!(json, r#"{"1":0.1,"2":0.0,"4":0.0,"8":0.0,"16":0.0,"32":0.0,">=64":99.99}"#);
        let none = Percents::of(DEPTH_LEVELS.map(String::from), &[0; 7], 0, 0.1);
        assert!(none.0.iter().all(|(_, v)| *v == 0.0));
    }
}
