//! `run`: a fio job file against the simulated drive, reported in fio's
//! JSON shape.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use clap::Args;

use duraflash::config::Media;
use duraflash::host::smart::Smart;
use duraflash::input::{read_capped, Shown};
use duraflash::workload::access::Rw;
use duraflash::workload::fio;
use duraflash::workload::job::{run_fio_group, JobResult, JobSpec};
use duraflash::Lpn;

use super::fio_json::{group_agg, FioJob, FioOptions, FioOutput};
use super::fio_text::{self, JobLine};
use super::output::{emit, with_progress, Provenance};
use super::{open_drive, save_image, DriveArgs, Failure, Output, Reads};

#[derive(Args)]
pub(crate) struct RunArgs {
    /// The fio job files (several run one after another, each file's first job starting a new group,
    /// as fio runs them); or give the jobs as fio's command-line options instead, as with fio itself:
    /// --name=j --rw=randwrite --bs=4k --size=64m.
    #[arg(value_name = "JOB")]
    jobs: Vec<PathBuf>,
    /// Only run this job section of the file (fio's --section; repeatable; [global] still applies).
    #[arg(long, value_name = "NAME")]
    section: Vec<String>,
    /// fio's --output-format: normal (fio's text, the default), json (fio's JSON, on stdout or into
    /// --output), json+ (json with fio's latency bins), terse (fio's semicolon-separated line a job,
    /// version 3); comma-separated for more than one (the text then follows the JSON, as fio writes them).
    #[arg(long, value_name = "FORMAT", value_parser = parse_formats)]
    output_format: Option<Formats>,
    /// fio's --output: the file the --output-format goes to instead of stdout.
    #[arg(long, value_name = "FILE")]
    output: Option<PathBuf>,
    /// fio's --minimal: the terse format (as --output-format=terse).
    #[arg(long)]
    minimal: bool,
    /// fio's --terse-version: only 3 is written.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u8).range(3..=3))]
    terse_version: Option<u8>,
    /// fio's --parse-only: check the jobs against the drive (every error a run would refuse them
    /// with) and stop, running nothing.
    #[arg(long)]
    parse_only: bool,
    /// fio's job options given on the command line, taken out of the
    /// arguments by [`split_fio_options`].
    #[arg(skip)]
    pub(crate) fio_options: Vec<String>,
    #[command(flatten)]
    drive: DriveArgs,
    /// Drive image: resumed when it exists, created otherwise; saved when the jobs finish.
    #[arg(long)]
    image: Option<PathBuf>,
    #[command(flatten)]
    out: Output,
}

/// Where the jobs come from: job files, or fio's options on the command
/// line. Messages name the file and line, or the argument.
enum Source {
    /// Job files, their texts one after another (each ending in a line
    /// break), and the line of the whole each file starts at.
    Files {
        paths: Vec<PathBuf>,
        text: String,
        starts: Vec<usize>,
    },
    CommandLine(fio::CommandLineJobs),
}

impl Source {
    /// The job files `run` was given, each read only up to fio's cap, or
    /// the jobs its command line gave.
    fn of(args: &RunArgs) -> Result<Self, Failure> {
        let unknown = args.fio_options.iter().find(|o| !fio::is_option(option_key(o)));
        match (args.jobs.first(), args.fio_options.is_empty()) {
            (Some(_), true) => {
                let (mut text, mut starts) = (String::new(), Vec::new());
                for path in &args.jobs {
                    starts.push(text.lines().count() + 1);
                    let file = read_capped(path, fio::MAX_JOB_FILE_BYTES, "fio job file")
                        .map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?;
                    text += &file;
                    if !text.ends_with('\n') {
                        text.push('\n');
                    }
                }
                Ok(Source::Files { paths: args.jobs.clone(), text, starts })
            }
            (None, false) => fio::CommandLineJobs::new(&args.fio_options)
                .map(Source::CommandLine)
                .map_err(|e| Failure::Usage(format!("command line: {e}"))),
            // With a job file, a key that is no fio option is a mistyped flag.
            (Some(_), false) if unknown.is_some() => Err(Failure::Usage(format!(
                "{}: neither a flag of run (see duraflash run --help) nor a fio job option duraflash implements",
                Shown::new(unknown.map_or("", String::as_str))
            ))),
            (Some(job), false) => Err(Failure::Usage(format!(
                "{}: give the jobs in the job file or as fio options on the command line ({} ...), not both",
                job.display(),
                Shown::new(&args.fio_options[0])
            ))),
            (None, true) => Err(Failure::Usage(
                "no jobs: give a fio job file, or the jobs as fio's options (--name=j --rw=randwrite --bs=4k \
                 --size=64m)"
                    .into(),
            )),
        }
    }

