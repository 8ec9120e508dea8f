//! `run`: a fio job file against the simulated drive, reported in fio's
//! JSON shape.

use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use std::collections::BTreeMap;

use duraflash::device::Stats;
use duraflash::host::smart::Smart;
use duraflash::host::{FioLatency, QueueSummary};
use duraflash::input::{read_capped, Shown};
use duraflash::workload::access::Rw;
use duraflash::workload::fio;
use duraflash::workload::job::{run_group, JobResult, JobSpec};
use duraflash::Lpn;

use super::output::{emit, with_progress, Provenance};
use super::{open_drive, save_image, DriveArgs, Failure, Output, Reads};

#[derive(Args)]
pub(crate) struct RunArgs {
    /// The fio job file.
    job: PathBuf,
    #[command(flatten)]
    drive: DriveArgs,
    /// Drive image: resumed when it exists, created otherwise; saved when the jobs finish.
    #[arg(long)]
    image: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
}

/// One direction as fio's `--output-format=json` writes it (the fields a
/// simulated drive can fill; `bw` is KiB/s and `runtime` ms, as in fio).
/// Submission is instant in the model, so `slat_ns` is zero and `lat_ns`
/// (submission to completion) equals `clat_ns`.
#[derive(Serialize)]
pub(crate) struct FioDir {
    io_bytes: u64,
    io_kbytes: u64,
    bw_bytes: u64,
    bw: u64,
    iops: f64,
    runtime: u64,
    total_ios: u64,
    short_ios: u64,
    drop_ios: u64,
    slat_ns: FioLatency,
    clat_ns: QueueSummary,
    lat_ns: FioLatency,
}

#[derive(Serialize)]
pub(crate) struct FioJob {
    jobname: String,
    groupid: u32,
    error: u32,
    /// Simulated seconds, whole (fio's `elapsed`).
    elapsed: u64,
    /// Simulated ns (ours; fio has only whole seconds).
    elapsed_ns: u64,
    #[serde(rename = "job options")]
    job_options: BTreeMap<String, String>,
    read: FioDir,
    write: FioDir,
    trim: FioDir,
    job_runtime: u64,
}

#[derive(Serialize)]
pub(crate) struct FioOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    #[serde(rename = "fio version")]
    fio_version: &'static str,
    #[serde(rename = "global options")]
    global_options: BTreeMap<String, String>,
    jobs: Vec<FioJob>,
    drive: Stats,
}

/// fio's JSON for one direction of a job that ran `elapsed_ns`.
pub(crate) fn fio_dir(d: &duraflash::workload::job::DirResult, elapsed_ns: u64) -> FioDir {
    let zero = FioLatency { min: 0, max: 0, mean: 0.0, stddev: 0.0, n: d.lat.commands, percentile: None };
    let lat = FioLatency { percentile: None, ..FioLatency::from(d.lat.clone()) };
    FioDir {
        io_bytes: d.io_bytes,
        io_kbytes: d.io_bytes / 1024,
        bw_bytes: d.bw_bytes.round() as u64,
        bw: (d.bw_bytes / 1024.0).round() as u64,
        iops: d.iops,
        runtime: if d.lat.commands > 0 { elapsed_ns.div_ceil(1_000_000) } else { 0 },
        total_ios: d.lat.commands,
        short_ios: 0,
        drop_ios: 0,
        slat_ns: zero,
        clat_ns: d.lat.clone(),
        lat_ns: lat,
    }
}

fn options(written: &[(String, String)]) -> BTreeMap<String, String> {
    written.iter().cloned().collect()
}

/// The stream hints of a group's regions while it runs: each job's region
/// (in units of `unit` bytes) carries its `write_hint`. Jobs of one group
/// whose regions overlap must agree, since an LBA carries one stream.
fn group_hints(file: &fio::JobFile, group: &fio::Group, unit: u64) -> Result<Vec<(Lpn, u8)>, String> {
    let mut regions: Vec<(u64, u64, u8, &str)> = group
        .members
        .iter()
        .map(|m| {
            let s = &m.spec;
            (s.offset / unit, (s.offset + s.length).div_ceil(unit), file.jobs[m.job].write_hint, s.name.as_str())
        })
        .collect();
    regions.sort_by_key(|r| r.0);
    let mut merged: Vec<(u64, u64, u8, &str)> = Vec::new();
    for r in regions {
        match merged.last_mut() {
            Some(cur) if r.0 < cur.1 => {
                if r.2 != cur.2 {
                    return Err(format!(
                        "jobs '{}' and '{}' run together over overlapping regions with different write_hint \
                         values; an LBA carries one stream",
                        cur.3, r.3
                    ));
                }
                cur.1 = cur.1.max(r.1);
            }
            _ => merged.push(r),
        }
    }
    Ok(merged.iter().flat_map(|&(first, end, hint, _)| [(Lpn(first), hint), (Lpn(end), 0)]).collect())
}

