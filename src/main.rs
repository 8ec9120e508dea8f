//! The `duraflash` command line: the only place that exits the process.
//! It parses arguments, dispatches to [`cli`]'s commands and maps their
//! [`Failure`] to the exit status; the commands call the library and print.
//!
//! Exit status: 0 success, 1 the run failed, 2 usage error (unknown flag,
//! bad value), always with one line naming what was wrong.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, Parser, Subcommand};

use cli::{bench, fio, replay, reviews, studies, trim};
// What `serve` (src/serve.rs) uses, under the names it has always used.
use cli::output as commands;
use cli::{open_drive, save_image, DriveArgs, Failure, Output};

/// `eprintln!` that a closed standard error (`2>&1 | head`) cannot turn
/// into a panic: a diagnostic nobody reads is dropped.
macro_rules! note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

/// `println!` through [`cli::output::say`]; its `?` ends the command
/// quietly when standard output's reader has gone.
macro_rules! say {
    ($($arg:tt)*) => {
        $crate::cli::output::say(&format!("{}\n", format_args!($($arg)*)))
    };
}

mod cli;
mod serve;

/// What `--help` says of the firmware quirks compiled into this build.
fn quirks_line() -> String {
    match duraflash::firmware::build_quirks() {
        q if q.is_empty() => "Firmware quirks in this build: none (SandForce profiles run with them fixed)".into(),
        q => format!("Firmware quirks in this build: {}", q.join(", ")),
    }
}

#[derive(Parser)]
#[command(
    name = "duraflash",
    version,
    about = "A SandForce-style SSD controller model: compression, dedup, GC, TRIM",
    after_help = quirks_line(),
    arg_required_else_help = true
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Steady-state write-amplification study: fill, random writes to
    /// steady state, then measure WAF (with the analytic model beside it).
    Wa(reviews::WaArgs),
    /// HD Tach-style pass: sequential read and write sweeps across the
    /// span in zones (the write sweep runs on a copy of the drive).
    Hdtach(reviews::HdtachArgs),
    /// ATTO-style sweep: transfer sizes 0.5 KiB to 8 MiB at queue depth 4,
    /// highly compressible data, over a bounded span.
    Atto(reviews::AttoArgs),
    /// IOmeter-style 4 KiB random read and write IOPS at queue depths 1,
    /// 3, 32 and 64.
    Iometer(reviews::IometerArgs),
    /// Run a fio job file, or fio's job options (--name=j --rw=randwrite ...), against the simulated drive.
    Run(fio::RunArgs),
    /// The reviewers' SandForce torture protocol: clean, tortured, after
    /// TRIM and after a second TRIM, each measured with HD Tach, on the
    /// 1 GiB scale model unless `--capacity full` asks for the whole drive.
    Torture(reviews::TortureArgs),
    /// Real data through the drive: compression, dedup, steady-state WAF
    /// and write speed for each corpus (committed samples, generated sets
    /// or any file).
    Corpus(studies::CorpusArgs),
    /// A grid of write-amplification studies (OP, GC policy, pages per
    /// block, compressibility, dedup, TRIM, workload) run in parallel;
    /// CSV, JSON and a plot of WAF against OP.
    Sweep(studies::SweepArgs),
    /// What simulating costs here: host writes per CPU-second and per
    /// second for content-free, content and retained modes, wall time per
    /// write as the drive grows, and the state's memory by structure.
    Bench(bench::BenchArgs),
    /// Every reproduced figure in one run: the WA model check, corpora, the
    /// SandForce torture protocol and ATTO, TRIM through RAID-0, manual
    /// TRIM (optimizer) and SMART, written as DIR/index.html, DIR/report.md
    /// and DIR/results.json.
    Reproduce(studies::ReproduceArgs),
    /// Several `reproduce` reports side by side (other seeds, the other
    /// scale, another commit): each row's number and verdict in every run,
    /// the rows whose verdict changes named, and exit status 1 if any does.
    Compare(studies::CompareArgs),
    /// Serve the drive over NBD (qemu, nbdinfo, nbdcopy, fio, nbdfuse) until
    /// SIGINT/SIGTERM, then print the final JSON report.
    Serve(ServeArgs),
    /// The RAID TRIM experiment: one member alone, then the array clean,
    /// filled, tortured with 4 KiB random writes at QD 32, formatted (TRIM
    /// every LBA, which the driver may drop) and measured with HD Tach.
    Raid(trim::RaidArgs),
    /// Manual TRIM: a desktop-like trace over a filesystem model scored
    /// clean, used (deleted files never trimmed) and after a wiper TRIMs
    /// the filesystem's free space.
    Optimizer(trim::OptimizerArgs),
    /// Replay a block trace (MSR Cambridge, blkparse, FIU dedup, SPC;
    /// plain or gzip) on the drive and report WAF, dedup and latencies.
    Replay(replay::ReplayArgs),
    /// Drive images: `image info PATH` shows what one holds.
    #[command(subcommand, arg_required_else_help = true)]
    Image(ImageCommand),
    /// Millions of mixed operations on a small drive, checked against a
    /// shadow copy and the invariant checker; reports ops/s.
    Soak(bench::SoakArgs),
}