    /// The parsed jobs.
    fn parse(&self) -> Result<fio::JobFile, Failure> {
        match self {
            Source::Files { text, starts, .. } => {
                fio::parse_files(text, &starts[1..]).map_err(|e| Failure::Usage(self.at(e)))
            }
            Source::CommandLine(jobs) => jobs.parse().map_err(|e| Failure::Usage(self.at(e))),
        }
    }

    /// Line `n` of the jobs as a reader finds it: `FILE: line M`, or the
    /// command-line argument it came from.
    fn line(&self, n: usize) -> String {
        match self {
            Source::Files { paths, starts, .. } => {
                let file = starts.partition_point(|&s| s <= n).saturating_sub(1);
                format!("{}: line {}", paths[file].display(), n + 1 - starts[file])
            }
            Source::CommandLine(jobs) => match jobs.argument(n) {
                Some(arg) => format!("command line: {}", Shown::new(arg)),
                None => format!("command line: line {n}"),
            },
        }
    }

    /// `what` (which names lines as "line N") as a message: after the file's
    /// name; with several files, each line named by its file; from the
    /// command line, each line named by the argument it came from.
    fn at(&self, what: impl fmt::Display) -> String {
        let text = what.to_string();
        if let Source::Files { paths, .. } = self {
            if paths.len() == 1 {
                return format!("{self}: {text}");
            }
        }
        let (mut out, mut rest, mut named) = (String::new(), text.as_str(), false);
        while let Some(at) = rest.find("line ") {
            let after = &rest[at + 5..];
            let digits = after.len() - after.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            // A user's value is quoted: 'line 2' there is theirs, not a line.
            let quoted = (out.matches('\'').count() + rest[..at].matches('\'').count()) % 2 == 1;
            let name = match (self, after[..digits].parse::<usize>()) {
                _ if quoted => None,
                (Source::CommandLine(jobs), Ok(n)) => jobs.argument(n).map(|arg| Shown::new(arg).to_string()),
                (Source::Files { .. }, Ok(n)) if n > 0 => Some(self.line(n)),
                _ => None,
            };
            match name {
                Some(name) => {
                    out += &rest[..at];
                    out += &name;
                    rest = &after[digits..];
                    named = true;
                }
                None => {
                    out += &rest[..at + 5];
                    rest = after;
                }
            }
        }
        match self {
            Source::Files { .. } if named => format!("{out}{rest}"),
            _ => format!("{self}: {out}{rest}"),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Files { paths, .. } => {
                let names: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                f.write_str(&names.join(", "))
            }
            Source::CommandLine(_) => f.write_str("command line"),
        }
    }
}

/// fio's `--output-format`. As in fio, a JSON format alone writes no text;
/// without the flag the text (`normal`, fio's default) is written.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Formats {
    /// `normal` named: with a JSON format, the summary follows the JSON.
    normal: bool,
    json: bool,
    /// `json+`: fio's JSON with each latency's bins.
    plus: bool,
    /// `terse`: fio's semicolon-separated line a job, version 3.
    terse: bool,
}

fn parse_formats(s: &str) -> Result<Formats, String> {
    let mut f = Formats::default();
    for name in s.split(',').map(str::trim) {
        match name {
            "normal" => f.normal = true,
            "json" => f.json = true,
            "json+" => (f.json, f.plus) = (true, true),
            "terse" => f.terse = true,
            other => {
                return Err(format!("'{}': accepted: normal, json, json+, terse (comma-separated)", Shown::new(other)))
            }
        }
    }
    Ok(f)
}

