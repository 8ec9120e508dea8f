//! The write pipeline's throughput as a ratio to raw lz4_flex + blake3 on
//! the same bytes, on one thread and on two: `cargo bench --bench
//! pipeline_ratio`.
//!
//! The contenders take turns, batch by batch, each on a fresh batch of the
//! same generator, so machine noise that drifts over seconds falls on all
//! alike. Each prints its best and median batch; the ratios are to raw on
//! one thread. The paired line takes each round's drive batch against
//! raw's on as many threads, milliseconds apart, and gives the median
//! round. The drive is the one of `benches/pipeline.rs`
//! (metadata-only, written sequentially and wrapping); on one thread it
//! runs on the bench thread itself, where `raw` runs. `raw` on two threads
//! (each half of the batch on its own thread) shows what the machine gives
//! a second thread when no work is shared.

mod common;

use std::time::Instant;

use common::{raw, units, Wrapping, BATCH_UNITS, UNIT};
use duraflash::content::pattern::{DataSpec, PatternGen};
use duraflash::Media;
use rayon::prelude::*;

/// Turns each contender takes.
const ROUNDS: usize = 60;

fn main() {
    // `cargo bench` passes `--bench`; a name filter as criterion takes one.
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let one = rayon::ThreadPoolBuilder::new().num_threads(1).use_current_thread().build().unwrap();
    let two = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
    let kinds = [("incompressible", DataSpec::incompressible()), ("compress50", DataSpec::compressible(50).unwrap())];
    let heads = ["raw, 1 thread", "raw, 2 threads", "drive, 1 thread", "drive, 2 threads"];
    println!("{:<22}{}", "", heads.map(|h| format!("{h:>26}")).concat());
    for (name, spec) in kinds {
        if filter.as_deref().is_some_and(|f| !name.contains(f)) {
            continue;
        }
        let mut gen = PatternGen::new(spec, 1).unwrap();
        let (mut d1, mut d2) = (Wrapping::new(Media::MetadataOnly), Wrapping::new(Media::MetadataOnly));
        let mut secs: [Vec<f64>; 4] = Default::default();
        for round in 0..ROUNDS {
            for turn in 0..secs.len() {
                // Rotate who goes first, so no contender always follows the same one.
                let who = (round + turn) % secs.len();
                let buf = units(&mut gen);
                let t = Instant::now();
                match who {
                    0 => {
                        std::hint::black_box(raw(&buf, false));
                    }
                    1 => {
                        let halves =
                            two.install(|| buf.par_chunks(buf.len() / 2).map(|h| raw(h, false)).sum::<usize>());
                        std::hint::black_box(halves);
                    }
                    2 => one.install(|| d1.write(&buf)),
                    _ => two.install(|| d2.write(&buf)),
                }
                secs[who].push(t.elapsed().as_secs_f64());
            }
        }
        let mib_s = |s: f64| (UNIT * BATCH_UNITS) as f64 / s / f64::from(1 << 20);
        for (what, pick) in [("best", 0.0), ("median", 0.5)] {
            let t: Vec<f64> = secs
                .iter()
                .map(|s| {
                    let mut s = s.clone();
                    s.sort_by(f64::total_cmp);
                    s[((s.len() - 1) as f64 * pick) as usize]
                })
                .collect();
            let cells: String = t.iter().map(|&x| format!("{:>13.0} MiB/s {:>5.2}x", mib_s(x), t[0] / x)).collect();
            println!("{:<22}{cells}", format!("{name} {what}"));
        }
        // Each round's drive against raw on as many threads in the same
        // round: drift that the best and median batches of the two see
        // at different times cancels in the pair.
        let paired = |drive: usize, raw: usize| {
            let mut r: Vec<f64> = secs[raw].iter().zip(&secs[drive]).map(|(r, d)| r / d).collect();
            r.sort_by(f64::total_cmp);
            r[r.len() / 2]
        };
        println!(
            "{:<22}{:>78}{:>26}",
            format!("{name} paired"),
            format!("median round {:.2}x of raw, 1 thread", paired(2, 0)),
            format!("{:.2}x of raw, 2 threads", paired(3, 1))
        );
    }
}