#[derive(Subcommand)]
enum ImageCommand {
    /// Print an image's format version, config, counters and clock, and its sections.
    Info {
        /// The image file.
        path: PathBuf,
        #[command(flatten)]
        out: Output,
    },
}

#[derive(Args)]
struct ServeArgs {
    #[command(flatten)]
    drive: DriveArgs,
    /// Address NBD clients connect to (port 0: any free port; the one bound
    /// is printed on stderr).
    #[arg(long, default_value = "127.0.0.1:10809", value_parser = parse_addr)]
    listen: std::net::SocketAddr,
    /// Export name (the empty default name selects it too).
    #[arg(long, default_value = "duraflash")]
    export: String,
    /// Also answer Prometheus scrapes: GET http://ADDR/metrics.
    #[arg(long, value_parser = parse_addr)]
    metrics: Option<std::net::SocketAddr>,
    /// Seconds between one-line summaries on stderr (0: none).
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    stats_interval: f64,
    /// Depth of the simulated host queue served commands are issued through.
    #[arg(long, default_value_t = 32)]
    qd: u32,
    /// Clients served at once; one more is refused in its handshake with
    /// NBD_REP_ERR_POLICY "too many connections" (qemu prints it), not closed silently.
    #[arg(long, default_value_t = 64)]
    max_connections: usize,
    /// Disconnect a client that sends no request (or leaves replies unread)
    /// for this long, freeing its slot: 600, 90s, 10m, 1h (0: never).
    #[arg(long, default_value = "10m", value_parser = serve::parse_duration)]
    idle_timeout: std::time::Duration,
    /// Check the drive's invariants at start and then this often if it
    /// changed (the drive is locked meanwhile; 0: only at shutdown). The
    /// latest result is the duraflash_invariants_* metrics.
    #[arg(long, default_value = "60s", value_parser = serve::parse_duration, allow_negative_numbers = true)]
    check_interval: std::time::Duration,
    /// Write the final JSON report to PATH instead of stdout (checked for
    /// writing at start).
    #[arg(long)]
    json: Option<PathBuf>,
    /// Drive image: resumed when it exists, created otherwise; saved before
    /// every FLUSH or FUA write is answered, and on shutdown. Refused with
    /// --members 2 or more (exit 2): an array is not saved to an image.
    #[arg(long)]
    image: Option<PathBuf>,
    /// Serve a host RAID array of this many drives instead of one (the
    /// drive flags, --capacity included, describe each member).
    #[arg(long, default_value_t = 1)]
    members: usize,
    /// RAID level of the array: 0, 1 or 10 (needs --members 2 or more).
    #[arg(long)]
    level: Option<duraflash::host::raid::Level>,
    /// The array's RAID driver, which decides whether TRIM reaches the members:
    /// rst-10.6 (RAID-1 only), rst-11.2 (RAID-0 and 1), passthrough.
    #[arg(long)]
    driver: Option<duraflash::host::raid::TrimPolicy>,
    /// Stripe size of the array: a multiple of the members' 4 KiB mapping
    /// unit [default: 128KiB].
    #[arg(long)]
    stripe: Option<duraflash::ByteSize>,
}