pub(crate) fn run(args: RunArgs) -> Result<(), Failure> {
    args.out.start(&[
        ("job file", Some(&args.job)),
        ("--image", args.image.as_deref()),
        ("--config", args.drive.config.as_deref()),
    ])?;
    let text = read_capped(&args.job, fio::MAX_JOB_FILE_BYTES, "fio job file")
        .map_err(|e| Failure::Usage(format!("{}: {e}", args.job.display())))?;
    let file = fio::parse(&text).map_err(|e| Failure::Usage(format!("{}: {e}", args.job.display())))?;
    for w in &file.warnings {
        note!("duraflash: warning: {}: {w}", args.job.display());
    }
    // Precedence: the defaults, then the job file's [drive] section, then
    // the flags given on the command line (the run at hand says last).
    let mut overrides = args.drive.defaults(Reads::Data);
    file.apply_drive(&mut overrides).map_err(|e| Failure::Usage(format!("{}: {e}", args.job.display())))?;
    let given = args.drive.apply_given(&mut overrides);
    for s in &file.drive {
        let flag = format!("--{}", s.key);
        if given.contains(&flag.as_str()) {
            note!(
                "duraflash: note: {}: line {}: [drive] {}={} is overridden by {flag} on the command line",
                args.job.display(),
                s.line,
                s.key,
                Shown::new(&s.value)
            );
        }
    }
    let cfg = overrides.build(None).map_err(|e| {
        // A refused setting the file gave is named by its file and line.
        let text = e.to_string();
        let from_file = file.drive.iter().rev().find(|s| {
            let flag = format!("--{}", s.key);
            text.starts_with(&flag) && !given.contains(&flag.as_str())
        });
        match from_file {
            Some(s) => Failure::Usage(format!(
                "{}: line {}: [drive] {}={}: {}",
                args.job.display(),
                s.line,
                s.key,
                Shown::new(&s.value),
                text.trim_start_matches(&format!("--{}", s.key)).trim_start_matches([':', ' '])
            )),
            None => Failure::Usage(text),
        }
    })?;
    // An image of another config is refused, so the plan is the drive's.
    let groups =
        file.plan(cfg.logical_bytes, cfg.seed).map_err(|e| Failure::Usage(format!("{}: {e}", args.job.display())))?;
    args.drive
        .check_run_memory(&cfg, 1, fio::memory_beside(&groups, &cfg))
        .map_err(|e| Failure::Usage(format!("{}: {e}", args.job.display())))?;
    let (mut drive, _lock) = open_drive(cfg, args.image.as_deref())?;
    // fio's write_hint: a stream per job, which the model keeps per LBA.
    let streams = drive.config().placement.streams;
    if let Some(job) = file.jobs.iter().find(|j| j.write_hint >= streams) {
        return Err(Failure::Usage(format!(
            "{}: job '{}': write_hint needs write stream {} but the drive has {streams} (give --streams {})",
            args.job.display(),
            Shown::new(&job.name),
            job.write_hint,
            job.write_hint + 1
        )));
    }
    // Each group's reported jobs: (group id, index of the job in the file, result).
    let mut results: Vec<(u32, usize, JobResult)> = Vec::new();
    for group in &groups {
        if streams > 1 {
            let hints = group_hints(&file, group, u64::from(drive.config().unit_bytes))
                .map_err(|e| Failure::Usage(format!("{}: {e}", args.job.display())))?;
            drive.set_stream_hints(hints).map_err(Failure::run)?;
        }
        for m in &group.members {
            let spec = &m.spec;
            let reads = matches!(spec.rw, Rw::Read | Rw::RandRead | Rw::RandRw | Rw::SeqRw);
            if reads && drive.stats().mapped_units == 0 {
                note!(
                    "duraflash: note: job '{}' reads a drive never written: every read is of an unmapped LBA \
                     (zeros, only the link's time); write the region first or resume an aged drive with --image",
                    spec.name
                );
                break;
            }
        }
        // The jobs of a group run together on the one drive; groups run in turn.
        let specs: Vec<JobSpec> = group.members.iter().map(|m| m.spec.clone()).collect();
        let phase = if specs.len() == 1 { specs[0].name.clone() } else { format!("group {}", group.id) };
        let r = with_progress(&args.out, &phase, |p| run_group(&mut drive, &specs, p)).map_err(Failure::run)?;
        if group.reporting {
            results.push((group.id, group.members[0].job, r.total));
        } else {
            results.extend(group.members.iter().zip(r.jobs).map(|(m, j)| (group.id, m.job, j)));
        }
    }
    save_image(&drive, args.image.as_deref())?;
    let mut summary = String::new();
    for (_, _, r) in &results {
        summary += &format!("{}: ", r.name);
        for (name, d) in [("read", &r.read), ("write", &r.write), ("trim", &r.trim)] {
            if d.lat.commands > 0 {
                summary += &format!(
                    "{name} {:.0} IOPS {:.1} MB/s (clat p50 {:.0} us, p99 {:.0} us)  ",
                    d.iops,
                    d.bw_bytes / 1e6,
                    d.lat.p50_ns as f64 / 1e3,
                    d.lat.p99_ns as f64 / 1e3
                );
            }
        }
        summary += &format!("[{:.3} s simulated]\n", r.elapsed_ns as f64 / 1e9);
    }
    let s = drive.stats();
    summary +=
        &format!("drive: WAF {:.3}, compression {:.3}, dedup {:.3}\n", s.waf, s.compression_ratio, s.dedup_ratio);
    let jobs = results
        .iter()
        .map(|(group, job, r)| FioJob {
            jobname: r.name.clone(),
            groupid: *group,
            error: 0,
            elapsed: r.elapsed_ns.div_ceil(1_000_000_000),
            elapsed_ns: r.elapsed_ns,
            job_options: options(&file.jobs[*job].options),
            read: fio_dir(&r.read, r.elapsed_ns),
            write: fio_dir(&r.write, r.elapsed_ns),
            trim: fio_dir(&r.trim, r.elapsed_ns),
            job_runtime: r.elapsed_ns.div_ceil(1_000_000),
        })
        .collect();
    let cfg = drive.config().clone();
    let out = FioOutput {
        provenance: Provenance::new(&cfg),
        fio_version: "duraflash-fio-compat",
        global_options: options(&file.global_options),
        jobs,
        drive: s,
    };
    emit(&args.out, &summary, &out, &[("", Smart::of(&drive))])
}
