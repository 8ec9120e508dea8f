//! Simulation speed: host commands simulated per wall-clock second for 4 KiB
//! random writes at queue depth 32 on a filled drive (GC at steady state),
//! with data kept in memory and with metadata-only media. Criterion reports
//! the rate as elements (commands) per second.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use duraflash::content::pattern::DataSpec;
use duraflash::workload::access::{Distribution, Rw};
use duraflash::workload::job::{fill_spec, run_job, JobSpec, Limit};
use duraflash::{Drive, DriveConfig, Media};

const CAPACITY: u64 = 1 << 30;
const COMMANDS: u64 = 20_000;

fn filled(media: Media, data: DataSpec) -> Drive {
    let mut cfg = DriveConfig::preset("sf2281-240g").unwrap().scaled(CAPACITY).unwrap();
    cfg.media = media;
    let mut d = Drive::new(cfg).unwrap();
    run_job(&mut d, &fill_spec(CAPACITY, 128 << 10, 32, data, 1), &mut |_| {}).unwrap();
    d
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("simulate/randwrite_4k_qd32");
    group.throughput(Throughput::Elements(COMMANDS));
    group.sample_size(10);
    let data = DataSpec::compressible(50).unwrap();
    for (name, media) in [("memory", Media::Memory), ("metadata-only", Media::MetadataOnly)] {
        let mut drive = filled(media, data);
        let mut seed = 0;
        group.bench_function(name, |b| {
            b.iter(|| {
                seed += 1;
                let job = JobSpec {
                    name: "randwrite".into(),
                    rw: Rw::RandWrite,
                    bs: 4096,
                    sizes: Default::default(),
                    iodepth: 32,
                    offset: 0,
                    length: CAPACITY,
                    limit: Limit::Ops(COMMANDS),
                    rwmixread: 0,
                    distribution: Distribution::Random,
                    data,
                    seed,
                };
                run_job(&mut drive, &job, &mut |_| {}).unwrap()
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
