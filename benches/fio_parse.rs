//! What the fio parser costs on inputs far beyond any real job file: a
//! file of 100,000 jobs whose last name repeats the first (found without
//! comparing every pair), and the error for an unknown key of 5 MiB
//! (no closest-option suggestion is sought for a key longer than any
//! typo; a 50 MB key once took 27 s). `cargo bench --bench fio_parse`.

use criterion::{criterion_group, criterion_main, Criterion};
use duraflash::workload::fio::{parse, FioError};

fn bench(c: &mut Criterion) {
    let mut jobs: String = (0..100_000).map(|i| format!("[j{i}]\n")).collect();
    jobs += "[j0]\n";
    let key = "x".repeat(5 << 20);
    let mut group = c.benchmark_group("fio_parse");
    group.sample_size(10);
    group.bench_function("100k_jobs_one_duplicate", |b| {
        b.iter(|| assert!(matches!(parse(&jobs), Err(FioError::DuplicateJob { line: 100_001, .. }))))
    });
    group.bench_function("unknown_key_5MiB", |b| {
        b.iter(|| FioError::UnsupportedKey { key: key.clone(), line: 1 }.to_string().len())
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
