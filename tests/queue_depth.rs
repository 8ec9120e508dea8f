//! Queue depth and parallelism in simulated time: commands of a queue are
//! served as their resources (dies, channels, the link, the firmware) free
//! up, so random reads scale with queue depth and with dies up to the
//! drive's bound, and the jobs of a fio group share the drive at once.
//!
//! Every drive is a scaled-down preset keeping metadata only; each test
//! prints the numbers its assertions rest on (`cargo test -- --nocapture`).

mod sim;

use duraflash::timing::transfer_ns;
use duraflash::workload::access::Rw;
use duraflash::workload::job::{run_group, Limit};
use duraflash::{Drive, DriveConfig, Media};
use sim::{drive, fill, incompressible, job, preset, run, within, KIB, MIB};

/// 4 KiB random reads at queue depth `qd` over the first `span` bytes, on a clone.
fn randread_iops(drive: &Drive, span: u64, qd: u32, ops: u64) -> f64 {
    let mut d = drive.clone();
    run(&mut d, &job(Rw::RandRead, 4 * KIB, qd, 0, span, Limit::Ops(ops), incompressible(), 5)).read.iops
}

// ---------------------------------------------------------------------------
// Random reads scale with queue depth up to the drive's ceiling (on
// the Samsung 830 its controller's command rate, below what its dies can
// sense), not beyond.

#[test]
fn random_read_iops_rise_with_queue_depth_until_the_drive_saturates() {
    let mut d = drive(preset("samsung830-64g", 512 * MIB, Media::MetadataOnly));
    let capacity = d.config().logical_bytes;
    fill(&mut d, capacity, incompressible(), 1);
    let qds = [1u32, 4, 16, 32, 64];
    let iops: Vec<f64> = qds.iter().map(|&qd| randread_iops(&d, capacity, qd, 8000)).collect();
    let t = &d.config().timing;
    // Whatever else a read waits for, its die must sense the page.
    let die_bound = f64::from(d.config().geometry.dies()) * 1e9 / t.read_ns as f64;
    println!("samsung830 4 KiB random read IOPS at QD {qds:?}: {iops:.0?} (die bound {die_bound:.0})");
    assert!(iops[1] > 1.5 * iops[0], "QD 4 {:.0} vs QD 1 {:.0}", iops[1], iops[0]);
    assert!(iops[2] > 1.3 * iops[1], "QD 16 {:.0} vs QD 4 {:.0}", iops[2], iops[1]);
    assert!(iops[4] >= 0.98 * iops[3], "QD 64 {:.0} fell below QD 32 {:.0}", iops[4], iops[3]);
    assert!(iops[4] < 1.3 * iops[3], "QD 64 {:.0} vs QD 32 {:.0}: not near saturation", iops[4], iops[3]);
    assert!(iops[4] <= die_bound, "QD 64 {:.0} IOPS beats what the dies can sense ({die_bound:.0})", iops[4]);
}

/// The samsung830 geometry with `channels` x `dies_per_channel` dies and
/// the same number of blocks in all.
fn samsung_with_dies(channels: u32, dies_per_channel: u32) -> DriveConfig {
    let mut cfg = preset("samsung830-64g", 512 * MIB, Media::MetadataOnly);
    let blocks = cfg.geometry.total_blocks();
    cfg.geometry.channels = channels;
    cfg.geometry.dies_per_channel = dies_per_channel;
    cfg.geometry.blocks_per_die = blocks.div_ceil(channels * dies_per_channel);
    cfg.validate().expect("same capacity on the new geometry");
    cfg
}

#[test]
fn queue_depth_1_random_reads_gain_nothing_from_more_dies() {
    let mut few = drive(samsung_with_dies(2, 1));
    let mut many = drive(samsung_with_dies(2, 4));
    let capacity = few.config().logical_bytes;
    assert_eq!(capacity, many.config().logical_bytes);
    fill(&mut few, capacity, incompressible(), 1);
    fill(&mut many, capacity, incompressible(), 1);
    let (few1, many1) = (randread_iops(&few, capacity, 1, 4000), randread_iops(&many, capacity, 1, 4000));
    let (few32, many32) = (randread_iops(&few, capacity, 32, 8000), randread_iops(&many, capacity, 32, 8000));
    println!(
        "2 channels x 1 die vs x 4 dies, 4 KiB random read IOPS: QD 1 {few1:.0} vs {many1:.0}, \
         QD 32 {few32:.0} vs {many32:.0}"
    );
    assert!(within(many1, few1, 0.02), "QD 1: {many1:.0} IOPS on 8 dies vs {few1:.0} on 2");
    assert!(many32 > 1.5 * few32, "QD 32: {many32:.0} IOPS on 8 dies vs {few32:.0} on 2");
}