/// fio's `--output-format` and `--output` as this tool's outputs: the JSON
/// goes where `--json` would send it (`--output`, else stdout, the text
/// after it when `normal` was named too, as fio writes both), and the
/// normal format alone goes into `--output`.
fn fio_outputs(args: &mut RunArgs) -> Result<(), Failure> {
    if args.minimal {
        // fio: --minimal is the terse format, whatever --output-format says.
        args.output_format = Some(Formats { terse: true, ..Formats::default() });
    }
    let formats = args.output_format.unwrap_or_default();
    match (formats.json, args.output.take(), args.out.json.is_some()) {
        (true, Some(_), true) => {
            Err(Failure::Usage("--output and --json both say where the JSON goes; give one of them".into()))
        }
        (true, output, false) => {
            args.out.summary_after_json = formats.normal || formats.terse;
            args.out.json_flag = output.is_some().then_some("--output");
            args.out.json = Some(output.unwrap_or_else(|| PathBuf::from("-")));
            Ok(())
        }
        (false, Some(output), _) if args.out.json.as_deref().is_some_and(|json| same_file(json, &output)) => {
            Err(Failure::Usage(format!(
                "--output and --json both name {}: the JSON would overwrite the text; give two files",
                output.display()
            )))
        }
        (false, Some(output), _) => {
            args.out.summary = Some(output);
            Ok(())
        }
        (true, None, true) | (false, None, _) => Ok(()),
    }
}

/// The key of a fio option as [`split_fio_options`] passes it: `--key=value` or `--key`.
fn option_key(option: &str) -> &str {
    let body = option.trim_start_matches("--");
    body.split_once('=').map_or(body, |(key, _)| key)
}

/// Whether two output paths name one file, symbolic links resolved as
/// `check_output` resolves them (a file not made yet by its directory).
fn same_file(a: &Path, b: &Path) -> bool {
    let resolved = |p: &Path| duraflash::image::resolve(p).unwrap_or_else(|_| p.to_path_buf());
    a != Path::new("-") && resolved(a) == resolved(b)
}

/// fio's command-line options that only say how fio shows its progress.
const FIO_DISPLAY_ONLY: [&str; 3] = ["eta", "eta-newline", "eta-interval"];

