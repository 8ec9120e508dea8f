//! Printing and progress: the JSON result's provenance, `--json` and
//! `--smart` output, progress bars on stderr, plots named by `--plot`.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use duraflash::config::DriveConfig;
use duraflash::host::smart::Smart;
use duraflash::image::ImageLock;
use duraflash::lab::plot::{self, BarChart, LineChart};
use duraflash::Drive;

use super::{open_drive, DriveArgs, Failure, Output, Reads};

/// Every JSON result starts with how it was made.
#[derive(Serialize)]
pub(crate) struct Provenance<'a> {
    command: Vec<String>,
    version: &'static str,
    quirks: Vec<&'static str>,
    seed: u64,
    config: &'a DriveConfig,
}

impl<'a> Provenance<'a> {
    pub(crate) fn new(config: &'a DriveConfig) -> Self {
        Provenance {
            command: std::env::args().collect(),
            version: env!("CARGO_PKG_VERSION"),
            quirks: duraflash::firmware::build_quirks(),
            seed: config.seed,
            config,
        }
    }
}

pub(crate) fn progress_bar(quiet: bool) -> Option<ProgressBar> {
    if quiet || !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = ProgressBar::new(1000);
    bar.set_style(
        ProgressStyle::with_template("{prefix:>12} [{bar:30}] {percent:>3}% {elapsed_precise} eta {eta}")
            .expect("static template")
            .progress_chars("=> "),
    );
    Some(bar)
}

/// Runs `f` with a progress callback that names the current phase and the
/// fraction done, drawn as one bar (none when `quiet` or not a terminal),
/// with the time elapsed and an estimate of the time left.
pub(crate) fn with_phases<T: Send>(quiet: bool, f: impl FnOnce(&mut dyn FnMut(&str, f64)) -> T + Send) -> T {
    let bar = progress_bar(quiet);
    let mut tick = |phase: &str, x: f64| {
        if let Some(b) = &bar {
            if b.prefix() != phase {
                b.set_prefix(phase.to_string());
            }
            b.set_position((x.clamp(0.0, 1.0) * 1000.0) as u64);
        }
    };
    // On a pool thread, the run's parallel steps (content generation,
    // encoding) hand work to the other threads without waking this one.
    let result = rayon::scope(|_| f(&mut tick));
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    result
}

/// Runs `f` with a progress callback drawn as a bar named `phase`.
pub(crate) fn with_progress<T: Send>(out: &Output, phase: &str, f: impl FnOnce(&mut dyn FnMut(f64)) -> T + Send) -> T {
    with_phases(out.quiet, |tick| f(&mut |x| tick(phase, x)))
}

/// `--plot DIR`, one meaning for every command: a directory that receives
/// each of the command's charts as `NAME.svg`.
pub(crate) struct PlotDir {
    dir: PathBuf,
    quiet: bool,
}

impl PlotDir {
    /// Checks `--plot` before anything runs and creates the directory: a
    /// path that names a file, or looks like one (`x.svg`), is a usage
    /// error rather than a surprise at the end of a long run.
    pub(crate) fn open(arg: &Option<PathBuf>, quiet: bool) -> Result<Option<PlotDir>, Failure> {
        let Some(dir) = arg else { return Ok(None) };
        let usage = |why: String| {
            Failure::Usage(format!(
                "--plot {}: {why}; --plot takes a directory and writes each chart into it as NAME.svg",
                dir.display()
            ))
        };
        if dir.exists() && !dir.is_dir() {
            return Err(usage("is a file, not a directory".into()));
        }
        let ext = dir.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
        if !dir.exists() && matches!(ext.as_deref(), Some("svg" | "png" | "pdf")) {
            return Err(usage("looks like a file name".into()));
        }
        std::fs::create_dir_all(dir).map_err(|e| usage(e.to_string()))?;
        Ok(Some(PlotDir { dir: dir.clone(), quiet }))
    }

    /// Writes `chart` into the directory as `file` (`NAME.svg`).
    pub(crate) fn line(&self, file: &str, chart: &LineChart) -> Result<(), Failure> {
        self.write(file, |p| plot::line_chart(p, chart))
    }

    /// Writes the bar chart `chart` into the directory as `file`.
    pub(crate) fn bars(&self, file: &str, chart: &BarChart) -> Result<(), Failure> {
        self.write(file, |p| plot::bar_chart(p, chart))
    }

    fn write(&self, file: &str, draw: impl FnOnce(&Path) -> Result<(), plot::PlotError>) -> Result<(), Failure> {
        let path = self.dir.join(file);
        draw(&path).map_err(|e| Failure::Run(format!("--plot {}: {e}", path.display())))?;
        if !self.quiet {
            note!("duraflash: wrote {}", path.display());
        }
        Ok(())
    }
}