/// `HOST:PORT` with HOST a name (`localhost:0`) or an address.
fn parse_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    use std::net::ToSocketAddrs;
    let mut addrs = s.to_socket_addrs().map_err(|e| format!("'{s}' is not HOST:PORT ({e})"))?;
    addrs.next().ok_or_else(|| format!("'{s}' resolves to no address"))
}

/// clap's error text as one line: its lines joined by `; `, the items of
/// a list (the lines after one ending in `:`) by `, ` after a space.
fn one_line(text: &str) -> String {
    let mut line = String::new();
    let mut list = false;
    for l in text.lines().map(str::trim) {
        if l.is_empty() || l.starts_with("Usage:") || l.starts_with("For more information") {
            continue;
        }
        let sep = match (line.is_empty(), list, line.ends_with(':')) {
            (true, ..) => "",
            (_, _, true) => " ",
            (_, true, _) => ", ",
            _ => "; ",
        };
        list = list || line.ends_with(':');
        line += sep;
        line += l.trim_start_matches("error: ");
    }
    line
}

/// One glibc malloc arena for the whole process. The drive's write path
/// runs on whichever rayon worker the pipeline schedules it on, and with
/// an arena per thread each chunk's bytes come from the arena of the
/// thread that stored it: freed in one, wanted again in another, so a
/// 1 GiB drive of memory media peaked at 2.1 GB resident instead of 1.1
/// in some runs (`run --capacity 1GiB --name=f --rw=write --bs=1m
/// --name=r --stonewall --rw=randwrite --numjobs=4 --iodepth=32`), past
/// the memory estimate. One arena holds it at 1.1 GB and ran no slower.
fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a tunable of glibc's allocator; it is
    // called first thing in main, before any thread is started.
    #[allow(unsafe_code)]
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

fn main() -> ExitCode {
    one_malloc_arena();
    // fio's job options on `run`'s command line, as fio takes them.
    let (args, fio_options) = fio::split_fio_options(std::env::args_os().collect(), &Cli::command());
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            // `duraflash` or `duraflash image` alone: the help, as --help prints it.
            let _ = e.print();
            return ExitCode::from(2);
        }
        Err(e) if e.use_stderr() => {
            // One line naming the flag and what it accepts; no usage dump.
            note!("duraflash: error: {}", one_line(&e.to_string()));
            return ExitCode::from(2);
        }
        Err(e) => {
            // --help and --version.
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
    };
    let result = match cli.command {
        Command::Wa(args) => reviews::run_wa(args),
        Command::Hdtach(args) => reviews::hdtach(args),
        Command::Atto(args) => reviews::atto(args),
        Command::Iometer(args) => reviews::iometer(args),
        Command::Run(mut args) => {
            args.fio_options = fio_options;
            fio::run(args)
        }
        Command::Torture(args) => reviews::torture(args),
        Command::Corpus(args) => studies::corpus(args),
        Command::Sweep(args) => studies::sweep(args),
        Command::Bench(args) => bench::bench(args),
        Command::Reproduce(args) => studies::reproduce(args),
        Command::Compare(args) => studies::compare(args),
        Command::Serve(args) => serve::serve(args),
        Command::Replay(args) => replay::replay(args),
        Command::Raid(args) => trim::raid(args),
        Command::Optimizer(args) => trim::optimizer(args),
        Command::Image(ImageCommand::Info { path, out }) => cli::image_info(&path, &out),
        Command::Soak(args) => bench::soak(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            note!("duraflash: error: {msg}");
            ExitCode::from(2)
        }
        Err(Failure::Run(msg)) => {
            note!("duraflash: failed: {msg}");
            ExitCode::from(1)
        }
        // As `cat` or `grep` under `| head`: everything before the output
        // (images, files) is done, and the reader wanted no more.
        Err(Failure::Closed) => ExitCode::SUCCESS,
    }
}
