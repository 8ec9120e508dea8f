//! The write pipeline against raw lz4_flex + blake3 on the same bytes.
//!
//! One group per data kind (two generated ones and every committed corpus
//! in `corpora/`; a corpus batch is its units tiled, each copy under a
//! fresh byte permutation so nothing deduplicates across batches); inside it `raw` is compress + hash of each
//! 4 KiB unit on one thread (`raw_lz4_blake3` hashes the unit,
//! `raw_lz4_blake3_stored` its stored form, as the drive does), and `drive/...` is `Drive::write_batch` of the
//! same units (sequential, wrapping, so GC erases emptied blocks without
//! relocating anything: this measures the pipeline, not GC). The ratio of
//! their throughputs is the overhead of everything else in the write path.
//! Criterion measures one function after another, so on a machine whose
//! speed drifts, a ratio of two of its figures mixes two moments:
//! `cargo bench --bench pipeline_ratio` measures the ratios interleaved.

mod common;

use common::{raw, units, Wrapping, BATCH_UNITS, UNIT};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use duraflash::content::corpus::{self, Corpus};
use duraflash::content::pattern::{DataSpec, PatternGen};
use duraflash::content::Content;
use duraflash::Media;

fn bench(c: &mut Criterion) {
    // With one thread the bench thread itself is the pool, so the drive
    // works on the data where it was generated, as `raw` does. (A thread
    // can join only one pool, so the pools are built once.)
    let pools = [
        (1, rayon::ThreadPoolBuilder::new().num_threads(1).use_current_thread().build().unwrap()),
        (2, rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap()),
    ];
    let dir = corpus::default_dir();
    let files: Vec<Corpus> = corpus::manifest(&dir)
        .expect("corpora/manifest.toml")
        .iter()
        .map(|e| Corpus::load(&e.name, &dir).expect("committed corpus"))
        .collect();
    let mut kinds: Vec<(String, Box<dyn Content + '_>)> = vec![
        ("incompressible".into(), Box::new(PatternGen::new(DataSpec::incompressible(), 1).unwrap())),
        ("compress50".into(), Box::new(PatternGen::new(DataSpec::compressible(50).unwrap(), 1).unwrap())),
    ];
    for c in &files {
        kinds.push((format!("corpus-{}", c.name), c.content(UNIT, 0, 1)));
    }
    for (name, mut gen) in kinds {
        let mut group = c.benchmark_group(format!("write_pipeline/{name}"));
        group.throughput(Throughput::Bytes((UNIT * BATCH_UNITS) as u64));
        group.sample_size(30);
        group.bench_function("raw_lz4_blake3", |b| {
            b.iter_batched(|| units(gen.as_mut()), |buf| raw(&buf, false), BatchSize::LargeInput)
        });
        group.bench_function("raw_lz4_blake3_stored", |b| {
            b.iter_batched(|| units(gen.as_mut()), |buf| raw(&buf, true), BatchSize::LargeInput)
        });
        for (threads, pool) in &pools {
            for (media_name, media) in [("metadata-only", Media::MetadataOnly), ("memory", Media::Memory)] {
                let mut d = Wrapping::new(media);
                group.bench_function(format!("drive_{threads}t_{media_name}"), |b| {
                    b.iter_batched(|| units(gen.as_mut()), |buf| pool.install(|| d.write(&buf)), BatchSize::LargeInput)
                });
            }
        }
        group.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