/// Prints `summary` and writes `value` as JSON where `--json` says. With
/// `--smart`, each labelled SMART table (one per drive) follows the
/// summary, and the JSON gets `smart`: the table, or an object of tables
/// by label when there are several.
pub(crate) fn emit(
    out: &Output,
    summary: &str,
    value: &impl Serialize,
    smart: &[(&str, Smart)],
) -> Result<(), Failure> {
    let mut summary = summary.to_string();
    let json = if out.smart {
        let mut value = serde_json::to_value(value).map_err(|e| Failure::Run(e.to_string()))?;
        if smart.is_empty() {
            return Err(Failure::Usage("--smart: this command has no drive to report on".into()));
        }
        let json = match smart {
            [(_, one)] => serde_json::to_value(one),
            many => serde_json::to_value(
                many.iter().map(|(l, s)| (l.to_string(), s)).collect::<std::collections::BTreeMap<_, _>>(),
            ),
        }
        .map_err(|e| Failure::Run(e.to_string()))?;
        if let Some(map) = value.as_object_mut() {
            map.insert("smart".into(), json);
        }
        for (label, table) in smart {
            let label = if label.is_empty() { String::new() } else { format!(" ({label})") };
            summary += &format!("SMART attributes{label}, {:?} table:\n{}", table.vendor, table.table());
        }
        serde_json::to_string_pretty(&value)
    } else {
        serde_json::to_string_pretty(value)
    }
    .map_err(|e| Failure::Run(e.to_string()))?;
    let summary = summary.as_str();
    let json = if out.summary_after_json { format!("{}{json}\n\n{summary}", out.before_json) } else { json + "\n" };
    match out.json.as_deref() {
        Some(p) if is_stdout(p) => {
            if !out.summary_after_json {
                let _ = std::io::stderr().write_all(summary.as_bytes());
            }
            say(&json)
        }
        Some(p) => {
            let flag = out.json_flag.unwrap_or("--json");
            std::fs::write(p, json).map_err(|e| Failure::Run(format!("{flag} {}: {e}", p.display())))?;
            match out.summary_after_json {
                true => Ok(()),
                false => say_summary(out, summary),
            }
        }
        None => say_summary(out, summary),
    }
}

/// The human summary, on stdout or in the file [`Output::summary`] names.
fn say_summary(out: &Output, summary: &str) -> Result<(), Failure> {
    match &out.summary {
        Some(p) => std::fs::write(p, summary).map_err(|e| Failure::Run(format!("--output {}: {e}", p.display()))),
        None => say(summary),
    }
}

/// Writes `text` to standard output. A reader that has gone (`| head`)
/// ends the command quietly with [`Failure::Closed`], not a panic.
pub(crate) fn say(text: &str) -> Result<(), Failure> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()).map_err(|e| match e.kind() {
        std::io::ErrorKind::BrokenPipe => Failure::Closed,
        _ => Failure::Run(format!("standard output: {e}")),
    })
}

/// Refuses, before any work, an output file `flag` names that could not
/// be written, or that is one of the command's `inputs` (an image, a job
/// file, a config): the result written there would destroy it. Nothing is
/// left behind: a probe file is removed again.
pub(crate) fn check_output(flag: &str, path: &Path, inputs: &[(&str, Option<&Path>)]) -> Result<(), Failure> {
    if is_stdout(path) {
        return Ok(());
    }
    let refuse = |why: String| Err(Failure::Usage(format!("{flag} {}: {why}", path.display())));
    if path.is_dir() {
        return refuse("is a directory".into());
    }
    let dir = directory_of(path);
    if !dir.is_dir() {
        return refuse(format!("no directory {}", dir.display()));
    }
    // Symlinks resolved, so two names of one file compare equal.
    let resolved = |p: &Path| duraflash::image::resolve(p).unwrap_or_else(|_| p.to_path_buf());
    let target = resolved(path);
    if let Some((what, _)) = inputs.iter().find(|(_, p)| p.is_some_and(|p| resolved(p) == target)) {
        return refuse(format!("is also the {what}; the result written there would destroy it"));
    }
    let probe = match std::fs::metadata(path) {
        Ok(m) if m.is_file() => std::fs::OpenOptions::new().append(true).open(path).map(drop),
        // A device or a pipe (/dev/null, a FIFO) is not probed: opening a FIFO blocks.
        Ok(_) => Ok(()),
        Err(_) => {
            std::fs::OpenOptions::new().write(true).create_new(true).open(path).and_then(|_| std::fs::remove_file(path))
        }
    };
    probe.or_else(|e| refuse(format!("cannot write there: {e}")))
}

/// The directory `path` is in (`.` for a bare file name).
fn directory_of(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Whether `path` names standard output.
pub(crate) fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

pub(crate) fn size_label(bytes: u64) -> String {
    if bytes >= 1 << 20 {
        format!("{}M", bytes >> 20)
    } else if bytes >= 1 << 10 {
        format!("{}K", bytes >> 10)
    } else {
        format!("{:.1}K", bytes as f64 / 1024.0)
    }
}

/// An enum's name as its JSON spells it (`metadata-only`, `cost-benefit`):
/// the one spelling of every name in output.
pub(crate) fn name(value: &impl Serialize) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        other => format!("{other:?}"),
    }
}

pub(crate) fn on_off(b: bool) -> &'static str {
    if b {
        "on"
    } else {
        "off"
    }
}

/// The drive the flags describe, or the one saved in `image` (see
/// [`super::open_drive`]), for a command that holds `held` copies of it.
pub(crate) fn build(
    drive: &DriveArgs,
    reads: Reads,
    image: Option<&Path>,
    held: u32,
) -> Result<(Drive, Option<ImageLock>), Failure> {
    let cfg = drive.build_held(reads, held).map_err(Failure::Usage)?;
    open_drive(cfg, image)
}