/// Dies on one channel sense in parallel and take turns on the bus: four
/// dies on one channel whose bus moves a page in a third of a die's sense
/// time read well over twice as fast as one die at high queue depth, up to
/// the channel's bound. Only the unit's 4 KiB of each 8 KiB page cross the
/// bus (the controller clocks out the codewords it needs).
#[test]
fn dies_on_one_channel_overlap_until_the_channel_saturates() {
    let mut one = drive(samsung_with_dies(1, 1));
    let mut four = drive(samsung_with_dies(1, 4));
    let capacity = one.config().logical_bytes;
    fill(&mut one, capacity, incompressible(), 1);
    fill(&mut four, capacity, incompressible(), 1);
    let t = &one.config().timing;
    let channel_bound = 1e9 / transfer_ns(4096, t.channel_bytes_per_sec) as f64;
    let (a, b) = (randread_iops(&one, capacity, 64, 8000), randread_iops(&four, capacity, 64, 8000));
    println!(
        "1 channel, QD 64 4 KiB random reads: 1 die {a:.0} IOPS, 4 dies {b:.0} IOPS (channel bound {channel_bound:.0})"
    );
    assert!(b > 2.5 * a, "4 dies {b:.0} IOPS vs 1 die {a:.0}: channel bound {channel_bound:.0}");
    assert!(b <= channel_bound * 1.001, "4 dies {b:.0} IOPS beat the channel bound {channel_bound:.0}");
}

/// A read on the SF-2281 preset is two dependent page reads: the map page
/// (the map cache misses), then the data page once the map is known. With
/// resources served in time order, the map read of the next command uses a
/// channel while the previous command's data page waits for its die, so
/// 4 KiB random reads at QD 64 reach over half the channels' bound (with
/// booking in program order they stopped near 30k IOPS, the channels about
/// 30 % busy).
#[test]
fn dependent_page_reads_keep_the_channels_busy() {
    let mut d = drive(preset("sf2281-240g", 512 * MIB, Media::MetadataOnly));
    let capacity = d.config().logical_bytes;
    fill(&mut d, capacity, incompressible(), 1);
    let before = d.stats().host_page_reads;
    let ops = 8000;
    // One QD 64 run gives both the IOPS and the data pages a read senses.
    let mut probe = d.clone();
    let qd64 =
        run(&mut probe, &job(Rw::RandRead, 4 * KIB, 64, 0, capacity, Limit::Ops(ops), incompressible(), 5)).read.iops;
    let data_pages = (probe.stats().host_page_reads - before) as f64 / ops as f64;
    let qd256 = randread_iops(&d, capacity, 256, ops);
    let t = &d.config().timing;
    let g = &d.config().geometry;
    // At most one map page besides the data pages, each crossing a channel.
    let pages_per_read = data_pages + 1.0;
    let channel_bound = f64::from(g.channels) * 1e9
        / (pages_per_read * transfer_ns(u64::from(g.page_bytes), t.channel_bytes_per_sec) as f64);
    println!(
        "sf2281 4 KiB random reads: QD 64 {qd64:.0} IOPS, QD 256 {qd256:.0} IOPS; {data_pages:.2} data pages + at most \
         1 map page a read; channel bound {channel_bound:.0} IOPS"
    );
    assert!(
        qd64 > 0.5 * channel_bound,
        "QD 64 random reads reach {qd64:.0} IOPS, {:.0} % of the channel bound {channel_bound:.0}",
        100.0 * qd64 / channel_bound
    );
}

/// fio runs the jobs of a group together (`duraflash run`, docs/cli.md):
/// two QD 1 random readers on a drive with many dies complete about twice
/// the reads of one in the same simulated time, a reader beside a writer
/// waits longer than alone, and a group of one job is that job run alone.
#[test]
fn jobs_of_a_group_share_the_drive_at_the_same_time() {
    let span = 64 * MIB;
    let mut filled = drive(preset("sf2281-240g", 256 * MIB, Media::MetadataOnly));
    fill(&mut filled, span, incompressible(), 1);
    let window = Limit::Time(200_000_000);
    let reader = |seed| job(Rw::RandRead, 4 * KIB, 1, 0, span, window, incompressible(), seed);
    let writer = job(Rw::RandWrite, 4 * KIB, 8, 0, span, window, incompressible(), 9);

    let alone = run(&mut filled.clone(), &reader(1));
    let single = run_group(&mut filled.clone(), &[reader(1)], &mut |_| {}).unwrap();
    assert_eq!(single.jobs, std::slice::from_ref(&alone), "a group of one is the job alone");

    let pair = run_group(&mut filled.clone(), &[reader(1), reader(2)], &mut |_| {}).unwrap();
    let starts: Vec<u64> = pair.jobs.iter().map(|j| j.start_ns).collect();
    assert!(starts.iter().all(|&s| s == alone.start_ns), "the jobs start together: {starts:?}");
    let (one, both) = (alone.read.iops, pair.total.read.iops);
    println!("QD 1 random read: one job {one:.0} IOPS, two together {both:.0} IOPS");
    assert!(both > 1.8 * one && both < 2.05 * one, "two QD 1 readers do about twice one: {both:.0} vs {one:.0}");
    let merged: u64 = pair.jobs.iter().map(|j| j.read.lat.commands).sum();
    assert_eq!(pair.total.read.lat.commands, merged, "the total counts every job's reads");

    let mixed = run_group(&mut filled.clone(), &[reader(1), writer], &mut |_| {}).unwrap();
    let (quiet, busy) = (alone.read.lat.mean_latency_ns, mixed.jobs[0].read.lat.mean_latency_ns);
    println!("QD 1 random read latency: alone {quiet:.0} ns, beside a QD 8 writer {busy:.0} ns");
    assert!(busy > 1.2 * quiet, "a writer beside the reader slows its reads: {busy:.0} vs {quiet:.0} ns");
    assert!(mixed.jobs[1].write.lat.commands > 0);
}