/// `duraflash run`'s arguments (`args`, program name first) without fio's
/// job options, and those options in order, each as `--key=value` or a
/// bare `--key`: an argument whose key is none of `run`'s own flags and
/// is one of fio's job options ([`fio::is_option`]) or no typo of a
/// flag (fio's parser then refuses it by name), with the next
/// argument as its value where fio would take it (`--name j`). fio's
/// progress options (`--eta`, `--eta-newline`, `--eta-interval`) are
/// dropped, `--eta=never` becoming `--quiet`. Other commands' arguments
/// are returned whole.
pub(crate) fn split_fio_options(args: Vec<OsString>, cli: &clap::Command) -> (Vec<OsString>, Vec<String>) {
    let Some(run) = cli.find_subcommand("run").filter(|_| args.get(1).is_some_and(|a| a == "run")) else {
        return (args, Vec::new());
    };
    let own = |key: &str| run.get_arguments().any(|a| a.get_long() == Some(key)) || key == "help";
    // A key a letter or two from one of `run`'s flags is a typo of it,
    // which clap names; any other unknown key is fio's to refuse.
    let near_own =
        |key: &str| run.get_arguments().filter_map(|a| a.get_long()).any(|l| strsim::levenshtein(key, l) <= 2);
    let takes_value =
        |key: &str| run.get_arguments().any(|a| a.get_long() == Some(key) && a.get_action().takes_values());
    let (mut kept, mut fio, mut quiet) = (Vec::new(), Vec::new(), false);
    let mut args = args.into_iter().peekable();
    while let Some(arg) = args.next() {
        let Some(body) = arg.to_str().and_then(|a| a.strip_prefix("--")) else {
            kept.push(arg);
            continue;
        };
        if body.is_empty() {
            kept.push(arg);
            kept.extend(args.by_ref());
            break;
        }
        let key = body.split_once('=').map_or(body, |(k, _)| k);
        if FIO_DISPLAY_ONLY.contains(&key) {
            // How fio shows its progress: here bars show on a terminal,
            // and `--eta=never` hides them as `--quiet` does.
            let value = match body.split_once('=') {
                Some((_, v)) => Some(v.to_string()),
                None => args.next_if(|v| !v.to_string_lossy().starts_with("--")).map(|v| v.to_string_lossy().into()),
            };
            quiet |= key == "eta" && value.as_deref() == Some("never");
            continue;
        }
        if !own(key) && (fio::is_option(key) || !near_own(key)) {
            // `--name j` as fio reads it: the next argument is the value.
            let value = (!body.contains('=') && fio::takes_value(key))
                .then(|| args.next_if(|v| v.to_str().is_some_and(|v| !v.starts_with("--"))))
                .flatten();
            match value {
                Some(v) => fio.push(format!("--{body}={}", v.to_string_lossy())),
                None => fio.push(format!("--{body}")),
            }
        } else {
            let value_follows = !body.contains('=') && takes_value(key);
            kept.push(arg);
            if value_follows {
                kept.extend(args.next());
            }
        }
    }
    if quiet && !kept.iter().any(|a| a == "--quiet") {
        kept.insert(2, "--quiet".into());
    }
    (kept, fio)
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

pub(crate) fn run(mut args: RunArgs) -> Result<(), Failure> {
    fio_outputs(&mut args)?;
    let plus = args.output_format.is_some_and(|f| f.plus);
    // fio writes its text only when asked for (`normal`, its default).
    let text = args.output_format.is_none_or(|f| f.normal || !(f.json || f.terse));
    let terse = args.output_format.is_some_and(|f| f.terse);
    let mut inputs: Vec<(&str, Option<&std::path::Path>)> =
        args.jobs.iter().map(|j| ("job file", Some(j.as_path()))).collect();
    inputs.extend([("--image", args.image.as_deref()), ("--config", args.drive.config.as_deref())]);
    args.out.start(&inputs)?;
    let source = Source::of(&args)?;
    let mut file = source.parse()?;
    for w in &file.warnings {
        note!("duraflash: warning: {}", source.at(w));
    }
    file.select(&args.section).map_err(|e| Failure::Usage(source.at(e)))?;
    // Precedence: the defaults, then the job file's [drive] section, then
    // the flags given on the command line (the run at hand says last).
    let mut overrides = args.drive.defaults(Reads::Data);
    file.apply_drive(&mut overrides).map_err(|e| Failure::Usage(source.at(e)))?;
    let given = args.drive.apply_given(&mut overrides);
    for s in &file.drive {
        let flag = format!("--{}", s.key);
        if given.contains(&flag.as_str()) {
            note!(
                "duraflash: note: {}: [drive] {}={} is overridden by {flag} on the command line",
                source.line(s.line),
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
                "{}: [drive] {}={}: {}",
                source.line(s.line),
                s.key,
                Shown::new(&s.value),
                text.trim_start_matches(&format!("--{}", s.key)).trim_start_matches([':', ' '])
            )),
            None => Failure::Usage(text),
        }
    })?;
    super::note_rounded_capacity(&overrides, &cfg);
    // An image of another config is refused, so the plan is the drive's.
    let groups = file.plan(cfg.logical_bytes, cfg.seed).map_err(|e| Failure::Usage(source.at(e)))?;
    args.drive
        .check_run_memory(&cfg, 1, fio::memory_beside(&groups, &cfg))
        .map_err(|e| Failure::Usage(format!("{source}: {e}")))?;
    // fio's write_hint: a stream per job, which the model keeps per LBA.
    let streams = cfg.placement.streams;
    if let Some(job) = file.jobs.iter().find(|j| file.selected(j) && j.write_hint >= streams) {
        return Err(Failure::Usage(format!(
            "{}: job '{}': write_hint needs write stream {} but the drive has {streams} (give --streams {})",
            source,
            Shown::new(&job.name),
            job.write_hint,
            job.write_hint + 1
        )));
    }
    if cfg.media != Media::Memory {
        if let Some(job) = file.jobs.iter().find(|j| file.selected(j) && j.verify.checksum.is_some()) {
            return Err(Failure::Usage(format!(
                "{source}: job '{}': verify reads back the bytes written, and --media metadata-only keeps none (use --media memory)",
                Shown::new(&job.name),
            )));
        }
    }
    if args.parse_only {
        return Ok(());
    }
    let (mut drive, _lock) = open_drive(cfg, args.image.as_deref())?;
    // Each group's reported jobs: (group id, index of the job in the file,
    // jobs summed into it, result).
    let mut results: Vec<(u32, usize, usize, JobResult)> = Vec::new();
    // fio's SIGINT and SIGTERM: stop issuing, report what ran; a second
    // signal ends the process at once (status 130, as a shell's Ctrl-C).
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, Arc::clone(&stop))
            .and_then(|_| signal_hook::flag::register(sig, Arc::clone(&stop)))
            .map_err(|e| Failure::Run(e.to_string()))?;
    }
    for group in &groups {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if streams > 1 {
            let hints = group_hints(&file, group, u64::from(drive.config().unit_bytes))
                .map_err(|e| Failure::Usage(format!("{source}: {e}")))?;
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
        let timings: Vec<_> = group.members.iter().map(|m| file.jobs[m.job].timing).collect();
        let r = with_progress(&args.out, &phase, |p| run_fio_group(&mut drive, &specs, &timings, &stop, p))
            .map_err(Failure::run)?;
        if group.reporting {
            results.push((group.id, group.members[0].job, group.members.len(), r.total));
        } else {
            results.extend(group.members.iter().zip(r.jobs).map(|(m, j)| (group.id, m.job, 1, j)));
        }
    }
    if stop.load(Ordering::Relaxed) {
        // As fio's "terminating on signal": what ran is reported and saved.
        note!("duraflash: interrupted: the results are those of the commands issued before the signal");
    }
    save_image(&drive, args.image.as_deref())?;
    let global = FioOptions::of(&file.global_options);
    let jobs: Vec<FioJob> = results
        .iter()
        .map(|(group, job, _, r)| {
            let agg = group_agg(results.iter().filter(|(g, ..)| g == group).map(|(.., r)| r));
            FioJob::new(r, *group, &file.jobs[*job], &global, agg, plus)
        })
        .collect();
    let lines: Vec<JobLine> = file
        .jobs
        .iter()
        .enumerate()
        .filter_map(|(i, j)| {
            let group = groups.iter().find(|g| g.members.iter().any(|m| m.job == i))?.id;
            let bs = j.block_sizes.clone().map(|c| (c.min(), c.max()));
            let (name, rw, iodepth, clones) = (j.name.as_str(), fio::rw_name(j.rw), j.iodepth, j.numjobs);
            Some(JobLine { name, group, rw, bs, iodepth, clones })
        })
        .collect();
    let s = drive.stats();
    let mut summary = String::new();
    if text {
        // fio writes its job lines before the run, so before the JSON too.
        match args.out.summary_after_json {
            true => args.out.before_json = fio_text::preamble(&lines),
            false => summary += &fio_text::preamble(&lines),
        }
        for (j, (.., members, _)) in jobs.iter().zip(&results) {
            summary += &fio_text::job(j, *members);
        }
        for group in &groups {
            let reported: Vec<&FioJob> =
                jobs.iter().zip(&results).filter(|(_, r)| r.0 == group.id).map(|(j, _)| j).collect();
            summary += &fio_text::group(group.id, &reported);
        }
        summary += &format!(
            "\nDrive (duraflash): WAF {:.3}, compression {:.3}, dedup {:.3}\n",
            s.waf, s.compression_ratio, s.dedup_ratio
        );
    }
    if terse {
        summary.extend(jobs.iter().map(fio_text::terse));
    }
    let cfg = drive.config().clone();
    let out = FioOutput {
        provenance: Provenance::new(&cfg),
        fio_version: "duraflash-fio-compat",
        global_options: global,
        jobs,
        drive: s,
    };
    emit(&args.out, &summary, &out, &[("", Smart::of(&drive))])
}
