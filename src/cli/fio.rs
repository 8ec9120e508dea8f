//! `run`: a fio job file against the simulated drive, reported in fio's
//! JSON shape.

use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use duraflash::device::Stats;
use duraflash::host::smart::Smart;
use duraflash::workload::fio;
use duraflash::workload::job::{run_job, JobResult};

use super::output::{emit, with_progress, Provenance};
use super::{open_drive, save_image, setup_threads, DriveArgs, Failure, Output, Reads};

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

/// fio's JSON shape for one direction.
#[derive(Serialize)]
pub(crate) struct FioDir {
    io_bytes: u64,
    bw_bytes: f64,
    iops: f64,
    clat_ns: FioLat,
}

#[derive(Serialize)]
pub(crate) struct FioLat {
    mean: f64,
    max: u64,
    percentile: std::collections::BTreeMap<&'static str, u64>,
}

#[derive(Serialize)]
pub(crate) struct FioJob {
    jobname: String,
    elapsed_ns: u64,
    read: FioDir,
    write: FioDir,
    trim: FioDir,
}

#[derive(Serialize)]
pub(crate) struct FioOutput<'a> {
    #[serde(flatten)]
    provenance: Provenance<'a>,
    #[serde(rename = "fio version")]
    fio_version: &'static str,
    jobs: Vec<FioJob>,
    drive: Stats,
}

pub(crate) fn fio_dir(d: &duraflash::workload::job::DirResult) -> FioDir {
    let percentile =
        [("50.000000", d.lat.p50_ns), ("99.000000", d.lat.p99_ns), ("99.900000", d.lat.p999_ns)].into_iter().collect();
    FioDir {
        io_bytes: d.io_bytes,
        bw_bytes: d.bw_bytes,
        iops: d.iops,
        clat_ns: FioLat { mean: d.lat.mean_latency_ns, max: d.lat.max_ns, percentile },
    }
}

pub(crate) fn run(args: RunArgs) -> Result<(), Failure> {
    setup_threads(&args.out)?;
    let text =
        std::fs::read_to_string(&args.job).map_err(|e| Failure::Usage(format!("{}: {e}", args.job.display())))?;
    let file = fio::parse(&text).map_err(|e| Failure::Usage(format!("{}: {e}", args.job.display())))?;
    // Precedence: the defaults, then the job file's [drive] section, then
    // the flags given on the command line (the run at hand says last).
    let mut overrides = args.drive.defaults(Reads::Data);
    file.apply_drive(&mut overrides).map_err(|e| Failure::Usage(format!("{}: {e}", args.job.display())))?;
    let given = args.drive.apply_given(&mut overrides);
    for s in &file.drive {
        let flag = format!("--{}", s.key);
        if given.contains(&flag.as_str()) {
            eprintln!(
                "duraflash: note: {}: line {}: [drive] {}={} is overridden by {flag} on the command line",
                args.job.display(),
                s.line,
                s.key,
                s.value
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
                s.value,
                text.trim_start_matches(&format!("--{}", s.key)).trim_start_matches([':', ' '])
            )),
            None => Failure::Usage(text),
        }
    })?;
    args.drive.check_memory(&cfg, 1).map_err(Failure::Usage)?;
    let (mut drive, _lock) = open_drive(cfg, args.image.as_deref())?;
    let capacity = drive.config().logical_bytes;
    let specs = file
        .specs(capacity, drive.config().seed)
        .map_err(|e| Failure::Usage(format!("{}: {e}", args.job.display())))?;
    let mut results: Vec<JobResult> = Vec::new();
    for spec in &specs {
        // Jobs run one after another (each as if stonewalled): the drive is one device.
        let r = with_progress(&args.out, &spec.name, |p| run_job(&mut drive, spec, p)).map_err(Failure::run)?;
        results.push(r);
    }
    save_image(&drive, args.image.as_deref())?;
    let mut summary = String::new();
    for r in &results {
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
        .map(|r| FioJob {
            jobname: r.name.clone(),
            elapsed_ns: r.elapsed_ns,
            read: fio_dir(&r.read),
            write: fio_dir(&r.write),
            trim: fio_dir(&r.trim),
        })
        .collect();
    let cfg = drive.config().clone();
    let out = FioOutput { provenance: Provenance::new(&cfg), fio_version: "duraflash-fio-compat", jobs, drive: s };
    emit(&args.out, &summary, &out, &[("", Smart::of(&drive))])
}
