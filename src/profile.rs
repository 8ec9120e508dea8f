//! Opt-in CPU-time accounting by phase (`torture --profile`): content
//! generation, lz4, blake3, drive images and drive copies. Each phase adds
//! the CPU time of the thread that ran it (`CLOCK_THREAD_CPUTIME_ID`), so
//! work spread over several threads is summed, not overlapped; whatever the
//! process spent besides is the simulation. Off, a phase costs one relaxed
//! load; on, two clock reads (system calls) per timed piece of work, or one
//! for consecutive pieces on a thread ([`Laps`]), whose cost is measured
//! when accounting starts and shown apart. The per-unit phases are timed
//! per group of units a thread takes at a time (4 for lz4 and blake3, as
//! laps, 16 for generation), not per unit: timing each 4 KiB unit made the
//! clock reads a fifth of the full-size headline's CPU.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde::Serialize;

/// A timed phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Generating write payloads.
    Generate,
    /// lz4 compression.
    Lz4,
    /// blake3 fingerprints.
    Blake3,
    /// Saving and loading drive images.
    Image,
    /// Cloning drives.
    Copy,
}

const PHASES: usize = 5;
static ENABLED: AtomicBool = AtomicBool::new(false);
static NS: [AtomicU64; PHASES] = [const { AtomicU64::new(0) }; PHASES];
static CALLS_BY: [AtomicU64; PHASES] = [const { AtomicU64::new(0) }; PHASES];
/// Clock reads taken.
static READS: AtomicU64 = AtomicU64::new(0);
/// CPU nanoseconds one clock read takes, measured when accounting starts.
static READ_NS: AtomicU64 = AtomicU64::new(0);

/// Starts accounting (for the rest of the process), first measuring what
/// a clock read costs so the split can leave its own cost out.
pub fn enable() {
    const READS: u32 = 20_000;
    let start = cpu_time::ThreadTime::now();
    for _ in 0..READS {
        std::hint::black_box(cpu_time::ThreadTime::now());
    }
    READ_NS.store(start.elapsed().as_nanos() as u64 / u64::from(READS), Ordering::Relaxed);
    ENABLED.store(true, Ordering::Relaxed);
}

/// Runs `f`, adding its thread CPU time to `phase` when accounting is on.
#[inline]
pub fn time<T>(phase: Phase, f: impl FnOnce() -> T) -> T {
    if !ENABLED.load(Ordering::Relaxed) {
        return f();
    }
    let start = cpu_time::ThreadTime::now();
    let out = f();
    add(phase, start.elapsed().as_nanos() as u64, 2);
    out
}

/// Adds one timed piece of `ns` to `phase`, which took `reads` clock reads.
fn add(phase: Phase, ns: u64, reads: u64) {
    NS[phase as usize].fetch_add(ns, Ordering::Relaxed);
    CALLS_BY[phase as usize].fetch_add(1, Ordering::Relaxed);
    READS.fetch_add(reads, Ordering::Relaxed);
}

/// Consecutive timed pieces of work on one thread: each [`Laps::lap`]
/// ends the piece begun at the previous one (or at [`Laps::start`]), so a
/// piece costs one clock read instead of two. Nothing else may run on the
/// thread between two laps.
pub struct Laps(Option<cpu_time::ThreadTime>);

impl Laps {
    /// Starts timing on this thread (when accounting is on).
    #[inline]
    pub fn start() -> Laps {
        if !ENABLED.load(Ordering::Relaxed) {
            return Laps(None);
        }
        READS.fetch_add(1, Ordering::Relaxed);
        Laps(Some(cpu_time::ThreadTime::now()))
    }

    /// Adds the thread CPU time since the last lap to `phase`.
    #[inline]
    pub fn lap(&mut self, phase: Phase) {
        if let Some(last) = self.0.as_mut() {
            let now = cpu_time::ThreadTime::now();
            add(phase, now.as_duration().saturating_sub(last.as_duration()).as_nanos() as u64, 1);
            *last = now;
        }
    }
}

/// CPU seconds by phase since the process started accounting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Split {
    /// Whole process (user + system), every thread.
    pub total_cpu_s: f64,
    /// Payload generation.
    pub generate_s: f64,
    /// lz4.
    pub lz4_s: f64,
    /// blake3.
    pub blake3_s: f64,
    /// Images saved and loaded.
    pub image_s: f64,
    /// Drive copies.
    pub copy_s: f64,
    /// The accounting's own clock reads (at the cost measured when it
    /// started), left out of the phases.
    pub profiling_s: f64,
    /// Clock reads the accounting took.
    pub clock_reads: u64,
    /// Timed pieces of work (one clock read each as laps, two alone).
    pub timed_pieces: u64,
    /// The rest: the simulation itself (FTL, GC, timing, job loop).
    pub simulation_s: f64,
    /// Wall seconds from `started` to now.
    pub wall_s: f64,
}

impl Split {
    /// The split now, with the process CPU time and wall clock measured
    /// from `cpu` and `wall`.
    pub fn since(cpu: cpu_time::ProcessTime, wall: std::time::Instant) -> Split {
        // Each timed piece counts about one clock read of its own.
        let read_s = READ_NS.load(Ordering::Relaxed) as f64 / 1e9;
        let s = |p: Phase| {
            let calls = CALLS_BY[p as usize].load(Ordering::Relaxed) as f64;
            (NS[p as usize].load(Ordering::Relaxed) as f64 / 1e9 - calls * read_s).max(0.0)
        };
        let profiling_s = read_s * READS.load(Ordering::Relaxed) as f64;
        let total = cpu.elapsed().as_secs_f64();
        let (generate_s, lz4_s, blake3_s, image_s, copy_s) =
            (s(Phase::Generate), s(Phase::Lz4), s(Phase::Blake3), s(Phase::Image), s(Phase::Copy));
        Split {
            total_cpu_s: total,
            generate_s,
            lz4_s,
            blake3_s,
            image_s,
            copy_s,
            profiling_s,
            clock_reads: READS.load(Ordering::Relaxed),
            timed_pieces: CALLS_BY.iter().map(|c| c.load(Ordering::Relaxed)).sum(),
            simulation_s: (total - generate_s - lz4_s - blake3_s - image_s - copy_s - profiling_s).max(0.0),
            wall_s: wall.elapsed().as_secs_f64(),
        }
    }

    /// One line: CPU seconds per phase and the wall time.
    pub fn line(&self) -> String {
        format!(
            "profile: {:.1} CPU-s in {:.1} s wall: generation {:.1}, lz4 {:.1}, blake3 {:.1}, simulation {:.1}, image {:.1}, copies {:.1}, profiling {:.1}",
            self.total_cpu_s,
            self.wall_s,
            self.generate_s,
            self.lz4_s,
            self.blake3_s,
            self.simulation_s,
            self.image_s,
            self.copy_s,
            self.profiling_s
        )
    }
}
